//===- PtxParser.cpp - PTX text to decoded instructions -----------------===//
//
// A hand-written recursive-descent parser for the PTX that LLVM's NVPTX
// back end and nvcc emit: module directives, variables with initializers,
// entries with parameters and performance directives, register
// declarations (also inside `{ }` scopes of inline assembly, whose labels
// are local to the scope), predicated instructions and every operand form.
// Anything it does not know is an error naming the text and its line.
//
//===----------------------------------------------------------------------===//

#include "Program.h"

#include "mosaic/Contracts/HardwareLimits.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <unordered_map>

namespace mosaic::emulator {

namespace {

/// The largest `.align` the emulator lays out: no kernel aligns more than
/// its dynamic shared memory's 1024 bytes, and module-scope variables are
/// allocated with room to align them.
constexpr uint64_t kMaxAlign = 64 * 1024;
/// The most bytes of one module-scope `.global` variable: the emulator keeps
/// it in host memory, allocated when the module loads.
constexpr uint64_t kMaxGlobalVariableBytes = 256ull << 20;
/// The most bytes of one `.const` variable: the 64 KB constant bank it lives
/// in (PTX ISA, "Constant State Space").
constexpr uint64_t kMaxConstBytes = 64 * 1024;

struct Token {
  enum class Kind { Word, Number, String, Punct, End } kind;
  std::string text;
  uint32_t line;
};

/// Splits PTX into tokens. A word is an identifier, a directive (`.reg`),
/// a register (`%r1`, `%tid.x`), a label (`$L__BB0_1`) or a dotted opcode
/// (`cp.async.bulk.tensor.2d.shared::cluster.global`).
Expected<std::vector<Token>> tokenize(std::string_view text) {
  std::vector<Token> tokens;
  uint32_t line = 1;
  size_t i = 0, n = text.size();
  auto isWordChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
           c == '.' || c == '%' || c == '$' || c == ':';
  };
  while (i < n) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n')
        ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && text[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(text[i] == '*' && text[i + 1] == '/')) {
        if (text[i] == '\n')
          ++line;
        ++i;
      }
      i += 2;
      continue;
    }
    if (c == '"') {
      size_t start = ++i;
      while (i < n && text[i] != '"') {
        if (text[i] == '\n')
          ++line;
        ++i;
      }
      tokens.push_back({Token::Kind::String,
                        std::string(text.substr(start, i - start)), line});
      ++i;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = i;
      while (i < n && (std::isalnum(static_cast<unsigned char>(text[i])) ||
                       text[i] == '.'))
        ++i;
      tokens.push_back({Token::Kind::Number,
                        std::string(text.substr(start, i - start)), line});
      continue;
    }
    if (isWordChar(c) && c != ':') {
      size_t start = i;
      while (i < n && isWordChar(text[i])) {
        // A label definition `name:` ends the word at the colon unless it
        // is part of `::`.
        if (text[i] == ':') {
          if (i + 1 < n && text[i + 1] == ':') {
            i += 2;
            continue;
          }
          break;
        }
        ++i;
      }
      tokens.push_back({Token::Kind::Word,
                        std::string(text.substr(start, i - start)), line});
      continue;
    }
    if (std::strchr("{}()[],;:@!+-<>|=", c)) {
      tokens.push_back({Token::Kind::Punct, std::string(1, c), line});
      ++i;
      continue;
    }
    return Error{"line " + std::to_string(line) + ": unexpected character '" +
                 std::string(1, c) + "'"};
  }
  tokens.push_back({Token::Kind::End, "", line});
  return tokens;
}

std::optional<Special> parseSpecial(std::string_view word) {
  static const std::unordered_map<std::string_view, Special> specials = {
      {"%tid.x", Special::TidX},
      {"%tid.y", Special::TidY},
      {"%tid.z", Special::TidZ},
      {"%ntid.x", Special::NtidX},
      {"%ntid.y", Special::NtidY},
      {"%ntid.z", Special::NtidZ},
      {"%ctaid.x", Special::CtaidX},
      {"%ctaid.y", Special::CtaidY},
      {"%ctaid.z", Special::CtaidZ},
      {"%nctaid.x", Special::NctaidX},
      {"%nctaid.y", Special::NctaidY},
      {"%nctaid.z", Special::NctaidZ},
      {"%laneid", Special::LaneId},
      {"%warpid", Special::WarpId},
      {"%nwarpid", Special::NWarpId},
      {"%smid", Special::SmId},
      {"%nsmid", Special::NSmId},
      {"%gridid", Special::GridId},
      {"%clusterid.x", Special::ClusterIdX},
      {"%clusterid.y", Special::ClusterIdY},
      {"%clusterid.z", Special::ClusterIdZ},
      {"%nclusterid.x", Special::NClusterIdX},
      {"%nclusterid.y", Special::NClusterIdY},
      {"%nclusterid.z", Special::NClusterIdZ},
      {"%cluster_ctaid.x", Special::ClusterCtaidX},
      {"%cluster_ctaid.y", Special::ClusterCtaidY},
      {"%cluster_ctaid.z", Special::ClusterCtaidZ},
      {"%cluster_nctaid.x", Special::ClusterNctaidX},
      {"%cluster_nctaid.y", Special::ClusterNctaidY},
      {"%cluster_nctaid.z", Special::ClusterNctaidZ},
      {"%cluster_ctarank", Special::ClusterCtarank},
      {"%cluster_nctarank", Special::ClusterNctarank},
      {"%is_explicit_cluster", Special::IsExplicitCluster},
      {"%lanemask_eq", Special::LanemaskEq},
      {"%lanemask_lt", Special::LanemaskLt},
      {"%lanemask_le", Special::LanemaskLe},
      {"%lanemask_gt", Special::LanemaskGt},
      {"%lanemask_ge", Special::LanemaskGe},
      {"%clock", Special::Clock},
      {"%clock64", Special::Clock64},
      {"%globaltimer", Special::GlobalTimer},
      {"%dynamic_smem_size", Special::DynamicSmemSize},
      {"%total_smem_size", Special::TotalSmemSize},
  };
  auto it = specials.find(word);
  if (it == specials.end())
    return std::nullopt;
  return it->second;
}

