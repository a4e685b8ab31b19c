// RUN: mosaic-opt %s -mosaic-gpu-lower -verify-diagnostics

func.func @not_inferred(%ref: memref<128x64xf32>) {
  // expected-error @+1 {{has no `out_layouts` entry for this vector; run mosaic-gpu-infer-layouts first}}
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  return
}
