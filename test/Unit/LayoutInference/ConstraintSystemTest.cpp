//===- ConstraintSystemTest.cpp - Tests for the layout constraint solver --===//

#include "LayoutInference/ConstraintSystem.h"

#include "gtest/gtest.h"

#include <random>

using namespace mosaic;
using namespace mosaic::inference;
using layout::RegisterLayout;
using layout::SmemTransforms;

namespace mosaic::layout {
// Failure messages show layouts by name rather than as bytes.
void PrintTo(const RegisterLayout &layout, std::ostream *os) {
  *os << layout.str();
}
} // namespace mosaic::layout

namespace {

RegisterLayout wgmma() { return RegisterLayout::tiled(layout::wgmmaLayout()); }
RegisterLayout wgmmaRow() {
  return RegisterLayout::tiled(layout::wgmmaRowLayout());
}
Origin origin(const char *what) { return Origin{nullptr, what, -1, false}; }

const RegisterLayout &layoutOf(const Solution &solution, VarId var) {
  return std::get<RegisterLayout>(solution.values[var]);
}

TEST(ConstraintSystemTest, RelayoutPrefersTheProducerLayout) {
  ConstraintSystem system;
  VarId produced = system.addRegister({128, 64}, 32, origin("produced"));
  VarId used = system.addRegister({128, 64}, 32, origin("used"));
  system.fix(produced, wgmma(), origin("fixed"));
  system.relayout(produced, used, origin("use"));
  auto outcome = system.solve({});
  ASSERT_TRUE(std::holds_alternative<Solution>(outcome));
  const Solution &solution = std::get<Solution>(outcome);
  EXPECT_EQ(layoutOf(solution, used), wgmma());
  EXPECT_TRUE(system.violations(solution).empty());
}

TEST(ConstraintSystemTest, ReductionOfAnUndecidedValuePicksWgmma) {
  ConstraintSystem system;
  VarId src = system.addRegister({128, 64}, 32, origin("src"));
  VarId out = system.addRegister({128}, 32, origin("out"));
  system.notOfKind(src, RegisterLayout::Kind::Splat, origin("loaded"));
  system.notOfKind(src, RegisterLayout::Kind::Strided, origin("reduced"));
  system.reduce(out, src, {1}, origin("reduce"));
  auto outcome = system.solve({});
  ASSERT_TRUE(std::holds_alternative<Solution>(outcome));
  EXPECT_EQ(layoutOf(std::get<Solution>(outcome), src), wgmma());
  EXPECT_EQ(layoutOf(std::get<Solution>(outcome), out), wgmmaRow());
}

TEST(ConstraintSystemTest, ConflictingFixesNameBothOrigins) {
  ConstraintSystem system;
  VarId a = system.addRegister({128, 64}, 32, origin("a"));
  VarId b = system.addRegister({128, 64}, 32, origin("b"));
  system.equate(a, b, origin("same"));
  system.fix(a, wgmma(), origin("first"));
  system.fix(b, RegisterLayout::strided(2), origin("second"));
  auto outcome = system.solve({});
  ASSERT_TRUE(std::holds_alternative<Conflict>(outcome));
  const Conflict &conflict = std::get<Conflict>(outcome);
  EXPECT_EQ(conflict.kind, Conflict::Kind::Unsatisfiable);
  EXPECT_STREQ(conflict.primary.what, "second");
  ASSERT_EQ(conflict.notes.size(), 1u);
  EXPECT_STREQ(conflict.notes[0].first.what, "first");
  EXPECT_NE(conflict.message.find("WGMMA"), std::string::npos);
}

TEST(ConstraintSystemTest, MmaTilingPicksTheWidestSwizzleThatDivides) {
  ConstraintSystem system;
  VarId buffer = system.addSmem({128, 64}, 16, origin("buffer"));
  system.mmaTiling(buffer, false, origin("wgmma"));
  auto outcome = system.solve({});
  ASSERT_TRUE(std::holds_alternative<Solution>(outcome));
  EXPECT_EQ(std::get<SmemTransforms>(std::get<Solution>(outcome).values[0]),
            layout::mmaTransforms(128, 16, false));

  ConstraintSystem narrow;
  VarId small = narrow.addSmem({128, 32}, 16, origin("buffer"));
  narrow.mmaTiling(small, false, origin("wgmma"));
  auto narrowOutcome = narrow.solve({});
  ASSERT_TRUE(std::holds_alternative<Solution>(narrowOutcome));
  EXPECT_EQ(
      std::get<SmemTransforms>(std::get<Solution>(narrowOutcome).values[0]),
      layout::mmaTransforms(64, 16, false));
}

TEST(ConstraintSystemTest, BackjumpsOverUninvolvedValues) {
  // Many undecided values and one that nothing fits: chronological
  // backtracking would retry every combination of the others; the
  // conflict names none of them, so the search reports it at once.
  ConstraintSystem system;
  for (int i = 0; i < 12; ++i)
    system.addRegister({128, 64}, 32, origin("value"));
  VarId last = system.addRegister({128, 64}, 32, origin("last"));
  system.oneOf(last, {}, origin("nothing fits"));
  auto outcome = system.solve({/*fuel=*/50, {}});
  ASSERT_TRUE(std::holds_alternative<Conflict>(outcome));
  EXPECT_EQ(std::get<Conflict>(outcome).kind, Conflict::Kind::Unsatisfiable);
}

TEST(ConstraintSystemTest, FuelRunsOut) {
  // Every value feeds `last`, which only takes Strided(1): each must give
  // up its preferred layouts one after the other, more detours than the
  // fuel pays for. The search stops and says so; with enough fuel it
  // finds the solution.
  ConstraintSystem system;
  std::vector<VarId> values;
  for (int i = 0; i < 12; ++i)
    values.push_back(system.addRegister({128, 64}, 32, origin("value")));
  VarId last = system.addRegister({128, 64}, 32, origin("last"));
  system.oneOf(last, {RegisterLayout::strided(1)}, origin("only strided 1"));
  for (VarId value : values) {
    system.notOfKind(value, RegisterLayout::Kind::Splat, origin("loaded"));
    system.relayout(value, last, origin("used by last"));
  }
  auto outcome = system.solve({/*fuel=*/10, {}});
  ASSERT_TRUE(std::holds_alternative<Conflict>(outcome));
  EXPECT_EQ(std::get<Conflict>(outcome).kind, Conflict::Kind::OutOfFuel);
  auto solved = system.solve({});
  ASSERT_TRUE(std::holds_alternative<Solution>(solved));
  for (VarId value : values)
    EXPECT_EQ(std::get<RegisterLayout>(std::get<Solution>(solved).values[value]),
              RegisterLayout::strided(1));
}

// Fuel pays for detours only: a long chain decided on the first try needs
// none, and each rejected candidate costs one unit.
TEST(ConstraintSystemTest, FuelPaysForRejectionsOnly) {
  ConstraintSystem chain;
  VarId previous = chain.addRegister({128, 64}, 32, origin("loaded"));
  chain.notOfKind(previous, RegisterLayout::Kind::Splat, origin("loaded"));
  for (int i = 0; i < 1000; ++i) {
    VarId next = chain.addRegister({128, 64}, 32, origin("value"));
    chain.relayout(previous, next, origin("use"));
    previous = next;
  }
  auto outcome = chain.solve({/*fuel=*/1, {}});
  ASSERT_TRUE(std::holds_alternative<Solution>(outcome));
  EXPECT_EQ(std::get<Solution>(outcome).triesUsed, 1001);

  // The strided default is tried first and rejected: one unit.
  ConstraintSystem detour;
  VarId value = detour.addRegister({128, 64}, 32, origin("value"));
  detour.notOfKind(value, RegisterLayout::Kind::Strided, origin("reduced"));
  auto starved = detour.solve({/*fuel=*/1, {}});
  ASSERT_TRUE(std::holds_alternative<Conflict>(starved));
  EXPECT_EQ(std::get<Conflict>(starved).kind, Conflict::Kind::OutOfFuel);
  EXPECT_TRUE(std::holds_alternative<Solution>(detour.solve({/*fuel=*/2, {}})));
}

/// A broadcast of `source` (fixed to `layout`, or loaded when none) to
/// `result` along `axes`, as the pass builds it: the operand site is relaid
/// from the value and is the result reduced over the new axes.
struct Broadcast {
  ConstraintSystem system;
  VarId source, site, result;
};
Broadcast makeBroadcast(Shape sourceShape, std::optional<RegisterLayout> layout,
                        Shape resultShape, std::vector<int64_t> axes) {
  Broadcast b;
  b.source = b.system.addRegister(sourceShape, 32, origin("source"));
  if (layout)
    b.system.fix(b.source, *layout, origin("reduced"));
  else
    b.system.notOfKind(b.source, RegisterLayout::Kind::Splat, origin("loaded"));
  b.site = b.system.addRegister(sourceShape, 32, origin("operand"));
  b.result = b.system.addRegister(resultShape, 32, origin("result"));
  b.system.relayout(b.source, b.site, origin("use"));
  b.system.reduce(b.site, b.result, axes, origin("broadcast"));
  return b;
}

// Broadcasts of row and column vectors along both axes get the layout with
// the fewest registers per thread that reduces back to the operand's, the
// same on every run.
TEST(ConstraintSystemTest, BroadcastsPickTheCheapestLayout) {
  RegisterLayout col = RegisterLayout::tiled(layout::wgmmaColLayout());
  struct Case {
    const char *name;
    Broadcast broadcast;
    RegisterLayout expected;
  } cases[] = {
      // WGMMA_COL also suits (128, 64) but costs 2048 registers, not 64.
      {"column vector along rows", makeBroadcast({64}, col, {128, 64}, {0}),
       wgmma()},
      {"row vector along columns",
       makeBroadcast({128}, wgmmaRow(), {128, 64}, {1}), wgmma()},
      // Nothing unreplicated reduces to WGMMA_ROW over dim 0.
      {"row vector along rows",
       makeBroadcast({128}, wgmmaRow(), {64, 128}, {0}), wgmmaRow()},
      // A loaded vector is strided (1 register, not WGMMA_COL's 32) and so
      // is its broadcast along leading dims.
      {"loaded vector along rows",
       makeBroadcast({128}, std::nullopt, {64, 128}, {0}),
       RegisterLayout::strided(1)},
      // Strided values only broadcast along leading dims: the vector is
      // WGMMA_ROW (4 registers) and the result WGMMA.
      {"loaded vector along columns",
       makeBroadcast({128}, std::nullopt, {128, 64}, {1}), wgmma()},
  };
  for (const Case &c : cases) {
    auto outcome = c.broadcast.system.solve({});
    ASSERT_TRUE(std::holds_alternative<Solution>(outcome)) << c.name;
    const Solution &solution = std::get<Solution>(outcome);
    EXPECT_EQ(layoutOf(solution, c.broadcast.result), c.expected) << c.name;
    EXPECT_TRUE(c.broadcast.system.violations(solution).empty()) << c.name;
    auto again = c.broadcast.system.solve({});
    ASSERT_TRUE(std::holds_alternative<Solution>(again)) << c.name;
    EXPECT_EQ(std::get<Solution>(again).values, solution.values) << c.name;
  }
}

// A WGMMA value reduced over its rows into a loaded accumulator (the
// accumulator decided first): WGMMA_COL needs no relayout, the reduction of
// WGMMA_TRANSPOSED takes half the registers but a trip through shared
// memory. Relayouts count first.
TEST(ConstraintSystemTest, RelayoutsCountBeforeRegisters) {
  ConstraintSystem system;
  VarId accumulator = system.addRegister({64}, 32, origin("accumulator"));
  system.notOfKind(accumulator, RegisterLayout::Kind::Splat, origin("loaded"));
  VarId loaded = system.addRegister({128, 64}, 32, origin("loaded"));
  system.notOfKind(loaded, RegisterLayout::Kind::Splat, origin("loaded"));
  VarId castOperand = system.addRegister({128, 64}, 32, origin("cast operand"));
  VarId cast = system.addRegister({128, 64}, 32, origin("cast"));
  system.relayout(loaded, castOperand, origin("use"));
  system.relayout(castOperand, cast, origin("cast"));
  system.fix(cast, wgmma(), origin("cast to WGMMA"));
  VarId reduced = system.addRegister({128, 64}, 32, origin("reduced operand"));
  VarId result = system.addRegister({64}, 32, origin("reduction"));
  VarId accumulated = system.addRegister({64}, 32, origin("accumulator use"));
  system.relayout(accumulator, accumulated, origin("use"));
  system.relayout(cast, reduced, origin("use"));
  system.equate(accumulated, result, origin("accumulates"));
  system.reduce(result, reduced, {0}, origin("reduce"));
  auto outcome = system.solve({});
  ASSERT_TRUE(std::holds_alternative<Solution>(outcome));
  const Solution &solution = std::get<Solution>(outcome);
  EXPECT_EQ(layoutOf(solution, accumulator),
            RegisterLayout::tiled(layout::wgmmaColLayout()));
  EXPECT_EQ(layoutOf(solution, reduced), wgmma());
  AssignmentCost cost = system.cost(solution);
  EXPECT_EQ(cost.relayouts, 0);
  EXPECT_EQ(cost.relaidRegisters, 0);
  EXPECT_TRUE(system.violations(solution).empty());
}

// A row of weights broadcast over the rows of a loaded tile and multiplied
// with it (a norm's gamma): nothing is fixed, but the tile is decided first
// (WGMMA, for its row reduction), and the weights then take WGMMA_COL, whose
// broadcast is WGMMA, rather than the cheaper layout whose broadcast is
// WGMMA_TRANSPOSED and would need a relayout at the multiply.
TEST(ConstraintSystemTest, DecidedValuesSteerLaterOnesAwayFromRelayouts) {
  ConstraintSystem system;
  VarId tile = system.addRegister({128, 64}, 32, origin("tile"));
  system.notOfKind(tile, RegisterLayout::Kind::Splat, origin("loaded"));
  VarId reducedUse = system.addRegister({128, 64}, 32, origin("reduced use"));
  VarId rowSums = system.addRegister({128}, 32, origin("row sums"));
  system.relayout(tile, reducedUse, origin("use"));
  system.reduce(rowSums, reducedUse, {1}, origin("reduce"));
  VarId weights = system.addRegister({64}, 32, origin("weights"));
  system.notOfKind(weights, RegisterLayout::Kind::Splat, origin("loaded"));
  VarId broadcast = system.addRegister({128, 64}, 32, origin("broadcast"));
  system.reduce(weights, broadcast, {0}, origin("broadcast"));
  VarId tileUse = system.addRegister({128, 64}, 32, origin("tile use"));
  VarId broadcastUse =
      system.addRegister({128, 64}, 32, origin("broadcast use"));
  system.relayout(tile, tileUse, origin("use"));
  system.relayout(broadcast, broadcastUse, origin("use"));
  system.equate(tileUse, broadcastUse, origin("multiply"));
  auto outcome = system.solve({});
  ASSERT_TRUE(std::holds_alternative<Solution>(outcome));
  const Solution &solution = std::get<Solution>(outcome);
  EXPECT_EQ(layoutOf(solution, tile), wgmma());
  EXPECT_EQ(layoutOf(solution, weights),
            RegisterLayout::tiled(layout::wgmmaColLayout()));
  EXPECT_EQ(system.cost(solution).relayouts, 0);
  EXPECT_TRUE(system.violations(solution).empty());
}

// A loop-carried value whose init is a splat constant and whose yielded
// value comes from loaded data: Splat cannot be its layout, so the search
// does not try it first (and decides every class on its first try).
TEST(ConstraintSystemTest, LoopCarriedValuesDoNotTrySplatFirst) {
  ConstraintSystem system;
  VarId init = system.addRegister({128, 64}, 32, origin("splat constant"));
  system.fix(init, RegisterLayout::splat(), origin("constant"));
  VarId carried = system.addRegister({128, 64}, 32, origin("carried"));
  VarId yieldedUse = system.addRegister({128, 64}, 32, origin("yield"));
  system.equate(carried, yieldedUse, origin("loop"));
  system.relayout(init, carried, origin("init"));
  VarId loaded = system.addRegister({128, 64}, 32, origin("loaded"));
  system.notOfKind(loaded, RegisterLayout::Kind::Splat, origin("loads"));
  system.relayout(loaded, yieldedUse, origin("yielded"));
  auto outcome = system.solve({});
  ASSERT_TRUE(std::holds_alternative<Solution>(outcome));
  const Solution &solution = std::get<Solution>(outcome);
  EXPECT_FALSE(layoutOf(solution, carried).isSplat());
  // Three classes (the constant, the loop, the load), no rejection.
  EXPECT_EQ(solution.triesUsed, 3);
}

// A value that must convert to Splat but comes from loaded data: the notes
// say it cannot be Splat because of the load, and point at the load.
TEST(ConstraintSystemTest, SplatConflictsNameWhatIsNotUniform) {
  ConstraintSystem system;
  VarId loaded = system.addRegister({128}, 32, origin("loaded value"));
  system.notOfKind(loaded, RegisterLayout::Kind::Splat, origin("loads data"));
  VarId used = system.addRegister({128}, 32, origin("cast operand"));
  VarId cast = system.addRegister({128}, 32, origin("cast result"));
  system.relayout(loaded, used, origin("use"));
  system.fix(cast, RegisterLayout::splat(), origin("casts to Splat"));
  system.relayout(used, cast, origin("cast"));
  auto outcome = system.solve({});
  ASSERT_TRUE(std::holds_alternative<Conflict>(outcome));
  const Conflict &conflict = std::get<Conflict>(outcome);
  EXPECT_STREQ(conflict.primary.what, "cast operand");
  bool explained = false, pointed = false;
  for (const auto &[where, text] : conflict.notes) {
    if (llvm::StringRef(text).starts_with("Splat is ruled out by"))
      explained = text.find("loaded value is Strided(vector_size = 1), not "
                            "Splat, because loads data") != std::string::npos;
    pointed |= llvm::StringRef(where.what) == "loads data";
  }
  EXPECT_TRUE(explained);
  EXPECT_TRUE(pointed);
}

//===----------------------------------------------------------------------===//
// Property tests on random systems with a planted solution
//===----------------------------------------------------------------------===//

struct RandomSystem {
  ConstraintSystem system;
  std::vector<Assignment> planted;
};

/// A random system that the planted assignment satisfies: every constraint
/// is drawn at random and kept only if the planted values satisfy it.
RandomSystem makeRandomSystem(std::mt19937 &rng, int numVars) {
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  const std::vector<RegisterLayout> matrixLayouts = {
      RegisterLayout::splat(), RegisterLayout::strided(2),
      RegisterLayout::strided(1), wgmma(),
      RegisterLayout::tiled(layout::wgmmaTransposedLayout())};
  const std::vector<RegisterLayout> rowLayouts = {
      RegisterLayout::splat(), RegisterLayout::strided(1), wgmmaRow(),
      RegisterLayout::tiled(layout::wgmmaColLayout())};
  const std::vector<SmemTransforms> transforms = {
      SmemTransforms::none(), layout::mmaTransforms(128, 16, false),
      layout::mmaTransforms(64, 16, false)};

  RandomSystem result;
  std::vector<VarId> matrices, rows, buffers;
  for (int i = 0; i < numVars; ++i) {
    int kind = pick(0, 5);
    if (kind <= 2) {
      matrices.push_back(
          result.system.addRegister({128, 64}, 16, origin("matrix")));
      result.planted.push_back(
          matrixLayouts[pick(0, matrixLayouts.size() - 1)]);
    } else if (kind <= 4) {
      rows.push_back(result.system.addRegister({128}, 16, origin("row")));
      result.planted.push_back(rowLayouts[pick(0, rowLayouts.size() - 1)]);
    } else {
      buffers.push_back(result.system.addSmem({128, 64}, 16, origin("buffer")));
      result.planted.push_back(transforms[pick(0, transforms.size() - 1)]);
    }
  }
  auto reg = [&](VarId v) -> const RegisterLayout & {
    return std::get<RegisterLayout>(result.planted[v]);
  };
  auto any = [&](const std::vector<VarId> &vars) {
    return vars[pick(0, vars.size() - 1)];
  };
  Solution planted{result.planted, 0};
  for (int i = 0, e = numVars * 2; i < e; ++i) {
    // Draw one constraint; keep it when the planted values satisfy it.
    ConstraintSystem trial = result.system;
    int kind = pick(0, 6);
    if (kind == 0 && !matrices.empty()) {
      VarId a = any(matrices), b = any(matrices);
      trial.relayout(a, b, origin("relayout"));
    } else if (kind == 1 && !matrices.empty()) {
      VarId a = any(matrices), b = any(matrices);
      if (reg(a) == reg(b))
        trial.equate(a, b, origin("equal"));
    } else if (kind == 2 && !matrices.empty() && !rows.empty()) {
      trial.reduce(any(rows), any(matrices), {1}, origin("reduce"));
    } else if (kind == 3 && !matrices.empty()) {
      trial.notOfKind(any(matrices),
                      pick(0, 1) ? RegisterLayout::Kind::Splat
                                 : RegisterLayout::Kind::Strided,
                      origin("not of kind"));
    } else if (kind == 4 && !buffers.empty() && !matrices.empty()) {
      trial.transferable(any(buffers), any(matrices), origin("transfer"));
    } else if (kind == 5 && !buffers.empty()) {
      trial.mmaTiling(any(buffers), false, origin("mma"));
    } else if (kind == 6 && !rows.empty()) {
      VarId v = any(rows);
      trial.fix(v, result.planted[v], origin("fix"));
    }
    if (trial.violations(planted).empty())
      result.system = std::move(trial);
  }
  return result;
}

TEST(ConstraintSystemPropertyTest, SolutionsSatisfyEveryConstraint) {
  std::mt19937 rng(2026);
  int solved = 0;
  for (int round = 0; round < 300; ++round) {
    RandomSystem random = makeRandomSystem(rng, 3 + round % 10);
    auto outcome = random.system.solve({});
    // Every generated system has a solution (the planted one), and the
    // search never runs out of fuel on systems this small.
    ASSERT_TRUE(std::holds_alternative<Solution>(outcome))
        << "round " << round << ": " << std::get<Conflict>(outcome).message;
    const Solution &solution = std::get<Solution>(outcome);
    std::vector<std::string> violations = random.system.violations(solution);
    EXPECT_TRUE(violations.empty())
        << "round " << round << ": " << violations.front();
    ++solved;
  }
  EXPECT_EQ(solved, 300);
}

TEST(ConstraintSystemPropertyTest, SolvingIsDeterministic) {
  std::mt19937 rng(7);
  for (int round = 0; round < 100; ++round) {
    RandomSystem random = makeRandomSystem(rng, 8);
    auto first = random.system.solve({});
    auto second = random.system.solve({});
    ASSERT_EQ(first.index(), second.index());
    if (auto *solution = std::get_if<Solution>(&first)) {
      EXPECT_EQ(solution->values, std::get<Solution>(second).values);
    }
  }
}

} // namespace
