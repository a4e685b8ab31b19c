//===- mosaic-emulator-fuzz.cpp - libFuzzer target over the PTX emulator --===//
//
// Each input is PTX text, read up to its first NUL as cuModuleLoadData reads
// it. It is loaded with mosaic::emulator::Module::load, the driver's module
// loader. A load error must name a line of the input ("line N: ..."). A
// module that loads has each of its kernels launched once, on one CTA or a
// cluster of two over a small patterned device buffer, with one host thread,
// the hazard checker on and a small instruction budget, so that a kernel that
// loops forever ends as a fault instead of a libFuzzer timeout. A launch may
// fail; its report must then say why. Crashes, failed assertions,
// sanitizer reports, leaks and hangs are bugs, as in mosaic-fuzz.
//
// docs/Fuzzing.md says how to build and run it.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Emulator/Machine.h"
#include "mosaic/Emulator/TensorMap.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

using namespace mosaic::emulator;

namespace {

/// Device memory every pointer parameter points into, each at its own
/// stride: enough for the seeds' tiles on two CTAs.
constexpr uint64_t kBufferBytes = 256 * 1024;
constexpr uint64_t kParameterStride = 32 * 1024;
/// Warp instructions per CTA before a launch counts as a hang: enough for
/// the seeds' prologues and a few loop trips, little enough that an input
/// that loops forever costs a millisecond or two (interpreting is most of
/// a run's time).
constexpr uint64_t kInstructionBudget = 2'000;
/// Dynamic shared memory of every launch: the most cuLaunchKernel grants
/// without cuFuncSetAttribute.
constexpr uint32_t kDynamicSharedBytes = 48 * 1024;
/// Threads per CTA for kernels that do not fix theirs: one warpgroup.
constexpr uint32_t kDefaultThreads = 128;

/// MOSAIC_EMULATOR_FUZZ_VERBOSE=1 prints what became of each input: its
/// load error or each launch's result, for reading a corpus.
bool verbose() {
  static const bool on = std::getenv("MOSAIC_EMULATOR_FUZZ_VERBOSE");
  return on;
}

[[noreturn]] void fail(const char *bug, const std::string &message) {
  std::fprintf(stderr, "mosaic-emulator-fuzz: %s: %s\n", bug, message.c_str());
  std::abort();
}

/// Whether `message` starts with "line N: " for a line N of `text`. Lines
/// count from 1; the end of the text is on the last line.
bool namesALine(const std::string &message, std::string_view text) {
  constexpr std::string_view prefix = "line ";
  if (message.compare(0, prefix.size(), prefix) != 0)
    return false;
  size_t at = prefix.size();
  uint64_t line = 0;
  size_t digits = 0;
  while (at < message.size() && message[at] >= '0' && message[at] <= '9' &&
         digits < 19) {
    line = line * 10 + uint64_t(message[at] - '0');
    ++at;
    ++digits;
  }
  uint64_t lines = uint64_t(std::count(text.begin(), text.end(), '\n')) + 1;
  return digits > 0 && message.compare(at, 2, ": ") == 0 && line >= 1 &&
         line <= lines;
}

/// FNV-1a: the launch variations an input gets depend on its bytes only,
/// so that a finding reproduces.
uint64_t hashOf(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : text)
    hash = (hash ^ uint8_t(c)) * 0x100000001b3ull;
  return hash;
}

/// A 2-D bf16 tensor map over the 64x64 elements at `address`, moved in
/// 8x64 boxes (the compiler's tile), swizzled by 128 bytes or not.
void writeTensorMap(uint8_t *out, uint64_t address, bool swizzle) {
  constexpr uint32_t kBf16 = 9;
  uint64_t globalDim[2] = {64, 64};
  uint64_t globalStrides[1] = {64 * 2};
  uint32_t boxDim[2] = {64, 8};
  uint32_t elementStrides[2] = {1, 1};
  Status status = encodeTiled(out, kBf16, 2, address, globalDim, globalStrides,
                              boxDim, elementStrides, 0, swizzle ? 3 : 0, 0, 0);
  if (!status.ok())
    fail("the harness's tensor map does not encode", status.message());
}

