//===- DeviceSupport.cuh - PTX wrappers shared by the corpus kernels ------===//
//
// Thin inline-PTX wrappers for the Hopper (sm_90a) instructions that several
// kernels of the emulator's CUDA test corpus use: mbarrier, bulk tensor copies
// (TMA), proxy fences and the shared-memory swizzle. Each wrapper is exactly
// one PTX instruction (plus a predicate conversion), written as the PTX ISA
// spells it, so the generated PTX shows what is being tested.
//
//===----------------------------------------------------------------------===//
#ifndef MOSAIC_EMULATOR_TEST_CUDA_DEVICESUPPORT_CUH
#define MOSAIC_EMULATOR_TEST_CUDA_DEVICESUPPORT_CUH

#include <cstdint>
#include <cuda.h> // CUtensorMap

namespace emutest {

// Dynamic shared memory. The declared alignment becomes `.align 1024` on the
// PTX `.extern .shared` declaration; 128-byte swizzle repeats every 1024
// bytes, so swizzled buffers start on that boundary.
extern __shared__ __align__(1024) uint8_t dynamicShared[];

// The swizzle of the PTX ISA "tensor copy" chapter and of the wgmma
// descriptor: the 16-byte chunk index (address bits 4..) is XORed with the
// 128-byte row index (address bits 7..), within the span. `span` is 32, 64 or
// 128 bytes; 0 means no swizzle. It applies to the absolute shared address.
__host__ __device__ constexpr uint32_t swizzle(uint32_t address,
                                               uint32_t span) {
  return span == 0 ? address
                   : address ^ ((address >> 3) & ((span / 16 - 1) << 4));
}

// The shared::cta address of a generic pointer into shared memory.
__device__ inline uint32_t sharedAddress(const void *pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// The global-state-space address of a generic pointer into global memory, for
// instructions that name .global.
__device__ inline uint64_t globalAddress(const void *pointer) {
  return static_cast<uint64_t>(__cvta_generic_to_global(pointer));
}

// The generic address of a kernel parameter (a __grid_constant__ tensor map),
// as the tensor-copy instructions take it.
__device__ inline uint64_t tensorMapAddress(const CUtensorMap &map) {
  return reinterpret_cast<uint64_t>(&map);
}

//===----------------------------------------------------------------------===//
// mbarrier (PTX ISA "Parallel Synchronization and Communication Instructions:
// mbarrier").
//===----------------------------------------------------------------------===//

__device__ inline void mbarrierInit(uint32_t barrier, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(barrier),
               "r"(count)
               : "memory");
}

// Makes barrier initialisation visible to the async proxy and to the cluster.
__device__ inline void fenceMbarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ inline uint64_t mbarrierArrive(uint32_t barrier) {
  uint64_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];"
               : "=l"(state)
               : "r"(barrier)
               : "memory");
  return state;
}

__device__ inline uint64_t mbarrierArriveExpectTx(uint32_t barrier,
                                                  uint32_t bytes) {
  uint64_t state;
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;"
               : "=l"(state)
               : "r"(barrier), "r"(bytes)
               : "memory");
  return state;
}

// One probe: true once the phase with parity `parity` has completed.
__device__ inline bool mbarrierTryWaitParity(uint32_t barrier,
                                             uint32_t parity) {
  uint32_t done;
  asm volatile("{\n\t.reg .pred p;\n\t"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
               "selp.u32 %0, 1, 0, p;\n\t}"
               : "=r"(done)
               : "r"(barrier), "r"(parity)
               : "memory");
  return done != 0;
}

__device__ inline void mbarrierWaitParity(uint32_t barrier, uint32_t parity) {
  while (!mbarrierTryWaitParity(barrier, parity)) {
  }
}

// Non-blocking test of the phase with parity `parity`.
__device__ inline bool mbarrierTestWaitParity(uint32_t barrier,
                                              uint32_t parity) {
  uint32_t done;
  asm volatile("{\n\t.reg .pred p;\n\t"
               "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
               "selp.u32 %0, 1, 0, p;\n\t}"
               : "=r"(done)
               : "r"(barrier), "r"(parity)
               : "memory");
  return done != 0;
}

// Non-blocking test of the phase that `state` (from an arrive) belongs to.
__device__ inline bool mbarrierTestWait(uint32_t barrier, uint64_t state) {
  uint32_t done;
  asm volatile("{\n\t.reg .pred p;\n\t"
               "mbarrier.test_wait.shared::cta.b64 p, [%1], %2;\n\t"
               "selp.u32 %0, 1, 0, p;\n\t}"
               : "=r"(done)
               : "r"(barrier), "l"(state)
               : "memory");
  return done != 0;
}

//===----------------------------------------------------------------------===//
// Bulk tensor copies (PTX ISA "cp.async.bulk.tensor", "cp.reduce.async.bulk
// .tensor") and their completion.
//===----------------------------------------------------------------------===//

// Loads the box at (x, y) (innermost first) into shared memory at `dst`,
// completing `bytes` of transaction on `barrier`.
__device__ inline void tmaLoad2d(uint32_t dst, const CUtensorMap &map,
                                 int32_t x, int32_t y, uint32_t barrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile"
      ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
      "l"(tensorMapAddress(map)), "r"(x), "r"(y), "r"(barrier)
      : "memory");
}

// As tmaLoad2d, into the same CTA-relative `dst` and `barrier` of every CTA
// of the cluster whose rank is set in `ctaMask`.
__device__ inline void tmaLoad2dMulticast(uint32_t dst, const CUtensorMap &map,
                                          int32_t x, int32_t y,
                                          uint32_t barrier, uint16_t ctaMask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile"
               ".mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
               "l"(tensorMapAddress(map)), "r"(x), "r"(y), "r"(barrier),
               "h"(ctaMask)
               : "memory");
}

// Stores the box at `src` to (x, y) of the tensor; completes by bulk group.
__device__ inline void tmaStore2d(const CUtensorMap &map, int32_t x, int32_t y,
                                  uint32_t src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"
               " [%0, {%1, %2}], [%3];" ::"l"(tensorMapAddress(map)),
               "r"(x), "r"(y), "r"(src)
               : "memory");
}

// Adds the box at `src` into (x, y) of the tensor; completes by bulk group.
__device__ inline void tmaReduceAdd2d(const CUtensorMap &map, int32_t x,
                                      int32_t y, uint32_t src) {
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile"
               ".bulk_group [%0, {%1, %2}], [%3];" ::"l"(tensorMapAddress(map)),
               "r"(x), "r"(y), "r"(src)
               : "memory");
}

__device__ inline void bulkCommitGroup() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Waits until the committed bulk groups have finished reading shared memory.
__device__ inline void bulkWaitGroupRead0() {
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

// Waits until the committed bulk groups have completed (writes visible).
__device__ inline void bulkWaitGroup0() {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// Orders this thread's generic-proxy shared-memory writes before later
// async-proxy (TMA, wgmma) accesses.
__device__ inline void fenceProxyAsyncShared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

//===----------------------------------------------------------------------===//
// Clusters (PTX ISA "barrier.cluster", special registers %cluster_*).
//===----------------------------------------------------------------------===//

// All threads of all CTAs of the cluster; release/acquire at cluster scope.
__device__ inline void clusterSync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

__device__ inline uint32_t clusterCtaRank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

__device__ inline uint32_t clusterNumCtas() {
  uint32_t count;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(count));
  return count;
}

} // namespace emutest

#endif // MOSAIC_EMULATOR_TEST_CUDA_DEVICESUPPORT_CUH
