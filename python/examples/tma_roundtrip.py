"""TMA round trip: each block copies a 128x64 bf16 tile GMEM -> SMEM (TMA,
128-byte swizzle) -> registers (doubled) -> SMEM -> GMEM (TMA).
examples/tma_roundtrip.mlir in Python."""
import mosaic_gpu as mgpu

ROWS, COLS, TILE_ROWS = 4096, 64, 128
SWIZZLED = [mgpu.Tile((8, 64)), mgpu.Swizzle(128)]


@mgpu.kernel(grid=(ROWS // TILE_ROWS, 1, 1), block=(128, 1, 1),
             inputs=[((ROWS, COLS), "bf16")], outputs=[((ROWS, COLS), "bf16")],
             smem=[mgpu.SmemBuffer((TILE_ROWS, COLS), "bf16", transforms=SWIZZLED),
                   mgpu.SmemBuffer((TILE_ROWS, COLS), "bf16", transforms=SWIZZLED),
                   mgpu.Barriers(count=1, arrival_count=1)])
def tma_roundtrip(src, dst, src_smem, dst_smem, barriers):
    row = mgpu.block_id("x").astype("i32") * TILE_ROWS
    bar = barriers[0]
    mgpu.arrive_expect_tx(bar, TILE_ROWS * COLS * 2)
    mgpu.async_load(src, src_smem, bar, indices=[row, 0])
    mgpu.wait(bar, parity=False)
    v = mgpu.vector_load(src_smem)
    mgpu.vector_store(v + v, dst_smem)
    mgpu.async_store(dst_smem, dst, indices=[row, 0])


if __name__ == "__main__":
    print(tma_roundtrip.module)
