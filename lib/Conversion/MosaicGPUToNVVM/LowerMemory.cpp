//===- LowerMemory.cpp - Shared memory slices, vector loads and stores ----===//
//
// `slice_smem` becomes a view of the kernel's dynamic shared memory, and
// `with_transforms` / `assume_multiple` (hints) the value they annotate.
// `vector_load` / `vector_store` move each thread's registers: strided
// layouts as `v`-element chunks, tiled layouts as one access per register
// vector. Tiled (and swizzled) shared-memory buffers are addressed by hand:
// the logical index is split into tile coordinates, linearized with the
// buffer's strides, and the swizzle XORs the 16-byte chunk bits with the row
// bits, as TMA and wgmma do. 16-bit stores into swizzled buffers whose rows
// the layout hands out as stmatrix fragments (WGMMA into the tiles a TMA
// store reads) use stmatrix.x4: four register pairs per instruction, each
// lane addressing one 16-byte row.
//
//===----------------------------------------------------------------------===//

#include "LoweringContext.h"
#include "mosaic/Dialect/MosaicGPU/AttributeBridge.h"

#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"

using namespace mlir;
using namespace mosaic;
using layout::kLanesPerWarp;
using layout::kThreadsPerWarpgroup;
using layout::RegisterLayout;
using layout::Shape;
using layout::SmemTransforms;

Value mosaic::sharedByteAddress(OpBuilder &builder, Location loc, Value ref) {
  auto type = cast<MemRefType>(ref.getType());
  int64_t elementBytes = isa<mosaic_gpu::BarrierType>(type.getElementType())
                             ? 8
                             : type.getElementTypeBitWidth() / 8;
  auto metadata = memref::ExtractStridedMetadataOp::create(builder, loc, ref);
  Value aligned =
      memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, ref);
  return arith::AddIOp::create(
      builder, loc, aligned,
      arith::MulIOp::create(
          builder, loc, metadata.getOffset(),
          arith::ConstantIndexOp::create(builder, loc, elementBytes)));
}

Value mosaic::sharedPointer(OpBuilder &builder, Location loc, Value address) {
  Value integer =
      arith::IndexCastOp::create(builder, loc, builder.getI64Type(), address);
  return LLVM::IntToPtrOp::create(
      builder, loc,
      nvvmPointerType(builder.getContext(), NVVM::NVVMMemorySpace::Shared),
      integer);
}

Value mosaic::sharedAddress(OpBuilder &builder, Location loc, Value ref) {
  return sharedPointer(builder, loc, sharedByteAddress(builder, loc, ref));
}

namespace {
/// The per-function view of dynamic shared memory that slices and scratch
/// are carved from.
struct MemoryState : GroupState {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MemoryState)
  DenseMap<Operation *, Value> sharedMemoryBases;
};
} // namespace

Value mosaic::dynamicSharedMemory(LoweringContext &lowering, Operation *op) {
  return atFunctionEntry(
      op, lowering.state<MemoryState>().sharedMemoryBases,
      [](OpBuilder &builder, Location loc) {
        // A byte view of the kernel's dynamic shared memory.
        MLIRContext *context = builder.getContext();
        auto type = MemRefType::get(
            {ShapedType::kDynamic}, IntegerType::get(context, 8),
            MemRefLayoutAttrInterface(),
            gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup));
        return gpu::DynamicSharedMemoryOp::create(builder, loc, type)
            .getResult();
      });
}

static LogicalResult lowerSliceSmem(LoweringContext &lowering,
                                    mosaic_gpu::SliceSMEMOp op) {
  MemRefType type = op.getResult().getType();
  if (!type.getLayout().isIdentity())
    return op.emitOpError() << "mosaic-gpu-lower only carves buffers with the "
                               "identity layout out of shared memory, not "
                            << type;
  int64_t offset = op.getOffsetAttr().getInt();
  if (mosaic_gpu::isSharedBuffer(op.getResult())) {
    FailureOr<SmemTransforms> transforms =
        mosaic_gpu::outTransformsFor(op->getResult(0));
    if (failed(transforms))
      return failure();
    // A swizzle repeats every 8 rows of its width; TMA and wgmma compute it
    // from the address, so the buffer must start on such a boundary.
    if (transforms->swizzle != layout::kNoSwizzle &&
        offset % (transforms->swizzle * 8) != 0)
      return op.emitOpError()
             << "carves a buffer with a " << transforms->swizzle
             << "-byte swizzle at offset " << offset
             << "; it must start at a multiple of " << transforms->swizzle * 8
             << " bytes";
  }
  Value base = dynamicSharedMemory(lowering, op);
  OpBuilder builder(op);
  Value start = arith::ConstantIndexOp::create(builder, op.getLoc(), offset);
  Value view = memref::ViewOp::create(builder, op.getLoc(), type, base, start,
                                      ValueRange{});
  op.getResult().replaceAllUsesWith(view);
  return success();
}

