//===- ConstraintSystem.cpp - Layout constraints and their solver ---------===//
//
// Solving proceeds in four steps:
//  1. Equalities merge variables into classes (union-find); a class has one
//     value, which must be valid for every member's shape.
//  2. Classes with a fixed value are checked against each other first, so
//     that two requirements that cannot both hold are reported with both of
//     their origins. Which classes can never be Splat (they come from
//     loaded data, an iota or a non-uniform constant) is noted for
//     diagnostics.
//  3. Hints propagate from fixed values and preferences along the
//     constraints (linear: each class keeps a few), counting the relayouts
//     through shared memory on their way from a fixed value.
//  4. A depth-first search assigns the remaining classes in program order.
//     Each class tries the values its already-assigned neighbours imply
//     first, then its other candidates (hints, layouts that reduce to a
//     decided broadcast operand, the defaults), fewest implied relayouts
//     first (by the static hints and by those each decision passes on a
//     few steps), then cheapest in registers, then Splat,
//     then the rest of the domain, cheapest first; each rejected candidate
//     and each backtrack costs one unit of fuel. A class that runs out of
//     candidates jumps back to the latest class among those that ruled
//     them out (conflict-directed backjumping), not merely the previous
//     one.
//
//===----------------------------------------------------------------------===//

#include "ConstraintSystem.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

using llvm::ArrayRef;

