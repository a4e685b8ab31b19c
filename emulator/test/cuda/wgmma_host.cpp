//===- wgmma_host.cpp - Host side of wgmma.cu ----------------------------===//
//
// Each variant runs the kernel wgmma_<variant> on random A (64 x K) and B
// (stored N x K) and compares D (64 x N) with a float64 (or exact integer)
// reference computed from the same encoded values. K is 128 bytes of the
// element type: 64 f16/bf16, 32 tf32, 128 8-bit elements.
//
// Floating-point data are chosen so that products and most sums are exact
// (f16/bf16: multiples of 1/64 in [-2, 2]; tf32: multiples of 1/256 in
// [-4, 4]; fp8: any finite code up to 16 in magnitude). The tolerance is
// 1e-3 of the sum of |products| of the element, which also admits the
// reduced-precision accumulation fp8 wgmma is known for; integers are exact.
//
//===----------------------------------------------------------------------===//

#include "HostSupport.h"

#include <cmath>
#include <string>
#include <vector>

using namespace emutest;

namespace {

constexpr uint32_t kM = 64;
constexpr uint32_t kThreads = 128;
constexpr uint32_t kKBytes = 128;
constexpr double kRelativeTolerance = 1e-3;

enum class Element { BF16, F16, TF32, E4M3, E5M2, S8, U8 };

uint32_t elementBytes(Element e) {
  switch (e) {
  case Element::BF16:
  case Element::F16:
    return 2;
  case Element::TF32:
    return 4;
  default:
    return 1;
  }
}

bool isInteger(Element e) { return e == Element::S8 || e == Element::U8; }

double decode(Element e, uint32_t bits) {
  switch (e) {
  case Element::BF16:
    return kBFloat16.decode(bits);
  case Element::F16:
    return kFloat16.decode(bits);
  case Element::TF32:
    return bitsToFloat(bits);
  case Element::E4M3:
    return kE4M3.decode(bits);
  case Element::E5M2:
    return kE5M2.decode(bits);
  case Element::S8:
    return static_cast<int8_t>(bits);
  case Element::U8:
    return static_cast<uint8_t>(bits);
  }
  return 0;
}

uint32_t randomElement(Element e, Random &random) {
  switch (e) {
  case Element::BF16:
    return kBFloat16.encode(random.uniform(-128, 128) / 64.0);
  case Element::F16:
    return kFloat16.encode(random.uniform(-128, 128) / 64.0);
  case Element::TF32:
    return floatToBits(static_cast<float>(random.uniform(-1024, 1024) / 256.0));
  case Element::E4M3:
  case Element::E5M2:
    for (;;) {
      uint32_t bits = random.next() & 0xFF;
      double value = decode(e, bits);
      if (std::isfinite(value) && std::fabs(value) <= 16)
        return bits;
    }
  case Element::S8:
    return static_cast<uint8_t>(random.uniform(-128, 127));
  case Element::U8:
    return static_cast<uint32_t>(random.uniform(0, 255));
  }
  return 0;
}

// A rows x k matrix of encoded elements, row-major, as raw bytes.
struct EncodedMatrix {
  Element element;
  uint32_t rows, cols;
  std::vector<uint32_t> bits;
  std::vector<uint8_t> bytes;

  EncodedMatrix(Element element, uint32_t rows, uint32_t cols, Random &random)
      : element(element), rows(rows), cols(cols), bits(rows * cols),
        bytes(rows * cols * elementBytes(element)) {
    uint32_t size = elementBytes(element);
    for (uint32_t i = 0; i < rows * cols; ++i) {
      bits[i] = randomElement(element, random);
      for (uint32_t byte = 0; byte < size; ++byte)
        bytes[i * size + byte] = static_cast<uint8_t>(bits[i] >> (8 * byte));
    }
  }
  double value(uint32_t row, uint32_t col) const {
    return decode(element, bits[row * cols + col]);
  }
};

// FNV-1a: a per-kernel seed that is the same with every standard library.
uint64_t seedFor(const std::string &name) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : name)
    hash = (hash ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return hash;
}

struct GemmCase {
  Element a, b;
  uint32_t n;
  double scaleA = 1;
};

