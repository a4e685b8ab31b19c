//===- Engine.h - The state of a running launch ---------------*- C++ -*-===//
//
// A cluster of CTAs runs on one host thread: its warps are interleaved by a
// deterministic scheduler (or a seeded random one), asynchronous operations
// wait in a queue until the policy completes them. Registers are stored per
// warp, slot-major (`regs[slot * 32 + lane]`), so that an instruction's
// per-lane loop walks contiguous memory.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_ENGINE_H
#define MOSAIC_EMULATOR_ENGINE_H

#include "Program.h"

#include <deque>
#include <functional>
#include <random>
#include <unordered_map>

namespace mosaic::emulator {

/// Generic-address windows. Device memory uses host addresses (below
/// 2^47); the other spaces sit far above them.
constexpr uint64_t kGenericSharedBase = 0xE000000000000000ull;
constexpr uint64_t kGenericLocalBase = 0xD000000000000000ull;
constexpr uint64_t kGenericParamBase = 0xC000000000000000ull;
constexpr uint64_t kWindowSize = 1ull << 32;
/// shared::cluster addresses: rank r's shared memory at (r + 1) << 24;
/// addresses below 1 << 24 are the executing CTA's own (the shared::cta
/// window inside the shared::cluster window).
constexpr unsigned kClusterRankShift = 24;

struct Cta;
struct Cluster;
class HazardChecker;

struct MbarrierState {
  bool initialized = false;
  uint32_t expected = 0;
  uint32_t pending = 0;
  int64_t tx = 0;
  uint32_t phase = 0; // completed phases
  /// Happens-before: what arrivals of the current phase released, and what
  /// the last completed phase publishes to waiters.
  std::vector<uint32_t> releaseClock;
  std::vector<uint32_t> completedClock;
};

enum class WarpStatus : uint8_t { Ready, Blocked, Exited };

enum class BlockKind : uint8_t {
  None,
  Barrier,        // bar.sync: released by the last arrival
  ClusterBarrier, // barrier.cluster.wait
  Mbarrier,       // try_wait: ready when the phase completes
  WgmmaRendezvous,
  Registers, // setmaxnreg.inc: ready when the CTA's pool holds the registers
};

struct WgmmaOp;

struct Warp {
  uint32_t index = 0; // in the CTA
  Cta *cta = nullptr;
  uint32_t existMask = 0; // threads of the block in this warp
  uint32_t liveMask = 0;  // not exited
  bool converged = true;
  uint32_t pc = 0; // when converged
  uint32_t lanePc[32] = {};
  /// Divergence: the lanes that split at a branch run until they all reach
  /// its reconvergence point (innermost last), as a SIMT stack.
  struct Frame {
    uint32_t reconverge;
    uint32_t mask;
  };
  std::vector<Frame> frames;
  WarpStatus status = WarpStatus::Ready;
  BlockKind block = BlockKind::None;
  uint32_t blockPc = 0;
  uint32_t blockAddress = 0; // mbarrier (shared offset)
  uint32_t blockParity = 0;
  Cta *blockCta = nullptr;
  /// A failed mbarrier.test_wait, or a poll of global memory: run other
  /// warps (and complete asynchronous operations) before this one again.
  bool spinning = false;
  /// Polling (co-scheduled groups only, LaunchState::detectPolling): the
  /// warp's last global load, by its first lane. A load at the same pc and
  /// address that reads the same value while no global write happened in
  /// the group since (`pollWrites`) is a poll: the warp spins.
  bool polling = false;
  uint32_t pollPc = UINT32_MAX;
  uint64_t pollAddress = 0;
  uint64_t pollValue = 0;
  uint64_t pollWrites = 0;
  std::vector<uint64_t> regs;
  /// The condition code's carry flag (CC.CF) of each lane: written by
  /// add.cc, sub.cc, mad.cc and the carry forms, read by addc, subc, madc.
  uint32_t carry = 0;
  std::vector<uint8_t> local; // 32 lanes x localBytes
  /// Per-thread registers the warp owns (setmaxnreg moves them), or 0 when
  /// the kernel fixes no count at launch (KernelInfo::entryRegisters).
  uint32_t maxRegisters = 0;
  /// barrier.cluster: arrived in phase `clusterArrivalPhase`, not yet
  /// waited.
  bool clusterArrived = false;
  uint32_t clusterArrivalPhase = 0;

