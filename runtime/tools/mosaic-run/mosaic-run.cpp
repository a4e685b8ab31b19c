//===- mosaic-run.cpp - Run, check and time a compiled kernel -----------===//
//
// mosaic-run kernel.json [options]
//
// Allocates every buffer parameter, fills the inputs with fresh random
// values, poisons the outputs, runs the kernel once, checks that every
// output element was written and compares the output with a float64
// reference; then times the kernel with CUDA events (warm-up, many
// repetitions with the L2 cache flushed before each, median) and prints one
// summary line. On the PTX emulator (--emulate) it runs the kernel once and
// reports what the emulator counted instead of a timing. --dump-outputs
// writes the outputs' bytes, so that two runs can be compared exactly.
// --devices D runs a kernel that spans devices on D of them, checking
// every device's output.
// docs/RationaleRuntime.md explains each step.
//
//===----------------------------------------------------------------------===//

#include "Check.h"
#include "References.h"

#include "mosaic/Contracts/Format.h"
#include "mosaic/Contracts/Manifest.h"
#include "mosaic/Runtime/Device.h"
#include "mosaic/Runtime/Driver.h"
#include "mosaic/Runtime/Kernel.h"
#include "mosaic/Runtime/Symmetric.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <vector>

using namespace mosaic;
using namespace mosaic::runtime;
using namespace mosaic::run;

namespace {

constexpr const char *kUsage = R"(usage: mosaic-run KERNEL.json [options]

Runs the kernel that mosaic-compile wrote (KERNEL.json and its CUBIN, or
with --emulate its PTX) on fresh random inputs, checks the output against a
float64 reference and times it.

options:
  --check=NAME      reference to check against: elementwise, softmax,
                    tma_roundtrip, gemm, attention, attention_causal (these
                    two check O and the LSE, the last two buffers), or none
                    (default: the kernel's entry name, when a reference has
                    that name, or a reference name and `_` begin it:
                    gemm_ws is a gemm); with --devices:
                    allgather_matmul, matmul_reduce_scatter or none
  --outputs=I,J     parameter indices of the output buffers, which are
                    poisoned before the run and must be fully written
                    (default: the reference's outputs, else the last
                    buffer parameter)
  --samples=N       elements of each output to compare (default: all;
                    gemm and attention: 4096 sampled at random); 0
                    compares all
  --warmup=N        untimed runs before timing (default 10)
  --reps=N          timed runs; the median is reported (default 100)
  --emulate         run on the PTX emulator instead of a GPU (the same as
                    MOSAIC_GPU_BACKEND=emulator): the kernel's PTX runs
                    once, checked as on a GPU and for hazards, and no
                    timing is taken (--warmup and --reps do not apply); the
                    summary reports the emulated instructions and the
                    emulation's wall time, which is not a GPU timing
  --seed=S          seed of the random inputs (default: drawn, and printed)
  --flops=F         floating-point operations per run, for TFLOP/s
                    (default: from the reference, e.g. 2*M*N*K for gemm)
  --bytes=B         bytes moved per run, for GB/s (default: every buffer
                    read or written once)
  --device=N        CUDA device ordinal (default 0)
  --devices=D       run a kernel that spans devices (one whose manifest
                    has a `collective` parameter; required for it, refused
                    for any other) on devices 0 to D-1: symmetric buffers
                    in symmetric memory (i32 ones are semaphores, zeroed
                    before every launch and checked back at zero after it;
                    others poisoned), device d's inputs drawn from seed
                    S + d, every device launched before any is waited on,
                    each device's output (the last buffer) checked; timed
                    per device, the median of the slowest device's times.
                    On the emulator, set MOSAIC_EMULATOR_DEVICES=D.
                    --device, --outputs and the dumps do not apply
  --json=PATH       also write the result as JSON to PATH
  --dump-outputs=PATH
                    write the raw bytes of the output buffers, in
                    parameter order and concatenated, to PATH after the
                    first run (also when a check fails), so that two runs
                    can be compared byte for byte, e.g. with `cmp`; a run
                    that fails leaves no new file (an existing one empty)
  --dump-inputs=PATH
                    write the raw bytes of the random input buffers, in
                    parameter order and concatenated, to PATH (the inputs
                    a seed stands for, e.g. to model the hardware's
                    arithmetic from recorded outputs)

Exit status: 0 when every check passed, 1 when a check or the run failed
(on the emulator, also a fault or a hazard, whose report is printed), 2 for
a usage error. MOSAIC_GPU_BACKEND=cuda|emulator picks the backend (default
cuda); MOSAIC_CUDA_DRIVER names a driver library other than libcuda.so.1
(or, for the emulator, than the one built with mosaic-run).
)";

struct Options {
  bool help = false;
  bool emulate = false;
  std::string manifest;
  std::optional<std::string> check;
  std::optional<std::vector<unsigned>> outputs;
  std::optional<uint64_t> samples;
  uint64_t warmup = 10;
  uint64_t reps = 100;
  std::optional<uint64_t> seed;
  std::optional<double> flops;
  std::optional<double> bytes;
  std::optional<int> device;
  std::optional<unsigned> devices;
  std::optional<std::string> json;
  std::optional<std::string> dumpOutputs;
  std::optional<std::string> dumpInputs;
};

