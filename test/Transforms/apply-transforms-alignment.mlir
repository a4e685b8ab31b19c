// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-apply-transforms -verify-diagnostics

// Once layout inference has chosen a slice's swizzle, the slice must start
// on the swizzle's repeat (8 rows of its width: 256, 512 or 1024 bytes),
// since TMA and wgmma compute the swizzle from the address.

func.func @swizzle_128_at_512() {
  // expected-error @+1 {{'mosaic_gpu.slice_smem' op carves a buffer with a 128-byte swizzle at offset 512; it must start at a multiple of 1024 bytes (the swizzle repeats every 8 rows of 128 bytes, and TMA and wgmma compute it from the address)}}
  %s = mosaic_gpu.slice_smem 512 {out_transforms = [[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @swizzle_64_at_256() {
  // expected-error @+1 {{carves a buffer with a 64-byte swizzle at offset 256; it must start at a multiple of 512 bytes}}
  %s = mosaic_gpu.slice_smem 256 {out_transforms = [[#mosaic_gpu.tile<[8, 32]>, #mosaic_gpu.swizzle<k64ByteSwizzle>]]} : memref<128x32xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

// A swizzle without a tile is checked too.
func.func @untiled_swizzle_32_at_128() {
  // expected-error @+1 {{carves a buffer with a 32-byte swizzle at offset 128; it must start at a multiple of 256 bytes}}
  %s = mosaic_gpu.slice_smem 128 {out_transforms = [[#mosaic_gpu.swizzle<k32ByteSwizzle>]]} : memref<128x16xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

// Starts on the repeat: 1024 for 128 bytes, 512 for 64, 256 for 32; an
// unswizzled buffer needs only its element alignment here.
func.func @aligned() {
  %a = mosaic_gpu.slice_smem 1024 {out_transforms = [[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %b = mosaic_gpu.slice_smem 17920 {out_transforms = [[#mosaic_gpu.tile<[8, 32]>, #mosaic_gpu.swizzle<k64ByteSwizzle>]]} : memref<128x32xbf16, #gpu.address_space<workgroup>>
  %c = mosaic_gpu.slice_smem 26368 {out_transforms = [[#mosaic_gpu.tile<[8, 16]>, #mosaic_gpu.swizzle<k32ByteSwizzle>]]} : memref<128x16xbf16, #gpu.address_space<workgroup>>
  %d = mosaic_gpu.slice_smem 30724 {out_transforms = [[]]} : memref<16xf32, #gpu.address_space<workgroup>>
  return
}
