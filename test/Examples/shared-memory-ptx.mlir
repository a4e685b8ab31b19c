// A kernel that stages data through shared memory compiles to PTX with
// shared-memory stores and loads around the barrier.
// RUN: mosaic-opt %s -mosaic-gpu-pipeline --gpu-module-to-binary=format=isa | FileCheck %s

// CHECK: .extern .shared .align 1024 .b8 __dynamic_shmem__0[]
// CHECK-SAME: st.shared.v4.b32
// CHECK-SAME: bar.sync
// CHECK-SAME: ld.shared.v4.b32
gpu.module @kernels {
  gpu.func @through_shared_memory(%in: memref<128x64xf32>, %out: memref<128x64xf32>) kernel {
    %s = mosaic_gpu.slice_smem 1024 : memref<128x64xf32, #gpu.address_space<workgroup>>
    %v = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>
    mosaic_gpu.vector_store %v, %s : vector<128x64xf32>, memref<128x64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %w = mosaic_gpu.vector_load %s : memref<128x64xf32, #gpu.address_space<workgroup>> -> vector<128x64xf32>
    mosaic_gpu.vector_store %w, %out : vector<128x64xf32>, memref<128x64xf32>
    gpu.return
  }
}
