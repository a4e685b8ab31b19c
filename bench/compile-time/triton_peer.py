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
Both with line info (each compiler's default) unless ``--no-line-info``.

The kernels are compiled round-robin, each once per round, so that a
change in the machine's load hits all of them alike; round 0 warms up
(imports, Triton's first-use setup). The table gives the first compile, the
median of the other ``--repeats`` rounds and the median of the per-round
ratios ours / Triton, in all and before ptxas (the wall time less the
ptxas stage, Triton's ``cubin``); a second table splits each into its
stages. Runs on
the calling thread.

Usage (Python with Triton and the built mosaic_gpu on the path, e.g.
PYTHONPATH=build/python /tmp/api-torchenv/bin/python):
    bench/compile-time/triton_peer.py [--repeats 7] [--no-line-info]
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


def triton_compilers(line_info):
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
            return dict(stage_times)
        return run

    # Each stage (ttir, ttgir, llir, ptx, cubin) timed, through Triton's
    # hook for inspecting the stages (called without arguments for its part
    # of the cache key).
    stage_times = {}

    def time_stages(*args):
        if not args:
            return "", ""
        stages = args[1]
        for name, stage in list(stages.items()):
            def timed_stage(src, metadata, stage=stage, name=name):
                start = time.perf_counter()
                try:
                    return stage(src, metadata)
                finally:
                    stage_times[name] = (time.perf_counter() - start) * 1e3
            stages[name] = timed_stage
    triton.knobs.runtime.add_stages_inspection_hook = time_stages
    triton.knobs.compilation.disable_line_info = not line_info
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
    """(name, peer name) -> a function compiling that kernel of ours once
    and returning its stage times."""
    from mosaic_gpu import _mosaic
    from mosaic_gpu.attention import forward
    from mosaic_gpu.attention.config import Config

    def from_file(path):
        module = _mosaic.Module.parse_file(str(ROOT / path))
        return lambda: _mosaic.compile(module, emit="cubin", line_info=line_info).stage_times

    attention = forward.build(Config(1, 2, 512, 128))
    return {
        ("examples/gemm_bf16_ws.mlir", GEMM): from_file("examples/gemm_bf16_ws.mlir"),
        ("examples/attention_fwd.mlir", ATTENTION): from_file("examples/attention_fwd.mlir"),
        ("attention.forward Config(1, 2, 512, 128)", ATTENTION):
            lambda: attention.compile(line_info=line_info).stage_times,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--no-line-info", dest="line_info", action="store_false",
                        help="both without line info (by default both have it, as both "
                             "compilers' defaults do)")
    args = parser.parse_args()

    version, triton_kernels = triton_compilers(args.line_info)
    # (row name, the Triton kernel it is compared with, compile function).
    entries = [(f"Triton {name}", name, run) for name, run in triton_kernels.items()]
    entries += [(f"ours {name}", peer, run)
                for (name, peer), run in our_compilers(args.line_info).items()]
    # Round-robin: every kernel once per round, so that a change in the
    # machine's load hits all of them alike; round 0 is the warm-up.
    times = {row: [] for row, _, _ in entries}
    stages = {row: [] for row, _, _ in entries}
    for _ in range(args.repeats + 1):
        for row, _, run in entries:
            start = time.perf_counter()
            stage_times = run()
            times[row].append((time.perf_counter() - start) * 1e3)
            stages[row].append(stage_times)

    print(f"Triton {version}, sm_90a, in-process compile to CUBIN: the first compile and "
          f"the median of {args.repeats} after it (ms); ours / Triton is the median of the "
          f"per-round ratios\n")
    def before_ptxas(row, round_):
        """The round's wall time less its ptxas stage (Triton's `cubin`)."""
        stage_times = stages[row][round_]
        return times[row][round_] - stage_times.get("ptxas", stage_times.get("cubin", 0.0))

    print("| kernel | first | median | ours / Triton | median before ptxas "
          "| ours / Triton before ptxas |")
    print("|---|---|---|---|---|---|")
    rounds = range(1, args.repeats + 1)
    for row, peer, _ in entries:
        first, median = times[row][0], statistics.median(times[row][1:])
        before = statistics.median(before_ptxas(row, r) for r in rounds)
        ratio = ratio_before = ""
        if row.startswith("ours"):
            triton_row = f"Triton {peer}"
            whole = statistics.median(times[row][r] / times[triton_row][r] for r in rounds)
            ratio = f"{whole:.2f} of {peer}"
            part = statistics.median(before_ptxas(row, r) / before_ptxas(triton_row, r)
                                     for r in rounds)
            ratio_before = f"{part:.2f}"
        print(f"| {row} | {first:.0f} | {median:.0f} | {ratio} | {before:.0f} | {ratio_before} |")

    print("\nPer stage (median ms; Triton's: ttir, ttgir, llir (TTGIR to LLVM IR, LLVM's "
          "O3), ptx (LLVM to PTX), cubin (ptxas); `other` is the wall time outside them):\n")
    for row, _, _ in entries:
        runs = stages[row][1:]
        names = list(runs[-1])
        medians = {s: statistics.median(run[s] for run in runs) for s in names}
        other = statistics.median(t - sum(run.values())
                                  for t, run in zip(times[row][1:], runs))
        print(f"| {row} | " + " | ".join(f"{s} {medians[s]:.1f}" for s in names) +
              f" | other {other:.1f} |")


if __name__ == "__main__":
    main()
