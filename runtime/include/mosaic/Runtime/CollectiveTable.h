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

#include "mosaic/Contracts/CollectiveTable.h"
#include "mosaic/Contracts/Status.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mosaic::runtime {

/// Where each field of one table lies, in bytes from its start, for D
/// devices, S symmetric buffer parameters and P peer tensor maps. The
/// offsets are the contract's (mosaic/Contracts/CollectiveTable.h, which the
/// lowering reads too); this names them for one table.
struct CollectiveTableLayout {
  static constexpr size_t kDeviceIdOffset = collective_table::kDeviceIdOffset;
  static constexpr size_t kDeviceCountOffset =
      collective_table::kDeviceCountOffset;
  static constexpr size_t kSymmetricCountOffset =
      collective_table::kSymmetricCountOffset;
  static constexpr size_t kTensorMapsOffsetOffset =
      collective_table::kTensorMapsOffsetOffset;
  static constexpr size_t kPeersOffset = collective_table::kPeersOffset;
  static constexpr size_t kTensorMapAlignment =
      collective_table::kTensorMapsAlignment;

  uint32_t deviceCount = 0;
  uint32_t symmetricCount = 0;
  uint32_t peerMapCount = 0;

  /// peers[s][q].
  size_t peerOffset(uint32_t s, uint32_t q) const {
    return collective_table::peerOffset(s, q, deviceCount);
  }
  /// Where the maps start: 0 when there are none.
  size_t tensorMapsOffset() const {
    return collective_table::tensorMapsOffset(symmetricCount, deviceCount,
                                              peerMapCount);
  }
  /// maps[p][q].
  size_t mapOffset(uint32_t p, uint32_t q) const {
    return tensorMapsOffset() +
           sizeof(CUtensorMap) * (size_t(p) * deviceCount + q);
  }
  /// The table's size in bytes.
  size_t bytes() const {
    return collective_table::tableBytes(symmetricCount, deviceCount,
                                        peerMapCount);
  }
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
