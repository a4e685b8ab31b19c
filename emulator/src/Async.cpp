//===- Async.cpp - mbarriers, TMA, bulk copies and wgmma ----------------===//
//
// The asynchronous proxy. Issuing an operation records what it will do and
// queues it; the scheduler completes it when the policy says, and only then
// does it read and write memory (a TMA load reads global memory and writes
// shared memory at completion, a wgmma reads its shared-memory operands and
// writes its accumulators at completion), so code that touches the data too
// early sees stale values, as on hardware, and the hazard checker says why.
// Semantics: PTX ISA sections on mbarrier, cp.async.bulk(.tensor) and wgmma;
// layouts from Spec.h; the tensor map from TensorMap.h.
//
//===----------------------------------------------------------------------===//

#include "Execute.h"
#include "Hazards.h"
#include "mosaic/Emulator/Numerics.h"
#include "mosaic/Emulator/Spec.h"
#include "mosaic/Emulator/TensorMap.h"

#include <cmath>
#include <cstring>
#include <mutex>

namespace mosaic::emulator {

namespace {

constexpr int64_t kMaxTxCount = (1 << 20) - 1;

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(value));
  return text;
}

/// Completes the phase when every arrival and every byte is in.
void maybeCompletePhase(Cluster &cluster, Cta &cta, uint32_t offset,
                        MbarrierState &m) {
  if (m.pending == 0 && m.tx == 0) {
    ++m.phase;
    m.pending = m.expected;
    cluster.hazards->onMbarrierPhase(cta, offset, m);
  }
}

/// complete_tx of `bytes` on the mbarrier at `offset` of `target`, by the
/// copy `what` when it completes.
void completeTransactions(Cluster &cluster, Cta &target, uint32_t offset,
                          uint64_t bytes, const AsyncClock &clock,
                          const std::string &what) {
  MbarrierState &m = target.mbarriers[offset];
  if (!m.initialized) {
    cluster.hazards->flag("hazard: mbarrier misuse: " + what +
                          " completes bytes on the mbarrier at shared "
                          "address " +
                          std::to_string(offset) + " of CTA rank " +
                          std::to_string(target.rank) +
                          ", which is not initialized");
    return;
  }
  m.tx -= static_cast<int64_t>(bytes);
  cluster.hazards->onAsyncRelease(target, offset, clock);
  maybeCompletePhase(cluster, target, offset, m);
}

} // namespace

bool Exec::copyTargets(const SharedLocation &destination,
                       const SharedLocation &barrier, size_t maskIndex,
                       uint32_t lane, std::vector<Cta *> &targets) {
  if (!in.multicast) {
    if (barrier.cta != destination.cta)
      return fail("a copy into the shared memory of CTA rank " +
                      std::to_string(destination.cta->rank) +
                      " completes on an mbarrier of CTA rank " +
                      std::to_string(barrier.cta->rank) +
                      " (they must be in the same CTA)",
                  static_cast<int>(lane));
    targets.push_back(destination.cta);
    return true;
  }
  if (maskIndex >= in.operands.size())
    return fail(".multicast::cluster without a ctaMask operand",
                static_cast<int>(lane));
  uint16_t ctaMask = static_cast<uint16_t>(read(in.operands[maskIndex], lane));
  for (uint32_t r = 0; r < 16; ++r)
    if (ctaMask >> r & 1) {
      if (r >= cluster.ctas.size())
        return fail("multicast mask " + hex(ctaMask) + " names CTA rank " +
                        std::to_string(r) + " of a cluster of " +
                        std::to_string(cluster.ctas.size()),
                    static_cast<int>(lane));
      targets.push_back(cluster.ctas[r].get());
    }
  return true;
}

std::optional<SharedLocation> Exec::sharedOperand(const Operand &operand,
                                                  Space space, unsigned bytes,
                                                  uint32_t lane) {
  uint64_t at = address(operand, lane);
  bool clusterWindow = space == Space::SharedCluster;
  if (space == Space::Generic) {
    if (at < kGenericSharedBase || at >= kGenericSharedBase + kWindowSize) {
      fail("generic address " + hex(at) + " is not in shared memory",
           static_cast<int>(lane), FaultKind::IllegalAddress);
      return std::nullopt;
    }
    at -= kGenericSharedBase;
    clusterWindow = true;
  }
  return resolveShared(at, clusterWindow, bytes, lane);
}

std::optional<SharedLocation>
Exec::alignedSharedOperand(const Operand &operand, Space space, unsigned bytes,
                           unsigned alignment, const char *what,
                           uint32_t lane) {
  std::optional<SharedLocation> location =
      sharedOperand(operand, space, bytes, lane);
  if (location && location->offset % alignment != 0) {
    fail(std::string(what) + " at shared address " +
             std::to_string(location->offset) + " is not " +
             std::to_string(alignment) + "-byte aligned",
         static_cast<int>(lane), FaultKind::MisalignedAddress);
    return std::nullopt;
  }
  return location;
}

