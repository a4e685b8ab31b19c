//===- CudaDriver.cpp - The CUDA driver API, run by the emulator --------===//
//
// This file is libcuda.so.1 for programs written against the CUDA driver
// API: one device, "Mosaic PTX emulator (sm_90a)", with the limits of an
// H100 SXM, whose modules are PTX text run by `mosaic::emulator::launch`.
//
// - One process-wide lock around every entry point: calls are serialized,
//   and a launch runs to completion inside the call. Streams and events are
//   bookkeeping; asynchronous copies and memsets complete before they return.
// - Contexts are handles: the primary context and those from cuCtxCreate,
//   all on the same device memory. Each host thread has its own stack of
//   current contexts. A launch that faults makes its context's error sticky:
//   every later call that uses the context returns CUDA_ERROR_LAUNCH_FAILED,
//   as a kernel fault does on a GPU, until cuDevicePrimaryCtxReset (or
//   cuCtxDestroy for a created context).
// - Every error also records why (mosaicEmulatorLastError, Extensions.h);
//   errors in what the user gave the device (PTX that does not load, a
//   CUBIN image, a tensor map breaking a cuda.h rule, a failed launch) are
//   printed to stderr as "mosaic emulator: ...", since the CUresult alone
//   cannot say what was wrong.
//
// Symbol names: cuda.h #defines many entry points to versioned symbols
// (`cuMemAlloc` -> `cuMemAlloc_v2`), so a function defined here under the
// plain name defines the versioned symbol, with the header's type; that is
// the symbol a program compiled against cuda.h looks up. The unversioned
// legacy symbols the real driver also exports keep their old signatures
// (32-bit device pointers and sizes where cuda.h says so) and are defined at
// the end of the file, after the #undefs.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Emulator/Extensions.h"
#include "mosaic/Emulator/Machine.h"
#include "mosaic/Emulator/TensorMap.h"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#define MOSAIC_EMU_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using namespace mosaic::emulator;
using Clock = std::chrono::steady_clock;

//===----------------------------------------------------------------------===//
// The device: an H100 SXM (80 GB HBM3) as the driver describes it.
//===----------------------------------------------------------------------===//

constexpr int kDriverVersion = 13000;
constexpr const char *kDeviceName = "Mosaic PTX emulator (sm_90a)";
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kMaxBlockDim[3] = {1024, 1024, 64};
constexpr int kMaxGridDim[3] = {2147483647, 65535, 65535};
constexpr int kSharedPerBlock = 49152;
constexpr int kSharedPerBlockOptin = 232448;
constexpr int kSharedPerMultiprocessor = 233472;
/// cuDeviceTotalMem of an H100 SXM 80GB: 81559 MiB.
constexpr uint64_t kTotalMemory = 81559ull << 20;
constexpr uint32_t kPortableClusterSize = 8;
constexpr uint32_t kNonPortableClusterSize = 16;
/// Stream priorities of Hopper: 0 (least) to -5 (greatest).
constexpr int kGreatestStreamPriority = -5;

constexpr const char *kBinaryImageMessage =
    "the Mosaic emulator runs PTX, not CUBIN or fatbinary images: load the "
    "kernel's .ptx";

std::optional<int> deviceAttribute(CUdevice_attribute attribute) {
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    return kMaxThreadsPerBlock;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    return kMaxBlockDim[0];
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
    return kMaxBlockDim[1];
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
    return kMaxBlockDim[2];
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
    return kMaxGridDim[0];
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    return kMaxGridDim[1];
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
    return kMaxGridDim[2];
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
    return kSharedPerBlock;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
    return 65536;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
    return 32;
  case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
    return 2147483647;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
    return 65536;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
    return 1980000; // kHz
  case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
    return 1;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    return 132;
  case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT:
  case CU_DEVICE_ATTRIBUTE_INTEGRATED:
    return 0;
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    return 1;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
    return CU_COMPUTEMODE_DEFAULT;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
  case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
    return 1;
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
  case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
  case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
  case CU_DEVICE_ATTRIBUTE_TCC_DRIVER:
    return 0;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
    return 2619000; // kHz
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
    return 5120;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
    return 50 << 20;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
    return 2048;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
    return 3;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    return 1;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    return 9;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    return 0;
  case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
    return kSharedPerMultiprocessor;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
    return 65536;
  case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO:
    return 2;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED:
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    return kSharedPerBlockOptin;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
    return 32;
  case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
    return 1024;
  case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH:
  case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED:
    return 1;
  case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT:
    return 4;
  // What the emulator does not provide: no managed memory, memory pools,
  // virtual memory management, cooperative launches, host registration,
  // IPC or multi-GPU boards.
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
  case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
  case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD:
  case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID:
  case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_MPS_ENABLED:
    return 0;
  default:
    return std::nullopt;
  }
}

//===----------------------------------------------------------------------===//
// Driver state.
//===----------------------------------------------------------------------===//

struct Context {
  bool primary = false;
  unsigned flags = 0;
  /// Set by a launch that failed in this context: the report's message.
  std::optional<std::string> fault;
};

struct Function;

struct LoadedModule {
  Context *context = nullptr;
  std::shared_ptr<const Module> module;
  std::map<std::string, std::unique_ptr<Function>, std::less<>> functions;
};

/// A CUfunction: a kernel of a loaded module and its settable attributes.
struct Function {
  LoadedModule *module = nullptr;
  const KernelInfo *info = nullptr;
  int maxDynamicSharedBytes = 0;
  int preferredCarveout = -1;
  std::array<uint32_t, 3> requiredCluster{0, 0, 0};
  int nonPortableClusterSizeAllowed = 0;
  int clusterSchedulingPolicy = 0;
};

struct Stream {
  Context *context = nullptr;
  unsigned flags = 0;
  int priority = 0;
};

struct Event {
  Context *context = nullptr;
  unsigned flags = 0;
  std::optional<Clock::time_point> recorded;
};

enum class MemoryKind { Device, PinnedHost };

struct Allocation {
  Context *context = nullptr;
  MemoryKind kind = MemoryKind::Device;
  uint64_t bufferId = 0;
};

struct State {
  std::mutex mutex;
  /// Set by the first cuInit.
  std::optional<Expected<Options>> options;
  DeviceMemory memory;
  /// Every block of `memory`: who owns it and what it is. Pinned host
  /// memory lives in `memory` too, so kernels can reach it as on a GPU with
  /// unified addressing.
  std::map<uint64_t, Allocation> allocations;
  uint64_t nextBufferId = 1;
  Context primary;
  unsigned primaryRetains = 0;
  std::map<Context *, std::unique_ptr<Context>> contexts;
  std::map<LoadedModule *, std::unique_ptr<LoadedModule>> modules;
  std::set<Function *> functions;
  std::map<Stream *, std::unique_ptr<Stream>> streams;
  std::map<Event *, std::unique_ptr<Event>> events;
  std::string lastReport;
  std::string lastError;
  uint64_t lastWarpInstructions = 0;
  uint64_t lastThreadInstructions = 0;
  double lastSeconds = 0;

  State() { primary.primary = true; }
};

State &state() {
  // Never destroyed: programs call the driver from their own static
  // destructors and atexit handlers, after this file's statics would be.
  static State *instance = new State();
  return *instance;
}

/// The calling thread's context stack; the top is the current context.
thread_local std::vector<Context *> contextStack;

using Lock = std::lock_guard<std::mutex>;

#define MOSAIC_EMU_TRY(expr)                                                   \
  do {                                                                         \
    if (CUresult emuResult_ = (expr); emuResult_ != CUDA_SUCCESS)              \
      return emuResult_;                                                       \
  } while (false)

/// The entry point's name as the user wrote it: `__func__` of a definition
/// of `cuMemAlloc` is `cuMemAlloc_v2`.
std::string apiName(const char *function) {
  std::string name = function;
  size_t v = name.rfind("_v");
  if (v != std::string::npos && v + 2 < name.size() &&
      std::all_of(name.begin() + v + 2, name.end(),
                  [](char c) { return c >= '0' && c <= '9'; }))
    name.resize(v);
  return name;
}

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(value));
  return text;
}

CUresult fail(CUresult code, const char *function, const std::string &why) {
  state().lastError = apiName(function) + ": " + why;
  return code;
}

/// `fail`, and the message on stderr: for errors in what the program gave
/// the device, which the CUresult cannot explain.
CUresult failLoudly(CUresult code, const char *function,
                    const std::string &why) {
  fail(code, function, why);
  std::fprintf(stderr, "mosaic emulator: %s\n", state().lastError.c_str());
  return code;
}

CUresult requireInit(const char *function) {
  const State &s = state();
  if (!s.options)
    return fail(CUDA_ERROR_NOT_INITIALIZED, function,
                "cuInit has not been called");
  if (!s.options->ok())
    return fail(CUDA_ERROR_NOT_INITIALIZED, function,
                "cuInit failed: " + s.options->message());
  return CUDA_SUCCESS;
}

