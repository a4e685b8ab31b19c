//===- tma_multicast_host.cpp - Host side of tma_multicast.cu ------------===//
//
// The tensor is 200 x 100 bf16 (cols x rows, dense rows of 400 bytes); the
// element (col, row) holds the bit pattern row * 200 + col + 1, which is a
// finite bf16 and unique. The grid is two clusters of n CTAs.
//
//===----------------------------------------------------------------------===//

#include "HostSupport.h"

#include <string>
#include <vector>

using namespace emutest;

namespace {

constexpr uint32_t kCols = 200;
constexpr uint32_t kRows = 100;
constexpr uint32_t kBoxCols = 64;
constexpr uint32_t kBoxRows = 32;
constexpr uint32_t kThreads = 128;
constexpr uint32_t kClusters = 2;
constexpr uint32_t kIdentityWords = 7;

// Mirrors IssueMode in tma_multicast.cu.
enum IssueMode : uint32_t { kOneIssuer = 0, kSlices = 1, kPairs = 2 };

uint16_t tensorBits(uint32_t col, uint32_t row) {
  return static_cast<uint16_t>(row * kCols + col + 1);
}

uint32_t ownValue(uint32_t cluster, uint32_t rank, uint32_t tid) {
  return (cluster * 16 + rank) * 1000 + tid;
}

struct MulticastCase {
  uint32_t ctas;
  IssueMode mode;
  // The kernel with __cluster_dims__(2, 1, 1), launched without attribute.
  bool staticCluster = false;
};

void runMulticast(Session &session, Checker &checker, const MulticastCase &c) {
  std::vector<uint16_t> host(kCols * kRows);
  for (uint32_t row = 0; row < kRows; ++row)
    for (uint32_t col = 0; col < kCols; ++col)
      host[row * kCols + col] = tensorBits(col, row);
  DeviceBuffer tensor(host);

  TiledTensor2d description;
  description.dataType = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  description.address = tensor.address();
  description.cols = kCols;
  description.rows = kRows;
  description.rowStrideBytes = kCols * sizeof(uint16_t);
  description.boxCols = kBoxCols;
  description.boxRows = c.mode == kSlices ? kBoxRows / c.ctas : kBoxRows;
  description.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  CUtensorMap map = encodeTiled(description);

  // Corner (col, row) of each cluster's box.
  std::vector<int32_t> corners = {8, 3, 48, 23};
  uint32_t blocks = kClusters * c.ctas;
  DeviceBuffer cornerBuffer(corners);
  DeviceBuffer boxes(blocks * kBoxCols * kBoxRows * sizeof(uint16_t));
  DeviceBuffer exchanged(blocks * kThreads * 2 * sizeof(uint32_t));
  DeviceBuffer identities(blocks * kIdentityWords * sizeof(uint32_t));
  boxes.fill(0);
  exchanged.fill(0);
  identities.fill(0xFF);

  uint32_t mode = c.mode;
  std::vector<void *> parameters = {&map,
                                    &mode,
                                    cornerBuffer.parameter(),
                                    boxes.parameter(),
                                    exchanged.parameter(),
                                    identities.parameter()};
  unsigned sharedBytes = kBoxCols * kBoxRows * sizeof(uint16_t);
  if (c.staticCluster)
    launch(session.function("tma_multicast_cluster2"), {blocks}, {kThreads},
           sharedBytes, parameters);
  else
    launchCluster(session.function("tma_multicast"), {blocks}, {kThreads},
                  {c.ctas}, sharedBytes, parameters);

  std::vector<uint16_t> gotBoxes = boxes.download<uint16_t>();
  std::vector<uint32_t> gotExchanged = exchanged.download<uint32_t>();
  std::vector<uint32_t> gotIdentities = identities.download<uint32_t>();
  for (uint32_t block = 0; block < blocks; ++block) {
    uint32_t cluster = block / c.ctas, rank = block % c.ctas;
    std::string cta =
        "cluster " + std::to_string(cluster) + " rank " + std::to_string(rank);
    uint32_t x = corners[2 * cluster];
    uint32_t y = corners[2 * cluster + 1] +
                 (c.mode == kPairs ? (rank % 2) * kBoxRows : 0);
    for (uint32_t i = 0; i < kBoxCols * kBoxRows; ++i)
      checker.equal(cta + " box", i, gotBoxes[block * kBoxCols * kBoxRows + i],
                    tensorBits(x + i % kBoxCols, y + i / kBoxCols));

    uint32_t previous = (rank + c.ctas - 1) % c.ctas;
    for (uint32_t tid = 0; tid < kThreads; ++tid) {
      size_t at = (block * kThreads + tid) * 2;
      checker.equal(cta + " received from previous rank", tid, gotExchanged[at],
                    500000 + ownValue(cluster, previous, tid));
      checker.equal(cta + " ld.shared::cluster of previous rank", tid,
                    gotExchanged[at + 1], ownValue(cluster, previous, tid));
    }

    const uint32_t expectedIdentity[kIdentityWords] = {
        rank, c.ctas, cluster, rank, c.ctas, kClusters, 1};
    const char *names[kIdentityWords] = {
        "%cluster_ctarank",    "%cluster_nctarank", "%clusterid.x",
        "%cluster_ctaid.x",    "%cluster_nctaid.x", "%nclusterid.x",
        "%is_explicit_cluster"};
    for (uint32_t word = 0; word < kIdentityWords; ++word)
      checker.equal(cta + " " + names[word], word,
                    gotIdentities[block * kIdentityWords + word],
                    expectedIdentity[word]);
  }
}

std::function<void(Session &, Checker &)> variant(MulticastCase c) {
  return [c](Session &session, Checker &checker) {
    runMulticast(session, checker, c);
  };
}

} // namespace

int main(int argc, char **argv) {
  return runVariants(
      "tma_multicast", argc, argv,
      {
          {"cluster2_static_one_issuer", variant({2, kOneIssuer, true})},
          {"cluster2_slices", variant({2, kSlices})},
          {"cluster4_one_issuer", variant({4, kOneIssuer})},
          {"cluster4_slices", variant({4, kSlices})},
          {"cluster4_pairs", variant({4, kPairs})},
      });
}
