//===- Compiler.cpp - Compile a mosaic_gpu kernel to PTX or CUBIN ---------===//

#include "mosaic/Compiler/Compiler.h"
#include "mosaic/Conversion/MosaicGPUToNVVM/KernelAttributes.h"
#include "mosaic/Conversion/MosaicGPUToNVVM/Passes.h"
#include "mosaic/Conversion/MosaicGPUToNVVM/Pipeline.h"
#include "mosaic/LayoutInference/Passes.h"
#include "mosaic/Transforms/Passes.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/ToolOutputFile.h"

#include <chrono>

using namespace mlir;
using mosaic::CompileError;

char CompileError::ID = 0;

void mosaic::registerCompilerDialects(DialectRegistry &registry) {
  registry.insert<mosaic_gpu::MosaicGPUDialect, arith::ArithDialect,
                  cf::ControlFlowDialect, func::FuncDialect, gpu::GPUDialect,
                  index::IndexDialect, LLVM::LLVMDialect, math::MathDialect,
                  memref::MemRefDialect, NVVM::NVVMDialect, nvgpu::NVGPUDialect,
                  scf::SCFDialect, ub::UBDialect, vector::VectorDialect>();
  registerPipelineInterfaces(registry);
}

void mosaic::registerCompilerPasses() {
  // Pass registration is global and must happen once.
  static const bool registered = [] {
    registerLayoutInferencePasses();
    registerTransformsPasses();
    registerConversionPasses();
    registerPipeline();
    // The upstream passes: cleanups between ours and the NVVM/LLVM lowering
    // after them.
    registerAllPasses();
    return true;
  }();
  (void)registered;
}

namespace {

llvm::Error diagnosed() {
  return llvm::make_error<CompileError>(CompileError::Kind::Diagnosed, "");
}

llvm::Error toolchainError(const llvm::Twine &message,
                           std::string toolOutput = "") {
  return llvm::make_error<CompileError>(CompileError::Kind::Toolchain,
                                        message.str(), std::move(toolOutput));
}

/// Appends the wall time of its scope to a kernel's stage times.
struct StageTimer {
  StageTimer(mosaic::CompiledKernel &kernel, StringRef name)
      : kernel(kernel), name(name), start(std::chrono::steady_clock::now()) {}
  ~StageTimer() {
    std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    kernel.stageTimes.emplace_back(name, elapsed.count());
  }
  mosaic::CompiledKernel &kernel;
  std::string name;
  std::chrono::steady_clock::time_point start;
};

/// What the manifest says about the kernel, read before lowering.
struct KernelInfo {
  std::string name;
  llvm::json::Array parameters;
  llvm::json::Array grid, block, cluster;
  int64_t dynamicSharedBytes = 0;
};

FailureOr<KernelInfo> describeKernel(ModuleOp module) {
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
  auto cluster = kernel->getAttrOfType<DenseI32ArrayAttr>("mosaic_gpu.cluster");
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

/// The CUDA toolkit root: the one ptxas belongs to, else CUDA_HOME,
/// CUDA_ROOT, CUDA_PATH or /usr/local/cuda.
std::string findCudaRoot(const std::optional<std::string> &ptxas) {
  if (ptxas) {
    SmallString<256> root(*ptxas);
    llvm::sys::path::remove_filename(root); // bin/
    llvm::sys::path::remove_filename(root);
    SmallString<256> libdevice(root);
    llvm::sys::path::append(libdevice, "nvvm", "libdevice");
    if (llvm::sys::fs::is_directory(libdevice))
      return std::string(root);
  }
  for (const char *variable : {"CUDA_HOME", "CUDA_ROOT", "CUDA_PATH"})
    if (const char *root = std::getenv(variable))
      return root;
  return "/usr/local/cuda";
}

/// The newest PTX ISA LLVM 22 emits for sm_90a (`+ptx90`); LLVM ignores
/// newer features with a warning and falls back to 8.0.
constexpr int kNewestLlvmPtxIsa = 90;
/// sm_90a needs PTX ISA 8.0 (CUDA 12.0).
constexpr int kOldestSm90aPtxIsa = 80;

/// The newest PTX ISA (times 10) that the ptxas of CUDA `major.minor`
/// accepts, from the CUDA release notes.
int newestPtxIsaOf(int major, int minor) {
  if (major < 12)
    return 0;
  if (major > 12)
    return major == 13 && minor == 0 ? 90 : kNewestLlvmPtxIsa;
  static const int isaOfMinor[] = {80, 81, 82, 83, 84, 85, 85, 86, 87, 88};
  return minor < 10 ? isaOfMinor[minor] : 88;
}

/// A temporary file's path, for a tool's output.
llvm::Expected<std::string> temporaryFile(StringRef suffix) {
  SmallString<128> path;
  if (std::error_code error =
          llvm::sys::fs::createTemporaryFile("mosaic-compile", suffix, path))
    return toolchainError("cannot create a temporary file: " + error.message());
  return std::string(path);
}

/// Reads and removes a tool's output file.
std::string takeFile(StringRef path) {
  auto contents = llvm::MemoryBuffer::getFile(path);
  llvm::sys::fs::remove(path);
  return contents ? (*contents)->getBuffer().str() : "";
}

/// Picks the PTX ISA: the newest one both LLVM and the installed ptxas
/// accept, or 8.0 without ptxas (PTX output only). Fails for a ptxas too old
/// for sm_90a.
llvm::Expected<int> choosePtxIsa(const std::optional<std::string> &ptxas) {
  if (!ptxas)
    return kOldestSm90aPtxIsa;
  llvm::Expected<std::string> outputPath = temporaryFile("version");
  if (!outputPath)
    return outputPath.takeError();
  std::optional<StringRef> redirects[] = {std::nullopt, *outputPath,
                                          *outputPath};
  llvm::sys::ExecuteAndWait(*ptxas, {*ptxas, "--version"}, std::nullopt,
                            redirects);
  std::string output = takeFile(*outputPath);
  SmallVector<StringRef> version;
  if (!llvm::Regex("release ([0-9]+)\\.([0-9]+)").match(output, &version))
    return toolchainError("cannot read the CUDA release from `" + *ptxas +
                          " --version`");
  int major = 0, minor = 0;
  version[1].getAsInteger(10, major);
  version[2].getAsInteger(10, minor);
  int isa = std::min(newestPtxIsaOf(major, minor), kNewestLlvmPtxIsa);
  if (isa < kOldestSm90aPtxIsa)
    return toolchainError(*ptxas + " is from CUDA " + llvm::Twine(major) + "." +
                          llvm::Twine(minor) +
                          "; sm_90a needs CUDA 12.0 or newer");
  return isa;
}

int64_t matchNumber(StringRef text, StringRef pattern) {
  SmallVector<StringRef> groups;
  if (llvm::Regex(pattern).match(text, &groups) && groups.size() > 1) {
    int64_t value = 0;
    if (!groups[1].getAsInteger(10, value))
      return value;
  }
  return -1;
}

llvm::Error writeFile(StringRef path, StringRef contents) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file)
    return toolchainError(error);
  file->os() << contents;
  file->keep();
  return llvm::Error::success();
}