/// Parses an integer or a float literal (`0f3F800000`, `0d...`) to bits.
std::optional<uint64_t> parseNumber(std::string_view text, bool negative) {
  uint64_t value = 0;
  if (text.size() > 2 && text[0] == '0' &&
      (text[1] == 'f' || text[1] == 'F' || text[1] == 'd' || text[1] == 'D')) {
    for (char c : text.substr(2)) {
      if (!std::isxdigit(static_cast<unsigned char>(c)))
        return std::nullopt;
      value = value * 16 +
              (std::isdigit(static_cast<unsigned char>(c))
                   ? c - '0'
                   : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
    }
    if (negative)
      value ^= (text[1] == 'f' || text[1] == 'F') ? 0x80000000ull
                                                  : 0x8000000000000000ull;
    return value;
  }
  size_t i = 0;
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    i = 2;
  } else if (text.size() > 1 && text[0] == '0' &&
             std::isdigit(static_cast<unsigned char>(text[1]))) {
    base = 8;
    i = 1;
  } else if (text.size() > 2 && text[0] == '0' &&
             (text[1] == 'b' || text[1] == 'B')) {
    base = 2;
    i = 2;
  }
  size_t end = text.size();
  if (end > i && (text[end - 1] == 'U' || text[end - 1] == 'u'))
    --end;
  if (i == end)
    return std::nullopt;
  for (; i < end; ++i) {
    char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    int digit = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                                                            : 99;
    if (digit >= base)
      return std::nullopt;
    value = value * base + digit;
  }
  return negative ? ~value + 1 : value;
}

/// The per-thread register count a kernel's warps hold at launch, as ptxas
/// (CUDA 13.0, sm_90a) fixes it for a kernel with `setmaxnreg`
/// (docs/RationaleEmulator.md, "setmaxnreg", has the measurements). The
/// bound is `.maxnreg`, and, with `.maxntid`/`.reqntid` and
/// `.minnctapersm`, each warp's share of an SM sub-partition's 16384
/// registers (the SM's 65536 are split over four sub-partitions, and the
/// warps of the `.minnctapersm` CTAs over those) rounded down to a multiple
/// of 8; at most 255. A kernel that increases its count gets no more than
/// the largest count it increases to. Without a bound ptxas cannot fix the
/// count and drops every `setmaxnreg` (its warning C7508): 0.
uint32_t entryRegisterCount(uint64_t maxnreg, uint64_t threads,
                            uint64_t minCtasPerSm, uint64_t largestIncrease) {
  constexpr uint64_t kSubPartitions = 4;
  constexpr uint64_t kRegistersPerSubPartition = 16384;
  constexpr uint64_t kMaxRegistersPerThread = 255;
  uint64_t bound = std::min(maxnreg, kMaxRegistersPerThread);
  if (threads != 0 && minCtasPerSm != 0) {
    uint64_t warps = (threads + 31) / 32 * minCtasPerSm;
    uint64_t warpsPerSubPartition =
        (warps + kSubPartitions - 1) / kSubPartitions;
    uint64_t share = std::min(kRegistersPerSubPartition /
                                  (32 * warpsPerSubPartition) / 8 * 8,
                              kMaxRegistersPerThread);
    bound = bound != 0 ? std::min(bound, share) : share;
  }
  if (bound != 0 && largestIncrease != 0)
    bound = std::min(bound, largestIncrease);
  return static_cast<uint32_t>(bound);
}

class Parser {
public:
  explicit Parser(std::vector<Token> tokens) : tokens(std::move(tokens)) {}

  Expected<std::unique_ptr<Program>> parseModule();

private:
  std::vector<Token> tokens;
  size_t pos = 0;
  std::unique_ptr<Program> program = std::make_unique<Program>();
  std::map<std::string, size_t> globalIndex;

  // Per function being parsed.
  Function *function = nullptr;
  struct Scope {
    int parent;
    std::unordered_map<std::string, int32_t> registers;
    std::unordered_map<std::string, uint32_t> labels;
  };
  std::vector<Scope> scopes;
  int currentScope = -1;
  struct PendingBranch {
    size_t instruction;
    int scope;
    std::string label;
    uint32_t line;
  };
  std::vector<PendingBranch> branches;
  std::unordered_map<std::string, uint64_t> parameterOffsets;
  std::unordered_map<std::string, size_t> localIndex;

