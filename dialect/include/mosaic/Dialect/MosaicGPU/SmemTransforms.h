//===- SmemTransforms.h - Shared-memory tiling and swizzle ------*- C++ -*-===//
//
// How a shared-memory buffer is stored: an optional tiling of its minor dims
// and a swizzle. Plain C++, shared by layout inference and the tiling pass.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_DIALECT_MOSAICGPU_SMEMTRANSFORMS_H
#define MOSAIC_DIALECT_MOSAICGPU_SMEMTRANSFORMS_H

#include "mosaic/Dialect/MosaicGPU/Layouts.h"

namespace mosaic::layout {

/// Swizzle widths in bytes; 16 bytes is the unswizzled granule.
constexpr int64_t kNoSwizzle = 16;

struct SmemTransforms {
  /// Tile sizes of the minor dims, or none.
  std::optional<Shape> tile;
  /// Swizzle width in bytes: 16 (none), 32, 64 or 128.
  int64_t swizzle = kNoSwizzle;

  static SmemTransforms none() { return {}; }
  bool isNone() const { return !tile && swizzle == kNoSwizzle; }
  bool operator==(const SmemTransforms &other) const {
    return tile == other.tile && swizzle == other.swizzle;
  }
  bool operator!=(const SmemTransforms &other) const {
    return !(*this == other);
  }
  std::string str() const;
};

/// The physical shape of a buffer of `shape` under `transforms`: a tile
/// (t0, t1) turns (.., m, n) into (.., m / t0, n / t1, t0, t1). A dim smaller
/// than its tile size is tiled by itself.
llvm::Expected<Shape> tiledSmemShape(const SmemTransforms &transforms,
                                     llvm::ArrayRef<int64_t> shape);

/// Fails unless `transforms` can store a buffer of `shape` with
/// `bitwidth`-bit elements: the tile fits the rank, each tiled dim is smaller
/// than or a multiple of its tile size, and a swizzle of s bytes has rows of
/// exactly s bytes along the physical minor dim (`minorDim` of the tile, or
/// of the shape when untiled).
llvm::Error checkSmemTransforms(const SmemTransforms &transforms,
                                llvm::ArrayRef<int64_t> shape,
                                unsigned bitwidth, int64_t minorDim = -1);

/// The tiling wgmma reads with a swizzle of `swizzle` bytes: (8, swizzle *
/// 8 / bitwidth), or its transpose for an operand stored transposed.
SmemTransforms mmaTransforms(int64_t swizzle, unsigned bitwidth,
                             bool transposed);

/// Whether `transforms` are one of the mmaTransforms for this bitwidth.
bool isValidMmaTiling(const SmemTransforms &transforms, unsigned bitwidth,
                      bool transposed);

/// Whether every tile size divides the matching multiple, aligned from the
/// right (untiled buffers always divide).
bool tilingDivides(const SmemTransforms &transforms,
                   llvm::ArrayRef<int64_t> multiples);

/// Whether a register vector of `shape` in `layout` can be moved to or from a
/// buffer stored with `transforms` with whole, bank-conflict-free accesses:
/// strided layouts only buffers without transforms, in chunks that stay
/// inside one 16-byte granule; tiled layouts need their per-thread vector to
/// run along the minor dim within a 16-byte swizzle granule, and to fit a
/// tile row of a tiled buffer.
bool isTransferable(const SmemTransforms &transforms,
                    const RegisterLayout &layout, llvm::ArrayRef<int64_t> shape,
                    unsigned bitwidth);

} // namespace mosaic::layout

#endif // MOSAIC_DIALECT_MOSAICGPU_SMEMTRANSFORMS_H
