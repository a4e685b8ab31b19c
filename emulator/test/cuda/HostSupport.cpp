//===- HostSupport.cpp - Driver-API boilerplate for the corpus hosts -----===//

#include "HostSupport.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace emutest {

std::string errorName(CUresult result) {
  const char *name = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    return "CUresult " + std::to_string(static_cast<int>(result));
  return name;
}

void fail(const std::string &message) {
  std::fprintf(stdout, "ERROR %s\n", message.c_str());
  std::fflush(stdout);
  std::exit(kExitDriverError);
}

void checkDriver(CUresult result, const char *call, const char *file,
                 int line) {
  if (result == CUDA_SUCCESS)
    return;
  std::ostringstream message;
  message << file << ":" << line << ": " << call
          << " failed: " << errorName(result);
  fail(message.str());
}

//===----------------------------------------------------------------------===//
// Session, buffers, launches
//===----------------------------------------------------------------------===//

static std::string readFile(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream)
    fail("cannot read " + path);
  std::ostringstream contents;
  contents << stream.rdbuf();
  return contents.str();
}

Session::Session(const std::string &ptxPath) {
  // Read first: a missing file is not a driver error worth a context.
  std::string ptx = readFile(ptxPath);
  EMU_CHECK(cuInit(0));
  EMU_CHECK(cuDeviceGet(&device_, 0));
  EMU_CHECK(cuDevicePrimaryCtxRetain(&context_, device_));
  EMU_CHECK(cuCtxSetCurrent(context_));

  // The JIT log says why a module does not load; show it before failing.
  char log[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log))};
  CUresult loaded =
      cuModuleLoadDataEx(&module_, ptx.c_str(), 2, options, values);
  if (loaded != CUDA_SUCCESS) {
    if (log[0])
      std::fprintf(stdout, "JIT log for %s:\n%s\n", ptxPath.c_str(), log);
    checkDriver(loaded, "cuModuleLoadDataEx(<ptx text>)", __FILE__, __LINE__);
  }
}

Session::~Session() {
  EMU_CHECK(cuModuleUnload(module_));
  EMU_CHECK(cuDevicePrimaryCtxRelease(device_));
}

CUfunction Session::function(const char *name) const {
  CUfunction function = nullptr;
  CUresult result = cuModuleGetFunction(&function, module_, name);
  if (result != CUDA_SUCCESS)
    fail(std::string("cuModuleGetFunction(\"") + name +
         "\") failed: " + errorName(result));
  return function;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  EMU_CHECK(cuMemAlloc(&address_, bytes));
}

DeviceBuffer::~DeviceBuffer() { EMU_CHECK(cuMemFree(address_)); }

void DeviceBuffer::upload(const void *source, size_t bytes) {
  if (bytes > bytes_)
    fail("upload larger than the buffer");
  EMU_CHECK(cuMemcpyHtoD(address_, source, bytes));
}

void DeviceBuffer::fill(uint8_t byte) {
  EMU_CHECK(cuMemsetD8(address_, byte, bytes_));
}

void DeviceBuffer::downloadInto(void *destination, size_t bytes) const {
  EMU_CHECK(cuMemcpyDtoH(destination, address_, bytes));
}

void launch(CUfunction function, Dim3 grid, Dim3 block,
            unsigned dynamicSharedBytes, std::vector<void *> parameters) {
  EMU_CHECK(cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x, block.y,
                           block.z, dynamicSharedBytes, /*hStream=*/nullptr,
                           parameters.data(), /*extra=*/nullptr));
  EMU_CHECK(cuCtxSynchronize());
}

CUresult tryLaunch(CUfunction function, Dim3 grid, Dim3 block,
                   unsigned dynamicSharedBytes,
                   std::vector<void *> parameters) {
  CUresult result = cuLaunchKernel(function, grid.x, grid.y, grid.z, block.x,
                                   block.y, block.z, dynamicSharedBytes,
                                   /*hStream=*/nullptr, parameters.data(),
                                   /*extra=*/nullptr);
  if (result != CUDA_SUCCESS)
    return result;
  return cuCtxSynchronize();
}