CUresult requireDevice(const char *function, CUdevice device) {
  MOSAIC_EMU_TRY(requireInit(function));
  if (device != 0)
    return fail(CUDA_ERROR_INVALID_DEVICE, function,
                "device " + std::to_string(device) +
                    " does not exist; the emulator has one device, 0");
  return CUDA_SUCCESS;
}

bool live(const Context *context) {
  const State &s = state();
  if (context == &s.primary)
    return s.primaryRetains > 0;
  return s.contexts.count(const_cast<Context *>(context)) != 0;
}

/// `context` if it can run work: live, and without a sticky fault.
CUresult usable(const char *function, Context *context) {
  if (!live(context))
    return fail(CUDA_ERROR_INVALID_CONTEXT, function,
                "the context was destroyed or, if primary, released");
  if (context->fault)
    return fail(CUDA_ERROR_LAUNCH_FAILED, function,
                "an earlier launch in this context failed: " + *context->fault);
  return CUDA_SUCCESS;
}

/// The calling thread's current context, for a call that uses it.
CUresult current(const char *function, Context *&out) {
  MOSAIC_EMU_TRY(requireInit(function));
  Context *context = contextStack.empty() ? nullptr : contextStack.back();
  if (!context)
    return fail(CUDA_ERROR_INVALID_CONTEXT, function,
                "no current context (cuCtxSetCurrent, cuCtxPushCurrent or "
                "cuCtxCreate makes one)");
  MOSAIC_EMU_TRY(usable(function, context));
  out = context;
  return CUDA_SUCCESS;
}

CUresult nonNull(const char *function, const void *pointer,
                 const char *operand) {
  if (!pointer)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                std::string("`") + operand + "` is null");
  return CUDA_SUCCESS;
}

bool isDefaultStream(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY ||
         stream == CU_STREAM_PER_THREAD;
}

CUresult checkStream(const char *function, CUstream stream) {
  if (isDefaultStream(stream) ||
      state().streams.count(reinterpret_cast<Stream *>(stream)))
    return CUDA_SUCCESS;
  return fail(CUDA_ERROR_INVALID_HANDLE, function,
              "stream " + hex(reinterpret_cast<uint64_t>(stream)) +
                  " is not a live stream");
}

CUresult findEvent(const char *function, CUevent handle, Event *&out) {
  auto found = state().events.find(reinterpret_cast<Event *>(handle));
  if (found == state().events.end())
    return fail(CUDA_ERROR_INVALID_HANDLE, function,
                "event " + hex(reinterpret_cast<uint64_t>(handle)) +
                    " is not a live event");
  out = found->second.get();
  return CUDA_SUCCESS;
}

CUresult findFunction(const char *function, CUfunction handle, Function *&out) {
  Function *f = reinterpret_cast<Function *>(handle);
  if (!state().functions.count(f))
    return fail(CUDA_ERROR_INVALID_HANDLE, function,
                "function " + hex(reinterpret_cast<uint64_t>(handle)) +
                    " is not a function of a loaded module");
  out = f;
  return CUDA_SUCCESS;
}

CUresult findModule(const char *function, CUmodule handle, LoadedModule *&out) {
  auto found = state().modules.find(reinterpret_cast<LoadedModule *>(handle));
  if (found == state().modules.end())
    return fail(CUDA_ERROR_INVALID_HANDLE, function,
                "module " + hex(reinterpret_cast<uint64_t>(handle)) +
                    " is not a loaded module");
  out = found->second.get();
  return CUDA_SUCCESS;
}

/// Frees everything `context` owns and clears its fault.
void destroyResources(Context *context) {
  State &s = state();
  for (auto it = s.allocations.begin(); it != s.allocations.end();) {
    if (it->second.context == context) {
      (void)s.memory.free(it->first);
      it = s.allocations.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = s.modules.begin(); it != s.modules.end();) {
    if (it->second->context == context) {
      for (auto &[name, f] : it->second->functions)
        s.functions.erase(f.get());
      it = s.modules.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = s.streams.begin(); it != s.streams.end();)
    it = it->second->context == context ? s.streams.erase(it) : std::next(it);
  for (auto it = s.events.begin(); it != s.events.end();)
    it = it->second->context == context ? s.events.erase(it) : std::next(it);
  context->fault.reset();
}

//===----------------------------------------------------------------------===//
// Memory.
//===----------------------------------------------------------------------===//

std::string rangeText(uint64_t address, uint64_t bytes) {
  return "[" + hex(address) + ", " + hex(address) + " + " +
         std::to_string(bytes) + ")";
}

/// The host bytes of device range [address, address + bytes), or an error
/// naming the operand and the allocation it overruns.
CUresult deviceBytes(const char *function, const char *operand,
                     uint64_t address, uint64_t bytes, uint8_t *&out) {
  out = state().memory.translate(address, bytes);
  if (out)
    return CUDA_SUCCESS;
  std::string why = std::string("`") + operand + "` " +
                    rangeText(address, bytes) +
                    " is not inside one device allocation: ";
  if (auto block = state().memory.range(address))
    why += "it runs " +
           std::to_string(bytes - (block->first + block->second - address)) +
           " bytes past the end of the allocation at " + hex(block->first) +
           " (" + std::to_string(block->second) + " bytes)";
  else
    why += hex(address) + " is in no allocation";
  return fail(CUDA_ERROR_INVALID_VALUE, function, why);
}

/// Unified addressing (cuMemcpy): an address inside an allocation is device
/// memory and must stay inside it; any other is host memory, which must not
/// run into an allocation.
CUresult unifiedBytes(const char *function, const char *operand,
                      uint64_t address, uint64_t bytes, uint8_t *&out) {
  State &s = state();
  if (s.memory.range(address))
    return deviceBytes(function, operand, address, bytes, out);
  auto next = s.allocations.lower_bound(address);
  if (next != s.allocations.end() && next->first - address < bytes)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                std::string("`") + operand + "` " + rangeText(address, bytes) +
                    " starts outside device memory and runs into the "
                    "allocation at " +
                    hex(next->first));
  out = reinterpret_cast<uint8_t *>(address);
  return CUDA_SUCCESS;
}

CUresult allocate(const char *function, Context *context, MemoryKind kind,
                  uint64_t bytes, uint64_t &address) {
  State &s = state();
  if (bytes == 0)
    return fail(CUDA_ERROR_INVALID_VALUE, function, "cannot allocate 0 bytes");
  Expected<uint64_t> block = s.memory.allocate(bytes);
  if (!block.ok())
    return fail(CUDA_ERROR_OUT_OF_MEMORY, function, block.message());
  address = *block;
  s.allocations[address] = Allocation{context, kind, s.nextBufferId++};
  return CUDA_SUCCESS;
}

CUresult release(const char *function, uint64_t address, MemoryKind kind) {
  State &s = state();
  auto found = s.allocations.find(address);
  if (found != s.allocations.end() && found->second.kind != kind)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                hex(address) +
                    (kind == MemoryKind::Device
                         ? " was allocated by cuMemAllocHost: free it with "
                           "cuMemFreeHost"
                         : " was allocated by cuMemAlloc: free it with "
                           "cuMemFree"));
  if (Status freed = s.memory.free(address); !freed.ok())
    return fail(CUDA_ERROR_INVALID_VALUE, function, freed.message());
  s.allocations.erase(address);
  return CUDA_SUCCESS;
}

CUresult copy(const char *function, uint64_t destination, uint64_t source,
              size_t bytes, bool destinationOnDevice, bool sourceOnDevice,
              CUstream stream) {
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(function, context));
  MOSAIC_EMU_TRY(checkStream(function, stream));
  if (bytes == 0)
    return CUDA_SUCCESS;
  uint8_t *to = reinterpret_cast<uint8_t *>(destination);
  uint8_t *from = reinterpret_cast<uint8_t *>(source);
  if (destinationOnDevice)
    MOSAIC_EMU_TRY(deviceBytes(function, "dstDevice", destination, bytes, to));
  else
    MOSAIC_EMU_TRY(nonNull(function, to, "dstHost"));
  if (sourceOnDevice)
    MOSAIC_EMU_TRY(deviceBytes(function, "srcDevice", source, bytes, from));
  else
    MOSAIC_EMU_TRY(nonNull(function, from, "srcHost"));
  std::memmove(to, from, bytes);
  return CUDA_SUCCESS;
}

CUresult unifiedCopy(const char *function, CUdeviceptr destination,
                     CUdeviceptr source, size_t bytes, CUstream stream) {
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(function, context));
  MOSAIC_EMU_TRY(checkStream(function, stream));
  if (bytes == 0)
    return CUDA_SUCCESS;
  uint8_t *to = nullptr;
  uint8_t *from = nullptr;
  MOSAIC_EMU_TRY(unifiedBytes(function, "dst", destination, bytes, to));
  MOSAIC_EMU_TRY(unifiedBytes(function, "src", source, bytes, from));
  MOSAIC_EMU_TRY(nonNull(function, to, "dst"));
  MOSAIC_EMU_TRY(nonNull(function, from, "src"));
  std::memmove(to, from, bytes);
  return CUDA_SUCCESS;
}

