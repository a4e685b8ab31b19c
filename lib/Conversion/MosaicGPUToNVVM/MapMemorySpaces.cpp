//===- MapMemorySpaces.cpp - The mosaic-gpu-map-memory-spaces pass -------===//
//
// Gives `#gpu.address_space` memory spaces their NVPTX numbers before the
// upstream conversions to LLVM, which need them numbered.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Conversion/MosaicGPUToNVVM/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/AttrTypeSubElements.h"

namespace mosaic {
#define GEN_PASS_DEF_MOSAICGPUMAPMEMORYSPACES
#include "mosaic/Conversion/MosaicGPUToNVVM/Passes.h.inc"
} // namespace mosaic

using namespace mlir;

namespace {

struct MapMemorySpacesPass
    : mosaic::impl::MosaicGPUMapMemorySpacesBase<MapMemorySpacesPass> {
  void runOnOperation() override {
    // convert-gpu-to-nvvm lowers the shared memory of code in a gpu.module;
    // anywhere else gpu.dynamic_shared_memory stays, and its verifier
    // rejects the numbered address space this pass would give it.
    WalkResult unlowered =
        getOperation()->walk([](gpu::DynamicSharedMemoryOp op) {
          op.emitError("shared memory outside a gpu.module cannot be "
                       "lowered: the kernel must be a gpu.func in a "
                       "gpu.module");
          return WalkResult::interrupt();
        });
    if (unlowered.wasInterrupted())
      return signalPassFailure();
    // NVPTX address spaces (NVPTX usage guide).
    AttrTypeReplacer replacer;
    replacer.addReplacement(
        [](gpu::AddressSpaceAttr space) -> std::optional<Attribute> {
          NVVM::NVVMMemorySpace nvvmSpace = NVVM::NVVMMemorySpace::Generic;
          switch (space.getValue()) {
          case gpu::AddressSpace::Global:
            nvvmSpace = NVVM::NVVMMemorySpace::Global;
            break;
          case gpu::AddressSpace::Workgroup:
            nvvmSpace = NVVM::NVVMMemorySpace::Shared;
            break;
          case gpu::AddressSpace::Private:
            nvvmSpace = NVVM::NVVMMemorySpace::Local;
            break;
          }
          return IntegerAttr::get(IntegerType::get(space.getContext(), 64),
                                  static_cast<unsigned>(nvvmSpace));
        });
    getOperation()->walk([&](Operation *op) {
      replacer.replaceElementsIn(op, /*replaceAttrs=*/true,
                                 /*replaceLocs=*/false, /*replaceTypes=*/true);
    });
  }
};

} // namespace
