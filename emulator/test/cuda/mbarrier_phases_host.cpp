//===- mbarrier_phases_host.cpp - Host side of mbarrier_phases.cu --------===//

#include "HostSupport.h"

#include <string>
#include <vector>

using namespace emutest;

namespace {

constexpr uint32_t kThreads = 128;
constexpr uint32_t kPhases = 6;
constexpr uint32_t kBulkWords = 256;

struct ExpectedProbe {
  const char *what;
  uint32_t value;
};

// In the order of the Probe enumeration in mbarrier_phases.cu.
const ExpectedProbe kProbes[] = {
    {"fresh barrier: test_wait.parity 0 (phase 0 open)", 0},
    {"fresh barrier: test_wait.parity 1 (the preceding phase counts as "
     "complete)",
     1},
    {"test_wait(token) with 1 of 2 arrivals", 0},
    {"test_wait(token) with 2 of 2 arrivals", 1},
    {"after phase 0: test_wait.parity 0", 1},
    {"after phase 0: test_wait.parity 1 (phase 1 open)", 0},
    {"after arrive_drop: phase 2 complete with 96 arrivals", 1},
    {"after arrive_drop: phase 3 open", 0},
    {"expect_tx without arrival: phase 0 open", 0},
    {"arrival in, 1024 bytes outstanding: phase 0 open", 0},
    {"arrival in, 64 bytes outstanding: phase 1 open", 0},
    {"after complete_tx of 64 bytes: phase 1 complete", 1},
    {"invalidated barrier reused as data: low word", 0x89abcdefu},
    {"invalidated barrier reused as data: high word", 0x01234567u},
    {"re-initialised barrier (count 1) after one arrival", 1},
};
constexpr uint32_t kProbeCount = sizeof(kProbes) / sizeof(kProbes[0]);

void runPhases(Session &session, Checker &checker) {
  std::vector<uint32_t> source(kBulkWords);
  for (uint32_t i = 0; i < kBulkWords; ++i)
    source[i] = 0x5000 + i * 7;
  DeviceBuffer bulkSource(source);
  DeviceBuffer phaseSums(kPhases * kThreads * sizeof(uint32_t));
  DeviceBuffer phaseTokens(kPhases * kThreads * sizeof(uint32_t));
  DeviceBuffer probes(kProbeCount * sizeof(uint32_t));
  DeviceBuffer bulkCopied(kBulkWords * sizeof(uint32_t));
  DeviceBuffer bulkStored(kBulkWords * sizeof(uint32_t));
  for (DeviceBuffer *buffer :
       {&phaseSums, &phaseTokens, &probes, &bulkCopied, &bulkStored})
    buffer->fill(0xEE);

  launch(session.function("mbarrier_phases"), {1}, {kThreads}, 0,
         {bulkSource.parameter(), phaseSums.parameter(),
          phaseTokens.parameter(), probes.parameter(), bulkCopied.parameter(),
          bulkStored.parameter()});

  std::vector<uint32_t> sums = phaseSums.download<uint32_t>();
  std::vector<uint32_t> tokens = phaseTokens.download<uint32_t>();
  for (uint32_t p = 0; p < kPhases; ++p) {
    // Every thread sees all 128 values written in phase p.
    uint32_t expected = 0;
    for (uint32_t j = 0; j < kThreads; ++j)
      expected += p * 1000 + j;
    for (uint32_t t = 0; t < kThreads; ++t) {
      std::string phase = "phase " + std::to_string(p);
      checker.equal(phase + " sum seen by thread", t, sums[p * kThreads + t],
                    expected);
      checker.equal(phase + " test_wait(token) afterwards, thread", t,
                    tokens[p * kThreads + t], 1);
    }
  }

  std::vector<uint32_t> gotProbes = probes.download<uint32_t>();
  for (uint32_t i = 0; i < kProbeCount; ++i)
    checker.equal(kProbes[i].what, i, gotProbes[i], kProbes[i].value);

  std::vector<uint32_t> copied = bulkCopied.download<uint32_t>();
  std::vector<uint32_t> stored = bulkStored.download<uint32_t>();
  for (uint32_t i = 0; i < kBulkWords; ++i) {
    checker.equal("bulk copy into shared", i, copied[i], source[i]);
    checker.equal("bulk store from shared", i, stored[i], source[i] + 1);
  }
}

} // namespace

int main(int argc, char **argv) {
  return runVariants("mbarrier_phases", argc, argv, {{"phases", runPhases}});
}
