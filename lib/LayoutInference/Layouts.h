//===- Layouts.h - Register layout algebra ----------------------*- C++ -*-===//
//
// Plain C++ model of how a warpgroup's 128 threads hold a vector: tilings,
// tiled layouts, strided and splat layouts. The dialect's attribute verifiers
// and layout inference both build on it; nothing here depends on MLIR IR.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_LAYOUTINFERENCE_LAYOUTS_H
#define MOSAIC_LAYOUTINFERENCE_LAYOUTS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mosaic::layout {

using Shape = llvm::SmallVector<int64_t, 8>;

constexpr int64_t kWarpsPerWarpgroup = 4;
constexpr int64_t kLanesPerWarp = 32;
constexpr int64_t kThreadsPerWarpgroup = kWarpsPerWarpgroup * kLanesPerWarp;

/// Formats a shape as "(a, b, c)" for diagnostics.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// A sequence of tiles applied in turn to a suffix of a shape. Tile ranks never
/// increase and all tile sizes are positive.
class Tiling {
public:
  static llvm::Expected<Tiling> create(std::vector<Shape> tiles);

  llvm::ArrayRef<Shape> tiles() const { return tiles_; }

  /// Applies every tile: each splits the trailing dims it covers into
  /// (dim / tile) and appends the tile, e.g. (64, 8) on (3, 128, 64) gives
  /// (3, 2, 8, 64, 8). Fails when a tile has a higher rank than the shape it
  /// applies to or does not divide it.
  llvm::Expected<Shape> tileShape(llvm::ArrayRef<int64_t> shape) const;

  /// Drops tiles that leave the shape unchanged: after stripping leading 1s, a
  /// tile equal to the suffix of the last kept tile is redundant.
  Tiling canonicalize() const;

  bool operator==(const Tiling &other) const { return tiles_ == other.tiles_; }
  std::string str() const;

private:
  explicit Tiling(std::vector<Shape> tiles) : tiles_(std::move(tiles)) {}
  std::vector<Shape> tiles_;
};

/// A warp or lane dimension of a tiled layout: either a (negative) index into
/// the tiled tiling shape or a replication over `times` warps or lanes.
struct PartitionDim {
  static PartitionDim index(int64_t dim) { return {dim, 0}; }
  static PartitionDim replicated(int64_t times) { return {0, times}; }
  bool isReplicated() const { return times != 0; }
  bool operator==(const PartitionDim &other) const {
    return dim == other.dim && times == other.times;
  }

  int64_t dim;
  int64_t times;
};

/// A layout defined by a tiling of the vector and an assignment of tiled dims
/// to warps, lanes and per-thread vectors. Only canonical layouts are valid.
class TiledLayout {
public:
  static llvm::Expected<TiledLayout>
  create(Tiling tiling, llvm::SmallVector<PartitionDim> warpDims,
         llvm::SmallVector<PartitionDim> laneDims, int64_t vectorDim,
         bool requireCanonical = true);

  const Tiling &tiling() const { return tiling_; }
  llvm::ArrayRef<PartitionDim> warpDims() const { return warpDims_; }
  llvm::ArrayRef<PartitionDim> laneDims() const { return laneDims_; }
  int64_t vectorDim() const { return vectorDim_; }

  llvm::ArrayRef<int64_t> baseTileShape() const { return tiling_.tiles()[0]; }
  /// The trailing dims every tiled vector ends with: the base tile, tiled,
  /// minus its leading (untiled) dims.
  llvm::ArrayRef<int64_t> tiledTilingShape() const { return tiledTilingShape_; }
  int64_t vectorLength() const;

  /// The same layout with redundant tiles and size-1 partitioned dims removed.
  TiledLayout canonicalize() const;

  /// Fails unless a vector of `shape` can have this layout: its rank covers
  /// the base tile and the base tile divides its trailing dims.
  llvm::Error checkShape(llvm::ArrayRef<int64_t> shape) const;

  /// The per-thread register array shape for a vector of `shape`: the tiled
  /// shape with the warp, lane and vector dims set to 1.
  llvm::Expected<Shape> registersShape(llvm::ArrayRef<int64_t> shape) const;

  bool operator==(const TiledLayout &other) const;
  std::string str() const;

private:
  TiledLayout(Tiling tiling, Shape tiledTilingShape,
              llvm::SmallVector<PartitionDim> warpDims,
              llvm::SmallVector<PartitionDim> laneDims, int64_t vectorDim)
      : tiling_(std::move(tiling)),
        tiledTilingShape_(std::move(tiledTilingShape)),
        warpDims_(std::move(warpDims)), laneDims_(std::move(laneDims)),
        vectorDim_(vectorDim) {}

  Tiling tiling_;
  Shape tiledTilingShape_;
  llvm::SmallVector<PartitionDim> warpDims_;
  llvm::SmallVector<PartitionDim> laneDims_;
  int64_t vectorDim_;
};

/// Fails unless a strided layout of `vectorSize`-element chunks can hold a
/// vector of `shape`: the element count is a multiple of 128 * vectorSize.
llvm::Error checkStridedLayout(llvm::ArrayRef<int64_t> shape,
                               int64_t vectorSize);

/// The named Hopper layouts (REFERENCE.md section 3).
TiledLayout wgmmaLayout();
TiledLayout wgmma8BitLayout();
TiledLayout wgmmaTransposedLayout();
TiledLayout wgmmaRowLayout();
TiledLayout wgmmaColLayout();

} // namespace mosaic::layout

#endif // MOSAIC_LAYOUTINFERENCE_LAYOUTS_H
