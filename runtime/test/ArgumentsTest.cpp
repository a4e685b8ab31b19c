//===- ArgumentsTest.cpp - Checking a launch's buffers ------------------===//

#include "TestSupport.h"

#include "mosaic/Runtime/Arguments.h"

#include <gtest/gtest.h>

using namespace mosaic;
using namespace mosaic::runtime;
using mosaic::runtime::test::kRoundTripManifest;

namespace {

constexpr CUdeviceptr kIn = 0x7f0000000000;
constexpr CUdeviceptr kOut = 0x7f0000100000;

Manifest roundTrip() {
  Expected<Manifest> manifest = parseManifest(kRoundTripManifest, "");
  EXPECT_TRUE(manifest.ok()) << manifest.message();
  return *manifest;
}

std::vector<BufferArgument> goodArguments() {
  return {{kIn, ElementType::BF16, {4096, 64}},
          {kOut, ElementType::BF16, {4096, 64}}};
}

TEST(Arguments, AcceptsMatchingBuffers) {
  EXPECT_TRUE(checkArguments(roundTrip(), goodArguments()).ok());
}

TEST(Arguments, Count) {
  std::vector<BufferArgument> arguments = goodArguments();
  arguments.pop_back();
  EXPECT_EQ(checkArguments(roundTrip(), arguments).message(),
            "`tma_roundtrip` takes 2 buffer arguments (parameters [0, 1]), "
            "got 1");
}

TEST(Arguments, ElementTypeAndShape) {
  std::vector<BufferArgument> arguments = goodArguments();
  arguments[1].elementType = ElementType::F32;
  EXPECT_EQ(checkArguments(roundTrip(), arguments).message(),
            "parameter 1: expected bf16 buffer of shape [4096, 64] (524288 "
            "bytes), got f32 buffer of shape [4096, 64] (1048576 bytes)");
  arguments = goodArguments();
  arguments[0].shape = {64, 4096};
  EXPECT_EQ(checkArguments(roundTrip(), arguments).message(),
            "parameter 0: expected bf16 buffer of shape [4096, 64] (524288 "
            "bytes), got bf16 buffer of shape [64, 4096] (524288 bytes)");
  arguments[0].shape = {4096 * 64};
  EXPECT_EQ(checkArguments(roundTrip(), arguments).message(),
            "parameter 0: expected bf16 buffer of shape [4096, 64] (524288 "
            "bytes), got bf16 buffer of shape [262144] (524288 bytes)");
}

TEST(Arguments, Pointers) {
  std::vector<BufferArgument> arguments = goodArguments();
  arguments[1].pointer = 0;
  EXPECT_EQ(checkArguments(roundTrip(), arguments).message(),
            "parameter 1: the device pointer is null");
  arguments[1].pointer = kOut + 4;
  EXPECT_EQ(checkArguments(roundTrip(), arguments).message(),
            "parameter 1: device pointer 0x7f0000100004 is not 16-byte "
            "aligned, as the kernel assumes");
}

} // namespace