/// Runs gpu-module-to-binary on a copy of the lowered module and returns
/// its one object: LLVM bitcode (`target` "llvm") or PTX ("isa").
FailureOr<std::string> serialize(ModuleOp module, StringRef target,
                                 StringRef cudaRoot) {
  OwningOpRef<ModuleOp> copy = module.clone();
  PassManager serializer(module.getContext());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = target.str();
  // libdevice (math functions such as expf) comes from the toolkit.
  binary.toolkitPath = cudaRoot.str();
  serializer.addPass(createGpuModuleToBinaryPass(binary));
  if (failed(serializer.run(*copy)))
    return failure();
  std::string code;
  copy->walk([&](gpu::BinaryOp op) {
    for (auto object : op.getObjects().getAsRange<gpu::ObjectAttr>())
      code = object.getObject().getValue().str();
  });
  if (code.empty())
    return failure();
  return code;
}

/// The kernel's LLVM IR, as text.
llvm::Expected<std::string> llvmIR(ModuleOp module, StringRef cudaRoot) {
  // The serializer hands LLVM IR over as bitcode.
  FailureOr<std::string> bitcode = serialize(module, "llvm", cudaRoot);
  if (failed(bitcode))
    return toolchainError("cannot produce the kernel's LLVM IR");
  llvm::LLVMContext llvmContext;
  auto parsed = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(*bitcode, "kernel"), llvmContext);
  if (!parsed)
    return toolchainError("cannot read the kernel's LLVM bitcode: " +
                          llvm::toString(parsed.takeError()));
  std::string text;
  llvm::raw_string_ostream os(text);
  (*parsed)->print(os, nullptr);
  return text;
}

/// The kernel's PTX, checked for unresolved libdevice calls and for the
/// requested ISA.
llvm::Expected<std::string> ptx(ModuleOp module, StringRef cudaRoot,
                                StringRef features) {
  FailureOr<std::string> code = serialize(module, "isa", cudaRoot);
  if (failed(code))
    return toolchainError("the pipeline produced no PTX for the kernel");
  // Math functions come from libdevice; without it they stay undefined.
  SmallVector<StringRef> undefined;
  if (llvm::Regex("\\.extern \\.func [^\n]*\\) ([A-Za-z_0-9]+)")
          .match(*code, &undefined))
    return toolchainError(
        "the kernel calls `" + undefined[1] +
        "`, which libdevice defines, but libdevice was not found under '" +
        cudaRoot + "/nvvm/libdevice'; set CUDA_HOME");
  // LLVM falls back to PTX 8.0 for ISA features it does not know.
  if (features.starts_with("+ptx") && features.size() == 6) {
    std::string expectedVersion =
        (".version " + features.substr(4, 1) + "." + features.substr(5, 1))
            .str();
    if (!StringRef(*code).contains(expectedVersion + "\n"))
      return toolchainError("the PTX is not of the requested ISA (" +
                            expectedVersion + "); LLVM does not know `" +
                            features + "`");
  }
  return std::move(*code);
}

