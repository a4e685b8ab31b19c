"""Row softmax of a 4096x128 f32 matrix: each warpgroup normalizes 64 rows.
examples/softmax.mlir in Python."""
import mosaic_gpu as mgpu

ROWS, COLS, BLOCK_ROWS = 4096, 128, 64


@mgpu.kernel(grid=(ROWS // BLOCK_ROWS, 1, 1), block=(128, 1, 1),
             inputs=[((ROWS, COLS), "f32")], outputs=[((ROWS, COLS), "f32")])
def softmax(x, out):
    rows = mgpu.ds(mgpu.block_id("x") * BLOCK_ROWS, BLOCK_ROWS)
    v = mgpu.vector_load(x[rows, :])
    row_max = v.reduce("max", axis=1)
    e = mgpu.exp(v - mgpu.broadcast_in_dim(row_max, v.shape, [0]))
    row_sum = e.reduce("add", axis=1)
    mgpu.vector_store(e / mgpu.broadcast_in_dim(row_sum, v.shape, [0]), out[rows, :])


if __name__ == "__main__":
    print(softmax.module)
