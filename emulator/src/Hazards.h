//===- Hazards.h - The asynchronous-hazard checker -------------*- C++ -*-===//
//
// The checker's interface, its no-op implementation, and the vector-clock
// checker (Hazards.cpp): happens-before over the cluster's agents, with vector
// clocks: every warp is an agent (its lanes run in lockstep here, so they are
// ordered), every warp has 8 TMA/bulk-copy agents used round robin by the
// operations it issues, and every warp has a wgmma agent for its part of each
// warpgroup MMA (wgmma.wait_group covers only the executing warp's part).
// Barriers, mbarrier phases, cluster barriers and async completions carry
// clocks. Shared memory has a shadow per byte for generic accesses and per
// 16-byte chunk for the asynchronous proxy; an access that is not ordered after
// the conflicting access before it is a hazard. A CTA's exit must be ordered
// after every access its peers make to its shared memory, and the warps of
// a warpgroup must synchronize between two setmaxnreg. In a co-scheduled
// group one checker follows every cluster of every launch, and also
// shadows global memory: an access of one device that conflicts with an
// earlier access of another must be ordered by a release/acquire pair at
// .sys scope. See docs/RationaleEmulator.md.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_HAZARDS_H
#define MOSAIC_EMULATOR_HAZARDS_H

#include "Engine.h"

#include <memory>
#include <optional>
#include <string>

namespace mosaic::emulator {

/// A hazard found in the instruction the executor is running, which the
/// executor reports at its own location.
struct Finding {
  std::string message;
  int lane = -1;
};

/// What the executor tells the checker of each synchronizing or
/// shared-memory event. Every call site calls it unconditionally: without
/// checking, the cluster's checker is a NoHazardChecker.
class HazardChecker {
public:
  virtual ~HazardChecker() = default;
  virtual void reset() = 0;

  /// An error carrying the first hazard found, or ok.
  virtual Status verdict() const = 0;
  virtual void flag(const std::string &message) = 0;

  virtual void onSharedAccess(Cta &target, const Warp &warp, uint32_t lane,
                              uint32_t address, uint32_t bytes, bool write,
                              uint32_t pc) = 0;
  virtual void onProxyFence(const Warp &warp) = 0;
  /// `fence` (not a proxy fence) or `membar`: `in` gives its semantics and
  /// scope.
  virtual void onFence(const Warp &warp, const Instruction &in) = 0;
  /// A load, store or atomic (`in`) of global memory by `lane` of `warp`.
  /// Followed only in a co-scheduled group, across devices.
  virtual void onGlobalAccess(const Warp &warp, uint32_t lane, uint64_t address,
                              uint32_t bytes, bool write, uint32_t pc,
                              const Instruction &in) = 0;

  /// A generic-proxy access (load, store, atomic, mbarrier operation) by
  /// `warp` to the shared memory of another CTA of the cluster.
  virtual void onPeerAccess(Cta &target, const Warp &warp, uint32_t lane,
                            uint32_t pc) = 0;
  /// `warp`'s last threads exited; the last warp of a CTA exits the CTA.
  virtual void onWarpExit(const Warp &warp) = 0;
  virtual std::optional<Finding> onSetmaxnreg(const Warp &warp,
                                              uint32_t pc) = 0;

  virtual void onBarrierArrive(Cta &cta, const Warp &warp, uint32_t id) = 0;
  virtual void onBarrierComplete(Cta &cta, uint32_t id, const Warp &warp) = 0;
  virtual void onBarrierResume(Cta &cta, uint32_t id, const Warp &warp) = 0;
  virtual void onClusterArrive(const Warp &warp) = 0;
  virtual void onClusterComplete(const Cluster &cluster) = 0;
  virtual void onClusterWait(const Warp &warp) = 0;

  virtual void onMbarrierInit(Cta &cta, uint32_t offset, const Warp &warp) = 0;
  virtual void onMbarrierArrive(Cta &cta, uint32_t offset,
                                const Warp &warp) = 0;
  virtual void onMbarrierPhase(Cta &cta, uint32_t offset,
                               MbarrierState &state) = 0;
  virtual std::optional<Finding>
  onMbarrierWait(Cta &cta, uint32_t offset, const Warp &warp, uint32_t lane,
                 const MbarrierState &state, uint64_t token, bool parity) = 0;

