//===- Numerics.cpp - Floating-point formats and rounding ---------------===//

#include "mosaic/Emulator/Numerics.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace mosaic::emulator {

namespace {

struct FormatInfo {
  int exponentBits;
  int mantissaBits;
  bool hasInfinity;
  /// Bits of the largest finite magnitude.
  uint32_t maxFinite;
  uint32_t nan;
  /// Where the encoded bits sit: TF32 keeps the f32 layout.
  int shift;
};

FormatInfo info(FloatFormat format) {
  switch (format) {
  case FloatFormat::F16:
    return {5, 10, true, 0x7bff, 0x7fff, 0};
  case FloatFormat::BF16:
    return {8, 7, true, 0x7f7f, 0x7fff, 0};
  case FloatFormat::TF32:
    return {8, 10, true, 0x3fbff, 0x3ffff, 13};
  case FloatFormat::E4M3:
    return {4, 3, false, 0x7e, 0x7f, 0};
  case FloatFormat::E5M2:
    return {5, 2, true, 0x7b, 0x7f, 0};
  case FloatFormat::F32:
    return {8, 23, true, 0x7f7fffff, 0x7fffffff, 0};
  }
  return {8, 23, true, 0x7f7fffff, 0x7fffffff, 0};
}

double roundToInteger(double q, RoundingMode rounding, bool negative) {
  switch (rounding) {
  case RoundingMode::NearestEven:
    return std::nearbyint(q); // the default environment rounds to even
  case RoundingMode::TowardZero:
    return std::trunc(q);
  case RoundingMode::Down:
    return negative ? std::ceil(q) : std::floor(q);
  case RoundingMode::Up:
    return negative ? std::floor(q) : std::ceil(q);
  case RoundingMode::NearestAway:
    return std::round(q);
  }
  return std::nearbyint(q);
}

} // namespace

float flushSubnormal(float value) {
  if (std::fpclassify(value) == FP_SUBNORMAL)
    return std::signbit(value) ? -0.0f : 0.0f;
  return value;
}

uint32_t encodeFloat(double value, FloatFormat format, RoundingMode rounding,
                     ConvertFlags flags) {
  FormatInfo f = info(format);
  const uint32_t signBit = 1u << (f.exponentBits + f.mantissaBits);
  auto place = [&](uint32_t bits) { return bits << f.shift; };
  if (std::isnan(value))
    return place(flags.relu ? f.nan : f.nan);
  if (flags.saturate)
    value = std::fmin(std::fmax(value, 0.0), 1.0);
  if (flags.relu && (value < 0 || (value == 0 && std::signbit(value))))
    value = 0.0;
  bool negative = std::signbit(value);
  uint32_t sign = negative ? signBit : 0;
  double magnitude = std::fabs(value);
  uint32_t infinity = ((1u << f.exponentBits) - 1) << f.mantissaBits;
  auto overflow = [&]() -> uint32_t {
    if (flags.satfinite || !f.hasInfinity)
      return place(flags.satfinite || format == FloatFormat::E4M3
                       ? (sign | f.maxFinite)
                       : f.nan);
    switch (rounding) {
    case RoundingMode::TowardZero:
      return place(sign | f.maxFinite);
    case RoundingMode::Down:
      return place(negative ? sign | infinity : f.maxFinite);
    case RoundingMode::Up:
      return place(negative ? sign | f.maxFinite : infinity);
    default:
      return place(sign | infinity);
    }
  };
  if (std::isinf(magnitude)) {
    if (flags.satfinite || !f.hasInfinity)
      return place(format == FloatFormat::E4M3 && !flags.satfinite
                       ? (sign | f.nan)
                       : (sign | f.maxFinite));
    return place(sign | infinity);
  }
  if (magnitude == 0)
    return place(sign);
  int bias = (1 << (f.exponentBits - 1)) - 1;
  int minExponent = 1 - bias;
  int exponent;
  std::frexp(magnitude, &exponent);
  --exponent; // magnitude in [2^exponent, 2^(exponent+1))
  if (exponent < minExponent)
    exponent = minExponent;
  double quantum = std::ldexp(1.0, exponent - f.mantissaBits);
  double q = roundToInteger(magnitude / quantum, rounding, negative);
  double rounded = q * quantum;
  double maxValue = decodeFloat(place(f.maxFinite), format);
  if (rounded > maxValue)
    return overflow();
  uint64_t mantissa = static_cast<uint64_t>(q);
  uint32_t bits;
  if (mantissa < (1ull << f.mantissaBits)) {
    bits = static_cast<uint32_t>(mantissa); // subnormal (or zero)
  } else {
    bits = static_cast<uint32_t>(
        (static_cast<uint64_t>(exponent + bias) << f.mantissaBits) +
        (mantissa - (1ull << f.mantissaBits)));
  }
  return place(sign | bits);
}

double decodeFloat(uint32_t bits, FloatFormat format) {
  FormatInfo f = info(format);
  bits >>= f.shift;
  uint32_t mantissaMask = (1u << f.mantissaBits) - 1;
  uint32_t exponentMask = (1u << f.exponentBits) - 1;
  bool negative = (bits >> (f.exponentBits + f.mantissaBits)) & 1;
  uint32_t exponent = (bits >> f.mantissaBits) & exponentMask;
  uint32_t mantissa = bits & mantissaMask;
  int bias = (1 << (f.exponentBits - 1)) - 1;
  double value;
  if (format == FloatFormat::E4M3 && exponent == exponentMask &&
      mantissa == mantissaMask) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else if (f.hasInfinity && exponent == exponentMask) {
    value = mantissa ? std::numeric_limits<double>::quiet_NaN()
                     : std::numeric_limits<double>::infinity();
  } else if (exponent == 0) {
    value = std::ldexp(static_cast<double>(mantissa),
                       1 - bias - f.mantissaBits);
  } else {
    value = std::ldexp(static_cast<double>(mantissa | (1u << f.mantissaBits)),
                       static_cast<int>(exponent) - bias - f.mantissaBits);
  }
  return negative ? -value : value;
}

} // namespace mosaic::emulator
