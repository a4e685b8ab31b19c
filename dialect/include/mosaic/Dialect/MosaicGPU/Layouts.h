//===- Layouts.h - Register layout algebra ----------------------*- C++ -*-===//
//
// Plain C++ model of how a warpgroup's 128 threads hold a vector: tilings,
// tiled layouts, strided and splat layouts. The dialect's attribute verifiers
// and layout inference both build on it; nothing here depends on MLIR IR.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_DIALECT_MOSAICGPU_LAYOUTS_H
#define MOSAIC_DIALECT_MOSAICGPU_LAYOUTS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
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

  /// The layout of the vector with base-tile dim `dim` removed (a reduction
  /// over it): tile entries of that dim disappear, the warps and lanes that
  /// partitioned it become replicated, and a removed vector dim is replaced
  /// by a trailing unit tile. The result is canonical; WGMMA reduced over dim
  /// 1 is WGMMA_ROW and over dim 0 is WGMMA_COL.
  llvm::Expected<TiledLayout> removeDimension(int64_t dim) const;

  /// The base-tile dim that tiled-tiling dim `dim` (negative) splits.
  int64_t baseDimOfTiledDim(int64_t dim) const;

  /// How many threads hold each element: the product of the replicated warp
  /// and lane dims (1 for WGMMA, 4 for WGMMA_ROW, 32 for WGMMA_COL).
  int64_t replication() const;

  /// The index of the element that `thread` (0..127) holds at `registerIndex`
  /// (row-major over registersShape(shape)), lane `vectorIndex` of its vector
  /// register.
  llvm::Expected<Shape> elementIndex(llvm::ArrayRef<int64_t> shape,
                                     int64_t thread, int64_t registerIndex,
                                     int64_t vectorIndex) const;

  bool operator==(const TiledLayout &other) const;
  bool operator!=(const TiledLayout &other) const { return !(*this == other); }
  std::string str() const;

private:
  /// For each dim of the base tile tiled by the whole tiling, the base dim it
  /// comes from (the untiled leading dims included).
  Shape tiledBaseLabels() const;

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

/// The strided vector size for a shape: start at 128 / bitwidth and halve
/// until 128 chunks of it divide the element count; none when no size works or
/// the chunk is not a whole number of bytes. The reference starts at 64
/// bits; 16-byte chunks let every thread move its data with 16-byte
/// accesses, the widest a GPU thread has.
std::optional<int64_t> defaultStridedVectorSize(llvm::ArrayRef<int64_t> shape,
                                                unsigned bitwidth);

/// What holding a vector in a layout costs each thread: the 32-bit registers
/// its elements take, then how many threads hold each element. Cheaper
/// compares less: fewer registers first, then less replication.
struct RegisterCost {
  int64_t registersPerThread;
  int64_t replication;

  bool operator<(const RegisterCost &other) const {
    return std::tie(registersPerThread, replication) <
           std::tie(other.registersPerThread, other.replication);
  }
  bool operator==(const RegisterCost &other) const {
    return registersPerThread == other.registersPerThread &&
           replication == other.replication;
  }
};

/// Any register layout, independent of the vector's shape (a splat or
/// strided layout is valid for any shape with enough elements, a tiled one for
/// shapes its tiling divides).
class RegisterLayout {
public:
  enum class Kind { Splat, Strided, Tiled };

  static RegisterLayout splat() { return RegisterLayout(Kind::Splat, 0, {}); }
  static RegisterLayout strided(int64_t vectorSize) {
    return RegisterLayout(Kind::Strided, vectorSize, {});
  }
  /// Tiled layouts are interned: equal layouts share one object, so copies
  /// are cheap and equality is a pointer comparison.
  static RegisterLayout tiled(TiledLayout layout);

  Kind kind() const { return kind_; }
  bool isSplat() const { return kind_ == Kind::Splat; }
  bool isStrided() const { return kind_ == Kind::Strided; }
  bool isTiled() const { return kind_ == Kind::Tiled; }
  int64_t vectorSize() const { return vectorSize_; }
  const TiledLayout &tiledLayout() const { return *tiled_; }
  /// Identifies the interned tiled layout (null for other kinds): equal
  /// layouts have equal identities, which makes it a cheap cache key.
  const void *identity() const { return tiled_.get(); }

  /// Fails unless a vector of `shape` can have this layout.
  llvm::Error checkShape(llvm::ArrayRef<int64_t> shape) const;
  /// The same test as checkShape, without building an error message.
  bool fitsShape(llvm::ArrayRef<int64_t> shape) const;

  /// How many elements of a vector of `shape` each thread holds: 1 for a
  /// splat, N / 128 for a strided layout, N * replication / 128 for a tiled
  /// one; none when the layout does not fit the shape.
  std::optional<int64_t> elementsPerThread(llvm::ArrayRef<int64_t> shape) const;

