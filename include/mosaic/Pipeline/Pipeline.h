//===- Pipeline.h - The mosaic-gpu-pipeline pass pipeline -------*- C++ -*-===//

#ifndef MOSAIC_PIPELINE_PIPELINE_H
#define MOSAIC_PIPELINE_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mosaic {

struct PipelineOptions : public mlir::PassPipelineOptions<PipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target GPU (only sm_90a)"),
                           llvm::cl::init("sm_90a")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features, e.g. the ISA version (+ptx80)"),
      llvm::cl::init("+ptx80")};
  Option<unsigned> optLevel{*this, "opt-level",
                            llvm::cl::desc("LLVM optimization level"),
                            llvm::cl::init(3)};
};

/// Layout inference, tiling, the lowering to per-thread registers, cleanups,
/// then the upstream lowering of the kernel to the NVVM and LLVM dialects,
/// ready for `gpu-module-to-binary`. Memref kernel arguments become bare
/// pointers (their shapes are static).
void buildPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

/// The pipeline's stages, in order; buildPipeline runs them all. Tools that
/// time or dump the stages run them one by one.
enum class PipelineStage { InferLayouts, ApplyTransforms, Lower, ToLLVM };
inline constexpr PipelineStage kPipelineStages[] = {
    PipelineStage::InferLayouts, PipelineStage::ApplyTransforms,
    PipelineStage::Lower, PipelineStage::ToLLVM};
llvm::StringRef pipelineStageName(PipelineStage stage);
void buildPipelineStage(mlir::OpPassManager &pm, PipelineStage stage,
                        const PipelineOptions &options);

/// Registers the external models the pipeline and serialization need: the
/// NVVM target, the LLVM IR translations, and control flow's conversion to
/// LLVM (which convert-gpu-to-nvvm applies together with its own).
void registerPipelineInterfaces(mlir::DialectRegistry &registry);

/// Registers buildPipeline as `mosaic-gpu-pipeline`.
void registerPipeline();

} // namespace mosaic

#endif // MOSAIC_PIPELINE_PIPELINE_H
