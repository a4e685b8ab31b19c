//===- CollectiveTable.h - A multi-device kernel's table -----*- C++ -*-===//
//
// A kernel that spans devices takes one more parameter after the user's: an
// 8-byte pointer to its *collective table*, which the runtime fills in each
// device's memory before the launch (docs/RationaleMultiDevice.md, "The
// kernel's collective table"). This header owns the table's layout and its
// bytes; `Kernel::prepare` with `CollectiveArguments` encodes the peer
// tensor maps and uploads the table.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_RUNTIME_COLLECTIVETABLE_H
#define MOSAIC_RUNTIME_COLLECTIVETABLE_H

#include "mosaic/Contracts/Status.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mosaic::runtime {

/// Where each field of one table lies, in bytes from its start, for D
/// devices, S symmetric buffer parameters and P peer tensor maps:
///
///   0   u32 device_id
///   4   u32 device_count                D
///   8   u32 symmetric_count             S
///   12  u32 tensor_maps_offset          128-byte aligned; 0 without maps
///   16  u64 peers[S][D]
///   tensor_maps_offset: CUtensorMap maps[P][D]
struct CollectiveTableLayout {
  static constexpr size_t kDeviceIdOffset = 0;
  static constexpr size_t kDeviceCountOffset = 4;
  static constexpr size_t kSymmetricCountOffset = 8;
  static constexpr size_t kTensorMapsOffsetOffset = 12;
  static constexpr size_t kPeersOffset = 16;
  /// A CUtensorMap in global memory must be 64-byte aligned; the contract
  /// asks for 128, the map's size, so no map straddles two cache lines.
  static constexpr size_t kTensorMapAlignment = 128;

  uint32_t deviceCount = 0;
  uint32_t symmetricCount = 0;
  uint32_t peerMapCount = 0;

  /// peers[s][q].
  size_t peerOffset(uint32_t s, uint32_t q) const {
    return kPeersOffset + 8 * (size_t(s) * deviceCount + q);
  }
  /// Where the maps start: 0 when there are none.
  size_t tensorMapsOffset() const;
  /// maps[p][q].
  size_t mapOffset(uint32_t p, uint32_t q) const {
    return tensorMapsOffset() +
           sizeof(CUtensorMap) * (size_t(p) * deviceCount + q);
  }
  /// The table's size in bytes.
  size_t bytes() const;
};

/// The bytes of device `deviceId`'s table: `peers[s][q]` is symmetric
/// buffer s of device q as this device addresses it (S rows of D), and
/// `maps[p][q]` peer tensor map p over device q's buffer (P rows of D).
/// Checks the shapes and the id; the pointers are the caller's.
Expected<std::vector<uint8_t>>
encodeCollectiveTable(uint32_t deviceId, uint32_t deviceCount,
                      const std::vector<std::vector<CUdeviceptr>> &peers,
                      const std::vector<std::vector<CUtensorMap>> &maps);

} // namespace mosaic::runtime

#endif // MOSAIC_RUNTIME_COLLECTIVETABLE_H
