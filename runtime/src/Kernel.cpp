//===- Kernel.cpp - Loading and launching a compiled kernel -------------===//

#include "mosaic/Runtime/Kernel.h"

#include "mosaic/Contracts/Format.h"
#include "mosaic/Runtime/CollectiveTable.h"
#include "mosaic/Runtime/TensorMap.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace mosaic::runtime {

namespace {

/// Portable clusters have at most this many blocks; larger ones must be
/// allowed per function.
constexpr uint64_t kPortableClusterSize = 8;

/// A CUBIN is an ELF file; PTX is text.
constexpr std::string_view kElfMagic = "\177ELF";

uint64_t product(const std::array<uint32_t, 3> &dims) {
  return uint64_t(dims[0]) * dims[1] * dims[2];
}

std::string describeDevice(const Context &context) {
  return "device " + std::to_string(context.ordinal()) + " (" + context.name() +
         ")";
}

/// An `sm_XY` CUBIN runs on compute capability X.Y' with Y' >= Y (`sm_XYf`
/// likewise, within the family); an `sm_XYa` one only on X.Y exactly. PTX,
/// which the driver compiles for the device, is held to the same rule.
Status checkArchitecture(const Manifest &manifest, const Context &context) {
  int compiled = manifest.archNumber;
  int device = context.computeCapability();
  bool runs = manifest.archSuffix == 'a'
                  ? device == compiled
                  : device / 10 == compiled / 10 && device >= compiled;
  if (runs)
    return Status();
  return Error{"`" + manifest.entry + "` is compiled for " + manifest.arch +
               ", but " + describeDevice(context) + " is sm_" +
               std::to_string(device)};
}

Status checkLaunchShape(const Manifest &manifest, const Context &context,
                        const Driver &cuda, CUfunction function) {
  static constexpr CUdevice_attribute kBlockLimits[] = {
      CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
      CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
  static constexpr CUdevice_attribute kGridLimits[] = {
      CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
      CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
  std::array<uint32_t, 3> blockLimit{}, gridLimit{};
  for (int d = 0; d < 3; ++d) {
    Expected<int> block = context.attribute(kBlockLimits[d], "block limit");
    MOSAIC_RETURN_IF_ERROR(block);
    Expected<int> grid = context.attribute(kGridLimits[d], "grid limit");
    MOSAIC_RETURN_IF_ERROR(grid);
    blockLimit[d] = static_cast<uint32_t>(*block);
    gridLimit[d] = static_cast<uint32_t>(*grid);
  }
  for (int d = 0; d < 3; ++d) {
    if (manifest.block[d] > blockLimit[d])
      return Error{"`block` " + formatList(manifest.block) + " exceeds " +
                   describeDevice(context) + "'s limit " +
                   formatList(blockLimit)};
    if (manifest.grid[d] > gridLimit[d])
      return Error{"`grid` " + formatList(manifest.grid) + " exceeds " +
                   describeDevice(context) + "'s limit " +
                   formatList(gridLimit)};
  }

  auto functionAttribute = [&](CUfunction_attribute attribute,
                               const char *what) -> Expected<int> {
    int value = 0;
    MOSAIC_RETURN_IF_ERROR(
        cuda.check(cuda.cuFuncGetAttribute(&value, attribute, function),
                   std::string("cuFuncGetAttribute(") + what + ")"));
    return value;
  };
  Expected<int> maxThreads = functionAttribute(
      CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block");
  MOSAIC_RETURN_IF_ERROR(maxThreads);
  if (product(manifest.block) > static_cast<uint64_t>(*maxThreads)) {
    Expected<int> registers =
        functionAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS, "registers");
    MOSAIC_RETURN_IF_ERROR(registers);
    return Error{"`block` " + formatList(manifest.block) + " has " +
                 std::to_string(product(manifest.block)) + " threads, but `" +
                 manifest.entry + "` can run at most " +
                 std::to_string(*maxThreads) + " per block on " +
                 describeDevice(context) + " (it uses " +
                 std::to_string(*registers) + " registers per thread)"};
  }

  Expected<int> staticSmem =
      functionAttribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "static smem");
  MOSAIC_RETURN_IF_ERROR(staticSmem);
  Expected<int> smemLimit =
      context.attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                        "shared memory per block");
  MOSAIC_RETURN_IF_ERROR(smemLimit);
  uint64_t smem = uint64_t(manifest.dynamicSmemBytes) + *staticSmem;
  if (smem > static_cast<uint64_t>(*smemLimit))
    return Error{"`" + manifest.entry + "` needs " +
                 std::to_string(manifest.dynamicSmemBytes) +
                 " bytes of dynamic and " + std::to_string(*staticSmem) +
                 " bytes of static shared memory, but " +
                 describeDevice(context) + " allows at most " +
                 std::to_string(*smemLimit) + " per block"};
  return Status();
}

/// The file to load: the CUBIN on a GPU; on the emulator, which runs PTX
/// text only, the manifest's `ptx`, or its `cubin` when that is PTX text
/// (which the format allows) and there is no `ptx`.
Expected<std::string> moduleImage(const Manifest &manifest,
                                  const Driver &cuda) {
  if (!cuda.isEmulator())
    return manifest.cubinPath;
  if (!manifest.ptxPath.empty())
    return manifest.ptxPath;
  Expected<std::string> cubin = readFile(manifest.cubinPath);
  MOSAIC_RETURN_IF_ERROR(cubin);
  if (cubin->compare(0, kElfMagic.size(), kElfMagic) != 0)
    return manifest.cubinPath;
  return Error{"the emulator runs PTX, but `" + manifest.cubinPath +
               "` is a CUBIN and the manifest names no `ptx`; recompile `" +
               manifest.entry +
               "` with this mosaic-compile, which writes the PTX beside the "
               "CUBIN"};
}

/// The driver's view of `pointer`: device memory of this context's device,
/// with the whole buffer inside one allocation.
Status checkDeviceMemory(const Context &context, const BufferParameter &buffer,
                         CUdeviceptr pointer) {
  const Driver &cuda = context.driver();
  std::string where = "parameter " + std::to_string(buffer.index) + ": " +
                      formatAddress(pointer);
  unsigned memoryType = 0;
  CUresult result = cuda.cuPointerGetAttribute(
      &memoryType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer);
  if (result != CUDA_SUCCESS)
    return Error{where + " is not a device pointer (" +
                 cuda.check(result, "cuPointerGetAttribute").message() + ")"};
  if (memoryType != CU_MEMORYTYPE_DEVICE && memoryType != CU_MEMORYTYPE_UNIFIED)
    return Error{where + " is host memory; the kernel needs device memory"};
  int ordinal = -1;
  MOSAIC_RETURN_IF_ERROR(cuda.check(
      cuda.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 pointer),
      "cuPointerGetAttribute(" + formatAddress(pointer) + ", device ordinal)"));
  if (ordinal != context.ordinal())
    return Error{where + " is memory of device " + std::to_string(ordinal) +
                 ", but the kernel runs on " + describeDevice(context)};
  CUdeviceptr base = 0;
  size_t size = 0;
  MOSAIC_RETURN_IF_ERROR(
      cuda.check(cuda.cuMemGetAddressRange(&base, &size, pointer),
                 "cuMemGetAddressRange(" + formatAddress(pointer) + ")"));
  uint64_t available = base + size - pointer;
  if (available < buffer.byteSize())
    return Error{where + " has " + std::to_string(available) +
                 " bytes left in its allocation, but the kernel accesses a " +
                 buffer.describe()};
  return Status();
}

} // namespace

