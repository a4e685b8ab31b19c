// RUN: mosaic-opt %s | FileCheck %s
// Printing, parsing again and printing once more must give the same text.
// RUN: mosaic-opt %s | mosaic-opt | FileCheck %s
// The generic form must round-trip too.
// RUN: mosaic-opt %s --mlir-print-op-generic | mosaic-opt | FileCheck %s

// The named Hopper layouts print as aliases.
// CHECK-DAG: #wgmma = #mosaic_gpu.TiledLayout<{{\[}}[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
// CHECK-DAG: #wgmma_transposed = #mosaic_gpu.TiledLayout<{{\[}}[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], warp_dims = [-10], lane_dims = [-6, -3, -5], vector_dim = -2>
// CHECK-DAG: #wgmma_row = #mosaic_gpu.TiledLayout<{{\[}}[64], [16], [8], [1]], warp_dims = [-4], lane_dims = [-2, #mosaic_gpu.Replicated<times = 4>], vector_dim = -1>
// CHECK-DAG: #wgmma_col = #mosaic_gpu.TiledLayout<{{\[}}[8], [2]], warp_dims = [#mosaic_gpu.Replicated<times = 4>], lane_dims = [#mosaic_gpu.Replicated<times = 8>, -2], vector_dim = -1>
// CHECK-DAG: #wgmma_8bit = #mosaic_gpu.TiledLayout<{{\[}}[64, 16], [16, 16], [8, 16], [4]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>

!barrier_ref = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
!smem_bf16 = memref<128x64xbf16, #gpu.address_space<workgroup>>

// CHECK-LABEL: func @barriers
func.func @barriers(%ptr: !llvm.ptr<3>, %bar: !barrier_ref, %parity: i1) {
  // CHECK: mosaic_gpu.initialize_barrier %{{.*}}, arrival_count = 1, num_barriers = 4 : !llvm.ptr<3>
  mosaic_gpu.initialize_barrier %ptr, arrival_count = 1, num_barriers = 4 : !llvm.ptr<3>
  // CHECK: mosaic_gpu.initialize_barrier %{{.*}}, arrival_count = 128, num_barriers = 1 {orders_tensor_core = true} : !llvm.ptr<3>
  mosaic_gpu.initialize_barrier %ptr, arrival_count = 128, num_barriers = 1 {orders_tensor_core = true} : !llvm.ptr<3>
  // CHECK: mosaic_gpu.initialize_barrier %{{.*}}, arrival_count = 1, num_barriers = 4 : memref<4x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  %bars = mosaic_gpu.slice_smem 0 : memref<4x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  mosaic_gpu.initialize_barrier %bars, arrival_count = 1, num_barriers = 4 : memref<4x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  // CHECK: mosaic_gpu.arrive %[[BAR:.*]] : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  mosaic_gpu.arrive %bar : !barrier_ref
  // CHECK: mosaic_gpu.arrive %{{.*}} {orders_tensor_core = true} : memref
  mosaic_gpu.arrive %bar {orders_tensor_core = true} : !barrier_ref
  // CHECK: mosaic_gpu.arrive_expect_tx %{{.*}}, 16384 : memref
  mosaic_gpu.arrive_expect_tx %bar, 16384 : !barrier_ref
  // CHECK: mosaic_gpu.wait %{{.*}}, %{{.*}} : memref
  mosaic_gpu.wait %bar, %parity : !barrier_ref
  return
}

// CHECK-LABEL: func @barrier_types
// CHECK-SAME: memref<4x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
// CHECK-SAME: memref<!mosaic_gpu.barrier<orders_tensor_core = true>, #gpu.address_space<workgroup>>
func.func @barrier_types(
    %bars: memref<4x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>,
    %tc: memref<!mosaic_gpu.barrier<orders_tensor_core = true>, #gpu.address_space<workgroup>>) {
  // A barrier selected out of an array by a rank-reducing subview.
  %one = memref.subview %bars[2] [1] [1]
      : memref<4x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
      to memref<!mosaic_gpu.barrier, strided<[], offset: 2>, #gpu.address_space<workgroup>>
  // CHECK: mosaic_gpu.arrive %{{.*}} : memref<!mosaic_gpu.barrier, strided<[], offset: 2>, #gpu.address_space<workgroup>>
  mosaic_gpu.arrive %one : memref<!mosaic_gpu.barrier, strided<[], offset: 2>, #gpu.address_space<workgroup>>
  // CHECK: mosaic_gpu.arrive %{{.*}} : memref<!mosaic_gpu.barrier<orders_tensor_core = true>
  mosaic_gpu.arrive %tc : memref<!mosaic_gpu.barrier<orders_tensor_core = true>, #gpu.address_space<workgroup>>
  return
}

