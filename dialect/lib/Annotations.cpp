//===- Annotations.cpp - The layout and transform annotations -------------===//

#include "mosaic/Dialect/MosaicGPU/Annotations.h"

#include "mosaic/Dialect/MosaicGPU/AttributeBridge.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using mosaic::layout::RegisterLayout;
using mosaic::layout::SmemTransforms;

bool mosaic_gpu::isRegisterVector(Value value) {
  auto type = dyn_cast<VectorType>(value.getType());
  return type && type.getRank() > 0 && !type.isScalable();
}

bool mosaic_gpu::isSharedBuffer(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  return type && isSharedMemory(type) &&
         !isa<BarrierType>(type.getElementType());
}

/// The position of `value` among the values of `range` that satisfy `is`.
template <typename Range>
static std::optional<unsigned> positionAmong(Range range, Value value,
                                             bool (*is)(Value)) {
  if (!is(value))
    return std::nullopt;
  unsigned index = 0;
  for (Value candidate : range) {
    if (candidate == value)
      return index;
    if (is(candidate))
      ++index;
  }
  return std::nullopt;
}

/// The same for an operand, which may appear more than once in its range.
static std::optional<unsigned> operandPosition(OpOperand &operand,
                                               bool (*is)(Value)) {
  if (!is(operand.get()))
    return std::nullopt;
  Operation *op = operand.getOwner();
  return llvm::count_if(
      op->getOperands().take_front(operand.getOperandNumber()), is);
}

std::optional<unsigned> mosaic_gpu::registerVectorIndex(OpOperand &operand) {
  return operandPosition(operand, isRegisterVector);
}
std::optional<unsigned> mosaic_gpu::registerVectorIndex(OpResult result) {
  return positionAmong(result.getOwner()->getResults(), result,
                       isRegisterVector);
}
std::optional<unsigned> mosaic_gpu::sharedBufferIndex(OpOperand &operand) {
  return operandPosition(operand, isSharedBuffer);
}
std::optional<unsigned> mosaic_gpu::sharedBufferIndex(OpResult result) {
  return positionAmong(result.getOwner()->getResults(), result, isSharedBuffer);
}

/// Entry `index` of the array annotation `name`, or an error on `op`.
static FailureOr<Attribute> annotationEntry(Operation *op, StringRef name,
                                            unsigned index) {
  auto entries = op->getAttrOfType<ArrayAttr>(name);
  if (!entries || index >= entries.size())
    return op->emitOpError() << "has no `" << name << "` entry " << index
                             << "; run mosaic-gpu-infer-layouts first";
  return entries[index];
}

/// Entry `index` of the layout annotation `name` of `op`.
static FailureOr<RegisterLayout> annotatedLayout(Operation *op, StringRef name,
                                                 unsigned index) {
  FailureOr<Attribute> entry = annotationEntry(op, name, index);
  if (failed(entry))
    return failure();
  FailureOr<RegisterLayout> layout = mosaic::attrToLayout(*entry);
  if (failed(layout))
    return op->emitOpError()
           << "`" << name << "` entry " << index << " is not a register layout";
  return layout;
}

/// Entry `index` of the transform annotation `name` of `op`.
static FailureOr<SmemTransforms>
annotatedTransforms(Operation *op, StringRef name, unsigned index) {
  FailureOr<Attribute> entry = annotationEntry(op, name, index);
  if (failed(entry))
    return failure();
  FailureOr<SmemTransforms> transforms = mosaic::attrToTransforms(*entry);
  if (failed(transforms))
    return op->emitOpError() << "`" << name << "` entry " << index
                             << " is not a list of tile/swizzle transforms";
  return transforms;
}

/// The error for a value that has no annotation of the kind asked for.
static InFlightDiagnostic notAnnotated(Operation *op, StringRef what,
                                       unsigned number, StringRef kind) {
  return op->emitOpError() << what << " #" << number << " is not a " << kind;
}

