//===- DriverEntryPoints.cpp - Legacy symbols and cuGetProcAddress --------===//
//
// The unversioned symbols older programs link against, and
// cuGetProcAddress, which finds every entry point by name and version.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <climits>
#include <cstring>

using namespace mosaic::emulator;
using namespace mosaic::emulator::driver;

//===----------------------------------------------------------------------===//
// Legacy entry points: the unversioned symbols, with cuda.h's signatures
// for them (its __CUDA_API_VERSION_INTERNAL section). Those whose signature
// did not change forward as they are; those with 32-bit device pointers
// and sizes widen their arguments and narrow their results. The emulator's
// device addresses are host addresses, above 4 GiB, so the 32-bit
// cuMemAlloc cannot return one and fails instead.
//===----------------------------------------------------------------------===//

#undef cuDeviceTotalMem
#undef cuCtxCreate
#undef cuCtxDestroy
#undef cuCtxPopCurrent
#undef cuCtxPushCurrent
#undef cuModuleGetGlobal
#undef cuMemGetInfo
#undef cuMemAlloc
#undef cuMemFree
#undef cuMemGetAddressRange
#undef cuMemAllocHost
#undef cuMemcpyHtoD
#undef cuMemcpyDtoH
#undef cuMemcpyDtoD
#undef cuMemcpyHtoDAsync
#undef cuMemcpyDtoHAsync
#undef cuMemcpyDtoDAsync
#undef cuMemsetD8
#undef cuMemsetD16
#undef cuMemsetD32
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuEventElapsedTime
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
#undef cuDeviceGetUuid
#undef cuGetProcAddress

