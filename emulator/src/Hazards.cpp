//===- Hazards.cpp - The asynchronous-hazard checker --------------------===//

#include "Hazards.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace mosaic::emulator {

namespace {

using Clock = std::vector<uint32_t>;

const char *scopeName(Scope scope) {
  switch (scope) {
  case Scope::Cta:
    return "cta";
  case Scope::Cluster:
    return "cluster";
  case Scope::Gpu:
    return "gpu";
  case Scope::Sys:
    return "sys";
  case Scope::None:
    break;
  }
  return "gpu";
}

class VectorClockChecker final : public HazardChecker {
public:
  VectorClockChecker(std::vector<Cluster *> clusters, bool followsGlobal)
      : clusters(std::move(clusters)), followsGlobal(followsGlobal) {}
  void reset() override;
  Status verdict() const override;
  void flag(const std::string &message) override;

  void onSharedAccess(Cta &target, const Warp &warp, uint32_t lane,
                      uint32_t address, uint32_t bytes, bool write,
                      uint32_t pc) override;
  void onProxyFence(const Warp &warp) override;
  void onFence(const Warp &warp, const Instruction &in) override;
  void onGlobalAccess(const Warp &warp, uint32_t lane, uint64_t address,
                      uint32_t bytes, bool write, uint32_t pc,
                      const Instruction &in) override;
  void onPeerAccess(Cta &target, const Warp &warp, uint32_t lane,
                    uint32_t pc) override;
  void onWarpExit(const Warp &warp) override;
  std::optional<Finding> onSetmaxnreg(const Warp &warp, uint32_t pc) override;

  void onBarrierArrive(Cta &cta, const Warp &warp, uint32_t id) override;
  void onBarrierComplete(Cta &cta, uint32_t id, const Warp &warp) override;
  void onBarrierResume(Cta &cta, uint32_t id, const Warp &warp) override;
  void onClusterArrive(const Warp &warp) override;
  void onClusterComplete(const Cluster &cluster) override;
  void onClusterWait(const Warp &warp) override;

  void onMbarrierInit(Cta &cta, uint32_t offset, const Warp &warp) override;
  void onMbarrierArrive(Cta &cta, uint32_t offset, const Warp &warp) override;
  void onMbarrierPhase(Cta &cta, uint32_t offset,
                       MbarrierState &state) override;
  std::optional<Finding> onMbarrierWait(Cta &cta, uint32_t offset,
                                        const Warp &warp, uint32_t lane,
                                        const MbarrierState &state,
                                        uint64_t token, bool parity) override;

  AsyncClock onAsyncIssue(const Warp &warp, uint64_t asyncId) override;
  void onAsyncAccess(Cta &target, const AsyncClock &clock, uint32_t address,
                     uint32_t bytes, bool write,
                     const std::string &what) override;
  void onAsyncRelease(Cta &cta, uint32_t barrierOffset,
                      const AsyncClock &clock) override;
  void onAsyncWait(const Warp &warp, uint64_t asyncId, bool performed) override;
  void onAsyncGlobalAccess(const AsyncClock &clock, uint64_t address,
                           uint64_t bytes, bool write,
                           const std::string &what) override;

  AsyncClock onWgmmaIssue(Cta &cta, uint32_t group) override;
  void onWgmmaWait(const Warp &warp, const AsyncClock &clock) override;

private:
  bool failed() const { return !first.empty(); }

  static constexpr uint32_t kTmaSlots = 8;
  static constexpr uint32_t kNone = UINT32_MAX;
  /// Agent ids at or above this mark are "the wgmma of warpgroup id-mark"
  /// (ordered only once all four warps' parts are).
  static constexpr uint32_t kWarpgroupMark = 0x80000000u;

  /// The clusters followed: one, or every cluster of a co-scheduled group.
  std::vector<Cluster *> clusters;
  /// A group: global memory is shadowed across devices.
  bool followsGlobal = false;
  std::string first;
  uint32_t warpCount = 0; // W
  /// By warp agent: the warp's CTA and index in it.
  std::vector<std::pair<Cta *, uint32_t>> agentWarps;
  std::vector<Clock> warpClocks;
  std::vector<uint32_t> agentEpochs;
  std::vector<uint32_t> tmaNext;                  // per warp: next TMA slot
  std::vector<std::vector<uint32_t>> fenceEpochs; // per warp
  /// By asyncKey: operation ids are per cluster.
  std::map<uint64_t, AsyncClock> asyncClocks;
  static uint64_t asyncKey(const Warp &warp, uint64_t asyncId) {
    return uint64_t(warp.cta->cluster->checkerIndex) << 44 | asyncId;
  }
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
  std::vector<std::vector<ByteShadow>> bytes;       // by CTA rank
  std::vector<std::vector<ChunkShadow>> chunks;     // by CTA rank
  std::vector<Clock> barrierAccum, barrierReleased; // by rank * 16 + id
  std::vector<Clock> clusterAccum, clusterReleased; // by cluster
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

