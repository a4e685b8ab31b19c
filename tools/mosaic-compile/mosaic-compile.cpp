//===- mosaic-compile.cpp - Compile a mosaic_gpu kernel to a CUBIN --------===//
//
// mosaic-compile kernel.mlir -o kernel.cubin
//
// Runs mosaic-gpu-pipeline on the kernel, serializes it to PTX, runs ptxas
// (with -v, to report registers and spills) and writes the CUBIN with a JSON
// manifest next to it: what a runtime needs to launch the kernel. The work is
// done by lib/Compiler, which the Python module shares.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Compiler/Compiler.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <chrono>

using namespace mlir;
namespace cl = llvm::cl;
using mosaic::EmitKind;

// --help lists these, MLIR's options (diagnostics, threading, printing) and
// the generic ones; libLLVM.so registers hundreds more for its backends
// (AMDGPU, AArch64, ...), which main() hides.
static cl::OptionCategory compileCategory("mosaic-compile options");
static cl::OptionCategory mlirCategory("MLIR options");

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<kernel.mlir>"),
                                      cl::Required, cl::cat(compileCategory));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"),
                                       cl::cat(compileCategory));
static cl::opt<EmitKind> emit(
    "emit", cl::desc("What to produce"), cl::init(EmitKind::Cubin),
    cl::cat(compileCategory),
    cl::values(clEnumValN(EmitKind::Mlir, "mlir", "MLIR after the pipeline"),
               clEnumValN(EmitKind::Llvm, "llvm", "LLVM IR of the kernel"),
               clEnumValN(EmitKind::Ptx, "ptx", "PTX"),
               clEnumValN(EmitKind::Cubin, "cubin",
                          "CUBIN and its JSON manifest (default)")));
static cl::opt<std::string> arch("arch", cl::desc("Target (only sm_90a)"),
                                 cl::init("sm_90a"), cl::cat(compileCategory));
static cl::opt<std::string> ptxFeatures(
    "ptx-features",
    cl::desc("PTX ISA version feature, e.g. +ptx85 (default: the newest ISA "
             "both the installed ptxas and LLVM accept)"),
    cl::init(""), cl::cat(compileCategory));
static cl::opt<unsigned> optLevel("O", cl::desc("Optimization level (0-3)"),
                                  cl::init(3), cl::Prefix,
                                  cl::cat(compileCategory));
static cl::opt<bool> lineInfo("lineinfo", cl::desc("Pass -lineinfo to ptxas"),
                              cl::init(true), cl::cat(compileCategory));
static cl::opt<bool>
    timeStages("time-stages",
               cl::desc("Print the wall time of each compilation stage, in ms"),
               cl::init(false), cl::cat(compileCategory));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "mosaic-compile: error: " << message << "\n";
  return 1;
}

/// Prints a compilation error; MLIR diagnostics were printed already.
static int fail(llvm::Error error) {
  int status = 1;
  llvm::handleAllErrors(std::move(error), [&](const mosaic::CompileError &e) {
    llvm::errs() << e.toolOutput;
    if (!e.diagnosed())
      status = fail(e.message);
  });
  return status;
}

static llvm::StringRef extensionOf(EmitKind kind) {
  switch (kind) {
  case EmitKind::Mlir:
    return ".mlir";
  case EmitKind::Llvm:
    return ".ll";
  case EmitKind::Ptx:
    return ".ptx";
  case EmitKind::Cubin:
    return ".cubin";
  }
  llvm_unreachable("unknown emit kind");
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // The MLIRContext and the printer of --emit=mlir read these.
  registerMLIRContextCLOptions();
  registerAsmPrinterCLOptions();
  for (auto &[name, option] : cl::getRegisteredOptions())
    if (name.starts_with("mlir-"))
      option->addCategory(mlirCategory);
  cl::HideUnrelatedOptions({&compileCategory, &mlirCategory});
  cl::ParseCommandLineOptions(argc, argv,
                              "mosaic-compile: mosaic_gpu kernel to CUBIN\n");
  if (arch != "sm_90a")
    return fail("only --arch=sm_90a is supported, got '" + arch + "'");
  if (optLevel > 3)
    return fail("-O must be 0 to 3");

  DialectRegistry registry;
  mosaic::registerCompilerDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  auto parseStart = std::chrono::steady_clock::now();
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputFile, sourceMgr, &context);
  std::chrono::duration<double, std::milli> parseTime =
      std::chrono::steady_clock::now() - parseStart;
  if (!module)
    return 1;

  mosaic::CompileOptions options;
  options.arch = arch;
  options.ptxFeatures = ptxFeatures;
  options.optLevel = optLevel;
  options.lineInfo = lineInfo;
  options.emit = emit;
  // MOSAIC_GPU_DUMP_TO=dir: the MLIR after every pass, the kernel's LLVM IR,
  // its PTX and (when nvdisasm is installed) its SASS, for debugging.
  if (const char *dir = std::getenv("MOSAIC_GPU_DUMP_TO"))
    options.dumpDirectory = dir;
  llvm::Expected<mosaic::CompiledKernel> kernel =
      mosaic::compileKernel(*module, options);
  if (!kernel)
    return fail(kernel.takeError());

  std::string outputPath = outputFile;
  if (outputPath.empty())
    outputPath = (llvm::sys::path::stem(inputFile) + extensionOf(emit)).str();
  if (llvm::Error error = mosaic::writeCompiledKernel(*kernel, outputPath))
    return fail(std::move(error));
  if (emit == EmitKind::Cubin)
    llvm::outs() << kernel->ptxasReport;
  if (timeStages) {
    llvm::errs() << "stage times (ms): parse="
                 << llvm::formatv("{0:f3}", parseTime.count());
    for (auto &[name, ms] : kernel->stageTimes)
      llvm::errs() << " " << name << "=" << llvm::formatv("{0:f3}", ms);
    llvm::errs() << "\n";
  }
  return 0;
}
