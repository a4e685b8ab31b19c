//===- ElementType.h - The element types of kernels -----------*- C++ -*-===//
//
// Every element type a kernel's values and buffers can have, in one table:
// its spelling (as MLIR spells it), width, kind, whether a kernel buffer may
// hold it (what a manifest may name), and NumPy's name for it. The compiler
// names buffer types in manifests with it, the runtime reads them and
// converts elements exactly to and from double (round to nearest even, as
// the GPU's conversions do), and the Python package makes its dtype objects
// from it.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_CONTRACTS_ELEMENTTYPE_H
#define MOSAIC_CONTRACTS_ELEMENTTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mosaic {

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
  F8E5M2,
  // Values only: a kernel buffer never holds these.
  I1,
  Index,
  /// The element of mbarrier arrays in shared memory.
  Barrier
};

enum class ElementKind { Float, Integer, Index, Barrier };

/// One row of the table.
struct ElementTypeInfo {
  ElementType type;
  /// As MLIR spells the type: "f32", "bf16", "f8E4M3FN", "index".
  const char *spelling;
  unsigned bits;
  ElementKind kind;
  /// A kernel buffer (a manifest's `element_type`) may hold it.
  bool buffer;
  /// NumPy's (or ml_dtypes') name for the same values, or null.
  const char *numpy;
};

/// Every element type, buffer types first, in the order of ElementType.
const ElementTypeInfo *elementTypesBegin();
const ElementTypeInfo *elementTypesEnd();
const ElementTypeInfo &info(ElementType type);

/// The buffer type spelled `name` ("f32", "bf16", "f8E4M3FN", ...), if any.
std::optional<ElementType> parseElementType(std::string_view name);
/// Every buffer type's spelling, comma-separated: for messages.
const char *elementTypeSpellings();
const char *spelling(ElementType type);
/// Bytes per element in memory.
size_t byteSize(ElementType type);
bool isFloat(ElementType type);

/// The value of the buffer element stored at `bytes` (little-endian, as on
/// the GPU).
double toDouble(ElementType type, const void *bytes);
/// Stores `value` rounded to the buffer type `type` at `bytes`: round to
/// nearest even; NaN stays NaN; values beyond the largest finite one become
/// infinity, or NaN for f8E4M3FN, which has no infinity; integers are
/// rounded and saturated.
void fromDouble(ElementType type, double value, void *bytes);

} // namespace mosaic

#endif // MOSAIC_CONTRACTS_ELEMENTTYPE_H
