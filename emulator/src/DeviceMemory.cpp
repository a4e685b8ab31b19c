//===- DeviceMemory.cpp - Global memory in host memory ------------------===//
//
// Each allocation is a 256-byte aligned block of host memory (cuMemAlloc's
// alignment), zero-filled so that a kernel reading memory nobody wrote sees
// the same values on every run. The block's host address is its device
// address: kernels receive it as is, and every access they make goes through
// `translate`, which accepts only ranges inside one live allocation.
//
// Each block belongs to a device; which other devices a kernel may reach it
// from is the block's own grant list (virtual-memory mappings) or the
// device pairs with peer access enabled.
//
// Blocks come from calloc, which hands out large blocks as fresh zero pages
// without touching them, so a big allocation costs only what a kernel uses.
// calloc does not align to 256 bytes: each block is placed at the first
// 256-byte boundary at least 8 bytes into its calloc region, and the region's
// start is kept in those 8 bytes, outside the allocation.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Emulator/Machine.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>

namespace mosaic::emulator {

namespace {

constexpr uint64_t kAllocationAlignment = 256;
/// calloc'ed bytes beyond the allocation: room for the region's start and
/// for moving to a 256-byte boundary.
constexpr uint64_t kSlack = sizeof(void *) + kAllocationAlignment - 1;

void *region(uint64_t base) {
  void *start;
  std::memcpy(&start, reinterpret_cast<void *>(base - sizeof(void *)),
              sizeof(start));
  return start;
}

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(value));
  return text;
}

} // namespace

DeviceMemory::~DeviceMemory() {
  for (const auto &[base, block] : blocks)
    if (!block.mapped)
      std::free(region(base));
}

Expected<uint64_t> DeviceMemory::allocate(uint64_t bytes, uint32_t device) {
  // A zero-byte allocation still gets a block of its own, so that its
  // address is unique (the driver refuses zero bytes before it gets here).
  if (bytes > std::numeric_limits<size_t>::max() - kSlack)
    return Error{"cannot allocate " + std::to_string(bytes) +
                 " bytes of device memory: the size does not fit the host's "
                 "address space"};
  void *start = std::calloc(1, bytes + kSlack);
  if (!start)
    return Error{"cannot allocate " + std::to_string(bytes) +
                 " bytes of device memory: the host is out of memory"};
  uint64_t base = (reinterpret_cast<uint64_t>(start) + kSlack) &
                  ~(kAllocationAlignment - 1);
  std::memcpy(reinterpret_cast<void *>(base - sizeof(void *)), &start,
              sizeof(start));
  std::lock_guard<std::mutex> lock(mutex);
  blocks.emplace(base, Block{bytes, device, false, {}, false});
  return base;
}

Status DeviceMemory::addMapping(uint64_t address, uint64_t bytes,
                                uint32_t owner) {
  if (bytes == 0)
    return Error{"an empty mapping at " + hex(address)};
  std::lock_guard<std::mutex> lock(mutex);
  auto next = blocks.lower_bound(address);
  if (next != blocks.end() && next->first < address + bytes)
    return Error{"the mapping [" + hex(address) + ", " + hex(address + bytes) +
                 ") overlaps device memory at " + hex(next->first)};
  if (next != blocks.begin()) {
    auto before = std::prev(next);
    if (before->first + before->second.size > address)
      return Error{"the mapping at " + hex(address) +
                   " overlaps device memory at " + hex(before->first)};
  }
  blocks.emplace(address, Block{bytes, owner, true, {}, false});
  return Status();
}

Status DeviceMemory::removeMapping(uint64_t address) {
  std::lock_guard<std::mutex> lock(mutex);
  auto found = blocks.find(address);
  if (found == blocks.end() || !found->second.mapped)
    return Error{hex(address) + " is not a mapping"};
  blocks.erase(found);
  return Status();
}

Status DeviceMemory::markShared(uint64_t address) {
  std::lock_guard<std::mutex> lock(mutex);
  auto found = blocks.find(address);
  if (found == blocks.end() || !found->second.mapped)
    return Error{hex(address) + " is not a mapping"};
  found->second.shared = true;
  return Status();
}

