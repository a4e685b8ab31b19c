//===- Machine.h - Running PTX kernels on the host ------------*- C++ -*-===//
//
// The emulator's public interface: load a PTX module, allocate device
// memory, launch a kernel over a grid of clusters of CTAs. Launches are
// synchronous: `launch` returns when every CTA has exited, or with the first
// fault, hazard or deadlock it found. The CUDA driver API the emulator
// exports (src/Driver*.cpp) is a thin layer over this header.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_MACHINE_H
#define MOSAIC_EMULATOR_MACHINE_H

#include "mosaic/Emulator/Status.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace mosaic::emulator {

class Program;

/// One `.param` of a kernel entry, at its byte offset in the parameter
/// buffer (offsets follow the declared alignments, as the driver lays out
/// `kernelParams`).
struct KernelParameter {
  std::string name;
  uint32_t offset = 0;
  uint32_t size = 0;
  uint32_t align = 1;
};

/// What the driver reports about a kernel (cuFuncGetAttribute).
struct KernelInfo {
  std::string name;
  std::vector<KernelParameter> parameters;
  uint32_t parameterBytes = 0;
  uint32_t staticSharedBytes = 0;
  uint32_t localBytes = 0;
  /// `.maxntid`/`.reqntid` product, else 1024.
  uint32_t maxThreadsPerBlock = 1024;
  /// Registers declared by the kernel, capped at 255 (an estimate: PTX
  /// registers are virtual).
  uint32_t registers = 0;
  /// The per-thread register count every warp holds at launch, which
  /// `setmaxnreg` moves to and from the CTA's pool: fixed by `.maxnreg`, or
  /// by `.maxntid`/`.reqntid` with `.minnctapersm`, as ptxas fixes it
  /// (docs/RationaleEmulator.md, "setmaxnreg"). 0 when the PTX fixes none:
  /// ptxas then drops every `setmaxnreg`, and the emulator moves no
  /// registers either.
  uint32_t entryRegisters = 0;
  /// `.reqnctapercluster`, or zeros.
  std::array<uint32_t, 3> requiredCluster{0, 0, 0};
  /// `.maxclusterrank`: the most CTAs a cluster may have, or 0.
  uint32_t maxClusterRank = 0;
  /// `.explicitcluster`: every launch gives the cluster dimensions.
  bool explicitCluster = false;
};

/// A parsed and decoded PTX module. Immutable, shared by launches.
class Module {
public:
  /// Parses `ptx`; an unsupported directive or instruction is an error that
  /// names it and its line.
  static Expected<std::shared_ptr<const Module>> load(std::string_view ptx);
  ~Module();

  /// The `.entry` named `name`, or nullptr.
  const KernelInfo *kernel(std::string_view name) const;
  std::vector<std::string> kernelNames() const;
  const Program &program() const { return *code; }

private:
  Module() = default;
  std::unique_ptr<Program> code;
  std::vector<KernelInfo> infos;
};

/// Device (global) memory. Addresses are host addresses of 256-byte aligned
/// blocks, so a device pointer can be handed to the kernel as is; every
/// access the kernel makes is checked against the allocations.
///
/// Every block belongs to one device (docs/RationaleMultiDevice.md, "The
/// emulator"). A kernel on its owner may touch it; a kernel on another
/// device only once peer access from that device to the owner is enabled,
/// or the block grants that device access (a virtual-memory mapping after
/// cuMemSetAccess).
class DeviceMemory {
public:
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;
  ~DeviceMemory();

  Expected<uint64_t> allocate(uint64_t bytes, uint32_t device = 0);
  Status free(uint64_t address);
  /// Registers host memory the caller mapped at [address, address + bytes)
  /// (a virtual-memory mapping, page aligned) as memory of device `owner`,
  /// accessible from no other device until `grantAccess`. `removeMapping`
  /// forgets it; the caller unmaps it.
  Status addMapping(uint64_t address, uint64_t bytes, uint32_t owner);
  Status removeMapping(uint64_t address);
  /// Marks the mapping at `address` as memory another process also maps (an
  /// imported shareable handle): writes to it can come from outside the
  /// emulator, so a warp polling it is not deadlocked until a timeout.
  Status markShared(uint64_t address);
  /// Whether [address, address + bytes) lies in such a mapping.
  bool sharedWithOtherProcesses(uint64_t address) const;
  /// Lets `device` access the block at `address` (cuMemSetAccess), or no
  /// longer.
  Status grantAccess(uint64_t address, uint32_t device, bool allowed = true);
  /// Lets kernels on `from` access every block of `to` (cuCtxEnablePeerAccess),
  /// or no longer.
  void setPeerAccess(uint32_t from, uint32_t to, bool enabled);
  /// The device owning the block containing `address`.
  std::optional<uint32_t> owner(uint64_t address) const;
  /// The allocation containing `address`: its base and size.
  std::optional<std::pair<uint64_t, uint64_t>> range(uint64_t address) const;
  /// The host bytes of [address, address + bytes) if they lie inside one
  /// allocation, else nullptr. The host's view: no device check.
  uint8_t *translate(uint64_t address, uint64_t bytes) const;
  /// The host bytes of [address, address + bytes) as a kernel on `device`
  /// may touch them, or nullptr: with `why` empty when the range is not
  /// inside one allocation, else saying whose memory it is and that
  /// `device` may not access it.
  uint8_t *translate(uint64_t address, uint64_t bytes, uint32_t device,
                     std::string &why) const;
  /// Bytes allocated and not freed.
  uint64_t allocatedBytes() const;

private:
  struct Block {
    uint64_t size = 0;
    uint32_t device = 0;
    /// A virtual-memory mapping: the caller owns the host memory.
    bool mapped = false;
    /// Devices besides the owner that may access it.
    std::set<uint32_t> granted;
    /// Another process maps it too (markShared).
    bool shared = false;
  };
  /// The block holding all of [address, address + bytes), or null. The
  /// caller holds `mutex`.
  const Block *containing(uint64_t address, uint64_t bytes) const;

