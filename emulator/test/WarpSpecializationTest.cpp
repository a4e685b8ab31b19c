//===- WarpSpecializationTest.cpp - setmaxnreg, named barriers, clusters --===//
//
// What a warp-specialized GEMM in clusters of two CTAs relies on: a
// producer warpgroup that gives registers back (setmaxnreg.dec) to consumer
// warpgroups that take them (setmaxnreg.inc, which waits for them), named
// barriers per role, and a cluster whose CTAs multicast TMA loads into each
// other and arrive on each other's mbarriers. Each behaviour is checked
// against the PTX ISA: the values a kernel computes, and the error or
// deadlock report when a kernel breaks a rule.
//
//===----------------------------------------------------------------------===//

#include "TestKernels.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mosaic::emulator {
namespace {

using test::allocate;
using test::DeviceBuffer;
using test::Kernel;
using test::namesLine;
using test::ptxModule;
using test::testOptions;

/// The schedules a race-free kernel must give the same results under.
std::vector<std::pair<std::string, Options>> schedules() {
  std::vector<std::pair<std::string, Options>> all = {
      {"lazy, round robin", testOptions(AsyncPolicy::Lazy)},
      {"eager, round robin", testOptions(AsyncPolicy::Eager)}};
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Options options = testOptions(AsyncPolicy::Random);
    options.randomSchedule = true;
    options.seed = seed;
    all.push_back({"random, seed " + std::to_string(seed), options});
  }
  return all;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// --- setmaxnreg
// ---------------------------------------------------------------

// 384 threads, one CTA per SM: ptxas fixes 168 registers per thread.
constexpr const char *kThreeWarpgroups = ".maxntid 384, 1, 1\n.minnctapersm 1";
constexpr const char *kDecreaseTo40 = "setmaxnreg.dec.sync.aligned.u32 40;";
constexpr const char *kIncreaseTo232 = "setmaxnreg.inc.sync.aligned.u32 232;";

/// What warp_roles stores for thread t.
uint32_t warpRoleValue(uint32_t t) {
  if (t >= 128)
    return t + 1000;
  uint32_t x = t;
  for (int i = 0; i < 200; ++i)
    x = x * 1664525u + 1013904223u;
  return x;
}

LaunchReport launchWarpRoles(const Kernel &kernel, DeviceBuffer &out,
                             DeviceMemory &memory, const Options &options) {
  return kernel.launch(384, kernel.parameters().set("out", out.address), memory,
                       options);
}

// The CUTLASS split: 40 + 2 x 232 = 3 x 168, so the consumers' .inc takes
// exactly what the producer's .dec released, and waits for it (the
// producer works first).
TEST(SetmaxnregTest, ConsumersTakeWhatTheProducerReleases) {
  for (const char *bounds : {kThreeWarpgroups, ".maxnreg 168"}) {
    Kernel kernel(
        ptxModule(test::warpRolesKernel(bounds, kDecreaseTo40, kIncreaseTo232)),
        "warp_roles");
    ASSERT_TRUE(kernel.ok());
    Expected<std::shared_ptr<const Module>> module =
        Module::load(kernel.text());
    ASSERT_TRUE(module.ok());
    EXPECT_EQ((*module)->kernel("warp_roles")->entryRegisters, 168u) << bounds;
    for (const auto &[name, options] : schedules()) {
      DeviceMemory memory;
      DeviceBuffer out = allocate(memory, 384 * 4);
      LaunchReport report = launchWarpRoles(kernel, out, memory, options);
      ASSERT_TRUE(report.ok)
          << bounds << ", " << name << ": " << report.message;
      for (uint32_t t = 0; t < 384; ++t)
        ASSERT_EQ(out.as<uint32_t>()[t], warpRoleValue(t))
            << bounds << ", " << name << ", thread " << t;
    }
  }
}

// The PTX ISA: setmaxnreg.inc blocks until the CTA's pool has the
// registers. If the producer never releases any, the consumers wait
// forever, and the report says for how many registers.
TEST(SetmaxnregTest, IncreaseNothingReleasesIsADeadlock) {
  Kernel kernel(ptxModule(test::warpRolesKernel(kThreeWarpgroups,
                                                "// (keeps its registers)",
                                                kIncreaseTo232)),
                "warp_roles");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 384 * 4);
  LaunchReport report = launchWarpRoles(kernel, out, memory, testOptions());
  ASSERT_FALSE(report.ok);
  const std::string &m = report.message;
  EXPECT_TRUE(report.hazard) << m;
  EXPECT_TRUE(contains(m, "deadlock")) << m;
  EXPECT_TRUE(contains(m, "setmaxnreg.inc")) << m;
  // Each consumer warp: 32 threads x (232 - 168) registers; none are free.
  EXPECT_TRUE(contains(m, "for 2048 registers (32 threads x (232 - 168))"))
      << m;
  EXPECT_TRUE(contains(m, "pool holds 0")) << m;
  EXPECT_TRUE(contains(m, "warp 4")) << m;
  EXPECT_TRUE(contains(m, "warp 11")) << m;
  EXPECT_FALSE(contains(m, "warp 0 ")) << "the producer exited: " << m;
  EXPECT_TRUE(namesLine(m, kernel.line("// CONSUMER"))) << m;
}

