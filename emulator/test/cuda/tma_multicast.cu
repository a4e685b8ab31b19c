//===- tma_multicast.cu - Cluster multicast TMA and distributed shared ---===//
//
// Clusters of 2 or 4 CTAs along x. Every CTA of cluster c receives a
// 64 x 32 bf16 box (128-byte rows, 128B swizzle) of the tensor through
// multicast TMA, completing on its own mbarrier at the same CTA-relative
// offset, and writes what it received to global memory. Three ways to issue:
//
//   kOneIssuer  rank 0 loads the whole box into every CTA (ctaMask = all).
//   kSlices     rank r loads rows [r*R/n, (r+1)*R/n) into every CTA, at the
//               slice's offset; each CTA still expects the whole box.
//   kPairs      (n = 4) rank 0 loads the box at the cluster's corner into
//               ranks 0 and 2 (ctaMask 0b0101); rank 1 loads the box 32 rows
//               below into ranks 1 and 3 (0b1010). Ranks 2, 3 issue nothing.
//
// Then a distributed-shared-memory exchange: each thread stores a value into
// the next CTA's shared memory (mapa + st.shared::cluster) and arrives on
// that CTA's mbarrier (release at cluster scope); each thread loads the
// previous CTA's `own` word (ld.shared::cluster). The cluster special
// registers are reported per CTA.
//
//===----------------------------------------------------------------------===//

#include "DeviceSupport.cuh"

using namespace emutest;

namespace {

enum IssueMode : uint32_t { kOneIssuer = 0, kSlices = 1, kPairs = 2 };

constexpr uint32_t kBoxCols = 64; // bf16: 128 bytes, one swizzle span
constexpr uint32_t kBoxRows = 32;
constexpr uint32_t kSwizzleSpan = 128;
constexpr uint32_t kThreads = 128;
// Special registers reported per CTA, in this order.
constexpr uint32_t kIdentityWords = 7;

__device__ uint32_t readClusterId() {
  uint32_t value;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(value));
  return value;
}

__device__ uint32_t readClusterCtaId() {
  uint32_t value;
  asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(value));
  return value;
}

__device__ uint32_t readClusterNumCtaIds() {
  uint32_t value;
  asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(value));
  return value;
}

__device__ uint32_t readNumClusterIds() {
  uint32_t value;
  asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(value));
  return value;
}

__device__ uint32_t readIsExplicitCluster() {
  uint32_t value;
  asm volatile("{\n\t.reg .pred p;\n\t"
               "mov.pred p, %%is_explicit_cluster;\n\t"
               "selp.u32 %0, 1, 0, p;\n\t}"
               : "=r"(value));
  return value;
}

// The shared::cluster address of `address` (shared::cta) in CTA `rank`.
__device__ uint32_t mapToRank(uint32_t address, uint32_t rank) {
  uint32_t mapped;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(mapped)
               : "r"(address), "r"(rank));
  return mapped;
}

__device__ void storeToCluster(uint32_t address, uint32_t value) {
  asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(address), "r"(value)
               : "memory");
}

__device__ uint32_t loadFromCluster(uint32_t address) {
  uint32_t value;
  asm volatile("ld.shared::cluster.u32 %0, [%1];"
               : "=r"(value)
               : "r"(address)
               : "memory");
  return value;
}

__device__ void arriveRemote(uint32_t clusterBarrier) {
  asm volatile(
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(
          clusterBarrier)
      : "memory");
}

__device__ void waitClusterAcquire(uint32_t barrier, uint32_t parity) {
  uint32_t done = 0;
  while (!done)
    asm volatile("{\n\t.reg .pred p;\n\t"
                 "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 "
                 "p, [%1], %2;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(done)
                 : "r"(barrier), "r"(parity)
                 : "memory");
}

__device__ uint32_t ownValue(uint32_t cluster, uint32_t rank, uint32_t tid) {
  return (cluster * 16 + rank) * 1000 + tid;
}

