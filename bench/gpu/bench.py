#!/usr/bin/env python3
"""Times the compiled example kernels against their peers on one GPU.

For every manifest in a folder of precompiled kernels, runs mosaic-run
(which checks the kernel against a float64 reference and times it), then
checks and times the peers of that kernel on the same shapes in this
process: PyTorch and small Triton kernels. Every time, ours and the peers',
is the median of many runs timed with CUDA events after a warm-up, with the
L2 cache flushed before each run, on fresh random inputs; every output is
poisoned (NaN) before the checked run.

The GEMMs make a table of their own, one row per shape of GEMM_SHAPES (and
any other shape a kernel of ours was compiled for), one column per
implementation: cuBLAS (torch.matmul), each of our GEMM kernels (the
warp-specialized gemm_bf16_ws, compiled per shape by compile-kernels.sh,
and the simple gemm_bf16, 4096^3 only), Triton's persistent TMA GEMM and a
blocked Triton GEMM (triton_peers.py). Each cell gives the time, TFLOP/s
and cuBLAS's time over that time (above 1: faster than cuBLAS).

Attention makes another, one row per shape of ATTENTION_SHAPES with and
without the causal mask (and any other shape a kernel of ours was compiled
for), one column per implementation: torch's scaled_dot_product_attention
with the flash backend forced, ours (attention_fwd or attention_causal_fwd,
compiled per shape by compile-kernels.sh) and a Triton fused attention
(triton_peers.py). Each cell gives the time, TFLOP/s and SDPA's time over
that time. The peers' O (and the Triton peer's LSE) are checked against a
float64 reference on sampled rows, after a check that every element was
written; mosaic-run checks ours.

The GEMM table also has a column per K split of our split-K GEMM
(gemm_ws.py --split-k S: the GEMM writing f32 partial tiles, then the
fix-up summing them; the cell is the sum of the two kernels' medians) at
the shapes with few tiles, and rows of shapes that are not tile multiples.
The FP8 table has one row per shape of FP8_SHAPES and scaling (per tensor,
per row, per 1x128 / 128x128 block), one column each for torch._scaled_mm
(cuBLAS), ours (gemm_fp8, compiled per case by compile-kernels.sh) and a
Triton FP8 GEMM; the fused-epilogue table one row per EPILOGUE_CASES, one
column each for the unfused torch sequence, cuBLAS's fused epilogue,
torch.compile and ours (gemm_ws.py --epilogue NAME). mosaic-run has no
reference for those kernels of ours: it runs them with --check=none (fresh
random inputs, poisoned outputs that must all be written, the timing) and
dumps their inputs and outputs, which checks.py compares with float64.
--tables picks the tables to measure.

Prints the tables, appends them to docs/BENCHMARKS.md with the date, the GPU
and the command when every check passed, and exits non-zero when one failed.
A peer that cannot run here (Triton missing, an API it lacks) leaves its
cells `-` or `unavailable` with a note saying why; that is not a failure.

Usage (normally through bench/gpu/run.sh, which builds mosaic-run first):
  bench/gpu/bench.py --kernels DIR --mosaic-run PATH [--docs FILE]
      [--out DIR] [--warmup N] [--reps N] [--seed S] [--command TEXT]
      [--tables gemm,gemm-new,attention,other,fp8,epilogue]
      [--run-timeout SECONDS] [--no-torch-compile]
  bench/gpu/bench.py --list-gemm-shapes     (M N K per line, for
      compile-kernels.sh; needs no GPU)
  bench/gpu/bench.py --list-attention-shapes
      (BATCH HEADS SEQ HEAD_DIM causal|full per line, for
      compile-kernels.sh; needs no GPU)
  bench/gpu/bench.py --list-generated
      (NAME SCRIPT ARGS... per split-K, FP8 and fused-epilogue kernel, for
      compile-kernels.sh; needs no GPU)
"""
import argparse
import contextlib
import dataclasses
import datetime
import itertools
import json
import math
import os
import pathlib
import random
import re
import statistics
import subprocess
import sys
import tempfile
import typing

# Relative-error tolerances, as in mosaic-run (docs/RationaleRuntime.md).
F32_TOLERANCE = 1e-5
BF16_TOLERANCE = 1e-2

FLUSH_BYTES = 256 << 20

# mosaic-run's references (--check=NAME). A kernel is checked against the
# one its entry names, or the longest one its entry starts with, followed by
# `_` ("gemm_ws": gemm; "attention_causal_fwd": attention_causal).
REFERENCES = ("elementwise", "softmax", "tma_roundtrip", "gemm", "attention",
              "attention_causal")


class GemmShape(typing.NamedTuple):
    m: int
    n: int
    k: int
    why: str
    # The K splits of gemm_ws.py's split-K GEMM timed at this shape (each a
    # column of its own), for the shapes with too few tiles to fill the SMs.
    splits: tuple = ()


# The GEMM table's shapes. The first ones are multiples of the
# warp-specialized kernel's cluster tile (two 128x256 CTA tiles: 256 in M
# and N) and of its 64-wide K step; the last ones are not (gemm_ws.py takes
# any M, N and K whose rows are 16-byte aligned: TMA fills and clips the
# edge tiles). Tile counts are of 128x256 tiles, waves of 132 SMs (H100).
GEMM_SHAPES = [
    GemmShape(8192, 8192, 8192,
              "the headline: square, compute-bound, 2048 tiles (15.5 waves)"),
    GemmShape(4096, 4096, 4096,
              "gemm_bf16's shape, so that every column has a number; 512 tiles "
              "(3.9 waves)"),
    GemmShape(4096, 4096, 512,
              "short K: 8 K steps per tile, so the prologue and the epilogue weigh "
              "as much as the main loop; what persistence and overlapping a tile's "
              "stores with the next tile's loads are for"),
    GemmShape(8192, 8192, 1024,
              "short K with a large C: 128 MiB of stores against 32 MiB of loads; "
              "the epilogue's bandwidth"),
    GemmShape(16384, 1024, 8192,
              "tall and skinny: 4 tile columns; B (16 MiB) stays in L2 while A "
              "streams"),
    GemmShape(1024, 16384, 8192,
              "short and wide: 8 tile rows; A stays in L2 while B streams"),
    GemmShape(1024, 1024, 32768,
              "deep K, small C: 32 tiles for 132 SMs; without split-K most SMs "
              "idle, which cuBLAS avoids. Split-K: 64 units of 128x128 per split, "
              "so 2 splits are one wave (gemm_ws.py --split-k auto's choice) and 4 "
              "are two", splits=(2, 4)),
    GemmShape(256, 4096, 14336,
              "an MLP down projection (Llama-3-8B's 14336 -> 4096) on 256 tokens: 32 "
              "tiles; split-K as the deep-K row (64 units of 128x128 per split, "
              "--split-k auto: 2)", splits=(2, 4)),
    GemmShape(4000, 50304, 1000,
              "any shape: a language model's output layer, 4000 tokens (M not a "
              "multiple of 128) at GPT-2's vocabulary padded to 50304 (K = 1000 not a "
              "multiple of the 64-wide K step: TMA fills the last step with zeros). "
              "Not the vocabulary itself, 50257, with B K x N as mosaic-run's gemm "
              "reference takes it: TMA needs every row of a global array to start "
              "16-byte aligned, and a row of B with N = 50257 is 100514 bytes; K x N B "
              "also needs N to be a multiple of 64 (wgmma's 64-column tiles of an "
              "N-major B, which TMA can only fill whole). gemm_ws.py takes N = 50257 "
              "with B given N x K (--b-layout nk), storing C's unaligned rows from "
              "registers"),
    GemmShape(3000, 4096, 3000,
              "any shape: M and K off the tile (3000 = 23.4 tiles of 128, 46.9 K steps "
              "of 64), 384 tiles (2.9 waves)"),
]


def gemm_is_tiled(shape):
    """Whether the shape is a multiple of the cluster tile and of the K step."""
    return shape.m % 256 == 0 and shape.n % 256 == 0 and shape.k % 64 == 0


def new_gemm_shapes():
    """The rows whose columns are new (split-K) or that are not tile
    multiples: what `--tables gemm-new` measures."""
    return [(s.m, s.n, s.k) for s in GEMM_SHAPES if s.splits or not gemm_is_tiled(s)]


def split_k_column(splits):
    return f"gemm_bf16_ws split-K {splits}"


def split_k_name(dims, splits):
    """The compiled split-K GEMM at `dims` (its fix-up: NAME.fixup)."""
    return f"gemm_bf16_ws_splitk{splits}_{shape_label(dims)}"


class EpilogueCase(typing.NamedTuple):
    m: int
    n: int
    k: int
    epilogue: str


# The fused-epilogue table: gemm_ws.py --epilogue NAME against the same
# computation in torch, unfused. bias_gelu_tanh is nn.Linear + GELU (a
# bias per column of C, then the tanh GELU); residual adds an (M, N) skip
# connection. 8192^3 is the headline; 4096x16384x4096 an MLP up projection
# (4096 -> 16384) on 4096 tokens, whose C (128 MiB) is 4x A and B together,
# so the unfused sequence's extra passes over C weigh most.
EPILOGUE_SHAPES = [(8192, 8192, 8192), (4096, 16384, 4096)]
EPILOGUES = ("bias_gelu_tanh", "residual")
EPILOGUE_CASES = [EpilogueCase(*dims, epilogue) for epilogue in EPILOGUES
                  for dims in EPILOGUE_SHAPES]


def epilogue_name(case):
    return f"gemm_bf16_ws_{case.epilogue}_{shape_label(case[:3])}"


class Fp8Case(typing.NamedTuple):
    m: int
    n: int
    k: int
    scaling: str


# The FP8 table's shapes, each with the three scalings of gemm_fp8.py.
FP8_SHAPES = [
    GemmShape(8192, 8192, 8192, "the headline, as in the bf16 table"),
    GemmShape(4096, 4096, 4096, "512 tiles of 128x256 (3.9 waves)"),
    GemmShape(16384, 4096, 14336,
              "an MLP down projection (Llama-3-8B's 14336 -> 4096) on 16k tokens: "
              "long K, where promoting the FP8 accumulator every 128 of K matters"),
]
FP8_SCALINGS = ("tensor", "row", "block")
FP8_CASES = [Fp8Case(s.m, s.n, s.k, scaling) for s in FP8_SHAPES for scaling in FP8_SCALINGS]


def fp8_name(case):
    return f"gemm_fp8_{case.scaling}_{shape_label(case[:3])}"


class AttentionRow(typing.NamedTuple):
    """One row of the attention-new tables (`table`, a key of
    ATTENTION_NEW_TABLES): the problem and the pass timed. seq: each
    sequence's length, the longest for a packed batch, whose lengths are
    `lengths`."""
    table: str
    batch: int
    heads: int
    kv_heads: int
    seq: int
    head_dim: int
    causal: bool
    backward: bool = False
    lengths: tuple = ()


def varlen_lengths(tokens=16384, shortest=100, longest=4000, seed=2026):
    """A packed batch's sequence lengths, drawn uniformly (the same every
    run) until they hold `tokens`, the last one cut to fit: lengths that
    need not be multiples of a block or of 8, as a training batch's."""
    rng, lengths = random.Random(seed), []
    while sum(lengths) < tokens:
        lengths.append(min(rng.randint(shortest, longest), tokens - sum(lengths)))
    return tuple(lengths)


# The new attention tables, each with its shapes: (batch, heads, kv_heads,
# seq, head_dim, why). head_dim 128, bf16 (but the FP8 table), both masks.
ATTENTION_BACKWARD_SHAPES = [
    (16, 16, 16, 1024, 128, "8 key tiles per block of queries"),
    (4, 16, 16, 4096, 128, "32 key tiles"),
    (1, 16, 16, 16384, 128, "128 key tiles: the main loop is nearly all of the time"),
]
GQA_SHAPES = [
    (4, 32, 8, 4096, 128, "grouped-query: Llama-3-8B's 32 query heads on 8 key/value heads"),
    (4, 32, 1, 4096, 128, "multi-query: one key/value head for 32 query heads"),
]
VARLEN_LENGTHS = varlen_lengths()
FP8_ATTENTION_SHAPES = [
    (4, 16, 16, 4096, 128, "32 key tiles per block of queries"),
    (1, 16, 16, 16384, 128, "128 key tiles"),
]
ATTENTION_NEW_TABLES = ("backward", "gqa", "varlen", "fp8")


def attention_new_rows():
    """The rows of the attention-new tables, in order: the backward table
    (backward pass), the grouped-query table (forward, then backward), the
    packed-batch table (forward, then backward) and the FP8 table
    (forward); each shape without, then with the causal mask."""
    rows = []
    for batch, heads, kv_heads, seq, d, _ in ATTENTION_BACKWARD_SHAPES:
        rows += [AttentionRow("backward", batch, heads, kv_heads, seq, d, causal, True)
                 for causal in (False, True)]
    for batch, heads, kv_heads, seq, d, _ in GQA_SHAPES:
        rows += [AttentionRow("gqa", batch, heads, kv_heads, seq, d, causal, backward)
                 for backward in (False, True) for causal in (False, True)]
    lengths = VARLEN_LENGTHS
    rows += [AttentionRow("varlen", len(lengths), 16, 16, max(lengths), 128, causal, backward,
                          lengths) for backward in (False, True) for causal in (False, True)]
    for batch, heads, kv_heads, seq, d, _ in FP8_ATTENTION_SHAPES:
        rows += [AttentionRow("fp8", batch, heads, kv_heads, seq, d, causal)
                 for causal in (False, True)]
    return rows


