//===- Json.h - A small, strict JSON reader and its writer ----*- C++ -*-===//
//
// Reads RFC 8259 JSON and nothing else: no comments, no trailing commas, no
// NaN or Infinity, no duplicate object keys, only valid UTF-8, and nothing
// but white space after the value. Errors name the line and column.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_CONTRACTS_JSON_H
#define MOSAIC_CONTRACTS_JSON_H

#include "mosaic/Contracts/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mosaic {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Member = std::pair<std::string, JsonValue>;

  static JsonValue null() { return JsonValue(Kind::Null); }
  static JsonValue boolean(bool value);
  /// A number written without fraction or exponent that fits in int64_t.
  static JsonValue integer(int64_t value);
  /// Any other number.
  static JsonValue number(double value);
  static JsonValue string(std::string value);
  static JsonValue array(std::vector<JsonValue> elements);
  static JsonValue object(std::vector<Member> members);

  Kind kind() const { return valueKind; }
  bool isInteger() const { return valueKind == Kind::Number && exactInteger; }

  bool asBool() const { return boolValue; }
  int64_t asInteger() const { return integerValue; }
  double asNumber() const { return numberValue; }
  const std::string &asString() const { return stringValue; }
  const std::vector<JsonValue> &elements() const { return arrayValue; }
  /// Members in the order they were written.
  const std::vector<Member> &members() const { return objectValue; }

  /// The member named `key` of an object, or null if there is none.
  const JsonValue *find(std::string_view key) const;

private:
  explicit JsonValue(Kind kind) : valueKind(kind) {}

  Kind valueKind;
  bool boolValue = false;
  bool exactInteger = false;
  int64_t integerValue = 0;
  double numberValue = 0;
  std::string stringValue;
  std::vector<JsonValue> arrayValue;
  std::vector<Member> objectValue;
};

/// "null", "a boolean", "a number", ...: for messages.
const char *describe(JsonValue::Kind kind);

/// Parses one JSON document. Nesting deeper than 256 levels is an error.
Expected<JsonValue> parseJson(std::string_view text);

/// `value` as JSON text: objects with their keys sorted, each member and
/// element on its own line indented by `indent` spaces per level (all on
/// one line when `indent` is 0), control characters escaped. With indent 2
/// this is the text llvm::json writes for the same value, so manifests read
/// the same whichever component wrote them.
std::string formatJson(const JsonValue &value, unsigned indent = 2);

} // namespace mosaic

#endif // MOSAIC_CONTRACTS_JSON_H
