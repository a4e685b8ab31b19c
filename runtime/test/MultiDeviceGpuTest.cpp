//===- MultiDeviceGpuTest.cpp - Kernels that span devices, on a device -===//
//
// Small PTX kernels that read the collective table: one copies its table
// out (so the bytes the kernel sees are checked, tensor maps included), one
// stores its device id into the next device's symmetric buffer through
// peers[0][(id + 1) % D]. They run on the backend MOSAIC_GPU_BACKEND
// selects: on a GPU, skipping (saying why) without a driver, an sm_90
// device or, for the ring, a second device; on the emulator (ctest
// `runtime-emulator`, with MOSAIC_EMULATOR_DEVICES=4) a missing feature is
// a failure. The multi-process ring runs this binary again, once per rank,
// with torchrun's variables.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "mosaic/Runtime/CollectiveTable.h"
#include "mosaic/Runtime/Symmetric.h"
#include "mosaic/Runtime/TensorMap.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

using namespace mosaic;
using namespace mosaic::runtime;
using mosaic::runtime::test::replaceOnce;
using mosaic::runtime::test::writeTempFile;

namespace {

#define ASSIGN_OR_FAIL(name, expr)                                             \
  auto name##Expected = (expr);                                                \
  ASSERT_TRUE(name##Expected.ok()) << name##Expected.message();                \
  auto &name = *name##Expected

const char *kCollectivePtx = R"(.version 8.0
.target sm_90a
.address_size 64

// Device d stores d + 1 at index d of the next device's buffer, through the
// collective table's peers[0][(d + 1) % D].
.visible .entry ring(.param .u64 buf, .param .u64 table)
{
  .reg .pred %p1;
  .reg .b32 %r<6>;
  .reg .b64 %rd<7>;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [table];
  cvta.to.global.u64 %rd1, %rd1;
  ld.global.u32 %r2, [%rd1];
  ld.global.u32 %r3, [%rd1+4];
  add.u32 %r4, %r2, 1;
  rem.u32 %r4, %r4, %r3;
  mul.wide.u32 %rd2, %r4, 8;
  add.u64 %rd3, %rd1, %rd2;
  ld.global.u64 %rd4, [%rd3+16];
  cvta.to.global.u64 %rd4, %rd4;
  mul.wide.u32 %rd5, %r2, 4;
  add.u64 %rd6, %rd4, %rd5;
  add.u32 %r5, %r2, 1;
  st.global.u32 [%rd6], %r5;
DONE:
  ret;
}

// out[i] = the table's u32 i, one per thread.
.visible .entry dump_table(.param .u64 out, .param .u64 sym, .param .u64 table)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [table];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd4, %rd2, %rd3;
  add.u64 %rd5, %rd1, %rd3;
  ld.global.u32 %r2, [%rd4];
  st.global.u32 [%rd5], %r2;
  ret;
}

.shared .align 128 .b8 tile[8192];
.shared .align 8 .b64 bar;

// out = the next device's 64x32 f32 buffer, read by TMA through the peer
// tensor map maps[0][(id + 1) % D] of the collective table.
.visible .entry peer_load(.param .u64 out, .param .u64 sym, .param .u64 table)
{
  .reg .pred %p<3>;
  .reg .b32 %r<16>;
  .reg .f32 %f1;
  .reg .b64 %rd<10>;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, tile;
  mov.u32 %r3, bar;
  setp.eq.u32 %p1, %r1, 0;
  @!%p1 bra INIT_DONE;
  mbarrier.init.shared::cta.b64 [%r3], 1;
  fence.mbarrier_init.release.cluster;
INIT_DONE:
  bar.sync 0;
  @!%p1 bra WAIT;
  ld.param.u64 %rd1, [table];
  cvta.to.global.u64 %rd2, %rd1;
  ld.global.u32 %r4, [%rd2];
  ld.global.u32 %r5, [%rd2+4];
  ld.global.u32 %r6, [%rd2+12];
  add.u32 %r7, %r4, 1;
  rem.u32 %r7, %r7, %r5;
  shl.b32 %r8, %r7, 7;
  add.u32 %r8, %r8, %r6;
  cvt.u64.u32 %rd3, %r8;
  add.u64 %rd4, %rd1, %rd3;
  mov.u32 %r9, 0;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r3], 8192;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r2], [%rd4, {%r9, %r9}], [%r3];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;
  @!%p2 bra WAIT;
  ld.param.u64 %rd6, [out];
  cvta.to.global.u64 %rd6, %rd6;
  mov.u32 %r10, 0;
