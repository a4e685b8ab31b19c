//===- ReferencesTest.cpp - Float64 references of the examples ----------===//

#include "References.h"

#include "../TestSupport.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mosaic::run;
using mosaic::BufferParameter;
using mosaic::ElementType;
using mosaic::Expected;
using mosaic::parseManifest;

namespace {

HostBuffer tensor(ElementType type, std::vector<int64_t> shape,
                  std::vector<double> values) {
  HostBuffer buffer;
  buffer.parameter.elementType = type;
  buffer.parameter.shape = std::move(shape);
  buffer.values = std::move(values);
  return buffer;
}

Manifest manifestWith(const std::string &json) {
  Expected<Manifest> manifest = parseManifest(json, "");
  EXPECT_TRUE(manifest.ok()) << manifest.message();
  return *manifest;
}

TEST(References, Names) {
  EXPECT_EQ(referenceNames(), "elementwise, softmax, tma_roundtrip, gemm, "
                              "attention, attention_causal");
  EXPECT_EQ(findReference("attention")->outputs, 2u);
  EXPECT_EQ(findReference("gemm")->outputs, 1u);
  EXPECT_EQ(findReference("nope"), nullptr);
  EXPECT_EQ(findReference("gemm")->defaultSamples, 4096u);
  EXPECT_EQ(findReference("elementwise")->tolerance, 1e-5);
  EXPECT_EQ(findReference("tma_roundtrip")->tolerance, 1e-2);
}

TEST(References, DefaultForAnEntryName) {
  EXPECT_EQ(referenceForEntry("gemm"), findReference("gemm"));
  EXPECT_EQ(referenceForEntry("gemm_ws"), findReference("gemm"));
  EXPECT_EQ(referenceForEntry("softmax_online"), findReference("softmax"));
  EXPECT_EQ(referenceForEntry("attention_fwd"), findReference("attention"));
  EXPECT_EQ(referenceForEntry("attention_causal_fwd"),
            findReference("attention_causal"));
  EXPECT_EQ(referenceForEntry("gemmws"), nullptr);
  EXPECT_EQ(referenceForEntry("ws_gemm"), nullptr);
  EXPECT_EQ(referenceForEntry("nope"), nullptr);
}

TEST(References, Elementwise) {
  const Reference &ref = *findReference("elementwise");
  std::vector<HostBuffer> buffers = {
      tensor(ElementType::F32, {3}, {1, 2, -3}),
      tensor(ElementType::F32, {3}, {0.5, -1, 2}),
      tensor(ElementType::F32, {3}, {})};
  // x * y + x: 1.5, 0, -9.
  EXPECT_EQ(ref.compute(buffers, 0, {0, 1, 2}), (std::vector<double>{1.5, 0, -9}));
  EXPECT_EQ(ref.compute(buffers, 0, {2}), (std::vector<double>{-9}));
  Manifest manifest = manifestWith(mosaic::runtime::test::kElementwiseManifest);
  EXPECT_TRUE(ref.checkSignature(manifest).ok());
  EXPECT_EQ(ref.flops(manifest), 2.0 * 1048576);
}

TEST(References, Softmax) {
  const Reference &ref = *findReference("softmax");
  // Row 0: equal entries give 1/2 each; row 1: e^0 / (e^0 + e^-ln3) = 3/4.
  std::vector<HostBuffer> buffers = {
      tensor(ElementType::F32, {2, 2}, {5, 5, 100, 100 - std::log(3.0)}),
      tensor(ElementType::F32, {2, 2}, {})};
  std::vector<double> out = ref.compute(buffers, 0, {0, 1, 2, 3});
  EXPECT_NEAR(out[0], 0.5, 1e-15);
  EXPECT_NEAR(out[1], 0.5, 1e-15);
  EXPECT_NEAR(out[2], 0.75, 1e-15);
  EXPECT_NEAR(out[3], 0.25, 1e-15);
}

TEST(References, RoundTripDoubles) {
  const Reference &ref = *findReference("tma_roundtrip");
  std::vector<HostBuffer> buffers = {
      tensor(ElementType::BF16, {1, 2}, {1.5, -0.25}),
      tensor(ElementType::BF16, {1, 2}, {})};
  EXPECT_EQ(ref.compute(buffers, 0, {0, 1}), (std::vector<double>{3, -0.5}));
  Manifest manifest = manifestWith(mosaic::runtime::test::kRoundTripManifest);
  EXPECT_TRUE(ref.checkSignature(manifest).ok());
}

TEST(References, GemmByHandAndSampledEqualsFull) {
  const Reference &ref = *findReference("gemm");
  // A = [[1, 2, 3], [4, 5, 6]], B = [[1, 0], [0, 1], [1, 1]]:
  // C = [[4, 5], [10, 11]].
  std::vector<HostBuffer> buffers = {
      tensor(ElementType::BF16, {2, 3}, {1, 2, 3, 4, 5, 6}),
      tensor(ElementType::BF16, {3, 2}, {1, 0, 0, 1, 1, 1}),
      tensor(ElementType::BF16, {2, 2}, {})};
  EXPECT_EQ(ref.compute(buffers, 0, {0, 1, 2, 3}),
            (std::vector<double>{4, 5, 10, 11}));
  EXPECT_EQ(ref.compute(buffers, 0, {3, 1}), (std::vector<double>{11, 5}));

  std::mt19937_64 rng(3);
  std::vector<HostBuffer> random;
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{24, 40}, {40, 16}, {24, 16}}) {
    BufferParameter p;
    p.elementType = ElementType::BF16;
    p.shape = shape;
    random.push_back(randomBuffer(p, rng));
  }
  std::vector<uint64_t> all = sampleIndices(24 * 16, 0, rng);
  std::vector<uint64_t> some = sampleIndices(24 * 16, 50, rng);
  std::vector<double> full = ref.compute(random, 0, all);
  std::vector<double> sampled = ref.compute(random, 0, some);
  for (size_t s = 0; s < some.size(); ++s)
    EXPECT_NEAR(sampled[s], full[some[s]], 1e-12);
}

