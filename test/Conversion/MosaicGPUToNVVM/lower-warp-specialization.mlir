// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms -mosaic-gpu-lower -verify-diagnostics | FileCheck %s

// The role ops: the warpgroup index is lane 0's, broadcast with
// shfl.sync.idx so that ptxas sees branches on it as warp-uniform;
// set_max_registers is setmaxnreg.
// CHECK-LABEL: gpu.func @roles
// CHECK: %[[LINEAR:.*]] = gpu.thread_id x
// CHECK: %[[WG:.*]] = arith.divui %[[LINEAR]], %{{.*}} : index
// CHECK: %[[WG32:.*]] = arith.index_cast %[[WG]] : index to i32
// CHECK: %[[UNIFORM:.*]] = nvvm.shfl.sync idx %{{.*}}, %[[WG32]], %{{.*}}, %{{.*}} : i32 -> i32
// CHECK: %[[ROLE:.*]] = arith.index_cast %[[UNIFORM]] : i32 to index
// CHECK: arith.cmpi eq, %[[ROLE]]
// CHECK: scf.if
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: } else {
// CHECK: nvvm.setmaxregister increase 232
gpu.module @kernels {
  gpu.func @roles() kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    %c0 = arith.constant 0 : index
    %wg = mosaic_gpu.warpgroup_id : index
    %producer = arith.cmpi eq, %wg, %c0 : index
    scf.if %producer {
      mosaic_gpu.set_max_registers decrease 40
    } else {
      mosaic_gpu.set_max_registers increase 232
    }
    gpu.return
  }
}

// -----

// An async wgmma commits its group and returns without waiting or
// synchronizing the warpgroup; wgmma_wait N is wait_group N alone (each
// warp covers its own part).
// CHECK-LABEL: gpu.func @in_flight
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NOT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: nvvm.barrier
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NOT: nvvm.barrier
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: nvvm.barrier
// The store reads the result through an opaque copy made after the wait,
// which LLVM cannot hoist above it (both have side effects).
// CHECK: llvm.inline_asm has_side_effects
// CHECK: gpu.return
!a = memref<64x64xbf16, #gpu.address_space<workgroup>>
!b = memref<64x128xbf16, #gpu.address_space<workgroup>>
gpu.module @kernels {
  gpu.func @in_flight(%out: memref<64x128xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %a = mosaic_gpu.slice_smem 0 : !a
    %b = mosaic_gpu.slice_smem 8192 : !b
    %acc = mosaic_gpu.vector_load %out : memref<64x128xf32> -> vector<64x128xf32>
    %r = mosaic_gpu.wgmma async %acc, %a, %b : vector<64x128xf32>, !a, !b -> vector<64x128xf32>
    mosaic_gpu.wgmma_wait 1
    mosaic_gpu.wgmma_wait 0
    mosaic_gpu.vector_store %r, %out : vector<64x128xf32>, memref<64x128xf32>
    gpu.return
  }
}

// -----

