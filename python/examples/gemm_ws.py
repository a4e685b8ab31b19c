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

    gemm_ws.py --m 512 --n 512 --k 512 --grid 8 --emulate
    gemm_ws.py --emit-mlir gemm_ws.mlir           (8192^3, for bench/gpu)
"""
from __future__ import annotations

import argparse
import sys
from typing import NamedTuple, Sequence

import mosaic_gpu as mgpu

TILE_M = 128
HALF_M = TILE_M // 2  # the rows of one consumer
# Each stage row of A and B is 128 bytes wide (the 128-byte swizzle).
ROW_BYTES = 128
# Groups of 8 rows of cluster tiles, as examples/gemm_bf16_ws.mlir.
GROUP_M = 8
# A and B element types.
DTYPES = {"bf16": mgpu.bf16, "fp8": mgpu.f8e4m3fn}


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


def smem(dtype: mgpu.DType, stages: int, tile_n: int) -> list:
    """The A ring, the B ring (Bt's for fp8), the C halves."""
    tile_k = ROW_BYTES // dtype.itemsize
    b_stage = (tile_n, tile_k) if dtype.bitwidth == 8 else (tile_k, tile_n)
    return [mgpu.SmemBuffer((stages, 2, HALF_M, tile_k), dtype),
            mgpu.SmemBuffer((stages, *b_stage), dtype),
            mgpu.SmemBuffer((2, HALF_M, tile_n), "bf16")]


def smem_needed(dtype: mgpu.DType, stages: int, tile_n: int) -> int:
    pipeline = mgpu.WarpSpecializedPipeline(stages=stages)
    return mgpu.smem_bytes(smem(dtype, stages, tile_n) + pipeline.barriers)


def tile_width(config: Config) -> int:
    """TILE_N: --tile-n, or the widest tile whose stages fit."""
    dtype = DTYPES[config.dtype]
    widths = [config.tile_n] if config.tile_n is not None else [256, 128]
    for tile_n in widths:
        if smem_needed(dtype, config.stages, tile_n) <= mgpu.MAX_SMEM_BYTES:
            return tile_n
    tile_n = widths[-1]
    stage = (TILE_M + tile_n) * ROW_BYTES
    raise ValueError(
        f"{config.stages} stages of 128 x {tile_n} tiles need "
        f"{smem_needed(dtype, config.stages, tile_n) / 1024:.1f} KiB of shared memory "
        f"({config.stages} x {stage // 1024} KiB stages + a {2 * TILE_M * tile_n // 1024} KiB "
        f"C tile + barriers), more than the {mgpu.MAX_SMEM_BYTES // 1024} KiB of a block"
        + ("; use --tile-n 128 or fewer stages" if tile_n == 256 else "; use fewer stages"))


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
    tile_n = tile_width(config)
    tile_k = ROW_BYTES // DTYPES[config.dtype].itemsize
    rows = TILE_M * (config.cluster if config.pair == "m" else 1)
    columns = tile_n * (config.cluster if config.pair == "n" else 1)
    for flag, size, tile in (("--m", config.m, rows), ("--n", config.n, columns),
                             ("--k", config.k, tile_k)):
        if size <= 0 or size % tile:
            what = f"the tile's {tile}"
            if flag == "--m" and rows != TILE_M:
                what = (f"{tile}, the rows of a cluster's {config.cluster} tiles "
                        "(--cluster 1 takes multiples of 128)")
            if flag == "--n" and columns != tile_n:
                what = (f"{tile}, the columns of a cluster's {config.cluster} tiles "
                        f"(--cluster 1 takes multiples of {tile_n})")
            raise ValueError(f"{flag} {size} must be a positive multiple of {what}")
    return tile_n


def build(config: Config) -> mgpu.Kernel:
    """The GEMM kernel for ``config``; ValueError for a bad one."""
    tile_n = check_config(config)
    dtype = DTYPES[config.dtype]
    tile_k = ROW_BYTES // dtype.itemsize
    fp8 = dtype.bitwidth == 8
    m, n, k = config.m, config.n, config.k
    pipeline = mgpu.WarpSpecializedPipeline(stages=config.stages, consumers=2,
                                            cluster=config.cluster, pair_along=config.pair)
    b_shape = (n, k) if fp8 else (k, n)

    @mgpu.kernel(grid=(config.grid, 1, 1), block=pipeline.block,
                 cluster=pipeline.cluster_shape,
                 inputs=[((m, k), dtype), (b_shape, dtype)], outputs=[((m, n), "bf16")],
                 smem=smem(dtype, config.stages, tile_n) + pipeline.barriers,
                 name="gemm_ws")
    def gemm(a, b, c, a_ring, b_ring, c_halves, full, empty):
        # The blocks of a cluster share B (2x1) or A (1x2): each loads its
        # part and multicasts it.
        shared = "b" if config.pair == "m" else "a"
        a_collective = "x" if config.cluster > 1 and shared == "a" else ()
        b_collective = "x" if config.cluster > 1 and shared == "b" else ()

        def fetch(tile, stage, step, barrier):
            k0 = step.astype("i32") * tile_k
            m0 = tile.m.astype("i32") * TILE_M
            n0 = tile.n.astype("i32") * tile_n
            for half in range(2):
                mgpu.async_load(a, a_ring[stage, half], barrier, indices=[m0 + half * HALF_M, k0],
                                collective=a_collective)
            mgpu.async_load(b, b_ring[stage], barrier, indices=[n0, k0] if fp8 else [k0, n0],
                            collective=b_collective)

        def compute(tile, consumer, stage, step, acc):
            b_stage = b_ring[stage].T if fp8 else b_ring[stage]  # K-major for fp8
            return mgpu.wgmma(acc, a_ring[stage, consumer], b_stage, async_=True)

        def epilogue(tile, consumer, acc):
            # The previous tile's store read this buffer during the main
            # loop; the new one reads it during the next tile's.
            c_half = c_halves[consumer]
            result = acc.astype("bf16")
            mgpu.async_store_wait(0)
            mgpu.vector_store(result, c_half)
            m0 = (tile.m * TILE_M + consumer * HALF_M).astype("i32")
            mgpu.async_store(c_half, c, indices=[m0, tile.n.astype("i32") * tile_n],
                             defer_wait=True)

        pipeline.emit(full, empty, rings=[a_ring, b_ring], tiles=(m // TILE_M, n // tile_n),
                      steps=k // tile_k, fetch=fetch, compute=compute,
                      init=lambda: mgpu.constant(0.0, "f32", (HALF_M, tile_n)),
                      epilogue=epilogue,
                      group=GROUP_M * (config.cluster if config.pair == "m" else 1))

    return gemm


def inputs(config: Config, seed: int = 0):
    """Random A and B (Bt for fp8) as NumPy arrays of the input dtype."""
    import numpy as np
    numpy_dtype = DTYPES[config.dtype].numpy
    if numpy_dtype is None:
        raise RuntimeError("bf16 and fp8 arrays need the ml_dtypes package")
    rng = np.random.default_rng(seed)
    b_shape = (config.n, config.k) if config.dtype == "fp8" else (config.k, config.n)
    a = rng.standard_normal((config.m, config.k), dtype=np.float32).astype(numpy_dtype)
    b = rng.standard_normal(b_shape, dtype=np.float32).astype(numpy_dtype)
    return a, b


def check(config: Config, a, b, c) -> tuple[bool, str]:
    """Compares C with A * B computed by NumPy in float64. Each element may
    be off by the bf16 rounding of C (at most 2^-8 of its value, bf16's
    unit roundoff; twice that is allowed) plus an absolute term for the
    accumulation order and precision, relative to the output's RMS: 2^-8
    for bf16 inputs, 2^-5 for fp8 (the tensor cores accumulate fp8 products
    with fewer bits than f32). A K step missing or read twice is off by
    about sqrt(tile_k / K) of the RMS, far more."""
    import numpy as np
    a64 = a.astype(np.float64)
    b64 = b.astype(np.float64)
    reference = a64 @ (b64.T if config.dtype == "fp8" else b64)
    out = c.astype(np.float64)
    rms = float(np.sqrt(np.mean(reference ** 2)))
    absolute = (2 ** -5 if config.dtype == "fp8" else 2 ** -8) * rms
    error = np.abs(out - reference)
    allowed = 2 ** -7 * np.abs(reference) + absolute
    bad = ~(error <= allowed)  # NaN fails
    worst = float(np.nanmax(error / allowed)) if error.size else 0.0
    summary = (f"max |C - ref| {np.nanmax(error):.3g}, {worst:.2f} of the tolerance; "
               f"{int(bad.sum())} of {out.size} elements outside it")
    if bad.any():
        row, col = np.argwhere(bad)[0]
        summary += (f"; first at ({row}, {col}): {out[row, col]:.6g} vs "
                    f"{reference[row, col]:.6g}")
    return not bad.any(), summary


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
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--emulate", action="store_true",
                        help="run on the PTX emulator instead of a GPU")
    parser.add_argument("--emit-mlir", metavar="PATH",
                        help="write the kernel's MLIR to PATH and exit")
    return parser, parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    parser, args = parse(argv)
    config = Config(args.m, args.n, args.k, args.stages, args.cluster, args.dtype, args.grid,
                    args.tile_n, "m" if args.cluster_shape == "2x1" else "n")
    try:
        kernel = build(config)
    except ValueError as error:
        parser.error(str(error))
    tile_n = tile_width(config)
    if args.emit_mlir:
        with open(args.emit_mlir, "w") as out:
            out.write(str(kernel.module))
        print(f"wrote {args.emit_mlir}")
        return 0
    a, b = inputs(config, args.seed)
    backend = "emulator" if args.emulate else "cuda"
    run = (f"gemm_ws {config.dtype} {config.m}x{config.n}x{config.k}, 128x{tile_n} tiles, "
           f"{config.stages} stages, cluster "
           f"{config.cluster if config.cluster == 1 else args.cluster_shape}, grid {config.grid}, on the "
           f"{backend}")
    try:
        c = kernel.launch(a, b, backend=backend)
    except RuntimeError as error:  # a driver error; on the emulator, a fault or a hazard
        print(f"{run}: FAIL; the launch failed: {error}")
        return 1
    passed, summary = check(config, a, b, c)
    print(f"{run}: {'PASS' if passed else 'FAIL'}; {summary}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
