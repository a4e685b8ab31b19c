//===- tma_edge_host.cpp - Which tensor copies across the edge fault -----===//
//
// The bisection of the TMA edge fault (docs/RationaleEmulator.md, "Tensor
// copies across the tensor's edge"): every combination of instruction form,
// element type, L2 promotion, swizzle, out-of-bounds fill and box origin
// below runs as its own process (a fault spoils the process's context), a
// few at a time, and prints one line: the CUDA error at synchronize, `ok`
// when the copy ran and every element is right, or `WRONG`. Then it says
// how well each candidate rule explains the faults.
//
//   tma_edge_host tma_edge.ptx [--jobs N] [--expect-rule NAME]
//                 [--junit PATH] [--verbose]
//
// The program uses the driver API only and links against the toolkit's
// stub libcuda.so, so the same binary runs on a GPU and on the emulator
// (its libcuda.so.1 first on LD_LIBRARY_PATH). With --expect-rule it exits
// 1 unless that rule explains every case and no data is wrong: the ctest
// holds the emulator to the rule it models that way (--junit writes that
// verdict as one JUnit test case). --verbose keeps the cases' stderr.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <map>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

enum class Copy { LoadCluster, LoadCta, Store, ReduceAdd };
const char *copyName(Copy copy) {
  switch (copy) {
  case Copy::LoadCluster:
    return "load.shared::cluster";
  case Copy::LoadCta:
    return "load.shared::cta";
  case Copy::Store:
    return "store";
  case Copy::ReduceAdd:
    return "reduce.add";
  }
  return "?";
}

// The tensor: rows of 256 bytes (the pitch), `cols` elements used; the box
// is 64 rows of 128 bytes (one 128B swizzle span).
constexpr int32_t kRows = 72;
constexpr uint32_t kPitchBytes = 256;
constexpr uint32_t kBoxRows = 64;
constexpr uint32_t kBoxRowBytes = 128;

struct Origin {
  const char *name;
  // In 16-byte units of the innermost dimension (x), and rows (y); an
  // unaligned origin adds `extra` elements to x.
  int32_t x16, extra, y;
};

const Origin kOrigins[] = {
    {"inside", 1, 0, 4},      {"inside_unaligned", 0, 3, 4},
    {"far_both", 5, 0, 40},   {"far_both_unaligned", 5, 2, 40},
    {"far_x", 5, 0, 4},       {"far_y", 1, 0, 40},
    {"negative_x", -1, 0, 4}, {"negative_x_unaligned", 0, -5, 4},
    {"negative_y", 1, 0, -5}, {"negative_both", -1, 0, -5},
};

struct Case {
  Copy copy;
  bool f32;
  unsigned l2; // CUtensorMapL2promotion
  bool swizzle;
  bool nanFill;
  Origin origin;

  uint32_t elementBytes() const { return f32 ? 4 : 2; }
  // Elements in a tensor row: 200 bytes of the 256-byte pitch.
  int32_t cols() const { return 200 / elementBytes(); }
  uint32_t boxCols() const { return kBoxRowBytes / elementBytes(); }
  int32_t x() const {
    return origin.x16 * int32_t(16 / elementBytes()) + origin.extra;
  }
  int32_t y() const { return origin.y; }
  bool crossesEdge() const {
    return x() < 0 || x() + int32_t(boxCols()) > cols() || y() < 0 ||
           y() + int32_t(kBoxRows) > kRows;
  }
  bool innerAligned() const {
    return (x() * int32_t(elementBytes())) % 16 == 0;
  }
  bool isLoad() const {
    return copy == Copy::LoadCluster || copy == Copy::LoadCta;
  }
  std::string describe() const {
    static const char *l2Names[] = {"none", "64B", "128B", "256B"};
    char text[200];
    std::snprintf(text, sizeof(text),
                  "%-20s %-4s l2=%-4s swizzle=%-4s fill=%-4s %-22s (%4d,%4d)",
                  copyName(copy), f32 ? "f32" : "bf16", l2Names[l2],
                  swizzle ? "128B" : "none", nanFill ? "nan" : "zero",
                  origin.name, x(), y());
    return text;
  }
};

std::vector<Case> allCases() {
  std::vector<Case> cases;
  // Every form, promotion, swizzle and origin for bf16 with zero fill...
  for (Copy copy :
       {Copy::LoadCluster, Copy::LoadCta, Copy::Store, Copy::ReduceAdd})
    for (unsigned l2 = 0; l2 < 4; ++l2)
      for (bool swizzle : {false, true})
        for (const Origin &origin : kOrigins)
          cases.push_back({copy, false, l2, swizzle, false, origin});
  // ...then NaN fill and f32, with and without promotion.
  for (unsigned l2 : {0u, 2u})
    for (const Origin &origin : kOrigins) {
      cases.push_back({Copy::LoadCluster, false, l2, false, true, origin});
      cases.push_back({Copy::LoadCluster, true, l2, false, false, origin});
      cases.push_back({Copy::Store, true, l2, false, false, origin});
    }
  return cases;
}

