//===- OpBuilders.cpp - One KernelBuilder entry point per op --------------===//
//
// Each entry point takes the Python location, then typed operands (Value
// handles; None for an absent optional operand) and typed attributes
// (ints, ElementTypes, enums, Attribute objects), and makes the op with its
// C++ builder, so ODS fills in operand segments and default attributes.
// Ops that differ only in their name (arith.addf and arith.subf, the index
// ops of gpu) are bound by one template, one line per op.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <pybind11/stl.h>

#include <optional>
#include <variant>

namespace py = pybind11;
using namespace mlir;

namespace mosaic::python {
namespace {

/// An op's name, for its entry point's docstring.
template <typename OpTy> std::string opName() {
  return OpTy::getOperationName().str();
}

/// The one result of a new op, as a handle.
ValueHandle result(BuilderState &state, Operation *op) {
  return state.handle(op->getResult(0));
}

VectorType vectorType(ArrayRef<int64_t> shape, Type element) {
  return getChecked<VectorType>(element.getContext(), shape, element);
}

/// `element`, or a vector of `shape` of it.
Type shaped(Type element, const std::optional<std::vector<int64_t>> &shape) {
  if (!shape)
    return element;
  return vectorType(*shape, element);
}

/// A value's type with its element type replaced by `element`.
Type withElement(Value value, Type element) {
  if (auto vector = dyn_cast<VectorType>(value.getType()))
    return vector.clone(element);
  return element;
}

MemRefType memRefOf(Value value, const char *what) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type)
    throw py::type_error(std::string("`") + what + "` must be a memref");
  return type;
}

VectorType vectorOf(Value value, const char *what) {
  auto type = dyn_cast<VectorType>(value.getType());
  if (!type)
    throw py::type_error(std::string("`") + what + "` must be a vector");
  return type;
}

gpu::Dimension gpuDimension(mosaic_gpu::Dimension dim) {
  // The two enums name the same dimensions x, y and z.
  return *gpu::symbolizeDimension(
      mosaic_gpu::stringifyDimension(checkedEnum(dim, "dim")));
}

ArrayAttr clusterDims(MLIRContext *ctx,
                      const std::vector<mosaic_gpu::Dimension> &dims) {
  SmallVector<Attribute> attrs;
  for (mosaic_gpu::Dimension dim : dims)
    attrs.push_back(
        mosaic_gpu::DimensionAttr::get(ctx, checkedEnum(dim, "collective")));
  return ArrayAttr::get(ctx, attrs);
}

Value optional(BuilderState &state, const std::optional<ValueHandle> &handle,
               const char *what) {
  return handle ? state.use(*handle, what) : Value();
}

//===----------------------------------------------------------------------===//
// arith, math and gpu: one template per family
//===----------------------------------------------------------------------===//

template <typename OpTy>
void defBinary(KernelBuilderClass &builder, const char *name) {
  builder.def(
      name,
      [](BuilderState &state, const SourceLocation &at, const ValueHandle &lhs,
         const ValueHandle &rhs) {
        return result(state, state.create<OpTy>(at, state.use(lhs, "lhs"),
                                                state.use(rhs, "rhs")));
      },
      py::arg("loc"), py::arg("lhs"), py::arg("rhs"),
      (opName<OpTy>() + " lhs, rhs").c_str());
}

template <typename OpTy>
void defTernary(KernelBuilderClass &builder, const char *name) {
  builder.def(
      name,
      [](BuilderState &state, const SourceLocation &at, const ValueHandle &a,
         const ValueHandle &b, const ValueHandle &c) {
        return result(state,
                      state.create<OpTy>(at, state.use(a, "a"),
                                         state.use(b, "b"), state.use(c, "c")));
      },
      py::arg("loc"), py::arg("a"), py::arg("b"), py::arg("c"),
      (opName<OpTy>() + " a, b, c").c_str());
}

template <typename OpTy>
void defUnary(KernelBuilderClass &builder, const char *name) {
  builder.def(
      name,
      [](BuilderState &state, const SourceLocation &at, const ValueHandle &x) {
        return result(state, state.create<OpTy>(at, state.use(x, "x")));
      },
      py::arg("loc"), py::arg("x"), (opName<OpTy>() + " x").c_str());
}

/// A conversion to `to` elements, of a scalar or elementwise of a vector.
template <typename OpTy>
void defCast(KernelBuilderClass &builder, const char *name) {
  builder.def(
      name,
      [](BuilderState &state, const SourceLocation &at, const ValueHandle &x,
         ElementType to) {
        Value value = state.use(x, "x");
        Type type = withElement(value, getElementType(state.mlirContext(), to));
        return result(state, state.create<OpTy>(at, type, value));
      },
      py::arg("loc"), py::arg("x"), py::arg("to"),
      (opName<OpTy>() + " x to `to` elements").c_str());
}

