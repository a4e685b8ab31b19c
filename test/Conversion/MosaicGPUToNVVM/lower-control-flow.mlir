// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms -mosaic-gpu-lower | FileCheck %s

// Loops and conditionals are kept and retyped in place: a carried
// vector<128x64xf32> in the strided layout (vector size 4) becomes the
// thread's vector<64xf32> of registers in the init operand, the iter_arg,
// the yield and the result, while a carried index stays as it is. The splat
// initial value is spread over the registers before the loop. The layout
// annotations are dropped.
// CHECK-LABEL: func @loop
// CHECK: %[[V:.*]] = vector.insert_strided_slice %{{.*}} {offsets = [60], strides = [1]} : vector<4xf32> into vector<64xf32>
// CHECK: %[[SPLAT:.*]] = arith.constant dense<0.000000e+00> : vector<1xf32>
// CHECK: %[[SCALAR:.*]] = vector.extract %[[SPLAT]][0] : f32 from vector<1xf32>
// CHECK: %[[INIT:.*]] = vector.broadcast %[[SCALAR]] : f32 to vector<64xf32>
// CHECK: %[[R:.*]]:2 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]], %[[COUNT:.*]] = %{{.*}}) -> (vector<64xf32>, index) {
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[ACC]], %[[V]] : vector<64xf32>
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[COUNT]], %{{.*}} : index
// CHECK-NEXT: scf.yield %[[SUM]], %[[NEXT]] : vector<64xf32>, index
// CHECK-NEXT: }
// CHECK-NOT: _layouts
// CHECK: vector.extract_strided_slice %[[R]]#0 {offsets = [0], sizes = [4], strides = [1]} : vector<64xf32> to vector<4xf32>
// CHECK: return %[[R]]#1 : index
func.func @loop(%in: memref<128x64xf32>, %out: memref<128x64xf32>, %n: index) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>
  %z = arith.constant dense<0.0> : vector<128x64xf32>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z, %count = %c0) -> (vector<128x64xf32>, index) {
    %s = arith.addf %acc, %v : vector<128x64xf32>
    %next = arith.addi %count, %c1 : index
    scf.yield %s, %next : vector<128x64xf32>, index
  }
  mosaic_gpu.vector_store %r#0, %out : vector<128x64xf32>, memref<128x64xf32>
  return %r#1 : index
}

// -----

// An scf.if yielding vectors: its result is retyped to the registers of its
// layout, and each branch yields registers of that layout; the splat
// constant of the else branch is spread inside that branch.
// CHECK-LABEL: func @branch
// CHECK-SAME: %[[P:[^:]*]]: i1)
// CHECK: %[[V:.*]] = vector.insert_strided_slice %{{.*}} {offsets = [60], strides = [1]} : vector<4xf32> into vector<64xf32>
// CHECK: %[[R:.*]] = scf.if %[[P]] -> (vector<64xf32>) {
// CHECK-NEXT: %[[E:.*]] = math.exp %[[V]] : vector<64xf32>
// CHECK-NEXT: scf.yield %[[E]] : vector<64xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : vector<1xf32>
// CHECK-NEXT: %[[SCALAR:.*]] = vector.extract %[[ONE]][0] : f32 from vector<1xf32>
// CHECK-NEXT: %[[SPREAD:.*]] = vector.broadcast %[[SCALAR]] : f32 to vector<64xf32>
// CHECK-NEXT: scf.yield %[[SPREAD]] : vector<64xf32>
// CHECK-NEXT: }
// CHECK-NOT: _layouts
// CHECK: vector.extract_strided_slice %[[R]] {offsets = [0], sizes = [4], strides = [1]} : vector<64xf32> to vector<4xf32>
func.func @branch(%in: memref<128x64xf32>, %out: memref<128x64xf32>, %p: i1) {
  %v = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>
  %r = scf.if %p -> (vector<128x64xf32>) {
    %e = math.exp %v : vector<128x64xf32>
    scf.yield %e : vector<128x64xf32>
  } else {
    %c = arith.constant dense<1.0> : vector<128x64xf32>
    scf.yield %c : vector<128x64xf32>
  }
  mosaic_gpu.vector_store %r, %out : vector<128x64xf32>, memref<128x64xf32>
  return
}

// -----