template <typename T> std::optional<T> parseNumber(std::string_view text) {
  T value{};
  auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

Expected<Options> parseOptions(int argc, char **argv) {
  Options options;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      positional.push_back(arg);
      continue;
    }
    static const std::set<std::string> kOptions = {
        "--help", "--check",   "--outputs",      "--samples",     "--warmup",
        "--reps", "--seed",    "--flops",        "--bytes",       "--device",
        "--json", "--emulate", "--dump-outputs", "--dump-inputs", "--devices"};
    static const std::set<std::string> kFlags = {"--help", "--emulate"};
    std::string name = arg, value;
    size_t equals = arg.find('=');
    if (equals != std::string::npos) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
    }
    if (!kOptions.count(name))
      return Error{"unknown option " + name};
    if (kFlags.count(name) && equals != std::string::npos)
      return Error{name + " takes no value"};
    if (equals == std::string::npos && !kFlags.count(name)) {
      if (i + 1 >= argc)
        return Error{name + " needs a value"};
      value = argv[++i];
    }
    auto count = [&](const char *what) -> Expected<uint64_t> {
      std::optional<uint64_t> number = parseNumber<uint64_t>(value);
      if (!number)
        return Error{name + " takes " + what + ", got \"" + value + "\""};
      return *number;
    };
    auto real = [&]() -> Expected<double> {
      std::optional<double> number = parseNumber<double>(value);
      if (!number || !(*number > 0) || !std::isfinite(*number))
        return Error{name + " takes a positive number, got \"" + value + "\""};
      return *number;
    };
    if (name == "--help") {
      options.help = true;
      return options;
    } else if (name == "--emulate") {
      options.emulate = true;
    } else if (name == "--check") {
      options.check = value;
    } else if (name == "--outputs") {
      std::vector<unsigned> outputs;
      size_t start = 0;
      while (start <= value.size()) {
        size_t comma = std::min(value.find(',', start), value.size());
        std::optional<unsigned> index = parseNumber<unsigned>(
            std::string_view(value).substr(start, comma - start));
        if (!index)
          return Error{"--outputs takes parameter indices separated by "
                       "commas, got \"" +
                       value + "\""};
        outputs.push_back(*index);
        start = comma + 1;
      }
      std::sort(outputs.begin(), outputs.end());
      outputs.erase(std::unique(outputs.begin(), outputs.end()), outputs.end());
      options.outputs = outputs;
    } else if (name == "--samples" || name == "--warmup" || name == "--reps" ||
               name == "--seed" || name == "--device" || name == "--devices") {
      Expected<uint64_t> number = count("a non-negative integer");
      MOSAIC_RETURN_IF_ERROR(number);
      if (name == "--samples")
        options.samples = *number;
      else if (name == "--warmup")
        options.warmup = *number;
      else if (name == "--reps")
        options.reps = *number;
      else if (name == "--seed")
        options.seed = *number;
      else if (name == "--devices")
        options.devices = static_cast<unsigned>(
            std::min<uint64_t>(*number, std::numeric_limits<unsigned>::max()));
      else // Context::open reports an ordinal without a device.
        options.device = static_cast<int>(
            std::min<uint64_t>(*number, std::numeric_limits<int>::max()));
    } else if (name == "--flops" || name == "--bytes") {
      Expected<double> number = real();
      MOSAIC_RETURN_IF_ERROR(number);
      (name == "--flops" ? options.flops : options.bytes) = *number;
    } else if (name == "--dump-outputs") {
      options.dumpOutputs = value;
    } else if (name == "--dump-inputs") {
      options.dumpInputs = value;
    } else {
      options.json = value;
    }
  }
  if (positional.size() != 1)
    return Error{"expected one manifest (KERNEL.json), got " +
                 std::to_string(positional.size()) + " arguments"};
  if (options.reps == 0)
    return Error{"--reps must be at least 1"};
  if (options.devices && *options.devices == 0)
    return Error{"--devices must be at least 1"};
  options.manifest = positional[0];
  return options;
}

/// Which reference checks the kernel and which buffers are outputs.
struct Plan {
  const Reference *reference = nullptr;
  std::vector<unsigned> outputs; // Parameter indices.
};

Expected<Plan> makePlan(const Manifest &manifest, const Options &options) {
  Plan plan;
  if (manifest.buffers.empty())
    return Error{"`" + manifest.entry + "` has no buffer parameters to check"};
  std::string name = options.check.value_or(manifest.entry);
  if (name != "none") {
    plan.reference =
        options.check ? findReference(name) : referenceForEntry(name);
    if (!plan.reference)
      return Error{"no reference named `" + name + "` (" +
                   (options.check ? "--check" : "the kernel's entry name") +
                   "); choose one of " + referenceNames() +
                   ", or --check=none"};
    MOSAIC_RETURN_IF_ERROR(plan.reference->checkSignature(manifest));
  }
  // A reference's outputs are the kernel's last buffers; without one, the
  // last buffer is the output.
  size_t outputCount = plan.reference ? plan.reference->outputs : 1;
  std::vector<unsigned> lastBuffers;
  for (size_t i = manifest.buffers.size() - outputCount;
       i < manifest.buffers.size(); ++i)
    lastBuffers.push_back(manifest.buffers[i].index);
  plan.outputs = options.outputs.value_or(lastBuffers);
  std::vector<unsigned> bufferIndices;
  for (const BufferParameter &buffer : manifest.buffers)
    bufferIndices.push_back(buffer.index);
  for (unsigned index : plan.outputs)
    if (!manifest.bufferAt(index))
      return Error{"--outputs: parameter " + std::to_string(index) +
                   " is not a buffer parameter (the kernel's buffer "
                   "parameters are " +
                   formatList(bufferIndices) + ")"};
  if (plan.reference && plan.outputs != lastBuffers)
    return Error{
        "reference `" + std::string(plan.reference->name) + "` checks " +
        (outputCount > 1 ? "parameters " + formatList(lastBuffers) +
                               " (the last buffers) as its outputs"
                         : "parameter " + std::to_string(lastBuffers.front()) +
                               " (the last buffer) as the only output") +
        "; drop --outputs or use --check=none"};
  return plan;
}

std::string format(const char *pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), pattern, value);
  return text;
}

/// A stream and the events timing it, destroyed with this object.
class Timer {
public:
  explicit Timer(const Driver &cuda) : cuda(cuda) {}
  Timer(const Timer &) = delete;
  ~Timer() {
    for (CUevent event : events)
      (void)cuda.cuEventDestroy(event);
    if (stream)
      (void)cuda.cuStreamDestroy(stream);
  }

  Status create(size_t eventCount) {
    MOSAIC_RETURN_IF_ERROR(
        cuda.check(cuda.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                   "cuStreamCreate"));
    return createEvents(eventCount);
  }

