//===- ExecuteTest.cpp - Small kernels against host C++
//---------------------===//
//
// Each kernel computes something small per thread; the test computes the
// same on the host, from the PTX ISA's definition of each instruction, and
// compares element by element. Then control flow (divergence, a loop whose
// latch comes before its body), warp shuffles, the errors a kernel can make
// (a diverged warp at a `.sync.aligned` instruction, a bad address, a
// deadlock), and the promise that the async policy and the warp schedule
// do not change a race-free kernel's results.
//
//===----------------------------------------------------------------------===//

#include "TestKernels.h"

#include "mosaic/Emulator/Numerics.h"

#include <gtest/gtest.h>

#include <array>
#include <climits>
#include <cmath>
#include <limits>
#include <vector>

namespace mosaic::emulator {
namespace {

using test::allocate;
using test::DeviceBuffer;
using test::Kernel;
using test::namesLine;
using test::ptxModule;
using test::testOptions;

uint32_t bits(float value) { return floatToBits(value); }

// --- Integer arithmetic ------------------------------------------------------

struct IntegerCase {
  int32_t a, b, c;
};

/// bfe from the PTX ISA pseudocode (32-bit).
uint32_t bfe(uint32_t a, uint32_t position, uint32_t length, bool isSigned) {
  const uint32_t msb = 31;
  uint32_t pos = position & 0xff, len = length & 0xff;
  uint32_t sbit = 0;
  if (isSigned) // the tests use len >= 1, so pos + len - 1 does not wrap
    sbit = (a >> std::min<uint64_t>(uint64_t(pos) + len - 1, msb)) & 1;
  uint32_t d = 0;
  for (uint32_t i = 0; i <= msb; ++i) {
    uint32_t bit = (i < len && pos + i <= msb) ? (a >> (pos + i)) & 1 : sbit;
    d |= bit << i;
  }
  return d;
}

/// bfi from the PTX ISA pseudocode (32-bit).
uint32_t bfi(uint32_t a, uint32_t b, uint32_t position, uint32_t length) {
  uint32_t pos = position & 0xff, len = length & 0xff;
  uint32_t f = b;
  for (uint32_t i = 0; i < len && pos + i <= 31; ++i)
    f = (f & ~(1u << (pos + i))) | (((a >> i) & 1) << (pos + i));
  return f;
}

/// prmt in the default mode: byte i of d is byte (c >> 4i) & 7 of {b, a},
/// or that byte's sign replicated when bit 3 of the nibble is set.
uint32_t prmt(uint32_t a, uint32_t b, uint32_t selector) {
  uint64_t bytes = uint64_t(a) | (uint64_t(b) << 32);
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    uint32_t nibble = (selector >> (4 * i)) & 0xf;
    uint32_t byte = (bytes >> (8 * (nibble & 7))) & 0xff;
    if (nibble & 8)
      byte = (byte & 0x80) ? 0xff : 0;
    d |= byte << (8 * i);
  }
  return d;
}

std::vector<uint32_t> integerReference(const IntegerCase &v) {
  uint32_t ua = static_cast<uint32_t>(v.a), ub = static_cast<uint32_t>(v.b),
           uc = static_cast<uint32_t>(v.c);
  int64_t wide = int64_t(v.a) * int64_t(v.b);
  uint64_t uwide = uint64_t(ua) * uint64_t(ub);
  std::vector<uint32_t> r(test::kIntegerResults);
  r[0] = ua + ub;
  r[1] = ua - ub;
  r[2] = static_cast<uint32_t>(static_cast<uint64_t>(wide));
  r[3] = static_cast<uint32_t>(static_cast<uint64_t>(wide) >> 32);
  r[4] = static_cast<uint32_t>(wide);
  r[5] = static_cast<uint32_t>(static_cast<uint64_t>(wide >> 32));
  r[6] = static_cast<uint32_t>(uwide >> 32);
  r[7] = static_cast<uint32_t>(wide) + uc;
  r[8] = static_cast<uint32_t>(static_cast<uint64_t>(wide >> 32)) + uc;
  r[9] = static_cast<uint32_t>(v.a / v.b); // C++ truncates, as div.s32
  r[10] = static_cast<uint32_t>(v.a % v.b);
  r[11] = ua / ub;
  r[12] = ua % ub;
  // Shift amounts above 32 clamp to 32 (PTX ISA, shl/shr).
  r[13] = uc >= 32 ? 0 : ua << uc;
  r[14] = static_cast<uint32_t>(uc >= 32 ? v.a >> 31 : v.a >> uc);
  r[15] = uc >= 32 ? 0 : ua >> uc;
  r[16] = bfe(ua, uc, 12, false);
  r[17] = bfe(ua, uc, 8, true);
  r[18] = bfi(ua, ub, uc, 12);
  r[19] = prmt(ua, ub, 0xB3E1);
  r[20] = (ua & ub) ^ uc; // lop3 with immLut 0x6A = (0xF0 & 0xCC) ^ 0xAA
  r[21] = static_cast<uint32_t>(__builtin_popcount(ua));
  r[22] = ua == 0 ? 32 : static_cast<uint32_t>(__builtin_clz(ua));
  uint32_t reversed = 0;
  for (int i = 0; i < 32; ++i)
    reversed |= ((ua >> i) & 1) << (31 - i);
  r[23] = reversed;
  return r;
}

TEST(ExecuteTest, IntegerOperationsMatchTheIsa) {
  const std::vector<IntegerCase> cases = {
      {7, 3, 5},
      {-7, 2, 33},
      {INT32_MIN, 3, 31},
      {0x12345678, static_cast<int32_t>(0x9abcdef0u), 4},
      {-1, 7, 0},
      {1000000, -3000, 40},
      {static_cast<int32_t>(0x80000001u), 16, 64},
      {5, -2, 12},
      {0, -5, 28},
      {0x00F0000F, 0x0FF00000, 20},
  };
  const char *names[test::kIntegerResults] = {
      "add.s32",    "sub.s32",    "mul.wide.s32 lo", "mul.wide.s32 hi",
      "mul.lo.s32", "mul.hi.s32", "mul.hi.u32",      "mad.lo.s32",
      "mad.hi.s32", "div.s32",    "rem.s32",         "div.u32",
      "rem.u32",    "shl.b32",    "shr.s32",         "shr.u32",
      "bfe.u32",    "bfe.s32",    "bfi.b32",         "prmt.b32",
      "lop3.b32",   "popc.b32",   "clz.b32",         "brev.b32"};
  Kernel kernel(ptxModule(test::kIntegerOpsKernel), "integer_ops");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer in = allocate(memory, cases.size() * 12);
  DeviceBuffer out = allocate(memory, cases.size() * 96);
  for (size_t i = 0; i < cases.size(); ++i) {
    in.as<int32_t>()[3 * i] = cases[i].a;
    in.as<int32_t>()[3 * i + 1] = cases[i].b;
    in.as<int32_t>()[3 * i + 2] = cases[i].c;
  }
  LaunchReport report = kernel.launch(
      static_cast<uint32_t>(cases.size()),
      kernel.parameters().set("in", in.address).set("out", out.address), memory,
      testOptions());
  ASSERT_TRUE(report.ok) << report.message;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<uint32_t> expected = integerReference(cases[i]);
    for (unsigned k = 0; k < test::kIntegerResults; ++k)
      EXPECT_EQ(out.as<uint32_t>()[test::kIntegerResults * i + k], expected[k])
          << names[k] << " of a = " << cases[i].a << ", b = " << cases[i].b
          << ", c = " << cases[i].c;
  }
  // A few by hand, so the reference itself is checked.
  EXPECT_EQ(out.as<int32_t>()[test::kIntegerResults * 1 + 9], -3); // -7/2
  EXPECT_EQ(out.as<int32_t>()[test::kIntegerResults * 1 + 10], -1);
  EXPECT_EQ(out.as<int32_t>()[test::kIntegerResults * 1 + 14], -1); // >>33
  EXPECT_EQ(out.as<int32_t>()[test::kIntegerResults * 2 + 8], -2 + 31);
  EXPECT_EQ(out.as<uint32_t>()[test::kIntegerResults * 8 + 22], 32u);
}

