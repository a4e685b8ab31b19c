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
} // namespace mosaic_gpu

#define GET_OP_CLASSES
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h.inc"

#endif // MOSAIC_DIALECT_MOSAICGPU_MOSAICGPUOPS_H
