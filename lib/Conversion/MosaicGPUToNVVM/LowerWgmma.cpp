//===- LowerWgmma.cpp - wgmma to wgmma.mma_async --------------------------===//
//
// `wgmma` computes acc + A * B for the whole warpgroup. The accumulator's
// WGMMA layout holds, per 64-row block, exactly the registers of one
// `wgmma.mma_async.m64nNkK` accumulator in instruction order, so each block
// is packed into the instruction's struct as is. A (K-major, row-major M x K)
// comes from tiled, swizzled shared memory, and so does B, either MN-major
// (row-major K x N, 16-bit types only) or K-major (a transposed view of a
// row-major N x K buffer, which tf32 and 8-bit types require); a transposed
// view makes A M-major the same way (16-bit types only). Their 64-bit
// matrix descriptors follow from the tiled buffers' strides:
//
//   K-major (A, and B viewed as (K / T, N / 8, T, 8)): SBO = bytes between
//      8-row groups of M (N); LBO unused when swizzled.
//   MN-major (B as (K / 8, N / T, 8, T), A viewed as (M / T, K / 8, T, 8)):
//      LBO = bytes between swizzle-wide blocks of N (M), SBO = bytes between
//      8-row groups of K.
//
// One instruction spans 32 bytes of K; consecutive K steps move a K-major
// start address within the swizzled row and an MN-major one by whole row
// groups. The instructions are bracketed by wgmma.fence, commit_group and
// (unless the op is async) wait_group 0, and every register they read is
// written before the fence. An async op's group completes at the
// `wgmma_wait` that covers it (lowered to wait_group N).
//
//===----------------------------------------------------------------------===//

#include "LoweringContext.h"
#include "WgmmaDescriptor.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/LoopLikeInterface.h"

using namespace mlir;
using namespace mosaic;
using layout::RegisterLayout;
using layout::SmemTransforms;

static LogicalResult lowerWgmmaWait(LoweringContext &lowering,
                                    mosaic_gpu::WGMMAWaitOp op) {
  // Each thread releases what its own warp's groups read (an arrive that
  // counts 128 per warpgroup), so no warpgroup barrier follows.
  OpBuilder builder(op);
  NVVM::WgmmaWaitGroupSyncOp::create(builder, op.getLoc(), op.getPending());
  return success();
}

static constexpr int64_t kInstructionM = 64;
static constexpr int64_t kInstructionKBytes = 32;

static std::optional<NVVM::WGMMATypes> wgmmaType(Type type) {
  if (type.isBF16())
    return NVVM::WGMMATypes::bf16;
  if (type.isF16())
    return NVVM::WGMMATypes::f16;
  if (type.isF32())
    return NVVM::WGMMATypes::tf32;
  if (isa<Float8E4M3FNType>(type))
    return NVVM::WGMMATypes::e4m3;
  if (isa<Float8E5M2Type>(type))
    return NVVM::WGMMATypes::e5m2;
  if (type.isInteger(8))
    return NVVM::WGMMATypes::s8;
  return std::nullopt;
}

namespace {

/// A tiled shared-memory operand with a swizzle T elements wide: either
/// (rows / 8, cols / T, 8, T) with rows of T contiguous elements, or a
/// transposed view (rows / T, cols / 8, T, 8) whose tiles are contiguous
/// along their first dim (the storage of the untransposed (cols, rows)).
struct MmaOperand {
  Value address; // i64 shared address of the first element
  SmallVector<int64_t> strideBytes;
  int64_t swizzle;
  int64_t elementBytes;
  /// The view is transposed: contiguous along rows, not columns.
  bool transposed = false;

