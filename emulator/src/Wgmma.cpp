//===- Wgmma.cpp - Warpgroup matrix multiply-accumulate -----------------===//
//
// wgmma.mma_async is a rendezvous of the warpgroup's four warps: the last
// one to arrive issues the operation for all four. The operation is
// asynchronous: at completion it reads A and B from shared memory through
// their descriptors (or A from the registers of the 128 threads), the
// accumulators from the registers, computes D = A * B (+ D) and writes the
// accumulators back. The product is computed densely (operands decoded once
// per operation), adding the products to the accumulators as Hopper's
// tensor cores do (TensorCore.h).
//
//===----------------------------------------------------------------------===//

#include "Execute.h"
#include "Hazards.h"
#include "mosaic/Emulator/Numerics.h"
#include "mosaic/Emulator/Spec.h"
#include "mosaic/Emulator/TensorCore.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace mosaic::emulator {

namespace {

struct WgmmaPlan {
  Cta *cta = nullptr;
  Cluster *cluster = nullptr;
  std::array<Warp *, 4> warps{};
  const Function *function = nullptr;
  uint32_t firstVector = 0; // D registers in function.vectorSlots
  uint32_t dCount = 0;
  int32_t aFirst = -1; // register A: vectorSlots index
  uint32_t aCount = 0;
  spec::MatrixDescriptor a, b;
  bool aFromRegisters = false;
  bool transA = false, transB = false;
  bool scaleD = true;
  int scaleA = 1, scaleB = 1;
  Type dType = Type::F32, aType = Type::BF16, bType = Type::BF16;
  bool satfinite = false;
  uint32_t n = 0, k = 0;
  AsyncClock clock;
  std::string what;
};

/// f16 values by bit pattern: decoding through a table keeps the operand
/// gathering of a wgmma cheap next to its arithmetic.
const std::vector<float> &halfTable() {
  static const std::vector<float> table = [] {
    std::vector<float> values(65536);
    for (uint32_t bits = 0; bits < 65536; ++bits)
      values[bits] = static_cast<float>(decodeFloat(bits, FloatFormat::F16));
    return values;
  }();
  return table;
}

double decodeElement(uint32_t bits, Type type) {
  switch (type) {
  case Type::F16:
    return halfTable()[bits & 0xffff];
  case Type::BF16:
    return bitsToFloat(bits << 16); // bf16 is the top half of an f32
  case Type::TF32:
    return decodeFloat(bits & 0xffffe000u, FloatFormat::F32);
  case Type::E4M3:
    return decodeFloat(bits, FloatFormat::E4M3);
  case Type::E5M2:
    return decodeFloat(bits, FloatFormat::E5M2);
  case Type::S8:
    return static_cast<int8_t>(bits);
  case Type::U8:
    return static_cast<uint8_t>(bits);
  default:
    return 0;
  }
}

FloatFormat operandFormat(Type type) {
  switch (type) {
  case Type::F16:
    return FloatFormat::F16;
  case Type::TF32:
    return FloatFormat::TF32;
  case Type::E4M3:
    return FloatFormat::E4M3;
  case Type::E5M2:
    return FloatFormat::E5M2;
  default:
    return FloatFormat::BF16;
  }
}

Status runWgmma(const WgmmaPlan &plan) {
  const uint32_t n = plan.n, k = plan.k;
  unsigned aBits = typeBits(plan.aType);
  Cta &cta = *plan.cta;
  const Function &function = *plan.function;
  HazardChecker &hazards = *plan.cluster->hazards;
  std::vector<float> a(64 * k), b(k * n), d(64 * n, 0.0f);
  std::vector<int32_t> ai, bi, di;
  bool integer = plan.dType == Type::S32;
  if (integer) {
    ai.assign(64 * k, 0);
    bi.assign(k * n, 0);
    di.assign(64 * n, 0);
  }
  // Shared-memory operands are read a 16-byte chunk at a time: a chunk
  // holds consecutive elements along the operand's contiguous dimension
  // (K for K-major, M or N for MN-major), and swizzling moves whole chunks.
  auto gather = [&](const spec::MatrixDescriptor &descriptor, bool mnMajor,
                    uint32_t rows, Type type, int scale, float *out,
                    int32_t *outInteger, bool isA) -> Status {
    unsigned bits = typeBits(type);
    uint32_t perChunk = 128 / bits;
    // Visit (row along M/N, k) chunks; `store` places element (mn, kk).
    uint32_t mnChunks = mnMajor ? rows / perChunk : rows;
    uint32_t kChunks = mnMajor ? k : k / perChunk;
    for (uint32_t i = 0; i < mnChunks; ++i)
      for (uint32_t j = 0; j < kChunks; ++j) {
        uint32_t mn0 = mnMajor ? i * perChunk : i;
        uint32_t k0 = mnMajor ? j : j * perChunk;
        uint32_t address =
            spec::operandAddress(descriptor, mnMajor, mn0, k0, bits);
        if (address < kSharedBase || address + 16 > cta.sharedEnd) {
          plan.cluster->faultKind = FaultKind::IllegalAddress;
          return Error{plan.what + ": operand " + (isA ? "A" : "B") +
                       " element (" + std::to_string(mn0) + ", " +
                       std::to_string(k0) + ") at shared address " +
                       std::to_string(address) +
                       " is outside the CTA's shared memory"};
        }
        hazards.onAsyncAccess(cta, plan.clock, address & ~15u, 16, false,
                              plan.what);
        const uint8_t *chunk = cta.shared.data() + address;
        if (type == Type::BF16 && !integer) {
          // The common case, without the generic decode: bf16 is the top
          // half of an f32.
          uint16_t raw[8];
          std::memcpy(raw, chunk, 16);
          float sign = scale < 0 ? -1.0f : 1.0f;
          for (uint32_t e = 0; e < 8; ++e) {
            uint32_t mn = mnMajor ? mn0 + e : mn0;
            uint32_t kk = mnMajor ? k0 : k0 + e;
            size_t at = isA ? size_t(mn) * k + kk : size_t(kk) * n + mn;
            out[at] = sign * bitsToFloat(uint32_t(raw[e]) << 16);
          }
          continue;
        }
        for (uint32_t e = 0; e < perChunk; ++e) {
          uint32_t raw = 0;
          std::memcpy(&raw, chunk + e * bits / 8, bits / 8);
          uint32_t mn = mnMajor ? mn0 + e : mn0;
          uint32_t kk = mnMajor ? k0 : k0 + e;
          // A is stored (m, k), B as (k, n).
          size_t at = isA ? size_t(mn) * k + kk : size_t(kk) * n + mn;
          double value = decodeElement(raw, type);
          if (integer)
            outInteger[at] = static_cast<int32_t>(value);
          else
            out[at] = static_cast<float>(value * scale);
        }
      }
    return Status();
  };
  if (!plan.aFromRegisters)
    MOSAIC_RETURN_IF_ERROR(gather(plan.a, plan.transA, 64, plan.aType,
                                      plan.scaleA, a.data(), ai.data(), true));
  if (plan.aFromRegisters) {
    unsigned perRegister = 32 / aBits;
    for (uint32_t thread = 0; thread < 128; ++thread) {
      Warp &warp = *plan.warps[thread / 32];
      uint32_t lane = thread % 32;
      for (uint32_t r = 0; r < plan.aCount; ++r) {
        int32_t slot = function.vectorSlots[plan.aFirst + r].reg;
        uint64_t word = warp.regs[slot * 32 + lane];
        for (unsigned p = 0; p < perRegister; ++p) {
          auto [row, column] =
              spec::registerAElement(thread, r * perRegister + p, aBits);
          uint32_t bits = static_cast<uint32_t>(
              (word >> (p * aBits)) & ((1ull << aBits) - 1));
          if (aBits == 32)
            bits = static_cast<uint32_t>(word);
          double value = decodeElement(bits, plan.aType);
          if (integer)
            ai[row * k + column] = static_cast<int32_t>(value);
          else
            a[row * k + column] = static_cast<float>(value * plan.scaleA);
        }
      }
    }
  }
  MOSAIC_RETURN_IF_ERROR(gather(plan.b, plan.transB, n, plan.bType,
                                    plan.scaleB, b.data(), bi.data(), false));
  // D from the registers. The fragment positions depend on the thread and
  // element index only; they are computed once per shape.
  bool halfAccumulator = plan.dType == Type::F16;
  uint32_t elementsPerThread = plan.dCount * (halfAccumulator ? 2 : 1);
  // Positions in (warp, register, lane) order, so that the walk over the
  // registers below is sequential in memory.
  thread_local std::vector<uint32_t> positions;
  thread_local uint32_t positionsFor = 0;
  uint32_t perLane = halfAccumulator ? 2 : 1;
  if (positionsFor != elementsPerThread * 1024 + n) {
    positions.resize(128 * elementsPerThread);
    for (uint32_t w = 0; w < 4; ++w)
      for (uint32_t r = 0; r < plan.dCount; ++r)
        for (uint32_t lane = 0; lane < 32; ++lane)
          for (uint32_t p = 0; p < perLane; ++p) {
            auto [row, column] =
                spec::accumulatorElement(w * 32 + lane, r * perLane + p);
            positions[((w * plan.dCount + r) * 32 + lane) * perLane + p] =
                row * n + column;
          }
    positionsFor = elementsPerThread * 1024 + n;
  }
  std::vector<int32_t> slots(plan.dCount);
  for (uint32_t r = 0; r < plan.dCount; ++r)
    slots[r] = function.vectorSlots[plan.firstVector + r].reg;
  auto forEachAccumulator = [&](auto visit) {
    const uint32_t *position = positions.data();
    for (uint32_t w = 0; w < 4; ++w) {
      Warp &warp = *plan.warps[w];
      for (uint32_t r = 0; r < plan.dCount; ++r) {
        uint64_t *words = &warp.regs[slots[r] * 32];
        for (uint32_t lane = 0; lane < 32; ++lane)
          for (uint32_t p = 0; p < perLane; ++p)
            visit(words[lane], *position++, p);
      }
    }
  };
  if (plan.scaleD) {
    forEachAccumulator([&](uint64_t &word, uint32_t at, unsigned part) {
      if (integer)
        di[at] = static_cast<int32_t>(word);
      else if (halfAccumulator)
        d[at] = halfTable()[(word >> (16 * part)) & 0xffff];
      else
        d[at] = bitsToFloat(static_cast<uint32_t>(word));
    });
  }
  if (integer) {
    for (uint32_t m = 0; m < 64; ++m)
      for (uint32_t j = 0; j < n; ++j) {
        int64_t acc = di[m * n + j];
        for (uint32_t kk = 0; kk < k; ++kk)
          acc += int64_t(ai[m * k + kk]) * bi[kk * n + j];
        if (plan.satfinite)
          acc = std::clamp<int64_t>(acc, INT32_MIN, INT32_MAX);
        di[m * n + j] = static_cast<int32_t>(static_cast<uint32_t>(acc));
      }
  } else {
    accumulate(a.data(), b.data(), d.data(), n, k,
               accumulationModel(operandFormat(plan.aType)), halfAccumulator);
  }
  forEachAccumulator([&](uint64_t &word, uint32_t at, unsigned part) {
    if (integer) {
      word = static_cast<uint32_t>(di[at]);
    } else if (halfAccumulator) {
      uint64_t bits =
          encodeFloat(d[at], FloatFormat::F16, RoundingMode::NearestEven);
      word = (word & ~(0xffffull << (16 * part))) | (bits << (16 * part));
    } else {
      word = floatToBits(d[at]);
    }
  });
  return Status();
}

bool validWgmmaTypes(Type d, Type a, Type b, uint32_t k) {
  bool half = (a == Type::F16 || a == Type::BF16) && a == b;
  if (half)
    return k == 16 && (d == Type::F32 || (d == Type::F16 && a == Type::F16));
  if (a == Type::TF32 && b == Type::TF32)
    return k == 8 && d == Type::F32;
  bool fp8 = (a == Type::E4M3 || a == Type::E5M2) &&
             (b == Type::E4M3 || b == Type::E5M2);
  if (fp8)
    return k == 32 && (d == Type::F32 || d == Type::F16);
  bool int8 = (a == Type::S8 || a == Type::U8) && (b == Type::S8 || b == Type::U8);
  if (int8)
    return k == 32 && d == Type::S32;
  return false;
}

} // namespace

