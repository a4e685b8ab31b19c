//===- MosaicRunTest.cpp - mosaic-run's command line and its errors -----===//
//
// Runs the mosaic-run binary. None of these cases reaches a GPU: each stops
// at a usage error, a bad manifest, or a driver that cannot be opened
// (MOSAIC_CUDA_DRIVER names a library that does not exist), or runs on the
// fake driver (runtime/test/FakeCudaDriver.cpp).
//
//===----------------------------------------------------------------------===//

#include "../TestSupport.h"

#include "mosaic/Contracts/Json.h"
#include "mosaic/Contracts/Manifest.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace mosaic;
using namespace mosaic::runtime;
using mosaic::runtime::test::kElementwiseManifest;
using mosaic::runtime::test::Outcome;
using mosaic::runtime::test::replaceOnce;
using mosaic::runtime::test::runMosaicRun;
using mosaic::runtime::test::writeTempFile;

namespace {

const char *kNoDriver = "MOSAIC_CUDA_DRIVER=libmosaic-no-such-driver.so.1";

TEST(MosaicRun, Help) {
  Outcome outcome = runMosaicRun("--help");
  EXPECT_EQ(outcome.status, 0);
  EXPECT_EQ(outcome.output.rfind("usage: mosaic-run KERNEL.json", 0), 0u)
      << outcome.output;
  EXPECT_NE(outcome.output.find("  --emulate "), std::string::npos)
      << outcome.output;
  EXPECT_NE(outcome.output.find("  --dump-outputs=PATH\n"), std::string::npos)
      << outcome.output;
}

TEST(MosaicRun, UsageErrors) {
  std::string manifest =
      writeTempFile("mosaic_run_usage.json", kElementwiseManifest);
  struct Case {
    std::string arguments;
    std::string message;
  };
  for (const Case &c : std::vector<Case>{
           {"", "expected one manifest (KERNEL.json), got 0 arguments"},
           {manifest + " --frobnicate", "unknown option --frobnicate"},
           {manifest + " --reps", "--reps needs a value"},
           {manifest + " --reps=abc",
            "--reps takes a non-negative integer, got \"abc\""},
           {manifest + " --reps 0", "--reps must be at least 1"},
           {manifest + " --flops=-3", "--flops takes a positive number, got "
                                      "\"-3\""},
           {manifest + " --outputs=1,x",
            "--outputs takes parameter indices separated by commas, got "
            "\"1,x\""},
           {manifest + " --emulate=yes", "--emulate takes no value"},
           {manifest + " --dump-outputs", "--dump-outputs needs a value"},
           {manifest + " --dump-inputs", "--dump-inputs needs a value"},
       }) {
    Outcome outcome = runMosaicRun(c.arguments);
    EXPECT_EQ(outcome.status, 2) << c.arguments;
    EXPECT_EQ(outcome.output, "mosaic-run: error: " + c.message +
                                  "\n(mosaic-run --help lists the options)\n")
        << c.arguments;
  }
}

TEST(MosaicRun, KernelErrorsComeBeforeTheDriver) {
  std::string manifest =
      writeTempFile("mosaic_run_errors.json", kElementwiseManifest);
  std::string unnamed = writeTempFile("mosaic_run_unnamed.json",
                                      replaceOnce(kElementwiseManifest,
                                                  "\"entry\": \"elementwise\"",
                                                  "\"entry\": \"mine\""));
  std::string broken =
      writeTempFile("mosaic_run_broken.json",
                    replaceOnce(kElementwiseManifest, "\"grid\": [128, 1, 1]",
                                "\"grid\": 1"));
  struct Case {
    std::string arguments;
    std::string message;
  };
  for (const Case &c : std::vector<Case>{
           {"/nonexistent/k.json",
            "cannot read `/nonexistent/k.json`: No such file or directory"},
           {broken, broken + ": `grid` must be an array, got 1"},
           {manifest + " --check=fft",
            "no reference named `fft` (--check); choose one of elementwise, "
            "softmax, tma_roundtrip, gemm, attention, attention_causal, or "
            "--check=none"},
           {unnamed, "no reference named `mine` (the kernel's entry name); "
                     "choose one of elementwise, softmax, tma_roundtrip, "
                     "gemm, attention, attention_causal, or --check=none"},
           {manifest + " --check=gemm",
            "reference `gemm` expects bf16 2-D buffers A [M, K], B [K, N], C "
            "[M, N]; the kernel's buffers are f32 [1048576], f32 [1048576], "
            "f32 [1048576]"},
           {manifest + " --check=none --outputs=5",
            "--outputs: parameter 5 is not a buffer parameter (the kernel's "
            "buffer parameters are [0, 1, 2])"},
           {manifest + " --outputs=0",
            "reference `elementwise` checks parameter 2 (the last buffer) as "
            "the only output; drop --outputs or use --check=none"},
           // A dump that cannot be written fails before the kernel runs.
           {manifest + " --dump-outputs=/nonexistent/outputs.bin",
            "cannot write `/nonexistent/outputs.bin`: No such file or "
            "directory"},
           {manifest + " --dump-outputs=" + testing::TempDir(),
            "cannot write `" + testing::TempDir() + "`: Is a directory"},
           {manifest + " --dump-inputs=/nonexistent/inputs.bin",
            "cannot write `/nonexistent/inputs.bin`: No such file or "
            "directory"},
       }) {
    Outcome outcome = runMosaicRun(c.arguments, kNoDriver);
    EXPECT_EQ(outcome.status, 1) << c.arguments;
    EXPECT_EQ(outcome.output, "mosaic-run: error: " + c.message + "\n")
        << c.arguments;
  }
}

TEST(MosaicRun, NoDriverIsAClearErrorAndAFailedResult) {
  std::string manifest =
      writeTempFile("mosaic_run_nodriver.json", kElementwiseManifest);
  std::string json = testing::TempDir() + "mosaic_run_nodriver_result.json";
  std::string dump = testing::TempDir() + "mosaic_run_nodriver_outputs.bin";
  std::remove(json.c_str());
  std::remove(dump.c_str());
  Outcome outcome = runMosaicRun(manifest + " --seed=5 --json=" + json +
                                     " --dump-outputs=" + dump,
                                 kNoDriver);
  EXPECT_EQ(outcome.status, 1);
  std::string expected = "mosaic-run: error: no CUDA driver: "
                         "dlopen(libmosaic-no-such-driver.so.1) failed: ";
  EXPECT_EQ(outcome.output.rfind(expected, 0), 0u) << outcome.output;
  // The run failed: no outputs, so no dump that could compare equal to one.
  EXPECT_FALSE(readFile(dump).ok()) << dump << " was left behind";

  Expected<std::string> text = readFile(json);
  ASSERT_TRUE(text.ok()) << text.message();
  Expected<JsonValue> result = parseJson(*text);
  ASSERT_TRUE(result.ok()) << result.message() << "\n" << *text;
  EXPECT_EQ(result->find("kernel")->asString(), "elementwise");
  EXPECT_EQ(result->find("check")->asString(), "elementwise");
  EXPECT_FALSE(result->find("passed")->asBool());
  EXPECT_EQ(result->find("seed")->asInteger(), 5);
  EXPECT_EQ(result->find("bytes")->asInteger(), 3 * 4194304);
  EXPECT_EQ(result->find("flops")->asInteger(), 2 * 1048576);
  ASSERT_EQ(result->find("failures")->elements().size(), 1u);
  EXPECT_EQ(result->find("failures")
                ->elements()[0]
                .asString()
                .rfind("no CUDA driver: ", 0),
            0u);
  EXPECT_EQ(result->find("median_ms"), nullptr);
  EXPECT_FALSE(result->find("emulated")->asBool());
}

// --devices D through the timed runs, on the fake driver's D devices: its
// launch copies the ring kernel's input (parameter 0) into its output
// (parameter 3, MOSAIC_FAKE_PARAM_COUNT=4), its events say 1 ms. The
// emulator runs the kernel itself but is not timed
// (test/Emulator/mosaic-run-devices.test).
TEST(MosaicRun, DevicesAreTimedPerDevice) {
  std::string ptx = writeTempFile("mosaic_run_ring.ptx", "fake");
  std::string manifest = writeTempFile("mosaic_run_ring.json", R"({
  "arch": "sm_90a", "block": [32, 1, 1], "cluster": [1, 1, 1],
  "cubin": ")" + ptx + R"(", "dynamic_smem_bytes": 0,
  "entry": "ring_copy", "grid": [1, 1, 1],
  "parameters": [
    {"alignment": 16, "element_type": "f32", "index": 0, "kind": "buffer", "shape": [32]},
    {"alignment": 16, "element_type": "f32", "index": 1, "kind": "buffer", "shape": [32], "symmetric": true},
    {"alignment": 16, "element_type": "i32", "index": 2, "kind": "buffer", "shape": [1], "symmetric": true},
    {"alignment": 16, "element_type": "f32", "index": 3, "kind": "buffer", "shape": [32]},
    {"index": 4, "kind": "collective"}],
  "tensor_maps": []
})");
  std::string json = testing::TempDir() + "mosaic_run_ring_result.json";
  std::remove(json.c_str());
  Outcome outcome =
      runMosaicRun(manifest +
                       " --devices=3 --check=none --warmup=2 --reps=3 --seed=9 "
                       "--json=" +
                       json,
                   std::string("MOSAIC_GPU_BACKEND=cuda MOSAIC_CUDA_DRIVER=") +
                       MOSAIC_FAKE_CUDA_DRIVER +
                       " MOSAIC_FAKE_DEVICES=3 MOSAIC_FAKE_PARAM_COUNT=4");
  EXPECT_EQ(outcome.status, 0) << outcome.output;
  EXPECT_NE(outcome.output.find(
                "ring_copy on 3 devices (f32 [32], symmetric f32 [32], "
                "symmetric i32 [1] -> f32 [32]): PASS; no reference "
                "(--check=none); median 1000.00 us over 3 runs (2 warm-up, "
                "L2 flushed)"),
            std::string::npos)
      << outcome.output;
  EXPECT_NE(outcome.output.find("  device 2 (seed 11): PASS; all 32 output "
                                "elements written; semaphores back at zero"),
            std::string::npos)
      << outcome.output;

