//===- Hazards.h - The asynchronous-hazard checker -------------*- C++ -*-===//
//
// Happens-before over the cluster's agents, with vector clocks: every warp
// is an agent (its lanes run in lockstep here, so they are ordered), every
// warp has 8 TMA/bulk-copy agents used round robin by the operations it
// issues, and every warp has a wgmma agent for its part of each warpgroup
// MMA (wgmma.wait_group covers only the executing warp's part). Barriers,
// mbarrier phases, cluster barriers and async completions carry clocks.
// Shared memory has a shadow per byte for generic accesses and per 16-byte
// chunk for the asynchronous proxy; an access that is not ordered after the
// conflicting access before it is a hazard. A CTA's exit must be ordered
// after every access its peers make to its shared memory, and the warps of
// a warpgroup must synchronize between two setmaxnreg. See
// docs/RationaleEmulator.md.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_HAZARDS_H
#define MOSAIC_EMULATOR_HAZARDS_H

#include "Engine.h"

#include <map>
#include <string>
#include <vector>

namespace mosaic::emulator {

struct Exec;
using Clock = std::vector<uint32_t>;

class HazardChecker {
public:
  explicit HazardChecker(Cluster &cluster) : cluster(cluster) {}
  void reset();

  bool failed() const { return !first.empty(); }
  const std::string &report() const { return first; }
  void flag(const std::string &message);

  void onSharedAccess(Cta &target, const Warp &warp, uint32_t lane,
                      uint32_t address, uint32_t bytes, bool write,
                      uint32_t pc);
  void onProxyFence(const Warp &warp);
  void onFence(const Warp &warp);

  /// A generic-proxy access (load, store, atomic, mbarrier operation) by
  /// `warp` to the shared memory of another CTA of the cluster.
  void onPeerAccess(Cta &target, const Warp &warp, uint32_t lane, uint32_t pc);
  /// `warp`'s last threads exited; the last warp of a CTA exits the CTA.
  void onWarpExit(const Warp &warp);
  void onSetmaxnreg(const Warp &warp, uint32_t pc, Exec &exec);

  void onBarrierArrive(Cta &cta, const Warp &warp, uint32_t id);
  void onBarrierComplete(Cta &cta, uint32_t id, const Warp &warp);
  void onBarrierResume(Cta &cta, uint32_t id, const Warp &warp);
  void onClusterArrive(const Warp &warp);
  void onClusterComplete();
  void onClusterWait(const Warp &warp);

  void onMbarrierInit(Cta &cta, uint32_t offset, const Warp &warp);
  void onMbarrierArrive(Cta &cta, uint32_t offset, const Warp &warp);
  void onMbarrierPhase(Cta &cta, uint32_t offset, MbarrierState &state);
  void onMbarrierWait(Cta &cta, uint32_t offset, const Warp &warp,
                      uint32_t lane, const MbarrierState &state,
                      uint64_t token, bool parity, Exec &exec);

  AsyncClock onAsyncIssue(const Warp &warp, uint64_t asyncId);
  void onAsyncAccess(Cta &target, const AsyncClock &clock, uint32_t address,
                     uint32_t bytes, bool write, const std::string &what);
  void onAsyncRelease(Cta &cta, uint32_t barrierOffset,
                      const AsyncClock &clock);
  void onAsyncWait(const Warp &warp, uint64_t asyncId);

  AsyncClock onWgmmaIssue(Cta &cta, uint32_t group);
  void onWgmmaWait(const Warp &warp, const AsyncClock &clock);

private:
  static constexpr uint32_t kTmaSlots = 8;
  static constexpr uint32_t kNone = UINT32_MAX;
  /// Agent ids at or above this mark are "the wgmma of warpgroup id-mark"
  /// (ordered only once all four warps' parts are).
  static constexpr uint32_t kWarpgroupMark = 0x80000000u;

  Cluster &cluster;
  std::string first;
  uint32_t warpCount = 0; // W
  std::vector<Clock> warpClocks;
  std::vector<uint32_t> agentEpochs;
  std::vector<uint32_t> tmaNext; // per warp: next TMA slot
  std::vector<std::vector<uint32_t>> fenceEpochs; // per warp
  std::map<uint64_t, AsyncClock> asyncClocks;
  std::vector<std::string> names; // async operation descriptions
  const std::string *lastNameSource = nullptr;

  struct Access {
    uint32_t agent = kNone, epoch = 0, pc = 0, lane = 0;
  };
  struct ByteShadow {
    Access write, read;
  };
  struct ChunkShadow {
    Access genericWrite, genericRead;
    uint32_t asyncWriteAgent = kNone, asyncWriteEpoch = 0, asyncWriteName = 0;
    uint32_t asyncReadAgent = kNone, asyncReadEpoch = 0, asyncReadName = 0;
    /// Some byte of the chunk has generic-proxy history in `bytes`.
    bool bytesTouched = false;
  };
  std::vector<std::vector<ByteShadow>> bytes;   // by CTA rank
  std::vector<std::vector<ChunkShadow>> chunks; // by CTA rank
  std::vector<Clock> barrierAccum, barrierReleased; // by rank * 16 + id
  Clock clusterAccum, clusterReleased;
  std::map<std::pair<uint32_t, uint32_t>, Clock> mbarrierAccum,
      mbarrierCompleted;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, uint32_t> observedPhase;
  /// CTA exits. Per rank: the join of its warps' clocks as they exit,
  /// whether all have, and by agent the last access of another CTA's
  /// agent to its shared memory (epoch 0: none).
  struct PeerAccess {
    uint32_t epoch = 0, pc = 0, lane = 0;
    uint32_t name = 0; // asynchronous operations: the description
  };
  std::vector<Clock> exitClocks;
  std::vector<uint8_t> ctaExited;
  std::vector<std::vector<PeerAccess>> peerAccesses;
  /// By warp agent: (epoch, pc) of each setmaxnreg it executed.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> setmaxnregs;

  uint32_t agentCount() const { return warpCount * (2 + kTmaSlots); }
  uint32_t warpAgent(const Warp &warp) const;
  uint32_t wgmmaAgent(uint32_t warpAgentIndex) const {
    return warpCount * (1 + kTmaSlots) + warpAgentIndex;
  }
  Clock &clockOf(const Warp &warp) { return warpClocks[warpAgent(warp)]; }
  void tick(const Warp &warp) { ++clockOf(warp)[warpAgent(warp)]; }
  static void join(Clock &into, const Clock &from);
  bool ordered(uint32_t agent, uint32_t epoch, const Clock &observer) const;
  std::string describeAgentAccess(uint32_t agent, const Access &access) const;
  std::string describeAsync(uint32_t agent, uint32_t name) const;
  std::string describePeerAccess(uint32_t agent,
                                 const PeerAccess &access) const;
};

} // namespace mosaic::emulator

#endif // MOSAIC_EMULATOR_HAZARDS_H
