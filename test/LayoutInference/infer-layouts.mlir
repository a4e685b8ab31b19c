// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts | FileCheck %s

// A splat constant feeds a strided computation: the constant stays Splat and
// is relaid where it is used; elementwise ops (casts included) share one
// layout.
// CHECK-LABEL: func @pointwise_splat_and_strided
func.func @pointwise_splat_and_strided(%ref: memref<128x64xf32>) -> vector<128x64xf32> {
  // CHECK: arith.constant {out_layouts = [#mosaic_gpu.WGSplatFragLayout<[128, 64]>]}
  %c = arith.constant dense<2.0> : vector<128x64xf32>
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>]}
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  // CHECK: arith.addf {{.*}} {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>, #mosaic_gpu.WGStridedFragLayout<[128, 64], 4>], out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>]}
  %s = arith.addf %v, %c : vector<128x64xf32>
  // CHECK: math.exp {{.*}} out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>]
  %e = math.exp %s : vector<128x64xf32>
  // CHECK: arith.truncf {{.*}} out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>]
  %t = arith.truncf %e : vector<128x64xf32> to vector<128x64xbf16>
  // CHECK: arith.cmpf {{.*}} out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>]
  %p = arith.cmpf olt, %e, %v : vector<128x64xf32>
  // CHECK: arith.select {{.*}} out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>]
  %r = arith.select %p, %e, %v : vector<128x64xi1>, vector<128x64xf32>
  return %r : vector<128x64xf32>
}

// -----

// Splat operands give a splat result when nothing else is involved.
// CHECK-LABEL: func @all_splat
func.func @all_splat(%x: f32) -> vector<256xf32> {
  // CHECK: vector.broadcast {{.*}} {out_layouts = [#mosaic_gpu.WGSplatFragLayout<[256]>]}
  %b = vector.broadcast %x : f32 to vector<256xf32>
  %c = arith.constant dense<1.0> : vector<256xf32>
  // CHECK: arith.mulf {{.*}} out_layouts = [#mosaic_gpu.WGSplatFragLayout<[256]>]
  %m = arith.mulf %b, %c : vector<256xf32>
  return %m : vector<256xf32>
}

// -----

// Reducing a WGMMA value over dim 1 gives WGMMA_ROW, over dim 0 WGMMA_COL;
// broadcasting back is free.
// CHECK-LABEL: func @reductions
func.func @reductions(%ref: memref<128x64xf32>, %out: memref<128x64xf32>) {
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#wgmma]}
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %zr = arith.constant dense<0.0> : vector<128xf32>
  // CHECK: vector.multi_reduction <add>, {{.*}} {in_layouts = [#wgmma, #wgmma_row], out_layouts = [#wgmma_row]}
  %rows = vector.multi_reduction <add>, %v, %zr [1] : vector<128x64xf32> to vector<128xf32>
  %zc = arith.constant dense<0.0> : vector<64xf32>
  // CHECK: vector.multi_reduction <maximumf>, {{.*}} {in_layouts = [#wgmma, #wgmma_col], out_layouts = [#wgmma_col]}
  %cols = vector.multi_reduction <maximumf>, %v, %zc [0] : vector<128x64xf32> to vector<64xf32>
  // CHECK: mosaic_gpu.broadcast_in_dim {{.*}} {in_layouts = [#wgmma_row], out_layouts = [#wgmma]}
  %rb = mosaic_gpu.broadcast_in_dim %rows, dims [0] : vector<128xf32> -> vector<128x64xf32>
  // CHECK: mosaic_gpu.broadcast_in_dim {{.*}} {in_layouts = [#wgmma_col], out_layouts = [#wgmma]}
  %cb = mosaic_gpu.broadcast_in_dim %cols, dims [1] : vector<64xf32> -> vector<128x64xf32>
  // CHECK: arith.addf {{.*}} {in_layouts = [#wgmma, #wgmma], out_layouts = [#wgmma]}
  %s = arith.addf %rb, %cb : vector<128x64xf32>
  mosaic_gpu.vector_store %s, %out : vector<128x64xf32>, memref<128x64xf32>
  return
}

// -----

// A full reduction to a scalar works from any layout and needs no result
// layout.
// CHECK-LABEL: func @reduce_to_scalar
func.func @reduce_to_scalar(%ref: memref<128x64xf32>) -> f32 {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %z = arith.constant 0.0 : f32
  // CHECK: vector.multi_reduction <add>, {{.*}} {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>]} [0, 1] : vector<128x64xf32> to f32
  %s = vector.multi_reduction <add>, %v, %z [0, 1] : vector<128x64xf32> to f32
  return %s : f32
}

// -----

// Broadcasting leading dims: the operand's layout is the result's reduced
// over them.
// CHECK-LABEL: func @broadcast_leading
func.func @broadcast_leading(%ref: memref<128xf32>, %out: memref<4x128xf32>) {
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>]}
  %v = mosaic_gpu.vector_load %ref : memref<128xf32> -> vector<128xf32>
  // CHECK: vector.broadcast {{.*}} {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>], out_layouts = [#mosaic_gpu.WGStridedFragLayout<[4, 128], 1>]}
  %b = vector.broadcast %v : vector<128xf32> to vector<4x128xf32>
  mosaic_gpu.vector_store %b, %out : vector<4x128xf32>, memref<4x128xf32>
  return
}

