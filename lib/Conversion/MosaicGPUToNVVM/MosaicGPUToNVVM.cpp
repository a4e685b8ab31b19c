//===- MosaicGPUToNVVM.cpp - Warpgroup vectors to per-thread registers ----===//
//
// Lowering is driven by values, not types: two vectors of one type may have
// different layouts, and the layout decides the registers. The pass walks
// each kernel in order, maps every warpgroup vector to the flat vector of
// registers one thread holds, rewrites the ops on those registers, and
// erases the originals once everything is lowered.
//
//===----------------------------------------------------------------------===//

#include "Conversion/MosaicGPUToNVVM/Passes.h"
#include "LayoutInference/AttributeBridge.h"

#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace mosaic {
#define GEN_PASS_DEF_MOSAICGPULOWER
#define GEN_PASS_DEF_MOSAICGPUMAPMEMORYSPACES
#include "Conversion/MosaicGPUToNVVM/Passes.h.inc"
} // namespace mosaic

using namespace mlir;
using namespace mosaic;
using layout::kThreadsPerWarpgroup;
using layout::RegisterLayout;

namespace {

bool isRegisterVector(Value value) {
  auto type = dyn_cast<VectorType>(value.getType());
  return type && type.getRank() > 0 && !type.isScalable();
}

/// The registers one thread holds for a warpgroup vector of `type`.
FailureOr<VectorType> registerType(VectorType type,
                                   const RegisterLayout &layout) {
  if (layout.isSplat())
    return VectorType::get({1}, type.getElementType());
  if (layout.isStrided())
    return VectorType::get({type.getNumElements() / kThreadsPerWarpgroup},
                           type.getElementType());
  return failure();
}

class KernelLowering {
public:
  LogicalResult run(Operation *root);

private:
  struct Fragment {
    Value registers;
    RegisterLayout layout;
  };

  FailureOr<RegisterLayout> annotatedLayout(Operation *op, StringRef name,
                                            unsigned index);
  /// A value built once per function, at its entry.
  Value atFunctionEntry(Operation *op, DenseMap<Operation *, Value> &cache,
                        function_ref<Value(OpBuilder &, Location)> build);
  Value threadInWarpgroup(Operation *op);
  FailureOr<Value> operandAs(Operation *op, OpOperand &operand,
                             const RegisterLayout &layout, OpBuilder &builder);
  LogicalResult define(Operation *op, Value result, Value registers,
                       const RegisterLayout &layout);

  LogicalResult lowerConstant(arith::ConstantOp op);
  LogicalResult lowerElementwise(Operation *op);
  LogicalResult lowerLayoutCast(mosaic_gpu::LayoutCastOp op);
  LogicalResult lowerSliceSmem(mosaic_gpu::SliceSMEMOp op);
  Value dynamicSharedMemory(Operation *op);
  LogicalResult lowerVectorLoad(mosaic_gpu::VectorLoadOp op);
  LogicalResult lowerVectorStore(mosaic_gpu::VectorStoreOp op);
  LogicalResult lowerInitializeBarrier(mosaic_gpu::InitializeBarrierOp op);
  LogicalResult lowerArrive(mosaic_gpu::ArriveOp op);
  LogicalResult lowerWait(mosaic_gpu::WaitOp op);

  /// Indices of the element at flat position `flat` of `ref`, row-major.
  SmallVector<Value> unflatten(OpBuilder &builder, Location loc, Value flat,
                               MemRefType ref);

