// RUN: mosaic-opt %s -split-input-file -verify-diagnostics

// TMA reductions (`cp.reduce.async.bulk.tensor`) are defined on some element
// types only (PTX ISA, the table of .redOp and types): add on f16, bf16,
// f32, i32 and i64; floating-point min and max on f16 and bf16; signed and
// unsigned min and max on i32 and i64; inc and dec on i32; and, or and xor
// on i32 and i64. The first function uses every accepted pair; each case
// after it is one rejected pair, every reduction against every one of f16,
// bf16, f32, i32 and i64 it does not take, then other types.

func.func @accepted(%s_f16: memref<16x8xf16, #gpu.address_space<workgroup>>, %g_f16: memref<64x8xf16>,
    %s_bf16: memref<16x8xbf16, #gpu.address_space<workgroup>>, %g_bf16: memref<64x8xbf16>,
    %s_f32: memref<16x8xf32, #gpu.address_space<workgroup>>, %g_f32: memref<64x8xf32>,
    %s_i32: memref<16x8xi32, #gpu.address_space<workgroup>>, %g_i32: memref<64x8xi32>,
    %s_i64: memref<16x8xi64, #gpu.address_space<workgroup>>, %g_i64: memref<64x8xi64>,
    %i: i32) {
  mosaic_gpu.async_store %s_f16 to %g_f16[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<add>}
      : memref<16x8xf16, #gpu.address_space<workgroup>>, memref<64x8xf16>
  mosaic_gpu.async_store %s_bf16 to %g_bf16[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<add>}
      : memref<16x8xbf16, #gpu.address_space<workgroup>>, memref<64x8xbf16>
  mosaic_gpu.async_store %s_f32 to %g_f32[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<add>}
      : memref<16x8xf32, #gpu.address_space<workgroup>>, memref<64x8xf32>
  mosaic_gpu.async_store %s_i32 to %g_i32[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<add>}
      : memref<16x8xi32, #gpu.address_space<workgroup>>, memref<64x8xi32>
  mosaic_gpu.async_store %s_i64 to %g_i64[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<add>}
      : memref<16x8xi64, #gpu.address_space<workgroup>>, memref<64x8xi64>
  mosaic_gpu.async_store %s_f16 to %g_f16[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<min>}
      : memref<16x8xf16, #gpu.address_space<workgroup>>, memref<64x8xf16>
  mosaic_gpu.async_store %s_bf16 to %g_bf16[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<min>}
      : memref<16x8xbf16, #gpu.address_space<workgroup>>, memref<64x8xbf16>
  mosaic_gpu.async_store %s_f16 to %g_f16[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<max>}
      : memref<16x8xf16, #gpu.address_space<workgroup>>, memref<64x8xf16>
  mosaic_gpu.async_store %s_bf16 to %g_bf16[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<max>}
      : memref<16x8xbf16, #gpu.address_space<workgroup>>, memref<64x8xbf16>
  mosaic_gpu.async_store %s_i32 to %g_i32[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<smin>}
      : memref<16x8xi32, #gpu.address_space<workgroup>>, memref<64x8xi32>
  mosaic_gpu.async_store %s_i64 to %g_i64[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<smin>}
      : memref<16x8xi64, #gpu.address_space<workgroup>>, memref<64x8xi64>
  mosaic_gpu.async_store %s_i32 to %g_i32[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<smax>}
      : memref<16x8xi32, #gpu.address_space<workgroup>>, memref<64x8xi32>
  mosaic_gpu.async_store %s_i64 to %g_i64[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<smax>}
      : memref<16x8xi64, #gpu.address_space<workgroup>>, memref<64x8xi64>
  mosaic_gpu.async_store %s_i32 to %g_i32[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<umin>}
      : memref<16x8xi32, #gpu.address_space<workgroup>>, memref<64x8xi32>
  mosaic_gpu.async_store %s_i64 to %g_i64[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<umin>}
      : memref<16x8xi64, #gpu.address_space<workgroup>>, memref<64x8xi64>
  mosaic_gpu.async_store %s_i32 to %g_i32[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<umax>}
      : memref<16x8xi32, #gpu.address_space<workgroup>>, memref<64x8xi32>
  mosaic_gpu.async_store %s_i64 to %g_i64[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<umax>}
      : memref<16x8xi64, #gpu.address_space<workgroup>>, memref<64x8xi64>
  mosaic_gpu.async_store %s_i32 to %g_i32[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<inc>}
      : memref<16x8xi32, #gpu.address_space<workgroup>>, memref<64x8xi32>
  mosaic_gpu.async_store %s_i32 to %g_i32[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<dec>}
      : memref<16x8xi32, #gpu.address_space<workgroup>>, memref<64x8xi32>
  mosaic_gpu.async_store %s_i32 to %g_i32[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<and>}
      : memref<16x8xi32, #gpu.address_space<workgroup>>, memref<64x8xi32>
  mosaic_gpu.async_store %s_i64 to %g_i64[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<and>}
      : memref<16x8xi64, #gpu.address_space<workgroup>>, memref<64x8xi64>
  mosaic_gpu.async_store %s_i32 to %g_i32[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<or>}
      : memref<16x8xi32, #gpu.address_space<workgroup>>, memref<64x8xi32>
  mosaic_gpu.async_store %s_i64 to %g_i64[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<or>}
      : memref<16x8xi64, #gpu.address_space<workgroup>>, memref<64x8xi64>
  mosaic_gpu.async_store %s_i32 to %g_i32[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<xor>}
      : memref<16x8xi32, #gpu.address_space<workgroup>>, memref<64x8xi32>
  mosaic_gpu.async_store %s_i64 to %g_i64[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<xor>}
      : memref<16x8xi64, #gpu.address_space<workgroup>>, memref<64x8xi64>
  return
}

