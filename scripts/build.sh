#!/usr/bin/env bash
# Configures (once) and builds the project into build/. With ccache
# installed, compilations go through it, with paths relative to this
# checkout (CCACHE_BASEDIR), so that the package build of the pip install
# test (python/tests/packaging/), a clone elsewhere, reuses them.
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$PWD"
fi
if [[ ! -f build/build.ninja ]]; then
  cmake -G Ninja -S . -B build "${launcher[@]}"
fi
ninja -C build
