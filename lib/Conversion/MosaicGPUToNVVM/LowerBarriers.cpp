//===- LowerBarriers.cpp - mbarrier initialization, arrivals and waits ----===//

#include "LoweringContext.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mosaic;
using layout::kThreadsPerWarpgroup;

//===----------------------------------------------------------------------===//
// Barriers
//
// A warpgroup arrives once in the dialect's counting, but every one of its
// 128 threads executes the arrive: each thread's release then covers its own
// earlier writes, which a single elected arrival would not. Barriers are
// therefore initialized with 128 arrivals per warpgroup arrival. After
// lowering, barrier memrefs are plain i64 memrefs.
//===----------------------------------------------------------------------===//

namespace {
/// The kernels whose blocks arrive on their peers' barriers.
struct BarrierState : GroupState {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BarrierState)
  llvm::SetVector<Operation *> remoteArrivalKernels;
};
} // namespace

static constexpr int64_t kBarrierBytes = 8;
/// Suspend-time hint of one try_wait, in nanoseconds; the wait loops anyway.
static constexpr int32_t kTryWaitTicks = 10'000'000;

static LogicalResult rejectTensorCoreOrdering(Operation *op, bool orders) {
  if (!orders)
    return success();
  return op->emitOpError()
         << "orders tensor core operations (`orders_tensor_core`), which "
            "needs tcgen05 fences that sm_90a does not have";
}

static LogicalResult
lowerInitializeBarrier(LoweringContext &lowering,
                       mosaic_gpu::InitializeBarrierOp op) {
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
  if (barrierBytes > limits::kMaxSharedMemoryPerBlock)
    return op.emitOpError()
           << "initializes " << op.getNumBarriers() << " barriers ("
           << barrierBytes << " bytes), more than the "
           << limits::kMaxSharedMemoryPerBlock
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
                    ? sharedAddress(builder, loc, basePointer)
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
  auto sharedPointer = nvvmPointerType(context, NVVM::NVVMMemorySpace::Shared);
  for (int32_t index = 0, end = op.getNumBarriers(); index < end; ++index) {
    Value address = index == 0
                        ? first
                        : LLVM::GEPOp::create(builder, loc, sharedPointer,
                                              builder.getI64Type(), first,
                                              ArrayRef<LLVM::GEPArg>{index});
    NVVM::MBarrierInitOp::create(builder, loc, address, count, isFirstThread);
  }
  NVVM::FenceMbarrierInitOp::create(builder, loc);
  // In a cluster, other blocks' TMA multicasts complete on these barriers:
  // the whole cluster waits until every block has initialized its own.
  std::array<int32_t, 3> cluster = clusterShape(op);
  if (int64_t(cluster[0]) * cluster[1] * cluster[2] > 1) {
    NVVM::ClusterArriveOp::create(builder, loc, builder.getUnitAttr());
    NVVM::ClusterWaitOp::create(builder, loc, builder.getUnitAttr());
  } else {
    gpu::BarrierOp::create(builder, loc);
  }
  return success();
}

