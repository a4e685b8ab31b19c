//===- DriverTest.cpp - Loading the CUDA driver -------------------------===//
//
// These run everywhere: a driver library that cannot be opened, or a
// library that is not a driver, must give a clear message, not a crash.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Runtime/Driver.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <optional>

using namespace mosaic;
using namespace mosaic::runtime;

namespace {

bool startsWith(const std::string &text, const std::string &prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

TEST(Driver, MissingLibraryIsAClearError) {
  Expected<std::unique_ptr<Driver>> driver =
      Driver::load("libmosaic-no-such-driver.so.1");
  ASSERT_FALSE(driver.ok());
  EXPECT_TRUE(startsWith(
      driver.message(), "no CUDA driver: dlopen(libmosaic-no-such-driver.so.1) "
                        "failed: libmosaic-no-such-driver.so.1: cannot open "
                        "shared object file"))
      << driver.message();
}

TEST(Driver, LibraryWithoutTheDriverApiIsAClearError) {
  Expected<std::unique_ptr<Driver>> driver = Driver::load("libc.so.6");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.message(),
            "libc.so.6 (CUDA driver version unknown) has no "
            "`cuDriverGetVersion`; the runtime was built against cuda.h "
            "version " +
                std::to_string(CUDA_VERSION) +
                " and needs a driver at least that new");
}

// The toolkit's stub libcuda exports every entry point of the driver API
// and fails cuInit: every symbol the runtime looks up must resolve in it.
TEST(Driver, StubDriverHasEveryEntryPoint) {
#ifndef MOSAIC_CUDA_STUB_DRIVER
  GTEST_SKIP() << "no stub libcuda.so beside cuda.h";
#else
  Expected<std::unique_ptr<Driver>> driver =
      Driver::load(MOSAIC_CUDA_STUB_DRIVER);
  ASSERT_FALSE(driver.ok());
  EXPECT_TRUE(
      startsWith(driver.message(), std::string("the CUDA driver ") +
                                       MOSAIC_CUDA_STUB_DRIVER +
                                       " is present, but cuInit failed: "))
      << driver.message();
#endif
}

// The multi-device entry points are looked up without failing the load, so
// a misspelled one would only show on a GPU: the stub must export each.
TEST(Driver, StubDriverHasEveryMultiDeviceEntryPoint) {
#ifndef MOSAIC_CUDA_STUB_DRIVER
  GTEST_SKIP() << "no stub libcuda.so beside cuda.h";
#else
  void *stub = dlopen(MOSAIC_CUDA_STUB_DRIVER, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(stub, nullptr) << dlerror();
#define MOSAIC_NAME_EXPANDED(name) #name
#define MOSAIC_NAME(name) MOSAIC_NAME_EXPANDED(name)
#define MOSAIC_EXPECT_SYMBOL(name)                                             \
  EXPECT_NE(dlsym(stub, MOSAIC_NAME(name)), nullptr) << MOSAIC_NAME(name);
  MOSAIC_DRIVER_MULTI_DEVICE_FUNCTIONS(MOSAIC_EXPECT_SYMBOL)
#undef MOSAIC_EXPECT_SYMBOL
#undef MOSAIC_NAME
#undef MOSAIC_NAME_EXPANDED
  dlclose(stub);
#endif
}

// The CUDA backend's driver is libcuda.so.1 unless MOSAIC_CUDA_DRIVER names
// another. On a machine without one the error says so; with one, it loads.
TEST(Driver, DefaultDriverLoadsOrSaysWhyNot) {
  const char *override = std::getenv("MOSAIC_CUDA_DRIVER");
  std::string library =
      override && *override ? override : kDefaultDriverLibrary;
  Expected<const Driver *> driver = Driver::get(Backend::Cuda);
  if (driver.ok()) {
    EXPECT_EQ((*driver)->library(), library);
    EXPECT_GT((*driver)->version(), 0);
    return;
  }
  EXPECT_TRUE(
      startsWith(driver.message(),
                 "no CUDA driver: dlopen(" + library + ") failed: ") ||
      startsWith(driver.message(), "the CUDA driver " + library +
                                       " is present, but cuInit failed"))
      << driver.message();
  // A second call gives the same answer.
  EXPECT_EQ(Driver::get(Backend::Cuda).message(), driver.message());
}

/// Sets an environment variable for the scope, restoring it after.
class ScopedEnvironment {
public:
  ScopedEnvironment(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      previous = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnvironment() {
    if (previous)
      setenv(name, previous->c_str(), 1);
    else
      unsetenv(name);
  }

private:
  const char *name;
  std::optional<std::string> previous;
};

TEST(Backend, NamesAndErrors) {
  EXPECT_EQ(*parseBackend("cuda"), Backend::Cuda);
  EXPECT_EQ(*parseBackend("emulator"), Backend::Emulator);
  EXPECT_STREQ(backendName(Backend::Cuda), "cuda");
  EXPECT_STREQ(backendName(Backend::Emulator), "emulator");
  std::string expected = "MOSAIC_GPU_BACKEND is \"gpu\"; expected \"cuda\" "
                         "(a GPU, the default) or \"emulator\" (the PTX "
                         "emulator)";
  EXPECT_EQ(parseBackend("gpu").message(), expected);

  {
    ScopedEnvironment unset("MOSAIC_GPU_BACKEND", nullptr);
    EXPECT_EQ(*backendFromEnvironment(), Backend::Cuda);
  }
  {
    ScopedEnvironment empty("MOSAIC_GPU_BACKEND", "");
    EXPECT_EQ(*backendFromEnvironment(), Backend::Cuda);
  }
  {
    ScopedEnvironment emulator("MOSAIC_GPU_BACKEND", "emulator");
    EXPECT_EQ(*backendFromEnvironment(), Backend::Emulator);
  }
  ScopedEnvironment bad("MOSAIC_GPU_BACKEND", "gpu");
  EXPECT_EQ(backendFromEnvironment().message(), expected);
  // Driver::get() reads the variable, and says what is wrong with it.
  EXPECT_EQ(Driver::get().message(), expected);
}

TEST(Backend, DriverLibraries) {
  {
    ScopedEnvironment chosen("MOSAIC_CUDA_DRIVER", "/opt/mine/libcuda.so.1");
    EXPECT_EQ(*driverLibrary(Backend::Cuda), "/opt/mine/libcuda.so.1");
    EXPECT_EQ(*driverLibrary(Backend::Emulator), "/opt/mine/libcuda.so.1");
  }
  ScopedEnvironment unset("MOSAIC_CUDA_DRIVER", nullptr);
  EXPECT_EQ(*driverLibrary(Backend::Cuda), kDefaultDriverLibrary);
  Expected<std::string> emulator = driverLibrary(Backend::Emulator);
#ifdef MOSAIC_EMULATOR_DRIVER
  // The main build compiles in the emulator it builds.
  ASSERT_TRUE(emulator.ok()) << emulator.message();
  EXPECT_EQ(*emulator, MOSAIC_EMULATOR_DRIVER);
#else
  EXPECT_EQ(emulator.message(),
            "the emulator backend needs the emulator's driver library, but "
            "this runtime was built without the emulator (only the main "
            "build builds emulator/); set MOSAIC_CUDA_DRIVER to the "
            "emulator's libcuda.so.1 (build/lib/emulator/libcuda.so.1 in the "
            "main build)");
#endif
}

} // namespace
