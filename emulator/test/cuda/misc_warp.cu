//===- misc_warp.cu - Warp collectives, barriers, atomics, conversions ---===//
//
// Small kernels, one per topic, each writing what every thread observed; the
// host (misc_warp_host.cpp) recomputes it from the PTX ISA semantics. Lanes
// that do not take part in a collective write kSentinel.
//
//===----------------------------------------------------------------------===//

#include "DeviceSupport.cuh"

using namespace emutest;

namespace {

constexpr uint32_t kFullMask = 0xffffffffu;
constexpr uint32_t kSentinel = 0xdeadbeefu;

__device__ uint32_t laneId() {
  uint32_t lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

//===----------------------------------------------------------------------===//
// shfl.sync
//===----------------------------------------------------------------------===//

#define EMU_SHUFFLE(NAME, MODE)                                                \
  __device__ uint32_t NAME(uint32_t value, uint32_t b, uint32_t c,             \
                           uint32_t mask, uint32_t &valid) {                   \
    uint32_t result;                                                           \
    asm volatile("{\n\t.reg .pred p;\n\t"                                      \
                 "shfl.sync." MODE ".b32 %0|p, %2, %3, %4, %5;\n\t"            \
                 "selp.u32 %1, 1, 0, p;\n\t}"                                  \
                 : "=r"(result), "=r"(valid)                                   \
                 : "r"(value), "r"(b), "r"(c), "r"(mask));                     \
    return result;                                                             \
  }

EMU_SHUFFLE(shuffleUp, "up")
EMU_SHUFFLE(shuffleDown, "down")
EMU_SHUFFLE(shuffleBfly, "bfly")
EMU_SHUFFLE(shuffleIdx, "idx")

//===----------------------------------------------------------------------===//
// vote, redux, elect
//===----------------------------------------------------------------------===//

#define EMU_VOTE_PREDICATE(NAME, MODE)                                         \
  __device__ uint32_t NAME(bool predicate, uint32_t mask) {                    \
    uint32_t result;                                                           \
    asm volatile("{\n\t.reg .pred p, q;\n\t"                                   \
                 "setp.ne.u32 p, %1, 0;\n\t"                                   \
                 "vote.sync." MODE ".pred q, p, %2;\n\t"                       \
                 "selp.u32 %0, 1, 0, q;\n\t}"                                  \
                 : "=r"(result)                                                \
                 : "r"(static_cast<uint32_t>(predicate)), "r"(mask));          \
    return result;                                                             \
  }

EMU_VOTE_PREDICATE(voteAll, "all")
EMU_VOTE_PREDICATE(voteAny, "any")
EMU_VOTE_PREDICATE(voteUni, "uni")

__device__ uint32_t voteBallot(bool predicate, uint32_t mask) {
  uint32_t result;
  asm volatile("{\n\t.reg .pred p;\n\t"
               "setp.ne.u32 p, %1, 0;\n\t"
               "vote.sync.ballot.b32 %0, p, %2;\n\t}"
               : "=r"(result)
               : "r"(static_cast<uint32_t>(predicate)), "r"(mask));
  return result;
}

#define EMU_REDUX(NAME, OPERATION)                                             \
  __device__ uint32_t NAME(uint32_t value, uint32_t mask) {                    \
    uint32_t result;                                                           \
    asm volatile("redux.sync." OPERATION " %0, %1, %2;"                        \
                 : "=r"(result)                                                \
                 : "r"(value), "r"(mask));                                     \
    return result;                                                             \
  }

EMU_REDUX(reduxAddS32, "add.s32")
EMU_REDUX(reduxMinS32, "min.s32")
EMU_REDUX(reduxMaxU32, "max.u32")
EMU_REDUX(reduxAnd, "and.b32")
EMU_REDUX(reduxOr, "or.b32")
EMU_REDUX(reduxXor, "xor.b32")
EMU_REDUX(reduxAddU32, "add.u32")

__device__ uint32_t elect(uint32_t mask, uint32_t &isLeader) {
  uint32_t leader;
  asm volatile("{\n\t.reg .pred p;\n\t"
               "elect.sync %0|p, %2;\n\t"
               "selp.u32 %1, 1, 0, p;\n\t}"
               : "=r"(leader), "=r"(isLeader)
               : "r"(mask));
  return leader;
}

//===----------------------------------------------------------------------===//
// Named barriers
//===----------------------------------------------------------------------===//

__device__ void barrierSync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

__device__ void barrierArrive(uint32_t id, uint32_t threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

//===----------------------------------------------------------------------===//
// Atomics
//===----------------------------------------------------------------------===//

#define EMU_GLOBAL_ATOM(NAME, INSTRUCTION)                                     \
  __device__ uint32_t NAME(uint32_t *address, uint32_t operand) {              \
    uint32_t old;                                                              \
    asm volatile(INSTRUCTION " %0, [%1], %2;"                                  \
                 : "=r"(old)                                                   \
                 : "l"(globalAddress(address)), "r"(operand)                   \
                 : "memory");                                                  \
    return old;                                                                \
  }

EMU_GLOBAL_ATOM(atomAdd, "atom.global.add.u32")
EMU_GLOBAL_ATOM(atomMinU32, "atom.global.min.u32")
EMU_GLOBAL_ATOM(atomMaxS32, "atom.global.max.s32")
EMU_GLOBAL_ATOM(atomAnd, "atom.global.and.b32")
EMU_GLOBAL_ATOM(atomOr, "atom.global.or.b32")
EMU_GLOBAL_ATOM(atomXor, "atom.global.xor.b32")
EMU_GLOBAL_ATOM(atomInc, "atom.global.inc.u32")
EMU_GLOBAL_ATOM(atomDec, "atom.global.dec.u32")
EMU_GLOBAL_ATOM(atomExch, "atom.global.exch.b32")

__device__ uint32_t atomCas(uint32_t *address, uint32_t compare,
                            uint32_t value) {
  uint32_t old;
  asm volatile("atom.global.cas.b32 %0, [%1], %2, %3;"
               : "=r"(old)
               : "l"(globalAddress(address)), "r"(compare), "r"(value)
               : "memory");
  return old;
}

__device__ void redAddU64(unsigned long long *address, uint64_t operand) {
  asm volatile("red.global.add.u64 [%0], %1;" ::"l"(globalAddress(address)),
               "l"(operand)
               : "memory");
}

__device__ float atomAddF32(float *address, float operand) {
  float old;
  asm volatile("atom.global.add.f32 %0, [%1], %2;"
               : "=f"(old)
               : "l"(globalAddress(address)), "f"(operand)
               : "memory");
  return old;
}

__device__ void redAddU32(uint32_t *address, uint32_t operand) {
  asm volatile("red.global.add.u32 [%0], %1;" ::"l"(globalAddress(address)),
               "r"(operand)
               : "memory");
}

__device__ void redAddF32(float *address, float operand) {
  asm volatile("red.global.add.f32 [%0], %1;" ::"l"(globalAddress(address)),
               "f"(operand)
               : "memory");
}

__device__ uint32_t atomSharedCas(uint32_t address, uint32_t compare,
                                  uint32_t value) {
  uint32_t old;
  asm volatile("atom.shared.cas.b32 %0, [%1], %2, %3;"
               : "=r"(old)
               : "r"(address), "r"(compare), "r"(value)
               : "memory");
  return old;
}

__device__ uint32_t atomSharedAdd(uint32_t address, uint32_t operand) {
  uint32_t old;
  asm volatile("atom.shared.add.u32 %0, [%1], %2;"
               : "=r"(old)
               : "r"(address), "r"(operand)
               : "memory");
  return old;
}

//===----------------------------------------------------------------------===//
// Conversions and packed arithmetic
//===----------------------------------------------------------------------===//

#define EMU_CVT_TO_16(NAME, INSTRUCTION)                                       \
  __device__ uint32_t NAME(float a) {                                          \
    uint16_t d;                                                                \
    asm(INSTRUCTION " %0, %1;" : "=h"(d) : "f"(a));                            \
    return d;                                                                  \
  }

EMU_CVT_TO_16(bf16Rn, "cvt.rn.bf16.f32")
EMU_CVT_TO_16(bf16Rz, "cvt.rz.bf16.f32")
EMU_CVT_TO_16(bf16Rm, "cvt.rm.bf16.f32")
EMU_CVT_TO_16(bf16Rp, "cvt.rp.bf16.f32")
EMU_CVT_TO_16(f16Rn, "cvt.rn.f16.f32")
EMU_CVT_TO_16(f16Rz, "cvt.rz.f16.f32")
EMU_CVT_TO_16(f16Rm, "cvt.rm.f16.f32")
EMU_CVT_TO_16(f16Rp, "cvt.rp.f16.f32")
EMU_CVT_TO_16(f16RnSatfinite, "cvt.rn.satfinite.f16.f32")
EMU_CVT_TO_16(bf16RnRelu, "cvt.rn.relu.bf16.f32")

#define EMU_CVT_PAIR_TO_16(NAME, INSTRUCTION)                                  \
  __device__ uint32_t NAME(float a, float b) {                                 \
    uint16_t d;                                                                \
    asm(INSTRUCTION " %0, %1, %2;" : "=h"(d) : "f"(a), "f"(b));                \
    return d;                                                                  \
  }

EMU_CVT_PAIR_TO_16(e4m3x2, "cvt.rn.satfinite.e4m3x2.f32")
EMU_CVT_PAIR_TO_16(e5m2x2, "cvt.rn.satfinite.e5m2x2.f32")

#define EMU_CVT_PAIR_TO_32(NAME, INSTRUCTION)                                  \
  __device__ uint32_t NAME(float a, float b) {                                 \
    uint32_t d;                                                                \
    asm(INSTRUCTION " %0, %1, %2;" : "=r"(d) : "f"(a), "f"(b));                \
    return d;                                                                  \
  }

EMU_CVT_PAIR_TO_32(f16x2Rn, "cvt.rn.f16x2.f32")
EMU_CVT_PAIR_TO_32(bf16x2Rn, "cvt.rn.bf16x2.f32")

#define EMU_CVT_TO_S32(NAME, INSTRUCTION)                                      \
  __device__ uint32_t NAME(float a) {                                          \
    uint32_t d;                                                                \
    asm(INSTRUCTION " %0, %1;" : "=r"(d) : "f"(a));                            \
    return d;                                                                  \
  }

EMU_CVT_TO_S32(s32Rzi, "cvt.rzi.s32.f32")
EMU_CVT_TO_S32(s32Rni, "cvt.rni.s32.f32")
EMU_CVT_TO_S32(s32Rmi, "cvt.rmi.s32.f32")
EMU_CVT_TO_S32(s32Rpi, "cvt.rpi.s32.f32")

#define EMU_PACKED_BINARY(NAME, INSTRUCTION)                                   \
  __device__ uint32_t NAME(uint32_t a, uint32_t b) {                           \
    uint32_t d;                                                                \
    asm(INSTRUCTION " %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));                \
    return d;                                                                  \
  }

#define EMU_PACKED_UNARY(NAME, INSTRUCTION)                                    \
  __device__ uint32_t NAME(uint32_t a) {                                       \
    uint32_t d;                                                                \
    asm(INSTRUCTION " %0, %1;" : "=r"(d) : "r"(a));                            \
    return d;                                                                  \
  }

#define EMU_PACKED_FMA(NAME, INSTRUCTION)                                      \
  __device__ uint32_t NAME(uint32_t a, uint32_t b, uint32_t c) {               \
    uint32_t d;                                                                \
    asm(INSTRUCTION " %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));    \
    return d;                                                                  \
  }

EMU_PACKED_BINARY(addF16x2, "add.rn.f16x2")
EMU_PACKED_BINARY(subF16x2, "sub.rn.f16x2")
EMU_PACKED_BINARY(mulF16x2, "mul.rn.f16x2")
EMU_PACKED_FMA(fmaF16x2, "fma.rn.f16x2")
EMU_PACKED_BINARY(minF16x2, "min.f16x2")
EMU_PACKED_BINARY(maxF16x2, "max.f16x2")
EMU_PACKED_UNARY(negF16x2, "neg.f16x2")
EMU_PACKED_UNARY(absF16x2, "abs.f16x2")
EMU_PACKED_BINARY(addBf16x2, "add.rn.bf16x2")
EMU_PACKED_BINARY(subBf16x2, "sub.rn.bf16x2")
EMU_PACKED_BINARY(mulBf16x2, "mul.rn.bf16x2")
EMU_PACKED_FMA(fmaBf16x2, "fma.rn.bf16x2")
EMU_PACKED_BINARY(minBf16x2, "min.bf16x2")
EMU_PACKED_BINARY(maxBf16x2, "max.bf16x2")
EMU_PACKED_UNARY(negBf16x2, "neg.bf16x2")
EMU_PACKED_UNARY(absBf16x2, "abs.bf16x2")

#define EMU_APPROX(NAME, INSTRUCTION)                                          \
  __device__ float NAME(float a) {                                             \
    float d;                                                                   \
    asm(INSTRUCTION " %0, %1;" : "=f"(d) : "f"(a));                            \
    return d;                                                                  \
  }

EMU_APPROX(ex2Approx, "ex2.approx.f32")
EMU_APPROX(rsqrtApprox, "rsqrt.approx.f32")
EMU_APPROX(sinApprox, "sin.approx.f32")
EMU_APPROX(cosApprox, "cos.approx.f32")
EMU_APPROX(lg2Approx, "lg2.approx.f32")
EMU_APPROX(rcpApprox, "rcp.approx.f32")
EMU_APPROX(tanhApprox, "tanh.approx.f32")
EMU_APPROX(ex2ApproxFtz, "ex2.approx.ftz.f32")
EMU_APPROX(rcpApproxFtz, "rcp.approx.ftz.f32")
EMU_APPROX(rsqrtApproxFtz, "rsqrt.approx.ftz.f32")
EMU_APPROX(sqrtApprox, "sqrt.approx.f32")
EMU_APPROX(sqrtApproxFtz, "sqrt.approx.ftz.f32")
EMU_APPROX(lg2ApproxFtz, "lg2.approx.ftz.f32")

//===----------------------------------------------------------------------===//
// Address spaces
//===----------------------------------------------------------------------===//

#define EMU_ISSPACEP(NAME, SPACE)                                              \
  __device__ uint32_t NAME(const void *pointer) {                              \
    uint32_t result;                                                           \
    asm volatile("{\n\t.reg .pred p;\n\t"                                      \
                 "isspacep." SPACE " p, %1;\n\t"                               \
                 "selp.u32 %0, 1, 0, p;\n\t}"                                  \
                 : "=r"(result)                                                \
                 : "l"(pointer));                                              \
    return result;                                                             \
  }

EMU_ISSPACEP(isGlobal, "global")
EMU_ISSPACEP(isShared, "shared")
EMU_ISSPACEP(isSharedCluster, "shared::cluster")
EMU_ISSPACEP(isLocal, "local")
EMU_ISSPACEP(isConst, "const")

// cvta.to.<space> then cvta.<space>: the generic address comes back.
#define EMU_CVTA_ROUND_TRIP(NAME, SPACE)                                       \
  __device__ uint32_t NAME(const void *pointer) {                              \
    uint64_t back;                                                             \
    asm volatile("{\n\t.reg .u64 a;\n\t"                                       \
                 "cvta.to." SPACE ".u64 a, %1;\n\t"                            \
                 "cvta." SPACE ".u64 %0, a;\n\t}"                              \
                 : "=l"(back)                                                  \
                 : "l"(pointer));                                              \
    return back == reinterpret_cast<uint64_t>(pointer);                        \
  }

EMU_CVTA_ROUND_TRIP(roundTripsGlobal, "global")
EMU_CVTA_ROUND_TRIP(roundTripsShared, "shared")
EMU_CVTA_ROUND_TRIP(roundTripsLocal, "local")
EMU_CVTA_ROUND_TRIP(roundTripsConst, "const")

__constant__ uint32_t constantWord = 0x600dc0deu;

} // namespace

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

// 64 threads. out[(thread * 10 + case) * 2 + {0, 1}] = {value, valid}, with
// the cases of misc_warp_host.cpp's kShuffleCases, in that order.
extern "C" __global__ void warp_shuffle(uint32_t *out) {
  uint32_t tid = threadIdx.x, lane = laneId(), warp = tid / 32;
  uint32_t value = warp * 100 + lane * 3 + 1;
  uint32_t results[10][2];
  results[0][0] = shuffleBfly(value, 1, 0x1f, kFullMask, results[0][1]);
  results[1][0] = shuffleBfly(value, 16, 0x1f, kFullMask, results[1][1]);
  results[2][0] = shuffleUp(value, 3, 0, kFullMask, results[2][1]);
  // Segments of 8 lanes: c = ((32 - 8) << 8) | 0.
  results[3][0] = shuffleUp(value, 2, 0x1800, kFullMask, results[3][1]);
  results[4][0] = shuffleDown(value, 5, 0x1f, kFullMask, results[4][1]);
  // Segments of 16 lanes: c = ((32 - 16) << 8) | 0x1f.
  results[5][0] = shuffleDown(value, 1, 0x101f, kFullMask, results[5][1]);
  results[6][0] =
      shuffleIdx(value, (lane * 7) % 32, 0x1f, kFullMask, results[6][1]);
  // Lane 2 of each segment of 4: c = ((32 - 4) << 8) | 0x1f.
  results[7][0] = shuffleIdx(value, 2, 0x1c1f, kFullMask, results[7][1]);
  results[8][0] = results[8][1] = kSentinel;
  if (lane < 16)
    results[8][0] = shuffleBfly(value, 4, 0x1f, 0x0000ffffu, results[8][1]);
  results[9][0] = results[9][1] = kSentinel;
  if (lane % 2 == 0)
    results[9][0] =
        shuffleIdx(value, (lane + 2) % 32, 0x1f, 0x55555555u, results[9][1]);
  for (uint32_t c = 0; c < 10; ++c) {
    out[(tid * 10 + c) * 2] = results[c][0];
    out[(tid * 10 + c) * 2 + 1] = results[c][1];
  }
}

// 64 threads. out[thread * 23 + slot], slots as in misc_warp_host.cpp's
// runVote().
extern "C" __global__ void warp_vote(uint32_t *out) {
  uint32_t tid = threadIdx.x, lane = laneId(), warp = tid / 32;
  constexpr uint32_t kThirds = 0x49249249u; // lanes 0, 3, 6, ...
  constexpr uint32_t kSlots = 23;
  uint32_t r[kSlots];
  for (uint32_t &slot : r)
    slot = kSentinel;
  r[0] = voteAll(lane < 31, kFullMask);
  r[1] = voteAll(true, kFullMask);
  r[2] = voteAny(lane == 7, kFullMask);
  r[3] = voteAny(lane > 100, kFullMask);
  r[4] = voteUni(warp == 0, kFullMask);
  r[5] = voteUni(lane % 2 == 0, kFullMask);
  r[6] = voteBallot(lane % 3 == 0, kFullMask);
  if (lane % 3 != 0) {
    r[7] = voteBallot(lane % 5 == 0, ~kThirds);
    r[8] = voteAll(lane != 4, ~kThirds);
    r[9] = voteAny(lane == 4, ~kThirds);
  }
  r[10] = reduxAddS32(lane - 10, kFullMask);
  r[11] = reduxMinS32((lane * 7) % 13 - 6, kFullMask);
  r[12] = reduxMaxU32((lane * lane) ^ 5, kFullMask);
  r[13] = reduxAnd(0xff00ff00u | lane | (lane << 4), kFullMask);
  r[14] = reduxOr(1u << (lane % 8), kFullMask);
  r[15] = reduxXor(lane * 0x01010101u + warp, kFullMask);
  if (lane < 16)
    r[16] = reduxAddU32(lane, 0x0000ffffu);
  r[17] = elect(kFullMask, r[18]);
  if (lane >= 8 && lane < 24) {
    r[19] = elect(0x00ffff00u, r[20]);
    // The same mask elects the same leader again.
    r[21] = elect(0x00ffff00u, r[22]);
  }
  for (uint32_t slot = 0; slot < kSlots; ++slot)
    out[tid * kSlots + slot] = r[slot];
}

// 256 threads in two halves of 128 that synchronise on their own barriers:
//   groupRead[t]: stage[] of the thread 37 places further in t's half, after
//                 bar.sync (1 + half), 128.
//   consumed[t]:  in each half, warps 2-3 read what warps 0-1 wrote before
//                 bar.arrive (3 + half), 128; warps 0-1 write kSentinel.
extern "C" __global__ void __launch_bounds__(256)
    named_barriers(uint32_t *groupRead, uint32_t *consumed) {
  __shared__ uint32_t stage[256], handoff[256];
  uint32_t tid = threadIdx.x, half = tid / 128, inHalf = tid % 128;
  stage[tid] = tid * 5 + 1;
  barrierSync(1 + half, 128);
  groupRead[tid] = stage[half * 128 + (inHalf + 37) % 128];

  if (inHalf < 64) {
    handoff[tid] = tid * 9 + 2;
    barrierArrive(3 + half, 128);
    consumed[tid] = kSentinel;
  } else {
    barrierSync(3 + half, 128);
    consumed[tid] = handoff[tid - 64];
  }
}

// 64 threads; per thread 6 words (see misc_warp_host.cpp's runDivergence()):
// Collatz steps from 32 * warp + lane + 1, a value from nested branches,
// the iterations of a loop left by break, lane 31's steps read by a
// full-warp shuffle after reconvergence, a full-warp ballot of the
// iteration parity, and a shuffle among lanes 0-15 inside a branch that
// synchronises them with bar.warp.sync.
extern "C" __global__ void divergence(uint32_t *out) {
  uint32_t tid = threadIdx.x, lane = laneId(), warp = tid / 32;
  uint32_t n = 32 * warp + lane + 1, steps = 0;
  while (n != 1) {
    n = n % 2 ? 3 * n + 1 : n / 2;
    ++steps;
  }
  uint32_t path;
  if (lane % 4 == 0) {
    path = steps * 2;
  } else if (lane % 4 == 1) {
    path = 0;
    for (uint32_t i = 0; i < lane; ++i)
      path += i;
  } else if (lane > 16) {
    path = steps ^ 0x55;
  } else {
    path = 1000 - lane;
  }
  uint32_t iterations = 0;
  for (uint32_t i = 0; i < 100; ++i) {
    if (i * i > lane * 3)
      break;
    ++iterations;
  }
  uint32_t valid;
  uint32_t fromLast = shuffleIdx(steps, 31, 0x1f, kFullMask, valid);
  uint32_t parity = voteBallot(iterations % 2 == 1, kFullMask);
  uint32_t inner = kSentinel;
  if (lane < 16) {
    __syncwarp(0x0000ffffu);
    inner = shuffleIdx(path, 15 - lane, 0x1f, 0x0000ffffu, valid);
  }
  uint32_t *o = out + tid * 6;
  o[0] = steps;
  o[1] = path;
  o[2] = iterations;
  o[3] = fromLast;
  o[4] = parity;
  o[5] = inner;
}

// Word indices of the `words` argument of `atomics`.
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

// 4 blocks x 128 threads; g = global thread index. Each thread applies one
// operation of each kind; returned old values go to the per-thread arrays.
extern "C" __global__ void __launch_bounds__(128)
    atomics(uint32_t *words, unsigned long long *wide, float *floats,
            uint32_t *tickets, uint32_t *exchanged, uint32_t *compared,
            float *floatOlds, uint32_t *sharedTickets, uint32_t *sharedAdded,
            uint32_t *sharedFinal) {
  __shared__ uint32_t casCounter, addCounter;
  uint32_t g = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0)
    casCounter = addCounter = 0;
  __syncthreads();

  tickets[g] = atomAdd(&words[kCounter], 1);
  redAddU32(&words[kRedSum], g);
  atomMinU32(&words[kMin], (g * 7919) % 1000 + 5);
  atomMaxS32(&words[kMax],
             static_cast<uint32_t>((static_cast<int32_t>(g) - 300) * 3));
  atomAnd(&words[kAnd], ~(1u << (g % 32)));
  atomOr(&words[kOr], 1u << (g % 8));
  atomXor(&words[kXor], g * 3);
  atomInc(&words[kInc], 99);
  atomDec(&words[kDec], 1000);
  exchanged[g] = atomExch(&words[kExch], g + 1);
  compared[g] = atomCas(&words[kCas], 0, g + 1);
  redAddU64(wide, static_cast<uint64_t>(g) << 33);
  floatOlds[g] = atomAddF32(&floats[0], (g % 8) * 0.5f);
  redAddF32(&floats[1], 1.0f);

  // Increment by compare-and-swap until this thread's swap wins.
  uint32_t counter = sharedAddress(&casCounter);
  uint32_t expected, seen = *static_cast<volatile uint32_t *>(&casCounter);
  do {
    expected = seen;
    seen = atomSharedCas(counter, expected, expected + 1);
  } while (seen != expected);
  sharedTickets[g] = expected;
  sharedAdded[g] = atomSharedAdd(sharedAddress(&addCounter), 2);
  __syncthreads();
  if (threadIdx.x == 0) {
    sharedFinal[2 * blockIdx.x] = casCounter;
    sharedFinal[2 * blockIdx.x + 1] = addCounter;
  }
}

// One thread per input; a = in[i], b = in[(i + 1) % count];
// out[i * 18 + slot], slots as in misc_warp_host.cpp's runCvt().
extern "C" __global__ void cvt_rounding(const float *in, uint32_t count,
                                        uint32_t *out) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  float a = in[i], b = in[(i + 1) % count];
  uint32_t *o = out + i * 18;
  o[0] = bf16Rn(a);
  o[1] = bf16Rz(a);
  o[2] = bf16Rm(a);
  o[3] = bf16Rp(a);
  o[4] = f16Rn(a);
  o[5] = f16Rz(a);
  o[6] = f16Rm(a);
  o[7] = f16Rp(a);
  o[8] = f16RnSatfinite(a);
  o[9] = bf16RnRelu(a);
  o[10] = e4m3x2(a, b);
  o[11] = e5m2x2(a, b);
  o[12] = f16x2Rn(a, b);
  o[13] = bf16x2Rn(a, b);
  o[14] = s32Rni(a);
  o[15] = s32Rzi(a);
  o[16] = s32Rmi(a);
  o[17] = s32Rpi(a);
}

// One thread per element; f16[3i..3i+2] and bf16[3i..3i+2] are (a, b, c) as
// packed pairs. out[i * 16 + slot]: add, sub, mul, fma, min, max, neg, abs
// on f16x2 (slots 0-7), then on bf16x2 (slots 8-15).
extern "C" __global__ void packed_half(const uint32_t *f16,
                                       const uint32_t *bf16, uint32_t count,
                                       uint32_t *out) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  uint32_t a = f16[3 * i], b = f16[3 * i + 1], c = f16[3 * i + 2];
  uint32_t *o = out + i * 16;
  o[0] = addF16x2(a, b);
  o[1] = subF16x2(a, b);
  o[2] = mulF16x2(a, b);
  o[3] = fmaF16x2(a, b, c);
  o[4] = minF16x2(a, b);
  o[5] = maxF16x2(a, b);
  o[6] = negF16x2(a);
  o[7] = absF16x2(a);
  a = bf16[3 * i], b = bf16[3 * i + 1], c = bf16[3 * i + 2];
  o[8] = addBf16x2(a, b);
  o[9] = subBf16x2(a, b);
  o[10] = mulBf16x2(a, b);
  o[11] = fmaBf16x2(a, b, c);
  o[12] = minBf16x2(a, b);
  o[13] = maxBf16x2(a, b);
  o[14] = negBf16x2(a);
  o[15] = absBf16x2(a);
}

// One thread per input; out[i * 7 + slot]: ex2, rsqrt, sin, cos, lg2, rcp,
// tanh (all .approx.f32).
extern "C" __global__ void approx_math(const float *in, uint32_t count,
                                       float *out) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  float x = in[i];
  float *o = out + i * 7;
  o[0] = ex2Approx(x);
  o[1] = rsqrtApprox(x);
  o[2] = sinApprox(x);
  o[3] = cosApprox(x);
  o[4] = lg2Approx(x);
  o[5] = rcpApprox(x);
  o[6] = tanhApprox(x);
}

// The .approx instructions at the edges of their ranges, with and without
// .ftz: out[i * 11 + s] for slot s = ex2, ex2.ftz, rcp, rcp.ftz, rsqrt,
// rsqrt.ftz, sqrt, sqrt.ftz, lg2, lg2.ftz, tanh.
extern "C" __global__ void approx_edges(const float *in, uint32_t count,
                                        float *out) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count)
    return;
  float x = in[i];
  float *o = out + i * 11;
  o[0] = ex2Approx(x);
  o[1] = ex2ApproxFtz(x);
  o[2] = rcpApprox(x);
  o[3] = rcpApproxFtz(x);
  o[4] = rsqrtApprox(x);
  o[5] = rsqrtApproxFtz(x);
  o[6] = sqrtApprox(x);
  o[7] = sqrtApproxFtz(x);
  o[8] = lg2Approx(x);
  o[9] = lg2ApproxFtz(x);
  o[10] = tanhApprox(x);
}