  const Token &peek(size_t ahead = 0) const {
    return tokens[std::min(pos + ahead, tokens.size() - 1)];
  }
  const Token &next() {
    const Token &token = peek();
    if (pos < tokens.size() - 1)
      ++pos;
    return token;
  }
  bool accept(std::string_view text) {
    if (peek().kind != Token::Kind::End && peek().text == text) {
      next();
      return true;
    }
    return false;
  }
  Error error(const std::string &message) const {
    return Error{"line " + std::to_string(peek().line) + ": " + message};
  }
  Status expect(std::string_view text) {
    if (accept(text))
      return Status();
    return error("expected '" + std::string(text) + "', found '" +
                 peek().text + "'");
  }
  /// Lays out `variable` at the first offset from `end` its alignment
  /// allows and moves `end` past it. The state space holds `capacity` bytes
  /// from `base`; the error, at `line`, names the variable and the capacity.
  Expected<uint32_t> place(uint32_t &end, const Variable &variable,
                           uint64_t base, uint64_t capacity,
                           const std::string &space, uint32_t line) {
    uint64_t align = std::max<uint32_t>(1, variable.align);
    uint64_t at = (uint64_t(end) + align - 1) / align * align;
    if (variable.size > capacity || at + variable.size > base + capacity)
      return Error{"line " + std::to_string(line) + ": `" + variable.name +
                   "` does not fit the " + std::to_string(capacity) +
                   " bytes of " + space};
    end = static_cast<uint32_t>(at + variable.size);
    return static_cast<uint32_t>(at);
  }
  void skipLine() {
    uint32_t line = peek().line;
    while (peek().kind != Token::Kind::End && peek().line == line)
      next();
  }
  /// Skips a `.pragma` through its ';'; the input may end first.
  Status skipPragma() {
    while (!accept(";")) {
      if (peek().kind == Token::Kind::End)
        return error("unterminated `.pragma`: expected ';'");
      next();
    }
    return Status();
  }
  Status skipBalanced() {
    int depth = 0;
    do {
      if (peek().kind == Token::Kind::End)
        return error("unterminated block");
      if (peek().text == "{")
        ++depth;
      else if (peek().text == "}")
        --depth;
      next();
    } while (depth > 0);
    return Status();
  }

  Expected<uint64_t> parseInteger() {
    bool negative = accept("-");
    if (peek().kind != Token::Kind::Number)
      return error("expected a number, found '" + peek().text + "'");
    std::optional<uint64_t> value = parseNumber(next().text, negative);
    if (!value)
      return error("malformed number");
    return *value;
  }

  Status parseVariable(Variable &variable, bool allowInit,
                       bool isParameter = false);
  Status parseEntry(bool isKernel);
  Status parseParameters(KernelInfo &info);
  Status parseBody();
  Status parseRegisterDeclaration();
  Status parseStatement();
  Expected<Operand> parseOperand(Instruction &instruction);
  int32_t lookupRegister(const std::string &name) const {
    for (int scope = currentScope; scope >= 0; scope = scopes[scope].parent) {
      auto it = scopes[scope].registers.find(name);
      if (it != scopes[scope].registers.end())
        return it->second;
    }
    return -1;
  }
  int32_t addRegister(const std::string &name, Type type) {
    int32_t slot = static_cast<int32_t>(function->registerNames.size());
    function->registerNames.push_back(name);
    function->registerTypes.push_back(type);
    scopes[currentScope].registers[name] = slot;
    return slot;
  }
};

Status Parser::parseVariable(Variable &variable, bool allowInit,
                             bool isParameter) {
  Type elementType = Type::B8;
  uint32_t vector = 1;
  while (peek().kind == Token::Kind::Word && peek().text[0] == '.') {
    std::string word = next().text.substr(1);
    if (word == "align") {
      Expected<uint64_t> align = parseInteger();
      MOSAIC_RETURN_IF_ERROR(align);
      if (*align == 0 || (*align & (*align - 1)) != 0 || *align > kMaxAlign)
        return error("`.align " + std::to_string(*align) +
                     "`: the alignment must be a power of two up to " +
                     std::to_string(kMaxAlign));
      variable.align = static_cast<uint32_t>(*align);
    } else if (word == "v2" || word == "v4" || word == "v8") {
      vector = static_cast<uint32_t>(word[1] - '0');
    } else if (word == "ptr" || word == "global" || word == "shared" ||
               word == "const" || word == "local" || word == "param") {
      // `.ptr .global .align 16` on parameters: address-space hints.
    } else if (std::optional<Type> type = parseTypeName(word)) {
      elementType = *type;
    } else {
      return error("unsupported variable attribute '." + word + "'");
    }
  }
  if (peek().kind != Token::Kind::Word)
    return error("expected a variable name, found '" + peek().text + "'");
  variable.name = next().text;
  unsigned elementBytes = std::max(1u, typeBits(elementType) / 8) * vector;
  variable.elementSize = elementBytes;
  uint64_t count = 1;
  bool unsized = false;
  while (accept("[")) {
    if (accept("]")) {
      unsized = true;
      continue;
    }
    Expected<uint64_t> dim = parseInteger();
    MOSAIC_RETURN_IF_ERROR(dim);
    if (*dim != 0 && count > UINT64_MAX / elementBytes / *dim)
      return error("`" + variable.name + "` has more bytes than 64 bits count");
    count *= *dim;
    MOSAIC_RETURN_IF_ERROR(expect("]"));
  }
  variable.size = unsized ? 0 : count * elementBytes;
  variable.isExtern = unsized;
  if (accept("=")) {
    if (!allowInit)
      return error("`" + variable.name + "` cannot have an initializer");
    std::vector<uint64_t> values;
    bool braced = accept("{");
    while (true) {
      // Nested braces for multi-dimensional arrays are flattened.
      if (accept("{") || accept("}") || accept(","))
        continue;
      if (peek().text == ";" )
        break;
      if (peek().kind == Token::Kind::Word) {
        // An address initializer (`generic(sym)` or `sym`): not modelled.
        return error("address initializers are not supported (`" +
                     variable.name + "`)");
      }
      Expected<uint64_t> value = parseInteger();
      MOSAIC_RETURN_IF_ERROR(value);
      values.push_back(*value);
      if (!braced)
        break;
    }
    // The bytes of the values given, no more: the storage starts zeroed,
    // and a variable too large to load is its caller's error to report.
    unsigned bytes = std::max(1u, typeBits(elementType) / 8);
    uint64_t given = std::min<uint64_t>(variable.size, values.size() * bytes);
    variable.init.assign(given, 0);
    for (size_t i = 0; (i + 1) * bytes <= given; ++i)
      std::memcpy(variable.init.data() + i * bytes, &values[i], bytes);
  }
  if (isParameter)
    return Status();
  return expect(";");
}

