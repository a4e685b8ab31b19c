#!/usr/bin/env python3
"""The compile's llvm-to-ptx stage with LLVM's SLP vectorizer on (today)
and off, in-process, and whether the PTX changes.

The extension uses the shared libLLVM, whose ``-vectorize-slp`` option the
SLP pass reads before it runs; this sets it through LLVM's C API
(``LLVMParseCommandLineOptions``), which can be done once per process, so
the runs with SLP on all come first.

Usage: PYTHONPATH=build/python bench/compile-time/without_slp.py [--repeats 7]
           [--libllvm /usr/lib/llvm-22/lib/libLLVM.so.22.1]
"""
import argparse
import ctypes
import pathlib
import statistics

from mosaic_gpu import _mosaic

ROOT = pathlib.Path(__file__).resolve().parents[2]


def modules():
    from mosaic_gpu.attention import forward
    from mosaic_gpu.attention.config import Config
    for name in ("gemm_bf16_ws", "attention_fwd"):
        yield name, _mosaic.Module.parse_file(str(ROOT / "examples" / f"{name}.mlir"))
    yield "attention.forward Config(1, 2, 512, 128)", forward.build(Config(1, 2, 512, 128)).module


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--libllvm", default="/usr/lib/llvm-22/lib/libLLVM.so.22.1")
    args = parser.parse_args()

    def compile_ptx(module):
        kernel = _mosaic.compile(module, emit="ptx", line_info=False)
        return kernel.stage_times["llvm-to-ptx"], kernel.ptx

    kernels = list(modules())
    with_slp = {}
    for name, module in kernels:
        compile_ptx(module)  # warm-up
        with_slp[name] = [compile_ptx(module) for _ in range(args.repeats)]
    llvm = ctypes.CDLL(args.libllvm)
    argv = (ctypes.c_char_p * 2)(b"mosaic", b"-vectorize-slp=false")
    llvm.LLVMParseCommandLineOptions(2, argv, b"")
    print(f"llvm-to-ptx, median of {args.repeats} compiles (ms)\n")
    print("| kernel | SLP on | SLP off | PTX identical |")
    print("|---|---|---|---|")
    for name, module in kernels:
        without = [compile_ptx(module) for _ in range(args.repeats)]
        same = all(ptx == with_slp[name][0][1] for _, ptx in without)
        print(f"| {name} | {statistics.median(t for t, _ in with_slp[name]):.1f} | "
              f"{statistics.median(t for t, _ in without):.1f} | {'yes' if same else 'no'} |")


if __name__ == "__main__":
    main()
