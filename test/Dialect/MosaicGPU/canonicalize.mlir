// RUN: mosaic-opt %s -split-input-file -canonicalize -cse | FileCheck %s
// RUN: mosaic-opt %s -split-input-file -loop-invariant-code-motion | FileCheck %s --check-prefix=LICM
// The ops declare their memory effects per operand: generic passes merge and
// erase what is safe to, and never move or merge a read across a write, a
// barrier wait or an asynchronous copy into the same memory.

!smem = memref<128x64xf32, #gpu.address_space<workgroup>>
!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>

// CHECK-LABEL: func @loads_of_unchanged_memory_merge
func.func @loads_of_unchanged_memory_merge(%ref: !smem) -> (vector<128x64xf32>, vector<128x64xf32>) {
  // CHECK: %[[V:.*]] = mosaic_gpu.vector_load
  // CHECK-NOT: mosaic_gpu.vector_load
  // CHECK: return %[[V]], %[[V]]
  %a = mosaic_gpu.vector_load %ref : !smem -> vector<128x64xf32>
  %b = mosaic_gpu.vector_load %ref : !smem -> vector<128x64xf32>
  return %a, %b : vector<128x64xf32>, vector<128x64xf32>
}

// -----

!smem = memref<128x64xf32, #gpu.address_space<workgroup>>

// CHECK-LABEL: func @unused_reads_are_erased
func.func @unused_reads_are_erased(%ref: !smem, %acc: vector<64x64xf32>, %a: memref<64x16xbf16, #gpu.address_space<workgroup>>, %b: memref<16x64xbf16, #gpu.address_space<workgroup>>) {
  // CHECK-NOT: mosaic_gpu.vector_load
  // CHECK-NOT: mosaic_gpu.wgmma
  // CHECK: return
  %v = mosaic_gpu.vector_load %ref : !smem -> vector<128x64xf32>
  %r = mosaic_gpu.wgmma %acc, %a, %b : vector<64x64xf32>, memref<64x16xbf16, #gpu.address_space<workgroup>>, memref<16x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return
}

// -----

!smem = memref<128x64xf32, #gpu.address_space<workgroup>>

// CHECK-LABEL: func @store_between_loads
func.func @store_between_loads(%ref: !smem, %x: vector<128x64xf32>) -> (vector<128x64xf32>, vector<128x64xf32>) {
  // CHECK: mosaic_gpu.vector_load
  // CHECK: mosaic_gpu.vector_store
  // CHECK: mosaic_gpu.vector_load
  %a = mosaic_gpu.vector_load %ref : !smem -> vector<128x64xf32>
  mosaic_gpu.vector_store %x, %ref : vector<128x64xf32>, !smem
  %b = mosaic_gpu.vector_load %ref : !smem -> vector<128x64xf32>
  return %a, %b : vector<128x64xf32>, vector<128x64xf32>
}

// -----

!smem = memref<128x64xf32, #gpu.address_space<workgroup>>
!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>

// A wait makes the asynchronous copies that completed on the barrier visible:
// the loads on either side of it read different data.
// CHECK-LABEL: func @wait_between_loads
func.func @wait_between_loads(%ref: !smem, %bar: !bar, %parity: i1) -> (vector<128x64xf32>, vector<128x64xf32>) {
  // CHECK: mosaic_gpu.vector_load
  // CHECK: mosaic_gpu.wait
  // CHECK: mosaic_gpu.vector_load
  %a = mosaic_gpu.vector_load %ref : !smem -> vector<128x64xf32>
  mosaic_gpu.wait %bar, %parity : !bar
  %b = mosaic_gpu.vector_load %ref : !smem -> vector<128x64xf32>
  return %a, %b : vector<128x64xf32>, vector<128x64xf32>
}

// -----

!smem = memref<128x64xf32, #gpu.address_space<workgroup>>
!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>

// CHECK-LABEL: func @async_load_between_loads
func.func @async_load_between_loads(%gmem: memref<1024x64xf32>, %ref: !smem, %bar: !bar, %i: i32) -> (vector<128x64xf32>, vector<128x64xf32>) {
  // CHECK: mosaic_gpu.vector_load
  // CHECK: mosaic_gpu.async_load
  // CHECK: mosaic_gpu.vector_load
  %a = mosaic_gpu.vector_load %ref : !smem -> vector<128x64xf32>
  mosaic_gpu.async_load %gmem[%i, %i] to %ref, %bar slice_lengths [128, 64]
      : memref<1024x64xf32>, !smem, !bar
  %b = mosaic_gpu.vector_load %ref : !smem -> vector<128x64xf32>
  return %a, %b : vector<128x64xf32>, vector<128x64xf32>
}

// -----

!smem = memref<128x64xf32, #gpu.address_space<workgroup>>
!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>

// Ops that write memory or update a barrier stay, used or not, and repeated
// barrier operations are not merged.
// CHECK-LABEL: func @writes_stay
func.func @writes_stay(%gmem: memref<1024x64xf32>, %ref: !smem, %bar: !bar, %i: i32, %parity: i1) {
  // CHECK: mosaic_gpu.initialize_barrier
  // CHECK: mosaic_gpu.arrive_expect_tx
  // CHECK: mosaic_gpu.arrive_expect_tx
  // CHECK: mosaic_gpu.async_load
  // CHECK: mosaic_gpu.async_load
  // CHECK: mosaic_gpu.arrive
  // CHECK: mosaic_gpu.arrive
  // CHECK: mosaic_gpu.wait
  // CHECK: mosaic_gpu.wait
  // CHECK: mosaic_gpu.async_store
  mosaic_gpu.initialize_barrier %bar, arrival_count = 1, num_barriers = 1 : !bar
  mosaic_gpu.arrive_expect_tx %bar, 32768 : !bar
  mosaic_gpu.arrive_expect_tx %bar, 32768 : !bar
  mosaic_gpu.async_load %gmem[%i, %i] to %ref, %bar slice_lengths [128, 64]
      : memref<1024x64xf32>, !smem, !bar
  mosaic_gpu.async_load %gmem[%i, %i] to %ref, %bar slice_lengths [128, 64]
      : memref<1024x64xf32>, !smem, !bar
  mosaic_gpu.arrive %bar : !bar
  mosaic_gpu.arrive %bar : !bar
  mosaic_gpu.wait %bar, %parity : !bar
  mosaic_gpu.wait %bar, %parity : !bar
  mosaic_gpu.async_store %ref to %gmem[%i, %i] slice_lengths [128, 64]
      : !smem, memref<1024x64xf32>
  return
}

// -----

!smem = memref<128x64xf32, #gpu.address_space<workgroup>>
!bar = memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>

// A load of a buffer that the loop refills stays in the loop.
// LICM-LABEL: func @load_stays_in_loop
func.func @load_stays_in_loop(%ref: !smem, %bar: !bar, %parity: i1, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // LICM: scf.for
  // LICM: mosaic_gpu.wait
  // LICM: mosaic_gpu.vector_load
  scf.for %k = %c0 to %n step %c1 {
    mosaic_gpu.wait %bar, %parity : !bar
    %v = mosaic_gpu.vector_load %ref : !smem -> vector<128x64xf32>
    %o = mosaic_gpu.optimization_barrier(%v) : vector<128x64xf32>
  }
  return
}
