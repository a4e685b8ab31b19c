//===- Execute.cpp - Instruction semantics ------------------------------===//
//
// One function per instruction family, each looping over the warp's
// executing lanes. Semantics follow the PTX ISA: integer results wrap to
// the type's width, float arithmetic rounds once in the instruction's mode,
// conversions saturate where the ISA says so. The asynchronous families
// (mbarrier, TMA, wgmma) are in Async.cpp.
//
//===----------------------------------------------------------------------===//

#include "Execute.h"

#include "Hazards.h"
#include "mosaic/Emulator/Numerics.h"

#include <cfenv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

namespace mosaic::emulator {

namespace {

uint64_t widthMask(unsigned bits) {
  return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

int64_t signExtend(uint64_t value, unsigned bits) {
  if (bits >= 64)
    return static_cast<int64_t>(value);
  uint64_t sign = 1ull << (bits - 1);
  value &= widthMask(bits);
  return static_cast<int64_t>((value ^ sign) - sign);
}

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

std::string hexMask(uint32_t mask) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", mask);
  return text;
}

// --- Operand access -------------------------------------------------------

uint64_t Exec::special(Special which, uint32_t lane) const {
  const LaunchConfig &config = *launch.config;
  uint32_t thread = warp.index * 32 + lane;
  const auto &block = config.block;
  switch (which) {
  case Special::TidX:
    return thread % block[0];
  case Special::TidY:
    return (thread / block[0]) % block[1];
  case Special::TidZ:
    return thread / (block[0] * block[1]);
  case Special::NtidX:
    return block[0];
  case Special::NtidY:
    return block[1];
  case Special::NtidZ:
    return block[2];
  case Special::CtaidX:
    return cta.id[0];
  case Special::CtaidY:
    return cta.id[1];
  case Special::CtaidZ:
    return cta.id[2];
  case Special::NctaidX:
    return config.grid[0];
  case Special::NctaidY:
    return config.grid[1];
  case Special::NctaidZ:
    return config.grid[2];
  case Special::LaneId:
    return lane;
  case Special::WarpId:
    return warp.index;
  case Special::NWarpId:
    return 64;
  case Special::SmId:
    return cta.rank;
  case Special::NSmId:
    return 132;
  case Special::GridId:
    return 1;
  case Special::ClusterIdX:
    return cluster.id[0];
  case Special::ClusterIdY:
    return cluster.id[1];
  case Special::ClusterIdZ:
    return cluster.id[2];
  case Special::NClusterIdX:
    return config.grid[0] / config.cluster[0];
  case Special::NClusterIdY:
    return config.grid[1] / config.cluster[1];
  case Special::NClusterIdZ:
    return config.grid[2] / config.cluster[2];
  case Special::ClusterCtaidX:
    return cta.clusterCtaId[0];
  case Special::ClusterCtaidY:
    return cta.clusterCtaId[1];
  case Special::ClusterCtaidZ:
    return cta.clusterCtaId[2];
  case Special::ClusterNctaidX:
    return config.cluster[0];
  case Special::ClusterNctaidY:
    return config.cluster[1];
  case Special::ClusterNctaidZ:
    return config.cluster[2];
  case Special::ClusterCtarank:
    return cta.rank;
  case Special::ClusterNctarank:
    return config.cluster[0] * config.cluster[1] * config.cluster[2];
  case Special::IsExplicitCluster:
    return config.cluster[0] * config.cluster[1] * config.cluster[2] > 1;
  case Special::LanemaskEq:
    return 1u << lane;
  case Special::LanemaskLt:
    return (1u << lane) - 1;
  case Special::LanemaskLe:
    return static_cast<uint32_t>((2ull << lane) - 1);
  case Special::LanemaskGt:
    return ~static_cast<uint32_t>((2ull << lane) - 1);
  case Special::LanemaskGe:
    return ~((1u << lane) - 1);
  case Special::Clock:
  case Special::Clock64:
    return cluster.instructions;
  case Special::GlobalTimer:
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now().time_since_epoch())
            .count());
  case Special::DynamicSmemSize:
    return config.dynamicSharedBytes;
  case Special::TotalSmemSize:
    return launch.sharedBytes;
  }
  return 0;
}

uint64_t Exec::read(const Operand &operand, uint32_t lane) const {
  uint64_t value = 0;
  switch (operand.kind) {
  case Operand::Kind::Register:
    value = warp.regs[operand.reg * 32 + lane];
    break;
  case Operand::Kind::Immediate:
  case Operand::Kind::Symbol:
    value = operand.bits;
    break;
  case Operand::Kind::Special:
    value = special(operand.special, lane);
    break;
  default:
    break;
  }
  if (operand.negated)
    value = !(value & 1);
  return value;
}

uint64_t Exec::readElement(const VectorElement &element, uint32_t lane) const {
  if (element.reg >= 0)
    return warp.regs[element.reg * 32 + lane];
  return element.bits;
}

void Exec::write(const Operand &operand, uint32_t lane, uint64_t value,
                 Type type) {
  if (operand.kind != Operand::Kind::Register)
    return;
  writeSlot(operand.reg, lane, value, type);
}

void Exec::writeSlot(int32_t slot, uint32_t lane, uint64_t value, Type type) {
  Type declared = function.registerTypes[slot];
  unsigned bits = declared == Type::Pred ? 1 : typeBits(declared);
  if (type != Type::None && typeBits(type) < bits && isSigned(type))
    value = static_cast<uint64_t>(signExtend(value, typeBits(type)));
  warp.regs[slot * 32 + lane] = value & widthMask(bits);
  if (!warp.lastWrite.empty()) {
    warp.lastWrite[slot] = warp.sequence;
    warp.lastWritePc[slot] = pc;
  }
}