AsyncOp Exec::newAsync(uint32_t lane) {
  AsyncOp async;
  async.id = cluster.nextAsyncId++;
  async.pc = pc;
  async.cta = &cta;
  async.warp = warp.index;
  async.lane = lane;
  return async;
}

bool Exec::queue(AsyncOp async) {
  uint64_t id = async.id;
  int lane = static_cast<int>(async.lane);
  cluster.async.push_back(std::move(async));
  if (launch.options->policy != AsyncPolicy::Eager)
    return true;
  Status status = completeAsync(cluster, id);
  return status.ok() || fail(status.message(), lane, cluster.faultKind);
}

// --- mbarrier -------------------------------------------------------------

bool Exec::mbarrier(uint32_t mask) {
  Op op = in.op;
  // Operand layout: [state|pred,] [addr], values...
  size_t addressIndex =
      in.operands[0].kind == Operand::Kind::Address ? 0 : 1;
  const Operand &addressOperand = in.operands[addressIndex];
  auto value = [&](size_t i, uint32_t lane) -> uint64_t {
    size_t index = addressIndex + 1 + i;
    return index < in.operands.size() ? read(in.operands[index], lane) : 0;
  };
  auto hasValue = [&](size_t i) {
    return addressIndex + 1 + i < in.operands.size();
  };
  bool waitBlocked = false;
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    std::optional<SharedLocation> location = alignedSharedOperand(
        addressOperand, in.space, 8, 8, "the mbarrier", lane);
    if (!location)
      return false;
    Cta &target = *location->cta;
    uint32_t offset = location->offset;
    if (&target != &cta)
      cluster.hazards->onPeerAccess(target, warp, lane, pc);
    MbarrierState &m = target.mbarriers[offset];
    std::string where = "the mbarrier at shared address " +
                        std::to_string(offset) +
                        (location->cta != &cta
                             ? " of CTA rank " + std::to_string(target.rank)
                             : std::string());
    if (op != Op::MbarrierInit && !m.initialized) {
      hazard("mbarrier misuse: " + where + " is used before mbarrier.init",
             static_cast<int>(lane));
      return true;
    }
    switch (op) {
    case Op::MbarrierInit: {
      uint64_t count = value(0, lane);
      if (count == 0 || count > uint64_t(kMaxTxCount)) {
        hazard("mbarrier misuse: mbarrier.init of " + where + " with count " +
                   std::to_string(count) + " (must be 1.." +
                   std::to_string(kMaxTxCount) + ")",
               static_cast<int>(lane));
        return true;
      }
      m = MbarrierState();
      m.initialized = true;
      m.expected = m.pending = static_cast<uint32_t>(count);
      cluster.hazards->onMbarrierInit(target, offset, warp);
      break;
    }
    case Op::MbarrierInval:
      m.initialized = false;
      break;
    case Op::MbarrierExpectTx:
    case Op::MbarrierCompleteTx: {
      int64_t bytes = static_cast<int64_t>(value(0, lane) & 0xffffffff);
      m.tx += op == Op::MbarrierExpectTx ? bytes : -bytes;
      if (m.tx > kMaxTxCount || m.tx < -kMaxTxCount) {
        hazard("mbarrier misuse: the tx-count of " + where + " reaches " +
                   std::to_string(m.tx) + ", outside +-" +
                   std::to_string(kMaxTxCount),
               static_cast<int>(lane));
        return true;
      }
      if (op == Op::MbarrierCompleteTx)
        maybeCompletePhase(cluster, target, offset, m);
      break;
    }
    case Op::MbarrierArrive:
    case Op::MbarrierArriveDrop:
    case Op::MbarrierArriveExpectTx:
    case Op::MbarrierArriveDropExpectTx: {
      bool expectTx = op == Op::MbarrierArriveExpectTx ||
                      op == Op::MbarrierArriveDropExpectTx;
      bool drop = op == Op::MbarrierArriveDrop ||
                  op == Op::MbarrierArriveDropExpectTx;
      uint64_t count = 1;
      if (expectTx) {
        int64_t bytes = static_cast<int64_t>(value(0, lane) & 0xffffffff);
        m.tx += bytes;
        if (m.tx > kMaxTxCount || m.tx < -kMaxTxCount) {
          hazard("mbarrier misuse: the tx-count of " + where + " reaches " +
                     std::to_string(m.tx) + ", outside +-" +
                     std::to_string(kMaxTxCount),
                 static_cast<int>(lane));
          return true;
        }
        if (hasValue(1))
          count = value(1, lane);
      } else if (hasValue(0)) {
        count = value(0, lane);
      }
      if (count > m.pending) {
        hazard("mbarrier misuse: " + std::to_string(count) +
                   " arrivals on " + where + " with only " +
                   std::to_string(m.pending) + " pending in phase " +
                   std::to_string(m.phase),
               static_cast<int>(lane));
        return true;
      }
      if (addressIndex == 1)
        write(in.operands[0], lane, m.phase, Type::None);
      cluster.hazards->onMbarrierArrive(target, offset, warp);
      m.pending -= static_cast<uint32_t>(count);
      if (drop)
        m.expected -= static_cast<uint32_t>(count);
      if (in.variant != 2) // .noComplete
        maybeCompletePhase(cluster, target, offset, m);
      break;
    }
    case Op::MbarrierTestWait:
    case Op::MbarrierTryWait: {
      uint64_t token = value(0, lane);
      bool parity = in.variant == 1;
      bool done = parity ? (m.phase & 1) != (token & 1) : m.phase > token;
      if (done)
        report(cluster.hazards->onMbarrierWait(target, offset, warp, lane, m,
                                               parity ? (token & 1) : token,
                                               parity));
      if (!done && op == Op::MbarrierTryWait) {
        // try_wait may suspend the thread until the phase completes (the
        // ISA leaves the time limit to the system): block the warp.
        warp.status = WarpStatus::Blocked;
        warp.block = BlockKind::Mbarrier;
        warp.blockPc = pc;
        warp.blockCta = &target;
        warp.blockAddress = offset;
        warp.blockParity = parity ? static_cast<uint32_t>(token & 1)
                                  : static_cast<uint32_t>(token & 1);
        waitBlocked = true;
        break;
      }
      // test_wait never blocks: it reports the state. A warp that polls
      // lets the others (and the asynchronous proxy) run first.
      write(in.operands[0], lane, done, Type::Pred);
      if (!done) {
        warp.spinning = true;
        warp.blockPc = pc;
        warp.blockCta = &target;
        warp.blockAddress = offset;
        warp.blockParity = static_cast<uint32_t>(token & 1);
      }
      break;
    }
    case Op::MbarrierPendingCount:
      return fail("mbarrier.pending_count is not supported by the emulator");
    default:
      return fail("unsupported mbarrier operation");
    }
  }
  if (waitBlocked) {
    blocked = true;
    return true;
  }
  return true;
}

