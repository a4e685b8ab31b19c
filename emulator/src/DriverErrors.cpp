//===- DriverErrors.cpp - Error names and descriptions --------------------===//
//
// cuGetErrorName and cuGetErrorString: cuda.h's text for every CUresult.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

using namespace mosaic::emulator;
using namespace mosaic::emulator::driver;

namespace {

struct ErrorText {
  CUresult code;
  const char *name;
  const char *description;
};

#define MOSAIC_EMU_ERROR(code, text)                                           \
  { code, #code, text }
const ErrorText kErrors[] = {
    MOSAIC_EMU_ERROR(CUDA_SUCCESS, "no error"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PROFILER_DISABLED,
                     "profiler disabled while using external profiling tool"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PROFILER_NOT_INITIALIZED,
                     "profiler not initialized"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PROFILER_ALREADY_STARTED,
                     "profiler already started"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PROFILER_ALREADY_STOPPED,
                     "profiler already stopped"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER,
                     "API call requires a newer CUDA driver"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_DEVICE_UNAVAILABLE,
                     "CUDA-capable device(s) is/are busy or unavailable"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NO_DEVICE,
                     "no CUDA-capable device is detected"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_DEVICE_NOT_LICENSED,
                     "device doesn't have valid Grid license"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_IMAGE,
                     "device kernel image is invalid"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT,
                     "context already current"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_UNMAP_FAILED,
                     "unmapping of buffer object failed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NO_BINARY_FOR_GPU,
                     "no kernel image is available for execution on the "
                     "device"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ALREADY_ACQUIRED, "resource already acquired"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_MAPPED_AS_ARRAY,
                     "resource not mapped as array"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_MAPPED_AS_POINTER,
                     "resource not mapped as pointer"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ECC_UNCORRECTABLE,
                     "uncorrectable ECC error encountered"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_UNSUPPORTED_LIMIT,
                     "limit is not supported on this architecture"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CONTEXT_ALREADY_IN_USE,
                     "exclusive-thread device already in use by a different "
                     "thread"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
                     "peer access is not supported between these two devices"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT,
                     "invalid OpenGL or DirectX context"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NVLINK_UNCORRECTABLE,
                     "uncorrectable NVLink error detected during the "
                     "execution"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_JIT_COMPILER_NOT_FOUND,
                     "PTX JIT compiler library not found"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
                     "the provided PTX was compiled with an unsupported "
                     "toolchain"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_JIT_COMPILATION_DISABLED,
                     "PTX JIT compilation was disabled"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
                     "the provided execution affinity is not supported"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC,
                     "the provided PTX contains unsupported call to "
                     "cudaDeviceSynchronize"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CONTAINED,
                     "an exception occurred on the device that is now "
                     "contained by the GPU's error containment capability"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_SOURCE, "device kernel image is "
                                                "invalid"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
                     "shared object symbol not found"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
                     "shared object initialization failed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or "
                                                  "operation not supported on "
                                                  "this OS"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ILLEGAL_STATE,
                     "the operation cannot be performed in the present state"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_LOSSY_QUERY,
                     "attempted introspection would be semantically lossy"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_READY, "device not ready"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ILLEGAL_ADDRESS,
                     "an illegal memory access was encountered"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                     "too many resources requested for launch"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_LAUNCH_TIMEOUT,
                     "the launch timed out and was terminated"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING,
                     "launch uses incompatible texturing mode"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
                     "peer access is already enabled"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
                     "peer access has not been enabled"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE,
                     "cannot set while device is active in this process"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ASSERT, "device-side assert triggered"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_TOO_MANY_PEERS,
                     "peer mapping resources exhausted"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                     "part or all of the requested memory range is already "
                     "mapped"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
                     "pointer does not correspond to a registered memory "
                     "region"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_ILLEGAL_INSTRUCTION,
                     "an illegal instruction was encountered"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_ADDRESS_SPACE,
                     "operation not supported on global/shared address space"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_PC, "invalid program counter"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
                     "too many blocks in cooperative launch"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_TENSOR_MEMORY_LEAK,
                     "tensor memory not completely freed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH,
                     "system has unsupported display driver / cuda driver "
                     "combination"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
                     "forward compatibility was attempted on non supported HW"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MPS_CONNECTION_FAILED,
                     "MPS client failed to connect to the MPS control daemon "
                     "or the MPS server"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MPS_RPC_FAILURE,
                     "the remote procedural call between the MPS server and "
                     "the MPS client failed"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MPS_SERVER_NOT_READY,
                     "MPS server is not ready to accept new MPS client "
                     "requests"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED,
                     "the hardware resources required to create MPS client "
                     "have been exhausted"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED,
                     "the hardware resources required to support device "
                     "connections have been exhausted"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_MPS_CLIENT_TERMINATED,
                     "the MPS client has been terminated by the server"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CDP_NOT_SUPPORTED,
                     "the module is using CUDA Dynamic Parallelism, but the "
                     "current configuration does not support it"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CDP_VERSION_MISMATCH,
                     "unsupported interaction between different versions of "
                     "CUDA Dynamic Parallelism"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                     "operation not permitted when stream is capturing"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                     "operation failed due to a previous error during capture"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_MERGE,
                     "operation would result in a merge of separate capture "
                     "sequences"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
                     "capture was not ended in the same stream as it began"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
                     "capturing stream has unjoined work"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
                     "dependency created on uncaptured work in another stream"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
                     "operation would make the legacy stream depend on a "
                     "capturing blocking stream"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_CAPTURED_EVENT,
                     "operation not permitted on an event last recorded in a "
                     "capturing stream"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
                     "attempt to terminate a thread-local capture sequence "
                     "from another thread"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE,
                     "the graph update was not performed because it included "
                     "changes which violated constraints specific to "
                     "instantiated graph update"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_EXTERNAL_DEVICE,
                     "an async error has occurred in external entity outside "
                     "of CUDA"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_CLUSTER_SIZE,
                     "a kernel launch error has occurred due to cluster "
                     "misconfiguration"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_FUNCTION_NOT_LOADED,
                     "the function handle is not loaded when calling an API "
                     "that requires a loaded function"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_RESOURCE_TYPE,
                     "one or more resources passed in are not valid resource "
                     "types for the operation"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
                     "one or more resources are insufficient or "
                     "non-applicable for the operation"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_KEY_ROTATION,
                     "an error happened during the key rotation sequence"),
    MOSAIC_EMU_ERROR(CUDA_ERROR_UNKNOWN, "unknown error")};
#undef MOSAIC_EMU_ERROR

const ErrorText *errorText(CUresult code) {
  for (const ErrorText &error : kErrors)
    if (error.code == code)
      return &error;
  return nullptr;
}

} // namespace

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error,
                                                  const char **pStr) {
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  const ErrorText *text = errorText(error);
  *pStr = text ? text->name : nullptr;
  return text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error,
                                                    const char **pStr) {
  if (!pStr)
    return CUDA_ERROR_INVALID_VALUE;
  const ErrorText *text = errorText(error);
  *pStr = text ? text->description : nullptr;
  return text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
