//===- DriverLaunch.cpp - Kernel launches ---------------------------------===//
//
// cuda.h's execution control: cuLaunchKernel and cuLaunchKernelEx check
// the launch against the device and the kernel, then queue it on its
// stream (DriverQueue.cpp), to run on the context's device.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>
#include <cstring>

using namespace mosaic::emulator;
using namespace mosaic::emulator::driver;

namespace {

/// The parameter buffer of a launch, from `kernelParams` (one pointer per
/// parameter) or from `extra` (one buffer laid out as the kernel's).
CUresult parameterBuffer(const char *function, const KernelInfo &info,
                         void **kernelParams, void **extra,
                         std::vector<uint8_t> &out) {
  out.assign(info.parameterBytes, 0);
  if (kernelParams && extra)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "pass the parameters in `kernelParams` or in `extra`, not "
                "both");
  if (kernelParams) {
    for (size_t i = 0; i < info.parameters.size(); ++i) {
      const KernelParameter &p = info.parameters[i];
      if (!kernelParams[i])
        return fail(CUDA_ERROR_INVALID_VALUE, function,
                    "`kernelParams[" + std::to_string(i) + "]` (parameter `" +
                        p.name + "` of `" + info.name + "`) is null");
      std::memcpy(out.data() + p.offset, kernelParams[i], p.size);
    }
    return CUDA_SUCCESS;
  }
  if (extra) {
    const void *buffer = nullptr;
    const size_t *size = nullptr;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        buffer = extra[i + 1];
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
        size = static_cast<const size_t *>(extra[i + 1]);
      else
        return fail(CUDA_ERROR_INVALID_VALUE, function,
                    "`extra[" + std::to_string(i) + "]` is " +
                        hex(reinterpret_cast<uint64_t>(extra[i])) +
                        ", not CU_LAUNCH_PARAM_BUFFER_POINTER, "
                        "CU_LAUNCH_PARAM_BUFFER_SIZE or CU_LAUNCH_PARAM_END");
    }
    if (!buffer || !size)
      return fail(CUDA_ERROR_INVALID_VALUE, function,
                  "`extra` needs both CU_LAUNCH_PARAM_BUFFER_POINTER and "
                  "CU_LAUNCH_PARAM_BUFFER_SIZE");
    if (*size < info.parameterBytes)
      return fail(CUDA_ERROR_INVALID_VALUE, function,
                  "the `extra` parameter buffer has " + std::to_string(*size) +
                      " bytes; `" + info.name + "` takes " +
                      std::to_string(info.parameterBytes));
    std::memcpy(out.data(), buffer, info.parameterBytes);
    return CUDA_SUCCESS;
  }
  if (!info.parameters.empty())
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "`" + info.name + "` takes " +
                    std::to_string(info.parameters.size()) +
                    " parameters, but neither `kernelParams` nor `extra` "
                    "was given");
  return CUDA_SUCCESS;
}

struct LaunchRequest {
  std::array<uint32_t, 3> grid;
  std::array<uint32_t, 3> block;
  uint32_t sharedBytes = 0;
  CUstream stream = nullptr;
  /// From CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION.
  std::optional<std::array<uint32_t, 3>> cluster;
  /// Events the launch records when it completes.
  std::vector<Event *> completionEvents;
};

