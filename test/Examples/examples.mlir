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
