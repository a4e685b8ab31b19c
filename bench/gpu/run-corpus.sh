#!/usr/bin/env bash
# Runs the emulator's CUDA test corpus and the TMA edge bisection on a GPU's
# own driver, so that every run on hardware re-validates the semantics the
# emulator claims (docs/RationaleEmulator.md), and records the GPU's
# .approx tables (bench/gpu/approx-tables). bench/gpu/run.sh calls it before
# the benchmarks; alone it takes about a minute.
#
#   bench/gpu/run-corpus.sh KERNEL_DIR
#
# KERNEL_DIR is what bench/gpu/compile-kernels.sh wrote: its
# emulator-corpus/ (each <program>_host with <program>.ptx, built on the
# build machine against the stub libcuda.so, so they load the GPU's
# libcuda.so.1 here) and tma-edge/. Prints one PASS/FAIL line per corpus
# variant, a table per program, and the bisection's line per combination
# with its verdict on each candidate rule. With $OUT set, also writes
# corpus.txt and tma-edge.txt there, and the .approx tables into
# $OUT/approx-tables (keep them in bench/gpu/approx-tables/h200/ and compare
# the emulator's with compare.py). Exits non-zero when a corpus variant
# failed; the bisection and the tables only report.
set -uo pipefail
if [ $# -ne 1 ]; then
  echo "usage: bench/gpu/run-corpus.sh KERNEL_DIR" >&2
  exit 2
fi
kernels=$(cd "$1" && pwd)
corpus=$kernels/emulator-corpus
log=${OUT:+$OUT/corpus.txt}
log=${log:-/dev/null}
status=0

if [ -d "$corpus" ]; then
  summary=()
  for host in "$corpus"/*_host; do
    program=$(basename "$host" _host)
    output=$(timeout 300 "$host" "$corpus/$program.ptx" 2>&1)
    code=$?
    echo "$output" | tee -a "$log" | grep -E '^(PASS|FAIL|ERROR)'
    passed=$(echo "$output" | grep -c '^PASS')
    failed=$(echo "$output" | grep -c -E '^(FAIL|ERROR)')
    summary+=("$(printf '%-16s %3d passed %3d failed (exit %d)' "$program" "$passed" "$failed" "$code")")
    [ "$code" -eq 0 ] || status=1
  done
  echo
  echo "emulator CUDA corpus on this GPU's driver:" | tee -a "$log"
  printf '  %s\n' "${summary[@]}" | tee -a "$log"
else
  echo "run-corpus.sh: no $corpus (compile-kernels.sh copies it)" >&2
  status=1
fi

edge=$kernels/tma-edge
if [ -x "$edge/tma_edge_host" ]; then
  echo
  echo "TMA edge bisection:"
  timeout 300 "$edge/tma_edge_host" "$edge/tma_edge.ptx" --jobs 16 \
    | tee ${OUT:+"$OUT/tma-edge.txt"}
else
  echo "run-corpus.sh: no $edge/tma_edge_host" >&2
fi
tables=$kernels/approx-tables
if [ -n "${OUT:-}" ] && [ -x "$tables/approx_tables_host" ]; then
  echo
  mkdir -p "$OUT/approx-tables"
  timeout 120 "$tables/approx_tables_host" "$tables/approx_tables.ptx" \
    "$OUT/approx-tables"
fi
exit $status
