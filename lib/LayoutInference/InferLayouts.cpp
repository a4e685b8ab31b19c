//===- InferLayouts.cpp - The mosaic-gpu-infer-layouts pass ---------------===//
//
// Builds a ConstraintSystem from a kernel and writes its solution back as
// layout and transform attributes. Each op kind contributes constraints
// through one rule function in the registry below; ops with the Elementwise
// trait share one rule.
//
// Sites: every vector value (op result or block argument) and every vector
// operand use gets a register variable; a use is related to the value it uses
// by a relayout, so that e.g. a splat constant can feed a tiled op. Every
// shared-memory buffer value gets one variable (buffers are never relaid).
//
//===----------------------------------------------------------------------===//

#include "mosaic/LayoutInference/Passes.h"

#include "ConstraintSystem.h"
#include "mosaic/Dialect/MosaicGPU/Annotations.h"
#include "mosaic/Dialect/MosaicGPU/AttributeBridge.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h"
#include "mosaic/Dialect/MosaicGPU/WgmmaInFlight.h"
#include "mosaic/Support/OpRuleRegistry.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <numeric>
#include <tuple>

namespace mosaic {
#define GEN_PASS_DEF_MOSAICGPUINFERLAYOUTS
#include "mosaic/LayoutInference/Passes.h.inc"
} // namespace mosaic

using namespace mlir;
using namespace mosaic;
using namespace mosaic::inference;
using layout::RegisterLayout;
using layout::SmemTransforms;
using mosaic_gpu::isRegisterVector;
using mosaic_gpu::isSharedBuffer;

namespace {

unsigned bitwidthOf(Type type) {
  if (type.isIndex())
    return 64;
  if (type.isIntOrFloat())
    return type.getIntOrFloatBitWidth();
  return 64;
}

/// A 2-D-or-more buffer whose second-minor dim is the contiguous one.
bool isTransposedBuffer(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return type.getRank() >= 2 &&
         succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides.back() != 1 && strides[strides.size() - 2] == 1;
}

class InferenceBuilder {
public:
  ConstraintSystem system;
  SmallVector<Operation *> ops;

  static Origin at(Operation *op, const char *what, int index = -1) {
    return Origin{op, what, index, /*isSite=*/false};
  }
  static Origin siteAt(Operation *op, const char *what, int index) {
    return Origin{op, what, index, /*isSite=*/true};
  }

  void createSites(Operation *root);
  LogicalResult applyRules();
  void annotate(const Solution &solution);

  VarId value(Value v) {
    auto it = valueVars.find(v);
    if (it != valueVars.end())
      return it->second;
    Operation *owner = v.getDefiningOp() ? v.getDefiningOp()
                                         : v.getParentRegion()->getParentOp();
    return createValue(v, owner, "value", -1);
  }
  VarId site(Operation *op, unsigned index) {
    return operandVars.lookup(&op->getOpOperand(index));
  }
  VarId result(Operation *op, unsigned index) {
    return value(op->getResult(index));
  }

  /// Equates all of `vars` with the first.
  void equateAll(ArrayRef<VarId> vars, Origin why) {
    if (vars.empty())
      return;
    for (VarId var : vars.drop_front())
      system.equate(vars.front(), var, why);
  }

  /// Relates the values flowing into and out of region-holding ops: every
  /// group is one value seen at several places (init, block argument, yield,
  /// result). Register values use operand sites for operands.
  void tieGroup(ArrayRef<OpOperand *> operands, ArrayRef<Value> values,
                Origin why) {
    SmallVector<VarId> vars;
    for (OpOperand *operand : operands) {
      if (isRegisterVector(operand->get()))
        vars.push_back(operandVars.lookup(operand));
      else if (isSharedBuffer(operand->get()))
        vars.push_back(value(operand->get()));
    }
    for (Value v : values)
      if (isRegisterVector(v) || isSharedBuffer(v))
        vars.push_back(value(v));
    if (vars.size() > 1)
      equateAll(vars, why);
  }

  /// slice_smem results that share an alias_id.
  llvm::DenseMap<int64_t, VarId> aliases;

private:
  VarId createValue(Value v, Operation *owner, const char *what, int index) {
    auto shaped = cast<ShapedType>(v.getType());
    unsigned bitwidth = bitwidthOf(shaped.getElementType());
    layout::Shape shape(shaped.getShape());
    VarId var =
        isRegisterVector(v)
            ? system.addRegister(shape, bitwidth, siteAt(owner, what, index))
            : system.addSmem(shape, bitwidth, siteAt(owner, what, index),
                             isTransposedBuffer(cast<MemRefType>(v.getType())));
    valueVars[v] = var;
    return var;
  }

