//===- DriverTest.cpp - Loading the CUDA driver -------------------------===//
//
// These run everywhere: a driver library that cannot be opened, or a
// library that is not a driver, must give a clear message, not a crash.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Runtime/Driver.h"

#include <gtest/gtest.h>

#include <cstdlib>

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

// The process's driver is libcuda.so.1 unless MOSAIC_CUDA_DRIVER names
// another. On a machine without one the error says so; with one, it loads.
TEST(Driver, DefaultDriverLoadsOrSaysWhyNot) {
  const char *override = std::getenv("MOSAIC_CUDA_DRIVER");
  std::string library =
      override && *override ? override : kDefaultDriverLibrary;
  Expected<const Driver *> driver = Driver::get();
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
  EXPECT_EQ(Driver::get().message(), driver.message());
}

} // namespace
