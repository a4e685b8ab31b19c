// RUN: mosaic-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// Round trip of the warp-specialization ops and their verifier errors.

// CHECK-LABEL: func @roles
func.func @roles() -> index {
  // CHECK: %[[WG:.*]] = mosaic_gpu.warpgroup_id : index
  %wg = mosaic_gpu.warpgroup_id : index
  // CHECK: mosaic_gpu.set_max_registers decrease 40
  mosaic_gpu.set_max_registers decrease 40
  // CHECK: mosaic_gpu.set_max_registers increase 232
  mosaic_gpu.set_max_registers increase 232
  // CHECK: mosaic_gpu.wgmma_wait 1
  mosaic_gpu.wgmma_wait 1
  return %wg : index
}

// -----

!smem_a = memref<64x64xbf16, #gpu.address_space<workgroup>>
!smem_b = memref<64x128xbf16, #gpu.address_space<workgroup>>
// CHECK-LABEL: func @async_wgmma
func.func @async_wgmma(%acc: vector<64x128xf32>, %a: !smem_a, %b: !smem_b) -> vector<64x128xf32> {
  // CHECK: mosaic_gpu.wgmma async %{{.*}}, %{{.*}}, %{{.*}} :
  %r = mosaic_gpu.wgmma async %acc, %a, %b : vector<64x128xf32>, !smem_a, !smem_b -> vector<64x128xf32>
  mosaic_gpu.wgmma_wait 0
  return %r : vector<64x128xf32>
}

// -----

func.func @too_few_registers() {
  // expected-error @+1 {{asks for 16 registers per thread; setmaxnreg takes a multiple of 8 in 24..256}}
  mosaic_gpu.set_max_registers decrease 16
  return
}

// -----

func.func @too_many_registers() {
  // expected-error @+1 {{asks for 264 registers per thread}}
  mosaic_gpu.set_max_registers increase 264
  return
}

// -----

func.func @registers_not_multiple_of_8() {
  // expected-error @+1 {{asks for 100 registers per thread}}
  mosaic_gpu.set_max_registers increase 100
  return
}

// -----

func.func @unknown_action() {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'action' [increase, decrease]}}
  mosaic_gpu.set_max_registers grow 100
  return
}

// -----

func.func @negative_pending() {
  // expected-error @+1 {{attribute 'pending' failed to satisfy constraint}}
  mosaic_gpu.wgmma_wait -1
  return
}

// -----

!smem = memref<64x256xbf16, #gpu.address_space<workgroup>>
// CHECK-LABEL: func @deferred_store
func.func @deferred_store(%src: !smem, %dst: memref<256x256xbf16>, %i: i32) {
  // CHECK: mosaic_gpu.async_store_wait 0
  mosaic_gpu.async_store_wait 0
  // CHECK: mosaic_gpu.async_store_wait 1 complete
  mosaic_gpu.async_store_wait 1 complete
  // CHECK: mosaic_gpu.async_store %{{.*}} to %{{.*}}[%{{.*}}, %{{.*}}] slice_lengths [64, 256] {defer_wait}
  mosaic_gpu.async_store %src to %dst[%i, %i] slice_lengths [64, 256] {defer_wait} : !smem, memref<256x256xbf16>
  return
}

// -----

!smem = memref<64x256xbf16, #gpu.address_space<workgroup>>
func.func @deferred_without_commit(%src: !smem, %dst: memref<256x256xbf16>, %i: i32) {
  // expected-error @+1 {{defers its wait (`defer_wait`) but commits no group (`commit_group = false`): async_store_wait waits for committed groups}}
  mosaic_gpu.async_store %src to %dst[%i, %i] slice_lengths [64, 256] {defer_wait, commit_group = false} : !smem, memref<256x256xbf16>
  return
}

// -----

func.func @negative_store_pending() {
  // expected-error @+1 {{attribute 'pending' failed to satisfy constraint}}
  mosaic_gpu.async_store_wait -2
  return
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{`mosaic_gpu.cluster` must be array<i32: x, y, z>, the cluster's blocks along each grid dim, but it is array<i32: 2>}}
  gpu.func @k() kernel attributes {mosaic_gpu.cluster = array<i32: 2>} {
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{`mosaic_gpu.cluster` has a dim of 0 blocks; each must be at least 1}}
  gpu.func @k() kernel attributes {mosaic_gpu.cluster = array<i32: 2, 0, 1>} {
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{`mosaic_gpu.cluster` makes clusters of 32 blocks; sm_90a allows at most 16}}
  gpu.func @k() kernel attributes {mosaic_gpu.cluster = array<i32: 4, 4, 2>} {
    gpu.return
  }
}

// -----

// expected-error @+1 {{`mosaic_gpu.cluster` belongs on a gpu.func kernel}}
gpu.module @not_a_kernel attributes {mosaic_gpu.cluster = array<i32: 2, 1, 1>} {
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{has a grid of 3 blocks along dim 0, not a multiple of its cluster's 2}}
  gpu.func @k() kernel attributes {known_grid_size = array<i32: 3, 1, 1>, mosaic_gpu.cluster = array<i32: 2, 1, 1>} {
    gpu.return
  }
}

// -----

// CHECK-LABEL: func @named_barrier
func.func @named_barrier() {
  // CHECK: mosaic_gpu.named_barrier 4, warpgroups = 2
  mosaic_gpu.named_barrier 4, warpgroups = 2
  // CHECK: mosaic_gpu.named_barrier arrive 5, warpgroups = 2
  mosaic_gpu.named_barrier arrive 5, warpgroups = 2
  return
}

// -----

func.func @barrier_id_out_of_range() {
  // expected-error @+1 {{attribute 'id' failed to satisfy constraint}}
  mosaic_gpu.named_barrier 16, warpgroups = 2
  return
}

// -----

func.func @no_warpgroups() {
  // expected-error @+1 {{attribute 'warpgroups' failed to satisfy constraint}}
  mosaic_gpu.named_barrier 4, warpgroups = 0
  return
}