uint64_t Exec::address(const Operand &operand, uint32_t lane) const {
  uint64_t base = operand.reg >= 0 ? warp.regs[operand.reg * 32 + lane] : 0;
  return base + static_cast<uint64_t>(operand.offset);
}

bool Exec::fail(const std::string &message, int lane) {
  fault.message =
      describeLocation(launch, cta, warp.index, lane, pc) + ": " + message;
  return false;
}

bool Exec::hazard(const std::string &message, int lane) {
  cluster.hazards->flag("hazard: " + message + "\n  at " +
                        describeLocation(launch, cta, warp.index, lane, pc));
  return true;
}

void Exec::report(const std::optional<Finding> &finding) {
  if (finding)
    hazard(finding->message, finding->lane);
}

std::optional<SharedLocation> Exec::resolveShared(uint64_t sharedAddress,
                                                  bool clusterWindow,
                                                  unsigned bytes,
                                                  uint32_t lane) {
  Cta *target = &cta;
  uint64_t offset = sharedAddress;
  if (sharedAddress >= (1ull << 32)) {
    fail("shared address " + std::to_string(sharedAddress) +
             " is outside the shared window",
         static_cast<int>(lane));
    return std::nullopt;
  }
  uint32_t rank = static_cast<uint32_t>(sharedAddress >> kClusterRankShift);
  if (rank) {
    if (!clusterWindow) {
      fail("a .shared::cta access with the shared::cluster address " +
               std::to_string(sharedAddress) + " of another CTA",
           static_cast<int>(lane));
      return std::nullopt;
    }
    if (rank - 1 >= cluster.ctas.size()) {
      fail("shared::cluster address " + std::to_string(sharedAddress) +
               " names CTA rank " + std::to_string(rank - 1) +
               ", but the cluster has " + std::to_string(cluster.ctas.size()),
           static_cast<int>(lane));
      return std::nullopt;
    }
    target = cluster.ctas[rank - 1].get();
    offset = sharedAddress & ((1u << kClusterRankShift) - 1);
  }
  if (offset < kSharedBase || offset + bytes > target->sharedEnd) {
    fail("shared-memory access of " + std::to_string(bytes) +
             " bytes at address " + std::to_string(offset) +
             " is outside the CTA's shared memory [" +
             std::to_string(kSharedBase) + ", " +
             std::to_string(target->sharedEnd) + ")",
         static_cast<int>(lane));
    return std::nullopt;
  }
  return SharedLocation{target, static_cast<uint32_t>(offset)};
}

uint8_t *Exec::memory(Space space, uint64_t address, unsigned bytes, bool write,
                      uint32_t lane) {
  if (bytes > 1 && address % std::min(bytes, 16u) != 0) {
    fail(
        "misaligned access of " + std::to_string(bytes) + " bytes at 0x" +
            [&] {
              char text[32];
              std::snprintf(text, sizeof(text), "%llx",
                            static_cast<unsigned long long>(address));
              return std::string(text);
            }(),
        static_cast<int>(lane));
    return nullptr;
  }
  if (space == Space::Generic) {
    if (address >= kGenericSharedBase &&
        address < kGenericSharedBase + kWindowSize) {
      space = Space::SharedCluster;
      address -= kGenericSharedBase;
    } else if (address >= kGenericLocalBase &&
               address < kGenericLocalBase + kWindowSize) {
      space = Space::Local;
      address -= kGenericLocalBase;
    } else if (address >= kGenericParamBase &&
               address < kGenericParamBase + kWindowSize) {
      space = Space::Param;
      address -= kGenericParamBase;
    } else {
      space = Space::Global;
    }
  }
  switch (space) {
  case Space::Global:
  case Space::Const: {
    uint8_t *host = launch.memory->translate(address, bytes);
    if (!host)
      host = launch.program->translateGlobalVariable(address, bytes);
    if (!host) {
      char text[160];
      std::snprintf(text, sizeof(text),
                    "global-memory %s of %u bytes at 0x%llx is outside every "
                    "allocation",
                    write ? "write" : "read", bytes,
                    static_cast<unsigned long long>(address));
      fail(text, static_cast<int>(lane));
    }
    return host;
  }
  case Space::Shared:
  case Space::SharedCluster: {
    std::optional<SharedLocation> location =
        resolveShared(address, space == Space::SharedCluster, bytes, lane);
    if (!location)
      return nullptr;
    // Atomics and volatile/relaxed/acquire/release accesses are strong
    // operations: by the PTX memory model they do not race.
    bool strong = in.strong || in.op == Op::Atom || in.op == Op::Red;
    if (location->cta != &cta)
      cluster.hazards->onPeerAccess(*location->cta, warp, lane, pc);
    if (!strong)
      cluster.hazards->onSharedAccess(*location->cta, warp, lane,
                                      location->offset, bytes, write, pc);
    return location->cta->shared.data() + location->offset;
  }
  case Space::Local: {
    uint32_t frame = function.localBytes;
    if (address + bytes > frame) {
      fail("local-memory access at " + std::to_string(address) +
               " is outside the " + std::to_string(frame) + "-byte frame",
           static_cast<int>(lane));
      return nullptr;
    }
    return warp.local.data() + size_t(lane) * frame + address;
  }
  case Space::Param: {
    if (write) {
      fail("kernel parameters are read-only", static_cast<int>(lane));
      return nullptr;
    }
    const std::vector<uint8_t> &parameters = launch.config->parameters;
    if (address + bytes > parameters.size()) {
      fail("parameter access at offset " + std::to_string(address) +
               " is past the " + std::to_string(parameters.size()) +
               "-byte parameter buffer",
           static_cast<int>(lane));
      return nullptr;
    }
    return const_cast<uint8_t *>(parameters.data()) + address;
  }
  case Space::Generic:
    break;
  }
  return nullptr;
}

