//===- FakeCudaDriver.cpp - A CUDA driver without a GPU, for tests -------===//
//
// Every entry point runtime/ looks up, answering as one Hopper device would,
// with "device memory" in host memory. A launch copies its first buffer
// parameter into its last one (`fake_param_count` says how many parameters
// the kernel has) and records its grid, block, dynamic shared memory and
// stream (and the stream last synchronized), so
// python/tests/test_launch.py can check what mosaic_gpu passed, end to end,
// on a machine without a GPU (MOSAIC_CUDA_DRIVER names this library).
//
//===----------------------------------------------------------------------===//

#include "mosaic/Contracts/HardwareLimits.h"

#include <cuda.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>

namespace {
/// Live allocations: base address -> size.
std::map<CUdeviceptr, size_t> allocations;
} // namespace

extern "C" {
int fake_param_count = 0;
unsigned fake_launch_grid[3], fake_launch_block[3], fake_launch_smem;
unsigned long long fake_launch_stream; // the last launch's CUstream handle
unsigned long long fake_synchronized_stream; // the last cuStreamSynchronize's
int fake_launches = 0;
int fake_copies = 0; // cuMemcpyHtoD and cuMemcpyDtoH calls

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *version) {
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult, const char **text) {
  *text = "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult, const char **text) {
  *text = "the fake driver refused";
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult cuDeviceGetName(char *name, int length, CUdevice) {
  std::strncpy(name, "Fake H100", length);
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice) {
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = 9;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = 0;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
    *value = 64;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *value = mosaic::limits::kMaxSharedMemoryPerBlock;
    break;
  default:
    *value = 65535;
  }
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  *context = reinterpret_cast<CUcontext>(1);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxSynchronize() { return CUDA_SUCCESS; }
CUresult cuModuleLoadDataEx(CUmodule *module, const void *, unsigned int,
                            CUjit_option *, void **) {
  *module = reinterpret_cast<CUmodule>(1);
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult cuModuleGetFunction(CUfunction *function, CUmodule, const char *) {
  *function = reinterpret_cast<CUfunction>(1);
  return CUDA_SUCCESS;
}
CUresult cuFuncGetAttribute(int *value, CUfunction_attribute attribute,
                            CUfunction) {
  *value = attribute == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024
           : attribute == CU_FUNC_ATTRIBUTE_NUM_REGS            ? 64
                                                                : 0;
  return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) {
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction,
                          void **params, void **) {
  fake_launch_grid[0] = config->gridDimX;
  fake_launch_grid[1] = config->gridDimY;
  fake_launch_grid[2] = config->gridDimZ;
  fake_launch_block[0] = config->blockDimX;
  fake_launch_block[1] = config->blockDimY;
  fake_launch_block[2] = config->blockDimZ;
  fake_launch_smem = config->sharedMemBytes;
  fake_launch_stream = reinterpret_cast<uintptr_t>(config->hStream);
  ++fake_launches;
  if (fake_param_count < 2)
    return CUDA_SUCCESS;
  CUdeviceptr from = *static_cast<CUdeviceptr *>(params[0]);
  CUdeviceptr to = *static_cast<CUdeviceptr *>(params[fake_param_count - 1]);
  if (!allocations.count(from) || !allocations.count(to))
    return CUDA_ERROR_INVALID_VALUE;
  size_t bytes = std::min(allocations[from], allocations[to]);
  std::memcpy(reinterpret_cast<void *>(to), reinterpret_cast<void *>(from),
              bytes);
  return CUDA_SUCCESS;
}
CUresult cuTensorMapEncodeTiled(CUtensorMap *, CUtensorMapDataType, cuuint32_t,
                                void *, const cuuint64_t *, const cuuint64_t *,
                                const cuuint32_t *, const cuuint32_t *,
                                CUtensorMapInterleave, CUtensorMapSwizzle,
                                CUtensorMapL2promotion,
                                CUtensorMapFloatOOBfill) {
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc(CUdeviceptr *pointer, size_t bytes) {
  // 256-byte aligned, as cuMemAlloc's are.
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  allocations[*pointer] = bytes;
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr pointer) {
  allocations.erase(pointer);
  std::free(reinterpret_cast<void *>(pointer));
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoD(CUdeviceptr to, const void *from, size_t bytes) {
  ++fake_copies;
  std::memcpy(reinterpret_cast<void *>(to), from, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH(void *to, CUdeviceptr from, size_t bytes) {
  ++fake_copies;
  std::memcpy(to, reinterpret_cast<void *>(from), bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8(CUdeviceptr to, unsigned char value, size_t bytes) {
  std::memset(reinterpret_cast<void *>(to), value, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr to, unsigned char value, size_t bytes,
                         CUstream) {
  return cuMemsetD8(to, value, bytes);
}
CUresult cuMemGetAddressRange(CUdeviceptr *base, size_t *size,
                              CUdeviceptr pointer) {
  auto next = allocations.upper_bound(pointer);
  if (next == allocations.begin())
    return CUDA_ERROR_NOT_FOUND;
  auto found = std::prev(next);
  if (pointer >= found->first + found->second)
    return CUDA_ERROR_NOT_FOUND;
  if (base)
    *base = found->first;
  if (size)
    *size = found->second;
  return CUDA_SUCCESS;
}
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                               CUdeviceptr) {
  switch (attribute) {
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *static_cast<unsigned *>(data) = CU_MEMORYTYPE_DEVICE;
    break;
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    *static_cast<CUcontext *>(data) = reinterpret_cast<CUcontext>(1);
    break;
  default:
    *static_cast<int *>(data) = 0;
  }
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  *stream = nullptr;
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream) { return CUDA_SUCCESS; }
CUresult cuStreamSynchronize(CUstream stream) {
  fake_synchronized_stream = reinterpret_cast<uintptr_t>(stream);
  return CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent *event, unsigned int) {
  *event = nullptr;
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *ms, CUevent, CUevent) {
  *ms = 1.0f;
  return CUDA_SUCCESS;
}
}