bool DeviceMemory::sharedWithOtherProcesses(uint64_t address) const {
  std::lock_guard<std::mutex> lock(mutex);
  const Block *block = containing(address, 1);
  return block && block->shared;
}

Status DeviceMemory::grantAccess(uint64_t address, uint32_t device,
                                 bool allowed) {
  std::lock_guard<std::mutex> lock(mutex);
  auto found = blocks.find(address);
  if (found == blocks.end())
    return Error{hex(address) + " is not the start of device memory"};
  std::set<uint32_t> &granted = found->second.granted;
  if (allowed)
    granted.insert(device);
  else
    granted.erase(device);
  return Status();
}

void DeviceMemory::setPeerAccess(uint32_t from, uint32_t to, bool enabled) {
  std::lock_guard<std::mutex> lock(mutex);
  if (enabled)
    peers.insert({from, to});
  else
    peers.erase({from, to});
}

std::optional<uint32_t> DeviceMemory::owner(uint64_t address) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto next = blocks.upper_bound(address);
  if (next == blocks.begin())
    return std::nullopt;
  auto block = std::prev(next);
  if (address - block->first >= block->second.size)
    return std::nullopt;
  return block->second.device;
}

Status DeviceMemory::free(uint64_t address) {
  std::unique_lock<std::mutex> lock(mutex);
  auto found = blocks.find(address);
  if (found == blocks.end()) {
    lock.unlock();
    if (auto inside = range(address))
      return Error{hex(address) + " is inside the device allocation at " +
                   hex(inside->first) + " (" + std::to_string(inside->second) +
                   " bytes), not at its start"};
    return Error{hex(address) + " is not a device allocation"};
  }
  if (found->second.mapped)
    return Error{hex(address) + " is a virtual-memory mapping; unmap it "
                                "instead of freeing it"};
  std::free(region(found->first));
  blocks.erase(found);
  return Status();
}

std::optional<std::pair<uint64_t, uint64_t>>
DeviceMemory::range(uint64_t address) const {
  std::lock_guard<std::mutex> lock(mutex);
  auto next = blocks.upper_bound(address);
  if (next == blocks.begin())
    return std::nullopt;
  auto block = std::prev(next);
  if (address - block->first >= block->second.size)
    return std::nullopt;
  return std::make_pair(block->first, block->second.size);
}

uint8_t *DeviceMemory::translate(uint64_t address, uint64_t bytes) const {
  std::lock_guard<std::mutex> lock(mutex);
  const Block *block = containing(address, bytes);
  return block ? reinterpret_cast<uint8_t *>(address) : nullptr;
}

uint8_t *DeviceMemory::translate(uint64_t address, uint64_t bytes,
                                 uint32_t device, std::string &why) const {
  std::lock_guard<std::mutex> lock(mutex);
  const Block *block = containing(address, bytes);
  if (!block) {
    why.clear();
    return nullptr;
  }
  if (block->device != device && !block->granted.count(device) &&
      !peers.count({device, block->device})) {
    why = hex(address) + " is memory of device " +
          std::to_string(block->device) + ", which device " +
          std::to_string(device) +
          " may not access: enable peer access (cuCtxEnablePeerAccess) or "
          "grant it with cuMemSetAccess";
    return nullptr;
  }
  return reinterpret_cast<uint8_t *>(address);
}

const DeviceMemory::Block *DeviceMemory::containing(uint64_t address,
                                                    uint64_t bytes) const {
  auto next = blocks.upper_bound(address);
  if (next == blocks.begin())
    return nullptr;
  auto block = std::prev(next);
  uint64_t offset = address - block->first;
  // [address, address + bytes) inside [base, base + size), written so that
  // nothing overflows; an empty range must still start inside the block.
  if (offset >= block->second.size || bytes > block->second.size - offset)
    return nullptr;
  return &block->second;
}

uint64_t DeviceMemory::allocatedBytes() const {
  std::lock_guard<std::mutex> lock(mutex);
  uint64_t total = 0;
  for (const auto &[base, block] : blocks)
    if (!block.mapped)
      total += block.size;
  return total;
}

} // namespace mosaic::emulator
