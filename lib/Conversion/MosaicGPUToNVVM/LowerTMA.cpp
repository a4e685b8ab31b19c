//===- LowerTMA.cpp - async_load / async_store / async_prefetch -----------===//
//
// TMA transfers become `cp.async.bulk.tensor` operations issued by the
// warpgroup's leader thread. Their tensor maps are derived here from the
// global view the transfer uses (after apply-transforms, the tiled view of a
// kernel argument): each distinct (argument, view, box, swizzle) gets one
// extra kernel parameter, a 128-byte CUtensorMap passed by value
// (`byval`, `nvvm.grid_constant`, 64-byte aligned), and a description on the
// kernel (`mosaic_gpu.tensor_maps`) from which the runtime encodes it.
//
// `cp.reduce.async.bulk.tensor` has no type suffix: it reduces elements of
// the tensor map's data type. A reduction's map therefore names its
// `data_type` (cuda.h's CUtensorMapDataType): signed integers for smin and
// smax, unsigned for every other integer reduction (umin and umax compare
// as unsigned, inc and dec are unsigned and 64-bit add is .u64 in the PTX
// ISA), the float type for floats. Copies move bits, and their maps leave
// the data type to the runtime's default for the element type.
//
//===----------------------------------------------------------------------===//

#include "LoweringContext.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mosaic;
using layout::SmemTransforms;

/// The kernel argument `ref` views, through view-like ops, if any.
static BlockArgument kernelArgumentOf(Value ref) {
  while (true) {
    if (auto argument = dyn_cast<BlockArgument>(ref))
      return isa<gpu::GPUFuncOp>(argument.getOwner()->getParentOp())
                 ? argument
                 : BlockArgument();
    Operation *producer = ref.getDefiningOp();
    if (isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp,
                        memref::TransposeOp, memref::CastOp>(producer))
      ref = producer->getOperand(0);
    else if (auto view = dyn_cast_or_null<ViewLikeOpInterface>(producer))
      ref = view.getViewSource();
    else
      return BlockArgument();
  }
}

/// The TMA data type a reduction of `element`s with `reduction` needs; the
/// verifier has checked that TMA defines the pair.
static TensorMapDataType reductionDataType(mosaic_gpu::TMAReduction reduction,
                                           Type element) {
  if (element.isF16())
    return TensorMapDataType::Float16;
  if (element.isBF16())
    return TensorMapDataType::BFloat16;
  if (element.isF32())
    return TensorMapDataType::Float32;
  bool isSigned = reduction == mosaic_gpu::TMAReduction::Smin ||
                  reduction == mosaic_gpu::TMAReduction::Smax;
  if (element.getIntOrFloatBitWidth() == 64)
    return isSigned ? TensorMapDataType::Int64 : TensorMapDataType::UInt64;
  return isSigned ? TensorMapDataType::Int32 : TensorMapDataType::UInt32;
}

namespace {
/// The tensor maps added so far, and the kernels whose TMA stores' reads of
/// shared memory are not waited for.
struct TMAState : GroupState {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TMAState)
  /// Tensor maps already added, per kernel, keyed by their description.
  DenseMap<std::pair<Operation *, Attribute>, Value> tensorMaps;
  llvm::SetVector<Operation *> deferredStoreKernels;
};
} // namespace