template <typename OpTy, typename PredicateT>
void defCompare(KernelBuilderClass &builder, const char *name) {
  builder.def(
      name,
      [](BuilderState &state, const SourceLocation &at, PredicateT predicate,
         const ValueHandle &lhs, const ValueHandle &rhs) {
        return result(state, state.create<OpTy>(
                                 at, checkedEnum(predicate, "predicate"),
                                 state.use(lhs, "lhs"), state.use(rhs, "rhs")));
      },
      py::arg("loc"), py::arg("predicate"), py::arg("lhs"), py::arg("rhs"),
      (opName<OpTy>() + " predicate, lhs, rhs (i1 results)").c_str());
}

template <typename OpTy>
void defIndexOp(KernelBuilderClass &builder, const char *name) {
  builder.def(
      name,
      [](BuilderState &state, const SourceLocation &at,
         mosaic_gpu::Dimension dim) {
        return result(state, state.create<OpTy>(at, gpuDimension(dim)));
      },
      py::arg("loc"), py::arg("dim"), (opName<OpTy>() + " dim").c_str());
}

/// arith.constant of an integer or index `value`, or with `shape` a vector
/// splat of it. Python checked that `value` fits `type`.
ValueHandle integerConstant(BuilderState &state, const SourceLocation &at,
                            int64_t value, ElementType type,
                            const std::optional<std::vector<int64_t>> &shape) {
  Type element = getElementType(state.mlirContext(), type);
  if (!element.isIntOrIndex())
    throw py::type_error("an integer constant needs an integer type");
  unsigned width = element.isIndex() ? IndexType::kInternalStorageBitWidth
                                     : element.getIntOrFloatBitWidth();
  TypedAttr attr = IntegerAttr::get(
      element, APInt(width, value, /*isSigned=*/true, /*implicitTrunc=*/true));
  if (shape)
    attr = DenseElementsAttr::get(cast<ShapedType>(shaped(element, shape)),
                                  ArrayRef<Attribute>(attr));
  return result(state, state.create<arith::ConstantOp>(at, attr));
}

/// arith.constant of a float `value` (rounded to `type`), or with `shape`
/// a vector splat of it.
ValueHandle floatConstant(BuilderState &state, const SourceLocation &at,
                          double value, ElementType type,
                          const std::optional<std::vector<int64_t>> &shape) {
  Type element = getElementType(state.mlirContext(), type);
  if (!isa<FloatType>(element))
    throw py::type_error("a float constant needs a float type");
  TypedAttr attr = FloatAttr::get(element, value);
  if (shape)
    attr = DenseElementsAttr::get(cast<ShapedType>(shaped(element, shape)),
                                  ArrayRef<Attribute>(attr));
  return result(state, state.create<arith::ConstantOp>(at, attr));
}

//===----------------------------------------------------------------------===//
// Memory: scratch, views, loads and stores
//===----------------------------------------------------------------------===//

/// mosaic_gpu.slice_smem: a shared-memory buffer of `shape` and `type`
/// at `offset` bytes.
ValueHandle sliceSmem(BuilderState &state, const SourceLocation &at,
                      uint32_t offset, const std::vector<int64_t> &shape,
                      ElementType type) {
  MemRefType memref =
      getMemRefType(state.mlirContext(), shape, type, /*shared=*/true);
  return result(state, state.create<mosaic_gpu::SliceSMEMOp>(at, memref, offset,
                                                             IntegerAttr()));
}

/// A subview offset: a static int or an index value.
using Offset = std::variant<int64_t, ValueHandle>;

/// memref.subview of `source` at `offsets` of `sizes`, unit strides, as a
/// memref of `shape` (the kept dims) with the strided layout `strides` and
/// `offset` (None: dynamic).
ValueHandle
subview(BuilderState &state, const SourceLocation &at,
        const ValueHandle &source, const std::vector<Offset> &offsets,
        const std::vector<int64_t> &sizes, const std::vector<int64_t> &shape,
        const std::vector<int64_t> &strides, std::optional<int64_t> offset) {
  Value ref = state.use(source, "source");
  MemRefType sourceType = memRefOf(ref, "source");
  OpBuilder &b = state.builder;
  SmallVector<OpFoldResult> mixedOffsets, mixedSizes, mixedStrides;
  for (const Offset &start : offsets) {
    if (const int64_t *value = std::get_if<int64_t>(&start))
      mixedOffsets.push_back(b.getIndexAttr(*value));
    else
      mixedOffsets.push_back(state.use(std::get<ValueHandle>(start), "offset"));
  }
  for (int64_t size : sizes) {
    mixedSizes.push_back(b.getIndexAttr(size));
    mixedStrides.push_back(b.getIndexAttr(1));
  }
  MLIRContext *ctx = state.mlirContext();
  auto layout = getChecked<StridedLayoutAttr>(
      ctx, ctx, offset.value_or(ShapedType::kDynamic),
      ArrayRef<int64_t>(strides));
  auto type = getChecked<MemRefType>(ctx, shape, sourceType.getElementType(),
                                     layout, sourceType.getMemorySpace());
  return result(state,
                state.create<memref::SubViewOp>(at, type, ref, mixedOffsets,
                                                mixedSizes, mixedStrides));
}

