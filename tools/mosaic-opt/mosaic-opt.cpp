//===- mosaic-opt.cpp - The mosaic_gpu optimizer driver -------------------===//
//
// An MlirOptMain tool with the mosaic_gpu dialect, the upstream dialects
// kernels are written with, and the passes of the project.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Compiler/Compiler.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mosaic::registerCompilerDialects(registry);
  mosaic::registerCompilerPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "mosaic_gpu optimizer driver\n", registry));
}