def attention_row_lengths(row):
    return row.lengths or (row.seq,) * row.batch


def attention_row_flops(row):
    """4 H D sum(L^2) forward (Q K^T and P V), half with the causal mask;
    the backward 2.5 times that (five products of that size: S and dP
    again, dV, dQ and dK), as the FlashAttention papers count."""
    flops = 4 * row.heads * row.head_dim * sum(n * n for n in attention_row_lengths(row))
    flops = flops // 2 if row.causal else flops
    return flops * 5 // 2 if row.backward else flops


def attention_row_label(row):
    heads = f"{row.heads}/{row.kv_heads}" if row.kv_heads != row.heads else f"{row.heads}"
    if row.lengths:
        label = (f"{len(row.lengths)} seqs, {sum(row.lengths)} tokens (longest {row.seq}) x "
                 f"{heads} x {row.head_dim}")
    else:
        label = f"{row.batch}x{heads}x{row.seq}x{row.head_dim}"
    label += ", causal" if row.causal else ""
    if row.table in ("gqa", "varlen"):
        label += ", backward" if row.backward else ", forward"
    return label


def attention_kernel_name(row):
    """Our kernel for a row, as compile-kernels.sh names it, or None where
    mosaic-run cannot run ours (a packed batch: it draws every i32 input
    uniformly in [-64, 64], not offsets)."""
    if row.lengths:
        return None
    direction = "bwd" if row.backward else "fwd"
    dtype = "fp8" if row.table == "fp8" else "bf16"
    dims = shape_label((row.batch, row.heads, row.kv_heads, row.seq, row.head_dim))
    return f"attn_{direction}_{dtype}_{dims}_{'causal' if row.causal else 'full'}"


# The generator of our attention kernels (from the repository's root), and
# the module of mosaic_gpu.attention that builds each kind.
ATTENTION_GENERATOR = "bench/gpu/attention_kernels.py"
ATTENTION_MODULES = {"fwd": "forward", "bwd": "backward", "fp8": "forward_fp8"}
ATTENTION_PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "python/mosaic_gpu/attention"


def attention_kernels(package=ATTENTION_PACKAGE):
    """(name, generator, arguments) of each of our kernels of the
    attention-new tables, once each, but for those whose module is not in
    `package` (this tree's mosaic_gpu.attention): the tables say they were
    not compiled."""
    kernels = {}
    for row in attention_new_rows():
        name = attention_kernel_name(row)
        kind = "bwd" if row.backward else "fp8" if row.table == "fp8" else "fwd"
        if name is None or name in kernels or \
                not (package / f"{ATTENTION_MODULES[kind]}.py").exists():
            continue
        kernels[name] = (name, ATTENTION_GENERATOR, [
            "--kernel", kind, "--batch", row.batch, "--heads", row.heads,
            "--kv-heads", row.kv_heads, "--seq", row.seq, "--head-dim", row.head_dim]
            + (["--causal"] if row.causal else []))
    return list(kernels.values())


def generated_kernels():
    """(name, generator script, its arguments) of each kernel of the split-K
    columns, the fused-epilogue table, the FP8 table and the attention-new
    tables, for compile-kernels.sh (bench.py --list-generated). The script
    is in python/examples, or where its name has a slash, that path from
    the repository's root."""
    kernels = []
    for s in GEMM_SHAPES:
        for splits in s.splits:
            kernels.append((split_k_name((s.m, s.n, s.k), splits), "gemm_ws.py",
                            ["--m", s.m, "--n", s.n, "--k", s.k, "--split-k", splits]))
    for case in EPILOGUE_CASES:
        kernels.append((epilogue_name(case), "gemm_ws.py",
                        ["--m", case.m, "--n", case.n, "--k", case.k,
                         "--epilogue", case.epilogue]))
    for case in FP8_CASES:
        kernels.append((fp8_name(case), "gemm_fp8.py",
                        ["--m", case.m, "--n", case.n, "--k", case.k,
                         "--scaling", case.scaling]))
    kernels += attention_kernels()
    return [(name, script, [str(arg) for arg in args]) for name, script, args in kernels]


class NewKernel(typing.NamedTuple):
    """A kernel that mosaic-run has no reference for, by its file stem:
    kind "split" (gemm_ws_split_k), "fixup" (its fix-up), "epilogue", "fp8"
    or "attention"; param: the splits, the epilogue, the scaling, or an
    AttentionKernel."""
    kind: str
    dims: tuple
    param: object


_DIMS = r"(\d+)x(\d+)x(\d+)"
NEW_KERNEL_PATTERNS = [
    ("split", re.compile(rf"gemm_bf16_ws_splitk(\d+)_{_DIMS}")),
    ("fixup", re.compile(rf"gemm_bf16_ws_splitk(\d+)_{_DIMS}\.fixup")),
    ("epilogue", re.compile(rf"gemm_bf16_ws_({'|'.join(EPILOGUES)})_{_DIMS}")),
    ("fp8", re.compile(rf"gemm_fp8_({'|'.join(FP8_SCALINGS)})_{_DIMS}")),
]


class AttentionKernel(typing.NamedTuple):
    """What an attention kernel's name says besides its dims (batch, heads,
    kv_heads, seq, head_dim): "fwd" or "bwd", "bf16" or "fp8", the mask,
    and which of the backward's kernels: "preprocess", "main" or
    "postprocess" (the forward's is "main")."""
    direction: str
    dtype: str
    causal: bool
    part: str = "main"


# The backward's kernels in launch order, by their names' suffixes.
ATTENTION_BACKWARD_PARTS = {"preprocess": ".preprocess", "main": "",
                            "postprocess": ".postprocess"}
ATTENTION_KERNEL_PATTERN = re.compile(
    r"attn_(fwd|bwd)_(bf16|fp8)_(\d+)x(\d+)x(\d+)x(\d+)x(\d+)_(causal|full)"
    r"(\.preprocess|\.postprocess)?")
# The outputs of each of our attention kernels, as positions among its
# buffers from the end: O and the LSE; D; dK and dV, but not the f32 dQ
# workspace after them, which the kernel adds into (mosaic-run would
# poison it: it is an input, drawn at random); dQ.
ATTENTION_OUTPUTS = {("fwd", "main"): (-2, -1), ("bwd", "preprocess"): (-1,),
                     ("bwd", "main"): (-3, -2), ("bwd", "postprocess"): (-1,)}


def parse_new_kernel(stem):
    """The NewKernel a file stem names, or None."""
    match = ATTENTION_KERNEL_PATTERN.fullmatch(stem)
    if match:
        direction, dtype, *dims, mask, suffix = match.groups()
        if suffix and direction != "bwd":
            return None
        return NewKernel("attention", tuple(int(d) for d in dims),
                         AttentionKernel(direction, dtype, mask == "causal",
                                         suffix[1:] if suffix else "main"))
    for kind, pattern in NEW_KERNEL_PATTERNS:
        match = pattern.fullmatch(stem)
        if match:
            param, *dims = match.groups()
            return NewKernel(kind, tuple(int(d) for d in dims),
                             int(param) if kind in ("split", "fixup") else param)
    return None


# Our GEMM kernels, by family (the manifest's file name less a trailing
# _MxNxK): always columns of the GEMM table, with where their kernels come
# from for the note when none was compiled.
OUR_GEMMS = {
    "gemm_bf16_ws": "examples/gemm_bf16_ws.mlir, and python/examples/gemm_ws.py "
                    "per shape",
    "gemm_bf16": "examples/gemm_bf16.mlir",
}


class AttentionShape(typing.NamedTuple):
    batch: int
    heads: int
    seq: int
    head_dim: int
    why: str


# The attention table's shapes, each timed with and without the causal
# mask. As in the FlashAttention-2 and -3 papers' forward benchmarks, the
# sequence length sweeps 512 to 16k with batch * seq fixed at 16k tokens and
# 16 heads of 128 (a 2048-wide model): every shape has the same work per
# token row, the same bytes of Q, K, V and O (64 MiB each) and the same grid
# of 2048 blocks of 128 queries (15.5 waves of 132 SMs), and only the key
# loop's length (seq / 128 tiles) changes, so the sweep shows what a block's
# fixed costs and its main loop each weigh. The causal rows have half the
# flops, and their blocks' work ranges from 1 to seq / 128 key tiles.
ATTENTION_SHAPES = [
    AttentionShape(32, 16, 512, 128,
                   "short sequences: 4 key tiles per block, so loading Q, filling the "
                   "K/V ring and the epilogue weigh as much as the main loop"),
    AttentionShape(16, 16, 1024, 128, "8 key tiles per block"),
    AttentionShape(8, 16, 2048, 128, "16 key tiles per block"),
    AttentionShape(4, 16, 4096, 128,
                   "examples/attention_fwd.mlir's shape: 32 key tiles per block"),
    AttentionShape(2, 16, 8192, 128, "64 key tiles per block"),
    AttentionShape(1, 16, 16384, 128,
                   "the longest: 128 key tiles per block, the main loop is nearly all "
                   "of the time"),
]


class AttentionCase(typing.NamedTuple):
    """One row of the attention table."""
    batch: int
    heads: int
    seq: int
    head_dim: int
    causal: bool


# mosaic-run's attention references, by mask: they check our
# attention_fwd and attention_causal_fwd (python/examples/attention.py).
ATTENTION_REFERENCES = {False: "attention", True: "attention_causal"}

# The peers' check: O (and LSE) at a few sampled rows of a few heads, in
# float64; the first and last query row of each are always among them (in
# the causal case, the row that sees one key and the row that sees all).
ATTENTION_CHECKED_HEADS = 4
ATTENTION_CHECKED_ROWS = 256

CUBLAS = "cuBLAS (torch.matmul)"
TRITON_TMA = "Triton persistent TMA"
TRITON_BLOCKED = "Triton blocked"
SDPA_FLASH = "torch SDPA (flash)"
SDPA_CUDNN = "torch SDPA (cuDNN)"
OURS_ATTENTION = "ours"
TRITON_ATTENTION = "Triton fused attention"
ATTENTION_COLUMNS = [SDPA_FLASH, SDPA_CUDNN, OURS_ATTENTION, TRITON_ATTENTION]
# SDPA's columns: the backend each forces with torch.nn.attention.sdpa_kernel.
SDPA_BACKENDS = {SDPA_FLASH: "FLASH_ATTENTION", SDPA_CUDNN: "CUDNN_ATTENTION"}
SCALED_MM = "cuBLAS (torch._scaled_mm)"
OURS_FP8 = "ours (gemm_fp8)"
TRITON_FP8 = "Triton FP8"
FP8_COLUMNS = [SCALED_MM, OURS_FP8, TRITON_FP8]
TORCH_EAGER = "torch eager (unfused)"
CUBLAS_FUSED = "cuBLAS epilogue"
TORCH_COMPILE = "torch.compile"
OURS_FUSED = "ours (fused)"
EPILOGUE_COLUMNS = [TORCH_EAGER, CUBLAS_FUSED, TORCH_COMPILE, OURS_FUSED]
TORCH_VARLEN_FLASH = "torch varlen_attn (flash)"
TORCH_VARLEN_CUDNN = "torch varlen_attn (cuDNN)"
FLASH_ATTN_VARLEN = "flash-attn varlen"
SDPA_FP8 = "torch FP8 SDPA (FA3)"
TRITON_FP8_ATTENTION = "Triton FP8 attention"
OURS_FP8_ATTENTION = "ours (forward_fp8)"
# Each attention-new table's columns; the first is the one each time is
# compared with (the FP8 table's: SDPA's flash backend on bf16 inputs).
ATTENTION_NEW_COLUMNS = {
    "backward": [SDPA_FLASH, SDPA_CUDNN, OURS_ATTENTION],
    "gqa": [SDPA_FLASH, SDPA_CUDNN, OURS_ATTENTION],
    "varlen": [TORCH_VARLEN_FLASH, TORCH_VARLEN_CUDNN, FLASH_ATTN_VARLEN, OURS_ATTENTION],
    "fp8": [SDPA_FLASH, SDPA_FP8, TRITON_FP8_ATTENTION, OURS_FP8_ATTENTION],
}
# The FP8 peers' relative error against float64 on the dequantized inputs:
# P rounded to e4m3 (3 mantissa bits) for P V puts O's near 4e-2 on
# standard normal inputs (Triton's interpreter: 5e-2 to 7e-2, its
# conversion truncating); a missing mask or a wrong scale is off by O(1).
FP8_ATTENTION_TOLERANCE = 0.1
# What --tables names: "gemm-new" is the bf16 GEMM table's new rows alone
# (new_gemm_shapes), for a short run; "attention-new" the backward,
# grouped-query, packed-batch and FP8 attention tables. The default
# measures every table.
TABLES = ("gemm", "gemm-new", "attention", "attention-new", "other", "fp8", "epilogue")
DEFAULT_TABLES = ("gemm", "attention", "attention-new", "other", "fp8", "epilogue")
FAILED = "FAILED"
UNAVAILABLE = "unavailable"