Status Parser::parseParameters(KernelInfo &info) {
  MOSAIC_RETURN_IF_ERROR(expect("("));
  uint32_t offset = 0;
  while (!accept(")")) {
    accept(",");
    if (!accept(".param"))
      return error("expected '.param' in the parameter list, found '" +
                   peek().text + "'");
    Variable variable;
    variable.space = Space::Param;
    uint32_t line = peek().line;
    MOSAIC_RETURN_IF_ERROR(parseVariable(variable, false, true));
    // Without `.align`, a parameter is aligned to its element type.
    if (variable.align <= 1)
      variable.align = variable.elementSize;
    Expected<uint32_t> at =
        place(offset, variable, 0, limits::kMaxKernelParameterBytes,
              "kernel parameters", line);
    MOSAIC_RETURN_IF_ERROR(at);
    KernelParameter parameter;
    parameter.name = variable.name;
    parameter.size = static_cast<uint32_t>(variable.size);
    parameter.align = variable.align;
    parameter.offset = *at;
    parameterOffsets[parameter.name] = parameter.offset;
    info.parameters.push_back(parameter);
  }
  info.parameterBytes = offset;
  return Status();
}

Status Parser::parseRegisterDeclaration() {
  Type type = Type::B32;
  uint32_t vector = 1;
  while (peek().kind == Token::Kind::Word && peek().text[0] == '.') {
    std::string word = next().text.substr(1);
    if (word == "v2" || word == "v4")
      vector = word[1] - '0';
    else if (std::optional<Type> parsed = parseTypeName(word))
      type = *parsed;
    else
      return error("unsupported register type '." + word + "'");
  }
  if (vector != 1)
    return error("vector registers are not supported");
  while (true) {
    if (peek().kind != Token::Kind::Word)
      return error("expected a register name, found '" + peek().text + "'");
    std::string name = next().text;
    if (accept("<")) {
      Expected<uint64_t> count = parseInteger();
      MOSAIC_RETURN_IF_ERROR(count);
      MOSAIC_RETURN_IF_ERROR(expect(">"));
      if (*count > (1u << 20))
        return error("too many registers in `" + name + "<" +
                     std::to_string(*count) + ">`");
      for (uint64_t i = 0; i < *count; ++i)
        addRegister(name + std::to_string(i), type);
    } else {
      addRegister(name, type);
    }
    if (!accept(","))
      break;
  }
  return expect(";");
}