  /// Events only, in the current context (a group's streams are its own).
  Status createEvents(size_t eventCount) {
    for (size_t i = 0; i < eventCount; ++i) {
      CUevent event = nullptr;
      MOSAIC_RETURN_IF_ERROR(cuda.check(
          cuda.cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate"));
      events.push_back(event);
    }
    return Status();
  }

  const Driver &cuda;
  CUstream stream = nullptr;
  std::vector<CUevent> events;
};

struct Timing {
  double medianMs = 0, minMs = 0, maxMs = 0;
};

/// Bytes written before each timed run, so that no run finds its inputs in
/// the L2 cache left by the one before (50 MB on an H100); the same as
/// triton.testing.do_bench, which times the peers in bench/gpu.
constexpr size_t kFlushBytes = size_t(256) << 20;

Timing summarize(std::vector<double> times);

Expected<Timing> timeKernel(const Context &context, const Launch &launch,
                            const Options &options) {
  const Driver &cuda = context.driver();
  Expected<DeviceBuffer> flush = DeviceBuffer::allocate(context, kFlushBytes);
  MOSAIC_RETURN_IF_ERROR(flush);
  Timer timer(cuda);
  MOSAIC_RETURN_IF_ERROR(timer.create(2 * options.reps));
  for (uint64_t i = 0; i < options.warmup; ++i)
    MOSAIC_RETURN_IF_ERROR(launch.run(timer.stream));
  for (uint64_t i = 0; i < options.reps; ++i) {
    MOSAIC_RETURN_IF_ERROR(cuda.check(
        cuda.cuMemsetD8Async(flush->pointer(), static_cast<uint8_t>(i),
                             kFlushBytes, timer.stream),
        "cuMemsetD8Async (L2 flush)"));
    MOSAIC_RETURN_IF_ERROR(
        cuda.check(cuda.cuEventRecord(timer.events[2 * i], timer.stream),
                   "cuEventRecord"));
    MOSAIC_RETURN_IF_ERROR(launch.run(timer.stream));
    MOSAIC_RETURN_IF_ERROR(
        cuda.check(cuda.cuEventRecord(timer.events[2 * i + 1], timer.stream),
                   "cuEventRecord"));
  }
  MOSAIC_RETURN_IF_ERROR(
      cuda.check(cuda.cuStreamSynchronize(timer.stream),
                 "the timed runs failed: cuStreamSynchronize"));
  std::vector<double> times;
  for (uint64_t i = 0; i < options.reps; ++i) {
    float ms = 0;
    MOSAIC_RETURN_IF_ERROR(
        cuda.check(cuda.cuEventElapsedTime(&ms, timer.events[2 * i],
                                           timer.events[2 * i + 1]),
                   "cuEventElapsedTime"));
    times.push_back(ms);
  }
  return summarize(std::move(times));
}

/// The median, minimum and maximum of `times` (at least one).
Timing summarize(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  Timing timing;
  timing.medianMs =
      n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  timing.minMs = times.front();
  timing.maxMs = times.back();
  return timing;
}

/// The file --dump-outputs (or --dump-inputs) names. It is opened (and
/// truncated) before the kernel runs, so that a path that cannot be written
/// fails before any device work. Unless `keep` is called after the outputs were
/// written to it, the destructor removes it again if this object created it, so
/// that a failed run leaves no dump behind; a path that existed before (a file
/// to overwrite, but also /dev/stdout) is never removed.
class OutputDump {
public:
  static Expected<std::unique_ptr<OutputDump>> open(const std::string &path) {
    struct stat before;
    bool existed = ::stat(path.c_str(), &before) == 0;
    std::FILE *file = std::fopen(path.c_str(), "wb");
    if (!file)
      return Error{"cannot write `" + path + "`: " + std::strerror(errno)};
    return std::unique_ptr<OutputDump>(new OutputDump(path, file, !existed));
  }
  OutputDump(const OutputDump &) = delete;
  ~OutputDump() {
    if (file)
      std::fclose(file);
    if (!kept && created)
      std::remove(path.c_str());
  }

  Status write(const std::vector<uint8_t> &bytes) {
    if (std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size())
      return Error{"cannot write `" + path + "`: " + std::strerror(errno)};
    return Status();
  }

  /// Closes the file and keeps it.
  Status keep() {
    std::FILE *closing = file;
    file = nullptr;
    if (std::fclose(closing) != 0)
      return Error{"cannot write `" + path + "`: " + std::strerror(errno)};
    kept = true;
    return Status();
  }

private:
  OutputDump(std::string path, std::FILE *file, bool created)
      : path(std::move(path)), file(file), created(created) {}

  std::string path;
  std::FILE *file;
  bool created; // The path did not exist before open.
  bool kept = false;
};

/// Writes every output buffer's bytes to `dump`, in parameter order (the
/// plan's outputs are sorted).
Status dumpOutputs(const Manifest &manifest, const Plan &plan,
                   const std::vector<DeviceBuffer> &device, OutputDump &dump) {
  for (unsigned index : plan.outputs) {
    std::vector<uint8_t> bytes(manifest.bufferAt(index)->byteSize());
    MOSAIC_RETURN_IF_ERROR(
        device[manifest.parameters[index].slot].download(bytes.data()));
    MOSAIC_RETURN_IF_ERROR(dump.write(bytes));
  }
  return dump.keep();
}

/// What the run found: the summary line and the JSON result.
struct Result {
  std::string device;
  uint64_t seed = 0;
  std::vector<std::string> failures;
  std::optional<Comparison> comparison; // Of the first run.
  uint64_t outputElements = 0;
  std::optional<Timing> timing;
  double flops = 0;
  double bytes = 0;
  bool emulator = false; // The kernel ran on the PTX emulator.
  std::optional<EmulatorCounts> emulatorCounts;

  bool passed() const { return failures.empty(); }
};

/// Checks one output's values: every element written, none NaN or
/// infinite, and, with a reference (`reference` non-empty), the error at
/// `indices` within `tolerance`. Failures start with `where`; returns the
/// comparison, if any.
std::optional<Comparison> checkValues(const HostBuffer &values,
                                      const std::vector<uint64_t> &indices,
                                      const std::vector<double> &reference,
                                      double tolerance, bool hasReference,
                                      const std::string &where,
                                      std::vector<std::string> &failures) {
  uint64_t elements = values.parameter.elementCount();
  auto report = [&](const Found &found, const char *what) {
    if (found.count)
      failures.push_back(where + std::to_string(found.count) + " of " +
                         std::to_string(elements) + " elements " + what +
                         " (the first at flat index " +
                         std::to_string(found.first) + ")");
  };
  report(findUnwritten(values), "were not written");
  report(findNonFinite(values), "are NaN or infinite");
  if (!hasReference)
    return std::nullopt;
  Comparison comparison = compare(values.values, indices, reference);
  char text[160];
  std::snprintf(text, sizeof(text),
                "relative error %.3g exceeds the tolerance %.0e",
                comparison.relativeError, tolerance);
  if (!(comparison.relativeError <= tolerance))
    failures.push_back(where + text);
  return comparison;
}

/// Downloads the outputs and checks them (checkValues). `when` starts each
/// failure ("after the timed runs: ").
Status checkOutputs(const Manifest &manifest, const Plan &plan,
                    const std::vector<DeviceBuffer> &device,
                    const std::vector<std::vector<uint64_t>> &indices,
                    const std::vector<std::vector<double>> &reference,
                    const std::string &when, Result &result) {
  result.outputElements = 0;
  for (size_t position = 0; position < plan.outputs.size(); ++position) {
    unsigned index = plan.outputs[position];
    const BufferParameter &parameter = *manifest.bufferAt(index);
    std::vector<uint8_t> bytes(parameter.byteSize());
    MOSAIC_RETURN_IF_ERROR(
        device[manifest.parameters[index].slot].download(bytes.data()));
    HostBuffer values = decodeBuffer(parameter, std::move(bytes));
    result.outputElements += parameter.elementCount();
    std::string where = when + "parameter " + std::to_string(index) + ": ";
    std::optional<Comparison> comparison = checkValues(
        values, plan.reference ? indices[position] : std::vector<uint64_t>(),
        plan.reference ? reference[position] : std::vector<double>(),
        plan.reference ? plan.reference->tolerance : 0,
        plan.reference != nullptr, where, result.failures);
    if (!comparison)
      continue;
    if (position == 0)
      result.comparison = *comparison;
    else
      result.comparison = combine(*result.comparison, *comparison);
  }
  return Status();
}

Status runKernel(const Options &options, const Manifest &manifest,
                 const Plan &plan, OutputDump *dump, OutputDump *inputDump,
                 Result &result) {
  Expected<Backend> backend =
      options.emulate ? Backend::Emulator : backendFromEnvironment();
  MOSAIC_RETURN_IF_ERROR(backend);
  Expected<const Driver *> driver = Driver::get(*backend);
  MOSAIC_RETURN_IF_ERROR(driver);
  const Driver &cuda = **driver;
  result.emulator = cuda.isEmulator();
  Expected<Context> context = Context::open(cuda, options.device.value_or(0));
  MOSAIC_RETURN_IF_ERROR(context);
  result.device = context->name();
  Expected<Kernel> kernel = Kernel::load(*context, manifest);
  MOSAIC_RETURN_IF_ERROR(kernel);
  std::printf(
      "mosaic-run: `%s` from %s on device %d (%s, sm_%d%s), seed %llu\n",
      manifest.entry.c_str(), options.manifest.c_str(), context->ordinal(),
      context->name().c_str(), context->computeCapability(),
      result.emulator ? ", emulated" : "",
      static_cast<unsigned long long>(result.seed));
  std::fflush(stdout);

  // Random inputs; poisoned outputs.
  std::mt19937_64 rng(result.seed);
  std::set<unsigned> outputs(plan.outputs.begin(), plan.outputs.end());
  std::vector<DeviceBuffer> device;
  std::vector<HostBuffer> host;
  std::vector<BufferArgument> arguments;
  for (const BufferParameter &parameter : manifest.buffers) {
    Expected<DeviceBuffer> buffer =
        DeviceBuffer::allocate(*context, parameter.byteSize());
    MOSAIC_RETURN_IF_ERROR(buffer);
    if (outputs.count(parameter.index)) {
      MOSAIC_RETURN_IF_ERROR(buffer->fill(kPoisonByte));
      host.push_back(HostBuffer{parameter, {}, {}});
    } else {
      host.push_back(randomBuffer(parameter, rng));
      MOSAIC_RETURN_IF_ERROR(buffer->upload(host.back().bytes.data()));
    }
    arguments.push_back(
        {buffer->pointer(), parameter.elementType, parameter.shape});
    device.push_back(std::move(*buffer));
  }
  if (inputDump) {
    for (const HostBuffer &buffer : host)
      if (!outputs.count(buffer.parameter.index))
        MOSAIC_RETURN_IF_ERROR(inputDump->write(buffer.bytes));
    MOSAIC_RETURN_IF_ERROR(inputDump->keep());
  }
  std::vector<std::vector<uint64_t>> indices;
  std::vector<std::vector<double>> reference;
  if (plan.reference) {
    uint64_t samples = options.samples.value_or(plan.reference->defaultSamples);
    for (unsigned output = 0; output < plan.outputs.size(); ++output) {
      const BufferParameter &parameter =
          *manifest.bufferAt(plan.outputs[output]);
      indices.push_back(sampleIndices(parameter.elementCount(), samples, rng));
      reference.push_back(
          plan.reference->compute(host, output, indices.back()));
    }
  }

  Expected<Launch> launch = kernel->prepare(arguments);
  MOSAIC_RETURN_IF_ERROR(launch);
  MOSAIC_RETURN_IF_ERROR(launch->run(nullptr));
  MOSAIC_RETURN_IF_ERROR(cuda.check(cuda.cuCtxSynchronize(),
                                    "the kernel failed: cuCtxSynchronize"));
  result.emulatorCounts = cuda.emulatorCounts();
  MOSAIC_RETURN_IF_ERROR(
      checkOutputs(manifest, plan, device, indices, reference, "", result));
  if (dump)
    MOSAIC_RETURN_IF_ERROR(dumpOutputs(manifest, plan, device, *dump));
  // A wrong kernel is not worth timing, and an emulated one cannot be timed:
  // the emulator's wall time says nothing of a GPU's. (The race the runs
  // below look for is a hazard the emulator reports in the first run.)
  if (!result.passed() || result.emulator)
    return Status();

  Expected<Timing> timing = timeKernel(*context, *launch, options);
  MOSAIC_RETURN_IF_ERROR(timing);
  result.timing = *timing;
  // A race shows as a result that changes between runs.
  return checkOutputs(manifest, plan, device, indices, reference,
                      "after the timed runs: ", result);
}

//===----------------------------------------------------------------------===//
// Kernels that span devices: --devices D
//===----------------------------------------------------------------------===//

/// What a kernel with a collective table (docs/RationaleMultiDevice.md) needs
/// from the command line: --devices exactly when the manifest has a
/// collective parameter, and none of the options that name one device's
/// buffers.
Status checkDeviceOptions(const Manifest &manifest, const Options &options) {
  bool collective = manifest.collectiveParameter().has_value();
  if (collective && !options.devices)
    return Error{"`" + manifest.entry +
                 "` spans devices (its manifest has a `collective` "
                 "parameter, the collective table): give --devices D, the "
                 "number of devices to run it on"};
  if (!collective && options.devices)
    return Error{"--devices: `" + manifest.entry +
                 "` runs on one device (its manifest has no `collective` "
                 "parameter); drop --devices"};
  if (!options.devices)
    return Status();
  for (auto [given, name] :
       {std::pair{options.device.has_value(), "--device"},
        std::pair{options.outputs.has_value(), "--outputs"},
        std::pair{options.dumpOutputs.has_value(), "--dump-outputs"},
        std::pair{options.dumpInputs.has_value(), "--dump-inputs"}})
    if (given)
      return Error{std::string(name) +
                   " does not apply with --devices, which runs the kernel on "
                   "devices 0 to D-1 and checks its last buffer parameter"};
  return Status();
}

/// Which collective reference checks the kernel, and its buffers' roles.
struct GroupPlan {
  unsigned devices = 0;
  const CollectiveReference *reference = nullptr;
  unsigned output = 0; // The last buffer parameter (a `buffers` index).
  /// `buffers` indices: symmetric i32 buffers are semaphores, zeroed before
  /// every launch and checked to be zero after it; other symmetric buffers
  /// are the kernel's staging memory, poisoned before the checked launch.
  std::vector<unsigned> semaphores, staging;
};

Expected<GroupPlan> makeGroupPlan(const Manifest &manifest,
                                  const Options &options) {
  GroupPlan plan;
  plan.devices = *options.devices;
  if (manifest.buffers.empty() || manifest.buffers.back().symmetric)
    return Error{"`" + manifest.entry +
                 "` has no output to check: its last buffer parameter must "
                 "be a non-symmetric buffer"};
  plan.output = manifest.buffers.size() - 1;
  std::string name = options.check.value_or(manifest.entry);
  if (name != "none") {
    plan.reference = options.check ? findCollectiveReference(name)
                                   : collectiveReferenceForEntry(name);
    if (!plan.reference)
      return Error{"no reference of a kernel that spans devices named `" +
                   name + "` (" +
                   (options.check ? "--check" : "the kernel's entry name") +
                   "); choose one of " + collectiveReferenceNames() +
                   ", or --check=none"};
    MOSAIC_RETURN_IF_ERROR(
        plan.reference->checkSignature(manifest, plan.devices));
  }
  for (unsigned b = 0; b < manifest.buffers.size(); ++b)
    if (manifest.buffers[b].symmetric)
      (manifest.buffers[b].elementType == ElementType::I32 ? plan.semaphores
                                                           : plan.staging)
          .push_back(b);
  return plan;
}

/// One device's findings.
struct DeviceResult {
  std::vector<std::string> failures;
  std::optional<Comparison> comparison;
};

struct GroupResult {
  std::string device; // The devices' name (device 0's).
  uint64_t seed = 0;
  std::vector<DeviceResult> devices;
  std::optional<Timing> timing;
  double flops = 0, bytes = 0;
  bool emulator = false;
  std::optional<EmulatorCounts> emulatorCounts;

  bool passed() const {
    for (const DeviceResult &device : devices)
      if (!device.failures.empty())
        return false;
    return true;
  }
};

/// Device d's inputs are drawn from the seed S + d (modulo 2^64), so that
/// device 0 gets the inputs of a one-device run with seed S.
uint64_t deviceSeed(uint64_t seed, unsigned device) { return seed + device; }

/// The memory of one launch on every device: each device's own buffers
/// (null where the parameter is symmetric) and the symmetric ones.
struct GroupBuffers {
  std::vector<std::vector<std::optional<DeviceBuffer>>> own; // [device][b]
  std::vector<std::optional<SymmetricBuffer>> symmetric;     // [b]
};

/// Zeroes every device's semaphores on its stream.
Status zeroSemaphores(const DeviceGroup &group, const GroupPlan &plan,
                      const GroupBuffers &buffers) {
  const Driver &cuda = group.driver();
  for (unsigned d = 0; d < plan.devices; ++d) {
    MOSAIC_RETURN_IF_ERROR(group.context(d).makeCurrent());
    for (unsigned b : plan.semaphores) {
      const SymmetricBuffer &semaphores = *buffers.symmetric[b];
      MOSAIC_RETURN_IF_ERROR(cuda.check(
          cuda.cuMemsetD8Async(semaphores.pointer(d), 0, semaphores.size(),
                               group.stream(d)),
          group.describe(d) + ": cuMemsetD8Async (zeroing the semaphores)"));
    }
  }
  return Status();
}

/// Times the launch on every device: per run, each device's stream zeroes
/// the semaphores, flushes the L2 cache and records a start event; then
/// every device is launched, each stream records an end event, and every
/// stream is waited for before the next run (so that no device zeroes its
/// semaphores while a peer of the run before may still signal them). A
/// run's time is the slowest device's; the median is over the runs.
Expected<Timing> timeGroup(const DeviceGroup &group, const GroupLaunch &launch,
                           const GroupPlan &plan, const GroupBuffers &buffers,
                           const Options &options) {
  const Driver &cuda = group.driver();
  std::vector<DeviceBuffer> flush;
  std::vector<std::unique_ptr<Timer>> timers;
  for (unsigned d = 0; d < plan.devices; ++d) {
    Expected<DeviceBuffer> buffer =
        DeviceBuffer::allocate(group.context(d), kFlushBytes);
    MOSAIC_RETURN_IF_ERROR(buffer);
    flush.push_back(std::move(*buffer));
    timers.push_back(std::make_unique<Timer>(cuda));
    MOSAIC_RETURN_IF_ERROR(timers.back()->createEvents(2 * options.reps));
  }
  auto runOnce = [&](std::optional<uint64_t> rep) -> Status {
    MOSAIC_RETURN_IF_ERROR(zeroSemaphores(group, plan, buffers));
    for (unsigned d = 0; d < plan.devices; ++d) {
      MOSAIC_RETURN_IF_ERROR(group.context(d).makeCurrent());
      if (!rep)
        continue;
      MOSAIC_RETURN_IF_ERROR(cuda.check(
          cuda.cuMemsetD8Async(flush[d].pointer(), static_cast<uint8_t>(*rep),
                               kFlushBytes, group.stream(d)),
          group.describe(d) + ": cuMemsetD8Async (L2 flush)"));
      MOSAIC_RETURN_IF_ERROR(cuda.check(
          cuda.cuEventRecord(timers[d]->events[2 * *rep], group.stream(d)),
          group.describe(d) + ": cuEventRecord"));
    }
    MOSAIC_RETURN_IF_ERROR(launch.start());
    for (unsigned d = 0; rep && d < plan.devices; ++d) {
      MOSAIC_RETURN_IF_ERROR(group.context(d).makeCurrent());
      MOSAIC_RETURN_IF_ERROR(cuda.check(
          cuda.cuEventRecord(timers[d]->events[2 * *rep + 1], group.stream(d)),
          group.describe(d) + ": cuEventRecord"));
    }
    Status waited = group.synchronize();
    if (!waited.ok())
      return Error{"the timed runs failed: " + waited.message()};
    return Status();
  };
  for (uint64_t i = 0; i < options.warmup; ++i)
    MOSAIC_RETURN_IF_ERROR(runOnce(std::nullopt));
  std::vector<double> times(options.reps, 0.0);
  for (uint64_t i = 0; i < options.reps; ++i) {
    MOSAIC_RETURN_IF_ERROR(runOnce(i));
    for (unsigned d = 0; d < plan.devices; ++d) {
      float ms = 0;
      MOSAIC_RETURN_IF_ERROR(group.context(d).makeCurrent());
      MOSAIC_RETURN_IF_ERROR(
          cuda.check(cuda.cuEventElapsedTime(&ms, timers[d]->events[2 * i],
                                             timers[d]->events[2 * i + 1]),
                     group.describe(d) + ": cuEventElapsedTime"));
      times[i] = std::max(times[i], double(ms));
    }
  }
  return summarize(std::move(times));
}

/// Downloads every device's output and semaphores and checks them: the
/// output as checkValues does, the semaphores back at zero.
Status checkGroup(const GroupPlan &plan, const GroupBuffers &buffers,
                  const std::vector<std::vector<uint64_t>> &indices,
                  const std::vector<std::vector<double>> &reference,
                  const Manifest &manifest, const std::string &when,
                  GroupResult &result) {
  const BufferParameter &output = manifest.buffers[plan.output];
  for (unsigned d = 0; d < plan.devices; ++d) {
    DeviceResult &device = result.devices[d];
    std::vector<uint8_t> bytes(output.byteSize());
    MOSAIC_RETURN_IF_ERROR(buffers.own[d][plan.output]->download(bytes.data()));
    HostBuffer values = decodeBuffer(output, std::move(bytes));
    std::string where = when + "device " + std::to_string(d) + ": parameter " +
                        std::to_string(output.index) + ": ";
    device.comparison = checkValues(
        values, plan.reference ? indices[d] : std::vector<uint64_t>(),
        plan.reference ? reference[d] : std::vector<double>(),
        plan.reference ? plan.reference->tolerance : 0,
        plan.reference != nullptr, where, device.failures);
    for (unsigned b : plan.semaphores) {
      const BufferParameter &parameter = manifest.buffers[b];
      std::vector<uint8_t> raw(parameter.byteSize());
      MOSAIC_RETURN_IF_ERROR(buffers.symmetric[b]->download(d, raw.data()));
      HostBuffer semaphores = decodeBuffer(parameter, std::move(raw));
      uint64_t nonzero = 0, first = 0;
      for (uint64_t i = 0; i < semaphores.values.size(); ++i)
        if (semaphores.values[i] != 0 && nonzero++ == 0)
          first = i;
      if (nonzero)
        device.failures.push_back(
            when + "device " + std::to_string(d) + ": parameter " +
            std::to_string(parameter.index) +
            " (semaphores): " + std::to_string(nonzero) + " of " +
            std::to_string(semaphores.values.size()) +
            " are not zero after the launch (the first at index " +
            std::to_string(first) + " holds " +
            format("%.0f", semaphores.values[first]) + ")");
    }
  }
  return Status();
}

Status runGroup(const Options &options, const Manifest &manifest,
                const GroupPlan &plan, GroupResult &result) {
  Expected<Backend> backend =
      options.emulate ? Backend::Emulator : backendFromEnvironment();
  MOSAIC_RETURN_IF_ERROR(backend);
  Expected<const Driver *> driver = Driver::get(*backend);
  MOSAIC_RETURN_IF_ERROR(driver);
  const Driver &cuda = **driver;
  result.emulator = cuda.isEmulator();
  int available = 0;
  MOSAIC_RETURN_IF_ERROR(
      cuda.check(cuda.cuDeviceGetCount(&available), "cuDeviceGetCount"));
  if (available < 0 || static_cast<unsigned>(available) < plan.devices)
    return Error{
        "--devices " + std::to_string(plan.devices) + ": the driver has " +
        std::to_string(available) + " device" + (available == 1 ? "" : "s") +
        (result.emulator
             ? "; set MOSAIC_EMULATOR_DEVICES=" + std::to_string(plan.devices) +
                   " (the emulator has as many devices as it "
                   "says, default 1)"
             : std::string())};
  Expected<std::unique_ptr<DeviceGroup>> opened =
      DeviceGroup::open(cuda, plan.devices);
  MOSAIC_RETURN_IF_ERROR(opened);
  const DeviceGroup &group = **opened;
  const Context &first = group.context(0);
  result.device = first.name();
  Expected<GroupKernel> kernel = GroupKernel::load(group, manifest);
  MOSAIC_RETURN_IF_ERROR(kernel);
  std::printf("mosaic-run: `%s` from %s on devices 0 to %u (%s, sm_%d%s), "
              "seed %llu (device d draws its inputs from seed %llu + d)\n",
              manifest.entry.c_str(), options.manifest.c_str(),
              plan.devices - 1, first.name().c_str(), first.computeCapability(),
              result.emulator ? ", emulated" : "",
              static_cast<unsigned long long>(result.seed),
              static_cast<unsigned long long>(result.seed));
  std::fflush(stdout);

  // Symmetric memory: semaphores zeroed, staging poisoned.
  Expected<std::unique_ptr<SymmetricHeap>> heap = SymmetricHeap::create(group);
  MOSAIC_RETURN_IF_ERROR(heap);
  GroupBuffers buffers;
  buffers.symmetric.resize(manifest.buffers.size());
  for (unsigned b = 0; b < manifest.buffers.size(); ++b) {
    const BufferParameter &parameter = manifest.buffers[b];
    if (!parameter.symmetric)
      continue;
    Expected<SymmetricBuffer> buffer = (*heap)->allocate(
        parameter.byteSize(), std::max<uint64_t>(parameter.alignment, 256));
    MOSAIC_RETURN_IF_ERROR(buffer);
    bool semaphore = parameter.elementType == ElementType::I32;
    for (unsigned d = 0; d < plan.devices; ++d)
      MOSAIC_RETURN_IF_ERROR(buffer->fill(d, semaphore ? 0 : kPoisonByte));
    buffers.symmetric[b].emplace(std::move(*buffer));
  }

  // Each device's own buffers: random inputs, a poisoned output.
  std::vector<std::vector<HostBuffer>> host(plan.devices);
  std::vector<std::mt19937_64> rngs;
  std::vector<std::vector<GroupArgument>> arguments(plan.devices);
  buffers.own.resize(plan.devices);
  for (unsigned d = 0; d < plan.devices; ++d) {
    rngs.emplace_back(deviceSeed(result.seed, d));
    buffers.own[d].resize(manifest.buffers.size());
    for (unsigned b = 0; b < manifest.buffers.size(); ++b) {
      const BufferParameter &parameter = manifest.buffers[b];
      if (parameter.symmetric) {
        host[d].push_back(HostBuffer{parameter, {}, {}});
        arguments[d].push_back(SymmetricArgument{
            &*buffers.symmetric[b], parameter.elementType, parameter.shape});
        continue;
      }
      Expected<DeviceBuffer> buffer =
          DeviceBuffer::allocate(group.context(d), parameter.byteSize());
      MOSAIC_RETURN_IF_ERROR(buffer);
      if (b == plan.output) {
        MOSAIC_RETURN_IF_ERROR(buffer->fill(kPoisonByte));
        host[d].push_back(HostBuffer{parameter, {}, {}});
      } else {
        host[d].push_back(randomBuffer(parameter, rngs[d]));
        MOSAIC_RETURN_IF_ERROR(buffer->upload(host[d].back().bytes.data()));
      }
      arguments[d].push_back(BufferArgument{
          buffer->pointer(), parameter.elementType, parameter.shape});
      buffers.own[d][b].emplace(std::move(*buffer));
    }
  }
  std::vector<std::vector<uint64_t>> indices;
  std::vector<std::vector<double>> reference;
  if (plan.reference) {
    uint64_t samples = options.samples.value_or(plan.reference->defaultSamples);
    uint64_t size = manifest.buffers[plan.output].elementCount();
    for (unsigned d = 0; d < plan.devices; ++d) {
      indices.push_back(sampleIndices(size, samples, rngs[d]));
      reference.push_back(plan.reference->compute(host, d, indices.back()));
    }
  }

  Expected<GroupLaunch> launch = kernel->prepare(arguments);
  MOSAIC_RETURN_IF_ERROR(launch);
  MOSAIC_RETURN_IF_ERROR(launch->run());
  result.emulatorCounts = cuda.emulatorCounts();
  result.devices.assign(plan.devices, DeviceResult());
  MOSAIC_RETURN_IF_ERROR(
      checkGroup(plan, buffers, indices, reference, manifest, "", result));
  if (!result.passed() || result.emulator)
    return Status();

  Expected<Timing> timing = timeGroup(group, *launch, plan, buffers, options);
  MOSAIC_RETURN_IF_ERROR(timing);
  result.timing = *timing;
  result.devices.assign(plan.devices, DeviceResult());
  return checkGroup(plan, buffers, indices, reference, manifest,
                    "after the timed runs: ", result);
}

/// "bf16 [4096, 4096], bf16 [4096, 4096] -> bf16 [4096, 4096]".
std::string describeSignature(const Manifest &manifest, const Plan &plan) {
  std::string inputs, outputs;
  for (const BufferParameter &buffer : manifest.buffers) {
    bool isOutput = std::find(plan.outputs.begin(), plan.outputs.end(),
                              buffer.index) != plan.outputs.end();
    std::string &list = isOutput ? outputs : inputs;
    list += (list.empty() ? "" : ", ") +
            std::string(spelling(buffer.elementType)) + " " +
            formatList(buffer.shape);
  }
  return inputs + " -> " + outputs;
}

/// "; emulated, not timed: ..." or "; median ... us over ...".
std::string describeMeasurements(bool emulator,
                                 const std::optional<EmulatorCounts> &counts,
                                 const std::optional<Timing> &timing,
                                 double flops, double bytes,
                                 const Options &options) {
  std::string line;
  if (emulator) {
    line += "; emulated, not timed";
    if (counts) {
      line += ": " + std::to_string(counts->threadInstructions) +
              " thread instructions (" +
              std::to_string(counts->warpInstructions) +
              " warp instructions) in " + format("%.2f", counts->seconds) +
              " s of emulation (not a GPU timing)";
      if (counts->seconds > 0)
        line += ", " +
                format("%.3g", counts->threadInstructions / counts->seconds) +
                " thread instructions/s";
    }
  }
  if (timing) {
    double seconds = timing->medianMs * 1e-3;
    line += "; median " + format("%.2f", timing->medianMs * 1e3) + " us over " +
            std::to_string(options.reps) + " runs (" +
            std::to_string(options.warmup) + " warm-up, L2 flushed)";
    if (flops > 0)
      line += ", " + format("%.1f", flops / seconds / 1e12) + " TFLOP/s";
    line += ", " + format("%.1f", bytes / seconds / 1e9) + " GB/s";
  }
  return line;
}

void printSummary(const Manifest &manifest, const Plan &plan,
                  const Options &options, const Result &result) {
  std::string line = manifest.entry + " (" + describeSignature(manifest, plan) +
                     "): " + (result.passed() ? "PASS" : "FAIL");
  if (result.comparison) {
    const Comparison &c = *result.comparison;
    uint64_t total = 0;
    for (unsigned index : plan.outputs)
      total += manifest.bufferAt(index)->elementCount();
    line += "; relative error " + format("%.2e", c.relativeError) +
            " (tolerance " + format("%.0e", plan.reference->tolerance) + ", `" +
            plan.reference->name + "` reference, " +
            (c.compared == total ? "all " + std::to_string(total)
                                 : std::to_string(c.compared) + " sampled of " +
                                       std::to_string(total)) +
            " elements)";
  } else {
    line += "; no reference (--check=none)";
  }
  if (result.passed())
    line += "; all " + std::to_string(result.outputElements) +
            " output elements written";
  line +=
      describeMeasurements(result.emulator, result.emulatorCounts,
                           result.timing, result.flops, result.bytes, options);
  std::printf("%s\n", line.c_str());
  for (const std::string &failure : result.failures)
    std::printf("  FAIL: %s\n", failure.c_str());
}

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", c);
      out += escape;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string jsonNumber(double value) {
  if (!std::isfinite(value))
    return "null";
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

/// The JSON fields of describeMeasurements, through `field(key, value)`.
template <typename Field>
void jsonMeasurements(Field &field, bool emulator,
                      const std::optional<EmulatorCounts> &counts,
                      const std::optional<Timing> &timing, double flops,
                      double bytes, const Options &options) {
  if (timing) {
    field("median_ms", jsonNumber(timing->medianMs));
    field("min_ms", jsonNumber(timing->minMs));
    field("max_ms", jsonNumber(timing->maxMs));
    field("reps", std::to_string(options.reps));
    field("warmup", std::to_string(options.warmup));
  }
  field("flops", jsonNumber(flops));
  field("bytes", jsonNumber(bytes));
  field("emulated", emulator ? "true" : "false");
  if (counts) {
    field("emulated_seconds", jsonNumber(counts->seconds));
    field("emulated_warp_instructions",
          std::to_string(counts->warpInstructions));
    field("emulated_thread_instructions",
          std::to_string(counts->threadInstructions));
  }
}

/// The top-level object of a --json report: one `"key": value` line per
/// field, in order.
class JsonReport {
public:
  void operator()(const char *key, const std::string &value) {
    text += std::string(text.size() > 2 ? ",\n" : "") + "  \"" + key +
            "\": " + value;
  }
  /// Closes the object and writes it to `path`.
  Status write(const std::string &path) const {
    std::ofstream stream(path);
    stream << text << "\n}\n";
    if (!stream)
      return Error{"cannot write `" + path + "`"};
    return Status();
  }

private:
  std::string text = "{\n";
};

Status writeJson(const std::string &path, const Manifest &manifest,
                 const Plan &plan, const Options &options, const Result &result,
                 const std::string &error) {
  std::string buffers;
  for (const BufferParameter &buffer : manifest.buffers)
    buffers +=
        std::string(buffers.empty() ? "" : ", ") +
        "{\"index\": " + std::to_string(buffer.index) +
        ", \"element_type\": " + jsonString(spelling(buffer.elementType)) +
        ", \"shape\": " + formatList(buffer.shape) + "}";
  std::string failures;
  for (const std::string &failure : result.failures)
    failures += (failures.empty() ? "" : ", ") + jsonString(failure);
  if (!error.empty())
    failures += (failures.empty() ? "" : ", ") + jsonString(error);
  JsonReport field;
  field("kernel", jsonString(manifest.entry));
  field("manifest", jsonString(options.manifest));
  field("device", jsonString(result.device));
  field("buffers", "[" + buffers + "]");
  field("outputs", formatList(plan.outputs));
  field("check", plan.reference ? jsonString(plan.reference->name)
                                : std::string("null"));
  field("passed", error.empty() && result.passed() ? "true" : "false");
  field("failures", "[" + failures + "]");
  field("seed", std::to_string(result.seed));
  if (result.comparison) {
    field("relative_error", jsonNumber(result.comparison->relativeError));
    field("tolerance", jsonNumber(plan.reference->tolerance));
    field("compared", std::to_string(result.comparison->compared));
  }
  jsonMeasurements(field, result.emulator, result.emulatorCounts, result.timing,
                   result.flops, result.bytes, options);
  return field.write(path);
}

/// "bf16 [128, 128], bf16 [128, 256], symmetric bf16 [256, 128], symmetric
/// i32 [2] -> bf16 [256, 256]".
std::string describeGroupSignature(const Manifest &manifest,
                                   const GroupPlan &plan) {
  std::string inputs;
  for (unsigned b = 0; b < plan.output; ++b) {
    const BufferParameter &buffer = manifest.buffers[b];
    inputs += (inputs.empty() ? "" : ", ") +
              std::string(buffer.symmetric ? "symmetric " : "") +
              spelling(buffer.elementType) + " " + formatList(buffer.shape);
  }
  const BufferParameter &output = manifest.buffers[plan.output];
  return inputs + " -> " + spelling(output.elementType) + " " +
         formatList(output.shape);
}

/// One line for the launch, then one per device.
void printGroupSummary(const Manifest &manifest, const GroupPlan &plan,
                       const Options &options, const GroupResult &result) {
  std::string line = manifest.entry + " on " + std::to_string(plan.devices) +
                     (plan.devices == 1 ? " device (" : " devices (") +
                     describeGroupSignature(manifest, plan) +
                     "): " + (result.passed() ? "PASS" : "FAIL");
  line += plan.reference
              ? std::string("; `") + plan.reference->name + "` reference"
              : std::string("; no reference (--check=none)");
  line +=
      describeMeasurements(result.emulator, result.emulatorCounts,
                           result.timing, result.flops, result.bytes, options);
  std::printf("%s\n", line.c_str());
  uint64_t total = manifest.buffers[plan.output].elementCount();
  for (unsigned d = 0; d < plan.devices; ++d) {
    const DeviceResult &device = result.devices[d];
    std::string text = "  device " + std::to_string(d) + " (seed " +
                       std::to_string(deviceSeed(result.seed, d)) +
                       "): " + (device.failures.empty() ? "PASS" : "FAIL");
    if (device.comparison) {
      const Comparison &c = *device.comparison;
      text +=
          "; relative error " + format("%.2e", c.relativeError) +
          " (tolerance " + format("%.0e", plan.reference->tolerance) + ", " +
          (c.compared == total ? "all " + std::to_string(total)
                               : std::to_string(c.compared) + " sampled of " +
                                     std::to_string(total)) +
          " elements)";
    }
    if (device.failures.empty())
      text += "; all " + std::to_string(total) + " output elements written" +
              (plan.semaphores.empty() ? "" : "; semaphores back at zero");
    std::printf("%s\n", text.c_str());
    for (const std::string &failure : device.failures)
      std::printf("  FAIL: %s\n", failure.c_str());
  }
}

Status writeGroupJson(const std::string &path, const Manifest &manifest,
                      const GroupPlan &plan, const Options &options,
                      const GroupResult &result, const std::string &error) {
  std::string buffers;
  for (const BufferParameter &buffer : manifest.buffers)
    buffers +=
        std::string(buffers.empty() ? "" : ", ") +
        "{\"index\": " + std::to_string(buffer.index) +
        ", \"element_type\": " + jsonString(spelling(buffer.elementType)) +
        ", \"shape\": " + formatList(buffer.shape) +
        ", \"symmetric\": " + (buffer.symmetric ? "true" : "false") + "}";
  std::string failures, perDevice;
  for (unsigned d = 0; d < result.devices.size(); ++d) {
    const DeviceResult &device = result.devices[d];
    std::string own;
    for (const std::string &failure : device.failures) {
      failures += (failures.empty() ? "" : ", ") + jsonString(failure);
      own += (own.empty() ? "" : ", ") + jsonString(failure);
    }
    perDevice += std::string(perDevice.empty() ? "" : ",\n    ") +
                 "{\"device\": " + std::to_string(d) +
                 ", \"seed\": " + std::to_string(deviceSeed(result.seed, d)) +
                 ", \"passed\": " +
                 (error.empty() && device.failures.empty() ? "true" : "false");
    if (device.comparison)
      perDevice +=
          ", \"relative_error\": " +
          jsonNumber(device.comparison->relativeError) +
          ", \"compared\": " + std::to_string(device.comparison->compared);
    perDevice += ", \"failures\": [" + own + "]}";
  }
  if (!error.empty())
    failures += (failures.empty() ? "" : ", ") + jsonString(error);
  JsonReport field;
  field("kernel", jsonString(manifest.entry));
  field("manifest", jsonString(options.manifest));
  field("device", jsonString(result.device));
  field("devices", std::to_string(plan.devices));
  field("buffers", "[" + buffers + "]");
  field("outputs",
        "[" + std::to_string(manifest.buffers[plan.output].index) + "]");
  field("check", plan.reference ? jsonString(plan.reference->name)
                                : std::string("null"));
  field("passed", error.empty() && result.passed() ? "true" : "false");
  field("failures", "[" + failures + "]");
  field("seed", std::to_string(result.seed));
  if (plan.reference)
    field("tolerance", jsonNumber(plan.reference->tolerance));
  field("per_device", "[\n    " + perDevice + "\n  ]");
  jsonMeasurements(field, result.emulator, result.emulatorCounts, result.timing,
                   result.flops, result.bytes, options);
  return field.write(path);
}

/// mosaic-run --devices D: the kernel on devices 0 to D-1.
int runOnDevices(const Options &options, const Manifest &manifest) {
  auto fail = [](const std::string &message) {
    std::fprintf(stderr, "mosaic-run: error: %s\n", message.c_str());
    return 1;
  };
  Expected<GroupPlan> plan = makeGroupPlan(manifest, options);
  if (!plan.ok())
    return fail(plan.message());
  GroupResult result;
  result.seed = options.seed.value_or((uint64_t(std::random_device()()) << 32) |
                                      std::random_device()());
  if (options.flops)
    result.flops = *options.flops;
  else if (plan->reference)
    result.flops = plan->reference->flops(manifest, plan->devices);
  for (const BufferParameter &buffer : manifest.buffers)
    result.bytes += static_cast<double>(buffer.byteSize()) * plan->devices;
  if (options.bytes)
    result.bytes = *options.bytes;

  Status status = runGroup(options, manifest, *plan, result);
  if (status.ok())
    printGroupSummary(manifest, *plan, options, result);
  if (options.json) {
    Status written = writeGroupJson(*options.json, manifest, *plan, options,
                                    result, status.message());
    if (!written.ok())
      fail(written.message());
  }
  if (!status.ok())
    return fail(status.message());
  return result.passed() ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  Expected<Options> options = parseOptions(argc, argv);
  if (options.ok() && options->help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!options.ok()) {
    std::fprintf(stderr,
                 "mosaic-run: error: %s\n(mosaic-run --help lists "
                 "the options)\n",
                 options.message().c_str());
    return 2;
  }
  auto fail = [](const std::string &message) {
    std::fprintf(stderr, "mosaic-run: error: %s\n", message.c_str());
    return 1;
  };
  Expected<Manifest> manifest = loadManifest(options->manifest);
  if (!manifest.ok())
    return fail(manifest.message());
  Status devices = checkDeviceOptions(*manifest, *options);
  if (!devices.ok())
    return fail(devices.message());
  if (options->devices)
    return runOnDevices(*options, *manifest);
  Expected<Plan> plan = makePlan(*manifest, *options);
  if (!plan.ok())
    return fail(plan.message());

  // A path that cannot be written fails before the kernel runs.
  std::unique_ptr<OutputDump> dump, inputDump;
  for (auto [path, file] : {std::pair{&options->dumpOutputs, &dump},
                            std::pair{&options->dumpInputs, &inputDump}}) {
    if (!*path)
      continue;
    Expected<std::unique_ptr<OutputDump>> opened = OutputDump::open(**path);
    if (!opened.ok())
      return fail(opened.message());
    *file = std::move(*opened);
  }

  Result result;
  result.seed = options->seed.value_or(
      (uint64_t(std::random_device()()) << 32) | std::random_device()());
  if (options->flops)
    result.flops = *options->flops;
  else if (plan->reference)
    result.flops = plan->reference->flops(*manifest);
  result.bytes = 0;
  for (const BufferParameter &buffer : manifest->buffers)
    result.bytes += static_cast<double>(buffer.byteSize());
  if (options->bytes)
    result.bytes = *options->bytes;

  Status status = runKernel(*options, *manifest, *plan, dump.get(),
                            inputDump.get(), result);
  dump.reset(); // A dump this run created but did not fill is removed.
  inputDump.reset();
  if (status.ok())
    printSummary(*manifest, *plan, *options, result);
  if (options->json) {
    Status written = writeJson(*options->json, *manifest, *plan, *options,
                               result, status.message());
    if (!written.ok())
      fail(written.message());
  }
  if (!status.ok())
    return fail(status.message());
  return result.passed() ? 0 : 1;
}