/// An arrive on the barrier in each block of the cluster along
/// `collective`, and a cluster barrier before the kernel returns.
static LogicalResult lowerCollectiveArrive(LoweringContext &lowering,
                                           mosaic_gpu::ArriveOp op) {
  auto function = op->getParentOfType<gpu::GPUFuncOp>();
  if (!function || !function->hasAttr(mosaic_gpu::kClusterAttr))
    return op.emitOpError()
           << "arrives collectively over cluster dims, but its kernel "
              "declares no cluster shape (`mosaic_gpu.cluster = array<i32: "
              "x, y, z>`)";
  std::array<int32_t, 3> shape = clusterShape(op);
  std::array<bool, 3> collective = {false, false, false};
  for (auto dim : op.getCollective().getAsRange<mosaic_gpu::DimensionAttr>())
    collective[static_cast<int>(dim.getValue())] = true;

  OpBuilder builder(op);
  Location loc = op.getLoc();
  auto index = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, value);
  };
  // Cluster ranks count x fastest. The peers share this block's coordinates
  // outside the collective dims (`base`) and take every coordinate along
  // them (the static `offsets`).
  int64_t rankStride[3] = {1, shape[0], int64_t(shape[0]) * shape[1]};
  Value base = index(0);
  SmallVector<int64_t> offsets = {0};
  for (int d = 0; d < 3; ++d) {
    if (!collective[d]) {
      Value coordinate = gpu::ClusterBlockIdOp::create(
          builder, loc, static_cast<gpu::Dimension>(d));
      base =
          arith::AddIOp::create(builder, loc, base,
                                arith::MulIOp::create(builder, loc, coordinate,
                                                      index(rankStride[d])));
      continue;
    }
    SmallVector<int64_t> spread;
    for (int64_t c = 0; c < shape[d]; ++c)
      for (int64_t offset : offsets)
        spread.push_back(offset + c * rankStride[d]);
    offsets = std::move(spread);
  }
  // One arrival of 32 per warp instead of one per thread: after
  // bar.warp.sync, which orders the lanes' earlier accesses before lane 0's
  // release, lane 0 stands for its warp. Remote arrivals are what a
  // multicast pipeline pays per stage, so 4 per warpgroup and peer, not 128.
  Type i32 = builder.getI32Type();
  Value allLanes = arith::ConstantIntOp::create(builder, loc, -1, 32);
  NVVM::SyncWarpOp::create(builder, loc, allLanes);
  Value lane = NVVM::LaneIdOp::create(builder, loc, i32);
  Value isLane0 =
      arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, lane,
                            arith::ConstantIntOp::create(builder, loc, 0, 32));
  Value local = sharedAddress(builder, loc, op.getBarrier());
  auto branch = scf::IfOp::create(builder, loc, isLane0, /*else=*/false);
  OpBuilder inside = branch.getThenBodyBuilder();
  Value warpSize = arith::ConstantIntOp::create(inside, loc, 32, 32);
  auto clusterPointer =
      nvvmPointerType(op.getContext(), NVVM::NVVMMemorySpace::SharedCluster);
  for (int64_t offset : offsets) {
    Value rank = arith::IndexCastOp::create(
        inside, loc, i32,
        arith::AddIOp::create(
            inside, loc, base,
            arith::ConstantIndexOp::create(inside, loc, offset)));
    Value remote =
        NVVM::MapaOp::create(inside, loc, clusterPointer, local, rank);
    // Release at CTA scope, as CUTLASS's consumer release does: what the
    // peer's producer must not overtake are this warp's reads of the stage,
    // which its wgmma_wait (or the loads' own completion) has finished
    // before the arrive issues. Cluster scope would add a GPU-wide memory
    // barrier (MEMBAR.ALL.GPU in SASS) to every release, twice per K step.
    NVVM::MBarrierArriveOp::create(inside, loc, /*res=*/Type(), remote,
                                   warpSize, NVVM::MemScopeKind::CTA,
                                   /*relaxed=*/false);
  }
  lowering.state<BarrierState>().remoteArrivalKernels.insert(function);
  return success();
}

static LogicalResult lowerArrive(LoweringContext &lowering,
                                 mosaic_gpu::ArriveOp op) {
  if (failed(rejectTensorCoreOrdering(op, op.getOrdersTensorCore())))
    return failure();
  if (!op.getCollective().empty())
    return lowerCollectiveArrive(lowering, op);
  OpBuilder builder(op);
  NVVM::MBarrierArriveOp::create(
      builder, op.getLoc(), /*res=*/Type(),
      sharedAddress(builder, op.getLoc(), op.getBarrier()), /*count=*/Value());
  return success();
}

/// Ends every kernel with a collective arrive with a cluster barrier.
static void syncClusterBeforeExit(LoweringContext &lowering, Operation *) {
  // A block that exits while a peer may still arrive on its barriers loses
  // those arrivals (or worse, a new block reuses the memory): every block
  // of the cluster waits for all before returning.
  for (Operation *function :
       lowering.state<BarrierState>().remoteArrivalKernels)
    function->walk([](gpu::ReturnOp ret) {
      OpBuilder builder(ret);
      NVVM::ClusterArriveOp::create(builder, ret.getLoc(), UnitAttr());
      NVVM::ClusterWaitOp::create(builder, ret.getLoc(), UnitAttr());
    });
}

static LogicalResult lowerArriveExpectTx(LoweringContext &lowering,
                                         mosaic_gpu::ArriveExpectTxOp op) {
  // Every thread arrives (the barrier counts 128 arrivals per warpgroup);
  // the warpgroup's leader, which also issues the TMA transfers, adds the
  // expected bytes. The others expect none, which keeps the code branch-free.
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Value bytes =
      arith::ConstantIntOp::create(builder, loc, op.getExpectTx(), 32);
  Value none = arith::ConstantIntOp::create(builder, loc, 0, 32);
  Value expected = arith::SelectOp::create(
      builder, loc, lowering.isWarpgroupLeader(op), bytes, none);
  NVVM::MBarrierArriveExpectTxOp::create(
      builder, loc, /*res=*/Type(),
      sharedAddress(builder, loc, op.getBarrier()), expected,
      NVVM::MemScopeKind::CTA, /*relaxed=*/false,
      /*predicate=*/Value());
  return success();
}

static LogicalResult lowerWait(LoweringContext &lowering,
                               mosaic_gpu::WaitOp op) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Value parity = arith::ExtUIOp::create(builder, loc, builder.getI32Type(),
                                        op.getParity());
  Value ticks = arith::ConstantIntOp::create(builder, loc, kTryWaitTicks, 32);
  NVVM::MBarrierTryWaitParityOp::create(
      builder, loc, sharedAddress(builder, loc, op.getBarrier()), parity,
      ticks);
  return success();
}