const char *errorName(CUresult result) {
  const char *name = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    return "CUDA_ERROR_?";
  return name;
}

// --- One case, in a process of its own ------------------------------------

// Exact in bf16 and f32: small integers.
float tensorValue(int32_t col, int32_t row) {
  return float(1 + (row * 7 + col) % 251);
}
float boxValue(uint32_t index) { return -float(1 + index % 120); }

void putElement(std::vector<uint8_t> &bytes, size_t at, float value, bool f32) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (f32)
    std::memcpy(&bytes[at], &bits, 4);
  else {
    uint16_t half = uint16_t(bits >> 16); // exact: small integers
    std::memcpy(&bytes[at], &half, 2);
  }
}

float getElement(const std::vector<uint8_t> &bytes, size_t at, bool f32) {
  uint32_t bits = 0;
  if (f32)
    std::memcpy(&bits, &bytes[at], 4);
  else {
    uint16_t half;
    std::memcpy(&half, &bytes[at], 2);
    bits = uint32_t(half) << 16;
  }
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

// Where box element (col, row) sits in shared memory (128B swizzle: the
// 16-byte chunk index XOR the row within 8).
size_t sharedOffset(const Case &c, uint32_t col, uint32_t row) {
  size_t offset = row * kBoxRowBytes + col * c.elementBytes();
  if (c.swizzle)
    offset ^= (offset >> 3) & 0x70;
  return offset;
}

#define TRY(call)                                                              \
  do {                                                                         \
    CUresult result_ = (call);                                                 \
    if (result_ != CUDA_SUCCESS) {                                             \
      std::printf("%s\n", errorName(result_));                                 \
      return 0;                                                                \
    }                                                                          \
  } while (false)

// Prints the case's verdict on stdout.
int runOne(const char *ptxPath, const Case &c) {
  std::FILE *file = std::fopen(ptxPath, "rb");
  if (!file) {
    std::printf("cannot read %s\n", ptxPath);
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
  CUfunction function;
  TRY(cuInit(0));
  TRY(cuDeviceGet(&device, 0));
  TRY(cuDevicePrimaryCtxRetain(&context, device));
  TRY(cuCtxSetCurrent(context));
  TRY(cuModuleLoadData(&module, ptx.c_str()));
  const char *kernel = c.copy == Copy::LoadCluster ? "load_cluster"
                       : c.copy == Copy::LoadCta   ? "load_cta"
                                                   : "store";
  TRY(cuModuleGetFunction(&function, module, kernel));
  uint32_t bytes = kBoxRows * kBoxRowBytes;
  TRY(cuFuncSetAttribute(
      function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes)));

  // The tensor, with -1 in the pitch padding, which nothing may touch.
  bool f32 = c.f32;
  size_t tensorBytes = size_t(kRows) * kPitchBytes;
  std::vector<uint8_t> tensor(tensorBytes);
  for (int32_t row = 0; row < kRows; ++row)
    for (uint32_t col = 0; col < kPitchBytes / c.elementBytes(); ++col)
      putElement(tensor, row * kPitchBytes + col * c.elementBytes(),
                 int32_t(col) < c.cols() ? tensorValue(col, row) : -1.0f, f32);
  CUdeviceptr global, staging;
  TRY(cuMemAlloc(&global, tensorBytes));
  TRY(cuMemcpyHtoD(global, tensor.data(), tensorBytes));
  TRY(cuMemAlloc(&staging, bytes));

  CUtensorMap map;
  cuuint64_t dims[2] = {cuuint64_t(c.cols()), cuuint64_t(kRows)};
  cuuint64_t strides[1] = {kPitchBytes};
  cuuint32_t box[2] = {c.boxCols(), kBoxRows};
  cuuint32_t elementStrides[2] = {1, 1};
  TRY(cuTensorMapEncodeTiled(
      &map,
      f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
      2, reinterpret_cast<void *>(global), dims, strides, box, elementStrides,
      CU_TENSOR_MAP_INTERLEAVE_NONE,
      c.swizzle ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
      static_cast<CUtensorMapL2promotion>(c.l2),
      c.nanFill ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));

  int32_t x = c.x(), y = c.y();
  auto inside = [&](int32_t col, int32_t row) {
    return col >= 0 && col < c.cols() && row >= 0 && row < kRows;
  };
  std::vector<uint8_t> staged(bytes);
  uint32_t reduce = c.copy == Copy::ReduceAdd;
  if (!c.isLoad()) {
    for (uint32_t row = 0; row < kBoxRows; ++row)
      for (uint32_t col = 0; col < c.boxCols(); ++col)
        putElement(staged, sharedOffset(c, col, row),
                   boxValue(row * c.boxCols() + col), f32);
    TRY(cuMemcpyHtoD(staging, staged.data(), bytes));
  }
  void *loadParameters[] = {&map, &x, &y, &bytes, &staging};
  void *storeParameters[] = {&map, &x, &y, &bytes, &staging, &reduce};
  TRY(cuLaunchKernel(function, 1, 1, 1, 128, 1, 1, bytes, nullptr,
                     c.isLoad() ? loadParameters : storeParameters, nullptr));
  TRY(cuCtxSynchronize());

  size_t wrong = 0, checked = 0;
  if (c.isLoad()) {
    TRY(cuMemcpyDtoH(staged.data(), staging, bytes));
    for (uint32_t row = 0; row < kBoxRows; ++row)
      for (uint32_t col = 0; col < c.boxCols(); ++col) {
        float got = getElement(staged, sharedOffset(c, col, row), f32);
        int32_t gc = x + int32_t(col), gr = y + int32_t(row);
        bool right = inside(gc, gr) ? got == tensorValue(gc, gr)
                     : c.nanFill    ? std::isnan(got)
                                    : got == 0.0f && !std::signbit(got);
        wrong += !right;
        ++checked;
      }
  } else {
    std::vector<uint8_t> after(tensorBytes);
    TRY(cuMemcpyDtoH(after.data(), global, tensorBytes));
    for (int32_t row = 0; row < kRows; ++row)
      for (uint32_t col = 0; col < kPitchBytes / c.elementBytes(); ++col) {
        size_t at = row * kPitchBytes + col * c.elementBytes();
        float expected = getElement(tensor, at, f32);
        int32_t bc = int32_t(col) - x, br = row - y;
        if (inside(int32_t(col), row) && bc >= 0 && bc < int32_t(c.boxCols()) &&
            br >= 0 && br < int32_t(kBoxRows)) {
          float value = boxValue(br * c.boxCols() + bc);
          expected = reduce ? expected + value : value;
        }
        wrong += getElement(after, at, f32) != expected;
        ++checked;
      }
  }
  if (wrong)
    std::printf("WRONG (%zu of %zu elements)\n", wrong, checked);
  else
    std::printf("ok\n");
  return 0;
}

// --- The bisection ----------------------------------------------------------

struct Running {
  size_t index;
  int output; // read end of the child's stdout
};

std::string readAll(int fd) {
  std::string text;
  char chunk[512];
  for (ssize_t n; (n = read(fd, chunk, sizeof(chunk))) > 0;)
    text.append(chunk, size_t(n));
  close(fd);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.pop_back();
  return text;
}

struct Rule {
  const char *name;
  const char *text;
  std::function<bool(const Case &)> faults;
};

const std::vector<Rule> &rules() {
  static const std::vector<Rule> all = {
      {"l2-none", "crosses the edge and L2 promotion is NONE",
       [](const Case &c) { return c.crossesEdge() && c.l2 == 0; }},
      {"unaligned", "innermost origin not a multiple of 16 bytes",
       [](const Case &c) { return !c.innerAligned(); }},
      {"crossing-unaligned",
       "crosses the edge and innermost origin not 16-byte aligned",
       [](const Case &c) { return c.crossesEdge() && !c.innerAligned(); }},
      {"crossing-unswizzled", "crosses the edge and swizzle is NONE",
       [](const Case &c) { return c.crossesEdge() && !c.swizzle; }},
      {"crossing", "crosses the edge",
       [](const Case &c) { return c.crossesEdge(); }},
      {"never", "no copy faults", [](const Case &) { return false; }},
  };
  return all;
}

void writeJunit(const std::string &path, const std::string &rule, bool passed,
                const std::string &summary) {
  std::FILE *file = std::fopen(path.c_str(), "w");
  if (!file)
    return;
  std::fprintf(file,
               "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<testsuites><testsuite name=\"tma-edge\" tests=\"1\">\n"
               "<testcase classname=\"tma-edge\" name=\"rule %s\">",
               rule.c_str());
  if (!passed)
    std::fprintf(file, "<failure message=\"%s\"/>", summary.c_str());
  std::fprintf(file, "</testcase></testsuite></testsuites>\n");
  std::fclose(file);
}

int bisect(const char *self, const char *ptx, unsigned jobs,
           const std::string &expectedRule, const std::string &junit,
           bool verbose) {
  auto start = std::chrono::steady_clock::now();
  std::vector<Case> cases = allCases();
  std::vector<std::string> verdicts(cases.size());
  std::map<pid_t, Running> running;
  size_t next = 0;
  while (next < cases.size() || !running.empty()) {
    while (next < cases.size() && running.size() < jobs) {
      int pipeEnds[2];
      if (pipe(pipeEnds) != 0) {
        std::perror("pipe");
        return 2;
      }
      std::fflush(stdout);
      pid_t child = fork();
      if (child < 0) {
        std::perror("fork");
        return 2;
      }
      if (child == 0) {
        dup2(pipeEnds[1], 1);
        if (!verbose) {
          int null = open("/dev/null", O_WRONLY);
          dup2(null, 2);
        }
        close(pipeEnds[0]);
        std::string index = std::to_string(next);
        execl("/proc/self/exe", self, ptx, "--one", index.c_str(), nullptr);
        std::_Exit(2);
      }
      close(pipeEnds[1]);
      running[child] = {next, pipeEnds[0]};
      ++next;
    }
    int status = 0;
    pid_t done = waitpid(-1, &status, 0);
    auto it = running.find(done);
    if (it == running.end())
      continue;
    std::string verdict = readAll(it->second.output);
    if (WIFSIGNALED(status))
      verdict = WTERMSIG(status) == SIGALRM
                    ? "TIMEOUT (no completion in 20 s)"
                    : "killed by signal " + std::to_string(WTERMSIG(status));
    else if (verdict.empty())
      verdict = "no verdict (exit " + std::to_string(WEXITSTATUS(status)) + ")";
    verdicts[it->second.index] = verdict;
    running.erase(it);
  }

  size_t faults = 0, wrong = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case &c = cases[i];
    std::printf("%s %-8s %-10s -> %s\n", c.describe().c_str(),
                c.crossesEdge() ? "crosses" : "inside",
                c.innerAligned() ? "16B-origin" : "unaligned",
                verdicts[i].c_str());
    faults += verdicts[i].rfind("CUDA_ERROR", 0) == 0;
    wrong += verdicts[i].rfind("WRONG", 0) == 0 ||
             verdicts[i].rfind("TIMEOUT", 0) == 0;
  }
  std::printf("\n%zu cases: %zu faulted, %zu ran with wrong data or hung, %zu "
              "ran correctly\n",
              cases.size(), faults, wrong, cases.size() - faults - wrong);
  bool expectationMet = expectedRule.empty();
  std::string summary;
  for (const Rule &rule : rules()) {
    size_t agree = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      bool faulted = verdicts[i].rfind("CUDA_ERROR", 0) == 0;
      agree += faulted == rule.faults(cases[i]);
    }
    std::printf("rule %-20s faults iff the box %-60s: agrees with %zu of %zu\n",
                rule.name, rule.text, agree, cases.size());
    if (rule.name == expectedRule) {
      expectationMet = agree == cases.size() && wrong == 0;
      summary = "rule " + expectedRule + " agrees with " +
                std::to_string(agree) + " of " + std::to_string(cases.size()) +
                " cases; " + std::to_string(wrong) + " wrong or hung";
    }
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("%.1f s with %u jobs\n", seconds, jobs);
  if (!junit.empty())
    writeJunit(junit, expectedRule, expectationMet, summary);
  if (!expectationMet) {
    std::printf("FAIL: rule %s does not explain every case\n",
                expectedRule.c_str());
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s tma_edge.ptx [--jobs N] [--expect-rule NAME] "
                 "[--verbose]\n",
                 argv[0]);
    return 2;
  }
  const char *ptx = argv[1];
  if (argc == 4 && std::strcmp(argv[2], "--one") == 0) {
    std::vector<Case> cases = allCases();
    size_t index = std::strtoul(argv[3], nullptr, 10);
    if (index >= cases.size())
      return 2;
    alarm(20); // a copy that never completes would hang on its mbarrier
    return runOne(ptx, cases[index]);
  }
  unsigned jobs = 8;
  std::string expectedRule, junit;
  bool verbose = false;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--jobs" && i + 1 < argc)
      jobs = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--expect-rule" && i + 1 < argc)
      expectedRule = argv[++i];
    else if (arg == "--junit" && i + 1 < argc)
      junit = argv[++i];
    else if (arg == "--verbose")
      verbose = true;
    else {
      std::fprintf(stderr, "%s: unknown argument `%s`\n", argv[0], arg.c_str());
      return 2;
    }
  }
  bool known = expectedRule.empty();
  for (const Rule &rule : rules())
    known |= rule.name == expectedRule;
  if (!known) {
    std::fprintf(stderr, "%s: no rule named `%s`\n", argv[0],
                 expectedRule.c_str());
    return 2;
  }
  return bisect(argv[0], ptx, jobs, expectedRule, junit, verbose);
}
