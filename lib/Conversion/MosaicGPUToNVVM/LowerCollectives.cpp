//===- LowerCollectives.cpp - device_id, remote_ref, semaphores -----------===//
//
// Kernels that span devices read everything device-specific from their
// collective table (mosaic/Contracts/CollectiveTable.h): a parameter that
// the lowering adds after every other, an `!llvm.ptr<1>` to global memory
// that the runtime fills per device. device_id and device_count load its
// header; a remote view of symmetric argument s on device q is the address
// peers[s][q]; a TMA transfer on a remote view uses the tensor map
// maps[p][q] in the table (LowerTMA.cpp asks peerTensorMap for it).
//
// The semaphore ops implement the release/acquire rules of
// docs/RationaleMultiDevice.md ("The memory model") at `.sys` scope, with
// inline PTX: MLIR's NVVM dialect has no op for `red.release.sys` or
// `ld.acquire.sys`.
//
//===----------------------------------------------------------------------===//

#include "LoweringContext.h"
#include "mosaic/Contracts/CollectiveTable.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mosaic;
namespace table = mosaic::collective_table;

namespace {
/// The table parameter of each kernel, and what is loaded from it once per
/// kernel.
struct CollectiveState : GroupState {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CollectiveState)
  DenseMap<Operation *, BlockArgument> tables;
  DenseMap<Operation *, Value> deviceIds, deviceCounts, mapsOffsets;
  /// Each lowered remote_ref and the memref its uses become once the walk
  /// is done (the TMA rules still look through the op during the walk).
  SmallVector<std::pair<mosaic_gpu::RemoteRefOp, Value>> remoteViews;
};
} // namespace

/// True for the ops that read the collective table.
static bool usesCollectiveTable(Operation *op) {
  return isa<mosaic_gpu::DeviceIdOp, mosaic_gpu::DeviceCountOp,
             mosaic_gpu::RemoteRefOp, mosaic_gpu::SemaphoreSignalOp,
             mosaic_gpu::SemaphoreWaitOp>(op);
}

/// Adds the table parameter to every kernel that has a symmetric argument
/// or an op that reads the table, after the kernel's arguments; the tensor
/// maps LowerTMA.cpp adds go before it, so it stays last.
static void addCollectiveTables(LoweringContext &lowering, Operation *root) {
  root->walk([&](gpu::GPUFuncOp function) {
    if (!function.isKernel())
      return;
    bool symmetric = false;
    for (unsigned i = 0; i < function.getNumArguments(); ++i)
      symmetric |= bool(function.getArgAttr(i, mosaic_gpu::kSymmetricAttr));
    bool reads = function
                     .walk([](Operation *op) {
                       return usesCollectiveTable(op) ? WalkResult::interrupt()
                                                      : WalkResult::advance();
                     })
                     .wasInterrupted();
    if (!symmetric && !reads)
      return;
    MLIRContext *context = function.getContext();
    unsigned index = function.getNumArguments();
    if (failed(function.insertArgument(
            index, nvvmPointerType(context, NVVM::NVVMMemorySpace::Global),
            DictionaryAttr::get(context), function.getLoc())))
      return;
    lowering.state<CollectiveState>().tables[function] =
        function.getArgument(index);
  });
}

BlockArgument mosaic::collectiveTable(LoweringContext &lowering,
                                      Operation *op) {
  Operation *function =
      isa<gpu::GPUFuncOp>(op) ? op : op->getParentOfType<gpu::GPUFuncOp>();
  return lowering.state<CollectiveState>().tables.lookup(function);
}

/// Fails with an error on `op` when its function has no table: only
/// kernels get one.
static LogicalResult checkTable(LoweringContext &lowering, Operation *op) {
  if (collectiveTable(lowering, op))
    return success();
  return op->emitOpError()
         << "reads the collective table, which only gpu.func kernels take; "
            "it cannot be lowered in a function that is not a kernel";
}

