//===- mbarrier_phases.cu - mbarrier phases, tokens, counts and bytes ----===//
//
// One CTA of 128 threads walks several mbarriers through their phases and
// records what it observes. Every observation is deterministic: a probe runs
// only where the ordering around it (bar.sync, a wait, or no copy issued
// yet) fixes its answer. The host (mbarrier_phases_host.cpp) holds the
// expected values; probe indices are the Probe enumerators below.
//
//===----------------------------------------------------------------------===//

#include "DeviceSupport.cuh"

using namespace emutest;

namespace {

constexpr uint32_t kThreads = 128;
constexpr uint32_t kPhases = 6;
constexpr uint32_t kBulkWords = 256; // 1024 bytes, copied in two halves

// Single-thread observations, in the order of the `probes` output.
enum Probe : uint32_t {
  kFreshParity0,       // test_wait.parity 0 on a fresh barrier
  kFreshParity1,       // test_wait.parity 1 on a fresh barrier
  kTokenOneArrival,    // test_wait(token) with one of two arrivals in
  kTokenBothArrivals,  // ... once the second arrival is in
  kAfterPhase0Parity0, // test_wait.parity 0 once phase 0 completed
  kAfterPhase0Parity1, // test_wait.parity 1 while phase 1 is open
  kDroppedParity0,     // countBar: phase 2 done with 96 arrivals
  kDroppedParity1,     // countBar: phase 3 open
  kExpectTxOnly,       // txBar: expect_tx, no arrival yet
  kBytesOutstanding,   // txBar: arrival in, 1024 bytes outstanding
  kCompleteTxBefore,   // txBar phase 1: arrival in, 64 bytes outstanding
  kCompleteTxAfter,    // ... after mbarrier.complete_tx of 64 bytes
  kReusedLow,          // the invalidated barrier's 8 bytes as data
  kReusedHigh,
  kReinitialised, // re-initialised barrier, count 1, one arrival
  kProbeCount
};

__device__ void arriveCount(uint32_t barrier, uint32_t count) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" ::"r"(barrier),
               "r"(count)
               : "memory");
}

__device__ void arriveDrop(uint32_t barrier) {
  asm volatile("mbarrier.arrive_drop.shared::cta.b64 _, [%0];" ::"r"(barrier)
               : "memory");
}

__device__ void expectTx(uint32_t barrier, uint32_t bytes) {
  asm volatile(
      "mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(barrier),
      "r"(bytes)
      : "memory");
}

__device__ void completeTx(uint32_t barrier, uint32_t bytes) {
  asm volatile(
      "mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(
          barrier),
      "r"(bytes)
      : "memory");
}

// try_wait with a suspend-time hint (nanoseconds), looping until done.
__device__ void waitParityWithHint(uint32_t barrier, uint32_t parity) {
  uint32_t done = 0;
  while (!done)
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, "
                 "%3;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done)
                 : "r"(barrier), "r"(parity), "r"(100000)
                 : "memory");
}

__device__ void invalidate(uint32_t barrier) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(barrier)
               : "memory");
}

// Global -> shared bulk copy completing `bytes` on `barrier`.
__device__ void bulkLoad(uint32_t dst, const void *src, uint32_t bytes,
                         uint32_t barrier) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
               "bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(globalAddress(src)), "r"(bytes), "r"(barrier)
               : "memory");
}

// Shared -> global bulk copy, completing by bulk group.
__device__ void bulkStore(void *dst, uint32_t src, uint32_t bytes) {
  asm volatile(
      "cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(
          globalAddress(dst)),
      "r"(src), "r"(bytes)
      : "memory");
}

} // namespace

