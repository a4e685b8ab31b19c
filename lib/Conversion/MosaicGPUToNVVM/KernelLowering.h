//===- KernelLowering.h - State of one mosaic-gpu-lower run -----*- C++ -*-===//
//
// The lowering walks each kernel in program order and keeps, for every
// warpgroup vector, the flat vector of registers one thread holds and the
// layout they follow. Each group of ops (registers, control flow, memory,
// barriers, TMA, wgmma, reductions) is lowered in its own Lower*.cpp file,
// which adds its ops to the LoweringRegistry the walk dispatches through;
// this header is what they share.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_CONVERSION_MOSAICGPUTONVVM_KERNELLOWERING_H
#define MOSAIC_CONVERSION_MOSAICGPUTONVVM_KERNELLOWERING_H

#include "mosaic/Conversion/MosaicGPUToNVVM/KernelAttributes.h"
#include "mosaic/Dialect/MosaicGPU/Annotations.h"
#include "mosaic/Dialect/MosaicGPU/Layouts.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h"
#include "mosaic/Dialect/MosaicGPU/SmemTransforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <array>
#include <functional>

namespace mosaic {

using mosaic_gpu::annotatedLayout;
using mosaic_gpu::annotatedTransforms;
using mosaic_gpu::isRegisterVector;
using mosaic_gpu::kInLayoutsAttr;
using mosaic_gpu::kInTransformsAttr;
using mosaic_gpu::kOutLayoutsAttr;
using mosaic_gpu::kOutTransformsAttr;

/// The most shared memory one sm_90a block can use (227 KiB).
inline constexpr int64_t kMaxSharedMemoryBytes = 227 * 1024;

/// A CUtensorMap: 128 bytes, passed 64-byte aligned.
inline constexpr int64_t kTensorMapBytes = 128;
inline constexpr int64_t kTensorMapAlignment = 64;

/// An `!llvm.ptr` in the NVPTX address space `space`.
inline mlir::LLVM::LLVMPointerType
nvvmPointerType(mlir::MLIRContext *context, mlir::NVVM::NVVMMemorySpace space) {
  return mlir::LLVM::LLVMPointerType::get(context,
                                          static_cast<unsigned>(space));
}

/// The number of warpgroups in `op`'s kernel, from its known block size;
/// an error on `op` when the kernel does not say.
mlir::FailureOr<int64_t> warpgroupsOf(mlir::Operation *op);

/// The cluster shape `op`'s kernel declares (`mosaic_gpu.cluster`), or
/// (1, 1, 1) when it declares none.
std::array<int32_t, 3> clusterShape(mlir::Operation *op);

/// The byte address (an `index`) of the first element of the shared-memory
/// memref `ref` (barriers count 8 bytes).
mlir::Value sharedByteAddress(mlir::OpBuilder &builder, mlir::Location loc,
                              mlir::Value ref);
/// The same address as an `!llvm.ptr<3>`.
mlir::Value sharedAddress(mlir::OpBuilder &builder, mlir::Location loc,
                          mlir::Value ref);
/// A byte address (`index`) as an `!llvm.ptr<3>`.
mlir::Value sharedPointer(mlir::OpBuilder &builder, mlir::Location loc,
                          mlir::Value address);

/// `values` (scalars or flat register vectors of integers, floats or
/// indices) passed through one empty inline-asm statement with side effects
/// whose outputs are tied to its inputs. The values after it are opaque:
/// LLVM can neither rematerialize a constant nor sink a computation past
/// the statement, which stays ordered with every other side effect
/// (`wgmma.fence`, barriers). An error on `op` for other types.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
opaqueRegisters(mlir::Operation *op, mlir::OpBuilder &builder,
                mlir::ValueRange values);

/// The registers one thread holds for a warpgroup vector of `type`, as one
/// flat vector: 1 element for a splat, N / 128 for a strided layout, and
/// (registers x vector length) for a tiled layout, registers row-major over
/// TiledLayout::registersShape.
mlir::FailureOr<mlir::VectorType>
registerType(mlir::VectorType type, const layout::RegisterLayout &layout);

/// The logical index each register position of thread 0 holds, in order.
/// Every other thread keeps its elements at the same positions, shifted by
/// the thread: under a tiled layout every index moves by the thread's
/// offset, under a strided one the flat position moves by t * v (which can
/// carry into the next row), and a splat does not move.
llvm::Expected<std::vector<layout::Shape>>
thread0Elements(const layout::RegisterLayout &layout,
                llvm::ArrayRef<int64_t> shape);

class KernelLowering;

/// How the walk lowers one op kind.
struct OpLowering {
  enum Flags : unsigned {
    None = 0,
    /// The op stays, retyped in place (control flow), instead of being
    /// erased once the whole kernel is lowered.
    KeepsOp = 1 << 0,
    /// Lowered only when it has vector operands or results; without them
    /// the walk treats the op as one without a lowering.
    OnVectorsOnly = 1 << 1,
  };
  std::function<mlir::LogicalResult(KernelLowering &, mlir::Operation *)> lower;
  unsigned flags = None;
};

/// The lowering of each op kind, keyed by the op's TypeID. Every Lower*.cpp
/// file adds the ops it lowers, one line per op; ops with the Elementwise
/// trait share one lowering that the walk applies to the ops left over.
class LoweringRegistry {
public:
  /// Lowers `OpTy` with the member function `lower`, which takes the op or
  /// a plain Operation *.
  template <typename OpTy, typename Argument>
  void add(mlir::LogicalResult (KernelLowering::*lower)(Argument),
           unsigned flags = OpLowering::None) {
    auto dispatch = [lower](KernelLowering &lowering, mlir::Operation *op) {
      return (lowering.*lower)(mlir::cast<OpTy>(op));
    };
    [[maybe_unused]] bool added =
        lowerings
            .try_emplace(mlir::TypeID::get<OpTy>(), OpLowering{dispatch, flags})
            .second;
    assert(added && "an op kind has one lowering");
  }

