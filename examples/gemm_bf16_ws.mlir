// Warp-specialized, persistent bf16 GEMM, C = A * B with an f32 accumulator
// (8192^3). See docs/GemmWalkthrough.md for why each barrier exists.
//
// One block per SM (132), in clusters of 2 along x: the cluster walks the
// 32 x 32 output tiles of 256x256 in grouped order (8 tile rows at a time,
// so neighbouring clusters share A rows and B columns in L2), and block r of
// the cluster computes rows [128 r, +128) of each. The two blocks need the
// same B slice: each loads half of it and multicasts it to both. Three
// warpgroups per block:
//  - warpgroup 0, the producer, gives back registers (40 left) and only
//    issues TMA: for every K step of every tile it waits until the stage is
//    empty, then loads A (two 64x64 halves) and B (64x256) into it;
//  - warpgroups 1 and 2, the consumers, take those registers (232 each) and
//    each computes one 64x256 half of the tile with wgmma that stays in
//    flight: after issuing K step k they wait for step k-1 only, then
//    release its stage. The epilogue stores the half through shared memory
//    with TMA.
// `full[s]` (1 producer arrival + 48 KiB of TMA bytes, half of B from the
// peer block) says stage s holds data; `empty[s]` (2 consumer arrivals from
// each block of the cluster) says every consumer that reads what this
// block's producer writes is done with it. Both count the K steps of all
// tiles together, so stage and phase follow from one running step counter.
!a_ring = memref<3x2x64x64xbf16, #gpu.address_space<workgroup>>
!b_ring = memref<3x64x256xbf16, #gpu.address_space<workgroup>>
!c_halves = memref<2x64x256xbf16, #gpu.address_space<workgroup>>
!a_half = memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
!b_stage = memref<64x256xbf16, strided<[256, 1], offset: ?>, #gpu.address_space<workgroup>>
!c_half = memref<64x256xbf16, strided<[256, 1], offset: ?>, #gpu.address_space<workgroup>>
!barriers = memref<3x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
!barrier = memref<!mosaic_gpu.barrier, strided<[], offset: ?>, #gpu.address_space<workgroup>>
!a_type = memref<8192x8192xbf16>
!b_type = memref<8192x8192xbf16>
!c_type = memref<8192x8192xbf16>

