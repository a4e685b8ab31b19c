//===- FaultTest.cpp - The faults a GPU raises, and their error codes -----===//
//
// Each case is one misuse the hardware faults on (a misaligned access, an
// mbarrier that is not one, a tensor map the driver did not encode, `trap`),
// run in one small kernel: the launch must fail at the marked line with the
// fault kind whose CUDA error the driver reports, and with a message naming
// the rule. Controls beside them show that the legal form of the same
// instruction runs. docs/RationaleEmulator.md ("Faults") lists every fault
// and where it is checked.
//
//===----------------------------------------------------------------------===//

#include "TestKernels.h"

#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <tuple>

namespace mosaic::emulator {
namespace {

using test::allocate;
using test::DeviceBuffer;
using test::Kernel;
using test::namesLine;
using test::ptxModule;
using test::testOptions;

/// The 128 bytes of the `map` parameter copied to local memory, 16 at a
/// time: a tensor map a kernel would hand over as a generic pointer to its
/// own stack.
std::string copyMapToLocal() {
  std::string text;
  for (int offset = 0; offset < 128; offset += 16) {
    std::string at = std::to_string(offset);
    text += "  ld.param.v2.u64 {%rd2, %rd3}, [map+" + at + "];\n";
    text += "  st.local.v2.u64 [local_map+" + at + "], {%rd2, %rd3};\n";
  }
  return text;
}

/// One case: `setup` runs first on every thread, then `instruction` (the
/// line marked FAULT). `kind` is the fault expected there, none for a
/// control that must run.
struct FaultCase {
  const char *name;
  std::string setup;
  std::string instruction;
  std::optional<FaultKind> kind;
  const char *message = "";
  /// What the `map` parameter holds.
  enum class Map {
    Encoded,
    Zeros,
    EditedAfterEncoding,
    // 16 rows of 8 f32 where `out` holds 8.
    LargerThanItsAllocation,
  } map = Map::Encoded;
};

void PrintTo(const FaultCase &c, std::ostream *os) { *os << c.name; }

// Shared memory starts at 1024 (docs/RationaleEmulator.md), so `tile` is
// 1024-byte aligned and `bar` 8-byte aligned. %r0 = tile, %r1 = bar,
// %rd0 = out (256 bytes of global memory), %rd1 = &map as a generic
// address, %p0 = thread 0.
std::string faultKernel(const FaultCase &c) {
  return ptxModule(R"PTX(
.visible .entry fault_case(.param .u64 out, .param .align 64 .b8 map[128])
.maxntid 32, 1, 1
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  .shared .align 1024 .b8 tile[2048];
  .shared .align 8 .b64 bar;
  .local .align 64 .b8 local_map[128];
  ld.param.u64 %rd0, [out];
  mov.u64 %rd1, map;
  cvta.param.u64 %rd1, %rd1;
  mov.u32 %r0, tile;
  mov.u32 %r1, bar;
  mov.u32 %r2, %tid.x;
  setp.eq.u32 %p0, %r2, 0;
)PTX" + c.setup + "  " +
                   c.instruction + "   // FAULT\n  ret;\n}\n");
}

class FaultTest : public ::testing::TestWithParam<FaultCase> {};

TEST_P(FaultTest, FailsWithTheHardwaresCode) {
  const FaultCase &c = GetParam();
  Kernel kernel(faultKernel(c), "fault_case");
  ASSERT_TRUE(kernel.ok()) << kernel.text();
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 256);
  std::array<uint8_t, kTensorMapBytes> map{};
  if (c.map == FaultCase::Map::LargerThanItsAllocation)
    map = test::tensorMap2d(out.address, test::kTensorFloat32, 16, 8, 8, 8);
  else if (c.map != FaultCase::Map::Zeros)
    map = test::tensorMap2d(out.address, test::kTensorFloat32, 8, 8, 8, 8);
  // One bit of one field changed after encoding (byte 8 is part of the
  // tensor's address in the emulator's encoding, TensorMap.h).
  if (c.map == FaultCase::Map::EditedAfterEncoding)
    map[8] ^= 0x40;
  test::Parameters parameters = kernel.parameters();
  parameters.set("out", out.address).set("map", map.data(), map.size());
  LaunchReport report = kernel.launch(32, parameters, memory, testOptions());
  if (!c.kind) {
    EXPECT_TRUE(report.ok) << report.message;
    return;
  }
  ASSERT_FALSE(report.ok);
  EXPECT_EQ(report.kind, *c.kind) << report.message;
  EXPECT_TRUE(namesLine(report.message, kernel.line("// FAULT")))
      << report.message;
  EXPECT_NE(report.message.find(c.message), std::string::npos)
      << report.message;
}