  // wgmma: ops issued and not committed, committed groups not waited.
  std::vector<std::shared_ptr<WgmmaOp>> uncommitted;
  std::deque<std::vector<std::shared_ptr<WgmmaOp>>> groups;
  // Bulk async groups, per lane (they are per thread).
  struct BulkGroups {
    std::vector<uint64_t> uncommitted;
    std::deque<std::vector<uint64_t>> committed;
  };
  BulkGroups bulk[32];

  // Hazard bookkeeping. The per-slot vectors are sized only when checking
  // hazards, so without checking the register checks find nothing to do.
  /// The warp's agent in its hazard checker (set by the checker's reset).
  uint32_t agent = 0;
  uint64_t sequence = 0; // instructions executed
  uint64_t lastWgmmaFence = 0;
  std::vector<uint64_t> lastWrite; // by slot: sequence of last write
  std::vector<uint32_t> lastWritePc;
  std::vector<uint8_t> inFlight; // by slot: used by a pending wgmma
  std::vector<uint32_t> inFlightPc; // by slot: that wgmma's instruction
  uint32_t inFlightCount = 0;
};

struct NamedBarrier {
  uint32_t arrived = 0; // threads
  uint32_t expected = 0;
  uint32_t arrivedWarps = 0; // by warp index (a CTA has at most 32 warps)
  uint32_t firstPc = 0;      // the arrival that set `expected`
  uint32_t generation = 0; // completions
  // bar.red: the reduction so far and where each participant wants it.
  uint32_t popc = 0;
  bool all = true, any = false;
  struct Destination {
    Warp *warp;
    int32_t slot;
    uint32_t lanes;
  };
  std::vector<Destination> destinations;
};

struct Cta {
  uint32_t rank = 0;                 // in the cluster
  /// The CTA's index among all CTAs its hazard checker follows (set by the
  /// checker's reset): the rank, or more in a co-scheduled group.
  uint32_t checkerIndex = 0;
  std::array<uint32_t, 3> id{};      // %ctaid
  std::array<uint32_t, 3> clusterCtaId{};
  Cluster *cluster = nullptr;
  std::vector<uint8_t> shared;       // indexed by shared address
  uint32_t sharedEnd = 0;            // one past the last valid address
  std::vector<Warp> warps;
  NamedBarrier barriers[16];
  std::unordered_map<uint32_t, MbarrierState> mbarriers;
  uint32_t exitedWarps = 0;
  /// wgmma rendezvous per warpgroup: warps arrived at `pc`.
  struct Rendezvous {
    uint32_t pc = 0;
    uint32_t arrivedMask = 0;
  };
  std::vector<Rendezvous> rendezvous;
  /// setmaxnreg: registers released by `.dec` and not yet taken by `.inc`.
  uint32_t registerPool = 0;
  /// Per warpgroup, the setmaxnreg its warps are executing: the first warp
  /// to reach one (`firstWarp`) sets `pc`; `doneMask` has a bit per warp
  /// that executed it, and once all four have, the next one starts over.
  struct RegisterChange {
    static constexpr uint32_t kNone = UINT32_MAX;
    uint32_t pc = kNone;
    uint32_t firstWarp = 0;
    uint32_t doneMask = 0;
  };
  std::vector<RegisterChange> registerChanges;
};

/// An operation in flight in the asynchronous proxy.
struct AsyncOp {
  uint64_t id = 0;
  std::string what;   // for messages
  uint32_t pc = 0;    // issuing instruction
  Cta *cta = nullptr; // issuing CTA
  uint32_t warp = 0, lane = 0;
  /// Operations with the same nonzero key complete in issue order (the
  /// wgmmas of one warpgroup form a pipeline).
  uint64_t orderKey = 0;
  std::function<Status()> complete;
};

/// What the hazard checker knows of an asynchronous operation: the clock
/// of everything ordered before its issue, and its own agent and epoch.
struct AsyncClock {
  std::vector<uint32_t> issue;
  uint32_t agent = UINT32_MAX;
  uint32_t epoch = 0;
};

struct WgmmaOp {
  uint64_t asyncId = 0;
  std::vector<int32_t> slots; // accumulator and A registers
  AsyncClock clock;
};

struct LaunchState;

struct Cluster {
  LaunchState *launch = nullptr;
  std::array<uint32_t, 3> id{};
  std::vector<std::unique_ptr<Cta>> ctas;
  std::deque<AsyncOp> async;
  uint64_t nextAsyncId = 1;
  // barrier.cluster: completed phases (arrivals are Warp::clusterArrived).
  uint32_t clusterPhase = 0;
  std::mt19937_64 random;
  uint64_t instructions = 0, threadInstructions = 0;
  /// Never null during a launch: a NoHazardChecker when checking is off.
  /// The clusters of a co-scheduled group share one.
  std::shared_ptr<HazardChecker> hazards;
  /// The cluster's index among the clusters its checker follows.
  uint32_t checkerIndex = 0;
  /// Global writes so far (stores, atomics, asynchronous stores): the
  /// group's counter, or `ownGlobalWrites` in an ordinary launch. Polling
  /// compares it.
  uint64_t *globalWrites = &ownGlobalWrites;
  uint64_t ownGlobalWrites = 0;
  /// The kind of the fault that ended the cluster's run, if one did. An
  /// asynchronous operation whose completion fails sets it before returning
  /// its error, so that the fault keeps its kind wherever it completes.
  FaultKind faultKind = FaultKind::Unspecified;
};

struct LaunchState {
  const Program *program = nullptr;
  const Function *function = nullptr;
  const LaunchConfig *config = nullptr;
  DeviceMemory *memory = nullptr;
  const Options *options = nullptr;
  /// The device the kernel runs on: what global memory it may touch.
  uint32_t device = 0;
  /// Messages name the device (a co-scheduled group, or a device other
  /// than 0).
  bool namesDevice = false;
  /// A co-scheduled group: warps whose global loads keep reading an
  /// unchanged value are polling (Warp::polling).
  bool detectPolling = false;
  uint32_t sharedBytes = 0; // static + dynamic, from kSharedBase
  uint32_t threadsPerCta = 0;
  uint32_t warpsPerCta = 0;
};

/// A failure of the launch: what, where (instruction line and text) and
/// who (CTA, warp, lane).
struct Fault {
  std::string message;
  bool hazard = false;
  FaultKind kind = FaultKind::Unspecified;
};

/// Executes one instruction for the warp's active lanes. Returns false when
/// the warp blocked without executing (the instruction is retried), with
/// `fault` set on an error.
enum class StepResult { Executed, Blocked, Faulted };
StepResult executeInstruction(Cluster &cluster, Cta &cta, Warp &warp,
                              const Instruction &instruction,
                              uint32_t activeMask, Fault &fault);

/// Completes asynchronous operation `id` if still pending.
Status completeAsync(Cluster &cluster, uint64_t id);

/// The registers a warp blocked at setmaxnreg.inc (at `warp.blockPc`)
/// needs from its CTA's pool: 32 threads x (the new count - its count).
uint32_t registersRequested(const LaunchState &launch, const Warp &warp);

/// The current phase of barrier.cluster: the threads of non-exited warps
/// that arrived, of all non-exited threads (which it waits for).
struct ClusterArrivals {
  uint32_t arrived = 0;
  uint32_t expected = 0;
};
ClusterArrivals clusterArrivals(const Cluster &cluster);

std::string describeLocation(const LaunchState &launch, const Cta &cta,
                             uint32_t warp, int lane, uint32_t pc);

} // namespace mosaic::emulator

#endif // MOSAIC_EMULATOR_ENGINE_H