/// Indices of the element at flat position `flat` of `ref`, row-major.
static SmallVector<Value> unflatten(OpBuilder &builder, Location loc,
                                    Value flat, MemRefType ref) {
  SmallVector<Value> indices(ref.getRank());
  Value rest = flat;
  for (int64_t dim = ref.getRank() - 1; dim > 0; --dim) {
    Value size =
        arith::ConstantIndexOp::create(builder, loc, ref.getDimSize(dim));
    indices[dim] = arith::RemUIOp::create(builder, loc, rest, size);
    rest = arith::DivUIOp::create(builder, loc, rest, size);
  }
  indices[0] = rest;
  return indices;
}

/// The flat element index where chunk `chunk` of `thread` starts in a
/// strided layout: (chunk * 128 + thread) * vectorSize.
static Value chunkStart(OpBuilder &builder, Location loc, int64_t chunk,
                        Value thread, int64_t vectorSize) {
  Value first = arith::ConstantIndexOp::create(builder, loc,
                                               chunk * kThreadsPerWarpgroup);
  Value size = arith::ConstantIndexOp::create(builder, loc, vectorSize);
  return arith::MulIOp::create(
      builder, loc, arith::AddIOp::create(builder, loc, first, thread), size);
}

LogicalResult mosaic::lowerStridedTransfer(LoweringContext &lowering,
                                           Operation *op,
                                           const RegisterLayout &layout,
                                           Value ref, Value stored,
                                           Value *loaded, OpOperand *buffer) {
  bool scratch = !buffer;
  auto refType = cast<MemRefType>(ref.getType());
  // Chunks must lie within a row of a statically shaped, untiled buffer.
  if (!refType.hasStaticShape() ||
      refType.getShape().back() % layout.vectorSize())
    return op->emitOpError()
           << "needs a static shape whose minor dim is a multiple of the "
              "vector size "
           << layout.vectorSize() << ", but the buffer is " << refType;
  if (!scratch && mosaic_gpu::transformsApplied(op))
    return op->emitOpError()
           << "moves a strided vector to or from a tiled shared-memory "
              "buffer; only tiled layouts follow a tiling (use a layout_cast "
              "to WGMMA, or leave the buffer untiled)";
  // A swizzle permutes addresses without retyping the buffer: the plain
  // addresses below would read or write other elements than TMA and wgmma.
  if (!scratch && mosaic_gpu::isSharedBuffer(ref)) {
    FailureOr<SmemTransforms> transforms = inTransformsFor(*buffer);
    if (failed(transforms))
      return failure();
    if (!transforms->isNone())
      return op->emitOpError()
             << "moves a strided vector to or from a shared-memory buffer "
                "with transforms "
             << transforms->str()
             << "; only tiled layouts follow a tiling or swizzle (use a "
                "layout_cast to WGMMA, or drop the buffer's transforms)";
  }
  int64_t vectorSize = layout.vectorSize();
  int64_t total = refType.getNumElements() / kThreadsPerWarpgroup;
  auto chunkType = VectorType::get({vectorSize}, refType.getElementType());
  Value thread = lowering.threadInWarpgroup(op);
  OpBuilder builder(op);
  Location loc = op->getLoc();
  Value registers;
  if (loaded)
    registers =
        arith::ConstantOp::create(builder, loc,
                                  builder.getZeroAttr(VectorType::get(
                                      {total}, refType.getElementType())));
  for (int64_t chunk = 0; chunk * vectorSize < total; ++chunk) {
    Value flat = chunkStart(builder, loc, chunk, thread, vectorSize);
    SmallVector<Value> indices = unflatten(builder, loc, flat, refType);
    if (loaded) {
      Value piece =
          vector::LoadOp::create(builder, loc, chunkType, ref, indices);
      registers = vector::InsertStridedSliceOp::create(
          builder, loc, piece, registers, ArrayRef<int64_t>{chunk * vectorSize},
          ArrayRef<int64_t>{1});
    } else {
      Value piece = vector::ExtractStridedSliceOp::create(
          builder, loc, stored, ArrayRef<int64_t>{chunk * vectorSize},
          ArrayRef<int64_t>{vectorSize}, ArrayRef<int64_t>{1});
      vector::StoreOp::create(builder, loc, piece, ref, indices);
    }
  }
  if (loaded)
    *loaded = registers;
  return success();
}

