//===- Passes.h - Lowering passes -------------------------------*- C++ -*-===//

#ifndef MOSAIC_CONVERSION_MOSAICGPUTONVVM_PASSES_H
#define MOSAIC_CONVERSION_MOSAICGPUTONVVM_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mosaic {

#define GEN_PASS_DECL
#include "mosaic/Conversion/MosaicGPUToNVVM/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mosaic/Conversion/MosaicGPUToNVVM/Passes.h.inc"

} // namespace mosaic

#endif // MOSAIC_CONVERSION_MOSAICGPUTONVVM_PASSES_H