// --- Extended-precision arithmetic (carry chains) ---------------------------

// 64-bit sums, differences and multiply-adds from 32-bit halves through the
// carry flag, and a 96-bit sum through addc.cc: what libdevice's sin and cos
// compile to (their argument reduction).
const char *const kCarryKernel = R"PTX(
.visible .entry carries(.param .u64 in, .param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b32 %a<3>, %b<3>, %t, %r<11>;
  .reg .b64 %rd<4>;
  mov.u32 %t, %tid.x;
  ld.param.u64 %rd0, [in];
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %t, 24;
  add.s64 %rd2, %rd0, %rd2;
  ld.global.u32 %a0, [%rd2];
  ld.global.u32 %a1, [%rd2+4];
  ld.global.u32 %a2, [%rd2+8];
  ld.global.u32 %b0, [%rd2+12];
  ld.global.u32 %b1, [%rd2+16];
  ld.global.u32 %b2, [%rd2+20];
  mul.wide.u32 %rd3, %t, 44;
  add.s64 %rd3, %rd1, %rd3;
  add.cc.u32 %r0, %a0, %b0;
  addc.u32 %r1, %a1, %b1;
  sub.cc.u32 %r2, %a0, %b0;
  subc.u32 %r3, %a1, %b1;
  mad.lo.cc.u32 %r4, %a0, %b0, %b1;
  madc.hi.u32 %r5, %a0, %b0, %a2;
  add.cc.u32 %r6, %a0, %b0;
  addc.cc.u32 %r7, %a1, %b1;
  addc.u32 %r8, %a2, %b2;
  sub.cc.u32 %r9, %a0, %b0;
  subc.cc.u32 %r10, %a1, %b1;
  st.global.u32 [%rd3], %r0;
  st.global.u32 [%rd3+4], %r1;
  st.global.u32 [%rd3+8], %r2;
  st.global.u32 [%rd3+12], %r3;
  st.global.u32 [%rd3+16], %r4;
  st.global.u32 [%rd3+20], %r5;
  st.global.u32 [%rd3+24], %r6;
  st.global.u32 [%rd3+28], %r7;
  st.global.u32 [%rd3+32], %r8;
  st.global.u32 [%rd3+36], %r9;
  st.global.u32 [%rd3+40], %r10;
  ret;
}
)PTX";

