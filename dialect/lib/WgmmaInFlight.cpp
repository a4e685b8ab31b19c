//===- WgmmaInFlight.cpp - Uses of async wgmma results --------------------===//
//
// A forward dataflow over structured control flow. The state maps each
// in-flight value to its age: how many wgmma groups were committed after
// its own, at least, on every path here. `wgmma_wait N` completes the
// values of age >= N; an async wgmma ages every value by one group and adds
// its result at age 0; a synchronous one waits for all. Merges keep a value
// in flight when any path has it, at its smallest age. Loops iterate to a
// fixed point (ages are capped, so the lattice is finite) without
// reporting, then report once from the fixed point.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Dialect/MosaicGPU/WgmmaInFlight.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/MapVector.h"

#include <optional>

using namespace mlir;

namespace {

/// Ages beyond this are all the same: no wait lets that many groups pend.
constexpr int64_t kAgeCap = 64;

struct InFlight {
  int64_t age;
  Operation *issuer;
};

struct State {
  llvm::MapVector<Value, InFlight> inFlight;
  /// Accumulators an async wgmma overwrote while they were in flight, and
  /// that wgmma.
  llvm::MapVector<Value, Operation *> overwritten;

  bool operator==(const State &other) const {
    if (inFlight.size() != other.inFlight.size() ||
        overwritten.size() != other.overwritten.size())
      return false;
    for (const auto &[value, entry] : inFlight) {
      auto it = other.inFlight.find(value);
      if (it == other.inFlight.end() || it->second.age != entry.age)
        return false;
    }
    for (const auto &entry : overwritten)
      if (!other.overwritten.count(entry.first))
        return false;
    return true;
  }

  /// The merge of two paths: in flight on either, at the smaller age.
  void join(const State &other) {
    for (const auto &[value, entry] : other.inFlight) {
      auto [it, inserted] = inFlight.insert({value, entry});
      if (!inserted && entry.age < it->second.age)
        it->second = entry;
    }
    for (const auto &entry : other.overwritten)
      overwritten.insert(entry);
  }

  /// `to` takes the status `from` has (nothing when `from` is ready).
  void copyStatus(Value from, Value to) {
    std::optional<InFlight> flight;
    if (auto it = inFlight.find(from); it != inFlight.end())
      flight = it->second;
    Operation *overwriter = overwritten.lookup(from);
    forget(to);
    if (flight)
      inFlight[to] = *flight;
    if (overwriter)
      overwritten[to] = overwriter;
  }

  /// Each of `to` takes the status of the value of `from` at its position.
  void pass(ValueRange from, ValueRange to) {
    for (auto [source, target] : llvm::zip(from, to))
      copyStatus(source, target);
  }

  /// Drops the values defined inside `op`'s regions, out of scope after it.
  void forgetInside(Operation *op) {
    auto inside = [&](Value value) {
      Region *region = value.getParentRegion();
      return region && op->isAncestor(region->getParentOp());
    };
    inFlight.remove_if([&](const auto &entry) { return inside(entry.first); });
    overwritten.remove_if(
        [&](const auto &entry) { return inside(entry.first); });
  }

  void forget(Value value) {
    inFlight.erase(value);
    overwritten.erase(value);
  }
};

/// The state at a loop's head, whose `arguments` come from `inits` on entry
/// (`entry`) or from `yielded` on the back edge (`end`).
State loopHead(const State &entry, ValueRange inits, State end,
               ValueRange yielded, ValueRange arguments) {
  State head = entry;
  head.pass(inits, arguments);
  end.pass(yielded, arguments);
  head.join(end);
  return head;
}

class Checker {
public:
  bool failed = false;
  /// Where the values waits complete go, if anywhere.
  llvm::DenseSet<Value> *completed = nullptr;

  void visitBlock(Block &block, State &state, bool report) {
    for (Operation &op : block)
      visitOp(&op, state, report);
  }

private:
  void noteCompleted(Value value, bool report) {
    if (report && completed)
      completed->insert(value);
  }