  /// What a vector of `shape` with `bitwidth`-bit elements costs in this
  /// layout (elements packed into 32-bit registers); none when the layout
  /// does not fit the shape. A splat takes one register and every thread
  /// holds its one value (replication 128).
  std::optional<RegisterCost> cost(llvm::ArrayRef<int64_t> shape,
                                   unsigned bitwidth) const;

  /// The index of the element of a vector of `shape` that `thread` holds in
  /// lane `vectorIndex` of register `registerIndex`: a splat's single
  /// register holds element 0 (all elements are equal); a strided thread t
  /// holds the chunks starting at t * vec + i * 128 * vec.
  llvm::Expected<Shape> elementIndex(llvm::ArrayRef<int64_t> shape,
                                     int64_t thread, int64_t registerIndex,
                                     int64_t vectorIndex) const;

  /// The layout of a reduction of a vector of `shape` over `axes`. Tiled
  /// layouts lose the reduced dims (see TiledLayout::removeDimension); a
  /// splat stays a splat; a strided layout survives only the removal of
  /// leading dims whose remaining elements still fill whole 128-thread rows.
  llvm::Expected<RegisterLayout> reduce(llvm::ArrayRef<int64_t> axes,
                                        llvm::ArrayRef<int64_t> shape) const;

  /// Whether a value of `fromShape` with this layout can be reshaped to
  /// `toShape` without moving data: always for splat and strided layouts;
  /// for tiled ones when the dims inside the base tile other than its first
  /// are unchanged and both shapes' tiled major dims are multiples of the
  /// tile (the leading dims then only regroup whole tiles).
  bool reshapes(llvm::ArrayRef<int64_t> fromShape,
                llvm::ArrayRef<int64_t> toShape) const;

  bool operator==(const RegisterLayout &other) const;
  bool operator!=(const RegisterLayout &other) const {
    return !(*this == other);
  }
  std::string str() const;

private:
  RegisterLayout(Kind kind, int64_t vectorSize,
                 std::shared_ptr<const TiledLayout> tiled)
      : kind_(kind), vectorSize_(vectorSize), tiled_(std::move(tiled)) {}

  Kind kind_;
  int64_t vectorSize_;
  // Interned and immutable: layouts are copied and compared a lot by the
  // solver, and a tiled layout owns several small vectors.
  std::shared_ptr<const TiledLayout> tiled_;
};

enum class NamedLayout {
  Wgmma,
  Wgmma8Bit,
  WgmmaTransposed,
  WgmmaRow,
  WgmmaCol
};

/// A named Hopper layout as a RegisterLayout; every call shares one
/// allocation, so copies and comparisons are cheap.
const RegisterLayout &namedLayout(NamedLayout which);

/// What converting a value from one register layout to another costs the
/// kernel: nothing (the same layout, or a splat spread over the registers
/// of the new layout), a round trip through shared memory (each thread
/// stores its registers and loads the ones the new layout gives it, between
/// two warpgroup barriers), or impossible.
enum class RelayoutKind { Free, ThroughSharedMemory, Illegal };

/// The relayouts the lowering performs: identity and splat to anything are
/// free; WGMMA <-> WGMMA_TRANSPOSED for 16- and 32-bit elements goes through
/// shared memory; everything else is illegal.
RelayoutKind relayoutKind(const RegisterLayout &from, const RegisterLayout &to,
                          unsigned bitwidth);

/// Whether a value laid out as `from` can be converted to `to` at all.
inline bool isLegalRelayout(const RegisterLayout &from,
                            const RegisterLayout &to, unsigned bitwidth) {
  return relayoutKind(from, to, bitwidth) != RelayoutKind::Illegal;
}

/// The named Hopper layouts: the wgmma accumulator fragment and its 8-bit,
/// transposed, row and column forms (PTX ISA, "Matrix fragments for
/// wgmma.mma_async").
TiledLayout wgmmaLayout();
TiledLayout wgmma8BitLayout();
TiledLayout wgmmaTransposedLayout();
TiledLayout wgmmaRowLayout();
TiledLayout wgmmaColLayout();

/// A layout for rows of any count: each warp holds whole rows, `lanesPerRow`
/// lanes (a power of two up to 32) split a row into chunks of `vectorLength`
/// contiguous elements, and the warpgroup covers 128 / lanesPerRow rows at a
/// time. Reducing a row takes in-thread adds and log2(lanesPerRow) shuffles,
/// with no shared memory; a warp's access spans whole rows.
llvm::Expected<TiledLayout> rowsLayout(int64_t lanesPerRow,
                                       int64_t vectorLength);

/// The rows layout for a vector of `shape` (rank 2 or more) with
/// `bitwidth`-bit elements: the widest chunk up to 128 bits that divides
/// the rows, as many lanes per row as a row has chunks (at most 32); none
/// when no such layout fits the shape.
std::optional<RegisterLayout> rowsLayoutFor(llvm::ArrayRef<int64_t> shape,
                                            unsigned bitwidth);

} // namespace mosaic::layout

#endif // MOSAIC_DIALECT_MOSAICGPU_LAYOUTS_H
