//===- FakeCudaDriver.cpp - A CUDA driver without a GPU, for tests -------===//
//
// Every entry point runtime/ looks up, answering as one Hopper device would,
// with "device memory" in host memory. A launch copies its first buffer
// parameter into its last one (`fake_param_count`, or in another process
// the environment's MOSAIC_FAKE_PARAM_COUNT, says how many parameters the
// kernel has) and records its grid, block, dynamic shared memory and
// stream (and the stream last synchronized), so
// python/tests/test_launch.py can check what mosaic_gpu passed, end to end,
// on a machine without a GPU (MOSAIC_CUDA_DRIVER names this library).
//
//===----------------------------------------------------------------------===//

#include "mosaic/Contracts/HardwareLimits.h"

#include <cuda.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

extern "C" char fake_log[4096];

namespace {
/// Live allocations: base address -> size.
std::map<CUdeviceptr, size_t> allocations;
/// The device of each allocation and virtual-memory mapping.
std::map<CUdeviceptr, int> owners;

constexpr size_t kGranularity = size_t(2) << 20;

int deviceCount() {
  const char *text = std::getenv("MOSAIC_FAKE_DEVICES");
  int count = text ? std::atoi(text) : 1;
  return count > 0 ? count : 1;
}

thread_local int currentDevice = 0;

/// Physical memory: a memfd file.
struct Physical {
  int fd;
  size_t size;
  int device;
};

/// Reserved ranges: aligned base -> (mmap base, mmap size).
std::map<CUdeviceptr, std::pair<void *, size_t>> reservations;

void log(char what, int device) {
  size_t used = std::strlen(fake_log);
  if (used + 8 < sizeof(fake_log))
    std::snprintf(fake_log + used, sizeof(fake_log) - used, "%c%d ", what,
                  device);
}
} // namespace

