// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms -mosaic-gpu-lower | FileCheck %s

// device_id and device_count load the header of the collective table, a
// parameter added after the kernel's own: u32s at bytes 0 and 4, once at
// the kernel's entry.
// CHECK-LABEL: gpu.func @ids
// CHECK-SAME: (%{{.*}}: memref<128xi32> {llvm.align = 16 : i64}, %[[TABLE:.*]]: !llvm.ptr<1>) kernel
// CHECK-SAME: mosaic_gpu.collective_table = 1 : i64
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[COUNT_ADDR:.*]] = llvm.getelementptr %[[TABLE]][%[[C4]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-DAG: %[[COUNT:.*]] = llvm.load %[[COUNT_ADDR]] invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[ID_ADDR:.*]] = llvm.getelementptr %[[TABLE]][%[[C0]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK-DAG: %[[ID:.*]] = llvm.load %[[ID_ADDR]] invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: arith.addi %[[ID]], %[[COUNT]] : i32
// CHECK-NOT: mosaic_gpu.device
gpu.module @kernels {
  gpu.func @ids(%out: memref<128xi32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    %id = mosaic_gpu.device_id : i32
    %n = mosaic_gpu.device_count : i32
    %sum = arith.addi %id, %n : i32
    %v = vector.broadcast %sum : i32 to vector<128xi32>
    mosaic_gpu.vector_store %v, %out : vector<128xi32>, memref<128xi32>
    gpu.return
  }
}

// -----

// remote_ref of the second symmetric argument (s = 1) on device %d is the
// address peers[1][%d] at 16 + 8 * (1 * D + d), wrapped as a memref
// descriptor of the argument's type; the vector store writes through it.
// CHECK-LABEL: gpu.func @remote_vector_store
// CHECK-SAME: (%[[A:.*]]: memref<128xf32> {llvm.align = 16 : i64, mosaic_gpu.symmetric}, %[[B:.*]]: memref<128xf32> {llvm.align = 16 : i64, mosaic_gpu.symmetric}, %[[D:.*]]: i32, %[[TABLE:.*]]: !llvm.ptr<1>) kernel
// CHECK: %[[COUNT:.*]] = llvm.load %{{.*}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: %[[ROW:.*]] = arith.constant 1 : i64
// CHECK: %[[N64:.*]] = arith.extui %[[COUNT]] : i32 to i64
// CHECK: %[[ROWD:.*]] = arith.muli %[[ROW]], %[[N64]] : i64
// CHECK: %[[D64:.*]] = arith.extui %[[D]] : i32 to i64
// CHECK: %[[ENTRY:.*]] = arith.addi %[[ROWD]], %[[D64]] : i64
// CHECK: %[[C8:.*]] = arith.constant 8 : i64
// CHECK: %[[BYTES:.*]] = arith.muli %[[ENTRY]], %[[C8]] : i64
// CHECK: %[[OFFSET:.*]] = arith.addi %{{.*}}, %[[BYTES]] : i64
// CHECK: %[[SLOT:.*]] = llvm.getelementptr %[[TABLE]][%[[OFFSET]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK: %[[PEER:.*]] = llvm.load %[[SLOT]] invariant {alignment = 8 : i64} : !llvm.ptr<1> -> i64
// CHECK: %[[PTR:.*]] = llvm.inttoptr %[[PEER]] : i64 to !llvm.ptr
// CHECK: llvm.insertvalue %[[PTR]], %{{.*}}[0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK: %[[VIEW:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<128xf32>
// CHECK: vector.store %{{.*}}, %[[VIEW]]
// CHECK-NOT: mosaic_gpu.remote_ref
gpu.module @kernels {
  gpu.func @remote_vector_store(%a: memref<128xf32> {mosaic_gpu.symmetric},
                                %b: memref<128xf32> {mosaic_gpu.symmetric},
                                %d: i32) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    %v = mosaic_gpu.vector_load %a : memref<128xf32> -> vector<128xf32>
    %peer = mosaic_gpu.remote_ref %b, %d : memref<128xf32>
    mosaic_gpu.vector_store %v, %peer : vector<128xf32>, memref<128xf32>
    gpu.return
  }
}

// -----

// A vector load reads through the remote view of the first symmetric
// argument (s = 0).
// CHECK-LABEL: gpu.func @remote_vector_load
// CHECK: %[[ROW:.*]] = arith.constant 0 : i64
// CHECK: %[[PEER:.*]] = llvm.load %{{.*}} invariant {alignment = 8 : i64} : !llvm.ptr<1> -> i64
// CHECK: %[[PTR:.*]] = llvm.inttoptr %[[PEER]] : i64 to !llvm.ptr
// CHECK: %[[VIEW:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<128xf32>
// CHECK: vector.load %[[VIEW]]
// CHECK: vector.store %{{.*}}, %arg1
gpu.module @kernels {
  gpu.func @remote_vector_load(%a: memref<128xf32> {mosaic_gpu.symmetric},
                               %out: memref<128xf32>, %d: i32) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    %peer = mosaic_gpu.remote_ref %a, %d : memref<128xf32>
    %v = mosaic_gpu.vector_load %peer : memref<128xf32> -> vector<128xf32>
    mosaic_gpu.vector_store %v, %out : vector<128xf32>, memref<128xf32>
    gpu.return
  }
}

// -----

// A signal synchronizes the warpgroup, then its leader waits for its TMA
// stores, fences the async proxy and adds with release at system scope, at
// element 4 * 1 + 2 of the peer's copy (peers[0][%d]).
// CHECK-LABEL: gpu.func @signal
// CHECK: %[[PEER:.*]] = llvm.load %{{.*}} invariant {alignment = 8 : i64} : !llvm.ptr<1> -> i64
// CHECK: %[[ADDR:.*]] = arith.addi %[[PEER]], %{{.*}} : i64
// CHECK: %[[GENERIC:.*]] = llvm.inttoptr %[[ADDR]] : i64 to !llvm.ptr
// CHECK: %[[GLOBAL:.*]] = llvm.addrspacecast %[[GENERIC]] : !llvm.ptr to !llvm.ptr<1>
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK-NEXT: nvvm.inline_ptx "red.release.sys.global.add.u32 [$0], $1;" ro(%[[GLOBAL]], %{{.*}} : !llvm.ptr<1>, i32)
// CHECK-NEXT: }
gpu.module @kernels {
  gpu.func @signal(%sems: memref<2x4xi32> {mosaic_gpu.symmetric}, %d: i32) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    mosaic_gpu.semaphore_signal %sems[%c1, %c2], %c1 on %d : memref<2x4xi32>
    gpu.return
  }
}

