// RUN: mosaic-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// Layout attributes
//===----------------------------------------------------------------------===//

func.func @splat_empty_shape(%x: vector<128xf32>) {
  // expected-error @+1 {{WGSplatFragLayout needs a non-empty shape}}
  %0 = mosaic_gpu.layout_cast %x : vector<128xf32> to #mosaic_gpu.WGSplatFragLayout<[]>
  return
}

// -----

func.func @splat_bad_dim(%x: vector<128xf32>) {
  // expected-error @+1 {{WGSplatFragLayout shape (128, 0) has a non-positive dim 0}}
  %0 = mosaic_gpu.layout_cast %x : vector<128xf32> to #mosaic_gpu.WGSplatFragLayout<[128, 0]>
  return
}

// -----

func.func @strided_not_divisible(%x: vector<128x8xf32>) {
  // expected-error @+1 {{invalid WGStridedFragLayout: shape (128, 8) has 1024 elements, which is not a multiple of 2048 (128 threads x vector size 16)}}
  %0 = mosaic_gpu.layout_cast %x : vector<128x8xf32> to #mosaic_gpu.WGStridedFragLayout<[128, 8], 16>
  return
}

// -----

func.func @strided_zero_vector(%x: vector<128xf32>) {
  // expected-error @+1 {{invalid WGStridedFragLayout: the vector size must be positive, but it is 0}}
  %0 = mosaic_gpu.layout_cast %x : vector<128xf32> to #mosaic_gpu.WGStridedFragLayout<[128], 0>
  return
}

// -----

func.func @replicated_zero(%x: vector<64xf32>) {
  // expected-error @+1 {{Replicated must have a positive `times`, got 0}}
  %0 = mosaic_gpu.layout_cast %x : vector<64xf32> to #mosaic_gpu.TiledLayout<[[8], [2]], warp_dims = [#mosaic_gpu.Replicated<times = 0>], lane_dims = [#mosaic_gpu.Replicated<times = 8>, -2], vector_dim = -1>
  return
}

// -----

func.func @tiled_no_tiles(%x: vector<64xf32>) {
  // expected-error @+1 {{invalid TiledLayout: the tiling must have at least one tile}}
  %0 = mosaic_gpu.layout_cast %x : vector<64xf32> to #mosaic_gpu.TiledLayout<[], warp_dims = [], lane_dims = [], vector_dim = -1>
  return
}

// -----

func.func @tiled_empty_tile(%x: vector<64xf32>) {
  // expected-error @+1 {{invalid TiledLayout: tile #1 is empty}}
  %0 = mosaic_gpu.layout_cast %x : vector<64xf32> to #mosaic_gpu.TiledLayout<[[64], []], warp_dims = [], lane_dims = [], vector_dim = -1>
  return
}

// -----

func.func @tiled_rank_increases(%x: vector<64x8xf32>) {
  // expected-error @+1 {{invalid TiledLayout: tile #1 (8, 8) has a higher rank than the tile before it (64); tile ranks must not increase}}
  %0 = mosaic_gpu.layout_cast %x : vector<64x8xf32> to #mosaic_gpu.TiledLayout<[[64], [8, 8]], warp_dims = [], lane_dims = [], vector_dim = -1>
  return
}

// -----

func.func @tiled_nonpositive_tile(%x: vector<64xf32>) {
  // expected-error @+1 {{invalid TiledLayout: tile #0 (-64) has a non-positive size}}
  %0 = mosaic_gpu.layout_cast %x : vector<64xf32> to #mosaic_gpu.TiledLayout<[[-64]], warp_dims = [], lane_dims = [], vector_dim = -1>
  return
}

// -----

func.func @tiled_tiles_do_not_nest(%x: vector<8xf32>) {
  // expected-error @+1 {{invalid TiledLayout: the tiling does not apply to its own first tile: tile (3) does not divide shape (1, 8): 8 is not a multiple of 3}}
  %0 = mosaic_gpu.layout_cast %x : vector<8xf32> to #mosaic_gpu.TiledLayout<[[8], [3]], warp_dims = [], lane_dims = [], vector_dim = -1>
  return
}

// -----

func.func @tiled_dim_out_of_range(%x: vector<128x64xf32>) {
  // expected-error @+1 {{invalid TiledLayout: warp dim -8 is out of range: dims are negative indices into the tiled tiling shape (4, 1, 2, 1, 8, 4, 2), so they must lie in [-7, -1]}}
  %0 = mosaic_gpu.layout_cast %x : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-8], lane_dims = [-3, -2], vector_dim = -1>
  return
}

// -----

func.func @tiled_dim_not_negative(%x: vector<128x64xf32>) {
  // expected-error @+1 {{invalid TiledLayout: vector dim 0 is out of range}}
  %0 = mosaic_gpu.layout_cast %x : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = 0>
  return
}

// -----

func.func @tiled_duplicate_dim(%x: vector<128x64xf32>) {
  // expected-error @+1 {{invalid TiledLayout: vector dim -2 partitions a dim that is already partitioned; warp, lane and vector dims must be distinct}}
  %0 = mosaic_gpu.layout_cast %x : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -2>
  return
}

// -----

func.func @tiled_warp_product(%x: vector<128x64xf32>) {
  // expected-error @+1 {{invalid TiledLayout: warp dims [-5] span 2 warps, but a warpgroup has 4 (tiled tiling shape (4, 1, 2, 1, 8, 4, 2))}}
  %0 = mosaic_gpu.layout_cast %x : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-5], lane_dims = [-3, -2], vector_dim = -1>
  return
}

// -----

func.func @tiled_lane_product(%x: vector<128x64xf32>) {
  // expected-error @+1 {{invalid TiledLayout: lane dims [-3] span 8 lanes, but a warp has 32}}
  %0 = mosaic_gpu.layout_cast %x : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3], vector_dim = -1>
  return
}

// -----

