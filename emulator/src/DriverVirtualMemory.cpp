//===- DriverVirtualMemory.cpp - Virtual memory management ----------------===//
//
// cuda.h's virtual memory management, emulated with the host's: the
// emulator's device addresses are host addresses, so
// - physical memory (cuMemCreate) is a memfd of the device's size;
// - a reserved range (cuMemAddressReserve) is an inaccessible anonymous
//   mapping (PROT_NONE);
// - cuMemMap maps the memfd over part of a reserved range (MAP_FIXED |
//   MAP_SHARED) and registers it with DeviceMemory as memory of the
//   allocation's device; cuMemSetAccess grants other devices access to it
//   (a read-only grant is read-write: DeviceMemory has no read-only access);
//   cuMemUnmap makes the range inaccessible again;
// - a shareable handle is a dup of the memfd (CU_MEM_HANDLE_TYPE_POSIX_FILE_
//   DESCRIPTOR only). The owning device travels with the descriptor in the
//   memfd's name, "mosaic-emulator-device-N", which the importing process
//   reads from /proc/self/fd. Mappings of exported or imported memory are
//   marked shared with other processes (DeviceMemory::markShared).
//
// Every device has the granularity of an H100: 2 MiB, minimum and
// recommended. Physical sizes and mappings are multiples of it;
// reservations, as cuda.h says, multiples of the host page size, aligned to
// at least 2 MiB.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mosaic::emulator;
using namespace mosaic::emulator::driver;

namespace {

constexpr uint64_t kGranularity = 2ull << 20;
constexpr const char *kMemfdPrefix = "mosaic-emulator-device-";

std::string errnoText() { return std::strerror(errno); }

std::string sizeText(uint64_t bytes) {
  return std::to_string(bytes) + " bytes";
}

CUresult checkGranular(const char *function, const char *operand,
                       uint64_t value) {
  if (value == 0 || value % kGranularity != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                std::string("`") + operand + "` " + std::to_string(value) +
                    " is not a positive multiple of the allocation "
                    "granularity, 2 MiB (cuMemGetAllocationGranularity)");
  return CUDA_SUCCESS;
}

CUresult checkHandleType(const char *function, const char *operand,
                         CUmemAllocationHandleType type, bool allowNone) {
  if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
      (allowNone && type == CU_MEM_HANDLE_TYPE_NONE))
    return CUDA_SUCCESS;
  return fail(
      CUDA_ERROR_NOT_SUPPORTED, function,
      std::string("`") + operand + "` " + hex(unsigned(type)) +
          ": the emulator shares memory through POSIX file "
          "descriptors only (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)");
}

/// A device location with a valid ordinal.
CUresult checkDeviceLocation(const char *function, const char *operand,
                             const CUmemLocation &location) {
  if (location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                std::string("`") + operand + ".type` " +
                    std::to_string(int(location.type)) +
                    " is not CU_MEM_LOCATION_TYPE_DEVICE");
  return requireDevice(function, location.id);
}

CUresult checkProperties(const char *function, const CUmemAllocationProp *prop,
                         bool forCreate) {
  MOSAIC_EMU_TRY(nonNull(function, prop, "prop"));
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "`prop->type` " + std::to_string(int(prop->type)) +
                    " is not CU_MEM_ALLOCATION_TYPE_PINNED");
  MOSAIC_EMU_TRY(
      checkDeviceLocation(function, "prop->location", prop->location));
  if (forCreate)
    MOSAIC_EMU_TRY(checkHandleType(function, "prop->requestedHandleTypes",
                                   prop->requestedHandleTypes, true));
  return CUDA_SUCCESS;
}

CUresult findPhysical(const char *function, CUmemGenericAllocationHandle handle,
                      PhysicalMemory *&out) {
  auto found =
      state().physical.find(reinterpret_cast<PhysicalMemory *>(handle));
  if (found == state().physical.end())
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                "handle " + hex(handle) +
                    " is not a live allocation handle (cuMemCreate, "
                    "cuMemImportFromShareableHandle)");
  out = found->second.get();
  return CUDA_SUCCESS;
}

