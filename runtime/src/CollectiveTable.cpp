//===- CollectiveTable.cpp - The table of a kernel that spans devices ---===//

#include "mosaic/Runtime/CollectiveTable.h"

#include <cstring>
#include <string>

namespace mosaic::runtime {

namespace {

/// Little-endian stores, whatever the host's byte order.
void store32(std::vector<uint8_t> &bytes, size_t offset, uint32_t value) {
  for (int i = 0; i < 4; ++i)
    bytes[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

void store64(std::vector<uint8_t> &bytes, size_t offset, uint64_t value) {
  for (int i = 0; i < 8; ++i)
    bytes[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

} // namespace

Expected<std::vector<uint8_t>>
encodeCollectiveTable(uint32_t deviceId, uint32_t deviceCount,
                      const std::vector<std::vector<CUdeviceptr>> &peers,
                      const std::vector<std::vector<CUtensorMap>> &maps) {
  if (deviceCount == 0)
    return Error{"a collective table needs at least one device"};
  if (deviceId >= deviceCount)
    return Error{"device id " + std::to_string(deviceId) +
                 " is not below the device count " +
                 std::to_string(deviceCount)};
  auto checkRows = [&](const auto &rows, const char *what) -> Status {
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].size() != deviceCount)
        return Error{std::string(what) + " " + std::to_string(i) + " has " +
                     std::to_string(rows[i].size()) +
                     " entries, one per device " + "expected (" +
                     std::to_string(deviceCount) + ")"};
    return Status();
  };
  MOSAIC_RETURN_IF_ERROR(checkRows(peers, "symmetric buffer"));
  MOSAIC_RETURN_IF_ERROR(checkRows(maps, "peer tensor map"));

  CollectiveTableLayout layout{deviceCount, static_cast<uint32_t>(peers.size()),
                               static_cast<uint32_t>(maps.size())};
  std::vector<uint8_t> bytes(layout.bytes(), 0);
  store32(bytes, CollectiveTableLayout::kDeviceIdOffset, deviceId);
  store32(bytes, CollectiveTableLayout::kDeviceCountOffset, deviceCount);
  store32(bytes, CollectiveTableLayout::kSymmetricCountOffset,
          layout.symmetricCount);
  store32(bytes, CollectiveTableLayout::kTensorMapsOffsetOffset,
          static_cast<uint32_t>(layout.tensorMapsOffset()));
  for (uint32_t s = 0; s < layout.symmetricCount; ++s)
    for (uint32_t q = 0; q < deviceCount; ++q)
      store64(bytes, layout.peerOffset(s, q), peers[s][q]);
  // A CUtensorMap is opaque bytes the driver wrote for this host, which is
  // the device's byte order.
  for (uint32_t p = 0; p < layout.peerMapCount; ++p)
    for (uint32_t q = 0; q < deviceCount; ++q)
      std::memcpy(&bytes[layout.mapOffset(p, q)], &maps[p][q],
                  sizeof(CUtensorMap));
  return bytes;
}

} // namespace mosaic::runtime