/// cuMemsetD8/D16/D32: `count` elements of `sizeof(T)` bytes.
template <typename T>
CUresult fill(const char *function, CUdeviceptr destination, T value,
              size_t count, CUstream stream) {
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(function, context));
  MOSAIC_EMU_TRY(checkStream(function, stream));
  if (destination % sizeof(T) != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "`dstDevice` " + hex(destination) + " must be " +
                    std::to_string(sizeof(T)) + "-byte aligned");
  if (count == 0)
    return CUDA_SUCCESS;
  if (count > SIZE_MAX / sizeof(T))
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "`N` " + std::to_string(count) + " elements overflow");
  uint8_t *bytes = nullptr;
  MOSAIC_EMU_TRY(deviceBytes(function, "dstDevice", destination,
                             count * sizeof(T), bytes));
  for (size_t i = 0; i < count; ++i)
    std::memcpy(bytes + i * sizeof(T), &value, sizeof(T));
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Modules.
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Launches.
//===----------------------------------------------------------------------===//

std::string dimsText(const std::array<uint32_t, 3> &dims) {
  return "(" + std::to_string(dims[0]) + ", " + std::to_string(dims[1]) + ", " +
         std::to_string(dims[2]) + ")";
}

/// The parameter buffer of a launch, from `kernelParams` (one pointer per
/// parameter) or from `extra` (one buffer laid out as the kernel's).
CUresult parameterBuffer(const char *function, const KernelInfo &info,
                         void **kernelParams, void **extra,
                         std::vector<uint8_t> &out) {
  out.assign(info.parameterBytes, 0);
  if (kernelParams && extra)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "pass the parameters in `kernelParams` or in `extra`, not "
                "both");
  if (kernelParams) {
    for (size_t i = 0; i < info.parameters.size(); ++i) {
      const KernelParameter &p = info.parameters[i];
      if (!kernelParams[i])
        return fail(CUDA_ERROR_INVALID_VALUE, function,
                    "`kernelParams[" + std::to_string(i) + "]` (parameter `" +
                        p.name + "` of `" + info.name + "`) is null");
      std::memcpy(out.data() + p.offset, kernelParams[i], p.size);
    }
    return CUDA_SUCCESS;
  }
  if (extra) {
    const void *buffer = nullptr;
    const size_t *size = nullptr;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        buffer = extra[i + 1];
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
        size = static_cast<const size_t *>(extra[i + 1]);
      else
        return fail(CUDA_ERROR_INVALID_VALUE, function,
                    "`extra[" + std::to_string(i) + "]` is " +
                        hex(reinterpret_cast<uint64_t>(extra[i])) +
                        ", not CU_LAUNCH_PARAM_BUFFER_POINTER, "
                        "CU_LAUNCH_PARAM_BUFFER_SIZE or CU_LAUNCH_PARAM_END");
    }
    if (!buffer || !size)
      return fail(CUDA_ERROR_INVALID_VALUE, function,
                  "`extra` needs both CU_LAUNCH_PARAM_BUFFER_POINTER and "
                  "CU_LAUNCH_PARAM_BUFFER_SIZE");
    if (*size < info.parameterBytes)
      return fail(CUDA_ERROR_INVALID_VALUE, function,
                  "the `extra` parameter buffer has " + std::to_string(*size) +
                      " bytes; `" + info.name + "` takes " +
                      std::to_string(info.parameterBytes));
    std::memcpy(out.data(), buffer, info.parameterBytes);
    return CUDA_SUCCESS;
  }
  if (!info.parameters.empty())
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "`" + info.name + "` takes " +
                    std::to_string(info.parameters.size()) +
                    " parameters, but neither `kernelParams` nor `extra` "
                    "was given");
  return CUDA_SUCCESS;
}

struct LaunchRequest {
  std::array<uint32_t, 3> grid;
  std::array<uint32_t, 3> block;
  uint32_t sharedBytes = 0;
  CUstream stream = nullptr;
  /// From CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION.
  std::optional<std::array<uint32_t, 3>> cluster;
  /// Events the launch records when it completes.
  std::vector<Event *> completionEvents;
};

CUresult checkShape(const char *function, const Function &f,
                    const LaunchRequest &request) {
  const KernelInfo &info = *f.info;
  for (int d = 0; d < 3; ++d)
    if (request.grid[d] == 0 ||
        request.grid[d] > static_cast<uint32_t>(kMaxGridDim[d]))
      return fail(CUDA_ERROR_INVALID_VALUE, function,
                  "grid " + dimsText(request.grid) +
                      " is outside the device's (1..2147483647, 1..65535, "
                      "1..65535)");
  for (int d = 0; d < 3; ++d)
    if (request.block[d] == 0 ||
        request.block[d] > static_cast<uint32_t>(kMaxBlockDim[d]))
      return fail(CUDA_ERROR_INVALID_VALUE, function,
                  "block " + dimsText(request.block) +
                      " is outside the device's (1..1024, 1..1024, 1..64)");
  uint64_t threads =
      uint64_t(request.block[0]) * request.block[1] * request.block[2];
  if (threads >
      std::min<uint64_t>(kMaxThreadsPerBlock, info.maxThreadsPerBlock))
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "block " + dimsText(request.block) + " has " +
                    std::to_string(threads) + " threads; `" + info.name +
                    "` allows at most " +
                    std::to_string(std::min<uint32_t>(
                        kMaxThreadsPerBlock, info.maxThreadsPerBlock)));
  if (request.sharedBytes > static_cast<uint32_t>(f.maxDynamicSharedBytes))
    return fail(
        CUDA_ERROR_INVALID_VALUE, function,
        std::to_string(request.sharedBytes) +
            " bytes of dynamic shared memory exceed the " +
            std::to_string(f.maxDynamicSharedBytes) + " that `" + info.name +
            "` allows; raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES "
            "with cuFuncSetAttribute first (up to " +
            std::to_string(kSharedPerBlockOptin) +
            " bytes minus the static shared memory)");
  if (uint64_t(info.staticSharedBytes) + request.sharedBytes >
      uint64_t(kSharedPerBlockOptin))
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                std::to_string(info.staticSharedBytes) +
                    " bytes of static and " +
                    std::to_string(request.sharedBytes) +
                    " of dynamic shared memory exceed the " +
                    std::to_string(kSharedPerBlockOptin) + " a block can have");
  return CUDA_SUCCESS;
}

/// The launch's cluster shape: the attribute's, or the kernel's required
/// one, checked against the grid and the cluster size limits.
CUresult clusterShape(const char *function, const Function &f,
                      const LaunchRequest &request,
                      std::array<uint32_t, 3> &cluster) {
  const std::array<uint32_t, 3> none{0, 0, 0};
  const std::array<uint32_t, 3> &required = f.info->requiredCluster != none
                                                ? f.info->requiredCluster
                                                : f.requiredCluster;
  bool anyRequired = required != none;
  if (anyRequired && (required[0] == 0 || required[1] == 0 || required[2] == 0))
    return fail(CUDA_ERROR_INVALID_CLUSTER_SIZE, function,
                "the required cluster dimensions " + dimsText(required) +
                    " of `" + f.info->name +
                    "` must be all zero or all positive");
  if (request.cluster) {
    cluster = *request.cluster;
    if (cluster[0] == 0 || cluster[1] == 0 || cluster[2] == 0)
      return fail(CUDA_ERROR_INVALID_CLUSTER_SIZE, function,
                  "cluster " + dimsText(cluster) + " has a zero dimension");
    if (anyRequired && cluster != required)
      return fail(CUDA_ERROR_INVALID_CLUSTER_SIZE, function,
                  "cluster " + dimsText(cluster) + " differs from the " +
                      dimsText(required) + " that `" + f.info->name +
                      "` requires");
  } else {
    cluster = anyRequired ? required : std::array<uint32_t, 3>{1, 1, 1};
  }
  uint64_t size = uint64_t(cluster[0]) * cluster[1] * cluster[2];
  uint32_t limit = f.nonPortableClusterSizeAllowed ? kNonPortableClusterSize
                                                   : kPortableClusterSize;
  if (size > limit)
    return fail(
        CUDA_ERROR_INVALID_CLUSTER_SIZE, function,
        "cluster " + dimsText(cluster) + " has " + std::to_string(size) +
            " blocks; at most " + std::to_string(limit) +
            (f.nonPortableClusterSizeAllowed
                 ? std::string()
                 : std::string(" (up to 16 after setting "
                               "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_"
                               "ALLOWED)")));
  for (int d = 0; d < 3; ++d)
    if (request.grid[d] % cluster[d] != 0)
      return fail(CUDA_ERROR_INVALID_CLUSTER_SIZE, function,
                  "grid " + dimsText(request.grid) +
                      " is not divisible by cluster " + dimsText(cluster));
  return CUDA_SUCCESS;
}

