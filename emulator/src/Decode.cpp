//===- Decode.cpp - Opcode modifiers to instruction fields --------------===//
//
// An opcode is a dotted prefix naming the instruction (`mbarrier.try_wait`)
// followed by modifiers (`.parity.shared::cta.b64`). The longest known
// prefix picks the op; each modifier then sets a field. A modifier the
// emulator does not know, or does not model for that op, is an error: an
// instruction is never executed with part of its meaning dropped.
//
//===----------------------------------------------------------------------===//

#include "Program.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace mosaic::emulator {

unsigned typeBits(Type type) {
  switch (type) {
  case Type::None:
    return 0;
  case Type::Pred:
    return 1;
  case Type::B8:
  case Type::U8:
  case Type::S8:
  case Type::E4M3:
  case Type::E5M2:
    return 8;
  case Type::B16:
  case Type::U16:
  case Type::S16:
  case Type::F16:
  case Type::BF16:
  case Type::E4M3x2:
  case Type::E5M2x2:
    return 16;
  case Type::B32:
  case Type::U32:
  case Type::S32:
  case Type::F32:
  case Type::F16x2:
  case Type::BF16x2:
  case Type::TF32:
    return 32;
  case Type::B64:
  case Type::U64:
  case Type::S64:
  case Type::F64:
    return 64;
  case Type::B128:
    return 128;
  }
  return 0;
}

bool isSigned(Type type) {
  return type == Type::S8 || type == Type::S16 || type == Type::S32 ||
         type == Type::S64;
}

bool isFloatType(Type type) {
  switch (type) {
  case Type::F16:
  case Type::F16x2:
  case Type::BF16:
  case Type::BF16x2:
  case Type::F32:
  case Type::F64:
  case Type::TF32:
  case Type::E4M3:
  case Type::E5M2:
  case Type::E4M3x2:
  case Type::E5M2x2:
    return true;
  default:
    return false;
  }
}

const char *typeName(Type type) {
  switch (type) {
#define MOSAIC_TYPE_NAME(name, text)                                           \
  case Type::name:                                                             \
    return text;
    MOSAIC_TYPE_NAME(None, "none")
    MOSAIC_TYPE_NAME(Pred, "pred")
    MOSAIC_TYPE_NAME(B8, "b8")
    MOSAIC_TYPE_NAME(B16, "b16")
    MOSAIC_TYPE_NAME(B32, "b32")
    MOSAIC_TYPE_NAME(B64, "b64")
    MOSAIC_TYPE_NAME(B128, "b128")
    MOSAIC_TYPE_NAME(U8, "u8")
    MOSAIC_TYPE_NAME(U16, "u16")
    MOSAIC_TYPE_NAME(U32, "u32")
    MOSAIC_TYPE_NAME(U64, "u64")
    MOSAIC_TYPE_NAME(S8, "s8")
    MOSAIC_TYPE_NAME(S16, "s16")
    MOSAIC_TYPE_NAME(S32, "s32")
    MOSAIC_TYPE_NAME(S64, "s64")
    MOSAIC_TYPE_NAME(F16, "f16")
    MOSAIC_TYPE_NAME(F16x2, "f16x2")
    MOSAIC_TYPE_NAME(BF16, "bf16")
    MOSAIC_TYPE_NAME(BF16x2, "bf16x2")
    MOSAIC_TYPE_NAME(F32, "f32")
    MOSAIC_TYPE_NAME(F64, "f64")
    MOSAIC_TYPE_NAME(TF32, "tf32")
    MOSAIC_TYPE_NAME(E4M3, "e4m3")
    MOSAIC_TYPE_NAME(E5M2, "e5m2")
    MOSAIC_TYPE_NAME(E4M3x2, "e4m3x2")
    MOSAIC_TYPE_NAME(E5M2x2, "e5m2x2")
#undef MOSAIC_TYPE_NAME
  }
  return "?";
}

std::optional<Type> parseTypeName(std::string_view word) {
  static const std::unordered_map<std::string_view, Type> types = {
      {"pred", Type::Pred},   {"b8", Type::B8},       {"b16", Type::B16},
      {"b32", Type::B32},     {"b64", Type::B64},     {"b128", Type::B128},
      {"u8", Type::U8},       {"u16", Type::U16},     {"u32", Type::U32},
      {"u64", Type::U64},     {"s8", Type::S8},       {"s16", Type::S16},
      {"s32", Type::S32},     {"s64", Type::S64},     {"f16", Type::F16},
      {"f16x2", Type::F16x2}, {"bf16", Type::BF16},   {"bf16x2", Type::BF16x2},
      {"f32", Type::F32},     {"f64", Type::F64},     {"tf32", Type::TF32},
      {"e4m3", Type::E4M3},   {"e5m2", Type::E5M2},   {"e4m3x2", Type::E4M3x2},
      {"e5m2x2", Type::E5M2x2}};
  auto it = types.find(word);
  if (it == types.end())
    return std::nullopt;
  return it->second;
}

