//===- TensorCore.cpp - How Hopper's tensor cores add -------------------===//

#include "mosaic/Emulator/TensorCore.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace mosaic::emulator {

AccumulationModel accumulationModel(FloatFormat operand) {
  switch (operand) {
  case FloatFormat::F16:
  case FloatFormat::BF16:
    // Fitted: every element of the recorded warp-specialized GEMM (two
    // seeds, 2 x 262144 bf16 outputs) bit for bit; f16 shares the datapath.
    return {16, 25, operand == FloatFormat::BF16};
  case FloatFormat::TF32:
    // One k8 instruction per step, with the half-precision alignment.
    return {8, 25, false};
  case FloatFormat::E4M3:
  case FloatFormat::E5M2:
    // The FP8 accumulator keeps about 14 bits (DeepSeek-V3's measurement
    // on Hopper): 13 below the leading bit, one k32 instruction per step.
    return {32, 13, false};
  case FloatFormat::F32:
    break;
  }
  return {};
}

float roundTowardZeroToFloat(double value) {
  if (!std::isfinite(value) || value == 0)
    return static_cast<float>(value);
  double magnitude = std::fabs(value);
  if (magnitude >= 0x1p128)
    return std::copysign(std::numeric_limits<float>::infinity(),
                         static_cast<float>(value));
  if (magnitude >= 0x1p-126) {
    // 24 significant bits: clear the 29 more a double has.
    return static_cast<float>(
        __builtin_bit_cast(double, __builtin_bit_cast(uint64_t, value) &
                                       ~((uint64_t(1) << 29) - 1)));
  }
  // Subnormal f32: whole multiples of 2^-149, toward zero.
  return static_cast<float>(std::trunc(value * 0x1p149) * 0x1p-149);
}

