#!/usr/bin/env python3
"""Compile time to CUBIN, ours against Triton's, in one process.

Times, in-process and for sm_90a (no GPU needed), the wall time of one
compile call from source to CUBIN:
 - Triton: ``triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))``
   of the persistent TMA GEMM (``matmul_tma_persistent``, BM=128 BN=256
   BK=64, bf16, 8 warps, 3 stages) and the fused attention forward
   (``attention_fwd``, head dim 128, 128 x 128 blocks, bf16, 8 warps, 2
   stages) of bench/gpu/triton_peers.py. Each compile gets a fresh
   TRITON_CACHE_DIR and TRITON_ALWAYS_COMPILE=1, so nothing comes from
   Triton's cache; ptxas runs as a subprocess, as ours does.
 - Ours: ``mosaic_gpu.compile(module, emit="cubin")`` (the extension's
   compile, no process start) of examples/gemm_bf16_ws.mlir and
   examples/attention_fwd.mlir parsed once, and of the Python package's
   attention forward, ``attention.forward.build(Config(1, 2, 512, 128))``
   (built once; ``kernel.compile()`` timed). The stage split of ours is the
   median of each stage's time (``CompiledKernel.stage_times``).

Each kernel is compiled once to warm up (imports, Triton's first-use
setup, MLIR context creation) and then ``--repeats`` times; the table gives
the first compile and the median of the rest, and the ratio ours / Triton
of the medians. Runs on one thread.

Usage (Python with Triton and the built mosaic_gpu on the path, e.g.
PYTHONPATH=build/python /tmp/api-torchenv/bin/python):
    bench/compile-time/triton_peer.py [--repeats 7] [--line-info]
"""
import argparse
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "gpu"))

# The kernels the two sides compile, ours matched to Triton's by what they
# compute: (name in the table, peer name, how to compile ours, Triton's).
GEMM, ATTENTION = "GEMM bf16 (128x256x64 tiles)", "attention fwd bf16 d=128"


def triton_compilers():
    """name -> a function compiling that Triton kernel once to CUBIN."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    import triton_peers

    target = GPUTarget("cuda", 90, 32)
    gemm_signature = {"a_desc": "tensordesc<bf16[128,64]>", "b_desc": "tensordesc<bf16[64,256]>",
                      "c_desc": "tensordesc<bf16[128,128]>", "M": "i32", "N": "i32", "K": "i32"}
    gemm_constants = {"BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "EPILOGUE_SUBTILE": True,
                      "NUM_SMS": 132}
    rows = "tensordesc<bf16[128,128]>"
    attention_signature = {"q_desc": rows, "k_desc": rows, "v_desc": rows, "o_desc": rows,
                           "lse_ptr": "*fp32", "seq": "i32", "scale_log2": "fp32"}
    attention_constants = {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 128, "CAUSAL": False}

    def compiler(function, signature, constants, options):
        def run():
            # A fresh cache directory per compile: Triton compiles from the
            # source every time (TRITON_ALWAYS_COMPILE as well, in case a
            # knob was read before the variable changed).
            with tempfile.TemporaryDirectory(prefix="triton-cache.") as cache:
                os.environ["TRITON_CACHE_DIR"] = cache
                triton.knobs.cache.dir = cache
                kernel = triton.compile(ASTSource(function, signature, constants),
                                        target=target, options=options)
                assert kernel.asm["cubin"], "Triton made no CUBIN"
                return kernel
        return run

    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # its default; silences a warning
    triton.knobs.compilation.always_compile = True
    return triton.__version__, {
        GEMM: compiler(triton_peers.matmul_tma_persistent, gemm_signature, gemm_constants,
                       {"num_warps": 8, "num_stages": 3}),
        ATTENTION: compiler(triton_peers.attention_fwd, attention_signature,
                            attention_constants, {"num_warps": 8, "num_stages": 2}),
    }


def our_compilers(line_info):
    """(name, peer name) -> a function compiling that kernel of ours once."""
    import mosaic_gpu
    from mosaic_gpu import _mosaic
    from mosaic_gpu.attention import forward
    from mosaic_gpu.attention.config import Config

    def from_file(path):
        module = _mosaic.Module.parse_file(str(ROOT / path))
        return lambda: _mosaic.compile(module, emit="cubin", line_info=line_info)

    attention = forward.build(Config(1, 2, 512, 128))
    return {
        ("examples/gemm_bf16_ws.mlir", GEMM): from_file("examples/gemm_bf16_ws.mlir"),
        ("examples/attention_fwd.mlir", ATTENTION): from_file("examples/attention_fwd.mlir"),
        ("attention.forward Config(1, 2, 512, 128)", ATTENTION):
            lambda: attention.compile(line_info=line_info),
    }


def timed(compile_once, repeats):
    """(first compile's ms, median ms of the next `repeats`, the last result)."""
    times, result = [], None
    for _ in range(repeats + 1):
        start = time.perf_counter()
        result = compile_once()
        times.append((time.perf_counter() - start) * 1e3)
    return times[0], statistics.median(times[1:]), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--line-info", action="store_true",
                        help="compile ours with line info (the compile default; Triton's "
                             "PTX has line info too)")
    args = parser.parse_args()

    version, triton_kernels = triton_compilers()
    peers = {}
    print(f"Triton {version}, sm_90a, median of {args.repeats} compiles after one warm-up "
          f"(ms)\n")
    print("| kernel | first | median | ours / Triton |")
    print("|---|---|---|---|")
    for name, compile_once in triton_kernels.items():
        first, median, _ = timed(compile_once, args.repeats)
        peers[name] = median
        print(f"| Triton {name} | {first:.0f} | {median:.0f} | |")
        sys.stdout.flush()

    stage_rows = []
    for (name, peer), compile_once in our_compilers(args.line_info).items():
        stage_runs = []

        def compile_recording():
            kernel = compile_once()
            stage_runs.append(kernel.stage_times)
            return kernel
        first, median, _ = timed(compile_recording, args.repeats)
        print(f"| ours {name} | {first:.0f} | {median:.0f} | "
              f"{median / peers[peer]:.2f} ({peer}) |")
        sys.stdout.flush()
        stages = list(stage_runs[-1])
        stage_rows.append((name, stages, {s: statistics.median(run[s] for run in stage_runs[1:])
                                          for s in stages}))

    print("\nOurs per stage (median ms):\n")
    for name, stages, medians in stage_rows:
        print(f"| {name} | " + " | ".join(f"{s} {medians[s]:.1f}" for s in stages) + " |")


if __name__ == "__main__":
    main()