# ---------------------------------------------------------------------------
# Pure helpers (tested by test_bench.py without a GPU).


def is_collective(manifest):
    """Whether the kernel spans devices (a collective-table parameter): those
    run on D devices, in bench/gpu/collective.py, not here."""
    return any(p.get("kind") == "collective" for p in manifest.get("parameters", []))


def find_manifests(folder):
    """The single-device kernel manifests in `folder`: JSON files naming an
    entry and a CUBIN, but for the collective kernels."""
    manifests = []
    for path in sorted(pathlib.Path(folder).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "entry" in data and "cubin" in data \
                and not is_collective(data):
            manifests.append((path, data))
    return manifests


def buffers(manifest):
    """(element type, shape) of each buffer parameter, in order."""
    return [(p["element_type"], tuple(p["shape"]))
            for p in manifest["parameters"] if p["kind"] == "buffer"]


def gemm_dims(manifest):
    """(M, N, K) of a GEMM manifest: A [M, K], B [K, N], C [M, N]."""
    (_, a), (_, b), _ = buffers(manifest)
    return a[0], b[1], a[1]


def shape_label(dims):
    return "x".join(str(d) for d in dims)


def describe_shape(manifest):
    """The shape column of a kernel other than a GEMM: its first buffer's."""
    return shape_label(buffers(manifest)[0][1])


def reference_kind(entry):
    """The mosaic-run reference that checks a kernel with this entry name,
    or None: as mosaic-run picks it."""
    if entry in REFERENCES:
        return entry
    prefixes = [name for name in REFERENCES if entry.startswith(name + "_")]
    return max(prefixes, key=len, default=None)


def kernel_family(stem):
    """gemm_bf16_ws_4096x4096x512 -> gemm_bf16_ws,
    attention_fwd_4x16x4096x128 -> attention_fwd; other names unchanged."""
    return re.sub(r"_\d+x\d+x\d+(x\d+)?$", "", stem)


def group_kernels(kernels):
    """kernels: (file stem, family, dims) of each kernel. Returns
    ({(family, dims): stem}, notes): one kernel per family and shape, the
    example's (stem == family) where a generated one has the same shape."""
    chosen, notes = {}, []
    for stem, family, dims in sorted(kernels, key=lambda kernel: kernel[1] != kernel[0]):
        key = (family, dims)
        if key in chosen:
            notes.append(f"{stem} not run: {chosen[key]} has the same shape "
                         f"({shape_label(dims)}).")
        else:
            chosen[key] = stem
    return chosen, notes


def gemm_table_shapes(our_dims):
    """GEMM_SHAPES in order, then the other shapes our kernels have."""
    shapes = [(s.m, s.n, s.k) for s in GEMM_SHAPES]
    return shapes + sorted(set(our_dims) - set(shapes))


def gemm_columns(families, splits=()):
    """cuBLAS, our GEMM families (OUR_GEMMS first), our split-K GEMMs by
    their splits, then the Triton peers."""
    ours = list(OUR_GEMMS) + sorted(set(families) - set(OUR_GEMMS))
    return ([CUBLAS] + ours + [split_k_column(s) for s in sorted(set(splits))]
            + [TRITON_TMA, TRITON_BLOCKED])


def select_gemm_shapes(shapes, tables):
    """The bf16 GEMM table's rows to measure: all of `shapes` with "gemm"
    in `tables`, the new ones alone with only "gemm-new", none otherwise."""
    if "gemm" in tables:
        return list(shapes)
    if "gemm-new" in tables:
        return [dims for dims in shapes if dims in new_gemm_shapes()]
    return []


def pair_split_kernels(kernels):
    """kernels: {stem: NewKernel} of the split and fixup kinds. Returns
    ({(dims, splits): (split stem, fix-up stem)}, notes on a kernel without
    its other half)."""
    pairs, notes = {}, []
    for stem, kernel in sorted(kernels.items()):
        if kernel.kind != "split":
            continue
        fixup = stem + ".fixup"
        if fixup in kernels:
            pairs[(kernel.dims, kernel.param)] = (stem, fixup)
        else:
            notes.append(f"{stem} not run: its fix-up kernel {fixup} was not compiled.")
    for stem, kernel in sorted(kernels.items()):
        if kernel.kind == "fixup" and stem[:-len(".fixup")] not in kernels:
            notes.append(f"{stem} not run: its split-K GEMM was not compiled.")
    return pairs, notes


def gemm_flops(dims):
    m, n, k = dims
    return 2 * m * n * k


def format_time(ms):
    if ms is None:
        return "-"
    return f"{ms * 1e3:.1f} us" if ms < 1 else f"{ms:.3f} ms"


def format_rate(ms, flops, bytes_moved):
    """TFLOP/s when the work is arithmetic, GB/s otherwise."""
    if ms is None or ms <= 0:
        return ""
    seconds = ms * 1e-3
    if flops:
        return f"{flops / seconds / 1e12:.0f} TFLOP/s"
    return f"{bytes_moved / seconds / 1e9:.0f} GB/s"


def format_cell(ms, flops, bytes_moved, failed=False):
    if failed:
        return FAILED
    if ms is None:
        return "-"
    return f"{format_time(ms)} ({format_rate(ms, flops, bytes_moved)})"


def format_ratio(ours_ms, peer_ms):
    """Peer time over our time: above 1, ours is faster."""
    if not ours_ms or not peer_ms:
        return "-"
    return f"{peer_ms / ours_ms:.2f}x"


def format_compared_cell(value, flops, baseline_ms):
    """A cell of a table that compares implementations: a time in ms as
    'time, TFLOP/s, baseline time / time'; FAILED or unavailable as they
    are; None (not run) as '-'."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    cell = f"{format_time(value)}, {format_rate(value, flops, 0)}"
    ratio = format_ratio(value, baseline_ms)
    return cell if ratio == "-" else f"{cell}, {ratio}"


def comparison_markdown(first_header, columns, baseline, rows):
    """rows: (label, flops, {column: ms, FAILED, UNAVAILABLE or None}); each
    time is compared with the `baseline` column's."""
    lines = [f"| {first_header} | " + " | ".join(columns) + " |",
             "|---|" + "---:|" * len(columns)]
    for label, flops, cells in rows:
        baseline_ms = cells.get(baseline)
        baseline_ms = baseline_ms if isinstance(baseline_ms, float) else None
        formatted = [format_compared_cell(cells.get(column), flops, baseline_ms)
                     for column in columns]
        lines.append(f"| {label} | " + " | ".join(formatted) + " |")
    return "\n".join(lines)


def gemm_markdown(columns, rows):
    """rows: ((M, N, K), {column: ms, FAILED, UNAVAILABLE or None})."""
    return comparison_markdown("M x N x K", columns, CUBLAS,
                               [(shape_label(dims), gemm_flops(dims), cells)
                                for dims, cells in rows])


def fp8_label(case):
    return f"{shape_label(case[:3])}, {case.scaling}"


def fp8_markdown(rows):
    """rows: (Fp8Case, {column: ms, FAILED, UNAVAILABLE or None})."""
    return comparison_markdown("M x N x K, scaling", FP8_COLUMNS, SCALED_MM,
                               [(fp8_label(case), gemm_flops(case[:3]), cells)
                                for case, cells in rows])


def epilogue_label(case):
    return f"{shape_label(case[:3])}, {case.epilogue}"


def epilogue_markdown(rows):
    """rows: (EpilogueCase, {column: ms, FAILED, UNAVAILABLE or None})."""
    return comparison_markdown("M x N x K, epilogue", EPILOGUE_COLUMNS, TORCH_EAGER,
                               [(epilogue_label(case), gemm_flops(case[:3]), cells)
                                for case, cells in rows])


def attention_dims(manifest):
    """(heads, seq, head_dim) of an attention manifest, heads counting batch
    too, in either of mosaic-run's layouts: head-major, Q [heads, seq, d]
    (examples/attention_fwd.mlir), or token-major, Q [batch * seq, heads *
    d] and the LSE [batch, heads, seq] (python/examples/attention.py)."""
    (_, q), *_, (_, lse) = buffers(manifest)
    if len(q) == 3:
        return tuple(q)
    batch, heads, seq = lse
    return (batch * heads, seq, q[1] // heads)


def case_dims(case):
    """The (heads, seq, head_dim) that our kernel for `case` is compiled for."""
    return (case.batch * case.heads, case.seq, case.head_dim)


def attention_kernels_by_case(kernels):
    """kernels: (file stem, entry, (heads, seq, head_dim)) of each kernel
    that an attention reference checks. Returns ({(causal, dims): stem},
    notes): one kernel per mask and shape, the example's where a generated
    one has the same shape."""
    chosen, notes = group_kernels(kernels)
    by_case = {}
    for (entry, dims), stem in sorted(chosen.items()):
        key = (reference_kind(entry) == ATTENTION_REFERENCES[True], dims)
        if key in by_case:
            notes.append(f"{stem} not run: {by_case[key]} has the same shape "
                         f"({shape_label(dims)}) and mask.")
        else:
            by_case[key] = stem
    return by_case, notes


def attention_table_cases(our_kernels):
    """ATTENTION_SHAPES in order, each without then with the causal mask,
    then the other (causal, (heads, seq, head_dim)) our kernels have, as
    batch 1."""
    cases = [AttentionCase(s.batch, s.heads, s.seq, s.head_dim, causal)
             for s in ATTENTION_SHAPES for causal in (False, True)]
    covered = {(case.causal, case_dims(case)) for case in cases}
    others = sorted(set(our_kernels) - covered, key=lambda kernel: (kernel[1], kernel[0]))
    return cases + [AttentionCase(1, *dims, causal) for causal, dims in others]


def attention_flops(case):
    """4 B H S^2 D: Q K^T and P V; half of it under the causal mask."""
    flops = 4 * case.batch * case.heads * case.seq ** 2 * case.head_dim
    return flops // 2 if case.causal else flops


def attention_label(case):
    label = shape_label((case.batch, case.heads, case.seq, case.head_dim))
    return f"{label}, causal" if case.causal else label


def attention_markdown(rows):
    """rows: (AttentionCase, {column: ms, FAILED, UNAVAILABLE or None})."""
    return comparison_markdown("batch x heads x seq x head_dim", ATTENTION_COLUMNS,
                               SDPA_FLASH, [(attention_label(case), attention_flops(case), cells)
                                            for case, cells in rows])


def sample_attention_rows(rng, heads, seq):
    """[(head, sorted query rows)] that the peers' check compares: up to
    ATTENTION_CHECKED_HEADS heads and ATTENTION_CHECKED_ROWS rows in each,
    drawn with `rng` (a random.Random), the first and the last row always."""
    chosen_heads = sorted(rng.sample(range(heads), min(heads, ATTENTION_CHECKED_HEADS)))
    drawn = min(seq, ATTENTION_CHECKED_ROWS) - 2
    samples = []
    for head in chosen_heads:
        rows = {0, seq - 1} | set(rng.sample(range(1, seq - 1), max(drawn, 0)))
        samples.append((head, sorted(rows)))
    return samples


def markdown_table(rows):
    """rows: dicts with kernel, shape, ours, peer, peer_time, ratio (strings)."""
    lines = ["| kernel | shape | ours | peer | peer time | ratio (peer / ours) |",
             "|---|---|---:|---|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['kernel']} | {row['shape']} | {row['ours']} | "
                     f"{row['peer']} | {row['peer_time']} | {row['ratio']} |")
    return "\n".join(lines)


def unavailable_notes(entries):
    """entries: (why a peer could not run, shape label). One note per
    reason, naming its shapes in order."""
    shapes = {}
    for why, label in entries:
        shapes.setdefault(why, []).append(label)
    return [f"Unavailable at {', '.join(labels)}: {why}" for why, labels in shapes.items()]


def gemm_shape_notes():
    return [f"{shape_label((s.m, s.n, s.k))}: {s.why}." for s in GEMM_SHAPES]


def attention_shape_notes():
    return [f"{shape_label((s.batch, s.heads, s.seq, s.head_dim))}: {s.why}."
            for s in ATTENTION_SHAPES]


class TableSection(typing.NamedTuple):
    """A table of the docs section: its heading, a line on how to read it,
    the Markdown table and the notes under it."""
    heading: str
    legend: str
    table: str
    notes: list


def gemm_section(table, notes):
    return TableSection(
        "GEMM (bf16 in, f32 accumulation, bf16 out)",
        "Each cell: the time, TFLOP/s, and cuBLAS's time over this time (above 1, "
        "faster than cuBLAS); `-`: no kernel of that column for the shape. "
        f"`{split_k_column('S')}`: python/examples/gemm_ws.py --split-k S (deterministic "
        "reduction), two kernels, each timed alone by mosaic-run (median, the L2 "
        "flushed before each run): the GEMM writing S f32 partial tiles, then the "
        "fix-up summing them into bf16 C; the cell is the sum of the two medians (the "
        "fix-up reads the partials from DRAM, where run back to back it could find "
        "some in L2), checked from mosaic-run's dumped inputs and outputs in float64.",
        table, notes)


def attention_section(table, notes):
    return TableSection(
        "Attention forward (bf16 Q, K, V and O, f32 LSE)",
        "Each cell: the time, TFLOP/s (4 B H S^2 D flops, half with the causal mask) "
        "and torch SDPA's time over this time (above 1, faster than SDPA's flash "
        f"backend); `-`: not run. {OURS_ATTENTION}: attention_fwd, or "
        "attention_causal_fwd in the causal rows, compiled for the row's shape.",
        table, notes)


ATTENTION_NEW_SECTIONS = {
    "backward": (
        "Attention backward (bf16 Q, K, V, O and dO, f32 LSE, bf16 dQ, dK and dV)",
        "Each cell: the time of the backward pass alone, TFLOP/s (10 B H S^2 D flops, 2.5 "
        "times the forward's, half with the causal mask) and torch SDPA flash's backward "
        "time over this time (above 1, faster). SDPA: torch.autograd.grad of an output "
        "made under that backend's sdpa_kernel, the graph kept, so that each timed run is "
        "the backward's kernels alone. ours: backward.py's kernel (attn_bwd_bf16_...), run "
        "by mosaic-run --check=none on its random inputs, O and the LSE included, and "
        "checked from its dumps against float64 of what it computes from them "
        "(checks.check_attention_backward)."),
    "gqa": (
        "Attention with grouped-query and multi-query heads (bf16)",
        "Heads as query/key-value heads. Each cell: the time, TFLOP/s (counted on the "
        "query heads) and torch SDPA flash's time over this time; forward rows time the "
        "forward, backward rows the backward alone. SDPA: enable_gqa=True under each "
        "backend's sdpa_kernel. ours: forward.py's or backward.py's kernel built for the "
        "row's heads (attn_fwd_bf16_... or attn_bwd_bf16_...)."),
    "varlen": (
        "Attention on a packed batch of variable lengths (bf16)",
        "One packed batch (bench.py's VARLEN_LENGTHS: lengths drawn uniformly in 100 to "
        "4000, 16384 tokens), 16 heads of 128, as FlashAttention's varlen API takes it. "
        "Each cell: the time, TFLOP/s (4 H D sum(L^2), half causal, 2.5 times backward) "
        f"and {TORCH_VARLEN_FLASH}'s time over this time. torch varlen_attn: "
        "torch.nn.attention.varlen.varlen_attn(q, k, v, cu_seqlens, cu_seqlens, max, max) "
        "under each backend's sdpa_kernel (causal: window_size (-1, 0)); flash-attn "
        "varlen: flash_attn_varlen_func where the flash-attn package is installed."),
    "fp8": (
        "FP8 attention forward (e4m3 Q, K and V, per-tensor descales, bf16 O)",
        "Each cell: the time, TFLOP/s (4 B H S^2 D flops, half with the causal mask) and "
        f"the time of {SDPA_FLASH} on bf16 inputs (the same values) over this time: above "
        "1, faster than bf16 flash attention. Inputs: standard normal, quantized per "
        "tensor (scale = amax / 448). torch FP8 SDPA: "
        "torch.nn.attention.experimental._scaled_dot_product_attention_quantized, which "
        "runs FlashAttention-3 (flash_attn_interface) once activated; torch exposes no "
        "cuDNN FP8 attention. Triton FP8 attention: attention_fp8_fwd in "
        "bench/gpu/triton_peers.py (V transposed, P in e4m3). ours: forward_fp8.py's "
        "kernel (attn_fwd_fp8_...), checked from its dumps "
        "(checks.check_attention_forward_fp8)."),
}


def attention_new_markdown(table, rows):
    """rows: (AttentionRow, {column: ms, FAILED, UNAVAILABLE or None}) of
    one attention-new table."""
    columns = ATTENTION_NEW_COLUMNS[table]
    header = ("sequences x heads x head_dim" if table == "varlen"
              else "batch x heads x seq x head_dim")
    return comparison_markdown(header, columns, columns[0],
                               [(attention_row_label(row), attention_row_flops(row), cells)
                                for row, cells in rows])


def attention_new_section(table, markdown, notes):
    heading, legend = ATTENTION_NEW_SECTIONS[table]
    return TableSection(heading, legend, markdown, notes)


def attention_new_shape_notes(table):
    shapes = {"backward": ATTENTION_BACKWARD_SHAPES, "gqa": GQA_SHAPES,
              "fp8": FP8_ATTENTION_SHAPES}.get(table, [])
    notes = [f"{shape_label((b, h if k == h else f'{h}/{k}', s, d))}: {why}."
             for b, h, k, s, d, why in shapes]
    if table == "varlen":
        notes.append(f"Lengths: {', '.join(map(str, VARLEN_LENGTHS))}.")
    return notes


def fp8_section(table, notes):
    return TableSection(
        "FP8 GEMM (e4m3 A and Bt, f32 scales, f32 accumulation, bf16 C)",
        "Each cell: the time, TFLOP/s (2 M N K flops) and torch._scaled_mm's time over "
        "this time (above 1, faster than cuBLAS's FP8 GEMM); `-`: not run. Scalings: "
        "tensor (one scale for A, one for Bt), row (a scale per row of A and per row of "
        "Bt), block (DeepSeek-V3: per 1 x 128 block of A, per 128 x 128 block of Bt). "
        f"{OURS_FP8}: python/examples/gemm_fp8.py --scaling S, compiled for the row's "
        "shape; it, cuBLAS (use_fast_accum=False) and the Triton peer all promote the "
        "tensor core's FP8 sums into f32 every 128 of K.",
        table, notes)


def epilogue_section(table, notes):
    return TableSection(
        "Fused epilogues (bf16 GEMM, f32 accumulation, then the epilogue, bf16 C)",
        "Each cell: the time, TFLOP/s (2 M N K flops, the epilogue not counted) and "
        f"the {TORCH_EAGER} sequence's time over this time (above 1, faster); `-`: not "
        f"run. bias_gelu_tanh: gelu(A B + bias, approximate='tanh'), a bias per column; "
        f"{TORCH_EAGER}: torch.matmul, + bias, gelu (three kernels); {CUBLAS_FUSED}: "
        "torch._addmm_activation(bias, A, B, use_gelu=True) (cuBLASLt's GELU_BIAS "
        "epilogue). residual: A B + skip, skip (M, N); eager: torch.matmul, + skip; "
        f"{CUBLAS_FUSED}: torch.addmm(skip, A, B) (C = skip, beta = 1). "
        f"{TORCH_COMPILE}: torch.compile of the eager function, default mode. "
        f"{OURS_FUSED}: python/examples/gemm_ws.py --epilogue NAME, the epilogue applied "
        "to the f32 accumulator in registers before the bf16 store.",
        table, notes)


def other_examples_section(table, notes):
    return TableSection("The other examples",
                        "The ratio is the peer's time over ours: above 1, ours is faster.",
                        table, notes)


def docs_section(date, gpu, command, warmup, reps, sections):
    """The dated section for docs/BENCHMARKS.md; `sections`: TableSections,
    those with neither a table nor notes left out."""
    lines = [
        f"## Kernel time on {gpu} ({date})",
        "",
        f"Measured {date} on {gpu} with:",
        "",
        "```sh",
        command,
        "```",
        "",
        f"Each time is the median of {reps} runs after {warmup} warm-up runs, "
        "each run timed with CUDA events after 256 MiB were written to flush "
        "the L2 cache, on fresh random inputs (standard normal); every kernel "
        "and peer was first checked against a float64 reference, its output "
        "poisoned with NaN before the checked run.",
        "",
    ]
    for section in sections:
        if not section.table and not section.notes:
            continue
        lines += [f"### {section.heading}", ""]
        if section.table:
            lines += [section.legend, "", section.table, ""]
        lines += [f"- {note}" for note in section.notes] + ([""] if section.notes else [])
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# GPU side.


@dataclasses.dataclass
class Peer:
    """A peer implementation: `run()` computes into `output`, which is
    poisoned before the checked run unless None (a peer that allocates its
    output); `poison()`, where given, poisons instead; `check()` returns the
    relative error of the last run's output."""
    name: str
    run: typing.Callable[[], object]
    check: typing.Callable[[], float]
    tolerance: float
    flops: float
    moved: int
    output: object = None
    poison: typing.Optional[typing.Callable[[], None]] = None
    # A context every run is made in (SDPA's backend), entered once around
    # the checked run and once around the timed ones.
    context: typing.Optional[typing.Callable[[], typing.ContextManager]] = None


def gpu_model():
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            check=True, capture_output=True, text=True).stdout.strip().splitlines()[0]
        name, driver = [part.strip() for part in out.split(",")]
        return f"{name} (driver {driver})"
    except (OSError, subprocess.CalledProcessError, IndexError, ValueError):
        import torch
        return torch.cuda.get_device_name()


def time_ms(torch, fn, warmup, reps):
    """Median time of `fn` in ms, timed as mosaic-run times our kernels."""
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        flush.fill_(i & 0xFF)
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def relative_error(torch, out, ref):
    out = out.double()
    if not torch.isfinite(out).all():
        return float("inf")
    return (torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref)).item()


