//===- ConstraintSystem.h - Layout constraints and their solver -*- C++ -*-===//
//
// Layout inference as a constraint problem. Variables stand for the layout of
// a value site (a register vector or a shared-memory buffer); constraints
// relate them; the solver finds an assignment by propagation and a
// deterministic depth-first search with a fuel budget. Plain C++: the MLIR
// rules in InferLayouts.cpp build systems, and unit tests build them by hand.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_LAYOUTINFERENCE_CONSTRAINTSYSTEM_H
#define MOSAIC_LAYOUTINFERENCE_CONSTRAINTSYSTEM_H

#include "mosaic/Dialect/MosaicGPU/SmemTransforms.h"

#include <functional>
#include <tuple>
#include <variant>

namespace mosaic::inference {

using layout::RegisterLayout;
using layout::Shape;
using layout::SmemTransforms;

using VarId = unsigned;

/// Where a variable or a constraint comes from, for diagnostics: an opaque
/// handle the client maps back to a location (an Operation* for the pass),
/// what it is (a static string such as "result" or "requires WGMMA") and an
/// index. Descriptions are only formatted when a diagnostic needs them, so
/// building large systems stays cheap.
struct Origin {
  const void *handle = nullptr;
  const char *what = "";
  int index = -1;
  /// Sites are values ("result #0 of ..."); other origins are requirements
  /// an op imposes ("... requires WGMMA").
  bool isSite = false;
};

enum class VarKind { Register, Smem };

struct Variable {
  VarKind kind;
  Shape shape;
  unsigned bitwidth;
  Origin origin;
  /// For buffers: stored transposed, so the physical minor dim is dim -2.
  bool transposed = false;
};

using Assignment = std::variant<RegisterLayout, SmemTransforms>;

std::string describeValue(const Assignment &value);

/// One reason a search failed, with the origins of everything involved: the
/// primary origin first, then notes.
struct Conflict {
  enum class Kind { Unsatisfiable, OutOfFuel };
  Kind kind;
  std::string message;
  Origin primary;
  std::vector<std::pair<Origin, std::string>> notes;
};

/// What an assignment costs the kernel, compared in this order: the
/// registers per thread it moves through shared memory to relayout values
/// (a round trip stores and loads each of them, between two barriers), the
/// number of such relayouts, then the 32-bit registers per thread summed
/// over every value site (each result, block argument and use).
struct AssignmentCost {
  int64_t relaidRegisters = 0;
  int64_t relayouts = 0;
  int64_t registers = 0;

  bool operator<(const AssignmentCost &other) const {
    return std::tie(relaidRegisters, relayouts, registers) <
           std::tie(other.relaidRegisters, other.relayouts, other.registers);
  }
};

struct Solution {
  /// The value of every variable, indexed by VarId.
  std::vector<Assignment> values;
  /// Candidate assignments tried (accepted or not), for benchmarks and tests.
  int64_t triesUsed = 0;
};

class ConstraintSystem {
public:
  VarId addRegister(Shape shape, unsigned bitwidth, Origin origin);
  VarId addSmem(Shape shape, unsigned bitwidth, Origin origin,
                bool transposed = false);
  const Variable &variable(VarId id) const { return variables_[id]; }
  size_t numVariables() const { return variables_.size(); }

