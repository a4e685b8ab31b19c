//===- CheckTest.cpp - Inputs, poisoned outputs and error norms ---------===//

#include "Check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

using namespace mosaic::run;
using mosaic::BufferParameter;
using mosaic::ElementType;
using mosaic::fromDouble;

namespace {

BufferParameter parameter(ElementType type, std::vector<int64_t> shape) {
  BufferParameter result;
  result.elementType = type;
  result.shape = std::move(shape);
  return result;
}

TEST(Check, RandomInputsAreExactAndNotZeros) {
  for (ElementType type : {ElementType::F32, ElementType::BF16,
                           ElementType::F8E4M3FN, ElementType::I32}) {
    std::mt19937_64 rng(7);
    HostBuffer buffer = randomBuffer(parameter(type, {64, 64}), rng);
    ASSERT_EQ(buffer.values.size(), 4096u);
    ASSERT_EQ(buffer.bytes.size(), 4096u * byteSize(type));
    size_t zeros = 0;
    std::set<double> distinct;
    for (size_t i = 0; i < buffer.values.size(); ++i) {
      // Each value is exactly what the bytes hold.
      uint64_t bits = 0;
      fromDouble(type, buffer.values[i], &bits);
      ASSERT_EQ(
          std::memcmp(&bits, &buffer.bytes[i * byteSize(type)], byteSize(type)),
          0);
      ASSERT_TRUE(std::isfinite(buffer.values[i]));
      zeros += buffer.values[i] == 0;
      distinct.insert(buffer.values[i]);
    }
    EXPECT_LT(zeros, 4096u / 50) << spelling(type);
    EXPECT_GT(distinct.size(), 50u) << spelling(type);
  }
}

TEST(Check, RandomInputsFollowTheSeed) {
  std::mt19937_64 a(42), b(42), c(43);
  BufferParameter p = parameter(ElementType::F32, {1000});
  EXPECT_EQ(randomBuffer(p, a).bytes, randomBuffer(p, b).bytes);
  EXPECT_NE(randomBuffer(p, a).bytes, randomBuffer(p, c).bytes);
}

// The recorded hardware outputs depend on these exact values: the first
// draws of seed 11, pinned, so that no change to the generator (or to the
// standard library under it) goes unnoticed.
TEST(Check, InputGeneratorVersion1IsPinned) {
  std::mt19937_64 rng(11);
  InputGenerator generator(rng);
  const double expected[] = {0x1.f0466ef46ce27p-2, -0x1.2f5ea81b74e45p-1,
                             0x1.7d279c6afdaacp+0, -0x1.d41fb4a4f725dp-1,
                             -0x1.dc7c455a6dfb8p-4};
  for (double value : expected)
    EXPECT_EQ(generator.normal(), value);
  std::mt19937_64 integers(11);
  InputGenerator uniform(integers);
  const int64_t expectedIntegers[] = {-43, 35, -16, 26, -57};
  for (int64_t value : expectedIntegers)
    EXPECT_EQ(uniform.uniform(-64, 64), value);
}

#ifdef __GLIBCXX__
// Version 1 is what libstdc++'s distributions compute, which is how the
// recorded inputs were drawn.
TEST(Check, InputGeneratorVersion1IsLibstdcxxs) {
  std::mt19937_64 ours(3), theirs(3);
  InputGenerator generator(ours);
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int i = 0; i < 10001; ++i)
    ASSERT_EQ(generator.normal(), normal(theirs)) << "draw " << i;
  std::uniform_int_distribution<int> uniform(-64, 64);
  for (int i = 0; i < 10000; ++i)
    ASSERT_EQ(generator.uniform(-64, 64), uniform(theirs)) << "draw " << i;
}
#endif

TEST(Check, FindsUnwrittenAndNonFiniteElements) {
  BufferParameter p = parameter(ElementType::BF16, {8});
  std::vector<uint8_t> bytes(16, kPoisonByte);
  HostBuffer untouched = decodeBuffer(p, bytes);
  EXPECT_EQ(findUnwritten(untouched).count, 8u);
  EXPECT_EQ(findNonFinite(untouched).count, 0u); // Poison is not counted.
  // Elements 0..4 written with 1.0 (0x3F80), element 6 with +inf (0x7F80).
  for (int i = 0; i < 5; ++i) {
    bytes[2 * i] = 0x80;
    bytes[2 * i + 1] = 0x3F;
  }
  bytes[12] = 0x80;
  bytes[13] = 0x7F;
  HostBuffer partial = decodeBuffer(p, bytes);
  Found unwritten = findUnwritten(partial);
  EXPECT_EQ(unwritten.count, 2u);
  EXPECT_EQ(unwritten.first, 5u);
  Found nonFinite = findNonFinite(partial);
  EXPECT_EQ(nonFinite.count, 1u);
  EXPECT_EQ(nonFinite.first, 6u);
}

TEST(Check, RelativeErrorByHand) {
  // out - ref = (0, 0.3, -0.4): ||.|| = 0.5; ||ref|| = ||(1, 2, 2)|| = 3.
  std::vector<double> output = {9, 1, 2.3, 1.6};
  Comparison c = compare(output, {1, 2, 3}, {1, 2, 2});
  EXPECT_NEAR(c.relativeError, 0.5 / 3, 1e-15);
  EXPECT_EQ(c.compared, 3u);
  EXPECT_EQ(c.skipped, 0u);
  EXPECT_EQ(compare({0, 0}, {0, 1}, {0, 0}).relativeError, 0);
  EXPECT_TRUE(std::isinf(compare({1, 0}, {0, 1}, {0, 0}).relativeError));
  Comparison withNan = compare({NAN, 1}, {0, 1}, {1, 1});
  EXPECT_EQ(withNan.skipped, 1u);
  EXPECT_EQ(withNan.relativeError, 0);
}

TEST(Check, SampleIndices) {
  std::mt19937_64 rng(1);
  std::vector<uint64_t> all = sampleIndices(10, 0, rng);
  EXPECT_EQ(all, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(sampleIndices(10, 20, rng).size(), 10u);
  std::vector<uint64_t> some = sampleIndices(1 << 24, 4096, rng);
  ASSERT_EQ(some.size(), 4096u);
  EXPECT_TRUE(std::is_sorted(some.begin(), some.end()));
  EXPECT_EQ(std::set<uint64_t>(some.begin(), some.end()).size(), 4096u);
  EXPECT_LT(some.back(), uint64_t(1) << 24);
}

} // namespace
