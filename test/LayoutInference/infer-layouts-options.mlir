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

// ARCH: error: mosaic-gpu-infer-layouts supports only arch sm_90a, got 'sm_80'
// FUEL: error: mosaic-gpu-infer-layouts needs a positive fuel, got 0
