//===- RegisterBudget.cpp - Kernels whose vectors cannot fit registers ----===//
//
// Every warpgroup vector lives in registers, so a kernel that keeps more of
// them alive at once than a thread has registers cannot be compiled well:
// LLVM unrolls it into straight-line code and ptxas spills to the stack
// (a 64 x 512 f32 tile alone takes 256 registers per thread). That is the
// kernel's shape, not something a later stage can repair, so the lowering
// refuses it up front, names the values that fill the registers and says
// what to change.
//
// The estimate counts only what must be in registers all at once: a vector
// that an op has consumed whole (a reduction, a wgmma, a loop that reads it
// in every iteration, a yield) and that is used again later, or one born
// whole (a wgmma's result, a loop's carried values), until its last use;
// inside a branch only what the branch defines counts. Elementwise chains
// stream element by element and iotas, constants and masks are recomputed where
// needed, so they count nothing; neither do addresses, indices or temporaries.
// Short of LLVM reloading or recomputing a whole vector, the kernel needs at
// least this many registers.
//
//===----------------------------------------------------------------------===//

#include "LoweringContext.h"

#include "mosaic/Dialect/MosaicGPU/Annotations.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

#include <algorithm>

using namespace mlir;
using namespace mosaic;

namespace {

struct LiveVector {
  Value value;
  int64_t registers;
  int64_t begin, end;
};

/// The registers per thread a vector result takes in its annotated layout,
/// or 0 when it has none yet.
int64_t registersOf(OpResult result) {
  if (!mosaic_gpu::isRegisterVector(result) ||
      !result.getOwner()->hasAttr(mosaic_gpu::kOutLayoutsAttr))
    return 0;
  FailureOr<layout::RegisterLayout> layout = mosaic_gpu::outLayoutFor(result);
  if (failed(layout))
    return 0;
  auto type = cast<VectorType>(result.getType());
  std::optional<layout::RegisterCost> cost = layout->cost(
      type.getShape(), type.getElementType().getIntOrFloatBitWidth());
  return cost ? cost->registersPerThread : 0;
}

/// Whether every element of `value` is cheap to compute again where it is
/// needed (iotas, constants, broadcast scalars, and elementwise functions
/// of those, such as a causal mask): LLVM folds or rematerializes them
/// rather than keeping them in registers.
bool isRematerializable(Value value, DenseMap<Value, bool> &memo) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return !isa<VectorType>(value.getType());
  if (auto found = memo.find(value); found != memo.end())
    return found->second;
  Operation *op = result.getOwner();
  bool cheap = false;
  if (isa<mosaic_gpu::BroadcastedIotaOp, arith::ConstantOp>(op))
    cheap = true;
  else if (isa<vector::BroadcastOp, mosaic_gpu::BroadcastInDimOp,
               vector::ShapeCastOp>(op) ||
           op->hasTrait<OpTrait::Elementwise>())
    cheap = op->getNumRegions() == 0 &&
            llvm::all_of(op->getOperands(), [&](Value operand) {
              return isRematerializable(operand, memo);
            });
  memo[value] = cheap;
  return cheap;
}

/// Ops that need all of a vector's elements before their result exists (or
/// hold them all at once): once such an op has consumed a value that is
/// used again later, all of that value is in registers in between.
bool consumesWhole(Operation *op) {
  return isa<vector::MultiDimReductionOp, vector::ReductionOp,
             mosaic_gpu::WGMMAOp, scf::YieldOp, scf::ConditionOp>(op);
}