// -----

// shape_cast keeps a strided layout (it is shape-agnostic) and a tiled one
// when the tiled dims are unchanged.
// CHECK-LABEL: func @shape_casts
func.func @shape_casts(%ref: memref<128x64xf32>, %ref3: memref<2x64x64xf32>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  // CHECK: vector.shape_cast {{.*}} {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>], out_layouts = [#mosaic_gpu.WGStridedFragLayout<[8192], 4>]}
  %flat = vector.shape_cast %v : vector<128x64xf32> to vector<8192xf32>
  %w = mosaic_gpu.vector_load %ref3 : memref<2x64x64xf32> -> vector<2x64x64xf32>
  %t = mosaic_gpu.layout_cast %w : vector<2x64x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  // CHECK: vector.shape_cast {{.*}} {in_layouts = [#wgmma], out_layouts = [#wgmma]} : vector<2x64x64xf32> to vector<128x64xf32>
  %m = vector.shape_cast %t : vector<2x64x64xf32> to vector<128x64xf32>
  return
}

// -----

// layout_cast pins its result; the operand follows when nothing else
// decides it.
// CHECK-LABEL: func @layout_cast_pins
func.func @layout_cast_pins(%ref: memref<128x64xf32>) {
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#wgmma_transposed]}
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  // CHECK: mosaic_gpu.layout_cast {{.*}} {in_layouts = [#wgmma_transposed], out_layouts = [#wgmma_transposed]}
  %c = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], warp_dims = [-10], lane_dims = [-6, -3, -5], vector_dim = -2>
  return
}

// -----

// A legal relayout: WGMMA to WGMMA_TRANSPOSED for 16-bit elements.
// CHECK-LABEL: func @legal_relayout
func.func @legal_relayout(%ref: memref<128x64xbf16>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xbf16> -> vector<128x64xbf16>
  // CHECK: mosaic_gpu.layout_cast {{.*}} {in_layouts = [#wgmma], out_layouts = [#wgmma]}
  %a = mosaic_gpu.layout_cast %v : vector<128x64xbf16> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  // CHECK: mosaic_gpu.layout_cast {{.*}} {in_layouts = [#wgmma], out_layouts = [#wgmma_transposed]}
  %b = mosaic_gpu.layout_cast %a : vector<128x64xbf16> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], warp_dims = [-10], lane_dims = [-6, -3, -5], vector_dim = -2>
  return
}

// -----

// iota values and non-splat constants are never Splat.
// CHECK-LABEL: func @never_splat
func.func @never_splat(%out: memref<256xi32>) {
  // CHECK: mosaic_gpu.broadcasted_iota 0 {out_layouts = [#mosaic_gpu.WGStridedFragLayout<[256], 2>]}
  %i = mosaic_gpu.broadcasted_iota 0 : vector<256xi32>
  // CHECK: arith.constant {out_layouts = [#mosaic_gpu.WGStridedFragLayout<[256], 2>]} dense<
  %c = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 152, 153, 154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179, 180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197, 198, 199, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 239, 240, 241, 242, 243, 244, 245, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255]> : vector<256xi32>
  %s = arith.addi %i, %c : vector<256xi32>
  mosaic_gpu.vector_store %s, %out : vector<256xi32>, memref<256xi32>
  return
}

// -----

// wgmma in a loop with bf16 operands in shared memory: the accumulator is
// WGMMA through the loop, and both operands get the (8, 64) tiling with a
// 128-byte swizzle, which also reaches the slices they are cut from.
// CHECK-LABEL: func @wgmma_loop
func.func @wgmma_loop(%a_gmem: memref<128x1024xbf16>, %b_gmem: memref<1024x128xbf16>,
                      %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %parity: i1) -> vector<128x128xf32> {
  // CHECK: mosaic_gpu.slice_smem 0 {out_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]}
  %a = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: mosaic_gpu.slice_smem 16384 {out_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]}
  %b = mosaic_gpu.slice_smem 16384 : memref<64x128xbf16, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : i32
  %zero_i32 = arith.constant 0 : i32
  // CHECK: arith.constant {out_layouts = [#mosaic_gpu.WGSplatFragLayout<[128, 128]>]}
  %zero = arith.constant dense<0.0> : vector<128x128xf32>
  // CHECK: scf.for {{.*}} {
  %acc = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc_in = %zero) -> (vector<128x128xf32>) {
    %k_i32 = arith.index_cast %k : index to i32
    %k0 = arith.muli %k_i32, %c64 : i32
    // CHECK: mosaic_gpu.async_load {{.*}} {in_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]}
    mosaic_gpu.async_load %a_gmem[%zero_i32, %k0] to %a, %bar slice_lengths [128, 64]
        : memref<128x1024xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    mosaic_gpu.async_load %b_gmem[%k0, %zero_i32] to %b, %bar slice_lengths [64, 128]
        : memref<1024x128xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    mosaic_gpu.wait %bar, %parity : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    // CHECK: mosaic_gpu.wgmma {{.*}} {in_layouts = [#wgmma], in_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>], [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]], out_layouts = [#wgmma]}
    %next = mosaic_gpu.wgmma %acc_in, %a, %b
        : vector<128x128xf32>, memref<128x64xbf16, #gpu.address_space<workgroup>>,
          memref<64x128xbf16, #gpu.address_space<workgroup>> -> vector<128x128xf32>
    // CHECK: scf.yield {in_layouts = [#wgmma]}
    scf.yield %next : vector<128x128xf32>
  // CHECK: } {in_layouts = [#wgmma], out_layouts = [#wgmma]}
  }
  return %acc : vector<128x128xf32>
}

