//===- MultiDeviceTest.cpp - Symmetric memory and the rendezvous, no GPU -===//
//
// Runs the multi-device runtime on the fake CUDA driver (FakeCudaDriver.cpp:
// MOSAIC_FAKE_DEVICES devices, the virtual-memory API on memfd files, so a
// device's memory is host memory this process can read): the symmetric
// heap's mappings, copies and teardown, the peer-access check, the
// collective table a group launch passes, and the order of its launches
// and waits. The rendezvous of the multi-process form runs in forked
// processes: descriptors exchanged, timeouts, a peer that goes away, and
// each process's view of the others' memory through a shared heap.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "mosaic/Contracts/Format.h"
#include "mosaic/Runtime/CollectiveTable.h"
#include "mosaic/Runtime/Rendezvous.h"
#include "mosaic/Runtime/Symmetric.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>

using namespace mosaic;
using namespace mosaic::runtime;
using mosaic::runtime::test::replaceOnce;
using mosaic::runtime::test::writeTempFile;

namespace {

#define ASSIGN_OR_FAIL(name, expr)                                             \
  auto name##Expected = (expr);                                                \
  ASSERT_TRUE(name##Expected.ok()) << name##Expected.message();                \
  auto &name = *name##Expected

/// A kernel with a symmetric i32 buffer, a plain f32 buffer, and its
/// collective table. The fake driver loads any file.
const char *kCollectiveManifest = R"({
  "arch": "sm_90a", "block": [128, 1, 1], "cluster": [1, 1, 1],
  "cubin": "mosaic_fake_collective.cubin", "dynamic_smem_bytes": 0,
  "entry": "collective", "grid": [1, 1, 1],
  "parameters": [
    {"alignment": 16, "element_type": "i32", "index": 0, "kind": "buffer", "shape": [1024], "symmetric": true},
    {"alignment": 16, "element_type": "f32", "index": 1, "kind": "buffer", "shape": [256]},
    {"index": 2, "kind": "collective"}],
  "tensor_maps": []
})";

/// A variable of the fake driver.
template <typename T> T &fakeVariable(const char *name) {
  void *library = dlopen(MOSAIC_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_NOLOAD);
  void *symbol = library ? dlsym(library, name) : nullptr;
  if (!symbol)
    std::abort();
  return *static_cast<T *>(symbol);
}

std::unique_ptr<Driver> loadFake(int devices) {
  setenv("MOSAIC_FAKE_DEVICES", std::to_string(devices).c_str(), 1);
  Expected<std::unique_ptr<Driver>> driver =
      Driver::load(MOSAIC_FAKE_CUDA_DRIVER);
  if (!driver.ok())
    return nullptr;
  return std::move(*driver);
}

class FakeDevices : public testing::Test {
protected:
  void SetUp() override {
    unsetenv("MOSAIC_FAKE_NO_PEER");
    driver = loadFake(3);
    ASSERT_NE(driver, nullptr);
    fakeVariable<char[4096]>("fake_log")[0] = 0;
  }
  std::unique_ptr<Driver> driver;
};