func.func @tiled_not_canonical(%x: vector<128x64xf32>) {
  // expected-error @+1 {{invalid TiledLayout: the layout (64, 8)(16, 8)(8, 8)(1, 2) warp_dims = [-8] lane_dims = [-4, -3] vector_dim = -1 is not canonical; its canonical form is (64, 8)(16, 8)(8, 8)(2) warp_dims = [-7] lane_dims = [-3, -2] vector_dim = -1}}
  %0 = mosaic_gpu.layout_cast %x : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [1, 2]], warp_dims = [-8], lane_dims = [-4, -3], vector_dim = -1>
  return
}

// -----

func.func @tiled_size_one_warp_dim(%x: vector<128x64xf32>) {
  // expected-error @+1 {{is not canonical; its canonical form is (64, 8)(16, 8)(8, 8)(2) warp_dims = [-7] lane_dims}}
  %0 = mosaic_gpu.layout_cast %x : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7, -6], lane_dims = [-3, -2], vector_dim = -1>
  return
}

// -----

func.func @tiled_bad_dim_entry(%x: vector<128x64xf32>) {
  // expected-error @+1 {{expected a dim index or #mosaic_gpu.Replicated<times = n>}}
  %0 = mosaic_gpu.layout_cast %x : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = ["w"], lane_dims = [-3, -2], vector_dim = -1>
  return
}

// -----

func.func @tile_transform_empty(%r: memref<128x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{tile transform needs at least one tile dim}}
  %0 = mosaic_gpu.with_transforms %r : memref<128x64xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.tile<[]>]
  return
}

// -----

func.func @tile_transform_nonpositive(%r: memref<128x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{tile transform (8, 0) has a non-positive size 0}}
  %0 = mosaic_gpu.with_transforms %r : memref<128x64xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.tile<[8, 0]>]
  return
}

// -----

//===----------------------------------------------------------------------===//
// Barriers
//===----------------------------------------------------------------------===//

func.func @arrival_count_zero(%p: !llvm.ptr<3>) {
  // expected-error @+1 {{`arrival_count` must be in [1, 1048575], but it is 0}}
  mosaic_gpu.initialize_barrier %p, arrival_count = 0, num_barriers = 1 : !llvm.ptr<3>
  return
}

// -----

func.func @arrival_count_too_large(%p: !llvm.ptr<3>) {
  // expected-error @+1 {{`arrival_count` must be in [1, 1048575], but it is 1048576}}
  mosaic_gpu.initialize_barrier %p, arrival_count = 1048576, num_barriers = 1 : !llvm.ptr<3>
  return
}

// -----

func.func @num_barriers_zero(%p: !llvm.ptr<3>) {
  // expected-error @+1 {{`num_barriers` must be positive, but it is 0}}
  mosaic_gpu.initialize_barrier %p, arrival_count = 1, num_barriers = 0 : !llvm.ptr<3>
  return
}

// -----

func.func @barrier_pointer_not_shared(%p: !llvm.ptr<1>) {
  // expected-error @+1 {{operand #0 must be LLVM pointer in address space 3 or memref of mbarrier values}}
  mosaic_gpu.initialize_barrier %p, arrival_count = 1, num_barriers = 1 : !llvm.ptr<1>
  return
}

// -----

func.func @barrier_count_mismatch(%b: memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`base_pointer` holds 2 barriers, but `num_barriers` is 4}}
  mosaic_gpu.initialize_barrier %b, arrival_count = 1, num_barriers = 4 : memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @barrier_memref_in_global(%b: memref<2x!mosaic_gpu.barrier>) {
  // expected-error @+1 {{`base_pointer` must be in shared memory (#gpu.address_space<workgroup>), but it is in global memory (no memory space)}}
  mosaic_gpu.initialize_barrier %b, arrival_count = 1, num_barriers = 2 : memref<2x!mosaic_gpu.barrier>
  return
}

// -----

func.func @barrier_array(%b: memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`barrier` must be a rank-0 memref of !mosaic_gpu.barrier, but it has shape (2); select one barrier with memref.subview first}}
  mosaic_gpu.arrive %b : memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @barrier_in_global(%b: memref<!mosaic_gpu.barrier>) {
  // expected-error @+1 {{`barrier` must be in shared memory (#gpu.address_space<workgroup>), but it is in global memory (no memory space)}}
  mosaic_gpu.arrive %b : memref<!mosaic_gpu.barrier>
  return
}

// -----

func.func @barrier_wrong_element(%b: memref<i64, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{operand #0 must be memref of mbarrier values}}
  mosaic_gpu.arrive %b : memref<i64, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @expect_tx_negative(%b: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`expect_tx` must be in [0, 1048575] bytes, but it is -16}}
  mosaic_gpu.arrive_expect_tx %b, -16 : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @expect_tx_barrier(%b: memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`barrier` must be a rank-0 memref}}
  mosaic_gpu.arrive_expect_tx %b, 16 : memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @wait_barrier(%b: memref<!mosaic_gpu.barrier, #gpu.address_space<private>>, %p: i1) {
  // expected-error @+1 {{`barrier` must be in shared memory (#gpu.address_space<workgroup>), but it is in #gpu.address_space<private>}}
  mosaic_gpu.wait %b, %p : memref<!mosaic_gpu.barrier, #gpu.address_space<private>>
  return
}

// -----

//===----------------------------------------------------------------------===//
// TMA
//===----------------------------------------------------------------------===//

!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
func.func @load_source_in_smem(%g: memref<256x64xf32, #gpu.address_space<workgroup>>, %s: memref<128x64xf32, #gpu.address_space<workgroup>>, %b: !bar, %i: i32) {
  // expected-error @+1 {{`source` must be in global memory (no memory space or #gpu.address_space<global>), but it is in #gpu.address_space<workgroup>}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [128, 64] : memref<256x64xf32, #gpu.address_space<workgroup>>, memref<128x64xf32, #gpu.address_space<workgroup>>, !bar
  return
}