/// Runs `ptxas -v` on `kernel.ptx` in `directory` and fills in the CUBIN and
/// the report. On failure the PTX stays in `directory`, so that the command
/// in the message reproduces it.
llvm::Error runPtxas(mosaic::CompiledKernel &kernel, StringRef ptxas,
                     StringRef directory, const mosaic::CompileOptions &options,
                     StringRef sassPath) {
  SmallString<256> ptxPath(directory), cubinPath(directory);
  llvm::sys::path::append(ptxPath, kernel.entry + ".ptx");
  llvm::sys::path::append(cubinPath, kernel.entry + ".cubin");
  if (llvm::Error error = writeFile(ptxPath, kernel.ptx))
    return error;
  llvm::Expected<std::string> logPath = temporaryFile("log");
  if (!logPath)
    return logPath.takeError();
  std::string optFlag = "-O" + std::to_string(options.optLevel);
  SmallVector<StringRef> args = {ptxas, "-arch", options.arch, "-v", optFlag};
  if (options.lineInfo)
    args.push_back("-lineinfo");
  args.append({ptxPath, "-o", cubinPath});
  std::optional<StringRef> redirects[] = {std::nullopt, *logPath, *logPath};
  std::string error;
  int status;
  {
    StageTimer timer(kernel, "ptxas");
    status = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0,
                                       0, &error);
  }
  kernel.ptxasReport = takeFile(*logPath);
  if (status != 0) {
    std::string command;
    for (StringRef arg : args)
      command += (command.empty() ? "" : " ") + arg.str();
    return toolchainError("ptxas failed" + (error.empty() ? "" : ": " + error) +
                              "; reproduce with:\n  " + command,
                          kernel.ptxasReport);
  }
  llvm::sys::fs::remove(ptxPath);
  if (!sassPath.empty())
    if (std::optional<std::string> nvdisasm =
            mosaic::findCudaTool("nvdisasm")) {
      std::optional<StringRef> sassRedirects[] = {std::nullopt, sassPath,
                                                  std::nullopt};
      llvm::sys::ExecuteAndWait(*nvdisasm, {*nvdisasm, cubinPath}, std::nullopt,
                                sassRedirects);
    }
  kernel.cubin = takeFile(cubinPath);
  llvm::sys::fs::remove(directory);
  if (kernel.cubin.empty())
    return toolchainError("ptxas wrote no CUBIN to '" + cubinPath + "'");
  return llvm::Error::success();
}

} // namespace

std::optional<std::string> mosaic::findCudaTool(StringRef name) {
  if (auto onPath = llvm::sys::findProgramByName(name))
    return *onPath;
  const char *roots[] = {std::getenv("CUDA_HOME"), std::getenv("CUDA_ROOT"),
                         std::getenv("CUDA_PATH"), "/usr/local/cuda"};
  for (const char *root : roots) {
    if (!root)
      continue;
    SmallString<256> path(root);
    llvm::sys::path::append(path, "bin", name);
    if (llvm::sys::fs::can_execute(path))
      return std::string(path);
  }
  return std::nullopt;
}