// -----

// f16 operands with K = 32 and a transposed B: the swizzle follows the
// element width (64 elements of 2 bytes = 128 bytes), B's tile is transposed.
// CHECK-LABEL: func @wgmma_transposed_b
func.func @wgmma_transposed_b(%acc: vector<64x64xf32>,
    %a: memref<64x64xf16, #gpu.address_space<workgroup>>,
    %b: memref<64x64xf16, strided<[1, 64]>, #gpu.address_space<workgroup>>) -> vector<64x64xf32> {
  // CHECK: mosaic_gpu.wgmma {{.*}} in_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>], [#mosaic_gpu.tile<[64, 8]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]
  %r = mosaic_gpu.wgmma %acc, %a, %b
      : vector<64x64xf32>, memref<64x64xf16, #gpu.address_space<workgroup>>,
        memref<64x64xf16, strided<[1, 64]>, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return %r : vector<64x64xf32>
}

// -----

// An operand too narrow for a 128-byte row falls back to a smaller swizzle.
// CHECK-LABEL: func @wgmma_narrow_k
func.func @wgmma_narrow_k(%acc: vector<64x64xf32>,
    %a: memref<64x16xbf16, #gpu.address_space<workgroup>>,
    %b: memref<16x64xbf16, #gpu.address_space<workgroup>>) -> vector<64x64xf32> {
  // CHECK: mosaic_gpu.wgmma {{.*}} in_transforms = {{\[}}[#mosaic_gpu.tile<[8, 16]>, #mosaic_gpu.swizzle<k32ByteSwizzle>], [#mosaic_gpu.tile<[8, 16]>, #mosaic_gpu.swizzle<k32ByteSwizzle>]]
  %r = mosaic_gpu.wgmma %acc, %a, %b
      : vector<64x64xf32>, memref<64x16xbf16, #gpu.address_space<workgroup>>,
        memref<16x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return %r : vector<64x64xf32>
}

// -----

// A in registers must be WGMMA.
// CHECK-LABEL: func @wgmma_a_in_registers
func.func @wgmma_a_in_registers(%acc: vector<64x64xf32>, %a_ref: memref<64x64xbf16>,
    %b: memref<64x64xbf16, #gpu.address_space<workgroup>>) -> vector<64x64xf32> {
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#wgmma]}
  %a = mosaic_gpu.vector_load %a_ref : memref<64x64xbf16> -> vector<64x64xbf16>
  // CHECK: mosaic_gpu.wgmma {{.*}} {in_layouts = [#wgmma, #wgmma], in_transforms
  %r = mosaic_gpu.wgmma %acc, %a, %b
      : vector<64x64xf32>, vector<64x64xbf16>,
        memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return %r : vector<64x64xf32>
}

// -----

// A tiled buffer read into registers gives a tiled register layout.
// CHECK-LABEL: func @tiled_buffer_to_registers
func.func @tiled_buffer_to_registers(%out: memref<128x64xbf16>) {
  %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %t = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>>
      with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  // CHECK: mosaic_gpu.vector_load {{.*}} {in_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]], out_layouts = [#wgmma]}
  %v = mosaic_gpu.vector_load %t : memref<128x64xbf16, #gpu.address_space<workgroup>> -> vector<128x64xbf16>
  mosaic_gpu.vector_store %v, %out : vector<128x64xbf16>, memref<128x64xbf16>
  return
}

// -----

