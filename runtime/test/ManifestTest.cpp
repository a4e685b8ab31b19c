//===- ManifestTest.cpp - Parsing and checking manifests ----------------===//

#include "TestSupport.h"

#include "mosaic/Contracts/Manifest.h"

#include <gtest/gtest.h>

#include <cstdio>

using namespace mosaic;
using namespace mosaic::runtime;
using mosaic::runtime::test::kElementwiseManifest;
using mosaic::runtime::test::kRoundTripManifest;
using mosaic::runtime::test::replaceOnce;
using mosaic::runtime::test::writeTempFile;

namespace {

std::string manifestError(const std::string &json) {
  Expected<Manifest> manifest = parseManifest(json, "");
  EXPECT_FALSE(manifest.ok()) << "accepted:\n" << json;
  return manifest.message();
}

TEST(Manifest, ReadsTheElementwiseManifest) {
  Expected<Manifest> manifest = parseManifest(kElementwiseManifest, "build");
  ASSERT_TRUE(manifest.ok()) << manifest.message();
  EXPECT_EQ(manifest->arch, "sm_90a");
  EXPECT_EQ(manifest->archNumber, 90);
  EXPECT_EQ(manifest->archSuffix, 'a');
  EXPECT_EQ(manifest->entry, "elementwise");
  EXPECT_EQ(manifest->cubinPath, "build/elementwise.cubin");
  EXPECT_EQ(manifest->ptx, "elementwise.ptx");
  EXPECT_EQ(manifest->ptxPath, "build/elementwise.ptx");
  EXPECT_EQ(manifest->grid, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_EQ(manifest->block, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_EQ(manifest->cluster, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(manifest->dynamicSmemBytes, 0u);
  ASSERT_EQ(manifest->parameters.size(), 3u);
  ASSERT_EQ(manifest->buffers.size(), 3u);
  EXPECT_TRUE(manifest->tensorMaps.empty());
  const BufferParameter &out = manifest->buffers[2];
  EXPECT_EQ(out.index, 2u);
  EXPECT_EQ(out.elementType, ElementType::F32);
  EXPECT_EQ(out.shape, std::vector<int64_t>{1048576});
  EXPECT_EQ(out.alignment, 16u);
  EXPECT_EQ(out.byteSize(), 4194304u);
  EXPECT_EQ(out.describe(), "f32 buffer of shape [1048576] (4194304 bytes)");
}

TEST(Manifest, ReadsTensorMaps) {
  Expected<Manifest> manifest = parseManifest(kRoundTripManifest, "");
  ASSERT_TRUE(manifest.ok()) << manifest.message();
  EXPECT_EQ(manifest->cubinPath, "tma_roundtrip.cubin");
  // `ptx` is optional: manifests from before the emulator have none.
  EXPECT_EQ(manifest->ptx, "");
  EXPECT_EQ(manifest->ptxPath, "");
  ASSERT_EQ(manifest->parameters.size(), 4u);
  EXPECT_EQ(manifest->parameters[3].kind, Parameter::Kind::TensorMap);
  EXPECT_EQ(manifest->parameters[3].slot, 1u);
  ASSERT_EQ(manifest->tensorMaps.size(), 2u);
  const TensorMapDescription &map = manifest->tensorMaps[1];
  EXPECT_EQ(map.parameter, 3u);
  EXPECT_EQ(map.buffer, 1u);
  EXPECT_EQ(map.rank, 4u);
  EXPECT_EQ(map.globalDims, (std::vector<uint64_t>{64, 8, 1, 512}));
  EXPECT_EQ(map.globalStrides, (std::vector<uint64_t>{128, 128, 1024}));
  EXPECT_EQ(map.boxDims, (std::vector<uint32_t>{64, 8, 1, 16}));
  EXPECT_EQ(map.elementStrides, (std::vector<uint32_t>{1, 1, 1, 1}));
  EXPECT_EQ(map.swizzleBytes, 128u);
  EXPECT_EQ(map.interleaveBytes, 0u);
  EXPECT_EQ(map.l2PromotionBytes, 0u);
  EXPECT_FALSE(map.oobFillNan);
  EXPECT_EQ(manifest->bufferAt(1), &manifest->buffers[1]);
  EXPECT_EQ(manifest->bufferAt(2), nullptr);
}

TEST(Manifest, ReadsEveryOptionSpelling) {
  std::string json =
      replaceOnce(kRoundTripManifest, "\"l2_promotion\": \"none\"",
                  "\"l2_promotion\": \"256B\"");
  json = replaceOnce(json, "\"oob_fill\": \"none\"", "\"oob_fill\": \"nan\"");
  Expected<Manifest> manifest = parseManifest(json, "/kernels/");
  ASSERT_TRUE(manifest.ok()) << manifest.message();
  EXPECT_EQ(manifest->cubinPath, "/kernels/tma_roundtrip.cubin");
  EXPECT_EQ(manifest->tensorMaps[0].l2PromotionBytes, 256u);
  EXPECT_TRUE(manifest->tensorMaps[0].oobFillNan);
}

// `data_type` is optional: a reduction's map names how TMA reads the
// elements (a signed or unsigned min); without it the element type decides.
TEST(Manifest, ReadsTheDataType) {
  Expected<Manifest> manifest = parseManifest(kRoundTripManifest, "");
  ASSERT_TRUE(manifest.ok()) << manifest.message();
  EXPECT_FALSE(manifest->tensorMaps[0].dataType.has_value());
  std::string json = replaceOnce(
      kRoundTripManifest, "\"element_type\": \"bf16\", \"rank\"",
      "\"element_type\": \"bf16\", \"data_type\": \"bfloat16\", \"rank\"");
  manifest = parseManifest(json, "");
  ASSERT_TRUE(manifest.ok()) << manifest.message();
  EXPECT_EQ(manifest->tensorMaps[0].dataType, TensorMapDataType::BFloat16);
  EXPECT_FALSE(manifest->tensorMaps[1].dataType.has_value());
  for (const char *name :
       {"uint8", "uint16", "uint32", "int32", "uint64", "int64", "float16",
        "float32", "float64", "bfloat16"}) {
    std::optional<TensorMapDataType> type = parseTensorMapDataType(name);
    ASSERT_TRUE(type.has_value()) << name;
    EXPECT_EQ(std::string(spelling(*type)), name);
  }

  EXPECT_EQ(
      manifestError(replaceOnce(json, "\"bfloat16\"", "\"u32\"")),
      "`tensor_maps[0].data_type` is \"u32\", expected one of uint8, uint16, "
      "uint32, int32, uint64, int64, float16, float32, float64, bfloat16");
  EXPECT_EQ(manifestError(replaceOnce(json, "\"bfloat16\"", "7")),
            "`tensor_maps[0].data_type` must be a string, got 7");
  EXPECT_EQ(manifestError(replaceOnce(json, "\"bfloat16\"", "\"int32\"")),
            "tensor map 0 for parameter 0: data type int32 does not hold "
            "bf16 elements; they travel as bfloat16");
}

TEST(Manifest, ResolvesThePtxLikeTheCubin) {
  std::string json = replaceOnce(kElementwiseManifest, "\"elementwise.ptx\"",
                                 "\"/kernels/elementwise.ptx\"");
  Expected<Manifest> manifest = parseManifest(json, "build/");
  ASSERT_TRUE(manifest.ok()) << manifest.message();
  EXPECT_EQ(manifest->ptxPath, "/kernels/elementwise.ptx");
  manifest = parseManifest(kElementwiseManifest, "");
  ASSERT_TRUE(manifest.ok()) << manifest.message();
  EXPECT_EQ(manifest->ptxPath, "elementwise.ptx");
  EXPECT_EQ(manifestError(
                replaceOnce(kElementwiseManifest, "\"elementwise.ptx\"", "3")),
            "`ptx` must be a string, got 3");
  EXPECT_EQ(manifestError(replaceOnce(kElementwiseManifest,
                                      "\"elementwise.ptx\"", "\"\"")),
            "`ptx` is empty");
}

TEST(Manifest, NamesMissingAndMistypedFields) {
  EXPECT_EQ(manifestError(replaceOnce(kElementwiseManifest,
                                      "\"entry\": \"elementwise\",", "")),
            "the manifest has no `entry`");
  EXPECT_EQ(
      manifestError(replaceOnce(kElementwiseManifest, "\"grid\": [128, 1, 1]",
                                "\"grid\": \"128\"")),
      "`grid` must be an array, got the string \"128\"");
  EXPECT_EQ(
      manifestError(replaceOnce(kElementwiseManifest, "\"grid\": [128, 1, 1]",
                                "\"grid\": [128, 1]")),
      "`grid` must have 3 entries (x, y, z), got 2");
  EXPECT_EQ(
      manifestError(replaceOnce(kElementwiseManifest, "\"block\": [128, 1, 1]",
                                "\"block\": [128, 0, 1]")),
      "`block[1]` is 0, expected an integer from 1 to 2147483647");
  EXPECT_EQ(manifestError(replaceOnce(kElementwiseManifest,
                                      "\"dynamic_smem_bytes\": 0",
                                      "\"dynamic_smem_bytes\": 1.5")),
            "`dynamic_smem_bytes` must be an integer from 0 to 2147483647, "
            "got the non-integer 1.500000");
  EXPECT_EQ(
      manifestError(replaceOnce(kElementwiseManifest, "\"shape\": [1048576]",
                                "\"shape\": [-4]")),
      "`parameters[0].shape[0]` is -4, expected an integer >= 1");
  EXPECT_EQ(manifestError(replaceOnce(kElementwiseManifest,
                                      "\"element_type\": \"f32\"",
                                      "\"element_type\": \"float\"")),
            "`parameters[0].element_type` is \"float\", expected one of f32, "
            "f16, bf16, f64, i8, i16, i32, i64, f8E4M3FN, f8E5M2");
  EXPECT_EQ(manifestError(replaceOnce(kElementwiseManifest, "\"alignment\": 16",
                                      "\"alignment\": 12")),
            "`parameters[0].alignment` is 12, expected a power of two");
  EXPECT_EQ(
      manifestError(replaceOnce(kElementwiseManifest, "\"kind\": \"buffer\"",
                                "\"kind\": \"scalar\"")),
      "`parameters[0].kind` is \"scalar\", expected one of \"buffer\", "
      "\"tensor_map\", \"collective\"");
  EXPECT_EQ(manifestError(replaceOnce(kElementwiseManifest, "\"index\": 1",
                                      "\"index\": 2")),
            "`parameters[1].index` is 2, expected 1 (entries are listed in "
            "order)");
  EXPECT_EQ(manifestError(replaceOnce(kElementwiseManifest,
                                      "\"entry\": \"elementwise\"",
                                      "\"entry\": \"\"")),
            "`entry` is empty");
  EXPECT_EQ(manifestError("[]"),
            "the manifest must be a JSON object, got an array");
  EXPECT_EQ(
      manifestError("{\"arch\": 90"),
      "JSON line 1, column 12: expected ',' or '}' after an object member");
}

TEST(Manifest, ChecksTheArchAndTheLaunchShape) {
  for (const char *arch : {"sm90a", "sm_9", "sm_90b", "compute_90", "sm_1000"})
    EXPECT_NE(manifestError(replaceOnce(kElementwiseManifest, "\"sm_90a\"",
                                        std::string("\"") + arch + "\""))
                  .find("expected sm_<major><minor>[a|f]"),
              std::string::npos)
        << arch;
  Expected<Manifest> plain = parseManifest(
      replaceOnce(kElementwiseManifest, "\"sm_90a\"", "\"sm_100\""), "");
  ASSERT_TRUE(plain.ok()) << plain.message();
  EXPECT_EQ(plain->archNumber, 100);
  EXPECT_EQ(plain->archSuffix, 0);
  EXPECT_EQ(
      manifestError(replaceOnce(kElementwiseManifest, "\"cluster\": [1, 1, 1]",
                                "\"cluster\": [3, 1, 1]")),
      "`grid` [128, 1, 1] is not a multiple of `cluster` [3, 1, 1] in "
      "dim 0");
}

TEST(Manifest, ChecksTensorMapReferences) {
  EXPECT_EQ(manifestError(replaceOnce(kRoundTripManifest, "\"tensor_map\": 1",
                                      "\"tensor_map\": 2")),
            "`tensor_maps[1].parameter` is 3, but that is not a tensor_map "
            "parameter naming tensor map 1");
  EXPECT_EQ(manifestError(replaceOnce(kRoundTripManifest, "\"parameter\": 3",
                                      "\"parameter\": 1")),
            "`tensor_maps[1].parameter` is 1, but that is not a tensor_map "
            "parameter naming tensor map 1");
  EXPECT_EQ(manifestError(replaceOnce(kRoundTripManifest, "\"buffer\": 1",
                                      "\"buffer\": 3")),
            "`tensor_maps[1].buffer` is 3, which is not a buffer parameter");
  // A tensor-map parameter whose map is missing.
  std::string json = replaceOnce(
      kRoundTripManifest,
      "{\"index\": 3, \"kind\": \"tensor_map\", \"tensor_map\": 1}",
      "{\"index\": 3, \"kind\": \"tensor_map\", \"tensor_map\": 1},\n"
      "    {\"index\": 4, \"kind\": \"tensor_map\", \"tensor_map\": 2}");
  EXPECT_EQ(manifestError(json),
            "`parameters[4].tensor_map` is 2, but there are 2 tensor maps");
  EXPECT_EQ(manifestError(replaceOnce(kRoundTripManifest, "\"swizzle\": 128",
                                      "\"swizzle\": 96")),
            "`tensor_maps[0].swizzle` is 96, expected 0, 32, 64 or 128");
  EXPECT_EQ(
      manifestError(replaceOnce(kRoundTripManifest, "\"interleave\": \"none\"",
                                "\"interleave\": \"64B\"")),
      "`tensor_maps[0].interleave` is \"64B\", expected one of \"none\", "
      "\"16B\", \"32B\"");
  EXPECT_EQ(manifestError(
                replaceOnce(kRoundTripManifest, "\"rank\": 4", "\"rank\": 6")),
            "`tensor_maps[0].rank` is 6, expected an integer from 1 to 5");
}

TEST(Manifest, AppliesTheTmaRulesOnLoad) {
  EXPECT_EQ(manifestError(replaceOnce(kRoundTripManifest, "[128, 128, 1024]",
                                      "[100, 128, 1024]")),
            "tensor map 0 for parameter 0: global stride of dim 1 is 100 "
            "bytes, TMA needs a multiple of 16");
  EXPECT_EQ(manifestError(replaceOnce(kRoundTripManifest, "[64, 8, 1, 512]",
                                      "[64, 8, 1, 513]")),
            "tensor map 0 for parameter 0: global dims [64, 8, 1, 513] with "
            "strides [128, 128, 1024] span 525312 bytes, but parameter 0 is a "
            "bf16 buffer of shape [4096, 64] (524288 bytes)");
}

TEST(Manifest, LoadResolvesTheCubinBesideTheManifest) {
  std::string path =
      writeTempFile("mosaic_manifest_test.json", kElementwiseManifest);
  Expected<Manifest> manifest = loadManifest(path);
  ASSERT_TRUE(manifest.ok()) << manifest.message();
  EXPECT_EQ(manifest->cubinPath, testing::TempDir() + "elementwise.cubin");
  EXPECT_EQ(manifest->ptxPath, testing::TempDir() + "elementwise.ptx");
  std::remove(path.c_str());

  Expected<Manifest> missing = loadManifest("/nonexistent/kernel.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(
      missing.message(),
      "cannot read `/nonexistent/kernel.json`: No such file or directory");
}

TEST(Manifest, LoadErrorsStartWithThePath) {
  std::string path = writeTempFile("mosaic_manifest_bad.json", "{}");
  Expected<Manifest> manifest = loadManifest(path);
  ASSERT_FALSE(manifest.ok());
  EXPECT_EQ(manifest.message(), path + ": the manifest has no `arch`");
  std::remove(path.c_str());
}

} // namespace
