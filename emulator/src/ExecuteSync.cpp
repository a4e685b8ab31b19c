//===- ExecuteSync.cpp - Barriers and warpgroup synchronization -----------===//
//
// bar/barrier (named CTA barriers, with bar.red), barrier.cluster and
// setmaxnreg: the instructions that make warps wait for each other, and
// what a warp's exit means to them.
//
//===----------------------------------------------------------------------===//

#include "Execute.h"

namespace mosaic::emulator {

bool Exec::barrier(uint32_t mask, bool wait) {
  if (in.aligned || in.op == Op::BarSync || in.op == Op::BarArrive ||
      in.op == Op::BarSyncCta || in.op == Op::BarRed)
    if (mask != warp.liveMask)
      return fail("bar.sync (aligned) reached by a diverged warp: lanes " +
                  hexMask(mask) + " of " + hexMask(warp.liveMask));
  uint32_t lane = __builtin_ctz(mask);
  bool reduction = in.op == Op::BarRed || in.op == Op::BarrierRed;
  // bar.red d, a, [b,] {!}c: the barrier operands follow the destination
  // and precede the predicate.
  size_t first = reduction ? 1 : 0;
  size_t count = reduction ? in.operands.size() - 2 : in.operands.size();
  uint32_t id =
      count == 0 ? 0 : static_cast<uint32_t>(read(in.operands[first], lane));
  if (id >= 16)
    return fail("barrier id " + std::to_string(id) + " is not in 0..15");
  uint32_t expected;
  if (count > 1) {
    expected = static_cast<uint32_t>(read(in.operands[first + 1], lane));
    if (expected == 0 || expected % 32 != 0)
      return fail("barrier thread count " + std::to_string(expected) +
                  " is not a positive multiple of 32");
    if (expected > 32 * launch.warpsPerCta)
      return fail("barrier thread count " + std::to_string(expected) +
                  " exceeds the CTA's " + std::to_string(launch.threadsPerCta) +
                  " threads");
  } else {
    expected = 0;
    for (const Warp &other : cta.warps)
      if (other.status != WarpStatus::Exited)
        expected += 32;
  }
  NamedBarrier &b = cta.barriers[id];
  // PTX ISA, barrier: every arrival in a phase names the same thread count,
  // and a warp arrives once before the barrier completes.
  if (b.arrived != 0 && b.expected != expected)
    return fail("barrier " + std::to_string(id) + " expects " +
                std::to_string(b.expected) +
                " threads (set by the arrival at line " +
                std::to_string(function.code[b.firstPc].line) +
                "), this arrival says " + std::to_string(expected));
  if (b.arrivedWarps >> warp.index & 1)
    return fail("warp " + std::to_string(warp.index) + " arrives at barrier " +
                std::to_string(id) + " again before the barrier completes");
  if (b.arrived == 0) {
    b.expected = expected;
    b.firstPc = pc;
    b.popc = 0;
    b.all = true;
    b.any = false;
    b.destinations.clear();
  }
  b.arrived += 32;
  b.arrivedWarps |= 1u << warp.index;
  if (reduction) {
    const Operand &predicate = in.operands.back();
    for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
      bool value = read(predicate, __builtin_ctz(lanes)) & 1;
      b.popc += value;
      b.all = b.all && value;
      b.any = b.any || value;
    }
    if (in.operands[0].kind == Operand::Kind::Register)
      b.destinations.push_back({&warp, in.operands[0].reg, mask});
  }
  cluster.hazards->onBarrierArrive(cta, warp, id);
  advance(warp.liveMask);
  movedLanes = true;
  if (b.arrived >= b.expected) {
    b.arrived = 0;
    b.arrivedWarps = 0;
    ++b.generation;
    for (const NamedBarrier::Destination &d : b.destinations) {
      uint64_t value = in.variant == 1   ? b.popc
                       : in.variant == 2 ? b.all
                                         : b.any;
      for (uint32_t lanes = d.lanes; lanes; lanes &= lanes - 1)
        d.warp->regs[d.slot * 32 + __builtin_ctz(lanes)] = value;
    }
    cluster.hazards->onBarrierComplete(cta, id, warp);
    return true;
  }
  if (wait) {
    warp.status = WarpStatus::Blocked;
    warp.block = BlockKind::Barrier;
    warp.blockPc = pc;
    warp.blockAddress = id;
    warp.blockParity = b.generation;
    warp.blockCta = &cta;
  }
  return true;
}

bool Exec::barrierWait(uint32_t mask) { return barrier(mask, true); }

bool Exec::barrierArrive(uint32_t mask) { return barrier(mask, false); }

ClusterArrivals clusterArrivals(const Cluster &cluster) {
  ClusterArrivals arrivals;
  for (const auto &c : cluster.ctas)
    for (const Warp &w : c->warps) {
      if (w.status == WarpStatus::Exited)
        continue;
      uint32_t threads = __builtin_popcount(w.liveMask);
      arrivals.expected += threads;
      if (w.clusterArrived && w.clusterArrivalPhase == cluster.clusterPhase)
        arrivals.arrived += threads;
    }
  return arrivals;
}

namespace {

/// barrier.cluster completes when every non-exited thread of the cluster
/// has arrived (PTX ISA, barrier.cluster): checked on each arrival and
/// each time a warp exits.
void completeClusterBarrierIfDone(Cluster &cluster) {
  ClusterArrivals arrivals = clusterArrivals(cluster);
  if (arrivals.arrived == 0 || arrivals.arrived != arrivals.expected)
    return;
  ++cluster.clusterPhase;
  cluster.hazards->onClusterComplete(cluster);
}

} // namespace

