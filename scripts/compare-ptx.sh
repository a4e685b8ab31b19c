#!/usr/bin/env bash
# Checks that a change leaves every kernel's PTX as it was: builds BASE (a
# commit) in a worktree under build/, compiles the corpus of
# scripts/ptx-corpus.py (this checkout's examples and tests) with BASE's
# compiler and with this checkout's build, and diffs the two. Exits 1 when
# any kernel's PTX or diagnostics differ.
#
#   scripts/compare-ptx.sh 10384a9                    # everything (~15 min)
#   scripts/compare-ptx.sh 10384a9 --no-python-tests  # without the pytest run
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: scripts/compare-ptx.sh BASE_COMMIT [--no-python-tests]}
shift
root=$PWD
worktree=$root/build/ptx-base
if [[ ! -d $worktree ]] || [[ $(git -C "$worktree" rev-parse HEAD) != $(git rev-parse "$base^{commit}") ]]; then
  git worktree remove --force "$worktree" 2>/dev/null || rm -rf "$worktree"
  git worktree add --detach "$worktree" "$base"
fi
"$worktree/scripts/build.sh"
scripts/build.sh
rm -rf build/ptx-before build/ptx-after
/usr/bin/python3 scripts/ptx-corpus.py --build "$worktree/build" --out build/ptx-before "$@"
/usr/bin/python3 scripts/ptx-corpus.py --build build --out build/ptx-after "$@"
/usr/bin/python3 scripts/ptx-corpus.py --compare build/ptx-before build/ptx-after
