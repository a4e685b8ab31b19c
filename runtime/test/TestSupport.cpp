//===- TestSupport.cpp - Helpers the tests share ------------------------===//

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <fstream>

namespace mosaic::runtime::test {

std::string replaceOnce(std::string text, const std::string &from,
                        const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "`" << from << "` not in the text";
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

std::string writeTempFile(const std::string &name,
                          const std::string &contents) {
  std::string path = testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

} // namespace mosaic::runtime::test