llvm::Expected<mosaic::CompiledKernel>
mosaic::compileKernel(ModuleOp module, const CompileOptions &options) {
  if (options.arch != "sm_90a")
    return llvm::make_error<CompileError>(CompileError::Kind::Option,
                                          "only sm_90a is supported, got '" +
                                              options.arch + "'");
  if (options.optLevel > 3)
    return llvm::make_error<CompileError>(
        CompileError::Kind::Option,
        "the optimization level must be 0 to 3, got " +
            std::to_string(options.optLevel));
  FailureOr<KernelInfo> info = describeKernel(module);
  if (failed(info))
    return diagnosed();
  CompiledKernel kernel;
  kernel.emit = options.emit;
  kernel.entry = info->name;

  std::optional<std::string> ptxas = findCudaTool("ptxas");
  std::string cudaRoot = findCudaRoot(ptxas);
  kernel.ptxFeatures = options.ptxFeatures;
  if (kernel.ptxFeatures.empty()) {
    llvm::Expected<int> isa = choosePtxIsa(ptxas);
    if (!isa)
      return isa.takeError();
    kernel.ptxFeatures = "+ptx" + std::to_string(*isa);
  }
  PipelineOptions pipeline;
  pipeline.chip = options.arch;
  pipeline.features = kernel.ptxFeatures;
  pipeline.optLevel = options.optLevel;

  const std::string &dumpDir = options.dumpDirectory;
  if (!dumpDir.empty()) {
    if (std::error_code error = llvm::sys::fs::create_directories(dumpDir))
      return toolchainError("cannot create MOSAIC_GPU_DUMP_TO directory '" +
                            dumpDir + "': " + error.message());
    module.getContext()->disableMultithreading();
  }
  auto dumpPath = [&](StringRef extension) {
    SmallString<256> path(dumpDir);
    llvm::sys::path::append(path, kernel.entry + extension.str());
    return std::string(path);
  };

  // The stages run one by one, so that each can be timed.
  OwningOpRef<ModuleOp> lowered = module.clone();
  for (PipelineStage stage : kPipelineStages) {
    PassManager pm(module.getContext());
    buildPipelineStage(pm, stage, pipeline);
    if (!dumpDir.empty())
      pm.enableIRPrintingToFileTree([](Pass *, Operation *) { return false; },
                                    [](Pass *, Operation *) { return true; },
                                    /*printModuleScope=*/true,
                                    /*printAfterOnlyOnChange=*/true,
                                    /*printAfterOnlyOnFailure=*/false, dumpDir);
    StageTimer timer(kernel, pipelineStageName(stage));
    if (failed(pm.run(*lowered)))
      return diagnosed();
  }

  if (options.emit == EmitKind::Mlir) {
    llvm::raw_string_ostream os(kernel.mlir);
    lowered->print(os);
    return kernel;
  }

  if (options.emit == EmitKind::Llvm || !dumpDir.empty()) {
    llvm::Expected<std::string> text = llvmIR(*lowered, cudaRoot);
    if (!text)
      return text.takeError();
    kernel.llvmIR = std::move(*text);
    if (!dumpDir.empty())
      if (llvm::Error error = writeFile(dumpPath(".ll"), kernel.llvmIR))
        return std::move(error);
    if (options.emit == EmitKind::Llvm)
      return kernel;
  }

  {
    StageTimer timer(kernel, "llvm-to-ptx");
    llvm::Expected<std::string> code =
        ptx(*lowered, cudaRoot, kernel.ptxFeatures);
    if (!code)
      return code.takeError();
    kernel.ptx = std::move(*code);
  }
  if (!dumpDir.empty())
    if (llvm::Error error = writeFile(dumpPath(".ptx"), kernel.ptx))
      return std::move(error);
  if (options.emit == EmitKind::Ptx)
    return kernel;

  // CUBIN: run ptxas ourselves, to capture its resource report.
  if (!ptxas)
    return toolchainError("ptxas not found on PATH, under CUDA_HOME, "
                          "CUDA_ROOT, CUDA_PATH or /usr/local/cuda; install "
                          "CUDA 13, or emit PTX instead");
  SmallString<128> workDir;
  if (std::error_code error =
          llvm::sys::fs::createUniqueDirectory("mosaic-compile", workDir))
    return toolchainError("cannot create a temporary directory: " +
                          error.message());
  std::string sassPath = dumpDir.empty() ? "" : dumpPath(".sass");
  if (llvm::Error error = runPtxas(kernel, *ptxas, workDir, options, sassPath))
    return std::move(error);

  llvm::json::Array tensorMaps;
  describeTensorMaps(*lowered, info->name, info->parameters, tensorMaps,
                     info->dynamicSharedBytes);
  const std::string &report = kernel.ptxasReport;
  kernel.manifest = llvm::json::Object{
      {"entry", info->name},
      {"arch", options.arch},
      {"ptx_features", kernel.ptxFeatures},
      {"cubin", kernel.entry + ".cubin"},
      {"ptx", kernel.entry + ".ptx"},
      {"parameters", std::move(info->parameters)},
      {"grid", std::move(info->grid)},
      {"block", std::move(info->block)},
      {"cluster", std::move(info->cluster)},
      {"dynamic_smem_bytes", info->dynamicSharedBytes},
      {"tensor_maps", std::move(tensorMaps)},
      {"ptxas",
       llvm::json::Object{
           {"registers", matchNumber(report, "Used ([0-9]+) registers")},
           {"spill_stores", matchNumber(report, "([0-9]+) bytes spill stores")},
           {"spill_loads", matchNumber(report, "([0-9]+) bytes spill loads")},
           {"stack_frame_bytes",
            matchNumber(report, "([0-9]+) bytes stack frame")},
           {"report", report}}}};
  return kernel;
}

llvm::Error mosaic::writeCompiledKernel(const CompiledKernel &kernel,
                                        StringRef path) {
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