bool Exec::clusterBarrier(uint32_t mask, bool wait) {
  if (in.aligned && mask != warp.liveMask)
    return fail("barrier.cluster (aligned) reached by a diverged warp");
  if (!wait) {
    if (warp.clusterArrived)
      return fail("barrier.cluster.arrive twice without a wait");
    warp.clusterArrived = true;
    warp.clusterArrivalPhase = cluster.clusterPhase;
    cluster.hazards->onClusterArrive(warp);
    completeClusterBarrierIfDone(cluster);
    advance(mask);
    movedLanes = true;
    return true;
  }
  if (!warp.clusterArrived)
    return fail("barrier.cluster.wait without a preceding arrive");
  if (cluster.clusterPhase > warp.clusterArrivalPhase) {
    warp.clusterArrived = false;
    cluster.hazards->onClusterWait(warp);
    advance(mask);
    movedLanes = true;
    return true;
  }
  warp.status = WarpStatus::Blocked;
  warp.block = BlockKind::ClusterBarrier;
  warp.blockPc = pc;
  blocked = true;
  return true;
}

bool Exec::clusterArrive(uint32_t mask) { return clusterBarrier(mask, false); }

bool Exec::clusterWait(uint32_t mask) { return clusterBarrier(mask, true); }

bool Exec::warpExited() {
  completeClusterBarrierIfDone(cluster);
  cluster.hazards->onWarpExit(warp);
  uint32_t group = warp.index / 4;
  if (group < cta.registerChanges.size()) {
    const Cta::RegisterChange &change = cta.registerChanges[group];
    if (change.pc != Cta::RegisterChange::kNone &&
        !(change.doneMask >> (warp.index % 4) & 1))
      return fail("warp " + std::to_string(warp.index) +
                  " exits without executing the setmaxnreg at line " +
                  std::to_string(function.code[change.pc].line) +
                  " that warp " + std::to_string(change.firstWarp) +
                  " of its warpgroup reached (all four warps of a warpgroup "
                  "must execute it)");
  }
  return true;
}

// PTX ISA, setmaxnreg: each warp of a warpgroup executes the same
// setmaxnreg (.sync.aligned), and they synchronize before the next one;
// `.dec` releases registers to the CTA's pool, `.inc` blocks until the pool
// has them. The count a warp starts with is KernelInfo::entryRegisters.
bool Exec::setmaxnreg(uint32_t mask) {
  if (mask != warp.liveMask)
    return fail("setmaxnreg reached by a diverged warp: lanes " +
                hexMask(mask) + " of " + hexMask(warp.liveMask));
  uint32_t group = warp.index / 4;
  if (4 * group + 4 > cta.warps.size())
    return fail("setmaxnreg needs a whole warpgroup (4 warps); warp " +
                std::to_string(warp.index) + "'s warpgroup is incomplete");
  if (warp.liveMask != 0xffffffffu)
    return fail("setmaxnreg needs all 32 threads of each warp of the "
                "warpgroup; only lanes " +
                hexMask(warp.liveMask) + " of warp " +
                std::to_string(warp.index) + " are live");
  Cta::RegisterChange &change = cta.registerChanges[group];
  uint32_t bit = 1u << (warp.index % 4);
  auto quote = [&](uint32_t at) {
    uint32_t line = function.code[at].line;
    return "`" + launch.program->line(line) + "` at line " +
           std::to_string(line);
  };
  if (change.pc == Cta::RegisterChange::kNone) {
    for (uint32_t w = 4 * group; w < 4 * group + 4; ++w)
      if (cta.warps[w].status == WarpStatus::Exited)
        return fail("setmaxnreg in warpgroup " + std::to_string(group) +
                    ", whose warp " + std::to_string(w) +
                    " has exited (all four warps of a warpgroup must "
                    "execute it)");
    change.pc = pc;
    change.firstWarp = warp.index;
  } else if (change.doneMask & bit) {
    return fail("warp " + std::to_string(warp.index) +
                " reaches a setmaxnreg before the other warps of warpgroup " +
                std::to_string(group) + " executed " + quote(change.pc) +
                " (the warps must synchronize between two setmaxnreg)");
  } else if (change.pc != pc) {
    return fail("the warps of warpgroup " + std::to_string(group) +
                " execute different setmaxnreg instructions: warp " +
                std::to_string(change.firstWarp) + " reached " +
                quote(change.pc) + ", warp " + std::to_string(warp.index) +
                " " + quote(pc) + " (all four must execute the same one)");
  }
  uint32_t count = static_cast<uint32_t>(in.operands[0].bits);
  uint32_t current = warp.maxRegisters;
  bool increase = in.variant == 1;
  if (current != 0) {
    if (increase ? count < current : count > current)
      return fail(std::string("setmaxnreg.") + (increase ? "inc" : "dec") +
                  " to " + std::to_string(count) +
                  " registers per thread, but the warp holds " +
                  std::to_string(current) + " (." +
                  (increase ? "inc must not lower" : "dec must not raise") +
                  " the count)");
    if (increase) {
      uint32_t needed = 32 * (count - current);
      if (cta.registerPool < needed) {
        warp.status = WarpStatus::Blocked;
        warp.block = BlockKind::Registers;
        warp.blockPc = pc;
        blocked = true;
        return true;
      }
      cta.registerPool -= needed;
    } else {
      cta.registerPool += 32 * (current - count);
    }
    warp.maxRegisters = count;
  }
  change.doneMask |= bit;
  if (change.doneMask == 0xf)
    change = Cta::RegisterChange();
  report(cluster.hazards->onSetmaxnreg(warp, pc));
  return true;
}

uint32_t registersRequested(const LaunchState &launch, const Warp &warp) {
  uint32_t target = static_cast<uint32_t>(
      launch.function->code[warp.blockPc].operands[0].bits);
  return 32 * (target - warp.maxRegisters);
}

} // namespace mosaic::emulator