  // Global memory, in a group: per 4-byte word, the last write and the last
  // read (name != 0: by an asynchronous operation, names[name]), and the
  // release clock a word's release sequence carries.
  struct GlobalAccess {
    uint32_t agent = kNone, epoch = 0, pc = 0, lane = 0, name = 0;
    /// Strong at .sys scope: does not race with another such access.
    bool strongSys = false;
    /// Strong (an atomic, or .relaxed/.acquire/.release/.volatile) at
    /// this scope.
    bool strong = false;
    Scope scope = Scope::None;
  };
  struct GlobalWord {
    GlobalAccess write, read;
  };
  std::unordered_map<uint64_t, GlobalWord> globalWords; // by address / 4
  struct Release {
    /// What an acquire at .sys scope of the word learns.
    Clock released;
    /// The last release at a narrower scope, for messages.
    uint32_t narrowAgent = kNone, narrowPc = 0;
    Scope narrowScope = Scope::None;
  };
  std::unordered_map<uint64_t, Release> releases; // by address / 4
  /// By warp agent: the clock at its last fence.sc/fence.acq_rel/membar at
  /// .sys scope (empty: none), which its later relaxed .sys writes
  /// release; what its relaxed .sys reads learned since, which its next
  /// such fence acquires; and why an ordering it relied on does not hold
  /// across devices (a narrower scope).
  std::vector<Clock> fenceReleased, pendingAcquire;
  std::vector<std::string> scopeNotes;

  void checkGlobal(uint64_t address, uint64_t bytes, bool write,
                   const GlobalAccess &now, const Clock &observer,
                   const std::function<std::string()> &here);
  std::string describeGlobal(const GlobalAccess &access) const;

