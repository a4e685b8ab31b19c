//===- Attributes.h - Types and attributes from typed Python values -*- C++
//-*-===//
//
// The MLIR types of the element types Python's dtypes stand for, the memref
// types of kernel
// arguments and scratch buffers, and the layout and transform attributes
// Python's Layout and Transform objects describe: each built from numbers
// and enums, never parsed from text. Documented in docs/RationalePython.md.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_PYTHON_ATTRIBUTES_H
#define MOSAIC_PYTHON_ATTRIBUTES_H

#include "Support.h"

#include "mosaic/Contracts/ElementType.h"

#include "mlir/IR/BuiltinTypes.h"

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mosaic::python {

/// The MLIR type of an element type of mosaic/Contracts/ElementType.h,
/// whose table mosaic_gpu's DType objects are made from.
mlir::Type getElementType(mlir::MLIRContext *context, ElementType type);

/// A statically shaped memref of `type` with the identity layout, in global
/// memory or, with `shared`, in workgroup (shared) memory.
mlir::MemRefType getMemRefType(mlir::MLIRContext *context,
                               const std::vector<int64_t> &shape,
                               ElementType type, bool shared);

/// An attribute built from Python values, with the context it lives in.
struct AttributeObject {
  std::shared_ptr<ContextObject> context;
  mlir::Attribute attr;

  std::string str() const;
};

/// `T::getChecked(params...)`: a type or attribute made from values Python
/// passed, checked by its verifier; a failure raises MosaicError with the
/// verifier's message.
template <typename T, typename... Params>
T getChecked(mlir::MLIRContext *context, Params &&...params) {
  DiagnosticCapture capture(context);
  if (T checked = T::getChecked(
          [&] { return mlir::emitError(mlir::UnknownLoc::get(context)); },
          std::forward<Params>(params)...))
    return checked;
  capture.raise("invalid " + T::name.str());
}

/// Binds an ODS enum whose values run from 0 to `maxValue`, each under the
/// name MLIR prints for it (`_mosaic.CmpFPredicate.une`).
template <typename EnumT>
pybind11::enum_<EnumT> bindEnum(pybind11::module_ &m, const char *name,
                                const char *doc, unsigned maxValue) {
  pybind11::enum_<EnumT> bound(m, name, doc);
  for (unsigned value = 0; value <= maxValue; ++value) {
    auto e = static_cast<EnumT>(value);
    bound.value(stringifyEnum(e).str().c_str(), e);
  }
  return bound;
}

/// `value`, an enum Python passed (a pybind11 enum takes any int), if it is
/// one of EnumT's values; else a ValueError naming `what`.
template <typename EnumT> EnumT checkedEnum(EnumT value, const char *what) {
  if (stringifyEnum(value).empty())
    throw pybind11::value_error(std::string("`") + what + "` is " +
                                std::to_string(static_cast<int64_t>(value)) +
                                ", not one of its enum's values");
  return value;
}

/// Adds ElementType, Dimension, Replicated, Attribute and the layout and
/// transform factories to `m`.
void registerAttributes(pybind11::module_ &m);

} // namespace mosaic::python

#endif // MOSAIC_PYTHON_ATTRIBUTES_H