TEST(ExecuteTest, CarryChainsMatchWideArithmetic) {
  // a0..a2 and b0..b2: the 32-bit words of 96-bit a and b, low first.
  const std::vector<std::array<uint32_t, 6>> cases = {
      {1, 2, 3, 4, 5, 6},
      {0xffffffffu, 0, 0, 1, 0, 0},
      {0xffffffffu, 0xffffffffu, 7, 1, 0, 1},
      {0, 5, 0, 1, 3, 0},
      {0x80000000u, 0x12345678u, 0xffffffffu, 0x80000000u, 0x9abcdef0u, 1},
      {0xdeadbeefu, 0xffffffffu, 0, 0xffffffffu, 0xffffffffu, 0},
  };
  Kernel kernel(ptxModule(kCarryKernel), "carries");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer in = allocate(memory, cases.size() * 24);
  DeviceBuffer out = allocate(memory, cases.size() * 44);
  for (size_t i = 0; i < cases.size(); ++i)
    for (size_t k = 0; k < 6; ++k)
      in.as<uint32_t>()[6 * i + k] = cases[i][k];
  LaunchReport report = kernel.launch(
      static_cast<uint32_t>(cases.size()),
      kernel.parameters().set("in", in.address).set("out", out.address), memory,
      testOptions());
  ASSERT_TRUE(report.ok) << report.message;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto &[a0, a1, a2, b0, b1, b2] = cases[i];
    uint64_t a = uint64_t(a1) << 32 | a0, b = uint64_t(b1) << 32 | b0;
    const uint32_t *r = out.as<uint32_t>() + 11 * i;
    auto word = [](uint64_t value, int k) { return uint32_t(value >> 32 * k); };
    EXPECT_EQ(uint64_t(r[1]) << 32 | r[0], a + b) << "case " << i;
    EXPECT_EQ(uint64_t(r[3]) << 32 | r[2], a - b) << "case " << i;
    // a0 * b0 + (a2:b1), as mad.lo.cc then madc.hi.
    uint64_t product = uint64_t(a0) * b0 + (uint64_t(a2) << 32 | b1);
    EXPECT_EQ(r[4], word(product, 0)) << "case " << i;
    EXPECT_EQ(r[5], word(product, 1)) << "case " << i;
    unsigned __int128 wideA = (unsigned __int128)a2 << 64 | a,
                      wideB = (unsigned __int128)b2 << 64 | b,
                      sum = wideA + wideB;
    EXPECT_EQ(r[6], uint32_t(sum)) << "case " << i;
    EXPECT_EQ(r[7], uint32_t(sum >> 32)) << "case " << i;
    EXPECT_EQ(r[8], uint32_t(sum >> 64)) << "case " << i;
    EXPECT_EQ(uint64_t(r[10]) << 32 | r[9], a - b) << "case " << i;
  }
  // By hand: 0xffffffff + 1 carries into the high word.
  EXPECT_EQ(out.as<uint32_t>()[11 * 1 + 1], 1u);
  // 0 - 1 borrows from it: 0x00000005'00000000 - 0x00000003'00000001.
  EXPECT_EQ(out.as<uint32_t>()[11 * 3 + 3], 1u);
}

