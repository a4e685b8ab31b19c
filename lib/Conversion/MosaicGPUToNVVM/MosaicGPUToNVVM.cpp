//===- MosaicGPUToNVVM.cpp - Warpgroup vectors to per-thread registers ----===//
//
// Lowering is driven by values, not types: two vectors of one type may have
// different layouts, and the layout decides the registers. The pass walks
// each kernel in program order, maps every warpgroup vector to the flat
// vector of registers one thread holds, rewrites the ops on those registers,
// and erases the originals once everything is lowered. Control flow is kept
// and retyped in place.
//
// This file holds the walk, the register representation, elementwise ops,
// constants, relayouts and control flow; the other ops are lowered in the
// Lower*.cpp files beside it.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"
#include "mosaic/Conversion/MosaicGPUToNVVM/Passes.h"
#include "mosaic/Dialect/MosaicGPU/AttributeBridge.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/AttrTypeSubElements.h"

namespace mosaic {
#define GEN_PASS_DEF_MOSAICGPULOWER
#define GEN_PASS_DEF_MOSAICGPUMAPMEMORYSPACES
#define GEN_PASS_DEF_MOSAICGPUFINALIZEKERNELS
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

VectorType KernelLowering::logicalType(Value value) const {
  auto retyped = retypedValues.find(value);
  return retyped != retypedValues.end() ? retyped->second
                                        : cast<VectorType>(value.getType());
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

Value KernelLowering::linearThreadIndex(Operation *op) {
  return atFunctionEntry(op, linearThreadIds, [&](OpBuilder &builder,
                                                  Location loc) -> Value {
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
            builder, loc, known.asArrayRef()[static_cast<unsigned>(dimension)]);
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
          arith::MulIOp::create(builder, loc, extent(gpu::Dimension::y), z));
    }
    return arith::AddIOp::create(
        builder, loc, index,
        arith::MulIOp::create(builder, loc, extent(gpu::Dimension::x), yz));
  });
}

Value KernelLowering::threadInWarpgroup(Operation *op) {
  Value linear = linearThreadIndex(op);
  return atFunctionEntry(op, threadIds, [&](OpBuilder &builder, Location loc) {
    builder.setInsertionPointAfterValue(linear);
    Value groupSize =
        arith::ConstantIndexOp::create(builder, loc, kThreadsPerWarpgroup);
    return arith::RemUIOp::create(builder, loc, linear, groupSize).getResult();
  });
}

Value KernelLowering::warpgroupIndex(Operation *op) {
  Value linear = linearThreadIndex(op);
  return atFunctionEntry(op, warpgroupIds, [&](OpBuilder &builder,
                                               Location loc) {
    builder.setInsertionPointAfterValue(linear);
    Value groupSize =
        arith::ConstantIndexOp::create(builder, loc, kThreadsPerWarpgroup);
    return arith::DivUIOp::create(builder, loc, linear, groupSize).getResult();
  });
}