CUresult launchFunction(const char *function, CUfunction handle,
                        const LaunchRequest &request, void **kernelParams,
                        void **extra) {
  State &s = state();
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(function, context));
  Function *f = nullptr;
  MOSAIC_EMU_TRY(findFunction(function, handle, f));
  MOSAIC_EMU_TRY(checkStream(function, request.stream));
  MOSAIC_EMU_TRY(checkShape(function, *f, request));
  LaunchConfig config;
  MOSAIC_EMU_TRY(clusterShape(function, *f, request, config.cluster));
  MOSAIC_EMU_TRY(parameterBuffer(function, *f->info, kernelParams, extra,
                                 config.parameters));
  config.grid = request.grid;
  config.block = request.block;
  config.dynamicSharedBytes = request.sharedBytes;

  LaunchReport report =
      launch(*f->module->module, f->info->name, config, s.memory, **s.options);
  s.lastWarpInstructions = report.warpInstructions;
  s.lastThreadInstructions = report.threadInstructions;
  s.lastSeconds = report.seconds;
  if (!report.ok) {
    s.lastReport = report.message;
    context->fault = report.message;
    return failLoudly(CUDA_ERROR_LAUNCH_FAILED, function, report.message);
  }
  for (Event *event : request.completionEvents)
    event->recorded = Clock::now();
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Error names and descriptions.
//===----------------------------------------------------------------------===//

struct ErrorText {
  CUresult code;
  const char *name;
  const char *description;
};

#define MOSAIC_EMU_ERROR(code, text)                                           \
  { code, #code, text }
const ErrorText kErrors[] = {
    MOSAIC_EMU_ERROR(CUDA_SUCCESS, "no error"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PROFILER_DISABLED,
                     "profiler disabled while using external profiling tool"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PROFILER_NOT_INITIALIZED,
                     "profiler not initialized"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PROFILER_ALREADY_STARTED,
                     "profiler already started"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PROFILER_ALREADY_STOPPED,
                     "profiler already stopped"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER,
                     "API call requires a newer CUDA driver"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_DEVICE_UNAVAILABLE,
                     "CUDA-capable device(s) is/are busy or unavailable"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NO_DEVICE,
                     "no CUDA-capable device is detected"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_DEVICE_NOT_LICENSED,
                     "device doesn't have valid Grid license"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_IMAGE,
                     "device kernel image is invalid"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT,
                     "context already current"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_UNMAP_FAILED,
                     "unmapping of buffer object failed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NO_BINARY_FOR_GPU,
                     "no kernel image is available for execution on the "
                     "device"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ALREADY_ACQUIRED, "resource already acquired"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_MAPPED_AS_ARRAY,
                     "resource not mapped as array"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_MAPPED_AS_POINTER,
                     "resource not mapped as pointer"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ECC_UNCORRECTABLE,
                     "uncorrectable ECC error encountered"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_UNSUPPORTED_LIMIT,
                     "limit is not supported on this architecture"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CONTEXT_ALREADY_IN_USE,
                     "exclusive-thread device already in use by a different "
                     "thread"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
                     "peer access is not supported between these two devices"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT,
                     "invalid OpenGL or DirectX context"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NVLINK_UNCORRECTABLE,
                     "uncorrectable NVLink error detected during the "
                     "execution"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_JIT_COMPILER_NOT_FOUND,
                     "PTX JIT compiler library not found"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
                     "the provided PTX was compiled with an unsupported "
                     "toolchain"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_JIT_COMPILATION_DISABLED,
                     "PTX JIT compilation was disabled"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
                     "the provided execution affinity is not supported"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC,
                     "the provided PTX contains unsupported call to "
                     "cudaDeviceSynchronize"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CONTAINED,
                     "an exception occurred on the device that is now "
                     "contained by the GPU's error containment capability"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_SOURCE, "device kernel image is "
                                                "invalid"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
                     "shared object symbol not found"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
                     "shared object initialization failed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or "
                                                  "operation not supported on "
                                                  "this OS"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ILLEGAL_STATE,
                     "the operation cannot be performed in the present state"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_LOSSY_QUERY,
                     "attempted introspection would be semantically lossy"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_READY, "device not ready"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ILLEGAL_ADDRESS,
                     "an illegal memory access was encountered"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                     "too many resources requested for launch"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_LAUNCH_TIMEOUT,
                     "the launch timed out and was terminated"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING,
                     "launch uses incompatible texturing mode"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
                     "peer access is already enabled"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
                     "peer access has not been enabled"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE,
                     "cannot set while device is active in this process"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ASSERT, "device-side assert triggered"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_TOO_MANY_PEERS,
                     "peer mapping resources exhausted"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                     "part or all of the requested memory range is already "
                     "mapped"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
                     "pointer does not correspond to a registered memory "
                     "region"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ILLEGAL_INSTRUCTION,
                     "an illegal instruction was encountered"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_ADDRESS_SPACE,
                     "operation not supported on global/shared address space"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_PC, "invalid program counter"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
                     "too many blocks in cooperative launch"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_TENSOR_MEMORY_LEAK,
                     "tensor memory not completely freed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
                     "system has unsupported display driver / cuda driver "
                     "combination"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
                     "forward compatibility was attempted on non supported HW"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MPS_CONNECTION_FAILED,
                     "MPS client failed to connect to the MPS control daemon "
                     "or the MPS server"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MPS_RPC_FAILURE,
                     "the remote procedural call between the MPS server and "
                     "the MPS client failed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MPS_SERVER_NOT_READY,
                     "MPS server is not ready to accept new MPS client "
                     "requests"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED,
                     "the hardware resources required to create MPS client "
                     "have been exhausted"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED,
                     "the hardware resources required to support device "
                     "connections have been exhausted"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MPS_CLIENT_TERMINATED,
                     "the MPS client has been terminated by the server"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CDP_NOT_SUPPORTED,
                     "the module is using CUDA Dynamic Parallelism, but the "
                     "current configuration does not support it"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CDP_VERSION_MISMATCH,
                     "unsupported interaction between different versions of "
                     "CUDA Dynamic Parallelism"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                     "operation not permitted when stream is capturing"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                     "operation failed due to a previous error during capture"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_MERGE,
                     "operation would result in a merge of separate capture "
                     "sequences"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
                     "capture was not ended in the same stream as it began"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
                     "capturing stream has unjoined work"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
                     "dependency created on uncaptured work in another stream"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
                     "operation would make the legacy stream depend on a "
                     "capturing blocking stream"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CAPTURED_EVENT,
                     "operation not permitted on an event last recorded in a "
                     "capturing stream"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
                     "attempt to terminate a thread-local capture sequence "
                     "from another thread"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
                     "the graph update was not performed because it included "
                     "changes which violated constraints specific to "
                     "instantiated graph update"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_EXTERNAL_DEVICE,
                     "an async error has occurred in external entity outside "
                     "of CUDA"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_CLUSTER_SIZE,
                     "a kernel launch error has occurred due to cluster "
                     "misconfiguration"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_FUNCTION_NOT_LOADED,
                     "the function handle is not loaded when calling an API "
                     "that requires a loaded function"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_RESOURCE_TYPE,
                     "one or more resources passed in are not valid resource "
                     "types for the operation"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
                     "one or more resources are insufficient or "
                     "non-applicable for the operation"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_KEY_ROTATION,
                     "an error happened during the key rotation sequence"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_UNKNOWN, "unknown error")};
#undef MOSAIC_EMU_ERROR

const ErrorText *errorText(CUresult code) {
  for (const ErrorText &error : kErrors)
    if (error.code == code)
      return &error;
  return nullptr;
}

} // namespace

