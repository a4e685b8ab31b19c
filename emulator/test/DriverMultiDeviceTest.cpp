//===- DriverMultiDeviceTest.cpp - The driver with several devices -------===//
//
// A private copy of the emulator's driver library, initialized with
// MOSAIC_EMULATOR_DEVICES=2, driven through the CUDA driver API: devices
// and their contexts, peer access, the virtual-memory API (in one process
// and, through a POSIX file descriptor, across two), and launches queued on
// streams until a call observes them. Skipped when the build has no driver
// library (no cuda.h).
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#ifndef MOSAIC_EMULATOR_DRIVER

TEST(DriverMultiDevice, NeedsTheDriverLibrary) {
  GTEST_SKIP() << "the emulator's driver library was not built (no cuda.h)";
}

#else

#include "DriverLibrary.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace mosaic::emulator::test;

/// Thread t stores v + t at p + 4 t.
const char *const kStore = R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry store(.param .u64 p, .param .u32 v)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<3>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r2, [v];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd1, %rd1, %rd2;
  add.u32 %r2, %r2, %r1;
  st.global.u32 [%rd1], %r2;
  ret;
}

.visible .entry load(.param .u64 p)
{
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd1, %rd1;
  ld.global.u32 %r1, [%rd1];
  ret;
}
)";

/// One thread signals the peer's flag and polls its own, bounded, in the
/// order `signalFirst` says; `mine[1]` says whether its flag was seen set.
/// Signals and polls are the contract's release and acquire at system
/// scope (docs/RationaleMultiDevice.md, "The memory model").
const char *const kHandshake = R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry handshake(.param .u64 mine, .param .u64 peer,
                          .param .u32 signalFirst)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<5>;
  .reg .pred %p<3>;
  ld.param.u64 %rd1, [mine];
  ld.param.u64 %rd2, [peer];
  ld.param.u32 %r1, [signalFirst];
  setp.ne.u32 %p1, %r1, 0;
  @%p1 red.release.sys.global.add.u32 [%rd2], 1;
  mov.u32 %r2, 0;
  mov.u32 %r4, 0;
WAIT:
  ld.acquire.sys.global.u32 %r3, [%rd1];
  setp.ne.u32 %p2, %r3, 0;
  @%p2 bra SEEN;
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p2, %r2, 100000;
  @%p2 bra WAIT;
  bra.uni DONE;
SEEN:
  mov.u32 %r4, 1;
DONE:
  st.global.u32 [%rd1+4], %r4;
  @!%p1 red.release.sys.global.add.u32 [%rd2], 1;
  ret;
}
)";

constexpr size_t kGranularity = 2 << 20;

/// Sets an environment variable for the object's lifetime.
class ScopedEnvironment {
public:
  ScopedEnvironment(const char *name, const char *value) : name(name) {
    if (const char *saved = std::getenv(name))
      previous = saved;
    setenv(name, value, 1);
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

class DriverMultiDevice : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(api.complete()) << dlerror();
    ASSERT_EQ(api.cuInit(0), CUDA_SUCCESS) << api.lastError();
    for (int d = 0; d < 2; ++d) {
      ASSERT_EQ(api.cuDevicePrimaryCtxRetain(&contexts[d], d), CUDA_SUCCESS)
          << api.lastError();
    }
    ASSERT_EQ(api.cuCtxSetCurrent(contexts[0]), CUDA_SUCCESS);
  }

  void TearDown() override {
    for (int d = 0; d < 2; ++d) {
      if (contexts[d]) {
        EXPECT_EQ(api.cuDevicePrimaryCtxRelease(d), CUDA_SUCCESS);
      }
    }
  }

  std::string lastError() const { return api.lastError(); }

  void use(int device) {
    ASSERT_EQ(api.cuCtxSetCurrent(contexts[device]), CUDA_SUCCESS);
  }

  /// `kStore`'s kernel `name`, loaded in the current context.
  CUfunction kernel(const char *name) {
    CUmodule module = nullptr;
    EXPECT_EQ(api.cuModuleLoadData(&module, kStore), CUDA_SUCCESS)
        << lastError();
    CUfunction function = nullptr;
    EXPECT_EQ(api.cuModuleGetFunction(&function, module, name), CUDA_SUCCESS)
        << lastError();
    return function;
  }

  CUresult store(CUfunction function, CUdeviceptr out, uint32_t value,
                 CUstream stream, unsigned threads = 32) {
    void *params[] = {&out, &value};
    return api.cuLaunchKernel(function, 1, 1, 1, threads, 1, 1, 0, stream,
                              params, nullptr);
  }

