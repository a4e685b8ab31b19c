// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms -mosaic-gpu-lower | FileCheck %s

// Tiled (WGMMA) layouts: each thread holds 2-element register vectors at
// thread-dependent (row, col) offsets. In the WGMMA layout warp w takes rows
// 16w..16w+15, lane l takes row (l / 4) % 8 and columns 2 * (l % 4) of each
// 8x8 core matrix, so a thread's offset is
//   row = 16 * (warp % 4) + (lane / 4) % 8,  col = 2 * (lane % 4).
// Registers go (r, c), (r + 8, c), (r, c + 8), (r + 8, c + 8), ... over the
// first 64 rows, then the same over rows 64..127: a 128x64 f32 vector is
// 32 register vectors of 2 elements, vector<64xf32> per thread. The splat
// constant keeps one register until the WGMMA mulf spreads it.
// CHECK-LABEL: func @global_wgmma
// CHECK-SAME: (%[[IN:.*]]: memref<128x64xf32>, %[[OUT:.*]]: memref<128x64xf32>)
// CHECK: %[[X:.*]] = gpu.thread_id x
// CHECK: %[[TID:.*]] = arith.addi %[[X]], %{{.*}} : index
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[T:.*]] = arith.remui %[[TID]], %[[C128]] : index
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[WARP:.*]] = arith.divui %[[T]], %[[C32]] : index
// CHECK: %[[LANE:.*]] = arith.remui %[[T]], %{{.*}} : index
// CHECK: %[[C16:.*]] = arith.constant 16 : index
// CHECK: %[[WARP_ROWS:.*]] = arith.muli %{{.*}}, %[[C16]] : index
// CHECK: %[[ROW0:.*]] = arith.addi %{{.*}}, %[[WARP_ROWS]] : index
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[PAIR:.*]] = arith.muli %{{.*}}, %[[C2]] : index
// CHECK: %[[COL:.*]] = arith.addi %{{.*}}, %[[PAIR]] : index
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[QUAD:.*]] = arith.divui %[[LANE]], %[[C4]] : index
// CHECK: %[[LANE_ROW:.*]] = arith.remui %[[QUAD]], %[[C8]] : index
// CHECK: %[[LANE_ROWS:.*]] = arith.muli %[[LANE_ROW]], %{{.*}} : index
// CHECK: %[[ROW:.*]] = arith.addi %[[ROW0]], %[[LANE_ROWS]] : index
// CHECK: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : vector<64xf32>
// Register 0 at (row, col).
// CHECK: %[[Z0:.*]] = arith.constant 0 : index
// CHECK: %[[R0_ROW:.*]] = arith.addi %[[ROW]], %[[Z0]] : index
// CHECK: %[[Z1:.*]] = arith.constant 0 : index
// CHECK: %[[R0_COL:.*]] = arith.addi %[[COL]], %[[Z1]] : index
// CHECK: %[[R0:.*]] = vector.load %[[IN]][%[[R0_ROW]], %[[R0_COL]]] : memref<128x64xf32>, vector<2xf32>
// CHECK: %[[ACC0:.*]] = vector.insert_strided_slice %[[R0]], %[[ZEROS]] {offsets = [0], strides = [1]} : vector<2xf32> into vector<64xf32>
// Register 1 at (row + 8, col).
// CHECK: %[[E8:.*]] = arith.constant 8 : index
// CHECK: %[[R1_ROW:.*]] = arith.addi %[[ROW]], %[[E8]] : index
// CHECK: %[[Z2:.*]] = arith.constant 0 : index
// CHECK: %[[R1_COL:.*]] = arith.addi %[[COL]], %[[Z2]] : index
// CHECK: %[[R1:.*]] = vector.load %[[IN]][%[[R1_ROW]], %[[R1_COL]]] : memref<128x64xf32>, vector<2xf32>
// CHECK: %[[ACC1:.*]] = vector.insert_strided_slice %[[R1]], %[[ACC0]] {offsets = [2], strides = [1]}
// Register 2 at (row, col + 8).
// CHECK: %[[Z3:.*]] = arith.constant 0 : index
// CHECK: %[[R2_ROW:.*]] = arith.addi %[[ROW]], %[[Z3]] : index
// CHECK: %[[F8:.*]] = arith.constant 8 : index
// CHECK: %[[R2_COL:.*]] = arith.addi %[[COL]], %[[F8]] : index
// CHECK: %[[R2:.*]] = vector.load %[[IN]][%[[R2_ROW]], %[[R2_COL]]] : memref<128x64xf32>, vector<2xf32>
// CHECK: vector.insert_strided_slice %[[R2]], %[[ACC1]] {offsets = [4], strides = [1]}
// CHECK-COUNT-13: vector.load %[[IN]]{{.*}} : memref<128x64xf32>, vector<2xf32>
// Register 16 starts the second 64-row block at (row + 64, col).
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[R16_ROW:.*]] = arith.addi %[[ROW]], %[[C64]] : index
// CHECK: %[[Z4:.*]] = arith.constant 0 : index
// CHECK: %[[R16_COL:.*]] = arith.addi %[[COL]], %[[Z4]] : index
// CHECK: %[[R16:.*]] = vector.load %[[IN]][%[[R16_ROW]], %[[R16_COL]]]
// CHECK: vector.insert_strided_slice %[[R16]], %{{.*}} {offsets = [32], strides = [1]}
// CHECK-COUNT-15: vector.load %[[IN]]{{.*}} : memref<128x64xf32>, vector<2xf32>
// CHECK: %[[LOADED:.*]] = vector.insert_strided_slice %{{.*}} {offsets = [62], strides = [1]} : vector<2xf32> into vector<64xf32>
// CHECK-NOT: vector.load
// CHECK: %[[SPLAT:.*]] = arith.constant dense<2.000000e+00> : vector<1xf32>
// CHECK: %[[SCALAR:.*]] = vector.extract %[[SPLAT]][0] : f32 from vector<1xf32>
// CHECK: %[[SPREAD:.*]] = vector.broadcast %[[SCALAR]] : f32 to vector<64xf32>
// CHECK: %[[PRODUCT:.*]] = arith.mulf %[[LOADED]], %[[SPREAD]] : vector<64xf32>
// The store recomputes the same offsets and writes register by register.
// CHECK: %[[P0:.*]] = vector.extract_strided_slice %[[PRODUCT]] {offsets = [0], sizes = [2], strides = [1]} : vector<64xf32> to vector<2xf32>
// CHECK: vector.store %[[P0]], %[[OUT]][%{{.*}}, %{{.*}}] : memref<128x64xf32>, vector<2xf32>
// CHECK-COUNT-30: vector.store {{.*}} : memref<128x64xf32>, vector<2xf32>
// CHECK: %[[P31:.*]] = vector.extract_strided_slice %[[PRODUCT]] {offsets = [62], sizes = [2], strides = [1]}
// CHECK: vector.store %[[P31]], %[[OUT]]
// CHECK-NOT: vector.store
// CHECK-NOT: mosaic_gpu
// CHECK: return
#wgmma = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
func.func @global_wgmma(%in: memref<128x64xf32>, %out: memref<128x64xf32>) {
  %v = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>
  %w = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #wgmma
  %c = arith.constant dense<2.0> : vector<128x64xf32>
  %s = arith.mulf %w, %c : vector<128x64xf32>
  mosaic_gpu.vector_store %s, %out : vector<128x64xf32>, memref<128x64xf32>
  return
}

