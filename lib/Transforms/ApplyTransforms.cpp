//===- ApplyTransforms.cpp - The mosaic-gpu-apply-transforms pass ---------===//
//
// Rewrites shared-memory buffers with an inferred tiling to their tiled types
// and adapts their users (see Passes.td for the contract). Types change in
// place: buffer definitions first, then values flowing through views and
// control flow, then the ops that consume buffers.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Transforms/Passes.h"

#include "mosaic/Dialect/MosaicGPU/Annotations.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

namespace mosaic {
#define GEN_PASS_DEF_MOSAICGPUAPPLYTRANSFORMS
#include "mosaic/Transforms/Passes.h.inc"
} // namespace mosaic

using namespace mlir;
using mosaic_gpu::isSharedBuffer;
using namespace mosaic;
using layout::formatShape;
using layout::Shape;

namespace {

class TransformApplier {
public:
  explicit TransformApplier(Operation *root) : root(root) {}

  LogicalResult run();

private:
  LogicalResult retypeDefinition(mosaic_gpu::SliceSMEMOp slice);
  LogicalResult rewriteSubview(memref::SubViewOp subview);
  LogicalResult rewriteReshape(Operation *op);
  LogicalResult rewriteTranspose(memref::TransposeOp transpose);
  LogicalResult rewriteTransfer(Operation *op, Value gmem, Value smem,
                                MutableOperandRange gmemOperand,
                                MutableOperandRange indices,
                                ArrayRef<int64_t> sliceLengths);
  LogicalResult rewriteEdgeTransfer(Operation *op, Value smem,
                                    ArrayRef<int64_t> sliceLengths,
                                    const Shape &tile);
  LogicalResult markConsumer(Operation *op);
  /// Gives `to` the type of `from`, recording its tile.
  void follow(Value from, Value to) {
    auto it = tiles.find(from);
    if (it == tiles.end() || from.getType() == to.getType())
      return;
    to.setType(from.getType());
    tiles[to] = it->second;
  }
  bool isTiled(Value value) const { return tiles.count(value); }