COPY:
  shl.b32 %r11, %r10, 5;
  add.u32 %r11, %r11, %r1;
  shl.b32 %r12, %r11, 2;
  add.u32 %r13, %r12, %r2;
  ld.shared.f32 %f1, [%r13];
  cvt.u64.u32 %rd7, %r12;
  add.u64 %rd8, %rd6, %rd7;
  st.global.f32 [%rd8], %f1;
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p2, %r10, 64;
  @%p2 bra COPY;
  ret;
}

// Device d writes d + 100 into the next device's buf[1] and signals its
// semaphore buf[0] (release, system scope); then waits for its own
// semaphore (acquire), consumes the signal and copies buf[1] into buf[2].
.visible .entry signal_ring(.param .u64 buf, .param .u64 table)
{
  .reg .pred %p<3>;
  .reg .b32 %r<9>;
  .reg .b64 %rd<6>;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [table];
  cvta.to.global.u64 %rd1, %rd1;
  ld.global.u32 %r2, [%rd1];
  ld.global.u32 %r3, [%rd1+4];
  add.u32 %r4, %r2, 1;
  rem.u32 %r4, %r4, %r3;
  mul.wide.u32 %rd2, %r4, 8;
  add.u64 %rd3, %rd1, %rd2;
  ld.global.u64 %rd4, [%rd3+16];
  cvta.to.global.u64 %rd4, %rd4;
  add.u32 %r5, %r2, 100;
  st.global.u32 [%rd4+4], %r5;
  red.release.sys.global.add.u32 [%rd4], 1;
  ld.param.u64 %rd5, [buf];
  cvta.to.global.u64 %rd5, %rd5;
WAIT:
  ld.acquire.sys.global.u32 %r6, [%rd5];
  setp.lt.u32 %p2, %r6, 1;
  @%p2 bra WAIT;
  atom.relaxed.sys.global.add.u32 %r7, [%rd5], 4294967295;
  ld.global.u32 %r8, [%rd5+4];
  st.global.u32 [%rd5+8], %r8;
DONE:
  ret;
}
)";

const char *kRingManifest = R"({
  "arch": "sm_90a", "block": [32, 1, 1], "cluster": [1, 1, 1],
  "cubin": "mosaic_gpu_collective.ptx", "dynamic_smem_bytes": 0,
  "entry": "ring", "grid": [1, 1, 1],
  "parameters": [
    {"alignment": 16, "element_type": "i32", "index": 0, "kind": "buffer", "shape": [8], "symmetric": true},
    {"index": 1, "kind": "collective"}],
  "tensor_maps": []
})";

// Three devices, one symmetric buffer, one peer map: 16 + 3 * 8 bytes, the
// maps at 128, three of 128 bytes: 512 bytes, 128 threads.
const char *kDumpManifest = R"({
  "arch": "sm_90a", "block": [128, 1, 1], "cluster": [1, 1, 1],
  "cubin": "mosaic_gpu_collective.ptx", "dynamic_smem_bytes": 0,
  "entry": "dump_table", "grid": [1, 1, 1],
  "parameters": [
    {"alignment": 16, "element_type": "i32", "index": 0, "kind": "buffer", "shape": [128]},
    {"alignment": 16, "element_type": "bf16", "index": 1, "kind": "buffer", "shape": [256, 64], "symmetric": true},
    {"index": 2, "kind": "collective"}],
  "tensor_maps": [
    {"index": 0, "parameter": 2, "buffer": 1, "element_type": "bf16", "rank": 2,
     "global_dims": [64, 256], "global_strides": [128], "box_dims": [64, 128],
     "element_strides": [1, 1], "swizzle": 128, "interleave": "none",
     "l2_promotion": "128B", "oob_fill": "none", "peer": true}]
})";

