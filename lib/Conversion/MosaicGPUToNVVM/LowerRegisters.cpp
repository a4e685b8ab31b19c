//===- LowerRegisters.cpp - Constants, elementwise ops, iotas, barriers ---===//
//
// Ops whose lowering stays in registers: constants (splats directly,
// non-uniform ones loaded from a global as a vector_load would), elementwise
// ops applied unchanged to each thread's registers, layout casts, iotas,
// undefined values and optimization barriers (one opaque asm statement).
//
//===----------------------------------------------------------------------===//

#include "LoweringContext.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"

using namespace mlir;
using namespace mosaic;
using layout::kThreadsPerWarpgroup;
using layout::RegisterLayout;
using layout::Shape;

static LogicalResult lowerConstant(LoweringContext &lowering,
                                   arith::ConstantOp op) {
  FailureOr<RegisterLayout> layout = outLayoutFor(op->getResult(0));
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
    return lowering.define(op.getResult(), lowered, *layout);
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
  LogicalResult transfer = layout->isStrided()
                               ? lowerStridedTransfer(lowering, op, *layout,
                                                      buffer, Value(), &loaded,
                                                      /*buffer=*/nullptr)
                               : lowerTiledTransfer(lowering, op, *layout, type,
                                                    buffer, Value(), &loaded,
                                                    /*buffer=*/nullptr);
  if (failed(transfer))
    return failure();
  return lowering.define(op.getResult(), loaded, *layout);
}

/// A truncation of registers to an 8-bit float: LLVM has no such type, so
/// each pair goes through PTX's cvt.rn.satfinite.{e4m3,e5m2}x2.f32 (values
/// beyond the type's range saturate to its largest finite one, as the
/// `satfinite` the instruction requires says).
static Value truncateToFloat8(OpBuilder &builder, Location loc, Value source,
                              VectorType resultType) {
  auto sourceType = cast<VectorType>(source.getType());
  Type f32 = builder.getF32Type();
  if (!sourceType.getElementType().isF32())
    source = arith::ExtFOp::create(
        builder, loc, VectorType::get(sourceType.getShape(), f32), source);
  int64_t count = sourceType.getNumElements();
  Type element = resultType.getElementType();
  auto pairType = VectorType::get({2}, builder.getI8Type());
  auto floatPairType = VectorType::get({2}, element);
  Value result = arith::ConstantOp::create(
      builder, loc,
      builder.getZeroAttr(VectorType::get({count + count % 2}, element)));
  Value zero =
      arith::ConstantOp::create(builder, loc, builder.getF32FloatAttr(0));
  for (int64_t i = 0; i < count; i += 2) {
    Value low = vector::ExtractOp::create(builder, loc, source, i);
    Value high =
        i + 1 < count
            ? Value(vector::ExtractOp::create(builder, loc, source, i + 1))
            : zero;
    // The i16 form packs `a` into the high byte: as two i8 elements, the
    // low byte (`b`) comes first.
    Value pair = NVVM::ConvertF32x2ToF8x2Op::create(
        builder, loc, pairType, high, low, NVVM::FPRoundingMode::RN,
        NVVM::SaturationMode::SATFINITE, /*relu=*/false, element);
    Value floats = arith::BitcastOp::create(builder, loc, floatPairType, pair);
    result = vector::InsertStridedSliceOp::create(builder, loc, floats, result,
                                                  ArrayRef<int64_t>{i},
                                                  ArrayRef<int64_t>{1});
  }
  if (count % 2)
    result = vector::ExtractStridedSliceOp::create(
        builder, loc, result, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{count},
        ArrayRef<int64_t>{1});
  return result;
}

static LogicalResult lowerElementwise(LoweringContext &lowering,
                                      Operation *op) {
  OpBuilder builder(op);
  SmallVector<Value> operands;
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isRegisterVector(operand.get())) {
      operands.push_back(operand.get());
      continue;
    }
    FailureOr<RegisterLayout> layout = inLayoutFor(operand);
    if (failed(layout))
      return failure();
    FailureOr<Value> registers =
        lowering.operandAs(op, operand, *layout, builder);
    if (failed(registers))
      return failure();
    operands.push_back(*registers);
  }
  SmallVector<Type> resultTypes;
  SmallVector<RegisterLayout> resultLayouts;
  for (auto [index, result] : llvm::enumerate(op->getResults())) {
    FailureOr<RegisterLayout> layout = outLayoutFor(result);
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
  if (isa<arith::TruncFOp>(op) &&
      getElementTypeOrSelf(resultTypes[0]).getIntOrFloatBitWidth() == 8) {
    Value truncated = truncateToFloat8(builder, op->getLoc(), operands[0],
                                       cast<VectorType>(resultTypes[0]));
    return lowering.define(op->getResult(0), truncated, resultLayouts[0]);
  }
  // The op itself does not change: it now applies to the thread's registers.
  OperationState state(op->getLoc(), op->getName(), operands, resultTypes,
                       op->getAttrs());
  state.attributes.erase(kInLayoutsAttr);
  state.attributes.erase(kOutLayoutsAttr);
  Operation *replacement = builder.create(state);
  for (auto [result, registers, layout] : llvm::zip_equal(
           op->getResults(), replacement->getResults(), resultLayouts))
    (void)lowering.define(result, registers, layout);
  return success();
}