// --- TMA ------------------------------------------------------------------

namespace {

/// The box a TMA operation moves: per-dimension element counts and the
/// linear order of its elements in shared memory (innermost first).
struct Box {
  unsigned rank = 0;
  std::array<uint32_t, 5> count{};
  std::array<int64_t, 5> start{};
  uint64_t elements() const {
    uint64_t n = 1;
    for (unsigned d = 0; d < rank; ++d)
      n *= count[d];
    return n;
  }
};

Box makeBox(const TensorMap &map, const std::array<int64_t, 5> &coordinates) {
  Box box;
  box.rank = map.rank;
  for (unsigned d = 0; d < map.rank; ++d) {
    uint32_t stride = std::max<uint32_t>(1, map.elementStrides[d]);
    box.count[d] = (map.boxDim[d] + stride - 1) / stride;
    box.start[d] = coordinates[d];
  }
  return box;
}

/// Visits every row of `box` (its innermost dimension): the index of its
/// first element in shared-memory order, and the global byte offset of the
/// whole row when every element of it is inside the tensor and contiguous,
/// else -1 (the caller then visits its elements one by one).
template <typename Row, typename Element>
void forEachRow(const TensorMap &map, const Box &box, Row row,
                Element element) {
  std::array<uint32_t, 5> index{};
  uint64_t rows = box.elements() / box.count[0];
  uint32_t stride0 = std::max<uint32_t>(1, map.elementStrides[0]);
  for (uint64_t r = 0; r < rows; ++r) {
    int64_t offset = 0;
    bool inside = true;
    for (unsigned d = 1; d < box.rank; ++d) {
      int64_t coordinate =
          box.start[d] +
          int64_t(index[d]) * std::max<uint32_t>(1, map.elementStrides[d]);
      if (coordinate < 0 || uint64_t(coordinate) >= map.globalDim[d])
        inside = false;
      offset += coordinate * int64_t(map.globalStrides[d]);
    }
    uint64_t first = r * box.count[0];
    int64_t last0 = box.start[0] + int64_t(box.count[0] - 1) * stride0;
    if (inside && stride0 == 1 && box.start[0] >= 0 &&
        uint64_t(last0) < map.globalDim[0]) {
      row(first, offset + box.start[0] * int64_t(map.globalStrides[0]));
    } else {
      for (uint32_t i = 0; i < box.count[0]; ++i) {
        int64_t coordinate = box.start[0] + int64_t(i) * stride0;
        bool in = inside && coordinate >= 0 &&
                  uint64_t(coordinate) < map.globalDim[0];
        element(first + i,
                in ? offset + coordinate * int64_t(map.globalStrides[0])
                   : int64_t(-1));
      }
    }
    for (unsigned d = 1; d < box.rank; ++d) {
      if (++index[d] < box.count[d])
        break;
      index[d] = 0;
    }
  }
}

/// Whether some element of `box` lies outside the tensor.
bool crossesEdge(const TensorMap &map, const Box &box) {
  for (unsigned d = 0; d < box.rank; ++d) {
    int64_t stride = std::max<uint32_t>(1, map.elementStrides[d]);
    int64_t last = box.start[d] + int64_t(box.count[d] - 1) * stride;
    if (box.start[d] < 0 || uint64_t(last) >= map.globalDim[d])
      return true;
  }
  return false;
}

/// "x, y" of the box's origin, innermost first.
std::string formatCoordinates(const Box &box) {
  std::string text;
  for (unsigned d = 0; d < box.rank; ++d)
    text += (d ? ", " : "") + std::to_string(box.start[d]);
  return text;
}

/// "100 x 72 elements", innermost first.
std::string formatExtent(const TensorMap &map) {
  std::string text;
  for (unsigned d = 0; d < map.rank; ++d)
    text += (d ? " x " : "") + std::to_string(map.globalDim[d]);
  return text + " elements";
}

void oobFill(const TensorMap &map, uint8_t *element, unsigned bytes) {
  if (!map.oobFillNan || !isFloat(map.dataType)) {
    std::memset(element, 0, bytes);
    return;
  }
  // The canonical NaN of the element type.
  uint64_t nan = bytes == 2 ? (map.dataType == TensorDataType::BF16 ? 0x7fff
                                                                    : 0x7fff)
                 : bytes == 4 ? 0x7fffffffull
                              : 0x7fffffffffffffffull;
  std::memcpy(element, &nan, bytes);
}

template <typename T> T reduceValue(uint8_t op, T old, T value) {
  switch (op) {
  case 1:
    return old + value;
  case 2:
    return std::min(old, value);
  case 3:
    return std::max(old, value);
  case 4:
    return old >= value ? 0 : old + 1;
  case 5:
    return (old == 0 || old > value) ? value : old - 1;
  default:
    return value;
  }
}

/// An integer reduction of `element` into `target` (both unaligned bytes).
template <typename T>
void reduceAt(uint8_t *target, const uint8_t *element, uint8_t op) {
  T old, value;
  std::memcpy(&old, target, sizeof(T));
  std::memcpy(&value, element, sizeof(T));
  T result = op == 6   ? T(old & value)
             : op == 7 ? T(old | value)
             : op == 8 ? T(old ^ value)
                       : reduceValue<T>(op, old, value);
  std::memcpy(target, &result, sizeof(T));
}

const char *reductionName(uint8_t op) {
  static const char *names[] = {"?",   "add", "min", "max", "inc",
                                "dec", "and", "or",  "xor"};
  return op < 9 ? names[op] : "?";
}

/// The (operation, element type) pairs of cp.reduce.async.bulk.tensor in
/// the PTX ISA: add on f32/f16/bf16/u32/s32/u64; min and max on
/// f16/bf16/u32/s32/u64/s64; inc and dec on u32; and, or and xor on 32- and
/// 64-bit integers.
bool isValidReduction(uint8_t op, TensorDataType type) {
  using T = TensorDataType;
  switch (op) {
  case 1:
    return type == T::F32 || type == T::F16 || type == T::BF16 ||
           type == T::U32 || type == T::S32 || type == T::U64;
  case 2:
  case 3:
    return type == T::F16 || type == T::BF16 || type == T::U32 ||
           type == T::S32 || type == T::U64 || type == T::S64;
  case 4:
  case 5:
    return type == T::U32;
  case 6:
  case 7:
  case 8:
    return type == T::U32 || type == T::S32 || type == T::U64 ||
           type == T::S64;
  default:
    return false;
  }
}

/// Why a tensor copy may not read its tensor map at generic address
/// `address`, if it may not: the PTX ISA puts the map in .param, .const or
/// .global memory, so not in the shared or local window.
std::optional<std::string> misplacedTensorMap(uint64_t address) {
  const char *space = nullptr;
  if (address >= kGenericSharedBase &&
      address < kGenericSharedBase + kWindowSize)
    space = "shared";
  else if (address >= kGenericLocalBase &&
           address < kGenericLocalBase + kWindowSize)
    space = "local";
  if (!space)
    return std::nullopt;
  return "the tensor map at generic address " + hex(address) + " is in " +
         space +
         " memory; a tensor copy reads its tensor map from .param, .const "
         "or .global memory";
}

} // namespace

