//===- Layouts.cpp - Register layout algebra ------------------------------===//

#include "mosaic/Dialect/MosaicGPU/Layouts.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

#include <map>
#include <mutex>

using llvm::ArrayRef;

namespace mosaic::layout {

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string formatShape(ArrayRef<int64_t> shape) {
  std::string result = "(";
  llvm::raw_string_ostream os(result);
  llvm::interleaveComma(shape, os);
  os << ")";
  return result;
}

//===----------------------------------------------------------------------===//
// Tiling
//===----------------------------------------------------------------------===//

llvm::Expected<Tiling> Tiling::create(std::vector<Shape> tiles) {
  for (auto [i, tile] : llvm::enumerate(tiles)) {
    if (tile.empty())
      return makeError(llvm::formatv("tile #{0} is empty", i));
    if (i > 0 && tile.size() > tiles[i - 1].size())
      return makeError(llvm::formatv(
          "tile #{0} {1} has a higher rank than the tile before it {2}; tile "
          "ranks must not increase",
          i, formatShape(tile), formatShape(tiles[i - 1])));
    for (int64_t size : tile)
      if (size <= 0)
        return makeError(llvm::formatv("tile #{0} {1} has a non-positive size",
                                       i, formatShape(tile)));
  }
  return Tiling(std::move(tiles));
}

llvm::Expected<Shape> Tiling::tileShape(ArrayRef<int64_t> shape) const {
  Shape current(shape.begin(), shape.end());
  for (const Shape &tile : tiles_) {
    if (tile.size() > current.size())
      return makeError(llvm::formatv("tile {0} does not apply to shape {1}: "
                                     "the tile has a higher rank",
                                     formatShape(tile), formatShape(current)));
    size_t untiledRank = current.size() - tile.size();
    Shape next(current.begin(), current.begin() + untiledRank);
    for (auto [dim, size] :
         llvm::zip_equal(ArrayRef(current).drop_front(untiledRank), tile)) {
      if (dim % size != 0)
        return makeError(llvm::formatv(
            "tile {0} does not divide shape {1}: {2} is not a multiple of {3}",
            formatShape(tile), formatShape(current), dim, size));
      next.push_back(dim / size);
    }
    next.append(tile.begin(), tile.end());
    current = std::move(next);
  }
  return current;
}

Tiling Tiling::canonicalize() const {
  if (tiles_.size() <= 1)
    return *this;
  std::vector<Shape> kept = {tiles_.front()};
  for (const Shape &tile : ArrayRef(tiles_).drop_front()) {
    ArrayRef<int64_t> stripped = tile;
    while (stripped.size() > 1 && stripped.front() == 1)
      stripped = stripped.drop_front();
    ArrayRef<int64_t> previous = kept.back();
    if (stripped.size() <= previous.size() &&
        previous.take_back(stripped.size()) == stripped)
      continue;
    kept.emplace_back(stripped.begin(), stripped.end());
  }
  return Tiling(std::move(kept));
}

std::string Tiling::str() const {
  std::string result;
  for (const Shape &tile : tiles_)
    result += formatShape(tile);
  return result;
}

//===----------------------------------------------------------------------===//
// TiledLayout
//===----------------------------------------------------------------------===//

static llvm::Expected<Shape> computeTiledTilingShape(const Tiling &tiling) {
  ArrayRef<int64_t> base = tiling.tiles().front();
  llvm::Expected<Shape> tiled = tiling.tileShape(base);
  if (!tiled)
    return tiled.takeError();
  return Shape(ArrayRef(*tiled).drop_front(base.size()));
}

static std::string formatDims(ArrayRef<PartitionDim> dims) {
  std::string result = "[";
  llvm::raw_string_ostream os(result);
  llvm::interleaveComma(dims, os, [&](const PartitionDim &dim) {
    if (dim.isReplicated())
      os << "Replicated(" << dim.times << ")";
    else
      os << dim.dim;
  });
  os << "]";
  return result;
}

llvm::Expected<TiledLayout>
TiledLayout::create(Tiling tiling, llvm::SmallVector<PartitionDim> warpDims,
                    llvm::SmallVector<PartitionDim> laneDims, int64_t vectorDim,
                    bool requireCanonical) {
  if (tiling.tiles().empty())
    return makeError("the tiling must have at least one tile");
  llvm::Expected<Shape> tiledTilingShape = computeTiledTilingShape(tiling);
  if (!tiledTilingShape)
    return makeError("the tiling does not apply to its own first tile: " +
                     llvm::toString(tiledTilingShape.takeError()));
  int64_t rank = tiledTilingShape->size();

  llvm::SmallSet<int64_t, 8> seen;
  auto checkDim = [&](int64_t dim, llvm::StringRef role) -> llvm::Error {
    if (dim >= 0 || dim < -rank)
      return makeError(llvm::formatv(
          "{0} {1} is out of range: dims are negative indices into the tiled "
          "tiling shape {2}, so they must lie in [{3}, -1]",
          role, dim, formatShape(*tiledTilingShape), -rank));
    if (!seen.insert(dim).second)
      return makeError(llvm::formatv(
          "{0} {1} partitions a dim that is already partitioned; warp, lane "
          "and vector dims must be distinct",
          role, dim));
    return llvm::Error::success();
  };
  auto product = [&](ArrayRef<PartitionDim> dims,
                     llvm::StringRef role) -> llvm::Expected<int64_t> {
    int64_t result = 1;
    for (const PartitionDim &dim : dims) {
      if (dim.isReplicated()) {
        if (dim.times <= 0)
          return makeError(llvm::formatv(
              "{0} Replicated(times = {1}) must replicate a positive number "
              "of times",
              role, dim.times));
        result *= dim.times;
        continue;
      }
      if (llvm::Error error = checkDim(dim.dim, role))
        return std::move(error);
      result *= (*tiledTilingShape)[rank + dim.dim];
    }
    return result;
  };

  llvm::Expected<int64_t> warps = product(warpDims, "warp dim");
  if (!warps)
    return warps.takeError();
  llvm::Expected<int64_t> lanes = product(laneDims, "lane dim");
  if (!lanes)
    return lanes.takeError();
  if (llvm::Error error = checkDim(vectorDim, "vector dim"))
    return std::move(error);
  if (*warps != kWarpsPerWarpgroup)
    return makeError(llvm::formatv(
        "warp dims {0} span {1} warps, but a warpgroup has {2} (tiled tiling "
        "shape {3})",
        formatDims(warpDims), *warps, kWarpsPerWarpgroup,
        formatShape(*tiledTilingShape)));
  if (*lanes != kLanesPerWarp)
    return makeError(llvm::formatv(
        "lane dims {0} span {1} lanes, but a warp has {2} (tiled tiling shape "
        "{3})",
        formatDims(laneDims), *lanes, kLanesPerWarp,
        formatShape(*tiledTilingShape)));

  TiledLayout layout(std::move(tiling), std::move(*tiledTilingShape),
                     std::move(warpDims), std::move(laneDims), vectorDim);
  if (requireCanonical) {
    TiledLayout canonical = layout.canonicalize();
    if (!(canonical == layout))
      return makeError(llvm::formatv("the layout {0} is not canonical; its "
                                     "canonical form is {1}",
                                     layout.str(), canonical.str()));
  }
  return layout;
}

int64_t TiledLayout::vectorLength() const {
  return tiledTilingShape_[tiledTilingShape_.size() + vectorDim_];
}

TiledLayout TiledLayout::canonicalize() const {
  Tiling canonicalTiling = tiling_.canonicalize();
  llvm::Expected<Shape> canonicalShape =
      computeTiledTilingShape(canonicalTiling);
  if (!canonicalShape) {
    // Dropping redundant tiles never breaks divisibility; keep the layout as
    // it is rather than trusting an unexpected result.
    llvm::consumeError(canonicalShape.takeError());
    return *this;
  }

  // Match the old tiled tiling shape against the new one from the minor end;
  // the old dims left unmatched are the ones the dropped tiles introduced.
  // removedAtOrAfter[i] counts removed dims at or after old position i.
  int64_t oldRank = tiledTilingShape_.size();
  llvm::SmallVector<int64_t> removedAtOrAfter(oldRank + 1, 0);
  llvm::SmallVector<bool> removed(oldRank, false);
  int64_t next = static_cast<int64_t>(canonicalShape->size()) - 1;
  for (int64_t i = oldRank - 1; i >= 0; --i) {
    if (next >= 0 && tiledTilingShape_[i] == (*canonicalShape)[next])
      --next;
    else
      removed[i] = true;
    removedAtOrAfter[i] = removedAtOrAfter[i + 1] + (removed[i] ? 1 : 0);
  }

  auto renumber = [&](int64_t dim) {
    return dim + removedAtOrAfter[oldRank + dim];
  };
  auto sizeOf = [&](int64_t dim) { return tiledTilingShape_[oldRank + dim]; };
  auto remap = [&](ArrayRef<PartitionDim> dims) {
    llvm::SmallVector<PartitionDim> result;
    for (const PartitionDim &dim : dims) {
      if (dim.isReplicated())
        result.push_back(dim);
      else if (sizeOf(dim.dim) != 1)
        result.push_back(PartitionDim::index(renumber(dim.dim)));
    }
    return result;
  };
  // Removed dims have size 1 in principle, but the greedy match can pair the
  // sizes differently; and a vector dim on a removed dim has nowhere to go.
  // Either way the layout has no simpler form: keep it as it is.
  auto dropsData = [&](ArrayRef<PartitionDim> dims) {
    return llvm::any_of(dims, [&](const PartitionDim &dim) {
      return !dim.isReplicated() && sizeOf(dim.dim) != 1 &&
             removed[oldRank + dim.dim];
    });
  };
  if (dropsData(warpDims_) || dropsData(laneDims_) ||
      removed[oldRank + vectorDim_])
    return *this;

  return TiledLayout(std::move(canonicalTiling), std::move(*canonicalShape),
                     remap(warpDims_), remap(laneDims_), renumber(vectorDim_));
}

llvm::Error TiledLayout::checkShape(ArrayRef<int64_t> shape) const {
  llvm::Expected<Shape> tiled = tiling_.tileShape(shape);
  if (!tiled)
    return tiled.takeError();
  return llvm::Error::success();
}

llvm::Expected<Shape>
TiledLayout::registersShape(ArrayRef<int64_t> shape) const {
  llvm::Expected<Shape> tiled = tiling_.tileShape(shape);
  if (!tiled)
    return tiled.takeError();
  int64_t rank = tiled->size();
  auto clear = [&](int64_t dim) { (*tiled)[rank + dim] = 1; };
  for (const PartitionDim &dim : llvm::concat<const PartitionDim>(
           ArrayRef(warpDims_), ArrayRef(laneDims_)))
    if (!dim.isReplicated())
      clear(dim.dim);
  clear(vectorDim_);
  return tiled;
}

Shape TiledLayout::tiledBaseLabels() const {
  // Each tile splits the dims it covers into (outer, tile) pairs; both keep
  // the label of the base dim they come from.
  Shape labels;
  for (int64_t i = 0, e = baseTileShape().size(); i < e; ++i)
    labels.push_back(i);
  for (const Shape &tile : tiling_.tiles()) {
    Shape tail(labels.end() - tile.size(), labels.end());
    labels.append(tail.begin(), tail.end());
  }
  return labels;
}

int64_t TiledLayout::baseDimOfTiledDim(int64_t dim) const {
  Shape labels = tiledBaseLabels();
  return labels[labels.size() + dim];
}

int64_t TiledLayout::replication() const {
  int64_t times = 1;
  for (const PartitionDim &dim : llvm::concat<const PartitionDim>(
           ArrayRef(warpDims_), ArrayRef(laneDims_)))
    if (dim.isReplicated())
      times *= dim.times;
  return times;
}

llvm::Expected<TiledLayout> TiledLayout::removeDimension(int64_t dim) const {
  int64_t baseRank = baseTileShape().size();
  if (dim < 0 || dim >= baseRank)
    return makeError(llvm::formatv(
        "cannot remove dim {0} of a layout whose base tile {1} has rank {2}",
        dim, formatShape(baseTileShape()), baseRank));

  // Drop the tile entries of the removed dim. Tiles apply to suffixes, so the
  // new tiling's tiled shape is the old one without the removed dim's entries.
  Shape labels = tiledBaseLabels();
  std::vector<Shape> newTiles;
  for (const Shape &tile : tiling_.tiles()) {
    Shape kept;
    for (auto [i, size] : llvm::enumerate(tile))
      if (static_cast<int64_t>(i + baseRank - tile.size()) != dim)
        kept.push_back(size);
    if (!kept.empty())
      newTiles.push_back(std::move(kept));
  }
  if (newTiles.empty())
    return makeError(llvm::formatv(
        "cannot remove dim {0} of {1}: no dim would be left", dim, str()));
  ArrayRef<int64_t> tiledLabels = ArrayRef(labels).drop_front(baseRank);

  int64_t oldRank = tiledTilingShape_.size();
  llvm::SmallVector<int64_t> newPosition(oldRank, -1);
  int64_t newRank = 0;
  for (int64_t i = 0; i < oldRank; ++i)
    if (tiledLabels[i] != dim)
      newPosition[i] = newRank++;
  bool vectorRemoved = newPosition[oldRank + vectorDim_] < 0;
  if (vectorRemoved) {
    // The per-thread vector collapses to one element; give it a unit dim.
    newTiles.push_back({1});
    ++newRank;
  }

  auto remap = [&](ArrayRef<PartitionDim> dims) {
    llvm::SmallVector<PartitionDim> result;
    for (const PartitionDim &entry : dims) {
      if (entry.isReplicated()) {
        result.push_back(entry);
        continue;
      }
      int64_t position = oldRank + entry.dim;
      if (newPosition[position] >= 0)
        result.push_back(PartitionDim::index(newPosition[position] - newRank));
      else if (tiledTilingShape_[position] != 1)
        result.push_back(PartitionDim::replicated(tiledTilingShape_[position]));
    }
    return result;
  };
  int64_t newVectorDim =
      vectorRemoved ? -1 : newPosition[oldRank + vectorDim_] - newRank;

  llvm::Expected<Tiling> newTiling = Tiling::create(std::move(newTiles));
  if (!newTiling)
    return newTiling.takeError();
  llvm::Expected<TiledLayout> reduced = TiledLayout::create(
      std::move(*newTiling), remap(warpDims_), remap(laneDims_), newVectorDim,
      /*requireCanonical=*/false);
  if (!reduced)
    return reduced.takeError();
  return reduced->canonicalize();
}

llvm::Expected<Shape> TiledLayout::elementIndex(ArrayRef<int64_t> shape,
                                                int64_t thread,
                                                int64_t registerIndex,
                                                int64_t vectorIndex) const {
  llvm::Expected<Shape> registers = registersShape(shape);
  if (!registers)
    return registers.takeError();
  int64_t numRegisters = 1;
  for (int64_t dim : *registers)
    numRegisters *= dim;
  if (thread < 0 || thread >= kThreadsPerWarpgroup || registerIndex < 0 ||
      registerIndex >= numRegisters || vectorIndex < 0 ||
      vectorIndex >= vectorLength())
    return makeError(llvm::formatv(
        "thread {0}, register {1}, vector element {2} is out of range "
        "(128 threads, {3} registers of {4} elements)",
        thread, registerIndex, vectorIndex, numRegisters, vectorLength()));

  // The register's coordinates in the tiled shape, row-major.
  Shape index(registers->size());
  for (int64_t i = index.size() - 1, rest = registerIndex; i >= 0; --i) {
    index[i] = rest % (*registers)[i];
    rest /= (*registers)[i];
  }
  llvm::Expected<Shape> tiled = tiling_.tileShape(shape);
  if (!tiled)
    return tiled.takeError();
  int64_t rank = tiled->size();
  // Warp and lane indices decompose over their dims, the last one fastest.
  auto distribute = [&](ArrayRef<PartitionDim> dims, int64_t id) {
    for (const PartitionDim &dim : llvm::reverse(dims)) {
      int64_t size = dim.isReplicated() ? dim.times : (*tiled)[rank + dim.dim];
      if (!dim.isReplicated())
        index[rank + dim.dim] = id % size;
      id /= size;
    }
  };
  distribute(warpDims_, thread / kLanesPerWarp);
  distribute(laneDims_, thread % kLanesPerWarp);
  index[rank + vectorDim_] = vectorIndex;

  // Untile: each tile's (outer, inner) index pairs fold back into one dim.
  for (const Shape &tile : llvm::reverse(tiling_.tiles())) {
    int64_t tileRank = tile.size();
    int64_t n = index.size();
    Shape untiled(index.begin(), index.end() - 2 * tileRank);
    for (int64_t i = 0; i < tileRank; ++i)
      untiled.push_back(index[n - 2 * tileRank + i] * tile[i] +
                        index[n - tileRank + i]);
    index = std::move(untiled);
  }
  return index;
}

bool TiledLayout::operator==(const TiledLayout &other) const {
  return tiling_ == other.tiling_ && warpDims_ == other.warpDims_ &&
         laneDims_ == other.laneDims_ && vectorDim_ == other.vectorDim_;
}

std::string TiledLayout::str() const {
  return llvm::formatv("{0} warp_dims = {1} lane_dims = {2} vector_dim = {3}",
                       tiling_.str(), formatDims(warpDims_),
                       formatDims(laneDims_), vectorDim_);
}

//===----------------------------------------------------------------------===//
// Strided layouts and the named layouts
//===----------------------------------------------------------------------===//

llvm::Error checkStridedLayout(ArrayRef<int64_t> shape, int64_t vectorSize) {
  if (vectorSize <= 0)
    return makeError(llvm::formatv(
        "the vector size must be positive, but it is {0}", vectorSize));
  int64_t elements = 1;
  for (int64_t dim : shape)
    elements *= dim;
  if (elements % (kThreadsPerWarpgroup * vectorSize) != 0)
    return makeError(llvm::formatv(
        "shape {0} has {1} elements, which is not a multiple of {2} (128 "
        "threads x vector size {3})",
        formatShape(shape), elements, kThreadsPerWarpgroup * vectorSize,
        vectorSize));
  return llvm::Error::success();
}

std::optional<int64_t> defaultStridedVectorSize(ArrayRef<int64_t> shape,
                                                unsigned bitwidth) {
  int64_t elements = 1;
  for (int64_t dim : shape)
    elements *= dim;
  if (bitwidth == 0 || elements % kThreadsPerWarpgroup != 0)
    return std::nullopt;
  // Powers of two only, so that chunks stay naturally aligned.
  int64_t vectorSize = std::max<int64_t>(128 / bitwidth, 1);
  while (vectorSize > 0 &&
         elements % (vectorSize * kThreadsPerWarpgroup) != 0)
    vectorSize /= 2;
  if (vectorSize == 0 || (vectorSize * bitwidth) % 8 != 0)
    return std::nullopt;
  return vectorSize;
}

//===----------------------------------------------------------------------===//
// RegisterLayout
//===----------------------------------------------------------------------===//

llvm::Error RegisterLayout::checkShape(ArrayRef<int64_t> shape) const {
  switch (kind_) {
  case Kind::Splat:
    return llvm::Error::success();
  case Kind::Strided:
    return checkStridedLayout(shape, vectorSize_);
  case Kind::Tiled:
    return tiled_->checkShape(shape);
  }
  return llvm::Error::success();
}

RegisterLayout RegisterLayout::tiled(TiledLayout layout) {
  // The table keeps every distinct tiled layout alive; a program uses few.
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const TiledLayout>> table;
  std::string key = layout.str();
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = table.try_emplace(std::move(key));
  if (inserted)
    it->second = std::make_shared<const TiledLayout>(std::move(layout));
  return RegisterLayout(Kind::Tiled, 0, it->second);
}

bool RegisterLayout::fitsShape(ArrayRef<int64_t> shape) const {
  switch (kind_) {
  case Kind::Splat:
    return true;
  case Kind::Strided: {
    int64_t elements = 1;
    for (int64_t dim : shape)
      elements *= dim;
    return vectorSize_ > 0 &&
           elements % (kThreadsPerWarpgroup * vectorSize_) == 0;
  }
  case Kind::Tiled: {
    // The later tiles divide the first (TiledLayout::create checked it), so
    // the first one decides.
    ArrayRef<int64_t> base = tiled_->baseTileShape();
    if (shape.size() < base.size())
      return false;
    for (auto [dim, size] : llvm::zip_equal(shape.take_back(base.size()), base))
      if (dim % size != 0)
        return false;
    return true;
  }
  }
  return false;
}

std::optional<int64_t>
RegisterLayout::elementsPerThread(ArrayRef<int64_t> shape) const {
  if (!fitsShape(shape))
    return std::nullopt;
  if (isSplat())
    return 1;
  int64_t elements = 1;
  for (int64_t dim : shape)
    elements *= dim;
  // The 128 threads split the elements evenly (the layout fits), each
  // element held by `replication` of them.
  int64_t replication = isTiled() ? tiled_->replication() : 1;
  return elements * replication / kThreadsPerWarpgroup;
}

std::optional<RegisterCost> RegisterLayout::cost(ArrayRef<int64_t> shape,
                                                 unsigned bitwidth) const {
  std::optional<int64_t> elements = elementsPerThread(shape);
  if (!elements)
    return std::nullopt;
  constexpr int64_t kRegisterBits = 32;
  int64_t registers =
      (*elements * static_cast<int64_t>(bitwidth) + kRegisterBits - 1) /
      kRegisterBits;
  int64_t replication = isSplat()   ? kThreadsPerWarpgroup
                        : isTiled() ? tiled_->replication()
                                    : 1;
  return RegisterCost{registers, replication};
}

llvm::Expected<Shape> RegisterLayout::elementIndex(ArrayRef<int64_t> shape,
                                                   int64_t thread,
                                                   int64_t registerIndex,
                                                   int64_t vectorIndex) const {
  if (isTiled())
    return tiled_->elementIndex(shape, thread, registerIndex, vectorIndex);
  if (llvm::Error error = checkShape(shape))
    return std::move(error);
  int64_t elements = 1;
  for (int64_t dim : shape)
    elements *= dim;
  int64_t vector = isSplat() ? 1 : vectorSize_;
  int64_t registers =
      isSplat() ? 1 : elements / (kThreadsPerWarpgroup * vectorSize_);
  if (thread < 0 || thread >= kThreadsPerWarpgroup || registerIndex < 0 ||
      registerIndex >= registers || vectorIndex < 0 || vectorIndex >= vector)
    return makeError(llvm::formatv(
        "thread {0}, register {1}, vector element {2} is out of range "
        "(128 threads, {3} registers of {4} elements)",
        thread, registerIndex, vectorIndex, registers, vector));
  int64_t flat =
      isSplat() ? 0
                : (registerIndex * kThreadsPerWarpgroup + thread) * vector +
                      vectorIndex;
  Shape index(shape.size());
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    index[i] = flat % shape[i];
    flat /= shape[i];
  }
  return index;
}