Value KernelLowering::isWarpgroupLeader(Operation *op) {
  Value thread = threadInWarpgroup(op);
  return atFunctionEntry(op, leaders, [&](OpBuilder &builder, Location loc) {
    builder.setInsertionPointAfter(thread.getDefiningOp());
    Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
    return arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, thread,
                                 zero)
        .getResult();
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
    return relayoutThroughSharedMemory(op, fragment.registers, fragment.layout,
                                       layout, type);
  return op->emitOpError() << "cannot relayout operand #"
                           << operand.getOperandNumber() << " from "
                           << fragment.layout.str() << " to " << layout.str()
                           << " in registers";
}

LogicalResult KernelLowering::define(Value result, Value registers,
                                     const RegisterLayout &layout) {
  fragments.try_emplace(result, Fragment{registers, layout});
  return success();
}

LogicalResult KernelLowering::lowerConstant(arith::ConstantOp op) {
  FailureOr<RegisterLayout> layout = annotatedLayout(op, kOutLayoutsAttr, 0);
  if (failed(layout))
    return failure();
  auto elements = dyn_cast<DenseElementsAttr>(op.getValue());
  auto type = cast<VectorType>(op.getType());
  FailureOr<VectorType> target = registerType(type, *layout);
  if (!elements || failed(target))
    return op.emitOpError()
           << "cannot lay out this constant as " << layout->str();
  OpBuilder builder(op);
  if (elements.isSplat()) {
    Value lowered = arith::ConstantOp::create(
        builder, op.getLoc(),
        DenseElementsAttr::get(*target, elements.getSplatValue<Attribute>()));
    return define(op.getResult(), lowered, *layout);
  }
  // A non-uniform constant: each thread holds other elements, so the
  // constant lives in global memory and every thread loads its own, as a
  // vector_load of that layout would.
  if (layout->isSplat())
    return op.emitOpError() << "lays out a non-uniform constant as a splat";
  Operation *table = SymbolTable::getNearestSymbolTable(op);
  if (!table)
    return op.emitOpError() << "has no enclosing module for its constant";
  auto bufferType = MemRefType::get(type.getShape(), type.getElementType());
  OpBuilder atTable = OpBuilder::atBlockBegin(&table->getRegion(0).front());
  auto global = memref::GlobalOp::create(
      atTable, op.getLoc(), "__mosaic_gpu_constant",
      atTable.getStringAttr("private"), bufferType,
      elements.reshape(
          RankedTensorType::get(type.getShape(), type.getElementType())),
      /*constant=*/true, /*alignment=*/atTable.getI64IntegerAttr(16));
  SymbolTable(table).insert(global); // renames to a unique name
  Value buffer = memref::GetGlobalOp::create(builder, op.getLoc(), bufferType,
                                             global.getSymName());
  Value loaded;
  LogicalResult transfer =
      layout->isStrided()
          ? lowerStridedTransfer(op, *layout, buffer, Value(), &loaded,
                                 /*scratch=*/true)
          : lowerTiledTransfer(op, *layout, type, buffer, Value(), &loaded,
                               /*scratch=*/true);
  if (failed(transfer))
    return failure();
  return define(op.getResult(), loaded, *layout);
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
        annotatedLayout(op, kInLayoutsAttr, vectorIndex++);
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
        annotatedLayout(op, kOutLayoutsAttr, index);
    if (failed(layout))
      return failure();
    FailureOr<VectorType> type =
        registerType(cast<VectorType>(result.getType()), *layout);
    if (failed(type))
      return op->emitOpError()
             << "result #" << index << " does not fit " << layout->str();
    resultTypes.push_back(*type);
    resultLayouts.push_back(*layout);
  }
  // The op itself does not change: it now applies to the thread's registers.
  OperationState state(op->getLoc(), op->getName(), operands, resultTypes,
                       op->getAttrs());
  state.attributes.erase(kInLayoutsAttr);
  state.attributes.erase(kOutLayoutsAttr);
  Operation *replacement = builder.create(state);
  for (auto [result, registers, layout] : llvm::zip_equal(
           op->getResults(), replacement->getResults(), resultLayouts))
    (void)define(result, registers, layout);
  return success();
}

LogicalResult KernelLowering::lowerLayoutCast(mosaic_gpu::LayoutCastOp op) {
  FailureOr<RegisterLayout> layout = annotatedLayout(op, kOutLayoutsAttr, 0);
  if (failed(layout))
    return failure();
  OpBuilder builder(op);
  FailureOr<Value> registers =
      operandAs(op, op->getOpOperand(0), *layout, builder);
  if (failed(registers))
    return failure();
  return define(op.getResult(), *registers, *layout);
}

namespace {
/// How one value travels through an opaque asm statement: as `words`, each
/// an asm operand with its constraint letter, and back.
struct AsmWords {
  SmallVector<Value> words;
  SmallVector<char> constraints;
  std::function<Value(OpBuilder &, Location, ArrayRef<Value>)> rebuild;
};
} // namespace

/// NVPTX's inline-asm constraint for a register of `type`, if it has one.
static std::optional<char> asmConstraint(Type type) {
  if (type.isF32())
    return 'f';
  if (type.isF64())
    return 'd';
  if (type.isInteger(16))
    return 'h';
  if (type.isInteger(32))
    return 'r';
  if (type.isInteger(64))
    return 'l';
  return std::nullopt;
}

