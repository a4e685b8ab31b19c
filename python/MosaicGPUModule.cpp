//===- MosaicGPUModule.cpp - The mosaic_gpu._mosaic Python module ---------===//
//
// Python bindings over the project's C++ API: parsing and printing modules,
// running pass pipelines, layout inference and compilation (lib/Compiler,
// which mosaic-compile uses too). MLIR diagnostics become
// mosaic_gpu.MosaicError (Support.cpp). The kernel builder of the authoring
// API is in KernelBuilder.cpp, OpBuilders.cpp and Attributes.cpp.
// Documented in python/README.md.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Compiler/Compiler.h"
#include "mosaic/Dialect/MosaicGPU/Annotations.h"
#include "mosaic/LayoutInference/Passes.h"
#ifdef MOSAIC_PYTHON_RUNTIME
#include "RuntimeBindings.h"
#endif

#include "Attributes.h"
#include "KernelBuilder.h"
#include "Support.h"

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

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace mlir;

using namespace mosaic::python;

namespace mosaic::python {

static DialectRegistry compilerRegistry() {
  DialectRegistry registry;
  mosaic::registerCompilerDialects(registry);
  return registry;
}

ContextObject::ContextObject() : context(compilerRegistry()) {
  context.loadAllAvailableDialects();
}

} // namespace mosaic::python

namespace {

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
    OpLayouts layouts{op->getName().getStringRef().str(),
                      formatLocation(op->getLoc()),
                      printArray(op, mosaic_gpu::kInLayoutsAttr),
                      printArray(op, mosaic_gpu::kOutLayoutsAttr),
                      printArray(op, mosaic_gpu::kInTransformsAttr),
                      printArray(op, mosaic_gpu::kOutTransformsAttr)};
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
  llvm::Expected<mosaic::CompiledKernel> kernel = [&] {
    // Compiling (ptxas included) touches no Python object and the capture
    // collects diagnostics in C++: other Python threads run meanwhile.
    py::gil_scoped_release released;
    return mosaic::compileKernel(*module.module, options);
  }();
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
  return mosaic::formatManifest(kernel.manifest);
}

/// The manifest at `path`, read and checked by the reader the runtime uses;
/// ValueError with its message otherwise.
mosaic::Manifest loadManifest(const std::string &path) {
  mosaic::Expected<mosaic::Manifest> manifest = mosaic::loadManifest(path);
  if (!manifest.ok())
    throw py::value_error(manifest.message());
  return std::move(*manifest);
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

  py::class_<mosaic::Manifest>(
      m, "Manifest",
      "A compiled kernel's JSON manifest, read and checked as the runtime "
      "reads it (mosaic/Contracts/Manifest.h).")
      .def_static("load", &loadManifest, py::arg("path"),
                  "Reads and checks the manifest at `path`; ValueError, "
                  "naming the file and the field, when it is not one.")
      .def_readonly("entry", &mosaic::Manifest::entry)
      .def_readonly("arch", &mosaic::Manifest::arch)
      .def_readonly("cubin_path", &mosaic::Manifest::cubinPath,
                    "The CUBIN's path, resolved against the manifest's "
                    "folder.")
      .def_readonly("ptx_path", &mosaic::Manifest::ptxPath,
                    "The PTX's path, resolved likewise; empty when the "
                    "manifest names no PTX.")
      .def_readonly("grid", &mosaic::Manifest::grid)
      .def_readonly("block", &mosaic::Manifest::block)
      .def_readonly("cluster", &mosaic::Manifest::cluster)
      .def_readonly("dynamic_smem_bytes", &mosaic::Manifest::dynamicSmemBytes)
      .def("__str__", &mosaic::formatManifest);
  m.attr("MAX_SHARED_MEMORY_PER_BLOCK") =
      mosaic::limits::kMaxSharedMemoryPerBlock;

  registerAttributes(m);
  registerKernelBuilder(m);

#ifdef MOSAIC_PYTHON_RUNTIME
  mosaic::python::registerRuntime(m);
#endif
}
