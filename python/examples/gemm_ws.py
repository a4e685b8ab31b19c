"""Warp-specialized, persistent GEMM, C = A * B with an f32 accumulator and
a bf16 C: examples/gemm_bf16_ws.mlir in Python, its barriers built by
mosaic_gpu.WarpSpecializedPipeline.

The blocks (--grid of them, one per SM by default) walk the 128 x TILE_N
output tiles persistently, in grouped order. In each block, warpgroup 0
issues the TMA loads of each K step into a ring of --stages stages;
warpgroups 1 and 2 each compute one 64-row half of the tile with wgmma kept
in flight, then store it through shared memory with TMA.

Tiles. A stage holds A's 128 rows (two 64-row halves) and B's TILE_N
columns of one K step, 128 bytes of K: 64 elements of bf16, 128 of fp8.
With TILE_N =
256 a stage is 48 KiB and the C tile 64 KiB, so at most 3 stages fit in the
227 KiB of shared memory (3 x 48 + 64 = 208 KiB). More stages use TILE_N =
128 (32 KiB stages, a 32 KiB C tile: 6 x 32 + 32 = 224 KiB): halving the
tile rather than overlaying C on the ring, since the producer refills the
ring for the next tile while the consumers store this one's C. --tile-n
picks the width (default: 256 when it fits the stages, else 128).

With --cluster 2 (the default, as examples/gemm_bf16_ws.mlir) the blocks
run in clusters of two, which walk 256 x TILE_N tiles: block r of the
cluster computes rows [128 r, +128), so both need the same slice of B; each
loads half of it and multicasts it to both, and the consumers release a
stage in both blocks. --cluster-shape 1x2 pairs the blocks along N instead:
the cluster walks 128 x 2 TILE_N tiles and the blocks share A. --cluster 1
walks 128 x TILE_N tiles, one per block.

--dtype fp8 takes e4m3 inputs. wgmma reads 8-bit B only K-major, so B is
given transposed, as Bt (N x K), and the kernel passes the transposed view
of each Bt stage to wgmma; C = A * Bt^T.

Any shape. M, N and K need not be multiples of the tile: the last tiles
reach past the edges, where TMA loads zeros (which add nothing to the
products) and drops what the stores write. The grid of tiles is rounded up
to whole clusters. TMA needs every row of a global array it reads to start
16-byte aligned, so rows of A and B must be whole multiples of 16 bytes (K
a multiple of 8 for bf16, 16 for fp8); --b-layout nk takes B as Bt (N x K,
nn.Linear's weight), which works for any N; the default K x N B needs N to
be a multiple of 64 (wgmma's tiling of an N-major B splits N into
64-column tiles, which TMA can only fill whole). C's rows need not be
aligned (N = 50257): then the consumers store C from registers, each
element under a bounds check.

Split-K. With --split-k S (or "auto", which picks S from the shape: see
split_for) the K steps of every tile are divided among S work units, so a
shape with few tiles still fills the SMs. Each unit writes its f32 partial
tile to a workspace and a second kernel, the fix-up, sums the partials
and casts to bf16. --reduction deterministic (the default) gives each
split its own slice of an (S, M, N) workspace and sums them in split
order, so every run gives the same bits; --reduction atomic adds the
partials into one zeroed (M, N) workspace with TMA reductions, in whatever
order the units finish (less memory traffic, results that may differ in
the last bits between runs). Split-K units use 128 x 128 tiles and f32 C
stages. --stream-k splits the tiles' K steps evenly over the clusters
instead (segments of tiles, summed the same way: see the walkthrough).

    gemm_ws.py --m 512 --n 512 --k 512 --grid 8 --emulate
    gemm_ws.py --m 200 --n 136 --k 1000 --b-layout nk --grid 4 --emulate
    gemm_ws.py --m 256 --n 256 --k 4096 --split-k 4 --grid 16 --emulate
    gemm_ws.py --emit-mlir gemm_ws.mlir           (8192^3, for bench/gpu)
"""
from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Callable, NamedTuple, Sequence

import mosaic_gpu as mgpu

TILE_M = 128
HALF_M = TILE_M // 2  # the rows of one consumer
# Each stage row of A and B is 128 bytes wide (the 128-byte swizzle).
ROW_BYTES = 128
# Groups of 8 rows of cluster tiles, as examples/gemm_bf16_ws.mlir.
GROUP_M = 8
# A and B element types.
DTYPES = {"bf16": mgpu.bf16, "fp8": mgpu.f8e4m3fn}
# TMA needs each row of a global array to start 16-byte aligned.
ROW_ALIGNMENT = 16
# The SMs of an H100 or H200, which split_for fills.
SMS = 132
# The most K splits: the fix-up kernel keeps one f32 tile per split.
MAX_SPLIT_K = 8
REDUCTIONS = ("deterministic", "atomic")
# The fix-up kernel's tile and its 128 threads.
FIXUP_TILE = (64, 64)


class Config(NamedTuple):
    m: int
    n: int
    k: int
    stages: int = 3
    cluster: int = 2
    dtype: str = "bf16"
    grid: int = 132
    tile_n: int | None = None
    # With a cluster of 2: "m" (2x1, blocks share B) or "n" (1x2, share A).
    pair: str = "m"
    # "kn": B is K x N; "nk": B is given as Bt, N x K (always for fp8).
    b_layout: str = "kn"
    # K splits (1: none), and how their partial tiles are summed.
    split_k: int = 1
    reduction: str = "deterministic"
    # Stream-K: the tiles' K steps split evenly over the clusters.
    stream_k: bool = False
    # A fused epilogue: an Epilogue, or the name of one of EPILOGUES.
    epilogue: Epilogue | str | None = None


class Epilogue(NamedTuple):
    """A function applied to each f32 accumulator tile in registers before
    the store. ``function(acc, operands)`` returns the f32 tile to store;
    ``operands`` maps each name below to its values over the tile, f32 and
    broadcast to the tile's shape:

    - ``row_vectors``: (M,) f32 inputs, one value per row (a bias per
      output feature when C is transposed, a row scale);
    - ``column_vectors``: (N,) f32 inputs, one value per column (nn.Linear's
      bias);
    - ``residual``: an (M, N) input of the output's dtype, e.g. a skip
      connection, read through the C tile's shared memory.

    ``out`` is C's dtype: bf16, f16, f32 or e4m3 (fp8: rounded to nearest,
    saturating at +-448). With ``amax`` the kernel also records the
    largest |value| it stores (before the cast) in a (1,) bf16 output that
    starts at zero and that every tile max-reduces into with TMA: what an
    FP8 recipe needs for the next step's scale. bf16 because TMA's
    max-reduction takes f16 and bf16 only; its rounding to nearest may put
    it up to 2^-9 below the f32 amax.

    The epilogue's inputs follow A and B in this order: row vectors,
    column vectors, the residual. ``reference`` is the same computation
    in NumPy (float64), for the check. ``Config(epilogue=...)`` takes an
    Epilogue or the name of one of EPILOGUES."""
    function: Callable
    reference: Callable
    row_vectors: tuple = ()
    column_vectors: tuple = ()
    residual: str | None = None
    out: str = "bf16"
    amax: bool = False