/// A scalar as one asm word: 32- and 64-bit values as they are, indices as
/// i64, 16-bit floats as i16, narrower integers and floats widened to i16.
static FailureOr<AsmWords> scalarWords(OpBuilder &builder, Location loc,
                                       Value value) {
  Type type = value.getType();
  AsmWords words;
  if (std::optional<char> letter = asmConstraint(type)) {
    words.words.push_back(value);
    words.constraints.push_back(*letter);
    words.rebuild = [](OpBuilder &, Location, ArrayRef<Value> in) {
      return in.front();
    };
    return words;
  }
  if (type.isIndex()) {
    words.words.push_back(arith::IndexCastOp::create(
        builder, loc, builder.getI64Type(), value));
    words.constraints.push_back('l');
    words.rebuild = [](OpBuilder &b, Location l, ArrayRef<Value> in) {
      return arith::IndexCastOp::create(b, l, b.getIndexType(), in.front())
          .getResult();
    };
    return words;
  }
  if (!type.isIntOrFloat() || type.getIntOrFloatBitWidth() > 16)
    return failure();
  unsigned bits = type.getIntOrFloatBitWidth();
  Type bitsType = builder.getIntegerType(bits);
  Value integer = isa<FloatType>(type)
                      ? arith::BitcastOp::create(builder, loc, bitsType, value)
                      : value;
  if (bits < 16)
    integer =
        arith::ExtUIOp::create(builder, loc, builder.getI16Type(), integer);
  words.words.push_back(integer);
  words.constraints.push_back('h');
  words.rebuild = [type, bitsType, bits](OpBuilder &b, Location l,
                                         ArrayRef<Value> in) -> Value {
    Value integer = in.front();
    if (bits < 16)
      integer = arith::TruncIOp::create(b, l, bitsType, integer);
    if (isa<FloatType>(type))
      return arith::BitcastOp::create(b, l, type, integer);
    return integer;
  };
  return words;
}

/// A flat register vector as asm words: its elements when each is a
/// register of its own, packed 32-bit words when narrower elements fill
/// them, else each element widened.
static FailureOr<AsmWords> vectorWords(OpBuilder &builder, Location loc,
                                       Value value) {
  auto type = cast<VectorType>(value.getType());
  if (type.getRank() != 1 || type.isScalable())
    return failure();
  Type element = type.getElementType();
  int64_t count = type.getNumElements();
  Value source = value;
  VectorType wordsType = type;
  if (element.isIntOrFloat() && element.getIntOrFloatBitWidth() < 32 &&
      count * element.getIntOrFloatBitWidth() % 32 == 0) {
    wordsType = VectorType::get(
        {count * element.getIntOrFloatBitWidth() / 32}, builder.getI32Type());
    source = vector::BitCastOp::create(builder, loc, wordsType, value);
  }
  AsmWords words;
  SmallVector<std::function<Value(OpBuilder &, Location, ArrayRef<Value>)>>
      parts;
  for (int64_t i = 0; i < wordsType.getNumElements(); ++i) {
    Value scalar =
        vector::ExtractOp::create(builder, loc, source, ArrayRef<int64_t>{i});
    FailureOr<AsmWords> scalarAsm = scalarWords(builder, loc, scalar);
    if (failed(scalarAsm))
      return failure();
    words.words.append(scalarAsm->words);
    words.constraints.append(scalarAsm->constraints);
    parts.push_back(scalarAsm->rebuild);
  }
  words.rebuild = [type, wordsType, parts](OpBuilder &b, Location l,
                                           ArrayRef<Value> in) -> Value {
    SmallVector<Value> elements;
    for (auto [i, part] : llvm::enumerate(parts))
      elements.push_back(part(b, l, in.slice(i, 1)));
    Value rebuilt = vector::FromElementsOp::create(b, l, wordsType, elements);
    if (wordsType != type)
      rebuilt = vector::BitCastOp::create(b, l, type, rebuilt);
    return rebuilt;
  };
  return words;
}

