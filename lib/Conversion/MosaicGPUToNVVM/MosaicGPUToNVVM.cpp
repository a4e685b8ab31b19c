//===- MosaicGPUToNVVM.cpp - Warpgroup vectors to per-thread registers ----===//
//
// Lowering is driven by values, not types: two vectors of one type may have
// different layouts, and the layout decides the registers. The pass walks
// each kernel in program order, maps every warpgroup vector to the flat
// vector of registers one thread holds, rewrites the ops on those registers,
// and erases the originals once everything is lowered. Control flow is kept
// and retyped in place.
//
// This file holds the walk and the LoweringContext every rule shares: the
// register representation, the thread's indices, the scratch space and the
// relayout of operands. The walk dispatches each op through the registry
// (LoweringContext.h) that the Lower*.cpp files beside it fill, one line per
// op; elementwise ops share one lowering, and any other op with vectors, or
// of the mosaic_gpu dialect, is an error. Each file's hooks run around the
// walk.
//
//===----------------------------------------------------------------------===//

#include "LoweringContext.h"
#include "mosaic/Conversion/MosaicGPUToNVVM/Passes.h"
#include "mosaic/Dialect/MosaicGPU/AttributeBridge.h"
#include "mosaic/Dialect/MosaicGPU/WgmmaInFlight.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AttrTypeSubElements.h"

namespace mosaic {
#define GEN_PASS_DEF_MOSAICGPULOWER
#include "mosaic/Conversion/MosaicGPUToNVVM/Passes.h.inc"
} // namespace mosaic

using namespace mlir;
using namespace mosaic;
using layout::kThreadsPerWarpgroup;
using layout::RegisterLayout;
using layout::Shape;

FailureOr<VectorType> mosaic::registerType(VectorType type,
                                           const RegisterLayout &layout) {
  if (layout.isSplat())
    return VectorType::get({1}, type.getElementType());
  if (layout.isStrided())
    return VectorType::get({type.getNumElements() / kThreadsPerWarpgroup},
                           type.getElementType());
  const layout::TiledLayout &tiled = layout.tiledLayout();
  llvm::Expected<Shape> registers = tiled.registersShape(type.getShape());
  if (!registers) {
    llvm::consumeError(registers.takeError());
    return failure();
  }
  int64_t count = tiled.vectorLength();
  for (int64_t dim : *registers)
    count *= dim;
  return VectorType::get({count}, type.getElementType());
}

llvm::Expected<std::vector<Shape>>
mosaic::thread0Elements(const RegisterLayout &layout, ArrayRef<int64_t> shape) {
  std::vector<Shape> elements;
  if (layout.isSplat()) {
    elements.push_back(Shape(shape.size(), 0));
    return elements;
  }
  if (layout.isStrided()) {
    int64_t total = 1;
    for (int64_t dim : shape)
      total *= dim;
    int64_t vector = layout.vectorSize();
    for (int64_t position = 0; position < total / kThreadsPerWarpgroup;
         ++position) {
      int64_t flat = (position / vector) * kThreadsPerWarpgroup * vector +
                     position % vector;
      Shape index(shape.size());
      for (int64_t dim = shape.size() - 1; dim >= 0; --dim) {
        index[dim] = flat % shape[dim];
        flat /= shape[dim];
      }
      elements.push_back(std::move(index));
    }
    return elements;
  }
  const layout::TiledLayout &tiled = layout.tiledLayout();
  llvm::Expected<Shape> registers = tiled.registersShape(shape);
  if (!registers)
    return registers.takeError();
  int64_t count = 1;
  for (int64_t dim : *registers)
    count *= dim;
  for (int64_t reg = 0; reg < count; ++reg)
    for (int64_t lane = 0; lane < tiled.vectorLength(); ++lane) {
      llvm::Expected<Shape> index = tiled.elementIndex(shape, 0, reg, lane);
      if (!index)
        return index.takeError();
      elements.push_back(std::move(*index));
    }
  return elements;
}

VectorType LoweringContext::logicalType(Value value) const {
  auto retyped = retypedValues.find(value);
  return retyped != retypedValues.end() ? retyped->second
                                        : cast<VectorType>(value.getType());
}

Value mosaic::atFunctionEntry(
    Operation *op, DenseMap<Operation *, Value> &cache,
    function_ref<Value(OpBuilder &, Location)> build) {
  Operation *function = op->getParentOfType<FunctionOpInterface>();
  Value &cached = cache[function];
  if (!cached) {
    Block &entry = function->getRegion(0).front();
    OpBuilder builder(&entry, entry.begin());
    cached = build(builder, function->getLoc());
  }
  return cached;
}

