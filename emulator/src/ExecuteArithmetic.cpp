//===- ExecuteArithmetic.cpp - Arithmetic, comparison, conversion ---------===//
//
// Integer, predicate and float arithmetic, setp/set, selp/slct, testp,
// mov and cvt, each looping over the warp's executing lanes. Semantics
// follow the PTX ISA: integer results wrap to the type's width, float
// arithmetic rounds once in the instruction's mode, conversions saturate
// where the ISA says so.
//
//===----------------------------------------------------------------------===//

#include "Execute.h"

#include "mosaic/Emulator/Numerics.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <limits>

namespace mosaic::emulator {

namespace {

/// Sets the host rounding mode for one f32/f64 operation.
class RoundingScope {
public:
  explicit RoundingScope(Rounding rounding) {
    int mode = FE_TONEAREST;
    switch (rounding) {
    case Rounding::Rz:
      mode = FE_TOWARDZERO;
      break;
    case Rounding::Rm:
      mode = FE_DOWNWARD;
      break;
    case Rounding::Rp:
      mode = FE_UPWARD;
      break;
    default:
      break;
    }
    changed = mode != FE_TONEAREST;
    if (changed)
      std::fesetround(mode);
  }
  ~RoundingScope() {
    if (changed)
      std::fesetround(FE_TONEAREST);
  }

private:
  bool changed = false;
};

RoundingMode toMode(Rounding rounding) {
  switch (rounding) {
  case Rounding::Rz:
    return RoundingMode::TowardZero;
  case Rounding::Rm:
    return RoundingMode::Down;
  case Rounding::Rp:
    return RoundingMode::Up;
  case Rounding::Rna:
    return RoundingMode::NearestAway;
  default:
    return RoundingMode::NearestEven;
  }
}

std::optional<FloatFormat> formatOf(Type type) {
  switch (type) {
  case Type::F16:
  case Type::F16x2:
    return FloatFormat::F16;
  case Type::BF16:
  case Type::BF16x2:
    return FloatFormat::BF16;
  case Type::TF32:
    return FloatFormat::TF32;
  case Type::E4M3:
  case Type::E4M3x2:
    return FloatFormat::E4M3;
  case Type::E5M2:
  case Type::E5M2x2:
    return FloatFormat::E5M2;
  case Type::F32:
    return FloatFormat::F32;
  default:
    return std::nullopt;
  }
}

/// Reads a float operand of `type` (scalar) as a double.
double toDouble(uint64_t bits, Type type) {
  if (type == Type::F64)
    return bitsToDouble(bits);
  if (type == Type::F32)
    return bitsToFloat(static_cast<uint32_t>(bits));
  return decodeFloat(static_cast<uint32_t>(bits), *formatOf(type));
}

uint64_t fromDouble(double value, Type type, Rounding rounding,
                    ConvertFlags flags = {}) {
  if (type == Type::F64)
    return doubleToBits(value);
  if (type == Type::F32 && !flags.satfinite && !flags.relu && !flags.saturate) {
    RoundingScope scope(rounding);
    volatile double source = value;
    float result = static_cast<float>(source);
    return floatToBits(result);
  }
  return encodeFloat(value, *formatOf(type), toMode(rounding), flags);
}

} // namespace

namespace {

int clz64(uint64_t value, unsigned bits) {
  if (value == 0)
    return static_cast<int>(bits);
  return __builtin_clzll(value) - (64 - static_cast<int>(bits));
}

double floatMin(double a, double b, bool nanMode) {
  if (std::isnan(a) || std::isnan(b)) {
    if (nanMode || (std::isnan(a) && std::isnan(b)))
      return std::numeric_limits<double>::quiet_NaN();
    return std::isnan(a) ? b : a;
  }
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

double floatMax(double a, double b, bool nanMode) {
  if (std::isnan(a) || std::isnan(b)) {
    if (nanMode || (std::isnan(a) && std::isnan(b)))
      return std::numeric_limits<double>::quiet_NaN();
    return std::isnan(a) ? b : a;
  }
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

} // namespace

/// A float operation on scalar or packed (x2) operands.
bool Exec::floatOp(uint32_t mask) {
  Type type = in.type;
  bool packed = type == Type::F16x2 || type == Type::BF16x2;
  Type scalar = type == Type::F16x2    ? Type::F16
                : type == Type::BF16x2 ? Type::BF16
                                       : type;
  unsigned lanesPerValue = packed ? 2 : 1;
  unsigned halfBits = packed ? 16 : 0;
  Op op = in.op;
  size_t sources = in.operands.size() - 1;
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint64_t raw[3] = {0, 0, 0};
    for (size_t s = 0; s < sources && s < 3; ++s)
      raw[s] = read(in.operands[1 + s], lane);
    uint64_t result = 0;
    for (unsigned part = 0; part < lanesPerValue; ++part) {
      double v[3] = {0, 0, 0};
      for (size_t s = 0; s < sources && s < 3; ++s) {
        uint64_t bits =
            packed ? (raw[s] >> (part * halfBits)) & 0xffff : raw[s];
        v[s] = toDouble(bits, scalar);
        if (in.ftz && scalar == Type::F32)
          v[s] = flushSubnormal(static_cast<float>(v[s]));
      }
      double r = 0;
      bool exact = false; // computed directly in the destination format
      uint64_t direct = 0;
      switch (op) {
      case Op::Add:
      case Op::Sub:
      case Op::Mul:
      case Op::Div:
        if (scalar == Type::F32) {
          RoundingScope scope(in.rounding);
          volatile float a = static_cast<float>(v[0]);
          volatile float b = static_cast<float>(v[1]);
          float f = op == Op::Add   ? a + b
                    : op == Op::Sub ? a - b
                    : op == Op::Mul ? a * b
                                    : a / b;
          direct = floatToBits(f);
          exact = true;
        } else if (scalar == Type::F64) {
          RoundingScope scope(in.rounding);
          volatile double a = v[0], b = v[1];
          direct = doubleToBits(op == Op::Add   ? a + b
                                : op == Op::Sub ? a - b
                                : op == Op::Mul ? a * b
                                                : a / b);
          exact = true;
        } else {
          r = op == Op::Add   ? v[0] + v[1]
              : op == Op::Sub ? v[0] - v[1]
              : op == Op::Mul ? v[0] * v[1]
                              : v[0] / v[1];
        }
        break;
      case Op::Fma:
      case Op::Mad:
        if (scalar == Type::F32) {
          RoundingScope scope(in.rounding);
          volatile float a = static_cast<float>(v[0]);
          volatile float b = static_cast<float>(v[1]);
          volatile float c = static_cast<float>(v[2]);
          direct = floatToBits(std::fma(a, b, c));
          exact = true;
        } else if (scalar == Type::F64) {
          RoundingScope scope(in.rounding);
          volatile double a = v[0], b = v[1], c = v[2];
          direct = doubleToBits(std::fma(a, b, c));
          exact = true;
        } else {
          r = std::fma(v[0], v[1], v[2]);
        }
        break;
      case Op::Neg:
        r = -v[0];
        break;
      case Op::Abs:
        r = std::fabs(v[0]);
        break;
      case Op::Min:
        r = floatMin(in.abs ? std::fabs(v[0]) : v[0],
                     in.abs ? std::fabs(v[1]) : v[1], in.nan);
        break;
      case Op::Max:
        r = floatMax(in.abs ? std::fabs(v[0]) : v[0],
                     in.abs ? std::fabs(v[1]) : v[1], in.nan);
        break;
      case Op::Rcp:
        r = 1.0 / v[0];
        break;
      case Op::Sqrt:
        r = std::sqrt(v[0]);
        break;
      case Op::Rsqrt:
        r = 1.0 / std::sqrt(v[0]);
        break;
      case Op::Ex2:
        r = std::exp2(v[0]);
        break;
      case Op::Lg2:
        r = std::log2(v[0]);
        break;
      case Op::Sin:
        r = std::sin(v[0]);
        break;
      case Op::Cos:
        r = std::cos(v[0]);
        break;
      case Op::Tanh:
        r = std::tanh(v[0]);
        break;
      case Op::Copysign:
        r = std::copysign(v[1], v[0]);
        break;
      default:
        return fail("unsupported float operation");
      }
      uint64_t bits;
      if (exact) {
        bits = direct;
        if (in.sat || in.ftz) {
          double value = toDouble(bits, scalar);
          if (in.sat)
            value =
                std::isnan(value) ? 0.0 : std::fmin(std::fmax(value, 0.0), 1.0);
          if (in.ftz && scalar == Type::F32)
            value = flushSubnormal(static_cast<float>(value));
          bits = fromDouble(value, scalar, Rounding::Rn);
        }
      } else {
        if (in.sat)
          r = std::isnan(r) ? 0.0 : std::fmin(std::fmax(r, 0.0), 1.0);
        if (in.relu && (r < 0 || std::isnan(r)))
          r = std::isnan(r) ? r : 0.0;
        if (in.ftz && scalar == Type::F32)
          r = flushSubnormal(static_cast<float>(r));
        Rounding rounding = in.rounding;
        bits = fromDouble(r, scalar, rounding);
        if (in.ftz && scalar == Type::F32)
          bits = floatToBits(
              flushSubnormal(bitsToFloat(static_cast<uint32_t>(bits))));
      }
      result |= (packed ? (bits & 0xffff) : bits) << (part * halfBits);
    }
    write(in.operands[0], lane, result, Type::None);
  }
  return true;
}

bool Exec::integerOp(uint32_t mask) {
  unsigned bits = typeBits(in.type);
  bool sign = isSigned(in.type);
  Op op = in.op;
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    size_t n = in.operands.size();
    uint64_t a = n > 1 ? read(in.operands[1], lane) : 0;
    uint64_t b = n > 2 ? read(in.operands[2], lane) : 0;
    uint64_t c = n > 3 ? read(in.operands[3], lane) : 0;
    uint64_t m = widthMask(bits);
    int64_t sa = signExtend(a, bits), sb = signExtend(b, bits);
    uint64_t ua = a & m, ub = b & m;
    uint64_t r = 0;
    unsigned resultBits = bits;
    // PTX ISA, extended-precision integer arithmetic: addc, subc and madc
    // add (subtract) the carry (borrow) flag; `.cc` writes the carry out
    // of the addition (the borrow out of the subtraction).
    uint64_t carryIn = (op == Op::Addc || op == Op::Subc || op == Op::Madc)
                           ? (warp.carry >> lane & 1)
                           : 0;
    unsigned __int128 wideSum = 0;
    switch (op) {
    case Op::Addc:
      wideSum = static_cast<unsigned __int128>(ua) + ub + carryIn;
      r = static_cast<uint64_t>(wideSum);
      break;
    case Op::Subc:
      r = a - b - carryIn;
      break;
    case Op::Add:
      if (in.carryOut) {
        wideSum = static_cast<unsigned __int128>(ua) + ub;
        r = static_cast<uint64_t>(wideSum);
      } else if (in.sat && sign && bits == 32) {
        int64_t s = sa + sb;
        r = static_cast<uint64_t>(std::clamp<int64_t>(s, INT32_MIN, INT32_MAX));
      } else {
        r = a + b;
      }
      break;
    case Op::Sub:
      if (in.sat && sign && bits == 32) {
        int64_t s = sa - sb;
        r = static_cast<uint64_t>(std::clamp<int64_t>(s, INT32_MIN, INT32_MAX));
      } else {
        r = a - b;
      }
      break;
    case Op::Mul:
    case Op::Mad:
    case Op::Madc:
    case Op::Mul24:
    case Op::Mad24: {
      if (op == Op::Mul24 || op == Op::Mad24) {
        sa = signExtend(a, 24);
        sb = signExtend(b, 24);
        ua = a & 0xffffff;
        ub = b & 0xffffff;
      }
      unsigned __int128 product;
      if (sign)
        product = static_cast<unsigned __int128>(static_cast<__int128>(sa) *
                                                 static_cast<__int128>(sb));
      else
        product = static_cast<unsigned __int128>(ua) * ub;
      if (in.wide) {
        r = static_cast<uint64_t>(product);
        resultBits = bits * 2;
      } else if (in.hi) {
        r = static_cast<uint64_t>(product >> bits);
      } else {
        r = static_cast<uint64_t>(product);
      }
      if (op == Op::Mad || op == Op::Mad24 || op == Op::Madc) {
        wideSum = static_cast<unsigned __int128>(r & m) + (c & m) + carryIn;
        r += c + carryIn;
      }
      break;
    }
    case Op::Div:
      if (ub == 0)
        r = sign ? (sa < 0 ? 1 : m) : m; // undefined by the ISA; a value
      else if (sign)
        // Negated in 64 unsigned bits: the most negative value stays itself,
        // as on the hardware (negating it as int64_t overflows).
        r = sb == -1 ? 0 - static_cast<uint64_t>(sa)
                     : static_cast<uint64_t>(sa / sb);
      else
        r = ua / ub;
      break;
    case Op::Rem:
      if (ub == 0)
        r = a;
      else if (sign)
        r = static_cast<uint64_t>(sb == -1 ? 0 : sa % sb);
      else
        r = ua % ub;
      break;
    case Op::Abs:
      r = sa < 0 ? 0 - static_cast<uint64_t>(sa) : static_cast<uint64_t>(sa);
      break;
    case Op::Neg:
      r = 0 - static_cast<uint64_t>(sa);
      break;
    case Op::Min:
      r = sign ? static_cast<uint64_t>(std::min(sa, sb)) : std::min(ua, ub);
      break;
    case Op::Max:
      r = sign ? static_cast<uint64_t>(std::max(sa, sb)) : std::max(ua, ub);
      break;
    case Op::And:
      r = a & b;
      break;
    case Op::Or:
      r = a | b;
      break;
    case Op::Xor:
      r = a ^ b;
      break;
    case Op::Not:
      r = ~a;
      break;
    case Op::Cnot:
      r = (a & m) == 0;
      break;
    case Op::Shl:
      r = (b & 0xffffffff) >= bits ? 0 : a << (b & 0xffffffff);
      break;
    case Op::Shr: {
      uint64_t shift = b & 0xffffffff;
      if (sign)
        r = static_cast<uint64_t>(sa >> std::min<uint64_t>(shift, bits - 1));
      else
        r = shift >= bits ? 0 : ua >> shift;
      break;
    }
    case Op::Popc:
      r = __builtin_popcountll(ua);
      resultBits = 32;
      break;
    case Op::Clz:
      r = clz64(ua, bits);
      resultBits = 32;
      break;
    case Op::Brev: {
      r = 0;
      for (unsigned i = 0; i < bits; ++i)
        if (ua >> i & 1)
          r |= 1ull << (bits - 1 - i);
      break;
    }
    case Op::Bfind: {
      int position = -1;
      uint64_t value = sign && sa < 0 ? ~ua & m : ua;
      for (int i = static_cast<int>(bits) - 1; i >= 0; --i)
        if (value >> i & 1) {
          position = i;
          break;
        }
      if (position < 0)
        r = 0xffffffff;
      else
        r = in.variant == 1 ? bits - 1 - position : position;
      resultBits = 32;
      break;
    }
    case Op::Bfe: {
      uint64_t position = b & 0xff, length = c & 0xff;
      uint64_t field = 0;
      for (uint64_t i = 0; i < length && i < bits; ++i) {
        uint64_t source = position + i;
        uint64_t bit = source < bits ? (ua >> source) & 1
                                     : (sign ? (ua >> (bits - 1)) & 1 : 0);
        field |= bit << i;
      }
      if (sign && length > 0 && length < 64) {
        uint64_t top = position + length - 1;
        uint64_t sbit = top < bits ? (ua >> top) & 1 : (ua >> (bits - 1)) & 1;
        if (sbit)
          field |= ~widthMask(static_cast<unsigned>(length));
      }
      r = field;
      break;
    }
    case Op::Bfi: {
      uint64_t d = n > 4 ? read(in.operands[4], lane) : 0;
      uint64_t position = c & 0xff, length = d & 0xff;
      r = b;
      for (uint64_t i = 0; i < length && position + i < bits; ++i) {
        uint64_t bit = (a >> i) & 1;
        r = (r & ~(1ull << (position + i))) | (bit << (position + i));
      }
      break;
    }
    case Op::Prmt: {
      uint64_t bytes = (a & 0xffffffff) | ((b & 0xffffffff) << 32);
      uint32_t selector = static_cast<uint32_t>(c);
      uint32_t out = 0;
      if (in.variant == 0) {
        for (int i = 0; i < 4; ++i) {
          uint32_t s = (selector >> (4 * i)) & 0xf;
          uint32_t byte = (bytes >> (8 * (s & 7))) & 0xff;
          if (s & 8)
            byte = (byte & 0x80) ? 0xff : 0;
          out |= byte << (8 * i);
        }
      } else {
        return fail("prmt modes other than the default are not supported");
      }
      r = out;
      break;
    }
    case Op::Lop3: {
      uint32_t lut = static_cast<uint32_t>(read(in.operands[4], lane));
      r = 0;
      for (unsigned i = 0; i < bits; ++i) {
        unsigned index =
            ((a >> i & 1) << 2) | ((b >> i & 1) << 1) | (c >> i & 1);
        r |= static_cast<uint64_t>((lut >> index) & 1) << i;
      }
      break;
    }
    case Op::Shf: {
      uint64_t shift = c & 0xffffffff;
      shift = in.shiftClamp ? std::min<uint64_t>(shift, 32) : shift & 31;
      uint64_t wide = (b << 32) | (a & 0xffffffff);
      if (in.variant == 1) // .l
        r = (wide << shift) >> 32;
      else
        r = wide >> shift;
      resultBits = 32;
      break;
    }
    default:
      return fail("unsupported integer operation");
    }
    if (in.carryOut) {
      bool out = (op == Op::Sub || op == Op::Subc)
                     ? static_cast<unsigned __int128>(ua) <
                           static_cast<unsigned __int128>(ub) + carryIn
                     : static_cast<bool>((wideSum >> bits) & 1);
      warp.carry = (warp.carry & ~(1u << lane)) | (uint32_t(out) << lane);
    }
    write(in.operands[0], lane, r & widthMask(resultBits), Type::None);
  }
  return true;
}

bool Exec::arithmetic(uint32_t mask) {
  if (isFloatType(in.type) || in.type == Type::F64)
    return floatOp(mask);
  if (in.type == Type::Pred) {
    for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
      uint32_t lane = __builtin_ctz(lanes);
      uint64_t a = read(in.operands[1], lane) & 1;
      uint64_t b = in.operands.size() > 2 ? read(in.operands[2], lane) & 1 : 0;
      uint64_t r = in.op == Op::And   ? (a & b)
                   : in.op == Op::Or  ? (a | b)
                   : in.op == Op::Xor ? (a ^ b)
                                      : !a;
      write(in.operands[0], lane, r, Type::Pred);
    }
    return true;
  }
  return integerOp(mask);
}

