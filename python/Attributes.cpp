//===- Attributes.cpp - Types and attributes from typed Python values -----===//

#include "Attributes.h"

#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/stl.h>

#include <variant>

namespace py = pybind11;
using namespace mlir;

namespace mosaic::python {

namespace {

/// The table's kinds as DType objects name them.
const char *kindName(ElementKind kind) {
  switch (kind) {
  case ElementKind::Float:
    return "float";
  case ElementKind::Integer:
    return "int";
  case ElementKind::Index:
    return "index";
  case ElementKind::Barrier:
    return "barrier";
  }
  return "?";
}

} // namespace

Type getElementType(MLIRContext *context, ElementType type) {
  switch (type) {
  case ElementType::F32:
    return Float32Type::get(context);
  case ElementType::F16:
    return Float16Type::get(context);
  case ElementType::BF16:
    return BFloat16Type::get(context);
  case ElementType::F64:
    return Float64Type::get(context);
  case ElementType::F8E4M3FN:
    return Float8E4M3FNType::get(context);
  case ElementType::F8E5M2:
    return Float8E5M2Type::get(context);
  case ElementType::I1:
  case ElementType::I8:
  case ElementType::I16:
  case ElementType::I32:
  case ElementType::I64:
    return IntegerType::get(context, info(type).bits);
  case ElementType::Index:
    return IndexType::get(context);
  case ElementType::Barrier:
    return mosaic_gpu::BarrierType::get(context, /*orders_tensor_core=*/false);
  }
  throw py::value_error("unknown element type " +
                        std::to_string(static_cast<int>(type)));
}

MemRefType getMemRefType(MLIRContext *context,
                         const std::vector<int64_t> &shape, ElementType type,
                         bool shared) {
  Attribute space;
  if (shared)
    space = gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
  return getChecked<MemRefType>(context, shape, getElementType(context, type),
                                MemRefLayoutAttrInterface(), space);
}

std::string AttributeObject::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

namespace {

/// A `TiledLayout` warp or lane dimension that duplicates data `times` times
/// (`_mosaic.Replicated`).
struct ReplicatedDim {
  int64_t times;
};

/// A `TiledLayout` warp or lane dimension: an index into the tiled tiling
/// shape, or a replication.
using PartitionDim = std::variant<int64_t, ReplicatedDim>;

/// `AttrT` with `params`, checked by the attribute's verifier (an invalid
/// one raises MosaicError), in every build and for printing too.
template <typename AttrT, typename... Params>
AttrT getAttribute(MLIRContext *ctx, Params... params) {
  return getChecked<AttrT>(ctx, ctx, params...);
}

SmallVector<Attribute> partitionDims(MLIRContext *ctx,
                                     const std::vector<PartitionDim> &dims) {
  SmallVector<Attribute> result;
  for (const PartitionDim &dim : dims) {
    if (const int64_t *index = std::get_if<int64_t>(&dim))
      result.push_back(Builder(ctx).getI64IntegerAttr(*index));
    else
      result.push_back(getAttribute<mosaic_gpu::ReplicatedAttr>(
          ctx, std::get<ReplicatedDim>(dim).times));
  }
  return result;
}

AttributeObject tiledLayout(std::shared_ptr<ContextObject> context,
                            const std::vector<std::vector<int64_t>> &tiling,
                            const std::vector<PartitionDim> &warpDims,
                            const std::vector<PartitionDim> &laneDims,
                            int64_t vectorDim) {
  MLIRContext *ctx = &context->context;
  SmallVector<DenseI64ArrayAttr> tiles;
  for (const std::vector<int64_t> &tile : tiling)
    tiles.push_back(DenseI64ArrayAttr::get(ctx, tile));
  SmallVector<Attribute> warps = partitionDims(ctx, warpDims);
  SmallVector<Attribute> lanes = partitionDims(ctx, laneDims);
  Attribute attr = getAttribute<mosaic_gpu::TiledLayoutAttr>(
      ctx, ArrayRef<DenseI64ArrayAttr>(tiles), ArrayRef<Attribute>(warps),
      ArrayRef<Attribute>(lanes), vectorDim);
  return {std::move(context), attr};
}

} // namespace

void registerAttributes(py::module_ &m) {
  py::enum_<ElementType> elementType(
      m, "ElementType",
      "The element type a mosaic_gpu DType stands for (its `element`).");
  for (const ElementTypeInfo *row = elementTypesBegin();
       row != elementTypesEnd(); ++row)
    elementType.value(row->spelling, row->type);
  m.def(
      "element_types",
      []() {
        py::list rows;
        for (const ElementTypeInfo *row = elementTypesBegin();
             row != elementTypesEnd(); ++row)
          rows.append(py::make_tuple(
              row->type, row->spelling, row->bits, kindName(row->kind),
              row->buffer,
              row->numpy ? py::object(py::str(row->numpy)) : py::none()));
        return rows;
      },
      "The element-type table (mosaic/Contracts/ElementType.h) the dtypes "
      "are made from: (ElementType, name, bits, kind, buffer, numpy name "
      "or None) per type, kind one of 'float', 'int', 'index' and "
      "'barrier', buffer whether a kernel's array argument may hold it.");

  bindEnum<mosaic_gpu::Dimension>(m, "Dimension",
                                  "A grid or cluster dimension: x, y or z.",
                                  mosaic_gpu::getMaxEnumValForDimension());

  py::class_<ReplicatedDim>(
      m, "Replicated",
      "A TiledLayout warp or lane dimension over which data is duplicated "
      "`times` times (#mosaic_gpu.Replicated).")
      .def(py::init<int64_t>(), py::arg("times"))
      .def_readonly("times", &ReplicatedDim::times);

  py::class_<AttributeObject>(
      m, "Attribute",
      "An MLIR attribute built from Python values (a layout, a transform); "
      "str() is its MLIR text.")
      .def("__str__", &AttributeObject::str);

  m.def("tiled_layout", &tiledLayout, py::arg("context"), py::arg("tiling"),
        py::arg("warp_dims"), py::arg("lane_dims"), py::arg("vector_dim"),
        "#mosaic_gpu.TiledLayout: `tiling` a list of tiles, each warp and "
        "lane dim an int or a Replicated. An invalid layout raises "
        "MosaicError.");
  m.def(
      "strided_layout",
      [](std::shared_ptr<ContextObject> context,
         const std::vector<int64_t> &shape, int64_t vectorSize) {
        MLIRContext *ctx = &context->context;
        Attribute attr = getAttribute<mosaic_gpu::WGStridedFragLayoutAttr>(
            ctx, DenseI64ArrayAttr::get(ctx, shape), vectorSize);
        return AttributeObject{std::move(context), attr};
      },
      py::arg("context"), py::arg("shape"), py::arg("vector_size"),
      "#mosaic_gpu.WGStridedFragLayout for a vector of `shape`.");
  m.def(
      "splat_layout",
      [](std::shared_ptr<ContextObject> context,
         const std::vector<int64_t> &shape) {
        MLIRContext *ctx = &context->context;
        Attribute attr = getAttribute<mosaic_gpu::WGSplatFragLayoutAttr>(
            ctx, DenseI64ArrayAttr::get(ctx, shape));
        return AttributeObject{std::move(context), attr};
      },
      py::arg("context"), py::arg("shape"),
      "#mosaic_gpu.WGSplatFragLayout for a vector of `shape`.");
  m.def(
      "tile_transform",
      [](std::shared_ptr<ContextObject> context,
         const std::vector<int64_t> &tiling) {
        MLIRContext *ctx = &context->context;
        Attribute attr = getAttribute<mosaic_gpu::TileTransformAttr>(
            ctx, DenseI64ArrayAttr::get(ctx, tiling));
        return AttributeObject{std::move(context), attr};
      },
      py::arg("context"), py::arg("tiling"),
      "#mosaic_gpu.tile: tiles the minor dimensions by `tiling`.");
  m.def(
      "swizzle_transform",
      [](std::shared_ptr<ContextObject> context, uint32_t bytes) {
        std::optional<mosaic_gpu::SwizzlingMode> mode =
            mosaic_gpu::symbolizeSwizzlingMode(bytes);
        if (!mode || *mode == mosaic_gpu::SwizzlingMode::kNoSwizzle)
          throw py::value_error("swizzle must be 32, 64 or 128 bytes, got " +
                                std::to_string(bytes));
        MLIRContext *ctx = &context->context;
        return AttributeObject{
            std::move(context),
            mosaic_gpu::SwizzleTransformAttr::get(ctx, *mode)};
      },
      py::arg("context"), py::arg("bytes"),
      "#mosaic_gpu.swizzle of 32, 64 or 128 bytes.");
}

} // namespace mosaic::python