/// The kernel parameter holding the tensor map for `op`'s global `ref`
/// with box `sliceLengths`, added on first use.
static FailureOr<Value> tensorMap(LoweringContext &lowering, Operation *op,
                                  Value ref, ArrayRef<int64_t> sliceLengths,
                                  const SmemTransforms &transforms) {
  auto type = cast<MemRefType>(ref.getType());
  BlockArgument argument = kernelArgumentOf(ref);
  if (!argument)
    return op->emitOpError()
           << "transfers from or to a global buffer that is not a kernel "
              "argument (or a view of one); TMA needs the tensor's base "
              "address at launch";
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || offset != 0 ||
      llvm::any_of(strides, ShapedType::isDynamic) || !type.hasStaticShape())
    return op->emitOpError()
           << "needs a statically shaped global view at offset 0 of its "
              "kernel argument, but the view is "
           << type
           << "; index into the argument with the op's indices "
              "instead of a subview";
  int64_t rank = type.getRank();
  if (rank > limits::kMaxTensorMapRank)
    return op->emitOpError() << "needs a rank-" << rank
                             << " tensor map (after tiling); TMA handles at "
                                "most "
                             << limits::kMaxTensorMapRank << " dims";
  if (strides.back() != 1)
    return op->emitOpError() << "needs a global view whose minor dim is "
                                "contiguous, but its stride is "
                             << strides.back();
  std::string elementName;
  llvm::raw_string_ostream(elementName) << type.getElementType();
  std::optional<ElementType> element = parseElementType(elementName);
  if (!element)
    return op->emitOpError() << "transfers " << type.getElementType()
                             << " elements, which TMA does not move (one of "
                             << elementTypeSpellings() << ")";
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  TensorMapDescription map;
  map.buffer = argument.getArgNumber();
  map.elementType = *element;
  map.rank = rank;
  if (auto store = dyn_cast<mosaic_gpu::AsyncStoreOp>(op))
    if (std::optional<mosaic_gpu::TMAReduction> reduction =
            store.getReductionOp())
      map.dataType = reductionDataType(*reduction, type.getElementType());
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    map.globalDims.push_back(type.getDimSize(dim));
    if (dim != rank - 1) {
      int64_t bytes = strides[dim] * elementBytes;
      if (bytes % limits::kGlobalAlignment != 0)
        return op->emitOpError()
               << "needs global strides that are multiples of "
               << limits::kGlobalAlignment << " bytes, but dim " << dim
               << " of " << type << " has a stride of " << bytes << " bytes";
      map.globalStrides.push_back(bytes);
    }
    int64_t box = sliceLengths[dim] < 0 ? 1 : sliceLengths[dim];
    if (box > limits::kMaxTensorMapBoxDim)
      return op->emitOpError()
             << "transfers " << box << " elements along dim " << dim
             << "; a TMA box spans at most " << limits::kMaxTensorMapBoxDim;
    map.boxDims.push_back(box);
    map.elementStrides.push_back(1);
  }
  int64_t swizzle =
      transforms.swizzle == layout::kNoSwizzle ? 0 : transforms.swizzle;
  map.swizzleBytes = swizzle;
  // An H200 faults on boxes that cross the tensor's edge when the map's L2
  // promotion is NONE; 128B is what Triton and CUTLASS encode, and ran
  // such boxes correctly (docs/RationaleEmulator.md).
  map.l2PromotionBytes = 128;
  int64_t innerBytes = map.boxDims.front() * elementBytes;
  if (innerBytes % limits::kTensorMapInnerBoxMultiple != 0)
    return op->emitOpError() << "has a minor box dim of " << innerBytes
                             << " bytes; TMA needs a multiple of "
                             << limits::kTensorMapInnerBoxMultiple;
  if (swizzle && innerBytes > swizzle)
    return op->emitOpError()
           << "has a minor box dim of " << innerBytes << " bytes, wider than "
           << "its " << swizzle << "-byte swizzle";

  auto function = cast<gpu::GPUFuncOp>(argument.getOwner()->getParentOp());
  MLIRContext *context = op->getContext();
  DictionaryAttr key = tensorMapAttribute(context, map, /*withPosition=*/false);
  Value &parameter = lowering.state<TMAState>().tensorMaps[{function, key}];
  if (parameter)
    return parameter;

  // A new kernel parameter, after every other.
  unsigned index = function.getNumArguments();
  // The parameter becomes a by-value, 64-byte aligned grid constant once
  // the kernel is an LLVM function (mosaic-gpu-finalize-kernels finds it in
  // the kernel's tensor-map list).
  if (failed(function.insertArgument(index, LLVM::LLVMPointerType::get(context),
                                     DictionaryAttr::get(context),
                                     function.getLoc())))
    return op->emitOpError()
           << "cannot add a tensor-map parameter to " << function.getName();
  parameter = function.getArgument(index);

  SmallVector<Attribute> maps;
  if (auto existing = function->getAttrOfType<ArrayAttr>(kTensorMapsAttr))
    maps.append(existing.begin(), existing.end());
  map.parameter = index;
  map.index = maps.size();
  maps.push_back(tensorMapAttribute(context, map));
  function->setAttr(kTensorMapsAttr, ArrayAttr::get(context, maps));
  return parameter;
}