// The count at entry is at most the largest .inc count (ptxas), so an .inc
// that lowers the count follows an .inc to more.
TEST(SetmaxnregTest, IncreaseBelowTheWarpsCountIsAnError) {
  Kernel kernel(ptxModule(test::warpRolesKernel(
                    kThreeWarpgroups, kDecreaseTo40,
                    "setmaxnreg.inc.sync.aligned.u32 232;\n"
                    "  bar.sync 1, 256;\n"
                    "  setmaxnreg.inc.sync.aligned.u32 200;")),
                "warp_roles");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 384 * 4);
  LaunchReport report = launchWarpRoles(kernel, out, memory, testOptions());
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(namesLine(report.message, kernel.line("// CONSUMER")))
      << report.message;
  EXPECT_TRUE(contains(report.message, "setmaxnreg.inc to 200 registers per "
                                       "thread, but the warp holds 232"))
      << report.message;
}

TEST(SetmaxnregTest, DecreaseAboveTheWarpsCountIsAnError) {
  Kernel kernel(ptxModule(test::warpRolesKernel(
                    kThreeWarpgroups, "setmaxnreg.dec.sync.aligned.u32 200;",
                    kIncreaseTo232)),
                "warp_roles");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 384 * 4);
  LaunchReport report = launchWarpRoles(kernel, out, memory, testOptions());
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(namesLine(report.message, kernel.line("// PRODUCER")))
      << report.message;
  EXPECT_TRUE(contains(report.message, "setmaxnreg.dec to 200 registers per "
                                       "thread, but the warp holds 168"))
      << report.message;
}

// Without .maxnreg or .minnctapersm ptxas cannot fix the register count at
// entry and drops every setmaxnreg (C7508): nothing is moved, nothing
// waits.
TEST(SetmaxnregTest, WithoutARegisterBoundNothingIsMoved) {
  Kernel kernel(ptxModule(test::warpRolesKernel(".maxntid 384, 1, 1",
                                                "// (keeps its registers)",
                                                kIncreaseTo232)),
                "warp_roles");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 384 * 4);
  LaunchReport report = launchWarpRoles(kernel, out, memory, testOptions());
  ASSERT_TRUE(report.ok) << report.message;
  EXPECT_EQ(out.as<uint32_t>()[200], warpRoleValue(200));
}