/// A load of `type` at byte `offset` (an i64) of the table. The table does
/// not change while the kernel runs.
static Value loadFromTable(OpBuilder &builder, Location loc, Value table,
                           Value offset, Type type) {
  Value address =
      LLVM::GEPOp::create(builder, loc, table.getType(), builder.getI8Type(),
                          table, ArrayRef<LLVM::GEPArg>{offset});
  return LLVM::LoadOp::create(builder, loc, type, address,
                              type.getIntOrFloatBitWidth() / 8,
                              /*isVolatile=*/false, /*isNonTemporal=*/false,
                              /*isInvariant=*/true);
}

static Value i64Constant(OpBuilder &builder, Location loc, int64_t value) {
  return arith::ConstantIntOp::create(builder, loc, value, 64);
}

/// A u32 of the table's header, loaded once per kernel at its entry.
static Value headerField(LoweringContext &lowering, Operation *op,
                         DenseMap<Operation *, Value> &cache, uint64_t offset) {
  Value table = collectiveTable(lowering, op);
  return atFunctionEntry(op, cache, [&](OpBuilder &builder, Location loc) {
    return loadFromTable(builder, loc, table, i64Constant(builder, loc, offset),
                         builder.getI32Type());
  });
}

static Value deviceCount(LoweringContext &lowering, Operation *op) {
  return headerField(lowering, op,
                     lowering.state<CollectiveState>().deviceCounts,
                     table::kDeviceCountOffset);
}

/// `base` + (`row` * `devices` + `device`) * `entryBytes`, over i64, with
/// the i32 operands widened (device ids and counts are never negative).
static Value tableOffset(OpBuilder &builder, Location loc, Value row,
                         Value device, Value devices, int64_t entryBytes,
                         Value base) {
  auto widen = [&](Value value) -> Value {
    return arith::ExtUIOp::create(builder, loc, builder.getI64Type(), value);
  };
  Value rowStart =
      arith::MulIOp::create(builder, loc, row, widen(devices)).getResult();
  Value entry =
      arith::AddIOp::create(builder, loc, rowStart, widen(device)).getResult();
  Value bytes = arith::MulIOp::create(builder, loc, entry,
                                      i64Constant(builder, loc, entryBytes))
                    .getResult();
  return arith::AddIOp::create(builder, loc, base, bytes);
}

/// The position of symmetric argument `argument` among the kernel's
/// symmetric arguments: its row s of `peers`.
static int64_t symmetricRow(BlockArgument argument) {
  auto function = cast<gpu::GPUFuncOp>(argument.getOwner()->getParentOp());
  int64_t row = 0;
  for (unsigned i = 0; i < argument.getArgNumber(); ++i)
    row += bool(function.getArgAttr(i, mosaic_gpu::kSymmetricAttr));
  return row;
}

/// peers[s][device] for symmetric argument `argument`: the generic address
/// of that device's copy, as an i64.
static Value peerAddress(LoweringContext &lowering, Operation *op,
                         BlockArgument argument, Value device,
                         OpBuilder &builder) {
  Location loc = op->getLoc();
  Value devices = deviceCount(lowering, op);
  Value peers = i64Constant(builder, loc, table::kPeersOffset);
  Value row = i64Constant(builder, loc, symmetricRow(argument));
  Value offset =
      tableOffset(builder, loc, row, device, devices, table::kPeerBytes, peers);
  return loadFromTable(builder, loc, collectiveTable(lowering, op), offset,
                       builder.getI64Type());
}