Value LoweringContext::linearThreadIndex(Operation *op) {
  return atFunctionEntry(
      op, threadIndices.linear, [&](OpBuilder &builder, Location loc) -> Value {
        // x + ntid.x * (y + ntid.y * z), as CUDA numbers a block's threads into
        // warps: blocks such as (64, 2, 1) still form warpgroups of 128
        // consecutive linear indices. Dimensions the kernel's known block size
        // fixes at 1 add nothing, so 1-D blocks keep plain %tid.x.
        auto function = op->getParentOfType<gpu::GPUFuncOp>();
        DenseI32ArrayAttr known =
            function ? function.getKnownBlockSizeAttr() : DenseI32ArrayAttr();
        auto isOne = [&](unsigned dimension) {
          return known && known.asArrayRef()[dimension] == 1;
        };
        auto extent = [&](gpu::Dimension dimension) -> Value {
          if (known)
            return arith::ConstantIndexOp::create(
                builder, loc,
                known.asArrayRef()[static_cast<unsigned>(dimension)]);
          return gpu::BlockDimOp::create(builder, loc, dimension);
        };
        Value index = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::x);
        if (isOne(1) && isOne(2))
          return index;
        Value y = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::y);
        Value yz = y;
        if (!isOne(2)) {
          Value z = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::z);
          yz = arith::AddIOp::create(
              builder, loc, y,
              arith::MulIOp::create(builder, loc, extent(gpu::Dimension::y),
                                    z));
        }
        return arith::AddIOp::create(
            builder, loc, index,
            arith::MulIOp::create(builder, loc, extent(gpu::Dimension::x), yz));
      });
}

/// `linear` (the thread's linear index) and the warpgroup size combined by
/// `OpTy`, built once per function after `linear`.
template <typename OpTy>
static Value perWarpgroup(Operation *op, Value linear,
                          DenseMap<Operation *, Value> &cache) {
  return atFunctionEntry(op, cache, [&](OpBuilder &builder, Location loc) {
    builder.setInsertionPointAfterValue(linear);
    Value groupSize =
        arith::ConstantIndexOp::create(builder, loc, kThreadsPerWarpgroup);
    return OpTy::create(builder, loc, linear, groupSize).getResult();
  });
}

Value LoweringContext::threadInWarpgroup(Operation *op) {
  return perWarpgroup<arith::RemUIOp>(op, linearThreadIndex(op),
                                      threadIndices.inWarpgroup);
}

Value LoweringContext::warpgroupIndex(Operation *op) {
  return perWarpgroup<arith::DivUIOp>(op, linearThreadIndex(op),
                                      threadIndices.warpgroup);
}

Value LoweringContext::isWarpgroupLeader(Operation *op) {
  Value thread = threadInWarpgroup(op);
  return atFunctionEntry(
      op, threadIndices.leader, [&](OpBuilder &builder, Location loc) {
        builder.setInsertionPointAfter(thread.getDefiningOp());
        Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
        return arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                     thread, zero)
            .getResult();
      });
}

FailureOr<Value> LoweringContext::operandAs(Operation *op, OpOperand &operand,
                                            const RegisterLayout &layout,
                                            OpBuilder &builder) {
  auto it = fragments.find(operand.get());
  if (it == fragments.end())
    return op->emitOpError()
           << "uses a vector that mosaic-gpu-lower has not lowered (operand #"
           << operand.getOperandNumber() << ")";
  Fragment fragment = it->second;
  // The tensor cores write an async wgmma's result registers until a wait;
  // LLVM sees them defined at the wgmma and could move a read above the
  // wait. An opaque copy here, which stays after the wait (both have side
  // effects), is what this op reads instead. Further wgmmas accumulate in
  // the registers themselves, in order.
  if (waitedForValues.contains(operand.get()) &&
      !isa<mosaic_gpu::WGMMAOp>(op)) {
    FailureOr<SmallVector<Value>> fenced =
        opaqueRegisters(op, builder, {fragment.registers});
    if (failed(fenced))
      return failure();
    fragment.registers = fenced->front();
  }
  if (fragment.layout == layout)
    return fragment.registers;
  VectorType type = logicalType(operand.get());
  FailureOr<VectorType> target = registerType(type, layout);
  if (fragment.layout.isSplat() && succeeded(target)) {
    // Every thread already holds the value; spread it over its registers.
    Location loc = op->getLoc();
    Value scalar = vector::ExtractOp::create(builder, loc, fragment.registers,
                                             ArrayRef<int64_t>{0});
    return vector::BroadcastOp::create(builder, loc, *target, scalar)
        .getResult();
  }
  // Inference only asks for legal relayouts (WGMMA <-> WGMMA_TRANSPOSED);
  // they go through shared memory rather than lane shuffles.
  if (succeeded(target) && !fragment.layout.isSplat() &&
      layout::isLegalRelayout(fragment.layout, layout,
                              type.getElementTypeBitWidth()))
    return relayoutThroughSharedMemory(*this, op, fragment.registers,
                                       fragment.layout, layout, type);
  return op->emitOpError() << "cannot relayout operand #"
                           << operand.getOperandNumber() << " from "
                           << fragment.layout.str() << " to " << layout.str()
                           << " in registers";
}

