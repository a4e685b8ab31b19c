// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms -mosaic-gpu-lower | FileCheck %s

// A 128x128 f32 accumulator times bf16 A (128x64) and B (64x128), both in
// shared memory tiled (8, 64) with a 128-byte swizzle. The accumulator's
// WGMMA registers (128 per thread) are packed 64 at a time into the struct of
// one m64n128k16 instruction: 2 M blocks x 4 K steps = 8 wgmma.mma_async,
// each K step chained on the previous one's struct. B is row-major K x N,
// i.e. N-major, which wgmma reads transposed: layout `row` for B.
//
// Descriptors: bits 0-13 hold (address & 0x3FFFF) >> 4, bits 16-29 LBO >> 4,
// bits 32-45 SBO >> 4, bits 62-63 the swizzle mode (1 = 128 bytes).
//   A, memref<16x1x8x64xbf16> (byte strides 1024, 1024, 128, 2): LBO 16
//     (unused when K-major and swizzled), SBO 1024 between 8-row groups:
//     1 << 16 | 64 << 32 | 1 << 62 = 4611686293305360384.
//   B, memref<8x2x8x64xbf16> (byte strides 2048, 1024, 128, 2): LBO 1024
//     between 64-column blocks, SBO 2048 between 8-row groups of K:
//     64 << 16 | 128 << 32 | 1 << 62 = 4611686568187396096.
// A K step (16 bf16, 32 bytes) moves A's start 32 bytes within the swizzled
// row and B's by two 8-row groups (4096 bytes); the second M block starts
// 64 rows (8192 bytes) into A. Nothing wrote shared memory before, so no
// proxy fence precedes the wgmma fence.
//
// The accumulator is a known zero: no register is written for it (the PTX
// ISA leaves a wgmma undefined when its registers are written after the
// wgmma.fence, and LLVM would materialize the zeros just before their use);
// each M block's first instruction has scale-d = 0 and ignores D instead.
// CHECK-LABEL: gpu.func @mma
// CHECK-DAG: %[[A_ADDR:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK-DAG: %[[B_ADDR:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK-NOT: nvvm.fence.proxy
// CHECK: %[[PACKED0:.*]] = llvm.mlir.undef : !llvm.struct<(f32, {{.*}})>
// CHECK: %[[PACKED1:.*]] = llvm.mlir.undef : !llvm.struct<(f32, {{.*}})>
// CHECK-NOT: llvm.insertvalue
// CHECK-NOT: llvm.inline_asm
// CHECK: nvvm.wgmma.fence.aligned
// K step 0 of M block 0.
// CHECK: %[[A_OFF0:.*]] = arith.constant 0 : i64
// CHECK: %[[A_START0:.*]] = arith.addi %[[A_ADDR]], %[[A_OFF0]] : i64
// CHECK: %[[FOUR:.*]] = arith.constant 4 : i64
// CHECK: %[[MASK:.*]] = arith.constant 262143 : i64
// CHECK: %[[A_MASKED:.*]] = arith.andi %[[A_START0]], %[[MASK]] : i64
// CHECK: %[[A_ENCODED:.*]] = arith.shrui %[[A_MASKED]], %[[FOUR]] : i64
// CHECK: %[[A_FIXED:.*]] = arith.constant 4611686293305360384 : i64
// CHECK: %[[A_DESC0:.*]] = arith.ori %[[A_ENCODED]], %[[A_FIXED]] : i64
// CHECK: %[[B_OFF0:.*]] = arith.constant 0 : i64
// CHECK: %[[B_START0:.*]] = arith.addi %[[B_ADDR]], %[[B_OFF0]] : i64
// CHECK: %[[B_ENCODED:.*]] = arith.shrui %{{.*}}, %{{.*}} : i64
// CHECK: %[[B_FIXED:.*]] = arith.constant 4611686568187396096 : i64
// CHECK: %[[B_DESC0:.*]] = arith.ori %[[B_ENCODED]], %[[B_FIXED]] : i64
// CHECK: %[[D0:.*]] = nvvm.wgmma.mma_async %[[A_DESC0]], %[[B_DESC0]], %[[PACKED0]], <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// K steps 1-3 accumulate.
// CHECK: %[[A_OFF1:.*]] = arith.constant 32 : i64
// CHECK: arith.addi %[[A_ADDR]], %[[A_OFF1]] : i64
// CHECK: %[[B_OFF1:.*]] = arith.constant 4096 : i64
// CHECK: arith.addi %[[B_ADDR]], %[[B_OFF1]] : i64
// CHECK: %[[D1:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D0]], <m = 64, n = 128, k = 16>, D[<f32>, <one>]
// CHECK: %[[A_OFF2:.*]] = arith.constant 64 : i64
// CHECK: arith.addi %[[A_ADDR]], %[[A_OFF2]] : i64
// CHECK: %[[B_OFF2:.*]] = arith.constant 8192 : i64
// CHECK: arith.addi %[[B_ADDR]], %[[B_OFF2]] : i64
// CHECK: %[[D2:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D1]], <m = 64, n = 128, k = 16>
// CHECK: %[[A_OFF3:.*]] = arith.constant 96 : i64
// CHECK: arith.addi %[[A_ADDR]], %[[A_OFF3]] : i64
// CHECK: %[[B_OFF3:.*]] = arith.constant 12288 : i64
// CHECK: arith.addi %[[B_ADDR]], %[[B_OFF3]] : i64
// CHECK: %[[D3:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D2]], <m = 64, n = 128, k = 16>
// M block 1 (registers 64-127) starts from zero too.
// CHECK: %[[A_OFF4:.*]] = arith.constant 8192 : i64
// CHECK: arith.addi %[[A_ADDR]], %[[A_OFF4]] : i64
// CHECK: %[[B_OFF4:.*]] = arith.constant 0 : i64
// CHECK: arith.addi %[[B_ADDR]], %[[B_OFF4]] : i64
// CHECK: %[[D4:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[PACKED1]], <m = 64, n = 128, k = 16>, D[<f32>, <zero>]
// CHECK: %[[A_OFF5:.*]] = arith.constant 8224 : i64
// CHECK: arith.addi %[[A_ADDR]], %[[A_OFF5]] : i64
// CHECK: %[[D5:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D4]], <m = 64, n = 128, k = 16>
// CHECK: %[[A_OFF6:.*]] = arith.constant 8256 : i64
// CHECK: arith.addi %[[A_ADDR]], %[[A_OFF6]] : i64
// CHECK: %[[D6:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D5]], <m = 64, n = 128, k = 16>
// CHECK: %[[A_OFF7:.*]] = arith.constant 8288 : i64
// CHECK: arith.addi %[[A_ADDR]], %[[A_OFF7]] : i64
// CHECK: %[[B_OFF7:.*]] = arith.constant 12288 : i64
// CHECK: arith.addi %[[B_ADDR]], %[[B_OFF7]] : i64
// CHECK: %[[D7:.*]] = nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %[[D6]], <m = 64, n = 128, k = 16>
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// wait_group covers only the executing warp's part of the MMA: a warpgroup
// barrier (named barrier 1 + warpgroup index, 128 threads) orders every
// warp's completion before the operands' buffers can be refilled.
// CHECK: %[[WG_THREADS:.*]] = arith.constant 128 : i32
// CHECK-NEXT: nvvm.barrier id = %{{.*}} number_of_threads = %[[WG_THREADS]]
// The results are unpacked back into the 128 registers, block by block.
// CHECK: %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : vector<128xf32>
// CHECK: %[[Y0:.*]] = llvm.extractvalue %[[D3]][0]
// CHECK: vector.insert %[[Y0]], %[[ZEROS]] [0] : f32 into vector<128xf32>
// CHECK: %[[Y64:.*]] = llvm.extractvalue %[[D7]][0]
// CHECK: vector.insert %[[Y64]], %{{.*}} [64] : f32 into vector<128xf32>
// CHECK: %[[Y127:.*]] = llvm.extractvalue %[[D7]][63]
// CHECK: %[[RESULT:.*]] = vector.insert %[[Y127]], %{{.*}} [127] : f32 into vector<128xf32>
// CHECK: vector.extract_strided_slice %[[RESULT]] {offsets = [0], sizes = [2], strides = [1]} : vector<128xf32> to vector<2xf32>
// CHECK-NOT: mosaic_gpu.
gpu.module @kernels {
  gpu.func @mma(%out: memref<128x128xf32>) kernel {
    %a = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
    %b = mosaic_gpu.slice_smem 16384 : memref<64x128xbf16, #gpu.address_space<workgroup>>
    %zero = arith.constant dense<0.0> : vector<128x128xf32>
    %r = mosaic_gpu.wgmma %zero, %a, %b
        : vector<128x128xf32>, memref<128x64xbf16, #gpu.address_space<workgroup>>,
          memref<64x128xbf16, #gpu.address_space<workgroup>> -> vector<128x128xf32>
    mosaic_gpu.vector_store %r, %out : vector<128x128xf32>, memref<128x128xf32>
    gpu.return
  }
}

