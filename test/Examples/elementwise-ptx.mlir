// The elementwise example lowers to per-thread registers and through the
// upstream NVVM/LLVM passes to PTX for sm_90a (and, where ptxas is
// installed, to a CUBIN).
// RUN: mosaic-opt %mosaic_src_root/examples/elementwise.mlir -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms -mosaic-gpu-lower -canonicalize -cse --nvvm-attach-target='chip=sm_90a features=+ptx80 O=3' --expand-strided-metadata --lower-affine --convert-gpu-to-nvvm --convert-vector-to-llvm --convert-arith-to-llvm --finalize-memref-to-llvm --convert-func-to-llvm --reconcile-unrealized-casts --gpu-module-to-binary=format=isa | FileCheck %s
// RUN: %if ptxas %{ mosaic-opt %mosaic_src_root/examples/elementwise.mlir -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms -mosaic-gpu-lower -canonicalize -cse --nvvm-attach-target='chip=sm_90a features=+ptx80 O=3' --expand-strided-metadata --lower-affine --convert-gpu-to-nvvm --convert-vector-to-llvm --convert-arith-to-llvm --finalize-memref-to-llvm --convert-func-to-llvm --reconcile-unrealized-casts --gpu-module-to-binary=format=bin | FileCheck %s --check-prefix=CUBIN %}

// CHECK: gpu.binary @kernels
// CHECK-SAME: .target sm_90a
// CHECK-SAME: .entry elementwise(
// CHECK-SAME: %tid.x
// CHECK-SAME: ld.global
// CHECK-SAME: mul.rn.f32
// CHECK-SAME: add.rn.f32
// CHECK-SAME: st.global

// CUBIN: gpu.binary @kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">, properties = {{.*}}, bin = "{{.+}}">]