TEST_F(FakeDevices, SymmetricBuffersAreTheSameOffsetOnEveryDevice) {
  ASSIGN_OR_FAIL(group, DeviceGroup::open(*driver, 3));
  EXPECT_EQ(group->deviceCount(), 3u);
  EXPECT_EQ(group->localDevices(), (std::vector<unsigned>{0, 1, 2}));
  {
    ASSIGN_OR_FAIL(heap, SymmetricHeap::create(*group, 1 << 20));
    EXPECT_EQ(heap->granularity(), size_t(2) << 20);
    ASSIGN_OR_FAIL(a, heap->allocate(1000));
    ASSIGN_OR_FAIL(b, heap->allocate(4096, 1024));
    // Three mappings (one per device) of one 2 MiB segment.
    EXPECT_EQ(fakeVariable<int>("fake_mapped"), 3);
    for (unsigned q = 0; q < 3; ++q) {
      EXPECT_EQ(a.pointer(q) % 256, 0u);
      EXPECT_EQ(b.pointer(q) % 1024, 0u);
      EXPECT_EQ(b.pointer(q) - a.pointer(q), 1024u) << "device " << q;
      EXPECT_EQ(a.pointer(q) - a.pointer(0), q * (size_t(2) << 20));
    }
    // Each device's copy is its own memory.
    for (unsigned q = 0; q < 3; ++q) {
      std::vector<uint8_t> bytes(4096, static_cast<uint8_t>(0x10 + q));
      ASSERT_TRUE(b.upload(q, bytes.data()).ok());
    }
    for (unsigned q = 0; q < 3; ++q) {
      std::vector<uint8_t> back(4096);
      ASSERT_TRUE(b.download(q, back.data()).ok());
      EXPECT_EQ(back, std::vector<uint8_t>(4096, 0x10 + q));
      ASSERT_TRUE(b.fill(q, 0xEE).ok());
      ASSERT_TRUE(b.download(q, back.data()).ok());
      EXPECT_EQ(back, std::vector<uint8_t>(4096, 0xEE));
    }
    // A buffer larger than what is left makes a segment of its own size.
    ASSIGN_OR_FAIL(large, heap->allocate(size_t(3) << 20));
    EXPECT_EQ(fakeVariable<int>("fake_mapped"), 6);
    EXPECT_EQ(large.pointer(1) - large.pointer(0), size_t(4) << 20);
    EXPECT_EQ(heap->allocate(0).message(),
              "symmetric allocation 3: a symmetric buffer needs at least one "
              "byte");
    EXPECT_EQ(heap->allocate(64, 48).message(),
              "symmetric allocation 4: alignment 48 is not a power of two up "
              "to the granularity 2097152");
  }
  // The heap unmapped everything when it died.
  EXPECT_EQ(fakeVariable<int>("fake_mapped"), 0);
}

TEST_F(FakeDevices, GroupErrors) {
  EXPECT_EQ(DeviceGroup::open(*driver, 4).message(),
            "a group of 4 devices, but the driver reports 3 devices");
  EXPECT_EQ(DeviceGroup::open(*driver, 0).message(),
            "a group of 0 devices, but the driver reports 3 devices");
  setenv("MOSAIC_FAKE_NO_PEER", "2,1", 1);
  EXPECT_EQ(DeviceGroup::open(*driver, 3).message(),
            "device 1 (Fake H100) cannot access the memory of device 2 (Fake "
            "H100) (cuDeviceCanAccessPeer): a kernel that spans devices needs "
            "every pair of its devices to reach each other");
  // Two devices that do reach each other are fine.
  EXPECT_TRUE(DeviceGroup::open(*driver, 2).ok());
}