llvm::Expected<RegisterLayout>
RegisterLayout::reduce(ArrayRef<int64_t> axes, ArrayRef<int64_t> shape) const {
  int64_t rank = shape.size();
  if (isSplat())
    return *this;
  if (isStrided()) {
    // Dropping leading dims keeps the element order of what remains.
    llvm::SmallVector<int64_t> sorted(axes.begin(), axes.end());
    llvm::sort(sorted);
    bool leading = llvm::all_of(llvm::enumerate(sorted), [](auto entry) {
      return static_cast<int64_t>(entry.index()) == entry.value();
    });
    int64_t remaining = 1;
    for (int64_t dim : shape.drop_front(sorted.size()))
      remaining *= dim;
    if (leading && remaining % (kThreadsPerWarpgroup * vectorSize_) == 0)
      return *this;
    return makeError("a strided layout can only lose leading dims whose "
                     "remaining elements fill whole 128-thread rows");
  }
  TiledLayout result = *tiled_;
  int64_t baseRank = result.baseTileShape().size();
  // Remove the highest axes first so the lower ones keep their positions.
  llvm::SmallVector<int64_t> sorted(axes.begin(), axes.end());
  llvm::sort(sorted, std::greater<int64_t>());
  for (int64_t axis : sorted) {
    // Reducing an untiled leading dim only drops a loop over registers.
    int64_t baseDim = axis - (rank - baseRank);
    --rank;
    if (baseDim < 0)
      continue;
    llvm::Expected<TiledLayout> reduced = result.removeDimension(baseDim);
    if (!reduced)
      return reduced.takeError();
    result = std::move(*reduced);
    baseRank = result.baseTileShape().size();
  }
  return RegisterLayout::tiled(std::move(result));
}

