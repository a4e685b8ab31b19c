//===- LoweringContext.h - What mosaic-gpu-lower's rules share --*- C++ -*-===//
//
// The lowering walks each kernel in program order and keeps, for every
// warpgroup vector, the flat vector of registers one thread holds and the
// layout they follow. Each group of ops (registers, control flow, memory,
// barriers, TMA, wgmma, reductions) is lowered in its own Lower*.cpp file by
// free functions over a LoweringContext, which the file adds to the
// LoweringRegistry with one line per op in its one populate*Lowerings
// function. What a rule needs beyond the context (its helpers, the tables
// only its group keeps) is private to its file; per-run tables live in a
// group state the context holds for the file (LoweringContext::state), and
// work left for the end of the walk is a hook the file registers.
//
// This header is what the files share: the context, the registry, and the
// few helpers one group defines for the others.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_CONVERSION_MOSAICGPUTONVVM_LOWERINGCONTEXT_H
#define MOSAIC_CONVERSION_MOSAICGPUTONVVM_LOWERINGCONTEXT_H

#include "mosaic/Contracts/HardwareLimits.h"
#include "mosaic/Conversion/MosaicGPUToNVVM/KernelAttributes.h"
#include "mosaic/Dialect/MosaicGPU/Annotations.h"
#include "mosaic/Dialect/MosaicGPU/Layouts.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h"
#include "mosaic/Dialect/MosaicGPU/SmemTransforms.h"
#include "mosaic/Support/OpRuleRegistry.h"

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

#include <array>
#include <memory>

namespace mosaic {

using mosaic_gpu::inLayoutFor;
using mosaic_gpu::inTransformsFor;
using mosaic_gpu::isRegisterVector;
using mosaic_gpu::kInLayoutsAttr;
using mosaic_gpu::kOutLayoutsAttr;
using mosaic_gpu::outLayoutFor;

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

/// A value built once per function, at its entry, and cached in `cache`.
mlir::Value atFunctionEntry(
    mlir::Operation *op, llvm::DenseMap<mlir::Operation *, mlir::Value> &cache,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location)> build);

/// A warpgroup vector as one thread holds it.
struct Fragment {
  mlir::Value registers;
  layout::RegisterLayout layout;
};

/// The tables one Lower*.cpp file keeps for a run (the tensor maps it added,
/// the kernels it must finish). A file derives a private struct from this,
/// gives it a TypeID with MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID, and
/// reaches it through LoweringContext::state.
struct GroupState {
  virtual ~GroupState() = default;
};

/// What every rule of one mosaic-gpu-lower run shares: the registers each
/// vector became, the thread's indices, the shared-memory scratch, and the
/// groups' own states.
class LoweringContext {
public:
  /// `waitedForValues` are the values an async wgmma may write until a
  /// wgmma_wait completes them (verifyWgmmaInFlightUses); operandAs fences
  /// each read of them.
  explicit LoweringContext(llvm::DenseSet<mlir::Value> waitedForValues)
      : waitedForValues(std::move(waitedForValues)) {}

  /// The registers of `op`'s vector `operand` in `layout`, relaid (through
  /// shared memory) if they hold another.
  mlir::FailureOr<mlir::Value> operandAs(mlir::Operation *op,
                                         mlir::OpOperand &operand,
                                         const layout::RegisterLayout &layout,
                                         mlir::OpBuilder &builder);
  /// Records `registers` in `layout` as what the vector `result` became.
  mlir::LogicalResult define(mlir::Value result, mlir::Value registers,
                             const layout::RegisterLayout &layout);
  /// What `vector` became, or null when it is not lowered yet.
  const Fragment *lookup(mlir::Value vector) const;
  /// Retypes the vector `value` (a block argument or result of an op that
  /// stays) in place to `registers` in `layout`.
  void retypeInPlace(mlir::Value value, mlir::VectorType registers,
                     const layout::RegisterLayout &layout);
  /// The warpgroup vector type of `value`, also for values retypeInPlace
  /// already retyped to registers.
  mlir::VectorType logicalType(mlir::Value value) const;