bool Exec::tensorCopy(uint32_t mask) {
  Op op = in.op;
  // Loads name their destination .shared::cluster, or (PTX ISA 8.6)
  // .shared::cta, this CTA's window only.
  bool isLoad = op == Op::CpAsyncBulkTensor &&
                (in.space == Space::SharedCluster || in.space == Space::Shared);
  Space destinationSpace = in.space;
  if (op == Op::CpAsyncBulkTensor && !isLoad && in.space != Space::Global)
    return fail("unsupported cp.async.bulk.tensor direction");
  // Operands. Load: [dst], [map, {coords}], [mbar] (, ctaMask)(, policy).
  // Store/reduce: [map, {coords}], [src] (, policy).
  size_t mapIndex = isLoad ? 1 : 0;
  const Operand &mapOperand = in.operands[mapIndex];
  const Operand &coordinateOperand = in.operands[mapIndex + 1];
  if (coordinateOperand.kind != Operand::Kind::Vector)
    return fail("tensor coordinates must be a {...} vector");
  if (coordinateOperand.count != in.dims)
    return fail("a ." + std::to_string(in.dims) + "d copy with " +
                std::to_string(coordinateOperand.count) + " coordinates");
  uint8_t reduction = in.variant;
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint64_t mapAddress = address(mapOperand, lane);
    Space mapSpace = mapOperand.symbolSpace == Space::Param && mapOperand.reg < 0
                         ? Space::Param
                         : Space::Generic;
    if (mapAddress % 64 != 0)
      return fail("the tensor map at " + hex(mapAddress) +
                      " is not 64-byte aligned",
                  static_cast<int>(lane), FaultKind::IllegalInstruction);
    if (std::optional<std::string> misplaced =
            mapSpace == Space::Generic ? misplacedTensorMap(mapAddress)
                                       : std::nullopt)
      return fail(*misplaced, static_cast<int>(lane),
                  FaultKind::IllegalInstruction);
    uint8_t *mapBytes = memory(mapSpace, mapAddress, kTensorMapBytes, false, lane);
    if (!mapBytes)
      return false;
    Expected<TensorMap> decoded = decode(mapBytes);
    if (!decoded.ok())
      return fail(decoded.message(), static_cast<int>(lane),
                  FaultKind::IllegalInstruction);
    TensorMap map = *decoded;
    if (map.rank != in.dims)
      return fail("a ." + std::to_string(in.dims) + "d copy with a rank-" +
                      std::to_string(map.rank) + " tensor map",
                  static_cast<int>(lane), FaultKind::IllegalInstruction);
    if (map.interleave != 0)
      return fail("interleaved tensor maps are not supported by the emulator",
                  static_cast<int>(lane));
    std::array<int64_t, 5> coordinates{};
    for (uint32_t d = 0; d < in.dims; ++d)
      coordinates[d] = static_cast<int32_t>(
          readElement(function.vectorSlots[coordinateOperand.first + d], lane));
    Box box = makeBox(map, coordinates);
    unsigned elementSize = elementBytes(map.dataType);
    uint64_t bytes = box.elements() * elementSize;

    if (op == Op::CpAsyncBulkPrefetchTensor)
      continue;
    if (map.l2Promotion == 0 && crossesEdge(map, box))
      return fail("the box at (" + formatCoordinates(box) +
                      ") reaches outside the tensor (" + formatExtent(map) +
                      ") and the tensor map's L2 promotion is NONE: an "
                      "H200 faults on every such copy (load, store or "
                      "reduce); encode the map with "
                      "CU_TENSOR_MAP_L2_PROMOTION_L2_128B (see "
                      "docs/RationaleEmulator.md, \"Tensor copies across "
                      "the tensor's edge\")",
                  static_cast<int>(lane), FaultKind::IllegalInstruction);

    AsyncOp async = newAsync(lane);
    AsyncClock clock = cluster.hazards->onAsyncIssue(warp, async.id);

    if (isLoad) {
      std::optional<SharedLocation> destination = sharedOperand(
          in.operands[0], destinationSpace, static_cast<unsigned>(bytes), lane);
      if (!destination)
        return false;
      if (destination->offset % 128 != 0)
        return fail("the shared-memory destination " +
                        std::to_string(destination->offset) +
                        " of a tensor copy is not 128-byte aligned",
                    static_cast<int>(lane), FaultKind::MisalignedAddress);
      std::optional<SharedLocation> barrierLocation =
          alignedSharedOperand(in.operands[mapIndex + 2], destinationSpace, 8,
                               8, "the mbarrier", lane);
      if (!barrierLocation)
        return false;
      std::vector<Cta *> targets;
      if (!copyTargets(*destination, *barrierLocation, mapIndex + 3, lane,
                       targets))
        return false;
      uint32_t dstOffset = destination->offset;
      uint32_t barOffset = barrierLocation->offset;
      async.what = "the TMA load issued by " +
                   describeLocation(launch, cta, warp.index, lane, pc);
      Cluster *owner = &cluster;
      async.complete = [owner, map, box, targets, dstOffset, barOffset,
                        elementSize, bytes, clock,
                        what = async.what]() -> Status {
        std::vector<uint8_t> data(bytes);
        uint8_t *globalBase = reinterpret_cast<uint8_t *>(map.globalAddress);
        const LaunchState &launch = *owner->launch;
        // The tensor must lie in one allocation: check its extent once.
        uint64_t extent = 0;
        for (unsigned d = 0; d < map.rank; ++d)
          extent += (map.globalDim[d] - 1) * map.globalStrides[d];
        extent += elementSize;
        std::string why;
        if (!launch.memory->translate(map.globalAddress, extent, launch.device,
                                      why) &&
            !launch.program->translateGlobalVariable(map.globalAddress,
                                                     extent)) {
          owner->faultKind = FaultKind::IllegalAddress;
          return Error{what + ": the tensor map's tensor at " +
                       hex(map.globalAddress) + " (" + std::to_string(extent) +
                       " bytes) " +
                       (why.empty() ? "is not inside one allocation" : why)};
        }
        uint64_t rowBytes = uint64_t(box.count[0]) * elementSize;
        forEachRow(
            map, box,
            [&](uint64_t first, int64_t offset) {
              std::memcpy(data.data() + first * elementSize,
                          globalBase + offset, rowBytes);
              owner->hazards->onAsyncGlobalAccess(
                  clock, map.globalAddress + offset, rowBytes, false, what);
            },
            [&](uint64_t linear, int64_t offset) {
              uint8_t *element = data.data() + linear * elementSize;
              if (offset < 0) {
                oobFill(map, element, elementSize);
                return;
              }
              std::memcpy(element, globalBase + offset, elementSize);
              owner->hazards->onAsyncGlobalAccess(
                  clock, map.globalAddress + offset, elementSize, false, what);
            });
        for (Cta *target : targets) {
          if (uint64_t(dstOffset) + bytes > target->sharedEnd) {
            owner->faultKind = FaultKind::IllegalAddress;
            return Error{what + ": the box of " + std::to_string(bytes) +
                         " bytes at shared address " +
                         std::to_string(dstOffset) +
                         " overruns the CTA's shared memory"};
          }
          for (uint64_t i = 0; i < bytes; i += 16) {
            uint32_t address = spec::swizzle(
                static_cast<uint32_t>(dstOffset + i), map.swizzleBytes);
            std::memcpy(target->shared.data() + address, data.data() + i,
                        std::min<uint64_t>(16, bytes - i));
            owner->hazards->onAsyncAccess(*target, clock, address, 16, true,
                                          what);
          }
          completeTransactions(*owner, *target, barOffset, bytes, clock, what);
        }
        return Status();
      };
    } else {
      std::optional<SharedLocation> source =
          sharedOperand(in.operands[mapIndex + 2], Space::Shared,
                        static_cast<unsigned>(bytes), lane);
      if (!source)
        return false;
      if (source->offset % 128 != 0)
        return fail("the shared-memory source " +
                        std::to_string(source->offset) +
                        " of a tensor copy is not 128-byte aligned",
                    static_cast<int>(lane), FaultKind::MisalignedAddress);
      uint32_t srcOffset = source->offset;
      Cta *owner = source->cta;
      bool isReduce = op == Op::CpReduceAsyncBulkTensor;
      if (isReduce && !isValidReduction(reduction, map.dataType))
        return fail(std::string("cp.reduce.async.bulk.tensor .") +
                        reductionName(reduction) +
                        " is not defined for the tensor map's element type "
                        "(data type " +
                        std::to_string(static_cast<uint32_t>(map.dataType)) +
                        " in cuda.h's CUtensorMapDataType)",
                    static_cast<int>(lane));
      async.what = std::string(isReduce ? "the TMA reduction" : "the TMA store") +
                   " issued by " +
                   describeLocation(launch, cta, warp.index, lane, pc);
      Cluster *clusterPointer = &cluster;
      async.complete = [clusterPointer, owner, map, box, srcOffset,
                        elementSize, bytes, isReduce, reduction, clock,
                        what = async.what]() -> Status {
        const LaunchState &launch = *clusterPointer->launch;
        std::vector<uint8_t> data(bytes);
        for (uint64_t i = 0; i < bytes; i += 16) {
          uint32_t address = spec::swizzle(static_cast<uint32_t>(srcOffset + i),
                                           map.swizzleBytes);
          std::memcpy(data.data() + i, owner->shared.data() + address,
                      std::min<uint64_t>(16, bytes - i));
          clusterPointer->hazards->onAsyncAccess(*owner, clock, address, 16,
                                                 false, what);
        }
        uint8_t *globalBase = reinterpret_cast<uint8_t *>(map.globalAddress);
        // The tensor must lie in one allocation: check its extent once.
        uint64_t extent = elementSize;
        for (unsigned d = 0; d < map.rank; ++d)
          extent += (map.globalDim[d] - 1) * map.globalStrides[d];
        std::string why;
        if (!launch.memory->translate(map.globalAddress, extent, launch.device,
                                      why) &&
            !launch.program->translateGlobalVariable(map.globalAddress,
                                                     extent)) {
          clusterPointer->faultKind = FaultKind::IllegalAddress;
          return Error{what + ": the tensor map's tensor at " +
                       hex(map.globalAddress) + " (" + std::to_string(extent) +
                       " bytes) " +
                       (why.empty() ? "is not inside one allocation" : why)};
        }
        Status status;
        // Clusters on other host threads may reduce into the same elements:
        // the read-modify-writes must not interleave.
        static std::mutex reductionMutex;
        std::unique_lock<std::mutex> lock(reductionMutex, std::defer_lock);
        if (isReduce)
          lock.lock();
        uint64_t rowBytes = uint64_t(box.count[0]) * elementSize;
        ++*clusterPointer->globalWrites;
        auto storeElement = [&](uint64_t linear, int64_t offset) {
          if (offset < 0)
            return;
          clusterPointer->hazards->onAsyncGlobalAccess(
              clock, map.globalAddress + offset, elementSize, true, what);
          uint8_t *target = globalBase + offset;
          const uint8_t *element = data.data() + linear * elementSize;
          if (!isReduce) {
            std::memcpy(globalBase + offset, element, elementSize);
            return;
          }
          switch (map.dataType) {
          case TensorDataType::F32:
          case TensorDataType::F32Ftz: {
            float old, value;
            std::memcpy(&old, target, 4);
            std::memcpy(&value, element, 4);
            float sum = old + value; // f32 has only .add
            std::memcpy(target, &sum, 4);
            break;
          }
          case TensorDataType::F16:
          case TensorDataType::BF16: {
            FloatFormat format = map.dataType == TensorDataType::F16
                                     ? FloatFormat::F16
                                     : FloatFormat::BF16;
            uint16_t old, value;
            std::memcpy(&old, target, 2);
            std::memcpy(&value, element, 2);
            double a = decodeFloat(old, format), b = decodeFloat(value, format);
            double r = reduction == 1 ? a + b
                       : reduction == 2 ? std::fmin(a, b)
                                        : std::fmax(a, b);
            uint16_t bits = static_cast<uint16_t>(
                encodeFloat(r, format, RoundingMode::NearestEven));
            std::memcpy(target, &bits, 2);
            break;
          }
          case TensorDataType::S32:
            reduceAt<int32_t>(target, element, reduction);
            break;
          case TensorDataType::U32:
            reduceAt<uint32_t>(target, element, reduction);
            break;
          case TensorDataType::S64:
            reduceAt<int64_t>(target, element, reduction);
            break;
          case TensorDataType::U64:
            reduceAt<uint64_t>(target, element, reduction);
            break;
          default:
            status = Error{what + ": reductions on this element type are not "
                                  "supported by the emulator"};
          }
        };
        forEachRow(
            map, box,
            [&](uint64_t first, int64_t offset) {
              if (!isReduce) {
                std::memcpy(globalBase + offset,
                            data.data() + first * elementSize, rowBytes);
                clusterPointer->hazards->onAsyncGlobalAccess(
                    clock, map.globalAddress + offset, rowBytes, true, what);
                return;
              }
              for (uint32_t i = 0; i < box.count[0]; ++i)
                storeElement(first + i,
                             offset + int64_t(i) * int64_t(elementSize));
            },
            storeElement);
        return status;
      };
      warp.bulk[lane].uncommitted.push_back(async.id);
    }
    if (!queue(std::move(async)))
      return false;
  }
  return true;
}