bool Exec::setp(uint32_t mask) {
  size_t n = in.operands.size();
  size_t destinations = n - 2 - (in.boolOp ? 1 : 0);
  if (destinations < 1 || destinations > 2)
    return fail("malformed setp");
  Type type = in.type;
  bool isFloat = isFloatType(type);
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint64_t a = read(in.operands[destinations], lane);
    uint64_t b = read(in.operands[destinations + 1], lane);
    bool result;
    if (isFloat) {
      double x = toDouble(a, type), y = toDouble(b, type);
      if (in.ftz && type == Type::F32) {
        x = flushSubnormal(static_cast<float>(x));
        y = flushSubnormal(static_cast<float>(y));
      }
      bool unordered = std::isnan(x) || std::isnan(y);
      switch (in.compare) {
      case Compare::Eq:
        result = !unordered && x == y;
        break;
      case Compare::Ne:
        result = !unordered && x != y;
        break;
      case Compare::Lt:
        result = !unordered && x < y;
        break;
      case Compare::Le:
        result = !unordered && x <= y;
        break;
      case Compare::Gt:
        result = !unordered && x > y;
        break;
      case Compare::Ge:
        result = !unordered && x >= y;
        break;
      case Compare::Equ:
        result = unordered || x == y;
        break;
      case Compare::Neu:
        result = unordered || x != y;
        break;
      case Compare::Ltu:
        result = unordered || x < y;
        break;
      case Compare::Leu:
        result = unordered || x <= y;
        break;
      case Compare::Gtu:
        result = unordered || x > y;
        break;
      case Compare::Geu:
        result = unordered || x >= y;
        break;
      case Compare::Num:
        result = !unordered;
        break;
      case Compare::Nan:
        result = unordered;
        break;
      default:
        return fail("integer comparison on a float type");
      }
    } else {
      unsigned bits = typeBits(type);
      bool sign = isSigned(type);
      int64_t sa = signExtend(a, bits), sb = signExtend(b, bits);
      uint64_t ua = a & widthMask(bits), ub = b & widthMask(bits);
      switch (in.compare) {
      case Compare::Eq:
        result = ua == ub;
        break;
      case Compare::Ne:
        result = ua != ub;
        break;
      case Compare::Lt:
        result = sign ? sa < sb : ua < ub;
        break;
      case Compare::Le:
        result = sign ? sa <= sb : ua <= ub;
        break;
      case Compare::Gt:
        result = sign ? sa > sb : ua > ub;
        break;
      case Compare::Ge:
        result = sign ? sa >= sb : ua >= ub;
        break;
      case Compare::Lo:
        result = ua < ub;
        break;
      case Compare::Ls:
        result = ua <= ub;
        break;
      case Compare::Hi:
        result = ua > ub;
        break;
      case Compare::Hs:
        result = ua >= ub;
        break;
      default:
        return fail("float comparison on an integer type");
      }
    }
    bool p = result, q = !result;
    if (in.boolOp) {
      bool c = read(in.operands[n - 1], lane) & 1;
      auto combine = [&](bool v) {
        return in.boolOp == 1 ? (v && c) : in.boolOp == 2 ? (v || c) : (v != c);
      };
      p = combine(p);
      q = combine(q);
    }
    if (in.op == Op::Set) {
      uint64_t value =
          p ? (isFloatType(in.type2) ? floatToBits(1.0f) : 0xffffffffull) : 0;
      write(in.operands[0], lane, value, Type::None);
      continue;
    }
    write(in.operands[0], lane, p, Type::Pred);
    if (destinations == 2)
      write(in.operands[1], lane, q, Type::Pred);
  }
  return true;
}

