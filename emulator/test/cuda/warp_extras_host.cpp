//===- warp_extras_host.cpp - Host side of warp_extras.cu ----------------===//

#include "HostSupport.h"

#include <string>
#include <vector>

using namespace emutest;

namespace {

constexpr uint32_t kFullMask = 0xffffffffu;

void runMatch(Session &session, Checker &checker) {
  DeviceBuffer out(64 * 5 * sizeof(uint32_t));
  launch(session.function("warp_match"), {1}, {64}, 0, {out.parameter()});
  std::vector<uint32_t> got = out.download<uint32_t>();
  for (uint32_t tid = 0; tid < 64; ++tid) {
    uint32_t lane = tid % 32;
    // Lanes of the same warp whose value equals this lane's.
    uint32_t group = 0;
    for (uint32_t other = 0; other < 32; ++other)
      if ((other * 5) % 7 == (lane * 5) % 7)
        group |= 1u << other;
    const uint32_t *o = &got[tid * 5];
    checker.equal("match.any.sync, thread", tid, o[0], group);
    checker.equal("match.all.sync of a uniform value: mask, thread", tid, o[1],
                  kFullMask);
    checker.equal("match.all.sync of a uniform value: predicate, thread", tid,
                  o[2], 1);
    checker.equal("match.all.sync of distinct values: mask, thread", tid, o[3],
                  0);
    checker.equal("match.all.sync of distinct values: predicate, thread", tid,
                  o[4], 0);
  }
}

void runBarrierReductions(Session &session, Checker &checker) {
  DeviceBuffer out(3 * 256 * sizeof(uint32_t));
  launch(session.function("barrier_reductions"), {1}, {256}, 0,
         {out.parameter()});
  std::vector<uint32_t> got = out.download<uint32_t>();
  for (uint32_t t = 0; t < 256; ++t) {
    // 86 of 0..255 are multiples of 3.
    checker.equal("bar.red.popc.u32, thread", t, got[3 * t], 86);
    checker.equal("bar.red.and.pred, thread", t, got[3 * t + 1], 0);
    checker.equal("bar.red.or.pred, thread", t, got[3 * t + 2], 1);
  }
}

} // namespace

int main(int argc, char **argv) {
  return runVariants("warp_extras", argc, argv,
                     {
                         {"match", runMatch},
                         {"barrier_reductions", runBarrierReductions},
                     });
}