// -----

// The accumulator carried by a loop: the iter_arg, the loop result and the
// yield become the thread's 128 registers, the splat initial value is spread
// over them before the loop, and the body reads and rebuilds the registers
// around the same 8 instructions.
// CHECK-LABEL: gpu.func @mma_loop
// CHECK: %[[SPLAT:.*]] = arith.constant dense<0.000000e+00> : vector<1xf32>
// CHECK: %[[SCALAR:.*]] = vector.extract %[[SPLAT]][0] : f32 from vector<1xf32>
// CHECK: %[[INIT:.*]] = vector.broadcast %[[SCALAR]] : f32 to vector<128xf32>
// CHECK: %[[RESULT:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (vector<128xf32>) {
// The iter_arg's 128 registers pass through one opaque asm statement before
// the wgmma.fence, so nothing can write them between the fence and the MMA.
// CHECK: vector.extract %[[ACC]][0] : f32 from vector<128xf32>
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "", "=f,{{[=f,]+}}=f,0,1,{{.*}},126,127" {{.*}} -> !llvm.struct<(f32, {{.*}})>
// CHECK-NOT: vector.extract %[[ACC]]
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>]
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: %[[NEXT:.*]] = vector.insert %{{.*}}, %{{.*}} [127] : f32 into vector<128xf32>
// CHECK-NEXT: scf.yield %[[NEXT]] : vector<128xf32>
// CHECK-NEXT: }
// CHECK: vector.extract_strided_slice %[[RESULT]] {offsets = [0], sizes = [2], strides = [1]} : vector<128xf32> to vector<2xf32>
// CHECK-NOT: mosaic_gpu.
gpu.module @kernels {
  gpu.func @mma_loop(%out: memref<128x128xf32>, %n: index) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %a = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
    %b = mosaic_gpu.slice_smem 16384 : memref<64x128xbf16, #gpu.address_space<workgroup>>
    %zero = arith.constant dense<0.0> : vector<128x128xf32>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (vector<128x128xf32>) {
      %next = mosaic_gpu.wgmma %acc, %a, %b
          : vector<128x128xf32>, memref<128x64xbf16, #gpu.address_space<workgroup>>,
            memref<64x128xbf16, #gpu.address_space<workgroup>> -> vector<128x128xf32>
      scf.yield %next : vector<128x128xf32>
    }
    mosaic_gpu.vector_store %r, %out : vector<128x128xf32>, memref<128x128xf32>
    gpu.return
  }
}

