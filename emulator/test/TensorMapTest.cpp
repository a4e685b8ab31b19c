//===- TensorMapTest.cpp - cuTensorMapEncodeTiled's rules ----------------===//
//
// Each rule of the comment above cuTensorMapEncodeTiled in cuda.h, accepted
// at its limit and rejected just past it with a message that names the
// argument; then the 128-byte round trip through `decode`.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Emulator/TensorMap.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>

namespace mosaic::emulator {
namespace {

// cuda.h's enumerators, by value.
constexpr uint32_t kUint8 = 0, kUint16 = 1, kInt32 = 3, kFloat16 = 6,
                   kFloat32 = 7, kTFloat32Ftz = 12, kU4Align8 = 13,
                   kU6Align16 = 15;
constexpr uint32_t kInterleaveNone = 0, kInterleave16B = 1, kInterleave32B = 2;
constexpr uint32_t kSwizzleNone = 0, kSwizzle32B = 1, kSwizzle64B = 2,
                   kSwizzle128B = 3, kSwizzle128BAtom32B = 4,
                   kSwizzle128BAtom64B = 6;

/// cuTensorMapEncodeTiled's arguments: by default a valid 2-D f32 tensor
/// of 64 x 32 elements, loaded in 32 x 8 boxes with the 128-byte swizzle.
struct Arguments {
  uint32_t dataType = kFloat32;
  uint32_t rank = 2;
  uint64_t globalAddress = 0x10000;
  std::array<uint64_t, 5> globalDim{64, 32, 1, 1, 1};
  std::array<uint64_t, 4> globalStrides{256, 8192, 8192, 8192};
  std::array<uint32_t, 5> boxDim{32, 8, 1, 1, 1};
  std::array<uint32_t, 5> elementStrides{1, 1, 1, 1, 1};
  uint32_t interleave = kInterleaveNone;
  uint32_t swizzle = kSwizzle128B;
  uint32_t l2Promotion = 0;
  uint32_t oobFill = 0;