Value mosaic::peerTensorMap(LoweringContext &lowering, Operation *op,
                            int64_t peerMap, Value device, OpBuilder &builder) {
  Location loc = op->getLoc();
  Value table = collectiveTable(lowering, op);
  Value mapsOffset =
      headerField(lowering, op, lowering.state<CollectiveState>().mapsOffsets,
                  table::kTensorMapsOffsetOffset);
  Value devices = deviceCount(lowering, op);
  Value base =
      arith::ExtUIOp::create(builder, loc, builder.getI64Type(), mapsOffset);
  Value row = i64Constant(builder, loc, peerMap);
  Value offset = tableOffset(builder, loc, row, device, devices,
                             limits::kTensorMapBytes, base);
  Value address =
      LLVM::GEPOp::create(builder, loc, table.getType(), builder.getI8Type(),
                          table, ArrayRef<LLVM::GEPArg>{offset});
  // TMA takes the map's generic address.
  return LLVM::AddrSpaceCastOp::create(
      builder, loc,
      nvvmPointerType(op->getContext(), NVVM::NVVMMemorySpace::Generic),
      address);
}

static LogicalResult lowerDeviceId(LoweringContext &lowering,
                                   mosaic_gpu::DeviceIdOp op) {
  if (failed(checkTable(lowering, op)))
    return failure();
  op.getResult().replaceAllUsesWith(
      headerField(lowering, op, lowering.state<CollectiveState>().deviceIds,
                  table::kDeviceIdOffset));
  return success();
}

static LogicalResult lowerDeviceCount(LoweringContext &lowering,
                                      mosaic_gpu::DeviceCountOp op) {
  if (failed(checkTable(lowering, op)))
    return failure();
  op.getResult().replaceAllUsesWith(deviceCount(lowering, op));
  return success();
}

/// The LLVM pointer type the upstream conversion gives `type`'s buffers.
static LLVM::LLVMPointerType pointerTypeOf(MemRefType type) {
  NVVM::NVVMMemorySpace space =
      mosaic_gpu::isGlobalMemory(type) && type.getMemorySpace()
          ? NVVM::NVVMMemorySpace::Global
          : NVVM::NVVMMemorySpace::Generic;
  return nvvmPointerType(type.getContext(), space);
}

/// The memref `type` whose buffer starts at the generic `address` (an i64):
/// its LLVM descriptor, cast to the memref type. The upstream conversion to
/// LLVM folds the cast away.
static Value memrefAt(OpBuilder &builder, Location loc, MemRefType type,
                      Value address) {
  MLIRContext *context = builder.getContext();
  LLVM::LLVMPointerType pointerType = pointerTypeOf(type);
  Value pointer = LLVM::IntToPtrOp::create(
      builder, loc, nvvmPointerType(context, NVVM::NVVMMemorySpace::Generic),
      address);
  if (pointerType.getAddressSpace() != 0)
    pointer = LLVM::AddrSpaceCastOp::create(builder, loc, pointerType, pointer);
  Type i64 = builder.getI64Type();
  SmallVector<Type> fields = {pointerType, pointerType, i64};
  int64_t rank = type.getRank();
  if (rank > 0) {
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
  }
  auto descriptorType = LLVM::LLVMStructType::getLiteral(context, fields);
  Value descriptor = LLVM::PoisonOp::create(builder, loc, descriptorType);
  auto insert = [&](Value value, ArrayRef<int64_t> position) {
    descriptor =
        LLVM::InsertValueOp::create(builder, loc, descriptor, value, position);
  };
  SmallVector<int64_t> strides;
  int64_t offset = 0;
  (void)type.getStridesAndOffset(strides, offset);
  insert(pointer, {0});
  insert(pointer, {1});
  insert(i64Constant(builder, loc, offset), {2});
  for (int64_t dim = 0; dim < rank; ++dim) {
    insert(i64Constant(builder, loc, type.getDimSize(dim)), {3, dim});
    insert(i64Constant(builder, loc, strides[dim]), {4, dim});
  }
  return UnrealizedConversionCastOp::create(builder, loc, type, descriptor)
      .getResult(0);
}

static LogicalResult lowerRemoteRef(LoweringContext &lowering,
                                    mosaic_gpu::RemoteRefOp op) {
  if (failed(checkTable(lowering, op)))
    return failure();
  OpBuilder builder(op);
  Value address =
      peerAddress(lowering, op, mosaic_gpu::symmetricArgument(op.getRef()),
                  op.getDevice(), builder);
  lowering.state<CollectiveState>().remoteViews.push_back(
      {op, memrefAt(builder, op.getLoc(), op.getType(), address)});
  return success();
}