gpu.module @kernels {
  gpu.func @gemm_ws(%a: !a_type, %b: !b_type, %c: !c_type) kernel
      attributes {known_block_size = array<i32: 384, 1, 1>,
                  known_grid_size = array<i32: 132, 1, 1>,
                  mosaic_gpu.cluster = array<i32: 2, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %stages = arith.constant 3 : index
    %k_steps = arith.constant 128 : index      // K / 64
    %tiles_m = arith.constant 32 : index       // M / 256
    %tiles_n = arith.constant 32 : index       // N / 256
    %tiles = arith.constant 1024 : index
    %group_m = arith.constant 8 : index
    %c64_i32 = arith.constant 64 : i32
    %c128_i32 = arith.constant 128 : i32
    %c256_i32 = arith.constant 256 : i32
    %true = arith.constant true

    %a_smem = mosaic_gpu.slice_smem 0 : !a_ring
    %b_smem = mosaic_gpu.slice_smem 49152 : !b_ring
    %c_smem = mosaic_gpu.slice_smem 147456 : !c_halves
    %full = mosaic_gpu.slice_smem 212992 : !barriers
    %empty = mosaic_gpu.slice_smem 213016 : !barriers
    mosaic_gpu.initialize_barrier %full, arrival_count = 1, num_barriers = 3 : !barriers
    mosaic_gpu.initialize_barrier %empty, arrival_count = 4, num_barriers = 3 : !barriers

    %block_x = gpu.block_id x
    %blocks_x = gpu.grid_dim x
    %block = arith.divui %block_x, %c2 : index    // the cluster
    %blocks = arith.divui %blocks_x, %c2 : index
    %rank = gpu.cluster_block_id x
    %rank_i32 = arith.index_cast %rank : index to i32
    %rank_rows = arith.muli %rank_i32, %c128_i32 : i32
    %wg = mosaic_gpu.warpgroup_id : index
    %is_producer = arith.cmpi eq, %wg, %c0 : index
    scf.if %is_producer {
      mosaic_gpu.set_max_registers decrease 40
      %end = scf.for %tile = %block to %tiles step %blocks
          iter_args(%step0 = %c0) -> (index) {
        // Grouped rasterization: 8 tile rows, then the next 8.
        %per_group = arith.muli %group_m, %tiles_n : index
        %group = arith.divui %tile, %per_group : index
        %first_m = arith.muli %group, %group_m : index
        %left_m = arith.subi %tiles_m, %first_m : index
        %rows = arith.minui %left_m, %group_m : index
        %in_group = arith.remui %tile, %per_group : index
        %dm = arith.remui %in_group, %rows : index
        %tm = arith.addi %first_m, %dm : index
        %tn = arith.divui %in_group, %rows : index
        %tm_i32 = arith.index_cast %tm : index to i32
        %tn_i32 = arith.index_cast %tn : index to i32
        %m_tile = arith.muli %tm_i32, %c256_i32 : i32
        %m0 = arith.addi %m_tile, %rank_rows : i32
        %m1 = arith.addi %m0, %c64_i32 : i32
        %n0 = arith.muli %tn_i32, %c256_i32 : i32
        scf.for %k = %c0 to %k_steps step %c1 {
          %step = arith.addi %step0, %k : index
          %stage = arith.remui %step, %stages : index
          %round = arith.divui %step, %stages : index
          %round_i64 = arith.index_cast %round : index to i64
          %round_parity = arith.trunci %round_i64 : i64 to i1
          // Round r refills a stage the consumers released in round r - 1:
          // wait for the phase of parity (r - 1) mod 2, which the barrier's
          // initial state counts as complete in round 0.
          %parity = arith.xori %round_parity, %true : i1
          %empty_s = memref.subview %empty[%stage] [1] [1] : !barriers to !barrier
          %full_s = memref.subview %full[%stage] [1] [1] : !barriers to !barrier
          mosaic_gpu.wait %empty_s, %parity : !barrier
          %k_i32 = arith.index_cast %k : index to i32
          %k0 = arith.muli %k_i32, %c64_i32 : i32
          %a0 = memref.subview %a_smem[%stage, 0, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : !a_ring to !a_half
          %a1 = memref.subview %a_smem[%stage, 1, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : !a_ring to !a_half
          %b_s = memref.subview %b_smem[%stage, 0, 0] [1, 64, 256] [1, 1, 1] : !b_ring to !b_stage
          mosaic_gpu.arrive_expect_tx %full_s, 49152 : !barrier
          mosaic_gpu.async_load %a[%m0, %k0] to %a0, %full_s slice_lengths [64, 64]
              : !a_type, !a_half, !barrier
          mosaic_gpu.async_load %a[%m1, %k0] to %a1, %full_s slice_lengths [64, 64]
              : !a_type, !a_half, !barrier
          mosaic_gpu.async_load %b[%k0, %n0] to %b_s, %full_s slice_lengths [64, 256]
              {collective = [#mosaic_gpu.dim<x>]} : !b_type, !b_stage, !barrier
        }
        %next = arith.addi %step0, %k_steps : index
        scf.yield %next : index
      }
    } else {
      mosaic_gpu.set_max_registers increase 232
      %half = arith.subi %wg, %c1 : index
      %half_i32 = arith.index_cast %half : index to i32
      %row_offset = arith.muli %half_i32, %c64_i32 : i32
      %c_s = memref.subview %c_smem[%half, 0, 0] [1, 64, 256] [1, 1, 1] : !c_halves to !c_half
      %zero = arith.constant dense<0.0> : vector<64x256xf32>
      %end = scf.for %tile = %block to %tiles step %blocks
          iter_args(%step0 = %c0) -> (index) {
        %per_group = arith.muli %group_m, %tiles_n : index
        %group = arith.divui %tile, %per_group : index
        %first_m = arith.muli %group, %group_m : index
        %left_m = arith.subi %tiles_m, %first_m : index
        %rows = arith.minui %left_m, %group_m : index
        %in_group = arith.remui %tile, %per_group : index
        %dm = arith.remui %in_group, %rows : index
        %tm = arith.addi %first_m, %dm : index
        %tn = arith.divui %in_group, %rows : index
        %tm_i32 = arith.index_cast %tm : index to i32
        %tn_i32 = arith.index_cast %tn : index to i32
        %m_tile = arith.muli %tm_i32, %c256_i32 : i32
        %m_block = arith.addi %m_tile, %rank_rows : i32
        %m0 = arith.addi %m_block, %row_offset : i32
        %n0 = arith.muli %tn_i32, %c256_i32 : i32
        %acc = scf.for %k = %c0 to %k_steps step %c1
            iter_args(%acc_in = %zero) -> (vector<64x256xf32>) {
          %step = arith.addi %step0, %k : index
          %stage = arith.remui %step, %stages : index
          %round = arith.divui %step, %stages : index
          %round_i64 = arith.index_cast %round : index to i64
          %parity = arith.trunci %round_i64 : i64 to i1
          %full_s = memref.subview %full[%stage] [1] [1] : !barriers to !barrier
          mosaic_gpu.wait %full_s, %parity : !barrier
          %a_s = memref.subview %a_smem[%stage, %half, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : !a_ring to !a_half
          %b_s = memref.subview %b_smem[%stage, 0, 0] [1, 64, 256] [1, 1, 1] : !b_ring to !b_stage
          %acc_out = mosaic_gpu.wgmma async %acc_in, %a_s, %b_s
              : vector<64x256xf32>, !a_half, !b_stage -> vector<64x256xf32>
          // Step k - 1's MMA is done: its stage may be refilled.
          mosaic_gpu.wgmma_wait 1
          %has_previous = arith.cmpi ugt, %k, %c0 : index
          scf.if %has_previous {
            %previous = arith.subi %step, %c1 : index
            %previous_stage = arith.remui %previous, %stages : index
            %empty_p = memref.subview %empty[%previous_stage] [1] [1] : !barriers to !barrier
            mosaic_gpu.arrive %empty_p {collective = [#mosaic_gpu.dim<x>]} : !barrier
          }
          scf.yield %acc_out : vector<64x256xf32>
        }
        mosaic_gpu.wgmma_wait 0
        %next = arith.addi %step0, %k_steps : index
        %last = arith.subi %next, %c1 : index
        %last_stage = arith.remui %last, %stages : index
        %empty_l = memref.subview %empty[%last_stage] [1] [1] : !barriers to !barrier
        mosaic_gpu.arrive %empty_l {collective = [#mosaic_gpu.dim<x>]} : !barrier
        // Epilogue: this consumer's 64x256 half, through shared memory.
        %acc_bf16 = arith.truncf %acc : vector<64x256xf32> to vector<64x256xbf16>
        mosaic_gpu.vector_store %acc_bf16, %c_s : vector<64x256xbf16>, !c_half
        mosaic_gpu.async_store %c_s to %c[%m0, %n0] slice_lengths [64, 256]
            : !c_half, !c_type
        scf.yield %next : index
      }
    }
    gpu.return
  }
}
