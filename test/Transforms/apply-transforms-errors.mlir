// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-apply-transforms -verify-diagnostics

func.func @not_inferred() {
  // expected-error @+1 {{has no `out_transforms`; run mosaic-gpu-infer-layouts first}}
  %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @tile_does_not_fit() {
  // expected-error @+1 {{cannot be stored with tile(8, 64) swizzle 128: swizzle 128 needs rows of 128 bytes along the minor dim, but they are 64 bytes}}
  %s = mosaic_gpu.slice_smem 0 {out_transforms = [[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]} : memref<128x32xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @dynamic_global(%g: memref<?x64xbf16>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: i32) {
  %s = mosaic_gpu.slice_smem 0 {out_transforms = [[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{needs a static global shape to tile it by (8, 64), but it is 'memref<?x64xbf16>'}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %bar slice_lengths [128, 64] {in_transforms = [[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]} : memref<?x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @partial_tile_subview() {
  %s = mosaic_gpu.slice_smem 0 {out_transforms = [[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{cannot take a slice of size 4 along dim 0 of a buffer tiled by (8, 64): slices must span whole tiles}}
  %v = memref.subview %s[0, 0] [4, 64] [1, 1] : memref<128x64xbf16, #gpu.address_space<workgroup>> to memref<4x64xbf16, strided<[64, 1]>, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @unknown_consumer(%i: index) -> bf16 {
  %s = mosaic_gpu.slice_smem 0 {out_transforms = [[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{uses a shared-memory buffer whose tiling mosaic-gpu-apply-transforms made explicit, and the pass does not know how to rewrite this op for it}}
  %x = memref.load %s[%i, %i] : memref<128x64xbf16, #gpu.address_space<workgroup>>
  return %x : bf16
}

// -----

func.func @malformed_out_transforms() {
  // expected-error @+1 {{`out_transforms` entry 0 is not a list of tile/swizzle transforms}}
  %s = mosaic_gpu.slice_smem 0 {out_transforms = [1]} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @in_transforms_count(%out: memref<128x64xbf16>) {
  %s = mosaic_gpu.slice_smem 0 {out_transforms = [[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{`in_transforms` has 0 entries, but the op has 1 shared-memory buffer operands}}
  %v = mosaic_gpu.vector_load %s {in_transforms = []} : memref<128x64xbf16, #gpu.address_space<workgroup>> -> vector<128x64xbf16>
  return
}

// -----

func.func @consumer_not_inferred(%out: memref<128x64xbf16>) {
  %s = mosaic_gpu.slice_smem 0 {out_transforms = [[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{has no `in_transforms`; run mosaic-gpu-infer-layouts first}}
  %v = mosaic_gpu.vector_load %s : memref<128x64xbf16, #gpu.address_space<workgroup>> -> vector<128x64xbf16>
  return
}