// --- Control --------------------------------------------------------------

void Exec::advance(uint32_t mask) {
  if (warp.converged && mask == warp.liveMask) {
    ++warp.pc;
    return;
  }
  diverge();
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1)
    ++warp.lanePc[__builtin_ctz(lanes)];
}

void Exec::diverge() {
  if (!warp.converged)
    return;
  for (uint32_t lane = 0; lane < 32; ++lane)
    warp.lanePc[lane] = warp.pc;
  warp.converged = false;
}

void Exec::jump(uint32_t mask, uint32_t target) {
  if (warp.converged && mask == warp.liveMask) {
    warp.pc = target;
    return;
  }
  diverge();
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1)
    warp.lanePc[__builtin_ctz(lanes)] = target;
}

void Exec::exitLanes(uint32_t mask) {
  diverge();
  warp.liveMask &= ~mask;
  if (warp.liveMask == 0) {
    warp.status = WarpStatus::Exited;
    ++cta.exitedWarps;
  }
}

// --- Arithmetic -----------------------------------------------------------

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
        r = static_cast<uint64_t>(sb == -1 ? -sa : sa / sb);
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
      r = static_cast<uint64_t>(sa < 0 ? -sa : sa);
      break;
    case Op::Neg:
      r = static_cast<uint64_t>(-sa);
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

// --- Memory ---------------------------------------------------------------

bool Exec::load(uint32_t mask) {
  unsigned elementBytes = std::max(1u, typeBits(in.type) / 8);
  unsigned count = in.vectorWidth;
  const Operand &destination = in.operands[0];
  const Operand &addressOperand = in.operands[1];
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint64_t at = address(addressOperand, lane);
    uint8_t *host = memory(in.space, at, elementBytes * count, false, lane);
    if (!host)
      return false;
    for (unsigned i = 0; i < count; ++i) {
      uint64_t value = 0;
      std::memcpy(&value, host + i * elementBytes, std::min(elementBytes, 8u));
      if (destination.kind == Operand::Kind::Vector) {
        const VectorElement &element =
            function.vectorSlots[destination.first + i];
        if (element.reg >= 0)
          writeSlot(element.reg, lane, value, in.type);
      } else {
        write(destination, lane, value, in.type);
      }
    }
  }
  return true;
}

bool Exec::store(uint32_t mask) {
  unsigned elementBytes = std::max(1u, typeBits(in.type) / 8);
  unsigned count = in.vectorWidth;
  const Operand &addressOperand = in.operands[0];
  const Operand &source = in.operands[1];
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint64_t at = address(addressOperand, lane);
    uint8_t *host = memory(in.space, at, elementBytes * count, true, lane);
    if (!host)
      return false;
    for (unsigned i = 0; i < count; ++i) {
      uint64_t value =
          source.kind == Operand::Kind::Vector
              ? readElement(function.vectorSlots[source.first + i], lane)
              : read(source, lane);
      std::memcpy(host + i * elementBytes, &value, std::min(elementBytes, 8u));
    }
  }
  return true;
}

namespace {

template <typename T> T atomicApply(uint8_t op, T old, T b, T c) {
  switch (op) {
  case 1:
    return old + b;
  case 2:
    return std::min(old, b);
  case 3:
    return std::max(old, b);
  case 4:
    return old >= b ? 0 : old + 1; // inc
  case 5:
    return (old == 0 || old > b) ? b : old - 1; // dec
  case 9:
    return old == b ? c : old; // cas
  case 10:
    return b; // exch
  default:
    return old;
  }
}

} // namespace

