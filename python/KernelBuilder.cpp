//===- KernelBuilder.cpp - The kernel skeleton, regions and handles -------===//
//
// KernelBuilder.start makes the skeleton (builtin.module > gpu.module
// @kernels > gpu.func) with the GPU dialect's builders; the region ops
// (scf.for, scf.if, scf.while) are made with their blocks and argument
// types, which Python fills between enter() and exit() and closes with
// yield_() or condition().
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/stl.h>

#include <array>
#include <utility>

namespace py = pybind11;
using namespace mlir;

namespace mosaic::python {

std::string ValueHandle::type() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  value.getType().print(os);
  return text;
}

Location BuilderState::location(const SourceLocation &where) {
  const auto &[file, line, col] = where;
  if (file.empty())
    return UnknownLoc::get(mlirContext());
  return FileLineColLoc::get(mlirContext(), file, line, col);
}

Value BuilderState::use(const ValueHandle &handle, const char *what) const {
  if (handle.state.get() != this)
    throw py::value_error(std::string("`") + what +
                          "` belongs to another kernel");
  return handle.value;
}

SmallVector<Value> BuilderState::use(const std::vector<ValueHandle> &handles,
                                     const char *what) const {
  SmallVector<Value> values;
  for (const ValueHandle &handle : handles)
    values.push_back(use(handle, what));
  return values;
}

Attribute BuilderState::use(const AttributeObject &attribute,
                            const char *what) const {
  if (attribute.context != context)
    throw py::value_error(std::string("`") + what +
                          "` was made in another context");
  return attribute.attr;
}

ValueHandle BuilderState::handle(Value value) {
  return {shared_from_this(), value};
}

std::vector<ValueHandle> BuilderState::handles(ValueRange values) {
  std::vector<ValueHandle> result;
  for (Value value : values)
    result.push_back(handle(value));
  return result;
}

void BuilderState::verifyNew(Operation *op) {
  DiagnosticCapture capture(mlirContext());
  if (failed(mlir::verify(op))) {
    std::string name = op->getName().getStringRef().str();
    op->erase();
    capture.raise("invalid `" + name + "`");
  }
  capture.warn();
}

