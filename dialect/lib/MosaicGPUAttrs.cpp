//===- MosaicGPUAttrs.cpp - mosaic_gpu attributes -------------------------===//
//
// Attribute verifiers and the bridge from layout attributes to the plain C++
// layout algebra of lib/LayoutInference.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mosaic_gpu;
namespace layout = mosaic::layout;

#define GET_ATTRDEF_CLASSES
#include "mosaic/Dialect/MosaicGPU/MosaicGPUAttrs.cpp.inc"

void MosaicGPUDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "mosaic/Dialect/MosaicGPU/MosaicGPUAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Splat and strided layouts
//===----------------------------------------------------------------------===//

static LogicalResult
verifyLayoutShape(function_ref<InFlightDiagnostic()> emitError,
                  StringRef layoutName, ArrayRef<int64_t> shape) {
  if (shape.empty())
    return emitError() << layoutName << " needs a non-empty shape";
  for (int64_t dim : shape)
    if (dim <= 0)
      return emitError() << layoutName << " shape "
                         << layout::formatShape(shape)
                         << " has a non-positive dim " << dim;
  return success();
}

LogicalResult
WGSplatFragLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              DenseI64ArrayAttr shape) {
  return verifyLayoutShape(emitError, "WGSplatFragLayout", shape.asArrayRef());
}

LogicalResult
WGStridedFragLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                DenseI64ArrayAttr shape, int64_t vectorSize) {
  if (failed(verifyLayoutShape(emitError, "WGStridedFragLayout",
                               shape.asArrayRef())))
    return failure();
  if (llvm::Error error = layout::checkStridedLayout(shape, vectorSize))
    return emitError() << "invalid WGStridedFragLayout: "
                       << llvm::toString(std::move(error));
  return success();
}

LogicalResult
ReplicatedAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t times) {
  if (times <= 0)
    return emitError() << "Replicated must have a positive `times`, got "
                       << times;
  return success();
}

//===----------------------------------------------------------------------===//
// TiledLayout
//===----------------------------------------------------------------------===//

static llvm::Expected<layout::TiledLayout>
buildTiledLayout(ArrayRef<DenseI64ArrayAttr> tiling,
                 ArrayRef<Attribute> warpDims, ArrayRef<Attribute> laneDims,
                 int64_t vectorDim) {
  std::vector<layout::Shape> tiles;
  for (DenseI64ArrayAttr tile : tiling)
    tiles.emplace_back(tile.asArrayRef());
  llvm::Expected<layout::Tiling> algebraTiling =
      layout::Tiling::create(std::move(tiles));
  if (!algebraTiling)
    return algebraTiling.takeError();

  auto convertDims =
      [](ArrayRef<Attribute> dims,
         StringRef role) -> llvm::Expected<SmallVector<layout::PartitionDim>> {
    SmallVector<layout::PartitionDim> result;
    for (Attribute dim : dims) {
      if (auto index = dyn_cast<IntegerAttr>(dim))
        result.push_back(layout::PartitionDim::index(index.getInt()));
      else if (auto replicated = dyn_cast<ReplicatedAttr>(dim))
        result.push_back(
            layout::PartitionDim::replicated(replicated.getTimes()));
      else
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "%s entries must be integers or #mosaic_gpu.Replicated",
            role.str().c_str());
    }
    return result;
  };
  auto warps = convertDims(warpDims, "warp_dims");
  if (!warps)
    return warps.takeError();
  auto lanes = convertDims(laneDims, "lane_dims");
  if (!lanes)
    return lanes.takeError();
  return layout::TiledLayout::create(std::move(*algebraTiling),
                                     std::move(*warps), std::move(*lanes),
                                     vectorDim);
}

LogicalResult
TiledLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        ArrayRef<DenseI64ArrayAttr> tiling,
                        ArrayRef<Attribute> warpDims,
                        ArrayRef<Attribute> laneDims, int64_t vectorDim) {
  llvm::Expected<layout::TiledLayout> built =
      buildTiledLayout(tiling, warpDims, laneDims, vectorDim);
  if (!built)
    return emitError() << "invalid TiledLayout: "
                       << llvm::toString(built.takeError());
  return success();
}

layout::TiledLayout TiledLayoutAttr::getLayout() const {
  // The attribute was verified on construction, so building cannot fail.
  return llvm::cantFail(buildTiledLayout(getTiling(), getWarpDims(),
                                         getLaneDims(), getVectorDim()));
}

static ParseResult parseIntegerList(AsmParser &parser,
                                    SmallVectorImpl<int64_t> &values) {
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
    return parser.parseInteger(values.emplace_back());
  });
}