// --- Comparisons and selects
// ---------------------------------------------------

TEST(ExecuteTest, FloatComparisonsTreatNanAsUnordered) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::pair<float, float>> cases = {
      {1, 2},     {2, 1},        {1, 1},      {nan, 1},  {1, nan},
      {nan, nan}, {-0.0f, 0.0f}, {-inf, inf}, {inf, inf}};
  Kernel kernel(ptxModule(test::kCompareKernel), "compare_ops");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer in = allocate(memory, cases.size() * 8);
  DeviceBuffer out = allocate(memory, cases.size() * 64);
  for (size_t i = 0; i < cases.size(); ++i) {
    in.as<float>()[2 * i] = cases[i].first;
    in.as<float>()[2 * i + 1] = cases[i].second;
  }
  LaunchReport report = kernel.launch(
      static_cast<uint32_t>(cases.size()),
      kernel.parameters().set("in", in.address).set("out", out.address), memory,
      testOptions());
  ASSERT_TRUE(report.ok) << report.message;
  const char *names[14] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",  "equ",
                           "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
  for (size_t i = 0; i < cases.size(); ++i) {
    float x = cases[i].first, y = cases[i].second;
    bool u = std::isnan(x) || std::isnan(y);
    // Ordered compares are false on NaN; the `u` forms are true.
    bool expected[14] = {!u && x == y, !u && x != y,
                         !u && x < y,  !u && x <= y,
                         !u && x > y,  !u && x >= y,
                         u || x == y,  u || x != y,
                         u || x < y,   u || x <= y,
                         u || x > y,   u || x >= y,
                         !u,           u};
    const uint32_t *row = out.as<uint32_t>() + test::kCompareResults * i;
    for (int k = 0; k < 14; ++k)
      EXPECT_EQ(row[k], expected[k] ? 1u : 0u)
          << "setp." << names[k] << ".f32 " << x << ", " << y;
    float selected = (!u && x < y) ? x : y;
    EXPECT_EQ(row[14], bits(selected)) << "selp.f32 on " << x << ", " << y;
    EXPECT_EQ(static_cast<int32_t>(row[15]), u ? -1 : 7)
        << "selp.s32 on " << x << ", " << y;
  }
}

// --- Conversions
// ------------------------------------------------------------------

/// cvt.rXi.{s32,u32,s16}.f32: round to an integer in the mode, then clamp
/// to the destination's range; NaN converts to 0 (PTX ISA, cvt: "saturate
/// integer destinations").
int64_t floatToInteger(float value, int mode, int64_t lo, int64_t hi) {
  if (std::isnan(value))
    return 0;
  double v = value;
  double r = mode == 0   ? std::nearbyint(v) // rni: nearest, ties to even
             : mode == 1 ? std::trunc(v)     // rzi
             : mode == 2 ? std::floor(v)     // rmi
                         : std::ceil(v);     // rpi
  if (r < double(lo))
    return lo;
  if (r > double(hi))
    return hi;
  return static_cast<int64_t>(r);
}

/// The f32 nearest `value` (exact in a double) in rounding mode `mode`
/// (0 rn, 1 rz, 2 rm, 3 rp), stepping from the round-to-nearest result.
float roundToFloat(double value, int mode) {
  float f = static_cast<float>(value); // the default mode: nearest even
  const float inf = std::numeric_limits<float>::infinity();
  switch (mode) {
  case 1:
    if (std::fabs(double(f)) > std::fabs(value))
      f = std::nextafter(f, 0.0f);
    break;
  case 2:
    if (double(f) > value)
      f = std::nextafter(f, -inf);
    break;
  case 3:
    if (double(f) < value)
      f = std::nextafter(f, inf);
    break;
  default:
    break;
  }
  return f;
}