const std::string kInitBarrier =
    "  @%p0 mbarrier.init.shared::cta.b64 [bar], 1;\n"
    "  fence.mbarrier_init.release.cluster;\n"
    "  bar.sync 0;\n";

// PTX ISA, "Data Movement and Conversion Instructions": an access must be
// aligned to its size; a vector access to the size of the whole vector.
INSTANTIATE_TEST_SUITE_P(
    Alignment, FaultTest,
    ::testing::Values(
        FaultCase{"VectorOfFourWordsAtEight", "",
                  "ld.shared.v4.b32 {%r3, %r4, %r5, %r6}, [tile+8];",
                  FaultKind::MisalignedAddress, "misaligned access of 16"},
        FaultCase{"VectorOfFourWordsAtSixteen", "",
                  "ld.shared.v4.b32 {%r3, %r4, %r5, %r6}, [tile+16];",
                  std::nullopt},
        FaultCase{"VectorOfTwoDoublewordsAtEight", "",
                  "st.global.v2.b64 [%rd0+8], {%rd2, %rd2};",
                  FaultKind::MisalignedAddress, "misaligned access of 16"},
        FaultCase{"SharedClusterWordAtTwo", "",
                  "ld.shared::cluster.u32 %r3, [tile+2];",
                  FaultKind::MisalignedAddress, "misaligned access of 4"},
        FaultCase{"SharedAtomicDoublewordAtFour", "",
                  "atom.shared.add.u64 %rd2, [tile+4], 1;",
                  FaultKind::MisalignedAddress, "misaligned access of 8"},
        FaultCase{"GlobalReductionWordAtTwo", "",
                  "red.global.add.u32 [%rd0+2], 1;",
                  FaultKind::MisalignedAddress, "misaligned access of 4"},
        // ldmatrix: each row address names 16 bytes.
        FaultCase{"LdmatrixRowAtEight",
                  "  mul.lo.u32 %r3, %r2, 16;\n"
                  "  add.u32 %r3, %r3, %r0;\n"
                  "  add.u32 %r3, %r3, 8;\n",
                  "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r4}, [%r3];",
                  FaultKind::MisalignedAddress, "misaligned access of 16"},
        // PTX ISA, cp.async.bulk: 16-byte aligned addresses, a size that
        // is a multiple of 16.
        FaultCase{"BulkCopyToSharedAtEight", kInitBarrier,
                  "@%p0 cp.async.bulk.shared::cluster.global.mbarrier::"
                  "complete_tx::bytes [tile+8], [%rd0], 16, [bar];",
                  FaultKind::MisalignedAddress,
                  "the cp.async.bulk destination at shared address 1032 is "
                  "not 16-byte aligned"},
        FaultCase{"BulkCopyFromGlobalAtEight", kInitBarrier,
                  "@%p0 cp.async.bulk.shared::cluster.global.mbarrier::"
                  "complete_tx::bytes [tile], [%rd0+8], 16, [bar];",
                  FaultKind::MisalignedAddress, "misaligned access of 16"},
        FaultCase{"BulkCopyFromSharedAtEight", "",
                  "@%p0 cp.async.bulk.global.shared::cta.bulk_group [%rd0], "
                  "[tile+8], 16;",
                  FaultKind::MisalignedAddress,
                  "the cp.async.bulk source at shared address 1032 is not "
                  "16-byte aligned"},
        FaultCase{"BulkCopyOfTwentyFourBytes", kInitBarrier,
                  "@%p0 cp.async.bulk.shared::cluster.global.mbarrier::"
                  "complete_tx::bytes [tile], [%rd0], 24, [bar];",
                  FaultKind::IllegalInstruction, "is not a multiple of 16"},
        // PTX ISA, cp.async.bulk.tensor: the shared-memory box starts
        // 128-byte aligned.
        FaultCase{"TensorLoadToSharedAtSixtyFour", kInitBarrier,
                  "@%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile."
                  "mbarrier::complete_tx::bytes [tile+64], [map, {0, 0}], "
                  "[bar];",
                  FaultKind::MisalignedAddress, "not 128-byte aligned"},
        FaultCase{"TensorStoreFromSharedAtSixtyFour", "",
                  "@%p0 cp.async.bulk.tensor.2d.global.shared::cta.tile."
                  "bulk_group [map, {0, 0}], [tile+64];",
                  FaultKind::MisalignedAddress, "not 128-byte aligned"}),
    [](const ::testing::TestParamInfo<FaultCase> &info) {
      return std::string(info.param.name);
    });