  Status encode(uint8_t *out) const {
    return encodeTiled(out, dataType, rank, globalAddress, globalDim.data(),
                       globalStrides.data(), boxDim.data(),
                       elementStrides.data(), interleave, swizzle, l2Promotion,
                       oobFill);
  }
  Status encode() const {
    alignas(64) uint8_t bytes[kTensorMapBytes];
    return encode(bytes);
  }
};

/// A rank-3 tensor for the interleaved layouts (which need rank >= 3).
Arguments interleaved(uint32_t interleave) {
  Arguments a;
  a.dataType = kFloat16;
  a.rank = 3;
  a.globalDim = {8, 16, 4, 1, 1};
  a.globalStrides = {64, 1024, 1024, 1024};
  a.boxDim = {8, 16, 4, 1, 1};
  a.interleave = interleave;
  a.swizzle = interleave == kInterleave32B ? kSwizzle32B : kSwizzleNone;
  return a;
}

void expectOk(const Status &status) {
  EXPECT_TRUE(status.ok()) << status.message();
}

/// The encoding fails and its message contains every fragment.
void expectError(const Status &status,
                 std::initializer_list<std::string> fragments) {
  ASSERT_FALSE(status.ok())
      << "expected an error mentioning " << *fragments.begin();
  for (const std::string &fragment : fragments)
    EXPECT_NE(status.message().find(fragment), std::string::npos)
        << "`" << fragment << "` not in: " << status.message();
}

TEST(TensorMapElements, SizesAndFloatnessFollowCudaH) {
  const unsigned bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4, 0, 0, 0};
  const bool floats[] = {false, false, false, false, false, false,
                         true,  true,  true,  true,  true,  true,
                         true,  false, false, false};
  for (uint32_t t = 0; t < 16; ++t) {
    EXPECT_EQ(elementBytes(TensorDataType(t)), bytes[t]) << "type " << t;
    EXPECT_EQ(isFloat(TensorDataType(t)), floats[t]) << "type " << t;
  }
}

TEST(TensorMapEncode, DefaultArgumentsAreValid) {
  expectOk(Arguments().encode());
}

TEST(TensorMapEncode, DataTypeInRangeAndNotPacked) {
  Arguments a;
  a.dataType = kTFloat32Ftz;
  a.oobFill = 1;
  expectOk(a.encode());
  a.oobFill = 0;
  a.dataType = kU4Align8;
  expectError(a.encode(),
              {"`tensorDataType`", "CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B",
               "not supported by the emulator"});
  a.dataType = kU6Align16;
  expectError(a.encode(), {"`tensorDataType`", "not supported"});
  a.dataType = 16;
  expectError(a.encode(), {"`tensorDataType` is 16"});
}

TEST(TensorMapEncode, RankIsOneToFive) {
  Arguments a;
  a.rank = 5;
  expectOk(a.encode());
  a.rank = 6;
  expectError(a.encode(), {"`tensorRank` is 6", "1 to 5"});
  a.rank = 0;
  expectError(a.encode(), {"`tensorRank` is 0"});
  // Rank 1 has no strides at all.
  Arguments one;
  alignas(64) uint8_t bytes[kTensorMapBytes];
  expectOk(encodeTiled(bytes, one.dataType, 1, one.globalAddress,
                       one.globalDim.data(), nullptr, one.boxDim.data(),
                       one.elementStrides.data(), one.interleave, one.swizzle,
                       0, 0));
}

TEST(TensorMapEncode, InterleaveNeedsRankThree) {
  Arguments a = interleaved(kInterleave16B);
  expectOk(a.encode());
  a.rank = 2;
  expectError(a.encode(), {"`tensorRank` is 2", "at least 3",
                           "CU_TENSOR_MAP_INTERLEAVE_16B"});
  a = interleaved(kInterleaveNone);
  a.interleave = 3;
  expectError(a.encode(), {"`interleave` is 3"});
}

TEST(TensorMapEncode, GlobalAddressIs16ByteAligned) {
  Arguments a;
  a.globalAddress = 0x10010;
  expectOk(a.encode());
  a.globalAddress = 0x10008;
  expectError(a.encode(), {"`globalAddress` 0x10008", "16-byte aligned"});
}

TEST(TensorMapEncode, GlobalAddressIs32ByteAlignedWithInterleave32B) {
  Arguments a = interleaved(kInterleave32B);
  a.globalAddress = 0x10020;
  expectOk(a.encode());
  a.globalAddress = 0x10010;
  expectError(a.encode(), {"`globalAddress`", "32-byte aligned",
                           "CU_TENSOR_MAP_INTERLEAVE_32B"});
}

TEST(TensorMapEncode, GlobalDimIsOneTo2To32) {
  Arguments a;
  a.globalDim[1] = uint64_t(1) << 32;
  expectOk(a.encode());
  a.globalDim[1] = (uint64_t(1) << 32) + 1;
  expectError(a.encode(), {"`globalDim[1]` is 4294967297", "1 to 2^32"});
  a.globalDim[1] = 1;
  expectOk(a.encode());
  a.globalDim[1] = 0;
  expectError(a.encode(), {"`globalDim[1]` is 0"});
}

TEST(TensorMapEncode, GlobalStridesAreMultiplesOf16) {
  Arguments a;
  a.globalStrides[0] = 272;
  expectOk(a.encode());
  a.globalStrides[0] = 264;
  expectError(a.encode(),
              {"`globalStrides[0]` (264 bytes) must be a multiple of 16"});
}

TEST(TensorMapEncode, GlobalStridesAreMultiplesOf32WithInterleave32B) {
  Arguments a = interleaved(kInterleave32B);
  a.globalStrides[1] = 1056;
  expectOk(a.encode());
  a.globalStrides[1] = 1040;
  expectError(a.encode(), {"`globalStrides[1]` (1040 bytes)", "multiple of 32",
                           "CU_TENSOR_MAP_INTERLEAVE_32B"});
}

TEST(TensorMapEncode, GlobalStridesAreBelow2To40) {
  Arguments a;
  a.rank = 3;
  a.globalStrides[1] = (uint64_t(1) << 40) - 16;
  expectOk(a.encode());
  a.globalStrides[1] = uint64_t(1) << 40;
  expectError(a.encode(), {"`globalStrides[1]`", "less than 2^40"});
}

TEST(TensorMapEncode, OverlappingStridesAreNotRejected) {
  // cuda.h's stride pseudo-code describes packed tensors; it states no
  // requirement, so a tensor whose rows overlap is encoded.
  Arguments a;
  a.globalStrides[0] = 16;
  expectOk(a.encode());
}

TEST(TensorMapEncode, BoxDimIsOneTo256) {
  Arguments a;
  a.boxDim[1] = 256;
  expectOk(a.encode());
  a.boxDim[1] = 257;
  expectError(a.encode(), {"`boxDim[1]` is 257", "1 to 256"});
  a.boxDim[1] = 0;
  expectError(a.encode(), {"`boxDim[1]` is 0"});
}

TEST(TensorMapEncode, InnerBoxBytesAreAMultipleOf16WithoutInterleave) {
  Arguments a;
  a.swizzle = kSwizzleNone;
  a.boxDim[0] = 4;
  expectOk(a.encode());
  a.boxDim[0] = 6;
  expectError(a.encode(),
              {"`boxDim[0]` * element size (24 bytes) must be a multiple of "
               "16"});
  // With an interleaved layout the rule does not apply.
  Arguments b = interleaved(kInterleave16B);
  b.boxDim[0] = 12;
  expectOk(b.encode());
}

TEST(TensorMapEncode, ElementStridesAreOneToEight) {
  Arguments a;
  a.elementStrides[1] = 8;
  expectOk(a.encode());
  a.elementStrides[1] = 9;
  expectError(a.encode(), {"`elementStrides[1]` is 9", "1 to 8"});
  a.elementStrides[1] = 0;
  expectError(a.encode(), {"`elementStrides[1]` is 0"});
  // elementStrides[0] is checked too, although TMA ignores it.
  a.elementStrides[1] = 1;
  a.elementStrides[0] = 9;
  expectError(a.encode(), {"`elementStrides[0]` is 9"});
}

TEST(TensorMapEncode, InnerBoxFitsTheSwizzleSpan) {
  const std::pair<uint32_t, uint32_t> spans[] = {
      {kSwizzle32B, 32}, {kSwizzle64B, 64}, {kSwizzle128B, 128}};
  for (auto [swizzle, span] : spans) {
    Arguments a;
    a.dataType = kUint8;
    a.swizzle = swizzle;
    a.boxDim[0] = span;
    expectOk(a.encode());
    a.boxDim[0] = span + 16;
    expectError(
        a.encode(),
        {"`boxDim[0]` * element size (" + std::to_string(span + 16) + " bytes)",
         "swizzle span (" + std::to_string(span) + " bytes"});
  }
  // Interleaved layouts are exempt.
  Arguments b = interleaved(kInterleave16B);
  b.swizzle = kSwizzle32B;
  b.boxDim[0] = 32; // 64 bytes of f16
  expectOk(b.encode());
}

TEST(TensorMapEncode, SwizzleEnumeratorsBeyond128BAreRejected) {
  Arguments a;
  a.swizzle = kSwizzle128B;
  expectOk(a.encode());
  a.swizzle = kSwizzle128BAtom32B;
  expectError(a.encode(), {"`swizzle`", "CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B",
                           "not supported by the emulator"});
  a.swizzle = kSwizzle128BAtom64B;
  expectError(a.encode(), {"CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B"});
  a.swizzle = 7;
  expectError(a.encode(), {"`swizzle` is 7"});
}

TEST(TensorMapEncode, Interleave32BNeedsSwizzle32B) {
  Arguments a = interleaved(kInterleave32B);
  expectOk(a.encode());
  a.swizzle = kSwizzleNone;
  expectError(a.encode(), {"`swizzle`", "CU_TENSOR_MAP_SWIZZLE_32B",
                           "CU_TENSOR_MAP_INTERLEAVE_32B"});
}

TEST(TensorMapEncode, L2PromotionInRange) {
  Arguments a;
  a.l2Promotion = 3;
  expectOk(a.encode());
  a.l2Promotion = 4;
  expectError(a.encode(), {"`l2Promotion` is 4"});
}

TEST(TensorMapEncode, NanFillOnlyForFloats) {
  Arguments a;
  a.oobFill = 1;
  expectOk(a.encode());
  a.dataType = kInt32;
  expectError(a.encode(),
              {"`oobFill`", "floating-point", "CU_TENSOR_MAP_DATA_TYPE_INT32"});
  a.dataType = kFloat32;
  a.oobFill = 2;
  expectError(a.encode(), {"`oobFill` is 2"});
}

TEST(TensorMapEncode, NullArraysAreErrors) {
  Arguments a;
  alignas(64) uint8_t bytes[kTensorMapBytes];
  expectError(encodeTiled(bytes, a.dataType, a.rank, a.globalAddress,
                          a.globalDim.data(), nullptr, a.boxDim.data(),
                          a.elementStrides.data(), 0, 0, 0, 0),
              {"`globalStrides` is a null pointer"});
  expectError(encodeTiled(bytes, a.dataType, a.rank, a.globalAddress, nullptr,
                          a.globalStrides.data(), a.boxDim.data(),
                          a.elementStrides.data(), 0, 0, 0, 0),
              {"`globalDim` is a null pointer"});
}

TEST(TensorMapDecode, RoundTripsEveryField) {
  Arguments a;
  a.dataType = kUint16;
  a.rank = 5;
  a.globalAddress = 0x7f0000001230;
  a.globalDim = {100, 7, 6, 5, 4};
  a.globalStrides = {208, 208 * 7, 208 * 7 * 6, 208 * 7 * 6 * 5};
  a.boxDim = {64, 7, 5, 3, 2};
  a.elementStrides = {3, 2, 1, 4, 8};
  a.swizzle = kSwizzle128B;
  a.l2Promotion = 2;
  a.oobFill = 0;
  alignas(64) uint8_t bytes[kTensorMapBytes];
  ASSERT_TRUE(a.encode(bytes).ok());

  Expected<TensorMap> map = decode(bytes);
  ASSERT_TRUE(map.ok()) << map.message();
  EXPECT_EQ(map->dataType, TensorDataType::U16);
  EXPECT_EQ(map->rank, 5u);
  EXPECT_EQ(map->globalAddress, a.globalAddress);
  for (unsigned d = 0; d < 5; ++d) {
    EXPECT_EQ(map->globalDim[d], a.globalDim[d]) << d;
    EXPECT_EQ(map->boxDim[d], a.boxDim[d]) << d;
  }
  // [0] is the element size; the rest are cuda.h's rank - 1 strides.
  EXPECT_EQ(map->globalStrides[0], 2u);
  for (unsigned d = 1; d < 5; ++d)
    EXPECT_EQ(map->globalStrides[d], a.globalStrides[d - 1]) << d;
  // Without interleave TMA ignores elementStrides[0] (cuda.h).
  EXPECT_EQ(map->elementStrides[0], 1u);
  for (unsigned d = 1; d < 5; ++d)
    EXPECT_EQ(map->elementStrides[d], a.elementStrides[d]) << d;
  EXPECT_EQ(map->interleave, 0u);
  EXPECT_EQ(map->swizzleBytes, 128u);
  EXPECT_EQ(map->l2Promotion, 2u);
  EXPECT_FALSE(map->oobFillNan);
  // ceil(box / elementStride) elements per dimension, 2 bytes each.
  EXPECT_EQ(map->boxBytes(), uint64_t(64 * 4 * 5 * 1 * 1) * 2);
}

TEST(TensorMapDecode, RoundTripsInterleaveAndNanFill) {
  Arguments a = interleaved(kInterleave32B);
  a.oobFill = 1;
  a.elementStrides = {2, 1, 1, 1, 1};
  alignas(64) uint8_t bytes[kTensorMapBytes];
  ASSERT_TRUE(a.encode(bytes).ok());
  Expected<TensorMap> map = decode(bytes);
  ASSERT_TRUE(map.ok()) << map.message();
  EXPECT_EQ(map->interleave, 2u);
  EXPECT_EQ(map->swizzleBytes, 32u);
  EXPECT_TRUE(map->oobFillNan);
  EXPECT_EQ(map->elementStrides[0], 2u);
}

TEST(TensorMapDecode, SurvivesAByteCopy) {
  // A kernel receives the map as a copy in its parameter buffer.
  alignas(64) uint8_t bytes[kTensorMapBytes];
  ASSERT_TRUE(Arguments().encode(bytes).ok());
  alignas(64) uint8_t copy[kTensorMapBytes];
  std::memcpy(copy, bytes, sizeof(copy));
  EXPECT_TRUE(decode(copy).ok());
}

TEST(TensorMapDecode, RejectsBytesNotWrittenByEncodeTiled) {
  alignas(64) uint8_t bytes[kTensorMapBytes] = {};
  Expected<TensorMap> zeros = decode(bytes);
  ASSERT_FALSE(zeros.ok());
  EXPECT_NE(zeros.message().find("tensor map at 0x"), std::string::npos)
      << zeros.message();
  EXPECT_NE(zeros.message().find("was not encoded by cuTensorMapEncodeTiled"),
            std::string::npos)
      << zeros.message();

  ASSERT_TRUE(Arguments().encode(bytes).ok());
  bytes[20] ^= 1; // globalDim[0], after encoding
  Expected<TensorMap> changed = decode(bytes);
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.message().find("changed after it was encoded"),
            std::string::npos)
      << changed.message();
}

} // namespace
} // namespace mosaic::emulator
