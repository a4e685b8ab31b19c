// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-pipeline -verify-diagnostics
// Inputs mosaic-fuzz (fuzz/, docs/Fuzzing.md) found: each made a pass of
// mosaic-gpu-pipeline report success and leave IR that does not verify, so
// the user saw a verifier error about an op they never wrote. Each is now
// the error of the pass that cannot handle it.

// Shared memory in a function outside a gpu.module: convert-gpu-to-nvvm
// never lowers its gpu.dynamic_shared_memory, and mapping its address space
// to a number made that op invalid.
// expected-error @+1 {{shared memory outside a gpu.module cannot be lowered: the kernel must be a gpu.func in a gpu.module}}
func.func @shared_memory_outside_gpu_module(%i: index) -> f32 {
  %s = mosaic_gpu.slice_smem 0 : memref<128x64xf32, #gpu.address_space<workgroup>>
  %x = memref.load %s[%i, %i] : memref<128x64xf32, #gpu.address_space<workgroup>>
  return %x : f32
}

// -----

// A wgmma operand that is a function argument: inference tiles it, and
// mosaic-gpu-apply-transforms, which cannot retype a block argument, marked
// the wgmma as tiled anyway.
func.func @wgmma_operand_from_function_argument(%acc: vector<64x64xf32>,
    %b: memref<64x64xbf16, #gpu.address_space<workgroup>>) -> vector<64x64xf32> {
  %a = mosaic_gpu.slice_smem 0 : memref<64x64xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{operand #2 must be tiled by (8, 64), but it is 'memref<64x64xbf16, #gpu.address_space<workgroup>>': mosaic-gpu-apply-transforms only retypes buffers it traces back to a mosaic_gpu.slice_smem}}
  %r = mosaic_gpu.wgmma %acc, %a, %b
      : vector<64x64xf32>, memref<64x64xbf16, #gpu.address_space<workgroup>>,
        memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
  return %r : vector<64x64xf32>
}
