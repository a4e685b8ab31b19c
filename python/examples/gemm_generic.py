"""bf16 GEMM, C = A * B with an f32 accumulator, written once for every
shape: the kernel of gemm_bf16.py (128x128 tiles of C, 64-wide K slices
through a two-stage TMA ring) with M, N and K taken from the arrays it is
called with (`mgpu.jit`) and its loops written as Python `for` statements
(`mgpu.range`). M and N must be multiples of 128, K of 64.

    PYTHONPATH=build/python /usr/bin/python3 python/examples/gemm_generic.py --emulate
"""
import argparse
import sys

import numpy as np

import mosaic_gpu as mgpu

TILE_M, TILE_N, TILE_K, STAGES = 128, 128, 64, 2


def _outputs(a, b):
    a.check_dtype("bf16")
    b.check_dtype("bf16")
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"`a` and `b` must be matrices with a.shape[1] == b.shape[0]; "
                         f"got {a}, {b}")
    a.tiles(1, TILE_K)
    return [((a.shape[0], b.shape[1]), "bf16")]


def _smem(a, b):
    return [mgpu.SmemBuffer((STAGES, TILE_M, TILE_K), "bf16"),
            mgpu.SmemBuffer((STAGES, TILE_K, TILE_N), "bf16"),
            mgpu.SmemBuffer((TILE_M, TILE_N), "bf16"),
            mgpu.Barriers(count=STAGES, arrival_count=1)]


@mgpu.jit(block=(128, 1, 1), outputs=_outputs, smem=_smem,
          grid=lambda a, b: (b.tiles(1, TILE_N), a.tiles(0, TILE_M), 1))
def gemm(a, b, c, a_smem, b_smem, c_smem, barriers):
    m0 = mgpu.block_id("y").astype("i32") * TILE_M
    n0 = mgpu.block_id("x").astype("i32") * TILE_N
    k_steps = a.shape[1] // TILE_K
    stage_bytes = (TILE_M * TILE_K + TILE_K * TILE_N) * 2

    def fetch(stage, k_step):
        """Fills `stage` with the K slice `k_step` of A and B."""
        k0 = k_step.astype("i32") * TILE_K
        mgpu.arrive_expect_tx(barriers[stage], stage_bytes)
        mgpu.async_load(a, a_smem[stage], barriers[stage], indices=[m0, k0])
        mgpu.async_load(b, b_smem[stage], barriers[stage], indices=[k0, n0])

    for stage in mgpu.range(min(STAGES, k_steps)):
        fetch(stage, stage)

    loop = mgpu.range(k_steps, carry=mgpu.constant(0.0, "f32", (TILE_M, TILE_N)))
    for k, acc in loop:
        stage = k % STAGES
        mgpu.wait(barriers[stage], (k // STAGES).astype("i64").astype("i1"))
        acc = mgpu.wgmma(acc, a_smem[stage], b_smem[stage])

        @mgpu.if_(k + STAGES < k_steps)  # refill this stage, STAGES steps ahead
        def _():
            fetch(stage, k + STAGES)
        loop.carry(acc)

    mgpu.vector_store(loop.results.astype("bf16"), c_smem)
    mgpu.async_store(c_smem, c, indices=[m0, n0])


SHAPES = [(128, 128, 64), (256, 128, 192), (128, 256, 256)]


def check(shape, backend=None, seed=0):
    """Runs the kernel on random bf16 matrices of `shape` (M, N, K) and
    returns the largest difference from the float32 product of the same
    inputs, relative to the largest element of the product."""
    import ml_dtypes
    m, n, k = shape
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((k, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
    c = gemm(a, b, backend=backend).astype(np.float32)
    reference = a.astype(np.float32) @ b.astype(np.float32)
    return float(np.abs(c - reference).max() / np.abs(reference).max())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--emulate", action="store_true", help="run on the PTX emulator")
    args = parser.parse_args()
    worst = 0.0
    for shape in SHAPES:
        error = check(shape, "emulator" if args.emulate else None)
        print(f"gemm {shape}: max relative error {error:.2e}")
        worst = max(worst, error)
    # bf16 output: one rounding of each element (8 bits of mantissa).
    print("PASS" if worst < 1e-2 else "FAIL")
    sys.exit(0 if worst < 1e-2 else 1)
