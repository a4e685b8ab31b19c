//===- TensorMap.cpp - cuTensorMapEncodeTiled arguments -----------------===//

#include "mosaic/Runtime/TensorMap.h"

#include "mosaic/Runtime/Format.h"

#include <limits>

namespace mosaic::runtime {

namespace {

constexpr uint64_t kMaxGlobalDim = uint64_t(1) << 32;
constexpr uint64_t kStrideLimit = uint64_t(1) << 40;
constexpr uint32_t kMaxBoxDim = 256;
constexpr uint32_t kMaxElementStride = 8;

CUtensorMapDataType dataType(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  case ElementType::F16:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  case ElementType::BF16:
    return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  case ElementType::F64:
    return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
  case ElementType::I16:
    return CU_TENSOR_MAP_DATA_TYPE_UINT16;
  case ElementType::I32:
    return CU_TENSOR_MAP_DATA_TYPE_INT32;
  case ElementType::I64:
    return CU_TENSOR_MAP_DATA_TYPE_INT64;
  // TMA copies bits; 8-bit types travel as UINT8.
  case ElementType::I8:
  case ElementType::F8E4M3FN:
  case ElementType::F8E5M2:
    return CU_TENSOR_MAP_DATA_TYPE_UINT8;
  }
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

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

/// The data types that read an element type's bytes as that type: its
/// default, and for 32- and 64-bit integers the other signedness.
bool holds(TensorMapDataType type, ElementType element) {
  switch (element) {
  case ElementType::I32:
    return type == TensorMapDataType::Int32 ||
           type == TensorMapDataType::UInt32;
  case ElementType::I64:
    return type == TensorMapDataType::Int64 ||
           type == TensorMapDataType::UInt64;
  default:
    return dataType(type) == dataType(element);
  }
}

/// What `element` may travel as, for messages: "int32 or uint32".
std::string dataTypesHolding(ElementType element) {
  std::string result;
  for (TensorMapDataType type :
       {TensorMapDataType::UInt8, TensorMapDataType::UInt16,
        TensorMapDataType::UInt32, TensorMapDataType::Int32,
        TensorMapDataType::UInt64, TensorMapDataType::Int64,
        TensorMapDataType::Float16, TensorMapDataType::Float32,
        TensorMapDataType::Float64, TensorMapDataType::BFloat16})
    if (holds(type, element))
      result += (result.empty() ? "" : " or ") + std::string(spelling(type));
  return result;
}

/// The data type cuTensorMapEncodeTiled gets for `map`.
CUtensorMapDataType encodedDataType(const TensorMapEntry &map) {
  return map.dataType ? dataType(*map.dataType) : dataType(map.elementType);
}

bool isFloatDataType(CUtensorMapDataType type) {
  return type == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 ||
         type == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 ||
         type == CU_TENSOR_MAP_DATA_TYPE_FLOAT64 ||
         type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
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
    return CU_TENSOR_MAP_L2_PROMOTION_NONE;
  }
}

/// total += a * b; false if the result does not fit in 64 bits.
bool addProduct(uint64_t &total, uint64_t a, uint64_t b) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  if (a != 0 && b > kMax / a)
    return false;
  if (a * b > kMax - total)
    return false;
  total += a * b;
  return true;
}

} // namespace