/// TMA coordinates, innermost dim first.
static SmallVector<Value> coordinates(OperandRange indices) {
  SmallVector<Value> reversed(indices.begin(), indices.end());
  std::reverse(reversed.begin(), reversed.end());
  return reversed;
}

/// Runs `body` in the warpgroup's leader thread only, and only where the
/// op's optional predicate holds.
static void inLeader(OpBuilder &builder, Location loc, Value leader,
                     Value predicate, function_ref<void(OpBuilder &)> body) {
  Value condition = predicate
                        ? arith::AndIOp::create(builder, loc, leader, predicate)
                        : leader;
  auto branch = scf::IfOp::create(builder, loc, condition,
                                  /*withElseRegion=*/false);
  OpBuilder inside = OpBuilder::atBlockBegin(&branch.getThenRegion().front());
  body(inside);
}

static LogicalResult checkTransferShapes(Operation *op, MemRefType global,
                                         MemRefType shared,
                                         ArrayRef<int64_t> sliceLengths) {
  SmallVector<int64_t> squeezed;
  for (int64_t length : sliceLengths)
    if (length >= 0)
      squeezed.push_back(length);
  if (ArrayRef<int64_t>(squeezed) != shared.getShape())
    return op->emitOpError()
           << "moves a box of " << global.getElementType() << " shaped ["
           << llvm::make_range(sliceLengths.begin(), sliceLengths.end())
           << "] but its shared buffer is " << shared;
  return success();
}

/// The transforms of the shared buffer `shared` of a TMA transfer, once
/// the box is checked against the buffer.
static FailureOr<SmemTransforms>
transferTransforms(Operation *op, MemRefType global, OpOperand &shared,
                   ArrayRef<int64_t> sliceLengths) {
  if (failed(checkTransferShapes(
          op, global, cast<MemRefType>(shared.get().getType()), sliceLengths)))
    return failure();
  return inTransformsFor(shared);
}

namespace {

/// How a collective transfer is shared among the blocks of a cluster: each
/// block of the group (the blocks that differ only along the collective
/// dims) moves 1/size of the box, along its leading dim, and a load
/// multicasts its part to the whole group.
struct CollectiveShare {
  int64_t size = 1;
  /// The block's rank within its group, and the multicast mask of the
  /// group (one bit per block of the cluster, by cluster rank).
  Value rank, mask;
};

} // namespace

