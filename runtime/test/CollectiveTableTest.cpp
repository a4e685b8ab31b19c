//===- CollectiveTableTest.cpp - The collective table's bytes -----------===//
//
// The layout of docs/RationaleMultiDevice.md, checked byte by byte.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Runtime/CollectiveTable.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace mosaic;
using namespace mosaic::runtime;

namespace {

uint32_t load32(const std::vector<uint8_t> &bytes, size_t offset) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i)
    value |= uint32_t(bytes.at(offset + i)) << (8 * i);
  return value;
}

uint64_t load64(const std::vector<uint8_t> &bytes, size_t offset) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i)
    value |= uint64_t(bytes.at(offset + i)) << (8 * i);
  return value;
}

CUtensorMap mapFilledWith(uint8_t value) {
  CUtensorMap map;
  std::memset(&map, value, sizeof(map));
  return map;
}

TEST(CollectiveTable, LayoutWithoutMaps) {
  CollectiveTableLayout layout{4, 2, 0};
  EXPECT_EQ(layout.peerOffset(0, 0), 16u);
  EXPECT_EQ(layout.peerOffset(0, 3), 40u);
  EXPECT_EQ(layout.peerOffset(1, 0), 48u);
  EXPECT_EQ(layout.tensorMapsOffset(), 0u);
  EXPECT_EQ(layout.bytes(), 16u + 2 * 4 * 8);
}

TEST(CollectiveTable, LayoutWithMaps) {
  // 16 + 3 * 8 = 40 bytes of header and peers; the maps at 128.
  CollectiveTableLayout three{3, 1, 2};
  EXPECT_EQ(three.tensorMapsOffset(), 128u);
  EXPECT_EQ(three.mapOffset(0, 2), 128u + 2 * 128);
  EXPECT_EQ(three.mapOffset(1, 0), 128u + 3 * 128);
  EXPECT_EQ(three.bytes(), 128u + 6 * 128);
  // 16 + 2 * 8 * 8 = 144: the maps at 256, the next multiple of 128.
  CollectiveTableLayout eight{8, 2, 1};
  EXPECT_EQ(eight.tensorMapsOffset(), 256u);
  // No symmetric buffers: 16 bytes of header, the maps at 128.
  EXPECT_EQ((CollectiveTableLayout{2, 0, 1}).tensorMapsOffset(), 128u);
}

TEST(CollectiveTable, Bytes) {
  std::vector<std::vector<CUdeviceptr>> peers = {
      {0x7f0000000000, 0x7f0000200000, 0x7f0000400000},
      {0x7f0000000100, 0x7f0000200100, 0x7f0000400100}};
  std::vector<std::vector<CUtensorMap>> maps = {
      {mapFilledWith(0xA0), mapFilledWith(0xA1), mapFilledWith(0xA2)}};
  Expected<std::vector<uint8_t>> bytes =
      encodeCollectiveTable(2, 3, peers, maps);
  ASSERT_TRUE(bytes.ok()) << bytes.message();
  CollectiveTableLayout layout{3, 2, 1};
  ASSERT_EQ(bytes->size(), layout.bytes());
  EXPECT_EQ(load32(*bytes, 0), 2u);    // device_id
  EXPECT_EQ(load32(*bytes, 4), 3u);    // device_count
  EXPECT_EQ(load32(*bytes, 8), 2u);    // symmetric_count
  EXPECT_EQ(load32(*bytes, 12), 128u); // tensor_maps_offset
  for (uint32_t s = 0; s < 2; ++s)
    for (uint32_t q = 0; q < 3; ++q)
      EXPECT_EQ(load64(*bytes, 16 + 8 * (s * 3 + q)), peers[s][q])
          << "peers[" << s << "][" << q << "]";
  // Padding between the peers and the maps is zero.
  for (size_t i = 16 + 6 * 8; i < 128; ++i)
    EXPECT_EQ((*bytes)[i], 0) << "byte " << i;
  for (uint32_t q = 0; q < 3; ++q)
    for (size_t i = 0; i < sizeof(CUtensorMap); ++i)
      ASSERT_EQ((*bytes)[128 + 128 * q + i], 0xA0 + q)
          << "maps[0][" << q << "] byte " << i;
}

TEST(CollectiveTable, NoPeerMapsMeansOffsetZero) {
  Expected<std::vector<uint8_t>> bytes =
      encodeCollectiveTable(0, 2, {{0x1000, 0x2000}}, {});
  ASSERT_TRUE(bytes.ok()) << bytes.message();
  EXPECT_EQ(bytes->size(), 32u);
  EXPECT_EQ(load32(*bytes, 12), 0u);
  EXPECT_EQ(load64(*bytes, 24), 0x2000u);
}

TEST(CollectiveTable, Errors) {
  EXPECT_EQ(encodeCollectiveTable(0, 0, {}, {}).message(),
            "a collective table needs at least one device");
  EXPECT_EQ(encodeCollectiveTable(2, 2, {}, {}).message(),
            "device id 2 is not below the device count 2");
  EXPECT_EQ(encodeCollectiveTable(0, 2, {{0x1000}}, {}).message(),
            "symmetric buffer 0 has 1 entries, one per device expected (2)");
  EXPECT_EQ(
      encodeCollectiveTable(0, 2, {{0x1000, 0x2000}}, {{mapFilledWith(0)}})
          .message(),
      "peer tensor map 0 has 1 entries, one per device expected (2)");
}

} // namespace
