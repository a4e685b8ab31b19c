//===- TensorMap.cpp - The emulator's CUtensorMap encoding --------------===//
//
// `encodeTiled` checks every requirement the comment above
// cuTensorMapEncodeTiled in cuda.h (CUDA 13.0) states, in the order it states
// them, and writes `Encoding` below. The 128 bytes are plain data: a kernel
// receives a byte copy as a `.param` (or reads it from global memory), and
// `decode` accepts them only if they carry the magic number and checksum
// that `encodeTiled` wrote.
//
// Deliberately not checked, because cuda.h does not require it: the
// pseudo-code after the `globalStrides` rule ("globalStrides[0] =
// globalDim[0] * elementSizeInBytes(tensorDataType) + padding[0]; ...")
// describes how a packed tensor's strides are usually computed; it is not
// phrased as a requirement, so tensors whose strides overlap are encoded.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Emulator/TensorMap.h"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

namespace mosaic::emulator {

namespace {

/// The byte layout of an encoded tensor map. Arrays are indexed by
/// dimension, innermost first; `globalStrides[0]` is the element size and
/// `globalStrides[d]` the byte stride of dimension d (cuda.h's
/// globalStrides[d - 1]).
struct Encoding {
  uint64_t magic;            // 0
  uint64_t globalAddress;    // 8
  uint64_t globalDim[5];     // 16
  uint64_t globalStrides[5]; // 56
  uint16_t boxDim[5];        // 96
  uint8_t elementStrides[5]; // 106
  uint8_t dataType;          // 111: CUtensorMapDataType
  uint8_t rank;              // 112
  uint8_t interleave;        // 113: CUtensorMapInterleave
  uint8_t swizzle;           // 114: CUtensorMapSwizzle, 0..3
  uint8_t l2Promotion;       // 115: CUtensorMapL2promotion
  uint8_t oobFill;           // 116: CUtensorMapFloatOOBfill
  uint8_t reserved[7];       // 117: zero
  uint32_t checksum;         // 124: FNV-1a of bytes [0, 124)
};
static_assert(sizeof(Encoding) == kTensorMapBytes,
              "a tensor map is 128 bytes, as CUtensorMap");
static_assert(offsetof(Encoding, checksum) == kTensorMapBytes - 4,
              "the checksum covers every byte before it");

/// "MOSAICTM" in memory order on a little-endian host.
constexpr uint64_t kMagic = 0x4d54434941534f4dull;

constexpr unsigned kMaxRank = 5;
constexpr uint64_t kMaxGlobalDim = uint64_t(1) << 32;
constexpr uint64_t kStrideLimit = uint64_t(1) << 40;
constexpr uint32_t kMaxBoxDim = 256;
constexpr uint32_t kMaxElementStride = 8;

// Enumerator values of cuda.h, named here so that this file needs no cuda.h.
constexpr uint32_t kInterleaveNone = 0;
constexpr uint32_t kInterleave32B = 2;
constexpr uint32_t kSwizzleNone = 0;
constexpr uint32_t kSwizzle32B = 1;
constexpr uint32_t kSwizzle128B = 3;
constexpr uint32_t kOobFillNan = 1;

const char *const kDataTypeNames[] = {
    "CU_TENSOR_MAP_DATA_TYPE_UINT8",
    "CU_TENSOR_MAP_DATA_TYPE_UINT16",
    "CU_TENSOR_MAP_DATA_TYPE_UINT32",
    "CU_TENSOR_MAP_DATA_TYPE_INT32",
    "CU_TENSOR_MAP_DATA_TYPE_UINT64",
    "CU_TENSOR_MAP_DATA_TYPE_INT64",
    "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
    "CU_TENSOR_MAP_DATA_TYPE_FLOAT32",
    "CU_TENSOR_MAP_DATA_TYPE_FLOAT64",
    "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
    "CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ",
    "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32",
    "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ",
    "CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B",
    "CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B",
    "CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B",
};
constexpr uint32_t kDataTypeCount =
    sizeof(kDataTypeNames) / sizeof(kDataTypeNames[0]);

const char *const kInterleaveNames[] = {"CU_TENSOR_MAP_INTERLEAVE_NONE",
                                        "CU_TENSOR_MAP_INTERLEAVE_16B",
                                        "CU_TENSOR_MAP_INTERLEAVE_32B"};

const char *const kSwizzleNames[] = {
    "CU_TENSOR_MAP_SWIZZLE_NONE",
    "CU_TENSOR_MAP_SWIZZLE_32B",
    "CU_TENSOR_MAP_SWIZZLE_64B",
    "CU_TENSOR_MAP_SWIZZLE_128B",
    "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B",
    "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B_FLIP_8B",
    "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B",
};

/// Bytes of the 16-byte chunk permutation span of swizzles 0..3.
constexpr uint32_t kSwizzleSpan[] = {0, 32, 64, 128};

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(value));
  return text;
}