Expected<Kernel> Kernel::load(const Context &context, Manifest manifest) {
  const Driver &cuda = context.driver();
  MOSAIC_RETURN_IF_ERROR(context.makeCurrent());
  Kernel kernel;
  kernel.context = &context;
  kernel.description = std::make_unique<Manifest>(std::move(manifest));
  const Manifest &m = *kernel.description;
  MOSAIC_RETURN_IF_ERROR(checkArchitecture(m, context));

  Expected<std::string> imagePath = moduleImage(m, cuda);
  MOSAIC_RETURN_IF_ERROR(imagePath);
  Expected<std::string> image = readFile(*imagePath);
  MOSAIC_RETURN_IF_ERROR(image);
  image->push_back('\0'); // PTX text must end in NUL; a CUBIN ignores it.
  char log[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log) - 1))};
  Status loaded =
      cuda.check(cuda.cuModuleLoadDataEx(&kernel.module, image->data(), 2,
                                         options, values),
                 "cuModuleLoadDataEx(`" + *imagePath + "`)");
  // The JIT log follows the message, unless the message has it already (the
  // emulator's reason, which `check` adds, is the log).
  if (!loaded.ok() && log[0] && loaded.message().find(log) == std::string::npos)
    return Error{loaded.message() + ": " + log};
  MOSAIC_RETURN_IF_ERROR(loaded);
  MOSAIC_RETURN_IF_ERROR(
      cuda.check(cuda.cuModuleGetFunction(&kernel.function, kernel.module,
                                          m.entry.c_str()),
                 "`" + *imagePath + "` has no kernel `" + m.entry +
                     "` (cuModuleGetFunction)"));
  MOSAIC_RETURN_IF_ERROR(checkLaunchShape(m, context, cuda, kernel.function));

  MOSAIC_RETURN_IF_ERROR(cuda.check(
      cuda.cuFuncSetAttribute(kernel.function,
                              CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              static_cast<int>(m.dynamicSmemBytes)),
      "cuFuncSetAttribute(`" + m.entry + "`, max dynamic shared memory " +
          std::to_string(m.dynamicSmemBytes) + " bytes)"));
  uint64_t clusterSize = product(m.cluster);
  if (clusterSize > 1) {
    Expected<int> clusters =
        context.attribute(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, "cluster launch");
    MOSAIC_RETURN_IF_ERROR(clusters);
    if (!*clusters)
      return Error{"`cluster` is " + formatList(m.cluster) + ", but " +
                   describeDevice(context) + " cannot launch clusters"};
  }
  if (clusterSize > kPortableClusterSize)
    MOSAIC_RETURN_IF_ERROR(cuda.check(
        cuda.cuFuncSetAttribute(
            kernel.function,
            CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
        "cuFuncSetAttribute(`" + m.entry + "`, non-portable cluster size " +
            std::to_string(clusterSize) + ")"));
  return kernel;
}