  DenseMap<Value, VarId> valueVars;
  DenseMap<OpOperand *, VarId> operandVars;
};

void InferenceBuilder::createSites(Operation *root) {
  // Variables are created in program order, operands before results, which
  // is the order the search visits them in: a use is decided right after
  // its producer, and an op's results after its operands.
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    ops.push_back(op);
    for (OpOperand &operand : op->getOpOperands()) {
      if (!isRegisterVector(operand.get()))
        continue;
      auto type = cast<VectorType>(operand.get().getType());
      unsigned index = operand.getOperandNumber();
      VarId use = system.addRegister(layout::Shape(type.getShape()),
                                     bitwidthOf(type.getElementType()),
                                     siteAt(op, "operand", index));
      operandVars[&operand] = use;
      system.relayout(value(operand.get()), use,
                      at(op,
                         "can only use a value in a layout its producer's "
                         "layout converts to",
                         index));
    }
    for (OpResult result : op->getResults())
      if (isRegisterVector(result) || isSharedBuffer(result))
        createValue(result, op, "result", result.getResultNumber());
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument argument : block.getArguments())
          if (isRegisterVector(argument) || isSharedBuffer(argument))
            createValue(argument, op, "region argument",
                        argument.getArgNumber());
  });
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

SmallVector<VarId> vectorSitesAndResults(Operation *op, InferenceBuilder &b) {
  SmallVector<VarId> vars;
  for (OpOperand &operand : op->getOpOperands())
    if (isRegisterVector(operand.get()))
      vars.push_back(b.site(op, operand.getOperandNumber()));
  for (OpResult result : op->getResults())
    if (isRegisterVector(result))
      vars.push_back(b.value(result));
  return vars;
}

LogicalResult elementwiseRule(InferenceBuilder &b, Operation *op) {
  b.equateAll(vectorSitesAndResults(op, b),
              b.at(op, "is elementwise: its vector operands and results share "
                       "one layout"));
  return success();
}

LogicalResult noConstraintsRule(InferenceBuilder &, Operation *) {
  return success();
}

LogicalResult constantRule(InferenceBuilder &b, Operation *op) {
  auto constant = cast<arith::ConstantOp>(op);
  if (!isRegisterVector(constant.getResult()))
    return success();
  auto elements = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (elements && elements.isSplat())
    b.system.fix(b.result(op, 0), RegisterLayout::splat(),
                 b.at(op, "is a splat constant, so its layout is Splat"));
  else
    b.system.notOfKind(b.result(op, 0), RegisterLayout::Kind::Splat,
                       b.at(op, "is a non-splat constant, which cannot be "
                                "Splat"));
  return success();
}

/// ub.poison, llvm.mlir.undef and llvm.mlir.poison: an undefined vector may
/// be taken to hold one value in every thread, and a Splat converts to
/// whatever layout each user needs, so the value never constrains them.
LogicalResult undefinedRule(InferenceBuilder &b, Operation *op) {
  if (isRegisterVector(op->getResult(0)))
    b.system.fix(b.result(op, 0), RegisterLayout::splat(),
                 b.at(op, "is undefined, so its layout is Splat, which "
                          "converts to any layout"));
  return success();
}

LogicalResult splatRule(InferenceBuilder &b, Operation *op) {
  b.system.fix(b.result(op, 0), RegisterLayout::splat(),
               b.at(op, "splats a scalar, so its layout is Splat"));
  return success();
}

LogicalResult broadcastRule(InferenceBuilder &b, Operation *op) {
  auto broadcast = cast<vector::BroadcastOp>(op);
  if (!isRegisterVector(broadcast.getSource()))
    return splatRule(b, op);
  auto sourceType = cast<VectorType>(broadcast.getSource().getType());
  VectorType resultType = broadcast.getResultVectorType();
  int64_t added = resultType.getRank() - sourceType.getRank();
  if (resultType.getShape().drop_front(added) != sourceType.getShape()) {
    // Stretching size-1 dims duplicates data across threads; only a splat
    // can be stretched in registers.
    b.system.oneOf(b.site(op, 0), {RegisterLayout::splat()},
                   b.at(op, "stretches size-1 dims, which only a Splat "
                            "operand supports"));
    return success();
  }
  SmallVector<int64_t> axes(added);
  std::iota(axes.begin(), axes.end(), 0);
  b.system.reduce(b.site(op, 0), b.result(op, 0), axes,
                  b.at(op, "broadcasts leading dims: its operand's layout is "
                           "its result's reduced over them"));
  return success();
}

LogicalResult shapeCastRule(InferenceBuilder &b, Operation *op) {
  b.system.reshape(b.result(op, 0), b.site(op, 0),
                   b.at(op, "reshapes without moving data: the layout must "
                            "suit both shapes"));
  return success();
}

