//===- Driver.h - What the driver API's sections share ---------*- C++ -*-===//
//
// The emulator's libcuda.so.1 is split the way cuda.h is: one file per API
// section (DriverDevice.cpp, DriverContext.cpp, DriverPeer.cpp,
// DriverMemory.cpp, DriverVirtualMemory.cpp, DriverModule.cpp,
// DriverLaunch.cpp, DriverTensorMap.cpp, DriverStream.cpp, DriverErrors.cpp),
// the process-wide state and the checks every entry point makes
// (DriverState.cpp), the streams' queued work (DriverQueue.cpp), the
// emulator's own extensions (DriverExtensions.cpp), and the legacy symbols
// and cuGetProcAddress (DriverEntryPoints.cpp). This header is private to
// them.
//
// - One process-wide lock around every entry point: calls are serialized.
// - Devices: MOSAIC_EMULATOR_DEVICES (Options::devices) identical H100s,
//   any two of them peers. Each has one primary context; cuCtxCreate makes
//   more on any device. Memory allocated in a context belongs to the
//   context's device in the one DeviceMemory (docs/RationaleMultiDevice.md,
//   "The emulator"); all devices share one address space, the host's.
// - Launches are queued on their stream (DriverQueue.cpp); a launch whose
//   configuration the driver refuses fails the launch call itself. The
//   queued work of every stream of every context runs when a call must
//   observe it (`runQueuedWork`): synchronizations, event queries, copies,
//   memsets, frees and unmaps, releases of physical memory, module
//   unloads, stream and context destruction, resets, disabling peer
//   access, the extensions' queries, and process exit. Each step runs the
//   oldest ready launch of every stream as one co-scheduled group
//   (`launchTogether`), so that kernels on different devices that wait for
//   each other progress. Copies and memsets are synchronous: they run the
//   queue, then complete before they return.
// - Contexts are handles; each host thread has its own stack of current
//   contexts. A kernel that faults makes its context's error sticky, as on
//   a GPU: the launch itself returns CUDA_SUCCESS (the kernel runs after
//   the call), and every later call that uses the context returns the
//   fault's code (CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_MISALIGNED_ADDRESS,
//   CUDA_ERROR_ILLEGAL_INSTRUCTION, or CUDA_ERROR_LAUNCH_FAILED for `trap`,
//   hazards and everything else) until cuDevicePrimaryCtxReset (or
//   cuCtxDestroy for a created context). Work queued in a context with a
//   sticky fault is dropped, not run.
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
#include <deque>
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
  /// The device's ordinal.
  uint32_t device = 0;
  unsigned flags = 0;
  /// The contexts whose memory this context enabled access to
  /// (cuCtxEnablePeerAccess).
  std::set<Context *> peers;
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
  /// Recorded after queued work that has not run: its sequence number.
  std::optional<uint64_t> pending;
};

enum class MemoryKind { Device, PinnedHost, Mapping };

struct Allocation {
  Context *context = nullptr;
  MemoryKind kind = MemoryKind::Device;
  uint64_t bufferId = 0;
  /// The device owning the memory.
  uint32_t device = 0;
};

/// Work queued on a stream: a launch, or an event's record.
struct QueuedWork {
  /// Orders work: later work has a greater sequence number.
  uint64_t sequence = 0;
  Context *context = nullptr;
  /// The entry point that queued it, for its error messages.
  const char *function = "";
  /// Null for an event's record.
  std::shared_ptr<const Module> module;
  DeviceLaunch launch;
  /// Work of other streams that must complete before this runs.
  std::vector<uint64_t> after;
  /// Events recorded when this completes.
  std::vector<Event *> completionEvents;
};

/// Physical memory from cuMemCreate or cuMemImportFromShareableHandle: a
/// memfd of the host (DriverVirtualMemory.cpp).
struct PhysicalMemory {
  int fd = -1;
  uint64_t size = 0;
  uint32_t device = 0;
  CUmemAllocationProp properties{};
  /// The handle's references (its creation and each
  /// cuMemRetainAllocationHandle), each ended by a cuMemRelease.
  unsigned handleReferences = 1;
  /// Its mappings; the memory lives until both counts are zero.
  unsigned mappings = 0;
  /// Exported or imported: another process may map it too.
  bool shared = false;
};

/// A range from cuMemAddressReserve.
struct Reservation {
  uint64_t size = 0;
};