  /// `a` and `b` have the same layout (or transforms).
  void equate(VarId a, VarId b, Origin why);
  /// `var` has exactly `value`.
  void fix(VarId var, Assignment value, Origin why);
  /// `var` is one of `candidates` (tried in order).
  void oneOf(VarId var, std::vector<Assignment> candidates, Origin why);
  /// The register value `src` converts to `dst` in registers.
  void relayout(VarId src, VarId dst, Origin why);
  /// `var` is not a layout of kind `kind`.
  void notOfKind(VarId var, RegisterLayout::Kind kind, Origin why);
  /// `out` is `src` reduced over `axes`.
  void reduce(VarId out, VarId src, llvm::ArrayRef<int64_t> axes, Origin why);
  /// `dst` is `src` reshaped without moving data.
  void reshape(VarId dst, VarId src, Origin why);
  /// Tiled layouts of `var` put slices starting at `offsets` on tile
  /// boundaries (strided layouts cannot be sliced).
  void alignedSlice(VarId var, llvm::ArrayRef<int64_t> offsets, Origin why);
  /// The buffer `smem` and the register value `reg` can be transferred.
  void transferable(VarId smem, VarId reg, Origin why);
  /// The tiling of `smem` divides `multiples`, aligned from the right.
  void divides(VarId smem, llvm::ArrayRef<int64_t> multiples, Origin why);
  /// `smem` has a tiling wgmma can read.
  void mmaTiling(VarId smem, bool transposed, Origin why);
  /// `dst` holds the transpose of `src`: their tiles are swapped.
  void transposedSmem(VarId dst, VarId src, Origin why);

  struct Options {
    /// How many rejected candidates and backtracks the search may spend.
    int64_t fuel = 100000;
    /// Formats an origin for diagnostics; by default its `what` and index.
    std::function<std::string(const Origin &)> describe;
  };
  /// Solves the system; the result is deterministic for a given system.
  std::variant<Solution, Conflict> solve(const Options &options) const;

  /// Everything `solution` gets wrong: values invalid for their variable's
  /// shape, broken equalities and violated constraints. Empty for a correct
  /// solution; tests use it to check the solver.
  std::vector<std::string> violations(const Solution &solution) const;

  /// What `solution` costs (see AssignmentCost).
  AssignmentCost cost(const Solution &solution) const;

private:
  friend class Solver;

  struct Constraint {
    using Vars = llvm::SmallVector<VarId, 2>;
    // One struct per kind, as the adding methods record it; `vars()` lists
    // its variables in the order of the adding method's parameters.
    struct Fix {
      VarId var;
      Assignment value;
      Vars vars() const { return {var}; }
    };
    struct OneOf {
      VarId var;
      std::vector<Assignment> candidates;
      Vars vars() const { return {var}; }
    };
    struct Relayout {
      VarId src, dst;
      Vars vars() const { return {src, dst}; }
    };
    struct NotOfKind {
      VarId var;
      RegisterLayout::Kind excluded;
      Vars vars() const { return {var}; }
    };
    struct Reduce {
      VarId out, src;
      Shape axes;
      Vars vars() const { return {out, src}; }
    };
    struct Reshape {
      VarId dst, src;
      Vars vars() const { return {dst, src}; }
    };
    struct AlignedSlice {
      VarId var;
      Shape offsets;
      Vars vars() const { return {var}; }
    };
    struct Transferable {
      VarId smem, reg;
      Vars vars() const { return {smem, reg}; }
    };
    struct Divides {
      VarId smem;
      Shape multiples;
      Vars vars() const { return {smem}; }
    };
    struct MmaTiling {
      VarId smem;
      bool transposed;
      Vars vars() const { return {smem}; }
    };
    struct TransposedSmem {
      VarId dst, src;
      Vars vars() const { return {dst, src}; }
    };

    using Kind = std::variant<Fix, OneOf, Relayout, NotOfKind, Reduce, Reshape,
                              AlignedSlice, Transferable, Divides, MmaTiling,
                              TransposedSmem>;
    Kind kind;
    Origin origin;

    Vars vars() const {
      return std::visit([](const auto &kind) { return kind.vars(); }, kind);
    }
  };
  struct Equality {
    VarId a, b;
    Origin origin;
  };

  void add(Constraint::Kind kind, Origin why);
  bool holds(const Constraint &constraint,
             llvm::function_ref<const Assignment &(VarId)> valueOf) const;

  std::vector<Variable> variables_;
  std::vector<Constraint> constraints_;
  std::vector<Equality> equalities_;
};

} // namespace mosaic::inference

#endif // MOSAIC_LAYOUTINFERENCE_CONSTRAINTSYSTEM_H