LogicalResult multiReductionRule(InferenceBuilder &b, Operation *op) {
  auto reduction = cast<vector::MultiDimReductionOp>(op);
  // A reduction to a scalar works from any layout (in-thread, then across
  // the warpgroup); a partial one needs the reduced axes in the layout.
  if (!isRegisterVector(reduction.getResult()))
    return success();
  b.system.notOfKind(b.site(op, 0), RegisterLayout::Kind::Strided,
                     b.at(op, "reduces along axes, which a Strided operand "
                              "does not support"));
  SmallVector<int64_t> axes(reduction.getReductionDims());
  b.system.reduce(b.result(op, 0), b.site(op, 0), axes,
                  b.at(op, "reduces its operand: the result's layout is the "
                           "operand's reduced over the axes"));
  b.system.equate(b.site(op, 1), b.result(op, 0),
                  b.at(op, "accumulates into a value laid out as its result"));
  return success();
}

LogicalResult extractStridedSliceRule(InferenceBuilder &b, Operation *op) {
  auto extract = cast<vector::ExtractStridedSliceOp>(op);
  SmallVector<int64_t> offsets;
  for (Attribute offset : extract.getOffsets())
    offsets.push_back(cast<IntegerAttr>(offset).getInt());
  b.system.equate(b.site(op, 0), b.result(op, 0),
                  b.at(op, "slices in registers: its result keeps the "
                           "operand's layout"));
  b.system.alignedSlice(b.site(op, 0), offsets,
                        b.at(op, "needs slice offsets on tile boundaries"));
  return success();
}

LogicalResult extractRule(InferenceBuilder &b, Operation *op) {
  if (isRegisterVector(op->getResult(0)))
    b.system.reshape(b.result(op, 0), b.site(op, 0),
                     b.at(op, "extracts along leading dims: the result keeps "
                              "the operand's layout"));
  return success();
}

LogicalResult insertRule(InferenceBuilder &b, Operation *op) {
  auto insert = cast<vector::InsertOp>(op);
  unsigned dest = insert.getDestMutable().getOperandNumber();
  b.system.equate(b.site(op, dest), b.result(op, 0),
                  b.at(op, "inserts in registers: the result keeps the "
                           "destination's layout"));
  if (isRegisterVector(insert.getValueToStore()))
    b.system.reshape(
        b.site(op, insert.getValueToStoreMutable().getOperandNumber()),
        b.result(op, 0),
        b.at(op, "inserts along leading dims: the value keeps the "
                 "destination's layout"));
  return success();
}

LogicalResult vectorLoadRule(InferenceBuilder &b, Operation *op) {
  auto load = cast<mosaic_gpu::VectorLoadOp>(op);
  b.system.notOfKind(b.result(op, 0), RegisterLayout::Kind::Splat,
                     b.at(op, "loads arbitrary data, which cannot be Splat"));
  if (isSharedBuffer(load.getSource()))
    b.system.transferable(b.value(load.getSource()), b.result(op, 0),
                          b.at(op, "must read the buffer without bank "
                                   "conflicts"));
  return success();
}

LogicalResult vectorStoreRule(InferenceBuilder &b, Operation *op) {
  auto store = cast<mosaic_gpu::VectorStoreOp>(op);
  if (isSharedBuffer(store.getDestination()))
    b.system.transferable(b.value(store.getDestination()), b.site(op, 0),
                          b.at(op, "must write the buffer without bank "
                                   "conflicts"));
  return success();
}

LogicalResult wgmmaRule(InferenceBuilder &b, Operation *op) {
  auto wgmma = cast<mosaic_gpu::WGMMAOp>(op);
  b.system.equate(b.site(op, 0), b.result(op, 0),
                  b.at(op, "accumulates in place"));
  b.system.fix(b.result(op, 0), layout::namedLayout(layout::NamedLayout::Wgmma),
               b.at(op, "requires the wgmma accumulator layout WGMMA"));
  Value a = wgmma.getA(), bRef = wgmma.getB();
  auto transposed = [](Value ref) {
    return isTransposedBuffer(cast<MemRefType>(ref.getType()));
  };
  if (isRegisterVector(a)) {
    unsigned bitwidth =
        bitwidthOf(cast<VectorType>(a.getType()).getElementType());
    b.system.fix(b.site(op, 1),
                 layout::namedLayout(bitwidth == 8
                                         ? layout::NamedLayout::Wgmma8Bit
                                         : layout::NamedLayout::Wgmma),
                 b.at(op, bitwidth == 8 ? "requires `a` in registers to be "
                                          "WGMMA_8BIT"
                                        : "requires `a` in registers to be "
                                          "WGMMA"));
  }
  b.system.mmaTiling(b.value(bRef), transposed(bRef),
                     b.at(op, "requires `b` to have a wgmma tiling"));
  if (isSharedBuffer(a)) {
    b.system.mmaTiling(b.value(a), transposed(a),
                       b.at(op, "requires `a` to have a wgmma tiling"));
    if (transposed(a) == transposed(bRef))
      b.system.equate(b.value(a), b.value(bRef),
                      b.at(op, "requires `a` and `b` to share one swizzle"));
    else
      b.system.transposedSmem(b.value(a), b.value(bRef),
                              b.at(op, "requires `a` and `b` to share one "
                                       "swizzle"));
  }
  return success();
}

