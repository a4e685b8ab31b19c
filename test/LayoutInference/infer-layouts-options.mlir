// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts=fuel=1 -verify-diagnostics
// RUN: not mosaic-opt %s -mosaic-gpu-infer-layouts=arch=sm_80 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: not mosaic-opt %s -mosaic-gpu-infer-layouts=fuel=0 2>&1 | FileCheck %s --check-prefix=FUEL

// With almost no fuel the search gives up at its first detour and names the
// value it could not decide.
func.func @out_of_fuel(%ref: memref<128x64xf32>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %a = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  // expected-error @+1 {{layout inference ran out of fuel (1 rejected candidates and backtracks) while choosing a layout for operand #0 of 'mosaic_gpu.layout_cast'; raise `fuel`, or settle this value with a mosaic_gpu.layout_cast (mosaic_gpu.with_transforms for a buffer) after the op that produces it}}
  %b = mosaic_gpu.layout_cast %a : vector<128x64xf32> to #mosaic_gpu.WGStridedFragLayout<[128, 64], 2>
  return
}

// -----

// Fuel pays only for detours (rejected candidates and backtracks), not for
// the values decided on the first try: with fuel 1 this kernel of many values
// (a splat operand first included) is solved. The reference charges every
// tried assignment, so it would need one unit per value here.
func.func @first_choices_cost_no_fuel(%ref: memref<128x64xf32>, %out: memref<128x64xf32>) {
  %c = arith.constant dense<2.0> : vector<128x64xf32>
  %v0 = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %v1 = arith.addf %c, %v0 : vector<128x64xf32>
  %v2 = arith.mulf %v1, %c : vector<128x64xf32>
  %v3 = math.exp %v2 : vector<128x64xf32>
  %v4 = arith.subf %c, %v3 : vector<128x64xf32>
  %v5 = arith.maximumf %v4, %v0 : vector<128x64xf32>
  %v6 = arith.addf %v5, %v5 : vector<128x64xf32>
  %v7 = math.exp %v6 : vector<128x64xf32>
  %v8 = arith.mulf %c, %v7 : vector<128x64xf32>
  mosaic_gpu.vector_store %v8, %out : vector<128x64xf32>, memref<128x64xf32>
  return
}

// ARCH: error: mosaic-gpu-infer-layouts supports only arch sm_90a, got 'sm_80'
// FUEL: error: mosaic-gpu-infer-layouts needs a positive fuel, got 0
