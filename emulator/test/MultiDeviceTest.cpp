//===- MultiDeviceTest.cpp - Co-scheduled launches on several devices ----===//
//
// A ring of D devices, each running the same kernel in one launchTogether
// group: device d writes 64 words into device d+1's buffer (st.global, or
// a TMA store), signals device d+1's semaphore with
// `red.release.sys.global.add.u32`, waits on its own semaphore with an
// `ld.acquire.sys` loop, and reads what device d-1 wrote. The correct ring
// runs with no hazard on 2, 3 and 8 devices, with the default schedule and
// random ones; each mutant (a relaxed wait, a .gpu-scope release, a TMA
// store signalled after only `wait_group.read`, a wait for a count nobody
// reaches, no peer access) is reported with both devices and both lines
// (docs/RationaleEmulator.md, "Kernels on several devices").
//
//===----------------------------------------------------------------------===//

#include "TestKernels.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <tuple>
#include <vector>

namespace mosaic::emulator {
namespace {

using test::lineOf;
using test::namesLine;
using test::ptxModule;

std::string replaced(std::string text, std::string_view key,
                     std::string_view value) {
  std::string pattern = "{{" + std::string(key) + "}}";
  for (size_t at = text.find(pattern); at != std::string::npos;
       at = text.find(pattern, at + value.size()))
    text.replace(at, pattern.size(), value);
  return text;
}

/// How a ring kernel signals and waits.
struct RingVariant {
  /// Stores the 64 words into the peer: threads' st.global, or one TMA
  /// store of the 8x8 tile followed by `{{TMA_WAIT}}`.
  bool tma = false;
  std::string tmaWait = "cp.async.bulk.wait_group 0;";
  std::string signal = "red.release.sys.global.add.u32 [%ns], 1;";
  std::string waitLoad = "ld.acquire.sys.global.u32 %s, [%ms];";
  std::string afterWait = "// (the acquire is the load's)";
  uint32_t count = 1;
};

std::string ringKernel(const RingVariant &variant) {
  std::string text = R"PTX(
.visible .entry ring(.param .u64 next_data, .param .u64 next_sem,
                     .param .u64 my_data, .param .u64 my_sem,
                     .param .u64 out, .param .u32 value,
                     .param .align 64 .b8 map[128])
.maxntid 64, 1, 1
{
  .reg .b32 %t, %v, %s, %x, %addr;
  .reg .b64 %nd, %ns, %md, %ms, %o, %a;
  .reg .pred %p0, %p1;
  .shared .align 128 .b8 tile[256];
  ld.param.u64 %nd, [next_data];
  ld.param.u64 %ns, [next_sem];
  ld.param.u64 %md, [my_data];
  ld.param.u64 %ms, [my_sem];
  ld.param.u64 %o, [out];
  ld.param.u32 %v, [value];
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  add.u32 %x, %v, %t;
  {{STORE}}
  bar.sync 0;
  @!%p0 bra AFTER;
  {{TMA}}
  {{SIGNAL}}   // SIGNAL
WAIT:
  {{WAIT_LOAD}}   // WAIT
  setp.lt.u32 %p1, %s, {{COUNT}};
  @%p1 bra WAIT;
  {{AFTER_WAIT}}
  atom.relaxed.sys.global.add.s32 %s, [%ms], -{{COUNT}};
AFTER:
  bar.sync 0;
  mul.wide.u32 %a, %t, 4;
  add.s64 %a, %md, %a;
  ld.global.u32 %x, [%a];            // DATA_READ
  mul.wide.u32 %a, %t, 4;
  add.s64 %a, %o, %a;
  st.global.u32 [%a], %x;
  ret;
}
)PTX";
  std::string store = variant.tma
                          ? "mov.u32 %addr, tile;\n"
                            "  mad.lo.u32 %addr, %t, 4, %addr;\n"
                            "  st.shared.u32 [%addr], %x;\n"
                            "  fence.proxy.async.shared::cta;"
                          : "mul.wide.u32 %a, %t, 4;\n"
                            "  add.s64 %a, %nd, %a;\n"
                            "  st.global.u32 [%a], %x;          // DATA_WRITE";
  std::string tma = variant.tma
                        ? "cp.async.bulk.tensor.2d.global.shared::cta.tile."
                          "bulk_group [map, {0, 0}], [tile];   // DATA_WRITE\n"
                          "  cp.async.bulk.commit_group;\n  " +
                              variant.tmaWait + "   // TMA_WAIT"
                        : "// (no TMA)";
  text = replaced(text, "STORE", store);
  text = replaced(text, "TMA", tma);
  text = replaced(text, "SIGNAL", variant.signal);
  text = replaced(text, "WAIT_LOAD", variant.waitLoad);
  text = replaced(text, "AFTER_WAIT", variant.afterWait);
  return replaced(text, "COUNT", std::to_string(variant.count));
}

/// Device memory of `device`, zero-filled, viewed from the host.
test::DeviceBuffer allocateOn(DeviceMemory &memory, size_t bytes,
                              uint32_t device) {
  test::DeviceBuffer buffer;
  Expected<uint64_t> address = memory.allocate(bytes, device);
  if (!address.ok()) {
    ADD_FAILURE() << address.message();
    return buffer;
  }
  buffer.address = *address;
  buffer.host = memory.translate(*address, bytes);
  buffer.bytes = bytes;
  std::memset(buffer.host, 0, bytes);
  return buffer;
}

uint32_t valueOf(uint32_t device) { return 1000 * (device + 1); }

/// The ring's buffers on `devices` devices, and its group of launches.
struct Ring {
  std::string ptx;
  std::shared_ptr<const Module> module;
  DeviceMemory memory;
  std::vector<test::DeviceBuffer> data, semaphores, outputs;
  std::vector<DeviceLaunch> launches;

