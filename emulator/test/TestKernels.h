//===- TestKernels.h - PTX kernels for the emulator tests ---*- C++ -*-===//
//
// The small sm_90a kernels the parser, execution and hazard tests run, and
// the helpers they share: loading a module, laying out a parameter buffer
// the way `KernelInfo::parameters` says, device buffers, 2-D tensor maps,
// and finding a kernel line by a marker comment (hazard and fault messages
// name program locations by line).
//
// Each hazard kernel comes as a mutant (it has the hazard) and a fixed
// variant built from the same text, so the two differ only in the lines the
// fix adds or moves. Every such line carries a `// <marker>` comment that the
// tests look up with `lineOf`.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_TEST_TESTKERNELS_H
#define MOSAIC_EMULATOR_TEST_TESTKERNELS_H

#include "mosaic/Emulator/Machine.h"
#include "mosaic/Emulator/TensorMap.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mosaic::emulator::test {

// --- Helpers ---------------------------------------------------------------

/// `.version 8.0`, `.target sm_90a`, `.address_size 64`, then `body`. The
/// header is three lines, so line numbers in `body` are off by three.
std::string ptxModule(std::string_view body);

/// The 1-based line of the first line of `text` containing `marker`, or 0.
uint32_t lineOf(std::string_view text, std::string_view marker);

/// Whether `message` names line `line` ("line 12:" or "line 12)", not
/// "line 123").
bool namesLine(const std::string &message, uint32_t line);

/// Options for tests: one host thread, the hazard checker on.
Options testOptions(AsyncPolicy policy = AsyncPolicy::Lazy);

/// A parameter buffer laid out as a kernel's `KernelInfo` says. Setting a
/// name the kernel does not have, or a value of the wrong size, records a
/// test failure.
class Parameters {
public:
  explicit Parameters(const KernelInfo &info);
  Parameters &set(std::string_view name, const void *data, size_t bytes);
  template <typename T> Parameters &set(std::string_view name, T value) {
    return set(name, &value, sizeof(T));
  }
  const std::vector<uint8_t> &bytes() const { return buffer; }

private:
  const KernelInfo &info;
  std::vector<uint8_t> buffer;
};

/// Zero-filled device memory, viewed from the host.
struct DeviceBuffer {
  uint64_t address = 0;
  uint8_t *host = nullptr;
  size_t bytes = 0;
  template <typename T> T *as() const { return reinterpret_cast<T *>(host); }
};
DeviceBuffer allocate(DeviceMemory &memory, size_t bytes);

/// The 128 bytes of a row-major 2-D tensor map over `rows` x `columns`
/// elements of `dataType` (cuda.h's CUtensorMapDataType) at `address`,
/// moved in boxes of `boxRows` x `boxColumns`, with swizzle enum `swizzle`.
/// A bad argument records a test failure.
std::array<uint8_t, kTensorMapBytes>
tensorMap2d(uint64_t address, uint32_t dataType, uint64_t rows,
            uint64_t columns, uint32_t boxRows, uint32_t boxColumns,
            uint32_t swizzle = 0);

/// cuda.h's CU_TENSOR_MAP_DATA_TYPE_FLOAT32.
constexpr uint32_t kTensorFloat32 = 7;

/// A loaded module and the launch plumbing of one kernel in it.
class Kernel {
public:
  /// Loads `ptx` (the full module text); a parse error or a missing kernel
  /// records a test failure and leaves `ok()` false.
  Kernel(std::string ptx, std::string name);
  bool ok() const { return module != nullptr && info != nullptr; }
  const std::string &text() const { return ptx; }
  uint32_t line(std::string_view marker) const { return lineOf(ptx, marker); }
  Parameters parameters() const { return Parameters(*info); }
  LaunchReport launch(uint32_t threads, const Parameters &parameters,
                      DeviceMemory &memory, const Options &options,
                      uint32_t dynamicSharedBytes = 0) const;
  /// A launch over `config`'s grid, blocks and clusters, with
  /// `parameters` as its parameter buffer.
  LaunchReport launch(LaunchConfig config, const Parameters &parameters,
                      DeviceMemory &memory, const Options &options) const;

private:
  std::string ptx;
  std::string name;
  std::shared_ptr<const Module> module;
  const KernelInfo *info = nullptr;
};

// --- Execution kernels (ExecuteTest) ----------------------------------------

