//===- LayoutsTest.cpp - Tests for the register layout algebra ------------===//

#include "mosaic/Dialect/MosaicGPU/Layouts.h"

#include "gtest/gtest.h"

#include <random>

using namespace mosaic::layout;
using PD = PartitionDim;

namespace {

Tiling makeTiling(std::vector<Shape> tiles) {
  return llvm::cantFail(Tiling::create(std::move(tiles)));
}

std::string errorOf(llvm::Error error) {
  return llvm::toString(std::move(error));
}

template <typename T> std::string errorOf(llvm::Expected<T> value) {
  if (value)
    return "";
  return llvm::toString(value.takeError());
}

TEST(TilingTest, TileShapeSplitsTrailingDims) {
  Shape tiled = llvm::cantFail(makeTiling({{64, 8}}).tileShape({3, 128, 64}));
  EXPECT_EQ(tiled, (Shape{3, 2, 8, 64, 8}));
  Shape wgmma = llvm::cantFail(
      makeTiling({{64, 8}, {16, 8}, {8, 8}, {1, 2}}).tileShape({128, 128}));
  EXPECT_EQ(wgmma, (Shape{2, 16, 4, 1, 2, 1, 8, 4, 1, 2}));
}

TEST(TilingTest, TileShapeRejectsRankAndDivisibility) {
  EXPECT_NE(errorOf(makeTiling({{64, 8}}).tileShape({8})).find("higher rank"),
            std::string::npos);
  EXPECT_EQ(errorOf(makeTiling({{8}, {3}}).tileShape({8})),
            "tile (3) does not divide shape (1, 8): 8 is not a multiple of 3");
}

TEST(TilingTest, CreateValidatesTiles) {
  EXPECT_EQ(errorOf(Tiling::create({{8}, {8, 8}})),
            "tile #1 (8, 8) has a higher rank than the tile before it (8); "
            "tile ranks must not increase");
  EXPECT_EQ(errorOf(Tiling::create({{8, 0}})),
            "tile #0 (8, 0) has a non-positive size");
  EXPECT_EQ(errorOf(Tiling::create({{8}, {}})), "tile #1 is empty");
}

TEST(TilingTest, CanonicalizeDropsRedundantTiles) {
  auto canonical = [](std::vector<Shape> tiles) {
    return makeTiling(std::move(tiles)).canonicalize().str();
  };
  EXPECT_EQ(canonical({{8, 8}, {8, 8}}), "(8, 8)");
  EXPECT_EQ(canonical({{8, 8}, {8}}), "(8, 8)");
  EXPECT_EQ(canonical({{8, 8}, {1, 4}}), "(8, 8)(4)");
  EXPECT_EQ(canonical({{8, 8}, {1, 1}}), "(8, 8)(1)");
  EXPECT_EQ(canonical({{8, 8}, {4, 8}, {4, 8}}), "(8, 8)(4, 8)");
  EXPECT_EQ(canonical({{8}, {8}, {8}, {2}}), "(8)(2)");
  EXPECT_EQ(canonical({{64, 8}, {16, 8}, {8, 8}, {1, 2}}),
            "(64, 8)(16, 8)(8, 8)(2)");
  // A tile that adds a size-1 dim but is not a suffix of the previous one
  // changes the shape, so it stays.
  EXPECT_EQ(canonical({{8, 8}, {8, 1}}), "(8, 8)(8, 1)");
}

TEST(TiledLayoutTest, NamedLayoutsAreCanonical) {
  for (const TiledLayout &layout :
       {wgmmaLayout(), wgmma8BitLayout(), wgmmaTransposedLayout(),
        wgmmaRowLayout(), wgmmaColLayout()})
    EXPECT_EQ(layout.canonicalize(), layout) << layout.str();
}

TEST(TiledLayoutTest, WgmmaShapes) {
  TiledLayout wgmma = wgmmaLayout();
  EXPECT_EQ(Shape(wgmma.tiledTilingShape()), (Shape{4, 1, 2, 1, 8, 4, 2}));
  EXPECT_EQ(wgmma.vectorLength(), 2);
  EXPECT_EQ(llvm::cantFail(wgmma.registersShape({128, 128})),
            (Shape{2, 16, 1, 1, 2, 1, 1, 1, 1}));
  EXPECT_EQ(llvm::cantFail(wgmma.registersShape({2, 128, 64})),
            (Shape{2, 2, 8, 1, 1, 2, 1, 1, 1, 1}));
  EXPECT_FALSE(errorOf(wgmma.registersShape({64, 4})).empty());
  EXPECT_EQ(Shape(wgmma8BitLayout().tiledTilingShape()),
            (Shape{4, 1, 2, 1, 8, 4, 4}));
  EXPECT_EQ(Shape(wgmmaTransposedLayout().tiledTilingShape()),
            (Shape{4, 1, 2, 1, 4, 4, 1, 2, 2, 1}));
  EXPECT_EQ(Shape(wgmmaRowLayout().tiledTilingShape()), (Shape{4, 2, 8, 1}));
  EXPECT_EQ(Shape(wgmmaColLayout().tiledTilingShape()), (Shape{4, 2}));
}

TEST(TiledLayoutTest, CanonicalizeRenumbersDims) {
  TiledLayout old = llvm::cantFail(TiledLayout::create(
      makeTiling({{64, 8}, {16, 8}, {8, 8}, {1, 2}}), {PD::index(-8)},
      {PD::index(-4), PD::index(-3)}, -1, /*requireCanonical=*/false));
  EXPECT_EQ(old.canonicalize(), wgmmaLayout());

  TiledLayout padded = llvm::cantFail(TiledLayout::create(
      makeTiling({{128}, {32}, {32}, {1}, {1}}), {PD::index(-5)},
      {PD::index(-3)}, -1, /*requireCanonical=*/false));
  TiledLayout expected = llvm::cantFail(TiledLayout::create(
      makeTiling({{128}, {32}, {1}}), {PD::index(-3)}, {PD::index(-2)}, -1));
  EXPECT_EQ(padded.canonicalize(), expected);
}

TEST(TiledLayoutTest, CreateReportsEachRule) {
  Tiling tiling = makeTiling({{64, 8}, {16, 8}, {8, 8}, {2}});
  auto create = [&](llvm::SmallVector<PD> warps, llvm::SmallVector<PD> lanes,
                    int64_t vector) {
    return errorOf(TiledLayout::create(tiling, warps, lanes, vector));
  };
  EXPECT_NE(create({PD::index(-7)}, {PD::index(-3), PD::index(-2)}, -2)
                .find("already partitioned"),
            std::string::npos);
  EXPECT_NE(create({PD::index(-7)}, {PD::index(-3), PD::index(-2)}, 0)
                .find("out of range"),
            std::string::npos);
  EXPECT_NE(create({PD::index(-8)}, {PD::index(-3), PD::index(-2)}, -1)
                .find("out of range"),
            std::string::npos);
  EXPECT_NE(create({PD::index(-6)}, {PD::index(-3), PD::index(-2)}, -1)
                .find("span 1 warps"),
            std::string::npos);
  EXPECT_NE(create({PD::index(-7)}, {PD::index(-3)}, -1).find("span 8 lanes"),
            std::string::npos);
  EXPECT_EQ(create({PD::replicated(4)}, {PD::index(-3), PD::index(-2)}, -1),
            "");
  EXPECT_NE(
      create({PD::index(-7), PD::index(-6)}, {PD::index(-3), PD::index(-2)}, -1)
          .find("not canonical"),
      std::string::npos);
  EXPECT_NE(errorOf(TiledLayout::create(makeTiling({}), {}, {}, -1))
                .find("at least one tile"),
            std::string::npos);
}

TEST(TiledLayoutTest, ReductionsGiveRowAndColumnLayouts) {
  EXPECT_EQ(llvm::cantFail(wgmmaLayout().removeDimension(1)), wgmmaRowLayout());
  EXPECT_EQ(llvm::cantFail(wgmmaLayout().removeDimension(0)), wgmmaColLayout());
  RegisterLayout wgmma = RegisterLayout::tiled(wgmmaLayout());
  EXPECT_EQ(llvm::cantFail(wgmma.reduce({1}, {128, 64})),
            RegisterLayout::tiled(wgmmaRowLayout()));
  // A leading dim the tiling does not cover reduces for free.
  EXPECT_EQ(llvm::cantFail(wgmma.reduce({0}, {2, 128, 64})), wgmma);
  EXPECT_EQ(llvm::cantFail(wgmma.reduce({2}, {2, 128, 64})),
            RegisterLayout::tiled(wgmmaRowLayout()));
  EXPECT_FALSE(
      errorOf(RegisterLayout::strided(2).reduce({1}, {4, 256})).empty());
  EXPECT_EQ(llvm::cantFail(RegisterLayout::strided(2).reduce({0}, {4, 256})),
            RegisterLayout::strided(2));
  EXPECT_FALSE(
      errorOf(RegisterLayout::strided(2).reduce({0}, {4, 128})).empty());
  EXPECT_EQ(llvm::cantFail(RegisterLayout::splat().reduce({0}, {4, 4})),
            RegisterLayout::splat());
  EXPECT_FALSE(errorOf(wgmmaRowLayout().removeDimension(0)).empty());
}

// The wgmma accumulator fragment (PTX ISA, "wgmma D matrix fragment"): thread
// t of warp w holds rows 16w + (t % 32) / 4 (+ 8) and columns 8j + 2 (t % 4)
// (+ 1).
TEST(TiledLayoutTest, WgmmaElementOwnership) {
  TiledLayout wgmma = wgmmaLayout();
  Shape shape = {64, 16};
  Shape registers = llvm::cantFail(wgmma.registersShape(shape));
  int64_t numRegisters = 1;
  for (int64_t dim : registers)
    numRegisters *= dim;
  ASSERT_EQ(numRegisters, 4);
  std::vector<int> seen(64 * 16, 0);
  for (int64_t thread = 0; thread < 128; ++thread) {
    int64_t warp = thread / 32, lane = thread % 32;
    for (int64_t reg = 0; reg < numRegisters; ++reg)
      for (int64_t v = 0; v < 2; ++v) {
        Shape index = llvm::cantFail(wgmma.elementIndex(shape, thread, reg, v));
        ASSERT_EQ(index.size(), 2u);
        EXPECT_EQ(index[0] % 8, lane / 4);
        EXPECT_EQ(index[0] / 16, warp);
        EXPECT_EQ(index[1] % 8, 2 * (lane % 4) + v);
        ++seen[index[0] * 16 + index[1]];
      }
  }
  EXPECT_TRUE(llvm::all_of(seen, [](int count) { return count == 1; }));
  EXPECT_FALSE(errorOf(wgmma.elementIndex(shape, 128, 0, 0)).empty());
}

// The rows layout: warp w holds rows w, w + 4, ... of each 4-row band (a
// row per warp), its lanes split a row into 16-byte chunks, and every
// element is held exactly once.
TEST(TiledLayoutTest, RowsLayoutOwnership) {
  std::optional<RegisterLayout> rows = rowsLayoutFor({8, 256}, 32);
  ASSERT_TRUE(rows.has_value());
  ASSERT_TRUE(rows->isTiled());
  EXPECT_EQ(rows->tiledLayout().vectorLength(), 4);
  EXPECT_EQ(rows->tiledLayout().replication(), 1);
  Shape shape = {8, 256};
  std::optional<int64_t> perThread = rows->elementsPerThread(shape);
  ASSERT_EQ(perThread, 16);
  std::vector<int> seen(8 * 256, 0);
  for (int64_t thread = 0; thread < 128; ++thread) {
    int64_t warp = thread / 32, lane = thread % 32;
    for (int64_t reg = 0; reg < *perThread / 4; ++reg)
      for (int64_t v = 0; v < 4; ++v) {
        Shape index = llvm::cantFail(rows->elementIndex(shape, thread, reg, v));
        EXPECT_EQ(index[0] % 4, warp);
        EXPECT_EQ(index[1] % 128, 4 * lane + v);
        ++seen[index[0] * 256 + index[1]];
      }
  }
  EXPECT_TRUE(llvm::all_of(seen, [](int count) { return count == 1; }));
}

// Narrow rows share a warp: 64 f32 columns are 16 chunks, so 16 lanes per
// row and 8 rows per warpgroup step; bf16 takes 8 elements per chunk.
TEST(TiledLayoutTest, RowsLayoutShapes) {
  std::optional<RegisterLayout> narrow = rowsLayoutFor({8, 64}, 32);
  ASSERT_TRUE(narrow.has_value());
  EXPECT_EQ(narrow->elementsPerThread({8, 64}), 4);
  EXPECT_EQ(Shape(narrow->tiledLayout().baseTileShape()), Shape({8, 64}));
  std::optional<RegisterLayout> half = rowsLayoutFor({16, 512}, 16);
  ASSERT_TRUE(half.has_value());
  EXPECT_EQ(half->tiledLayout().vectorLength(), 8);
  EXPECT_EQ(Shape(half->tiledLayout().baseTileShape()), Shape({4, 256}));
  // Reducing a row leaves one value per row, held by the row's 32 lanes.
  llvm::Expected<RegisterLayout> reduced = half->reduce({1}, {16, 512});
  ASSERT_TRUE(static_cast<bool>(reduced)) << errorOf(reduced.takeError());
  EXPECT_EQ(reduced->elementsPerThread({16}), 4);
  // No rows layout: too few rows for a warpgroup step, or not a matrix.
  EXPECT_FALSE(rowsLayoutFor({2, 128}, 32).has_value());
  EXPECT_FALSE(rowsLayoutFor({512}, 32).has_value());
  EXPECT_FALSE(errorOf(rowsLayout(3, 4)).empty());
  EXPECT_FALSE(errorOf(rowsLayout(64, 4)).empty());
  EXPECT_FALSE(errorOf(rowsLayout(32, 0)).empty());
}

TEST(RegisterLayoutTest, RelayoutKinds) {
  RegisterLayout wgmma = RegisterLayout::tiled(wgmmaLayout());
  RegisterLayout transposed = RegisterLayout::tiled(wgmmaTransposedLayout());
  EXPECT_EQ(relayoutKind(wgmma, wgmma, 32), RelayoutKind::Free);
  EXPECT_EQ(relayoutKind(RegisterLayout::splat(), transposed, 32),
            RelayoutKind::Free);
  EXPECT_EQ(relayoutKind(wgmma, transposed, 32),
            RelayoutKind::ThroughSharedMemory);
  EXPECT_EQ(relayoutKind(transposed, wgmma, 16),
            RelayoutKind::ThroughSharedMemory);
  EXPECT_EQ(relayoutKind(wgmma, transposed, 8), RelayoutKind::Illegal);
  EXPECT_EQ(relayoutKind(wgmma, RegisterLayout::strided(4), 32),
            RelayoutKind::Illegal);
}

TEST(RegisterLayoutTest, RelayoutsAndDefaults) {
  RegisterLayout wgmma = RegisterLayout::tiled(wgmmaLayout());
  RegisterLayout transposed = RegisterLayout::tiled(wgmmaTransposedLayout());
  RegisterLayout strided = RegisterLayout::strided(4);
  EXPECT_TRUE(isLegalRelayout(RegisterLayout::splat(), wgmma, 32));
  EXPECT_TRUE(isLegalRelayout(wgmma, transposed, 16));
  EXPECT_FALSE(isLegalRelayout(wgmma, transposed, 8));
  EXPECT_FALSE(isLegalRelayout(wgmma, strided, 32));
  EXPECT_FALSE(isLegalRelayout(strided, RegisterLayout::splat(), 32));
  // 16-byte chunks where the shape allows them.
  EXPECT_EQ(defaultStridedVectorSize({128, 64}, 16), 8);
  EXPECT_EQ(defaultStridedVectorSize({128, 64}, 32), 4);
  EXPECT_EQ(defaultStridedVectorSize({384}, 32), 1);
  EXPECT_EQ(defaultStridedVectorSize({128}, 32), 1);
  EXPECT_EQ(defaultStridedVectorSize({64}, 32), std::nullopt);
  EXPECT_EQ(defaultStridedVectorSize({256}, 4), 2);
  EXPECT_EQ(defaultStridedVectorSize({128}, 4), std::nullopt);
  EXPECT_TRUE(wgmma.reshapes({2, 64, 8}, {2, 64, 8}));
  EXPECT_TRUE(wgmma.reshapes({2, 64, 64}, {128, 64}));
  EXPECT_FALSE(wgmma.reshapes({128, 64}, {64, 128}));
  EXPECT_FALSE(wgmma.reshapes({2, 32, 64}, {64, 64}));
  EXPECT_EQ(wgmma.str(), "WGMMA");
}

// Registers per thread, then replication: WGMMA_COL holds a 128x64 f32
// vector in 32x the registers of WGMMA; narrow elements share 32-bit
// registers, where replication breaks the tie.
TEST(RegisterLayoutTest, Cost) {
  RegisterLayout wgmma = RegisterLayout::tiled(wgmmaLayout());
  RegisterLayout row = RegisterLayout::tiled(wgmmaRowLayout());
  RegisterLayout col = RegisterLayout::tiled(wgmmaColLayout());
  EXPECT_EQ(wgmmaLayout().replication(), 1);
  EXPECT_EQ(wgmmaRowLayout().replication(), 4);
  EXPECT_EQ(wgmmaColLayout().replication(), 32);

  Shape matrix = {128, 64};
  EXPECT_EQ(wgmma.cost(matrix, 32), (RegisterCost{64, 1}));
  EXPECT_EQ(RegisterLayout::strided(4).cost(matrix, 32), (RegisterCost{64, 1}));
  EXPECT_EQ(row.cost(matrix, 32), (RegisterCost{256, 4}));
  EXPECT_EQ(col.cost(matrix, 32), (RegisterCost{2048, 32}));
  EXPECT_EQ(RegisterLayout::splat().cost(matrix, 32), (RegisterCost{1, 128}));
  EXPECT_EQ(RegisterLayout::strided(8).cost(matrix, 16), (RegisterCost{32, 1}));
  EXPECT_EQ(col.elementsPerThread({64}), 16);
  EXPECT_EQ(wgmma.cost({128}, 32), std::nullopt);
  EXPECT_EQ(RegisterLayout::strided(4).cost({128}, 32), std::nullopt);

  // 128 bytes: one element of a strided vector and four of a WGMMA_ROW one
  // both fit one register; the unreplicated layout is cheaper.
  std::optional<RegisterCost> strided =
      RegisterLayout::strided(1).cost({128}, 8);
  std::optional<RegisterCost> replicated = row.cost({128}, 8);
  ASSERT_TRUE(strided && replicated);
  EXPECT_EQ(strided->registersPerThread, replicated->registersPerThread);
  EXPECT_TRUE(*strided < *replicated);
  EXPECT_TRUE(*wgmma.cost(matrix, 32) < *row.cost(matrix, 32));
  EXPECT_TRUE(*row.cost(matrix, 32) < *col.cost(matrix, 32));
}

// Every element of a strided vector is held by exactly one (thread,
// register, lane), in 128 * vec-element rows.
TEST(StridedLayoutTest, ElementOwnership) {
  RegisterLayout strided = RegisterLayout::strided(4);
  Shape shape = {16, 64};
  std::vector<int> seen(16 * 64, 0);
  for (int64_t thread = 0; thread < 128; ++thread)
    for (int64_t reg = 0; reg < 2; ++reg)
      for (int64_t v = 0; v < 4; ++v) {
        Shape index =
            llvm::cantFail(strided.elementIndex(shape, thread, reg, v));
        int64_t flat = index[0] * 64 + index[1];
        EXPECT_EQ(flat, reg * 512 + thread * 4 + v);
        ++seen[flat];
      }
  EXPECT_TRUE(llvm::all_of(seen, [](int count) { return count == 1; }));
  EXPECT_FALSE(errorOf(strided.elementIndex(shape, 0, 2, 0)).empty());
  EXPECT_EQ(
      llvm::cantFail(RegisterLayout::splat().elementIndex(shape, 5, 0, 0)),
      (Shape{0, 0}));
}

TEST(StridedLayoutTest, ElementCountRule) {
  EXPECT_EQ(errorOf(checkStridedLayout({128, 64}, 8)), "");
  EXPECT_EQ(errorOf(checkStridedLayout({128, 8}, 16)),
            "shape (128, 8) has 1024 elements, which is not a multiple of 2048 "
            "(128 threads x vector size 16)");
  EXPECT_FALSE(errorOf(checkStridedLayout({128}, 0)).empty());
}

// Property: for randomly generated layouts that pass validation (canonical or
// not), canonicalization is idempotent, yields a layout create() accepts as
// canonical, and both layouts give every thread the same number of elements,
// which together cover the vector exactly (up to replication).
TEST(TiledLayoutPropertyTest, RandomLayouts) {
  std::mt19937 rng(1234);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int64_t powers[] = {1, 2, 4, 8, 16, 32, 64};
  int valid = 0;
  for (int attempt = 0; attempt < 200000 && valid < 300; ++attempt) {
    int64_t rank = pick(1, 2);
    Shape base;
    for (int64_t i = 0; i < rank; ++i)
      base.push_back(powers[pick(2, 6)]);
    std::vector<Shape> tiles = {base};
    Shape previous = base;
    for (int64_t t = 0, n = pick(0, 4); t < n; ++t) {
      Shape tile(previous.end() - pick(1, previous.size()), previous.end());
      for (int64_t &size : tile)
        size = std::max<int64_t>(1, size >> pick(0, 3));
      tiles.push_back(tile);
      previous = tile;
    }
    llvm::Expected<Tiling> tiling = Tiling::create(tiles);
    if (!tiling) {
      llvm::consumeError(tiling.takeError());
      continue;
    }
    llvm::Expected<Shape> tiledBase = tiling->tileShape(base);
    if (!tiledBase) {
      llvm::consumeError(tiledBase.takeError());
      continue;
    }
    int64_t tiledRank = tiledBase->size() - base.size();
    auto randomDims = [&](int64_t count) {
      llvm::SmallVector<PD> dims;
      for (int64_t i = 0; i < count; ++i)
        dims.push_back(pick(0, 5) == 0 ? PD::replicated(powers[pick(1, 3)])
                                       : PD::index(-pick(1, tiledRank)));
      return dims;
    };
    llvm::Expected<TiledLayout> layout = TiledLayout::create(
        *tiling, randomDims(pick(1, 2)), randomDims(pick(1, 3)),
        -pick(1, tiledRank), /*requireCanonical=*/false);
    if (!layout) {
      llvm::consumeError(layout.takeError());
      continue;
    }
    ++valid;

    TiledLayout canonical = layout->canonicalize();
    EXPECT_EQ(canonical.canonicalize(), canonical) << layout->str();
    llvm::Expected<TiledLayout> recreated = TiledLayout::create(
        canonical.tiling(), llvm::SmallVector<PD>(canonical.warpDims()),
        llvm::SmallVector<PD>(canonical.laneDims()), canonical.vectorDim());
    EXPECT_TRUE(static_cast<bool>(recreated))
        << layout->str() << ": " << errorOf(std::move(recreated));
    if (recreated)
      llvm::consumeError(recreated.takeError());

    Shape shape = base;
    shape[0] *= 2;
    auto elementsPerThread = [&](const TiledLayout &l) {
      Shape registers = llvm::cantFail(l.registersShape(shape));
      int64_t count = l.vectorLength();
      for (int64_t dim : registers)
        count *= dim;
      return count;
    };
    int64_t elements = 1;
    for (int64_t dim : shape)
      elements *= dim;
    EXPECT_EQ(elementsPerThread(*layout), elementsPerThread(canonical));
    EXPECT_EQ(elementsPerThread(*layout) * kThreadsPerWarpgroup,
              elements * layout->replication())
        << layout->str();
    // The cost model counts the same elements without building the
    // register array.
    EXPECT_EQ(RegisterLayout::tiled(*layout).elementsPerThread(shape),
              elementsPerThread(*layout))
        << layout->str();
  }
  EXPECT_GE(valid, 100) << "the generator found too few valid layouts";
}

} // namespace
