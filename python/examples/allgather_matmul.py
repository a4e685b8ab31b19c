"""All-gather matmul across D devices, the all-gather hidden in the GEMM:
device d holds A_d (m x k) and B_d (k x n) and computes
C_d = concat(A_0, ..., A_{D-1}) @ B_d, (D m) x n, in bf16 with an f32
accumulator (tensor parallelism's column-parallel linear layer).

The shards travel around a ring. At chunk step c (0 .. D-1), device d
multiplies the shard of device src = (d - c) mod D: its own A_d at step 0,
then the shards its left neighbour forwarded into its `gathered` buffer
(symmetric: (D m) x k on every device). While the consumers multiply a
chunk's rows, the producer warpgroup forwards them to the right
neighbour d + 1: each 64-row half of every stage of A it loads for the
first column of output tiles is TMA-stored from shared memory into the
neighbour's `gathered`, at the rows of shard src. Once a row block of
the shard is stored (the stores complete, `async_store_wait complete`),
the producer signals the neighbour's semaphore for that row block by the
number of output-tile columns; the producer of each of those tiles on the
neighbour waits for (and consumes) one count before it loads the rows.
No shard is forwarded at the last step, which brings back the neighbour's
own. The semaphores end where they started (zero), so the kernel can run
again on the same buffers.

The GEMM is the warp-specialized pipeline of gemm_ws.py
(mosaic_gpu.WarpSpecializedPipeline: a TMA producer and two wgmma
consumers per block, persistent blocks), walking the output tiles chunk by
chunk in ring order: a device starts on its own shard while its neighbours
forward theirs.

    allgather_matmul.py --devices 4 --m 128 --n 256 --k 128 --grid 2 --emulate
    allgather_matmul.py --devices 8 --emit-mlir allgather_matmul.mlir

Exits 0 when every device's C matches NumPy's float64 product, 1 on a
mismatch or a failed launch (on the emulator: a fault, hazard or deadlock),
2 on a configuration the kernel cannot run.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import NamedTuple, Sequence

import mosaic_gpu as mgpu

TILE_M = 128
HALF_M = TILE_M // 2  # the rows of one consumer
TILE_K = 64  # 128 bytes of bf16: one 128-byte swizzled row of a stage
# The GPUs of one node, and room to test larger rings on the emulator.
MAX_DEVICES = 64


class Config(NamedTuple):
    devices: int
    m: int  # rows of each device's shard of A
    n: int
    k: int
    stages: int = 3
    grid: int = 132
    tile_n: int = 128


def smem(config: Config) -> list:
    """The A ring (two 64-row halves per stage), the B ring, the C halves."""
    return [mgpu.SmemBuffer((config.stages, 2, HALF_M, TILE_K), mgpu.bf16),
            mgpu.SmemBuffer((config.stages, TILE_K, config.tile_n), mgpu.bf16),
            mgpu.SmemBuffer((2, HALF_M, config.tile_n), mgpu.bf16)]


def check_config(config: Config) -> None:
    """Raises ValueError for a configuration the kernel cannot run."""
    if not 1 <= config.devices <= MAX_DEVICES:
        raise ValueError(f"--devices must be 1 to {MAX_DEVICES}, got {config.devices}")
    if not 2 <= config.stages <= 6:
        raise ValueError(f"--stages must be 2 to 6, got {config.stages}")
    if config.tile_n not in (64, 128, 256):
        raise ValueError(f"--tile-n must be 64, 128 or 256, got {config.tile_n}")
    if config.grid <= 0:
        raise ValueError(f"--grid must be positive, got {config.grid}")
    for flag, size, tile, what in (
            ("--m", config.m, TILE_M, "the 128 rows of a tile (each device's shard is split "
                                      "into whole tiles)"),
            ("--n", config.n, config.tile_n, f"the tile's {config.tile_n} columns"),
            ("--k", config.k, TILE_K, f"a stage's {TILE_K} columns of bf16")):
        if size <= 0 or size % tile:
            raise ValueError(f"{flag} {size} must be a positive multiple of {what}")
    pipeline = mgpu.WarpSpecializedPipeline(stages=config.stages)
    needed = mgpu.smem_bytes(smem(config) + pipeline.barriers)
    if needed > mgpu.MAX_SMEM_BYTES:
        raise ValueError(f"{config.stages} stages of 128 x {config.tile_n} tiles need "
                         f"{needed // 1024} KiB of shared memory, more than the "
                         f"{mgpu.MAX_SMEM_BYTES // 1024} KiB of a block: use fewer --stages "
                         "or a narrower --tile-n")


def build(config: Config, wait_count: int = 1) -> mgpu.Kernel:
    """The kernel every device runs; ValueError for a bad configuration.
    ``wait_count`` is the count each semaphore wait consumes; the tests
    raise it to check that a wait no signal satisfies is reported."""
    check_config(config)
    devices, m, n, k = config.devices, config.m, config.n, config.k
    tiles_per_shard = m // TILE_M
    tiles_n = n // config.tile_n
    steps = k // TILE_K
    stages = config.stages
    pipeline = mgpu.WarpSpecializedPipeline(stages=stages, consumers=2)

    @mgpu.kernel(grid=(config.grid, 1, 1), block=pipeline.block,
                 inputs=[((m, k), mgpu.bf16), ((k, n), mgpu.bf16),
                         ((devices * m, k), mgpu.bf16), ((devices * tiles_per_shard,), mgpu.i32)],
                 outputs=[((devices * m, n), mgpu.bf16)],
                 symmetric=[2, 3],
                 smem=smem(config) + pipeline.barriers, name="allgather_matmul")
    def kernel(a, b, gathered, arrived, c, a_ring, b_ring, c_halves, full, empty):
        me = mgpu.device_id().astype("index")
        right = ((mgpu.device_id() + 1) % mgpu.device_count())
        gathered_right = mgpu.remote_ref(gathered, right)

        def shard(tile):
            """The chunk step of ``tile``, and the device whose shard it multiplies."""
            step = tile.m // tiles_per_shard
            return step, (me + devices - step) % devices

        def fetch(tile, stage, k_step, barrier):
            step, src = shard(tile)
            row_block = tile.m % tiles_per_shard
            semaphore = src * tiles_per_shard + row_block
            k0 = (k_step * TILE_K).astype("i32")
            local_row = (row_block * TILE_M).astype("i32")
            gathered_row = (src * m + row_block * TILE_M).astype("i32")

            # A forwarded shard is read only once its row block arrived.
            @mgpu.if_((k_step == 0) & (step > 0))
            def _():
                mgpu.semaphore_wait(arrived, semaphore, wait_count)

            def load_own():
                for half in range(2):
                    mgpu.async_load(a, a_ring[stage, half], barrier,
                                    indices=[local_row + half * HALF_M, k0])

            def load_forwarded():
                for half in range(2):
                    mgpu.async_load(gathered, a_ring[stage, half], barrier,
                                    indices=[gathered_row + half * HALF_M, k0])

            mgpu.if_(step == 0, otherwise=load_forwarded)(load_own)
            mgpu.async_load(b, b_ring[stage], barrier,
                            indices=[k0, (tile.n * config.tile_n).astype("i32")])

            # The first column's tiles forward the rows they load, but for
            # the last step's shard, which is the right neighbour's own.
            @mgpu.if_((tile.n == 0) & (step < devices - 1))
            def _():
                global_step = tile.first_step + k_step
                mgpu.wait(barrier, (global_step // stages).astype("i64").astype("i1"))
                for half in range(2):
                    mgpu.async_store(a_ring[stage, half], gathered_right,
                                     indices=[gathered_row + half * HALF_M, k0])

                # The stage is refilled only after the store read it (the
                # store waits for that by default); the neighbour reads the
                # rows only after they are written.
                @mgpu.if_(k_step == steps - 1)
                def _():
                    mgpu.async_store_wait(0, complete=True)
                    mgpu.semaphore_signal(arrived, semaphore, tiles_n, device=right)

        def compute(tile, consumer, stage, k_step, acc):
            return mgpu.wgmma(acc, a_ring[stage, consumer], b_ring[stage], async_=True)

        def epilogue(tile, consumer, acc):
            step, src = shard(tile)
            row = src * m + (tile.m % tiles_per_shard) * TILE_M + consumer * HALF_M
            c_half = c_halves[consumer]
            result = acc.astype("bf16")
            mgpu.async_store_wait(0)
            mgpu.vector_store(result, c_half)
            mgpu.async_store(c_half, c, indices=[row.astype("i32"),
                                                 (tile.n * config.tile_n).astype("i32")],
                             defer_wait=True)

        pipeline.emit(full, empty, rings=[a_ring, b_ring],
                      tiles=(devices * tiles_per_shard, tiles_n), steps=steps, fetch=fetch,
                      compute=compute,
                      init=lambda: mgpu.constant(0.0, "f32", (HALF_M, config.tile_n)),
                      epilogue=epilogue, group=tiles_per_shard)

    return kernel


def inputs(config: Config, seed: int = 0):
    """Random A_d and B_d per device, bf16 NumPy arrays."""
    import numpy as np
    rng = np.random.default_rng(seed)
    bf16 = mgpu.bf16.numpy
    a = [rng.standard_normal((config.m, config.k), dtype=np.float32).astype(bf16)
         for _ in range(config.devices)]
    b = [rng.standard_normal((config.k, config.n), dtype=np.float32).astype(bf16)
         for _ in range(config.devices)]
    return a, b


def check(config: Config, a, b, c) -> tuple[bool, str]:
    """Compares every device's C with concat(A) @ B_d in float64, with the
    tolerance of gemm_ws.py (bf16 rounding of C plus 2^-8 of the RMS for
    the accumulation). A shard forwarded to the wrong rows, or read before
    it arrived, is off by the whole value."""
    import numpy as np
    gathered = np.concatenate([shard.astype(np.float64) for shard in a])
    passed, lines = True, []
    for device in range(config.devices):
        reference = gathered @ b[device].astype(np.float64)
        out = c[device].astype(np.float64)
        rms = float(np.sqrt(np.mean(reference ** 2)))
        error = np.abs(out - reference)
        allowed = 2 ** -7 * np.abs(reference) + 2 ** -8 * rms
        bad = ~(error <= allowed)  # NaN fails
        line = (f"device {device}: max |C - ref| {np.nanmax(error):.3g}, "
                f"{int(bad.sum())} of {out.size} elements outside the tolerance")
        if bad.any():
            row, col = np.argwhere(bad)[0]
            line += (f"; first at ({row}, {col}) (shard {row // config.m}): "
                     f"{out[row, col]:.6g} vs {reference[row, col]:.6g}")
            passed = False
        lines.append(line)
    return passed, "\n".join(lines)


def run(config: Config, backend: str, seed: int = 0, kernel=None):
    """Runs the kernel on ``config.devices`` devices of ``backend``; returns
    (A shards, B's, C's). ``kernel`` replaces the one ``build`` makes
    (a compiled kernel's manifest path, say)."""
    import numpy as np
    if kernel is None:
        kernel = build(config)
    a, b = inputs(config, seed)
    devices = mgpu.Devices(config.devices, backend=backend)
    gathered = devices.symmetric((config.devices * config.m, config.k), mgpu.bf16)
    arrived = devices.symmetric((config.devices * (config.m // TILE_M),), mgpu.i32)
    arrived.zero()
    # NaN, so that an element the kernel never writes fails the check.
    c = [np.full((config.devices * config.m, config.n), np.nan, mgpu.bf16.numpy)
         for _ in range(config.devices)]
    devices.launch(kernel, [[a[d], b[d], gathered, arrived, c[d]]
                            for d in range(config.devices)])
    leftover = [int(np.count_nonzero(arrived.download(d))) for d in range(config.devices)]
    if any(leftover):
        raise RuntimeError(f"semaphores left nonzero after the kernel: {leftover} per device")
    return a, b, c


def parse(argv: Sequence[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="allgather_matmul.py",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--m", type=int, default=1024, help="rows of each device's shard of A")
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--stages", type=int, default=3, help="2 to 6 (default 3)")
    parser.add_argument("--grid", type=int, default=132,
                        help="persistent blocks per device (default 132, one per H100 SM)")
    parser.add_argument("--tile-n", type=int, default=128, help="64, 128 or 256")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--emulate", action="store_true",
                        help="run on the PTX emulator's devices instead of GPUs")
    parser.add_argument("--emit-mlir", metavar="PATH",
                        help="write the kernel's MLIR to PATH and exit")
    return parser, parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    parser, args = parse(argv)
    config = Config(args.devices, args.m, args.n, args.k, args.stages, args.grid, args.tile_n)
    try:
        kernel = build(config)
    except ValueError as error:
        parser.error(str(error))  # exits 2
    if args.emit_mlir:
        with open(args.emit_mlir, "w") as out:
            out.write(str(kernel.module))
        print(f"wrote {args.emit_mlir}")
        return 0
    backend = "emulator" if args.emulate else "cuda"
    if args.emulate:  # the emulator's devices, read when its driver starts
        os.environ.setdefault("MOSAIC_EMULATOR_DEVICES", str(config.devices))
    what = (f"allgather_matmul on {config.devices} devices, shards {config.m}x{config.k}, "
            f"B {config.k}x{config.n}, grid {config.grid}, on the {backend}")
    try:
        a, b, c = run(config, backend, args.seed)
    except ValueError as error:  # e.g. fewer devices than asked for
        print(f"{what}: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:  # a driver error; on the emulator, a fault or a hazard
        print(f"{what}: FAIL; {error}")
        return 1
    passed, summary = check(config, a, b, c)
    print(f"{what}: {'PASS' if passed else 'FAIL'}\n{summary}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