/// `integer_ops(in, out)`: thread t reads s32 a, b, c from in[3t..3t+2] and
/// writes kIntegerResults words at out[kIntegerResults * t], in the order
/// of the table in TestKernels.cpp.
constexpr unsigned kIntegerResults = 24;
extern const char *const kIntegerOpsKernel;

/// `compare_ops(in, out)`: thread t compares f32 x = in[2t], y = in[2t+1]
/// and writes kCompareResults words at out[kCompareResults * t].
constexpr unsigned kCompareResults = 16;
extern const char *const kCompareKernel;

/// `convert_ops(fin, iin, out)`: thread t converts f32 fin[t] to integers
/// and s32/u32 iin[t] to f32 with each rounding mode; kConvertResults words
/// at out[kConvertResults * t].
constexpr unsigned kConvertResults = 16;
extern const char *const kConvertKernel;

/// `fma_vs_mul_add(in, out)`: out = {fma.rn(a, b, c), add(mul(a, b), c)}.
extern const char *const kFmaKernel;

/// `diverge(out)`: odd and even lanes take different paths, reconverge,
/// then a bar.sync and a full-warp shfl.
extern const char *const kDivergeKernel;

/// `latch_first_loop(out)`: a loop whose latch block is laid out before its
/// body, with a per-lane trip count, followed by bar.sync.
extern const char *const kLatchFirstLoopKernel;

/// `shuffles(out)`: shfl.sync in each mode; 6 words per lane.
extern const char *const kShuffleKernel;

/// `diverged_aligned(out)`: lanes 16..31 reach `instruction` (a
/// `.sync.aligned` one) while lanes 0..15 branched past it.
std::string divergedAlignedKernel(std::string_view instruction);

/// `faults(out, mode)`: mode 0 stores past the end of `out` from lanes
/// 16..31, mode 1 loads a u32 at out + 2.
extern const char *const kFaultKernel;

/// `stuck_bar(out)`: warps 0 and 1 wait at `bar.sync 1, 96` while warp 2
/// exits.
extern const char *const kStuckBarrierKernel;

/// `pipeline(in_map, out_map)`: two warps; thread 0 TMA-loads an 8x8 f32
/// box, everyone waits on the mbarrier, thread t writes in[t] * in[t] + t
/// to a second tile, fences, synchronizes, and thread 0 TMA-stores it.
extern const char *const kPipelineKernel;

// --- Parser kernels (ParserTest)
// ----------------------------------------------

/// `syntax(out, map)`: register ranges, inline-asm scopes with local
/// registers and a label repeated in two scopes, predication, vectors,
/// [%rd+16], [sym+8], float immediates, and a TMA load whose tensor map
/// comes from a register and whose coordinates are registers.
extern const char *const kSyntaxKernel;

// --- Hazard kernels (HazardTest)
// ----------------------------------------------

/// (a) `race(out)`: thread 0 writes a shared word that thread 32 reads;
/// `withBarrier` puts a bar.sync between them.
std::string raceKernel(bool withBarrier);

/// (a) `two_readers(out)`: threads 0 (warp 0) and 32 (warp 1) read a shared
/// word that thread 64 (warp 2) then writes. `allSynchronize` false orders
/// only warp 1's read before the write (`bar.sync 1, 64` with warp 2);
/// true uses `bar.sync 0` for all three warps.
std::string twoReadersKernel(bool allSynchronize);

/// (b) `tma_read(map, out)`: thread 0 TMA-loads an 8x8 f32 box; the lanes
/// read it before (`afterWait` false) or after waiting on the mbarrier.
std::string tmaReadKernel(bool afterWait);

/// (c) `tma_store(map)`: 64 threads write a tile, thread 0 TMA-stores it;
/// `fenced` adds fence.proxy.async.shared::cta before the bar.sync.
std::string tmaStoreKernel(bool fenced);

/// (b) `store_reuse(map)`: thread 0 TMA-stores a tile that every thread
/// then overwrites; `waitFirst` makes thread 0 wait for the store's reads
/// (cp.async.bulk.wait_group.read 0) and everyone synchronize first.
std::string storeReuseKernel(bool waitFirst);

/// (c) `store_mixed(map)`: like tma_store, but word i = 2 (t % 32) + t / 32
/// so that every 16-byte chunk holds words of both warps; `allFence` false
/// fences warp 1 only (warp 0's writes stay unfenced).
std::string mixedChunkStoreKernel(bool allFence);

/// (a, d) `refill_mixed(map, out)`: a TMA load fills a tile, both warps read
/// interleaved words of it (every chunk read by both warps), then thread 32
/// refills the tile by TMA; `withBarrier` puts a bar.sync between the reads
/// and the refill.
std::string mixedChunkRefillKernel(bool withBarrier);