// -----

// A wait polls the local semaphore with acquire loads in the leader, then
// subtracts the count, fences the async proxy, and synchronizes the
// warpgroup.
// CHECK-LABEL: gpu.func @wait
// CHECK-SAME: (%[[SEMS:.*]]: memref<4xi32> {llvm.align = 16 : i64, mosaic_gpu.symmetric}, %[[I:.*]]: i32, %[[COUNT:.*]]: i32, %{{.*}}: !llvm.ptr<1>) kernel
// CHECK: memref.extract_aligned_pointer_as_index %[[SEMS]]
// CHECK: %[[GLOBAL:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr to !llvm.ptr<1>
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: scf.while : () -> () {
// CHECK-NEXT: %[[V:.*]] = nvvm.inline_ptx "ld.acquire.sys.global.u32 $0, [$1];" ro(%[[GLOBAL]] : !llvm.ptr<1>) -> i32
// CHECK-NEXT: %[[SHORT:.*]] = arith.cmpi ult, %[[V]], %[[COUNT]] : i32
// CHECK-NEXT: scf.condition(%[[SHORT]])
// CHECK: %[[NEG:.*]] = arith.subi %{{.*}}, %[[COUNT]] : i32
// CHECK-NEXT: nvvm.inline_ptx "red.relaxed.sys.global.add.u32 [$0], $1;" ro(%[[GLOBAL]], %[[NEG]] : !llvm.ptr<1>, i32)
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
gpu.module @kernels {
  gpu.func @wait(%sems: memref<4xi32> {mosaic_gpu.symmetric}, %i: i32, %count: i32) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    mosaic_gpu.semaphore_wait %sems[%i], %count : memref<4xi32>
    gpu.return
  }
}

