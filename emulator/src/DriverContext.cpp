//===- DriverContext.cpp - Contexts ---------------------------------------===//
//
// cuda.h's primary context management and context management: one
// primary context per device and any number of created ones, current per
// host thread. A context's memory belongs to its device.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>

using namespace mosaic::emulator;
using namespace mosaic::emulator::driver;

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx,
                                                            CUdevice dev) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, pctx, "pctx"));
  ++s.primaryRetains[dev];
  *pctx = reinterpret_cast<CUcontext>(&primaryContext(dev));
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  if (s.primaryRetains[dev] == 0)
    return fail(CUDA_ERROR_INVALID_CONTEXT, __func__,
                "the primary context of device " + std::to_string(dev) +
                    " is not retained");
  // The last release destroys the primary context's resources, as on a GPU,
  // once its queued work ran.
  if (s.primaryRetains[dev] == 1)
    runQueuedWork();
  if (--s.primaryRetains[dev] == 0)
    destroyResources(&primaryContext(dev));
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  destroyResources(&primaryContext(dev));
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, flags, "flags"));
  MOSAIC_EMU_TRY(nonNull(__func__, active, "active"));
  *flags = primaryContext(dev).flags;
  *active = s.primaryRetains[dev] > 0;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  primaryContext(dev).flags = flags;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuCtxCreate(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
            unsigned int flags, CUdevice dev) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, pctx, "pctx"));
  if (ctxCreateParams && (ctxCreateParams->numExecAffinityParams > 0 ||
                          ctxCreateParams->cigParams))
    return fail(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, __func__,
                "the emulator has no execution affinity or CIG contexts");
  auto context = std::make_unique<Context>();
  context->device = static_cast<uint32_t>(dev);
  context->flags = flags;
  Context *handle = context.get();
  s.contexts.emplace(handle, std::move(context));
  contextStack.push_back(handle);
  *pctx = reinterpret_cast<CUcontext>(handle);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  Context *context = reinterpret_cast<Context *>(ctx);
  auto found = s.contexts.find(context);
  if (found == s.contexts.end() && live(context))
    return fail(CUDA_ERROR_INVALID_CONTEXT, __func__,
                "the primary context is released with "
                "cuDevicePrimaryCtxRelease, not destroyed");
  if (found == s.contexts.end())
    return fail(CUDA_ERROR_INVALID_CONTEXT, __func__,
                "context " + hex(reinterpret_cast<uint64_t>(ctx)) +
                    " is not a live context");
  destroyResources(context);
  s.contexts.erase(found);
  contextStack.erase(
      std::remove(contextStack.begin(), contextStack.end(), context),
      contextStack.end());
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  Context *context = nullptr;
  MOSAIC_EMU_TRY(findContext(__func__, ctx, context));
  contextStack.push_back(context);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  if (contextStack.empty())
    return fail(CUDA_ERROR_INVALID_CONTEXT, __func__,
                "the calling thread has no current context");
  if (pctx)
    *pctx = reinterpret_cast<CUcontext>(contextStack.back());
  contextStack.pop_back();
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  Context *context = reinterpret_cast<Context *>(ctx);
  if (!context) {
    if (!contextStack.empty())
      contextStack.pop_back();
    return CUDA_SUCCESS;
  }
  if (!live(context))
    return fail(CUDA_ERROR_INVALID_CONTEXT, __func__,
                "context " + hex(reinterpret_cast<uint64_t>(ctx)) +
                    " is not a live context");
  if (contextStack.empty())
    contextStack.push_back(context);
  else
    contextStack.back() = context;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, pctx, "pctx"));
  *pctx = reinterpret_cast<CUcontext>(
      contextStack.empty() ? nullptr : contextStack.back());
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, device, "device"));
  *device = static_cast<CUdevice>(context->device);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device,
                                                     CUcontext ctx) {
  Lock lock(state().mutex);
  Context *context = reinterpret_cast<Context *>(ctx);
  if (context) {
    MOSAIC_EMU_TRY(requireInit(__func__));
    MOSAIC_EMU_TRY(usable(__func__, context));
  } else {
    MOSAIC_EMU_TRY(current(__func__, context));
  }
  MOSAIC_EMU_TRY(nonNull(__func__, device, "device"));
  *device = static_cast<CUdevice>(context->device);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxSynchronize(void) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(observeQueuedWork(__func__));
  Context *context = nullptr;
  return current(__func__, context);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(observeQueuedWork(__func__));
  Context *context = reinterpret_cast<Context *>(ctx);
  if (!context)
    return current(__func__, context);
  MOSAIC_EMU_TRY(requireInit(__func__));
  return usable(__func__, context);
}