def load_triton(torch):
    """(Triton launchers by name, or None; notes on what is missing)."""
    try:
        import triton_peers
    except Exception as error:  # noqa: BLE001: Triton missing, or an API it lacks
        return None, [f"Triton peers not loaded ({type(error).__name__}: {error}); "
                      "their columns are empty."]
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    return triton_peers.load(num_sms)


def peers(torch, triton, kind, shapes, generator):
    """The peers of a kernel of `kind` (not a GEMM: gemm_peers) on `shapes`,
    the buffers' shapes."""
    def randn(shape, dtype):
        return torch.randn(shape, generator=generator, device="cuda").to(dtype)

    result = []
    if kind == "elementwise":
        (shape, *_) = shapes
        x, y = randn(shape, torch.float32), randn(shape, torch.float32)
        out = torch.empty_like(x)
        check = lambda: relative_error(torch, out, x.double() * y.double() + x.double())
        moved = 3 * x.numel() * 4
        flops = 2 * x.numel()
        result.append(Peer("torch.addcmul", lambda: torch.addcmul(x, x, y, out=out), check,
                           F32_TOLERANCE, flops, moved, out))
        if triton:
            result.append(Peer("Triton", lambda: triton["elementwise"](x, y, out), check,
                               F32_TOLERANCE, flops, moved, out))
    elif kind == "softmax":
        (shape, *_) = shapes
        x = randn(shape, torch.float32)
        out = torch.empty_like(x)
        ref = lambda: torch.softmax(x.double(), dim=-1)
        moved = 2 * x.numel() * 4
        last = {}

        def run_torch():
            last["out"] = torch.softmax(x, dim=-1)

        result.append(Peer("torch.softmax", run_torch,
                           lambda: relative_error(torch, last["out"], ref()), F32_TOLERANCE, 0,
                           moved))
        if triton:
            result.append(Peer("Triton", lambda: triton["softmax"](x, out),
                               lambda: relative_error(torch, out, ref()), F32_TOLERANCE, 0, moved,
                               out))
    elif kind == "tma_roundtrip":
        (shape, *_) = shapes
        x = randn(shape, torch.bfloat16)
        out = torch.empty_like(x)
        moved = 2 * x.numel() * 2
        result.append(Peer("torch copy_ (device to device)", lambda: out.copy_(x),
                           lambda: relative_error(torch, out, x.double()), BF16_TOLERANCE, 0,
                           moved, out))
        result.append(Peer("torch.add(x, x)", lambda: torch.add(x, x, out=out),
                           lambda: relative_error(torch, out, 2 * x.double()), BF16_TOLERANCE, 0,
                           moved, out))
    return result


def gemm_peers(torch, triton, dims, generator):
    """(column, Peer) for each GEMM peer at dims = (M, N, K): fresh random
    bf16 A [M, K] and B [K, N], one float64 reference for all of them."""
    m, n, k = dims
    a = torch.randn((m, k), generator=generator, device="cuda").to(torch.bfloat16)
    b = torch.randn((k, n), generator=generator, device="cuda").to(torch.bfloat16)
    c = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
    reference = {}

    def check():
        if "c" not in reference:
            reference["c"] = a.double() @ b.double()
        return relative_error(torch, c, reference["c"])

    flops = gemm_flops(dims)
    moved = (m * k + k * n + m * n) * 2
    result = [(CUBLAS, Peer(CUBLAS, lambda: torch.matmul(a, b, out=c), check, BF16_TOLERANCE,
                            flops, moved, c))]
    if triton and "matmul_tma_persistent" in triton:
        result.append((TRITON_TMA, Peer(TRITON_TMA,
                                        lambda: triton["matmul_tma_persistent"](a, b, c),
                                        check, BF16_TOLERANCE, flops, moved, c)))
    if triton and not (m % 128 or n % 128 or k % 64):
        result.append((TRITON_BLOCKED, Peer(TRITON_BLOCKED, lambda: triton["matmul"](a, b, c),
                                            check, BF16_TOLERANCE, flops, moved, c)))
    return result