Kernel::Kernel(Kernel &&other) noexcept
    : context(other.context), description(std::move(other.description)),
      module(other.module), function(other.function) {
  other.module = nullptr;
}

Kernel::~Kernel() {
  // A failure to unload leaves nothing to report to.
  if (module)
    (void)context->driver().cuModuleUnload(module);
}

Expected<Launch>
Kernel::prepare(const std::vector<BufferArgument> &arguments) const {
  if (std::optional<unsigned> table = description->collectiveParameter())
    return Error{"`" + description->entry + "` spans devices (parameter " +
                 std::to_string(*table) +
                 " is its collective table): launch it on every device with "
                 "a multi-device launch (DeviceGroup, or Python's "
                 "mosaic_gpu.Devices), not on one device"};
  return prepareWith(arguments, nullptr);
}

Expected<Launch> Kernel::prepare(const std::vector<BufferArgument> &arguments,
                                 const CollectiveArguments &collective) const {
  return prepareWith(arguments, &collective);
}

/// Checks `collective` against the kernel's symmetric buffers and the
/// arguments given for them.
static Status checkCollective(const Manifest &m,
                              const std::vector<BufferArgument> &arguments,
                              const CollectiveArguments &collective) {
  if (collective.deviceCount == 0 ||
      collective.deviceId >= collective.deviceCount)
    return Error{"device id " + std::to_string(collective.deviceId) +
                 " of a launch on " + std::to_string(collective.deviceCount) +
                 " devices"};
  std::vector<unsigned> symmetric = m.symmetricBuffers();
  if (collective.peers.size() != symmetric.size())
    return Error{"`" + m.entry + "` has " + std::to_string(symmetric.size()) +
                 " symmetric buffer parameters, but the launch gives peers "
                 "for " +
                 std::to_string(collective.peers.size())};
  for (size_t s = 0; s < symmetric.size(); ++s) {
    const BufferParameter &buffer = m.buffers[symmetric[s]];
    std::string what = "symmetric parameter " + std::to_string(buffer.index);
    const std::vector<CUdeviceptr> &row = collective.peers[s];
    if (row.size() != collective.deviceCount)
      return Error{what + " has " + std::to_string(row.size()) +
                   " peer pointers, expected one per device (" +
                   std::to_string(collective.deviceCount) + ")"};
    for (uint32_t q = 0; q < row.size(); ++q)
      if (row[q] == 0 || row[q] % buffer.alignment != 0)
        return Error{what + ": device " + std::to_string(q) + "'s copy " +
                     formatAddress(row[q]) +
                     (row[q] ? " is not aligned to " +
                                   std::to_string(buffer.alignment) + " bytes"
                             : " is null")};
    if (arguments[symmetric[s]].pointer != row[collective.deviceId])
      return Error{what + ": the argument " +
                   formatAddress(arguments[symmetric[s]].pointer) +
                   " is not this device's copy of the symmetric buffer " +
                   formatAddress(row[collective.deviceId])};
  }
  return Status();
}

