//===- Launch.cpp - Grids, clusters and the warp scheduler --------------===//
//
// A launch splits the grid into clusters and runs them on a pool of host
// threads; clusters share nothing but global memory. Inside a cluster the
// scheduler picks a ready warp (round robin, or at random with a seed),
// runs it for a quantum, and completes asynchronous operations as the
// policy says: at once (eager), only when no warp can run or a wait needs
// them (lazy), or at random points (random). When no warp can run and
// nothing is in flight, the launch deadlocked; the report lists every
// blocked warp and what it waits for.
//
// A cluster runs a turn at a time (ClusterStepper), so that launchTogether
// can interleave every cluster of a group of launches, one per device, on
// one host thread, with one hazard checker over all of them; there a warp
// that keeps reading an unchanged value from global memory polls, and a
// group where every warp is blocked or polls has deadlocked.
//
//===----------------------------------------------------------------------===//

#include "Engine.h"
#include "Hazards.h"

#include "mosaic/Contracts/HardwareLimits.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

namespace mosaic::emulator {

Module::~Module() = default;

Expected<std::shared_ptr<const Module>> Module::load(std::string_view ptx) {
  Expected<std::unique_ptr<Program>> program = parsePtx(ptx);
  if (!program.ok())
    return Error{program.message()};
  std::shared_ptr<Module> module(new Module());
  module->code = std::move(*program);
  for (const Function &function : module->code->functions)
    if (function.info.maxThreadsPerBlock != 0)
      module->infos.push_back(function.info);
  return std::shared_ptr<const Module>(std::move(module));
}

const KernelInfo *Module::kernel(std::string_view name) const {
  for (const KernelInfo &info : infos)
    if (info.name == name)
      return &info;
  return nullptr;
}

std::vector<std::string> Module::kernelNames() const {
  std::vector<std::string> names;
  for (const KernelInfo &info : infos)
    names.push_back(info.name);
  return names;
}

uint8_t *Program::translateGlobalVariable(uint64_t address,
                                          uint64_t bytes) const {
  for (const Variable &variable : globals) {
    if (!variable.storage)
      continue;
    if (address >= variable.address &&
        address + bytes <= variable.address + variable.size)
      return reinterpret_cast<uint8_t *>(address);
  }
  return nullptr;
}

std::string describeLocation(const LaunchState &launch, const Cta &cta,
                             uint32_t warp, int lane, uint32_t pc) {
  std::ostringstream out;
  const Function &function = *launch.function;
  if (launch.namesDevice)
    out << "device " << launch.device << " ";
  out << "CTA (" << cta.id[0] << ", " << cta.id[1] << ", " << cta.id[2]
      << ")";
  if (lane >= 0) {
    uint32_t thread = warp * 32 + static_cast<uint32_t>(lane);
    const auto &block = launch.config->block;
    out << " thread (" << thread % block[0] << ", "
        << (thread / block[0]) % block[1] << ", "
        << thread / (block[0] * block[1]) << ")";
  } else {
    out << " warp " << warp;
  }
  if (pc < function.code.size()) {
    uint32_t line = function.code[pc].line;
    // Long instructions (a wgmma's 64 registers) are cut: the line number
    // finds the rest.
    std::string text = launch.program->line(line);
    if (text.size() > 100)
      text = text.substr(0, 97) + "...";
    out << " at line " << line << ": `" << text << "`";
  }
  return out.str();
}

namespace {

bool mbarrierPhaseDone(const Cta &cta, uint32_t address, uint32_t parity) {
  auto it = cta.mbarriers.find(address);
  if (it == cta.mbarriers.end())
    return false;
  // The phase with parity `parity` has completed when the current phase's
  // parity differs.
  return (it->second.phase & 1) != (parity & 1);
}

bool isReady(Cluster &cluster, Warp &warp) {
  if (warp.status == WarpStatus::Ready)
    return true;
  if (warp.status == WarpStatus::Exited)
    return false;
  switch (warp.block) {
  case BlockKind::Mbarrier:
    if (mbarrierPhaseDone(*warp.blockCta, warp.blockAddress,
                          warp.blockParity)) {
      warp.status = WarpStatus::Ready;
      warp.block = BlockKind::None;
      return true;
    }
    return false;
  case BlockKind::Barrier:
    if (warp.blockCta->barriers[warp.blockAddress].generation !=
        warp.blockParity) {
      warp.status = WarpStatus::Ready;
      warp.block = BlockKind::None;
      cluster.hazards->onBarrierResume(*warp.blockCta, warp.blockAddress, warp);
      return true;
    }
    return false;
  case BlockKind::ClusterBarrier:
    if (cluster.clusterPhase > warp.clusterArrivalPhase) {
      warp.status = WarpStatus::Ready;
      warp.block = BlockKind::None;
      return true;
    }
    return false;
  case BlockKind::Registers:
    if (warp.cta->registerPool >= registersRequested(*cluster.launch, warp)) {
      warp.status = WarpStatus::Ready;
      warp.block = BlockKind::None;
      return true;
    }
    return false;
  default:
    return false;
  }
}

std::string describeBlocked(const LaunchState &launch, const Warp &warp) {
  std::ostringstream out;
  if (warp.polling) {
    out << describeLocation(launch, *warp.cta, warp.index, -1, warp.pollPc)
        << ": polls global address 0x" << std::hex << warp.pollAddress
        << std::dec << ", which keeps reading " << warp.pollValue;
    return out.str();
  }
  out << describeLocation(launch, *warp.cta, warp.index, -1, warp.blockPc)
      << ": ";
  switch (warp.block) {
  case BlockKind::Barrier: {
    const NamedBarrier &b = warp.cta->barriers[warp.blockAddress];
    out << "waits at barrier " << warp.blockAddress << " (" << b.arrived
        << " of " << b.expected << " threads arrived)";
    break;
  }
  case BlockKind::ClusterBarrier: {
    ClusterArrivals arrivals = clusterArrivals(*warp.cta->cluster);
    out << "waits at barrier.cluster.wait (" << arrivals.arrived << " of "
        << arrivals.expected << " non-exited threads arrived)";
    break;
  }
  case BlockKind::Registers: {
    uint32_t target = static_cast<uint32_t>(
        launch.function->code[warp.blockPc].operands[0].bits);
    out << "waits at setmaxnreg.inc for " << registersRequested(launch, warp)
        << " registers (32 threads x (" << target << " - " << warp.maxRegisters
        << ")), but the CTA's register pool holds " << warp.cta->registerPool;
    break;
  }
  case BlockKind::Mbarrier: {
    out << "waits for phase parity " << warp.blockParity
        << " of the mbarrier at shared address " << warp.blockAddress;
    auto it = warp.blockCta->mbarriers.find(warp.blockAddress);
    if (it == warp.blockCta->mbarriers.end() || !it->second.initialized) {
      out << " (never initialized)";
    } else {
      const MbarrierState &m = it->second;
      out << " (completed phases " << m.phase << ", pending arrivals "
          << m.pending << " of " << m.expected << ", tx-count " << m.tx
          << ")";
    }
    break;
  }
  case BlockKind::WgmmaRendezvous:
    out << "waits for the other warps of its warpgroup at wgmma.mma_async";
    break;
  default:
    out << "blocked";
  }
  return out.str();
}

/// Runs one warp for up to `quantum` instructions.
StepResult runWarp(Cluster &cluster, Warp &warp, unsigned quantum,
                   Fault &fault) {
  const Function &function = *cluster.launch->function;
  Cta &cta = *warp.cta;
  for (unsigned step = 0; step < quantum; ++step) {
    if (warp.status != WarpStatus::Ready)
      return StepResult::Blocked;
    uint32_t pc, active;
    if (warp.converged) {
      pc = warp.pc;
      active = warp.liveMask;
    } else {
      uint32_t candidates = warp.liveMask;
      while (!warp.frames.empty()) {
        const Warp::Frame &top = warp.frames.back();
        uint32_t members = top.mask & warp.liveMask;
        uint32_t arrived = 0;
        for (uint32_t lanes = members; lanes; lanes &= lanes - 1) {
          uint32_t lane = __builtin_ctz(lanes);
          if (warp.lanePc[lane] == top.reconverge)
            arrived |= 1u << lane;
        }
        if (members == 0 || arrived == members) {
          warp.frames.pop_back();
          continue;
        }
        candidates = members & ~arrived;
        break;
      }
      pc = UINT32_MAX;
      for (uint32_t lanes = candidates; lanes; lanes &= lanes - 1) {
        uint32_t lane = __builtin_ctz(lanes);
        pc = std::min(pc, warp.lanePc[lane]);
      }
      active = 0;
      for (uint32_t lanes = candidates; lanes; lanes &= lanes - 1) {
        uint32_t lane = __builtin_ctz(lanes);
        if (warp.lanePc[lane] == pc)
          active |= 1u << lane;
      }
      if (warp.frames.empty() && active == warp.liveMask) {
        warp.converged = true;
        warp.pc = pc;
      }
    }
    if (pc >= function.code.size()) {
      fault.message = describeLocation(*cluster.launch, cta, warp.index, -1,
                                       pc) +
                      ": execution ran past the end of the kernel";
      return StepResult::Faulted;
    }
    StepResult result = executeInstruction(cluster, cta, warp,
                                           function.code[pc], active, fault);
    if (result != StepResult::Executed)
      return result;
    ++cluster.instructions;
    cluster.threadInstructions += __builtin_popcount(active);
    if (warp.status == WarpStatus::Exited || warp.spinning)
      return StepResult::Executed;
  }
  return StepResult::Executed;
}

Status completeOldest(Cluster &cluster, bool random) {
  if (cluster.async.empty())
    return Status();
  size_t index = random ? cluster.random() % cluster.async.size() : 0;
  uint64_t id = cluster.async[index].id;
  return completeAsync(cluster, id);
}

/// What one scheduling turn of a cluster did.
enum class Turn {
  /// Ran a warp that was not spinning, or completed an asynchronous
  /// operation.
  Progress,
  /// Only warps that spin (test_wait, or polling global memory) could run:
  /// one of them had a turn.
  Spin,
  /// Every live warp is blocked and nothing is in flight.
  Stuck,
  /// Every warp exited (and every operation in flight completed).
  Finished,
};

/// Runs the warps of one cluster a turn at a time: a launch turns each
/// cluster until it finishes, a co-scheduled group interleaves the turns of
/// all its clusters.
class ClusterStepper {
public:
  ClusterStepper(Cluster &cluster, uint64_t instructionLimit)
      : cluster(cluster), instructionLimit(instructionLimit) {
    for (auto &cta : cluster.ctas)
      for (Warp &warp : cta->warps)
        warps.push_back(&warp);
  }

