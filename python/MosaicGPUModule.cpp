//===- MosaicGPUModule.cpp - The mosaic_gpu._mosaic Python module ---------===//
//
// Python bindings over the project's C++ API: parsing and printing modules,
// running pass pipelines, layout inference and compilation (lib/Compiler,
// which mosaic-compile uses too). MLIR diagnostics become
// mosaic_gpu.MosaicError. Documented in python/README.md.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Compiler/Compiler.h"
#include "mosaic/LayoutInference/Passes.h"
#ifdef MOSAIC_PYTHON_RUNTIME
#include "RuntimeBindings.h"
#endif

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SourceMgr.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace mlir;

namespace {

/// One MLIR diagnostic with its notes, as Python sees it.
struct DiagnosticRecord {
  std::string severity;
  /// `file:line:col`, or the printed location when it has no file.
  std::string location;
  std::string message;
  std::vector<DiagnosticRecord> notes;

  /// `location: severity: message`, then one such line per note.
  std::string str() const {
    std::string text = location.empty() ? "" : location + ": ";
    text += severity + ": " + message;
    for (const DiagnosticRecord &note : notes)
      text += "\n" + note.str();
    return text;
  }
};

std::string formatLocation(Location loc) {
  if (auto file = loc->findInstanceOf<FileLineColLoc>())
    return llvm::formatv("{0}:{1}:{2}", file.getFilename().getValue(),
                         file.getLine(), file.getColumn());
  if (isa<UnknownLoc>(loc))
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

const char *severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  llvm_unreachable("unknown diagnostic severity");
}

DiagnosticRecord convert(const Diagnostic &diagnostic) {
  DiagnosticRecord result{severityName(diagnostic.getSeverity()),
                          formatLocation(diagnostic.getLocation()),
                          diagnostic.str(),
                          {}};
  for (const Diagnostic &note : diagnostic.getNotes())
    result.notes.push_back(convert(note));
  return result;
}

/// Thrown by the bindings; becomes mosaic_gpu.MosaicError, whose
/// `diagnostics` attribute holds the diagnostics.
struct MosaicException : std::exception {
  MosaicException(std::string message,
                  std::vector<DiagnosticRecord> diagnostics)
      : message(std::move(message)), diagnostics(std::move(diagnostics)) {}
  const char *what() const noexcept override { return message.c_str(); }
  std::string message;
  std::vector<DiagnosticRecord> diagnostics;
};

/// Collects every diagnostic emitted on a context while it lives, instead
/// of printing them.
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(MLIRContext *context)
      : handler(context, [this](Diagnostic &diagnostic) {
          diagnostics.push_back(convert(diagnostic));
          return success();
        }) {}

  /// Throws a MosaicException: `what`, then every diagnostic collected.
  [[noreturn]] void raise(const std::string &what) {
    std::string message = what;
    for (const DiagnosticRecord &diagnostic : diagnostics)
      message += "\n" + diagnostic.str();
    throw MosaicException(message, std::move(diagnostics));
  }

  /// After a success: issues the diagnostics collected (warnings, remarks)
  /// as Python warnings.
  void warn() {
    for (const DiagnosticRecord &diagnostic : diagnostics)
      if (PyErr_WarnEx(PyExc_UserWarning, diagnostic.str().c_str(), 1) != 0)
        throw py::error_already_set();
    diagnostics.clear();
  }

private:
  std::vector<DiagnosticRecord> diagnostics;
  ScopedDiagnosticHandler handler;
};

/// An MLIRContext with the dialects, interfaces and passes mosaic-compile
/// registers.
struct ContextObject {
  ContextObject() : context(makeRegistry()) {
    context.loadAllAvailableDialects();
  }

  static DialectRegistry makeRegistry() {
    DialectRegistry registry;
    mosaic::registerCompilerDialects(registry);
    return registry;
  }

  MLIRContext context;
};

/// A builtin.module and the context it lives in.
struct ModuleObject {
  ModuleObject(std::shared_ptr<ContextObject> context,
               OwningOpRef<ModuleOp> module)
      : context(std::move(context)), module(std::move(module)) {}