// A collective arrive in a cluster of 2x2: the peers share the block's y
// coordinate (rank base 2 * y) and take both x coordinates (offsets 0 and
// 1). Lane 0 of each warp arrives with a count of 32 on each, after
// bar.warp.sync; the kernel ends with a cluster barrier.
// CHECK-LABEL: gpu.func @collective_arrive
// CHECK: %[[Y:.*]] = gpu.cluster_block_id y
// CHECK: %[[BASE_Y:.*]] = arith.muli %[[Y]], %{{.*}} : index
// CHECK: %[[Z:.*]] = gpu.cluster_block_id z
// CHECK: nvvm.bar.warp.sync %{{.*}} : i32
// CHECK: %[[LANE:.*]] = nvvm.read.ptx.sreg.laneid : i32
// CHECK: %[[IS_LANE0:.*]] = arith.cmpi eq, %[[LANE]]
// CHECK: scf.if %[[IS_LANE0]] {
// CHECK:   %[[COUNT:.*]] = arith.constant 32 : i32
// CHECK:   %[[PEER0:.*]] = nvvm.mapa %{{.*}}, %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK:   nvvm.mbarrier.arrive %[[PEER0]], %[[COUNT]] : !llvm.ptr<7>
// CHECK:   %[[PEER1:.*]] = nvvm.mapa %{{.*}}, %{{.*}} : !llvm.ptr<3> -> !llvm.ptr<7>
// CHECK:   nvvm.mbarrier.arrive %[[PEER1]], %[[COUNT]] : !llvm.ptr<7>
// CHECK-NOT: nvvm.mbarrier.arrive
// CHECK: }
// CHECK: nvvm.cluster.arrive
// CHECK-NEXT: nvvm.cluster.wait
// CHECK-NEXT: gpu.return
!barriers = memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
!barrier = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
gpu.module @kernels {
  gpu.func @collective_arrive() kernel attributes {known_block_size = array<i32: 128, 1, 1>, mosaic_gpu.cluster = array<i32: 2, 2, 1>} {
    %bars = mosaic_gpu.slice_smem 0 : !barriers
    mosaic_gpu.initialize_barrier %bars, arrival_count = 2, num_barriers = 1 : !barriers
    %bar = memref.collapse_shape %bars [] : !barriers into !barrier
    mosaic_gpu.arrive %bar {collective = [#mosaic_gpu.dim<x>]} : !barrier
    gpu.return
  }
}

// -----

!barriers = memref<1x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
!barrier = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
gpu.module @kernels {
  gpu.func @collective_arrive_without_cluster() kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %bars = mosaic_gpu.slice_smem 0 : !barriers
    mosaic_gpu.initialize_barrier %bars, arrival_count = 2, num_barriers = 1 : !barriers
    %bar = memref.collapse_shape %bars [] : !barriers into !barrier
    // expected-error @+1 {{arrives collectively over cluster dims, but its kernel declares no cluster shape (`mosaic_gpu.cluster = array<i32: x, y, z>`)}}
    mosaic_gpu.arrive %bar {collective = [#mosaic_gpu.dim<x>]} : !barrier
    gpu.return
  }
}

// -----

// A persistent kernel's epilogue stores registers into its own C buffer in
// the loop around the MMA: a different slice than the wgmma's operands, so
// no proxy fence and warpgroup barrier precede each wgmma. A store into the
// B slice does need them.
// CHECK-LABEL: gpu.func @disjoint_epilogue
// CHECK: scf.for
// CHECK-NOT: nvvm.fence.proxy
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-LABEL: gpu.func @aliasing_store
// CHECK: scf.for
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: arith.constant 1
// CHECK: nvvm.barrier
// CHECK: nvvm.wgmma.fence.aligned
!a = memref<64x64xbf16, #gpu.address_space<workgroup>>
!b = memref<64x128xbf16, #gpu.address_space<workgroup>>
!c = memref<64x128xf32, #gpu.address_space<workgroup>>
gpu.module @kernels {
  gpu.func @disjoint_epilogue(%n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %a = mosaic_gpu.slice_smem 0 : !a
    %b = mosaic_gpu.slice_smem 8192 : !b
    %c = mosaic_gpu.slice_smem 24576 : !c
    %zero = arith.constant dense<0.0> : vector<64x128xf32>
    scf.for %i = %c0 to %n step %c1 {
      %r = mosaic_gpu.wgmma %zero, %a, %b : vector<64x128xf32>, !a, !b -> vector<64x128xf32>
      mosaic_gpu.vector_store %r, %c : vector<64x128xf32>, !c
    }
    gpu.return
  }
  gpu.func @aliasing_store(%n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %a = mosaic_gpu.slice_smem 0 : !a
    %b = mosaic_gpu.slice_smem 8192 : !b
    %zero = arith.constant dense<0.0> : vector<64x128xf32>
    scf.for %i = %c0 to %n step %c1 {
      %r = mosaic_gpu.wgmma %zero, %a, %b : vector<64x128xf32>, !a, !b -> vector<64x128xf32>
      %r16 = arith.truncf %r : vector<64x128xf32> to vector<64x128xbf16>
      mosaic_gpu.vector_store %r16, %b : vector<64x128xbf16>, !b
    }
    gpu.return
  }
}

// -----

// A role's own barrier: bar.sync id, 128 x warpgroups.
// CHECK-LABEL: gpu.func @consumers_meet
// CHECK: %[[ID:.*]] = arith.constant 4 : i32
// CHECK: %[[THREADS:.*]] = arith.constant 256 : i32
// CHECK: nvvm.barrier id = %[[ID]] number_of_threads = %[[THREADS]]
gpu.module @kernels {
  gpu.func @consumers_meet() kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    mosaic_gpu.named_barrier 4, warpgroups = 2
    gpu.return
  }
}

// -----

// Handing a turn over: bar.arrive id, 128 x warpgroups, which does not wait
// (the ping-pong of the attention consumers).
// CHECK-LABEL: gpu.func @pass_the_turn
// CHECK: %[[ID:.*]] = arith.constant 5 : i32
// CHECK: %[[THREADS:.*]] = arith.constant 256 : i32
// CHECK: nvvm.barrier.arrive id = %[[ID]] number_of_threads = %[[THREADS]]
// CHECK-NOT: nvvm.barrier id
gpu.module @kernels {
  gpu.func @pass_the_turn() kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    mosaic_gpu.named_barrier arrive 5, warpgroups = 2
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @arrive_on_reserved_barrier() kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    // expected-error @+1 {{uses named barrier 2, which the lowering keeps for warpgroup 1's own synchronization; a block of 3 warpgroups leaves barriers 4 .. 15}}
    mosaic_gpu.named_barrier arrive 2, warpgroups = 2
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @reserved_barrier() kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
    // expected-error @+1 {{uses named barrier 3, which the lowering keeps for warpgroup 2's own synchronization; a block of 3 warpgroups leaves barriers 4 .. 15}}
    mosaic_gpu.named_barrier 3, warpgroups = 2
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @too_many_warpgroups() kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
    // expected-error @+1 {{waits for 3 warpgroups, but the block has 2}}
    mosaic_gpu.named_barrier 5, warpgroups = 3
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @unknown_block() kernel {
    // expected-error @+1 {{needs the kernel's `known_block_size` to know which named barriers its warpgroups keep}}
    mosaic_gpu.named_barrier 5, warpgroups = 1
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @reallocates_without_block_size() kernel {
    // expected-error @+1 {{needs its kernel's `known_block_size`: ptxas fixes the registers each thread starts with, which setmaxnreg moves from, only for a known block size, and drops setmaxnreg otherwise}}
    mosaic_gpu.set_max_registers decrease 40
    gpu.return
  }
}