//===----------------------------------------------------------------------===//
// Initialization, errors, devices.
//===----------------------------------------------------------------------===//

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags) {
  State &s = state();
  Lock lock(s.mutex);
  if (Flags != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`Flags` must be 0, not " + std::to_string(Flags));
  if (!s.options) {
    s.options = Options::fromEnvironment();
    if (!s.options->ok())
      std::fprintf(stderr, "mosaic emulator: %s\n",
                   s.options->message().c_str());
  }
  if (!s.options->ok())
    return fail(CUDA_ERROR_INVALID_VALUE, __func__, s.options->message());
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *driverVersion) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(nonNull(__func__, driverVersion, "driverVersion"));
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error,
                                                  const char **pStr) {
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  const ErrorText *text = errorText(error);
  *pStr = text ? text->name : nullptr;
  return text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error,
                                                    const char **pStr) {
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  const ErrorText *text = errorText(error);
  *pStr = text ? text->description : nullptr;
  return text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceGetCount(int *count) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, count, "count"));
  *count = 1;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, ordinal));
  MOSAIC_EMU_TRY(nonNull(__func__, device, "device"));
  *device = ordinal;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int len,
                                                   CUdevice dev) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, name, "name"));
  if (len <= 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`len` must be positive, not " + std::to_string(len));
  size_t length = std::min<size_t>(std::strlen(kDeviceName), size_t(len) - 1);
  std::memcpy(name, kDeviceName, length);
  name[length] = '\0';
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, pi, "pi"));
  std::optional<int> value = deviceAttribute(attrib);
  if (!value)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "device attribute " + std::to_string(int(attrib)) +
                    " is not modelled by the emulator");
  *pi = *value;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceComputeCapability(int *major,
                                                             int *minor,
                                                             CUdevice dev) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, major, "major"));
  MOSAIC_EMU_TRY(nonNull(__func__, minor, "minor"));
  *major = 9;
  *minor = 0;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes,
                                                    CUdevice dev) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, bytes, "bytes"));
  *bytes = kTotalMemory;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, uuid, "uuid"));
  std::memcpy(uuid->bytes, "MosaicEmulator90", sizeof(uuid->bytes));
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Contexts.
//===----------------------------------------------------------------------===//

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx,
                                                            CUdevice dev) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, pctx, "pctx"));
  ++s.primaryRetains;
  *pctx = reinterpret_cast<CUcontext>(&s.primary);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  if (s.primaryRetains == 0)
    return fail(CUDA_ERROR_INVALID_CONTEXT, __func__,
                "the primary context is not retained");
  // The last release destroys the primary context's resources, as on a GPU.
  if (--s.primaryRetains == 0)
    destroyResources(&s.primary);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  destroyResources(&s.primary);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, flags, "flags"));
  MOSAIC_EMU_TRY(nonNull(__func__, active, "active"));
  *flags = s.primary.flags;
  *active = s.primaryRetains > 0;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  s.primary.flags = flags;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuCtxCreate(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
            unsigned int flags, CUdevice dev) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, pctx, "pctx"));
  if (ctxCreateParams && (ctxCreateParams->numExecAffinityParams > 0 ||
                          ctxCreateParams->cigParams))
    return fail(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, __func__,
                "the emulator has no execution affinity or CIG contexts");
  auto context = std::make_unique<Context>();
  context->flags = flags;
  Context *handle = context.get();
  s.contexts.emplace(handle, std::move(context));
  contextStack.push_back(handle);
  *pctx = reinterpret_cast<CUcontext>(handle);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  Context *context = reinterpret_cast<Context *>(ctx);
  if (context == &s.primary)
    return fail(CUDA_ERROR_INVALID_CONTEXT, __func__,
                "the primary context is released with "
                "cuDevicePrimaryCtxRelease, not destroyed");
  auto found = s.contexts.find(context);
  if (found == s.contexts.end())
    return fail(CUDA_ERROR_INVALID_CONTEXT, __func__,
                "context " + hex(reinterpret_cast<uint64_t>(ctx)) +
                    " is not a live context");
  destroyResources(context);
  s.contexts.erase(found);
  contextStack.erase(
      std::remove(contextStack.begin(), contextStack.end(), context),
      contextStack.end());
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  Context *context = reinterpret_cast<Context *>(ctx);
  if (!context || !live(context))
    return fail(CUDA_ERROR_INVALID_CONTEXT, __func__,
                "context " + hex(reinterpret_cast<uint64_t>(ctx)) +
                    " is not a live context");
  contextStack.push_back(context);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  if (contextStack.empty())
    return fail(CUDA_ERROR_INVALID_CONTEXT, __func__,
                "the calling thread has no current context");
  if (pctx)
    *pctx = reinterpret_cast<CUcontext>(contextStack.back());
  contextStack.pop_back();
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  Context *context = reinterpret_cast<Context *>(ctx);
  if (!context) {
    if (!contextStack.empty())
      contextStack.pop_back();
    return CUDA_SUCCESS;
  }
  if (!live(context))
    return fail(CUDA_ERROR_INVALID_CONTEXT, __func__,
                "context " + hex(reinterpret_cast<uint64_t>(ctx)) +
                    " is not a live context");
  if (contextStack.empty())
    contextStack.push_back(context);
  else
    contextStack.back() = context;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, pctx, "pctx"));
  *pctx = reinterpret_cast<CUcontext>(
      contextStack.empty() ? nullptr : contextStack.back());
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, device, "device"));
  *device = 0;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device,
                                                     CUcontext ctx) {
  Lock lock(state().mutex);
  Context *context = reinterpret_cast<Context *>(ctx);
  if (context) {
    MOSAIC_EMU_TRY(requireInit(__func__));
    MOSAIC_EMU_TRY(usable(__func__, context));
  } else {
    MOSAIC_EMU_TRY(current(__func__, context));
  }
  MOSAIC_EMU_TRY(nonNull(__func__, device, "device"));
  *device = 0;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxSynchronize(void) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  return current(__func__, context);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) {
  Lock lock(state().mutex);
  Context *context = reinterpret_cast<Context *>(ctx);
  if (!context)
    return current(__func__, context);
  MOSAIC_EMU_TRY(requireInit(__func__));
  return usable(__func__, context);
}

