//===- HostSupport.h - Driver-API boilerplate for the corpus hosts -------===//
//
// What every host program of the emulator's CUDA test corpus shares: driver
// error checks, the context and PTX module, device buffers, launches, the
// element-wise comparison that prints the one-line PASS/FAIL summary, and the
// variant dispatch of `main`.
//
// Every host program is invoked as
//   <program> <kernels.ptx> [variant]   runs one variant, or all of them
//   <program> --list                    prints its variant names
// and exits with one of the ExitCode values.
//
// Only the CUDA driver API (cuda.h) is used; the program is linked against
// the toolkit's stub libcuda.so (SONAME libcuda.so.1), so the driver is the
// first libcuda.so.1 the dynamic loader finds: the emulator when its
// directory is on LD_LIBRARY_PATH.
//
//===----------------------------------------------------------------------===//
#ifndef MOSAIC_EMULATOR_TEST_CUDA_HOSTSUPPORT_H
#define MOSAIC_EMULATOR_TEST_CUDA_HOSTSUPPORT_H

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace emutest {

enum ExitCode : int {
  kExitPass = 0,
  kExitMismatch = 1,
  // A driver call failed, or the program could not run (usage, files).
  kExitDriverError = 2,
};

// Prints "<file>:<line>: <call> failed: <cuGetErrorName>" and exits with
// kExitDriverError unless `result` is CUDA_SUCCESS.
void checkDriver(CUresult result, const char *call, const char *file, int line);

#define EMU_CHECK(call)                                                        \
  ::emutest::checkDriver((call), #call, __FILE__, __LINE__)

// The name of a CUresult ("CUDA_ERROR_INVALID_VALUE").
std::string errorName(CUresult result);

// Prints `message` and exits with kExitDriverError.
[[noreturn]] void fail(const std::string &message);

// Device 0's primary context, current for the lifetime of the session, and
// the PTX module loaded from the program's first argument.
class Session {
public:
  explicit Session(const std::string &ptxPath);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  CUfunction function(const char *name) const;
  CUdevice device() const { return device_; }

private:
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
};

// One cuMemAlloc allocation.
class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t bytes);
  template <class T>
  explicit DeviceBuffer(const std::vector<T> &contents)
      : DeviceBuffer(contents.size() * sizeof(T)) {
    upload(contents.data(), contents.size() * sizeof(T));
  }
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  CUdeviceptr address() const { return address_; }
  // A pointer to the address, as a kernel parameter array takes it.
  void *parameter() { return &address_; }
  size_t bytes() const { return bytes_; }

  void upload(const void *source, size_t bytes);
  void fill(uint8_t byte);
  template <class T> std::vector<T> download() const {
    std::vector<T> result(bytes_ / sizeof(T));
    downloadInto(result.data(), result.size() * sizeof(T));
    return result;
  }

private:
  void downloadInto(void *destination, size_t bytes) const;
  CUdeviceptr address_ = 0;
  size_t bytes_ = 0;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// cuLaunchKernel followed by cuCtxSynchronize.
void launch(CUfunction function, Dim3 grid, Dim3 block,
            unsigned dynamicSharedBytes, std::vector<void *> parameters);

// cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = `cluster`,
// followed by cuCtxSynchronize.
void launchCluster(CUfunction function, Dim3 grid, Dim3 block, Dim3 cluster,
                   unsigned dynamicSharedBytes, std::vector<void *> parameters);

// cuLaunchKernel followed by cuCtxSynchronize, for a kernel expected to
// fault: the first error either returns (the fault's sticky code, from the
// synchronize on a GPU).
CUresult tryLaunch(CUfunction function, Dim3 grid, Dim3 block,
                   unsigned dynamicSharedBytes, std::vector<void *> parameters);

// Opts the function into more than 48 KiB of dynamic shared memory.
void setMaxDynamicSharedBytes(CUfunction function, int bytes);

// A 2-D tiled tensor map, innermost dimension first (cuTensorMapEncodeTiled
// with elementStrides {1, rowElementStride}, no interleave). L2 promotion is
// 128B, the encoding Triton's and CUTLASS's maps use: on an H200 a box that
// crosses the tensor's edge faults with L2_PROMOTION_NONE (README.md).
struct TiledTensor2d {
  CUtensorMapDataType dataType;
  CUdeviceptr address;
  uint64_t cols, rows;
  uint64_t rowStrideBytes;
  uint32_t boxCols, boxRows;
  uint32_t rowElementStride = 1;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  CUtensorMapFloatOOBfill oobFill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  CUtensorMapL2promotion l2Promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
};

// The encoder's verdict, for tests of its argument checks.
CUresult tryEncodeTiled(CUtensorMap &map, const TiledTensor2d &tensor);
// Exits with kExitDriverError when the encoder refuses `tensor`.
CUtensorMap encodeTiled(const TiledTensor2d &tensor);

// Compares values one by one and prints one summary line:
//   PASS <test>: <n> values checked
//   FAIL <test>: <k> of <n> values differ; first: [index] what: got G,
//        expected E; ...
class Checker {
public:
  explicit Checker(std::string test) : test_(std::move(test)) {}

  // Bit-exact integer comparison.
  void equal(const std::string &what, size_t index, int64_t got,
             int64_t expected);
  // Bit-exact comparison of 32-bit floating-point values.
  void equalBits(const std::string &what, size_t index, float got,
                 float expected);
  // |got - expected| <= tolerance; NaN never matches.
  void near(const std::string &what, size_t index, double got, double expected,
            double tolerance);
  // A check with no value to show (a property that must hold).
  void expect(const std::string &what, size_t index, bool holds,
              const std::string &detail = "");

  // Prints the summary line; true when nothing differed.
  bool finish() const;

private:
  void record(bool ok, const std::string &mismatch);

  std::string test_;
  size_t checked_ = 0;
  size_t failed_ = 0;
  std::vector<std::string> firstMismatches_;
};

// A named test case of a host program: runs its kernel(s) and checks every
// output value with the checker, which runVariants names
// "<program>/<variant>" and finishes.
//
// A variant that `faults` expects its kernel to fault, which spoils the
// context as on a GPU: it runs in a process of its own (runVariants starts
// one when it runs every variant) and ends it with finishAfterFault.
struct Variant {
  const char *name;
  std::function<void(Session &, Checker &)> run;
  bool faults = false;
};

// Prints the checker's line and exits with its verdict, skipping every
// destructor: after a fault each driver call fails with the sticky error.
[[noreturn]] void finishAfterFault(Checker &checker);

// The `main` of every host program: parses the arguments, creates the
// session and runs the selected variants.
int runVariants(const char *program, int argc, char **argv,
                const std::vector<Variant> &variants);

//===----------------------------------------------------------------------===//
// Numeric helpers for the references.
//===----------------------------------------------------------------------===//

float bitsToFloat(uint32_t bits);
uint32_t floatToBits(float value);

// A binary floating-point format with an implicit leading one, IEEE-style
// subnormals, and `hasInfinity` deciding whether the all-ones exponent
// encodes Inf/NaN (f16, bf16, e5m2) or, as in e4m3, only the all-ones
// pattern is NaN and the remaining codes of that exponent are finite.
struct FloatFormat {
  int exponentBits;
  int mantissaBits;
  bool hasInfinity;

  int bias() const { return (1 << (exponentBits - 1)) - 1; }
  double maxFinite() const;
  double decode(uint32_t bits) const;
  // The encoding of a value the format represents exactly (or +-Inf).
  uint32_t encode(double value) const;
  uint32_t nanBits() const;
  bool isNan(uint32_t bits) const;
};

constexpr FloatFormat kFloat16{5, 10, true};
constexpr FloatFormat kBFloat16{8, 7, true};
constexpr FloatFormat kE4M3{4, 3, false};
constexpr FloatFormat kE5M2{5, 2, true};

enum class Rounding { NearestEven, TowardZero, Down, Up };

// Rounds `value` to `format` as IEEE 754 does with the given rounding
// direction (overflow to Inf or to the largest finite value by direction);
// with `satfinite`, results beyond the finite range clamp to +-maxFinite.
// Returns the encoding. NaN gives the format's canonical NaN.
uint32_t roundToFormat(double value, const FloatFormat &format,
                       Rounding rounding, bool satfinite = false);

// A small deterministic generator (64-bit LCG) for test data.
class Random {
public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint32_t next();
  // Uniform in [low, high].
  int32_t uniform(int32_t low, int32_t high);

private:
  uint64_t state_;
};

} // namespace emutest

#endif // MOSAIC_EMULATOR_TEST_CUDA_HOSTSUPPORT_H