def gelu_tanh(x):
    """GELU, tanh form (PyTorch's approximate='tanh')."""
    inner = (x + x * x * x * 0.044715) * 0.7978845608028654
    return x * 0.5 * (mgpu.tanh(inner) + 1.0)


def gelu_erf(x):
    """GELU, erf form (PyTorch's default)."""
    return x * 0.5 * (mgpu.erf(x * 0.7071067811865476) + 1.0)


def silu(x):
    return x / (mgpu.exp(-x) + 1.0)


def _numpy_gelu_tanh(x):
    import numpy as np
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def _numpy_gelu_erf(x):
    from math import erf
    import numpy as np
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def _numpy_silu(x):
    import numpy as np
    return x / (1 + np.exp(-x))


# Named epilogues for the command line, the tests and bench/gpu.
EPILOGUES = {
    "relu": Epilogue(lambda acc, ops: mgpu.maximum(acc, 0.0),
                     lambda acc, ops: acc.clip(min=0)),
    "gelu_tanh": Epilogue(lambda acc, ops: gelu_tanh(acc),
                          lambda acc, ops: _numpy_gelu_tanh(acc)),
    "gelu_erf": Epilogue(lambda acc, ops: gelu_erf(acc),
                         lambda acc, ops: _numpy_gelu_erf(acc)),
    "silu": Epilogue(lambda acc, ops: silu(acc), lambda acc, ops: _numpy_silu(acc)),
    "scale": Epilogue(lambda acc, ops: acc * 0.125, lambda acc, ops: acc * 0.125),
    # nn.Linear + GELU: a bias per column, then the activation.
    "bias_gelu_tanh": Epilogue(lambda acc, ops: gelu_tanh(acc + ops["bias"]),
                               lambda acc, ops: _numpy_gelu_tanh(acc + ops["bias"]),
                               column_vectors=("bias",)),
    "row_bias_relu": Epilogue(lambda acc, ops: mgpu.maximum(acc + ops["bias"], 0.0),
                              lambda acc, ops: (acc + ops["bias"]).clip(min=0),
                              row_vectors=("bias",)),
    "residual": Epilogue(lambda acc, ops: acc + ops["skip"],
                         lambda acc, ops: acc + ops["skip"], residual="skip"),
    "f16": Epilogue(lambda acc, ops: acc, lambda acc, ops: acc, out="f16"),
    "f32": Epilogue(lambda acc, ops: acc, lambda acc, ops: acc, out="f32"),
    # The amax an FP8 recipe scales the next layer's input by.
    "scale_amax": Epilogue(lambda acc, ops: acc * 0.25, lambda acc, ops: acc * 0.25,
                           amax=True),
    # FP8 output for the next layer: scaled into e4m3's range (448), its
    # amax recorded.
    "fp8_amax": Epilogue(lambda acc, ops: acc * 0.25, lambda acc, ops: acc * 0.25,
                         out="e4m3", amax=True),
}
OUT_DTYPES = {"bf16": mgpu.bf16, "f16": mgpu.f16, "f32": mgpu.f32, "e4m3": mgpu.f8e4m3fn}


