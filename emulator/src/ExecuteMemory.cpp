//===- ExecuteMemory.cpp - Loads, stores, atomics, fences -----------------===//
//
// ld, st, atom/red, cvta, isspacep, mapa, ldmatrix/stmatrix and the
// fences: the generic-proxy memory instructions. Every access goes through
// Exec::memory, which checks it and tells the hazard checker.
//
//===----------------------------------------------------------------------===//

#include "Execute.h"

#include "mosaic/Emulator/Numerics.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace mosaic::emulator {

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
    if (launch.detectPolling && lanes == mask)
      notePoll(at, host, std::min(elementBytes * count, 8u));
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

void Exec::notePoll(uint64_t at, const uint8_t *host, unsigned bytes) {
  bool global =
      in.space == Space::Global ||
      (in.space == Space::Generic &&
       !(at >= kGenericSharedBase && at < kGenericSharedBase + kWindowSize) &&
       !(at >= kGenericLocalBase && at < kGenericLocalBase + kWindowSize) &&
       !(at >= kGenericParamBase && at < kGenericParamBase + kWindowSize));
  if (!global)
    return;
  uint64_t value = 0;
  std::memcpy(&value, host, bytes);
  uint64_t writes = *cluster.globalWrites;
  if (warp.pollPc == pc && warp.pollAddress == at && warp.pollValue == value &&
      warp.pollWrites == writes) {
    // The same load read the same value, and nothing wrote global memory
    // since: the warp polls. Let the others run first.
    warp.polling = true;
    warp.spinning = true;
    return;
  }
  warp.polling = false;
  warp.pollPc = pc;
  warp.pollAddress = at;
  warp.pollValue = value;
  warp.pollWrites = writes;
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

bool Exec::fence(uint32_t) {
  cluster.hazards->onFence(warp, in);
  return true;
}

bool Exec::proxyFence(uint32_t) {
  cluster.hazards->onProxyFence(warp);
  return true;
}

} // namespace mosaic::emulator
