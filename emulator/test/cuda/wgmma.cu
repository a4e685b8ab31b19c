//===- wgmma.cu - Warpgroup MMA: descriptors, layouts, fragments ---------===//
//
// One warpgroup (128 threads) computes D (64 x N) = sum over k of
// scaleA * A (64 x K) * B (K x N) with four wgmma.mma_async instructions
// (K = 4 * the instruction's k), in two commit groups, then writes D
// through the accumulator ownership of the PTX ISA (wgmma "Register
// Fragments", matrix D):
//   thread t, warp w = t / 32, lane l, register i:
//   row = 16w + l/4 + 8*((i/2)%2), col = 8*(i/4) + 2*(l%4) + i%2.
// Global inputs are row-major A (M x K) and B stored transposed (N x K,
// row n holds column n of B); the threads place them in shared memory in the
// canonical wgmma layout of the case (K- or MN-major; no swizzle, 32B, 64B or
// 128B swizzle) and build the 64-bit matrix descriptors themselves.
// Accumulators start as garbage and the first instruction has scale-d = 0.
//
// Layouts (PTX ISA "Shared Memory Matrix Layout"; CUTLASS cute
// make_gmma_desc states the same with named strides). With S the swizzle
// span in bytes, e the element size and T = 16 / e:
//   K-major, no swizzle: 8 x 16-byte core matrices (128 contiguous bytes);
//     LBO = distance of core matrices adjacent in K (here 128 bytes), SBO =
//     distance of 8-row groups (here K*e/16 * 128).
//   K-major, swizzle S: rows of S bytes (S/e elements of K), 8-row atoms of
//     8*S bytes; SBO = 8*S; LBO unused (encoded as 1). An instruction's k
//     slice starts (k*e) % S bytes into the row; further S-byte columns of K
//     follow as separate blocks of rows*S bytes.
//   MN-major, no swizzle: core matrices of 8 k-rows x 8 MN elements; LBO =
//     distance of core matrices adjacent in K (here 128 bytes), SBO =
//     distance of 8-element groups along MN (here K/8 * 128).
//   MN-major, swizzle S: k-rows of S bytes (S/e MN elements), 8 k-rows to
//     an atom; SBO = distance of 8-k-row groups (here 8*S), LBO = distance of
//     S/e-element groups along MN (here K*S).
// Every address is then swizzled with swizzle(address, S) (DeviceSupport).
//
//===----------------------------------------------------------------------===//

#include "DeviceSupport.cuh"

#include <type_traits>

using namespace emutest;

namespace {

constexpr uint32_t kM = 64;
constexpr uint32_t kThreads = 128;
constexpr uint32_t kSteps = 4;
// What the accumulators hold before the first instruction, which must
// discard it (scale-d = 0).
constexpr float kStaleFloat = 1.0e6f;
constexpr int32_t kStaleInt = 123456789;

//===----------------------------------------------------------------------===//
// Matrix descriptor (PTX ISA "Matrix Descriptor Format")
//===----------------------------------------------------------------------===//

enum class DescriptorSwizzle : uint64_t {
  None = 0,
  B128 = 1,
  B64 = 2,
  B32 = 3
};

__device__ DescriptorSwizzle descriptorSwizzle(uint32_t spanBytes) {
  switch (spanBytes) {
  case 128:
    return DescriptorSwizzle::B128;
  case 64:
    return DescriptorSwizzle::B64;
  case 32:
    return DescriptorSwizzle::B32;
  default:
    return DescriptorSwizzle::None;
  }
}

struct MatrixDescriptor {
  uint32_t startAddress;      // bits 0-13: shared address >> 4
  uint32_t leadingByteOffset; // bits 16-29: bytes >> 4
  uint32_t strideByteOffset;  // bits 32-45: bytes >> 4
  uint32_t baseOffset;        // bits 49-51: 0, atoms start on their repeat
  DescriptorSwizzle swizzle;  // bits 62-63

  __device__ uint64_t encode() const {
    return static_cast<uint64_t>((startAddress >> 4) & 0x3FFF) |
           static_cast<uint64_t>((leadingByteOffset >> 4) & 0x3FFF) << 16 |
           static_cast<uint64_t>((strideByteOffset >> 4) & 0x3FFF) << 32 |
           static_cast<uint64_t>(baseOffset & 0x7) << 49 |
           static_cast<uint64_t>(swizzle) << 62;
  }
};

//===----------------------------------------------------------------------===//
// Canonical shared-memory layouts
//===----------------------------------------------------------------------===//

enum class Major { K, MN };

// An operand of `rows` (M for A, N for B) x `kElements`, as the layouts in
// the file comment place it.
struct OperandLayout {
  uint32_t rows;
  uint32_t kElements;
  uint32_t elementBytes;
  uint32_t swizzleBytes; // 0, 32, 64 or 128
  Major major;