/// Frees `memory` once neither a handle nor a mapping refers to it.
void releaseIfUnused(PhysicalMemory *memory) {
  if (memory->handleReferences || memory->mappings)
    return;
  close(memory->fd);
  state().physical.erase(memory);
}

/// The mapping containing `address`.
std::map<uint64_t, Mapping>::iterator mappingAt(uint64_t address) {
  auto &mappings = state().mappings;
  auto next = mappings.upper_bound(address);
  if (next == mappings.begin())
    return mappings.end();
  auto mapping = std::prev(next);
  return address - mapping->first < mapping->second.size ? mapping
                                                         : mappings.end();
}

/// The mappings making up [address, address + bytes): every byte mapped,
/// no mapping reaching outside.
CUresult mappingsIn(const char *function, uint64_t address, uint64_t bytes,
                    std::vector<std::map<uint64_t, Mapping>::iterator> &out) {
  std::string range = "[" + hex(address) + ", " + hex(address + bytes) + ")";
  for (uint64_t at = address; at < address + bytes;) {
    auto mapping = mappingAt(at);
    if (mapping == state().mappings.end())
      return fail(CUDA_ERROR_INVALID_VALUE, function,
                  range + " is not mapped at " + hex(at) + " (cuMemMap)");
    uint64_t end = mapping->first + mapping->second.size;
    if (mapping->first < address || end > address + bytes)
      return fail(CUDA_ERROR_INVALID_VALUE, function,
                  range + " covers part of the mapping [" +
                      hex(mapping->first) + ", " + hex(end) +
                      "); give whole mappings");
    out.push_back(mapping);
    at = end;
  }
  return CUDA_SUCCESS;
}

