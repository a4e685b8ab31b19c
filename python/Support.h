//===- Support.h - What every part of mosaic_gpu._mosaic shares -*- C++ -*-===//
//
// MLIR diagnostics as Python exceptions (MosaicError), the Context and Module
// objects Python holds. Used by the module's entry points
// (MosaicGPUModule.cpp) and by the kernel builder (KernelBuilder.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_PYTHON_SUPPORT_H
#define MOSAIC_PYTHON_SUPPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace mosaic::python {

/// One MLIR diagnostic with its notes, as Python sees it.
struct DiagnosticRecord {
  std::string severity;
  /// `file:line:col`, or the printed location when it has no file.
  std::string location;
  std::string message;
  std::vector<DiagnosticRecord> notes;

  /// `location: severity: message`, then one such line per note.
  std::string str() const;
};

/// `file:line:col` of `loc`, "" when unknown, else the printed location.
std::string formatLocation(mlir::Location loc);

/// Thrown by the bindings; becomes mosaic_gpu.MosaicError, whose
/// `diagnostics` attribute holds the diagnostics.
struct MosaicException : std::exception {
  MosaicException(std::string message,
                  std::vector<DiagnosticRecord> diagnostics)
      : message(std::move(message)), diagnostics(std::move(diagnostics)) {}
  const char *what() const noexcept override { return message.c_str(); }
  std::string message;
  std::vector<DiagnosticRecord> diagnostics;
};

/// Collects every diagnostic emitted on a context while it lives, instead
/// of printing them.
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(mlir::MLIRContext *context);

  /// Throws a MosaicException: `what`, then every diagnostic collected.
  [[noreturn]] void raise(const std::string &what);

  /// After a success: issues the diagnostics collected (warnings, remarks)
  /// as Python warnings.
  void warn();

private:
  std::vector<DiagnosticRecord> diagnostics;
  mlir::ScopedDiagnosticHandler handler;
};

/// An MLIRContext with the dialects, interfaces and passes mosaic-compile
/// registers (the constructor is in MosaicGPUModule.cpp, beside the other
/// uses of lib/Compiler).
struct ContextObject {
  ContextObject();
  mlir::MLIRContext context;
};

/// A builtin.module and the context it lives in.
struct ModuleObject {
  ModuleObject(std::shared_ptr<ContextObject> context,
               mlir::OwningOpRef<mlir::ModuleOp> module)
      : context(std::move(context)), module(std::move(module)) {}

  mlir::MLIRContext *mlirContext() { return &context->context; }
  std::string str();

  // Declared first, destroyed last: the module needs its context.
  std::shared_ptr<ContextObject> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

} // namespace mosaic::python

#endif // MOSAIC_PYTHON_SUPPORT_H
