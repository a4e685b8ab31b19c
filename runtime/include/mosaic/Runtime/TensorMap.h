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

#include "mosaic/Runtime/Manifest.h"
#include "mosaic/Runtime/Status.h"

#include <cuda.h>

#include <array>

namespace mosaic::runtime {

/// The largest rank TMA accepts.
constexpr unsigned kMaxTensorMapRank = 5;

/// cuTensorMapEncodeTiled's arguments after the output tensor map; the
/// arrays hold `rank` (strides: `rank - 1`) meaningful entries.
struct TensorMapEncodeArgs {
  CUtensorMapDataType dataType = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  cuuint32_t rank = 0;
  void *globalAddress = nullptr;
  std::array<cuuint64_t, kMaxTensorMapRank> globalDim{};
  std::array<cuuint64_t, kMaxTensorMapRank - 1> globalStrides{};
  std::array<cuuint32_t, kMaxTensorMapRank> boxDim{};
  std::array<cuuint32_t, kMaxTensorMapRank> elementStrides{};
  CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMapL2promotion l2Promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;
  CUtensorMapFloatOOBfill oobFill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
};

/// Checks the rules that do not depend on the address: rank 1 to 5 (3 to 5
/// when interleaved), the element type is the buffer's, a named data type
/// reads that element type (i32 as int32 or uint32, i64 as int64 or uint64,
/// every other type as its default only), array lengths, every
/// global dim in 1..2^32, every global stride a multiple of 16 (32 with
/// 32-byte interleave) and below 2^40, box dims in 1..256, element strides in
/// 1..8, the box's inner extent a multiple of 16 bytes (no interleave), the
/// swizzle span covering it, NaN fill only for floating-point types, and the
/// described region inside the buffer: sum((dim - 1) * stride) plus one
/// element must not exceed the buffer's bytes.
Status checkTensorMap(const TensorMapEntry &map, const BufferParameter &buffer);

/// checkTensorMap, then the address's alignment (16 bytes, 32 with 32-byte
/// interleave); returns the arguments for cuTensorMapEncodeTiled.
Expected<TensorMapEncodeArgs> tensorMapEncodeArgs(const TensorMapEntry &map,
                                                  const BufferParameter &buffer,
                                                  CUdeviceptr address);

} // namespace mosaic::runtime

#endif // MOSAIC_RUNTIME_TENSORMAP_H