  virtual AsyncClock onAsyncIssue(const Warp &warp, uint64_t asyncId) = 0;
  virtual void onAsyncAccess(Cta &target, const AsyncClock &clock,
                             uint32_t address, uint32_t bytes, bool write,
                             const std::string &what) = 0;
  virtual void onAsyncRelease(Cta &cta, uint32_t barrierOffset,
                              const AsyncClock &clock) = 0;
  /// `warp` waited for asynchronous operation `asyncId`: for its reads of
  /// shared memory only (`cp.async.bulk.wait_group.read`), or until its
  /// writes were performed (`performed`).
  virtual void onAsyncWait(const Warp &warp, uint64_t asyncId,
                           bool performed) = 0;
  /// An asynchronous operation read or wrote global memory (at its
  /// completion). Followed only in a co-scheduled group, across devices.
  virtual void onAsyncGlobalAccess(const AsyncClock &clock, uint64_t address,
                                   uint64_t bytes, bool write,
                                   const std::string &what) = 0;

  virtual AsyncClock onWgmmaIssue(Cta &cta, uint32_t group) = 0;
  virtual void onWgmmaWait(const Warp &warp, const AsyncClock &clock) = 0;
};

/// Checking off: every event is ignored and no hazard is ever found.
class NoHazardChecker final : public HazardChecker {
public:
  void reset() override {}
  Status verdict() const override { return Status(); }
  void flag(const std::string &) override {}
  void onSharedAccess(Cta &, const Warp &, uint32_t, uint32_t, uint32_t, bool,
                      uint32_t) override {}
  void onProxyFence(const Warp &) override {}
  void onFence(const Warp &, const Instruction &) override {}
  void onGlobalAccess(const Warp &, uint32_t, uint64_t, uint32_t, bool,
                      uint32_t, const Instruction &) override {}
  void onPeerAccess(Cta &, const Warp &, uint32_t, uint32_t) override {}
  void onWarpExit(const Warp &) override {}
  std::optional<Finding> onSetmaxnreg(const Warp &, uint32_t) override {
    return std::nullopt;
  }
  void onBarrierArrive(Cta &, const Warp &, uint32_t) override {}
  void onBarrierComplete(Cta &, uint32_t, const Warp &) override {}
  void onBarrierResume(Cta &, uint32_t, const Warp &) override {}
  void onClusterArrive(const Warp &) override {}
  void onClusterComplete(const Cluster &) override {}
  void onClusterWait(const Warp &) override {}
  void onMbarrierInit(Cta &, uint32_t, const Warp &) override {}
  void onMbarrierArrive(Cta &, uint32_t, const Warp &) override {}
  void onMbarrierPhase(Cta &, uint32_t, MbarrierState &) override {}
  std::optional<Finding> onMbarrierWait(Cta &, uint32_t, const Warp &, uint32_t,
                                        const MbarrierState &, uint64_t,
                                        bool) override {
    return std::nullopt;
  }
  AsyncClock onAsyncIssue(const Warp &, uint64_t) override {
    return AsyncClock();
  }
  void onAsyncAccess(Cta &, const AsyncClock &, uint32_t, uint32_t, bool,
                     const std::string &) override {}
  void onAsyncRelease(Cta &, uint32_t, const AsyncClock &) override {}
  void onAsyncWait(const Warp &, uint64_t, bool) override {}
  void onAsyncGlobalAccess(const AsyncClock &, uint64_t, uint64_t, bool,
                           const std::string &) override {}
  AsyncClock onWgmmaIssue(Cta &, uint32_t) override { return AsyncClock(); }
  void onWgmmaWait(const Warp &, const AsyncClock &) override {}
};

/// The vector-clock checker described above, for `cluster`.
std::unique_ptr<HazardChecker> makeVectorClockChecker(Cluster &cluster);

/// The same checker for the clusters of a co-scheduled group
/// (launchTogether): one agent space over all of them, and global memory
/// shadowed so that accesses of different devices must be ordered by a
/// release/acquire pair at system scope.
std::unique_ptr<HazardChecker>
makeGroupVectorClockChecker(const std::vector<Cluster *> &clusters);

} // namespace mosaic::emulator

#endif // MOSAIC_EMULATOR_HAZARDS_H