  static FailureOr<MmaOperand> create(Operation *op, OpBuilder &builder,
                                      StringRef name, Value ref,
                                      const SmemTransforms &transforms) {
    auto type = cast<MemRefType>(ref.getType());
    MmaOperand operand;
    operand.swizzle = transforms.swizzle;
    operand.elementBytes = type.getElementTypeBitWidth() / 8;
    int64_t width = transforms.swizzle / operand.elementBytes;
    operand.transposed = transforms.tile == layout::Shape{width, 8};
    if (transforms.swizzle == layout::kNoSwizzle || !transforms.tile ||
        (*transforms.tile != layout::Shape{8, width} && !operand.transposed) ||
        type.getRank() != 4 || !mosaic_gpu::transformsApplied(op))
      return op->emitOpError()
             << "needs " << name
             << " in shared memory tiled by (8, swizzle / element bytes), or "
                "by (swizzle / element bytes, 8) for a transposed view, with "
                "a 32, 64 or 128-byte swizzle (run mosaic-gpu-infer-layouts "
                "and mosaic-gpu-apply-transforms), but it is "
             << type << " with transforms " << transforms.str();
    SmallVector<int64_t> strides;
    int64_t offset;
    int64_t contiguousDim = operand.transposed ? 2 : 3;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        llvm::any_of(strides, ShapedType::isDynamic) ||
        strides[contiguousDim] != 1 || strides[5 - contiguousDim] != width)
      return op->emitOpError() << "needs the tiles of " << name
                               << " stored contiguously, but it is " << type;
    for (int64_t stride : strides)
      operand.strideBytes.push_back(stride * operand.elementBytes);
    Location loc = op->getLoc();
    operand.address =
        arith::IndexCastOp::create(builder, loc, builder.getI64Type(),
                                   sharedByteAddress(builder, loc, ref));
    return operand;
  }

  /// The matrix descriptor of the operand, `offsetBytes` past its start.
  Value descriptor(OpBuilder &builder, Location loc, int64_t offsetBytes,
                   int64_t leadingBytes, int64_t strideBytes) const {
    auto constant = [&](int64_t value) -> Value {
      return arith::ConstantIntOp::create(builder, loc, value, 64);
    };
    using Descriptor = WgmmaMatrixDescriptor;
    // The start address is known at run time only: it is encoded there and
    // ORed into its field, which starts at bit 0; the other fields are
    // constants.
    static_assert(Descriptor::kStartAddressBit == 0);
    Value start =
        arith::AddIOp::create(builder, loc, address, constant(offsetBytes));
    Value encoded = arith::ShRUIOp::create(
        builder, loc,
        arith::AndIOp::create(builder, loc, start,
                              constant(Descriptor::kAddressMask)),
        constant(Descriptor::kUnitShift));
    uint64_t fixed =
        Descriptor::create(/*startBytes=*/0, leadingBytes, strideBytes,
                           Descriptor::swizzleOf(swizzle))
            .encode();
    return arith::OrIOp::create(builder, loc, encoded, constant(fixed));
  }
};

} // namespace

/// One wgmma.mma_async as inline PTX, for the forms NVVM's op does not
/// take: A in registers (four 32-bit registers of two 16-bit elements each)
/// and f16 accumulators (pairs packed in 32-bit registers). The
/// accumulator registers are tied inputs and outputs.
static Value wgmmaInlineAsm(OpBuilder &builder, Location loc, Type structType,
                            Value accumulator, int64_t accumulatorCount,
                            StringRef accumulatorType, ArrayRef<Value> aWords,
                            Value aDescriptor, Value bDescriptor, int64_t n,
                            StringRef inputType, bool accumulate, bool aMMajor,
                            bool bKMajor) {
  std::string text;
  llvm::raw_string_ostream ptx(text);
  // The scale-d predicate: D = A * B + D, or D = A * B without reading D.
  ptx << "{\n.reg .pred p;\nsetp.ne.b32 p, " << (accumulate ? 1 : 0) << ", 0;\n"
      << "wgmma.mma_async.sync.aligned.m64n" << n << "k16." << accumulatorType
      << "." << inputType << "." << inputType << " {";
  std::string output = accumulatorType == "f32" ? "=f" : "=r";
  std::string constraints;
  for (int64_t i = 0; i < accumulatorCount; ++i) {
    ptx << (i ? ", " : "") << "$" << i;
    constraints += (i ? "," : "") + output;
  }
  int64_t next = accumulatorCount;
  SmallVector<Value> operands;
  for (int64_t i = 0; i < accumulatorCount; ++i) {
    constraints += "," + std::to_string(i);
    operands.push_back(LLVM::ExtractValueOp::create(builder, loc, accumulator,
                                                    ArrayRef<int64_t>{i}));
  }
  next += accumulatorCount;
  ptx << "}, ";
  if (aDescriptor) {
    ptx << "$" << next++;
    constraints += ",l";
    operands.push_back(aDescriptor);
  } else {
    ptx << "{";
    for (auto [i, word] : llvm::enumerate(aWords)) {
      ptx << (i ? ", " : "") << "$" << next++;
      constraints += ",r";
      operands.push_back(word);
    }
    ptx << "}";
  }
  // scale-d (accumulate), imm-scale-a, imm-scale-b, then imm-trans-a (only
  // for A in shared memory: 1 for M-major A) and imm-trans-b (1 for MN-major
  // B).
  ptx << ", $" << next << ", p, 1, 1, "
      << (aDescriptor ? (aMMajor ? "1, " : "0, ") : "") << (bKMajor ? "0" : "1")
      << ";\n}\n";
  constraints += ",l";
  operands.push_back(bDescriptor);
  return LLVM::InlineAsmOp::create(
             builder, loc, structType, operands, text, constraints,
             /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::tailcallkind::TailCallKind::None,
             LLVM::AsmDialectAttr::get(builder.getContext(),
                                       LLVM::AsmDialect::AD_ATT),
             /*operand_attrs=*/ArrayAttr())
      .getResult(0);
}

