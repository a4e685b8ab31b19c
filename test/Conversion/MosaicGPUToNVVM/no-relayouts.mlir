// RUN: mosaic-opt %s -mosaic-gpu-infer-layouts -mosaic-gpu-lower | FileCheck %s

// The two kernels of LayoutInference/infer-layouts-relayouts.mlir, lowered:
// inference leaves no relayout, so no trip through shared memory (a
// warpgroup barrier on each side) appears beyond the reduction's own
// exchange between warps.

#wgmma = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>

gpu.module @kernels {
  // CHECK-LABEL: gpu.func @broadcast_column_to_wgmma
  // CHECK-NOT: nvvm.barrier
  // CHECK: gpu.return
  gpu.func @broadcast_column_to_wgmma(%ref: memref<64xf32>, %out: memref<128x64xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %v = mosaic_gpu.vector_load %ref : memref<64xf32> -> vector<64xf32>
    %b = mosaic_gpu.broadcast_in_dim %v, dims [1] : vector<64xf32> -> vector<128x64xf32>
    %c = mosaic_gpu.layout_cast %b : vector<128x64xf32> to #wgmma
    mosaic_gpu.vector_store %c, %out : vector<128x64xf32>, memref<128x64xf32>
    gpu.return
  }

  // The reduction over the rows combines the four warps' partial sums
  // through shared memory: two barriers, and no others.
  // CHECK-LABEL: gpu.func @reduce_wgmma_into_loaded_accumulator
  // CHECK-COUNT-2: nvvm.barrier
  // CHECK-NOT: nvvm.barrier
  // CHECK: gpu.return
  gpu.func @reduce_wgmma_into_loaded_accumulator(%ref: memref<128x64xf32>, %sums: memref<64xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %acc = mosaic_gpu.vector_load %sums : memref<64xf32> -> vector<64xf32>
    %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
    %c = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #wgmma
    %r = vector.multi_reduction <add>, %c, %acc [0] : vector<128x64xf32> to vector<64xf32>
    mosaic_gpu.vector_store %r, %sums : vector<64xf32>, memref<64xf32>
    gpu.return
  }
}
