//===- ElementType.cpp - The element types of kernels -------------------===//

#include "mosaic/Contracts/ElementType.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>

namespace mosaic {

namespace {

constexpr ElementTypeInfo kTypes[] = {
    {ElementType::F32, "f32", 32, ElementKind::Float, true, "float32"},
    {ElementType::F16, "f16", 16, ElementKind::Float, true, "float16"},
    {ElementType::BF16, "bf16", 16, ElementKind::Float, true, "bfloat16"},
    {ElementType::F64, "f64", 64, ElementKind::Float, true, "float64"},
    {ElementType::I8, "i8", 8, ElementKind::Integer, true, "int8"},
    {ElementType::I16, "i16", 16, ElementKind::Integer, true, "int16"},
    {ElementType::I32, "i32", 32, ElementKind::Integer, true, "int32"},
    {ElementType::I64, "i64", 64, ElementKind::Integer, true, "int64"},
    // fp8 (OCP): e4m3 without infinities (maximum 448), and e5m2.
    {ElementType::F8E4M3FN, "f8E4M3FN", 8, ElementKind::Float, true,
     "float8_e4m3fn"},
    {ElementType::F8E5M2, "f8E5M2", 8, ElementKind::Float, true, "float8_e5m2"},
    {ElementType::I1, "i1", 1, ElementKind::Integer, false, "bool"},
    {ElementType::Index, "index", 64, ElementKind::Index, false, nullptr},
    {ElementType::Barrier, "barrier", 64, ElementKind::Barrier, false, nullptr},
};

constexpr bool inEnumOrder() {
  for (size_t i = 0; i < std::size(kTypes); ++i)
    if (static_cast<size_t>(kTypes[i].type) != i)
      return false;
  return true;
}
static_assert(inEnumOrder(), "kTypes is indexed by ElementType");

/// A floating-point format narrower than double: `exponentBits` and
/// `mantissaBits` wide, IEEE-style unless `finiteOnly` (f8E4M3FN: no
/// infinity, and only the all-ones pattern is NaN).
struct SmallFloat {
  int exponentBits;
  int mantissaBits;
  bool finiteOnly;

  int bias() const { return (1 << (exponentBits - 1)) - 1; }
  uint32_t maxExponentField() const { return (1u << exponentBits) - 1; }
  uint32_t mantissaMask() const { return (1u << mantissaBits) - 1; }
  uint32_t signBit() const { return 1u << (exponentBits + mantissaBits); }

  bool isNanPattern(uint32_t exponent, uint32_t mantissa) const {
    if (exponent != maxExponentField())
      return false;
    return finiteOnly ? mantissa == mantissaMask() : mantissa != 0;
  }

  double decode(uint32_t bits) const {
    uint32_t mantissa = bits & mantissaMask();
    uint32_t exponent = (bits >> mantissaBits) & maxExponentField();
    double sign = (bits & signBit()) ? -1.0 : 1.0;
    if (isNanPattern(exponent, mantissa))
      return std::numeric_limits<double>::quiet_NaN();
    if (!finiteOnly && exponent == maxExponentField())
      return sign * std::numeric_limits<double>::infinity();
    if (exponent == 0)
      return sign * std::ldexp(mantissa, 1 - bias() - mantissaBits);
    return sign *
           std::ldexp((1u << mantissaBits) + mantissa,
                      static_cast<int>(exponent) - bias() - mantissaBits);
  }

