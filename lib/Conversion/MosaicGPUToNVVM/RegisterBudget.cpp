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
// The estimate is a lower bound of what ptxas needs: the registers of the
// vectors alive at each op (from its definition to its last use; a value
// used inside a loop lives through the whole loop, and a loop's carried
// values through its body), without addresses, indices or temporaries.
//
//===----------------------------------------------------------------------===//

#include "LoweringContext.h"

#include "mosaic/Dialect/MosaicGPU/Annotations.h"

#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

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

/// The registers a result adds to those already alive: a broadcast or a
/// reshape only repeats or renames its operand's registers, which LLVM
/// does not copy.
int64_t newRegistersOf(OpResult result) {
  int64_t registers = registersOf(result);
  Operation *op = result.getOwner();
  if (!isa<mosaic_gpu::BroadcastInDimOp, vector::BroadcastOp,
           vector::ShapeCastOp>(op))
    return registers;
  Value source = op->getOperand(0);
  if (auto producer = dyn_cast<OpResult>(source))
    return std::min(registers, registersOf(producer));
  // A scalar or a block argument: at most its own registers.
  return std::min<int64_t>(registers, 1);
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

  std::vector<LiveVector> vectors;
  // Alive from `begin` up to, not including, its last use in `block` (the
  // user may reuse its registers), and at least at `begin`; a use nested in
  // an op of the block keeps the value alive through all of that op.
  auto add = [&](Value value, int64_t registers, Block *block, int64_t begin) {
    if (registers == 0)
      return;
    int64_t end = begin;
    for (Operation *user : value.getUsers()) {
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (ancestor == user)
        end = std::max(end, index[user] - 1);
      else if (ancestor)
        end = std::max(end, lastNested[ancestor]);
    }
    vectors.push_back({value, registers, begin, end});
  };
  for (Operation *op : order) {
    // A loop's results are its carried values: inside the body they are the
    // iteration arguments, after it the results.
    for (OpResult result : op->getResults())
      add(result, newRegistersOf(result), op->getBlock(),
          op->getNumRegions() ? lastNested[op] : index[op]);
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
      << "keeps vectors of at least " << peak
      << " 32-bit registers per thread alive here, more than the "
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
