//===- Manifest.cpp - The kernel's JSON manifest and the files written ----===//
//
// The manifest's format is in docs/RationaleRuntime.md.
//
//===----------------------------------------------------------------------===//

#include "CompilerInternal.h"
#include "mosaic/Conversion/MosaicGPUToNVVM/KernelAttributes.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

using namespace mlir;
using mosaic::BufferParameter;
using mosaic::CompileError;
using mosaic::ElementType;
using mosaic::Manifest;
using mosaic::Parameter;
using mosaic::PtxasReport;

namespace {

/// Adds the tensor maps the lowering recorded on `kernel` as parameters
/// after the buffers, with their descriptions (a peer map is in the
/// collective table, not a parameter), then the collective table when the
/// lowering added one, and takes the dynamic shared memory the lowering
/// counted (its reduction scratch included).
LogicalResult describeTensorMaps(ModuleOp module, StringRef kernel,
                                 mosaic::Manifest &manifest) {
  Operation *function = nullptr;
  ArrayAttr maps;
  IntegerAttr collective;
  module.walk([&](Operation *op) {
    auto symbol =
        op->getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
    if (!symbol || symbol.getValue() != kernel)
      return;
    if (auto found = op->getAttrOfType<ArrayAttr>(mosaic::kTensorMapsAttr)) {
      maps = found;
      function = op;
    }
    if (auto bytes =
            op->getAttrOfType<IntegerAttr>(mosaic::kDynamicSharedBytesAttr))
      manifest.dynamicSmemBytes = static_cast<uint32_t>(bytes.getInt());
    if (auto table =
            op->getAttrOfType<IntegerAttr>(mosaic::kCollectiveTableAttr))
      collective = table;
  });
  auto addCollectiveTable = [&] {
    if (collective)
      manifest.parameters.push_back({mosaic::Parameter::Kind::Collective, 0});
  };
  if (!maps) {
    addCollectiveTable();
    return success();
  }
  for (auto [position, entry] : llvm::enumerate(maps)) {
    auto dictionary = dyn_cast<DictionaryAttr>(entry);
    FailureOr<mosaic::TensorMapDescription> map =
        dictionary ? mosaic::tensorMapFromAttribute(dictionary)
                   : FailureOr<mosaic::TensorMapDescription>(failure());
    if (failed(map))
      return function->emitError()
             << "entry " << position << " of `" << mosaic::kTensorMapsAttr
             << "` is not a tensor-map description: " << entry;
    if (!map->peer)
      manifest.parameters.push_back(
          {mosaic::Parameter::Kind::TensorMap, map->index});
    manifest.tensorMaps.push_back(std::move(*map));
  }
  addCollectiveTable();
  return success();
}

/// The number `pattern`'s first group matches in `text`, or -1.
int64_t matchNumber(StringRef text, StringRef pattern) {
  SmallVector<StringRef> groups;
  if (llvm::Regex(pattern).match(text, &groups) && groups.size() > 1) {
    int64_t value = 0;
    if (!groups[1].getAsInteger(10, value))
      return value;
  }
  return -1;
}

} // namespace

