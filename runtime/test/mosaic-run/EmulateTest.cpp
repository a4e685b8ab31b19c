//===- EmulateTest.cpp - mosaic-run --emulate on every example -----------===//
//
// Built in the main build only, where mosaic-compile and the PTX emulator
// are: compiles every example kernel with mosaic-compile and checks it with
// `mosaic-run --emulate` against its float64 reference, at full size (the
// 4096^3 GEMM included, each within a minute; the 8192^3 warp-specialized
// GEMM runs reduced in test/Emulator/gemm-ws.test), with its outputs dumped by
// --dump-outputs; then checks that broken
// kernels fail: the TMA round trip without its proxy fence is a hazard, and
// a manifest without PTX (from an older mosaic-compile) says to recompile.
// A machine without ptxas cannot make the manifests and skips.
//
//===----------------------------------------------------------------------===//

#include "../TestSupport.h"

#include "mosaic/Contracts/Json.h"
#include "mosaic/Contracts/Manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <dirent.h>
#include <string>
#include <vector>

using namespace mosaic;
using namespace mosaic::runtime;
using mosaic::runtime::test::Outcome;
using mosaic::runtime::test::replaceOnce;
using mosaic::runtime::test::runCommand;
using mosaic::runtime::test::runMosaicRun;
using mosaic::runtime::test::writeTempFile;

