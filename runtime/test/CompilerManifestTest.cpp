//===- CompilerManifestTest.cpp - What mosaic-compile writes loads here --===//
//
// In the main build, compiles every example kernel with mosaic-compile and
// checks that the runtime accepts the manifest it writes (every TMA rule
// included) and that mosaic-run has a reference for it, so the compiler
// and the runtime cannot drift apart unnoticed. The standalone runtime build
// has no compiler and skips this test, as does a machine without ptxas.
//
//===----------------------------------------------------------------------===//

#include "References.h"
#include "TestSupport.h"

#include "mosaic/Contracts/Manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <dirent.h>

using namespace mosaic;
using namespace mosaic::runtime;

namespace {

#ifdef MOSAIC_COMPILE_PATH
std::vector<std::string> exampleKernels() {
  std::vector<std::string> names;
  if (DIR *dir = opendir(MOSAIC_EXAMPLES_DIR)) {
    while (dirent *entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name.size() > 5 && name.substr(name.size() - 5) == ".mlir")
        names.push_back(name.substr(0, name.size() - 5));
    }
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  return names;
}
#endif

TEST(CompilerManifest, EveryExampleLoads) {
#ifndef MOSAIC_COMPILE_PATH
  GTEST_SKIP() << "built without mosaic-compile (the standalone runtime build)";
#else
  std::vector<std::string> names = exampleKernels();
  ASSERT_FALSE(names.empty()) << "no examples in " << MOSAIC_EXAMPLES_DIR;
  for (const std::string &name : names) {
    std::string cubin =
        testing::TempDir() + "mosaic_example_" + name + ".cubin";
    std::string json = cubin.substr(0, cubin.size() - 6) + ".json";
    std::remove(json.c_str());
    test::Outcome compiled = test::runCommand(std::string(MOSAIC_COMPILE_PATH) +
                                              " " + MOSAIC_EXAMPLES_DIR + "/" +
                                              name + ".mlir -o " + cubin);
    if (compiled.output.find("ptxas not found") != std::string::npos)
      GTEST_SKIP() << "no ptxas to compile the examples with";
    ASSERT_EQ(compiled.status, 0)
        << "mosaic-compile failed on " << name << ":\n"
        << compiled.output;
    Expected<Manifest> manifest = loadManifest(json);
    ASSERT_TRUE(manifest.ok()) << manifest.message();
    const mosaic::run::Reference *reference =
        mosaic::run::referenceForEntry(manifest->entry);
    ASSERT_NE(reference, nullptr) << "no reference for " << manifest->entry;
    Status signature = reference->checkSignature(*manifest);
    EXPECT_TRUE(signature.ok()) << signature.message();
  }
#endif
}

} // namespace
