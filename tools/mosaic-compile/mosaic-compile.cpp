//===- mosaic-compile.cpp - Compile a mosaic_gpu kernel to a CUBIN --------===//
//
// mosaic-compile kernel.mlir -o kernel.cubin
//
// Runs mosaic-gpu-pipeline on the kernel, serializes it to PTX, runs ptxas
// (with -v, to report registers and spills) and writes the CUBIN with a JSON
// manifest next to it: what a runtime needs to launch the kernel.
//
//===----------------------------------------------------------------------===//

#include "Conversion/MosaicGPUToNVVM/KernelLowering.h"
#include "Conversion/MosaicGPUToNVVM/Pipeline.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUOps.h"

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
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Support/FormatVariadic.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include <chrono>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<kernel.mlir>"),
                                      cl::Required);
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"));
enum class Emit { Mlir, Llvm, Ptx, Cubin };
static cl::opt<Emit>
    emit("emit", cl::desc("What to produce"), cl::init(Emit::Cubin),
         cl::values(clEnumValN(Emit::Mlir, "mlir", "MLIR after the pipeline"),
                    clEnumValN(Emit::Llvm, "llvm", "LLVM IR of the kernel"),
                    clEnumValN(Emit::Ptx, "ptx", "PTX"),
                    clEnumValN(Emit::Cubin, "cubin",
                               "CUBIN and its JSON manifest (default)")));
static cl::opt<std::string> arch("arch", cl::desc("Target (only sm_90a)"),
                                 cl::init("sm_90a"));
static cl::opt<std::string> ptxFeatures(
    "ptx-features",
    cl::desc("PTX ISA version feature, e.g. +ptx85 (default: the newest ISA "
             "both the installed ptxas and LLVM accept)"),
    cl::init(""));
static cl::opt<unsigned> optLevel("O", cl::desc("Optimization level (0-3)"),
                                  cl::init(3), cl::Prefix);
static cl::opt<bool> lineInfo("lineinfo", cl::desc("Pass -lineinfo to ptxas"),
                              cl::init(true));
static cl::opt<bool>
    timeStages("time-stages",
               cl::desc("Print the wall time of each compilation stage, in ms"),
               cl::init(false));

namespace {

int fail(const llvm::Twine &message) {
  llvm::errs() << "mosaic-compile: error: " << message << "\n";
  return 1;
}

/// Wall times of the compilation stages, printed with --time-stages.
SmallVector<std::pair<std::string, double>> stageTimes;

struct StageTimer {
  explicit StageTimer(StringRef name)
      : name(name), start(std::chrono::steady_clock::now()) {}
  ~StageTimer() {
    std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    stageTimes.emplace_back(name, elapsed.count());
  }
  std::string name;
  std::chrono::steady_clock::time_point start;
};

void printStageTimes() {
  if (!timeStages)
    return;
  llvm::errs() << "stage times (ms):";
  for (auto &[name, ms] : stageTimes)
    llvm::errs() << " " << name << "=" << llvm::formatv("{0:f3}", ms);
  llvm::errs() << "\n";
}

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
LogicalResult describeTensorMaps(ModuleOp module, StringRef kernel,
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
    return success();
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
    tensorMaps.push_back(llvm::json::Object{
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
        {"oob_fill", "none"}});
  }
  return success();
}

