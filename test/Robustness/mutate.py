#!/usr/bin/env python3
"""Mutation fuzzing: no input may crash mosaic-opt.

Takes the test and example kernels, mutates them at random (numbers replaced
by edge values, characters deleted, types and memory spaces swapped), runs
each through the verifier and the project's passes, and fails if any run
crashes (a signal, an exit code other than 0 or 1, or a stack dump) instead
of printing IR or a diagnostic. Deterministic for a given seed.

Usage: mutate.py MOSAIC_OPT SOURCE_ROOT [--seed S] [--count N]
"""
import argparse
import pathlib
import random
import re
import subprocess
import sys

EDGE_NUMBERS = ["0", "-1", "1", "3", "-7", "2147483647", "-2147483648",
                "9223372036854775807", "4294967296", "256", "7", "-100"]
SWAPS = [("workgroup", "global"), ("bf16", "f8E4M3FN"), ("f32", "i8"),
         ("[", "[1, "), ("x", "x2x"), ("-1", "-2")]
PIPELINES = [
    [],
    ["-mosaic-gpu-infer-layouts"],
    ["-mosaic-gpu-infer-layouts", "-mosaic-gpu-apply-transforms"],
    ["-mosaic-gpu-infer-layouts", "-mosaic-gpu-apply-transforms",
     "-mosaic-gpu-lower"],
    ["-mosaic-gpu-pipeline"],
]


def cases(source_root):
    texts = [p.read_text() for p in sorted((source_root / "test").rglob("*.mlir"))]
    texts += [p.read_text() for p in sorted((source_root / "examples").glob("*.mlir"))]
    result = []
    for text in texts:
        result += [case for case in text.split("// -----") if "mosaic_gpu" in case]
    return result


def mutate(rng, text):
    for _ in range(rng.randint(1, 3)):
        numbers = list(re.finditer(r"-?\d+", text))
        kind = rng.random()
        if kind < 0.6 and numbers:
            match = rng.choice(numbers)
            text = text[:match.start()] + rng.choice(EDGE_NUMBERS) + text[match.end():]
        elif kind < 0.8 and text:
            start = rng.randrange(len(text))
            text = text[:start] + text[start + rng.randint(1, 12):]
        else:
            old, new = rng.choice(SWAPS)
            text = text.replace(old, new, 1)
    return text


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mosaic_opt")
    parser.add_argument("source_root", type=pathlib.Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=100)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    pool = cases(args.source_root)
    for index in range(args.count):
        text = mutate(rng, rng.choice(pool))
        passes = rng.choice(PIPELINES)
        run = subprocess.run([args.mosaic_opt, "-", *passes], input=text,
                             capture_output=True, text=True, timeout=60)
        if (run.returncode not in (0, 1) or "Stack dump" in run.stderr
                or "PLEASE submit" in run.stderr):
            print(f"input {index} crashed mosaic-opt {' '.join(passes)}:\n{text}\n"
                  f"{run.stderr[-2000:]}")
            return 1
    print(f"{args.count} mutated inputs: no crash")
    return 0


if __name__ == "__main__":
    sys.exit(main())