// -----

func.func @min_f32(%s: memref<16x8xf32, #gpu.address_space<workgroup>>, %g: memref<64x8xf32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` min is not defined on 'f32'; TMA's min takes f16 or bf16}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<min>}
      : memref<16x8xf32, #gpu.address_space<workgroup>>, memref<64x8xf32>
  return
}

// -----

func.func @min_i32(%s: memref<16x8xi32, #gpu.address_space<workgroup>>, %g: memref<64x8xi32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` min is not defined on 'i32'; TMA's min takes f16 or bf16 (integer min and max say how they compare: smin/smax for signed, umin/umax for unsigned)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<min>}
      : memref<16x8xi32, #gpu.address_space<workgroup>>, memref<64x8xi32>
  return
}

// -----

func.func @min_i64(%s: memref<16x8xi64, #gpu.address_space<workgroup>>, %g: memref<64x8xi64>, %i: i32) {
  // expected-error @+1 {{`reduction_op` min is not defined on 'i64'; TMA's min takes f16 or bf16 (integer min and max say how they compare: smin/smax for signed, umin/umax for unsigned)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<min>}
      : memref<16x8xi64, #gpu.address_space<workgroup>>, memref<64x8xi64>
  return
}

// -----

func.func @max_f32(%s: memref<16x8xf32, #gpu.address_space<workgroup>>, %g: memref<64x8xf32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` max is not defined on 'f32'; TMA's max takes f16 or bf16}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<max>}
      : memref<16x8xf32, #gpu.address_space<workgroup>>, memref<64x8xf32>
  return
}

// -----

func.func @max_i32(%s: memref<16x8xi32, #gpu.address_space<workgroup>>, %g: memref<64x8xi32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` max is not defined on 'i32'; TMA's max takes f16 or bf16 (integer min and max say how they compare: smin/smax for signed, umin/umax for unsigned)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<max>}
      : memref<16x8xi32, #gpu.address_space<workgroup>>, memref<64x8xi32>
  return
}

// -----

func.func @max_i64(%s: memref<16x8xi64, #gpu.address_space<workgroup>>, %g: memref<64x8xi64>, %i: i32) {
  // expected-error @+1 {{`reduction_op` max is not defined on 'i64'; TMA's max takes f16 or bf16 (integer min and max say how they compare: smin/smax for signed, umin/umax for unsigned)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<max>}
      : memref<16x8xi64, #gpu.address_space<workgroup>>, memref<64x8xi64>
  return
}

// -----

func.func @smin_f16(%s: memref<16x8xf16, #gpu.address_space<workgroup>>, %g: memref<64x8xf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` smin is not defined on 'f16'; TMA's smin takes i32 or i64 (floating-point min and max are `min` and `max`)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<smin>}
      : memref<16x8xf16, #gpu.address_space<workgroup>>, memref<64x8xf16>
  return
}

// -----

