// Fused attention forward, FlashAttention-3 style: O = softmax(Q K^T / sqrt(d)) V
// and the log-sum-exp of each row, for bf16 Q, K, V of shape (batch 4, heads 16,
// seq 4096, head_dim 128), not causal. See docs/AttentionWalkthrough.md.
//
// The arrays are passed as (batch * heads, seq, head_dim), which is the same
// memory as (batch, heads, seq, head_dim); the LSE as (batch * heads, seq).
// Block (i, bh) computes the 128 query rows [128 i, +128) of head bh. Three warpgroups per block:
//  - warpgroup 0, the producer, gives back registers (24 left) and only issues
//    TMA: the block's Q tile once, then K and V tiles of 128 keys into a ring of
//    2 stages; K and V have their own `full` barriers so that S = Q K^T can
//    start before V has landed;
//  - warpgroups 1 and 2, the consumers, take those registers (240 each). Each
//    owns 64 query rows and, for each key tile j, computes S_j = Q K_j^T with
//    wgmma, the online softmax of S_j in registers (running row max m and row
//    sum l in the WGMMA row layout, O rescaled by exp2(m_old - m_new)), and
//    O += P_j V_j with P_j as the register A operand of the wgmma.
// The consumers ping-pong on named barriers 4 and 5: a consumer issues its
// MMAs (S_j and the previous tile's P V) only on its turn and passes the turn
// on right after, so one consumer's softmax runs while the other's MMAs keep
// the tensor cores busy. P_{j-1} V_{j-1} is issued together with S_j, which is
// why `empty` of step j - 1 is signalled in step j.
// Scores are kept in base 2: s = S * log2(e) / sqrt(d), p = exp2(s - m), and
// LSE = (m + log2(l)) * ln(2).
!q_halves = memref<2x64x128xbf16, #gpu.address_space<workgroup>>
!kv_ring = memref<2x128x128xbf16, #gpu.address_space<workgroup>>
!o_halves = memref<2x64x128xbf16, #gpu.address_space<workgroup>>
!half = memref<64x128xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
!kv_stage = memref<128x128xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
!kv_stage_t = memref<128x128xbf16, strided<[1, 128], offset: ?>, #gpu.address_space<workgroup>>
!barriers = memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
!barrier_one = memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
!barrier = memref<!mosaic_gpu.barrier, strided<[], offset: ?>, #gpu.address_space<workgroup>>
!q_barrier = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
!rows = memref<64x4096x128xbf16>
!lse = memref<64x4096xf32>
!lse_half = memref<64xf32, strided<[1], offset: ?>>

