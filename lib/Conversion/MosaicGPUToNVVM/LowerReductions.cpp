//===- LowerReductions.cpp - Reductions, broadcasts and reshapes ----------===//
//
// These ops move elements between register positions. Each thread holds its
// elements at the same positions as thread 0, shifted by a per-thread offset
// (KernelLowering.h), so a position map computed for thread 0 applies to all
// threads whenever the two layouts shift alike; broadcasts and reshapes
// check that for every thread before trusting the map. A reduction first
// combines the registers each thread holds, then exchanges partial results
// between the lanes that split a reduced dim with butterfly shuffles.
//
//===----------------------------------------------------------------------===//

#include "Conversion/MosaicGPUToNVVM/KernelLowering.h"

#include <map>

using namespace mlir;
using namespace mosaic;
using layout::kLanesPerWarp;
using layout::kThreadsPerWarpgroup;
using layout::RegisterLayout;
using layout::Shape;

/// The element of a vector of `shape` that `thread` holds at flat register
/// position `position`.
static llvm::Expected<Shape> elementAt(const RegisterLayout &layout,
                                       ArrayRef<int64_t> shape, int64_t thread,
                                       int64_t position) {
  // elementIndex counts registers in whole vectors (strided: chunks).
  int64_t vector = layout.isTiled()     ? layout.tiledLayout().vectorLength()
                   : layout.isStrided() ? layout.vectorSize()
                                        : 1;
  return layout.elementIndex(shape, thread, position / vector,
                             position % vector);
}

/// Thread 0's register position of each element it holds.
static std::map<Shape, int64_t> positionsOf(ArrayRef<Shape> elements) {
  std::map<Shape, int64_t> positions;
  for (auto [position, index] : llvm::enumerate(elements))
    positions.try_emplace(index, position);
  return positions;
}

namespace {
/// How a result position reads the source: `sourceIndex(resultIndex)`.
using IndexMap = function_ref<Shape(ArrayRef<int64_t>)>;
} // namespace

/// Builds the result registers from the source registers when every result
/// element of every thread sits at a source position that thread holds.
static FailureOr<Value> gatherRegisters(Operation *op, OpBuilder &builder,
                                        Value source,
                                        const RegisterLayout &sourceLayout,
                                        ArrayRef<int64_t> sourceShape,
                                        const RegisterLayout &resultLayout,
                                        VectorType resultType,
                                        IndexMap sourceIndex) {
  ArrayRef<int64_t> resultShape = resultType.getShape();
  llvm::Expected<std::vector<Shape>> resultElements =
      thread0Elements(resultLayout, resultShape);
  llvm::Expected<std::vector<Shape>> sourceElements =
      thread0Elements(sourceLayout, sourceShape);
  if (!resultElements || !sourceElements) {
    std::string message = !resultElements
                              ? llvm::toString(resultElements.takeError())
                              : llvm::toString(sourceElements.takeError());
    return op->emitOpError() << message;
  }
  std::map<Shape, int64_t> sourcePositions = positionsOf(*sourceElements);
  SmallVector<int64_t> mask;
  for (const Shape &index : *resultElements) {
    auto found = sourcePositions.find(sourceIndex(index));
    if (found == sourcePositions.end())
      return op->emitOpError()
             << "needs elements that another thread holds: "
             << sourceLayout.str() << " does not lay out the operand the way "
             << resultLayout.str() << " needs (a shared-memory round trip "
             << "would be required)";
    mask.push_back(found->second);
  }
  // Splat sources hold the same value everywhere; the others must shift
  // alike for every thread.
  if (!sourceLayout.isSplat())
    for (int64_t thread = 1; thread < kThreadsPerWarpgroup; ++thread)
      for (auto [position, sourcePosition] : llvm::enumerate(mask)) {
        llvm::Expected<Shape> wanted =
            elementAt(resultLayout, resultShape, thread, position);
        llvm::Expected<Shape> held =
            elementAt(sourceLayout, sourceShape, thread, sourcePosition);
        if (!wanted || !held) {
          llvm::consumeError(wanted.takeError());
          llvm::consumeError(held.takeError());
          return op->emitOpError()
                 << "cannot map registers between " << sourceLayout.str()
                 << " and " << resultLayout.str();
        }
        if (sourceIndex(*wanted) != *held)
          return op->emitOpError()
                 << "needs elements that another thread holds: thread "
                 << thread << " has the operand in " << sourceLayout.str()
                 << " but its result in " << resultLayout.str()
                 << " (a shared-memory round trip would be required)";
      }
  return vector::ShuffleOp::create(builder, op->getLoc(), source, source, mask)
      .getResult();
}

