// The elementwise example goes through mosaic-gpu-pipeline to PTX for
// sm_90a (and, where ptxas is installed, to a CUBIN). Kernel arguments are
// bare pointers: one parameter per buffer.
// RUN: mosaic-opt %mosaic_src_root/examples/elementwise.mlir -mosaic-gpu-pipeline --gpu-module-to-binary=format=isa | FileCheck %s
// RUN: %if ptxas %{ mosaic-opt %mosaic_src_root/examples/elementwise.mlir -mosaic-gpu-pipeline --gpu-module-to-binary=format=bin | FileCheck %s --check-prefix=CUBIN %}
// The pipeline's options reach the target.
// RUN: mosaic-opt %mosaic_src_root/examples/elementwise.mlir -mosaic-gpu-pipeline='features=+ptx85 opt-level=2' --gpu-module-to-binary=format=isa | FileCheck %s --check-prefix=OPTIONS

// CHECK: gpu.binary @kernels
// CHECK-SAME: .target sm_90a
// CHECK-SAME: .entry elementwise(
// CHECK-SAME: .param .u64 .ptr .align 1 elementwise_param_0,
// CHECK-SAME: .param .u64 .ptr .align 1 elementwise_param_1,
// CHECK-SAME: .param .u64 .ptr .align 1 elementwise_param_2
// CHECK-SAME: %tid.x
// CHECK-SAME: ld.global
// CHECK-SAME: mul.rn.f32
// CHECK-SAME: add.rn.f32
// CHECK-SAME: st.global

// CUBIN: gpu.binary @kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">, properties = {{.*}}, bin = "{{.+}}">]

// OPTIONS: #nvvm.target<chip = "sm_90a", features = "+ptx85">, properties = {{.*}}O = 2 : i32
// OPTIONS-SAME: .version 8.5
