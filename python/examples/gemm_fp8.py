"""FP8 GEMM with the scalings training recipes use: C = dequant(A) *
dequant(Bt)^T, A (M x K) and Bt (N x K) e4m3 or e5m2, C bf16, f16 or f32.
The warp-specialized persistent kernel of gemm_ws.py (the same pipeline,
tiles and epilogue), with the scales applied in registers.

Scalings (--scaling), each as a training recipe quantizes (scale = amax /
the format's largest finite value, q = x / scale):

- tensor: one f32 scale for A and one for B, runtime inputs (1-element
  arrays); C = sa * sb * (A Bt^T). The producer loads both once per block
  with a TMA box of 8 elements (the box reaches past the 1-element tensor,
  so TMA fills the rest with zeros), and the epilogue scales the tile.
- row: a scale per row of A (M) and per column of C (N, a row of Bt);
  each consumer loads its tile's with TMA in the epilogue (TMA clips the
  boxes at the edges of M and N) and scales the tile.
- block (DeepSeek-V3): a scale per 1 x 128 block of A and per 128 x 128
  block of Bt, which changes every 128 of K. The producer loads each
  step's scales with its tiles, into two small rings counted in the
  stage's bytes, and the consumer applies them as it promotes.

Promotion. The tensor core adds FP8 products with fewer mantissa bits than
f32 (about 14 on Hopper, per DeepSeek-V3; docs/RationaleTensorCore.md), so
the consumer issues each 128-K step's wgmmas into a zero accumulator,
waits for them, and adds the partial sum into its f32 accumulator in
registers: acc += partial, or for block scaling acc += partial *
(a_scale_row * b_scale), as DeepGEMM does. --fast-accum (tensor and row
scaling only) keeps the wgmmas in flight across steps instead and
accumulates all of K in the tensor core, as gemm_ws.py does: faster, and
less accurate for long K (docs/GemmWalkthrough.md, "FP8 scalings").

The block scales' layouts, as the kernel takes them (``kernel_scales``):
A's (M, ceil(K/128)) matrix K-block-major, i.e. transposed to
(ceil(K/128), M), so the 128 scales of a tile's rows in one K block are
one contiguous TMA box, and flattened to 1-D; B's (ceil(N/128),
ceil(K/128)) matrix row-major, flattened. A 2-D tensor map needs row
strides that are multiples of 16 bytes, which 4 M or 4 ceil(K/128) bytes
need not be; a 1-D one has no stride, and a box that runs past a row
reads the next one's scales (or TMA's zeros at the end), which only rows
and columns outside C would use.

With --cluster 2 (the default, as gemm_ws.py) the blocks run in clusters
of two that take consecutive tile rows of one tile column: each loads half
of Bt's stage and multicasts it to both (the scales each block loads
itself).

Tiles are 128 x TILE_N (two 64-row consumers) with 128-element K steps.
Promotion needs TILE_N = 128: a consumer holds its 64 x TILE_N partial sum
beside its accumulator, which at 256 is 256 registers per thread, more
than the 232 it has; --fast-accum may use 256 (its default where the
stages fit). Block scaling always promotes (and a 256-wide tile would span
two B scale blocks). M, N and K need not be multiples of the tile: TMA fills the
loads past the edges with zeros (a K step past K adds zero products) and
clips the stores. TMA does need each row of A, Bt and C to be a multiple
of 16 bytes long: K a multiple of 16, N of 16 / C's element size.

    gemm_fp8.py --m 256 --n 256 --k 512 --scaling block --grid 2 --emulate
    gemm_fp8.py --scaling block --emit-mlir gemm_fp8.mlir   (8192^3, for bench/gpu)
"""
from __future__ import annotations

import argparse
import sys
from typing import NamedTuple, Sequence

import mosaic_gpu as mgpu
# gemm_ws.py's tile geometry.
from gemm_ws import GROUP_M, HALF_M, ROW_BYTES, TILE_M

