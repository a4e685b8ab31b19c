// The elementwise example goes through mosaic-gpu-pipeline to PTX for
// sm_90a (and, where ptxas is installed, to a CUBIN). Kernel arguments are
// bare, 16-byte aligned pointers: one parameter per buffer, and each thread's
// 4-element chunks become 16-byte vector accesses.
// RUN: mosaic-opt %mosaic_src_root/examples/elementwise.mlir -mosaic-gpu-pipeline --gpu-module-to-binary=format=isa | FileCheck %s
// RUN: %if ptxas %{ mosaic-opt %mosaic_src_root/examples/elementwise.mlir -mosaic-gpu-pipeline --gpu-module-to-binary=format=bin | FileCheck %s --check-prefix=CUBIN %}
// The pipeline's options reach the target.
// RUN: mosaic-opt %mosaic_src_root/examples/elementwise.mlir -mosaic-gpu-pipeline='features=+ptx85 opt-level=2' --gpu-module-to-binary=format=isa | FileCheck %s --check-prefix=OPTIONS

// CHECK: gpu.binary @kernels
// CHECK-SAME: .target sm_90a
// CHECK-SAME: .entry elementwise(
// CHECK-SAME: .param .u64 .ptr .align 16 elementwise_param_0,
// CHECK-SAME: .param .u64 .ptr .align 16 elementwise_param_1,
// CHECK-SAME: .param .u64 .ptr .align 16 elementwise_param_2
// CHECK-SAME: %tid.x
// CHECK-SAME: ld.global.v4.b32
// CHECK-SAME: mul.rn.f32
// CHECK-SAME: add.rn.f32
// CHECK-SAME: st.global.v4.b32

// CUBIN: gpu.binary @kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">, properties = {{.*}}, bin = "{{.+}}">]

// OPTIONS: #nvvm.target<chip = "sm_90a", features = "+ptx85">, properties = {{.*}}O = 2 : i32
// OPTIONS-SAME: .version 8.5
