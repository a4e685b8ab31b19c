//===- MosaicGPUBase.td - mosaic_gpu dialect definition -----*- tablegen -*-===//
//
// The dialect and the base classes its types, attributes and ops derive from.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_DIALECT_MOSAICGPU_BASE_TD
#define MOSAIC_DIALECT_MOSAICGPU_BASE_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/DialectBase.td"
include "mlir/IR/OpBase.td"

def MosaicGPU_Dialect : Dialect {
  let name = "mosaic_gpu";
  let cppNamespace = "::mosaic_gpu";
  let summary = "Warpgroup-level GPU kernels for NVIDIA Hopper";
  let description = [{
    The `mosaic_gpu` dialect describes kernels at warpgroup granularity: a
    `vector` value belongs to one warpgroup (128 threads) and is distributed
    over its threads according to a register layout. Ops cover mbarriers,
    TMA transfers between global and shared memory, register <-> memory
    transfers, wgmma matrix multiplication and the layout/shape manipulations
    that layout inference reasons about.

    Op names, operand order and attribute names follow JAX's Mosaic GPU
    dialect so that IR written for its Hopper subset reads the same here.

    Kernel (`gpu.func`) attributes:
    - `mosaic_gpu.cluster = array<i32: x, y, z>`: the kernel runs in
      clusters of that many blocks along each grid dim (at most 16 blocks).
    - `mosaic_gpu.flush_denormals`: f32 arithmetic flushes subnormal inputs
      and results to zero (the PTX `.ftz` forms, as `nvcc -ftz=true`).
      `exp2` then is a single `ex2.approx.ftz.f32`: without it, ptxas wraps
      each `ex2.approx.f32` in a test and two multiplications that keep
      subnormal results, about a quarter of an attention softmax's
      instructions.

    Kernel argument attributes:
    - `mosaic_gpu.symmetric`: the buffer exists, with the same type, on
      every device of a multi-device launch; `remote_ref` reaches the other
      devices' copies (docs/RationaleMultiDevice.md). Only global-memory
      memref arguments of a kernel carry it.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  // `mosaic_gpu.cluster` and `mosaic_gpu.flush_denormals` on kernels.
  let hasOperationAttrVerify = 1;
  // `mosaic_gpu.symmetric` on kernel arguments.
  let hasRegionArgAttrVerify = 1;
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect"];
  let extraClassDeclaration = [{
    // Defined next to the attribute storage classes it instantiates.
    void registerAttributes();
  }];
}

class MosaicGPU_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<MosaicGPU_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

class MosaicGPU_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<MosaicGPU_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

class MosaicGPU_Op<string mnemonic, list<Trait> traits = []>
    : Op<MosaicGPU_Dialect, mnemonic, traits>;

#endif // MOSAIC_DIALECT_MOSAICGPU_BASE_TD