ValueHandle withTransforms(BuilderState &state, const SourceLocation &at,
                           const ValueHandle &ref,
                           const std::vector<AttributeObject> &transforms) {
  SmallVector<Attribute> attrs;
  for (const AttributeObject &transform : transforms)
    attrs.push_back(state.use(transform, "transforms"));
  return result(state, state.create<mosaic_gpu::WithTransformsOp>(
                           at, state.use(ref, "ref"),
                           ArrayAttr::get(state.mlirContext(), attrs)));
}

/// memref.transpose of `ref`: result dim i is `ref`'s dim permutation[i].
/// The result type (permuted shape and strides) is the op's own.
ValueHandle transpose(BuilderState &state, const SourceLocation &at,
                      const ValueHandle &ref,
                      const std::vector<unsigned> &permutation) {
  Value source = state.use(ref, "ref");
  size_t rank = memRefOf(source, "ref").getRank();
  std::vector<bool> seen(rank, false);
  for (unsigned dim : permutation) {
    if (permutation.size() != rank || dim >= rank || seen[dim])
      throw py::value_error("`permutation` must hold each dim of `ref` once");
    seen[dim] = true;
  }
  if (rank == 0)
    throw py::value_error("`ref` has no dims to transpose");
  AffineMap map =
      AffineMap::getPermutationMap(permutation, state.mlirContext());
  return result(state, state.create<memref::TransposeOp>(
                           at, source, AffineMapAttr::get(map)));
}

ValueHandle vectorLoad(BuilderState &state, const SourceLocation &at,
                       const ValueHandle &ref) {
  Value source = state.use(ref, "ref");
  MemRefType type = memRefOf(source, "ref");
  VectorType vector = vectorType(type.getShape(), type.getElementType());
  return result(state, state.create<mosaic_gpu::VectorLoadOp>(
                           at, vector, source, BoolAttr(),
                           /*in_transforms=*/ArrayAttr(),
                           /*transforms_applied=*/UnitAttr()));
}

//===----------------------------------------------------------------------===//
// TMA
//===----------------------------------------------------------------------===//

void asyncLoad(BuilderState &state, const SourceLocation &at,
               const ValueHandle &src, const ValueHandle &dst,
               const ValueHandle &barrier,
               const std::vector<ValueHandle> &indices,
               const std::vector<int64_t> &sliceLengths,
               const std::vector<mosaic_gpu::Dimension> &collective,
               const std::optional<ValueHandle> &predicate,
               std::optional<mosaic_gpu::OOBFillMode> oobFillMode) {
  MLIRContext *ctx = state.mlirContext();
  mosaic_gpu::OOBFillModeAttr fill;
  if (oobFillMode)
    fill = mosaic_gpu::OOBFillModeAttr::get(
        ctx, checkedEnum(*oobFillMode, "oob_fill_mode"));
  state.create<mosaic_gpu::AsyncLoadOp>(
      at, state.use(src, "src"), state.use(dst, "dst"),
      state.use(barrier, "barrier"), state.use(indices, "indices"),
      optional(state, predicate, "predicate"),
      DenseI64ArrayAttr::get(ctx, sliceLengths), clusterDims(ctx, collective),
      fill, /*in_transforms=*/ArrayAttr(),
      /*transforms_applied=*/UnitAttr());
}

void asyncPrefetch(BuilderState &state, const SourceLocation &at,
                   const ValueHandle &src,
                   const std::vector<ValueHandle> &indices,
                   const std::vector<int64_t> &sliceLengths,
                   const std::vector<mosaic_gpu::Dimension> &collective,
                   const std::optional<ValueHandle> &predicate) {
  MLIRContext *ctx = state.mlirContext();
  state.create<mosaic_gpu::AsyncPrefetchOp>(
      at, state.use(src, "src"), state.use(indices, "indices"),
      optional(state, predicate, "predicate"),
      DenseI64ArrayAttr::get(ctx, sliceLengths), clusterDims(ctx, collective));
}

void asyncStore(BuilderState &state, const SourceLocation &at,
                const ValueHandle &src, const ValueHandle &dst,
                const std::vector<ValueHandle> &indices,
                const std::vector<int64_t> &sliceLengths, bool deferWait,
                std::optional<mosaic_gpu::TMAReduction> reduction) {
  mosaic_gpu::TMAReductionAttr reduce;
  if (reduction)
    reduce = mosaic_gpu::TMAReductionAttr::get(
        state.mlirContext(), checkedEnum(*reduction, "reduction"));
  state.create<mosaic_gpu::AsyncStoreOp>(
      at, state.use(src, "src"), state.use(dst, "dst"),
      state.use(indices, "indices"), /*predicate=*/Value(),
      DenseI64ArrayAttr::get(state.mlirContext(), sliceLengths), BoolAttr(),
      reduce, deferWait ? state.builder.getUnitAttr() : UnitAttr(),
      /*in_transforms=*/ArrayAttr(),
      /*transforms_applied=*/UnitAttr());
}

