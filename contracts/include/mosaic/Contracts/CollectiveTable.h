//===- CollectiveTable.h - The layout of a kernel's collective table -*- C++
//-*-===//
//
// A kernel that spans devices takes one more parameter after the others: a
// pointer to its collective table, which the runtime fills for each device
// before the launch and the lowering reads (docs/RationaleMultiDevice.md,
// "The kernel's collective table"). Little-endian, offsets in bytes:
//
//   0   u32 device_id
//   4   u32 device_count                  D
//   8   u32 symmetric_count               S
//   12  u32 tensor_maps_offset            128-byte aligned; 0 without peer maps
//   16  u64 peers[S][D]
//   tensor_maps_offset: CUtensorMap maps[P][D]
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_CONTRACTS_COLLECTIVETABLE_H
#define MOSAIC_CONTRACTS_COLLECTIVETABLE_H

#include "mosaic/Contracts/HardwareLimits.h"

#include <cstdint>

namespace mosaic::collective_table {

inline constexpr uint64_t kDeviceIdOffset = 0;
inline constexpr uint64_t kDeviceCountOffset = 4;
inline constexpr uint64_t kSymmetricCountOffset = 8;
inline constexpr uint64_t kTensorMapsOffsetOffset = 12;
/// Where `peers` starts, and the bytes of one entry (a device address).
inline constexpr uint64_t kPeersOffset = 16;
inline constexpr uint64_t kPeerBytes = 8;
/// The alignment of `maps`; each is a 128-byte CUtensorMap.
inline constexpr uint64_t kTensorMapsAlignment = 128;

/// The offset of peers[s][q] in a table for `devices` devices.
constexpr uint64_t peerOffset(uint64_t s, uint64_t q, uint64_t devices) {
  return kPeersOffset + kPeerBytes * (s * devices + q);
}

/// tensor_maps_offset for S symmetric buffers, D devices and P peer maps.
constexpr uint64_t tensorMapsOffset(uint64_t symmetric, uint64_t devices,
                                    uint64_t peerMaps) {
  if (peerMaps == 0)
    return 0;
  uint64_t end = peerOffset(symmetric, 0, devices);
  return (end + kTensorMapsAlignment - 1) / kTensorMapsAlignment *
         kTensorMapsAlignment;
}

/// The bytes of the whole table.
constexpr uint64_t tableBytes(uint64_t symmetric, uint64_t devices,
                              uint64_t peerMaps) {
  if (peerMaps == 0)
    return peerOffset(symmetric, 0, devices);
  return tensorMapsOffset(symmetric, devices, peerMaps) +
         limits::kTensorMapBytes * peerMaps * devices;
}

} // namespace mosaic::collective_table

#endif // MOSAIC_CONTRACTS_COLLECTIVETABLE_H
