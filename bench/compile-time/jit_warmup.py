#!/usr/bin/env python3
"""Wall time of ``GenericKernel.precompile``: python/examples/layer_norm.py
built and compiled for several shapes, one compile at a time
(``workers=1``) against side by side (``workers=2`` and more).

Each round makes the kernel afresh (``runpy``), builds every signature
(``specialize``, on this thread) and then times ``precompile`` into an empty
cache directory with an empty in-memory cache, once per worker count,
alternating; the table gives the medians of the build and of the compile,
and the process CPU time of the compile (this process and its ptxas
children) over its wall time.

Usage: PYTHONPATH=build/python bench/compile-time/jit_warmup.py
           [--rounds 3] [--workers 1,2] [--shapes 64x128,128x128,192x128,256x128]
"""
import argparse
import os
import pathlib
import resource
import runpy
import statistics
import tempfile
import time

import mosaic_gpu as mgpu

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cpu_seconds():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--shapes", default="64x128,128x128,192x128,256x128")
    args = parser.parse_args()
    shapes = [tuple(int(n) for n in shape.split("x")) for shape in args.shapes.split(",")]
    signatures = [(((rows, columns), "f32"), ((columns,), "f32"), ((columns,), "f32"))
                  for rows, columns in shapes]
    worker_counts = [int(w) for w in args.workers.split(",")]
    mgpu.launch.toolchain_version()
    results = {workers: [] for workers in worker_counts}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for workers in worker_counts:
                os.environ["MOSAIC_GPU_CACHE_DIR"] = str(
                    pathlib.Path(scratch) / f"{round_}-{workers}")
                mgpu.launch._compiled.clear()
                kernel = runpy.run_path(
                    str(ROOT / "python" / "examples" / "layer_norm.py"))["layer_norm"]
                start = time.perf_counter()
                for signature in signatures:
                    kernel.specialize(*signature)
                built = time.perf_counter()
                cpu = cpu_seconds()
                kernel.precompile(*signatures, workers=workers)
                compiled = time.perf_counter()
                results[workers].append((built - start, compiled - built,
                                         cpu_seconds() - cpu))
    print(f"layer_norm at {', '.join(f'{r}x{c}' for r, c in shapes)} (f32), "
          f"{os.cpu_count()} CPUs, median of {args.rounds} rounds\n")
    print("| workers | build ms | compile ms | compile CPU / wall |")
    print("|---|---|---|---|")
    for workers, runs in results.items():
        build = statistics.median(r[0] for r in runs) * 1e3
        compile_ = statistics.median(r[1] for r in runs) * 1e3
        usage = statistics.median(r[2] / r[1] for r in runs)
        print(f"| {workers} | {build:.0f} | {compile_:.0f} | {usage:.2f} |")


if __name__ == "__main__":
    main()