Expected<Operand> Parser::parseOperand(Instruction &instruction) {
  Operand operand;
  if (accept("!")) {
    operand.negated = true;
  }
  if (accept("[")) {
    operand.kind = Operand::Kind::Address;
    bool first = true;
    bool coordinatesFollow = false;
    while (!accept("]")) {
      if (peek().text == ",") {
        coordinatesFollow = true; // `[tensorMap, {coordinates}]`
        break;
      }
      bool negative = false;
      if (!first) {
        if (accept("+")) {
          negative = accept("-");
        } else if (accept("-")) {
          negative = true;
        } else {
          return error("unexpected '" + peek().text + "' in an address");
        }
      }
      first = false;
      if (peek().kind == Token::Kind::Number || peek().text == "-") {
        Expected<uint64_t> value = parseInteger();
        MOSAIC_RETURN_IF_ERROR(value);
        operand.offset += negative ? -static_cast<int64_t>(*value)
                                   : static_cast<int64_t>(*value);
        continue;
      }
      if (peek().kind != Token::Kind::Word)
        return error("unexpected '" + peek().text + "' in an address");
      std::string name = next().text;
      int32_t reg = lookupRegister(name);
      if (reg >= 0) {
        if (operand.reg >= 0)
          return error("two registers in one address");
        operand.reg = reg;
        continue;
      }
      if (auto it = parameterOffsets.find(name); it != parameterOffsets.end()) {
        operand.symbolSpace = Space::Param;
        operand.offset += static_cast<int64_t>(it->second);
        continue;
      }
      if (auto it = localIndex.find(name); it != localIndex.end()) {
        const Variable &variable = function->locals[it->second];
        operand.symbolSpace = variable.space;
        operand.bits = it->second;
        operand.offset += static_cast<int64_t>(variable.address);
        continue;
      }
      if (auto it = globalIndex.find(name); it != globalIndex.end()) {
        const Variable &variable = program->globals[it->second];
        operand.symbolSpace = variable.space;
        operand.offset += static_cast<int64_t>(variable.address);
        operand.dynamicShared |= variable.isExtern;
        continue;
      }
      return error("unknown name `" + name + "` in an address");
    }
    if (coordinatesFollow) {
      next();
      // Tensor coordinates follow the tensor-map address in the brackets.
      instruction.operands.push_back(operand);
      Expected<Operand> coordinates = parseOperand(instruction);
      MOSAIC_RETURN_IF_ERROR(coordinates);
      MOSAIC_RETURN_IF_ERROR(expect("]"));
      return *coordinates;
    }
    return operand;
  }
  if (accept("{")) {
    if (peek().text == "}")
      return error("empty vector operand `{}`");
    operand.kind = Operand::Kind::Vector;
    operand.first = static_cast<uint32_t>(function->vectorSlots.size());
    while (!accept("}")) {
      accept(",");
      if (peek().text == "}")
        continue;
      VectorElement element;
      if (peek().text == "_") {
        next();
        element.sink = true;
      } else if (peek().kind == Token::Kind::Word) {
        std::string name = next().text;
        element.reg = lookupRegister(name);
        if (element.reg < 0)
          return error("unknown register `" + name + "`");
      } else {
        Expected<uint64_t> value = parseInteger();
        MOSAIC_RETURN_IF_ERROR(value);
        element.bits = *value;
      }
      function->vectorSlots.push_back(element);
      ++operand.count;
    }
    return operand;
  }
  if (peek().kind == Token::Kind::Number || peek().text == "-") {
    bool negative = accept("-");
    if (peek().kind != Token::Kind::Number)
      return error("expected a number after '-'");
    std::optional<uint64_t> value = parseNumber(next().text, negative);
    if (!value)
      return error("malformed number");
    operand.kind = Operand::Kind::Immediate;
    operand.bits = *value;
    return operand;
  }
  if (peek().kind != Token::Kind::Word)
    return error("unexpected '" + peek().text + "' as an operand");
  std::string name = next().text;
  if (name == "_") {
    operand.kind = Operand::Kind::Sink;
    return operand;
  }
  if (name[0] == '%') {
    if (std::optional<Special> special = parseSpecial(name)) {
      int32_t reg = lookupRegister(name);
      if (reg < 0) {
        operand.kind = Operand::Kind::Special;
        operand.special = *special;
        return operand;
      }
    }
  }
  int32_t reg = lookupRegister(name);
  if (reg >= 0) {
    operand.kind = Operand::Kind::Register;
    operand.reg = reg;
    return operand;
  }
  if (auto it = parameterOffsets.find(name); it != parameterOffsets.end()) {
    operand.kind = Operand::Kind::Symbol;
    operand.symbolSpace = Space::Param;
    operand.bits = it->second;
    return operand;
  }
  if (auto it = localIndex.find(name); it != localIndex.end()) {
    operand.kind = Operand::Kind::Symbol;
    operand.symbolSpace = function->locals[it->second].space;
    operand.bits = function->locals[it->second].address;
    return operand;
  }
  if (auto it = globalIndex.find(name); it != globalIndex.end()) {
    operand.kind = Operand::Kind::Symbol;
    operand.symbolSpace = program->globals[it->second].space;
    operand.bits = program->globals[it->second].address;
    operand.dynamicShared = program->globals[it->second].isExtern;
    return operand;
  }
  if (name[0] == '%')
    return error("unknown register `" + name + "`");
  // A label (branch target), resolved at the end of the function.
  operand.kind = Operand::Kind::Symbol;
  operand.symbolSpace = Space::Generic;
  operand.bits = ~0ull;
  branches.push_back({function->code.size(), currentScope, name,
                      peek().line});
  return operand;
}