// -----

// The threads wrote A with generic-proxy stores (4 stmatrix.x4 into the
// swizzled tile, 4 register pairs each); wgmma reads it through the async
// proxy, so a proxy fence and a warpgroup barrier come before the wgmma
// fence.
// CHECK-LABEL: gpu.func @written_a
// CHECK-COUNT-4: nvvm.stmatrix %{{.*}} : !llvm.ptr<3>, i32, i32, i32, i32
// CHECK-NOT: nvvm.stmatrix
// CHECK-NOT: llvm.store
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
gpu.module @kernels {
  gpu.func @written_a(%in: memref<64x64xbf16>, %out: memref<64x64xf32>) kernel {
    %a = mosaic_gpu.slice_smem 0 : memref<64x64xbf16, #gpu.address_space<workgroup>>
    %b = mosaic_gpu.slice_smem 8192 : memref<64x64xbf16, #gpu.address_space<workgroup>>
    %v = mosaic_gpu.vector_load %in : memref<64x64xbf16> -> vector<64x64xbf16>
    mosaic_gpu.vector_store %v, %a : vector<64x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    %r = mosaic_gpu.wgmma %zero, %a, %b
        : vector<64x64xf32>, memref<64x64xbf16, #gpu.address_space<workgroup>>,
          memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
    mosaic_gpu.vector_store %r, %out : vector<64x64xf32>, memref<64x64xf32>
    gpu.return
  }
}

