//===- Compiler.h - Compile a mosaic_gpu kernel to PTX or CUBIN -*- C++ -*-===//
//
// What mosaic-compile and the Python module share: the dialects and passes
// they register, and the compilation of a parsed kernel through
// mosaic-gpu-pipeline to MLIR, LLVM IR, PTX or a CUBIN with its JSON
// manifest (the format is in docs/RationaleRuntime.md).
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_COMPILER_COMPILER_H
#define MOSAIC_COMPILER_COMPILER_H

#include "mosaic/Contracts/Manifest.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mosaic {

/// Registers the dialects kernels are written in (mosaic_gpu and the
/// upstream func, gpu, arith, math, vector, memref, scf, cf, llvm, nvvm,
/// nvgpu, index) and the external models the pipeline and serialization
/// need.
void registerCompilerDialects(mlir::DialectRegistry &registry);

/// Registers the project's passes, `mosaic-gpu-pipeline` and every upstream
/// pass, so that textual pipelines can name them. Idempotent.
void registerCompilerPasses();

enum class EmitKind { Mlir, Llvm, Ptx, Cubin };

struct CompileOptions {
  /// The target; only sm_90a is supported.
  std::string arch = "sm_90a";
  /// The PTX ISA feature, e.g. `+ptx85`; empty picks the newest ISA both
  /// LLVM and the installed ptxas accept (8.0 without ptxas).
  std::string ptxFeatures;
  /// LLVM's and ptxas's optimization level, 0 to 3.
  unsigned optLevel = 3;
  /// Pass `-lineinfo` to ptxas.
  bool lineInfo = true;
  EmitKind emit = EmitKind::Cubin;
  /// When not empty: write the MLIR after every pass, the kernel's LLVM IR,
  /// its PTX and (when nvdisasm is installed) its SASS into this directory.
  /// Disables the context's multithreading, which IR printing needs.
  std::string dumpDirectory;
};

/// A compiled kernel. Only what `emit` asks for is filled in (the LLVM IR
/// also when dumping).
struct CompiledKernel {
  EmitKind emit = EmitKind::Cubin;
  /// The kernel's symbol.
  std::string entry;
  /// The PTX ISA feature the kernel was compiled with.
  std::string ptxFeatures;
  /// EmitKind::Mlir: the module after mosaic-gpu-pipeline.
  std::string mlir;
  /// EmitKind::Llvm: the kernel's LLVM IR, as text.
  std::string llvmIR;
  /// EmitKind::Ptx and EmitKind::Cubin.
  std::string ptx;
  /// EmitKind::Cubin: the CUBIN, ptxas's `-v` output and the manifest.
  /// The manifest's `cubin` and `ptx` keys are `<entry>.cubin` and
  /// `<entry>.ptx` until writeCompiledKernel names the files it writes.
  std::string cubin;
  std::string ptxasReport;
  Manifest manifest;
  /// Wall time of each stage that ran, in milliseconds, in order.
  std::vector<std::pair<std::string, double>> stageTimes;
};

/// Why a compilation failed. Errors in the IR were reported as MLIR
/// diagnostics on the module's context and carry no message here
/// (`diagnosed()`); the others (an unsupported option, the CUDA toolkit,
/// ptxas) carry their message, and a ptxas failure also ptxas's output.
class CompileError : public llvm::ErrorInfo<CompileError> {
public:
  static char ID;
  enum class Kind { Diagnosed, Option, Toolchain };
  CompileError(Kind kind, std::string message, std::string toolOutput = "")
      : kind(kind), message(std::move(message)),
        toolOutput(std::move(toolOutput)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  bool diagnosed() const { return kind == Kind::Diagnosed; }

  Kind kind;
  std::string message;
  std::string toolOutput;
};

/// Compiles the one kernel of `module` (a `gpu.func ... kernel` with
/// `known_grid_size` and `known_block_size`) through mosaic-gpu-pipeline.
/// `module` itself is left unchanged: the pipeline runs on a copy.
llvm::Expected<CompiledKernel> compileKernel(mlir::ModuleOp module,
                                             const CompileOptions &options);

/// Writes what `kernel` holds to `path` ("-" for stdout): the MLIR, LLVM IR
/// or PTX text, or the CUBIN with its PTX and its manifest beside it (`path`
/// with the extensions `.ptx` and `.json`; the manifest's `cubin` and `ptx`
/// keys name those files). A CUBIN path ending in `.ptx` or `.json` is an
/// error, since one of the others would overwrite it.
llvm::Error writeCompiledKernel(const CompiledKernel &kernel,
                                llvm::StringRef path);

/// A CUDA tool (ptxas, nvdisasm) on PATH or under CUDA_HOME, CUDA_ROOT,
/// CUDA_PATH or /usr/local/cuda.
std::optional<std::string> findCudaTool(llvm::StringRef name);

} // namespace mosaic

#endif // MOSAIC_COMPILER_COMPILER_H