FailureOr<SmallVector<Value>> mosaic::threadOffsets(
    LoweringContext &lowering, Operation *op, const layout::TiledLayout &layout,
    ArrayRef<int64_t> shape, OpBuilder &builder, Value thread) {
  // Each warp and lane digit moves the thread's elements by a fixed amount
  // per dim; probe the layout for those amounts and sum the digits' shares.
  llvm::Expected<Shape> tiled = layout.tiling().tileShape(shape);
  if (!tiled)
    return op->emitOpError() << llvm::toString(tiled.takeError());
  llvm::Expected<Shape> origin = layout.elementIndex(shape, 0, 0, 0);
  if (!origin)
    return op->emitOpError() << llvm::toString(origin.takeError());
  Location loc = op->getLoc();
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, value);
  };
  SmallVector<Value> offsets(shape.size(), constant(0));
  if (!thread)
    thread = lowering.threadInWarpgroup(op);
  Value warp =
      arith::DivUIOp::create(builder, loc, thread, constant(kLanesPerWarp));
  Value lane =
      arith::RemUIOp::create(builder, loc, thread, constant(kLanesPerWarp));
  auto addDigits = [&](ArrayRef<layout::PartitionDim> dims, Value id,
                       int64_t threadsPerId) -> LogicalResult {
    int64_t stride = 1;
    for (const layout::PartitionDim &dim : llvm::reverse(dims)) {
      int64_t size =
          dim.isReplicated() ? dim.times : (*tiled)[tiled->size() + dim.dim];
      if (!dim.isReplicated() && size > 1) {
        llvm::Expected<Shape> moved =
            layout.elementIndex(shape, stride * threadsPerId, 0, 0);
        if (!moved)
          return op->emitOpError() << llvm::toString(moved.takeError());
        Value digit = arith::RemUIOp::create(
            builder, loc,
            arith::DivUIOp::create(builder, loc, id, constant(stride)),
            constant(size));
        for (size_t d = 0; d < shape.size(); ++d) {
          int64_t step = (*moved)[d] - (*origin)[d];
          if (step == 0)
            continue;
          offsets[d] = arith::AddIOp::create(
              builder, loc, offsets[d],
              arith::MulIOp::create(builder, loc, digit, constant(step)));
        }
      }
      stride *= size;
    }
    return success();
  };
  if (failed(addDigits(layout.warpDims(), warp, kLanesPerWarp)) ||
      failed(addDigits(layout.laneDims(), lane, 1)))
    return failure();
  return offsets;
}

/// Whether this thread holds the first copy of its elements, for a layout
/// that replicates them over warps or lanes; none for one that does not.
static FailureOr<std::optional<Value>>
firstReplica(LoweringContext &lowering, Operation *op,
             const layout::TiledLayout &layout, ArrayRef<int64_t> shape,
             OpBuilder &builder) {
  auto hasReplicas = [](ArrayRef<layout::PartitionDim> dims) {
    return llvm::any_of(dims, [](const layout::PartitionDim &dim) {
      return dim.isReplicated() && dim.times > 1;
    });
  };
  if (!hasReplicas(layout.warpDims()) && !hasReplicas(layout.laneDims()))
    return std::optional<Value>();
  llvm::Expected<Shape> tiled = layout.tiling().tileShape(shape);
  if (!tiled)
    return op->emitOpError() << llvm::toString(tiled.takeError());
  Location loc = op->getLoc();
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, value);
  };
  Value thread = lowering.threadInWarpgroup(op);
  Value warp =
      arith::DivUIOp::create(builder, loc, thread, constant(kLanesPerWarp));
  Value lane =
      arith::RemUIOp::create(builder, loc, thread, constant(kLanesPerWarp));
  Value first = arith::ConstantIntOp::create(builder, loc, 1, 1);
  // The id's digits as threadOffsets reads them: the last dim varies
  // fastest; a replicated digit must be 0.
  auto require = [&](ArrayRef<layout::PartitionDim> dims, Value id) {
    int64_t stride = 1;
    for (const layout::PartitionDim &dim : llvm::reverse(dims)) {
      int64_t size =
          dim.isReplicated() ? dim.times : (*tiled)[tiled->size() + dim.dim];
      if (dim.isReplicated() && size > 1) {
        Value digit = arith::RemUIOp::create(
            builder, loc,
            arith::DivUIOp::create(builder, loc, id, constant(stride)),
            constant(size));
        first = arith::AndIOp::create(
            builder, loc, first,
            arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, digit,
                                  constant(0)));
      }
      stride *= size;
    }
  };
  require(layout.warpDims(), warp);
  require(layout.laneDims(), lane);
  return std::optional<Value>(first);
}

/// Each thread's index offset from thread 0's elements (the same for all of
/// its registers), for all 128 threads; none if the layout cannot say.
static std::optional<std::vector<Shape>>
threadIndexSamples(const layout::TiledLayout &layout, ArrayRef<int64_t> shape) {
  llvm::Expected<Shape> origin = layout.elementIndex(shape, 0, 0, 0);
  if (!origin) {
    llvm::consumeError(origin.takeError());
    return std::nullopt;
  }
  std::vector<Shape> samples;
  for (int64_t thread = 0; thread < kThreadsPerWarpgroup; ++thread) {
    llvm::Expected<Shape> index = layout.elementIndex(shape, thread, 0, 0);
    if (!index) {
      llvm::consumeError(index.takeError());
      return std::nullopt;
    }
    for (auto [value, base] : llvm::zip_equal(*index, *origin))
      value -= base;
    samples.push_back(std::move(*index));
  }
  return samples;
}

namespace {

/// Addresses elements of a tiled, possibly swizzled shared-memory buffer.
struct TiledSmemAddressing {
  Value base; // byte address of the buffer's first element, once emitted
  SmallVector<int64_t> strides; // of the tiled memref, in elements
  Shape logicalShape;
  Shape tile; // effective tile of the minor dims
  int64_t elementBytes;
  int64_t swizzle;

