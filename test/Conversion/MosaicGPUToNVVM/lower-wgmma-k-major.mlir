// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms -mosaic-gpu-lower | FileCheck %s
// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-pipeline --gpu-module-to-binary=format=isa | FileCheck %s --check-prefix=PTX

// K-major B: B stored N x K (a row-major `bt`) and passed to
// wgmma as its transposed view. Inference tiles `bt` like A, (8, swizzle /
// element bytes), and the view by the transposed tile; apply-transforms
// rewrites the transpose over the tiled buffer, swapping the tile-count dims
// and the tile dims: (N / 8, K / T, 8, T) becomes (K / T, N / 8, T, 8).
// The lowering then describes B like A: K-major, LBO unused (16), SBO the
// bytes between 8-row groups of N (dim 1 of the view), K steps moving the
// start within the swizzled row. NVVM's B layout is `col` (imm-trans-b 0
// where the instruction has it: 16-bit types). tf32 and 8-bit inputs need
// exactly this form; their instructions have no transpose operands, and
// 8-bit integers multiply as s8 into s32. The zero accumulator is not read
// (scale-d = 0 on the first instruction).

// CHECK-LABEL: gpu.func @bf16_k_major
// CHECK: memref.transpose %{{.*}} (d0, d1, d2, d3) -> (d1, d0, d3, d2) {{.*}} to memref<1x8x64x8xbf16, strided<[512, 512, 1, 64]>, #gpu.address_space<workgroup>>
// CHECK: %[[DESC:.*]] = arith.constant 4611686293305360384 : i64
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// PTX-LABEL: .entry bf16_k_major(
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%r1, {{[%r0-9, ]+}}%r32}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1,  1, 0,  0;
gpu.module @kernels {
  gpu.func @bf16_k_major(%out: memref<64x64xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %a = mosaic_gpu.slice_smem 0 : memref<64x64xbf16, #gpu.address_space<workgroup>>
    %bt = mosaic_gpu.slice_smem 8192 : memref<64x64xbf16, #gpu.address_space<workgroup>>
    %b = memref.transpose %bt (d0, d1) -> (d1, d0)
        : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, strided<[1, 64]>, #gpu.address_space<workgroup>>
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    %acc = mosaic_gpu.wgmma %zero, %a, %b
        : vector<64x64xf32>, memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, strided<[1, 64]>, #gpu.address_space<workgroup>> -> vector<64x64xf32>
    mosaic_gpu.vector_store %acc, %out : vector<64x64xf32>, memref<64x64xf32>
    gpu.return
  }
}

// -----

