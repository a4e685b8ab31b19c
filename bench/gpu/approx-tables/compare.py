#!/usr/bin/env python3
"""Compares two directories of .approx tables (approx_tables_host's output).

Usage: compare.py HARDWARE_DIR EMULATOR_DIR

Per instruction: the share of bitwise-equal results and a histogram of the
differences in ulp (the distance between the two results' ordered f32 bit
patterns), so that a model of the hardware's approximation can be judged
against a GPU's tables.
"""
import collections
import pathlib
import sys

import numpy as np


def ordered(bits):
    bits = bits.astype(np.int64)
    return np.where(bits & 0x80000000, -(bits & 0x7FFFFFFF), bits)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    hardware, emulator = map(pathlib.Path, sys.argv[1:])
    worst = 0
    for table in sorted(hardware.glob("*.bin")):
        theirs = np.fromfile(table, dtype=np.uint32)
        mine_path = emulator / table.name
        if not mine_path.exists():
            print(f"{table.stem}: no emulator table")
            worst = max(worst, 1)
            continue
        ours = np.fromfile(mine_path, dtype=np.uint32)
        if ours.size != theirs.size:
            print(f"{table.stem}: {ours.size} results against {theirs.size}")
            worst = max(worst, 1)
            continue
        distance = np.abs(ordered(ours) - ordered(theirs))
        histogram = collections.Counter(np.minimum(distance, 9).tolist())
        spread = ", ".join(f"{'>=9' if d == 9 else d} ulp: {n}"
                           for d, n in sorted(histogram.items()))
        print(f"{table.stem:24} {np.mean(distance == 0):8.4%} equal; {spread}")
    return worst


if __name__ == "__main__":
    sys.exit(main())
