//===- Check.h - Inputs, poisoned outputs and error norms -----*- C++ -*-===//
//
// The host side of checking a kernel the way docs/RationaleRuntime.md
// describes: fresh random inputs (never zeros), outputs poisoned before the
// run so unwritten elements show, and ||out - ref|| / ||ref|| against a
// float64 reference.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_RUN_CHECK_H
#define MOSAIC_RUN_CHECK_H

#include "mosaic/Contracts/Manifest.h"

#include <cstdint>
#include <random>
#include <vector>

namespace mosaic::run {

using mosaic::BufferParameter;

/// Outputs are filled with this byte before a run. Every byte 0xFF is a NaN
/// in each floating-point type the manifest allows (and -1 in each integer
/// type), so an element still holding it was not written.
constexpr uint8_t kPoisonByte = 0xFF;

/// A host copy of one buffer: the bytes as the device stores them and the
/// exact value of each element.
struct HostBuffer {
  BufferParameter parameter;
  std::vector<uint8_t> bytes;
  std::vector<double> values;
};

/// The random values of one buffer, generator version 1: mt19937_64 draws,
/// turned into standard normal values by Marsaglia's polar method and into
/// integers by Lemire's multiply-shift, exactly as libstdc++ 12's
/// std::normal_distribution and std::uniform_int_distribution compute them
/// (the test checks that they agree), so that the outputs recorded on
/// hardware for a seed (test/HardwareOutputs) keep their meaning whichever
/// standard library builds mosaic-run. A new version must keep this one
/// reachable.
class InputGenerator {
public:
  explicit InputGenerator(std::mt19937_64 &rng) : rng(rng) {}
  /// One standard normal value.
  double normal();
  /// An integer uniform in [low, high].
  int64_t uniform(int64_t low, int64_t high);

private:
  /// A double uniform in [0, 1) from one 64-bit draw.
  double canonical();

  std::mt19937_64 &rng;
  /// The polar method makes two values at a time.
  bool hasSaved = false;
  double saved = 0;
};

/// Fresh random contents: floats drawn from the standard normal distribution
/// and rounded to the element type, integers uniform in [-64, 64]; one
/// InputGenerator per buffer.
HostBuffer randomBuffer(const BufferParameter &parameter, std::mt19937_64 &rng);

/// Wraps bytes read back from the device, decoding every element.
HostBuffer decodeBuffer(const BufferParameter &parameter,
                        std::vector<uint8_t> bytes);

/// Elements of a buffer with some property.
struct Found {
  uint64_t count = 0;
  uint64_t first = 0; // Flat index of the first one, if any.
};

/// The elements whose bytes all still hold `kPoisonByte`.
Found findUnwritten(const HostBuffer &buffer);

/// The elements that are NaN or infinite, not counting unwritten ones.
Found findNonFinite(const HostBuffer &buffer);

struct Comparison {
  double relativeError = 0; // ||out - ref||_2 / ||ref||_2.
  uint64_t compared = 0;
  /// Pairs left out because the output or the reference is not finite.
  uint64_t skipped = 0;
};

/// Compares `output` at the flat `indices` with `reference` (one value per
/// index), leaving out pairs with a NaN or infinity, which findNonFinite
/// reports.
Comparison compare(const std::vector<double> &output,
                   const std::vector<uint64_t> &indices,
                   const std::vector<double> &reference);

/// Two outputs' comparisons as one: the larger relative error, and the
/// pairs of both.
Comparison combine(const Comparison &a, const Comparison &b);

/// `count` distinct flat indices of a buffer of `size` elements in increasing
/// order, drawn at random; every index when `count` is 0 or at least `size`.
std::vector<uint64_t> sampleIndices(uint64_t size, uint64_t count,
                                    std::mt19937_64 &rng);

} // namespace mosaic::run

#endif // MOSAIC_RUN_CHECK_H
