//===- GpuTest.cpp - The runtime on a GPU -------------------------------===//
//
// Loads and launches small kernels written in PTX (the driver compiles
// them), so these tests need no compiler: an elementwise kernel, one that
// reports its cluster size, and a TMA round trip through a 128-byte swizzle
// with more than 48 KiB of dynamic shared memory. They run on the backend
// MOSAIC_GPU_BACKEND selects: ctest runs them on the GPU (`runtime-gpu`),
// where every test skips, saying why, when there is no driver, no device, or
// a device other than sm_90; and on the PTX emulator (`runtime-emulator`),
// which needs no GPU, so there a missing emulator is a failure. On the
// emulator, kernels with a data race and with a fault must fail their
// launch with the emulator's report.
//
//===----------------------------------------------------------------------===//

#include "Check.h"
#include "TestSupport.h"

#include "mosaic/Contracts/Format.h"
#include "mosaic/Contracts/Json.h"
#include "mosaic/Runtime/Device.h"
#include "mosaic/Runtime/Driver.h"
#include "mosaic/Runtime/Kernel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

using namespace mosaic;
using namespace mosaic::runtime;
using mosaic::runtime::test::Outcome;
using mosaic::runtime::test::replaceOnce;
using mosaic::runtime::test::runMosaicRun;
using mosaic::runtime::test::writeTempFile;

namespace {

// out[i] = fma(x[i], y[i], x[i]), one element per thread; and out[block] =
// the number of blocks in the block's cluster.
const char *kElementwisePtx = R"(.version 8.0
.target sm_90a
.address_size 64

.visible .entry elementwise(.param .u64 x, .param .u64 y, .param .u64 out)
{
  .reg .b32 %r<5>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  ld.param.u64 %rd3, [out];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  cvta.to.global.u64 %rd3, %rd3;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.u32 %r4, %r1, %r2, %r3;
  mul.wide.u32 %rd4, %r4, 4;
  add.u64 %rd5, %rd1, %rd4;
  add.u64 %rd6, %rd2, %rd4;
  add.u64 %rd7, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  ld.global.f32 %f2, [%rd6];
  fma.rn.f32 %f3, %f1, %f2, %f1;
  st.global.f32 [%rd7], %f3;
  ret;
}

.visible .entry cluster_size(.param .u64 out)
{
  .reg .pred %p1;
  .reg .b32 %r<3>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %ctaid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd3, %rd1, %rd2;
  mov.u32 %r2, %cluster_nctarank;
  st.global.u32 [%rd3], %r2;
DONE:
  ret;
}
)";

// Kernels the emulator must refuse. smem_race: thread 0 writes `cell` and
// thread 32, in another warp, reads it with no barrier between them, a data
// race on shared memory. null_store: every thread stores through a null
// pointer, a fault.
const char *kBrokenPtx = R"(.version 8.0
.target sm_90a
.address_size 64

.shared .align 4 .b32 cell;

.visible .entry smem_race(.param .u64 out)
{
  .reg .pred %p<3>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 st.shared.u32 [cell], %r1;
  setp.ne.u32 %p2, %r1, 32;
  @%p2 bra DONE;
  ld.shared.u32 %r2, [cell];
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  st.global.u32 [%rd1], %r2;
DONE:
  ret;
}

