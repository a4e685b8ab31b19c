#!/usr/bin/env bash
# Benchmarks the compiled kernels against their peers, in one run on a GPU
# machine that has CUDA, CMake, PyTorch and Triton but no LLVM or MLIR.
#
#   bench/gpu/run.sh KERNEL_DIR [bench.py options: --reps N --warmup N --seed S]
#
# The GEMM table (our warp-specialized and simple GEMMs against cuBLAS and
# Triton's persistent TMA GEMM at 8192^3 and the shape sweep of bench.py's
# GEMM_SHAPES) and the attention table (our fused attention against torch
# SDPA's flash backend and a Triton fused attention, seq 512 to 16k with and
# without the causal mask: bench.py's ATTENTION_SHAPES), the FP8 table (our
# gemm_fp8 per tensor, row and block against torch._scaled_mm and a Triton
# FP8 GEMM: FP8_CASES) and the fused-epilogue table (gemm_ws --epilogue
# against the unfused torch sequence, cuBLAS's epilogue and torch.compile:
# EPILOGUE_CASES) and the attention-new tables (the attention backward,
# grouped-query heads, packed batches of variable lengths and FP8 attention
# against torch SDPA's flash and cuDNN backends, torch's varlen_attn,
# flash-attn and a Triton FP8 attention: bench.py's attention_new_rows)
# come from two commands:
#
#   bench/gpu/compile-kernels.sh build/kernels   # build machine: mosaic-compile, ptxas
#   bench/gpu/run.sh build/kernels               # GPU machine: this tree + build/kernels
#
# KERNEL_DIR holds CUBINs and their JSON manifests, compiled beforehand on a
# build machine with bench/gpu/compile-kernels.sh. This script first runs
# the emulator's CUDA corpus and the TMA edge bisection on the GPU's driver
# (bench/gpu/run-corpus.sh), then builds runtime/ on its own (no LLVM), runs
# its tests (the GPU ones run here), checks and times every kernel with
# mosaic-run and its peers with bench/gpu/bench.py, and appends the tables
# to docs/BENCHMARKS.md when every kernel and peer passed its check. With
# $OUT set (the device tool's output folder) it also writes the table and
# the raw results there. Last, bench/gpu/collective.py times the collective
# matmuls on every device count up to the GPUs present. It exits non-zero when the build, a test, a corpus
# variant or a numerical check failed.
#
# MOSAIC_BENCH_PARTS (comma-separated) runs only the parts it names:
# corpus (the emulator's corpus and the TMA bisection), tests (the
# runtime's ctest), collective, and bench.py's tables: gemm, gemm-new (the
# GEMM table's split-K and any-shape rows alone), attention, attention-new,
# other, fp8, epilogue. Unset, it runs all but gemm-new (which gemm
# contains). The runtime is always built. The new tables alone, in runs
# that each fit a 10-minute device call (estimated in docs/BENCHMARKS.md:
# under about 4 minutes each, attention-new about 5 to 7, the runtime's
# build included):
#
#   MOSAIC_BENCH_PARTS=gemm-new,fp8 bench/gpu/run.sh build/kernels
#   MOSAIC_BENCH_PARTS=epilogue bench/gpu/run.sh build/kernels
#   MOSAIC_BENCH_PARTS=attention-new bench/gpu/run.sh build/kernels
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -lt 1 ]; then
  echo "usage: bench/gpu/run.sh KERNEL_DIR [bench.py options]" >&2
  exit 2
fi
parts=${MOSAIC_BENCH_PARTS:-corpus,tests,gemm,attention,attention-new,other,fp8,epilogue,collective}
command="bench/gpu/run.sh$(printf ' %q' "$@")"
if [ -n "${MOSAIC_BENCH_PARTS:-}" ]; then
  command="MOSAIC_BENCH_PARTS=$parts $command"
fi
kernels=$(cd "$1" && pwd)
shift
# wants PART: whether MOSAIC_BENCH_PARTS names PART.
wants() { [[ ",$parts," == *",$1,"* ]]; }
# bench.py's tables among the parts.
tables=$(tr ',' '\n' <<<"$parts" | grep -vxE 'corpus|tests|collective|' | paste -sd, - || true)

# First the emulator's CUDA corpus and the TMA edge bisection on this
# driver: what the emulator claims about the hardware, checked again.
corpus=0
if wants corpus; then
  "$root/bench/gpu/run-corpus.sh" "$kernels" || corpus=$?
fi

build=${MOSAIC_RUNTIME_BUILD:-$root/build-runtime}
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$root/runtime" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"
# A failing test is reported at the end; the kernels are still measured,
# each checked on its own.
tests=0
if wants tests; then
  (cd "$build" && ctest --output-on-failure) || tests=$?
fi

out_args=()
if [ -n "${OUT:-}" ]; then out_args=(--out "$OUT"); fi
bench=0
if [ -n "$tables" ]; then
  python3 "$root/bench/gpu/bench.py" --kernels "$kernels" \
    --mosaic-run "$build/bin/mosaic-run" --docs "$root/docs/BENCHMARKS.md" \
    --command "$command" --tables "$tables" "${out_args[@]}" "$@" || bench=$?
fi
if [ "$tests" -ne 0 ]; then
  echo "run.sh: the runtime's tests FAILED (ctest output above)" >&2
fi
# The collective matmuls on every device count up to the GPUs here (D = 1
# on a single GPU: degenerate, but every path runs), against NCCL + cuBLAS
# and torch's async-TP ops, in processes of their own.
collective=0
if wants collective; then
  python3 "$root/bench/gpu/collective.py" --kernels "$kernels" \
    --mosaic-run "$build/bin/mosaic-run" --docs "$root/docs/BENCHMARKS.md" \
    --command "$command" "${out_args[@]}" || collective=$?
fi
if [ "$corpus" -ne 0 ]; then
  echo "run.sh: the emulator's CUDA corpus FAILED on this GPU (table above)" >&2
fi
if [ "$collective" -ne 0 ]; then
  echo "run.sh: a collective matmul or its peers FAILED (table above)" >&2
fi
[ "$tests" -eq 0 ] && [ "$bench" -eq 0 ] && [ "$corpus" -eq 0 ] && [ "$collective" -eq 0 ]