bool Exec::atomic(uint32_t mask) {
  bool isRed = in.op == Op::Red;
  const Operand &addressOperand = in.operands[isRed ? 0 : 1];
  size_t valueIndex = isRed ? 1 : 2;
  unsigned bytes = std::max(1u, typeBits(in.type) / 8);
  Type type = in.type;
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint64_t at = address(addressOperand, lane);
    uint8_t *host = memory(in.space, at, bytes, true, lane);
    if (!host)
      return false;
    uint64_t b = read(in.operands[valueIndex], lane);
    uint64_t c = in.operands.size() > valueIndex + 1
                     ? read(in.operands[valueIndex + 1], lane)
                     : 0;
    uint8_t op = in.variant;
    auto compute = [&](uint64_t old) -> uint64_t {
      if (op == 6)
        return old & b;
      if (op == 7)
        return old | b;
      if (op == 8)
        return old ^ b;
      if (type == Type::F32) {
        float o = bitsToFloat(static_cast<uint32_t>(old));
        float v = bitsToFloat(static_cast<uint32_t>(b));
        float r = op == 1    ? o + v
                  : op == 2  ? std::fmin(o, v)
                  : op == 3  ? std::fmax(o, v)
                  : op == 10 ? v
                  : op == 9
                      ? (old == b ? bitsToFloat(static_cast<uint32_t>(c)) : o)
                      : o;
        return floatToBits(r);
      }
      if (type == Type::F64) {
        double o = bitsToDouble(old), v = bitsToDouble(b);
        return doubleToBits(op == 1 ? o + v : op == 10 ? v : o);
      }
      if (type == Type::F16x2 || type == Type::BF16x2) {
        FloatFormat format =
            type == Type::F16x2 ? FloatFormat::F16 : FloatFormat::BF16;
        uint64_t r = 0;
        for (int part = 0; part < 2; ++part) {
          double o = decodeFloat((old >> (16 * part)) & 0xffff, format);
          double v = decodeFloat((b >> (16 * part)) & 0xffff, format);
          double s = op == 1   ? o + v
                     : op == 2 ? std::fmin(o, v)
                               : std::fmax(o, v);
          r |= uint64_t(encodeFloat(s, format, RoundingMode::NearestEven))
               << (16 * part);
        }
        return r;
      }
      if (bytes == 8)
        return isSigned(type)
                   ? static_cast<uint64_t>(atomicApply<int64_t>(
                         op, static_cast<int64_t>(old), static_cast<int64_t>(b),
                         static_cast<int64_t>(c)))
                   : atomicApply<uint64_t>(op, old, b, c);
      return isSigned(type)
                 ? static_cast<uint32_t>(atomicApply<int32_t>(
                       op, static_cast<int32_t>(old), static_cast<int32_t>(b),
                       static_cast<int32_t>(c)))
                 : atomicApply<uint32_t>(op, static_cast<uint32_t>(old),
                                         static_cast<uint32_t>(b),
                                         static_cast<uint32_t>(c));
    };
    uint64_t old = 0;
    // Global memory is shared with clusters on other host threads.
    if (bytes == 4) {
      auto *word = reinterpret_cast<uint32_t *>(host);
      uint32_t expected = __atomic_load_n(word, __ATOMIC_SEQ_CST);
      while (true) {
        uint32_t desired = static_cast<uint32_t>(compute(expected));
        if (__atomic_compare_exchange_n(word, &expected, desired, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
          break;
      }
      old = expected;
    } else if (bytes == 8) {
      auto *word = reinterpret_cast<uint64_t *>(host);
      uint64_t expected = __atomic_load_n(word, __ATOMIC_SEQ_CST);
      while (true) {
        uint64_t desired = compute(expected);
        if (__atomic_compare_exchange_n(word, &expected, desired, false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
          break;
      }
      old = expected;
    } else {
      return fail("atomics on " + std::to_string(bytes) +
                  "-byte values are not supported");
    }
    if (!isRed)
      write(in.operands[0], lane, old, Type::None);
  }
  return true;
}

bool Exec::convertAddress(uint32_t mask) {
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint64_t a = read(in.operands[1], lane);
    uint64_t r = a;
    Space space = in.space;
    if (!in.to) {
      switch (space) {
      case Space::Shared:
      case Space::SharedCluster:
        r = kGenericSharedBase + (a & 0xffffffffull);
        break;
      case Space::Local:
        r = kGenericLocalBase + a;
        break;
      case Space::Param:
        r = kGenericParamBase + a;
        break;
      default:
        break;
      }
    } else {
      switch (space) {
      case Space::Shared:
      case Space::SharedCluster:
        if (a < kGenericSharedBase || a >= kGenericSharedBase + kWindowSize)
          return fail("cvta.to.shared of a generic address outside the "
                      "shared window",
                      static_cast<int>(lane));
        r = a - kGenericSharedBase;
        break;
      case Space::Local:
        r = a - kGenericLocalBase;
        break;
      case Space::Param:
        r = a - kGenericParamBase;
        break;
      default:
        break;
      }
    }
    write(in.operands[0], lane, r, Type::None);
  }
  return true;
}

bool Exec::isspacep(uint32_t mask) {
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint64_t a = read(in.operands[1], lane);
    bool shared =
        a >= kGenericSharedBase && a < kGenericSharedBase + kWindowSize;
    bool local = a >= kGenericLocalBase && a < kGenericLocalBase + kWindowSize;
    bool param = a >= kGenericParamBase && a < kGenericParamBase + kWindowSize;
    bool r = false;
    switch (in.space) {
    case Space::Shared:
      r = shared && (a - kGenericSharedBase) < (1ull << kClusterRankShift);
      break;
    case Space::SharedCluster:
      r = shared;
      break;
    case Space::Local:
      r = local;
      break;
    case Space::Param:
      r = param;
      break;
    case Space::Global:
    case Space::Const:
      r = !shared && !local && !param;
      break;
    default:
      break;
    }
    write(in.operands[0], lane, r, Type::Pred);
  }
  return true;
}

bool Exec::mapa(uint32_t mask) {
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint64_t a = read(in.operands[1], lane);
    uint32_t rank = static_cast<uint32_t>(read(in.operands[2], lane));
    if (rank >= cluster.ctas.size())
      return fail("mapa to CTA rank " + std::to_string(rank) +
                      ", but the cluster has " +
                      std::to_string(cluster.ctas.size()),
                  static_cast<int>(lane));
    bool generic = in.space == Space::Generic;
    uint64_t shared = generic ? a - kGenericSharedBase : a;
    uint64_t offset = shared & ((1u << kClusterRankShift) - 1);
    uint64_t mapped = (uint64_t(rank + 1) << kClusterRankShift) | offset;
    write(in.operands[0], lane, generic ? kGenericSharedBase + mapped : mapped,
          Type::None);
  }
  return true;
}

// --- Warp-level -----------------------------------------------------------