  MLIRContext *mlirContext() { return &context->context; }

  std::string str() {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    return text;
  }

  // Declared first, destroyed last: the module needs its context.
  std::shared_ptr<ContextObject> context;
  OwningOpRef<ModuleOp> module;
};

std::shared_ptr<ContextObject>
contextOrNew(std::shared_ptr<ContextObject> context) {
  return context ? context : std::make_shared<ContextObject>();
}

ModuleObject parseModule(const std::string &text,
                         std::shared_ptr<ContextObject> context,
                         const std::string &name, bool verify) {
  context = contextOrNew(std::move(context));
  DiagnosticCapture capture(&context->context);
  ParserConfig config(&context->context, verify);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, config, name);
  if (!module)
    capture.raise("cannot parse `" + name + "`");
  capture.warn();
  return ModuleObject(std::move(context), std::move(module));
}

ModuleObject parseModuleFile(const std::string &path,
                             std::shared_ptr<ContextObject> context,
                             bool verify) {
  context = contextOrNew(std::move(context));
  DiagnosticCapture capture(&context->context);
  ParserConfig config(&context->context, verify);
  llvm::SourceMgr sourceMgr;
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(path, sourceMgr, config);
  if (!module)
    capture.raise("cannot parse `" + path + "`");
  capture.warn();
  return ModuleObject(std::move(context), std::move(module));
}

void runPipeline(ModuleObject &module, const std::string &pipeline) {
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  FailureOr<OpPassManager> parsed = parsePassPipeline(pipeline, errorStream);
  if (failed(parsed))
    throw py::value_error("invalid pass pipeline `" + pipeline +
                          "`: " + errors);
  PassManager pm(module.mlirContext(), parsed->getOpAnchorName());
  static_cast<OpPassManager &>(pm) = std::move(*parsed);
  DiagnosticCapture capture(module.mlirContext());
  if (failed(pm.run(*module.module)))
    capture.raise("pass pipeline `" + pipeline + "` failed");
  capture.warn();
}

void runPasses(ModuleObject &module, const std::vector<std::string> &passes) {
  std::string pipeline = "builtin.module(";
  for (const std::string &pass : passes) {
    if (pass.empty())
      throw py::value_error("empty pass name in the list of passes");
    pipeline += (&pass == &passes.front() ? "" : ",") + pass;
  }
  runPipeline(module, pipeline + ")");
}

/// The layouts and transforms inference wrote on one op.
struct OpLayouts {
  std::string op;
  std::string location;
  std::vector<std::string> inLayouts, outLayouts, inTransforms, outTransforms;
};

/// An attribute as printed IR shows it: the named layouts as their alias
/// (`#wgmma`), others in full.
std::string printAttribute(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto *asmInterface =
          attr.getDialect().getRegisteredInterface<OpAsmDialectInterface>())
    if (asmInterface->getAlias(attr, os) !=
        OpAsmDialectInterface::AliasResult::NoAlias)
      return "#" + text;
  text.clear();
  attr.print(os);
  return text;
}

std::vector<std::string> printArray(Operation *op, StringRef name) {
  std::vector<std::string> printed;
  if (auto array = op->getAttrOfType<ArrayAttr>(name))
    for (Attribute attr : array)
      printed.push_back(printAttribute(attr));
  return printed;
}

std::vector<OpLayouts> inferLayouts(ModuleObject &module,
                                    std::optional<int64_t> fuel,
                                    bool verifySolution) {
  mosaic::MosaicGPUInferLayoutsOptions options;
  if (fuel)
    options.fuel = *fuel;
  options.verifySolution = verifySolution;
  OwningOpRef<ModuleOp> annotated = module.module->clone();
  PassManager pm(module.mlirContext());
  pm.addPass(mosaic::createMosaicGPUInferLayouts(options));
  DiagnosticCapture capture(module.mlirContext());
  if (failed(pm.run(*annotated)))
    capture.raise("layout inference failed");
  capture.warn();
  std::vector<OpLayouts> result;
  annotated->walk<WalkOrder::PreOrder>([&](Operation *op) {
    OpLayouts layouts{
        op->getName().getStringRef().str(), formatLocation(op->getLoc()),
        printArray(op, "in_layouts"),       printArray(op, "out_layouts"),
        printArray(op, "in_transforms"),    printArray(op, "out_transforms")};
    if (!layouts.inLayouts.empty() || !layouts.outLayouts.empty() ||
        !layouts.inTransforms.empty() || !layouts.outTransforms.empty())
      result.push_back(std::move(layouts));
  });
  return result;
}