CUresult checkShape(const char *function, const Function &f,
                    const LaunchRequest &request) {
  const KernelInfo &info = *f.info;
  for (int d = 0; d < 3; ++d)
    if (request.grid[d] == 0 ||
        request.grid[d] > static_cast<uint32_t>(kMaxGridDim[d]))
      return fail(CUDA_ERROR_INVALID_VALUE, function,
                  "grid " + dimsText(request.grid) +
                      " is outside the device's (1..2147483647, 1..65535, "
                      "1..65535)");
  for (int d = 0; d < 3; ++d)
    if (request.block[d] == 0 ||
        request.block[d] > static_cast<uint32_t>(kMaxBlockDim[d]))
      return fail(CUDA_ERROR_INVALID_VALUE, function,
                  "block " + dimsText(request.block) +
                      " is outside the device's (1..1024, 1..1024, 1..64)");
  uint64_t threads =
      uint64_t(request.block[0]) * request.block[1] * request.block[2];
  if (threads >
      std::min<uint64_t>(kMaxThreadsPerBlock, info.maxThreadsPerBlock))
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "block " + dimsText(request.block) + " has " +
                    std::to_string(threads) + " threads; `" + info.name +
                    "` allows at most " +
                    std::to_string(std::min<uint32_t>(
                        kMaxThreadsPerBlock, info.maxThreadsPerBlock)));
  if (request.sharedBytes > static_cast<uint32_t>(f.maxDynamicSharedBytes))
    return fail(
        CUDA_ERROR_INVALID_VALUE, function,
        std::to_string(request.sharedBytes) +
            " bytes of dynamic shared memory exceed the " +
            std::to_string(f.maxDynamicSharedBytes) + " that `" + info.name +
            "` allows; raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES "
            "with cuFuncSetAttribute first (up to " +
            std::to_string(kSharedPerBlockOptin) +
            " bytes minus the static shared memory)");
  if (uint64_t(info.staticSharedBytes) + request.sharedBytes >
      uint64_t(kSharedPerBlockOptin))
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                std::to_string(info.staticSharedBytes) +
                    " bytes of static and " +
                    std::to_string(request.sharedBytes) +
                    " of dynamic shared memory exceed the " +
                    std::to_string(kSharedPerBlockOptin) + " a block can have");
  return CUDA_SUCCESS;
}

/// The launch's cluster shape: the attribute's, or the kernel's required
/// one, checked against the grid and the cluster size limits.
CUresult clusterShape(const char *function, const Function &f,
                      const LaunchRequest &request,
                      std::array<uint32_t, 3> &cluster) {
  const std::array<uint32_t, 3> none{0, 0, 0};
  const std::array<uint32_t, 3> &required = f.info->requiredCluster != none
                                                ? f.info->requiredCluster
                                                : f.requiredCluster;
  bool anyRequired = required != none;
  if (anyRequired && (required[0] == 0 || required[1] == 0 || required[2] == 0))
    return fail(CUDA_ERROR_INVALID_CLUSTER_SIZE, function,
                "the required cluster dimensions " + dimsText(required) +
                    " of `" + f.info->name +
                    "` must be all zero or all positive");
  if (request.cluster) {
    cluster = *request.cluster;
    if (cluster[0] == 0 || cluster[1] == 0 || cluster[2] == 0)
      return fail(CUDA_ERROR_INVALID_CLUSTER_SIZE, function,
                  "cluster " + dimsText(cluster) + " has a zero dimension");
    if (anyRequired && cluster != required)
      return fail(CUDA_ERROR_INVALID_CLUSTER_SIZE, function,
                  "cluster " + dimsText(cluster) + " differs from the " +
                      dimsText(required) + " that `" + f.info->name +
                      "` requires");
  } else if (anyRequired) {
    cluster = required;
  } else if (f.info->explicitCluster) {
    return fail(CUDA_ERROR_INVALID_CLUSTER_SIZE, function,
                "`" + f.info->name +
                    "` is declared .explicitcluster: launch it with "
                    "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION");
  } else {
    cluster = {1, 1, 1};
  }
  uint64_t size = uint64_t(cluster[0]) * cluster[1] * cluster[2];
  if (f.info->maxClusterRank && size > f.info->maxClusterRank)
    return fail(CUDA_ERROR_INVALID_CLUSTER_SIZE, function,
                "cluster " + dimsText(cluster) + " has " +
                    std::to_string(size) + " blocks; `" + f.info->name +
                    "` is declared .maxclusterrank " +
                    std::to_string(f.info->maxClusterRank));
  uint32_t limit = f.nonPortableClusterSizeAllowed ? kNonPortableClusterSize
                                                   : kPortableClusterSize;
  if (size > limit)
    return fail(
        CUDA_ERROR_INVALID_CLUSTER_SIZE, function,
        "cluster " + dimsText(cluster) + " has " + std::to_string(size) +
            " blocks; at most " + std::to_string(limit) +
            (f.nonPortableClusterSizeAllowed
                 ? std::string()
                 : std::string(" (up to 16 after setting "
                               "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_"
                               "ALLOWED)")));
  for (int d = 0; d < 3; ++d)
    if (request.grid[d] % cluster[d] != 0)
      return fail(CUDA_ERROR_INVALID_CLUSTER_SIZE, function,
                  "grid " + dimsText(request.grid) +
                      " is not divisible by cluster " + dimsText(cluster));
  return CUDA_SUCCESS;
}

