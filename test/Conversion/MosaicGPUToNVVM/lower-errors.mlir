// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-lower -verify-diagnostics

// What the lowering does not handle yet is an error on the op, never a
// wrong kernel.
func.func @reduction_across_warps(%ref: memref<128x64xf32>, %out: memref<64xf32>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %z = arith.constant dense<0.0> : vector<64xf32>
  // expected-error @+1 {{reduces over a dim that WGMMA splits across warps; mosaic-gpu-lower does not lower that yet (it needs a shared-memory exchange between warps)}}
  %r = vector.multi_reduction <add>, %v, %z [0] : vector<128x64xf32> to vector<64xf32>
  mosaic_gpu.vector_store %r, %out : vector<64xf32>, memref<64xf32>
  return
}

// -----

func.func @reduction_to_scalar(%ref: memref<128x64xf32>, %out: memref<128xf32>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %s = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #mosaic_gpu.WGStridedFragLayout<[128, 64], 2>
  %z = arith.constant 0.0 : f32
  // expected-error @+1 {{reduces to a scalar, across all 128 threads; mosaic-gpu-lower does not lower that yet}}
  %r = vector.multi_reduction <add>, %s, %z [0, 1] : vector<128x64xf32> to f32
  %b = vector.broadcast %r : f32 to vector<128xf32>
  mosaic_gpu.vector_store %b, %out : vector<128xf32>, memref<128xf32>
  return
}

// -----

// Every thread of a warpgroup arrives, so an mbarrier counts 128 arrivals
// per warpgroup arrival, and it counts at most 2^20 - 1.
func.func @too_many_arrivals(%p: !llvm.ptr<3>) {
  // expected-error @+1 {{needs 1048576 thread arrivals (8192 warpgroups x 128), more than an mbarrier counts (1048575)}}
  mosaic_gpu.initialize_barrier %p, arrival_count = 8192, num_barriers = 1 : !llvm.ptr<3>
  return
}

// -----

// Each barrier is initialized by its own instruction; a count no block's
// shared memory could hold is a mistake, not a request for a huge kernel.
func.func @too_many_barriers(%p: !llvm.ptr<3>) {
  // expected-error @+1 {{initializes 30000 barriers (240000 bytes), more than the 232448 bytes of shared memory an sm_90a block has}}
  mosaic_gpu.initialize_barrier %p, arrival_count = 1, num_barriers = 30000 : !llvm.ptr<3>
  return
}

// -----

func.func @strided_barriers() {
  %all = mosaic_gpu.slice_smem 0 : memref<4x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  %every_other = memref.subview %all[0] [2] [2] : memref<4x!mosaic_gpu.barrier, #gpu.address_space<workgroup>> to memref<2x!mosaic_gpu.barrier, strided<[2]>, #gpu.address_space<workgroup>>
  // expected-error @+1 {{initializes barriers that are not contiguous in shared memory: 'memref<2x!mosaic_gpu.barrier, strided<[2]>, #gpu.address_space<workgroup>>'}}
  mosaic_gpu.initialize_barrier %every_other, arrival_count = 1, num_barriers = 2 : memref<2x!mosaic_gpu.barrier, strided<[2]>, #gpu.address_space<workgroup>>
  return
}

// -----

// Ordering tensor core operations takes tcgen05 fences (Blackwell).
func.func @orders_tensor_core_init(%p: !llvm.ptr<3>) {
  // expected-error @+1 {{orders tensor core operations (`orders_tensor_core`), which needs tcgen05 fences that sm_90a does not have}}
  mosaic_gpu.initialize_barrier %p, arrival_count = 1, num_barriers = 1 {orders_tensor_core = true} : !llvm.ptr<3>
  return
}

// -----

func.func @orders_tensor_core_arrive(%b: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{orders tensor core operations (`orders_tensor_core`), which needs tcgen05 fences that sm_90a does not have}}
  mosaic_gpu.arrive %b {orders_tensor_core = true} : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

// expected-error @+1 {{'mosaic_gpu.slice_smem' op is outside a function; mosaic-gpu-lower lowers kernel bodies}}
%outside = mosaic_gpu.slice_smem 0 : memref<128xf32, #gpu.address_space<workgroup>>