namespace mosaic::inference {

using layout::RegisterCost;
using layout::TiledLayout;

namespace {

/// The transforms of the transposed buffer: its tile's dims are swapped.
SmemTransforms transposedTiles(SmemTransforms transforms) {
  if (transforms.tile)
    std::reverse(transforms.tile->begin(), transforms.tile->end());
  return transforms;
}

} // namespace

std::string describeValue(const Assignment &value) {
  if (auto *layout = std::get_if<RegisterLayout>(&value))
    return layout->str();
  return std::get<SmemTransforms>(value).str();
}

//===----------------------------------------------------------------------===//
// Building
//===----------------------------------------------------------------------===//

VarId ConstraintSystem::addRegister(Shape shape, unsigned bitwidth,
                                    Origin origin) {
  variables_.push_back(
      {VarKind::Register, std::move(shape), bitwidth, std::move(origin)});
  return variables_.size() - 1;
}

VarId ConstraintSystem::addSmem(Shape shape, unsigned bitwidth, Origin origin,
                                bool transposed) {
  variables_.push_back(
      {VarKind::Smem, std::move(shape), bitwidth, std::move(origin)});
  variables_.back().transposed = transposed;
  return variables_.size() - 1;
}

void ConstraintSystem::equate(VarId a, VarId b, Origin why) {
  equalities_.push_back({a, b, std::move(why)});
}

void ConstraintSystem::add(Constraint::Kind kind, Origin why) {
  constraints_.push_back({std::move(kind), std::move(why)});
}

void ConstraintSystem::fix(VarId var, Assignment value, Origin why) {
  add(Constraint::Fix{var, std::move(value)}, why);
}

void ConstraintSystem::oneOf(VarId var, std::vector<Assignment> candidates,
                             Origin why) {
  add(Constraint::OneOf{var, std::move(candidates)}, why);
}

void ConstraintSystem::relayout(VarId src, VarId dst, Origin why) {
  add(Constraint::Relayout{src, dst}, why);
}

void ConstraintSystem::notOfKind(VarId var, RegisterLayout::Kind kind,
                                 Origin why) {
  add(Constraint::NotOfKind{var, kind}, why);
}

void ConstraintSystem::reduce(VarId out, VarId src, ArrayRef<int64_t> axes,
                              Origin why) {
  add(Constraint::Reduce{out, src, Shape(axes)}, why);
}

void ConstraintSystem::reshape(VarId dst, VarId src, Origin why) {
  add(Constraint::Reshape{dst, src}, why);
}

void ConstraintSystem::alignedSlice(VarId var, ArrayRef<int64_t> offsets,
                                    Origin why) {
  add(Constraint::AlignedSlice{var, Shape(offsets)}, why);
}

void ConstraintSystem::transferable(VarId smem, VarId reg, Origin why) {
  add(Constraint::Transferable{smem, reg}, why);
}

void ConstraintSystem::divides(VarId smem, ArrayRef<int64_t> multiples,
                               Origin why) {
  add(Constraint::Divides{smem, Shape(multiples)}, why);
}

void ConstraintSystem::mmaTiling(VarId smem, bool transposed, Origin why) {
  add(Constraint::MmaTiling{smem, transposed}, why);
}

void ConstraintSystem::transposedSmem(VarId dst, VarId src, Origin why) {
  add(Constraint::TransposedSmem{dst, src}, why);
}

bool ConstraintSystem::holds(
    const Constraint &constraint,
    llvm::function_ref<const Assignment &(VarId)> valueOf) const {
  auto var = [&](VarId id) -> const Variable & { return variables_[id]; };
  auto reg = [&](VarId id) -> const RegisterLayout & {
    return std::get<RegisterLayout>(valueOf(id));
  };
  auto smem = [&](VarId id) -> const SmemTransforms & {
    return std::get<SmemTransforms>(valueOf(id));
  };
  return std::visit(
      llvm::makeVisitor(
          [&](const Constraint::Fix &fix) {
            return valueOf(fix.var) == fix.value;
          },
          [&](const Constraint::OneOf &oneOf) {
            return llvm::is_contained(oneOf.candidates, valueOf(oneOf.var));
          },
          [&](const Constraint::Relayout &relayout) {
            return layout::isLegalRelayout(reg(relayout.src), reg(relayout.dst),
                                           var(relayout.src).bitwidth);
          },
          [&](const Constraint::NotOfKind &notOfKind) {
            return reg(notOfKind.var).kind() != notOfKind.excluded;
          },
          [&](const Constraint::Reduce &reduce) {
            llvm::Expected<RegisterLayout> reduced =
                reg(reduce.src).reduce(reduce.axes, var(reduce.src).shape);
            if (!reduced) {
              llvm::consumeError(reduced.takeError());
              return false;
            }
            return *reduced == reg(reduce.out);
          },
          [&](const Constraint::Reshape &reshape) {
            return reg(reshape.dst) == reg(reshape.src) &&
                   reg(reshape.src)
                       .reshapes(var(reshape.src).shape,
                                 var(reshape.dst).shape);
          },
          [&](const Constraint::AlignedSlice &slice) {
            const RegisterLayout &layout = reg(slice.var);
            if (layout.isSplat())
              return true;
            if (layout.isStrided())
              return false;
            ArrayRef<int64_t> base = layout.tiledLayout().baseTileShape();
            ArrayRef<int64_t> offsets = slice.offsets;
            for (size_t i = 1; i <= std::min(base.size(), offsets.size()); ++i)
              if (offsets[offsets.size() - i] % base[base.size() - i] != 0)
                return false;
            return true;
          },
          [&](const Constraint::Transferable &transfer) {
            const Variable &regVar = var(transfer.reg);
            return layout::isTransferable(smem(transfer.smem),
                                          reg(transfer.reg), regVar.shape,
                                          regVar.bitwidth);
          },
          [&](const Constraint::Divides &divides) {
            return layout::tilingDivides(smem(divides.smem), divides.multiples);
          },
          [&](const Constraint::MmaTiling &tiling) {
            return layout::isValidMmaTiling(smem(tiling.smem),
                                            var(tiling.smem).bitwidth,
                                            tiling.transposed);
          },
          [&](const Constraint::TransposedSmem &transpose) {
            return smem(transpose.dst) == transposedTiles(smem(transpose.src));
          }),
      constraint.kind);
}

std::vector<std::string>
ConstraintSystem::violations(const Solution &solution) const {
  std::vector<std::string> result;
  if (solution.values.size() != variables_.size())
    return {"the solution has a value for " +
            std::to_string(solution.values.size()) + " of " +
            std::to_string(variables_.size()) + " variables"};
  auto valueOf = [&](VarId v) -> const Assignment & {
    return solution.values[v];
  };
  for (auto [id, variable] : llvm::enumerate(variables_)) {
    const Assignment &value = solution.values[id];
    llvm::Error error = llvm::Error::success();
    if (auto *layout = std::get_if<RegisterLayout>(&value))
      error = variable.kind == VarKind::Register
                  ? layout->checkShape(variable.shape)
                  : llvm::createStringError(llvm::inconvertibleErrorCode(),
                                            "a buffer has a register layout");
    else
      error = variable.kind == VarKind::Smem
                  ? layout::checkSmemTransforms(
                        std::get<SmemTransforms>(value), variable.shape,
                        variable.bitwidth, variable.transposed ? -2 : -1)
                  : llvm::createStringError(llvm::inconvertibleErrorCode(),
                                            "a register value has transforms");
    if (error)
      result.push_back(llvm::formatv("variable {0}: {1}", id,
                                     llvm::toString(std::move(error))));
  }
  for (const Equality &equality : equalities_)
    if (!(solution.values[equality.a] == solution.values[equality.b]))
      result.push_back(llvm::formatv("variables {0} and {1} differ", equality.a,
                                     equality.b));
  for (auto [index, constraint] : llvm::enumerate(constraints_))
    if (!holds(constraint, valueOf))
      result.push_back(llvm::formatv("constraint {0} ({1}) is violated", index,
                                     constraint.origin.what));
  return result;
}

AssignmentCost ConstraintSystem::cost(const Solution &solution) const {
  AssignmentCost result;
  auto registersOf = [&](VarId id) -> int64_t {
    const Variable &v = variables_[id];
    const auto *layout = std::get_if<RegisterLayout>(&solution.values[id]);
    if (!layout)
      return 0;
    std::optional<layout::RegisterCost> cost =
        layout->cost(v.shape, v.bitwidth);
    return cost ? cost->registersPerThread : 0;
  };
  for (auto [id, variable] : llvm::enumerate(variables_))
    if (variable.kind == VarKind::Register)
      result.registers += registersOf(id);
  for (const Constraint &constraint : constraints_) {
    const auto *relayout = std::get_if<Constraint::Relayout>(&constraint.kind);
    if (!relayout)
      continue;
    const auto &from = std::get<RegisterLayout>(solution.values[relayout->src]);
    const auto &to = std::get<RegisterLayout>(solution.values[relayout->dst]);
    if (layout::relayoutKind(from, to, variables_[relayout->src].bitwidth) !=
        layout::RelayoutKind::ThroughSharedMemory)
      continue;
    ++result.relayouts;
    result.relaidRegisters += registersOf(relayout->dst);
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Solving
//===----------------------------------------------------------------------===//

namespace {

struct Class {
  VarKind kind;
  llvm::SmallVector<VarId, 4> members;
  llvm::SmallVector<unsigned, 4> constraints;
  /// The value a Fix constraint pins, and which constraint.
  std::optional<Assignment> fixed;
  int fixedBy = -1;
};

Assignment sameValue(const Assignment &value) { return value; }
Assignment transposedValue(const Assignment &value) {
  return transposedTiles(std::get<SmemTransforms>(value));
}

/// The rows layout for a vector of `shape` when WGMMA does not fit it (fewer
/// than 64 rows): where both fit, WGMMA reduces rows with fewer shuffles
/// and its reductions replicate less.
std::optional<RegisterLayout> rowsLayoutWhereWgmmaFails(ArrayRef<int64_t> shape,
                                                        unsigned bitwidth) {
  if (layout::namedLayout(layout::NamedLayout::Wgmma).fitsShape(shape))
    return std::nullopt;
  return layout::rowsLayoutFor(shape, bitwidth);
}

/// The layouts a value laid out as `layout` converts to through shared
/// memory (WGMMA <-> WGMMA_TRANSPOSED).
llvm::SmallVector<RegisterLayout, 1>
relaidThroughSharedMemory(const RegisterLayout &layout, unsigned bitwidth) {
  llvm::SmallVector<RegisterLayout, 1> result;
  for (layout::NamedLayout named :
       {layout::NamedLayout::Wgmma, layout::NamedLayout::WgmmaTransposed})
    if (const RegisterLayout &other = layout::namedLayout(named);
        layout::relayoutKind(layout, other, bitwidth) ==
        layout::RelayoutKind::ThroughSharedMemory)
      result.push_back(other);
  return result;
}

/// The layouts a broadcast of a value laid out as `small` (not a splat) to
/// `shape` may have, before checking which of them reduce to it: a strided
/// value only broadcasts to itself, a tiled one to itself, a named Hopper
/// layout or the rows layout of the shape.
std::vector<RegisterLayout> broadcastCandidates(const RegisterLayout &small,
                                                ArrayRef<int64_t> shape,
                                                unsigned bitwidth) {
  std::vector<RegisterLayout> result = {small};
  if (small.isTiled())
    if (std::optional<RegisterLayout> rows =
            rowsLayoutWhereWgmmaFails(shape, bitwidth);
        rows && *rows != small)
      result.push_back(*rows);
  if (small.isTiled())
    for (layout::NamedLayout named :
         {layout::NamedLayout::Wgmma, layout::NamedLayout::WgmmaTransposed,
          layout::NamedLayout::Wgmma8Bit, layout::NamedLayout::WgmmaRow,
          layout::NamedLayout::WgmmaCol})
      if (layout::namedLayout(named) != small)
        result.push_back(layout::namedLayout(named));
  return result;
}

} // namespace

class Solver {
public:
  Solver(const ConstraintSystem &system,
         const ConstraintSystem::Options &options)
      : system(system), options(options) {}

  std::variant<Solution, Conflict> run();

private:
  using Constraint = ConstraintSystem::Constraint;
  enum class Status { Satisfied, Violated, Unknown };
  using Counterpart = Assignment (*)(const Assignment &);

  /// For the constraints whose variables suggest values to each other: the
  /// value one variable's value suggests for the others (the same for a
  /// relayout or reshape, with the tile's dims swapped for a transposed
  /// buffer); null for the other kinds.
  static Counterpart counterpartOf(const Constraint &constraint);

  unsigned find(unsigned var) {
    while (parent[var] != var)
      var = parent[var] = parent[parent[var]];
    return var;
  }
  unsigned classOf(VarId var) { return classIndex[find(var)]; }

  std::optional<Conflict> buildClasses();
  void propagateHints();
  void propagateNotSplat();
  std::optional<Conflict> checkFixed();
  std::string checkDomain(unsigned cls, const Assignment &value);
  Status check(const Constraint &constraint);
  std::vector<Assignment> candidates(unsigned cls);
  std::vector<Assignment> remainingDomain(unsigned cls);
  /// Orders register layouts for class `cls` by what they cost it.
  void rankByCost(unsigned cls, std::vector<Assignment> &values);
  std::string describeConstraint(const Constraint &constraint);
  std::string describeClass(unsigned cls);
  /// The first OneOf constraint on class `cls`, or null.
  const Constraint *oneOfOn(unsigned cls);
  std::string whyAssigned(unsigned cls);
  Conflict unsatisfiable(unsigned cls);

  const Assignment &valueOf(VarId var) { return *assignment[classOf(var)]; }
  const Variable &var(VarId id) { return system.variables_[id]; }

  std::string describe(const Origin &origin) {
    if (options.describe)
      return options.describe(origin);
    return origin.index >= 0
               ? llvm::formatv("{0} #{1}", origin.what, origin.index).str()
               : std::string(origin.what);
  }

  const ConstraintSystem &system;
  const ConstraintSystem::Options &options;
  std::vector<unsigned> parent;
  std::vector<unsigned> classIndex;
  std::vector<Class> classes;
  std::vector<std::optional<Assignment>> assignment;
  /// Values suggested for each class by propagating fixed values and
  /// preferences along the constraints, most relevant first.
  std::vector<std::vector<Assignment>> hints;
  /// For each hint, how many relayouts through shared memory it implies on
  /// the way to the fixed value it was propagated from (the fewest over the
  /// paths found), or kUnanchored for a hint that comes from a preference.
  std::vector<std::vector<int>> hintRelayouts;
  static constexpr int kUnanchored = -1;
  /// Whether any hint of the class was propagated from a fixed value.
  bool anchored(unsigned cls) const {
    return llvm::any_of(hintRelayouts[cls],
                        [](int relayouts) { return relayouts >= 0; });
  }

  /// For the deepest class that ran out of candidates: each candidate and
  /// the reason it was rejected.
  struct Rejection {
    Assignment candidate;
    /// The violated constraint, or -1 when the candidate does not fit a
    /// member's shape.
    int constraint = -1;
    /// The values the constraint's variables had then; messages are only
    /// formatted if this rejection ends up in a diagnostic.
    llvm::SmallVector<std::optional<Assignment>, 2> values;
  };
  /// Whether `value` suits every member of class `cls` (checkDomain without
  /// the message).
  bool fits(unsigned cls, const Assignment &value);
  std::string
  describeConstraint(const Constraint &constraint,
                     llvm::ArrayRef<std::optional<Assignment>> values);
  /// One cached reduction per Reduce constraint: the search asks for the
  /// same reduction of the same source many times.
  const std::optional<RegisterLayout> &reduced(const Constraint::Reduce &reduce,
                                               const RegisterLayout &src);
  using ReductionKey = std::tuple<int, int64_t, const void *,
                                  std::vector<int64_t>, std::vector<int64_t>>;
  std::map<ReductionKey, std::optional<RegisterLayout>> reductionCache;
  /// The constraints that explain the values a rejection ran into: the
  /// fixes of the other classes involved and, where a value had to be Splat
  /// and was not, what keeps it from being Splat.
  llvm::SmallVector<int, 2>
  explanationsOf(const Constraint &constraint,
                 llvm::ArrayRef<std::optional<Assignment>> values,
                 unsigned cls);
  /// Whether `constraint` keeps its variables from being Splat when the
  /// value of one that `from` accepts is not: nothing converts to Splat but
  /// a Splat, and a reshape or reduction keeps a layout's kind.
  static bool passesNotSplat(const Constraint &constraint,
                             llvm::function_ref<bool(VarId)> from);
  /// For a variable of `constraint` whose value is not Splat while another
  /// one's is: the NotOfKind(Splat) constraint that keeps it from being
  /// Splat, or -1.
  int notSplatCause(const Constraint &constraint,
                    llvm::ArrayRef<std::optional<Assignment>> values,
                    unsigned position);
  /// Per class: the NotOfKind(Splat) constraint that keeps its value from
  /// being Splat (on the class itself, or on a value it is relaid, reshaped
  /// or reduced from), or -1.
  std::vector<int> notSplatBy;
  /// Hints from decided classes: after a class is decided, its value is
  /// propagated a few steps to the undecided classes it reaches, counting
  /// relayouts as the static hints do, so that a later class can avoid a
  /// relayout to a value the search chose rather than one a cast fixed
  /// (a row vector broadcast and combined with a tile decided before it).
  /// Each entry records the search level that decided its source; a
  /// backjump drops the entries of the levels it undoes.
  struct DecidedHint {
    Assignment value;
    int relayouts;
    int level;
  };
  std::vector<llvm::SmallVector<DecidedHint, 2>> decidedHints;
  std::vector<unsigned> decidedHintLog;
  void propagateDecided(unsigned cls, int level);
  void dropDecidedHints(int fromLevel);
  /// The fewest relayouts a hint of `cls` says `value` implies, or
  /// kUnanchored.
  int hintedRelayouts(unsigned cls, const Assignment &value);

  unsigned deepestFailure = 0;
  int deepestLevel = -1;
  std::vector<Rejection> deepestRejections;

  /// One level of the depth-first search.
  struct SearchFrame {
    unsigned cls;
    /// The candidates left to try, the next one last.
    std::vector<Assignment> pending;
    /// Whether `pending` holds the candidates of the current visit, and
    /// whether the rest of the domain has been added to them.
    bool expanded = false;
    bool extended = false;
    std::vector<Assignment> tried;
    std::vector<Rejection> rejections;
    /// The decided classes that ruled out a candidate of this visit (or of
    /// a later level that jumped back here): only changing one of them can
    /// let this class find a value.
    llvm::SmallDenseSet<unsigned, 8> conflicts;
  };
};

std::optional<Conflict> Solver::buildClasses() {
  size_t n = system.variables_.size();
  parent.resize(n);
  std::iota(parent.begin(), parent.end(), 0);
  for (const auto &equality : system.equalities_) {
    unsigned a = find(equality.a), b = find(equality.b);
    if (var(equality.a).kind != var(equality.b).kind)
      return Conflict{Conflict::Kind::Unsatisfiable,
                      "a register value and a shared-memory buffer cannot "
                      "share a layout",
                      equality.origin,
                      {}};
    if (a != b)
      parent[std::max(a, b)] = std::min(a, b);
  }
  classIndex.assign(n, ~0u);
  for (VarId v = 0; v < n; ++v) {
    unsigned root = find(v);
    if (classIndex[root] == ~0u) {
      classIndex[root] = classes.size();
      classes.push_back({var(v).kind, {}, {}, std::nullopt, -1});
    }
    classes[classIndex[root]].members.push_back(v);
  }
  for (auto [index, constraint] : llvm::enumerate(system.constraints_)) {
    llvm::SmallVector<unsigned, 2> touched;
    for (VarId v : constraint.vars()) {
      unsigned cls = classOf(v);
      if (!llvm::is_contained(touched, cls)) {
        touched.push_back(cls);
        classes[cls].constraints.push_back(index);
      }
    }
    const auto *fix = std::get_if<Constraint::Fix>(&constraint.kind);
    if (!fix)
      continue;
    Class &cls = classes[classOf(fix->var)];
    if (!cls.fixed) {
      cls.fixed = fix->value;
      cls.fixedBy = index;
      continue;
    }
    if (*cls.fixed == fix->value)
      continue;
    const Constraint &first = system.constraints_[cls.fixedBy];
    Conflict conflict{
        Conflict::Kind::Unsatisfiable,
        llvm::formatv("{0} must be {1} here, but is also required to be {2}",
                      describe(var(fix->var).origin), describeValue(fix->value),
                      describeValue(*cls.fixed)),
        constraint.origin,
        {}};
    conflict.notes.push_back(
        {first.origin, llvm::formatv("{0}: {1}", describe(first.origin),
                                     describeValue(*cls.fixed))});
    return conflict;
  }
  assignment.assign(classes.size(), std::nullopt);
  return std::nullopt;
}

void Solver::propagateHints() {
  // Each class keeps a few hints; a class is revisited only when it gains
  // one, so propagation is linear in the size of the system.
  // Hints propagated from a fixed value count the relayouts through shared
  // memory on their way (a relayout edge suggests the value itself, and its
  // legal relayouts at one more) for as long as the path runs through
  // classes that cannot be Splat; a hint found again on a path with fewer
  // relayouts is revisited. Paths with more than a few relayouts are not
  // followed: the candidates they would rank are ranked last anyway.
  constexpr size_t kMaxHints = 6;
  constexpr int kMaxRelayouts = 2;
  hints.assign(classes.size(), {});
  hintRelayouts.assign(classes.size(), {});
  std::vector<unsigned> worklist;
  auto suggest = [&](unsigned cls, const Assignment &value,
                     int relayouts = kUnanchored) {
    if (classes[cls].fixed || relayouts > kMaxRelayouts || !fits(cls, value))
      return;
    // A class that may end up Splat converts to anything for free, so the
    // relayouts counted through it say nothing: only classes that cannot
    // be Splat carry the count on.
    if (notSplatBy[cls] < 0)
      relayouts = kUnanchored;
    std::vector<Assignment> &list = hints[cls];
    std::vector<int> &costs = hintRelayouts[cls];
    auto improves = [&](int old) {
      return relayouts != kUnanchored &&
             (old == kUnanchored || relayouts < old);
    };
    if (auto found = llvm::find(list, value); found != list.end()) {
      int &old = costs[found - list.begin()];
      if (improves(old)) {
        old = relayouts;
        worklist.push_back(cls);
      }
      return;
    }
    if (list.size() >= kMaxHints) {
      // An anchored hint displaces the last preference.
      auto last = llvm::find_if(llvm::reverse(costs),
                                [](int old) { return old == kUnanchored; });
      if (relayouts == kUnanchored || last == costs.rend())
        return;
      size_t index = costs.rend() - last - 1;
      list.erase(list.begin() + index);
      costs.erase(costs.begin() + index);
    }
    list.push_back(value);
    costs.push_back(relayouts);
    worklist.push_back(cls);
  };
  auto mmaTilings = [&](unsigned cls, bool transposed) {
    for (int64_t swizzle : {128, 64, 32})
      suggest(cls, layout::mmaTransforms(
                       swizzle, var(classes[cls].members.front()).bitwidth,
                       transposed));
  };
  for (auto [cls, c] : llvm::enumerate(classes))
    if (c.fixed) {
      hints[cls].push_back(*c.fixed);
      hintRelayouts[cls].push_back(0);
      worklist.push_back(cls);
    }
  for (const Constraint &constraint : system.constraints_)
    std::visit(llvm::makeVisitor(
                   [&](const Constraint::Reduce &reduce) {
                     // Reductions are cheapest from the wgmma layouts (WGMMA
                     // first), which need tiles of 64 rows; the rows layout
                     // fits any number of rows.
                     unsigned src = classOf(reduce.src);
                     suggest(src,
                             layout::namedLayout(layout::NamedLayout::Wgmma));
                     suggest(src, layout::namedLayout(
                                      layout::NamedLayout::WgmmaTransposed));
                     const Variable &source = var(reduce.src);
                     if (std::optional<RegisterLayout> rows =
                             rowsLayoutWhereWgmmaFails(source.shape,
                                                       source.bitwidth))
                       suggest(src, *rows);
                   },
                   [&](const Constraint::MmaTiling &tiling) {
                     mmaTilings(classOf(tiling.smem), tiling.transposed);
                   },
                   [](const auto &) {}),
               constraint.kind);
  while (!worklist.empty()) {
    unsigned cls = worklist.back();
    worklist.pop_back();
    std::vector<Assignment> current = hints[cls];
    std::vector<int> currentRelayouts = hintRelayouts[cls];
    for (unsigned index : classes[cls].constraints) {
      const Constraint &constraint = system.constraints_[index];
      if (Counterpart counterpart = counterpartOf(constraint)) {
        const auto *relayout =
            std::get_if<Constraint::Relayout>(&constraint.kind);
        for (VarId v : constraint.vars()) {
          if (classOf(v) == cls)
            continue;
          for (auto [value, relayouts] :
               llvm::zip_equal(current, currentRelayouts)) {
            suggest(classOf(v), counterpart(value), relayouts);
            if (relayout && relayouts != kUnanchored)
              for (const RegisterLayout &other :
                   relaidThroughSharedMemory(std::get<RegisterLayout>(value),
                                             var(relayout->src).bitwidth))
                suggest(classOf(v), other, relayouts + 1);
          }
        }
        continue;
      }
      std::visit(
          llvm::makeVisitor(
              [&](const Constraint::Reduce &reduce) {
                unsigned out = classOf(reduce.out);
                if (classOf(reduce.src) != cls || out == cls)
                  return;
                for (auto [value, relayouts] :
                     llvm::zip_equal(current, currentRelayouts))
                  if (const std::optional<RegisterLayout> &layout =
                          reduced(reduce, std::get<RegisterLayout>(value)))
                    suggest(out, *layout, relayouts);
              },
              [&](const Constraint::Transferable &transfer) {
                // Tiled buffers pair with tiled registers and vice versa.
                for (const Assignment &value : current) {
                  if (classOf(transfer.smem) == cls &&
                      std::get<SmemTransforms>(value).tile)
                    suggest(classOf(transfer.reg),
                            layout::namedLayout(layout::NamedLayout::Wgmma));
                  if (classOf(transfer.reg) == cls &&
                      std::get<RegisterLayout>(value).isTiled())
                    mmaTilings(classOf(transfer.smem), false);
                }
              },
              [](const auto &) {}),
          constraint.kind);
    }
  }
}

void Solver::propagateNotSplat() {
  // Nothing converts to Splat but a Splat, a reshape or reduction keeps a
  // layout's kind, and a broadcast's source is its result reduced: a value
  // that cannot be Splat (loaded data, an iota, a non-uniform constant)
  // keeps every value relaid, reshaped, reduced or broadcast from it from
  // being Splat too. Breadth-first, so each class records the nearest cause.
  notSplatBy.assign(classes.size(), -1);
  std::vector<unsigned> queue;
  for (auto [index, constraint] : llvm::enumerate(system.constraints_)) {
    const auto *notOfKind =
        std::get_if<Constraint::NotOfKind>(&constraint.kind);
    if (!notOfKind || notOfKind->excluded != RegisterLayout::Kind::Splat)
      continue;
    unsigned cls = classOf(notOfKind->var);
    if (notSplatBy[cls] < 0) {
      notSplatBy[cls] = index;
      queue.push_back(cls);
    }
  }
  for (size_t next = 0; next < queue.size(); ++next) {
    unsigned cls = queue[next];
    for (unsigned index : classes[cls].constraints) {
      const Constraint &constraint = system.constraints_[index];
      if (!passesNotSplat(constraint,
                          [&](VarId v) { return classOf(v) == cls; }))
        continue;
      for (VarId v : constraint.vars()) {
        unsigned other = classOf(v);
        if (notSplatBy[other] < 0) {
          notSplatBy[other] = notSplatBy[cls];
          queue.push_back(other);
        }
      }
    }
  }
}

std::string Solver::checkDomain(unsigned cls, const Assignment &value) {
  for (VarId member : classes[cls].members) {
    const Variable &v = var(member);
    llvm::Error error = llvm::Error::success();
    if (auto *layout = std::get_if<RegisterLayout>(&value))
      error = layout->checkShape(v.shape);
    else
      error =
          layout::checkSmemTransforms(std::get<SmemTransforms>(value), v.shape,
                                      v.bitwidth, v.transposed ? -2 : -1);
    if (error)
      return llvm::formatv("{0} cannot be {1}: {2}", describe(v.origin),
                           describeValue(value),
                           llvm::toString(std::move(error)));
  }
  return "";
}

Solver::Status Solver::check(const Constraint &constraint) {
  for (VarId v : constraint.vars())
    if (!assignment[classOf(v)])
      return Status::Unknown;
  if (const auto *reduce = std::get_if<Constraint::Reduce>(&constraint.kind)) {
    const std::optional<RegisterLayout> &out =
        reduced(*reduce, std::get<RegisterLayout>(valueOf(reduce->src)));
    return out && *out == std::get<RegisterLayout>(valueOf(reduce->out))
               ? Status::Satisfied
               : Status::Violated;
  }
  return system.holds(constraint,
                      [&](VarId v) -> const Assignment & { return valueOf(v); })
             ? Status::Satisfied
             : Status::Violated;
}

std::vector<Assignment> Solver::candidates(unsigned cls) {
  const Class &c = classes[cls];
  if (c.fixed)
    return {*c.fixed};
  if (const Constraint *oneOf = oneOfOn(cls)) {
    std::vector<Assignment> result;
    for (const Assignment &value :
         std::get<Constraint::OneOf>(oneOf->kind).candidates)
      if (!llvm::is_contained(result, value))
        result.push_back(value);
    return result;
  }
  const Variable &first = var(c.members.front());

  // Two tiers. `implied` holds the values that decided neighbours leave
  // (a use of a decided non-splat value can only take its layout or a
  // legal relayout of it; reshapes and reductions are functions of their
  // source), so no cheaper candidate could pass. `ranked` holds the
  // choices, tried cheapest first (register layouts; buffers keep the
  // order below).
  std::vector<Assignment> implied, ranked;
  auto contains = [&](const Assignment &value) {
    return llvm::is_contained(implied, value) ||
           llvm::is_contained(ranked, value);
  };
  auto imply = [&](Assignment value) {
    if (!contains(value))
      implied.push_back(std::move(value));
  };
  auto offer = [&](Assignment value) {
    if (!contains(value))
      ranked.push_back(std::move(value));
  };
  bool reductionSource = false;
  llvm::SmallVector<bool, 4> mmaTransposed;
  auto assigned = [&](VarId v) -> const Assignment * {
    unsigned other = classOf(v);
    return other != cls && assignment[other] ? &*assignment[other] : nullptr;
  };
  for (unsigned index : c.constraints) {
    const Constraint &constraint = system.constraints_[index];
    if (Counterpart counterpart = counterpartOf(constraint)) {
      for (VarId v : constraint.vars())
        if (const Assignment *value = assigned(v))
          imply(counterpart(*value));
      continue;
    }
    std::visit(
        llvm::makeVisitor(
            [&](const Constraint::Reduce &reduce) {
              if (classOf(reduce.src) == cls) {
                reductionSource = true;
                // A broadcast back from a decided reduced value: every
                // layout that reduces to it, the reduced layout itself
                // included (it suits the larger shape when only untiled
                // leading dims are added, but it is replicated wherever the
                // reduction replicated).
                if (const Assignment *out = assigned(reduce.out)) {
                  const auto &small = std::get<RegisterLayout>(*out);
                  // Only a splat reduces to a splat.
                  if (small.isSplat())
                    imply(small);
                  else
                    for (const RegisterLayout &layout : broadcastCandidates(
                             small, first.shape, first.bitwidth))
                      if (const std::optional<RegisterLayout> &reducedLayout =
                              reduced(reduce, layout);
                          reducedLayout && *reducedLayout == small)
                        offer(layout);
                }
              } else if (const Assignment *src = assigned(reduce.src)) {
                if (const std::optional<RegisterLayout> &out =
                        reduced(reduce, std::get<RegisterLayout>(*src)))
                  imply(*out);
              }
            },
            [&](const Constraint::Transferable &transfer) {
              // A tiled buffer prefers tiled registers (it does not force
              // WGMMA).
              if (const Assignment *smem = assigned(transfer.smem);
                  smem && std::get<SmemTransforms>(*smem).tile)
                offer(layout::namedLayout(layout::NamedLayout::Wgmma));
              if (const Assignment *reg = assigned(transfer.reg);
                  reg && std::get<RegisterLayout>(*reg).isTiled())
                for (int64_t swizzle : {128, 64, 32})
                  imply(layout::mmaTransforms(swizzle, first.bitwidth, false));
            },
            [&](const Constraint::MmaTiling &tiling) {
              mmaTransposed.push_back(tiling.transposed);
            },
            [](const auto &) {}),
        constraint.kind);
  }

  if (c.kind == VarKind::Smem) {
    for (const Assignment &value : hints[cls])
      offer(value);
    // Widest swizzle first: it has the fewest bank conflicts.
    for (bool transposed : mmaTransposed)
      for (int64_t swizzle : {128, 64, 32})
        offer(layout::mmaTransforms(swizzle, first.bitwidth, transposed));
    offer(SmemTransforms::none());
    llvm::append_range(implied, ranked);
    return implied;
  }
  // Splat is not a choice the search makes to save registers: a value is
  // Splat because the values flowing into it are, and then its neighbours
  // imply it. An implied Splat only passes when no neighbour implies another
  // layout (a decided non-splat producer converts to nothing but its own
  // layout family), so it goes after the other implied values; otherwise
  // Splat comes after the ranked candidates.
  std::stable_partition(implied.begin(), implied.end(),
                        [](const Assignment &value) {
                          return !std::get<RegisterLayout>(value).isSplat();
                        });
  for (const Assignment &value : hints[cls])
    if (!std::get<RegisterLayout>(value).isSplat())
      offer(value);
  if (reductionSource) {
    offer(layout::namedLayout(layout::NamedLayout::Wgmma));
    offer(layout::namedLayout(layout::NamedLayout::WgmmaTransposed));
    if (std::optional<RegisterLayout> rows =
            rowsLayoutWhereWgmmaFails(first.shape, first.bitwidth))
      offer(*rows);
  }
  if (std::optional<int64_t> vectorSize =
          layout::defaultStridedVectorSize(first.shape, first.bitwidth))
    offer(RegisterLayout::strided(*vectorSize));
  rankByCost(cls, ranked);
  // A class that loaded data, an iota or a non-uniform constant flows into
  // cannot be Splat, whatever its decided neighbours imply: a loop-carried
  // value whose init is a splat constant would otherwise try Splat first
  // and only learn at the back edge, many classes later, that it fails.
  // Splat then goes last, where it costs one rejection (whose reason the
  // diagnostics can still give) if everything else failed.
  if (notSplatBy[cls] >= 0)
    llvm::erase(implied, Assignment(RegisterLayout::splat()));
  llvm::append_range(implied, ranked);
  if (!llvm::is_contained(implied, Assignment(RegisterLayout::splat())))
    implied.push_back(RegisterLayout::splat());
  return implied;
}

void Solver::rankByCost(unsigned cls, std::vector<Assignment> &values) {
  // Fewest relayouts through shared memory first, as far as the hints
  // propagated from fixed values tell: a hint that reaches one without a
  // relayout, then values no such hint speaks for (they may or may not
  // need one), then hints that need relayouts, fewest first. Then fewest
  // registers per thread, then least replication; layouts that do not fit
  // the class go last. The sort is stable, so equal costs keep the order
  // they were suggested in (deterministic, and WGMMA before
  // WGMMA_TRANSPOSED before the strided default).
  const Variable &first = var(classes[cls].members.front());
  bool hasAnchors = anchored(cls) || !decidedHints[cls].empty();
  auto relayoutRank = [&](const Assignment &value) -> int {
    if (!hasAnchors)
      return 0;
    int relayouts = hintedRelayouts(cls, value);
    // Ranks 0, 2, 4, ... for 0, 1, 2 relayouts; 1 for unknown.
    return relayouts == kUnanchored ? 1 : 2 * relayouts;
  };
  auto costOf = [&](const Assignment &value)
      -> std::optional<std::pair<int, RegisterCost>> {
    const auto &layout = std::get<RegisterLayout>(value);
    if (!fits(cls, value))
      return std::nullopt;
    std::optional<RegisterCost> registers =
        layout.cost(first.shape, first.bitwidth);
    if (!registers)
      return std::nullopt;
    return std::make_pair(relayoutRank(value), *registers);
  };
  std::vector<
      std::pair<std::optional<std::pair<int, RegisterCost>>, Assignment>>
      keyed;
  keyed.reserve(values.size());
  for (Assignment &value : values)
    keyed.emplace_back(costOf(value), std::move(value));
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto &a, const auto &b) {
                     if (!a.first || !b.first)
                       return a.first.has_value() && !b.first.has_value();
                     return *a.first < *b.first;
                   });
  values.clear();
  for (auto &entry : keyed)
    values.push_back(std::move(entry.second));
}

std::vector<Assignment> Solver::remainingDomain(unsigned cls) {
  // The rest of the register domain, tried only once the preferred
  // candidates failed: every other strided vector size and the named Hopper
  // layouts. With it the search is complete over this domain (fixed layouts,
  // their reductions and these).
  const Class &c = classes[cls];
  if (c.fixed || c.kind != VarKind::Register || oneOfOn(cls))
    return {};
  std::vector<Assignment> result;
  for (int64_t vectorSize = 1; vectorSize <= 16; vectorSize *= 2)
    result.push_back(RegisterLayout::strided(vectorSize));
  for (layout::NamedLayout named :
       {layout::NamedLayout::Wgmma, layout::NamedLayout::WgmmaTransposed,
        layout::NamedLayout::Wgmma8Bit, layout::NamedLayout::WgmmaRow,
        layout::NamedLayout::WgmmaCol})
    result.push_back(layout::namedLayout(named));
  const Variable &first = var(c.members.front());
  if (std::optional<RegisterLayout> rows =
          rowsLayoutWhereWgmmaFails(first.shape, first.bitwidth))
    result.push_back(*rows);
  rankByCost(cls, result);
  return result;
}

std::string Solver::describeClass(unsigned cls) {
  return describe(var(classes[cls].members.front()).origin);
}

const ConstraintSystem::Constraint *Solver::oneOfOn(unsigned cls) {
  for (unsigned index : classes[cls].constraints)
    if (std::holds_alternative<Constraint::OneOf>(
            system.constraints_[index].kind))
      return &system.constraints_[index];
  return nullptr;
}

std::string Solver::whyAssigned(unsigned cls) {
  const Class &c = classes[cls];
  if (c.fixed)
    return describe(system.constraints_[c.fixedBy].origin);
  // A class with a OneOf constraint only takes the values it allows.
  if (const Constraint *oneOf = oneOfOn(cls))
    return describe(oneOf->origin);
  return "chosen by the search";
}

Solver::Counterpart Solver::counterpartOf(const Constraint &constraint) {
  return std::visit(
      llvm::makeVisitor(
          [](const Constraint::Relayout &) -> Counterpart { return sameValue; },
          [](const Constraint::Reshape &) -> Counterpart { return sameValue; },
          [](const Constraint::TransposedSmem &) -> Counterpart {
            return transposedValue;
          },
          [](const auto &) -> Counterpart { return nullptr; }),
      constraint.kind);
}

bool Solver::passesNotSplat(const Constraint &constraint,
                            llvm::function_ref<bool(VarId)> from) {
  return std::visit(
      llvm::makeVisitor([](const Constraint::Reshape &) { return true; },
                        [](const Constraint::Reduce &) { return true; },
                        [&](const Constraint::Relayout &relayout) {
                          return from(relayout.src);
                        },
                        [](const auto &) { return false; }),
      constraint.kind);
}

int Solver::notSplatCause(const Constraint &constraint,
                          ArrayRef<std::optional<Assignment>> values,
                          unsigned position) {
  VarId v = constraint.vars()[position];
  auto isSplat = [](const std::optional<Assignment> &value) {
    return value && std::get<RegisterLayout>(*value).isSplat();
  };
  if (!passesNotSplat(constraint, [&](VarId from) { return from == v; }) ||
      !values[position] || isSplat(values[position]) ||
      !llvm::any_of(values, isSplat))
    return -1;
  unsigned cls = classOf(v);
  return classes[cls].fixed ? -1 : notSplatBy[cls];
}

llvm::SmallVector<int, 2>
Solver::explanationsOf(const Constraint &constraint,
                       ArrayRef<std::optional<Assignment>> values,
                       unsigned cls) {
  llvm::SmallVector<int, 2> result;
  auto add = [&](int index) {
    if (index >= 0 && !llvm::is_contained(result, index))
      result.push_back(index);
  };
  for (auto [position, v] : llvm::enumerate(constraint.vars())) {
    const Class &other = classes[classOf(v)];
    if (classOf(v) != cls && other.fixed)
      add(other.fixedBy);
    add(notSplatCause(constraint, values, position));
  }
  return result;
}

std::string Solver::describeConstraint(const Constraint &constraint) {
  llvm::SmallVector<std::optional<Assignment>, 2> values;
  for (VarId v : constraint.vars())
    values.push_back(assignment[classOf(v)]);
  return describeConstraint(constraint, values);
}

std::string
Solver::describeConstraint(const Constraint &constraint,
                           ArrayRef<std::optional<Assignment>> values) {
  std::string text = describe(constraint.origin);
  text +=
      std::visit(llvm::makeVisitor(
                     [](const Constraint::Divides &divides) {
                       return " " + layout::formatShape(divides.multiples);
                     },
                     [](const Constraint::AlignedSlice &slice) {
                       return ", offsets " + layout::formatShape(slice.offsets);
                     },
                     [](const auto &) { return std::string(); }),
                 constraint.kind);
  // Name the values of the variables involved, and why each has its value.
  for (auto [position, v] : llvm::enumerate(constraint.vars())) {
    const std::optional<Assignment> &value = values[position];
    if (!value)
      continue;
    if (int cause = notSplatCause(constraint, values, position); cause >= 0)
      text += llvm::formatv("; {0} is {1}, not Splat, because {2}",
                            describe(var(v).origin), describeValue(*value),
                            describe(system.constraints_[cause].origin));
    else
      text += llvm::formatv("; {0} is {1} ({2})", describe(var(v).origin),
                            describeValue(*value), whyAssigned(classOf(v)));
  }
  return text;
}

bool Solver::fits(unsigned cls, const Assignment &value) {
  if (auto *layout = std::get_if<RegisterLayout>(&value))
    return llvm::all_of(classes[cls].members, [&](VarId member) {
      return layout->fitsShape(var(member).shape);
    });
  return checkDomain(cls, value).empty();
}

const std::optional<RegisterLayout> &
Solver::reduced(const Constraint::Reduce &reduce, const RegisterLayout &src) {
  // Kernels reduce the same few layouts over the same axes again and again;
  // sharing the results also shares their storage, so later comparisons
  // are pointer comparisons.
  const Shape &shape = var(reduce.src).shape;
  ReductionKey key{static_cast<int>(src.kind()), src.vectorSize(),
                   src.identity(),
                   std::vector<int64_t>(reduce.axes.begin(), reduce.axes.end()),
                   std::vector<int64_t>(shape.begin(), shape.end())};
  auto it = reductionCache.find(key);
  if (it != reductionCache.end())
    return it->second;
  llvm::Expected<RegisterLayout> result = src.reduce(reduce.axes, shape);
  std::optional<RegisterLayout> value;
  if (result)
    value = std::move(*result);
  else
    llvm::consumeError(result.takeError());
  return reductionCache.emplace(std::move(key), std::move(value)).first->second;
}

std::optional<Conflict> Solver::checkFixed() {
  // Fixed values must suit every member of their class...
  for (auto [cls, c] : llvm::enumerate(classes)) {
    if (!c.fixed)
      continue;
    std::string error = checkDomain(cls, *c.fixed);
    if (!error.empty())
      return Conflict{Conflict::Kind::Unsatisfiable,
                      error,
                      system.constraints_[c.fixedBy].origin,
                      {}};
  }
  // ...and every constraint among fixed classes must hold.
  for (auto [cls, c] : llvm::enumerate(classes))
    if (c.fixed)
      assignment[cls] = c.fixed;
  std::optional<Conflict> conflict;
  for (const Constraint &constraint : system.constraints_) {
    if (check(constraint) != Status::Violated)
      continue;
    conflict =
        Conflict{Conflict::Kind::Unsatisfiable,
                 "requirements conflict: " + describeConstraint(constraint),
                 constraint.origin,
                 {}};
    for (VarId v : constraint.vars()) {
      unsigned cls = classOf(v);
      const Constraint &fixer = system.constraints_[classes[cls].fixedBy];
      conflict->notes.push_back(
          {fixer.origin,
           llvm::formatv("{0} is {1}, as {2}", describe(var(v).origin),
                         describeValue(*classes[cls].fixed),
                         describe(fixer.origin))});
    }
    break;
  }
  std::fill(assignment.begin(), assignment.end(), std::nullopt);
  return conflict;
}

Conflict Solver::unsatisfiable(unsigned cls) {
  Conflict conflict{Conflict::Kind::Unsatisfiable,
                    llvm::formatv("no layout for {0} satisfies every "
                                  "constraint on it",
                                  describeClass(cls)),
                    var(classes[cls].members.front()).origin,
                    {}};
  // The preferred candidates come first and explain the conflict; the rest
  // of the domain is summarised.
  constexpr size_t kShownRejections = 4;
  for (const Rejection &rejection :
       llvm::ArrayRef(deepestRejections)
           .take_front(std::min(kShownRejections, deepestRejections.size()))) {
    Origin where = var(classes[cls].members.front()).origin;
    std::string reason;
    if (rejection.constraint >= 0) {
      const Constraint &constraint = system.constraints_[rejection.constraint];
      where = constraint.origin;
      reason = describeConstraint(constraint, rejection.values);
    } else {
      reason = checkDomain(cls, rejection.candidate);
    }
    conflict.notes.push_back(
        {where, llvm::formatv("{0} is ruled out by: {1}",
                              describeValue(rejection.candidate), reason)});
  }
  if (deepestRejections.size() > kShownRejections)
    conflict.notes.push_back(
        {var(classes[cls].members.front()).origin,
         llvm::formatv("{0} other candidate layouts are ruled out as well",
                       deepestRejections.size() - kShownRejections)});
  // Point at the ops whose requirements the candidates ran into.
  llvm::SmallVector<int, 4> shown;
  for (const Rejection &rejection : deepestRejections) {
    if (rejection.constraint < 0)
      continue;
    for (int index : explanationsOf(system.constraints_[rejection.constraint],
                                    rejection.values, cls)) {
      if (llvm::is_contained(shown, index))
        continue;
      shown.push_back(index);
      const Constraint &constraint = system.constraints_[index];
      std::string text = describe(constraint.origin);
      if (const auto *fix = std::get_if<Constraint::Fix>(&constraint.kind))
        text += ": " + describeValue(fix->value);
      conflict.notes.push_back({constraint.origin, std::move(text)});
    }
  }
  return conflict;
}

int Solver::hintedRelayouts(unsigned cls, const Assignment &value) {
  int best = kUnanchored;
  auto consider = [&](int relayouts) {
    if (relayouts != kUnanchored && (best == kUnanchored || relayouts < best))
      best = relayouts;
  };
  if (auto found = llvm::find(hints[cls], value); found != hints[cls].end())
    consider(hintRelayouts[cls][found - hints[cls].begin()]);
  for (const DecidedHint &hint : decidedHints[cls])
    if (hint.value == value)
      consider(hint.relayouts);
  return best;
}

void Solver::propagateDecided(unsigned source, int level) {
  // Breadth-first over the classes the decided value reaches through
  // relayouts, reshapes and reductions, as the static hints go; bounded in
  // steps and in classes, so each decision costs a constant.
  constexpr int kMaxSteps = 6;
  constexpr size_t kMaxReached = 32;
  constexpr int kMaxRelayouts = 1;
  const Assignment &decided = *assignment[source];
  const auto *decidedLayout = std::get_if<RegisterLayout>(&decided);
  if (!decidedLayout || decidedLayout->isSplat())
    return;
  struct Step {
    unsigned cls;
    Assignment value;
    int relayouts;
    int steps;
  };
  std::vector<Step> queue = {{source, decided, 0, 0}};
  llvm::SmallDenseSet<unsigned, 16> reached = {source};
  auto reach = [&](unsigned cls, Assignment value, int relayouts, int steps) {
    if (assignment[cls] || classes[cls].fixed || notSplatBy[cls] < 0 ||
        relayouts > kMaxRelayouts || reached.size() >= kMaxReached ||
        !fits(cls, value))
      return;
    // A class an earlier decision already reached passes the value on all
    // the same: this decision may be closer to classes beyond it.
    auto &list = decidedHints[cls];
    if (llvm::none_of(list, [&](const DecidedHint &hint) {
          return hint.value == value && hint.relayouts <= relayouts;
        })) {
      list.push_back({value, relayouts, level});
      decidedHintLog.push_back(cls);
    }
    if (reached.insert(cls).second)
      queue.push_back({cls, std::move(value), relayouts, steps});
  };
  for (size_t next = 0; next < queue.size(); ++next) {
    Step step = queue[next];
    if (step.steps >= kMaxSteps)
      continue;
    for (unsigned index : classes[step.cls].constraints) {
      const Constraint &constraint = system.constraints_[index];
      if (const auto *relayout =
              std::get_if<Constraint::Relayout>(&constraint.kind)) {
        for (VarId v : constraint.vars()) {
          unsigned other = classOf(v);
          if (other == step.cls)
            continue;
          reach(other, step.value, step.relayouts, step.steps + 1);
          for (const RegisterLayout &relaid :
               relaidThroughSharedMemory(std::get<RegisterLayout>(step.value),
                                         var(relayout->src).bitwidth))
            reach(other, relaid, step.relayouts + 1, step.steps + 1);
        }
      } else if (std::holds_alternative<Constraint::Reshape>(constraint.kind)) {
        for (VarId v : constraint.vars())
          if (classOf(v) != step.cls)
            reach(classOf(v), step.value, step.relayouts, step.steps + 1);
      } else if (const auto *reduce =
                     std::get_if<Constraint::Reduce>(&constraint.kind)) {
        if (classOf(reduce->src) != step.cls)
          continue;
        if (const std::optional<RegisterLayout> &out =
                reduced(*reduce, std::get<RegisterLayout>(step.value)))
          reach(classOf(reduce->out), *out, step.relayouts, step.steps + 1);
      }
    }
  }
}

void Solver::dropDecidedHints(int fromLevel) {
  while (!decidedHintLog.empty()) {
    auto &list = decidedHints[decidedHintLog.back()];
    if (list.back().level < fromLevel)
      return;
    list.pop_back();
    decidedHintLog.pop_back();
  }
}

std::variant<Solution, Conflict> Solver::run() {
  if (std::optional<Conflict> conflict = buildClasses())
    return *conflict;
  propagateNotSplat();
  if (std::optional<Conflict> conflict = checkFixed())
    return *conflict;
  propagateHints();
  decidedHints.assign(classes.size(), {});

  // Fixed classes first (their values are known), then program order.
  std::vector<SearchFrame> frames;
  for (unsigned cls = 0; cls < classes.size(); ++cls)
    if (classes[cls].fixed)
      frames.push_back({cls});
  for (unsigned cls = 0; cls < classes.size(); ++cls)
    if (!classes[cls].fixed)
      frames.push_back({cls});

  // Fuel pays for the search's detours: each rejected candidate and each
  // backtrack costs one unit, so a kernel whose first choices all work is
  // never out of fuel, however large.
  int64_t fuel = options.fuel, tries = 0, spent = 0;
  int level = 0;
  while (level < static_cast<int>(frames.size())) {
    SearchFrame &frame = frames[level];
    unsigned cls = frame.cls;
    if (!frame.expanded) {
      frame.pending = candidates(cls);
      std::reverse(frame.pending.begin(), frame.pending.end());
      frame.expanded = true;
      frame.extended = false;
      frame.rejections.clear();
      frame.tried.clear();
      frame.conflicts.clear();
    }
    if (frame.pending.empty() && !frame.extended) {
      frame.extended = true;
      for (Assignment &value : remainingDomain(cls))
        if (!llvm::is_contained(frame.tried, value))
          frame.pending.insert(frame.pending.begin(), std::move(value));
    }
    if (frame.pending.empty()) {
      if (level > deepestLevel) {
        deepestLevel = level;
        deepestFailure = cls;
        deepestRejections = frame.rejections;
      }
      // Conflict-directed backjumping: go back to the latest class that
      // took part in ruling out this one's candidates; the classes decided
      // in between did not, and retrying their other values would fail
      // here the same way (chronological backtracking through them is
      // exponential). That class inherits this one's conflicts.
      int target = level - 1;
      while (target >= 0 && !frame.conflicts.contains(frames[target].cls))
        --target;
      ++spent;
      if (target < 0)
        return unsatisfiable(deepestFailure);
      llvm::SmallDenseSet<unsigned, 8> inherited = std::move(frame.conflicts);
      for (int skipped = level; skipped > target; --skipped) {
        frames[skipped].expanded = false;
        frames[skipped].conflicts.clear();
        assignment[frames[skipped].cls] = std::nullopt;
      }
      level = target;
      dropDecidedHints(level);
      inherited.erase(frames[level].cls);
      frames[level].conflicts.insert(inherited.begin(), inherited.end());
      assignment[frames[level].cls] = std::nullopt;
      continue;
    }
    if (spent >= fuel) {
      Conflict conflict{
          Conflict::Kind::OutOfFuel,
          llvm::formatv("layout inference ran out of fuel ({0} rejected "
                        "candidates and backtracks) while choosing a layout "
                        "for {1}",
                        spent, describeClass(cls)),
          var(classes[cls].members.front()).origin,
          {}};
      return conflict;
    }
    ++tries;
    Assignment candidate = std::move(frame.pending.back());
    frame.pending.pop_back();
    frame.tried.push_back(candidate);

    if (!fits(cls, candidate)) {
      ++spent;
      frame.rejections.push_back({std::move(candidate), -1, {}});
      continue;
    }
    assignment[cls] = candidate;
    int violated = -1;
    for (unsigned index : classes[cls].constraints)
      if (check(system.constraints_[index]) == Status::Violated) {
        violated = index;
        break;
      }
    if (violated >= 0) {
      ++spent;
      Rejection rejection{std::move(candidate), violated, {}};
      for (VarId v : system.constraints_[violated].vars()) {
        unsigned other = classOf(v);
        rejection.values.push_back(assignment[other]);
        if (other != cls && assignment[other])
          frame.conflicts.insert(other);
      }
      frame.rejections.push_back(std::move(rejection));
      assignment[cls] = std::nullopt;
      continue;
    }
    if (!classes[cls].fixed)
      propagateDecided(cls, level);
    ++level;
  }

  Solution solution;
  solution.triesUsed = tries;
  for (VarId v = 0; v < system.variables_.size(); ++v)
    solution.values.push_back(valueOf(v));
  return solution;
}

std::variant<Solution, Conflict>
ConstraintSystem::solve(const Options &options) const {
  return Solver(*this, options).run();
}

} // namespace mosaic::inference
