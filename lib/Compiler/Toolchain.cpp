//===- Toolchain.cpp - The CUDA toolkit: finding and running its tools ----===//

#include "CompilerInternal.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using mosaic::CompileError;

llvm::Error mosaic::detail::toolchainError(const llvm::Twine &message,
                                           std::string toolOutput) {
  return llvm::make_error<CompileError>(CompileError::Kind::Toolchain,
                                        message.str(), std::move(toolOutput));
}

std::optional<std::string> mosaic::findCudaTool(StringRef name) {
  if (auto onPath = llvm::sys::findProgramByName(name))
    return *onPath;
  const char *roots[] = {std::getenv("CUDA_HOME"), std::getenv("CUDA_ROOT"),
                         std::getenv("CUDA_PATH"), "/usr/local/cuda"};
  for (const char *root : roots) {
    if (!root)
      continue;
    SmallString<256> path(root);
    llvm::sys::path::append(path, "bin", name);
    if (llvm::sys::fs::can_execute(path))
      return std::string(path);
  }
  return std::nullopt;
}

std::string
mosaic::detail::findCudaRoot(const std::optional<std::string> &ptxas) {
  if (ptxas) {
    SmallString<256> root(*ptxas);
    llvm::sys::path::remove_filename(root); // bin/
    llvm::sys::path::remove_filename(root);
    SmallString<256> libdevice(root);
    llvm::sys::path::append(libdevice, "nvvm", "libdevice");
    if (llvm::sys::fs::is_directory(libdevice))
      return std::string(root);
  }
  for (const char *variable : {"CUDA_HOME", "CUDA_ROOT", "CUDA_PATH"})
    if (const char *root = std::getenv(variable))
      return root;
  return "/usr/local/cuda";
}

llvm::Expected<std::string> mosaic::detail::temporaryFile(StringRef suffix) {
  SmallString<128> path;
  if (std::error_code error =
          llvm::sys::fs::createTemporaryFile("mosaic-compile", suffix, path))
    return toolchainError("cannot create a temporary file: " + error.message());
  return std::string(path);
}

std::string mosaic::detail::takeFile(StringRef path) {
  auto contents = llvm::MemoryBuffer::getFile(path);
  llvm::sys::fs::remove(path);
  return contents ? (*contents)->getBuffer().str() : "";
}

llvm::Error mosaic::detail::writeFile(StringRef path, StringRef contents) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file)
    return toolchainError(error);
  file->os() << contents;
  file->keep();
  return llvm::Error::success();
}

llvm::Error mosaic::detail::runPtxas(CompiledKernel &kernel, StringRef ptxas,
                                     StringRef directory,
                                     const CompileOptions &options,
                                     StringRef sassPath) {
  SmallString<256> ptxPath(directory), cubinPath(directory);
  llvm::sys::path::append(ptxPath, kernel.entry + ".ptx");
  llvm::sys::path::append(cubinPath, kernel.entry + ".cubin");
  if (llvm::Error error = writeFile(ptxPath, kernel.ptx))
    return error;
  llvm::Expected<std::string> logPath = temporaryFile("log");
  if (!logPath)
    return logPath.takeError();
  std::string optFlag = "-O" + std::to_string(options.optLevel);
  SmallVector<StringRef> args = {ptxas, "-arch", options.arch, "-v", optFlag};
  if (options.lineInfo)
    args.push_back("-lineinfo");
  args.append({ptxPath, "-o", cubinPath});
  std::optional<StringRef> redirects[] = {std::nullopt, *logPath, *logPath};
  std::string error;
  int status;
  {
    StageTimer timer(kernel, "ptxas");
    status = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0,
                                       0, &error);
  }
  kernel.ptxasReport = takeFile(*logPath);
  if (status != 0) {
    std::string command;
    for (StringRef arg : args)
      command += (command.empty() ? "" : " ") + arg.str();
    return toolchainError("ptxas failed" + (error.empty() ? "" : ": " + error) +
                              "; reproduce with:\n  " + command,
                          kernel.ptxasReport);
  }
  llvm::sys::fs::remove(ptxPath);
  if (!sassPath.empty())
    if (std::optional<std::string> nvdisasm = findCudaTool("nvdisasm")) {
      std::optional<StringRef> sassRedirects[] = {std::nullopt, sassPath,
                                                  std::nullopt};
      llvm::sys::ExecuteAndWait(*nvdisasm, {*nvdisasm, cubinPath}, std::nullopt,
                                sassRedirects);
    }
  kernel.cubin = takeFile(cubinPath);
  llvm::sys::fs::remove(directory);
  if (kernel.cubin.empty())
    return toolchainError("ptxas wrote no CUBIN to '" + cubinPath + "'");
  return llvm::Error::success();
}