TEST(SetmaxnregTest, CountOutsideTheIsaRangeDoesNotLoad) {
  std::string ptx = ptxModule(test::warpRolesKernel(
      kThreeWarpgroups, kDecreaseTo40, "setmaxnreg.inc.sync.aligned.u32 236;"));
  Expected<std::shared_ptr<const Module>> module = Module::load(ptx);
  ASSERT_FALSE(module.ok());
  EXPECT_TRUE(contains(module.message(), "not a multiple of 8 in 24..256"))
      << module.message();
  EXPECT_TRUE(namesLine(module.message(), test::lineOf(ptx, "// CONSUMER")))
      << module.message();
}

// .aligned: every warp of the warpgroup executes the same setmaxnreg.
TEST(SetmaxnregTest, WarpsOfAWarpgroupExecutingDifferentOnesIsAnError) {
  Kernel kernel(ptxModule(test::kMismatchedSetmaxnregKernel),
                "mismatched_setmaxnreg");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  LaunchReport report =
      kernel.launch(128, kernel.parameters(), memory, testOptions());
  ASSERT_FALSE(report.ok);
  const std::string &m = report.message;
  EXPECT_TRUE(contains(m, "different setmaxnreg")) << m;
  EXPECT_TRUE(namesLine(m, kernel.line("// FIRST"))) << m;
  EXPECT_TRUE(namesLine(m, kernel.line("// OTHER"))) << m;
  EXPECT_TRUE(contains(m, "u32 40")) << m;
  EXPECT_TRUE(contains(m, "u32 48")) << m;
}

TEST(SetmaxnregTest, IncompleteWarpgroupIsAnError) {
  Kernel kernel(ptxModule(test::kMismatchedSetmaxnregKernel),
                "mismatched_setmaxnreg");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  LaunchReport report =
      kernel.launch(96, kernel.parameters(), memory, testOptions());
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(contains(report.message, "needs a whole warpgroup"))
      << report.message;
}

TEST(SetmaxnregTest, AWarpThatExitsInsteadIsAnError) {
  Kernel kernel(ptxModule(test::kSetmaxnregExitKernel), "setmaxnreg_exit");
  ASSERT_TRUE(kernel.ok());
  for (const auto &[name, options] : schedules()) {
    DeviceMemory memory;
    LaunchReport report =
        kernel.launch(128, kernel.parameters(), memory, options);
    ASSERT_FALSE(report.ok) << name;
    // Either warp 3 exits after another warp reached the setmaxnreg, or a
    // warp reaches it after warp 3 exited.
    EXPECT_TRUE(contains(report.message, "warp 3"))
        << name << ": " << report.message;
    EXPECT_TRUE(contains(report.message, "all four warps of a warpgroup"))
        << name << ": " << report.message;
  }
}

// After a setmaxnreg the warps of the warpgroup synchronize before the
// next one. A warp that runs ahead is an error when the others have not
// reached the first one yet, and a hazard when they have but nothing
// orders their setmaxnreg before its next one.
TEST(SetmaxnregTest, WarpsSynchronizeBetweenTwo) {
  const std::string spin = "mov.u32 %i, 0;\n"
                           "$L_spin:\n"
                           "  add.u32 %i, %i, 1;\n"
                           "  setp.lt.u32 %p, %i, 40;\n"
                           "  @%p bra $L_spin;";
  for (const std::string &between : {std::string("// (nothing)"), spin}) {
    Kernel kernel(ptxModule(test::setmaxnregTwiceKernel(between)),
                  "setmaxnreg_twice");
    ASSERT_TRUE(kernel.ok());
    DeviceMemory memory;
    LaunchReport report =
        kernel.launch(128, kernel.parameters(), memory, testOptions());
    ASSERT_FALSE(report.ok) << between;
    EXPECT_TRUE(contains(report.message, "synchronize")) << report.message;
    EXPECT_TRUE(namesLine(report.message, kernel.line("// SECOND")))
        << report.message;
  }
  // The spin gives every warp time to execute the first one: what is left
  // is the missing synchronization, a hazard.
  Kernel spinning(ptxModule(test::setmaxnregTwiceKernel(spin)),
                  "setmaxnreg_twice");
  DeviceMemory memory;
  LaunchReport report =
      spinning.launch(128, spinning.parameters(), memory, testOptions());
  EXPECT_TRUE(report.hazard) << report.message;

  Kernel fixed(ptxModule(test::setmaxnregTwiceKernel("bar.sync 1, 128;")),
               "setmaxnreg_twice");
  ASSERT_TRUE(fixed.ok());
  for (const auto &[name, options] : schedules()) {
    LaunchReport clean = fixed.launch(128, fixed.parameters(), memory, options);
    EXPECT_TRUE(clean.ok) << name << ": " << clean.message;
  }
}