// One warp. flags[5 * p + s]: isspacep of pointer p (global, shared, local,
// const) in space s (global, shared, shared::cluster, local, const);
// flags[20 + p]: cvta.to then cvta back returns pointer p.
// values: [0] a word stored with st.shared at cvta.to.shared(p), loaded
// generically; [1] a word stored generically into local memory, loaded with
// ld.local at cvta.to.local(p); [2] the __constant__ word through ld.const
// at cvta.to.const(p); [3] the same word loaded generically.
extern "C" __global__ void address_spaces(uint32_t *flags, uint32_t *values) {
  __shared__ uint32_t sharedWord;
  volatile uint32_t localWords[4];
  uint32_t lane = laneId();
  volatile uint32_t *local = &localWords[lane % 4];
  const void *pointers[4] = {flags, &sharedWord, const_cast<uint32_t *>(local),
                             &constantWord};
  uint32_t f[24];
  for (uint32_t p = 0; p < 4; ++p) {
    f[5 * p] = isGlobal(pointers[p]);
    f[5 * p + 1] = isShared(pointers[p]);
    f[5 * p + 2] = isSharedCluster(pointers[p]);
    f[5 * p + 3] = isLocal(pointers[p]);
    f[5 * p + 4] = isConst(pointers[p]);
  }
  f[20] = roundTripsGlobal(pointers[0]);
  f[21] = roundTripsShared(pointers[1]);
  f[22] = roundTripsLocal(pointers[2]);
  f[23] = roundTripsConst(pointers[3]);

  if (lane == 0)
    asm volatile("{\n\t.reg .u64 a;\n\t"
                 "cvta.to.shared.u64 a, %0;\n\t"
                 "st.shared.u32 [a], %1;\n\t}" ::"l"(&sharedWord),
                 "r"(0x1234abcdu)
                 : "memory");
  __syncwarp();
  uint32_t sharedValue = *static_cast<volatile uint32_t *>(&sharedWord);

  *local = 0x5678ef01u + lane;
  uint32_t localValue, constValue;
  asm volatile("{\n\t.reg .u64 a;\n\t"
               "cvta.to.local.u64 a, %1;\n\t"
               "ld.local.u32 %0, [a];\n\t}"
               : "=r"(localValue)
               : "l"(local)
               : "memory");
  asm volatile("{\n\t.reg .u64 a;\n\t"
               "cvta.to.const.u64 a, %1;\n\t"
               "ld.const.u32 %0, [a];\n\t}"
               : "=r"(constValue)
               : "l"(&constantWord));
  if (lane == 0) {
    for (uint32_t i = 0; i < 24; ++i)
      flags[i] = f[i];
    values[0] = sharedValue;
    values[1] = localValue;
    values[2] = constValue;
    values[3] = *static_cast<const volatile uint32_t *>(&constantWord);
  }
}