static FailureOr<VectorType> resultRegisters(Operation *op, VectorType type,
                                             const RegisterLayout &layout) {
  FailureOr<VectorType> registers = registerType(type, layout);
  if (failed(registers))
    return op->emitOpError()
           << "result " << type << " does not fit " << layout.str();
  return registers;
}

LogicalResult
KernelLowering::lowerBroadcastInDim(mosaic_gpu::BroadcastInDimOp op) {
  FailureOr<RegisterLayout> sourceLayout = annotatedLayout(op, "in_layouts", 0);
  FailureOr<RegisterLayout> resultLayout =
      annotatedLayout(op, "out_layouts", 0);
  if (failed(sourceLayout) || failed(resultLayout))
    return failure();
  OpBuilder builder(op);
  FailureOr<Value> source =
      operandAs(op, op->getOpOperand(0), *sourceLayout, builder);
  VectorType type = op.getResult().getType();
  FailureOr<VectorType> target = resultRegisters(op, type, *resultLayout);
  if (failed(source) || failed(target))
    return failure();
  ArrayRef<int64_t> dims = op.getBroadcastDimensions();
  FailureOr<Value> registers =
      gatherRegisters(op, builder, *source, *sourceLayout,
                      logicalType(op.getOperand()).getShape(), *resultLayout,
                      type, [&](ArrayRef<int64_t> index) {
                        Shape sourceIndex;
                        for (int64_t dim : dims)
                          sourceIndex.push_back(index[dim]);
                        return sourceIndex;
                      });
  if (failed(registers))
    return failure();
  return define(op.getResult(), *registers, *resultLayout);
}

LogicalResult KernelLowering::lowerBroadcast(vector::BroadcastOp op) {
  FailureOr<RegisterLayout> resultLayout =
      annotatedLayout(op, "out_layouts", 0);
  if (failed(resultLayout))
    return failure();
  VectorType type = op.getResultVectorType();
  FailureOr<VectorType> target = resultRegisters(op, type, *resultLayout);
  if (failed(target))
    return failure();
  OpBuilder builder(op);
  Location loc = op.getLoc();
  auto sourceType = isa<VectorType>(op.getSourceType())
                        ? logicalType(op.getSource())
                        : VectorType();
  if (!sourceType || sourceType.getRank() == 0) {
    // A scalar: every thread holds it in every register.
    Value scalar = op.getSource();
    if (sourceType)
      scalar =
          vector::ExtractOp::create(builder, loc, scalar, ArrayRef<int64_t>{});
    Value registers =
        vector::BroadcastOp::create(builder, loc, *target, scalar);
    return define(op.getResult(), registers, *resultLayout);
  }
  FailureOr<RegisterLayout> sourceLayout = annotatedLayout(op, "in_layouts", 0);
  if (failed(sourceLayout))
    return failure();
  FailureOr<Value> source =
      operandAs(op, op->getOpOperand(0), *sourceLayout, builder);
  if (failed(source))
    return failure();
  // Leading dims are added; unit source dims stretch.
  int64_t added = type.getRank() - sourceType.getRank();
  ArrayRef<int64_t> sourceShape = sourceType.getShape();
  FailureOr<Value> registers = gatherRegisters(
      op, builder, *source, *sourceLayout, sourceShape, *resultLayout, type,
      [&](ArrayRef<int64_t> index) {
        Shape sourceIndex;
        for (int64_t dim = 0; dim < sourceType.getRank(); ++dim)
          sourceIndex.push_back(sourceShape[dim] == 1 ? 0 : index[added + dim]);
        return sourceIndex;
      });
  if (failed(registers))
    return failure();
  return define(op.getResult(), *registers, *resultLayout);
}

