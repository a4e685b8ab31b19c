//===- MosaicGPUOps.cpp - mosaic_gpu operations ---------------------------===//
//
// Verifiers for the rules ODS type constraints cannot express. Each message
// names the operand or attribute in backticks and shows the numbers involved.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h"

#include "mosaic/Dialect/MosaicGPU/Annotations.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <numeric>

using namespace mlir;
using namespace mosaic_gpu;
using mosaic::layout::formatShape;

#define GET_OP_CLASSES
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

static std::string describeMemorySpace(MemRefType type) {
  Attribute space = type.getMemorySpace();
  if (!space)
    return "global memory (no memory space)";
  std::string result;
  llvm::raw_string_ostream os(result);
  os << space;
  return result;
}

static LogicalResult verifyInSharedMemory(Operation *op, StringRef name,
                                          MemRefType type) {
  if (isSharedMemory(type))
    return success();
  return op->emitOpError() << "`" << name
                           << "` must be in shared memory "
                              "(#gpu.address_space<workgroup>), but it is in "
                           << describeMemorySpace(type);
}

static LogicalResult verifyInGlobalMemory(Operation *op, StringRef name,
                                          MemRefType type) {
  if (isGlobalMemory(type))
    return success();
  return op->emitOpError() << "`" << name
                           << "` must be in global memory (no memory space or "
                              "#gpu.address_space<global>), but it is in "
                           << describeMemorySpace(type);
}

static LogicalResult verifyBarrierRef(Operation *op, Value barrier) {
  auto type = cast<MemRefType>(barrier.getType());
  if (type.getRank() != 0)
    return op->emitOpError()
           << "`barrier` must be a rank-0 memref of !mosaic_gpu.barrier, but "
              "it has shape "
           << formatShape(type.getShape())
           << "; select one barrier with memref.subview first";
  return verifyInSharedMemory(op, "barrier", type);
}

static LogicalResult verifyClusterDims(Operation *op, ArrayAttr collective) {
  llvm::SmallSet<Dimension, 3> seen;
  for (auto dim : collective.getAsRange<DimensionAttr>())
    if (!seen.insert(dim.getValue()).second)
      return op->emitOpError()
             << "`collective` lists cluster dimension "
             << stringifyDimension(dim.getValue()) << " more than once";
  return success();
}

static LogicalResult verifySliceLengths(Operation *op,
                                        ArrayRef<int64_t> sliceLengths,
                                        size_t numIndices, StringRef gmemName,
                                        MemRefType gmemType) {
  int64_t rank = gmemType.getRank();
  if (static_cast<int64_t>(sliceLengths.size()) != rank)
    return op->emitOpError()
           << "`slice_lengths` has " << sliceLengths.size() << " entries, but `"
           << gmemName << "` has rank " << rank;
  if (static_cast<int64_t>(numIndices) != rank)
    return op->emitOpError()
           << "expected " << rank << " `indices` (the rank "
           << "of `" << gmemName << "`), but got " << numIndices;
  for (auto [dim, length] : llvm::enumerate(sliceLengths)) {
    if (length == 0 || length < -1)
      return op->emitOpError()
             << "`slice_lengths` entry " << dim << " is " << length
             << "; lengths must be positive, or -1 to squeeze the dim";
  }
  // A slice may be longer than its dim: TMA fills what a load reads past
  // the tensor's edge and drops what a store writes there, so one box
  // serves every tile of a shape that is not a multiple of it.
  return success();
}

// A load that promises to stay in bounds cannot have a slice longer than
// the dim it reads.
static LogicalResult verifyPromisedInBounds(Operation *op,
                                            ArrayRef<int64_t> sliceLengths,
                                            MemRefType gmemType) {
  for (auto [dim, length] : llvm::enumerate(sliceLengths)) {
    int64_t size = gmemType.getDimSize(dim);
    if (!ShapedType::isDynamic(size) && length > size)
      return op->emitOpError()
             << "promises to stay in bounds, but `slice_lengths` entry " << dim
             << " is " << length << ", larger than dim " << dim
             << " of `source` which is " << size;
  }
  return success();
}

static bool hasUnitStrideMinorDim(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         (strides.empty() || strides.back() == 1);
}

