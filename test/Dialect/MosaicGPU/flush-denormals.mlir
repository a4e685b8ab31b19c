// RUN: mosaic-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// `mosaic_gpu.flush_denormals` marks a kernel whose f32 arithmetic flushes
// subnormals to zero; every kernel of its gpu.module must agree.
// CHECK-LABEL: gpu.func @k
// CHECK-SAME: mosaic_gpu.flush_denormals
gpu.module @kernels {
  gpu.func @k() kernel attributes {mosaic_gpu.flush_denormals} {
    gpu.return
  }
  gpu.func @k2() kernel attributes {mosaic_gpu.flush_denormals} {
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{`mosaic_gpu.flush_denormals` is a unit attribute, but it is true}}
  gpu.func @k() kernel attributes {mosaic_gpu.flush_denormals = true} {
    gpu.return
  }
}

// -----

// expected-error @+1 {{`mosaic_gpu.flush_denormals` belongs on a gpu.func kernel}}
gpu.module @kernels attributes {mosaic_gpu.flush_denormals} {
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{flushes subnormals (`mosaic_gpu.flush_denormals`) but kernel @plain of the same gpu.module does not; the library functions (exp, log...) follow one setting per module, so put the kernels in separate gpu.modules or mark them all}}
  gpu.func @flushing() kernel attributes {mosaic_gpu.flush_denormals} {
    gpu.return
  }
  gpu.func @plain() kernel {
    gpu.return
  }
}
