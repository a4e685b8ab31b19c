//===- OpRuleRegistry.h - Per-op rules keyed by op kind ---------*- C++ -*-===//
//
// Layout inference and the lowering dispatch each op through one rule per op
// kind: a free function over the pass's own context, registered with one
// line per op by the file that defines it (the reference's
// `@_register_lowering(op)`). Both use this registry; a rule takes the op
// class it is registered for, or a plain Operation * when it serves several
// kinds.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_SUPPORT_OPRULEREGISTRY_H
#define MOSAIC_SUPPORT_OPRULEREGISTRY_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/TypeID.h"
#include "llvm/ADT/DenseMap.h"

#include <cassert>
#include <functional>
#include <variant>

namespace mosaic {

/// The rules of a pass whose rules run as `rule(context, op)`, keyed by the
/// op's TypeID. `Info` is what the pass keeps beside each rule (how the
/// lowering treats the op afterwards); passes that need none leave it empty.
template <typename Context, typename Info = std::monostate>
class OpRuleRegistry {
public:
  struct Rule {
    std::function<mlir::LogicalResult(Context &, mlir::Operation *)> apply;
    Info info;
  };

  /// Applies `rule` to the ops of each kind in `OpTys`. `rule` takes the op
  /// class (with one kind) or an Operation *.
  template <typename... OpTys, typename Argument>
  void add(mlir::LogicalResult (*rule)(Context &, Argument), Info info = {}) {
    (insert<OpTys>(rule, info), ...);
  }

  /// The rule for `op`'s kind, or null.
  const Rule *lookup(mlir::Operation *op) const {
    auto it = rules.find(op->getName().getTypeID());
    return it == rules.end() ? nullptr : &it->second;
  }

private:
  template <typename OpTy, typename Argument>
  void insert(mlir::LogicalResult (*rule)(Context &, Argument), Info info) {
    auto apply = [rule](Context &context, mlir::Operation *op) {
      return rule(context, mlir::cast<OpTy>(op));
    };
    [[maybe_unused]] bool added =
        rules.try_emplace(mlir::TypeID::get<OpTy>(), Rule{apply, info}).second;
    assert(added && "an op kind has one rule");
  }

  llvm::DenseMap<mlir::TypeID, Rule> rules;
};

} // namespace mosaic

#endif // MOSAIC_SUPPORT_OPRULEREGISTRY_H