bool Exec::convert(uint32_t mask) {
  Type to = in.type, from = in.type2;
  size_t n = in.operands.size();
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint64_t a = read(in.operands[1], lane);
    ConvertFlags flags;
    flags.satfinite = in.satfinite;
    flags.relu = in.relu;
    uint64_t result = 0;
    // Two sources packed into one destination: cvt.rn.bf16x2.f32 d, hi, lo.
    if ((to == Type::F16x2 || to == Type::BF16x2 || to == Type::E4M3x2 ||
         to == Type::E5M2x2) &&
        (from == Type::F32 || from == Type::F16x2 || from == Type::BF16x2) &&
        n == 3) {
      uint64_t b = read(in.operands[2], lane);
      Type half = to == Type::F16x2    ? Type::F16
                  : to == Type::BF16x2 ? Type::BF16
                  : to == Type::E4M3x2 ? Type::E4M3
                                       : Type::E5M2;
      unsigned width = typeBits(half);
      Rounding rounding =
          in.rounding == Rounding::Default ? Rounding::Rn : in.rounding;
      uint64_t hi = fromDouble(toDouble(a, from), half, rounding, flags);
      uint64_t lo = fromDouble(toDouble(b, from), half, rounding, flags);
      result = (hi << width) | (lo & widthMask(width));
      write(in.operands[0], lane, result, Type::None);
      continue;
    }
    // Packed narrow to packed wider: cvt.rn.f16x2.e4m3x2 d, a.
    if ((from == Type::E4M3x2 || from == Type::E5M2x2) &&
        (to == Type::F16x2 || to == Type::BF16x2)) {
      Type source = from == Type::E4M3x2 ? Type::E4M3 : Type::E5M2;
      Type half = to == Type::F16x2 ? Type::F16 : Type::BF16;
      uint64_t lo = fromDouble(toDouble(a & 0xff, source), half, Rounding::Rn);
      uint64_t hi =
          fromDouble(toDouble((a >> 8) & 0xff, source), half, Rounding::Rn);
      write(in.operands[0], lane, (hi << 16) | lo, Type::None);
      continue;
    }
    bool fromFloat = isFloatType(from) || from == Type::F64;
    bool toFloat = isFloatType(to) || to == Type::F64;
    if (fromFloat && toFloat) {
      double value = toDouble(a, from);
      if (in.ftz && from == Type::F32)
        value = flushSubnormal(static_cast<float>(value));
      if (in.roundToInteger) {
        RoundingMode mode = toMode(in.rounding);
        value = mode == RoundingMode::NearestEven  ? std::nearbyint(value)
                : mode == RoundingMode::TowardZero ? std::trunc(value)
                : mode == RoundingMode::Down       ? std::floor(value)
                                                   : std::ceil(value);
      }
      if (in.sat)
        value = std::isnan(value) ? 0.0 : std::fmin(std::fmax(value, 0.0), 1.0);
      Rounding rounding = in.rounding == Rounding::Default || in.roundToInteger
                              ? Rounding::Rn
                              : in.rounding;
      result = fromDouble(value, to, rounding, flags);
      if (in.ftz && to == Type::F32)
        result = floatToBits(
            flushSubnormal(bitsToFloat(static_cast<uint32_t>(result))));
    } else if (fromFloat) {
      double value = toDouble(a, from);
      if (in.ftz && from == Type::F32)
        value = flushSubnormal(static_cast<float>(value));
      RoundingMode mode =
          toMode(in.rounding == Rounding::Default ? Rounding::Rz : in.rounding);
      value = mode == RoundingMode::NearestEven  ? std::nearbyint(value)
              : mode == RoundingMode::TowardZero ? std::trunc(value)
              : mode == RoundingMode::Down       ? std::floor(value)
                                                 : std::ceil(value);
      unsigned bits = typeBits(to);
      if (std::isnan(value)) {
        result = 0;
      } else if (isSigned(to)) {
        double lo = -std::ldexp(1.0, bits - 1),
               hi = std::ldexp(1.0, bits - 1) - 1;
        int64_t v = value <= lo ? static_cast<int64_t>(lo)
                    : value >= hi
                        ? (bits == 64 ? INT64_MAX : static_cast<int64_t>(hi))
                        : static_cast<int64_t>(value);
        result = static_cast<uint64_t>(v) & widthMask(bits);
      } else {
        double hi = std::ldexp(1.0, bits) - 1;
        result = value <= 0    ? 0
                 : value >= hi ? widthMask(bits)
                               : static_cast<uint64_t>(value);
      }
    } else if (toFloat) {
      unsigned bits = typeBits(from);
      double value = isSigned(from) ? static_cast<double>(signExtend(a, bits))
                                    : static_cast<double>(a & widthMask(bits));
      if (bits == 64) {
        // 64-bit integers do not fit a double exactly; round once.
        RoundingScope scope(in.rounding);
        volatile uint64_t raw = a;
        if (to == Type::F32)
          result = floatToBits(
              isSigned(from) ? static_cast<float>(static_cast<int64_t>(raw))
                             : static_cast<float>(raw));
        else
          result = doubleToBits(
              isSigned(from) ? static_cast<double>(static_cast<int64_t>(raw))
                             : static_cast<double>(raw));
        write(in.operands[0], lane, result, Type::None);
        continue;
      }
      Rounding rounding =
          in.rounding == Rounding::Default ? Rounding::Rn : in.rounding;
      result = fromDouble(value, to, rounding, flags);
    } else {
      unsigned fromBits = typeBits(from), toBits = typeBits(to);
      if (from == Type::Pred)
        fromBits = 1;
      int64_t value = isSigned(from)
                          ? signExtend(a, fromBits)
                          : static_cast<int64_t>(a & widthMask(fromBits));
      if (in.sat) {
        if (isSigned(to)) {
          int64_t lo = -(int64_t(1) << (toBits - 1)),
                  hi = (int64_t(1) << (toBits - 1)) - 1;
          if (!isSigned(from) && (a & widthMask(fromBits)) > uint64_t(hi))
            value = hi;
          else
            value = std::clamp(value, lo, hi);
        } else {
          uint64_t hi = widthMask(toBits);
          if (isSigned(from) && value < 0)
            value = 0;
          else if (static_cast<uint64_t>(value) > hi)
            value = static_cast<int64_t>(hi);
        }
      }
      result = static_cast<uint64_t>(value) & widthMask(toBits);
      // Widening a signed source into a wider register keeps the sign.
      if (isSigned(to))
        result = static_cast<uint64_t>(signExtend(result, toBits));
    }
    write(in.operands[0], lane, result, to);
  }
  return true;
}

