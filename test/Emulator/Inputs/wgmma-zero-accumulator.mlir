// One 128x128x64 bf16 wgmma from a known-zero f32 accumulator, its operands
// loaded by TMA, the result stored through shared memory. LLVM used to
// materialize the zero registers right before the instruction, after the
// wgmma.fence (undefined by the PTX ISA); the lowering now reads no
// accumulator registers at all and sets scale-d = 0 on each block's first
// instruction.
!a_stage = memref<128x64xbf16, #gpu.address_space<workgroup>>
!b_stage = memref<64x128xbf16, #gpu.address_space<workgroup>>
!c_tile = memref<128x128xbf16, #gpu.address_space<workgroup>>
!barrier = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>

gpu.module @kernels {
  gpu.func @gemm(%a: memref<128x64xbf16>, %b: memref<64x128xbf16>,
                 %c: memref<128x128xbf16>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    %c0_i32 = arith.constant 0 : i32
    %false = arith.constant false
    %a_s = mosaic_gpu.slice_smem 0 : !a_stage
    %b_s = mosaic_gpu.slice_smem 16384 : !b_stage
    %c_s = mosaic_gpu.slice_smem 32768 : !c_tile
    %bar = mosaic_gpu.slice_smem 98304 : !barrier
    mosaic_gpu.initialize_barrier %bar, arrival_count = 1, num_barriers = 1 : !barrier
    mosaic_gpu.arrive_expect_tx %bar, 32768 : !barrier
    mosaic_gpu.async_load %a[%c0_i32, %c0_i32] to %a_s, %bar slice_lengths [128, 64]
        : memref<128x64xbf16>, !a_stage, !barrier
    mosaic_gpu.async_load %b[%c0_i32, %c0_i32] to %b_s, %bar slice_lengths [64, 128]
        : memref<64x128xbf16>, !b_stage, !barrier
    mosaic_gpu.wait %bar, %false : !barrier
    %zero = arith.constant dense<0.0> : vector<128x128xf32>
    %acc = mosaic_gpu.wgmma %zero, %a_s, %b_s
        : vector<128x128xf32>, !a_stage, !b_stage -> vector<128x128xf32>
    %acc_bf16 = arith.truncf %acc : vector<128x128xf32> to vector<128x128xbf16>
    mosaic_gpu.vector_store %acc_bf16, %c_s : vector<128x128xbf16>, !c_tile
    mosaic_gpu.async_store %c_s to %c[%c0_i32, %c0_i32] slice_lengths [128, 128]
        : !c_tile, memref<128x128xbf16>
    gpu.return
  }
}