FailureOr<mosaic::Manifest> mosaic::detail::describeKernel(ModuleOp module,
                                                           bool forLaunch) {
  SmallVector<gpu::GPUFuncOp> kernels;
  module.walk([&](gpu::GPUFuncOp function) {
    if (function.isKernel())
      kernels.push_back(function);
  });
  if (kernels.size() != 1)
    return module.emitError()
           << "mosaic-compile expects exactly one gpu.func kernel, found "
           << kernels.size();
  gpu::GPUFuncOp kernel = kernels.front();
  Manifest info;
  info.entry = kernel.getName().str();
  std::optional<DenseI32ArrayAttr> grid = kernel.getKnownGridSizeAttr();
  std::optional<DenseI32ArrayAttr> block = kernel.getKnownBlockSizeAttr();
  if (!grid || !block || !*grid || !*block)
    return kernel.emitError() << "the kernel must carry known_grid_size and "
                                 "known_block_size: a launch needs both";
  // The verifiers hold these to 3 entries; copy no more in any case.
  auto copyDims = [](ArrayRef<int32_t> dims, std::array<uint32_t, 3> &to) {
    for (size_t i = 0; i < std::min<size_t>(dims.size(), to.size()); ++i)
      to[i] = static_cast<uint32_t>(dims[i]);
  };
  copyDims(grid->asArrayRef(), info.grid);
  copyDims(block->asArrayRef(), info.block);
  int64_t threads = 1;
  for (int32_t size : block->asArrayRef())
    threads *= size;
  if (threads % 128 != 0)
    return kernel.emitError() << "the block has " << threads
                              << " threads; it must be a whole number of "
                                 "warpgroups (a multiple of 128)";
  info.cluster = {1, 1, 1};
  if (auto cluster =
          kernel->getAttrOfType<DenseI32ArrayAttr>(mosaic_gpu::kClusterAttr))
    copyDims(cluster.asArrayRef(), info.cluster);

  for (auto [index, type] : llvm::enumerate(kernel.getArgumentTypes())) {
    auto memref = dyn_cast<MemRefType>(type);
    if (!memref || !memref.hasStaticShape() || !memref.getLayout().isIdentity())
      return kernel.emitError()
             << "argument #" << index
             << " must be a statically shaped, contiguous memref, but it is "
             << type;
    std::string element;
    llvm::raw_string_ostream os(element);
    os << memref.getElementType();
    BufferParameter buffer;
    buffer.index = static_cast<unsigned>(index);
    if (std::optional<ElementType> parsed = parseElementType(element))
      buffer.elementType = *parsed;
    else if (forLaunch)
      return kernel.emitError() << "argument #" << index << " holds " << element
                                << ", which a kernel buffer cannot (one of "
                                << elementTypeSpellings() << ")";
    buffer.shape.assign(memref.getShape().begin(), memref.getShape().end());
    buffer.symmetric =
        bool(kernel.getArgAttr(index, mosaic_gpu::kSymmetricAttr));
    info.parameters.push_back(
        {Parameter::Kind::Buffer, static_cast<unsigned>(info.buffers.size())});
    info.buffers.push_back(std::move(buffer));
  }
  // The dynamic shared memory must cover every slice.
  info.dynamicSmemBytes = static_cast<uint32_t>(mosaic::sliceExtent(kernel));
  return info;
}

FailureOr<mosaic::Manifest>
mosaic::detail::buildManifest(Manifest info, ModuleOp lowered,
                              const CompiledKernel &kernel, StringRef arch) {
  if (failed(describeTensorMaps(lowered, info.entry, info)))
    return failure();
  info.arch = arch.str();
  info.ptxFeatures = kernel.ptxFeatures;
  info.cubin = kernel.entry + ".cubin";
  info.ptx = kernel.entry + ".ptx";
  const std::string &report = kernel.ptxasReport;
  info.ptxas =
      PtxasReport{matchNumber(report, "Used ([0-9]+) registers"),
                  matchNumber(report, "([0-9]+) bytes spill stores"),
                  matchNumber(report, "([0-9]+) bytes spill loads"),
                  matchNumber(report, "([0-9]+) bytes stack frame"), report};
  return info;
}

llvm::Error mosaic::writeCompiledKernel(const CompiledKernel &kernel,
                                        StringRef path) {
  using detail::writeFile;
  switch (kernel.emit) {
  case EmitKind::Mlir:
    return writeFile(path, kernel.mlir);
  case EmitKind::Llvm:
    return writeFile(path, kernel.llvmIR);
  case EmitKind::Ptx:
    return writeFile(path, kernel.ptx);
  case EmitKind::Cubin:
    break;
  }
  // The PTX and the manifest go beside the CUBIN, named after it; a CUBIN
  // path with either extension would be overwritten by one of them.
  StringRef extension = llvm::sys::path::extension(path);
  if (extension == ".ptx" || extension == ".json")
    return llvm::make_error<CompileError>(
        CompileError::Kind::Option,
        "the CUBIN's path '" + path.str() + "' ends in '" + extension.str() +
            "', but the PTX and the manifest are written beside it as "
            "<stem>.ptx and <stem>.json; name it <stem>.cubin");
  SmallString<256> ptxPath(path), manifestPath(path);
  llvm::sys::path::replace_extension(ptxPath, "ptx");
  llvm::sys::path::replace_extension(manifestPath, "json");
  if (llvm::Error error = writeFile(path, kernel.cubin))
    return error;
  if (llvm::Error error = writeFile(ptxPath, kernel.ptx))
    return error;
  Manifest manifest = kernel.manifest;
  manifest.cubin = llvm::sys::path::filename(path).str();
  manifest.ptx = llvm::sys::path::filename(ptxPath).str();
  return writeFile(manifestPath, formatManifest(manifest) + "\n");
}
