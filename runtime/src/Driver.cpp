//===- Driver.cpp - The CUDA driver, loaded at run time -----------------===//

#include "mosaic/Runtime/Driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>

namespace mosaic::runtime {

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

  MOSAIC_RETURN_IF_ERROR(driver->check(
      driver->cuInit(0),
      "the CUDA driver " + library + " is present, but " + "cuInit failed"));
  return driver;
}

Expected<const Driver *> Driver::get() {
  static const Expected<std::unique_ptr<Driver>> loaded = [] {
    const char *library = std::getenv("MOSAIC_CUDA_DRIVER");
    return load(library && *library ? library : kDefaultDriverLibrary);
  }();
  if (!loaded.ok())
    return Error{loaded.message()};
  return static_cast<const Driver *>(loaded->get());
}

Driver::~Driver() {
  if (handle)
    dlclose(handle);
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
  return Error{message};
}

} // namespace mosaic::runtime
