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
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_RUNTIME_DRIVER_H
#define MOSAIC_RUNTIME_DRIVER_H

#include "mosaic/Runtime/Status.h"

#include <cuda.h>

#include <memory>
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

/// The library `Driver::get` opens unless MOSAIC_CUDA_DRIVER names another.
constexpr const char *kDefaultDriverLibrary = "libcuda.so.1";

class Driver {
public:
  /// The process's driver, loaded and initialized (cuInit) on first use:
  /// the library named by the environment variable MOSAIC_CUDA_DRIVER, else
  /// libcuda.so.1. Later calls return the same driver or the same error.
  static Expected<const Driver *> get();

  /// Opens `library`, looks up every entry point and calls cuInit(0).
  static Expected<std::unique_ptr<Driver>> load(const std::string &library);

  Driver(const Driver &) = delete;
  Driver &operator=(const Driver &) = delete;
  ~Driver();

  /// Success, or "<what>: CUDA_ERROR_NAME (the driver's description)".
  Status check(CUresult result, const std::string &what) const;

  /// The driver's CUDA version, e.g. 13000.
  int version() const { return driverVersion; }
  const std::string &library() const { return libraryName; }

#define MOSAIC_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  MOSAIC_DRIVER_FUNCTIONS(MOSAIC_DRIVER_MEMBER)
#undef MOSAIC_DRIVER_MEMBER

private:
  Driver() = default;

  void *handle = nullptr;
  std::string libraryName;
  int driverVersion = 0;
};

} // namespace mosaic::runtime

#endif // MOSAIC_RUNTIME_DRIVER_H
