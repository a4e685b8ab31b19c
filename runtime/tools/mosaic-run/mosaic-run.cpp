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
                    gemm_ws is a gemm)
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
  int device = 0;
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
        "--help", "--check",   "--outputs",      "--samples",    "--warmup",
        "--reps", "--seed",    "--flops",        "--bytes",      "--device",
        "--json", "--emulate", "--dump-outputs", "--dump-inputs"};
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
               name == "--seed" || name == "--device") {
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

/// Downloads the outputs and checks them: every element written, none NaN
/// or infinite, and, with a reference, the error within its tolerance.
/// `when` starts each failure ("after the timed runs: ").
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
    auto report = [&](const Found &found, const char *what) {
      if (found.count)
        result.failures.push_back(
            where + std::to_string(found.count) + " of " +
            std::to_string(parameter.elementCount()) + " elements " + what +
            " (the first at flat index " + std::to_string(found.first) + ")");
    };
    report(findUnwritten(values), "were not written");
    report(findNonFinite(values), "are NaN or infinite");
    if (!plan.reference)
      continue;
    Comparison comparison =
        compare(values.values, indices[position], reference[position]);
    if (position == 0)
      result.comparison = comparison;
    else
      result.comparison = combine(*result.comparison, comparison);
    char text[160];
    std::snprintf(text, sizeof(text),
                  "relative error %.3g exceeds the tolerance %.0e",
                  comparison.relativeError, plan.reference->tolerance);
    if (!(comparison.relativeError <= plan.reference->tolerance))
      result.failures.push_back(where + text);
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
  Expected<Context> context = Context::open(cuda, options.device);
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

std::string format(const char *pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), pattern, value);
  return text;
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
  if (result.emulator) {
    line += "; emulated, not timed";
    if (result.emulatorCounts) {
      const EmulatorCounts &counts = *result.emulatorCounts;
      line += ": " + std::to_string(counts.threadInstructions) +
              " thread instructions (" +
              std::to_string(counts.warpInstructions) +
              " warp instructions) in " + format("%.2f", counts.seconds) +
              " s of emulation (not a GPU timing)";
      if (counts.seconds > 0)
        line += ", " +
                format("%.3g", counts.threadInstructions / counts.seconds) +
                " thread instructions/s";
    }
  }
  if (result.timing) {
    double seconds = result.timing->medianMs * 1e-3;
    line += "; median " + format("%.2f", result.timing->medianMs * 1e3) +
            " us over " + std::to_string(options.reps) + " runs (" +
            std::to_string(options.warmup) + " warm-up, L2 flushed)";
    if (result.flops > 0)
      line += ", " + format("%.1f", result.flops / seconds / 1e12) + " TFLOP/s";
    line += ", " + format("%.1f", result.bytes / seconds / 1e9) + " GB/s";
  }
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
  std::string json = "{\n";
  auto field = [&](const char *key, const std::string &value) {
    json += std::string(json.size() > 2 ? ",\n" : "") + "  \"" + key +
            "\": " + value;
  };
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
  if (result.timing) {
    field("median_ms", jsonNumber(result.timing->medianMs));
    field("min_ms", jsonNumber(result.timing->minMs));
    field("max_ms", jsonNumber(result.timing->maxMs));
    field("reps", std::to_string(options.reps));
    field("warmup", std::to_string(options.warmup));
  }
  field("flops", jsonNumber(result.flops));
  field("bytes", jsonNumber(result.bytes));
  field("emulated", result.emulator ? "true" : "false");
  if (result.emulatorCounts) {
    const EmulatorCounts &counts = *result.emulatorCounts;
    field("emulated_seconds", jsonNumber(counts.seconds));
    field("emulated_warp_instructions",
          std::to_string(counts.warpInstructions));
    field("emulated_thread_instructions",
          std::to_string(counts.threadInstructions));
  }
  json += "\n}\n";
  std::ofstream stream(path);
  stream << json;
  if (!stream)
    return Error{"cannot write `" + path + "`"};
  return Status();
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
