//===- LowerControlFlow.cpp - Loops, conditionals and their terminators ---===//
//
// Loops and conditionals are kept: their vector operands, block arguments and
// results are retyped to the registers of the layouts inference gave them,
// and the terminators forward registers.
//
//===----------------------------------------------------------------------===//

#include "LoweringContext.h"

using namespace mlir;
using namespace mosaic;
using layout::RegisterLayout;

namespace {
/// Which annotation holds the layouts of the values a kept op carries: its
/// results' (`out_layouts`, for loop-carried values and results), or its
/// operands' (`in_layouts`, for scf.while's inits and `before` arguments).
/// The i-th carried value takes the i-th result's or operand's entry.
enum class CarriedLayouts { OfResults, OfOperands };
} // namespace

static FailureOr<RegisterLayout> carriedLayout(Operation *op, unsigned index,
                                               CarriedLayouts from) {
  return from == CarriedLayouts::OfResults
             ? outLayoutFor(op->getResult(index))
             : inLayoutFor(op->getOpOperand(index));
}

/// Retypes the vectors among `values` to the registers of their layouts.
static LogicalResult retypeResults(LoweringContext &lowering, Operation *op,
                                   ArrayRef<Value> values,
                                   CarriedLayouts from) {
  for (auto [index, value] : llvm::enumerate(values)) {
    if (!isRegisterVector(value))
      continue;
    FailureOr<RegisterLayout> layout = carriedLayout(op, index, from);
    if (failed(layout))
      return failure();
    FailureOr<VectorType> type =
        registerType(cast<VectorType>(value.getType()), *layout);
    if (failed(type))
      return op->emitOpError()
             << "carries a vector that does not fit " << layout->str();
    lowering.retypeInPlace(value, *type, *layout);
  }
  return success();
}

/// A loop's initial values, relaid to their layouts.
static LogicalResult relayoutInits(LoweringContext &lowering, Operation *op,
                                   MutableOperandRange inits,
                                   CarriedLayouts from) {
  OpBuilder builder(op);
  for (auto [index, init] : llvm::enumerate(inits)) {
    if (!isRegisterVector(init.get()))
      continue;
    FailureOr<RegisterLayout> layout = carriedLayout(op, index, from);
    if (failed(layout))
      return failure();
    FailureOr<Value> registers = lowering.operandAs(op, init, *layout, builder);
    if (failed(registers))
      return failure();
    init.set(*registers);
  }
  return success();
}

static LogicalResult lowerFor(LoweringContext &lowering, scf::ForOp op) {
  if (failed(relayoutInits(lowering, op, op.getInitArgsMutable(),
                           CarriedLayouts::OfResults)))
    return failure();
  SmallVector<Value> carried(op.getRegionIterArgs());
  SmallVector<Value> results(op.getResults());
  if (failed(retypeResults(lowering, op, carried, CarriedLayouts::OfResults)) ||
      failed(retypeResults(lowering, op, results, CarriedLayouts::OfResults)))
    return failure();
  mosaic_gpu::dropLayoutAnnotations(op);
  return success();
}

/// scf.if and scf.index_switch: results retyped, yields forward.
static LogicalResult lowerBranches(LoweringContext &lowering, Operation *op) {
  SmallVector<Value> results(op->getResults());
  if (failed(retypeResults(lowering, op, results, CarriedLayouts::OfResults)))
    return failure();
  mosaic_gpu::dropLayoutAnnotations(op);
  return success();
}

static LogicalResult lowerWhile(LoweringContext &lowering, scf::WhileOp op) {
  if (failed(relayoutInits(lowering, op, op.getInitsMutable(),
                           CarriedLayouts::OfOperands)))
    return failure();
  SmallVector<Value> before(op.getBeforeArguments());
  SmallVector<Value> after(op.getAfterArguments());
  SmallVector<Value> results(op.getResults());
  if (failed(retypeResults(lowering, op, before, CarriedLayouts::OfOperands)) ||
      failed(retypeResults(lowering, op, after, CarriedLayouts::OfResults)) ||
      failed(retypeResults(lowering, op, results, CarriedLayouts::OfResults)))
    return failure();
  mosaic_gpu::dropLayoutAnnotations(op);
  return success();
}

/// Makes a terminator pass registers: each vector operand becomes the
/// registers of the layout its (already retyped) target holds.
static LogicalResult forwardRegisters(LoweringContext &lowering,
                                      Operation *terminator,
                                      MutableArrayRef<OpOperand> operands,
                                      ValueRange targets) {
  OpBuilder builder(terminator);
  for (auto [operand, target] : llvm::zip_equal(operands, targets)) {
    if (!isRegisterVector(operand.get()))
      continue;
    // The parent has been retyped already: pass what its values hold.
    const Fragment *carried = lowering.lookup(target);
    if (!carried)
      return terminator->emitOpError()
             << "passes on a vector its parent does not carry";
    FailureOr<Value> registers =
        lowering.operandAs(terminator, operand, carried->layout, builder);
    if (failed(registers))
      return failure();
    operand.set(*registers);
  }
  terminator->removeAttr(kInLayoutsAttr);
  return success();
}

static LogicalResult lowerYield(LoweringContext &lowering, scf::YieldOp op) {
  Operation *parent = op->getParentOp();
  if (auto loop = dyn_cast<scf::WhileOp>(parent))
    return forwardRegisters(lowering, op, op->getOpOperands(),
                            loop.getBeforeArguments());
  if (!isa<scf::ForOp, scf::IfOp, scf::IndexSwitchOp>(parent))
    return op.emitOpError() << "mosaic-gpu-lower carries vectors through "
                               "scf.for, scf.while, scf.if and "
                               "scf.index_switch only, not "
                            << parent->getName();
  return forwardRegisters(lowering, op, op->getOpOperands(),
                          parent->getResults());
}

static LogicalResult lowerCondition(LoweringContext &lowering,
                                    scf::ConditionOp op) {
  auto loop = cast<scf::WhileOp>(op->getParentOp());
  return forwardRegisters(lowering, op, op.getArgsMutable(),
                          loop.getAfterArguments());
}

void mosaic::populateControlFlowLowerings(LoweringRegistry &registry) {
  registry.add<scf::ForOp>(lowerFor, OpLowering::KeepsOp);
  registry.add<scf::IfOp, scf::IndexSwitchOp>(lowerBranches,
                                              OpLowering::KeepsOp);
  registry.add<scf::WhileOp>(lowerWhile, OpLowering::KeepsOp);
  registry.add<scf::ConditionOp>(lowerCondition, OpLowering::KeepsOp |
                                                     OpLowering::OnVectorsOnly);
  registry.add<scf::YieldOp>(lowerYield,
                             OpLowering::KeepsOp | OpLowering::OnVectorsOnly);
}