def b_transposed(config: Config) -> bool:
    """Whether B is given as Bt (N x K): wgmma reads 8-bit B only K-major."""
    return config.dtype == "fp8" or config.b_layout == "nk"


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def split_for(m: int, n: int, k: int, dtype: str = "bf16", sms: int = SMS) -> int:
    """The K splits for a shape: none when its 128 x 256 tiles fill half
    the SMs; else the most splits whose 128 x 128 units still fit in one
    wave and keep at least 8 K steps each (fewer make the fix-up's traffic
    a large part of the work)."""
    tile_k = ROW_BYTES // DTYPES[dtype].itemsize
    if ceil_div(m, TILE_M) * ceil_div(n, 256) * 2 >= sms:
        return 1
    tiles = ceil_div(m, TILE_M) * ceil_div(n, 128)
    steps = ceil_div(k, tile_k)
    split = 1
    while (split * 2 <= MAX_SPLIT_K and tiles * split * 2 <= sms
           and steps // (split * 2) >= 8):
        split *= 2
    return split


def epilogue_of(config: Config) -> Epilogue | None:
    if isinstance(config.epilogue, str):
        return EPILOGUES[config.epilogue]
    return config.epilogue


def out_dtype(config: Config) -> mgpu.DType:
    """C's dtype: the epilogue's (bf16 without one)."""
    epilogue = epilogue_of(config)
    return OUT_DTYPES[epilogue.out] if epilogue else mgpu.bf16


def partials(config: Config) -> bool:
    """Whether the GEMM stores f32 partial tiles for a fix-up kernel to sum
    (split-K and stream-K)."""
    return config.split_k > 1 or config.stream_k


def c_dtype(config: Config) -> mgpu.DType:
    """What the GEMM kernel stores: C, or f32 partial tiles."""
    return mgpu.f32 if partials(config) else out_dtype(config)


def smem(config: Config, tile_n: int) -> list:
    """The A ring, the B ring (Bt's when transposed), the C halves."""
    dtype = DTYPES[config.dtype]
    tile_k = ROW_BYTES // dtype.itemsize
    b_stage = (tile_n, tile_k) if b_transposed(config) else (tile_k, tile_n)
    buffers = [mgpu.SmemBuffer((config.stages, 2, HALF_M, tile_k), dtype),
               mgpu.SmemBuffer((config.stages, *b_stage), dtype),
               mgpu.SmemBuffer((2, HALF_M, tile_n), c_dtype(config))]
    epilogue = epilogue_of(config)
    if epilogue and not partials(config):
        # Per consumer: its row and column vectors' slices, its amax, and
        # a barrier for the loads.
        buffers += [mgpu.SmemBuffer((2, max(1, len(epilogue.row_vectors)), HALF_M), "f32"),
                    mgpu.SmemBuffer((2, max(1, len(epilogue.column_vectors)), tile_n), "f32"),
                    mgpu.SmemBuffer((2, 64), "bf16"), mgpu.Barriers(2)]
    return buffers


def smem_needed(config: Config, tile_n: int) -> int:
    pipeline = mgpu.WarpSpecializedPipeline(stages=config.stages)
    return mgpu.smem_bytes(smem(config, tile_n) + pipeline.barriers)


def tile_width(config: Config) -> int:
    """TILE_N: --tile-n, or the widest tile whose stages fit (128 with
    split-K and stream-K, whose C stages are f32)."""
    if config.tile_n is not None:
        widths = [config.tile_n]
    else:
        widths = [128] if partials(config) else [256, 128]
    for tile_n in widths:
        if smem_needed(config, tile_n) <= mgpu.MAX_SMEM_BYTES:
            return tile_n
    tile_n = widths[-1]
    stage = (TILE_M + tile_n) * ROW_BYTES
    c_tile = TILE_M * tile_n * c_dtype(config).itemsize
    raise ValueError(
        f"{config.stages} stages of 128 x {tile_n} tiles need "
        f"{smem_needed(config, tile_n) / 1024:.1f} KiB of shared memory "
        f"({config.stages} x {stage // 1024} KiB stages + a {c_tile // 1024} KiB "
        f"{c_dtype(config)} C tile + barriers), more than the "
        f"{mgpu.MAX_SMEM_BYTES // 1024} KiB of a block"
        + ("; use --tile-n 128 or fewer stages" if tile_n == 256 else "; use fewer stages"))


def direct_c(config: Config) -> bool:
    """Whether C's rows are not 16-byte aligned, so that TMA cannot store
    them: the consumers store C from registers instead, each element under
    a bounds check (``vector_store`` with ``valid``)."""
    return config.n * out_dtype(config).itemsize % ROW_ALIGNMENT != 0


def check_rows(config: Config) -> None:
    """TMA needs every row of A, B (and of an epilogue's residual) to
    start 16-byte aligned; C's rows need not be, and split-K's workspace
    is padded to them."""
    dtype = DTYPES[config.dtype]
    b_rows = ("Bt", "K", config.k) if b_transposed(config) else ("B", "N", config.n)
    rows = [("A", "K", config.k, dtype.itemsize), (*b_rows, dtype.itemsize)]
    epilogue = epilogue_of(config)
    if epilogue and epilogue.residual:
        rows.append(("the residual", "N", config.n, out_dtype(config).itemsize))
    for array, name, size, itemsize in rows:
        if size * itemsize % ROW_ALIGNMENT:
            multiple = ROW_ALIGNMENT // itemsize
            raise ValueError(
                f"--{name.lower()} {size}: a row of {array} is {size * itemsize} bytes, but TMA "
                f"needs rows that start {ROW_ALIGNMENT}-byte aligned, so {name} must be a "
                f"multiple of {multiple} here")


def check_config(config: Config) -> int:
    """Raises ValueError for a configuration the kernel cannot run; returns
    TILE_N."""
    if config.dtype not in DTYPES:
        raise ValueError(f"--dtype must be one of {', '.join(DTYPES)}, got {config.dtype!r}")
    if not 2 <= config.stages <= 6:
        raise ValueError(f"--stages must be 2 to 6, got {config.stages}")
    if config.cluster not in (1, 2):
        raise ValueError(f"--cluster must be 1 or 2, got {config.cluster}")
    if config.tile_n not in (None, 128, 256):
        raise ValueError(f"--tile-n must be 128 or 256, got {config.tile_n}")
    if config.pair not in ("m", "n"):
        raise ValueError(f"--cluster-shape must be 2x1 or 1x2, got {config.pair!r}")
    if config.grid <= 0 or config.grid % config.cluster:
        raise ValueError(f"--grid must be a positive multiple of the cluster "
                         f"({config.cluster}), got {config.grid}")
    if config.b_layout not in ("kn", "nk"):
        raise ValueError(f"--b-layout must be kn or nk, got {config.b_layout!r}")
    if config.dtype == "fp8" and config.b_layout != "nk":
        raise ValueError("--dtype fp8 takes B as Bt (N x K): wgmma reads 8-bit B only "
                         "K-major; pass --b-layout nk")
    if not 1 <= config.split_k <= MAX_SPLIT_K:
        raise ValueError(f"--split-k must be 1 to {MAX_SPLIT_K} or auto, got {config.split_k}")
    check_epilogue(config.epilogue)
    if config.reduction not in REDUCTIONS:
        raise ValueError(f"--reduction must be one of {', '.join(REDUCTIONS)}, "
                         f"got {config.reduction!r}")
    for flag, size in (("--m", config.m), ("--n", config.n), ("--k", config.k)):
        if size <= 0:
            raise ValueError(f"{flag} must be positive, got {size}")
    check_rows(config)
    tile_n = tile_width(config)
    if not b_transposed(config) and config.n % 64:
        raise ValueError(f"--n {config.n} must be a multiple of 64 when B is K x N (wgmma tiles "
                         "an N-major B by 64 columns, which TMA fills only whole); "
                         "--b-layout nk (B given as N x K) takes any N")
    tile_k = ROW_BYTES // DTYPES[config.dtype].itemsize
    steps = ceil_div(config.k, tile_k)
    if config.stream_k and config.split_k > 1:
        raise ValueError("--stream-k and --split-k are two ways to split K: give one")
    if config.split_k > steps:
        raise ValueError(f"--split-k {config.split_k} is more than the {steps} K steps of "
                         f"{tile_k} (K = {config.k})")
    return tile_n


def check_epilogue(epilogue: Epilogue | str | None) -> None:
    if epilogue is None:
        return
    if isinstance(epilogue, str):
        if epilogue not in EPILOGUES:
            raise ValueError(f"--epilogue must be one of {', '.join(EPILOGUES)}, "
                             f"got {epilogue!r}")
        return
    if not isinstance(epilogue, Epilogue):
        raise TypeError(f"`epilogue` must be an Epilogue or the name of one of EPILOGUES, "
                        f"got {epilogue!r}")
    for name in ("function", "reference"):
        if not callable(getattr(epilogue, name)):
            raise TypeError(f"the epilogue's `{name}` must be callable, "
                            f"got {getattr(epilogue, name)!r}")
    if epilogue.out not in OUT_DTYPES:
        raise ValueError(f"the epilogue's `out` must be one of {', '.join(OUT_DTYPES)}, "
                         f"got {epilogue.out!r}")
    names = list(epilogue.row_vectors) + list(epilogue.column_vectors)
    if epilogue.residual is not None:
        names.append(epilogue.residual)
    if len(set(names)) != len(names) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"the epilogue's operands must have distinct str names, got {names}")


