//===- KernelAttributes.h - What a lowered kernel tells the driver -*- C++ -*-===//
//
// The lowering records on each kernel what launching it needs beyond its
// signature; the compiler driver copies it into the manifest.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_CONVERSION_MOSAICGPUTONVVM_KERNELATTRIBUTES_H
#define MOSAIC_CONVERSION_MOSAICGPUTONVVM_KERNELATTRIBUTES_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

namespace mosaic {

/// Kernel attribute listing the tensor maps the lowering added as kernel
/// parameters, in parameter order; mosaic-compile copies it to the manifest.
inline constexpr llvm::StringLiteral kTensorMapsAttr = "mosaic_gpu.tensor_maps";
/// Kernel attribute: the dynamic shared memory the kernel needs, its slices
/// and the lowering's scratch space included.
inline constexpr llvm::StringLiteral kDynamicSharedBytesAttr =
    "mosaic_gpu.dynamic_smem_bytes";

/// The end of the last `slice_smem` buffer of `function`, in bytes.
int64_t sliceExtent(mlir::Operation *function);

} // namespace mosaic

#endif // MOSAIC_CONVERSION_MOSAICGPUTONVVM_KERNELATTRIBUTES_H
