//===- Arguments.cpp - Checking a launch's buffers ----------------------===//

#include "mosaic/Runtime/Arguments.h"

#include "mosaic/Contracts/Format.h"

namespace mosaic::runtime {

Status checkArguments(const Manifest &manifest,
                      const std::vector<BufferArgument> &arguments) {
  if (arguments.size() != manifest.buffers.size()) {
    std::vector<unsigned> indices;
    for (const BufferParameter &buffer : manifest.buffers)
      indices.push_back(buffer.index);
    return Error{"`" + manifest.entry + "` takes " +
                 std::to_string(manifest.buffers.size()) +
                 " buffer arguments (parameters " + formatList(indices) +
                 "), got " + std::to_string(arguments.size())};
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    const BufferParameter &expected = manifest.buffers[i];
    const BufferArgument &actual = arguments[i];
    std::string where = "parameter " + std::to_string(expected.index) + ": ";
    BufferParameter given = expected;
    given.elementType = actual.elementType;
    given.shape = actual.shape;
    if (actual.elementType != expected.elementType ||
        actual.shape != expected.shape)
      return Error{where + "expected " + expected.describe() + ", got " +
                   given.describe()};
    if (actual.pointer == 0)
      return Error{where + "the device pointer is null"};
    if (actual.pointer % expected.alignment != 0)
      return Error{where + "device pointer " + formatAddress(actual.pointer) +
                   " is not " + std::to_string(expected.alignment) +
                   "-byte aligned, as the kernel assumes"};
  }
  return Status();
}

} // namespace mosaic::runtime
