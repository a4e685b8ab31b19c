//===- misc_warp_host.cpp - Host side of misc_warp.cu --------------------===//
//
// One variant per kernel. Each recomputes, from the PTX ISA's description of
// the instructions, what every thread must have written.
//
//===----------------------------------------------------------------------===//

#include "HostSupport.h"

#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

using namespace emutest;

namespace {

constexpr uint32_t kFullMask = 0xffffffffu;
constexpr uint32_t kSentinel = 0xdeadbeefu;
constexpr double kPi = 3.14159265358979323846;

unsigned blocksFor(uint32_t count, uint32_t threads) {
  return (count + threads - 1) / threads;
}

//===----------------------------------------------------------------------===//
// shfl.sync
//===----------------------------------------------------------------------===//

enum class ShuffleMode { Up, Down, Bfly, Idx };

struct ShuffleCase {
  const char *what;
  ShuffleMode mode;
  uint32_t c;
  uint32_t mask;
  std::function<uint32_t(uint32_t lane)> b;
};

// In the order of the kernel's results[].
const std::vector<ShuffleCase> kShuffleCases = {
    {"bfly 1", ShuffleMode::Bfly, 0x1f, kFullMask, [](uint32_t) { return 1u; }},
    {"bfly 16", ShuffleMode::Bfly, 0x1f, kFullMask,
     [](uint32_t) { return 16u; }},
    {"up 3", ShuffleMode::Up, 0, kFullMask, [](uint32_t) { return 3u; }},
    {"up 2 in 8-lane segments", ShuffleMode::Up, 0x1800, kFullMask,
     [](uint32_t) { return 2u; }},
    {"down 5", ShuffleMode::Down, 0x1f, kFullMask, [](uint32_t) { return 5u; }},
    {"down 1 in 16-lane segments", ShuffleMode::Down, 0x101f, kFullMask,
     [](uint32_t) { return 1u; }},
    {"idx 7*lane%32", ShuffleMode::Idx, 0x1f, kFullMask,
     [](uint32_t lane) { return lane * 7 % 32; }},
    {"idx 2 in 4-lane segments", ShuffleMode::Idx, 0x1c1f, kFullMask,
     [](uint32_t) { return 2u; }},
    {"bfly 4 among lanes 0-15", ShuffleMode::Bfly, 0x1f, 0x0000ffffu,
     [](uint32_t) { return 4u; }},
    {"idx lane+2 among even lanes", ShuffleMode::Idx, 0x1f, 0x55555555u,
     [](uint32_t lane) { return (lane + 2) % 32; }},
};

// The shfl.sync semantics of the PTX ISA, for one lane.
uint32_t shuffleModel(ShuffleMode mode, uint32_t lane, uint32_t b, uint32_t c,
                      const uint32_t *source, uint32_t &valid) {
  int bval = b & 31, cval = c & 31, segmask = (c >> 8) & 31;
  int self = static_cast<int>(lane);
  int maxLane = (self & segmask) | (cval & ~segmask);
  int minLane = self & segmask;
  int j = self;
  bool p = false;
  switch (mode) {
  case ShuffleMode::Up:
    j = self - bval;
    p = j >= maxLane;
    break;
  case ShuffleMode::Down:
    j = self + bval;
    p = j <= maxLane;
    break;
  case ShuffleMode::Bfly:
    j = self ^ bval;
    p = j <= maxLane;
    break;
  case ShuffleMode::Idx:
    j = minLane | (bval & ~segmask);
    p = j <= maxLane;
    break;
  }
  if (!p)
    j = self;
  valid = p;
  return source[j];
}

void runShuffle(Session &session, Checker &checker) {
  uint32_t cases = kShuffleCases.size();
  DeviceBuffer out(64 * cases * 2 * sizeof(uint32_t));
  launch(session.function("warp_shuffle"), {1}, {64}, 0, {out.parameter()});
  std::vector<uint32_t> got = out.download<uint32_t>();
  for (uint32_t warp = 0; warp < 2; ++warp) {
    uint32_t source[32];
    for (uint32_t lane = 0; lane < 32; ++lane)
      source[lane] = warp * 100 + lane * 3 + 1;
    for (uint32_t c = 0; c < cases; ++c) {
      const ShuffleCase &shuffle = kShuffleCases[c];
      for (uint32_t lane = 0; lane < 32; ++lane) {
        uint32_t tid = warp * 32 + lane;
        uint32_t value = kSentinel, valid = kSentinel;
        if (shuffle.mask >> lane & 1)
          value = shuffleModel(shuffle.mode, lane, shuffle.b(lane), shuffle.c,
                               source, valid);
        size_t at = (tid * cases + c) * 2;
        std::string what = std::string(shuffle.what) + ", thread";
        checker.equal(what + " value", tid, got[at], value);
        checker.equal(what + " predicate", tid, got[at + 1], valid);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// vote, redux, elect
//===----------------------------------------------------------------------===//

void runVote(Session &session, Checker &checker) {
  constexpr uint32_t kSlots = 23;
  constexpr uint32_t kThirds = 0x49249249u;
  DeviceBuffer out(64 * kSlots * sizeof(uint32_t));
  launch(session.function("warp_vote"), {1}, {64}, 0, {out.parameter()});
  std::vector<uint32_t> got = out.download<uint32_t>();

  for (uint32_t warp = 0; warp < 2; ++warp) {
    // Warp-wide reductions over all 32 lanes.
    int32_t sum = 0, minimum = INT32_MAX;
    uint32_t maximum = 0, conjunction = kFullMask, disjunction = 0, parity = 0,
             ballot = 0;
    for (uint32_t k = 0; k < 32; ++k) {
      sum += static_cast<int32_t>(k) - 10;
      minimum = std::min(minimum, static_cast<int32_t>((k * 7) % 13) - 6);
      maximum = std::max(maximum, (k * k) ^ 5);
      conjunction &= 0xff00ff00u | k | (k << 4);
      disjunction |= 1u << (k % 8);
      parity ^= k * 0x01010101u + warp;
      if (k % 3 != 0 && k % 5 == 0)
        ballot |= 1u << k;
    }

    // elect.sync picks a leader deterministically, but which one the ISA
    // leaves open: every lane must agree on one lane inside the mask.
    uint32_t base = warp * 32;
    uint32_t leader = got[base * kSlots + 17];
    uint32_t partialLeader = got[(base + 8) * kSlots + 19];
    checker.expect("elect.sync leader within the warp", warp, leader < 32,
                   "laneid " + std::to_string(leader));
    checker.expect("elect.sync leader within mask 0x00ffff00", warp,
                   partialLeader >= 8 && partialLeader < 24,
                   "laneid " + std::to_string(partialLeader));

    for (uint32_t lane = 0; lane < 32; ++lane) {
      bool third = lane % 3 == 0;
      bool low = lane < 16, middle = lane >= 8 && lane < 24;
      uint32_t isPartialLeader = lane == partialLeader;
      const uint32_t expected[kSlots] = {
          0,
          1,
          1,
          0,
          1,
          0,
          kThirds,
          third ? kSentinel : ballot,
          third ? kSentinel : 0,
          third ? kSentinel : 1,
          static_cast<uint32_t>(sum),
          static_cast<uint32_t>(minimum),
          maximum,
          conjunction,
          disjunction,
          parity,
          low ? 120u : kSentinel,
          leader,
          lane == leader,
          middle ? partialLeader : kSentinel,
          middle ? isPartialLeader : kSentinel,
          middle ? partialLeader : kSentinel,
          middle ? isPartialLeader : kSentinel,
      };
      const char *names[kSlots] = {
          "vote.all (lane < 31)",
          "vote.all (true)",
          "vote.any (lane == 7)",
          "vote.any (false)",
          "vote.uni (warp-uniform)",
          "vote.uni (lane parity)",
          "vote.ballot (lane % 3 == 0)",
          "vote.ballot in branch (lane % 5 == 0)",
          "vote.all in branch (lane != 4)",
          "vote.any in branch (lane == 4)",
          "redux.add.s32",
          "redux.min.s32",
          "redux.max.u32",
          "redux.and.b32",
          "redux.or.b32",
          "redux.xor.b32",
          "redux.add.u32 among lanes 0-15",
          "elect.sync laneid (warp)",
          "elect.sync predicate (warp)",
          "elect.sync laneid (lanes 8-23)",
          "elect.sync predicate (lanes 8-23)",
          "elect.sync laneid again (lanes 8-23)",
          "elect.sync predicate again (lanes 8-23)",
      };
      uint32_t tid = base + lane;
      for (uint32_t slot = 0; slot < kSlots; ++slot)
        checker.equal(std::string(names[slot]) + ", thread", tid,
                      got[tid * kSlots + slot], expected[slot]);
    }
  }
}

//===----------------------------------------------------------------------===//
// Named barriers
//===----------------------------------------------------------------------===//

void runNamedBarriers(Session &session, Checker &checker) {
  DeviceBuffer groupRead(256 * sizeof(uint32_t));
  DeviceBuffer consumed(256 * sizeof(uint32_t));
  launch(session.function("named_barriers"), {1}, {256}, 0,
         {groupRead.parameter(), consumed.parameter()});
  std::vector<uint32_t> read = groupRead.download<uint32_t>();
  std::vector<uint32_t> handed = consumed.download<uint32_t>();
  for (uint32_t t = 0; t < 256; ++t) {
    uint32_t half = t / 128, inHalf = t % 128;
    checker.equal("bar.sync per half, thread", t, read[t],
                  (half * 128 + (inHalf + 37) % 128) * 5 + 1);
    checker.equal("bar.arrive -> bar.sync handoff, thread", t, handed[t],
                  inHalf < 64 ? kSentinel : (t - 64) * 9 + 2);
  }
}

//===----------------------------------------------------------------------===//
// Divergence
//===----------------------------------------------------------------------===//

void runDivergence(Session &session, Checker &checker) {
  DeviceBuffer out(64 * 6 * sizeof(uint32_t));
  launch(session.function("divergence"), {1}, {64}, 0, {out.parameter()});
  std::vector<uint32_t> got = out.download<uint32_t>();
  for (uint32_t warp = 0; warp < 2; ++warp) {
    uint32_t steps[32], path[32], iterations[32];
    for (uint32_t lane = 0; lane < 32; ++lane) {
      uint32_t n = 32 * warp + lane + 1;
      steps[lane] = 0;
      while (n != 1) {
        n = n % 2 ? 3 * n + 1 : n / 2;
        ++steps[lane];
      }
      if (lane % 4 == 0)
        path[lane] = steps[lane] * 2;
      else if (lane % 4 == 1)
        path[lane] = lane * (lane - 1) / 2;
      else if (lane > 16)
        path[lane] = steps[lane] ^ 0x55;
      else
        path[lane] = 1000 - lane;
      iterations[lane] = 0;
      while (iterations[lane] < 100 &&
             iterations[lane] * iterations[lane] <= lane * 3)
        ++iterations[lane];
    }
    uint32_t parity = 0;
    for (uint32_t lane = 0; lane < 32; ++lane)
      parity |= (iterations[lane] % 2) << lane;
    for (uint32_t lane = 0; lane < 32; ++lane) {
      uint32_t tid = warp * 32 + lane;
      const uint32_t *o = &got[tid * 6];
      checker.equal("Collatz steps, thread", tid, o[0], steps[lane]);
      checker.equal("nested branches, thread", tid, o[1], path[lane]);
      checker.equal("loop left by break, thread", tid, o[2], iterations[lane]);
      checker.equal("shfl.idx after reconvergence, thread", tid, o[3],
                    steps[31]);
      checker.equal("ballot after reconvergence, thread", tid, o[4], parity);
      checker.equal("shfl.idx among lanes 0-15 in a branch, thread", tid, o[5],
                    lane < 16 ? path[15 - lane] : kSentinel);
    }
  }
}

//===----------------------------------------------------------------------===//
// Atomics
//===----------------------------------------------------------------------===//

// Mirrors AtomicWord in misc_warp.cu.
enum AtomicWord : uint32_t {
  kCounter,
  kRedSum,
  kMin,
  kMax,
  kAnd,
  kOr,
  kXor,
  kInc,
  kDec,
  kExch,
  kCas,
  kAtomicWords
};

void expectPermutation(Checker &checker, const std::string &what,
                       const uint32_t *values, uint32_t count, uint32_t first,
                       uint32_t step) {
  std::vector<uint32_t> sorted(values, values + count);
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < count; ++i)
    checker.equal(what + " (sorted)", i, sorted[i], first + i * step);
}

void runAtomics(Session &session, Checker &checker) {
  constexpr uint32_t kBlocks = 4, kThreads = 128, kTotal = kBlocks * kThreads;
  std::vector<uint32_t> initial(kAtomicWords, 0);
  initial[kMin] = 0xffffffffu;
  initial[kMax] = 0x80000000u;
  initial[kAnd] = 0xffffffffu;
  initial[kDec] = 50;
  DeviceBuffer words(initial);
  DeviceBuffer wide(std::vector<uint64_t>{0});
  DeviceBuffer floats(std::vector<float>{0.0f, 0.0f});
  DeviceBuffer tickets(kTotal * sizeof(uint32_t));
  DeviceBuffer exchanged(kTotal * sizeof(uint32_t));
  DeviceBuffer compared(kTotal * sizeof(uint32_t));
  DeviceBuffer floatOlds(kTotal * sizeof(float));
  DeviceBuffer sharedTickets(kTotal * sizeof(uint32_t));
  DeviceBuffer sharedAdded(kTotal * sizeof(uint32_t));
  DeviceBuffer sharedFinal(kBlocks * 2 * sizeof(uint32_t));
  launch(session.function("atomics"), {kBlocks}, {kThreads}, 0,
         {words.parameter(), wide.parameter(), floats.parameter(),
          tickets.parameter(), exchanged.parameter(), compared.parameter(),
          floatOlds.parameter(), sharedTickets.parameter(),
          sharedAdded.parameter(), sharedFinal.parameter()});

  uint32_t minimum = 0xffffffffu, xorAll = 0, dec = 50;
  int32_t maximum = INT32_MIN;
  uint64_t wideSum = 0;
  for (uint32_t g = 0; g < kTotal; ++g) {
    minimum = std::min(minimum, (g * 7919) % 1000 + 5);
    maximum = std::max(maximum, (static_cast<int32_t>(g) - 300) * 3);
    xorAll ^= g * 3;
    // atom.dec: ((old == 0) || (old > b)) ? b : old - 1, with b = 1000.
    dec = (dec == 0 || dec > 1000) ? 1000 : dec - 1;
    wideSum += static_cast<uint64_t>(g) << 33;
  }
  std::vector<uint32_t> w = words.download<uint32_t>();
  checker.equal("atom.add.u32 counter", kCounter, w[kCounter], kTotal);
  checker.equal("red.add.u32 sum", kRedSum, w[kRedSum],
                kTotal * (kTotal - 1) / 2);
  checker.equal("atom.min.u32", kMin, w[kMin], minimum);
  checker.equal("atom.max.s32", kMax, static_cast<int32_t>(w[kMax]), maximum);
  checker.equal("atom.and.b32", kAnd, w[kAnd], 0);
  checker.equal("atom.or.b32", kOr, w[kOr], 0xff);
  checker.equal("atom.xor.b32", kXor, w[kXor], xorAll);
  // atom.inc: (old >= b) ? 0 : old + 1, with b = 99: counts modulo 100.
  checker.equal("atom.inc.u32", kInc, w[kInc], kTotal % 100);
  checker.equal("atom.dec.u32", kDec, w[kDec], dec);
  checker.equal("red.add.u64", 0,
                static_cast<int64_t>(wide.download<uint64_t>()[0]),
                static_cast<int64_t>(wideSum));
  std::vector<float> f = floats.download<float>();
  checker.equalBits("atom.add.f32 sum", 0, f[0], 896.0f);
  checker.equalBits("red.add.f32 sum", 1, f[1], static_cast<float>(kTotal));

  std::vector<uint32_t> ticket = tickets.download<uint32_t>();
  expectPermutation(checker, "atom.add.u32 returned values", ticket.data(),
                    kTotal, 0, 1);

  // atom.exch: the returned values and the final word are 0..kTotal.
  std::vector<uint32_t> exchange = exchanged.download<uint32_t>();
  exchange.push_back(w[kExch]);
  expectPermutation(checker, "atom.exch returned values and final word",
                    exchange.data(), kTotal + 1, 0, 1);

  // atom.cas: exactly one thread swaps 0 for g + 1; the others see that.
  std::vector<uint32_t> compare = compared.download<uint32_t>();
  uint32_t winners = 0, winner = 0;
  for (uint32_t g = 0; g < kTotal; ++g)
    if (compare[g] == 0) {
      ++winners;
      winner = g;
    }
  checker.equal("atom.cas threads that saw 0", 0, winners, 1);
  checker.equal("atom.cas final word", kCas, w[kCas], winner + 1);
  for (uint32_t g = 0; g < kTotal; ++g)
    if (g != winner)
      checker.equal("atom.cas returned value, thread", g, compare[g],
                    winner + 1);

  // atom.add.f32 returns a partial sum: a multiple of 0.5 that leaves room
  // for this thread's own addend.
  std::vector<float> olds = floatOlds.download<float>();
  for (uint32_t g = 0; g < kTotal; ++g) {
    float old = olds[g];
    bool ok =
        old >= 0 && old + (g % 8) * 0.5f <= 896.0f && std::fmod(old, 0.5f) == 0;
    checker.expect("atom.add.f32 returned value, thread", g, ok,
                   "got " + std::to_string(old));
  }

  std::vector<uint32_t> casTickets = sharedTickets.download<uint32_t>();
  std::vector<uint32_t> added = sharedAdded.download<uint32_t>();
  std::vector<uint32_t> finals = sharedFinal.download<uint32_t>();
  for (uint32_t block = 0; block < kBlocks; ++block) {
    std::string name = "block " + std::to_string(block);
    expectPermutation(checker, name + " atom.shared.cas loop values",
                      &casTickets[block * kThreads], kThreads, 0, 1);
    expectPermutation(checker, name + " atom.shared.add values",
                      &added[block * kThreads], kThreads, 0, 2);
    checker.equal(name + " shared CAS counter", block, finals[2 * block],
                  kThreads);
    checker.equal(name + " shared add counter", block, finals[2 * block + 1],
                  2 * kThreads);
  }
}

//===----------------------------------------------------------------------===//
// cvt
//===----------------------------------------------------------------------===//

// Inputs that sit on rounding boundaries of the destination formats.
std::vector<float> conversionInputs() {
  std::vector<float> in = {
      1.0f, -1.0f, 0.0f, -0.0f,
      // bf16 ulp at 1 is 2^-7: 1 + 2^-8 is a tie, 1 + 3 * 2^-8 too.
      1.00390625f, 1.01171875f, bitsToFloat(0x3F808001u), -1.00390625f,
      3.14159274f, -2.71828175f,
      // f16: largest finite 65504, ulp 32 there; 65520 is the tie to Inf.
      65504.0f, 65519.0f, 65520.0f, 70000.0f, -70000.0f,
      // f16 subnormals: the smallest is 2^-24; 2^-25 is a tie with zero.
      1.0e-5f, -3.0e-6f, 5.9604645e-8f, 2.98023224e-8f, 4.0e-8f, FLT_MAX,
      -FLT_MAX,
      // f32 subnormals.
      1.0e-40f, -1.0e-40f, INFINITY, -INFINITY, bitsToFloat(0x7FC00000u),
      // e4m3: largest 448; 464 is a tie; beyond saturates.
      448.0f, 464.0f, 500.0f, 1000.0f, -1000.0f,
      // e5m2: largest 57344; 61440 is the tie towards 65536.
      57344.0f, 61440.0f, 1.0e6f,
      // e4m3 subnormals (smallest 2^-9) and e5m2's smallest, 2^-16.
      0.001953125f, 0.0009765625f, 0.00146484375f, 1.52587890625e-05f,
      // Integer rounding.
      2.5f, 3.5f, -2.5f, -3.5f, 0.5f, -0.5f, 1.5f, 2.5000002f, 0.49999997f,
      -0.49999997f, 2147483520.0f, 2147483648.0f, -2147483648.0f, 3.0e9f,
      -3.0e9f, 1.0e20f, 123.456f, -0.0001234f};
  return in;
}

uint32_t roundToS32(float value, Rounding rounding) {
  if (std::isnan(value))
    return 0;
  double rounded = 0;
  switch (rounding) {
  case Rounding::NearestEven:
    rounded = std::nearbyint(static_cast<double>(value));
    break;
  case Rounding::TowardZero:
    rounded = std::trunc(value);
    break;
  case Rounding::Down:
    rounded = std::floor(value);
    break;
  case Rounding::Up:
    rounded = std::ceil(value);
    break;
  }
  rounded = std::min<double>(std::max<double>(rounded, INT32_MIN), INT32_MAX);
  return static_cast<uint32_t>(static_cast<int32_t>(rounded));
}

// Compares one encoded value; a NaN matches any NaN of the format.
void checkEncoded(Checker &checker, const std::string &what, size_t index,
                  uint32_t got, uint32_t expected, const FloatFormat &format) {
  if (format.isNan(expected))
    checker.expect(what, index, format.isNan(got),
                   "got " + std::to_string(got) + ", expected a NaN");
  else
    checker.equal(what, index, got, expected);
}

void runCvt(Session &session, Checker &checker) {
  constexpr uint32_t kSlots = 18;
  std::vector<float> in = conversionInputs();
  uint32_t count = in.size();
  DeviceBuffer input(in);
  DeviceBuffer out(count * kSlots * sizeof(uint32_t));
  launch(session.function("cvt_rounding"), {blocksFor(count, 64)}, {64}, 0,
         {input.parameter(), &count, out.parameter()});
  std::vector<uint32_t> got = out.download<uint32_t>();

  const Rounding directions[4] = {Rounding::NearestEven, Rounding::TowardZero,
                                  Rounding::Down, Rounding::Up};
  const char *directionNames[4] = {"rn", "rz", "rm", "rp"};
  for (uint32_t i = 0; i < count; ++i) {
    float a = in[i], b = in[(i + 1) % count];
    char label[96];
    std::snprintf(label, sizeof(label), " of %.9g (0x%08x), input", a,
                  floatToBits(a));
    const uint32_t *o = &got[i * kSlots];
    for (int d = 0; d < 4; ++d) {
      checkEncoded(
          checker,
          std::string("cvt.") + directionNames[d] + ".bf16.f32" + label, i,
          o[d], roundToFormat(a, kBFloat16, directions[d]), kBFloat16);
      checkEncoded(
          checker, std::string("cvt.") + directionNames[d] + ".f16.f32" + label,
          i, o[4 + d], roundToFormat(a, kFloat16, directions[d]), kFloat16);
      checker.equal(std::string("cvt.") + directionNames[d] + "i.s32.f32" +
                        label,
                    i, o[14 + d], roundToS32(a, directions[d]));
    }
    checkEncoded(checker, std::string("cvt.rn.satfinite.f16.f32") + label, i,
                 o[8], roundToFormat(a, kFloat16, Rounding::NearestEven, true),
                 kFloat16);

    // .relu: negative results become zero (for -0 both zeros are accepted).
    uint32_t relu = roundToFormat(a, kBFloat16, Rounding::NearestEven);
    std::string reluWhat = std::string("cvt.rn.relu.bf16.f32") + label;
    if (kBFloat16.isNan(relu))
      checkEncoded(checker, reluWhat, i, o[9], relu, kBFloat16);
    else if (a == 0.0f && std::signbit(a))
      checker.expect(reluWhat, i, o[9] == 0 || o[9] == 0x8000,
                     "got " + std::to_string(o[9]) + ", expected a zero");
    else
      checker.equal(reluWhat, i, o[9], (relu & 0x8000) ? 0 : relu);

    // Pairs: a goes to the upper half, b to the lower half.
    struct Pair {
      const char *what;
      const FloatFormat &format;
      int halfBits;
      bool satfinite;
      uint32_t got;
    };
    const Pair pairs[] = {
        {"cvt.rn.satfinite.e4m3x2.f32", kE4M3, 8, true, o[10]},
        {"cvt.rn.satfinite.e5m2x2.f32", kE5M2, 8, true, o[11]},
        {"cvt.rn.f16x2.f32", kFloat16, 16, false, o[12]},
        {"cvt.rn.bf16x2.f32", kBFloat16, 16, false, o[13]},
    };
    for (const Pair &pair : pairs) {
      uint32_t halfMask = (1u << pair.halfBits) - 1;
      uint32_t high =
          roundToFormat(a, pair.format, Rounding::NearestEven, pair.satfinite);
      uint32_t lowPart =
          roundToFormat(b, pair.format, Rounding::NearestEven, pair.satfinite);
      checkEncoded(checker, std::string(pair.what) + " upper (a)" + label, i,
                   pair.got >> pair.halfBits & halfMask, high, pair.format);
      checkEncoded(checker, std::string(pair.what) + " lower (b)" + label, i,
                   pair.got & halfMask, lowPart, pair.format);
    }
  }
}

//===----------------------------------------------------------------------===//
// Packed f16x2 / bf16x2 arithmetic
//===----------------------------------------------------------------------===//

// A random normal value +-(1 + m / 2^p) * 2^e with e in [-4, 3].
uint32_t randomHalf(const FloatFormat &format, Random &random) {
  int mantissa = random.uniform(0, (1 << format.mantissaBits) - 1);
  int exponent = random.uniform(-4, 3);
  double value =
      std::ldexp(1.0 + std::ldexp(mantissa, -format.mantissaBits), exponent);
  return format.encode(random.next() % 2 ? -value : value);
}

void runPackedHalf(Session &session, Checker &checker) {
  constexpr uint32_t kCount = 96, kSlots = 16;
  Random random(0x5eed0001);
  std::vector<uint32_t> f16(3 * kCount), bf16(3 * kCount);
  for (uint32_t &word : f16)
    word = randomHalf(kFloat16, random) | randomHalf(kFloat16, random) << 16;
  for (uint32_t &word : bf16)
    word = randomHalf(kBFloat16, random) | randomHalf(kBFloat16, random) << 16;
  DeviceBuffer f16Buffer(f16), bf16Buffer(bf16);
  DeviceBuffer out(kCount * kSlots * sizeof(uint32_t));
  uint32_t count = kCount;
  launch(
      session.function("packed_half"), {blocksFor(kCount, 64)}, {64}, 0,
      {f16Buffer.parameter(), bf16Buffer.parameter(), &count, out.parameter()});
  std::vector<uint32_t> got = out.download<uint32_t>();

  const char *operations[8] = {"add.rn", "sub.rn", "mul.rn", "fma.rn",
                               "min",    "max",    "neg",    "abs"};
  struct Type {
    const char *suffix;
    const FloatFormat &format;
    const std::vector<uint32_t> &inputs;
    uint32_t firstSlot;
  };
  const Type types[] = {{".f16x2", kFloat16, f16, 0},
                        {".bf16x2", kBFloat16, bf16, 8}};
  for (const Type &type : types) {
    for (uint32_t i = 0; i < kCount; ++i) {
      for (uint32_t half = 0; half < 2; ++half) {
        auto part = [&](uint32_t word) { return word >> (16 * half) & 0xffff; };
        uint32_t aBits = part(type.inputs[3 * i]);
        uint32_t bBits = part(type.inputs[3 * i + 1]);
        uint32_t cBits = part(type.inputs[3 * i + 2]);
        double a = type.format.decode(aBits), b = type.format.decode(bBits);
        double c = type.format.decode(cBits);
        auto rn = [&](double exact) {
          return roundToFormat(exact, type.format, Rounding::NearestEven);
        };
        // Products and sums of these inputs are exact in double, so one
        // rounding gives the correctly rounded result (fma rounds once).
        const uint32_t expected[8] = {rn(a + b),
                                      rn(a - b),
                                      rn(a * b),
                                      rn(a * b + c),
                                      b < a ? bBits : aBits,
                                      b > a ? bBits : aBits,
                                      aBits ^ 0x8000,
                                      aBits & 0x7fff};
        for (uint32_t op = 0; op < 8; ++op)
          checker.equal(std::string(operations[op]) + type.suffix +
                            (half ? " upper" : " lower") + ", element",
                        i, part(got[i * kSlots + type.firstSlot + op]),
                        expected[op]);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// .approx math
//===----------------------------------------------------------------------===//

double ulpOf(double value) {
  int exponent = std::max(std::ilogb(std::fabs(value)), -126);
  return std::ldexp(1.0, exponent - 23);
}

void runApprox(Session &session, Checker &checker) {
  constexpr uint32_t kSlots = 7;
  std::vector<float> in = {-INFINITY, -1.0f,    -0.0f,
                           0.0f,      INFINITY, bitsToFloat(0x7FC00000u)};
  const size_t kSpecials = in.size();
  for (float x : {0.1f,    0.5f,        0.75f,
                  1.0f,    1.5f,        1.9f,
                  2.0f,    3.14159265f, 6.2f,
                  7.5f,    10.0f,       33.3f,
                  100.0f,  300.0f,      1000.0f,
                  1.0e5f,  1.0e-6f,     0.001f,
                  4.5e-3f, 123.456f,    9.5367431640625e-07f,
                  -0.3f,   -2.5f,       -6.2f,
                  -7.0f,   -50.0f,      -100.0f,
                  -300.0f})
    in.push_back(x);
  uint32_t count = in.size();
  DeviceBuffer input(in);
  DeviceBuffer out(count * kSlots * sizeof(float));
  launch(session.function("approx_math"), {blocksFor(count, 64)}, {64}, 0,
         {input.parameter(), &count, out.parameter()});
  std::vector<float> got = out.download<float>();

  // The special-value tables of the PTX ISA (ex2, rsqrt, sin, cos, lg2,
  // rcp, tanh) for -Inf, -1, -0, +0, +Inf, NaN.
  const float nan = NAN, inf = INFINITY;
  const float specials[6][kSlots] = {
      {0.0f, nan, nan, nan, nan, -0.0f, -1.0f},     // -Inf
      {0.5f, nan, 0, 0, nan, -1.0f, 0},             // -1 (only NaN slots)
      {1.0f, -inf, -0.0f, 1.0f, -inf, -inf, -0.0f}, // -0
      {1.0f, inf, 0.0f, 1.0f, -inf, inf, 0.0f},     // +0
      {inf, 0.0f, nan, nan, inf, 0.0f, 1.0f},       // +Inf
      {nan, nan, nan, nan, nan, nan, nan},          // NaN
  };
  const char *names[kSlots] = {"ex2", "rsqrt", "sin", "cos",
                               "lg2", "rcp",   "tanh"};
  for (size_t i = 0; i < count; ++i) {
    float x = in[i];
    char label[64];
    std::snprintf(label, sizeof(label), ".approx.f32(%.9g), input", x);
    for (uint32_t s = 0; s < kSlots; ++s) {
      float value = got[i * kSlots + s];
      std::string what = std::string(names[s]) + label;
      if (i < kSpecials && !(i == 1 && s != 1 && s != 4)) {
        float expected = specials[i][s];
        if (std::isnan(expected))
          checker.expect(what, i, std::isnan(value),
                         "got " + std::to_string(value) + ", expected NaN");
        else
          checker.equalBits(what, i, value, expected);
        continue;
      }
      double exact = 0, tolerance = 0;
      switch (s) {
      case 0:                   // 2 ulp from the correctly rounded result.
        if (std::fabs(x) > 126) // keep the result normal and finite
          continue;
        exact = std::exp2(static_cast<double>(x));
        tolerance = 2.5 * ulpOf(exact);
        break;
      case 1: // relative 2^-22.9 over the positive range.
        if (x <= 0)
          continue;
        exact = 1.0 / std::sqrt(static_cast<double>(x));
        tolerance = std::ldexp(std::fabs(exact), -22) * std::exp2(-0.9);
        break;
      case 2:
      case 3: // absolute 2^-20.5 in [-2pi, 2pi], 2^-14.7 in [-100pi, 100pi].
        if (std::fabs(x) > 100 * kPi)
          continue;
        exact = s == 2 ? std::sin(static_cast<double>(x))
                       : std::cos(static_cast<double>(x));
        tolerance =
            std::fabs(x) <= 2 * kPi ? std::exp2(-20.5) : std::exp2(-14.7);
        break;
      case 4: // absolute 2^-22 in (0.5, 2), relative 2^-22 elsewhere.
        if (x <= 0)
          continue;
        exact = std::log2(static_cast<double>(x));
        tolerance = (x > 0.5f && x < 2.0f) ? std::exp2(-22)
                                           : std::exp2(-22) * std::fabs(exact);
        break;
      case 5: // 1 ulp.
        exact = 1.0 / static_cast<double>(x);
        tolerance = ulpOf(exact);
        break;
      case 6: // relative 2^-11.
        exact = std::tanh(static_cast<double>(x));
        tolerance = std::exp2(-11) * std::fabs(exact);
        break;
      }
      checker.near(what, i, value, exact, tolerance);
    }
  }
}

// The edges of the ranges the PTX ISA states: subnormal results and inputs
// (kept without .ftz, flushed to sign-preserving zero with it), overflow to
// infinity and underflow to zero, tanh's saturation and small arguments.
// Where a value is stated, it is checked exactly; elsewhere within the
// instruction's documented bound of the exact value: ex2 2 ulp, rcp 1 ulp,
// rsqrt relative 2^-22.9, sqrt relative 2^-23, lg2 absolute 2^-22 in
// (0.5, 2) and relative 2^-22 elsewhere, tanh relative 2^-11.
void runApproxEdges(Session &session, Checker &checker) {
  constexpr uint32_t kSlots = 11;
  const float subnormal = std::ldexp(1.0f, -140);
  const std::vector<float> in = {
      -130.0f,                      // ex2: a subnormal result
      -126.0f,                      // ex2: the smallest normal
      -149.0f,                      // ex2: the smallest subnormal
      -200.0f,                      // ex2: underflow to +0
      127.5f,                       // ex2: finite, near the top
      200.0f,                       // ex2: overflow to +Inf
      subnormal,                    // a subnormal input
      -subnormal,                   // a negative subnormal input
      1.5f * std::ldexp(1.0f, 127), // rcp: a subnormal result
      std::ldexp(1.0f, -126),       // the smallest normal input
      1.0e-30f,                     // tanh: tanh(x) = x to f32 precision
      20.0f,                        // tanh: 1 to f32 precision
      -20.0f,                       // tanh: -1 to f32 precision
      0.75f,                        // lg2: inside (0.5, 2)
      3.0e38f,                      // near the largest finite value
  };
  uint32_t count = in.size();
  DeviceBuffer input(in);
  DeviceBuffer out(count * kSlots * sizeof(float));
  launch(session.function("approx_edges"), {1}, {32}, 0,
         {input.parameter(), &count, out.parameter()});
  std::vector<float> got = out.download<float>();
  const char *names[kSlots] = {"ex2",   "ex2.ftz",   "rcp",  "rcp.ftz",
                               "rsqrt", "rsqrt.ftz", "sqrt", "sqrt.ftz",
                               "lg2",   "lg2.ftz",   "tanh"};
  const float inf = INFINITY;
  for (uint32_t i = 0; i < count; ++i) {
    double x = in[i];
    bool isSubnormal = std::fpclassify(in[i]) == FP_SUBNORMAL;
    // The input as an .ftz instruction sees it.
    double flushed = isSubnormal ? std::copysign(0.0, x) : x;
    for (uint32_t s = 0; s < kSlots; ++s) {
      bool ftz = s == 1 || s == 3 || s == 5 || s == 7 || s == 9;
      double a = ftz ? flushed : x;
      double exact = 0, tolerance = 0;
      switch (s) {
      case 0:
      case 1:
        exact = std::exp2(a);
        tolerance = 2 * (exact < 0x1p-126 ? 0x1p-149 : ulpOf(exact));
        break;
      case 2:
      case 3:
        exact = 1.0 / a;
        tolerance =
            exact != 0 && std::fabs(exact) < 0x1p-126 ? 0x1p-149 : ulpOf(exact);
        break;
      case 4:
      case 5:
        exact = 1.0 / std::sqrt(a);
        tolerance = std::ldexp(std::fabs(exact), -22) * std::exp2(-0.9);
        break;
      case 6:
      case 7:
        exact = std::sqrt(a);
        tolerance = std::ldexp(std::fabs(exact), -23);
        break;
      case 8:
      case 9:
        exact = std::log2(a);
        tolerance = (a > 0.5 && a < 2.0) ? std::exp2(-22)
                                         : std::exp2(-22) * std::fabs(exact);
        break;
      case 10:
        exact = std::tanh(a);
        tolerance = std::exp2(-11) * std::fabs(exact);
        break;
      }
      // .ftz flushes results too.
      if (ftz && exact != 0 && std::fabs(exact) < 0x1p-126) {
        exact = std::copysign(0.0, exact);
        tolerance = 0;
      }
      float value = got[i * kSlots + s];
      char label[96];
      std::snprintf(label, sizeof(label), "%s.approx(%a), input", names[s],
                    in[i]);
      if (std::isnan(exact)) {
        checker.expect(label, i, std::isnan(value),
                       "got " + std::to_string(value) + ", expected NaN");
      } else if (std::isinf(exact) || std::fabs(exact) > 0x1.fffffep127) {
        checker.equalBits(label, i, value, exact > 0 ? inf : -inf);
      } else if (exact == 0) {
        checker.equalBits(label, i, value, static_cast<float>(exact));
      } else {
        checker.near(label, i, value, exact, tolerance);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Address spaces
//===----------------------------------------------------------------------===//

void runAddressSpaces(Session &session, Checker &checker) {
  DeviceBuffer flags(24 * sizeof(uint32_t));
  DeviceBuffer values(4 * sizeof(uint32_t));
  flags.fill(0xEE);
  launch(session.function("address_spaces"), {1}, {32}, 0,
         {flags.parameter(), values.parameter()});
  std::vector<uint32_t> f = flags.download<uint32_t>();
  std::vector<uint32_t> v = values.download<uint32_t>();
  const char *pointers[4] = {"global", "shared", "local", "const"};
  const char *spaces[5] = {"global", "shared", "shared::cluster", "local",
                           "const"};
  // A CTA's own shared memory lies in the cluster's shared window too.
  // kOpen: whether a global pointer is in the const window and a const
  // pointer in global memory is left open here: the ISA models const as a
  // window of the generic space, the hardware backs it with global memory.
  constexpr uint32_t kOpen = 2;
  const uint32_t expected[4][5] = {{1, 0, 0, 0, kOpen},
                                   {0, 1, 1, 0, 0},
                                   {0, 0, 0, 1, 0},
                                   {kOpen, 0, 0, 0, 1}};
  for (uint32_t p = 0; p < 4; ++p) {
    for (uint32_t s = 0; s < 5; ++s)
      if (expected[p][s] != kOpen)
        checker.equal(std::string("isspacep.") + spaces[s] + " of a " +
                          pointers[p] + " pointer",
                      5 * p + s, f[5 * p + s], expected[p][s]);
    checker.equal(std::string("cvta.to.") + pointers[p] + " then cvta." +
                      pointers[p] + " round trip",
                  20 + p, f[20 + p], 1);
  }
  checker.equal("st.shared via cvta.to.shared, generic load", 0, v[0],
                0x1234abcdu);
  checker.equal("generic store to local, ld.local via cvta.to.local", 1, v[1],
                0x5678ef01u);
  checker.equal("ld.const via cvta.to.const", 2, v[2], 0x600dc0deu);
  checker.equal("generic load of a __constant__ word", 3, v[3], 0x600dc0deu);
}

//===----------------------------------------------------------------------===//
// ldmatrix / stmatrix
//===----------------------------------------------------------------------===//

// The b16 pair a thread holds for an m8n8 fragment: lane l holds row l / 4,
// columns 2(l % 4) and 2(l % 4) + 1, or with .trans the transposed pair.
void fragmentElements(uint32_t lane, bool transposed, uint32_t (&row)[2],
                      uint32_t (&col)[2]) {
  for (uint32_t half = 0; half < 2; ++half) {
    uint32_t r = lane / 4, c = 2 * (lane % 4) + half;
    row[half] = transposed ? c : r;
    col[half] = transposed ? r : c;
  }
}

void runLdmatrix(Session &session, Checker &checker) {
  std::vector<uint16_t> matrices(4 * 64);
  for (uint32_t i = 0; i < matrices.size(); ++i)
    matrices[i] = static_cast<uint16_t>(0x1000 + i * 3);
  DeviceBuffer input(matrices);
  DeviceBuffer out(32 * 14 * sizeof(uint32_t));
  launch(session.function("ldmatrix_fragments"), {1}, {32}, 0,
         {input.parameter(), out.parameter()});
  std::vector<uint32_t> got = out.download<uint32_t>();

  struct Load {
    const char *what;
    uint32_t count;
    bool transposed;
  };
  const Load loads[] = {{".x1", 1, false},      {".x2", 2, false},
                        {".x4", 4, false},      {".x1.trans", 1, true},
                        {".x2.trans", 2, true}, {".x4.trans", 4, true}};
  for (uint32_t lane = 0; lane < 32; ++lane) {
    uint32_t slot = 0;
    for (const Load &load : loads) {
      uint32_t row[2], col[2];
      fragmentElements(lane, load.transposed, row, col);
      for (uint32_t m = 0; m < load.count; ++m, ++slot) {
        uint32_t expected = matrices[m * 64 + row[0] * 8 + col[0]] |
                            matrices[m * 64 + row[1] * 8 + col[1]] << 16;
        checker.equal(std::string("ldmatrix") + load.what + " matrix " +
                          std::to_string(m) + ", lane",
                      lane, got[lane * 14 + slot], expected);
      }
    }
  }
}

void runStmatrix(Session &session, Checker &checker) {
  DeviceBuffer out(6 * 256 * sizeof(uint16_t));
  launch(session.function("stmatrix_fragments"), {1}, {32}, 0,
         {out.parameter()});
  std::vector<uint16_t> got = out.download<uint16_t>();
  const char *names[6] = {".x1",       ".x2",       ".x4",
                          ".x1.trans", ".x2.trans", ".x4.trans"};
  const uint32_t counts[6] = {1, 2, 4, 1, 2, 4};
  for (uint32_t v = 0; v < 6; ++v) {
    bool transposed = v >= 3;
    std::vector<uint32_t> expected(256, 0xffff);
    for (uint32_t m = 0; m < counts[v]; ++m)
      for (uint32_t lane = 0; lane < 32; ++lane) {
        uint32_t row[2], col[2];
        fragmentElements(lane, transposed, row, col);
        for (uint32_t half = 0; half < 2; ++half)
          expected[m * 64 + row[half] * 8 + col[half]] =
              (v * 4 + m) * 64 + 2 * lane + half;
      }
    for (uint32_t i = 0; i < 256; ++i)
      checker.equal(std::string("stmatrix") + names[v] + " matrix " +
                        std::to_string(i / 64) + " element",
                    i % 64, got[v * 256 + i], expected[i]);
  }
}

//===----------------------------------------------------------------------===//
// setmaxnreg
//===----------------------------------------------------------------------===//

void runSetmaxnreg(Session &session, Checker &checker) {
  std::vector<uint32_t> seeds(256);
  for (uint32_t t = 0; t < 256; ++t)
    seeds[t] = t * 2654435761u;
  DeviceBuffer input(seeds);
  DeviceBuffer out(256 * sizeof(uint32_t));
  launch(session.function("setmaxnreg_warpgroups"), {1}, {256}, 0,
         {input.parameter(), out.parameter()});
  std::vector<uint32_t> got = out.download<uint32_t>();
  for (uint32_t t = 0; t < 256; ++t) {
    uint32_t x = seeds[t];
    for (uint32_t i = 0; i < 16 + 16 * (t / 128); ++i)
      x = (x * 1664525u + 1013904223u) ^ (x >> 13);
    checker.equal("hash after setmaxnreg, thread", t, got[t], x);
  }
}

} // namespace

int main(int argc, char **argv) {
  return runVariants("misc_warp", argc, argv,
                     {
                         {"shuffle", runShuffle},
                         {"vote_redux_elect", runVote},
                         {"named_barriers", runNamedBarriers},
                         {"divergence", runDivergence},
                         {"atomics", runAtomics},
                         {"cvt_rounding", runCvt},
                         {"packed_half", runPackedHalf},
                         {"approx_math", runApprox},
                         {"approx_edges", runApproxEdges},
                         {"address_spaces", runAddressSpaces},
                         {"ldmatrix", runLdmatrix},
                         {"stmatrix", runStmatrix},
                         {"setmaxnreg", runSetmaxnreg},
                     });
}