// PTX ISA, mbarrier: an 8-byte object in shared memory, initialized by
// mbarrier.init before any other operation.
INSTANTIATE_TEST_SUITE_P(
    Mbarrier, FaultTest,
    ::testing::Values(
        FaultCase{"InitAtFour", "",
                  "@%p0 mbarrier.init.shared::cta.b64 [tile+4], 1;",
                  FaultKind::MisalignedAddress,
                  "the mbarrier at shared address 1028 is not 8-byte "
                  "aligned"},
        FaultCase{"InitBelowSharedMemory", "  mov.u32 %r3, 64;\n",
                  "@%p0 mbarrier.init.shared::cta.b64 [%r3], 1;",
                  FaultKind::IllegalAddress, "outside the CTA's shared memory"},
        FaultCase{"ArriveOnAGlobalAddress", "",
                  "@%p0 mbarrier.arrive.b64 %rd2, [%rd0];",
                  FaultKind::IllegalAddress, "is not in shared memory"},
        FaultCase{"ArriveBeforeInit", "",
                  "@%p0 mbarrier.arrive.shared::cta.b64 %rd2, [bar];",
                  FaultKind::Hazard, "used before mbarrier.init"},
        FaultCase{"BulkCopyCompletingOnAMisalignedMbarrier", kInitBarrier,
                  "@%p0 cp.async.bulk.shared::cluster.global.mbarrier::"
                  "complete_tx::bytes [tile], [%rd0], 16, [tile+12];",
                  FaultKind::MisalignedAddress,
                  "the mbarrier at shared address 1036 is not 8-byte "
                  "aligned"},
        FaultCase{"TensorLoadCompletingOnAMisalignedMbarrier", kInitBarrier,
                  "@%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile."
                  "mbarrier::complete_tx::bytes [tile], [map, {0, 0}], "
                  "[tile+1028];",
                  FaultKind::MisalignedAddress,
                  "the mbarrier at shared address 2052 is not 8-byte "
                  "aligned"}),
    [](const ::testing::TestParamInfo<FaultCase> &info) {
      return std::string(info.param.name);
    });

// PTX ISA, cp.async.bulk.tensor: the tensor map is an opaque object the
// driver encoded, in .param, .const or .global memory.
const std::string kTensorLoadThroughRd4 =
    "@%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
    "complete_tx::bytes [tile], [%rd4, {0, 0}], [bar];";

INSTANTIATE_TEST_SUITE_P(
    TensorMap, FaultTest,
    ::testing::Values(
        FaultCase{"NotEncodedByTheDriver", kInitBarrier,
                  "@%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile."
                  "mbarrier::complete_tx::bytes [tile], [map, {0, 0}], [bar];",
                  FaultKind::IllegalInstruction,
                  "was not encoded by cuTensorMapEncodeTiled",
                  FaultCase::Map::Zeros},
        FaultCase{"EditedAfterEncoding", kInitBarrier,
                  "@%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile."
                  "mbarrier::complete_tx::bytes [tile], [map, {0, 0}], [bar];",
                  FaultKind::IllegalInstruction,
                  "its bytes changed after it was encoded",
                  FaultCase::Map::EditedAfterEncoding},
        FaultCase{"AtAnAddressNothingIsAllocatedAt",
                  kInitBarrier + "  mov.u64 %rd4, 4096;\n",
                  kTensorLoadThroughRd4, FaultKind::IllegalAddress,
                  "outside every allocation"},
        FaultCase{"InLocalMemory",
                  kInitBarrier + copyMapToLocal() +
                      "  mov.u64 %rd4, local_map;\n"
                      "  cvta.local.u64 %rd4, %rd4;\n",
                  kTensorLoadThroughRd4, FaultKind::IllegalInstruction,
                  "is in local memory"},
        FaultCase{"InSharedMemory",
                  kInitBarrier + "  cvt.u64.u32 %rd4, %r0;\n"
                                 "  cvta.shared.u64 %rd4, %rd4;\n",
                  kTensorLoadThroughRd4, FaultKind::IllegalInstruction,
                  "is in shared memory"},
        FaultCase{"NotSixtyFourByteAligned",
                  kInitBarrier + "  add.u64 %rd4, %rd1, 16;\n",
                  kTensorLoadThroughRd4, FaultKind::IllegalInstruction,
                  "is not 64-byte aligned"},
        FaultCase{"AsAGenericPointerToTheParameter",
                  kInitBarrier + "  mov.u64 %rd4, %rd1;\n",
                  kTensorLoadThroughRd4, std::nullopt},
        // Found when the copy completes (here, as the kernel exits): the
        // message names the issuing line.
        FaultCase{"WhoseTensorOverrunsItsAllocation",
                  kInitBarrier + "  @%p0 mbarrier.arrive.expect_tx."
                                 "shared::cta.b64 %rd5, [bar], 256;\n",
                  "@%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile."
                  "mbarrier::complete_tx::bytes [tile], [map, {0, 0}], [bar];",
                  FaultKind::IllegalAddress, "is not inside one allocation",
                  FaultCase::Map::LargerThanItsAllocation},
        FaultCase{"OfAnotherRank", kInitBarrier,
                  "@%p0 cp.async.bulk.tensor.3d.shared::cluster.global.tile."
                  "mbarrier::complete_tx::bytes [tile], [map, {0, 0, 0}], "
                  "[bar];",
                  FaultKind::IllegalInstruction,
                  "a .3d copy with a rank-2 tensor map"}),
    [](const ::testing::TestParamInfo<FaultCase> &info) {
      return std::string(info.param.name);
    });