namespace {

using Sizes = std::array<int32_t, 3>;
/// A kernel argument: a global-memory array of this shape and element type.
using ArgumentSpec = std::pair<std::vector<int64_t>, ElementType>;

/// Starts a kernel: `gpu.func @name(arguments) kernel` with its grid and
/// block sizes (and cluster, when not 1x1x1, and the flush of subnormals),
/// inside gpu.module @kernels;
/// the builder inserts before its gpu.return.
std::shared_ptr<BuilderState>
startKernel(const std::string &name, const std::vector<ArgumentSpec> &arguments,
            const Sizes &grid, const Sizes &block, const Sizes &cluster,
            const std::string &file, unsigned line, bool flushDenormals,
            const std::vector<unsigned> &symmetric) {
  auto state =
      std::make_shared<BuilderState>(std::make_shared<ContextObject>());
  MLIRContext *ctx = state->mlirContext();
  Location loc = state->location({file, line, 1});
  OpBuilder &b = state->builder;
  state->module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(state->module->getBody());
  auto kernels = gpu::GPUModuleOp::create(b, loc, "kernels");
  b.setInsertionPointToEnd(kernels.getBody());
  SmallVector<Type> types;
  for (const auto &[shape, type] : arguments)
    types.push_back(getMemRefType(ctx, shape, type, /*shared=*/false));
  auto func =
      gpu::GPUFuncOp::create(b, loc, name, b.getFunctionType(types, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(block));
  func.setKnownGridSizeAttr(b.getDenseI32ArrayAttr(grid));
  if (cluster != Sizes{1, 1, 1})
    func->setAttr(mosaic_gpu::kClusterAttr, b.getDenseI32ArrayAttr(cluster));
  if (flushDenormals)
    func->setAttr(mosaic_gpu::kFlushDenormalsAttr, b.getUnitAttr());
  for (unsigned index : symmetric) {
    if (index >= arguments.size())
      throw py::value_error("`symmetric` names argument " +
                            std::to_string(index) + ", but the kernel has " +
                            std::to_string(arguments.size()));
    func.setArgAttr(index, mosaic_gpu::kSymmetricAttr, b.getUnitAttr());
  }
  b.setInsertionPointToEnd(&func.getBody().front());
  b.setInsertionPoint(gpu::ReturnOp::create(b, loc));
  state->kernel = func;
  return state;
}

/// The finished kernel as a Module (a copy: the builder may go on).
ModuleObject finishKernel(BuilderState &state) {
  ModuleObject module(state.context, state.module->clone());
  DiagnosticCapture capture(state.mlirContext());
  if (failed(mlir::verify(*module.module)))
    capture.raise("the kernel does not verify");
  capture.warn();
  return module;
}

OpHandle forOp(BuilderState &state, const SourceLocation &at,
               const ValueHandle &lower, const ValueHandle &upper,
               const ValueHandle &step, const std::vector<ValueHandle> &inits) {
  // A body builder that adds nothing: without one, a loop without carried
  // values would get scf.yield now, and Python yields when the body is done.
  auto op = state.create<scf::ForOp>(
      at, state.use(lower, "lower"), state.use(upper, "upper"),
      state.use(step, "step"), state.use(inits, "carry"),
      [](OpBuilder &, Location, Value, ValueRange) {});
  return {state.shared_from_this(), op};
}

OpHandle ifOp(BuilderState &state, const SourceLocation &at,
              const ValueHandle &condition,
              const std::vector<ValueHandle> &results, bool withElse) {
  SmallVector<Type> types;
  for (Value result : state.use(results, "results"))
    types.push_back(result.getType());
  auto op =
      state.create<scf::IfOp>(at, types, state.use(condition, "condition"),
                              /*addThenBlock=*/true, withElse);
  return {state.shared_from_this(), op};
}

OpHandle whileOp(BuilderState &state, const SourceLocation &at,
                 const std::vector<ValueHandle> &inits) {
  SmallVector<Value> values = state.use(inits, "carry");
  auto op = state.create<scf::WhileOp>(at, ValueRange(values).getTypes(),
                                       values, nullptr, nullptr);
  return {state.shared_from_this(), op};
}

BlockHandle entryBlock(const OpHandle &op, unsigned region) {
  if (region >= op.op->getNumRegions() || op.op->getRegion(region).empty())
    throw py::value_error("`" + op.op->getName().getStringRef().str() +
                          "` has no block in region " + std::to_string(region));
  return {op.state, &op.op->getRegion(region).front()};
}

void verifyOp(const OpHandle &op) {
  DiagnosticCapture capture(op.state->mlirContext());
  if (failed(mlir::verify(op.op)))
    capture.raise("`" + op.op->getName().getStringRef().str() +
                  "` does not verify");
  capture.warn();
}

} // namespace

void registerKernelBuilder(py::module_ &m) {
  py::class_<ValueHandle>(m, "Value", "A value of a kernel being built.")
      .def_property_readonly("type", &ValueHandle::type,
                             "The value's type, as MLIR text.");

  py::class_<BlockHandle>(m, "Block", "A block of a region op being built.")
      .def_property_readonly("arguments", [](const BlockHandle &block) {
        return block.state->handles(block.block->getArguments());
      });

  py::class_<OpHandle>(m, "Operation", "A region op of a kernel being built.")
      .def_property_readonly("results",
                             [](const OpHandle &op) {
                               return op.state->handles(op.op->getResults());
                             })
      .def("block", &entryBlock, py::arg("region"),
           "The block of region `region`.")
      .def("verify", &verifyOp,
           "Verifies the op and what its regions hold (MosaicError).");

  KernelBuilderClass builder(
      m, "KernelBuilder",
      "Builds one kernel op by op; used by mosaic_gpu.kernel. Each op has "
      "its entry point, which takes the Python location (file, line, "
      "column) first and makes the op at the insertion point; enter()/"
      "exit() move it into a region op's block and back. An op without "
      "regions is verified as it is made (MosaicError).");
  builder
      .def_static("start", &startKernel, py::arg("name"), py::arg("arguments"),
                  py::arg("grid"), py::arg("block"), py::arg("cluster"),
                  py::arg("file") = "", py::arg("line") = 0,
                  py::arg("flush_denormals") = false,
                  py::arg("symmetric") = std::vector<unsigned>(),
                  "A module with an empty `gpu.func @name(...) kernel` of "
                  "the given sizes, with one global memref argument per "
                  "(shape, ElementType) of `arguments` (and "
                  "`mosaic_gpu.flush_denormals` with `flush_denormals`); "
                  "the arguments at the positions `symmetric` lists are "
                  "`mosaic_gpu.symmetric`.")
      .def_property_readonly(
          "context", [](const BuilderState &state) { return state.context; })
      .def(
          "arguments",
          [](BuilderState &state) {
            return state.handles(
                state.kernel->getRegion(0).front().getArguments());
          },
          "The kernel's arguments.")
      .def("finish", &finishKernel,
           "Verifies the kernel and returns a copy of it as a Module.")
      .def(
          "enter",
          [](BuilderState &state, const BlockHandle &block) {
            if (block.state.get() != &state)
              throw py::value_error("the block belongs to another kernel");
            state.saved.push_back(state.builder.saveInsertionPoint());
            state.builder.setInsertionPointToEnd(block.block);
          },
          py::arg("block"), "Inserts at the end of `block` until exit().")
      .def(
          "exit",
          [](BuilderState &state) {
            if (state.saved.empty())
              throw py::value_error("exit() without enter()");
            state.builder.restoreInsertionPoint(state.saved.back());
            state.saved.pop_back();
          },
          "Inserts where it did before the matching enter().")
      .def("for_", &forOp, py::arg("loc"), py::arg("lower"), py::arg("upper"),
           py::arg("step"), py::arg("inits"),
           "scf.for with its body block (the index, then one argument per "
           "init), still empty.")
      .def("if_", &ifOp, py::arg("loc"), py::arg("condition"),
           py::arg("results"), py::arg("with_else"),
           "scf.if returning values of the types of `results`, with an "
           "empty then block and, with `with_else`, an empty else block.")
      .def("while_", &whileOp, py::arg("loc"), py::arg("inits"),
           "scf.while carrying `inits`, with empty before and after blocks.")
      .def(
          "yield_",
          [](BuilderState &state, const SourceLocation &at,
             const std::vector<ValueHandle> &values) {
            state.create<scf::YieldOp>(at, state.use(values, "values"));
          },
          py::arg("loc"), py::arg("values"), "scf.yield of `values`.")
      .def(
          "condition",
          [](BuilderState &state, const SourceLocation &at,
             const ValueHandle &flag, const std::vector<ValueHandle> &values) {
            state.create<scf::ConditionOp>(at, state.use(flag, "condition"),
                                           state.use(values, "values"));
          },
          py::arg("loc"), py::arg("condition"), py::arg("values"),
          "scf.condition: go on with `values` while `condition` holds.");

  registerOpBuilders(m, builder);
}

} // namespace mosaic::python