  /// The lowering of `op`'s kind, or null.
  const OpLowering *lookup(mlir::Operation *op) const;

private:
  llvm::DenseMap<mlir::TypeID, OpLowering> lowerings;
};

class KernelLowering {
public:
  mlir::LogicalResult run(mlir::Operation *root);

  struct Fragment {
    mlir::Value registers;
    layout::RegisterLayout layout;
  };

  // The ops each file lowers, added to the walk's registry.
  static void addRegisterLowerings(LoweringRegistry &registry);
  static void addControlFlowLowerings(LoweringRegistry &registry);
  static void addMemoryLowerings(LoweringRegistry &registry);
  static void addBarrierLowerings(LoweringRegistry &registry);
  static void addTMALowerings(LoweringRegistry &registry);
  static void addWgmmaLowerings(LoweringRegistry &registry);
  static void addReductionLowerings(LoweringRegistry &registry);

private:
  /// A value built once per function, at its entry.
  mlir::Value atFunctionEntry(
      mlir::Operation *op,
      llvm::DenseMap<mlir::Operation *, mlir::Value> &cache,
      llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location)> build);
  /// The thread's linear index in its block, x + ntid.x * (y + ntid.y * z).
  mlir::Value linearThreadIndex(mlir::Operation *op);
  /// The thread's place in its warpgroup (linear index mod 128).
  mlir::Value threadInWarpgroup(mlir::Operation *op);
  /// The warpgroup's index in the block (linear index / 128).
  mlir::Value warpgroupIndex(mlir::Operation *op);
  /// Thread 0 of the warpgroup: the one that issues TMA operations.
  mlir::Value isWarpgroupLeader(mlir::Operation *op);
  mlir::FailureOr<mlir::Value> operandAs(mlir::Operation *op,
                                         mlir::OpOperand &operand,
                                         const layout::RegisterLayout &layout,
                                         mlir::OpBuilder &builder);
  mlir::LogicalResult define(mlir::Value result, mlir::Value registers,
                             const layout::RegisterLayout &layout);