/// The device that owns memory exported by a process of the emulator,
/// read from the memfd's name.
std::optional<uint32_t> exportedOwner(int fd) {
  char link[PATH_MAX];
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  ssize_t length = readlink(path.c_str(), link, sizeof(link) - 1);
  if (length < 0)
    return std::nullopt;
  std::string target(link, size_t(length));
  std::string prefix = std::string("/memfd:") + kMemfdPrefix;
  if (target.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  size_t digits = prefix.size();
  uint32_t device = 0;
  size_t end = digits;
  while (end < target.size() && target[end] >= '0' && target[end] <= '9' &&
         end - digits < 4)
    device = device * 10 + uint32_t(target[end++] - '0');
  if (end == digits)
    return std::nullopt;
  return device;
}

void markMappingsShared(PhysicalMemory *memory) {
  for (auto &[address, mapping] : state().mappings)
    if (mapping.memory == memory)
      (void)state().memory.markShared(address);
}

} // namespace

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemGetAllocationGranularity(
    size_t *granularity, const CUmemAllocationProp *prop,
    CUmemAllocationGranularity_flags option) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, granularity, "granularity"));
  MOSAIC_EMU_TRY(checkProperties(__func__, prop, false));
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
      option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`option` " + std::to_string(int(option)) +
                    " is not CU_MEM_ALLOC_GRANULARITY_MINIMUM or _RECOMMENDED");
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
            const CUmemAllocationProp *prop, unsigned long long flags) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, handle, "handle"));
  MOSAIC_EMU_TRY(checkProperties(__func__, prop, true));
  MOSAIC_EMU_TRY(checkGranular(__func__, "size", size));
  if (flags != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`flags` must be 0, not " + std::to_string(flags));
  std::string name = kMemfdPrefix + std::to_string(prop->location.id);
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0)
    return fail(CUDA_ERROR_OUT_OF_MEMORY, __func__,
                "memfd_create failed: " + errnoText());
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    std::string why = errnoText();
    close(fd);
    return fail(CUDA_ERROR_OUT_OF_MEMORY, __func__,
                "cannot size the memfd to " + sizeText(size) + ": " + why);
  }
  auto memory = std::make_unique<PhysicalMemory>();
  memory->fd = fd;
  memory->size = size;
  memory->device = static_cast<uint32_t>(prop->location.id);
  memory->properties = *prop;
  *handle = reinterpret_cast<CUmemGenericAllocationHandle>(memory.get());
  s.physical.emplace(memory.get(), std::move(memory));
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuMemRelease(CUmemGenericAllocationHandle handle) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(observeQueuedWork(__func__));
  PhysicalMemory *memory = nullptr;
  MOSAIC_EMU_TRY(findPhysical(__func__, handle, memory));
  if (memory->handleReferences == 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "handle " + hex(handle) +
                    " was already released; its memory lives until it is "
                    "unmapped");
  --memory->handleReferences;
  releaseIfUnused(memory);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                    CUdeviceptr addr, unsigned long long flags) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, ptr, "ptr"));
  // As cuda.h says: the size and the address are multiples of the host
  // page size, the alignment a power of two or zero. Reservations are at
  // least 2 MiB aligned, so that mappings can start where they start.
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (size == 0 || size % page != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`size` " + std::to_string(size) +
                    " is not a positive multiple of the host page size, " +
                    std::to_string(page));
  if (addr % page != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`addr` " + hex(addr) +
                    " is not a multiple of the host page size, " +
                    std::to_string(page));
  if ((alignment & (alignment - 1)) != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`alignment` " + std::to_string(alignment) +
                    " is not a power of two (or 0)");
  alignment = std::max<size_t>(alignment, kGranularity);
  if (flags != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`flags` must be 0, not " + std::to_string(flags));
  void *start = MAP_FAILED;
  // The requested address, when it is aligned and free.
  if (addr && addr % alignment == 0) {
    start =
        mmap(reinterpret_cast<void *>(addr), size, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
             -1, 0);
    if (start != MAP_FAILED && reinterpret_cast<uint64_t>(start) != addr) {
      munmap(start, size);
      start = MAP_FAILED;
    }
  }
  if (start == MAP_FAILED) {
    // Anywhere: over-reserve by the alignment, then trim both ends.
    uint64_t padded = size + alignment;
    void *any = mmap(nullptr, padded, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (any == MAP_FAILED)
      return fail(CUDA_ERROR_OUT_OF_MEMORY, __func__,
                  "cannot reserve " + sizeText(size) + ": " + errnoText());
    uint64_t base = reinterpret_cast<uint64_t>(any);
    uint64_t aligned = (base + alignment - 1) & ~(uint64_t(alignment) - 1);
    if (aligned > base)
      munmap(any, aligned - base);
    if (base + padded > aligned + size)
      munmap(reinterpret_cast<void *>(aligned + size),
             base + padded - aligned - size);
    start = reinterpret_cast<void *>(aligned);
  }
  uint64_t base = reinterpret_cast<uint64_t>(start);
  s.reservations[base] = Reservation{size};
  *ptr = base;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr,
                                                    size_t size) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  auto found = s.reservations.find(ptr);
  if (found == s.reservations.end() || found->second.size != size)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "[" + hex(ptr) + ", " + hex(ptr + size) +
                    ") is not a range cuMemAddressReserve returned");
  auto mapped = s.mappings.lower_bound(ptr);
  if (mapped != s.mappings.end() && mapped->first < ptr + size)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "the range still maps memory at " + hex(mapped->first) +
                    "; cuMemUnmap it first");
  munmap(reinterpret_cast<void *>(ptr), size);
  s.reservations.erase(found);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size,
                                            size_t offset,
                                            CUmemGenericAllocationHandle handle,
                                            unsigned long long flags) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  PhysicalMemory *memory = nullptr;
  MOSAIC_EMU_TRY(findPhysical(__func__, handle, memory));
  MOSAIC_EMU_TRY(checkGranular(__func__, "size", size));
  if (offset != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`offset` must be 0 (as cuda.h requires), not " +
                    std::to_string(offset));
  if (flags != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`flags` must be 0, not " + std::to_string(flags));
  if (size > memory->size)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`size` " + sizeText(size) + " exceeds the allocation's " +
                    sizeText(memory->size));
  if (ptr % kGranularity != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`ptr` " + hex(ptr) + " is not 2 MiB aligned");
  auto reservation = s.reservations.upper_bound(ptr);
  if (reservation == s.reservations.begin() ||
      ptr + size >
          std::prev(reservation)->first + std::prev(reservation)->second.size)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "[" + hex(ptr) + ", " + hex(ptr + size) +
                    ") is not inside a range from cuMemAddressReserve");
  auto next = s.mappings.lower_bound(ptr);
  auto previous = mappingAt(ptr);
  if (previous != s.mappings.end() ||
      (next != s.mappings.end() && next->first < ptr + size))
    return fail(
        CUDA_ERROR_INVALID_VALUE, __func__,
        "[" + hex(ptr) + ", " + hex(ptr + size) +
            ") overlaps an existing mapping at " +
            hex(previous != s.mappings.end() ? previous->first : next->first));
  void *mapped =
      mmap(reinterpret_cast<void *>(ptr), size, PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_FIXED, memory->fd, 0);
  if (mapped == MAP_FAILED)
    return fail(CUDA_ERROR_OUT_OF_MEMORY, __func__,
                "cannot map the allocation: " + errnoText());
  if (Status added = s.memory.addMapping(ptr, size, memory->device);
      !added.ok())
    return fail(CUDA_ERROR_INVALID_VALUE, __func__, added.message());
  if (memory->shared)
    (void)s.memory.markShared(ptr);
  s.mappings[ptr] = Mapping{size, memory, {}};
  s.allocations[ptr] = Allocation{nullptr, MemoryKind::Mapping,
                                  s.nextBufferId++, memory->device};
  ++memory->mappings;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(observeQueuedWork(__func__));
  std::vector<std::map<uint64_t, Mapping>::iterator> mappings;
  MOSAIC_EMU_TRY(mappingsIn(__func__, ptr, size, mappings));
  for (auto mapping : mappings) {
    uint64_t address = mapping->first;
    PhysicalMemory *memory = mapping->second.memory;
    (void)s.memory.removeMapping(address);
    // Back to a reserved, inaccessible range.
    mmap(reinterpret_cast<void *>(address), mapping->second.size, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    s.allocations.erase(address);
    s.mappings.erase(mapping);
    --memory->mappings;
    releaseIfUnused(memory);
  }
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size,
                                                  const CUmemAccessDesc *desc,
                                                  size_t count) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  if (count > 0)
    MOSAIC_EMU_TRY(nonNull(__func__, desc, "desc"));
  for (size_t i = 0; i < count; ++i) {
    std::string operand = "desc[" + std::to_string(i) + "].location";
    MOSAIC_EMU_TRY(
        checkDeviceLocation(__func__, operand.c_str(), desc[i].location));
    CUmemAccess_flags flags = desc[i].flags;
    if (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
        flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                  "`desc[" + std::to_string(i) + "].flags` " +
                      std::to_string(int(flags)) +
                      " is not a CU_MEM_ACCESS_FLAGS_PROT_* value");
  }
  std::vector<std::map<uint64_t, Mapping>::iterator> mappings;
  MOSAIC_EMU_TRY(mappingsIn(__func__, ptr, size, mappings));
  for (auto mapping : mappings) {
    for (size_t i = 0; i < count; ++i) {
      uint32_t device = static_cast<uint32_t>(desc[i].location.id);
      bool allowed = desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE;
      // PROT_READ grants read-write access: DeviceMemory checks whether a
      // device may access a block at all, not how.
      (void)s.memory.grantAccess(mapping->first, device, allowed);
      mapping->second.access[device] = desc[i].flags;
    }
  }
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemGetAccess(unsigned long long *flags,
                                                  const CUmemLocation *location,
                                                  CUdeviceptr ptr) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, flags, "flags"));
  MOSAIC_EMU_TRY(nonNull(__func__, location, "location"));
  MOSAIC_EMU_TRY(checkDeviceLocation(__func__, "location", *location));
  auto mapping = mappingAt(ptr);
  if (mapping == s.mappings.end())
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                hex(ptr) + " is in no mapping (cuMemMap)");
  auto found = mapping->second.access.find(uint32_t(location->id));
  *flags = found == mapping->second.access.end() ? CU_MEM_ACCESS_FLAGS_PROT_NONE
                                                 : found->second;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemExportToShareableHandle(
    void *shareableHandle, CUmemGenericAllocationHandle handle,
    CUmemAllocationHandleType handleType, unsigned long long flags) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, shareableHandle, "shareableHandle"));
  PhysicalMemory *memory = nullptr;
  MOSAIC_EMU_TRY(findPhysical(__func__, handle, memory));
  MOSAIC_EMU_TRY(checkHandleType(__func__, "handleType", handleType, false));
  if (flags != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`flags` must be 0, not " + std::to_string(flags));
  if (!(memory->properties.requestedHandleTypes &
        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "the allocation was created without "
                "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR in "
                "`prop->requestedHandleTypes`");
  int fd = fcntl(memory->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0)
    return fail(CUDA_ERROR_OUT_OF_MEMORY, __func__,
                "cannot duplicate the memfd: " + errnoText());
  memory->shared = true;
  markMappingsShared(memory);
  *static_cast<int *>(shareableHandle) = fd;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemImportFromShareableHandle(
    CUmemGenericAllocationHandle *handle, void *osHandle,
    CUmemAllocationHandleType shHandleType) {
  State &s = state();
  Lock lock(s.mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, handle, "handle"));
  MOSAIC_EMU_TRY(
      checkHandleType(__func__, "shHandleType", shHandleType, false));
  // cuda.h passes a POSIX file descriptor as the pointer's value.
  int fd = static_cast<int>(reinterpret_cast<intptr_t>(osHandle));
  std::optional<uint32_t> owner = exportedOwner(fd);
  if (!owner)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "file descriptor " + std::to_string(fd) +
                    " is not memory exported by the emulator "
                    "(cuMemExportToShareableHandle)");
  if (*owner >= deviceCount())
    return fail(CUDA_ERROR_INVALID_DEVICE, __func__,
                "the memory belongs to device " + std::to_string(*owner) +
                    ", which this process does not have; set "
                    "MOSAIC_EMULATOR_DEVICES to the exporter's count");
  struct stat status;
  if (fstat(fd, &status) != 0)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "cannot read the size of file descriptor " +
                    std::to_string(fd) + ": " + errnoText());
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0)
    return fail(CUDA_ERROR_OUT_OF_MEMORY, __func__,
                "cannot duplicate file descriptor " + std::to_string(fd) +
                    ": " + errnoText());
  auto memory = std::make_unique<PhysicalMemory>();
  memory->fd = own;
  memory->size = static_cast<uint64_t>(status.st_size);
  memory->device = *owner;
  memory->shared = true;
  memory->properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  memory->properties.requestedHandleTypes =
      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  memory->properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  memory->properties.location.id = static_cast<int>(*owner);
  *handle = reinterpret_cast<CUmemGenericAllocationHandle>(memory.get());
  s.physical.emplace(memory.get(), std::move(memory));
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(
    CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, prop, "prop"));
  PhysicalMemory *memory = nullptr;
  MOSAIC_EMU_TRY(findPhysical(__func__, handle, memory));
  *prop = memory->properties;
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI
cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(requireInit(__func__));
  MOSAIC_EMU_TRY(nonNull(__func__, handle, "handle"));
  auto mapping = mappingAt(reinterpret_cast<uint64_t>(addr));
  if (mapping == state().mappings.end())
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                hex(reinterpret_cast<uint64_t>(addr)) +
                    " is in no mapping (cuMemMap)");
  PhysicalMemory *memory = mapping->second.memory;
  ++memory->handleReferences;
  *handle = reinterpret_cast<CUmemGenericAllocationHandle>(memory);
  return CUDA_SUCCESS;
}
