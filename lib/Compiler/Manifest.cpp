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
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

using namespace mlir;
using mosaic::CompileError;

namespace {

/// The tensor maps the lowering added as kernel parameters: one parameter
/// entry each, after the buffers, and their encoding arguments for the
/// runtime (cuTensorMapEncodeTiled's, innermost dim first); and the dynamic
/// shared memory the lowered kernel needs.
void describeTensorMaps(ModuleOp module, StringRef kernel,
                        llvm::json::Array &parameters,
                        llvm::json::Array &tensorMaps,
                        int64_t &dynamicSharedBytes) {
  ArrayAttr maps;
  module.walk([&](Operation *op) {
    auto symbol =
        op->getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
    if (!symbol || symbol.getValue() != kernel)
      return;
    if (auto found = op->getAttrOfType<ArrayAttr>(mosaic::kTensorMapsAttr))
      maps = found;
    // The lowering's count includes its reduction scratch.
    if (auto bytes =
            op->getAttrOfType<IntegerAttr>(mosaic::kDynamicSharedBytesAttr))
      dynamicSharedBytes = bytes.getInt();
  });
  if (!maps)
    return;
  auto array = [](DictionaryAttr map, StringRef name) {
    llvm::json::Array values;
    for (int64_t value : cast<DenseI64ArrayAttr>(map.get(name)).asArrayRef())
      values.push_back(value);
    return values;
  };
  auto integer = [](DictionaryAttr map, StringRef name) {
    return cast<IntegerAttr>(map.get(name)).getInt();
  };
  for (auto map : maps.getAsRange<DictionaryAttr>()) {
    parameters.push_back(
        llvm::json::Object{{"index", integer(map, "parameter")},
                           {"kind", "tensor_map"},
                           {"tensor_map", integer(map, "index")}});
    llvm::json::Object entry{
        {"index", integer(map, "index")},
        {"parameter", integer(map, "parameter")},
        {"buffer", integer(map, "buffer")},
        {"element_type", cast<StringAttr>(map.get("element_type")).str()},
        {"rank", integer(map, "rank")},
        {"global_dims", array(map, "global_dims")},
        {"global_strides", array(map, "global_strides")},
        {"box_dims", array(map, "box_dims")},
        {"element_strides", array(map, "element_strides")},
        {"swizzle", integer(map, "swizzle")},
        {"interleave", "none"},
        {"l2_promotion", "none"},
        {"oob_fill", "none"}};
    // A reduction's map names the TMA data type it reduces as (signed or
    // unsigned integers); a copy's leaves it to the element type's default.
    if (auto dataType = map.getAs<StringAttr>("data_type"))
      entry["data_type"] = dataType.str();
    tensorMaps.push_back(std::move(entry));
  }
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

FailureOr<mosaic::detail::KernelInfo>
mosaic::detail::describeKernel(ModuleOp module) {
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
  KernelInfo info;
  info.name = kernel.getName().str();
  std::optional<DenseI32ArrayAttr> grid = kernel.getKnownGridSizeAttr();
  std::optional<DenseI32ArrayAttr> block = kernel.getKnownBlockSizeAttr();
  if (!grid || !block || !*grid || !*block)
    return kernel.emitError() << "the kernel must carry known_grid_size and "
                                 "known_block_size: a launch needs both";
  for (int32_t size : grid->asArrayRef())
    info.grid.push_back(size);
  for (int32_t size : block->asArrayRef())
    info.block.push_back(size);
  int64_t threads = 1;
  for (int32_t size : block->asArrayRef())
    threads *= size;
  if (threads % 128 != 0)
    return kernel.emitError() << "the block has " << threads
                              << " threads; it must be a whole number of "
                                 "warpgroups (a multiple of 128)";
  static const int32_t kNoCluster[] = {1, 1, 1};
  auto cluster = kernel->getAttrOfType<DenseI32ArrayAttr>(mosaic_gpu::kClusterAttr);
  for (int32_t size :
       cluster ? cluster.asArrayRef() : ArrayRef<int32_t>(kNoCluster))
    info.cluster.push_back(size);

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
    llvm::json::Array shape;
    for (int64_t dim : memref.getShape())
      shape.push_back(dim);
    info.parameters.push_back(
        llvm::json::Object{{"index", static_cast<int64_t>(index)},
                           {"kind", "buffer"},
                           {"element_type", element},
                           {"shape", std::move(shape)},
                           {"alignment", 16}});
  }
  // The dynamic shared memory must cover every slice.
  info.dynamicSharedBytes = mosaic::sliceExtent(kernel);
  return info;
}

llvm::json::Object mosaic::detail::buildManifest(KernelInfo info,
                                                 ModuleOp lowered,
                                                 const CompiledKernel &kernel,
                                                 StringRef arch) {
  llvm::json::Array tensorMaps;
  describeTensorMaps(lowered, info.name, info.parameters, tensorMaps,
                     info.dynamicSharedBytes);
  const std::string &report = kernel.ptxasReport;
  // Strings are copied in: a json::Value made from a StringRef would borrow
  // it, and the manifest outlives the options `arch` comes from.
  return llvm::json::Object{
      {"entry", info.name},
      {"arch", arch.str()},
      {"ptx_features", kernel.ptxFeatures},
      {"cubin", kernel.entry + ".cubin"},
      {"ptx", kernel.entry + ".ptx"},
      {"parameters", std::move(info.parameters)},
      {"grid", std::move(info.grid)},
      {"block", std::move(info.block)},
      {"cluster", std::move(info.cluster)},
      {"dynamic_smem_bytes", info.dynamicSharedBytes},
      {"tensor_maps", std::move(tensorMaps)},
      {"ptxas",
       llvm::json::Object{
           {"registers", matchNumber(report, "Used ([0-9]+) registers")},
           {"spill_stores", matchNumber(report, "([0-9]+) bytes spill stores")},
           {"spill_loads", matchNumber(report, "([0-9]+) bytes spill loads")},
           {"stack_frame_bytes",
            matchNumber(report, "([0-9]+) bytes stack frame")},
           {"report", report}}}};
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
  llvm::json::Object manifest = kernel.manifest;
  manifest["cubin"] = llvm::sys::path::filename(path).str();
  manifest["ptx"] = llvm::sys::path::filename(ptxPath).str();
  return writeFile(
      manifestPath,
      llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))).str() +
          "\n");
}
