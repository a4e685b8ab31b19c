// A round trip whose store is the GEMM epilogue's: each block copies a
// 128x128 bf16 tile GMEM -> SMEM (TMA, untiled) -> registers in the WGMMA
// layout (doubled) -> SMEM tiled (8, 64) with the 128-byte swizzle, stored
// with stmatrix -> GMEM (TMA). The load reads the plain buffer with one
// access per register pair, so only the store follows the stmatrix
// fragments and the swizzle; stmatrix-store.test rewrites the destination's
// transforms to the 64- and 32-byte swizzles.
!tile = memref<128x128xbf16, #gpu.address_space<workgroup>>
!barriers = memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
!barrier = memref<!mosaic_gpu.barrier, strided<[], offset: 0>, #gpu.address_space<workgroup>>
#wgmma = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>

gpu.module @kernels {
  gpu.func @tma_roundtrip(%in: memref<256x128xbf16>, %out: memref<256x128xbf16>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 2, 1, 1>} {
    %block = gpu.block_id x
    %block_i32 = arith.index_cast %block : index to i32
    %c128 = arith.constant 128 : i32
    %row = arith.muli %block_i32, %c128 : i32
    %c0 = arith.constant 0 : i32
    %false = arith.constant false

    %src = mosaic_gpu.slice_smem 0 : !tile
    %dst = mosaic_gpu.slice_smem 32768 : !tile
    %bars = mosaic_gpu.slice_smem 65536 : !barriers
    %src_t = mosaic_gpu.with_transforms %src : !tile with []
    %dst_t = mosaic_gpu.with_transforms %dst : !tile
        with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
    mosaic_gpu.initialize_barrier %bars, arrival_count = 1, num_barriers = 1 : !barriers
    %bar = memref.subview %bars[0] [1] [1] : !barriers to !barrier

    mosaic_gpu.arrive_expect_tx %bar, 32768 : !barrier
    mosaic_gpu.async_load %in[%row, %c0] to %src_t, %bar slice_lengths [128, 128]
        : memref<256x128xbf16>, !tile, !barrier
    mosaic_gpu.wait %bar, %false : !barrier

    %loaded = mosaic_gpu.vector_load %src_t : !tile -> vector<128x128xbf16>
    %v = mosaic_gpu.layout_cast %loaded : vector<128x128xbf16> to #wgmma
    %doubled = arith.addf %v, %v : vector<128x128xbf16>
    mosaic_gpu.vector_store %doubled, %dst_t : vector<128x128xbf16>, !tile
    mosaic_gpu.async_store %dst_t to %out[%row, %c0] slice_lengths [128, 128]
        : !tile, memref<256x128xbf16>
    gpu.return
  }
}