namespace {
/// The wgmma ops that must fence threads' shared-memory writes for the
/// async proxy first, found before the walk (sharedWritesPending).
struct WgmmaState : GroupState {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(WgmmaState)
  llvm::DenseSet<Operation *> proxyFencedWgmmas;
};
} // namespace

/// The bytes [first, last) of the kernel's dynamic shared memory that the
/// `slice_smem` behind `ref` covers, if `ref` shows its slice.
static std::optional<std::pair<int64_t, int64_t>> sliceBytes(Value ref) {
  mosaic_gpu::SliceSMEMOp slice = mosaic_gpu::viewedSlice(ref);
  if (!slice)
    return std::nullopt;
  MemRefType type = slice.getResult().getType();
  Type element = type.getElementType();
  int64_t elementBytes = isa<mosaic_gpu::BarrierType>(element)
                             ? 8
                             : (element.getIntOrFloatBitWidth() + 7) / 8;
  int64_t first = slice.getOffsetAttr().getInt();
  return std::make_pair(first, first + type.getNumElements() * elementBytes);
}

/// Whether threads may have written shared memory that `op` (an async
/// proxy reader of `readRefs`) reads: a vector_store to shared memory
/// precedes it in its function, or shares an enclosing loop with it,
/// unless the store's slice and every one of `readRefs`' slices are known
/// and disjoint. Slices are traced before the walk replaces them.
static bool sharedWritesPending(Operation *op, ArrayRef<Value> readRefs) {
  Operation *function = op->getParentOfType<FunctionOpInterface>();
  // A store into slices that none of `readRefs` views cannot be what `op`
  // reads (slices are disjoint unless their byte ranges overlap).
  SmallVector<std::pair<int64_t, int64_t>> readRanges;
  for (Value ref : readRefs) {
    std::optional<std::pair<int64_t, int64_t>> range = sliceBytes(ref);
    if (!range) {
      readRanges.clear();
      break;
    }
    readRanges.push_back(*range);
  }
  auto disjointFromReads = [&](Value destination) {
    if (readRanges.empty())
      return false;
    std::optional<std::pair<int64_t, int64_t>> written =
        sliceBytes(destination);
    return written && llvm::all_of(readRanges, [&](auto read) {
             return written->second <= read.first ||
                    read.second <= written->first;
           });
  };
  bool pending = false;
  function->walk([&](mosaic_gpu::VectorStoreOp store) {
    auto space = dyn_cast_or_null<gpu::AddressSpaceAttr>(
        store.getDestination().getType().getMemorySpace());
    if (!space || space.getValue() != gpu::AddressSpace::Workgroup ||
        disjointFromReads(store.getDestination()))
      return WalkResult::advance();
    // Before `op` in program order, or in a loop around both.
    Operation *ancestor = store;
    while (ancestor && !ancestor->isAncestor(op))
      ancestor = ancestor->getParentOp();
    Operation *storeSide = store, *opSide = op;
    while (storeSide->getParentOp() != ancestor)
      storeSide = storeSide->getParentOp();
    while (opSide->getParentOp() != ancestor)
      opSide = opSide->getParentOp();
    bool before = storeSide != opSide && storeSide->isBeforeInBlock(opSide);
    bool inSharedLoop = false;
    for (Operation *loop = ancestor; loop && loop != function;
         loop = loop->getParentOp())
      inSharedLoop |= isa<LoopLikeOpInterface>(loop);
    pending = before || inSharedLoop;
    return pending ? WalkResult::interrupt() : WalkResult::advance();
  });
  return pending;
}

