//===- approx_tables_host.cpp - Record the .approx instructions ----------===//
//
// Runs each kernel of approx_tables.cu over its fixed inputs and writes the
// results as a table, so that what a GPU's special-function unit returns
// can be kept and the emulator held to it:
//
//   approx_tables_host approx_tables.ptx OUT_DIR
//
// writes OUT_DIR/<instruction>.bin per instruction: `count` little-endian
// f32 results, one per input, in input order. The inputs are fixed here
// (inputsFor): a dense grid over the range where the hardware's
// approximation works (the reduced argument), which pins down a
// table-driven interpolation, plus inputs drawn from a fixed generator over
// the instruction's whole range. The same binary run on the emulator (its
// libcuda.so.1 first on LD_LIBRARY_PATH) writes the emulator's tables;
// compare.py compares two such directories.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kGrid = 1u << 15;
constexpr uint32_t kDrawn = 1u << 15;

uint64_t splitmix(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [low, high), from the top 24 bits of a draw.
float drawn(uint64_t &state, float low, float high) {
  double unit = double(splitmix(state) >> 40) / double(1ull << 24);
  return float(low + (high - low) * unit);
}

struct Instruction {
  const char *kernel;
  // The grid spans [gridLow, gridHigh); draws span [low, high), or, when
  // `logScale`, 2^[low, high).
  float gridLow, gridHigh, low, high;
  bool logScale;
};

const Instruction kInstructions[] = {
    {"ex2_approx_ftz_f32", -1.0f, 1.0f, -126.0f, 127.0f, false},
    {"ex2_approx_f32", -1.0f, 1.0f, -149.0f, 127.0f, false},
    {"rcp_approx_ftz_f32", 1.0f, 2.0f, -125.0f, 125.0f, true},
    {"rsqrt_approx_ftz_f32", 1.0f, 4.0f, -125.0f, 125.0f, true},
    {"sqrt_approx_ftz_f32", 1.0f, 4.0f, -125.0f, 125.0f, true},
    {"lg2_approx_ftz_f32", 1.0f, 2.0f, -125.0f, 125.0f, true},
    {"sin_approx_ftz_f32", -3.14159265f, 3.14159265f, -314.159265f, 314.159265f,
     false},
    {"cos_approx_ftz_f32", -3.14159265f, 3.14159265f, -314.159265f, 314.159265f,
     false},
    {"tanh_approx_f32", -4.0f, 4.0f, -20.0f, 20.0f, false},
};

std::vector<float> inputsFor(const Instruction &instruction, uint32_t index) {
  std::vector<float> inputs;
  inputs.reserve(kGrid + kDrawn);
  for (uint32_t i = 0; i < kGrid; ++i)
    inputs.push_back(instruction.gridLow +
                     (instruction.gridHigh - instruction.gridLow) *
                         (float(i) / float(kGrid)));
  uint64_t state = 0x5EED0000ull + index;
  for (uint32_t i = 0; i < kDrawn; ++i) {
    float value = drawn(state, instruction.low, instruction.high);
    inputs.push_back(instruction.logScale ? std::exp2(value) : value);
  }
  return inputs;
}

bool check(CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return true;
  const char *name = nullptr;
  cuGetErrorName(result, &name);
  std::fprintf(stderr, "approx_tables_host: %s failed: %s\n", what,
               name ? name : "?");
  return false;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s approx_tables.ptx OUT_DIR\n", argv[0]);
    return 2;
  }
  std::FILE *file = std::fopen(argv[1], "rb");
  if (!file) {
    std::fprintf(stderr, "approx_tables_host: cannot read %s\n", argv[1]);
    return 2;
  }
  std::string ptx;
  char chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof(chunk), file)) > 0;)
    ptx.append(chunk, n);
  std::fclose(file);

  CUdevice device;
  CUcontext context;
  CUmodule module;
  if (!check(cuInit(0), "cuInit") ||
      !check(cuDeviceGet(&device, 0), "cuDeviceGet") ||
      !check(cuDevicePrimaryCtxRetain(&context, device),
             "cuDevicePrimaryCtxRetain") ||
      !check(cuCtxSetCurrent(context), "cuCtxSetCurrent") ||
      !check(cuModuleLoadData(&module, ptx.c_str()), "cuModuleLoadData"))
    return 1;
  uint32_t index = 0;
  for (const Instruction &instruction : kInstructions) {
    std::vector<float> inputs = inputsFor(instruction, index++);
    uint32_t count = static_cast<uint32_t>(inputs.size());
    size_t bytes = inputs.size() * sizeof(float);
    CUfunction function;
    CUdeviceptr in, out;
    if (!check(cuModuleGetFunction(&function, module, instruction.kernel),
               instruction.kernel) ||
        !check(cuMemAlloc(&in, bytes), "cuMemAlloc") ||
        !check(cuMemAlloc(&out, bytes), "cuMemAlloc") ||
        !check(cuMemcpyHtoD(in, inputs.data(), bytes), "cuMemcpyHtoD"))
      return 1;
    void *parameters[] = {&in, &out, &count};
    std::vector<float> results(inputs.size());
    if (!check(cuLaunchKernel(function, (count + 255) / 256, 1, 1, 256, 1, 1, 0,
                              nullptr, parameters, nullptr),
               "cuLaunchKernel") ||
        !check(cuCtxSynchronize(), instruction.kernel) ||
        !check(cuMemcpyDtoH(results.data(), out, bytes), "cuMemcpyDtoH"))
      return 1;
    cuMemFree(in);
    cuMemFree(out);
    std::string path = std::string(argv[2]) + "/" + instruction.kernel + ".bin";
    std::FILE *table = std::fopen(path.c_str(), "wb");
    if (!table || std::fwrite(results.data(), 1, bytes, table) != bytes) {
      std::fprintf(stderr, "approx_tables_host: cannot write %s\n",
                   path.c_str());
      return 1;
    }
    std::fclose(table);
    std::printf("%s: %u results -> %s\n", instruction.kernel, count,
                path.c_str());
  }
  return 0;
}
