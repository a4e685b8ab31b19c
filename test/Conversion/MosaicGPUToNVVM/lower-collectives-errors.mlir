// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-lower -verify-diagnostics

// Only kernels take the collective table.
gpu.module @kernels {
  gpu.func @helper() {
    // expected-error @+1 {{'mosaic_gpu.device_id' op reads the collective table, which only gpu.func kernels take; it cannot be lowered in a function that is not a kernel}}
    %id = mosaic_gpu.device_id : i32
    gpu.return
  }
}

// -----

func.func @host() -> i32 {
  // expected-error @+1 {{'mosaic_gpu.device_count' op reads the collective table, which only gpu.func kernels take}}
  %n = mosaic_gpu.device_count : i32
  return %n : i32
}