  // Byte offset of element (row, k) from the operand's base, unswizzled.
  __device__ uint32_t offset(uint32_t row, uint32_t k) const {
    uint32_t s = swizzleBytes, e = elementBytes;
    if (major == Major::K) {
      uint32_t kByte = k * e;
      if (s == 0)
        return kByte / 16 * 128 + row / 8 * (kElements * e / 16 * 128) +
               row % 8 * 16 + kByte % 16;
      return kByte / s * (rows * s) + row / 8 * (8 * s) + row % 8 * s +
             kByte % s;
    }
    if (s == 0)
      return row / 8 * (kElements / 8 * 128) + k / 8 * 128 + k % 8 * 16 +
             row % 8 * e;
    uint32_t perRow = s / e;
    return row / perRow * (kElements * s) + k / 8 * (8 * s) + k % 8 * s +
           row % perRow * e;
  }

  // The descriptor of the k slice that instruction `step` consumes (32
  // bytes of K: 16 f16/bf16, 8 tf32, 32 8-bit elements).
  __device__ MatrixDescriptor descriptor(uint32_t base, uint32_t step) const {
    uint32_t s = swizzleBytes, e = elementBytes;
    MatrixDescriptor d{};
    d.swizzle = descriptorSwizzle(s);
    uint32_t kByte = step * 32;
    if (major == Major::K) {
      if (s == 0) {
        d.startAddress = base + kByte / 16 * 128;
        d.leadingByteOffset = 128;
        d.strideByteOffset = kElements * e / 16 * 128;
      } else {
        d.startAddress = base + kByte / s * (rows * s) + kByte % s;
        d.leadingByteOffset = 16;
        d.strideByteOffset = 8 * s;
      }
      return d;
    }
    // MN-major: only 16-bit types, so a step spans two groups of 8 k-rows.
    uint32_t firstKGroup = step * 2;
    if (s == 0) {
      d.startAddress = base + firstKGroup * 128;
      d.leadingByteOffset = 128;
      d.strideByteOffset = kElements / 8 * 128;
    } else {
      d.startAddress = base + firstKGroup * (8 * s);
      d.leadingByteOffset = kElements * s;
      d.strideByteOffset = 8 * s;
    }
    return d;
  }
};

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

#define EMU_D32                                                                \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "    \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "     \
  "%30, %31}"

#define EMU_D64                                                                \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "    \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "     \
  "%30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, "     \
  "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, "     \
  "%58, %59, %60, %61, %62, %63}"

#define EMU_F32X32(d)                                                          \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),      \
      "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]),             \
      "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),         \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),         \
      "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),         \
      "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),         \
      "+f"(d[31])

#define EMU_S32X32(d)                                                          \
  "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]),      \
      "+r"(d[6]), "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]),             \
      "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),         \
      "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]),         \
      "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]),         \
      "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]),         \
      "+r"(d[31])

#define EMU_F32X64(d)                                                          \
  EMU_F32X32(d), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),           \
      "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),         \
      "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]),         \
      "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),         \
      "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),         \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]),         \
      "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// m64n64k16, f32 += f16/bf16 x f16/bf16, both operands from descriptors,
// with the immediates imm-scale-a, imm-trans-a and imm-trans-b.
#define EMU_WGMMA_16BIT_SS(NAME, TYPES)                                        \
  template <int ScaleA, int TransA, int TransB> struct NAME {                  \
    using Accumulator = float;                                                 \
    static constexpr uint32_t kN = 64, kK = 16, kElementBytes = 2;             \
    __device__ static void mma(float (&d)[32], uint64_t a, uint64_t b,         \
                               uint32_t accumulate) {                          \
      asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %34, 0;\n\t"          \
                   "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPES         \
                   " " EMU_D32 ", %32, %33, p, %35, 1, %36, %37;\n\t}"         \
                   : EMU_F32X32(d)                                             \
                   : "l"(a), "l"(b), "r"(accumulate), "n"(ScaleA),             \
                     "n"(TransA), "n"(TransB));                                \
    }                                                                          \
  };