// -----

// A shared-memory buffer tiled (8, 64) with a 128-byte swizzle, as TMA and
// wgmma use it, addressed by hand. The thread's first element (row, col)
// becomes tile coordinates (row / 8, col / 64, row % 8, col % 64),
// linearized with the tiled memref's strides [512, 512, 64, 1], scaled to
// bytes (bf16: 2) and offset from the buffer's address; the swizzle then
// XORs the 16-byte chunk bits 4..6 with the row bits 7..9:
// address ^ ((address >> 7 & 7) << 4). The thread's swizzled offset from
// the buffer start is computed once. Every register's own offset (thread 0's
// element) is a constant with bits disjoint from the thread's, so it is
// XORed in: register 1 (row + 8) is the next 8x64 tile, 1024 bytes on;
// register 2 (col + 8) the next 16-byte chunk; register 3 both (1040);
// register 16 (row + 64) 8 tiles on (8192). Each register vector is then an
// llvm.load of 2 bf16 through an !llvm.ptr<3>, 4-byte aligned.
// CHECK-LABEL: gpu.func @swizzled_smem
// CHECK: %[[VIEW:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16x1x8x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %{{.*}}, %[[OFFSET:.*]], %{{.*}}:4, %{{.*}}:4 = memref.extract_strided_metadata %[[VIEW]]
// CHECK: %[[ALIGNED:.*]] = memref.extract_aligned_pointer_as_index %[[VIEW]]
// CHECK: %[[TWO:.*]] = arith.constant 2 : index
// CHECK: %[[OFFSET_BYTES:.*]] = arith.muli %[[OFFSET]], %[[TWO]] : index
// CHECK: %[[BASE:.*]] = arith.addi %[[ALIGNED]], %[[OFFSET_BYTES]] : index
// CHECK: %[[C8:.*]] = arith.constant 8 : index
// CHECK: %[[TILE_ROW:.*]] = arith.divui %[[ROW:.*]], %[[C8]] : index
// CHECK: %[[C8B:.*]] = arith.constant 8 : index
// CHECK: %[[IN_ROW:.*]] = arith.remui %[[ROW]], %[[C8B]] : index
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[TILE_COL:.*]] = arith.divui %[[COL:.*]], %[[C64]] : index
// CHECK: %[[C64B:.*]] = arith.constant 64 : index
// CHECK: %[[IN_COL:.*]] = arith.remui %[[COL]], %[[C64B]] : index
// CHECK: %[[C512:.*]] = arith.constant 512 : index
// CHECK: %[[A:.*]] = arith.muli %[[TILE_ROW]], %[[C512]] : index
// CHECK: %[[SUM_A:.*]] = arith.addi %{{.*}}, %[[A]] : index
// CHECK: %[[C512B:.*]] = arith.constant 512 : index
// CHECK: %[[B:.*]] = arith.muli %[[TILE_COL]], %[[C512B]] : index
// CHECK: %[[SUM_AB:.*]] = arith.addi %[[SUM_A]], %[[B]] : index
// CHECK: %[[ROW_STRIDE:.*]] = arith.constant 64 : index
// CHECK: %[[D:.*]] = arith.muli %[[IN_ROW]], %[[ROW_STRIDE]] : index
// CHECK: %[[SUM_ABD:.*]] = arith.addi %[[SUM_AB]], %[[D]] : index
// CHECK: %[[UNIT:.*]] = arith.constant 1 : index
// CHECK: %[[E:.*]] = arith.muli %[[IN_COL]], %[[UNIT]] : index
// CHECK: %[[LINEAR:.*]] = arith.addi %[[SUM_ABD]], %[[E]] : index
// CHECK: %[[ELEMENT_BYTES:.*]] = arith.constant 2 : index
// CHECK: %[[BYTES:.*]] = arith.muli %[[LINEAR]], %[[ELEMENT_BYTES]] : index
// CHECK: %[[ADDRESS:.*]] = arith.addi %[[BASE]], %[[BYTES]] : index
// CHECK: %[[SEVEN:.*]] = arith.constant 7 : index
// CHECK: %[[SHIFT7:.*]] = arith.constant 7 : index
// CHECK: %[[HIGH:.*]] = arith.shrui %[[ADDRESS]], %[[SHIFT7]] : index
// CHECK: %[[SWIZZLE_ROW:.*]] = arith.andi %[[HIGH]], %[[SEVEN]] : index
// CHECK: %[[SHIFT4:.*]] = arith.constant 4 : index
// CHECK: %[[MASK:.*]] = arith.shli %[[SWIZZLE_ROW]], %[[SHIFT4]] : index
// CHECK: %[[SWIZZLED:.*]] = arith.xori %[[ADDRESS]], %[[MASK]] : index
// CHECK: %[[THREAD:.*]] = arith.subi %[[SWIZZLED]], %[[BASE]] : index
// CHECK: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : vector<64xbf16>
// CHECK: %[[X0:.*]] = arith.xori %[[THREAD]], %{{.*}} : index
// CHECK: %[[A0:.*]] = arith.addi %[[BASE]], %[[X0]] : index
// CHECK: %[[I0:.*]] = arith.index_cast %[[A0]] : index to i64
// CHECK: %[[P0:.*]] = llvm.inttoptr %[[I0]] : i64 to !llvm.ptr<3>
// CHECK: %[[R0:.*]] = llvm.load %[[P0]] {alignment = 4 : i64} : !llvm.ptr<3> -> vector<2xbf16>
// CHECK: vector.insert_strided_slice %[[R0]], %[[ZEROS]] {offsets = [0], strides = [1]} : vector<2xbf16> into vector<64xbf16>
// CHECK: %[[K1:.*]] = arith.constant 1024 : index
// CHECK-NEXT: %[[X1:.*]] = arith.xori %[[THREAD]], %[[K1]] : index
// CHECK-NEXT: %[[A1:.*]] = arith.addi %[[BASE]], %[[X1]] : index
// CHECK: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> vector<2xbf16>
// CHECK: vector.insert_strided_slice %{{.*}} {offsets = [2], strides = [1]}
// CHECK: %[[K2:.*]] = arith.constant 16 : index
// CHECK-NEXT: arith.xori %[[THREAD]], %[[K2]] : index
// CHECK: vector.insert_strided_slice %{{.*}} {offsets = [4], strides = [1]}
// CHECK: %[[K3:.*]] = arith.constant 1040 : index
// CHECK-NEXT: arith.xori %[[THREAD]], %[[K3]] : index
// CHECK: vector.insert_strided_slice %{{.*}} {offsets = [6], strides = [1]}
// CHECK-COUNT-12: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> vector<2xbf16>
// CHECK: %[[K16:.*]] = arith.constant 8192 : index
// CHECK-NEXT: arith.xori %[[THREAD]], %[[K16]] : index
// CHECK: vector.insert_strided_slice %{{.*}} {offsets = [32], strides = [1]}
// CHECK-COUNT-15: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr<3> -> vector<2xbf16>
// CHECK-NOT: llvm.load
// CHECK: %[[SUM:.*]] = arith.addf %[[LOADED:.*]], %[[LOADED]] : vector<64xbf16>
// The store is stmatrix.x4 (PTX ISA "stmatrix"): each instruction takes
// four register pairs, thread 0's (row, col) + (0, 0), (8, 0), (0, 8) and
// (8, 8), and lane l gives the address of row l % 8 of matrix l / 8. That
// row is what lane 4 (l % 8) of the warp holds, so the lane takes the
// thread offsets of thread t - l + 4 (l % 8), plus 8 rows when matrix bit 0
// is set and 8 columns when bit 1 is, and tiles and swizzles that index as
// the load does, once. Instruction g XORs in the swizzled offset of thread
// 0's pair 4g: 16 columns on is 32 bytes, 64 rows on 8 tiles (8192 bytes).
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK-NEXT: %[[LANE:.*]] = arith.remui %[[TID:.*]], %[[C32]] : index
// CHECK-NEXT: %[[C8R:.*]] = arith.constant 8 : index
// CHECK-NEXT: %[[ROW_ST:.*]] = arith.remui %[[LANE]], %[[C8R]] : index
// CHECK-NEXT: %[[C8M:.*]] = arith.constant 8 : index
// CHECK-NEXT: %[[MATRIX:.*]] = arith.divui %[[LANE]], %[[C8M]] : index
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[FOUR_ROWS:.*]] = arith.muli %[[ROW_ST]], %[[C4]] : index
// CHECK-NEXT: %[[WARP_START:.*]] = arith.subi %[[TID]], %[[LANE]] : index
// CHECK-NEXT: %[[HOLDER:.*]] = arith.addi %[[WARP_START]], %[[FOUR_ROWS]] : index
// CHECK: arith.divui %[[HOLDER]], %{{.*}} : index
// CHECK: %[[M0:.*]] = arith.divui %[[MATRIX]], %{{.*}} : index
// CHECK-NEXT: %[[BIT0:.*]] = arith.andi %[[M0]], %{{.*}} : index
// CHECK-NEXT: %[[C8D:.*]] = arith.constant 8 : index
// CHECK-NEXT: %[[DOWN:.*]] = arith.muli %[[BIT0]], %[[C8D]] : index
// CHECK-NEXT: %[[LANE_ROW:.*]] = arith.addi %{{.*}}, %[[DOWN]] : index
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[M1:.*]] = arith.divui %[[MATRIX]], %[[TWO]] : index
// CHECK-NEXT: %[[BIT1:.*]] = arith.andi %[[M1]], %[[ONE]] : index
// CHECK-NEXT: %[[C8A:.*]] = arith.constant 8 : index
// CHECK-NEXT: %[[ACROSS:.*]] = arith.muli %[[BIT1]], %[[C8A]] : index
// CHECK-NEXT: %[[LANE_COL:.*]] = arith.addi %{{.*}}, %[[ACROSS]] : index
// CHECK-NEXT: %[[C8T:.*]] = arith.constant 8 : index
// CHECK-NEXT: arith.divui %[[LANE_ROW]], %[[C8T]] : index
// CHECK: arith.divui %[[LANE_COL]], %{{.*}} : index
// CHECK: %[[SWIZZLED_ST:.*]] = arith.xori %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[LANE_OFFSET:.*]] = arith.subi %[[SWIZZLED_ST]], %[[BASE_ST:.*]] : index
// CHECK-NEXT: %[[S0:.*]] = vector.extract_strided_slice %[[SUM]] {offsets = [0], sizes = [2], strides = [1]} : vector<64xbf16> to vector<2xbf16>
// CHECK-NEXT: %[[B0:.*]] = vector.bitcast %[[S0]] : vector<2xbf16> to vector<1xi32>
// CHECK-NEXT: %[[W0:.*]] = vector.extract %[[B0]][0] : i32 from vector<1xi32>
// CHECK-NEXT: vector.extract_strided_slice %[[SUM]] {offsets = [2], sizes = [2], strides = [1]}
// CHECK-NEXT: vector.bitcast
// CHECK-NEXT: %[[W1:.*]] = vector.extract
// CHECK-NEXT: vector.extract_strided_slice %[[SUM]] {offsets = [4], sizes = [2], strides = [1]}
// CHECK-NEXT: vector.bitcast
// CHECK-NEXT: %[[W2:.*]] = vector.extract
// CHECK-NEXT: vector.extract_strided_slice %[[SUM]] {offsets = [6], sizes = [2], strides = [1]}
// CHECK-NEXT: vector.bitcast
// CHECK-NEXT: %[[W3:.*]] = vector.extract
// CHECK-NEXT: %[[K0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[X0:.*]] = arith.xori %[[LANE_OFFSET]], %[[K0]] : index
// CHECK-NEXT: %[[A0:.*]] = arith.addi %[[BASE_ST]], %[[X0]] : index
// CHECK-NEXT: %[[I0:.*]] = arith.index_cast %[[A0]] : index to i64
// CHECK-NEXT: %[[P0:.*]] = llvm.inttoptr %[[I0]] : i64 to !llvm.ptr<3>
// CHECK-NEXT: nvvm.stmatrix %[[P0]], %[[W0]], %[[W1]], %[[W2]], %[[W3]] {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : !llvm.ptr<3>, i32, i32, i32, i32
// CHECK-NEXT: vector.extract_strided_slice %[[SUM]] {offsets = [8], sizes = [2], strides = [1]}
// CHECK: %[[K1:.*]] = arith.constant 32 : index
// CHECK-NEXT: arith.xori %[[LANE_OFFSET]], %[[K1]] : index
// CHECK: nvvm.stmatrix
// CHECK: %[[K2:.*]] = arith.constant 64 : index
// CHECK-NEXT: arith.xori %[[LANE_OFFSET]], %[[K2]] : index
// CHECK: nvvm.stmatrix
// CHECK: %[[K3:.*]] = arith.constant 96 : index
// CHECK-NEXT: arith.xori %[[LANE_OFFSET]], %[[K3]] : index
// CHECK: nvvm.stmatrix
// CHECK-NEXT: vector.extract_strided_slice %[[SUM]] {offsets = [32], sizes = [2], strides = [1]}
// CHECK: %[[K4:.*]] = arith.constant 8192 : index
// CHECK-NEXT: arith.xori %[[LANE_OFFSET]], %[[K4]] : index
// CHECK-COUNT-4: nvvm.stmatrix
// CHECK-NOT: nvvm.stmatrix
// CHECK-NOT: llvm.store
// CHECK-NOT: mosaic_gpu.
gpu.module @kernels {
  gpu.func @swizzled_smem() kernel {
    %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
    %t = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>>
        with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
    %v = mosaic_gpu.vector_load %t : memref<128x64xbf16, #gpu.address_space<workgroup>> -> vector<128x64xbf16>
    %d = arith.addf %v, %v : vector<128x64xbf16>
    mosaic_gpu.vector_store %d, %t : vector<128x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// Without a swizzle the buffer's alignment to 16 bytes is not known, so a
// store into (8, 8) tiles keeps one 4-byte llvm.store per register pair
// instead of stmatrix.
// CHECK-LABEL: gpu.func @unswizzled_smem_store
// CHECK-NOT: nvvm.stmatrix
// CHECK-COUNT-32: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<3>
// CHECK-NOT: nvvm.stmatrix
// CHECK-NOT: llvm.store
gpu.module @kernels {
  gpu.func @unswizzled_smem_store() kernel {
    %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
    %t = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>>
        with [#mosaic_gpu.tile<[8, 8]>, #mosaic_gpu.swizzle<kNoSwizzle>]
    %c = arith.constant 1.0 : bf16
    %v = vector.broadcast %c : bf16 to vector<128x64xbf16>
    %w = mosaic_gpu.layout_cast %v : vector<128x64xbf16> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
    mosaic_gpu.vector_store %w, %t : vector<128x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// broadcasted_iota in the WGMMA layout: a constant of thread 0's indices
// along the iota dim, plus this thread's offset along that dim. A 64x16
// vector is 4 register vectors: thread 0 holds rows 0, 8, 0, 8 and columns
// 0-1, 0-1, 8-9, 8-9. optimization_barrier passes both iotas' 16 registers
// through one opaque asm statement (each output tied to its input), so the
// sum adds the statement's results, not values LLVM could fold or move.
// CHECK-LABEL: func @iota_and_barrier
// CHECK: %[[X:.*]] = gpu.thread_id x
// CHECK: %[[TID:.*]] = arith.addi %[[X]], %{{.*}} : index
// CHECK: %[[T:.*]] = arith.remui %[[TID]], %{{.*}} : index
// CHECK: %[[ROW_BASE:.*]] = arith.constant dense<[0, 0, 8, 8, 0, 0, 8, 8]> : vector<8xi32>
// CHECK: %[[C16:.*]] = arith.constant 16 : index
// CHECK: %[[ROW_WARP:.*]] = arith.muli %{{.*}}, %[[C16]] : index
// CHECK: %[[ROW0:.*]] = arith.addi %{{.*}}, %[[ROW_WARP]] : index
// CHECK: %[[ROW:.*]] = arith.addi %[[ROW0]], %{{.*}} : index
// CHECK: %[[ROW_I32:.*]] = arith.index_cast %[[ROW]] : index to i32
// CHECK: %[[ROW_SPREAD:.*]] = vector.broadcast %[[ROW_I32]] : i32 to vector<8xi32>
// CHECK: %[[ROWS:.*]] = arith.addi %[[ROW_BASE]], %[[ROW_SPREAD]] : vector<8xi32>
// CHECK: %[[COL_BASE:.*]] = arith.constant dense<[0, 1, 0, 1, 8, 9, 8, 9]> : vector<8xi32>
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[PAIR:.*]] = arith.muli %{{.*}}, %[[C2]] : index
// CHECK: %[[COL:.*]] = arith.addi %{{.*}}, %[[PAIR]] : index
// CHECK: %[[COL_I32:.*]] = arith.index_cast %[[COL]] : index to i32
// CHECK: %[[COL_SPREAD:.*]] = vector.broadcast %[[COL_I32]] : i32 to vector<8xi32>
// CHECK: %[[COLS:.*]] = arith.addi %[[COL_BASE]], %[[COL_SPREAD]] : vector<8xi32>
// CHECK: vector.extract %[[ROWS]][0] : i32 from vector<8xi32>
// CHECK: vector.extract %[[COLS]][7] : i32 from vector<8xi32>
// CHECK: %[[OPAQUE:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=r,{{[=r,]+}}=r,0,1,{{.*}},14,15" {{.*}} -> !llvm.struct<(i32, {{.*}})>
// CHECK: %[[ROWS_OUT:.*]] = vector.from_elements {{.*}} : vector<8xi32>
// CHECK: %[[COLS_OUT:.*]] = vector.from_elements {{.*}} : vector<8xi32>
// CHECK: %[[SUM:.*]] = arith.addi %[[ROWS_OUT]], %[[COLS_OUT]] : vector<8xi32>
// CHECK: vector.extract_strided_slice %[[SUM]] {offsets = [0], sizes = [2], strides = [1]}
// CHECK-NOT: mosaic_gpu
// CHECK: return
#wgmma = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
func.func @iota_and_barrier(%out: memref<64x16xi32>) {
  %rows = mosaic_gpu.broadcasted_iota 0 : vector<64x16xi32>
  %rows_w = mosaic_gpu.layout_cast %rows : vector<64x16xi32> to #wgmma
  %cols = mosaic_gpu.broadcasted_iota 1 : vector<64x16xi32>
  %cols_w = mosaic_gpu.layout_cast %cols : vector<64x16xi32> to #wgmma
  %b:2 = mosaic_gpu.optimization_barrier (%rows_w, %cols_w) : vector<64x16xi32>, vector<64x16xi32>
  %s = arith.addi %b#0, %b#1 : vector<64x16xi32>
  mosaic_gpu.vector_store %s, %out : vector<64x16xi32>, memref<64x16xi32>
  return
}

// -----

// Scalars pass through optimization_barrier too, each as one asm register:
// an index as a 64-bit word, f16 as its 16 bits, i1 widened to 16 bits,
// f32 as is; shared-memory references pass unchanged.
// CHECK-LABEL: func @scalar_barrier
// CHECK-SAME: (%[[I:.*]]: index, %[[H:.*]]: f16, %[[P:.*]]: i1, %[[F:.*]]: f32, %[[OUT:.*]]: memref<4xf32>)
// CHECK: %[[I64:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK: %[[HBITS:.*]] = arith.bitcast %[[H]] : f16 to i16
// CHECK: %[[PBITS:.*]] = arith.extui %[[P]] : i1 to i16
// CHECK: %[[OPAQUE:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=l,=h,=h,=f,0,1,2,3" %[[I64]], %[[HBITS]], %[[PBITS]], %[[F]] : (i64, i16, i16, f32) -> !llvm.struct<(i64, i16, i16, f32)>
// CHECK: %[[I_OUT:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[H_OUT:.*]] = arith.bitcast %{{.*}} : i16 to f16
// CHECK: %[[P_OUT:.*]] = arith.trunci %{{.*}} : i16 to i1
// CHECK: memref.store %{{.*}}, %[[OUT]][%[[I_OUT]]]
func.func @scalar_barrier(%i: index, %h: f16, %p: i1, %f: f32, %out: memref<4xf32>) {
  %b:5 = mosaic_gpu.optimization_barrier (%i, %h, %p, %f, %out) : index, f16, i1, f32, memref<4xf32>
  %hf = arith.extf %b#1 : f16 to f32
  %sel = arith.select %b#2, %hf, %b#3 : f32
  memref.store %sel, %b#4[%b#0] : memref<4xf32>
  return
}

// -----

// A layout that replicates elements gives several threads the same ones:
// WGMMA_ROW holds row r in the 4 lanes of a quad (its last lane digit is
// replicated 4 times). Only the quad's first lane (lane % 4 == 0) stores,
// so that no two threads write one address; loads read every copy.
#row = #mosaic_gpu.TiledLayout<[[64], [16], [8], [1]], warp_dims = [-4], lane_dims = [-2, #mosaic_gpu.Replicated<times = 4>], vector_dim = -1>
// CHECK-LABEL: func @store_replicated_rows
// CHECK: vector.load
// CHECK: vector.load
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c32{{.*}} : index
// CHECK-NEXT: %[[TRUE:.*]] = arith.constant true
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[SHIFTED:.*]] = arith.divui %[[LANE]], %[[C1]] : index
// CHECK: %[[COPY:.*]] = arith.remui %[[SHIFTED]], %[[C4]] : index
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[IS_FIRST:.*]] = arith.cmpi eq, %[[COPY]], %[[C0]] : index
// CHECK: %[[FIRST:.*]] = arith.andi %[[TRUE]], %[[IS_FIRST]] : i1
// CHECK: scf.if %[[FIRST]] {
// CHECK: vector.store
// CHECK: vector.store
// CHECK-NEXT: }
func.func @store_replicated_rows(%in: memref<64xf32>, %out: memref<64xf32>) {
  %v = mosaic_gpu.vector_load %in : memref<64xf32> -> vector<64xf32>
  %rows = mosaic_gpu.layout_cast %v : vector<64xf32> to #row
  mosaic_gpu.vector_store %rows, %out : vector<64xf32>, memref<64xf32>
  return
}

// -----

// LLVM has no 8-bit float type: a truncation to e4m3 converts each register
// pair with cvt.rn.satfinite.e4m3x2.f32, whose i16 form packs its first
// operand high, so the pair's second element goes first.
// CHECK-LABEL: func @truncate_to_e4m3
// CHECK: %[[X0:.*]] = vector.extract %[[REGS:.*]][0] : f32 from vector<64xf32>
// CHECK: %[[X1:.*]] = vector.extract %[[REGS]][1] : f32 from vector<64xf32>
// CHECK: %[[PAIR:.*]] = nvvm.convert.f32x2.to.f8x2 %[[X1]], %[[X0]] {rnd = #nvvm.fp_rnd_mode<rn>, sat = #nvvm.sat_mode<satfinite>} : vector<2xi8>(f8E4M3FN)
// CHECK: arith.bitcast %[[PAIR]] : vector<2xi8> to vector<2xf8E4M3FN>
// CHECK-NOT: arith.truncf
func.func @truncate_to_e4m3(%in: memref<128x64xf32>, %out: memref<128x64xf8E4M3FN>) {
  %v = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>
  %w = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  %t = arith.truncf %w : vector<128x64xf32> to vector<128x64xf8E4M3FN>
  mosaic_gpu.vector_store %t, %out : vector<128x64xf8E4M3FN>, memref<128x64xf8E4M3FN>
  return
}

// -----

// A bounded store (`valid`): the edge tile of a 100x37 C. Each element is
// stored on its own (no pairs: a pair may straddle the edge), under the
// check that its row and column are below the extents.
#wgmma = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
// CHECK-LABEL: func @bounded_store
// CHECK-SAME: %[[ROWS:[a-z0-9]+]]: index, %[[COLS:[a-z0-9]+]]: index)
// CHECK: %[[IN_ROWS:.*]] = arith.cmpi slt, %[[ROW:.*]], %[[ROWS]] : index
// CHECK: %[[ROW_OK:.*]] = arith.andi %{{.*}}, %[[IN_ROWS]] : i1
// CHECK: %[[IN_COLS:.*]] = arith.cmpi slt, %[[COL:.*]], %[[COLS]] : index
// CHECK: %[[INSIDE:.*]] = arith.andi %[[ROW_OK]], %[[IN_COLS]] : i1
// CHECK: scf.if %[[INSIDE]] {
// CHECK-NEXT: vector.store %{{.*}}, %{{.*}}[%[[ROW]], %[[COL]]] : memref<64x16xf32, strided<[37, 1], offset: ?>>, vector<1xf32>
func.func @bounded_store(%in: memref<64x16xf32>, %out: memref<100x37xf32>, %i: index, %j: index, %rows: index, %cols: index) {
  %v = mosaic_gpu.vector_load %in : memref<64x16xf32> -> vector<64x16xf32>
  %w = mosaic_gpu.layout_cast %v : vector<64x16xf32> to #wgmma
  %edge = memref.subview %out[%i, %j] [64, 16] [1, 1] : memref<100x37xf32> to memref<64x16xf32, strided<[37, 1], offset: ?>>
  mosaic_gpu.vector_store %w, %edge valid [%rows, %cols] : vector<64x16xf32>, memref<64x16xf32, strided<[37, 1], offset: ?>>
  return
}