TEST_F(FakeDevices, GroupLaunchFillsEachTableAndLaunchesAllBeforeWaiting) {
  writeTempFile("mosaic_fake_collective.cubin", "fake");
  ASSIGN_OR_FAIL(manifest,
                 parseManifest(kCollectiveManifest, testing::TempDir()));
  ASSIGN_OR_FAIL(group, DeviceGroup::open(*driver, 3));
  ASSIGN_OR_FAIL(heap, SymmetricHeap::create(*group));
  ASSIGN_OR_FAIL(symmetric, heap->allocate(4096));
  ASSIGN_OR_FAIL(kernel, GroupKernel::load(*group, manifest));
  std::vector<std::unique_ptr<DeviceBuffer>> plain;
  std::vector<std::vector<GroupArgument>> arguments;
  for (unsigned d = 0; d < 3; ++d) {
    ASSERT_TRUE(group->context(d).makeCurrent().ok());
    ASSIGN_OR_FAIL(buffer, DeviceBuffer::allocate(group->context(d), 1024));
    plain.push_back(std::make_unique<DeviceBuffer>(std::move(buffer)));
    arguments.push_back(
        {SymmetricArgument{&symmetric, ElementType::I32, {1024}},
         BufferArgument{plain.back()->pointer(), ElementType::F32, {256}}});
  }
  ASSIGN_OR_FAIL(launch, kernel.prepare(arguments));
  fakeVariable<int>("fake_record_params") = 3;
  ASSERT_TRUE(launch.run().ok());
  fakeVariable<int>("fake_record_params") = 0;
  EXPECT_STREQ(fakeVariable<char[4096]>("fake_log"), "L0 L1 L2 S0 S1 S2 ");
  // The last launch was device 2's: its own copy, its buffer, its table.
  auto *params = fakeVariable<unsigned long long[16]>("fake_launch_params");
  EXPECT_EQ(params[0], symmetric.pointer(2));
  EXPECT_EQ(params[1], plain[2]->pointer());
  std::vector<uint8_t> table(CollectiveTableLayout{3, 1, 0}.bytes());
  std::memcpy(table.data(), reinterpret_cast<void *>(params[2]), table.size());
  Expected<std::vector<uint8_t>> expected =
      encodeCollectiveTable(2, 3, {symmetric.allPointers()}, {});
  ASSERT_TRUE(expected.ok()) << expected.message();
  EXPECT_EQ(table, *expected);

  // A symmetric parameter given plain memory.
  std::vector<std::vector<GroupArgument>> wrong = arguments;
  wrong[1][0] = BufferArgument{plain[1]->pointer(), ElementType::I32, {1024}};
  EXPECT_EQ(kernel.prepare(wrong).message(),
            "device 1 (Fake H100): parameter 0 is symmetric: pass a symmetric "
            "buffer (SymmetricHeap::allocate), not device memory");
  // Another symmetric buffer on one device.
  ASSIGN_OR_FAIL(other, heap->allocate(4096));
  wrong = arguments;
  wrong[2][0] = SymmetricArgument{&other, ElementType::I32, {1024}};
  EXPECT_EQ(kernel.prepare(wrong).message(),
            "device 2 (Fake H100): parameter 0 is another symmetric buffer "
            "than device 0 (Fake H100) passes: every device passes the same "
            "one");
  // Too small, and a shape the kernel does not take.
  ASSIGN_OR_FAIL(small, heap->allocate(64));
  wrong = arguments;
  for (auto &device : wrong)
    device[0] = SymmetricArgument{&small, ElementType::I32, {1024}};
  EXPECT_EQ(kernel.prepare(wrong).message(),
            "device 0 (Fake H100): parameter 0: the symmetric buffer has 64 "
            "bytes, but the kernel accesses a i32 buffer of shape [1024] "
            "(4096 bytes)");
  wrong = arguments;
  wrong[0][0] = SymmetricArgument{&symmetric, ElementType::I32, {512}};
  EXPECT_EQ(kernel.prepare(wrong).message(),
            "device 0 (Fake H100): parameter 0: expected i32 buffer of shape "
            "[1024] (4096 bytes), got i32 buffer of shape [512] (2048 bytes)");
  EXPECT_EQ(kernel.prepare({arguments[0]}).message(),
            "the launch gives arguments for 1 device, but this process runs "
            "3 devices of the group");
}

