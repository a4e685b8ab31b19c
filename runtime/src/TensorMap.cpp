//===- TensorMap.cpp - cuTensorMapEncodeTiled arguments -----------------===//

#include "mosaic/Runtime/TensorMap.h"

#include "mosaic/Contracts/Format.h"

namespace mosaic::runtime {

namespace {

CUtensorMapDataType dataType(TensorMapDataType type) {
  switch (type) {
  case TensorMapDataType::UInt8:
    return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  case TensorMapDataType::UInt16:
    return CU_TENSOR_MAP_DATA_TYPE_UINT16;
  case TensorMapDataType::UInt32:
    return CU_TENSOR_MAP_DATA_TYPE_UINT32;
  case TensorMapDataType::Int32:
    return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case TensorMapDataType::UInt64:
    return CU_TENSOR_MAP_DATA_TYPE_UINT64;
  case TensorMapDataType::Int64:
    return CU_TENSOR_MAP_DATA_TYPE_INT64;
  case TensorMapDataType::Float16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case TensorMapDataType::Float32:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  case TensorMapDataType::Float64:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
  case TensorMapDataType::BFloat16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  }
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

CUtensorMapSwizzle swizzle(unsigned bytes) {
  switch (bytes) {
  case 32:
    return CU_TENSOR_MAP_SWIZZLE_32B;
  case 64:
    return CU_TENSOR_MAP_SWIZZLE_64B;
  case 128:
    return CU_TENSOR_MAP_SWIZZLE_128B;
  default:
    return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

CUtensorMapInterleave interleave(unsigned bytes) {
  switch (bytes) {
  case 16:
    return CU_TENSOR_MAP_INTERLEAVE_16B;
  case 32:
    return CU_TENSOR_MAP_INTERLEAVE_32B;
  default:
    return CU_TENSOR_MAP_INTERLEAVE_NONE;
  }
}

CUtensorMapL2promotion l2Promotion(unsigned bytes) {
  switch (bytes) {
  case 64:
    return CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
  case 128:
    return CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  case 256:
    return CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  default:
    // "none" too: an H200 faults on every tensor copy whose box crosses the
    // tensor's edge when the map's L2 promotion is NONE, and the promotion
    // only sizes L2 fills (docs/RationaleRuntime.md).
    return CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  }
}

} // namespace

Expected<TensorMapEncodeArgs>
tensorMapEncodeArgs(const TensorMapDescription &map,
                                                  const BufferParameter &buffer,
                                                  CUdeviceptr address) {
  MOSAIC_RETURN_IF_ERROR(checkTensorMap(map, buffer));
  uint64_t alignment =
      map.interleaveBytes == 32 ? 32 : limits::kGlobalAlignment;
  if (address % alignment != 0) {
    return Error{"tensor map " + std::to_string(map.index) + " for parameter " +
                 std::to_string(buffer.index) + ": global address " +
                 formatAddress(address) + " is not " +
                 std::to_string(alignment) + "-byte aligned"};
  }

  TensorMapEncodeArgs args;
  args.dataType = dataType(map.encodedDataType());
  args.rank = map.rank;
  args.globalAddress = reinterpret_cast<void *>(address);
  for (unsigned d = 0; d < map.rank; ++d) {
    args.globalDim[d] = map.globalDims[d];
    args.boxDim[d] = map.boxDims[d];
    args.elementStrides[d] = map.elementStrides[d];
  }
  for (unsigned i = 0; i + 1 < map.rank; ++i)
    args.globalStrides[i] = map.globalStrides[i];
  args.interleave = interleave(map.interleaveBytes);
  args.swizzle = swizzle(map.swizzleBytes);
  args.l2Promotion = l2Promotion(map.l2PromotionBytes);
  args.oobFill = map.oobFillNan
                     ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                     : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  return args;
}

} // namespace mosaic::runtime