/// A CUDA tool (ptxas, nvdisasm) on PATH or under CUDA_HOME, CUDA_ROOT,
/// CUDA_PATH or /usr/local/cuda.
std::optional<std::string> findCudaTool(StringRef name) {
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

/// Picks the PTX ISA: the newest one both LLVM and the installed ptxas
/// accept, or 8.0 without ptxas (PTX output only). Fails for a ptxas too old
/// for sm_90a.
FailureOr<int> choosePtxIsa(std::optional<std::string> ptxas) {
  if (!ptxas)
    return kOldestSm90aPtxIsa;
  SmallString<128> outputPath;
  if (llvm::sys::fs::createTemporaryFile("mosaic-ptxas", "version", outputPath))
    return failure();
  std::optional<StringRef> redirects[] = {std::nullopt, outputPath.str(),
                                          outputPath.str()};
  llvm::sys::ExecuteAndWait(*ptxas, {*ptxas, "--version"}, std::nullopt,
                            redirects);
  auto output = llvm::MemoryBuffer::getFile(outputPath);
  llvm::sys::fs::remove(outputPath);
  SmallVector<StringRef> version;
  if (!output || !llvm::Regex("release ([0-9]+)\\.([0-9]+)")
                      .match((*output)->getBuffer(), &version)) {
    llvm::errs() << "mosaic-compile: error: cannot read the CUDA release from `"
                 << *ptxas << " --version`\n";
    return failure();
  }
  int major = 0, minor = 0;
  version[1].getAsInteger(10, major);
  version[2].getAsInteger(10, minor);
  int isa = std::min(newestPtxIsaOf(major, minor), kNewestLlvmPtxIsa);
  if (isa < kOldestSm90aPtxIsa) {
    llvm::errs() << "mosaic-compile: error: " << *ptxas << " is from CUDA "
                 << major << "." << minor
                 << "; sm_90a needs CUDA 12.0 or newer\n";
    return failure();
  }
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

int writeFile(StringRef path, StringRef contents) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file)
    return fail(error);
  file->os() << contents;
  file->keep();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "mosaic-compile: mosaic_gpu kernel to CUBIN\n");
  if (arch != "sm_90a")
    return fail("only --arch=sm_90a is supported, got '" + arch + "'");
  if (optLevel > 3)
    return fail("-O must be 0 to 3");

  DialectRegistry registry;
  registry.insert<mosaic_gpu::MosaicGPUDialect, arith::ArithDialect,
                  cf::ControlFlowDialect, func::FuncDialect, gpu::GPUDialect,
                  index::IndexDialect, LLVM::LLVMDialect, math::MathDialect,
                  memref::MemRefDialect, NVVM::NVVMDialect, nvgpu::NVGPUDialect,
                  scf::SCFDialect, vector::VectorDialect>();
  mosaic::registerPipelineInterfaces(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module;
  {
    StageTimer timer("parse");
    module = parseSourceFile<ModuleOp>(inputFile, sourceMgr, &context);
  }
  if (!module)
    return 1;

  FailureOr<KernelInfo> info = describeKernel(*module);
  if (failed(info))
    return 1;

  std::optional<std::string> ptxas = findCudaTool("ptxas");
  std::string cudaRoot = findCudaRoot(ptxas);
  std::string features = ptxFeatures;
  if (features.empty()) {
    FailureOr<int> isa = choosePtxIsa(ptxas);
    if (failed(isa))
      return 1;
    features = "+ptx" + std::to_string(*isa);
  }
  mosaic::PipelineOptions options;
  options.chip = arch;
  options.features = features;
  options.optLevel = optLevel;

  // MOSAIC_GPU_DUMP_TO=dir: the MLIR after every pass, the kernel's LLVM IR,
  // its PTX and (when nvdisasm is installed) its SASS, for debugging.
  std::string dumpDir;
  if (const char *dir = std::getenv("MOSAIC_GPU_DUMP_TO")) {
    dumpDir = dir;
    if (std::error_code error = llvm::sys::fs::create_directories(dumpDir))
      return fail("cannot create MOSAIC_GPU_DUMP_TO directory '" + dumpDir +
                  "': " + error.message());
    context.disableMultithreading();
  }
  auto dumpPath = [&](StringRef extension) {
    SmallString<256> path(dumpDir);
    llvm::sys::path::append(path, info->name + extension.str());
    return std::string(path);
  };
  // The stages run one by one, so that each can be timed.
  for (mosaic::PipelineStage stage : mosaic::kPipelineStages) {
    PassManager pm(&context);
    mosaic::buildPipelineStage(pm, stage, options);
    if (!dumpDir.empty())
      pm.enableIRPrintingToFileTree([](Pass *, Operation *) { return false; },
                                    [](Pass *, Operation *) { return true; },
                                    /*printModuleScope=*/true,
                                    /*printAfterOnlyOnChange=*/true,
                                    /*printAfterOnlyOnFailure=*/false, dumpDir);
    StageTimer timer(mosaic::pipelineStageName(stage));
    if (failed(pm.run(*module)))
      return 1;
  }

  StringRef stem = llvm::sys::path::stem(inputFile);
  auto outputPath = [&](StringRef extension) {
    return outputFile.empty() ? (stem + extension).str()
                              : outputFile.getValue();
  };
  if (emit == Emit::Mlir) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    return writeFile(outputPath(".mlir"), text);
  }

  // Serializes a copy of the lowered module and returns its one object.
  auto serialize = [&](StringRef target) -> FailureOr<std::string> {
    OwningOpRef<ModuleOp> copy = module->clone();
    PassManager serializer(&context);
    GpuModuleToBinaryPassOptions binary;
    binary.compilationTarget = target.str();
    // libdevice (math functions such as expf) comes from the toolkit.
    binary.toolkitPath = cudaRoot;
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
  };

  if (emit == Emit::Llvm || !dumpDir.empty()) {
    // The serializer hands LLVM IR over as bitcode; print it as text.
    FailureOr<std::string> bitcode = serialize("llvm");
    if (failed(bitcode))
      return fail("cannot produce the kernel's LLVM IR");
    llvm::LLVMContext llvmContext;
    auto parsed = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(*bitcode, "kernel"), llvmContext);
    if (!parsed)
      return fail("cannot read the kernel's LLVM bitcode: " +
                  llvm::toString(parsed.takeError()));
    std::string text;
    llvm::raw_string_ostream os(text);
    (*parsed)->print(os, nullptr);
    if (!dumpDir.empty())
      if (int status = writeFile(dumpPath(".ll"), text))
        return status;
    if (emit == Emit::Llvm)
      return writeFile(outputPath(".ll"), text);
  }
  FailureOr<std::string> ptx = failure();
  {
    StageTimer timer("llvm-to-ptx");
    ptx = serialize("isa");
  }
  if (failed(ptx))
    return fail("the pipeline produced no PTX for the kernel");
  // Math functions come from libdevice; without it they stay undefined.
  SmallVector<StringRef> undefined;
  if (llvm::Regex("\\.extern \\.func [^\n]*\\) ([A-Za-z_0-9]+)")
          .match(*ptx, &undefined))
    return fail("the kernel calls `" + undefined[1] +
                "`, which libdevice defines, but libdevice was not found under "
                "'" +
                cudaRoot + "/nvvm/libdevice'; set CUDA_HOME");
  // LLVM falls back to PTX 8.0 for ISA features it does not know.
  std::string expectedVersion = ".version " +
                                features.substr(4, features.size() - 5) + "." +
                                features.substr(features.size() - 1);
  if (StringRef(features).starts_with("+ptx") && features.size() == 6 &&
      !StringRef(*ptx).contains(expectedVersion + "\n"))
    return fail("the PTX is not of the requested ISA (" + expectedVersion +
                "); LLVM does not know `" + features + "`");
  std::string code = std::move(*ptx);
  if (!dumpDir.empty())
    if (int status = writeFile(dumpPath(".ptx"), code))
      return status;
  if (emit == Emit::Ptx) {
    printStageTimes();
    return writeFile(outputPath(".ptx"), code);
  }

  // CUBIN: run ptxas ourselves, to capture its resource report.
  if (!ptxas)
    return fail("ptxas not found on PATH, under CUDA_HOME, CUDA_ROOT, "
                "CUDA_PATH or /usr/local/cuda; install CUDA 13 or use "
                "--emit=ptx");
  std::string cubinPath = outputPath(".cubin");
  std::string ptxPath = cubinPath + ".ptx";
  if (int status = writeFile(ptxPath, code))
    return status;
  SmallString<128> logPath;
  if (llvm::sys::fs::createTemporaryFile("mosaic-ptxas", "log", logPath))
    return fail("cannot create a temporary file for the ptxas log");
  std::string optFlag = "-O" + std::to_string(optLevel);
  SmallVector<StringRef> args = {*ptxas, "-arch", arch, "-v", optFlag};
  if (lineInfo)
    args.push_back("-lineinfo");
  args.append({ptxPath, "-o", cubinPath});
  std::optional<StringRef> redirects[] = {std::nullopt, logPath.str(),
                                          logPath.str()};
  std::string error;
  int status;
  {
    StageTimer timer("ptxas");
    status = llvm::sys::ExecuteAndWait(*ptxas, args, std::nullopt, redirects, 0,
                                       0, &error);
  }
  auto log = llvm::MemoryBuffer::getFile(logPath);
  std::string report = log ? (*log)->getBuffer().str() : "";
  llvm::sys::fs::remove(logPath);
  if (status != 0) {
    llvm::errs() << report;
    std::string command;
    for (StringRef arg : args)
      command += (command.empty() ? "" : " ") + arg.str();
    return fail("ptxas failed" + (error.empty() ? "" : ": " + error) +
                "; reproduce with:\n  " + command);
  }

  llvm::json::Array tensorMaps;
  if (failed(describeTensorMaps(*module, info->name, info->parameters,
                                tensorMaps, info->dynamicSharedBytes)))
    return 1;
  llvm::json::Object manifest{
      {"entry", info->name},
      {"arch", arch.getValue()},
      {"ptx_features", features},
      {"cubin", llvm::sys::path::filename(cubinPath).str()},
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
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
  llvm::sys::fs::remove(ptxPath);
  if (!dumpDir.empty())
    if (std::optional<std::string> nvdisasm = findCudaTool("nvdisasm")) {
      std::string sassPath = dumpPath(".sass");
      std::optional<StringRef> sassRedirects[] = {
          std::nullopt, StringRef(sassPath), std::nullopt};
      llvm::sys::ExecuteAndWait(*nvdisasm, {*nvdisasm, cubinPath}, std::nullopt,
                                sassRedirects);
    }
  SmallString<256> manifestPath(cubinPath);
  llvm::sys::path::replace_extension(manifestPath, "json");
  if (int written = writeFile(manifestPath, json))
    return written;
  llvm::outs() << report;
  printStageTimes();
  return 0;
}
