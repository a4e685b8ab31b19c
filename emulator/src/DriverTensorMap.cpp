//===- DriverTensorMap.cpp - Tensor maps ----------------------------------===//
//
// cuda.h's tensor map object management: cuTensorMapEncodeTiled, checked
// and encoded by TensorMap.cpp.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "mosaic/Emulator/TensorMap.h"

using namespace mosaic::emulator;
using namespace mosaic::emulator::driver;

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
    cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
    const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
    const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  static_assert(sizeof(CUtensorMap) == kTensorMapBytes,
                "CUtensorMap is the emulator's 128 bytes");
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, tensorMap, "tensorMap"));
  if (reinterpret_cast<uintptr_t>(tensorMap) % 64 != 0)
    return failLoudly(CUDA_ERROR_INVALID_VALUE, __func__,
                      "`tensorMap` " +
                          hex(reinterpret_cast<uint64_t>(tensorMap)) +
                          " must be 64-byte aligned");
  Status encoded = encodeTiled(
      reinterpret_cast<uint8_t *>(tensorMap), tensorDataType, tensorRank,
      reinterpret_cast<uint64_t>(globalAddress), globalDim, globalStrides,
      boxDim, elementStrides, interleave, swizzle, l2Promotion, oobFill);
  if (!encoded.ok())
    return failLoudly(CUDA_ERROR_INVALID_VALUE, __func__, encoded.message());
  return CUDA_SUCCESS;
}
