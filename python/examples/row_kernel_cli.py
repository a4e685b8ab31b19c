"""The command line rms_norm.py and softmax.py share: check the kernel at
a set of shapes (or the --shape ones) against NumPy, or --compile-report
its ptxas figures at every shipped width.

Each example passes its name, its docstring, its ``check(rows, shape,
dtype, backend)``, its default checks, row tiles, tolerances and shipped
widths, and ``compile_report(rows, width, dtype)``, which returns ptxas's
figures (registers, spill_stores, spill_loads, stack_frame_bytes) and the
compile's ``seconds``.
"""
from __future__ import annotations

import argparse
from typing import Callable, Sequence


def parse_shape(text: str) -> tuple[int, int]:
    rows, columns = text.lower().split("x")
    return int(rows), int(columns)


def main(name: str, doc: str, *, check: Callable, compile_report: Callable,
         checks: Sequence, row_tiles: Sequence[int], tolerance: dict[str, float],
         shipped_widths: Sequence[int], argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status (0: PASS)."""
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
            for width in shipped_widths:
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
