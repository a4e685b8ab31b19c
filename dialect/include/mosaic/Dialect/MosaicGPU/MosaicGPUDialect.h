//===- MosaicGPUDialect.h - mosaic_gpu dialect ------------------*- C++ -*-===//

#ifndef MOSAIC_DIALECT_MOSAICGPU_MOSAICGPUDIALECT_H
#define MOSAIC_DIALECT_MOSAICGPU_MOSAICGPUDIALECT_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"

#include "mosaic/Dialect/MosaicGPU/Layouts.h"

#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h.inc"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "mosaic/Dialect/MosaicGPU/MosaicGPUTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "mosaic/Dialect/MosaicGPU/MosaicGPUAttrs.h.inc"

namespace mosaic_gpu {

/// True for memrefs in shared memory (`#gpu.address_space<workgroup>`).
bool isSharedMemory(mlir::MemRefType type);
/// True for memrefs in global memory: no memory space or
/// `#gpu.address_space<global>`.
bool isGlobalMemory(mlir::MemRefType type);

/// Kernel attribute: the cluster shape (x, y, z) the kernel is launched
/// with; absent means clusters of one block.
inline constexpr llvm::StringLiteral kClusterAttr = "mosaic_gpu.cluster";
/// Kernel attribute (unit): f32 arithmetic flushes subnormals to zero.
inline constexpr llvm::StringLiteral kFlushDenormalsAttr =
    "mosaic_gpu.flush_denormals";

/// Kernel argument attribute (unit): the buffer is symmetric, one copy on
/// every device of a multi-device launch.
inline constexpr llvm::StringLiteral kSymmetricAttr = "mosaic_gpu.symmetric";

/// The kernel argument `value` is, when it is one marked kSymmetricAttr.
mlir::BlockArgument symmetricArgument(mlir::Value value);

/// The logical shape of shared-memory operand `ref` of `op`: its type's
/// shape, or, once mosaic-gpu-apply-transforms has tiled it, the shape
/// before tiling (read from the op's `in_transforms`). Fails when the tiled
/// type does not match the recorded tile.
mlir::FailureOr<llvm::SmallVector<int64_t>> logicalShape(mlir::Operation *op,
                                                         mlir::Value ref);

/// True for WGSplatFragLayout, WGStridedFragLayout and TiledLayout.
bool isRegisterLayout(mlir::Attribute attr);

/// Checks that `layout` is a register layout that can describe a vector of
/// `shape`, reporting the mismatch through `emitError` otherwise.
mlir::LogicalResult
verifyLayoutFitsShape(mlir::Attribute layout, llvm::ArrayRef<int64_t> shape,
                      llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

} // namespace mosaic_gpu

#endif // MOSAIC_DIALECT_MOSAICGPU_MOSAICGPUDIALECT_H