std::string indexed(const char *array, unsigned index) {
  return std::string("`") + array + "[" + std::to_string(index) + "]`";
}

uint32_t fnv1a(const uint8_t *bytes, size_t size) {
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 16777619u;
  }
  return hash;
}

Status checkEnums(uint32_t dataType, uint32_t interleave, uint32_t swizzle,
                  uint32_t l2Promotion, uint32_t oobFill) {
  if (dataType >= kDataTypeCount)
    return Error{"`tensorDataType` is " + std::to_string(dataType) +
                 "; CUtensorMapDataType goes from 0 to " +
                 std::to_string(kDataTypeCount - 1)};
  if (elementBytes(TensorDataType(dataType)) == 0)
    return Error{std::string("`tensorDataType` ") + kDataTypeNames[dataType] +
                 " (a packed sub-byte type) is not supported by the emulator"};
  if (interleave > kInterleave32B)
    return Error{"`interleave` is " + std::to_string(interleave) +
                 "; expected CU_TENSOR_MAP_INTERLEAVE_NONE (0), _16B (1) or "
                 "_32B (2)"};
  if (swizzle >= sizeof(kSwizzleNames) / sizeof(kSwizzleNames[0]))
    return Error{"`swizzle` is " + std::to_string(swizzle) +
                 "; CUtensorMapSwizzle goes from 0 to 6"};
  if (swizzle > kSwizzle128B)
    return Error{std::string("`swizzle` ") + kSwizzleNames[swizzle] + " (" +
                 std::to_string(swizzle) +
                 ") is not supported by the emulator, which models the "
                 "Hopper swizzles NONE, 32B, 64B and 128B"};
  if (l2Promotion > 3)
    return Error{"`l2Promotion` is " + std::to_string(l2Promotion) +
                 "; CUtensorMapL2promotion goes from 0 to 3"};
  if (oobFill > kOobFillNan)
    return Error{"`oobFill` is " + std::to_string(oobFill) +
                 "; expected CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE (0) or "
                 "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA (1)"};
  return Status();
}

} // namespace

unsigned elementBytes(TensorDataType type) {
  switch (type) {
  case TensorDataType::U8:
    return 1;
  case TensorDataType::U16:
  case TensorDataType::F16:
  case TensorDataType::BF16:
    return 2;
  case TensorDataType::U32:
  case TensorDataType::S32:
  case TensorDataType::F32:
  case TensorDataType::F32Ftz:
  case TensorDataType::TF32:
  case TensorDataType::TF32Ftz:
    return 4;
  case TensorDataType::U64:
  case TensorDataType::S64:
  case TensorDataType::F64:
    return 8;
  case TensorDataType::U4x16Align8:
  case TensorDataType::U4x16Align16:
  case TensorDataType::U6x16Align16:
    return 0;
  }
  return 0;
}

bool isFloat(TensorDataType type) {
  switch (type) {
  case TensorDataType::F16:
  case TensorDataType::F32:
  case TensorDataType::F64:
  case TensorDataType::BF16:
  case TensorDataType::F32Ftz:
  case TensorDataType::TF32:
  case TensorDataType::TF32Ftz:
    return true;
  default:
    return false;
  }
}

