//===- warp_extras.cu - Collectives beyond the core set ------------------===//
//
// Warp and CTA collectives that nvcc emits for __match_*_sync and
// __syncthreads_count/_and/_or but that Mosaic kernels do not need. They
// live in their own module so that an emulator without them still loads
// (and passes) misc_warp. The host is warp_extras_host.cpp.
//
//===----------------------------------------------------------------------===//

#include <cstdint>

namespace {

constexpr uint32_t kFullMask = 0xffffffffu;

__device__ uint32_t matchAny(uint32_t value, uint32_t mask) {
  uint32_t result;
  asm volatile("match.any.sync.b32 %0, %1, %2;"
               : "=r"(result)
               : "r"(value), "r"(mask));
  return result;
}

__device__ uint32_t matchAll(uint32_t value, uint32_t mask, uint32_t &all) {
  uint32_t result;
  asm volatile("{\n\t.reg .pred p;\n\t"
               "match.all.sync.b32 %0|p, %2, %3;\n\t"
               "selp.u32 %1, 1, 0, p;\n\t}"
               : "=r"(result), "=r"(all)
               : "r"(value), "r"(mask));
  return result;
}

__device__ uint32_t barrierPopc(uint32_t id, uint32_t threads, bool predicate) {
  uint32_t count;
  asm volatile("{\n\t.reg .pred p;\n\t"
               "setp.ne.u32 p, %3, 0;\n\t"
               "bar.red.popc.u32 %0, %1, %2, p;\n\t}"
               : "=r"(count)
               : "r"(id), "r"(threads), "r"(static_cast<uint32_t>(predicate))
               : "memory");
  return count;
}

#define EMU_BARRIER_REDUCE_PREDICATE(NAME, OPERATION)                          \
  __device__ uint32_t NAME(uint32_t id, uint32_t threads, bool predicate) {    \
    uint32_t result;                                                           \
    asm volatile("{\n\t.reg .pred p, q;\n\t"                                   \
                 "setp.ne.u32 p, %3, 0;\n\t"                                   \
                 "bar.red." OPERATION ".pred q, %1, %2, p;\n\t"                \
                 "selp.u32 %0, 1, 0, q;\n\t}"                                  \
                 : "=r"(result)                                                \
                 : "r"(id), "r"(threads),                                      \
                   "r"(static_cast<uint32_t>(predicate))                       \
                 : "memory");                                                  \
    return result;                                                             \
  }

EMU_BARRIER_REDUCE_PREDICATE(barrierAnd, "and")
EMU_BARRIER_REDUCE_PREDICATE(barrierOr, "or")

} // namespace

// 64 threads; out[thread * 5 + slot]: match.any of (lane * 5) % 7 (plus a
// per-warp offset), match.all of a warp-uniform value (mask, predicate),
// match.all of the lane id (mask, predicate).
extern "C" __global__ void warp_match(uint32_t *out) {
  uint32_t tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  uint32_t *o = out + tid * 5;
  o[0] = matchAny((lane * 5) % 7 + warp * 100, kFullMask);
  o[1] = matchAll(warp * 11 + 3, kFullMask, o[2]);
  o[3] = matchAll(lane, kFullMask, o[4]);
}

// 256 threads; out[3t .. 3t + 2]: bar.red.popc of (t % 3 == 0), bar.red.and
// of (t != 77), bar.red.or of (t == 200), each over all 256 threads on its
// own barrier.
extern "C" __global__ void __launch_bounds__(256)
    barrier_reductions(uint32_t *out) {
  uint32_t tid = threadIdx.x;
  out[3 * tid] = barrierPopc(5, 256, tid % 3 == 0);
  out[3 * tid + 1] = barrierAnd(6, 256, tid != 77);
  out[3 * tid + 2] = barrierOr(7, 256, tid == 200);
}
