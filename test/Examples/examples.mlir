// Every shipped example kernel parses, verifies and prints.
// RUN: mosaic-opt %mosaic_src_root/examples/elementwise.mlir | FileCheck %s --check-prefix=ELEMENTWISE
// RUN: mosaic-opt %mosaic_src_root/examples/softmax.mlir | FileCheck %s --check-prefix=SOFTMAX
// RUN: mosaic-opt %mosaic_src_root/examples/tma_roundtrip.mlir | FileCheck %s --check-prefix=TMA
// RUN: mosaic-opt %mosaic_src_root/examples/gemm_bf16.mlir | FileCheck %s --check-prefix=GEMM

// ELEMENTWISE-LABEL: gpu.func @elementwise
// ELEMENTWISE: mosaic_gpu.vector_load
// ELEMENTWISE: mosaic_gpu.vector_store

// SOFTMAX-LABEL: gpu.func @softmax
// SOFTMAX: vector.multi_reduction <maximumf>
// SOFTMAX: mosaic_gpu.broadcast_in_dim
// SOFTMAX: vector.multi_reduction <add>

// TMA-LABEL: gpu.func @tma_roundtrip
// TMA: mosaic_gpu.async_load
// TMA: mosaic_gpu.wait
// TMA: mosaic_gpu.async_store

// GEMM-LABEL: gpu.func @gemm
// GEMM: scf.for
// GEMM: mosaic_gpu.wait
// GEMM: mosaic_gpu.wgmma
// GEMM: mosaic_gpu.async_store

// Layout inference and tiling succeed on every example.
// RUN: mosaic-opt %mosaic_src_root/examples/elementwise.mlir -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms | FileCheck %s --check-prefix=ELEMENTWISE-INFER
// RUN: mosaic-opt %mosaic_src_root/examples/softmax.mlir -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms | FileCheck %s --check-prefix=SOFTMAX-INFER
// RUN: mosaic-opt %mosaic_src_root/examples/tma_roundtrip.mlir -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms | FileCheck %s --check-prefix=TMA-INFER
// RUN: mosaic-opt %mosaic_src_root/examples/gemm_bf16.mlir -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms | FileCheck %s --check-prefix=GEMM-INFER

// ELEMENTWISE-INFER: arith.addf {{.*}} out_layouts = [#mosaic_gpu.WGStridedFragLayout<[8192], 4>]

// SOFTMAX-INFER: vector.multi_reduction <maximumf>, {{.*}} out_layouts = [#wgmma_row]
// SOFTMAX-INFER: math.exp {{.*}} out_layouts = [#wgmma]

// TMA-INFER: mosaic_gpu.slice_smem 0 {{.*}} : memref<16x1x8x64xbf16, #gpu.address_space<workgroup>>
// TMA-INFER: mosaic_gpu.async_load {{.*}} slice_lengths [16, 1, 8, 64]
// TMA-INFER: mosaic_gpu.vector_load {{.*}} out_layouts = [#wgmma], transforms_applied}

// GEMM-INFER: mosaic_gpu.slice_smem 0 {{.*}} : memref<2x16x1x8x64xbf16, #gpu.address_space<workgroup>>
// GEMM-INFER: mosaic_gpu.slice_smem 32768 {{.*}} : memref<2x8x2x8x64xbf16, #gpu.address_space<workgroup>>
// GEMM-INFER: mosaic_gpu.wgmma {{.*}} in_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>], [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]], out_layouts = [#wgmma], transforms_applied}
// GEMM-INFER: arith.truncf {{.*}} out_layouts = [#wgmma]