// --- Named barriers -------------------------------------------------------

// Barriers 1 and 15 (128 threads, one consumer warpgroup each), 7 (256
// threads, both consumer warpgroups) and 3 (warp 0's bar.arrive with warp
// 4's bar.sync): the producer warpgroup never waits on the consumers'
// barriers, and the checker finds every read ordered after its write.
TEST(NamedBarrierTest, RolesSynchronizeOnTheirOwnBarriers) {
  Kernel kernel(ptxModule(test::kNamedBarriersKernel), "named_barriers");
  ASSERT_TRUE(kernel.ok());
  for (const auto &[name, options] : schedules()) {
    DeviceMemory memory;
    DeviceBuffer out = allocate(memory, 384 * 12);
    LaunchReport report = kernel.launch(
        384, kernel.parameters().set("out", out.address), memory, options);
    ASSERT_TRUE(report.ok) << name << ": " << report.message;
    for (uint32_t t = 0; t < 384; ++t) {
      const uint32_t *got = out.as<uint32_t>() + 3 * t;
      uint32_t a = 0, b = 0, c = 0;
      if (t >= 128) {
        a = t ^ 32;
        b = t < 256 ? t + 128 : t - 128;
        c = t / 32 == 4 ? t - 128 + 1000 : 0;
      }
      ASSERT_EQ(got[0], a) << name << ", thread " << t;
      ASSERT_EQ(got[1], b) << name << ", thread " << t;
      ASSERT_EQ(got[2], c) << name << ", thread " << t;
    }
  }
}

TEST(NamedBarrierTest, MismatchedThreadCountsAreAnError) {
  Kernel kernel(ptxModule(test::barrierMisuseKernel(
                    test::BarrierMisuse::MismatchedCount)),
                "barrier_misuse");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  LaunchReport report =
      kernel.launch(96, kernel.parameters(), memory, testOptions());
  ASSERT_FALSE(report.ok);
  const std::string &m = report.message;
  EXPECT_TRUE(contains(m, "barrier 2 expects 96 threads")) << m;
  EXPECT_TRUE(contains(m, "this arrival says 64")) << m;
  EXPECT_TRUE(namesLine(m, kernel.line("// MISMATCH"))) << m;
  EXPECT_TRUE(namesLine(m, kernel.line("// SET"))) << m;
}

// PTX ISA, barrier: a warp must not arrive on a barrier again (bar.arrive
// followed by any barrier instruction on it) before it completes.
TEST(NamedBarrierTest, ArrivingTwiceBeforeCompletionIsAnError) {
  Kernel kernel(
      ptxModule(test::barrierMisuseKernel(test::BarrierMisuse::ArrivesTwice)),
      "barrier_misuse");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  LaunchReport report =
      kernel.launch(64, kernel.parameters(), memory, testOptions());
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(contains(report.message, "warp 0 arrives at barrier 4 again"))
      << report.message;
  EXPECT_TRUE(namesLine(report.message, kernel.line("// AGAIN")))
      << report.message;
}

