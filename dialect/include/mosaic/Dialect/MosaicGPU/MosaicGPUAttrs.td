//===- MosaicGPUAttrs.td - mosaic_gpu attributes ------------*- tablegen -*-===//
//
// Register layouts (how a warpgroup's 128 threads hold a vector) and shared
// memory transforms (how a buffer is tiled and swizzled).
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_DIALECT_MOSAICGPU_ATTRS_TD
#define MOSAIC_DIALECT_MOSAICGPU_ATTRS_TD

include "mosaic/Dialect/MosaicGPU/MosaicGPUBase.td"
include "mosaic/Dialect/MosaicGPU/MosaicGPUEnums.td"

//===----------------------------------------------------------------------===//
// Register layouts
//===----------------------------------------------------------------------===//

def MosaicGPU_WGSplatFragLayout
    : MosaicGPU_Attr<"WGSplatFragLayout", "WGSplatFragLayout"> {
  let summary = "Every thread holds the one value a vector was splatted from";
  let description = [{
    The layout of a vector whose elements are all equal: each of the 128
    threads keeps a single copy of the value. It converts to any other layout
    for free.

    ```mlir
    #mosaic_gpu.WGSplatFragLayout<[128, 64]>
    ```
  }];
  let parameters = (ins "::mlir::DenseI64ArrayAttr":$shape);
  let assemblyFormat = "`<` $shape `>`";
  let genVerifyDecl = 1;
}

def MosaicGPU_WGStridedFragLayout
    : MosaicGPU_Attr<"WGStridedFragLayout", "WGStridedFragLayout"> {
  let summary = "The flattened vector dealt out to threads in chunks";
  let description = [{
    Flatten the vector; thread `t` holds the `vector_size`-element chunks
    starting at `t * vector_size + i * 128 * vector_size`. The number of
    elements must be a multiple of `128 * vector_size`.

    ```mlir
    // 8192 elements: each thread holds 8 chunks of 8 elements.
    #mosaic_gpu.WGStridedFragLayout<[128, 64], 8>
    ```
  }];
  let parameters = (ins "::mlir::DenseI64ArrayAttr":$shape, "int64_t":$vector_size);
  let assemblyFormat = "`<` $shape `,` $vector_size `>`";
  let genVerifyDecl = 1;
}

def MosaicGPU_Replicated : MosaicGPU_Attr<"Replicated", "Replicated"> {
  let summary = "A warp or lane dimension over which data is duplicated";
  let description = [{
    An entry of a `TiledLayout`'s `warp_dims` or `lane_dims` that partitions
    no data: the `times` warps (or lanes) hold the same values.

    ```mlir
    #mosaic_gpu.Replicated<times = 4>
    ```
  }];
  let parameters = (ins "int64_t":$times);
  let assemblyFormat = "`<` `times` `=` $times `>`";
  let genVerifyDecl = 1;
}

def MosaicGPU_TiledLayout : MosaicGPU_Attr<"TiledLayout", "TiledLayout"> {
  let summary = "A layout defined by a tiling and a thread assignment";
  let description = [{
    The tiles of `tiling` are applied in turn to a suffix of the vector's
    shape: each splits the dims it covers into (dim / tile, tile) with the tile
    dims going last. Tiling the first tile itself gives the *tiled tiling
    shape*; `warp_dims`, `lane_dims` and `vector_dim` are negative indices into
    it. The warp dims partition a dim over the 4 warps of the warpgroup, the
    lane dims over the 32 lanes of a warp, and `vector_dim` is the vector each
    thread keeps in consecutive registers. A `#mosaic_gpu.Replicated<times = n>`
    entry duplicates the data over `n` warps or lanes. Warp sizes multiply to 4,
    lane sizes to 32, and the layout must be in canonical form (no tile that
    leaves the shape unchanged, no partitioned dim of size 1).

    The wgmma accumulator layout:

    ```mlir
    #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]],
                            warp_dims = [-7], lane_dims = [-3, -2],
                            vector_dim = -1>
    ```

    For a 64x8 base tile this yields the tiled tiling shape
    (1, 1, 4, 1, 2, 1, 8, 4, 2): the 4 warps take 16 rows each, the lanes split
    each warp's 8x8 core matrices by (row, pair of columns), and each thread
    keeps 2 consecutive columns.
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::DenseI64ArrayAttr", "tiles">:$tiling,
    ArrayRefParameter<"::mlir::Attribute", "warp dims">:$warp_dims,
    ArrayRefParameter<"::mlir::Attribute", "lane dims">:$lane_dims,
    "int64_t":$vector_dim
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The layout in the plain C++ algebra.
    ::mosaic::layout::TiledLayout getLayout() const;
  }];
}

//===----------------------------------------------------------------------===//
// Shared memory transforms
//===----------------------------------------------------------------------===//

def MosaicGPU_TileTransformAttr : MosaicGPU_Attr<"TileTransform", "tile"> {
  let summary = "Tiles the minor dimensions of a shared-memory buffer";
  let description = [{
    A (.., m, n) buffer with `tile<[t0, t1]>` is stored as
    (.., m / t0, n / t1, t0, t1): the tiled dims are divided by the tile and
    the tile dims go last. Each tiled dim must be smaller than, or a multiple
    of, its tile size.

    ```mlir
    // memref<5x128x128xbf16> is stored as (5, 2, 4, 64, 32).
    #mosaic_gpu.tile<[64, 32]>
    ```
  }];
  let parameters = (ins "::mlir::DenseI64ArrayAttr":$tiling);
  let assemblyFormat = "`<` $tiling `>`";
  let genVerifyDecl = 1;
}

def MosaicGPU_SwizzleTransformAttr : MosaicGPU_Attr<"SwizzleTransform", "swizzle"> {
  let summary = "Swizzles a shared-memory buffer";
  let description = [{
    The byte swizzle TMA and wgmma apply to shared memory: within each
    `swizzle`-byte row, 16-byte chunks are permuted by the row index so that
    column accesses hit distinct banks.

    ```mlir
    #mosaic_gpu.swizzle<k128ByteSwizzle>
    ```
  }];
  let parameters = (ins EnumParameter<MosaicGPU_SwizzlingMode>:$swizzle);
  let assemblyFormat = "`<` $swizzle `>`";
}

#endif // MOSAIC_DIALECT_MOSAICGPU_ATTRS_TD
