//===- KernelAttributes.h - What a lowered kernel tells the driver -*- C++
//-*-===//
//
// The lowering records on each kernel what launching it needs beyond its
// signature; the compiler driver copies it into the manifest. The tensor
// maps are typed descriptions (mosaic/Contracts/TensorMapDescription.h)
// that the IR carries as dictionaries, written and read only here.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_CONVERSION_MOSAICGPUTONVVM_KERNELATTRIBUTES_H
#define MOSAIC_CONVERSION_MOSAICGPUTONVVM_KERNELATTRIBUTES_H

#include "mosaic/Contracts/TensorMapDescription.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

namespace mosaic {

/// Kernel attribute listing the tensor maps the lowering added as kernel
/// parameters, in parameter order; mosaic-compile copies it to the manifest.
inline constexpr llvm::StringLiteral kTensorMapsAttr = "mosaic_gpu.tensor_maps";
/// Kernel attribute: the index of the collective-table parameter the
/// lowering added (docs/RationaleMultiDevice.md), on kernels that have one.
inline constexpr llvm::StringLiteral kCollectiveTableAttr =
    "mosaic_gpu.collective_table";
/// Kernel attribute: the dynamic shared memory the kernel needs, its slices
/// and the lowering's scratch space included.
inline constexpr llvm::StringLiteral kDynamicSharedBytesAttr =
    "mosaic_gpu.dynamic_smem_bytes";

/// `map` as one entry of kTensorMapsAttr: its fields as a dictionary
/// (`buffer`, `element_type`, `rank`, `global_dims`, `global_strides`,
/// `box_dims`, `element_strides`, `swizzle`, `data_type` when named, and
/// `peer` for a map in the collective table),
/// with `parameter` and `index` unless `withPosition` is false (the key by
/// which the lowering shares one map among equal transfers). Interleave, L2
/// promotion and NaN fill appear only when they are not the default.
mlir::DictionaryAttr tensorMapAttribute(mlir::MLIRContext *context,
                                        const TensorMapDescription &map,
                                        bool withPosition = true);

/// The description an entry of kTensorMapsAttr holds; failure when a field
/// is missing or not what tensorMapAttribute writes.
mlir::FailureOr<TensorMapDescription>
tensorMapFromAttribute(mlir::DictionaryAttr attribute);

/// The end of the last `slice_smem` buffer of `function`, in bytes.
int64_t sliceExtent(mlir::Operation *function);

} // namespace mosaic

#endif // MOSAIC_CONVERSION_MOSAICGPUTONVVM_KERNELATTRIBUTES_H
