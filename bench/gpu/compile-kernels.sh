#!/usr/bin/env bash
# Compiles the kernels bench/gpu/run.sh times, on the build machine (it needs
# mosaic-compile and ptxas; no GPU):
#  - every example kernel, examples/NAME.mlir, to NAME.cubin, NAME.ptx and
#    the manifest NAME.json;
#  - the warp-specialized GEMM at each shape of bench.py's GEMM table
#    (bench.py --list-gemm-shapes), written as MLIR by
#    `python/examples/gemm_ws.py --m M --n N --k K --emit-mlir PATH` and
#    compiled to gemm_bf16_ws_MxNxK.{mlir,cubin,ptx,json}; skipped, with a
#    message, where that script does not exist;
#  - the fused attention at each shape of bench.py's attention table
#    (bench.py --list-attention-shapes: BATCH HEADS SEQ HEAD_DIM causal|full),
#    written by `python/examples/attention.py --batch B --heads H --seq S
#    --head-dim D [--causal] --emit-mlir PATH` and compiled to
#    attention_fwd_BxHxSxD or attention_causal_fwd_BxHxSxD (the kernel's
#    entry and shape) .{mlir,cubin,ptx,json}; skipped, with a message, where
#    that script does not exist;
#  - the kernels of the GEMM table's split-K columns, the fused-epilogue
#    table, the FP8 table and the attention-new tables (bench.py
#    --list-generated: NAME SCRIPT ARGS... per line), each written by
#    `python/examples/SCRIPT ARGS --emit-mlir OUT_DIR/NAME.mlir` (SCRIPT
#    with a slash, bench/gpu/attention_kernels.py: that path from the
#    root) and compiled to NAME.{cubin,ptx,json};
#    a second kernel the script writes beside it (gemm_ws.py --split-k S:
#    the fix-up, NAME.fixup.mlir) is compiled too, to NAME.fixup.*. Where
#    SCRIPT does not exist (gemm_fp8.py in a tree without it) its kernels
#    are skipped with a message, and bench.py's table says they were not
#    compiled;
#  - the emulator's CUDA test corpus (emulator/test/cuda: each program's
#    PTX and its driver-API host program, linked against the stub libcuda)
#    into OUT_DIR/emulator-corpus, the TMA edge bisection
#    (bench/gpu/tma-edge) into OUT_DIR/tma-edge and the .approx table
#    recorder (bench/gpu/approx-tables) into OUT_DIR/approx-tables, from
#    the same build, so that bench/gpu/run-corpus.sh runs them on the GPU's
#    driver unchanged.
#
#   bench/gpu/compile-kernels.sh [OUT_DIR]   (default build/kernels)
#
# MOSAIC_COMPILE names the compiler (default build/bin/mosaic-compile);
# gemm_ws.py and attention.py run on MOSAIC_PYTHON (default
# /usr/bin/python3) with the mosaic_gpu module of the same build
# (BUILD/python, BUILD being the folder above the compiler's bin/). Every
# kernel must compile: a failure is reported, the others still compile, and
# the script fails.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build/kernels}
compiler=${MOSAIC_COMPILE:-$root/build/bin/mosaic-compile}
python=${MOSAIC_PYTHON:-/usr/bin/python3}
build=$(cd "$(dirname "$compiler")/.." && pwd)
mkdir -p "$out"
compiled=0
total=0

# compile NAME SOURCE: SOURCE to OUT/NAME.{cubin,ptx,json}, logged to OUT/NAME.log.
compile() {
  local name=$1 source=$2
  rm -f "$out/$name.cubin" "$out/$name.ptx" "$out/$name.json"
  if "$compiler" "$source" -o "$out/$name.cubin" >>"$out/$name.log" 2>&1; then
    echo "compiled $name -> $out/$name.cubin, $out/$name.ptx, $out/$name.json"
    compiled=$((compiled + 1))
  else
    echo "not compiled: $name (see $out/$name.log)"
  fi
}