// One head of 2 queries and 2 keys with d = 1 (scale 1): query 0 scores
// keys [1, 2], query 1 scores [0, 0]; V = [3, 5].
TEST(References, AttentionByHand) {
  std::vector<HostBuffer> buffers = {
      tensor(ElementType::BF16, {1, 2, 1}, {1, 0}),
      tensor(ElementType::BF16, {1, 2, 1}, {1, 2}),
      tensor(ElementType::BF16, {1, 2, 1}, {3, 5}),
      tensor(ElementType::BF16, {1, 2, 1}, {}),
      tensor(ElementType::F32, {1, 2}, {})};
  double e = std::exp(1.0), e2 = std::exp(2.0);
  const Reference &full = *findReference("attention");
  std::vector<double> out = full.compute(buffers, 0, {0, 1});
  EXPECT_NEAR(out[0], (3 * e + 5 * e2) / (e + e2), 1e-12);
  EXPECT_NEAR(out[1], 4, 1e-12);
  std::vector<double> lse = full.compute(buffers, 1, {0, 1});
  EXPECT_NEAR(lse[0], std::log(e + e2), 1e-12);
  EXPECT_NEAR(lse[1], std::log(2.0), 1e-12);
  // Causal: query 0 sees key 0 only.
  const Reference &causal = *findReference("attention_causal");
  EXPECT_NEAR(causal.compute(buffers, 0, {0})[0], 3, 1e-12);
  EXPECT_NEAR(causal.compute(buffers, 1, {0, 1})[0], 1, 1e-12);
  EXPECT_NEAR(causal.compute(buffers, 1, {0, 1})[1], std::log(2.0), 1e-12);
}

// The token-major layout with grouped heads: batch 2, 2 query heads sharing
// 1 key/value head, seq 2, d 1. Sequence 1, query head 1 is the case above;
// every other query scores 0 against both keys.
TEST(References, TokenMajorAttentionByHand) {
  // Q [batch * seq, heads * d]: token-major rows of (head 0, head 1).
  std::vector<HostBuffer> buffers = {
      tensor(ElementType::BF16, {4, 2}, {0, 0, 0, 0, 0, 1, 0, 0}),
      tensor(ElementType::BF16, {4, 1}, {7, 9, 1, 2}),
      tensor(ElementType::BF16, {4, 1}, {1, 3, 3, 5}),
      tensor(ElementType::BF16, {4, 2}, {}),
      tensor(ElementType::F32, {2, 2, 2}, {})};
  double e = std::exp(1.0), e2 = std::exp(2.0);
  const Reference &full = *findReference("attention");
  // O of token 2 (sequence 1, query 0): head 0 averages V = [3, 5], head 1
  // weighs it by exp([1, 2]).
  std::vector<double> out = full.compute(buffers, 0, {4, 5, 0});
  EXPECT_NEAR(out[0], 4, 1e-12);
  EXPECT_NEAR(out[1], (3 * e + 5 * e2) / (e + e2), 1e-12);
  EXPECT_NEAR(out[2], 2, 1e-12);
  // LSE [batch, heads, seq]: (1, 1, 0) is index 6.
  std::vector<double> lse = full.compute(buffers, 1, {6, 0});
  EXPECT_NEAR(lse[0], std::log(e + e2), 1e-12);
  EXPECT_NEAR(lse[1], std::log(2.0), 1e-12);
  // Causal: query 0 of every sequence sees its first key only.
  const Reference &causal = *findReference("attention_causal");
  EXPECT_NEAR(causal.compute(buffers, 0, {5})[0], 3, 1e-12);
  EXPECT_NEAR(causal.compute(buffers, 1, {6})[0], 1, 1e-12);
  Manifest manifest;
  for (const HostBuffer &buffer : buffers)
    manifest.buffers.push_back(buffer.parameter);
  EXPECT_TRUE(full.checkSignature(manifest).ok());
  EXPECT_DOUBLE_EQ(full.flops(manifest), 4.0 * 2 * 2 * 2 * 2 * 1);
  // 3 query heads cannot share 2 key/value heads.
  manifest.buffers[4].shape = {2, 3, 2};
  manifest.buffers[0].shape = manifest.buffers[3].shape = {4, 3};
  manifest.buffers[1].shape = manifest.buffers[2].shape = {4, 2};
  EXPECT_FALSE(full.checkSignature(manifest).ok());
}