TEST(NamedBarrierTest, ThreadCountAboveTheCtaIsAnError) {
  Kernel kernel(
      ptxModule(test::barrierMisuseKernel(test::BarrierMisuse::CountAboveCta)),
      "barrier_misuse");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  LaunchReport report =
      kernel.launch(64, kernel.parameters(), memory, testOptions());
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(contains(report.message, "128 exceeds the CTA's 64 threads"))
      << report.message;
  EXPECT_TRUE(namesLine(report.message, kernel.line("// TOO_MANY")))
      << report.message;
}

// --- Clusters -------------------------------------------------------------

// A grid of 4 x 2 CTAs in clusters of 2 x 2. PTX ISA, special registers:
// %cluster_ctarank is the CTA's linear index in its cluster, x fastest.
TEST(ClusterTest, SpecialRegistersAndDistributedSharedMemory) {
  Kernel kernel(ptxModule(test::kClusterIdsKernel), "cluster_ids");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 8 * 64);
  LaunchConfig config;
  config.grid = {4, 2, 1};
  config.block = {32, 1, 1};
  config.cluster = {2, 2, 1};
  LaunchReport report =
      kernel.launch(config, kernel.parameters().set("out", out.address), memory,
                    testOptions());
  ASSERT_TRUE(report.ok) << report.message;
  for (uint32_t y = 0; y < 2; ++y)
    for (uint32_t x = 0; x < 4; ++x) {
      uint32_t rank = x % 2 + 2 * (y % 2);
      uint32_t expected[test::kClusterIdWords] = {x,
                                                  y,
                                                  x / 2,
                                                  y / 2,
                                                  2,
                                                  1,
                                                  x % 2,
                                                  y % 2,
                                                  2,
                                                  2,
                                                  rank,
                                                  4,
                                                  100 * ((rank + 1) % 4) + 7};
      const uint32_t *got = out.as<uint32_t>() + 16 * (4 * y + x);
      for (unsigned i = 0; i < test::kClusterIdWords; ++i)
        EXPECT_EQ(got[i], expected[i])
            << "CTA (" << x << ", " << y << "), word " << i;
    }
}

// Two clusters of two CTAs, each a producer and two consumer warpgroups
// (see wsClusterKernel): multicast TMA completing on the mbarrier at the
// same offset in both CTAs, remote arrivals with and without a count,
// setmaxnreg, named barriers per warpgroup, barrier.cluster. Consumer
// thread t sums element e = t % 64 of four stages: rows 8i..8i+7 of the
// tensor, element e of stage i being tensor element 64 i + e.
TEST(ClusterTest, WarpSpecializedPipelineWithMulticast) {
  Kernel kernel(ptxModule(test::wsClusterKernel(true)), "ws_cluster");
  ASSERT_TRUE(kernel.ok());
  for (const auto &[name, options] : schedules()) {
    DeviceMemory memory;
    DeviceBuffer tensor = allocate(memory, 32 * 8 * 4);
    for (int i = 0; i < 256; ++i)
      tensor.as<float>()[i] = 0.5f * float(i) - 3.0f;
    auto map =
        test::tensorMap2d(tensor.address, test::kTensorFloat32, 32, 8, 4, 8);
    DeviceBuffer out = allocate(memory, 4 * 256 * 4);
    LaunchConfig config;
    config.grid = {4, 1, 1};
    config.block = {384, 1, 1};
    config.cluster = {2, 1, 1};
    LaunchReport report = kernel.launch(config,
                                        kernel.parameters()
                                            .set("map", map.data(), map.size())
                                            .set("out", out.address),
                                        memory, options);
    ASSERT_TRUE(report.ok) << name << ": " << report.message;
    for (uint32_t cta = 0; cta < 4; ++cta)
      for (uint32_t t = 128; t < 384; ++t) {
        uint32_t e = t % 64;
        float sum = 0;
        for (uint32_t i = 0; i < 4; ++i)
          sum += 0.5f * float(64 * i + e) - 3.0f;
        ASSERT_EQ(out.as<float>()[256 * cta + t - 128], sum)
            << name << ", CTA " << cta << ", thread " << t;
      }
  }
}