bool Exec::shuffle(uint32_t mask) {
  // shfl.sync.mode.b32 d[|p], a, b, c, membermask
  size_t n = in.operands.size();
  bool hasPredicate = n == 6;
  size_t base = hasPredicate ? 2 : 1;
  uint64_t values[32];
  for (uint32_t lane = 0; lane < 32; ++lane)
    values[lane] = (mask >> lane & 1) ? read(in.operands[base], lane) : 0;
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint32_t membership =
        static_cast<uint32_t>(read(in.operands[base + 3], lane));
    if ((membership & mask) != membership)
      return fail("shfl.sync member mask " + hexMask(membership) +
                      " names lanes that did not reach it together",
                  static_cast<int>(lane));
    uint32_t b = static_cast<uint32_t>(read(in.operands[base + 1], lane));
    uint32_t c = static_cast<uint32_t>(read(in.operands[base + 2], lane));
    uint32_t clamp = c & 0x1f, segmentMask = (c >> 8) & 0x1f;
    uint32_t minLane = lane & segmentMask;
    uint32_t maxLane = minLane | (clamp & ~segmentMask);
    int64_t j = lane;
    bool valid;
    switch (in.variant) {
    case 1: // up
      j = int64_t(lane) - b;
      valid = j >= int64_t(maxLane);
      break;
    case 2: // down
      j = int64_t(lane) + b;
      valid = j <= int64_t(maxLane);
      break;
    case 3: // bfly
      j = lane ^ b;
      valid = j <= int64_t(maxLane);
      break;
    default: // idx
      j = minLane | (b & 0x1f & ~segmentMask);
      valid = j <= int64_t(maxLane);
      break;
    }
    if (!valid)
      j = lane;
    if (!(mask >> j & 1))
      return fail("shfl.sync reads lane " + std::to_string(j) +
                      ", which is not executing it",
                  static_cast<int>(lane));
    write(in.operands[0], lane, values[j], Type::None);
    if (hasPredicate)
      write(in.operands[1], lane, valid, Type::Pred);
  }
  return true;
}

bool Exec::vote(uint32_t mask) {
  uint32_t ballot = 0;
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    if (read(in.operands[1], lane) & 1)
      ballot |= 1u << lane;
  }
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint32_t membership = static_cast<uint32_t>(read(in.operands[2], lane));
    if ((membership & mask) != membership)
      return fail("vote.sync member mask names lanes that did not reach it "
                  "together",
                  static_cast<int>(lane));
    uint32_t voters = membership & mask;
    uint32_t yes = ballot & voters;
    uint64_t r;
    switch (in.variant) {
    case 1:
      r = yes == voters;
      break;
    case 2:
      r = yes != 0;
      break;
    case 3:
      r = yes == 0 || yes == voters;
      break;
    default:
      r = yes;
      break;
    }
    write(in.operands[0], lane, r, in.variant == 4 ? Type::B32 : Type::Pred);
  }
  return true;
}

bool Exec::elect(uint32_t mask) {
  // elect.sync d|p, membermask
  size_t n = in.operands.size();
  const Operand &membershipOperand = in.operands[n - 1];
  uint32_t membership =
      static_cast<uint32_t>(read(membershipOperand, __builtin_ctz(mask)));
  if ((membership & mask) != membership)
    return fail("elect.sync member mask names lanes that did not reach it "
                "together");
  uint32_t candidates = membership & mask;
  uint32_t leader = candidates ? __builtin_ctz(candidates) : 0;
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    if (n == 3) {
      write(in.operands[0], lane, leader, Type::None);
      write(in.operands[1], lane, lane == leader, Type::Pred);
    } else {
      write(in.operands[0], lane, lane == leader, Type::Pred);
    }
  }
  return true;
}

bool Exec::redux(uint32_t mask) {
  uint32_t values[32] = {};
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    values[lane] = static_cast<uint32_t>(read(in.operands[1], lane));
  }
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint32_t membership = static_cast<uint32_t>(read(in.operands[2], lane));
    if ((membership & mask) != membership)
      return fail("redux.sync member mask names lanes that did not reach it "
                  "together",
                  static_cast<int>(lane));
    uint32_t voters = membership & mask;
    bool sign = isSigned(in.type);
    int64_t acc = 0;
    bool first = true;
    for (uint32_t v = voters; v; v &= v - 1) {
      uint32_t j = __builtin_ctz(v);
      int64_t x =
          sign ? int64_t(static_cast<int32_t>(values[j])) : int64_t(values[j]);
      if (first) {
        acc = x;
        first = false;
        continue;
      }
      switch (in.variant) {
      case 1:
        acc += x;
        break;
      case 2:
        acc = std::min(acc, x);
        break;
      case 3:
        acc = std::max(acc, x);
        break;
      case 6:
        acc &= x;
        break;
      case 7:
        acc |= x;
        break;
      case 8:
        acc ^= x;
        break;
      default:
        return fail("unsupported redux operation");
      }
    }
    write(in.operands[0], lane, static_cast<uint32_t>(acc), Type::None);
  }
  return true;
}

bool Exec::match(uint32_t mask) {
  // match.any.sync.b32 d, a, membermask; match.all.sync.b32 d[|p], a, mask
  size_t n = in.operands.size();
  bool hasPredicate = n == 4;
  size_t source = hasPredicate ? 2 : 1;
  uint64_t values[32] = {};
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    values[lane] = read(in.operands[source], lane) &
                   (typeBits(in.type) >= 64 ? ~0ull : 0xffffffffull);
  }
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint32_t membership =
        static_cast<uint32_t>(read(in.operands[source + 1], lane));
    if ((membership & mask) != membership)
      return fail("match.sync member mask names lanes that did not reach it "
                  "together",
                  static_cast<int>(lane));
    uint32_t same = 0;
    for (uint32_t v = membership; v; v &= v - 1) {
      uint32_t j = __builtin_ctz(v);
      if (values[j] == values[lane])
        same |= 1u << j;
    }
    if (in.variant == 1) {
      write(in.operands[0], lane, same, Type::None);
    } else {
      bool all = same == membership;
      write(in.operands[0], lane, all ? membership : 0, Type::None);
      if (hasPredicate)
        write(in.operands[1], lane, all, Type::Pred);
    }
  }
  return true;
}