LogicalResult layoutCastRule(InferenceBuilder &b, Operation *op) {
  auto cast = llvm::cast<mosaic_gpu::LayoutCastOp>(op);
  FailureOr<RegisterLayout> layout = attrToLayout(cast.getNewLayout());
  if (failed(layout))
    return op->emitOpError("`new_layout` is not a register layout");
  b.system.fix(b.result(op, 0), *layout, b.at(op, "fixes its result's layout"));
  b.system.relayout(b.site(op, 0), b.result(op, 0),
                    b.at(op, "converts its operand to `new_layout`"));
  return success();
}

LogicalResult broadcastInDimRule(InferenceBuilder &b, Operation *op) {
  auto broadcast = cast<mosaic_gpu::BroadcastInDimOp>(op);
  ArrayRef<int64_t> mapped = broadcast.getBroadcastDimensions();
  VectorType operandType = broadcast.getOperand().getType();
  VectorType resultType = broadcast.getResult().getType();
  for (auto [i, dim] : llvm::enumerate(mapped))
    if (operandType.getDimSize(i) != resultType.getDimSize(dim)) {
      b.system.oneOf(b.site(op, 0), {RegisterLayout::splat()},
                     b.at(op, "expands size-1 dims, which only a Splat "
                              "operand supports"));
      return success();
    }
  SmallVector<int64_t> axes;
  for (int64_t dim = 0; dim < resultType.getRank(); ++dim)
    if (!llvm::is_contained(mapped, dim))
      axes.push_back(dim);
  b.system.reduce(b.site(op, 0), b.result(op, 0), axes,
                  b.at(op, "broadcasts: its operand's layout is its "
                           "result's reduced over the new dims"));
  return success();
}

LogicalResult iotaRule(InferenceBuilder &b, Operation *op) {
  b.system.notOfKind(b.result(op, 0), RegisterLayout::Kind::Splat,
                     b.at(op, "produces distinct values, which cannot be "
                              "Splat"));
  return success();
}

LogicalResult optimizationBarrierRule(InferenceBuilder &b, Operation *op) {
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    if (isRegisterVector(operand.get()))
      b.system.equate(b.site(op, i), b.result(op, i),
                      b.at(op, "passes its operands through unchanged", i));
    else if (isSharedBuffer(operand.get()))
      b.system.equate(b.value(operand.get()), b.result(op, i),
                      b.at(op, "passes its operands through unchanged", i));
  }
  return success();
}

LogicalResult sliceSmemRule(InferenceBuilder &b, Operation *op) {
  auto slice = cast<mosaic_gpu::SliceSMEMOp>(op);
  if (!isSharedBuffer(slice.getResult()) || !slice.getAliasId())
    return success();
  auto [it, inserted] =
      b.aliases.try_emplace(*slice.getAliasId(), b.result(op, 0));
  if (!inserted)
    b.system.equate(it->second, b.result(op, 0),
                    b.at(op, "shares its `alias_id` with another slice, so "
                             "they share transforms"));
  return success();
}

LogicalResult withTransformsRule(InferenceBuilder &b, Operation *op) {
  auto with = cast<mosaic_gpu::WithTransformsOp>(op);
  if (!isSharedBuffer(with.getResult()))
    return success();
  FailureOr<SmemTransforms> transforms = attrToTransforms(with.getTransforms());
  if (failed(transforms))
    return op->emitOpError("`transforms` must be at most one tile followed by "
                           "at most one swizzle");
  b.system.equate(b.value(with.getRef()), b.result(op, 0),
                  b.at(op, "views the same buffer"));
  b.system.fix(b.result(op, 0), *transforms,
               b.at(op, "fixes the buffer's transforms"));
  return success();
}