  Operation *root;
  /// The effective tile of every buffer value that now has a tiled type.
  DenseMap<Value, Shape> tiles;
  SmallVector<Operation *> toErase;
};

LogicalResult TransformApplier::retypeDefinition(mosaic_gpu::SliceSMEMOp op) {
  Value result = op.getResult();
  if (!isSharedBuffer(result))
    return success();
  if (failed(mosaic_gpu::verifyTransformsAnnotation(
          op, mosaic_gpu::kOutTransformsAttr)))
    return failure();
  FailureOr<layout::SmemTransforms> transforms =
      mosaic_gpu::outTransformsFor(op->getResult(0));
  if (failed(transforms))
    return failure();
  // TMA and wgmma compute the swizzle from the address, and it repeats every
  // 8 rows of its width: a swizzled buffer starts on such a boundary.
  int64_t repeat = mosaic_gpu::swizzleRepeatBytes(transforms->swizzle);
  int64_t offset = op.getOffsetAttr().getInt();
  if (offset % repeat != 0)
    return op.emitOpError()
           << "carves a buffer with a " << transforms->swizzle
           << "-byte swizzle at offset " << offset
           << "; it must start at a multiple of " << repeat
           << " bytes (the swizzle repeats every 8 rows of "
           << transforms->swizzle
           << " bytes, and TMA and wgmma compute it from the address)";
  if (!transforms->tile)
    return success();
  auto type = cast<MemRefType>(result.getType());
  unsigned bitwidth = type.getElementType().isIntOrFloat()
                          ? type.getElementType().getIntOrFloatBitWidth()
                          : 8;
  if (llvm::Error error =
          layout::checkSmemTransforms(*transforms, type.getShape(), bitwidth))
    return op.emitOpError() << "cannot be stored with " << transforms->str()
                            << ": " << llvm::toString(std::move(error));
  // A dim smaller than its tile is tiled by itself.
  Shape tile = *transforms->tile;
  ArrayRef<int64_t> shape = type.getShape();
  for (size_t i = 0; i < tile.size(); ++i)
    tile[i] = std::min(tile[i], shape[shape.size() - tile.size() + i]);
  layout::SmemTransforms effective = *transforms;
  effective.tile = tile;
  Shape tiledShape =
      llvm::cantFail(layout::tiledSmemShape(effective, type.getShape()));
  result.setType(MemRefType::get(tiledShape, type.getElementType(),
                                 MemRefLayoutAttrInterface(),
                                 type.getMemorySpace()));
  tiles[result] = tile;
  return success();
}

LogicalResult TransformApplier::rewriteSubview(memref::SubViewOp subview) {
  Value source = subview.getSource();
  auto it = tiles.find(source);
  if (it == tiles.end())
    return success();
  Shape tile = it->second;
  auto sourceType = cast<MemRefType>(source.getType());
  int64_t tileRank = tile.size();
  int64_t logicalRank = sourceType.getRank() - tileRank;
  int64_t firstTiled = logicalRank - tileRank;
  SmallVector<OpFoldResult> offsets = subview.getMixedOffsets();
  SmallVector<OpFoldResult> sizes = subview.getMixedSizes();
  SmallVector<OpFoldResult> strides = subview.getMixedStrides();
  OpBuilder builder(subview);
  Location loc = subview.getLoc();
  SmallVector<OpFoldResult> newOffsets, newSizes, newStrides;
  Shape resultShape;
  // The source already has its tiled type, so compare the logical sizes with
  // the (still logical) result type to find the dims the subview drops.
  std::optional<llvm::SmallDenseSet<unsigned>> droppedDims =
      computeRankReductionMask(subview.getStaticSizes(),
                               subview.getType().getShape());
  if (!droppedDims)
    return subview.emitOpError() << "has a rank reduction the pass cannot "
                                    "follow through a tiled buffer";
  auto dropped = [&](int64_t dim) { return droppedDims->contains(dim); };
  for (int64_t dim = 0; dim < logicalRank; ++dim) {
    std::optional<int64_t> stride = getConstantIntValue(strides[dim]);
    if (stride != 1)
      return subview.emitOpError()
             << "cannot slice a tiled buffer with a non-unit stride";
    if (dim < firstTiled) {
      newOffsets.push_back(offsets[dim]);
      newSizes.push_back(sizes[dim]);
      if (!dropped(dim))
        resultShape.push_back(*getConstantIntValue(sizes[dim]));
      continue;
    }
    int64_t t = tile[dim - firstTiled];
    std::optional<int64_t> size = getConstantIntValue(sizes[dim]);
    if (!size || *size % t != 0 || dropped(dim))
      return subview.emitOpError()
             << "cannot take a slice of size "
             << (size ? std::to_string(*size) : std::string("?"))
             << " along dim " << dim << " of a buffer tiled by "
             << formatShape(tile) << ": slices must span whole tiles";
    // The offset is a whole number of tiles (inference checked it).
    OpFoldResult offset = offsets[dim];
    if (std::optional<int64_t> value = getConstantIntValue(offset)) {
      newOffsets.push_back(builder.getIndexAttr(*value / t));
    } else {
      Value divisor = arith::ConstantIndexOp::create(builder, loc, t);
      newOffsets.push_back(
          arith::DivUIOp::create(builder, loc, cast<Value>(offset), divisor)
              .getResult());
    }
    newSizes.push_back(builder.getIndexAttr(*size / t));
    resultShape.push_back(*size / t);
  }
  for (int64_t t : tile) {
    newOffsets.push_back(builder.getIndexAttr(0));
    newSizes.push_back(builder.getIndexAttr(t));
    resultShape.push_back(t);
  }
  newStrides.assign(newOffsets.size(), builder.getIndexAttr(1));
  MemRefType resultType = memref::SubViewOp::inferRankReducedResultType(
      resultShape, sourceType, newOffsets, newSizes, newStrides);
  auto replacement = memref::SubViewOp::create(
      builder, loc, resultType, source, newOffsets, newSizes, newStrides);
  replacement->setDiscardableAttrs(subview->getDiscardableAttrDictionary());
  subview.getResult().replaceAllUsesWith(replacement.getResult());
  tiles[replacement.getResult()] = tile;
  toErase.push_back(subview);
  return success();
}

LogicalResult TransformApplier::rewriteReshape(Operation *op) {
  Value source = op->getOperand(0);
  auto it = tiles.find(source);
  if (it == tiles.end())
    return success();
  Shape tile = it->second;
  // Inference equated source and result only when the minor dim is kept and
  // the second-minor dim regroups whole tiles, so the tiled reshape keeps
  // the logical groups (now over whole tiles) and the tile dims as they are.
  auto expand = dyn_cast<memref::ExpandShapeOp>(op);
  SmallVector<ReassociationIndices> groups =
      expand ? expand.getReassociationIndices()
             : cast<memref::CollapseShapeOp>(op).getReassociationIndices();
  auto resultType = cast<MemRefType>(op->getResult(0).getType());
  if (tile.size() != 2 || resultType.getRank() < 2)
    return op->emitOpError()
           << "cannot reshape a buffer tiled by " << formatShape(tile);
  int64_t fineRank = 0;
  for (const ReassociationIndices &group : groups)
    fineRank += group.size();
  for (int64_t t = 0; t < 2; ++t)
    groups.push_back({fineRank + t});
  Shape resultShape(resultType.getShape());
  for (int64_t i = 0; i < 2; ++i)
    resultShape[resultShape.size() - 2 + i] /= tile[i];
  resultShape.append(tile.begin(), tile.end());
  OpBuilder builder(op);
  Operation *replacement;
  if (expand)
    replacement = memref::ExpandShapeOp::create(builder, op->getLoc(),
                                                resultShape, source, groups);
  else
    replacement =
        memref::CollapseShapeOp::create(builder, op->getLoc(), source, groups);
  replacement->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  op->getResult(0).replaceAllUsesWith(replacement->getResult(0));
  tiles[replacement->getResult(0)] = tile;
  toErase.push_back(op);
  return success();
}

LogicalResult TransformApplier::rewriteTranspose(memref::TransposeOp op) {
  Value source = op.getIn();
  auto it = tiles.find(source);
  if (it == tiles.end())
    return success();
  Shape tile = it->second;
  AffineMap permutation = op.getPermutation();
  if (permutation.isIdentity()) {
    follow(source, op.getResult());
    return success();
  }
  // Inference tiles a transposed view only when the permutation swaps the
  // two minor dims (and the tile with them), so the tiled view swaps both
  // the tile-count dims and the tile dims: (.., R / t0, C / t1, t0, t1)
  // becomes (.., C / t1, R / t0, t1, t0) with the strides following.
  unsigned rank = permutation.getNumResults();
  bool swapsMinor = tile.size() == 2 && rank >= 2 &&
                    permutation.getDimPosition(rank - 2) == rank - 1 &&
                    permutation.getDimPosition(rank - 1) == rank - 2;
  for (unsigned i = 0; i + 2 < rank; ++i)
    swapsMinor &= permutation.getDimPosition(i) == i;
  if (!swapsMinor)
    return op.emitOpError()
           << "permutes a buffer tiled by " << formatShape(tile)
           << " other than by swapping its two minor dims, which the tiled "
              "buffer cannot follow";
  SmallVector<unsigned> tiledPermutation;
  for (unsigned i = 0; i + 2 < rank; ++i)
    tiledPermutation.push_back(i);
  tiledPermutation.append({rank - 1, rank - 2, rank + 1, rank});
  OpBuilder builder(op);
  auto replacement = memref::TransposeOp::create(
      builder, op.getLoc(), source,
      AffineMapAttr::get(AffineMap::getPermutationMap(tiledPermutation,
                                                      builder.getContext())));
  replacement->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  op.getResult().replaceAllUsesWith(replacement.getResult());
  tiles[replacement.getResult()] = {tile[1], tile[0]};
  toErase.push_back(op);
  return success();
}

LogicalResult TransformApplier::rewriteTransfer(
    Operation *op, Value gmem, Value smem, MutableOperandRange gmemOperand,
    MutableOperandRange indicesOperand, ArrayRef<int64_t> sliceLengths) {
  auto it = tiles.find(smem);
  if (it == tiles.end())
    return success();
  Shape tile = it->second;
  int64_t tileRank = tile.size();
  auto gmemType = cast<MemRefType>(gmem.getType());
  int64_t rank = gmemType.getRank();
  // The tiled buffer dims are the last `tileRank` global dims; a squeezed
  // dim among them would leave the tiling nothing to apply to.
  for (int64_t dim = rank - tileRank; dim < rank; ++dim)
    if (sliceLengths[dim] == -1)
      return op->emitOpError() << "squeezes global dim " << dim
                               << ", which the shared-memory tiling "
                               << formatShape(tile) << " covers";
  if (!gmemType.hasStaticShape())
    return op->emitOpError() << "needs a static global shape to tile it by "
                             << formatShape(tile) << ", but it is " << gmemType;

  // View the global buffer as (.., d0 / t0, t0, d1 / t1, t1), then move the
  // tile dims last: (.., d0 / t0, d1 / t1, t0, t1).
  SmallVector<ReassociationIndices> reassociation;
  Shape expandedShape;
  for (int64_t dim = 0; dim < rank; ++dim) {
    int64_t size = gmemType.getDimSize(dim);
    if (dim < rank - tileRank) {
      reassociation.push_back({static_cast<int64_t>(expandedShape.size())});
      expandedShape.push_back(size);
      continue;
    }
    int64_t t = tile[dim - (rank - tileRank)];
    if (sliceLengths[dim] % t != 0)
      return op->emitOpError()
             << "cannot tile global dim " << dim << " (size " << size
             << ", slice length " << sliceLengths[dim] << ") by " << t
             << "; both must be multiples of the tile";
    if (mosaic_gpu::knownMultiple(indicesOperand[dim].get()) % t != 0) {
      if (succeeded(rewriteEdgeTransfer(op, smem, sliceLengths, tile)))
        return success();
      return op->emitOpError()
             << "starts global dim " << dim << " at an index not known to be "
             << "a multiple of the tile (" << t << "), which only a buffer "
             << "of 2-D tiles or one column of tiles can take";
    }
    if (size % t != 0) {
      if (succeeded(rewriteEdgeTransfer(op, smem, sliceLengths, tile)))
        return success();
      return op->emitOpError()
             << "cannot tile global dim " << dim << " (size " << size
             << ", slice length " << sliceLengths[dim] << ") by " << t
             << "; both must be multiples of the tile, unless the tiled "
                "buffer holds the slice as row-major boxes: one column of "
                "tiles, or one row of 2-D tiles";
    }
    int64_t first = expandedShape.size();
    reassociation.push_back({first, first + 1});
    expandedShape.push_back(size / t);
    expandedShape.push_back(t);
  }
  OpBuilder builder(op);
  Location loc = op->getLoc();
  auto expanded = memref::ExpandShapeOp::create(builder, loc, expandedShape,
                                                gmem, reassociation);
  SmallVector<unsigned> permutation;
  for (int64_t dim = 0; dim < rank - tileRank; ++dim)
    permutation.push_back(dim);
  for (int64_t i = 0; i < tileRank; ++i)
    permutation.push_back(rank - tileRank + 2 * i);
  for (int64_t i = 0; i < tileRank; ++i)
    permutation.push_back(rank - tileRank + 2 * i + 1);
  auto transposed = memref::TransposeOp::create(
      builder, loc, expanded.getResult(),
      AffineMapAttr::get(
          AffineMap::getPermutationMap(permutation, builder.getContext())));

  SmallVector<Value> oldIndices;
  for (OpOperand &index : indicesOperand)
    oldIndices.push_back(index.get());
  SmallVector<Value> indices;
  SmallVector<int64_t> lengths;
  for (int64_t dim = 0; dim < rank; ++dim) {
    if (dim < rank - tileRank) {
      indices.push_back(oldIndices[dim]);
      lengths.push_back(sliceLengths[dim]);
      continue;
    }
    int64_t t = tile[dim - (rank - tileRank)];
    Value divisor = arith::ConstantIntOp::create(builder, loc,
                                                 oldIndices[dim].getType(), t);
    indices.push_back(
        arith::DivUIOp::create(builder, loc, oldIndices[dim], divisor));
    lengths.push_back(sliceLengths[dim] / t);
  }
  Value zero =
      arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), 0);
  for (int64_t t : tile) {
    indices.push_back(zero);
    lengths.push_back(t);
  }
  gmemOperand.assign(transposed.getResult());
  indicesOperand.assign(indices);
  op->setAttr("slice_lengths", builder.getDenseI64ArrayAttr(lengths));
  return markConsumer(op);
}