namespace {

/// `stepRow` for a row whose step has an infinite, NaN or very small term,
/// or an f16 accumulator: element by element, the products in double (in
/// f32 a very small one may be inexact).
void slowStepRow(const float *aRow, const float *b, float *row, uint32_t n,
                 uint32_t k0, uint32_t k1, int fractionBits,
                 bool halfAccumulator) {
  for (uint32_t j = 0; j < n; ++j) {
    auto product = [&](uint32_t kk) {
      return double(aRow[kk]) * double(b[size_t(kk) * n + j]);
    };
    double exact = row[j];
    double largest = std::fabs(exact);
    for (uint32_t kk = k0; kk < k1; ++kk) {
      double magnitude = std::fabs(product(kk));
      if (magnitude > largest || std::isnan(magnitude))
        largest = magnitude;
    }
    if (!(largest <= std::numeric_limits<double>::max())) {
      // IEEE addition of the terms gives the infinity or NaN.
      for (uint32_t kk = k0; kk < k1; ++kk)
        exact += product(kk);
    } else if (largest != 0) {
      double scale = std::ldexp(1.0, fractionBits - std::ilogb(largest));
      double total = std::trunc(exact * scale);
      for (uint32_t kk = k0; kk < k1; ++kk)
        total += std::trunc(product(kk) * scale);
      exact = total / scale;
    }
    row[j] = halfAccumulator ? static_cast<float>(decodeFloat(
                                   encodeFloat(exact, FloatFormat::F16,
                                               RoundingMode::TowardZero),
                                   FloatFormat::F16))
                             : roundTowardZeroToFloat(exact);
  }
}

/// One step of `accumulate` for one row: the products a[kk] * b[kk][j] for
/// kk in [k0, k1) added to row[j]. Compiled twice (AVX2 and baseline), as it
/// is the emulator's hottest loop. The products of these formats are exact
/// in f32 and, scaled to keep `fractionBits` below the leading bit, below
/// 2^(fractionBits + 1); their truncations add exactly in int32
/// (accumulationModel's parameters keep the sum below 2^31). Every
/// operation is exact, so both versions compute the same bits.
__attribute__((always_inline)) inline void
stepRow(const float *__restrict aRow, const float *__restrict b,
        float *__restrict row, uint32_t n, uint32_t k0, uint32_t k1,
        int fractionBits, bool halfAccumulator, uint32_t *__restrict largest,
        float *__restrict scale, int32_t *__restrict sum) {
  const uint32_t terms = k1 - k0;
  // The largest magnitude as its bit pattern: for magnitudes the patterns
  // order as the values do, NaNs above infinity, so an integer max keeps a
  // NaN (std::max on floats would drop it) and stays vectorized.
  constexpr uint32_t kMagnitude = 0x7fffffffu;
  for (uint32_t j = 0; j < n; ++j)
    largest[j] = __builtin_bit_cast(uint32_t, row[j]) & kMagnitude;
  for (uint32_t t = 0; t < terms; ++t) {
    float x = aRow[k0 + t];
    const float *brow = b + size_t(k0 + t) * n;
    for (uint32_t j = 0; j < n; ++j)
      largest[j] = std::max(
          largest[j], __builtin_bit_cast(uint32_t, x * brow[j]) & kMagnitude);
  }
  // The scale 2^(fractionBits - leading exponent) from the exponent field
  // (1 for an all-zero step). Infinities, NaNs and terms so small that the
  // scale leaves f32 take the slow path; counted, not or-ed: a bool
  // reduction keeps the loop scalar.
  const int32_t top = 254 + fractionBits;
  uint32_t unusual = 0;
  for (uint32_t j = 0; j < n; ++j) {
    int32_t exponent = int32_t(largest[j] >> 23);
    unusual += (exponent == 0xff) |
               ((exponent != 0) & (exponent <= fractionBits)) |
               ((exponent == 0) & (largest[j] != 0));
    scale[j] =
        exponent ? __builtin_bit_cast(float, (top - exponent) << 23) : 1.0f;
  }
  if (unusual || halfAccumulator) {
    slowStepRow(aRow, b, row, n, k0, k1, fractionBits, halfAccumulator);
    return;
  }
  for (uint32_t j = 0; j < n; ++j)
    sum[j] = int32_t(row[j] * scale[j]);
  // The products again: cheaper than storing and reloading them.
  for (uint32_t t = 0; t < terms; ++t) {
    float x = aRow[k0 + t];
    const float *brow = b + size_t(k0 + t) * n;
    for (uint32_t j = 0; j < n; ++j)
      sum[j] += int32_t(x * brow[j] * scale[j]);
  }
  // Toward zero to f32 by clearing the 29 bits a double has beyond an
  // f32's 24, where the result is a normal f32 (or zero); the rest again.
  uint32_t irregular = 0;
  for (uint32_t j = 0; j < n; ++j) {
    double exact = double(sum[j]) / double(scale[j]);
    double magnitude = std::fabs(exact);
    irregular +=
        (magnitude != 0) & !((magnitude >= 0x1p-126) & (magnitude < 0x1p128));
    row[j] = float(__builtin_bit_cast(
        double, __builtin_bit_cast(uint64_t, exact) & ~((1ull << 29) - 1)));
  }
  if (irregular)
    for (uint32_t j = 0; j < n; ++j)
      row[j] = roundTowardZeroToFloat(double(sum[j]) / double(scale[j]));
}

__attribute__((target("avx2"))) void
stepRowAvx2(const float *aRow, const float *b, float *row, uint32_t n,
            uint32_t k0, uint32_t k1, int fractionBits, bool halfAccumulator,
            uint32_t *largest, float *scale, int32_t *sum) {
  stepRow(aRow, b, row, n, k0, k1, fractionBits, halfAccumulator, largest,
          scale, sum);
}

void stepRowBaseline(const float *aRow, const float *b, float *row, uint32_t n,
                     uint32_t k0, uint32_t k1, int fractionBits,
                     bool halfAccumulator, uint32_t *largest, float *scale,
                     int32_t *sum) {
  stepRow(aRow, b, row, n, k0, k1, fractionBits, halfAccumulator, largest,
          scale, sum);
}

} // namespace

void accumulate(const float *a, const float *b, float *d, uint32_t n,
                uint32_t k, const AccumulationModel &model,
                bool halfAccumulator) {
  static const bool hasAvx2 = __builtin_cpu_supports("avx2");
  const uint32_t group = std::max<uint32_t>(1, model.groupSize);
  thread_local std::vector<uint32_t> largests;
  thread_local std::vector<float> scales;
  thread_local std::vector<int32_t> sums;
  largests.resize(n);
  scales.resize(n);
  sums.resize(n);
  uint32_t *largest = largests.data();
  float *scale = scales.data();
  int32_t *sum = sums.data();
  for (uint32_t m = 0; m < 64; ++m)
    for (uint32_t k0 = 0; k0 < k; k0 += group) {
      uint32_t k1 = std::min(k, k0 + group);
      (hasAvx2 ? stepRowAvx2 : stepRowBaseline)(
          a + size_t(m) * k, b, d + size_t(m) * n, n, k0, k1,
          model.fractionBits, halfAccumulator, largest, scale, sum);
    }
}

} // namespace mosaic::emulator