// The checks async_load and async_store share: `gmem` is the global side,
// `smem` the shared side, and the slice of `gmem` must match `smem` once the
// -1 (squeezed) dims are dropped.
static LogicalResult verifyTransfer(Operation *op, StringRef gmemName,
                                    MemRefType gmemType, StringRef smemName,
                                    MemRefType smemType,
                                    ArrayRef<int64_t> sliceLengths,
                                    size_t numIndices) {
  if (failed(verifyInGlobalMemory(op, gmemName, gmemType)) ||
      failed(verifyInSharedMemory(op, smemName, smemType)))
    return failure();
  if (gmemType.getElementType() != smemType.getElementType())
    return op->emitOpError()
           << "`" << gmemName << "` element type " << gmemType.getElementType()
           << " does not match `" << smemName << "` element type "
           << smemType.getElementType();
  if (failed(
          verifySliceLengths(op, sliceLengths, numIndices, gmemName, gmemType)))
    return failure();
  if (!smemType.hasStaticShape())
    return op->emitOpError()
           << "`" << smemName << "` must have a static shape, but it is "
           << smemType;
  if (!smemType.areTrailingDimsContiguous(smemType.getRank()))
    return op->emitOpError()
           << "`" << smemName << "` must be contiguous for TMA, but it is "
           << smemType;
  if (!hasUnitStrideMinorDim(gmemType))
    return op->emitOpError() << "`" << gmemName
                             << "` must have a unit-stride minor dim for "
                                "TMA, but it is "
                             << gmemType;

  SmallVector<int64_t> kept;
  for (int64_t length : sliceLengths)
    if (length != -1)
      kept.push_back(length);
  int64_t squeezed = sliceLengths.size() - kept.size();
  if (static_cast<int64_t>(kept.size()) != smemType.getRank())
    return op->emitOpError()
           << "`" << smemName << "` has rank " << smemType.getRank()
           << ", but `" << gmemName << "` has rank " << gmemType.getRank()
           << " with " << squeezed
           << " squeezed (-1) slice dims; expected rank " << kept.size();
  if (ArrayRef<int64_t>(kept) != smemType.getShape()) {
    InFlightDiagnostic diag = op->emitOpError() << "`slice_lengths` "
                                                << formatShape(sliceLengths);
    if (squeezed)
      diag << " without the squeezed (-1) dims is " << formatShape(kept)
           << ", which";
    return diag << " does not match the `" << smemName << "` shape "
                << formatShape(smemType.getShape());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Barriers
//===----------------------------------------------------------------------===//

LogicalResult InitializeBarrierOp::verify() {
  int64_t count = getArrivalCount();
  if (count < 1 || count > kMaxBarrierCount)
    return emitOpError() << "`arrival_count` must be in [1, "
                         << kMaxBarrierCount << "], but it is " << count;
  int64_t numBarriers = getNumBarriersAttr().getInt();
  if (numBarriers < 1)
    return emitOpError() << "`num_barriers` must be positive, but it is "
                         << numBarriers;
  auto barriers = dyn_cast<MemRefType>(getBasePointer().getType());
  if (!barriers)
    return success();
  if (failed(verifyInSharedMemory(*this, "base_pointer", barriers)))
    return failure();
  if (!barriers.hasStaticShape() || barriers.getNumElements() != numBarriers)
    return emitOpError() << "`base_pointer` holds "
                         << (barriers.hasStaticShape()
                                 ? std::to_string(barriers.getNumElements())
                                 : std::string("a dynamic number of"))
                         << " barriers, but `num_barriers` is " << numBarriers;
  return success();
}

LogicalResult ArriveOp::verify() {
  return verifyBarrierRef(*this, getBarrier());
}

LogicalResult ArriveExpectTxOp::verify() {
  if (failed(verifyBarrierRef(*this, getBarrier())))
    return failure();
  int64_t bytes = getExpectTxAttr().getInt();
  if (bytes < 0 || bytes > kMaxBarrierCount)
    return emitOpError() << "`expect_tx` must be in [0, " << kMaxBarrierCount
                         << "] bytes, but it is " << bytes;
  return success();
}

LogicalResult WaitOp::verify() { return verifyBarrierRef(*this, getBarrier()); }

//===----------------------------------------------------------------------===//
// TMA
//===----------------------------------------------------------------------===//

namespace {

/// Where a shared-memory buffer starts in the kernel's dynamic shared
/// memory, as far as the ops that made it show: `bytes` past the start of
/// the `slice_smem` it views, plus a multiple of `step` bytes when a
/// subview has dynamic offsets (0 when the offset is static).
struct SharedOrigin {
  SliceSMEMOp slice;
  int64_t bytes = 0;
  int64_t step = 0;
  /// The swizzle of a `with_transforms` on the way, in bytes (16: none).
  int64_t swizzle = static_cast<int64_t>(SwizzlingMode::kNoSwizzle);
};

} // namespace

/// Follows `ref` back through the views that keep (cast, reshape,
/// transpose, with_transforms) or move (subview) its start to the
/// `slice_smem` it comes from; nothing when another op or a block argument
/// is on the way, or a subview's source has dynamic strides.
static std::optional<SharedOrigin> sharedOrigin(Value ref) {
  SharedOrigin origin;
  while (true) {
    Operation *producer = ref.getDefiningOp();
    if (!producer)
      return std::nullopt;
    if (auto slice = dyn_cast<SliceSMEMOp>(producer)) {
      origin.slice = slice;
      origin.bytes += slice.getOffsetAttr().getInt();
      return origin;
    }
    if (auto with = dyn_cast<WithTransformsOp>(producer)) {
      for (Attribute transform : with.getTransforms())
        if (auto swizzle = dyn_cast<SwizzleTransformAttr>(transform))
          origin.swizzle = static_cast<int64_t>(swizzle.getSwizzle());
      ref = with.getRef();
      continue;
    }
    if (isa<memref::CastOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
            memref::TransposeOp>(producer)) {
      ref = producer->getOperand(0);
      continue;
    }
    auto subview = dyn_cast<memref::SubViewOp>(producer);
    if (!subview)
      return std::nullopt;
    MemRefType source = subview.getSourceType();
    SmallVector<int64_t> strides;
    int64_t offset;
    if (!source.getElementType().isIntOrFloat() ||
        source.getElementTypeBitWidth() % 8 != 0 ||
        failed(source.getStridesAndOffset(strides, offset)) ||
        llvm::any_of(strides, ShapedType::isDynamic))
      return std::nullopt;
    int64_t elementBytes = source.getElementTypeBitWidth() / 8;
    for (auto [dim, start] : llvm::enumerate(subview.getStaticOffsets())) {
      int64_t stepBytes = strides[dim] * elementBytes;
      if (ShapedType::isDynamic(start))
        origin.step = std::gcd(origin.step, stepBytes);
      else
        origin.bytes += start * stepBytes;
    }
    ref = subview.getSource();
  }
}

SliceSMEMOp mosaic_gpu::viewedSlice(Value ref) {
  std::optional<SharedOrigin> origin = sharedOrigin(ref);
  return origin ? origin->slice : SliceSMEMOp();
}

/// The swizzle a TMA op's `in_transforms` records for its one shared-memory
/// buffer, in bytes, if it records one.
static std::optional<int64_t>
recordedSwizzle(std::optional<ArrayAttr> entries) {
  if (!entries || entries->size() != 1)
    return std::nullopt;
  auto transforms = dyn_cast<ArrayAttr>((*entries)[0]);
  if (!transforms)
    return std::nullopt;
  int64_t swizzle = static_cast<int64_t>(SwizzlingMode::kNoSwizzle);
  for (Attribute transform : transforms)
    if (auto attr = dyn_cast<SwizzleTransformAttr>(transform))
      swizzle = static_cast<int64_t>(attr.getSwizzle());
  return swizzle;
}

/// TMA moves shared memory at 128-byte aligned addresses, and with a
/// swizzle from the start of the swizzle's repeat. Where the buffer comes
/// from a `slice_smem` through views, its offset (or, for dynamic subview
/// offsets, each step of it) must be a multiple of that; the dynamic shared
/// memory itself starts 1024-byte aligned.
template <typename TmaOp>
static LogicalResult verifyTmaAlignment(TmaOp op, StringRef name, Value ref) {
  std::optional<SharedOrigin> origin = sharedOrigin(ref);
  if (!origin)
    return success();
  int64_t swizzle =
      recordedSwizzle(op.getInTransforms()).value_or(origin->swizzle);
  int64_t alignment =
      std::max(kTmaSharedAlignment, swizzleRepeatBytes(swizzle));
  auto reason = [&](InFlightDiagnostic &diag) -> InFlightDiagnostic & {
    diag << "; TMA needs shared-memory operands " << alignment
         << "-byte aligned";
    if (alignment > kTmaSharedAlignment)
      diag << " with a " << swizzle << "-byte swizzle (its pattern repeats "
           << "every " << alignment << " bytes)";
    return diag;
  };
  auto noteSlice = [&](InFlightDiagnostic &diag) {
    diag.attachNote(origin->slice.getLoc())
        << "`" << name << "` is carved here, at offset "
        << origin->slice.getOffsetAttr().getInt();
    return failure();
  };
  if (origin->bytes % alignment != 0) {
    InFlightDiagnostic diag = op.emitOpError()
                              << "`" << name << "` starts at byte "
                              << origin->bytes << " of shared memory";
    reason(diag);
    return noteSlice(diag);
  }
  if (origin->step % alignment != 0) {
    InFlightDiagnostic diag = op.emitOpError()
                              << "`" << name << "` starts at byte "
                              << origin->bytes << " of shared memory plus a "
                              << "dynamic multiple of " << origin->step
                              << " bytes (a subview's dynamic offset)";
    reason(diag) << ", so the step must be a multiple of " << alignment;
    return noteSlice(diag);
  }
  return success();
}

LogicalResult AsyncLoadOp::verify() {
  if (failed(verifyBarrierRef(*this, getBarrier())))
    return failure();
  if (failed(verifyTransfer(*this, "source", getSource().getType(),
                            "destination", getDestination().getType(),
                            getSliceLengths(), getIndices().size())) ||
      failed(verifyTmaAlignment(*this, "destination", getDestination())))
    return failure();
  if (getOobFillMode() == OOBFillMode::kPromiseInBounds &&
      failed(verifyPromisedInBounds(*this, getSliceLengths(),
                                    getSource().getType())))
    return failure();
  return verifyClusterDims(*this, getCollective());
}

LogicalResult AsyncPrefetchOp::verify() {
  MemRefType sourceType = getSource().getType();
  if (failed(verifyInGlobalMemory(*this, "source", sourceType)) ||
      failed(verifySliceLengths(*this, getSliceLengths(), getIndices().size(),
                                "source", sourceType)))
    return failure();
  return verifyClusterDims(*this, getCollective());
}

namespace {

/// The element types one TMA reduction is defined on.
struct ReductionTypes {
  bool f16 = false, bf16 = false, f32 = false, i32 = false, i64 = false;

  bool contains(Type type) const {
    return (f16 && type.isF16()) || (bf16 && type.isBF16()) ||
           (f32 && type.isF32()) || (i32 && type.isSignlessInteger(32)) ||
           (i64 && type.isSignlessInteger(64));
  }

  /// "f16, bf16 or f32".
  std::string str() const {
    SmallVector<StringRef> names;
    for (auto [included, name] :
         {std::pair{f16, "f16"}, std::pair{bf16, "bf16"}, std::pair{f32, "f32"},
          std::pair{i32, "i32"}, std::pair{i64, "i64"}})
      if (included)
        names.push_back(name);
    std::string result;
    for (auto [i, name] : llvm::enumerate(names))
      result += (i == 0                  ? ""
                 : i + 1 == names.size() ? " or "
                                         : ", ") +
                name.str();
    return result;
  }
};

} // namespace

/// The element types `cp.reduce.async.bulk.tensor` defines `reduction` on
/// (PTX ISA, the table of `.redOp` and element types): add on .f16, .bf16,
/// .f32, .u32, .s32 and .u64; min and max on .f16, .bf16, .u32, .s32, .u64
/// and .s64; inc and dec on .u32; and, or and xor on .b32 and .b64.
/// Integers are signless here, so integer min and max name the signedness
/// (smin, umin, ...) and the others are the same on both; 64-bit add is
/// .u64's, which has the same bits as a signed add.
static ReductionTypes reductionTypes(TMAReduction reduction) {
  ReductionTypes types;
  switch (reduction) {
  case TMAReduction::Add:
    types.f16 = types.bf16 = types.f32 = types.i32 = types.i64 = true;
    break;
  case TMAReduction::Min:
  case TMAReduction::Max:
    types.f16 = types.bf16 = true;
    break;
  case TMAReduction::Smin:
  case TMAReduction::Smax:
  case TMAReduction::Umin:
  case TMAReduction::Umax:
  case TMAReduction::And:
  case TMAReduction::Or:
  case TMAReduction::Xor:
    types.i32 = types.i64 = true;
    break;
  case TMAReduction::Inc:
  case TMAReduction::Dec:
    types.i32 = true;
    break;
  }
  return types;
}

static LogicalResult verifyReduction(AsyncStoreOp op) {
  std::optional<TMAReduction> reduction = op.getReductionOp();
  if (!reduction)
    return success();
  Type element = op.getSource().getType().getElementType();
  ReductionTypes types = reductionTypes(*reduction);
  if (types.contains(element))
    return success();
  StringRef name = stringifyTMAReduction(*reduction);
  InFlightDiagnostic diag = op.emitOpError()
                            << "`reduction_op` " << name
                            << " is not defined on " << element << "; TMA's "
                            << name << " takes " << types.str();
  bool integer = element.isSignlessInteger(32) || element.isSignlessInteger(64);
  bool isMinMax =
      *reduction == TMAReduction::Min || *reduction == TMAReduction::Max;
  bool namesSignedness =
      *reduction == TMAReduction::Smin || *reduction == TMAReduction::Smax ||
      *reduction == TMAReduction::Umin || *reduction == TMAReduction::Umax;
  if (isMinMax && integer)
    diag << " (integer min and max say how they compare: smin/smax for "
            "signed, umin/umax for unsigned)";
  else if (namesSignedness && (element.isF16() || element.isBF16()))
    diag << " (floating-point min and max are `min` and `max`)";
  else if (isa<IntegerType>(element) && !element.isSignlessInteger())
    diag << " (integers are signless; the reduction says whether min and "
            "max compare them as signed or unsigned)";
  return diag;
}

LogicalResult AsyncStoreOp::verify() {
  if (failed(verifyTransfer(*this, "destination", getDestination().getType(),
                            "source", getSource().getType(), getSliceLengths(),
                            getIndices().size())) ||
      failed(verifyTmaAlignment(*this, "source", getSource())))
    return failure();
  if (getDeferWait() && !getCommitGroup())
    return emitOpError() << "defers its wait (`defer_wait`) but commits no "
                            "group (`commit_group = false`): "
                            "async_store_wait waits for committed groups";
  return verifyReduction(*this);
}

//===----------------------------------------------------------------------===//
// Registers <-> memory
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>> mosaic_gpu::logicalShape(Operation *op,
                                                         Value ref) {
  auto type = cast<MemRefType>(ref.getType());
  SmallVector<int64_t> shape(type.getShape());
  // The ops that call this declare both annotations (inherent attributes).
  if (!transformsApplied(op))
    return shape;
  // Find the tile recorded for this operand.
  auto transforms = op->getAttrOfType<ArrayAttr>(kInTransformsAttr);
  auto use = llvm::find_if(op->getOpOperands(), [&](OpOperand &operand) {
    return operand.get() == ref;
  });
  std::optional<unsigned> index =
      use == op->getOpOperands().end() ? std::nullopt : sharedBufferIndex(*use);
  if (!transforms || !index || *index >= transforms.size())
    return failure();
  auto entry = dyn_cast<ArrayAttr>(transforms[*index]);
  if (!entry)
    return failure();
  for (Attribute transform : entry) {
    auto tile = dyn_cast<TileTransformAttr>(transform);
    if (!tile)
      continue;
    ArrayRef<int64_t> tiling = tile.getTiling().asArrayRef();
    size_t k = tiling.size();
    if (shape.size() < 2 * k || ArrayRef(shape).take_back(k) != tiling)
      return failure();
    size_t logicalRank = shape.size() - k;
    SmallVector<int64_t> logical(shape.begin(), shape.begin() + logicalRank);
    for (size_t i = 0; i < k; ++i)
      logical[logicalRank - k + i] *= tiling[i];
    return logical;
  }
  return shape;
}

/// The logical shape of `ref`, or an error on `op` naming it.
static FailureOr<SmallVector<int64_t>>
verifiedLogicalShape(Operation *op, StringRef name, Value ref) {
  FailureOr<SmallVector<int64_t>> shape = logicalShape(op, ref);
  if (failed(shape))
    return op->emitOpError()
           << "`" << name << "` has type " << ref.getType()
           << ", which is not the tiled form `in_transforms` records for it";
  return shape;
}

static LogicalResult verifyVectorMatchesRef(Operation *op, StringRef vectorName,
                                            VectorType vectorType,
                                            StringRef refName, Value ref) {
  auto refType = cast<MemRefType>(ref.getType());
  FailureOr<SmallVector<int64_t>> refShape =
      verifiedLogicalShape(op, refName, ref);
  if (failed(refShape))
    return failure();
  if (vectorType.getShape() != ArrayRef<int64_t>(*refShape))
    return op->emitOpError()
           << "`" << vectorName << "` shape "
           << formatShape(vectorType.getShape()) << " does not match `"
           << refName << "` shape " << formatShape(*refShape);
  if (vectorType.getElementType() != refType.getElementType())
    return op->emitOpError()
           << "`" << vectorName << "` element type "
           << vectorType.getElementType() << " does not match `" << refName
           << "` element type " << refType.getElementType();
  if (!isSharedMemory(refType) && !isGlobalMemory(refType))
    return op->emitOpError() << "`" << refName
                             << "` must be in shared or global memory, but it "
                                "is in "
                             << describeMemorySpace(refType);
  return success();
}

LogicalResult VectorLoadOp::verify() {
  return verifyVectorMatchesRef(*this, "result", getResult().getType(),
                                "source", getSource());
}

LogicalResult VectorStoreOp::verify() {
  if (failed(verifyVectorMatchesRef(*this, "valueToStore",
                                    getValueToStore().getType(), "destination",
                                    getDestination())))
    return failure();
  if (getValid().empty())
    return success();
  int64_t rank = getDestination().getType().getRank();
  if (static_cast<int64_t>(getValid().size()) != rank)
    return emitOpError() << "has " << getValid().size()
                         << " `valid` extents for a rank-" << rank
                         << " destination; give one per dim";
  return verifyInGlobalMemory(*this, "destination", getDestination().getType());
}

//===----------------------------------------------------------------------===//
// WGMMA
//===----------------------------------------------------------------------===//

static bool isFloat8(Type type) {
  return isa<Float8E4M3FNType, Float8E5M2Type>(type);
}

// The accumulator types the wgmma instruction allows for an input type
// (PTX ISA, "Warpgroup Level Matrix Multiply-Accumulate Instructions").
static bool isValidAccumulator(Type input, Type accumulator) {
  if (input.isF16() || isFloat8(input))
    return accumulator.isF32() || accumulator.isF16();
  if (input.isBF16() || input.isTF32() || input.isF32())
    return accumulator.isF32();
  return input.isInteger(8) && accumulator.isInteger(32);
}

static unsigned elementBitWidth(Type type) {
  // tf32 occupies 32 bits in memory.
  return type.isTF32() ? 32 : type.getIntOrFloatBitWidth();
}

// A 2-D shared-memory operand is stored with one of its dims contiguous; when
// it is dim 0 the operand is transposed relative to its logical shape.
static FailureOr<bool> isTransposed(Operation *op, StringRef name,
                                    MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (succeeded(type.getStridesAndOffset(strides, offset))) {
    // A 2-D operand, or a tiled one (rows / t0, cols / t1, t0, t1) whose
    // tiles keep the orientation of the logical buffer.
    size_t minor = strides.size() - 1;
    if (strides[minor] == 1)
      return false;
    if (strides[minor - 1] == 1)
      return true;
  }
  return op->emitOpError() << "`" << name
                           << "` must be contiguous along one of its dims, "
                              "but its type is "
                           << type;
}

void WGMMAOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  if (isa<MemRefType>(getA().getType()))
    effects.emplace_back(MemoryEffects::Read::get(), &getAMutable());
  effects.emplace_back(MemoryEffects::Read::get(), &getBMutable());
}

LogicalResult WGMMAOp::verify() {
  auto accType = getAccumulator().getType();
  Type aType = getA().getType();
  MemRefType bType = getB().getType();
  auto aShaped = cast<ShapedType>(aType);
  Type aElement = aShaped.getElementType();
  Type bElement = bType.getElementType();
  Type accElement = accType.getElementType();

  if (aElement != bElement && !(isFloat8(aElement) && isFloat8(bElement)))
    return emitOpError() << "`a` element type " << aElement
                         << " does not match `b` element type " << bElement
                         << "; only the two fp8 types may be mixed";
  if (!isValidAccumulator(aElement, accElement))
    return emitOpError() << "`accumulator` element type " << accElement
                         << " is not supported for " << aElement
                         << " inputs (f16 and fp8: f32 or f16; bf16 and "
                            "tf32: f32; i8: i32)";

  SmallVector<int64_t> aShape(aShaped.getShape());
  if (isa<MemRefType>(aType)) {
    FailureOr<SmallVector<int64_t>> shape =
        verifiedLogicalShape(*this, "a", getA());
    if (failed(shape))
      return failure();
    aShape = *shape;
  }
  FailureOr<SmallVector<int64_t>> bShape =
      verifiedLogicalShape(*this, "b", getB());
  if (failed(bShape))
    return failure();
  if (aShape.size() != 2 || bShape->size() != 2)
    return emitOpError() << "`a` and `b` must be matrices, but their shapes "
                            "are "
                         << formatShape(aShape) << " and "
                         << formatShape(*bShape);
  int64_t m = accType.getDimSize(0), n = accType.getDimSize(1);
  int64_t aRows = aShape[0], k = aShape[1];
  int64_t bRows = (*bShape)[0], bCols = (*bShape)[1];
  if (m % 64 != 0)
    return emitOpError() << "`accumulator` has " << m
                         << " rows (M), which is not a multiple of 64";
  if (n % 8 != 0 || n > 256)
    return emitOpError() << "`accumulator` has " << n
                         << " columns (N); N must be a multiple of 8 and at "
                            "most 256";
  if (aRows != m)
    return emitOpError() << "`a` has " << aRows
                         << " rows, but the `accumulator` has " << m << " (M)";
  if (bRows != k)
    return emitOpError() << "`b` has " << bRows << " rows, but `a` has " << k
                         << " columns (K)";
  if (bCols != n)
    return emitOpError() << "`b` has " << bCols
                         << " columns, but the `accumulator` has " << n
                         << " (N)";
  unsigned bitWidth = elementBitWidth(aElement);
  int64_t kStep = 256 / bitWidth;
  if (k % kStep != 0)
    return emitOpError() << "K = " << k << " is not a multiple of " << kStep
                         << ", the K of one wgmma instruction for " << aElement;

  if (failed(verifyInSharedMemory(*this, "b", bType)))
    return failure();
  // Tiled operands keep their orientation in the tile dims: a transposed
  // view's tiles are contiguous along their first dim.
  FailureOr<bool> bTransposed = isTransposed(*this, "b", bType);
  if (failed(bTransposed))
    return failure();
  bool aTransposed = false;
  if (auto aRef = dyn_cast<MemRefType>(aType)) {
    if (failed(verifyInSharedMemory(*this, "a", aRef)))
      return failure();
    FailureOr<bool> transposed = isTransposed(*this, "a", aRef);
    if (failed(transposed))
      return failure();
    aTransposed = *transposed;
  }
  // Hardware reads non-16-bit operands only K-major: A (M x K) row-major and
  // B (K x N) column-major, i.e. B transposed.
  if (bitWidth != 16) {
    if (aTransposed)
      return emitOpError() << "`a` is transposed, which wgmma supports only "
                              "for 16-bit element types, not "
                           << aElement;
    if (!*bTransposed)
      return emitOpError()
             << "`b` must be stored K-major (transposed, dim 0 contiguous) "
                "for "
             << bElement << "; wgmma reads other layouts only for 16-bit types";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Warpgroup roles
//===----------------------------------------------------------------------===//

LogicalResult SetMaxRegistersOp::verify() {
  uint32_t count = getCount();
  if (count < kMinRegistersPerThread || count > kMaxRegistersPerThread ||
      count % kRegisterAllocationGranule != 0)
    return emitOpError() << "asks for " << count
                         << " registers per thread; setmaxnreg takes a "
                            "multiple of "
                         << kRegisterAllocationGranule << " in "
                         << kMinRegistersPerThread << ".."
                         << kMaxRegistersPerThread;
  return success();
}

//===----------------------------------------------------------------------===//
// Layout and shape
//===----------------------------------------------------------------------===//

LogicalResult LayoutCastOp::verify() {
  return verifyLayoutFitsShape(
      getNewLayout(), getX().getType().getShape(),
      [&] { return emitOpError() << "`new_layout`: "; });
}

LogicalResult BroadcastInDimOp::verify() {
  auto operandType = getOperand().getType();
  auto resultType = getResult().getType();
  ArrayRef<int64_t> dims = getBroadcastDimensions();
  if (operandType.getElementType() != resultType.getElementType())
    return emitOpError() << "`operand` element type "
                         << operandType.getElementType()
                         << " does not match the result element type "
                         << resultType.getElementType();
  if (operandType.getRank() > resultType.getRank())
    return emitOpError() << "`operand` has rank " << operandType.getRank()
                         << ", larger than the result rank "
                         << resultType.getRank();
  if (static_cast<int64_t>(dims.size()) != operandType.getRank())
    return emitOpError() << "`broadcast_dimensions` has " << dims.size()
                         << " entries, but `operand` has rank "
                         << operandType.getRank();
  for (auto [i, dim] : llvm::enumerate(dims)) {
    if (dim < 0 || dim >= resultType.getRank())
      return emitOpError() << "`broadcast_dimensions` entry " << i << " is "
                           << dim << ", outside the result rank range [0, "
                           << resultType.getRank() << ")";
    if (i > 0 && dim <= dims[i - 1])
      return emitOpError() << "`broadcast_dimensions` " << formatShape(dims)
                           << " must be strictly increasing";
    int64_t from = operandType.getDimSize(i), to = resultType.getDimSize(dim);
    if (from != 1 && from != to)
      return emitOpError() << "`operand` dim " << i << " has size " << from
                           << ", but it maps to result dim " << dim
                           << " of size " << to << "; sizes must match or be 1";
  }
  return success();
}

LogicalResult BroadcastedIotaOp::verify() {
  VectorType type = getResult().getType();
  int64_t dimension = getDimensionAttr().getInt();
  if (dimension < 0 || dimension >= type.getRank())
    return emitOpError() << "`dimension` " << dimension
                         << " is outside the result rank range [0, "
                         << type.getRank() << ")";
  return success();
}

LogicalResult OptimizationBarrierOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &inferredReturnTypes) {
  llvm::append_range(inferredReturnTypes, operands.getTypes());
  return success();
}

static int64_t elementByteWidth(Type type) {
  if (isa<BarrierType>(type))
    return 8;
  if (type.isIntOrIndexOrFloat() && !type.isIndex())
    return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
  return 1;
}

LogicalResult SliceSMEMOp::verify() {
  MemRefType type = getResult().getType();
  if (failed(verifyInSharedMemory(*this, "result", type)))
    return failure();
  int64_t offset = getOffsetAttr().getInt();
  if (offset < 0)
    return emitOpError() << "`offset` must be non-negative, but it is "
                         << offset;
  int64_t align = elementByteWidth(type.getElementType());
  if (offset % align != 0)
    return emitOpError() << "`offset` " << offset
                         << " is not a multiple of the element size (" << align
                         << " bytes of " << type.getElementType() << ")";
  return success();
}

LogicalResult WithTransformsOp::verify() {
  MemRefType type = getRef().getType();
  if (failed(verifyInSharedMemory(*this, "ref", type)))
    return failure();
  TileTransformAttr tile;
  bool seenSwizzle = false;
  for (Attribute transform : getTransforms()) {
    if (auto tileAttr = dyn_cast<TileTransformAttr>(transform)) {
      if (tile || seenSwizzle)
        return emitOpError() << "`transforms` may hold one tile, and it must "
                                "come before the swizzle";
      tile = tileAttr;
    } else if (isa<SwizzleTransformAttr>(transform)) {
      if (seenSwizzle)
        return emitOpError() << "`transforms` holds more than one swizzle";
      seenSwizzle = true;
    } else {
      return emitOpError() << "`transforms` entries must be "
                              "#mosaic_gpu.tile or #mosaic_gpu.swizzle, got "
                           << transform;
    }
  }
  if (!tile)
    return success();
  ArrayRef<int64_t> tiling = tile.getTiling().asArrayRef();
  if (static_cast<int64_t>(tiling.size()) > type.getRank())
    return emitOpError() << "tile " << formatShape(tiling) << " has rank "
                         << tiling.size() << ", larger than the rank "
                         << type.getRank() << " of `ref`";
  ArrayRef<int64_t> tiled = type.getShape().take_back(tiling.size());
  for (auto [dim, size] : llvm::zip_equal(tiled, tiling))
    if (!ShapedType::isDynamic(dim) && dim > size && dim % size != 0)
      return emitOpError() << "tile " << formatShape(tiling)
                           << " does not divide `ref` shape "
                           << formatShape(type.getShape()) << ": " << dim
                           << " is neither smaller than nor a multiple of "
                           << size;
  return success();
}

LogicalResult AssumeMultipleOp::verify() {
  int64_t multiple = getMultipleAttr().getInt();
  if (multiple <= 0)
    return emitOpError() << "`multiple` must be positive, but it is "
                         << multiple;
  return success();
}

//===----------------------------------------------------------------------===//
// Custom primitives
//===----------------------------------------------------------------------===//

LogicalResult CustomPrimitiveOp::verify() {
  SmallVector<VectorType> vectorOperands;
  size_t smemOperands = 0;
  for (Value operand : getOperands()) {
    if (isRegisterVector(operand))
      vectorOperands.push_back(cast<VectorType>(operand.getType()));
    else if (isSharedBuffer(operand))
      ++smemOperands;
  }
  if (getInLayouts().size() != vectorOperands.size())
    return emitOpError() << "`in_layouts` has " << getInLayouts().size()
                         << " entries, but there are " << vectorOperands.size()
                         << " vector operands";
  if (getInTransforms().size() != smemOperands)
    return emitOpError() << "`in_transforms` has " << getInTransforms().size()
                         << " entries, but there are " << smemOperands
                         << " shared-memory ref operands";

  SmallVector<VectorType> vectorResults;
  for (auto [i, type] : llvm::enumerate(getResultTypes())) {
    if (auto vector = dyn_cast<VectorType>(type))
      vectorResults.push_back(vector);
    else if (!type.isIntOrIndexOrFloat())
      return emitOpError() << "result #" << i << " has type " << type
                           << "; custom primitives return vectors or scalars";
  }
  if (getOutLayouts().size() != vectorResults.size())
    return emitOpError() << "`out_layouts` has " << getOutLayouts().size()
                         << " entries, but there are " << vectorResults.size()
                         << " vector results";

  auto checkLayouts = [&](ArrayAttr layouts, ArrayRef<VectorType> vectors,
                          StringRef name) -> LogicalResult {
    for (auto [i, layout, vector] : llvm::enumerate(layouts, vectors))
      if (failed(verifyLayoutFitsShape(layout, vector.getShape(), [&] {
            return emitOpError() << "`" << name << "` entry " << i << ": ";
          })))
        return failure();
    return success();
  };
  if (failed(checkLayouts(getInLayouts(), vectorOperands, kInLayoutsAttr)) ||
      failed(checkLayouts(getOutLayouts(), vectorResults, kOutLayoutsAttr)))
    return failure();

  for (auto [i, transforms] : llvm::enumerate(getInTransforms())) {
    auto list = dyn_cast<ArrayAttr>(transforms);
    if (!list || !llvm::all_of(list, [](Attribute transform) {
          return isa<TileTransformAttr, SwizzleTransformAttr>(transform);
        }))
      return emitOpError() << "`in_transforms` entry " << i
                           << " must be a list of #mosaic_gpu.tile and "
                              "#mosaic_gpu.swizzle transforms, got "
                           << transforms;
  }
  return success();
}

LogicalResult CustomPrimitiveOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getArgumentTypes() != getOperands().getTypes())
    return emitOpError() << "body arguments must match the operands one to "
                            "one: the body takes "
                         << body.getNumArguments() << " arguments, there are "
                         << getNumOperands() << " operands";
  return success();
}