// -----

// A in registers (WGMMA layout): NVVM's op only takes A from shared memory,
// so each instruction is inline PTX with A as four 32-bit registers (8 bf16
// elements: for M block 0 and K step s, register positions 8s .. 8s + 7),
// the accumulator registers tied in and out, and B's descriptor. A's 32
// bf16 registers pass, as 16 words, through an opaque asm statement before
// the wgmma.fence, and the fragments are cut from its results before the
// fence too; the zero accumulator is not read (scale-d = 0 first).
// CHECK-LABEL: gpu.func @register_a
// CHECK: vector.bitcast %{{.*}} : vector<32xbf16> to vector<16xi32>
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "", "=r,{{[=r,]+}}=r,0,1,{{.*}},15"
// CHECK: vector.bitcast %{{.*}} : vector<16xi32> to vector<32xbf16>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [8], strides = [1]} : vector<32xbf16> to vector<8xbf16>
// CHECK: vector.bitcast %{{.*}} : vector<8xbf16> to vector<4xi32>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [24], sizes = [8], strides = [1]} : vector<32xbf16> to vector<8xbf16>
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NOT: vector.extract_strided_slice
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, 0, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, {{.*}}, $31}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;\0A}\0A", "=f,{{.*}},=f,0,1,{{.*}},31,r,r,r,r,l"
// CHECK-COUNT-3: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;
// CHECK-NOT: llvm.inline_asm
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
gpu.module @kernels {
  gpu.func @register_a(%a: memref<64x64xbf16>, %out: memref<64x64xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %b = mosaic_gpu.slice_smem 0 : memref<64x64xbf16, #gpu.address_space<workgroup>>
    %a_regs = mosaic_gpu.vector_load %a : memref<64x64xbf16> -> vector<64x64xbf16>
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    %acc = mosaic_gpu.wgmma %zero, %a_regs, %b
        : vector<64x64xf32>, vector<64x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>> -> vector<64x64xf32>
    mosaic_gpu.vector_store %acc, %out : vector<64x64xf32>, memref<64x64xf32>
    gpu.return
  }
}

// -----

// An f16 accumulator keeps its pairs packed in 32-bit registers (16 per
// 64-row block for N = 64), which NVVM's op does not take: the instruction is
// inline PTX, A and B from shared memory (imm-trans-a 0, imm-trans-b 1).
// The zero accumulator is not read: the first instruction has scale-d = 0.
// CHECK-LABEL: gpu.func @f16_accumulator
// CHECK: llvm.mlir.undef : !llvm.struct<(i32, {{.*}})>
// CHECK-NEXT: nvvm.wgmma.fence.aligned
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, 0, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16 {$0, {{.*}}, $15}, $32, $33, p, 1, 1, 0, 1;\0A}\0A", "=r,{{.*}},=r,0,{{.*}},15,l,l"
// CHECK-COUNT-3: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;
// CHECK-NOT: llvm.inline_asm
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: vector.bitcast %{{.*}} : vector<1xi32> to vector<2xf16>
gpu.module @kernels {
  gpu.func @f16_accumulator(%out: memref<64x64xf16>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %a = mosaic_gpu.slice_smem 0 : memref<64x64xf16, #gpu.address_space<workgroup>>
    %b = mosaic_gpu.slice_smem 8192 : memref<64x64xf16, #gpu.address_space<workgroup>>
    %zero = arith.constant dense<0.0> : vector<64x64xf16>
    %acc = mosaic_gpu.wgmma %zero, %a, %b
        : vector<64x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf16, #gpu.address_space<workgroup>> -> vector<64x64xf16>
    mosaic_gpu.vector_store %acc, %out : vector<64x64xf16>, memref<64x64xf16>
    gpu.return
  }
}