extern "C" {
int fake_param_count = 0;
unsigned fake_launch_grid[3], fake_launch_block[3], fake_launch_smem;
unsigned long long fake_launch_stream; // the last launch's CUstream handle
unsigned long long fake_synchronized_stream; // the last cuStreamSynchronize's
int fake_launches = 0;
int fake_copies = 0; // cuMemcpyHtoD and cuMemcpyDtoH calls
char fake_log[4096];
// The first `fake_record_params` parameters of the last launch, each read
// as 8 bytes (pointers).
int fake_record_params = 0;
unsigned long long fake_launch_params[16];
int fake_mapped = 0; // live cuMemMap mappings

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
  *count = deviceCount();
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return ordinal >= 0 && ordinal < deviceCount() ? CUDA_SUCCESS
                                                 : CUDA_ERROR_INVALID_DEVICE;
}
CUresult cuDeviceCanAccessPeer(int *can, CUdevice device, CUdevice peer) {
  *can = 1;
  if (const char *refused = std::getenv("MOSAIC_FAKE_NO_PEER")) {
    int a = -1, b = -1;
    if (std::sscanf(refused, "%d,%d", &a, &b) == 2 &&
        ((a == device && b == peer) || (a == peer && b == device)))
      *can = 0;
  }
  return CUDA_SUCCESS;
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
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  *context = reinterpret_cast<CUcontext>(uintptr_t(device) + 1);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext context) {
  currentDevice = context ? int(reinterpret_cast<uintptr_t>(context)) - 1 : 0;
  return CUDA_SUCCESS;
}
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
  log('L', currentDevice);
  for (int i = 0; i < fake_record_params && i < 16; ++i)
    std::memcpy(&fake_launch_params[i], params[i], 8);
  int paramCount = fake_param_count;
  if (const char *text = std::getenv("MOSAIC_FAKE_PARAM_COUNT"))
    paramCount = std::atoi(text);
  if (paramCount < 2)
    return CUDA_SUCCESS;
  CUdeviceptr from = *static_cast<CUdeviceptr *>(params[0]);
  CUdeviceptr to = *static_cast<CUdeviceptr *>(params[paramCount - 1]);
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
  owners[*pointer] = currentDevice;
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr pointer) {
  allocations.erase(pointer);
  owners.erase(pointer);
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
                               CUdeviceptr pointer) {
  switch (attribute) {
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *static_cast<unsigned *>(data) = CU_MEMORYTYPE_DEVICE;
    break;
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    *static_cast<CUcontext *>(data) = reinterpret_cast<CUcontext>(1);
    break;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
    auto next = owners.upper_bound(pointer);
    *static_cast<int *>(data) =
        next == owners.begin() ? 0 : std::prev(next)->second;
    break;
  }
  default:
    *static_cast<int *>(data) = 0;
  }
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  // A distinct handle per device: the device's context.
  *stream = reinterpret_cast<CUstream>(uintptr_t(currentDevice) + 1);
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream) { return CUDA_SUCCESS; }
CUresult cuStreamSynchronize(CUstream stream) {
  fake_synchronized_stream = reinterpret_cast<uintptr_t>(stream);
  log('S', currentDevice);
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

// The virtual-memory API, on memfd files.
CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                       const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags) {
  if (prop->location.id < 0 || prop->location.id >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}
CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long) {
  if (size == 0 || size % kGranularity)
    return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      prop->location.id < 0 || prop->location.id >= deviceCount())
    return CUDA_ERROR_INVALID_DEVICE;
  int fd = memfd_create("mosaic-fake-cuda", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *handle =
      reinterpret_cast<uintptr_t>(new Physical{fd, size, prop->location.id});
  return CUDA_SUCCESS;
}
CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  auto *physical = reinterpret_cast<Physical *>(handle);
  close(physical->fd); // Mappings keep the file.
  delete physical;
  return CUDA_SUCCESS;
}
CUresult cuMemAddressReserve(CUdeviceptr *pointer, size_t size,
                             size_t alignment, CUdeviceptr,
                             unsigned long long) {
  if (size == 0 || size % kGranularity)
    return CUDA_ERROR_INVALID_VALUE;
  alignment = alignment ? alignment : kGranularity;
  size_t total = size + alignment;
  void *memory = mmap(nullptr, total, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED)
    return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t base = (reinterpret_cast<uintptr_t>(memory) + alignment - 1) /
                   alignment * alignment;
  reservations[base] = {memory, total};
  *pointer = base;
  return CUDA_SUCCESS;
}
CUresult cuMemAddressFree(CUdeviceptr pointer, size_t) {
  auto found = reservations.find(pointer);
  if (found == reservations.end())
    return CUDA_ERROR_INVALID_VALUE;
  munmap(found->second.first, found->second.second);
  reservations.erase(found);
  return CUDA_SUCCESS;
}
CUresult cuMemMap(CUdeviceptr pointer, size_t size, size_t offset,
                  CUmemGenericAllocationHandle handle, unsigned long long) {
  auto *physical = reinterpret_cast<Physical *>(handle);
  if (offset + size > physical->size)
    return CUDA_ERROR_INVALID_VALUE;
  void *at =
      mmap(reinterpret_cast<void *>(pointer), size, PROT_NONE,
           MAP_SHARED | MAP_FIXED, physical->fd, static_cast<off_t>(offset));
  if (at == MAP_FAILED)
    return CUDA_ERROR_INVALID_VALUE;
  owners[pointer] = physical->device;
  ++fake_mapped;
  return CUDA_SUCCESS;
}
CUresult cuMemUnmap(CUdeviceptr pointer, size_t size) {
  // Back to a reserved, inaccessible range.
  mmap(reinterpret_cast<void *>(pointer), size, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  owners.erase(pointer);
  --fake_mapped;
  return CUDA_SUCCESS;
}
CUresult cuMemSetAccess(CUdeviceptr pointer, size_t size,
                        const CUmemAccessDesc *desc, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (desc[i].location.id < 0 || desc[i].location.id >= deviceCount())
      return CUDA_ERROR_INVALID_DEVICE;
  return mprotect(reinterpret_cast<void *>(pointer), size,
                  PROT_READ | PROT_WRITE) == 0
             ? CUDA_SUCCESS
             : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemExportToShareableHandle(void *shareable,
                                      CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType type,
                                      unsigned long long) {
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_NOT_SUPPORTED;
  *static_cast<int *>(shareable) =
      dup(reinterpret_cast<Physical *>(handle)->fd);
  return CUDA_SUCCESS;
}
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
                                        void *shareable,
                                        CUmemAllocationHandleType type) {
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return CUDA_ERROR_NOT_SUPPORTED;
  int fd = dup(static_cast<int>(reinterpret_cast<uintptr_t>(shareable)));
  struct stat info = {};
  if (fd < 0 || fstat(fd, &info) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  // Which device made it is not in the file; -1: another process's.
  *handle = reinterpret_cast<uintptr_t>(
      new Physical{fd, static_cast<size_t>(info.st_size), -1});
  return CUDA_SUCCESS;
}
}
