//===- Compiler.cpp - Compile a mosaic_gpu kernel to PTX or CUBIN ---------===//
//
// The driver: dialect and pass registration, and compileKernel running the
// pipeline's stages, LLVM's serialization and ptxas in turn. The CUDA toolkit
// is in Toolchain.cpp, the choice of PTX ISA in PtxIsa.cpp and the manifest in
// Manifest.cpp.
//
//===----------------------------------------------------------------------===//

#include "CompilerInternal.h"
#include "mosaic/Conversion/MosaicGPUToNVVM/Passes.h"
#include "mosaic/Dialect/MosaicGPU/MosaicGPUDialect.h"
#include "mosaic/LayoutInference/Passes.h"
#include "mosaic/Pipeline/Pipeline.h"
#include "mosaic/Transforms/Passes.h"

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
#include "mlir/Target/LLVM/NVVM/Utils.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Target/TargetMachine.h"

using namespace mlir;
using mosaic::CompileError;
using namespace mosaic::detail;

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

/// What the serializer hands back: PTX, or the LLVM IR it was made from.
enum class Serialized { Ptx, LlvmIR };

/// Turns the lowered kernel's gpu.module into PTX or LLVM IR, as
/// gpu-module-to-binary does, minus what costs time and does nothing for
/// these kernels: libdevice is linked only into kernels that call it, and
/// LLVM's O3 runs without the loop and SLP vectorizers (MLIR's pipeline turns
/// them on at every level; on our kernels the SLP vectorizer took up to 38 ms
/// and changed neither the PTX nor the SASS). The module is translated in
/// place rather than cloned, and emitting LLVM IR needs no bitcode round
/// trip.
class KernelSerializer : public NVVM::SerializeGPUModuleBase {
public:
  KernelSerializer(gpu::GPUModuleOp module, NVVM::NVVMTargetAttr target,
                   const gpu::TargetOptions &options, Serialized output)
      : SerializeGPUModuleBase(*module, target, options), output(output) {}

protected:
  std::optional<SmallVector<std::unique_ptr<llvm::Module>>>
  loadBitcodeFiles(llvm::Module &module) override {
    bool callsLibdevice = llvm::any_of(module.functions(), [](auto &function) {
      return function.isDeclaration() &&
             function.getName().starts_with("__nv_");
    });
    if (!callsLibdevice)
      return SmallVector<std::unique_ptr<llvm::Module>>();
    // Without a toolkit the calls stay undefined, and `ptx` says so.
    if (librariesToLink.empty() && !getToolkitPath().empty() &&
        failed(appendStandardLibs()))
      return std::nullopt;
    return SerializeGPUModuleBase::loadBitcodeFiles(module);
  }

  LogicalResult optimizeModule(llvm::Module &module, int level) override {
    if (level < 0 || level > 3)
      return getOperation().emitError()
             << "the optimization level must be 0 to 3, got " << level;
    FailureOr<llvm::TargetMachine *> machine = getOrCreateTargetMachine();
    if (failed(machine))
      return getOperation().emitError()
             << "no LLVM target machine for " << triple;
    (*machine)->setOptLevel(static_cast<llvm::CodeGenOptLevel>(level));
    if (level == 0)
      return success();
    llvm::PipelineTuningOptions tuning;
    tuning.LoopUnrolling = true;
    tuning.LoopVectorization = false;
    tuning.SLPVectorization = false;
    llvm::LoopAnalysisManager loops;
    llvm::FunctionAnalysisManager functions;
    llvm::CGSCCAnalysisManager sccs;
    llvm::ModuleAnalysisManager modules;
    llvm::PassBuilder builder(*machine, tuning);
    builder.registerModuleAnalyses(modules);
    builder.registerCGSCCAnalyses(sccs);
    builder.registerFunctionAnalyses(functions);
    builder.registerLoopAnalyses(loops);
    builder.crossRegisterProxies(loops, functions, sccs, modules);
    const llvm::OptimizationLevel levels[] = {llvm::OptimizationLevel::O1,
                                              llvm::OptimizationLevel::O2,
                                              llvm::OptimizationLevel::O3};
    builder.buildPerModuleDefaultPipeline(levels[level - 1])
        .run(module, modules);
    return success();
  }

  FailureOr<SmallVector<char, 0>>
  moduleToObject(llvm::Module &module) override {
    SmallVector<char, 0> result;
    if (output == Serialized::LlvmIR) {
      llvm::raw_svector_ostream os(result);
      module.print(os, nullptr);
      return result;
    }
    FailureOr<llvm::TargetMachine *> machine = getOrCreateTargetMachine();
    if (failed(machine))
      return getOperation().emitError()
             << "no LLVM target machine for " << triple;
    FailureOr<SmallString<0>> isa = translateModuleToISA(
        module, **machine, [&] { return getOperation().emitError(); });
    if (failed(isa))
      return failure();
    result.append(isa->begin(), isa->end());
    return result;
  }

private:
  Serialized output;
};

/// Serializes the one gpu.module of the lowered `module`, whose target the
/// pipeline attached.
FailureOr<std::string> serialize(ModuleOp module, Serialized output,
                                 StringRef cudaRoot) {
  gpu::GPUModuleOp gpuModule;
  module.walk([&](gpu::GPUModuleOp op) { gpuModule = op; });
  if (!gpuModule || !gpuModule.getTargetsAttr() ||
      gpuModule.getTargetsAttr().size() != 1)
    return failure();
  auto target = dyn_cast<NVVM::NVVMTargetAttr>(gpuModule.getTargetsAttr()[0]);
  if (!target)
    return failure();
  NVVM::SerializeGPUModuleBase::init();
  // libdevice (math functions such as expf) comes from the toolkit.
  gpu::TargetOptions options(cudaRoot);
  KernelSerializer serializer(gpuModule, target, options, output);
  std::optional<SmallVector<char, 0>> code = serializer.run();
  if (!code || code->empty())
    return failure();
  return std::string(code->begin(), code->end());
}

/// The kernel's LLVM IR, linked and optimized: what the PTX is made from.
llvm::Expected<std::string> llvmIR(ModuleOp module, StringRef cudaRoot) {
  FailureOr<std::string> text = serialize(module, Serialized::LlvmIR, cudaRoot);
  if (failed(text))
    return toolchainError("cannot produce the kernel's LLVM IR");
  return std::move(*text);
}

/// The kernel's PTX, checked for unresolved libdevice calls and for the
/// requested ISA.
llvm::Expected<std::string> ptx(ModuleOp module, StringRef cudaRoot,
                                StringRef features) {
  FailureOr<std::string> code = serialize(module, Serialized::Ptx, cudaRoot);
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

} // namespace

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
  FailureOr<Manifest> info =
      describeKernel(module, options.emit == EmitKind::Cubin);
  if (failed(info))
    return diagnosed();
  CompiledKernel kernel;
  kernel.emit = options.emit;
  kernel.entry = info->entry;

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

  FailureOr<Manifest> manifest =
      buildManifest(std::move(*info), *lowered, kernel, options.arch);
  if (failed(manifest))
    return diagnosed();
  kernel.manifest = std::move(*manifest);
  return kernel;
}