bool RegisterLayout::reshapes(ArrayRef<int64_t> fromShape,
                              ArrayRef<int64_t> toShape) const {
  if (!isTiled())
    return true;
  ArrayRef<int64_t> base = tiled_->baseTileShape();
  size_t covered = base.size();
  if (fromShape.size() < covered || toShape.size() < covered)
    return false;
  ArrayRef<int64_t> from = fromShape.take_back(covered);
  ArrayRef<int64_t> to = toShape.take_back(covered);
  return from.drop_front() == to.drop_front() && from[0] % base[0] == 0 &&
         to[0] % base[0] == 0;
}

bool RegisterLayout::operator==(const RegisterLayout &other) const {
  if (kind_ != other.kind_)
    return false;
  if (isStrided())
    return vectorSize_ == other.vectorSize_;
  if (isTiled())
    return tiled_ == other.tiled_;
  return true;
}

std::string RegisterLayout::str() const {
  switch (kind_) {
  case Kind::Splat:
    return "Splat";
  case Kind::Strided:
    return llvm::formatv("Strided(vector_size = {0})", vectorSize_);
  case Kind::Tiled:
    if (*tiled_ == wgmmaLayout())
      return "WGMMA";
    if (*tiled_ == wgmma8BitLayout())
      return "WGMMA_8BIT";
    if (*tiled_ == wgmmaTransposedLayout())
      return "WGMMA_TRANSPOSED";
    if (*tiled_ == wgmmaRowLayout())
      return "WGMMA_ROW";
    if (*tiled_ == wgmmaColLayout())
      return "WGMMA_COL";
    return "Tiled(" + tiled_->str() + ")";
  }
  return "";
}