/// The remote views' uses become the memrefs they were lowered to.
static void replaceRemoteViews(LoweringContext &lowering, Operation *) {
  for (auto [op, view] : lowering.state<CollectiveState>().remoteViews)
    op.getResult().replaceAllUsesWith(view);
}

/// The global address (`!llvm.ptr<1>`) of `semaphores[indices]`: in this
/// device's copy, or in the copy of `device` when it is given or
/// `semaphores` is a remote view.
static Value semaphoreAddress(LoweringContext &lowering, Operation *op,
                              Value semaphores, ValueRange indices,
                              Value device, OpBuilder &builder) {
  Location loc = op->getLoc();
  auto type = cast<MemRefType>(semaphores.getType());
  if (auto remote = semaphores.getDefiningOp<mosaic_gpu::RemoteRefOp>()) {
    semaphores = remote.getRef();
    device = remote.getDevice();
  }
  Value base;
  if (device) {
    base = peerAddress(lowering, op, mosaic_gpu::symmetricArgument(semaphores),
                       device, builder);
  } else {
    Value pointer = memref::ExtractAlignedPointerAsIndexOp::create(builder, loc,
                                                                   semaphores);
    base = arith::IndexCastUIOp::create(builder, loc, builder.getI64Type(),
                                        pointer);
  }
  SmallVector<int64_t> strides;
  int64_t offset = 0;
  (void)type.getStridesAndOffset(strides, offset);
  Value element = i64Constant(builder, loc, offset);
  for (auto [index, stride] : llvm::zip(indices, strides)) {
    Value wide =
        arith::ExtSIOp::create(builder, loc, builder.getI64Type(), index);
    Value scaled = arith::MulIOp::create(builder, loc, wide,
                                         i64Constant(builder, loc, stride));
    element = arith::AddIOp::create(builder, loc, element, scaled);
  }
  Value bytes = arith::MulIOp::create(
      builder, loc, element, i64Constant(builder, loc, sizeof(uint32_t)));
  Value address = arith::AddIOp::create(builder, loc, base, bytes);
  MLIRContext *context = op->getContext();
  Value generic = LLVM::IntToPtrOp::create(
      builder, loc, nvvmPointerType(context, NVVM::NVVMMemorySpace::Generic),
      address);
  return LLVM::AddrSpaceCastOp::create(
      builder, loc, nvvmPointerType(context, NVVM::NVVMMemorySpace::Global),
      generic);
}

static LogicalResult lowerSemaphoreSignal(LoweringContext &lowering,
                                          mosaic_gpu::SemaphoreSignalOp op) {
  if (failed(checkTable(lowering, op)))
    return failure();
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Value address = semaphoreAddress(lowering, op, op.getSemaphores(),
                                   op.getIndices(), op.getDevice(), builder);
  // Every thread's earlier writes are ordered before the leader's release.
  warpgroupBarrier(lowering, op, builder);
  inLeader(builder, loc, lowering.isWarpgroupLeader(op), /*predicate=*/Value(),
           [&](OpBuilder &inside) {
             // The leader issued the warpgroup's TMA stores: they must be
             // complete (not only done reading shared memory) and ordered with
             // the generic proxy before the release publishes them.
             NVVM::CpAsyncBulkWaitGroupOp::create(inside, loc, 0,
                                                  /*read=*/UnitAttr());
             NVVM::FenceProxyOp::create(inside, loc,
                                        NVVM::ProxyKind::async_global,
                                        NVVM::SharedSpaceAttr());
             NVVM::InlinePtxOp::create(
                 inside, loc, TypeRange{}, ValueRange{address, op.getValue()},
                 ValueRange{}, "red.release.sys.global.add.u32 [$0], $1;",
                 /*predicate=*/Value());
           });
  return success();
}

