//===- Execute.h - Executing one instruction for a warp -------*- C++ -*-===//

#ifndef MOSAIC_EMULATOR_EXECUTE_H
#define MOSAIC_EMULATOR_EXECUTE_H

#include "Hazards.h"

#include <optional>

namespace mosaic::emulator {

struct SharedLocation {
  Cta *cta;
  uint32_t offset; // shared address in that CTA
};

/// `0x%08x`, for lane masks in messages.
std::string hexMask(uint32_t mask);

inline uint64_t widthMask(unsigned bits) {
  return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

inline int64_t signExtend(uint64_t value, unsigned bits) {
  if (bits >= 64)
    return static_cast<int64_t>(value);
  uint64_t sign = 1ull << (bits - 1);
  value &= widthMask(bits);
  return static_cast<int64_t>((value ^ sign) - sign);
}

/// The execution of one instruction by one warp. Every method returns false
/// after recording a fault.
struct Exec {
  Cluster &cluster;
  Cta &cta;
  Warp &warp;
  const Instruction &in;
  const LaunchState &launch;
  const Function &function;
  uint32_t pc;
  /// The lanes executing the instruction, before its guard predicate.
  uint32_t active;
  Fault &fault;
  /// The warp blocked before executing: retry the instruction later.
  bool blocked = false;
  /// The instruction moved the lanes' program counters itself.
  bool movedLanes = false;

  bool run();

  // Operands.
  uint64_t special(Special which, uint32_t lane) const;
  uint64_t read(const Operand &operand, uint32_t lane) const;
  uint64_t readElement(const VectorElement &element, uint32_t lane) const;
  void write(const Operand &operand, uint32_t lane, uint64_t value, Type type);
  void writeSlot(int32_t slot, uint32_t lane, uint64_t value, Type type);
  uint64_t address(const Operand &operand, uint32_t lane) const;
  /// Host bytes of an access, checked; nullptr after a fault.
  uint8_t *memory(Space space, uint64_t address, unsigned bytes, bool write,
                  uint32_t lane);
  std::optional<SharedLocation> resolveShared(uint64_t sharedAddress,
                                              bool clusterWindow,
                                              unsigned bytes, uint32_t lane);
  /// A shared location from an address operand in `in.space` (generic,
  /// shared::cta or shared::cluster).
  std::optional<SharedLocation> sharedOperand(const Operand &operand,
                                              Space space, unsigned bytes,
                                              uint32_t lane);
  /// sharedOperand, and a misaligned-address fault naming `what` unless
  /// the address is a multiple of `alignment`.
  std::optional<SharedLocation>
  alignedSharedOperand(const Operand &operand, Space space, unsigned bytes,
                       unsigned alignment, const char *what, uint32_t lane);
  bool fail(const std::string &message, int lane = -1,
            FaultKind kind = FaultKind::Unspecified);
  bool hazard(const std::string &message, int lane = -1);
  /// Reports what the hazard checker found in this instruction, if anything.
  void report(const std::optional<Finding> &finding);

  // Control (Execute.cpp).
  void advance(uint32_t mask);
  void diverge();
  void jump(uint32_t mask, uint32_t target);
  void exitLanes(uint32_t mask);
  /// The warp's last threads exited: barrier.cluster stops waiting for
  /// them and the hazard checker learns of it; leaving a setmaxnreg the
  /// rest of the warpgroup executes is an error (ExecuteSync.cpp).
  bool warpExited();

  // Families: the handlers Ops.def names, each run on the lanes `mask`
  // whose guard predicate holds (never none).

  // Execute.cpp: control flow.
  bool noEffect(uint32_t mask);
  bool branch(uint32_t mask);
  bool exitThreads(uint32_t mask);
  bool trap(uint32_t mask);
  void checkInFlightRegisters(uint32_t mask);

  // ExecuteArithmetic.cpp.
  bool floatOp(uint32_t mask);
  bool integerOp(uint32_t mask);
  bool arithmetic(uint32_t mask);
  bool setp(uint32_t mask);
  bool convert(uint32_t mask);
  bool move(uint32_t mask);
  bool select(uint32_t mask);
  bool testp(uint32_t mask);

  // ExecuteMemory.cpp.
  bool load(uint32_t mask);
  /// A co-scheduled group's polling test for this load's first lane, which
  /// read `bytes` at `at` (Warp::polling).
  void notePoll(uint64_t at, const uint8_t *host, unsigned bytes);
  bool store(uint32_t mask);
  bool atomic(uint32_t mask);
  bool convertAddress(uint32_t mask);
  bool isspacep(uint32_t mask);
  bool mapa(uint32_t mask);
  bool matrixLoadStore(uint32_t mask);
  bool fence(uint32_t mask);
  bool proxyFence(uint32_t mask);

  // ExecuteWarp.cpp.
  bool shuffle(uint32_t mask);
  bool vote(uint32_t mask);
  bool elect(uint32_t mask);
  bool redux(uint32_t mask);
  bool match(uint32_t mask);
  bool activemask(uint32_t mask);

  // ExecuteSync.cpp.
  bool barrierWait(uint32_t mask);
  bool barrierArrive(uint32_t mask);
  bool barrier(uint32_t mask, bool wait);
  bool clusterArrive(uint32_t mask);
  bool clusterWait(uint32_t mask);
  bool clusterBarrier(uint32_t mask, bool wait);
  bool setmaxnreg(uint32_t mask);

  // Async.cpp: mbarrier, TMA, bulk copies; Wgmma.cpp: wgmma.
  /// An operation issued by `lane` of this instruction, to be completed.
  AsyncOp newAsync(uint32_t lane);
  /// Queues `async`; under the eager policy completes it at once.
  bool queue(AsyncOp async);
  bool mbarrier(uint32_t mask);
  /// The CTAs a copy into shared::cluster memory at `destination`, which
  /// completes on `barrier`, writes: that CTA (the mbarrier's), or with
  /// .multicast::cluster those the ctaMask operand at `maskIndex` names,
  /// each at the CTA-relative offsets of both (PTX ISA, cp.async.bulk and
  /// cp.async.bulk.tensor).
  bool copyTargets(const SharedLocation &destination,
                   const SharedLocation &barrier, size_t maskIndex,
                   uint32_t lane, std::vector<Cta *> &targets);
  bool tensorCopy(uint32_t mask);
  bool bulkCopy(uint32_t mask);
  bool bulkGroups(uint32_t mask);
  bool wgmma(uint32_t mask);
};

// The operand accessors every family calls for every lane: defined here so
// that the families, each in its own file, inline them.

inline uint64_t Exec::read(const Operand &operand, uint32_t lane) const {
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

inline uint64_t Exec::readElement(const VectorElement &element,
                                  uint32_t lane) const {
  if (element.reg >= 0)
    return warp.regs[element.reg * 32 + lane];
  return element.bits;
}

inline void Exec::write(const Operand &operand, uint32_t lane, uint64_t value,
                        Type type) {
  if (operand.kind != Operand::Kind::Register)
    return;
  writeSlot(operand.reg, lane, value, type);
}

inline void Exec::writeSlot(int32_t slot, uint32_t lane, uint64_t value,
                            Type type) {
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

} // namespace mosaic::emulator

#endif // MOSAIC_EMULATOR_EXECUTE_H
