//===- Pipeline.cpp - The mosaic-gpu-pipeline pass pipeline ---------------===//

#include "mosaic/Pipeline/Pipeline.h"
#include "mosaic/Conversion/MosaicGPUToNVVM/Passes.h"
#include "mosaic/LayoutInference/Passes.h"
#include "mosaic/Transforms/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

StringRef mosaic::pipelineStageName(PipelineStage stage) {
  switch (stage) {
  case PipelineStage::InferLayouts:
    return "inference";
  case PipelineStage::ApplyTransforms:
    return "tiling";
  case PipelineStage::Lower:
    return "lowering";
  case PipelineStage::ToLLVM:
    return "nvvm-llvm";
  }
  llvm_unreachable("unknown pipeline stage");
}

void mosaic::buildPipelineStage(OpPassManager &pm, PipelineStage stage,
                                const PipelineOptions &options) {
  switch (stage) {
  case PipelineStage::InferLayouts:
    pm.addPass(createMosaicGPUInferLayouts());
    return;
  case PipelineStage::ApplyTransforms:
    pm.addPass(createMosaicGPUApplyTransforms());
    return;
  case PipelineStage::Lower:
    pm.addPass(createMosaicGPULower());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    pm.addPass(createSCFToControlFlowPass());
    return;
  case PipelineStage::ToLLVM:
    break;
  }

  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());

  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  // The GPU conversion would also apply every registered dialect's
  // conversion to LLVM; the rest must wait for the passes below it.
  nvvm.allowedDialects = {"cf"};
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(nvvm));
  pm.addPass(createMosaicGPUMapMemorySpaces());
  pm.addPass(createMosaicGPUFinalizeKernels());
  // NVVM ops without an LLVM intrinsic (the mbarrier wait loop, predicated
  // mbarrier.init) become inline PTX.
  // One walk converts nvvm, arith, memref, func and cf through their
  // ConvertToLLVM interfaces (registerPipelineInterfaces) instead of one
  // pass each; the vector conversion follows, because its rewrites that
  // precede the patterns (strided slices to shuffles and the like) are not
  // part of the interface.
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void mosaic::buildPipeline(OpPassManager &pm, const PipelineOptions &options) {
  for (PipelineStage stage : kPipelineStages)
    buildPipelineStage(pm, stage, options);
}

void mosaic::registerPipelineInterfaces(DialectRegistry &registry) {
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
}

void mosaic::registerPipeline() {
  PassPipelineRegistration<PipelineOptions>(
      "mosaic-gpu-pipeline",
      "Infer layouts, apply tilings, lower to per-thread registers and on to "
      "the NVVM and LLVM dialects",
      buildPipeline);
}