EMU_WGMMA_16BIT_SS(Bf16N64, "bf16.bf16")
EMU_WGMMA_16BIT_SS(F16N64, "f16.f16")

// m64n128k16 bf16: 64 accumulator registers a thread.
template <int ScaleA, int TransA, int TransB> struct Bf16N128 {
  using Accumulator = float;
  static constexpr uint32_t kN = 128, kK = 16, kElementBytes = 2;
  __device__ static void mma(float (&d)[64], uint64_t a, uint64_t b,
                             uint32_t accumulate) {
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %66, 0;\n\t"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " EMU_D64
        ", %64, %65, p, %67, 1, %68, %69;\n\t}"
        : EMU_F32X64(d)
        : "l"(a), "l"(b), "r"(accumulate), "n"(ScaleA), "n"(TransA),
          "n"(TransB));
  }
};

// m64n64k16 bf16 with A from registers: four .b32 registers a thread, each
// two bf16 (the lower element in the low half).
template <int TransB> struct Bf16N64RegisterA {
  using Accumulator = float;
  static constexpr uint32_t kN = 64, kK = 16, kElementBytes = 2;
  __device__ static void mma(float (&d)[32], const uint32_t (&a)[4], uint64_t b,
                             uint32_t accumulate) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %37, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " EMU_D32
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n\t}"
                 : EMU_F32X32(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b),
                   "r"(accumulate), "n"(TransB));
  }
};

// m64n64k8, f32 += tf32 x tf32 (K-major only).
struct Tf32N64 {
  using Accumulator = float;
  static constexpr uint32_t kN = 64, kK = 8, kElementBytes = 4;
  __device__ static void mma(float (&d)[32], uint64_t a, uint64_t b,
                             uint32_t accumulate) {
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %34, 0;\n\t"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 " EMU_D32
                 ", %32, %33, p, 1, 1;\n\t}"
                 : EMU_F32X32(d)
                 : "l"(a), "l"(b), "r"(accumulate));
  }
};