static LogicalResult lowerSemaphoreWait(LoweringContext &lowering,
                                        mosaic_gpu::SemaphoreWaitOp op) {
  if (failed(checkTable(lowering, op)))
    return failure();
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Value address =
      semaphoreAddress(lowering, op, op.getSemaphores(), op.getIndices(),
                       /*device=*/Value(), builder);
  Value count = op.getCount();
  inLeader(
      builder, loc, lowering.isWarpgroupLeader(op), /*predicate=*/Value(),
      [&](OpBuilder &inside) {
        auto poll =
            scf::WhileOp::create(inside, loc, TypeRange{}, ValueRange{});
        Block *before = inside.createBlock(&poll.getBefore());
        OpBuilder check = OpBuilder::atBlockBegin(before);
        Value value =
            NVVM::InlinePtxOp::create(check, loc, TypeRange{check.getI32Type()},
                                      ValueRange{address}, ValueRange{},
                                      "ld.acquire.sys.global.u32 $0, [$1];",
                                      /*predicate=*/Value())
                .getResult(0);
        Value short_ = arith::CmpIOp::create(
            check, loc, arith::CmpIPredicate::ult, value, count);
        scf::ConditionOp::create(check, loc, short_, ValueRange{});
        Block *after = inside.createBlock(&poll.getAfter());
        OpBuilder again = OpBuilder::atBlockBegin(after);
        scf::YieldOp::create(again, loc);
        inside.setInsertionPointAfter(poll);
        Value negated = arith::SubIOp::create(
            inside, loc, arith::ConstantIntOp::create(inside, loc, 0, 32),
            count);
        NVVM::InlinePtxOp::create(inside, loc, TypeRange{},
                                  ValueRange{address, negated}, ValueRange{},
                                  "red.relaxed.sys.global.add.u32 [$0], $1;",
                                  /*predicate=*/Value());
        // TMA loads that follow read what the signals published through the
        // async proxy.
        NVVM::FenceProxyOp::create(inside, loc, NVVM::ProxyKind::async_global,
                                   NVVM::SharedSpaceAttr());
      });
  // The leader's acquire covers every thread of the warpgroup after this.
  warpgroupBarrier(lowering, op, builder);
  return success();
}

/// Records the table's final position on each kernel, and as the
/// parameter of its peer tensor maps, for the manifest.
static void recordCollectiveTables(LoweringContext &lowering, Operation *) {
  for (auto [function, table] : lowering.state<CollectiveState>().tables) {
    MLIRContext *context = function->getContext();
    unsigned index = table.getArgNumber();
    function->setAttr(kCollectiveTableAttr,
                      Builder(context).getI64IntegerAttr(index));
    auto maps = function->getAttrOfType<ArrayAttr>(kTensorMapsAttr);
    if (!maps)
      continue;
    SmallVector<Attribute> entries;
    for (Attribute entry : maps) {
      FailureOr<TensorMapDescription> map =
          tensorMapFromAttribute(cast<DictionaryAttr>(entry));
      if (succeeded(map) && map->peer) {
        map->parameter = index;
        entry = tensorMapAttribute(context, *map);
      }
      entries.push_back(entry);
    }
    function->setAttr(kTensorMapsAttr, ArrayAttr::get(context, entries));
  }
}

void mosaic::populateCollectiveLowerings(LoweringRegistry &registry) {
  registry.addBeforeWalk(addCollectiveTables);
  registry.add<mosaic_gpu::DeviceIdOp>(lowerDeviceId);
  registry.add<mosaic_gpu::DeviceCountOp>(lowerDeviceCount);
  registry.add<mosaic_gpu::RemoteRefOp>(lowerRemoteRef);
  registry.add<mosaic_gpu::SemaphoreSignalOp>(lowerSemaphoreSignal);
  registry.add<mosaic_gpu::SemaphoreWaitOp>(lowerSemaphoreWait);
  registry.addAfterWalk(replaceRemoteViews);
  registry.addAfterWalk(recordCollectiveTables);
}