bool Exec::move(uint32_t mask) {
  const Operand &destination = in.operands[0];
  const Operand &source = in.operands[1];
  unsigned bits = typeBits(in.type);
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    if (source.kind == Operand::Kind::Vector) {
      // Pack: the first element is the least significant.
      unsigned part = bits / source.count;
      uint64_t value = 0;
      for (uint32_t i = 0; i < source.count; ++i)
        value |= (readElement(function.vectorSlots[source.first + i], lane) &
                  widthMask(part))
                 << (i * part);
      write(destination, lane, value, Type::None);
    } else if (destination.kind == Operand::Kind::Vector) {
      uint64_t value = read(source, lane);
      unsigned part = bits / destination.count;
      for (uint32_t i = 0; i < destination.count; ++i) {
        const VectorElement &element =
            function.vectorSlots[destination.first + i];
        if (element.reg >= 0)
          writeSlot(element.reg, lane, (value >> (i * part)) & widthMask(part),
                    Type::None);
      }
    } else if (source.kind == Operand::Kind::Symbol &&
               source.symbolSpace == Space::Generic) {
      return fail("mov of a label");
    } else {
      write(destination, lane, read(source, lane), Type::None);
    }
  }
  return true;
}

bool Exec::select(uint32_t mask) {
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint64_t a = read(in.operands[1], lane), b = read(in.operands[2], lane);
    uint64_t c = read(in.operands[3], lane);
    bool pick;
    if (in.op == Op::Selp) {
      pick = c & 1;
    } else {
      // slct.dtype.s32 / .f32: a if c >= 0.
      pick = in.type2 == Type::F32 ? bitsToFloat(static_cast<uint32_t>(c)) >= 0
                                   : static_cast<int32_t>(c) >= 0;
    }
    write(in.operands[0], lane, pick ? a : b, Type::None);
  }
  return true;
}

bool Exec::testp(uint32_t mask) {
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    double v = toDouble(read(in.operands[1], lane), in.type);
    int category =
        std::fpclassify(in.type == Type::F32 ? static_cast<float>(v) : v);
    bool r = false;
    switch (in.variant) {
    case 1:
      r = std::isfinite(v);
      break;
    case 2:
      r = std::isinf(v);
      break;
    case 3:
      r = !std::isnan(v);
      break;
    case 4:
      r = std::isnan(v);
      break;
    case 5:
      r = category == FP_NORMAL;
      break;
    case 6:
      r = category == FP_SUBNORMAL;
      break;
    }
    write(in.operands[0], lane, r, Type::Pred);
  }
  return true;
}

} // namespace mosaic::emulator
