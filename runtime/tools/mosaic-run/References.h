//===- References.h - Float64 references of the example kernels -*- C++ -*-===//
//
// Each reference is named after the example kernel it checks, states the
// signature it expects, and computes the kernel's outputs (its last buffer
// parameters: one, or two for attention's O and LSE) in float64 from the
// inputs the run drew.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_RUN_REFERENCES_H
#define MOSAIC_RUN_REFERENCES_H

#include "Check.h"

#include "mosaic/Contracts/Manifest.h"
#include "mosaic/Contracts/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mosaic::run {

using mosaic::Manifest;
using mosaic::Status;

struct Reference {
  const char *name;
  /// "out = x * y + x over f32 buffers of one shape".
  const char *description;
  /// Largest ||out - ref|| / ||ref|| that passes (docs/RationaleRuntime.md).
  double tolerance;
  /// Output elements compared by default; 0 compares all of them.
  uint64_t defaultSamples;
  /// Checks that the kernel's buffers are what the reference computes on.
  Status (*checkSignature)(const Manifest &manifest);
  /// Floating-point operations of one run, or 0 to report bandwidth only.
  double (*flops)(const Manifest &manifest);
  /// The values of output `output` (0 for the first of the reference's
  /// outputs) at the flat `indices`, from `buffers` (one per buffer
  /// parameter; the outputs' contents are not read).
  std::vector<double> (*compute)(const std::vector<HostBuffer> &buffers,
                                 unsigned output,
                                 const std::vector<uint64_t> &indices);
  /// The kernel's outputs are its last `outputs` buffer parameters.
  unsigned outputs = 1;
};

/// The reference called `name`, or null.
const Reference *findReference(std::string_view name);

/// The reference a kernel's entry name selects by default: the one called
/// `entry`, or else the one whose name followed by `_` begins it (`gemm_ws`
/// is checked as `gemm`); null when none does.
const Reference *referenceForEntry(std::string_view entry);

/// "elementwise, softmax, tma_roundtrip, gemm".
std::string referenceNames();

} // namespace mosaic::run

#endif // MOSAIC_RUN_REFERENCES_H