  uint32_t agentCount() const { return warpCount * (2 + kTmaSlots); }
  uint32_t warpAgent(const Warp &warp) const { return warp.agent; }
  /// The warp agent an agent belongs to (a TMA or wgmma agent: its warp).
  uint32_t owningWarp(uint32_t agent) const {
    if (agent < warpCount)
      return agent;
    if (agent < wgmmaAgent(0))
      return (agent - warpCount) / kTmaSlots;
    return agent - wgmmaAgent(0);
  }
  uint32_t deviceOf(uint32_t agent) const {
    return agentWarps[owningWarp(agent)].first->cluster->launch->device;
  }
  uint32_t nameOf(const std::string &what);
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

} // namespace

void VectorClockChecker::reset() {
  first.clear();
  // Number the clusters, CTAs and warp agents of every cluster followed.
  agentWarps.clear();
  std::vector<Cta *> ctas;
  for (uint32_t c = 0; c < clusters.size(); ++c) {
    clusters[c]->checkerIndex = c;
    for (auto &cta : clusters[c]->ctas) {
      cta->checkerIndex = static_cast<uint32_t>(ctas.size());
      ctas.push_back(cta.get());
      for (Warp &warp : cta->warps) {
        warp.agent = static_cast<uint32_t>(agentWarps.size());
        agentWarps.push_back({cta.get(), warp.index});
      }
    }
  }
  warpCount = static_cast<uint32_t>(agentWarps.size());
  uint32_t agents = agentCount();
  warpClocks.assign(warpCount, Clock(agents, 0));
  for (uint32_t w = 0; w < warpCount; ++w)
    warpClocks[w][w] = 1;
  agentEpochs.assign(agents, 0);
  tmaNext.assign(warpCount, 0);
  fenceEpochs.assign(warpCount, {});
  asyncClocks.clear();
  names.assign(1, "");
  bytes.resize(ctas.size());
  chunks.resize(ctas.size());
  for (size_t r = 0; r < ctas.size(); ++r) {
    size_t size = ctas[r]->shared.size();
    bytes[r].assign(size, ByteShadow());
    chunks[r].assign((size + 15) / 16, ChunkShadow());
  }
  barrierAccum.assign(ctas.size() * 16, Clock(agents, 0));
  barrierReleased.assign(ctas.size() * 16, Clock(agents, 0));
  clusterAccum.assign(clusters.size(), Clock(agents, 0));
  clusterReleased.assign(clusters.size(), Clock(agents, 0));
  mbarrierAccum.clear();
  mbarrierCompleted.clear();
  observedPhase.clear();
  exitClocks.assign(ctas.size(), Clock(agents, 0));
  ctaExited.assign(ctas.size(), 0);
  peerAccesses.assign(ctas.size(), std::vector<PeerAccess>(agents));
  setmaxnregs.assign(warpCount, {});
  globalWords.clear();
  releases.clear();
  fenceReleased.assign(followsGlobal ? warpCount : 0, Clock());
  pendingAcquire.assign(followsGlobal ? warpCount : 0, Clock());
  scopeNotes.assign(followsGlobal ? warpCount : 0, std::string());
}

Status VectorClockChecker::verdict() const {
  return failed() ? Status(Error{first}) : Status();
}

void VectorClockChecker::flag(const std::string &message) {
  if (first.empty())
    first = message;
}

void VectorClockChecker::join(Clock &into, const Clock &from) {
  for (size_t i = 0; i < into.size() && i < from.size(); ++i)
    into[i] = std::max(into[i], from[i]);
}

bool VectorClockChecker::ordered(uint32_t agent, uint32_t epoch,
                                 const Clock &observer) const {
  if (agent == kNone)
    return true;
  if (agent >= kWarpgroupMark) {
    uint32_t firstWarp = agent - kWarpgroupMark;
    for (uint32_t w = firstWarp; w < firstWarp + 4; ++w)
      if (observer[wgmmaAgent(w)] < epoch)
        return false;
    return true;
  }
  return observer[agent] >= epoch;
}

std::string
VectorClockChecker::describeAgentAccess(uint32_t agent,
                                        const Access &access) const {
  auto [cta, warp] = agentWarps[agent];
  return describeLocation(*cta->cluster->launch, *cta, warp,
                          static_cast<int>(access.lane), access.pc);
}

std::string VectorClockChecker::describeAsync(uint32_t agent,
                                              uint32_t name) const {
  (void)agent;
  return name < names.size() ? names[name] : "an asynchronous operation";
}

std::string
VectorClockChecker::describePeerAccess(uint32_t agent,
                                       const PeerAccess &access) const {
  if (agent >= warpCount)
    return describeAsync(agent, access.name);
  return describeAgentAccess(
      agent, Access{agent, access.epoch, access.pc, access.lane});
}

void VectorClockChecker::onSharedAccess(Cta &target, const Warp &warp,
                                        uint32_t lane, uint32_t address,
                                        uint32_t size, bool write,
                                        uint32_t pc) {
  if (failed())
    return;
  uint32_t self = warpAgent(warp);
  const Clock &clock = clockOf(warp);
  Access now{self, clock[self], pc, lane};
  std::vector<ByteShadow> &shadow = bytes[target.checkerIndex];
  std::vector<ChunkShadow> &chunkShadow = chunks[target.checkerIndex];
  auto here = [&]() {
    return describeLocation(*warp.cta->cluster->launch, *warp.cta, warp.index,
                            static_cast<int>(lane), pc);
  };
  for (uint32_t i = 0; i < size; ++i) {
    ByteShadow &byte = shadow[address + i];
    if (byte.write.agent != kNone && byte.write.agent != self &&
        !ordered(byte.write.agent, byte.write.epoch, clock)) {
      flag("hazard: data race on shared memory: a " +
           std::string(write ? "write" : "read") + " at shared address " +
           std::to_string(address + i) + " is not ordered after the write by " +
           describeAgentAccess(byte.write.agent, byte.write) + "\n  at " +
           here());
      return;
    }
    if (write && byte.read.agent != kNone && byte.read.agent != self &&
        !ordered(byte.read.agent, byte.read.epoch, clock)) {
      flag("hazard: data race on shared memory: a write at shared address " +
           std::to_string(address + i) + " is not ordered after the read by " +
           describeAgentAccess(byte.read.agent, byte.read) + "\n  at " +
           here());
      return;
    }
    if (write) {
      byte.write = now;
      byte.read = Access();
    } else {
      byte.read = now;
    }
  }
  for (uint32_t chunk = address / 16; chunk <= (address + size - 1) / 16;
       ++chunk) {
    ChunkShadow &c = chunkShadow[chunk];
    if (!ordered(c.asyncWriteAgent, c.asyncWriteEpoch, clock)) {
      flag("hazard: a generic-proxy " + std::string(write ? "write" : "read") +
           " of shared address " + std::to_string(chunk * 16) +
           " is not ordered after the write by " +
           describeAsync(c.asyncWriteAgent, c.asyncWriteName) +
           " (wait on its mbarrier first)\n  at " + here());
      return;
    }
    if (write && !ordered(c.asyncReadAgent, c.asyncReadEpoch, clock)) {
      flag("hazard: a generic-proxy write of shared address " +
           std::to_string(chunk * 16) + " may overwrite data that " +
           describeAsync(c.asyncReadAgent, c.asyncReadName) +
           " still reads (wait for it first)\n  at " + here());
      return;
    }
    if (write)
      c.genericWrite = now;
    else
      c.genericRead = now;
    c.bytesTouched = true;
  }
}

void VectorClockChecker::onProxyFence(const Warp &warp) {
  uint32_t self = warpAgent(warp);
  fenceEpochs[self].push_back(clockOf(warp)[self]);
  tick(warp);
}

void VectorClockChecker::onFence(const Warp &warp, const Instruction &in) {
  // fence.sc and fence.acq_rel at .sys scope (membar.sys is fence.sc.sys)
  // order the warp's relaxed .sys accesses across devices: its earlier
  // relaxed reads acquire, its later relaxed writes release.
  bool full = in.op == Op::Membar || in.acquire || in.release;
  if (followsGlobal && full) {
    uint32_t self = warpAgent(warp);
    if (in.scope == Scope::Sys) {
      if (!pendingAcquire[self].empty()) {
        join(clockOf(warp), pendingAcquire[self]);
        pendingAcquire[self].clear();
      }
      fenceReleased[self] = clockOf(warp);
    } else if (!pendingAcquire[self].empty() || in.scope != Scope::None) {
      scopeNotes[self] =
          "the fence at line " + std::to_string(in.line) + " is at ." +
          scopeName(in.scope) +
          " scope, which does not order accesses of different devices";
    }
  }
  tick(warp);
}

uint32_t VectorClockChecker::nameOf(const std::string &what) {
  if ((names.size() > 1 && lastNameSource == &what) || names.back() == what) {
    lastNameSource = &what;
    return static_cast<uint32_t>(names.size() - 1);
  }
  names.push_back(what);
  lastNameSource = &what;
  return static_cast<uint32_t>(names.size() - 1);
}

std::string
VectorClockChecker::describeGlobal(const GlobalAccess &access) const {
  if (access.name)
    return describeAsync(access.agent, access.name);
  return describeAgentAccess(
      access.agent, Access{access.agent, access.epoch, access.pc, access.lane});
}

void VectorClockChecker::checkGlobal(uint64_t address, uint64_t bytes,
                                     bool write, const GlobalAccess &now,
                                     const Clock &observer,
                                     const std::function<std::string()> &here) {
  uint32_t device = deviceOf(now.agent);
  auto conflicts = [&](const GlobalAccess &earlier) {
    return earlier.agent != kNone && deviceOf(earlier.agent) != device &&
           !(earlier.strongSys && now.strongSys) &&
           !ordered(earlier.agent, earlier.epoch, observer);
  };
  auto report = [&](const GlobalAccess &earlier, bool earlierWrite,
                    uint64_t word) {
    char at[32];
    std::snprintf(at, sizeof(at), "0x%llx",
                  static_cast<unsigned long long>(word * 4));
    std::string note;
    // Two strong accesses race across devices when either one's scope
    // leaves the other device out.
    if (now.strong && earlier.strong) {
      const GlobalAccess &narrow = now.strongSys ? earlier : now;
      note =
          "the access at line " +
          std::to_string(agentWarps[owningWarp(narrow.agent)]
                             .first->cluster->launch->function->code[narrow.pc]
                             .line) +
          " is strong only at ." + scopeName(narrow.scope) +
          " scope, which does not order accesses of different devices";
    }
    if (note.empty() && earlier.name && earlierWrite)
      note = "an asynchronous store's writes are performed only once a "
             "cp.async.bulk.wait_group (not the .read form) covered it";
    if (note.empty())
      note = scopeNotes[owningWarp(now.agent)];
    if (note.empty())
      note = scopeNotes[owningWarp(earlier.agent)];
    flag("hazard: data race on global memory between devices " +
         std::to_string(deviceOf(earlier.agent)) + " and " +
         std::to_string(device) + ": the " + (write ? "write" : "read") +
         " of global address " + at + " by " + here() +
         "\n  is not ordered after the " + (earlierWrite ? "write" : "read") +
         " by " + describeGlobal(earlier) +
         "\n  (accesses of different devices must be ordered by a release "
         "at .sys scope that an acquire at .sys scope reads" +
         (note.empty() ? std::string() : "; " + note) + ")");
  };
  for (uint64_t word = address / 4; word <= (address + bytes - 1) / 4; ++word) {
    GlobalWord &shadow = globalWords[word];
    if (conflicts(shadow.write)) {
      report(shadow.write, true, word);
      return;
    }
    if (write && conflicts(shadow.read)) {
      report(shadow.read, false, word);
      return;
    }
    if (write) {
      shadow.write = now;
      shadow.read = GlobalAccess();
    } else {
      shadow.read = now;
    }
  }
}

void VectorClockChecker::onGlobalAccess(const Warp &warp, uint32_t lane,
                                        uint64_t address, uint32_t bytes,
                                        bool write, uint32_t pc,
                                        const Instruction &in) {
  if (!followsGlobal || failed())
    return;
  bool rmw = in.op == Op::Atom || in.op == Op::Red;
  if (!rmw && in.op != Op::Ld && in.op != Op::Ldu && in.op != Op::St)
    return;
  bool reads = !write || in.op == Op::Atom;
  Scope scope = in.scope != Scope::None ? in.scope
                : rmw || in.strong      ? Scope::Gpu
                                        : Scope::None;
  bool strong = rmw || in.strong;
  uint32_t self = warpAgent(warp);
  Clock &clock = clockOf(warp);
  GlobalAccess now{self,   clock[self], pc,
                   lane,   0,           strong && scope == Scope::Sys,
                   strong, scope};
  checkGlobal(address, bytes, write, now, clock, [&] {
    return describeLocation(*warp.cta->cluster->launch, *warp.cta, warp.index,
                            static_cast<int>(lane), pc);
  });
  uint64_t key = address / 4;
  if (reads) {
    auto it = releases.find(key);
    if (it != releases.end()) {
      const Release &release = it->second;
      if (strong && scope == Scope::Sys) {
        if (in.acquire)
          join(clock, release.released);
        else if (!release.released.empty()) {
          Clock &pending = pendingAcquire[self];
          if (pending.empty())
            pending.assign(agentCount(), 0);
          join(pending, release.released);
        }
      } else if (in.acquire) {
        scopeNotes[self] = "the acquire at line " + std::to_string(in.line) +
                           " is at ." + scopeName(scope) +
                           " scope, which does not order accesses of "
                           "different devices";
      }
      if (release.narrowAgent != kNone &&
          deviceOf(release.narrowAgent) != deviceOf(self))
        scopeNotes[self] =
            "the release by " +
            describeAgentAccess(
                release.narrowAgent,
                Access{release.narrowAgent, 0, release.narrowPc, 0}) +
            " is at ." + scopeName(release.narrowScope) +
            " scope, which does not order accesses of different devices";
    }
  }
  if (write) {
    // What this write releases at .sys scope: the warp's clock for a
    // release, its clock at its last .sys fence for a relaxed .sys write.
    const Clock *released = nullptr;
    if (strong && scope == Scope::Sys)
      released = in.release                     ? &clock
                 : !fenceReleased[self].empty() ? &fenceReleased[self]
                                                : nullptr;
    auto it = releases.find(key);
    if (!released && !(in.release && scope != Scope::Sys) &&
        it == releases.end())
      return;
    Release &release = it != releases.end() ? it->second : releases[key];
    // A read-modify-write continues the release sequence it reads from;
    // any other write starts over.
    if (!rmw)
      release.released.clear();
    if (released) {
      if (release.released.empty())
        release.released.assign(agentCount(), 0);
      join(release.released, *released);
    }
    if (in.release && scope != Scope::Sys) {
      release.narrowAgent = self;
      release.narrowPc = pc;
      release.narrowScope = scope;
    }
    if (in.release)
      tick(warp);
  }
}

void VectorClockChecker::onAsyncGlobalAccess(const AsyncClock &clock,
                                             uint64_t address, uint64_t bytes,
                                             bool write,
                                             const std::string &what) {
  if (!followsGlobal || failed() || bytes == 0 || clock.agent == kNone)
    return;
  // A write is performed at the operation's completion: only a wait that
  // covers it (not the .read form) orders it (onAsyncWait).
  GlobalAccess now{
      clock.agent, write ? clock.epoch + 1 : clock.epoch, 0, 0, nameOf(what),
      false};
  checkGlobal(address, bytes, write, now, clock.issue, [&] { return what; });
}

namespace {

std::string exitedCtaHazard(uint32_t rank) {
  return "hazard: an access to the shared memory of CTA rank " +
         std::to_string(rank) +
         ", which has exited (a CTA's shared memory must outlive its peers' "
         "accesses: end the CTAs with barrier.cluster.arrive and "
         "barrier.cluster.wait)";
}

} // namespace

void VectorClockChecker::onPeerAccess(Cta &target, const Warp &warp,
                                      uint32_t lane, uint32_t pc) {
  if (failed())
    return;
  if (ctaExited[target.checkerIndex]) {
    flag(exitedCtaHazard(target.rank) + "\n  at " +
         describeLocation(*warp.cta->cluster->launch, *warp.cta, warp.index,
                          static_cast<int>(lane), pc));
    return;
  }
  uint32_t self = warpAgent(warp);
  peerAccesses[target.checkerIndex][self] = {clockOf(warp)[self], pc, lane, 0};
}

void VectorClockChecker::onWarpExit(const Warp &warp) {
  Cta &cta = *warp.cta;
  join(exitClocks[cta.checkerIndex], clockOf(warp));
  if (cta.exitedWarps < cta.warps.size())
    return;
  ctaExited[cta.checkerIndex] = 1;
  const Clock &exit = exitClocks[cta.checkerIndex];
  const std::vector<PeerAccess> &accesses = peerAccesses[cta.checkerIndex];
  for (uint32_t agent = 0; agent < accesses.size() && !failed(); ++agent)
    if (accesses[agent].epoch != 0 &&
        !ordered(agent, accesses[agent].epoch, exit))
      flag("hazard: CTA rank " + std::to_string(cta.rank) + " exits while " +
           describePeerAccess(agent, accesses[agent]) +
           " may still access its shared memory (nothing orders that access "
           "before the exit: end the CTAs with barrier.cluster.arrive and "
           "barrier.cluster.wait)");
}

std::optional<Finding> VectorClockChecker::onSetmaxnreg(const Warp &warp,
                                                        uint32_t pc) {
  std::optional<Finding> finding;
  uint32_t self = warpAgent(warp);
  std::vector<std::pair<uint32_t, uint32_t>> &mine = setmaxnregs[self];
  // PTX ISA, setmaxnreg: after one, the warps of the warpgroup synchronize
  // before any executes the next.
  if (!mine.empty()) {
    size_t previous = mine.size() - 1;
    uint32_t first = self - warp.index % 4;
    for (uint32_t other = first; other < first + 4; ++other) {
      if (other == self || setmaxnregs[other].size() <= previous)
        continue;
      auto [epoch, otherPc] = setmaxnregs[other][previous];
      if (!ordered(other, epoch, clockOf(warp))) {
        finding = Finding{
            "setmaxnreg is not ordered after warp " +
            std::to_string(other - (self - warp.index)) +
            "'s setmaxnreg at line " +
            std::to_string(
                warp.cta->cluster->launch->function->code[otherPc].line) +
            ": the warps of a warpgroup must synchronize (bar.sync) "
            "between two setmaxnreg"};
        break;
      }
    }
  }
  mine.push_back({clockOf(warp)[self], pc});
  tick(warp);
  return finding;
}

void VectorClockChecker::onBarrierArrive(Cta &cta, const Warp &warp,
                                         uint32_t id) {
  join(barrierAccum[cta.checkerIndex * 16 + id], clockOf(warp));
  tick(warp);
}

void VectorClockChecker::onBarrierComplete(Cta &cta, uint32_t id,
                                           const Warp &warp) {
  Clock &accum = barrierAccum[cta.checkerIndex * 16 + id];
  barrierReleased[cta.checkerIndex * 16 + id] = accum;
  std::fill(accum.begin(), accum.end(), 0);
  join(clockOf(warp), barrierReleased[cta.checkerIndex * 16 + id]);
}

void VectorClockChecker::onBarrierResume(Cta &cta, uint32_t id,
                                         const Warp &warp) {
  join(clockOf(warp), barrierReleased[cta.checkerIndex * 16 + id]);
}

void VectorClockChecker::onClusterArrive(const Warp &warp) {
  join(clusterAccum[warp.cta->cluster->checkerIndex], clockOf(warp));
  tick(warp);
}

void VectorClockChecker::onClusterComplete(const Cluster &cluster) {
  Clock &accum = clusterAccum[cluster.checkerIndex];
  clusterReleased[cluster.checkerIndex] = accum;
  std::fill(accum.begin(), accum.end(), 0);
}

void VectorClockChecker::onClusterWait(const Warp &warp) {
  join(clockOf(warp), clusterReleased[warp.cta->cluster->checkerIndex]);
}

void VectorClockChecker::onMbarrierInit(Cta &cta, uint32_t offset,
                                        const Warp &warp) {
  auto key = std::make_pair(cta.checkerIndex, offset);
  mbarrierAccum[key] = clockOf(warp);
  mbarrierCompleted[key] = Clock(agentCount(), 0);
  for (auto it = observedPhase.begin(); it != observedPhase.end();)
    if (std::get<0>(it->first) == cta.checkerIndex &&
        std::get<1>(it->first) == offset)
      it = observedPhase.erase(it);
    else
      ++it;
  tick(warp);
}

void VectorClockChecker::onMbarrierArrive(Cta &cta, uint32_t offset,
                                          const Warp &warp) {
  Clock &accum = mbarrierAccum[{cta.checkerIndex, offset}];
  if (accum.empty())
    accum.assign(agentCount(), 0);
  join(accum, clockOf(warp));
  tick(warp);
}

void VectorClockChecker::onMbarrierPhase(Cta &cta, uint32_t offset,
                                         MbarrierState &state) {
  (void)state;
  auto key = std::make_pair(cta.checkerIndex, offset);
  Clock &accum = mbarrierAccum[key];
  if (accum.empty())
    accum.assign(agentCount(), 0);
  mbarrierCompleted[key] = accum;
  std::fill(accum.begin(), accum.end(), 0);
}

std::optional<Finding>
VectorClockChecker::onMbarrierWait(Cta &cta, uint32_t offset, const Warp &warp,
                                   uint32_t lane, const MbarrierState &state,
                                   uint64_t token, bool parity) {
  std::optional<Finding> finding;
  (void)token;
  (void)parity;
  auto key = std::make_tuple(warpAgent(warp), cta.checkerIndex, offset);
  auto it = observedPhase.find(key);
  uint32_t last = it == observedPhase.end() ? 0 : it->second;
  if (state.phase > last + 1) {
    finding =
        Finding{"mbarrier misuse: a wait on the mbarrier at shared address " +
                    std::to_string(offset) + " succeeds after " +
                    std::to_string(state.phase - last) +
                    " phases completed since this warp last waited on it: "
                    "the parity aliases an older phase",
                static_cast<int>(lane)};
  }
  observedPhase[key] = state.phase;
  Clock &completed = mbarrierCompleted[{cta.checkerIndex, offset}];
  if (!completed.empty())
    join(clockOf(warp), completed);
  return finding;
}

AsyncClock VectorClockChecker::onAsyncIssue(const Warp &warp,
                                            uint64_t asyncId) {
  uint32_t self = warpAgent(warp);
  AsyncClock clock;
  clock.issue = clockOf(warp);
  uint32_t slot = tmaNext[self]++ % kTmaSlots;
  clock.agent = warpCount + self * kTmaSlots + slot;
  // Two epochs per operation: the first for its shared-memory side and
  // whatever an mbarrier or a `.read` wait learns, the second once its
  // writes to global memory were performed (a full bulk-group wait).
  agentEpochs[clock.agent] += 2;
  clock.epoch = agentEpochs[clock.agent] - 1;
  clock.issue[clock.agent] = clock.epoch;
  tick(warp);
  if (asyncId)
    asyncClocks[asyncKey(warp, asyncId)] = clock;
  return clock;
}

void VectorClockChecker::onAsyncAccess(Cta &target, const AsyncClock &clock,
                                       uint32_t address, uint32_t size,
                                       bool write, const std::string &what) {
  if (failed())
    return;
  uint32_t name = nameOf(what);
  // An operation another CTA issued, into this CTA's shared memory.
  if (clock.agent >= warpCount && clock.agent < wgmmaAgent(0) &&
      agentWarps[owningWarp(clock.agent)].first != &target) {
    if (ctaExited[target.checkerIndex]) {
      flag(exitedCtaHazard(target.rank) + "\n  by " + what);
      return;
    }
    peerAccesses[target.checkerIndex][clock.agent] = {clock.epoch, 0, 0, name};
  }
  const Clock &observer = clock.issue;
  std::vector<ChunkShadow> &chunkShadow = chunks[target.checkerIndex];
  for (uint32_t chunk = address / 16; chunk <= (address + size - 1) / 16;
       ++chunk) {
    ChunkShadow &c = chunkShadow[chunk];
    auto where = [&]() {
      return " shared address " + std::to_string(chunk * 16) +
             (target.rank ? " of CTA rank " + std::to_string(target.rank)
                          : std::string());
    };
    if (c.genericWrite.agent != kNone) {
      if (!ordered(c.genericWrite.agent, c.genericWrite.epoch, observer)) {
        flag("hazard: " + what + (write ? " writes" : " reads") + where() +
             ", which " +
             describeAgentAccess(c.genericWrite.agent, c.genericWrite) +
             " wrote without a barrier ordering it before the operation");
        return;
      }
      if (!write) {
        // The writer must have fenced the generic proxy against the async
        // proxy after writing, before the operation was issued.
        const std::vector<uint32_t> &fences = fenceEpochs[c.genericWrite.agent];
        auto fence = std::upper_bound(fences.begin(), fences.end(),
                                      c.genericWrite.epoch - 1);
        bool fenced = fence != fences.end() && *fence >= c.genericWrite.epoch &&
                      observer[c.genericWrite.agent] >= *fence;
        if (!fenced) {
          flag("hazard: " + what + " reads" + where() +
               " written through the generic proxy by " +
               describeAgentAccess(c.genericWrite.agent, c.genericWrite) +
               " without a fence.proxy.async between the write and the "
               "operation");
          return;
        }
      }
    }
    if (write && c.genericRead.agent != kNone &&
        !ordered(c.genericRead.agent, c.genericRead.epoch, observer)) {
      flag("hazard: " + what + " overwrites" + where() + " while " +
           describeAgentAccess(c.genericRead.agent, c.genericRead) +
           " may still read it (nothing orders that read before the "
           "operation)");
      return;
    }
    if (c.asyncWriteAgent != kNone && c.asyncWriteAgent != clock.agent &&
        !ordered(c.asyncWriteAgent, c.asyncWriteEpoch, observer)) {
      flag("hazard: " + what + (write ? " writes" : " reads") + where() +
           ", which " + describeAsync(c.asyncWriteAgent, c.asyncWriteName) +
           " writes, and nothing orders the two");
      return;
    }
    if (write && c.asyncReadAgent != kNone && c.asyncReadAgent != clock.agent &&
        !ordered(c.asyncReadAgent, c.asyncReadEpoch, observer)) {
      flag("hazard: " + what + " refills" + where() + " while " +
           describeAsync(c.asyncReadAgent, c.asyncReadName) +
           " may still read it (a wgmma.wait_group covers only its own "
           "warp's part: every warp's completion must be ordered before the "
           "refill)");
      return;
    }
    if (write) {
      c.asyncWriteAgent = clock.agent;
      c.asyncWriteEpoch = clock.epoch;
      c.asyncWriteName = name;
      c.genericRead = Access();
      c.genericWrite = Access();
      // Bytes written by the async proxy start a fresh generic history.
      if (c.bytesTouched) {
        std::vector<ByteShadow> &shadow = bytes[target.checkerIndex];
        for (uint32_t i = chunk * 16; i < chunk * 16 + 16 && i < shadow.size();
             ++i)
          shadow[i] = ByteShadow();
        c.bytesTouched = false;
      }
    } else {
      c.asyncReadAgent = clock.agent;
      c.asyncReadEpoch = clock.epoch;
      c.asyncReadName = name;
    }
  }
}

void VectorClockChecker::onAsyncRelease(Cta &cta, uint32_t barrierOffset,
                                        const AsyncClock &clock) {
  Clock &accum = mbarrierAccum[{cta.checkerIndex, barrierOffset}];
  if (accum.empty())
    accum.assign(agentCount(), 0);
  join(accum, clock.issue);
}

void VectorClockChecker::onAsyncWait(const Warp &warp, uint64_t asyncId,
                                     bool performed) {
  auto it = asyncClocks.find(asyncKey(warp, asyncId));
  if (it == asyncClocks.end())
    return;
  Clock &mine = clockOf(warp);
  join(mine, it->second.issue);
  if (performed)
    mine[it->second.agent] =
        std::max(mine[it->second.agent], it->second.epoch + 1);
  asyncClocks.erase(it);
}

AsyncClock VectorClockChecker::onWgmmaIssue(Cta &cta, uint32_t group) {
  AsyncClock clock;
  clock.issue.assign(agentCount(), 0);
  uint32_t firstWarp = cta.warps[0].agent + 4 * group;
  uint32_t epoch = 0;
  for (uint32_t w = firstWarp; w < firstWarp + 4; ++w)
    epoch = std::max(epoch, agentEpochs[wgmmaAgent(w)] + 1);
  for (uint32_t w = firstWarp; w < firstWarp + 4; ++w) {
    join(clock.issue, warpClocks[w]);
    agentEpochs[wgmmaAgent(w)] = epoch;
  }
  for (uint32_t w = firstWarp; w < firstWarp + 4; ++w)
    clock.issue[wgmmaAgent(w)] = epoch;
  clock.agent = kWarpgroupMark + firstWarp;
  clock.epoch = epoch;
  return clock;
}

void VectorClockChecker::onWgmmaWait(const Warp &warp,
                                     const AsyncClock &clock) {
  uint32_t self = warpAgent(warp);
  Clock &mine = clockOf(warp);
  // Only this warp's part of the operation is known to be complete.
  uint32_t firstWarp = self - self % 4;
  for (size_t i = 0; i < mine.size(); ++i) {
    bool otherPart = false;
    for (uint32_t w = firstWarp; w < firstWarp + 4; ++w)
      if (w != self && i == wgmmaAgent(w))
        otherPart = true;
    if (!otherPart)
      mine[i] = std::max(mine[i], clock.issue[i]);
  }
}

std::unique_ptr<HazardChecker> makeVectorClockChecker(Cluster &cluster) {
  return std::make_unique<VectorClockChecker>(std::vector<Cluster *>{&cluster},
                                              false);
}

std::unique_ptr<HazardChecker>
makeGroupVectorClockChecker(const std::vector<Cluster *> &clusters) {
  return std::make_unique<VectorClockChecker>(clusters, true);
}

} // namespace mosaic::emulator
