//===- Symmetric.h - Symmetric memory and launches on devices -*- C++ -*-===//
//
// A kernel that spans devices runs once on each of D devices and reaches
// its peers' copies of its *symmetric* buffers (docs/RationaleMultiDevice.md).
//
// - `DeviceGroup`: the D devices, as this process sees them. In one
//   process (`open`) it holds every device's context and a stream each; in
//   the multi-process form (`join`, one process per device as torchrun
//   runs them) it holds this process's device and a `Rendezvous` with the
//   others.
// - `SymmetricHeap`: memory on every device from the CUDA virtual-memory
//   API. Each segment is one physical allocation per device
//   (cuMemCreate, exportable as a POSIX file descriptor), every one mapped
//   into this process (cuMemAddressReserve, cuMemMap; in the multi-process
//   form after exchanging the descriptors: cuMemExportToShareableHandle,
//   cuMemImportFromShareableHandle) and made accessible to the group's
//   devices of this process (cuMemSetAccess). A `SymmetricBuffer` is the
//   same offset in every device's allocation.
// - `GroupKernel`: a kernel loaded on every device of the group; its
//   `prepare` fills each device's collective table and `GroupLaunch::run`
//   launches on every device before waiting for any.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_RUNTIME_SYMMETRIC_H
#define MOSAIC_RUNTIME_SYMMETRIC_H

#include "mosaic/Contracts/Manifest.h"
#include "mosaic/Contracts/Status.h"
#include "mosaic/Runtime/Arguments.h"
#include "mosaic/Runtime/Device.h"
#include "mosaic/Runtime/Driver.h"
#include "mosaic/Runtime/Kernel.h"
#include "mosaic/Runtime/Rendezvous.h"

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <variant>
#include <vector>

namespace mosaic::runtime {

class DeviceGroup {
public:
  /// Devices 0 to count - 1 of this process, logical id = ordinal. Checks
  /// that every pair can access each other (cuDeviceCanAccessPeer), naming
  /// the first pair that cannot.
  static Expected<std::unique_ptr<DeviceGroup>> open(const Driver &driver,
                                                     unsigned count);
  /// This process's device of a group of one process per device: opens
  /// device `options.ordinal`, meets the other ranks at
  /// `options.rendezvous`, and checks that this device can access every
  /// other rank's.
  static Expected<std::unique_ptr<DeviceGroup>>
  join(const Driver &driver, const ProcessGroupOptions &options);

  DeviceGroup(const DeviceGroup &) = delete;
  DeviceGroup &operator=(const DeviceGroup &) = delete;
  ~DeviceGroup();

  const Driver &driver() const { return *cuda; }
  /// D, the devices of the launch (all processes together).
  unsigned deviceCount() const { return count; }
  /// The logical ids this process runs, ascending: all of them in one
  /// process, its rank in the multi-process form.
  const std::vector<unsigned> &localDevices() const { return local; }
  bool isLocal(unsigned device) const;
  /// The context and stream of a local device.
  const Context &context(unsigned device) const;
  CUstream stream(unsigned device) const;
  /// The CUDA ordinal of each logical device (other processes' included).
  const std::vector<int> &ordinals() const { return deviceOrdinals; }
  /// The other processes; null in one process.
  Rendezvous *rendezvous() const { return meeting.get(); }

  /// "device 2 (NVIDIA H100 80GB HBM3)" for a local device, "device 2" for
  /// another process's.
  std::string describe(unsigned device) const;

  /// Waits for every local device's stream; errors name the device.
  Status synchronize() const;

private:
  DeviceGroup() = default;
  Status createStreams();
  Status checkPeerAccess(unsigned from, unsigned to) const;