  // Registers (LowerRegisters.cpp).
  mlir::LogicalResult lowerConstant(mlir::arith::ConstantOp op);
  mlir::LogicalResult lowerElementwise(mlir::Operation *op);
  mlir::LogicalResult lowerLayoutCast(mosaic_gpu::LayoutCastOp op);
  mlir::LogicalResult lowerOptimizationBarrier(mlir::Operation *op);
  mlir::LogicalResult lowerIota(mosaic_gpu::BroadcastedIotaOp op);
  /// ub.poison, llvm.mlir.undef and llvm.mlir.poison vectors.
  mlir::LogicalResult lowerUndefined(mlir::Operation *op);

  // Control flow, kept and retyped in place (LowerControlFlow.cpp).
  mlir::LogicalResult lowerFor(mlir::scf::ForOp op);
  /// scf.if and scf.index_switch: results retyped, yields forward.
  mlir::LogicalResult lowerBranches(mlir::Operation *op);
  mlir::LogicalResult lowerWhile(mlir::scf::WhileOp op);
  /// A loop's initial values, relaid to the layouts in its `layouts`
  /// attribute, in order.
  mlir::LogicalResult relayoutInits(mlir::Operation *op,
                                    mlir::MutableOperandRange inits,
                                    llvm::StringRef layouts);
  mlir::LogicalResult lowerYield(mlir::scf::YieldOp op);
  mlir::LogicalResult lowerCondition(mlir::scf::ConditionOp op);
  /// Retypes the vectors among `values` to the registers of the layouts in
  /// `op`'s `layouts` attribute, in order.
  mlir::LogicalResult retypeResults(mlir::Operation *op,
                                    llvm::ArrayRef<mlir::Value> values,
                                    llvm::StringRef layouts);
  /// Makes a terminator pass registers: each vector operand becomes the
  /// registers of the layout its (already retyped) target holds.
  mlir::LogicalResult
  forwardRegisters(mlir::Operation *terminator,
                   llvm::MutableArrayRef<mlir::OpOperand> operands,
                   mlir::ValueRange targets);

