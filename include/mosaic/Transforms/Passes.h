//===- Passes.h - Mosaic transformation passes ------------------*- C++ -*-===//

#ifndef MOSAIC_TRANSFORMS_PASSES_H
#define MOSAIC_TRANSFORMS_PASSES_H

#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

namespace mosaic {

#define GEN_PASS_DECL
#include "mosaic/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mosaic/Transforms/Passes.h.inc"

} // namespace mosaic

#endif // MOSAIC_TRANSFORMS_PASSES_H