bool Exec::matrixLoadStore(uint32_t mask) {
  // stmatrix/ldmatrix .m8n8.xN[.trans].shared.b16: matrix i's row r lives
  // at the address of lane 8i + r; lane l holds row l/4, columns 2(l%4)
  // and 2(l%4)+1 of each matrix in its register i.
  if (mask != 0xffffffffu)
    return fail(std::string(in.op == Op::Stmatrix ? "stmatrix" : "ldmatrix") +
                " needs all 32 lanes of the warp");
  bool isStore = in.op == Op::Stmatrix;
  const Operand &addressOperand = in.operands[isStore ? 0 : 1];
  const Operand &registers = in.operands[isStore ? 1 : 0];
  unsigned matrices = in.vectorWidth;
  Space space = in.space == Space::Generic ? Space::Generic : in.space;
  for (unsigned m = 0; m < matrices; ++m) {
    for (unsigned row = 0; row < 8; ++row) {
      uint32_t addressLane = 8 * m + row;
      uint64_t at = address(addressOperand, addressLane);
      uint8_t *host = memory(space, at, 16, isStore, addressLane);
      if (!host)
        return false;
      for (unsigned column = 0; column < 8; ++column) {
        // Fragment coordinates of stored element (row, column).
        unsigned fr = in.trans ? column : row, fc = in.trans ? row : column;
        uint32_t lane = fr * 4 + fc / 2;
        const VectorElement &element =
            function.vectorSlots[registers.first + m];
        unsigned shift = 16 * (fc % 2);
        if (isStore) {
          uint16_t value =
              static_cast<uint16_t>(readElement(element, lane) >> shift);
          std::memcpy(host + 2 * column, &value, 2);
        } else if (element.reg >= 0) {
          uint16_t value;
          std::memcpy(&value, host + 2 * column, 2);
          uint64_t &slot = warp.regs[element.reg * 32 + lane];
          slot = (slot & ~(0xffffull << shift)) | (uint64_t(value) << shift);
        }
      }
    }
  }
  if (!isStore && !warp.lastWrite.empty())
    for (unsigned m = 0; m < matrices; ++m) {
      const VectorElement &element = function.vectorSlots[registers.first + m];
      if (element.reg >= 0) {
        warp.lastWrite[element.reg] = warp.sequence;
        warp.lastWritePc[element.reg] = pc;
      }
    }
  return true;
}

// --- Barriers -------------------------------------------------------------

bool Exec::barrier(uint32_t mask, bool wait) {
  if (in.aligned || in.op == Op::BarSync || in.op == Op::BarArrive ||
      in.op == Op::BarSyncCta || in.op == Op::BarRed)
    if (mask != warp.liveMask)
      return fail("bar.sync (aligned) reached by a diverged warp: lanes " +
                  hexMask(mask) + " of " + hexMask(warp.liveMask));
  uint32_t lane = __builtin_ctz(mask);
  bool reduction = in.op == Op::BarRed || in.op == Op::BarrierRed;
  // bar.red d, a, [b,] {!}c: the barrier operands follow the destination
  // and precede the predicate.
  size_t first = reduction ? 1 : 0;
  size_t count = reduction ? in.operands.size() - 2 : in.operands.size();
  uint32_t id =
      count == 0 ? 0 : static_cast<uint32_t>(read(in.operands[first], lane));
  if (id >= 16)
    return fail("barrier id " + std::to_string(id) + " is not in 0..15");
  uint32_t expected;
  if (count > 1) {
    expected = static_cast<uint32_t>(read(in.operands[first + 1], lane));
    if (expected == 0 || expected % 32 != 0)
      return fail("barrier thread count " + std::to_string(expected) +
                  " is not a positive multiple of 32");
    if (expected > 32 * launch.warpsPerCta)
      return fail("barrier thread count " + std::to_string(expected) +
                  " exceeds the CTA's " + std::to_string(launch.threadsPerCta) +
                  " threads");
  } else {
    expected = 0;
    for (const Warp &other : cta.warps)
      if (other.status != WarpStatus::Exited)
        expected += 32;
  }
  NamedBarrier &b = cta.barriers[id];
  // PTX ISA, barrier: every arrival in a phase names the same thread count,
  // and a warp arrives once before the barrier completes.
  if (b.arrived != 0 && b.expected != expected)
    return fail("barrier " + std::to_string(id) + " expects " +
                std::to_string(b.expected) +
                " threads (set by the arrival at line " +
                std::to_string(function.code[b.firstPc].line) +
                "), this arrival says " + std::to_string(expected));
  if (b.arrivedWarps >> warp.index & 1)
    return fail("warp " + std::to_string(warp.index) + " arrives at barrier " +
                std::to_string(id) + " again before the barrier completes");
  if (b.arrived == 0) {
    b.expected = expected;
    b.firstPc = pc;
    b.popc = 0;
    b.all = true;
    b.any = false;
    b.destinations.clear();
  }
  b.arrived += 32;
  b.arrivedWarps |= 1u << warp.index;
  if (reduction) {
    const Operand &predicate = in.operands.back();
    for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
      bool value = read(predicate, __builtin_ctz(lanes)) & 1;
      b.popc += value;
      b.all = b.all && value;
      b.any = b.any || value;
    }
    if (in.operands[0].kind == Operand::Kind::Register)
      b.destinations.push_back({&warp, in.operands[0].reg, mask});
  }
  cluster.hazards->onBarrierArrive(cta, warp, id);
  advance(warp.liveMask);
  movedLanes = true;
  if (b.arrived >= b.expected) {
    b.arrived = 0;
    b.arrivedWarps = 0;
    ++b.generation;
    for (const NamedBarrier::Destination &d : b.destinations) {
      uint64_t value = in.variant == 1   ? b.popc
                       : in.variant == 2 ? b.all
                                         : b.any;
      for (uint32_t lanes = d.lanes; lanes; lanes &= lanes - 1)
        d.warp->regs[d.slot * 32 + __builtin_ctz(lanes)] = value;
    }
    cluster.hazards->onBarrierComplete(cta, id, warp);
    return true;
  }
  if (wait) {
    warp.status = WarpStatus::Blocked;
    warp.block = BlockKind::Barrier;
    warp.blockPc = pc;
    warp.blockAddress = id;
    warp.blockParity = b.generation;
    warp.blockCta = &cta;
  }
  return true;
}

