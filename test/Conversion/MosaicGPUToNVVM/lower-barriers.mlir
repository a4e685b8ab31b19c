// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-lower | FileCheck %s

// Barriers carved out of shared memory become i64 views. One thread of the
// block initializes them, counting 128 thread arrivals per warpgroup arrival,
// then fences and synchronizes the block. Every thread arrives, and waits in
// a loop on the phase parity.
// CHECK-LABEL: gpu.func @handoff
// CHECK: %[[VIEW:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2xi64, #gpu.address_space<workgroup>>
// CHECK: %{{.*}}, %[[OFFSET:.*]], %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[VIEW]]
// CHECK: %[[ALIGNED:.*]] = memref.extract_aligned_pointer_as_index %[[VIEW]]
// CHECK: %[[EIGHT:.*]] = arith.constant 8 : index
// CHECK: %[[BYTES:.*]] = arith.muli %[[OFFSET]], %[[EIGHT]]
// CHECK: %[[ADDRESS:.*]] = arith.addi %[[ALIGNED]], %[[BYTES]]
// CHECK: %[[ADDRESS64:.*]] = arith.index_cast %[[ADDRESS]] : index to i64
// CHECK: %[[FIRST:.*]] = llvm.inttoptr %[[ADDRESS64]] : i64 to !llvm.ptr<3>
// CHECK: %[[X:.*]] = gpu.thread_id x
// CHECK: %[[Y:.*]] = gpu.thread_id y
// CHECK: %[[XY:.*]] = arith.ori %[[X]], %[[Y]]
// CHECK: %[[Z:.*]] = gpu.thread_id z
// CHECK: %[[XYZ:.*]] = arith.ori %[[XY]], %[[Z]]
// CHECK: %[[IS_FIRST:.*]] = arith.cmpi eq, %[[XYZ]], %{{.*}} : index
// CHECK: %[[COUNT:.*]] = arith.constant 256 : i32
// CHECK: nvvm.mbarrier.init %[[FIRST]], %[[COUNT]], predicate = %[[IS_FIRST]]
// CHECK: %[[SECOND:.*]] = llvm.getelementptr %[[FIRST]][1] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i64
// CHECK: nvvm.mbarrier.init %[[SECOND]], %[[COUNT]], predicate = %[[IS_FIRST]]
// CHECK: nvvm.fence.mbarrier.init
// CHECK: gpu.barrier
// CHECK: %[[ONE:.*]] = memref.subview %[[VIEW]][1] [1] [1] : memref<2xi64, #gpu.address_space<workgroup>> to memref<i64, strided<[], offset: 1>, #gpu.address_space<workgroup>>
// CHECK: memref.extract_strided_metadata %[[ONE]]
// CHECK: %[[ARRIVE_AT:.*]] = llvm.inttoptr
// CHECK: nvvm.mbarrier.arrive %[[ARRIVE_AT]] : !llvm.ptr<3>
// CHECK: %[[PARITY:.*]] = arith.extui %{{.*}} : i1 to i32
// CHECK: %[[TICKS:.*]] = arith.constant 10000000 : i32
// CHECK: memref.extract_strided_metadata %[[ONE]]
// CHECK: %[[WAIT_AT:.*]] = llvm.inttoptr
// CHECK: nvvm.mbarrier.try_wait.parity %[[WAIT_AT]], %[[PARITY]], %[[TICKS]]
// CHECK-NOT: mosaic_gpu
gpu.module @kernels {
  gpu.func @handoff(%parity: i1) kernel {
    %bars = mosaic_gpu.slice_smem 0 : memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    mosaic_gpu.initialize_barrier %bars, arrival_count = 2, num_barriers = 2 : memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    %one = memref.subview %bars[1] [1] [1] : memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>> to memref<!mosaic_gpu.barrier, strided<[], offset: 1>, #gpu.address_space<workgroup>>
    mosaic_gpu.arrive %one : memref<!mosaic_gpu.barrier, strided<[], offset: 1>, #gpu.address_space<workgroup>>
    mosaic_gpu.wait %one, %parity : memref<!mosaic_gpu.barrier, strided<[], offset: 1>, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// A shared-memory pointer is used as it is.
// CHECK-LABEL: func.func @from_pointer
// CHECK-SAME: (%[[POINTER:.*]]: !llvm.ptr<3>)
// CHECK: %[[COUNT:.*]] = arith.constant 128 : i32
// CHECK: nvvm.mbarrier.init %[[POINTER]], %[[COUNT]], predicate = %{{.*}} : !llvm.ptr<3>, i32, i1
// CHECK: %[[NEXT:.*]] = llvm.getelementptr %[[POINTER]][1]
// CHECK: nvvm.mbarrier.init %[[NEXT]], %[[COUNT]]
// CHECK: %[[LAST:.*]] = llvm.getelementptr %[[POINTER]][2]
// CHECK: nvvm.mbarrier.init %[[LAST]], %[[COUNT]]
// CHECK-NOT: nvvm.mbarrier.init
// CHECK: nvvm.fence.mbarrier.init
func.func @from_pointer(%p: !llvm.ptr<3>) {
  mosaic_gpu.initialize_barrier %p, arrival_count = 1, num_barriers = 3 : !llvm.ptr<3>
  return
}

// -----

// Barrier memrefs passed to a function become i64 memrefs too.
// CHECK-LABEL: func.func @argument
// CHECK-SAME: memref<i64, #gpu.address_space<workgroup>>
// CHECK: nvvm.mbarrier.arrive
func.func @argument(%bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) {
  mosaic_gpu.arrive %bar : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}
