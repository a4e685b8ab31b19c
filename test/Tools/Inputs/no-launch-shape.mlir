gpu.module @kernels {
  gpu.func @k(%x: memref<128xf32>) kernel {
    gpu.return
  }
}
