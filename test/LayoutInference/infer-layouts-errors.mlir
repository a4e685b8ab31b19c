// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -verify-diagnostics

// Two casts pin a value to layouts no relayout connects: the error is on the
// second cast, and notes show each candidate's conflict and both casts.
func.func @unsatisfiable_cast_chain(%ref: memref<128x64xf32>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  // expected-note @+1 {{'mosaic_gpu.layout_cast' fixes its result's layout: WGMMA}}
  %a = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  // expected-error @+7 {{no layout for operand #0 of 'mosaic_gpu.layout_cast' satisfies every constraint on it}}
  // expected-note @+6 {{WGMMA is ruled out by: 'mosaic_gpu.layout_cast' converts its operand to `new_layout`; operand #0 of 'mosaic_gpu.layout_cast' is WGMMA (chosen by the search); result #0 of 'mosaic_gpu.layout_cast' is Strided(vector_size = 2) ('mosaic_gpu.layout_cast' fixes its result's layout)}}
  // expected-note @+5 {{Strided(vector_size = 2) is ruled out by: 'mosaic_gpu.layout_cast' can only use a value in a layout its producer's layout converts to (operand #0); result #0 of 'mosaic_gpu.layout_cast' is WGMMA}}
  // expected-note @+4 {{WGMMA_TRANSPOSED is ruled out by}}
  // expected-note @+3 {{Strided(vector_size = 4) is ruled out by}}
  // expected-note @+2 {{7 other candidate layouts are ruled out as well}}
  // expected-note @+1 {{'mosaic_gpu.layout_cast' fixes its result's layout: Strided(vector_size = 2)}}
  %b = mosaic_gpu.layout_cast %a : vector<128x64xf32> to #mosaic_gpu.WGStridedFragLayout<[128, 64], 2>
  return
}

// -----

func.func @conflicting_with_transforms() {
  %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  // expected-note @+1 {{'mosaic_gpu.with_transforms' fixes the buffer's transforms: tile(8, 64) swizzle 128}}
  %a = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  // expected-error @+1 {{result #0 of 'mosaic_gpu.with_transforms' must be tile(8, 32) swizzle 64 here, but is also required to be tile(8, 64) swizzle 128}}
  %b = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.tile<[8, 32]>, #mosaic_gpu.swizzle<k64ByteSwizzle>]
  return
}

// -----

// Slices with one alias_id are one buffer: their transforms must agree.
func.func @aliasing_slices_conflict() {
  %s = mosaic_gpu.slice_smem 0 {alias_id = 1} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %t = mosaic_gpu.slice_smem 0 {alias_id = 1} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  // expected-note @+1 {{fixes the buffer's transforms: tile(8, 64) swizzle 128}}
  %a = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  // expected-error @+1 {{must be no transforms here, but is also required to be tile(8, 64) swizzle 128}}
  %b = mosaic_gpu.with_transforms %t : memref<128x64xbf16, #gpu.address_space<workgroup>> with []
  return
}

// -----

