"""What the row kernels rms_norm.py and row_softmax (softmax.py) share:
how a tile of rows is cut into column chunks, how they are checked (the
error measure, the tolerances, the default shapes, the widths whose
compiles must not spill) and their command line: check the kernel at a set
of shapes (or the --shape ones) against NumPy, or --compile-report its
ptxas figures at every shipped width.
"""
from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Sequence

import numpy as np

THREADS = 128
ROW_TILES = (8, 16, 32, 64)
# The most values of x a thread holds at once: a whole tile up to this
# many is kept in registers (softmax's exponentials beside it); past it,
# each chunk has CHUNK_VALUES per thread, and a pass holds two such vectors
# (the chunk, and the sum of squares and gamma, or the exponentials), which
# leaves the rest of the 255 registers to addresses and ptxas's scheduling.
WHOLE_TILE_VALUES = 64
CHUNK_VALUES = 32
# Widths, and so chunks, are a multiple of this many columns: the row
# layout of an 8-row tile gives a row 16 lanes of 4 f32 (64 columns), and
# that of a taller tile fewer.
COLUMN_UNIT = 64


def chunk_columns(rows: int, columns: int) -> int:
    """The columns one step of the kernel reads: all of them where the
    tile fits in WHOLE_TILE_VALUES per thread, else the widest multiple of
    COLUMN_UNIT that divides `columns` with at most CHUNK_VALUES per
    thread."""
    if columns % COLUMN_UNIT:
        raise ValueError(f"rows of {columns} columns: the kernel takes a multiple of "
                         f"{COLUMN_UNIT}")
    if rows * columns <= WHOLE_TILE_VALUES * THREADS:
        return columns
    widest = CHUNK_VALUES * THREADS // rows
    return max(chunk for chunk in range(COLUMN_UNIT, widest + 1, COLUMN_UNIT)
               if columns % chunk == 0)


def relative_error(y, expected):
    """The largest difference from `expected`, relative to the largest
    magnitude of its row."""
    y, expected = y.astype(np.float64), expected.astype(np.float64)
    scale = np.maximum(np.abs(expected).max(1, keepdims=True), np.finfo(np.float64).tiny)
    return float((np.abs(y - expected) / scale).max())


# The largest relative error each dtype passes with: f32's from its
# rounding and the hardware's rsqrt or ex2, bf16's from rounding the output.
TOLERANCE = {"f32": 1e-5, "bf16": 2.0 ** -7}

# (rows, shape) checked by default: every row tile, narrow and wide rows.
CHECKS = [(8, (16, 1024)), (16, (32, 4096)), (32, (64, 8192)), (64, (128, 128)),
          (64, (128, 512))]

# Every row tile at these widths is compiled by `--compile-report` (and,
# some of them, by the tests), which must show no spills and no stack.
SHIPPED_WIDTHS = (128, 256, 512, 1024, 2048, 4096, 8192)


def ptxas_report(kernel: Any, specs: Sequence) -> dict[str, Any]:
    """Compiles the generic ``kernel`` for ``specs`` and returns ptxas's
    figures (registers, spill_stores, spill_loads, stack_frame_bytes) with
    `seconds`, the time it took."""
    started = time.perf_counter()
    compiled = kernel.specialize(*specs).compile(line_info=False)
    return dict(compiled.manifest["ptxas"], seconds=time.perf_counter() - started)


def parse_shape(text: str) -> tuple[int, int]:
    rows, columns = text.lower().split("x")
    return int(rows), int(columns)


def main(name: str, doc: str, check: Callable, compile_report: Callable,
         argv: Sequence[str] | None = None) -> int:
    """Runs the command line of the kernel ``name`` (its example's
    docstring ``doc``; its ``check(rows, shape, dtype, backend)`` returns
    the relative error, ``compile_report(rows, width, dtype)`` ptxas's
    figures); returns the exit status (0: PASS)."""
    checks, row_tiles, tolerance = CHECKS, ROW_TILES, TOLERANCE
    parser = argparse.ArgumentParser(prog=f"{name}.py", description=doc.splitlines()[0])
    parser.add_argument("--emulate", action="store_true", help="run on the PTX emulator")
    parser.add_argument("--rows", type=int, choices=row_tiles,
                        help="the row tile (default: each check's own)")
    parser.add_argument("--shape", type=parse_shape, action="append",
                        help="ROWSxCOLUMNS of x, repeatable (default: a set of checks)")
    parser.add_argument("--dtype", choices=sorted(tolerance), default="f32")
    parser.add_argument("--compile-report", action="store_true",
                        help="compile every row tile at SHIPPED_WIDTHS and print ptxas's "
                             "registers, spills and stack, and the compile time")
    args = parser.parse_args(argv)
    if args.compile_report:
        for rows in [args.rows] if args.rows else row_tiles:
            for width in SHIPPED_WIDTHS:
                r = compile_report(rows, width, args.dtype)
                print(f"{name} rows={rows} width={width} {args.dtype}: "
                      f"{r['registers']} registers, {r['spill_stores']} B spill stores, "
                      f"{r['spill_loads']} B spill loads, {r['stack_frame_bytes']} B stack, "
                      f"{r['seconds'] * 1e3:.0f} ms")
        return 0
    if args.shape:
        checks = [(args.rows or 16, shape) for shape in args.shape]
    elif args.rows:
        checks = [(args.rows, shape) for _, shape in checks]
    worst = 0.0
    for rows, shape in checks:
        error = check(rows, shape, args.dtype, "emulator" if args.emulate else None)
        print(f"{name} rows={rows} {shape} {args.dtype}: relative error {error:.2e}")
        worst = max(worst, error)
    passed = worst < tolerance[args.dtype]
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1