// A tiled view of the global buffer needs every global dim to be a multiple
// of its tile, and every slice to start at one. A shape or a start that is
// not can still be copied through the global buffer itself, where TMA starts
// a box at any element and fills and clips at the tensor's real edges, when
// the tiled buffer holds the slice as row-major boxes:
// - one column of tiles (every tile dim but the outermost spans one tile):
//   the buffer is the slice in row-major order, one copy;
// - 2-D tiles: the buffer is one (t0, t1) box per tile, one copy each; the
//   stores commit one bulk group together, as the single store did.
LogicalResult
TransformApplier::rewriteEdgeTransfer(Operation *op, Value smem,
                                      ArrayRef<int64_t> sliceLengths,
                                      const Shape &tile) {
  int64_t tileRank = tile.size();
  int64_t rank = sliceLengths.size();
  ArrayRef<int64_t> tiledLengths = sliceLengths.take_back(tileRank);
  bool oneColumn = true;
  for (int64_t i = 1; i < tileRank; ++i)
    oneColumn &= tiledLengths[i] == tile[i];
  if (!oneColumn && tileRank != 2)
    return failure();

  auto smemType = cast<MemRefType>(smem.getType());
  int64_t leading = smemType.getRank() - 2 * tileRank;
  // Collapses (.., 1.., 1, t0, t1..) or (.., n, 1.., t0, t1..) into
  // (.., n * t0, t1..).
  auto collapse = [&](OpBuilder &builder, Value tiled) -> Value {
    SmallVector<ReassociationIndices> groups;
    for (int64_t i = 0; i < leading; ++i)
      groups.push_back({i});
    ReassociationIndices outer;
    for (int64_t i = 0; i <= tileRank; ++i)
      outer.push_back(leading + i);
    groups.push_back(outer);
    for (int64_t i = 1; i < tileRank; ++i)
      groups.push_back({leading + tileRank + i});
    Value collapsed =
        memref::CollapseShapeOp::create(builder, op->getLoc(), tiled, groups);
    tiles[collapsed] = tile;
    return collapsed;
  };
  auto setShared = [&](Operation *copy, Value buffer) {
    if (auto load = dyn_cast<mosaic_gpu::AsyncLoadOp>(copy))
      load.getDestinationMutable().assign(buffer);
    else
      cast<mosaic_gpu::AsyncStoreOp>(copy).getSourceMutable().assign(buffer);
  };

  OpBuilder builder(op);
  if (oneColumn) {
    setShared(op, collapse(builder, smem));
    return markConsumer(op);
  }

  // One copy per tile, at the tile's row and column offsets.
  int64_t rowTiles = tiledLengths[0] / tile[0];
  int64_t columnTiles = tiledLengths[1] / tile[1];
  auto store = dyn_cast<mosaic_gpu::AsyncStoreOp>(op);
  bool commit = store && store.getCommitGroup();
  auto indicesOf = [&](Operation *copy) -> MutableOperandRange {
    return store ? cast<mosaic_gpu::AsyncStoreOp>(copy).getIndicesMutable()
                 : cast<mosaic_gpu::AsyncLoadOp>(copy).getIndicesMutable();
  };
  MutableOperandRange indices = indicesOf(op);
  Value firstRow = indices[rank - 2].get();
  Value firstColumn = indices[rank - 1].get();
  SmallVector<int64_t> lengths(sliceLengths);
  lengths[rank - 2] = tile[0];
  lengths[rank - 1] = tile[1];
  Location loc = op->getLoc();
  for (int64_t row = 0; row < rowTiles; ++row) {
    for (int64_t column = 0; column < columnTiles; ++column) {
      SmallVector<OpFoldResult> offsets, sizes, strides;
      for (int64_t d = 0; d < smemType.getRank(); ++d) {
        std::optional<int64_t> at;
        if (d == leading)
          at = row;
        else if (d == leading + 1)
          at = column;
        offsets.push_back(builder.getIndexAttr(at.value_or(0)));
        sizes.push_back(builder.getIndexAttr(at ? 1 : smemType.getDimSize(d)));
        strides.push_back(builder.getIndexAttr(1));
      }
      Value box =
          collapse(builder, memref::SubViewOp::create(builder, loc, smem,
                                                      offsets, sizes, strides));
      Operation *copy = builder.clone(*op);
      setShared(copy, box);
      OpBuilder before(copy);
      auto shifted = [&](Value first, int64_t by) -> Value {
        if (by == 0)
          return first;
        return arith::AddIOp::create(
            before, loc, first,
            arith::ConstantIntOp::create(before, loc, first.getType(), by));
      };
      MutableOperandRange copyIndices = indicesOf(copy);
      copyIndices[rank - 2].assign(shifted(firstRow, row * tile[0]));
      copyIndices[rank - 1].assign(shifted(firstColumn, column * tile[1]));
      copy->setAttr("slice_lengths", builder.getDenseI64ArrayAttr(lengths));
      bool last = row + 1 == rowTiles && column + 1 == columnTiles;
      if (store && !last) {
        // The last copy commits the group (and waits, unless deferred).
        cast<mosaic_gpu::AsyncStoreOp>(copy).setCommitGroup(false);
        copy->removeAttr("defer_wait");
      } else if (store) {
        cast<mosaic_gpu::AsyncStoreOp>(copy).setCommitGroup(commit);
      }
      if (failed(markConsumer(copy)))
        return failure();
    }
  }
  toErase.push_back(op);
  return success();
}