class Sdpa(typing.NamedTuple):
    """torch's scaled_dot_product_attention and, per column of
    SDPA_BACKENDS, a function making the context that forces its backend."""
    function: typing.Callable
    backends: dict


def load_sdpa(torch):
    """(Sdpa, None), or (None, why not)."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as error:
        return None, (f"torch {torch.__version__} has no torch.nn.attention.sdpa_kernel "
                      f"({error}): the SDPA columns are empty.")
    return Sdpa(torch.nn.functional.scaled_dot_product_attention,
                {column: (lambda backend=getattr(SDPBackend, name): sdpa_kernel(backend))
                 for column, name in SDPA_BACKENDS.items()}), None


def attention_reference(torch, q, k, v, causal, samples):
    """O [rows, head_dim] and LSE [rows] in float64 at the sampled rows of
    sample_attention_rows, in its order; q, k, v: [heads, seq, head_dim]."""
    seq, head_dim = q.shape[1:]
    keys = torch.arange(seq, device=q.device)
    outputs, lses = [], []
    for head, rows in samples:
        index = torch.tensor(rows, device=q.device)
        scores = (q[head, index].double() @ k[head].double().T) / math.sqrt(head_dim)
        if causal:
            scores = scores.masked_fill(keys[None, :] > index[:, None], -math.inf)
        lse = torch.logsumexp(scores, dim=-1)
        outputs.append(torch.exp(scores - lse[:, None]) @ v[head].double())
        lses.append(lse)
    return torch.cat(outputs), torch.cat(lses)


def sampled(torch, tensor, samples):
    """The sampled rows of `tensor` [heads, seq, ...], in order."""
    return torch.cat([tensor[head, torch.tensor(rows, device=tensor.device)]
                      for head, rows in samples])


def attention_peers(torch, triton, sdpa, case, samples, generator):
    """(column, Peer) for each attention peer of `case`: fresh random bf16
    Q, K, V on the generator's device, one float64 reference at the sampled
    rows for all of them."""
    shape = case_dims(case)
    device = generator.device
    q, k, v = (torch.randn(shape, generator=generator, device=device).to(torch.bfloat16)
               for _ in range(3))
    reference = {}

    def error(o, lse=None):
        """The largest relative error of O and LSE at the sampled rows, inf
        when an element anywhere was left unwritten (NaN, as poisoned)."""
        if "o" not in reference:
            reference["o"], reference["lse"] = attention_reference(torch, q, k, v, case.causal,
                                                                   samples)
        errors = [(o, reference["o"])] + ([(lse, reference["lse"])] if lse is not None else [])
        if not all(torch.isfinite(out).all() for out, _ in errors):
            return math.inf
        return max(relative_error(torch, sampled(torch, out, samples), ref)
                   for out, ref in errors)

    flops = attention_flops(case)
    moved = 4 * q.numel() * 2 + shape[0] * shape[1] * 4
    result = []
    if sdpa:
        batched = [x.view(case.batch, case.heads, case.seq, case.head_dim) for x in (q, k, v)]
        for column, context in sdpa.backends.items():
            last = {}

            def run_sdpa(last=last):
                last["o"] = sdpa.function(*batched, is_causal=case.causal)

            def poison_sdpa(last=last):
                # SDPA allocates its output. The warm-up run's is the only
                # memory that holds these inputs' O; poisoned and freed, it
                # is also the block the caching allocator most likely hands
                # the checked run.
                last.pop("o").fill_(math.nan)

            result.append((column, Peer(column, run_sdpa,
                                        lambda last=last: error(last["o"].reshape(shape)),
                                        BF16_TOLERANCE, flops, moved, poison=poison_sdpa,
                                        context=context)))
    if triton and "attention" in triton:
        o = torch.empty_like(q)
        lse = torch.empty(shape[:2], dtype=torch.float32, device=device)

        def poison_triton():
            o.fill_(math.nan)
            lse.fill_(math.nan)

        result.append((TRITON_ATTENTION, Peer(
            TRITON_ATTENTION, lambda: triton["attention"](q, k, v, o, lse, case.causal),
            lambda: error(o, lse), BF16_TOLERANCE, flops, moved, poison=poison_triton)))
    return result


def measure_peer(torch, peer, args):
    """Checks, then times a peer: (median ms, FAILED or UNAVAILABLE;
    relative error or None; a failure or a note, or None)."""
    try:
        with peer.context() if peer.context else contextlib.nullcontext():
            return _measure_peer(torch, peer, args)
    except Exception as error:  # noqa: BLE001: a context this torch cannot enter
        first_line = (str(error).strip().splitlines() or [""])[0]
        return UNAVAILABLE, None, f"{peer.name}: {type(error).__name__}: {first_line}"


def _measure_peer(torch, peer, args):
    try:
        peer.run()  # warm-up: compilation, autotuning
        if peer.poison is not None:
            peer.poison()
        elif peer.output is not None:
            peer.output.fill_(math.nan)
        peer.run()
        torch.cuda.synchronize()
    except Exception as error:  # noqa: BLE001: a peer that cannot run here
        first_line = (str(error).strip().splitlines() or [""])[0]
        return UNAVAILABLE, None, f"{peer.name}: {type(error).__name__}: {first_line}"
    try:
        error = peer.check()
    except Exception as failure:  # noqa: BLE001: one peer's check must not end the run
        first_line = (str(failure).strip().splitlines() or [""])[0]
        return FAILED, None, (f"{peer.name}: its check raised {type(failure).__name__}: "
                              f"{first_line}")
    if error > peer.tolerance:
        return FAILED, error, f"{peer.name} relative error {error:.3g} exceeds {peer.tolerance:g}"
    return time_ms(torch, peer.run, args.warmup, args.reps), error, None


def run_ours(mosaic_run, manifest_path, kind, args, out_dir, extra=()):
    """Runs mosaic-run on one kernel (--check=KIND, `extra` options after);
    returns its JSON result, `passed` false when it failed or ran past
    --run-timeout seconds (a kernel that deadlocks on hardware must not hang
    the whole run)."""
    result_path = out_dir / f"{manifest_path.stem}.result.json"
    command = [str(mosaic_run), str(manifest_path), f"--check={kind}",
               f"--warmup={args.warmup}", f"--reps={args.reps}", f"--json={result_path}",
               *extra]
    if args.seed is not None:
        command.append(f"--seed={args.seed}")
    print("$ " + " ".join(command), flush=True)
    try:
        completed = subprocess.run(command, text=True, capture_output=True,
                                   timeout=args.run_timeout)
    except subprocess.TimeoutExpired as expired:
        for stream, text in ((sys.stdout, expired.stdout), (sys.stderr, expired.stderr)):
            stream.write(text.decode() if isinstance(text, bytes) else text or "")
        return {"passed": False,
                "failures": [f"mosaic-run ran past {args.run_timeout} s and was killed"]}
    sys.stdout.write(completed.stdout)
    sys.stderr.write(completed.stderr)
    try:
        result = json.loads(result_path.read_text())
    except (OSError, ValueError):
        result = {"passed": False, "failures": [completed.stderr.strip() or "no result"]}
    if completed.returncode != 0:
        result["passed"] = False
    return result


def output_positions(manifest, from_end=(-1,)):
    """Positions among the buffer parameters of the outputs, given as
    positions from the end (--check=none takes the last one by default)."""
    total = len(buffers(manifest))
    return [total + position for position in from_end]


def new_kernel_outputs(kernel):
    """The outputs of a NewKernel, as positions among its buffers from the
    end (output_positions)."""
    if kernel.kind == "attention":
        return ATTENTION_OUTPUTS[kernel.param.direction, kernel.param.part]
    return (-1,)


def run_ours_dumped(mosaic_run, manifest_path, manifest, check, args, out_dir,
                    outputs=(-1,)):
    """Runs a kernel that mosaic-run has no reference for: mosaic-run
    --check=none draws the inputs, poisons the outputs, checks that every
    element was written and times the kernel; `check(inputs, outputs)` (a
    checks.Check) then compares the dumped bytes with float64. Returns
    (median ms, or None when either failed; the Check or None; the mosaic-run
    result; why it failed, or None). `outputs`: the output buffers'
    positions from the end (output_positions)."""
    import checks
    positions = output_positions(manifest, outputs)
    buffer_parameters = [p for p in manifest["parameters"] if p["kind"] == "buffer"]
    indices = ",".join(str(buffer_parameters[i]["index"]) for i in positions)
    with tempfile.TemporaryDirectory(prefix="mosaic-bench-") as folder:
        dumps = pathlib.Path(folder)
        result = run_ours(mosaic_run, manifest_path, "none", args, out_dir, extra=[
            f"--outputs={indices}", f"--dump-inputs={dumps / 'inputs.bin'}",
            f"--dump-outputs={dumps / 'outputs.bin'}"])
        if not result.get("passed"):
            return None, None, result, "; ".join(result.get("failures") or ["mosaic-run failed"])
        try:
            inputs, outs = checks.decode_dumps(
                buffers(manifest), positions,
                (dumps / "inputs.bin").read_bytes(), (dumps / "outputs.bin").read_bytes())
            found = check(inputs, outs)
        except Exception as error:  # noqa: BLE001: a dump that does not fit its check
            return None, None, result, (f"the dumps could not be checked: "
                                        f"{type(error).__name__}: {error}")
    print(f"{manifest_path.stem}: float64 check of the dumps "
          f"{'passed' if found.passed else 'FAILED'}: {found.summary}", flush=True)
    if not found.passed:
        return None, found, result, found.summary
    if result.get("median_ms") is None:
        return None, found, result, (f"mosaic-run reported no time "
                                     f"(emulated: {result.get('emulated')})")
    return result["median_ms"], found, result, None


def new_kernel_check(kernel):
    """The float64 check of a NewKernel's dumps: check(inputs, outputs)."""
    import checks
    if kernel.kind == "split":
        return lambda ins, outs: checks.check_split_partials(ins[0], ins[1], outs[0])
    if kernel.kind == "fixup":
        return lambda ins, outs: checks.check_fixup(ins[0], outs[0])
    if kernel.kind == "epilogue":
        return lambda ins, outs: checks.check_epilogue(kernel.param, ins[0], ins[1], ins[2:],
                                                       outs[0])
    if kernel.kind == "attention":
        attention = kernel.param
        if attention.direction == "bwd":
            return {"preprocess": lambda ins, outs: checks.check_attention_delta(
                        kernel.dims, *ins, *outs),
                    "main": lambda ins, outs: checks.check_attention_backward(
                        kernel.dims, attention.causal, *ins, *outs),
                    "postprocess": lambda ins, outs: checks.check_attention_dq(
                        kernel.dims, *ins, *outs)}[attention.part]
        if attention.dtype == "fp8":
            return lambda ins, outs: checks.check_attention_forward_fp8(
                kernel.dims, attention.causal, *ins, *outs)
        return lambda ins, outs: checks.check_attention_forward(kernel.dims, attention.causal,
                                                                *ins, *outs)
    return lambda ins, outs: checks.check_fp8(kernel.param, *ins, outs[0])


def fp8_quantize(torch, x, scaling, operand):
    """x (f32, on the GPU) quantized to e4m3 as a training recipe does: each
    group of elements that shares a scale divided by amax / 448 (1 for an
    all-zero group). operand "a" (M x K: blocks 1 x 128) or "bt" (N x K:
    blocks 128 x 128). Returns (q, scales, the scales expanded to x's shape
    in float64): scales (1,) per tensor, (rows,) per row, and per block
    (ceil(K/128), M) for A (K-block-major) and (N/128, K/128) for Bt, the
    layouts of gemm_fp8.py and the Triton peer."""
    rows, cols = x.shape
    if scaling == "tensor":
        group_rows, group_cols = rows, cols
    elif scaling == "row":
        group_rows, group_cols = 1, cols
    else:
        group_rows, group_cols = (1 if operand == "a" else 128), 128
    if rows % group_rows or cols % group_cols:
        raise ValueError(f"{scaling} scaling here needs {operand}'s {rows}x{cols} to be "
                         f"whole {group_rows}x{group_cols} blocks")
    amax = x.abs().view(rows // group_rows, group_rows, cols // group_cols,
                        group_cols).amax(dim=(1, 3))
    scales = torch.where(amax > 0, amax / 448.0, torch.ones_like(amax)).float()
    expanded = scales.repeat_interleave(group_rows, 0).repeat_interleave(group_cols, 1)
    # |x| / scale <= 448 but for f32 rounding, which the cast rounds to 448.
    q = (x / expanded).to(torch.float8_e4m3fn)
    expanded = expanded.double()
    if scaling == "tensor":
        scales = scales.reshape(1)
    elif scaling == "row":
        scales = scales.reshape(rows)
    elif operand == "a":
        scales = scales.t().contiguous()  # (K/128, M): K-block-major
    return q, scales, expanded