bool Exec::barrierWait(uint32_t mask) { return barrier(mask, true); }

bool Exec::barrierArrive(uint32_t mask) { return barrier(mask, false); }

ClusterArrivals clusterArrivals(const Cluster &cluster) {
  ClusterArrivals arrivals;
  for (const auto &c : cluster.ctas)
    for (const Warp &w : c->warps) {
      if (w.status == WarpStatus::Exited)
        continue;
      uint32_t threads = __builtin_popcount(w.liveMask);
      arrivals.expected += threads;
      if (w.clusterArrived && w.clusterArrivalPhase == cluster.clusterPhase)
        arrivals.arrived += threads;
    }
  return arrivals;
}

namespace {

/// barrier.cluster completes when every non-exited thread of the cluster
/// has arrived (PTX ISA, barrier.cluster): checked on each arrival and
/// each time a warp exits.
void completeClusterBarrierIfDone(Cluster &cluster) {
  ClusterArrivals arrivals = clusterArrivals(cluster);
  if (arrivals.arrived == 0 || arrivals.arrived != arrivals.expected)
    return;
  ++cluster.clusterPhase;
  cluster.hazards->onClusterComplete();
}

} // namespace

bool Exec::clusterBarrier(uint32_t mask, bool wait) {
  if (in.aligned && mask != warp.liveMask)
    return fail("barrier.cluster (aligned) reached by a diverged warp");
  if (!wait) {
    if (warp.clusterArrived)
      return fail("barrier.cluster.arrive twice without a wait");
    warp.clusterArrived = true;
    warp.clusterArrivalPhase = cluster.clusterPhase;
    cluster.hazards->onClusterArrive(warp);
    completeClusterBarrierIfDone(cluster);
    advance(mask);
    movedLanes = true;
    return true;
  }
  if (!warp.clusterArrived)
    return fail("barrier.cluster.wait without a preceding arrive");
  if (cluster.clusterPhase > warp.clusterArrivalPhase) {
    warp.clusterArrived = false;
    cluster.hazards->onClusterWait(warp);
    advance(mask);
    movedLanes = true;
    return true;
  }
  warp.status = WarpStatus::Blocked;
  warp.block = BlockKind::ClusterBarrier;
  warp.blockPc = pc;
  blocked = true;
  return true;
}

bool Exec::clusterArrive(uint32_t mask) { return clusterBarrier(mask, false); }

bool Exec::clusterWait(uint32_t mask) { return clusterBarrier(mask, true); }

// --- Dispatch -------------------------------------------------------------

namespace {

using Handler = bool (Exec::*)(uint32_t mask);

constexpr Handler kHandlers[] = {
#define MOSAIC_EMULATOR_OP(name, text, handler) &Exec::handler,
#include "Ops.def"
};

} // namespace

// Lanes whose guard predicate is false only move on. The handler runs on
// the others and then all active lanes move on, unless it blocked (the
// instruction is retried) or moved the lanes itself.
bool Exec::run() {
  uint32_t mask = active;
  if (in.guard >= 0) {
    mask = 0;
    for (uint32_t lanes = active; lanes; lanes &= lanes - 1) {
      uint32_t lane = __builtin_ctz(lanes);
      bool value = warp.regs[in.guard * 32 + lane] & 1;
      if (value != in.guardNegated)
        mask |= 1u << lane;
    }
  }
  Handler handler = kHandlers[static_cast<size_t>(in.op)];
  // The wgmma instructions are the ones that may name the registers of a
  // wgmma in flight.
  if (warp.inFlightCount && handler != &Exec::wgmma)
    checkInFlightRegisters(mask);
  if (mask && !(this->*handler)(mask))
    return false;
  if (!blocked && !movedLanes)
    advance(active);
  return true;
}

bool Exec::noEffect(uint32_t) { return true; }

bool Exec::fence(uint32_t) {
  cluster.hazards->onFence(warp);
  return true;
}

bool Exec::proxyFence(uint32_t) {
  cluster.hazards->onProxyFence(warp);
  return true;
}

bool Exec::activemask(uint32_t mask) {
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1)
    write(in.operands[0], __builtin_ctz(lanes), active, Type::None);
  return true;
}

bool Exec::branch(uint32_t mask) {
  uint32_t notTaken = active & ~mask;
  if (in.uni && notTaken)
    return fail("bra.uni taken by some lanes and not others");
  if (notTaken) {
    warp.frames.push_back({in.reconverge, active});
    advance(notTaken);
  }
  jump(mask, in.target);
  movedLanes = true;
  return true;
}

bool Exec::exitThreads(uint32_t mask) {
  uint32_t rest = active & ~mask;
  if (rest)
    advance(rest);
  exitLanes(mask);
  movedLanes = true;
  return warp.status != WarpStatus::Exited || warpExited();
}

bool Exec::trap(uint32_t) { return fail("trap"); }

bool Exec::warpExited() {
  completeClusterBarrierIfDone(cluster);
  cluster.hazards->onWarpExit(warp);
  uint32_t group = warp.index / 4;
  if (group < cta.registerChanges.size()) {
    const Cta::RegisterChange &change = cta.registerChanges[group];
    if (change.pc != Cta::RegisterChange::kNone &&
        !(change.doneMask >> (warp.index % 4) & 1))
      return fail("warp " + std::to_string(warp.index) +
                  " exits without executing the setmaxnreg at line " +
                  std::to_string(function.code[change.pc].line) +
                  " that warp " + std::to_string(change.firstWarp) +
                  " of its warpgroup reached (all four warps of a warpgroup "
                  "must execute it)");
  }
  return true;
}

