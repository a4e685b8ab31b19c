// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-lower | FileCheck %s

// A strided elementwise kernel: each thread loads its 4-element chunks
// (chunk i of thread t starts at (i * 128 + t) * 4), computes on its 64
// registers, and stores them back; the splat constant is spread over the
// registers where it is used. Without a known block size, the thread's
// index is linearized from the block's runtime dimensions, as CUDA numbers
// threads into warps: x + ntid.x * (y + ntid.y * z).
// CHECK-LABEL: func @elementwise
// CHECK: %[[X:.*]] = gpu.thread_id x
// CHECK: %[[Y:.*]] = gpu.thread_id y
// CHECK: %[[Z:.*]] = gpu.thread_id z
// CHECK: %[[NY:.*]] = gpu.block_dim y
// CHECK: %[[ZPLANE:.*]] = arith.muli %[[NY]], %[[Z]] : index
// CHECK: %[[YZ:.*]] = arith.addi %[[Y]], %[[ZPLANE]] : index
// CHECK: %[[NX:.*]] = gpu.block_dim x
// CHECK: %[[ROWS:.*]] = arith.muli %[[NX]], %[[YZ]] : index
// CHECK: %[[TID:.*]] = arith.addi %[[X]], %[[ROWS]] : index
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[T:.*]] = arith.remui %[[TID]], %[[C128]] : index
// CHECK: %[[SPLAT:.*]] = arith.constant dense<2.000000e+00> : vector<1xf32>
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<64xf32>
// CHECK: %[[FIRST0:.*]] = arith.constant 0 : index
// CHECK: %[[FOUR:.*]] = arith.constant 4 : index
// CHECK: %[[IDX0:.*]] = arith.addi %[[FIRST0]], %[[T]] : index
// CHECK: %[[OFF0:.*]] = arith.muli %[[IDX0]], %[[FOUR]] : index
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[COL0:.*]] = arith.remui %[[OFF0]], %[[C64]] : index
// CHECK: %[[ROW0:.*]] = arith.divui %[[OFF0]], %[[C64]] : index
// CHECK: %[[CHUNK0:.*]] = vector.load %{{.*}}[%[[ROW0]], %[[COL0]]] : memref<128x64xf32>, vector<4xf32>
// CHECK: vector.insert_strided_slice %[[CHUNK0]], %[[ZERO]] {offsets = [0], strides = [1]} : vector<4xf32> into vector<64xf32>
// CHECK-COUNT-15: vector.load {{.*}} : memref<128x64xf32>, vector<4xf32>
// CHECK: %[[LAST:.*]] = vector.insert_strided_slice {{.*}} {offsets = [60], strides = [1]} : vector<4xf32> into vector<64xf32>
// CHECK: %[[SCALAR:.*]] = vector.extract %[[SPLAT]][0] : f32 from vector<1xf32>
// CHECK: %[[SPREAD:.*]] = vector.broadcast %[[SCALAR]] : f32 to vector<64xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[LAST]], %[[SPREAD]] : vector<64xf32>
// CHECK: %[[EXP:.*]] = math.exp %[[SUM]] : vector<64xf32>
// CHECK: vector.extract_strided_slice %[[EXP]] {offsets = [0], sizes = [4], strides = [1]} : vector<64xf32> to vector<4xf32>
// CHECK-COUNT-16: vector.store {{.*}} : memref<128x64xf32>, vector<4xf32>
// CHECK-NOT: mosaic_gpu
// CHECK: return
func.func @elementwise(%in: memref<128x64xf32>, %out: memref<128x64xf32>) {
  %c = arith.constant dense<2.0> : vector<128x64xf32>
  %v = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>
  %s = arith.addf %v, %c : vector<128x64xf32>
  %e = math.exp %s : vector<128x64xf32>
  mosaic_gpu.vector_store %e, %out : vector<128x64xf32>, memref<128x64xf32>
  return
}

// -----