/// The share of a transfer with `collective` dims that this block moves;
/// size 1 for a transfer that is not collective.
static FailureOr<CollectiveShare>
collectiveShare(Operation *op, ArrayAttr collective,
                SmallVectorImpl<int64_t> &sliceLengths, OpBuilder &builder) {
  CollectiveShare share;
  if (collective.empty())
    return share;
  auto function = op->getParentOfType<gpu::GPUFuncOp>();
  if (!function || !function->hasAttr(mosaic_gpu::kClusterAttr))
    return op->emitOpError()
           << "is collective over cluster dims, but its kernel declares no "
              "cluster shape (`mosaic_gpu.cluster = array<i32: x, y, z>`)";
  std::array<int32_t, 3> shape = clusterShape(op);
  SmallVector<bool> isCollective(3, false);
  for (auto dim : collective.getAsRange<mosaic_gpu::DimensionAttr>())
    isCollective[static_cast<int>(dim.getValue())] = true;
  for (int d = 0; d < 3; ++d)
    if (isCollective[d])
      share.size *= shape[d];
  if (share.size == 1)
    return share;
  // Hopper clusters hold at most 16 blocks, one bit each in the
  // multicast mask.
  if (shape[0] * shape[1] * shape[2] > 16)
    return op->emitOpError()
           << "is collective in a cluster of " << shape[0] * shape[1] * shape[2]
           << " blocks; sm_90a clusters hold at most 16";
  // Split the leading non-squeezed dim of the box.
  auto leading =
      llvm::find_if(sliceLengths, [](int64_t length) { return length > 0; });
  if (leading == sliceLengths.end() || *leading % share.size != 0)
    return op->emitOpError()
           << "shares its box among " << share.size
           << " blocks along its leading dim, which must be a multiple of "
              "that, but the box is ["
           << llvm::make_range(sliceLengths.begin(), sliceLengths.end()) << "]";
  *leading /= share.size;

  Location loc = op->getLoc();
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, value);
  };
  // Cluster ranks count x fastest; the group's pattern is shifted to the
  // block's position along the other dims.
  int64_t rankStride[3] = {1, shape[0], int64_t(shape[0]) * shape[1]};
  Value rank = constant(0), base = constant(0);
  int64_t groupStride = 1;
  int64_t pattern = 1;
  for (int d = 0; d < 3; ++d) {
    Value coordinate = gpu::ClusterBlockIdOp::create(
        builder, loc, static_cast<gpu::Dimension>(d));
    if (isCollective[d]) {
      rank =
          arith::AddIOp::create(builder, loc, rank,
                                arith::MulIOp::create(builder, loc, coordinate,
                                                      constant(groupStride)));
      groupStride *= shape[d];
      int64_t spread = 0;
      for (int64_t c = 0; c < shape[d]; ++c)
        spread |= pattern << (c * rankStride[d]);
      pattern = spread;
    } else {
      base =
          arith::AddIOp::create(builder, loc, base,
                                arith::MulIOp::create(builder, loc, coordinate,
                                                      constant(rankStride[d])));
    }
  }
  share.rank = rank;
  Value mask = arith::ShLIOp::create(builder, loc, constant(pattern), base);
  share.mask =
      arith::IndexCastOp::create(builder, loc, builder.getI16Type(), mask);
  return share;
}

/// Moves this block's share of a collective transfer: its coordinate along
/// the leading box dim and its part of the shared buffer.
static void applyShare(OpBuilder &builder, Location loc,
                       const CollectiveShare &share,
                       ArrayRef<int64_t> sliceLengths,
                       SmallVectorImpl<Value> &coords, int64_t bufferBytes,
                       Value *sharedAddress) {
  if (share.size == 1)
    return;
  // The leading box dim is the last TMA coordinate (innermost first).
  auto leading =
      llvm::find_if(sliceLengths, [](int64_t length) { return length > 0; });
  int64_t dim = std::distance(sliceLengths.begin(), leading);
  Value &coordinate = coords[coords.size() - 1 - dim];
  Value rank = arith::IndexCastOp::create(builder, loc, builder.getI32Type(),
                                          share.rank);
  coordinate = arith::AddIOp::create(
      builder, loc, coordinate,
      arith::MulIOp::create(
          builder, loc, rank,
          arith::ConstantIntOp::create(builder, loc, *leading, 32)));
  if (!sharedAddress)
    return;
  Value offset = arith::MulIOp::create(
      builder, loc,
      arith::IndexCastOp::create(builder, loc, builder.getI64Type(),
                                 share.rank),
      arith::ConstantIntOp::create(builder, loc, bufferBytes / share.size, 64));
  *sharedAddress = LLVM::GEPOp::create(builder, loc, sharedAddress->getType(),
                                       builder.getI8Type(), *sharedAddress,
                                       ArrayRef<LLVM::GEPArg>{offset});
}