void launchCluster(CUfunction function, Dim3 grid, Dim3 block, Dim3 cluster,
                   unsigned dynamicSharedBytes,
                   std::vector<void *> parameters) {
  CUlaunchAttribute attribute = {};
  attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attribute.value.clusterDim.x = cluster.x;
  attribute.value.clusterDim.y = cluster.y;
  attribute.value.clusterDim.z = cluster.z;
  CUlaunchConfig config = {};
  config.gridDimX = grid.x;
  config.gridDimY = grid.y;
  config.gridDimZ = grid.z;
  config.blockDimX = block.x;
  config.blockDimY = block.y;
  config.blockDimZ = block.z;
  config.sharedMemBytes = dynamicSharedBytes;
  config.hStream = nullptr;
  config.attrs = &attribute;
  config.numAttrs = 1;
  EMU_CHECK(cuLaunchKernelEx(&config, function, parameters.data(),
                             /*extra=*/nullptr));
  EMU_CHECK(cuCtxSynchronize());
}

void setMaxDynamicSharedBytes(CUfunction function, int bytes) {
  EMU_CHECK(cuFuncSetAttribute(
      function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
}

CUresult tryEncodeTiled(CUtensorMap &map, const TiledTensor2d &tensor) {
  cuuint64_t globalDim[2] = {tensor.cols, tensor.rows};
  cuuint64_t globalStrides[1] = {tensor.rowStrideBytes};
  cuuint32_t boxDim[2] = {tensor.boxCols, tensor.boxRows};
  cuuint32_t elementStrides[2] = {1, tensor.rowElementStride};
  return cuTensorMapEncodeTiled(
      &map, tensor.dataType, 2, reinterpret_cast<void *>(tensor.address),
      globalDim, globalStrides, boxDim, elementStrides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, tensor.swizzle, tensor.l2Promotion,
      tensor.oobFill);
}

CUtensorMap encodeTiled(const TiledTensor2d &tensor) {
  CUtensorMap map;
  CUresult result = tryEncodeTiled(map, tensor);
  if (result != CUDA_SUCCESS) {
    std::ostringstream message;
    message << "cuTensorMapEncodeTiled(" << tensor.cols << "x" << tensor.rows
            << ", stride " << tensor.rowStrideBytes << " B, box "
            << tensor.boxCols << "x" << tensor.boxRows << ", swizzle "
            << static_cast<int>(tensor.swizzle)
            << ") failed: " << errorName(result);
    fail(message.str());
  }
  return map;
}

//===----------------------------------------------------------------------===//
// Checker
//===----------------------------------------------------------------------===//

static constexpr size_t kMismatchesShown = 8;

void Checker::record(bool ok, const std::string &mismatch) {
  ++checked_;
  if (ok)
    return;
  ++failed_;
  if (firstMismatches_.size() < kMismatchesShown)
    firstMismatches_.push_back(mismatch);
}

static std::string describe(const std::string &what, size_t index) {
  return "[" + std::to_string(index) + "] " + what;
}

void Checker::equal(const std::string &what, size_t index, int64_t got,
                    int64_t expected) {
  char text[160];
  std::snprintf(text, sizeof(text),
                ": got %" PRId64 " (0x%" PRIx64 "), expected %" PRId64
                " (0x%" PRIx64 ")",
                got, static_cast<uint64_t>(got), expected,
                static_cast<uint64_t>(expected));
  record(got == expected, describe(what, index) + text);
}

void Checker::equalBits(const std::string &what, size_t index, float got,
                        float expected) {
  char text[160];
  std::snprintf(text, sizeof(text),
                ": got %.9g (0x%08x), expected %.9g (0x%08x)", got,
                floatToBits(got), expected, floatToBits(expected));
  record(floatToBits(got) == floatToBits(expected),
         describe(what, index) + text);
}

void Checker::near(const std::string &what, size_t index, double got,
                   double expected, double tolerance) {
  char text[160];
  std::snprintf(text, sizeof(text),
                ": got %.9g, expected %.9g (tolerance %.3g)", got, expected,
                tolerance);
  record(std::fabs(got - expected) <= tolerance, describe(what, index) + text);
}

void Checker::expect(const std::string &what, size_t index, bool holds,
                     const std::string &detail) {
  record(holds, describe(what, index) + (detail.empty() ? "" : ": " + detail));
}

bool Checker::finish() const {
  if (checked_ == 0) {
    std::printf("FAIL %s: nothing was checked\n", test_.c_str());
    return false;
  }
  if (failed_ == 0) {
    std::printf("PASS %s: %zu values checked\n", test_.c_str(), checked_);
    return true;
  }
  std::printf("FAIL %s: %zu of %zu values differ; first:", test_.c_str(),
              failed_, checked_);
  for (size_t i = 0; i < firstMismatches_.size(); ++i)
    std::printf("%s %s", i ? ";" : "", firstMismatches_[i].c_str());
  std::printf("\n");
  return false;
}

//===----------------------------------------------------------------------===//
// main
//===----------------------------------------------------------------------===//

// Runs `program ptx variant` as a new process (exec, so that the child's
// CUDA state is its own) and says whether it passed.
static bool runInChild(const char *program, const char *ptx,
                       const char *variant) {
  std::fflush(stdout);
  pid_t child = fork();
  if (child < 0)
    fail("fork failed");
  if (child == 0) {
    char *const arguments[] = {const_cast<char *>(program),
                               const_cast<char *>(ptx),
                               const_cast<char *>(variant), nullptr};
    execv("/proc/self/exe", arguments);
    std::_Exit(kExitDriverError);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child)
    fail("waitpid failed");
  return WIFEXITED(status) && WEXITSTATUS(status) == kExitPass;
}

int runVariants(const char *program, int argc, char **argv,
                const std::vector<Variant> &variants) {
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const Variant &variant : variants)
      std::printf("%s\n", variant.name);
    return kExitPass;
  }
  if (argc < 2 || argc > 3) {
    std::printf("usage: %s <kernels.ptx> [variant]\n       %s --list\n",
                program, program);
    return kExitDriverError;
  }
  std::vector<const Variant *> selected;
  for (const Variant &variant : variants)
    if (argc == 2 || std::strcmp(argv[2], variant.name) == 0)
      selected.push_back(&variant);
  if (selected.empty()) {
    std::printf("ERROR %s: unknown variant '%s'; known:", program, argv[2]);
    for (const Variant &variant : variants)
      std::printf(" %s", variant.name);
    std::printf("\n");
    return kExitDriverError;
  }

  // A faulting variant named on its own runs here; among others, in a
  // process of its own.
  bool alone = selected.size() == 1;
  Session session(argv[1]);
  bool passed = true;
  for (const Variant *variant : selected) {
    if (variant->faults && !alone) {
      passed &= runInChild(argv[0], argv[1], variant->name);
      continue;
    }
    Checker checker(std::string(program) + "/" + variant->name);
    variant->run(session, checker);
    if (variant->faults) {
      checker.expect("fault", 0, false,
                     "the kernel ran without the expected fault");
      finishAfterFault(checker);
    }
    passed &= checker.finish();
    std::fflush(stdout);
  }
  return passed ? kExitPass : kExitMismatch;
}