bool Exec::wgmma(uint32_t mask) {
  if (mask != 0xffffffffu || active != 0xffffffffu)
    return fail("wgmma instructions are .sync.aligned: all 32 lanes of "
                "every warp must execute them together, but only lanes " +
                hexMask(mask) + " did" + [&] {
                  std::string pcs;
                  if (!warp.converged)
                    for (uint32_t lane = 0; lane < 32; ++lane)
                      if (!(mask >> lane & 1) && (warp.liveMask >> lane & 1))
                        pcs += " (lane " + std::to_string(lane) +
                               " is at line " +
                               std::to_string(
                                   function.code[warp.lanePc[lane]].line) +
                               ")";
                  return pcs;
                }());
  switch (in.op) {
  case Op::WgmmaFence:
    warp.lastWgmmaFence = warp.sequence;
    return true;
  case Op::WgmmaCommitGroup:
    warp.groups.push_back(std::move(warp.uncommitted));
    warp.uncommitted.clear();
    return true;
  case Op::WgmmaWaitGroup: {
    uint64_t keep = read(in.operands[0], 0);
    bool changed = false;
    while (warp.groups.size() > keep) {
      for (const std::shared_ptr<WgmmaOp> &op : warp.groups.front()) {
        Status status = completeAsync(cluster, op->asyncId);
        if (!status.ok())
          return fail(status.message());
        cluster.hazards->onWgmmaWait(warp, op->clock);
      }
      warp.groups.pop_front();
      changed = true;
    }
    if (changed && !warp.inFlight.empty()) {
      std::fill(warp.inFlight.begin(), warp.inFlight.end(), 0);
      warp.inFlightCount = 0;
      auto mark = [&](const std::shared_ptr<WgmmaOp> &op) {
        for (int32_t slot : op->slots)
          if (!warp.inFlight[slot]++)
            ++warp.inFlightCount;
      };
      for (const auto &group : warp.groups)
        for (const auto &op : group)
          mark(op);
      for (const auto &op : warp.uncommitted)
        mark(op);
    }
    return true;
  }
  default:
    break;
  }
  // wgmma.mma_async: check this warp's operands, then rendezvous.
  uint32_t group = warp.index / 4;
  if (4 * group + 4 > cta.warps.size())
    return fail("wgmma.mma_async needs a whole warpgroup (4 warps); warp " +
                std::to_string(warp.index) + "'s warpgroup is incomplete");
  if (!validWgmmaTypes(in.type, in.type2, in.type3, in.shapeK) ||
      in.shapeM != 64 || in.shapeN == 0 || in.shapeN > 256 ||
      in.shapeN % 8 != 0)
    return fail("unsupported wgmma shape or types: m" +
                std::to_string(in.shapeM) + "n" + std::to_string(in.shapeN) +
                "k" + std::to_string(in.shapeK) + "." + typeName(in.type) +
                "." + typeName(in.type2) + "." + typeName(in.type3));
  const Operand &dOperand = in.operands[0];
  uint32_t expectedD = in.type == Type::F16 ? in.shapeN / 4 : in.shapeN / 2;
  if (dOperand.kind != Operand::Kind::Vector || dOperand.count != expectedD)
    return fail("wgmma m64n" + std::to_string(in.shapeN) + " ." +
                typeName(in.type) + " needs " + std::to_string(expectedD) +
                " accumulator registers");
  bool aFromRegisters = in.operands[1].kind == Operand::Kind::Vector;
  if (aFromRegisters && in.operands[1].count != 4)
    return fail("wgmma with A in registers needs 4 A registers");
  // PTX: registers a wgmma reads must not be written after the
  // wgmma.fence that precedes it.
  if (!warp.lastWrite.empty()) {
    auto check = [&](int32_t slot) {
      if (slot >= 0 && warp.lastWrite[slot] > warp.lastWgmmaFence)
        hazard("register " + function.registerNames[slot] +
               " is written at line " +
               std::to_string(function.code[warp.lastWritePc[slot]].line) +
               " after the last wgmma.fence and then read by "
               "wgmma.mma_async (no wgmma.fence between them)");
    };
    for (uint32_t i = 0; i < dOperand.count; ++i)
      check(function.vectorSlots[dOperand.first + i].reg);
    if (aFromRegisters)
      for (uint32_t i = 0; i < 4; ++i)
        check(function.vectorSlots[in.operands[1].first + i].reg);
  }
  Cta::Rendezvous &rendezvous = cta.rendezvous[group];
  if (rendezvous.arrivedMask == 0)
    rendezvous.pc = pc;
  else if (rendezvous.pc != pc)
    return fail("the warps of warpgroup " + std::to_string(group) +
                " reach different wgmma.mma_async instructions (lines " +
                std::to_string(function.code[rendezvous.pc].line) + " and " +
                std::to_string(in.line) + ")");
  rendezvous.arrivedMask |= 1u << (warp.index % 4);
  if (rendezvous.arrivedMask != 0xf) {
    warp.status = WarpStatus::Blocked;
    warp.block = BlockKind::WgmmaRendezvous;
    warp.blockPc = pc;
    blocked = true;
    return true;
  }
  rendezvous.arrivedMask = 0;

  WgmmaPlan plan;
  plan.cta = &cta;
  plan.cluster = &cluster;
  plan.function = &function;
  for (uint32_t w = 0; w < 4; ++w)
    plan.warps[w] = &cta.warps[4 * group + w];
  plan.firstVector = dOperand.first;
  plan.dCount = dOperand.count;
  plan.aFromRegisters = aFromRegisters;
  plan.dType = in.type;
  plan.aType = in.type2;
  plan.bType = in.type3;
  plan.satfinite = in.satfinite;
  plan.n = in.shapeN;
  plan.k = in.shapeK;
  // Uniform operands: every thread of the warpgroup must give the same.
  auto uniform = [&](const Operand &operand, const char *what,
                     uint64_t &out) -> bool {
    bool first = true;
    for (Warp *w : plan.warps)
      for (uint32_t lane = 0; lane < 32; ++lane) {
        Exec other{cluster, cta, *w, in, launch, function, pc, active, fault};
        uint64_t value = other.read(operand, lane);
        if (first) {
          out = value;
          first = false;
        } else if (value != out) {
          return fail(std::string("the wgmma ") + what +
                      " differs between threads of the warpgroup");
        }
      }
    return true;
  };
  uint64_t value = 0;
  if (!aFromRegisters) {
    if (!uniform(in.operands[1], "A descriptor", value))
      return false;
    plan.a = spec::MatrixDescriptor::decode(value);
  } else {
    plan.aFirst = static_cast<int32_t>(in.operands[1].first);
    plan.aCount = 4;
  }
  if (!uniform(in.operands[2], "B descriptor", value))
    return false;
  plan.b = spec::MatrixDescriptor::decode(value);
  size_t next = 3;
  if (next < in.operands.size()) {
    if (!uniform(in.operands[next++], "scale-d", value))
      return false;
    plan.scaleD = value & 1;
  }
  bool isHalf = in.type2 == Type::F16 || in.type2 == Type::BF16;
  bool isInteger = in.type == Type::S32;
  if (!isInteger) {
    if (next + 2 > in.operands.size())
      return fail("wgmma needs imm-scale-a and imm-scale-b");
    plan.scaleA = static_cast<int32_t>(read(in.operands[next++], 0)) < 0 ? -1 : 1;
    plan.scaleB = static_cast<int32_t>(read(in.operands[next++], 0)) < 0 ? -1 : 1;
    if (isHalf) {
      if (!aFromRegisters) {
        if (next >= in.operands.size())
          return fail("wgmma with A in shared memory needs imm-trans-a");
        plan.transA = read(in.operands[next++], 0) & 1;
      }
      if (next >= in.operands.size())
        return fail("wgmma needs imm-trans-b");
      plan.transB = read(in.operands[next++], 0) & 1;
    }
  }
  if (next != in.operands.size())
    return fail("wgmma has " + std::to_string(in.operands.size()) +
                " operands; expected " + std::to_string(next));
  if (plan.a.baseOffset || plan.b.baseOffset)
    return fail("wgmma descriptors with a nonzero base offset are not "
                "supported by the emulator");

  auto op = std::make_shared<WgmmaOp>();
  AsyncOp async = newAsync(0);
  async.what = "the wgmma.mma_async of warpgroup " + std::to_string(group) +
               " issued by " +
               describeLocation(launch, cta, warp.index, -1, pc);
  plan.what = async.what;
  plan.clock = cluster.hazards->onWgmmaIssue(cta, group);
  op->clock = plan.clock;
  async.complete = [plan]() { return runWgmma(plan); };
  async.orderKey = reinterpret_cast<uintptr_t>(&cta) * 8 + group + 1;
  op->asyncId = async.id;
  for (uint32_t i = 0; i < dOperand.count; ++i)
    op->slots.push_back(function.vectorSlots[dOperand.first + i].reg);
  if (aFromRegisters)
    for (uint32_t i = 0; i < 4; ++i)
      op->slots.push_back(function.vectorSlots[in.operands[1].first + i].reg);
  for (Warp *w : plan.warps) {
    w->uncommitted.push_back(op);
    if (!w->inFlight.empty())
      for (int32_t slot : op->slots)
        if (slot >= 0) {
          if (!w->inFlight[slot]++)
            ++w->inFlightCount;
          w->inFlightPc[slot] = pc;
        }
    if (w != &warp) {
      ++w->pc;
      w->status = WarpStatus::Ready;
      w->block = BlockKind::None;
    }
  }
  return queue(std::move(async));
}

} // namespace mosaic::emulator