namespace {
// Matrix rows are 24 elements (48 bytes) apart: 16-byte aligned, not dense.
constexpr uint32_t kRowPitch = 24;
} // namespace

// One warp; `matrices` holds four row-major 8x8 b16 matrices. Lane l gives
// the address of row l % 8 of matrix l / 8. out[lane * 14 + j] holds the
// registers of ldmatrix .x1, .x2, .x4, .x1.trans, .x2.trans, .x4.trans, in
// that order (1 + 2 + 4 + 1 + 2 + 4 registers).
extern "C" __global__ void ldmatrix_fragments(const uint16_t *matrices,
                                              uint32_t *out) {
  __shared__ __align__(16) uint16_t tile[32 * kRowPitch];
  uint32_t lane = laneId();
  for (uint32_t i = lane; i < 4 * 64; i += 32)
    tile[(i / 8) * kRowPitch + i % 8] = matrices[i];
  __syncwarp();
  uint32_t row = sharedAddress(&tile[lane * kRowPitch]);
  uint32_t r[14];
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];"
               : "=r"(r[0])
               : "r"(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[1]), "=r"(r[2])
               : "r"(row));
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
      : "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6])
      : "r"(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];"
               : "=r"(r[7])
               : "r"(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
               : "=r"(r[8]), "=r"(r[9])
               : "r"(row));
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
      : "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13])
      : "r"(row));
  for (uint32_t j = 0; j < 14; ++j)
    out[lane * 14 + j] = r[j];
}

