"""Matmul reduce-scatter across D devices, the reduction hidden in the GEMM:
device d holds A_d (M x k) and B_d (k x N); the devices together compute
S = sum_d A_d @ B_d, and device d gets its rows [d M / D, (d + 1) M / D)
in f32 (tensor parallelism's row-parallel linear layer).

The partial sums travel around a ring. S's rows are split into D chunks.
At chunk step s (0 .. D-1), device d computes its product for chunk
j = (d - s - 1) mod D; from step 1 on it adds the partial sum of the
chunk's earlier devices, which its left neighbour stored into its
`partial` buffer (symmetric: M x N f32 on every device). Before the last
step it stores the sum into the right neighbour's `partial`, and at the
last step, where j = d, the sum is complete and goes to the output.

Each consumer warpgroup handles a 64-row half of an output tile. It
- waits for (and consumes) the semaphore of its half, which the left
  neighbour's consumer signalled once its vector stores were done;
- loads the partial sum straight from global memory into its accumulator's
  layout;
- stores the new sum into the neighbour's memory with vector stores;
- signals the neighbour.
The producer warpgroup meanwhile loads the next tile's stages, so the
communication of one tile overlaps the GEMM of the next. The semaphores
end at zero.

The GEMM is the warp-specialized pipeline of gemm_ws.py
(mosaic_gpu.WarpSpecializedPipeline), walking the tiles chunk by chunk in
ring order.

    matmul_reduce_scatter.py --devices 4 --m 512 --n 128 --k 128 --grid 2 --emulate
    matmul_reduce_scatter.py --devices 8 --emit-mlir matmul_reduce_scatter.mlir

Exits 0 when every device's rows match NumPy's float64 sum, 1 on a
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
    m: int  # rows of A_d and of S
    n: int
    k: int
    stages: int = 3
    grid: int = 132
    tile_n: int = 128


def smem(config: Config) -> list:
    """The A ring (two 64-row halves per stage) and the B ring."""
    return [mgpu.SmemBuffer((config.stages, 2, HALF_M, TILE_K), mgpu.bf16),
            mgpu.SmemBuffer((config.stages, TILE_K, config.tile_n), mgpu.bf16)]


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
    chunk = TILE_M * config.devices
    if config.m <= 0 or config.m % chunk:
        raise ValueError(f"--m {config.m} must be a positive multiple of {chunk}: "
                         f"{config.devices} devices' chunks of whole 128-row tiles")
    for flag, size, tile, what in (
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
    chunk = m // devices
    tiles_per_chunk = chunk // TILE_M
    tiles_n = n // config.tile_n
    pipeline = mgpu.WarpSpecializedPipeline(stages=config.stages, consumers=2)

    @mgpu.kernel(grid=(config.grid, 1, 1), block=pipeline.block,
                 inputs=[((m, k), mgpu.bf16), ((k, n), mgpu.bf16), ((m, n), mgpu.f32),
                         ((m // TILE_M * tiles_n * 2,), mgpu.i32)],
                 outputs=[((chunk, n), mgpu.f32)],
                 symmetric=[2, 3],
                 smem=smem(config) + pipeline.barriers, name="matmul_reduce_scatter")
    def kernel(a, b, partial, arrived, out, a_ring, b_ring, full, empty):
        me = mgpu.device_id().astype("index")
        right = (mgpu.device_id() + 1) % mgpu.device_count()
        partial_right = mgpu.remote_ref(partial, right)

        def chunk_rows(tile):
            """The chunk step of ``tile`` and the first row of S it computes."""
            step = tile.m // tiles_per_chunk
            j = (me + 2 * devices - step - 1) % devices
            return step, j * chunk + (tile.m % tiles_per_chunk) * TILE_M

        def fetch(tile, stage, k_step, barrier):
            _, row = chunk_rows(tile)
            k0 = (k_step * TILE_K).astype("i32")
            for half in range(2):
                mgpu.async_load(a, a_ring[stage, half], barrier,
                                indices=[(row + half * HALF_M).astype("i32"), k0])
            mgpu.async_load(b, b_ring[stage], barrier,
                            indices=[k0, (tile.n * config.tile_n).astype("i32")])

        def compute(tile, consumer, stage, k_step, acc):
            return mgpu.wgmma(acc, a_ring[stage, consumer], b_ring[stage], async_=True)

        def epilogue(tile, consumer, acc):
            step, row = chunk_rows(tile)
            row = row + consumer * HALF_M
            rows, columns = mgpu.ds(row, HALF_M), mgpu.ds(tile.n * config.tile_n, config.tile_n)
            semaphore = (row // HALF_M) * tiles_n + tile.n

            def add_received():
                mgpu.semaphore_wait(arrived, semaphore, wait_count)
                return acc + mgpu.vector_load(partial[rows, columns])

            total = mgpu.if_(step > 0, otherwise=lambda: acc, results=acc)(add_received)

            def send():
                mgpu.vector_store(total, partial_right[rows, columns])
                mgpu.semaphore_signal(arrived, semaphore, 1, device=right)

            def finish():  # the last step's chunk is this device's
                out_rows = mgpu.ds((tile.m % tiles_per_chunk) * TILE_M + consumer * HALF_M,
                                   HALF_M)
                mgpu.vector_store(total, out[out_rows, columns])

            mgpu.if_(step < devices - 1, otherwise=finish)(send)

        pipeline.emit(full, empty, rings=[a_ring, b_ring], tiles=(m // TILE_M, tiles_n),
                      steps=k // TILE_K, fetch=fetch, compute=compute,
                      init=lambda: mgpu.constant(0.0, "f32", (HALF_M, config.tile_n)),
                      epilogue=epilogue, group=tiles_per_chunk)

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


def check(config: Config, a, b, out) -> tuple[bool, str]:
    """Compares every device's rows with sum_d A_d @ B_d in float64. The
    products of bf16 inputs are exact and accumulate in f32 (the tensor
    cores truncate, so the error can grow with k rather than its root):
    2^-12 of the RMS plus 2^-16 relative per element. A partial sum dropped,
    or added twice, is off by about 1/sqrt(D) of the RMS."""
    import numpy as np
    reference = sum(x.astype(np.float64) @ y.astype(np.float64) for x, y in zip(a, b))
    rms = float(np.sqrt(np.mean(reference ** 2)))
    chunk = config.m // config.devices
    passed, lines = True, []
    for device in range(config.devices):
        expected = reference[device * chunk:(device + 1) * chunk]
        got = out[device].astype(np.float64)
        error = np.abs(got - expected)
        allowed = 2 ** -16 * np.abs(expected) + 2 ** -12 * rms
        bad = ~(error <= allowed)  # NaN fails
        line = (f"device {device}: max |S - ref| {np.nanmax(error):.3g}, "
                f"{int(bad.sum())} of {got.size} elements outside the tolerance")
        if bad.any():
            row, col = np.argwhere(bad)[0]
            line += f"; first at ({row}, {col}): {got[row, col]:.6g} vs {expected[row, col]:.6g}"
            passed = False
        lines.append(line)
    return passed, "\n".join(lines)


def run(config: Config, backend: str, seed: int = 0, kernel=None):
    """Runs the kernel on ``config.devices`` devices of ``backend``; returns
    (A's, B's, each device's rows). ``kernel`` replaces the one ``build``
    makes (a compiled kernel's manifest path, say)."""
    import numpy as np
    if kernel is None:
        kernel = build(config)
    a, b = inputs(config, seed)
    devices = mgpu.Devices(config.devices, backend=backend)
    partial = devices.symmetric((config.m, config.n), mgpu.f32)
    arrived = devices.symmetric((config.m // TILE_M * (config.n // config.tile_n) * 2,),
                                mgpu.i32)
    arrived.zero()
    # NaN, so that an element the kernel never writes fails the check.
    out = [np.full((config.m // config.devices, config.n), np.nan, np.float32)
           for _ in range(config.devices)]
    devices.launch(kernel, [[a[d], b[d], partial, arrived, out[d]]
                            for d in range(config.devices)])
    leftover = [int(np.count_nonzero(arrived.download(d))) for d in range(config.devices)]
    if any(leftover):
        raise RuntimeError(f"semaphores left nonzero after the kernel: {leftover} per device")
    return a, b, out


def parse(argv: Sequence[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="matmul_reduce_scatter.py",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--m", type=int, default=8192, help="rows of A_d and of the sum")
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--k", type=int, default=1024)
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
    what = (f"matmul_reduce_scatter on {config.devices} devices, A {config.m}x{config.k}, "
            f"B {config.k}x{config.n}, grid {config.grid}, on the {backend}")
    try:
        a, b, out = run(config, backend, args.seed)
    except ValueError as error:  # e.g. fewer devices than asked for
        print(f"{what}: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:  # a driver error; on the emulator, a fault or a hazard
        print(f"{what}: FAIL; {error}")
        return 1
    passed, summary = check(config, a, b, out)
    print(f"{what}: {'PASS' if passed else 'FAIL'}\n{summary}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
