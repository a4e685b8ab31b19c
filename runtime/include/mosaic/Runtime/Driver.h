//===- Driver.h - The CUDA driver, loaded at run time ---------*- C++ -*-===//
//
// The runtime never links libcuda: it opens libcuda.so.1 with dlopen when
// first asked, so that it builds, and its tests run, on machines without a
// GPU, and a missing driver is an error message instead of a loader failure.
//
// cuda.h renames many entry points to versioned symbols (`cuMemAlloc` is
// `cuMemAlloc_v2`); the members below are declared through the same macros,
// so each member has the type of the header's declaration and is looked up
// under the symbol name that declaration refers to.
//
// The same API is exported by the PTX emulator (emulator/), which the
// runtime opens instead when MOSAIC_GPU_BACKEND=emulator or when asked for
// `Backend::Emulator`; `isEmulator()` tells the two apart.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_RUNTIME_DRIVER_H
#define MOSAIC_RUNTIME_DRIVER_H

#include "mosaic/Contracts/Status.h"

#include <cuda.h>

#include <memory>
#include <optional>
#include <string>

namespace mosaic::runtime {

/// Every driver entry point the runtime calls.
#define MOSAIC_DRIVER_FUNCTIONS(X)                                             \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease)                                                 \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncGetAttribute)                                                        \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernelEx)                                                          \
  X(cuTensorMapEncodeTiled)                                                    \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemsetD8)                                                                \
  X(cuMemsetD8Async)                                                           \
  X(cuMemGetAddressRange)                                                      \
  X(cuPointerGetAttribute)                                                     \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)

/// The entry points of kernels that span devices (runtime/include/mosaic/
/// Runtime/Symmetric.h): peer queries, the virtual-memory API and its
/// shareable handles. They are looked up without failing the load: a driver
/// without them (an emulator built before it had them) still runs
/// single-device kernels, and `Driver::requireMultiDevice` names the first
/// one missing when a multi-device feature is used.
#define MOSAIC_DRIVER_MULTI_DEVICE_FUNCTIONS(X)                                \
  X(cuDeviceCanAccessPeer)                                                     \
  X(cuMemGetAllocationGranularity)                                             \
  X(cuMemCreate)                                                               \
  X(cuMemRelease)                                                              \
  X(cuMemAddressReserve)                                                       \
  X(cuMemAddressFree)                                                          \
  X(cuMemMap)                                                                  \
  X(cuMemUnmap)                                                                \
  X(cuMemSetAccess)                                                            \
  X(cuMemExportToShareableHandle)                                              \
  X(cuMemImportFromShareableHandle)

/// The library the CUDA backend opens unless MOSAIC_CUDA_DRIVER names
/// another.
constexpr const char *kDefaultDriverLibrary = "libcuda.so.1";

/// What runs the kernels: the CUDA driver of a GPU, or the PTX emulator
/// (emulator/), a library that exports the same driver API and runs PTX
/// text on the host.
enum class Backend { Cuda, Emulator };

/// "cuda" or "emulator", as MOSAIC_GPU_BACKEND spells them.
const char *backendName(Backend backend);

/// The backend a MOSAIC_GPU_BACKEND value names: `cuda` or `emulator`; an
/// error naming the variable and the accepted values otherwise.
Expected<Backend> parseBackend(const std::string &name);

/// The backend MOSAIC_GPU_BACKEND selects: CUDA when it is unset or empty.
Expected<Backend> backendFromEnvironment();

/// The library `backend` opens. CUDA: MOSAIC_CUDA_DRIVER, else
/// libcuda.so.1. The emulator: MOSAIC_CUDA_DRIVER, else the emulator's
/// libcuda.so.1 of the build the runtime is part of; an error when neither
/// exists (the standalone runtime build does not build the emulator).
/// `setEmulatorLibrary` replaces the build's emulator.
Expected<std::string> driverLibrary(Backend backend);

/// Makes the emulator backend open `library` when MOSAIC_CUDA_DRIVER is
/// unset: an installed Python package carries the emulator inside itself,
/// while the path compiled into the runtime names the (temporary) build.
/// Takes effect for a driver not loaded yet.
void setEmulatorLibrary(const std::string &library);

/// What the emulator counted in its last launch.
struct EmulatorCounts {
  unsigned long long warpInstructions = 0;
  unsigned long long threadInstructions = 0;
  double seconds = 0; // Wall time of the emulation.
};

class Driver {
public:
  /// The driver of the backend MOSAIC_GPU_BACKEND selects (`get(Backend)`).
  static Expected<const Driver *> get();

  /// The process's driver for `backend`, loaded and initialized (cuInit) on
  /// first use from `driverLibrary(backend)`; each backend has its own.
  /// Later calls return the same driver or the same error. The emulator
  /// backend fails when its library is not the emulator.
  static Expected<const Driver *> get(Backend backend);

  /// Opens `library`, looks up every entry point (and the emulator's
  /// extensions, where it has them) and calls cuInit(0).
  static Expected<std::unique_ptr<Driver>> load(const std::string &library);

  Driver(const Driver &) = delete;
  Driver &operator=(const Driver &) = delete;
  ~Driver();

  /// Success, or "<what>: CUDA_ERROR_NAME (the driver's description)". The
  /// emulator adds why: for a kernel's fault (CUDA_ERROR_LAUNCH_FAILED,
  /// _ILLEGAL_ADDRESS, _MISALIGNED_ADDRESS, _ILLEGAL_INSTRUCTION) its report
  /// of the fault or hazard on the lines after, for any other call its
  /// reason after a colon.
  Status check(CUresult result, const std::string &what) const;

  /// The driver's CUDA version, e.g. 13000.
  int version() const { return driverVersion; }
  const std::string &library() const { return libraryName; }

  /// Whether the library is the PTX emulator, which loads PTX text only.
  bool isEmulator() const { return emulator; }
  /// The emulator's report of its last failed launch (the fault or hazard,
  /// with program locations); empty on a GPU or when there is none.
  std::string emulatorReport() const;
  /// What the emulator counted in its last launch; nothing on a GPU.
  std::optional<EmulatorCounts> emulatorCounts() const;

  /// Success when the driver exports every multi-device entry point
  /// (MOSAIC_DRIVER_MULTI_DEVICE_FUNCTIONS); otherwise an error naming the
  /// first one missing and `what` needed it for.
  Status requireMultiDevice(const std::string &what) const;

#define MOSAIC_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  MOSAIC_DRIVER_FUNCTIONS(MOSAIC_DRIVER_MEMBER)
  MOSAIC_DRIVER_MULTI_DEVICE_FUNCTIONS(MOSAIC_DRIVER_MEMBER)
#undef MOSAIC_DRIVER_MEMBER

private:
  Driver() = default;

  void *handle = nullptr;
  std::string libraryName;
  int driverVersion = 0;
  // The emulator's extensions (emulator/include/mosaic/Emulator/
  // Extensions.h), looked up when present.
  bool emulator = false;
  const char *(*lastReport)() = nullptr;
  const char *(*lastError)() = nullptr;
  void (*lastLaunchCounts)(unsigned long long *, unsigned long long *,
                           double *) = nullptr;
};

} // namespace mosaic::runtime

#endif // MOSAIC_RUNTIME_DRIVER_H