LogicalResult ReturnOp::verify() {
  auto parent = cast<CustomPrimitiveOp>((*this)->getParentOp());
  TypeRange results = parent.getResultTypes();
  if (getNumOperands() != results.size())
    return emitOpError() << "returns " << getNumOperands()
                         << " values, but the enclosing custom_primitive has "
                         << results.size() << " results";
  for (auto [i, operand, result] : llvm::enumerate(getOperandTypes(), results))
    if (operand != result)
      return emitOpError() << "operand #" << i << " has type " << operand
                           << ", but the enclosing custom_primitive result #"
                           << i << " has type " << result;
  return success();
}

//===----------------------------------------------------------------------===//
// Multiple devices
//===----------------------------------------------------------------------===//

LogicalResult RemoteRefOp::verify() {
  if (failed(verifyInGlobalMemory(*this, "ref", getRef().getType())))
    return failure();
  if (getRef().getDefiningOp<RemoteRefOp>())
    return emitOpError() << "`ref` is already a remote view; take the "
                            "remote_ref of the symmetric argument itself, "
                            "not of another remote_ref";
  if (!symmetricArgument(getRef()))
    return emitOpError() << "`ref` must be a kernel argument marked `"
                         << kSymmetricAttr
                         << "`, the only buffers that exist on every device";
  return success();
}