//===----------------------------------------------------------------------===//
// Vectors
//===----------------------------------------------------------------------===//

ValueHandle multiReduction(BuilderState &state, const SourceLocation &at,
                           vector::CombiningKind kind, const ValueHandle &x,
                           const ValueHandle &acc,
                           const std::vector<int64_t> &dims) {
  return result(state, state.create<vector::MultiDimReductionOp>(
                           at, checkedEnum(kind, "kind"), state.use(x, "x"),
                           state.use(acc, "acc"), ArrayRef<int64_t>(dims)));
}

ValueHandle broadcastInDim(BuilderState &state, const SourceLocation &at,
                           const ValueHandle &x,
                           const std::vector<int64_t> &shape,
                           const std::vector<int64_t> &dims) {
  Value operand = state.use(x, "x");
  VectorType type = vectorType(shape, vectorOf(operand, "x").getElementType());
  return result(state, state.create<mosaic_gpu::BroadcastInDimOp>(
                           at, type, operand, ArrayRef<int64_t>(dims)));
}

ValueHandle broadcastedIota(BuilderState &state, const SourceLocation &at,
                            const std::vector<int64_t> &shape, ElementType type,
                            uint32_t dimension) {
  Type vector = shaped(getElementType(state.mlirContext(), type), shape);
  return result(state, state.create<mosaic_gpu::BroadcastedIotaOp>(at, vector,
                                                                   dimension));
}

} // namespace

