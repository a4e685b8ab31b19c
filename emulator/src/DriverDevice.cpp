//===- DriverDevice.cpp - Initialization and devices ----------------------===//
//
// cuda.h's initialization, version management and device management:
// MOSAIC_EMULATOR_DEVICES devices, each "Mosaic PTX emulator (sm_90a)" with
// the limits of an H100 SXM, told apart by their ordinals and UUIDs.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace mosaic::emulator;
using namespace mosaic::emulator::driver;

namespace {

std::optional<int> deviceAttribute(CUdevice_attribute attribute,
                                   CUdevice device) {
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    return kMaxThreadsPerBlock;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    return kMaxBlockDim[0];
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
    return kMaxBlockDim[1];
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
    return kMaxBlockDim[2];
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
    return kMaxGridDim[0];
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    return kMaxGridDim[1];
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
    return kMaxGridDim[2];
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
    return kSharedPerBlock;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
    return 65536;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
    return 32;
  case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
    return 2147483647;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
    return 65536;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
    return 1980000; // kHz
  case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP:
    return 1;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    return 132;
  case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT:
  case CU_DEVICE_ATTRIBUTE_INTEGRATED:
    return 0;
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    return 1;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
    return CU_COMPUTEMODE_DEFAULT;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
  case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
    return 1;
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
    // One bus per device, so that tools telling devices apart by their PCI
    // address see different ones.
    return device;
  case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
  case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
  case CU_DEVICE_ATTRIBUTE_TCC_DRIVER:
    return 0;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
    return 2619000; // kHz
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
    return 5120;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
    return 50 << 20;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
    return 2048;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
    return 3;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    return 1;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    return 9;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    return 0;
  case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED:
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
    return kSharedPerMultiprocessor;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
    return 65536;
  case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO:
    return 2;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED:
    return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    return kSharedPerBlockOptin;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
    return 32;
  case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
    return 1024;
  case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH:
  case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED:
    return 1;
  case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT:
    return 4;
  // Virtual memory management, with POSIX file descriptors to share it
  // (DriverVirtualMemory.cpp).
  case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED:
    return 1;
  // What the emulator does not provide: no managed memory, memory pools,
  // cooperative launches, host registration, legacy IPC, fabric handles
  // or multi-GPU boards.
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
  case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
  case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD:
  case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID:
  case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED:
  case CU_DEVICE_ATTRIBUTE_MPS_ENABLED:
    return 0;
  default:
    return std::nullopt;
  }
}

} // namespace

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuInit(unsigned int Flags) {
  State &s = state();
  Lock lock(s.mutex);
  if (Flags != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`Flags` must be 0, not " + std::to_string(Flags));
  if (!s.options) {
    s.options = Options::fromEnvironment();
    if (!s.options->ok())
      std::fprintf(stderr, "mosaic emulator: %s\n",
                   s.options->message().c_str());
    else
      std::atexit(runQueuedWorkAtExit);
  }
  if (!s.options->ok())
    return fail(CUDA_ERROR_INVALID_VALUE, __func__, s.options->message());
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *driverVersion) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(nonNull(__func__, driverVersion, "driverVersion"));
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceGetCount(int *count) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, count, "count"));
  *count = static_cast<int>(deviceCount());
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, ordinal));
  MOSAIC_EMU_TRY(nonNull(__func__, device, "device"));
  *device = ordinal;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int len,
                                                   CUdevice dev) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, name, "name"));
  if (len <= 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`len` must be positive, not " + std::to_string(len));
  size_t length = std::min<size_t>(std::strlen(kDeviceName), size_t(len) - 1);
  std::memcpy(name, kDeviceName, length);
  name[length] = '\0';
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, pi, "pi"));
  std::optional<int> value = deviceAttribute(attrib, dev);
  if (!value)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "device attribute " + std::to_string(int(attrib)) +
                    " is not modelled by the emulator");
  *pi = *value;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceComputeCapability(int *major,
                                                             int *minor,
                                                             CUdevice dev) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, major, "major"));
  MOSAIC_EMU_TRY(nonNull(__func__, minor, "minor"));
  *major = 9;
  *minor = 0;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes,
                                                    CUdevice dev) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, bytes, "bytes"));
  *bytes = kTotalMemory;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireDevice(__func__, dev));
  MOSAIC_EMU_TRY(nonNull(__func__, uuid, "uuid"));
  // 14 bytes of name, then the ordinal (big-endian): one UUID per device.
  std::memcpy(uuid->bytes, "MosaicEmu sm90", 14);
  uuid->bytes[14] = static_cast<char>(dev >> 8);
  uuid->bytes[15] = static_cast<char>(dev & 0xff);
  return CUDA_SUCCESS;
}