gpu.module @kernels {
  gpu.func @attention_fwd(%q: !rows, %k: !rows, %v: !rows, %o: !rows, %lse: !lse) kernel
      attributes {known_block_size = array<i32: 384, 1, 1>,
                  known_grid_size = array<i32: 32, 64, 1>,
                  mosaic_gpu.flush_denormals} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %stages = arith.constant 2 : index
    %kv_steps = arith.constant 32 : index      // seq / 128
    %c0_i32 = arith.constant 0 : i32
    %c64_i32 = arith.constant 64 : i32
    %true = arith.constant true
    %false = arith.constant false

    %q_smem = mosaic_gpu.slice_smem 0 : !q_halves
    %k_smem = mosaic_gpu.slice_smem 32768 : !kv_ring
    %v_smem = mosaic_gpu.slice_smem 98304 : !kv_ring
    %o_smem = mosaic_gpu.slice_smem 163840 : !o_halves
    %q_full_1 = mosaic_gpu.slice_smem 196608 : !barrier_one
    %k_full = mosaic_gpu.slice_smem 196616 : !barriers
    %v_full = mosaic_gpu.slice_smem 196632 : !barriers
    %empty = mosaic_gpu.slice_smem 196648 : !barriers
    mosaic_gpu.initialize_barrier %q_full_1, arrival_count = 1, num_barriers = 1 : !barrier_one
    mosaic_gpu.initialize_barrier %k_full, arrival_count = 1, num_barriers = 2 : !barriers
    mosaic_gpu.initialize_barrier %v_full, arrival_count = 1, num_barriers = 2 : !barriers
    mosaic_gpu.initialize_barrier %empty, arrival_count = 2, num_barriers = 2 : !barriers
    %q_full = memref.subview %q_full_1[0] [1] [1] : !barrier_one to !q_barrier

    // The first row of this block's query tile and of its head's keys.
    %q_block = gpu.block_id x
    %head = gpu.block_id y
    %head_i32 = arith.index_cast %head : index to i32
    %q_row = arith.muli %q_block, %c128 : index
    %wg = mosaic_gpu.warpgroup_id : index
    %is_producer = arith.cmpi eq, %wg, %c0 : index
    scf.if %is_producer {
      mosaic_gpu.set_max_registers decrease 24
      %q0 = arith.index_cast %q_row : index to i32
      %q1 = arith.addi %q0, %c64_i32 : i32
      %q_s0 = memref.subview %q_smem[%c0, 0, 0] [1, 64, 128] [1, 1, 1] : !q_halves to !half
      %q_s1 = memref.subview %q_smem[%c1, 0, 0] [1, 64, 128] [1, 1, 1] : !q_halves to !half
      mosaic_gpu.arrive_expect_tx %q_full, 32768 : !q_barrier
      mosaic_gpu.async_load %q[%head_i32, %q0, %c0_i32] to %q_s0, %q_full slice_lengths [-1, 64, 128]
          : !rows, !half, !q_barrier
      mosaic_gpu.async_load %q[%head_i32, %q1, %c0_i32] to %q_s1, %q_full slice_lengths [-1, 64, 128]
          : !rows, !half, !q_barrier
      scf.for %j = %c0 to %kv_steps step %c1 {
        %stage = arith.remui %j, %stages : index
        %round = arith.divui %j, %stages : index
        %round_i64 = arith.index_cast %round : index to i64
        %round_parity = arith.trunci %round_i64 : i64 to i1
        // Round r refills a stage the consumers released in round r - 1.
        %parity = arith.xori %round_parity, %true : i1
        %empty_s = memref.subview %empty[%stage] [1] [1] : !barriers to !barrier
        mosaic_gpu.wait %empty_s, %parity : !barrier
        %kv_row = arith.muli %j, %c128 : index
        %kv0 = arith.index_cast %kv_row : index to i32
        %k_s = memref.subview %k_smem[%stage, 0, 0] [1, 128, 128] [1, 1, 1] : !kv_ring to !kv_stage
        %v_s = memref.subview %v_smem[%stage, 0, 0] [1, 128, 128] [1, 1, 1] : !kv_ring to !kv_stage
        %k_full_s = memref.subview %k_full[%stage] [1] [1] : !barriers to !barrier
        %v_full_s = memref.subview %v_full[%stage] [1] [1] : !barriers to !barrier
        mosaic_gpu.arrive_expect_tx %k_full_s, 32768 : !barrier
        mosaic_gpu.async_load %k[%head_i32, %kv0, %c0_i32] to %k_s, %k_full_s slice_lengths [-1, 128, 128]
            : !rows, !kv_stage, !barrier
        mosaic_gpu.arrive_expect_tx %v_full_s, 32768 : !barrier
        mosaic_gpu.async_load %v[%head_i32, %kv0, %c0_i32] to %v_s, %v_full_s slice_lengths [-1, 128, 128]
            : !rows, !kv_stage, !barrier
      }
    } else {
      mosaic_gpu.set_max_registers increase 240
      %half = arith.subi %wg, %c1 : index
      %half_rows = arith.muli %half, %c64 : index
      %row0 = arith.addi %q_row, %half_rows : index
      %q_s = memref.subview %q_smem[%half, 0, 0] [1, 64, 128] [1, 1, 1] : !q_halves to !half
      %o_s = memref.subview %o_smem[%half, 0, 0] [1, 64, 128] [1, 1, 1] : !o_halves to !half
      // Consumer 0 takes the first turn: consumer 1 passes it one up front.
      %is_second = arith.cmpi eq, %half, %c1 : index
      scf.if %is_second {
        mosaic_gpu.named_barrier arrive 4, warpgroups = 2
      }
      %is_first = arith.cmpi eq, %half, %c0 : index
      mosaic_gpu.wait %q_full, %false : !q_barrier

      %zero = arith.constant dense<0.0> : vector<64x128xf32>
      %ninf = arith.constant dense<0xFF800000> : vector<64xf32>
      %zero_rows = arith.constant dense<0.0> : vector<64xf32>
      %scale = arith.constant dense<0.127517432> : vector<64x128xf32>  // log2(e) / sqrt(128)
      %p0 = arith.constant dense<0.0> : vector<64x128xbf16>
      %last = arith.subi %kv_steps, %c1 : index
      %m, %l, %o_acc, %p_last = scf.for %j = %c0 to %kv_steps step %c1
          iter_args(%m_in = %ninf, %l_in = %zero_rows, %o_in = %zero, %p_in = %p0)
          -> (vector<64xf32>, vector<64xf32>, vector<64x128xf32>, vector<64x128xbf16>) {
        %stage = arith.remui %j, %stages : index
        %round = arith.divui %j, %stages : index
        %round_i64 = arith.index_cast %round : index to i64
        %parity = arith.trunci %round_i64 : i64 to i1
        %k_s = memref.subview %k_smem[%stage, 0, 0] [1, 128, 128] [1, 1, 1] : !kv_ring to !kv_stage
        %k_t = memref.transpose %k_s (d0, d1) -> (d1, d0) : !kv_stage to !kv_stage_t
        %k_full_s = memref.subview %k_full[%stage] [1] [1] : !barriers to !barrier
        mosaic_gpu.wait %k_full_s, %parity : !barrier
        %has_previous = arith.cmpi ugt, %j, %c0 : index
        %previous = arith.subi %j, %c1 : index
        %previous_stage = arith.remui %previous, %stages : index
        // On this consumer's turn: S_j = Q K_j^T and O += P_{j-1} V_{j-1}.
        scf.if %is_first {
          mosaic_gpu.named_barrier 4, warpgroups = 2
        } else {
          mosaic_gpu.named_barrier 5, warpgroups = 2
        }
        %s = mosaic_gpu.wgmma async %zero, %q_s, %k_t
            : vector<64x128xf32>, !half, !kv_stage_t -> vector<64x128xf32>
        %o_pv = scf.if %has_previous -> vector<64x128xf32> {
          %previous_round = arith.divui %previous, %stages : index
          %previous_round_i64 = arith.index_cast %previous_round : index to i64
          %previous_parity = arith.trunci %previous_round_i64 : i64 to i1
          %v_full_p = memref.subview %v_full[%previous_stage] [1] [1] : !barriers to !barrier
          mosaic_gpu.wait %v_full_p, %previous_parity : !barrier
          %v_p = memref.subview %v_smem[%previous_stage, 0, 0] [1, 128, 128] [1, 1, 1] : !kv_ring to !kv_stage
          %o_next = mosaic_gpu.wgmma async %o_in, %p_in, %v_p
              : vector<64x128xf32>, vector<64x128xbf16>, !kv_stage -> vector<64x128xf32>
          scf.yield %o_next : vector<64x128xf32>
        } else {
          scf.yield %o_in : vector<64x128xf32>
        }
        // Consumer 0 has one turn more to pass on than consumer 1: the
        // turn after consumer 1's last one is nobody's.
        %has_next = arith.cmpi ult, %j, %last : index
        scf.if %is_first {
          mosaic_gpu.named_barrier arrive 5, warpgroups = 2
        } else {
          scf.if %has_next {
            mosaic_gpu.named_barrier arrive 4, warpgroups = 2
          }
        }
        mosaic_gpu.wgmma_wait 0
        scf.if %has_previous {
          %empty_p = memref.subview %empty[%previous_stage] [1] [1] : !barriers to !barrier
          mosaic_gpu.arrive %empty_p : !barrier
        }
        // Online softmax, in base 2.
        %s_scaled = arith.mulf %s, %scale : vector<64x128xf32>
        %row_max = vector.multi_reduction <maximumf>, %s_scaled, %ninf [1] : vector<64x128xf32> to vector<64xf32>
        %m_new = arith.maximumf %m_in, %row_max : vector<64xf32>
        %m_b = mosaic_gpu.broadcast_in_dim %m_new, dims [0] : vector<64xf32> -> vector<64x128xf32>
        %shifted = arith.subf %s_scaled, %m_b : vector<64x128xf32>
        %p = math.exp2 %shifted : vector<64x128xf32>
        %m_diff = arith.subf %m_in, %m_new : vector<64xf32>
        %alpha = math.exp2 %m_diff : vector<64xf32>
        %row_sum = vector.multi_reduction <add>, %p, %zero_rows [1] : vector<64x128xf32> to vector<64xf32>
        %l_scaled = arith.mulf %l_in, %alpha : vector<64xf32>
        %l_new = arith.addf %l_scaled, %row_sum : vector<64xf32>
        %alpha_b = mosaic_gpu.broadcast_in_dim %alpha, dims [0] : vector<64xf32> -> vector<64x128xf32>
        %o_scaled = arith.mulf %o_pv, %alpha_b : vector<64x128xf32>
        %p_bf16 = arith.truncf %p : vector<64x128xf32> to vector<64x128xbf16>
        scf.yield %m_new, %l_new, %o_scaled, %p_bf16
            : vector<64xf32>, vector<64xf32>, vector<64x128xf32>, vector<64x128xbf16>
      }
      // The last tile's P V.
      %last_stage = arith.remui %last, %stages : index
      %last_round = arith.divui %last, %stages : index
      %last_round_i64 = arith.index_cast %last_round : index to i64
      %last_parity = arith.trunci %last_round_i64 : i64 to i1
      %v_full_l = memref.subview %v_full[%last_stage] [1] [1] : !barriers to !barrier
      mosaic_gpu.wait %v_full_l, %last_parity : !barrier
      %v_l = memref.subview %v_smem[%last_stage, 0, 0] [1, 128, 128] [1, 1, 1] : !kv_ring to !kv_stage
      %o_final = mosaic_gpu.wgmma %o_acc, %p_last, %v_l
          : vector<64x128xf32>, vector<64x128xbf16>, !kv_stage -> vector<64x128xf32>
      %empty_l = memref.subview %empty[%last_stage] [1] [1] : !barriers to !barrier
      mosaic_gpu.arrive %empty_l : !barrier

      // Epilogue: O / l through shared memory with TMA, and the LSE rows.
      // One division per row, not per element.
      %ones = arith.constant dense<1.0> : vector<64xf32>
      %l_inverse = arith.divf %ones, %l : vector<64xf32>
      %l_b = mosaic_gpu.broadcast_in_dim %l_inverse, dims [0] : vector<64xf32> -> vector<64x128xf32>
      %o_normalized = arith.mulf %o_final, %l_b : vector<64x128xf32>
      %o_bf16 = arith.truncf %o_normalized : vector<64x128xf32> to vector<64x128xbf16>
      mosaic_gpu.vector_store %o_bf16, %o_s : vector<64x128xbf16>, !half
      %row0_i32 = arith.index_cast %row0 : index to i32
      mosaic_gpu.async_store %o_s to %o[%head_i32, %row0_i32, %c0_i32] slice_lengths [-1, 64, 128] : !half, !rows
      %log_l = math.log2 %l : vector<64xf32>
      %lse_2 = arith.addf %m, %log_l : vector<64xf32>
      %ln2 = arith.constant dense<0.693147182> : vector<64xf32>
      %lse_e = arith.mulf %lse_2, %ln2 : vector<64xf32>
      %lse_rows = memref.subview %lse[%head, %row0] [1, 64] [1, 1] : !lse to !lse_half
      mosaic_gpu.vector_store %lse_e, %lse_rows : vector<64xf32>, !lse_half
    }
    gpu.return
  }
}
