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