  /// One turn: picks a ready warp (round robin, or at random) and runs it
  /// for a quantum; with none ready, completes an operation in flight or
  /// gives a spinning warp a turn.
  Status step(Turn &turn);

  Cluster &cluster;
  std::vector<Warp *> warps;

private:
  uint64_t instructionLimit;
  size_t cursor = 0;
  bool finished = false;
};

Status ClusterStepper::step(Turn &turn) {
  if (finished) {
    turn = Turn::Finished;
    return Status();
  }
  const Options &options = *cluster.launch->options;
  Warp *chosen = nullptr;
  Warp *spinner = nullptr;
  bool anyLive = false;
  size_t count = warps.size();
  size_t start = options.randomSchedule ? cluster.random() % count : cursor;
  for (size_t i = 0; i < count; ++i) {
    size_t index = (start + i) % count;
    Warp &warp = *warps[index];
    if (warp.status == WarpStatus::Exited)
      continue;
    anyLive = true;
    if (isReady(cluster, warp)) {
      if (warp.spinning) {
        if (!spinner)
          spinner = &warp;
        continue;
      }
      chosen = &warp;
      cursor = index + 1;
      break;
    }
  }
  if (!anyLive) {
    // The kernel exited with operations in flight (a TMA store nobody
    // waited for): they still complete, as the hardware finishes them.
    while (!cluster.async.empty())
      MOSAIC_RETURN_IF_ERROR(completeOldest(cluster, false));
    MOSAIC_RETURN_IF_ERROR(cluster.hazards->verdict());
    finished = true;
    turn = Turn::Finished;
    return Status();
  }
  turn = Turn::Progress;
  if (!chosen) {
    if (!cluster.async.empty())
      return completeOldest(cluster, false);
    if (!spinner) {
      turn = Turn::Stuck;
      return Status();
    }
    spinner->spinning = false;
    spinner->polling = false;
    chosen = spinner;
    turn = Turn::Spin;
  }
  const unsigned quantum = options.randomSchedule ? 0 : 64;
  Fault fault;
  unsigned steps =
      quantum ? quantum : 1 + static_cast<unsigned>(cluster.random() % 32);
  StepResult result = runWarp(cluster, *chosen, steps, fault);
  if (result == StepResult::Faulted) {
    cluster.faultKind = fault.hazard ? FaultKind::Hazard : fault.kind;
    return Error{fault.message};
  }
  MOSAIC_RETURN_IF_ERROR(cluster.hazards->verdict());
  if (options.policy == AsyncPolicy::Random && !cluster.async.empty() &&
      cluster.random() % 4 == 0)
    MOSAIC_RETURN_IF_ERROR(completeOldest(cluster, true));
  if (cluster.instructions > instructionLimit)
    return Error{"the cluster executed more than " +
                 std::to_string(instructionLimit) +
                 " warp instructions per CTA on average; the kernel "
                 "probably hangs"};
  return Status();
}

/// Consecutive turns given only to spinning warps before a cluster (or a
/// group) that polls with test_wait is reported as deadlocked.
constexpr uint64_t kSpinTurnLimit = 1'000'000;

std::string clusterName(const Cluster &cluster) {
  return "(" + std::to_string(cluster.id[0]) + ", " +
         std::to_string(cluster.id[1]) + ", " + std::to_string(cluster.id[2]) +
         ")";
}

/// Runs every CTA of `cluster` to completion.
Status runCluster(Cluster &cluster, uint64_t instructionLimit) {
  ClusterStepper stepper(cluster, instructionLimit);
  uint64_t spinTurns = 0;
  while (true) {
    Turn turn;
    MOSAIC_RETURN_IF_ERROR(stepper.step(turn));
    switch (turn) {
    case Turn::Finished:
      return Status();
    case Turn::Progress:
      spinTurns = 0;
      break;
    case Turn::Spin:
      if (++spinTurns <= kSpinTurnLimit)
        break;
      {
        std::string message =
            "hazard: deadlock: every warp of cluster " + clusterName(cluster) +
            " is blocked or polls an mbarrier with test_wait that nothing "
            "will complete";
        for (Warp *warp : stepper.warps)
          if (warp->status == WarpStatus::Blocked || warp->spinning)
            message += "\n  " + describeBlocked(*cluster.launch, *warp);
        return Error{message};
      }
    case Turn::Stuck: {
      std::string message = "hazard: deadlock: every warp of cluster " +
                            clusterName(cluster) +
                            " is blocked and nothing is in flight";
      for (Warp *warp : stepper.warps)
        if (warp->status == WarpStatus::Blocked)
          message += "\n  " + describeBlocked(*cluster.launch, *warp);
      return Error{message};
    }
    }
  }
}

Status checkConfig(const Function &function, const LaunchConfig &config) {
  auto list = [](const std::array<uint32_t, 3> &v) {
    return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " +
           std::to_string(v[2]) + ")";
  };
  uint64_t threads = uint64_t(config.block[0]) * config.block[1] *
                     config.block[2];
  if (threads == 0 || config.grid[0] == 0 || config.grid[1] == 0 ||
      config.grid[2] == 0)
    return Error{"empty grid " + list(config.grid) + " or block " +
                 list(config.block)};
  if (threads > function.info.maxThreadsPerBlock)
    return Error{"block " + list(config.block) + " has " +
                 std::to_string(threads) + " threads; `" + function.info.name +
                 "` allows " + std::to_string(function.info.maxThreadsPerBlock)};
  for (int d = 0; d < 3; ++d) {
    if (config.cluster[d] == 0 || config.grid[d] % config.cluster[d] != 0)
      return Error{"grid " + list(config.grid) +
                   " is not a whole number of clusters " +
                   list(config.cluster)};
  }
  uint64_t clusterSize =
      uint64_t(config.cluster[0]) * config.cluster[1] * config.cluster[2];
  uint32_t maxClusterSize = function.info.maxClusterRank
                                ? function.info.maxClusterRank
                                : limits::kMaxClusterSize;
  if (clusterSize > maxClusterSize)
    return Error{"cluster " + list(config.cluster) + " has " +
                 std::to_string(clusterSize) + " CTAs; `" + function.info.name +
                 "` allows at most " + std::to_string(maxClusterSize)};
  const auto &required = function.info.requiredCluster;
  if (required[0] && (required[0] != config.cluster[0] ||
                      required[1] != config.cluster[1] ||
                      required[2] != config.cluster[2]))
    return Error{"`" + function.info.name + "` requires clusters " +
                 list(required) + ", launched with " + list(config.cluster)};
  if (config.parameters.size() < function.info.parameterBytes)
    return Error{"the parameter buffer has " +
                 std::to_string(config.parameters.size()) + " bytes; `" +
                 function.info.name + "` takes " +
                 std::to_string(function.info.parameterBytes)};
  uint64_t shared = uint64_t(function.dynamicSharedOffset) - kSharedBase +
                    config.dynamicSharedBytes;
  if (shared > uint64_t(limits::kMaxSharedMemoryPerBlock))
    return Error{"`" + function.info.name + "` needs " +
                 std::to_string(shared) +
                 " bytes of shared memory per CTA; sm_90a has " +
                 std::to_string(limits::kMaxSharedMemoryPerBlock)};
  return Status();
}

void initCta(const LaunchState &launch, Cta &cta) {
  const Function &function = *launch.function;
  size_t sharedSize = kSharedBase + launch.sharedBytes;
  cta.shared.assign(sharedSize, 0);
  // Module- and function-scope shared variables with initializers are not
  // valid PTX; nothing to copy.
  cta.sharedEnd = static_cast<uint32_t>(sharedSize);
  cta.mbarriers.clear();
  for (NamedBarrier &barrier : cta.barriers)
    barrier = NamedBarrier();
  cta.exitedWarps = 0;
  cta.rendezvous.assign((launch.warpsPerCta + 3) / 4, {});
  // The CTA's registers are all its warps' at launch: the pool starts
  // empty (docs/RationaleEmulator.md, "setmaxnreg").
  cta.registerPool = 0;
  cta.registerChanges.assign((launch.warpsPerCta + 3) / 4, {});
  cta.warps.resize(launch.warpsPerCta);
  size_t slots = function.registerNames.size();
  for (uint32_t w = 0; w < launch.warpsPerCta; ++w) {
    Warp &warp = cta.warps[w];
    warp = Warp();
    warp.index = w;
    warp.cta = &cta;
    uint32_t first = w * 32;
    uint32_t count = std::min<uint32_t>(32, launch.threadsPerCta - first);
    warp.existMask = count == 32 ? 0xffffffffu : (1u << count) - 1;
    warp.liveMask = warp.existMask;
    warp.maxRegisters = function.info.entryRegisters;
    warp.regs.assign(slots * 32, 0);
    warp.local.assign(size_t(function.localBytes) * 32, 0);
    if (launch.options->checkHazards) {
      warp.lastWrite.assign(slots, 0);
      warp.lastWritePc.assign(slots, 0);
      warp.inFlight.assign(slots, 0);
      warp.inFlightPc.assign(slots, 0);
    }
  }
}

/// Sets up cluster `index` (in x-major order) of `state`'s grid: its id,
/// its CTAs, a fresh queue and random generator. The caller gives it its
/// hazard checker.
void prepareCluster(Cluster &cluster, const LaunchState &state,
                    uint64_t index) {
  const LaunchConfig &config = *state.config;
  std::array<uint32_t, 3> clusters;
  for (int d = 0; d < 3; ++d)
    clusters[d] = config.grid[d] / config.cluster[d];
  uint32_t ctasPerCluster =
      config.cluster[0] * config.cluster[1] * config.cluster[2];
  while (cluster.ctas.size() < ctasPerCluster)
    cluster.ctas.push_back(std::make_unique<Cta>());
  cluster.id = {
      static_cast<uint32_t>(index % clusters[0]),
      static_cast<uint32_t>((index / clusters[0]) % clusters[1]),
      static_cast<uint32_t>(index / (uint64_t(clusters[0]) * clusters[1]))};
  cluster.async.clear();
  cluster.clusterPhase = 0;
  cluster.random.seed(state.options->seed * 0x9E3779B97F4A7C15ull + index +
                      (uint64_t(state.device) << 40));
  cluster.instructions = 0;
  cluster.threadInstructions = 0;
  cluster.faultKind = FaultKind::Unspecified;
  for (uint32_t r = 0; r < ctasPerCluster; ++r) {
    Cta &cta = *cluster.ctas[r];
    cta.rank = r;
    cta.cluster = &cluster;
    cta.clusterCtaId = {r % config.cluster[0],
                        (r / config.cluster[0]) % config.cluster[1],
                        r / (config.cluster[0] * config.cluster[1])};
    for (int d = 0; d < 3; ++d)
      cta.id[d] = cluster.id[d] * config.cluster[d] + cta.clusterCtaId[d];
    initCta(state, cta);
  }
}

/// Fills `state` for a launch of `kernel`, or says why it cannot run.
Status prepareLaunch(LaunchState &state, const Module &module,
                     std::string_view kernel, const LaunchConfig &config,
                     DeviceMemory &memory, const Options &options,
                     uint32_t device) {
  const Function *function = module.program().find(kernel);
  if (!function || function->info.maxThreadsPerBlock == 0)
    return Error{"no kernel `" + std::string(kernel) + "` in the module"};
  if (Status status = checkConfig(*function, config); !status.ok())
    return Error{"launch of `" + function->info.name +
                 "`: " + status.message()};
  state.program = &module.program();
  state.function = function;
  state.config = &config;
  state.memory = &memory;
  state.options = &options;
  state.device = device;
  state.namesDevice = device != 0;
  state.sharedBytes =
      function->dynamicSharedOffset - kSharedBase + config.dynamicSharedBytes;
  state.threadsPerCta = config.block[0] * config.block[1] * config.block[2];
  state.warpsPerCta = (state.threadsPerCta + 31) / 32;
  return Status();
}

uint64_t clusterCount(const LaunchConfig &config) {
  uint64_t count = 1;
  for (int d = 0; d < 3; ++d)
    count *= config.grid[d] / config.cluster[d];
  return count;
}

} // namespace

LaunchReport launch(const Module &module, std::string_view kernel,
                    const LaunchConfig &config, DeviceMemory &memory,
                    const Options &options, uint32_t device) {
  LaunchReport report;
  auto start = std::chrono::steady_clock::now();
  LaunchState state;
  if (Status status =
          prepareLaunch(state, module, kernel, config, memory, options, device);
      !status.ok()) {
    report.ok = false;
    report.kind = FaultKind::Configuration;
    report.message = status.message();
    return report;
  }
  const Function *function = state.function;
  uint64_t clusters = clusterCount(config);
  uint32_t ctasPerCluster =
      config.cluster[0] * config.cluster[1] * config.cluster[2];
  unsigned threads = options.hostThreads
                         ? options.hostThreads
                         : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<uint64_t>(threads, clusters));

