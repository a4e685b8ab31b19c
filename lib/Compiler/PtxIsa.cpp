//===- PtxIsa.cpp - The PTX ISA version a kernel is compiled for ----------===//

#include "CompilerInternal.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"

#include <algorithm>
#include <mutex>

using namespace mlir;
using namespace mosaic::detail;

namespace {

/// The newest PTX ISA LLVM 22 emits for sm_90a (`+ptx90`); LLVM ignores
/// newer features with a warning and falls back to 8.0.
constexpr int kNewestLlvmPtxIsa = 90;
/// sm_90a needs PTX ISA 8.0 (CUDA 12.0).
constexpr int kOldestSm90aPtxIsa = 80;

/// The newest PTX ISA (times 10) that the ptxas of CUDA `major.minor`
/// accepts, from the CUDA release notes.
int newestPtxIsaOf(int major, int minor) {
  if (major < 12)
    return 0;
  if (major > 12)
    return major == 13 && minor == 0 ? 90 : kNewestLlvmPtxIsa;
  static const int isaOfMinor[] = {80, 81, 82, 83, 84, 85, 85, 86, 87, 88};
  return minor < 10 ? isaOfMinor[minor] : 88;
}

} // namespace

/// Asks `ptxas --version` for the newest PTX ISA it accepts (a subprocess:
/// a few milliseconds, which every compile paid before the answer was
/// cached).
static llvm::Expected<int> queryPtxIsa(const std::string &ptxas);

llvm::Expected<int>
mosaic::detail::choosePtxIsa(const std::optional<std::string> &ptxas) {
  if (!ptxas)
    return kOldestSm90aPtxIsa;
  // One answer per ptxas for the life of the process; compiles run on
  // several threads (the autotuner, @jit warm-up). Errors are not cached.
  static std::mutex mutex;
  static llvm::StringMap<int> answers;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto found = answers.find(*ptxas); found != answers.end())
      return found->second;
  }
  llvm::Expected<int> isa = queryPtxIsa(*ptxas);
  if (isa) {
    std::lock_guard<std::mutex> lock(mutex);
    answers[*ptxas] = *isa;
  }
  return isa;
}

static llvm::Expected<int> queryPtxIsa(const std::string &ptxasPath) {
  const std::optional<std::string> ptxas = ptxasPath;
  llvm::Expected<std::string> outputPath = temporaryFile("version");
  if (!outputPath)
    return outputPath.takeError();
  std::optional<StringRef> redirects[] = {std::nullopt, *outputPath,
                                          *outputPath};
  llvm::sys::ExecuteAndWait(*ptxas, {*ptxas, "--version"}, std::nullopt,
                            redirects);
  std::string output = takeFile(*outputPath);
  SmallVector<StringRef> version;
  if (!llvm::Regex("release ([0-9]+)\\.([0-9]+)").match(output, &version))
    return toolchainError("cannot read the CUDA release from `" + *ptxas +
                          " --version`");
  int major = 0, minor = 0;
  version[1].getAsInteger(10, major);
  version[2].getAsInteger(10, minor);
  int isa = std::min(newestPtxIsaOf(major, minor), kNewestLlvmPtxIsa);
  if (isa < kOldestSm90aPtxIsa)
    return toolchainError(*ptxas + " is from CUDA " + llvm::Twine(major) + "." +
                          llvm::Twine(minor) +
                          "; sm_90a needs CUDA 12.0 or newer");
  return isa;
}
