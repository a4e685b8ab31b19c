//===- Kernel.h - Loading and launching a compiled kernel -----*- C++ -*-===//
//
// `Kernel::load` loads a manifest's CUBIN (its PTX on the emulator) into a
// context and prepares the function for the manifest's launch
// (architecture, block size and shared memory checked against the device,
// the dynamic shared-memory limit raised). `Kernel::prepare` checks a set of
// buffer arguments and encodes every tensor map, giving a `Launch` that can be
// run many times. A kernel that spans devices (docs/RationaleMultiDevice.md)
// is prepared per device with `CollectiveArguments`, which also fills the
// device's collective table.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_RUNTIME_KERNEL_H
#define MOSAIC_RUNTIME_KERNEL_H

#include "mosaic/Contracts/Manifest.h"
#include "mosaic/Contracts/Status.h"
#include "mosaic/Runtime/Arguments.h"
#include "mosaic/Runtime/Device.h"

#include <cuda.h>

#include <array>
#include <memory>
#include <vector>

namespace mosaic::runtime {

/// What one device of a multi-device launch adds to its buffer arguments:
/// its logical id, the device count, and for each symmetric buffer
/// parameter (in parameter order) every device's copy as this device
/// addresses it: `peers[s][q]`. From a `SymmetricHeap` they are the heap's
/// mappings; from PyTorch's symmetric memory its `buffer_ptrs` (or
/// `signal_pad_ptrs`).
struct CollectiveArguments {
  uint32_t deviceId = 0;
  uint32_t deviceCount = 1;
  std::vector<std::vector<CUdeviceptr>> peers;
};

/// The kernel's parameter values, ready for cuLaunchKernelEx. Valid while
/// the `Kernel` that prepared it lives.
class Launch {
public:
  Launch(Launch &&) = default;
  Launch(const Launch &) = delete;
  Launch &operator=(const Launch &) = delete;

  /// Launches the kernel on `stream` (asynchronous, like any launch). The
  /// kernel's context must be current on the calling thread.
  Status run(CUstream stream) const;

private:
  friend class Kernel;
  Launch() = default;

  const Driver *cuda = nullptr;
  CUfunction function = nullptr;
  const Manifest *manifest = nullptr;
  std::vector<CUdeviceptr> pointers;   // One per buffer parameter.
  std::vector<CUtensorMap> tensorMaps; // 128-byte aligned, as TMA needs.
  std::vector<void *> values;          // One per kernel parameter.
  /// The collective table in the device's memory, and the parameter value
  /// that points to it (on the heap: `values` points at it).
  struct Table {
    DeviceBuffer buffer;
    CUdeviceptr pointer;
  };
  std::unique_ptr<Table> table;
};

class Kernel {
public:
  /// Loads `manifest.cubinPath` (a CUBIN, or PTX text the driver compiles)
  /// into `context`, which must outlive the kernel. On the emulator, which
  /// runs PTX text only, loads `manifest.ptxPath` instead (or the `cubin`
  /// when that is PTX text and there is no `ptx`).
  static Expected<Kernel> load(const Context &context, Manifest manifest);

  Kernel(Kernel &&other) noexcept;
  Kernel &operator=(Kernel &&) = delete;
  Kernel(const Kernel &) = delete;
  ~Kernel();

  const Manifest &manifest() const { return *description; }

  /// Checks `arguments` (one per buffer parameter: count, element type,
  /// shape, null or misaligned pointers, device memory of this context with
  /// room for the whole buffer) and encodes the tensor maps over them. A
  /// kernel with a collective table is refused: it needs the overload below.
  Expected<Launch> prepare(const std::vector<BufferArgument> &arguments) const;

  /// Prepares one device's instance of a kernel that spans devices: checks
  /// `arguments` as above (but a symmetric buffer's pointer must be
  /// `collective.peers[s][deviceId]`, and is not asked of the driver: it is
  /// virtual-memory mapped or PyTorch's), encodes the tensor maps, one per
  /// device for each peer map (over `peers[s][q]`), and writes the
  /// collective table into this device's memory. A kernel without a
  /// collective table takes an empty `peers` and ignores the rest.
  Expected<Launch> prepare(const std::vector<BufferArgument> &arguments,
                           const CollectiveArguments &collective) const;

private:
  Kernel() = default;

  Expected<Launch> prepareWith(const std::vector<BufferArgument> &arguments,
                               const CollectiveArguments *collective) const;

  const Context *context = nullptr;
  // On the heap, so that launches keep pointing at it when the kernel moves.
  std::unique_ptr<Manifest> description;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
};

} // namespace mosaic::runtime

#endif // MOSAIC_RUNTIME_KERNEL_H