__device__ void multicastAndExchange(const CUtensorMap &map, uint32_t mode,
                                     const int32_t *corners, uint16_t *boxes,
                                     uint32_t *exchanged,
                                     uint32_t *identities) {
  __shared__ uint64_t boxFull, exchangeFull;
  __shared__ uint32_t own[kThreads], received[kThreads];
  uint32_t tid = threadIdx.x;
  uint32_t rank = clusterCtaRank(), ctas = clusterNumCtas();
  uint32_t cluster = readClusterId();
  uint32_t boxBarrier = sharedAddress(&boxFull);
  uint32_t exchangeBarrier = sharedAddress(&exchangeFull);
  uint32_t box = sharedAddress(dynamicShared);
  constexpr uint32_t kBoxBytes = kBoxCols * kBoxRows * sizeof(uint16_t);

  if (tid == 0) {
    mbarrierInit(boxBarrier, 1);
    mbarrierInit(exchangeBarrier, kThreads);
    fenceMbarrierInit();
    // Every CTA receives one whole box, whoever issues it.
    mbarrierArriveExpectTx(boxBarrier, kBoxBytes);
  }
  own[tid] = ownValue(cluster, rank, tid);
  // No copy may reach a CTA before its barrier is initialised.
  clusterSync();

  int32_t x = corners[2 * cluster], y = corners[2 * cluster + 1];
  uint16_t everyCta = static_cast<uint16_t>((1u << ctas) - 1);
  if (tid == 0) {
    if (mode == kOneIssuer && rank == 0) {
      tmaLoad2dMulticast(box, map, x, y, boxBarrier, everyCta);
    } else if (mode == kSlices) {
      uint32_t sliceRows = kBoxRows / ctas;
      tmaLoad2dMulticast(box + rank * sliceRows * kBoxCols * sizeof(uint16_t),
                         map, x, y + rank * sliceRows, boxBarrier, everyCta);
    } else if (mode == kPairs && rank < 2) {
      tmaLoad2dMulticast(box, map, x, y + rank * kBoxRows, boxBarrier,
                         static_cast<uint16_t>(0b0101u << rank));
    }
  }
  mbarrierWaitParity(boxBarrier, 0);

  uint32_t block = blockIdx.x;
  for (uint32_t i = tid; i < kBoxCols * kBoxRows; i += kThreads) {
    uint32_t address = swizzle(box + i * sizeof(uint16_t), kSwizzleSpan);
    boxes[block * kBoxCols * kBoxRows + i] =
        *reinterpret_cast<const uint16_t *>(dynamicShared + (address - box));
  }

  uint32_t next = (rank + 1) % ctas, previous = (rank + ctas - 1) % ctas;
  storeToCluster(mapToRank(sharedAddress(&received[tid]), next),
                 500000 + ownValue(cluster, rank, tid));
  arriveRemote(mapToRank(exchangeBarrier, next));
  uint32_t peerOwn =
      loadFromCluster(mapToRank(sharedAddress(&own[tid]), previous));
  waitClusterAcquire(exchangeBarrier, 0);
  exchanged[(block * kThreads + tid) * 2] = received[tid];
  exchanged[(block * kThreads + tid) * 2 + 1] = peerOwn;

  if (tid == 0) {
    uint32_t *identity = identities + block * kIdentityWords;
    identity[0] = rank;
    identity[1] = ctas;
    identity[2] = cluster;
    identity[3] = readClusterCtaId();
    identity[4] = readClusterNumCtaIds();
    identity[5] = readNumClusterIds();
    identity[6] = readIsExplicitCluster();
  }
  // No CTA may exit while a peer can still read its shared memory.
  clusterSync();
}

} // namespace

// Cluster shape from the launch (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION).
extern "C" __global__ void __launch_bounds__(kThreads)
    tma_multicast(const __grid_constant__ CUtensorMap map, uint32_t mode,
                  const int32_t *corners, uint16_t *boxes, uint32_t *exchanged,
                  uint32_t *identities) {
  multicastAndExchange(map, mode, corners, boxes, exchanged, identities);
}

// Cluster shape from the kernel (.reqnctapercluster), plain launch.
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(kThreads)
    tma_multicast_cluster2(const __grid_constant__ CUtensorMap map,
                           uint32_t mode, const int32_t *corners,
                           uint16_t *boxes, uint32_t *exchanged,
                           uint32_t *identities) {
  multicastAndExchange(map, mode, corners, boxes, exchanged, identities);
}