# The K width of a stage: 128 bytes of fp8, which is also the scale block.
TILE_K = ROW_BYTES
SCALE_BLOCK = 128
# The TMA box a scalar scale is loaded with: 8 f32, 32 bytes (a box's
# inner dim must be a multiple of 16 bytes), one 8-column tile of the
# WGMMA layout, which broadcast_scalar turns into a row vector.
SCALAR_BOX = 8
# A TMA destination starts 128-byte aligned, so a stage's B scale slot is
# 128 bytes (32 f32), loaded whole; broadcast_scalar reads its first 8.
SCALAR_SLOT = 128 // 4
DTYPES = {"e4m3": mgpu.f8e4m3fn, "e5m2": mgpu.f8e5m2}
# The largest finite value of each format: what a recipe scales amax to.
FP8_MAX = {"e4m3": 448.0, "e5m2": 57344.0}
OUT_DTYPES = {"bf16": mgpu.bf16, "f16": mgpu.f16, "f32": mgpu.f32}
SCALINGS = ("tensor", "row", "block")


class Config(NamedTuple):
    m: int
    n: int
    k: int
    scaling: str = "block"
    dtype: str = "e4m3"
    out: str = "bf16"
    stages: int = 4
    grid: int = 132
    tile_n: int | None = None
    fast_accum: bool = False
    # Blocks per cluster along M: 2 share each stage of Bt (multicast).
    cluster: int = 2
    # Bt's format when it differs from A's (e4m3 activations times e5m2
    # gradients, as backward passes mix them); None: A's.
    b_dtype: str | None = None


def b_format(config: Config) -> str:
    return config.b_dtype or config.dtype