static ParseResult parsePartitionDims(AsmParser &parser,
                                      SmallVectorImpl<Attribute> &dims) {
  Builder builder(parser.getContext());
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        int64_t index;
        OptionalParseResult parsedInteger = parser.parseOptionalInteger(index);
        if (parsedInteger.has_value()) {
          if (failed(*parsedInteger))
            return failure();
          dims.push_back(builder.getI64IntegerAttr(index));
          return success();
        }
        SMLoc loc = parser.getCurrentLocation();
        Attribute dim;
        if (parser.parseAttribute(dim))
          return failure();
        if (!isa<ReplicatedAttr>(dim))
          return ParseResult(parser.emitError(
              loc,
              "expected a dim index or #mosaic_gpu.Replicated<times = n>"));
        dims.push_back(dim);
        return success();
      });
}

Attribute TiledLayoutAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<DenseI64ArrayAttr> tiling;
  SmallVector<Attribute> warpDims, laneDims;
  int64_t vectorDim;
  auto parseTile = [&]() -> ParseResult {
    SmallVector<int64_t> tile;
    if (parseIntegerList(parser, tile))
      return failure();
    tiling.push_back(DenseI64ArrayAttr::get(parser.getContext(), tile));
    return success();
  };
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseTile) ||
      parser.parseComma() || parser.parseKeyword("warp_dims") ||
      parser.parseEqual() || parsePartitionDims(parser, warpDims) ||
      parser.parseComma() || parser.parseKeyword("lane_dims") ||
      parser.parseEqual() || parsePartitionDims(parser, laneDims) ||
      parser.parseComma() || parser.parseKeyword("vector_dim") ||
      parser.parseEqual() || parser.parseInteger(vectorDim) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<TiledLayoutAttr>(loc, parser.getContext(), tiling,
                                            warpDims, laneDims, vectorDim);
}

void TiledLayoutAttr::print(AsmPrinter &printer) const {
  auto printDims = [&](ArrayRef<Attribute> dims) {
    printer << "[";
    llvm::interleaveComma(dims, printer, [&](Attribute dim) {
      if (auto index = dyn_cast<IntegerAttr>(dim))
        printer << index.getInt();
      else
        printer.printAttribute(dim);
    });
    printer << "]";
  };
  printer << "<[";
  llvm::interleaveComma(getTiling(), printer, [&](DenseI64ArrayAttr tile) {
    printer << "[";
    llvm::interleaveComma(tile.asArrayRef(), printer);
    printer << "]";
  });
  printer << "], warp_dims = ";
  printDims(getWarpDims());
  printer << ", lane_dims = ";
  printDims(getLaneDims());
  printer << ", vector_dim = " << getVectorDim() << ">";
}

//===----------------------------------------------------------------------===//
// Shared memory transforms
//===----------------------------------------------------------------------===//

LogicalResult
TileTransformAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          DenseI64ArrayAttr tiling) {
  if (tiling.empty())
    return emitError() << "tile transform needs at least one tile dim";
  for (int64_t size : tiling.asArrayRef())
    if (size <= 0)
      return emitError() << "tile transform "
                         << layout::formatShape(tiling.asArrayRef())
                         << " has a non-positive size " << size;
  return success();
}

//===----------------------------------------------------------------------===//
// Layouts applied to shapes
//===----------------------------------------------------------------------===//

bool mosaic_gpu::isRegisterLayout(Attribute attr) {
  return isa<WGSplatFragLayoutAttr, WGStridedFragLayoutAttr, TiledLayoutAttr>(
      attr);
}

LogicalResult mosaic_gpu::verifyLayoutFitsShape(
    Attribute layoutAttr, ArrayRef<int64_t> shape,
    function_ref<InFlightDiagnostic()> emitError) {
  auto checkSameShape = [&](ArrayRef<int64_t> layoutShape,
                            StringRef name) -> LogicalResult {
    if (layoutShape == shape)
      return success();
    return emitError() << name << " shape " << layout::formatShape(layoutShape)
                       << " does not match the vector shape "
                       << layout::formatShape(shape);
  };
  return TypeSwitch<Attribute, LogicalResult>(layoutAttr)
      .Case([&](WGSplatFragLayoutAttr splat) {
        return checkSameShape(splat.getShape().asArrayRef(),
                              "WGSplatFragLayout");
      })
      .Case([&](WGStridedFragLayoutAttr strided) {
        return checkSameShape(strided.getShape().asArrayRef(),
                              "WGStridedFragLayout");
      })
      .Case([&](TiledLayoutAttr tiled) -> LogicalResult {
        if (llvm::Error error = tiled.getLayout().checkShape(shape))
          return emitError() << "TiledLayout does not fit the vector shape "
                             << layout::formatShape(shape) << ": "
                             << llvm::toString(std::move(error));
        return success();
      })
      .Default([&](Attribute other) {
        return emitError() << "expected a register layout "
                              "(WGSplatFragLayout, WGStridedFragLayout or "
                              "TiledLayout), got "
                           << other;
      });
}