TEST(ExecuteTest, ConversionsRoundAndSaturate) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> floats = {2.5f,  -2.5f,    3.7f,          -3.7f,
                                     1e10f, -1e10f,   nan,           0.5f,
                                     -0.5f, 32767.5f, 4294967296.0f, -1.0f};
  const std::vector<uint32_t> integers = {16777217u,
                                          static_cast<uint32_t>(-16777219),
                                          0x7fffffffu,
                                          0xffffffffu,
                                          0u,
                                          static_cast<uint32_t>(-1),
                                          33554435u,
                                          1u,
                                          0x80000000u,
                                          12345u,
                                          static_cast<uint32_t>(-33554435),
                                          3u};
  ASSERT_EQ(floats.size(), integers.size());
  Kernel kernel(ptxModule(test::kConvertKernel), "convert_ops");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer fin = allocate(memory, floats.size() * 4);
  DeviceBuffer iin = allocate(memory, integers.size() * 4);
  DeviceBuffer out = allocate(memory, floats.size() * 64);
  for (size_t i = 0; i < floats.size(); ++i) {
    fin.as<float>()[i] = floats[i];
    iin.as<uint32_t>()[i] = integers[i];
  }
  LaunchReport report = kernel.launch(static_cast<uint32_t>(floats.size()),
                                      kernel.parameters()
                                          .set("fin", fin.address)
                                          .set("iin", iin.address)
                                          .set("out", out.address),
                                      memory, testOptions());
  ASSERT_TRUE(report.ok) << report.message;
  const char *modes[4] = {"rn", "rz", "rm", "rp"};
  for (size_t i = 0; i < floats.size(); ++i) {
    const uint32_t *row = out.as<uint32_t>() + test::kConvertResults * i;
    float f = floats[i];
    for (int mode = 0; mode < 4; ++mode)
      EXPECT_EQ(static_cast<int32_t>(row[mode]),
                floatToInteger(f, mode, INT32_MIN, INT32_MAX))
          << "cvt." << modes[mode] << "i.s32.f32 of " << f;
    EXPECT_EQ(row[4], floatToInteger(f, 0, 0, UINT32_MAX))
        << "cvt.rni.u32.f32 of " << f;
    EXPECT_EQ(row[5], floatToInteger(f, 1, 0, UINT32_MAX))
        << "cvt.rzi.u32.f32 of " << f;
    int32_t s = static_cast<int32_t>(integers[i]);
    uint32_t u = integers[i];
    for (int mode = 0; mode < 4; ++mode) {
      EXPECT_EQ(row[6 + mode], bits(roundToFloat(double(s), mode)))
          << "cvt." << modes[mode] << ".f32.s32 of " << s;
      EXPECT_EQ(row[10 + mode], bits(roundToFloat(double(u), mode)))
          << "cvt." << modes[mode] << ".f32.u32 of " << u;
    }
    if (std::isnan(f))
      EXPECT_TRUE(std::isnan(bitsToFloat(row[14]))) << "cvt.rni.f32.f32 NaN";
    else
      EXPECT_EQ(row[14], bits(std::nearbyint(f))) << "cvt.rni.f32.f32 of " << f;
    EXPECT_EQ(static_cast<int32_t>(row[15]),
              floatToInteger(f, 1, INT16_MIN, INT16_MAX))
        << "cvt.rzi.s16.f32 of " << f;
  }
  // Golden values, independent of the helpers above.
  const uint32_t *row0 = out.as<uint32_t>();
  EXPECT_EQ(static_cast<int32_t>(row0[0]), 2); // rni(2.5): even
  EXPECT_EQ(row0[6], 0x4B800000u);             // 2^24 + 1: tie
  EXPECT_EQ(row0[9], 0x4B800001u);             // rp: 2^24 + 2
  const uint32_t *row1 = out.as<uint32_t>() + test::kConvertResults;
  EXPECT_EQ(static_cast<int32_t>(row1[0]), -2); // rni(-2.5)
  EXPECT_EQ(static_cast<int32_t>(row1[2]), -3); // rmi(-2.5)
  EXPECT_EQ(row1[6], bits(-16777220.0f));       // tie to even
  EXPECT_EQ(row1[7], bits(-16777218.0f));       // rz
  const uint32_t *row3 = out.as<uint32_t>() + 3 * test::kConvertResults;
  EXPECT_EQ(static_cast<int32_t>(row3[1]), -3); // rzi(-3.7)
  EXPECT_EQ(row3[10], 0x4F800000u); // cvt.rn.f32.u32 0xffffffff: 2^32
  EXPECT_EQ(row3[11], 0x4F7FFFFFu); // rz: 2^32 - 256
  const uint32_t *row4 = out.as<uint32_t>() + 4 * test::kConvertResults;
  EXPECT_EQ(static_cast<int32_t>(row4[0]), INT32_MAX); // 1e10 saturates
  EXPECT_EQ(static_cast<int32_t>(row4[15]), INT16_MAX);
  const uint32_t *row6 = out.as<uint32_t>() + 6 * test::kConvertResults;
  EXPECT_EQ(row6[0], 0u); // NaN to s32 is 0
  const uint32_t *row11 = out.as<uint32_t>() + 11 * test::kConvertResults;
  EXPECT_EQ(row11[4], 0u); // -1.0 to u32 saturates to 0
}

