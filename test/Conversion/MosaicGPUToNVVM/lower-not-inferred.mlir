// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-lower -verify-diagnostics

// Every annotation the lowering needs is an error when missing, naming the
// attribute and the entry (Annotations.h): layouts and transforms alike.

func.func @not_inferred(%ref: memref<128x64xf32>) {
  // expected-error @+1 {{has no `out_layouts` entry 0; run mosaic-gpu-infer-layouts first}}
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  return
}

// -----

func.func @no_transforms(%ref: memref<128x64xf32, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{has no `in_transforms` entry 0; run mosaic-gpu-infer-layouts first}}
  %v = mosaic_gpu.vector_load %ref {out_layouts = [#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>]} : memref<128x64xf32, #gpu.address_space<workgroup>> -> vector<128x64xf32>
  return
}

// -----

func.func @malformed_transforms(%ref: memref<128x64xf32, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{`in_transforms` entry 0 is not a list of tile/swizzle transforms}}
  %v = mosaic_gpu.vector_load %ref {in_transforms = [[1]], out_layouts = [#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>]} : memref<128x64xf32, #gpu.address_space<workgroup>> -> vector<128x64xf32>
  return
}

// -----

func.func @malformed_layout(%ref: memref<128x64xf32>) {
  // expected-error @+1 {{`out_layouts` entry 0 is not a register layout}}
  %v = mosaic_gpu.vector_load %ref {out_layouts = [1]} : memref<128x64xf32> -> vector<128x64xf32>
  return
}

// -----

gpu.module @kernels {
  gpu.func @slice_without_transforms() kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    // expected-error @+1 {{has no `out_transforms` entry 0; run mosaic-gpu-infer-layouts first}}
    %s = mosaic_gpu.slice_smem 0 : memref<128x64xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// Annotated by hand past what inference allows: a strided transfer of a
// swizzled buffer would ignore the swizzle.
func.func @strided_swizzled(%ref: memref<64x64xf16, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{moves a strided vector to or from a shared-memory buffer with transforms swizzle 128; only tiled layouts follow a tiling or swizzle}}
  %v = mosaic_gpu.vector_load %ref {in_transforms = [[#mosaic_gpu.swizzle<k128ByteSwizzle>]], out_layouts = [#mosaic_gpu.WGStridedFragLayout<[64, 64], 8>]} : memref<64x64xf16, #gpu.address_space<workgroup>> -> vector<64x64xf16>
  return
}