/// Finds the wgmma ops whose operands threads may have written.
static void findProxyFencedWgmmas(LoweringContext &lowering, Operation *root) {
  root->walk([&](mosaic_gpu::WGMMAOp wgmma) {
    SmallVector<Value> reads = {wgmma.getB()};
    if (isa<MemRefType>(wgmma.getA().getType()))
      reads.push_back(wgmma.getA());
    if (sharedWritesPending(wgmma, reads))
      lowering.state<WgmmaState>().proxyFencedWgmmas.insert(wgmma);
  });
}

static LogicalResult lowerWgmma(LoweringContext &lowering,
                                mosaic_gpu::WGMMAOp op) {
  FailureOr<RegisterLayout> accLayout = inLayoutFor(op->getOpOperand(0));
  FailureOr<RegisterLayout> resultLayout = outLayoutFor(op->getResult(0));
  if (failed(accLayout) || failed(resultLayout))
    return failure();
  const RegisterLayout &wgmma = layout::namedLayout(layout::NamedLayout::Wgmma);
  if (*accLayout != wgmma || *resultLayout != wgmma)
    return op.emitOpError() << "needs its accumulator in the WGMMA layout, "
                               "but it is "
                            << accLayout->str();
  VectorType accType = lowering.logicalType(op.getAccumulator());
  Type accElement = accType.getElementType();
  if (!accElement.isF32() && !accElement.isF16() && !accElement.isInteger(32))
    return op.emitOpError() << "accumulates in " << accElement
                            << "; mosaic-gpu-lower lowers f32, f16 and i32 "
                               "accumulators";
  bool registerA = isa<VectorType>(op.getA().getType());
  Type element = registerA
                     ? lowering.logicalType(op.getA()).getElementType()
                     : cast<MemRefType>(op.getA().getType()).getElementType();
  std::optional<NVVM::WGMMATypes> inputType = wgmmaType(element);
  if (!inputType)
    return op.emitOpError()
           << "multiplies " << element << ", which wgmma does not take";
  // The two fp8 types may be mixed: B's type is its own.
  Type bElement = cast<MemRefType>(op.getB().getType()).getElementType();
  std::optional<NVVM::WGMMATypes> bInputType = wgmmaType(bElement);
  if (!bInputType)
    return op.emitOpError()
           << "multiplies " << bElement << ", which wgmma does not take";
  if (accElement.isF16() && !element.isF16())
    return op.emitOpError() << "accumulates in f16 from " << element
                            << " inputs; mosaic-gpu-lower lowers f16 "
                               "accumulators for f16 inputs only";
  if (isa<IntegerType>(element) != isa<IntegerType>(accElement))
    return op.emitOpError()
           << "accumulates " << element << " products in " << accElement
           << "; wgmma accumulates integer products in i32 "
              "and floating-point ones in f32 or f16";
  if (registerA && element.getIntOrFloatBitWidth() != 16)
    return op.emitOpError()
           << "takes A in registers as " << element
           << "; mosaic-gpu-lower lowers register A for 16-bit types only "
              "(keep A in shared memory)";
  FailureOr<SmemTransforms> aTransforms =
      registerA ? SmemTransforms::none()
                : mosaic_gpu::inTransformsFor(op.getAMutable());
  FailureOr<SmemTransforms> bTransforms =
      mosaic_gpu::inTransformsFor(op.getBMutable());
  if (failed(aTransforms) || failed(bTransforms))
    return failure();
  if (!registerA && aTransforms->swizzle != bTransforms->swizzle)
    return op.emitOpError() << "needs A and B with the same swizzle, but they "
                               "have "
                            << aTransforms->swizzle << " and "
                            << bTransforms->swizzle << " bytes";

  int64_t m = accType.getDimSize(0), n = accType.getDimSize(1);
  int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
  int64_t kSpan = kInstructionKBytes / elementBytes;
  OpBuilder builder(op);
  Location loc = op.getLoc();
  std::optional<MmaOperand> a;
  Value aRegisters;
  int64_t k;
  if (registerA) {
    FailureOr<RegisterLayout> aLayout = inLayoutFor(op->getOpOperand(1));
    if (failed(aLayout))
      return failure();
    if (*aLayout != wgmma)
      return op.emitOpError() << "needs A in registers in the WGMMA layout, "
                                 "but it is "
                              << aLayout->str();
    FailureOr<Value> registers =
        lowering.operandAs(op, op->getOpOperand(1), *aLayout, builder);
    if (failed(registers))
      return failure();
    aRegisters = *registers;
    k = lowering.logicalType(op.getA()).getDimSize(1);
  } else {
    FailureOr<MmaOperand> created =
        MmaOperand::create(op, builder, "A", op.getA(), *aTransforms);
    if (failed(created))
      return failure();
    a = *created;
    // The tiled buffer: A is (M / 8, K / T, 8, T).
    auto aType = cast<MemRefType>(op.getA().getType());
    k = aType.getDimSize(1) * aType.getDimSize(3);
  }
  FailureOr<MmaOperand> b =
      MmaOperand::create(op, builder, "B", op.getB(), *bTransforms);
  if (failed(b))
    return failure();
  // A is K-major (row-major M x K) or, through a transposed view of a
  // row-major K x M buffer, M-major (imm-trans-a = 1), for 16-bit types
  // only, as B.
  bool aMMajor = a && a->transposed;
  if (aMMajor && element.getIntOrFloatBitWidth() != 16)
    return op.emitOpError()
           << "multiplies " << element
           << " with A M-major (a transposed view), which wgmma transposes "
              "only for 16-bit types; store A as M x K";
  // B is MN-major (a row-major K x N buffer, imm-trans-b = 1) or, through
  // a transposed view of a row-major N x K buffer, K-major. wgmma
  // transposes only 16-bit operands, so tf32 and 8-bit B must be K-major.
  bool bKMajor = b->transposed;
  if (!bKMajor && element.getIntOrFloatBitWidth() != 16)
    return op.emitOpError()
           << "multiplies " << element
           << " with B in row-major (MN-major) order, which wgmma transposes "
              "only for 16-bit types; store B as N x K and pass a transposed "
              "view (memref.transpose) to make it K-major";
  if (k % kSpan != 0)
    return op.emitOpError()
           << "needs K to be a multiple of " << kSpan << ", but it is " << k;
  FailureOr<Value> accRegisters =
      lowering.operandAs(op, op->getOpOperand(0), *accLayout, builder);
  if (failed(accRegisters))
    return failure();
  if (lowering.state<WgmmaState>().proxyFencedWgmmas.contains(op))
    fenceSharedWritesForAsyncProxy(lowering, op, builder);
  // The PTX ISA leaves a wgmma undefined when its accumulator or A
  // registers are written between the wgmma.fence and the instruction.
  // LLVM materializes constants and computes values where it likes, so
  // every register the instructions read is made opaque before the fence:
  // a known-zero accumulator is never read at all (scale-d = 0 on each
  // block's first instruction), other accumulators and register-A
  // fragments come out of an opaque asm statement that the fence follows.
  bool zeroAccumulator = matchPattern(op.getAccumulator(), m_AnyZeroFloat()) ||
                         matchPattern(op.getAccumulator(), m_Zero());
  SmallVector<Value> readRegisters;
  if (!zeroAccumulator)
    readRegisters.push_back(*accRegisters);
  if (registerA)
    readRegisters.push_back(aRegisters);
  FailureOr<SmallVector<Value>> opaque =
      opaqueRegisters(op, builder, readRegisters);
  if (failed(opaque))
    return failure();
  if (!zeroAccumulator)
    accRegisters = opaque->front();
  if (registerA)
    aRegisters = opaque->back();

  MLIRContext *context = op.getContext();
  // Accumulator elements of one m64nN instruction per thread, and the
  // registers holding them: f16 pairs share a 32-bit register.
  int64_t perBlock = n / 2;
  bool packedPairs = accElement.isF16();
  int64_t registersPerBlock = packedPairs ? perBlock / 2 : perBlock;
  Type registerElement = packedPairs ? builder.getI32Type() : accElement;
  SmallVector<Type> fields(registersPerBlock, registerElement);
  auto structType = LLVM::LLVMStructType::getLiteral(context, fields);
  NVVM::WGMMATypes accumulatorType =
      accElement.isF32() ? NVVM::WGMMATypes::f32 : NVVM::WGMMATypes::s32;
  StringRef accumulatorName = accElement.isF32()   ? "f32"
                              : accElement.isF16() ? "f16"
                                                   : "s32";
  auto shape = NVVM::MMAShapeAttr::get(context, kInstructionM, n, kSpan);
  // Field i of a block's struct: an accumulator register, or (f16) the
  // i-th pair of the block's registers as one 32-bit word.
  auto fieldOf = [&](int64_t block, int64_t i) -> Value {
    if (!packedPairs)
      return vector::ExtractOp::create(builder, loc, *accRegisters,
                                       ArrayRef<int64_t>{block * perBlock + i});
    Value pair = vector::ExtractStridedSliceOp::create(
        builder, loc, *accRegisters,
        ArrayRef<int64_t>{block * perBlock + 2 * i}, ArrayRef<int64_t>{2},
        ArrayRef<int64_t>{1});
    Value word = vector::BitCastOp::create(
        builder, loc, VectorType::get({1}, builder.getI32Type()), pair);
    return vector::ExtractOp::create(builder, loc, word, ArrayRef<int64_t>{0});
  };

  // The A fragments of every block and K step, extracted before the fence.
  SmallVector<SmallVector<Value>> aFragments;
  if (registerA)
    for (int64_t block = 0; block < m / kInstructionM; ++block)
      for (int64_t step = 0; step < k / kSpan; ++step) {
        // The WGMMA registers of rows [64 block, +64) and columns
        // [16 step, +16) are 8 consecutive elements, in the order of the
        // instruction's A fragment.
        int64_t first = (block * (k / 8) + 2 * step) * 4;
        Value slice = vector::ExtractStridedSliceOp::create(
            builder, loc, aRegisters, ArrayRef<int64_t>{first},
            ArrayRef<int64_t>{8}, ArrayRef<int64_t>{1});
        Value words = vector::BitCastOp::create(
            builder, loc, VectorType::get({4}, builder.getI32Type()), slice);
        SmallVector<Value> &aWords = aFragments.emplace_back();
        for (int64_t word = 0; word < 4; ++word)
          aWords.push_back(vector::ExtractOp::create(builder, loc, words,
                                                     ArrayRef<int64_t>{word}));
      }
  // The accumulator structs, packed before the fence too.
  SmallVector<Value> packedBlocks;
  for (int64_t block = 0; block < m / kInstructionM; ++block) {
    Value packed = LLVM::UndefOp::create(builder, loc, structType);
    if (!zeroAccumulator)
      for (int64_t i = 0; i < registersPerBlock; ++i)
        packed = LLVM::InsertValueOp::create(
            builder, loc, packed, fieldOf(block, i), ArrayRef<int64_t>{i});
    packedBlocks.push_back(packed);
  }

  NVVM::WgmmaFenceAlignedOp::create(builder, loc);
  SmallVector<Value> blocks;
  for (int64_t block = 0; block < m / kInstructionM; ++block) {
    Value packed = packedBlocks[block];
    for (int64_t step = 0; step < k / kSpan; ++step) {
      bool accumulate = !zeroAccumulator || step > 0;
      int64_t kBytes = step * kInstructionKBytes;
      auto bDescriptor = [&] {
        if (bKMajor) {
          // B viewed as (K / T, N / 8, T, 8): like A, K moves within the
          // swizzled row, then to the next column of tiles; the n rows of
          // the instruction are N / 8 groups of 8 apart by the stride of
          // dim 1.
          int64_t bOffset =
              (kBytes / b->swizzle) * b->strideBytes[0] + kBytes % b->swizzle;
          return b->descriptor(builder, loc, bOffset, /*leadingBytes=*/16,
                               b->strideBytes[1]);
        }
        // B as (K / 8, N / T, 8, T): K moves by whole 8-row groups.
        int64_t bOffset = (step * kSpan / 8) * b->strideBytes[0];
        return b->descriptor(builder, loc, bOffset, b->strideBytes[1],
                             b->strideBytes[0]);
      };
      if (registerA) {
        packed = wgmmaInlineAsm(builder, loc, structType, packed,
                                registersPerBlock, accumulatorName,
                                aFragments[block * (k / kSpan) + step],
                                /*aDescriptor=*/Value(), bDescriptor(), n,
                                element.isBF16() ? "bf16" : "f16", accumulate,
                                /*aMMajor=*/false, bKMajor);
        continue;
      }
      Value aDescriptor;
      if (aMMajor) {
        // A viewed as (M / T, K / 8, T, 8), mirroring MN-major B: the 64
        // rows are 64 / T swizzle-wide blocks, and K moves by whole 8-deep
        // groups.
        int64_t width = a->swizzle / a->elementBytes;
        int64_t aOffset = block * (kInstructionM / width) * a->strideBytes[0] +
                          (step * kSpan / 8) * a->strideBytes[1];
        aDescriptor = a->descriptor(builder, loc, aOffset, a->strideBytes[0],
                                    a->strideBytes[1]);
      } else {
        // A: 64 rows are 8 row groups; K moves within the swizzled row,
        // then to the next column of tiles.
        int64_t swizzleBytes = a->swizzle;
        int64_t aOffset = block * 8 * a->strideBytes[0] +
                          (kBytes / swizzleBytes) * a->strideBytes[1] +
                          kBytes % swizzleBytes;
        aDescriptor = a->descriptor(builder, loc, aOffset,
                                    /*leadingBytes=*/16, a->strideBytes[0]);
      }
      if (packedPairs) {
        packed =
            wgmmaInlineAsm(builder, loc, structType, packed, registersPerBlock,
                           accumulatorName, {}, aDescriptor, bDescriptor(), n,
                           "f16", accumulate, aMMajor, bKMajor);
        continue;
      }
      packed = NVVM::WgmmaMmaAsyncOp::create(
          builder, loc, structType, packed, aDescriptor, bDescriptor(), shape,
          *inputType, *bInputType, accumulatorType,
          accumulate ? NVVM::WGMMAScaleOut::one : NVVM::WGMMAScaleOut::zero,
          NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
          aMMajor ? NVVM::MMALayout::col : NVVM::MMALayout::row,
          bKMajor ? NVVM::MMALayout::col : NVVM::MMALayout::row,
          /*satfinite=*/nullptr);
    }
    blocks.push_back(packed);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(builder, loc);
  if (!op.getAsync()) {
    NVVM::WgmmaWaitGroupSyncOp::create(builder, loc, 0);
    // wait_group covers only the executing warp's part of the MMA: the
    // barrier orders every warp's completion (its shared-memory reads)
    // before whatever follows, such as a TMA refill of the operands' stage.
    warpgroupBarrier(lowering, op, builder);
  }

  Value result = arith::ConstantOp::create(
      builder, loc, builder.getZeroAttr(accRegisters->getType()));
  for (auto [block, packed] : llvm::enumerate(blocks))
    for (int64_t i = 0; i < registersPerBlock; ++i) {
      Value field = LLVM::ExtractValueOp::create(builder, loc, packed,
                                                 ArrayRef<int64_t>{i});
      int64_t position = static_cast<int64_t>(block) * perBlock;
      if (!packedPairs) {
        result = vector::InsertOp::create(builder, loc, field, result,
                                          ArrayRef<int64_t>{position + i});
        continue;
      }
      Value pair = vector::BitCastOp::create(
          builder, loc, VectorType::get({2}, accElement),
          vector::BroadcastOp::create(
              builder, loc, VectorType::get({1}, builder.getI32Type()), field));
      result = vector::InsertStridedSliceOp::create(
          builder, loc, pair, result, ArrayRef<int64_t>{position + 2 * i},
          ArrayRef<int64_t>{1});
    }
  return lowering.define(op.getResult(), result, *resultLayout);
}

void mosaic::populateWgmmaLowerings(LoweringRegistry &registry) {
  registry.add<mosaic_gpu::WGMMAOp>(lowerWgmma);
  registry.add<mosaic_gpu::WGMMAWaitOp>(lowerWgmmaWait);
  registry.addBeforeWalk(findProxyFencedWgmmas);
}
