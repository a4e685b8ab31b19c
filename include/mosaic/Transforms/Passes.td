//===- Passes.td - Mosaic transformation passes ------------*- tablegen -*-===//

#ifndef MOSAIC_TRANSFORMS_PASSES_TD
#define MOSAIC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def MosaicGPUApplyTransforms : Pass<"mosaic-gpu-apply-transforms"> {
  let summary = "Make inferred shared-memory tilings explicit in the types";
  let description = [{
    Runs after `mosaic-gpu-infer-layouts`. Every shared-memory buffer whose
    inferred transforms include a tiling gets its tiled type: a (.., m, n)
    buffer with `tile<[t0, t1]>` becomes (.., m / t0, n / t1, t0, t1). Users
    are rewritten to match:

    - `slice_smem` results and region values (scf.for/if/while/index_switch)
      take the tiled type; `with_transforms` disappears (its transforms are
      now in the type and in the users' `in_transforms`);
    - `memref.subview`s slice whole tiles: offsets and sizes of tiled dims
      are divided by the tile, the tile dims are taken whole;
      `memref.collapse_shape` / `expand_shape` regroup whole tiles and
      `memref.cast` keeps the tiled type;
    - `async_load` / `async_store` read and write a tiled view of the global
      buffer (`memref.expand_shape` + `memref.transpose`), so that their
      indices and slice lengths are in tile units and the TMA box is the
      slice in tile order;
    - `vector_load`, `vector_store` and `wgmma` keep their logical vector
      shapes; they get the `transforms_applied` attribute, which tells their
      verifiers (and the lowering) to read the tiling from `in_transforms`.

    The swizzle stays recorded in the `in_transforms` / `out_transforms`
    attributes. Before:

    ```mlir
    %s = mosaic_gpu.slice_smem 0 {out_transforms = [[#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]]}
        : memref<128x64xbf16, #gpu.address_space<workgroup>>
    mosaic_gpu.async_load %g[%i, %c0] to %s, %bar slice_lengths [128, 64] {in_transforms = [...]} : ...
    ```

    After:

    ```mlir
    %s = mosaic_gpu.slice_smem 0 {...} : memref<16x1x8x64xbf16, #gpu.address_space<workgroup>>
    %e = memref.expand_shape %g [[0, 1], [2, 3]] ... : memref<1024x64xbf16> into memref<128x8x1x64xbf16>
    %t = memref.transpose %e (d0, d1, d2, d3) -> (d0, d2, d1, d3) ...
    %i8 = arith.divui %i, %c8 : i32
    mosaic_gpu.async_load %t[%i8, %c0, %c0, %c0] to %s, %bar slice_lengths [16, 1, 8, 64] {...} : ...
    ```

    Tilings that do not divide a buffer, a global buffer or a slice, and
    uses the pass cannot rewrite, are errors on the op involved.
  }];
  let dependentDialects = [
    "::mosaic_gpu::MosaicGPUDialect", "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

#endif // MOSAIC_TRANSFORMS_PASSES_TD