func.func @smin_bf16(%s: memref<16x8xbf16, #gpu.address_space<workgroup>>, %g: memref<64x8xbf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` smin is not defined on 'bf16'; TMA's smin takes i32 or i64 (floating-point min and max are `min` and `max`)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<smin>}
      : memref<16x8xbf16, #gpu.address_space<workgroup>>, memref<64x8xbf16>
  return
}

// -----

func.func @smin_f32(%s: memref<16x8xf32, #gpu.address_space<workgroup>>, %g: memref<64x8xf32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` smin is not defined on 'f32'; TMA's smin takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<smin>}
      : memref<16x8xf32, #gpu.address_space<workgroup>>, memref<64x8xf32>
  return
}

// -----

func.func @smax_f16(%s: memref<16x8xf16, #gpu.address_space<workgroup>>, %g: memref<64x8xf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` smax is not defined on 'f16'; TMA's smax takes i32 or i64 (floating-point min and max are `min` and `max`)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<smax>}
      : memref<16x8xf16, #gpu.address_space<workgroup>>, memref<64x8xf16>
  return
}

// -----

func.func @smax_bf16(%s: memref<16x8xbf16, #gpu.address_space<workgroup>>, %g: memref<64x8xbf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` smax is not defined on 'bf16'; TMA's smax takes i32 or i64 (floating-point min and max are `min` and `max`)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<smax>}
      : memref<16x8xbf16, #gpu.address_space<workgroup>>, memref<64x8xbf16>
  return
}

// -----

func.func @smax_f32(%s: memref<16x8xf32, #gpu.address_space<workgroup>>, %g: memref<64x8xf32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` smax is not defined on 'f32'; TMA's smax takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<smax>}
      : memref<16x8xf32, #gpu.address_space<workgroup>>, memref<64x8xf32>
  return
}

// -----

func.func @umin_f16(%s: memref<16x8xf16, #gpu.address_space<workgroup>>, %g: memref<64x8xf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` umin is not defined on 'f16'; TMA's umin takes i32 or i64 (floating-point min and max are `min` and `max`)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<umin>}
      : memref<16x8xf16, #gpu.address_space<workgroup>>, memref<64x8xf16>
  return
}

// -----

func.func @umin_bf16(%s: memref<16x8xbf16, #gpu.address_space<workgroup>>, %g: memref<64x8xbf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` umin is not defined on 'bf16'; TMA's umin takes i32 or i64 (floating-point min and max are `min` and `max`)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<umin>}
      : memref<16x8xbf16, #gpu.address_space<workgroup>>, memref<64x8xbf16>
  return
}

// -----

func.func @umin_f32(%s: memref<16x8xf32, #gpu.address_space<workgroup>>, %g: memref<64x8xf32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` umin is not defined on 'f32'; TMA's umin takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<umin>}
      : memref<16x8xf32, #gpu.address_space<workgroup>>, memref<64x8xf32>
  return
}

// -----

func.func @umax_f16(%s: memref<16x8xf16, #gpu.address_space<workgroup>>, %g: memref<64x8xf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` umax is not defined on 'f16'; TMA's umax takes i32 or i64 (floating-point min and max are `min` and `max`)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<umax>}
      : memref<16x8xf16, #gpu.address_space<workgroup>>, memref<64x8xf16>
  return
}

// -----

func.func @umax_bf16(%s: memref<16x8xbf16, #gpu.address_space<workgroup>>, %g: memref<64x8xbf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` umax is not defined on 'bf16'; TMA's umax takes i32 or i64 (floating-point min and max are `min` and `max`)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<umax>}
      : memref<16x8xbf16, #gpu.address_space<workgroup>>, memref<64x8xbf16>
  return
}

// -----

func.func @umax_f32(%s: memref<16x8xf32, #gpu.address_space<workgroup>>, %g: memref<64x8xf32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` umax is not defined on 'f32'; TMA's umax takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<umax>}
      : memref<16x8xf32, #gpu.address_space<workgroup>>, memref<64x8xf32>
  return
}

// -----

func.func @inc_f16(%s: memref<16x8xf16, #gpu.address_space<workgroup>>, %g: memref<64x8xf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` inc is not defined on 'f16'; TMA's inc takes i32}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<inc>}
      : memref<16x8xf16, #gpu.address_space<workgroup>>, memref<64x8xf16>
  return
}