// Reads the next device's buffer with TMA through a peer tensor map.
const char *kPeerLoadManifest = R"({
  "arch": "sm_90a", "block": [32, 1, 1], "cluster": [1, 1, 1],
  "cubin": "mosaic_gpu_collective.ptx", "dynamic_smem_bytes": 0,
  "entry": "peer_load", "grid": [1, 1, 1],
  "parameters": [
    {"alignment": 16, "element_type": "f32", "index": 0, "kind": "buffer", "shape": [64, 32]},
    {"alignment": 16, "element_type": "f32", "index": 1, "kind": "buffer", "shape": [64, 32], "symmetric": true},
    {"index": 2, "kind": "collective"}],
  "tensor_maps": [
    {"index": 0, "parameter": 2, "buffer": 1, "element_type": "f32", "rank": 2,
     "global_dims": [32, 64], "global_strides": [128], "box_dims": [32, 64],
     "element_strides": [1, 1], "swizzle": 0, "interleave": "none",
     "l2_promotion": "128B", "oob_fill": "none", "peer": true}]
})";

/// The driver of MOSAIC_GPU_BACKEND, or why the test cannot run (a skip on
/// a GPU machine, a failure on the emulator).
class MultiDeviceGpu : public testing::Test {
protected:
  void SetUp() override {
    Expected<Backend> backend = backendFromEnvironment();
    ASSERT_TRUE(backend.ok()) << backend.message();
    Expected<const Driver *> loaded = Driver::get(*backend);
    if (!loaded.ok()) {
      ASSERT_NE(*backend, Backend::Emulator) << loaded.message();
      GTEST_SKIP() << loaded.message();
    }
    driver = *loaded;
    int count = 0;
    ASSERT_TRUE(driver->check(driver->cuDeviceGetCount(&count), "count").ok());
    devices = static_cast<unsigned>(count);
    if (devices == 0) {
      ASSERT_FALSE(driver->isEmulator());
      GTEST_SKIP() << "no CUDA device";
    }
    Expected<Context> context = Context::open(*driver, 0);
    ASSERT_TRUE(context.ok()) << context.message();
    if (context->computeCapability() != 90) {
      ASSERT_FALSE(driver->isEmulator());
      GTEST_SKIP() << "the test kernels are PTX for sm_90a; device 0 is sm_"
                   << context->computeCapability();
    }
    writeTempFile("mosaic_gpu_collective.ptx", kCollectivePtx);
  }

  /// Skips on a GPU machine with fewer than `needed` devices; fails on the
  /// emulator, whose ctest run has four.
  bool needDevices(unsigned needed) {
    if (devices >= needed)
      return true;
    EXPECT_FALSE(driver->isEmulator())
        << "the emulator reports " << devices << " devices; set "
        << "MOSAIC_EMULATOR_DEVICES=" << needed;
    return false;
  }

  const Driver *driver = nullptr;
  unsigned devices = 0;
};

/// Checks a ring's buffers: device q holds q at index q - 1.
void expectRing(const SymmetricBuffer &buffer, unsigned q, unsigned count) {
  std::vector<int32_t> values(8);
  Status copied = buffer.download(q, values.data());
  ASSERT_TRUE(copied.ok()) << copied.message();
  std::vector<int32_t> expected(8, 0);
  unsigned previous = (q + count - 1) % count;
  expected[previous] = static_cast<int32_t>(previous + 1);
  EXPECT_EQ(values, expected) << "device " << q;
}

