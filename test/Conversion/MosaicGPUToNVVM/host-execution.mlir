// Runs lowered code on the host, once per thread of the warpgroup (the
// thread id becomes a function argument), and checks every element: index
// arithmetic is easy to get wrong in ways that only values reveal.
// RUN: mosaic-opt %s -mosaic-gpu-infer-layouts -mosaic-gpu-lower \
// RUN:   | sed 's/gpu.thread_id  x/arith.ori %arg1, %arg1 : index/' \
// RUN:   | mlir-opt --convert-scf-to-cf --convert-vector-to-llvm --expand-strided-metadata \
// RUN:       --finalize-memref-to-llvm --convert-arith-to-llvm --convert-index-to-llvm \
// RUN:       --convert-func-to-llvm --convert-cf-to-llvm --reconcile-unrealized-casts \
// RUN:   | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN:   | FileCheck %s

// A strided iota whose dims are not powers of two: a thread's share of the
// flat position can carry into the next row, so each register's index is
// computed from its own flat position (8x96, 4-element chunks: thread 20's
// chunk at flat 336 is row 3, columns 48..51).
// CHECK: wrong elements along dim 1: 0
func.func @iota_columns(%out: memref<8x96xi32>, %tid: index) {
  %i = mosaic_gpu.broadcasted_iota 1 : vector<8x96xi32>
  mosaic_gpu.vector_store %i, %out : vector<8x96xi32>, memref<8x96xi32>
  return
}
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c96 = arith.constant 96 : index
  %c128 = arith.constant 128 : index
  %m = memref.alloc() : memref<8x96xi32>
  scf.for %t = %c0 to %c128 step %c1 {
    func.call @iota_columns(%m, %t) : (memref<8x96xi32>, index) -> ()
  }
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %bad = scf.for %r = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> i32 {
    %inner = scf.for %c = %c0 to %c96 step %c1 iter_args(%a = %acc) -> i32 {
      %v = memref.load %m[%r, %c] : memref<8x96xi32>
      %want = arith.index_cast %c : index to i32
      %ne = arith.cmpi ne, %v, %want : i32
      %inc = arith.select %ne, %one, %zero : i32
      %n = arith.addi %a, %inc : i32
      scf.yield %n : i32
    }
    scf.yield %inner : i32
  }
  vector.print str "wrong elements along dim 1: "
  vector.print %bad : i32
  func.call @check_rows() : () -> ()
  return
}


// The same along dim 0 of a WGMMA-laid-out iota (tiled: one offset per
// thread is exact there).
// CHECK: wrong elements along dim 0: 0
func.func @iota_rows(%out: memref<128x64xi32>, %tid: index) {
  %i = mosaic_gpu.broadcasted_iota 0 : vector<128x64xi32>
  %w = mosaic_gpu.layout_cast %i : vector<128x64xi32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  mosaic_gpu.vector_store %w, %out : vector<128x64xi32>, memref<128x64xi32>
  return
}
func.func @check_rows() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %m = memref.alloc() : memref<128x64xi32>
  scf.for %t = %c0 to %c128 step %c1 {
    func.call @iota_rows(%m, %t) : (memref<128x64xi32>, index) -> ()
  }
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %bad = scf.for %r = %c0 to %c128 step %c1 iter_args(%acc = %zero) -> i32 {
    %inner = scf.for %c = %c0 to %c64 step %c1 iter_args(%a = %acc) -> i32 {
      %v = memref.load %m[%r, %c] : memref<128x64xi32>
      %want = arith.index_cast %r : index to i32
      %ne = arith.cmpi ne, %v, %want : i32
      %inc = arith.select %ne, %one, %zero : i32
      %n = arith.addi %a, %inc : i32
      scf.yield %n : i32
    }
    scf.yield %inner : i32
  }
  vector.print str "wrong elements along dim 0: "
  vector.print %bad : i32
  return
}