LogicalResult customPrimitiveRule(InferenceBuilder &b, Operation *op) {
  auto custom = cast<mosaic_gpu::CustomPrimitiveOp>(op);
  auto inLayouts = custom.getInLayouts().getValue();
  auto inTransforms = custom.getInTransforms().getValue();
  size_t vectorIndex = 0, bufferIndex = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    if (isRegisterVector(operand.get())) {
      FailureOr<RegisterLayout> layout = attrToLayout(inLayouts[vectorIndex++]);
      if (failed(layout))
        return op->emitOpError("`in_layouts` entries must be register layouts");
      b.system.fix(b.site(op, i), *layout,
                   b.at(op, "declares its operand layout in `in_layouts`", i));
    } else if (isSharedBuffer(operand.get()) &&
               bufferIndex < inTransforms.size()) {
      FailureOr<SmemTransforms> transforms =
          attrToTransforms(inTransforms[bufferIndex++]);
      if (failed(transforms))
        return op->emitOpError("`in_transforms` entries must be transform "
                               "lists");
      b.system.fix(b.value(operand.get()), *transforms,
                   b.at(op,
                        "declares its buffer transforms in "
                        "`in_transforms`",
                        i));
    }
  }
  size_t resultIndex = 0;
  for (OpResult result : op->getResults()) {
    if (!isRegisterVector(result))
      continue;
    FailureOr<RegisterLayout> layout =
        attrToLayout(custom.getOutLayouts()[resultIndex++]);
    if (failed(layout))
      return op->emitOpError("`out_layouts` entries must be register layouts");
    b.system.fix(b.value(result), *layout,
                 b.at(op, "declares its result layout in `out_layouts`",
                      result.getResultNumber()));
  }
  return success();
}

/// The multiples a TMA slice starting at `indices` with `sliceLengths`
/// guarantees for the dims the buffer keeps (squeezed dims dropped). The
/// second-minor dim's start need not be one: mosaic-gpu-apply-transforms
/// copies a slice that starts between tile rows as row-major boxes, which TMA
/// places at any row (a packed batch's sequences start at any token).
SmallVector<int64_t> transferMultiples(ValueRange indices,
                                       ArrayRef<int64_t> sliceLengths) {
  SmallVector<int64_t> multiples;
  for (auto [index, length] : llvm::zip_equal(indices, sliceLengths))
    if (length != -1)
      multiples.push_back(std::gcd(mosaic_gpu::knownMultiple(index), length));
  SmallVector<int64_t> kept(llvm::make_filter_range(
      sliceLengths, [](int64_t length) { return length != -1; }));
  if (kept.size() >= 2)
    multiples[kept.size() - 2] = kept[kept.size() - 2];
  return multiples;
}

/// A TMA transfer needs a tiling of its shared-memory buffer that divides the
/// slice (lengths and known index multiples).
template <typename TransferOp>
LogicalResult transferRule(InferenceBuilder &b, Operation *op) {
  auto transfer = cast<TransferOp>(op);
  Value buffer =
      isSharedBuffer(op->getOperand(0)) ? op->getOperand(0) : op->getOperand(1);
  if (isSharedBuffer(buffer))
    b.system.divides(
        b.value(buffer),
        transferMultiples(transfer.getIndices(), transfer.getSliceLengths()),
        b.at(op, "needs a tiling that divides its slice, whose lengths and "
                 "start indices are known multiples of"));
  return success();
}

/// Buffers an op with no rule touches must stay untransformed: nothing
/// would account for the tiling.
void pinUntransformed(Operation *op, InferenceBuilder &b) {
  for (Value operand : op->getOperands())
    if (isSharedBuffer(operand))
      b.system.oneOf(b.value(operand), {SmemTransforms::none()},
                     b.at(op, "accesses the buffer element by element, which "
                              "needs it untransformed"));
  for (Value result : op->getResults())
    if (isSharedBuffer(result))
      b.system.oneOf(b.value(result), {SmemTransforms::none()},
                     b.at(op, "produces a buffer no rule describes, which "
                              "must stay untransformed"));
}

LogicalResult subviewRule(InferenceBuilder &b, Operation *op) {
  auto subview = cast<memref::SubViewOp>(op);
  if (!isSharedBuffer(subview.getSource()))
    return success();
  SmallVector<int64_t> multiples;
  for (auto [offset, size] :
       llvm::zip_equal(subview.getMixedOffsets(), subview.getMixedSizes())) {
    int64_t offsetMultiple = 1;
    if (auto attr = dyn_cast<Attribute>(offset))
      offsetMultiple = std::abs(cast<IntegerAttr>(attr).getInt());
    else
      offsetMultiple = mosaic_gpu::knownMultiple(cast<Value>(offset));
    std::optional<int64_t> staticSize = getConstantIntValue(size);
    multiples.push_back(std::gcd(offsetMultiple, staticSize.value_or(1)));
  }
  b.system.equate(b.value(subview.getSource()), b.result(op, 0),
                  b.at(op, "views part of the buffer, with its transforms"));
  b.system.divides(b.value(subview.getSource()), multiples,
                   b.at(op, "needs a tiling that divides its offsets and "
                            "sizes"));
  return success();
}

