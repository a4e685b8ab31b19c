// Inputs/gemm-inferred.mlir with a (32, 2, 2) block: the same 128 threads,
// numbered by CUDA as x + ntid.x * (y + ntid.y * z). The warpgroup's lanes,
// its TMA leader and its barriers must follow that linear index, not %tid.x.
!a_ring = memref<2x128x64xbf16, #gpu.address_space<workgroup>>
!b_ring = memref<2x64x128xbf16, #gpu.address_space<workgroup>>
!a_stage = memref<128x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
!b_stage = memref<64x128xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
!c_tile = memref<128x128xbf16, #gpu.address_space<workgroup>>
!barriers = memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
!barrier = memref<!mosaic_gpu.barrier, strided<[], offset: ?>, #gpu.address_space<workgroup>>

gpu.module @kernels {
  gpu.func @gemm(%a: memref<256x256xbf16>, %b: memref<256x256xbf16>,
                 %c: memref<256x256xbf16>) kernel
      attributes {known_block_size = array<i32: 32, 2, 2>,
                  known_grid_size = array<i32: 2, 2, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %k_steps = arith.constant 4 : index
    %c0_i32 = arith.constant 0 : i32
    %c64_i32 = arith.constant 64 : i32
    %c128_i32 = arith.constant 128 : i32
    %bx = gpu.block_id x
    %by = gpu.block_id y
    %bx_i32 = arith.index_cast %bx : index to i32
    %by_i32 = arith.index_cast %by : index to i32
    %m0 = arith.muli %by_i32, %c128_i32 : i32
    %n0 = arith.muli %bx_i32, %c128_i32 : i32

    %a_smem = mosaic_gpu.slice_smem 0 : !a_ring
    %b_smem = mosaic_gpu.slice_smem 32768 : !b_ring
    %c_smem = mosaic_gpu.slice_smem 65536 : !c_tile
    %bars = mosaic_gpu.slice_smem 98304 : !barriers
    mosaic_gpu.initialize_barrier %bars, arrival_count = 1, num_barriers = 2 : !barriers

    // Prologue: fill both stages.
    scf.for %s = %c0 to %c2 step %c1 {
      %s_i32 = arith.index_cast %s : index to i32
      %k0 = arith.muli %s_i32, %c64_i32 : i32
      %bar = memref.subview %bars[%s] [1] [1] : !barriers to !barrier
      %a_s = memref.subview %a_smem[%s, 0, 0] [1, 128, 64] [1, 1, 1] : !a_ring to !a_stage
      %b_s = memref.subview %b_smem[%s, 0, 0] [1, 64, 128] [1, 1, 1] : !b_ring to !b_stage
      mosaic_gpu.arrive_expect_tx %bar, 32768 : !barrier
      mosaic_gpu.async_load %a[%m0, %k0] to %a_s, %bar slice_lengths [128, 64]
          : memref<256x256xbf16>, !a_stage, !barrier
      mosaic_gpu.async_load %b[%k0, %n0] to %b_s, %bar slice_lengths [64, 128]
          : memref<256x256xbf16>, !b_stage, !barrier
    }

    %zero = arith.constant dense<0.0> : vector<128x128xf32>
    %acc = scf.for %k = %c0 to %k_steps step %c1 iter_args(%acc_in = %zero) -> (vector<128x128xf32>) {
      %stage = arith.remui %k, %c2 : index
      %round = arith.divui %k, %c2 : index
      %round_i1 = arith.index_cast %round : index to i64
      %parity = arith.trunci %round_i1 : i64 to i1
      %bar = memref.subview %bars[%stage] [1] [1] : !barriers to !barrier
      %a_s = memref.subview %a_smem[%stage, 0, 0] [1, 128, 64] [1, 1, 1] : !a_ring to !a_stage
      %b_s = memref.subview %b_smem[%stage, 0, 0] [1, 64, 128] [1, 1, 1] : !b_ring to !b_stage
      mosaic_gpu.wait %bar, %parity : !barrier
      %acc_out = mosaic_gpu.wgmma %acc_in, %a_s, %b_s
          : vector<128x128xf32>, !a_stage, !b_stage -> vector<128x128xf32>

      // Refill this stage with the slice two steps ahead.
      %next = arith.addi %k, %c2 : index
      %more = arith.cmpi ult, %next, %k_steps : index
      scf.if %more {
        %next_i32 = arith.index_cast %next : index to i32
        %k0 = arith.muli %next_i32, %c64_i32 : i32
        mosaic_gpu.arrive_expect_tx %bar, 32768 : !barrier
        mosaic_gpu.async_load %a[%m0, %k0] to %a_s, %bar slice_lengths [128, 64]
            : memref<256x256xbf16>, !a_stage, !barrier
        mosaic_gpu.async_load %b[%k0, %n0] to %b_s, %bar slice_lengths [64, 128]
            : memref<256x256xbf16>, !b_stage, !barrier
      }
      scf.yield %acc_out : vector<128x128xf32>
    }

    // Epilogue: convert to bf16 and store through shared memory with TMA.
    %c_bf16 = arith.truncf %acc : vector<128x128xf32> to vector<128x128xbf16>
    mosaic_gpu.vector_store %c_bf16, %c_smem : vector<128x128xbf16>, !c_tile
    mosaic_gpu.async_store %c_smem to %c[%m0, %n0] slice_lengths [128, 128]
        : !c_tile, memref<256x256xbf16>
    gpu.return
  }
}