namespace {

struct OpName {
  Op op;
  std::vector<std::string> parts;
  /// How many operands the instruction takes, and how many type modifiers
  /// it needs (Ops.def).
  unsigned fewest = 0, most = 0, types = 0;
};

const std::vector<OpName> &opTable() {
  static const std::vector<OpName> table = [] {
    std::vector<OpName> ops;
    auto add = [&](Op op, const char *text, unsigned fewest, unsigned most,
                   unsigned types) {
      if (!*text)
        return;
      OpName name{op, {}, fewest, most, types};
      std::string s(text);
      size_t start = 0;
      while (true) {
        size_t dot = s.find('.', start);
        name.parts.push_back(s.substr(start, dot - start));
        if (dot == std::string::npos)
          break;
        start = dot + 1;
      }
      ops.push_back(std::move(name));
    };
#define MOSAIC_EMULATOR_OP(name, text, handler, fewest, most, types)           \
  add(Op::name, text, fewest, most, types);
#include "Ops.def"
    std::stable_sort(ops.begin(), ops.end(),
                     [](const OpName &a, const OpName &b) {
                       return a.parts.size() > b.parts.size();
                     });
    return ops;
  }();
  return table;
}

std::vector<std::string> splitOpcode(const std::string &opcode) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = opcode.find('.', start);
    parts.push_back(opcode.substr(start, dot - start));
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  return parts;
}

/// Modifiers that only tune caching, scheduling or the memory model's
/// scope and never change what an instruction computes in this emulator.
bool isHint(const std::string &word) {
  static const std::unordered_set<std::string> hints = {
      "volatile", "relaxed", "weak",     "mmio",     "cta",      "gpu",
      "sys",      "cluster", "nc",       "ca",       "cg",       "cs",
      "lu",       "cv",      "wb",       "wt",       "sync",     "aligned",
      "tile",     "noftz",   "sc",       "acq_rel",  "L2::64B",  "L2::128B",
      "L2::256B", "full",    "b64x",     "unified",  "level::eviction_priority",
      "async",    "shared::cta::sync", "mbarrier::complete_tx::bytes",
      "bulk_group", "release", "acquire", "uni", "gl", "L2",
  };
  if (word.rfind("L1::", 0) == 0 || word.rfind("L2::", 0) == 0 ||
      word.rfind("level::", 0) == 0)
    return true;
  return hints.count(word) != 0;
}

std::optional<Compare> parseCompare(const std::string &word) {
  static const std::unordered_map<std::string, Compare> compares = {
      {"eq", Compare::Eq},   {"ne", Compare::Ne},   {"lt", Compare::Lt},
      {"le", Compare::Le},   {"gt", Compare::Gt},   {"ge", Compare::Ge},
      {"lo", Compare::Lo},   {"ls", Compare::Ls},   {"hi", Compare::Hi},
      {"hs", Compare::Hs},   {"equ", Compare::Equ}, {"neu", Compare::Neu},
      {"ltu", Compare::Ltu}, {"leu", Compare::Leu}, {"gtu", Compare::Gtu},
      {"geu", Compare::Geu}, {"num", Compare::Num}, {"nan", Compare::Nan}};
  auto it = compares.find(word);
  if (it == compares.end())
    return std::nullopt;
  return it->second;
}

std::optional<Space> parseSpace(const std::string &word) {
  if (word == "global")
    return Space::Global;
  if (word == "shared" || word == "shared::cta")
    return Space::Shared;
  if (word == "shared::cluster")
    return Space::SharedCluster;
  if (word == "local")
    return Space::Local;
  if (word == "param" || word == "param::entry" || word == "param::func")
    return Space::Param;
  if (word == "const")
    return Space::Const;
  return std::nullopt;
}

/// Reduction / atomic operations: Instruction::variant for atom, red,
/// redux, cp.reduce.
std::optional<uint8_t> parseAtomicOp(const std::string &word) {
  static const std::unordered_map<std::string, uint8_t> ops = {
      {"add", 1}, {"min", 2}, {"max", 3},  {"inc", 4}, {"dec", 5},
      {"and", 6}, {"or", 7},  {"xor", 8},  {"cas", 9}, {"exch", 10}};
  auto it = ops.find(word);
  if (it == ops.end())
    return std::nullopt;
  return it->second;
}

} // namespace