// Slices that share an alias_id share transforms.
// CHECK-LABEL: func @aliasing_slices
func.func @aliasing_slices() {
  // CHECK: mosaic_gpu.slice_smem 0 {alias_id = 3 : i64, out_transforms = {{\[}}[#mosaic_gpu.tile<[8, 32]>, #mosaic_gpu.swizzle<k64ByteSwizzle>]]}
  %a = mosaic_gpu.slice_smem 0 {alias_id = 3} : memref<64x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: mosaic_gpu.slice_smem 0 {alias_id = 3 : i64, out_transforms = {{\[}}[#mosaic_gpu.tile<[8, 32]>, #mosaic_gpu.swizzle<k64ByteSwizzle>]]}
  %b = mosaic_gpu.slice_smem 0 {alias_id = 3} : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %t = mosaic_gpu.with_transforms %a : memref<64x64xbf16, #gpu.address_space<workgroup>>
      with [#mosaic_gpu.tile<[8, 32]>, #mosaic_gpu.swizzle<k64ByteSwizzle>]
  return
}

// -----

// scf.while ties inits, condition-region arguments and yields; results take
// the after-region arguments' layouts.
// CHECK-LABEL: func @while_loop
func.func @while_loop(%ref: memref<128x64xf32>, %n: i32) -> vector<128x64xf32> {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %w = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  %c0 = arith.constant 0 : i32
  // CHECK: scf.while
  %r:2 = scf.while (%x = %w, %i = %c0) : (vector<128x64xf32>, i32) -> (vector<128x64xf32>, i32) {
    %go = arith.cmpi slt, %i, %n : i32
    // CHECK: scf.condition(%{{.*}}) {in_layouts = [#wgmma]}
    scf.condition(%go) %x, %i : vector<128x64xf32>, i32
  } do {
  ^bb0(%y: vector<128x64xf32>, %j: i32):
    // CHECK: arith.addf {{.*}} {in_layouts = [#wgmma, #wgmma], out_layouts = [#wgmma]}
    %y2 = arith.addf %y, %y : vector<128x64xf32>
    %one = arith.constant 1 : i32
    %j2 = arith.addi %j, %one : i32
    scf.yield %y2, %j2 : vector<128x64xf32>, i32
  // CHECK: } attributes {in_layouts = [#wgmma], out_layouts = [#wgmma]}
  }
  return %r#0 : vector<128x64xf32>
}

// -----

// scf.index_switch ties each result to every case's yield.
// CHECK-LABEL: func @index_switch
func.func @index_switch(%ref: memref<128x64xf32>, %i: index) -> vector<128x64xf32> {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  // CHECK: scf.index_switch %{{.*}} {out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>]}
  %r = scf.index_switch %i -> vector<128x64xf32>
  case 0 {
    %c = arith.constant dense<1.0> : vector<128x64xf32>
    // CHECK: scf.yield {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>]}
    scf.yield %c : vector<128x64xf32>
  }
  default {
    // CHECK: scf.yield {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>]}
    scf.yield %v : vector<128x64xf32>
  }
  return %r : vector<128x64xf32>
}

// -----

// scf.if with vector and shared-memory results (the reference has no rule
// for it): the branches' yields and the results share one layout, and a
// buffer chosen in a branch carries its transforms to the result.
// CHECK-LABEL: func @if_with_vector_and_buffer_results
func.func @if_with_vector_and_buffer_results(%ref: memref<128x64xf32>, %p: i1,
    %acc: vector<64x64xf32>, %b: memref<64x64xbf16, #gpu.address_space<workgroup>>) -> (vector<128x64xf32>, vector<64x64xf32>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %x = mosaic_gpu.slice_smem 0 : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %y = mosaic_gpu.slice_smem 8192 : memref<64x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: scf.if
  %r, %buf = scf.if %p -> (vector<128x64xf32>, memref<64x64xbf16, #gpu.address_space<workgroup>>) {
    %t = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
    // CHECK: scf.yield {in_layouts = [#wgmma], in_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]}
    scf.yield %t, %x : vector<128x64xf32>, memref<64x64xbf16, #gpu.address_space<workgroup>>
  } else {
    %c = arith.constant dense<0.0> : vector<128x64xf32>
    // CHECK: scf.yield {in_layouts = [#wgmma], in_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]}
    scf.yield %c, %y : vector<128x64xf32>, memref<64x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: } {out_layouts = [#wgmma], out_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]}
  }
  %r2 = mosaic_gpu.wgmma %acc, %buf, %b
      : vector<64x64xf32>, memref<64x64xbf16, #gpu.address_space<workgroup>>,
        memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return %r, %r2 : vector<128x64xf32>, vector<64x64xf32>
}

// -----

// custom_primitive pins its operands and results to the declared layouts.
// CHECK-LABEL: func @custom_primitive
func.func @custom_primitive(%ref: memref<128xf32>) -> vector<128xf32> {
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>]}
  %v = mosaic_gpu.vector_load %ref : memref<128xf32> -> vector<128xf32>
  // CHECK: mosaic_gpu.custom_primitive(%{{.*}}) {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>], in_transforms = [], out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>]}
  %r = mosaic_gpu.custom_primitive (%v) {
      in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>], in_transforms = [],
      out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>]}
      : (vector<128xf32>) -> vector<128xf32> {
  ^bb0(%x: vector<128xf32>):
    mosaic_gpu.return %x : vector<128xf32>
  }
  // CHECK: arith.negf {{.*}} {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>], out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>]}
  %n = arith.negf %r : vector<128xf32>
  return %n : vector<128xf32>
}

// -----

// Slicing a tiled value in registers keeps its layout when the offsets are
// on tile boundaries.
// CHECK-LABEL: func @extract_strided_slice
func.func @extract_strided_slice(%ref: memref<128x64xf32>) -> vector<64x64xf32> {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %t = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  // CHECK: vector.extract_strided_slice {{.*}} {in_layouts = [#wgmma], {{.*}}out_layouts = [#wgmma]
  %s = vector.extract_strided_slice %t {offsets = [64, 0], sizes = [64, 64], strides = [1, 1]} : vector<128x64xf32> to vector<64x64xf32>
  return %s : vector<64x64xf32>
}

// -----

// memref views of a buffer share its transforms: transpose swaps the tile,
// collapsing/expanding leading dims and casts keep it.
// CHECK-LABEL: func @memref_views
func.func @memref_views(%acc: vector<64x64xf32>) -> vector<64x64xf32> {
  // CHECK: mosaic_gpu.slice_smem 0 {out_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]}
  %s = mosaic_gpu.slice_smem 0 : memref<2x64x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: memref.collapse_shape {{.*}} out_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]
  %flat = memref.collapse_shape %s [[0, 1], [2]] : memref<2x64x64xbf16, #gpu.address_space<workgroup>> into memref<128x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: memref.expand_shape {{.*}} out_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]
  %back = memref.expand_shape %flat [[0, 1], [2]] output_shape [2, 64, 64] : memref<128x64xbf16, #gpu.address_space<workgroup>> into memref<2x64x64xbf16, #gpu.address_space<workgroup>>
  %b = mosaic_gpu.slice_smem 16384 : memref<64x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: memref.cast {{.*}} out_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]
  %c = memref.cast %b : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: memref.transpose {{.*}} {in_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]], out_transforms = {{\[}}[#mosaic_gpu.tile<[64, 8]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]}
  %t = memref.transpose %c (d0, d1) -> (d1, d0) : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, strided<[1, 64]>, #gpu.address_space<workgroup>>
  %a = memref.subview %back[0, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, strided<[64, 1]>, #gpu.address_space<workgroup>>
  %r = mosaic_gpu.wgmma %acc, %a, %t
      : vector<64x64xf32>, memref<64x64xbf16, strided<[64, 1]>, #gpu.address_space<workgroup>>,
        memref<64x64xbf16, strided<[1, 64]>, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return %r : vector<64x64xf32>
}

// -----

// An op no rule knows that reads a buffer element by element pins it to no
// transforms.
// CHECK-LABEL: func @scalar_access_pins_buffer
func.func @scalar_access_pins_buffer(%i: index) -> f32 {
  // CHECK: mosaic_gpu.slice_smem 0 {out_transforms = {{\[}}[]]}
  %s = mosaic_gpu.slice_smem 0 : memref<128x64xf32, #gpu.address_space<workgroup>>
  // CHECK: memref.load {{.*}} {in_transforms = {{\[}}[]]}
  %x = memref.load %s[%i, %i] : memref<128x64xf32, #gpu.address_space<workgroup>>
  return %x : f32
}

// -----

// vector.extract and vector.insert along leading dims keep the layout.
// CHECK-LABEL: func @extract_insert
func.func @extract_insert(%ref: memref<2x128x64xf32>) -> vector<2x128x64xf32> {
  %v = mosaic_gpu.vector_load %ref : memref<2x128x64xf32> -> vector<2x128x64xf32>
  %t = mosaic_gpu.layout_cast %v : vector<2x128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  // CHECK: vector.extract {{.*}} {in_layouts = [#wgmma], out_layouts = [#wgmma]}
  %e = vector.extract %t[1] : vector<128x64xf32> from vector<2x128x64xf32>
  %d = arith.addf %e, %e : vector<128x64xf32>
  // CHECK: vector.insert {{.*}} {in_layouts = [#wgmma, #wgmma], out_layouts = [#wgmma]}
  %i = vector.insert %d, %t[0] : vector<128x64xf32> into vector<2x128x64xf32>
  return %i : vector<2x128x64xf32>
}

// -----

// Broadcasts take the cheapest layout that reduces back to their operand's:
// fewest registers per thread, then least replication (ties keep the order
// candidates are suggested in, so the choice is deterministic). A row
// vector (one value per row of a WGMMA tile, WGMMA_ROW) broadcast along the
// columns is WGMMA (64 registers per thread for 128x64 f32).
// CHECK-LABEL: func @broadcast_row_vector_along_columns
func.func @broadcast_row_vector_along_columns(%ref: memref<128x64xf32>, %out: memref<128x64xf32>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %z = arith.constant dense<0.0> : vector<128xf32>
  %r = vector.multi_reduction <add>, %v, %z [1] : vector<128x64xf32> to vector<128xf32>
  // CHECK: mosaic_gpu.broadcast_in_dim {{.*}} {in_layouts = [#wgmma_row], out_layouts = [#wgmma]}
  %b = mosaic_gpu.broadcast_in_dim %r, dims [0] : vector<128xf32> -> vector<128x64xf32>
  mosaic_gpu.vector_store %b, %out : vector<128x64xf32>, memref<128x64xf32>
  return
}

// -----

// A column vector (one value per column, WGMMA_COL) broadcast along the rows:
// WGMMA_COL itself suits the 128x64 result (only an untiled leading dim is
// added) but replicates every element over 32 threads (2048 registers per
// thread); WGMMA reduces to WGMMA_COL too, with 64.
// CHECK-LABEL: func @broadcast_column_vector_along_rows
func.func @broadcast_column_vector_along_rows(%ref: memref<128x64xf32>, %out: memref<128x64xf32>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %z = arith.constant dense<0.0> : vector<64xf32>
  %c = vector.multi_reduction <add>, %v, %z [0] : vector<128x64xf32> to vector<64xf32>
  // CHECK: mosaic_gpu.broadcast_in_dim {{.*}} {in_layouts = [#wgmma_col], out_layouts = [#wgmma]}
  %b = mosaic_gpu.broadcast_in_dim %c, dims [1] : vector<64xf32> -> vector<128x64xf32>
  mosaic_gpu.vector_store %b, %out : vector<128x64xf32>, memref<128x64xf32>
  return
}

// -----

// A row vector broadcast along the rows (the 128 values become each row of a
// 64x128 result): no layout of the domain that reduces to WGMMA_ROW over dim
// 0 is unreplicated, so WGMMA_ROW stays (4x, 256 registers per thread), not
// anything costlier.
// CHECK-LABEL: func @broadcast_row_vector_along_rows
func.func @broadcast_row_vector_along_rows(%ref: memref<128x64xf32>, %out: memref<64x128xf32>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %z = arith.constant dense<0.0> : vector<128xf32>
  %r = vector.multi_reduction <add>, %v, %z [1] : vector<128x64xf32> to vector<128xf32>
  // CHECK: mosaic_gpu.broadcast_in_dim {{.*}} {in_layouts = [#wgmma_row], out_layouts = [#wgmma_row]}
  %b = mosaic_gpu.broadcast_in_dim %r, dims [1] : vector<128xf32> -> vector<64x128xf32>
  mosaic_gpu.vector_store %b, %out : vector<64x128xf32>, memref<64x128xf32>
  return
}

// -----

// A column vector broadcast along the columns (the 64 values become each
// column of a 64x128 result): nothing reduces to WGMMA_COL over dim 1, so the
// search loads the matrix as WGMMA_ROW (the reduction over its untiled dim 0
// keeps it) and the result is WGMMA.
// CHECK-LABEL: func @broadcast_column_vector_along_columns
func.func @broadcast_column_vector_along_columns(%ref: memref<128x64xf32>, %out: memref<64x128xf32>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %z = arith.constant dense<0.0> : vector<64xf32>
  %c = vector.multi_reduction <add>, %v, %z [0] : vector<128x64xf32> to vector<64xf32>
  // CHECK: mosaic_gpu.broadcast_in_dim {{.*}} {in_layouts = [#wgmma_row], out_layouts = [#wgmma]}
  %b = mosaic_gpu.broadcast_in_dim %c, dims [0] : vector<64xf32> -> vector<64x128xf32>
  mosaic_gpu.vector_store %b, %out : vector<64x128xf32>, memref<64x128xf32>
  return
}

// -----

// A loaded vector broadcast along the rows: Strided(1) (one register per
// thread) rather than the WGMMA_COL that the broadcast's WGMMA preference
// suggests (32 registers), and the 64x128 result keeps it (64 registers)
// instead of WGMMA_COL (2048).
// CHECK-LABEL: func @broadcast_loaded_vector_along_rows
func.func @broadcast_loaded_vector_along_rows(%ref: memref<128xf32>, %out: memref<64x128xf32>) {
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>]}
  %v = mosaic_gpu.vector_load %ref : memref<128xf32> -> vector<128xf32>
  // CHECK: mosaic_gpu.broadcast_in_dim {{.*}} {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128], 1>], out_layouts = [#mosaic_gpu.WGStridedFragLayout<[64, 128], 1>]}
  %b = mosaic_gpu.broadcast_in_dim %v, dims [1] : vector<128xf32> -> vector<64x128xf32>
  mosaic_gpu.vector_store %b, %out : vector<64x128xf32>, memref<64x128xf32>
  return
}