static LogicalResult lowerAsyncLoad(LoweringContext &lowering,
                                    mosaic_gpu::AsyncLoadOp op) {
  FailureOr<SmemTransforms> transforms =
      transferTransforms(op, op.getSource().getType(),
                         op.getDestinationMutable(), op.getSliceLengths());
  if (failed(transforms))
    return failure();
  OpBuilder builder(op);
  Location loc = op.getLoc();
  SmallVector<int64_t> sliceLengths(op.getSliceLengths());
  FailureOr<CollectiveShare> share =
      collectiveShare(op, op.getCollective(), sliceLengths, builder);
  if (failed(share))
    return failure();
  FailureOr<Value> map =
      tensorMap(lowering, op, op.getSource(), sliceLengths, *transforms);
  if (failed(map))
    return failure();
  MemRefType destination = op.getDestination().getType();
  int64_t destinationBytes =
      destination.getNumElements() * destination.getElementTypeBitWidth() / 8;
  // Each block's share lands at its own offset in the destination, which
  // TMA needs aligned like the destination itself (the verifier checked
  // the destination's start).
  int64_t alignment =
      std::max(mosaic_gpu::kTmaSharedAlignment,
               mosaic_gpu::swizzleRepeatBytes(transforms->swizzle));
  if (share->size > 1 && (destinationBytes / share->size) % alignment != 0) {
    InFlightDiagnostic diag =
        op.emitOpError() << "shares its box among " << share->size
                         << " blocks, each loading "
                         << destinationBytes / share->size
                         << " bytes at its own offset in `destination`; TMA "
                            "needs each part "
                         << alignment << "-byte aligned";
    if (alignment > mosaic_gpu::kTmaSharedAlignment)
      diag << " with a " << transforms->swizzle << "-byte swizzle";
    return diag;
  }
  // The load names its destination in the cluster's shared window (address
  // space 7); this block's own shared memory is part of it.
  Value local = sharedAddress(builder, loc, op.getDestination());
  Value barrier = sharedAddress(builder, loc, op.getBarrier());
  SmallVector<Value> coords = coordinates(op.getIndices());
  applyShare(builder, loc, *share, sliceLengths, coords, destinationBytes,
             &local);
  Value clusterAddress = LLVM::AddrSpaceCastOp::create(
      builder, loc,
      nvvmPointerType(op.getContext(), NVVM::NVVMMemorySpace::SharedCluster),
      local);
  inLeader(builder, loc, lowering.isWarpgroupLeader(op), op.getPredicate(),
           [&](OpBuilder &inside) {
             NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
                 inside, loc, clusterAddress, *map, coords, barrier,
                 /*im2colOffsets=*/ValueRange{}, share->mask,
                 /*l2CacheHint=*/Value(), NVVM::TMALoadMode::TILE,
                 /*isCTAOnly=*/false, /*group=*/nullptr,
                 /*predicate=*/Value());
           });
  return success();
}

