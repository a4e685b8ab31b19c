//===- ElementTypeTest.cpp - Element types and their conversions --------===//

#include "mosaic/Contracts/ElementType.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

using namespace mosaic;

namespace {

constexpr ElementType kAllTypes[] = {
    ElementType::F32,   ElementType::F16, ElementType::BF16,
    ElementType::F64,   ElementType::I8,  ElementType::I16,
    ElementType::I32,   ElementType::I64, ElementType::F8E4M3FN,
    ElementType::F8E5M2};

/// The bits `value` becomes in `type` (at most 8 bytes).
uint64_t encode(ElementType type, double value) {
  uint64_t bits = 0;
  fromDouble(type, value, &bits);
  return bits;
}

double decode(ElementType type, uint64_t bits) { return toDouble(type, &bits); }

TEST(ElementType, SpellingsAndSizes) {
  for (ElementType type : kAllTypes) {
    std::optional<ElementType> parsed = parseElementType(spelling(type));
    ASSERT_TRUE(parsed.has_value()) << spelling(type);
    EXPECT_EQ(*parsed, type);
  }
  EXPECT_EQ(byteSize(ElementType::BF16), 2u);
  EXPECT_EQ(byteSize(ElementType::F8E5M2), 1u);
  EXPECT_EQ(byteSize(ElementType::I64), 8u);
  EXPECT_FALSE(parseElementType("float32").has_value());
  EXPECT_FALSE(parseElementType("f8e4m3fn").has_value());
  EXPECT_TRUE(isFloat(ElementType::F8E4M3FN));
  EXPECT_FALSE(isFloat(ElementType::I8));
}

TEST(ElementType, BF16RoundsToNearestEven) {
  EXPECT_EQ(encode(ElementType::BF16, 1.0), 0x3F80u);
  EXPECT_EQ(encode(ElementType::BF16, -2.0), 0xC000u);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even 1.
  EXPECT_EQ(encode(ElementType::BF16, 1 + std::ldexp(1, -8)), 0x3F80u);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: even is 0x3F82.
  EXPECT_EQ(encode(ElementType::BF16, 1 + 3 * std::ldexp(1, -8)), 0x3F82u);
  EXPECT_EQ(encode(ElementType::BF16, 1e39), 0x7F80u); // Infinity.
  EXPECT_EQ(encode(ElementType::BF16, 3 * std::ldexp(1, -133)), 0x0003u);
  EXPECT_DOUBLE_EQ(decode(ElementType::BF16, 0x4049), 3.140625);
}

TEST(ElementType, F16Boundaries) {
  EXPECT_EQ(encode(ElementType::F16, 65504), 0x7BFFu); // Largest finite.
  EXPECT_EQ(encode(ElementType::F16, 65519), 0x7BFFu);
  EXPECT_EQ(encode(ElementType::F16, 65520), 0x7C00u); // Rounds to infinity.
  EXPECT_EQ(encode(ElementType::F16, std::ldexp(1, -24)), 0x0001u);
  EXPECT_EQ(encode(ElementType::F16, std::ldexp(1, -25)), 0x0000u); // Tie.
  EXPECT_EQ(encode(ElementType::F16, 3 * std::ldexp(1, -25)), 0x0002u);
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(encode(ElementType::F16, std::ldexp(1, -14) - std::ldexp(1, -26)),
            0x0400u);
  EXPECT_EQ(encode(ElementType::F16, -0.0), 0x8000u);
  EXPECT_TRUE(std::isnan(decode(ElementType::F16, 0x7E00)));
  EXPECT_EQ(decode(ElementType::F16, 0xFC00),
            -std::numeric_limits<double>::infinity());
}

TEST(ElementType, F8E4M3FNHasNoInfinity) {
  EXPECT_EQ(encode(ElementType::F8E4M3FN, 448), 0x7Eu); // Largest finite.
  EXPECT_EQ(encode(ElementType::F8E4M3FN, 464), 0x7Eu); // Tie to even.
  EXPECT_EQ(encode(ElementType::F8E4M3FN, 480), 0x7Fu); // NaN.
  EXPECT_EQ(encode(ElementType::F8E4M3FN, -1e9), 0xFFu);
  EXPECT_EQ(encode(ElementType::F8E4M3FN, std::ldexp(1, -9)), 0x01u);
  EXPECT_EQ(encode(ElementType::F8E4M3FN, 1.0), 0x38u);
  EXPECT_DOUBLE_EQ(decode(ElementType::F8E4M3FN, 0x78), 256); // Exponent 15.
  EXPECT_TRUE(std::isnan(decode(ElementType::F8E4M3FN, 0x7F)));
}

TEST(ElementType, F8E5M2IsIeeeLike) {
  EXPECT_EQ(encode(ElementType::F8E5M2, 57344), 0x7Bu);
  EXPECT_EQ(encode(ElementType::F8E5M2, 1e6), 0x7Cu);
  EXPECT_EQ(encode(ElementType::F8E5M2, 1.0), 0x3Cu);
  EXPECT_EQ(encode(ElementType::F8E5M2, std::ldexp(1, -16)), 0x01u);
  EXPECT_TRUE(std::isnan(decode(ElementType::F8E5M2, 0x7D)));
}

TEST(ElementType, IntegersRoundAndSaturate) {
  EXPECT_EQ(static_cast<int8_t>(encode(ElementType::I8, 300)), 127);
  EXPECT_EQ(static_cast<int8_t>(encode(ElementType::I8, -300)), -128);
  EXPECT_EQ(static_cast<int8_t>(encode(ElementType::I8, 2.5)), 2);
  EXPECT_EQ(static_cast<int8_t>(encode(ElementType::I8, 3.5)), 4);
  EXPECT_EQ(static_cast<int16_t>(encode(ElementType::I16, -7)), -7);
  EXPECT_EQ(encode(ElementType::I32, std::nan("")), 0u);
  EXPECT_EQ(static_cast<int64_t>(encode(ElementType::I64, 1e30)), INT64_MAX);
  EXPECT_DOUBLE_EQ(decode(ElementType::I32, 0xFFFFFFFF), -1);
}

/// Property: every bit pattern of each narrow float type that is not NaN
/// survives decode and encode unchanged; every NaN stays NaN.
TEST(ElementType, NarrowFloatsRoundTripEveryPattern) {
  for (ElementType type : {ElementType::F16, ElementType::BF16,
                           ElementType::F8E4M3FN, ElementType::F8E5M2}) {
    uint64_t patterns = uint64_t(1) << (8 * byteSize(type));
    for (uint64_t bits = 0; bits < patterns; ++bits) {
      double value = decode(type, bits);
      if (std::isnan(value)) {
        EXPECT_TRUE(std::isnan(decode(type, encode(type, value))));
        continue;
      }
      ASSERT_EQ(encode(type, value), bits)
          << spelling(type) << " pattern " << bits << " = " << value;
    }
  }
}

/// Property: the poison byte pattern (all ones) reads as NaN in every float
/// type, so unwritten outputs never pass a comparison.
TEST(ElementType, AllOnesIsNanInEveryFloatType) {
  for (ElementType type : kAllTypes) {
    uint64_t ones = ~uint64_t(0);
    if (isFloat(type))
      EXPECT_TRUE(std::isnan(toDouble(type, &ones))) << spelling(type);
    else
      EXPECT_EQ(toDouble(type, &ones), -1) << spelling(type);
  }
}

} // namespace

namespace {

TEST(ElementType, TableIsIndexedByTheEnumAndNamesBufferTypesOnly) {
  size_t rows = 0;
  for (const ElementTypeInfo *row = elementTypesBegin();
       row != elementTypesEnd(); ++row, ++rows) {
    EXPECT_EQ(static_cast<size_t>(row->type), rows) << row->spelling;
    EXPECT_EQ(&info(row->type), row);
    // A manifest may name exactly the buffer types.
    EXPECT_EQ(parseElementType(row->spelling).has_value(), row->buffer)
        << row->spelling;
    if (row->buffer)
      EXPECT_NE(std::string(elementTypeSpellings()).find(row->spelling),
                std::string::npos)
          << row->spelling;
  }
  EXPECT_EQ(rows, static_cast<size_t>(ElementType::Barrier) + 1);
  EXPECT_EQ(byteSize(ElementType::I1), 1u);
  EXPECT_EQ(info(ElementType::Index).kind, ElementKind::Index);
  EXPECT_FALSE(parseElementType("index").has_value());
  EXPECT_FALSE(parseElementType("barrier").has_value());
}

} // namespace