namespace {

/// Every example, the full-size GEMM included, should run in under a
/// minute on the 2-core build machine. The GEMM takes about that long with
/// the hazard checker on (see docs/BENCHMARKS.md); this bound catches a
/// slowdown without failing CI on a slower machine.
constexpr double kSecondsPerExample = 120;

std::vector<std::string> exampleKernels() {
  std::vector<std::string> names;
  if (DIR *dir = opendir(MOSAIC_EXAMPLES_DIR)) {
    while (dirent *entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name.size() > 5 && name.substr(name.size() - 5) == ".mlir")
        names.push_back(name.substr(0, name.size() - 5));
    }
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// What mosaic-compile wrote for one example, in the temporary directory.
struct Compiled {
  std::string stem;     // mosaic_emulate_<example>
  std::string manifest; // <stem>.json
  std::string ptx;      // <stem>.ptx
  bool skipped = false; // No ptxas here.
};

/// Compiles examples/<name>.mlir; a failure fails the test.
Compiled compileExample(const std::string &name) {
  Compiled compiled;
  compiled.stem = "mosaic_emulate_" + name;
  std::string base = testing::TempDir() + compiled.stem;
  compiled.manifest = base + ".json";
  compiled.ptx = base + ".ptx";
  std::remove(compiled.manifest.c_str());
  std::remove(compiled.ptx.c_str());
  Outcome outcome =
      runCommand(std::string(MOSAIC_COMPILE_PATH) + " " + MOSAIC_EXAMPLES_DIR +
                 "/" + name + ".mlir -o " + base + ".cubin");
  compiled.skipped =
      outcome.output.find("ptxas not found") != std::string::npos;
  if (!compiled.skipped) {
    EXPECT_EQ(outcome.status, 0) << "mosaic-compile failed on " << name << ":\n"
                                 << outcome.output;
  }
  return compiled;
}

/// Runs `mosaic-run --emulate` with `arguments`; the outcome and seconds.
Outcome emulate(const std::string &arguments, double *seconds = nullptr) {
  auto start = std::chrono::steady_clock::now();
  Outcome outcome = runMosaicRun("--emulate " + arguments);
  if (seconds)
    *seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  return outcome;
}

class EmulatedExample : public testing::TestWithParam<std::string> {};

/// Examples too large to emulate whole within kSecondsPerExample, and the
/// test that emulates the same kernel at a reduced size.
const char *reducedElsewhere(const std::string &name) {
  // 8192^3 is 8 times the 4096^3 GEMM's minute of emulation.
  if (name == "gemm_bf16_ws")
    return "test/Emulator/gemm-ws.test, at 512^3";
  // 64 heads x 4096 queries: thousands of times the reduced size.
  if (name == "attention_fwd")
    return "test/Emulator/attention.test, at 2 heads x 256 queries";
  return nullptr;
}

TEST_P(EmulatedExample, PassesItsReference) {
  if (const char *where = reducedElsewhere(GetParam()))
    GTEST_SKIP() << GetParam() << " is too large to emulate whole here; "
                 << where << " emulates it";
  Compiled compiled = compileExample(GetParam());
  if (compiled.skipped)
    GTEST_SKIP() << "no ptxas to compile the examples with";
  ASSERT_FALSE(HasFailure());
  std::string json = testing::TempDir() + compiled.stem + "_result.json";
  std::string dump = testing::TempDir() + compiled.stem + "_outputs.bin";
  std::string inputs = testing::TempDir() + compiled.stem + "_inputs.bin";
  std::remove(json.c_str());
  std::remove(dump.c_str());
  std::remove(inputs.c_str());
  double seconds = 0;
  Outcome outcome =
      emulate(compiled.manifest + " --json=" + json +
                  " --dump-outputs=" + dump + " --dump-inputs=" + inputs,
              &seconds);
  RecordProperty("seconds", std::to_string(seconds));
  EXPECT_EQ(outcome.status, 0) << outcome.output;
  EXPECT_NE(outcome.output.find("): PASS; relative error "), std::string::npos)
      << outcome.output;
  EXPECT_NE(outcome.output.find("; emulated, not timed"), std::string::npos)
      << outcome.output;
  EXPECT_LT(seconds, kSecondsPerExample)
      << "mosaic-run --emulate took " << seconds << " s:\n"
      << outcome.output;

  Expected<std::string> text = readFile(json);
  ASSERT_TRUE(text.ok()) << text.message();
  Expected<JsonValue> result = parseJson(*text);
  ASSERT_TRUE(result.ok()) << result.message() << "\n" << *text;
  EXPECT_TRUE(result->find("passed")->asBool()) << *text;
  EXPECT_TRUE(result->find("emulated")->asBool()) << *text;
  EXPECT_EQ(result->find("median_ms"), nullptr) << *text;
  const JsonValue *instructions = result->find("emulated_thread_instructions");
  ASSERT_NE(instructions, nullptr) << *text;
  EXPECT_GT(instructions->asInteger(), 0) << *text;

  // The dump is the output buffer's bytes (the last parameter's).
  Expected<Manifest> manifest = loadManifest(compiled.manifest);
  ASSERT_TRUE(manifest.ok()) << manifest.message();
  Expected<std::string> bytes = readFile(dump);
  ASSERT_TRUE(bytes.ok()) << bytes.message();
  EXPECT_EQ(bytes->size(), manifest->buffers.back().byteSize());
  // The inputs dump is every other buffer's random bytes.
  uint64_t inputBytes = 0;
  for (size_t i = 0; i + 1 < manifest->buffers.size(); ++i)
    inputBytes += manifest->buffers[i].byteSize();
  Expected<std::string> inputDump = readFile(inputs);
  ASSERT_TRUE(inputDump.ok()) << inputDump.message();
  EXPECT_EQ(inputDump->size(), inputBytes);
}

INSTANTIATE_TEST_SUITE_P(Examples, EmulatedExample,
                         testing::ValuesIn(exampleKernels()),
                         [](const testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

// The round trip's threads write the doubled tile to shared memory and TMA
// stores it; without `fence.proxy.async` between the two, the async proxy
// may not see the writes: a hazard, which fails the run.
TEST(EmulatedMutant, RoundTripWithoutItsProxyFenceIsAHazard) {
  Compiled compiled = compileExample("tma_roundtrip");
  if (compiled.skipped)
    GTEST_SKIP() << "no ptxas to compile the examples with";
  ASSERT_FALSE(HasFailure());
  Expected<std::string> ptx = readFile(compiled.ptx);
  ASSERT_TRUE(ptx.ok()) << ptx.message();
  std::string fence = "fence.proxy.async.shared::cta;";
  size_t at = ptx->find(fence);
  ASSERT_NE(at, std::string::npos) << "no `" << fence << "` in\n" << *ptx;
  ASSERT_EQ(ptx->find(fence, at + 1), std::string::npos)
      << "more than one `" << fence << "`";
  ptx->erase(at, fence.size());
  writeTempFile("mosaic_emulate_nofence.ptx", *ptx);
  Expected<std::string> manifest = readFile(compiled.manifest);
  ASSERT_TRUE(manifest.ok()) << manifest.message();
  std::string mutant = writeTempFile(
      "mosaic_emulate_nofence.json",
      replaceOnce(*manifest, "\"ptx\": \"" + compiled.stem + ".ptx\"",
                  "\"ptx\": \"mosaic_emulate_nofence.ptx\""));

  Outcome outcome = emulate(mutant);
  EXPECT_EQ(outcome.status, 1) << outcome.output;
  EXPECT_NE(outcome.output.find("mosaic-run: error: "), std::string::npos)
      << outcome.output;
  EXPECT_NE(outcome.output.find("hazard"), std::string::npos) << outcome.output;
}

// The emulator cannot run a CUBIN: a manifest that names no PTX is an error
// that says how to get one.
TEST(EmulatedMutant, ManifestWithoutPtxSaysToRecompile) {
  Compiled compiled = compileExample("elementwise");
  if (compiled.skipped)
    GTEST_SKIP() << "no ptxas to compile the examples with";
  ASSERT_FALSE(HasFailure());
  Expected<std::string> manifest = readFile(compiled.manifest);
  ASSERT_TRUE(manifest.ok()) << manifest.message();
  std::string old = writeTempFile(
      "mosaic_emulate_noptx.json",
      replaceOnce(*manifest, "\"ptx\": \"" + compiled.stem + ".ptx\",", ""));

  Outcome outcome = emulate(old);
  EXPECT_EQ(outcome.status, 1) << outcome.output;
  EXPECT_NE(outcome.output.find(
                "mosaic-run: error: the emulator runs PTX, but `" +
                testing::TempDir() + compiled.stem +
                ".cubin` is a CUBIN and the manifest names no `ptx`; "
                "recompile `elementwise` with this mosaic-compile, which "
                "writes the PTX beside the CUBIN"),
            std::string::npos)
      << outcome.output;
}

} // namespace
