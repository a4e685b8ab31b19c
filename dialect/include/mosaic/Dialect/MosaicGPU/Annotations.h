//===- Annotations.h - The layout and transform annotations -----*- C++ -*-===//
//
// mosaic-gpu-infer-layouts records its decisions on every op it decides:
// `in_layouts`/`out_layouts` hold one register layout per register-vector
// operand/result, `in_transforms`/`out_transforms` one transform list per
// shared-memory buffer operand/result (barriers excluded), in operand order.
// mosaic-gpu-apply-transforms adds `transforms_applied` to an op whose buffers
// it retyped to their tiled form. Every pass reads and writes them through
// this header only.
//
// One error policy: a pass that needs an annotation and finds it missing,
// short or malformed reports it on the op, naming the attribute and the
// entry; a missing annotation asks for mosaic-gpu-infer-layouts.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_DIALECT_MOSAICGPU_ANNOTATIONS_H
#define MOSAIC_DIALECT_MOSAICGPU_ANNOTATIONS_H

#include "mosaic/Dialect/MosaicGPU/SmemTransforms.h"

#include "mlir/IR/Operation.h"

namespace mosaic_gpu {

inline constexpr llvm::StringLiteral kInLayoutsAttr = "in_layouts";
inline constexpr llvm::StringLiteral kOutLayoutsAttr = "out_layouts";
inline constexpr llvm::StringLiteral kInTransformsAttr = "in_transforms";
inline constexpr llvm::StringLiteral kOutTransformsAttr = "out_transforms";
inline constexpr llvm::StringLiteral kTransformsAppliedAttr =
    "transforms_applied";

/// A value that lives in registers as a warpgroup vector: a fixed-size
/// vector of rank one or more.
bool isRegisterVector(mlir::Value value);
/// A value that is a shared-memory buffer with transforms: a memref in
/// shared memory whose elements are not barriers.
bool isSharedBuffer(mlir::Value value);

/// The position of `operand` among its op's register-vector operands, and
/// the same for buffers and results; nullopt for other values.
std::optional<unsigned> registerVectorIndex(mlir::OpOperand &operand);
std::optional<unsigned> registerVectorIndex(mlir::OpResult result);
std::optional<unsigned> sharedBufferIndex(mlir::OpOperand &operand);
std::optional<unsigned> sharedBufferIndex(mlir::OpResult result);

/// The annotated layout of a register-vector operand or result. A region
/// argument has no entry of its own: it takes the entry of the operand or
/// result of its op that it corresponds to.
mlir::FailureOr<mosaic::layout::RegisterLayout>
inLayoutFor(mlir::OpOperand &operand);
mlir::FailureOr<mosaic::layout::RegisterLayout>
outLayoutFor(mlir::OpResult result);
/// The annotated transforms of a shared-memory buffer operand or result.
mlir::FailureOr<mosaic::layout::SmemTransforms>
inTransformsFor(mlir::OpOperand &operand);
mlir::FailureOr<mosaic::layout::SmemTransforms>
outTransformsFor(mlir::OpResult result);

/// Checks that `op`'s transform annotation `name` has exactly one
/// well-formed entry per shared-memory buffer operand (kInTransformsAttr) or
/// result (kOutTransformsAttr).
mlir::LogicalResult verifyTransformsAnnotation(mlir::Operation *op,
                                               llvm::StringRef name);

/// Records the decisions for `op`; empty lists are not written.
void setAnnotations(mlir::Operation *op,
                    llvm::ArrayRef<mlir::Attribute> inLayouts,
                    llvm::ArrayRef<mlir::Attribute> outLayouts,
                    llvm::ArrayRef<mlir::Attribute> inTransforms,
                    llvm::ArrayRef<mlir::Attribute> outTransforms);
/// Replaces `op`'s `in_transforms`, one entry per buffer operand.
void setInTransforms(mlir::Operation *op,
                     llvm::ArrayRef<mosaic::layout::SmemTransforms> entries);
/// Marks `op` as having its buffers retyped to their tiled form.
void markTransformsApplied(mlir::Operation *op);
bool transformsApplied(mlir::Operation *op);
/// Drops the layout annotations from `op` once its vectors are lowered.
void dropLayoutAnnotations(mlir::Operation *op);

} // namespace mosaic_gpu

#endif // MOSAIC_DIALECT_MOSAICGPU_ANNOTATIONS_H