// CHECK-LABEL: gpu.func @tf32_k_major
// CHECK: memref.transpose %{{.*}} (d0, d1, d2, d3) -> (d1, d0, d3, d2) {{.*}} to memref<2x8x32x8xf32, strided<[256, 512, 1, 32]>, #gpu.address_space<workgroup>>
// CHECK: %[[DESC:.*]] = arith.constant 4611686568183267328 : i64
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 8>, D[<f32>, <zero>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 8>, D[<f32>, <one>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
// PTX-LABEL: .entry tf32_k_major(
// PTX: wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%r1, {{[%r0-9, ]+}}%r32}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1,  1;
gpu.module @kernels {
  gpu.func @tf32_k_major(%out: memref<64x64xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %a = mosaic_gpu.slice_smem 0 : memref<64x64xf32, #gpu.address_space<workgroup>>
    %bt = mosaic_gpu.slice_smem 16384 : memref<64x64xf32, #gpu.address_space<workgroup>>
    %b = memref.transpose %bt (d0, d1) -> (d1, d0)
        : memref<64x64xf32, #gpu.address_space<workgroup>> to memref<64x64xf32, strided<[1, 64]>, #gpu.address_space<workgroup>>
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    %acc = mosaic_gpu.wgmma %zero, %a, %b
        : vector<64x64xf32>, memref<64x64xf32, #gpu.address_space<workgroup>>, memref<64x64xf32, strided<[1, 64]>, #gpu.address_space<workgroup>> -> vector<64x64xf32>
    mosaic_gpu.vector_store %acc, %out : vector<64x64xf32>, memref<64x64xf32>
    gpu.return
  }
}

// -----

// CHECK-LABEL: gpu.func @e4m3_k_major
// CHECK: memref.transpose %{{.*}} (d0, d1, d2, d3) -> (d1, d0, d3, d2) {{.*}} to memref<1x8x128x8xf8E4M3FN, strided<[1024, 1024, 1, 128]>, #gpu.address_space<workgroup>>
// CHECK: %[[DESC:.*]] = arith.constant 4611686293305360384 : i64
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
// PTX-LABEL: .entry e4m3_k_major(
// PTX: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {%r1, {{[%r0-9, ]+}}%r32}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1,  1;
gpu.module @kernels {
  gpu.func @e4m3_k_major(%out: memref<64x64xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %a = mosaic_gpu.slice_smem 0 : memref<64x128xf8E4M3FN, #gpu.address_space<workgroup>>
    %bt = mosaic_gpu.slice_smem 8192 : memref<64x128xf8E4M3FN, #gpu.address_space<workgroup>>
    %b = memref.transpose %bt (d0, d1) -> (d1, d0)
        : memref<64x128xf8E4M3FN, #gpu.address_space<workgroup>> to memref<128x64xf8E4M3FN, strided<[1, 128]>, #gpu.address_space<workgroup>>
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    %acc = mosaic_gpu.wgmma %zero, %a, %b
        : vector<64x64xf32>, memref<64x128xf8E4M3FN, #gpu.address_space<workgroup>>, memref<128x64xf8E4M3FN, strided<[1, 128]>, #gpu.address_space<workgroup>> -> vector<64x64xf32>
    mosaic_gpu.vector_store %acc, %out : vector<64x64xf32>, memref<64x64xf32>
    gpu.return
  }
}

// -----

// CHECK-LABEL: gpu.func @e5m2_k_major
// CHECK: memref.transpose %{{.*}} (d0, d1, d2, d3) -> (d1, d0, d3, d2) {{.*}} to memref<1x8x128x8xf8E5M2, strided<[1024, 1024, 1, 128]>, #gpu.address_space<workgroup>>
// CHECK: %[[DESC:.*]] = arith.constant 4611686293305360384 : i64
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 32>, D[<f32>, <zero>], A[<e5m2>, <one>, <row>], B[<e5m2>, <one>, <col>]
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 32>, D[<f32>, <one>], A[<e5m2>, <one>, <row>], B[<e5m2>, <one>, <col>]
// PTX-LABEL: .entry e5m2_k_major(
// PTX: wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2 {%r1, {{[%r0-9, ]+}}%r32}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1,  1;
gpu.module @kernels {
  gpu.func @e5m2_k_major(%out: memref<64x64xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %a = mosaic_gpu.slice_smem 0 : memref<64x128xf8E5M2, #gpu.address_space<workgroup>>
    %bt = mosaic_gpu.slice_smem 8192 : memref<64x128xf8E5M2, #gpu.address_space<workgroup>>
    %b = memref.transpose %bt (d0, d1) -> (d1, d0)
        : memref<64x128xf8E5M2, #gpu.address_space<workgroup>> to memref<128x64xf8E5M2, strided<[1, 128]>, #gpu.address_space<workgroup>>
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    %acc = mosaic_gpu.wgmma %zero, %a, %b
        : vector<64x64xf32>, memref<64x128xf8E5M2, #gpu.address_space<workgroup>>, memref<128x64xf8E5M2, strided<[1, 128]>, #gpu.address_space<workgroup>> -> vector<64x64xf32>
    mosaic_gpu.vector_store %acc, %out : vector<64x64xf32>, memref<64x64xf32>
    gpu.return
  }
}

// -----

// The two fp8 types mixed: each operand keeps its own type.
// CHECK-LABEL: gpu.func @e4m3_times_e5m2
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 32>, D[<f32>, <zero>], A[<e4m3>, <one>, <row>], B[<e5m2>, <one>, <col>]
// PTX-LABEL: .entry e4m3_times_e5m2(
// PTX: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2
gpu.module @kernels {
  gpu.func @e4m3_times_e5m2(%out: memref<64x64xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %a = mosaic_gpu.slice_smem 0 : memref<64x128xf8E4M3FN, #gpu.address_space<workgroup>>
    %bt = mosaic_gpu.slice_smem 8192 : memref<64x128xf8E5M2, #gpu.address_space<workgroup>>
    %b = memref.transpose %bt (d0, d1) -> (d1, d0)
        : memref<64x128xf8E5M2, #gpu.address_space<workgroup>> to memref<128x64xf8E5M2, strided<[1, 128]>, #gpu.address_space<workgroup>>
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    %acc = mosaic_gpu.wgmma %zero, %a, %b
        : vector<64x64xf32>, memref<64x128xf8E4M3FN, #gpu.address_space<workgroup>>, memref<128x64xf8E5M2, strided<[1, 128]>, #gpu.address_space<workgroup>> -> vector<64x64xf32>
    mosaic_gpu.vector_store %acc, %out : vector<64x64xf32>, memref<64x64xf32>
    gpu.return
  }
}

// -----

// CHECK-LABEL: gpu.func @i8_k_major
// CHECK: memref.transpose %{{.*}} (d0, d1, d2, d3) -> (d1, d0, d3, d2) {{.*}} to memref<1x8x128x8xi8, strided<[1024, 1024, 1, 128]>, #gpu.address_space<workgroup>>
// CHECK: %[[DESC:.*]] = arith.constant 4611686293305360384 : i64
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 32>, D[<s32>, <zero>], A[<s8>, <one>, <row>], B[<s8>, <one>, <col>]
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 32>, D[<s32>, <one>], A[<s8>, <one>, <row>], B[<s8>, <one>, <col>]
// PTX-LABEL: .entry i8_k_major(
// PTX: wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {%r1, {{[%r0-9, ]+}}%r32}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p;
gpu.module @kernels {
  gpu.func @i8_k_major(%out: memref<64x64xi32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %a = mosaic_gpu.slice_smem 0 : memref<64x128xi8, #gpu.address_space<workgroup>>
    %bt = mosaic_gpu.slice_smem 8192 : memref<64x128xi8, #gpu.address_space<workgroup>>
    %b = memref.transpose %bt (d0, d1) -> (d1, d0)
        : memref<64x128xi8, #gpu.address_space<workgroup>> to memref<128x64xi8, strided<[1, 128]>, #gpu.address_space<workgroup>>
    %zero = arith.constant dense<0> : vector<64x64xi32>
    %acc = mosaic_gpu.wgmma %zero, %a, %b
        : vector<64x64xi32>, memref<64x128xi8, #gpu.address_space<workgroup>>, memref<128x64xi8, strided<[1, 128]>, #gpu.address_space<workgroup>> -> vector<64x64xi32>
    mosaic_gpu.vector_store %acc, %out : vector<64x64xi32>, memref<64x64xi32>
    gpu.return
  }
}

// -----

// M-major A: A stored K x M (a row-major `at`) and passed as its transposed
// view, with B MN-major (row-major K x N). The lowering describes A like
// MN-major B: LBO the bytes between swizzle-wide blocks of M, SBO those
// between 8-row groups of K, K steps moving by whole row groups. NVVM's A
// layout is `col`: imm-trans-a 1.
// CHECK-LABEL: gpu.func @bf16_m_major_a
// CHECK: memref.transpose %{{.*}} (d0, d1, d2, d3) -> (d1, d0, d3, d2) {{.*}} to memref<1x8x64x8xbf16, strided<[512, 512, 1, 64]>, #gpu.address_space<workgroup>>
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
// PTX-LABEL: .entry bf16_m_major_a(
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%r1, {{[%r0-9, ]+}}%r32}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1,  1, 1,  1;
gpu.module @kernels {
  gpu.func @bf16_m_major_a(%out: memref<64x64xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %at = mosaic_gpu.slice_smem 0 : memref<64x64xbf16, #gpu.address_space<workgroup>>
    %a = memref.transpose %at (d0, d1) -> (d1, d0)
        : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, strided<[1, 64]>, #gpu.address_space<workgroup>>
    %b = mosaic_gpu.slice_smem 8192 : memref<64x64xbf16, #gpu.address_space<workgroup>>
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    %acc = mosaic_gpu.wgmma %zero, %a, %b
        : vector<64x64xf32>, memref<64x64xbf16, strided<[1, 64]>, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
    mosaic_gpu.vector_store %acc, %out : vector<64x64xf32>, memref<64x64xf32>
    gpu.return
  }
}