/// Checks what both semaphore ops require of `semaphores[indices]`: global
/// memory, one index per dim, and a symmetric argument or a remote view of
/// one.
static LogicalResult verifySemaphore(Operation *op, Value semaphores,
                                     ValueRange indices) {
  auto type = cast<MemRefType>(semaphores.getType());
  if (failed(verifyInGlobalMemory(op, "semaphores", type)))
    return failure();
  if (static_cast<int64_t>(indices.size()) != type.getRank())
    return op->emitOpError()
           << "has " << indices.size() << " indices, but `semaphores` has rank "
           << type.getRank();
  if (!symmetricArgument(semaphores) &&
      !semaphores.getDefiningOp<RemoteRefOp>())
    return op->emitOpError()
           << "`semaphores` must be a kernel argument marked `"
           << kSymmetricAttr << "` or a remote_ref of one";
  return success();
}

LogicalResult SemaphoreSignalOp::verify() {
  if (failed(verifySemaphore(*this, getSemaphores(), getIndices())))
    return failure();
  if (getDevice() && getSemaphores().getDefiningOp<RemoteRefOp>())
    return emitOpError() << "names a device with `on`, but `semaphores` is "
                            "already a remote view; signal the symmetric "
                            "argument on the device, or the view without `on`";
  return success();
}