// phaseSums[p][t]: what thread t summed over phaseData[p][*] after phase p.
// phaseTokens[p][t]: test_wait with thread t's phase-p token, afterwards.
// probes[kProbeCount]: the Probe observations.
// bulkCopied[256]: bulkSource as it arrived in shared memory.
// bulkStored[256]: that data plus one, written back by a bulk store.
extern "C" __global__ void __launch_bounds__(kThreads)
    mbarrier_phases(const uint32_t *bulkSource, uint32_t *phaseSums,
                    uint32_t *phaseTokens, uint32_t *probes,
                    uint32_t *bulkCopied, uint32_t *bulkStored) {
  __shared__ uint64_t phaseBar, probeBar, countBar, txBar;
  __shared__ uint32_t phaseData[kPhases][kThreads];
  __shared__ __align__(128) uint32_t bulk[kBulkWords];
  uint32_t tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  uint32_t phase = sharedAddress(&phaseBar), probe = sharedAddress(&probeBar);
  uint32_t count = sharedAddress(&countBar), tx = sharedAddress(&txBar);

  if (tid == 0) {
    mbarrierInit(phase, kThreads);
    mbarrierInit(probe, 2);
    mbarrierInit(count, kThreads);
    mbarrierInit(tx, 1);
    fenceMbarrierInit();
  }
  __syncthreads();

  // 1. Six phases; each thread arrives once per phase, then waits on the
  //    parity 0, 1, 0, 1, ... and reads what every thread wrote before
  //    arriving.
  for (uint32_t p = 0; p < kPhases; ++p) {
    phaseData[p][tid] = p * 1000 + tid;
    uint64_t token = mbarrierArrive(phase);
    if (p % 2 == 0)
      mbarrierWaitParity(phase, p % 2);
    else
      waitParityWithHint(phase, p % 2);
    uint32_t sum = 0;
    for (uint32_t j = 0; j < kThreads; ++j)
      sum += phaseData[p][(tid + j) % kThreads];
    phaseSums[p * kThreads + tid] = sum;
    // Phase p is complete; phase p + 1 cannot be, this thread is missing.
    phaseTokens[p * kThreads + tid] = mbarrierTestWait(phase, token);
  }

  // 2. Parity and token probes on a two-arrival barrier: thread 0 arrives,
  //    then (after bar.sync) thread 32.
  uint64_t token = 0;
  if (tid == 0) {
    probes[kFreshParity0] = mbarrierTestWaitParity(probe, 0);
    probes[kFreshParity1] = mbarrierTestWaitParity(probe, 1);
    token = mbarrierArrive(probe);
    probes[kTokenOneArrival] = mbarrierTestWait(probe, token);
  }
  __syncthreads();
  if (tid == 32)
    mbarrierArrive(probe);
  __syncthreads();
  if (tid == 0) {
    probes[kTokenBothArrivals] = mbarrierTestWait(probe, token);
    probes[kAfterPhase0Parity0] = mbarrierTestWaitParity(probe, 0);
    probes[kAfterPhase0Parity1] = mbarrierTestWaitParity(probe, 1);
  }

  // 3. Arrival counts: lane 0 of each warp arrives for its 32 threads. Then
  //    warp 3 arrives with arrive_drop, so phase 2 completes with the 96
  //    arrivals of warps 0-2 while warp 3 only waits.
  if (lane == 0)
    arriveCount(count, 32);
  mbarrierWaitParity(count, 0);
  if (warp == 3)
    arriveDrop(count);
  else
    mbarrierArrive(count);
  mbarrierWaitParity(count, 1);
  // Warp 3 does not hold phase 2 back: without this bar.sync, phase 2 could
  // complete before warp 3 saw phase 1 complete, and its wait on parity 1
  // would then be a wait on phase 3.
  __syncthreads();
  if (warp != 3)
    mbarrierArrive(count);
  mbarrierWaitParity(count, 0);
  if (tid == 0) {
    probes[kDroppedParity0] = mbarrierTestWaitParity(count, 0);
    probes[kDroppedParity1] = mbarrierTestWaitParity(count, 1);
  }

  // 4. Transaction bytes: 512 expected without an arrival, 512 more with
  //    the arrival, then two bulk copies of 512 bytes complete them.
  uint32_t bulkAddress = sharedAddress(bulk);
  if (tid == 0) {
    expectTx(tx, 512);
    probes[kExpectTxOnly] = mbarrierTestWaitParity(tx, 0);
    mbarrierArriveExpectTx(tx, 512);
    probes[kBytesOutstanding] = mbarrierTestWaitParity(tx, 0);
    bulkLoad(bulkAddress, bulkSource, 512, tx);
    bulkLoad(bulkAddress + 512, bulkSource + 128, 512, tx);
  }
  mbarrierWaitParity(tx, 0);
  bulkCopied[2 * tid] = bulk[2 * tid];
  bulkCopied[2 * tid + 1] = bulk[2 * tid + 1];

  // 5. Phase 1 of txBar completes by an explicit complete_tx. Everyone has
  //    seen phase 0 complete first (else a late wait on parity 0 would be
  //    a wait on phase 2).
  __syncthreads();
  if (tid == 0) {
    mbarrierArriveExpectTx(tx, 64);
    probes[kCompleteTxBefore] = mbarrierTestWaitParity(tx, 1);
    completeTx(tx, 64);
    probes[kCompleteTxAfter] = mbarrierTestWaitParity(tx, 1);
  }

  // 6. Generic writes, a proxy fence, and a bulk store back to global.
  bulk[2 * tid] += 1;
  bulk[2 * tid + 1] += 1;
  fenceProxyAsyncShared();
  __syncthreads();
  if (tid == 0) {
    bulkStore(bulkStored, bulkAddress, kBulkWords * sizeof(uint32_t));
    bulkCommitGroup();
    bulkWaitGroup0();
  }

  // 7. Invalidation: the barrier's memory is ordinary shared memory again,
  //    and can then hold a new barrier.
  __syncthreads();
  if (tid == 0) {
    invalidate(phase);
    invalidate(probe);
    invalidate(count);
    invalidate(tx);
    volatile uint64_t *reused = &phaseBar;
    *reused = 0x0123456789abcdefull;
    uint64_t value = *reused;
    probes[kReusedLow] = static_cast<uint32_t>(value);
    probes[kReusedHigh] = static_cast<uint32_t>(value >> 32);
    mbarrierInit(phase, 1);
    mbarrierArrive(phase);
    probes[kReinitialised] = mbarrierTestWaitParity(phase, 0);
    invalidate(phase);
  }
}