def tile_grid(config: Config, tile_n: int) -> tuple[int, int]:
    """The output tiles, rounded up to whole clusters."""
    tiles_m, tiles_n = ceil_div(config.m, TILE_M), ceil_div(config.n, tile_n)
    if config.pair == "m":
        tiles_m = ceil_div(tiles_m, config.cluster) * config.cluster
    else:
        tiles_n = ceil_div(tiles_n, config.cluster) * config.cluster
    return tiles_m, tiles_n


def panels(config: Config, tile_n: int) -> bool:
    """Whether C's tile is stored as panels one swizzle row wide (64 bf16
    or 32 f32 columns): a tiled view of C needs M a multiple of 8 rows and
    N of the swizzle's width; otherwise each panel is its own TMA box,
    which TMA clips at the edges."""
    width = ROW_BYTES // c_dtype(config).itemsize
    columns = workspace_width(config) if partials(config) else config.n
    return config.m % 8 != 0 or columns % width != 0


def build(config: Config) -> mgpu.Kernel:
    """The GEMM kernel for ``config``; ValueError for a bad one. With
    split-K or stream-K it stores f32 partial tiles into a workspace, its
    output, which ``build_fixup``'s kernel sums (``SplitGemm`` runs both)."""
    tile_n = check_config(config)
    dtype = DTYPES[config.dtype]
    tile_k = ROW_BYTES // dtype.itemsize
    transposed = b_transposed(config)
    m, n, k = config.m, config.n, config.k
    split = config.split_k
    stream_k = config.stream_k
    pipeline = mgpu.WarpSpecializedPipeline(stages=config.stages, consumers=2,
                                            cluster=config.cluster, pair_along=config.pair)
    b_shape = (n, k) if transposed else (k, n)
    tiles_m, tiles_n = tile_grid(config, tile_n)
    steps = ceil_div(k, tile_k)
    split_steps = ceil_div(steps, split)
    epilogue = None if partials(config) else epilogue_of(config)  # else the fix-up's
    extra_inputs = epilogue_specs(config) if epilogue else []
    if not partials(config):
        outputs = [((m, n), c_dtype(config))]
        if epilogue and epilogue.amax:
            outputs.append(((1,), "bf16"))
    elif config.reduction == "deterministic":
        outputs = [((workspace_parts(config), m, workspace_width(config)), "f32")]
    else:
        outputs = [((m, workspace_width(config)), "f32")]
    panel = [mgpu.Tile((HALF_M, ROW_BYTES // c_dtype(config).itemsize)), mgpu.Swizzle(ROW_BYTES)]

    @mgpu.kernel(grid=(config.grid, 1, 1), block=pipeline.block,
                 cluster=pipeline.cluster_shape,
                 inputs=[((m, k), dtype), (b_shape, dtype)] + extra_inputs, outputs=outputs,
                 smem=smem(config, tile_n) + pipeline.barriers,
                 name=("gemm_ws_stream_k" if stream_k else
                       "gemm_ws_split_k" if split > 1 else "gemm_ws"))
    def gemm(a, b, *refs):
        extras, refs = refs[:len(extra_inputs)], refs[len(extra_inputs):]
        c, refs = refs[0], refs[1:]
        amax = None
        if epilogue and epilogue.amax:
            amax, refs = refs[0], refs[1:]
        a_ring, b_ring, c_halves, refs = refs[0], refs[1], refs[2], refs[3:]
        if epilogue:
            row_slices, column_slices, amax_rows, loaded, refs = (*refs[:4], refs[4:])
        extras = list(extras)
        full, empty = refs
        # The blocks of a cluster share B (2x1) or A (1x2): each loads its
        # part and multicasts it.
        shared = "b" if config.pair == "m" else "a"
        a_collective = "x" if config.cluster > 1 and shared == "a" else ()
        b_collective = "x" if config.cluster > 1 and shared == "b" else ()
        if panels(config, tile_n):
            c_halves = mgpu.with_transforms(c_halves, panel)

        def split_and_row(tile):
            """The tile's partial (its split, or its stream-K segment) and
            its row of C's tiles. With split-K the tile rows of split s are
            rows s * tiles_m ... of the pipeline's grid of tiles."""
            if stream_k:
                return tile.part, tile.m
            if split == 1:
                return None, tile.m
            return tile.m // tiles_m, tile.m % tiles_m

        def fetch(tile, stage, step, barrier):
            part, row = split_and_row(tile)
            if split > 1:
                step = part * split_steps + step
            k0 = step.astype("i32") * tile_k
            m0 = row.astype("i32") * TILE_M
            n0 = tile.n.astype("i32") * tile_n
            for half in range(2):
                mgpu.async_load(a, a_ring[stage, half], barrier, indices=[m0 + half * HALF_M, k0],
                                collective=a_collective)
            mgpu.async_load(b, b_ring[stage], barrier, indices=[n0, k0] if transposed else [k0, n0],
                            collective=b_collective)

        def compute(tile, consumer, stage, step, acc):
            b_stage = b_ring[stage].T if transposed else b_ring[stage]  # K-major
            return mgpu.wgmma(acc, a_ring[stage, consumer], b_stage, async_=True)

        def epilogue_(tile, consumer, acc):
            # The previous tile's store read this buffer during the main
            # loop; the new one reads it during the next tile's.
            c_half = c_halves[consumer]
            part, row = split_and_row(tile)
            m0 = (row * TILE_M + consumer * HALF_M).astype("i32")
            n0 = tile.n.astype("i32") * tile_n
            mgpu.async_store_wait(0)
            if epilogue:
                buffers = EpilogueBuffers(extras, row_slices[consumer], column_slices[consumer],
                                          amax_rows[consumer, mgpu.ds(0, 8)], amax,
                                          loaded[consumer])
                # The barrier's phase: this consumer's tiles so far.
                count = tile.first_step // steps
                acc = apply_epilogue(epilogue, acc, c_half, buffers,
                                     count.astype("i64").astype("i1"), m0, n0)
            result = acc.astype(c_dtype(config))
            if direct_c(config) and not partials(config):
                # Rows TMA cannot store: from registers, inside C only.
                mgpu.vector_store(result, c[mgpu.ds(m0, HALF_M), mgpu.ds(n0, tile_n)],
                                  valid=[m - m0, n - n0])
                return
            mgpu.vector_store(result, c_half)
            if not partials(config):
                mgpu.async_store(c_half, c, indices=[m0, n0], defer_wait=True)
            elif config.reduction == "deterministic":
                mgpu.async_store(c_half, c, indices=[part.astype("i32"), m0, n0],
                                 slice_lengths=[-1, HALF_M, tile_n], defer_wait=True)
            else:
                mgpu.async_store(c_half, c, indices=[m0, n0], defer_wait=True, reduction="add")

        pipeline.emit(full, empty, rings=[a_ring, b_ring], tiles=(tiles_m * split, tiles_n),
                      steps=split_steps if split > 1 else steps, fetch=fetch, compute=compute,
                      init=lambda: mgpu.constant(0.0, "f32", (HALF_M, tile_n)),
                      epilogue=epilogue_,
                      group=GROUP_M * (config.cluster if config.pair == "m" else 1),
                      stream_k=stream_k)

    return gemm


def workspace_width(config: Config) -> int:
    """The workspace's row length: N rounded up to 4 f32 (16 bytes), so
    that TMA can store and load its rows whatever N is. The columns past N
    hold zeros (the products of B's rows past N, which TMA fills with
    zeros) and are never stored into C."""
    return ceil_div(config.n, ROW_ALIGNMENT // 4) * (ROW_ALIGNMENT // 4)


def workspace_parts(config: Config) -> int:
    """The f32 partial tiles the deterministic fix-up sums per output tile:
    the splits, or the most stream-K segments of one tile (a tile with
    fewer leaves the rest of its slots at zero, which the host clears)."""
    if not config.stream_k:
        return config.split_k
    tile_n = tile_width(config)
    tiles_m, tiles_n = tile_grid(config, tile_n)
    steps = ceil_div(config.k, ROW_BYTES // DTYPES[config.dtype].itemsize)
    return mgpu.stream_k_parts(tiles_m * tiles_n // config.cluster, steps,
                               config.grid // config.cluster)


def epilogue_specs(config: Config) -> list:
    """The epilogue's inputs as (shape, dtype): row vectors, column
    vectors, the residual."""
    epilogue = epilogue_of(config)
    return ([((config.m,), "f32")] * len(epilogue.row_vectors)
            + [((config.n,), "f32")] * len(epilogue.column_vectors)
            + ([((config.m, config.n), out_dtype(config))] if epilogue.residual else []))


def build_fixup(config: Config) -> mgpu.Kernel:
    """Split-K's and stream-K's second kernel: sums the f32 partial tiles
    of the workspace (deterministic: its slices in order, split by split
    or segment by segment; atomic: the one sum),
    applies the epilogue if there is one, and stores C. One warpgroup per
    64 x 64 tile of C; every load is issued before the first is summed.
    Its inputs: the workspace, then the epilogue's; its outputs: C (and
    the amax)."""
    check_config(config)
    m, n = config.m, config.n
    deterministic = config.reduction == "deterministic"
    parts = workspace_parts(config) if deterministic else 1
    width = workspace_width(config)
    workspace = (parts, m, width) if deterministic else (m, width)
    rows, columns = FIXUP_TILE
    tiles_n = ceil_div(n, columns)
    grid = ceil_div(m, rows) * tiles_n
    epilogue = epilogue_of(config)
    extra_inputs = epilogue_specs(config) if epilogue else []
    outputs = [((m, n), out_dtype(config))]
    scratch = [mgpu.SmemBuffer((parts, rows, columns), "f32"),
               mgpu.SmemBuffer((rows, columns), out_dtype(config)), mgpu.Barriers(parts)]
    if epilogue:
        if epilogue.amax:
            outputs.append(((1,), "bf16"))
        scratch += [mgpu.SmemBuffer((max(1, len(epilogue.row_vectors)), rows), "f32"),
                    mgpu.SmemBuffer((max(1, len(epilogue.column_vectors)), columns), "f32"),
                    mgpu.SmemBuffer((64,), "bf16"), mgpu.Barriers(1)]
    # Plain row-major tiles: the fix-up is bound by memory, not by the
    # bank conflicts a swizzle would remove.
    plain = []

    @mgpu.kernel(grid=(grid, 1, 1), block=(128, 1, 1),
                 inputs=[(workspace, "f32")] + extra_inputs, outputs=outputs, smem=scratch,
                 name="gemm_ws_split_k_fixup")
    def fixup(partials, *refs):
        extras, refs = list(refs[:len(extra_inputs)]), refs[len(extra_inputs):]
        c, refs = refs[0], refs[1:]
        amax = None
        if epilogue and epilogue.amax:
            amax, refs = refs[0], refs[1:]
        partial_tiles, c_tile, loaded = refs[:3]
        partial_tiles = mgpu.with_transforms(partial_tiles, plain)
        c_tile = mgpu.with_transforms(c_tile, plain)
        tile = mgpu.block_id("x")
        m0 = (tile // tiles_n * rows).astype("i32")
        n0 = (tile % tiles_n * columns).astype("i32")
        for part in range(parts):
            mgpu.arrive_expect_tx(loaded[part], rows * columns * 4)
            if deterministic:
                mgpu.async_load(partials, partial_tiles[part], loaded[part],
                                indices=[part, m0, n0], slice_lengths=[-1, rows, columns])
            else:
                mgpu.async_load(partials, partial_tiles[part], loaded[part], indices=[m0, n0])
        total = None
        for part in range(parts):  # in split order: the same sum every run
            mgpu.wait(loaded[part])
            # In the accumulator's layout, which the epilogue's operands
            # are loaded in.
            value = mgpu.layout_cast(mgpu.vector_load(partial_tiles[part]), mgpu.WGMMA)
            total = value if total is None else total + value
        if epilogue:
            row_slices, column_slices, amax_copies, epilogue_loaded = refs[3:]
            buffers = EpilogueBuffers(extras, row_slices, column_slices,
                                      amax_copies[mgpu.ds(0, 8)], amax, epilogue_loaded[0])
            total = apply_epilogue(epilogue, total, c_tile, buffers, False, m0, n0)
        if direct_c(config):  # rows TMA cannot store
            mgpu.vector_store(total.astype(out_dtype(config)),
                              c[mgpu.ds(m0, rows), mgpu.ds(n0, columns)],
                              valid=[m - m0, n - n0])
            return
        mgpu.vector_store(total.astype(out_dtype(config)), c_tile)
        mgpu.async_store(c_tile, c, indices=[m0, n0])

    return fixup


class SplitGemm:
    """The two kernels of a split-K or stream-K GEMM, called as one:
    ``SplitGemm(config)(a, b, *epilogue_inputs, backend=...)`` returns C,
    or (C, amax) for an epilogue that records it."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.gemm = build(config)
        self.fixup = build_fixup(config)

    def __call__(self, a, b, *extras, backend: str | None = None):
        import numpy as np
        config = self.config
        if config.reduction == "atomic":
            # The units add into it: it starts at zero.
            workspace = np.zeros((config.m, workspace_width(config)), np.float32)
            self.gemm.launch(a, b, workspace, backend=backend)
        elif config.stream_k:
            # Slots past a tile's segments stay zero.
            workspace = np.zeros((workspace_parts(config), config.m, workspace_width(config)),
                                 np.float32)
            self.gemm.launch(a, b, workspace, backend=backend)
        else:
            workspace = self.gemm.launch(a, b, backend=backend)
        epilogue = epilogue_of(config)
        if epilogue and epilogue.amax:
            c = np.empty((config.m, config.n), out_dtype(config).numpy)
            amax = np.zeros(1, mgpu.bf16.numpy)  # the tiles max-reduce into it
            self.fixup.launch(workspace, *extras, c, amax, backend=backend)
            return c, amax
        return self.fixup.launch(workspace, *extras, backend=backend)


def inputs(config: Config, seed: int = 0):
    """Random A and B (Bt when transposed) as NumPy arrays of the input
    dtype."""
    import numpy as np
    numpy_dtype = DTYPES[config.dtype].numpy
    if numpy_dtype is None:
        raise RuntimeError("bf16 and fp8 arrays need the ml_dtypes package")
    rng = np.random.default_rng(seed)
    b_shape = (config.n, config.k) if b_transposed(config) else (config.k, config.n)
    a = rng.standard_normal((config.m, config.k), dtype=np.float32).astype(numpy_dtype)
    b = rng.standard_normal(b_shape, dtype=np.float32).astype(numpy_dtype)
    return a, b


# The autotuner's candidates: tile width, stages, cluster shape. Split-K is
# not among them (its two kernels are not one Kernel to time): split_for
# chooses it, and --split-k overrides.
TUNING_CONFIGS = [mgpu.Config(tile_n=tile_n, stages=stages, cluster=cluster, pair=pair)
                  for tile_n in (256, 128) for stages in (3, 4, 5, 6)
                  for cluster, pair in ((2, "m"), (2, "n"), (1, "m"))]
# Shipped choices for the benchmark shapes (bench/gpu), keyed as report()
# prints keys. They come from the heuristic below, not from timings: no GPU
# has tuned them yet.
TUNED_DEFAULTS = pathlib.Path(__file__).with_name("gemm_ws_tuned.json")


def tile_fill(config: mgpu.Config, kernel: mgpu.Kernel) -> tuple:
    """The heuristic where nothing is timed, higher first: how evenly the
    output tiles spread over the persistent blocks' waves (the last wave's
    idle blocks are lost work), then the wider tile (half the B traffic per
    output), then clusters (multicast halves one operand's loads), then
    the fewer stages that still hide the loads (3 at 256 wide, 4 at 128)."""
    (m, n), _ = kernel.outputs[0]
    cluster_rows = TILE_M * (config.cluster if config.pair == "m" else 1)
    cluster_columns = config.tile_n * (config.cluster if config.pair == "n" else 1)
    units = ceil_div(m, cluster_rows) * ceil_div(n, cluster_columns)
    clusters = kernel.grid[0] // config.cluster
    fill = units / (ceil_div(units, clusters) * clusters)
    enough = 3 if config.tile_n == 256 else 4
    return (round(fill, 3), config.tile_n, config.cluster, -abs(config.stages - enough))


def _tuning_smem(config: mgpu.Config, a, b) -> int:
    dtype = "fp8" if a.dtype.bitwidth == 8 else "bf16"
    return smem_needed(Config(1, 1, 1, stages=config.stages, dtype=dtype), config.tile_n)


@mgpu.autotune(configs=TUNING_CONFIGS, smem=_tuning_smem, heuristic=tile_fill,
               defaults=str(TUNED_DEFAULTS) if TUNED_DEFAULTS.exists() else None,
               name="gemm_ws")
def tuned(config: mgpu.Config, a, b) -> mgpu.Kernel:
    """gemm_ws for A (M x K) and B (K x N, or Bt N x K for fp8), with the
    configuration the autotuner picks per shape: ``tuned(a, b)`` runs it,
    ``tuned.report(a, b)`` says what it chose and why."""
    fp8 = a.dtype.bitwidth == 8
    (m, k), n = a.shape, (b.shape[0] if fp8 else b.shape[1])
    return build(Config(m, n, k, dtype="fp8" if fp8 else "bf16",
                        b_layout="nk" if fp8 else "kn", **config.kwargs))


class EpilogueBuffers(NamedTuple):
    """Where one warpgroup's epilogue finds its operands: the epilogue's
    global inputs, its shared-memory slices of them (``rows``: one row of
    the tile's rows per row vector; ``columns``: one of its columns per
    column vector), 8 bf16 for the amax and the amax output, and the
    barrier the loads complete on."""
    extras: Sequence
    rows: object
    columns: object
    amax_copies: object
    amax: object
    barrier: object


def apply_epilogue(epilogue: Epilogue, acc, c_tile, buffers: EpilogueBuffers, parity,
                   m0, n0):
    """The epilogue's function of the f32 tile ``acc`` (in the WGMMA
    layout), whose first element is C's (m0, n0): its operands loaded by
    TMA (zeros past the edges), the residual through ``c_tile``, which
    must not be in use; ``parity`` is the barrier's phase. Records the
    amax."""
    rows, columns = acc.shape
    vectors = len(epilogue.row_vectors), len(epilogue.column_vectors)
    total = (vectors[0] * rows + vectors[1] * columns) * 4
    if epilogue.residual:
        total += rows * columns * c_tile.dtype.itemsize
    mgpu.arrive_expect_tx(buffers.barrier, total)
    for i in range(vectors[0]):
        mgpu.async_load(buffers.extras[i], buffers.rows[i], buffers.barrier, indices=[m0])
    for i in range(vectors[1]):
        mgpu.async_load(buffers.extras[vectors[0] + i], buffers.columns[i], buffers.barrier,
                        indices=[n0])
    if epilogue.residual:
        mgpu.async_load(buffers.extras[sum(vectors)], c_tile, buffers.barrier,
                        indices=[m0, n0])
    mgpu.wait(buffers.barrier, parity)
    operands = {}
    # Loaded straight into the accumulator's row and column layouts, so
    # the broadcasts move no data.
    for i, name in enumerate(epilogue.row_vectors):
        values = mgpu.layout_cast(mgpu.vector_load(buffers.rows[i]), mgpu.WGMMA_ROW)
        operands[name] = mgpu.broadcast_in_dim(values, acc.shape, [0])
    for i, name in enumerate(epilogue.column_vectors):
        values = mgpu.layout_cast(mgpu.vector_load(buffers.columns[i]), mgpu.WGMMA_COLUMN)
        operands[name] = mgpu.broadcast_in_dim(values, acc.shape, [1])
    if epilogue.residual:
        operands[epilogue.residual] = mgpu.vector_load(c_tile).astype("f32")
    result = epilogue.function(acc, operands)
    if epilogue.amax:
        # The rows' maxima, then their maximum down each column of a
        # broadcast: every thread holds the tile's amax. One TMA
        # max-reduction of a row of 8 copies, clipped to the (1,) output,
        # folds it into the kernel's.
        rows_max = mgpu.absolute(result).reduce("max", 1)
        largest = mgpu.broadcast_in_dim(rows_max, (rows, 8), [0]).reduce("max", 0)
        mgpu.vector_store(largest.astype("bf16"), buffers.amax_copies)
        mgpu.async_store(buffers.amax_copies, buffers.amax, indices=[0], reduction="max")
    return result


def epilogue_inputs(config: Config, seed: int = 0) -> list:
    """The epilogue's inputs, in the kernel's order: row vectors, column
    vectors, the residual."""
    import numpy as np
    epilogue = epilogue_of(config)
    if epilogue is None:
        return []
    rng = np.random.default_rng(seed + 1)
    arrays = [rng.standard_normal(config.m, dtype=np.float32) for _ in epilogue.row_vectors]
    arrays += [rng.standard_normal(config.n, dtype=np.float32)
               for _ in epilogue.column_vectors]
    if epilogue.residual:
        scale = np.sqrt(config.k)  # the accumulator's scale
        arrays.append((rng.standard_normal((config.m, config.n), dtype=np.float32) * scale)
                      .astype(out_dtype(config).numpy))
    return arrays


def reference(config: Config, a, b, extras=()):
    """C in float64: A * B, then the epilogue."""
    import numpy as np
    acc = a.astype(np.float64) @ (b.astype(np.float64).T if b_transposed(config)
                                  else b.astype(np.float64))
    epilogue = epilogue_of(config)
    if epilogue is None:
        return acc
    names = list(epilogue.row_vectors) + list(epilogue.column_vectors)
    operands = {}
    rows = len(epilogue.row_vectors)
    for i, (name, array) in enumerate(zip(names, extras)):
        array = array.astype(np.float64)
        operands[name] = array[:, None] if i < rows else array[None, :]  # row or column
    if epilogue.residual:
        operands[epilogue.residual] = extras[-1].astype(np.float64)
    return epilogue.reference(acc, operands)


# The unit roundoff of each output dtype: C may be off by it (twice is
# allowed) from the rounding alone.
ROUNDOFF = {"bf16": 2 ** -8, "f16": 2 ** -11, "f32": 2 ** -23, "e4m3": 2 ** -4}


def check(config: Config, a, b, c, extras=(), amax=None) -> tuple[bool, str]:
    """Compares C with A * B computed by NumPy in float64. Each element may
    be off by the bf16 rounding of C (at most 2^-8 of its value, bf16's
    unit roundoff; twice that is allowed) plus an absolute term for the
    accumulation order and precision, relative to the output's RMS: 2^-8
    for bf16 inputs, 2^-5 for fp8 (the tensor cores accumulate fp8 products
    with fewer bits than f32). A K step missing or read twice is off by
    about sqrt(tile_k / K) of the RMS, far more."""
    import numpy as np
    expected = reference(config, a, b, extras)
    out = c.astype(np.float64)
    # The absolute term scales with the accumulator, before the epilogue
    # (whose functions change values by at most about their own size).
    acc = reference(config._replace(epilogue=None), a, b)
    rms = float(np.sqrt(np.mean(acc ** 2))) if acc.size else 0.0
    absolute = (2 ** -5 if config.dtype == "fp8" else 2 ** -8) * rms
    error = np.abs(out - expected)
    epilogue = epilogue_of(config)
    roundoff = ROUNDOFF[epilogue.out] if epilogue else ROUNDOFF["bf16"]
    allowed = 2 * roundoff * np.abs(expected) + absolute
    bad = ~(error <= allowed)  # NaN fails
    worst = float(np.nanmax(error / allowed)) if error.size else 0.0
    summary = (f"max |C - ref| {np.nanmax(error):.3g}, {worst:.2f} of the tolerance; "
               f"{int(bad.sum())} of {out.size} elements outside it")
    if bad.any():
        row, col = np.argwhere(bad)[0]
        summary += (f"; first at ({row}, {col}): {out[row, col]:.6g} vs "
                    f"{expected[row, col]:.6g}")
    passed = not bad.any()
    if epilogue and epilogue.amax:
        # The recorded amax is a bf16 max of the tiles' bf16 amaxes.
        truth = float(np.abs(expected).max())
        recorded = float(np.asarray(amax, np.float64).reshape(-1)[0])
        amax_ok = abs(recorded - truth) <= 2 * ROUNDOFF["bf16"] * truth + absolute
        summary += f"; amax {recorded:.6g} vs {truth:.6g}{'' if amax_ok else ' (WRONG)'}"
        passed = passed and amax_ok
    return passed, summary


def parse(argv: Sequence[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="gemm_ws.py", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--m", type=int, default=8192)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--k", type=int, default=8192)
    parser.add_argument("--stages", type=int, default=3, help="2 to 6 (default 3)")
    parser.add_argument("--cluster", type=int, default=2,
                        help="blocks per cluster, 1 or 2 (default 2: B is multicast)")
    parser.add_argument("--cluster-shape", default="2x1", choices=["2x1", "1x2"],
                        help="with --cluster 2: 2x1 pairs tile rows and shares B (default), "
                             "1x2 pairs tile columns and shares A")
    parser.add_argument("--dtype", default="bf16", choices=list(DTYPES))
    parser.add_argument("--grid", type=int, default=132,
                        help="persistent blocks (default 132, one per H100 SM)")
    parser.add_argument("--tile-n", type=int, default=None,
                        help="tile width, 128 or 256 (default: 256 when the stages fit)")
    parser.add_argument("--b-layout", default=None, choices=["kn", "nk"],
                        help="kn: B is K x N (the default for bf16); nk: B is given as Bt, "
                             "N x K (any N; the only layout for fp8)")
    parser.add_argument("--split-k", default="1",
                        help="K splits, 1 to 8, or auto (split_for's choice for the shape); "
                             "default 1")
    parser.add_argument("--stream-k", action="store_true",
                        help="split the tiles' K steps evenly over the blocks (stream-K), "
                             "their partial tiles summed as --reduction says")
    parser.add_argument("--reduction", default="deterministic", choices=list(REDUCTIONS),
                        help="how split-K sums its partial tiles: deterministic (the default; "
                             "in split order) or atomic (TMA reduce-add, any order)")
    parser.add_argument("--autotune", action="store_true",
                        help="let mosaic_gpu.autotune pick --tile-n, --stages and the cluster "
                             "for the shape (timed on a GPU, by a heuristic on the emulator), "
                             "and print what it chose and why")
    parser.add_argument("--epilogue", default=None, choices=list(EPILOGUES),
                        help="a fused epilogue (see EPILOGUES)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--emulate", action="store_true",
                        help="run on the PTX emulator instead of a GPU")
    parser.add_argument("--emit-mlir", metavar="PATH",
                        help="write the kernel's MLIR to PATH and exit")
    return parser, parser.parse_args(argv)


def run_tuned(parser: argparse.ArgumentParser, args: argparse.Namespace, b_layout: str,
              split: int) -> int:
    """--autotune: the tuned kernel on the shape, checked, and the report."""
    if (split > 1 or args.stream_k or args.epilogue
            or b_layout != ("nk" if args.dtype == "fp8" else "kn")):
        parser.error("--autotune tunes the plain GEMM: without --split-k, --stream-k, "
                     "--epilogue and --b-layout")
    config = Config(args.m, args.n, args.k, dtype=args.dtype, b_layout=b_layout)
    try:
        check_config(config._replace(stages=3, cluster=1, tile_n=128))
    except ValueError as error:
        parser.error(str(error))
    a, b = inputs(config, args.seed)
    backend = "emulator" if args.emulate else "cuda"
    try:
        c = tuned(a, b, backend=backend)
    except RuntimeError as error:
        print(f"gemm_ws --autotune {args.m}x{args.n}x{args.k}: FAIL; the launch failed: {error}")
        return 1
    print(tuned.report(a, b, backend=backend))
    chosen = tuned.best(a, b, backend=backend)
    passed, summary = check(config._replace(**chosen.kwargs), a, b, c)
    print(f"gemm_ws {config.dtype} {config.m}x{config.n}x{config.k}, tuned {chosen}, on the "
          f"{backend}: {'PASS' if passed else 'FAIL'}; {summary}")
    return 0 if passed else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser, args = parse(argv)
    if args.split_k == "auto":
        split = split_for(args.m, args.n, args.k, args.dtype)
    elif args.split_k.isdigit():
        split = int(args.split_k)
    else:
        parser.error(f"--split-k must be 1 to {MAX_SPLIT_K} or auto, got {args.split_k!r}")
    b_layout = args.b_layout or ("nk" if args.dtype == "fp8" else "kn")
    if args.autotune:
        return run_tuned(parser, args, b_layout, split)
    config = Config(args.m, args.n, args.k, args.stages, args.cluster, args.dtype, args.grid,
                    args.tile_n, "m" if args.cluster_shape == "2x1" else "n", b_layout, split,
                    args.reduction, stream_k=args.stream_k, epilogue=args.epilogue)
    try:
        gemm = SplitGemm(config) if partials(config) else build(config)
    except ValueError as error:
        parser.error(str(error))
    tile_n = tile_width(config)
    if args.emit_mlir:
        kernels = [gemm.gemm, gemm.fixup] if partials(config) else [gemm]
        with open(args.emit_mlir, "w") as out:
            out.write(str(kernels[0].module))
        written = [args.emit_mlir]
        if partials(config):  # the fix-up kernel next to it
            fixup_path = args.emit_mlir.replace(".mlir", "") + ".fixup.mlir"
            with open(fixup_path, "w") as out:
                out.write(str(kernels[1].module))
            written.append(fixup_path)
        print(f"wrote {' and '.join(written)}")
        return 0
    a, b = inputs(config, args.seed)
    extras = epilogue_inputs(config, args.seed)
    backend = "emulator" if args.emulate else "cuda"
    run = (f"gemm_ws {config.dtype} {config.m}x{config.n}x{config.k}, 128x{tile_n} tiles, "
           f"{config.stages} stages, cluster "
           f"{config.cluster if config.cluster == 1 else args.cluster_shape}, grid {config.grid}"
           + (f", B {b_layout}" if b_layout != "kn" else "")
           + (f", split-K {split} ({config.reduction})" if split > 1 else "")
           + (f", stream-K ({config.reduction})" if config.stream_k else "")
           + (f", epilogue {config.epilogue}" if config.epilogue else "")
           + f", on the {backend}")
    try:
        amax = None
        if partials(config):
            c = gemm(a, b, *extras, backend=backend)
            if epilogue_of(config) and epilogue_of(config).amax:
                c, amax = c
        elif epilogue_of(config) and epilogue_of(config).amax:
            import numpy as np
            c = np.empty((config.m, config.n), out_dtype(config).numpy)
            amax = np.zeros(1, mgpu.bf16.numpy)  # the tiles max-reduce into it
            gemm.launch(a, b, *extras, c, amax, backend=backend)
        else:
            c = gemm.launch(a, b, *extras, backend=backend)
    except RuntimeError as error:  # a driver error; on the emulator, a fault or a hazard
        print(f"{run}: FAIL; the launch failed: {error}")
        return 1
    passed, summary = check(config, a, b, c, extras, amax)
    print(f"{run}: {'PASS' if passed else 'FAIL'}; {summary}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