  Expected<std::string> text = readFile(json);
  ASSERT_TRUE(text.ok()) << text.message();
  Expected<JsonValue> result = parseJson(*text);
  ASSERT_TRUE(result.ok()) << result.message() << "\n" << *text;
  EXPECT_TRUE(result->find("passed")->asBool());
  EXPECT_EQ(result->find("devices")->asInteger(), 3);
  EXPECT_EQ(result->find("median_ms")->asNumber(), 1.0);
  EXPECT_EQ(result->find("reps")->asInteger(), 3);
  EXPECT_EQ(result->find("bytes")->asInteger(), 3 * (4 * 32 * 3 + 4));
  const std::vector<JsonValue> &devices =
      result->find("per_device")->elements();
  ASSERT_EQ(devices.size(), 3u);
  for (int64_t d = 0; d < 3; ++d) {
    EXPECT_EQ(devices[d].find("device")->asInteger(), d);
    EXPECT_EQ(devices[d].find("seed")->asInteger(), 9 + d);
    EXPECT_TRUE(devices[d].find("passed")->asBool());
  }
}

// The backend comes from --emulate, else MOSAIC_GPU_BACKEND; the emulator's
// library from MOSAIC_CUDA_DRIVER, else the one built with mosaic-run.
TEST(MosaicRun, BackendSelection) {
  std::string manifest =
      writeTempFile("mosaic_run_backend.json", kElementwiseManifest);
  Outcome outcome = runMosaicRun(manifest, "MOSAIC_GPU_BACKEND=gpu");
  EXPECT_EQ(outcome.status, 1);
  EXPECT_EQ(outcome.output,
            "mosaic-run: error: MOSAIC_GPU_BACKEND is \"gpu\"; expected "
            "\"cuda\" (a GPU, the default) or \"emulator\" (the PTX "
            "emulator)\n");

  std::string noDriver = "mosaic-run: error: no CUDA driver: "
                         "dlopen(libmosaic-no-such-driver.so.1) failed: ";
  for (const std::string &environment :
       {std::string(kNoDriver) + " MOSAIC_GPU_BACKEND=emulator",
        std::string(kNoDriver) + " MOSAIC_GPU_BACKEND=gpu"}) {
    // --emulate wins over the variable, and honours MOSAIC_CUDA_DRIVER.
    outcome = runMosaicRun(manifest + " --emulate", environment);
    EXPECT_EQ(outcome.status, 1) << environment;
    EXPECT_EQ(outcome.output.rfind(noDriver, 0), 0u) << environment << "\n"
                                                     << outcome.output;
  }
#ifndef MOSAIC_EMULATOR_DRIVER
  outcome = runMosaicRun(manifest + " --emulate", "env -u MOSAIC_CUDA_DRIVER");
  EXPECT_EQ(outcome.status, 1);
  EXPECT_EQ(outcome.output,
            "mosaic-run: error: the emulator backend needs the emulator's "
            "driver library, but this runtime was built without the "
            "emulator (only the main build builds emulator/); set "
            "MOSAIC_CUDA_DRIVER to the emulator's libcuda.so.1 "
            "(build/lib/emulator/libcuda.so.1 in the main build)\n");
#endif
}

} // namespace