  static FailureOr<TiledSmemAddressing>
  create(Operation *op, Value ref, ArrayRef<int64_t> shape,
         const SmemTransforms &transforms) {
    auto type = cast<MemRefType>(ref.getType());
    TiledSmemAddressing result;
    result.logicalShape = Shape(shape);
    result.elementBytes = type.getElementTypeBitWidth() / 8;
    result.swizzle = transforms.swizzle;
    int64_t offset;
    if (failed(type.getStridesAndOffset(result.strides, offset)) ||
        llvm::any_of(result.strides, ShapedType::isDynamic))
      return op->emitOpError()
             << "needs static strides for tiled buffer " << type;
    Shape tile = transforms.tile.value_or(Shape{});
    size_t rank = shape.size();
    if (type.getRank() != static_cast<int64_t>(rank + tile.size()))
      return op->emitOpError() << "expects the buffer tiled by "
                               << transforms.str() << " to have rank "
                               << rank + tile.size() << ", but it is " << type;
    for (size_t i = 0; i < tile.size(); ++i)
      tile[i] = std::min(tile[i], shape[rank - tile.size() + i]);
    result.tile = tile;
    return result;
  }

  /// The unswizzled byte offset of the element at `index` from the buffer's
  /// start, computed at compile time.
  int64_t offsetBytes(ArrayRef<int64_t> index) const {
    size_t rank = index.size(), tiled = tile.size();
    SmallVector<int64_t> coordinates(index.begin(), index.end() - tiled);
    for (size_t i = 0; i < tiled; ++i)
      coordinates.push_back(index[rank - tiled + i] / tile[i]);
    for (size_t i = 0; i < tiled; ++i)
      coordinates.push_back(index[rank - tiled + i] % tile[i]);
    int64_t linear = 0;
    for (auto [coordinate, stride] : llvm::zip_equal(coordinates, strides))
      linear += coordinate * stride;
    return linear * elementBytes;
  }

  /// The swizzle as a function of a byte offset from a swizzle-atom aligned
  /// start: XOR is linear over bits, so offsets with disjoint bits swizzle
  /// independently.
  int64_t swizzled(int64_t offset) const {
    if (swizzle == layout::kNoSwizzle)
      return offset;
    return offset ^ (((offset >> 7) & (swizzle / 16 - 1)) << 4);
  }