// -----

!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
func.func @load_destination_in_gmem(%g: memref<256x64xf32>, %s: memref<128x64xf32>, %b: !bar, %i: i32) {
  // expected-error @+1 {{`destination` must be in shared memory (#gpu.address_space<workgroup>), but it is in global memory (no memory space)}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [128, 64] : memref<256x64xf32>, memref<128x64xf32>, !bar
  return
}

// -----

!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
func.func @load_element_types(%g: memref<256x64xf32>, %s: memref<128x64xf16, #gpu.address_space<workgroup>>, %b: !bar, %i: i32) {
  // expected-error @+1 {{`source` element type 'f32' does not match `destination` element type 'f16'}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [128, 64] : memref<256x64xf32>, memref<128x64xf16, #gpu.address_space<workgroup>>, !bar
  return
}

// -----

!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
func.func @load_slice_count(%g: memref<256x64xf32>, %s: memref<128x64xf32, #gpu.address_space<workgroup>>, %b: !bar, %i: i32) {
  // expected-error @+1 {{`slice_lengths` has 3 entries, but `source` has rank 2}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [1, 128, 64] : memref<256x64xf32>, memref<128x64xf32, #gpu.address_space<workgroup>>, !bar
  return
}

// -----

!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
func.func @load_index_count(%g: memref<256x64xf32>, %s: memref<128x64xf32, #gpu.address_space<workgroup>>, %b: !bar, %i: i32) {
  // expected-error @+1 {{expected 2 `indices` (the rank of `source`), but got 1}}
  mosaic_gpu.async_load %g[%i] to %s, %b slice_lengths [128, 64] : memref<256x64xf32>, memref<128x64xf32, #gpu.address_space<workgroup>>, !bar
  return
}

// -----

!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
func.func @load_bad_slice_length(%g: memref<256x64xf32>, %s: memref<128x64xf32, #gpu.address_space<workgroup>>, %b: !bar, %i: i32) {
  // expected-error @+1 {{`slice_lengths` entry 1 is -2; lengths must be positive, or -1 to squeeze the dim}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [128, -2] : memref<256x64xf32>, memref<128x64xf32, #gpu.address_space<workgroup>>, !bar
  return
}

// -----

!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
func.func @load_slice_too_long(%g: memref<256x32xf32>, %s: memref<128x64xf32, #gpu.address_space<workgroup>>, %b: !bar, %i: i32) {
  // expected-error @+1 {{promises to stay in bounds, but `slice_lengths` entry 1 is 64, larger than dim 1 of `source` which is 32}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [128, 64] {oob_fill_mode = #mosaic_gpu.oob_fill_mode<promise_in_bounds>} : memref<256x32xf32>, memref<128x64xf32, #gpu.address_space<workgroup>>, !bar
  return
}

// -----

!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
func.func @load_dynamic_smem(%g: memref<256x64xf32>, %s: memref<?x64xf32, #gpu.address_space<workgroup>>, %b: !bar, %i: i32) {
  // expected-error @+1 {{`destination` must have a static shape, but it is 'memref<?x64xf32, #gpu.address_space<workgroup>>'}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [128, 64] : memref<256x64xf32>, memref<?x64xf32, #gpu.address_space<workgroup>>, !bar
  return
}

// -----

!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
func.func @load_noncontiguous_smem(%g: memref<256x64xf32>, %s: memref<128x64xf32, strided<[128, 1]>, #gpu.address_space<workgroup>>, %b: !bar, %i: i32) {
  // expected-error @+1 {{`destination` must be contiguous for TMA}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [128, 64] : memref<256x64xf32>, memref<128x64xf32, strided<[128, 1]>, #gpu.address_space<workgroup>>, !bar
  return
}

// -----

!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
func.func @load_strided_minor(%g: memref<256x64xf32, strided<[1, 256]>>, %s: memref<128x64xf32, #gpu.address_space<workgroup>>, %b: !bar, %i: i32) {
  // expected-error @+1 {{`source` must have a unit-stride minor dim for TMA}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [128, 64] : memref<256x64xf32, strided<[1, 256]>>, memref<128x64xf32, #gpu.address_space<workgroup>>, !bar
  return
}

// -----

