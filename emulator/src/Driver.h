//===- Driver.h - What the driver API's sections share ---------*- C++ -*-===//
//
// The emulator's libcuda.so.1 is split the way cuda.h is: one file per API
// section (DriverDevice.cpp, DriverContext.cpp, DriverMemory.cpp,
// DriverModule.cpp, DriverLaunch.cpp, DriverTensorMap.cpp, DriverStream.cpp,
// DriverErrors.cpp), the process-wide state and the checks every entry point
// makes (DriverState.cpp), the emulator's own extensions
// (DriverExtensions.cpp), and the legacy symbols and cuGetProcAddress
// (DriverEntryPoints.cpp). This header is private to them.
//
// - One process-wide lock around every entry point: calls are serialized,
//   and a launch runs to completion inside the call. Streams and events are
//   bookkeeping; asynchronous copies and memsets complete before they return.
// - Contexts are handles: the primary context and those from cuCtxCreate,
//   all on the same device memory. Each host thread has its own stack of
//   current contexts. A kernel that faults makes its context's error sticky,
//   as on a GPU: the launch itself returns CUDA_SUCCESS (the kernel runs
//   after the call on hardware), and every later call that uses the context
//   returns the fault's code (CUDA_ERROR_ILLEGAL_ADDRESS,
//   CUDA_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_ILLEGAL_INSTRUCTION, or
//   CUDA_ERROR_LAUNCH_FAILED for `trap`, hazards and everything else) until
//   cuDevicePrimaryCtxReset (or cuCtxDestroy for a created context). A
//   launch configuration the emulator refuses fails the launch call itself.
// - Every error also records why (mosaicEmulatorLastError, Extensions.h);
//   errors in what the user gave the device (PTX that does not load, a
//   CUBIN image, a tensor map breaking a cuda.h rule, a failed launch) are
//   printed to stderr as "mosaic emulator: ...", since the CUresult alone
//   cannot say what was wrong.
//
// Symbol names: cuda.h #defines many entry points to versioned symbols
// (`cuMemAlloc` -> `cuMemAlloc_v2`), so a function defined under the plain
// name defines the versioned symbol, with the header's type; that is the
// symbol a program compiled against cuda.h looks up. The unversioned legacy
// symbols the real driver also exports keep their old signatures (32-bit
// device pointers and sizes where cuda.h says so) and are defined in
// DriverEntryPoints.cpp, after the #undefs.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_DRIVER_H
#define MOSAIC_EMULATOR_DRIVER_H

#include "mosaic/Contracts/HardwareLimits.h"
#include "mosaic/Emulator/Machine.h"

#include <cuda.h>

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#define MOSAIC_EMU_EXPORT extern "C" __attribute__((visibility("default")))

#define MOSAIC_EMU_TRY(expr)                                                   \
  do {                                                                         \
    if (CUresult emuResult_ = (expr); emuResult_ != CUDA_SUCCESS)              \
      return emuResult_;                                                       \
  } while (false)

namespace mosaic::emulator::driver {

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
constexpr int kSharedPerBlockOptin = limits::kMaxSharedMemoryPerBlock;
constexpr int kSharedPerMultiprocessor = 233472;
/// cuDeviceTotalMem of an H100 SXM 80GB: 81559 MiB.
constexpr uint64_t kTotalMemory = 81559ull << 20;
constexpr uint32_t kPortableClusterSize = limits::kMaxPortableClusterSize;
constexpr uint32_t kNonPortableClusterSize = limits::kMaxClusterSize;
/// Stream priorities of Hopper: 0 (least) to -5 (greatest).
constexpr int kGreatestStreamPriority = -5;

//===----------------------------------------------------------------------===//
// Driver state.
//===----------------------------------------------------------------------===//

struct Context {
  bool primary = false;
  unsigned flags = 0;
  /// Set by a launch that failed in this context: the error every later
  /// call returns, and the report's message.
  struct StickyFault {
    CUresult code;
    std::string message;
  };
  std::optional<StickyFault> fault;
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

State &state();

/// The calling thread's context stack; the top is the current context.
extern thread_local std::vector<Context *> contextStack;

using Lock = std::lock_guard<std::mutex>;

std::string hex(uint64_t value);
std::string dimsText(const std::array<uint32_t, 3> &dims);

/// Records why `function` failed (mosaicEmulatorLastError) and returns
/// `code`.
CUresult fail(CUresult code, const char *function, const std::string &why);
/// `fail`, and the message on stderr: for errors in what the program gave
/// the device, which the CUresult cannot explain.
CUresult failLoudly(CUresult code, const char *function,
                    const std::string &why);

CUresult requireInit(const char *function);
CUresult requireDevice(const char *function, CUdevice device);
bool live(const Context *context);
/// `context` if it can run work: live, and without a sticky fault.
CUresult usable(const char *function, Context *context);
/// The calling thread's current context, for a call that uses it.
CUresult current(const char *function, Context *&out);
CUresult nonNull(const char *function, const void *pointer,
                 const char *operand);
CUresult checkStream(const char *function, CUstream stream);
CUresult findEvent(const char *function, CUevent handle, Event *&out);
CUresult findFunction(const char *function, CUfunction handle, Function *&out);
CUresult findModule(const char *function, CUmodule handle, LoadedModule *&out);
/// Frees everything `context` owns and clears its fault.
void destroyResources(Context *context);

} // namespace mosaic::emulator::driver

#endif // MOSAIC_EMULATOR_DRIVER_H
