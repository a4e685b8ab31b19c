//===- TensorCoreTest.cpp - How the emulated tensor cores add -----------===//
//
// The accumulation model of mosaic/Emulator/TensorCore.h on cases small
// enough to work out by hand: alignment to the largest term, truncation of
// the bits below it, a step per group of products, rounding toward zero,
// and the IEEE specials.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Emulator/TensorCore.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace mosaic::emulator;

namespace {

/// One output: d[0] = sum_k a[k] * b[k] + d (row 0 of the 64 rows, n = 1).
float dot(const std::vector<float> &a, const std::vector<float> &b, float d,
          const AccumulationModel &model, bool half = false) {
  uint32_t k = static_cast<uint32_t>(a.size());
  std::vector<float> as(64 * k, 0.0f), bs(b), ds(64, 0.0f);
  for (uint32_t i = 0; i < k; ++i)
    as[i] = a[i];
  ds[0] = d;
  accumulate(as.data(), bs.data(), ds.data(), 1, k, model, half);
  return ds[0];
}

const AccumulationModel kBf16 = accumulationModel(FloatFormat::BF16);

TEST(TensorCore, TheFittedModelIsSixteenProductsAndTwentyFiveBits) {
  EXPECT_EQ(kBf16.groupSize, 16u);
  EXPECT_EQ(kBf16.fractionBits, 25);
  EXPECT_TRUE(kBf16.fitted);
  EXPECT_FALSE(accumulationModel(FloatFormat::E4M3).fitted);
  EXPECT_EQ(accumulationModel(FloatFormat::E4M3).fractionBits, 13);
}

TEST(TensorCore, BitsBelowTheLargestTermsWindowAreTruncated) {
  // 1 + 16 * 2^-27: each small product lies below 2^-25, the last bit kept
  // under the accumulator's leading bit, and is dropped.
  std::vector<float> a(16, std::ldexp(1.0f, -27)), b(16, 1.0f);
  EXPECT_EQ(dot(a, b, 1.0f, kBf16), 1.0f);
  // At 2^-25 each is kept: 1 + 2^-21, exact in f32.
  std::vector<float> kept(16, std::ldexp(1.0f, -25));
  EXPECT_EQ(dot(kept, b, 1.0f, kBf16), 1.0f + std::ldexp(1.0f, -21));
}

TEST(TensorCore, TheLargestTermSetsTheWindowEvenWhenItIsAProduct) {
  // The accumulator (2^-26) is below the window of the product 1.0.
  std::vector<float> a(16, 0.0f), b(16, 1.0f);
  a[0] = 1.0f;
  EXPECT_EQ(dot(a, b, std::ldexp(1.0f, -26), kBf16), 1.0f);
  EXPECT_EQ(dot(a, b, std::ldexp(1.0f, -23), kBf16),
            1.0f + std::ldexp(1.0f, -23));
}

TEST(TensorCore, TheSumIsRoundedTowardZero) {
  // 1 + 2^-24 + 2^-25 is exact in the window but needs 26 bits: toward
  // zero it is 1, where nearest would give 1 + 2^-23.
  std::vector<float> a(16, 0.0f), b(16, 1.0f);
  a[0] = std::ldexp(1.0f, -24);
  a[1] = std::ldexp(1.0f, -25);
  EXPECT_EQ(dot(a, b, 1.0f, kBf16), 1.0f);
  // -1 + 1.5 * 2^-24: toward zero on the 2^-24 grid below 1 in magnitude.
  EXPECT_EQ(dot(a, b, -1.0f, kBf16), -1.0f + std::ldexp(1.0f, -23));
}

TEST(TensorCore, TruncationIsTowardZeroForNegativeTerms) {
  // -2^-27 truncates to 0, not to -2^-25.
  std::vector<float> a(16, 0.0f), b(16, 1.0f);
  a[0] = -std::ldexp(1.0f, -27);
  EXPECT_EQ(dot(a, b, 1.0f, kBf16), 1.0f);
}

TEST(TensorCore, EachGroupIsOneStep) {
  // 32 products of 2^-26 and an accumulator of 1: two steps, both below
  // the window, so nothing is added; one step of 32 would keep nothing
  // either. 2^-24 each: kept in each step (16 * 2^-24 = 2^-20 per step).
  std::vector<float> b(32, 1.0f);
  std::vector<float> small(32, std::ldexp(1.0f, -26));
  EXPECT_EQ(dot(small, b, 1.0f, kBf16), 1.0f);
  std::vector<float> kept(32, std::ldexp(1.0f, -24));
  EXPECT_EQ(dot(kept, b, 1.0f, kBf16), 1.0f + std::ldexp(1.0f, -19));
  // A product large enough to shift the window in the second step only.
  std::vector<float> mixed(32, std::ldexp(1.0f, -24));
  mixed[16] = 2.0f;
  // Step 1: 1 + 2^-20. Step 2: window under 2 keeps bits down to 2^-24:
  // 1 + 2^-20 + 2 + 15 * 2^-24, toward zero to 24 bits (2^-22 steps).
  float step1 = 1.0f + std::ldexp(1.0f, -20);
  double exact = double(step1) + 2.0 + 15 * std::ldexp(1.0, -24);
  float expected = static_cast<float>(std::trunc(exact * std::ldexp(1.0, 22)) *
                                      std::ldexp(1.0, -22));
  EXPECT_EQ(dot(mixed, b, 1.0f, kBf16), expected);
}

TEST(TensorCore, CancellationIsExactWithinTheWindow) {
  std::vector<float> a(16, 0.0f), b(16, 1.0f);
  a[0] = 1.0f;
  a[1] = -1.0f;
  a[2] = std::ldexp(1.0f, -20);
  EXPECT_EQ(dot(a, b, 0.0f, kBf16), std::ldexp(1.0f, -20));
}

TEST(TensorCore, InfinitiesAndNaNsPropagate) {
  std::vector<float> a(16, 1.0f), b(16, 1.0f);
  a[3] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(dot(a, b, 1.0f, kBf16), std::numeric_limits<float>::infinity());
  a[4] = -std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(dot(a, b, 1.0f, kBf16)));
  std::vector<float> c(16, 1.0f);
  EXPECT_TRUE(std::isnan(dot(c, b, std::nanf(""), kBf16)));
  // A NaN operand, and infinity times zero, anywhere in the step.
  std::vector<float> d(16, 1.0f);
  d[7] = std::nanf("");
  EXPECT_TRUE(std::isnan(dot(d, b, 1.0f, kBf16)));
  std::vector<float> e(16, 1.0f), zeros(16, 1.0f);
  e[9] = std::numeric_limits<float>::infinity();
  zeros[9] = 0.0f;
  EXPECT_TRUE(std::isnan(dot(e, zeros, 1.0f, kBf16)));
}