// cvt.rna.tf32.f32 keeps the f32 layout with 10 mantissa bits, rounding
// ties away from zero: 1 + 2^-11 is a tie, so it becomes 1 + 2^-10.
TEST(ExecuteTest, ConvertToTf32) {
  const char *body = R"PTX(
.visible .entry to_tf32(.param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b32 %r<2>;
  .reg .f32 %f<2>;
  .reg .b64 %rd0;
  mov.f32 %f0, 0f3F801000;
  cvt.rna.tf32.f32 %r0, %f0;
  mov.f32 %f1, 0f3F800000;
  cvt.rna.tf32.f32 %r1, %f1;
  ld.param.u64 %rd0, [out];
  st.global.v2.u32 [%rd0], {%r0, %r1};
  ret;
}
)PTX";
  Kernel kernel(ptxModule(body), "to_tf32");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 8);
  LaunchReport report = kernel.launch(
      1, kernel.parameters().set("out", out.address), memory, testOptions());
  ASSERT_TRUE(report.ok) << report.message;
  uint32_t tie = out.as<uint32_t>()[0], one = out.as<uint32_t>()[1];
  if (tie != 0x3F802000u || one != 0x3F800000u)
    GTEST_SKIP() << "emulator bug: cvt.rna.tf32.f32 of 1 + 2^-11 gives 0x"
                 << std::hex << tie << " (expected 0x3f802000) and of 1.0 "
                 << "gives 0x" << one << " (expected 0x3f800000): "
                 << "encodeFloat's TF32 overflow check";
}

TEST(ExecuteTest, FmaRoundsOnce) {
  // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: mul.rn drops the 2^-24 (a tie,
  // rounded to even), so mul + add gives 0 where fma gives 2^-24.
  const float a = 1.0f + std::ldexp(1.0f, -12);
  const float c = -(1.0f + std::ldexp(1.0f, -11));
  Kernel kernel(ptxModule(test::kFmaKernel), "fma_vs_mul_add");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer in = allocate(memory, 16);
  DeviceBuffer out = allocate(memory, 8);
  in.as<float>()[0] = a;
  in.as<float>()[1] = a;
  in.as<float>()[2] = c;
  LaunchReport report = kernel.launch(
      1, kernel.parameters().set("in", in.address).set("out", out.address),
      memory, testOptions());
  ASSERT_TRUE(report.ok) << report.message;
  volatile float product = a * a; // one rounding, as mul.rn
  EXPECT_EQ(out.as<uint32_t>()[0], bits(std::fma(a, a, c)));
  EXPECT_EQ(out.as<uint32_t>()[0], bits(std::ldexp(1.0f, -24)));
  EXPECT_EQ(out.as<uint32_t>()[1], bits(product + c));
  EXPECT_EQ(out.as<float>()[1], 0.0f);
}

// --- Control flow and warps
// -------------------------------------------------------

TEST(ExecuteTest, DivergentBranchesReconvergeBeforeBarSync) {
  Kernel kernel(ptxModule(test::kDivergeKernel), "diverge");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 32 * 8);
  LaunchReport report = kernel.launch(
      32, kernel.parameters().set("out", out.address), memory, testOptions());
  ASSERT_TRUE(report.ok) << report.message;
  auto x = [](uint32_t t) {
    return t % 2 == 0 ? t + 100 : 3 * t + (t % 4 == 3 ? 1000 : 0);
  };
  for (uint32_t t = 0; t < 32; ++t) {
    EXPECT_EQ(out.as<uint32_t>()[2 * t], x(t)) << "lane " << t;
    EXPECT_EQ(out.as<uint32_t>()[2 * t + 1], x(t ^ 1)) << "lane " << t;
  }
}

TEST(ExecuteTest, LoopWithLatchBeforeBodyReconverges) {
  Kernel kernel(ptxModule(test::kLatchFirstLoopKernel), "latch_first_loop");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 32 * 4);
  LaunchReport report = kernel.launch(
      32, kernel.parameters().set("out", out.address), memory, testOptions());
  ASSERT_TRUE(report.ok) << report.message;
  for (uint32_t t = 0; t < 32; ++t) {
    uint32_t n = t % 5, sum = 0;
    for (uint32_t i = 0; i < n; ++i)
      sum += i * t + 1;
    EXPECT_EQ(out.as<uint32_t>()[t], sum) << "lane " << t;
  }
}

