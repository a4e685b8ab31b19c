//===- Execute.cpp - Running one instruction ------------------------------===//
//
// Exec::run dispatches each instruction to its family through the table
// Ops.def generates; the families are in ExecuteArithmetic.cpp,
// ExecuteMemory.cpp, ExecuteWarp.cpp, ExecuteSync.cpp, Async.cpp and
// Wgmma.cpp. Here: operand access, memory translation, the SIMT control
// (divergence, reconvergence, exit) and the control-flow instructions.
//
//===----------------------------------------------------------------------===//

#include "Execute.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace mosaic::emulator {

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

uint64_t Exec::address(const Operand &operand, uint32_t lane) const {
  uint64_t base = operand.reg >= 0 ? warp.regs[operand.reg * 32 + lane] : 0;
  return base + static_cast<uint64_t>(operand.offset);
}

bool Exec::fail(const std::string &message, int lane, FaultKind kind) {
  fault.message =
      describeLocation(launch, cta, warp.index, lane, pc) + ": " + message;
  fault.kind = kind;
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
         static_cast<int>(lane), FaultKind::IllegalAddress);
    return std::nullopt;
  }
  uint32_t rank = static_cast<uint32_t>(sharedAddress >> kClusterRankShift);
  if (rank) {
    if (!clusterWindow) {
      fail("a .shared::cta access with the shared::cluster address " +
               std::to_string(sharedAddress) + " of another CTA",
           static_cast<int>(lane), FaultKind::IllegalAddress);
      return std::nullopt;
    }
    if (rank - 1 >= cluster.ctas.size()) {
      fail("shared::cluster address " + std::to_string(sharedAddress) +
               " names CTA rank " + std::to_string(rank - 1) +
               ", but the cluster has " + std::to_string(cluster.ctas.size()),
           static_cast<int>(lane), FaultKind::IllegalAddress);
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
         static_cast<int>(lane), FaultKind::IllegalAddress);
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
        static_cast<int>(lane), FaultKind::MisalignedAddress);
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
    std::string why;
    uint8_t *host =
        launch.memory->translate(address, bytes, launch.device, why);
    if (!host)
      host = launch.program->translateGlobalVariable(address, bytes);
    if (host) {
      if (write)
        ++*cluster.globalWrites;
      cluster.hazards->onGlobalAccess(warp, lane, address, bytes, write, pc,
                                      in);
    } else {
      char text[96];
      std::snprintf(
          text, sizeof(text),
          "global-memory %s of %u bytes at 0x%llx: ", write ? "write" : "read",
          bytes, static_cast<unsigned long long>(address));
      fail(text + (why.empty() ? "it is outside every allocation" : why),
           static_cast<int>(lane), FaultKind::IllegalAddress);
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
           static_cast<int>(lane), FaultKind::IllegalAddress);
      return nullptr;
    }
    return warp.local.data() + size_t(lane) * frame + address;
  }
  case Space::Param: {
    if (write) {
      fail("kernel parameters are read-only", static_cast<int>(lane),
           FaultKind::IllegalAddress);
      return nullptr;
    }
    const std::vector<uint8_t> &parameters = launch.config->parameters;
    if (address + bytes > parameters.size()) {
      fail("parameter access at offset " + std::to_string(address) +
               " is past the " + std::to_string(parameters.size()) +
               "-byte parameter buffer",
           static_cast<int>(lane), FaultKind::IllegalAddress);
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

// --- Dispatch -------------------------------------------------------------

namespace {

using Handler = bool (Exec::*)(uint32_t mask);

constexpr Handler kHandlers[] = {
#define MOSAIC_EMULATOR_OP(name, text, handler, fewest, most, types)           \
  &Exec::handler,
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

// `trap` aborts the kernel: CUDA_ERROR_LAUNCH_FAILED, the "unspecified launch
// failure" of a GPU. `brkpt` with no debugger attached stops the kernel the
// same way.
bool Exec::trap(uint32_t) {
  return fail(in.op == Op::Brkpt
                  ? "brkpt: a breakpoint with no debugger attached aborts the "
                    "kernel"
                  : "trap: the kernel aborted",
              -1, FaultKind::Unspecified);
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
