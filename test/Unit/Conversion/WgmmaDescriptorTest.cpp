//===- WgmmaDescriptorTest.cpp - Tests for the wgmma matrix descriptor ----===//

#include "Conversion/MosaicGPUToNVVM/WgmmaDescriptor.h"

#include "gtest/gtest.h"

using mosaic::WgmmaMatrixDescriptor;
using Swizzle = WgmmaMatrixDescriptor::Swizzle;

namespace {

TEST(WgmmaDescriptor, KMajor128ByteSwizzle) {
  // bf16 A tiled (8, 64) with the 128-byte swizzle, as in
  // examples/gemm_bf16.mlir (whose PTX has this constant): 8-row groups 1024
  // bytes apart, leading byte offset 16 (unused when swizzled).
  WgmmaMatrixDescriptor descriptor = WgmmaMatrixDescriptor::create(
      /*startBytes=*/0, /*leadingBytes=*/16, /*strideBytes=*/1024,
      Swizzle::Bytes128);
  EXPECT_EQ(descriptor.leadingByteOffset, 1u);
  EXPECT_EQ(descriptor.strideByteOffset, 64u);
  EXPECT_EQ(descriptor.encode(), 0x4000004000010000u);
}

TEST(WgmmaDescriptor, MNMajor128ByteSwizzle) {
  // The same example's B, row-major K x N: column blocks 1024 bytes apart,
  // 8-row groups of K 2048 bytes apart.
  EXPECT_EQ(
      WgmmaMatrixDescriptor::create(0, 1024, 2048, Swizzle::Bytes128).encode(),
      0x4000008000400000u);
}

TEST(WgmmaDescriptor, FieldsAtTheirBits) {
  EXPECT_EQ(
      WgmmaMatrixDescriptor::create(0x3FFF0, 0, 0, Swizzle::None).encode(),
      0x3FFFu);
  EXPECT_EQ(
      WgmmaMatrixDescriptor::create(0, 0x3FFF0, 0, Swizzle::None).encode(),
      uint64_t(0x3FFF) << 16);
  EXPECT_EQ(
      WgmmaMatrixDescriptor::create(0, 0, 0x3FFF0, Swizzle::None).encode(),
      uint64_t(0x3FFF) << 32);
  WgmmaMatrixDescriptor based{};
  based.baseOffset = 7;
  EXPECT_EQ(based.encode(), uint64_t(7) << 49);
  EXPECT_EQ(WgmmaMatrixDescriptor::create(0, 0, 0, Swizzle::Bytes32).encode(),
            uint64_t(3) << 62);
}

TEST(WgmmaDescriptor, AddressesWrapAt256KiB) {
  // matrix-descriptor-encode keeps the 18 address bits of shared memory.
  EXPECT_EQ(WgmmaMatrixDescriptor::encodeBytes(0x40400), 0x40u);
  EXPECT_EQ(
      WgmmaMatrixDescriptor::create(0x40400, 0, 0, Swizzle::None).startAddress,
      0x40u);
}

TEST(WgmmaDescriptor, SwizzleModes) {
  EXPECT_EQ(WgmmaMatrixDescriptor::swizzleOf(128), Swizzle::Bytes128);
  EXPECT_EQ(WgmmaMatrixDescriptor::swizzleOf(64), Swizzle::Bytes64);
  EXPECT_EQ(WgmmaMatrixDescriptor::swizzleOf(32), Swizzle::Bytes32);
  EXPECT_EQ(WgmmaMatrixDescriptor::swizzleOf(16), Swizzle::None);
  EXPECT_EQ(static_cast<uint64_t>(Swizzle::Bytes64), 2u);
}

} // namespace
