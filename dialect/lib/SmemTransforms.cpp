//===- SmemTransforms.cpp - Shared-memory tiling and swizzle --------------===//

#include "mosaic/Dialect/MosaicGPU/SmemTransforms.h"

#include "llvm/Support/FormatVariadic.h"

using llvm::ArrayRef;

namespace mosaic::layout {

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string SmemTransforms::str() const {
  std::string result;
  if (tile)
    result = "tile" + formatShape(*tile);
  if (swizzle != kNoSwizzle)
    result += (result.empty() ? "" : " ") +
              llvm::formatv("swizzle {0}", swizzle).str();
  return result.empty() ? "no transforms" : result;
}

llvm::Expected<Shape> tiledSmemShape(const SmemTransforms &transforms,
                                     ArrayRef<int64_t> shape) {
  if (!transforms.tile)
    return Shape(shape);
  ArrayRef<int64_t> tile = *transforms.tile;
  if (tile.size() > shape.size())
    return makeError(llvm::formatv("tile {0} has a higher rank than the "
                                   "buffer shape {1}",
                                   formatShape(tile), formatShape(shape)));
  size_t untiled = shape.size() - tile.size();
  Shape outer(shape.begin(), shape.begin() + untiled), inner;
  for (auto [dim, size] : llvm::zip_equal(shape.drop_front(untiled), tile)) {
    int64_t effective = std::min(dim, size);
    if (dim % effective != 0)
      return makeError(llvm::formatv(
          "tile {0} does not divide the buffer shape {1}: {2} is neither "
          "smaller than nor a multiple of {3}",
          formatShape(tile), formatShape(shape), dim, size));
    outer.push_back(dim / effective);
    inner.push_back(effective);
  }
  outer.append(inner.begin(), inner.end());
  return outer;
}

llvm::Error checkSmemTransforms(const SmemTransforms &transforms,
                                ArrayRef<int64_t> shape, unsigned bitwidth,
                                int64_t minorDim) {
  llvm::Expected<Shape> tiled = tiledSmemShape(transforms, shape);
  if (!tiled)
    return tiled.takeError();
  if (transforms.swizzle == kNoSwizzle)
    return llvm::Error::success();
  if (transforms.swizzle != 32 && transforms.swizzle != 64 &&
      transforms.swizzle != 128)
    return makeError(llvm::formatv("swizzle {0} is not 16, 32, 64 or 128",
                                   transforms.swizzle));
  ArrayRef<int64_t> rows =
      transforms.tile ? ArrayRef(*tiled).take_back(transforms.tile->size())
                      : ArrayRef(*tiled);
  if (rows.empty() || -minorDim > static_cast<int64_t>(rows.size()))
    return makeError("a swizzled buffer needs a minor dim");
  int64_t rowBytes = rows[rows.size() + minorDim] * bitwidth / 8;
  if (rowBytes != transforms.swizzle)
    return makeError(llvm::formatv(
        "swizzle {0} needs rows of {0} bytes along the minor dim, but they "
        "are {1} bytes",
        transforms.swizzle, rowBytes));
  return llvm::Error::success();
}

SmemTransforms mmaTransforms(int64_t swizzle, unsigned bitwidth,
                             bool transposed) {
  int64_t columns = swizzle * 8 / bitwidth;
  SmemTransforms result;
  result.tile = transposed ? Shape{columns, 8} : Shape{8, columns};
  result.swizzle = swizzle;
  return result;
}

bool isValidMmaTiling(const SmemTransforms &transforms, unsigned bitwidth,
                      bool transposed) {
  for (int64_t swizzle : {128, 64, 32})
    if (transforms == mmaTransforms(swizzle, bitwidth, transposed))
      return true;
  return false;
}

bool tilingDivides(const SmemTransforms &transforms,
                   ArrayRef<int64_t> multiples) {
  if (!transforms.tile)
    return true;
  ArrayRef<int64_t> tile = *transforms.tile;
  size_t n = std::min(tile.size(), multiples.size());
  for (size_t i = 1; i <= n; ++i)
    if (multiples[multiples.size() - i] % tile[tile.size() - i] != 0)
      return false;
  return true;
}

bool isTransferable(const SmemTransforms &transforms,
                    const RegisterLayout &layout, ArrayRef<int64_t> shape,
                    unsigned bitwidth) {
  if (layout.isSplat())
    return true;
  int64_t bytes = std::max<unsigned>(bitwidth / 8, 1);
  // A strided transfer addresses the buffer row-major: no tiling, and no
  // swizzle either (the lowering does not permute its addresses).
  if (layout.isStrided())
    return transforms.isNone() && layout.vectorSize() * bytes <= 16 &&
           16 % (layout.vectorSize() * bytes) == 0;
  const TiledLayout &tiled = layout.tiledLayout();
  int64_t baseRank = tiled.baseTileShape().size();
  if (tiled.vectorLength() * bytes > 16 ||
      tiled.baseDimOfTiledDim(tiled.vectorDim()) != baseRank - 1)
    return false;
  if (!transforms.tile)
    return true;
  ArrayRef<int64_t> tile = *transforms.tile;
  return !shape.empty() && tile.back() % tiled.vectorLength() == 0;
}

} // namespace mosaic::layout
