//===- FinalizeKernels.cpp - The mosaic-gpu-finalize-kernels pass ---------===//
//
// Fixes up the LLVM form of each kernel for launch: the dynamic shared
// memory becomes the block's external buffer, tensor-map parameters are
// passed by value as grid constants, kernels that reallocate registers run
// one block per SM, and kernels marked `mosaic_gpu.flush_denormals` get the
// `.ftz` forms of f32 instructions.
//
//===----------------------------------------------------------------------===//

#include "LoweringContext.h"
#include "mosaic/Conversion/MosaicGPUToNVVM/Passes.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mosaic {
#define GEN_PASS_DEF_MOSAICGPUFINALIZEKERNELS
#include "mosaic/Conversion/MosaicGPUToNVVM/Passes.h.inc"
} // namespace mosaic

using namespace mlir;
using namespace mosaic;

namespace {

struct FinalizeKernelsPass
    : mosaic::impl::MosaicGPUFinalizeKernelsBase<FinalizeKernelsPass> {
  void runOnOperation() override {
    // The dynamic shared memory is the block's, sized at launch: an external
    // symbol (`.extern .shared`), not a zero-sized array of the kernel's own.
    // 1024-byte alignment keeps the swizzle patterns of TMA, wgmma and our
    // own accesses (all functions of the address bits) in agreement.
    getOperation()->walk([](LLVM::GlobalOp global) {
      if (global.getAddrSpace() != NVVM::NVVMMemorySpace::Shared ||
          !global.getSymName().starts_with("__dynamic_shmem__"))
        return;
      global.setLinkage(LLVM::Linkage::External);
      global.setAlignment(1024);
    });
    // libdevice (exp, exp2, log...) picks its `.ftz` forms by the module
    // flag NVVMReflect reads for __CUDA_FTZ, once per module: the verifier
    // makes a module's kernels agree on `mosaic_gpu.flush_denormals`.
    getOperation()->walk([](gpu::GPUModuleOp module) {
      bool flushes = false;
      module.walk([&](LLVM::LLVMFuncOp function) {
        flushes |= function->hasAttr(mosaic_gpu::kFlushDenormalsAttr);
      });
      if (!flushes)
        return;
      MLIRContext *context = module.getContext();
      OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
      auto flag = LLVM::ModuleFlagAttr::get(
          context, LLVM::ModFlagBehavior::Override,
          StringAttr::get(context, "nvvm-reflect-ftz"),
          builder.getI32IntegerAttr(1));
      LLVM::ModuleFlagsOp::create(builder, module.getLoc(),
                                  builder.getArrayAttr({flag}));
    });
    // Tensor maps are passed by value (a 128-byte, 64-byte aligned
    // CUtensorMap) and read in place by TMA.
    WalkResult result = getOperation()->walk([](LLVM::LLVMFuncOp function) {
      MLIRContext *context = function.getContext();
      Builder builder(context);
      // setmaxnreg moves registers relative to the count each warp starts
      // with, which ptxas fixes only when it knows how many blocks share an
      // SM: `.maxntid` alone is not enough (it then drops every setmaxnreg,
      // warning C7508). One block per SM, as warp-specialized kernels are
      // written, gives each thread 65536 / threads registers at entry.
      bool reallocates = false;
      function.walk([&](NVVM::SetMaxRegisterOp) { reallocates = true; });
      if (reallocates &&
          !function->hasAttr(NVVM::NVVMDialect::getMinctasmAttrName()))
        function->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                          builder.getI32IntegerAttr(1));
      // `.ftz` forms of the f32 instructions, as `nvcc -ftz=true`.
      if (function->hasAttr(mosaic_gpu::kFlushDenormalsAttr))
        function.setDenormalFpMathF32Attr(
            builder.getStringAttr("preserve-sign,preserve-sign"));
      auto maps = function->getAttrOfType<ArrayAttr>(kTensorMapsAttr);
      if (!maps)
        return WalkResult::advance();
      for (auto [position, entry] : llvm::enumerate(maps)) {
        auto dictionary = dyn_cast<DictionaryAttr>(entry);
        FailureOr<TensorMapDescription> map =
            dictionary ? tensorMapFromAttribute(dictionary)
                       : FailureOr<TensorMapDescription>(failure());
        if (failed(map) || map->parameter >= function.getNumArguments()) {
          function.emitError()
              << "entry " << position << " of `" << kTensorMapsAttr
              << "` is not a tensor-map description of one of its "
              << "parameters: " << entry;
          return WalkResult::interrupt();
        }
        // A peer map is in the collective table, not a parameter.
        if (map->peer)
          continue;
        unsigned index = map->parameter;
        function.setArgAttr(
            index, LLVM::LLVMDialect::getByValAttrName(),
            TypeAttr::get(LLVM::LLVMArrayType::get(IntegerType::get(context, 8),
                                                   limits::kTensorMapBytes)));
        function.setArgAttr(
            index, LLVM::LLVMDialect::getAlignAttrName(),
            builder.getI64IntegerAttr(limits::kTensorMapAlignment));
        function.setArgAttr(index, NVVM::NVVMDialect::getGridConstantAttrName(),
                            builder.getUnitAttr());
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
