// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms | FileCheck %s

// A TMA round trip through a tiled, swizzled buffer: the buffer gets its tiled
// type, with_transforms disappears, the global buffer is viewed in tiles and
// the TMA indices and slice lengths count tiles.
// CHECK-LABEL: func @tma_round_trip
func.func @tma_round_trip(%in: memref<4096x64xbf16>, %out: memref<4096x64xbf16>,
                          %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %row: i32) {
  // CHECK: %[[SRC:.*]] = mosaic_gpu.slice_smem 0 {out_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]} : memref<16x1x8x64xbf16, #gpu.address_space<workgroup>>
  %src = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  // CHECK-NOT: with_transforms
  %t = mosaic_gpu.with_transforms %src : memref<128x64xbf16, #gpu.address_space<workgroup>>
      with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  %r = mosaic_gpu.assume_multiple %row, 128 : i32
  %c0 = arith.constant 0 : i32
  // CHECK: %[[EXPANDED:.*]] = memref.expand_shape %{{.*}} {{\[}}[0, 1], [2, 3]] output_shape [512, 8, 1, 64] : memref<4096x64xbf16> into memref<512x8x1x64xbf16>
  // CHECK: %[[VIEW:.*]] = memref.transpose %[[EXPANDED]] (d0, d1, d2, d3) -> (d0, d2, d1, d3) : memref<512x8x1x64xbf16> to memref<512x1x8x64xbf16, strided<[512, 64, 64, 1]>>
  // CHECK: %[[C8:.*]] = arith.constant 8 : i32
  // CHECK: %[[ROW:.*]] = arith.divui %{{.*}}, %[[C8]] : i32
  // CHECK: %[[C64:.*]] = arith.constant 64 : i32
  // CHECK: %[[COL:.*]] = arith.divui %{{.*}}, %[[C64]] : i32
  // CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
  // CHECK: mosaic_gpu.async_load %[[VIEW]][%[[ROW]], %[[COL]], %[[ZERO]], %[[ZERO]]] to %[[SRC]], %{{.*}} slice_lengths [16, 1, 8, 64] {in_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]], transforms_applied}
  mosaic_gpu.async_load %in[%r, %c0] to %t, %bar slice_lengths [128, 64]
      : memref<4096x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  // CHECK: mosaic_gpu.vector_load %[[SRC]] {in_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]], out_layouts = [#wgmma], transforms_applied} : memref<16x1x8x64xbf16, #gpu.address_space<workgroup>> -> vector<128x64xbf16>
  %v = mosaic_gpu.vector_load %t : memref<128x64xbf16, #gpu.address_space<workgroup>> -> vector<128x64xbf16>
  // CHECK: mosaic_gpu.vector_store %{{.*}}, %[[SRC]] {{.*}}transforms_applied} : vector<128x64xbf16>, memref<16x1x8x64xbf16, #gpu.address_space<workgroup>>
  mosaic_gpu.vector_store %v, %t : vector<128x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: mosaic_gpu.async_store %[[SRC]] to %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] slice_lengths [16, 1, 8, 64] {{.*}}transforms_applied} : memref<16x1x8x64xbf16, #gpu.address_space<workgroup>>, memref<512x1x8x64xbf16, strided<[512, 64, 64, 1]>>
  mosaic_gpu.async_store %t to %out[%r, %c0] slice_lengths [128, 64]
      : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<4096x64xbf16>
  return
}

// -----

