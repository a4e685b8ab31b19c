#!/usr/bin/env python3
"""Compile-time benchmark: wall time of each compilation stage per example.

Runs `mosaic-compile <example> --time-stages` several times for each example
kernel and reports the median of each stage (parse, inference, tiling,
lowering, nvvm-llvm, llvm-to-ptx, ptxas) and of everything before ptxas,
as a Markdown table.

Usage: bench/compile-time/stages.py [--mosaic-compile build/bin/mosaic-compile]
           [--repeats 7] [examples/*.mlir ...]
"""
import argparse
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
STAGES = ["parse", "inference", "tiling", "lowering", "nvvm-llvm",
          "llvm-to-ptx", "ptxas"]


def time_stages(compiler, kernel, output):
    result = subprocess.run(
        [compiler, str(kernel), "-o", str(output), "--time-stages"],
        capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{kernel}: mosaic-compile failed:\n{result.stderr}")
    line = re.search(r"stage times \(ms\):(.*)", result.stderr)
    if not line:
        sys.exit(f"{kernel}: no stage times in the output")
    return {name: float(ms) for name, ms in
            re.findall(r"([a-z-]+)=([0-9.]+)", line.group(1))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mosaic-compile",
                        default=str(ROOT / "build/bin/mosaic-compile"))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("kernels", nargs="*",
                        default=sorted(str(p) for p in
                                       (ROOT / "examples").glob("*.mlir")))
    args = parser.parse_args()
    print("| kernel | " + " | ".join(STAGES) + " | before ptxas |")
    print("|---" * (len(STAGES) + 2) + "|")
    with tempfile.TemporaryDirectory() as scratch:
        for kernel in args.kernels:
            runs = [time_stages(args.mosaic_compile, kernel,
                                pathlib.Path(scratch) / "kernel.cubin")
                    for _ in range(args.repeats)]
            medians = {stage: statistics.median(run[stage] for run in runs)
                       for stage in STAGES}
            before = statistics.median(
                sum(run[stage] for stage in STAGES if stage != "ptxas")
                for run in runs)
            cells = " | ".join(f"{medians[stage]:.1f}" for stage in STAGES)
            print(f"| {pathlib.Path(kernel).stem} | {cells} | {before:.1f} |")


if __name__ == "__main__":
    main()
