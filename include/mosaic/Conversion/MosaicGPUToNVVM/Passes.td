//===- Passes.td - Lowering passes -------------------------*- tablegen -*-===//

#ifndef MOSAIC_CONVERSION_PASSES_TD
#define MOSAIC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def MosaicGPULower : Pass<"mosaic-gpu-lower"> {
  let summary = "Lower warpgroup vectors to per-thread registers";
  let description = [{
    Runs after `mosaic-gpu-infer-layouts` and `mosaic-gpu-apply-transforms`.
    Every warpgroup vector becomes the registers one thread holds, as a flat
    per-thread vector, according to its layout:

    - `WGSplatFragLayout`: one element, `vector<1xT>`;
    - `WGStridedFragLayout<shape, v>`: `vector<(N / 128) x T>`, thread `t`
      holding the `v`-element chunks that start at `t * v + i * 128 * v`;
    - `TiledLayout`: the registers of the tiled shape in row-major order,
      each a vector of the layout's vector length.

    What it lowers (docs/RationaleLowering.md has the why):

    - elementwise arith/math ops, constants (non-uniform ones through a
      global table), `broadcasted_iota`,
      `layout_cast`, `optimization_barrier`, and the legal relayouts (splat
      to anything in registers; WGMMA <-> WGMMA_TRANSPOSED through
      shared-memory scratch);
    - `vector_load` / `vector_store` on global and shared memory, tiled and
      swizzled shared buffers included (16-byte accesses for strided
      layouts);
    - `vector.multi_reduction` (in-thread, warp shuffles, and across warps
      or to a scalar through shared-memory scratch), `broadcast_in_dim`,
      `vector.broadcast`, `vector.shape_cast`, `vector.extract_strided_slice`
      and static `vector.extract`;
    - `scf.for`, `scf.while`, `scf.if` and `scf.index_switch` carrying
      vectors (retyped in place);
    - `slice_smem` (a view of the dynamic shared memory), barriers
      (`mbarrier` with 128 thread arrivals per warpgroup arrival,
      `fence.mbarrier_init`, `try_wait.parity`), `arrive_expect_tx`;
    - `async_load` / `async_store` / `async_prefetch` as
      `cp.async.bulk.tensor` issued by the warpgroup's leader, multicast over
      the cluster when `collective`, with one tensor-map parameter per
      distinct transfer (recorded in `mosaic_gpu.tensor_maps`), proxy fences
      before stores;
    - `wgmma` with A from tiled shared memory or registers, B from tiled
      shared memory, as `wgmma.mma_async` between fence, commit and wait.

    Kernel buffer arguments get `llvm.align = 16` (the launch contract), and
    the kernel gets `mosaic_gpu.dynamic_smem_bytes`. Anything else that
    touches a vector or a `mosaic_gpu` op is an error naming the op, never a
    silently wrong kernel.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect", "::mlir::vector::VectorDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect"
  ];
}

def MosaicGPUMapMemorySpaces : Pass<"mosaic-gpu-map-memory-spaces"> {
  let summary = "Replace GPU address space attributes with NVPTX address spaces";
  let description = [{
    Rewrites every `#gpu.address_space<global|workgroup|private>` in types and
    attributes to the NVPTX address space integer (1, 3, 5), so that the
    upstream memref and vector conversions to LLVM, which only understand
    integer memory spaces, can lower shared-memory buffers. Runs in
    `mosaic-gpu-pipeline` after `convert-gpu-to-nvvm`.

    ```mlir
    memref<128xf32, #gpu.address_space<workgroup>>  // becomes memref<128xf32, 3>
    ```
  }];
}

def MosaicGPUFinalizeKernels : Pass<"mosaic-gpu-finalize-kernels"> {
  let summary = "Settle the kernel ABI details that only exist in LLVM form";
  let description = [{
    Runs in `mosaic-gpu-pipeline` after `convert-gpu-to-nvvm`:

    - the dynamic shared memory symbol becomes external (`.extern .shared`,
      sized at launch) and 1024-byte aligned, so that swizzled buffers carved
      at multiples of 1024 bytes line up with the swizzle patterns of TMA
      and wgmma;
    - the kernel parameters that `mosaic-gpu-lower` added for tensor maps
      (listed in the kernel's `mosaic_gpu.tensor_maps`) become 128-byte
      `byval` parameters, 64-byte aligned, with `nvvm.grid_constant`, so
      that TMA reads each tensor map in parameter space.
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

#endif // MOSAIC_CONVERSION_PASSES_TD
