//===- EmulatorCudaTest.cpp - Runs the corpus against the emulator -------===//
//
// One test per (host program, variant): the program runs as a subprocess
// with the emulator's directory first on LD_LIBRARY_PATH, so that its
// libcuda.so.1 is the driver, and must exit 0. On failure the test shows the
// program's output (its PASS/FAIL lines name the first mismatches).
//
// Environment:
//   MOSAIC_EMULATOR_DRIVER_DIR   overrides the directory configured at build
//                                time; "system" leaves LD_LIBRARY_PATH alone
//                                (to check the corpus against a real GPU).
//   MOSAIC_EMULATOR_TEST_TIMEOUT seconds one program may run (default 300).
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef MOSAIC_EMULATOR_DRIVER_DIR
#error "MOSAIC_EMULATOR_DRIVER_DIR must name the directory of libcuda.so.1"
#endif
#ifndef MOSAIC_EMULATOR_CUDA_TEST_DIR
#error "MOSAIC_EMULATOR_CUDA_TEST_DIR must name the host programs' directory"
#endif

namespace {

struct Case {
  const char *program;
  const char *variant;
};

// Every variant of every host program; EveryVariantIsListed checks this
// table against the programs' own --list.
const Case kCases[] = {
    {"tma_roundtrip", "load_swizzle_none"},
    {"tma_roundtrip", "load_swizzle_32b"},
    {"tma_roundtrip", "load_swizzle_64b"},
    {"tma_roundtrip", "load_swizzle_128b"},
    {"tma_roundtrip", "load_oob_nan_fill"},
    {"tma_roundtrip", "load_element_strides"},
    {"tma_roundtrip", "load_large_dynamic_shared"},
    {"tma_roundtrip", "store_swizzle_none"},
    {"tma_roundtrip", "store_swizzle_64b"},
    {"tma_roundtrip", "store_swizzle_128b"},
    {"tma_roundtrip", "reduce_add_swizzle_none"},
    {"tma_roundtrip", "reduce_add_swizzle_32b"},
    {"tma_roundtrip", "load_inside_l2_none"},
    {"tma_roundtrip", "load_across_edge_l2_none"},
    {"tma_roundtrip", "store_across_edge_l2_none"},
    {"tma_roundtrip", "reduce_add_across_edge_l2_none"},
    {"tma_roundtrip", "encode_errors"},
    {"tma_multicast", "cluster2_static_one_issuer"},
    {"tma_multicast", "cluster2_slices"},
    {"tma_multicast", "cluster4_one_issuer"},
    {"tma_multicast", "cluster4_slices"},
    {"tma_multicast", "cluster4_pairs"},
    {"mbarrier_phases", "phases"},
    {"wgmma", "bf16_kk_none"},
    {"wgmma", "bf16_kk_sw32"},
    {"wgmma", "bf16_kk_sw64"},
    {"wgmma", "bf16_kk_sw128"},
    {"wgmma", "bf16_mk_sw128"},
    {"wgmma", "bf16_km_sw64"},
    {"wgmma", "bf16_mm_sw32"},
    {"wgmma", "bf16_mm_none"},
    {"wgmma", "bf16_kk_sw64_neg_a"},
    {"wgmma", "bf16_n128_kk_sw128"},
    {"wgmma", "bf16_rega_k_sw128"},
    {"wgmma", "bf16_rega_m_sw32"},
    {"wgmma", "f16_kk_sw128"},
    {"wgmma", "f16_mm_sw64"},
    {"wgmma", "tf32_kk_none"},
    {"wgmma", "tf32_kk_sw32"},
    {"wgmma", "tf32_kk_sw128"},
    {"wgmma", "e4m3_kk_sw128"},
    {"wgmma", "e5m2_kk_sw64"},
    {"wgmma", "e4m3_e5m2_kk_none"},
    {"wgmma", "s8_kk_sw128"},
    {"wgmma", "u8_s8_kk_sw32"},
    {"misc_warp", "shuffle"},
    {"misc_warp", "vote_redux_elect"},
    {"misc_warp", "named_barriers"},
    {"misc_warp", "divergence"},
    {"misc_warp", "atomics"},
    {"misc_warp", "cvt_rounding"},
    {"misc_warp", "packed_half"},
    {"misc_warp", "approx_math"},
    {"misc_warp", "approx_edges"},
    {"misc_warp", "address_spaces"},
    {"misc_warp", "ldmatrix"},
    {"misc_warp", "stmatrix"},
    {"misc_warp", "setmaxnreg"},
    {"warp_extras", "match"},
    {"warp_extras", "barrier_reductions"},
};

// Names the case in gtest's messages ("wgmma/bf16_kk_sw128").
void PrintTo(const Case &c, std::ostream *stream) {
  *stream << c.program << "/" << c.variant;
}

const char *const kPrograms[] = {"tma_roundtrip",   "tma_multicast",
                                 "mbarrier_phases", "wgmma",
                                 "misc_warp",       "warp_extras"};

std::string environment(const char *name, const std::string &fallback) {
  const char *value = std::getenv(name);
  return value && *value ? value : fallback;
}

std::string driverDirectory() {
  return environment("MOSAIC_EMULATOR_DRIVER_DIR", MOSAIC_EMULATOR_DRIVER_DIR);
}

bool usesSystemDriver() { return driverDirectory() == "system"; }

std::string programPath(const std::string &program) {
  return std::string(MOSAIC_EMULATOR_CUDA_TEST_DIR) + "/" + program + "_host";
}

std::string ptxPath(const std::string &program) {
  return std::string(MOSAIC_EMULATOR_CUDA_TEST_DIR) + "/" + program + ".ptx";
}

bool fileExists(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

// Empty when the driver can be used; otherwise why not.
std::string missingDriver() {
  if (usesSystemDriver())
    return "";
  std::string library = driverDirectory() + "/libcuda.so.1";
  if (fileExists(library))
    return "";
  return "the emulator driver " + library +
         " does not exist (build MosaicEmulatorDriver, or set "
         "MOSAIC_EMULATOR_DRIVER_DIR)";
}

struct Outcome {
  bool started = false;
  bool timedOut = false;
  int exitCode = -1; // when the program exited
  int signal = 0;    // when a signal ended it
  std::string output;

  bool passed() const { return started && !timedOut && exitCode == 0; }
  std::string describe() const {
    std::ostringstream text;
    if (!started)
      text << "could not start";
    else if (timedOut)
      text << "timed out and was killed";
    else if (signal)
      text << "ended by signal " << signal << " (" << strsignal(signal) << ")";
    else
      text << "exited with " << exitCode
           << (exitCode == 1   ? " (a mismatch)"
               : exitCode == 2 ? " (a driver error)"
                               : "");
    return text.str();
  }
};

// Runs `arguments` with stdout and stderr captured, killing it (the child
// this function started, by its pid) after `timeoutSeconds`.
Outcome run(const std::vector<std::string> &arguments, int timeoutSeconds) {
  Outcome outcome;
  int pipeEnds[2];
  if (pipe2(pipeEnds, O_CLOEXEC) != 0) {
    outcome.output = std::string("pipe: ") + std::strerror(errno);
    return outcome;
  }
  std::string libraryPath;
  if (!usesSystemDriver()) {
    libraryPath = driverDirectory();
    if (const char *existing = std::getenv("LD_LIBRARY_PATH"))
      if (*existing)
        libraryPath += std::string(":") + existing;
  }
  pid_t child = fork();
  if (child < 0) {
    outcome.output = std::string("fork: ") + std::strerror(errno);
    close(pipeEnds[0]);
    close(pipeEnds[1]);
    return outcome;
  }
  if (child == 0) {
    dup2(pipeEnds[1], STDOUT_FILENO);
    dup2(pipeEnds[1], STDERR_FILENO);
    if (!libraryPath.empty())
      setenv("LD_LIBRARY_PATH", libraryPath.c_str(), 1);
    std::vector<char *> argv;
    for (const std::string &argument : arguments)
      argv.push_back(const_cast<char *>(argument.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    std::fprintf(stderr, "exec %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  outcome.started = true;
  close(pipeEnds[1]);

  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  char buffer[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      outcome.timedOut = true;
      kill(child, SIGKILL);
      break;
    }
    pollfd descriptor = {pipeEnds[0], POLLIN, 0};
    int ready =
        poll(&descriptor, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      continue;
    ssize_t count = read(pipeEnds[0], buffer, sizeof(buffer));
    if (count <= 0)
      break; // end of output: the program exited (or closed its streams)
    outcome.output.append(buffer, count);
  }
  close(pipeEnds[0]);

  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status))
    outcome.exitCode = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    outcome.signal = WTERMSIG(status);
  return outcome;
}

int timeoutSeconds() {
  int seconds =
      std::atoi(environment("MOSAIC_EMULATOR_TEST_TIMEOUT", "300").c_str());
  return seconds > 0 ? seconds : 300;
}

class EmulatorCuda : public ::testing::TestWithParam<Case> {};

TEST_P(EmulatorCuda, HostProgramPasses) {
  const Case &c = GetParam();
  std::string missing = missingDriver();
  ASSERT_TRUE(missing.empty()) << missing;
  Outcome outcome = run({programPath(c.program), ptxPath(c.program), c.variant},
                        timeoutSeconds());
  EXPECT_TRUE(outcome.passed()) << c.program << "_host " << c.variant << " "
                                << outcome.describe() << "; its output:\n"
                                << outcome.output;
}

INSTANTIATE_TEST_SUITE_P(Corpus, EmulatorCuda, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return std::string(info.param.program) + "_" +
                                  info.param.variant;
                         });

// The table above names exactly the variants each program implements.
TEST(EmulatorCudaCorpus, EveryVariantIsListed) {
  std::string missing = missingDriver();
  ASSERT_TRUE(missing.empty()) << missing;
  for (const char *program : kPrograms) {
    Outcome outcome = run({programPath(program), "--list"}, timeoutSeconds());
    ASSERT_TRUE(outcome.passed())
        << program << "_host --list " << outcome.describe() << ":\n"
        << outcome.output;
    std::set<std::string> listed, tabled;
    std::istringstream lines(outcome.output);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty())
        listed.insert(line);
    for (const Case &c : kCases)
      if (std::string(c.program) == program)
        tabled.insert(c.variant);
    EXPECT_EQ(listed, tabled) << "variants of " << program;
  }
}

} // namespace