Status decodeInstruction(Instruction &instruction, const std::string &opcode) {
  std::vector<std::string> parts = splitOpcode(opcode);
  const OpName *match = nullptr;
  for (const OpName &name : opTable()) {
    if (name.parts.size() > parts.size())
      continue;
    if (std::equal(name.parts.begin(), name.parts.end(), parts.begin())) {
      match = &name;
      break;
    }
  }
  if (!match)
    return Error{"unsupported instruction `" + opcode + "`"};
  Instruction &in = instruction;
  in.op = match->op;
  unsigned typesSeen = 0;
  unsigned spacesSeen = 0;
  Op op = in.op;
  bool isCompareOp = op == Op::Setp || op == Op::Set || op == Op::Slct;
  bool isAtomicOp = op == Op::Atom || op == Op::Red || op == Op::Redux ||
                    op == Op::CpReduceAsyncBulkTensor;
  for (size_t i = match->parts.size(); i < parts.size(); ++i) {
    const std::string &word = parts[i];
    if (std::optional<Type> type = parseTypeName(word)) {
      (typesSeen == 0 ? in.type : typesSeen == 1 ? in.type2 : in.type3) =
          *type;
      ++typesSeen;
      continue;
    }
    if (isCompareOp) {
      if (std::optional<Compare> compare = parseCompare(word)) {
        in.compare = *compare;
        continue;
      }
      if (word == "and" || word == "or" || word == "xor") {
        in.boolOp = word == "and" ? 1 : word == "or" ? 2 : 3;
        continue;
      }
    }
    if (isAtomicOp) {
      if (std::optional<uint8_t> atomic = parseAtomicOp(word)) {
        in.variant = *atomic;
        continue;
      }
    }
    if (op == Op::Shfl) {
      static const std::unordered_map<std::string, uint8_t> modes = {
          {"up", 1}, {"down", 2}, {"bfly", 3}, {"idx", 4}};
      if (auto it = modes.find(word); it != modes.end()) {
        in.variant = it->second;
        continue;
      }
    }
    if (op == Op::Vote) {
      static const std::unordered_map<std::string, uint8_t> modes = {
          {"all", 1}, {"any", 2}, {"uni", 3}, {"ballot", 4}};
      if (auto it = modes.find(word); it != modes.end()) {
        in.variant = it->second;
        continue;
      }
    }
    if (op == Op::Match && (word == "any" || word == "all")) {
      in.variant = word == "any" ? 1 : 2;
      continue;
    }
    if ((op == Op::BarRed || op == Op::BarrierRed) &&
        (word == "popc" || word == "and" || word == "or")) {
      in.variant = word == "popc" ? 1 : word == "and" ? 2 : 3;
      continue;
    }
    if (op == Op::Testp) {
      static const std::unordered_map<std::string, uint8_t> modes = {
          {"finite", 1},    {"infinite", 2}, {"number", 3},
          {"notanumber", 4}, {"normal", 5},  {"subnormal", 6}};
      if (auto it = modes.find(word); it != modes.end()) {
        in.variant = it->second;
        continue;
      }
    }
    if (op == Op::Prmt) {
      static const std::unordered_map<std::string, uint8_t> modes = {
          {"f4e", 1}, {"b4e", 2}, {"rc8", 3}, {"ecl", 4}, {"ecr", 5},
          {"rc16", 6}};
      if (auto it = modes.find(word); it != modes.end()) {
        in.variant = it->second;
        continue;
      }
    }
    if (op == Op::Shf && (word == "l" || word == "r" || word == "wrap" ||
                          word == "clamp")) {
      if (word == "l")
        in.variant = 1;
      if (word == "clamp")
        in.shiftClamp = true;
      continue;
    }
    if (op == Op::Setmaxnreg && (word == "inc" || word == "dec")) {
      in.variant = word == "inc" ? 1 : 2;
      continue;
    }
    if (op == Op::Bfind && word == "shiftamt") {
      in.variant = 1;
      continue;
    }
    if ((op == Op::Ldmatrix || op == Op::Stmatrix) &&
        (word == "x1" || word == "x2" || word == "x4")) {
      in.vectorWidth = static_cast<uint8_t>(word[1] - '0');
      continue;
    }
    if ((op == Op::Ldmatrix || op == Op::Stmatrix) && word == "m8n8") {
      continue;
    }
    if (word == "trans") {
      in.trans = true;
      continue;
    }
    if (word == "cc" && (op == Op::Add || op == Op::Sub || op == Op::Mad ||
                         op == Op::Addc || op == Op::Subc ||
                         op == Op::Madc)) {
      in.carryOut = true;
      continue;
    }
    if (op == Op::Mul || op == Op::Mad || op == Op::Mul24 ||
        op == Op::Mad24 || op == Op::Madc) {
      if (word == "lo")
        continue;
      if (word == "hi") {
        in.hi = true;
        continue;
      }
      if (word == "wide") {
        in.wide = true;
        continue;
      }
    }
    if (op == Op::Cvta && word == "to") {
      in.to = true;
      continue;
    }
    if (std::optional<Space> space = parseSpace(word)) {
      (spacesSeen == 0 ? in.space : in.space2) = *space;
      ++spacesSeen;
      continue;
    }
    static const std::unordered_map<std::string, std::pair<Rounding, bool>>
        roundings = {{"rn", {Rounding::Rn, false}},
                     {"rz", {Rounding::Rz, false}},
                     {"rm", {Rounding::Rm, false}},
                     {"rp", {Rounding::Rp, false}},
                     {"rna", {Rounding::Rna, false}},
                     {"rs", {Rounding::Rs, false}},
                     {"rni", {Rounding::Rn, true}},
                     {"rzi", {Rounding::Rz, true}},
                     {"rmi", {Rounding::Rm, true}},
                     {"rpi", {Rounding::Rp, true}}};
    if (auto it = roundings.find(word); it != roundings.end()) {
      in.rounding = it->second.first;
      in.roundToInteger = it->second.second;
      continue;
    }
    if (word == "v2" || word == "v4" || word == "v8") {
      in.vectorWidth = static_cast<uint8_t>(word[1] - '0');
      continue;
    }
    if (word.size() == 2 && word[1] == 'd' && word[0] >= '1' &&
        word[0] <= '5') {
      in.dims = static_cast<uint8_t>(word[0] - '0');
      continue;
    }
    if (word.size() > 1 && word[0] == 'm' && op == Op::WgmmaMmaAsync) {
      unsigned m = 0, n = 0, k = 0;
      if (std::sscanf(word.c_str(), "m%un%uk%u", &m, &n, &k) == 3) {
        in.shapeM = static_cast<uint16_t>(m);
        in.shapeN = static_cast<uint16_t>(n);
        in.shapeK = static_cast<uint16_t>(k);
        continue;
      }
    }
    if (word == "ftz") {
      in.ftz = true;
      continue;
    }
    if (word == "sat") {
      in.sat = true;
      continue;
    }
    if (word == "satfinite") {
      in.satfinite = true;
      continue;
    }
    if (word == "approx") {
      in.approx = true;
      continue;
    }
    if (word == "relu") {
      in.relu = true;
      continue;
    }
    if (word == "NaN") {
      in.nan = true;
      continue;
    }
    if (word == "xorsign") {
      in.xorsign = true;
      continue;
    }
    if (word == "abs" && (op == Op::Min || op == Op::Max)) {
      in.abs = true;
      continue;
    }
    if (word == "multicast::cluster") {
      in.multicast = true;
      continue;
    }
    if (word == "L2::cache_hint") {
      in.cacheHint = true;
      continue;
    }
    if (word == "read") {
      in.read = true;
      continue;
    }
    if (word == "volatile" || word == "relaxed")
      in.strong = true;
    // PTX ISA, "Memory consistency model": ld/st.volatile act as
    // .relaxed.sys; membar.cta/.gl/.sys are fence.sc at .cta/.gpu/.sys.
    if (word == "volatile" && in.scope == Scope::None)
      in.scope = Scope::Sys;
    static const std::unordered_map<std::string, Scope> scopes = {
        {"cta", Scope::Cta},
        {"cluster", Scope::Cluster},
        {"gpu", Scope::Gpu},
        {"sys", Scope::Sys}};
    if (auto it = scopes.find(word); it != scopes.end()) {
      in.scope = it->second;
      continue;
    }
    if (word == "gl" && op == Op::Membar) {
      in.scope = Scope::Gpu;
      continue;
    }
    if (word == "acquire") {
      in.strong = true;
      in.acquire = true;
      continue;
    }
    if (word == "release") {
      in.strong = true;
      in.release = true;
      continue;
    }
    if (word == "acq_rel" || word == "sc") {
      in.strong = true;
      in.acquire = in.release = true;
      continue;
    }
    if (word == "uni") {
      in.uni = true;
      continue;
    }
    if (word == "aligned") {
      in.aligned = true;
      continue;
    }
    if (word == "parity" &&
        (op == Op::MbarrierTryWait || op == Op::MbarrierTestWait)) {
      in.variant = 1;
      continue;
    }
    if (word == "noComplete" && op == Op::MbarrierArrive) {
      in.variant = 2;
      continue;
    }
    if (word == "to" && op == Op::FenceProxyAsync)
      continue;
    if (isHint(word))
      continue;
    if (word == "im2col" || word.rfind("tile::", 0) == 0 ||
        word.rfind("cta_group", 0) == 0)
      return Error{"`" + opcode + "`: the ." + word +
                   " mode is not supported by the emulator"};
    return Error{"`" + opcode + "`: unsupported modifier `." + word + "`"};
  }
  size_t operands = in.operands.size();
  if (operands < match->fewest || operands > match->most)
    return Error{"`" + opcode + "` takes " + std::to_string(match->fewest) +
                 (match->most == match->fewest
                      ? std::string()
                      : " to " + std::to_string(match->most)) +
                 " operands, found " + std::to_string(operands)};
  // Copies to shared memory also take the mbarrier that counts their bytes.
  bool toShared = in.space == Space::SharedCluster || in.space == Space::Shared;
  bool copiesToShared =
      (in.op == Op::CpAsyncBulkTensor || in.op == Op::CpAsyncBulk) && toShared;
  if (copiesToShared && operands < 4)
    return Error{"`" + opcode + "` to shared memory takes an mbarrier: 4 to " +
                 std::to_string(match->most) + " operands, found " +
                 std::to_string(operands)};
  // The handlers move `.vN` (`.xN` for ldmatrix and stmatrix) registers
  // through the data operand's vector elements.
  bool isVectorMemoryOp = in.op == Op::Ld || in.op == Op::Ldu ||
                          in.op == Op::St || in.op == Op::Ldmatrix ||
                          in.op == Op::Stmatrix;
  if (isVectorMemoryOp) {
    bool isStore = in.op == Op::St || in.op == Op::Stmatrix;
    const Operand &data = in.operands[isStore ? 1 : 0];
    bool needsVector =
        in.vectorWidth > 1 || in.op == Op::Ldmatrix || in.op == Op::Stmatrix;
    if ((needsVector || data.kind == Operand::Kind::Vector) &&
        (data.kind != Operand::Kind::Vector || data.count != in.vectorWidth))
      return Error{"`" + opcode + "` moves " + std::to_string(in.vectorWidth) +
                   " registers: its " + (isStore ? "source" : "destination") +
                   " must be a {...} vector of " +
                   std::to_string(in.vectorWidth)};
  }
  // mov packs or unpacks 2 or 4 elements of at least 8 bits (PTX ISA, mov:
  // `mov.b32 d, {a, b}` of two .b16, `mov.b64 d, {a, b, c, d}` of four).
  if (in.op == Op::Mov) {
    for (const Operand &operand : in.operands) {
      if (operand.kind != Operand::Kind::Vector)
        continue;
      unsigned bits = typeBits(in.type);
      if ((operand.count != 2 && operand.count != 4) ||
          bits / operand.count < 8)
        return Error{"`" + opcode +
                     "` packs 2 or 4 elements of at least 8 "
                     "bits into its " +
                     std::to_string(bits) + " bits, not a vector of " +
                     std::to_string(operand.count)};
    }
  }
  if (typesSeen < match->types)
    return Error{"`" + opcode + "` has " +
                 (typesSeen == 0   ? std::string("no type")
                  : typesSeen == 1 ? std::string("1 type")
                                   : std::to_string(typesSeen) + " types") +
                 "; it needs " + std::to_string(match->types)};
  if (in.op == Op::Setmaxnreg) {
    // PTX ISA, setmaxnreg: `.inc` or `.dec`, and an integer constant
    // imm-reg-count, a multiple of 8 in 24..256.
    if (in.variant == 0)
      return Error{"`" + opcode + "` needs .inc or .dec"};
    if (in.operands.size() != 1 ||
        in.operands[0].kind != Operand::Kind::Immediate)
      return Error{"`" + opcode +
                   "` takes one operand, an integer constant register count"};
    uint64_t count = in.operands[0].bits;
    if (count < 24 || count > 256 || count % 8 != 0)
      return Error{"`" + opcode + "` register count " + std::to_string(count) +
                   " is not a multiple of 8 in 24..256"};
  }
  return Status();
}

} // namespace mosaic::emulator