LogicalResult checkFunction(FunctionOpInterface function) {
  // Ops numbered in program order; each op's subtree spans
  // [index, lastNested].
  DenseMap<Operation *, int64_t> index, lastNested;
  SmallVector<Operation *> order;
  function->walk<WalkOrder::PreOrder>([&](Operation *op) {
    index[op] = order.size();
    order.push_back(op);
  });
  function->walk<WalkOrder::PostOrder>([&](Operation *op) {
    int64_t last = index[op];
    for (Region &region : op->getRegions())
      for (Block &block : region)
        if (!block.empty())
          last = std::max(last, lastNested[&block.back()]);
    lastNested[op] = last;
  });

  // A value counts while it is whole: from the first op in `block` that
  // consumes it whole (a use inside a loop: the loop, which reads it in
  // every iteration) or from `wholeFrom` when it is born whole, up to, not
  // including, its last use (the user may reuse its registers). Elementwise
  // chains in between stream element by element and count nothing.
  std::vector<LiveVector> vectors;
  DenseMap<Value, bool> cheap;
  auto add = [&](Value value, int64_t registers, Block *block,
                 std::optional<int64_t> wholeFrom) {
    if (registers == 0 || isRematerializable(value, cheap))
      return;
    int64_t end = -1;
    std::optional<int64_t> begin = wholeFrom;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor)
        continue;
      bool loop = ancestor != user && isa<LoopLikeOpInterface>(ancestor);
      // A use in a loop keeps the value through every iteration; one in a
      // branch counts up to the branch, not inside it (the branches are
      // exclusive, and a wgmma there accumulates into the value's own
      // registers), which keeps the estimate a lower bound.
      int64_t last = ancestor == user ? index[user] - 1
                     : loop           ? lastNested[ancestor]
                                      : index[ancestor];
      end = std::max(end, last);
      bool whole = consumesWhole(user) || loop;
      if (whole)
        begin = std::min(begin.value_or(index[ancestor]), index[ancestor]);
    }
    if (begin && *begin <= end)
      vectors.push_back({value, registers, *begin, end});
  };
  for (Operation *op : order) {
    // Results of ops with regions (loops, branches) were yielded whole;
    // inside a loop's body its carried values are the iteration arguments.
    bool bornWhole = op->getNumRegions() > 0 || isa<mosaic_gpu::WGMMAOp>(op);
    for (OpResult result : op->getResults())
      add(result, registersOf(result), op->getBlock(),
          bornWhole ? std::optional<int64_t>(lastNested[op]) : std::nullopt);
    auto loop = dyn_cast<scf::ForOp>(op);
    if (!loop || loop.getBody()->empty())
      continue;
    // The arguments take over the init values' registers at the loop
    // itself, so that the first op of the body may reuse them.
    for (auto [argument, result] :
         llvm::zip_equal(loop.getRegionIterArgs(), loop.getResults()))
      add(argument, registersOf(result), loop.getBody(), index[op]);
  }

  std::vector<int64_t> change(order.size() + 1, 0);
  for (const LiveVector &vector : vectors) {
    change[vector.begin] += vector.registers;
    change[vector.end + 1] -= vector.registers;
  }
  int64_t live = 0, peak = 0, peakAt = 0;
  for (auto [position, delta] : llvm::enumerate(change)) {
    live += delta;
    if (live > peak) {
      peak = live;
      peakAt = position;
    }
  }
  if (peak <= kMaxRegistersPerThread)
    return success();

  std::vector<LiveVector> alive;
  for (const LiveVector &vector : vectors)
    if (vector.begin <= peakAt && peakAt <= vector.end)
      alive.push_back(vector);
  llvm::stable_sort(alive, [](const LiveVector &a, const LiveVector &b) {
    return a.registers > b.registers;
  });
  InFlightDiagnostic diag =
      order[peakAt]->emitError()
      << "holds vectors of at least " << peak
      << " 32-bit registers per thread whole here, more than the "
      << kMaxRegistersPerThread
      << " a thread has: the kernel would spill to the stack. Hold fewer "
         "rows or columns at a time (a smaller row tile, or a loop over "
         "column chunks)";
  constexpr size_t kBlamed = 3;
  for (const LiveVector &vector : ArrayRef(alive).take_front(kBlamed))
    diag.attachNote(vector.value.getLoc())
        << vector.value.getType() << " takes " << vector.registers
        << " registers per thread";
  return failure();
}

} // namespace

LogicalResult mosaic::checkRegisterBudget(Operation *root) {
  WalkResult result = root->walk([&](FunctionOpInterface function) {
    return failed(checkFunction(function)) ? WalkResult::interrupt()
                                           : WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}