  mutable std::mutex mutex;
  std::map<uint64_t, Block> blocks; // by base
  /// (from, to): kernels on `from` may access every block of `to`.
  std::set<std::pair<uint32_t, uint32_t>> peers;
};

/// When asynchronous operations (TMA, bulk copies, wgmma) complete.
enum class AsyncPolicy {
  /// As soon as they are issued.
  Eager,
  /// Only when no warp of the cluster can run, or a wait needs them.
  Lazy,
  /// At random points (seeded).
  Random,
};

/// The most devices the emulator reports: a node of 8 GPUs, and room to
/// test larger rings.
constexpr uint32_t kMaxEmulatedDevices = 64;

struct Options {
  AsyncPolicy policy = AsyncPolicy::Lazy;
  /// Pick the next warp at random (seeded) instead of round robin.
  bool randomSchedule = false;
  uint64_t seed = 1;
  /// Host threads running clusters in parallel; 0: one per core.
  unsigned hostThreads = 0;
  bool checkHazards = true;
  /// Warp instructions one CTA may execute before the launch is reported as
  /// a likely hang.
  uint64_t instructionLimitPerCta = 2'000'000'000ull;
  /// Devices the driver reports (MOSAIC_EMULATOR_DEVICES, 1 to
  /// kMaxEmulatedDevices).
  uint32_t devices = 1;
  /// How long a co-scheduled group whose warps poll memory another process
  /// maps (DeviceMemory::markShared) may go on with nothing else changing
  /// before it is reported as deadlocked, in seconds
  /// (MOSAIC_EMULATOR_POLL_TIMEOUT).
  double pollTimeoutSeconds = 60;

  /// Defaults overridden by MOSAIC_EMULATOR_POLICY (eager|lazy|random),
  /// MOSAIC_EMULATOR_SCHEDULE (roundrobin|random), MOSAIC_EMULATOR_SEED,
  /// MOSAIC_EMULATOR_THREADS, MOSAIC_EMULATOR_HAZARDS (on|off),
  /// MOSAIC_EMULATOR_DEVICES and MOSAIC_EMULATOR_POLL_TIMEOUT. A value
  /// it cannot read is an error naming the variable.
  static Expected<Options> fromEnvironment();
};

struct LaunchConfig {
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  /// All ones: no cluster.
  std::array<uint32_t, 3> cluster{1, 1, 1};
  uint32_t dynamicSharedBytes = 0;
  /// The parameter buffer, laid out as `KernelInfo::parameters` says.
  std::vector<uint8_t> parameters;
};

/// What kind of failure ended a launch: the hardware's error for the faults
/// a GPU raises (the driver returns it from the next synchronizing call), or
/// a finding of the emulator's own (a hazard, a deadlock, a hang, an
/// operation it cannot run), which a GPU would not report as such.
enum class FaultKind {
  /// The launch configuration was refused before anything ran.
  Configuration,
  /// A global, shared or local access outside what the kernel may touch
  /// (CUDA_ERROR_ILLEGAL_ADDRESS).
  IllegalAddress,
  /// An access not aligned to its width (CUDA_ERROR_MISALIGNED_ADDRESS).
  MisalignedAddress,
  /// An instruction the hardware refuses to execute with these operands,
  /// e.g. a tensor copy its tensor map does not allow
  /// (CUDA_ERROR_ILLEGAL_INSTRUCTION).
  IllegalInstruction,
  /// `trap`, and every other fault the emulator has no more precise code for
  /// (CUDA_ERROR_LAUNCH_FAILED).
  Unspecified,
  /// A data race or misuse of the memory model the hardware would not
  /// report (CUDA_ERROR_LAUNCH_FAILED from the emulator).
  Hazard,
};

struct LaunchReport {
  /// False on a fault (bad address, unsupported operand at run time), a
  /// hazard or a deadlock; `message` then says what, where and who.
  bool ok = true;
  bool hazard = false;
  FaultKind kind = FaultKind::Unspecified;
  std::string message;
  uint64_t warpInstructions = 0;
  uint64_t threadInstructions = 0;
  double seconds = 0;
};

/// Runs `kernel` of `module` on `device` to completion. Checks the
/// configuration first (block size against the kernel's limits, grid
/// divisible by the cluster).
LaunchReport launch(const Module &module, std::string_view kernel,
                    const LaunchConfig &config, DeviceMemory &memory,
                    const Options &options, uint32_t device = 0);

/// One launch of a co-scheduled group.
struct DeviceLaunch {
  const Module *module = nullptr;
  std::string kernel;
  LaunchConfig config;
  uint32_t device = 0;
};

/// Runs `launches` together, as kernels on different devices (or streams)
/// run at the same time on a GPU: the clusters of all of them are
/// interleaved on one host thread (`Options::hostThreads` does not apply),
/// so that one may wait for another's writes. Happens-before is followed
/// across all of them; a group in which every warp is blocked or polls
/// memory nothing will change is a deadlock naming each device's blocked
/// warps. One report per launch, in order; a fault, hazard or deadlock
/// stops the whole group, and every launch's report says so.
std::vector<LaunchReport>
launchTogether(const std::vector<DeviceLaunch> &launches, DeviceMemory &memory,
               const Options &options);

} // namespace mosaic::emulator

#endif // MOSAIC_EMULATOR_MACHINE_H