  /// The byte address of the element at `index` (logical).
  Value address(OpBuilder &builder, Location loc, ArrayRef<Value> index) const {
    auto constant = [&](int64_t value) -> Value {
      return arith::ConstantIndexOp::create(builder, loc, value);
    };
    // Logical (.., m, n) -> tiled (.., m / t0, n / t1, m % t0, n % t1).
    size_t rank = index.size();
    size_t tiled = tile.size();
    SmallVector<Value> coordinates(index.begin(), index.end() - tiled);
    SmallVector<Value> inner;
    for (size_t i = 0; i < tiled; ++i) {
      Value position = index[rank - tiled + i];
      coordinates.push_back(
          arith::DivUIOp::create(builder, loc, position, constant(tile[i])));
      inner.push_back(
          arith::RemUIOp::create(builder, loc, position, constant(tile[i])));
    }
    coordinates.append(inner);
    Value linear = constant(0);
    for (auto [coordinate, stride] : llvm::zip_equal(coordinates, strides))
      linear = arith::AddIOp::create(
          builder, loc, linear,
          arith::MulIOp::create(builder, loc, coordinate, constant(stride)));
    Value address = arith::AddIOp::create(
        builder, loc, base,
        arith::MulIOp::create(builder, loc, linear, constant(elementBytes)));
    if (swizzle == layout::kNoSwizzle)
      return address;
    // Bits 4.. of the address (the 16-byte chunk in a swizzle-wide row) are
    // XORed with bits 7.. (the row within the 8-row swizzle atom).
    Value row = arith::AndIOp::create(
        builder, loc,
        arith::ShRUIOp::create(builder, loc, address, constant(7)),
        constant(swizzle / 16 - 1));
    return arith::XOrIOp::create(
        builder, loc, address,
        arith::ShLIOp::create(builder, loc, row, constant(4)));
  }
};

/// How `stmatrix.sync.aligned.m8n8.x4.shared.b16` (PTX ISA "stmatrix")
/// stores a tiled vector: lane l of a warp gives the address of row l % 8 of
/// matrix l / 8, and that row is the 8 elements that lanes 4 (l % 8) ..
/// 4 (l % 8) + 3 hold in their register pair l / 8 of the instruction.
/// Instruction g stores the thread's register pairs 4g .. 4g + 3 (elements
/// 8g .. 8g + 7).
/// stmatrix.m8n8.x4 stores 4 matrices of 8 rows; a row is 8 16-bit elements
/// (16 bytes), which 4 lanes hold as one 32-bit pair each.
constexpr int64_t kMatrices = 4, kMatrixRows = 8, kRowBytes = 16,
                  kLanesPerRow = 4;

struct StmatrixPlan {
  /// The index step from pair 4g to pair 4g + 1 and to pair 4g + 2, the same
  /// for every g; pair 4g + 3 is both steps.
  Shape step1, step2;
};

Shape plus(Shape a, ArrayRef<int64_t> b) {
  for (auto [x, y] : llvm::zip_equal(a, b))
    x += y;
  return a;
}

Shape minus(Shape a, ArrayRef<int64_t> b) {
  for (auto [x, y] : llvm::zip_equal(a, b))
    x -= y;
  return a;
}

/// The stmatrix plan for storing registers whose thread-0 indices are
/// `elements` (moved by `threads[t]` for thread t) into a swizzled buffer,
/// if stmatrix stores every element where the per-pair stores would. Checked
/// for every thread and register at compile time: lanes 4r .. 4r + 3 hold
/// consecutive pairs of one row; each row is 16 bytes in one swizzle chunk;
/// the four pairs of every instruction step alike; and, as for the per-pair
/// stores, the swizzle splits over the lane's part of the index and the
/// instruction's constant part.
std::optional<StmatrixPlan> planStmatrix(const TiledSmemAddressing &addressing,
                                         ArrayRef<Shape> elements,
                                         int64_t group,
                                         ArrayRef<Shape> threads) {
  if (addressing.elementBytes != 2 ||
      addressing.swizzle == layout::kNoSwizzle || group != 2 ||
      elements.empty() || elements.size() % (kMatrices * group) != 0 ||
      threads.size() != static_cast<size_t>(kThreadsPerWarpgroup))
    return std::nullopt;
  size_t minor = elements.front().size() - 1;
  for (int64_t t = 0; t < kThreadsPerWarpgroup; ++t) {
    Shape expected = threads[t - t % kLanesPerRow];
    expected[minor] += group * (t % kLanesPerRow);
    if (threads[t] != expected)
      return std::nullopt;
  }
  for (int64_t t = 0; t < kThreadsPerWarpgroup; t += kLanesPerRow)
    for (size_t start = 0; start < elements.size(); start += group) {
      Shape row = plus(threads[t], elements[start]);
      int64_t offset = addressing.offsetBytes(row);
      if (offset % kRowBytes != 0)
        return std::nullopt;
      for (int64_t k = 1; k * addressing.elementBytes < kRowBytes; ++k) {
        Shape next = row;
        next[minor] += k;
        if (addressing.offsetBytes(next) !=
            offset + k * addressing.elementBytes)
          return std::nullopt;
      }
    }
  StmatrixPlan plan{minus(elements[group], elements[0]),
                    minus(elements[2 * group], elements[0])};
  Shape step3 = plus(plan.step1, plan.step2);
  for (size_t start = 0; start < elements.size(); start += kMatrices * group)
    if (minus(elements[start + group], elements[start]) != plan.step1 ||
        minus(elements[start + 2 * group], elements[start]) != plan.step2 ||
        minus(elements[start + 3 * group], elements[start]) != step3)
      return std::nullopt;
  for (int64_t t = 0; t < kThreadsPerWarpgroup; ++t) {
    int64_t lane = t % kLanesPerWarp;
    Shape index = threads[t - lane + kLanesPerRow * (lane % kMatrixRows)];
    if ((lane / kMatrixRows) & 1)
      index = plus(index, plan.step1);
    if ((lane / kMatrixRows) & 2)
      index = plus(index, plan.step2);
    if (llvm::any_of(index, [](int64_t value) { return value < 0; }))
      return std::nullopt;
    int64_t lanePart = addressing.swizzled(addressing.offsetBytes(index));
    for (size_t start = 0; start < elements.size(); start += kMatrices * group)
      if (addressing.swizzled(
              addressing.offsetBytes(plus(index, elements[start]))) !=
          (lanePart ^
           addressing.swizzled(addressing.offsetBytes(elements[start]))))
        return std::nullopt;
  }
  return plan;
}

/// Stores `stored` (registers whose thread-0 indices are `elements`) with
/// one stmatrix.x4 per four register pairs, as `plan` says. `offsetsOf`
/// gives the index offset of a thread's elements from thread 0's.
LogicalResult
storeWithStmatrix(OpBuilder &builder, Location loc, Value thread,
                  function_ref<FailureOr<SmallVector<Value>>(Value)> offsetsOf,
                  const TiledSmemAddressing &addressing,
                  const StmatrixPlan &plan, ArrayRef<Shape> elements,
                  Value stored) {
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, value);
  };
  // This lane addresses row `row` of matrix `matrix`: the row that lane
  // 4 * row of its warp holds, moved by the matrix's steps.
  Value lane =
      arith::RemUIOp::create(builder, loc, thread, constant(kLanesPerWarp));
  Value row = arith::RemUIOp::create(builder, loc, lane, constant(kMatrixRows));
  Value matrix =
      arith::DivUIOp::create(builder, loc, lane, constant(kMatrixRows));
  Value holder = arith::AddIOp::create(
      builder, loc, arith::SubIOp::create(builder, loc, thread, lane),
      arith::MulIOp::create(builder, loc, row, constant(kLanesPerRow)));
  FailureOr<SmallVector<Value>> index = offsetsOf(holder);
  if (failed(index))
    return failure();
  for (auto [bit, step] : {std::pair<int64_t, const Shape &>{1, plan.step1},
                           std::pair<int64_t, const Shape &>{2, plan.step2}}) {
    Value chosen = arith::AndIOp::create(
        builder, loc,
        arith::DivUIOp::create(builder, loc, matrix, constant(bit)),
        constant(1));
    for (auto [value, amount] : llvm::zip_equal(*index, step))
      if (amount != 0)
        value = arith::AddIOp::create(
            builder, loc, value,
            arith::MulIOp::create(builder, loc, chosen, constant(amount)));
  }
  Value laneOffset = arith::SubIOp::create(
      builder, loc, addressing.address(builder, loc, *index), addressing.base);
  auto word = VectorType::get({1}, builder.getI32Type());
  for (int64_t start = 0; start < static_cast<int64_t>(elements.size());
       start += 2 * kMatrices) {
    SmallVector<Value> words;
    for (int64_t pair = 0; pair < kMatrices; ++pair) {
      Value piece = vector::ExtractStridedSliceOp::create(
          builder, loc, stored, ArrayRef<int64_t>{start + 2 * pair},
          ArrayRef<int64_t>{2}, ArrayRef<int64_t>{1});
      words.push_back(vector::ExtractOp::create(
          builder, loc, vector::BitCastOp::create(builder, loc, word, piece),
          0));
    }
    int64_t own = addressing.swizzled(addressing.offsetBytes(elements[start]));
    Value address = arith::AddIOp::create(
        builder, loc, addressing.base,
        arith::XOrIOp::create(builder, loc, laneOffset, constant(own)));
    NVVM::StMatrixOp::create(
        builder, loc, sharedPointer(builder, loc, address), words,
        NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(builder.getContext(), 8, 8),
        NVVM::LdStMatrixEltType::B16);
  }
  return success();
}

} // namespace