// -----

// A loaded vector broadcast along the columns: a strided value only
// broadcasts along leading dims, so the vector is WGMMA_ROW (4 registers per
// thread) and the result WGMMA.
// CHECK-LABEL: func @broadcast_loaded_vector_along_columns
func.func @broadcast_loaded_vector_along_columns(%ref: memref<128xf32>, %out: memref<128x64xf32>) {
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#wgmma_row]}
  %v = mosaic_gpu.vector_load %ref : memref<128xf32> -> vector<128xf32>
  // CHECK: mosaic_gpu.broadcast_in_dim {{.*}} {in_layouts = [#wgmma_row], out_layouts = [#wgmma]}
  %b = mosaic_gpu.broadcast_in_dim %v, dims [0] : vector<128xf32> -> vector<128x64xf32>
  mosaic_gpu.vector_store %b, %out : vector<128x64xf32>, memref<128x64xf32>
  return
}

// -----

// Undefined vectors are Splat, which converts to whatever each user needs:
// one poison feeds both a strided sum and a wgmma accumulator (WGMMA).
// (The vector.broadcast first loads the vector dialect, which loads `ub`.)
// CHECK-LABEL: func @undefined_values
func.func @undefined_values(%ref: memref<128x64xf32>, %out: memref<128x64xf32>, %x: f32,
    %a: memref<128x64xbf16, #gpu.address_space<workgroup>>,
    %b: memref<64x64xbf16, #gpu.address_space<workgroup>>) {
  %s = vector.broadcast %x : f32 to vector<128x64xf32>
  // CHECK: ub.poison {out_layouts = [#mosaic_gpu.WGSplatFragLayout<[128, 64]>]}
  %p = ub.poison : vector<128x64xf32>
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  // CHECK: arith.addf {{.*}} {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>, #mosaic_gpu.WGStridedFragLayout<[128, 64], 4>], out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>]}
  %sum = arith.addf %v, %p : vector<128x64xf32>
  mosaic_gpu.vector_store %sum, %out : vector<128x64xf32>, memref<128x64xf32>
  // CHECK: mosaic_gpu.wgmma {{.*}} {in_layouts = [#wgmma], {{.*}}out_layouts = [#wgmma]}
  %r = mosaic_gpu.wgmma %p, %a, %b : vector<128x64xf32>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<128x64xf32>
  %t = arith.addf %r, %s : vector<128x64xf32>
  mosaic_gpu.vector_store %t, %out : vector<128x64xf32>, memref<128x64xf32>
  return
}