  // Memory (LowerMemory.cpp).
  mlir::LogicalResult lowerSliceSmem(mosaic_gpu::SliceSMEMOp op);
  mlir::Value dynamicSharedMemory(mlir::Operation *op);
  mlir::LogicalResult lowerVectorLoad(mosaic_gpu::VectorLoadOp op);
  mlir::LogicalResult lowerVectorStore(mosaic_gpu::VectorStoreOp op);
  /// with_transforms and assume_multiple: hints for inference and tiling,
  /// replaced by their operand.
  mlir::LogicalResult lowerHint(mlir::Operation *op);
  /// Moves registers to (`storedRegisters`) or from (`loaded`) memory.
  mlir::LogicalResult lowerStridedTransfer(mlir::Operation *op,
                                           const layout::RegisterLayout &layout,
                                           mlir::Value ref,
                                           mlir::Value storedRegisters,
                                           mlir::Value *loaded, bool scratch);
  mlir::LogicalResult lowerTiledTransfer(mlir::Operation *op,
                                         const layout::RegisterLayout &layout,
                                         mlir::VectorType type, mlir::Value ref,
                                         mlir::Value storedRegisters,
                                         mlir::Value *loaded, bool scratch);
  /// Moves registers from layout `from` to `to` through this warpgroup's
  /// shared-memory scratch: every thread stores its elements, the
  /// warpgroup synchronizes, every thread loads the ones `to` gives it.
  mlir::FailureOr<mlir::Value>
  relayoutThroughSharedMemory(mlir::Operation *op, mlir::Value registers,
                              const layout::RegisterLayout &from,
                              const layout::RegisterLayout &to,
                              mlir::VectorType type);
  /// Per logical dim, the index offset of this thread's elements from thread
  /// 0's under a tiled layout; of those of `thread` (an index in the
  /// warpgroup) instead when it is given.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  threadOffsets(mlir::Operation *op, const layout::TiledLayout &layout,
                llvm::ArrayRef<int64_t> shape, mlir::OpBuilder &builder,
                mlir::Value thread = {});

  // Barriers (LowerBarriers.cpp).
  mlir::LogicalResult
  lowerInitializeBarrier(mosaic_gpu::InitializeBarrierOp op);
  mlir::LogicalResult lowerArrive(mosaic_gpu::ArriveOp op);
  /// An arrive on the barrier in each block of the cluster along
  /// `collective`, and a cluster barrier before the kernel returns.
  mlir::LogicalResult lowerCollectiveArrive(mosaic_gpu::ArriveOp op);
  /// Ends every kernel with a collective arrive with a cluster barrier.
  void syncClusterBeforeExit();
  mlir::LogicalResult lowerArriveExpectTx(mosaic_gpu::ArriveExpectTxOp op);
  mlir::LogicalResult lowerWait(mosaic_gpu::WaitOp op);

  // Warpgroup roles (LowerBarriers.cpp).
  mlir::LogicalResult lowerWarpgroupId(mosaic_gpu::WarpgroupIdOp op);
  mlir::LogicalResult lowerSetMaxRegisters(mosaic_gpu::SetMaxRegistersOp op);
  mlir::LogicalResult lowerNamedBarrier(mosaic_gpu::NamedBarrierOp op);

  // TMA (LowerTMA.cpp).
  mlir::LogicalResult lowerAsyncLoad(mosaic_gpu::AsyncLoadOp op);
  mlir::LogicalResult lowerAsyncStore(mosaic_gpu::AsyncStoreOp op);
  mlir::LogicalResult lowerAsyncStoreWait(mosaic_gpu::AsyncStoreWaitOp op);
  /// Ends every kernel with deferred-wait stores with a wait for them.
  void waitForDeferredStoresBeforeExit();
  mlir::LogicalResult lowerAsyncPrefetch(mosaic_gpu::AsyncPrefetchOp op);
  /// The shared buffer's transforms for a TMA transfer, once the box is
  /// checked against the buffer.
  mlir::FailureOr<layout::SmemTransforms>
  transferTransforms(mlir::Operation *op, mlir::MemRefType global,
                     mlir::MemRefType shared,
                     llvm::ArrayRef<int64_t> sliceLengths);
  /// The kernel parameter holding the tensor map for `op`'s global `ref`
  /// with box `sliceLengths`, added on first use.
  mlir::FailureOr<mlir::Value>
  tensorMap(mlir::Operation *op, mlir::Value ref,
            llvm::ArrayRef<int64_t> sliceLengths,
            const layout::SmemTransforms &transforms);
  /// Makes this warpgroup's shared-memory writes visible to the async proxy
  /// (TMA, wgmma) and waits for all its threads.
  void fenceSharedWritesForAsyncProxy(mlir::Operation *op,
                                      mlir::OpBuilder &builder);
  /// bar.sync over the 128 threads of the executing warpgroup.
  void warpgroupBarrier(mlir::Operation *op, mlir::OpBuilder &builder);
  /// Whether threads may have written shared memory that `op` (an async
  /// proxy reader of `readRefs`) reads: a vector_store to shared memory
  /// precedes it in its function, or shares an enclosing loop with it,
  /// unless the store's slice and every one of `readRefs`' slices are known
  /// and disjoint. Slices are traced before the walk replaces them.
  bool sharedWritesPending(mlir::Operation *op,
                           llvm::ArrayRef<mlir::Value> readRefs);

  // wgmma (LowerWgmma.cpp).
  mlir::LogicalResult lowerWgmma(mosaic_gpu::WGMMAOp op);
  mlir::LogicalResult lowerWgmmaWait(mosaic_gpu::WGMMAWaitOp op);

  // Reductions, broadcasts and reshapes (LowerReductions.cpp).
  mlir::LogicalResult lowerMultiReduction(mlir::vector::MultiDimReductionOp op);
  /// Ops that only rearrange operand 0's elements: each result element is
  /// the operand element at `sourceIndex(result index)`.
  mlir::LogicalResult lowerPermutation(
      mlir::Operation *op, mlir::VectorType resultType,
      llvm::function_ref<layout::Shape(llvm::ArrayRef<int64_t>)> sourceIndex);
  mlir::LogicalResult lowerBroadcastInDim(mosaic_gpu::BroadcastInDimOp op);
  mlir::LogicalResult lowerShapeCast(mlir::vector::ShapeCastOp op);
  mlir::LogicalResult lowerBroadcast(mlir::vector::BroadcastOp op);
  mlir::LogicalResult
  lowerExtractStridedSlice(mlir::vector::ExtractStridedSliceOp op);
  mlir::LogicalResult lowerExtract(mlir::vector::ExtractOp op);
  /// Combines `partial` (this thread's result registers) with those of the
  /// threads in the other warps selected by `warpDigits` ((stride, size)
  /// pairs in the warp index), through shared-memory scratch.
  mlir::LogicalResult
  combineAcrossWarps(mlir::Operation *op, mlir::OpBuilder &builder,
                     llvm::SmallVector<mlir::Value> &partial,
                     mlir::vector::CombiningKind kind,
                     llvm::ArrayRef<std::pair<int64_t, int64_t>> warpDigits);
  /// Where the lowering's scratch space starts in `function`'s dynamic
  /// shared memory: after the last `slice_smem` buffer, 16-byte aligned.
  int64_t scratchOffset(mlir::Operation *function);

  /// The warpgroup vector type of `value`, also for loop arguments and
  /// results that were already retyped to registers.
  mlir::VectorType logicalType(mlir::Value value) const;

  llvm::DenseMap<mlir::Value, Fragment> fragments;
  /// Values an async wgmma may write until a wgmma_wait completes them
  /// (verifyWgmmaInFlightUses); operandAs fences each read of them.
  llvm::DenseSet<mlir::Value> waitedForValues;
  llvm::DenseMap<mlir::Value, mlir::VectorType> retypedValues;
  llvm::DenseMap<mlir::Operation *, mlir::Value> linearThreadIds;
  llvm::DenseMap<mlir::Operation *, mlir::Value> threadIds;
  llvm::DenseMap<mlir::Operation *, mlir::Value> warpgroupIds;
  llvm::DenseMap<mlir::Operation *, mlir::Value> leaders;
  llvm::DenseMap<mlir::Operation *, mlir::Value> sharedMemoryBases;
  /// Tensor maps already added, per kernel, keyed by their description.
  llvm::DenseMap<std::pair<mlir::Operation *, mlir::Attribute>, mlir::Value>
      tensorMaps;
  llvm::SmallVector<mlir::Operation *> lowered;
  /// The wgmma ops that must fence threads' shared-memory writes for the
  /// async proxy first, found before the walk (sharedWritesPending).
  llvm::DenseSet<mlir::Operation *> proxyFencedWgmmas;
  /// Kernels whose blocks arrive on their peers' barriers.
  llvm::SetVector<mlir::Operation *> remoteArrivalKernels;
  /// Kernels with stores whose reads of shared memory are not waited for.
  llvm::SetVector<mlir::Operation *> deferredStoreKernels;
  /// Scratch bytes each function's reductions need.
  llvm::DenseMap<mlir::Operation *, int64_t> scratchBytes;
  llvm::DenseMap<mlir::Operation *, int64_t> scratchOffsets;
};

} // namespace mosaic

#endif // MOSAIC_CONVERSION_MOSAICGPUTONVVM_KERNELLOWERING_H
