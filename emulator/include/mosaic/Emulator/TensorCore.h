//===- TensorCore.h - How Hopper's tensor cores add ------------*- C++ -*-===//
//
// The arithmetic of wgmma.mma_async's floating-point accumulation, in one
// place; docs/RationaleTensorCore.md derives it and says which parts were
// fitted to outputs an H200 wrote and which are assumed.
//
// Each group of `groupSize` consecutive products along K is added to the
// accumulator at once: every term (the exact products and the accumulator)
// is aligned to the largest one and truncated to `fractionBits` bits below
// that term's leading bit, the truncated terms are summed exactly, and the
// sum is rounded toward zero to the accumulator's format.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_TENSORCORE_H
#define MOSAIC_EMULATOR_TENSORCORE_H

#include "mosaic/Emulator/Numerics.h"

#include <cstdint>

namespace mosaic::emulator {

struct AccumulationModel {
  /// Products added to the accumulator in one step.
  uint32_t groupSize = 16;
  /// Bits kept below the leading bit of the largest term of a step.
  int fractionBits = 25;
  /// Whether recorded hardware outputs pin this model down (bf16 today).
  bool fitted = false;
};

/// The model for a wgmma whose A and B elements are `operand`s (F16, BF16,
/// TF32, E4M3 or E5M2; integer wgmmas are exact and need none).
AccumulationModel accumulationModel(FloatFormat operand);

/// d (64 x n, row-major) = a (64 x k) * b (k x n) + d, by `model`, each step
/// rounded toward zero to f32, or to f16 when `halfAccumulator`. The
/// elements of a, b and d are exact in float.
void accumulate(const float *a, const float *b, float *d, uint32_t n,
                uint32_t k, const AccumulationModel &model,
                bool halfAccumulator);

/// `value` rounded toward zero to f32 (infinity beyond the largest finite
/// value, as the tensor core's overflow is not known to saturate).
float roundTowardZeroToFloat(double value);

} // namespace mosaic::emulator

#endif // MOSAIC_EMULATOR_TENSORCORE_H