static LogicalResult lowerWarpgroupId(LoweringContext &lowering,
                                      mosaic_gpu::WarpgroupIdOp op) {
  // Lane 0's value, broadcast with shfl.sync: the same in every lane by
  // construction, so ptxas treats branches on it as warp-uniform (which
  // setmaxnreg and the other .aligned instructions in a role need).
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Type i32 = builder.getI32Type();
  Value index = arith::IndexCastOp::create(builder, loc, i32,
                                           lowering.warpgroupIndex(op));
  Value allLanes = arith::ConstantIntOp::create(builder, loc, -1, 32);
  Value lane0 = arith::ConstantIntOp::create(builder, loc, 0, 32);
  Value clamp = arith::ConstantIntOp::create(builder, loc, 0x1f, 32);
  Value uniform =
      NVVM::ShflOp::create(builder, loc, i32, allLanes, index, lane0, clamp,
                           NVVM::ShflKind::idx, /*return_value_and_is_valid=*/
                           UnitAttr());
  op.getResult().replaceAllUsesWith(arith::IndexCastOp::create(
      builder, loc, builder.getIndexType(), uniform));
  return success();
}

static LogicalResult lowerSetMaxRegisters(LoweringContext &lowering,
                                          mosaic_gpu::SetMaxRegistersOp op) {
  // ptxas fixes the count each thread starts with (which setmaxnreg moves
  // from) only for a kernel whose block size it knows; otherwise it drops
  // the instruction with a warning.
  auto function = op->getParentOfType<gpu::GPUFuncOp>();
  if (!function || !function.getKnownBlockSizeAttr())
    return op.emitOpError()
           << "needs its kernel's `known_block_size`: ptxas fixes the "
              "registers each thread starts with, which setmaxnreg moves "
              "from, only for a known block size, and drops setmaxnreg "
              "otherwise";
  OpBuilder builder(op);
  NVVM::SetMaxRegisterOp::create(builder, op.getLoc(), op.getCount(),
                                 op.getAction() ==
                                         mosaic_gpu::RegisterAction::Increase
                                     ? NVVM::SetMaxRegisterAction::increase
                                     : NVVM::SetMaxRegisterAction::decrease);
  return success();
}

static LogicalResult lowerNamedBarrier(LoweringContext &lowering,
                                       mosaic_gpu::NamedBarrierOp op) {
  auto function = op->getParentOfType<gpu::GPUFuncOp>();
  DenseI32ArrayAttr block =
      function ? function.getKnownBlockSizeAttr() : DenseI32ArrayAttr();
  if (!block)
    return op.emitOpError()
           << "needs the kernel's `known_block_size` to know which named "
              "barriers its warpgroups keep";
  std::optional<int64_t> warpgroups = 1;
  for (int32_t size : block.asArrayRef())
    *warpgroups *= size;
  *warpgroups = std::max<int64_t>(*warpgroups / kThreadsPerWarpgroup, 1);
  // Barriers 1 .. W are the warpgroups' own (warpgroupBarrier).
  if (int64_t(op.getId()) <= *warpgroups)
    return op.emitOpError()
           << "uses named barrier " << op.getId()
           << ", which the lowering keeps for warpgroup " << op.getId() - 1
           << "'s own synchronization; a block of " << *warpgroups
           << " warpgroups leaves barriers " << *warpgroups + 1 << " .. 15";
  if (int64_t(op.getWarpgroups()) > *warpgroups)
    return op.emitOpError() << "waits for " << op.getWarpgroups()
                            << " warpgroups, but the block has " << *warpgroups;
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Value id = arith::ConstantIntOp::create(builder, loc, op.getId(), 32);
  Value threads = arith::ConstantIntOp::create(
      builder, loc, int64_t(op.getWarpgroups()) * kThreadsPerWarpgroup, 32);
  if (op.getArrive())
    NVVM::BarrierArriveOp::create(builder, loc, id, threads);
  else
    NVVM::BarrierOp::create(builder, loc, /*res=*/Type(), id, threads,
                            /*reductionOp=*/nullptr,
                            /*reductionPredicate=*/Value());
  return success();
}

void mosaic::populateBarrierLowerings(LoweringRegistry &registry) {
  registry.add<mosaic_gpu::InitializeBarrierOp>(lowerInitializeBarrier);
  registry.add<mosaic_gpu::ArriveOp>(lowerArrive);
  registry.add<mosaic_gpu::ArriveExpectTxOp>(lowerArriveExpectTx);
  registry.add<mosaic_gpu::WaitOp>(lowerWait);
  registry.add<mosaic_gpu::WarpgroupIdOp>(lowerWarpgroupId);
  registry.add<mosaic_gpu::SetMaxRegistersOp>(lowerSetMaxRegisters);
  registry.add<mosaic_gpu::NamedBarrierOp>(lowerNamedBarrier);
  registry.addAfterWalk(syncClusterBeforeExit);
}
