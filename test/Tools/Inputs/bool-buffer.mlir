gpu.module @kernels {
  gpu.func @k(%x: memref<128xf32>, %flags: memref<128xi1>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    gpu.return
  }
}
