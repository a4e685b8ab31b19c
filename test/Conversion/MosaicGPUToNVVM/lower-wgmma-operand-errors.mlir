// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms -mosaic-gpu-lower -verify-diagnostics

// A in registers is lowered for 16-bit types only: 8-bit fragments
// (WGMMA_8BIT) would need their own register packing.
gpu.module @kernels {
  gpu.func @register_a_8bit(%a: memref<64x128xi8>, %out: memref<64x64xi32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %bt = mosaic_gpu.slice_smem 0 : memref<64x128xi8, #gpu.address_space<workgroup>>
    %b = memref.transpose %bt (d0, d1) -> (d1, d0)
        : memref<64x128xi8, #gpu.address_space<workgroup>> to memref<128x64xi8, strided<[1, 128]>, #gpu.address_space<workgroup>>
    %a_regs = mosaic_gpu.vector_load %a : memref<64x128xi8> -> vector<64x128xi8>
    %zero = arith.constant dense<0> : vector<64x64xi32>
    // expected-error @+1 {{takes A in registers as 'i8'; mosaic-gpu-lower lowers register A for 16-bit types only (keep A in shared memory)}}
    %acc = mosaic_gpu.wgmma %zero, %a_regs, %b
        : vector<64x64xi32>, vector<64x128xi8>, memref<128x64xi8, strided<[1, 128]>, #gpu.address_space<workgroup>> -> vector<64x64xi32>
    mosaic_gpu.vector_store %acc, %out : vector<64x64xi32>, memref<64x64xi32>
    gpu.return
  }
}

// -----

// A transposed (M-major) view of A is lowered for 16-bit types only: wgmma
// transposes no 8-bit operand, which the verifier already rejects.
gpu.module @kernels {
  gpu.func @transposed_8_bit_a(%out: memref<64x64xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %at = mosaic_gpu.slice_smem 0 : memref<128x64xf8E4M3FN, #gpu.address_space<workgroup>>
    %a = memref.transpose %at (d0, d1) -> (d1, d0)
        : memref<128x64xf8E4M3FN, #gpu.address_space<workgroup>> to memref<64x128xf8E4M3FN, strided<[1, 64]>, #gpu.address_space<workgroup>>
    %bt = mosaic_gpu.slice_smem 8192 : memref<64x128xf8E4M3FN, #gpu.address_space<workgroup>>
    %b = memref.transpose %bt (d0, d1) -> (d1, d0)
        : memref<64x128xf8E4M3FN, #gpu.address_space<workgroup>> to memref<128x64xf8E4M3FN, strided<[1, 128]>, #gpu.address_space<workgroup>>
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    // expected-error @+1 {{`a` is transposed, which wgmma supports only for 16-bit element types, not 'f8E4M3FN'}}
    %acc = mosaic_gpu.wgmma %zero, %a, %b
        : vector<64x64xf32>, memref<64x128xf8E4M3FN, strided<[1, 64]>, #gpu.address_space<workgroup>>, memref<128x64xf8E4M3FN, strided<[1, 128]>, #gpu.address_space<workgroup>> -> vector<64x64xf32>
    mosaic_gpu.vector_store %acc, %out : vector<64x64xf32>, memref<64x64xf32>
    gpu.return
  }
}

// -----

// tf32 B in row-major K x N order: wgmma transposes only 16-bit operands.
gpu.module @kernels {
  gpu.func @tf32_mn_major(%out: memref<64x64xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %a = mosaic_gpu.slice_smem 0 : memref<64x32xf32, #gpu.address_space<workgroup>>
    %b = mosaic_gpu.slice_smem 8192 : memref<32x64xf32, #gpu.address_space<workgroup>>
    %zero = arith.constant dense<0.0> : vector<64x64xf32>
    // expected-error @+1 {{must be stored K-major}}
    %acc = mosaic_gpu.wgmma %zero, %a, %b
        : vector<64x64xf32>, memref<64x32xf32, #gpu.address_space<workgroup>>, memref<32x64xf32, #gpu.address_space<workgroup>> -> vector<64x64xf32>
    mosaic_gpu.vector_store %acc, %out : vector<64x64xf32>, memref<64x64xf32>
    gpu.return
  }
}