LogicalResult transposeRule(InferenceBuilder &b, Operation *op) {
  auto transpose = cast<memref::TransposeOp>(op);
  if (!isSharedBuffer(transpose.getIn()))
    return success();
  AffineMap permutation = transpose.getPermutation();
  unsigned rank = permutation.getNumResults();
  bool leadingIdentity = true;
  for (unsigned i = 0; i + 2 < rank; ++i)
    leadingIdentity &= permutation.getDimPosition(i) == i;
  bool swapsMinor = rank >= 2 && leadingIdentity &&
                    permutation.getDimPosition(rank - 2) == rank - 1 &&
                    permutation.getDimPosition(rank - 1) == rank - 2;
  if (permutation.isIdentity())
    b.system.equate(b.value(transpose.getIn()), b.result(op, 0),
                    b.at(op, "views the same buffer"));
  else if (swapsMinor)
    b.system.transposedSmem(b.result(op, 0), b.value(transpose.getIn()),
                            b.at(op, "swaps the minor dims, and with them "
                                     "the tile dims"));
  else
    pinUntransformed(op, b);
  return success();
}

LogicalResult reshapeRule(InferenceBuilder &b, Operation *op) {
  Value source = op->getOperand(0), result = op->getResult(0);
  if (!isSharedBuffer(source))
    return success();
  auto sourceType = cast<MemRefType>(source.getType());
  auto resultType = cast<MemRefType>(result.getType());
  SmallVector<ReassociationIndices> groups;
  if (auto collapse = dyn_cast<memref::CollapseShapeOp>(op))
    groups = collapse.getReassociationIndices();
  else
    groups = cast<memref::ExpandShapeOp>(op).getReassociationIndices();
  // The side with more dims: its second-minor dim is the innermost of the
  // group that becomes (or came from) the other side's second-minor dim.
  MemRefType fine =
      sourceType.getRank() >= resultType.getRank() ? sourceType : resultType;
  // A tiling survives when the minor dim is untouched and the second-minor
  // dim only gains (or loses) whole leading tiles: the tile must divide the
  // finer side's second-minor dim.
  bool keepsMinor =
      sourceType.getRank() >= 2 && resultType.getRank() >= 2 &&
      groups.size() >= 2 && groups.back().size() == 1 &&
      sourceType.getShape().back() == resultType.getShape().back() &&
      !fine.isDynamicDim(fine.getRank() - 2);
  if (!keepsMinor) {
    pinUntransformed(op, b);
    return success();
  }
  b.system.equate(b.value(source), b.value(result),
                  b.at(op, "regroups the buffer's leading dims"));
  b.system.divides(
      b.value(source),
      {fine.getDimSize(fine.getRank() - 2), fine.getShape().back()},
      b.at(op, "needs a tiling that divides the dims it "
               "regroups"));
  return success();
}

LogicalResult castRule(InferenceBuilder &b, Operation *op) {
  if (isSharedBuffer(op->getOperand(0)) && isSharedBuffer(op->getResult(0)))
    b.system.equate(b.value(op->getOperand(0)), b.result(op, 0),
                    b.at(op, "views the same buffer"));
  return success();
}

LogicalResult forRule(InferenceBuilder &b, Operation *op) {
  auto loop = cast<scf::ForOp>(op);
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  for (auto [i, argument] : llvm::enumerate(loop.getRegionIterArgs()))
    b.tieGroup({loop.getTiedLoopInit(argument), &yield->getOpOperand(i)},
               {argument, loop.getResult(i)},
               b.at(op, "carries a value through its iterations", i));
  return success();
}

LogicalResult whileRule(InferenceBuilder &b, Operation *op) {
  auto loop = cast<scf::WhileOp>(op);
  scf::YieldOp yield = loop.getYieldOp();
  scf::ConditionOp condition = loop.getConditionOp();
  for (auto [i, argument] : llvm::enumerate(loop.getBeforeArguments()))
    b.tieGroup({&op->getOpOperand(i), &yield->getOpOperand(i)}, {argument},
               b.at(op, "carries a value into its condition region", i));
  for (auto [i, argument] : llvm::enumerate(loop.getAfterArguments()))
    b.tieGroup({&condition->getOpOperand(i + 1)}, {argument, loop.getResult(i)},
               b.at(op, "forwards a value from its condition", i));
  return success();
}

/// Ties every result of `op` to the matching operand of each region's yield.
LogicalResult yieldingRegionsRule(InferenceBuilder &b, Operation *op) {
  for (OpResult result : op->getResults()) {
    SmallVector<OpOperand *> yielded;
    for (Region &region : op->getRegions())
      if (!region.empty())
        yielded.push_back(&region.front().getTerminator()->getOpOperand(
            result.getResultNumber()));
    b.tieGroup(yielded, {result},
               b.at(op, "yields the same value from each region",
                    result.getResultNumber()));
  }
  return success();
}

