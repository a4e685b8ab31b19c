//===- MosaicGPUDialect.cpp - mosaic_gpu dialect --------------------------===//

#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mosaic_gpu;

#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.cpp.inc"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "mosaic/Dialect/MosaicGPU/MosaicGPUTypes.cpp.inc"

namespace {
/// Prints the named Hopper layouts as aliases (#wgmma, #wgmma_row, ...), so
/// annotated IR stays readable.
struct MosaicGPUOpAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;

  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    auto tiled = dyn_cast<TiledLayoutAttr>(attr);
    if (!tiled)
      return AliasResult::NoAlias;
    namespace layout = mosaic::layout;
    layout::TiledLayout value = tiled.getLayout();
    const std::pair<layout::TiledLayout (*)(), const char *> named[] = {
        {layout::wgmmaLayout, "wgmma"},
        {layout::wgmma8BitLayout, "wgmma_8bit"},
        {layout::wgmmaTransposedLayout, "wgmma_transposed"},
        {layout::wgmmaRowLayout, "wgmma_row"},
        {layout::wgmmaColLayout, "wgmma_col"},
    };
    for (auto [get, name] : named)
      if (value == get()) {
        os << name;
        return AliasResult::FinalAlias;
      }
    return AliasResult::NoAlias;
  }
};
} // namespace

void MosaicGPUDialect::initialize() {
  addInterfaces<MosaicGPUOpAsmInterface>();
  addTypes<
#define GET_TYPEDEF_LIST
#include "mosaic/Dialect/MosaicGPU/MosaicGPUTypes.cpp.inc"
      >();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.cpp.inc"
      >();
}

static std::optional<gpu::AddressSpace> gpuAddressSpace(MemRefType type) {
  if (auto space =
          dyn_cast_or_null<gpu::AddressSpaceAttr>(type.getMemorySpace()))
    return space.getValue();
  return std::nullopt;
}

bool mosaic_gpu::isSharedMemory(MemRefType type) {
  return gpuAddressSpace(type) == gpu::AddressSpace::Workgroup;
}

bool mosaic_gpu::isGlobalMemory(MemRefType type) {
  return !type.getMemorySpace() ||
         gpuAddressSpace(type) == gpu::AddressSpace::Global;
}

LogicalResult MosaicGPUDialect::verifyOperationAttribute(Operation *op,
                                                         NamedAttribute attr) {
  // Only the kernel attributes a user writes are checked here; the
  // lowering's own annotations (shared-memory size, tensor maps) are
  // written by the compiler.
  if (attr.getName() == kFlushDenormalsAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError()
             << "`" << kFlushDenormalsAttr
             << "` is a unit attribute, but it is " << attr.getValue();
    if (!isa<FunctionOpInterface>(op))
      return op->emitOpError()
             << "`" << kFlushDenormalsAttr << "` belongs on a gpu.func kernel";
    // libdevice's flush mode is one per module (NVVMReflect's __CUDA_FTZ).
    if (auto module = op->getParentOfType<gpu::GPUModuleOp>())
      for (auto other : module.getOps<gpu::GPUFuncOp>())
        if (other.isKernel() && !other->hasAttr(kFlushDenormalsAttr))
          return op->emitOpError()
                 << "flushes subnormals (`" << kFlushDenormalsAttr
                 << "`) but kernel @" << other.getName()
                 << " of the same gpu.module does not; the library "
                    "functions (exp, log...) follow one setting per module, "
                    "so put the kernels in separate gpu.modules or mark "
                    "them all";
    return success();
  }
  if (attr.getName() != kClusterAttr)
    return success();
  auto shape = dyn_cast<DenseI32ArrayAttr>(attr.getValue());
  if (!shape || shape.size() != 3)
    return op->emitOpError()
           << "`" << kClusterAttr
           << "` must be array<i32: x, y, z>, the cluster's blocks along each "
              "grid dim, but it is "
           << attr.getValue();
  int64_t blocks = 1;
  for (int32_t size : shape.asArrayRef()) {
    if (size < 1)
      return op->emitOpError() << "`" << kClusterAttr << "` has a dim of "
                               << size << " blocks; each must be at least 1";
    blocks *= size;
  }
  // 8 blocks is the portable limit; sm_90a allows 16 with an opt-in the
  // runtime makes (cuFuncSetAttribute NON_PORTABLE_CLUSTER_SIZE_ALLOWED).
  if (blocks > 16)
    return op->emitOpError() << "`" << kClusterAttr << "` makes clusters of "
                             << blocks << " blocks; sm_90a allows at most 16";
  // The attribute stays on the kernel once it is an llvm.func.
  if (!isa<FunctionOpInterface>(op))
    return op->emitOpError()
           << "`" << kClusterAttr << "` belongs on a gpu.func kernel";
  auto function = dyn_cast<gpu::GPUFuncOp>(op);
  if (DenseI32ArrayAttr grid =
          function ? function.getKnownGridSizeAttr() : DenseI32ArrayAttr())
    for (auto [dim, size, cluster] :
         llvm::enumerate(grid.asArrayRef(), shape.asArrayRef()))
      if (size % cluster != 0)
        return op->emitOpError()
               << "has a grid of " << size << " blocks along dim " << dim
               << ", not a multiple of its cluster's " << cluster;
  return success();
}

BlockArgument mosaic_gpu::symmetricArgument(Value value) {
  auto argument = dyn_cast<BlockArgument>(value);
  if (!argument || !argument.getOwner()->isEntryBlock())
    return BlockArgument();
  auto function = dyn_cast<gpu::GPUFuncOp>(argument.getOwner()->getParentOp());
  if (!function ||
      !function.getArgAttr(argument.getArgNumber(), kSymmetricAttr))
    return BlockArgument();
  return argument;
}

LogicalResult MosaicGPUDialect::verifyRegionArgAttribute(Operation *op,
                                                         unsigned region,
                                                         unsigned index,
                                                         NamedAttribute attr) {
  if (attr.getName() != kSymmetricAttr)
    return success();
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitOpError()
           << "`" << kSymmetricAttr << "` is a unit attribute, but argument #"
           << index << " has " << attr.getValue();
  auto function = dyn_cast<gpu::GPUFuncOp>(op);
  if (!function || !function.isKernel() || region != 0)
    return op->emitOpError() << "`" << kSymmetricAttr
                             << "` belongs on an argument of a gpu.func kernel";
  Type type = function.getArgumentTypes()[index];
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !isGlobalMemory(memref))
    return op->emitOpError()
           << "argument #" << index << " is `" << kSymmetricAttr
           << "`, so it must be a memref in global memory, but it is " << type;
  return success();
}