def scaled_mm_scales(scaling, a_scales, b_scales, m, n):
    """Our scale layouts as torch._scaled_mm takes them (B given as Bt^T,
    K x N column-major): per tensor as they are; per row (M, 1) and (1, N);
    per block A's (M, K/128) outer-dim-major (our K-block-major matrix,
    transposed: the same memory) and B's (K/128, N/128) (Bt's (N/128, K/128)
    matrix, transposed)."""
    if scaling == "tensor":
        return a_scales, b_scales
    if scaling == "row":
        return a_scales.view(m, 1), b_scales.view(1, n)
    return a_scales.t(), b_scales.t()


def fp8_peers(torch, triton, case, generator):
    """(column, Peer) for each FP8 GEMM peer of `case`: fresh random A and
    Bt quantized with the case's scaling, one float64 reference of
    dequant(A) dequant(Bt)^T for all of them."""
    m, n, k = case[:3]
    device = generator.device
    x = torch.randn((m, k), generator=generator, device=device)
    w = torch.randn((n, k), generator=generator, device=device)
    a, a_scales, a_expanded = fp8_quantize(torch, x, case.scaling, "a")
    bt, b_scales, b_expanded = fp8_quantize(torch, w, case.scaling, "bt")
    del x, w
    reference = {}

    def error(out):
        if "c" not in reference:
            reference["c"] = ((a.float().double() * a_expanded)
                              @ (bt.float().double() * b_expanded).T)
        return relative_error(torch, out, reference["c"])

    flops = gemm_flops(case[:3])
    moved = m * k + n * k + m * n * 2
    result = []
    scale_a, scale_b = scaled_mm_scales(case.scaling, a_scales, b_scales, m, n)
    last = {}

    def run_scaled_mm():
        last["c"] = torch._scaled_mm(a, bt.t(), scale_a, scale_b, out_dtype=torch.bfloat16)

    def poison_scaled_mm():
        last.pop("c").fill_(math.nan)

    result.append((SCALED_MM, Peer(SCALED_MM, run_scaled_mm, lambda: error(last["c"]),
                                   BF16_TOLERANCE, flops, moved, poison=poison_scaled_mm)))
    if triton and "matmul_fp8" in triton:
        c = torch.empty((m, n), dtype=torch.bfloat16, device=device)
        result.append((TRITON_FP8, Peer(
            TRITON_FP8, lambda: triton["matmul_fp8"](a, bt, a_scales, b_scales, c, case.scaling),
            lambda: error(c), BF16_TOLERANCE, flops, moved, c)))
    return result


def epilogue_functions(torch, epilogue):
    """(the eager torch function of an epilogue GEMM, its cuBLAS-fused form):
    f(a, b, extra) with extra the bias (N,) or the skip (M, N), bf16."""
    functional = torch.nn.functional
    if epilogue == "bias_gelu_tanh":
        return (lambda a, b, bias: functional.gelu(torch.matmul(a, b) + bias,
                                                   approximate="tanh"),
                lambda a, b, bias: torch._addmm_activation(bias, a, b, use_gelu=True))
    if epilogue == "residual":
        return (lambda a, b, skip: torch.matmul(a, b) + skip,
                lambda a, b, skip: torch.addmm(skip, a, b))
    raise ValueError(f"no torch form of the epilogue {epilogue!r}")


def epilogue_peers(torch, case, generator, compile_torch):
    """(column, Peer) for each peer of a fused-epilogue case: fresh random
    bf16 A [M, K], B [K, N] and the epilogue's input (the bias (N,) or the
    skip (M, N), bf16 as in a bf16 model; the skip scaled by sqrt(K), the
    size of A B), one float64 reference for all of them."""
    m, n, k = case[:3]
    device = generator.device
    a = torch.randn((m, k), generator=generator, device=device).to(torch.bfloat16)
    b = torch.randn((k, n), generator=generator, device=device).to(torch.bfloat16)
    shape = (n,) if case.epilogue == "bias_gelu_tanh" else (m, n)
    scale = 1.0 if case.epilogue == "bias_gelu_tanh" else math.sqrt(k)
    extra = (torch.randn(shape, generator=generator, device=device) * scale).to(torch.bfloat16)
    reference = {}

    def error(out):
        if "c" not in reference:
            acc = a.double() @ b.double() + extra.double()
            reference["c"] = (torch.nn.functional.gelu(acc, approximate="tanh")
                              if case.epilogue == "bias_gelu_tanh" else acc)
        return relative_error(torch, out, reference["c"])

    eager, fused = epilogue_functions(torch, case.epilogue)
    functions = [(TORCH_EAGER, eager), (CUBLAS_FUSED, fused)]
    if compile_torch:
        functions.append((TORCH_COMPILE, torch.compile(eager, dynamic=False)))
    flops = gemm_flops(case[:3])
    moved = (m * k + k * n + 2 * m * n + extra.numel()) * 2
    result = []
    for column, function in functions:
        last = {}

        def run(function=function, last=last):
            last["c"] = function(a, b, extra)

        def poison(last=last):
            last.pop("c").fill_(math.nan)

        result.append((column, Peer(column, run, lambda last=last: error(last["c"]),
                                    BF16_TOLERANCE, flops, moved, poison=poison)))
    return result


# ---------------------------------------------------------------------------
# The attention-new tables: peers and measurement.


def attention_pair_reference(torch, q, k, v, do, causal, chunk=512):
    """One sequence's query heads of one key/value head in float64: q and
    do [group, L, d], k and v [L, d]. Returns (O, LSE) and, with do, (O,
    LSE, dQ, dK, dV), dK and dV summed over the group; query rows in chunks
    of `chunk`, so that the scores never take more than group x chunk x L."""
    q, k, v = q.double(), k.double(), v.double()
    length, d = k.shape
    scale = 1 / math.sqrt(d)
    keys = torch.arange(length, device=q.device)

    def probabilities(start):
        scores = q[:, start:start + chunk] @ k.T * scale
        if causal:
            rows = torch.arange(start, min(start + chunk, length), device=q.device)
            scores = scores.masked_fill(keys[None, :] > rows[:, None], -math.inf)
        lse = torch.logsumexp(scores, dim=-1)
        return torch.exp(scores - lse[..., None]), lse

    o, lse = torch.empty_like(q), torch.empty(q.shape[:2], dtype=q.dtype, device=q.device)
    for start in range(0, length, chunk):
        p, lse[:, start:start + chunk] = probabilities(start)
        o[:, start:start + chunk] = p @ v
    if do is None:
        return o, lse
    do = do.double()
    delta = (do * o).sum(-1)
    dq, dk, dv = torch.empty_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for start in range(0, length, chunk):
        rows = slice(start, start + chunk)
        p, _ = probabilities(start)
        ds = p * (do[:, rows] @ v.T - delta[:, rows, None])
        dq[:, rows] = ds @ k * scale
        dk += (ds.transpose(1, 2) @ q[:, rows]).sum(0) * scale
        dv += (p.transpose(1, 2) @ do[:, rows]).sum(0)
    return o, lse, dq, dk, dv


def attention_pair_views(row):
    """The (query-head view, key/value-head view) of each (sequence, key/
    value head) pair the peers' check compares: the first sequence's first
    key/value head and the last (packed: the longest) sequence's last. The
    views take a peer's tensor, [B, H, S, D] (fixed) or [T, H, D] (packed),
    to [group, L, D] and [L, D]."""
    group = row.heads // row.kv_heads
    lengths = attention_row_lengths(row)
    last = (max(range(len(lengths)), key=lambda i: (lengths[i], i)) if row.lengths
            else len(lengths) - 1)
    views = []
    for sequence, head in sorted({(0, 0), (last, row.kv_heads - 1)}):
        heads = slice(head * group, (head + 1) * group)
        if row.lengths:
            start = sum(lengths[:sequence])
            tokens = slice(start, start + lengths[sequence])
            views.append((lambda x, t=tokens, h=heads: x[t, h].transpose(0, 1),
                          lambda x, t=tokens, h=head: x[t, h]))
        else:
            views.append((lambda x, b=sequence, h=heads: x[b, h],
                          lambda x, b=sequence, h=head: x[b, h]))
    return views


class AttentionInputs(typing.NamedTuple):
    """A row's inputs: q, k, v and do, bf16 (FP8 rows: the dequantized
    values, so that every column computes the same function), in the
    layout of attention_pair_views; FP8 rows also (q, k, v) in e4m3 and
    their scales."""
    q: object
    k: object
    v: object
    do: object
    fp8: tuple = ()
    scales: tuple = ()


def attention_new_inputs(torch, row, generator):
    """Fresh standard normal inputs for a row (FP8 rows quantized per tensor,
    scale = amax / 448)."""
    device = generator.device
    if row.lengths:
        tokens = sum(row.lengths)
        shapes = [(tokens, row.heads, row.head_dim), (tokens, row.kv_heads, row.head_dim)]
    else:
        shapes = [(row.batch, row.heads, row.seq, row.head_dim),
                  (row.batch, row.kv_heads, row.seq, row.head_dim)]
    q_shape, kv_shape = shapes
    normal = [torch.randn(shape, generator=generator, device=device)
              for shape in (q_shape, kv_shape, kv_shape)]
    do = torch.randn(q_shape, generator=generator, device=device).to(torch.bfloat16)
    if row.table != "fp8":
        return AttentionInputs(*(x.to(torch.bfloat16) for x in normal), do)
    scales = tuple(float(x.abs().max()) / 448 for x in normal)
    fp8 = tuple((x / scale).to(torch.float8_e4m3fn) for x, scale in zip(normal, scales))
    dequantized = [(x.float() * scale).to(torch.bfloat16) for x, scale in zip(fp8, scales)]
    return AttentionInputs(*dequantized, do, fp8, scales)


def unavailable_peer(name, error, flops, moved):
    """A Peer whose run raises `error`: its cells say unavailable, with why."""
    def run():
        raise error
    return Peer(name, run, lambda: math.inf, 0, flops, moved)


def attention_new_peers(torch, triton, sdpa, row, generator):
    """(column, Peer) for each peer of an attention-new row, on fresh inputs,
    checked against float64 at attention_pair_views' pairs (relative error
    within BF16_TOLERANCE, FP8 peers within FP8_ATTENTION_TOLERANCE), after a
    check that every element was written."""
    inputs = attention_new_inputs(torch, row, generator)
    q, k, v, do = inputs[:4]
    views = attention_pair_views(row)
    references = {}

    def error(*outputs):
        """outputs: O (forward), or dQ, dK and dV (backward), in q's and
        k's layouts."""
        if not all(torch.isfinite(out).all() for out in outputs):
            return math.inf
        worst = 0.0
        for i, (query_view, key_view) in enumerate(views):
            if i not in references:
                if inputs.fp8:
                    dequantized = [x.double() * scale for x, scale in
                                   zip(inputs.fp8, inputs.scales)]
                else:
                    dequantized = [q, k, v]
                references[i] = attention_pair_reference(
                    torch, query_view(dequantized[0]), key_view(dequantized[1]),
                    key_view(dequantized[2]), query_view(do) if row.backward else None,
                    row.causal)
            reference = references[i]
            pairs = ([(query_view(outputs[0]), reference[0])] if not row.backward else
                     [(query_view(outputs[0]), reference[2]),
                      (key_view(outputs[1]), reference[3]),
                      (key_view(outputs[2]), reference[4])])
            worst = max([worst] + [relative_error(torch, out, ref) for out, ref in pairs])
        return worst

    flops = attention_row_flops(row)
    arrays = 4 + (4 if row.backward else 0)  # q, k, v, o (and do, dq, dk, dv), at most
    moved = arrays * q.numel() * 2
    result = []

    def autograd_peer(column, function, context=None):
        """A peer computing o = function(q, k, v): its forward, or with
        row.backward the gradients of a forward made in its first run."""
        last = {}
        leaves = [x.detach().requires_grad_(row.backward) for x in (q, k, v)]

        def run():
            if not row.backward:
                last["out"] = [function(*leaves)]
                return
            if "o" not in last:
                last["o"] = function(*leaves)
            last["out"] = torch.autograd.grad(last["o"], leaves, do, retain_graph=True)

        def poison():
            for out in last.pop("out"):
                out.fill_(math.nan)

        return (column, Peer(column, run, lambda: error(*last["out"]), BF16_TOLERANCE,
                             flops, moved, poison=poison, context=context))

    if row.table in ("backward", "gqa", "fp8") and sdpa:
        gqa = {"enable_gqa": True} if row.kv_heads != row.heads else {}
        for column, context in sdpa.backends.items():
            if row.table == "fp8" and column != SDPA_FLASH:
                continue
            result.append(autograd_peer(
                column, lambda *x: sdpa.function(*x, is_causal=row.causal, **gqa), context))
    if row.table == "varlen":
        offsets = torch.tensor([0] + list(itertools.accumulate(row.lengths)),
                               dtype=torch.int32, device=q.device)
        try:
            from torch.nn.attention.varlen import varlen_attn
            window = (-1, 0) if row.causal else (-1, -1)
            for column, backend in ((TORCH_VARLEN_FLASH, SDPA_FLASH),
                                    (TORCH_VARLEN_CUDNN, SDPA_CUDNN)):
                result.append(autograd_peer(
                    column, lambda *x: varlen_attn(*x, offsets, offsets, row.seq, row.seq,
                                                   window_size=window),
                    sdpa.backends[backend] if sdpa else None))
        except ImportError as missing:
            result += [(column, unavailable_peer(column, missing, flops, moved))
                       for column in (TORCH_VARLEN_FLASH, TORCH_VARLEN_CUDNN)]
        try:
            from flash_attn import flash_attn_varlen_func
            result.append(autograd_peer(
                FLASH_ATTN_VARLEN, lambda *x: flash_attn_varlen_func(
                    *x, offsets, offsets, row.seq, row.seq, causal=row.causal)))
        except ImportError as missing:
            result.append((FLASH_ATTN_VARLEN, unavailable_peer(FLASH_ATTN_VARLEN, missing,
                                                               flops, moved)))
    if row.table == "fp8":
        result += fp8_attention_peers(torch, triton, row, inputs, error, flops)
    return result