// Splat values stay one register per thread until a strided use needs more.
// CHECK-LABEL: func @splat_only
// CHECK: %[[A:.*]] = arith.constant dense<1.000000e+00> : vector<1xf32>
// CHECK: %[[B:.*]] = arith.mulf %[[A]], %[[A]] : vector<1xf32>
// CHECK: %[[S:.*]] = vector.extract %[[B]][0] : f32 from vector<1xf32>
// CHECK: %[[R:.*]] = vector.broadcast %[[S]] : f32 to vector<2xf32>
// CHECK: %[[CHUNK:.*]] = vector.extract_strided_slice %[[R]] {offsets = [0], sizes = [2], strides = [1]}
// CHECK: vector.store %[[CHUNK]], {{.*}} : memref<256xf32>, vector<2xf32>
func.func @splat_only(%out: memref<256xf32>) {
  %a = arith.constant dense<1.0> : vector<256xf32>
  %b = arith.mulf %a, %a : vector<256xf32>
  %s = mosaic_gpu.layout_cast %b : vector<256xf32> to #mosaic_gpu.WGSplatFragLayout<[256]>
  mosaic_gpu.vector_store %b, %out : vector<256xf32>, memref<256xf32>
  return
}

// -----

// slice_smem is a view of the kernel's dynamic shared memory at its offset.
// Kernel buffers are declared 16-byte aligned (the launch contract).
// CHECK-LABEL: gpu.func @through_shared_memory
// CHECK-SAME: (%{{.*}}: memref<128x64xf32> {llvm.align = 16 : i64}, %{{.*}}: memref<128x64xf32> {llvm.align = 16 : i64}) kernel
// CHECK: %[[BASE:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[OFFSET:.*]] = arith.constant 1024 : index
// CHECK: %[[VIEW:.*]] = memref.view %[[BASE]][%[[OFFSET]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<128x64xf32, #gpu.address_space<workgroup>>
// CHECK: vector.store {{.*}}, %[[VIEW]][{{.*}}] : memref<128x64xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: gpu.barrier
// CHECK: vector.load %[[VIEW]][{{.*}}] : memref<128x64xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-NOT: mosaic_gpu
gpu.module @kernels {
  gpu.func @through_shared_memory(%in: memref<128x64xf32>, %out: memref<128x64xf32>) kernel {
    %s = mosaic_gpu.slice_smem 1024 : memref<128x64xf32, #gpu.address_space<workgroup>>
    %v = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>
    mosaic_gpu.vector_store %v, %s : vector<128x64xf32>, memref<128x64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %w = mosaic_gpu.vector_load %s : memref<128x64xf32, #gpu.address_space<workgroup>> -> vector<128x64xf32>
    mosaic_gpu.vector_store %w, %out : vector<128x64xf32>, memref<128x64xf32>
    gpu.return
  }
}

// -----

// Undefined vectors (ub.poison, llvm.mlir.undef, llvm.mlir.poison) are
// Splat: one undefined register, spread where a user needs more, as a
// loop's initial value too. Nothing is materialized for them.
// CHECK-LABEL: func @undefined
// CHECK: %[[UNDEF:.*]] = llvm.mlir.undef : vector<1xf32>
// CHECK: %[[POISON:.*]] = llvm.mlir.poison : vector<1xf32>
// CHECK: %[[U:.*]] = vector.extract %[[UNDEF]][0] : f32 from vector<1xf32>
// CHECK: %[[INIT:.*]] = vector.broadcast %[[U]] : f32 to vector<2xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[INIT]]) -> (vector<2xf32>)
// CHECK: %[[P:.*]] = vector.extract %[[POISON]][0] : f32 from vector<1xf32>
// CHECK: %[[SPREAD:.*]] = vector.broadcast %[[P]] : f32 to vector<2xf32>
// CHECK: arith.mulf %{{.*}}, %[[SPREAD]] : vector<2xf32>
// CHECK-NOT: ub.poison
func.func @undefined(%ref: memref<256xf32>, %out: memref<256xf32>) {
  %u = llvm.mlir.undef : vector<256xf32>
  %p = ub.poison : vector<256xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %acc = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %u) -> (vector<256xf32>) {
    %v = mosaic_gpu.vector_load %ref : memref<256xf32> -> vector<256xf32>
    %n = arith.addf %a, %v : vector<256xf32>
    scf.yield %n : vector<256xf32>
  }
  %m = arith.mulf %acc, %p : vector<256xf32>
  mosaic_gpu.vector_store %m, %out : vector<256xf32>, memref<256xf32>
  return
}