  void read(Operation *op, Value value, const State &state, bool report) {
    if (!report)
      return;
    if (auto it = state.inFlight.find(value); it != state.inFlight.end()) {
      int64_t age = it->second.age;
      InFlightDiagnostic diag = op->emitOpError();
      diag << "reads the result of an async wgmma while it may still be in "
              "flight: ";
      if (age == 0)
        diag << "no wgmma_wait covers it on every path here; it needs "
                "`mosaic_gpu.wgmma_wait 0` first";
      else
        diag << "at least " << age
             << " wgmma group(s) were committed after it, but no wgmma_wait "
                "covers it on every path here; it needs "
                "`mosaic_gpu.wgmma_wait` with pending <= "
             << age << " first";
      diag.attachNote(it->second.issuer->getLoc()) << "the async wgmma";
      failed = true;
      return;
    }
    if (auto it = state.overwritten.find(value);
        it != state.overwritten.end()) {
      InFlightDiagnostic diag = op->emitOpError();
      diag << "reads an accumulator that an async wgmma overwrote in place "
              "while it was in flight; use that wgmma's result instead";
      diag.attachNote(it->second->getLoc())
          << "the async wgmma that overwrote it";
      failed = true;
    }
  }

  void visitWgmma(mosaic_gpu::WGMMAOp wgmma, State &state, bool report) {
    if (isa<VectorType>(wgmma.getA().getType()))
      read(wgmma, wgmma.getA(), state, report);
    Value accumulator = wgmma.getAccumulator();
    if (state.overwritten.count(accumulator))
      read(wgmma, accumulator, state, report);
    if (state.inFlight.count(accumulator)) {
      // The wgmma accumulates into the same registers, after the pending
      // one: allowed, but the old value is gone.
      state.inFlight.erase(accumulator);
      state.overwritten[accumulator] = wgmma;
    }
    if (!wgmma.getAsync()) {
      for (const auto &entry : state.inFlight)
        noteCompleted(entry.first, report);
      state.inFlight.clear();
      state.overwritten.erase(wgmma.getResult());
      return;
    }
    for (auto &entry : state.inFlight)
      entry.second.age = std::min(entry.second.age + 1, kAgeCap);
    // A new value: in a loop, what overwrote the previous iteration's
    // result says nothing about this one.
    state.overwritten.erase(wgmma.getResult());
    state.inFlight[wgmma.getResult()] = InFlight{0, wgmma};
  }

  /// The state after `region`'s terminator, entered with `state`.
  State visitRegion(Region &region, const State &state, bool report) {
    State inside = state;
    if (!region.empty())
      for (Block &block : region)
        visitBlock(block, inside, report);
    return inside;
  }

  /// scf.if and scf.index_switch: each result is in flight when it is on
  /// some branch (an absent else passes no values).
  void visitBranches(Operation *op, State &state, bool report) {
    State merged;
    bool first = true;
    for (Region &region : op->getRegions()) {
      State branch = region.empty() ? state : visitRegion(region, state, report);
      if (!region.empty())
        branch.pass(region.front().getTerminator()->getOperands(),
                    op->getResults());
      if (first)
        merged = std::move(branch);
      else
        merged.join(branch);
      first = false;
    }
    merged.forgetInside(op);
    state = std::move(merged);
  }

  void visitFor(scf::ForOp loop, State &state, bool report) {
    Block *body = loop.getBody();
    ValueRange yielded = body->getTerminator()->getOperands();
    State head = state;
    head.pass(loop.getInitArgs(), loop.getRegionIterArgs());
    State end;
    while (true) {
      end = head;
      visitBlock(*body, end, /*report=*/false);
      State next = loopHead(state, loop.getInitArgs(), end, yielded,
                            loop.getRegionIterArgs());
      if (next == head)
        break;
      head = std::move(next);
    }
    if (report) {
      State reported = head;
      visitBlock(*body, reported, /*report=*/true);
    }
    // Zero trips or some: the results come from the inits or the yields.
    State after = state;
    after.pass(loop.getInitArgs(), loop.getResults());
    end.pass(yielded, loop.getResults());
    after.join(end);
    after.forgetInside(loop);
    state = std::move(after);
  }