  /// The thread's place in its warpgroup (linear index mod 128).
  mlir::Value threadInWarpgroup(mlir::Operation *op);
  /// The warpgroup's index in the block (linear index / 128).
  mlir::Value warpgroupIndex(mlir::Operation *op);
  /// Thread 0 of the warpgroup: the one that issues TMA operations.
  mlir::Value isWarpgroupLeader(mlir::Operation *op);

  /// Reserves `bytes` of the lowering's scratch space for `op`'s function
  /// and returns where that space starts in its dynamic shared memory: after
  /// the last `slice_smem` buffer, 16-byte aligned.
  int64_t reserveScratch(mlir::Operation *op, int64_t bytes);
  /// The dynamic shared memory `function` needs: its slices and scratch.
  int64_t sharedMemoryBytes(mlir::Operation *function);

  /// The calling group's state for this run, created on first use.
  template <typename State> State &state() {
    std::unique_ptr<GroupState> &slot = groupStates[mlir::TypeID::get<State>()];
    if (!slot)
      slot = std::make_unique<State>();
    return static_cast<State &>(*slot);
  }

private:
  /// The thread's linear index in its block, x + ntid.x * (y + ntid.y * z).
  mlir::Value linearThreadIndex(mlir::Operation *op);
  int64_t scratchOffset(mlir::Operation *function);

  llvm::DenseMap<mlir::Value, Fragment> fragments;
  llvm::DenseMap<mlir::Value, mlir::VectorType> retypedValues;
  llvm::DenseSet<mlir::Value> waitedForValues;
  /// The thread's indices, per function.
  struct {
    llvm::DenseMap<mlir::Operation *, mlir::Value> linear, inWarpgroup,
        warpgroup, leader;
  } threadIndices;
  /// Per function, the scratch bytes its rules reserved and where they start.
  struct {
    llvm::DenseMap<mlir::Operation *, int64_t> bytes, offsets;
  } scratch;
  llvm::DenseMap<mlir::TypeID, std::unique_ptr<GroupState>> groupStates;
};

/// How the walk treats an op after its rule.
struct OpLowering {
  enum Flags : unsigned {
    /// The op stays, retyped in place (control flow), instead of being
    /// erased once the whole kernel is lowered.
    KeepsOp = 1 << 0,
    /// Lowered only when it has vector operands or results; without them
    /// the walk treats the op as one without a lowering.
    OnVectorsOnly = 1 << 1,
  };
};

/// The lowering rule of each op kind (with its OpLowering::Flags), and what
/// the groups do around the walk. Every Lower*.cpp file fills it in its one
/// populate*Lowerings function.
class LoweringRegistry : public OpRuleRegistry<LoweringContext, unsigned> {
public:
  using OperationRule = mlir::LogicalResult (*)(LoweringContext &,
                                                mlir::Operation *);
  using Hook = void (*)(LoweringContext &, mlir::Operation *root);

  /// The rule for ops with the Elementwise trait and no rule of their own.
  void setElementwiseRule(OperationRule rule) { elementwise = rule; }
  OperationRule elementwiseRule() const { return elementwise; }
  /// Runs `hook` on the root before the walk.
  void addBeforeWalk(Hook hook) { beforeWalk.push_back(hook); }
  /// Runs `hook` on the root after the walk, before the lowered ops are
  /// erased; hooks run in the order they were added.
  void addAfterWalk(Hook hook) { afterWalk.push_back(hook); }
  llvm::ArrayRef<Hook> beforeWalkHooks() const { return beforeWalk; }
  llvm::ArrayRef<Hook> afterWalkHooks() const { return afterWalk; }

private:
  OperationRule elementwise = nullptr;
  llvm::SmallVector<Hook> beforeWalk, afterWalk;
};

void populateRegisterLowerings(LoweringRegistry &registry);
void populateControlFlowLowerings(LoweringRegistry &registry);
void populateMemoryLowerings(LoweringRegistry &registry);
void populateBarrierLowerings(LoweringRegistry &registry);
void populateTMALowerings(LoweringRegistry &registry);
void populateWgmmaLowerings(LoweringRegistry &registry);
void populateReductionLowerings(LoweringRegistry &registry);
void populateCollectiveLowerings(LoweringRegistry &registry);

//===----------------------------------------------------------------------===//
// Helpers one group defines for the others
//===----------------------------------------------------------------------===//

