//===- MosaicGPUDialect.cpp - mosaic_gpu dialect --------------------------===//

#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mosaic_gpu;

#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.cpp.inc"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "mosaic/Dialect/MosaicGPU/MosaicGPUTypes.cpp.inc"

void MosaicGPUDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "mosaic/Dialect/MosaicGPU/MosaicGPUTypes.cpp.inc"
      >();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.cpp.inc"
      >();
}

static std::optional<gpu::AddressSpace> gpuAddressSpace(MemRefType type) {
  if (auto space =
          dyn_cast_or_null<gpu::AddressSpaceAttr>(type.getMemorySpace()))
    return space.getValue();
  return std::nullopt;
}

bool mosaic_gpu::isSharedMemory(MemRefType type) {
  return gpuAddressSpace(type) == gpu::AddressSpace::Workgroup;
}

bool mosaic_gpu::isGlobalMemory(MemRefType type) {
  return !type.getMemorySpace() ||
         gpuAddressSpace(type) == gpu::AddressSpace::Global;
}