FailureOr<SmallVector<Value>>
mosaic::opaqueRegisters(Operation *op, OpBuilder &builder, ValueRange values) {
  Location loc = op->getLoc();
  SmallVector<AsmWords> perValue;
  SmallVector<Value> operands;
  SmallVector<Type> wordTypes;
  std::string outputs, inputs;
  for (Value value : values) {
    FailureOr<AsmWords> words = isa<VectorType>(value.getType())
                                    ? vectorWords(builder, loc, value)
                                    : scalarWords(builder, loc, value);
    if (failed(words))
      return op->emitOpError()
             << "cannot pass " << value.getType()
             << " through an opaque register barrier; it takes integers, "
                "floats and indices, and 1-D vectors of them";
    for (auto [word, letter] : llvm::zip_equal(words->words,
                                               words->constraints)) {
      outputs += (outputs.empty() ? "=" : ",=") + std::string(1, letter);
      inputs += "," + std::to_string(operands.size());
      operands.push_back(word);
      wordTypes.push_back(word.getType());
    }
    perValue.push_back(std::move(*words));
  }
  SmallVector<Value> results;
  if (operands.empty())
    return results;
  Type resultType =
      wordTypes.size() == 1
          ? wordTypes.front()
          : LLVM::LLVMStructType::getLiteral(builder.getContext(), wordTypes);
  Value asmResult =
      LLVM::InlineAsmOp::create(
          builder, loc, resultType, operands, /*asm_string=*/"",
          outputs + inputs, /*has_side_effects=*/true,
          /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
          LLVM::AsmDialectAttr::get(builder.getContext(),
                                    LLVM::AsmDialect::AD_ATT),
          /*operand_attrs=*/ArrayAttr())
          .getResult(0);
  SmallVector<Value> opaqueWords;
  for (int64_t i = 0, end = wordTypes.size(); i < end; ++i)
    opaqueWords.push_back(end == 1 ? asmResult
                                   : LLVM::ExtractValueOp::create(
                                         builder, loc, asmResult,
                                         ArrayRef<int64_t>{i})
                                         .getResult());
  size_t next = 0;
  for (AsmWords &words : perValue) {
    size_t count = words.words.size();
    results.push_back(words.rebuild(
        builder, loc, ArrayRef<Value>(opaqueWords).slice(next, count)));
    next += count;
  }
  return results;
}

LogicalResult KernelLowering::lowerOptimizationBarrier(Operation *op) {
  // Every operand, registers and scalars alike, goes through one opaque
  // asm statement: LLVM cannot move computations across it or fold through
  // it. Shared-memory references and other handles pass unchanged.
  OpBuilder builder(op);
  SmallVector<Value> passed;
  SmallVector<std::optional<RegisterLayout>> layouts;
  SmallVector<OpResult> passedResults;
  unsigned vectorIndex = 0;
  for (auto [operand, result] :
       llvm::zip_equal(op->getOpOperands(), op->getResults())) {
    if (isRegisterVector(operand.get())) {
      FailureOr<RegisterLayout> layout =
          annotatedLayout(op, kOutLayoutsAttr, vectorIndex++);
      if (failed(layout))
        return failure();
      FailureOr<Value> registers = operandAs(op, operand, *layout, builder);
      if (failed(registers))
        return failure();
      passed.push_back(*registers);
      layouts.push_back(*layout);
      passedResults.push_back(result);
      continue;
    }
    Type type = operand.get().getType();
    if (type.isIntOrIndexOrFloat()) {
      passed.push_back(operand.get());
      layouts.push_back(std::nullopt);
      passedResults.push_back(result);
      continue;
    }
    result.replaceAllUsesWith(operand.get());
  }
  FailureOr<SmallVector<Value>> opaque = opaqueRegisters(op, builder, passed);
  if (failed(opaque))
    return failure();
  for (auto [result, value, layout] :
       llvm::zip_equal(passedResults, *opaque, layouts)) {
    if (layout)
      (void)define(result, value, *layout);
    else
      result.replaceAllUsesWith(value);
  }
  return success();
}

LogicalResult KernelLowering::lowerUndefined(Operation *op) {
  // Inference gives an undefined vector Splat (any layout converts from
  // it); its registers are undefined too, as one LLVM value, so nothing is
  // materialized for them.
  FailureOr<RegisterLayout> layout = annotatedLayout(op, kOutLayoutsAttr, 0);
  if (failed(layout))
    return failure();
  auto type = cast<VectorType>(op->getResult(0).getType());
  FailureOr<VectorType> registers = registerType(type, *layout);
  if (failed(registers) || !LLVM::isCompatibleType(*registers))
    return op->emitOpError() << "cannot hold an undefined " << type
                             << " in registers laid out as " << layout->str();
  OpBuilder builder(op);
  Value undefined =
      isa<LLVM::UndefOp>(op)
          ? LLVM::UndefOp::create(builder, op->getLoc(), *registers)
                .getResult()
          : LLVM::PoisonOp::create(builder, op->getLoc(), *registers)
                .getResult();
  return define(op->getResult(0), undefined, *layout);
}