// A stage of a multi-buffered ring: the subview takes whole tiles, and the
// loop-carried wgmma reads the tiled stages.
// CHECK-LABEL: func @ring_stage
func.func @ring_stage(%acc: vector<128x128xf32>, %stage: index) -> vector<128x128xf32> {
  // CHECK: mosaic_gpu.slice_smem 0 {{.*}} : memref<2x16x1x8x64xbf16, #gpu.address_space<workgroup>>
  %a_ring = mosaic_gpu.slice_smem 0 : memref<2x128x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: mosaic_gpu.slice_smem 32768 {{.*}} : memref<2x8x2x8x64xbf16, #gpu.address_space<workgroup>>
  %b_ring = mosaic_gpu.slice_smem 32768 : memref<2x64x128xbf16, #gpu.address_space<workgroup>>
  // CHECK: %[[A:.*]] = memref.subview %{{.*}}[%{{.*}}, 0, 0, 0, 0] [1, 16, 1, 8, 64] [1, 1, 1, 1, 1] {{.*}} : memref<2x16x1x8x64xbf16, #gpu.address_space<workgroup>> to memref<16x1x8x64xbf16, strided<[512, 512, 64, 1], offset: ?>, #gpu.address_space<workgroup>>
  %a = memref.subview %a_ring[%stage, 0, 0] [1, 128, 64] [1, 1, 1]
      : memref<2x128x64xbf16, #gpu.address_space<workgroup>> to memref<128x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
  // CHECK: %[[B:.*]] = memref.subview %{{.*}}[%{{.*}}, 0, 0, 0, 0] [1, 8, 2, 8, 64] [1, 1, 1, 1, 1]
  %b = memref.subview %b_ring[%stage, 0, 0] [1, 64, 128] [1, 1, 1]
      : memref<2x64x128xbf16, #gpu.address_space<workgroup>> to memref<64x128xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
  // CHECK: mosaic_gpu.wgmma %{{.*}}, %[[A]], %[[B]] {{.*}}transforms_applied} : vector<128x128xf32>, memref<16x1x8x64xbf16, {{.*}}>, memref<8x2x8x64xbf16, {{.*}}> -> vector<128x128xf32>
  %r = mosaic_gpu.wgmma %acc, %a, %b
      : vector<128x128xf32>, memref<128x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>,
        memref<64x128xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>> -> vector<128x128xf32>
  return %r : vector<128x128xf32>
}

// -----

// Untransformed buffers keep their types; a buffer chosen by scf.if carries
// its tiled type to the result.
// CHECK-LABEL: func @untiled_and_if
func.func @untiled_and_if(%p: i1, %acc: vector<64x64xf32>, %out: memref<128xf32>) -> vector<64x64xf32> {
  // CHECK: mosaic_gpu.slice_smem 0 {out_transforms = {{\[}}[]]} : memref<128xf32, #gpu.address_space<workgroup>>
  %plain = mosaic_gpu.slice_smem 0 : memref<128xf32, #gpu.address_space<workgroup>>
  %x = mosaic_gpu.slice_smem 1024 : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %y = mosaic_gpu.slice_smem 9216 : memref<64x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: scf.if %{{.*}} -> (memref<8x1x8x64xbf16, #gpu.address_space<workgroup>>)
  %buf = scf.if %p -> memref<64x64xbf16, #gpu.address_space<workgroup>> {
    scf.yield %x : memref<64x64xbf16, #gpu.address_space<workgroup>>
  } else {
    scf.yield %y : memref<64x64xbf16, #gpu.address_space<workgroup>>
  }
  %r = mosaic_gpu.wgmma %acc, %buf, %x
      : vector<64x64xf32>, memref<64x64xbf16, #gpu.address_space<workgroup>>,
        memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  %v = mosaic_gpu.vector_load %plain : memref<128xf32, #gpu.address_space<workgroup>> -> vector<128xf32>
  mosaic_gpu.vector_store %v, %out : vector<128xf32>, memref<128xf32>
  return %r : vector<64x64xf32>
}

// -----