/// (d, e) `wgmma_kernel(map, out)`: one warpgroup, m64n8k16 bf16 with A and
/// B in shared memory (all ones: every D element is 16), then thread 0
/// refills B's buffer by TMA and every thread stores its accumulators.
enum class WgmmaMutation {
  None,
  /// (d) no `bar.sync 1, 128` between wgmma.wait_group and the refill.
  RefillWithoutBarrier,
  /// (e) the accumulators are zeroed after wgmma.fence, not before.
  AccumulatorWrittenAfterFence,
  /// (e) an accumulator is read between commit_group and wait_group.
  AccumulatorReadBeforeWait,
};
std::string wgmmaKernel(WgmmaMutation mutation);

/// (f) `arrive_init(out)`: the arrivals come before (`initFirst` false) or
/// after the mbarrier.init.
std::string arriveInitKernel(bool initFirst);

/// (f) `tx_count(out)`: expect_tx and complete_tx of `bytes`.
std::string txCountKernel(uint32_t bytes);

/// (f) `phases(out)`: thread 32 completes `phases` phases of an mbarrier
/// (count 1) before a bar.sync handshake, after which warp 0 waits with
/// parity 0: with 2 phases it waits on a phase that aliases the current
/// one, with 3 its wait succeeds on the wrong phase.
std::string phaseBehindKernel(unsigned phases);
/// (f) fixed: warp 0 waits on each of three phases in turn, handshaking
/// with warp 1 between them.
extern const char *const kPhaseInStepKernel;

/// (g) `stuck_mbarrier(map, out)`: thread 0 arrives with expect_tx(256);
/// `withCopy` issues the TMA load that brings those bytes, else every warp
/// waits forever.
std::string stuckMbarrierKernel(bool withCopy);

// --- Warp specialization and clusters (ExecuteTest, HazardTest) -------------

/// `warp_roles(out)`: 384 threads, three warpgroups, after the directives
/// `bounds` (which fix the register count at launch, or not). Warpgroup 0
/// (the producer) hashes x = t for 200 steps, x = 1664525 x + 1013904223,
/// then runs `producer` (`// PRODUCER`); warpgroups 1 and 2 (the consumers)
/// run `consumer` (`// CONSUMER`) at once, with x = t + 1000. Thread t
/// stores x at out[t].
std::string warpRolesKernel(std::string_view bounds, std::string_view producer,
                            std::string_view consumer);

/// `mismatched_setmaxnreg()`: one warpgroup with the register count fixed
/// at 255; warp 2 runs `setmaxnreg.dec ... 48` (`// OTHER`), warps 0, 1
/// and 3 `setmaxnreg.dec ... 40` (`// FIRST`).
extern const char *const kMismatchedSetmaxnregKernel;

/// `setmaxnreg_exit()`: one warpgroup; warp 3 exits (`// EXIT`) while
/// warps 0-2 run setmaxnreg.dec to 40 (`// DEC`).
extern const char *const kSetmaxnregExitKernel;

/// `setmaxnreg_twice()`: one warpgroup runs setmaxnreg.dec to 40, then
/// `between`, then setmaxnreg.dec to 32 (`// SECOND`).
std::string setmaxnregTwiceKernel(std::string_view between);

/// `named_barriers(out)`: 384 threads. Warp 0 leaves a note (t + 1000 per
/// lane) for warp 4 and signals it with `bar.arrive 3, 64`; warpgroup 0
/// touches no other barrier. Consumer thread t (128..383) stores t in a
/// shared word, synchronizes its warpgroup (`bar.sync 1, 128`, or
/// `barrier.sync.aligned 15, 128` in warpgroup 2), reads the word of thread
/// t ^ 32 (a lane of the other warp pair), synchronizes both consumer
/// warpgroups (`bar.sync 7, 256`), reads the word of thread t + 128 (or
/// t - 128) of the other consumer warpgroup, and warp 4 then waits at
/// `bar.sync 3, 64` and reads the note of lane t - 128. Thread t stores
/// the three values read (0 for none) at out[3t..3t+2].
extern const char *const kNamedBarriersKernel;

