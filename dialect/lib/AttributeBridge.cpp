//===- AttributeBridge.cpp - Layouts <-> mosaic_gpu attributes ------------===//

#include "mosaic/Dialect/MosaicGPU/AttributeBridge.h"

#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mosaic_gpu;

namespace mosaic {

Attribute layoutToAttr(MLIRContext *context,
                       const layout::RegisterLayout &layout,
                       ArrayRef<int64_t> shape) {
  auto shapeAttr = DenseI64ArrayAttr::get(context, shape);
  if (layout.isSplat())
    return WGSplatFragLayoutAttr::get(context, shapeAttr);
  if (layout.isStrided())
    return WGStridedFragLayoutAttr::get(context, shapeAttr,
                                        layout.vectorSize());
  const layout::TiledLayout &tiled = layout.tiledLayout();
  Builder builder(context);
  SmallVector<DenseI64ArrayAttr> tiles;
  for (const layout::Shape &tile : tiled.tiling().tiles())
    tiles.push_back(DenseI64ArrayAttr::get(context, tile));
  auto dims = [&](ArrayRef<layout::PartitionDim> partition) {
    SmallVector<Attribute> result;
    for (const layout::PartitionDim &dim : partition)
      result.push_back(dim.isReplicated()
                           ? Attribute(ReplicatedAttr::get(context, dim.times))
                           : builder.getI64IntegerAttr(dim.dim));
    return result;
  };
  return TiledLayoutAttr::get(context, tiles, dims(tiled.warpDims()),
                              dims(tiled.laneDims()), tiled.vectorDim());
}

FailureOr<layout::RegisterLayout> attrToLayout(Attribute attr) {
  if (isa<WGSplatFragLayoutAttr>(attr))
    return layout::RegisterLayout::splat();
  if (auto strided = dyn_cast<WGStridedFragLayoutAttr>(attr))
    return layout::RegisterLayout::strided(strided.getVectorSize());
  if (auto tiled = dyn_cast<TiledLayoutAttr>(attr))
    return layout::RegisterLayout::tiled(tiled.getLayout());
  return failure();
}

ArrayAttr transformsToAttr(MLIRContext *context,
                           const layout::SmemTransforms &transforms) {
  SmallVector<Attribute> entries;
  if (transforms.tile)
    entries.push_back(TileTransformAttr::get(
        context, DenseI64ArrayAttr::get(context, *transforms.tile)));
  if (transforms.swizzle != layout::kNoSwizzle)
    entries.push_back(SwizzleTransformAttr::get(
        context, static_cast<SwizzlingMode>(transforms.swizzle)));
  return ArrayAttr::get(context, entries);
}

FailureOr<layout::SmemTransforms> attrToTransforms(Attribute attr) {
  auto array = dyn_cast<ArrayAttr>(attr);
  if (!array)
    return failure();
  layout::SmemTransforms result;
  bool seenSwizzle = false;
  for (Attribute entry : array) {
    if (auto tile = dyn_cast<TileTransformAttr>(entry)) {
      if (result.tile || seenSwizzle)
        return failure();
      result.tile = layout::Shape(tile.getTiling().asArrayRef());
    } else if (auto swizzle = dyn_cast<SwizzleTransformAttr>(entry)) {
      if (seenSwizzle)
        return failure();
      seenSwizzle = true;
      result.swizzle = static_cast<int64_t>(swizzle.getSwizzle());
    } else {
      return failure();
    }
  }
  return result;
}

} // namespace mosaic
