// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms -mosaic-gpu-lower -verify-diagnostics

// What the lowering does not handle yet is an error on the op, never a
// wrong kernel.
func.func @reduction_across_warps(%ref: memref<128x64xf32>, %out: memref<64xf32>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %z = arith.constant dense<0.0> : vector<64xf32>
  // expected-error @+1 {{needs shared-memory scratch (to exchange values between warps), which is sized from the kernel's `known_block_size`}}
  %r = vector.multi_reduction <add>, %v, %z [0] : vector<128x64xf32> to vector<64xf32>
  mosaic_gpu.vector_store %r, %out : vector<64xf32>, memref<64xf32>
  return
}

// -----

// Every thread of a warpgroup arrives, so an mbarrier counts 128 arrivals
// per warpgroup arrival, and it counts at most 2^20 - 1.
func.func @too_many_arrivals(%p: !llvm.ptr<3>) {
  // expected-error @+1 {{needs 1048576 thread arrivals (8192 warpgroups x 128), more than an mbarrier counts (1048575)}}
  mosaic_gpu.initialize_barrier %p, arrival_count = 8192, num_barriers = 1 : !llvm.ptr<3>
  return
}

// -----

// Each barrier is initialized by its own instruction; a count no block's
// shared memory could hold is a mistake, not a request for a huge kernel.
func.func @too_many_barriers(%p: !llvm.ptr<3>) {
  // expected-error @+1 {{initializes 30000 barriers (240000 bytes), more than the 232448 bytes of shared memory an sm_90a block has}}
  mosaic_gpu.initialize_barrier %p, arrival_count = 1, num_barriers = 30000 : !llvm.ptr<3>
  return
}

// -----

func.func @strided_barriers() {
  %all = mosaic_gpu.slice_smem 0 : memref<4x!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  %every_other = memref.subview %all[0] [2] [2] : memref<4x!mosaic_gpu.barrier, #gpu.address_space<workgroup>> to memref<2x!mosaic_gpu.barrier, strided<[2]>, #gpu.address_space<workgroup>>
  // expected-error @+1 {{initializes barriers that are not contiguous in shared memory: 'memref<2x!mosaic_gpu.barrier, strided<[2]>, #gpu.address_space<workgroup>>'}}
  mosaic_gpu.initialize_barrier %every_other, arrival_count = 1, num_barriers = 2 : memref<2x!mosaic_gpu.barrier, strided<[2]>, #gpu.address_space<workgroup>>
  return
}

// -----

// Ordering tensor core operations takes tcgen05 fences (Blackwell).
func.func @orders_tensor_core_init(%p: !llvm.ptr<3>) {
  // expected-error @+1 {{orders tensor core operations (`orders_tensor_core`), which needs tcgen05 fences that sm_90a does not have}}
  mosaic_gpu.initialize_barrier %p, arrival_count = 1, num_barriers = 1 {orders_tensor_core = true} : !llvm.ptr<3>
  return
}

// -----

func.func @orders_tensor_core_arrive(%b: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{orders tensor core operations (`orders_tensor_core`), which needs tcgen05 fences that sm_90a does not have}}
  mosaic_gpu.arrive %b {orders_tensor_core = true} : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

// expected-error @+1 {{'mosaic_gpu.slice_smem' op is outside a function; mosaic-gpu-lower lowers kernel bodies}}
%outside = mosaic_gpu.slice_smem 0 : memref<128xf32, #gpu.address_space<workgroup>>

// -----