  CUresult load(CUfunction function, CUdeviceptr in) {
    void *params[] = {&in};
    return api.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, params,
                              nullptr);
  }

  /// What the kernels see is host memory: the host may look without a copy,
  /// and so without running the queued launches.
  static uint32_t peek(CUdeviceptr address, size_t index = 0) {
    return reinterpret_cast<const volatile uint32_t *>(address)[index];
  }

  static CUmemAllocationProp deviceProperties(int device) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
  }

  static CUmemAccessDesc access(int device, CUmemAccess_flags flags) {
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = device;
    desc.flags = flags;
    return desc;
  }

  ScopedEnvironment devices{"MOSAIC_EMULATOR_DEVICES", "2"};
  FreshDriver fresh;
  const Api &api = *fresh;
  CUcontext contexts[2] = {nullptr, nullptr};
};

TEST_F(DriverMultiDevice, DescribesEachDevice) {
  int count = 0;
  ASSERT_EQ(api.cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 2);
  CUdevice device = -1;
  ASSERT_EQ(api.cuDeviceGet(&device, 1), CUDA_SUCCESS);
  EXPECT_EQ(device, 1);
  EXPECT_EQ(api.cuDeviceGet(&device, 2), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_NE(lastError().find("2 devices, 0 to 1"), std::string::npos)
      << lastError();

  CUuuid uuids[2];
  int buses[2];
  for (int d = 0; d < 2; ++d) {
    char name[64];
    ASSERT_EQ(api.cuDeviceGetName(name, sizeof(name), d), CUDA_SUCCESS);
    EXPECT_STREQ(name, "Mosaic PTX emulator (sm_90a)");
    ASSERT_EQ(api.cuDeviceGetUuid(&uuids[d], d), CUDA_SUCCESS);
    ASSERT_EQ(
        api.cuDeviceGetAttribute(&buses[d], CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d),
        CUDA_SUCCESS);
    int vmm = 0;
    ASSERT_EQ(
        api.cuDeviceGetAttribute(
            &vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, d),
        CUDA_SUCCESS);
    EXPECT_EQ(vmm, 1);
  }
  EXPECT_NE(std::memcmp(uuids[0].bytes, uuids[1].bytes, 16), 0);
  unsigned flags = 1;
  int active = 0;
  ASSERT_EQ(api.cuDevicePrimaryCtxGetState(1, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 1);
  // Every new entry point is found by cuGetProcAddress too.
  for (const char *name :
       {"cuDeviceCanAccessPeer", "cuCtxEnablePeerAccess", "cuMemcpyPeer",
        "cuMemCreate", "cuMemMap", "cuMemSetAccess",
        "cuMemImportFromShareableHandle", "cuMemRetainAllocationHandle",
        "cuPointerGetAttributes"}) {
    void *address = nullptr;
    EXPECT_EQ(api.cuGetProcAddress(name, &address, 12000, 0, nullptr),
              CUDA_SUCCESS)
        << name;
    EXPECT_EQ(address, dlsym(api.handle, name)) << name;
  }
  EXPECT_NE(buses[0], buses[1]);
  CUuuid none;
  EXPECT_EQ(api.cuDeviceGetUuid(&none, 2), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(DriverMultiDevice, EachContextBelongsToItsDevice) {
  EXPECT_NE(contexts[0], contexts[1]);
  for (int d = 0; d < 2; ++d) {
    use(d);
    CUdevice device = -1;
    ASSERT_EQ(api.cuCtxGetDevice(&device), CUDA_SUCCESS);
    EXPECT_EQ(device, d);
  }
  CUcontext created = nullptr;
  ASSERT_EQ(api.cuCtxCreate(&created, nullptr, 0, 1), CUDA_SUCCESS)
      << lastError();
  CUdevice device = -1;
  ASSERT_EQ(api.cuCtxGetDevice(&device), CUDA_SUCCESS);
  EXPECT_EQ(device, 1);
  EXPECT_EQ(api.cuCtxCreate(&created, nullptr, 0, 2),
            CUDA_ERROR_INVALID_DEVICE);

  // Memory belongs to the context's device.
  CUdeviceptr memory = 0;
  ASSERT_EQ(api.cuMemAlloc(&memory, 256), CUDA_SUCCESS);
  int ordinal = -1;
  ASSERT_EQ(api.cuPointerGetAttribute(
                &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, memory),
            CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 1);
  CUcontext owner = nullptr;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_CONTEXT,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void *values[] = {&owner, &ordinal};
  ASSERT_EQ(api.cuPointerGetAttributes(2, attributes, values, memory),
            CUDA_SUCCESS)
      << lastError();
  EXPECT_EQ(owner, created);
  EXPECT_EQ(ordinal, 1);
  // A pointer in no allocation has null attributes, not an error.
  int onStack = 0;
  ASSERT_EQ(api.cuPointerGetAttributes(2, attributes, values,
                                       reinterpret_cast<CUdeviceptr>(&onStack)),
            CUDA_SUCCESS);
  EXPECT_EQ(owner, nullptr);
  EXPECT_EQ(ordinal, -2);
  EXPECT_EQ(api.cuCtxDestroy(created), CUDA_SUCCESS);

  use(0);
  ASSERT_EQ(api.cuMemAlloc(&memory, 256), CUDA_SUCCESS);
  ASSERT_EQ(api.cuPointerGetAttribute(
                &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, memory),
            CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 0);
  EXPECT_EQ(api.cuMemFree(memory), CUDA_SUCCESS);
}

TEST_F(DriverMultiDevice, EnablesPeerAccess) {
  int can = -1;
  ASSERT_EQ(api.cuDeviceCanAccessPeer(&can, 0, 1), CUDA_SUCCESS);
  EXPECT_EQ(can, 1);
  ASSERT_EQ(api.cuDeviceCanAccessPeer(&can, 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(can, 0);
  EXPECT_EQ(api.cuDeviceCanAccessPeer(&can, 0, 2), CUDA_ERROR_INVALID_DEVICE);

  int value = -1;
  ASSERT_EQ(api.cuDeviceGetP2PAttribute(
                &value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 1);
  ASSERT_EQ(api.cuDeviceGetP2PAttribute(
                &value, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, 1, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 1);
  EXPECT_EQ(api.cuDeviceGetP2PAttribute(
                &value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 1, 1),
            CUDA_ERROR_INVALID_DEVICE);

  use(0);
  EXPECT_EQ(api.cuCtxDisablePeerAccess(contexts[1]),
            CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  EXPECT_EQ(api.cuCtxEnablePeerAccess(contexts[1], 1),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuCtxEnablePeerAccess(contexts[0], 0),
            CUDA_ERROR_INVALID_DEVICE);
  EXPECT_NE(lastError().find("own device"), std::string::npos) << lastError();
  EXPECT_EQ(api.cuCtxEnablePeerAccess(nullptr, 0), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(api.cuCtxEnablePeerAccess(contexts[1], 0), CUDA_SUCCESS)
      << lastError();
  EXPECT_EQ(api.cuCtxEnablePeerAccess(contexts[1], 0),
            CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  EXPECT_EQ(api.cuCtxDisablePeerAccess(contexts[1]), CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxDisablePeerAccess(contexts[1]),
            CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
}

TEST_F(DriverMultiDevice, CopiesBetweenDevices) {
  CUdeviceptr memory[2];
  for (int d = 0; d < 2; ++d) {
    use(d);
    ASSERT_EQ(api.cuMemAlloc(&memory[d], 64), CUDA_SUCCESS);
  }
  std::vector<uint32_t> in(16), out(16);
  for (uint32_t i = 0; i < 16; ++i)
    in[i] = 3 * i + 1;
  use(0);
  ASSERT_EQ(api.cuMemcpyHtoD(memory[0], in.data(), 64), CUDA_SUCCESS);
  ASSERT_EQ(
      api.cuMemcpyPeer(memory[1], contexts[1], memory[0], contexts[0], 64),
      CUDA_SUCCESS)
      << lastError();
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), memory[1], 64), CUDA_SUCCESS);
  EXPECT_EQ(in, out);
  EXPECT_EQ(api.cuMemcpyPeer(memory[1], nullptr, memory[0], contexts[0], 64),
            CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(api.cuMemcpyPeerAsync(memory[1], contexts[1], memory[0],
                                  contexts[0], 128, nullptr),
            CUDA_ERROR_INVALID_VALUE);

  // Unified addressing: cuMemcpy between the devices' memory.
  ASSERT_EQ(api.cuMemsetD32(memory[1], 9, 16), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpy(memory[0], memory[1], 64), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoH(out.data(), memory[0], 64), CUDA_SUCCESS);
  EXPECT_EQ(out, std::vector<uint32_t>(16, 9));
}

// Two kernels on two devices, each writing into the other's memory, both
// launched before either stream is synchronized.
TEST_F(DriverMultiDevice, KernelsOnTwoDevicesWriteEachOthersMemory) {
  CUdeviceptr memory[2];
  CUfunction functions[2];
  CUstream streams[2];
  for (int d = 0; d < 2; ++d) {
    use(d);
    ASSERT_EQ(api.cuMemAlloc(&memory[d], 32 * 4), CUDA_SUCCESS);
    functions[d] = kernel("store");
    ASSERT_EQ(api.cuStreamCreate(&streams[d], CU_STREAM_NON_BLOCKING),
              CUDA_SUCCESS);
    ASSERT_EQ(api.cuCtxEnablePeerAccess(contexts[1 - d], 0), CUDA_SUCCESS);
  }
  for (int d = 0; d < 2; ++d) {
    use(d);
    ASSERT_EQ(store(functions[d], memory[1 - d], 100 * (d + 1), streams[d]),
              CUDA_SUCCESS)
        << lastError();
  }
  // Queued, not run.
  EXPECT_EQ(peek(memory[0]), 0u);
  EXPECT_EQ(peek(memory[1]), 0u);
  use(0);
  ASSERT_EQ(api.cuStreamSynchronize(streams[0]), CUDA_SUCCESS) << lastError();
  for (int d = 0; d < 2; ++d) {
    use(d);
    std::vector<uint32_t> values(32);
    ASSERT_EQ(api.cuMemcpyDtoH(values.data(), memory[d], 32 * 4), CUDA_SUCCESS);
    for (uint32_t t = 0; t < 32; ++t)
      EXPECT_EQ(values[t], 100 * (2 - d) + t)
          << "device " << d << " thread " << t;
    EXPECT_EQ(api.cuStreamDestroy(streams[d]), CUDA_SUCCESS);
  }
}

// Device 0 waits for device 1's signal before it signals back: only
// launches that run together get through; one after another, device 0's
// poll gives up. Skipped then (the sequential launchTogether stand-in).
TEST_F(DriverMultiDevice, KernelsOnTwoDevicesWaitForEachOther) {
  CUdeviceptr flags[2];
  CUfunction functions[2];
  CUstream streams[2];
  for (int d = 0; d < 2; ++d) {
    use(d);
    ASSERT_EQ(api.cuMemAlloc(&flags[d], 8), CUDA_SUCCESS);
    ASSERT_EQ(api.cuMemsetD32(flags[d], 0, 2), CUDA_SUCCESS);
    CUmodule module = nullptr;
    ASSERT_EQ(api.cuModuleLoadData(&module, kHandshake), CUDA_SUCCESS)
        << lastError();
    ASSERT_EQ(api.cuModuleGetFunction(&functions[d], module, "handshake"),
              CUDA_SUCCESS);
    ASSERT_EQ(api.cuStreamCreate(&streams[d], CU_STREAM_NON_BLOCKING),
              CUDA_SUCCESS);
    ASSERT_EQ(api.cuCtxEnablePeerAccess(contexts[1 - d], 0), CUDA_SUCCESS);
  }
  for (int d = 0; d < 2; ++d) {
    use(d);
    uint32_t signalFirst = d;
    void *params[] = {&flags[d], &flags[1 - d], &signalFirst};
    ASSERT_EQ(api.cuLaunchKernel(functions[d], 1, 1, 1, 1, 1, 1, 0, streams[d],
                                 params, nullptr),
              CUDA_SUCCESS)
        << lastError();
  }
  use(0);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS) << api.lastReport();
  if (peek(flags[0], 1) == 0)
    GTEST_SKIP() << "launchTogether ran the launches one after another";
  EXPECT_EQ(peek(flags[1], 1), 1u);
  EXPECT_EQ(peek(flags[0]), 1u);
  EXPECT_EQ(peek(flags[1]), 1u);
}

TEST_F(DriverMultiDevice, AKernelReadingAPeerWithoutAccessFaults) {
  use(1);
  CUdeviceptr remote = 0;
  ASSERT_EQ(api.cuMemAlloc(&remote, 256), CUDA_SUCCESS);
  use(0);
  CUfunction function = kernel("load");
  ASSERT_EQ(load(function, remote), CUDA_SUCCESS) << lastError();
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  std::string report = api.lastReport();
  EXPECT_NE(report.find("memory of device 1"), std::string::npos) << report;
  EXPECT_NE(report.find("device 0 may not access"), std::string::npos)
      << report;
  // Device 1's context is not affected; device 0's is until reset.
  use(1);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);

  // With peer access, the same read is allowed.
  use(0);
  function = kernel("load");
  ASSERT_EQ(api.cuCtxEnablePeerAccess(contexts[1], 0), CUDA_SUCCESS);
  ASSERT_EQ(load(function, remote), CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS) << api.lastReport();
}

TEST_F(DriverMultiDevice, RunsEachStreamInOrder) {
  CUfunction function = kernel("store");
  CUdeviceptr memory = 0;
  ASSERT_EQ(api.cuMemAlloc(&memory, 32 * 4), CUDA_SUCCESS);
  CUstream blocking = nullptr, first = nullptr, second = nullptr;
  ASSERT_EQ(api.cuStreamCreate(&blocking, 0), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamCreate(&first, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamCreate(&second, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

  // The legacy default stream waits for the blocking streams' work.
  ASSERT_EQ(store(function, memory, 100, blocking), CUDA_SUCCESS);
  ASSERT_EQ(store(function, memory, 200, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(peek(memory), 0u);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS) << lastError();
  EXPECT_EQ(peek(memory), 200u);

  // A stream waiting for an event runs after the work before the record.
  CUevent event = nullptr;
  ASSERT_EQ(api.cuEventCreate(&event, 0), CUDA_SUCCESS);
  ASSERT_EQ(store(function, memory, 300, first), CUDA_SUCCESS);
  ASSERT_EQ(api.cuEventRecord(event, first), CUDA_SUCCESS);
  ASSERT_EQ(api.cuStreamWaitEvent(second, event, 0), CUDA_SUCCESS);
  ASSERT_EQ(store(function, memory, 400, second), CUDA_SUCCESS);
  EXPECT_EQ(peek(memory), 200u);
  // Querying the event runs the queue.
  EXPECT_EQ(api.cuEventQuery(event), CUDA_SUCCESS);
  EXPECT_EQ(peek(memory), 400u);
  EXPECT_EQ(api.cuStreamWaitEvent(second, event, 7), CUDA_ERROR_INVALID_VALUE);

  // The extensions describe the launches made so far.
  ASSERT_EQ(store(function, memory, 500, second), CUDA_SUCCESS);
  unsigned long long warps = 0;
  api.lastLaunchCounts(&warps, nullptr, nullptr);
  EXPECT_GT(warps, 0u);
  EXPECT_EQ(peek(memory), 500u);

  // Unloading a module runs its queued launches first.
  CUmodule module = nullptr;
  ASSERT_EQ(api.cuModuleLoadData(&module, kStore), CUDA_SUCCESS);
  CUfunction unloaded = nullptr;
  ASSERT_EQ(api.cuModuleGetFunction(&unloaded, module, "store"), CUDA_SUCCESS);
  ASSERT_EQ(store(unloaded, memory, 700, second), CUDA_SUCCESS);
  EXPECT_EQ(peek(memory), 500u);
  ASSERT_EQ(api.cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(peek(memory), 700u);

  // A stream of another context cannot take the current context's launch.
  use(1);
  EXPECT_EQ(store(function, memory, 600, first), CUDA_ERROR_INVALID_HANDLE);
  use(0);
  EXPECT_EQ(api.cuEventDestroy(event), CUDA_SUCCESS);
  for (CUstream stream : {blocking, first, second})
    EXPECT_EQ(api.cuStreamDestroy(stream), CUDA_SUCCESS);
}

TEST_F(DriverMultiDevice, ChecksAllocationProperties) {
  size_t granularity = 0;
  CUmemAllocationProp prop = deviceProperties(1);
  ASSERT_EQ(api.cuMemGetAllocationGranularity(&granularity, &prop,
                                              CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_SUCCESS);
  EXPECT_EQ(granularity, kGranularity);
  ASSERT_EQ(api.cuMemGetAllocationGranularity(
                &granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
            CUDA_SUCCESS);
  EXPECT_EQ(granularity, kGranularity);

  CUmemGenericAllocationHandle handle = 0;
  CUmemAllocationProp bad = prop;
  bad.type = CU_MEM_ALLOCATION_TYPE_INVALID;
  EXPECT_EQ(api.cuMemCreate(&handle, kGranularity, &bad, 0),
            CUDA_ERROR_INVALID_VALUE);
  bad = prop;
  bad.location.type = CU_MEM_LOCATION_TYPE_HOST;
  EXPECT_EQ(api.cuMemCreate(&handle, kGranularity, &bad, 0),
            CUDA_ERROR_INVALID_VALUE);
  bad = prop;
  bad.location.id = 2;
  EXPECT_EQ(api.cuMemCreate(&handle, kGranularity, &bad, 0),
            CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(api.cuMemGetAllocationGranularity(&granularity, &bad,
                                              CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_ERROR_INVALID_DEVICE);
  bad = prop;
  bad.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
  EXPECT_EQ(api.cuMemCreate(&handle, kGranularity, &bad, 0),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_NE(lastError().find("POSIX file descriptors only"), std::string::npos)
      << lastError();
  EXPECT_EQ(api.cuMemCreate(&handle, kGranularity / 2, &prop, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(lastError().find("granularity"), std::string::npos) << lastError();
  EXPECT_EQ(api.cuMemCreate(&handle, kGranularity, &prop, 1),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemCreate(&handle, kGranularity, nullptr, 0),
            CUDA_ERROR_INVALID_VALUE);

  ASSERT_EQ(api.cuMemCreate(&handle, 2 * kGranularity, &prop, 0), CUDA_SUCCESS)
      << lastError();
  CUmemAllocationProp got{};
  ASSERT_EQ(api.cuMemGetAllocationPropertiesFromHandle(&got, handle),
            CUDA_SUCCESS);
  EXPECT_EQ(got.location.id, 1);
  EXPECT_EQ(got.requestedHandleTypes, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  int fd = -1;
  EXPECT_EQ(api.cuMemExportToShareableHandle(&fd, handle,
                                             CU_MEM_HANDLE_TYPE_WIN32, 0),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemGetAllocationPropertiesFromHandle(&got, handle),
            CUDA_ERROR_INVALID_VALUE);

  // Memory created without a shareable handle type cannot be exported.
  CUmemAllocationProp unshared = prop;
  unshared.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  ASSERT_EQ(api.cuMemCreate(&handle, kGranularity, &unshared, 0), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemExportToShareableHandle(
                &fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemRelease(handle), CUDA_SUCCESS);

  EXPECT_EQ(api.cuMemGetAllocationGranularity(
                &granularity, &prop, CUmemAllocationGranularity_flags(2)),
            CUDA_ERROR_INVALID_VALUE);

  // Memory of a device this process does not have.
  int foreign = memfd_create("mosaic-emulator-device-5", MFD_CLOEXEC);
  ASSERT_GE(foreign, 0);
  ASSERT_EQ(ftruncate(foreign, kGranularity), 0);
  EXPECT_EQ(api.cuMemImportFromShareableHandle(
                &handle, reinterpret_cast<void *>(intptr_t(foreign)),
                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            CUDA_ERROR_INVALID_DEVICE);
  EXPECT_NE(lastError().find("device 5"), std::string::npos) << lastError();
  close(foreign);

  // Only what the emulator exported can be imported.
  int pipeEnds[2];
  ASSERT_EQ(pipe(pipeEnds), 0);
  EXPECT_EQ(api.cuMemImportFromShareableHandle(
                &handle, reinterpret_cast<void *>(intptr_t(pipeEnds[0])),
                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemImportFromShareableHandle(
                &handle, reinterpret_cast<void *>(intptr_t(pipeEnds[0])),
                CU_MEM_HANDLE_TYPE_FABRIC),
            CUDA_ERROR_NOT_SUPPORTED);
  close(pipeEnds[0]);
  close(pipeEnds[1]);
}

TEST_F(DriverMultiDevice, MapsVirtualMemory) {
  CUmemAllocationProp prop = deviceProperties(1);
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(api.cuMemCreate(&handle, kGranularity, &prop, 0), CUDA_SUCCESS);
  CUdeviceptr base = 0;
  EXPECT_EQ(api.cuMemAddressReserve(&base, kGranularity + 1, 0, 0, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(
      api.cuMemAddressReserve(&base, kGranularity, 3 * kGranularity, 0, 0),
      CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemAddressReserve(&base, kGranularity, 0, 1, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemAddressReserve(&base, kGranularity, 0, 0, 1),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(
      api.cuMemAddressReserve(&base, 4 * kGranularity, 4 * kGranularity, 0, 0),
      CUDA_SUCCESS)
      << lastError();
  EXPECT_EQ(base % (4 * kGranularity), 0u);

  EXPECT_EQ(api.cuMemMap(base, kGranularity, kGranularity, handle, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemMap(base, 2 * kGranularity, 0, handle, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemMap(base + 4 * kGranularity, kGranularity, 0, handle, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(lastError().find("cuMemAddressReserve"), std::string::npos)
      << lastError();
  EXPECT_EQ(api.cuMemMap(base, kGranularity, 0, handle + 8, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemMap(base + 4096, kGranularity, 0, handle, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemMap(base, kGranularity, 0, handle, 1),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(api.cuMemMap(base, kGranularity, 0, handle, 0), CUDA_SUCCESS)
      << lastError();
  EXPECT_EQ(api.cuMemMap(base, kGranularity, 0, handle, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_NE(lastError().find("overlaps"), std::string::npos) << lastError();
  // The same memory may be mapped twice.
  ASSERT_EQ(api.cuMemMap(base + kGranularity, kGranularity, 0, handle, 0),
            CUDA_SUCCESS)
      << lastError();

  int ordinal = -1;
  ASSERT_EQ(api.cuPointerGetAttribute(
                &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, base + 64),
            CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 1);
  uint32_t value = 42, back = 0;
  ASSERT_EQ(api.cuMemcpyHtoD(base + 64, &value, 4), CUDA_SUCCESS)
      << lastError();
  ASSERT_EQ(api.cuMemcpyDtoH(&back, base + kGranularity + 64, 4), CUDA_SUCCESS);
  EXPECT_EQ(back, 42u);

  CUmemAccessDesc grant = access(0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(api.cuMemSetAccess(base, 3 * kGranularity, &grant, 1),
            CUDA_ERROR_INVALID_VALUE);
  CUmemAccessDesc wrong = access(2, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  EXPECT_EQ(api.cuMemSetAccess(base, kGranularity, &wrong, 1),
            CUDA_ERROR_INVALID_DEVICE);
  CUmemAccessDesc unknown = access(0, CUmemAccess_flags(2));
  EXPECT_EQ(api.cuMemSetAccess(base, kGranularity, &unknown, 1),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(api.cuMemSetAccess(base, kGranularity, &grant, 1), CUDA_SUCCESS)
      << lastError();
  unsigned long long flags = 7;
  CUmemLocation device0 = grant.location;
  ASSERT_EQ(api.cuMemGetAccess(&flags, &device0, base + 100), CUDA_SUCCESS);
  EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  ASSERT_EQ(api.cuMemGetAccess(&flags, &device0, base + kGranularity),
            CUDA_SUCCESS);
  EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_NONE);
  EXPECT_EQ(api.cuMemGetAccess(&flags, &device0, base + 3 * kGranularity),
            CUDA_ERROR_INVALID_VALUE);

  // Device 0 writes the granted mapping; the other mapping faults.
  CUfunction function = kernel("store");
  ASSERT_EQ(store(function, base, 7, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSynchronize(), CUDA_SUCCESS) << api.lastReport();
  EXPECT_EQ(peek(base + kGranularity, 31), 38u);
  ASSERT_EQ(store(function, base + kGranularity, 7, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  std::string report = api.lastReport();
  EXPECT_NE(report.find("memory of device 1, which device 0 may not access"),
            std::string::npos)
      << report;
  ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  // Revoking the access makes the first mapping fault too.
  CUmemAccessDesc revoke = access(0, CU_MEM_ACCESS_FLAGS_PROT_NONE);
  ASSERT_EQ(api.cuMemSetAccess(base, kGranularity, &revoke, 1), CUDA_SUCCESS);
  function = kernel("store");
  ASSERT_EQ(store(function, base, 7, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(api.cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  ASSERT_EQ(api.cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);

  CUmemGenericAllocationHandle retained = 0;
  ASSERT_EQ(api.cuMemRetainAllocationHandle(
                &retained, reinterpret_cast<void *>(base + kGranularity + 8)),
            CUDA_SUCCESS);
  EXPECT_EQ(retained, handle);
  EXPECT_EQ(api.cuMemRetainAllocationHandle(
                &retained, reinterpret_cast<void *>(base + 3 * kGranularity)),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemRelease(retained), CUDA_SUCCESS);

  EXPECT_EQ(api.cuMemFree(base), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemAddressFree(base, 4 * kGranularity),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemUnmap(base, kGranularity / 2), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemUnmap(base + 2 * kGranularity, kGranularity),
            CUDA_ERROR_INVALID_VALUE);
  // Released while mapped: the memory lives until the last unmap. It holds
  // what the first kernel's thread 16 stored.
  ASSERT_EQ(api.cuMemRelease(handle), CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemcpyDtoH(&back, base + 64, 4), CUDA_SUCCESS);
  EXPECT_EQ(back, 7u + 16u);
  ASSERT_EQ(api.cuMemUnmap(base, 2 * kGranularity), CUDA_SUCCESS)
      << lastError();
  EXPECT_EQ(api.cuMemcpyDtoH(&back, base + 64, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemAddressFree(base, kGranularity), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(api.cuMemAddressFree(base, 4 * kGranularity), CUDA_SUCCESS);

  // A requested address is honoured when it is free.
  CUdeviceptr again = 0;
  ASSERT_EQ(api.cuMemAddressReserve(&again, kGranularity, 0, base, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(again, base);
  EXPECT_EQ(api.cuMemAddressFree(again, kGranularity), CUDA_SUCCESS);
}

/// Sends `fd` over the socket `channel` (SCM_RIGHTS).
bool sendDescriptor(int channel, int fd) {
  char byte = 0;
  iovec io{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  cmsghdr *header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
  return sendmsg(channel, &message, 0) == 1;
}

int receiveDescriptor(int channel) {
  char byte = 0;
  iovec io{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  if (recvmsg(channel, &message, 0) != 1)
    return -1;
  cmsghdr *header = CMSG_FIRSTHDR(&message);
  if (!header || header->cmsg_type != SCM_RIGHTS)
    return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(header), sizeof(int));
  return fd;
}

/// The child of SharesMemoryWithAnotherProcess, on its own copy of the
/// driver: imports the descriptor, maps it and has a kernel on device 1 (the
/// memory's owner) write to it, then queues a second kernel it does not
/// wait for. The result says which step failed.
int importAndWrite(int channel) {
  FreshDriver child;
  const Api &api = *child;
  CUcontext context = nullptr;
  if (!api.complete() || api.cuInit(0) != CUDA_SUCCESS ||
      api.cuDevicePrimaryCtxRetain(&context, 1) != CUDA_SUCCESS ||
      api.cuCtxSetCurrent(context) != CUDA_SUCCESS)
    return 2;
  int fd = receiveDescriptor(channel);
  if (fd < 0)
    return 3;
  CUmemGenericAllocationHandle handle = 0;
  if (api.cuMemImportFromShareableHandle(
          &handle, reinterpret_cast<void *>(intptr_t(fd)),
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != CUDA_SUCCESS)
    return 4;
  close(fd);
  CUmemAllocationProp prop{};
  if (api.cuMemGetAllocationPropertiesFromHandle(&prop, handle) !=
          CUDA_SUCCESS ||
      prop.location.id != 1)
    return 5;
  CUdeviceptr base = 0;
  CUmemAccessDesc desc{};
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = 1;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (api.cuMemAddressReserve(&base, kGranularity, 0, 0, 0) != CUDA_SUCCESS ||
      api.cuMemMap(base, kGranularity, 0, handle, 0) != CUDA_SUCCESS ||
      api.cuMemSetAccess(base, kGranularity, &desc, 1) != CUDA_SUCCESS)
    return 6;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  if (api.cuModuleLoadData(&module, kStore) != CUDA_SUCCESS ||
      api.cuModuleGetFunction(&function, module, "store") != CUDA_SUCCESS)
    return 7;
  uint32_t value = 1000;
  void *params[] = {&base, &value};
  if (api.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, params,
                         nullptr) != CUDA_SUCCESS ||
      api.cuCtxSynchronize() != CUDA_SUCCESS)
    return 8;
  // Left queued: it runs when the child exits.
  CUdeviceptr unsynchronized = base + 32 * 4;
  value = 2000;
  void *later[] = {&unsynchronized, &value};
  if (api.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, later,
                         nullptr) != CUDA_SUCCESS)
    return 9;
  return 0;
}

TEST_F(DriverMultiDevice, SharesMemoryWithAnotherProcess) {
  CUmemAllocationProp prop = deviceProperties(1);
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(api.cuMemCreate(&handle, kGranularity, &prop, 0), CUDA_SUCCESS);
  CUdeviceptr base = 0;
  ASSERT_EQ(api.cuMemAddressReserve(&base, kGranularity, 0, 0, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(api.cuMemMap(base, kGranularity, 0, handle, 0), CUDA_SUCCESS);
  CUmemAccessDesc desc = access(1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  ASSERT_EQ(api.cuMemSetAccess(base, kGranularity, &desc, 1), CUDA_SUCCESS);
  int fd = -1;
  ASSERT_EQ(api.cuMemExportToShareableHandle(
                &fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            CUDA_SUCCESS)
      << lastError();

  int channel[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, channel), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(channel[0]);
    int failedStep = importAndWrite(channel[1]);
    // exit, not _exit: the driver runs the queued kernel at exit.
    if (failedStep == 0)
      std::exit(0);
    _exit(failedStep);
  }
  close(channel[1]);
  ASSERT_TRUE(sendDescriptor(channel[0], fd));
  close(fd);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  close(channel[0]);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0)
      << "the child failed at step " << WEXITSTATUS(status);

  use(1);
  std::vector<uint32_t> values(64);
  ASSERT_EQ(api.cuMemcpyDtoH(values.data(), base, 64 * 4), CUDA_SUCCESS);
  for (uint32_t t = 0; t < 32; ++t) {
    EXPECT_EQ(values[t], 1000 + t) << "thread " << t;
    EXPECT_EQ(values[32 + t], 2000 + t)
        << "thread " << t << " of the kernel run at the child's exit";
  }
  EXPECT_EQ(api.cuMemUnmap(base, kGranularity), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemRelease(handle), CUDA_SUCCESS);
  EXPECT_EQ(api.cuMemAddressFree(base, kGranularity), CUDA_SUCCESS);
}

} // namespace

#endif // MOSAIC_EMULATOR_DRIVER