TEST_F(FakeDevices, SingleDevicePrepareRefusesACollectiveKernel) {
  writeTempFile("mosaic_fake_collective.cubin", "fake");
  ASSIGN_OR_FAIL(manifest,
                 parseManifest(kCollectiveManifest, testing::TempDir()));
  ASSIGN_OR_FAIL(context, Context::open(*driver, 0));
  ASSIGN_OR_FAIL(kernel, Kernel::load(context, manifest));
  ASSIGN_OR_FAIL(a, DeviceBuffer::allocate(context, 4096));
  ASSIGN_OR_FAIL(b, DeviceBuffer::allocate(context, 1024));
  std::vector<BufferArgument> arguments = {
      {a.pointer(), ElementType::I32, {1024}},
      {b.pointer(), ElementType::F32, {256}}};
  EXPECT_EQ(kernel.prepare(arguments).message(),
            "`collective` spans devices (parameter 2 is its collective "
            "table): launch it on every device with a multi-device launch "
            "(DeviceGroup, or Python's mosaic_gpu.Devices), not on one "
            "device");

  // From raw pointers (PyTorch's symmetric memory): any addresses, as long
  // as this device's is the argument.
  CollectiveArguments wrong{1, 2, {{a.pointer(), 0x7f0000000000}}};
  EXPECT_EQ(kernel.prepare(arguments, wrong).message(),
            "symmetric parameter 0: the argument " +
                formatAddress(a.pointer()) +
                " is not this device's copy of the symmetric buffer "
                "0x7f0000000000");
  CollectiveArguments misaligned{1, 2, {{0x7f0000000008, a.pointer()}}};
  EXPECT_EQ(kernel.prepare(arguments, misaligned).message(),
            "symmetric parameter 0: device 0's copy 0x7f0000000008 is not "
            "aligned to 16 bytes");
  EXPECT_EQ(kernel.prepare(arguments, CollectiveArguments{0, 2, {}}).message(),
            "`collective` has 1 symmetric buffer parameters, but the launch "
            "gives peers for 0");
  CollectiveArguments collective{1, 2, {{0x7f0000000000, a.pointer()}}};
  ASSIGN_OR_FAIL(launch, kernel.prepare(arguments, collective));
  fakeVariable<int>("fake_record_params") = 3;
  ASSERT_TRUE(launch.run(nullptr).ok());
  fakeVariable<int>("fake_record_params") = 0;
  auto *params = fakeVariable<unsigned long long[16]>("fake_launch_params");
  std::vector<uint8_t> table(CollectiveTableLayout{2, 1, 0}.bytes());
  std::memcpy(table.data(), reinterpret_cast<void *>(params[2]), table.size());
  Expected<std::vector<uint8_t>> expected =
      encodeCollectiveTable(1, 2, collective.peers, {});
  ASSERT_TRUE(expected.ok()) << expected.message();
  EXPECT_EQ(table, *expected);
}

//===----------------------------------------------------------------------===//
// Processes
//===----------------------------------------------------------------------===//

/// Runs `body(rank)` in `count` forked processes; each one's result is
/// "" for success or what went wrong. Returns every failure, one a line.
std::string inProcesses(unsigned count,
                        const std::function<std::string(unsigned)> &body) {
  std::vector<pid_t> children;
  std::vector<int> pipes;
  for (unsigned rank = 0; rank < count; ++rank) {
    int ends[2];
    if (pipe(ends) != 0)
      return "pipe failed";
    pid_t child = fork();
    if (child == 0) {
      close(ends[0]);
      std::string failure = body(rank);
      (void)!write(ends[1], failure.data(), failure.size());
      _exit(failure.empty() ? 0 : 1);
    }
    close(ends[1]);
    children.push_back(child);
    pipes.push_back(ends[0]);
  }
  std::string failures;
  for (unsigned rank = 0; rank < count; ++rank) {
    std::string text;
    char chunk[256];
    ssize_t n;
    while ((n = read(pipes[rank], chunk, sizeof(chunk))) > 0)
      text.append(chunk, static_cast<size_t>(n));
    close(pipes[rank]);
    int status = 0;
    waitpid(children[rank], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !text.empty())
      failures += "rank " + std::to_string(rank) + ": " +
                  (text.empty() ? "died" : text) + "\n";
  }
  return failures;
}

/// The test process, whose children share its rendezvous paths.
const pid_t kTestProcess = getpid();

