//===- DriverLibrary.h - The emulator's libcuda.so.1, opened by tests -*- C++
//-*-===//
//
// The driver library the build made, opened with dlopen as the runtime
// does, and its entry points by the names a program built against cuda.h
// looks up. FreshDriver opens a private copy: a driver nobody in the test
// process has initialized, for tests that set the environment cuInit reads
// (MOSAIC_EMULATOR_DEVICES, ...). Needs MOSAIC_EMULATOR_DRIVER.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_TEST_DRIVERLIBRARY_H
#define MOSAIC_EMULATOR_TEST_DRIVERLIBRARY_H

#include "mosaic/Emulator/Extensions.h"

#include <gtest/gtest.h>

#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

namespace mosaic::emulator::test {

// Two steps, so that the argument's macro (cuMemAlloc -> cuMemAlloc_v2) is
// expanded before it is turned into a string: the symbol a program built
// against cuda.h looks up.
#define STRINGIFY_EXPANDED(name) #name
#define STRINGIFY(name) STRINGIFY_EXPANDED(name)

/// The runtime's MOSAIC_DRIVER_FUNCTIONS (runtime/include/mosaic/Runtime/
/// Driver.h), repeated here because the emulator builds on its own.
#define RUNTIME_FUNCTIONS(X)                                                   \
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

/// Further entry points programs written against the driver API use.
#define OTHER_FUNCTIONS(X)                                                     \
  X(cuDeviceComputeCapability)                                                 \
  X(cuDeviceTotalMem)                                                          \
  X(cuDevicePrimaryCtxReset)                                                   \
  X(cuCtxCreate)                                                               \
  X(cuCtxDestroy)                                                              \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxGetDevice)                                                            \
  X(cuCtxPushCurrent)                                                          \
  X(cuCtxPopCurrent)                                                           \
  X(cuModuleLoad)                                                              \
  X(cuModuleLoadData)                                                          \
  X(cuModuleGetGlobal)                                                         \
  X(cuFuncGetName)                                                             \
  X(cuLaunchKernel)                                                            \
  X(cuMemcpy)                                                                  \
  X(cuMemcpyDtoD)                                                              \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemcpyDtoHAsync)                                                         \
  X(cuMemsetD32)                                                               \
  X(cuMemsetD32Async)                                                          \
  X(cuMemAllocHost)                                                            \
  X(cuMemFreeHost)                                                             \
  X(cuStreamQuery)                                                             \
  X(cuEventQuery)                                                              \
  X(cuGetProcAddress)

/// The entry points of devices, peers and virtual memory.
#define MULTI_DEVICE_FUNCTIONS(X)                                              \
  X(cuDeviceGetUuid)                                                           \
  X(cuDeviceCanAccessPeer)                                                     \
  X(cuDeviceGetP2PAttribute)                                                   \
  X(cuCtxEnablePeerAccess)                                                     \
  X(cuCtxDisablePeerAccess)                                                    \
  X(cuPointerGetAttributes)                                                    \
  X(cuMemcpyPeer)                                                              \
  X(cuMemcpyPeerAsync)                                                         \
  X(cuMemGetAllocationGranularity)                                             \
  X(cuMemCreate)                                                               \
  X(cuMemRelease)                                                              \
  X(cuMemAddressReserve)                                                       \
  X(cuMemAddressFree)                                                          \
  X(cuMemMap)                                                                  \
  X(cuMemUnmap)                                                                \
  X(cuMemSetAccess)                                                            \
  X(cuMemGetAccess)                                                            \
  X(cuMemExportToShareableHandle)                                              \
  X(cuMemImportFromShareableHandle)                                            \
  X(cuMemGetAllocationPropertiesFromHandle)                                    \
  X(cuMemRetainAllocationHandle)                                               \
  X(cuStreamWaitEvent)                                                         \
  X(cuDevicePrimaryCtxGetState)