@contextlib.contextmanager
def fa3_activated():
    """torch's flash attention backend switched to FlashAttention-3 (the
    flash_attn_interface package), and back to the default after."""
    from torch.nn.attention import activate_flash_attention_impl, restore_flash_attention_impl
    activate_flash_attention_impl("FA3")
    try:
        yield
    finally:
        restore_flash_attention_impl()


def fp8_attention_peers(torch, triton, row, inputs, error, flops):
    """The FP8 peers of an FP8 row: torch's quantized SDPA (FA3) and the
    Triton FP8 attention, each on the e4m3 inputs and their scales."""
    q8, k8, v8 = inputs.fp8
    q_scale, k_scale, v_scale = inputs.scales
    moved = 3 * q8.numel() + 2 * q8.numel()
    result = []
    last = {}

    def run_sdpa_fp8():
        from torch.nn.attention.experimental._scaled_dot_product_attention_quantized import \
            _scaled_dot_product_attention_quantized
        descales = [torch.full((row.batch, row.kv_heads), scale, device=q8.device)
                    for scale in inputs.scales]
        last["o"] = _scaled_dot_product_attention_quantized(
            q8, k8, v8, is_causal=row.causal, q_descale=descales[0], k_descale=descales[1],
            v_descale=descales[2])

    def poison_sdpa_fp8():
        last.pop("o").fill_(math.nan)

    result.append((SDPA_FP8, Peer(SDPA_FP8, run_sdpa_fp8, lambda: error(last["o"]),
                                  FP8_ATTENTION_TOLERANCE, flops, moved,
                                  poison=poison_sdpa_fp8, context=fa3_activated)))
    if triton and "attention_fp8" in triton:
        heads = row.batch * row.heads
        shape = (heads, row.seq, row.head_dim)
        vt = v8.reshape(shape).transpose(1, 2).contiguous()
        o = torch.empty(shape, dtype=torch.bfloat16, device=q8.device)
        lse = torch.empty(shape[:2], dtype=torch.float32, device=q8.device)

        def run_triton():
            triton["attention_fp8"](q8.reshape(shape), k8.reshape(shape), vt, o, lse, row.causal,
                                    q_scale, k_scale, v_scale)

        result.append((TRITON_FP8_ATTENTION, Peer(
            TRITON_FP8_ATTENTION, run_triton, lambda: error(o.view(q8.shape)),
            FP8_ATTENTION_TOLERANCE, flops, moved, o)))
    return result


def measure_attention_new_tables(torch, triton, triton_notes, sdpa, sdpa_note, new_kernels,
                                 generator, measure_cells, measure_new, args):
    """[(table, rows, notes)] of the attention-new tables, in
    ATTENTION_NEW_TABLES' order."""
    rows = {table: [] for table in ATTENTION_NEW_TABLES}
    unavailable = {table: [] for table in ATTENTION_NEW_TABLES}
    missing = {table: [] for table in ATTENTION_NEW_TABLES}
    notes = {table: [] for table in ATTENTION_NEW_TABLES}
    for row in attention_new_rows():
        label = attention_row_label(row)
        cells = measure_cells(lambda: attention_new_peers(torch, triton, sdpa, row, generator),
                              label, f"attention {row.table}", unavailable[row.table])
        if row.table == "fp8" and isinstance(cells.get(TRITON_FP8_ATTENTION), float):
            notes["fp8"].append(f"{label}: {TRITON_FP8_ATTENTION} tuned to "
                                f"{triton['attention_fp8'].config()}.")
        torch.cuda.empty_cache()  # for mosaic-run, another process
        name = attention_kernel_name(row)
        column = OURS_FP8_ATTENTION if row.table == "fp8" else OURS_ATTENTION
        # The backward's cell: its three kernels' medians added up.
        stems = [name + suffix for suffix in ATTENTION_BACKWARD_PARTS.values()] \
            if name and row.backward else [name]
        if name and all(stem in new_kernels for stem in stems):
            times = [measure_new(stem, label) for stem in stems]
            cells[column] = FAILED if None in times else sum(times)
        elif name is not None:
            missing[row.table].append(label)
        rows[row.table].append((row, cells))
    notes["varlen"].append(
        f"{OURS_ATTENTION}: not run. mosaic-run draws every i32 input uniformly in [-64, 64], "
        "so it cannot give the kernel cu_seqlens offsets; a mosaic-run option that reads the "
        "inputs from a file would let it.")
    for table in ATTENTION_NEW_TABLES:
        if missing[table]:
            notes[table].append(
                f"ours: no kernel in {args.kernels} at {'; '.join(missing[table])} "
                f"(compile-kernels.sh compiles them with {ATTENTION_GENERATOR} where the "
                "build has the kernel's module).")
        if sdpa_note and table != "varlen":
            notes[table].append(sdpa_note)
        notes[table] += unavailable_notes(unavailable[table])
        notes[table] += attention_new_shape_notes(table)
    if not (triton and "attention_fp8" in triton):
        notes["fp8"] += triton_notes or [f"{TRITON_FP8_ATTENTION}: not loaded."]
    notes["fp8"].append(f"The FP8 peers are checked against float64 on the dequantized "
                        f"inputs within a relative error of {FP8_ATTENTION_TOLERANCE:g}: P "
                        "rounded to e4m3 for P V.")
    return [(table, rows[table], notes[table]) for table in ATTENTION_NEW_TABLES]


def parse_tables(text):
    """The tables --tables names (comma-separated), in TABLES' order."""
    named = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(named) - set(TABLES))
    if unknown or not named:
        raise ValueError(f"--tables: {', '.join(unknown) or 'none named'}; choose from "
                         f"{', '.join(TABLES)}")
    return [name for name in TABLES if name in named]


def kernels_by_case(new_kernels, kind, make_case):
    """{case: stem} of the NewKernels of `kind`, make_case(kernel) each."""
    return {make_case(kernel): stem for stem, (_, _, kernel) in sorted(new_kernels.items())
            if kernel.kind == kind}


def measure_fp8_table(torch, triton, triton_notes, new_kernels, generator, measure_cells,
                      measure_new, args):
    """The FP8 table's rows (FP8_CASES, then any other case ours was
    compiled for) and notes."""
    ours = kernels_by_case(new_kernels, "fp8", lambda k: Fp8Case(*k.dims, k.param))
    rows, unavailable, missing, notes = [], [], [], []
    for case in FP8_CASES + sorted(set(ours) - set(FP8_CASES)):
        label = fp8_label(case)
        cells = measure_cells(lambda: fp8_peers(torch, triton, case, generator), label, "fp8",
                              unavailable)
        if isinstance(cells.get(TRITON_FP8), float):
            notes.append(f"{label}: {TRITON_FP8} tuned to {triton['matmul_fp8'].config()}.")
        torch.cuda.empty_cache()  # for mosaic-run, another process
        stem = ours.get(case)
        if stem is None:
            missing.append(label)
        else:
            ms = measure_new(stem, label)
            cells[OURS_FP8] = FAILED if ms is None else ms
        rows.append((case, cells))
    if missing:
        notes.append(f"{OURS_FP8}: not compiled at {'; '.join(missing)}: no kernel in "
                     f"{args.kernels} (compile-kernels.sh compiles them with "
                     "python/examples/gemm_fp8.py where it exists).")
    if not (triton and "matmul_fp8" in triton):
        notes += triton_notes or [f"{TRITON_FP8}: not loaded."]
    notes += unavailable_notes(unavailable)
    notes.append(f"{SCALED_MM}: torch {torch.__version__}; per block, A's scales (M, K/128) "
                 "outer-dim-major and B's (K/128, N/128), the 1x128 by 128x128 blockwise "
                 "scaling cuBLAS offers on sm_90 from CUDA 12.9; where this torch refuses "
                 "it, its cells say unavailable with torch's message.")
    notes.append("Inputs: the peers' A and Bt are standard normal quantized as a recipe "
                 "does (scale = amax / 448 per tensor, row or block); ours are "
                 "mosaic-run's: standard normal e4m3 values and standard normal f32 scales, "
                 "checked from its dumps against float64 at 256 sampled rows (per element "
                 "within 2 u |ref| + 2^-7 sqrt(sum_k (a_ik b_jk)^2), gemm_fp8.py's "
                 "tolerance). The peers are checked against float64 by relative error, "
                 f"within {BF16_TOLERANCE:g}.")
    notes += [f"{shape_label((s.m, s.n, s.k))}: {s.why}." for s in FP8_SHAPES]
    return rows, notes