void mosaic::fenceSharedWritesForAsyncProxy(LoweringContext &lowering,
                                            Operation *op, OpBuilder &builder) {
  Location loc = op->getLoc();
  NVVM::FenceProxyOp::create(
      builder, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(builder.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  warpgroupBarrier(lowering, op, builder);
}

void mosaic::warpgroupBarrier(LoweringContext &lowering, Operation *op,
                              OpBuilder &builder) {
  // Named barrier 1 + warpgroup index, over the warpgroup's 128 threads
  // (barrier 0 is the block-wide one that gpu.barrier uses).
  Location loc = op->getLoc();
  Value group = lowering.warpgroupIndex(op);
  Value id = arith::IndexCastOp::create(
      builder, loc, builder.getI32Type(),
      arith::AddIOp::create(builder, loc, group,
                            arith::ConstantIndexOp::create(builder, loc, 1)));
  Value threads = arith::ConstantIntOp::create(
      builder, loc, layout::kThreadsPerWarpgroup, 32);
  NVVM::BarrierOp::create(builder, loc, /*res=*/Type(), id, threads,
                          /*reductionOp=*/nullptr,
                          /*reductionPredicate=*/Value());
}

/// The instruction's `.redOp`; the signedness of smin/umin and smax/umax
/// is in the tensor map's data type.
static NVVM::TMAReduxKind reductionKind(mosaic_gpu::TMAReduction reduction) {
  switch (reduction) {
  case mosaic_gpu::TMAReduction::Add:
    return NVVM::TMAReduxKind::ADD;
  case mosaic_gpu::TMAReduction::Min:
  case mosaic_gpu::TMAReduction::Smin:
  case mosaic_gpu::TMAReduction::Umin:
    return NVVM::TMAReduxKind::MIN;
  case mosaic_gpu::TMAReduction::Max:
  case mosaic_gpu::TMAReduction::Smax:
  case mosaic_gpu::TMAReduction::Umax:
    return NVVM::TMAReduxKind::MAX;
  case mosaic_gpu::TMAReduction::Inc:
    return NVVM::TMAReduxKind::INC;
  case mosaic_gpu::TMAReduction::Dec:
    return NVVM::TMAReduxKind::DEC;
  case mosaic_gpu::TMAReduction::And:
    return NVVM::TMAReduxKind::AND;
  case mosaic_gpu::TMAReduction::Or:
    return NVVM::TMAReduxKind::OR;
  case mosaic_gpu::TMAReduction::Xor:
    return NVVM::TMAReduxKind::XOR;
  }
  llvm_unreachable("every TMAReduction case is handled");
}

static LogicalResult lowerAsyncStore(LoweringContext &lowering,
                                     mosaic_gpu::AsyncStoreOp op) {
  FailureOr<SmemTransforms> transforms =
      transferTransforms(op, op.getDestination().getType(),
                         op.getSourceMutable(), op.getSliceLengths());
  if (failed(transforms))
    return failure();
  std::optional<NVVM::TMAReduxKind> reduction;
  if (std::optional<mosaic_gpu::TMAReduction> kind = op.getReductionOp())
    reduction = reductionKind(*kind);
  FailureOr<Value> map = tensorMap(lowering, op, op.getDestination(),
                                   op.getSliceLengths(), *transforms);
  if (failed(map))
    return failure();
  OpBuilder builder(op);
  Location loc = op.getLoc();
  // The warpgroup's threads wrote the source with ordinary stores; TMA
  // reads it through the async proxy.
  fenceSharedWritesForAsyncProxy(lowering, op, builder);
  Value source = sharedAddress(builder, loc, op.getSource());
  SmallVector<Value> coords = coordinates(op.getIndices());
  bool commit = op.getCommitGroup();
  bool waitForReads = commit && !op.getDeferWait();
  if (op.getDeferWait())
    lowering.state<TMAState>().deferredStoreKernels.insert(
        op->getParentOfType<FunctionOpInterface>());
  inLeader(builder, loc, lowering.isWarpgroupLeader(op), op.getPredicate(),
           [&](OpBuilder &inside) {
             if (reduction)
               NVVM::CpAsyncBulkTensorReduceOp::create(
                   inside, loc, *map, source,
                   NVVM::TMAReduxKindAttr::get(inside.getContext(), *reduction),
                   NVVM::TMAStoreModeAttr::get(inside.getContext(),
                                               NVVM::TMAStoreMode::TILE),
                   coords, /*l2CacheHint=*/Value());
             else
               NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
                   inside, loc, *map, source, coords, /*l2CacheHint=*/Value(),
                   NVVM::TMAStoreMode::TILE, /*predicate=*/Value());
             if (!commit)
               return;
             // Unless the wait is deferred to an async_store_wait, a
             // committed store completes its reads of shared memory before
             // the warpgroup goes on: the buffer may then be reused, and
             // the block may exit.
             NVVM::CpAsyncBulkCommitGroupOp::create(inside, loc);
             if (waitForReads)
               NVVM::CpAsyncBulkWaitGroupOp::create(inside, loc, 0,
                                                    inside.getUnitAttr());
           });
  if (waitForReads)
    warpgroupBarrier(lowering, op, builder);
  return success();
}

static LogicalResult lowerAsyncStoreWait(LoweringContext &lowering,
                                         mosaic_gpu::AsyncStoreWaitOp op) {
  // The leader issued (and committed) the stores; the barrier tells the
  // rest of the warpgroup that the sources are free (and, `complete`, that
  // the writes are performed).
  OpBuilder builder(op);
  Location loc = op.getLoc();
  inLeader(builder, loc, lowering.isWarpgroupLeader(op), /*predicate=*/Value(),
           [&](OpBuilder &inside) {
             UnitAttr readOnly =
                 op.getComplete() ? UnitAttr() : inside.getUnitAttr();
             NVVM::CpAsyncBulkWaitGroupOp::create(inside, loc, op.getPending(),
                                                  readOnly);
           });
  warpgroupBarrier(lowering, op, builder);
  return success();
}

/// Ends every kernel with deferred-wait stores with a wait for them.
static void waitForDeferredStoresBeforeExit(LoweringContext &lowering,
                                            Operation *) {
  // Shared memory must outlive the stores that read it: each thread waits
  // for the groups it committed (none, but for the leaders) before the
  // block exits.
  for (Operation *function : lowering.state<TMAState>().deferredStoreKernels)
    function->walk([](gpu::ReturnOp ret) {
      OpBuilder builder(ret);
      NVVM::CpAsyncBulkWaitGroupOp::create(builder, ret.getLoc(), 0,
                                           /*read=*/UnitAttr());
    });
}

static LogicalResult lowerAsyncPrefetch(LoweringContext &lowering,
                                        mosaic_gpu::AsyncPrefetchOp op) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  // A collective prefetch splits the box like a load; L2 is shared, so
  // there is nothing to multicast.
  SmallVector<int64_t> sliceLengths(op.getSliceLengths());
  FailureOr<CollectiveShare> share =
      collectiveShare(op, op.getCollective(), sliceLengths, builder);
  if (failed(share))
    return failure();
  FailureOr<Value> map = tensorMap(lowering, op, op.getSource(), sliceLengths,
                                   SmemTransforms::none());
  if (failed(map))
    return failure();
  SmallVector<Value> coords = coordinates(op.getIndices());
  applyShare(builder, loc, *share, sliceLengths, coords, 0, nullptr);
  inLeader(builder, loc, lowering.isWarpgroupLeader(op), op.getPredicate(),
           [&](OpBuilder &inside) {
             NVVM::CpAsyncBulkTensorPrefetchOp::create(
                 inside, loc, *map, coords, /*im2colOffsets=*/ValueRange{},
                 NVVM::TMALoadMode::TILE, /*l2CacheHint=*/Value());
           });
  return success();
}

void mosaic::populateTMALowerings(LoweringRegistry &registry) {
  registry.add<mosaic_gpu::AsyncLoadOp>(lowerAsyncLoad);
  registry.add<mosaic_gpu::AsyncStoreOp>(lowerAsyncStore);
  registry.add<mosaic_gpu::AsyncStoreWaitOp>(lowerAsyncStoreWait);
  registry.add<mosaic_gpu::AsyncPrefetchOp>(lowerAsyncPrefetch);
  registry.addAfterWalk(waitForDeferredStoresBeforeExit);
}