bool Exec::bulkGroups(uint32_t mask) {
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    Warp::BulkGroups &groups = warp.bulk[lane];
    if (in.op == Op::CpAsyncBulkCommitGroup) {
      groups.committed.push_back(std::move(groups.uncommitted));
      groups.uncommitted.clear();
      continue;
    }
    // wait_group N: all but the N most recent groups are complete; .read:
    // all but the N most recent have read their sources. A group the .read
    // form retired still counts for a later full wait (PTX ISA,
    // cp.async.bulk.wait_group).
    uint64_t keep = read(in.operands[0], lane);
    auto retire = [&](const std::vector<uint64_t> &group, bool writes) {
      for (uint64_t id : group) {
        Status status = completeAsync(cluster, id);
        if (!status.ok())
          return fail(status.message(), static_cast<int>(lane),
                      cluster.faultKind);
        cluster.hazards->onAsyncWait(warp, id, writes);
      }
      return true;
    };
    if (!in.read) {
      while (!groups.readOnly.empty() &&
             groups.readOnly.size() + groups.committed.size() > keep) {
        if (!retire(groups.readOnly.front(), true))
          return false;
        groups.readOnly.pop_front();
      }
    }
    while (groups.committed.size() > keep) {
      if (!retire(groups.committed.front(), !in.read))
        return false;
      if (in.read)
        groups.readOnly.push_back(std::move(groups.committed.front()));
      groups.committed.pop_front();
    }
  }
  return true;
}

