// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts | FileCheck %s
// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts=report-cost=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=COST

// The cost model counts relayouts before registers. Both kernels below have
// an assignment that needs no relayout and a cheaper one in registers that
// needs a trip through shared memory to reach a consumer fixed to WGMMA;
// inference picks the first. (The lowering of both is checked for the
// absence of the relayout in Conversion/MosaicGPUToNVVM/no-relayouts.mlir.)

#wgmma = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>

// A column vector broadcast along the rows, cast to WGMMA: WGMMA_COL
// broadcasts to WGMMA. The transposed column layout takes 8 registers where
// WGMMA_COL takes 16, but it broadcasts to WGMMA_TRANSPOSED.
// COST: remark: layout assignment cost: relayouts through shared memory 0 (moving 0 registers per thread)
// CHECK-LABEL: func @broadcast_column_to_wgmma
func.func @broadcast_column_to_wgmma(%ref: memref<64xf32>, %out: memref<128x64xf32>) {
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#wgmma_col]}
  %v = mosaic_gpu.vector_load %ref : memref<64xf32> -> vector<64xf32>
  // CHECK: mosaic_gpu.broadcast_in_dim {{.*}} {in_layouts = [#wgmma_col], out_layouts = [#wgmma]}
  %b = mosaic_gpu.broadcast_in_dim %v, dims [1] : vector<64xf32> -> vector<128x64xf32>
  // CHECK: mosaic_gpu.layout_cast {{.*}} {in_layouts = [#wgmma], out_layouts = [#wgmma]}
  %c = mosaic_gpu.layout_cast %b : vector<128x64xf32> to #wgmma
  mosaic_gpu.vector_store %c, %out : vector<128x64xf32>, memref<128x64xf32>
  return
}

// -----

#wgmma = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>

// A WGMMA value reduced over its rows into a loaded accumulator: the
// accumulator is decided first, and WGMMA_COL (the reduction of WGMMA)
// takes 16 registers where the reduction of WGMMA_TRANSPOSED takes 8.
// COST: remark: layout assignment cost: relayouts through shared memory 0 (moving 0 registers per thread)
// CHECK-LABEL: func @reduce_wgmma_into_loaded_accumulator
func.func @reduce_wgmma_into_loaded_accumulator(%ref: memref<128x64xf32>, %sums: memref<64xf32>) {
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#wgmma_col]}
  %acc = mosaic_gpu.vector_load %sums : memref<64xf32> -> vector<64xf32>
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %c = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #wgmma
  // CHECK: vector.multi_reduction {{.*}} {in_layouts = [#wgmma, #wgmma_col], out_layouts = [#wgmma_col]}
  %r = vector.multi_reduction <add>, %c, %acc [0] : vector<128x64xf32> to vector<64xf32>
  mosaic_gpu.vector_store %r, %sums : vector<64xf32>, memref<64xf32>
  return
}

// -----

#transposed = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], warp_dims = [-10], lane_dims = [-6, -3, -5], vector_dim = -2>

// The same with WGMMA_TRANSPOSED fixed: the relayout-free choice is the
// transposed one, also when it costs more registers elsewhere.
// COST: remark: layout assignment cost: relayouts through shared memory 0 (moving 0 registers per thread)
// CHECK-LABEL: func @reduce_transposed_into_loaded_accumulator
func.func @reduce_transposed_into_loaded_accumulator(%ref: memref<128x64xf32>, %sums: memref<64xf32>) {
  %acc = mosaic_gpu.vector_load %sums : memref<64xf32> -> vector<64xf32>
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %c = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #transposed
  // CHECK: vector.multi_reduction {{.*}} {in_layouts = [#wgmma_transposed,
  %r = vector.multi_reduction <add>, %c, %acc [0] : vector<128x64xf32> to vector<64xf32>
  mosaic_gpu.vector_store %r, %sums : vector<64xf32>, memref<64xf32>
  return
}

// -----

#wgmma = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
#transposed = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], warp_dims = [-10], lane_dims = [-6, -3, -5], vector_dim = -2>

// Two consumers that disagree: one relayout cannot be avoided, and the
// report counts it.
// COST: remark: layout assignment cost: relayouts through shared memory 1 (moving 64 registers per thread)
// CHECK-LABEL: func @unavoidable_relayout
func.func @unavoidable_relayout(%ref: memref<128x64xf32>, %out: memref<128x64xf32>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %a = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #wgmma
  %b = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #transposed
  %s = arith.addf %a, %a : vector<128x64xf32>
  mosaic_gpu.vector_store %s, %out : vector<128x64xf32>, memref<128x64xf32>
  return
}
