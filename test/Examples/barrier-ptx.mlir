// A warpgroup hands data to itself through shared memory, synchronized by an
// mbarrier instead of a block barrier, down to PTX (and, where ptxas is
// installed, a CUBIN).
// RUN: mosaic-opt %s -mosaic-gpu-pipeline --gpu-module-to-binary=format=isa | FileCheck %s
// RUN: %if ptxas %{ mosaic-opt %s -mosaic-gpu-pipeline --gpu-module-to-binary=format=bin | FileCheck %s --check-prefix=CUBIN %}

// The PTX is an escaped string: `\09` is a tab.
// CHECK: .entry handoff(
// CHECK-SAME: setp.eq.b32 \09[[FIRST:%p[0-9]+]], %r{{[0-9]+}}, 0;
// CHECK-SAME: mov.b32 \09[[COUNT:%r[0-9]+]], 128;
// CHECK-SAME: @[[FIRST]] mbarrier.init.shared.b64 [%r{{[0-9]+}}], [[COUNT]];
// CHECK-SAME: fence.mbarrier_init.release.cluster;
// CHECK-SAME: bar.sync \090;
// CHECK-SAME: st.shared
// CHECK-SAME: mbarrier.arrive.shared.b64
// CHECK-SAME: LAB_WAIT:
// CHECK-SAME: mbarrier.try_wait.parity.shared.b64
// CHECK-SAME: bra.uni LAB_WAIT;
// CHECK-SAME: ld.shared
// CHECK-SAME: st.global

// CUBIN: gpu.binary @kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">, properties = {{.*}}, bin = "{{.+}}">]
gpu.module @kernels {
  gpu.func @handoff(%in: memref<128x64xf32>, %out: memref<128x64xf32>) kernel {
    %bar = mosaic_gpu.slice_smem 0 : memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    %data = mosaic_gpu.slice_smem 1024 : memref<128x64xf32, #gpu.address_space<workgroup>>
    mosaic_gpu.initialize_barrier %bar, arrival_count = 1, num_barriers = 1 : memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    %v = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>
    mosaic_gpu.vector_store %v, %data : vector<128x64xf32>, memref<128x64xf32, #gpu.address_space<workgroup>>
    %b = memref.subview %bar[0] [1] [1] : memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>> to memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    mosaic_gpu.arrive %b : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    %phase = arith.constant false
    mosaic_gpu.wait %b, %phase : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    %w = mosaic_gpu.vector_load %data : memref<128x64xf32, #gpu.address_space<workgroup>> -> vector<128x64xf32>
    mosaic_gpu.vector_store %w, %out : vector<128x64xf32>, memref<128x64xf32>
    gpu.return
  }
}
