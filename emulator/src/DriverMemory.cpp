//===- DriverMemory.cpp - Memory ------------------------------------------===//
//
// cuda.h's memory management: device and pinned host allocations in the
// emulator's DeviceMemory, owned by the current context's device; copies
// and memsets, including between devices, which run the queued work first
// and complete on return.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <cstring>
#include <optional>

using namespace mosaic::emulator;
using namespace mosaic::emulator::driver;

namespace {

std::string rangeText(uint64_t address, uint64_t bytes) {
  return "[" + hex(address) + ", " + hex(address) + " + " +
         std::to_string(bytes) + ")";
}

/// The host bytes of device range [address, address + bytes), or an error
/// naming the operand and the allocation it overruns.
CUresult deviceBytes(const char *function, const char *operand,
                     uint64_t address, uint64_t bytes, uint8_t *&out) {
  out = state().memory.translate(address, bytes);
  if (out)
    return CUDA_SUCCESS;
  std::string why = std::string("`") + operand + "` " +
                    rangeText(address, bytes) +
                    " is not inside one device allocation: ";
  if (auto block = state().memory.range(address))
    why += "it runs " +
           std::to_string(bytes - (block->first + block->second - address)) +
           " bytes past the end of the allocation at " + hex(block->first) +
           " (" + std::to_string(block->second) + " bytes)";
  else
    why += hex(address) + " is in no allocation";
  return fail(CUDA_ERROR_INVALID_VALUE, function, why);
}

/// Unified addressing (cuMemcpy): an address inside an allocation is device
/// memory and must stay inside it; any other is host memory, which must not
/// run into an allocation.
CUresult unifiedBytes(const char *function, const char *operand,
                      uint64_t address, uint64_t bytes, uint8_t *&out) {
  State &s = state();
  if (s.memory.range(address))
    return deviceBytes(function, operand, address, bytes, out);
  auto next = s.allocations.lower_bound(address);
  if (next != s.allocations.end() && next->first - address < bytes)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                std::string("`") + operand + "` " + rangeText(address, bytes) +
                    " starts outside device memory and runs into the "
                    "allocation at " +
                    hex(next->first));
  out = reinterpret_cast<uint8_t *>(address);
  return CUDA_SUCCESS;
}

CUresult allocate(const char *function, Context *context, MemoryKind kind,
                  uint64_t bytes, uint64_t &address) {
  State &s = state();
  if (bytes == 0)
    return fail(CUDA_ERROR_INVALID_VALUE, function, "cannot allocate 0 bytes");
  Expected<uint64_t> block = s.memory.allocate(bytes, context->device);
  if (!block.ok())
    return fail(CUDA_ERROR_OUT_OF_MEMORY, function, block.message());
  address = *block;
  s.allocations[address] =
      Allocation{context, kind, s.nextBufferId++, context->device};
  return CUDA_SUCCESS;
}

CUresult release(const char *function, uint64_t address, MemoryKind kind) {
  State &s = state();
  auto found = s.allocations.find(address);
  if (found != s.allocations.end() && found->second.kind == MemoryKind::Mapping)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                hex(address) + " is a virtual-memory mapping: unmap it with "
                               "cuMemUnmap");
  if (found != s.allocations.end() && found->second.kind != kind)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                hex(address) +
                    (kind == MemoryKind::Device
                         ? " was allocated by cuMemAllocHost: free it with "
                           "cuMemFreeHost"
                         : " was allocated by cuMemAlloc: free it with "
                           "cuMemFree"));
  if (Status freed = s.memory.free(address); !freed.ok())
    return fail(CUDA_ERROR_INVALID_VALUE, function, freed.message());
  s.allocations.erase(address);
  return CUDA_SUCCESS;
}