namespace {
/// CUdeviceptr_v1 of cuda.h's legacy declarations.
using LegacyDevicePtr = unsigned int;

unsigned int narrow(uint64_t value) {
  return value > UINT_MAX ? UINT_MAX : static_cast<unsigned int>(value);
}
} // namespace

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceTotalMem(unsigned int *bytes,
                                                    CUdevice dev) {
  size_t total = 0;
  MOSAIC_EMU_TRY(cuDeviceTotalMem_v2(bytes ? &total : nullptr, dev));
  *bytes = narrow(total);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxCreate(CUcontext *pctx,
                                               unsigned int flags,
                                               CUdevice dev) {
  return cuCtxCreate_v4(pctx, nullptr, flags, dev);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx,
                                                  unsigned int flags,
                                                  CUdevice dev) {
  return cuCtxCreate_v4(pctx, nullptr, flags, dev);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
               unsigned int flags, CUdevice dev) {
  CUctxCreateParams params{paramsArray, numParams, nullptr};
  return cuCtxCreate_v4(pctx, &params, flags, dev);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) {
  return cuCtxDestroy_v2(ctx);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx) {
  return cuCtxPopCurrent_v2(pctx);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  return cuCtxPushCurrent_v2(ctx);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuModuleGetGlobal(LegacyDevicePtr *dptr,
                                                     unsigned int *bytes,
                                                     CUmodule hmod,
                                                     const char *name) {
  CUdeviceptr address = 0;
  size_t size = 0;
  MOSAIC_EMU_TRY(cuModuleGetGlobal_v2(&address, &size, hmod, name));
  if (dptr)
    *dptr = narrow(address);
  if (bytes)
    *bytes = narrow(size);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemGetInfo(unsigned int *free,
                                                unsigned int *total) {
  size_t freeBytes = 0;
  size_t totalBytes = 0;
  MOSAIC_EMU_TRY(cuMemGetInfo_v2(free ? &freeBytes : nullptr,
                                 total ? &totalBytes : nullptr));
  *free = narrow(freeBytes);
  *total = narrow(totalBytes);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemAlloc(LegacyDevicePtr *dptr,
                                              unsigned int bytesize) {
  CUdeviceptr address = 0;
  MOSAIC_EMU_TRY(cuMemAlloc_v2(dptr ? &address : nullptr, bytesize));
  if (address > UINT_MAX) {
    (void)cuMemFree_v2(address);
    Lock lock(state().mutex);
    return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc",
                "the 32-bit legacy entry point cannot return the emulator's "
                "64-bit device addresses; use cuMemAlloc_v2 (what cuda.h's "
                "cuMemAlloc names)");
  }
  *dptr = static_cast<LegacyDevicePtr>(address);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemFree(LegacyDevicePtr dptr) {
  return cuMemFree_v2(dptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemGetAddressRange(LegacyDevicePtr *pbase,
                                                        unsigned int *psize,
                                                        LegacyDevicePtr dptr) {
  CUdeviceptr base = 0;
  size_t size = 0;
  MOSAIC_EMU_TRY(cuMemGetAddressRange_v2(&base, &size, dptr));
  if (pbase)
    *pbase = narrow(base);
  if (psize)
    *psize = narrow(size);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemAllocHost(void **pp,
                                                  unsigned int bytesize) {
  return cuMemAllocHost_v2(pp, bytesize);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyHtoD(LegacyDevicePtr dstDevice,
                                                const void *srcHost,
                                                unsigned int ByteCount) {
  return cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoH(void *dstHost,
                                                LegacyDevicePtr srcDevice,
                                                unsigned int ByteCount) {
  return cuMemcpyDtoH_v2(dstHost, srcDevice, ByteCount);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoD(LegacyDevicePtr dstDevice,
                                                LegacyDevicePtr srcDevice,
                                                unsigned int ByteCount) {
  return cuMemcpyDtoD_v2(dstDevice, srcDevice, ByteCount);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync(LegacyDevicePtr dstDevice,
                                                     const void *srcHost,
                                                     unsigned int ByteCount,
                                                     CUstream hStream) {
  return cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost,
                                                     LegacyDevicePtr srcDevice,
                                                     unsigned int ByteCount,
                                                     CUstream hStream) {
  return cuMemcpyDtoHAsync_v2(dstHost, srcDevice, ByteCount, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync(LegacyDevicePtr dstDevice,
                                                     LegacyDevicePtr srcDevice,
                                                     unsigned int ByteCount,
                                                     CUstream hStream) {
  return cuMemcpyDtoDAsync_v2(dstDevice, srcDevice, ByteCount, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD8(LegacyDevicePtr dstDevice,
                                              unsigned char uc,
                                              unsigned int N) {
  return cuMemsetD8_v2(dstDevice, uc, N);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD16(LegacyDevicePtr dstDevice,
                                               unsigned short us,
                                               unsigned int N) {
  return cuMemsetD16_v2(dstDevice, us, N);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD32(LegacyDevicePtr dstDevice,
                                               unsigned int ui,
                                               unsigned int N) {
  return cuMemsetD32_v2(dstDevice, ui, N);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
  return cuStreamDestroy_v2(hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
  return cuEventDestroy_v2(hEvent);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds,
                                                      CUevent hStart,
                                                      CUevent hEnd) {
  return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  return cuDevicePrimaryCtxRelease_v2(dev);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) {
  return cuDevicePrimaryCtxReset_v2(dev);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
  return cuDeviceGetUuid_v2(uuid, dev);
}

//===----------------------------------------------------------------------===//
// cuGetProcAddress: every entry point above by base name, in the version
// cudaTypedefs.h gives each signature (PFN_cuMemAlloc_v3020, ...). A
// request gets the newest version not newer than its `cudaVersion`.
//===----------------------------------------------------------------------===//

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol,
                                                    void **pfn, int cudaVersion,
                                                    cuuint64_t flags);

namespace {

struct Procedure {
  const char *name;
  int version;
  void *address;
};

#define MOSAIC_EMU_PROC(name, version, symbol)                                 \
  { name, version, reinterpret_cast<void *>(&symbol) }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
const Procedure kProcedures[] = {
    MOSAIC_EMU_PROC("cuInit", 2000, cuInit),
    MOSAIC_EMU_PROC("cuDriverGetVersion", 2020, cuDriverGetVersion),
    MOSAIC_EMU_PROC("cuGetErrorName", 6000, cuGetErrorName),
    MOSAIC_EMU_PROC("cuGetErrorString", 6000, cuGetErrorString),
    MOSAIC_EMU_PROC("cuGetProcAddress", 11030, cuGetProcAddress),
    MOSAIC_EMU_PROC("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    MOSAIC_EMU_PROC("cuDeviceGetCount", 2000, cuDeviceGetCount),
    MOSAIC_EMU_PROC("cuDeviceGet", 2000, cuDeviceGet),
    MOSAIC_EMU_PROC("cuDeviceGetName", 2000, cuDeviceGetName),
    MOSAIC_EMU_PROC("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    MOSAIC_EMU_PROC("cuDeviceComputeCapability", 2000,
                    cuDeviceComputeCapability),
    MOSAIC_EMU_PROC("cuDeviceTotalMem", 2000, cuDeviceTotalMem),
    MOSAIC_EMU_PROC("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    MOSAIC_EMU_PROC("cuDeviceGetUuid", 9020, cuDeviceGetUuid),
    MOSAIC_EMU_PROC("cuDeviceGetUuid", 11040, cuDeviceGetUuid_v2),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxRelease", 7000,
                    cuDevicePrimaryCtxRelease),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxRelease", 11000,
                    cuDevicePrimaryCtxRelease_v2),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxReset", 7000, cuDevicePrimaryCtxReset),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxReset", 11000,
                    cuDevicePrimaryCtxReset_v2),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxGetState", 7000,
                    cuDevicePrimaryCtxGetState),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxSetFlags", 7000,
                    cuDevicePrimaryCtxSetFlags),
    MOSAIC_EMU_PROC("cuDevicePrimaryCtxSetFlags", 11000,
                    cuDevicePrimaryCtxSetFlags_v2),
    MOSAIC_EMU_PROC("cuCtxCreate", 2000, cuCtxCreate),
    MOSAIC_EMU_PROC("cuCtxCreate", 3020, cuCtxCreate_v2),
    MOSAIC_EMU_PROC("cuCtxCreate", 11040, cuCtxCreate_v3),
    MOSAIC_EMU_PROC("cuCtxCreate", 12050, cuCtxCreate_v4),
    MOSAIC_EMU_PROC("cuCtxDestroy", 2000, cuCtxDestroy),
    MOSAIC_EMU_PROC("cuCtxDestroy", 4000, cuCtxDestroy_v2),
    MOSAIC_EMU_PROC("cuCtxPushCurrent", 2000, cuCtxPushCurrent),
    MOSAIC_EMU_PROC("cuCtxPushCurrent", 4000, cuCtxPushCurrent_v2),
    MOSAIC_EMU_PROC("cuCtxPopCurrent", 2000, cuCtxPopCurrent),
    MOSAIC_EMU_PROC("cuCtxPopCurrent", 4000, cuCtxPopCurrent_v2),
    MOSAIC_EMU_PROC("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    MOSAIC_EMU_PROC("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    MOSAIC_EMU_PROC("cuCtxGetDevice", 2000, cuCtxGetDevice),
    MOSAIC_EMU_PROC("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
    MOSAIC_EMU_PROC("cuCtxSynchronize", 2000, cuCtxSynchronize),
    MOSAIC_EMU_PROC("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),
    MOSAIC_EMU_PROC("cuDeviceCanAccessPeer", 4000, cuDeviceCanAccessPeer),
    MOSAIC_EMU_PROC("cuDeviceGetP2PAttribute", 8000, cuDeviceGetP2PAttribute),
    MOSAIC_EMU_PROC("cuCtxEnablePeerAccess", 4000, cuCtxEnablePeerAccess),
    MOSAIC_EMU_PROC("cuCtxDisablePeerAccess", 4000, cuCtxDisablePeerAccess),
    MOSAIC_EMU_PROC("cuMemAlloc", 2000, cuMemAlloc),
    MOSAIC_EMU_PROC("cuMemAlloc", 3020, cuMemAlloc_v2),
    MOSAIC_EMU_PROC("cuMemFree", 2000, cuMemFree),
    MOSAIC_EMU_PROC("cuMemFree", 3020, cuMemFree_v2),
    MOSAIC_EMU_PROC("cuMemAllocHost", 2000, cuMemAllocHost),
    MOSAIC_EMU_PROC("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    MOSAIC_EMU_PROC("cuMemFreeHost", 2000, cuMemFreeHost),
    MOSAIC_EMU_PROC("cuMemGetInfo", 2000, cuMemGetInfo),
    MOSAIC_EMU_PROC("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    MOSAIC_EMU_PROC("cuMemGetAddressRange", 2000, cuMemGetAddressRange),
    MOSAIC_EMU_PROC("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
    MOSAIC_EMU_PROC("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
    MOSAIC_EMU_PROC("cuPointerGetAttributes", 7000, cuPointerGetAttributes),
    MOSAIC_EMU_PROC("cuMemcpyPeer", 4000, cuMemcpyPeer),
    MOSAIC_EMU_PROC("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync),
    MOSAIC_EMU_PROC("cuMemGetAllocationGranularity", 10020,
                    cuMemGetAllocationGranularity),
    MOSAIC_EMU_PROC("cuMemCreate", 10020, cuMemCreate),
    MOSAIC_EMU_PROC("cuMemRelease", 10020, cuMemRelease),
    MOSAIC_EMU_PROC("cuMemAddressReserve", 10020, cuMemAddressReserve),
    MOSAIC_EMU_PROC("cuMemAddressFree", 10020, cuMemAddressFree),
    MOSAIC_EMU_PROC("cuMemMap", 10020, cuMemMap),
    MOSAIC_EMU_PROC("cuMemUnmap", 10020, cuMemUnmap),
    MOSAIC_EMU_PROC("cuMemSetAccess", 10020, cuMemSetAccess),
    MOSAIC_EMU_PROC("cuMemGetAccess", 10020, cuMemGetAccess),
    MOSAIC_EMU_PROC("cuMemExportToShareableHandle", 10020,
                    cuMemExportToShareableHandle),
    MOSAIC_EMU_PROC("cuMemImportFromShareableHandle", 10020,
                    cuMemImportFromShareableHandle),
    MOSAIC_EMU_PROC("cuMemGetAllocationPropertiesFromHandle", 10020,
                    cuMemGetAllocationPropertiesFromHandle),
    MOSAIC_EMU_PROC("cuMemRetainAllocationHandle", 11000,
                    cuMemRetainAllocationHandle),
    MOSAIC_EMU_PROC("cuMemcpy", 4000, cuMemcpy),
    MOSAIC_EMU_PROC("cuMemcpyAsync", 4000, cuMemcpyAsync),
    MOSAIC_EMU_PROC("cuMemcpyHtoD", 2000, cuMemcpyHtoD),
    MOSAIC_EMU_PROC("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
    MOSAIC_EMU_PROC("cuMemcpyDtoH", 2000, cuMemcpyDtoH),
    MOSAIC_EMU_PROC("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
    MOSAIC_EMU_PROC("cuMemcpyDtoD", 2000, cuMemcpyDtoD),
    MOSAIC_EMU_PROC("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2),
    MOSAIC_EMU_PROC("cuMemcpyHtoDAsync", 2000, cuMemcpyHtoDAsync),
    MOSAIC_EMU_PROC("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2),
    MOSAIC_EMU_PROC("cuMemcpyDtoHAsync", 2000, cuMemcpyDtoHAsync),
    MOSAIC_EMU_PROC("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2),
    MOSAIC_EMU_PROC("cuMemcpyDtoDAsync", 3000, cuMemcpyDtoDAsync),
    MOSAIC_EMU_PROC("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2),
    MOSAIC_EMU_PROC("cuMemsetD8", 2000, cuMemsetD8),
    MOSAIC_EMU_PROC("cuMemsetD8", 3020, cuMemsetD8_v2),
    MOSAIC_EMU_PROC("cuMemsetD16", 2000, cuMemsetD16),
    MOSAIC_EMU_PROC("cuMemsetD16", 3020, cuMemsetD16_v2),
    MOSAIC_EMU_PROC("cuMemsetD32", 2000, cuMemsetD32),
    MOSAIC_EMU_PROC("cuMemsetD32", 3020, cuMemsetD32_v2),
    MOSAIC_EMU_PROC("cuMemsetD8Async", 3020, cuMemsetD8Async),
    MOSAIC_EMU_PROC("cuMemsetD16Async", 3020, cuMemsetD16Async),
    MOSAIC_EMU_PROC("cuMemsetD32Async", 3020, cuMemsetD32Async),
    MOSAIC_EMU_PROC("cuModuleLoad", 2000, cuModuleLoad),
    MOSAIC_EMU_PROC("cuModuleLoadData", 2000, cuModuleLoadData),
    MOSAIC_EMU_PROC("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
    MOSAIC_EMU_PROC("cuModuleUnload", 2000, cuModuleUnload),
    MOSAIC_EMU_PROC("cuModuleGetFunction", 2000, cuModuleGetFunction),
    MOSAIC_EMU_PROC("cuModuleGetGlobal", 2000, cuModuleGetGlobal),
    MOSAIC_EMU_PROC("cuModuleGetGlobal", 3020, cuModuleGetGlobal_v2),
    MOSAIC_EMU_PROC("cuFuncGetAttribute", 2020, cuFuncGetAttribute),
    MOSAIC_EMU_PROC("cuFuncSetAttribute", 9000, cuFuncSetAttribute),
    MOSAIC_EMU_PROC("cuFuncGetName", 12030, cuFuncGetName),
    MOSAIC_EMU_PROC("cuFuncGetParamInfo", 12040, cuFuncGetParamInfo),
    MOSAIC_EMU_PROC("cuFuncGetModule", 11000, cuFuncGetModule),
    MOSAIC_EMU_PROC("cuLaunchKernel", 4000, cuLaunchKernel),
    MOSAIC_EMU_PROC("cuLaunchKernelEx", 11060, cuLaunchKernelEx),
    MOSAIC_EMU_PROC("cuTensorMapEncodeTiled", 12000, cuTensorMapEncodeTiled),
    MOSAIC_EMU_PROC("cuStreamCreate", 2000, cuStreamCreate),
    MOSAIC_EMU_PROC("cuStreamCreateWithPriority", 5050,
                    cuStreamCreateWithPriority),
    MOSAIC_EMU_PROC("cuStreamDestroy", 2000, cuStreamDestroy),
    MOSAIC_EMU_PROC("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    MOSAIC_EMU_PROC("cuStreamSynchronize", 2000, cuStreamSynchronize),
    MOSAIC_EMU_PROC("cuStreamQuery", 2000, cuStreamQuery),
    MOSAIC_EMU_PROC("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
    MOSAIC_EMU_PROC("cuEventCreate", 2000, cuEventCreate),
    MOSAIC_EMU_PROC("cuEventDestroy", 2000, cuEventDestroy),
    MOSAIC_EMU_PROC("cuEventDestroy", 4000, cuEventDestroy_v2),
    MOSAIC_EMU_PROC("cuEventRecord", 2000, cuEventRecord),
    MOSAIC_EMU_PROC("cuEventRecordWithFlags", 11010, cuEventRecordWithFlags),
    MOSAIC_EMU_PROC("cuEventSynchronize", 2000, cuEventSynchronize),
    MOSAIC_EMU_PROC("cuEventQuery", 2000, cuEventQuery),
    MOSAIC_EMU_PROC("cuEventElapsedTime", 2000, cuEventElapsedTime),
    MOSAIC_EMU_PROC("cuEventElapsedTime", 12080, cuEventElapsedTime_v2)};
#pragma GCC diagnostic pop
#undef MOSAIC_EMU_PROC

} // namespace

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(
    const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
    CUdriverProcAddressQueryResult *symbolStatus) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(nonNull(__func__, symbol, "symbol"));
  MOSAIC_EMU_TRY(nonNull(__func__, pfn, "pfn"));
  // The per-thread default stream variants are the same functions here:
  // every default stream handle is the context's one default stream
  // (DriverQueue.cpp).
  (void)flags;
  *pfn = nullptr;
  const Procedure *best = nullptr;
  bool known = false;
  for (const Procedure &procedure : kProcedures) {
    if (std::strcmp(procedure.name, symbol) != 0)
      continue;
    known = true;
    if (procedure.version <= cudaVersion &&
        (!best || procedure.version > best->version))
      best = &procedure;
  }
  if (!best) {
    if (symbolStatus)
      *symbolStatus = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return fail(CUDA_ERROR_NOT_FOUND, __func__,
                std::string("`") + symbol + "` " +
                    (known ? "needs a newer `cudaVersion` than " +
                                 std::to_string(cudaVersion)
                           : std::string("is not an entry point of the "
                                         "emulator")));
  }
  *pfn = best->address;
  if (symbolStatus)
    *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol,
                                                    void **pfn, int cudaVersion,
                                                    cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, nullptr);
}
