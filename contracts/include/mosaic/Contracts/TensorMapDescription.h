//===- TensorMapDescription.h - A TMA transfer's tensor map ---*- C++ -*-===//
//
// The tensor map a TMA transfer needs, described by value: the lowering
// fills one per distinct transfer, the compiler writes it into the manifest
// (`tensor_maps`), and the runtime turns it into cuTensorMapEncodeTiled's
// arguments once it knows the buffer's address. The fields are that
// function's arguments, innermost dimension first (CUDA Driver API,
// "Tensor Map Object Management").
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_CONTRACTS_TENSORMAPDESCRIPTION_H
#define MOSAIC_CONTRACTS_TENSORMAPDESCRIPTION_H

#include "mosaic/Contracts/ElementType.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace mosaic {

/// The TMA data types (cuda.h's CUtensorMapDataType), spelled as the
/// enumerators' suffixes in lower case: "uint32", "int32", "bfloat16", ...
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
/// The data type a buffer type travels as unless a map names another:
/// floats as themselves, i16 as uint16, i32 and i64 as int32 and int64,
/// bytes (i8, fp8) as uint8.
TensorMapDataType defaultDataType(ElementType type);
/// Whether `type` reads `element`'s bytes as that type: its default, and
/// for 32- and 64-bit integers the other signedness too.
bool holds(TensorMapDataType type, ElementType element);
bool isFloat(TensorMapDataType type);

struct TensorMapDescription {
  unsigned index = 0;     // Position in the kernel's tensor maps.
  unsigned parameter = 0; // The kernel parameter that receives it by value.
  unsigned buffer = 0;    // The buffer parameter holding the global address.
  ElementType elementType = ElementType::F32;
  /// How TMA reads the elements, which matters only to reductions (a
  /// signed or unsigned min); without it, defaultDataType(elementType).
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
  /// A map over a remote view of a symmetric buffer: the runtime encodes one
  /// per device into the collective table (then `parameter` is the table's
  /// parameter) instead of passing it by value.
  bool peer = false;

  /// The data type TMA reads the elements as.
  TensorMapDataType encodedDataType() const {
    return dataType ? *dataType : defaultDataType(elementType);
  }

  bool operator==(const TensorMapDescription &other) const;
  bool operator!=(const TensorMapDescription &other) const {
    return !(*this == other);
  }
};

} // namespace mosaic

#endif // MOSAIC_CONTRACTS_TENSORMAPDESCRIPTION_H
