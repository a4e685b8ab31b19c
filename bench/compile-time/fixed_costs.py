#!/usr/bin/env python3
"""What every compile pays whatever the kernel: each measured as the median
of the differences of interleaved pairs, so that the machine's load hits
both sides alike.

 - the PTX ISA question (``ptxas --version``, asked on every compile unless
   ``ptx_features`` is given): ``mosaic_gpu.compile`` with and without
   ``ptx_features`` set to the ISA it would choose;
 - a fresh MLIR context (every Python kernel has its own): compiling a
   module parsed anew against compiling one again in its used context;
 - libdevice, which gpu-module-to-binary links into every module when it
   has a CUDA toolkit path: its GpuModuleToBinaryPass time (``mlir-opt
   -mlir-timing``) on the kernel's pipeline output with CUDA_HOME set and
   unset;
 - the time outside the stages (``CompiledKernel.stage_times``).

Usage: PYTHONPATH=build/python bench/compile-time/fixed_costs.py
           [--repeats 21] [examples/elementwise.mlir examples/gemm_bf16_ws.mlir]
"""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import tempfile
import time

from mosaic_gpu import _mosaic

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLIR_OPT = pathlib.Path(os.environ.get("LLVM_TOOLS", "/usr/lib/llvm-22/bin")) / "mlir-opt"


def compile_ms(module, **options):
    start = time.perf_counter()
    kernel = _mosaic.compile(module, line_info=False, **options)
    return (time.perf_counter() - start) * 1e3, kernel


def paired(first, second, repeats):
    """Medians of `first()`, of `second()` and of their differences, run in
    alternation."""
    a, b = [], []
    for _ in range(repeats):
        a.append(first())
        b.append(second())
    return statistics.median(a), statistics.median(b), statistics.median(
        x - y for x, y in zip(a, b))


def binary_ms(path, with_toolkit):
    env = dict(os.environ)
    if with_toolkit:
        env.setdefault("CUDA_HOME", "/usr/local/cuda")
    else:
        for name in ("CUDA_HOME", "CUDA_ROOT", "CUDA_PATH"):
            env.pop(name, None)
    result = subprocess.run([MLIR_OPT, str(path), "--gpu-module-to-binary=format=isa",
                             "-mlir-timing", "-mlir-timing-display=list", "-o", os.devnull],
                            env=env, capture_output=True, text=True, check=True)
    match = re.search(r"([\d.]+) \([ \d.]+%\)\s+GpuModuleToBinaryPass", result.stderr)
    return float(match.group(1)) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("kernels", nargs="*",
                        default=["examples/elementwise.mlir", "examples/gemm_bf16_ws.mlir"])
    args = parser.parse_args()
    print("| kernel | cost | with (ms) | without (ms) | median of differences (ms) |")
    print("|---|---|---|---|---|")
    for name in args.kernels:
        text = (ROOT / name).read_text()
        module = _mosaic.Module.parse(text)
        _, kernel = compile_ms(module)
        isa = kernel.ptx_features
        stem = pathlib.Path(name).stem

        def row(cost, measured):
            print(f"| {stem} | {cost} | {measured[0]:.1f} | {measured[1]:.1f} | "
                  f"{measured[2]:+.1f} |", flush=True)

        row("`ptxas --version` (ptx_features unset / set)",
            paired(lambda: compile_ms(module)[0],
                   lambda: compile_ms(module, ptx_features=isa)[0], args.repeats))
        row("a fresh context (parsed anew / used)",
            paired(lambda: compile_ms(_mosaic.Module.parse(text))[0],
                   lambda: compile_ms(module)[0], args.repeats))
        outside = []
        for _ in range(args.repeats):
            ms, compiled = compile_ms(module)
            outside.append(ms - sum(compiled.stage_times.values()))
        print(f"| {stem} | wall time outside the stages | {statistics.median(outside):.1f} | | |")
        if MLIR_OPT.exists():
            with tempfile.TemporaryDirectory() as scratch:
                lowered = pathlib.Path(scratch) / "lowered.mlir"
                lowered.write_text(_mosaic.compile(module, emit="mlir").mlir)
                row("libdevice in gpu-module-to-binary (toolkit path / none)",
                    paired(lambda: binary_ms(lowered, True), lambda: binary_ms(lowered, False),
                           args.repeats))


if __name__ == "__main__":
    main()
