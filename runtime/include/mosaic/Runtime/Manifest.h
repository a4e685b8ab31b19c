//===- Manifest.h - The JSON manifest mosaic-compile writes ---*- C++ -*-===//
//
// `mosaic-compile kernel.mlir -o kernel.cubin` writes kernel.json beside the
// CUBIN: the entry point, the launch shape, the dynamic shared memory, every
// kernel parameter in order, and for every TMA tensor map the exact
// arguments of cuTensorMapEncodeTiled except the global address.
// docs/RationaleRuntime.md gives the format; `parseManifest` checks its
// structure (types, ranges, cross references) and, through
// `checkTensorMap`, every TMA rule that does not depend on the address.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_RUNTIME_MANIFEST_H
#define MOSAIC_RUNTIME_MANIFEST_H

#include "mosaic/Runtime/ElementType.h"
#include "mosaic/Runtime/Status.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mosaic::runtime {

/// A kernel argument passed as one 8-byte device pointer to a row-major,
/// contiguous buffer of static shape.
struct BufferParameter {
  unsigned index = 0; // Position in the kernel's parameter list.
  ElementType elementType = ElementType::F32;
  std::vector<int64_t> shape;
  uint64_t alignment = 16; // The kernel assumes the pointer is aligned so.

  uint64_t elementCount() const;
  uint64_t byteSize() const;
  /// "bf16 buffer of shape [4096, 4096] (33554432 bytes)".
  std::string describe() const;
};

/// The TMA data types a manifest may name (cuda.h's CUtensorMapDataType),
/// spelled as the enumerators' suffixes in lower case: "uint32", "int32",
/// "bfloat16", ...
enum class TensorMapDataType {
  UInt8,
  UInt16,
  UInt32,
  Int32,
  UInt64,
  Int64,
  Float16,
  Float32,
  Float64,
  BFloat16
};

std::optional<TensorMapDataType> parseTensorMapDataType(std::string_view name);
const char *spelling(TensorMapDataType type);
/// Every spelling, comma-separated: for messages.
const char *tensorMapDataTypeSpellings();

/// One `tensor_maps` entry: cuTensorMapEncodeTiled's arguments, innermost
/// dimension first, for the buffer parameter `buffer`.
struct TensorMapEntry {
  unsigned index = 0;     // Position in `tensor_maps`.
  unsigned parameter = 0; // The kernel parameter that receives it by value.
  unsigned buffer = 0;    // The buffer parameter holding the global address.
  ElementType elementType = ElementType::F32;
  /// The optional `data_type`: how TMA reads the elements, which matters
  /// only to reductions (a signed or unsigned min); without it the element
  /// type's default (integers as INT32/INT64, UINT16, UINT8).
  std::optional<TensorMapDataType> dataType;
  unsigned rank = 0;
  std::vector<uint64_t> globalDims;    // rank entries, elements.
  std::vector<uint64_t> globalStrides; // rank - 1 entries, bytes (dims 1..).
  std::vector<uint32_t> boxDims;       // rank entries, elements.
  std::vector<uint32_t> elementStrides;
  unsigned swizzleBytes = 0;     // 0, 32, 64 or 128.
  unsigned interleaveBytes = 0;  // 0 ("none"), 16 or 32.
  unsigned l2PromotionBytes = 0; // 0 ("none"), 64, 128 or 256.
  bool oobFillNan = false;       // "nan" rather than "none".
};

struct Parameter {
  enum class Kind { Buffer, TensorMap };
  Kind kind = Kind::Buffer;
  /// Index into `Manifest::buffers` or `Manifest::tensorMaps`.
  unsigned slot = 0;
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
  std::array<uint32_t, 3> grid{}, block{}, cluster{};
  uint32_t dynamicSmemBytes = 0;
  std::vector<Parameter> parameters;      // Every kernel parameter, in order.
  std::vector<BufferParameter> buffers;   // The buffer parameters, in order.
  std::vector<TensorMapEntry> tensorMaps; // `tensor_maps`, in order.

  /// The buffer parameter whose kernel parameter index is `index`, or null.
  const BufferParameter *bufferAt(unsigned index) const;
};

/// Parses and checks a manifest. `directory` resolves a relative `cubin` and
/// `ptx`.
Expected<Manifest> parseManifest(std::string_view json,
                                 const std::string &directory);

/// Reads `path` and parses it; errors start with the path.
Expected<Manifest> loadManifest(const std::string &path);

/// Reads a whole file.
Expected<std::string> readFile(const std::string &path);

} // namespace mosaic::runtime

#endif // MOSAIC_RUNTIME_MANIFEST_H