TEST_F(MultiDeviceGpu, TheKernelSeesItsCollectiveTable) {
  ASSIGN_OR_FAIL(context, Context::open(*driver, 0));
  ASSIGN_OR_FAIL(manifest, parseManifest(kDumpManifest, testing::TempDir()));
  ASSIGN_OR_FAIL(kernel, Kernel::load(context, manifest));
  ASSIGN_OR_FAIL(out, DeviceBuffer::allocate(context, 512));
  // Device 1 of 3: its own copy is an allocation of this device; the
  // others' copies are other allocations standing in for them.
  std::vector<std::unique_ptr<DeviceBuffer>> copies;
  for (int q = 0; q < 3; ++q) {
    ASSIGN_OR_FAIL(copy, DeviceBuffer::allocate(context, 256 * 64 * 2));
    copies.push_back(std::make_unique<DeviceBuffer>(std::move(copy)));
  }
  CollectiveArguments collective{
      1,
      3,
      {{copies[0]->pointer(), copies[1]->pointer(), copies[2]->pointer()}}};
  ASSIGN_OR_FAIL(
      launch,
      kernel.prepare({{out.pointer(), ElementType::I32, {128}},
                      {copies[1]->pointer(), ElementType::BF16, {256, 64}}},
                     collective));
  ASSERT_TRUE(launch.run(nullptr).ok());
  ASSERT_TRUE(driver->check(driver->cuCtxSynchronize(), "sync").ok());
  std::vector<uint8_t> seen(512);
  ASSERT_TRUE(out.download(seen.data()).ok());

  std::vector<CUtensorMap> maps(3);
  const TensorMapDescription &map = kernel.manifest().tensorMaps[0];
  for (unsigned q = 0; q < 3; ++q) {
    ASSIGN_OR_FAIL(args, tensorMapEncodeArgs(map, kernel.manifest().buffers[1],
                                             collective.peers[0][q]));
    ASSERT_TRUE(driver
                    ->check(driver->cuTensorMapEncodeTiled(
                                &maps[q], args.dataType, args.rank,
                                args.globalAddress, args.globalDim.data(),
                                args.globalStrides.data(), args.boxDim.data(),
                                args.elementStrides.data(), args.interleave,
                                args.swizzle, args.l2Promotion, args.oobFill),
                            "encode")
                    .ok());
  }
  ASSIGN_OR_FAIL(expected,
                 encodeCollectiveTable(1, 3, collective.peers, {maps}));
  EXPECT_EQ(seen, expected);
}

TEST_F(MultiDeviceGpu, RingThroughPeersInOneProcess) {
  if (!needDevices(2))
    GTEST_SKIP() << "needs two devices, the driver reports " << devices;
  unsigned count = std::min(devices, 4u);
  ASSIGN_OR_FAIL(group, DeviceGroup::open(*driver, count));
  ASSIGN_OR_FAIL(heap, SymmetricHeap::create(*group));
  ASSIGN_OR_FAIL(buffer, heap->allocate(32));
  for (unsigned q = 0; q < count; ++q)
    ASSERT_TRUE(buffer.fill(q, 0).ok());
  ASSIGN_OR_FAIL(manifest, parseManifest(kRingManifest, testing::TempDir()));
  ASSIGN_OR_FAIL(kernel, GroupKernel::load(*group, manifest));
  std::vector<std::vector<GroupArgument>> arguments(
      count, {SymmetricArgument{&buffer, ElementType::I32, {8}}});
  ASSIGN_OR_FAIL(launch, kernel.prepare(arguments));
  Status ran = launch.run();
  ASSERT_TRUE(ran.ok()) << ran.message();
  for (unsigned q = 0; q < count; ++q)
    expectRing(buffer, q, count);
}

