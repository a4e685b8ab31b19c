//===- Kernel.h - Loading and launching a compiled kernel -----*- C++ -*-===//
//
// `Kernel::load` loads a manifest's CUBIN (its PTX on the emulator) into a
// context and prepares the function for the manifest's launch
// (architecture, block size and shared memory checked against the device,
// the dynamic shared-memory limit raised). `Kernel::prepare` checks a set of
// buffer arguments and encodes every tensor map, giving a `Launch` that can be
// run many times.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_RUNTIME_KERNEL_H
#define MOSAIC_RUNTIME_KERNEL_H

#include "mosaic/Runtime/Arguments.h"
#include "mosaic/Runtime/Device.h"
#include "mosaic/Contracts/Manifest.h"
#include "mosaic/Contracts/Status.h"

#include <cuda.h>

#include <array>
#include <memory>
#include <vector>

namespace mosaic::runtime {

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
  /// room for the whole buffer) and encodes the tensor maps over them.
  Expected<Launch> prepare(const std::vector<BufferArgument> &arguments) const;

private:
  Kernel() = default;

  const Context *context = nullptr;
  // On the heap, so that launches keep pointing at it when the kernel moves.
  std::unique_ptr<Manifest> description;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
};

} // namespace mosaic::runtime

#endif // MOSAIC_RUNTIME_KERNEL_H