/// Pointers (8 bytes) point into the buffer, each parameter elsewhere, at
/// a tensor map (for kernels that take a pointer to one); tensor maps (128
/// bytes) describe part of the buffer; scalars are 16, a plausible size or
/// count.
std::vector<uint8_t> parametersFor(const KernelInfo &info, uint64_t buffer,
                                   bool swizzle) {
  std::vector<uint8_t> bytes(info.parameterBytes, 0);
  for (size_t i = 0; i < info.parameters.size(); ++i) {
    const KernelParameter &parameter = info.parameters[i];
    if (uint64_t(parameter.offset) + parameter.size > bytes.size())
      fail("a parameter lies outside the parameter buffer", parameter.name);
    uint8_t *slot = bytes.data() + parameter.offset;
    uint64_t address = buffer + (i * kParameterStride) % kBufferBytes;
    if (parameter.size == 8) {
      std::memcpy(slot, &address, 8);
    } else if (parameter.size == kTensorMapBytes) {
      writeTensorMap(slot, buffer, swizzle);
    } else if (parameter.size <= 4) {
      uint32_t value = 16;
      std::memcpy(slot, &value, parameter.size);
    }
  }
  return bytes;
}

void launchEach(const Module &module, uint64_t variation) {
  DeviceMemory memory;
  Expected<uint64_t> buffer = memory.allocate(kBufferBytes);
  if (!buffer.ok())
    fail("cannot allocate the device buffer", buffer.message());
  uint32_t *words =
      reinterpret_cast<uint32_t *>(memory.translate(*buffer, kBufferBytes));
  for (uint64_t i = 0; i < kBufferBytes / 4; ++i)
    words[i] = uint32_t(i % 61);
  bool swizzle = variation >> 4 & 1;
  for (uint64_t at = 0; at < kBufferBytes; at += kParameterStride)
    writeTensorMap(reinterpret_cast<uint8_t *>(words) + at, *buffer, swizzle);

  Options options;
  options.hostThreads = 1;
  options.checkHazards = true;
  options.instructionLimitPerCta = kInstructionBudget;
  options.policy = AsyncPolicy(variation % 3);
  options.randomSchedule = variation >> 2 & 1;
  options.seed = variation >> 8;
  bool clustered = variation >> 3 & 1;

  for (const std::string &name : module.kernelNames()) {
    const KernelInfo &info = *module.kernel(name);
    // The driver refuses clusters of more than 16 CTAs before it gets to
    // the emulator's launch.
    const std::array<uint32_t, 3> &required = info.requiredCluster;
    if (uint64_t(required[0]) * required[1] * required[2] > 16)
      continue;
    LaunchConfig config;
    uint32_t threads = info.maxThreadsPerBlock;
    config.block = {threads && threads < 1024 ? threads : kDefaultThreads, 1,
                    1};
    if (info.requiredCluster[0]) {
      config.cluster = info.requiredCluster;
      config.grid = info.requiredCluster;
    } else {
      config.cluster = {clustered ? 2u : 1u, 1, 1};
      config.grid = config.cluster;
    }
    config.dynamicSharedBytes = kDynamicSharedBytes;
    config.parameters = parametersFor(info, *buffer, swizzle);
    LaunchReport report = launch(module, name, config, memory, options);
    if (verbose())
      std::fprintf(stderr, "%s: %llu warp instructions: %s\n", name.c_str(),
                   static_cast<unsigned long long>(report.warpInstructions),
                   report.ok ? "ran" : report.message.c_str());
    if (!report.ok && report.message.empty())
      fail("a launch failed without a message", name);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *bytes = reinterpret_cast<const char *>(data);
  std::string_view text(bytes, strnlen(bytes, size));
  Expected<std::shared_ptr<const Module>> module = Module::load(text);
  if (!module.ok()) {
    if (verbose())
      std::fprintf(stderr, "load error: %s\n", module.message().c_str());
    if (!namesALine(module.message(), text))
      fail("a load error names no line of the input", module.message());
    return 0;
  }
  launchEach(**module, hashOf(text));
  return 0;
}
