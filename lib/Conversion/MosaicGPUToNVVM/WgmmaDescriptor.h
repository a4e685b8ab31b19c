//===- WgmmaDescriptor.h - The wgmma matrix descriptor ----------*- C++ -*-===//
//
// Plain C++ (no MLIR), so that the encoding is unit-tested on its own
// (test/Unit/Conversion/WgmmaDescriptorTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_CONVERSION_MOSAICGPUTONVVM_WGMMADESCRIPTOR_H
#define MOSAIC_CONVERSION_MOSAICGPUTONVVM_WGMMADESCRIPTOR_H

#include <cstdint>

namespace mosaic {

/// The 64-bit descriptor through which `wgmma.mma_async` reads a matrix
/// from shared memory, as the PTX ISA's "Matrix Descriptor Format" defines
/// it (wgmma chapter 9.7.15, "Asynchronous Warpgroup Level Matrix Shared
/// Memory Layout", https://docs.nvidia.com/cuda/parallel-thread-execution/
/// #asynchronous-warpgroup-level-matrix-shared-memory-layout-matrix-descriptor):
///
///   bits  0-13  matrix-descriptor-encode(matrix start address)
///   bits 16-29  matrix-descriptor-encode(leading dimension byte offset)
///   bits 32-45  matrix-descriptor-encode(stride dimension byte offset)
///   bits 49-51  matrix base offset
///   bits 62-63  swizzle mode (0 none, 1 128-byte, 2 64-byte, 3 32-byte)
///
/// where matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4: shared-memory
/// addresses and byte offsets, 16-byte aligned, in 16-byte units.
///
/// The bitfields give each field its width; encode() places them, so the
/// value does not depend on how the compiler lays out bitfields.
struct WgmmaMatrixDescriptor {
  enum class Swizzle : uint64_t {
    None = 0,
    Bytes128 = 1,
    Bytes64 = 2,
    Bytes32 = 3,
  };

  /// matrix-descriptor-encode: the 18 address bits of shared memory
  /// (256 KiB), in 16-byte units.
  static constexpr uint64_t kAddressMask = 0x3FFFF;
  static constexpr uint64_t kUnitShift = 4;

  static constexpr unsigned kStartAddressBit = 0;
  static constexpr unsigned kLeadingByteOffsetBit = 16;
  static constexpr unsigned kStrideByteOffsetBit = 32;
  static constexpr unsigned kBaseOffsetBit = 49;
  static constexpr unsigned kSwizzleBit = 62;

  uint64_t startAddress : 14;
  uint64_t leadingByteOffset : 14;
  uint64_t strideByteOffset : 14;
  /// 0 when the swizzle pattern repeats from the buffer's start, which the
  /// lowering guarantees (swizzled buffers are aligned to the repeat).
  uint64_t baseOffset : 3;
  uint64_t swizzle : 2;

  static constexpr uint64_t encodeBytes(uint64_t bytes) {
    return (bytes & kAddressMask) >> kUnitShift;
  }

  /// The swizzle mode of a `swizzleBytes` swizzle; None for anything but
  /// 32, 64 and 128.
  static constexpr Swizzle swizzleOf(int64_t swizzleBytes) {
    switch (swizzleBytes) {
    case 128:
      return Swizzle::Bytes128;
    case 64:
      return Swizzle::Bytes64;
    case 32:
      return Swizzle::Bytes32;
    default:
      return Swizzle::None;
    }
  }

  /// The descriptor of a matrix at shared address `startBytes`, with base
  /// offset 0.
  static constexpr WgmmaMatrixDescriptor create(uint64_t startBytes,
                                                uint64_t leadingBytes,
                                                uint64_t strideBytes,
                                                Swizzle swizzle) {
    WgmmaMatrixDescriptor descriptor{};
    descriptor.startAddress = encodeBytes(startBytes);
    descriptor.leadingByteOffset = encodeBytes(leadingBytes);
    descriptor.strideByteOffset = encodeBytes(strideBytes);
    descriptor.swizzle = static_cast<uint64_t>(swizzle);
    return descriptor;
  }

  constexpr uint64_t encode() const {
    return uint64_t(startAddress) << kStartAddressBit |
           uint64_t(leadingByteOffset) << kLeadingByteOffsetBit |
           uint64_t(strideByteOffset) << kStrideByteOffsetBit |
           uint64_t(baseOffset) << kBaseOffsetBit |
           uint64_t(swizzle) << kSwizzleBit;
  }
};

} // namespace mosaic

#endif // MOSAIC_CONVERSION_MOSAICGPUTONVVM_WGMMADESCRIPTOR_H