void finishAfterFault(Checker &checker) {
  bool passed = checker.finish();
  std::fflush(stdout);
  std::_Exit(passed ? kExitPass : kExitMismatch);
}

//===----------------------------------------------------------------------===//
// Numeric helpers
//===----------------------------------------------------------------------===//

float bitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint32_t floatToBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

double FloatFormat::maxFinite() const {
  int allOnes = (1 << exponentBits) - 1;
  if (hasInfinity)
    return std::ldexp(2.0 - std::ldexp(1.0, -mantissaBits),
                      allOnes - 1 - bias());
  // The all-ones exponent is finite except for the all-ones mantissa (NaN).
  double largestMantissa =
      1.0 + std::ldexp((1 << mantissaBits) - 2, -mantissaBits);
  return std::ldexp(largestMantissa, allOnes - bias());
}

double FloatFormat::decode(uint32_t bits) const {
  uint32_t mantissaMask = (1u << mantissaBits) - 1;
  uint32_t exponentMask = (1u << exponentBits) - 1;
  bool negative = (bits >> (exponentBits + mantissaBits)) & 1;
  uint32_t exponent = (bits >> mantissaBits) & exponentMask;
  uint32_t mantissa = bits & mantissaMask;
  double magnitude;
  if (hasInfinity && exponent == exponentMask)
    magnitude = mantissa == 0 ? INFINITY : NAN;
  else if (!hasInfinity && exponent == exponentMask && mantissa == mantissaMask)
    magnitude = NAN;
  else if (exponent == 0)
    magnitude =
        std::ldexp(static_cast<double>(mantissa), 1 - bias() - mantissaBits);
  else
    magnitude = std::ldexp(static_cast<double>(mantissa | (mantissaMask + 1)),
                           static_cast<int>(exponent) - bias() - mantissaBits);
  return negative ? -magnitude : magnitude;
}

