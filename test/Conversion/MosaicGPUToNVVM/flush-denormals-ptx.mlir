// RUN: mosaic-compile %s --emit=ptx -o %t.ptx
// RUN: FileCheck %s --input-file=%t.ptx
// RUN: sed -e 's/, mosaic_gpu.flush_denormals//' %s > %t.plain.mlir
// RUN: mosaic-compile %t.plain.mlir --emit=ptx -o %t.plain.ptx
// RUN: FileCheck %s --check-prefix=PLAIN --input-file=%t.plain.ptx

// A kernel marked `mosaic_gpu.flush_denormals` gets the `.ftz` forms of its
// f32 instructions, and libdevice's exp2 is then one ex2.approx.ftz.f32
// (the module flag NVVMReflect reads); without the mark, ex2.approx.f32,
// which ptxas wraps in a test and two multiplications for subnormal
// results.
// CHECK: ex2.approx.ftz.f32
// CHECK: mul.rn.ftz.f32
// PLAIN-NOT: .ftz
// PLAIN: ex2.approx.f32
// PLAIN-NOT: .ftz
gpu.module @kernels {
  gpu.func @flushing(%x: memref<128xf32>, %out: memref<128xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>, mosaic_gpu.flush_denormals} {
    %v = mosaic_gpu.vector_load %x : memref<128xf32> -> vector<128xf32>
    %e = math.exp2 %v : vector<128xf32>
    %p = arith.mulf %e, %v : vector<128xf32>
    mosaic_gpu.vector_store %p, %out : vector<128xf32>, memref<128xf32>
    gpu.return
  }
}