// -----

// llvm.mlir.undef and llvm.mlir.poison (1-D vectors) are Splat too, also as
// a loop's initial value.
// CHECK-LABEL: func @llvm_undefined_values
func.func @llvm_undefined_values(%ref: memref<256xf32>, %out: memref<256xf32>) {
  // CHECK: llvm.mlir.undef {out_layouts = [#mosaic_gpu.WGSplatFragLayout<[256]>]}
  %u = llvm.mlir.undef : vector<256xf32>
  // CHECK: llvm.mlir.poison {out_layouts = [#mosaic_gpu.WGSplatFragLayout<[256]>]}
  %p = llvm.mlir.poison : vector<256xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // CHECK: scf.for
  %acc = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %u) -> (vector<256xf32>) {
    %v = mosaic_gpu.vector_load %ref : memref<256xf32> -> vector<256xf32>
    %n = arith.addf %a, %v : vector<256xf32>
    scf.yield %n : vector<256xf32>
  // CHECK: } {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[256], 2>], out_layouts = [#mosaic_gpu.WGStridedFragLayout<[256], 2>]}
  }
  // CHECK: arith.mulf {{.*}} {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[256], 2>, #mosaic_gpu.WGStridedFragLayout<[256], 2>]
  %m = arith.mulf %acc, %p : vector<256xf32>
  mosaic_gpu.vector_store %m, %out : vector<256xf32>, memref<256xf32>
  return
}