ProcessGroupOptions options(const std::string &name, unsigned rank,
                            unsigned world, int timeoutMs = 10000) {
  ProcessGroupOptions result;
  result.rank = rank;
  result.worldSize = world;
  result.ordinal = static_cast<int>(rank);
  result.rendezvous =
      testing::TempDir() + name + "." + std::to_string(kTestProcess) + ".sock";
  result.timeout = std::chrono::milliseconds(timeoutMs);
  return result;
}

TEST(Rendezvous, ExchangesBytesAndDescriptors) {
  std::string failures = inProcesses(3, [](unsigned rank) -> std::string {
    Expected<std::unique_ptr<Rendezvous>> meeting =
        Rendezvous::connect(options("exchange", rank, 3));
    if (!meeting.ok())
      return meeting.message();
    int fd = memfd_create("rendezvous-test", 0);
    std::string payload = "memory of rank " + std::to_string(rank);
    if (write(fd, payload.data(), payload.size()) !=
        static_cast<ssize_t>(payload.size()))
      return "write failed";
    for (int round = 0; round < 2; ++round) {
      Expected<std::vector<Contribution>> all = (*meeting)->allGather(
          "rank " + std::to_string(rank), round ? fd : -1);
      if (!all.ok())
        return all.message();
      for (unsigned q = 0; q < 3; ++q) {
        const Contribution &c = (*all)[q];
        if (c.bytes != "rank " + std::to_string(q))
          return "from rank " + std::to_string(q) + ": " + c.bytes;
        if (!round) {
          if (c.fd != -1)
            return "a descriptor nobody sent";
          continue;
        }
        char text[64] = {};
        if (c.fd < 0 || pread(c.fd, text, sizeof(text) - 1, 0) <= 0)
          return "no readable descriptor from rank " + std::to_string(q);
        if (std::string(text) != "memory of rank " + std::to_string(q))
          return "rank " + std::to_string(q) + "'s descriptor holds " + text;
        if (q != rank)
          close(c.fd);
      }
    }
    return "";
  });
  EXPECT_EQ(failures, "");
}

TEST(Rendezvous, TimeoutsAndDepartures) {
  // Nobody opens the rendezvous.
  ProcessGroupOptions alone = options("alone", 1, 2, 300);
  EXPECT_EQ(Rendezvous::connect(alone).message(),
            "rendezvous at " + alone.rendezvous +
                ": rank 1 waited 0.3 s for rank 0, which never opened it");
  // Rank 2 of 3 never comes.
  std::string failures = inProcesses(2, [](unsigned rank) -> std::string {
    Expected<std::unique_ptr<Rendezvous>> meeting =
        Rendezvous::connect(options("missing", rank, 3, 500));
    if (rank == 0) {
      std::string expected = "rendezvous at " +
                             options("missing", 0, 3).rendezvous +
                             ": rank 0 waited 0.5 s for rank 2 of 3, which "
                             "never connected";
      return meeting.message() == expected ? "" : "got: " + meeting.message();
    }
    return ""; // Rank 1 connected (or gave up when rank 0 did).
  });
  EXPECT_EQ(failures, "");
  // Rank 1 goes away before the exchange.
  failures = inProcesses(2, [](unsigned rank) -> std::string {
    ProcessGroupOptions mine = options("departure", rank, 2);
    Expected<std::unique_ptr<Rendezvous>> meeting = Rendezvous::connect(mine);
    if (!meeting.ok())
      return meeting.message();
    if (rank == 1)
      return "";
    Expected<std::vector<Contribution>> all = (*meeting)->allGather("x");
    std::string expected = "rank 1 (rendezvous at " + mine.rendezvous +
                           ") closed its connection (did it exit?)";
    return all.message() == expected ? "" : "got: " + all.message();
  });
  EXPECT_EQ(failures, "");
}

