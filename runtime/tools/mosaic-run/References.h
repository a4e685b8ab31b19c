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

/// A reference of a kernel that spans devices (docs/RationaleMultiDevice.md):
/// device d's output, the kernel's last buffer parameter, from the inputs
/// every device drew. Symmetric buffers are the kernel's working memory,
/// not inputs: `compute` does not read them.
struct CollectiveReference {
  const char *name;
  const char *description;
  /// Largest ||out - ref|| / ||ref|| of one device's output that passes.
  double tolerance;
  /// Output elements compared per device by default; 0 compares all.
  uint64_t defaultSamples;
  /// Checks the kernel's buffers against the signature for `devices`.
  Status (*checkSignature)(const Manifest &manifest, unsigned devices);
  /// Floating-point operations of one launch, all devices together.
  double (*flops)(const Manifest &manifest, unsigned devices);
  /// Device `device`'s output at the flat `indices`, from `buffers[d]`
  /// (one per buffer parameter of device d; outputs and symmetric buffers
  /// are not read).
  std::vector<double> (*compute)(
      const std::vector<std::vector<HostBuffer>> &buffers, unsigned device,
      const std::vector<uint64_t> &indices);
};

/// The collective reference called `name`, or null.
const CollectiveReference *findCollectiveReference(std::string_view name);

/// The collective reference a kernel's entry name selects, as
/// `referenceForEntry` does; null when none does.
const CollectiveReference *collectiveReferenceForEntry(std::string_view entry);

/// "allgather_matmul, matmul_reduce_scatter".
std::string collectiveReferenceNames();

} // namespace mosaic::run

#endif // MOSAIC_RUN_REFERENCES_H
