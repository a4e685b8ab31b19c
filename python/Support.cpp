//===- Support.cpp - Diagnostics, contexts and modules for Python ---------===//

#include "Support.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/pybind11.h>

namespace py = pybind11;
using namespace mlir;

namespace mosaic::python {

std::string DiagnosticRecord::str() const {
  std::string text = location.empty() ? "" : location + ": ";
  text += severity + ": " + message;
  for (const DiagnosticRecord &note : notes)
    text += "\n" + note.str();
  return text;
}

std::string formatLocation(Location loc) {
  if (auto file = loc->findInstanceOf<FileLineColLoc>())
    return llvm::formatv("{0}:{1}:{2}", file.getFilename().getValue(),
                         file.getLine(), file.getColumn());
  if (isa<UnknownLoc>(loc))
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  loc.print(os);
  return text;
}

static const char *severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  llvm_unreachable("unknown diagnostic severity");
}

static DiagnosticRecord convert(const Diagnostic &diagnostic) {
  DiagnosticRecord result{severityName(diagnostic.getSeverity()),
                          formatLocation(diagnostic.getLocation()),
                          diagnostic.str(),
                          {}};
  for (const Diagnostic &note : diagnostic.getNotes())
    result.notes.push_back(convert(note));
  return result;
}

DiagnosticCapture::DiagnosticCapture(MLIRContext *context)
    : handler(context, [this](Diagnostic &diagnostic) {
        diagnostics.push_back(convert(diagnostic));
        return success();
      }) {}

void DiagnosticCapture::raise(const std::string &what) {
  std::string message = what;
  for (const DiagnosticRecord &diagnostic : diagnostics)
    message += "\n" + diagnostic.str();
  throw MosaicException(message, std::move(diagnostics));
}

void DiagnosticCapture::warn() {
  for (const DiagnosticRecord &diagnostic : diagnostics)
    if (PyErr_WarnEx(PyExc_UserWarning, diagnostic.str().c_str(), 1) != 0)
      throw py::error_already_set();
  diagnostics.clear();
}

std::string ModuleObject::str() {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  return text;
}

} // namespace mosaic::python