static LogicalResult lowerLayoutCast(LoweringContext &lowering,
                                     mosaic_gpu::LayoutCastOp op) {
  FailureOr<RegisterLayout> layout = outLayoutFor(op->getResult(0));
  if (failed(layout))
    return failure();
  OpBuilder builder(op);
  FailureOr<Value> registers =
      lowering.operandAs(op, op->getOpOperand(0), *layout, builder);
  if (failed(registers))
    return failure();
  return lowering.define(op.getResult(), *registers, *layout);
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
    words.words.push_back(
        arith::IndexCastOp::create(builder, loc, builder.getI64Type(), value));
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
    wordsType = VectorType::get({count * element.getIntOrFloatBitWidth() / 32},
                                builder.getI32Type());
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
    for (auto [word, letter] :
         llvm::zip_equal(words->words, words->constraints)) {
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
    opaqueWords.push_back(
        end == 1 ? asmResult
                 : LLVM::ExtractValueOp::create(builder, loc, asmResult,
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

static LogicalResult lowerOptimizationBarrier(LoweringContext &lowering,
                                              Operation *op) {
  // Every operand, registers and scalars alike, goes through one opaque
  // asm statement: LLVM cannot move computations across it or fold through
  // it. Shared-memory references and other handles pass unchanged.
  OpBuilder builder(op);
  SmallVector<Value> passed;
  SmallVector<std::optional<RegisterLayout>> layouts;
  SmallVector<OpResult> passedResults;
  for (auto [operand, result] :
       llvm::zip_equal(op->getOpOperands(), op->getResults())) {
    if (isRegisterVector(operand.get())) {
      FailureOr<RegisterLayout> layout = outLayoutFor(result);
      if (failed(layout))
        return failure();
      FailureOr<Value> registers =
          lowering.operandAs(op, operand, *layout, builder);
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
      (void)lowering.define(result, value, *layout);
    else
      result.replaceAllUsesWith(value);
  }
  return success();
}

/// ub.poison, llvm.mlir.undef and llvm.mlir.poison vectors.
static LogicalResult lowerUndefined(LoweringContext &lowering, Operation *op) {
  // Inference gives an undefined vector Splat (any layout converts from
  // it); its registers are undefined too, as one LLVM value, so nothing is
  // materialized for them.
  FailureOr<RegisterLayout> layout = outLayoutFor(op->getResult(0));
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
          ? LLVM::UndefOp::create(builder, op->getLoc(), *registers).getResult()
          : LLVM::PoisonOp::create(builder, op->getLoc(), *registers)
                .getResult();
  return lowering.define(op->getResult(0), undefined, *layout);
}

static LogicalResult lowerIota(LoweringContext &lowering,
                               mosaic_gpu::BroadcastedIotaOp op) {
  FailureOr<RegisterLayout> layout = outLayoutFor(op->getResult(0));
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
            arith::MulIOp::create(builder, loc, lowering.threadInWarpgroup(op),
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
    return lowering.define(op.getResult(), index, *layout);
  }
  // Tiled: thread 0's indices along `dim`, plus this thread's offset.
  SmallVector<Attribute> base;
  for (const Shape &index : *elements)
    base.push_back(builder.getIntegerAttr(element, index[dim]));
  Value registers = arith::ConstantOp::create(
      builder, loc, DenseElementsAttr::get(target, base));
  FailureOr<SmallVector<Value>> offsets = threadOffsets(
      lowering, op, layout->tiledLayout(), type.getShape(), builder);
  if (failed(offsets))
    return failure();
  Value offset = (*offsets)[dim];
  if (!element.isIndex())
    offset = arith::IndexCastOp::create(builder, loc, element, offset);
  Value shifted = arith::AddIOp::create(
      builder, loc, registers,
      vector::BroadcastOp::create(builder, loc, target, offset));
  return lowering.define(op.getResult(), shifted, *layout);
}

void mosaic::populateRegisterLowerings(LoweringRegistry &registry) {
  registry.setElementwiseRule(lowerElementwise);
  registry.add<arith::ConstantOp>(lowerConstant, OpLowering::OnVectorsOnly);
  registry.add<mosaic_gpu::LayoutCastOp>(lowerLayoutCast);
  registry.add<mosaic_gpu::OptimizationBarrierOp>(lowerOptimizationBarrier);
  registry.add<mosaic_gpu::BroadcastedIotaOp>(lowerIota);
  registry.add<ub::PoisonOp, LLVM::UndefOp, LLVM::PoisonOp>(
      lowerUndefined, OpLowering::OnVectorsOnly);
}
