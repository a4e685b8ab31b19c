//===- LowerReductions.cpp - Reductions, broadcasts and reshapes ----------===//
//
// These ops move elements between register positions. Each thread holds its
// elements at the same positions as thread 0, shifted by a per-thread offset
// (thread0Elements in LoweringContext.h), so a position map computed for thread
// 0 applies to all threads whenever the two layouts shift alike; broadcasts and
// reshapes check that for every thread before trusting the map. A reduction
// first combines the registers each thread holds, then exchanges partial
// results between the lanes that split a reduced dim with butterfly shuffles.
//
//===----------------------------------------------------------------------===//

#include "LoweringContext.h"

#include <map>

using namespace mlir;
using namespace mosaic;
using layout::kLanesPerWarp;
using layout::kThreadsPerWarpgroup;
using layout::RegisterLayout;
using layout::Shape;

namespace {

/// Which element each thread holds at each register position, computed from
/// thread 0's elements and a per-thread shift instead of asking the layout
/// for every (thread, position): tiled layouts shift every index by the
/// thread's offset, strided ones shift the flat position by t * v.
class ElementTable {
public:
  static llvm::Expected<ElementTable> create(const RegisterLayout &layout,
                                             ArrayRef<int64_t> shape) {
    ElementTable table;
    table.layout = &layout;
    table.shape = Shape(shape);
    llvm::Expected<std::vector<Shape>> elements =
        mosaic::thread0Elements(layout, shape);
    if (!elements)
      return elements.takeError();
    table.thread0 = std::move(*elements);
    if (!layout.isTiled())
      return table;
    llvm::Expected<Shape> origin =
        layout.tiledLayout().elementIndex(shape, 0, 0, 0);
    if (!origin)
      return origin.takeError();
    for (int64_t thread = 0; thread < kThreadsPerWarpgroup; ++thread) {
      llvm::Expected<Shape> index =
          layout.tiledLayout().elementIndex(shape, thread, 0, 0);
      if (!index)
        return index.takeError();
      for (auto [value, base] : llvm::zip_equal(*index, *origin))
        value -= base;
      table.offsets.push_back(std::move(*index));
    }
    return table;
  }

  Shape at(int64_t thread, int64_t position) const {
    if (layout->isSplat())
      return thread0[0];
    if (layout->isTiled()) {
      Shape index = thread0[position];
      for (auto [value, offset] : llvm::zip_equal(index, offsets[thread]))
        value += offset;
      return index;
    }
    int64_t vector = layout->vectorSize();
    int64_t flat = (position / vector) * kThreadsPerWarpgroup * vector +
                   thread * vector + position % vector;
    Shape index(shape.size());
    for (int64_t dim = shape.size() - 1; dim >= 0; --dim) {
      index[dim] = flat % shape[dim];
      flat /= shape[dim];
    }
    return index;
  }