LogicalResult KernelLowering::lowerIota(mosaic_gpu::BroadcastedIotaOp op) {
  FailureOr<RegisterLayout> layout = annotatedLayout(op, kOutLayoutsAttr, 0);
  if (failed(layout))
    return failure();
  VectorType type = op.getResult().getType();
  Type element = type.getElementType();
  if (!element.isIntOrIndex())
    return op.emitOpError() << "mosaic-gpu-lower builds iotas of integer "
                               "elements only, not "
                            << element;
  if (layout->isSplat())
    return op.emitOpError() << "an iota varies along dim " << op.getDimension()
                            << "; it cannot be a splat";
  llvm::Expected<std::vector<Shape>> elements =
      thread0Elements(*layout, type.getShape());
  if (!elements)
    return op.emitOpError() << llvm::toString(elements.takeError());
  int64_t dim = op.getDimension();
  OpBuilder builder(op);
  Location loc = op.getLoc();
  VectorType target = *registerType(type, *layout);
  auto constantIndex = [&](int64_t value) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, value);
  };
  if (layout->isStrided()) {
    // A thread's flat positions are thread 0's shifted by t * v; the index
    // along `dim` follows from each flat position (a shift can carry into
    // the next row, so it is not one offset for all registers).
    auto flatType = VectorType::get(target.getShape(), builder.getIndexType());
    int64_t vector = layout->vectorSize();
    SmallVector<Attribute> firstFlat;
    for (int64_t position = 0; position < target.getNumElements(); ++position)
      firstFlat.push_back(builder.getIndexAttr(
          (position / vector) * kThreadsPerWarpgroup * vector +
          position % vector));
    Value flat = arith::AddIOp::create(
        builder, loc,
        arith::ConstantOp::create(builder, loc,
                                  DenseElementsAttr::get(flatType, firstFlat)),
        vector::BroadcastOp::create(
            builder, loc, flatType,
            arith::MulIOp::create(builder, loc, threadInWarpgroup(op),
                                  constantIndex(vector))));
    ArrayRef<int64_t> shape = type.getShape();
    int64_t inner = 1;
    for (int64_t d = shape.size() - 1; d > dim; --d)
      inner *= shape[d];
    auto splat = [&](int64_t value) -> Value {
      return arith::ConstantOp::create(
          builder, loc,
          DenseElementsAttr::get(flatType, builder.getIndexAttr(value)));
    };
    Value index = arith::RemUIOp::create(
        builder, loc, arith::DivUIOp::create(builder, loc, flat, splat(inner)),
        splat(shape[dim]));
    if (!element.isIndex())
      index = arith::IndexCastOp::create(builder, loc, target, index);
    return define(op.getResult(), index, *layout);
  }
  // Tiled: thread 0's indices along `dim`, plus this thread's offset.
  SmallVector<Attribute> base;
  for (const Shape &index : *elements)
    base.push_back(builder.getIntegerAttr(element, index[dim]));
  Value registers = arith::ConstantOp::create(
      builder, loc, DenseElementsAttr::get(target, base));
  FailureOr<SmallVector<Value>> offsets =
      threadOffsets(op, layout->tiledLayout(), type.getShape(), builder);
  if (failed(offsets))
    return failure();
  Value offset = (*offsets)[dim];
  if (!element.isIndex())
    offset = arith::IndexCastOp::create(builder, loc, element, offset);
  Value shifted = arith::AddIOp::create(
      builder, loc, registers,
      vector::BroadcastOp::create(builder, loc, target, offset));
  return define(op.getResult(), shifted, *layout);
}

//===----------------------------------------------------------------------===//
// Control flow
//
// Loops and conditionals are kept: their vector operands, block arguments and
// results are retyped to the registers of the layouts inference gave them,
// and the terminators forward registers.
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::retypeResults(Operation *op,
                                            ArrayRef<Value> values,
                                            StringRef layouts) {
  unsigned vectorIndex = 0;
  for (Value value : values) {
    if (!isRegisterVector(value))
      continue;
    FailureOr<RegisterLayout> layout =
        annotatedLayout(op, layouts, vectorIndex++);
    if (failed(layout))
      return failure();
    FailureOr<VectorType> type =
        registerType(cast<VectorType>(value.getType()), *layout);
    if (failed(type))
      return op->emitOpError()
             << "carries a vector that does not fit " << layout->str();
    retypedValues.try_emplace(value, cast<VectorType>(value.getType()));
    value.setType(*type);
    (void)define(value, value, *layout);
  }
  return success();
}

