// A full reduction to a scalar crosses warps, which the lowering does not
// support yet.
gpu.module @kernels {
  gpu.func @sum(%x: memref<128x64xf32>, %out: memref<128xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %v = mosaic_gpu.vector_load %x : memref<128x64xf32> -> vector<128x64xf32>
    %zero = arith.constant 0.0 : f32
    %s = vector.multi_reduction <add>, %v, %zero [0, 1] : vector<128x64xf32> to f32
    %b = vector.broadcast %s : f32 to vector<128xf32>
    mosaic_gpu.vector_store %b, %out : vector<128xf32>, memref<128xf32>
    gpu.return
  }
}