CUresult copy(const char *function, uint64_t destination, uint64_t source,
              size_t bytes, bool destinationOnDevice, bool sourceOnDevice,
              CUstream stream) {
  MOSAIC_EMU_TRY(observeQueuedWork(function));
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(function, context));
  MOSAIC_EMU_TRY(checkStream(function, stream));
  if (bytes == 0)
    return CUDA_SUCCESS;
  uint8_t *to = reinterpret_cast<uint8_t *>(destination);
  uint8_t *from = reinterpret_cast<uint8_t *>(source);
  if (destinationOnDevice)
    MOSAIC_EMU_TRY(deviceBytes(function, "dstDevice", destination, bytes, to));
  else
    MOSAIC_EMU_TRY(nonNull(function, to, "dstHost"));
  if (sourceOnDevice)
    MOSAIC_EMU_TRY(deviceBytes(function, "srcDevice", source, bytes, from));
  else
    MOSAIC_EMU_TRY(nonNull(function, from, "srcHost"));
  std::memmove(to, from, bytes);
  return CUDA_SUCCESS;
}

CUresult unifiedCopy(const char *function, CUdeviceptr destination,
                     CUdeviceptr source, size_t bytes, CUstream stream) {
  MOSAIC_EMU_TRY(observeQueuedWork(function));
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(function, context));
  MOSAIC_EMU_TRY(checkStream(function, stream));
  if (bytes == 0)
    return CUDA_SUCCESS;
  uint8_t *to = nullptr;
  uint8_t *from = nullptr;
  MOSAIC_EMU_TRY(unifiedBytes(function, "dst", destination, bytes, to));
  MOSAIC_EMU_TRY(unifiedBytes(function, "src", source, bytes, from));
  MOSAIC_EMU_TRY(nonNull(function, to, "dst"));
  MOSAIC_EMU_TRY(nonNull(function, from, "src"));
  std::memmove(to, from, bytes);
  return CUDA_SUCCESS;
}

/// cuMemsetD8/D16/D32: `count` elements of `sizeof(T)` bytes.
template <typename T>
CUresult fill(const char *function, CUdeviceptr destination, T value,
              size_t count, CUstream stream) {
  MOSAIC_EMU_TRY(observeQueuedWork(function));
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(function, context));
  MOSAIC_EMU_TRY(checkStream(function, stream));
  if (destination % sizeof(T) != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "`dstDevice` " + hex(destination) + " must be " +
                    std::to_string(sizeof(T)) + "-byte aligned");
  if (count == 0)
    return CUDA_SUCCESS;
  if (count > SIZE_MAX / sizeof(T))
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "`N` " + std::to_string(count) + " elements overflow");
  uint8_t *bytes = nullptr;
  MOSAIC_EMU_TRY(deviceBytes(function, "dstDevice", destination,
                             count * sizeof(T), bytes));
  for (size_t i = 0; i < count; ++i)
    std::memcpy(bytes + i * sizeof(T), &value, sizeof(T));
  return CUDA_SUCCESS;
}

} // namespace

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr,
                                              size_t bytesize) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, dptr, "dptr"));
  uint64_t address = 0;
  MOSAIC_EMU_TRY(
      allocate(__func__, context, MemoryKind::Device, bytesize, address));
  *dptr = address;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(observeQueuedWork(__func__));
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  return release(__func__, dptr, MemoryKind::Device);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemAllocHost(void **pp, size_t bytesize) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, pp, "pp"));
  uint64_t address = 0;
  MOSAIC_EMU_TRY(
      allocate(__func__, context, MemoryKind::PinnedHost, bytesize, address));
  *pp = reinterpret_cast<void *>(address);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(observeQueuedWork(__func__));
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  return release(__func__, reinterpret_cast<uint64_t>(p),
                 MemoryKind::PinnedHost);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemGetInfo(size_t *free, size_t *total) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, free, "free"));
  MOSAIC_EMU_TRY(nonNull(__func__, total, "total"));
  uint64_t used = s.memory.allocatedBytes();
  *total = kTotalMemory;
  *free = used >= kTotalMemory ? 0 : kTotalMemory - used;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *pbase,
                                                        size_t *psize,
                                                        CUdeviceptr dptr) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  auto block = s.memory.range(dptr);
  if (!block || s.allocations.at(block->first).kind == MemoryKind::PinnedHost)
    return fail(CUDA_ERROR_NOT_FOUND, __func__,
                hex(dptr) + " is in no device allocation");
  if (pbase)
    *pbase = block->first;
  if (psize)
    *psize = block->second;
  return CUDA_SUCCESS;
}