for source in "$root"/examples/*.mlir; do
  name=$(basename "$source" .mlir)
  total=$((total + 1))
  : >"$out/$name.log"
  compile "$name" "$source"
done

# generate NAME GENERATOR ARGS...: GENERATOR ARGS --emit-mlir OUT/NAME.mlir,
# then compile that, and every OUT/NAME.SUFFIX.mlir it wrote beside it (a
# second kernel, as OUT/NAME.SUFFIX); logged to OUT/NAME.log.
generate() {
  local name=$1 generator=$2 extra
  shift 2
  total=$((total + 1))
  rm -f "$out/$name.mlir" "$out/$name".*.mlir "$out/$name".*.cubin "$out/$name".*.ptx \
    "$out/$name".*.json
  if PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" "$python" "$generator" \
      "$@" --emit-mlir "$out/$name.mlir" >"$out/$name.log" 2>&1 &&
      [ -s "$out/$name.mlir" ]; then
    compile "$name" "$out/$name.mlir"
    for extra in "$out/$name".*.mlir; do
      [ -f "$extra" ] || continue
      total=$((total + 1))
      compile "$(basename "$extra" .mlir)" "$extra"
    done
  else
    echo "not generated: $name (see $out/$name.log)"
  fi
}

generator=$root/python/examples/gemm_ws.py
if [ -f "$generator" ]; then
  while read -r m n k; do
    generate "gemm_bf16_ws_${m}x${n}x${k}" "$generator" --m "$m" --n "$n" --k "$k"
  done < <("$python" "$root/bench/gpu/bench.py" --list-gemm-shapes)
else
  echo "not generated: the warp-specialized GEMM per shape" \
    "(python/examples/gemm_ws.py does not exist in this tree)"
fi

generator=$root/python/examples/attention.py
if [ -f "$generator" ]; then
  while read -r batch heads seq head_dim mask; do
    entry=attention_fwd
    mask_flag=()
    if [ "$mask" = causal ]; then
      entry=attention_causal_fwd
      mask_flag=(--causal)
    fi
    generate "${entry}_${batch}x${heads}x${seq}x${head_dim}" "$generator" \
      --batch "$batch" --heads "$heads" --seq "$seq" --head-dim "$head_dim" "${mask_flag[@]}"
  done < <("$python" "$root/bench/gpu/bench.py" --list-attention-shapes)
else
  echo "not generated: the fused attention per shape" \
    "(python/examples/attention.py does not exist in this tree)"
fi

# The split-K columns, the fused-epilogue table, the FP8 table and the
# attention-new tables (SCRIPT with a slash: a path from the root).
while read -r name script args; do
  case $script in
  */*) generator=$root/$script ;;
  *) generator=$root/python/examples/$script ;;
  esac
  if [ -f "$generator" ]; then
    # shellcheck disable=SC2086 # ARGS are words: --m 8192 --n 8192 ...
    generate "$name" "$generator" $args
  else
    echo "not generated: $name (${generator#"$root"/} does not exist in this tree)"
  fi
done < <("$python" "$root/bench/gpu/bench.py" --list-generated)

# The corpus and the bisection, built (as ctest builds them) and copied.
# The collective matmuls, one kernel per device count and shape (the
# buffers' shapes depend on D; the device id does not: every device of a
# launch runs the same CUBIN).
while read -r kernel devices m n k; do
  generator=$root/python/examples/$kernel.py
  if [ -f "$generator" ]; then
    generate "${kernel}_d${devices}_${m}x${n}x${k}" "$generator" \
      --devices "$devices" --m "$m" --n "$n" --k "$k"
  else
    echo "not generated: $kernel (python/examples/$kernel.py does not exist in this tree)"
  fi
done < <("$python" "$root/bench/gpu/collective.py" --list-shapes)

copied=1
if ninja -C "$build" MosaicEmulatorCudaTests MosaicTmaEdgeHost \
    MosaicApproxTablesHost >"$out/corpus.log" 2>&1; then
  mkdir -p "$out/emulator-corpus" "$out/tma-edge" "$out/approx-tables"
  cp "$build"/emulator/test/cuda/*_host "$build"/emulator/test/cuda/*.ptx \
    "$out/emulator-corpus/" &&
    cp "$build"/bench/gpu/tma-edge/tma_edge_host \
      "$build"/bench/gpu/tma-edge/tma_edge.ptx "$out/tma-edge/" &&
    cp "$build"/bench/gpu/approx-tables/approx_tables_host \
      "$build"/bench/gpu/approx-tables/approx_tables.ptx \
      "$out/approx-tables/" ||
    copied=0
else
  copied=0
fi
if [ "$copied" -eq 1 ]; then
  echo "copied the emulator's CUDA corpus, the TMA edge bisection and the .approx table recorder into $out"
else
  echo "not copied: the emulator's CUDA corpus, the TMA edge bisection or the .approx table recorder (see $out/corpus.log)"
fi
echo "compile-kernels.sh: $compiled of $total kernels compiled into $out"
[ "$copied" -eq 1 ] || exit 1
[ "$compiled" -eq "$total" ]