/// Unversioned symbols the real driver exports beside the versioned ones.
const char *const kLegacySymbols[] = {
    "cuMemAlloc",
    "cuMemFree",
    "cuMemcpyHtoD",
    "cuMemcpyDtoH",
    "cuMemcpyDtoD",
    "cuMemcpyHtoDAsync",
    "cuMemcpyDtoHAsync",
    "cuMemsetD8",
    "cuMemsetD32",
    "cuMemGetAddressRange",
    "cuMemGetInfo",
    "cuMemAllocHost",
    "cuModuleGetGlobal",
    "cuCtxCreate",
    "cuCtxDestroy",
    "cuCtxPushCurrent",
    "cuCtxPopCurrent",
    "cuDeviceTotalMem",
    "cuStreamDestroy",
    "cuEventDestroy",
    "cuEventElapsedTime",
    "cuGetProcAddress",
    "cuDevicePrimaryCtxRelease",
    "cuDevicePrimaryCtxReset",
};

// cuDeviceComputeCapability is deprecated in cuda.h, and still exported.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/// The entry points of one loaded copy of the driver library.
struct Api {
  void *handle = nullptr;
#define API_MEMBER(name) decltype(&::name) name = nullptr;
  RUNTIME_FUNCTIONS(API_MEMBER)
  OTHER_FUNCTIONS(API_MEMBER)
  MULTI_DEVICE_FUNCTIONS(API_MEMBER)
#undef API_MEMBER
  mosaicEmulatorIsEmulatorFn isEmulator = nullptr;
  mosaicEmulatorLastReportFn lastReport = nullptr;
  mosaicEmulatorLastErrorFn lastError = nullptr;
  mosaicEmulatorLastLaunchCountsFn lastLaunchCounts = nullptr;

  explicit Api(const std::string &path) {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      return;
#define API_LOOKUP(name)                                                       \
  name = reinterpret_cast<decltype(name)>(dlsym(handle, STRINGIFY(name)));
    RUNTIME_FUNCTIONS(API_LOOKUP)
    OTHER_FUNCTIONS(API_LOOKUP)
    MULTI_DEVICE_FUNCTIONS(API_LOOKUP)
#undef API_LOOKUP
    isEmulator = reinterpret_cast<mosaicEmulatorIsEmulatorFn>(
        dlsym(handle, "mosaicEmulatorIsEmulator"));
    lastReport = reinterpret_cast<mosaicEmulatorLastReportFn>(
        dlsym(handle, "mosaicEmulatorLastReport"));
    lastError = reinterpret_cast<mosaicEmulatorLastErrorFn>(
        dlsym(handle, "mosaicEmulatorLastError"));
    lastLaunchCounts = reinterpret_cast<mosaicEmulatorLastLaunchCountsFn>(
        dlsym(handle, "mosaicEmulatorLastLaunchCounts"));
  }

  bool complete() const {
    bool all = handle != nullptr;
#define API_CHECK(name) all = all && name != nullptr;
    RUNTIME_FUNCTIONS(API_CHECK)
    OTHER_FUNCTIONS(API_CHECK)
    MULTI_DEVICE_FUNCTIONS(API_CHECK)
#undef API_CHECK
    return all && isEmulator && lastReport && lastError && lastLaunchCounts;
  }
};

#pragma GCC diagnostic pop

/// The driver library the build made, opened once for the whole process.
inline const Api &driver() {
  static const Api *api = new Api(MOSAIC_EMULATOR_DRIVER);
  return *api;
}

/// A private copy of the driver library: a driver that nobody in this
/// process has initialized yet.
class FreshDriver {
public:
  FreshDriver() {
    static int copies = 0;
    path = std::filesystem::path(testing::TempDir()) /
           ("libcuda-fresh-" + std::to_string(getpid()) + "-" +
            std::to_string(copies++) + ".so");
    std::filesystem::copy_file(
        MOSAIC_EMULATOR_DRIVER, path,
        std::filesystem::copy_options::overwrite_existing);
    api = std::make_unique<Api>(path.string());
  }
  ~FreshDriver() { std::filesystem::remove(path); }
  const Api &operator*() const { return *api; }
  const Api *operator->() const { return api.get(); }

private:
  std::filesystem::path path;
  std::unique_ptr<Api> api;
};

} // namespace mosaic::emulator::test

#endif // MOSAIC_EMULATOR_TEST_DRIVERLIBRARY_H