TEST(Rendezvous, OptionsFromTheEnvironment) {
  for (const char *name :
       {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
        "MOSAIC_GPU_RENDEZVOUS", "TORCHELASTIC_RUN_ID", "MASTER_PORT", "TMPDIR",
        "MOSAIC_GPU_RENDEZVOUS_TIMEOUT"})
    unsetenv(name);
  EXPECT_EQ(ProcessGroupOptions::fromEnvironment().message(),
            "the multi-process form needs RANK (as torchrun sets it), which "
            "is unset");
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("LOCAL_RANK", "x", 1);
  EXPECT_EQ(ProcessGroupOptions::fromEnvironment().message(),
            "LOCAL_RANK is \"x\", expected a non-negative integer");
  setenv("LOCAL_RANK", "3", 1);
  EXPECT_EQ(ProcessGroupOptions::fromEnvironment().message(),
            "the multi-process form needs a rendezvous path: set "
            "MOSAIC_GPU_RENDEZVOUS, or TORCHELASTIC_RUN_ID or MASTER_PORT "
            "(torchrun sets both) to derive one");
  setenv("MASTER_PORT", "29500", 1);
  setenv("MOSAIC_GPU_RENDEZVOUS_TIMEOUT", "5", 1);
  ASSIGN_OR_FAIL(fromPort, ProcessGroupOptions::fromEnvironment());
  EXPECT_EQ(fromPort.rank, 1u);
  EXPECT_EQ(fromPort.worldSize, 4u);
  EXPECT_EQ(fromPort.ordinal, 3);
  EXPECT_EQ(fromPort.rendezvous,
            "/tmp/mosaic-gpu-" + std::to_string(getuid()) + "-29500.sock");
  EXPECT_EQ(fromPort.timeout, std::chrono::seconds(5));
  setenv("TORCHELASTIC_RUN_ID", "job7", 1);
  setenv("TMPDIR", "/var/tmp", 1);
  ASSIGN_OR_FAIL(fromJob, ProcessGroupOptions::fromEnvironment());
  EXPECT_EQ(fromJob.rendezvous,
            "/var/tmp/mosaic-gpu-" + std::to_string(getuid()) + "-job7.sock");
  setenv("MOSAIC_GPU_RENDEZVOUS", "/tmp/explicit.sock", 1);
  ASSIGN_OR_FAIL(named, ProcessGroupOptions::fromEnvironment());
  EXPECT_EQ(named.rendezvous, "/tmp/explicit.sock");
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  EXPECT_EQ(ProcessGroupOptions::fromEnvironment().message(),
            "LOCAL_WORLD_SIZE is 2 but WORLD_SIZE is 4: the multi-process "
            "form runs on one node (across nodes, see NVSHMEM in "
            "docs/RationaleMultiDevice.md)");
  setenv("LOCAL_WORLD_SIZE", "4", 1);
  setenv("RANK", "4", 1);
  EXPECT_EQ(ProcessGroupOptions::fromEnvironment().message(),
            "RANK is 4, WORLD_SIZE 4: RANK must be below WORLD_SIZE");
  for (const char *name :
       {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
        "MOSAIC_GPU_RENDEZVOUS", "TORCHELASTIC_RUN_ID", "MASTER_PORT", "TMPDIR",
        "MOSAIC_GPU_RENDEZVOUS_TIMEOUT"})
    unsetenv(name);
}