LogicalResult KernelLowering::relayoutInits(Operation *op,
                                            MutableOperandRange inits,
                                            StringRef layouts) {
  OpBuilder builder(op);
  unsigned vectorIndex = 0;
  for (OpOperand &init : inits) {
    if (!isRegisterVector(init.get()))
      continue;
    FailureOr<RegisterLayout> layout =
        annotatedLayout(op, layouts, vectorIndex++);
    if (failed(layout))
      return failure();
    FailureOr<Value> registers = operandAs(op, init, *layout, builder);
    if (failed(registers))
      return failure();
    init.set(*registers);
  }
  return success();
}

LogicalResult KernelLowering::lowerFor(scf::ForOp op) {
  if (failed(relayoutInits(op, op.getInitArgsMutable(), kOutLayoutsAttr)))
    return failure();
  SmallVector<Value> carried(op.getRegionIterArgs());
  SmallVector<Value> results(op.getResults());
  if (failed(retypeResults(op, carried, kOutLayoutsAttr)) ||
      failed(retypeResults(op, results, kOutLayoutsAttr)))
    return failure();
  mosaic_gpu::dropLayoutAnnotations(op);
  return success();
}

LogicalResult KernelLowering::lowerBranches(Operation *op) {
  SmallVector<Value> results(op->getResults());
  if (failed(retypeResults(op, results, kOutLayoutsAttr)))
    return failure();
  mosaic_gpu::dropLayoutAnnotations(op);
  return success();
}

LogicalResult KernelLowering::lowerWhile(scf::WhileOp op) {
  if (failed(relayoutInits(op, op.getInitsMutable(), kInLayoutsAttr)))
    return failure();
  SmallVector<Value> before(op.getBeforeArguments());
  SmallVector<Value> after(op.getAfterArguments());
  SmallVector<Value> results(op.getResults());
  if (failed(retypeResults(op, before, kInLayoutsAttr)) ||
      failed(retypeResults(op, after, kOutLayoutsAttr)) ||
      failed(retypeResults(op, results, kOutLayoutsAttr)))
    return failure();
  mosaic_gpu::dropLayoutAnnotations(op);
  return success();
}

LogicalResult
KernelLowering::forwardRegisters(Operation *terminator,
                                 MutableArrayRef<OpOperand> operands,
                                 ValueRange targets) {
  OpBuilder builder(terminator);
  for (auto [operand, target] : llvm::zip_equal(operands, targets)) {
    if (!isRegisterVector(operand.get()))
      continue;
    // The parent has been retyped already: pass what its values hold.
    auto carried = fragments.find(target);
    if (carried == fragments.end())
      return terminator->emitOpError()
             << "passes on a vector its parent does not carry";
    FailureOr<Value> registers =
        operandAs(terminator, operand, carried->second.layout, builder);
    if (failed(registers))
      return failure();
    operand.set(*registers);
  }
  terminator->removeAttr(kInLayoutsAttr);
  return success();
}

LogicalResult KernelLowering::lowerYield(scf::YieldOp op) {
  Operation *parent = op->getParentOp();
  if (auto loop = dyn_cast<scf::WhileOp>(parent))
    return forwardRegisters(op, op->getOpOperands(), loop.getBeforeArguments());
  if (!isa<scf::ForOp, scf::IfOp, scf::IndexSwitchOp>(parent))
    return op.emitOpError() << "mosaic-gpu-lower carries vectors through "
                               "scf.for, scf.while, scf.if and "
                               "scf.index_switch only, not "
                            << parent->getName();
  return forwardRegisters(op, op->getOpOperands(), parent->getResults());
}

