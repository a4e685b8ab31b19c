//===- LowerControlFlow.cpp - Loops, conditionals and their terminators ---===//
//
// Loops and conditionals are kept: their vector operands, block arguments and
// results are retyped to the registers of the layouts inference gave them,
// and the terminators forward registers.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

using namespace mlir;
using namespace mosaic;
using layout::RegisterLayout;

void KernelLowering::addControlFlowLowerings(LoweringRegistry &registry) {
  registry.add<scf::ForOp>(&KernelLowering::lowerFor, OpLowering::KeepsOp);
  registry.add<scf::IfOp>(&KernelLowering::lowerBranches, OpLowering::KeepsOp);
  registry.add<scf::IndexSwitchOp>(&KernelLowering::lowerBranches,
                                   OpLowering::KeepsOp);
  registry.add<scf::WhileOp>(&KernelLowering::lowerWhile, OpLowering::KeepsOp);
  registry.add<scf::ConditionOp>(&KernelLowering::lowerCondition,
                                 OpLowering::KeepsOp |
                                     OpLowering::OnVectorsOnly);
  registry.add<scf::YieldOp>(&KernelLowering::lowerYield,
                             OpLowering::KeepsOp | OpLowering::OnVectorsOnly);
}

LogicalResult KernelLowering::retypeResults(Operation *op,
                                            ArrayRef<Value> values,
                                            StringRef layouts) {
  unsigned vectorIndex = 0;
  for (Value value : values) {
    if (!isRegisterVector(value))
      continue;
    FailureOr<RegisterLayout> layout =
        annotatedLayout(op, layouts, vectorIndex++);
    if (failed(layout))
      return failure();
    FailureOr<VectorType> type =
        registerType(cast<VectorType>(value.getType()), *layout);
    if (failed(type))
      return op->emitOpError()
             << "carries a vector that does not fit " << layout->str();
    retypedValues.try_emplace(value, cast<VectorType>(value.getType()));
    value.setType(*type);
    (void)define(value, value, *layout);
  }
  return success();
}

LogicalResult KernelLowering::relayoutInits(Operation *op,
                                            MutableOperandRange inits,
                                            StringRef layouts) {
  OpBuilder builder(op);
  unsigned vectorIndex = 0;
  for (OpOperand &init : inits) {
    if (!isRegisterVector(init.get()))
      continue;
    FailureOr<RegisterLayout> layout =
        annotatedLayout(op, layouts, vectorIndex++);
    if (failed(layout))
      return failure();
    FailureOr<Value> registers = operandAs(op, init, *layout, builder);
    if (failed(registers))
      return failure();
    init.set(*registers);
  }
  return success();
}

LogicalResult KernelLowering::lowerFor(scf::ForOp op) {
  if (failed(relayoutInits(op, op.getInitArgsMutable(), kOutLayoutsAttr)))
    return failure();
  SmallVector<Value> carried(op.getRegionIterArgs());
  SmallVector<Value> results(op.getResults());
  if (failed(retypeResults(op, carried, kOutLayoutsAttr)) ||
      failed(retypeResults(op, results, kOutLayoutsAttr)))
    return failure();
  mosaic_gpu::dropLayoutAnnotations(op);
  return success();
}

LogicalResult KernelLowering::lowerBranches(Operation *op) {
  SmallVector<Value> results(op->getResults());
  if (failed(retypeResults(op, results, kOutLayoutsAttr)))
    return failure();
  mosaic_gpu::dropLayoutAnnotations(op);
  return success();
}

LogicalResult KernelLowering::lowerWhile(scf::WhileOp op) {
  if (failed(relayoutInits(op, op.getInitsMutable(), kInLayoutsAttr)))
    return failure();
  SmallVector<Value> before(op.getBeforeArguments());
  SmallVector<Value> after(op.getAfterArguments());
  SmallVector<Value> results(op.getResults());
  if (failed(retypeResults(op, before, kInLayoutsAttr)) ||
      failed(retypeResults(op, after, kOutLayoutsAttr)) ||
      failed(retypeResults(op, results, kOutLayoutsAttr)))
    return failure();
  mosaic_gpu::dropLayoutAnnotations(op);
  return success();
}

LogicalResult
KernelLowering::forwardRegisters(Operation *terminator,
                                 MutableArrayRef<OpOperand> operands,
                                 ValueRange targets) {
  OpBuilder builder(terminator);
  for (auto [operand, target] : llvm::zip_equal(operands, targets)) {
    if (!isRegisterVector(operand.get()))
      continue;
    // The parent has been retyped already: pass what its values hold.
    auto carried = fragments.find(target);
    if (carried == fragments.end())
      return terminator->emitOpError()
             << "passes on a vector its parent does not carry";
    FailureOr<Value> registers =
        operandAs(terminator, operand, carried->second.layout, builder);
    if (failed(registers))
      return failure();
    operand.set(*registers);
  }
  terminator->removeAttr(kInLayoutsAttr);
  return success();
}

LogicalResult KernelLowering::lowerYield(scf::YieldOp op) {
  Operation *parent = op->getParentOp();
  if (auto loop = dyn_cast<scf::WhileOp>(parent))
    return forwardRegisters(op, op->getOpOperands(), loop.getBeforeArguments());
  if (!isa<scf::ForOp, scf::IfOp, scf::IndexSwitchOp>(parent))
    return op.emitOpError() << "mosaic-gpu-lower carries vectors through "
                               "scf.for, scf.while, scf.if and "
                               "scf.index_switch only, not "
                            << parent->getName();
  return forwardRegisters(op, op->getOpOperands(), parent->getResults());
}

LogicalResult KernelLowering::lowerCondition(scf::ConditionOp op) {
  auto loop = cast<scf::WhileOp>(op->getParentOp());
  return forwardRegisters(op, op.getArgsMutable(), loop.getAfterArguments());
}
