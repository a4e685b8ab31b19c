//===- ManifestWriterTest.cpp - Manifests written and read back ---------===//

#include "mosaic/Contracts/Json.h"
#include "mosaic/Contracts/Manifest.h"

#include <gtest/gtest.h>

#include <string>

using namespace mosaic;

namespace {

/// A kernel with two buffers and a tensor map on the second, after them.
Manifest sampleManifest() {
  Manifest manifest;
  manifest.entry = "kernel";
  manifest.arch = "sm_90a";
  manifest.cubin = "kernel.cubin";
  manifest.ptx = "kernel.ptx";
  manifest.ptxFeatures = "+ptx85";
  manifest.grid = {4, 2, 1};
  manifest.block = {256, 1, 1};
  manifest.cluster = {2, 1, 1};
  manifest.dynamicSmemBytes = 32776;
  for (unsigned i = 0; i < 2; ++i) {
    BufferParameter buffer;
    buffer.index = i;
    buffer.elementType = i ? ElementType::BF16 : ElementType::I32;
    buffer.shape = {4096, 64};
    manifest.parameters.push_back({Parameter::Kind::Buffer, i});
    manifest.buffers.push_back(buffer);
  }
  TensorMapDescription map;
  map.parameter = 2;
  map.buffer = 1;
  map.elementType = ElementType::BF16;
  map.rank = 2;
  map.globalDims = {64, 4096};
  map.globalStrides = {128};
  map.boxDims = {64, 128};
  map.elementStrides = {1, 1};
  map.swizzleBytes = 128;
  map.l2PromotionBytes = 128;
  manifest.parameters.push_back({Parameter::Kind::TensorMap, 0});
  manifest.tensorMaps.push_back(map);
  manifest.ptxas = PtxasReport{40, 0, 0, 0, "ptxas info: \"kernel\"\n\tdone"};
  return manifest;
}

TEST(ManifestWriter, ReadsBackWhatItWrote) {
  Manifest written = sampleManifest();
  Expected<Manifest> read = parseManifest(formatManifest(written), "/d");
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(read->entry, "kernel");
  EXPECT_EQ(read->archNumber, 90);
  EXPECT_EQ(read->archSuffix, 'a');
  EXPECT_EQ(read->cubinPath, "/d/kernel.cubin");
  EXPECT_EQ(read->ptxPath, "/d/kernel.ptx");
  EXPECT_EQ(read->ptxFeatures, "+ptx85");
  EXPECT_EQ(read->grid, written.grid);
  EXPECT_EQ(read->cluster, written.cluster);
  EXPECT_EQ(read->dynamicSmemBytes, 32776u);
  ASSERT_EQ(read->parameters.size(), 3u);
  EXPECT_EQ(read->parameters[2].kind, Parameter::Kind::TensorMap);
  ASSERT_EQ(read->buffers.size(), 2u);
  EXPECT_EQ(read->buffers[0].elementType, ElementType::I32);
  EXPECT_EQ(read->buffers[1].shape, written.buffers[1].shape);
  EXPECT_EQ(read->buffers[1].alignment, 16u);
  ASSERT_EQ(read->tensorMaps.size(), 1u);
  EXPECT_EQ(read->tensorMaps[0], written.tensorMaps[0]);
  ASSERT_TRUE(read->ptxas.has_value());
  EXPECT_EQ(read->ptxas->registers, 40);
  EXPECT_EQ(read->ptxas->text, written.ptxas->text);
  // Written again, it is the same text.
  EXPECT_EQ(formatManifest(*read), formatManifest(written));
}

TEST(ManifestWriter, NamesTheDataTypeOnlyWhenGiven) {
  Manifest manifest = sampleManifest();
  EXPECT_EQ(formatManifest(manifest).find("data_type"), std::string::npos);
  manifest.buffers[1].elementType = ElementType::I32;
  manifest.tensorMaps[0].elementType = ElementType::I32;
  manifest.tensorMaps[0].boxDims = {32, 128};
  manifest.tensorMaps[0].dataType = TensorMapDataType::UInt32;
  std::string text = formatManifest(manifest);
  EXPECT_NE(text.find("\"data_type\": \"uint32\""), std::string::npos) << text;
  Expected<Manifest> read = parseManifest(text, "");
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_EQ(read->tensorMaps[0].dataType, TensorMapDataType::UInt32);
}

TEST(ManifestWriter, OptionalFieldsAreCheckedWhenPresent) {
  std::string text = formatManifest(sampleManifest());
  auto replaced = [&](const std::string &from, const std::string &to) {
    std::string result = text;
    size_t at = result.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? result
                                   : result.replace(at, from.size(), to);
  };
  Expected<Manifest> badRegisters =
      parseManifest(replaced("\"registers\": 40", "\"registers\": \"40\""), "");
  ASSERT_FALSE(badRegisters.ok());
  EXPECT_EQ(badRegisters.message(),
            "`ptxas.registers` must be a number, got the string \"40\"");
  Expected<Manifest> badFeatures = parseManifest(
      replaced("\"ptx_features\": \"+ptx85\"", "\"ptx_features\": 85"), "");
  ASSERT_FALSE(badFeatures.ok());
  EXPECT_EQ(badFeatures.message(), "`ptx_features` must be a string, got 85");
  Manifest bare = sampleManifest();
  bare.ptxas.reset();
  bare.ptxFeatures.clear();
  Expected<Manifest> read = parseManifest(formatManifest(bare), "");
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_FALSE(read->ptxas.has_value());
  EXPECT_TRUE(read->ptxFeatures.empty());
}

TEST(ManifestWriter, TextIsLlvmJsonStyle) {
  // Sorted keys, two-space indentation, one element per line, escapes as
  // llvm::json writes them: what mosaic-compile wrote before this writer.
  JsonValue value = JsonValue::object(
      {{"b", JsonValue::array({JsonValue::integer(1), JsonValue::integer(-2)})},
       {"a", JsonValue::string("x\"\\\n\t\x01")},
       {"c", JsonValue::array({})},
       {"d", JsonValue::object({})}});
  EXPECT_EQ(formatJson(value), "{\n"
                               "  \"a\": \"x\\\"\\\\\\n\\t\\u0001\",\n"
                               "  \"b\": [\n"
                               "    1,\n"
                               "    -2\n"
                               "  ],\n"
                               "  \"c\": [],\n"
                               "  \"d\": {}\n"
                               "}");
  EXPECT_EQ(
      formatJson(value, 0),
      "{\"a\":\"x\\\"\\\\\\n\\t\\u0001\",\"b\":[1,-2],\"c\":[],\"d\":{}}");
}

} // namespace