FailureOr<RegisterLayout> mosaic_gpu::inLayoutFor(OpOperand &operand) {
  Operation *op = operand.getOwner();
  std::optional<unsigned> index = registerVectorIndex(operand);
  if (!index)
    return notAnnotated(op, "operand", operand.getOperandNumber(),
                        "register vector");
  return annotatedLayout(op, kInLayoutsAttr, *index);
}

FailureOr<RegisterLayout> mosaic_gpu::outLayoutFor(OpResult result) {
  Operation *op = result.getOwner();
  std::optional<unsigned> index = registerVectorIndex(result);
  if (!index)
    return notAnnotated(op, "result", result.getResultNumber(),
                        "register vector");
  return annotatedLayout(op, kOutLayoutsAttr, *index);
}

FailureOr<SmemTransforms> mosaic_gpu::inTransformsFor(OpOperand &operand) {
  Operation *op = operand.getOwner();
  std::optional<unsigned> index = sharedBufferIndex(operand);
  if (!index)
    return notAnnotated(op, "operand", operand.getOperandNumber(),
                        "shared-memory buffer");
  return annotatedTransforms(op, kInTransformsAttr, *index);
}

FailureOr<SmemTransforms> mosaic_gpu::outTransformsFor(OpResult result) {
  Operation *op = result.getOwner();
  std::optional<unsigned> index = sharedBufferIndex(result);
  if (!index)
    return notAnnotated(op, "result", result.getResultNumber(),
                        "shared-memory buffer");
  return annotatedTransforms(op, kOutTransformsAttr, *index);
}

LogicalResult mosaic_gpu::verifyTransformsAnnotation(Operation *op,
                                                     StringRef name) {
  bool operands = name == kInTransformsAttr;
  unsigned buffers = operands
                         ? llvm::count_if(op->getOperands(), isSharedBuffer)
                         : llvm::count_if(op->getResults(), isSharedBuffer);
  auto entries = op->getAttrOfType<ArrayAttr>(name);
  if (!entries)
    return op->emitOpError()
           << "has no `" << name << "`; run mosaic-gpu-infer-layouts first";
  if (entries.size() != buffers)
    return op->emitOpError()
           << "`" << name << "` has " << entries.size()
           << " entries, but the op has " << buffers << " shared-memory buffer "
           << (operands ? "operands" : "results");
  for (unsigned index = 0; index < buffers; ++index)
    if (failed(annotatedTransforms(op, name, index)))
      return failure();
  return success();
}

void mosaic_gpu::setAnnotations(Operation *op, ArrayRef<Attribute> inLayouts,
                                ArrayRef<Attribute> outLayouts,
                                ArrayRef<Attribute> inTransforms,
                                ArrayRef<Attribute> outTransforms) {
  MLIRContext *context = op->getContext();
  auto set = [&](StringRef name, ArrayRef<Attribute> entries) {
    if (!entries.empty())
      op->setAttr(name, ArrayAttr::get(context, entries));
  };
  set(kInLayoutsAttr, inLayouts);
  set(kOutLayoutsAttr, outLayouts);
  set(kInTransformsAttr, inTransforms);
  set(kOutTransformsAttr, outTransforms);
}

void mosaic_gpu::setInTransforms(Operation *op,
                                 ArrayRef<SmemTransforms> entries) {
  MLIRContext *context = op->getContext();
  SmallVector<Attribute> attrs;
  for (const SmemTransforms &transforms : entries)
    attrs.push_back(mosaic::transformsToAttr(context, transforms));
  op->setAttr(kInTransformsAttr, ArrayAttr::get(context, attrs));
}

void mosaic_gpu::markTransformsApplied(Operation *op) {
  op->setAttr(kTransformsAppliedAttr, UnitAttr::get(op->getContext()));
}

bool mosaic_gpu::transformsApplied(Operation *op) {
  return op->hasAttr(kTransformsAppliedAttr);
}

void mosaic_gpu::dropLayoutAnnotations(Operation *op) {
  op->removeAttr(kInLayoutsAttr);
  op->removeAttr(kOutLayoutsAttr);
}