/// Every op kind with a rule, one line per rule.
using InferenceRules = OpRuleRegistry<InferenceBuilder>;
const InferenceRules &ruleRegistry() {
  static const InferenceRules registry = [] {
    InferenceRules rules;
    rules.add<arith::ConstantOp>(constantRule);
    rules.add<ub::PoisonOp, LLVM::UndefOp, LLVM::PoisonOp>(undefinedRule);
    rules.add<vector::BroadcastOp>(broadcastRule);
    rules.add<vector::ShapeCastOp>(shapeCastRule);
    rules.add<vector::MultiDimReductionOp>(multiReductionRule);
    rules.add<vector::ExtractStridedSliceOp>(extractStridedSliceRule);
    rules.add<vector::ExtractOp>(extractRule);
    rules.add<vector::InsertOp>(insertRule);
    rules.add<mosaic_gpu::VectorLoadOp>(vectorLoadRule);
    rules.add<mosaic_gpu::VectorStoreOp>(vectorStoreRule);
    rules.add<mosaic_gpu::WGMMAOp>(wgmmaRule);
    rules.add<mosaic_gpu::LayoutCastOp>(layoutCastRule);
    rules.add<mosaic_gpu::BroadcastInDimOp>(broadcastInDimRule);
    rules.add<mosaic_gpu::BroadcastedIotaOp>(iotaRule);
    rules.add<mosaic_gpu::OptimizationBarrierOp>(optimizationBarrierRule);
    rules.add<mosaic_gpu::SliceSMEMOp>(sliceSmemRule);
    rules.add<mosaic_gpu::WithTransformsOp>(withTransformsRule);
    rules.add<mosaic_gpu::CustomPrimitiveOp>(customPrimitiveRule);
    rules.add<mosaic_gpu::AsyncLoadOp>(transferRule<mosaic_gpu::AsyncLoadOp>);
    rules.add<mosaic_gpu::AsyncStoreOp>(transferRule<mosaic_gpu::AsyncStoreOp>);
    rules.add<mosaic_gpu::AsyncPrefetchOp, mosaic_gpu::InitializeBarrierOp,
              mosaic_gpu::ArriveOp, mosaic_gpu::ArriveExpectTxOp,
              mosaic_gpu::WaitOp, mosaic_gpu::AssumeMultipleOp>(
        noConstraintsRule);
    // The body of a custom primitive is lowered as written; its return
    // passes the values out as the op declares.
    rules.add<mosaic_gpu::ReturnOp>(noConstraintsRule);
    rules.add<memref::SubViewOp>(subviewRule);
    rules.add<memref::TransposeOp>(transposeRule);
    rules.add<memref::CollapseShapeOp, memref::ExpandShapeOp>(reshapeRule);
    rules.add<memref::CastOp>(castRule);
    rules.add<scf::ForOp>(forRule);
    rules.add<scf::WhileOp>(whileRule);
    rules.add<scf::IfOp, scf::IndexSwitchOp>(yieldingRegionsRule);
    // Values returned from a function keep whatever layout they have;
    // kernels return nothing, but helper functions in tests do.
    rules.add<func::ReturnOp>(noConstraintsRule);
    // Terminators are tied to their parents by the parents' rules.
    rules.add<scf::YieldOp, scf::ConditionOp>(noConstraintsRule);
    return rules;
  }();
  return registry;
}

bool touchesVectors(Operation *op) {
  return llvm::any_of(op->getOperands(), isRegisterVector) ||
         llvm::any_of(op->getResults(), isRegisterVector);
}

LogicalResult InferenceBuilder::applyRules() {
  const InferenceRules &registry = ruleRegistry();
  for (Operation *op : ops) {
    if (op->getParentOfType<mosaic_gpu::CustomPrimitiveOp>())
      continue;
    if (const InferenceRules::Rule *rule = registry.lookup(op)) {
      if (failed(rule->apply(*this, op)))
        return failure();
      continue;
    }
    if (op->hasTrait<OpTrait::Elementwise>()) {
      (void)elementwiseRule(*this, op);
      continue;
    }
    if (touchesVectors(op))
      return op->emitOpError()
             << "has no layout inference rule, but it has vector operands or "
                "results; only mosaic_gpu, elementwise arith/math, vector "
                "broadcast/shape_cast/multi_reduction/extract_strided_slice/"
                "extract/insert, scf ops and undefined values (ub.poison, "
                "llvm.mlir.undef, llvm.mlir.poison) are supported";
    pinUntransformed(op, *this);
  }
  return success();
}