mosaic::EmitKind emitKindOf(const std::string &emit) {
  if (emit == "mlir")
    return mosaic::EmitKind::Mlir;
  if (emit == "llvm")
    return mosaic::EmitKind::Llvm;
  if (emit == "ptx")
    return mosaic::EmitKind::Ptx;
  if (emit == "cubin")
    return mosaic::EmitKind::Cubin;
  throw py::value_error("emit must be 'cubin', 'ptx', 'llvm' or 'mlir', got '" +
                        emit + "'");
}

const char *emitKindName(mosaic::EmitKind emit) {
  switch (emit) {
  case mosaic::EmitKind::Mlir:
    return "mlir";
  case mosaic::EmitKind::Llvm:
    return "llvm";
  case mosaic::EmitKind::Ptx:
    return "ptx";
  case mosaic::EmitKind::Cubin:
    return "cubin";
  }
  llvm_unreachable("unknown emit kind");
}

mosaic::CompiledKernel compile(ModuleObject &module, const std::string &arch,
                               int optLevel,
                               std::optional<std::string> ptxFeatures,
                               bool lineInfo, const std::string &emit,
                               std::optional<std::string> dumpTo) {
  mosaic::CompileOptions options;
  options.arch = arch;
  if (optLevel < 0)
    throw py::value_error("the optimization level must be 0 to 3, got " +
                          std::to_string(optLevel));
  options.optLevel = static_cast<unsigned>(optLevel);
  options.ptxFeatures = ptxFeatures.value_or("");
  options.lineInfo = lineInfo;
  options.emit = emitKindOf(emit);
  if (dumpTo)
    options.dumpDirectory = *dumpTo;
  else if (const char *dir = std::getenv("MOSAIC_GPU_DUMP_TO"))
    options.dumpDirectory = dir;

  DiagnosticCapture capture(module.mlirContext());
  llvm::Expected<mosaic::CompiledKernel> kernel =
      mosaic::compileKernel(*module.module, options);
  if (kernel) {
    capture.warn();
    return std::move(*kernel);
  }
  std::string what = "compilation failed";
  std::optional<std::string> badOption;
  llvm::handleAllErrors(kernel.takeError(),
                        [&](const mosaic::CompileError &error) {
                          if (error.kind == mosaic::CompileError::Kind::Option)
                            badOption = error.message;
                          if (!error.diagnosed())
                            what += ": " + error.message;
                          if (!error.toolOutput.empty())
                            what += "\n" + error.toolOutput;
                        });
  if (badOption)
    throw py::value_error(*badOption);
  capture.raise(what);
}

py::object optionalText(const std::string &text) {
  if (text.empty())
    return py::none();
  return py::str(text);
}

std::string manifestJson(const mosaic::CompiledKernel &kernel) {
  return llvm::formatv("{0}",
                       llvm::json::Value(llvm::json::Object(kernel.manifest)))
      .str();
}

//===----------------------------------------------------------------------===//
// The kernel builder behind mosaic_gpu's authoring API
//===----------------------------------------------------------------------===//

/// A module with one kernel under construction: builtin.module >
/// gpu.module @kernels > gpu.func, and an OpBuilder inserting into it. Ops
/// are made generically (name, operands, result types, attributes as MLIR
/// text); the Python layer knows each op's form, the verifiers check it.
struct BuilderState {
  std::shared_ptr<ContextObject> context;
  OwningOpRef<ModuleOp> module;
  OpBuilder builder;
  /// The gpu.func being built.
  Operation *kernel = nullptr;
  /// Where to return to when the innermost region being built is closed.
  std::vector<OpBuilder::InsertPoint> saved;