bool Exec::bulkCopy(uint32_t mask) {
  // cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
  //   {.multicast::cluster} [dst], [src], size, [mbar] {, ctaMask}
  // cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size
  bool toShared = in.space == Space::SharedCluster || in.space == Space::Shared;
  for (uint32_t lanes = mask; lanes; lanes &= lanes - 1) {
    uint32_t lane = __builtin_ctz(lanes);
    uint32_t size = static_cast<uint32_t>(read(in.operands[2], lane));
    // PTX ISA, cp.async.bulk: the size is a multiple of 16 and both
    // addresses are 16-byte aligned.
    if (size % 16 != 0)
      return fail("cp.async.bulk size " + std::to_string(size) +
                      " is not a multiple of 16",
                  static_cast<int>(lane), FaultKind::IllegalInstruction);
    AsyncOp async = newAsync(lane);
    async.what = "the bulk copy issued by " +
                 describeLocation(launch, cta, warp.index, lane, pc);
    AsyncClock clock = cluster.hazards->onAsyncIssue(warp, async.id);
    Cluster *owner = &cluster;
    if (toShared) {
      std::optional<SharedLocation> destination =
          alignedSharedOperand(in.operands[0], Space::SharedCluster, size, 16,
                               "the cp.async.bulk destination", lane);
      if (!destination)
        return false;
      std::optional<SharedLocation> barrierLocation = alignedSharedOperand(
          in.operands[3], Space::SharedCluster, 8, 8, "the mbarrier", lane);
      if (!barrierLocation)
        return false;
      std::vector<Cta *> targets;
      if (!copyTargets(*destination, *barrierLocation, 4, lane, targets))
        return false;
      // The source is global memory, or with .shared::cta the issuing
      // CTA's shared memory (a copy into a peer CTA).
      const uint8_t *host = nullptr;
      std::optional<SharedLocation> sharedSource;
      if (in.space2 == Space::Shared) {
        sharedSource =
            alignedSharedOperand(in.operands[1], Space::Shared, size, 16,
                                 "the cp.async.bulk source", lane);
        if (!sharedSource)
          return false;
      } else {
        host = memory(Space::Global, address(in.operands[1], lane), size, false,
                      lane);
        if (!host)
          return false;
      }
      async.complete = [owner, targets, offset = destination->offset,
                        barOffset = barrierLocation->offset, host, sharedSource,
                        size, clock, what = async.what]() -> Status {
        const uint8_t *from = host;
        if (host)
          owner->hazards->onAsyncGlobalAccess(
              clock, reinterpret_cast<uint64_t>(host), size, false, what);
        if (sharedSource) {
          from = sharedSource->cta->shared.data() + sharedSource->offset;
          owner->hazards->onAsyncAccess(*sharedSource->cta, clock,
                                        sharedSource->offset, size, false,
                                        what);
        }
        for (Cta *target : targets) {
          if (uint64_t(offset) + size > target->sharedEnd) {
            owner->faultKind = FaultKind::IllegalAddress;
            return Error{what + ": the " + std::to_string(size) +
                         " bytes at shared address " + std::to_string(offset) +
                         " overrun the shared memory of CTA rank " +
                         std::to_string(target->rank)};
          }
          std::memmove(target->shared.data() + offset, from, size);
          owner->hazards->onAsyncAccess(*target, clock, offset, size, true,
                                        what);
          completeTransactions(*owner, *target, barOffset, size, clock, what);
        }
        return Status();
      };
    } else {
      std::optional<SharedLocation> source =
          alignedSharedOperand(in.operands[1], Space::Shared, size, 16,
                               "the cp.async.bulk source", lane);
      if (!source)
        return false;
      uint64_t destination = address(in.operands[0], lane);
      uint8_t *host = memory(Space::Global, destination, size, true, lane);
      if (!host)
        return false;
      async.complete = [owner, source = *source, host, size, clock,
                        what = async.what]() -> Status {
        std::memcpy(host, source.cta->shared.data() + source.offset, size);
        owner->hazards->onAsyncAccess(*source.cta, clock, source.offset, size,
                                      false, what);
        ++*owner->globalWrites;
        owner->hazards->onAsyncGlobalAccess(
            clock, reinterpret_cast<uint64_t>(host), size, true, what);
        return Status();
      };
      warp.bulk[lane].uncommitted.push_back(async.id);
    }
    if (!queue(std::move(async)))
      return false;
  }
  return true;
}

Status completeAsync(Cluster &cluster, uint64_t id) {
  for (auto it = cluster.async.begin(); it != cluster.async.end(); ++it) {
    if (it->id != id)
      continue;
    // Earlier operations of the same pipeline complete first.
    if (it->orderKey)
      for (auto earlier = cluster.async.begin(); earlier != it; ++earlier)
        if (earlier->orderKey == it->orderKey) {
          MOSAIC_RETURN_IF_ERROR(completeAsync(cluster, earlier->id));
          return completeAsync(cluster, id); // the queue changed: look again
        }
    AsyncOp op = std::move(*it);
    cluster.async.erase(it);
    Status status = op.complete();
    if (!status.ok())
      return Error{describeLocation(*cluster.launch, *op.cta, op.warp,
                                    static_cast<int>(op.lane), op.pc) +
                   ": " + status.message()};
    return Status();
  }
  return Status(); // already completed
}

} // namespace mosaic::emulator
