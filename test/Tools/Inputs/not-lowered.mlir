// Slicing a vector in registers is not lowered yet.
gpu.module @kernels {
  gpu.func @slice(%x: memref<128x64xf32>, %out: memref<128x32xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %v = mosaic_gpu.vector_load %x : memref<128x64xf32> -> vector<128x64xf32>
    %s = vector.extract_strided_slice %v {offsets = [0, 0], sizes = [128, 32], strides = [1, 1]} : vector<128x64xf32> to vector<128x32xf32>
    mosaic_gpu.vector_store %s, %out : vector<128x32xf32>, memref<128x32xf32>
    gpu.return
  }
}
