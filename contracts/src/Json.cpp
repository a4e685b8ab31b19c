//===- Json.cpp - A small, strict JSON reader ---------------------------===//

#include "mosaic/Contracts/Json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace mosaic {

JsonValue JsonValue::boolean(bool value) {
  JsonValue result(Kind::Bool);
  result.boolValue = value;
  return result;
}

JsonValue JsonValue::integer(int64_t value) {
  JsonValue result(Kind::Number);
  result.exactInteger = true;
  result.integerValue = value;
  result.numberValue = static_cast<double>(value);
  return result;
}

JsonValue JsonValue::number(double value) {
  JsonValue result(Kind::Number);
  result.numberValue = value;
  return result;
}

JsonValue JsonValue::string(std::string value) {
  JsonValue result(Kind::String);
  result.stringValue = std::move(value);
  return result;
}

JsonValue JsonValue::array(std::vector<JsonValue> elements) {
  JsonValue result(Kind::Array);
  result.arrayValue = std::move(elements);
  return result;
}

JsonValue JsonValue::object(std::vector<Member> members) {
  JsonValue result(Kind::Object);
  result.objectValue = std::move(members);
  return result;
}

const JsonValue *JsonValue::find(std::string_view key) const {
  for (const Member &member : objectValue)
    if (member.first == key)
      return &member.second;
  return nullptr;
}

const char *describe(JsonValue::Kind kind) {
  switch (kind) {
  case JsonValue::Kind::Null:
    return "null";
  case JsonValue::Kind::Bool:
    return "a boolean";
  case JsonValue::Kind::Number:
    return "a number";
  case JsonValue::Kind::String:
    return "a string";
  case JsonValue::Kind::Array:
    return "an array";
  case JsonValue::Kind::Object:
    return "an object";
  }
  return "a value";
}

