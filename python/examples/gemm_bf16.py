"""bf16 GEMM, C = A * B with an f32 accumulator: each block computes a
128x128 tile of C, streaming 64-wide K slices of A and B through a two-stage
shared-memory ring filled by TMA and guarded by mbarriers.
examples/gemm_bf16.mlir in Python."""
import mosaic_gpu as mgpu

M = N = K = 4096
TILE_M, TILE_N, TILE_K, STAGES = 128, 128, 64, 2
STAGE_BYTES = (TILE_M * TILE_K + TILE_K * TILE_N) * 2


@mgpu.kernel(grid=(N // TILE_N, M // TILE_M, 1), block=(128, 1, 1),
             inputs=[((M, K), "bf16"), ((K, N), "bf16")], outputs=[((M, N), "bf16")],
             smem=[mgpu.SmemBuffer((STAGES, TILE_M, TILE_K), "bf16"),
                   mgpu.SmemBuffer((STAGES, TILE_K, TILE_N), "bf16"),
                   mgpu.SmemBuffer((TILE_M, TILE_N), "bf16"),
                   mgpu.Barriers(count=STAGES, arrival_count=1)])
def gemm(a, b, c, a_smem, b_smem, c_smem, barriers):
    m0 = mgpu.block_id("y").astype("i32") * TILE_M
    n0 = mgpu.block_id("x").astype("i32") * TILE_N
    k_steps = K // TILE_K

    def fetch(stage, k_step):
        """Fills `stage` with the K slice `k_step` of A and B."""
        k0 = k_step.astype("i32") * TILE_K
        bar = barriers[stage]
        mgpu.arrive_expect_tx(bar, STAGE_BYTES)
        mgpu.async_load(a, a_smem[stage], bar, indices=[m0, k0])
        mgpu.async_load(b, b_smem[stage], bar, indices=[k0, n0])

    @mgpu.for_loop(0, STAGES)
    def _(s):
        fetch(s, s)

    @mgpu.for_loop(0, k_steps, carry=mgpu.constant(0.0, "f32", (TILE_M, TILE_N)))
    def acc(k, acc):
        stage = k % STAGES
        parity = (k // STAGES).astype("i64").astype("i1")
        mgpu.wait(barriers[stage], parity)
        acc = mgpu.wgmma(acc, a_smem[stage], b_smem[stage])
        # Refill this stage with the slice STAGES steps ahead.
        next_k = k + STAGES

        @mgpu.if_(next_k < k_steps)
        def _():
            fetch(stage, next_k)
        return acc

    mgpu.vector_store(acc.astype("bf16"), c_smem)
    mgpu.async_store(c_smem, c, indices=[m0, n0])


if __name__ == "__main__":
    print(gemm.module)
