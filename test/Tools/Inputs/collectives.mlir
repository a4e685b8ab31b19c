// A ring step on D devices: each device sends its `x` to the next device's
// `y` by vector stores, and by TMA (a load of the next device's `x`, stored
// to the local `out` and to the next device's `y`), then signals the next
// device's semaphore and waits for its own.
!smem_tile = memref<128x64xbf16, #gpu.address_space<workgroup>>
!barriers = memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
!barrier = memref<!mosaic_gpu.barrier, strided<[], offset: 0>, #gpu.address_space<workgroup>>

gpu.module @kernels {
  gpu.func @ring(%x: memref<128x64xbf16> {mosaic_gpu.symmetric},
                 %y: memref<128x64xbf16> {mosaic_gpu.symmetric},
                 %out: memref<128x64xbf16>,
                 %sems: memref<4xi32> {mosaic_gpu.symmetric}) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %false = arith.constant false
    %id = mosaic_gpu.device_id : i32
    %n = mosaic_gpu.device_count : i32
    %plus = arith.addi %id, %c1 : i32
    %next = arith.remui %plus, %n : i32

    %v = mosaic_gpu.vector_load %x : memref<128x64xbf16> -> vector<128x64xbf16>
    %peer_y = mosaic_gpu.remote_ref %y, %next : memref<128x64xbf16>
    mosaic_gpu.vector_store %v, %peer_y : vector<128x64xbf16>, memref<128x64xbf16>

    %tile = mosaic_gpu.slice_smem 0 : !smem_tile
    %tile_t = mosaic_gpu.with_transforms %tile : !smem_tile
        with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
    %bars = mosaic_gpu.slice_smem 16384 : !barriers
    mosaic_gpu.initialize_barrier %bars, arrival_count = 1, num_barriers = 1 : !barriers
    %bar = memref.subview %bars[0] [1] [1] : !barriers to !barrier
    %peer_x = mosaic_gpu.remote_ref %x, %next : memref<128x64xbf16>
    mosaic_gpu.arrive_expect_tx %bar, 16384 : !barrier
    mosaic_gpu.async_load %peer_x[%c0, %c0] to %tile_t, %bar slice_lengths [128, 64]
        : memref<128x64xbf16>, !smem_tile, !barrier
    mosaic_gpu.wait %bar, %false : !barrier
    mosaic_gpu.async_store %tile_t to %out[%c0, %c0] slice_lengths [128, 64]
        : !smem_tile, memref<128x64xbf16>
    mosaic_gpu.async_store %tile_t to %peer_y[%c0, %c0] slice_lengths [128, 64]
        : !smem_tile, memref<128x64xbf16>

    mosaic_gpu.semaphore_signal %sems[%c0], %c1 on %next : memref<4xi32>
    mosaic_gpu.semaphore_wait %sems[%c0], %c1 : memref<4xi32>
    gpu.return
  }
}