uint32_t FloatFormat::nanBits() const {
  uint32_t exponentMask = (1u << exponentBits) - 1;
  uint32_t mantissa =
      hasInfinity ? 1u << (mantissaBits - 1) : (1u << mantissaBits) - 1;
  return (exponentMask << mantissaBits) | mantissa;
}

bool FloatFormat::isNan(uint32_t bits) const {
  return std::isnan(decode(bits));
}

uint32_t FloatFormat::encode(double value) const {
  if (std::isnan(value))
    return nanBits();
  uint32_t sign = std::signbit(value) ? 1u << (exponentBits + mantissaBits) : 0;
  double magnitude = std::fabs(value);
  uint32_t exponentMask = (1u << exponentBits) - 1;
  if (std::isinf(magnitude))
    return hasInfinity ? sign | (exponentMask << mantissaBits) : nanBits();
  if (magnitude == 0)
    return sign;
  int exponent = std::ilogb(magnitude);
  int minExponent = 1 - bias();
  if (exponent < minExponent)
    return sign | static_cast<uint32_t>(
                      std::ldexp(magnitude, mantissaBits - minExponent));
  uint32_t mantissa =
      static_cast<uint32_t>(std::ldexp(magnitude, mantissaBits - exponent)) -
      (1u << mantissaBits);
  return sign | (static_cast<uint32_t>(exponent + bias()) << mantissaBits) |
         mantissa;
}

uint32_t roundToFormat(double value, const FloatFormat &format,
                       Rounding rounding, bool satfinite) {
  if (std::isnan(value))
    return format.nanBits();
  double maxFinite = format.maxFinite();
  bool negative = std::signbit(value);
  if (std::isinf(value))
    return format.encode(satfinite ? (negative ? -maxFinite : maxFinite)
                                   : value);
  if (value == 0)
    return format.encode(value);

  // Scale so that one unit in the last place of the result is 1; the scaled
  // value is exact in double for every input used here (f32 and narrower).
  int exponent = std::max(std::ilogb(value), 1 - format.bias());
  int quantum = exponent - format.mantissaBits;
  double scaled = std::ldexp(value, -quantum);
  double rounded = 0;
  switch (rounding) {
  case Rounding::NearestEven:
    rounded = std::nearbyint(scaled); // the default mode: nearest, ties even
    break;
  case Rounding::TowardZero:
    rounded = std::trunc(scaled);
    break;
  case Rounding::Down:
    rounded = std::floor(scaled);
    break;
  case Rounding::Up:
    rounded = std::ceil(scaled);
    break;
  }
  double result = std::ldexp(rounded, quantum);
  if (result == 0)
    return format.encode(negative ? -0.0 : 0.0);
  if (std::fabs(result) <= maxFinite)
    return format.encode(result);

  // Overflow: IEEE 754 gives Inf or the largest finite value by direction.
  bool toInfinity = false;
  switch (rounding) {
  case Rounding::NearestEven:
    toInfinity = true;
    break;
  case Rounding::TowardZero:
    toInfinity = false;
    break;
  case Rounding::Down:
    toInfinity = negative;
    break;
  case Rounding::Up:
    toInfinity = !negative;
    break;
  }
  if (satfinite || !toInfinity)
    return format.encode(negative ? -maxFinite : maxFinite);
  return format.encode(negative ? -INFINITY : INFINITY);
}

uint32_t Random::next() {
  state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<uint32_t>(state_ >> 33);
}

int32_t Random::uniform(int32_t low, int32_t high) {
  uint32_t span = static_cast<uint32_t>(high - low) + 1;
  return low + static_cast<int32_t>(next() % span);
}

} // namespace emutest
