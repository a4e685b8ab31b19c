//===- Manifest.h - The JSON manifest of a compiled kernel ----*- C++ -*-===//
//
// `mosaic-compile kernel.mlir -o kernel.cubin` writes kernel.json beside the
// CUBIN: the entry point, the launch shape, the dynamic shared memory, every
// kernel parameter in order, and for every TMA tensor map the exact
// arguments of cuTensorMapEncodeTiled except the global address. This is
// the format's one owner: the compiler fills a `Manifest` and writes it
// with `formatManifest`, the runtime and the Python package read it with
// `parseManifest`. docs/RationaleRuntime.md gives the format;
// `parseManifest` checks its structure (types, ranges, cross references)
// and, through `checkTensorMap`, every TMA rule that does not depend on the
// address.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_CONTRACTS_MANIFEST_H
#define MOSAIC_CONTRACTS_MANIFEST_H

#include "mosaic/Contracts/ElementType.h"
#include "mosaic/Contracts/HardwareLimits.h"
#include "mosaic/Contracts/Status.h"
#include "mosaic/Contracts/TensorMapDescription.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mosaic {

/// A kernel argument passed as one 8-byte device pointer to a row-major,
/// contiguous buffer of static shape.
struct BufferParameter {
  unsigned index = 0; // Position in the kernel's parameter list.
  ElementType elementType = ElementType::F32;
  std::vector<int64_t> shape;
  /// The kernel assumes the pointer is aligned so.
  uint64_t alignment = limits::kGlobalAlignment;
  /// The buffer exists on every device of a multi-device launch, and the
  /// kernel reaches the peers' copies through the collective table
  /// (docs/RationaleMultiDevice.md).
  bool symmetric = false;

  uint64_t elementCount() const;
  uint64_t byteSize() const;
  /// "bf16 buffer of shape [4096, 4096] (33554432 bytes)".
  std::string describe() const;
};

struct Parameter {
  /// `Collective`: the 8-byte pointer to the kernel's collective table
  /// (docs/RationaleMultiDevice.md), at most one, after the others.
  enum class Kind { Buffer, TensorMap, Collective };
  Kind kind = Kind::Buffer;
  /// Index into `Manifest::buffers` or `Manifest::tensorMaps`; 0 for the
  /// collective table.
  unsigned slot = 0;
};

/// What ptxas reported compiling the kernel: -1 where it said nothing.
struct PtxasReport {
  int64_t registers = -1;
  int64_t spillStores = -1;
  int64_t spillLoads = -1;
  int64_t stackFrameBytes = -1;
  std::string text; // ptxas -v's output as it was.
};

struct Manifest {
  std::string arch;    // "sm_90a".
  int archNumber = 0;  // 90: major * 10 + minor.
  char archSuffix = 0; // 'a' (arch-specific), 'f' (family) or none.
  std::string entry;   // The kernel's symbol in the CUBIN.
  std::string cubin;   // As written in the manifest.
  /// `cubin` resolved against the manifest's directory.
  std::string cubinPath;
  /// The optional `ptx` (the kernel's PTX, which the emulator runs), as
  /// written and resolved like `cubinPath`; both empty when absent.
  std::string ptx;
  std::string ptxPath;
  /// The optional `ptx_features` the PTX was made with ("+ptx85").
  std::string ptxFeatures;
  std::array<uint32_t, 3> grid{}, block{}, cluster{};
  uint32_t dynamicSmemBytes = 0;
  std::vector<Parameter> parameters;    // Every kernel parameter, in order.
  std::vector<BufferParameter> buffers; // The buffer parameters, in order.
  std::vector<TensorMapDescription> tensorMaps; // `tensor_maps`, in order.
  /// The optional `ptxas`, for the reader of the file.
  std::optional<PtxasReport> ptxas;

  /// The buffer parameter whose kernel parameter index is `index`, or null.
  const BufferParameter *bufferAt(unsigned index) const;
  /// The index of the collective-table parameter, if the kernel has one.
  std::optional<unsigned> collectiveParameter() const;
  /// The symmetric buffers (`buffers` indices, in order) and the peer
  /// tensor maps (`tensorMaps` indices, in order): the rows of the
  /// collective table.
  std::vector<unsigned> symmetricBuffers() const;
  std::vector<unsigned> peerTensorMaps() const;
};

/// Parses and checks a manifest. `directory` resolves a relative `cubin` and
/// `ptx`.
Expected<Manifest> parseManifest(std::string_view json,
                                 const std::string &directory);

/// The manifest as JSON text, as `parseManifest` reads it: `parameters`
/// from `parameters` with their buffers and the tensor maps they name,
/// `tensor_maps` from `tensorMaps`, the paths as written (`cubin`, `ptx`).
std::string formatManifest(const Manifest &manifest);

/// Checks the rules of `map` that do not depend on the address: rank 1 to 5
/// (3 to 5 when interleaved), the element type is the buffer's, a named
/// data type reads that element type (i32 as int32 or uint32, i64 as int64
/// or uint64, every other type as its default only), array lengths, every
/// global dim in 1..2^32, every global stride a multiple of 16 (32 with
/// 32-byte interleave) and below 2^40, box dims in 1..256, element strides
/// in 1..8, the box's inner extent a multiple of 16 bytes (no interleave),
/// the swizzle span covering it, NaN fill only for floating-point types,
/// and the described region inside the buffer: sum((dim - 1) * stride)
/// plus one element must not exceed the buffer's bytes.
Status checkTensorMap(const TensorMapDescription &map,
                      const BufferParameter &buffer);

/// Reads `path` and parses it; errors start with the path.
Expected<Manifest> loadManifest(const std::string &path);

/// Reads a whole file.
Expected<std::string> readFile(const std::string &path);

} // namespace mosaic

#endif // MOSAIC_CONTRACTS_MANIFEST_H