  DenseMap<Value, Fragment> fragments;
  DenseMap<Operation *, Value> threadIds;
  DenseMap<Operation *, Value> sharedMemoryBases;
  SmallVector<Operation *> lowered;
};

FailureOr<RegisterLayout>
KernelLowering::annotatedLayout(Operation *op, StringRef name, unsigned index) {
  auto layouts = op->getAttrOfType<ArrayAttr>(name);
  if (!layouts || index >= layouts.size())
    return op->emitOpError() << "has no `" << name
                             << "` entry for this vector; run "
                                "mosaic-gpu-infer-layouts first";
  FailureOr<RegisterLayout> layout = attrToLayout(layouts[index]);
  if (failed(layout))
    return op->emitOpError()
           << "`" << name << "` entry " << index << " is not a register layout";
  return layout;
}

Value KernelLowering::atFunctionEntry(
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

Value KernelLowering::threadInWarpgroup(Operation *op) {
  return atFunctionEntry(op, threadIds, [](OpBuilder &builder, Location loc) {
    // gpu.thread_id x mod 128: the thread's place in its warpgroup.
    Value tid = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::x);
    Value groupSize =
        arith::ConstantIndexOp::create(builder, loc, kThreadsPerWarpgroup);
    return arith::RemUIOp::create(builder, loc, tid, groupSize).getResult();
  });
}

FailureOr<Value> KernelLowering::operandAs(Operation *op, OpOperand &operand,
                                           const RegisterLayout &layout,
                                           OpBuilder &builder) {
  auto it = fragments.find(operand.get());
  if (it == fragments.end())
    return op->emitOpError()
           << "uses a vector that mosaic-gpu-lower has not lowered (operand #"
           << operand.getOperandNumber() << ")";
  const Fragment &fragment = it->second;
  if (fragment.layout == layout)
    return fragment.registers;
  auto type = cast<VectorType>(operand.get().getType());
  FailureOr<VectorType> target = registerType(type, layout);
  if (fragment.layout.isSplat() && succeeded(target)) {
    // Every thread already holds the value; spread it over its registers.
    Location loc = op->getLoc();
    Value scalar = vector::ExtractOp::create(builder, loc, fragment.registers,
                                             ArrayRef<int64_t>{0});
    return vector::BroadcastOp::create(builder, loc, *target, scalar)
        .getResult();
  }
  return op->emitOpError() << "cannot relayout operand #"
                           << operand.getOperandNumber() << " from "
                           << fragment.layout.str() << " to " << layout.str()
                           << " in registers";
}

LogicalResult KernelLowering::define(Operation *op, Value result,
                                     Value registers,
                                     const RegisterLayout &layout) {
  fragments.try_emplace(result, Fragment{registers, layout});
  return success();
}

LogicalResult KernelLowering::lowerConstant(arith::ConstantOp op) {
  FailureOr<RegisterLayout> layout = annotatedLayout(op, "out_layouts", 0);
  if (failed(layout))
    return failure();
  auto elements = dyn_cast<DenseElementsAttr>(op.getValue());
  auto type = cast<VectorType>(op.getType());
  FailureOr<VectorType> target = registerType(type, *layout);
  if (!elements || !elements.isSplat() || failed(target))
    return op.emitOpError() << "mosaic-gpu-lower only lowers splat vector "
                               "constants with splat or strided layouts so far";
  OpBuilder builder(op);
  Value registers = arith::ConstantOp::create(
      builder, op.getLoc(),
      DenseElementsAttr::get(*target, elements.getSplatValue<Attribute>()));
  return define(op, op.getResult(), registers, *layout);
}

LogicalResult KernelLowering::lowerElementwise(Operation *op) {
  OpBuilder builder(op);
  SmallVector<Value> operands;
  unsigned vectorIndex = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isRegisterVector(operand.get())) {
      operands.push_back(operand.get());
      continue;
    }
    FailureOr<RegisterLayout> layout =
        annotatedLayout(op, "in_layouts", vectorIndex++);
    if (failed(layout))
      return failure();
    FailureOr<Value> registers = operandAs(op, operand, *layout, builder);
    if (failed(registers))
      return failure();
    operands.push_back(*registers);
  }
  SmallVector<Type> resultTypes;
  SmallVector<RegisterLayout> resultLayouts;
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    FailureOr<RegisterLayout> layout =
        annotatedLayout(op, "out_layouts", index);
    if (failed(layout))
      return failure();
    FailureOr<VectorType> type =
        registerType(cast<VectorType>(result.getType()), *layout);
    if (failed(type))
      return op->emitOpError() << "mosaic-gpu-lower does not lower "
                               << layout->str() << " values yet";
    resultTypes.push_back(*type);
    resultLayouts.push_back(*layout);
  }
  // The op itself does not change: it now applies to the thread's registers.
  OperationState state(op->getLoc(), op->getName(), operands, resultTypes,
                       op->getAttrs());
  state.attributes.erase("in_layouts");
  state.attributes.erase("out_layouts");
  Operation *replacement = builder.create(state);
  for (auto [result, registers, layout] : llvm::zip_equal(
           op->getResults(), replacement->getResults(), resultLayouts))
    (void)define(op, result, registers, layout);
  return success();
}