// Casts and reshapes that regroup whole tiles follow the tiling.
// CHECK-LABEL: func @views_of_tiled_buffers
func.func @views_of_tiled_buffers(%acc: vector<64x64xf32>) -> vector<64x64xf32> {
  // CHECK: %[[RING:.*]] = mosaic_gpu.slice_smem 0 {{.*}} : memref<2x8x1x8x64xbf16, #gpu.address_space<workgroup>>
  %s = mosaic_gpu.slice_smem 0 : memref<2x64x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[RING]] {{\[}}[0, 1], [2], [3], [4]] {{.*}} : memref<2x8x1x8x64xbf16, #gpu.address_space<workgroup>> into memref<16x1x8x64xbf16, #gpu.address_space<workgroup>>
  %flat = memref.collapse_shape %s [[0, 1], [2]] : memref<2x64x64xbf16, #gpu.address_space<workgroup>> into memref<128x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: %[[BACK:.*]] = memref.expand_shape %[[FLAT]] {{\[}}[0, 1], [2], [3], [4]] output_shape [2, 8, 1, 8, 64] {{.*}} into memref<2x8x1x8x64xbf16, #gpu.address_space<workgroup>>
  %back = memref.expand_shape %flat [[0, 1], [2]] output_shape [2, 64, 64] : memref<128x64xbf16, #gpu.address_space<workgroup>> into memref<2x64x64xbf16, #gpu.address_space<workgroup>>
  %b = mosaic_gpu.slice_smem 16384 : memref<64x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: memref.cast %{{.*}} : memref<8x1x8x64xbf16, #gpu.address_space<workgroup>> to memref<8x1x8x64xbf16, #gpu.address_space<workgroup>>
  %c = memref.cast %b : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: memref.subview %[[BACK]]
  %a = memref.subview %back[1, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, strided<[64, 1], offset: 4096>, #gpu.address_space<workgroup>>
  // CHECK: mosaic_gpu.wgmma {{.*}}transforms_applied}
  %r = mosaic_gpu.wgmma %acc, %a, %c
      : vector<64x64xf32>, memref<64x64xbf16, strided<[64, 1], offset: 4096>, #gpu.address_space<workgroup>>,
        memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return %r : vector<64x64xf32>
}

// -----