//===----------------------------------------------------------------------===//
// Memory.
//===----------------------------------------------------------------------===//

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr,
                                              size_t bytesize) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, dptr, "dptr"));
  uint64_t address = 0;
  MOSAIC_EMU_TRY(
      allocate(__func__, context, MemoryKind::Device, bytesize, address));
  *dptr = address;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  return release(__func__, dptr, MemoryKind::Device);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemAllocHost(void **pp, size_t bytesize) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, pp, "pp"));
  uint64_t address = 0;
  MOSAIC_EMU_TRY(
      allocate(__func__, context, MemoryKind::PinnedHost, bytesize, address));
  *pp = reinterpret_cast<void *>(address);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  return release(__func__, reinterpret_cast<uint64_t>(p),
                 MemoryKind::PinnedHost);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemGetInfo(size_t *free, size_t *total) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, free, "free"));
  MOSAIC_EMU_TRY(nonNull(__func__, total, "total"));
  uint64_t used = s.memory.allocatedBytes();
  *total = kTotalMemory;
  *free = used >= kTotalMemory ? 0 : kTotalMemory - used;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *pbase,
                                                        size_t *psize,
                                                        CUdeviceptr dptr) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  auto block = s.memory.range(dptr);
  if (!block || s.allocations.at(block->first).kind != MemoryKind::Device)
    return fail(CUDA_ERROR_NOT_FOUND, __func__,
                hex(dptr) + " is in no device allocation");
  if (pbase)
    *pbase = block->first;
  if (psize)
    *psize = block->second;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuPointerGetAttribute(
    void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, data, "data"));
  auto block = s.memory.range(ptr);
  if (!block)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                hex(ptr) + " is in no allocation of the driver");
  const Allocation &allocation = s.allocations.at(block->first);
  bool device = allocation.kind == MemoryKind::Device;
  switch (attribute) {
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    *static_cast<CUcontext *>(data) =
        reinterpret_cast<CUcontext>(allocation.context);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *static_cast<unsigned int *>(data) =
        device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    // Unified addressing: pinned host memory has the same device address.
    *static_cast<CUdeviceptr *>(data) = ptr;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    if (device)
      return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                  hex(ptr) + " is device memory, which the host cannot "
                             "access directly");
    *static_cast<void **>(data) = reinterpret_cast<void *>(ptr);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    *static_cast<unsigned long long *>(data) = allocation.bufferId;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    *static_cast<int *>(data) = 0;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    *static_cast<CUdeviceptr *>(data) = block->first;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    *static_cast<size_t *>(data) = block->second;
    return CUDA_SUCCESS;
  default:
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "pointer attribute " + std::to_string(int(attribute)) +
                    " is not modelled by the emulator");
  }
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src,
                                            size_t ByteCount) {
  Lock lock(state().mutex);
  return unifiedCopy(__func__, dst, src, ByteCount, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst,
                                                 CUdeviceptr src,
                                                 size_t ByteCount,
                                                 CUstream hStream) {
  Lock lock(state().mutex);
  return unifiedCopy(__func__, dst, src, ByteCount, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice,
                                                const void *srcHost,
                                                size_t ByteCount) {
  Lock lock(state().mutex);
  return copy(__func__, dstDevice, reinterpret_cast<uint64_t>(srcHost),
              ByteCount, true, false, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoH(void *dstHost,
                                                CUdeviceptr srcDevice,
                                                size_t ByteCount) {
  Lock lock(state().mutex);
  return copy(__func__, reinterpret_cast<uint64_t>(dstHost), srcDevice,
              ByteCount, false, true, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dstDevice,
                                                CUdeviceptr srcDevice,
                                                size_t ByteCount) {
  Lock lock(state().mutex);
  return copy(__func__, dstDevice, srcDevice, ByteCount, true, true, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice,
                                                     const void *srcHost,
                                                     size_t ByteCount,
                                                     CUstream hStream) {
  Lock lock(state().mutex);
  return copy(__func__, dstDevice, reinterpret_cast<uint64_t>(srcHost),
              ByteCount, true, false, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost,
                                                     CUdeviceptr srcDevice,
                                                     size_t ByteCount,
                                                     CUstream hStream) {
  Lock lock(state().mutex);
  return copy(__func__, reinterpret_cast<uint64_t>(dstHost), srcDevice,
              ByteCount, false, true, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice,
                                                     CUdeviceptr srcDevice,
                                                     size_t ByteCount,
                                                     CUstream hStream) {
  Lock lock(state().mutex);
  return copy(__func__, dstDevice, srcDevice, ByteCount, true, true, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice,
                                              unsigned char uc, size_t N) {
  Lock lock(state().mutex);
  return fill(__func__, dstDevice, uc, N, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD16(CUdeviceptr dstDevice,
                                               unsigned short us, size_t N) {
  Lock lock(state().mutex);
  return fill(__func__, dstDevice, us, N, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD32(CUdeviceptr dstDevice,
                                               unsigned int ui, size_t N) {
  Lock lock(state().mutex);
  return fill(__func__, dstDevice, ui, N, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice,
                                                   unsigned char uc, size_t N,
                                                   CUstream hStream) {
  Lock lock(state().mutex);
  return fill(__func__, dstDevice, uc, N, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice,
                                                    unsigned short us, size_t N,
                                                    CUstream hStream) {
  Lock lock(state().mutex);
  return fill(__func__, dstDevice, us, N, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice,
                                                    unsigned int ui, size_t N,
                                                    CUstream hStream) {
  Lock lock(state().mutex);
  return fill(__func__, dstDevice, ui, N, hStream);
}

//===----------------------------------------------------------------------===//
// Modules and functions.
//===----------------------------------------------------------------------===//

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
    *pi = info.requiredCluster != none;
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

//===----------------------------------------------------------------------===//
// Launches and tensor maps.
//===----------------------------------------------------------------------===//

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuLaunchKernel(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
    void **kernelParams, void **extra) {
  Lock lock(state().mutex);
  LaunchRequest request;
  request.grid = {gridDimX, gridDimY, gridDimZ};
  request.block = {blockDimX, blockDimY, blockDimZ};
  request.sharedBytes = sharedMemBytes;
  request.stream = hStream;
  return launchFunction(__func__, f, request, kernelParams, extra);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                 void **kernelParams, void **extra) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, config, "config"));
  if (config->numAttrs > 0 && !config->attrs)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`config->numAttrs` is " + std::to_string(config->numAttrs) +
                    " but `config->attrs` is null");
  LaunchRequest request;
  request.grid = {config->gridDimX, config->gridDimY, config->gridDimZ};
  request.block = {config->blockDimX, config->blockDimY, config->blockDimZ};
  request.sharedBytes = config->sharedMemBytes;
  request.stream = config->hStream;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute &attribute = config->attrs[i];
    const CUlaunchAttributeValue &value = attribute.value;
    Event *event = nullptr;
    switch (attribute.id) {
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      request.cluster = std::array<uint32_t, 3>{
          value.clusterDim.x, value.clusterDim.y, value.clusterDim.z};
      break;
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
      MOSAIC_EMU_TRY(findEvent(__func__, value.programmaticEvent.event, event));
      request.completionEvents.push_back(event);
      break;
    case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
      MOSAIC_EMU_TRY(
          findEvent(__func__, value.launchCompletionEvent.event, event));
      request.completionEvents.push_back(event);
      break;
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
      if (value.cooperative)
        return fail(CUDA_ERROR_NOT_SUPPORTED, __func__,
                    "the emulator does not run cooperative launches");
      break;
    case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
      if (value.deviceUpdatableKernelNode.deviceUpdatable)
        return fail(CUDA_ERROR_NOT_SUPPORTED, __func__,
                    "device-updatable kernel nodes belong to graphs, which "
                    "the emulator does not have");
      break;
    // Hints and orderings that a synchronous, one-launch-at-a-time device
    // satisfies as it is: the regular cluster shape is a valid choice for a
    // preferred one, and a launch that waits for its predecessor is a valid
    // programmatic serialization.
    case CU_LAUNCH_ATTRIBUTE_IGNORE:
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
      break;
    default:
      return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                  "`config->attrs[" + std::to_string(i) + "].id` " +
                      std::to_string(int(attribute.id)) +
                      " is not a CUlaunchAttributeID");
    }
  }
  return launchFunction(__func__, f, request, kernelParams, extra);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
    cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
    const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
    const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  static_assert(sizeof(CUtensorMap) == kTensorMapBytes,
                "CUtensorMap is the emulator's 128 bytes");
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, tensorMap, "tensorMap"));
  if (reinterpret_cast<uintptr_t>(tensorMap) % 64 != 0)
    return failLoudly(CUDA_ERROR_INVALID_VALUE, __func__,
                      "`tensorMap` " +
                          hex(reinterpret_cast<uint64_t>(tensorMap)) +
                          " must be 64-byte aligned");
  Status encoded = encodeTiled(
      reinterpret_cast<uint8_t *>(tensorMap), tensorDataType, tensorRank,
      reinterpret_cast<uint64_t>(globalAddress), globalDim, globalStrides,
      boxDim, elementStrides, interleave, swizzle, l2Promotion, oobFill);
  if (!encoded.ok())
    return failLoudly(CUDA_ERROR_INVALID_VALUE, __func__, encoded.message());
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Streams and events.
//===----------------------------------------------------------------------===//

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(
    CUstream *phStream, unsigned int flags, int priority) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, phStream, "phStream"));
  if (flags & ~unsigned(CU_STREAM_NON_BLOCKING))
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`flags` " + hex(flags) +
                    " has bits other than CU_STREAM_NON_BLOCKING");
  auto stream = std::make_unique<Stream>();
  stream->context = context;
  stream->flags = flags;
  // Out-of-range priorities are clamped, as cuda.h says.
  stream->priority = std::clamp(priority, kGreatestStreamPriority, 0);
  Stream *handle = stream.get();
  s.streams.emplace(handle, std::move(stream));
  *phStream = reinterpret_cast<CUstream>(handle);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *phStream,
                                                  unsigned int Flags) {
  return cuStreamCreateWithPriority(phStream, Flags, 0);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  auto found = s.streams.find(reinterpret_cast<Stream *>(hStream));
  if (found == s.streams.end())
    return fail(CUDA_ERROR_INVALID_HANDLE, __func__,
                "stream " + hex(reinterpret_cast<uint64_t>(hStream)) +
                    " is not a stream created by cuStreamCreate");
  s.streams.erase(found);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  return checkStream(__func__, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream hStream) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  return checkStream(__func__, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream,
                                                     CUevent hEvent,
                                                     unsigned int Flags) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(checkStream(__func__, hStream));
  Event *event = nullptr;
  MOSAIC_EMU_TRY(findEvent(__func__, hEvent, event));
  (void)Flags;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventCreate(CUevent *phEvent,
                                                 unsigned int Flags) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, phEvent, "phEvent"));
  const unsigned known =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (Flags & ~known)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`Flags` " + hex(Flags) + " has unknown bits");
  if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "CU_EVENT_INTERPROCESS needs CU_EVENT_DISABLE_TIMING");
  auto event = std::make_unique<Event>();
  event->context = context;
  event->flags = Flags;
  Event *handle = event.get();
  s.events.emplace(handle, std::move(event));
  *phEvent = reinterpret_cast<CUevent>(handle);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  Event *event = nullptr;
  MOSAIC_EMU_TRY(findEvent(__func__, hEvent, event));
  s.events.erase(event);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent,
                                                          CUstream hStream,
                                                          unsigned int flags) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  Event *event = nullptr;
  MOSAIC_EMU_TRY(findEvent(__func__, hEvent, event));
  MOSAIC_EMU_TRY(checkStream(__func__, hStream));
  if (flags & ~unsigned(CU_EVENT_RECORD_EXTERNAL))
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`flags` " + hex(flags) + " has unknown bits");
  event->recorded = Clock::now();
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventRecord(CUevent hEvent,
                                                 CUstream hStream) {
  return cuEventRecordWithFlags(hEvent, hStream, 0);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  Event *event = nullptr;
  return findEvent(__func__, hEvent, event);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  Event *event = nullptr;
  return findEvent(__func__, hEvent, event);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds,
                                                      CUevent hStart,
                                                      CUevent hEnd) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, pMilliseconds, "pMilliseconds"));
  Event *start = nullptr;
  Event *end = nullptr;
  MOSAIC_EMU_TRY(findEvent(__func__, hStart, start));
  MOSAIC_EMU_TRY(findEvent(__func__, hEnd, end));
  if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING)
    return fail(CUDA_ERROR_INVALID_HANDLE, __func__,
                "an event created with CU_EVENT_DISABLE_TIMING has no time");
  if (!start->recorded || !end->recorded)
    return fail(CUDA_ERROR_INVALID_HANDLE, __func__,
                std::string("`") + (start->recorded ? "hEnd" : "hStart") +
                    "` has not been recorded");
  *pMilliseconds = std::chrono::duration<float, std::milli>(*end->recorded -
                                                            *start->recorded)
                       .count();
  return CUDA_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Extensions (Extensions.h).
//===----------------------------------------------------------------------===//

MOSAIC_EMU_EXPORT int mosaicEmulatorIsEmulator(void) { return 1; }

MOSAIC_EMU_EXPORT const char *mosaicEmulatorLastReport(void) {
  Lock lock(state().mutex);
  return state().lastReport.c_str();
}

MOSAIC_EMU_EXPORT const char *mosaicEmulatorLastError(void) {
  Lock lock(state().mutex);
  return state().lastError.c_str();
}

MOSAIC_EMU_EXPORT void
mosaicEmulatorLastLaunchCounts(unsigned long long *warpInstructions,
                               unsigned long long *threadInstructions,
                               double *seconds) {
  const State &s = state();
  Lock lock(state().mutex);
  if (warpInstructions)
    *warpInstructions = s.lastWarpInstructions;
  if (threadInstructions)
    *threadInstructions = s.lastThreadInstructions;
  if (seconds)
    *seconds = s.lastSeconds;
}

