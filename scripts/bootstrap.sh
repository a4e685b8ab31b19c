#!/usr/bin/env bash
# The newcomer's first command: install what is missing, build, and run the
# main job on the shipped example kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh

example=examples/gemm_bf16.mlir
echo
echo "== Layout inference and shared-memory tilings for $example =="
build/bin/mosaic-opt -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms "$example"
echo "== $example: layouts inferred, tilings applied, IR verified =="

# The main job: the bf16 GEMM (TMA ring, mbarriers, wgmma) to CUBIN, with
# ptxas's resource summary.
echo
echo "== Compiling $example to CUBIN =="
export PATH="$PATH:${CUDA_HOME:-/usr/local/cuda}/bin"
if command -v ptxas >/dev/null; then
  build/bin/mosaic-compile "$example" -o build/gemm_bf16.cubin
  echo "== wrote build/gemm_bf16.cubin and build/gemm_bf16.json =="
else
  build/bin/mosaic-compile "$example" --emit=ptx -o build/gemm_bf16.ptx
  echo "== no ptxas found: wrote build/gemm_bf16.ptx instead of a CUBIN =="
fi