/// Records the effective tiles in the op's `in_transforms` and marks it.
LogicalResult TransformApplier::markConsumer(Operation *op) {
  if (failed(mosaic_gpu::verifyTransformsAnnotation(
          op, mosaic_gpu::kInTransformsAttr)))
    return failure();
  SmallVector<layout::SmemTransforms> updated;
  for (OpOperand &use : op->getOpOperands()) {
    Value operand = use.get();
    if (!isSharedBuffer(operand))
      continue;
    FailureOr<layout::SmemTransforms> transforms =
        mosaic_gpu::inTransformsFor(use);
    if (failed(transforms))
      return failure();
    auto it = tiles.find(operand);
    if (it != tiles.end()) {
      transforms->tile = it->second;
    } else if (transforms->tile) {
      // A buffer the walk did not trace to its slice_smem (a function
      // argument, say) keeps its type, which must already be tiled.
      auto type = cast<MemRefType>(operand.getType());
      ArrayRef<int64_t> shape = type.getShape();
      ArrayRef<int64_t> tile = *transforms->tile;
      if (shape.size() < 2 * tile.size() ||
          shape.take_back(tile.size()) != tile)
        return op->emitOpError()
               << "operand #" << use.getOperandNumber() << " must be tiled by "
               << formatShape(tile) << ", but it is " << type
               << ": mosaic-gpu-apply-transforms only retypes buffers it "
                  "traces back to a mosaic_gpu.slice_smem";
    }
    updated.push_back(*transforms);
  }
  mosaic_gpu::setInTransforms(op, updated);
  mosaic_gpu::markTransformsApplied(op);
  return success();
}