Status Parser::parseStatement() {
  const Token &token = peek();
  if (token.text == "{") {
    next();
    scopes.push_back({currentScope, {}, {}});
    currentScope = static_cast<int>(scopes.size()) - 1;
    return Status();
  }
  if (token.text == "}") {
    next();
    currentScope = scopes[currentScope].parent;
    return Status();
  }
  if (token.kind == Token::Kind::Word && token.text[0] == '.') {
    std::string directive = token.text;
    if (directive == ".reg") {
      next();
      return parseRegisterDeclaration();
    }
    if (directive == ".loc" || directive == ".pragma" ||
        directive == ".file") {
      if (directive == ".pragma")
        return skipPragma();
      skipLine();
      return Status();
    }
    if (directive == ".local" || directive == ".shared") {
      next();
      Variable variable;
      variable.space = directive == ".local" ? Space::Local : Space::Shared;
      uint32_t line = peek().line;
      MOSAIC_RETURN_IF_ERROR(parseVariable(variable, false));
      Expected<uint32_t> at =
          variable.space == Space::Local
              ? place(function->localBytes, variable, 0,
                      limits::kMaxLocalMemoryPerThread,
                      "local memory per thread", line)
              : place(function->staticSharedEnd, variable, kSharedBase,
                      limits::kMaxSharedMemoryPerBlock, "shared memory per CTA",
                      line);
      MOSAIC_RETURN_IF_ERROR(at);
      variable.address = *at;
      localIndex[variable.name] = function->locals.size();
      function->locals.push_back(std::move(variable));
      return Status();
    }
    return error("unsupported directive `" + directive + "` in a body");
  }
  // A label.
  if (token.kind == Token::Kind::Word && peek(1).text == ":" &&
      peek(1).line == token.line) {
    std::string name = next().text;
    next();
    scopes[currentScope].labels[name] =
        static_cast<uint32_t>(function->code.size());
    return Status();
  }
  Instruction instruction;
  instruction.line = token.line;
  if (accept("@")) {
    bool negated = accept("!");
    if (peek().kind != Token::Kind::Word)
      return error("expected a predicate after '@'");
    std::string name = next().text;
    instruction.guard = lookupRegister(name);
    if (instruction.guard < 0)
      return error("unknown predicate `" + name + "`");
    instruction.guardNegated = negated;
  }
  if (peek().kind != Token::Kind::Word)
    return error("expected an instruction, found '" + peek().text + "'");
  std::string opcode = next().text;
  auto missingSemicolon = [&]() {
    return Error{"line " + std::to_string(instruction.line) +
                 ": missing ';' after `" + opcode + "`"};
  };
  while (!accept(";")) {
    if (peek().kind == Token::Kind::End || peek().text == "}")
      return missingSemicolon();
    if (!instruction.operands.empty() && !accept(",") && !accept("|")) {
      if (peek().line != instruction.line)
        return missingSemicolon();
      return error("expected ',' between operands of `" + opcode +
                   "`, found '" + peek().text + "'");
    }
    Expected<Operand> operand = parseOperand(instruction);
    MOSAIC_RETURN_IF_ERROR(operand);
    instruction.operands.push_back(*operand);
  }
  if (Status decoded = decodeInstruction(instruction, opcode); !decoded.ok())
    return Error{"line " + std::to_string(instruction.line) + ": " +
                 decoded.message()};
  function->code.push_back(std::move(instruction));
  return Status();
}

Status Parser::parseBody() {
  MOSAIC_RETURN_IF_ERROR(expect("{"));
  scopes.clear();
  scopes.push_back({-1, {}, {}});
  currentScope = 0;
  branches.clear();
  localIndex.clear();
  while (true) {
    if (peek().kind == Token::Kind::End)
      return error("unterminated function body");
    if (peek().text == "}" && currentScope == 0) {
      next();
      break;
    }
    MOSAIC_RETURN_IF_ERROR(parseStatement());
  }
  // Resolve branch targets through the scope chain of each branch.
  for (const PendingBranch &branch : branches) {
    bool found = false;
    for (int scope = branch.scope; scope >= 0; scope = scopes[scope].parent) {
      auto it = scopes[scope].labels.find(branch.label);
      if (it != scopes[scope].labels.end()) {
        function->code[branch.instruction].target = it->second;
        found = true;
        break;
      }
    }
    if (!found)
      return Error{"line " + std::to_string(branch.line) +
                   ": unknown name `" + branch.label + "`"};
  }
  // Falling off the end returns.
  Instruction ret;
  ret.op = Op::Ret;
  ret.line = tokens[pos > 0 ? pos - 1 : 0].line;
  function->code.push_back(ret);
  computeReconvergence(*function);
  return Status();
}

