// RUN: mosaic-opt %s -split-input-file -verify-diagnostics

// Misuses of the multi-device ops and of `mosaic_gpu.symmetric`, one per
// verifier error.

gpu.module @kernels {
  gpu.func @remote_of_plain_argument(%x: memref<128xf32>, %d: i32) kernel {
    // expected-error @+1 {{'mosaic_gpu.remote_ref' op `ref` must be a kernel argument marked `mosaic_gpu.symmetric`, the only buffers that exist on every device}}
    %r = mosaic_gpu.remote_ref %x, %d : memref<128xf32>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @remote_of_remote(%x: memref<128xf32> {mosaic_gpu.symmetric}, %d: i32) kernel {
    %r = mosaic_gpu.remote_ref %x, %d : memref<128xf32>
    // expected-error @+1 {{'mosaic_gpu.remote_ref' op `ref` is already a remote view; take the remote_ref of the symmetric argument itself, not of another remote_ref}}
    %rr = mosaic_gpu.remote_ref %r, %d : memref<128xf32>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @remote_of_shared(%d: i32) kernel {
    %s = mosaic_gpu.slice_smem 0 : memref<128xf32, #gpu.address_space<workgroup>>
    // expected-error @+1 {{'mosaic_gpu.remote_ref' op `ref` must be in global memory (no memory space or #gpu.address_space<global>), but it is in #gpu.address_space<workgroup>}}
    %r = mosaic_gpu.remote_ref %s, %d : memref<128xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @remote_of_subview(%x: memref<128xf32> {mosaic_gpu.symmetric}, %d: i32) kernel {
    %v = memref.subview %x[0] [64] [1] : memref<128xf32> to memref<64xf32, strided<[1]>>
    // expected-error @+1 {{'mosaic_gpu.remote_ref' op `ref` must be a kernel argument marked `mosaic_gpu.symmetric`}}
    %r = mosaic_gpu.remote_ref %v, %d : memref<64xf32, strided<[1]>>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @wait_on_remote(%s: memref<4xi32> {mosaic_gpu.symmetric}, %d: i32) kernel {
    %r = mosaic_gpu.remote_ref %s, %d : memref<4xi32>
    // expected-error @+1 {{'mosaic_gpu.semaphore_wait' op waits on a remote view; a device waits on its own semaphores only}}
    mosaic_gpu.semaphore_wait %r[%d], %d : memref<4xi32>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @signal_remote_on_device(%s: memref<4xi32> {mosaic_gpu.symmetric}, %d: i32) kernel {
    %r = mosaic_gpu.remote_ref %s, %d : memref<4xi32>
    // expected-error @+1 {{'mosaic_gpu.semaphore_signal' op names a device with `on`, but `semaphores` is already a remote view}}
    mosaic_gpu.semaphore_signal %r[%d], %d on %d : memref<4xi32>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @semaphore_in_shared(%d: i32) kernel {
    %s = mosaic_gpu.slice_smem 0 : memref<4xi32, #gpu.address_space<workgroup>>
    // expected-error @+1 {{'mosaic_gpu.semaphore_signal' op `semaphores` must be in global memory (no memory space or #gpu.address_space<global>), but it is in #gpu.address_space<workgroup>}}
    mosaic_gpu.semaphore_signal %s[%d], %d : memref<4xi32, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @wait_in_shared(%d: i32) kernel {
    %s = mosaic_gpu.slice_smem 0 : memref<4xi32, #gpu.address_space<workgroup>>
    // expected-error @+1 {{'mosaic_gpu.semaphore_wait' op `semaphores` must be in global memory}}
    mosaic_gpu.semaphore_wait %s[%d], %d : memref<4xi32, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @semaphore_not_i32(%s: memref<4xi64> {mosaic_gpu.symmetric}, %d: i32) kernel {
    // expected-error @+1 {{'mosaic_gpu.semaphore_signal' op operand #0 must be memref of 32-bit signless integer values}}
    "mosaic_gpu.semaphore_signal"(%s, %d, %d) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<4xi64>, i32, i32) -> ()
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @wait_not_i32(%s: memref<4xf32> {mosaic_gpu.symmetric}, %d: i32) kernel {
    // expected-error @+1 {{'mosaic_gpu.semaphore_wait' op operand #0 must be memref of 32-bit signless integer values}}
    "mosaic_gpu.semaphore_wait"(%s, %d, %d) : (memref<4xf32>, i32, i32) -> ()
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @signal_index_count(%s: memref<2x4xi32> {mosaic_gpu.symmetric}, %d: i32) kernel {
    // expected-error @+1 {{'mosaic_gpu.semaphore_signal' op has 1 indices, but `semaphores` has rank 2}}
    mosaic_gpu.semaphore_signal %s[%d], %d : memref<2x4xi32>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @wait_index_count(%s: memref<4xi32> {mosaic_gpu.symmetric}, %d: i32) kernel {
    // expected-error @+1 {{'mosaic_gpu.semaphore_wait' op has 2 indices, but `semaphores` has rank 1}}
    mosaic_gpu.semaphore_wait %s[%d, %d], %d : memref<4xi32>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @semaphore_not_symmetric(%s: memref<4xi32>, %d: i32) kernel {
    // expected-error @+1 {{'mosaic_gpu.semaphore_wait' op `semaphores` must be a kernel argument marked `mosaic_gpu.symmetric` or a remote_ref of one}}
    mosaic_gpu.semaphore_wait %s[%d], %d : memref<4xi32>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{'gpu.func' op argument #0 is `mosaic_gpu.symmetric`, so it must be a memref in global memory, but it is 'i32'}}
  gpu.func @symmetric_scalar(%d: i32 {mosaic_gpu.symmetric}) kernel {
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{'gpu.func' op argument #0 is `mosaic_gpu.symmetric`, so it must be a memref in global memory, but it is 'memref<4xi32, #gpu.address_space<workgroup>>'}}
  gpu.func @symmetric_shared(%s: memref<4xi32, #gpu.address_space<workgroup>> {mosaic_gpu.symmetric}) kernel {
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{'gpu.func' op `mosaic_gpu.symmetric` belongs on an argument of a gpu.func kernel}}
  gpu.func @symmetric_not_kernel(%s: memref<4xi32> {mosaic_gpu.symmetric}) {
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{'gpu.func' op `mosaic_gpu.symmetric` is a unit attribute, but argument #0 has 1 : i32}}
  gpu.func @symmetric_not_unit(%s: memref<4xi32> {mosaic_gpu.symmetric = 1 : i32}) kernel {
    gpu.return
  }
}