namespace {

/// One pointer attribute of the allocation `block` (null when `ptr` is in
/// none, for cuPointerGetAttributes' defaults) into `data`.
CUresult
pointerAttribute(const char *function, void *data,
                 CUpointer_attribute attribute, CUdeviceptr ptr,
                 const std::optional<std::pair<uint64_t, uint64_t>> &block) {
  const Allocation *allocation =
      block ? &state().allocations.at(block->first) : nullptr;
  bool device = allocation && allocation->kind != MemoryKind::PinnedHost;
  switch (attribute) {
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    *static_cast<CUcontext *>(data) =
        reinterpret_cast<CUcontext>(allocation ? allocation->context : nullptr);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *static_cast<unsigned int *>(data) = !allocation ? 0u
                                         : device
                                             ? unsigned(CU_MEMORYTYPE_DEVICE)
                                             : unsigned(CU_MEMORYTYPE_HOST);
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    // Unified addressing: pinned host memory has the same device address.
    *static_cast<CUdeviceptr *>(data) = allocation ? ptr : 0;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    if (device)
      return fail(CUDA_ERROR_INVALID_VALUE, function,
                  hex(ptr) + " is device memory, which the host cannot "
                             "access directly");
    *static_cast<void **>(data) =
        allocation ? reinterpret_cast<void *>(ptr) : nullptr;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    *static_cast<unsigned long long *>(data) =
        allocation ? allocation->bufferId : 0;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    *static_cast<int *>(data) = allocation ? int(allocation->device) : -2;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    *static_cast<CUdeviceptr *>(data) = block ? block->first : 0;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    *static_cast<size_t *>(data) = block ? block->second : 0;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_MAPPED:
    *static_cast<bool *>(data) = allocation != nullptr;
    return CUDA_SUCCESS;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    *static_cast<bool *>(data) = false;
    return CUDA_SUCCESS;
  default:
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "pointer attribute " + std::to_string(int(attribute)) +
                    " is not modelled by the emulator");
  }
}

} // namespace

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuPointerGetAttribute(
    void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, data, "data"));
  auto block = s.memory.range(ptr);
  if (!block)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                hex(ptr) + " is in no allocation of the driver");
  return pointerAttribute(__func__, data, attribute, ptr, block);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuPointerGetAttributes(
    unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
    CUdeviceptr ptr) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  if (numAttributes > 0) {
    MOSAIC_EMU_TRY(nonNull(__func__, attributes, "attributes"));
    MOSAIC_EMU_TRY(nonNull(__func__, data, "data"));
  }
  // Unlike cuPointerGetAttribute, a pointer in no allocation is no error:
  // every attribute gets its null value.
  auto block = s.memory.range(ptr);
  for (unsigned i = 0; i < numAttributes; ++i) {
    MOSAIC_EMU_TRY(nonNull(__func__, data[i], "data[i]"));
    if (!block && attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER) {
      *static_cast<void **>(data[i]) = nullptr;
      continue;
    }
    MOSAIC_EMU_TRY(
        pointerAttribute(__func__, data[i], attributes[i], ptr, block));
  }
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src,
                                            size_t ByteCount) {
  Lock lock(state().mutex);
  return unifiedCopy(__func__, dst, src, ByteCount, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst,
                                                 CUdeviceptr src,
                                                 size_t ByteCount,
                                                 CUstream hStream) {
  Lock lock(state().mutex);
  return unifiedCopy(__func__, dst, src, ByteCount, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice,
                                                const void *srcHost,
                                                size_t ByteCount) {
  Lock lock(state().mutex);
  return copy(__func__, dstDevice, reinterpret_cast<uint64_t>(srcHost),
              ByteCount, true, false, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoH(void *dstHost,
                                                CUdeviceptr srcDevice,
                                                size_t ByteCount) {
  Lock lock(state().mutex);
  return copy(__func__, reinterpret_cast<uint64_t>(dstHost), srcDevice,
              ByteCount, false, true, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dstDevice,
                                                CUdeviceptr srcDevice,
                                                size_t ByteCount) {
  Lock lock(state().mutex);
  return copy(__func__, dstDevice, srcDevice, ByteCount, true, true, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice,
                                                     const void *srcHost,
                                                     size_t ByteCount,
                                                     CUstream hStream) {
  Lock lock(state().mutex);
  return copy(__func__, dstDevice, reinterpret_cast<uint64_t>(srcHost),
              ByteCount, true, false, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost,
                                                     CUdeviceptr srcDevice,
                                                     size_t ByteCount,
                                                     CUstream hStream) {
  Lock lock(state().mutex);
  return copy(__func__, reinterpret_cast<uint64_t>(dstHost), srcDevice,
              ByteCount, false, true, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice,
                                                     CUdeviceptr srcDevice,
                                                     size_t ByteCount,
                                                     CUstream hStream) {
  Lock lock(state().mutex);
  return copy(__func__, dstDevice, srcDevice, ByteCount, true, true, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice,
                                              unsigned char uc, size_t N) {
  Lock lock(state().mutex);
  return fill(__func__, dstDevice, uc, N, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD16(CUdeviceptr dstDevice,
                                               unsigned short us, size_t N) {
  Lock lock(state().mutex);
  return fill(__func__, dstDevice, us, N, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD32(CUdeviceptr dstDevice,
                                               unsigned int ui, size_t N) {
  Lock lock(state().mutex);
  return fill(__func__, dstDevice, ui, N, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice,
                                                   unsigned char uc, size_t N,
                                                   CUstream hStream) {
  Lock lock(state().mutex);
  return fill(__func__, dstDevice, uc, N, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice,
                                                    unsigned short us, size_t N,
                                                    CUstream hStream) {
  Lock lock(state().mutex);
  return fill(__func__, dstDevice, us, N, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice,
                                                    unsigned int ui, size_t N,
                                                    CUstream hStream) {
  Lock lock(state().mutex);
  return fill(__func__, dstDevice, ui, N, hStream);
}

namespace {

/// cuMemcpyPeer(Async): both contexts must be usable; addresses are unified,
/// so the copy itself is a device-to-device copy.
CUresult peerCopy(const char *function, CUdeviceptr destination,
                  CUcontext destinationContext, CUdeviceptr source,
                  CUcontext sourceContext, size_t bytes, CUstream stream) {
  MOSAIC_EMU_TRY(observeQueuedWork(function));
  for (CUcontext handle : {destinationContext, sourceContext}) {
    Context *context = nullptr;
    MOSAIC_EMU_TRY(findContext(function, handle, context));
    MOSAIC_EMU_TRY(usable(function, context));
  }
  return copy(function, destination, source, bytes, true, true, stream);
}

} // namespace

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dstDevice,
                                                CUcontext dstContext,
                                                CUdeviceptr srcDevice,
                                                CUcontext srcContext,
                                                size_t ByteCount) {
  Lock lock(state().mutex);
  return peerCopy(__func__, dstDevice, dstContext, srcDevice, srcContext,
                  ByteCount, nullptr);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemcpyPeerAsync(
    CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
    CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  Lock lock(state().mutex);
  return peerCopy(__func__, dstDevice, dstContext, srcDevice, srcContext,
                  ByteCount, hStream);
}