LogicalResult TransformApplier::run() {
  // 1. Buffer definitions and everything that forwards a buffer.
  // The staged walk visits an op before its regions (and between and after
  // them), so loop arguments are retyped before their uses.
  WalkResult walk =
      root->walk([&](Operation *op, const WalkStage &stage) -> WalkResult {
        if (auto slice = dyn_cast<mosaic_gpu::SliceSMEMOp>(op)) {
          return failed(retypeDefinition(slice)) ? WalkResult::interrupt()
                                                 : WalkResult::advance();
        }
        if (auto with = dyn_cast<mosaic_gpu::WithTransformsOp>(op)) {
          follow(with.getRef(), with.getResult());
          if (isTiled(with.getRef())) {
            with.getResult().replaceAllUsesWith(with.getRef());
            toErase.push_back(with);
          }
          return WalkResult::advance();
        }
        if (auto subview = dyn_cast<memref::SubViewOp>(op))
          return failed(rewriteSubview(subview)) ? WalkResult::interrupt()
                                                 : WalkResult::advance();
        if (isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(op))
          return failed(rewriteReshape(op)) ? WalkResult::interrupt()
                                            : WalkResult::advance();
        if (auto transpose = dyn_cast<memref::TransposeOp>(op))
          return failed(rewriteTranspose(transpose)) ? WalkResult::interrupt()
                                                     : WalkResult::advance();
        if (auto cast = dyn_cast<memref::CastOp>(op)) {
          // Inference only equates casts between identical buffers, so the
          // result simply takes the tiled type.
          follow(cast.getSource(), cast.getResult());
          return WalkResult::advance();
        }
        if (auto loop = dyn_cast<scf::ForOp>(op)) {
          if (stage.isBeforeAllRegions())
            for (auto [init, arg, result] :
                 llvm::zip_equal(loop.getInitArgs(), loop.getRegionIterArgs(),
                                 loop.getResults())) {
              follow(init, arg);
              follow(init, result);
            }
          return WalkResult::advance();
        }
        if (auto loop = dyn_cast<scf::WhileOp>(op)) {
          if (stage.isBeforeAllRegions())
            for (auto [init, arg] :
                 llvm::zip_equal(loop.getInits(), loop.getBeforeArguments()))
              follow(init, arg);
          else if (stage.isAfterRegion(0))
            for (auto [forwarded, arg, result] :
                 llvm::zip_equal(loop.getConditionOp().getArgs(),
                                 loop.getAfterArguments(), loop.getResults())) {
              follow(forwarded, arg);
              follow(forwarded, result);
            }
          return WalkResult::advance();
        }
        if (isa<scf::IfOp, scf::IndexSwitchOp>(op)) {
          if (stage.isAfterAllRegions() && !op->getRegion(0).empty())
            for (auto [yielded, result] : llvm::zip_equal(
                     op->getRegion(0).front().getTerminator()->getOperands(),
                     op->getResults()))
              follow(yielded, result);
          return WalkResult::advance();
        }
        if (isa<mosaic_gpu::OptimizationBarrierOp>(op)) {
          for (auto [operand, result] :
               llvm::zip_equal(op->getOperands(), op->getResults()))
            follow(operand, result);
          return WalkResult::advance();
        }
        return WalkResult::advance();
      });
  if (walk.wasInterrupted())
    return failure();

  // 2. The ops that consume buffers.
  SmallVector<Operation *> consumers;
  root->walk([&](Operation *op) {
    if (llvm::any_of(op->getOperands(),
                     [&](Value operand) { return isTiled(operand); }))
      consumers.push_back(op);
  });
  for (Operation *op : consumers) {
    LogicalResult result = success();
    if (auto load = dyn_cast<mosaic_gpu::AsyncLoadOp>(op))
      result = rewriteTransfer(
          op, load.getSource(), load.getDestination(), load.getSourceMutable(),
          load.getIndicesMutable(), load.getSliceLengths());
    else if (auto store = dyn_cast<mosaic_gpu::AsyncStoreOp>(op))
      result =
          rewriteTransfer(op, store.getDestination(), store.getSource(),
                          store.getDestinationMutable(),
                          store.getIndicesMutable(), store.getSliceLengths());
    else if (isa<mosaic_gpu::VectorLoadOp, mosaic_gpu::VectorStoreOp,
                 mosaic_gpu::WGMMAOp>(op))
      result = markConsumer(op);
    else if (isa<memref::SubViewOp, memref::CollapseShapeOp,
                 memref::ExpandShapeOp, memref::TransposeOp, memref::CastOp,
                 mosaic_gpu::WithTransformsOp, scf::ForOp, scf::YieldOp,
                 scf::ConditionOp, scf::WhileOp,
                 mosaic_gpu::OptimizationBarrierOp>(op))
      result = success();
    else
      result = op->emitOpError()
               << "uses a shared-memory buffer whose tiling "
                  "mosaic-gpu-apply-transforms made explicit, and the pass "
                  "does not know how to rewrite this op for it";
    if (failed(result))
      return failure();
  }
  for (Operation *op : toErase)
    op->erase();
  return success();
}

struct ApplyTransformsPass
    : mosaic::impl::MosaicGPUApplyTransformsBase<ApplyTransformsPass> {
  void runOnOperation() override {
    if (failed(TransformApplier(getOperation()).run()))
      signalPassFailure();
  }
};

} // namespace