/// `barrier_misuse()`: warp 1 and the other warps reach different barrier
/// instructions.
enum class BarrierMisuse {
  /// 96 threads: warps 0 and 2 `bar.sync 2, 96` (`// SET`), warp 1
  /// `barrier.sync.aligned 2, 64` (`// MISMATCH`).
  MismatchedCount,
  /// 64 threads: warp 0 `bar.arrive 4, 64` twice (`// AGAIN`), warp 1
  /// `bar.sync 4, 64`.
  ArrivesTwice,
  /// 64 threads: every warp `bar.sync 1, 128` (`// TOO_MANY`).
  CountAboveCta,
};
std::string barrierMisuseKernel(BarrierMisuse misuse);

/// `cluster_ids(out)`: 32 threads per CTA. Thread 0 of the CTA with linear
/// index i = %ctaid.y * %nctaid.x + %ctaid.x writes kClusterIdWords words at
/// out + 16 i (u32): %ctaid.{x,y}, %clusterid.{x,y}, %nclusterid.{x,y},
/// %cluster_ctaid.{x,y}, %cluster_nctaid.{x,y}, %cluster_ctarank,
/// %cluster_nctarank, and the shared word 100 r + 7 that the CTA of rank
/// r = (own rank + 1) % %cluster_nctarank stored (mapa +
/// ld.shared::cluster between two barrier.cluster arrive/wait pairs).
constexpr unsigned kClusterIdWords = 13;
extern const char *const kClusterIdsKernel;

/// `ws_cluster(map, out)`: the shape of a warp-specialized GEMM in clusters
/// of two CTAs of three warpgroups, with the register count fixed at 168.
/// Warpgroup 0 gives registers back (setmaxnreg.dec to 40); its thread 0
/// runs 4 iterations over 2 stages: wait for the stage's `empty` mbarrier
/// (count 6), arrive.expect_tx(256) on its `full` mbarrier, and TMA-load
/// rows [8 i + 4 r, 8 i + 4 r + 4) of the 32 x 8 f32 tensor into the
/// stage's row 4 r in both CTAs (`.multicast::cluster`, ctaMask 3;
/// `// MULTICAST`). Warpgroups 1 and 2 take registers (setmaxnreg.inc to
/// 232); each thread waits for `full`, adds element t % 64 of the stage to
/// its sum, the warpgroup synchronizes (`bar.sync 1 + wg, 128`), and its
/// first thread releases the stage in both CTAs (mapa, then
/// `mbarrier.arrive.release.cluster.shared::cluster` without a count in
/// warpgroup 1, `// ARRIVE_ONE`, and with count 2 in warpgroup 2,
/// `// ARRIVE_TWO`). Consumer thread t stores its sum at
/// out[256 %ctaid.x + t - 128]. `clusterSyncAtEnd` ends every thread with
/// barrier.cluster arrive and wait (`// END`); without it a CTA can exit
/// while its peer's consumers still arrive on its `empty` barriers.
std::string wsClusterKernel(bool clusterSyncAtEnd);

/// `late_peer()`: clusters of two CTAs of 32 threads. Rank 0 initializes an
/// mbarrier and both synchronize the cluster; rank 1 then works a while and
/// arrives on rank 0's mbarrier (`// LATE_ARRIVE`). `waitAtEnd` ends both
/// CTAs with barrier.cluster arrive and wait; without it rank 0 exits first.
std::string latePeerKernel(bool waitAtEnd);

/// `bulk_multicast(in, out)`: clusters of two CTAs of 32 threads. Rank r
/// copies bytes [128 r, 128 r + 128) of `in` into both CTAs' 256-byte
/// buffer at the same offset (cp.async.bulk ... .multicast::cluster, ctaMask
/// 3), each CTA expecting 256 bytes on its own mbarrier; lane l of rank r
/// then stores words 2l and 2l + 1 of its buffer at out[64 r + 2l].
extern const char *const kBulkMulticastKernel;

/// `copy_misuse(in)`: clusters of two CTAs of 32 threads; after both
/// initialize an mbarrier, thread 0 of each runs `copy` (`// COPY`), where
/// %rd0 holds `in`, `buffer` is a 128-byte shared buffer, `bar` the
/// CTA's mbarrier and %remote the shared::cluster address of rank 1's.
std::string copyMisuseKernel(std::string_view copy);

/// `cluster_exit(out)`: clusters of two CTAs of 64 threads. Warp 1 of each
/// CTA arrives at barrier.cluster and waits; warp 0 works a while and exits
/// without arriving. Thread 32 of CTA x stores 1 at out[x] after its wait.
extern const char *const kClusterBarrierExitKernel;

} // namespace mosaic::emulator::test

#endif // MOSAIC_EMULATOR_TEST_TESTKERNELS_H