  void visitWhile(scf::WhileOp loop, State &state, bool report) {
    Block &before = loop.getBefore().front();
    Block &afterBlock = loop.getAfter().front();
    State head = state;
    head.pass(loop.getInits(), before.getArguments());
    State atCondition;
    auto iterate = [&](State entry, bool reportNow) {
      State beforeEnd = entry;
      visitBlock(before, beforeEnd, reportNow);
      atCondition = beforeEnd;
      auto condition = cast<scf::ConditionOp>(before.getTerminator());
      State afterEnd = beforeEnd;
      afterEnd.pass(condition.getArgs(), afterBlock.getArguments());
      visitBlock(afterBlock, afterEnd, reportNow);
      return afterEnd;
    };
    while (true) {
      State afterEnd = iterate(head, /*reportNow=*/false);
      State next = loopHead(state, loop.getInits(), std::move(afterEnd),
                            afterBlock.getTerminator()->getOperands(),
                            before.getArguments());
      if (next == head)
        break;
      head = std::move(next);
    }
    if (report)
      iterate(head, /*reportNow=*/true);
    auto condition = cast<scf::ConditionOp>(before.getTerminator());
    State exit = atCondition;
    exit.pass(condition.getArgs(), loop.getResults());
    exit.forgetInside(loop);
    state = std::move(exit);
  }

  void visitOp(Operation *op, State &state, bool report) {
    if (auto wgmma = dyn_cast<mosaic_gpu::WGMMAOp>(op))
      return visitWgmma(wgmma, state, report);
    if (auto wait = dyn_cast<mosaic_gpu::WGMMAWaitOp>(op)) {
      int64_t pending = wait.getPending();
      state.inFlight.remove_if([&](const auto &entry) {
        if (entry.second.age < pending)
          return false;
        noteCompleted(entry.first, report);
        return true;
      });
      return;
    }
    // Terminators that hand values to their parent pass them on; the
    // parent's visit gives its results (or arguments) their status.
    if (isa<scf::YieldOp, scf::ConditionOp>(op))
      return;
    if (auto loop = dyn_cast<scf::ForOp>(op))
      return visitFor(loop, state, report);
    if (auto loop = dyn_cast<scf::WhileOp>(op))
      return visitWhile(loop, state, report);
    if (isa<scf::IfOp, scf::IndexSwitchOp>(op)) {
      for (Value operand : op->getOperands())
        read(op, operand, state, report);
      return visitBranches(op, state, report);
    }
    for (Value operand : op->getOperands())
      read(op, operand, state, report);
    // Other ops with regions: each region may run, once, from here.
    State merged = state;
    for (Region &region : op->getRegions())
      merged.join(visitRegion(region, state, report));
    merged.forgetInside(op);
    state = std::move(merged);
  }
};

} // namespace

LogicalResult
mosaic_gpu::verifyWgmmaInFlightUses(Operation *root,
                                    llvm::DenseSet<Value> *completed) {
  Checker checker;
  checker.completed = completed;
  auto check = [&](FunctionOpInterface function) {
    // Only kernels with async wgmma have anything to check.
    bool hasAsync = false;
    function->walk([&](WGMMAOp wgmma) {
      hasAsync |= static_cast<bool>(wgmma.getAsync());
    });
    if (!hasAsync || function.isExternal())
      return;
    State state;
    for (Block &block : function.getFunctionBody())
      checker.visitBlock(block, state, /*report=*/true);
  };
  if (auto function = dyn_cast<FunctionOpInterface>(root))
    check(function);
  else
    root->walk([&](FunctionOpInterface function) { check(function); });
  return failure(checker.failed);
}
