// RUN: mosaic-opt %s -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms | FileCheck %s

// Layout inference and apply-transforms treat a remote view like the
// argument it views: vector transfers on it get layouts, and the TMA load
// from it reads the tiled view of the remote_ref (which the lowering traces
// back to the peer tensor map of the symmetric argument).
// CHECK-LABEL: gpu.func @remote
// CHECK: %[[PEER:.*]] = mosaic_gpu.remote_ref %arg0, %arg2 : memref<128x64xbf16>
// CHECK: mosaic_gpu.vector_store %{{.*}}, %[[PEER]] {in_layouts = [#mosaic_gpu.WGStridedFragLayout<[128, 64], 8>]}
// CHECK: %[[EXPANDED:.*]] = memref.expand_shape %[[PEER]] {{\[}}[0, 1], [2, 3]] output_shape [16, 8, 1, 64]
// CHECK: %[[TILED:.*]] = memref.transpose %[[EXPANDED]]
// CHECK: mosaic_gpu.async_load %[[TILED]][{{.*}}] to %{{.*}}, %{{.*}} slice_lengths [16, 1, 8, 64] {in_transforms = {{\[}}[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]], transforms_applied}
!smem_tile = memref<128x64xbf16, #gpu.address_space<workgroup>>
!barriers = memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
!barrier = memref<!mosaic_gpu.barrier, strided<[], offset: 0>, #gpu.address_space<workgroup>>
gpu.module @kernels {
  gpu.func @remote(%x: memref<128x64xbf16> {mosaic_gpu.symmetric},
                   %y: memref<128x64xbf16>, %d: i32) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    %c0 = arith.constant 0 : i32
    %peer = mosaic_gpu.remote_ref %x, %d : memref<128x64xbf16>
    %v = mosaic_gpu.vector_load %y : memref<128x64xbf16> -> vector<128x64xbf16>
    mosaic_gpu.vector_store %v, %peer : vector<128x64xbf16>, memref<128x64xbf16>
    %tile = mosaic_gpu.slice_smem 0 : !smem_tile
    %tile_t = mosaic_gpu.with_transforms %tile : !smem_tile
        with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
    %bars = mosaic_gpu.slice_smem 16384 : !barriers
    mosaic_gpu.initialize_barrier %bars, arrival_count = 1, num_barriers = 1 : !barriers
    %bar = memref.subview %bars[0] [1] [1] : !barriers to !barrier
    mosaic_gpu.arrive_expect_tx %bar, 16384 : !barrier
    mosaic_gpu.async_load %peer[%c0, %c0] to %tile_t, %bar slice_lengths [128, 64]
        : memref<128x64xbf16>, !smem_tile, !barrier
    gpu.return
  }
}
