//===- CompilerInternal.h - What lib/Compiler's files share -----*- C++ -*-===//
//
// Private to lib/Compiler: the declarations its files share, grouped by the
// file that defines them. The public API is include/mosaic/Compiler/Compiler.h.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_LIB_COMPILER_COMPILERINTERNAL_H
#define MOSAIC_LIB_COMPILER_COMPILERINTERNAL_H

#include "mosaic/Compiler/Compiler.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <chrono>
#include <optional>
#include <string>

namespace mosaic::detail {

/// Appends the wall time of its scope to a kernel's stage times.
struct StageTimer {
  StageTimer(CompiledKernel &kernel, llvm::StringRef name)
      : kernel(kernel), name(name), start(std::chrono::steady_clock::now()) {}
  ~StageTimer() {
    std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    kernel.stageTimes.emplace_back(name, elapsed.count());
  }
  CompiledKernel &kernel;
  std::string name;
  std::chrono::steady_clock::time_point start;
};

//===----------------------------------------------------------------------===//
// Toolchain.cpp: the CUDA toolkit, its tools and their files.
//===----------------------------------------------------------------------===//

/// A CompileError of kind Toolchain, with the tool's output if any.
llvm::Error toolchainError(const llvm::Twine &message,
                           std::string toolOutput = "");

/// The CUDA toolkit root: the one ptxas belongs to, else CUDA_HOME,
/// CUDA_ROOT, CUDA_PATH or /usr/local/cuda.
std::string findCudaRoot(const std::optional<std::string> &ptxas);

/// A temporary file's path, for a tool's output.
llvm::Expected<std::string> temporaryFile(llvm::StringRef suffix);

/// Reads and removes a tool's output file.
std::string takeFile(llvm::StringRef path);

/// Writes `contents` to `path` ("-" for stdout).
llvm::Error writeFile(llvm::StringRef path, llvm::StringRef contents);

/// Runs `ptxas -v` on `kernel.ptx` in `directory` and fills in the CUBIN and
/// the report; disassembles the CUBIN to `sassPath` when it is not empty and
/// nvdisasm is installed. On failure the PTX stays in `directory`, so that
/// the command in the message reproduces it.
llvm::Error runPtxas(CompiledKernel &kernel, llvm::StringRef ptxas,
                     llvm::StringRef directory, const CompileOptions &options,
                     llvm::StringRef sassPath);

//===----------------------------------------------------------------------===//
// PtxIsa.cpp: the PTX ISA version.
//===----------------------------------------------------------------------===//

/// Picks the PTX ISA (times 10): the newest one both LLVM and the installed
/// ptxas accept, or 8.0 without ptxas (PTX output only). Fails for a ptxas
/// too old for sm_90a.
llvm::Expected<int> choosePtxIsa(const std::optional<std::string> &ptxas);

//===----------------------------------------------------------------------===//
// Manifest.cpp: what the JSON manifest says about the kernel.
//===----------------------------------------------------------------------===//

/// The manifest's launch shape and buffers, read from the one kernel of
/// `module` before lowering, once it is checked to be launchable; reports
/// on the module or the kernel otherwise. `forLaunch` (a CUBIN is made)
/// also requires every buffer's element type to be one a manifest names.
mlir::FailureOr<Manifest> describeKernel(mlir::ModuleOp module,
                                         bool forLaunch);

/// The CUBIN's manifest: `info` completed with the tensor maps and the
/// dynamic shared memory the lowering recorded on `lowered`, and the numbers
/// of ptxas's report; reports on the kernel when its tensor maps are not
/// the lowering's.
mlir::FailureOr<Manifest> buildManifest(Manifest info, mlir::ModuleOp lowered,
                                        const CompiledKernel &kernel,
                                        llvm::StringRef arch);

} // namespace mosaic::detail

#endif // MOSAIC_LIB_COMPILER_COMPILERINTERNAL_H
