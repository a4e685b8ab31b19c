//===- Arguments.h - Checking a launch's buffers --------------*- C++ -*-===//
//
// What a caller passes for each buffer parameter, and the checks that need
// no driver: count, element type, shape, null and misaligned pointers.
// `Kernel::prepare` adds the checks that ask the driver (is it device memory
// of this context, is the allocation large enough).
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_RUNTIME_ARGUMENTS_H
#define MOSAIC_RUNTIME_ARGUMENTS_H

#include "mosaic/Contracts/Manifest.h"
#include "mosaic/Contracts/Status.h"

#include <cuda.h>

#include <cstdint>
#include <vector>

namespace mosaic::runtime {

/// One buffer argument: a device pointer and what the caller says it holds.
struct BufferArgument {
  CUdeviceptr pointer = 0;
  ElementType elementType = ElementType::F32;
  std::vector<int64_t> shape;
};

/// Checks `arguments` (one per buffer parameter, in parameter order) against
/// the manifest's buffer parameters.
Status checkArguments(const Manifest &manifest,
                      const std::vector<BufferArgument> &arguments);

} // namespace mosaic::runtime

#endif // MOSAIC_RUNTIME_ARGUMENTS_H