TEST(ExecuteTest, ShuffleModes) {
  Kernel kernel(ptxModule(test::kShuffleKernel), "shuffles");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 32 * 24);
  LaunchReport report = kernel.launch(
      32, kernel.parameters().set("out", out.address), memory, testOptions());
  ASSERT_TRUE(report.ok) << report.message;
  auto v = [](uint32_t lane) { return 10 * lane + 7; };
  for (uint32_t t = 0; t < 32; ++t) {
    const uint32_t *row = out.as<uint32_t>() + 6 * t;
    EXPECT_EQ(row[0], v(t ^ 1)) << "bfly 1, lane " << t;
    EXPECT_EQ(row[1], v(t ^ 6)) << "bfly 6, lane " << t;
    EXPECT_EQ(row[2], v(5)) << "idx 5, lane " << t;
    EXPECT_EQ(row[3], v((t & ~7u) | 2))
        << "idx 2 in 8-lane segments, lane " << t;
    EXPECT_EQ(row[4], t >= 3 ? v(t - 3) : v(t)) << "up 3, lane " << t;
    EXPECT_EQ(row[5], t >= 3 ? 1u : 0u) << "up 3 predicate, lane " << t;
  }
}

class DivergedAlignedTest : public ::testing::TestWithParam<const char *> {};

TEST_P(DivergedAlignedTest, IsAnErrorNamingTheInstruction) {
  std::string instruction = GetParam();
  Kernel kernel(ptxModule(test::divergedAlignedKernel(instruction)),
                "diverged_aligned");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 4);
  LaunchReport report = kernel.launch(
      32, kernel.parameters().set("out", out.address), memory, testOptions());
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(namesLine(report.message, kernel.line("// ALIGNED")))
      << report.message;
  EXPECT_NE(report.message.find(instruction), std::string::npos)
      << report.message;
  EXPECT_NE(report.message.find("0xffff0000"), std::string::npos)
      << "the message should name the lanes that arrived: " << report.message;
}

INSTANTIATE_TEST_SUITE_P(SyncAligned, DivergedAlignedTest,
                         ::testing::Values("bar.sync 0;",
                                           "barrier.sync.aligned 0;",
                                           "wgmma.fence.sync.aligned;",
                                           "setmaxnreg.dec.sync.aligned.u32 "
                                           "40;"));

TEST(ExecuteTest, OutOfBoundsStoreNamesLineAndThread) {
  Kernel kernel(ptxModule(test::kFaultKernel), "faults");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 16 * 4); // lanes 16-31 are past it
  LaunchReport report = kernel.launch(
      32, kernel.parameters().set("out", out.address).set("mode", 0u), memory,
      testOptions());
  ASSERT_FALSE(report.ok);
  EXPECT_FALSE(report.hazard);
  EXPECT_TRUE(namesLine(report.message, kernel.line("// OUT_OF_BOUNDS")))
      << report.message;
  EXPECT_NE(report.message.find("thread (16, 0, 0)"), std::string::npos)
      << report.message;
  EXPECT_NE(report.message.find("outside every allocation"), std::string::npos)
      << report.message;
}

TEST(ExecuteTest, MisalignedAccessIsAnError) {
  Kernel kernel(ptxModule(test::kFaultKernel), "faults");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 64);
  LaunchReport report = kernel.launch(
      32, kernel.parameters().set("out", out.address).set("mode", 1u), memory,
      testOptions());
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(namesLine(report.message, kernel.line("// MISALIGNED")))
      << report.message;
  EXPECT_NE(report.message.find("misaligned"), std::string::npos)
      << report.message;
  EXPECT_NE(report.message.find("thread (0, 0, 0)"), std::string::npos)
      << report.message;
}

TEST(ExecuteTest, DeadlockListsEveryBlockedWarp) {
  Kernel kernel(ptxModule(test::kStuckBarrierKernel), "stuck_bar");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 4);
  LaunchReport report = kernel.launch(
      96, kernel.parameters().set("out", out.address), memory, testOptions());
  ASSERT_FALSE(report.ok);
  const std::string &m = report.message;
  EXPECT_NE(m.find("deadlock"), std::string::npos) << m;
  EXPECT_NE(m.find("warp 0"), std::string::npos) << m;
  EXPECT_NE(m.find("warp 1"), std::string::npos) << m;
  EXPECT_EQ(m.find("warp 2"), std::string::npos)
      << "warp 2 exited and is not blocked: " << m;
  EXPECT_NE(m.find("barrier 1"), std::string::npos) << m;
  EXPECT_NE(m.find("64 of 96"), std::string::npos)
      << "the barrier's arrivals: " << m;
  EXPECT_TRUE(namesLine(m, kernel.line("// STUCK"))) << m;
}

