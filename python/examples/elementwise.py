"""Elementwise: out = x * y + x over 1M f32 elements, one 8192-element chunk
per warpgroup (block of 128 threads). examples/elementwise.mlir in Python."""
import mosaic_gpu as mgpu

N, CHUNK = 1048576, 8192


@mgpu.kernel(grid=(N // CHUNK, 1, 1), block=(128, 1, 1),
             inputs=[((N,), "f32"), ((N,), "f32")], outputs=[((N,), "f32")])
def elementwise(x, y, out):
    offset = mgpu.block_id("x") * CHUNK
    xv = mgpu.vector_load(x[mgpu.ds(offset, CHUNK)])
    yv = mgpu.vector_load(y[mgpu.ds(offset, CHUNK)])
    mgpu.vector_store(xv * yv + xv, out[mgpu.ds(offset, CHUNK)])


if __name__ == "__main__":
    print(elementwise.module)
