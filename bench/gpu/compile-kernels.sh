#!/usr/bin/env bash
# Compiles every example kernel to a CUBIN, its PTX and its manifest, on the
# build machine (it needs mosaic-compile and ptxas), for bench/gpu/run.sh.
#
#   bench/gpu/compile-kernels.sh [OUT_DIR]   (default build/kernels)
#
# MOSAIC_COMPILE names the compiler (default build/bin/mosaic-compile). Every
# example must compile: a failure is reported, the others still compile,
# and the script fails.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build/kernels}
compiler=${MOSAIC_COMPILE:-$root/build/bin/mosaic-compile}
mkdir -p "$out"
compiled=0
total=0
for source in "$root"/examples/*.mlir; do
  name=$(basename "$source" .mlir)
  total=$((total + 1))
  rm -f "$out/$name.cubin" "$out/$name.ptx" "$out/$name.json"
  if "$compiler" "$source" -o "$out/$name.cubin" >"$out/$name.log" 2>&1; then
    echo "compiled $name -> $out/$name.cubin, $out/$name.ptx, $out/$name.json"
    compiled=$((compiled + 1))
  else
    echo "not compiled: $name (see $out/$name.log)"
  fi
done
[ "$compiled" -eq "$total" ]