// m64n64k32, f32 += fp8 x fp8 (K-major only).
#define EMU_WGMMA_FP8_SS(NAME, TYPES)                                          \
  struct NAME {                                                                \
    using Accumulator = float;                                                 \
    static constexpr uint32_t kN = 64, kK = 32, kElementBytes = 1;             \
    __device__ static void mma(float (&d)[32], uint64_t a, uint64_t b,         \
                               uint32_t accumulate) {                          \
      asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %34, 0;\n\t"          \
                   "wgmma.mma_async.sync.aligned.m64n64k32.f32." TYPES         \
                   " " EMU_D32 ", %32, %33, p, 1, 1;\n\t}"                     \
                   : EMU_F32X32(d)                                             \
                   : "l"(a), "l"(b), "r"(accumulate));                         \
    }                                                                          \
  };

EMU_WGMMA_FP8_SS(E4m3E4m3N64, "e4m3.e4m3")
EMU_WGMMA_FP8_SS(E5m2E5m2N64, "e5m2.e5m2")
EMU_WGMMA_FP8_SS(E4m3E5m2N64, "e4m3.e5m2")

// m64n64k32, s32 += 8-bit integer x 8-bit integer (K-major only).
#define EMU_WGMMA_INT8_SS(NAME, TYPES)                                         \
  struct NAME {                                                                \
    using Accumulator = int32_t;                                               \
    static constexpr uint32_t kN = 64, kK = 32, kElementBytes = 1;             \
    __device__ static void mma(int32_t (&d)[32], uint64_t a, uint64_t b,       \
                               uint32_t accumulate) {                          \
      asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %34, 0;\n\t"          \
                   "wgmma.mma_async.sync.aligned.m64n64k32.s32." TYPES         \
                   " " EMU_D32 ", %32, %33, p;\n\t}"                           \
                   : EMU_S32X32(d)                                             \
                   : "l"(a), "l"(b), "r"(accumulate));                         \
    }                                                                          \
  };

EMU_WGMMA_INT8_SS(S8S8N64, "s8.s8")
EMU_WGMMA_INT8_SS(U8S8N64, "u8.s8")

__device__ void wgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ void wgmmaCommitGroup() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

__device__ void wgmmaWaitGroup0() {
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

// Keeps the compiler from moving accumulator accesses across the
// asynchronous instructions that own the registers.
template <int N> __device__ void pinRegisters(float (&values)[N]) {
  for (int i = 0; i < N; ++i)
    asm volatile("" : "+f"(values[i])::"memory");
}

template <int N> __device__ void pinRegisters(int32_t (&values)[N]) {
  for (int i = 0; i < N; ++i)
    asm volatile("" : "+r"(values[i])::"memory");
}

//===----------------------------------------------------------------------===//
// The tile
//===----------------------------------------------------------------------===//

template <uint32_t ElementBytes>
__device__ void copyElement(uint8_t *to, const uint8_t *from) {
  if constexpr (ElementBytes == 1)
    *to = *from;
  else if constexpr (ElementBytes == 2)
    *reinterpret_cast<uint16_t *>(to) =
        *reinterpret_cast<const uint16_t *>(from);
  else
    *reinterpret_cast<uint32_t *>(to) =
        *reinterpret_cast<const uint32_t *>(from);
}

// Places the row-major rows x kElements operand `source` at `shared`.
template <uint32_t ElementBytes>
__device__ void stage(const OperandLayout &layout, const uint8_t *source,
                      uint8_t *shared) {
  uint32_t base = sharedAddress(shared);
  for (uint32_t i = threadIdx.x; i < layout.rows * layout.kElements;
       i += kThreads) {
    uint32_t row = i / layout.kElements, k = i % layout.kElements;
    uint32_t address =
        swizzle(base + layout.offset(row, k), layout.swizzleBytes);
    copyElement<ElementBytes>(shared + (address - base),
                              source + i * ElementBytes);
  }
}

// This thread's A fragment for instruction `step` (k = 16 * step ...),
// following the PTX ISA register layout of A for .m64nNk16 (the layout of
// mma.m16n8k16's A per warp, warp w holding rows 16w..16w+15):
//   register j holds (row, col) and (row, col + 1) with
//   row = 16w + l/4 + 8*(j%2), col = 8*(j/2) + 2*(l%4).
__device__ void loadFragmentA(const uint16_t *a, uint32_t kElements,
                              uint32_t step, uint32_t (&fragment)[4]) {
  uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (uint32_t j = 0; j < 4; ++j) {
    uint32_t row = 16 * warp + lane / 4 + 8 * (j % 2);
    uint32_t col = 16 * step + 8 * (j / 2) + 2 * (lane % 4);
    const uint16_t *pair = a + row * kElements + col;
    fragment[j] = pair[0] | static_cast<uint32_t>(pair[1]) << 16;
  }
}

template <class Mma, uint32_t Swizzle, Major MajorA, Major MajorB,
          bool RegisterA = false>
__device__ void gemm(const uint8_t *a, const uint8_t *b, void *out) {
  using Accumulator = typename Mma::Accumulator;
  constexpr uint32_t kN = Mma::kN, kK = Mma::kK * kSteps;
  constexpr uint32_t kElementBytes = Mma::kElementBytes;
  const OperandLayout layoutA{kM, kK, kElementBytes, Swizzle, MajorA};
  const OperandLayout layoutB{kN, kK, kElementBytes, Swizzle, MajorB};
  // A takes kM * kK * kElementBytes = 8 KiB, so B starts 1024-aligned too.
  uint8_t *sharedA = dynamicShared;
  uint8_t *sharedB = dynamicShared + kM * kK * kElementBytes;

  if constexpr (!RegisterA)
    stage<kElementBytes>(layoutA, a, sharedA);
  stage<kElementBytes>(layoutB, b, sharedB);
  // wgmma reads shared memory through the async proxy.
  fenceProxyAsyncShared();
  __syncthreads();

  uint32_t fragments[kSteps][4];
  if constexpr (RegisterA)
    for (uint32_t step = 0; step < kSteps; ++step)
      loadFragmentA(reinterpret_cast<const uint16_t *>(a), kK, step,
                    fragments[step]);
  Accumulator d[kN / 2];
  for (uint32_t i = 0; i < kN / 2; ++i)
    d[i] = std::is_same_v<Accumulator, float> ? Accumulator(kStaleFloat)
                                              : Accumulator(kStaleInt);
  pinRegisters(d);

  wgmmaFence();
  for (uint32_t step = 0; step < kSteps; ++step) {
    uint64_t descriptorB =
        layoutB.descriptor(sharedAddress(sharedB), step).encode();
    if constexpr (RegisterA)
      Mma::mma(d, fragments[step], descriptorB, step > 0);
    else
      Mma::mma(d, layoutA.descriptor(sharedAddress(sharedA), step).encode(),
               descriptorB, step > 0);
    if (step == kSteps / 2 - 1)
      wgmmaCommitGroup();
  }
  wgmmaCommitGroup();
  wgmmaWaitGroup0();
  pinRegisters(d);

  Accumulator *result = static_cast<Accumulator *>(out);
  uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (uint32_t i = 0; i < kN / 2; ++i) {
    uint32_t row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);
    uint32_t col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    result[row * kN + col] = d[i];
  }
}

} // namespace

// One kernel per case: A (64 x K) and B (stored N x K) in, D (64 x N) out.
#define EMU_GEMM_KERNEL(NAME, ...)                                             \
  extern "C" __global__ void __launch_bounds__(kThreads)                       \
      NAME(const uint8_t *a, const uint8_t *b, void *d) {                      \
    gemm<__VA_ARGS__>(a, b, d);                                                \
  }

// bf16, both K-major, every swizzle.
EMU_GEMM_KERNEL(wgmma_bf16_kk_none, Bf16N64<1, 0, 0>, 0, Major::K, Major::K)
EMU_GEMM_KERNEL(wgmma_bf16_kk_sw32, Bf16N64<1, 0, 0>, 32, Major::K, Major::K)
EMU_GEMM_KERNEL(wgmma_bf16_kk_sw64, Bf16N64<1, 0, 0>, 64, Major::K, Major::K)
EMU_GEMM_KERNEL(wgmma_bf16_kk_sw128, Bf16N64<1, 0, 0>, 128, Major::K, Major::K)
// bf16 with transposed operands (imm-trans-a / imm-trans-b = 1).
EMU_GEMM_KERNEL(wgmma_bf16_mk_sw128, Bf16N64<1, 1, 0>, 128, Major::MN, Major::K)
EMU_GEMM_KERNEL(wgmma_bf16_km_sw64, Bf16N64<1, 0, 1>, 64, Major::K, Major::MN)
EMU_GEMM_KERNEL(wgmma_bf16_mm_sw32, Bf16N64<1, 1, 1>, 32, Major::MN, Major::MN)
EMU_GEMM_KERNEL(wgmma_bf16_mm_none, Bf16N64<1, 1, 1>, 0, Major::MN, Major::MN)
// bf16 with imm-scale-a = -1; and N = 128.
EMU_GEMM_KERNEL(wgmma_bf16_kk_sw64_neg_a, Bf16N64<-1, 0, 0>, 64, Major::K,
                Major::K)
EMU_GEMM_KERNEL(wgmma_bf16_n128_kk_sw128, Bf16N128<1, 0, 0>, 128, Major::K,
                Major::K)
// bf16 with A from registers.
EMU_GEMM_KERNEL(wgmma_bf16_rega_k_sw128, Bf16N64RegisterA<0>, 128, Major::K,
                Major::K, true)
EMU_GEMM_KERNEL(wgmma_bf16_rega_m_sw32, Bf16N64RegisterA<1>, 32, Major::K,
                Major::MN, true)
// f16.
EMU_GEMM_KERNEL(wgmma_f16_kk_sw128, F16N64<1, 0, 0>, 128, Major::K, Major::K)
EMU_GEMM_KERNEL(wgmma_f16_mm_sw64, F16N64<1, 1, 1>, 64, Major::MN, Major::MN)
// tf32.
EMU_GEMM_KERNEL(wgmma_tf32_kk_none, Tf32N64, 0, Major::K, Major::K)
EMU_GEMM_KERNEL(wgmma_tf32_kk_sw32, Tf32N64, 32, Major::K, Major::K)
EMU_GEMM_KERNEL(wgmma_tf32_kk_sw128, Tf32N64, 128, Major::K, Major::K)
// fp8.
EMU_GEMM_KERNEL(wgmma_e4m3_kk_sw128, E4m3E4m3N64, 128, Major::K, Major::K)
EMU_GEMM_KERNEL(wgmma_e5m2_kk_sw64, E5m2E5m2N64, 64, Major::K, Major::K)
EMU_GEMM_KERNEL(wgmma_e4m3_e5m2_kk_none, E4m3E5m2N64, 0, Major::K, Major::K)
// 8-bit integers.
EMU_GEMM_KERNEL(wgmma_s8_kk_sw128, S8S8N64, 128, Major::K, Major::K)
EMU_GEMM_KERNEL(wgmma_u8_s8_kk_sw32, U8S8N64, 32, Major::K, Major::K)