  uint32_t encode(double value) const {
    uint32_t nan = finiteOnly ? signBit() - 1
                              : (maxExponentField() << mantissaBits) |
                                    (1u << (mantissaBits - 1));
    if (std::isnan(value))
      return nan;
    uint32_t sign = std::signbit(value) ? signBit() : 0;
    uint32_t overflow =
        finiteOnly ? sign | nan : sign | (maxExponentField() << mantissaBits);
    double magnitude = std::fabs(value);
    if (std::isinf(magnitude))
      return overflow;
    if (magnitude == 0)
      return sign;
    int exponent;
    std::frexp(magnitude, &exponent);
    --exponent; // magnitude = 1.f * 2^exponent
    int minExponent = 1 - bias();
    // Rounding the magnitude to a multiple of the format's spacing at its
    // exponent (below the normal range, the subnormal spacing) gives the
    // encoding's low bits directly: a carry into the exponent field is the
    // next binade, as in the bit pattern.
    int spacingExponent = std::max(exponent, minExponent) - mantissaBits;
    double units = std::nearbyint(std::ldexp(magnitude, -spacingExponent));
    if (exponent < minExponent)
      return sign | static_cast<uint32_t>(units);
    if (units >= std::ldexp(1.0, mantissaBits + 1)) {
      ++exponent;
      units /= 2;
    }
    uint32_t exponentField = static_cast<uint32_t>(exponent + bias());
    uint32_t mantissa = static_cast<uint32_t>(units) & mantissaMask();
    bool beyondFinite = finiteOnly ? exponentField > maxExponentField() ||
                                         isNanPattern(exponentField, mantissa)
                                   : exponentField >= maxExponentField();
    if (beyondFinite)
      return overflow;
    return sign | (exponentField << mantissaBits) | mantissa;
  }
};

constexpr SmallFloat kF16{5, 10, false};
constexpr SmallFloat kBF16{8, 7, false};
constexpr SmallFloat kF8E4M3FN{4, 3, true};
constexpr SmallFloat kF8E5M2{5, 2, false};

template <typename T> T load(const void *bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

template <typename T> void store(T value, void *bytes) {
  std::memcpy(bytes, &value, sizeof(T));
}

template <typename Int> void storeInteger(double value, void *bytes) {
  double rounded = std::isnan(value) ? 0 : std::nearbyint(value);
  double lowest = static_cast<double>(std::numeric_limits<Int>::lowest());
  // The largest int64_t is not a double; clamp below 2^63 for it.
  double highest = std::nextafter(
      static_cast<double>(std::numeric_limits<Int>::max()) + 1.0, 0.0);
  Int result;
  if (rounded <= lowest)
    result = std::numeric_limits<Int>::lowest();
  else if (rounded >= highest)
    result = std::numeric_limits<Int>::max();
  else
    result = static_cast<Int>(rounded);
  store(result, bytes);
}

} // namespace

const ElementTypeInfo *elementTypesBegin() { return std::begin(kTypes); }
const ElementTypeInfo *elementTypesEnd() { return std::end(kTypes); }

const ElementTypeInfo &info(ElementType type) {
  return kTypes[static_cast<size_t>(type)];
}

std::optional<ElementType> parseElementType(std::string_view name) {
  for (const ElementTypeInfo &entry : kTypes)
    if (entry.buffer && name == entry.spelling)
      return entry.type;
  return std::nullopt;
}

const char *elementTypeSpellings() {
  static const std::string spellings = [] {
    std::string text;
    for (const ElementTypeInfo &entry : kTypes)
      if (entry.buffer)
        text += (text.empty() ? "" : ", ") + std::string(entry.spelling);
    return text;
  }();
  return spellings.c_str();
}

const char *spelling(ElementType type) { return info(type).spelling; }
size_t byteSize(ElementType type) { return (info(type).bits + 7) / 8; }
bool isFloat(ElementType type) { return info(type).kind == ElementKind::Float; }

double toDouble(ElementType type, const void *bytes) {
  switch (type) {
  case ElementType::F32:
    return load<float>(bytes);
  case ElementType::F64:
    return load<double>(bytes);
  case ElementType::F16:
    return kF16.decode(load<uint16_t>(bytes));
  case ElementType::BF16:
    return kBF16.decode(load<uint16_t>(bytes));
  case ElementType::F8E4M3FN:
    return kF8E4M3FN.decode(load<uint8_t>(bytes));
  case ElementType::F8E5M2:
    return kF8E5M2.decode(load<uint8_t>(bytes));
  case ElementType::I8:
    return load<int8_t>(bytes);
  case ElementType::I16:
    return load<int16_t>(bytes);
  case ElementType::I32:
    return load<int32_t>(bytes);
  case ElementType::I64:
    return static_cast<double>(load<int64_t>(bytes));
  case ElementType::I1:
  case ElementType::Index:
  case ElementType::Barrier:
    break; // Not buffer types.
  }
  return 0;
}

void fromDouble(ElementType type, double value, void *bytes) {
  switch (type) {
  case ElementType::F32:
    return store(static_cast<float>(value), bytes);
  case ElementType::F64:
    return store(value, bytes);
  case ElementType::F16:
    return store(static_cast<uint16_t>(kF16.encode(value)), bytes);
  case ElementType::BF16:
    return store(static_cast<uint16_t>(kBF16.encode(value)), bytes);
  case ElementType::F8E4M3FN:
    return store(static_cast<uint8_t>(kF8E4M3FN.encode(value)), bytes);
  case ElementType::F8E5M2:
    return store(static_cast<uint8_t>(kF8E5M2.encode(value)), bytes);
  case ElementType::I8:
    return storeInteger<int8_t>(value, bytes);
  case ElementType::I16:
    return storeInteger<int16_t>(value, bytes);
  case ElementType::I32:
    return storeInteger<int32_t>(value, bytes);
  case ElementType::I64:
    return storeInteger<int64_t>(value, bytes);
  case ElementType::I1:
  case ElementType::Index:
  case ElementType::Barrier:
    break; // Not buffer types.
  }
}

} // namespace mosaic