Status Parser::parseEntry(bool isKernel) {
  parameterOffsets.clear();
  if (peek().text == "(") {
    // A `.func`'s return parameters: named in its body like parameters.
    KernelInfo returns;
    MOSAIC_RETURN_IF_ERROR(parseParameters(returns));
  }
  if (peek().kind != Token::Kind::Word)
    return error("expected a function name");
  std::string name = next().text;
  program->functions.emplace_back();
  function = &program->functions.back();
  function->info.name = name;
  if (peek().text == "(")
    MOSAIC_RETURN_IF_ERROR(parseParameters(function->info));
  // The performance-tuning directives that fix the register count at
  // launch: `.maxnreg`, and `.maxntid`/`.reqntid` with `.minnctapersm`.
  uint64_t maxnreg = 0, threadBound = 0, minCtasPerSm = 0;
  while (peek().kind == Token::Kind::Word && peek().text[0] == '.') {
    uint32_t directiveLine = peek().line;
    std::string directive = next().text;
    std::vector<uint64_t> values;
    while (peek().kind == Token::Kind::Number) {
      Expected<uint64_t> value = parseInteger();
      MOSAIC_RETURN_IF_ERROR(value);
      values.push_back(*value);
      if (!accept(","))
        break;
    }
    if (directive == ".maxntid" || directive == ".reqntid" ||
        directive == ".reqnctapercluster")
      for (uint64_t v : values)
        if (v == 0 || v > UINT32_MAX)
          return Error{"line " + std::to_string(directiveLine) + ": `" +
                       directive + "` " + std::to_string(v) +
                       ": a dimension is 1 or more, in 32 bits"};
    if (directive == ".maxntid" || directive == ".reqntid") {
      // Saturated: three 32-bit dimensions overflow 64 bits.
      uint64_t product = 1;
      for (uint64_t v : values)
        product = std::min<uint64_t>(product * v, 1ull << 32);
      function->info.maxThreadsPerBlock =
          static_cast<uint32_t>(std::min<uint64_t>(product, 1024));
      threadBound = product;
    } else if (directive == ".reqnctapercluster") {
      for (size_t i = 0; i < values.size() && i < 3; ++i)
        function->info.requiredCluster[i] = static_cast<uint32_t>(values[i]);
      for (size_t i = values.size(); i < 3; ++i)
        function->info.requiredCluster[i] = 1;
    } else if (directive == ".maxnreg" || directive == ".minnctapersm") {
      if (values.size() != 1)
        return error("`" + directive + "` takes one value");
      (directive == ".maxnreg" ? maxnreg : minCtasPerSm) = values[0];
    } else if (directive == ".maxclusterrank") {
      if (values.size() != 1 || values[0] < 1)
        return error("`.maxclusterrank` takes one value, 1 or more");
      function->info.maxClusterRank = static_cast<uint32_t>(values[0]);
    } else if (directive == ".explicitcluster") {
      function->info.explicitCluster = true;
    } else if (directive == ".noreturn" || directive == ".maxnctapersm" ||
               directive == ".pragma") {
      if (directive == ".pragma")
        MOSAIC_RETURN_IF_ERROR(skipPragma());
    } else {
      return error("unsupported function directive `" + directive + "`");
    }
  }
  if (accept(";")) {
    // A declaration (prototype) only.
    program->functions.pop_back();
    function = nullptr;
    return Status();
  }
  function->staticSharedEnd = kSharedBase;
  // Module-scope shared variables are laid out first, in every function.
  for (const Variable &global : program->globals)
    if (global.space == Space::Shared && !global.isExtern)
      function->staticSharedEnd = std::max<uint32_t>(
          function->staticSharedEnd,
          static_cast<uint32_t>(global.address + global.size));
  MOSAIC_RETURN_IF_ERROR(parseBody());
  function->info.localBytes = function->localBytes;
  function->info.staticSharedBytes = function->staticSharedEnd - kSharedBase;
  uint32_t dynamicAlign = 16;
  for (const Variable &global : program->globals)
    if (global.space == Space::Shared && global.isExtern)
      dynamicAlign = std::max(dynamicAlign, global.align);
  function->dynamicSharedOffset =
      (function->staticSharedEnd + dynamicAlign - 1) / dynamicAlign *
      dynamicAlign;
  for (Instruction &instruction : function->code)
    for (Operand &operand : instruction.operands)
      if (operand.dynamicShared) {
        if (operand.kind == Operand::Kind::Symbol)
          operand.bits += function->dynamicSharedOffset;
        else
          operand.offset += function->dynamicSharedOffset;
      }
  uint32_t registers = 0;
  for (Type type : function->registerTypes)
    registers += type == Type::Pred ? 0 : (typeBits(type) > 32 ? 2 : 1);
  function->info.registers = std::min<uint32_t>(registers, 255);
  uint64_t largestIncrease = 0;
  for (const Instruction &instruction : function->code)
    if (instruction.op == Op::Setmaxnreg && instruction.variant == 1)
      largestIncrease = std::max(largestIncrease, instruction.operands[0].bits);
  function->info.entryRegisters =
      entryRegisterCount(maxnreg, threadBound, minCtasPerSm, largestIncrease);
  if (!isKernel)
    function->info.maxThreadsPerBlock = 0;
  function = nullptr;
  return Status();
}

Expected<std::unique_ptr<Program>> Parser::parseModule() {
  uint32_t nextSharedAddress = kSharedBase;
  while (peek().kind != Token::Kind::End) {
    const Token &token = peek();
    if (token.kind != Token::Kind::Word || token.text[0] != '.')
      return error("unexpected '" + token.text + "' at module scope");
    std::string directive = next().text;
    if (directive == ".version" || directive == ".target" ||
        directive == ".address_size" || directive == ".file" ||
        directive == ".loc") {
      skipLine();
      continue;
    }
    if (directive == ".section") {
      skipLine();
      if (peek().text == "{")
        MOSAIC_RETURN_IF_ERROR(skipBalanced());
      continue;
    }
    if (directive == ".visible" || directive == ".extern" ||
        directive == ".weak" || directive == ".common") {
      if (peek().text == ".entry" || peek().text == ".func") {
        continue;
      }
      if (directive != ".extern") {
        continue;
      }
      // `.extern .shared ... name[]`: dynamic shared memory.
      if (peek().text != ".shared" && peek().text != ".global" &&
          peek().text != ".const")
        continue;
      std::string space = next().text;
      Variable variable;
      variable.space = space == ".shared"   ? Space::Shared
                       : space == ".global" ? Space::Global
                                            : Space::Const;
      MOSAIC_RETURN_IF_ERROR(parseVariable(variable, false));
      variable.isExtern = true;
      if (variable.space != Space::Shared)
        return error("external global `" + variable.name +
                     "` cannot be resolved: the emulator loads one module");
      variable.size = 0;
      globalIndex[variable.name] = program->globals.size();
      program->globals.push_back(std::move(variable));
      continue;
    }
    if (directive == ".entry" || directive == ".func") {
      MOSAIC_RETURN_IF_ERROR(parseEntry(directive == ".entry"));
      continue;
    }
    if (directive == ".global" || directive == ".const" ||
        directive == ".shared") {
      Variable variable;
      variable.space = directive == ".global"  ? Space::Global
                       : directive == ".const" ? Space::Const
                                               : Space::Shared;
      uint32_t line = peek().line;
      MOSAIC_RETURN_IF_ERROR(parseVariable(variable, true));
      if (variable.space == Space::Shared) {
        Expected<uint32_t> at = place(nextSharedAddress, variable, kSharedBase,
                                      limits::kMaxSharedMemoryPerBlock,
                                      "shared memory per CTA", line);
        MOSAIC_RETURN_IF_ERROR(at);
        variable.address = *at;
      } else {
        uint64_t limit = variable.space == Space::Const
                             ? kMaxConstBytes
                             : kMaxGlobalVariableBytes;
        if (variable.size > limit)
          return Error{"line " + std::to_string(line) + ": `" + variable.name +
                       "` has " + std::to_string(variable.size) +
                       " bytes; the emulator takes module-scope " + directive +
                       " variables of up to " + std::to_string(limit)};
        uint64_t bytes = std::max<uint64_t>(variable.size, 1);
        uint64_t align = std::max<uint32_t>(16, variable.align);
        // Room to align the variable within its storage.
        variable.storage.reset(new uint8_t[bytes + align]());
        uint64_t base = reinterpret_cast<uint64_t>(variable.storage.get());
        variable.address = (base + align - 1) / align * align;
        if (!variable.init.empty())
          std::memcpy(reinterpret_cast<void *>(variable.address),
                      variable.init.data(), variable.init.size());
      }
      globalIndex[variable.name] = program->globals.size();
      program->globals.push_back(std::move(variable));
      continue;
    }
    return error("unsupported module directive `" + directive + "`");
  }
  return std::move(program);
}

} // namespace