// -----

// The default strided layout moves 128 bits per chunk (the widest access a
// thread has; the reference uses 64), halving the vector size while 128
// chunks do not divide the vector (docs/RationaleLayoutInference.md).
// CHECK-LABEL: func @default_strided_vector_size
func.func @default_strided_vector_size(%f32: memref<128x64xf32>, %bf16: memref<128x64xbf16>,
    %i8: memref<128x64xi8>, %small: memref<384xf32>) {
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 4>]}
  %a = mosaic_gpu.vector_load %f32 : memref<128x64xf32> -> vector<128x64xf32>
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 8>]}
  %b = mosaic_gpu.vector_load %bf16 : memref<128x64xbf16> -> vector<128x64xbf16>
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 16>]}
  %c = mosaic_gpu.vector_load %i8 : memref<128x64xi8> -> vector<128x64xi8>
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#mosaic_gpu.WGStridedFragLayout<[384], 1>]}
  %d = mosaic_gpu.vector_load %small : memref<384xf32> -> vector<384xf32>
  return
}

// -----

// The online softmax of attention: the running row max and row sum start
// as Splat constants, and their loop arguments take the WGMMA row layout of
// the reductions of the scores, which pass through an scf.if (the causal
// mask) first. The search first gives the loop arguments their inits'
// Splat and only learns at the reductions that this fails; it jumps back
// to them directly rather than retrying every value decided in between.
// CHECK-LABEL: func @online_softmax_through_if
func.func @online_softmax_through_if(%q: memref<64x64xbf16, #gpu.address_space<workgroup>>,
                                     %k: memref<64x128xbf16, #gpu.address_space<workgroup>>,
                                     %n: index, %diagonal: i1, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant dense<0.0> : vector<64x128xf32>
  %ninf = arith.constant dense<0xFF800000> : vector<64xf32>
  %zeros = arith.constant dense<0.0> : vector<64xf32>
  // CHECK: scf.for
  // CHECK: } {in_layouts = [#wgmma_row, #wgmma_row], out_layouts = [#wgmma_row, #wgmma_row]}
  %m, %l = scf.for %i = %c0 to %n step %c1 iter_args(%m_in = %ninf, %l_in = %zeros)
      -> (vector<64xf32>, vector<64xf32>) {
    %s = mosaic_gpu.wgmma %zero, %q, %k : vector<64x128xf32>, memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x128xbf16, #gpu.address_space<workgroup>> -> vector<64x128xf32>
    %masked = scf.if %diagonal -> vector<64x128xf32> {
      %cols = mosaic_gpu.broadcasted_iota 1 : vector<64x128xi32>
      %rows = mosaic_gpu.broadcasted_iota 0 : vector<64x128xi32>
      %keep = arith.cmpi sle, %cols, %rows : vector<64x128xi32>
      %all = arith.constant dense<0xFF800000> : vector<64x128xf32>
      %kept = arith.select %keep, %s, %all : vector<64x128xi1>, vector<64x128xf32>
      scf.yield %kept : vector<64x128xf32>
    } else {
      scf.yield %s : vector<64x128xf32>
    }
    %row_max = vector.multi_reduction <maximumf>, %masked, %ninf [1] : vector<64x128xf32> to vector<64xf32>
    %m_new = arith.maximumf %m_in, %row_max : vector<64xf32>
    %m_b = mosaic_gpu.broadcast_in_dim %m_new, dims [0] : vector<64xf32> -> vector<64x128xf32>
    %shifted = arith.subf %masked, %m_b : vector<64x128xf32>
    %p = math.exp2 %shifted : vector<64x128xf32>
    %row_sum = vector.multi_reduction <add>, %p, %zeros [1] : vector<64x128xf32> to vector<64xf32>
    %m_diff = arith.subf %m_in, %m_new : vector<64xf32>
    %alpha = math.exp2 %m_diff : vector<64xf32>
    %l_scaled = arith.mulf %l_in, %alpha : vector<64xf32>
    %l_new = arith.addf %l_scaled, %row_sum : vector<64xf32>
    scf.yield %m_new, %l_new : vector<64xf32>, vector<64xf32>
  }
  %lse = arith.addf %m, %l : vector<64xf32>
  mosaic_gpu.vector_store %lse, %out : vector<64xf32>, memref<64xf32>
  return
}

