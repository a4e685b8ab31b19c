//===- CollectiveTableTest.cpp - The collective table's layout ------------===//

#include "mosaic/Contracts/CollectiveTable.h"

#include <gtest/gtest.h>

using namespace mosaic::collective_table;

namespace {

TEST(CollectiveTable, PeersFollowTheHeader) {
  EXPECT_EQ(peerOffset(0, 0, 4), 16u);
  EXPECT_EQ(peerOffset(0, 3, 4), 16u + 3 * 8);
  EXPECT_EQ(peerOffset(2, 1, 4), 16u + (2 * 4 + 1) * 8);
}

TEST(CollectiveTable, MapsStartAlignedAfterThePeers) {
  // 3 symmetric buffers on 8 devices end at 16 + 192 = 208 bytes.
  EXPECT_EQ(tensorMapsOffset(3, 8, 1), 256u);
  EXPECT_EQ(tableBytes(3, 8, 1), 256u + 128 * 8);
  // 14 peers end exactly at 128.
  EXPECT_EQ(tensorMapsOffset(7, 2, 2), 128u);
  // Without peer maps the offset is 0 and the table ends with the peers.
  EXPECT_EQ(tensorMapsOffset(3, 8, 0), 0u);
  EXPECT_EQ(tableBytes(3, 8, 0), 208u);
  for (uint64_t symmetric = 0; symmetric < 9; ++symmetric)
    for (uint64_t devices = 1; devices < 9; ++devices) {
      uint64_t offset = tensorMapsOffset(symmetric, devices, 1);
      EXPECT_EQ(offset % kTensorMapsAlignment, 0u);
      EXPECT_GE(offset, peerOffset(symmetric, 0, devices));
      EXPECT_LT(offset,
                peerOffset(symmetric, 0, devices) + kTensorMapsAlignment);
    }
}

} // namespace