Expected<Launch>
Kernel::prepareWith(const std::vector<BufferArgument> &arguments,
                    const CollectiveArguments *collective) const {
  const Manifest &m = *description;
  const Driver &cuda = context->driver();
  MOSAIC_RETURN_IF_ERROR(checkArguments(m, arguments));
  bool spansDevices = m.collectiveParameter().has_value();
  if (spansDevices)
    MOSAIC_RETURN_IF_ERROR(checkCollective(m, arguments, *collective));
  MOSAIC_RETURN_IF_ERROR(context->makeCurrent());
  for (size_t i = 0; i < arguments.size(); ++i)
    if (!(spansDevices && m.buffers[i].symmetric))
      MOSAIC_RETURN_IF_ERROR(
          checkDeviceMemory(*context, m.buffers[i], arguments[i].pointer));

  Launch launch;
  launch.cuda = &cuda;
  launch.function = function;
  launch.manifest = &m;
  for (const BufferArgument &argument : arguments)
    launch.pointers.push_back(argument.pointer);
  auto encode = [&](const TensorMapDescription &map, CUdeviceptr address,
                    CUtensorMap &out, const std::string &where) -> Status {
    const BufferParameter &buffer = *m.bufferAt(map.buffer);
    Expected<TensorMapEncodeArgs> args =
        tensorMapEncodeArgs(map, buffer, address);
    MOSAIC_RETURN_IF_ERROR(args);
    return cuda.check(
        cuda.cuTensorMapEncodeTiled(
            &out, args->dataType, args->rank, args->globalAddress,
            args->globalDim.data(), args->globalStrides.data(),
            args->boxDim.data(), args->elementStrides.data(), args->interleave,
            args->swizzle, args->l2Promotion, args->oobFill),
        "tensor map " + std::to_string(map.index) + " for parameter " +
            std::to_string(buffer.index) + where + ": cuTensorMapEncodeTiled");
  };
  launch.tensorMaps.resize(m.tensorMaps.size());
  for (const TensorMapDescription &map : m.tensorMaps)
    if (!map.peer)
      MOSAIC_RETURN_IF_ERROR(
          encode(map, launch.pointers[m.parameters[map.buffer].slot],
                 launch.tensorMaps[map.index], ""));

  if (spansDevices) {
    // Peer map p over symmetric buffer s: one per device q, over peers[s][q].
    std::vector<unsigned> symmetric = m.symmetricBuffers();
    std::vector<std::vector<CUtensorMap>> peerMaps;
    for (unsigned j : m.peerTensorMaps()) {
      const TensorMapDescription &map = m.tensorMaps[j];
      unsigned slot = m.parameters[map.buffer].slot;
      size_t s = 0;
      while (symmetric[s] != slot)
        ++s;
      std::vector<CUtensorMap> row(collective->deviceCount);
      for (uint32_t q = 0; q < collective->deviceCount; ++q)
        MOSAIC_RETURN_IF_ERROR(encode(map, collective->peers[s][q], row[q],
                                      " on device " + std::to_string(q)));
      peerMaps.push_back(std::move(row));
    }
    Expected<std::vector<uint8_t>> bytes =
        encodeCollectiveTable(collective->deviceId, collective->deviceCount,
                              collective->peers, peerMaps);
    MOSAIC_RETURN_IF_ERROR(bytes);
    Expected<DeviceBuffer> buffer =
        DeviceBuffer::allocate(*context, bytes->size());
    MOSAIC_RETURN_IF_ERROR(buffer);
    MOSAIC_RETURN_IF_ERROR(buffer->upload(bytes->data()));
    CUdeviceptr pointer = buffer->pointer();
    launch.table = std::make_unique<Launch::Table>(
        Launch::Table{std::move(*buffer), pointer});
  }
  for (const Parameter &parameter : m.parameters) {
    if (parameter.kind == Parameter::Kind::Buffer)
      launch.values.push_back(&launch.pointers[parameter.slot]);
    else if (parameter.kind == Parameter::Kind::TensorMap)
      launch.values.push_back(&launch.tensorMaps[parameter.slot]);
    else
      launch.values.push_back(&launch.table->pointer);
  }
  return launch;
}

Status Launch::run(CUstream stream) const {
  CUlaunchConfig config = {};
  config.gridDimX = manifest->grid[0];
  config.gridDimY = manifest->grid[1];
  config.gridDimZ = manifest->grid[2];
  config.blockDimX = manifest->block[0];
  config.blockDimY = manifest->block[1];
  config.blockDimZ = manifest->block[2];
  config.sharedMemBytes = manifest->dynamicSmemBytes;
  config.hStream = stream;
  CUlaunchAttribute cluster = {};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = manifest->cluster[0];
  cluster.value.clusterDim.y = manifest->cluster[1];
  cluster.value.clusterDim.z = manifest->cluster[2];
  if (product(manifest->cluster) > 1) {
    config.attrs = &cluster;
    config.numAttrs = 1;
  }
  CUresult result = cuda->cuLaunchKernelEx(
      &config, function, const_cast<void **>(values.data()), nullptr);
  if (result == CUDA_SUCCESS)
    return Status();
  return cuda->check(result, "cuLaunchKernelEx(`" + manifest->entry +
                                 "`, grid " + formatList(manifest->grid) +
                                 ", block " + formatList(manifest->block) +
                                 ", cluster " + formatList(manifest->cluster) +
                                 ", " +
                                 std::to_string(manifest->dynamicSmemBytes) +
                                 " bytes of dynamic shared memory)");
}

} // namespace mosaic::runtime
