//===- Passes.h - Layout inference passes -----------------------*- C++ -*-===//

#ifndef MOSAIC_LAYOUTINFERENCE_PASSES_H
#define MOSAIC_LAYOUTINFERENCE_PASSES_H

#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"

#include "mlir/Pass/Pass.h"

namespace mosaic {

#define GEN_PASS_DECL
#include "mosaic/LayoutInference/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mosaic/LayoutInference/Passes.h.inc"

} // namespace mosaic

#endif // MOSAIC_LAYOUTINFERENCE_PASSES_H