// LowerMemory.cpp.

/// A byte view of `op`'s kernel's dynamic shared memory.
mlir::Value dynamicSharedMemory(LoweringContext &lowering, mlir::Operation *op);
/// Moves registers to (`storedRegisters`) or from (`loaded`) the memref
/// `ref`. `buffer` is the operand of `op` that `ref` is, whose transforms
/// `op`'s annotation gives; it is null for the lowering's own buffers
/// (scratch, constants), which have none.
mlir::LogicalResult
lowerStridedTransfer(LoweringContext &lowering, mlir::Operation *op,
                     const layout::RegisterLayout &layout, mlir::Value ref,
                     mlir::Value storedRegisters, mlir::Value *loaded,
                     mlir::OpOperand *buffer);
/// A store with `valid` extents (one index per dim) writes only the
/// elements below them in every dim.
mlir::LogicalResult
lowerTiledTransfer(LoweringContext &lowering, mlir::Operation *op,
                   const layout::RegisterLayout &layout, mlir::VectorType type,
                   mlir::Value ref, mlir::Value storedRegisters,
                   mlir::Value *loaded, mlir::OpOperand *buffer,
                   mlir::ValueRange valid = {});
/// Moves registers from layout `from` to `to` through this warpgroup's
/// shared-memory scratch: every thread stores its elements, the warpgroup
/// synchronizes, every thread loads the ones `to` gives it.
mlir::FailureOr<mlir::Value> relayoutThroughSharedMemory(
    LoweringContext &lowering, mlir::Operation *op, mlir::Value registers,
    const layout::RegisterLayout &from, const layout::RegisterLayout &to,
    mlir::VectorType type);
/// Per logical dim, the index offset of this thread's elements from thread
/// 0's under a tiled layout; of those of `thread` (an index in the
/// warpgroup) instead when it is given.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
threadOffsets(LoweringContext &lowering, mlir::Operation *op,
              const layout::TiledLayout &layout, llvm::ArrayRef<int64_t> shape,
              mlir::OpBuilder &builder, mlir::Value thread = {});

// LowerTMA.cpp.

/// Runs `body` (built at the start of an scf.if) in the warpgroup's leader
/// thread (`leader`, LoweringContext::isWarpgroupLeader) only, and only
/// where `predicate` holds when it is given.
void inLeader(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value leader,
              mlir::Value predicate,
              llvm::function_ref<void(mlir::OpBuilder &)> body);
/// bar.sync over the 128 threads of the executing warpgroup.
void warpgroupBarrier(LoweringContext &lowering, mlir::Operation *op,
                      mlir::OpBuilder &builder);
/// Makes this warpgroup's shared-memory writes visible to the async proxy
/// (TMA, wgmma) and waits for all its threads.
void fenceSharedWritesForAsyncProxy(LoweringContext &lowering,
                                    mlir::Operation *op,
                                    mlir::OpBuilder &builder);

// LowerCollectives.cpp.

/// The collective-table parameter of `op`'s kernel (or of `op`, a kernel),
/// or null when the kernel has none. Parameters added during the walk go
/// before it: it stays the kernel's last.
mlir::BlockArgument collectiveTable(LoweringContext &lowering,
                                    mlir::Operation *op);
/// The generic address (`!llvm.ptr`) of maps[peerMap][device] in the
/// collective table of `op`'s kernel: peer tensor map `peerMap` (its
/// position among the kernel's peer maps) for device `device` (an i32).
mlir::Value peerTensorMap(LoweringContext &lowering, mlir::Operation *op,
                          int64_t peerMap, mlir::Value device,
                          mlir::OpBuilder &builder);

// RegisterBudget.cpp.

/// The registers a thread has (PTX ISA: at most 255 per thread).
constexpr int64_t kMaxRegistersPerThread = 255;
/// Fails, naming the largest values, when a kernel under `root` keeps
/// vectors of more registers per thread alive at once than a thread has.
mlir::LogicalResult checkRegisterBudget(mlir::Operation *root);

} // namespace mosaic

#endif // MOSAIC_CONVERSION_MOSAICGPUTONVVM_LOWERINGCONTEXT_H
