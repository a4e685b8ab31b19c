//===- TensorMapDescription.cpp - A TMA transfer's tensor map -----------===//

#include "mosaic/Contracts/TensorMapDescription.h"

#include "mosaic/Contracts/Format.h"
#include "mosaic/Contracts/Manifest.h"

#include <limits>
#include <string>
#include <utility>

namespace mosaic {

namespace {

constexpr std::pair<TensorMapDataType, const char *> kDataTypeSpellings[] = {
    {TensorMapDataType::UInt8, "uint8"},
    {TensorMapDataType::UInt16, "uint16"},
    {TensorMapDataType::UInt32, "uint32"},
    {TensorMapDataType::Int32, "int32"},
    {TensorMapDataType::UInt64, "uint64"},
    {TensorMapDataType::Int64, "int64"},
    {TensorMapDataType::Float16, "float16"},
    {TensorMapDataType::Float32, "float32"},
    {TensorMapDataType::Float64, "float64"},
    {TensorMapDataType::BFloat16, "bfloat16"},
};

constexpr uint64_t kMaxGlobalDim = uint64_t(1) << 32;
constexpr uint64_t kStrideLimit = uint64_t(1) << 40;

/// What `element` may travel as, for messages: "int32 or uint32".
std::string dataTypesHolding(ElementType element) {
  std::string result;
  for (const auto &[type, spelled] : kDataTypeSpellings)
    if (holds(type, element))
      result += (result.empty() ? "" : " or ") + std::string(spelled);
  return result;
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

std::optional<TensorMapDataType> parseTensorMapDataType(std::string_view name) {
  for (const auto &[type, spelled] : kDataTypeSpellings)
    if (name == spelled)
      return type;
  return std::nullopt;
}

const char *spelling(TensorMapDataType type) {
  for (const auto &[candidate, spelled] : kDataTypeSpellings)
    if (candidate == type)
      return spelled;
  return "?";
}

const char *tensorMapDataTypeSpellings() {
  return "uint8, uint16, uint32, int32, uint64, int64, float16, float32, "
         "float64, bfloat16";
}

TensorMapDataType defaultDataType(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return TensorMapDataType::Float32;
  case ElementType::F16:
    return TensorMapDataType::Float16;
  case ElementType::BF16:
    return TensorMapDataType::BFloat16;
  case ElementType::F64:
    return TensorMapDataType::Float64;
  case ElementType::I16:
    return TensorMapDataType::UInt16;
  case ElementType::I32:
    return TensorMapDataType::Int32;
  case ElementType::I64:
    return TensorMapDataType::Int64;
  default:
    return TensorMapDataType::UInt8;
  }
}

bool holds(TensorMapDataType type, ElementType element) {
  switch (element) {
  case ElementType::I32:
    return type == TensorMapDataType::Int32 ||
           type == TensorMapDataType::UInt32;
  case ElementType::I64:
    return type == TensorMapDataType::Int64 ||
           type == TensorMapDataType::UInt64;
  default:
    return type == defaultDataType(element);
  }
}

bool isFloat(TensorMapDataType type) {
  return type == TensorMapDataType::Float16 ||
         type == TensorMapDataType::Float32 ||
         type == TensorMapDataType::Float64 ||
         type == TensorMapDataType::BFloat16;
}

bool TensorMapDescription::operator==(const TensorMapDescription &other) const {
  return index == other.index && parameter == other.parameter &&
         buffer == other.buffer && elementType == other.elementType &&
         dataType == other.dataType && rank == other.rank &&
         globalDims == other.globalDims &&
         globalStrides == other.globalStrides && boxDims == other.boxDims &&
         elementStrides == other.elementStrides &&
         swizzleBytes == other.swizzleBytes &&
         interleaveBytes == other.interleaveBytes &&
         l2PromotionBytes == other.l2PromotionBytes &&
         oobFillNan == other.oobFillNan && peer == other.peer;
}

Status checkTensorMap(const TensorMapDescription &map,
                      const BufferParameter &buffer) {
  std::string where = "tensor map " + std::to_string(map.index) +
                      " for parameter " + std::to_string(buffer.index) + ": ";
  auto fail = [&](const std::string &what) { return Error{where + what}; };

  if (map.rank < 1 || map.rank > limits::kMaxTensorMapRank)
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
  uint64_t strideMultiple =
      map.interleaveBytes == 32 ? 32 : limits::kGlobalAlignment;
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
    if (box < 1 || box > limits::kMaxTensorMapBoxDim)
      return fail("box dim " + std::to_string(d) + " is " +
                  std::to_string(box) + ", TMA needs 1 to 256");
    uint32_t step = map.elementStrides[d];
    if (step < 1 || step > limits::kMaxTensorMapElementStride)
      return fail("element stride of dim " + std::to_string(d) + " is " +
                  std::to_string(step) + ", TMA needs 1 to 8");
  }
  uint64_t innerBoxBytes = map.boxDims[0] * elementBytes;
  if (map.interleaveBytes == 0) {
    if (innerBoxBytes % limits::kTensorMapInnerBoxMultiple != 0)
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
  if (map.oobFillNan && !isFloat(map.encodedDataType()))
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

} // namespace mosaic
