//===- MosaicGPUOps.h - mosaic_gpu operations -------------------*- C++ -*-===//

#ifndef MOSAIC_DIALECT_MOSAICGPU_MOSAICGPUOPS_H
#define MOSAIC_DIALECT_MOSAICGPU_MOSAICGPUOPS_H

#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"

#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mosaic_gpu {
/// mbarrier arrival and transaction counts are 20-bit fields (PTX ISA,
/// "Contents of the mbarrier object").
inline constexpr int64_t kMaxBarrierCount = (1 << 20) - 1;

/// TMA reads and writes shared memory at 128-byte aligned addresses (PTX
/// ISA, cp.async.bulk.tensor).
inline constexpr int64_t kTmaSharedAlignment = 128;

/// The bytes after which a swizzle of `swizzleBytes` (32, 64 or 128; 16 is
/// no swizzle) repeats: it permutes the 16-byte chunks of each row by the
/// row's position among 8 (PTX ISA, "Tensor copy": swizzling modes). TMA and
/// wgmma compute it from the address, so a swizzled buffer starts on such a
/// boundary: 256, 512 or 1024 bytes. 1 without a swizzle.
inline constexpr int64_t swizzleRepeatBytes(int64_t swizzleBytes) {
  return swizzleBytes > 16 ? 8 * swizzleBytes : 1;
}

/// setmaxnreg's register counts per thread: a multiple of 8 in 24..256 (PTX
/// ISA, setmaxnreg).
inline constexpr uint32_t kMinRegistersPerThread = 24;
inline constexpr uint32_t kMaxRegistersPerThread = 256;
inline constexpr uint32_t kRegisterAllocationGranule = 8;
} // namespace mosaic_gpu

#define GET_OP_CLASSES
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h.inc"

namespace mosaic_gpu {
/// The `slice_smem` whose memory the shared-memory buffer `ref` views,
/// followed back through casts, reshapes, transposes, `with_transforms` and
/// subviews; null when another op or a block argument is on the way.
SliceSMEMOp viewedSlice(mlir::Value ref);

/// What an integer or index value is known to be a multiple of, from
/// constants, `assume_multiple`, products, sums and casts: 0 for zero, 1 when
/// nothing is known.
int64_t knownMultiple(mlir::Value value);
} // namespace mosaic_gpu

#endif // MOSAIC_DIALECT_MOSAICGPU_MOSAICGPUOPS_H