  explicit BuilderState(std::shared_ptr<ContextObject> context)
      : context(std::move(context)), builder(&this->context->context) {}
  MLIRContext *mlirContext() { return &context->context; }
};

/// A value of the kernel being built; keeps the builder alive.
struct ValueHandle {
  std::shared_ptr<BuilderState> state;
  Value value;

  std::string type() const {
    std::string text;
    llvm::raw_string_ostream os(text);
    value.getType().print(os);
    return text;
  }
};

/// Handles on `values`, which belong to the kernel `state` builds.
std::vector<ValueHandle> handles(const std::shared_ptr<BuilderState> &state,
                                 ValueRange values) {
  std::vector<ValueHandle> result;
  for (Value value : values)
    result.push_back({state, value});
  return result;
}

/// A block of a region op (scf.for, scf.if, scf.while) being built.
struct BlockHandle {
  std::shared_ptr<BuilderState> state;
  Block *block;

  std::vector<ValueHandle> arguments() const {
    return handles(state, block->getArguments());
  }
};

/// An op of the kernel being built.
struct OpHandle {
  std::shared_ptr<BuilderState> state;
  Operation *op;

  std::vector<ValueHandle> results() const {
    return handles(state, op->getResults());
  }

  BlockHandle addBlock(unsigned region, const std::vector<std::string> &types,
                       const Location &loc);
  void verify() const;
};

Type parseTypeText(BuilderState &state, const std::string &text) {
  DiagnosticCapture capture(state.mlirContext());
  Type type = parseType(text, state.mlirContext());
  if (!type)
    capture.raise("invalid type `" + text + "`");
  return type;
}

Attribute parseAttributeText(BuilderState &state, const std::string &text) {
  DiagnosticCapture capture(state.mlirContext());
  Attribute attr = parseAttribute(text, state.mlirContext());
  if (!attr)
    capture.raise("invalid attribute `" + text + "`");
  return attr;
}

/// `file:line:col` of the Python code that made an op.
Location makeLocation(BuilderState &state, const std::string &file,
                      unsigned line, unsigned col) {
  if (file.empty())
    return UnknownLoc::get(state.mlirContext());
  return FileLineColLoc::get(state.mlirContext(), file, line, col);
}

BlockHandle OpHandle::addBlock(unsigned region,
                               const std::vector<std::string> &types,
                               const Location &loc) {
  if (region >= op->getNumRegions())
    throw py::value_error("`" + op->getName().getStringRef().str() +
                          "` has no region " + std::to_string(region));
  Block *block = new Block();
  op->getRegion(region).push_back(block);
  for (const std::string &type : types)
    block->addArgument(parseTypeText(*state, type), loc);
  return {state, block};
}

void OpHandle::verify() const {
  DiagnosticCapture capture(state->mlirContext());
  if (failed(mlir::verify(op)))
    capture.raise("`" + op->getName().getStringRef().str() +
                  "` does not verify");
  capture.warn();
}