LogicalResult LoweringContext::define(Value result, Value registers,
                                      const RegisterLayout &layout) {
  fragments.try_emplace(result, Fragment{registers, layout});
  return success();
}

const Fragment *LoweringContext::lookup(Value vector) const {
  auto it = fragments.find(vector);
  return it == fragments.end() ? nullptr : &it->second;
}

void LoweringContext::retypeInPlace(Value value, VectorType registers,
                                    const RegisterLayout &layout) {
  retypedValues.try_emplace(value, cast<VectorType>(value.getType()));
  value.setType(registers);
  (void)define(value, value, layout);
}

std::array<int32_t, 3> mosaic::clusterShape(Operation *op) {
  auto function = op->getParentOfType<gpu::GPUFuncOp>();
  auto cluster =
      function
          ? function->getAttrOfType<DenseI32ArrayAttr>(mosaic_gpu::kClusterAttr)
          : DenseI32ArrayAttr();
  if (!cluster || cluster.size() != 3)
    return {1, 1, 1};
  return {cluster[0], cluster[1], cluster[2]};
}

int64_t mosaic::sliceExtent(Operation *function) {
  int64_t extent = 0;
  function->walk([&](mosaic_gpu::SliceSMEMOp slice) {
    MemRefType type = slice.getResult().getType();
    Type element = type.getElementType();
    int64_t bytes = isa<mosaic_gpu::BarrierType>(element)
                        ? 8
                        : (element.getIntOrFloatBitWidth() + 7) / 8;
    extent = std::max(extent, slice.getOffsetAttr().getInt() +
                                  type.getNumElements() * bytes);
  });
  return extent;
}

int64_t LoweringContext::scratchOffset(Operation *function) {
  auto [entry, inserted] = scratch.offsets.try_emplace(function, 0);
  if (inserted)
    entry->second = llvm::alignTo(sliceExtent(function), 16);
  return entry->second;
}

int64_t LoweringContext::reserveScratch(Operation *op, int64_t bytes) {
  Operation *function = op->getParentOfType<FunctionOpInterface>();
  int64_t &needed = scratch.bytes[function];
  needed = std::max(needed, bytes);
  return scratchOffset(function);
}

int64_t LoweringContext::sharedMemoryBytes(Operation *function) {
  int64_t bytes = sliceExtent(function);
  if (int64_t reserved = scratch.bytes.lookup(function))
    bytes = std::max(bytes, scratchOffset(function) + reserved);
  return bytes;
}