// -----

func.func @inc_bf16(%s: memref<16x8xbf16, #gpu.address_space<workgroup>>, %g: memref<64x8xbf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` inc is not defined on 'bf16'; TMA's inc takes i32}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<inc>}
      : memref<16x8xbf16, #gpu.address_space<workgroup>>, memref<64x8xbf16>
  return
}

// -----

func.func @inc_f32(%s: memref<16x8xf32, #gpu.address_space<workgroup>>, %g: memref<64x8xf32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` inc is not defined on 'f32'; TMA's inc takes i32}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<inc>}
      : memref<16x8xf32, #gpu.address_space<workgroup>>, memref<64x8xf32>
  return
}

// -----

func.func @inc_i64(%s: memref<16x8xi64, #gpu.address_space<workgroup>>, %g: memref<64x8xi64>, %i: i32) {
  // expected-error @+1 {{`reduction_op` inc is not defined on 'i64'; TMA's inc takes i32}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<inc>}
      : memref<16x8xi64, #gpu.address_space<workgroup>>, memref<64x8xi64>
  return
}

// -----

func.func @dec_f16(%s: memref<16x8xf16, #gpu.address_space<workgroup>>, %g: memref<64x8xf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` dec is not defined on 'f16'; TMA's dec takes i32}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<dec>}
      : memref<16x8xf16, #gpu.address_space<workgroup>>, memref<64x8xf16>
  return
}

// -----

func.func @dec_bf16(%s: memref<16x8xbf16, #gpu.address_space<workgroup>>, %g: memref<64x8xbf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` dec is not defined on 'bf16'; TMA's dec takes i32}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<dec>}
      : memref<16x8xbf16, #gpu.address_space<workgroup>>, memref<64x8xbf16>
  return
}

// -----

func.func @dec_f32(%s: memref<16x8xf32, #gpu.address_space<workgroup>>, %g: memref<64x8xf32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` dec is not defined on 'f32'; TMA's dec takes i32}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<dec>}
      : memref<16x8xf32, #gpu.address_space<workgroup>>, memref<64x8xf32>
  return
}

// -----

func.func @dec_i64(%s: memref<16x8xi64, #gpu.address_space<workgroup>>, %g: memref<64x8xi64>, %i: i32) {
  // expected-error @+1 {{`reduction_op` dec is not defined on 'i64'; TMA's dec takes i32}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<dec>}
      : memref<16x8xi64, #gpu.address_space<workgroup>>, memref<64x8xi64>
  return
}

// -----

func.func @and_f16(%s: memref<16x8xf16, #gpu.address_space<workgroup>>, %g: memref<64x8xf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` and is not defined on 'f16'; TMA's and takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<and>}
      : memref<16x8xf16, #gpu.address_space<workgroup>>, memref<64x8xf16>
  return
}

// -----

func.func @and_bf16(%s: memref<16x8xbf16, #gpu.address_space<workgroup>>, %g: memref<64x8xbf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` and is not defined on 'bf16'; TMA's and takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<and>}
      : memref<16x8xbf16, #gpu.address_space<workgroup>>, memref<64x8xbf16>
  return
}

// -----

func.func @and_f32(%s: memref<16x8xf32, #gpu.address_space<workgroup>>, %g: memref<64x8xf32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` and is not defined on 'f32'; TMA's and takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<and>}
      : memref<16x8xf32, #gpu.address_space<workgroup>>, memref<64x8xf32>
  return
}

// -----

func.func @or_f16(%s: memref<16x8xf16, #gpu.address_space<workgroup>>, %g: memref<64x8xf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` or is not defined on 'f16'; TMA's or takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<or>}
      : memref<16x8xf16, #gpu.address_space<workgroup>>, memref<64x8xf16>
  return
}

// -----

func.func @or_bf16(%s: memref<16x8xbf16, #gpu.address_space<workgroup>>, %g: memref<64x8xbf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` or is not defined on 'bf16'; TMA's or takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<or>}
      : memref<16x8xbf16, #gpu.address_space<workgroup>>, memref<64x8xbf16>
  return
}

// -----

func.func @or_f32(%s: memref<16x8xf32, #gpu.address_space<workgroup>>, %g: memref<64x8xf32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` or is not defined on 'f32'; TMA's or takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<or>}
      : memref<16x8xf32, #gpu.address_space<workgroup>>, memref<64x8xf32>
  return
}