LogicalResult KernelLowering::lowerShapeCast(vector::ShapeCastOp op) {
  FailureOr<RegisterLayout> sourceLayout = annotatedLayout(op, "in_layouts", 0);
  FailureOr<RegisterLayout> resultLayout =
      annotatedLayout(op, "out_layouts", 0);
  if (failed(sourceLayout) || failed(resultLayout))
    return failure();
  OpBuilder builder(op);
  FailureOr<Value> source =
      operandAs(op, op->getOpOperand(0), *sourceLayout, builder);
  VectorType type = op.getResultVectorType();
  FailureOr<VectorType> target = resultRegisters(op, type, *resultLayout);
  if (failed(source) || failed(target))
    return failure();
  ArrayRef<int64_t> sourceShape = logicalType(op.getSource()).getShape();
  ArrayRef<int64_t> resultShape = type.getShape();
  // Row-major order is what a reshape keeps.
  FailureOr<Value> registers = gatherRegisters(
      op, builder, *source, *sourceLayout, sourceShape, *resultLayout, type,
      [&](ArrayRef<int64_t> index) {
        int64_t flat = 0;
        for (auto [position, size] : llvm::zip_equal(index, resultShape))
          flat = flat * size + position;
        Shape sourceIndex(sourceShape.size());
        for (int64_t dim = sourceShape.size() - 1; dim >= 0; --dim) {
          sourceIndex[dim] = flat % sourceShape[dim];
          flat /= sourceShape[dim];
        }
        return sourceIndex;
      });
  if (failed(registers))
    return failure();
  return define(op.getResult(), *registers, *resultLayout);
}

/// One butterfly exchange of `value` with the lane `offset` away.
static Value shuffleXor(OpBuilder &builder, Location loc, Value value,
                        int64_t offset) {
  Type type = value.getType();
  unsigned width = type.getIntOrFloatBitWidth();
  Value wide = value;
  // Shuffles move 32-bit words; narrower values travel widened.
  if (width < 32) {
    if (isa<FloatType>(type))
      wide = arith::ExtFOp::create(builder, loc, builder.getF32Type(), value);
    else
      wide = arith::ExtSIOp::create(builder, loc, builder.getI32Type(), value);
  }
  Value moved = gpu::ShuffleOp::create(builder, loc, wide, offset,
                                       kLanesPerWarp, gpu::ShuffleMode::XOR)
                    .getShuffleResult();
  if (width < 32) {
    if (isa<FloatType>(type))
      moved = arith::TruncFOp::create(builder, loc, type, moved);
    else
      moved = arith::TruncIOp::create(builder, loc, type, moved);
  }
  return moved;
}

