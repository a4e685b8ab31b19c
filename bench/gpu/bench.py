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

Prints the tables, appends them to docs/BENCHMARKS.md with the date, the GPU
and the command when every check passed, and exits non-zero when one failed.
A peer that cannot run here (Triton missing, an API it lacks) leaves its
cells `-` or `unavailable` with a note saying why; that is not a failure.

Usage (normally through bench/gpu/run.sh, which builds mosaic-run first):
  bench/gpu/bench.py --kernels DIR --mosaic-run PATH [--docs FILE]
      [--out DIR] [--warmup N] [--reps N] [--seed S] [--command TEXT]
  bench/gpu/bench.py --list-gemm-shapes     (M N K per line, for
      compile-kernels.sh; needs no GPU)
  bench/gpu/bench.py --list-attention-shapes
      (BATCH HEADS SEQ HEAD_DIM causal|full per line, for
      compile-kernels.sh; needs no GPU)
"""
import argparse
import contextlib
import dataclasses
import datetime
import json
import math
import os
import pathlib
import random
import re
import statistics
import subprocess
import sys
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


# The GEMM table's shapes. Each is a multiple of the warp-specialized
# kernel's cluster tile (two 128x256 CTA tiles: 256 in M and N) and of its
# 64-wide K step. Tile counts are of 128x256 tiles, waves of 132 SMs (H100).
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
              "idle, which cuBLAS avoids"),
]

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
OURS_ATTENTION = "ours"
TRITON_ATTENTION = "Triton fused attention"
ATTENTION_COLUMNS = [SDPA_FLASH, OURS_ATTENTION, TRITON_ATTENTION]
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


def gemm_columns(families):
    """cuBLAS, our GEMM families (OUR_GEMMS first), then the Triton peers."""
    ours = list(OUR_GEMMS) + sorted(set(families) - set(OUR_GEMMS))
    return [CUBLAS] + ours + [TRITON_TMA, TRITON_BLOCKED]


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


def attention_dims(manifest):
    """(heads, seq, head_dim) of an attention manifest: Q's shape, heads
    counting batch too."""
    return buffers(manifest)[0][1]


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
        "faster than cuBLAS); `-`: no kernel of that column for the shape.",
        table, notes)


def attention_section(table, notes):
    return TableSection(
        "Attention forward (bf16 Q, K, V and O, f32 LSE)",
        "Each cell: the time, TFLOP/s (4 B H S^2 D flops, half with the causal mask) "
        "and torch SDPA's time over this time (above 1, faster than SDPA's flash "
        f"backend); `-`: not run. {OURS_ATTENTION}: attention_fwd, or "
        "attention_causal_fwd in the causal rows, compiled for the row's shape.",
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


def load_sdpa(torch):
    """(torch's scaled_dot_product_attention, a context that forces its
    flash backend, None), or (None, None, why not)."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as error:
        return None, None, (f"torch {torch.__version__} has no torch.nn.attention.sdpa_kernel "
                            f"({error}): the {SDPA_FLASH} column is empty.")
    return (torch.nn.functional.scaled_dot_product_attention,
            sdpa_kernel(SDPBackend.FLASH_ATTENTION), None)


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
        last = {}

        def run_sdpa():
            last["o"] = sdpa(*batched, is_causal=case.causal)

        def poison_sdpa():
            # SDPA allocates its output. The warm-up run's is the only
            # memory that holds these inputs' O; poisoned and freed, it is
            # also the block the caching allocator most likely hands the
            # checked run.
            last.pop("o").fill_(math.nan)

        result.append((SDPA_FLASH, Peer(SDPA_FLASH, run_sdpa,
                                        lambda: error(last["o"].reshape(shape)), BF16_TOLERANCE,
                                        flops, moved, poison=poison_sdpa)))
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
    error = peer.check()
    if error > peer.tolerance:
        return FAILED, error, f"{peer.name} relative error {error:.3g} exceeds {peer.tolerance:g}"
    return time_ms(torch, peer.run, args.warmup, args.reps), error, None


def run_ours(mosaic_run, manifest_path, kind, args, out_dir):
    result_path = out_dir / f"{manifest_path.stem}.result.json"
    command = [str(mosaic_run), str(manifest_path), f"--check={kind}",
               f"--warmup={args.warmup}", f"--reps={args.reps}", f"--json={result_path}"]
    if args.seed is not None:
        command.append(f"--seed={args.seed}")
    print("$ " + " ".join(command), flush=True)
    completed = subprocess.run(command, text=True, capture_output=True)
    sys.stdout.write(completed.stdout)
    sys.stderr.write(completed.stderr)
    try:
        result = json.loads(result_path.read_text())
    except (OSError, ValueError):
        result = {"passed": False, "failures": [completed.stderr.strip() or "no result"]}
    if completed.returncode != 0:
        result["passed"] = False
    return result


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
    args = parser.parse_args()
    if args.list_gemm_shapes:
        for shape in GEMM_SHAPES:
            print(shape.m, shape.n, shape.k)
        return 0
    if args.list_attention_shapes:
        for case in attention_table_cases([]):
            print(case.batch, case.heads, case.seq, case.head_dim,
                  "causal" if case.causal else "full")
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
    gemms, attentions = [], []
    for path, manifest in manifests:
        kind = reference_kind(manifest["entry"])
        if kind == "gemm":
            gemms.append((path, manifest))
            continue
        if kind in ATTENTION_REFERENCES.values():
            attentions.append((path, manifest))
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
    columns = gemm_columns(families)
    gemm_rows, unavailable = [], []

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

    for dims in gemm_table_shapes([d for _, d in chosen]):
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
        gemm_rows.append((dims, cells))
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
    sdpa, flash_only, sdpa_note = load_sdpa(torch)
    attention_rows, attention_unavailable, missing = [], [], []
    rng = random.Random(seed)

    def measure_attention_peers(case):
        """The peers' cells of one row; their tensors are freed on return."""
        label = attention_label(case)
        cells = {SDPA_FLASH: UNAVAILABLE, TRITON_ATTENTION: UNAVAILABLE}
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

    with flash_only or contextlib.nullcontext():
        for case in attention_table_cases(ours_by_case):
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
    attention_notes.append(f"{SDPA_FLASH}: torch {torch.__version__}, "
                           "torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION).")
    attention_notes += attention_shape_notes()

    gemm_table = gemm_markdown(columns, gemm_rows)
    table = markdown_table(rows) if rows else ""
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    section = docs_section(date, gpu_model(), command, args.warmup, args.reps, [
        gemm_section(gemm_table, gemm_notes),
        attention_section(attention_markdown(attention_rows), attention_notes),
        other_examples_section(table, notes)])
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