uint64_t TensorMap::boxBytes() const {
  uint64_t elements = 1;
  for (uint32_t d = 0; d < rank; ++d)
    elements *= (boxDim[d] + elementStrides[d] - 1) / elementStrides[d];
  return elements * elementBytes(dataType);
}

Status encodeTiled(uint8_t out[kTensorMapBytes], uint32_t dataType,
                   uint32_t rank, uint64_t globalAddress,
                   const uint64_t *globalDim, const uint64_t *globalStrides,
                   const uint32_t *boxDim, const uint32_t *elementStrides,
                   uint32_t interleave, uint32_t swizzle, uint32_t l2Promotion,
                   uint32_t oobFill) {
  MOSAIC_RETURN_IF_ERROR(
      checkEnums(dataType, interleave, swizzle, l2Promotion, oobFill));
  const uint64_t elementSize = elementBytes(TensorDataType(dataType));
  const char *interleaveName = kInterleaveNames[interleave];

  // tensorRank.
  if (rank == 0 || rank > kMaxRank)
    return Error{"`tensorRank` is " + std::to_string(rank) +
                 "; must be 1 to 5"};
  if (interleave != kInterleaveNone && rank < 3)
    return Error{"`tensorRank` is " + std::to_string(rank) +
                 "; must be at least 3 when `interleave` is " + interleaveName};
  if (!globalDim || !boxDim || !elementStrides || (rank > 1 && !globalStrides))
    return Error{std::string("`") +
                 (!globalDim        ? "globalDim"
                  : !boxDim         ? "boxDim"
                  : !elementStrides ? "elementStrides"
                                    : "globalStrides") +
                 "` is a null pointer"};

  // globalAddress.
  uint64_t addressAlignment = interleave == kInterleave32B ? 32 : 16;
  if (globalAddress % addressAlignment != 0)
    return Error{"`globalAddress` " + hex(globalAddress) + " must be " +
                 std::to_string(addressAlignment) + "-byte aligned" +
                 (interleave == kInterleave32B
                      ? std::string(" when `interleave` is ") + interleaveName
                      : std::string())};

  // globalDim.
  for (uint32_t d = 0; d < rank; ++d)
    if (globalDim[d] == 0 || globalDim[d] > kMaxGlobalDim)
      return Error{indexed("globalDim", d) + " is " +
                   std::to_string(globalDim[d]) + "; must be 1 to 2^32"};

  // globalStrides: rank - 1 of them, for dimensions 1 and up.
  uint64_t strideMultiple = interleave == kInterleave32B ? 32 : 16;
  for (uint32_t d = 0; d + 1 < rank; ++d) {
    if (globalStrides[d] % strideMultiple != 0)
      return Error{indexed("globalStrides", d) + " (" +
                   std::to_string(globalStrides[d]) +
                   " bytes) must be a multiple of " +
                   std::to_string(strideMultiple) +
                   (interleave == kInterleave32B
                        ? std::string(" when `interleave` is ") + interleaveName
                        : std::string())};
    if (globalStrides[d] >= kStrideLimit)
      return Error{indexed("globalStrides", d) + " (" +
                   std::to_string(globalStrides[d]) +
                   " bytes) must be less than 2^40"};
  }

  // boxDim.
  for (uint32_t d = 0; d < rank; ++d)
    if (boxDim[d] == 0 || boxDim[d] > kMaxBoxDim)
      return Error{indexed("boxDim", d) + " is " + std::to_string(boxDim[d]) +
                   "; must be 1 to 256"};
  const uint64_t innerBoxBytes = uint64_t(boxDim[0]) * elementSize;
  if (interleave == kInterleaveNone && innerBoxBytes % 16 != 0)
    return Error{"`boxDim[0]` * element size (" +
                 std::to_string(innerBoxBytes) +
                 " bytes) must be a multiple of 16"};

  // elementStrides.
  for (uint32_t d = 0; d < rank; ++d)
    if (elementStrides[d] == 0 || elementStrides[d] > kMaxElementStride)
      return Error{indexed("elementStrides", d) + " is " +
                   std::to_string(elementStrides[d]) + "; must be 1 to 8"};

  // interleave and swizzle.
  if (interleave == kInterleave32B && swizzle != kSwizzle32B)
    return Error{std::string("`swizzle` is ") + kSwizzleNames[swizzle] +
                 "; must be CU_TENSOR_MAP_SWIZZLE_32B when `interleave` is " +
                 interleaveName};
  if (interleave == kInterleaveNone && swizzle != kSwizzleNone &&
      innerBoxBytes > kSwizzleSpan[swizzle])
    return Error{"`boxDim[0]` * element size (" +
                 std::to_string(innerBoxBytes) +
                 " bytes) must be at most the swizzle span (" +
                 std::to_string(kSwizzleSpan[swizzle]) + " bytes of " +
                 kSwizzleNames[swizzle] + ")"};

  // oobFill.
  if (oobFill == kOobFillNan && !isFloat(TensorDataType(dataType)))
    return Error{std::string("`oobFill` "
                             "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_"
                             "FMA needs a floating-point `tensorDataType`, "
                             "not ") +
                 kDataTypeNames[dataType]};

  Encoding encoding;
  std::memset(&encoding, 0, sizeof(encoding));
  encoding.magic = kMagic;
  encoding.globalAddress = globalAddress;
  for (uint32_t d = 0; d < rank; ++d) {
    encoding.globalDim[d] = globalDim[d];
    encoding.globalStrides[d] = d == 0 ? elementSize : globalStrides[d - 1];
    encoding.boxDim[d] = static_cast<uint16_t>(boxDim[d]);
    // cuda.h: without interleave, TMA ignores elementStrides[0].
    encoding.elementStrides[d] = static_cast<uint8_t>(
        d == 0 && interleave == kInterleaveNone ? 1 : elementStrides[d]);
  }
  encoding.dataType = static_cast<uint8_t>(dataType);
  encoding.rank = static_cast<uint8_t>(rank);
  encoding.interleave = static_cast<uint8_t>(interleave);
  encoding.swizzle = static_cast<uint8_t>(swizzle);
  encoding.l2Promotion = static_cast<uint8_t>(l2Promotion);
  encoding.oobFill = static_cast<uint8_t>(oobFill);
  encoding.checksum = fnv1a(reinterpret_cast<const uint8_t *>(&encoding),
                            offsetof(Encoding, checksum));
  std::memcpy(out, &encoding, sizeof(encoding));
  return Status();
}