const RegisterLayout &namedLayout(NamedLayout which) {
  static const RegisterLayout layouts[] = {
      RegisterLayout::tiled(wgmmaLayout()),
      RegisterLayout::tiled(wgmma8BitLayout()),
      RegisterLayout::tiled(wgmmaTransposedLayout()),
      RegisterLayout::tiled(wgmmaRowLayout()),
      RegisterLayout::tiled(wgmmaColLayout()),
  };
  return layouts[static_cast<int>(which)];
}

RelayoutKind relayoutKind(const RegisterLayout &from, const RegisterLayout &to,
                          unsigned bitwidth) {
  if (from == to || from.isSplat())
    return RelayoutKind::Free;
  if (!from.isTiled() || !to.isTiled() || (bitwidth != 16 && bitwidth != 32))
    return RelayoutKind::Illegal;
  const RegisterLayout &wgmma = namedLayout(NamedLayout::Wgmma);
  const RegisterLayout &transposed = namedLayout(NamedLayout::WgmmaTransposed);
  return (from == wgmma && to == transposed) ||
                 (from == transposed && to == wgmma)
             ? RelayoutKind::ThroughSharedMemory
             : RelayoutKind::Illegal;
}

static TiledLayout makeNamedLayout(std::vector<Shape> tiles,
                                   llvm::SmallVector<PartitionDim> warpDims,
                                   llvm::SmallVector<PartitionDim> laneDims,
                                   int64_t vectorDim) {
  // The named layouts are constants known to be valid and canonical; the unit
  // tests check that create() accepts each of them.
  return llvm::cantFail(
      TiledLayout::create(llvm::cantFail(Tiling::create(std::move(tiles))),
                          std::move(warpDims), std::move(laneDims), vectorDim));
}