// -----

// Row tiles WGMMA cannot hold (fewer than 64 rows) take the rows layout: a
// row per warp (here 32 lanes x 4 f32 per step of 128 columns), its
// reduction replicated over the row's lanes, and the broadcast back.
// CHECK-LABEL: func @rows_softmax_16x512
func.func @rows_softmax_16x512(%ref: memref<16x512xf32>, %out: memref<16x512xf32>) {
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#mosaic_gpu.TiledLayout<{{\[}}[4, 128], [4]], warp_dims = [-3], lane_dims = [-2], vector_dim = -1>]}
  %v = mosaic_gpu.vector_load %ref : memref<16x512xf32> -> vector<16x512xf32>
  %ninf = arith.constant dense<0xFF800000> : vector<16xf32>
  // CHECK: vector.multi_reduction {{.*}} out_layouts = [#mosaic_gpu.TiledLayout<{{\[}}[4], [1]], warp_dims = [-2], lane_dims = [#mosaic_gpu.Replicated<times = 32>], vector_dim = -1>]
  %max = vector.multi_reduction <maximumf>, %v, %ninf [1] : vector<16x512xf32> to vector<16xf32>
  // CHECK: mosaic_gpu.broadcast_in_dim {{.*}} out_layouts = [#mosaic_gpu.TiledLayout<{{\[}}[4, 128], [4]], warp_dims = [-3], lane_dims = [-2], vector_dim = -1>]
  %b = mosaic_gpu.broadcast_in_dim %max, dims [0] : vector<16xf32> -> vector<16x512xf32>
  %d = arith.subf %v, %b : vector<16x512xf32>
  mosaic_gpu.vector_store %d, %out : vector<16x512xf32>, memref<16x512xf32>
  return
}

// -----

// Narrow rows share a warp: 64 f32 columns are 16 chunks of 4, so 16 lanes
// per row and two rows per warp.
// CHECK-LABEL: func @rows_sum_8x64
func.func @rows_sum_8x64(%ref: memref<8x64xf32>, %out: memref<8xf32>) {
  // CHECK: mosaic_gpu.vector_load {{.*}} {out_layouts = [#mosaic_gpu.TiledLayout<{{\[}}[8, 64], [2, 64], [4]], warp_dims = [-5], lane_dims = [-3, -2], vector_dim = -1>]}
  %v = mosaic_gpu.vector_load %ref : memref<8x64xf32> -> vector<8x64xf32>
  %zero = arith.constant dense<0.0> : vector<8xf32>
  %s = vector.multi_reduction <add>, %v, %zero [1] : vector<8x64xf32> to vector<8xf32>
  mosaic_gpu.vector_store %s, %out : vector<8xf32>, memref<8xf32>
  return
}