//===----------------------------------------------------------------------===//
// Legacy entry points: the unversioned symbols, with cuda.h's signatures
// for them (its __CUDA_API_VERSION_INTERNAL section). Those whose signature
// did not change forward as they are; those with 32-bit device pointers
// and sizes widen their arguments and narrow their results. The emulator's
// device addresses are host addresses, above 4 GiB, so the 32-bit
// cuMemAlloc cannot return one and fails instead.
//===----------------------------------------------------------------------===//

#undef cuDeviceTotalMem
#undef cuCtxCreate
#undef cuCtxDestroy
#undef cuCtxPopCurrent
#undef cuCtxPushCurrent
#undef cuModuleGetGlobal
#undef cuMemGetInfo
#undef cuMemAlloc
#undef cuMemFree
#undef cuMemGetAddressRange
#undef cuMemAllocHost
#undef cuMemcpyHtoD
#undef cuMemcpyDtoH
#undef cuMemcpyDtoD
#undef cuMemcpyHtoDAsync
#undef cuMemcpyDtoHAsync
#undef cuMemcpyDtoDAsync
#undef cuMemsetD8
#undef cuMemsetD16
#undef cuMemsetD32
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuEventElapsedTime
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
#undef cuDeviceGetUuid
#undef cuGetProcAddress