// PTX ISA, setmaxnreg: each warp of a warpgroup executes the same
// setmaxnreg (.sync.aligned), and they synchronize before the next one;
// `.dec` releases registers to the CTA's pool, `.inc` blocks until the pool
// has them. The count a warp starts with is KernelInfo::entryRegisters.
bool Exec::setmaxnreg(uint32_t mask) {
  if (mask != warp.liveMask)
    return fail("setmaxnreg reached by a diverged warp: lanes " +
                hexMask(mask) + " of " + hexMask(warp.liveMask));
  uint32_t group = warp.index / 4;
  if (4 * group + 4 > cta.warps.size())
    return fail("setmaxnreg needs a whole warpgroup (4 warps); warp " +
                std::to_string(warp.index) + "'s warpgroup is incomplete");
  if (warp.liveMask != 0xffffffffu)
    return fail("setmaxnreg needs all 32 threads of each warp of the "
                "warpgroup; only lanes " +
                hexMask(warp.liveMask) + " of warp " +
                std::to_string(warp.index) + " are live");
  Cta::RegisterChange &change = cta.registerChanges[group];
  uint32_t bit = 1u << (warp.index % 4);
  auto quote = [&](uint32_t at) {
    uint32_t line = function.code[at].line;
    return "`" + launch.program->line(line) + "` at line " +
           std::to_string(line);
  };
  if (change.pc == Cta::RegisterChange::kNone) {
    for (uint32_t w = 4 * group; w < 4 * group + 4; ++w)
      if (cta.warps[w].status == WarpStatus::Exited)
        return fail("setmaxnreg in warpgroup " + std::to_string(group) +
                    ", whose warp " + std::to_string(w) +
                    " has exited (all four warps of a warpgroup must "
                    "execute it)");
    change.pc = pc;
    change.firstWarp = warp.index;
  } else if (change.doneMask & bit) {
    return fail("warp " + std::to_string(warp.index) +
                " reaches a setmaxnreg before the other warps of warpgroup " +
                std::to_string(group) + " executed " + quote(change.pc) +
                " (the warps must synchronize between two setmaxnreg)");
  } else if (change.pc != pc) {
    return fail("the warps of warpgroup " + std::to_string(group) +
                " execute different setmaxnreg instructions: warp " +
                std::to_string(change.firstWarp) + " reached " +
                quote(change.pc) + ", warp " + std::to_string(warp.index) +
                " " + quote(pc) + " (all four must execute the same one)");
  }
  uint32_t count = static_cast<uint32_t>(in.operands[0].bits);
  uint32_t current = warp.maxRegisters;
  bool increase = in.variant == 1;
  if (current != 0) {
    if (increase ? count < current : count > current)
      return fail(std::string("setmaxnreg.") + (increase ? "inc" : "dec") +
                  " to " + std::to_string(count) +
                  " registers per thread, but the warp holds " +
                  std::to_string(current) + " (." +
                  (increase ? "inc must not lower" : "dec must not raise") +
                  " the count)");
    if (increase) {
      uint32_t needed = 32 * (count - current);
      if (cta.registerPool < needed) {
        warp.status = WarpStatus::Blocked;
        warp.block = BlockKind::Registers;
        warp.blockPc = pc;
        blocked = true;
        return true;
      }
      cta.registerPool -= needed;
    } else {
      cta.registerPool += 32 * (current - count);
    }
    warp.maxRegisters = count;
  }
  change.doneMask |= bit;
  if (change.doneMask == 0xf)
    change = Cta::RegisterChange();
  report(cluster.hazards->onSetmaxnreg(warp, pc));
  return true;
}

uint32_t registersRequested(const LaunchState &launch, const Warp &warp) {
  uint32_t target = static_cast<uint32_t>(
      launch.function->code[warp.blockPc].operands[0].bits);
  return 32 * (target - warp.maxRegisters);
}

void Exec::checkInFlightRegisters(uint32_t mask) {
  if (!mask)
    return;
  auto check = [&](int32_t slot) {
    if (slot >= 0 && warp.inFlight[slot])
      hazard("register " + function.registerNames[slot] +
                 " is used by the wgmma.mma_async at line " +
                 std::to_string(function.code[warp.inFlightPc[slot]].line) +
                 ", which no wgmma.wait_group has covered yet",
             __builtin_ctz(mask));
  };
  for (const Operand &operand : in.operands) {
    if (operand.kind == Operand::Kind::Register ||
        (operand.kind == Operand::Kind::Address && operand.reg >= 0))
      check(operand.reg);
    if (operand.kind == Operand::Kind::Vector)
      for (uint32_t i = 0; i < operand.count; ++i)
        check(function.vectorSlots[operand.first + i].reg);
  }
}

StepResult executeInstruction(Cluster &cluster, Cta &cta, Warp &warp,
                              const Instruction &instruction,
                              uint32_t activeMask, Fault &fault) {
  const Function &function = *cluster.launch->function;
  uint32_t pc = static_cast<uint32_t>(&instruction - function.code.data());
  Exec exec{cluster,  cta, warp,       instruction, *cluster.launch,
            function, pc,  activeMask, fault};
  ++warp.sequence;
  if (!exec.run())
    return StepResult::Faulted;
  if (exec.blocked)
    return StepResult::Blocked;
  return StepResult::Executed;
}

} // namespace mosaic::emulator