// One process per device: each maps every other process's memory, writes
// its own copy, and reads the others' through its mappings; the group
// launch's table points at those mappings.
TEST(MultiProcess, HeapSharedAcrossProcesses) {
  writeTempFile("mosaic_fake_collective.cubin", "fake");
  std::string failures = inProcesses(3, [](unsigned rank) -> std::string {
    std::unique_ptr<Driver> driver = loadFake(3);
    if (!driver)
      return "the fake driver did not load";
    Expected<std::unique_ptr<DeviceGroup>> group =
        DeviceGroup::join(*driver, options("heap", rank, 3));
    if (!group.ok())
      return group.message();
    if ((*group)->localDevices() != std::vector<unsigned>{rank})
      return "local devices are not {rank}";
    Expected<std::unique_ptr<SymmetricHeap>> heap =
        SymmetricHeap::create(**group);
    if (!heap.ok())
      return heap.message();
    Expected<SymmetricBuffer> buffer = (*heap)->allocate(4096);
    if (!buffer.ok())
      return buffer.message();
    std::vector<uint8_t> mine(4096, static_cast<uint8_t>(0x40 + rank));
    Status uploaded = buffer->upload(rank, mine.data());
    if (!uploaded.ok())
      return uploaded.message();
    unsigned other = (rank + 1) % 3;
    std::string refused = buffer->download(other, mine.data()).message();
    if (refused != "device " + std::to_string(other) +
                       " belongs to another process (rank " +
                       std::to_string(other) + "); copy from that process")
      return "download of another's copy: " + refused;
    // Everyone wrote before anyone reads.
    if (!(*group)->rendezvous()->allGather("written").ok())
      return "barrier failed";
    for (unsigned q = 0; q < 3; ++q) {
      const auto *bytes = reinterpret_cast<const uint8_t *>(buffer->pointer(q));
      for (size_t i = 0; i < 4096; ++i)
        if (bytes[i] != 0x40 + q)
          return "device " + std::to_string(q) + "'s copy holds " +
                 std::to_string(bytes[i]) + " at byte " + std::to_string(i);
    }
    Expected<Manifest> manifest =
        parseManifest(kCollectiveManifest, testing::TempDir());
    if (!manifest.ok())
      return manifest.message();
    Expected<GroupKernel> kernel = GroupKernel::load(**group, *manifest);
    if (!kernel.ok())
      return kernel.message();
    Expected<DeviceBuffer> plain =
        DeviceBuffer::allocate((*group)->context(rank), 1024);
    if (!plain.ok())
      return plain.message();
    Expected<GroupLaunch> launch = kernel->prepare(
        {{SymmetricArgument{&*buffer, ElementType::I32, {1024}},
          BufferArgument{plain->pointer(), ElementType::F32, {256}}}});
    if (!launch.ok())
      return launch.message();
    fakeVariable<int>("fake_record_params") = 3;
    if (Status ran = launch->run(); !ran.ok())
      return ran.message();
    auto *params = fakeVariable<unsigned long long[16]>("fake_launch_params");
    std::vector<uint8_t> table(CollectiveTableLayout{3, 1, 0}.bytes());
    std::memcpy(table.data(), reinterpret_cast<void *>(params[2]),
                table.size());
    Expected<std::vector<uint8_t>> expected =
        encodeCollectiveTable(rank, 3, {buffer->allPointers()}, {});
    if (!expected.ok() || table != *expected)
      return "the collective table differs";
    // A rank that asks for another size is named.
    Expected<SymmetricBuffer> mismatched =
        (*heap)->allocate(rank == 1 ? 8192 : 4096);
    std::string want =
        "symmetric allocation 1: rank " + std::to_string(rank) + " asks for " +
        (rank == 1 ? "8192" : "4096") + " bytes aligned to 256, rank " +
        (rank == 1 ? "0" : "1") + " for " + (rank == 1 ? "4096" : "8192") +
        " bytes aligned to 256: every process must allocate "
        "the same buffers in the same order";
    if (mismatched.message() != want)
      return "mismatched allocation: " + mismatched.message();
    return "";
  });
  EXPECT_EQ(failures, "");
}

TEST(MultiProcess, TwoRanksOnOneDevice) {
  std::string failures = inProcesses(2, [](unsigned rank) -> std::string {
    std::unique_ptr<Driver> driver = loadFake(2);
    ProcessGroupOptions mine = options("same", rank, 2);
    mine.ordinal = 0;
    std::string message = DeviceGroup::join(*driver, mine).message();
    return message == "ranks 0 and 1 both run device 0 (LOCAL_RANK): each "
                      "process needs its own device"
               ? ""
               : "got: " + message;
  });
  EXPECT_EQ(failures, "");
}

} // namespace