void runGemm(Session &session, Checker &checker, const std::string &kernel,
             const GemmCase &c) {
  uint32_t k = kKBytes / elementBytes(c.a);
  Random random(seedFor(kernel));
  EncodedMatrix a(c.a, kM, k, random);
  EncodedMatrix b(c.b, c.n, k, random);
  DeviceBuffer aBuffer(a.bytes), bBuffer(b.bytes);
  DeviceBuffer d(kM * c.n * sizeof(uint32_t));
  d.fill(0xFF);

  unsigned sharedBytes = (kM + c.n) * kKBytes;
  launch(session.function(kernel.c_str()), {1}, {kThreads}, sharedBytes,
         {aBuffer.parameter(), bBuffer.parameter(), d.parameter()});

  std::vector<uint32_t> got = d.download<uint32_t>();
  for (uint32_t row = 0; row < kM; ++row) {
    for (uint32_t col = 0; col < c.n; ++col) {
      double sum = 0, magnitude = 0;
      for (uint32_t i = 0; i < k; ++i) {
        double product = a.value(row, i) * b.value(col, i);
        sum += product;
        magnitude += std::fabs(product);
      }
      sum *= c.scaleA;
      uint32_t at = row * c.n + col;
      std::string what =
          "D(" + std::to_string(row) + ", " + std::to_string(col) + ")";
      if (isInteger(c.a))
        checker.equal(what, at, static_cast<int32_t>(got[at]),
                      static_cast<int64_t>(sum));
      else
        checker.near(what, at, bitsToFloat(got[at]), sum,
                     kRelativeTolerance * magnitude);
    }
  }
}

Variant gemmVariant(const char *name, GemmCase c) {
  std::string kernel = std::string("wgmma_") + name;
  return {name, [kernel, c](Session &session, Checker &checker) {
            runGemm(session, checker, kernel, c);
          }};
}

} // namespace

int main(int argc, char **argv) {
  GemmCase bf16{Element::BF16, Element::BF16, 64};
  GemmCase bf16Negated = bf16;
  bf16Negated.scaleA = -1;
  GemmCase bf16N128 = bf16;
  bf16N128.n = 128;
  GemmCase f16{Element::F16, Element::F16, 64};
  GemmCase tf32{Element::TF32, Element::TF32, 64};
  // Variant names are the kernel names without "wgmma_": dtype, then the
  // majorness of A and B (k: K-major, m: M/N-major), then the swizzle.
  return runVariants(
      "wgmma", argc, argv,
      {
          gemmVariant("bf16_kk_none", bf16),
          gemmVariant("bf16_kk_sw32", bf16),
          gemmVariant("bf16_kk_sw64", bf16),
          gemmVariant("bf16_kk_sw128", bf16),
          gemmVariant("bf16_mk_sw128", bf16),
          gemmVariant("bf16_km_sw64", bf16),
          gemmVariant("bf16_mm_sw32", bf16),
          gemmVariant("bf16_mm_none", bf16),
          gemmVariant("bf16_kk_sw64_neg_a", bf16Negated),
          gemmVariant("bf16_n128_kk_sw128", bf16N128),
          gemmVariant("bf16_rega_k_sw128", bf16),
          gemmVariant("bf16_rega_m_sw32", bf16),
          gemmVariant("f16_kk_sw128", f16),
          gemmVariant("f16_mm_sw64", f16),
          gemmVariant("tf32_kk_none", tf32),
          gemmVariant("tf32_kk_sw32", tf32),
          gemmVariant("tf32_kk_sw128", tf32),
          gemmVariant("e4m3_kk_sw128", {Element::E4M3, Element::E4M3, 64}),
          gemmVariant("e5m2_kk_sw64", {Element::E5M2, Element::E5M2, 64}),
          gemmVariant("e4m3_e5m2_kk_none", {Element::E4M3, Element::E5M2, 64}),
          gemmVariant("s8_kk_sw128", {Element::S8, Element::S8, 64}),
          gemmVariant("u8_s8_kk_sw32", {Element::U8, Element::S8, 64}),
      });
}