using PD = PartitionDim;

TiledLayout wgmmaLayout() {
  static const TiledLayout layout =
      makeNamedLayout({{64, 8}, {16, 8}, {8, 8}, {2}}, {PD::index(-7)},
                      {PD::index(-3), PD::index(-2)}, -1);
  return layout;
}

TiledLayout wgmma8BitLayout() {
  static const TiledLayout layout =
      makeNamedLayout({{64, 16}, {16, 16}, {8, 16}, {4}}, {PD::index(-7)},
                      {PD::index(-3), PD::index(-2)}, -1);
  return layout;
}

TiledLayout wgmmaTransposedLayout() {
  static const TiledLayout layout = makeNamedLayout(
      {{64, 8}, {16, 8}, {8, 8}, {2, 2}, {2, 1}}, {PD::index(-10)},
      {PD::index(-6), PD::index(-3), PD::index(-5)}, -2);
  return layout;
}

TiledLayout wgmmaRowLayout() {
  static const TiledLayout layout =
      makeNamedLayout({{64}, {16}, {8}, {1}}, {PD::index(-4)},
                      {PD::index(-2), PD::replicated(4)}, -1);
  return layout;
}

TiledLayout wgmmaColLayout() {
  static const TiledLayout layout = makeNamedLayout(
      {{8}, {2}}, {PD::replicated(4)}, {PD::replicated(8), PD::index(-2)}, -1);
  return layout;
}