  const Driver *cuda = nullptr;
  unsigned count = 0;
  std::vector<unsigned> local;
  std::vector<int> deviceOrdinals;
  // Per logical device; null for another process's.
  std::vector<std::unique_ptr<Context>> contexts;
  std::vector<CUstream> streams;
  std::unique_ptr<Rendezvous> meeting;
};

class SymmetricHeap;

/// A buffer at the same offset of every device's allocation of a
/// `SymmetricHeap`; valid while the heap lives.
class SymmetricBuffer {
public:
  /// Device `device`'s copy, as this process addresses it.
  CUdeviceptr pointer(unsigned device) const { return pointers.at(device); }
  const std::vector<CUdeviceptr> &allPointers() const { return pointers; }
  size_t size() const { return bytes; }
  /// Copies `size()` bytes from or to the host; `device` must be local.
  Status upload(unsigned device, const void *host) const;
  Status download(unsigned device, void *host) const;
  Status fill(unsigned device, uint8_t value) const;

private:
  friend class SymmetricHeap;
  const DeviceGroup *group = nullptr;
  std::vector<CUdeviceptr> pointers; // One per logical device.
  size_t bytes = 0;
};

class SymmetricHeap {
public:
  /// A heap on every device of `group`, which must outlive it. Segments
  /// are made as allocations need them, each at least `segmentBytes`
  /// rounded up to the devices' recommended granularity.
  static Expected<std::unique_ptr<SymmetricHeap>>
  create(const DeviceGroup &group, size_t segmentBytes = size_t(64) << 20);

  SymmetricHeap(const SymmetricHeap &) = delete;
  SymmetricHeap &operator=(const SymmetricHeap &) = delete;
  /// Unmaps, releases and frees every segment.
  ~SymmetricHeap();

  /// `bytes` at the same offset on every device, `alignment`-aligned (a
  /// power of two, at most the granularity). In the multi-process form
  /// every process must allocate the same sizes in the same order (an
  /// error names the ranks that disagree). Memory returns when the heap
  /// dies.
  Expected<SymmetricBuffer> allocate(size_t bytes, size_t alignment = 256);

  /// The granularity segments are rounded to.
  size_t granularity() const { return grain; }

private:
  struct Segment;
  SymmetricHeap() = default;
  Expected<std::unique_ptr<Segment>> createSegment(size_t bytes);

  const DeviceGroup *group = nullptr;
  size_t grain = 0;
  size_t segmentBytes = 0;
  std::vector<std::unique_ptr<Segment>> segments;
  size_t used = 0; // In the last segment.
  unsigned allocations = 0;
};

/// A symmetric buffer given for a kernel parameter, with what the caller
/// says it holds.
struct SymmetricArgument {
  const SymmetricBuffer *buffer = nullptr;
  ElementType elementType = ElementType::F32;
  std::vector<int64_t> shape;
};

/// One argument of one device: device memory of that device, or a
/// symmetric buffer (which a symmetric parameter requires).
using GroupArgument = std::variant<BufferArgument, SymmetricArgument>;

/// A kernel launched on every local device of a group, all before any is
/// waited on.
class GroupLaunch {
public:
  GroupLaunch(GroupLaunch &&) = default;
  GroupLaunch(const GroupLaunch &) = delete;
  GroupLaunch &operator=(const GroupLaunch &) = delete;

  /// Launches each local device's instance on its stream, then waits for
  /// every stream; an error names the device (the first that failed).
  Status run() const;

  /// Launches each local device's instance on its stream and returns
  /// without waiting, so that the caller can record events around the
  /// launches (mosaic-run times them so). When a launch fails, it waits
  /// for those already launched and names the device that failed.
  Status start() const;

private:
  friend class GroupKernel;
  GroupLaunch() = default;
  const DeviceGroup *group = nullptr;
  std::vector<Launch> launches; // One per local device.
};

class GroupKernel {
public:
  /// Loads `manifest`'s kernel on every local device of `group`, which
  /// must outlive it.
  static Expected<GroupKernel> load(const DeviceGroup &group,
                                    const Manifest &manifest);

  GroupKernel(GroupKernel &&) = default;
  GroupKernel(const GroupKernel &) = delete;
  GroupKernel &operator=(const GroupKernel &) = delete;

  const Manifest &manifest() const { return kernels.front().manifest(); }

  /// `arguments[i]` are the arguments of local device i (one per buffer
  /// parameter). A symmetric parameter takes a `SymmetricArgument` on
  /// every device, the same buffer (each device passes its own copy, and
  /// the collective table points at the others).
  Expected<GroupLaunch>
  prepare(const std::vector<std::vector<GroupArgument>> &arguments) const;

private:
  GroupKernel() = default;
  const DeviceGroup *group = nullptr;
  std::vector<Kernel> kernels; // One per local device.
};

} // namespace mosaic::runtime

#endif // MOSAIC_RUNTIME_SYMMETRIC_H