TEST(References, SignatureMismatchesNameTheBuffers) {
  Manifest elementwise =
      manifestWith(mosaic::runtime::test::kElementwiseManifest);
  EXPECT_EQ(findReference("gemm")->checkSignature(elementwise).message(),
            "reference `gemm` expects bf16 2-D buffers A [M, K], B [K, N], C "
            "[M, N]; the kernel's buffers are f32 [1048576], f32 [1048576], "
            "f32 [1048576]");
  EXPECT_EQ(findReference("softmax")->checkSignature(elementwise).message(),
            "reference `softmax` expects f32 2-D buffers x, out; the kernel's "
            "buffers are f32 [1048576], f32 [1048576], f32 [1048576]");
  Manifest mismatched = manifestWith(mosaic::runtime::test::replaceOnce(
      mosaic::runtime::test::kElementwiseManifest, "[1048576]", "[1024]"));
  EXPECT_EQ(findReference("elementwise")->checkSignature(mismatched).message(),
            "reference `elementwise` expects buffers of one shape; the "
            "kernel's buffers are f32 [1024], f32 [1048576], f32 [1048576]");
  EXPECT_EQ(findReference("attention")->checkSignature(elementwise).message(),
            "reference `attention` expects bf16 Q, K, V, O and an f32 LSE, "
            "either head-major (Q, K, V, O [heads, seq, d], LSE [heads, "
            "seq]) or token-major (Q, O [batch * seq, heads * d], K, V "
            "[batch * seq, kv_heads * d], LSE [batch, heads, seq]); the "
            "kernel's buffers are f32 [1048576], f32 [1048576], f32 "
            "[1048576]");
}

} // namespace

namespace {

/// The manifest of a kernel that spans devices, with `buffers` (parameters
/// 0 to 4) and its collective table.
std::string collectiveManifest(const std::string &entry,
                               const std::string &buffers) {
  return R"({"arch": "sm_90a", "block": [128, 1, 1], "cluster": [1, 1, 1],
    "cubin": "k.cubin", "dynamic_smem_bytes": 0, "entry": ")" +
         entry + R"(", "grid": [1, 1, 1], "parameters": [)" + buffers +
         R"(, {"index": 5, "kind": "collective"}], "tensor_maps": []})";
}

std::string buffer(unsigned index, const char *type, const char *shape,
                   bool symmetric = false) {
  return std::string(index ? ", " : "") +
         "{\"alignment\": 16, \"element_type\": \"" + type +
         "\", \"index\": " + std::to_string(index) +
         ", \"kind\": \"buffer\", \"shape\": " + shape +
         (symmetric ? ", \"symmetric\": true}" : "}");
}

} // namespace

TEST(CollectiveReferences, Names) {
  EXPECT_EQ(collectiveReferenceNames(),
            "allgather_matmul, matmul_reduce_scatter");
  EXPECT_EQ(collectiveReferenceForEntry("allgather_matmul"),
            findCollectiveReference("allgather_matmul"));
  EXPECT_EQ(collectiveReferenceForEntry("matmul_reduce_scatter_d8"),
            findCollectiveReference("matmul_reduce_scatter"));
  EXPECT_EQ(collectiveReferenceForEntry("gemm"), nullptr);
  EXPECT_EQ(findCollectiveReference("gemm"), nullptr);
  EXPECT_EQ(findReference("allgather_matmul"), nullptr);
  EXPECT_EQ(findCollectiveReference("allgather_matmul")->tolerance, 1e-2);
  EXPECT_EQ(findCollectiveReference("matmul_reduce_scatter")->tolerance, 1e-4);
}