namespace {
/// CUdeviceptr_v1 of cuda.h's legacy declarations.
using LegacyDevicePtr = unsigned int;

unsigned int narrow(uint64_t value) {
  return value > UINT_MAX ? UINT_MAX : static_cast<unsigned int>(value);
}
} // namespace

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceTotalMem(unsigned int *bytes,
                                                    CUdevice dev) {
  size_t total = 0;
  MOSAIC_EMU_TRY(cuDeviceTotalMem_v2(bytes ? &total : nullptr, dev));
  *bytes = narrow(total);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxCreate(CUcontext *pctx,
                                               unsigned int flags,
                                               CUdevice dev) {
  return cuCtxCreate_v4(pctx, nullptr, flags, dev);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx,
                                                  unsigned int flags,
                                                  CUdevice dev) {
  return cuCtxCreate_v4(pctx, nullptr, flags, dev);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
               unsigned int flags, CUdevice dev) {
  CUctxCreateParams params{paramsArray, numParams, nullptr};
  return cuCtxCreate_v4(pctx, &params, flags, dev);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) {
  return cuCtxDestroy_v2(ctx);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx) {
  return cuCtxPopCurrent_v2(pctx);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  return cuCtxPushCurrent_v2(ctx);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuModuleGetGlobal(LegacyDevicePtr *dptr,
                                                     unsigned int *bytes,
                                                     CUmodule hmod,
                                                     const char *name) {
  CUdeviceptr address = 0;
  size_t size = 0;
  MOSAIC_EMU_TRY(cuModuleGetGlobal_v2(&address, &size, hmod, name));
  if (dptr)
    *dptr = narrow(address);
  if (bytes)
    *bytes = narrow(size);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemGetInfo(unsigned int *free,
                                                unsigned int *total) {
  size_t freeBytes = 0;
  size_t totalBytes = 0;
  MOSAIC_EMU_TRY(cuMemGetInfo_v2(free ? &freeBytes : nullptr,
                                 total ? &totalBytes : nullptr));
  *free = narrow(freeBytes);
  *total = narrow(totalBytes);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemAlloc(LegacyDevicePtr *dptr,
                                              unsigned int bytesize) {
  CUdeviceptr address = 0;
  MOSAIC_EMU_TRY(cuMemAlloc_v2(dptr ? &address : nullptr, bytesize));
  if (address > UINT_MAX) {
    (void)cuMemFree_v2(address);
    Lock lock(state().mutex);
    return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc",
                "the 32-bit legacy entry point cannot return the emulator's "
                "64-bit device addresses; use cuMemAlloc_v2 (what cuda.h's "
                "cuMemAlloc names)");
  }
  *dptr = static_cast<LegacyDevicePtr>(address);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemFree(LegacyDevicePtr dptr) {
  return cuMemFree_v2(dptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemGetAddressRange(LegacyDevicePtr *pbase,
                                                        unsigned int *psize,
                                                        LegacyDevicePtr dptr) {
  CUdeviceptr base = 0;
  size_t size = 0;
  MOSAIC_EMU_TRY(cuMemGetAddressRange_v2(&base, &size, dptr));
  if (pbase)
    *pbase = narrow(base);
  if (psize)
    *psize = narrow(size);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemAllocHost(void **pp,
                                                  unsigned int bytesize) {
  return cuMemAllocHost_v2(pp, bytesize);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyHtoD(LegacyDevicePtr dstDevice,
                                                const void *srcHost,
                                                unsigned int ByteCount) {
  return cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoH(void *dstHost,
                                                LegacyDevicePtr srcDevice,
                                                unsigned int ByteCount) {
  return cuMemcpyDtoH_v2(dstHost, srcDevice, ByteCount);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoD(LegacyDevicePtr dstDevice,
                                                LegacyDevicePtr srcDevice,
                                                unsigned int ByteCount) {
  return cuMemcpyDtoD_v2(dstDevice, srcDevice, ByteCount);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync(LegacyDevicePtr dstDevice,
                                                     const void *srcHost,
                                                     unsigned int ByteCount,
                                                     CUstream hStream) {
  return cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost,
                                                     LegacyDevicePtr srcDevice,
                                                     unsigned int ByteCount,
                                                     CUstream hStream) {
  return cuMemcpyDtoHAsync_v2(dstHost, srcDevice, ByteCount, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync(LegacyDevicePtr dstDevice,
                                                     LegacyDevicePtr srcDevice,
                                                     unsigned int ByteCount,
                                                     CUstream hStream) {
  return cuMemcpyDtoDAsync_v2(dstDevice, srcDevice, ByteCount, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD8(LegacyDevicePtr dstDevice,
                                              unsigned char uc,
                                              unsigned int N) {
  return cuMemsetD8_v2(dstDevice, uc, N);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD16(LegacyDevicePtr dstDevice,
                                               unsigned short us,
                                               unsigned int N) {
  return cuMemsetD16_v2(dstDevice, us, N);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD32(LegacyDevicePtr dstDevice,
                                               unsigned int ui,
                                               unsigned int N) {
  return cuMemsetD32_v2(dstDevice, ui, N);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
  return cuStreamDestroy_v2(hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
  return cuEventDestroy_v2(hEvent);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds,
                                                      CUevent hStart,
                                                      CUevent hEnd) {
  return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  return cuDevicePrimaryCtxRelease_v2(dev);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) {
  return cuDevicePrimaryCtxReset_v2(dev);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
  return cuDeviceGetUuid_v2(uuid, dev);
}

//===----------------------------------------------------------------------===//
// cuGetProcAddress: every entry point above by base name, in the version
// cudaTypedefs.h gives each signature (PFN_cuMemAlloc_v3020, ...). A
// request gets the newest version not newer than its `cudaVersion`.
//===----------------------------------------------------------------------===//

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol,
                                                    void **pfn, int cudaVersion,
                                                    cuuint64_t flags);

namespace {

struct Procedure {
  const char *name;
  int version;
  void *address;
};

#define MOSAIC_EMU_PROC(name, version, symbol)                                 \
  { name, version, reinterpret_cast<void *>(&symbol) }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
const Procedure kProcedures[] = {
    MOSAIC_EMU_PROC("cuInit", 2000, cuInit),
    MOSAIC_EMU_PROC("cuDriverGetVersion", 2020, cuDriverGetVersion),
    MOSAIC_EMU_PROC("cuGetErrorName", 6000, cuGetErrorName),
    MOSAIC_EMU_PROC("cuGetErrorString", 6000, cuGetErrorString),
    MOSAIC_EMU_PROC("cuGetProcAddress", 11030, cuGetProcAddress),
    MOSAIC_EMU_PROC("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    MOSAIC_EMU_PROC("cuDeviceGetCount", 2000, cuDeviceGetCount),
    MOSAIC_EMU_PROC("cuDeviceGet", 2000, cuDeviceGet),
    MOSAIC_EMU_PROC("cuDeviceGetName", 2000, cuDeviceGetName),
    MOSAIC_EMU_PROC("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    MOSAIC_EMU_PROC("cuDeviceComputeCapability", 2000,
                    cuDeviceComputeCapability),
    MOSAIC_EMU_PROC("cuDeviceTotalMem", 2000, cuDeviceTotalMem),
    MOSAIC_EMU_PROC("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    MOSAIC_EMU_PROC("cuDeviceGetUuid", 9020, cuDeviceGetUuid),
    MOSAIC_EMU_PROC("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxRelease", 7000,
                    cuDevicePrimaryCtxRelease),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxRelease", 11000,
                    cuDevicePrimaryCtxRelease_v2),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxReset", 7000, cuDevicePrimaryCtxReset),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxReset", 11000,
                    cuDevicePrimaryCtxReset_v2),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxGetState", 7000,
                    cuDevicePrimaryCtxGetState),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxSetFlags", 7000,
                    cuDevicePrimaryCtxSetFlags),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxSetFlags", 11000,
                    cuDevicePrimaryCtxSetFlags_v2),
    MOSAIC_EMU_PROC("cuCtxCreate", 2000, cuCtxCreate),
    MOSAIC_EMU_PROC("cuCtxCreate", 3020, cuCtxCreate_v2),
    MOSAIC_EMU_PROC("cuCtxCreate", 11040, cuCtxCreate_v3),
    MOSAIC_EMU_PROC("cuCtxCreate", 12050, cuCtxCreate_v4),
    MOSAIC_EMU_PROC("cuCtxDestroy", 2000, cuCtxDestroy),
    MOSAIC_EMU_PROC("cuCtxDestroy", 4000, cuCtxDestroy_v2),
    MOSAIC_EMU_PROC("cuCtxPushCurrent", 2000, cuCtxPushCurrent),
    MOSAIC_EMU_PROC("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
    MOSAIC_EMU_PROC("cuCtxPopCurrent", 2000, cuCtxPopCurrent),
    MOSAIC_EMU_PROC("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    MOSAIC_EMU_PROC("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    MOSAIC_EMU_PROC("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    MOSAIC_EMU_PROC("cuCtxGetDevice", 2000, cuCtxGetDevice),
    MOSAIC_EMU_PROC("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
    MOSAIC_EMU_PROC("cuCtxSynchronize", 2000, cuCtxSynchronize),
    MOSAIC_EMU_PROC("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),
    MOSAIC_EMU_PROC("cuMemAlloc", 2000, cuMemAlloc),
    MOSAIC_EMU_PROC("cuMemAlloc", 3020, cuMemAlloc_v2),
    MOSAIC_EMU_PROC("cuMemFree", 2000, cuMemFree),
    MOSAIC_EMU_PROC("cuMemFree", 3020, cuMemFree_v2),
    MOSAIC_EMU_PROC("cuMemAllocHost", 2000, cuMemAllocHost),
    MOSAIC_EMU_PROC("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    MOSAIC_EMU_PROC("cuMemFreeHost", 2000, cuMemFreeHost),
    MOSAIC_EMU_PROC("cuMemGetInfo", 2000, cuMemGetInfo),
    MOSAIC_EMU_PROC("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    MOSAIC_EMU_PROC("cuMemGetAddressRange", 2000, cuMemGetAddressRange),
    MOSAIC_EMU_PROC("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
    MOSAIC_EMU_PROC("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
    MOSAIC_EMU_PROC("cuMemcpy", 4000, cuMemcpy),
    MOSAIC_EMU_PROC("cuMemcpyAsync", 4000, cuMemcpyAsync),
    MOSAIC_EMU_PROC("cuMemcpyHtoD", 2000, cuMemcpyHtoD),
    MOSAIC_EMU_PROC("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
    MOSAIC_EMU_PROC("cuMemcpyDtoH", 2000, cuMemcpyDtoH),
    MOSAIC_EMU_PROC("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
    MOSAIC_EMU_PROC("cuMemcpyDtoD", 2000, cuMemcpyDtoD),
    MOSAIC_EMU_PROC("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2),
    MOSAIC_EMU_PROC("cuMemcpyHtoDAsync", 2000, cuMemcpyHtoDAsync),
    MOSAIC_EMU_PROC("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2),
    MOSAIC_EMU_PROC("cuMemcpyDtoHAsync", 2000, cuMemcpyDtoHAsync),
    MOSAIC_EMU_PROC("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2),
    MOSAIC_EMU_PROC("cuMemcpyDtoDAsync", 3000, cuMemcpyDtoDAsync),
    MOSAIC_EMU_PROC("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2),
    MOSAIC_EMU_PROC("cuMemsetD8", 2000, cuMemsetD8),
    MOSAIC_EMU_PROC("cuMemsetD8", 3020, cuMemsetD8_v2),
    MOSAIC_EMU_PROC("cuMemsetD16", 2000, cuMemsetD16),
    MOSAIC_EMU_PROC("cuMemsetD16", 3020, cuMemsetD16_v2),
    MOSAIC_EMU_PROC("cuMemsetD32", 2000, cuMemsetD32),
    MOSAIC_EMU_PROC("cuMemsetD32", 3020, cuMemsetD32_v2),
    MOSAIC_EMU_PROC("cuMemsetD8Async", 3020, cuMemsetD8Async),
    MOSAIC_EMU_PROC("cuMemsetD16Async", 3020, cuMemsetD16Async),
    MOSAIC_EMU_PROC("cuMemsetD32Async", 3020, cuMemsetD32Async),
    MOSAIC_EMU_PROC("cuModuleLoad", 2000, cuModuleLoad),
    MOSAIC_EMU_PROC("cuModuleLoadData", 2000, cuModuleLoadData),
    MOSAIC_EMU_PROC("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
    MOSAIC_EMU_PROC("cuModuleUnload", 2000, cuModuleUnload),
    MOSAIC_EMU_PROC("cuModuleGetFunction", 2000, cuModuleGetFunction),
    MOSAIC_EMU_PROC("cuModuleGetGlobal", 2000, cuModuleGetGlobal),
    MOSAIC_EMU_PROC("cuModuleGetGlobal", 3020, cuModuleGetGlobal_v2),
    MOSAIC_EMU_PROC("cuFuncGetAttribute", 2020, cuFuncGetAttribute),
    MOSAIC_EMU_PROC("cuFuncSetAttribute", 9000, cuFuncSetAttribute),
    MOSAIC_EMU_PROC("cuFuncGetName", 12030, cuFuncGetName),
    MOSAIC_EMU_PROC("cuFuncGetParamInfo", 12040, cuFuncGetParamInfo),
    MOSAIC_EMU_PROC("cuFuncGetModule", 11000, cuFuncGetModule),
    MOSAIC_EMU_PROC("cuLaunchKernel", 4000, cuLaunchKernel),
    MOSAIC_EMU_PROC("cuLaunchKernelEx", 11060, cuLaunchKernelEx),
    MOSAIC_EMU_PROC("cuTensorMapEncodeTiled", 12000, cuTensorMapEncodeTiled),
    MOSAIC_EMU_PROC("cuStreamCreate", 2000, cuStreamCreate),
    MOSAIC_EMU_PROC("cuStreamCreateWithPriority", 5050,
                    cuStreamCreateWithPriority),
    MOSAIC_EMU_PROC("cuStreamDestroy", 2000, cuStreamDestroy),
    MOSAIC_EMU_PROC("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    MOSAIC_EMU_PROC("cuStreamSynchronize", 2000, cuStreamSynchronize),
    MOSAIC_EMU_PROC("cuStreamQuery", 2000, cuStreamQuery),
    MOSAIC_EMU_PROC("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
    MOSAIC_EMU_PROC("cuEventCreate", 2000, cuEventCreate),
    MOSAIC_EMU_PROC("cuEventDestroy", 2000, cuEventDestroy),
    MOSAIC_EMU_PROC("cuEventDestroy", 4000, cuEventDestroy_v2),
    MOSAIC_EMU_PROC("cuEventRecord", 2000, cuEventRecord),
    MOSAIC_EMU_PROC("cuEventRecordWithFlags", 11010, cuEventRecordWithFlags),
    MOSAIC_EMU_PROC("cuEventSynchronize", 2000, cuEventSynchronize),
    MOSAIC_EMU_PROC("cuEventQuery", 2000, cuEventQuery),
    MOSAIC_EMU_PROC("cuEventElapsedTime", 2000, cuEventElapsedTime),
    MOSAIC_EMU_PROC("cuEventElapsedTime", 12080, cuEventElapsedTime_v2)};
#pragma GCC diagnostic pop
#undef MOSAIC_EMU_PROC

} // namespace

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(
    const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
    CUdriverProcAddressQueryResult *symbolStatus) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(nonNull(__func__, symbol, "symbol"));
  MOSAIC_EMU_TRY(nonNull(__func__, pfn, "pfn"));
  // The per-thread default stream variants are the same functions here:
  // every stream is synchronous.
  (void)flags;
  *pfn = nullptr;
  const Procedure *best = nullptr;
  bool known = false;
  for (const Procedure &procedure : kProcedures) {
    if (std::strcmp(procedure.name, symbol) != 0)
      continue;
    known = true;
    if (procedure.version <= cudaVersion &&
        (!best || procedure.version > best->version))
      best = &procedure;
  }
  if (!best) {
    if (symbolStatus)
      *symbolStatus = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return fail(CUDA_ERROR_NOT_FOUND, __func__,
                std::string("`") + symbol + "` " +
                    (known ? "needs a newer `cudaVersion` than " +
                                 std::to_string(cudaVersion)
                           : std::string("is not an entry point of the "
                                         "emulator")));
  }
  *pfn = best->address;
  if (symbolStatus)
    *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol,
                                                    void **pfn, int cudaVersion,
                                                    cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, nullptr);
}