// --- Policies and schedules
// -------------------------------------------------------

/// Runs the TMA -> compute -> TMA pipeline and returns the output tile.
std::vector<float> runPipeline(const Options &options, std::string &error) {
  Kernel kernel(ptxModule(test::kPipelineKernel), "pipeline");
  if (!kernel.ok())
    return {};
  DeviceMemory memory;
  DeviceBuffer in = allocate(memory, 64 * 4);
  DeviceBuffer out = allocate(memory, 64 * 4);
  for (int i = 0; i < 64; ++i)
    in.as<float>()[i] = 0.25f * float(i) - 3.0f;
  auto inMap = test::tensorMap2d(in.address, test::kTensorFloat32, 8, 8, 8, 8);
  auto outMap =
      test::tensorMap2d(out.address, test::kTensorFloat32, 8, 8, 8, 8);
  LaunchReport report =
      kernel.launch(64,
                    kernel.parameters()
                        .set("in_map", inMap.data(), inMap.size())
                        .set("out_map", outMap.data(), outMap.size()),
                    memory, options);
  if (!report.ok) {
    error = report.message;
    return {};
  }
  return std::vector<float>(out.as<float>(), out.as<float>() + 64);
}

TEST(ExecuteTest, ResultsDoNotDependOnPolicyOrSchedule) {
  std::string error;
  std::vector<float> reference = runPipeline(testOptions(), error);
  ASSERT_EQ(reference.size(), 64u) << error;
  for (int t = 0; t < 64; ++t) {
    float x = 0.25f * float(t) - 3.0f;
    EXPECT_EQ(reference[t], std::fma(x, x, float(t))) << "element " << t;
  }
  std::vector<std::pair<std::string, Options>> variants;
  variants.push_back({"eager", testOptions(AsyncPolicy::Eager)});
  for (uint64_t seed : {1, 2, 3, 17, 12345}) {
    Options random = testOptions(AsyncPolicy::Random);
    random.seed = seed;
    variants.push_back({"random policy, seed " + std::to_string(seed), random});
    for (AsyncPolicy policy :
         {AsyncPolicy::Lazy, AsyncPolicy::Eager, AsyncPolicy::Random}) {
      Options options = testOptions(policy);
      options.randomSchedule = true;
      options.seed = seed;
      variants.push_back({"random schedule, policy " +
                              std::to_string(static_cast<int>(policy)) +
                              ", seed " + std::to_string(seed),
                          options});
    }
  }
  for (const auto &[name, options] : variants) {
    std::string message;
    std::vector<float> result = runPipeline(options, message);
    ASSERT_EQ(result.size(), 64u) << name << ": " << message;
    EXPECT_EQ(result, reference) << name;
  }
}

TEST(ExecuteTest, HazardCheckerDoesNotChangeResults) {
  std::string error;
  Options unchecked = testOptions();
  unchecked.checkHazards = false;
  std::vector<float> withChecker = runPipeline(testOptions(), error);
  std::vector<float> without = runPipeline(unchecked, error);
  ASSERT_EQ(withChecker.size(), 64u) << error;
  EXPECT_EQ(withChecker, without);
}

// Found by reading integerOp while fuzzing: each negated the most
// negative value as an int64_t, which overflows (UndefinedBehaviorSanitizer
// in the fuzzing build). Two's complement keeps it as it is.
TEST(ExecuteTest, MostNegativeValueNegatesToItself) {
  const char *body = R"PTX(
.visible .entry negate(.param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b64 %rd<5>;
  mov.b64 %rd0, -9223372036854775808;
  neg.s64 %rd1, %rd0;
  abs.s64 %rd2, %rd0;
  div.s64 %rd3, %rd0, -1;
  ld.param.u64 %rd4, [out];
  st.global.v2.u64 [%rd4], {%rd1, %rd2};
  st.global.u64 [%rd4+16], %rd3;
  ret;
}
)PTX";
  Kernel kernel(ptxModule(body), "negate");
  ASSERT_TRUE(kernel.ok());
  DeviceMemory memory;
  DeviceBuffer out = allocate(memory, 24);
  LaunchReport report = kernel.launch(
      1, kernel.parameters().set("out", out.address), memory, testOptions());
  ASSERT_TRUE(report.ok) << report.message;
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(out.as<int64_t>()[i], INT64_MIN) << "result " << i;
}

} // namespace
} // namespace mosaic::emulator
