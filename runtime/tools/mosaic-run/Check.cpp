//===- Check.cpp - Inputs, poisoned outputs and error norms -------------===//

#include "Check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

namespace mosaic::run {

using mosaic::byteSize;
using mosaic::fromDouble;
using mosaic::isFloat;
using mosaic::toDouble;

double InputGenerator::canonical() {
  // One draw covers a double's 53 bits: the draw over 2^64, rounded to
  // nearest, and kept below 1.
  double value = static_cast<double>(rng()) / 18446744073709551616.0;
  return value >= 1.0 ? std::nextafter(1.0, 0.0) : value;
}

double InputGenerator::normal() {
  if (hasSaved) {
    hasSaved = false;
    return saved;
  }
  double x, y, r2;
  do {
    x = 2.0 * canonical() - 1.0;
    y = 2.0 * canonical() - 1.0;
    r2 = x * x + y * y;
  } while (r2 > 1.0 || r2 == 0.0);
  double scale = std::sqrt(-2.0 * std::log(r2) / r2);
  saved = x * scale;
  hasSaved = true;
  return y * scale;
}

int64_t InputGenerator::uniform(int64_t low, int64_t high) {
  uint64_t range = static_cast<uint64_t>(high - low) + 1;
  unsigned __int128 product = static_cast<unsigned __int128>(rng()) * range;
  uint64_t fraction = static_cast<uint64_t>(product);
  if (fraction < range) {
    // Rejecting the draws that would favour some results.
    uint64_t threshold = -range % range;
    while (fraction < threshold) {
      product = static_cast<unsigned __int128>(rng()) * range;
      fraction = static_cast<uint64_t>(product);
    }
  }
  return low + static_cast<int64_t>(product >> 64);
}

HostBuffer randomBuffer(const BufferParameter &parameter,
                        std::mt19937_64 &rng) {
  HostBuffer buffer;
  buffer.parameter = parameter;
  uint64_t count = parameter.elementCount();
  size_t size = byteSize(parameter.elementType);
  buffer.bytes.resize(count * size);
  buffer.values.resize(count);
  InputGenerator generator(rng);
  bool floating = isFloat(parameter.elementType);
  for (uint64_t i = 0; i < count; ++i) {
    double value = floating ? generator.normal()
                            : static_cast<double>(generator.uniform(-64, 64));
    uint8_t *element = buffer.bytes.data() + i * size;
    fromDouble(parameter.elementType, value, element);
    buffer.values[i] = toDouble(parameter.elementType, element);
  }
  return buffer;
}

HostBuffer decodeBuffer(const BufferParameter &parameter,
                        std::vector<uint8_t> bytes) {
  HostBuffer buffer;
  buffer.parameter = parameter;
  buffer.bytes = std::move(bytes);
  size_t size = byteSize(parameter.elementType);
  uint64_t count = buffer.bytes.size() / size;
  buffer.values.resize(count);
  for (uint64_t i = 0; i < count; ++i)
    buffer.values[i] =
        toDouble(parameter.elementType, buffer.bytes.data() + i * size);
  return buffer;
}

namespace {

bool isPoison(const HostBuffer &buffer, uint64_t index) {
  size_t size = byteSize(buffer.parameter.elementType);
  const uint8_t *element = buffer.bytes.data() + index * size;
  return std::all_of(element, element + size,
                     [](uint8_t byte) { return byte == kPoisonByte; });
}

template <typename Predicate>
Found find(const HostBuffer &buffer, Predicate predicate) {
  Found found;
  for (uint64_t i = 0; i < buffer.values.size(); ++i)
    if (predicate(i) && found.count++ == 0)
      found.first = i;
  return found;
}

} // namespace

Found findUnwritten(const HostBuffer &buffer) {
  return find(buffer, [&](uint64_t i) { return isPoison(buffer, i); });
}

Found findNonFinite(const HostBuffer &buffer) {
  return find(buffer, [&](uint64_t i) {
    return !std::isfinite(buffer.values[i]) && !isPoison(buffer, i);
  });
}

Comparison compare(const std::vector<double> &output,
                   const std::vector<uint64_t> &indices,
                   const std::vector<double> &reference) {
  Comparison result;
  double difference = 0, norm = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    double out = output[indices[i]];
    double ref = reference[i];
    if (!std::isfinite(out) || !std::isfinite(ref)) {
      ++result.skipped;
      continue;
    }
    difference += (out - ref) * (out - ref);
    norm += ref * ref;
  }
  result.compared = indices.size();
  if (norm > 0)
    result.relativeError = std::sqrt(difference / norm);
  else
    result.relativeError =
        difference > 0 ? std::numeric_limits<double>::infinity() : 0;
  return result;
}

Comparison combine(const Comparison &a, const Comparison &b) {
  Comparison both;
  both.relativeError = std::max(a.relativeError, b.relativeError);
  both.compared = a.compared + b.compared;
  both.skipped = a.skipped + b.skipped;
  return both;
}

std::vector<uint64_t> sampleIndices(uint64_t size, uint64_t count,
                                    std::mt19937_64 &rng) {
  std::vector<uint64_t> indices;
  if (count == 0 || count >= size) {
    indices.resize(size);
    for (uint64_t i = 0; i < size; ++i)
      indices[i] = i;
    return indices;
  }
  std::uniform_int_distribution<uint64_t> pick(0, size - 1);
  std::unordered_set<uint64_t> chosen;
  while (chosen.size() < count)
    chosen.insert(pick(rng));
  indices.assign(chosen.begin(), chosen.end());
  std::sort(indices.begin(), indices.end());
  return indices;
}

} // namespace mosaic::run