/// Barrier memrefs become i64 memrefs once no barrier op needs their type.
static void replaceBarrierTypes(Operation *root) {
  AttrTypeReplacer replacer;
  replacer.addReplacement([](mosaic_gpu::BarrierType type) -> Type {
    return IntegerType::get(type.getContext(), 64);
  });
  replacer.recursivelyReplaceElementsIn(root, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
}

/// The launch contract: every buffer passed to a kernel is 16-byte aligned
/// (the runtime checks it, as TMA requires it anyway). Declaring it lets LLVM
/// merge the per-thread chunks into vector loads and stores.
static void declareArgumentAlignment(Operation *root) {
  root->walk([](gpu::GPUFuncOp function) {
    if (!function.isKernel())
      return;
    Builder builder(function.getContext());
    for (auto [index, type] : llvm::enumerate(function.getArgumentTypes()))
      if (isa<MemRefType>(type) && !function.getArgAttr(index, "llvm.align"))
        function.setArgAttr(index, "llvm.align", builder.getI64IntegerAttr(16));
  });
}

/// Every op kind the Lower*.cpp files lower, and their hooks. The order only
/// matters for the hooks after the walk: deferred TMA stores are waited for
/// before the cluster barrier that ends a kernel with remote arrivals.
static const LoweringRegistry &loweringRegistry() {
  static const LoweringRegistry registry = [] {
    LoweringRegistry registry;
    populateRegisterLowerings(registry);
    populateControlFlowLowerings(registry);
    populateMemoryLowerings(registry);
    populateTMALowerings(registry);
    populateBarrierLowerings(registry);
    populateWgmmaLowerings(registry);
    populateReductionLowerings(registry);
    populateCollectiveLowerings(registry);
    return registry;
  }();
  return registry;
}

/// Known block and grid sizes become PTX's `.maxntid` and `.reqntid`, which
/// take positive sizes only (LLVM's NVPTX back end exits on others).
static LogicalResult verifyLaunchSizes(Operation *root) {
  WalkResult walk = root->walk([](gpu::GPUFuncOp function) {
    for (auto [name, sizes] :
         {std::pair{"known_block_size", function.getKnownBlockSizeAttr()},
          std::pair{"known_grid_size", function.getKnownGridSizeAttr()}}) {
      if (!sizes)
        continue;
      for (auto [dim, size] : llvm::enumerate(sizes.asArrayRef()))
        if (size <= 0) {
          function.emitOpError()
              << "`" << name << "` entry " << dim << " is " << size
              << "; block and grid sizes must be positive";
          return WalkResult::interrupt();
        }
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

static LogicalResult lowerKernels(Operation *root) {
  if (failed(verifyLaunchSizes(root)) || failed(checkRegisterBudget(root)))
    return failure();
  // Hand-annotated IR skips inference, which checks this first.
  DenseSet<Value> waitedForValues;
  if (failed(mosaic_gpu::verifyWgmmaInFlightUses(root, &waitedForValues)))
    return failure();
  declareArgumentAlignment(root);
  LoweringContext lowering(std::move(waitedForValues));
  const LoweringRegistry &registry = loweringRegistry();
  for (LoweringRegistry::Hook hook : registry.beforeWalkHooks())
    hook(lowering, root);
  SmallVector<Operation *> lowered;
  // Pre-order: a loop's block arguments are retyped before its body is
  // lowered.
  WalkResult walk =
      root->walk<WalkOrder::PreOrder>([&](Operation *op) -> WalkResult {
        bool touchesVectors =
            llvm::any_of(op->getOperands(), isRegisterVector) ||
            llvm::any_of(op->getResults(), isRegisterVector);
        bool mosaicOp = isa<mosaic_gpu::MosaicGPUDialect>(op->getDialect());
        if ((touchesVectors || mosaicOp) &&
            !op->getParentOfType<FunctionOpInterface>()) {
          op->emitOpError() << "is outside a function; mosaic-gpu-lower lowers "
                               "kernel bodies";
          return WalkResult::interrupt();
        }
        const LoweringRegistry::Rule *rule = registry.lookup(op);
        if (rule && (rule->info & OpLowering::OnVectorsOnly) && !touchesVectors)
          rule = nullptr;
        LogicalResult result = success();
        bool keep = false;
        if (rule) {
          result = rule->apply(lowering, op);
          keep = rule->info & OpLowering::KeepsOp;
        } else if (touchesVectors && op->hasTrait<OpTrait::Elementwise>()) {
          result = registry.elementwiseRule()(lowering, op);
        } else if (touchesVectors || mosaicOp) {
          result = op->emitOpError()
                   << "is not lowered by mosaic-gpu-lower yet";
        } else {
          return WalkResult::advance();
        }
        if (failed(result))
          return WalkResult::interrupt();
        if (!keep)
          lowered.push_back(op);
        return WalkResult::advance();
      });
  if (walk.wasInterrupted())
    return failure();
  for (LoweringRegistry::Hook hook : registry.afterWalkHooks())
    hook(lowering, root);
  // Record the dynamic shared memory each kernel needs (slices and scratch)
  // while the slices still exist.
  SmallVector<std::pair<gpu::GPUFuncOp, int64_t>> sharedBytes;
  root->walk([&](gpu::GPUFuncOp function) {
    sharedBytes.push_back({function, lowering.sharedMemoryBytes(function)});
  });
  for (Operation *op : llvm::reverse(lowered)) {
    if (!op->use_empty())
      return op->emitOpError()
             << "still has users after lowering; they were not lowered";
    op->erase();
  }
  for (auto [function, bytes] : sharedBytes) {
    if (bytes > limits::kMaxSharedMemoryPerBlock)
      return function.emitOpError()
             << "needs " << bytes << " bytes of shared memory (its slices and "
             << "the lowering's reduction scratch), more than the "
             << limits::kMaxSharedMemoryPerBlock << " an sm_90a block has";
    function->setAttr(kDynamicSharedBytesAttr,
                      Builder(function.getContext()).getI64IntegerAttr(bytes));
  }
  replaceBarrierTypes(root);
  return success();
}

namespace {

struct LowerPass : mosaic::impl::MosaicGPULowerBase<LowerPass> {
  void runOnOperation() override {
    if (failed(lowerKernels(getOperation())))
      signalPassFailure();
  }
};

} // namespace
