//===- MosaicGPUTypes.td - mosaic_gpu types -----------------*- tablegen -*-===//

#ifndef MOSAIC_DIALECT_MOSAICGPU_TYPES_TD
#define MOSAIC_DIALECT_MOSAICGPU_TYPES_TD

include "mosaic/Dialect/MosaicGPU/MosaicGPUBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

def MosaicGPU_BarrierType : MosaicGPU_Type<"Barrier", "barrier",
    [MemRefElementTypeInterface]> {
  let summary = "mbarrier";
  let description = [{
    A 64-bit mbarrier living in shared memory. Barriers are only used as the
    element type of a memref in workgroup memory; the ops that synchronize on
    one take a rank-0 memref:

    ```mlir
    %bar = memref.subview ... : memref<!mosaic_gpu.barrier, #gpu.address_space<workgroup>>
    ```

    `orders_tensor_core = true` marks a barrier that also orders tensor core
    operations.
  }];
  let parameters = (ins DefaultValuedParameter<"bool", "false">:$orders_tensor_core);
  let assemblyFormat = "(`<` `orders_tensor_core` `=` $orders_tensor_core^ `>`)?";
}

#endif // MOSAIC_DIALECT_MOSAICGPU_TYPES_TD