// -----

func.func @xor_f16(%s: memref<16x8xf16, #gpu.address_space<workgroup>>, %g: memref<64x8xf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` xor is not defined on 'f16'; TMA's xor takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<xor>}
      : memref<16x8xf16, #gpu.address_space<workgroup>>, memref<64x8xf16>
  return
}

// -----

func.func @xor_bf16(%s: memref<16x8xbf16, #gpu.address_space<workgroup>>, %g: memref<64x8xbf16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` xor is not defined on 'bf16'; TMA's xor takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<xor>}
      : memref<16x8xbf16, #gpu.address_space<workgroup>>, memref<64x8xbf16>
  return
}

// -----

func.func @xor_f32(%s: memref<16x8xf32, #gpu.address_space<workgroup>>, %g: memref<64x8xf32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` xor is not defined on 'f32'; TMA's xor takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<xor>}
      : memref<16x8xf32, #gpu.address_space<workgroup>>, memref<64x8xf32>
  return
}

// -----

func.func @add_f64(%s: memref<16x8xf64, #gpu.address_space<workgroup>>, %g: memref<64x8xf64>, %i: i32) {
  // expected-error @+1 {{`reduction_op` add is not defined on 'f64'; TMA's add takes f16, bf16, f32, i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<add>}
      : memref<16x8xf64, #gpu.address_space<workgroup>>, memref<64x8xf64>
  return
}

// -----

func.func @add_i16(%s: memref<16x8xi16, #gpu.address_space<workgroup>>, %g: memref<64x8xi16>, %i: i32) {
  // expected-error @+1 {{`reduction_op` add is not defined on 'i16'; TMA's add takes f16, bf16, f32, i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<add>}
      : memref<16x8xi16, #gpu.address_space<workgroup>>, memref<64x8xi16>
  return
}

// -----

func.func @and_i8(%s: memref<16x8xi8, #gpu.address_space<workgroup>>, %g: memref<64x8xi8>, %i: i32) {
  // expected-error @+1 {{`reduction_op` and is not defined on 'i8'; TMA's and takes i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<and>}
      : memref<16x8xi8, #gpu.address_space<workgroup>>, memref<64x8xi8>
  return
}

// -----

func.func @add_f8E4M3FN(%s: memref<16x8xf8E4M3FN, #gpu.address_space<workgroup>>, %g: memref<64x8xf8E4M3FN>, %i: i32) {
  // expected-error @+1 {{`reduction_op` add is not defined on 'f8E4M3FN'; TMA's add takes f16, bf16, f32, i32 or i64}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<add>}
      : memref<16x8xf8E4M3FN, #gpu.address_space<workgroup>>, memref<64x8xf8E4M3FN>
  return
}

// -----

func.func @umin_ui32(%s: memref<16x8xui32, #gpu.address_space<workgroup>>, %g: memref<64x8xui32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` umin is not defined on 'ui32'; TMA's umin takes i32 or i64 (integers are signless; the reduction says whether min and max compare them as signed or unsigned)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<umin>}
      : memref<16x8xui32, #gpu.address_space<workgroup>>, memref<64x8xui32>
  return
}

// -----

func.func @smin_si32(%s: memref<16x8xsi32, #gpu.address_space<workgroup>>, %g: memref<64x8xsi32>, %i: i32) {
  // expected-error @+1 {{`reduction_op` smin is not defined on 'si32'; TMA's smin takes i32 or i64 (integers are signless; the reduction says whether min and max compare them as signed or unsigned)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<smin>}
      : memref<16x8xsi32, #gpu.address_space<workgroup>>, memref<64x8xsi32>
  return
}

// -----

func.func @add_si64(%s: memref<16x8xsi64, #gpu.address_space<workgroup>>, %g: memref<64x8xsi64>, %i: i32) {
  // expected-error @+1 {{`reduction_op` add is not defined on 'si64'; TMA's add takes f16, bf16, f32, i32 or i64 (integers are signless; the reduction says whether min and max compare them as signed or unsigned)}}
  mosaic_gpu.async_store %s to %g[%i, %i] slice_lengths [16, 8] {reduction_op = #mosaic_gpu.tma_reduction<add>}
      : memref<16x8xsi64, #gpu.address_space<workgroup>>, memref<64x8xsi64>
  return
}