#not_strided = affine_map<(d0, d1) -> (d1, d0 floordiv 2)>
func.func @load_smem_not_strided(%g: memref<256x64xf32>, %s: memref<128x64xf32, #not_strided, #gpu.address_space<workgroup>>, %b: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: i32) {
  // expected-error @+1 {{`destination` must be contiguous for TMA}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [128, 64] : memref<256x64xf32>, memref<128x64xf32, #not_strided, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

#not_strided = affine_map<(d0, d1) -> (d1, d0 floordiv 2)>
func.func @load_gmem_not_strided(%g: memref<256x64xf32, #not_strided>, %s: memref<128x64xf32, #gpu.address_space<workgroup>>, %b: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: i32) {
  // expected-error @+1 {{`source` must have a unit-stride minor dim for TMA}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [128, 64] : memref<256x64xf32, #not_strided>, memref<128x64xf32, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
func.func @load_squeeze_rank(%g: memref<4x256x64xf32>, %s: memref<1x128x64xf32, #gpu.address_space<workgroup>>, %b: !bar, %i: i32) {
  // expected-error @+1 {{`destination` has rank 3, but `source` has rank 3 with 1 squeezed (-1) slice dims; expected rank 2}}
  mosaic_gpu.async_load %g[%i, %i, %i] to %s, %b slice_lengths [-1, 128, 64] : memref<4x256x64xf32>, memref<1x128x64xf32, #gpu.address_space<workgroup>>, !bar
  return
}

// -----

!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
func.func @load_shape_mismatch(%g: memref<4x256x64xf32>, %s: memref<128x32xf32, #gpu.address_space<workgroup>>, %b: !bar, %i: i32) {
  // expected-error @+1 {{`slice_lengths` (-1, 128, 64) without the squeezed (-1) dims is (128, 64), which does not match the `destination` shape (128, 32)}}
  mosaic_gpu.async_load %g[%i, %i, %i] to %s, %b slice_lengths [-1, 128, 64] : memref<4x256x64xf32>, memref<128x32xf32, #gpu.address_space<workgroup>>, !bar
  return
}

// -----

!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
func.func @load_duplicate_collective(%g: memref<256x64xf32>, %s: memref<128x64xf32, #gpu.address_space<workgroup>>, %b: !bar, %i: i32) {
  // expected-error @+1 {{`collective` lists cluster dimension x more than once}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [128, 64] {collective = [#mosaic_gpu.dim<x>, #mosaic_gpu.dim<x>]} : memref<256x64xf32>, memref<128x64xf32, #gpu.address_space<workgroup>>, !bar
  return
}

// -----

func.func @load_barrier_rank(%g: memref<256x64xf32>, %s: memref<128x64xf32, #gpu.address_space<workgroup>>, %b: memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: i32) {
  // expected-error @+1 {{`barrier` must be a rank-0 memref}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [128, 64] : memref<256x64xf32>, memref<128x64xf32, #gpu.address_space<workgroup>>, memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @load_index_type(%g: memref<256x64xf32>, %s: memref<128x64xf32, #gpu.address_space<workgroup>>, %b: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{use of value '%i' expects different type than prior uses: 'i32' vs 'index'}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %b slice_lengths [128, 64] : memref<256x64xf32>, memref<128x64xf32, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @prefetch_in_smem(%g: memref<256x64xf32, #gpu.address_space<workgroup>>, %i: i32) {
  // expected-error @+1 {{`source` must be in global memory}}
  mosaic_gpu.async_prefetch %g[%i, %i] slice_lengths [128, 64] : memref<256x64xf32, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @prefetch_index_count(%g: memref<256x64xf32>, %i: i32) {
  // expected-error @+1 {{expected 2 `indices` (the rank of `source`), but got 3}}
  mosaic_gpu.async_prefetch %g[%i, %i, %i] slice_lengths [128, 64] : memref<256x64xf32>
  return
}

// -----

func.func @prefetch_zero_length(%g: memref<256x64xf32>, %i: i32) {
  // expected-error @+1 {{`slice_lengths` entry 0 is 0; lengths must be positive, or -1 to squeeze the dim}}
  mosaic_gpu.async_prefetch %g[%i, %i] slice_lengths [0, 64] : memref<256x64xf32>
  return
}

// -----

func.func @prefetch_duplicate_collective(%g: memref<256x64xf32>, %i: i32) {
  // expected-error @+1 {{`collective` lists cluster dimension y more than once}}
  mosaic_gpu.async_prefetch %g[%i, %i] slice_lengths [128, 64] {collective = [#mosaic_gpu.dim<y>, #mosaic_gpu.dim<x>, #mosaic_gpu.dim<y>]} : memref<256x64xf32>
  return
}

// -----

func.func @store_source_in_gmem(%s: memref<128x64xf32>, %g: memref<256x64xf32>, %i: i32) {
  // expected-error @+1 {{`source` must be in shared memory (#gpu.address_space<workgroup>), but it is in global memory (no memory space)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [128, 64] : memref<128x64xf32>, memref<256x64xf32>
  return
}

// -----

func.func @store_destination_in_smem(%s: memref<128x64xf32, #gpu.address_space<workgroup>>, %g: memref<256x64xf32, #gpu.address_space<workgroup>>, %i: i32) {
  // expected-error @+1 {{`destination` must be in global memory (no memory space or #gpu.address_space<global>), but it is in #gpu.address_space<workgroup>}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [128, 64] : memref<128x64xf32, #gpu.address_space<workgroup>>, memref<256x64xf32, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @store_shape_mismatch(%s: memref<64x64xf32, #gpu.address_space<workgroup>>, %g: memref<256x64xf32>, %i: i32) {
  // expected-error @+1 {{`slice_lengths` (128, 64) does not match the `source` shape (64, 64)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [128, 64] : memref<64x64xf32, #gpu.address_space<workgroup>>, memref<256x64xf32>
  return
}

// -----

func.func @store_element_types(%s: memref<128x64xf16, #gpu.address_space<workgroup>>, %g: memref<256x64xf32>, %i: i32) {
  // expected-error @+1 {{`destination` element type 'f32' does not match `source` element type 'f16'}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [128, 64] : memref<128x64xf16, #gpu.address_space<workgroup>>, memref<256x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Registers <-> memory
//===----------------------------------------------------------------------===//

func.func @vector_load_shape(%r: memref<128x64xf32>) {
  // expected-error @+1 {{`result` shape (64, 128) does not match `source` shape (128, 64)}}
  %0 = mosaic_gpu.vector_load %r : memref<128x64xf32> -> vector<64x128xf32>
  return
}

// -----

func.func @vector_load_element_type(%r: memref<128x64xf32>) {
  // expected-error @+1 {{`result` element type 'f16' does not match `source` element type 'f32'}}
  %0 = mosaic_gpu.vector_load %r : memref<128x64xf32> -> vector<128x64xf16>
  return
}

// -----

func.func @vector_load_private(%r: memref<128xf32, #gpu.address_space<private>>) {
  // expected-error @+1 {{`source` must be in shared or global memory, but it is in #gpu.address_space<private>}}
  %0 = mosaic_gpu.vector_load %r : memref<128xf32, #gpu.address_space<private>> -> vector<128xf32>
  return
}

// -----

func.func @vector_load_rank0(%r: memref<f32>) {
  // expected-error @+1 {{operand #0 must be non-0-ranked.memref of any type values}}
  %0 = mosaic_gpu.vector_load %r : memref<f32> -> vector<1xf32>
  return
}

// -----

func.func @vector_store_shape(%v: vector<128xf32>, %r: memref<256xf32>) {
  // expected-error @+1 {{`valueToStore` shape (128) does not match `destination` shape (256)}}
  mosaic_gpu.vector_store %v, %r : vector<128xf32>, memref<256xf32>
  return
}

// -----

func.func @vector_store_element_type(%v: vector<128xi32>, %r: memref<128xf32>) {
  // expected-error @+1 {{`valueToStore` element type 'i32' does not match `destination` element type 'f32'}}
  mosaic_gpu.vector_store %v, %r : vector<128xi32>, memref<128xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// WGMMA
//===----------------------------------------------------------------------===//

func.func @wgmma_element_types(%acc: vector<64x64xf32>, %a: memref<64x16xf16, #gpu.address_space<workgroup>>, %b: memref<16x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`a` element type 'f16' does not match `b` element type 'bf16'; only the two fp8 types may be mixed}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x16xf16, #gpu.address_space<workgroup>>, memref<16x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// -----

func.func @wgmma_bf16_f16_accumulator(%acc: vector<64x64xf16>, %a: memref<64x16xbf16, #gpu.address_space<workgroup>>, %b: memref<16x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`accumulator` element type 'f16' is not supported for 'bf16' inputs (f16 and fp8: f32 or f16; bf16 and tf32: f32; i8: i32)}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf16>, memref<64x16xbf16, #gpu.address_space<workgroup>>, memref<16x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf16>
  return
}

// -----

func.func @wgmma_i8_f32_accumulator(%acc: vector<64x64xf32>, %a: memref<64x32xi8, #gpu.address_space<workgroup>>, %b: memref<32x64xi8, strided<[1, 32]>, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`accumulator` element type 'f32' is not supported for 'i8' inputs}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x32xi8, #gpu.address_space<workgroup>>, memref<32x64xi8, strided<[1, 32]>, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// -----

func.func @wgmma_m(%acc: vector<96x64xf32>, %a: memref<96x16xbf16, #gpu.address_space<workgroup>>, %b: memref<16x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`accumulator` has 96 rows (M), which is not a multiple of 64}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<96x64xf32>, memref<96x16xbf16, #gpu.address_space<workgroup>>, memref<16x64xbf16, #gpu.address_space<workgroup>> -> vector<96x64xf32>
  return
}

// -----

func.func @wgmma_n_multiple(%acc: vector<64x60xf32>, %a: memref<64x16xbf16, #gpu.address_space<workgroup>>, %b: memref<16x60xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`accumulator` has 60 columns (N); N must be a multiple of 8 and at most 256}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x60xf32>, memref<64x16xbf16, #gpu.address_space<workgroup>>, memref<16x60xbf16, #gpu.address_space<workgroup>> -> vector<64x60xf32>
  return
}

// -----

func.func @wgmma_n_too_large(%acc: vector<64x512xf32>, %a: memref<64x16xbf16, #gpu.address_space<workgroup>>, %b: memref<16x512xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`accumulator` has 512 columns (N); N must be a multiple of 8 and at most 256}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x512xf32>, memref<64x16xbf16, #gpu.address_space<workgroup>>, memref<16x512xbf16, #gpu.address_space<workgroup>> -> vector<64x512xf32>
  return
}

// -----

func.func @wgmma_a_rows(%acc: vector<128x64xf32>, %a: memref<64x16xbf16, #gpu.address_space<workgroup>>, %b: memref<16x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`a` has 64 rows, but the `accumulator` has 128 (M)}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<128x64xf32>, memref<64x16xbf16, #gpu.address_space<workgroup>>, memref<16x64xbf16, #gpu.address_space<workgroup>> -> vector<128x64xf32>
  return
}

// -----

func.func @wgmma_k(%acc: vector<64x64xf32>, %a: memref<64x32xbf16, #gpu.address_space<workgroup>>, %b: memref<16x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`b` has 16 rows, but `a` has 32 columns (K)}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x32xbf16, #gpu.address_space<workgroup>>, memref<16x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// -----

func.func @wgmma_b_cols(%acc: vector<64x64xf32>, %a: memref<64x16xbf16, #gpu.address_space<workgroup>>, %b: memref<16x128xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`b` has 128 columns, but the `accumulator` has 64 (N)}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x16xbf16, #gpu.address_space<workgroup>>, memref<16x128xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// -----

func.func @wgmma_k_step(%acc: vector<64x64xf32>, %a: memref<64x24xbf16, #gpu.address_space<workgroup>>, %b: memref<24x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{K = 24 is not a multiple of 16, the K of one wgmma instruction for 'bf16'}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x24xbf16, #gpu.address_space<workgroup>>, memref<24x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// -----

func.func @wgmma_b_in_gmem(%acc: vector<64x64xf32>, %a: memref<64x16xbf16, #gpu.address_space<workgroup>>, %b: memref<16x64xbf16>) {
  // expected-error @+1 {{`b` must be in shared memory (#gpu.address_space<workgroup>), but it is in global memory (no memory space)}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x16xbf16, #gpu.address_space<workgroup>>, memref<16x64xbf16> -> vector<64x64xf32>
  return
}

// -----

func.func @wgmma_a_in_gmem(%acc: vector<64x64xf32>, %a: memref<64x16xbf16>, %b: memref<16x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`a` must be in shared memory (#gpu.address_space<workgroup>), but it is in global memory (no memory space)}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x16xbf16>, memref<16x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// -----

func.func @wgmma_b_not_contiguous(%acc: vector<64x64xf32>, %a: memref<64x16xbf16, #gpu.address_space<workgroup>>, %b: memref<16x64xbf16, strided<[128, 2]>, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`b` must be contiguous along one of its dims}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x16xbf16, #gpu.address_space<workgroup>>, memref<16x64xbf16, strided<[128, 2]>, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// -----

#not_strided = affine_map<(d0, d1) -> (d1, d0 floordiv 2)>
func.func @wgmma_a_not_strided(%acc: vector<64x64xf32>, %a: memref<64x16xbf16, #not_strided, #gpu.address_space<workgroup>>, %b: memref<16x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`a` must be contiguous along one of its dims, but its type is 'memref<64x16xbf16, affine_map<(d0, d1) -> (d1, d0 floordiv 2)>, #gpu.address_space<workgroup>>'}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x16xbf16, #not_strided, #gpu.address_space<workgroup>>, memref<16x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// -----

func.func @wgmma_a_transposed_fp8(%acc: vector<64x64xf32>, %a: memref<64x32xf8E4M3FN, strided<[1, 64]>, #gpu.address_space<workgroup>>, %b: memref<32x64xf8E4M3FN, strided<[1, 32]>, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`a` is transposed, which wgmma supports only for 16-bit element types, not 'f8E4M3FN'}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x32xf8E4M3FN, strided<[1, 64]>, #gpu.address_space<workgroup>>, memref<32x64xf8E4M3FN, strided<[1, 32]>, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// -----

func.func @wgmma_b_not_k_major_i8(%acc: vector<64x64xi32>, %a: memref<64x32xi8, #gpu.address_space<workgroup>>, %b: memref<32x64xi8, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`b` must be stored K-major (transposed, dim 0 contiguous) for 'i8'; wgmma reads other layouts only for 16-bit types}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xi32>, memref<64x32xi8, #gpu.address_space<workgroup>>, memref<32x64xi8, #gpu.address_space<workgroup>> -> vector<64x64xi32>
  return
}

// -----

func.func @wgmma_unsupported_type(%acc: vector<64x64xf32>, %a: memref<64x16xf64, #gpu.address_space<workgroup>>, %b: memref<16x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{operand #1 must be}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x16xf64, #gpu.address_space<workgroup>>, memref<16x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// -----

func.func @wgmma_b_not_a_matrix(%acc: vector<64x64xf32>, %a: memref<64x16xbf16, #gpu.address_space<workgroup>>, %b: memref<2x16x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`a` and `b` must be matrices, but their shapes are (64, 16) and (2, 16, 64)}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x16xbf16, #gpu.address_space<workgroup>>, memref<2x16x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// -----

func.func @tiled_ref_mismatch(%r: memref<16x1x8x32xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`source` has type 'memref<16x1x8x32xbf16, #gpu.address_space<workgroup>>', which is not the tiled form `in_transforms` records for it}}
  %0 = mosaic_gpu.vector_load %r {in_transforms = [[#mosaic_gpu.tile<[8, 64]>]], transforms_applied} : memref<16x1x8x32xbf16, #gpu.address_space<workgroup>> -> vector<128x64xbf16>
  return
}

// -----

func.func @tiled_ref_shape(%r: memref<16x1x8x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`result` shape (64, 64) does not match `source` shape (128, 64)}}
  %0 = mosaic_gpu.vector_load %r {in_transforms = [[#mosaic_gpu.tile<[8, 64]>]], transforms_applied} : memref<16x1x8x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xbf16>
  return
}

// -----

func.func @wgmma_result_type(%acc: vector<64x64xf32>, %a: memref<64x16xbf16, #gpu.address_space<workgroup>>, %b: memref<16x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{all of {accumulator, result} have same type}}
  %0 = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x16xbf16, #gpu.address_space<workgroup>>, memref<16x64xbf16, #gpu.address_space<workgroup>> -> vector<64x128xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Layout and shape
//===----------------------------------------------------------------------===//

func.func @layout_cast_splat_shape(%x: vector<128x64xf32>) {
  // expected-error @+1 {{`new_layout`: WGSplatFragLayout shape (64, 128) does not match the vector shape (128, 64)}}
  %0 = mosaic_gpu.layout_cast %x : vector<128x64xf32> to #mosaic_gpu.WGSplatFragLayout<[64, 128]>
  return
}

// -----

func.func @layout_cast_strided_shape(%x: vector<128x64xf32>) {
  // expected-error @+1 {{`new_layout`: WGStridedFragLayout shape (128, 32) does not match the vector shape (128, 64)}}
  %0 = mosaic_gpu.layout_cast %x : vector<128x64xf32> to #mosaic_gpu.WGStridedFragLayout<[128, 32], 1>
  return
}

// -----

func.func @layout_cast_tiled_not_dividing(%x: vector<96x64xf32>) {
  // expected-error @+1 {{`new_layout`: TiledLayout does not fit the vector shape (96, 64): tile (64, 8) does not divide shape (96, 64): 96 is not a multiple of 64}}
  %0 = mosaic_gpu.layout_cast %x : vector<96x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  return
}

// -----

func.func @layout_cast_tiled_rank(%x: vector<128xf32>) {
  // expected-error @+1 {{`new_layout`: TiledLayout does not fit the vector shape (128): tile (64, 8) does not apply to shape (128): the tile has a higher rank}}
  %0 = mosaic_gpu.layout_cast %x : vector<128xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  return
}

// -----

func.func @layout_cast_not_a_layout(%x: vector<128xf32>) {
  // expected-error @+1 {{attribute 'new_layout' failed to satisfy constraint}}
  %0 = mosaic_gpu.layout_cast %x : vector<128xf32> to #mosaic_gpu.tile<[8]>
  return
}

// -----

func.func @broadcast_element_type(%x: vector<128xf32>) {
  // expected-error @+1 {{`operand` element type 'f32' does not match the result element type 'f16'}}
  %0 = mosaic_gpu.broadcast_in_dim %x, dims [0] : vector<128xf32> -> vector<128x64xf16>
  return
}

// -----

func.func @broadcast_rank(%x: vector<128x64xf32>) {
  // expected-error @+1 {{`operand` has rank 2, larger than the result rank 1}}
  %0 = mosaic_gpu.broadcast_in_dim %x, dims [0, 1] : vector<128x64xf32> -> vector<128xf32>
  return
}

// -----

func.func @broadcast_dims_count(%x: vector<128xf32>) {
  // expected-error @+1 {{`broadcast_dimensions` has 2 entries, but `operand` has rank 1}}
  %0 = mosaic_gpu.broadcast_in_dim %x, dims [0, 1] : vector<128xf32> -> vector<128x64xf32>
  return
}

// -----

func.func @broadcast_dim_range(%x: vector<128xf32>) {
  // expected-error @+1 {{`broadcast_dimensions` entry 0 is 2, outside the result rank range [0, 2)}}
  %0 = mosaic_gpu.broadcast_in_dim %x, dims [2] : vector<128xf32> -> vector<128x64xf32>
  return
}

// -----

func.func @broadcast_dims_order(%x: vector<64x128xf32>) {
  // expected-error @+1 {{`broadcast_dimensions` (1, 0) must be strictly increasing}}
  %0 = mosaic_gpu.broadcast_in_dim %x, dims [1, 0] : vector<64x128xf32> -> vector<128x64xf32>
  return
}

// -----

func.func @broadcast_size(%x: vector<64xf32>) {
  // expected-error @+1 {{`operand` dim 0 has size 64, but it maps to result dim 0 of size 128; sizes must match or be 1}}
  %0 = mosaic_gpu.broadcast_in_dim %x, dims [0] : vector<64xf32> -> vector<128x64xf32>
  return
}

// -----

func.func @iota_dimension() {
  // expected-error @+1 {{`dimension` 2 is outside the result rank range [0, 2)}}
  %0 = mosaic_gpu.broadcasted_iota 2 : vector<128x64xi32>
  return
}

// -----

func.func @iota_negative_dimension() {
  // expected-error @+1 {{`dimension` -1 is outside the result rank range [0, 1)}}
  %0 = mosaic_gpu.broadcasted_iota -1 : vector<128xi32>
  return
}

// -----

func.func @slice_smem_in_gmem() {
  // expected-error @+1 {{`result` must be in shared memory (#gpu.address_space<workgroup>), but it is in global memory (no memory space)}}
  %0 = mosaic_gpu.slice_smem 0 : memref<128xf32>
  return
}

// -----

func.func @slice_smem_negative_offset() {
  // expected-error @+1 {{`offset` must be non-negative, but it is -128}}
  %0 = mosaic_gpu.slice_smem -128 : memref<128xf32, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @slice_smem_misaligned() {
  // expected-error @+1 {{`offset` 6 is not a multiple of the element size (4 bytes of 'f32')}}
  %0 = mosaic_gpu.slice_smem 6 : memref<128xf32, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @slice_smem_dynamic() {
  // expected-error @+1 {{result #0 must be statically shaped memref of any type values}}
  %0 = mosaic_gpu.slice_smem 0 : memref<?xf32, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @with_transforms_in_gmem(%r: memref<128x64xbf16>) {
  // expected-error @+1 {{`ref` must be in shared memory}}
  %0 = mosaic_gpu.with_transforms %r : memref<128x64xbf16> with []
  return
}

// -----

func.func @with_transforms_order(%r: memref<128x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`transforms` may hold one tile, and it must come before the swizzle}}
  %0 = mosaic_gpu.with_transforms %r : memref<128x64xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.swizzle<k128ByteSwizzle>, #mosaic_gpu.tile<[8, 64]>]
  return
}

// -----

func.func @with_transforms_two_swizzles(%r: memref<128x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`transforms` holds more than one swizzle}}
  %0 = mosaic_gpu.with_transforms %r : memref<128x64xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.swizzle<k128ByteSwizzle>, #mosaic_gpu.swizzle<k64ByteSwizzle>]
  return
}

// -----

func.func @with_transforms_not_a_transform(%r: memref<128x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`transforms` entries must be #mosaic_gpu.tile or #mosaic_gpu.swizzle, got 8 : i64}}
  %0 = mosaic_gpu.with_transforms %r : memref<128x64xbf16, #gpu.address_space<workgroup>> with [8]
  return
}

// -----

func.func @with_transforms_tile_rank(%r: memref<128xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{tile (8, 64) has rank 2, larger than the rank 1 of `ref`}}
  %0 = mosaic_gpu.with_transforms %r : memref<128xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.tile<[8, 64]>]
  return
}

// -----

func.func @with_transforms_tile_divides(%r: memref<120x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{tile (16, 64) does not divide `ref` shape (120, 64): 120 is neither smaller than nor a multiple of 16}}
  %0 = mosaic_gpu.with_transforms %r : memref<120x64xbf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.tile<[16, 64]>]
  return
}

// -----

func.func @assume_multiple_zero(%i: i32) {
  // expected-error @+1 {{`multiple` must be positive, but it is 0}}
  %0 = mosaic_gpu.assume_multiple %i, 0 : i32
  return
}

// -----

func.func @assume_multiple_float(%f: f32) {
  // expected-error @+1 {{operand #0 must be signless integer or index}}
  %0 = mosaic_gpu.assume_multiple %f, 4 : f32
  return
}

// -----

//===----------------------------------------------------------------------===//
// Custom primitives
//===----------------------------------------------------------------------===//

func.func @custom_in_layouts(%x: vector<128xf32>) {
  // expected-error @+1 {{`in_layouts` has 0 entries, but there are 1 vector operands}}
  mosaic_gpu.custom_primitive (%x) {in_layouts = [], in_transforms = [], out_layouts = []} : (vector<128xf32>) -> () {
  ^bb0(%a: vector<128xf32>):
    mosaic_gpu.return
  }
  return
}

// -----

func.func @custom_in_transforms(%r: memref<128x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`in_transforms` has 0 entries, but there are 1 shared-memory ref operands}}
  mosaic_gpu.custom_primitive (%r) {in_layouts = [], in_transforms = [], out_layouts = []} : (memref<128x64xbf16, #gpu.address_space<workgroup>>) -> () {
  ^bb0(%a: memref<128x64xbf16, #gpu.address_space<workgroup>>):
    mosaic_gpu.return
  }
  return
}

// -----

func.func @custom_memref_result(%r: memref<128xf32>) {
  // expected-error @+1 {{result #0 has type 'memref<128xf32>'; custom primitives return vectors or scalars}}
  %0 = mosaic_gpu.custom_primitive (%r) {in_layouts = [], in_transforms = [], out_layouts = []} : (memref<128xf32>) -> memref<128xf32> {
  ^bb0(%a: memref<128xf32>):
    mosaic_gpu.return %a : memref<128xf32>
  }
  return
}

// -----

func.func @custom_out_layouts() {
  // expected-error @+1 {{`out_layouts` has 0 entries, but there are 1 vector results}}
  %0 = mosaic_gpu.custom_primitive () {in_layouts = [], in_transforms = [], out_layouts = []} : () -> vector<128xf32> {
    %c = arith.constant dense<0.0> : vector<128xf32>
    mosaic_gpu.return %c : vector<128xf32>
  }
  return
}

// -----

func.func @custom_layout_shape(%x: vector<128xf32>) {
  // expected-error @+1 {{`in_layouts` entry 0: WGStridedFragLayout shape (256) does not match the vector shape (128)}}
  mosaic_gpu.custom_primitive (%x) {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[256], 1>], in_transforms = [], out_layouts = []} : (vector<128xf32>) -> () {
  ^bb0(%a: vector<128xf32>):
    mosaic_gpu.return
  }
  return
}

// -----

func.func @custom_not_a_layout(%x: vector<128xf32>) {
  // expected-error @+1 {{`in_layouts` entry 0: expected a register layout (WGSplatFragLayout, WGStridedFragLayout or TiledLayout), got 1 : i64}}
  mosaic_gpu.custom_primitive (%x) {in_layouts = [1], in_transforms = [], out_layouts = []} : (vector<128xf32>) -> () {
  ^bb0(%a: vector<128xf32>):
    mosaic_gpu.return
  }
  return
}

// -----

func.func @custom_transforms_entry(%r: memref<128x64xbf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`in_transforms` entry 0 must be a list of #mosaic_gpu.tile and #mosaic_gpu.swizzle transforms, got #mosaic_gpu.swizzle<k128ByteSwizzle>}}
  mosaic_gpu.custom_primitive (%r) {in_layouts = [], in_transforms = [#mosaic_gpu.swizzle<k128ByteSwizzle>], out_layouts = []} : (memref<128x64xbf16, #gpu.address_space<workgroup>>) -> () {
  ^bb0(%a: memref<128x64xbf16, #gpu.address_space<workgroup>>):
    mosaic_gpu.return
  }
  return
}

// -----

func.func @custom_block_arguments(%x: vector<128xf32>) {
  // expected-error @+1 {{body arguments must match the operands one to one: the body takes 0 arguments, there are 1 operands}}
  mosaic_gpu.custom_primitive (%x) {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>], in_transforms = [], out_layouts = []} : (vector<128xf32>) -> () {
    mosaic_gpu.return
  }
  return
}

// -----

func.func @custom_no_return(%i: i32) {
  mosaic_gpu.custom_primitive (%i) {in_layouts = [], in_transforms = [], out_layouts = []} : (i32) -> () {
  ^bb0(%a: i32):
    // expected-error @+1 {{block with no terminator}}
    %0 = arith.addi %a, %a : i32
  }
  return
}

// -----

func.func @custom_uses_outer_value(%i: i32) {
  // expected-note @+1 {{required by region isolation constraints}}
  mosaic_gpu.custom_primitive () {in_layouts = [], in_transforms = [], out_layouts = []} : () -> () {
    // expected-error @+1 {{using value defined outside the region}}
    %0 = arith.addi %i, %i : i32
    mosaic_gpu.return
  }
  return
}

// -----

func.func @return_count() {
  %0 = mosaic_gpu.custom_primitive () {in_layouts = [], in_transforms = [], out_layouts = []} : () -> i32 {
    // expected-error @+1 {{returns 0 values, but the enclosing custom_primitive has 1 results}}
    mosaic_gpu.return
  }
  return
}

// -----

func.func @return_type() {
  %0 = mosaic_gpu.custom_primitive () {in_layouts = [], in_transforms = [], out_layouts = []} : () -> i32 {
    %c = arith.constant 0 : i64
    // expected-error @+1 {{operand #0 has type 'i64', but the enclosing custom_primitive result #0 has type 'i32'}}
    mosaic_gpu.return %c : i64
  }
  return
}

// -----

func.func @return_outside_custom_primitive() {
  // expected-error @+1 {{expects parent op 'mosaic_gpu.custom_primitive'}}
  mosaic_gpu.return
}

// -----

func.func @bounded_store_wrong_count(%v: vector<64x16xf32>, %out: memref<64x16xf32>, %n: index) {
  // expected-error @+1 {{has 1 `valid` extents for a rank-2 destination; give one per dim}}
  mosaic_gpu.vector_store %v, %out valid [%n] : vector<64x16xf32>, memref<64x16xf32>
  return
}

// -----

func.func @bounded_store_to_shared_memory(%v: vector<64x16xf32>, %out: memref<64x16xf32, #gpu.address_space<workgroup>>, %n: index) {
  // expected-error @+1 {{`destination` must be in global memory}}
  mosaic_gpu.vector_store %v, %out valid [%n, %n] : vector<64x16xf32>, memref<64x16xf32, #gpu.address_space<workgroup>>
  return
}