CUresult launchFunction(const char *function, CUfunction handle,
                        const LaunchRequest &request, void **kernelParams,
                        void **extra) {
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(function, context));
  Function *f = nullptr;
  MOSAIC_EMU_TRY(findFunction(function, handle, f));
  MOSAIC_EMU_TRY(checkStream(function, request.stream));
  if (Stream *stream = streamKey(request.stream);
      stream && stream->context != context)
    return fail(CUDA_ERROR_INVALID_HANDLE, function,
                "stream " + hex(reinterpret_cast<uint64_t>(request.stream)) +
                    " belongs to a context of device " +
                    std::to_string(stream->context->device) +
                    ", not to the current context (device " +
                    std::to_string(context->device) + ")");
  MOSAIC_EMU_TRY(checkShape(function, *f, request));
  LaunchConfig config;
  MOSAIC_EMU_TRY(clusterShape(function, *f, request, config.cluster));
  MOSAIC_EMU_TRY(parameterBuffer(function, *f->info, kernelParams, extra,
                                 config.parameters));
  config.grid = request.grid;
  config.block = request.block;
  config.dynamicSharedBytes = request.sharedBytes;

  QueuedWork work;
  work.context = context;
  work.function = function;
  work.module = f->module->module;
  work.launch.module = work.module.get();
  work.launch.kernel = f->info->name;
  work.launch.config = std::move(config);
  work.launch.device = context->device;
  for (Event *event : request.completionEvents)
    forgetEvent(event);
  work.completionEvents = request.completionEvents;
  uint64_t sequence = queueWork(request.stream, std::move(work));
  for (Event *event : request.completionEvents) {
    event->recorded.reset();
    event->pending = sequence;
  }
  return CUDA_SUCCESS;
}

} // namespace

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuLaunchKernel(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
    unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
    unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
    void **kernelParams, void **extra) {
  Lock lock(state().mutex);
  LaunchRequest request;
  request.grid = {gridDimX, gridDimY, gridDimZ};
  request.block = {blockDimX, blockDimY, blockDimZ};
  request.sharedBytes = sharedMemBytes;
  request.stream = hStream;
  return launchFunction(__func__, f, request, kernelParams, extra);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                 void **kernelParams, void **extra) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, config, "config"));
  if (config->numAttrs > 0 && !config->attrs)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`config->numAttrs` is " + std::to_string(config->numAttrs) +
                    " but `config->attrs` is null");
  LaunchRequest request;
  request.grid = {config->gridDimX, config->gridDimY, config->gridDimZ};
  request.block = {config->blockDimX, config->blockDimY, config->blockDimZ};
  request.sharedBytes = config->sharedMemBytes;
  request.stream = config->hStream;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute &attribute = config->attrs[i];
    const CUlaunchAttributeValue &value = attribute.value;
    Event *event = nullptr;
    switch (attribute.id) {
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      request.cluster = std::array<uint32_t, 3>{
          value.clusterDim.x, value.clusterDim.y, value.clusterDim.z};
      break;
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
      MOSAIC_EMU_TRY(findEvent(__func__, value.programmaticEvent.event, event));
      request.completionEvents.push_back(event);
      break;
    case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
      MOSAIC_EMU_TRY(
          findEvent(__func__, value.launchCompletionEvent.event, event));
      request.completionEvents.push_back(event);
      break;
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
      if (value.cooperative)
        return fail(CUDA_ERROR_NOT_SUPPORTED, __func__,
                    "the emulator does not run cooperative launches");
      break;
    case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
      if (value.deviceUpdatableKernelNode.deviceUpdatable)
        return fail(CUDA_ERROR_NOT_SUPPORTED, __func__,
                    "device-updatable kernel nodes belong to graphs, which "
                    "the emulator does not have");
      break;
    // Hints and orderings that a device running each stream's launches one
    // after another satisfies as it is: the regular cluster shape is a valid
    // choice for a preferred one, and a launch that waits for its predecessor
    // is a valid programmatic serialization.
    case CU_LAUNCH_ATTRIBUTE_IGNORE:
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
      break;
    default:
      return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                  "`config->attrs[" + std::to_string(i) + "].id` " +
                      std::to_string(int(attribute.id)) +
                      " is not a CUlaunchAttributeID");
    }
  }
  return launchFunction(__func__, f, request, kernelParams, extra);
}
