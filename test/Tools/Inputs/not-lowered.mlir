// Inserting a vector into another in registers is not lowered yet.
gpu.module @kernels {
  gpu.func @insert(%x: memref<2x128x64xf32>, %out: memref<2x128x64xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %v = mosaic_gpu.vector_load %x : memref<2x128x64xf32> -> vector<2x128x64xf32>
    %e = vector.extract %v[1] : vector<128x64xf32> from vector<2x128x64xf32>
    %i = vector.insert %e, %v[0] : vector<128x64xf32> into vector<2x128x64xf32>
    mosaic_gpu.vector_store %i, %out : vector<2x128x64xf32>, memref<2x128x64xf32>
    gpu.return
  }
}
