#!/usr/bin/env python3
"""Emulator benchmark: emulated instructions per second and wall time.

Compiles every example with mosaic-compile, then runs each on the PTX
emulator with `mosaic-run --emulate` (the numerical check included) with the
hazard checker on and off, on 1 host thread and on all cores, and prints a
Markdown table of the median emulation time and thread instructions per
second over the repeats. These are CPU figures of this machine, not GPU
timings.

Usage: bench/emulator/throughput.py [--build build] [--repeats 3]
           [examples/*.mlir ...]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(mosaic_run, manifest, hazards, threads, result):
    environment = dict(os.environ, MOSAIC_EMULATOR_HAZARDS=hazards)
    if threads:
        environment["MOSAIC_EMULATOR_THREADS"] = str(threads)
    process = subprocess.run(
        [mosaic_run, str(manifest), "--emulate", f"--json={result}"],
        capture_output=True, text=True, env=environment)
    if process.returncode != 0:
        sys.exit(f"{manifest}: mosaic-run --emulate failed:\n"
                 f"{process.stdout}{process.stderr}")
    return json.loads(pathlib.Path(result).read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("kernels", nargs="*",
                        default=sorted(str(p) for p in
                                       (ROOT / "examples").glob("*.mlir")))
    args = parser.parse_args()
    build = pathlib.Path(args.build)
    compiler = build / "bin" / "mosaic-compile"
    mosaic_run = build / "bin" / "mosaic-run"
    configurations = [("on", 1), ("on", 0), ("off", 0)]
    print("| kernel | hazards | host threads | thread instructions | "
          "emulation s (median) | thread instructions/s |")
    print("|---|---|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as directory:
        for kernel in args.kernels:
            kernel = pathlib.Path(kernel)
            cubin = pathlib.Path(directory) / (kernel.stem + ".cubin")
            compiled = subprocess.run(
                [compiler, str(kernel), "-o", str(cubin)],
                capture_output=True, text=True)
            if compiled.returncode != 0:
                sys.exit(f"{kernel}: mosaic-compile failed:\n"
                         f"{compiled.stderr}")
            manifest = cubin.with_suffix(".json")
            result = pathlib.Path(directory) / "result.json"
            for hazards, threads in configurations:
                seconds, instructions = [], 0
                for _ in range(args.repeats):
                    outcome = run(mosaic_run, manifest, hazards, threads,
                                  result)
                    seconds.append(outcome["emulated_seconds"])
                    instructions = outcome["emulated_thread_instructions"]
                median = statistics.median(seconds)
                print(f"| {kernel.stem} | {hazards} | "
                      f"{threads or os.cpu_count()} | {instructions} | "
                      f"{median:.2f} | {instructions / median:.3g} |",
                      flush=True)


if __name__ == "__main__":
    main()