// A global buffer the tile does not divide (1020 rows, 100 columns), read
// through one column of tiles: the tiled buffer holds the slice in row-major
// order, so the copy keeps the global buffer and its indices (TMA fills the
// rows and columns past the edge) and reads into the collapsed buffer.
// CHECK-LABEL: func.func @edge_one_column
func.func @edge_one_column(%g: memref<1020x100xbf16>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: i32, %j: i32) {
  // CHECK: %[[TILED:.*]] = mosaic_gpu.slice_smem 0 {{.*}} : memref<16x1x8x64xbf16, #gpu.address_space<workgroup>>
  %u = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %s = mosaic_gpu.with_transforms %u : memref<128x64xbf16, #gpu.address_space<workgroup>>
      with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  // CHECK: %[[ROWS:.*]] = memref.collapse_shape %[[TILED]] {{\[}}[0, 1, 2], [3]] : memref<16x1x8x64xbf16, #gpu.address_space<workgroup>> into memref<128x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: mosaic_gpu.async_load %{{.*}}[%{{.*}}, %{{.*}}] to %[[ROWS]], %{{.*}} slice_lengths [128, 64] {in_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]], transforms_applied} : memref<1020x100xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>
  %r = mosaic_gpu.assume_multiple %i, 128 : i32
  %c = mosaic_gpu.assume_multiple %j, 64 : i32
  mosaic_gpu.async_load %g[%r, %c] to %s, %bar slice_lengths [128, 64] : memref<1020x100xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

// One row of 2-D tiles over a global buffer the tile does not divide: one
// store per 64-column tile, each from its own contiguous (64, 64) box at its
// column's offset; only the last commits the bulk group (and waits).
// CHECK-LABEL: func.func @edge_one_row
func.func @edge_one_row(%g: memref<100x200xbf16>, %i: i32, %j: i32) {
  // CHECK: %[[TILED:.*]] = mosaic_gpu.slice_smem 0 {{.*}} : memref<1x2x64x64xbf16, #gpu.address_space<workgroup>>
  %u = mosaic_gpu.slice_smem 0 : memref<64x128xbf16, #gpu.address_space<workgroup>>
  %s = mosaic_gpu.with_transforms %u : memref<64x128xbf16, #gpu.address_space<workgroup>>
      with [#mosaic_gpu.tile<[64, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  // CHECK: %[[FIRST:.*]] = memref.subview %[[TILED]][0, 0, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1]
  // CHECK: %[[BOX0:.*]] = memref.collapse_shape %[[FIRST]]
  // CHECK: mosaic_gpu.async_store %[[BOX0]] to %{{.*}}[%{{.*}}, %[[J:.*]]] slice_lengths [64, 64] {commit_group = false
  // CHECK: %[[SECOND:.*]] = memref.subview %[[TILED]][0, 1, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1]
  // CHECK: %[[BOX1:.*]] = memref.collapse_shape %[[SECOND]]
  // CHECK: %[[C64:.*]] = arith.constant 64 : i32
  // CHECK: %[[COL1:.*]] = arith.addi %[[J]], %[[C64]] : i32
  // CHECK: mosaic_gpu.async_store %[[BOX1]] to %{{.*}}[%{{.*}}, %[[COL1]]] slice_lengths [64, 64] {in_transforms
  // CHECK-NOT: mosaic_gpu.async_store
  %r = mosaic_gpu.assume_multiple %i, 64 : i32
  %c = mosaic_gpu.assume_multiple %j, 128 : i32
  mosaic_gpu.async_store %s to %g[%r, %c] slice_lengths [64, 128] : memref<64x128xbf16, #gpu.address_space<workgroup>>, memref<100x200xbf16>
  return
}

// -----

// Several rows of 2-D tiles over a global buffer the tile does not divide:
// one load per tile, each into its own contiguous (8, 64) box.
// CHECK-LABEL: func.func @edge_tile_grid
func.func @edge_tile_grid(%g: memref<1020x128xbf16>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: i32) {
  // CHECK: %[[TILED:.*]] = mosaic_gpu.slice_smem 0 {{.*}} : memref<2x2x8x64xbf16, #gpu.address_space<workgroup>>
  %u = mosaic_gpu.slice_smem 0 : memref<16x128xbf16, #gpu.address_space<workgroup>>
  %s = mosaic_gpu.with_transforms %u : memref<16x128xbf16, #gpu.address_space<workgroup>>
      with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  // CHECK: memref.subview %[[TILED]][0, 0, 0, 0] [1, 1, 8, 64]
  // CHECK: mosaic_gpu.async_load %{{.*}}[%[[ROW:.*]], %[[COL:.*]]] to %{{.*}} slice_lengths [8, 64]
  // CHECK: memref.subview %[[TILED]][0, 1, 0, 0] [1, 1, 8, 64]
  // CHECK: %[[C64:.*]] = arith.constant 64 : i32
  // CHECK: %[[COL1:.*]] = arith.addi %[[COL]], %[[C64]] : i32
  // CHECK: mosaic_gpu.async_load %{{.*}}[%[[ROW]], %[[COL1]]] to %{{.*}} slice_lengths [8, 64]
  // CHECK: memref.subview %[[TILED]][1, 0, 0, 0] [1, 1, 8, 64]
  // CHECK: %[[C8:.*]] = arith.constant 8 : i32
  // CHECK: %[[ROW1:.*]] = arith.addi %[[ROW]], %[[C8]] : i32
  // CHECK: mosaic_gpu.async_load %{{.*}}[%[[ROW1]], %[[COL]]] to %{{.*}} slice_lengths [8, 64]
  // CHECK: memref.subview %[[TILED]][1, 1, 0, 0] [1, 1, 8, 64]
  // CHECK: mosaic_gpu.async_load
  // CHECK-NOT: mosaic_gpu.async_load
  %c = mosaic_gpu.assume_multiple %i, 128 : i32
  mosaic_gpu.async_load %g[%i, %c] to %s, %bar slice_lengths [16, 128] : memref<1020x128xbf16>, memref<16x128xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

// A row start not known to be a multiple of the tile, over a global buffer
// the tile divides: one column of tiles is still one row-major box, at the
// given row (no division by the tile).
// CHECK-LABEL: func.func @unaligned_row_one_column
func.func @unaligned_row_one_column(%g: memref<1024x64xbf16>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: i32) {
  // CHECK: %[[TILED:.*]] = mosaic_gpu.slice_smem 0 {{.*}} : memref<16x1x8x64xbf16, #gpu.address_space<workgroup>>
  %u = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %s = mosaic_gpu.with_transforms %u : memref<128x64xbf16, #gpu.address_space<workgroup>>
      with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  // CHECK: %[[BOX:.*]] = memref.collapse_shape %[[TILED]]
  // CHECK-NOT: arith.divui
  // CHECK: mosaic_gpu.async_load %{{.*}}[%{{.*}}, %{{.*}}] to %[[BOX]], %{{.*}} slice_lengths [128, 64]
  %c0 = arith.constant 0 : i32
  mosaic_gpu.async_load %g[%i, %c0] to %s, %bar slice_lengths [128, 64] : memref<1024x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}