void computeReconvergence(Function &function) {
  const std::vector<Instruction> &code = function.code;
  size_t n = code.size();
  auto ends = [](const Instruction &in) {
    return in.op == Op::Bra || in.op == Op::Ret || in.op == Op::Exit ||
           in.op == Op::Trap;
  };
  // Basic blocks.
  std::vector<char> leader(n + 1, 0);
  leader[0] = 1;
  for (size_t i = 0; i < n; ++i)
    if (ends(code[i])) {
      leader[i + 1] = 1;
      if (code[i].op == Op::Bra && code[i].target < n)
        leader[code[i].target] = 1;
    }
  std::vector<uint32_t> blockOf(n), blockStart;
  for (size_t i = 0; i < n; ++i) {
    if (leader[i])
      blockStart.push_back(static_cast<uint32_t>(i));
    blockOf[i] = static_cast<uint32_t>(blockStart.size() - 1);
  }
  size_t blocks = blockStart.size();
  size_t exitNode = blocks; // virtual exit
  std::vector<std::vector<uint32_t>> successors(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    size_t last = (b + 1 < blocks ? blockStart[b + 1] : n) - 1;
    const Instruction &in = code[last];
    bool unconditional = in.guard < 0;
    if (in.op == Op::Bra) {
      successors[b].push_back(blockOf[in.target]);
      if (!unconditional && last + 1 < n)
        successors[b].push_back(blockOf[last + 1]);
    } else if (in.op == Op::Ret || in.op == Op::Exit || in.op == Op::Trap) {
      successors[b].push_back(static_cast<uint32_t>(exitNode));
      if (!unconditional && last + 1 < n)
        successors[b].push_back(blockOf[last + 1]);
    } else if (last + 1 < n) {
      successors[b].push_back(blockOf[last + 1]);
    } else {
      successors[b].push_back(static_cast<uint32_t>(exitNode));
    }
  }
  // Post-dominator sets, iterated to a fixpoint.
  size_t words = (blocks + 1 + 63) / 64;
  std::vector<std::vector<uint64_t>> post(blocks + 1,
                                          std::vector<uint64_t>(words, ~0ull));
  post[exitNode].assign(words, 0);
  post[exitNode][exitNode / 64] |= 1ull << (exitNode % 64);
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t b = blocks; b-- > 0;) {
      std::vector<uint64_t> meet(words, ~0ull);
      for (uint32_t s : successors[b])
        for (size_t w = 0; w < words; ++w)
          meet[w] &= post[s][w];
      meet[b / 64] |= 1ull << (b % 64);
      if (meet != post[b]) {
        post[b] = std::move(meet);
        changed = true;
      }
    }
  }
  auto has = [&](size_t b, size_t d) { return post[b][d / 64] >> (d % 64) & 1; };
  for (size_t i = 0; i < n; ++i) {
    Instruction &in = function.code[i];
    if (in.op != Op::Bra && in.op != Op::Ret && in.op != Op::Exit)
      continue;
    size_t b = blockOf[i];
    // The immediate post-dominator: the strict post-dominator that every
    // other strict post-dominator post-dominates.
    size_t best = exitNode;
    for (size_t d = 0; d <= blocks; ++d) {
      if (d == b || !has(b, d))
        continue;
      bool immediate = true;
      for (size_t e = 0; e <= blocks; ++e)
        if (e != b && e != d && has(b, e) && !has(d, e)) {
          immediate = false;
          break;
        }
      if (immediate) {
        best = d;
        break;
      }
    }
    in.reconverge = best == exitNode ? UINT32_MAX : blockStart[best];
  }
}

Expected<std::unique_ptr<Program>> parsePtx(std::string_view text) {
  Expected<std::vector<Token>> tokens = tokenize(text);
  MOSAIC_RETURN_IF_ERROR(tokens);
  Parser parser(std::move(*tokens));
  Expected<std::unique_ptr<Program>> program = parser.parseModule();
  if (!program.ok())
    return program;
  // Keep the source lines for messages.
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos)
      end = text.size();
    std::string line(text.substr(start, end - start));
    size_t first = line.find_first_not_of(" \t");
    lines.push_back(first == std::string::npos ? "" : line.substr(first));
    start = end + 1;
  }
  (*program)->lines = std::move(lines);
  return program;
}

} // namespace mosaic::emulator
