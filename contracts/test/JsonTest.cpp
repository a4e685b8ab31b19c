//===- JsonTest.cpp - The strict JSON reader ----------------------------===//

#include "mosaic/Contracts/Json.h"

#include <gtest/gtest.h>

#include <string>

using namespace mosaic;

namespace {

JsonValue parseOk(const std::string &text) {
  Expected<JsonValue> value = parseJson(text);
  EXPECT_TRUE(value.ok()) << text << ": " << value.message();
  return value.ok() ? *value : JsonValue::null();
}

std::string parseError(const std::string &text) {
  Expected<JsonValue> value = parseJson(text);
  EXPECT_FALSE(value.ok()) << text << " parsed";
  return value.message();
}

TEST(Json, Scalars) {
  EXPECT_EQ(parseOk("null").kind(), JsonValue::Kind::Null);
  EXPECT_TRUE(parseOk(" true ").asBool());
  EXPECT_FALSE(parseOk("false").asBool());
  EXPECT_EQ(parseOk("\"hi\"").asString(), "hi");
}

TEST(Json, Numbers) {
  JsonValue big = parseOk("1099511627776");
  EXPECT_TRUE(big.isInteger());
  EXPECT_EQ(big.asInteger(), int64_t(1) << 40);
  EXPECT_EQ(parseOk("-0").asInteger(), 0);
  EXPECT_EQ(parseOk("-9223372036854775808").asInteger(), INT64_MIN);
  JsonValue tooBig = parseOk("9223372036854775808");
  EXPECT_FALSE(tooBig.isInteger());
  EXPECT_DOUBLE_EQ(tooBig.asNumber(), 9223372036854775808.0);
  EXPECT_FALSE(parseOk("16.0").isInteger());
  EXPECT_DOUBLE_EQ(parseOk("1.5e3").asNumber(), 1500);
  EXPECT_DOUBLE_EQ(parseOk("-2E-2").asNumber(), -0.02);
}

TEST(Json, Containers) {
  JsonValue value =
      parseOk("{\"a\": [1, 2, {\"b\": []}], \"c\": {}, \"d\": \"x\"}");
  ASSERT_EQ(value.kind(), JsonValue::Kind::Object);
  ASSERT_EQ(value.members().size(), 3u);
  EXPECT_EQ(value.members()[0].first, "a");
  EXPECT_EQ(value.members()[2].first, "d");
  const JsonValue *a = value.find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->elements().size(), 3u);
  EXPECT_EQ(a->elements()[1].asInteger(), 2);
  EXPECT_TRUE(a->elements()[2].find("b")->elements().empty());
  EXPECT_EQ(value.find("missing"), nullptr);
}

TEST(Json, StringEscapes) {
  EXPECT_EQ(parseOk(R"("\"\\\/\b\f\n\r\t")").asString(), "\"\\/\b\f\n\r\t");
  EXPECT_EQ(parseOk(R"("\u0041\u00e9\u20ac")").asString(),
            "A\xC3\xA9\xE2\x82\xAC");
  // U+1F600 as a surrogate pair and as raw UTF-8.
  EXPECT_EQ(parseOk(R"("\ud83d\ude00")").asString(), "\xF0\x9F\x98\x80");
  EXPECT_EQ(parseOk("\"\xF0\x9F\x98\x80\"").asString(), "\xF0\x9F\x98\x80");
}

TEST(Json, ErrorsNameLineAndColumn) {
  EXPECT_EQ(parseError("{\n  \"a\": 1,\n  \"a\": 2\n}"),
            "JSON line 3, column 3: duplicate key \"a\"");
  EXPECT_EQ(parseError("[1, 2,]"),
            "JSON line 1, column 7: unexpected character ']' where a value "
            "should start");
  EXPECT_EQ(parseError("{\"a\" 1}"),
            "JSON line 1, column 6: expected ':' after an object key");
  EXPECT_EQ(parseError("[1 2]"),
            "JSON line 1, column 4: expected ',' or ']' after an array "
            "element");
  EXPECT_EQ(parseError("{\"a\": 1 \"b\": 2}"),
            "JSON line 1, column 9: expected ',' or '}' after an object "
            "member");
  EXPECT_EQ(parseError("{} x"),
            "JSON line 1, column 4: unexpected text after the JSON value");
  EXPECT_EQ(parseError("\xEF\xBB\xBF{}"),
            "JSON line 1, column 1: unexpected byte 0xEF where a value should "
            "start");
  EXPECT_EQ(parseError(""),
            "JSON line 1, column 1: expected a value, got the end of the text");
}

TEST(Json, RejectsWhatRfc8259Rejects) {
  for (const char *text : {"01",
                           "-",
                           "1.",
                           ".5",
                           "1e",
                           "+1",
                           "NaN",
                           "Infinity",
                           "-Infinity",
                           "1e400",
                           "'a'",
                           "// c\n1",
                           "[1] /* c */",
                           "{a: 1}",
                           "[",
                           "{",
                           "{\"a\": }",
                           "tru",
                           "nul",
                           "\"abc",
                           "\"\\x\"",
                           "\"\\u12\"",
                           "\"\\ud800\"",
                           "\"\\udc00\"",
                           "\"\\ud800\\u0041\"",
                           "\"a\tb\"",
                           "\"\x80\"",
                           "\"\xC0\xAF\"",
                           "\"\xED\xA0\x80\"",
                           "\"\xF5\x80\x80\x80\"",
                           "\"\xE2\x82\""})
    parseError(text);
}

TEST(Json, BoundsNesting) {
  std::string deep(256, '[');
  deep += std::string(256, ']');
  parseOk(deep);
  std::string tooDeep(300, '[');
  tooDeep += std::string(300, ']');
  EXPECT_NE(parseError(tooDeep).find("nesting deeper than 256 levels"),
            std::string::npos);
}

} // namespace
