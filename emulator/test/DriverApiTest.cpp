//===- DriverApiTest.cpp - The emulator's libcuda.so.1 -------------------===//
//
// Opens the built driver library with dlopen, as the runtime does, and
// drives it through the CUDA driver API: exported symbols, devices,
// contexts, memory, modules, launches, sticky faults, streams and events.
// Skipped when the build has no driver library (no cuda.h).
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#ifndef MOSAIC_EMULATOR_DRIVER

TEST(DriverApi, NeedsTheDriverLibrary) {
  GTEST_SKIP() << "the emulator's driver library was not built (no cuda.h)";
}

#else

#include "DriverLibrary.h"
#include "mosaic/Emulator/TensorMap.h"

#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace mosaic::emulator::test;

/// The test kernel of the emulator's brief: thread t of each block stores t
/// at p + 4 t.
const char *const kStoreTid = R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd1, %rd1, %rd2;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

class DriverApi : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(api.handle)
        << "dlopen(" << MOSAIC_EMULATOR_DRIVER << ") failed: " << dlerror();
    ASSERT_TRUE(api.complete()) << "an entry point is missing; see "
                                   "ExportsEveryEntryPointTheRuntimeCalls";
    ASSERT_EQ(api.cuInit(0), CUDA_SUCCESS) << api.lastError();
    ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&primary, 0), CUDA_SUCCESS);
    ASSERT_EQ(api.cuCtxSetCurrent(primary), CUDA_SUCCESS);
  }

  void TearDown() override {
    if (!primary)
      return;
    EXPECT_EQ(api.cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
    EXPECT_EQ(api.cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  }

  std::string lastError() const { return api.lastError(); }

  /// `kStoreTid`, loaded; its function `k`.
  CUfunction loadStoreTid() {
    CUmodule module = nullptr;
    EXPECT_EQ(api.cuModuleLoadDataEx(&module, kStoreTid, 0, nullptr, nullptr),
              CUDA_SUCCESS)
        << lastError();
    CUfunction function = nullptr;
    EXPECT_EQ(api.cuModuleGetFunction(&function, module, "k"), CUDA_SUCCESS)
        << lastError();
    return function;
  }

  CUresult launch(CUfunction function, CUdeviceptr out, unsigned threads,
                  unsigned blocks = 1, unsigned sharedBytes = 0) {
    void *params[] = {&out};
    return api.cuLaunchKernel(function, blocks, 1, 1, threads, 1, 1,
                              sharedBytes, nullptr, params, nullptr);
  }

  CUresult launchInCluster(CUfunction function, CUdeviceptr out, unsigned grid,
                           unsigned cluster) {
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attribute.value.clusterDim.x = cluster;
    attribute.value.clusterDim.y = 1;
    attribute.value.clusterDim.z = 1;
    CUlaunchConfig config{};
    config.gridDimX = grid;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = 32;
    config.blockDimY = config.blockDimZ = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    void *params[] = {&out};
    return api.cuLaunchKernelEx(&config, function, params, nullptr);
  }

  const Api &api = driver();
  CUcontext primary = nullptr;
};

TEST_F(DriverApi, ExportsEveryEntryPointTheRuntimeCalls) {
  const Api &opened = driver();
  ASSERT_TRUE(opened.handle) << dlerror();
#define EXPECT_SYMBOL(name)                                                    \
  EXPECT_NE(dlsym(opened.handle, STRINGIFY(name)), nullptr)                    \
      << "no symbol " << STRINGIFY(name) << " (cuda.h's " #name ")";
  RUNTIME_FUNCTIONS(EXPECT_SYMBOL)
  OTHER_FUNCTIONS(EXPECT_SYMBOL)
  MULTI_DEVICE_FUNCTIONS(EXPECT_SYMBOL)
#undef EXPECT_SYMBOL
  EXPECT_STREQ(STRINGIFY(cuMemAlloc), "cuMemAlloc_v2");
  ASSERT_NE(opened.isEmulator, nullptr);
  EXPECT_EQ(opened.isEmulator(), 1);
}

TEST_F(DriverApi, ExportsTheLegacyNames) {
  for (const char *name : kLegacySymbols)
    EXPECT_NE(dlsym(api.handle, name), nullptr) << "no symbol " << name;
  // The legacy cuCtxCreate keeps its signature and forwards.
  using LegacyCtxCreate = CUresult (*)(CUcontext *, unsigned int, CUdevice);
  auto legacyCreate =
      reinterpret_cast<LegacyCtxCreate>(dlsym(api.handle, "cuCtxCreate"));
  CUcontext context = nullptr;
  ASSERT_EQ(legacyCreate(&context, 0, 0), CUDA_SUCCESS) << lastError();
  CUcontext current = nullptr;
  EXPECT_EQ(api.cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, context);
  EXPECT_EQ(api.cuCtxDestroy(context), CUDA_SUCCESS);
  // A 32-bit device address names no allocation of the emulator.
  using LegacyMemsetD8 = CUresult (*)(unsigned int, unsigned char, unsigned);
  auto legacyMemset =
      reinterpret_cast<LegacyMemsetD8>(dlsym(api.handle, "cuMemsetD8"));
  EXPECT_EQ(legacyMemset(0x1000, 0, 4), CUDA_ERROR_INVALID_VALUE);
}

TEST(DriverApiInit, CallsBeforeCuInitFail) {
  FreshDriver fresh;
  ASSERT_TRUE(fresh->complete()) << dlerror();
  int version = 0;
  EXPECT_EQ(fresh->cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
  int count = 0;
  EXPECT_EQ(fresh->cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  CUdeviceptr pointer = 0;
  EXPECT_EQ(fresh->cuMemAlloc(&pointer, 256), CUDA_ERROR_NOT_INITIALIZED);
  const char *name = nullptr;
  EXPECT_EQ(fresh->cuGetErrorName(CUDA_ERROR_NOT_INITIALIZED, &name),
            CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_NOT_INITIALIZED");
  EXPECT_EQ(fresh->cuInit(1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(fresh->cuInit(0), CUDA_SUCCESS) << fresh->lastError();
  EXPECT_EQ(fresh->cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 1);
  // A context is needed for memory.
  EXPECT_EQ(fresh->cuMemAlloc(&pointer, 256), CUDA_ERROR_INVALID_CONTEXT);
}

TEST(DriverApiInit, AnUnreadableOptionFailsCuInit) {
  const char *saved = std::getenv("MOSAIC_EMULATOR_POLICY");
  std::string previous = saved ? saved : "";
  setenv("MOSAIC_EMULATOR_POLICY", "fast", 1);
  FreshDriver fresh;
  ASSERT_TRUE(fresh->complete()) << dlerror();
  EXPECT_EQ(fresh->cuInit(0), CUDA_ERROR_INVALID_VALUE);
  std::string why = fresh->lastError();
  EXPECT_NE(why.find("MOSAIC_EMULATOR_POLICY"), std::string::npos) << why;
  EXPECT_NE(why.find("eager, lazy, random"), std::string::npos) << why;
  // The environment is read once: the error stays.
  EXPECT_EQ(fresh->cuInit(0), CUDA_ERROR_INVALID_VALUE);
  int count = 0;
  EXPECT_EQ(fresh->cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  if (saved)
    setenv("MOSAIC_EMULATOR_POLICY", previous.c_str(), 1);
  else
    unsetenv("MOSAIC_EMULATOR_POLICY");
}

TEST_F(DriverApi, DescribesOneHopperDevice) {
  int count = 0;
  ASSERT_EQ(api.cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 1);
  CUdevice device = -1;
  ASSERT_EQ(api.cuDeviceGet(&device, 0), CUDA_SUCCESS);
  EXPECT_EQ(device, 0);
  EXPECT_EQ(api.cuDeviceGet(&device, 1), CUDA_ERROR_INVALID_DEVICE);

  char name[64];
  ASSERT_EQ(api.cuDeviceGetName(name, sizeof(name), 0), CUDA_SUCCESS);
  EXPECT_STREQ(name, "Mosaic PTX emulator (sm_90a)");
  char shortName[7];
  ASSERT_EQ(api.cuDeviceGetName(shortName, sizeof(shortName), 0), CUDA_SUCCESS);
  EXPECT_STREQ(shortName, "Mosaic");

  int major = 0, minor = -1;
  ASSERT_EQ(api.cuDeviceComputeCapability(&major, &minor, 0), CUDA_SUCCESS);
  EXPECT_EQ(major, 9);
  EXPECT_EQ(minor, 0);
  size_t total = 0;
  ASSERT_EQ(api.cuDeviceTotalMem(&total, 0), CUDA_SUCCESS);
  EXPECT_GT(total, size_t(64) << 30);

  const std::pair<CUdevice_attribute, int> expected[] = {
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
      {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
      {CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 1},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, CU_COMPUTEMODE_DEFAULT},
      {CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED, 1},
  };
  for (auto [attribute, value] : expected) {
    int got = -1;
    ASSERT_EQ(api.cuDeviceGetAttribute(&got, attribute, 0), CUDA_SUCCESS)
        << "attribute " << attribute << ": " << lastError();
    EXPECT_EQ(got, value) << "attribute " << attribute;
  }
  int clock = 0, memoryClock = 0;
  ASSERT_EQ(api.cuDeviceGetAttribute(&clock, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuDeviceGetAttribute(&memoryClock,
                                     CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 0),
            CUDA_SUCCESS);
  EXPECT_GT(clock, 1000000);
  EXPECT_GT(memoryClock, 1000000);

  int ignored = 0;
  EXPECT_EQ(api.cuDeviceGetAttribute(
                &ignored, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(
      api.cuDeviceGetAttribute(&ignored, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1),
      CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(DriverApi, TracksTheCurrentContextPerThread) {
  CUcontext current = nullptr;
  ASSERT_EQ(api.cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, primary);
  CUdevice device = -1;
  EXPECT_EQ(api.cuCtxGetDevice(&device), CUDA_SUCCESS);
  EXPECT_EQ(device, 0);

  std::thread other([&] {
    CUcontext none = primary;
    EXPECT_EQ(api.cuCtxGetCurrent(&none), CUDA_SUCCESS);
    EXPECT_EQ(none, nullptr);
    CUdeviceptr pointer = 0;
    EXPECT_EQ(api.cuMemAlloc(&pointer, 256), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(api.cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
  });
  other.join();

  CUcontext created = nullptr;
  ASSERT_EQ(api.cuCtxCreate(&created, nullptr, 0, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, created);
  CUcontext popped = nullptr;
  ASSERT_EQ(api.cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, created);
  ASSERT_EQ(api.cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, primary);
  ASSERT_EQ(api.cuCtxPushCurrent(created), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxDestroy(created), CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxPushCurrent(created), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(api.cuCtxDestroy(primary), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(api.cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, primary);
}

TEST_F(DriverApi, CopiesAndSetsMemory) {
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(api.cuMemAlloc(&a, 1024), CUDA_SUCCESS) << lastError();
  ASSERT_EQ(api.cuMemAlloc(&b, 1024), CUDA_SUCCESS) << lastError();
  EXPECT_EQ(a % 256, 0u);
  EXPECT_EQ(b % 256, 0u);

  std::vector<uint8_t> in(1024), out(1024);
  std::iota(in.begin(), in.end(), uint8_t(0));
  ASSERT_EQ(api.cuMemcpyHtoD(a, in.data(), in.size()), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoD(b, a, 1024), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), b, out.size()), CUDA_SUCCESS);
  EXPECT_EQ(in, out);

  ASSERT_EQ(api.cuMemsetD8(a + 16, 0xab, 32), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32(a + 64, 0x01020304u, 4), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), a, 128), CUDA_SUCCESS);
  for (int i = 0; i < 128; ++i) {
    uint8_t expected = i >= 16 && i < 48 ? 0xab
                       : i >= 64 && i < 80
                           ? uint8_t(0x01020304u >> (8 * (i % 4)))
                           : in[i];
    EXPECT_EQ(out[i], expected) << "byte " << i;
  }

  CUstream stream = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD8Async(b, 7, 1024, stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemsetD32Async(b + 4, 0, 1, stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyHtoDAsync(b + 8, in.data(), 8, stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoHAsync(out.data(), b, 16, stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamSynchronize(stream), CUDA_SUCCESS);
  const uint8_t expected[16] = {7, 7, 7, 7, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(std::memcmp(out.data(), expected, 16), 0);
  EXPECT_EQ(api.cuStreamDestroy(stream), CUDA_SUCCESS);

  // cuMemcpy takes unified addresses: host to device and back.
  ASSERT_EQ(api.cuMemcpy(a, reinterpret_cast<CUdeviceptr>(in.data()), 64),
            CUDA_SUCCESS)
      << lastError();
  std::vector<uint8_t> back(64);
  ASSERT_EQ(api.cuMemcpy(reinterpret_cast<CUdeviceptr>(back.data()), a, 64),
            CUDA_SUCCESS);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), in.begin()));

  void *pinned = nullptr;
  ASSERT_EQ(api.cuMemAllocHost(&pinned, 64), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoH(pinned, a, 64), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(pinned, in.data(), 64), 0);
  EXPECT_EQ(api.cuMemFree(reinterpret_cast<CUdeviceptr>(pinned)),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemFreeHost(pinned), CUDA_SUCCESS);

  EXPECT_EQ(api.cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(b), CUDA_SUCCESS);
}

TEST_F(DriverApi, ChecksRanges) {
  CUdeviceptr a = 0;
  ASSERT_EQ(api.cuMemAlloc(&a, 1000), CUDA_SUCCESS);
  std::vector<uint8_t> host(2048);

  EXPECT_EQ(api.cuMemcpyHtoD(a, host.data(), 1001), CUDA_ERROR_INVALID_VALUE);
  std::string why = lastError();
  EXPECT_NE(why.find("cuMemcpyHtoD"), std::string::npos) << why;
  EXPECT_NE(why.find("`dstDevice`"), std::string::npos) << why;
  EXPECT_NE(why.find("runs 1 bytes past the end"), std::string::npos) << why;
  EXPECT_EQ(api.cuMemcpyDtoH(host.data(), a + 996, 8),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemsetD8(a + 1000, 0, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemsetD32(a + 2, 0, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(lastError().find("4-byte aligned"), std::string::npos);
  EXPECT_EQ(api.cuMemcpyHtoD(0x1000, host.data(), 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(lastError().find("in no allocation"), std::string::npos);
  // Zero bytes touch nothing.
  EXPECT_EQ(api.cuMemcpyHtoD(a + 1000, host.data(), 0), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemcpyHtoD(a, host.data(), 1000), CUDA_SUCCESS);

  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_EQ(api.cuMemGetAddressRange(&base, &size, a + 999), CUDA_SUCCESS);
  EXPECT_EQ(base, a);
  EXPECT_EQ(size, 1000u);
  EXPECT_EQ(api.cuMemGetAddressRange(&base, &size, a + 1000),
            CUDA_ERROR_NOT_FOUND);

  CUdeviceptr none = 0;
  EXPECT_EQ(api.cuMemAlloc(&none, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemFree(a + 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(lastError().find("not at its start"), std::string::npos);
  EXPECT_EQ(api.cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(a), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(DriverApi, AnswersPointerAttributes) {
  CUdeviceptr a = 0;
  ASSERT_EQ(api.cuMemAlloc(&a, 512), CUDA_SUCCESS);
  unsigned int type = 0;
  ASSERT_EQ(
      api.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a + 8),
      CUDA_SUCCESS);
  EXPECT_EQ(type, unsigned(CU_MEMORYTYPE_DEVICE));
  int ordinal = -1;
  ASSERT_EQ(api.cuPointerGetAttribute(&ordinal,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a),
            CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 0);
  CUcontext context = nullptr;
  ASSERT_EQ(
      api.cuPointerGetAttribute(&context, CU_POINTER_ATTRIBUTE_CONTEXT, a),
      CUDA_SUCCESS);
  EXPECT_EQ(context, primary);
  CUdeviceptr pointer = 0, start = 0;
  ASSERT_EQ(api.cuPointerGetAttribute(
                &pointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, a + 100),
            CUDA_SUCCESS);
  EXPECT_EQ(pointer, a + 100);
  ASSERT_EQ(api.cuPointerGetAttribute(
                &start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a + 100),
            CUDA_SUCCESS);
  EXPECT_EQ(start, a);
  size_t size = 0;
  ASSERT_EQ(api.cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                      a + 100),
            CUDA_SUCCESS);
  EXPECT_EQ(size, 512u);
  EXPECT_EQ(api.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                      a + 512),
            CUDA_ERROR_INVALID_VALUE);
  int onStack = 0;
  EXPECT_EQ(api.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                      reinterpret_cast<CUdeviceptr>(&onStack)),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemFree(a), CUDA_SUCCESS);
}

TEST_F(DriverApi, RefusesCubinAndFatbinaryImages) {
  const char *kMessage = "the Mosaic emulator runs PTX, not CUBIN or "
                         "fatbinary images: load the kernel's .ptx";
  const char elf[] = "\x7f"
                     "ELF\x02\x01\x01";
  char log[256] = "unchanged";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log)))};
  CUmodule module = nullptr;
  EXPECT_EQ(api.cuModuleLoadDataEx(&module, elf, 2, options, values),
            CUDA_ERROR_INVALID_IMAGE);
  EXPECT_STREQ(log, kMessage);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(values[1]), std::strlen(kMessage));

  // A smaller buffer gets the start of the message, terminated.
  char small[16];
  void *smallValues[] = {small, reinterpret_cast<void *>(uintptr_t(16))};
  const uint32_t fatbin[] = {0xba55ed50u, 0x00100001u, 0};
  EXPECT_EQ(api.cuModuleLoadDataEx(&module, fatbin, 2, options, smallValues),
            CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(std::string(small), std::string(kMessage).substr(0, 15));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(smallValues[1]), 15u);

  EXPECT_EQ(api.cuModuleLoadData(&module, elf), CUDA_ERROR_INVALID_IMAGE);
}

TEST_F(DriverApi, ReportsPtxThatDoesNotLoad) {
  char log[512] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log)))};
  CUmodule module = nullptr;
  EXPECT_EQ(
      api.cuModuleLoadDataEx(&module, "this is not PTX", 2, options, values),
      CUDA_ERROR_INVALID_PTX);
  EXPECT_GT(std::strlen(log), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(values[1]), std::strlen(log));
  EXPECT_EQ(api.cuModuleLoad(&module, "/nonexistent/kernel.ptx"),
            CUDA_ERROR_FILE_NOT_FOUND);
}

TEST_F(DriverApi, NamesAndDescribesErrors) {
  const CUresult codes[] = {CUDA_SUCCESS,
                            CUDA_ERROR_INVALID_VALUE,
                            CUDA_ERROR_OUT_OF_MEMORY,
                            CUDA_ERROR_NOT_INITIALIZED,
                            CUDA_ERROR_INVALID_DEVICE,
                            CUDA_ERROR_INVALID_IMAGE,
                            CUDA_ERROR_INVALID_CONTEXT,
                            CUDA_ERROR_INVALID_PTX,
                            CUDA_ERROR_FILE_NOT_FOUND,
                            CUDA_ERROR_INVALID_HANDLE,
                            CUDA_ERROR_NOT_FOUND,
                            CUDA_ERROR_LAUNCH_FAILED,
                            CUDA_ERROR_NOT_PERMITTED,
                            CUDA_ERROR_NOT_SUPPORTED,
                            CUDA_ERROR_INVALID_CLUSTER_SIZE,
                            CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
                            CUDA_ERROR_ILLEGAL_ADDRESS,
                            CUDA_ERROR_UNKNOWN};
  for (CUresult code : codes) {
    const char *name = nullptr;
    const char *description = nullptr;
    ASSERT_EQ(api.cuGetErrorName(code, &name), CUDA_SUCCESS) << code;
    ASSERT_EQ(api.cuGetErrorString(code, &description), CUDA_SUCCESS) << code;
    ASSERT_NE(name, nullptr);
    ASSERT_NE(description, nullptr);
    EXPECT_EQ(std::string(name).rfind("CUDA_", 0), 0u) << name;
    EXPECT_GT(std::strlen(description), 0u) << name;
  }
  const char *name = nullptr;
  ASSERT_EQ(api.cuGetErrorName(CUDA_ERROR_LAUNCH_FAILED, &name), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_LAUNCH_FAILED");
  const char *description = nullptr;
  ASSERT_EQ(api.cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &description),
            CUDA_SUCCESS);
  EXPECT_STREQ(description, "invalid argument");
  name = "unchanged";
  EXPECT_EQ(api.cuGetErrorName(CUresult(12345), &name),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(name, nullptr);
  EXPECT_EQ(api.cuGetErrorString(CUresult(12345), &description),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(description, nullptr);
}

TEST_F(DriverApi, DescribesKernels) {
  CUfunction function = loadStoreTid();
  ASSERT_NE(function, nullptr);
  const char *name = nullptr;
  ASSERT_EQ(api.cuFuncGetName(&name, function), CUDA_SUCCESS);
  EXPECT_STREQ(name, "k");
  int value = -1;
  ASSERT_EQ(api.cuFuncGetAttribute(
                &value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 1024);
  ASSERT_EQ(
      api.cuFuncGetAttribute(
          &value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function),
      CUDA_SUCCESS);
  EXPECT_EQ(value, 49152);
  ASSERT_EQ(
      api.cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_PTX_VERSION, function),
      CUDA_SUCCESS);
  EXPECT_EQ(value, 90);
  ASSERT_EQ(api.cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                   function),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 0);

  EXPECT_EQ(
      api.cuFuncSetAttribute(
          function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232448),
      CUDA_SUCCESS);
  EXPECT_EQ(
      api.cuFuncSetAttribute(
          function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 232449),
      CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_NUM_REGS, 32),
            CUDA_ERROR_INVALID_VALUE);

  CUmodule module = nullptr;
  ASSERT_EQ(api.cuModuleLoadData(&module, kStoreTid), CUDA_SUCCESS);
  CUfunction missing = nullptr;
  EXPECT_EQ(api.cuModuleGetFunction(&missing, module, "nope"),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_NE(lastError().find("`k`"), std::string::npos) << lastError();
  CUdeviceptr global = 0;
  size_t bytes = 0;
  EXPECT_EQ(api.cuModuleGetGlobal(&global, &bytes, module, "g"),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(api.cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(api.cuModuleUnload(module), CUDA_ERROR_INVALID_HANDLE);
}

// Needs the interpreter (Module::load and launch).
TEST_F(DriverApi, LaunchesAKernel) {
  CUfunction function = loadStoreTid();
  ASSERT_NE(function, nullptr);
  CUdeviceptr out = 0;
  ASSERT_EQ(api.cuMemAlloc(&out, 64 * sizeof(uint32_t)), CUDA_SUCCESS);
  ASSERT_EQ(launch(function, out, 64), CUDA_SUCCESS) << lastError();
  std::vector<uint32_t> values(64);
  ASSERT_EQ(api.cuMemcpyDtoH(values.data(), out, 64 * sizeof(uint32_t)),
            CUDA_SUCCESS);
  for (uint32_t i = 0; i < 64; ++i)
    EXPECT_EQ(values[i], i) << "thread " << i;
  unsigned long long warps = 0, threads = 0;
  double seconds = -1;
  api.lastLaunchCounts(&warps, &threads, &seconds);
  EXPECT_GT(warps, 0u);
  EXPECT_GE(threads, warps);
  EXPECT_GE(seconds, 0);

  // The same launch with its parameters in an `extra` buffer.
  ASSERT_EQ(api.cuMemsetD8(out, 0xff, 64 * sizeof(uint32_t)), CUDA_SUCCESS);
  size_t size = sizeof(out);
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &out,
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  ASSERT_EQ(api.cuLaunchKernel(function, 1, 1, 1, 64, 1, 1, 0, nullptr, nullptr,
                               extra),
            CUDA_SUCCESS)
      << lastError();
  ASSERT_EQ(api.cuMemcpyDtoH(values.data(), out, 64 * sizeof(uint32_t)),
            CUDA_SUCCESS);
  for (uint32_t i = 0; i < 64; ++i)
    EXPECT_EQ(values[i], i) << "thread " << i;

  // In clusters of two, through cuLaunchKernelEx.
  ASSERT_EQ(launchInCluster(function, out, 4, 2), CUDA_SUCCESS) << lastError();
  EXPECT_EQ(api.cuMemFree(out), CUDA_SUCCESS);
}

TEST_F(DriverApi, ChecksLaunchConfigurations) {
  CUfunction function = loadStoreTid();
  ASSERT_NE(function, nullptr);
  CUdeviceptr out = 0;
  ASSERT_EQ(api.cuMemAlloc(&out, 4096), CUDA_SUCCESS);

  EXPECT_EQ(launch(function, out, 2048), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch(function, out, 32, 0), CUDA_ERROR_INVALID_VALUE);
  // Dynamic shared memory above 48 KiB needs the attribute raised first.
  EXPECT_EQ(launch(function, out, 32, 1, 49153), CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(lastError().find("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"),
            std::string::npos)
      << lastError();
  // Clusters: the grid divides into them; at most 8 blocks, or 16 once
  // non-portable sizes are allowed.
  EXPECT_EQ(launchInCluster(function, out, 4, 3),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);
  EXPECT_EQ(launchInCluster(function, out, 16, 16),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);
  EXPECT_EQ(launchInCluster(function, out, 0, 1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(
      api.cuFuncSetAttribute(
          function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
      CUDA_SUCCESS);
  EXPECT_EQ(launchInCluster(function, out, 32, 32),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);
  // Parameters come from exactly one of `kernelParams` and `extra`.
  EXPECT_EQ(api.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr,
                               nullptr),
            CUDA_ERROR_INVALID_VALUE);
  void *params[] = {&out};
  size_t size = sizeof(out);
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &out,
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  EXPECT_EQ(api.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, params,
                               extra),
            CUDA_ERROR_INVALID_VALUE);
  size = 4;
  EXPECT_EQ(api.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr,
                               extra),
            CUDA_ERROR_INVALID_VALUE);
  // Attributes that change what a launch means are refused.
  CUlaunchAttribute cooperative{};
  cooperative.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  cooperative.value.cooperative = 1;
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 32;
  config.blockDimY = config.blockDimZ = 1;
  config.attrs = &cooperative;
  config.numAttrs = 1;
  EXPECT_EQ(api.cuLaunchKernelEx(&config, function, params, nullptr),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.cuLaunchKernel(nullptr, 1, 1, 1, 32, 1, 1, 0, nullptr, params,
                               nullptr),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuMemFree(out), CUDA_SUCCESS);
}

// Needs the interpreter (a launch that faults).
TEST_F(DriverApi, AFaultingLaunchMakesItsContextFail) {
  CUcontext context = nullptr;
  ASSERT_EQ(api.cuCtxCreate(&context, nullptr, 0, 0), CUDA_SUCCESS);
  CUfunction function = loadStoreTid();
  ASSERT_NE(function, nullptr);
  // Room for 32 of the 64 threads' stores.
  CUdeviceptr out = 0;
  ASSERT_EQ(api.cuMemAlloc(&out, 32 * sizeof(uint32_t)), CUDA_SUCCESS);
  // As on a GPU, the launch returns before the kernel faults...
  EXPECT_EQ(launch(function, out, 64), CUDA_SUCCESS);
  EXPECT_NE(std::string(api.lastReport()).find("outside every allocation"),
            std::string::npos)
      << api.lastReport();

  // ...and the fault's own code is sticky: every later call that uses the
  // context fails with it.
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  std::vector<uint32_t> values(32);
  EXPECT_EQ(api.cuMemcpyDtoH(values.data(), out, 32 * sizeof(uint32_t)),
            CUDA_ERROR_ILLEGAL_ADDRESS);
  CUdeviceptr more = 0;
  EXPECT_EQ(api.cuMemAlloc(&more, 256), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  const char *name = nullptr;
  EXPECT_EQ(api.cuGetErrorName(CUDA_ERROR_LAUNCH_FAILED, &name), CUDA_SUCCESS);

  // Destroying the context ends it; the primary context was not affected.
  EXPECT_EQ(api.cuCtxDestroy(context), CUDA_SUCCESS);
  CUcontext current = nullptr;
  ASSERT_EQ(api.cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, primary);
  ASSERT_EQ(api.cuMemAlloc(&more, 256), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(more), CUDA_SUCCESS);
}

// Needs the interpreter (a launch that faults).
TEST_F(DriverApi, ResettingThePrimaryContextClearsItsFault) {
  CUfunction function = loadStoreTid();
  ASSERT_NE(function, nullptr);
  CUdeviceptr out = 0;
  ASSERT_EQ(api.cuMemAlloc(&out, 4), CUDA_SUCCESS);
  EXPECT_EQ(launch(function, out, 2), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemFree(out), CUDA_ERROR_ILLEGAL_ADDRESS);
  ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  // The reset freed the allocation and the module.
  EXPECT_EQ(api.cuMemFree(out), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launch(function, out, 1), CUDA_ERROR_INVALID_HANDLE);
}

// Needs the interpreter (kernels that fault). Each fault the hardware
// raises surfaces as its own code at the call after the launch.
TEST_F(DriverApi, EachFaultIsReportedWithTheGpusCode) {
  struct Case {
    const char *body;
    CUresult code;
  };
  const Case cases[] = {
      {"ld.global.u32 %r1, [%rd1+2];", CUDA_ERROR_MISALIGNED_ADDRESS},
      {"ld.global.v2.u32 {%r1, %r2}, [%rd1+4];", CUDA_ERROR_MISALIGNED_ADDRESS},
      {"st.global.u32 [%rd1+4096], %r1;", CUDA_ERROR_ILLEGAL_ADDRESS},
      {"cp.async.bulk.global.shared::cta.bulk_group [%rd1], [tile], 24;",
       CUDA_ERROR_ILLEGAL_INSTRUCTION},
      {"trap;", CUDA_ERROR_LAUNCH_FAILED},
      {"brkpt;", CUDA_ERROR_LAUNCH_FAILED},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.body);
    std::string ptx = std::string(".version 8.0\n.target sm_90a\n"
                                  ".address_size 64\n"
                                  ".visible .entry k(.param .u64 p)\n{\n"
                                  "  .reg .b64 %rd<2>;\n"
                                  "  .reg .b32 %r<3>;\n"
                                  "  .shared .align 128 .b8 tile[128];\n"
                                  "  ld.param.u64 %rd1, [p];\n  ") +
                      c.body + "\n  ret;\n}\n";
    CUcontext context = nullptr;
    ASSERT_EQ(api.cuCtxCreate(&context, nullptr, 0, 0), CUDA_SUCCESS);
    CUmodule module = nullptr;
    ASSERT_EQ(api.cuModuleLoadData(&module, ptx.c_str()), CUDA_SUCCESS)
        << lastError();
    CUfunction function = nullptr;
    ASSERT_EQ(api.cuModuleGetFunction(&function, module, "k"), CUDA_SUCCESS);
    CUdeviceptr out = 0;
    ASSERT_EQ(api.cuMemAlloc(&out, 256), CUDA_SUCCESS);
    EXPECT_EQ(launch(function, out, 1), CUDA_SUCCESS);
    EXPECT_EQ(api.cuCtxSynchronize(), c.code) << api.lastReport();
    EXPECT_EQ(api.cuCtxDestroy(context), CUDA_SUCCESS);
  }
  ASSERT_EQ(api.cuCtxSetCurrent(primary), CUDA_SUCCESS);
}

// A setmaxnreg count is an immediate: one that is not a multiple of 8 in
// 24..256 fails when the driver compiles the PTX, as ptxas refuses it.
TEST_F(DriverApi, SetmaxnregOutOfRangeDoesNotLoad) {
  for (const char *count : {"16", "30", "264"}) {
    std::string ptx = std::string(".version 8.0\n.target sm_90a\n"
                                  ".address_size 64\n"
                                  ".visible .entry k()\n.maxntid 128, 1, 1\n"
                                  "{\n  setmaxnreg.inc.sync.aligned.u32 ") +
                      count + ";\n  ret;\n}\n";
    CUmodule module = nullptr;
    EXPECT_EQ(api.cuModuleLoadData(&module, ptx.c_str()),
              CUDA_ERROR_INVALID_PTX)
        << count;
    EXPECT_NE(lastError().find("not a multiple of 8 in 24..256"),
              std::string::npos)
        << lastError();
  }
}

// A kernel compiled for one cluster shape launches only in it
// (cuda.h, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: a launch with other
// dimensions fails), and clusters of up to 16 blocks need
// CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED.
TEST_F(DriverApi, ClusterLaunchesStayInsideTheKernelsLimits) {
  const char *ptx = R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p)
.reqnctapercluster 2, 1, 1
{
  ret;
}
)";
  CUmodule module = nullptr;
  ASSERT_EQ(api.cuModuleLoadData(&module, ptx), CUDA_SUCCESS) << lastError();
  CUfunction required = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&required, module, "k"), CUDA_SUCCESS);
  CUdeviceptr out = 0;
  ASSERT_EQ(api.cuMemAlloc(&out, 4096), CUDA_SUCCESS);
  EXPECT_EQ(launchInCluster(required, out, 4, 2), CUDA_SUCCESS) << lastError();
  EXPECT_EQ(launchInCluster(required, out, 4, 4),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);
  EXPECT_NE(lastError().find("requires"), std::string::npos) << lastError();
  // Without the attribute the kernel's own shape applies: the grid must
  // divide into it.
  EXPECT_EQ(launch(required, out, 32, 4), CUDA_SUCCESS) << lastError();
  EXPECT_EQ(launch(required, out, 32, 3), CUDA_ERROR_INVALID_CLUSTER_SIZE);

  CUfunction function = loadStoreTid();
  ASSERT_NE(function, nullptr);
  EXPECT_EQ(launchInCluster(function, out, 9, 9),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);
  ASSERT_EQ(
      api.cuFuncSetAttribute(
          function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
      CUDA_SUCCESS);
  EXPECT_EQ(launchInCluster(function, out, 16, 16), CUDA_SUCCESS)
      << lastError();
  EXPECT_EQ(launchInCluster(function, out, 17, 17),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);

  // PTX ISA, performance-tuning directives: `.maxclusterrank` bounds the
  // cluster's CTAs; `.explicitcluster` kernels launch with cluster
  // dimensions (CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET).
  const char *bounded = R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry bounded(.param .u64 p)
.maxclusterrank 2
{
  ret;
}
.visible .entry explicit(.param .u64 p)
.explicitcluster
{
  ret;
}
)";
  CUmodule directives = nullptr;
  ASSERT_EQ(api.cuModuleLoadData(&directives, bounded), CUDA_SUCCESS)
      << lastError();
  CUfunction rankBound = nullptr, explicitCluster = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&rankBound, directives, "bounded"),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuModuleGetFunction(&explicitCluster, directives, "explicit"),
            CUDA_SUCCESS);
  EXPECT_EQ(launchInCluster(rankBound, out, 4, 2), CUDA_SUCCESS) << lastError();
  EXPECT_EQ(launchInCluster(rankBound, out, 4, 4),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);
  EXPECT_NE(lastError().find(".maxclusterrank 2"), std::string::npos)
      << lastError();
  int mustBeSet = 0;
  ASSERT_EQ(api.cuFuncGetAttribute(&mustBeSet,
                                   CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
                                   explicitCluster),
            CUDA_SUCCESS);
  EXPECT_EQ(mustBeSet, 1);
  EXPECT_EQ(launch(explicitCluster, out, 32, 2),
            CUDA_ERROR_INVALID_CLUSTER_SIZE);
  EXPECT_EQ(launchInCluster(explicitCluster, out, 2, 1), CUDA_SUCCESS)
      << lastError();
  EXPECT_EQ(api.cuMemFree(out), CUDA_SUCCESS);
}

TEST_F(DriverApi, TimesEvents) {
  CUevent start = nullptr, end = nullptr, untimed = nullptr;
  ASSERT_EQ(api.cuEventCreate(&start, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventCreate(&end, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  float ms = -1;
  EXPECT_EQ(api.cuEventElapsedTime(&ms, start, end), CUDA_ERROR_INVALID_HANDLE);
  CUstream stream = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventRecord(start, stream), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(api.cuEventRecord(end, stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventRecord(untimed, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventSynchronize(end), CUDA_SUCCESS);
  EXPECT_EQ(api.cuEventQuery(end), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamQuery(stream), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventElapsedTime(&ms, start, end), CUDA_SUCCESS);
  EXPECT_GE(ms, 1.5f);
  EXPECT_LT(ms, 10000.0f);
  EXPECT_EQ(api.cuEventElapsedTime(&ms, start, untimed),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(api.cuStreamSynchronize(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuEventDestroy(start), CUDA_SUCCESS);
  EXPECT_EQ(api.cuEventDestroy(start), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(api.cuEventDestroy(end), CUDA_SUCCESS);
  EXPECT_EQ(api.cuEventDestroy(untimed), CUDA_SUCCESS);
}

TEST_F(DriverApi, FindsEntryPointsByBaseName) {
  void *function = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  ASSERT_EQ(api.cuGetProcAddress("cuMemAlloc", &function, 13000, 0, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(function, dlsym(api.handle, "cuMemAlloc_v2"));
  ASSERT_EQ(api.cuGetProcAddress("cuMemAlloc", &function, 3000, 0, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(function, dlsym(api.handle, "cuMemAlloc"));
  ASSERT_EQ(api.cuGetProcAddress("cuCtxCreate", &function, 12000, 0, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(function, dlsym(api.handle, "cuCtxCreate_v3"));
  ASSERT_EQ(api.cuGetProcAddress("cuLaunchKernelEx", &function, 13000,
                                 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                                 &status),
            CUDA_SUCCESS);
  EXPECT_EQ(function, dlsym(api.handle, "cuLaunchKernelEx"));

  EXPECT_EQ(api.cuGetProcAddress("cuTensorMapEncodeTiled", &function, 11080, 0,
                                 &status),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(
      api.cuGetProcAddress("cuNoSuchEntryPoint", &function, 13000, 0, &status),
      CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(function, nullptr);
}

TEST_F(DriverApi, EncodesTensorMapsTheEmulatorDecodes) {
  CUdeviceptr tensor = 0;
  ASSERT_EQ(api.cuMemAlloc(&tensor, 64 * 32 * 4), CUDA_SUCCESS);
  const cuuint64_t dims[] = {64, 32};
  const cuuint64_t strides[] = {64 * 4};
  const cuuint32_t box[] = {32, 8};
  const cuuint32_t elementStrides[] = {1, 1};
  alignas(64) CUtensorMap map;
  ASSERT_EQ(api.cuTensorMapEncodeTiled(
                &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2,
                reinterpret_cast<void *>(tensor), dims, strides, box,
                elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
            CUDA_SUCCESS)
      << lastError();
  auto decoded =
      mosaic::emulator::decode(reinterpret_cast<const uint8_t *>(&map));
  ASSERT_TRUE(decoded.ok()) << decoded.message();
  EXPECT_EQ(decoded->globalAddress, tensor);
  EXPECT_EQ(decoded->boxBytes(), 32u * 8 * 4);

  const cuuint32_t wideBox[] = {64, 8}; // 256 bytes > the 128-byte swizzle
  EXPECT_EQ(api.cuTensorMapEncodeTiled(
                &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2,
                reinterpret_cast<void *>(tensor), dims, strides, wideBox,
                elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(lastError().find("`boxDim[0]`"), std::string::npos) << lastError();

  alignas(64) unsigned char buffer[sizeof(CUtensorMap) + 64];
  EXPECT_EQ(api.cuTensorMapEncodeTiled(
                reinterpret_cast<CUtensorMap *>(buffer + 16),
                CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2,
                reinterpret_cast<void *>(tensor), dims, strides, box,
                elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(lastError().find("64-byte aligned"), std::string::npos);
  EXPECT_EQ(api.cuMemFree(tensor), CUDA_SUCCESS);
}

} // namespace

#endif // MOSAIC_EMULATOR_DRIVER
