//===- Driver.cpp - The CUDA driver, loaded at run time -----------------===//

#include "mosaic/Runtime/Driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>

namespace mosaic::runtime {

namespace {

std::string environment(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

} // namespace

const char *backendName(Backend backend) {
  return backend == Backend::Emulator ? "emulator" : "cuda";
}

Expected<Backend> parseBackend(const std::string &name) {
  if (name == "cuda")
    return Backend::Cuda;
  if (name == "emulator")
    return Backend::Emulator;
  return Error{"MOSAIC_GPU_BACKEND is \"" + name +
               "\"; expected \"cuda\" (a GPU, the default) or \"emulator\" "
               "(the PTX emulator)"};
}

Expected<Backend> backendFromEnvironment() {
  std::string name = environment("MOSAIC_GPU_BACKEND");
  if (name.empty())
    return Backend::Cuda;
  return parseBackend(name);
}

/// The emulator library `setEmulatorLibrary` named, if any.
static std::string &emulatorLibraryOverride() {
  static std::string library;
  return library;
}

void setEmulatorLibrary(const std::string &library) {
  emulatorLibraryOverride() = library;
}

Expected<std::string> driverLibrary(Backend backend) {
  std::string chosen = environment("MOSAIC_CUDA_DRIVER");
  if (!chosen.empty())
    return chosen;
  if (backend == Backend::Cuda)
    return std::string(kDefaultDriverLibrary);
  if (!emulatorLibraryOverride().empty())
    return emulatorLibraryOverride();
#ifdef MOSAIC_EMULATOR_DRIVER
  return std::string(MOSAIC_EMULATOR_DRIVER);
#else
  return Error{"the emulator backend needs the emulator's driver library, "
               "but this runtime was built without the emulator (only the "
               "main build builds emulator/); set MOSAIC_CUDA_DRIVER to the "
               "emulator's libcuda.so.1 (build/lib/emulator/libcuda.so.1 in "
               "the main build)"};
#endif
}

// Two steps, so that the argument's macro (cuMemAlloc -> cuMemAlloc_v2) is
// expanded before it is turned into a string.
#define MOSAIC_STRINGIFY_EXPANDED(name) #name
#define MOSAIC_STRINGIFY(name) MOSAIC_STRINGIFY_EXPANDED(name)

Expected<std::unique_ptr<Driver>> Driver::load(const std::string &library) {
  std::unique_ptr<Driver> driver(new Driver());
  driver->libraryName = library;
  driver->handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!driver->handle) {
    const char *reason = dlerror();
    return Error{"no CUDA driver: dlopen(" + library +
                 ") failed: " + (reason ? reason : "unknown reason")};
  }

  auto lookup = [&](const char *symbol, auto &member) -> Status {
    void *address = dlsym(driver->handle, symbol);
    if (!address) {
      std::string version = driver->driverVersion
                                ? std::to_string(driver->driverVersion)
                                : std::string("unknown");
      return Error{library + " (CUDA driver version " + version + ") has no `" +
                   symbol + "`; the runtime was built " +
                   "against cuda.h version " + std::to_string(CUDA_VERSION) +
                   " and needs a driver at least that new"};
    }
    member =
        reinterpret_cast<std::remove_reference_t<decltype(member)>>(address);
    return Status();
  };
  MOSAIC_RETURN_IF_ERROR(
      lookup(MOSAIC_STRINGIFY(cuDriverGetVersion), driver->cuDriverGetVersion));
  if (driver->cuDriverGetVersion(&driver->driverVersion) != CUDA_SUCCESS)
    driver->driverVersion = 0;
#define MOSAIC_LOOKUP(name)                                                    \
  MOSAIC_RETURN_IF_ERROR(lookup(MOSAIC_STRINGIFY(name), driver->name));
  MOSAIC_DRIVER_FUNCTIONS(MOSAIC_LOOKUP)
#undef MOSAIC_LOOKUP
#define MOSAIC_LOOKUP_OPTIONAL(name)                                           \
  driver->name = reinterpret_cast<decltype(driver->name)>(                     \
      dlsym(driver->handle, MOSAIC_STRINGIFY(name)));
  MOSAIC_DRIVER_MULTI_DEVICE_FUNCTIONS(MOSAIC_LOOKUP_OPTIONAL)
#undef MOSAIC_LOOKUP_OPTIONAL

  // The emulator's extensions; a GPU's driver has none of them.
  auto isEmulator = reinterpret_cast<int (*)()>(
      dlsym(driver->handle, "mosaicEmulatorIsEmulator"));
  driver->emulator = isEmulator && isEmulator() == 1;
  if (driver->emulator) {
    driver->lastReport = reinterpret_cast<const char *(*)()>(
        dlsym(driver->handle, "mosaicEmulatorLastReport"));
    driver->lastError = reinterpret_cast<const char *(*)()>(
        dlsym(driver->handle, "mosaicEmulatorLastError"));
    driver->lastLaunchCounts =
        reinterpret_cast<decltype(driver->lastLaunchCounts)>(
            dlsym(driver->handle, "mosaicEmulatorLastLaunchCounts"));
  }