  ArrayRef<Shape> thread0Elements() const { return thread0; }

private:
  const RegisterLayout *layout = nullptr;
  Shape shape;
  std::vector<Shape> thread0;
  std::vector<Shape> offsets;
};

} // namespace

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
  llvm::Expected<ElementTable> resultTable =
      ElementTable::create(resultLayout, resultType.getShape());
  llvm::Expected<ElementTable> sourceTable =
      ElementTable::create(sourceLayout, sourceShape);
  if (!resultTable || !sourceTable) {
    std::string message = !resultTable
                              ? llvm::toString(resultTable.takeError())
                              : llvm::toString(sourceTable.takeError());
    return op->emitOpError() << message;
  }
  std::map<Shape, int64_t> sourcePositions =
      positionsOf(sourceTable->thread0Elements());
  SmallVector<int64_t> mask;
  for (const Shape &index : resultTable->thread0Elements()) {
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
      for (auto [position, sourcePosition] : llvm::enumerate(mask))
        if (sourceIndex(resultTable->at(thread, position)) !=
            sourceTable->at(thread, sourcePosition))
          return op->emitOpError()
                 << "needs elements that another thread holds: thread "
                 << thread << " has the operand in " << sourceLayout.str()
                 << " but its result in " << resultLayout.str()
                 << " (a shared-memory round trip would be required)";
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

/// Ops that only rearrange operand 0's elements: each result element is
/// the operand element at `sourceIndex(result index)`.
static LogicalResult
lowerPermutation(LoweringContext &lowering, Operation *op,
                 VectorType resultType,
                 function_ref<Shape(ArrayRef<int64_t>)> sourceIndex) {
  FailureOr<RegisterLayout> sourceLayout = inLayoutFor(op->getOpOperand(0));
  FailureOr<RegisterLayout> resultLayout = outLayoutFor(op->getResult(0));
  if (failed(sourceLayout) || failed(resultLayout))
    return failure();
  OpBuilder builder(op);
  FailureOr<Value> source =
      lowering.operandAs(op, op->getOpOperand(0), *sourceLayout, builder);
  FailureOr<VectorType> target = resultRegisters(op, resultType, *resultLayout);
  if (failed(source) || failed(target))
    return failure();
  FailureOr<Value> registers =
      gatherRegisters(op, builder, *source, *sourceLayout,
                      lowering.logicalType(op->getOperand(0)).getShape(),
                      *resultLayout, resultType, sourceIndex);
  if (failed(registers))
    return failure();
  return lowering.define(op->getResult(0), *registers, *resultLayout);
}

static LogicalResult lowerBroadcastInDim(LoweringContext &lowering,
                                         mosaic_gpu::BroadcastInDimOp op) {
  ArrayRef<int64_t> dims = op.getBroadcastDimensions();
  return lowerPermutation(lowering, op, op.getResult().getType(),
                          [&](ArrayRef<int64_t> index) {
                            Shape sourceIndex;
                            for (int64_t dim : dims)
                              sourceIndex.push_back(index[dim]);
                            return sourceIndex;
                          });
}

static LogicalResult lowerBroadcast(LoweringContext &lowering,
                                    vector::BroadcastOp op) {
  VectorType type = op.getResultVectorType();
  if (isa<VectorType>(op.getSourceType()) &&
      cast<VectorType>(op.getSourceType()).getRank() > 0) {
    // Leading dims are added; unit source dims stretch.
    VectorType sourceType = lowering.logicalType(op.getSource());
    ArrayRef<int64_t> sourceShape = sourceType.getShape();
    int64_t added = type.getRank() - sourceType.getRank();
    return lowerPermutation(lowering, op, type, [&](ArrayRef<int64_t> index) {
      Shape sourceIndex;
      for (int64_t dim = 0; dim < sourceType.getRank(); ++dim)
        sourceIndex.push_back(sourceShape[dim] == 1 ? 0 : index[added + dim]);
      return sourceIndex;
    });
  }
  // A scalar: every thread holds it in every register.
  FailureOr<RegisterLayout> resultLayout = outLayoutFor(op->getResult(0));
  if (failed(resultLayout))
    return failure();
  FailureOr<VectorType> target = resultRegisters(op, type, *resultLayout);
  if (failed(target))
    return failure();
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Value scalar = op.getSource();
  if (isa<VectorType>(scalar.getType()))
    scalar =
        vector::ExtractOp::create(builder, loc, scalar, ArrayRef<int64_t>{});
  Value registers = vector::BroadcastOp::create(builder, loc, *target, scalar);
  return lowering.define(op.getResult(), registers, *resultLayout);
}

static LogicalResult lowerShapeCast(LoweringContext &lowering,
                                    vector::ShapeCastOp op) {
  ArrayRef<int64_t> sourceShape =
      lowering.logicalType(op.getSource()).getShape();
  VectorType type = op.getResultVectorType();
  ArrayRef<int64_t> resultShape = type.getShape();
  // Row-major order is what a reshape keeps.
  return lowerPermutation(lowering, op, type, [&](ArrayRef<int64_t> index) {
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
}

static LogicalResult
lowerExtractStridedSlice(LoweringContext &lowering,
                         vector::ExtractStridedSliceOp op) {
  if (llvm::any_of(op.getStrides(), [](Attribute stride) {
        return cast<IntegerAttr>(stride).getInt() != 1;
      }))
    return op.emitOpError() << "slices with strides other than 1, which "
                               "mosaic-gpu-lower does not lower";
  SmallVector<int64_t> offsets;
  for (Attribute offset : op.getOffsets())
    offsets.push_back(cast<IntegerAttr>(offset).getInt());
  // Each result element is the source element `offsets` further on; the
  // slice stays in registers when every thread holds its own part.
  return lowerPermutation(
      lowering, op, op.getType(), [&](ArrayRef<int64_t> index) {
        Shape sourceIndex(index);
        for (auto [value, offset] : llvm::zip(sourceIndex, offsets))
          value += offset;
        return sourceIndex;
      });
}

static LogicalResult lowerExtract(LoweringContext &lowering,
                                  vector::ExtractOp op) {
  if (!op.getDynamicPosition().empty())
    return op.emitOpError() << "extracts at a dynamic position, which "
                               "mosaic-gpu-lower does not lower (the "
                               "element's thread is unknown)";
  ArrayRef<int64_t> position = op.getStaticPosition();
  if (auto type = dyn_cast<VectorType>(op.getType()))
    return lowerPermutation(lowering, op, type, [&](ArrayRef<int64_t> index) {
      Shape sourceIndex(position);
      sourceIndex.append(index.begin(), index.end());
      return sourceIndex;
    });
  // One element: only a splat has it in every thread.
  FailureOr<RegisterLayout> sourceLayout = inLayoutFor(op->getOpOperand(0));
  if (failed(sourceLayout))
    return failure();
  if (!sourceLayout->isSplat())
    return op.emitOpError()
           << "extracts one element of a " << sourceLayout->str()
           << " vector, which only one thread holds; reduce or store it "
              "instead";
  OpBuilder builder(op);
  FailureOr<Value> source =
      lowering.operandAs(op, op->getOpOperand(0), *sourceLayout, builder);
  if (failed(source))
    return failure();
  op.getResult().replaceAllUsesWith(vector::ExtractOp::create(
      builder, op.getLoc(), *source, ArrayRef<int64_t>{0}));
  return success();
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

FailureOr<int64_t> mosaic::warpgroupsOf(Operation *op) {
  auto function = op->getParentOfType<gpu::GPUFuncOp>();
  DenseI32ArrayAttr block =
      function ? function.getKnownBlockSizeAttr() : DenseI32ArrayAttr();
  if (!block)
    return op->emitOpError()
           << "needs shared-memory scratch (to exchange values between "
              "warps), which is sized from the kernel's `known_block_size`; "
              "lower it inside a gpu.func kernel that has one";
  int64_t threads = 1;
  for (int32_t size : block.asArrayRef())
    threads *= size;
  return std::max<int64_t>(threads / kThreadsPerWarpgroup, 1);
}

/// Combines `partial` (this thread's result registers) with those of the
/// threads in the other warps selected by `warpDigits` ((stride, size)
/// pairs in the warp index), through shared-memory scratch.
static LogicalResult
combineAcrossWarps(LoweringContext &lowering, Operation *op, OpBuilder &builder,
                   SmallVector<Value> &partial, vector::CombiningKind kind,
                   ArrayRef<std::pair<int64_t, int64_t>> warpDigits) {
  Type element = partial.front().getType();
  unsigned bits = element.getIntOrFloatBitWidth();
  if (bits % 8 != 0)
    return op->emitOpError() << "exchanges " << element
                             << " partial results between warps; only whole "
                                "bytes go through shared memory";
  FailureOr<int64_t> groups = warpgroupsOf(op);
  if (failed(groups))
    return failure();
  int64_t bytes = bits / 8;
  int64_t count = partial.size();
  int64_t perGroup = kThreadsPerWarpgroup * count * bytes;
  int64_t scratchOffset = lowering.reserveScratch(op, perGroup * *groups);

  Location loc = op->getLoc();
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, value);
  };
  // This warpgroup's scratch rows, one per thread, after the kernel's slices.
  Value shared = memref::ExtractAlignedPointerAsIndexOp::create(
      builder, loc, dynamicSharedMemory(lowering, op));
  Value group = lowering.warpgroupIndex(op);
  Value base = arith::AddIOp::create(
      builder, loc,
      arith::AddIOp::create(builder, loc, shared, constant(scratchOffset)),
      arith::MulIOp::create(builder, loc, group, constant(perGroup)));
  auto pointer = [&](Value thread, int64_t position) {
    Value address = arith::AddIOp::create(
        builder, loc, base,
        arith::AddIOp::create(builder, loc,
                              arith::MulIOp::create(builder, loc, thread,
                                                    constant(count * bytes)),
                              constant(position * bytes)));
    return sharedPointer(builder, loc, address);
  };
  Value thread = lowering.threadInWarpgroup(op);
  for (auto [position, value] : llvm::enumerate(partial))
    LLVM::StoreOp::create(builder, loc, value, pointer(thread, position),
                          bytes);
  warpgroupBarrier(lowering, op, builder);

  // The threads holding partials of the same results differ from this one
  // only in the warp digits that split reduced dims.
  Value warp = arith::DivUIOp::create(builder, loc, thread,
                                      constant(layout::kLanesPerWarp));
  Value lane = arith::RemUIOp::create(builder, loc, thread,
                                      constant(layout::kLanesPerWarp));
  Value ownDigits = constant(0);
  for (auto [stride, size] : warpDigits)
    ownDigits = arith::AddIOp::create(
        builder, loc, ownDigits,
        arith::MulIOp::create(
            builder, loc,
            arith::RemUIOp::create(
                builder, loc,
                arith::DivUIOp::create(builder, loc, warp, constant(stride)),
                constant(size)),
            constant(stride)));
  Value otherDigits = arith::SubIOp::create(builder, loc, warp, ownDigits);
  int64_t combinations = 1;
  for (auto [stride, size] : warpDigits)
    combinations *= size;
  SmallVector<Value> combined(count);
  for (int64_t combination = 0; combination < combinations; ++combination) {
    int64_t digits = 0, rest = combination;
    for (auto [stride, size] : warpDigits) {
      digits += (rest % size) * stride;
      rest /= size;
    }
    Value peer = arith::AddIOp::create(
        builder, loc,
        arith::MulIOp::create(
            builder, loc,
            arith::AddIOp::create(builder, loc, otherDigits, constant(digits)),
            constant(layout::kLanesPerWarp)),
        lane);
    for (int64_t position = 0; position < count; ++position) {
      Value loaded = LLVM::LoadOp::create(builder, loc, element,
                                          pointer(peer, position), bytes);
      Value &slot = combined[position];
      slot = slot ? vector::makeArithReduction(builder, loc, kind, loaded, slot)
                  : loaded;
    }
  }
  // The scratch may be reused once every thread has read its peers.
  warpgroupBarrier(lowering, op, builder);
  partial = std::move(combined);
  return success();
}

static LogicalResult lowerMultiReduction(LoweringContext &lowering,
                                         vector::MultiDimReductionOp op) {
  VectorType sourceType = lowering.logicalType(op.getSource());
  ArrayRef<int64_t> sourceShape = sourceType.getShape();
  FailureOr<RegisterLayout> sourceLayout = inLayoutFor(op->getOpOperand(0));
  if (failed(sourceLayout))
    return failure();
  // A reduction to a scalar has one result position and no result layout.
  auto resultType = dyn_cast<VectorType>(op.getDestType());
  std::optional<RegisterLayout> resultLayout;
  VectorType target = VectorType::get({1}, sourceType.getElementType());
  if (resultType) {
    FailureOr<RegisterLayout> annotated = outLayoutFor(op->getResult(0));
    if (failed(annotated))
      return failure();
    resultLayout = *annotated;
    FailureOr<VectorType> registers =
        resultRegisters(op, resultType, *resultLayout);
    if (failed(registers))
      return failure();
    target = *registers;
  }
  OpBuilder builder(op);
  Location loc = op.getLoc();
  FailureOr<Value> source =
      lowering.operandAs(op, op->getOpOperand(0), *sourceLayout, builder);
  if (failed(source))
    return failure();
  // The accumulator combines with the result element by element.
  Value acc = op.getAcc();
  if (resultType) {
    FailureOr<Value> registers =
        lowering.operandAs(op, op->getOpOperand(1), *resultLayout, builder);
    if (failed(registers))
      return failure();
    acc = *registers;
  }
  vector::CombiningKind kind = op.getKind();
  SmallVector<bool> reduced = op.getReductionMask();
  auto finish = [&](Value registers) -> LogicalResult {
    if (!resultType) {
      Value scalar = vector::ExtractOp::create(builder, loc, registers,
                                               ArrayRef<int64_t>{0});
      op.getResult().replaceAllUsesWith(
          vector::makeArithReduction(builder, loc, kind, scalar, acc));
      return success();
    }
    registers = vector::makeArithReduction(builder, loc, kind, registers, acc);
    return lowering.define(op.getResult(), registers, *resultLayout);
  };

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
    return finish(vector::BroadcastOp::create(builder, loc, target, scalar));
  }

  // 1. In-thread: fold every source register into the result position of
  // the element it reduces to.
  llvm::Expected<std::vector<Shape>> sourceElements =
      thread0Elements(*sourceLayout, sourceShape);
  if (!sourceElements)
    return op.emitOpError() << llvm::toString(sourceElements.takeError());
  std::map<Shape, int64_t> resultPositions{{Shape{}, 0}};
  if (resultType) {
    llvm::Expected<std::vector<Shape>> resultElements =
        thread0Elements(*resultLayout, resultType.getShape());
    if (!resultElements)
      return op.emitOpError() << llvm::toString(resultElements.takeError());
    resultPositions = positionsOf(*resultElements);
  }
  SmallVector<Value> partial(target.getNumElements());
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
      return op.emitOpError()
             << "leaves result register " << position << " of its result empty";

  // 2. Across threads: the lanes that split a reduced dim exchange partials
  // with butterfly shuffles (lane digits as (stride, size) in the lane id),
  // the warps that split one through shared memory.
  SmallVector<std::pair<int64_t, int64_t>> laneDigits, warpDigits;
  if (sourceLayout->isTiled()) {
    const layout::TiledLayout &tiled = sourceLayout->tiledLayout();
    int64_t baseOffset = sourceShape.size() - tiled.baseTileShape().size();
    llvm::Expected<Shape> tiledShape = tiled.tiling().tileShape(sourceShape);
    if (!tiledShape)
      return op.emitOpError() << llvm::toString(tiledShape.takeError());
    auto digits = [&](ArrayRef<layout::PartitionDim> dims,
                      SmallVector<std::pair<int64_t, int64_t>> &out) {
      int64_t stride = 1;
      for (const layout::PartitionDim &dim : llvm::reverse(dims)) {
        int64_t size = dim.isReplicated()
                           ? dim.times
                           : (*tiledShape)[tiledShape->size() + dim.dim];
        if (!dim.isReplicated() && size > 1 &&
            reduced[baseOffset + tiled.baseDimOfTiledDim(dim.dim)])
          out.push_back({stride, size});
        stride *= size;
      }
    };
    digits(tiled.laneDims(), laneDigits);
    digits(tiled.warpDims(), warpDigits);
  } else if (!resultType) {
    // A strided vector reduced to a scalar: every thread holds a share.
    laneDigits.push_back({1, layout::kLanesPerWarp});
    warpDigits.push_back({1, layout::kWarpsPerWarpgroup});
  }
  // (A strided vector reduced to a vector only loses leading dims, which
  // each thread holds whole.)
  for (auto [stride, size] : laneDigits)
    for (int64_t offset = stride; offset < stride * size; offset *= 2)
      for (Value &slot : partial)
        slot = vector::makeArithReduction(
            builder, loc, kind, shuffleXor(builder, loc, slot, offset), slot);
  if (!warpDigits.empty() &&
      failed(
          combineAcrossWarps(lowering, op, builder, partial, kind, warpDigits)))
    return failure();

  return finish(vector::FromElementsOp::create(builder, loc, target, partial));
}

void mosaic::populateReductionLowerings(LoweringRegistry &registry) {
  registry.add<vector::MultiDimReductionOp>(lowerMultiReduction);
  registry.add<mosaic_gpu::BroadcastInDimOp>(lowerBroadcastInDim);
  registry.add<vector::BroadcastOp>(lowerBroadcast);
  registry.add<vector::ShapeCastOp>(lowerShapeCast);
  registry.add<vector::ExtractStridedSliceOp>(lowerExtractStridedSlice);
  registry.add<vector::ExtractOp>(lowerExtract);
}