// `trap` aborts the kernel; so does `brkpt` with no debugger attached.
INSTANTIATE_TEST_SUITE_P(
    Abort, FaultTest,
    ::testing::Values(
        FaultCase{"Trap", "", "@%p0 trap;", FaultKind::Unspecified, "trap"},
        FaultCase{"Brkpt", "", "@%p0 brkpt;", FaultKind::Unspecified, "brkpt"}),
    [](const ::testing::TestParamInfo<FaultCase> &info) {
      return std::string(info.param.name);
    });

// cp.async.bulk.shared::cluster.shared::cta copies from the issuing CTA's
// shared memory into a peer's; the source is shared memory, not a global
// address.
TEST(LaunchTest, BulkCopyFromSharedMemoryReachesThePeer) {
  Kernel kernel(ptxModule(R"PTX(
.visible .entry peer_copy(.param .u64 out)
.maxntid 32, 1, 1
.reqnctapercluster 2, 1, 1
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<2>;
  .reg .pred %p<4>;
  .shared .align 16 .b8 src[16];
  .shared .align 16 .b8 dst[16];
  .shared .align 8 .b64 bar;
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %cluster_ctarank;
  setp.eq.u32 %p0, %r0, 0;
  setp.eq.u32 %p1, %r1, 0;
  setp.eq.u32 %p2, %r1, 1;
  and.pred %p2, %p2, %p0;
  @%p2 mbarrier.init.shared::cta.b64 [bar], 1;
  @%p2 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 16;
  add.u32 %r2, %r1, 7;
  st.shared.v4.u32 [src], {%r2, %r2, %r2, %r2};
  fence.proxy.async.shared::cta;
  fence.mbarrier_init.release.cluster;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  and.pred %p3, %p0, %p1;
  mov.u32 %r3, dst;
  mapa.shared::cluster.u32 %r3, %r3, 1;
  mov.u32 %r4, bar;
  mapa.shared::cluster.u32 %r4, %r4, 1;
  @%p3 cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%r3], [src], 16, [%r4];
  @%p1 bra $L_end;
$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [bar], 0;
  @!%p3 bra $L_wait;
  ld.shared.u32 %r5, [dst];
  ld.param.u64 %rd0, [out];
  @%p0 st.global.u32 [%rd0], %r5;
$L_end:
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  ret;
}
)PTX"),
                "peer_copy");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 4);
  LaunchConfig config;
  config.grid = {2, 1, 1};
  config.block = {32, 1, 1};
  config.cluster = {2, 1, 1};
  LaunchReport report =
      kernel.launch(config, kernel.parameters().set("out", out.address), memory,
                    testOptions());
  ASSERT_TRUE(report.ok) << report.message;
  EXPECT_EQ(out.as<uint32_t>()[0], 7u) << "CTA 0's source, not CTA 1's own";
}

// A cluster holds at most 16 CTAs on sm_90a (8 portably, which only the
// driver knows to check), and no more than `.maxclusterrank` says: a launch
// beyond either is refused before anything runs.
TEST(LaunchTest, ClustersBeyondTheLimitsAreRefused) {
  const char *body = R"PTX(
.visible .entry clustered(.param .u64 out)
.maxclusterrank 4
{
  ret;
}
.visible .entry unbounded(.param .u64 out)
{
  ret;
}
)PTX";
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 4);
  for (auto [name, cluster, ok] :
       {std::tuple{"clustered", 4u, true}, std::tuple{"clustered", 8u, false},
        std::tuple{"unbounded", 16u, true},
        std::tuple{"unbounded", 32u, false}}) {
    SCOPED_TRACE(std::string(name) + " in clusters of " +
                 std::to_string(cluster));
    Kernel kernel(ptxModule(body), name);
    ASSERT_TRUE(kernel.ok());
    LaunchConfig config;
    config.grid = {cluster, 1, 1};
    config.block = {32, 1, 1};
    config.cluster = {cluster, 1, 1};
    LaunchReport report =
        kernel.launch(config, kernel.parameters().set("out", out.address),
                      memory, testOptions());
    EXPECT_EQ(report.ok, ok) << report.message;
    if (!ok) {
      EXPECT_EQ(report.kind, FaultKind::Configuration);
      EXPECT_NE(report.message.find("allows at most"), std::string::npos)
          << report.message;
    }
  }
}

} // namespace
} // namespace mosaic::emulator
