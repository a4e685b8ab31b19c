//===- Passes.td - Lowering passes -------------------------*- tablegen -*-===//

#ifndef MOSAIC_CONVERSION_PASSES_TD
#define MOSAIC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def MosaicGPULower : Pass<"mosaic-gpu-lower"> {
  let summary = "Lower warpgroup vectors to per-thread registers";
  let description = [{
    Runs after `mosaic-gpu-infer-layouts` (and `mosaic-gpu-apply-transforms`).
    Every warpgroup vector becomes the registers one thread holds, as a flat
    per-thread vector, according to its layout:

    - `WGSplatFragLayout`: one element, `vector<1xT>`;
    - `WGStridedFragLayout<shape, v>`: `vector<(N / 128) x T>`, thread `t`
      holding the `v`-element chunks that start at `t * v + i * 128 * v`.

    Elementwise arith/math ops and splat constants work on those registers
    directly; a value is relaid where a use (or a `layout_cast`) wants
    another layout (splat to strided); `vector_load` / `vector_store` on global or untiled shared
    memory become one `v`-element `vector.load` / `vector.store` per chunk.
    The thread's position in its warpgroup is `gpu.thread_id x mod 128`.

    `slice_smem` becomes a `memref.view` of the kernel's dynamic shared
    memory (`gpu.dynamic_shared_memory`) at its byte offset; the launch must
    provide enough dynamic shared memory.

    Kernel buffer arguments get `llvm.align = 16`: the launch contract is
    that every buffer is 16-byte aligned (the runtime checks it), which lets
    LLVM merge each thread's chunks into vector accesses.

    Barriers: `initialize_barrier` has the block's first thread run
    `nvvm.mbarrier.init` for each barrier, with 128 thread arrivals per
    warpgroup arrival, then `fence.mbarrier_init` and a block barrier;
    `arrive` is an `nvvm.mbarrier.arrive` by every thread of the warpgroup;
    `wait` is `nvvm.mbarrier.try_wait.parity`, which loops until the phase
    completes. Barrier memrefs become `i64` memrefs. `orders_tensor_core`
    (tcgen05) is an error on sm_90a.

    This is the first part of the lowering. Tiled layouts, TMA (and
    `arrive_expect_tx`), wgmma, reductions, broadcasts and control flow are not lowered yet: the
    pass reports such an op as an error, naming it, instead of producing a
    wrong kernel.
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