  /// With `sharedSemaphore`, device 0's semaphore lies in a mapping that
  /// another process also maps (DeviceMemory::markShared).
  Ring(const RingVariant &variant, uint32_t devices, bool peerAccess = true,
       bool sharedSemaphore = false)
      : ptx(ptxModule(ringKernel(variant))) {
    Expected<std::shared_ptr<const Module>> loaded = Module::load(ptx);
    if (!loaded.ok()) {
      ADD_FAILURE() << loaded.message();
      return;
    }
    module = *loaded;
    for (uint32_t d = 0; d < devices; ++d) {
      data.push_back(allocateOn(memory, 256, d));
      semaphores.push_back(allocateOn(memory, 4, d));
      outputs.push_back(allocateOn(memory, 256, d));
    }
    if (sharedSemaphore) {
      void *page = mmap(nullptr, kPage, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (page == MAP_FAILED) {
        ADD_FAILURE() << "mmap failed";
        return;
      }
      mapping = page;
      uint64_t address = reinterpret_cast<uint64_t>(page);
      EXPECT_TRUE(memory.addMapping(address, kPage, 0).ok());
      EXPECT_TRUE(memory.markShared(address).ok());
      for (uint32_t d = 1; d < devices; ++d)
        EXPECT_TRUE(memory.grantAccess(address, d).ok());
      semaphores[0].address = address;
      semaphores[0].host = static_cast<uint8_t *>(page);
    }
    for (uint32_t d = 0; d < devices; ++d) {
      uint32_t next = (d + 1) % devices;
      if (peerAccess)
        memory.setPeerAccess(d, next, true);
      test::Parameters parameters(*module->kernel("ring"));
      auto map = test::tensorMap2d(data[next].address, test::kTensorFloat32, 8,
                                   8, 8, 8);
      parameters.set("next_data", data[next].address)
          .set("next_sem", semaphores[next].address)
          .set("my_data", data[d].address)
          .set("my_sem", semaphores[d].address)
          .set("out", outputs[d].address)
          .set("value", valueOf(d))
          .set("map", map.data(), map.size());
      DeviceLaunch launch;
      launch.module = module.get();
      launch.kernel = "ring";
      launch.config.block = {64, 1, 1};
      launch.config.parameters = parameters.bytes();
      launch.device = d;
      launches.push_back(launch);
    }
  }

  ~Ring() {
    if (mapping) {
      (void)memory.removeMapping(reinterpret_cast<uint64_t>(mapping));
      munmap(mapping, kPage);
    }
  }

  uint32_t line(std::string_view marker) const { return lineOf(ptx, marker); }

  static constexpr size_t kPage = 4096;
  void *mapping = nullptr;

  std::vector<LaunchReport> run(const Options &options) {
    return launchTogether(launches, memory, options);
  }
};

class MultiDeviceTest
    : public ::testing::TestWithParam<std::tuple<uint32_t, bool>> {
protected:
  uint32_t devices() const { return std::get<0>(GetParam()); }
  Options options() const {
    Options options = test::testOptions();
    options.randomSchedule = std::get<1>(GetParam());
    options.seed = 7;
    return options;
  }
};

void expectAllOk(const std::vector<LaunchReport> &reports) {
  for (const LaunchReport &report : reports) {
    EXPECT_TRUE(report.ok) << report.message;
    EXPECT_FALSE(report.hazard) << report.message;
  }
}

/// Every report failed with `kind`; returns the (shared) message.
std::string expectAllFailed(const std::vector<LaunchReport> &reports,
                            FaultKind kind) {
  for (const LaunchReport &report : reports) {
    EXPECT_FALSE(report.ok);
    EXPECT_EQ(report.kind, kind) << report.message;
  }
  return reports.empty() ? std::string() : reports[0].message;
}

void expectCrossDeviceHazard(const Ring &ring, const std::string &message,
                             const char *writeMarker) {
  EXPECT_NE(message.find("data race on global memory between devices"),
            std::string::npos)
      << message;
  EXPECT_TRUE(namesLine(message, ring.line(writeMarker))) << message;
  EXPECT_TRUE(namesLine(message, ring.line("// DATA_READ"))) << message;
  // Both sides name their device: the reader's and its predecessor's.
  size_t devices = 0;
  for (size_t at = message.find("device "); at != std::string::npos;
       at = message.find("device ", at + 1))
    ++devices;
  EXPECT_GE(devices, 2u) << message;
}

TEST_P(MultiDeviceTest, RingWithReleaseAndAcquireAtSystemScope) {
  Ring ring(RingVariant(), devices());
  ASSERT_TRUE(ring.module);
  expectAllOk(ring.run(options()));
  for (uint32_t d = 0; d < devices(); ++d) {
    uint32_t previous = (d + devices() - 1) % devices();
    for (uint32_t t = 0; t < 64; ++t)
      ASSERT_EQ(ring.outputs[d].as<uint32_t>()[t], valueOf(previous) + t)
          << "device " << d << " thread " << t;
    EXPECT_EQ(ring.semaphores[d].as<uint32_t>()[0], 0u);
  }
}

TEST_P(MultiDeviceTest, RelaxedWaitIsAHazard) {
  RingVariant variant;
  variant.waitLoad = "ld.relaxed.sys.global.u32 %s, [%ms];";
  Ring ring(variant, devices());
  ASSERT_TRUE(ring.module);
  std::string message = expectAllFailed(ring.run(options()), FaultKind::Hazard);
  expectCrossDeviceHazard(ring, message, "// DATA_WRITE");
}

TEST_P(MultiDeviceTest, GpuScopeReleaseIsAHazard) {
  RingVariant variant;
  variant.signal = "red.release.gpu.global.add.u32 [%ns], 1;";
  Ring ring(variant, devices());
  ASSERT_TRUE(ring.module);
  std::string message = expectAllFailed(ring.run(options()), FaultKind::Hazard);
  // The .gpu-scope red races with the peer's .sys acquire of the semaphore
  // (their scopes do not both include the other device), or, where the
  // data is read first, the data is unordered: either way both devices'
  // lines are named, and why the release does not count.
  EXPECT_NE(message.find("data race on global memory between devices"),
            std::string::npos)
      << message;
  EXPECT_TRUE(namesLine(message, ring.line("// SIGNAL")) ||
              namesLine(message, ring.line("// DATA_WRITE")))
      << message;
  EXPECT_NE(message.find(".gpu scope, which does not order accesses of "
                         "different devices"),
            std::string::npos)
      << message;
}

TEST_P(MultiDeviceTest, FencesWithRelaxedAccessesRelease) {
  RingVariant variant;
  variant.signal = "fence.acq_rel.sys;\n  red.relaxed.sys.global.add.u32 "
                   "[%ns], 1;";
  variant.waitLoad = "ld.relaxed.sys.global.u32 %s, [%ms];";
  variant.afterWait = "fence.acq_rel.sys;";
  Ring ring(variant, devices());
  ASSERT_TRUE(ring.module);
  expectAllOk(ring.run(options()));
  for (uint32_t d = 0; d < devices(); ++d) {
    uint32_t previous = (d + devices() - 1) % devices();
    EXPECT_EQ(ring.outputs[d].as<uint32_t>()[5], valueOf(previous) + 5);
  }
}

TEST_P(MultiDeviceTest, MembarAndVolatileAccessesRelease) {
  RingVariant variant;
  variant.signal = "membar.sys;\n  red.relaxed.sys.global.add.u32 [%ns], 1;";
  variant.waitLoad = "ld.volatile.global.u32 %s, [%ms];";
  variant.afterWait = "membar.sys;";
  Ring ring(variant, devices());
  ASSERT_TRUE(ring.module);
  expectAllOk(ring.run(options()));
}

TEST_P(MultiDeviceTest, TmaStoreSignalledAfterItsWritesWerePerformed) {
  RingVariant variant;
  variant.tma = true;
  Ring ring(variant, devices());
  ASSERT_TRUE(ring.module);
  expectAllOk(ring.run(options()));
  for (uint32_t d = 0; d < devices(); ++d) {
    uint32_t previous = (d + devices() - 1) % devices();
    EXPECT_EQ(ring.outputs[d].as<uint32_t>()[63], valueOf(previous) + 63);
  }
}

TEST_P(MultiDeviceTest, TmaStoreSignalledAfterOnlyItsReadsIsAHazard) {
  RingVariant variant;
  variant.tma = true;
  variant.tmaWait = "cp.async.bulk.wait_group.read 0;";
  Ring ring(variant, devices());
  ASSERT_TRUE(ring.module);
  std::string message = expectAllFailed(ring.run(options()), FaultKind::Hazard);
  expectCrossDeviceHazard(ring, message, "// DATA_WRITE");
  EXPECT_NE(message.find("the TMA store issued by device"), std::string::npos)
      << message;
  EXPECT_NE(message.find("not the .read form"), std::string::npos) << message;
}

TEST_P(MultiDeviceTest, WaitForACountNobodyReachesDeadlocks) {
  RingVariant variant;
  variant.count = 2;
  Ring ring(variant, devices());
  ASSERT_TRUE(ring.module);
  std::string message = expectAllFailed(ring.run(options()), FaultKind::Hazard);
  EXPECT_EQ(message.rfind("hazard: deadlock", 0), 0u) << message;
  for (uint32_t d = 0; d < devices(); ++d)
    EXPECT_NE(message.find("device " + std::to_string(d) + ":"),
              std::string::npos)
        << message;
  EXPECT_NE(message.find("polls global address 0x"), std::string::npos)
      << message;
  EXPECT_NE(message.find("keeps reading 1"), std::string::npos) << message;
  EXPECT_TRUE(namesLine(message, ring.line("// WAIT"))) << message;
  // The other warp waits at the CTA barrier for thread 0's.
  EXPECT_NE(message.find("waits at barrier 0"), std::string::npos) << message;
}

TEST_P(MultiDeviceTest, PeerAccessWithoutPeerAccessEnabledFaults) {
  Ring ring(RingVariant(), devices(), /*peerAccess=*/false);
  ASSERT_TRUE(ring.module);
  std::string message =
      expectAllFailed(ring.run(options()), FaultKind::IllegalAddress);
  EXPECT_NE(message.find("device "), std::string::npos) << message;
  EXPECT_TRUE(namesLine(message, ring.line("// DATA_WRITE"))) << message;
}

// A warp polling memory another process maps may yet see that process's
// write: the group is reported as deadlocked only after the poll timeout.
TEST(MultiDeviceDeadlock, PollOfMemorySharedWithAnotherProcessTimesOut) {
  RingVariant variant;
  variant.count = 2;
  Ring ring(variant, 2, true, /*sharedSemaphore=*/true);
  ASSERT_TRUE(ring.module);
  Options options = test::testOptions();
  options.pollTimeoutSeconds = 0.3;
  auto start = std::chrono::steady_clock::now();
  std::string message = expectAllFailed(ring.run(options), FaultKind::Hazard);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_EQ(message.rfind("hazard: deadlock", 0), 0u) << message;
  EXPECT_GE(seconds, 0.3);
  EXPECT_NE(message.find("polls global address"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Devices, MultiDeviceTest,
    ::testing::Combine(::testing::Values(2u, 3u, 8u), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<uint32_t, bool>> &info) {
      return std::to_string(std::get<0>(info.param)) + "Devices" +
             (std::get<1>(info.param) ? "RandomSchedule" : "RoundRobin");
    });

} // namespace
} // namespace mosaic::emulator
