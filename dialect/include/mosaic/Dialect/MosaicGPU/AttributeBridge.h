//===- AttributeBridge.h - Layouts <-> mosaic_gpu attributes ----*- C++ -*-===//

#ifndef MOSAIC_DIALECT_MOSAICGPU_ATTRIBUTEBRIDGE_H
#define MOSAIC_DIALECT_MOSAICGPU_ATTRIBUTEBRIDGE_H

#include "mosaic/Dialect/MosaicGPU/SmemTransforms.h"

#include "mlir/IR/BuiltinAttributes.h"

namespace mosaic {

/// The attribute for `layout` on a vector of `shape` (splat and strided
/// attributes carry the shape).
mlir::Attribute layoutToAttr(mlir::MLIRContext *context,
                             const layout::RegisterLayout &layout,
                             llvm::ArrayRef<int64_t> shape);

/// The layout an attribute describes, or failure for a non-layout attribute.
mlir::FailureOr<layout::RegisterLayout> attrToLayout(mlir::Attribute attr);

/// `[#mosaic_gpu.tile<...>, #mosaic_gpu.swizzle<...>]`, omitting what is
/// absent.
mlir::ArrayAttr transformsToAttr(mlir::MLIRContext *context,
                                 const layout::SmemTransforms &transforms);

/// The transforms an array of tile/swizzle attributes describes, or failure
/// (an unknown entry, a repeated tile or swizzle).
mlir::FailureOr<layout::SmemTransforms> attrToTransforms(mlir::Attribute attr);

} // namespace mosaic

#endif // MOSAIC_DIALECT_MOSAICGPU_ATTRIBUTEBRIDGE_H