TEST(CollectiveReferences, AllGatherMatmul) {
  const CollectiveReference &ref = *findCollectiveReference("allgather_matmul");
  // Two devices, A_d [1, 2], B_d [2, 2]: C_d = [A_0; A_1] B_d.
  std::vector<std::vector<HostBuffer>> buffers = {
      {tensor(ElementType::BF16, {1, 2}, {1, 2}),
       tensor(ElementType::BF16, {2, 2}, {1, 0, 0, 1})},
      {tensor(ElementType::BF16, {1, 2}, {3, -1}),
       tensor(ElementType::BF16, {2, 2}, {0, 1, 1, 0})}};
  EXPECT_EQ(ref.compute(buffers, 0, {0, 1, 2, 3}),
            (std::vector<double>{1, 2, 3, -1}));
  EXPECT_EQ(ref.compute(buffers, 1, {0, 1, 2, 3}),
            (std::vector<double>{2, 1, -1, 3}));
  EXPECT_EQ(ref.compute(buffers, 1, {3}), (std::vector<double>{3}));

  std::string good =
      buffer(0, "bf16", "[128, 64]") + buffer(1, "bf16", "[64, 256]") +
      buffer(2, "bf16", "[256, 64]", true) + buffer(3, "i32", "[2]", true) +
      buffer(4, "bf16", "[256, 256]");
  Manifest manifest =
      manifestWith(collectiveManifest("allgather_matmul", good));
  EXPECT_TRUE(ref.checkSignature(manifest, 2).ok());
  EXPECT_EQ(ref.flops(manifest, 2), 2.0 * 256 * 64 * 256 * 2);
  // Compiled for 2 devices, run on 4: `gathered` and C have 2 shards.
  Status wrong = ref.checkSignature(manifest, 4);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.message(),
            "reference `allgather_matmul` on 4 devices expects bf16 A [m, k], "
            "bf16 B [k, n], symmetric bf16 gathered [D*m, k], symmetric i32 "
            "semaphores [S], bf16 C [D*m, n]; the kernel's buffers are bf16 "
            "[128, 64], bf16 [64, 256], symmetric bf16 [256, 64], symmetric "
            "i32 [2], bf16 [256, 256]");
  // Semaphores that are not symmetric are refused.
  std::string plain = buffer(0, "bf16", "[128, 64]") +
                      buffer(1, "bf16", "[64, 256]") +
                      buffer(2, "bf16", "[256, 64]", true) +
                      buffer(3, "i32", "[2]") + buffer(4, "bf16", "[256, 256]");
  EXPECT_FALSE(
      ref.checkSignature(
             manifestWith(collectiveManifest("allgather_matmul", plain)), 2)
          .ok());
}

TEST(CollectiveReferences, MatmulReduceScatter) {
  const CollectiveReference &ref =
      *findCollectiveReference("matmul_reduce_scatter");
  // Two devices, A_d [2, 1], B_d [1, 2]: S = A_0 B_0 + A_1 B_1, [2, 2];
  // device d gets row d.
  std::vector<std::vector<HostBuffer>> buffers = {
      {tensor(ElementType::BF16, {2, 1}, {1, 2}),
       tensor(ElementType::BF16, {1, 2}, {1, 10})},
      {tensor(ElementType::BF16, {2, 1}, {3, -1}),
       tensor(ElementType::BF16, {1, 2}, {100, 1000})}};
  // S = [[1, 10], [2, 20]] + [[300, 3000], [-100, -1000]].
  EXPECT_EQ(ref.compute(buffers, 0, {0, 1}), (std::vector<double>{301, 3010}));
  EXPECT_EQ(ref.compute(buffers, 1, {0, 1}), (std::vector<double>{-98, -980}));

  std::string good =
      buffer(0, "bf16", "[384, 64]") + buffer(1, "bf16", "[64, 128]") +
      buffer(2, "f32", "[384, 128]", true) + buffer(3, "i32", "[6]", true) +
      buffer(4, "f32", "[128, 128]");
  Manifest manifest =
      manifestWith(collectiveManifest("matmul_reduce_scatter", good));
  EXPECT_TRUE(ref.checkSignature(manifest, 3).ok());
  EXPECT_EQ(ref.flops(manifest, 3), 2.0 * 384 * 64 * 128 * 3);
  EXPECT_FALSE(ref.checkSignature(manifest, 2).ok());
  Status notMultiple = ref.checkSignature(manifest, 5);
  ASSERT_FALSE(notMultiple.ok());
  EXPECT_NE(notMultiple.message().find("M = 384 is not a multiple of 5"),
            std::string::npos)
      << notMultiple.message();
}