LogicalResult mosaic::lowerTiledTransfer(LoweringContext &lowering,
                                         Operation *op,
                                         const RegisterLayout &layout,
                                         VectorType type, Value ref,
                                         Value stored, Value *loaded,
                                         OpOperand *buffer, ValueRange valid) {
  bool scratch = !buffer;
  auto refType = cast<MemRefType>(ref.getType());
  ArrayRef<int64_t> shape = type.getShape();
  const layout::TiledLayout &tiled = layout.tiledLayout();
  llvm::Expected<std::vector<Shape>> elements = thread0Elements(layout, shape);
  if (!elements)
    return op->emitOpError() << llvm::toString(elements.takeError());
  // Only shared-memory buffers have transforms; the op has one memref.
  FailureOr<SmemTransforms> transforms = SmemTransforms::none();
  if (!scratch && mosaic_gpu::isSharedBuffer(ref))
    transforms = inTransformsFor(*buffer);
  if (failed(transforms))
    return failure();
  bool tiledBuffer =
      !scratch && mosaic_gpu::transformsApplied(op) && !transforms->isNone();
  if (!tiledBuffer && refType.getShape() != shape)
    return op->emitOpError() << "moves a " << type << " to or from " << refType
                             << ", whose shape differs";

  OpBuilder builder(op);
  Location loc = op->getLoc();
  // A layout that replicates elements over warps or lanes gives several
  // threads the same elements: only the first copy is stored, so that no
  // two threads write one address.
  bool replicated = false;
  if (!loaded) {
    FailureOr<std::optional<Value>> first =
        firstReplica(lowering, op, tiled, shape, builder);
    if (failed(first))
      return failure();
    if (*first) {
      replicated = true;
      auto branch = scf::IfOp::create(builder, loc, **first,
                                      /*withElseRegion=*/false);
      builder.setInsertionPointToStart(&branch.getThenRegion().front());
    }
  }
  std::optional<TiledSmemAddressing> addressing;
  if (tiledBuffer) {
    FailureOr<TiledSmemAddressing> created =
        TiledSmemAddressing::create(op, ref, shape, *transforms);
    if (failed(created))
      return failure();
    addressing = *created;
  }

  // Move whole register vectors when their elements are contiguous in the
  // minor dim, within one swizzle chunk; else element by element.
  int64_t vectorLength = tiled.vectorLength();
  int64_t count = elements->size();
  int64_t minor = shape.size() - 1;
  int64_t elementBytes = refType.getElementTypeBitWidth() / 8;
  bool contiguous = vectorLength * elementBytes <= 16;
  for (int64_t start = 0; contiguous && start < count; start += vectorLength)
    for (int64_t lane = 0; lane < vectorLength; ++lane) {
      Shape expected = (*elements)[start];
      expected[minor] += lane;
      contiguous &= (*elements)[start + lane] == expected &&
                    (*elements)[start][minor] % vectorLength == 0;
    }
  // A bounded store checks each element against the extents on its own.
  int64_t group = contiguous && valid.empty() ? vectorLength : 1;
  auto groupType = VectorType::get({group}, type.getElementType());
  std::optional<std::vector<Shape>> threadIndices =
      addressing ? threadIndexSamples(tiled, shape) : std::nullopt;

  // 16-bit stores into swizzled buffers whose rows stmatrix can address
  // (the WGMMA layout into the tiles TMA and wgmma use): four register pairs
  // per instruction instead of one st.shared.b32 each.
  if (addressing && !loaded && threadIndices && !replicated)
    if (std::optional<StmatrixPlan> plan =
            planStmatrix(*addressing, *elements, group, *threadIndices)) {
      addressing->base = sharedByteAddress(builder, loc, ref);
      return storeWithStmatrix(
          builder, loc, lowering.threadInWarpgroup(op),
          [&](Value thread) {
            return threadOffsets(lowering, op, tiled, shape, builder, thread);
          },
          *addressing, *plan, *elements, stored);
    }

  FailureOr<SmallVector<Value>> offsets =
      threadOffsets(lowering, op, tiled, shape, builder);
  if (failed(offsets))
    return failure();
  if (addressing)
    addressing->base = sharedByteAddress(builder, loc, ref);

  // Swizzled buffers: when the thread's share of each index and the
  // register's share combine without carries, both the tiling and the
  // swizzle (an XOR of address bits) split over them. The thread's swizzled
  // offset is then computed once, and each register only XORs in its own
  // constant: one instruction instead of an address computation. The split
  // is checked for every thread and register before it is used.
  std::optional<Value> threadSwizzled;
  if (addressing) {
    bool disjoint = threadIndices.has_value();
    for (size_t t = 0; disjoint && t < threadIndices->size(); ++t) {
      const Shape &thread = (*threadIndices)[t];
      int64_t threadPart =
          addressing->swizzled(addressing->offsetBytes(thread));
      for (int64_t start = 0; disjoint && start < count; start += group) {
        const Shape &own = (*elements)[start];
        Shape index(own);
        for (auto [value, shift] : llvm::zip_equal(index, thread))
          value += shift;
        disjoint &=
            addressing->swizzled(addressing->offsetBytes(index)) ==
            (threadPart ^ addressing->swizzled(addressing->offsetBytes(own)));
      }
    }
    if (disjoint) {
      Value threadOffset = arith::SubIOp::create(
          builder, loc, addressing->address(builder, loc, *offsets),
          addressing->base);
      threadSwizzled = threadOffset;
    }
  }
  Value registers;
  if (loaded)
    registers = arith::ConstantOp::create(
        builder, loc,
        builder.getZeroAttr(VectorType::get({count}, type.getElementType())));
  for (int64_t start = 0; start < count; start += group) {
    SmallVector<Value> index;
    for (auto [offset, position] :
         llvm::zip_equal(*offsets, (*elements)[start]))
      index.push_back(arith::AddIOp::create(
          builder, loc, offset,
          arith::ConstantIndexOp::create(builder, loc, position)));
    Value piece;
    if (!loaded)
      piece = vector::ExtractStridedSliceOp::create(
          builder, loc, stored, ArrayRef<int64_t>{start},
          ArrayRef<int64_t>{group}, ArrayRef<int64_t>{1});
    if (addressing) {
      Value address;
      if (threadSwizzled) {
        int64_t constant =
            addressing->swizzled(addressing->offsetBytes((*elements)[start]));
        address = arith::AddIOp::create(
            builder, loc, addressing->base,
            arith::XOrIOp::create(
                builder, loc, *threadSwizzled,
                arith::ConstantIndexOp::create(builder, loc, constant)));
      } else {
        address = addressing->address(builder, loc, index);
      }
      Value pointer = sharedPointer(builder, loc, address);
      unsigned alignment = group * elementBytes;
      // LLVM has no 8-bit float type: those move as i8.
      bool float8 = isa<FloatType>(groupType.getElementType()) &&
                    groupType.getElementTypeBitWidth() == 8;
      auto bitsType = VectorType::get({group}, builder.getI8Type());
      if (loaded) {
        piece = LLVM::LoadOp::create(
            builder, loc, float8 ? bitsType : groupType, pointer, alignment);
        if (float8)
          piece = arith::BitcastOp::create(builder, loc, groupType, piece);
      } else {
        if (float8)
          piece = arith::BitcastOp::create(builder, loc, bitsType, piece);
        LLVM::StoreOp::create(builder, loc, piece, pointer, alignment);
      }
    } else if (loaded) {
      piece = vector::LoadOp::create(builder, loc, groupType, ref, index);
    } else if (!valid.empty()) {
      Value inside = arith::ConstantIntOp::create(builder, loc, 1, 1);
      for (auto [position, extent] : llvm::zip_equal(index, valid))
        inside = arith::AndIOp::create(
            builder, loc, inside,
            arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt,
                                  position, extent));
      auto guarded = scf::IfOp::create(builder, loc, inside,
                                       /*withElseRegion=*/false);
      OpBuilder then =
          OpBuilder::atBlockBegin(&guarded.getThenRegion().front());
      vector::StoreOp::create(then, loc, piece, ref, index);
    } else {
      vector::StoreOp::create(builder, loc, piece, ref, index);
    }
    if (loaded)
      registers = vector::InsertStridedSliceOp::create(
          builder, loc, piece, registers, ArrayRef<int64_t>{start},
          ArrayRef<int64_t>{1});
  }
  if (loaded)
    *loaded = registers;
  return success();
}