// The single-GPU path of a multi-device launch: a group of one device,
// its symmetric memory from the virtual-memory API, the ring of one (the
// kernel writes into its own buffer through peers[0][0]). It runs wherever
// one sm_90 device is, so a one-GPU machine exercises every step.
TEST_F(MultiDeviceGpu, RingOfOneDevice) {
  ASSIGN_OR_FAIL(group, DeviceGroup::open(*driver, 1));
  ASSIGN_OR_FAIL(heap, SymmetricHeap::create(*group));
  ASSIGN_OR_FAIL(buffer, heap->allocate(32));
  ASSERT_TRUE(buffer.fill(0, 0).ok());
  ASSIGN_OR_FAIL(manifest, parseManifest(kRingManifest, testing::TempDir()));
  ASSIGN_OR_FAIL(kernel, GroupKernel::load(*group, manifest));
  std::vector<std::vector<GroupArgument>> arguments(
      1, {SymmetricArgument{&buffer, ElementType::I32, {8}}});
  ASSIGN_OR_FAIL(launch, kernel.prepare(arguments));
  Status ran = launch.run();
  ASSERT_TRUE(ran.ok()) << ran.message();
  expectRing(buffer, 0, 1);
}

TEST_F(MultiDeviceGpu, TmaThroughAPeerTensorMap) {
  if (!needDevices(2))
    GTEST_SKIP() << "needs two devices, the driver reports " << devices;
  unsigned count = std::min(devices, 3u);
  ASSIGN_OR_FAIL(group, DeviceGroup::open(*driver, count));
  ASSIGN_OR_FAIL(heap, SymmetricHeap::create(*group));
  ASSIGN_OR_FAIL(buffer, heap->allocate(64 * 32 * 4));
  std::vector<std::vector<float>> values(count, std::vector<float>(64 * 32));
  for (unsigned q = 0; q < count; ++q) {
    for (size_t i = 0; i < values[q].size(); ++i)
      values[q][i] = static_cast<float>(q * 10000 + i);
    ASSERT_TRUE(buffer.upload(q, values[q].data()).ok());
  }
  ASSIGN_OR_FAIL(manifest,
                 parseManifest(kPeerLoadManifest, testing::TempDir()));
  ASSIGN_OR_FAIL(kernel, GroupKernel::load(*group, manifest));
  std::vector<std::unique_ptr<DeviceBuffer>> outs;
  std::vector<std::vector<GroupArgument>> arguments;
  for (unsigned d = 0; d < count; ++d) {
    ASSIGN_OR_FAIL(out, DeviceBuffer::allocate(group->context(d), 8192));
    outs.push_back(std::make_unique<DeviceBuffer>(std::move(out)));
    arguments.push_back(
        {BufferArgument{outs.back()->pointer(), ElementType::F32, {64, 32}},
         SymmetricArgument{&buffer, ElementType::F32, {64, 32}}});
  }
  ASSIGN_OR_FAIL(launch, kernel.prepare(arguments));
  Status ran = launch.run();
  ASSERT_TRUE(ran.ok()) << ran.message();
  for (unsigned d = 0; d < count; ++d) {
    std::vector<float> seen(64 * 32);
    ASSERT_TRUE(outs[d]->download(seen.data()).ok());
    EXPECT_EQ(seen, values[(d + 1) % count]) << "device " << d;
  }
}

// Every device waits for its predecessor's signal: it finishes only when
// all run together (the emulator co-schedules a group's launches).
TEST_F(MultiDeviceGpu, SignalAndWaitAcrossDevices) {
  if (!needDevices(2))
    GTEST_SKIP() << "needs two devices, the driver reports " << devices;
  unsigned count = std::min(devices, 4u);
  ASSIGN_OR_FAIL(group, DeviceGroup::open(*driver, count));
  ASSIGN_OR_FAIL(heap, SymmetricHeap::create(*group));
  ASSIGN_OR_FAIL(buffer, heap->allocate(32));
  for (unsigned q = 0; q < count; ++q)
    ASSERT_TRUE(buffer.fill(q, 0).ok());
  ASSIGN_OR_FAIL(manifest,
                 parseManifest(replaceOnce(kRingManifest, "\"entry\": \"ring\"",
                                           "\"entry\": \"signal_ring\""),
                               testing::TempDir()));
  ASSIGN_OR_FAIL(kernel, GroupKernel::load(*group, manifest));
  std::vector<std::vector<GroupArgument>> arguments(
      count, {SymmetricArgument{&buffer, ElementType::I32, {8}}});
  ASSIGN_OR_FAIL(launch, kernel.prepare(arguments));
  Status ran = launch.run();
  ASSERT_TRUE(ran.ok()) << ran.message();
  for (unsigned q = 0; q < count; ++q) {
    std::vector<int32_t> values(8);
    ASSERT_TRUE(buffer.download(q, values.data()).ok());
    int32_t sent = static_cast<int32_t>((q + count - 1) % count + 100);
    EXPECT_EQ(values, (std::vector<int32_t>{0, sent, sent, 0, 0, 0, 0, 0}))
        << "device " << q;
  }
}

