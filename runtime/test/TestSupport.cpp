//===- TestSupport.cpp - Helpers the tests share ------------------------===//

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sys/wait.h>

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

Outcome runCommand(const std::string &command) {
  Outcome outcome;
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe)
    return outcome;
  char chunk[4096];
  size_t read;
  while ((read = fread(chunk, 1, sizeof(chunk), pipe)) > 0)
    outcome.output.append(chunk, read);
  int status = pclose(pipe);
  outcome.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

Outcome runMosaicRun(const std::string &arguments,
                     const std::string &environment) {
  return runCommand(environment + " " + MOSAIC_RUN_PATH + " " + arguments);
}

} // namespace mosaic::runtime::test