// TMA reads the tensor's base address from a tensor map encoded at launch,
// so the global buffer must be a kernel argument; a plain function's
// argument is not one.
func.func @tma_from_function_argument(%in: memref<4096x64xbf16>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) {
  %c0 = arith.constant 0 : i32
  %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{transfers from or to a global buffer that is not a kernel argument (or a view of one); TMA needs the tensor's base address at launch}}
  mosaic_gpu.async_load %in[%c0, %c0] to %s, %bar slice_lengths [128, 64]
      : memref<4096x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
  return
}

// -----

// Nor is a buffer the kernel allocates itself.
gpu.module @kernels {
  gpu.func @tma_from_alloc(%bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : i32
    %in = memref.alloc() : memref<256x64xbf16>
    %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
    // expected-error @+1 {{transfers from or to a global buffer that is not a kernel argument}}
    mosaic_gpu.async_load %in[%c0, %c0] to %s, %bar slice_lengths [128, 64]
        : memref<256x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// The tensor map describes the whole argument; a subview at an offset would
// need its own base address.
gpu.module @kernels {
  gpu.func @tma_from_offset_view(%in: memref<4096x64xf32>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : i32
    %s = mosaic_gpu.slice_smem 0 : memref<128x64xf32, #gpu.address_space<workgroup>>
    %rows = memref.subview %in[128, 0] [128, 64] [1, 1] : memref<4096x64xf32> to memref<128x64xf32, strided<[64, 1], offset: 8192>>
    // expected-error @+1 {{needs a statically shaped global view at offset 0 of its kernel argument, but the view is 'memref<128x64xf32, strided<[64, 1], offset: 8192>>'; index into the argument with the op's indices instead of a subview}}
    mosaic_gpu.async_load %rows[%c0, %c0] to %s, %bar slice_lengths [128, 64]
        : memref<128x64xf32, strided<[64, 1], offset: 8192>>, memref<128x64xf32, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// cuTensorMapEncodeTiled takes at most 5 dims.
gpu.module @kernels {
  gpu.func @tma_rank_6(%in: memref<2x2x2x2x8x64xbf16>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : i32
    %s = mosaic_gpu.slice_smem 0 : memref<8x64xbf16, #gpu.address_space<workgroup>>
    // expected-error @+1 {{needs a rank-6 tensor map (after tiling); TMA handles at most 5 dims}}
    mosaic_gpu.async_load %in[%c0, %c0, %c0, %c0, %c0, %c0] to %s, %bar slice_lengths [-1, -1, -1, -1, 8, 64]
        : memref<2x2x2x2x8x64xbf16>, memref<8x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// TMA global strides are multiples of 16 bytes: rows of 2 f32 are 8 bytes.
gpu.module @kernels {
  gpu.func @tma_global_stride(%in: memref<4096x2xf32>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : i32
    %s = mosaic_gpu.slice_smem 0 : memref<256x2xf32, #gpu.address_space<workgroup>>
    // expected-error @+1 {{needs global strides that are multiples of 16 bytes, but dim 0 of 'memref<4096x2xf32>' has a stride of 8 bytes}}
    mosaic_gpu.async_load %in[%c0, %c0] to %s, %bar slice_lengths [256, 2]
        : memref<4096x2xf32>, memref<256x2xf32, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// A TMA box spans at most 256 elements per dim.
gpu.module @kernels {
  gpu.func @tma_box_too_long(%in: memref<4096x64xf32>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : i32
    %s = mosaic_gpu.slice_smem 0 : memref<512x64xf32, #gpu.address_space<workgroup>>
    // expected-error @+1 {{transfers 512 elements along dim 0; a TMA box spans at most 256}}
    mosaic_gpu.async_load %in[%c0, %c0] to %s, %bar slice_lengths [512, 64]
        : memref<4096x64xf32>, memref<512x64xf32, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// The minor box dim must span a multiple of 16 bytes: 2 f32 are 8.
gpu.module @kernels {
  gpu.func @tma_narrow_box(%in: memref<4096x64xf32>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : i32
    %s = mosaic_gpu.slice_smem 0 : memref<128x2xf32, #gpu.address_space<workgroup>>
    // expected-error @+1 {{has a minor box dim of 8 bytes; TMA needs a multiple of 16}}
    mosaic_gpu.async_load %in[%c0, %c0] to %s, %bar slice_lengths [128, 2]
        : memref<4096x64xf32>, memref<128x2xf32, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// A collective transfer needs the cluster it is shared in.
gpu.module @kernels {
  gpu.func @collective_without_cluster(%in: memref<4096x64xbf16>, %bar: memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : i32
    %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
    // expected-error @+1 {{is collective over cluster dims, but its kernel declares no cluster shape (`mosaic_gpu.cluster = array<i32: x, y, z>`)}}
    mosaic_gpu.async_load %in[%c0, %c0] to %s, %bar slice_lengths [128, 64] {collective = [#mosaic_gpu.dim<x>]}
        : memref<4096x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// Each block of the group moves an equal part of the box's leading dim.
gpu.module @kernels {
  gpu.func @uneven_share(%in: memref<4096x64xbf16>) kernel
      attributes {mosaic_gpu.cluster = array<i32: 3, 1, 1>} {
    %c0 = arith.constant 0 : i32
    // expected-error @+1 {{shares its box among 3 blocks along its leading dim, which must be a multiple of that, but the box is [128, 64]}}
    mosaic_gpu.async_prefetch %in[%c0, %c0] slice_lengths [128, 64] {collective = [#mosaic_gpu.dim<x>]} : memref<4096x64xbf16>
    gpu.return
  }
}

// -----

// A 128-byte swizzle repeats every 8 rows of 128 bytes and is computed from
// the address, so a swizzled buffer starts on a 1024-byte boundary.
func.func @swizzled_slice_offset() {
  // expected-error @+1 {{carves a buffer with a 128-byte swizzle at offset 512; it must start at a multiple of 1024 bytes}}
  %s = mosaic_gpu.slice_smem 512 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %t = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>>
      with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  %v = mosaic_gpu.vector_load %t : memref<128x64xbf16, #gpu.address_space<workgroup>> -> vector<128x64xbf16>
  mosaic_gpu.vector_store %v, %t : vector<128x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

// slice_smem views the dynamic shared memory at a byte offset; a strided or
// offset layout has no such view.
func.func @strided_slice() {
  // expected-error @+1 {{mosaic-gpu-lower only carves buffers with the identity layout out of shared memory, not 'memref<128xf32, strided<[1], offset: 4>, #gpu.address_space<workgroup>>'}}
  %s = mosaic_gpu.slice_smem 0 : memref<128xf32, strided<[1], offset: 4>, #gpu.address_space<workgroup>>
  return
}

// -----

// A splat is stored as a strided vector, whose chunks of one row per thread
// need at least 128 elements.
func.func @splat_store_too_small(%out: memref<64xf32>) {
  %c = arith.constant dense<1.0> : vector<64xf32>
  // expected-error @+1 {{cannot store a splat 'vector<64xf32>': its elements do not fill whole rows of 128 threads}}
  mosaic_gpu.vector_store %c, %out : vector<64xf32>, memref<64xf32>
  return
}

// -----

// Strided vectors are stored untiled; a tiled, swizzled buffer takes tiled
// layouts only, even for a splat.
func.func @splat_store_to_tiled() {
  %s = mosaic_gpu.slice_smem 0 : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %t = mosaic_gpu.with_transforms %s : memref<128x64xbf16, #gpu.address_space<workgroup>>
      with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]
  %c = arith.constant dense<0.0> : vector<128x64xbf16>
  // expected-error @+1 {{moves a strided vector to or from a tiled shared-memory buffer; only tiled layouts follow a tiling (use a layout_cast to WGMMA, or leave the buffer untiled)}}
  mosaic_gpu.vector_store %c, %t : vector<128x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

// iota registers are built from integer indices.
func.func @float_iota(%out: memref<128xf32>) {
  // expected-error @+1 {{mosaic-gpu-lower builds iotas of integer elements only, not 'f32'}}
  %i = mosaic_gpu.broadcasted_iota 0 : vector<128xf32>
  mosaic_gpu.vector_store %i, %out : vector<128xf32>, memref<128xf32>
  return
}

// -----

// Vectors enter a kernel body only through loads, constants and iotas; a
// vector function argument has no registers.
func.func @vector_argument(%v: vector<128xf32>, %out: memref<128xf32>) {
  // expected-error @+1 {{uses a vector that mosaic-gpu-lower has not lowered (operand #0)}}
  mosaic_gpu.vector_store %v, %out : vector<128xf32>, memref<128xf32>
  return
}

// -----

// A product of n equal values is x^n, which the splat shortcut does not
// compute.
func.func @splat_product(%out: memref<128xf32>) {
  %c = arith.constant dense<3.0> : vector<128x64xf32>
  %one = arith.constant dense<1.0> : vector<128xf32>
  // expected-error @+1 {{reduces a splat with mul; lay the operand out as strided or tiled instead}}
  %r = vector.multi_reduction <mul>, %c, %one [1] : vector<128x64xf32> to vector<128xf32>
  mosaic_gpu.vector_store %r, %out : vector<128xf32>, memref<128xf32>
  return
}

// -----

// One element of a distributed vector lives in one thread only.
gpu.module @kernels {
  gpu.func @scalar_extract(%in: memref<128x64xf32>, %out: memref<128xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    %v = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>
    // expected-error @+1 {{extracts one element of a Strided(vector_size = 4) vector, which only one thread holds; reduce or store it instead}}
    %e = vector.extract %v[3, 5] : f32 from vector<128x64xf32>
    %b = vector.broadcast %e : f32 to vector<128xf32>
    mosaic_gpu.vector_store %b, %out : vector<128xf32>, memref<128xf32>
    gpu.return
  }
}

// -----

// At a dynamic position, which registers to take is unknown at compile time.
gpu.module @kernels {
  gpu.func @dynamic_extract(%in: memref<2x128x64xf32>, %out: memref<128x64xf32>, %i: index) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    %v = mosaic_gpu.vector_load %in : memref<2x128x64xf32> -> vector<2x128x64xf32>
    // expected-error @+1 {{extracts at a dynamic position, which mosaic-gpu-lower does not lower (the element's thread is unknown)}}
    %e = vector.extract %v[%i] : vector<128x64xf32> from vector<2x128x64xf32>
    mosaic_gpu.vector_store %e, %out : vector<128x64xf32>, memref<128x64xf32>
    gpu.return
  }
}

// -----

// The slices (and the lowering's scratch) must fit a block's shared memory.
gpu.module @kernels {
  // expected-error @+1 {{needs 265536 bytes of shared memory (its slices and the lowering's reduction scratch), more than the 232448 an sm_90a block has}}
  gpu.func @too_much_shared_memory(%out: memref<128xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>} {
    %s = mosaic_gpu.slice_smem 200000 : memref<16384xf32, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

// A cluster larger than Hopper allows is an error of the kernel itself
// (the dialect verifies the attribute), before any collective transfer.
gpu.module @kernels {
  // expected-error @+1 {{`mosaic_gpu.cluster` makes clusters of 32 blocks; sm_90a allows at most 16}}
  gpu.func @big_cluster(%in: memref<4096x64xbf16>) kernel
      attributes {mosaic_gpu.cluster = array<i32: 4, 4, 2>} {
    %c0 = arith.constant 0 : i32
    mosaic_gpu.async_prefetch %in[%c0, %c0] slice_lengths [128, 64] {collective = [#mosaic_gpu.dim<x>]} : memref<4096x64xbf16>
    gpu.return
  }
}

// -----

// A swizzle does not retype the buffer, and a strided transfer addresses it
// row-major: inference never picks a strided layout for a swizzled buffer,
// and here no other layout converts to the cast's.
func.func @strided_transfer_of_swizzled_buffer(%ref: memref<64x64xf16, #gpu.address_space<workgroup>>) {
  %t = mosaic_gpu.with_transforms %ref : memref<64x64xf16, #gpu.address_space<workgroup>> with [#mosaic_gpu.swizzle<k128ByteSwizzle>]
  // expected-note @+1 {{'mosaic_gpu.vector_load' loads arbitrary data, which cannot be Splat}}
  %v = mosaic_gpu.vector_load %t : memref<64x64xf16, #gpu.address_space<workgroup>> -> vector<64x64xf16>
  // expected-error @+7 {{no layout for operand #0 of 'mosaic_gpu.layout_cast' satisfies every constraint on it}}
  // expected-note @+6 {{WGMMA is ruled out by}}
  // expected-note @+5 {{Strided(vector_size = 8) is ruled out by}}
  // expected-note @+4 {{Splat is ruled out by}}
  // expected-note @+3 {{Strided(vector_size = 1) is ruled out by}}
  // expected-note @+2 {{7 other candidate layouts are ruled out as well}}
  // expected-note @+1 {{'mosaic_gpu.layout_cast' fixes its result's layout: Strided(vector_size = 8)}}
  %s = mosaic_gpu.layout_cast %v : vector<64x64xf16> to #mosaic_gpu.WGStridedFragLayout<[64, 64], 8>
  mosaic_gpu.vector_store %s, %ref : vector<64x64xf16>, memref<64x64xf16, #gpu.address_space<workgroup>>
  return
}

// -----

// A bounded store checks elements by their (row, column); a strided layout
// has no such per-thread split to check against.
func.func @bounded_strided_store(%in: memref<1024xf32>, %out: memref<4000xf32>, %i: index, %n: index) {
  %v = mosaic_gpu.vector_load %in : memref<1024xf32> -> vector<1024xf32>
  %view = memref.subview %out[%i] [1024] [1] : memref<4000xf32> to memref<1024xf32, strided<[1], offset: ?>>
  // expected-error @+1 {{stores a strided vector with `valid` extents; a bounded store takes a tiled layout (layout_cast to WGMMA)}}
  mosaic_gpu.vector_store %v, %view valid [%n] : vector<1024xf32>, memref<1024xf32, strided<[1], offset: ?>>
  return
}

// -----

// Found by the fuzzer: a negative size reached LLVM's NVPTX back end, which
// exits on it.
gpu.module @kernels {
  // expected-error @+1 {{`known_block_size` entry 0 is -128; block and grid sizes must be positive}}
  gpu.func @negative_block(%x: memref<1024xf32>) kernel
      attributes {known_block_size = array<i32: -128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    gpu.return
  }
}

// -----

// A 64 x 512 f32 row tile alone takes 256 registers per thread: the row
// maximum consumes it whole and the subtraction needs it again, so all of
// it is in registers at once. Refused before LLVM unrolls it into a kernel
// that spills.
gpu.module @kernels {
  gpu.func @wide_softmax(%x: memref<64x512xf32>, %out: memref<64x512xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    // expected-note @+1 {{'vector<64x512xf32>' takes 256 registers per thread}}
    %v = mosaic_gpu.vector_load %x : memref<64x512xf32> -> vector<64x512xf32>
    %ninf = arith.constant dense<0xFF800000> : vector<64xf32>
    // expected-error @+1 {{holds vectors of at least 256 32-bit registers per thread whole here, more than the 255 a thread has: the kernel would spill to the stack. Hold fewer rows or columns at a time (a smaller row tile, or a loop over column chunks)}}
    %max = vector.multi_reduction <maximumf>, %v, %ninf [1] : vector<64x512xf32> to vector<64xf32>
    %max_b = mosaic_gpu.broadcast_in_dim %max, dims [0] : vector<64xf32> -> vector<64x512xf32>
    %shifted = arith.subf %v, %max_b : vector<64x512xf32>
    mosaic_gpu.vector_store %shifted, %out : vector<64x512xf32>, memref<64x512xf32>
    gpu.return
  }
}

// -----

// The same row streamed (loaded, scaled and stored element by element)
// holds nothing whole and is accepted.
gpu.module @kernels {
  gpu.func @wide_stream(%x: memref<64x512xf32>, %out: memref<64x512xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %v = mosaic_gpu.vector_load %x : memref<64x512xf32> -> vector<64x512xf32>
    %two = arith.constant dense<2.0> : vector<64x512xf32>
    %s = arith.mulf %v, %two : vector<64x512xf32>
    mosaic_gpu.vector_store %s, %out : vector<64x512xf32>, memref<64x512xf32>
    gpu.return
  }
}
