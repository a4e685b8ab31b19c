// Runs lowered code on the host, once per thread of the warpgroup (the
// thread id becomes a function argument, in a (128, 1, 1) block), and
// checks every element: index arithmetic is easy to get wrong in ways that
// only values reveal.
// RUN: mosaic-opt %s -mosaic-gpu-infer-layouts -mosaic-gpu-lower \
// RUN:   | sed -e 's/gpu.thread_id  x/arith.ori %arg1, %arg1 : index/' \
// RUN:         -e 's/gpu.thread_id  [yz]/arith.constant 0 : index/' \
// RUN:         -e 's/gpu.block_dim  [xyz]/arith.constant 128 : index/' \
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
  func.call @check_table() : () -> ()
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

// A non-uniform constant lives in global memory; every thread loads its own
// elements (here 4-element chunks of a 512-element table, (7 i) mod 251).
// CHECK: wrong table elements: 0
func.func @table(%out: memref<512xi32>, %tid: index) {
  %c = arith.constant dense<[0, 7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 77, 84, 91, 98, 105, 112, 119, 126, 133, 140, 147, 154, 161, 168, 175, 182, 189, 196, 203, 210, 217, 224, 231, 238, 245, 1, 8, 15, 22, 29, 36, 43, 50, 57, 64, 71, 78, 85, 92, 99, 106, 113, 120, 127, 134, 141, 148, 155, 162, 169, 176, 183, 190, 197, 204, 211, 218, 225, 232, 239, 246, 2, 9, 16, 23, 30, 37, 44, 51, 58, 65, 72, 79, 86, 93, 100, 107, 114, 121, 128, 135, 142, 149, 156, 163, 170, 177, 184, 191, 198, 205, 212, 219, 226, 233, 240, 247, 3, 10, 17, 24, 31, 38, 45, 52, 59, 66, 73, 80, 87, 94, 101, 108, 115, 122, 129, 136, 143, 150, 157, 164, 171, 178, 185, 192, 199, 206, 213, 220, 227, 234, 241, 248, 4, 11, 18, 25, 32, 39, 46, 53, 60, 67, 74, 81, 88, 95, 102, 109, 116, 123, 130, 137, 144, 151, 158, 165, 172, 179, 186, 193, 200, 207, 214, 221, 228, 235, 242, 249, 5, 12, 19, 26, 33, 40, 47, 54, 61, 68, 75, 82, 89, 96, 103, 110, 117, 124, 131, 138, 145, 152, 159, 166, 173, 180, 187, 194, 201, 208, 215, 222, 229, 236, 243, 250, 6, 13, 20, 27, 34, 41, 48, 55, 62, 69, 76, 83, 90, 97, 104, 111, 118, 125, 132, 139, 146, 153, 160, 167, 174, 181, 188, 195, 202, 209, 216, 223, 230, 237, 244, 0, 7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 77, 84, 91, 98, 105, 112, 119, 126, 133, 140, 147, 154, 161, 168, 175, 182, 189, 196, 203, 210, 217, 224, 231, 238, 245, 1, 8, 15, 22, 29, 36, 43, 50, 57, 64, 71, 78, 85, 92, 99, 106, 113, 120, 127, 134, 141, 148, 155, 162, 169, 176, 183, 190, 197, 204, 211, 218, 225, 232, 239, 246, 2, 9, 16, 23, 30, 37, 44, 51, 58, 65, 72, 79, 86, 93, 100, 107, 114, 121, 128, 135, 142, 149, 156, 163, 170, 177, 184, 191, 198, 205, 212, 219, 226, 233, 240, 247, 3, 10, 17, 24, 31, 38, 45, 52, 59, 66, 73, 80, 87, 94, 101, 108, 115, 122, 129, 136, 143, 150, 157, 164, 171, 178, 185, 192, 199, 206, 213, 220, 227, 234, 241, 248, 4, 11, 18, 25, 32, 39, 46, 53, 60, 67, 74, 81, 88, 95, 102, 109, 116, 123, 130, 137, 144, 151, 158, 165, 172, 179, 186, 193, 200, 207, 214, 221, 228, 235, 242, 249, 5, 12, 19, 26, 33, 40, 47, 54, 61, 68, 75, 82, 89, 96, 103, 110, 117, 124, 131, 138, 145, 152, 159, 166, 173, 180, 187, 194, 201, 208, 215, 222, 229, 236, 243, 250, 6, 13, 20, 27, 34, 41, 48, 55, 62, 69, 76, 83, 90, 97, 104, 111, 118, 125, 132, 139, 146, 153, 160, 167, 174, 181, 188, 195, 202, 209, 216, 223, 230, 237, 244, 0, 7, 14, 21, 28, 35, 42, 49, 56, 63]> : vector<512xi32>
  mosaic_gpu.vector_store %c, %out : vector<512xi32>, memref<512xi32>
  return
}
func.func @check_table() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c512 = arith.constant 512 : index
  %m = memref.alloc() : memref<512xi32>
  scf.for %t = %c0 to %c128 step %c1 {
    func.call @table(%m, %t) : (memref<512xi32>, index) -> ()
  }
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %seven = arith.constant 7 : i32
  %modulus = arith.constant 251 : i32
  %bad = scf.for %i = %c0 to %c512 step %c1 iter_args(%a = %zero) -> i32 {
    %v = memref.load %m[%i] : memref<512xi32>
    %i32 = arith.index_cast %i : index to i32
    %times = arith.muli %i32, %seven : i32
    %want = arith.remui %times, %modulus : i32
    %ne = arith.cmpi ne, %v, %want : i32
    %inc = arith.select %ne, %one, %zero : i32
    %n = arith.addi %a, %inc : i32
    scf.yield %n : i32
  }
  vector.print str "wrong table elements: "
  vector.print %bad : i32
  return
}
