//===- TensorMap.h - cuTensorMapEncodeTiled arguments ---------*- C++ -*-===//
//
// A pure function from a manifest's tensor map entry, its buffer parameter
// and the buffer's device pointer to the arguments of cuTensorMapEncodeTiled,
// checking every rule the driver documents for them, so that a bad entry or
// pointer is an error naming the dimension and the numbers instead of
// CUDA_ERROR_INVALID_VALUE (or a fault on the GPU).
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_RUNTIME_TENSORMAP_H
#define MOSAIC_RUNTIME_TENSORMAP_H

#include "mosaic/Contracts/Manifest.h"

#include <cuda.h>

#include <array>

namespace mosaic::runtime {

/// cuTensorMapEncodeTiled's arguments after the output tensor map; the
/// arrays hold `rank` (strides: `rank - 1`) meaningful entries.
struct TensorMapEncodeArgs {
  CUtensorMapDataType dataType = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  cuuint32_t rank = 0;
  void *globalAddress = nullptr;
  std::array<cuuint64_t, limits::kMaxTensorMapRank> globalDim{};
  std::array<cuuint64_t, limits::kMaxTensorMapRank - 1> globalStrides{};
  std::array<cuuint32_t, limits::kMaxTensorMapRank> boxDim{};
  std::array<cuuint32_t, limits::kMaxTensorMapRank> elementStrides{};
  CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMapL2promotion l2Promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  CUtensorMapFloatOOBfill oobFill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
};

/// checkTensorMap, then the address's alignment (16 bytes, 32 with 32-byte
/// interleave); returns the arguments for cuTensorMapEncodeTiled.
Expected<TensorMapEncodeArgs>
tensorMapEncodeArgs(const TensorMapDescription &map,
                                                  const BufferParameter &buffer,
                                                  CUdeviceptr address);

} // namespace mosaic::runtime

#endif // MOSAIC_RUNTIME_TENSORMAP_H
