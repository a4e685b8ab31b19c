#!/usr/bin/env bash
# Runs every test (lit, unit, runtime, Python) and ends with one
# "N passed, M failed" line. Builds first, so it works on a fresh clone.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh || { echo "0 passed, 1 failed (build)"; exit 1; }

rm -rf build/test-results
mkdir -p build/test-results
(cd build && ctest --output-on-failure)
status=$?
python3 scripts/summarize-results.py build/test-results || status=1
exit $status