static LogicalResult lowerVectorLoad(LoweringContext &lowering,
                                     mosaic_gpu::VectorLoadOp op) {
  FailureOr<RegisterLayout> layout = outLayoutFor(op->getResult(0));
  if (failed(layout))
    return failure();
  Value registers;
  LogicalResult result = failure();
  if (layout->isStrided())
    result = lowerStridedTransfer(lowering, op, *layout, op.getSource(),
                                  Value(), &registers, &op.getSourceMutable());
  else if (layout->isTiled())
    result = lowerTiledTransfer(lowering, op, *layout, op.getResult().getType(),
                                op.getSource(), Value(), &registers,
                                &op.getSourceMutable());
  else
    return op.emitOpError() << "cannot load into a splat layout: a load "
                               "reads distinct elements";
  if (failed(result))
    return failure();
  return lowering.define(op.getResult(), registers, *layout);
}

static LogicalResult lowerVectorStore(LoweringContext &lowering,
                                      mosaic_gpu::VectorStoreOp op) {
  FailureOr<RegisterLayout> layout = inLayoutFor(op->getOpOperand(0));
  if (failed(layout))
    return failure();
  VectorType type = lowering.logicalType(op.getValueToStore());
  if (layout->isSplat()) {
    // Every thread holds the value: spread it over a strided layout and let
    // each thread write its chunks.
    if (std::optional<int64_t> vectorSize = layout::defaultStridedVectorSize(
            type.getShape(), type.getElementTypeBitWidth()))
      layout = RegisterLayout::strided(*vectorSize);
    else
      return op.emitOpError() << "cannot store a splat " << type
                              << ": its elements do not fill whole rows of "
                                 "128 threads";
  }
  OpBuilder builder(op);
  FailureOr<Value> registers =
      lowering.operandAs(op, op->getOpOperand(0), *layout, builder);
  if (failed(registers))
    return failure();
  if (layout->isStrided()) {
    if (!op.getValid().empty())
      return op.emitOpError()
             << "stores a strided vector with `valid` extents; a bounded "
                "store takes a tiled layout (layout_cast to WGMMA)";
    return lowerStridedTransfer(lowering, op, *layout, op.getDestination(),
                                *registers, nullptr,
                                &op.getDestinationMutable());
  }
  return lowerTiledTransfer(lowering, op, *layout, type, op.getDestination(),
                            *registers, nullptr, &op.getDestinationMutable(),
                            op.getValid());
}