.visible .entry null_store(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  mov.u32 %r1, %tid.x;
  mov.u64 %rd1, 0;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

// Each block loads a 128x64 bf16 box with TMA (128-byte swizzle), doubles
// it in shared memory and stores it back with TMA: out = in + in.
const char *kRoundTripPtx = R"(.version 8.0
.target sm_90a
.address_size 64

.extern .shared .align 1024 .b8 smem[];

.visible .entry tma_roundtrip(
    .param .u64 in_ptr,
    .param .u64 out_ptr,
    .param .align 64 .b8 in_map[128],
    .param .align 64 .b8 out_map[128])
{
  .reg .pred %p<3>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<4>;

  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, smem;
  add.u32 %r4, %r3, 16384;
  shl.b32 %r5, %r2, 7;
  mov.u32 %r6, 0;
  setp.eq.u32 %p1, %r1, 0;
  @!%p1 bra INIT_DONE;
  mbarrier.init.shared::cta.b64 [%r4], 1;
  fence.mbarrier_init.release.cluster;
INIT_DONE:
  bar.sync 0;
  @!%p1 bra WAIT;
  mov.u64 %rd1, in_map;
  cvta.param.u64 %rd1, %rd1;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd2, [%r4], 16384;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r3], [%rd1, {%r6, %r5}], [%r4];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r4], 0;
  @!%p2 bra WAIT;
  mov.u32 %r7, 0;
DOUBLE:
  shl.b32 %r8, %r7, 7;
  add.u32 %r8, %r8, %r1;
  shl.b32 %r8, %r8, 2;
  add.u32 %r8, %r8, %r3;
  ld.shared.b32 %r9, [%r8];
  add.rn.bf16x2 %r9, %r9, %r9;
  st.shared.b32 [%r8], %r9;
  add.u32 %r7, %r7, 1;
  setp.lt.u32 %p2, %r7, 32;
  @%p2 bra DOUBLE;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  @!%p1 bra DONE;
  mov.u64 %rd3, out_map;
  cvta.param.u64 %rd3, %rd3;
  cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd3, {%r6, %r5}], [%r3];
  cp.async.bulk.commit_group;
  cp.async.bulk.wait_group.read 0;
DONE:
  ret;
}
)";

std::string elementwiseManifest(const std::string &ptx, int elements,
                                int blocks) {
  std::string buffer = "{\"alignment\": 16, \"element_type\": \"f32\", "
                       "\"index\": INDEX, \"kind\": \"buffer\", \"shape\": [" +
                       std::to_string(elements) + "]}";
  std::string buffers;
  for (int i = 0; i < 3; ++i)
    buffers +=
        (i ? ", " : "") + replaceOnce(buffer, "INDEX", std::to_string(i));
  return "{\"arch\": \"sm_90a\", \"block\": [128, 1, 1], \"cluster\": [1, 1, "
         "1], \"cubin\": \"" +
         ptx +
         "\", \"dynamic_smem_bytes\": 0, \"entry\": \"elementwise\", "
         "\"grid\": [" +
         std::to_string(blocks) + ", 1, 1], \"parameters\": [" + buffers +
         "], \"tensor_maps\": []}";
}

const char *kClusterManifest = R"({
  "arch": "sm_90a", "block": [128, 1, 1], "cluster": [2, 1, 1],
  "cubin": "mosaic_gpu_elementwise.ptx", "dynamic_smem_bytes": 0,
  "entry": "cluster_size", "grid": [8, 1, 1],
  "parameters": [{"alignment": 16, "element_type": "i32", "index": 0,
                  "kind": "buffer", "shape": [8]}],
  "tensor_maps": []
})";

// 256x64 bf16 in and out, in 128x64 boxes: dims [64, 256], stride 64 * 2 =
// 128 bytes. 100000 bytes of dynamic shared memory (the kernel uses 16392)
// need the raised limit.
const char *kRoundTripManifest = R"({
  "arch": "sm_90a", "block": [128, 1, 1], "cluster": [1, 1, 1],
  "cubin": "mosaic_gpu_roundtrip.ptx", "dynamic_smem_bytes": 100000,
  "entry": "tma_roundtrip", "grid": [2, 1, 1],
  "parameters": [
    {"alignment": 16, "element_type": "bf16", "index": 0, "kind": "buffer", "shape": [256, 64]},
    {"alignment": 16, "element_type": "bf16", "index": 1, "kind": "buffer", "shape": [256, 64]},
    {"index": 2, "kind": "tensor_map", "tensor_map": 0},
    {"index": 3, "kind": "tensor_map", "tensor_map": 1}],
  "tensor_maps": [
    {"index": 0, "parameter": 2, "buffer": 0, "element_type": "bf16", "rank": 2,
     "global_dims": [64, 256], "global_strides": [128], "box_dims": [64, 128],
     "element_strides": [1, 1], "swizzle": 128, "interleave": "none",
     "l2_promotion": "128B", "oob_fill": "none"},
    {"index": 1, "parameter": 3, "buffer": 1, "element_type": "bf16", "rank": 2,
     "global_dims": [64, 256], "global_strides": [128], "box_dims": [64, 128],
     "element_strides": [1, 1], "swizzle": 128, "interleave": "none",
     "l2_promotion": "none", "oob_fill": "none"}]
})";