LogicalResult SemaphoreWaitOp::verify() {
  if (failed(verifySemaphore(*this, getSemaphores(), getIndices())))
    return failure();
  if (getSemaphores().getDefiningOp<RemoteRefOp>())
    return emitOpError() << "waits on a remote view; a device waits on its "
                            "own semaphores only";
  return success();
}

//===----------------------------------------------------------------------===//
// Index analysis
//===----------------------------------------------------------------------===//

static int64_t knownMultipleAt(Value value, int depth) {
  // Deep chains are rare; stopping says "unknown", which is always safe.
  if (depth > 8)
    return 1;
  APInt constant;
  if (matchPattern(value, m_ConstantInt(&constant)))
    return std::abs(constant.getSExtValue());
  Operation *def = value.getDefiningOp();
  if (!def)
    return 1;
  if (auto assume = dyn_cast<AssumeMultipleOp>(def))
    return assume.getMultipleAttr().getInt();
  if (isa<arith::MulIOp>(def))
    return knownMultipleAt(def->getOperand(0), depth + 1) *
           knownMultipleAt(def->getOperand(1), depth + 1);
  if (isa<arith::AddIOp, arith::SubIOp>(def))
    return std::gcd(knownMultipleAt(def->getOperand(0), depth + 1),
                    knownMultipleAt(def->getOperand(1), depth + 1));
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
          arith::ExtUIOp, arith::TruncIOp>(def))
    return knownMultipleAt(def->getOperand(0), depth + 1);
  return 1;
}

int64_t mosaic_gpu::knownMultiple(Value value) {
  return knownMultipleAt(value, 0);
}
