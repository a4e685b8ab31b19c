#!/usr/bin/env python3
"""Fits the tensor-core accumulation model to a recorded GEMM's outputs.

docs/RationaleTensorCore.md describes the model (a step per `group`
products and the accumulator: aligned to the largest term, truncated `bits`
below its leading bit, summed exactly, rounded to f32) and how its
parameters were found: this script. For every recorded seed of a GEMM folder
here (bf16 A [M, K] and B [K, N], f32 accumulators, the output converted to
bf16 to nearest), it takes mosaic-run's inputs for that seed
(`--dump-inputs`), evaluates every combination of group size, window and
final rounding in NumPy, and prints how many outputs each gets different
from the H200's.

Usage: fit-accumulation.py MOSAIC_RUN [--kernel gemm_ws_512x512x256]
           [--groups 4,8,16] [--bits 23-30]
"""
import argparse
import itertools
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent


def bf16_values(raw):
    return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def to_bf16_nearest_even(values):
    bits = values.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def round_to_f32(values, toward_zero):
    rounded = values.astype(np.float32)
    if toward_zero:
        away = np.abs(rounded.astype(np.float64)) > np.abs(values)
        rounded = np.where(away, np.nextafter(rounded, np.float32(0)), rounded)
    return rounded.astype(np.float64)


def accumulate(a, b, group, bits, toward_zero):
    """The model's f32 accumulators of a @ b (float64 arrays of bf16)."""
    accumulator = np.zeros((a.shape[0], b.shape[1]))
    for k0 in range(0, a.shape[1], group):
        terms = np.stack([a[:, k:k + 1] * b[k:k + 1, :]
                          for k in range(k0, k0 + group)] + [accumulator])
        magnitude = np.abs(terms)
        _, exponent = np.frexp(np.where(magnitude > 0, magnitude, 1.0))
        exponent = np.where(magnitude > 0, exponent, -(1 << 20))
        # frexp's exponent is one above the leading bit's.
        quantum = np.ldexp(1.0, exponent.max(axis=0) - 1 - bits)
        truncated = np.trunc(terms / quantum) * quantum
        accumulator = round_to_f32(truncated.sum(axis=0), toward_zero)
    return accumulator


def parse_range(text):
    if "-" in text:
        low, high = text.split("-")
        return list(range(int(low), int(high) + 1))
    return [int(value) for value in text.split(",")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mosaic_run", type=pathlib.Path)
    parser.add_argument("--kernel", default="gemm_ws_512x512x256")
    parser.add_argument("--groups", default="4,8,16")
    parser.add_argument("--bits", default="23-30")
    args = parser.parse_args()
    folder = HERE / args.kernel
    manifest = folder / f"{args.kernel}.json"
    seeds = sorted(path.stem.removeprefix("h200-seed")
                   for path in folder.glob("h200-seed*.bin"))
    data = []
    with tempfile.TemporaryDirectory() as scratch:
        for seed in seeds:
            inputs = pathlib.Path(scratch) / f"inputs-{seed}.bin"
            subprocess.run([str(args.mosaic_run), str(manifest), "--emulate",
                            f"--seed={seed}", "--check=none",
                            f"--dump-inputs={inputs}"],
                           check=True, capture_output=True)
            hardware = np.fromfile(folder / f"h200-seed{seed}.bin",
                                   dtype=np.uint16)
            a, b = split_operands(np.fromfile(inputs, dtype=np.uint16),
                                  manifest)
            data.append((a, b, hardware))
        rows = []
        for group, bits, toward_zero in itertools.product(
                parse_range(args.groups), parse_range(args.bits),
                (True, False)):
            mismatches = []
            for a, b, hardware in data:
                out = to_bf16_nearest_even(
                    accumulate(a, b, group, bits, toward_zero))
                mismatches.append(int((out.ravel() != hardware).sum()))
            rows.append((group, bits, toward_zero, mismatches))
            print(f"group {group:2} bits {bits:2} "
                  f"{'toward zero' if toward_zero else 'nearest    '} "
                  f"mismatches {mismatches}", flush=True)
    best = min(rows, key=lambda row: sum(row[3]))
    print(f"best: group {best[0]}, {best[1]} bits, "
          f"{'toward zero' if best[2] else 'nearest'}: {best[3]}")
    return 0


def split_operands(raw, manifest):
    """A [M, K] and B [K, N] as float64, from the manifest's shapes."""
    parameters = [p for p in json.loads(manifest.read_text())["parameters"]
                  if p.get("kind") == "buffer"]
    (m, k), (_, n) = parameters[0]["shape"], parameters[1]["shape"]
    a = bf16_values(raw[:m * k]).reshape(m, k)
    b = bf16_values(raw[m * k:m * k + k * n]).reshape(k, n)
    return a, b


if __name__ == "__main__":
    sys.exit(main())
