// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-finalize-kernels -verify-diagnostics

// The tensor maps a kernel lists are the lowering's descriptions of its
// parameters; anything else (hand-written IR) is an error, not a crash.
gpu.module @kernels {
  // expected-error @+1 {{entry 0 of `mosaic_gpu.tensor_maps` is not a tensor-map description of one of its parameters: 7 : i64}}
  llvm.func @not_a_dictionary(%map: !llvm.ptr) attributes {mosaic_gpu.tensor_maps = [7]} {
    llvm.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{entry 0 of `mosaic_gpu.tensor_maps` is not a tensor-map description of one of its parameters: {parameter = 0 : i64}}}
  llvm.func @missing_fields(%map: !llvm.ptr) attributes {mosaic_gpu.tensor_maps = [{parameter = 0 : i64}]} {
    llvm.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{entry 0 of `mosaic_gpu.tensor_maps` is not a tensor-map description of one of its parameters}}
  llvm.func @no_such_parameter(%map: !llvm.ptr) attributes {mosaic_gpu.tensor_maps = [{box_dims = array<i64: 64, 128>, buffer = 0 : i64, element_strides = array<i64: 1, 1>, element_type = "bf16", global_dims = array<i64: 64, 4096>, global_strides = array<i64: 128>, index = 0 : i64, parameter = 3 : i64, rank = 2 : i64, swizzle = 0 : i64}]} {
    llvm.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{entry 0 of `mosaic_gpu.tensor_maps` is not a tensor-map description of one of its parameters}}
  llvm.func @unknown_element_type(%map: !llvm.ptr) attributes {mosaic_gpu.tensor_maps = [{box_dims = array<i64: 64, 128>, buffer = 0 : i64, element_strides = array<i64: 1, 1>, element_type = "i1", global_dims = array<i64: 64, 4096>, global_strides = array<i64: 128>, index = 0 : i64, parameter = 0 : i64, rank = 2 : i64, swizzle = 0 : i64}]} {
    llvm.return
  }
}