Status checkTensorMap(const TensorMapEntry &map,
                      const BufferParameter &buffer) {
  std::string where = "tensor map " + std::to_string(map.index) +
                      " for parameter " + std::to_string(buffer.index) + ": ";
  auto fail = [&](const std::string &what) { return Error{where + what}; };

  if (map.rank < 1 || map.rank > kMaxTensorMapRank)
    return fail("rank " + std::to_string(map.rank) +
                " is outside TMA's 1 to 5");
  if (map.interleaveBytes != 0 && map.rank < 3)
    return fail("rank " + std::to_string(map.rank) +
                " with interleave: TMA needs rank 3 to 5 when interleaved");
  if (map.globalDims.size() != map.rank ||
      map.globalStrides.size() != map.rank - 1 ||
      map.boxDims.size() != map.rank || map.elementStrides.size() != map.rank)
    return fail("rank " + std::to_string(map.rank) + " needs " +
                std::to_string(map.rank) + " global dims, box dims and " +
                "element strides and " + std::to_string(map.rank - 1) +
                " global strides");
  if (map.elementType != buffer.elementType)
    return fail(std::string("element type ") + spelling(map.elementType) +
                " differs from the buffer's " + spelling(buffer.elementType));

  uint64_t elementBytes = byteSize(map.elementType);
  for (unsigned d = 0; d < map.rank; ++d) {
    uint64_t dim = map.globalDims[d];
    if (dim < 1 || dim > kMaxGlobalDim)
      return fail("global dim " + std::to_string(d) + " is " +
                  std::to_string(dim) + ", TMA needs 1 to 2^32");
  }
  uint64_t strideMultiple = map.interleaveBytes == 32 ? 32 : 16;
  for (unsigned i = 0; i + 1 < map.rank; ++i) {
    uint64_t stride = map.globalStrides[i];
    std::string which = "global stride of dim " + std::to_string(i + 1) +
                        " is " + std::to_string(stride) + " bytes";
    if (stride % strideMultiple != 0)
      return fail(which + ", TMA needs a multiple of " +
                  std::to_string(strideMultiple));
    if (stride >= kStrideLimit)
      return fail(which + ", TMA needs less than 2^40");
  }
  for (unsigned d = 0; d < map.rank; ++d) {
    uint32_t box = map.boxDims[d];
    if (box < 1 || box > kMaxBoxDim)
      return fail("box dim " + std::to_string(d) + " is " +
                  std::to_string(box) + ", TMA needs 1 to 256");
    uint32_t step = map.elementStrides[d];
    if (step < 1 || step > kMaxElementStride)
      return fail("element stride of dim " + std::to_string(d) + " is " +
                  std::to_string(step) + ", TMA needs 1 to 8");
  }
  uint64_t innerBoxBytes = map.boxDims[0] * elementBytes;
  if (map.interleaveBytes == 0) {
    if (innerBoxBytes % 16 != 0)
      return fail("box dim 0 spans " + std::to_string(innerBoxBytes) +
                  " bytes (" + std::to_string(map.boxDims[0]) + " x " +
                  spelling(map.elementType) +
                  "), TMA needs a multiple of 16 bytes");
    if (map.swizzleBytes != 0 && innerBoxBytes > map.swizzleBytes)
      return fail("box dim 0 spans " + std::to_string(innerBoxBytes) +
                  " bytes, more than the " + std::to_string(map.swizzleBytes) +
                  "-byte swizzle");
  } else if (map.interleaveBytes == 32 && map.swizzleBytes != 32) {
    return fail("32-byte interleave needs the 32-byte swizzle, got " +
                (map.swizzleBytes ? std::to_string(map.swizzleBytes) + "-byte"
                                  : std::string("none")));
  }
  if (map.dataType && !holds(*map.dataType, map.elementType))
    return fail(std::string("data type ") + spelling(*map.dataType) +
                " does not hold " + spelling(map.elementType) +
                " elements; they travel as " +
                dataTypesHolding(map.elementType));
  if (map.oobFillNan && !isFloatDataType(encodedDataType(map)))
    return fail(std::string("NaN out-of-bounds fill needs a floating-point ") +
                "TMA data type; " + spelling(map.elementType) +
                " is copied as integers");

  // The last byte the map can address, counted from the global address.
  uint64_t extent = elementBytes;
  bool fits = addProduct(extent, map.globalDims[0] - 1, elementBytes);
  for (unsigned d = 1; fits && d < map.rank; ++d)
    fits = addProduct(extent, map.globalDims[d] - 1, map.globalStrides[d - 1]);
  if (!fits || extent > buffer.byteSize())
    return fail("global dims " + formatList(map.globalDims) + " with strides " +
                formatList(map.globalStrides) + " span " +
                (fits ? std::to_string(extent) : std::string("over 2^64")) +
                " bytes, but parameter " + std::to_string(buffer.index) +
                " is a " + buffer.describe());
  return Status();
}

Expected<TensorMapEncodeArgs> tensorMapEncodeArgs(const TensorMapEntry &map,
                                                  const BufferParameter &buffer,
                                                  CUdeviceptr address) {
  MOSAIC_RETURN_IF_ERROR(checkTensorMap(map, buffer));
  uint64_t alignment = map.interleaveBytes == 32 ? 32 : 16;
  if (address % alignment != 0) {
    return Error{"tensor map " + std::to_string(map.index) + " for parameter " +
                 std::to_string(buffer.index) + ": global address " +
                 formatAddress(address) + " is not " +
                 std::to_string(alignment) + "-byte aligned"};
  }

  TensorMapEncodeArgs args;
  args.dataType = encodedDataType(map);
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