void InferenceBuilder::annotate(const Solution &solution) {
  // Most values share a handful of (layout, shape) pairs; build each
  // attribute once.
  std::map<std::tuple<int, int64_t, const void *, std::vector<int64_t>>,
           Attribute>
      layoutAttrs;
  auto layoutAttr = [&](MLIRContext *context, const RegisterLayout &layout,
                        ArrayRef<int64_t> shape) {
    auto key = std::make_tuple(
        static_cast<int>(layout.kind()), layout.vectorSize(), layout.identity(),
        std::vector<int64_t>(shape.begin(), shape.end()));
    auto it = layoutAttrs.find(key);
    if (it == layoutAttrs.end())
      it = layoutAttrs.emplace(key, layoutToAttr(context, layout, shape)).first;
    return it->second;
  };
  for (Operation *op : ops) {
    if (op->getParentOfType<mosaic_gpu::CustomPrimitiveOp>())
      continue;
    MLIRContext *context = op->getContext();
    SmallVector<Attribute> inLayouts, outLayouts, inTransforms, outTransforms;
    for (OpOperand &operand : op->getOpOperands()) {
      Value v = operand.get();
      if (isRegisterVector(v))
        inLayouts.push_back(
            layoutAttr(context,
                       std::get<RegisterLayout>(
                           solution.values[operandVars.lookup(&operand)]),
                       cast<VectorType>(v.getType()).getShape()));
      else if (isSharedBuffer(v))
        inTransforms.push_back(transformsToAttr(
            context, std::get<SmemTransforms>(solution.values[value(v)])));
    }
    for (Value v : op->getResults()) {
      if (isRegisterVector(v))
        outLayouts.push_back(layoutAttr(
            context, std::get<RegisterLayout>(solution.values[value(v)]),
            cast<VectorType>(v.getType()).getShape()));
      else if (isSharedBuffer(v))
        outTransforms.push_back(transformsToAttr(
            context, std::get<SmemTransforms>(solution.values[value(v)])));
    }
    mosaic_gpu::setAnnotations(op, inLayouts, outLayouts, inTransforms,
                               outTransforms);
  }
}

std::string describeOrigin(const Origin &origin) {
  auto *op = static_cast<Operation *>(const_cast<void *>(origin.handle));
  std::string name =
      op ? ("'" + op->getName().getStringRef() + "'").str() : "the kernel";
  if (origin.isSite)
    return llvm::formatv("{0} #{1} of {2}", origin.what, origin.index, name);
  if (origin.index < 0)
    return name + " " + origin.what;
  return llvm::formatv("{0} {1} (operand #{2})", name, origin.what,
                       origin.index);
}

struct InferLayoutsPass
    : mosaic::impl::MosaicGPUInferLayoutsBase<InferLayoutsPass> {
  using MosaicGPUInferLayoutsBase::MosaicGPUInferLayoutsBase;

  void runOnOperation() override {
    Operation *root = getOperation();
    if (arch != "sm_90a") {
      root->emitError() << "mosaic-gpu-infer-layouts supports only arch "
                           "sm_90a, got '"
                        << arch << "'";
      return signalPassFailure();
    }
    if (fuel <= 0) {
      root->emitError() << "mosaic-gpu-infer-layouts needs a positive fuel, "
                           "got "
                        << static_cast<int64_t>(fuel);
      return signalPassFailure();
    }
    if (failed(mosaic_gpu::verifyWgmmaInFlightUses(root)))
      return signalPassFailure();
    InferenceBuilder builder;
    builder.createSites(root);
    if (failed(builder.applyRules()))
      return signalPassFailure();

    ConstraintSystem::Options options;
    options.fuel = static_cast<int64_t>(fuel);
    options.describe = describeOrigin;
    auto outcome = builder.system.solve(options);
    if (auto *solution = std::get_if<Solution>(&outcome)) {
      if (verifySolution) {
        std::vector<std::string> violations =
            builder.system.violations(*solution);
        if (!violations.empty()) {
          root->emitError() << "internal error: the layout solution breaks "
                            << violations.size()
                            << " constraints, the first: " << violations[0];
          return signalPassFailure();
        }
      }
      if (reportCost) {
        AssignmentCost cost = builder.system.cost(*solution);
        root->emitRemark()
            << "layout assignment cost: relayouts through shared memory "
            << cost.relayouts << " (moving " << cost.relaidRegisters
            << " registers per thread), registers per thread over every "
               "value site "
            << cost.registers;
      }
      builder.annotate(*solution);
      return;
    }
    const Conflict &conflict = std::get<Conflict>(outcome);
    auto locate = [&](const Origin &origin) {
      auto *op = static_cast<Operation *>(const_cast<void *>(origin.handle));
      return op ? op->getLoc() : root->getLoc();
    };
    InFlightDiagnostic diag = emitError(locate(conflict.primary))
                              << conflict.message;
    if (conflict.kind == Conflict::Kind::OutOfFuel)
      diag << "; raise `fuel`, or settle this value with a "
              "mosaic_gpu.layout_cast (mosaic_gpu.with_transforms for a "
              "buffer) after the op that produces it";
    for (const auto &[origin, text] : conflict.notes)
      diag.attachNote(locate(origin)) << text;
    signalPassFailure();
  }
};

} // namespace