// -----

// TMA through remote views uses the peer tensor maps in the table
// (maps[p][d] at tensor_maps_offset + 128 * (p * D + d), passed to TMA as a
// generic address); the local store's map is a by-value parameter, inserted
// before the table, which stays last. Peer maps name the table's parameter;
// the load and the store of the same box on the remote view share one.
// CHECK-LABEL: gpu.func @remote_tma
// CHECK-SAME: (%{{.*}}: memref<128x64xbf16> {llvm.align = 16 : i64, mosaic_gpu.symmetric}, %{{.*}}: memref<128x64xbf16> {llvm.align = 16 : i64}, %[[D:.*]]: i32, %[[LOCAL_MAP:.*]]: !llvm.ptr, %[[TABLE:.*]]: !llvm.ptr<1>) kernel
// CHECK-SAME: mosaic_gpu.collective_table = 4 : i64
// CHECK-SAME: mosaic_gpu.tensor_maps = [{{{.*}}buffer = 0 : i64{{.*}}index = 0 : i64{{.*}}parameter = 4 : i64, peer, {{.*}}}, {{{.*}}buffer = 1 : i64{{.*}}index = 1 : i64{{.*}}parameter = 3 : i64, rank{{.*}}}]
// CHECK: %[[MAPS:.*]] = llvm.load %{{.*}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// CHECK: %[[BASE:.*]] = arith.extui %[[MAPS]] : i32 to i64
// CHECK: %[[C128:.*]] = arith.constant 128 : i64
// CHECK: %[[OFFSET:.*]] = arith.addi %[[BASE]], %{{.*}} : i64
// CHECK: %[[SLOT:.*]] = llvm.getelementptr %[[TABLE]][%[[OFFSET]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i8
// CHECK: %[[MAP:.*]] = llvm.addrspacecast %[[SLOT]] : !llvm.ptr<1> to !llvm.ptr
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[MAP]],
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %[[LOCAL_MAP]],
// CHECK: %[[MAP2:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr<1> to !llvm.ptr
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %[[MAP2]],
!smem_tile = memref<128x64xbf16, #gpu.address_space<workgroup>>
!barriers = memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
!barrier = memref<!mosaic_gpu.barrier, strided<[], offset: 0>, #gpu.address_space<workgroup>>
gpu.module @kernels {
  gpu.func @remote_tma(%x: memref<128x64xbf16> {mosaic_gpu.symmetric},
                       %out: memref<128x64xbf16>, %d: i32) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    %c0 = arith.constant 0 : i32
    %false = arith.constant false
    %tile = mosaic_gpu.slice_smem 0 : !smem_tile
    %bars = mosaic_gpu.slice_smem 16384 : !barriers
    mosaic_gpu.initialize_barrier %bars, arrival_count = 1, num_barriers = 1 : !barriers
    %bar = memref.subview %bars[0] [1] [1] : !barriers to !barrier
    %peer = mosaic_gpu.remote_ref %x, %d : memref<128x64xbf16>
    mosaic_gpu.arrive_expect_tx %bar, 16384 : !barrier
    mosaic_gpu.async_load %peer[%c0, %c0] to %tile, %bar slice_lengths [128, 64]
        : memref<128x64xbf16>, !smem_tile, !barrier
    mosaic_gpu.wait %bar, %false : !barrier
    mosaic_gpu.async_store %tile to %out[%c0, %c0] slice_lengths [128, 64]
        : !smem_tile, memref<128x64xbf16>
    mosaic_gpu.async_store %tile to %peer[%c0, %c0] slice_lengths [128, 64]
        : !smem_tile, memref<128x64xbf16>
    gpu.return
  }
}