llvm::Expected<TiledLayout> rowsLayout(int64_t lanesPerRow,
                                       int64_t vectorLength) {
  if (lanesPerRow <= 0 || lanesPerRow > kLanesPerWarp ||
      !llvm::isPowerOf2_64(lanesPerRow))
    return makeError(llvm::formatv(
        "lanes per row must be a power of two from 1 to {0}, got {1}",
        kLanesPerWarp, lanesPerRow));
  if (vectorLength <= 0)
    return makeError(llvm::formatv(
        "the vector length must be positive, got {0}", vectorLength));
  int64_t rowsPerWarp = kLanesPerWarp / lanesPerRow;
  int64_t columns = lanesPerRow * vectorLength;
  // (rows, columns) -> (warp, 1, lane row, lane column, 1, vector).
  llvm::Expected<Tiling> tiling =
      Tiling::create({{kWarpsPerWarpgroup * rowsPerWarp, columns},
                      {rowsPerWarp, columns},
                      {1, vectorLength}});
  if (!tiling)
    return tiling.takeError();
  llvm::Expected<TiledLayout> layout = TiledLayout::create(
      std::move(*tiling), {PD::index(-6)}, {PD::index(-4), PD::index(-3)}, -1,
      /*requireCanonical=*/false);
  if (!layout)
    return layout.takeError();
  return layout->canonicalize();
}

std::optional<RegisterLayout> rowsLayoutFor(ArrayRef<int64_t> shape,
                                            unsigned bitwidth) {
  if (shape.size() < 2 || bitwidth == 0 || bitwidth > 128)
    return std::nullopt;
  int64_t columns = shape.back();
  int64_t vectorLength = 128 / bitwidth;
  while (vectorLength > 1 && columns % vectorLength != 0)
    vectorLength /= 2;
  if ((vectorLength * bitwidth) % 8 != 0)
    return std::nullopt;
  int64_t chunks = columns / vectorLength;
  int64_t lanesPerRow = 1;
  while (lanesPerRow < kLanesPerWarp && chunks % (2 * lanesPerRow) == 0)
    lanesPerRow *= 2;
  llvm::Expected<TiledLayout> layout = rowsLayout(lanesPerRow, vectorLength);
  if (!layout) {
    llvm::consumeError(layout.takeError());
    return std::nullopt;
  }
  RegisterLayout result = RegisterLayout::tiled(std::move(*layout));
  if (!result.fitsShape(shape))
    return std::nullopt;
  return result;
}

} // namespace mosaic::layout