/// Starts a kernel: `gpu.func @name(args) kernel` with its grid and block
/// sizes (and cluster, when not 1x1x1), inside gpu.module @kernels; the
/// builder inserts before its gpu.return.
std::shared_ptr<BuilderState>
startKernel(const std::string &name, const std::vector<std::string> &argTypes,
            const std::vector<int32_t> &grid, const std::vector<int32_t> &block,
            const std::vector<int32_t> &cluster, const std::string &file,
            unsigned line) {
  auto state =
      std::make_shared<BuilderState>(std::make_shared<ContextObject>());
  auto dims = [](const std::vector<int32_t> &sizes) {
    std::string text = "array<i32";
    for (int32_t size : sizes)
      text += (text.size() == 9 ? ": " : ", ") + std::to_string(size);
    return text + ">";
  };
  std::string args;
  for (const std::string &type : argTypes)
    args += (args.empty() ? "%arg" : ", %arg") +
            std::to_string(&type - argTypes.data()) + ": " + type;
  std::string attributes =
      "known_block_size = " + dims(block) + ", known_grid_size = " + dims(grid);
  if (cluster != std::vector<int32_t>{1, 1, 1})
    attributes += ", mosaic_gpu.cluster = " + dims(cluster);
  std::string text = "gpu.module @kernels {\n  gpu.func @" + name + "(" + args +
                     ") kernel attributes {" + attributes +
                     "} {\n    gpu.return\n  }\n}\n";
  DiagnosticCapture capture(state->mlirContext());
  ParserConfig config(state->mlirContext());
  state->module = parseSourceString<ModuleOp>(text, config, file);
  if (!state->module)
    capture.raise("cannot start kernel `" + name + "`");
  Location loc = makeLocation(*state, file, line, 1);
  state->module->walk([&](Operation *op) {
    op->setLoc(loc);
    if (op->getName().getStringRef() == "gpu.func")
      state->kernel = op;
  });
  state->builder.setInsertionPoint(
      state->kernel->getRegion(0).front().getTerminator());
  return state;
}

/// Makes one op at the insertion point. Ops without regions are verified at
/// once, so an error points at the Python line that made the op; ops with
/// regions are verified when their regions are closed (OpHandle.verify).
OpHandle createOp(std::shared_ptr<BuilderState> state, const std::string &name,
                  const std::vector<ValueHandle> &operands,
                  const std::vector<std::string> &resultTypes,
                  const std::map<std::string, std::string> &attributes,
                  unsigned regions, const std::string &file, unsigned line,
                  unsigned col) {
  Location loc = makeLocation(*state, file, line, col);
  OperationState op(loc, name);
  if (!op.name.isRegistered())
    throw py::value_error("unknown op `" + name + "`");
  for (const ValueHandle &operand : operands) {
    if (operand.state != state)
      throw py::value_error("an operand of `" + name +
                            "` belongs to another kernel");
    op.addOperands(operand.value);
  }
  for (const std::string &type : resultTypes)
    op.addTypes(parseTypeText(*state, type));
  for (const auto &[attrName, text] : attributes)
    op.addAttribute(attrName, parseAttributeText(*state, text));
  for (unsigned i = 0; i < regions; ++i)
    op.addRegion();
  Operation *created = state->builder.create(op);
  OpHandle handle{state, created};
  if (regions == 0) {
    DiagnosticCapture capture(state->mlirContext());
    if (failed(mlir::verify(created))) {
      created->erase();
      capture.raise("invalid `" + name + "`");
    }
    capture.warn();
  }
  return handle;
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

std::vector<ValueHandle> kernelArguments(std::shared_ptr<BuilderState> state) {
  return handles(state, state->kernel->getRegion(0).front().getArguments());
}

} // namespace