Expected<TensorMap> decode(const uint8_t bytes[kTensorMapBytes]) {
  Encoding encoding;
  std::memcpy(&encoding, bytes, sizeof(encoding));
  std::string where = "tensor map at " + hex(reinterpret_cast<uint64_t>(bytes));
  if (encoding.magic != kMagic)
    return Error{where + " was not encoded by cuTensorMapEncodeTiled"};
  if (encoding.checksum != fnv1a(bytes, offsetof(Encoding, checksum)))
    return Error{where +
                 " was not encoded by cuTensorMapEncodeTiled: its bytes "
                 "changed after it was encoded"};

  TensorMap map;
  map.dataType = TensorDataType(encoding.dataType);
  map.rank = encoding.rank;
  map.globalAddress = encoding.globalAddress;
  for (uint32_t d = 0; d < kMaxRank; ++d) {
    map.globalDim[d] = encoding.globalDim[d];
    map.globalStrides[d] = encoding.globalStrides[d];
    map.boxDim[d] = encoding.boxDim[d];
    map.elementStrides[d] = encoding.elementStrides[d];
  }
  map.interleave = encoding.interleave;
  map.swizzleBytes = kSwizzleSpan[encoding.swizzle];
  map.l2Promotion = encoding.l2Promotion;
  map.oobFillNan = encoding.oobFill == kOobFillNan;
  return map;
}

} // namespace mosaic::emulator
