//===- KernelBuilder.h - Building a kernel from Python ------------*- C++
//-*-===//
//
// The builder behind mosaic_gpu's authoring API (`_mosaic.KernelBuilder`):
// a module holding one gpu.func, an OpBuilder inserting into it, and the
// handles Python holds on its values, blocks and ops. Every op is made by a
// typed entry point over the op's C++ builder (`OpTy::create`): the kernel
// skeleton, the region ops and the terminators in KernelBuilder.cpp, the
// other ops in OpBuilders.cpp. See docs/RationalePython.md.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_PYTHON_KERNELBUILDER_H
#define MOSAIC_PYTHON_KERNELBUILDER_H

#include "Attributes.h"
#include "Support.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace mosaic::python {

/// Where Python made an op: (file, line, column); an empty file is an
/// unknown location.
using SourceLocation = std::tuple<std::string, unsigned, unsigned>;

class BuilderState;

/// A value of the kernel being built; keeps the builder alive.
struct ValueHandle {
  std::shared_ptr<BuilderState> state;
  mlir::Value value;

  /// The value's type, as MLIR text.
  std::string type() const;
};

/// A block of a region op (scf.for, scf.if, scf.while) being built.
struct BlockHandle {
  std::shared_ptr<BuilderState> state;
  mlir::Block *block;
};

/// A region op of the kernel being built.
struct OpHandle {
  std::shared_ptr<BuilderState> state;
  mlir::Operation *op;
};

/// A module with one kernel under construction: builtin.module >
/// gpu.module @kernels > gpu.func, and an OpBuilder inserting into it.
class BuilderState : public std::enable_shared_from_this<BuilderState> {
public:
  explicit BuilderState(std::shared_ptr<ContextObject> context)
      : context(std::move(context)), builder(&this->context->context) {}

  mlir::MLIRContext *mlirContext() { return &context->context; }
  mlir::Location location(const SourceLocation &where);

  /// The value `handle` holds; `what` names it when it belongs to another
  /// kernel (ValueError).
  mlir::Value use(const ValueHandle &handle, const char *what) const;
  llvm::SmallVector<mlir::Value> use(const std::vector<ValueHandle> &handles,
                                     const char *what) const;
  /// The attribute, which must live in this kernel's context.
  mlir::Attribute use(const AttributeObject &attribute, const char *what) const;

  ValueHandle handle(mlir::Value value);
  std::vector<ValueHandle> handles(mlir::ValueRange values);

  /// Makes an OpTy with its C++ builder at the insertion point, located at
  /// `where`. An op without regions is verified at once, so that an error
  /// points at the Python line that made it (MosaicError; the op is
  /// erased); one with regions is verified when they are built
  /// (`Operation.verify`).
  template <typename OpTy, typename... Args>
  OpTy create(const SourceLocation &where, Args &&...args) {
    auto op =
        OpTy::create(builder, location(where), std::forward<Args>(args)...);
    if (op->getNumRegions() == 0)
      verifyNew(op);
    return op;
  }

  std::shared_ptr<ContextObject> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::OpBuilder builder;
  /// The gpu.func being built.
  mlir::Operation *kernel = nullptr;
  /// Where to return to when the innermost region being built is closed.
  std::vector<mlir::OpBuilder::InsertPoint> saved;

private:
  void verifyNew(mlir::Operation *op);
};

using KernelBuilderClass =
    pybind11::class_<BuilderState, std::shared_ptr<BuilderState>>;

/// Adds KernelBuilder, Value, Block and Operation to `m`.
void registerKernelBuilder(pybind11::module_ &m);

/// Adds the entry points of the ops without regions (arith, math, gpu,
/// memref, vector and mosaic_gpu ops) to KernelBuilder, and the enums they
/// take to `m` (OpBuilders.cpp).
void registerOpBuilders(pybind11::module_ &m, KernelBuilderClass &builder);

} // namespace mosaic::python

#endif // MOSAIC_PYTHON_KERNELBUILDER_H
