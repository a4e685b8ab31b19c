//===- DriverModule.cpp - Modules and functions ---------------------------===//
//
// cuda.h's module management and function attributes: modules are PTX
// text, loaded by the emulator's parser.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace mosaic::emulator;
using namespace mosaic::emulator::driver;

namespace {

constexpr const char *kBinaryImageMessage =
    "the Mosaic emulator runs PTX, not CUBIN or fatbinary images: load the "
    "kernel's .ptx";

/// The log buffers of cuModuleLoadDataEx's options.
struct JitLog {
  char *buffer = nullptr;
  unsigned size = 0;
  /// Index of the *_LOG_BUFFER_SIZE_BYTES option, whose value slot gets the
  /// number of bytes written (without the terminating NUL).
  int sizeIndex = -1;
};

struct JitLogs {
  JitLog info;
  JitLog error;
};

JitLogs readJitOptions(unsigned count, const CUjit_option *options,
                       void *const *values) {
  JitLogs logs;
  for (unsigned i = 0; i < count; ++i) {
    uintptr_t value = reinterpret_cast<uintptr_t>(values[i]);
    switch (options[i]) {
    case CU_JIT_INFO_LOG_BUFFER:
      logs.info.buffer = static_cast<char *>(values[i]);
      break;
    case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
      logs.info.size = static_cast<unsigned>(value);
      logs.info.sizeIndex = static_cast<int>(i);
      break;
    case CU_JIT_ERROR_LOG_BUFFER:
      logs.error.buffer = static_cast<char *>(values[i]);
      break;
    case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
      logs.error.size = static_cast<unsigned>(value);
      logs.error.sizeIndex = static_cast<int>(i);
      break;
    default:
      // Compiler options (registers, optimization level, ...) do not apply
      // to an interpreter.
      break;
    }
  }
  return logs;
}

void writeLog(const JitLog &log, void **values, const std::string &text) {
  size_t written = 0;
  if (log.buffer && log.size > 0) {
    written = std::min<size_t>(text.size(), log.size - 1);
    std::memcpy(log.buffer, text.data(), written);
    log.buffer[written] = '\0';
  }
  if (log.sizeIndex >= 0)
    values[log.sizeIndex] = reinterpret_cast<void *>(uintptr_t(written));
}

/// Whether `image` starts as an ELF file (a CUBIN), a fatbinary or a
/// fatbinary wrapper does (magic numbers read little-endian). None of them
/// contains a zero byte, so PTX text shorter than four characters is never
/// read past its end.
bool isBinaryImage(const void *image) {
  const char *bytes = static_cast<const char *>(image);
  if (strnlen(bytes, 4) < 4)
    return false;
  uint32_t magic;
  std::memcpy(&magic, bytes, sizeof(magic));
  constexpr uint32_t kElf = 0x464c457fu;              // "\x7fELF"
  constexpr uint32_t kFatbinary = 0xba55ed50u;        // fatBinaryHeader
  constexpr uint32_t kFatbinaryWrapper = 0x466243b1u; // __fatBinC_Wrapper_t
  return magic == kElf || magic == kFatbinary || magic == kFatbinaryWrapper;
}

CUresult loadModule(const char *function, CUmodule *out, const void *image,
                    std::string_view text, unsigned optionCount,
                    CUjit_option *options, void **values) {
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(function, context));
  MOSAIC_EMU_TRY(nonNull(function, out, "module"));
  if (optionCount > 0 && (!options || !values))
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "`numOptions` is " + std::to_string(optionCount) +
                    " but `options` or `optionValues` is null");
  JitLogs logs = readJitOptions(optionCount, options, values);
  if (isBinaryImage(image)) {
    writeLog(logs.error, values, kBinaryImageMessage);
    writeLog(logs.info, values, "");
    return failLoudly(CUDA_ERROR_INVALID_IMAGE, function, kBinaryImageMessage);
  }
  Expected<std::shared_ptr<const Module>> module = Module::load(text);
  if (!module.ok()) {
    writeLog(logs.error, values, module.message());
    writeLog(logs.info, values, "");
    return failLoudly(CUDA_ERROR_INVALID_PTX, function, module.message());
  }
  writeLog(logs.error, values, "");
  writeLog(logs.info, values, "");
  auto loaded = std::make_unique<LoadedModule>();
  loaded->context = context;
  loaded->module = std::move(*module);
  LoadedModule *handle = loaded.get();
  state().modules.emplace(handle, std::move(loaded));
  *out = reinterpret_cast<CUmodule>(handle);
  return CUDA_SUCCESS;
}

} // namespace

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module,
                                                      const void *image,
                                                      unsigned int numOptions,
                                                      CUjit_option *options,
                                                      void **optionValues) {
  Lock lock(state().mutex);
  if (!image) {
    MOSAIC_EMU_TRY(requireInit(__func__));
    return fail(CUDA_ERROR_INVALID_VALUE, __func__, "`image` is null");
  }
  return loadModule(__func__, module, image, static_cast<const char *>(image),
                    numOptions, options, optionValues);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule *module,
                                                    const void *image) {
  Lock lock(state().mutex);
  if (!image) {
    MOSAIC_EMU_TRY(requireInit(__func__));
    return fail(CUDA_ERROR_INVALID_VALUE, __func__, "`image` is null");
  }
  return loadModule(__func__, module, image, static_cast<const char *>(image),
                    0, nullptr, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuModuleLoad(CUmodule *module,
                                                const char *fname) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, fname, "fname"));
  std::ifstream file(fname, std::ios::binary);
  if (!file)
    return fail(CUDA_ERROR_FILE_NOT_FOUND, __func__,
                std::string("cannot open `") + fname + "`");
  std::ostringstream contents;
  contents << file.rdbuf();
  std::string image = contents.str();
  // PTX text ends at its first NUL, as in cuModuleLoadData.
  std::string_view text(image.c_str());
  return loadModule(__func__, module, image.c_str(), text, 0, nullptr, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(observeQueuedWork(__func__));
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  LoadedModule *module = nullptr;
  MOSAIC_EMU_TRY(findModule(__func__, hmod, module));
  for (auto &[name, f] : module->functions)
    s.functions.erase(f.get());
  s.modules.erase(module);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc,
                                                       CUmodule hmod,
                                                       const char *name) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  LoadedModule *module = nullptr;
  MOSAIC_EMU_TRY(findModule(__func__, hmod, module));
  MOSAIC_EMU_TRY(nonNull(__func__, hfunc, "hfunc"));
  MOSAIC_EMU_TRY(nonNull(__func__, name, "name"));
  auto cached = module->functions.find(std::string_view(name));
  if (cached != module->functions.end()) {
    *hfunc = reinterpret_cast<CUfunction>(cached->second.get());
    return CUDA_SUCCESS;
  }
  const KernelInfo *info = module->module->kernel(name);
  if (!info) {
    std::string entries;
    for (const std::string &entry : module->module->kernelNames())
      entries += (entries.empty() ? "`" : ", `") + entry + "`";
    return fail(CUDA_ERROR_NOT_FOUND, __func__,
                std::string("the module has no kernel `") + name + "`" +
                    (entries.empty() ? std::string(" (it has none)")
                                     : "; it has " + entries));
  }
  auto f = std::make_unique<Function>();
  f->module = module;
  f->info = info;
  f->maxDynamicSharedBytes =
      info->staticSharedBytes > uint32_t(kSharedPerBlock)
          ? 0
          : kSharedPerBlock - int(info->staticSharedBytes);
  Function *handle = f.get();
  module->functions.emplace(name, std::move(f));
  s.functions.insert(handle);
  *hfunc = reinterpret_cast<CUfunction>(handle);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr *dptr,
                                                     size_t *bytes,
                                                     CUmodule hmod,
                                                     const char *name) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  LoadedModule *module = nullptr;
  MOSAIC_EMU_TRY(findModule(__func__, hmod, module));
  MOSAIC_EMU_TRY(nonNull(__func__, name, "name"));
  (void)dptr;
  (void)bytes;
  return fail(CUDA_ERROR_NOT_FOUND, __func__,
              std::string("the module has no global `") + name +
                  "` the host can reach: the emulator does not expose a "
                  "module's `.global` variables");
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  Function *f = nullptr;
  MOSAIC_EMU_TRY(findFunction(__func__, hfunc, f));
  MOSAIC_EMU_TRY(nonNull(__func__, pi, "pi"));
  const KernelInfo &info = *f->info;
  const std::array<uint32_t, 3> none{0, 0, 0};
  const std::array<uint32_t, 3> &cluster =
      info.requiredCluster != none ? info.requiredCluster : f->requiredCluster;
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *pi = int(std::min<uint32_t>(info.maxThreadsPerBlock, kMaxThreadsPerBlock));
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    *pi = int(info.staticSharedBytes);
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
  case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    *pi = 0;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    *pi = int(info.localBytes);
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_NUM_REGS:
    *pi = int(info.registers);
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION:
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
    *pi = 90;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    *pi = f->maxDynamicSharedBytes;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    *pi = f->preferredCarveout;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    *pi = info.requiredCluster != none || info.explicitCluster;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    *pi = int(cluster[0]);
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    *pi = int(cluster[1]);
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    *pi = int(cluster[2]);
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    *pi = f->nonPortableClusterSizeAllowed;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    *pi = f->clusterSchedulingPolicy;
    return CUDA_SUCCESS;
  default:
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "function attribute " + std::to_string(int(attrib)) +
                    " is not modelled by the emulator");
  }
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  Function *f = nullptr;
  MOSAIC_EMU_TRY(findFunction(__func__, hfunc, f));
  const KernelInfo &info = *f->info;
  auto outOfRange = [&](const std::string &range) {
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`value` " + std::to_string(value) + " of function attribute " +
                    std::to_string(int(attrib)) + " must be " + range);
  };
  switch (attrib) {
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: {
    int limit = kSharedPerBlockOptin - int(info.staticSharedBytes);
    if (value < 0 || value > limit)
      return outOfRange("0 to " + std::to_string(limit) + " (" +
                        std::to_string(kSharedPerBlockOptin) + " minus `" +
                        info.name + "`'s " +
                        std::to_string(info.staticSharedBytes) +
                        " bytes of static shared memory)");
    f->maxDynamicSharedBytes = value;
    return CUDA_SUCCESS;
  }
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    if (value < -1 || value > 100)
      return outOfRange("-1 (default) or a percentage from 0 to 100");
    f->preferredCarveout = value;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
  case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    if (info.requiredCluster != std::array<uint32_t, 3>{0, 0, 0})
      return fail(CUDA_ERROR_NOT_PERMITTED, __func__,
                  "`" + info.name + "` sets its cluster shape " +
                      dimsText(info.requiredCluster) +
                      " in the PTX (.reqnctapercluster)");
    if (value < 0)
      return outOfRange("at least 0");
    f->requiredCluster[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] =
        uint32_t(value);
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    if (value != 0 && value != 1)
      return outOfRange("0 or 1");
    f->nonPortableClusterSizeAllowed = value;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    if (value < CU_CLUSTER_SCHEDULING_POLICY_DEFAULT ||
        value > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
      return outOfRange("a CUclusterSchedulingPolicy (0 to 2)");
    f->clusterSchedulingPolicy = value;
    return CUDA_SUCCESS;
  default:
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "function attribute " + std::to_string(int(attrib)) +
                    " is read-only");
  }
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuFuncGetName(const char **name,
                                                 CUfunction hfunc) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, name, "name"));
  Function *f = nullptr;
  MOSAIC_EMU_TRY(findFunction(__func__, hfunc, f));
  *name = f->info->name.c_str();
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func,
                                                      size_t paramIndex,
                                                      size_t *paramOffset,
                                                      size_t *paramSize) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  Function *f = nullptr;
  MOSAIC_EMU_TRY(findFunction(__func__, func, f));
  const std::vector<KernelParameter> &parameters = f->info->parameters;
  if (paramIndex >= parameters.size())
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`paramIndex` " + std::to_string(paramIndex) + ", but `" +
                    f->info->name + "` has " +
                    std::to_string(parameters.size()) + " parameters");
  if (paramOffset)
    *paramOffset = parameters[paramIndex].offset;
  if (paramSize)
    *paramSize = parameters[paramIndex].size;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod,
                                                   CUfunction hfunc) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, hmod, "hmod"));
  Function *f = nullptr;
  MOSAIC_EMU_TRY(findFunction(__func__, hfunc, f));
  *hmod = reinterpret_cast<CUmodule>(f->module);
  return CUDA_SUCCESS;
}
