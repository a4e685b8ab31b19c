// RUN: mosaic-opt %s -split-input-file -verify-diagnostics

// TMA reads and writes shared memory at 128-byte aligned addresses, and a
// swizzled buffer from the start of the swizzle's repeat (8 rows of the
// swizzle: 256, 512 or 1024 bytes). The verifier follows a TMA op's
// shared-memory operand back to its slice_smem through with_transforms and
// memref views and checks the offset; a dynamic subview offset must step by
// multiples of the alignment. Buffers whose origin it cannot see (function
// arguments) are not checked.

func.func @load_at_64(%g: memref<256x32xf32>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: i32) {
  // expected-note @+1 {{`destination` is carved here, at offset 64}}
  %s = mosaic_gpu.slice_smem 64 : memref<64x32xf32, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'mosaic_gpu.async_load' op `destination` starts at byte 64 of shared memory; TMA needs shared-memory operands 128-byte aligned}}
  mosaic_gpu.async_load %g[%i, %i] to %s, %bar slice_lengths [64, 32]
      : memref<256x32xf32>, memref<64x32xf32, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

// A static subview moves the start: row 1 of 40 f32 is 160 bytes in.
func.func @store_from_subview(%g: memref<256x40xf32>, %i: i32) {
  // expected-note @+1 {{`source` is carved here, at offset 1024}}
  %s = mosaic_gpu.slice_smem 1024 : memref<4x40xf32, #gpu.address_space<workgroup>>
  %row = memref.subview %s[1, 0] [1, 40] [1, 1]
      : memref<4x40xf32, #gpu.address_space<workgroup>> to memref<40xf32, strided<[1], offset: 40>, #gpu.address_space<workgroup>>
  %c = memref.cast %row : memref<40xf32, strided<[1], offset: 40>, #gpu.address_space<workgroup>> to memref<40xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'mosaic_gpu.async_store' op `source` starts at byte 1184 of shared memory; TMA needs shared-memory operands 128-byte aligned}}
  mosaic_gpu.async_store %c to %g[%i, %i] slice_lengths [-1, 40]
      : memref<40xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>, memref<256x40xf32>
  return
}

// -----

// A dynamic row of the same buffer: rows are 160 bytes apart, so only
// every fourth row would be aligned.
func.func @dynamic_row(%g: memref<256x40xf32>, %i: i32, %r: index) {
  // expected-note @+1 {{`source` is carved here, at offset 0}}
  %s = mosaic_gpu.slice_smem 0 : memref<4x40xf32, #gpu.address_space<workgroup>>
  %row = memref.subview %s[%r, 0] [1, 40] [1, 1]
      : memref<4x40xf32, #gpu.address_space<workgroup>> to memref<40xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'mosaic_gpu.async_store' op `source` starts at byte 0 of shared memory plus a dynamic multiple of 160 bytes (a subview's dynamic offset); TMA needs shared-memory operands 128-byte aligned, so the step must be a multiple of 128}}
  mosaic_gpu.async_store %row to %g[%i, %i] slice_lengths [-1, 40]
      : memref<40xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>, memref<256x40xf32>
  return
}

// -----

// A 128-byte swizzle fixed by with_transforms needs a 1024-byte boundary.
func.func @swizzle_128_at_512(%g: memref<4096x64xbf16>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>, %i: i32) {
  // expected-note @+1 {{`destination` is carved here, at offset 512}}
  %s = mosaic_gpu.slice_smem 512 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %t = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>>
      with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  // expected-error @+1 {{'mosaic_gpu.async_load' op `destination` starts at byte 512 of shared memory; TMA needs shared-memory operands 1024-byte aligned with a 128-byte swizzle (its pattern repeats every 1024 bytes)}}
  mosaic_gpu.async_load %g[%i, %i] to %t, %bar slice_lengths [128, 64]
      : memref<4096x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

// The swizzle layout inference recorded in `in_transforms`: 64 bytes,
// which repeats every 512.
func.func @recorded_swizzle_64(%g: memref<4096x32xbf16>, %i: i32) {
  // expected-note @+1 {{`source` is carved here, at offset 256}}
  %s = mosaic_gpu.slice_smem 256 : memref<128x32xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{'mosaic_gpu.async_store' op `source` starts at byte 256 of shared memory; TMA needs shared-memory operands 512-byte aligned with a 64-byte swizzle (its pattern repeats every 512 bytes)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [128, 32]
      {in_transforms = [[#mosaic_gpu.tile<[8, 32]>, #mosaic_gpu.swizzle<k64ByteSwizzle>]]}
      : memref<128x32xbf16, #gpu.address_space<workgroup>>, memref<4096x32xbf16>
  return
}

// -----

// Aligned operands: a plain buffer at 128; a 128-byte swizzled one at
// 2048; a 32-byte swizzled one at 256; a 128x64 bf16 stage of a ring (16384
// bytes apart) at a dynamic index; a squeezed 128-byte row; and a function
// argument, whose address the verifier cannot see.
func.func @aligned(%g: memref<4096x64xbf16>, %g32: memref<256x32xf32>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>,
                   %i: i32, %r: index,
                   %arg: memref<128x64xbf16, #gpu.address_space<workgroup>>) {
  %plain = mosaic_gpu.slice_smem 128 : memref<64x32xf32, #gpu.address_space<workgroup>>
  mosaic_gpu.async_load %g32[%i, %i] to %plain, %bar slice_lengths [64, 32]
      : memref<256x32xf32>, memref<64x32xf32, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  %s = mosaic_gpu.slice_smem 2048 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %t = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>>
      with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  mosaic_gpu.async_load %g[%i, %i] to %t, %bar slice_lengths [128, 64]
      : memref<4096x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  %n = mosaic_gpu.slice_smem 256 : memref<128x16xbf16, #gpu.address_space<workgroup>>
  %nt = mosaic_gpu.with_transforms %n : memref<128x16xbf16, #gpu.address_space<workgroup>>
      with [#mosaic_gpu.tile<[8, 16]>, #mosaic_gpu.swizzle<k32ByteSwizzle>]
  mosaic_gpu.async_store %nt to %g[%i, %i] slice_lengths [128, 16]
      : memref<128x16xbf16, #gpu.address_space<workgroup>>, memref<4096x64xbf16>
  %ring = mosaic_gpu.slice_smem 32768 : memref<2x128x64xbf16, #gpu.address_space<workgroup>>
  %stage = memref.subview %ring[%r, 0, 0] [1, 128, 64] [1, 1, 1]
      : memref<2x128x64xbf16, #gpu.address_space<workgroup>> to memref<128x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
  mosaic_gpu.async_load %g[%i, %i] to %stage, %bar slice_lengths [128, 64]
      {in_transforms = [[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]}
      : memref<4096x64xbf16>, memref<128x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  %row = memref.subview %ring[1, 3, 0] [1, 1, 64] [1, 1, 1]
      : memref<2x128x64xbf16, #gpu.address_space<workgroup>> to memref<64xbf16, strided<[1], offset: 8384>, #gpu.address_space<workgroup>>
  mosaic_gpu.async_store %row to %g[%i, %i] slice_lengths [-1, 64]
      : memref<64xbf16, strided<[1], offset: 8384>, #gpu.address_space<workgroup>>, memref<4096x64xbf16>
  mosaic_gpu.async_store %arg to %g[%i, %i] slice_lengths [128, 64]
      : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<4096x64xbf16>
  return
}