namespace {

constexpr int kMaxDepth = 256;

bool isDigit(char c) { return c >= '0' && c <= '9'; }

int hexValue(char c) {
  if (isDigit(c))
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// "character 'x'", or "byte 0xEF" when it does not print.
std::string describeCharacter(char c) {
  if (c > 0x20 && c < 0x7F)
    return std::string("character '") + c + "'";
  char text[16];
  std::snprintf(text, sizeof(text), "byte 0x%02X",
                static_cast<unsigned char>(c));
  return text;
}

void appendUtf8(std::string &out, uint32_t codePoint) {
  if (codePoint < 0x80) {
    out += static_cast<char>(codePoint);
  } else if (codePoint < 0x800) {
    out += static_cast<char>(0xC0 | (codePoint >> 6));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  } else if (codePoint < 0x10000) {
    out += static_cast<char>(0xE0 | (codePoint >> 12));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (codePoint >> 18));
    out += static_cast<char>(0x80 | ((codePoint >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  }
}

class Parser {
public:
  explicit Parser(std::string_view text) : text(text) {}

  Expected<JsonValue> parseDocument() {
    skipWhiteSpace();
    Expected<JsonValue> value = parseValue(0);
    if (!value.ok())
      return value;
    skipWhiteSpace();
    if (pos != text.size())
      return fail("unexpected text after the JSON value");
    return value;
  }

private:
  Error fail(const std::string &what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return Error{"JSON line " + std::to_string(line) + ", column " +
                 std::to_string(column) + ": " + what};
  }

  bool atEnd() const { return pos >= text.size(); }
  char peek() const { return atEnd() ? '\0' : text[pos]; }

  void skipWhiteSpace() {
    while (!atEnd() && (text[pos] == ' ' || text[pos] == '\t' ||
                        text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  bool consumeWord(std::string_view word) {
    if (text.substr(pos, word.size()) != word)
      return false;
    pos += word.size();
    return true;
  }

  Expected<JsonValue> parseValue(int depth) {
    if (depth > kMaxDepth)
      return fail("nesting deeper than " + std::to_string(kMaxDepth) +
                  " levels");
    if (atEnd())
      return fail("expected a value, got the end of the text");
    char c = peek();
    if (c == '{')
      return parseObject(depth);
    if (c == '[')
      return parseArray(depth);
    if (c == '"') {
      Expected<std::string> s = parseString();
      MOSAIC_RETURN_IF_ERROR(s);
      return JsonValue::string(std::move(*s));
    }
    if (c == '-' || isDigit(c))
      return parseNumber();
    if (consumeWord("true"))
      return JsonValue::boolean(true);
    if (consumeWord("false"))
      return JsonValue::boolean(false);
    if (consumeWord("null"))
      return JsonValue::null();
    return fail("unexpected " + describeCharacter(c) +
                " where a value should start");
  }

  Expected<JsonValue> parseObject(int depth) {
    ++pos; // '{'
    std::vector<JsonValue::Member> members;
    skipWhiteSpace();
    if (peek() == '}') {
      ++pos;
      return JsonValue::object(std::move(members));
    }
    while (true) {
      skipWhiteSpace();
      if (peek() != '"')
        return fail("expected a string key in an object");
      size_t keyPos = pos;
      Expected<std::string> key = parseString();
      MOSAIC_RETURN_IF_ERROR(key);
      for (const JsonValue::Member &member : members) {
        if (member.first == *key) {
          pos = keyPos;
          return fail("duplicate key \"" + *key + "\"");
        }
      }
      skipWhiteSpace();
      if (peek() != ':')
        return fail("expected ':' after an object key");
      ++pos;
      skipWhiteSpace();
      Expected<JsonValue> value = parseValue(depth + 1);
      if (!value.ok())
        return value;
      members.emplace_back(std::move(*key), std::move(*value));
      skipWhiteSpace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      if (peek() == '}') {
        ++pos;
        return JsonValue::object(std::move(members));
      }
      return fail("expected ',' or '}' after an object member");
    }
  }

  Expected<JsonValue> parseArray(int depth) {
    ++pos; // '['
    std::vector<JsonValue> elements;
    skipWhiteSpace();
    if (peek() == ']') {
      ++pos;
      return JsonValue::array(std::move(elements));
    }
    while (true) {
      skipWhiteSpace();
      Expected<JsonValue> value = parseValue(depth + 1);
      if (!value.ok())
        return value;
      elements.push_back(std::move(*value));
      skipWhiteSpace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      if (peek() == ']') {
        ++pos;
        return JsonValue::array(std::move(elements));
      }
      return fail("expected ',' or ']' after an array element");
    }
  }

  Expected<uint32_t> parseHex4() {
    if (text.size() - pos < 4)
      return fail("\\u needs four hex digits");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      int digit = hexValue(text[pos + i]);
      if (digit < 0)
        return fail("\\u needs four hex digits");
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    pos += 4;
    return value;
  }

  /// Copies one UTF-8 encoded code point from the text into `out`, rejecting
  /// overlong forms, surrogates and code points above U+10FFFF.
  Status copyUtf8(std::string &out) {
    auto byte = [&](size_t i) {
      return static_cast<unsigned char>(text[pos + i]);
    };
    unsigned char lead = byte(0);
    size_t length;
    uint32_t codePoint;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
      codePoint = lead & 0x1F;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      codePoint = lead & 0x0F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      codePoint = lead & 0x07;
    } else {
      return fail("invalid UTF-8 in a string");
    }
    if (text.size() - pos < length)
      return fail("invalid UTF-8 in a string");
    for (size_t i = 1; i < length; ++i) {
      if ((byte(i) & 0xC0) != 0x80)
        return fail("invalid UTF-8 in a string");
      codePoint = (codePoint << 6) | (byte(i) & 0x3F);
    }
    static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (codePoint < kSmallest[length] || codePoint > 0x10FFFF ||
        (codePoint >= 0xD800 && codePoint <= 0xDFFF))
      return fail("invalid UTF-8 in a string");
    out.append(text.substr(pos, length));
    pos += length;
    return Status();
  }

  Expected<std::string> parseString() {
    ++pos; // '"'
    std::string out;
    while (true) {
      if (atEnd())
        return fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(text[pos]);
      if (c == '"') {
        ++pos;
        return out;
      }
      if (c < 0x20)
        return fail("control character in a string (write it escaped)");
      if (c >= 0x80) {
        MOSAIC_RETURN_IF_ERROR(copyUtf8(out));
        continue;
      }
      ++pos;
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (atEnd())
        return fail("unterminated string");
      char escape = text[pos++];
      switch (escape) {
      case '"':
      case '\\':
      case '/':
        out += escape;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        Expected<uint32_t> unit = parseHex4();
        MOSAIC_RETURN_IF_ERROR(unit);
        uint32_t codePoint = *unit;
        if (codePoint >= 0xDC00 && codePoint <= 0xDFFF)
          return fail("unpaired low surrogate in \\u escape");
        if (codePoint >= 0xD800 && codePoint <= 0xDBFF) {
          if (!consumeWord("\\u"))
            return fail("high surrogate not followed by a \\u low surrogate");
          Expected<uint32_t> low = parseHex4();
          MOSAIC_RETURN_IF_ERROR(low);
          if (*low < 0xDC00 || *low > 0xDFFF)
            return fail("high surrogate not followed by a \\u low surrogate");
          codePoint = 0x10000 + ((codePoint - 0xD800) << 10) + (*low - 0xDC00);
        }
        appendUtf8(out, codePoint);
        break;
      }
      default:
        --pos;
        return fail(std::string("invalid escape '\\") + escape + "'");
      }
    }
  }

  Expected<JsonValue> parseNumber() {
    size_t start = pos;
    if (peek() == '-')
      ++pos;
    if (peek() == '0') {
      ++pos;
      if (isDigit(peek()))
        return fail("leading zeros are not allowed in numbers");
    } else if (isDigit(peek())) {
      while (isDigit(peek()))
        ++pos;
    } else {
      return fail("expected a digit");
    }
    bool integral = true;
    if (peek() == '.') {
      integral = false;
      ++pos;
      if (!isDigit(peek()))
        return fail("expected a digit after the decimal point");
      while (isDigit(peek()))
        ++pos;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos;
      if (peek() == '+' || peek() == '-')
        ++pos;
      if (!isDigit(peek()))
        return fail("expected a digit in the exponent");
      while (isDigit(peek()))
        ++pos;
    }
    const char *first = text.data() + start;
    const char *last = text.data() + pos;
    if (integral) {
      int64_t value;
      auto [end, error] = std::from_chars(first, last, value);
      if (error == std::errc() && end == last)
        return JsonValue::integer(value);
    }
    double value;
    auto [end, error] = std::from_chars(first, last, value);
    if (error != std::errc() || end != last || !std::isfinite(value)) {
      pos = start;
      return fail("number out of range");
    }
    return JsonValue::number(value);
  }

  std::string_view text;
  size_t pos = 0;
};

} // namespace

Expected<JsonValue> parseJson(std::string_view text) {
  return Parser(text).parseDocument();
}

namespace {

void writeString(std::string &out, const std::string &text) {
  static const char kHex[] = "0123456789abcdef";
  out += '"';
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20) {
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out += '"';
}

void writeValue(std::string &out, const JsonValue &value, unsigned indent,
                unsigned depth) {
  auto newline = [&](unsigned level) {
    if (indent) {
      out += '\n';
      out.append(static_cast<size_t>(indent) * level, ' ');
    }
  };
  switch (value.kind()) {
  case JsonValue::Kind::Null:
    out += "null";
    return;
  case JsonValue::Kind::Bool:
    out += value.asBool() ? "true" : "false";
    return;
  case JsonValue::Kind::Number:
    if (value.isInteger()) {
      out += std::to_string(value.asInteger());
    } else {
      char text[32];
      std::snprintf(text, sizeof(text), "%.17g", value.asNumber());
      out += text;
    }
    return;
  case JsonValue::Kind::String:
    writeString(out, value.asString());
    return;
  case JsonValue::Kind::Array: {
    if (value.elements().empty()) {
      out += "[]";
      return;
    }
    out += '[';
    bool first = true;
    for (const JsonValue &element : value.elements()) {
      if (!first)
        out += ',';
      first = false;
      newline(depth + 1);
      writeValue(out, element, indent, depth + 1);
    }
    newline(depth);
    out += ']';
    return;
  }
  case JsonValue::Kind::Object: {
    if (value.members().empty()) {
      out += "{}";
      return;
    }
    std::vector<const JsonValue::Member *> sorted;
    for (const JsonValue::Member &member : value.members())
      sorted.push_back(&member);
    std::sort(sorted.begin(), sorted.end(),
              [](const JsonValue::Member *a, const JsonValue::Member *b) {
                return a->first < b->first;
              });
    out += '{';
    bool first = true;
    for (const JsonValue::Member *member : sorted) {
      if (!first)
        out += ',';
      first = false;
      newline(depth + 1);
      writeString(out, member->first);
      out += indent ? ": " : ":";
      writeValue(out, member->second, indent, depth + 1);
    }
    newline(depth);
    out += '}';
    return;
  }
  }
}

} // namespace

std::string formatJson(const JsonValue &value, unsigned indent) {
  std::string out;
  writeValue(out, value, indent, 0);
  return out;
}

} // namespace mosaic
