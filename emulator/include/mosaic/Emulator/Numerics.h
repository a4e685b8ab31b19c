//===- Numerics.h - Floating-point formats and rounding -------*- C++ -*-===//
//
// Conversions between double and the formats PTX names, with each rounding
// mode `cvt` accepts, exactly (every source value is first held exactly in
// a double). Formats and their special values follow the PTX ISA
// ("Alternate floating-point data formats"): e4m3 has no infinity and one
// NaN pattern per sign (S.1111.111), maximum 448; e5m2 follows IEEE.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_NUMERICS_H
#define MOSAIC_EMULATOR_NUMERICS_H

#include <cstdint>
#include <cstring>

namespace mosaic::emulator {

enum class FloatFormat : uint8_t { F16, BF16, TF32, E4M3, E5M2, F32 };

enum class RoundingMode : uint8_t {
  NearestEven, // .rn
  TowardZero,  // .rz
  Down,        // .rm
  Up,          // .rp
  NearestAway, // .rna
};

struct ConvertFlags {
  /// .satfinite: overflow gives the largest finite value (NaN stays NaN).
  bool satfinite = false;
  /// .relu: negative results (and NaN) become +0 (canonical NaN for NaN).
  bool relu = false;
  /// .sat on a float destination: clamp to [0, 1], NaN to 0.
  bool saturate = false;
};

/// The bits of `value` in `format` (low bits of the result; TF32 as the
/// 32-bit pattern with the 13 low mantissa bits zero).
uint32_t encodeFloat(double value, FloatFormat format, RoundingMode rounding,
                     ConvertFlags flags = {});
/// The exact value of `bits` in `format`.
double decodeFloat(uint32_t bits, FloatFormat format);

inline float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}
inline uint32_t floatToBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}
inline double bitsToDouble(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, 8);
  return value;
}
inline uint64_t doubleToBits(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  return bits;
}

/// Flushes an f32 subnormal to zero of the same sign (.ftz).
float flushSubnormal(float value);

} // namespace mosaic::emulator

#endif // MOSAIC_EMULATOR_NUMERICS_H