TEST(TensorCore, TinyTermsTakeTheExactPathToo) {
  // Products near f32's smallest normals: the window is below what an f32
  // scale can reach, and the result is still the truncated sum.
  std::vector<float> a(16, std::ldexp(1.0f, -70)), b(16, std::ldexp(1.0f, -60));
  EXPECT_EQ(dot(a, b, 0.0f, kBf16), std::ldexp(1.0f, -126));
}

TEST(TensorCore, Fp8StepsKeepThirteenBitsOverThirtyTwoProducts) {
  // The assumed FP8 model: 2^-14 below an accumulator of 1 is dropped,
  // 2^-13 kept; all 32 products of a k32 instruction are one step.
  AccumulationModel fp8 = accumulationModel(FloatFormat::E4M3);
  EXPECT_EQ(fp8.groupSize, 32u);
  std::vector<float> b(32, 1.0f);
  std::vector<float> dropped(32, std::ldexp(1.0f, -14));
  EXPECT_EQ(dot(dropped, b, 1.0f, fp8), 1.0f);
  std::vector<float> kept(32, std::ldexp(1.0f, -13));
  EXPECT_EQ(dot(kept, b, 1.0f, fp8), 1.0f + 32 * std::ldexp(1.0f, -13));
}

TEST(TensorCore, Tf32StepsAreOneK8Instruction) {
  AccumulationModel tf32 = accumulationModel(FloatFormat::TF32);
  EXPECT_EQ(tf32.groupSize, 8u);
  EXPECT_EQ(tf32.fractionBits, 25);
  // Sixteen products of 2^-24 in two steps of 8: each step keeps them
  // (2^-24 is inside the window of 1), 1 + 2^-20 in all.
  std::vector<float> a(16, std::ldexp(1.0f, -24)), b(16, 1.0f);
  EXPECT_EQ(dot(a, b, 1.0f, tf32), 1.0f + std::ldexp(1.0f, -20));
}

TEST(TensorCore, HalfAccumulatorsRoundTowardZero) {
  // 1 + 2^-11 + 2^-12 has no f16: toward zero, 1.
  std::vector<float> a(16, 0.0f), b(16, 1.0f);
  a[0] = std::ldexp(1.0f, -11);
  a[1] = std::ldexp(1.0f, -12);
  EXPECT_EQ(dot(a, b, 1.0f, accumulationModel(FloatFormat::F16), true), 1.0f);
}

TEST(TensorCore, RoundTowardZeroToFloat) {
  EXPECT_EQ(roundTowardZeroToFloat(1.0 + std::ldexp(1.0, -24)), 1.0f);
  EXPECT_EQ(roundTowardZeroToFloat(-1.0 - std::ldexp(1.0, -24)), -1.0f);
  EXPECT_EQ(roundTowardZeroToFloat(std::ldexp(1.5, -149)),
            std::ldexp(1.0f, -149));
  EXPECT_EQ(roundTowardZeroToFloat(std::ldexp(1.0, 128)),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(roundTowardZeroToFloat(0.0), 0.0f);
}

TEST(TensorCore, WideRowsAgreeWithOneOutputAtATime) {
  // The vectorized path over n outputs and the element-by-element path give
  // the same bits: 64 x 40 outputs of 48 products, some steps with tiny or
  // infinite terms.
  const uint32_t n = 40, k = 48;
  std::vector<float> a(64 * k), b(k * n), d(64 * n);
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return std::ldexp(float(int32_t(state >> 8) - (1 << 23)),
                      -23 - int(state % 7));
  };
  for (float &x : a)
    x = next();
  for (float &x : b)
    x = next();
  for (float &x : d)
    x = next();
  b[5 * n + 3] = std::ldexp(1.0f, -120);
  std::vector<float> wide = d;
  accumulate(a.data(), b.data(), wide.data(), n, k, kBf16, false);
  for (uint32_t m = 0; m < 64; ++m)
    for (uint32_t j = 0; j < n; ++j) {
      std::vector<float> column(k);
      for (uint32_t kk = 0; kk < k; ++kk)
        column[kk] = b[kk * n + j];
      std::vector<float> row(a.begin() + m * k, a.begin() + (m + 1) * k);
      EXPECT_EQ(dot(row, column, d[m * n + j], kBf16), wide[m * n + j])
          << "output (" << m << ", " << j << ")";
    }
}

} // namespace
