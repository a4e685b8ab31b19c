//===- MosaicGPUEnums.td - mosaic_gpu enums -----------------*- tablegen -*-===//

#ifndef MOSAIC_DIALECT_MOSAICGPU_ENUMS_TD
#define MOSAIC_DIALECT_MOSAICGPU_ENUMS_TD

include "mosaic/Dialect/MosaicGPU/MosaicGPUBase.td"
include "mlir/IR/EnumAttr.td"

// The case values of SwizzlingMode are the swizzle widths in bytes; 16 bytes
// is the unswizzled granule.
def MosaicGPU_SwizzlingMode : I32EnumAttr<"SwizzlingMode",
    "shared-memory swizzling mode", [
      I32EnumAttrCase<"kNoSwizzle", 16>,
      I32EnumAttrCase<"k32ByteSwizzle", 32>,
      I32EnumAttrCase<"k64ByteSwizzle", 64>,
      I32EnumAttrCase<"k128ByteSwizzle", 128>
    ]> {
  let cppNamespace = "::mosaic_gpu";
  let genSpecializedAttr = 0;
}

def MosaicGPU_Dimension : I32EnumAttr<"Dimension", "a cluster dimension", [
      I32EnumAttrCase<"x", 0>,
      I32EnumAttrCase<"y", 1>,
      I32EnumAttrCase<"z", 2>
    ]> {
  let cppNamespace = "::mosaic_gpu";
  let genSpecializedAttr = 0;
}
def MosaicGPU_DimensionAttr : EnumAttr<MosaicGPU_Dialect, MosaicGPU_Dimension, "dim"> {
  let assemblyFormat = "`<` $value `>`";
}

def MosaicGPU_TMAReduction : I32EnumAttr<"TMAReduction",
    "reduction applied by a TMA store", [
      I32EnumAttrCase<"Add", 0, "add">,
      I32EnumAttrCase<"Min", 1, "min">,
      I32EnumAttrCase<"Max", 2, "max">,
      I32EnumAttrCase<"Inc", 3, "inc">,
      I32EnumAttrCase<"Dec", 4, "dec">,
      I32EnumAttrCase<"And", 5, "and">,
      I32EnumAttrCase<"Or", 6, "or">,
      I32EnumAttrCase<"Xor", 7, "xor">,
      I32EnumAttrCase<"Umin", 8, "umin">,
      I32EnumAttrCase<"Umax", 9, "umax">,
      I32EnumAttrCase<"Smin", 10, "smin">,
      I32EnumAttrCase<"Smax", 11, "smax">
    ]> {
  let cppNamespace = "::mosaic_gpu";
  let genSpecializedAttr = 0;
}
def MosaicGPU_TMAReductionAttr
    : EnumAttr<MosaicGPU_Dialect, MosaicGPU_TMAReduction, "tma_reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

def MosaicGPU_OOBFillMode : I32EnumAttr<"OOBFillMode",
    "what a TMA load writes for out-of-bounds elements", [
      I32EnumAttrCase<"kUndefined", 0, "undefined">,
      I32EnumAttrCase<"kPromiseInBounds", 1, "promise_in_bounds">,
      I32EnumAttrCase<"kZeros", 2, "zeros">
    ]> {
  let cppNamespace = "::mosaic_gpu";
  let genSpecializedAttr = 0;
}
def MosaicGPU_OOBFillModeAttr
    : EnumAttr<MosaicGPU_Dialect, MosaicGPU_OOBFillMode, "oob_fill_mode"> {
  let assemblyFormat = "`<` $value `>`";
}

// A keyword in set_max_registers (`increase` or `decrease`).
def MosaicGPU_RegisterAction : I32EnumAttr<"RegisterAction",
    "whether setmaxnreg grows or shrinks a warpgroup's registers", [
      I32EnumAttrCase<"Increase", 0, "increase">,
      I32EnumAttrCase<"Decrease", 1, "decrease">
    ]> {
  let cppNamespace = "::mosaic_gpu";
}

#endif // MOSAIC_DIALECT_MOSAICGPU_ENUMS_TD