/// A cuMemMap of physical memory into a reservation.
struct Mapping {
  uint64_t size = 0;
  PhysicalMemory *memory = nullptr;
  /// The flags cuMemSetAccess gave each device.
  std::map<uint32_t, CUmemAccess_flags> access;
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
  /// Each device's primary context, and how often it is retained.
  std::array<Context, kMaxEmulatedDevices> primaries;
  std::array<unsigned, kMaxEmulatedDevices> primaryRetains{};
  std::map<Context *, std::unique_ptr<Context>> contexts;
  std::map<LoadedModule *, std::unique_ptr<LoadedModule>> modules;
  std::set<Function *> functions;
  std::map<Stream *, std::unique_ptr<Stream>> streams;
  std::map<Event *, std::unique_ptr<Event>> events;
  /// Queued launches by (context, stream); the default stream is null.
  std::map<std::pair<Context *, Stream *>, std::deque<QueuedWork>> queues;
  /// What the next work queued on a stream waits for (cuStreamWaitEvent).
  std::map<std::pair<Context *, Stream *>, std::vector<uint64_t>> streamWaits;
  uint64_t nextSequence = 1;
  std::map<PhysicalMemory *, std::unique_ptr<PhysicalMemory>> physical;
  std::map<uint64_t, Reservation> reservations;
  std::map<uint64_t, Mapping> mappings;
  std::string lastReport;
  std::string lastError;
  uint64_t lastWarpInstructions = 0;
  uint64_t lastThreadInstructions = 0;
  double lastSeconds = 0;

  State() {
    for (uint32_t d = 0; d < kMaxEmulatedDevices; ++d) {
      primaries[d].primary = true;
      primaries[d].device = d;
    }
  }
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
/// Devices the driver reports; requires a successful cuInit.
uint32_t deviceCount();
CUresult requireDevice(const char *function, CUdevice device);
/// The primary context of device `device`.
Context &primaryContext(CUdevice device);
bool live(const Context *context);
/// `handle` as a live context, or CUDA_ERROR_INVALID_CONTEXT.
CUresult findContext(const char *function, CUcontext handle, Context *&out);
/// `context` if it can run work: live, and without a sticky fault.
CUresult usable(const char *function, Context *context);
/// The calling thread's current context, for a call that uses it.
CUresult current(const char *function, Context *&out);
CUresult nonNull(const char *function, const void *pointer,
                 const char *operand);
/// Null, CU_STREAM_LEGACY or CU_STREAM_PER_THREAD.
bool isDefaultStream(CUstream stream);
CUresult checkStream(const char *function, CUstream stream);
CUresult findEvent(const char *function, CUevent handle, Event *&out);
CUresult findFunction(const char *function, CUfunction handle, Function *&out);
CUresult findModule(const char *function, CUmodule handle, LoadedModule *&out);
/// Frees everything `context` owns, disables its peer access and clears
/// its fault. Runs the queued work first.
void destroyResources(Context *context);

/// Sets DeviceMemory's peer access of every pair of devices from the
/// contexts' enabled peers: device d reaches device e's memory while some
/// context of d has access to some context of e.
void updatePeerAccess();

/// Runs every queued launch of every stream of every context
/// (DriverQueue.cpp); a failed launch sets its context's sticky fault.
void runQueuedWork();
/// Queues `work` on `stream` of its context, after what the stream has
/// queued, and after what the stream must wait for: events
/// (cuStreamWaitEvent), and between the default stream and the context's
/// blocking streams, each other's queued work.
/// Returns the work's sequence number.
uint64_t queueWork(CUstream stream, QueuedWork work);
/// `runQueuedWork` at process exit, unless another thread is inside the
/// driver.
void runQueuedWorkAtExit();
/// `requireInit`, then `runQueuedWork`: for a call that observes the
/// queued work's results.
CUresult observeQueuedWork(const char *function);
/// Records `event` when the work queued so far on `stream` (of `context`,
/// for a default stream) completes, or now if none is queued.
void recordEvent(Event *event, Context *context, CUstream stream);
/// Makes the next work queued on `stream` (of `context`, for a default
/// stream) wait for `event`'s work.
void waitForEvent(Context *context, CUstream stream, const Event *event);
/// Forgets `event` in the queued work (it is destroyed or recorded again).
void forgetEvent(const Event *event);
/// The stream's key in `State::queues`: null for every default stream.
Stream *streamKey(CUstream stream);

} // namespace mosaic::emulator::driver

#endif // MOSAIC_EMULATOR_DRIVER_H
