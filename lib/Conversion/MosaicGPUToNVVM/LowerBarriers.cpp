//===- LowerBarriers.cpp - mbarrier initialization, arrivals and waits ----===//

#include "KernelLowering.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"

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

void KernelLowering::addBarrierLowerings(LoweringRegistry &registry) {
  registry.add<mosaic_gpu::InitializeBarrierOp>(
      &KernelLowering::lowerInitializeBarrier);
  registry.add<mosaic_gpu::ArriveOp>(&KernelLowering::lowerArrive);
  registry.add<mosaic_gpu::ArriveExpectTxOp>(
      &KernelLowering::lowerArriveExpectTx);
  registry.add<mosaic_gpu::WaitOp>(&KernelLowering::lowerWait);
  registry.add<mosaic_gpu::WarpgroupIdOp>(&KernelLowering::lowerWarpgroupId);
  registry.add<mosaic_gpu::SetMaxRegistersOp>(
      &KernelLowering::lowerSetMaxRegisters);
}

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
  auto function = op->getParentOfType<gpu::GPUFuncOp>();
  auto cluster =
      function
          ? function->getAttrOfType<DenseI32ArrayAttr>(mosaic_gpu::kClusterAttr)
          : DenseI32ArrayAttr();
  int64_t clusterBlocks = 1;
  if (cluster)
    for (int32_t size : cluster.asArrayRef())
      clusterBlocks *= size;
  if (clusterBlocks > 1) {
    NVVM::ClusterArriveOp::create(builder, loc, builder.getUnitAttr());
    NVVM::ClusterWaitOp::create(builder, loc, builder.getUnitAttr());
  } else {
    gpu::BarrierOp::create(builder, loc);
  }
  return success();
}

LogicalResult KernelLowering::lowerArrive(mosaic_gpu::ArriveOp op) {
  if (failed(rejectTensorCoreOrdering(op, op.getOrdersTensorCore())))
    return failure();
  OpBuilder builder(op);
  NVVM::MBarrierArriveOp::create(
      builder, op.getLoc(), /*res=*/Type(),
      sharedAddress(builder, op.getLoc(), op.getBarrier()), /*count=*/Value());
  return success();
}

LogicalResult
KernelLowering::lowerArriveExpectTx(mosaic_gpu::ArriveExpectTxOp op) {
  // Every thread arrives (the barrier counts 128 arrivals per warpgroup);
  // the warpgroup's leader, which also issues the TMA transfers, adds the
  // expected bytes. The others expect none, which keeps the code branch-free.
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Value bytes =
      arith::ConstantIntOp::create(builder, loc, op.getExpectTx(), 32);
  Value none = arith::ConstantIntOp::create(builder, loc, 0, 32);
  Value expected =
      arith::SelectOp::create(builder, loc, isWarpgroupLeader(op), bytes, none);
  NVVM::MBarrierArriveExpectTxOp::create(
      builder, loc, /*res=*/Type(),
      sharedAddress(builder, loc, op.getBarrier()), expected,
      NVVM::MemScopeKind::CTA, /*relaxed=*/false,
      /*predicate=*/Value());
  return success();
}

LogicalResult KernelLowering::lowerWait(mosaic_gpu::WaitOp op) {
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

LogicalResult KernelLowering::lowerWarpgroupId(mosaic_gpu::WarpgroupIdOp op) {
  // Lane 0's value, broadcast with shfl.sync: the same in every lane by
  // construction, so ptxas treats branches on it as warp-uniform (which
  // setmaxnreg and the other .aligned instructions in a role need).
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Type i32 = builder.getI32Type();
  Value index =
      arith::IndexCastOp::create(builder, loc, i32, warpgroupIndex(op));
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

LogicalResult
KernelLowering::lowerSetMaxRegisters(mosaic_gpu::SetMaxRegistersOp op) {
  OpBuilder builder(op);
  NVVM::SetMaxRegisterOp::create(
      builder, op.getLoc(), op.getCount(),
      op.getAction() == mosaic_gpu::RegisterAction::Increase
          ? NVVM::SetMaxRegisterAction::increase
          : NVVM::SetMaxRegisterAction::decrease);
  return success();
}
