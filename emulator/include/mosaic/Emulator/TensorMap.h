//===- TensorMap.h - The emulator's CUtensorMap encoding ------*- C++ -*-===//
//
// CUtensorMap is 128 opaque bytes whose hardware layout NVIDIA does not
// document, so the emulator defines its own: `TensorMap` below, stored after
// a magic number. `encodeTiled` applies the rules cuda.h states for
// cuTensorMapEncodeTiled and is what the exported driver entry point calls;
// the TMA instructions decode the 128 bytes they are given with `decode`.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_TENSORMAP_H
#define MOSAIC_EMULATOR_TENSORMAP_H

#include "mosaic/Emulator/Status.h"

#include <array>
#include <cstdint>

namespace mosaic::emulator {

constexpr unsigned kTensorMapBytes = 128;

/// CUtensorMapDataType, numbered as in cuda.h.
enum class TensorDataType : uint32_t {
  U8 = 0,
  U16,
  U32,
  S32,
  U64,
  S64,
  F16,
  F32,
  F64,
  BF16,
  F32Ftz,
  TF32,
  TF32Ftz,
  U4x16Align8 = 13,
  U4x16Align16 = 14,
  U6x16Align16 = 15,
};

/// Bytes per element, 0 for the packed sub-byte types.
unsigned elementBytes(TensorDataType type);
bool isFloat(TensorDataType type);

struct TensorMap {
  TensorDataType dataType = TensorDataType::U8;
  uint32_t rank = 0;
  uint64_t globalAddress = 0;
  /// Innermost dimension first, as in cuda.h.
  std::array<uint64_t, 5> globalDim{};
  /// Bytes between consecutive elements of each dimension; [0] is the
  /// element size (cuda.h passes rank-1 strides, for dims 1..rank-1).
  std::array<uint64_t, 5> globalStrides{};
  std::array<uint32_t, 5> boxDim{};
  std::array<uint32_t, 5> elementStrides{};
  /// CUtensorMapInterleave: 0 none, 1 16B, 2 32B.
  uint32_t interleave = 0;
  /// Swizzle span in bytes: 0 (none), 32, 64 or 128 (CUtensorMapSwizzle
  /// 0..3; the 128B atom variants of CUDA 12.8+ are rejected).
  uint32_t swizzleBytes = 0;
  uint32_t l2Promotion = 0;
  /// CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA.
  bool oobFillNan = false;

  /// Bytes of one box in shared memory.
  uint64_t boxBytes() const;
};

/// Validates cuTensorMapEncodeTiled's arguments (as the driver receives
/// them: rank-1 strides, enum values) and writes the 128-byte encoding.
/// The error names the argument and the rule it breaks.
Status encodeTiled(uint8_t out[kTensorMapBytes], uint32_t dataType,
                   uint32_t rank, uint64_t globalAddress,
                   const uint64_t *globalDim, const uint64_t *globalStrides,
                   const uint32_t *boxDim, const uint32_t *elementStrides,
                   uint32_t interleave, uint32_t swizzle, uint32_t l2Promotion,
                   uint32_t oobFill);

/// The tensor map stored in `bytes`, or an error if they do not hold one
/// written by `encodeTiled` (a kernel given garbage as a tensor map).
Expected<TensorMap> decode(const uint8_t bytes[kTensorMapBytes]);

} // namespace mosaic::emulator

#endif // MOSAIC_EMULATOR_TENSORMAP_H