def measure_epilogue_table(torch, new_kernels, generator, measure_cells, measure_new, args):
    """The fused-epilogue table's rows (EPILOGUE_CASES, then any other case
    ours was compiled for) and notes."""
    ours = kernels_by_case(new_kernels, "epilogue",
                           lambda k: EpilogueCase(*k.dims, k.param))
    rows, unavailable, missing, notes = [], [], [], []
    for case in EPILOGUE_CASES + sorted(set(ours) - set(EPILOGUE_CASES)):
        label = epilogue_label(case)
        cells = measure_cells(
            lambda: epilogue_peers(torch, case, generator, not args.no_torch_compile), label,
            "epilogue", unavailable)
        torch.cuda.empty_cache()  # for mosaic-run, another process
        stem = ours.get(case)
        if stem is None:
            missing.append(label)
        else:
            ms = measure_new(stem, label)
            cells[OURS_FUSED] = FAILED if ms is None else ms
        rows.append((case, cells))
    if missing:
        notes.append(f"{OURS_FUSED}: not compiled at {'; '.join(missing)}: no kernel in "
                     f"{args.kernels} (compile-kernels.sh compiles them with "
                     "python/examples/gemm_ws.py --epilogue NAME where it has that option).")
    if args.no_torch_compile:
        notes.append(f"{TORCH_COMPILE}: left out (--no-torch-compile).")
    notes += unavailable_notes(unavailable)
    notes.append("Inputs: the peers' bias and skip are bf16, as in a bf16 model (the skip "
                 "scaled by sqrt(K), the size of A B); ours are mosaic-run's (standard "
                 "normal, the bias f32), checked from its dumps against float64 at 256 "
                 "sampled rows (per element within 2^-7 |ref| + 2^-8 of the accumulator's "
                 "RMS, gemm_ws.py's tolerance). The peers are checked against float64 by "
                 f"relative error, within {BF16_TOLERANCE:g}.")
    return rows, notes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", help="folder of CUBINs and manifests")
    parser.add_argument("--mosaic-run", help="the mosaic-run binary")
    parser.add_argument("--docs", help="append the tables to this file (docs/BENCHMARKS.md)")
    parser.add_argument("--out", help="also write the section and results here")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--command", help="the command to record (default: this one)")
    parser.add_argument("--list-gemm-shapes", action="store_true",
                        help="print the GEMM table's shapes, M N K per line, and exit")
    parser.add_argument("--list-attention-shapes", action="store_true",
                        help="print the attention table's shapes, BATCH HEADS SEQ HEAD_DIM "
                             "causal|full per line, and exit")
    parser.add_argument("--list-generated", action="store_true",
                        help="print NAME SCRIPT ARGS... per kernel of the split-K columns, "
                             "the fused-epilogue and the FP8 tables, and exit")
    parser.add_argument("--tables", default=",".join(DEFAULT_TABLES),
                        help=f"comma-separated, of {', '.join(TABLES)} (gemm-new: the "
                             "GEMM table's split-K and any-shape rows alone); default "
                             "%(default)s")
    parser.add_argument("--run-timeout", type=float, default=300,
                        help="seconds each mosaic-run may take (default 300)")
    parser.add_argument("--no-torch-compile", action="store_true",
                        help="leave out the fused-epilogue table's torch.compile column "
                             "(its compilation takes tens of seconds per row)")
    args = parser.parse_args()
    try:
        tables = parse_tables(args.tables)
    except ValueError as error:
        parser.error(str(error))
    if args.list_gemm_shapes:
        for shape in GEMM_SHAPES:
            print(shape.m, shape.n, shape.k)
        return 0
    if args.list_attention_shapes:
        for case in attention_table_cases([]):
            print(case.batch, case.heads, case.seq, case.head_dim,
                  "causal" if case.causal else "full")
        return 0
    if args.list_generated:
        for name, script, script_args in generated_kernels():
            print(name, script, *script_args)
        return 0
    if not args.kernels or not args.mosaic_run:
        parser.error("--kernels and --mosaic-run are required")
    command = args.command or " ".join(sys.argv)

    import torch
    if not torch.cuda.is_available():
        sys.exit("bench.py: error: PyTorch sees no CUDA device")
    out_dir = pathlib.Path(args.out) if args.out else pathlib.Path(args.kernels)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifests = find_manifests(args.kernels)
    if not manifests:
        sys.exit(f"bench.py: error: no kernel manifests in {args.kernels}")
    triton, triton_notes = load_triton(torch)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    generator = torch.Generator(device="cuda").manual_seed(seed)
    print(f"GPU: {gpu_model()}; torch {torch.__version__}; "
          f"Triton {triton['version'] if triton else 'missing'}; peer seed {seed}", flush=True)

    rows, failures, results, notes = [], [], [], []

    def measure_ours(path, kind, label):
        """Runs one kernel of ours: (median ms or None, the result)."""
        ours = run_ours(args.mosaic_run, path, kind, args, out_dir)
        if not ours.get("passed"):
            failures.extend(f"{path.stem} {label}: {why}"
                            for why in ours.get("failures") or ["mosaic-run failed"])
            return None, ours
        if ours.get("median_ms") is None:
            failures.append(f"{path.stem} {label}: mosaic-run reported no time "
                            f"(emulated: {ours.get('emulated')})")
        return ours.get("median_ms"), ours

    # The examples other than GEMMs and attention: one row per peer.
    gemms, attentions, new_kernels = [], [], {}
    for path, manifest in manifests:
        new = parse_new_kernel(path.stem)
        if new:
            new_kernels[path.stem] = (path, manifest, new)
            continue
        kind = reference_kind(manifest["entry"])
        if kind == "gemm":
            gemms.append((path, manifest))
            continue
        if kind in ATTENTION_REFERENCES.values():
            attentions.append((path, manifest))
            continue
        if "other" not in tables:
            continue
        shape = describe_shape(manifest)
        if kind is None:
            failures.append(f"{path.stem}: mosaic-run has no reference for entry "
                            f"`{manifest['entry']}` (references: {', '.join(REFERENCES)})")
            continue
        ours_ms, ours = measure_ours(path, kind, shape)
        ours_cell = format_cell(ours_ms, ours.get("flops"), ours.get("bytes"),
                                failed=ours_ms is None)
        kernel_peers = peers(torch, triton, kind, [s for _, s in buffers(manifest)], generator)
        for peer in kernel_peers:
            peer_ms, error, why = measure_peer(torch, peer, args)
            if peer_ms == FAILED:
                failures.append(f"{path.stem} {shape}: {why}")
            elif why:
                notes.append(f"{path.stem} {shape}: {why}")
            timed = peer_ms if isinstance(peer_ms, float) else None
            rows.append({"kernel": path.stem, "shape": shape, "ours": ours_cell,
                         "peer": peer.name,
                         "peer_time": peer_ms if isinstance(peer_ms, str)
                         else format_cell(timed, peer.flops, peer.moved),
                         "ratio": format_ratio(ours_ms, timed)})
            results.append({"kernel": path.stem, "shape": shape, "ours_ms": ours_ms,
                            "peer": peer.name, "peer_ms": timed,
                            "peer_relative_error": error})

    # The GEMM table.
    paths = {path.stem: path for path, _ in gemms + attentions}
    chosen, gemm_notes = group_kernels([(path.stem, kernel_family(path.stem), gemm_dims(m))
                                        for path, m in gemms])
    families = {family for family, _ in chosen}
    split_pairs, split_notes = pair_split_kernels(
        {stem: kernel for stem, (_, _, kernel) in new_kernels.items()
         if kernel.kind in ("split", "fixup")})
    gemm_notes += split_notes
    columns = gemm_columns(families, [splits for _, splits in split_pairs])
    gemm_rows, unavailable = [], []

    def measure_new(stem, label):
        """Runs one kernel of ours that mosaic-run has no reference for,
        checked from its dumps: median ms or None."""
        path, manifest, kernel = new_kernels[stem]
        ms, found, _, why = run_ours_dumped(args.mosaic_run, path, manifest,
                                            new_kernel_check(kernel), args, out_dir,
                                            new_kernel_outputs(kernel))
        if why:
            failures.append(f"{stem} {label}: {why}")
        results.append({"kernel": stem, "row": label, "ms": ms, "passed": why is None,
                        "worst_error_over_tolerance": found.worst if found else None})
        return ms

    def measure_cells(make_peers, label, what, unavailable_list):
        """The cells of one row's peers (column: ms, FAILED or UNAVAILABLE),
        their tensors freed on return; make_peers() builds them."""
        cells = {}
        try:
            row_peers = make_peers()
        except Exception as error:  # noqa: BLE001: inputs or a peer this torch cannot make
            first_line = (str(error).strip().splitlines() or [""])[0]
            unavailable_list.append((f"the peers: {type(error).__name__}: {first_line}",
                                     label))
            return cells
        for column, peer in row_peers:
            value, error, why = measure_peer(torch, peer, args)
            cells[column] = value
            if value == FAILED:
                failures.append(f"{what} {label}: {why}")
            elif why:
                unavailable_list.append((why, label))
            results.append({what: label, "implementation": column,
                            "ms": value if isinstance(value, float) else None,
                            "relative_error": error})
        return cells

    def measure_gemm_peers(dims):
        """The peers' cells of one shape; their tensors are freed on return."""
        label, cells = shape_label(dims), {}
        for column, peer in gemm_peers(torch, triton, dims, generator):
            value, error, why = measure_peer(torch, peer, args)
            cells[column] = value
            if value == FAILED:
                failures.append(f"GEMM {label}: {why}")
            elif why:
                unavailable.append((why, label))
            results.append({"gemm": label, "implementation": column,
                            "ms": value if isinstance(value, float) else None,
                            "relative_error": error})
        if isinstance(cells.get(TRITON_TMA), float):
            gemm_notes.append(f"{label}: {TRITON_TMA} tuned to "
                              f"{triton['matmul_tma_persistent'].config()}.")
        return cells

    for dims in select_gemm_shapes(
            gemm_table_shapes([d for _, d in chosen] + [d for d, _ in split_pairs]), tables):
        label = shape_label(dims)
        cells = measure_gemm_peers(dims)
        torch.cuda.empty_cache()  # for mosaic-run, another process
        for family in columns:
            stem = chosen.get((family, dims))
            if stem is None:
                continue
            ours_ms, ours = measure_ours(paths[stem], "gemm", label)
            cells[family] = FAILED if ours_ms is None else ours_ms
            results.append({"gemm": label, "implementation": family, "kernel": stem,
                            "ms": ours_ms, "passed": bool(ours.get("passed"))})
        for (pair_dims, splits), stems in sorted(split_pairs.items()):
            if pair_dims == dims:
                times = [measure_new(stem, label) for stem in stems]
                cells[split_k_column(splits)] = FAILED if None in times else sum(times)
        gemm_rows.append((dims, cells))
    missing_splits = [f"{shape_label((s.m, s.n, s.k))} with {splits} splits"
                      for s in GEMM_SHAPES for splits in s.splits
                      if ((s.m, s.n, s.k), splits) not in split_pairs
                      and (s.m, s.n, s.k) in [dims for dims, _ in gemm_rows]]
    if missing_splits:
        gemm_notes.append(f"split-K: no kernel pair in {args.kernels} at "
                          f"{'; '.join(missing_splits)} (compile-kernels.sh compiles them with "
                          "python/examples/gemm_ws.py --split-k S where it has that option).")
    for family, source in OUR_GEMMS.items():
        if family not in families:
            gemm_notes.append(f"{family}: no kernel in {args.kernels} (compiled by "
                              f"compile-kernels.sh from {source} where they exist).")
    gemm_notes += triton_notes + unavailable_notes(unavailable)
    # cuBLAS may reduce split-K partial sums in bf16 unless this is off;
    # ours and Triton's accumulate in f32 throughout.
    try:
        reduced = torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
    except AttributeError:
        reduced = "unknown"
    gemm_notes.append(f"{CUBLAS} with PyTorch's settings as found: "
                      f"allow_bf16_reduced_precision_reduction={reduced}.")
    gemm_notes += gemm_shape_notes()

    # The attention table.
    ours_by_case, attention_notes = attention_kernels_by_case(
        [(path.stem, m["entry"], attention_dims(m)) for path, m in attentions])
    sdpa, sdpa_note = load_sdpa(torch)
    attention_rows, attention_unavailable, missing = [], [], []
    rng = random.Random(seed)

    def measure_attention_peers(case):
        """The peers' cells of one row; their tensors are freed on return."""
        label = attention_label(case)
        cells = {SDPA_FLASH: UNAVAILABLE, SDPA_CUDNN: UNAVAILABLE, TRITON_ATTENTION: UNAVAILABLE}
        samples = sample_attention_rows(rng, case.batch * case.heads, case.seq)
        for column, peer in attention_peers(torch, triton, sdpa, case, samples, generator):
            value, error, why = measure_peer(torch, peer, args)
            cells[column] = value
            if value == FAILED:
                failures.append(f"attention {label}: {why}")
            elif why:
                attention_unavailable.append((why, label))
            results.append({"attention": label, "implementation": column,
                            "ms": value if isinstance(value, float) else None,
                            "relative_error": error})
        if isinstance(cells[TRITON_ATTENTION], float):
            attention_notes.append(f"{label}: {TRITON_ATTENTION} tuned to "
                                   f"{triton['attention'].config()}.")
        return cells

    for case in attention_table_cases(ours_by_case) if "attention" in tables else []:
        label = attention_label(case)
        cells = measure_attention_peers(case)
        torch.cuda.empty_cache()  # for mosaic-run, another process
        stem = ours_by_case.get((case.causal, case_dims(case)))
        if stem is None:
            missing.append(label)
        else:
            ours_ms, ours = measure_ours(paths[stem], ATTENTION_REFERENCES[case.causal],
                                         label)
            cells[OURS_ATTENTION] = FAILED if ours_ms is None else ours_ms
            results.append({"attention": label, "implementation": OURS_ATTENTION,
                            "kernel": stem, "ms": ours_ms,
                            "passed": bool(ours.get("passed"))})
        attention_rows.append((case, cells))
    if missing:
        attention_notes.append(f"{OURS_ATTENTION}: no kernel in {args.kernels} at "
                               f"{'; '.join(missing)} (compile-kernels.sh compiles them with "
                               "python/examples/attention.py where it exists).")
    if sdpa_note:
        attention_notes.append(sdpa_note)
    if not (triton and "attention" in triton):
        attention_notes += triton_notes or [f"{TRITON_ATTENTION}: not loaded."]
    attention_notes += unavailable_notes(attention_unavailable)
    attention_notes.append(f"{SDPA_FLASH}, {SDPA_CUDNN}: torch {torch.__version__}, "
                           "torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION) and "
                           "(SDPBackend.CUDNN_ATTENTION).")
    attention_notes += attention_shape_notes()

    fp8_rows, fp8_notes = [], []
    if "fp8" in tables:
        fp8_rows, fp8_notes = measure_fp8_table(torch, triton, triton_notes, new_kernels,
                                                generator, measure_cells, measure_new, args)
    attention_new = []
    if "attention-new" in tables:
        attention_new = measure_attention_new_tables(
            torch, triton, triton_notes, sdpa, sdpa_note, new_kernels, generator, measure_cells,
            measure_new, args)
    epilogue_rows, epilogue_notes = [], []
    if "epilogue" in tables:
        epilogue_rows, epilogue_notes = measure_epilogue_table(
            torch, new_kernels, generator, measure_cells, measure_new, args)

    gemm_table = gemm_markdown(columns, gemm_rows) if gemm_rows else ""
    table = markdown_table(rows) if rows else ""
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    section = docs_section(date, gpu_model(), command, args.warmup, args.reps, [
        gemm_section(gemm_table, gemm_notes if gemm_rows else []),
        attention_section(attention_markdown(attention_rows) if attention_rows else "",
                          attention_notes if attention_rows else []),
        *[attention_new_section(table, attention_new_markdown(table, rows), notes)
          for table, rows, notes in attention_new],
        other_examples_section(table, notes),
        fp8_section(fp8_markdown(fp8_rows) if fp8_rows else "", fp8_notes),
        epilogue_section(epilogue_markdown(epilogue_rows) if epilogue_rows else "",
                         epilogue_notes)])
    print()
    print(section)
    if args.out:
        (out_dir / "benchmarks-section.md").write_text(section)
        (out_dir / "benchmarks-results.json").write_text(json.dumps(results, indent=2))
    if failures:
        print("\nFAILED (docs not updated):", file=sys.stderr)
        for failure in failures:
            print(f"  {failure}", file=sys.stderr)
        return 1
    if args.docs:
        with open(args.docs, "a") as docs:
            docs.write("\n" + section)
        print(f"\nappended to {args.docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