const char *kBrokenManifest = R"({
  "arch": "sm_90a", "block": [128, 1, 1], "cluster": [1, 1, 1],
  "cubin": "mosaic_gpu_broken.ptx", "dynamic_smem_bytes": 0,
  "entry": "smem_race", "grid": [1, 1, 1],
  "parameters": [{"alignment": 16, "element_type": "i32", "index": 0,
                  "kind": "buffer", "shape": [1]}],
  "tensor_maps": []
})";

/// Declares `name` as the value of `expr`, an `Expected`, or ends the test
/// with its message.
#define ASSIGN_OR_FAIL(name, expr)                                             \
  auto name##Expected = (expr);                                                \
  ASSERT_TRUE(name##Expected.ok()) << name##Expected.message();                \
  auto &name = *name##Expected

class Gpu : public testing::Test {
protected:
  void SetUp() override {
    Expected<Backend> backend = backendFromEnvironment();
    ASSERT_TRUE(backend.ok()) << backend.message();
    // A machine may lack a GPU, but the emulator needs none.
    bool emulated = *backend == Backend::Emulator;
    Expected<const Driver *> loaded = Driver::get(*backend);
    if (!loaded.ok()) {
      ASSERT_FALSE(emulated) << loaded.message();
      GTEST_SKIP() << loaded.message();
    }
    driver = *loaded;
    // The CUDA backend runs on the emulator too when MOSAIC_CUDA_DRIVER
    // names it.
    emulated = driver->isEmulator();
    Expected<Context> opened = Context::open(*driver, 0);
    if (!opened.ok()) {
      ASSERT_FALSE(emulated) << opened.message();
      GTEST_SKIP() << opened.message();
    }
    context.emplace(std::move(*opened));
    if (context->computeCapability() != 90) {
      std::string reason = "the test kernels are PTX for sm_90a; device 0 (" +
                           context->name() + ") is sm_" +
                           std::to_string(context->computeCapability());
      ASSERT_FALSE(emulated) << reason;
      GTEST_SKIP() << reason;
    }
    writeTempFile("mosaic_gpu_elementwise.ptx", kElementwisePtx);
    writeTempFile("mosaic_gpu_roundtrip.ptx", kRoundTripPtx);
    writeTempFile("mosaic_gpu_broken.ptx", kBrokenPtx);
  }

  /// Parses `json` (relative paths from the temporary directory) and loads
  /// the kernel.
  Expected<Kernel> load(const std::string &json) {
    Expected<Manifest> manifest = parseManifest(json, testing::TempDir());
    MOSAIC_RETURN_IF_ERROR(manifest);
    return Kernel::load(*context, *manifest);
  }

  std::string loadError(const std::string &json) {
    Expected<Kernel> kernel = load(json);
    EXPECT_FALSE(kernel.ok());
    return kernel.message();
  }

  Expected<DeviceBuffer> allocate(size_t bytes) {
    return DeviceBuffer::allocate(*context, bytes);
  }

  void synchronize() {
    Status status = driver->check(driver->cuCtxSynchronize(), "sync");
    ASSERT_TRUE(status.ok()) << status.message();
  }

  const Driver *driver = nullptr;
  std::optional<Context> context;
};

TEST_F(Gpu, DeviceBufferCopiesAndFills) {
  ASSIGN_OR_FAIL(buffer, allocate(1 << 20));
  std::vector<uint8_t> pattern(1 << 20), back(1 << 20);
  for (size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = static_cast<uint8_t>(i * 7 + 3);
  ASSERT_TRUE(buffer.upload(pattern.data()).ok());
  ASSERT_TRUE(buffer.download(back.data()).ok());
  EXPECT_EQ(back, pattern);
  ASSERT_TRUE(buffer.fill(0xAB).ok());
  ASSERT_TRUE(buffer.download(back.data()).ok());
  EXPECT_EQ(back, std::vector<uint8_t>(1 << 20, 0xAB));
}

TEST_F(Gpu, LaunchesAnElementwiseKernel) {
  constexpr int kElements = 8192;
  ASSIGN_OR_FAIL(kernel, load(elementwiseManifest("mosaic_gpu_elementwise.ptx",
                                                  kElements, kElements / 128)));
  std::vector<float> x(kElements), y(kElements), out(kElements);
  for (int i = 0; i < kElements; ++i) {
    x[i] = 0.25f * (i % 97) - 7;
    y[i] = 1.5f - 0.125f * (i % 31);
  }
  ASSIGN_OR_FAIL(dx, allocate(4 * kElements));
  ASSIGN_OR_FAIL(dy, allocate(4 * kElements));
  ASSIGN_OR_FAIL(dout, allocate(4 * kElements));
  ASSERT_TRUE(dx.upload(x.data()).ok());
  ASSERT_TRUE(dy.upload(y.data()).ok());
  std::vector<int64_t> shape = {kElements};
  Expected<Launch> launch =
      kernel.prepare({{dx.pointer(), ElementType::F32, shape},
                      {dy.pointer(), ElementType::F32, shape},
                      {dout.pointer(), ElementType::F32, shape}});
  ASSERT_TRUE(launch.ok()) << launch.message();
  Status ran = launch->run(nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  synchronize();
  ASSERT_TRUE(dout.download(out.data()).ok());
  for (int i = 0; i < kElements; ++i)
    ASSERT_EQ(out[i], std::fma(x[i], y[i], x[i])) << "element " << i;
}

TEST_F(Gpu, DriverChecksOfPointers) {
  ASSIGN_OR_FAIL(kernel, load(elementwiseManifest("mosaic_gpu_elementwise.ptx",
                                                  8192, 64)));
  ASSIGN_OR_FAIL(good, allocate(4 * 8192));
  std::vector<int64_t> shape = {8192};
  alignas(16) static float host[8192];
  Expected<Launch> hostPointer = kernel.prepare(
      {{reinterpret_cast<CUdeviceptr>(host), ElementType::F32, shape},
       {good.pointer(), ElementType::F32, shape},
       {good.pointer(), ElementType::F32, shape}});
  ASSERT_FALSE(hostPointer.ok());
  EXPECT_EQ(hostPointer.message().rfind("parameter 0: 0x", 0), 0u);
  EXPECT_TRUE(hostPointer.message().find("is not a device pointer") !=
                  std::string::npos ||
              hostPointer.message().find("is host memory") != std::string::npos)
      << hostPointer.message();

  // 1024 bytes before the end of a 4 MiB allocation.
  ASSIGN_OR_FAIL(large, allocate(4 << 20));
  CUdeviceptr tail = large.pointer() + (4 << 20) - 1024;
  Expected<Launch> tooSmall =
      kernel.prepare({{good.pointer(), ElementType::F32, shape},
                      {good.pointer(), ElementType::F32, shape},
                      {tail, ElementType::F32, shape}});
  ASSERT_FALSE(tooSmall.ok());
  EXPECT_EQ(tooSmall.message(),
            "parameter 2: " + formatAddress(tail) +
                " has 1024 bytes left in its allocation, but the kernel "
                "accesses a f32 buffer of shape [8192] (32768 bytes)");
}

TEST_F(Gpu, LaunchesClusters) {
  for (uint32_t cluster : {1u, 2u, 4u}) {
    ASSIGN_OR_FAIL(kernel,
                   load(replaceOnce(kClusterManifest, "\"cluster\": [2, 1, 1]",
                                    "\"cluster\": [" + std::to_string(cluster) +
                                        ", 1, 1]")));
    ASSIGN_OR_FAIL(out, allocate(4 * 8));
    ASSERT_TRUE(out.fill(0).ok());
    Expected<Launch> launch =
        kernel.prepare({{out.pointer(), ElementType::I32, {8}}});
    ASSERT_TRUE(launch.ok()) << launch.message();
    Status ran = launch->run(nullptr);
    ASSERT_TRUE(ran.ok()) << ran.message();
    synchronize();
    std::vector<uint32_t> sizes(8);
    ASSERT_TRUE(out.download(sizes.data()).ok());
    EXPECT_EQ(sizes, std::vector<uint32_t>(8, cluster))
        << "cluster " << cluster;
  }
}

TEST_F(Gpu, TmaRoundTripThroughTheRuntime) {
  ASSIGN_OR_FAIL(kernel, load(kRoundTripManifest));
  const BufferParameter &parameter = kernel.manifest().buffers[0];
  std::mt19937_64 rng(11);
  mosaic::run::HostBuffer input = mosaic::run::randomBuffer(parameter, rng);
  ASSIGN_OR_FAIL(in, allocate(parameter.byteSize()));
  ASSIGN_OR_FAIL(out, allocate(parameter.byteSize()));
  ASSERT_TRUE(in.upload(input.bytes.data()).ok());
  ASSERT_TRUE(out.fill(mosaic::run::kPoisonByte).ok());
  Expected<Launch> launch =
      kernel.prepare({{in.pointer(), ElementType::BF16, {256, 64}},
                      {out.pointer(), ElementType::BF16, {256, 64}}});
  ASSERT_TRUE(launch.ok()) << launch.message();
  Status ran = launch->run(nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  synchronize();
  std::vector<uint8_t> bytes(parameter.byteSize());
  ASSERT_TRUE(out.download(bytes.data()).ok());
  mosaic::run::HostBuffer output =
      mosaic::run::decodeBuffer(parameter, std::move(bytes));
  for (size_t i = 0; i < output.values.size(); ++i)
    ASSERT_EQ(output.values[i], 2 * input.values[i]) << "element " << i;
}

TEST_F(Gpu, LoadErrors) {
  std::string manifest =
      elementwiseManifest("mosaic_gpu_elementwise.ptx", 8192, 64);
  EXPECT_EQ(loadError(replaceOnce(manifest, "\"sm_90a\"", "\"sm_100a\"")),
            "`elementwise` is compiled for sm_100a, but device 0 (" +
                context->name() + ") is sm_90");
  EXPECT_EQ(loadError(replaceOnce(manifest, "\"entry\": \"elementwise\"",
                                  "\"entry\": \"nope\""))
                .rfind("`" + testing::TempDir() +
                           "mosaic_gpu_elementwise.ptx` has no kernel `nope` "
                           "(cuModuleGetFunction): CUDA_ERROR_NOT_FOUND",
                       0),
            0u);
  EXPECT_EQ(loadError(replaceOnce(manifest, "mosaic_gpu_elementwise.ptx",
                                  "missing.cubin")),
            "cannot read `" + testing::TempDir() +
                "missing.cubin`: No such file or directory");
  std::string smem = loadError(replaceOnce(
      manifest, "\"dynamic_smem_bytes\": 0", "\"dynamic_smem_bytes\": 300000"));
  EXPECT_EQ(smem.rfind("`elementwise` needs 300000 bytes of dynamic and 0 "
                       "bytes of static shared memory, but device 0 (",
                       0),
            0u)
      << smem;
  EXPECT_EQ(loadError(replaceOnce(manifest, "\"block\": [128, 1, 1]",
                                  "\"block\": [2048, 1, 1]")),
            "`block` [2048, 1, 1] exceeds device 0 (" + context->name() +
                ")'s limit [1024, 1024, 64]");
  std::string garbage = writeTempFile("mosaic_gpu_garbage.cubin", "garbage");
  std::string loaded = loadError(replaceOnce(
      manifest, "mosaic_gpu_elementwise.ptx", "mosaic_gpu_garbage.cubin"));
  EXPECT_EQ(
      loaded.rfind("cuModuleLoadDataEx(`" + garbage + "`): CUDA_ERROR_", 0), 0u)
      << loaded;
  if (driver->isEmulator()) {
    // An ELF file is a CUBIN, which the emulator cannot run.
    std::string elf = writeTempFile("mosaic_gpu_elf.cubin", "\177ELF\2\1\1");
    EXPECT_EQ(loadError(replaceOnce(manifest, "mosaic_gpu_elementwise.ptx",
                                    "mosaic_gpu_elf.cubin")),
              "the emulator runs PTX, but `" + elf +
                  "` is a CUBIN and the manifest names no `ptx`; recompile "
                  "`elementwise` with this mosaic-compile, which writes the "
                  "PTX beside the CUBIN");
    // With a `ptx`, the emulator loads it and ignores the CUBIN.
    std::string both = replaceOnce(manifest, "mosaic_gpu_elementwise.ptx",
                                   "mosaic_gpu_elf.cubin");
    both = replaceOnce(both, "\"entry\"",
                       "\"ptx\": \"mosaic_gpu_elementwise.ptx\", \"entry\"");
    Expected<Kernel> kernel = load(both);
    EXPECT_TRUE(kernel.ok()) << kernel.message();
  }
}

TEST_F(Gpu, MosaicRunPassesCorrectKernels) {
  std::string elementwise = writeTempFile(
      "mosaic_gpu_elementwise.json",
      elementwiseManifest("mosaic_gpu_elementwise.ptx", 1 << 20, 8192));
  std::string json = testing::TempDir() + "mosaic_gpu_result.json";
  Outcome outcome = runMosaicRun(elementwise + " --reps=20 --json=" + json);
  EXPECT_EQ(outcome.status, 0) << outcome.output;
  EXPECT_NE(outcome.output.find("elementwise (f32 [1048576], f32 [1048576] "
                                "-> f32 [1048576]): PASS; relative error "),
            std::string::npos)
      << outcome.output;
  Expected<std::string> text = readFile(json);
  ASSERT_TRUE(text.ok()) << text.message();
  Expected<JsonValue> result = parseJson(*text);
  ASSERT_TRUE(result.ok()) << result.message();
  EXPECT_TRUE(result->find("passed")->asBool());
  EXPECT_EQ(result->find("compared")->asInteger(), 1 << 20);
  EXPECT_EQ(result->find("emulated")->asBool(), driver->isEmulator());
  if (driver->isEmulator()) {
    // The emulator's wall time is no GPU timing: there is none.
    EXPECT_EQ(result->find("median_ms"), nullptr);
    EXPECT_NE(outcome.output.find("; emulated, not timed"), std::string::npos)
        << outcome.output;
  } else {
    EXPECT_GT(result->find("median_ms")->asNumber(), 0);
  }

  std::string roundTrip =
      writeTempFile("mosaic_gpu_roundtrip.json", kRoundTripManifest);
  outcome = runMosaicRun(roundTrip + " --reps=20");
  EXPECT_EQ(outcome.status, 0) << outcome.output;
  EXPECT_NE(outcome.output.find("tma_roundtrip (bf16 [256, 64] -> bf16 "
                                "[256, 64]): PASS"),
            std::string::npos)
      << outcome.output;
}

TEST_F(Gpu, MosaicRunFailsWrongKernels) {
  // Half the blocks: half the output is never written.
  std::string half = writeTempFile(
      "mosaic_gpu_half.json",
      elementwiseManifest("mosaic_gpu_elementwise.ptx", 1 << 20, 4096));
  Outcome outcome = runMosaicRun(half);
  EXPECT_EQ(outcome.status, 1) << outcome.output;
  EXPECT_NE(outcome.output.find("FAIL: parameter 2: 524288 of 1048576 "
                                "elements were not written (the first at "
                                "flat index 524288)"),
            std::string::npos)
      << outcome.output;
  // Without a reference, the outputs must still be written and finite.
  std::string roundTrip =
      writeTempFile("mosaic_gpu_roundtrip.json", kRoundTripManifest);
  outcome = runMosaicRun(roundTrip + " --check=none --reps=3");
  EXPECT_EQ(outcome.status, 0) << outcome.output;
  EXPECT_NE(outcome.output.find("no reference (--check=none)"),
            std::string::npos)
      << outcome.output;
}

// Last, in case a failed launch spoils the context as it does on a GPU. As
// on a GPU, the launch returns before the kernel fails, and the next
// synchronizing call returns the fault's code with the emulator's report; a
// data race is a hazard (CUDA_ERROR_LAUNCH_FAILED), and fails mosaic-run too.
TEST_F(Gpu, EmulatorReportsHazards) {
  if (!driver->isEmulator())
    GTEST_SKIP() << "hazards are reported by the emulator only";
  ASSIGN_OR_FAIL(kernel, load(kBrokenManifest));
  ASSIGN_OR_FAIL(out, allocate(4));
  Expected<Launch> launch =
      kernel.prepare({{out.pointer(), ElementType::I32, {1}}});
  ASSERT_TRUE(launch.ok()) << launch.message();
  ASSERT_TRUE(launch->run(nullptr).ok());
  Status ran = driver->check(driver->cuCtxSynchronize(), "cuCtxSynchronize");
  ASSERT_FALSE(ran.ok()) << "a data race ran without a hazard";
  EXPECT_NE(ran.message().find("CUDA_ERROR_LAUNCH_FAILED"), std::string::npos)
      << ran.message();
  std::string report = driver->emulatorReport();
  EXPECT_NE(report.find("hazard"), std::string::npos) << report;
  EXPECT_NE(ran.message().find("\n" + report), std::string::npos)
      << ran.message();

  std::string manifest =
      writeTempFile("mosaic_gpu_broken.json", kBrokenManifest);
  Outcome outcome = runMosaicRun(manifest + " --check=none");
  EXPECT_EQ(outcome.status, 1) << outcome.output;
  EXPECT_NE(outcome.output.find("mosaic-run: error: "), std::string::npos)
      << outcome.output;
  EXPECT_NE(outcome.output.find("hazard"), std::string::npos) << outcome.output;
}

TEST_F(Gpu, EmulatorReportsFaults) {
  if (!driver->isEmulator())
    GTEST_SKIP() << "a fault on a GPU spoils the process's context";
  ASSIGN_OR_FAIL(kernel,
                 load(replaceOnce(kBrokenManifest, "smem_race", "null_store")));
  ASSIGN_OR_FAIL(out, allocate(4));
  Expected<Launch> launch =
      kernel.prepare({{out.pointer(), ElementType::I32, {1}}});
  ASSERT_TRUE(launch.ok()) << launch.message();
  ASSERT_TRUE(launch->run(nullptr).ok());
  Status ran = driver->check(driver->cuCtxSynchronize(), "cuCtxSynchronize");
  ASSERT_FALSE(ran.ok()) << "a store through a null pointer ran";
  EXPECT_NE(ran.message().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos)
      << ran.message();
  std::string report = driver->emulatorReport();
  EXPECT_FALSE(report.empty());
  EXPECT_NE(ran.message().find("\n" + report), std::string::npos)
      << ran.message();
}

} // namespace