// The column index is not known to be a multiple of 64, so the tiling cannot
// describe the slice. (A row index need not be one: apply-transforms copies
// such a slice as row-major boxes.)
func.func @tma_slice_not_divided_by_tiling(%g: memref<1024x128xbf16>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: i32) {
  %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  // expected-note @+1 {{result #0 of 'mosaic_gpu.with_transforms' is tile(8, 64) swizzle 128, as 'mosaic_gpu.with_transforms' fixes the buffer's transforms}}
  %a = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  %c0 = arith.constant 0 : i32
  // expected-error @+1 {{requirements conflict: 'mosaic_gpu.async_load' needs a tiling that divides its slice, whose lengths and start indices are known multiples of (128, 1)}}
  mosaic_gpu.async_load %g[%c0, %i] to %a, %bar slice_lengths [128, 64] : memref<1024x128xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

// A row index that is not known to be a multiple of 8 is fine.
func.func @tma_slice_at_any_row(%g: memref<1024x64xbf16>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: i32) {
  %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %a = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  %c0 = arith.constant 0 : i32
  mosaic_gpu.async_load %g[%i, %c0] to %a, %bar slice_lengths [128, 64] : memref<1024x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

// The same slice with an index known to be a multiple of 128 is fine.
func.func @tma_slice_divided_with_assume_multiple(%g: memref<1024x64xbf16>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: i32) {
  %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %a = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  %c0 = arith.constant 0 : i32
  %row = mosaic_gpu.assume_multiple %i, 128 : i32
  mosaic_gpu.async_load %g[%row, %c0] to %a, %bar slice_lengths [128, 64] : memref<1024x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

// wgmma needs a tiling the TMA slice rules out: every candidate is shown.
// expected-error @+1 {{no layout for region argument #4 of 'func.func' satisfies every constraint on it}}
func.func @wgmma_tiling_blocked_by_tma(%g: memref<1024x128xbf16>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: i32, %acc: vector<128x64xf32>, %b: memref<64x64xbf16, #gpu.address_space<workgroup>>) -> vector<128x64xf32> {
  %a = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : i32
  // expected-note @+3 {{tile(8, 64) swizzle 128 is ruled out by: 'mosaic_gpu.async_load' needs a tiling that divides its slice}}
  // expected-note @+2 {{tile(8, 32) swizzle 64 is ruled out by}}
  // expected-note @+1 {{tile(8, 16) swizzle 32 is ruled out by}}
  mosaic_gpu.async_load %g[%c0, %i] to %a, %bar slice_lengths [128, 64] : memref<1024x128xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  // expected-note @+1 {{no transforms is ruled out by: 'mosaic_gpu.wgmma' requires `b` to have a wgmma tiling}}
  %r = mosaic_gpu.wgmma %acc, %a, %b : vector<128x64xf32>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<128x64xf32>
  return %r : vector<128x64xf32>
}

// -----

func.func @reduction_of_strided(%ref: memref<128x64xf32>) -> vector<128xf32> {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  // expected-note @+1 {{'mosaic_gpu.layout_cast' fixes its result's layout: Strided(vector_size = 2)}}
  %s = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #mosaic_gpu.WGStridedFragLayout<[128, 64], 2>
  %z = arith.constant dense<0.0> : vector<128xf32>
  // expected-error @+6 {{no layout for operand #0 of 'vector.multi_reduction' satisfies every constraint on it}}
  // expected-note @+5 {{Strided(vector_size = 2) is ruled out by: 'vector.multi_reduction' reduces along axes, which a Strided operand does not support}}
  // expected-note @+4 {{WGMMA is ruled out by: 'vector.multi_reduction' can only use a value in a layout its producer's layout converts to}}
  // expected-note @+3 {{WGMMA_TRANSPOSED is ruled out by}}
  // expected-note @+2 {{Strided(vector_size = 4) is ruled out by: 'vector.multi_reduction' can only use a value in a layout its producer's layout converts to}}
  // expected-note @+1 {{7 other candidate layouts are ruled out as well}}
  %r = vector.multi_reduction <add>, %s, %z [1] : vector<128x64xf32> to vector<128xf32>
  return %r : vector<128xf32>
}

// -----

func.func @no_rule(%ref: memref<128x64xf32>) -> vector<64x128xf32> {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  // expected-error @+1 {{'vector.transpose' op has no layout inference rule, but it has vector operands or results}}
  %t = vector.transpose %v, [1, 0] : vector<128x64xf32> to vector<64x128xf32>
  return %t : vector<64x128xf32>
}

// -----

// A vector too small for any layout: fewer elements than a strided layout
// needs, not a multiple of any tile, and loaded data cannot be a splat.
func.func @too_small(%ref: memref<7xf32>) -> vector<7xf32> {
  // expected-error @+6 {{no layout for result #0 of 'mosaic_gpu.vector_load' satisfies every constraint on it}}
  // expected-note @+5 {{Splat is ruled out by: 'mosaic_gpu.vector_load' loads arbitrary data, which cannot be Splat}}
  // expected-note @+4 {{Strided(vector_size = 1) is ruled out by: result #0 of 'mosaic_gpu.vector_load' cannot be Strided(vector_size = 1): shape (7) has 7 elements, which is not a multiple of 128}}
  // expected-note @+3 {{Strided(vector_size = 2) is ruled out by}}
  // expected-note @+2 {{Strided(vector_size = 4) is ruled out by}}
  // expected-note @+1 {{7 other candidate layouts are ruled out as well}}
  %v = mosaic_gpu.vector_load %ref : memref<7xf32> -> vector<7xf32>
  return %v : vector<7xf32>
}

// -----

// A value cast to Splat must be uniform: loaded data is not, and the notes
// say so (rather than blaming the layout the search gave the load).
func.func @cast_loaded_value_to_splat(%ref: memref<128xf32>) {
  // expected-note @+1 {{'mosaic_gpu.vector_load' loads arbitrary data, which cannot be Splat}}
  %v = mosaic_gpu.vector_load %ref : memref<128xf32> -> vector<128xf32>
  // expected-error @+7 {{no layout for operand #0 of 'mosaic_gpu.layout_cast' satisfies every constraint on it}}
  // expected-note @+6 {{Strided(vector_size = 1) is ruled out by: 'mosaic_gpu.layout_cast' converts its operand to `new_layout`; operand #0 of 'mosaic_gpu.layout_cast' is Strided(vector_size = 1), not Splat, because 'mosaic_gpu.vector_load' loads arbitrary data, which cannot be Splat; result #0 of 'mosaic_gpu.layout_cast' is Splat ('mosaic_gpu.layout_cast' fixes its result's layout)}}
  // expected-note @+5 {{Splat is ruled out by: 'mosaic_gpu.layout_cast' can only use a value in a layout its producer's layout converts to (operand #0); result #0 of 'mosaic_gpu.vector_load' is Strided(vector_size = 1), not Splat, because 'mosaic_gpu.vector_load' loads arbitrary data, which cannot be Splat}}
  // expected-note @+4 {{WGMMA_ROW is ruled out by}}
  // expected-note @+3 {{WGMMA_COL is ruled out by}}
  // expected-note @+2 {{7 other candidate layouts are ruled out as well}}
  // expected-note @+1 {{'mosaic_gpu.layout_cast' fixes its result's layout: Splat}}
  %s = mosaic_gpu.layout_cast %v : vector<128xf32> to #mosaic_gpu.WGSplatFragLayout<[128]>
  return
}

// -----

// The cause is found through the ops in between: the exp of loaded data is
// not uniform either.
func.func @cast_computed_value_to_splat(%ref: memref<128x64xf32>) {
  // expected-note @+1 {{'mosaic_gpu.vector_load' loads arbitrary data, which cannot be Splat}}
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %e = math.exp %v : vector<128x64xf32>
  // expected-error @+7 {{no layout for operand #0 of 'mosaic_gpu.layout_cast' satisfies every constraint on it}}
  // expected-note @+6 {{Strided(vector_size = 4) is ruled out by: 'mosaic_gpu.layout_cast' converts its operand to `new_layout`; operand #0 of 'mosaic_gpu.layout_cast' is Strided(vector_size = 4), not Splat, because 'mosaic_gpu.vector_load' loads arbitrary data, which cannot be Splat}}
  // expected-note @+5 {{Splat is ruled out by: 'mosaic_gpu.layout_cast' can only use a value in a layout its producer's layout converts to (operand #0); result #0 of 'math.exp' is Strided(vector_size = 4), not Splat, because 'mosaic_gpu.vector_load' loads arbitrary data, which cannot be Splat}}
  // expected-note @+4 {{Strided(vector_size = 1) is ruled out by}}
  // expected-note @+3 {{Strided(vector_size = 2) is ruled out by}}
  // expected-note @+2 {{7 other candidate layouts are ruled out as well}}
  // expected-note @+1 {{'mosaic_gpu.layout_cast' fixes its result's layout: Splat}}
  %s = mosaic_gpu.layout_cast %e : vector<128x64xf32> to #mosaic_gpu.WGSplatFragLayout<[128, 64]>
  return
}

// -----

// An iota holds distinct values.
func.func @cast_iota_to_splat() {
  // expected-note @+1 {{'mosaic_gpu.broadcasted_iota' produces distinct values, which cannot be Splat}}
  %v = mosaic_gpu.broadcasted_iota 0 : vector<256xi32>
  // expected-error @+7 {{no layout for operand #0 of 'mosaic_gpu.layout_cast' satisfies every constraint on it}}
  // expected-note @+6 {{Strided(vector_size = 2) is ruled out by: 'mosaic_gpu.layout_cast' converts its operand to `new_layout`; operand #0 of 'mosaic_gpu.layout_cast' is Strided(vector_size = 2), not Splat, because 'mosaic_gpu.broadcasted_iota' produces distinct values, which cannot be Splat}}
  // expected-note @+5 {{Splat is ruled out by: 'mosaic_gpu.layout_cast' can only use a value in a layout its producer's layout converts to (operand #0); result #0 of 'mosaic_gpu.broadcasted_iota' is Strided(vector_size = 2), not Splat, because 'mosaic_gpu.broadcasted_iota' produces distinct values, which cannot be Splat}}
  // expected-note @+4 {{Strided(vector_size = 1) is ruled out by}}
  // expected-note @+3 {{WGMMA_ROW is ruled out by}}
  // expected-note @+2 {{7 other candidate layouts are ruled out as well}}
  // expected-note @+1 {{'mosaic_gpu.layout_cast' fixes its result's layout: Splat}}
  %s = mosaic_gpu.layout_cast %v : vector<256xi32> to #mosaic_gpu.WGSplatFragLayout<[256]>
  return
}

// -----

// Stretching a size-1 dim needs a Splat operand; a non-uniform constant is
// not one.
func.func @stretch_non_uniform_constant() -> vector<4x128xf32> {
  // expected-note @+1 {{'arith.constant' is a non-splat constant, which cannot be Splat}}
  %c = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0, 64.0, 65.0, 66.0, 67.0, 68.0, 69.0, 70.0, 71.0, 72.0, 73.0, 74.0, 75.0, 76.0, 77.0, 78.0, 79.0, 80.0, 81.0, 82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 88.0, 89.0, 90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 96.0, 97.0, 98.0, 99.0, 100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0, 109.0, 110.0, 111.0, 112.0, 113.0, 114.0, 115.0, 116.0, 117.0, 118.0, 119.0, 120.0, 121.0, 122.0, 123.0, 124.0, 125.0, 126.0, 127.0]]> : vector<1x128xf32>
  // expected-error @+2 {{no layout for operand #0 of 'vector.broadcast' satisfies every constraint on it}}
  // expected-note @+1 {{Splat is ruled out by: 'vector.broadcast' can only use a value in a layout its producer's layout converts to (operand #0); result #0 of 'arith.constant' is Strided(vector_size = 1), not Splat, because 'arith.constant' is a non-splat constant, which cannot be Splat; operand #0 of 'vector.broadcast' is Splat ('vector.broadcast' stretches size-1 dims, which only a Splat operand supports)}}
  %b = vector.broadcast %c : vector<1x128xf32> to vector<4x128xf32>
  return %b : vector<4x128xf32>
}
