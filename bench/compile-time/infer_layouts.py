#!/usr/bin/env python3
"""Compile-time benchmark of layout inference.

Generates kernels of roughly 100, 1k, 10k and 100k ops in four shapes
(pointwise chains, reductions, loops, wgmma chains), runs
`mosaic-opt -mosaic-gpu-infer-layouts -mlir-timing` on each several times and
reports the median wall time of the inference pass (parsing excluded).

Usage: bench/compile-time/infer_layouts.py [--mosaic-opt build/bin/mosaic-opt]
           [--sizes 100,1000,10000,100000] [--repeats 3]
"""
import argparse
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

SMEM = "#gpu.address_space<workgroup>"


def pointwise(n):
    lines = ["func.func @kernel(%in: memref<128x64xf32>, %out: memref<128x64xf32>) {",
             "  %c = arith.constant dense<1.5> : vector<128x64xf32>",
             "  %v0 = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>"]
    ops = ["arith.addf", "arith.mulf", "arith.subf"]
    for i in range(1, n - 2):
        if i % 4 == 3:
            lines.append(f"  %v{i} = math.exp %v{i-1} : vector<128x64xf32>")
        else:
            lines.append(f"  %v{i} = {ops[i % 3]} %v{i-1}, %c : vector<128x64xf32>")
    lines.append(f"  mosaic_gpu.vector_store %v{n-3}, %out : vector<128x64xf32>, memref<128x64xf32>")
    lines += ["  return", "}"]
    return "\n".join(lines)


def reductions(n):
    lines = ["func.func @kernel(%in: memref<128x64xf32>, %out: memref<128x64xf32>) {",
             "  %z = arith.constant dense<0.0> : vector<128xf32>",
             "  %x0 = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>"]
    blocks = max(1, (n - 4) // 4)
    for i in range(blocks):
        lines.append(f"  %r{i} = vector.multi_reduction <add>, %x{i}, %z [1] : vector<128x64xf32> to vector<128xf32>")
        lines.append(f"  %b{i} = mosaic_gpu.broadcast_in_dim %r{i}, dims [0] : vector<128xf32> -> vector<128x64xf32>")
        lines.append(f"  %d{i} = arith.subf %x{i}, %b{i} : vector<128x64xf32>")
        lines.append(f"  %x{i+1} = math.exp %d{i} : vector<128x64xf32>")
    lines.append(f"  mosaic_gpu.vector_store %x{blocks}, %out : vector<128x64xf32>, memref<128x64xf32>")
    lines += ["  return", "}"]
    return "\n".join(lines)


def loops(n):
    body = 8
    count = max(1, (n - 6) // (body + 2))
    lines = ["func.func @kernel(%in: memref<128x64xf32>, %out: memref<128x64xf32>) {",
             "  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
             "  %c4 = arith.constant 4 : index",
             "  %v0 = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>"]
    for i in range(count):
        lines.append(f"  %v{i+1} = scf.for %k{i} = %c0 to %c4 step %c1 iter_args(%a{i}_0 = %v{i}) -> (vector<128x64xf32>) {{")
        for j in range(1, body + 1):
            op = "arith.addf" if j % 2 else "arith.mulf"
            lines.append(f"    %a{i}_{j} = {op} %a{i}_{j-1}, %a{i}_{j-1} : vector<128x64xf32>")
        lines.append(f"    scf.yield %a{i}_{body} : vector<128x64xf32>")
        lines.append("  }")
    lines.append(f"  mosaic_gpu.vector_store %v{count}, %out : vector<128x64xf32>, memref<128x64xf32>")
    lines += ["  return", "}"]
    return "\n".join(lines)


def wgmma(n):
    a = f"memref<128x64xbf16, {SMEM}>"
    b = f"memref<64x128xbf16, {SMEM}>"
    lines = ["func.func @kernel(%out: memref<128x128xf32>) {",
             f"  %a = mosaic_gpu.slice_smem 0 : {a}",
             f"  %b = mosaic_gpu.slice_smem 16384 : {b}",
             "  %acc0 = arith.constant dense<0.0> : vector<128x128xf32>"]
    count = max(1, (n - 5) // 2)
    for i in range(count):
        lines.append(f"  %w{i} = mosaic_gpu.wgmma %acc{i}, %a, %b : vector<128x128xf32>, {a}, {b} -> vector<128x128xf32>")
        lines.append(f"  %acc{i+1} = arith.addf %w{i}, %w{i} : vector<128x128xf32>")
    lines.append(f"  mosaic_gpu.vector_store %acc{count}, %out : vector<128x128xf32>, memref<128x128xf32>")
    lines += ["  return", "}"]
    return "\n".join(lines)


KINDS = {"pointwise": pointwise, "reductions": reductions, "loops": loops, "wgmma": wgmma}


def pass_seconds(mosaic_opt, path):
    result = subprocess.run(
        [mosaic_opt, str(path), "-mosaic-gpu-infer-layouts", "-mlir-timing",
         "-mlir-timing-display=list", "-o", "/dev/null"],
        capture_output=True, text=True, check=True)
    for line in result.stderr.splitlines():
        if "MosaicGPUInferLayouts" in line:
            return float(re.match(r"\s*([\d.]+)", line).group(1))
    raise RuntimeError("no timing for the inference pass:\n" + result.stderr)


def count_ops(text):
    # Lines that define or are an operation (not braces or signatures).
    return sum(1 for line in text.splitlines()
               if line.strip() and not line.strip().startswith(("func.func", "}")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mosaic-opt", default="build/bin/mosaic-opt")
    parser.add_argument("--sizes", default="100,1000,10000,100000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'kernel':<11} {'ops':>7} {'inference ms':>13} {'us/op':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind, generate in KINDS.items():
            for size in sizes:
                text = generate(size)
                path = pathlib.Path(tmp) / f"{kind}_{size}.mlir"
                path.write_text(text)
                ops = count_ops(text)
                times = [pass_seconds(args.mosaic_opt, path) for _ in range(args.repeats)]
                median = statistics.median(times)
                print(f"{kind:<11} {ops:>7} {median * 1e3:>13.2f} {median * 1e6 / ops:>7.2f}")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
