//===- ElementType.h - Element types of kernel buffers --------*- C++ -*-===//
//
// The element types a manifest may name, spelled as MLIR spells them, with
// their sizes and exact conversions to and from double (round to nearest
// even, as the GPU's conversions do).
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_RUNTIME_ELEMENTTYPE_H
#define MOSAIC_RUNTIME_ELEMENTTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mosaic::runtime {

enum class ElementType {
  F32,
  F16,
  BF16,
  F64,
  I8,
  I16,
  I32,
  I64,
  F8E4M3FN,
  F8E5M2
};

/// The type spelled `name` ("f32", "bf16", "f8E4M3FN", ...), if any.
std::optional<ElementType> parseElementType(std::string_view name);
/// Every spelling, comma-separated: for messages.
const char *elementTypeSpellings();
const char *spelling(ElementType type);
size_t byteSize(ElementType type);
bool isFloat(ElementType type);

/// The value of the element stored at `bytes` (little-endian, as on the GPU).
double toDouble(ElementType type, const void *bytes);
/// Stores `value` rounded to `type` at `bytes`: round to nearest even; NaN
/// stays NaN; values beyond the largest finite one become infinity, or NaN
/// for f8E4M3FN, which has no infinity; integers are rounded and saturated.
void fromDouble(ElementType type, double value, void *bytes);

} // namespace mosaic::runtime

#endif // MOSAIC_RUNTIME_ELEMENTTYPE_H