  MOSAIC_RETURN_IF_ERROR(driver->check(
      driver->cuInit(0),
      "the CUDA driver " + library + " is present, but " + "cuInit failed"));
  return driver;
}

namespace {

Expected<std::unique_ptr<Driver>> loadBackend(Backend backend) {
  Expected<std::string> library = driverLibrary(backend);
  MOSAIC_RETURN_IF_ERROR(library);
  Expected<std::unique_ptr<Driver>> driver = Driver::load(*library);
  MOSAIC_RETURN_IF_ERROR(driver);
  if (backend == Backend::Emulator && !(*driver)->isEmulator())
    return Error{"the emulator backend loaded " + *library +
                 ", which is not the emulator (it has no "
                 "`mosaicEmulatorIsEmulator`); MOSAIC_CUDA_DRIVER must name "
                 "the emulator's libcuda.so.1 or be unset"};
  // Both libraries have the soname libcuda.so.1, so once the emulator is
  // loaded, dlopen("libcuda.so.1") finds it instead of the GPU's driver.
  if (backend == Backend::Cuda && *library == kDefaultDriverLibrary &&
      (*driver)->isEmulator())
    return Error{"libcuda.so.1 is the emulator, loaded earlier in this "
                 "process under the same soname; use the cuda backend before "
                 "the emulator, or name the GPU driver's path in "
                 "MOSAIC_CUDA_DRIVER"};
  return driver;
}

Expected<const Driver *>
pointer(const Expected<std::unique_ptr<Driver>> &loaded) {
  if (!loaded.ok())
    return Error{loaded.message()};
  return static_cast<const Driver *>(loaded->get());
}

} // namespace

Expected<const Driver *> Driver::get() {
  Expected<Backend> backend = backendFromEnvironment();
  MOSAIC_RETURN_IF_ERROR(backend);
  return get(*backend);
}

Expected<const Driver *> Driver::get(Backend backend) {
  if (backend == Backend::Emulator) {
    static const Expected<std::unique_ptr<Driver>> emulator =
        loadBackend(Backend::Emulator);
    return pointer(emulator);
  }
  static const Expected<std::unique_ptr<Driver>> cuda =
      loadBackend(Backend::Cuda);
  return pointer(cuda);
}

std::string Driver::emulatorReport() const {
  const char *text = lastReport ? lastReport() : nullptr;
  std::string report = text ? text : "";
  while (!report.empty() && report.back() == '\n')
    report.pop_back();
  return report;
}

std::optional<EmulatorCounts> Driver::emulatorCounts() const {
  if (!lastLaunchCounts)
    return std::nullopt;
  EmulatorCounts counts;
  lastLaunchCounts(&counts.warpInstructions, &counts.threadInstructions,
                   &counts.seconds);
  return counts;
}

Status Driver::requireMultiDevice(const std::string &what) const {
#define MOSAIC_REQUIRE(name)                                                   \
  if (!name)                                                                   \
    return Error{what + " needs `" MOSAIC_STRINGIFY(name) "`, which " +        \
                 libraryName + " does not export"};
  MOSAIC_DRIVER_MULTI_DEVICE_FUNCTIONS(MOSAIC_REQUIRE)
#undef MOSAIC_REQUIRE
  return Status();
}

Driver::~Driver() {
  if (handle)
    dlclose(handle);
}

/// The sticky errors a faulting kernel leaves, which the next call after the
/// launch returns.
static bool isKernelFault(CUresult result) {
  return result == CUDA_ERROR_LAUNCH_FAILED ||
         result == CUDA_ERROR_ILLEGAL_ADDRESS ||
         result == CUDA_ERROR_MISALIGNED_ADDRESS ||
         result == CUDA_ERROR_ILLEGAL_INSTRUCTION;
}

Status Driver::check(CUresult result, const std::string &what) const {
  if (result == CUDA_SUCCESS)
    return Status();
  const char *name = nullptr;
  const char *description = nullptr;
  if (cuGetErrorName && cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (cuGetErrorString &&
      cuGetErrorString(result, &description) != CUDA_SUCCESS)
    description = nullptr;
  std::string message =
      what + ": " +
      (name ? std::string(name) : "CUDA error " + std::to_string(result));
  if (description)
    message += std::string(" (") + description + ")";
  if (!emulator)
    return Error{message};
  // The emulator says why: a kernel fault's report (of the fault or hazard)
  // on the lines after, any other call's reason on the same line.
  if (isKernelFault(result)) {
    std::string report = emulatorReport();
    if (!report.empty())
      message += "\n" + report;
  } else if (const char *reason = lastError ? lastError() : nullptr;
             reason && *reason) {
    message += std::string(": ") + reason;
  }
  return Error{message};
}

} // namespace mosaic::runtime
