// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-lower -verify-diagnostics

// What the lowering does not handle yet is an error on the op, never a
// wrong kernel.
func.func @reduction(%ref: memref<128x64xf32>) -> vector<128xf32> {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  // expected-error @-1 {{mosaic-gpu-lower only moves strided vectors between registers and memory so far, not WGMMA}}
  %z = arith.constant dense<0.0> : vector<128xf32>
  %r = vector.multi_reduction <add>, %v, %z [1] : vector<128x64xf32> to vector<128xf32>
  return %r : vector<128xf32>
}

// -----

func.func @barrier(%p: !llvm.ptr<3>) {
  // expected-error @+1 {{'mosaic_gpu.initialize_barrier' op is not lowered by mosaic-gpu-lower yet}}
  mosaic_gpu.initialize_barrier %p, arrival_count = 1, num_barriers = 1 : !llvm.ptr<3>
  return
}

// -----

// The pipeline stops at the first op the lowering does not support yet.
func.func @pipeline_stops(%ref: memref<128x64xf32>) -> vector<128xf32> {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %s = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #mosaic_gpu.WGStridedFragLayout<[128, 64], 2>
  %z = arith.constant 0.0 : f32
  // expected-error @+1 {{'vector.multi_reduction' op is not lowered by mosaic-gpu-lower yet}}
  %r = vector.multi_reduction <add>, %s, %z [0, 1] : vector<128x64xf32> to f32
  %b = vector.broadcast %r : f32 to vector<128xf32>
  return %b : vector<128xf32>
}

// -----

func.func @barrier_slice() {
  // expected-error @+1 {{carves barriers, which mosaic-gpu-lower does not lower yet}}
  %b = mosaic_gpu.slice_smem 0 : memref<2x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

// expected-error @+1 {{'mosaic_gpu.slice_smem' op is outside a function; mosaic-gpu-lower lowers kernel bodies}}
%outside = mosaic_gpu.slice_smem 0 : memref<128xf32, #gpu.address_space<workgroup>>