// One rank of the multi-process ring, when RANK is set (the test below runs
// this binary so); skipped otherwise.
TEST_F(MultiDeviceGpu, RingRank) {
  if (!std::getenv("MOSAIC_TEST_RING_RANK"))
    GTEST_SKIP() << "runs as a rank of MultiProcessRing";
  ASSIGN_OR_FAIL(options, ProcessGroupOptions::fromEnvironment());
  ASSIGN_OR_FAIL(group, DeviceGroup::join(*driver, options));
  ASSIGN_OR_FAIL(heap, SymmetricHeap::create(*group));
  ASSIGN_OR_FAIL(buffer, heap->allocate(32));
  ASSERT_TRUE(buffer.fill(options.rank, 0).ok());
  // Every copy is zero before any kernel writes.
  ASSERT_TRUE(group->rendezvous()->allGather("zeroed").ok());
  ASSIGN_OR_FAIL(manifest, parseManifest(kRingManifest, testing::TempDir()));
  ASSIGN_OR_FAIL(kernel, GroupKernel::load(*group, manifest));
  ASSIGN_OR_FAIL(
      launch,
      kernel.prepare({{SymmetricArgument{&buffer, ElementType::I32, {8}}}}));
  Status ran = launch.run();
  ASSERT_TRUE(ran.ok()) << ran.message();
  // Every kernel finished before anyone reads.
  ASSERT_TRUE(group->rendezvous()->allGather("ran").ok());
  expectRing(buffer, options.rank, options.worldSize);
}

TEST_F(MultiDeviceGpu, RingThroughPeersAcrossProcesses) {
  if (!needDevices(2))
    GTEST_SKIP() << "needs two devices, the driver reports " << devices;
  unsigned count = std::min(devices, 3u);
  std::string path =
      testing::TempDir() + "ring." + std::to_string(getpid()) + ".sock";
  std::vector<pid_t> children;
  for (unsigned rank = 0; rank < count; ++rank) {
    pid_t child = fork();
    if (child == 0) {
      setenv("MOSAIC_TEST_RING_RANK", "1", 1);
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(count).c_str(), 1);
      setenv("MOSAIC_GPU_RENDEZVOUS", path.c_str(), 1);
      setenv("MOSAIC_GPU_RENDEZVOUS_TIMEOUT", "60", 1);
      execl("/proc/self/exe", "MosaicRuntimeGpuTests",
            "--gtest_filter=MultiDeviceGpu.RingRank", nullptr);
      _exit(127);
    }
    children.push_back(child);
  }
  for (unsigned rank = 0; rank < count; ++rank) {
    int status = 0;
    waitpid(children[rank], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "rank " << rank << " failed (its output is above)";
  }
}

TEST_F(MultiDeviceGpu, SingleDeviceLaunchOfACollectiveKernel) {
  ASSIGN_OR_FAIL(context, Context::open(*driver, 0));
  ASSIGN_OR_FAIL(manifest, parseManifest(kRingManifest, testing::TempDir()));
  ASSIGN_OR_FAIL(kernel, Kernel::load(context, manifest));
  ASSIGN_OR_FAIL(buffer, DeviceBuffer::allocate(context, 32));
  EXPECT_EQ(
      kernel.prepare({{buffer.pointer(), ElementType::I32, {8}}}).message(),
      "`ring` spans devices (parameter 1 is its collective table): "
      "launch it on every device with a multi-device launch "
      "(DeviceGroup, or Python's mosaic_gpu.Devices), not on one "
      "device");
}

} // namespace