PYBIND11_MODULE(_mosaic, m) {
  m.doc() = "The C++ core of mosaic_gpu; import mosaic_gpu instead.";
  mosaic::registerCompilerPasses();

  static py::exception<MosaicException> mosaicError(m, "MosaicError");
  mosaicError.doc() =
      "An MLIR diagnostic (parse, verifier, pass or inference error) or a "
      "toolchain failure (ptxas). str(error) holds every diagnostic with its "
      "location and notes; `diagnostics` holds them as Diagnostic objects.";
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown)
        std::rethrow_exception(thrown);
    } catch (const MosaicException &exception) {
      py::object error =
          py::reinterpret_borrow<py::object>(mosaicError)(exception.message);
      error.attr("diagnostics") = py::cast(exception.diagnostics);
      PyErr_SetObject(mosaicError.ptr(), error.ptr());
    }
  });

  py::class_<DiagnosticRecord>(
      m, "Diagnostic", "One MLIR diagnostic and the notes attached to it.")
      .def_readonly("severity", &DiagnosticRecord::severity,
                    "'error', 'warning', 'note' or 'remark'.")
      .def_readonly("location", &DiagnosticRecord::location,
                    "'file:line:col' (empty when unknown).")
      .def_readonly("message", &DiagnosticRecord::message)
      .def_readonly("notes", &DiagnosticRecord::notes,
                    "The attached notes, as Diagnostic objects.")
      .def("__str__", &DiagnosticRecord::str)
      .def("__repr__", [](const DiagnosticRecord &diagnostic) {
        return "<Diagnostic " + diagnostic.str() + ">";
      });

  py::class_<ContextObject, std::shared_ptr<ContextObject>>(
      m, "Context",
      "An MLIR context with the mosaic_gpu dialect and the upstream dialects "
      "kernels use (func, gpu, arith, math, vector, memref, scf, cf, llvm, "
      "nvvm, nvgpu, index), as mosaic-compile registers them. Modules keep "
      "their context alive.")
      .def(py::init<>());

  py::class_<ModuleObject>(m, "Module", "An MLIR builtin.module.")
      .def_static("parse", &parseModule, py::arg("text"),
                  py::arg("context") = py::none(), py::arg("name") = "<string>",
                  py::arg("verify") = true,
                  "Parses MLIR text; `name` is the file name diagnostics "
                  "show. A new Context is made when none is given. Raises "
                  "MosaicError on a parse or (with verify) verifier error.")
      .def_static("parse_file", &parseModuleFile, py::arg("path"),
                  py::arg("context") = py::none(), py::arg("verify") = true,
                  "Parses an MLIR file, like Module.parse.")
      .def(
          "verify",
          [](ModuleObject &module) {
            DiagnosticCapture capture(module.mlirContext());
            if (failed(mlir::verify(*module.module)))
              capture.raise("the module does not verify");
            capture.warn();
          },
          "Runs the verifiers; raises MosaicError naming the op on failure.")
      .def(
          "clone",
          [](ModuleObject &module) {
            return ModuleObject(module.context, module.module->clone());
          },
          "A copy of the module, in the same context.")
      .def_property_readonly(
          "context", [](ModuleObject &module) { return module.context; })
      .def("__str__", &ModuleObject::str, "The module's MLIR text.");

  py::class_<OpLayouts>(
      m, "OpLayouts",
      "The layouts and shared-memory transforms inference chose for one op. "
      "Each is the attribute's MLIR text; the named Hopper layouts print as "
      "their alias (#wgmma, #wgmma_row, ...), as in printed IR.")
      .def_readonly("op", &OpLayouts::op, "The op's name, e.g. 'arith.addf'.")
      .def_readonly("location", &OpLayouts::location, "'file:line:col'.")
      .def_readonly("in_layouts", &OpLayouts::inLayouts,
                    "One register layout per vector operand.")
      .def_readonly("out_layouts", &OpLayouts::outLayouts,
                    "One register layout per vector result.")
      .def_readonly("in_transforms", &OpLayouts::inTransforms,
                    "One transform list per shared-memory operand.")
      .def_readonly("out_transforms", &OpLayouts::outTransforms,
                    "One transform list per shared-memory result.")
      .def("__repr__", [](const OpLayouts &layouts) {
        auto join = [](const std::vector<std::string> &items) {
          std::string text = "[";
          for (const std::string &item : items)
            text += (text.size() == 1 ? "" : ", ") + item;
          return text + "]";
        };
        return "<OpLayouts " + layouts.op + " at " + layouts.location +
               ": in " + join(layouts.inLayouts) + " out " +
               join(layouts.outLayouts) + ">";
      });

  py::class_<mosaic::CompiledKernel>(
      m, "CompiledKernel",
      "The result of compile(). Only what `emit` asked for is set; the other "
      "properties are None.")
      .def_property_readonly("emit",
                             [](const mosaic::CompiledKernel &kernel) {
                               return emitKindName(kernel.emit);
                             })
      .def_readonly("entry", &mosaic::CompiledKernel::entry,
                    "The kernel's symbol.")
      .def_readonly("ptx_features", &mosaic::CompiledKernel::ptxFeatures,
                    "The PTX ISA feature used, e.g. '+ptx90'.")
      .def_property_readonly(
          "mlir",
          [](const mosaic::CompiledKernel &kernel) {
            return optionalText(kernel.mlir);
          },
          "emit='mlir': the module after mosaic-gpu-pipeline (str).")
      .def_property_readonly(
          "llvm",
          [](const mosaic::CompiledKernel &kernel) {
            return optionalText(kernel.llvmIR);
          },
          "emit='llvm': the kernel's LLVM IR (str).")
      .def_property_readonly(
          "ptx",
          [](const mosaic::CompiledKernel &kernel) {
            return optionalText(kernel.ptx);
          },
          "emit='ptx' or 'cubin': the PTX (str).")
      .def_property_readonly(
          "cubin",
          [](const mosaic::CompiledKernel &kernel) -> py::object {
            if (kernel.cubin.empty())
              return py::none();
            return py::bytes(kernel.cubin);
          },
          "emit='cubin': the CUBIN (bytes).")
      .def_property_readonly(
          "ptxas_report",
          [](const mosaic::CompiledKernel &kernel) {
            return optionalText(kernel.ptxasReport);
          },
          "emit='cubin': what `ptxas -v` printed (registers, spills).")
      .def_property_readonly(
          "manifest",
          [](const mosaic::CompiledKernel &kernel) -> py::object {
            if (kernel.emit != mosaic::EmitKind::Cubin)
              return py::none();
            return py::module_::import("json").attr("loads")(
                manifestJson(kernel));
          },
          "emit='cubin': the manifest mosaic-compile writes, as a dict (a "
          "new one on each access). Its 'cubin' and 'ptx' keys are "
          "'<entry>.cubin' and '<entry>.ptx' until write() names the files.")
      .def_property_readonly(
          "stage_times",
          [](const mosaic::CompiledKernel &kernel) {
            py::dict times;
            for (const auto &[name, ms] : kernel.stageTimes)
              times[py::str(name)] = ms;
            return times;
          },
          "Wall time of each stage that ran, in ms, in order.")
      .def(
          "write",
          [](const mosaic::CompiledKernel &kernel, const std::string &path) {
            if (llvm::Error error = mosaic::writeCompiledKernel(kernel, path))
              throw std::runtime_error(llvm::toString(std::move(error)));
          },
          py::arg("path"),
          "Writes what was emitted to `path`: the text, or the CUBIN with "
          "its PTX and its manifest beside it (`path` with the extensions "
          ".ptx and .json), as mosaic-compile does. Raises RuntimeError when "
          "a file cannot be written or a CUBIN's path ends in .ptx or .json.")
      .def("__repr__", [](const mosaic::CompiledKernel &kernel) {
        return "<CompiledKernel " + kernel.entry + " (" +
               emitKindName(kernel.emit) + ", " + kernel.ptxFeatures + ")>";
      });

  m.def(
      "find_ptxas",
      []() -> py::object {
        if (std::optional<std::string> ptxas = mosaic::findCudaTool("ptxas"))
          return py::str(*ptxas);
        return py::none();
      },
      "The ptxas compile() runs for emit='cubin' (found on PATH or under "
      "CUDA_HOME, CUDA_ROOT, CUDA_PATH or /usr/local/cuda), or None.");
  m.def("run_pipeline", &runPipeline, py::arg("module"), py::arg("pipeline"),
        "Runs a textual pass pipeline anchored on builtin.module, e.g. "
        "'builtin.module(mosaic-gpu-infer-layouts,canonicalize)', on the "
        "module in place. Every pass mosaic-opt knows can be named. Raises "
        "ValueError for a pipeline that does not parse (an unknown pass) and "
        "MosaicError when a pass fails.");
  m.def("run_passes", &runPasses, py::arg("module"), py::arg("passes"),
        "Runs a list of passes (each as in a pipeline, options included: "
        "'mosaic-gpu-infer-layouts{fuel=10}') on the module in place; the "
        "same as run_pipeline(module, 'builtin.module(' + ','.join(passes) "
        "+ ')').");
  m.def("infer_layouts", &inferLayouts, py::arg("module"),
        py::arg("fuel") = py::none(), py::arg("verify_solution") = false,
        "Runs mosaic-gpu-infer-layouts on a copy of the module (which is "
        "left unchanged) and returns an OpLayouts per annotated op, in "
        "program order. Raises MosaicError, with the conflicting ops as "
        "notes, when no assignment exists.");
  m.def("compile", &compile, py::arg("module"), py::arg("arch") = "sm_90a",
        py::arg("opt_level") = 3, py::arg("ptx_features") = py::none(),
        py::arg("line_info") = true, py::arg("emit") = "cubin",
        py::arg("dump_to") = py::none(),
        "Compiles the module's one kernel through mosaic-gpu-pipeline, as "
        "mosaic-compile does, and returns a CompiledKernel; the module is "
        "left unchanged. emit: 'cubin' (runs ptxas; the default), 'ptx', "
        "'llvm' or 'mlir'. ptx_features: e.g. '+ptx85' (default: the newest "
        "ISA both LLVM and the installed ptxas accept). dump_to (default: "
        "$MOSAIC_GPU_DUMP_TO): a directory for the IR after every pass, the "
        "LLVM IR, the PTX and the SASS. Raises ValueError for a bad "
        "argument, MosaicError for an error in the kernel or the toolchain "
        "(ptxas missing or failing).");

  py::class_<BuilderState, std::shared_ptr<BuilderState>>(
      m, "KernelBuilder",
      "Builds one kernel op by op; used by mosaic_gpu.kernel. Ops are made "
      "at the insertion point, which enter()/exit() move into a region op's "
      "block and back.")
      .def_static("start", &startKernel, py::arg("name"), py::arg("arg_types"),
                  py::arg("grid"), py::arg("block"), py::arg("cluster"),
                  py::arg("file") = "", py::arg("line") = 0,
                  "A module with an empty `gpu.func @name(arg_types) kernel` "
                  "of the given sizes.")
      .def("arguments", &kernelArguments, "The kernel's arguments.")
      .def("create", &createOp, py::arg("name"), py::arg("operands"),
           py::arg("result_types"), py::arg("attributes"),
           py::arg("regions") = 0, py::arg("file") = "", py::arg("line") = 0,
           py::arg("col") = 0,
           "Makes an op (types and attributes as MLIR text) at the insertion "
           "point; an op without regions is verified at once (MosaicError).")
      .def(
          "enter",
          [](BuilderState &state, const BlockHandle &block) {
            state.saved.push_back(state.builder.saveInsertionPoint());
            state.builder.setInsertionPointToEnd(block.block);
          },
          "Inserts at the end of `block` until exit().")
      .def(
          "exit",
          [](BuilderState &state) {
            if (state.saved.empty())
              throw py::value_error("exit() without enter()");
            state.builder.restoreInsertionPoint(state.saved.back());
            state.saved.pop_back();
          },
          "Inserts where it did before the matching enter().")
      .def("finish", &finishKernel,
           "Verifies the kernel and returns a copy of it as a Module.");

  py::class_<ValueHandle>(m, "Value", "A value of a kernel being built.")
      .def_property_readonly("type", &ValueHandle::type,
                             "The value's type, as MLIR text.");

  py::class_<BlockHandle>(m, "Block", "A block of a region op being built.")
      .def_property_readonly("arguments", &BlockHandle::arguments);

  py::class_<OpHandle>(m, "Operation", "An op of a kernel being built.")
      .def_property_readonly("results", &OpHandle::results)
      .def(
          "add_block",
          [](OpHandle &op, unsigned region,
             const std::vector<std::string> &types) {
            return op.addBlock(region, types, op.op->getLoc());
          },
          py::arg("region"), py::arg("arg_types"),
          "Appends a block with arguments of the given types to a region.")
      .def("verify", &OpHandle::verify,
           "Verifies the op and what its regions hold (MosaicError).");

#ifdef MOSAIC_PYTHON_RUNTIME
  mosaic::python::registerRuntime(m);
#endif
}