void registerOpBuilders(py::module_ &m, KernelBuilderClass &builder) {
  bindEnum<arith::CmpFPredicate>(m, "CmpFPredicate",
                                 "arith.cmpf's predicates (oeq, une, ...).",
                                 arith::getMaxEnumValForCmpFPredicate());
  bindEnum<arith::CmpIPredicate>(m, "CmpIPredicate",
                                 "arith.cmpi's predicates (eq, slt, ...).",
                                 arith::getMaxEnumValForCmpIPredicate());
  bindEnum<mosaic_gpu::TMAReduction>(
      m, "TMAReduction",
      "mosaic_gpu.async_store's reductions (add, min, max, ..., smax).",
      mosaic_gpu::getMaxEnumValForTMAReduction());
  bindEnum<mosaic_gpu::OOBFillMode>(
      m, "OOBFillMode",
      "mosaic_gpu.async_load's out-of-bounds fill modes (kZeros, ...).",
      mosaic_gpu::getMaxEnumValForOOBFillMode());
  bindEnum<mosaic_gpu::RegisterAction>(
      m, "RegisterAction",
      "mosaic_gpu.set_max_registers' actions: increase or decrease.",
      mosaic_gpu::getMaxEnumValForRegisterAction());
  py::enum_<vector::CombiningKind> kinds(
      m, "CombiningKind", "vector.multi_reduction's kinds (add, maximumf...).");
  for (vector::CombiningKind kind :
       {vector::CombiningKind::ADD, vector::CombiningKind::MUL,
        vector::CombiningKind::MINUI, vector::CombiningKind::MINSI,
        vector::CombiningKind::MINNUMF, vector::CombiningKind::MAXUI,
        vector::CombiningKind::MAXSI, vector::CombiningKind::MAXNUMF,
        vector::CombiningKind::AND, vector::CombiningKind::OR,
        vector::CombiningKind::XOR, vector::CombiningKind::MINIMUMF,
        vector::CombiningKind::MAXIMUMF})
    kinds.value(vector::stringifyCombiningKind(kind).str().c_str(), kind);

  defBinary<arith::AddFOp>(builder, "addf");
  defBinary<arith::SubFOp>(builder, "subf");
  defBinary<arith::MulFOp>(builder, "mulf");
  defBinary<arith::DivFOp>(builder, "divf");
  defBinary<arith::MaximumFOp>(builder, "maximumf");
  defBinary<arith::MinimumFOp>(builder, "minimumf");
  defBinary<arith::AddIOp>(builder, "addi");
  defBinary<arith::SubIOp>(builder, "subi");
  defBinary<arith::MulIOp>(builder, "muli");
  defBinary<arith::DivSIOp>(builder, "divsi");
  defBinary<arith::DivUIOp>(builder, "divui");
  defBinary<arith::RemSIOp>(builder, "remsi");
  defBinary<arith::RemUIOp>(builder, "remui");
  defBinary<arith::MaxSIOp>(builder, "maxsi");
  defBinary<arith::MaxUIOp>(builder, "maxui");
  defBinary<arith::MinSIOp>(builder, "minsi");
  defBinary<arith::MinUIOp>(builder, "minui");
  defUnary<arith::NegFOp>(builder, "negf");
  defUnary<math::ExpOp>(builder, "exp");
  // The online softmax of attention works in base 2.
  defUnary<math::Exp2Op>(builder, "exp2");
  defUnary<math::Log2Op>(builder, "log2");
  builder.def(
      "select",
      [](BuilderState &state, const SourceLocation &at,
         const ValueHandle &condition, const ValueHandle &ifTrue,
         const ValueHandle &ifFalse) {
        return result(state, state.create<arith::SelectOp>(
                                 at, state.use(condition, "condition"),
                                 state.use(ifTrue, "if_true"),
                                 state.use(ifFalse, "if_false")));
      },
      py::arg("loc"), py::arg("condition"), py::arg("if_true"),
      py::arg("if_false"),
      "arith.select condition, if_true, if_false (elementwise for vectors)");
  defCast<arith::IndexCastOp>(builder, "index_cast");
  defCast<arith::ExtFOp>(builder, "extf");
  defCast<arith::TruncFOp>(builder, "truncf");
  defCast<arith::ExtSIOp>(builder, "extsi");
  defCast<arith::TruncIOp>(builder, "trunci");
  defCast<arith::SIToFPOp>(builder, "sitofp");
  defCast<arith::FPToSIOp>(builder, "fptosi");
  defCompare<arith::CmpFOp, arith::CmpFPredicate>(builder, "cmpf");
  defCompare<arith::CmpIOp, arith::CmpIPredicate>(builder, "cmpi");
  defIndexOp<gpu::BlockIdOp>(builder, "block_id");
  defIndexOp<gpu::ClusterBlockIdOp>(builder, "cluster_block_id");
  defIndexOp<gpu::ThreadIdOp>(builder, "thread_id");

  // Elementwise math (each lowers unchanged onto the thread's registers and
  // then through the upstream math-to-NVVM patterns; exp2 and log2 are
  // above) and integer bit operations, so that every math function the
  // lowering takes can be written from Python.
  defUnary<math::RsqrtOp>(builder, "rsqrt");
  defUnary<math::SqrtOp>(builder, "sqrt");
  defUnary<math::LogOp>(builder, "log");
  defUnary<math::Log1pOp>(builder, "log1p");
  defUnary<math::ExpM1Op>(builder, "expm1");
  defUnary<math::TanhOp>(builder, "tanh");
  defUnary<math::ErfOp>(builder, "erf");
  defUnary<math::SinOp>(builder, "sin");
  defUnary<math::CosOp>(builder, "cos");
  defUnary<math::TanOp>(builder, "tan");
  defUnary<math::AsinOp>(builder, "asin");
  defUnary<math::AcosOp>(builder, "acos");
  defUnary<math::AtanOp>(builder, "atan");
  defUnary<math::SinhOp>(builder, "sinh");
  defUnary<math::CoshOp>(builder, "cosh");
  defUnary<math::AsinhOp>(builder, "asinh");
  defUnary<math::AcoshOp>(builder, "acosh");
  defUnary<math::AtanhOp>(builder, "atanh");
  defUnary<math::CbrtOp>(builder, "cbrt");
  defUnary<math::Log10Op>(builder, "log10");
  defUnary<math::ErfcOp>(builder, "erfc");
  defUnary<math::RoundEvenOp>(builder, "roundeven");
  defUnary<math::AbsFOp>(builder, "absf");
  defUnary<math::AbsIOp>(builder, "absi");
  defUnary<math::FloorOp>(builder, "floor");
  defUnary<math::CeilOp>(builder, "ceil");
  defBinary<math::PowFOp>(builder, "powf");
  defBinary<math::CopySignOp>(builder, "copysign");
  defTernary<math::FmaOp>(builder, "fma");
  defBinary<math::Atan2Op>(builder, "atan2");
  defBinary<arith::AndIOp>(builder, "andi");
  defBinary<arith::OrIOp>(builder, "ori");
  defBinary<arith::XOrIOp>(builder, "xori");
  defBinary<arith::ShLIOp>(builder, "shli");
  defBinary<arith::ShRSIOp>(builder, "shrsi");
  defBinary<arith::ShRUIOp>(builder, "shrui");
  defCast<arith::ExtUIOp>(builder, "extui");
  defCast<arith::UIToFPOp>(builder, "uitofp");
  defCast<arith::FPToUIOp>(builder, "fptoui");
  builder.def(
      "optimization_barrier",
      [](BuilderState &state, const SourceLocation &at,
         const std::vector<ValueHandle> &values) {
        SmallVector<Value> operands = state.use(values, "values");
        SmallVector<Type> types;
        for (Value operand : operands)
          types.push_back(operand.getType());
        Operation *op = state.create<mosaic_gpu::OptimizationBarrierOp>(
            at, types, operands);
        std::vector<ValueHandle> results;
        for (Value value : op->getResults())
          results.push_back(state.handle(value));
        return results;
      },
      py::arg("loc"), py::arg("values"),
      "mosaic_gpu.optimization_barrier: the same values, which the "
      "compiler may not move computations across.");
  builder.def(
      "assume_multiple",
      [](BuilderState &state, const SourceLocation &at,
         const ValueHandle &value, uint32_t multiple) {
        return result(state, state.create<mosaic_gpu::AssumeMultipleOp>(
                                 at, state.use(value, "value"), multiple));
      },
      py::arg("loc"), py::arg("value"), py::arg("multiple"),
      "mosaic_gpu.assume_multiple: `value`, promised to be a multiple of "
      "`multiple`.");

  builder
      .def("constant_int", &integerConstant, py::arg("loc"), py::arg("value"),
           py::arg("type"), py::arg("shape") = py::none(),
           "arith.constant: an integer or index scalar, or with `shape` a "
           "vector of it.")
      .def("constant_float", &floatConstant, py::arg("loc"), py::arg("value"),
           py::arg("type"), py::arg("shape") = py::none(),
           "arith.constant: a float scalar (rounded to `type`), or with "
           "`shape` a vector of it.")
      .def("slice_smem", &sliceSmem, py::arg("loc"), py::arg("offset"),
           py::arg("shape"), py::arg("type"),
           "mosaic_gpu.slice_smem: a shared-memory memref at `offset` "
           "bytes.")
      .def("subview", &subview, py::arg("loc"), py::arg("source"),
           py::arg("offsets"), py::arg("sizes"), py::arg("shape"),
           py::arg("strides"), py::arg("offset"),
           "memref.subview at `offsets` (ints or index values) of `sizes`, "
           "unit strides, typed memref<shape, strided<strides, offset>> "
           "(offset None: dynamic).")
      .def("with_transforms", &withTransforms, py::arg("loc"), py::arg("ref"),
           py::arg("transforms"),
           "mosaic_gpu.with_transforms of transform Attributes.")
      .def("transpose", &transpose, py::arg("loc"), py::arg("ref"),
           py::arg("permutation"),
           "memref.transpose: result dim i is `ref`'s dim permutation[i].")
      .def("vector_load", &vectorLoad, py::arg("loc"), py::arg("ref"),
           "mosaic_gpu.vector_load of all of `ref`.")
      .def(
          "load",
          [](BuilderState &state, const SourceLocation &at,
             const ValueHandle &ref) {
            Value source = state.use(ref, "ref");
            MemRefType type = memRefOf(source, "ref");
            if (type.getRank() != 0)
              throw py::value_error("`ref` must be one element (a rank-0 "
                                    "view), got rank " +
                                    std::to_string(type.getRank()));
            return result(
                state, state.create<memref::LoadOp>(at, source, ValueRange()));
          },
          py::arg("loc"), py::arg("ref"),
          "memref.load of the one element of a rank-0 `ref`.")
      .def(
          "vector_store",
          [](BuilderState &state, const SourceLocation &at,
             const ValueHandle &value, const ValueHandle &ref,
             const std::vector<ValueHandle> &valid) {
            SmallVector<Value> extents;
            for (const ValueHandle &extent : valid)
              extents.push_back(state.use(extent, "valid"));
            state.create<mosaic_gpu::VectorStoreOp>(
                at, state.use(value, "value"), state.use(ref, "ref"), extents,
                BoolAttr(), /*in_transforms=*/ArrayAttr(),
                /*transforms_applied=*/UnitAttr());
          },
          py::arg("loc"), py::arg("value"), py::arg("ref"),
          py::arg("valid") = std::vector<ValueHandle>(),
          "mosaic_gpu.vector_store of `value` to all of `ref`, or with "
          "`valid` (index values, one per dim) to the part of it below "
          "them.")
      .def(
          "initialize_barrier",
          [](BuilderState &state, const SourceLocation &at,
             const ValueHandle &barriers, uint64_t arrivalCount,
             uint32_t count) {
            state.create<mosaic_gpu::InitializeBarrierOp>(
                at, state.use(barriers, "barriers"), arrivalCount, count);
          },
          py::arg("loc"), py::arg("barriers"), py::arg("arrival_count"),
          py::arg("num_barriers"), "mosaic_gpu.initialize_barrier.")
      .def(
          "arrive_expect_tx",
          [](BuilderState &state, const SourceLocation &at,
             const ValueHandle &barrier, uint32_t bytes) {
            state.create<mosaic_gpu::ArriveExpectTxOp>(
                at, state.use(barrier, "barrier"), bytes);
          },
          py::arg("loc"), py::arg("barrier"), py::arg("bytes"),
          "mosaic_gpu.arrive_expect_tx.")
      .def(
          "arrive",
          [](BuilderState &state, const SourceLocation &at,
             const ValueHandle &barrier,
             const std::vector<mosaic_gpu::Dimension> &collective) {
            state.create<mosaic_gpu::ArriveOp>(
                at, state.use(barrier, "barrier"),
                /*orders_tensor_core=*/false,
                clusterDims(state.builder.getContext(), collective));
          },
          py::arg("loc"), py::arg("barrier"),
          py::arg("collective") = std::vector<mosaic_gpu::Dimension>{},
          "mosaic_gpu.arrive; `collective` cluster dims: arrive in every "
          "block along them.")
      .def(
          "warpgroup_id",
          [](BuilderState &state, const SourceLocation &at) {
            return result(state, state.create<mosaic_gpu::WarpgroupIdOp>(
                                     at, state.builder.getIndexType()));
          },
          py::arg("loc"),
          "mosaic_gpu.warpgroup_id: the executing warpgroup's index in its "
          "block.")
      .def(
          "device_id",
          [](BuilderState &state, const SourceLocation &at) {
            return result(state, state.create<mosaic_gpu::DeviceIdOp>(
                                     at, state.builder.getI32Type()));
          },
          py::arg("loc"),
          "mosaic_gpu.device_id: the logical id of the device running this "
          "instance of the kernel (i32).")
      .def(
          "device_count",
          [](BuilderState &state, const SourceLocation &at) {
            return result(state, state.create<mosaic_gpu::DeviceCountOp>(
                                     at, state.builder.getI32Type()));
          },
          py::arg("loc"),
          "mosaic_gpu.device_count: the number of devices the kernel runs "
          "on (i32).")
      .def(
          "remote_ref",
          [](BuilderState &state, const SourceLocation &at,
             const ValueHandle &ref, const ValueHandle &device) {
            return result(state, state.create<mosaic_gpu::RemoteRefOp>(
                                     at, state.use(ref, "ref"),
                                     state.use(device, "device")));
          },
          py::arg("loc"), py::arg("ref"), py::arg("device"),
          "mosaic_gpu.remote_ref: device `device`'s copy of the symmetric "
          "argument `ref`.")
      .def(
          "semaphore_signal",
          [](BuilderState &state, const SourceLocation &at,
             const ValueHandle &semaphores,
             const std::vector<ValueHandle> &indices, const ValueHandle &value,
             const std::optional<ValueHandle> &device) {
            state.create<mosaic_gpu::SemaphoreSignalOp>(
                at, state.use(semaphores, "semaphores"),
                state.use(indices, "indices"), state.use(value, "value"),
                optional(state, device, "device"));
          },
          py::arg("loc"), py::arg("semaphores"), py::arg("indices"),
          py::arg("value"), py::arg("device") = py::none(),
          "mosaic_gpu.semaphore_signal: adds `value` to "
          "semaphores[indices] (of `device` when given), releasing the "
          "warpgroup's writes.")
      .def(
          "semaphore_wait",
          [](BuilderState &state, const SourceLocation &at,
             const ValueHandle &semaphores,
             const std::vector<ValueHandle> &indices,
             const ValueHandle &count) {
            state.create<mosaic_gpu::SemaphoreWaitOp>(
                at, state.use(semaphores, "semaphores"),
                state.use(indices, "indices"), state.use(count, "count"));
          },
          py::arg("loc"), py::arg("semaphores"), py::arg("indices"),
          py::arg("count"),
          "mosaic_gpu.semaphore_wait: waits until semaphores[indices] holds "
          "at least `count`, then subtracts it (acquire).")
      .def(
          "set_max_registers",
          [](BuilderState &state, const SourceLocation &at,
             mosaic_gpu::RegisterAction action, uint32_t count) {
            state.create<mosaic_gpu::SetMaxRegistersOp>(
                at, checkedEnum(action, "action"), count);
          },
          py::arg("loc"), py::arg("action"), py::arg("count"),
          "mosaic_gpu.set_max_registers: the warpgroup ends up with `count` "
          "registers per thread.")
      .def(
          "wait",
          [](BuilderState &state, const SourceLocation &at,
             const ValueHandle &barrier, const ValueHandle &parity) {
            state.create<mosaic_gpu::WaitOp>(at, state.use(barrier, "barrier"),
                                             state.use(parity, "parity"));
          },
          py::arg("loc"), py::arg("barrier"), py::arg("parity"),
          "mosaic_gpu.wait.")
      .def("async_load", &asyncLoad, py::arg("loc"), py::arg("src"),
           py::arg("dst"), py::arg("barrier"), py::arg("indices"),
           py::arg("slice_lengths"), py::arg("collective"),
           py::arg("predicate") = py::none(),
           py::arg("oob_fill_mode") = py::none(),
           "mosaic_gpu.async_load; `predicate` None: unguarded; "
           "`oob_fill_mode` None: the op's default (zeros).")
      .def("async_prefetch", &asyncPrefetch, py::arg("loc"), py::arg("src"),
           py::arg("indices"), py::arg("slice_lengths"), py::arg("collective"),
           py::arg("predicate") = py::none(),
           "mosaic_gpu.async_prefetch; `predicate` None: unguarded.")
      .def("async_store", &asyncStore, py::arg("loc"), py::arg("src"),
           py::arg("dst"), py::arg("indices"), py::arg("slice_lengths"),
           py::arg("defer_wait") = false, py::arg("reduction") = py::none(),
           "mosaic_gpu.async_store; with `defer_wait` the source may be "
           "written again only after an async_store_wait; with `reduction` "
           "(a TMAReduction) it combines into the destination instead of "
           "overwriting it.")
      .def(
          "async_store_wait",
          [](BuilderState &state, const SourceLocation &at, int32_t pending,
             bool complete) {
            if (pending < 0)
              throw py::value_error("async_store_wait: `pending` must be >= "
                                    "0, got " +
                                    std::to_string(pending));
            state.create<mosaic_gpu::AsyncStoreWaitOp>(at, pending, complete);
          },
          py::arg("loc"), py::arg("pending"), py::arg("complete") = false,
          "mosaic_gpu.async_store_wait: at most `pending` store groups still "
          "read shared memory (`complete`: still write global memory).")
      .def(
          "wgmma",
          [](BuilderState &state, const SourceLocation &at,
             const ValueHandle &acc, const ValueHandle &a, const ValueHandle &b,
             bool async) {
            return result(state,
                          state.create<mosaic_gpu::WGMMAOp>(
                              at, state.use(acc, "acc"), state.use(a, "a"),
                              state.use(b, "b"),
                              async ? state.builder.getUnitAttr() : UnitAttr(),
                              /*in_transforms=*/ArrayAttr(),
                              /*transforms_applied=*/UnitAttr()));
          },
          py::arg("loc"), py::arg("acc"), py::arg("a"), py::arg("b"),
          py::arg("async_") = false,
          "mosaic_gpu.wgmma: acc + a @ b; with `async_` it stays in flight "
          "until a wgmma_wait covers it.")
      .def(
          "wgmma_wait",
          [](BuilderState &state, const SourceLocation &at, uint32_t pending) {
            state.create<mosaic_gpu::WGMMAWaitOp>(at, pending);
          },
          py::arg("loc"), py::arg("pending"),
          "mosaic_gpu.wgmma_wait: waits until at most `pending` async wgmma "
          "groups are in flight.")
      .def(
          "named_barrier",
          [](BuilderState &state, const SourceLocation &at, uint32_t id,
             uint32_t warpgroups, bool arrive) {
            if (id < 1 || id > 15)
              throw py::value_error("named_barrier: `id` must be in 1..15, "
                                    "got " +
                                    std::to_string(id));
            if (warpgroups < 1)
              throw py::value_error(
                  "named_barrier: `warpgroups` must be at least 1");
            state.create<mosaic_gpu::NamedBarrierOp>(at, id, warpgroups,
                                                     arrive);
          },
          py::arg("loc"), py::arg("id"), py::arg("warpgroups"),
          py::arg("arrive") = false,
          "mosaic_gpu.named_barrier: waits until `warpgroups` warpgroups "
          "reached named barrier `id` (with `arrive`, counts towards it "
          "without waiting).")
      .def("multi_reduction", &multiReduction, py::arg("loc"), py::arg("kind"),
           py::arg("x"), py::arg("acc"), py::arg("dims"),
           "vector.multi_reduction of `x` along `dims` into `acc`.")
      .def("broadcast_in_dim", &broadcastInDim, py::arg("loc"), py::arg("x"),
           py::arg("shape"), py::arg("dims"),
           "mosaic_gpu.broadcast_in_dim of `x` to a vector of `shape`.")
      .def(
          "splat",
          [](BuilderState &state, const SourceLocation &at,
             const ValueHandle &scalar, const std::vector<int64_t> &shape) {
            Value value = state.use(scalar, "scalar");
            if (isa<ShapedType>(value.getType()))
              throw py::type_error("`scalar` must be a scalar value");
            return result(state,
                          state.create<vector::BroadcastOp>(
                              at, vectorType(shape, value.getType()), value));
          },
          py::arg("loc"), py::arg("scalar"), py::arg("shape"),
          "vector.broadcast of a scalar to a vector of `shape`.")
      .def("broadcasted_iota", &broadcastedIota, py::arg("loc"),
           py::arg("shape"), py::arg("type"), py::arg("dimension"),
           "mosaic_gpu.broadcasted_iota: a vector of `shape` and `type`.")
      .def(
          "layout_cast",
          [](BuilderState &state, const SourceLocation &at,
             const ValueHandle &x, const AttributeObject &layout) {
            return result(
                state, state.create<mosaic_gpu::LayoutCastOp>(
                           at, state.use(x, "x"), state.use(layout, "layout")));
          },
          py::arg("loc"), py::arg("x"), py::arg("layout"),
          "mosaic_gpu.layout_cast of `x` to a layout Attribute.");
}

} // namespace mosaic::python