LogicalResult
KernelLowering::lowerMultiReduction(vector::MultiDimReductionOp op) {
  VectorType sourceType = logicalType(op.getSource());
  ArrayRef<int64_t> sourceShape = sourceType.getShape();
  FailureOr<RegisterLayout> sourceLayout = annotatedLayout(op, "in_layouts", 0);
  if (failed(sourceLayout))
    return failure();
  auto resultType = dyn_cast<VectorType>(op.getDestType());
  if (!resultType)
    return op.emitOpError()
           << "reduces to a scalar, across all 128 threads; mosaic-gpu-lower "
              "does not lower that yet (it needs a shared-memory exchange "
              "between warps): keep at least one dim";
  FailureOr<RegisterLayout> resultLayout =
      annotatedLayout(op, "out_layouts", 0);
  if (failed(resultLayout))
    return failure();
  FailureOr<VectorType> target = resultRegisters(op, resultType, *resultLayout);
  if (failed(target))
    return failure();
  OpBuilder builder(op);
  Location loc = op.getLoc();
  FailureOr<Value> source =
      operandAs(op, op->getOpOperand(0), *sourceLayout, builder);
  // The accumulator combines with the result element by element.
  FailureOr<Value> acc =
      operandAs(op, op->getOpOperand(1), *resultLayout, builder);
  if (failed(source) || failed(acc))
    return failure();
  vector::CombiningKind kind = op.getKind();
  SmallVector<bool> reduced = op.getReductionMask();

  if (sourceLayout->isSplat()) {
    // Every element is the same value x: idempotent kinds give x, a sum
    // gives x times the number of reduced elements.
    int64_t count = 1;
    for (auto [dim, size] : llvm::enumerate(sourceShape))
      if (reduced[dim])
        count *= size;
    Value scalar =
        vector::ExtractOp::create(builder, loc, *source, ArrayRef<int64_t>{0});
    Type element = sourceType.getElementType();
    switch (kind) {
    case vector::CombiningKind::ADD: {
      Value times =
          isa<FloatType>(element)
              ? arith::ConstantOp::create(builder, loc,
                                          builder.getFloatAttr(element, count))
                    .getResult()
              : arith::ConstantIntOp::create(builder, loc, element, count)
                    .getResult();
      scalar =
          isa<FloatType>(element)
              ? arith::MulFOp::create(builder, loc, scalar, times).getResult()
              : arith::MulIOp::create(builder, loc, scalar, times).getResult();
      break;
    }
    case vector::CombiningKind::MUL:
    case vector::CombiningKind::XOR:
      return op.emitOpError()
             << "reduces a splat with " << vector::stringifyCombiningKind(kind)
             << "; lay the operand out as strided or tiled instead";
    default:
      break; // min, max, and, or: x itself
    }
    Value registers =
        vector::BroadcastOp::create(builder, loc, *target, scalar);
    registers = vector::makeArithReduction(builder, loc, kind, registers, *acc);
    return define(op.getResult(), registers, *resultLayout);
  }

  // 1. In-thread: fold every source register into the result position of
  // the element it reduces to.
  llvm::Expected<std::vector<Shape>> sourceElements =
      thread0Elements(*sourceLayout, sourceShape);
  llvm::Expected<std::vector<Shape>> resultElements =
      thread0Elements(*resultLayout, resultType.getShape());
  if (!sourceElements || !resultElements) {
    std::string message = !sourceElements
                              ? llvm::toString(sourceElements.takeError())
                              : llvm::toString(resultElements.takeError());
    return op.emitOpError() << message;
  }
  std::map<Shape, int64_t> resultPositions = positionsOf(*resultElements);
  SmallVector<Value> partial(target->getNumElements());
  for (auto [position, index] : llvm::enumerate(*sourceElements)) {
    Shape kept;
    for (auto [dim, value] : llvm::enumerate(index))
      if (!reduced[dim])
        kept.push_back(value);
    auto found = resultPositions.find(kept);
    if (found == resultPositions.end())
      return op.emitOpError()
             << "cannot reduce " << sourceLayout->str() << " into "
             << resultLayout->str() << " within each thread";
    Value element = vector::ExtractOp::create(
        builder, loc, *source, ArrayRef<int64_t>{int64_t(position)});
    Value &slot = partial[found->second];
    slot = slot ? vector::makeArithReduction(builder, loc, kind, element, slot)
                : element;
  }
  for (auto [position, slot] : llvm::enumerate(partial))
    if (!slot)
      return op.emitOpError() << "leaves result register " << position << " of "
                              << resultLayout->str() << " empty";

  // 2. Across lanes: the lanes that split a reduced dim exchange partials.
  if (sourceLayout->isTiled()) {
    const layout::TiledLayout &tiled = sourceLayout->tiledLayout();
    int64_t baseOffset = sourceShape.size() - tiled.baseTileShape().size();
    llvm::Expected<Shape> tiledShape = tiled.tiling().tileShape(sourceShape);
    if (!tiledShape)
      return op.emitOpError() << llvm::toString(tiledShape.takeError());
    auto splitsReducedDim = [&](const layout::PartitionDim &dim) {
      return !dim.isReplicated() &&
             reduced[baseOffset + tiled.baseDimOfTiledDim(dim.dim)];
    };
    for (const layout::PartitionDim &dim : tiled.warpDims())
      if (splitsReducedDim(dim) &&
          (*tiledShape)[tiledShape->size() + dim.dim] > 1)
        return op.emitOpError()
               << "reduces over a dim that " << sourceLayout->str()
               << " splits across warps; mosaic-gpu-lower does not lower "
                  "that yet (it needs a shared-memory exchange between "
                  "warps)";
    int64_t stride = 1;
    for (const layout::PartitionDim &dim : llvm::reverse(tiled.laneDims())) {
      int64_t size = dim.isReplicated()
                         ? dim.times
                         : (*tiledShape)[tiledShape->size() + dim.dim];
      if (splitsReducedDim(dim))
        for (int64_t offset = stride; offset < stride * size; offset *= 2)
          for (Value &slot : partial)
            slot = vector::makeArithReduction(
                builder, loc, kind, shuffleXor(builder, loc, slot, offset),
                slot);
      stride *= size;
    }
  }
  // Strided layouts only lose leading dims, which each thread holds whole.

  Value registers =
      vector::FromElementsOp::create(builder, loc, *target, partial);
  registers = vector::makeArithReduction(builder, loc, kind, registers, *acc);
  return define(op.getResult(), registers, *resultLayout);
}