// Nesting: a WGMMA 64x16 vector (8 registers per thread) carried by a loop
// through an scf.if in its body; the loop argument, the if result and both
// yields are all vector<8xf32>.
// CHECK-LABEL: func @nested
// CHECK-SAME: %[[P:[^:]*]]: i1)
// CHECK: %[[V:.*]] = vector.insert_strided_slice %{{.*}} {offsets = [6], strides = [1]} : vector<2xf32> into vector<8xf32>
// CHECK: %[[R:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[V]]) -> (vector<8xf32>) {
// CHECK-NEXT: %[[NEXT:.*]] = scf.if %[[P]] -> (vector<8xf32>) {
// CHECK-NEXT: %[[D:.*]] = arith.addf %[[ACC]], %[[ACC]] : vector<8xf32>
// CHECK-NEXT: scf.yield %[[D]] : vector<8xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[ACC]] : vector<8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: scf.yield %[[NEXT]] : vector<8xf32>
// CHECK-NEXT: }
// CHECK-NOT: _layouts
// CHECK: vector.extract_strided_slice %[[R]] {offsets = [0], sizes = [2], strides = [1]} : vector<8xf32> to vector<2xf32>
#wgmma = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
func.func @nested(%in: memref<64x16xf32>, %out: memref<64x16xf32>, %n: index, %p: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = mosaic_gpu.vector_load %in : memref<64x16xf32> -> vector<64x16xf32>
  %w = mosaic_gpu.layout_cast %v : vector<64x16xf32> to #wgmma
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %w) -> (vector<64x16xf32>) {
    %next = scf.if %p -> (vector<64x16xf32>) {
      %d = arith.addf %acc, %acc : vector<64x16xf32>
      scf.yield %d : vector<64x16xf32>
    } else {
      scf.yield %acc : vector<64x16xf32>
    }
    scf.yield %next : vector<64x16xf32>
  }
  mosaic_gpu.vector_store %r, %out : vector<64x16xf32>, memref<64x16xf32>
  return
}

// -----

// scf.while: the init, the before and after region arguments, the condition
// and yield operands and the results all become registers; the carried
// index is untouched.
// CHECK-LABEL: func @while_loop
// CHECK: %[[V:.*]] = vector.insert_strided_slice %{{.*}} {offsets = [60], strides = [1]} : vector<4xf32> into vector<64xf32>
// CHECK: %[[R:.*]]:2 = scf.while (%[[X:.*]] = %[[V]], %[[I:.*]] = %{{.*}}) : (vector<64xf32>, index) -> (vector<64xf32>, index) {
// CHECK-NEXT: %[[MORE:.*]] = arith.cmpi ult, %[[I]], %{{.*}} : index
// CHECK-NEXT: scf.condition(%[[MORE]]) %[[X]], %[[I]] : vector<64xf32>, index
// CHECK-NEXT: } do {
// CHECK-NEXT: ^bb0(%[[Y:.*]]: vector<64xf32>, %[[J:.*]]: index):
// CHECK-NEXT: %[[E:.*]] = math.exp %[[Y]] : vector<64xf32>
// CHECK-NEXT: %[[K:.*]] = arith.addi %[[J]], %{{.*}} : index
// CHECK-NEXT: scf.yield %[[E]], %[[K]] : vector<64xf32>, index
// CHECK-NEXT: }
// CHECK-NOT: _layouts
// CHECK: vector.extract_strided_slice %[[R]]#0 {offsets = [0], sizes = [4], strides = [1]} : vector<64xf32> to vector<4xf32>
func.func @while_loop(%in: memref<128x64xf32>, %out: memref<128x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>
  %r:2 = scf.while (%x = %v, %i = %c0) : (vector<128x64xf32>, index) -> (vector<128x64xf32>, index) {
    %more = arith.cmpi ult, %i, %n : index
    scf.condition(%more) %x, %i : vector<128x64xf32>, index
  } do {
  ^bb0(%y: vector<128x64xf32>, %j: index):
    %e = math.exp %y : vector<128x64xf32>
    %k = arith.addi %j, %c1 : index
    scf.yield %e, %k : vector<128x64xf32>, index
  }
  mosaic_gpu.vector_store %r#0, %out : vector<128x64xf32>, memref<128x64xf32>
  return
}
