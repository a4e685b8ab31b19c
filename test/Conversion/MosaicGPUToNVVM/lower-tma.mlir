// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms -mosaic-gpu-lower | FileCheck %s

// TMA loads into a 128-byte-swizzled buffer tiled (8, 64). After
// apply-transforms the global operand is the tiled view
// memref<512x1x8x64xbf16, strided<[512, 64, 64, 1]>> of the 4096x64 argument
// and the box is [16, 1, 8, 64] tiles. The tensor map lists dims innermost
// first:
//   global_dims    = [64, 8, 1, 512]      (the view's shape, reversed)
//   global_strides = [128, 128, 1024]     (strides of dims 2, 1, 0 in bytes:
//                                          64 * 2, 64 * 2, 512 * 2; the
//                                          innermost stride is implicit)
//   box_dims       = [64, 8, 1, 16]       (slice_lengths, reversed)
//   swizzle        = 128
// It becomes one `!llvm.ptr` kernel parameter, appended after the others;
// both loads use the same view and box, so they share it.
//
// arrive_expect_tx: every thread arrives, the warpgroup leader (thread 0 of
// the warpgroup) expects the bytes and the others 0. The loads are issued by
// the leader only (scf.if), into the destination cast to the cluster's
// shared window (address space 7), with coordinates innermost first; the
// second load's predicate is and-ed with the leader test.
// CHECK-LABEL: gpu.func @load
// CHECK-SAME: (%[[IN:.*]]: memref<4096x64xbf16> {llvm.align = 16 : i64}, %{{.*}}: i32, %[[P:.*]]: i1, %[[MAP:.*]]: !llvm.ptr) kernel
// CHECK-SAME: mosaic_gpu.tensor_maps = [{box_dims = array<i64: 64, 8, 1, 16>, buffer = 0 : i64, element_strides = array<i64: 1, 1, 1, 1>, element_type = "bf16", global_dims = array<i64: 64, 8, 1, 512>, global_strides = array<i64: 128, 128, 1024>, index = 0 : i64, l2_promotion = "128B", parameter = 3 : i64, rank = 4 : i64, swizzle = 128 : i64}]}
// CHECK: %[[X:.*]] = gpu.thread_id x
// CHECK: %[[TID:.*]] = arith.addi %[[X]], %{{.*}} : index
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[T:.*]] = arith.remui %[[TID]], %[[C128]] : index
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[LEADER:.*]] = arith.cmpi eq, %[[T]], %[[C0]] : index
// CHECK: %[[ROW:.*]] = arith.muli
// CHECK: %[[A:.*]] = memref.view %{{.*}} to memref<16x1x8x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[BAR:.*]] = memref.view %{{.*}} to memref<i64, #gpu.address_space<workgroup>>
// CHECK: %[[BYTES:.*]] = arith.constant 32768 : i32
// CHECK: %[[NONE:.*]] = arith.constant 0 : i32
// CHECK: %[[EXPECT:.*]] = arith.select %[[LEADER]], %[[BYTES]], %[[NONE]] : i32
// CHECK: memref.extract_strided_metadata %[[BAR]]
// CHECK: %[[BAR_PTR:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK: nvvm.mbarrier.arrive.expect_tx %[[BAR_PTR]], %[[EXPECT]] : !llvm.ptr<3>, i32
// CHECK: %[[EXPANDED:.*]] = memref.expand_shape %[[IN]] {{\[}}[0, 1], [2, 3]] output_shape [512, 8, 1, 64]
// CHECK: memref.transpose %[[EXPANDED]] (d0, d1, d2, d3) -> (d0, d2, d1, d3) : memref<512x8x1x64xbf16> to memref<512x1x8x64xbf16, strided<[512, 64, 64, 1]>>
// CHECK: %[[C8:.*]] = arith.constant 8 : i32
// CHECK: %[[ROW_TILE:.*]] = arith.divui %[[ROW]], %[[C8]] : i32
// CHECK: %[[COL_TILE:.*]] = arith.divui %{{.*}}, %{{.*}} : i32
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: memref.extract_strided_metadata %[[A]]
// CHECK: %[[A_PTR:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK: memref.extract_strided_metadata %[[BAR]]
// CHECK: %[[BAR_PTR2:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK: %[[A_CLUSTER:.*]] = llvm.addrspacecast %[[A_PTR]] : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK: scf.if %[[LEADER]] {
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[A_CLUSTER]], %[[MAP]], %[[BAR_PTR2]], box[%[[ZERO]], %[[ZERO]], %[[COL_TILE]], %[[ROW_TILE]]] : !llvm.ptr<7>, !llvm.ptr
// CHECK-NEXT: }
// CHECK: %[[B_CLUSTER:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK: %[[GUARD:.*]] = arith.andi %[[LEADER]], %[[P]] : i1
// CHECK: scf.if %[[GUARD]] {
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[B_CLUSTER]], %[[MAP]], %{{.*}}, box[{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK-NEXT: }
// CHECK-NOT: mosaic_gpu.
// CHECK: gpu.return
gpu.module @kernels {
  gpu.func @load(%in: memref<4096x64xbf16>, %block: i32, %p: i1) kernel {
    %c0 = arith.constant 0 : i32
    %c128 = arith.constant 128 : i32
    %row = arith.muli %block, %c128 : i32
    %a = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
    %b = mosaic_gpu.slice_smem 16384 : memref<128x64xbf16, #gpu.address_space<workgroup>>
    %bar = mosaic_gpu.slice_smem 32768 : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    %at = mosaic_gpu.with_transforms %a : memref<128x64xbf16, #gpu.address_space<workgroup>>
        with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
    %bt = mosaic_gpu.with_transforms %b : memref<128x64xbf16, #gpu.address_space<workgroup>>
        with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
    mosaic_gpu.arrive_expect_tx %bar, 32768 : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    mosaic_gpu.async_load %in[%row, %c0] to %at, %bar slice_lengths [128, 64]
        : memref<4096x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    mosaic_gpu.async_load %in[%c0, %c0] to %bt, %bar if %p slice_lengths [128, 64]
        : memref<4096x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// TMA stores: the threads' shared-memory writes are made visible to the
// async proxy (fence.proxy async_shared) and the warpgroup synchronizes on
// named barrier 1 + warpgroup index over its 128 threads; the leader issues
// the store. A committed store (the default) closes a bulk group and waits
// until the group has read shared memory, then the warpgroup synchronizes
// again so the buffer may be reused. A reduction store without
// commit_group does neither. Each destination argument gets its own
// tensor map, in the order the transfers appear.
// CHECK-LABEL: gpu.func @store
// CHECK-SAME: (%{{.*}}: memref<4096x64xbf16> {llvm.align = 16 : i64}, %{{.*}}: memref<4096x64xbf16> {llvm.align = 16 : i64}, %{{.*}}: i32, %[[OUT_MAP:.*]]: !llvm.ptr, %[[SUM_MAP:.*]]: !llvm.ptr) kernel
// CHECK-SAME: mosaic_gpu.tensor_maps = [{box_dims{{.*}}buffer = 0 : i64{{.*}}index = 0 : i64, l2_promotion = "128B", parameter = 3 : i64{{.*}}}, {box_dims{{.*}}buffer = 1 : i64{{.*}}index = 1 : i64, l2_promotion = "128B", parameter = 4 : i64{{.*}}}]}
// CHECK: %[[X:.*]] = gpu.thread_id x
// CHECK: %[[TID:.*]] = arith.addi %[[X]], %{{.*}} : index
// CHECK: %[[LEADER:.*]] = arith.cmpi eq
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[GROUP:.*]] = arith.divui %[[TID]], %[[C128]] : index
// CHECK: %[[SRC:.*]] = memref.view %{{.*}} to memref<16x1x8x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[ID:.*]] = arith.addi %[[GROUP]], %[[C1]] : index
// CHECK: %[[ID32:.*]] = arith.index_cast %[[ID]] : index to i32
// CHECK: %[[THREADS:.*]] = arith.constant 128 : i32
// CHECK: nvvm.barrier id = %[[ID32]] number_of_threads = %[[THREADS]]
// CHECK: memref.extract_strided_metadata %[[SRC]]
// CHECK: %[[SRC_PTR:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
// CHECK: scf.if %[[LEADER]] {
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.global.shared.cta %[[OUT_MAP]], %[[SRC_PTR]], box[{{.*}}] : !llvm.ptr, <3>
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: }
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// The reduction store.
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK: scf.if %[[LEADER]] {
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.reduce %[[SUM_MAP]], %{{.*}}, box[{{.*}}] {redKind = #nvvm.tma_redux_kind<add>} : !llvm.ptr, <3>
// CHECK-NEXT: }
// CHECK-NOT: nvvm.barrier
// CHECK-NOT: nvvm.cp.async.bulk.commit.group
// CHECK: gpu.return
gpu.module @kernels {
  gpu.func @store(%out: memref<4096x64xbf16>, %sum: memref<4096x64xbf16>, %block: i32) kernel {
    %c0 = arith.constant 0 : i32
    %c128 = arith.constant 128 : i32
    %row = arith.muli %block, %c128 : i32
    %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
    %t = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>>
        with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
    mosaic_gpu.async_store %t to %out[%row, %c0] slice_lengths [128, 64]
        : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<4096x64xbf16>
    mosaic_gpu.async_store %t to %sum[%row, %c0] slice_lengths [128, 64]
        {commit_group = false, reduction_op = #mosaic_gpu.tma_reduction<add>}
        : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<4096x64xbf16>
    gpu.return
  }
}

// -----

// Prefetches read the untiled global buffer (no swizzle): a rank-2 map with
// global_dims [64, 4096], a 128-byte row stride and the box reversed. Two
// different boxes of one argument are two tensor maps. Coordinates are
// innermost first: (column, row).
// CHECK-LABEL: gpu.func @prefetch
// CHECK-SAME: (%{{.*}}: memref<4096x64xbf16> {llvm.align = 16 : i64}, %[[ROW:.*]]: i32, %[[P:.*]]: i1, %[[BIG:.*]]: !llvm.ptr, %[[SMALL:.*]]: !llvm.ptr) kernel
// CHECK-SAME: mosaic_gpu.tensor_maps = [{box_dims = array<i64: 64, 128>, buffer = 0 : i64, element_strides = array<i64: 1, 1>, element_type = "bf16", global_dims = array<i64: 64, 4096>, global_strides = array<i64: 128>, index = 0 : i64, l2_promotion = "128B", parameter = 3 : i64, rank = 2 : i64, swizzle = 0 : i64}, {box_dims = array<i64: 64, 64>, {{.*}}index = 1 : i64, l2_promotion = "128B", parameter = 4 : i64, rank = 2 : i64, swizzle = 0 : i64}]}
// CHECK: %[[LEADER:.*]] = arith.cmpi eq
// CHECK: %[[COL:.*]] = arith.constant 0 : i32
// CHECK: scf.if %[[LEADER]] {
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.prefetch %[[BIG]], box[%[[COL]], %[[ROW]]] : !llvm.ptr
// CHECK-NEXT: }
// CHECK: %[[GUARD:.*]] = arith.andi %[[LEADER]], %[[P]] : i1
// CHECK: scf.if %[[GUARD]] {
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.prefetch %[[SMALL]], box[%[[COL]], %[[ROW]]] : !llvm.ptr
// CHECK-NEXT: }
gpu.module @kernels {
  gpu.func @prefetch(%in: memref<4096x64xbf16>, %row: i32, %p: i1) kernel {
    %c0 = arith.constant 0 : i32
    mosaic_gpu.async_prefetch %in[%row, %c0] slice_lengths [128, 64] : memref<4096x64xbf16>
    mosaic_gpu.async_prefetch %in[%row, %c0] if %p slice_lengths [64, 64] : memref<4096x64xbf16>
    gpu.return
  }
}

// -----

// assume_multiple tells inference and tiling that a dynamic row index is
// tile-aligned; once they have used it, it lowers to its operand.
// CHECK-LABEL: gpu.func @dynamic_rows
// CHECK-NOT: mosaic_gpu.assume_multiple
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
gpu.module @kernels {
  gpu.func @dynamic_rows(%in: memref<4096x64xbf16>, %row: i32) kernel {
    %c0 = arith.constant 0 : i32
    %r = mosaic_gpu.assume_multiple %row, 128 : i32
    %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
    %bar = mosaic_gpu.slice_smem 16384 : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    %t = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>>
        with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
    mosaic_gpu.arrive_expect_tx %bar, 16384 : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    mosaic_gpu.async_load %in[%r, %c0] to %t, %bar slice_lengths [128, 64]
        : memref<4096x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    gpu.return
  }
}


// -----

// A multicast load in a 2x1x1 cluster, collective over x: each block loads
// half of the 128-row box (8 of its 16 tile rows; the tensor map's box is
// [64, 8, 1, 8]) at row tile + 8 * rank, into the matching half of the
// buffer (+ 8192 bytes * rank), and multicasts it to both blocks (mask
// 0b11 shifted by the blocks' base rank). Barrier initialization then
// synchronizes the whole cluster, since peers complete on these barriers.
// CHECK-LABEL: gpu.func @multicast
// CHECK-SAME: mosaic_gpu.tensor_maps = [{box_dims = array<i64: 64, 8, 1, 8>
// CHECK: nvvm.fence.mbarrier.init
// CHECK-NEXT: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// CHECK: %[[X:.*]] = gpu.cluster_block_id x
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK: %[[MASK:.*]] = arith.shli %[[C3]], %{{.*}} : index
// CHECK: %[[MASK16:.*]] = arith.index_cast %[[MASK]] : index to i16
// CHECK: %[[C8:.*]] = arith.constant 8 : i32
// CHECK: arith.muli %{{.*}}, %[[C8]] : i32
// CHECK: %[[HALF:.*]] = arith.constant 8192 : i64
// CHECK: %[[SHIFT:.*]] = arith.muli %{{.*}}, %[[HALF]] : i64
// CHECK: llvm.getelementptr %{{.*}}[%[[SHIFT]]] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, i8
// CHECK: scf.if
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} multicast_mask = %[[MASK16]]
gpu.module @kernels {
  gpu.func @multicast(%in: memref<4096x64xbf16>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 2, 1, 1>,
                  mosaic_gpu.cluster = array<i32: 2, 1, 1>} {
    %c0 = arith.constant 0 : i32
    %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
    %bars = mosaic_gpu.slice_smem 16384 : memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    mosaic_gpu.initialize_barrier %bars, arrival_count = 1, num_barriers = 1 : memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    %bar = memref.subview %bars[0] [1] [1] : memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>> to memref<!mosaic_gpu.barrier, strided<[]>, #gpu.address_space<workgroup>>
    %t = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>>
        with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
    mosaic_gpu.arrive_expect_tx %bar, 16384 : memref<!mosaic_gpu.barrier, strided<[]>, #gpu.address_space<workgroup>>
    mosaic_gpu.async_load %in[%c0, %c0] to %t, %bar slice_lengths [128, 64] {collective = [#mosaic_gpu.dim<x>]}
        : memref<4096x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, strided<[]>, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// Reductions. `cp.reduce.async.bulk.tensor` has no type suffix: its .redOp
// is min for smin and umin alike, and the tensor map's data type says how
// the elements compare. A reduction's map names it (`data_type`): int32 or
// int64 for smin and smax, uint32 or uint64 for umin, umax, inc, dec and
// the bitwise ops and for 64-bit add (PTX has add .u64 only), the float
// type for floats. A copy's map names none (TMA only moves its bits), so a
// copy and reductions of one buffer with one box use different maps, and
// bf16 max and add share one.
// CHECK-LABEL: gpu.func @reductions
// CHECK-SAME: mosaic_gpu.tensor_maps = [
// CHECK-SAME: {box_dims = array<i64: 32, 128>, buffer = 0 : i64, data_type = "int32", {{.*}}element_type = "i32", {{.*}}index = 0 : i64
// CHECK-SAME: {box_dims = array<i64: 32, 128>, buffer = 0 : i64, data_type = "uint32", {{.*}}element_type = "i32", {{.*}}index = 1 : i64
// CHECK-SAME: {box_dims = array<i64: 32, 128>, buffer = 0 : i64, element_strides = array<i64: 1, 1>, element_type = "i32", {{.*}}index = 2 : i64
// CHECK-SAME: {box_dims = array<i64: 32, 128>, buffer = 1 : i64, data_type = "uint32", {{.*}}element_type = "i32", {{.*}}index = 3 : i64
// CHECK-SAME: {box_dims = array<i64: 32, 128>, buffer = 1 : i64, data_type = "int32", {{.*}}element_type = "i32", {{.*}}index = 4 : i64
// CHECK-SAME: {box_dims = array<i64: 16, 128>, buffer = 2 : i64, data_type = "uint64", {{.*}}element_type = "i64", {{.*}}index = 5 : i64
// CHECK-SAME: {box_dims = array<i64: 16, 128>, buffer = 2 : i64, data_type = "int64", {{.*}}element_type = "i64", {{.*}}index = 6 : i64
// CHECK-SAME: {box_dims = array<i64: 64, 128>, buffer = 3 : i64, data_type = "bfloat16", {{.*}}element_type = "bf16", {{.*}}index = 7 : i64, l2_promotion = "128B", parameter = 11 : i64, rank = 2 : i64, swizzle = 0 : i64}]}
// CHECK: nvvm.cp.async.bulk.tensor.reduce %{{.*}}, %{{.*}}, box[{{.*}}] {redKind = #nvvm.tma_redux_kind<min>}
// CHECK: nvvm.cp.async.bulk.tensor.reduce %{{.*}}, %{{.*}}, box[{{.*}}] {redKind = #nvvm.tma_redux_kind<min>}
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta
// CHECK: nvvm.cp.async.bulk.tensor.reduce %{{.*}}, %{{.*}}, box[{{.*}}] {redKind = #nvvm.tma_redux_kind<inc>}
// CHECK: nvvm.cp.async.bulk.tensor.reduce %{{.*}}, %{{.*}}, box[{{.*}}] {redKind = #nvvm.tma_redux_kind<max>}
// CHECK: nvvm.cp.async.bulk.tensor.reduce %{{.*}}, %{{.*}}, box[{{.*}}] {redKind = #nvvm.tma_redux_kind<add>}
// CHECK: nvvm.cp.async.bulk.tensor.reduce %{{.*}}, %{{.*}}, box[{{.*}}] {redKind = #nvvm.tma_redux_kind<max>}
// CHECK: nvvm.cp.async.bulk.tensor.reduce %{{.*}}, %{{.*}}, box[{{.*}}] {redKind = #nvvm.tma_redux_kind<max>}
// CHECK: nvvm.cp.async.bulk.tensor.reduce %{{.*}}, %{{.*}}, box[{{.*}}] {redKind = #nvvm.tma_redux_kind<add>}
gpu.module @kernels {
  gpu.func @reductions(%a: memref<256x32xi32>, %b: memref<256x32xi32>,
                       %c: memref<256x16xi64>, %d: memref<256x64xbf16>) kernel {
    %c0 = arith.constant 0 : i32
    %s = mosaic_gpu.slice_smem 0 : memref<128x32xi32, #gpu.address_space<workgroup>>
    %l = mosaic_gpu.slice_smem 16384 : memref<128x16xi64, #gpu.address_space<workgroup>>
    %h = mosaic_gpu.slice_smem 32768 : memref<128x64xbf16, #gpu.address_space<workgroup>>
    mosaic_gpu.async_store %s to %a[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<smin>}
        : memref<128x32xi32, #gpu.address_space<workgroup>>, memref<256x32xi32>
    mosaic_gpu.async_store %s to %a[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<umin>}
        : memref<128x32xi32, #gpu.address_space<workgroup>>, memref<256x32xi32>
    mosaic_gpu.async_store %s to %a[%c0, %c0] slice_lengths [128, 32]
        : memref<128x32xi32, #gpu.address_space<workgroup>>, memref<256x32xi32>
    mosaic_gpu.async_store %s to %b[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<inc>}
        : memref<128x32xi32, #gpu.address_space<workgroup>>, memref<256x32xi32>
    mosaic_gpu.async_store %s to %b[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<smax>}
        : memref<128x32xi32, #gpu.address_space<workgroup>>, memref<256x32xi32>
    mosaic_gpu.async_store %l to %c[%c0, %c0] slice_lengths [128, 16]
        {reduction_op = #mosaic_gpu.tma_reduction<add>}
        : memref<128x16xi64, #gpu.address_space<workgroup>>, memref<256x16xi64>
    mosaic_gpu.async_store %l to %c[%c0, %c0] slice_lengths [128, 16]
        {reduction_op = #mosaic_gpu.tma_reduction<smax>}
        : memref<128x16xi64, #gpu.address_space<workgroup>>, memref<256x16xi64>
    mosaic_gpu.async_store %h to %d[%c0, %c0] slice_lengths [128, 64]
        {reduction_op = #mosaic_gpu.tma_reduction<max>}
        : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<256x64xbf16>
    mosaic_gpu.async_store %h to %d[%c0, %c0] slice_lengths [128, 64]
        {reduction_op = #mosaic_gpu.tma_reduction<add>}
        : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<256x64xbf16>
    gpu.return
  }
}

// -----

// async_store_wait waits in the leader for the store groups to have read
// shared memory ({read}); with `complete`, for their writes to global memory
// too (no {read}). Either way the warpgroup synchronizes after.
// CHECK-LABEL: gpu.func @store_waits
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 1 {read}
// CHECK-NEXT: }
// CHECK: nvvm.barrier id
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0{{$}}
// CHECK-NEXT: }
// CHECK: nvvm.barrier id
gpu.module @kernels {
  gpu.func @store_waits() kernel {
    mosaic_gpu.async_store_wait 1
    mosaic_gpu.async_store_wait 0 complete
    gpu.return
  }
}