// CHECK-LABEL: func @tma
func.func @tma(%gmem: memref<1024x1024xbf16>, %gmem3: memref<4x1024x1024xbf16>,
               %smem: !smem_bf16, %bar: !barrier_ref, %i: i32, %j: i32, %p: i1) {
  // CHECK: mosaic_gpu.async_load %{{.*}}[%{{.*}}, %{{.*}}] to %{{.*}}, %{{.*}} slice_lengths [128, 64] : memref<1024x1024xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  mosaic_gpu.async_load %gmem[%i, %j] to %smem, %bar slice_lengths [128, 64]
      : memref<1024x1024xbf16>, !smem_bf16, !barrier_ref
  // A squeezed leading dim, multicast over two cluster dims, predicated.
  // CHECK: mosaic_gpu.async_load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] to %{{.*}}, %{{.*}} if %{{.*}} slice_lengths [-1, 128, 64] {collective = [#mosaic_gpu.dim<x>, #mosaic_gpu.dim<z>], oob_fill_mode = #mosaic_gpu.oob_fill_mode<promise_in_bounds>}
  mosaic_gpu.async_load %gmem3[%i, %i, %j] to %smem, %bar if %p slice_lengths [-1, 128, 64]
      {collective = [#mosaic_gpu.dim<x>, #mosaic_gpu.dim<z>],
       oob_fill_mode = #mosaic_gpu.oob_fill_mode<promise_in_bounds>}
      : memref<4x1024x1024xbf16>, !smem_bf16, !barrier_ref
  // CHECK: mosaic_gpu.async_prefetch %{{.*}}[%{{.*}}, %{{.*}}] slice_lengths [128, 64] {collective = [#mosaic_gpu.dim<y>]} : memref<1024x1024xbf16>
  mosaic_gpu.async_prefetch %gmem[%i, %j] slice_lengths [128, 64]
      {collective = [#mosaic_gpu.dim<y>]} : memref<1024x1024xbf16>
  // CHECK: mosaic_gpu.async_prefetch %{{.*}}[%{{.*}}, %{{.*}}] if %{{.*}} slice_lengths [128, 64] : memref
  mosaic_gpu.async_prefetch %gmem[%i, %j] if %p slice_lengths [128, 64] : memref<1024x1024xbf16>
  // CHECK: mosaic_gpu.async_store %{{.*}} to %{{.*}}[%{{.*}}, %{{.*}}] slice_lengths [128, 64] : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<1024x1024xbf16>
  mosaic_gpu.async_store %smem to %gmem[%i, %j] slice_lengths [128, 64]
      : !smem_bf16, memref<1024x1024xbf16>
  // CHECK: mosaic_gpu.async_store %{{.*}} to %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] if %{{.*}} slice_lengths [-1, 128, 64] {commit_group = false, reduction_op = #mosaic_gpu.tma_reduction<add>}
  mosaic_gpu.async_store %smem to %gmem3[%i, %i, %j] if %p slice_lengths [-1, 128, 64]
      {commit_group = false, reduction_op = #mosaic_gpu.tma_reduction<add>}
      : !smem_bf16, memref<4x1024x1024xbf16>
  return
}

// CHECK-LABEL: func @vector_transfers
func.func @vector_transfers(%gmem: memref<128x64xf32>, %smem: memref<128x64xf32, #gpu.address_space<workgroup>>,
                            %strided: memref<128x64xf32, strided<[128, 1]>>) {
  // CHECK: %[[V:.*]] = mosaic_gpu.vector_load %{{.*}} : memref<128x64xf32> -> vector<128x64xf32>
  %v = mosaic_gpu.vector_load %gmem : memref<128x64xf32> -> vector<128x64xf32>
  // CHECK: mosaic_gpu.vector_load %{{.*}} {optimized = true} : memref<128x64xf32, #gpu.address_space<workgroup>> -> vector<128x64xf32>
  %w = mosaic_gpu.vector_load %smem {optimized = true} : memref<128x64xf32, #gpu.address_space<workgroup>> -> vector<128x64xf32>
  // CHECK: mosaic_gpu.vector_load %{{.*}} : memref<128x64xf32, strided<[128, 1]>> -> vector<128x64xf32>
  %s = mosaic_gpu.vector_load %strided : memref<128x64xf32, strided<[128, 1]>> -> vector<128x64xf32>
  // CHECK: mosaic_gpu.vector_store %[[V]], %{{.*}} : vector<128x64xf32>, memref<128x64xf32, #gpu.address_space<workgroup>>
  mosaic_gpu.vector_store %v, %smem : vector<128x64xf32>, memref<128x64xf32, #gpu.address_space<workgroup>>
  // CHECK: mosaic_gpu.vector_store %{{.*}}, %{{.*}} {optimized = false} : vector<128x64xf32>, memref<128x64xf32>
  mosaic_gpu.vector_store %w, %gmem {optimized = false} : vector<128x64xf32>, memref<128x64xf32>
  return
}

// CHECK-LABEL: func @wgmma
func.func @wgmma(%acc: vector<128x256xf32>, %a: memref<128x64xbf16, #gpu.address_space<workgroup>>,
                 %b: memref<64x256xbf16, #gpu.address_space<workgroup>>,
                 %a_regs: vector<128x64xbf16>,
                 %b_t: memref<64x256xbf16, strided<[1, 64]>, #gpu.address_space<workgroup>>) {
  // CHECK: mosaic_gpu.wgmma %{{.*}}, %{{.*}}, %{{.*}} : vector<128x256xf32>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<64x256xbf16, #gpu.address_space<workgroup>> -> vector<128x256xf32>
  %0 = mosaic_gpu.wgmma %acc, %a, %b
      : vector<128x256xf32>, memref<128x64xbf16, #gpu.address_space<workgroup>>,
        memref<64x256xbf16, #gpu.address_space<workgroup>> -> vector<128x256xf32>
  // A in registers, B transposed.
  // CHECK: mosaic_gpu.wgmma %{{.*}}, %{{.*}}, %{{.*}} : vector<128x256xf32>, vector<128x64xbf16>, memref<64x256xbf16, strided<[1, 64]>, #gpu.address_space<workgroup>> -> vector<128x256xf32>
  %1 = mosaic_gpu.wgmma %0, %a_regs, %b_t
      : vector<128x256xf32>, vector<128x64xbf16>,
        memref<64x256xbf16, strided<[1, 64]>, #gpu.address_space<workgroup>> -> vector<128x256xf32>
  return
}

// CHECK-LABEL: func @wgmma_other_types
func.func @wgmma_other_types(
    %acc16: vector<64x128xf16>, %a16: memref<64x32xf16, #gpu.address_space<workgroup>>,
    %b16: memref<32x128xf16, #gpu.address_space<workgroup>>,
    %acc32: vector<64x64xf32>, %a8: memref<64x64xf8E4M3FN, #gpu.address_space<workgroup>>,
    %b8: memref<64x64xf8E5M2, strided<[1, 64]>, #gpu.address_space<workgroup>>,
    %acci: vector<64x64xi32>, %ai: vector<64x64xi8>,
    %bi: memref<64x64xi8, strided<[1, 64]>, #gpu.address_space<workgroup>>,
    %at: memref<64x16xf32, #gpu.address_space<workgroup>>,
    %bt: memref<16x64xf32, strided<[1, 16]>, #gpu.address_space<workgroup>>) {
  // CHECK: mosaic_gpu.wgmma {{.*}} : vector<64x128xf16>, memref<64x32xf16
  %0 = mosaic_gpu.wgmma %acc16, %a16, %b16
      : vector<64x128xf16>, memref<64x32xf16, #gpu.address_space<workgroup>>,
        memref<32x128xf16, #gpu.address_space<workgroup>> -> vector<64x128xf16>
  // Mixed fp8 inputs.
  // CHECK: mosaic_gpu.wgmma {{.*}} : vector<64x64xf32>, memref<64x64xf8E4M3FN
  %1 = mosaic_gpu.wgmma %acc32, %a8, %b8
      : vector<64x64xf32>, memref<64x64xf8E4M3FN, #gpu.address_space<workgroup>>,
        memref<64x64xf8E5M2, strided<[1, 64]>, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  // CHECK: mosaic_gpu.wgmma {{.*}} : vector<64x64xi32>, vector<64x64xi8>
  %2 = mosaic_gpu.wgmma %acci, %ai, %bi
      : vector<64x64xi32>, vector<64x64xi8>,
        memref<64x64xi8, strided<[1, 64]>, #gpu.address_space<workgroup>> -> vector<64x64xi32>
  // f32 operands are multiplied as tf32.
  // CHECK: mosaic_gpu.wgmma {{.*}} : vector<64x64xf32>, memref<64x16xf32
  %3 = mosaic_gpu.wgmma %acc32, %at, %bt
      : vector<64x64xf32>, memref<64x16xf32, #gpu.address_space<workgroup>>,
        memref<16x64xf32, strided<[1, 16]>, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// CHECK-LABEL: func @layouts
func.func @layouts(%x: vector<128x64xf32>, %row: vector<128xf32>, %col: vector<64xf32>) {
  // CHECK: mosaic_gpu.layout_cast %{{.*}} : vector<128x64xf32> to #mosaic_gpu.WGSplatFragLayout<[128, 64]>
  %0 = mosaic_gpu.layout_cast %x : vector<128x64xf32> to #mosaic_gpu.WGSplatFragLayout<[128, 64]>
  // CHECK: mosaic_gpu.layout_cast %{{.*}} : vector<128x64xf32> to #mosaic_gpu.WGStridedFragLayout<[128, 64], 8>
  %1 = mosaic_gpu.layout_cast %x : vector<128x64xf32> to #mosaic_gpu.WGStridedFragLayout<[128, 64], 8>
  // WGMMA
  // CHECK: to #wgmma{{$}}
  %2 = mosaic_gpu.layout_cast %x : vector<128x64xf32>
      to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  // WGMMA_TRANSPOSED
  // CHECK: to #wgmma_transposed{{$}}
  %3 = mosaic_gpu.layout_cast %x : vector<128x64xf32>
      to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], warp_dims = [-10], lane_dims = [-6, -3, -5], vector_dim = -2>
  // WGMMA_ROW
  // CHECK: to #wgmma_row{{$}}
  %4 = mosaic_gpu.layout_cast %row : vector<128xf32>
      to #mosaic_gpu.TiledLayout<[[64], [16], [8], [1]], warp_dims = [-4], lane_dims = [-2, #mosaic_gpu.Replicated<times = 4>], vector_dim = -1>
  // WGMMA_COL
  // CHECK: to #wgmma_col{{$}}
  %5 = mosaic_gpu.layout_cast %col : vector<64xf32>
      to #mosaic_gpu.TiledLayout<[[8], [2]], warp_dims = [#mosaic_gpu.Replicated<times = 4>], lane_dims = [#mosaic_gpu.Replicated<times = 8>, -2], vector_dim = -1>
  // WGMMA_8BIT
  // CHECK: to #wgmma_8bit{{$}}
  %6 = mosaic_gpu.layout_cast %x : vector<128x64xf32>
      to #mosaic_gpu.TiledLayout<[[64, 16], [16, 16], [8, 16], [4]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  // A layout without a name prints in full.
  // CHECK: to #mosaic_gpu.TiledLayout<{{\[}}[128], [32], [1]], warp_dims = [-3], lane_dims = [-2], vector_dim = -1>
  %7 = mosaic_gpu.layout_cast %row : vector<128xf32>
      to #mosaic_gpu.TiledLayout<[[128], [32], [1]], warp_dims = [-3], lane_dims = [-2], vector_dim = -1>
  return
}

// Inference writes layouts and transforms as discardable attributes on any op.
// CHECK-LABEL: func @layout_annotations
func.func @layout_annotations(%x: vector<128x64xbf16>) -> vector<128x64xbf16> {
  // CHECK: arith.addf %{{.*}}, %{{.*}} {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 8>, #mosaic_gpu.WGStridedFragLayout<[128, 64], 8>], out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 8>]}
  %0 = arith.addf %x, %x {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 8>, #mosaic_gpu.WGStridedFragLayout<[128, 64], 8>],
                          out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 8>]} : vector<128x64xbf16>
  return %0 : vector<128x64xbf16>
}

// CHECK-LABEL: func @shapes
func.func @shapes(%row: vector<128xf32>, %x: vector<1x64xf32>) {
  // CHECK: mosaic_gpu.broadcast_in_dim %{{.*}}, dims [0] : vector<128xf32> -> vector<128x64xf32>
  %0 = mosaic_gpu.broadcast_in_dim %row, dims [0] : vector<128xf32> -> vector<128x64xf32>
  // A size-1 operand dim is expanded.
  // CHECK: mosaic_gpu.broadcast_in_dim %{{.*}}, dims [1, 2] : vector<1x64xf32> -> vector<4x128x64xf32>
  %1 = mosaic_gpu.broadcast_in_dim %x, dims [1, 2] : vector<1x64xf32> -> vector<4x128x64xf32>
  // CHECK: mosaic_gpu.broadcasted_iota 1 : vector<128x64xi32>
  %2 = mosaic_gpu.broadcasted_iota 1 : vector<128x64xi32>
  // CHECK: mosaic_gpu.broadcasted_iota 0 : vector<128xf32>
  %3 = mosaic_gpu.broadcasted_iota 0 : vector<128xf32>
  return
}

// CHECK-LABEL: func @misc
func.func @misc(%x: vector<128xf32>, %i: i32, %n: index) {
  // CHECK: %{{.*}}:2 = mosaic_gpu.optimization_barrier(%{{.*}}, %{{.*}}) : vector<128xf32>, i32
  %0:2 = mosaic_gpu.optimization_barrier(%x, %i) : vector<128xf32>, i32
  // CHECK: mosaic_gpu.optimization_barrier(){{$}}
  mosaic_gpu.optimization_barrier()
  // CHECK: mosaic_gpu.assume_multiple %{{.*}}, 64 : i32
  %1 = mosaic_gpu.assume_multiple %i, 64 : i32
  // CHECK: mosaic_gpu.assume_multiple %{{.*}}, 16 : index
  %2 = mosaic_gpu.assume_multiple %n, 16 : index
  return
}

// CHECK-LABEL: func @smem
func.func @smem() {
  // CHECK: mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %a = mosaic_gpu.slice_smem 0 : !smem_bf16
  // CHECK: mosaic_gpu.slice_smem 16384 {alias_id = 1 : i64} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %b = mosaic_gpu.slice_smem 16384 {alias_id = 1 : i64} : !smem_bf16
  // CHECK: mosaic_gpu.slice_smem 32768 : memref<4x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  %bars = mosaic_gpu.slice_smem 32768 : memref<4x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  // CHECK: mosaic_gpu.with_transforms %{{.*}} : memref<128x64xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  %t = mosaic_gpu.with_transforms %a : !smem_bf16
      with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  // CHECK: mosaic_gpu.with_transforms %{{.*}} : memref<128x64xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.swizzle<kNoSwizzle>]
  %u = mosaic_gpu.with_transforms %b : !smem_bf16 with [#mosaic_gpu.swizzle<kNoSwizzle>]
  // CHECK: with [#mosaic_gpu.swizzle<k32ByteSwizzle>]
  %v = mosaic_gpu.with_transforms %b : !smem_bf16 with [#mosaic_gpu.swizzle<k32ByteSwizzle>]
  // CHECK: with [#mosaic_gpu.tile<[8, 32]>, #mosaic_gpu.swizzle<k64ByteSwizzle>]
  %w = mosaic_gpu.with_transforms %b : !smem_bf16
      with [#mosaic_gpu.tile<[8, 32]>, #mosaic_gpu.swizzle<k64ByteSwizzle>]
  // CHECK: with []
  %e = mosaic_gpu.with_transforms %b : !smem_bf16 with []
  return
}

// CHECK-LABEL: func @custom_primitive
func.func @custom_primitive(%x: vector<128xf32>, %ref: !smem_bf16, %s: i32) -> vector<128xf32> {
  // CHECK: %[[R:.*]]:2 = mosaic_gpu.custom_primitive(%{{.*}}, %{{.*}}, %{{.*}}) {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>], in_transforms = {{\[}}[#mosaic_gpu.swizzle<k128ByteSwizzle>]], out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>]} : (vector<128xf32>, memref<128x64xbf16, #gpu.address_space<workgroup>>, i32) -> (vector<128xf32>, i32) {
  // CHECK-NEXT: ^bb0(%[[X:.*]]: vector<128xf32>, %{{.*}}: memref<128x64xbf16, #gpu.address_space<workgroup>>, %[[S:.*]]: i32):
  // CHECK-NEXT: mosaic_gpu.return %[[X]], %[[S]] : vector<128xf32>, i32
  %r:2 = mosaic_gpu.custom_primitive (%x, %ref, %s) {
      in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>],
      in_transforms = [[#mosaic_gpu.swizzle<k128ByteSwizzle>]],
      out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>]}
      : (vector<128xf32>, !smem_bf16, i32) -> (vector<128xf32>, i32) {
  ^bb0(%arg: vector<128xf32>, %r: !smem_bf16, %sarg: i32):
    mosaic_gpu.return %arg, %sarg : vector<128xf32>, i32
  }
  // A primitive with no results.
  // CHECK: mosaic_gpu.custom_primitive() {in_layouts = [], in_transforms = [], out_layouts = []} : () -> () {
  // CHECK-NEXT: mosaic_gpu.return
  mosaic_gpu.custom_primitive () {in_layouts = [], in_transforms = [], out_layouts = []} : () -> () {
    mosaic_gpu.return
  }
  return %r#0 : vector<128xf32>
}