// cp.async.bulk with .multicast::cluster: each CTA copies half the bytes
// into both CTAs; each CTA's mbarrier sees all 256.
TEST(ClusterTest, BulkCopyMulticastFillsEveryCta) {
  Kernel kernel(ptxModule(test::kBulkMulticastKernel), "bulk_multicast");
  ASSERT_TRUE(kernel.ok());
  for (const auto &[name, options] : schedules()) {
    DeviceMemory memory;
    DeviceBuffer in = allocate(memory, 256);
    DeviceBuffer out = allocate(memory, 2 * 256);
    for (uint32_t i = 0; i < 64; ++i)
      in.as<uint32_t>()[i] = 7 * i + 3;
    LaunchConfig config;
    config.grid = {2, 1, 1};
    config.block = {32, 1, 1};
    config.cluster = {2, 1, 1};
    LaunchReport report = kernel.launch(
        config,
        kernel.parameters().set("in", in.address).set("out", out.address),
        memory, options);
    ASSERT_TRUE(report.ok) << name << ": " << report.message;
    for (uint32_t rank = 0; rank < 2; ++rank)
      for (uint32_t i = 0; i < 64; ++i)
        ASSERT_EQ(out.as<uint32_t>()[64 * rank + i], 7 * i + 3)
            << name << ", CTA rank " << rank << ", word " << i;
  }
}

// Without .multicast::cluster a copy completes on an mbarrier of the CTA
// it writes; with it, the ctaMask operand names the CTAs.
TEST(ClusterTest, CopyOperandsAreChecked) {
  const std::string copy =
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes";
  const std::pair<std::string, std::string> cases[] = {
      {copy + " [buffer], [%rd0], 128, [%remote];",
       "completes on an mbarrier of CTA rank 1 (they must be in the same "
       "CTA)"},
      {copy + ".multicast::cluster [buffer], [%rd0], 128, [bar];",
       ".multicast::cluster without a ctaMask operand"},
  };
  for (const auto &[instruction, error] : cases) {
    Kernel kernel(ptxModule(test::copyMisuseKernel(instruction)),
                  "copy_misuse");
    ASSERT_TRUE(kernel.ok());
    DeviceMemory memory;
    DeviceBuffer in = allocate(memory, 128);
    LaunchConfig config;
    config.grid = {2, 1, 1};
    config.block = {32, 1, 1};
    config.cluster = {2, 1, 1};
    LaunchReport report =
        kernel.launch(config, kernel.parameters().set("in", in.address), memory,
                      testOptions());
    ASSERT_FALSE(report.ok) << instruction;
    EXPECT_TRUE(contains(report.message, error)) << report.message;
    EXPECT_TRUE(namesLine(report.message, kernel.line("// COPY")))
        << report.message;
  }
}

// PTX ISA, barrier.cluster: wait "for all non-exited threads of the
// cluster" to arrive. Warp 0 of each CTA exits after warp 1 arrived: the
// barrier completes then.
TEST(ClusterTest, ClusterBarrierDoesNotWaitForExitedThreads) {
  Kernel kernel(ptxModule(test::kClusterBarrierExitKernel), "cluster_exit");
  ASSERT_TRUE(kernel.ok());
  for (const auto &[name, options] : schedules()) {
    DeviceMemory memory;
    DeviceBuffer out = allocate(memory, 8);
    LaunchConfig config;
    config.grid = {2, 1, 1};
    config.block = {64, 1, 1};
    config.cluster = {2, 1, 1};
    LaunchReport report = kernel.launch(
        config, kernel.parameters().set("out", out.address), memory, options);
    ASSERT_TRUE(report.ok) << name << ": " << report.message;
    EXPECT_EQ(out.as<uint32_t>()[0], 1u) << name;
    EXPECT_EQ(out.as<uint32_t>()[1], 1u) << name;
  }
}

} // namespace
} // namespace mosaic::emulator