// One warp. For each variant v (.x1, .x2, .x4, .x1.trans, .x2.trans,
// .x4.trans), shared memory is cleared to 0xffff, register i of lane l
// holds the pair ((v * 4 + i) * 64 + 2l, ... + 1) (low half first), lane l
// gives the address of row l % 8 of matrix l / 8, stmatrix stores, and the
// four matrices are copied to out[v * 256 + matrix * 64 + row * 8 + col].
extern "C" __global__ void stmatrix_fragments(uint16_t *out) {
  __shared__ __align__(16) uint16_t tile[32 * kRowPitch];
  uint32_t lane = laneId();
  uint32_t row = sharedAddress(&tile[lane * kRowPitch]);
  for (uint32_t v = 0; v < 6; ++v) {
    for (uint32_t i = lane; i < 32 * kRowPitch; i += 32)
      tile[i] = 0xffff;
    __syncwarp();
    uint32_t r[4];
    for (uint32_t i = 0; i < 4; ++i) {
      uint32_t first = (v * 4 + i) * 64 + 2 * lane;
      r[i] = first | (first + 1) << 16;
    }
    switch (v) {
    case 0:
      asm volatile(
          "stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" ::"r"(row),
          "r"(r[0])
          : "memory");
      break;
    case 1:
      asm volatile(
          "stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" ::"r"(row),
          "r"(r[0]), "r"(r[1])
          : "memory");
      break;
    case 2:
      asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, "
                   "%3, %4};" ::"r"(row),
                   "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                   : "memory");
      break;
    case 3:
      asm volatile(
          "stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%0], {%1};" ::"r"(
              row),
          "r"(r[0])
          : "memory");
      break;
    case 4:
      asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, "
                   "%2};" ::"r"(row),
                   "r"(r[0]), "r"(r[1])
                   : "memory");
      break;
    default:
      asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, "
                   "%2, %3, %4};" ::"r"(row),
                   "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                   : "memory");
      break;
    }
    __syncwarp();
    for (uint32_t i = lane; i < 4 * 64; i += 32)
      out[v * 256 + i] = tile[(i / 8) * kRowPitch + i % 8];
    __syncwarp();
  }
}

// 256 threads, two warpgroups: the first gives registers back
// (setmaxnreg.dec to 40), the second takes more (setmaxnreg.inc to 232);
// then each thread runs (16 + 16 * warpgroup) steps of a hash from
// seeds[thread] and writes the result.
extern "C" __global__ void __launch_bounds__(256, 1)
    setmaxnreg_warpgroups(const uint32_t *seeds, uint32_t *out) {
  uint32_t warpgroup = threadIdx.x / 128;
  if (warpgroup == 0)
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");
  else
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");
  uint32_t x = seeds[threadIdx.x];
  for (uint32_t i = 0; i < 16 + 16 * warpgroup; ++i)
    x = (x * 1664525u + 1013904223u) ^ (x >> 13);
  out[threadIdx.x] = x;
}
