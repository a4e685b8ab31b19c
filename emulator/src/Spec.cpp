//===- Spec.cpp - Hardware layouts from the PTX ISA ---------------------===//

#include "mosaic/Emulator/Spec.h"

namespace mosaic::emulator::spec {

uint32_t swizzle(uint32_t address, uint32_t spanBytes) {
  if (spanBytes < 32)
    return address;
  uint32_t chunkMask = spanBytes / 16 - 1; // 1, 3 or 7
  return address ^ (((address >> 7) & chunkMask) << 4);
}

MatrixDescriptor MatrixDescriptor::decode(uint64_t bits) {
  MatrixDescriptor d;
  d.startAddress = static_cast<uint32_t>(bits & 0x3fff) << 4;
  d.leadingByteOffset = static_cast<uint32_t>((bits >> 16) & 0x3fff) << 4;
  d.strideByteOffset = static_cast<uint32_t>((bits >> 32) & 0x3fff) << 4;
  d.baseOffset = static_cast<uint32_t>((bits >> 49) & 0x7);
  static const uint32_t swizzles[4] = {0, 128, 64, 32};
  d.swizzleBytes = swizzles[(bits >> 62) & 0x3];
  return d;
}

uint64_t MatrixDescriptor::encode() const {
  uint64_t layout = swizzleBytes == 128  ? 1
                    : swizzleBytes == 64 ? 2
                    : swizzleBytes == 32 ? 3
                                         : 0;
  return (uint64_t(startAddress >> 4) & 0x3fff) |
         ((uint64_t(leadingByteOffset >> 4) & 0x3fff) << 16) |
         ((uint64_t(strideByteOffset >> 4) & 0x3fff) << 32) |
         ((uint64_t(baseOffset) & 0x7) << 49) | (layout << 62);
}

uint32_t operandAddress(const MatrixDescriptor &d, bool mnMajor, uint32_t mn,
                        uint32_t k, uint32_t elementBits) {
  // Work in bits along the contiguous dimension, so that sub-byte and
  // byte types share the arithmetic; everything else is whole bytes.
  uint32_t elementsPerChunk = 128 / elementBits; // T
  uint32_t offset;
  if (!mnMajor) {
    uint32_t chunk = k / elementsPerChunk;
    uint32_t inChunk = (k % elementsPerChunk) * elementBits / 8;
    uint32_t row = mn % 8, group = mn / 8;
    if (d.swizzleBytes == 0)
      offset = row * 16 + group * d.strideByteOffset +
               chunk * d.leadingByteOffset + inChunk;
    else
      offset = row * d.swizzleBytes + group * d.strideByteOffset +
               chunk * 16 + inChunk;
  } else {
    uint32_t inChunk = (mn % elementsPerChunk) * elementBits / 8;
    uint32_t row = k % 8, kGroup = k / 8;
    if (d.swizzleBytes == 0) {
      uint32_t mnGroup = mn / elementsPerChunk;
      offset = inChunk + mnGroup * d.strideByteOffset + row * 16 +
               kGroup * d.leadingByteOffset;
    } else {
      uint32_t chunksPerRow = d.swizzleBytes / 16;
      uint32_t chunk = (mn / elementsPerChunk) % chunksPerRow;
      uint32_t atom = mn / (elementsPerChunk * chunksPerRow);
      offset = inChunk + chunk * 16 + atom * d.leadingByteOffset +
               row * d.swizzleBytes + kGroup * d.strideByteOffset;
    }
  }
  return swizzle(d.startAddress + offset, d.swizzleBytes);
}

std::pair<uint32_t, uint32_t> accumulatorElement(uint32_t thread,
                                                 uint32_t index) {
  uint32_t warp = thread / 32, lane = thread % 32;
  return {16 * warp + lane / 4 + 8 * ((index / 2) % 2),
          8 * (index / 4) + 2 * (lane % 4) + index % 2};
}

std::pair<uint32_t, uint32_t> registerAElement(uint32_t thread, uint32_t index,
                                               uint32_t elementBits) {
  uint32_t warp = thread / 32, lane = thread % 32;
  uint32_t group = lane / 4, inGroup = lane % 4;
  uint32_t base = 16 * warp + group;
  switch (elementBits) {
  case 32: // tf32, m64k8: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
    return {base + 8 * (index % 2), inGroup + 4 * (index / 2)};
  case 8: // m64k32: 4 elements per register
    return {base + 8 * ((index / 4) % 2), 4 * inGroup + index % 4 +
                                              16 * (index / 8)};
  default: // 16-bit, m64k16: 2 elements per register
    return {base + 8 * ((index / 2) % 2), 2 * inGroup + index % 2 +
                                              8 * (index / 4)};
  }
}

} // namespace mosaic::emulator::spec