  std::atomic<uint64_t> nextCluster{0};
  std::atomic<bool> stop{false};
  std::mutex resultMutex;
  uint64_t failedCluster = UINT64_MAX;
  std::string failure;
  bool failureIsHazard = false;
  FaultKind failureKind = FaultKind::Unspecified;
  std::atomic<uint64_t> warpInstructions{0}, threadInstructions{0};

  auto worker = [&]() {
    Cluster cluster;
    cluster.launch = &state;
    while (!stop.load()) {
      uint64_t index = nextCluster.fetch_add(1);
      if (index >= clusters)
        break;
      prepareCluster(cluster, state, index);
      if (options.checkHazards)
        cluster.hazards = makeVectorClockChecker(cluster);
      else
        cluster.hazards = std::make_unique<NoHazardChecker>();
      cluster.hazards->reset();
      Status status = runCluster(cluster, options.instructionLimitPerCta *
                                              ctasPerCluster);
      warpInstructions += cluster.instructions;
      threadInstructions += cluster.threadInstructions;
      if (!status.ok()) {
        std::lock_guard<std::mutex> lock(resultMutex);
        if (index < failedCluster) {
          failedCluster = index;
          failure = status.message();
          failureIsHazard =
              status.message().find("hazard") != std::string::npos;
          failureKind = failureIsHazard ? FaultKind::Hazard : cluster.faultKind;
        }
        stop = true;
      }
    }
  };
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back(worker);
    for (std::thread &thread : pool)
      thread.join();
  }
  report.warpInstructions = warpInstructions;
  report.threadInstructions = threadInstructions;
  report.seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  if (failedCluster != UINT64_MAX) {
    report.ok = false;
    report.hazard = failureIsHazard;
    report.kind = failureKind;
    report.message = "`" + function->info.name + "`: " + failure;
  }
  return report;
}