/// with_transforms and assume_multiple: hints for inference and tiling,
/// replaced by their operand.
static LogicalResult lowerHint(LoweringContext &lowering, Operation *op) {
  // Hints for inference and tiling; the value itself is unchanged.
  op->getResult(0).replaceAllUsesWith(op->getOperand(0));
  return success();
}

FailureOr<Value>
mosaic::relayoutThroughSharedMemory(LoweringContext &lowering, Operation *op,
                                    Value registers, const RegisterLayout &from,
                                    const RegisterLayout &to, VectorType type) {
  FailureOr<int64_t> groups = warpgroupsOf(op);
  if (failed(groups))
    return failure();
  int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
  int64_t scratchOffset = lowering.reserveScratch(op, bytes * *groups);
  // This warpgroup's scratch, viewed as a row-major buffer of the vector.
  OpBuilder builder(op);
  Location loc = op->getLoc();
  Value group = lowering.warpgroupIndex(op);
  Value shift = arith::AddIOp::create(
      builder, loc, arith::ConstantIndexOp::create(builder, loc, scratchOffset),
      arith::MulIOp::create(
          builder, loc, group,
          arith::ConstantIndexOp::create(builder, loc, bytes)));
  auto bufferType = MemRefType::get(
      type.getShape(), type.getElementType(), MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(op->getContext(),
                                 gpu::AddressSpace::Workgroup));
  Value buffer = memref::ViewOp::create(builder, loc, bufferType,
                                        dynamicSharedMemory(lowering, op),
                                        shift, ValueRange{});
  auto transfer = [&](const RegisterLayout &layout, Value stored,
                      Value *loaded) {
    return layout.isStrided() ? lowerStridedTransfer(lowering, op, layout,
                                                     buffer, stored, loaded,
                                                     /*buffer=*/nullptr)
                              : lowerTiledTransfer(lowering, op, layout, type,
                                                   buffer, stored, loaded,
                                                   /*buffer=*/nullptr);
  };
  if (failed(transfer(from, registers, nullptr)))
    return failure();
  warpgroupBarrier(lowering, op, builder);
  Value relaid;
  if (failed(transfer(to, Value(), &relaid)))
    return failure();
  // The scratch may be reused once every thread has read its elements.
  OpBuilder after(op);
  warpgroupBarrier(lowering, op, after);
  return relaid;
}

void mosaic::populateMemoryLowerings(LoweringRegistry &registry) {
  registry.add<mosaic_gpu::SliceSMEMOp>(lowerSliceSmem);
  registry.add<mosaic_gpu::VectorLoadOp>(lowerVectorLoad);
  registry.add<mosaic_gpu::VectorStoreOp>(lowerVectorStore);
  registry.add<mosaic_gpu::WithTransformsOp, mosaic_gpu::AssumeMultipleOp>(
      lowerHint);
}
