//===- tma_edge.cu - One tensor copy per launch, for the edge bisection ---===//
//
// The kernels of bench/gpu/tma-edge: one CTA, one thread issues one 2-D
// tiled tensor copy of the box at (x, y) in each of the instruction forms a
// kernel can use, so that the host can tell which tensor-map fields and
// forms make a box across the tensor's edge fault. Written as the PTX ISA
// spells the instructions (inline PTX), independently of the emulator.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cuda.h>

namespace {

extern __shared__ __align__(1024) uint8_t box[];

__device__ uint32_t sharedAddress(const void *pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

__device__ uint64_t mapAddress(const CUtensorMap &map) {
  return reinterpret_cast<uint64_t>(&map);
}

__device__ void initBarrier(uint32_t barrier) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(barrier)
               : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ void expectBytes(uint32_t barrier, uint32_t bytes) {
  asm volatile("{\n\t.reg .b64 state;\n\t"
               "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;"
               "\n\t}" ::"r"(barrier),
               "r"(bytes)
               : "memory");
}

__device__ void waitPhase0(uint32_t barrier) {
  uint32_t done = 0;
  while (!done)
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done)
                 : "r"(barrier)
                 : "memory");
}

// Copies the box (`bytes`, as shared memory holds it) to `out`, so that the
// host sees what the copy engine wrote.
__device__ void writeOut(uint8_t *out, uint32_t bytes) {
  for (uint32_t i = threadIdx.x; i < bytes; i += blockDim.x)
    out[i] = box[i];
}

} // namespace

// Loads the box at (x, y) with the .shared::cluster destination (every PTX
// ISA version with tensor copies; a CTA outside a cluster is a cluster of
// one) or, when `ctaDestination`, the .shared::cta one (PTX ISA 8.6), and
// writes it to `out`.
template <bool ctaDestination>
__device__ void loadBox(const CUtensorMap &map, int32_t x, int32_t y,
                        uint32_t bytes, uint8_t *out) {
  __shared__ uint64_t full;
  uint32_t barrier = sharedAddress(&full);
  if (threadIdx.x == 0) {
    initBarrier(barrier);
    expectBytes(barrier, bytes);
    if constexpr (ctaDestination)
      asm volatile(
          "cp.async.bulk.tensor.2d.shared::cta.global.tile"
          ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
              sharedAddress(box)),
          "l"(mapAddress(map)), "r"(x), "r"(y), "r"(barrier)
          : "memory");
    else
      asm volatile(
          "cp.async.bulk.tensor.2d.shared::cluster.global.tile"
          ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
              sharedAddress(box)),
          "l"(mapAddress(map)), "r"(x), "r"(y), "r"(barrier)
          : "memory");
  }
  __syncthreads();
  waitPhase0(barrier);
  writeOut(out, bytes);
}

extern "C" __global__ void load_cluster(const __grid_constant__ CUtensorMap map,
                                        int32_t x, int32_t y, uint32_t bytes,
                                        uint8_t *out) {
  loadBox<false>(map, x, y, bytes, out);
}

extern "C" __global__ void load_cta(const __grid_constant__ CUtensorMap map,
                                    int32_t x, int32_t y, uint32_t bytes,
                                    uint8_t *out) {
  loadBox<true>(map, x, y, bytes, out);
}

// Fills the box with `in` (already laid out as shared memory holds it) and
// writes it to (x, y) with a TMA store, or adds it there when `reduce` is
// set; waits for the writes.
extern "C" __global__ void store(const __grid_constant__ CUtensorMap map,
                                 int32_t x, int32_t y, uint32_t bytes,
                                 const uint8_t *in, uint32_t reduce) {
  for (uint32_t i = threadIdx.x; i < bytes; i += blockDim.x)
    box[i] = in[i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    if (reduce)
      asm volatile(
          "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add"
          ".tile.bulk_group [%0, {%1, %2}], [%3];" ::"l"(mapAddress(map)),
          "r"(x), "r"(y), "r"(sharedAddress(box))
          : "memory");
    else
      asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile"
                   ".bulk_group [%0, {%1, %2}], [%3];" ::"l"(mapAddress(map)),
                   "r"(x), "r"(y), "r"(sharedAddress(box))
                   : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}