namespace {

/// The report of a group in which nothing can change any more: every warp
/// of every cluster is blocked or spinning, by device.
std::string groupDeadlock(const std::vector<ClusterStepper> &steppers) {
  std::string message = "hazard: deadlock: every warp of every device is "
                        "blocked, or polls what nothing will change";
  std::map<uint32_t, std::string> byDevice;
  for (const ClusterStepper &stepper : steppers)
    for (Warp *warp : stepper.warps)
      if (warp->status == WarpStatus::Blocked || warp->spinning)
        byDevice[stepper.cluster.launch->device] +=
            "\n    " + describeBlocked(*stepper.cluster.launch, *warp);
  for (const auto &[device, warps] : byDevice)
    message += "\n  device " + std::to_string(device) + ":" + warps;
  return message;
}

/// Whether some warp polls memory another process maps (which may change
/// it behind the emulator's back).
bool pollsSharedMemory(const std::vector<ClusterStepper> &steppers,
                       const DeviceMemory &memory) {
  for (const ClusterStepper &stepper : steppers)
    for (Warp *warp : stepper.warps)
      if (warp->spinning && warp->polling &&
          memory.sharedWithOtherProcesses(warp->pollAddress))
        return true;
  return false;
}

} // namespace

std::vector<LaunchReport>
launchTogether(const std::vector<DeviceLaunch> &launches, DeviceMemory &memory,
               const Options &options) {
  auto start = std::chrono::steady_clock::now();
  std::vector<LaunchReport> reports(launches.size());
  auto failAll = [&](const std::string &message, FaultKind kind) {
    for (LaunchReport &report : reports) {
      report.ok = false;
      report.hazard = kind == FaultKind::Hazard;
      report.kind = kind;
      report.message = message;
    }
  };
  std::vector<LaunchState> states(launches.size());
  for (size_t i = 0; i < launches.size(); ++i) {
    const DeviceLaunch &one = launches[i];
    Status status = one.module
                        ? prepareLaunch(states[i], *one.module, one.kernel,
                                        one.config, memory, options, one.device)
                        : Status(Error{"launch " + std::to_string(i) +
                                       " of the group has no module"});
    if (!status.ok()) {
      failAll("launch " + std::to_string(i) + " of the group, on device " +
                  std::to_string(one.device) + ": " + status.message(),
              FaultKind::Configuration);
      return reports;
    }
    states[i].namesDevice = true;
    states[i].detectPolling = true;
  }

  // Every cluster of every launch exists at once, and one checker follows
  // them all.
  uint64_t globalWrites = 0;
  std::vector<std::unique_ptr<Cluster>> clusters;
  std::vector<size_t> launchOf;
  for (size_t i = 0; i < launches.size(); ++i)
    for (uint64_t index = 0; index < clusterCount(launches[i].config);
         ++index) {
      auto cluster = std::make_unique<Cluster>();
      cluster->launch = &states[i];
      cluster->globalWrites = &globalWrites;
      prepareCluster(*cluster, states[i], index);
      clusters.push_back(std::move(cluster));
      launchOf.push_back(i);
    }
  std::vector<Cluster *> followed;
  for (auto &cluster : clusters)
    followed.push_back(cluster.get());
  std::shared_ptr<HazardChecker> checker;
  if (options.checkHazards)
    checker = makeGroupVectorClockChecker(followed);
  else
    checker = std::make_shared<NoHazardChecker>();
  for (auto &cluster : clusters)
    cluster->hazards = checker;
  checker->reset();
  std::vector<ClusterStepper> steppers;
  for (auto &cluster : clusters)
    steppers.emplace_back(*cluster, options.instructionLimitPerCta *
                                        cluster->ctas.size());

  // Turns go to the clusters round robin, or to one at random. The group
  // is quiet once every unfinished cluster took a turn since the last
  // progress and none made any; then, unless some warp spins on test_wait
  // (which may yet succeed: the launch's spin limit applies) or polls
  // memory another process may write (a timeout applies), nothing will
  // ever change: a deadlock.
  std::mt19937_64 random(options.seed * 0x9E3779B97F4A7C15ull + 0x51ED);
  std::vector<uint8_t> finished(steppers.size(), 0), quiet(steppers.size(), 0);
  size_t unfinished = steppers.size(), quietCount = 0, cursor = 0;
  uint64_t spinTurns = 0;
  std::optional<std::chrono::steady_clock::time_point> quietSince;
  Status failure;
  size_t failed = 0;
  while (unfinished > 0) {
    size_t index;
    if (options.randomSchedule) {
      index = random() % steppers.size();
    } else {
      index = cursor;
      cursor = (cursor + 1) % steppers.size();
    }
    if (finished[index])
      continue;
    Turn turn;
    if (Status status = steppers[index].step(turn); !status.ok()) {
      failure = status;
      failed = index;
      break;
    }
    if (turn == Turn::Finished) {
      finished[index] = 1;
      --unfinished;
      quietCount -= quiet[index];
      continue;
    }
    if (turn == Turn::Progress) {
      if (quietCount)
        std::fill(quiet.begin(), quiet.end(), 0);
      quietCount = 0;
      spinTurns = 0;
      quietSince.reset();
      continue;
    }
    ++spinTurns;
    if (!quiet[index]) {
      quiet[index] = 1;
      ++quietCount;
    }
    if (quietCount < unfinished)
      continue;
    bool testWaitSpinner = false;
    for (const ClusterStepper &stepper : steppers)
      for (Warp *warp : stepper.warps)
        testWaitSpinner |= warp->spinning && !warp->polling;
    if (testWaitSpinner && spinTurns <= kSpinTurnLimit)
      continue;
    if (pollsSharedMemory(steppers, memory)) {
      auto now = std::chrono::steady_clock::now();
      if (!quietSince)
        quietSince = now;
      if (std::chrono::duration<double>(now - *quietSince).count() <
          options.pollTimeoutSeconds) {
        std::this_thread::yield();
        continue;
      }
    }
    failure = Error{groupDeadlock(steppers)};
    failed = index;
    break;
  }

  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  for (size_t c = 0; c < clusters.size(); ++c) {
    LaunchReport &report = reports[launchOf[c]];
    report.warpInstructions += clusters[c]->instructions;
    report.threadInstructions += clusters[c]->threadInstructions;
  }
  for (LaunchReport &report : reports)
    report.seconds = seconds;
  if (!failure.ok()) {
    const std::string &message = failure.message();
    bool hazard = message.find("hazard") != std::string::npos;
    const LaunchState &state = states[launchOf[failed]];
    std::string where = "`" + state.function->info.name + "` on device " +
                        std::to_string(state.device);
    failAll(message.rfind("hazard: deadlock", 0) == 0 ? message
                                                      : where + ": " + message,
            hazard ? FaultKind::Hazard : clusters[failed]->faultKind);
  }
  return reports;
}

} // namespace mosaic::emulator