Value KernelLowering::dynamicSharedMemory(Operation *op) {
  return atFunctionEntry(
      op, sharedMemoryBases, [](OpBuilder &builder, Location loc) {
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

LogicalResult KernelLowering::lowerSliceSmem(mosaic_gpu::SliceSMEMOp op) {
  MemRefType type = op.getResult().getType();
  if (!type.getLayout().isIdentity())
    return op.emitOpError() << "mosaic-gpu-lower only carves buffers with the "
                               "identity layout out of shared memory, not "
                            << type;
  Value base = dynamicSharedMemory(op);
  OpBuilder builder(op);
  Value offset = arith::ConstantIndexOp::create(builder, op.getLoc(),
                                                op.getOffsetAttr().getInt());
  Value view = memref::ViewOp::create(builder, op.getLoc(), type, base, offset,
                                      ValueRange{});
  op.getResult().replaceAllUsesWith(view);
  return success();
}

LogicalResult KernelLowering::lowerLayoutCast(mosaic_gpu::LayoutCastOp op) {
  FailureOr<RegisterLayout> layout = annotatedLayout(op, "out_layouts", 0);
  if (failed(layout))
    return failure();
  OpBuilder builder(op);
  FailureOr<Value> registers =
      operandAs(op, op->getOpOperand(0), *layout, builder);
  if (failed(registers))
    return failure();
  return define(op, op.getResult(), *registers, *layout);
}

SmallVector<Value> KernelLowering::unflatten(OpBuilder &builder, Location loc,
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

/// Strided transfers move `v`-element chunks, which must lie within a row of
/// a statically shaped, untiled buffer.
static LogicalResult checkStridedTransfer(Operation *op,
                                          const RegisterLayout &layout,
                                          MemRefType ref) {
  if (!layout.isStrided())
    return op->emitOpError() << "mosaic-gpu-lower only moves strided vectors "
                                "between registers and memory so far, not "
                             << layout.str();
  if (!ref.hasStaticShape() || ref.getShape().back() % layout.vectorSize())
    return op->emitOpError()
           << "needs a static shape whose minor dim is a multiple of the "
              "vector size "
           << layout.vectorSize() << ", but the buffer is " << ref;
  if (op->hasAttr(mosaic_gpu::kTransformsAppliedAttr))
    return op->emitOpError() << "mosaic-gpu-lower does not lower transfers "
                                "from tiled shared memory yet";
  return success();
}

LogicalResult KernelLowering::lowerVectorLoad(mosaic_gpu::VectorLoadOp op) {
  FailureOr<RegisterLayout> layout = annotatedLayout(op, "out_layouts", 0);
  if (failed(layout))
    return failure();
  MemRefType ref = op.getSource().getType();
  if (failed(checkStridedTransfer(op, *layout, ref)))
    return failure();
  VectorType type = op.getResult().getType();
  VectorType target = *registerType(type, *layout);
  int64_t vectorSize = layout->vectorSize();
  auto chunkType = VectorType::get({vectorSize}, type.getElementType());
  Value thread = threadInWarpgroup(op);
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Value registers =
      arith::ConstantOp::create(builder, loc, builder.getZeroAttr(target));
  for (int64_t chunk = 0; chunk * vectorSize < target.getNumElements();
       ++chunk) {
    Value flat = chunkStart(builder, loc, chunk, thread, vectorSize);
    Value loaded =
        vector::LoadOp::create(builder, loc, chunkType, op.getSource(),
                               unflatten(builder, loc, flat, ref));
    registers = vector::InsertStridedSliceOp::create(
        builder, loc, loaded, registers, ArrayRef<int64_t>{chunk * vectorSize},
        ArrayRef<int64_t>{1});
  }
  return define(op, op.getResult(), registers, *layout);
}

LogicalResult KernelLowering::lowerVectorStore(mosaic_gpu::VectorStoreOp op) {
  FailureOr<RegisterLayout> layout = annotatedLayout(op, "in_layouts", 0);
  if (failed(layout))
    return failure();
  if (layout->isSplat()) {
    // Every thread holds the value: spread it over a strided layout and let
    // each thread write its chunks.
    VectorType type = op.getValueToStore().getType();
    if (std::optional<int64_t> vectorSize = layout::defaultStridedVectorSize(
            type.getShape(), type.getElementTypeBitWidth()))
      layout = RegisterLayout::strided(*vectorSize);
  }
  MemRefType ref = op.getDestination().getType();
  if (failed(checkStridedTransfer(op, *layout, ref)))
    return failure();
  OpBuilder builder(op);
  FailureOr<Value> registers =
      operandAs(op, op->getOpOperand(0), *layout, builder);
  if (failed(registers))
    return failure();
  int64_t vectorSize = layout->vectorSize();
  int64_t total = cast<VectorType>(registers->getType()).getNumElements();
  Value thread = threadInWarpgroup(op);
  Location loc = op.getLoc();
  for (int64_t chunk = 0; chunk * vectorSize < total; ++chunk) {
    Value flat = chunkStart(builder, loc, chunk, thread, vectorSize);
    Value piece = vector::ExtractStridedSliceOp::create(
        builder, loc, *registers, ArrayRef<int64_t>{chunk * vectorSize},
        ArrayRef<int64_t>{vectorSize}, ArrayRef<int64_t>{1});
    vector::StoreOp::create(builder, loc, piece, op.getDestination(),
                            unflatten(builder, loc, flat, ref));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Barriers
//
// A warpgroup arrives once in the dialect's counting, but every one of its
// 128 threads executes the arrive: each thread's release then covers its own
// earlier writes, which a single elected arrival would not. Barriers are
// therefore initialized with 128 arrivals per warpgroup arrival. After
// lowering, barrier memrefs are plain i64 memrefs.
//===----------------------------------------------------------------------===//

static constexpr int64_t kBarrierBytes = 8;
/// The most shared memory one sm_90a block can use (227 KiB).
static constexpr int64_t kMaxSharedMemoryBytes = 227 * 1024;
/// Suspend-time hint of one try_wait, in nanoseconds; the wait loops anyway.
static constexpr int32_t kTryWaitTicks = 10'000'000;

/// The shared-memory address of the first barrier of `ref`.
static Value barrierAddress(OpBuilder &builder, Location loc, Value ref) {
  auto metadata = memref::ExtractStridedMetadataOp::create(builder, loc, ref);
  Value aligned =
      memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, ref);
  Value bytes = arith::MulIOp::create(
      builder, loc, metadata.getOffset(),
      arith::ConstantIndexOp::create(builder, loc, kBarrierBytes));
  Value address = arith::IndexCastOp::create(
      builder, loc, builder.getI64Type(),
      arith::AddIOp::create(builder, loc, aligned, bytes));
  return LLVM::IntToPtrOp::create(
      builder, loc, LLVM::LLVMPointerType::get(builder.getContext(), 3),
      address);
}

static LogicalResult rejectTensorCoreOrdering(Operation *op, bool orders) {
  if (!orders)
    return success();
  return op->emitOpError()
         << "orders tensor core operations (`orders_tensor_core`), which "
            "needs tcgen05 fences that sm_90a does not have";
}

LogicalResult
KernelLowering::lowerInitializeBarrier(mosaic_gpu::InitializeBarrierOp op) {
  if (failed(rejectTensorCoreOrdering(op, op.getOrdersTensorCore())))
    return failure();
  int64_t threadArrivals = op.getArrivalCount() * kThreadsPerWarpgroup;
  if (threadArrivals > mosaic_gpu::kMaxBarrierCount)
    return op.emitOpError()
           << "needs " << threadArrivals << " thread arrivals ("
           << op.getArrivalCount() << " warpgroups x " << kThreadsPerWarpgroup
           << "), more than an mbarrier counts ("
           << mosaic_gpu::kMaxBarrierCount << ")";
  int64_t barrierBytes = int64_t(op.getNumBarriers()) * kBarrierBytes;
  if (barrierBytes > kMaxSharedMemoryBytes)
    return op.emitOpError()
           << "initializes " << op.getNumBarriers() << " barriers ("
           << barrierBytes << " bytes), more than the " << kMaxSharedMemoryBytes
           << " bytes of shared memory an sm_90a block has";
  Value basePointer = op.getBasePointer();
  if (auto ref = dyn_cast<MemRefType>(basePointer.getType()))
    if (!memref::isStaticShapeAndContiguousRowMajor(ref))
      return op.emitOpError() << "initializes barriers that are not "
                                 "contiguous in shared memory: "
                              << ref;

  OpBuilder builder(op);
  Location loc = op.getLoc();
  MLIRContext *context = op.getContext();
  Value first = isa<MemRefType>(basePointer.getType())
                    ? barrierAddress(builder, loc, basePointer)
                    : basePointer;
  // One thread of the block initializes; the others wait at the block
  // barrier below, after the fence that makes the initialization visible.
  Value anyThreadIndex;
  for (gpu::Dimension dimension :
       {gpu::Dimension::x, gpu::Dimension::y, gpu::Dimension::z}) {
    Value index = gpu::ThreadIdOp::create(builder, loc, dimension);
    anyThreadIndex =
        anyThreadIndex
            ? arith::OrIOp::create(builder, loc, anyThreadIndex, index)
            : index;
  }
  Value isFirstThread = arith::CmpIOp::create(
      builder, loc, arith::CmpIPredicate::eq, anyThreadIndex,
      arith::ConstantIndexOp::create(builder, loc, 0));
  Value count = arith::ConstantIntOp::create(builder, loc, threadArrivals, 32);
  auto sharedPointer = LLVM::LLVMPointerType::get(context, 3);
  for (int32_t index = 0, end = op.getNumBarriers(); index < end; ++index) {
    Value address = index == 0
                        ? first
                        : LLVM::GEPOp::create(builder, loc, sharedPointer,
                                              builder.getI64Type(), first,
                                              ArrayRef<LLVM::GEPArg>{index});
    NVVM::MBarrierInitOp::create(builder, loc, address, count, isFirstThread);
  }
  NVVM::FenceMbarrierInitOp::create(builder, loc);
  gpu::BarrierOp::create(builder, loc);
  return success();
}

LogicalResult KernelLowering::lowerArrive(mosaic_gpu::ArriveOp op) {
  if (failed(rejectTensorCoreOrdering(op, op.getOrdersTensorCore())))
    return failure();
  OpBuilder builder(op);
  NVVM::MBarrierArriveOp::create(
      builder, op.getLoc(), /*res=*/Type(),
      barrierAddress(builder, op.getLoc(), op.getBarrier()), /*count=*/Value());
  return success();
}

LogicalResult KernelLowering::lowerWait(mosaic_gpu::WaitOp op) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Value parity = arith::ExtUIOp::create(builder, loc, builder.getI32Type(),
                                        op.getParity());
  Value ticks = arith::ConstantIntOp::create(builder, loc, kTryWaitTicks, 32);
  NVVM::MBarrierTryWaitParityOp::create(
      builder, loc, barrierAddress(builder, loc, op.getBarrier()), parity,
      ticks);
  return success();
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

LogicalResult KernelLowering::run(Operation *root) {
  declareArgumentAlignment(root);
  WalkResult walk = root->walk([&](Operation *op) -> WalkResult {
    bool touchesVectors = llvm::any_of(op->getOperands(), isRegisterVector) ||
                          llvm::any_of(op->getResults(), isRegisterVector);
    bool mosaicOp = isa<mosaic_gpu::MosaicGPUDialect>(op->getDialect());
    if ((touchesVectors || mosaicOp) &&
        !op->getParentOfType<FunctionOpInterface>()) {
      op->emitOpError() << "is outside a function; mosaic-gpu-lower lowers "
                           "kernel bodies";
      return WalkResult::interrupt();
    }
    LogicalResult result = success();
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      if (!touchesVectors)
        return WalkResult::advance();
      result = lowerConstant(constant);
    } else if (auto slice = dyn_cast<mosaic_gpu::SliceSMEMOp>(op)) {
      result = lowerSliceSmem(slice);
    } else if (auto cast = dyn_cast<mosaic_gpu::LayoutCastOp>(op)) {
      result = lowerLayoutCast(cast);
    } else if (auto load = dyn_cast<mosaic_gpu::VectorLoadOp>(op)) {
      result = lowerVectorLoad(load);
    } else if (auto store = dyn_cast<mosaic_gpu::VectorStoreOp>(op)) {
      result = lowerVectorStore(store);
    } else if (auto init = dyn_cast<mosaic_gpu::InitializeBarrierOp>(op)) {
      result = lowerInitializeBarrier(init);
    } else if (auto arrive = dyn_cast<mosaic_gpu::ArriveOp>(op)) {
      result = lowerArrive(arrive);
    } else if (auto wait = dyn_cast<mosaic_gpu::WaitOp>(op)) {
      result = lowerWait(wait);
    } else if (touchesVectors && op->hasTrait<OpTrait::Elementwise>()) {
      result = lowerElementwise(op);
    } else if (touchesVectors || mosaicOp) {
      result = op->emitOpError() << "is not lowered by mosaic-gpu-lower yet";
    } else {
      return WalkResult::advance();
    }
    if (failed(result))
      return WalkResult::interrupt();
    lowered.push_back(op);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  for (Operation *op : llvm::reverse(lowered)) {
    if (!op->use_empty())
      return op->emitOpError()
             << "still has users after lowering; they were not lowered";
    op->erase();
  }
  replaceBarrierTypes(root);
  return success();
}

struct MapMemorySpacesPass
    : mosaic::impl::MosaicGPUMapMemorySpacesBase<MapMemorySpacesPass> {
  void runOnOperation() override {
    // NVPTX address spaces (NVPTX usage guide).
    AttrTypeReplacer replacer;
    replacer.addReplacement(
        [](gpu::AddressSpaceAttr space) -> std::optional<Attribute> {
          unsigned number = 0;
          switch (space.getValue()) {
          case gpu::AddressSpace::Global:
            number = 1;
            break;
          case gpu::AddressSpace::Workgroup:
            number = 3;
            break;
          case gpu::AddressSpace::Private:
            number = 5;
            break;
          }
          return IntegerAttr::get(IntegerType::get(space.getContext(), 64),
                                  number);
        });
    getOperation()->walk([&](Operation *op) {
      replacer.replaceElementsIn(op, /*replaceAttrs=*/true,
                                 /*replaceLocs=*/false, /*replaceTypes=*/true);
    });
  }
};

struct LowerPass : mosaic::impl::MosaicGPULowerBase<LowerPass> {
  void runOnOperation() override {
    if (failed(KernelLowering().run(getOperation())))
      signalPassFailure();
  }
};

} // namespace
