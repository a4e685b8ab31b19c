//===- ExecuteWarp.cpp - Warp-level collective instructions ---------------===//
//
// shfl, vote, elect, redux, match and activemask: instructions whose
// lanes exchange values, all within one warp and one step.
//
//===----------------------------------------------------------------------===//

#include "Execute.h"

#include <algorithm>

namespace mosaic::emulator {

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

bool Exec::activemask(uint32_t mask) {
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1)
    write(in.operands[0], __builtin_ctz(lanes), active, Type::None);
  return true;
}

} // namespace mosaic::emulator
