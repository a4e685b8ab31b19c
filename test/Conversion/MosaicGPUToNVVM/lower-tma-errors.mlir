// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms -mosaic-gpu-lower -verify-diagnostics

// A collective load carves its destination into one part per block of the
// group, each loaded (and multicast) at its own offset: TMA needs each part
// aligned like any shared-memory operand. Two rows of 16 f32 shared by two
// blocks are parts of 64 bytes.
gpu.module @kernels {
  gpu.func @small_multicast_parts(%in: memref<64x16xf32>) kernel
      attributes {mosaic_gpu.cluster = array<i32: 2, 1, 1>} {
    %c0 = arith.constant 0 : i32
    %s = mosaic_gpu.slice_smem 0 : memref<2x16xf32, #gpu.address_space<workgroup>>
    %bar = mosaic_gpu.slice_smem 1024 : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    %t = mosaic_gpu.with_transforms %s : memref<2x16xf32, #gpu.address_space<workgroup>> with []
    // expected-error @+1 {{shares its box among 2 blocks, each loading 64 bytes at its own offset in `destination`; TMA needs each part 128-byte aligned}}
    mosaic_gpu.async_load %in[%c0, %c0] to %t, %bar slice_lengths [2, 16] {collective = [#mosaic_gpu.dim<x>]}
        : memref<64x16xf32>, memref<2x16xf32, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    gpu.return
  }
}