def blocks(size: int) -> int:
    """The number of 128-element scale blocks along a dim of ``size``."""
    return -(-size // SCALE_BLOCK)


def scale_shapes(config: Config) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shapes of A's and B's scales as a recipe makes them (before
    ``kernel_scales``)."""
    m, n, k = config.m, config.n, config.k
    if config.scaling == "tensor":
        return (1,), (1,)
    if config.scaling == "row":
        return (m,), (n,)
    return (m, blocks(k)), (blocks(n), blocks(k))


def kernel_scale_shapes(config: Config) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shapes of the scale arrays the kernel takes."""
    a_shape, b_shape = scale_shapes(config)
    if config.scaling == "block":
        return (a_shape[0] * a_shape[1],), (b_shape[0] * b_shape[1],)
    return a_shape, b_shape


def smem(config: Config, tile_n: int) -> list:
    """The A and Bt rings, the block scales' rings, the C halves, and the
    tensor or row scales with their barriers (tensor: one, filled once;
    row: one per consumer, filled every tile)."""
    entries = [mgpu.SmemBuffer((config.stages, 2, HALF_M, TILE_K), DTYPES[config.dtype]),
               mgpu.SmemBuffer((config.stages, tile_n, TILE_K), DTYPES[b_format(config)])]
    if config.scaling == "block":
        entries += [mgpu.SmemBuffer((config.stages, TILE_M), "f32"),
                    mgpu.SmemBuffer((config.stages, SCALAR_SLOT), "f32")]
    entries.append(mgpu.SmemBuffer((2, HALF_M, tile_n), OUT_DTYPES[config.out]))
    if config.scaling == "tensor":
        entries += [mgpu.SmemBuffer((2, SCALAR_SLOT), "f32"),
                    mgpu.Barriers(count=1, arrival_count=1)]
    if config.scaling == "row":
        entries += [mgpu.SmemBuffer((2, HALF_M), "f32"), mgpu.SmemBuffer((2, tile_n), "f32"),
                    mgpu.Barriers(count=2, arrival_count=1)]
    return entries


def smem_needed(config: Config, tile_n: int) -> int:
    pipeline = mgpu.WarpSpecializedPipeline(stages=config.stages)
    return mgpu.smem_bytes(smem(config, tile_n) + pipeline.barriers)


def tile_width(config: Config) -> int:
    """TILE_N: --tile-n, or the widest tile whose stages fit (128 unless
    --fast-accum: see check_config)."""
    if config.tile_n is not None:
        widths = [config.tile_n]
    else:
        widths = [256, 128] if config.fast_accum else [128]
    for tile_n in widths:
        if smem_needed(config, tile_n) <= mgpu.MAX_SMEM_BYTES:
            return tile_n
    tile_n = widths[-1]
    raise ValueError(
        f"{config.stages} stages of 128 x {tile_n} tiles and their {config.out} C tile need "
        f"{smem_needed(config, tile_n) / 1024:.1f} KiB of shared memory, more than the "
        f"{mgpu.MAX_SMEM_BYTES // 1024} KiB of a block"
        + ("; use --tile-n 128 or fewer stages" if tile_n == 256 else "; use fewer stages"))


def check_config(config: Config) -> int:
    """Raises ValueError for a configuration the kernel cannot run; returns
    TILE_N."""
    if config.scaling not in SCALINGS:
        raise ValueError(f"--scaling must be one of {', '.join(SCALINGS)}, "
                         f"got {config.scaling!r}")
    if config.dtype not in DTYPES:
        raise ValueError(f"--dtype must be one of {', '.join(DTYPES)}, got {config.dtype!r}")
    if config.b_dtype is not None and config.b_dtype not in DTYPES:
        raise ValueError(f"--b-dtype must be one of {', '.join(DTYPES)}, "
                         f"got {config.b_dtype!r}")
    if config.out not in OUT_DTYPES:
        raise ValueError(f"--out must be one of {', '.join(OUT_DTYPES)}, got {config.out!r}")
    if not 2 <= config.stages <= 6:
        raise ValueError(f"--stages must be 2 to 6, got {config.stages}")
    if config.tile_n not in (None, 128, 256):
        raise ValueError(f"--tile-n must be 128 or 256, got {config.tile_n}")
    if config.scaling == "block" and config.tile_n == 256:
        raise ValueError("--scaling block needs --tile-n 128: a 256-wide tile spans two "
                         "128 x 128 scale blocks of B, and the promotion applies one B scale "
                         "per tile")
    if config.fast_accum and config.scaling == "block":
        raise ValueError("--fast-accum applies to tensor and row scaling: block scaling "
                         "scales every 128-K partial sum, so it always promotes")
    if config.tile_n == 256 and not config.fast_accum:
        raise ValueError("--tile-n 256 needs --fast-accum: promotion keeps a 64 x 256 f32 "
                         "partial sum beside the 64 x 256 accumulator, 256 registers per "
                         "consumer thread, more than the 232 it has (ptxas spills)")
    if config.cluster not in (1, 2):
        raise ValueError(f"--cluster must be 1 or 2, got {config.cluster}")
    if config.grid <= 0 or config.grid % config.cluster:
        raise ValueError(f"--grid must be a positive multiple of the cluster "
                         f"({config.cluster}), got {config.grid}")
    for flag, size in (("--m", config.m), ("--n", config.n), ("--k", config.k)):
        if size <= 0:
            raise ValueError(f"{flag} must be positive, got {size}")
    # TMA's global strides are multiples of 16 bytes.
    if config.k % 16:
        raise ValueError(f"--k {config.k} must be a multiple of 16: TMA needs the rows of A "
                         "and Bt (K fp8 bytes) to be multiples of 16 bytes")
    out_bytes = OUT_DTYPES[config.out].itemsize
    if config.n * out_bytes % 16:
        raise ValueError(f"--n {config.n} must be a multiple of {16 // out_bytes}: TMA needs "
                         f"the rows of C ({config.n} x {out_bytes} bytes) to be multiples of "
                         "16 bytes")
    return tile_width(config)


def panels(config: Config) -> bool:
    """Whether C's tile is stored as panels of 64 rows and one 128-byte
    swizzle width (as gemm_ws.py does): a tiled view of C needs M a multiple
    of 8 rows and N of the swizzle's width; otherwise each panel is its own
    TMA box, which TMA clips at the edges."""
    width = ROW_BYTES // OUT_DTYPES[config.out].itemsize
    return config.m % 8 != 0 or config.n % width != 0


def broadcast_scalar(box: mgpu.Ref) -> mgpu.Vector:
    """A (64,) f32 vector, in the row layout of the accumulator's rows,
    every element of which is ``box[0]`` (``box``: 8 f32 in shared memory).

    There is no scalar load, and a broadcast of a 1-element vector needs a
    splat operand, which a load never is. So the box is loaded as a row of
    the accumulator (the column layout), all but its first element are
    masked to 0, and it is broadcast down 64 rows and summed along them:
    x + 0 + ... + 0 is x exactly. The sum is over one 8-column tile of the
    WGMMA layout: two adds and two shuffles per row. The casts pin the
    layouts: inference would also accept the transposed WGMMA layout for
    the broadcast, and then relayout the accumulator through shared
    memory."""
    row = mgpu.layout_cast(mgpu.vector_load(box), mgpu.WGMMA_COLUMN)
    first = mgpu.select(mgpu.iota((SCALAR_BOX,), "i32", 0) == 0, row, 0.0)
    wide = mgpu.layout_cast(mgpu.broadcast_in_dim(first, (HALF_M, SCALAR_BOX), [1]), mgpu.WGMMA)
    return wide.reduce("add", 1)


def build(config: Config) -> mgpu.Kernel:
    """The GEMM kernel for ``config``; ValueError for a bad one."""
    tile_n = check_config(config)
    dtype = DTYPES[config.dtype]
    out_dtype = OUT_DTYPES[config.out]
    m, n, k = config.m, config.n, config.k
    scaling = config.scaling
    k_blocks = blocks(k)
    promote = not config.fast_accum
    pipeline = mgpu.WarpSpecializedPipeline(stages=config.stages, consumers=2,
                                            cluster=config.cluster)
    # The blocks of a cluster take consecutive tile rows: the tile rows are
    # rounded up to whole clusters (a tile past M loads zeros and stores
    # nothing).
    tiles_m = -(-m // (TILE_M * config.cluster)) * config.cluster
    bt_collective = "x" if config.cluster > 1 else ()
    a_scales_shape, b_scales_shape = kernel_scale_shapes(config)
    acc_shape = (HALF_M, tile_n)
    steps = -(-k // TILE_K)

    @mgpu.kernel(grid=(config.grid, 1, 1), block=pipeline.block,
                 cluster=pipeline.cluster_shape,
                 inputs=[((m, k), dtype), ((n, k), DTYPES[b_format(config)]),
                         (a_scales_shape, "f32"),
                         (b_scales_shape, "f32")],
                 outputs=[((m, n), out_dtype)],
                 smem=smem(config, tile_n) + pipeline.barriers, name="gemm_fp8")
    def gemm(a, bt, a_scales, b_scales, c, a_ring, b_ring, *rest):
        if scaling == "block":
            a_scale_ring, b_scale_ring, c_halves, full, empty = rest
            rings = [a_ring, b_ring, a_scale_ring, b_scale_ring]
        elif scaling == "tensor":
            c_halves, tensor_scales, loaded, full, empty = rest
            rings = [a_ring, b_ring]
        else:
            c_halves, row_scales, column_scales, loaded, full, empty = rest
            rings = [a_ring, b_ring]
        if panels(config):
            c_halves = mgpu.with_transforms(
                c_halves, [mgpu.Tile((HALF_M, ROW_BYTES // out_dtype.itemsize)),
                           mgpu.Swizzle(ROW_BYTES)])

        if scaling == "tensor":
            # The producer loads both scales once; consumers wait for them
            # in every epilogue (phase 0 stays complete).
            @mgpu.if_(mgpu.warpgroup_id() == 0)
            def _():
                mgpu.arrive_expect_tx(loaded[0], 2 * SCALAR_BOX * 4)
                for i, scales in enumerate((a_scales, b_scales)):
                    mgpu.async_load(scales, tensor_scales[i, 0:SCALAR_BOX], loaded[0],
                                    indices=[0], slice_lengths=[SCALAR_BOX])

        def fetch(tile, stage, step, barrier):
            k0 = step.astype("i32") * TILE_K
            m0 = tile.m.astype("i32") * TILE_M
            n0 = tile.n.astype("i32") * tile_n
            for half in range(2):
                mgpu.async_load(a, a_ring[stage, half], barrier, indices=[m0 + half * HALF_M, k0])
            # The blocks of a cluster share the tile column: each loads half
            # of Bt's stage and multicasts it to both.
            mgpu.async_load(bt, b_ring[stage], barrier, indices=[n0, k0],
                            collective=bt_collective)
            if scaling == "block":
                # Step k's scales: A's (k, m0 .. m0 + 127) of the
                # K-block-major matrix, B's (tile.n, k); tile_n = 128 makes
                # the tile column one B scale block.
                mgpu.async_load(a_scales, a_scale_ring[stage], barrier,
                                indices=[step.astype("i32") * m + m0])
                mgpu.async_load(b_scales, b_scale_ring[stage], barrier,
                                indices=[tile.n.astype("i32") * k_blocks + step.astype("i32")])

        def compute(tile, consumer, stage, step, acc):
            a_stage = a_ring[stage, consumer]
            b_stage = b_ring[stage].T  # K-major, as 8-bit wgmma needs
            if not promote:
                return mgpu.wgmma(acc, a_stage, b_stage, async_=True)
            # Promotion: this 128-K step's partial sum, from a zero
            # accumulator, added (scaled) into the f32 accumulator.
            partial = mgpu.wgmma(mgpu.constant(0.0, "f32", acc_shape), a_stage, b_stage,
                                 async_=True)
            mgpu.wgmma_wait(0)
            if scaling != "block":
                return acc + partial
            a_scale = mgpu.vector_load(a_scale_ring[stage, mgpu.ds(consumer * HALF_M, HALF_M)])
            scale = a_scale * broadcast_scalar(b_scale_ring[stage, 0:SCALAR_BOX])
            # One FFMA per element, as DeepGEMM's promotion.
            return mgpu.fma(partial, mgpu.broadcast_in_dim(scale, acc_shape, [0]), acc)

        def epilogue(tile, consumer, acc):
            m0 = tile.m * TILE_M + consumer * HALF_M
            n0 = tile.n * tile_n
            if scaling == "tensor":
                mgpu.wait(loaded[0], parity=False)
                scale = (broadcast_scalar(tensor_scales[0, 0:SCALAR_BOX])
                         * broadcast_scalar(tensor_scales[1, 0:SCALAR_BOX]))
                acc = acc * mgpu.broadcast_in_dim(scale, acc_shape, [0])
            elif scaling == "row":
                # The consumer's own barrier completes once per tile: the
                # phase of the tile's parity in the block's sequence.
                barrier = loaded[consumer]
                mgpu.arrive_expect_tx(barrier, (HALF_M + tile_n) * 4)
                mgpu.async_load(a_scales, row_scales[consumer], barrier, indices=[m0])
                mgpu.async_load(b_scales, column_scales[consumer], barrier, indices=[n0])
                tile_parity = (tile.first_step // steps).astype("i64").astype("i1")
                mgpu.wait(barrier, parity=tile_parity)
                rows = mgpu.layout_cast(mgpu.vector_load(row_scales[consumer]), mgpu.WGMMA_ROW)
                columns = mgpu.layout_cast(mgpu.vector_load(column_scales[consumer]),
                                           mgpu.WGMMA_COLUMN)
                acc = (acc * mgpu.broadcast_in_dim(rows, acc_shape, [0])
                       * mgpu.broadcast_in_dim(columns, acc_shape, [1]))
            result = acc.astype(out_dtype)
            # The previous tile's store read this buffer during the main
            # loop; the new one reads it during the next tile's.
            c_half = c_halves[consumer]
            mgpu.async_store_wait(0)
            mgpu.vector_store(result, c_half)
            mgpu.async_store(c_half, c, indices=[m0.astype("i32"), n0.astype("i32")],
                             defer_wait=True)

        pipeline.emit(full, empty, rings=rings, tiles=(tiles_m, -(-n // tile_n)),
                      steps=steps, fetch=fetch, compute=compute,
                      init=lambda: mgpu.constant(0.0, "f32", acc_shape),
                      epilogue=epilogue, group=GROUP_M * config.cluster)

    return gemm


def quantize(x, scaling: str, operand: str, dtype: str):
    """``x`` (float64) quantized as a recipe does: each group of elements
    that shares a scale is divided by amax / FP8_MAX (1 for an all-zero
    group) and cast to fp8. ``operand`` is "a" (M x K: row groups are rows,
    blocks 1 x 128) or "bt" (N x K: rows of Bt, blocks 128 x 128). Returns
    (q, scales) with scales shaped as ``scale_shapes`` says."""
    import numpy as np
    rows, cols = x.shape
    if scaling == "tensor":
        group_rows, group_cols = rows, cols
    elif scaling == "row":
        group_rows, group_cols = 1, cols
    else:
        group_rows, group_cols = (1 if operand == "a" else SCALE_BLOCK), SCALE_BLOCK
    row_groups, col_groups = -(-rows // group_rows), -(-cols // group_cols)
    padded = np.zeros((row_groups * group_rows, col_groups * group_cols))
    padded[:rows, :cols] = np.abs(x)
    amax = padded.reshape(row_groups, group_rows, col_groups, group_cols).max(axis=(1, 3))
    scales = np.where(amax > 0, amax / FP8_MAX[dtype], 1.0).astype(np.float32)
    expanded = np.repeat(np.repeat(scales.astype(np.float64), group_rows, 0), group_cols, 1)
    q = (x / expanded[:rows, :cols]).astype(DTYPES[dtype].numpy)
    if scaling == "tensor":
        return q, scales.reshape(1)
    if scaling == "row":
        return q, scales.reshape(rows)
    return q, scales


def dequantize(q, scales, scaling: str, operand: str):
    """``q`` times its scales, in float64."""
    import numpy as np
    rows, cols = q.shape
    s = scales.astype(np.float64)
    if scaling == "tensor":
        expanded = s[0]
    elif scaling == "row":
        expanded = s[:, None]
    else:
        group_rows = 1 if operand == "a" else SCALE_BLOCK
        expanded = np.repeat(np.repeat(s, group_rows, 0), SCALE_BLOCK, 1)[:rows, :cols]
    return q.astype(np.float64) * expanded


def inputs(config: Config, seed: int = 0):
    """A, Bt and their scales, quantized from Gaussian matrices whose rows
    (of A and of Bt) have magnitudes spread over 2^-4 .. 2^4, so that every
    scale matters: (a, bt, a_scales, b_scales), the scales as
    ``scale_shapes``."""
    import numpy as np
    if DTYPES[config.dtype].numpy is None:
        raise RuntimeError("fp8 arrays need the ml_dtypes package")
    rng = np.random.default_rng(seed)

    def matrix(rows):
        magnitudes = 2.0 ** rng.uniform(-4, 4, (rows, 1))
        return rng.standard_normal((rows, config.k)) * magnitudes

    a, a_scales = quantize(matrix(config.m), config.scaling, "a", config.dtype)
    bt, b_scales = quantize(matrix(config.n), config.scaling, "bt", b_format(config))
    return a, bt, a_scales, b_scales


def kernel_scales(config: Config, a_scales, b_scales):
    """The scale arrays as the kernel takes them: for block scaling A's
    K-block-major (transposed) and B's row-major, each flattened (see the
    module docstring); the others as they are."""
    import numpy as np
    if config.scaling != "block":
        return a_scales, b_scales
    return (np.ascontiguousarray(a_scales.T).reshape(-1),
            np.ascontiguousarray(b_scales).reshape(-1))


def check(config: Config, a, bt, a_scales, b_scales, c) -> tuple[bool, str]:
    """Compares C with dequant(A) dequant(Bt)^T computed by NumPy in
    float64.

    Tolerance, per element: 2 u |ref| + 2^-7 mag, where u is the unit
    roundoff of C's format (2^-8 bf16, 2^-11 f16, 2^-24 f32) and mag =
    sqrt(sum_k (dequant(A)_ik dequant(Bt)_jk)^2), the size of the dot
    product's terms. The first term is the rounding of C. The second is the
    accumulation: FP8 products are exact in f32, but the tensor core adds
    each k32 step's products to the accumulator aligned to the largest of
    them and truncated about 13 bits below it (docs/RationaleTensorCore.md;
    DeepSeek-V3 measured about 14 bits on Hopper, and the emulator models
    13), so each step loses up to ~2^-13 of its largest term per term, with
    random signs; over a 128-K step that is ~2^-10 mag, which the
    promotion into f32 every 128 stops from growing further; the f32
    scaling and adds add ~2^-24 per step. 2^-7 leaves a margin of 8 (the
    emulator's largest is about 2^-10 mag at any K); a wrong scale, a K
    block missing or applied twice is off by about mag itself. With
    --fast-accum nothing stops the growth: the running sum's truncation is
    biased, so its error grows about linearly with K (2^-8 mag at K = 512,
    2^-5.6 at 8192 on the emulator), and the second term is scaled by
    K / 512 (at least 1)."""
    import numpy as np
    a64 = dequantize(a, a_scales, config.scaling, "a")
    b64 = dequantize(bt, b_scales, config.scaling, "bt")
    reference = a64 @ b64.T
    magnitude = np.sqrt((a64 ** 2) @ (b64 ** 2).T)
    out = c.astype(np.float64)
    unit = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "f32": 2.0 ** -24}[config.out]
    accumulation = 2.0 ** -7
    if config.fast_accum:
        accumulation *= max(1.0, blocks(config.k) / 4)
    error = np.abs(out - reference)
    allowed = 2 * unit * np.abs(reference) + accumulation * magnitude
    bad = ~(error <= allowed)  # NaN fails
    worst = float(np.nanmax(error / allowed)) if error.size else 0.0
    summary = (f"max |C - ref| / tolerance {worst:.3g}; {int(bad.sum())} of {out.size} "
               "elements outside it")
    if bad.any():
        row, col = np.argwhere(bad)[0]
        summary += (f"; first at ({row}, {col}): {out[row, col]:.6g} vs "
                    f"{reference[row, col]:.6g}")
    return not bad.any(), summary


def parse(argv: Sequence[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="gemm_fp8.py", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--m", type=int, default=8192)
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--k", type=int, default=8192)
    parser.add_argument("--scaling", required=True, choices=list(SCALINGS))
    parser.add_argument("--dtype", default="e4m3", choices=list(DTYPES),
                        help="A's and Bt's format (default e4m3)")
    parser.add_argument("--b-dtype", default=None, choices=list(DTYPES),
                        help="Bt's format when it differs from A's (e4m3 x e5m2)")
    parser.add_argument("--out", default="bf16", choices=list(OUT_DTYPES),
                        help="C's format (default bf16)")
    parser.add_argument("--stages", type=int, default=4, help="2 to 6 (default 4)")
    parser.add_argument("--cluster", type=int, default=2,
                        help="blocks per cluster along M, 1 or 2 (default 2: Bt is multicast)")
    parser.add_argument("--grid", type=int, default=132,
                        help="persistent blocks (default 132, one per H100 SM)")
    parser.add_argument("--tile-n", type=int, default=None,
                        help="tile width, 128 or 256 (default: 256 when the stages fit; "
                             "128 for block scaling)")
    parser.add_argument("--fast-accum", action="store_true",
                        help="tensor and row scaling: accumulate all of K in the tensor core "
                             "instead of promoting every 128")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--emulate", action="store_true",
                        help="run on the PTX emulator instead of a GPU")
    parser.add_argument("--emit-mlir", metavar="PATH",
                        help="write the kernel's MLIR to PATH and exit")
    return parser, parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    parser, args = parse(argv)
    config = Config(args.m, args.n, args.k, args.scaling, args.dtype, args.out, args.stages,
                    args.grid, args.tile_n, args.fast_accum, args.cluster, args.b_dtype)
    try:
        kernel = build(config)
    except ValueError as error:
        parser.error(str(error))
    if args.emit_mlir:
        with open(args.emit_mlir, "w") as out:
            out.write(str(kernel.module))
        print(f"wrote {args.emit_mlir}")
        return 0
    a, bt, a_scales, b_scales = inputs(config, args.seed)
    backend = "emulator" if args.emulate else "cuda"
    formats = config.dtype if b_format(config) == config.dtype else \
        f"{config.dtype} x {b_format(config)}"
    run = (f"gemm_fp8 {formats} {config.scaling}"
           f"{' fast-accum' if config.fast_accum else ''} -> {config.out} "
           f"{config.m}x{config.n}x{config.k}, 128x{tile_width(config)} tiles, "
           f"{config.stages} stages, cluster {config.cluster}, grid {config.grid}, on the "
           f"{backend}")
    try:
        c = kernel.launch(a, bt, *kernel_scales(config, a_scales, b_scales), backend=backend)
    except RuntimeError as error:  # a driver error; on the emulator, a fault or a hazard
        print(f"{run}: FAIL; the launch failed: {error}")
        return 1
    passed, summary = check(config, a, bt, a_scales, b_scales, c)
    print(f"{run}: {'PASS' if passed else 'FAIL'}; {summary}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