LogicalResult KernelLowering::lowerCondition(scf::ConditionOp op) {
  auto loop = cast<scf::WhileOp>(op->getParentOp());
  return forwardRegisters(op, op.getArgsMutable(), loop.getAfterArguments());
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

int64_t KernelLowering::scratchOffset(Operation *function) {
  auto [entry, inserted] = scratchOffsets.try_emplace(function, 0);
  if (inserted)
    entry->second = llvm::alignTo(sliceExtent(function), 16);
  return entry->second;
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
  // Pre-order: a loop's block arguments are retyped before its body is
  // lowered.
  WalkResult walk = root->walk<WalkOrder::PreOrder>([&](Operation *op)
                                                        -> WalkResult {
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
    bool keep = false;
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      if (!touchesVectors)
        return WalkResult::advance();
      result = lowerConstant(constant);
    } else if (auto loop = dyn_cast<scf::ForOp>(op)) {
      result = lowerFor(loop);
      keep = true;
    } else if (isa<scf::IfOp, scf::IndexSwitchOp>(op)) {
      result = lowerBranches(op);
      keep = true;
    } else if (auto loop = dyn_cast<scf::WhileOp>(op)) {
      result = lowerWhile(loop);
      keep = true;
    } else if (auto condition = dyn_cast<scf::ConditionOp>(op)) {
      if (!touchesVectors)
        return WalkResult::advance();
      result = lowerCondition(condition);
      keep = true;
    } else if (auto yield = dyn_cast<scf::YieldOp>(op)) {
      if (!touchesVectors)
        return WalkResult::advance();
      result = lowerYield(yield);
      keep = true;
    } else if (auto slice = dyn_cast<mosaic_gpu::SliceSMEMOp>(op)) {
      result = lowerSliceSmem(slice);
    } else if (auto cast = dyn_cast<mosaic_gpu::LayoutCastOp>(op)) {
      result = lowerLayoutCast(cast);
    } else if (isa<mosaic_gpu::OptimizationBarrierOp>(op)) {
      result = lowerOptimizationBarrier(op);
    } else if (auto iota = dyn_cast<mosaic_gpu::BroadcastedIotaOp>(op)) {
      result = lowerIota(iota);
    } else if (touchesVectors &&
               isa<ub::PoisonOp, LLVM::UndefOp, LLVM::PoisonOp>(op)) {
      result = lowerUndefined(op);
    } else if (auto load = dyn_cast<mosaic_gpu::VectorLoadOp>(op)) {
      result = lowerVectorLoad(load);
    } else if (auto store = dyn_cast<mosaic_gpu::VectorStoreOp>(op)) {
      result = lowerVectorStore(store);
    } else if (auto init = dyn_cast<mosaic_gpu::InitializeBarrierOp>(op)) {
      result = lowerInitializeBarrier(init);
    } else if (auto arrive = dyn_cast<mosaic_gpu::ArriveOp>(op)) {
      result = lowerArrive(arrive);
    } else if (auto expect = dyn_cast<mosaic_gpu::ArriveExpectTxOp>(op)) {
      result = lowerArriveExpectTx(expect);
    } else if (auto wait = dyn_cast<mosaic_gpu::WaitOp>(op)) {
      result = lowerWait(wait);
    } else if (auto load = dyn_cast<mosaic_gpu::AsyncLoadOp>(op)) {
      result = lowerAsyncLoad(load);
    } else if (auto store = dyn_cast<mosaic_gpu::AsyncStoreOp>(op)) {
      result = lowerAsyncStore(store);
    } else if (auto prefetch = dyn_cast<mosaic_gpu::AsyncPrefetchOp>(op)) {
      result = lowerAsyncPrefetch(prefetch);
    } else if (auto wgmma = dyn_cast<mosaic_gpu::WGMMAOp>(op)) {
      result = lowerWgmma(wgmma);
    } else if (auto reduction = dyn_cast<vector::MultiDimReductionOp>(op)) {
      result = lowerMultiReduction(reduction);
    } else if (auto broadcast = dyn_cast<mosaic_gpu::BroadcastInDimOp>(op)) {
      result = lowerBroadcastInDim(broadcast);
    } else if (auto broadcast = dyn_cast<vector::BroadcastOp>(op)) {
      result = lowerBroadcast(broadcast);
    } else if (auto reshape = dyn_cast<vector::ShapeCastOp>(op)) {
      result = lowerShapeCast(reshape);
    } else if (auto slice = dyn_cast<vector::ExtractStridedSliceOp>(op)) {
      result = lowerExtractStridedSlice(slice);
    } else if (auto extract = dyn_cast<vector::ExtractOp>(op)) {
      result = lowerExtract(extract);
    } else if (isa<mosaic_gpu::WithTransformsOp, mosaic_gpu::AssumeMultipleOp>(
                   op)) {
      // Hints for inference and tiling; the value itself is unchanged.
      op->getResult(0).replaceAllUsesWith(op->getOperand(0));
    } else if (touchesVectors && op->hasTrait<OpTrait::Elementwise>()) {
      result = lowerElementwise(op);
    } else if (touchesVectors || mosaicOp) {
      result = op->emitOpError() << "is not lowered by mosaic-gpu-lower yet";
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
  // Record the dynamic shared memory each kernel needs (slices and scratch)
  // while the slices still exist.
  SmallVector<std::pair<gpu::GPUFuncOp, int64_t>> sharedBytes;
  root->walk([&](gpu::GPUFuncOp function) {
    int64_t bytes = sliceExtent(function);
    if (int64_t scratch = scratchBytes.lookup(function))
      bytes = std::max(bytes, scratchOffset(function) + scratch);
    sharedBytes.push_back({function, bytes});
  });
  for (Operation *op : llvm::reverse(lowered)) {
    if (!op->use_empty())
      return op->emitOpError()
             << "still has users after lowering; they were not lowered";
    op->erase();
  }
  for (auto [function, bytes] : sharedBytes) {
    if (bytes > kMaxSharedMemoryBytes)
      return function.emitOpError()
             << "needs " << bytes << " bytes of shared memory (its slices and "
             << "the lowering's reduction scratch), more than the "
             << kMaxSharedMemoryBytes << " an sm_90a block has";
    function->setAttr(kDynamicSharedBytesAttr,
                      Builder(function.getContext()).getI64IntegerAttr(bytes));
  }
  replaceBarrierTypes(root);
  return success();
}

namespace {

struct MapMemorySpacesPass
    : mosaic::impl::MosaicGPUMapMemorySpacesBase<MapMemorySpacesPass> {
  void runOnOperation() override {
    // convert-gpu-to-nvvm lowers the shared memory of code in a gpu.module;
    // anywhere else gpu.dynamic_shared_memory stays, and its verifier
    // rejects the numbered address space this pass would give it.
    WalkResult unlowered =
        getOperation()->walk([](gpu::DynamicSharedMemoryOp op) {
          op.emitError("shared memory outside a gpu.module cannot be "
                       "lowered: the kernel must be a gpu.func in a "
                       "gpu.module");
          return WalkResult::interrupt();
        });
    if (unlowered.wasInterrupted())
      return signalPassFailure();
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

struct FinalizeKernelsPass
    : mosaic::impl::MosaicGPUFinalizeKernelsBase<FinalizeKernelsPass> {
  void runOnOperation() override {
    // The dynamic shared memory is the block's, sized at launch: an external
    // symbol (`.extern .shared`), not a zero-sized array of the kernel's own.
    // 1024-byte alignment keeps the swizzle patterns of TMA, wgmma and our
    // own accesses (all functions of the address bits) in agreement.
    getOperation()->walk([](LLVM::GlobalOp global) {
      if (global.getAddrSpace() != 3 ||
          !global.getSymName().starts_with("__dynamic_shmem__"))
        return;
      global.setLinkage(LLVM::Linkage::External);
      global.setAlignment(1024);
    });
    // Tensor maps are passed by value (a 128-byte, 64-byte aligned
    // CUtensorMap) and read in place by TMA.
    getOperation()->walk([](LLVM::LLVMFuncOp function) {
      MLIRContext *context = function.getContext();
      Builder builder(context);
      auto maps = function->getAttrOfType<ArrayAttr>(kTensorMapsAttr);
      if (!maps)
        return;
      for (auto map : maps.getAsRange<DictionaryAttr>()) {
        auto index = map.getAs<IntegerAttr>("parameter").getInt();
        function.setArgAttr(
            index, LLVM::LLVMDialect::getByValAttrName(),
            TypeAttr::get(LLVM::LLVMArrayType::get(IntegerType::get(context, 8),
                                                   kTensorMapBytes)));
        function.setArgAttr(index, LLVM::LLVMDialect::getAlignAttrName(),
                            builder.getI64IntegerAttr(kTensorMapAlignment));
        function.setArgAttr(index, NVVM::NVVMDialect::getGridConstantAttrName(),
                            builder.getUnitAttr());
      }
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
