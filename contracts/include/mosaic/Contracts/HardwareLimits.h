//===- HardwareLimits.h - The sm_90a limits every component checks -*- C++
//-*-===//
//
// The limits of the target that the compiler, the runtime, the emulator and
// the Python package each check, with where each comes from. A component
// that checks one of them includes this header instead of spelling the
// number.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_CONTRACTS_HARDWARELIMITS_H
#define MOSAIC_CONTRACTS_HARDWARELIMITS_H

#include <cstdint>

namespace mosaic::limits {

/// The most shared memory one block can use on sm_90a: 227 KiB
/// (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN on an H100/H200;
/// CUDA C Programming Guide, "Compute Capabilities", table 22).
inline constexpr int64_t kMaxSharedMemoryPerBlock = 227 * 1024;

/// The most local memory one thread can use: 512 KiB (CUDA C Programming
/// Guide, "Compute Capabilities", table 22).
inline constexpr int64_t kMaxLocalMemoryPerThread = 512 * 1024;

/// The most bytes of kernel parameters: 32,764 on Volta and later with
/// CUDA 12.1 and PTX ISA 8.1 (CUDA C Programming Guide, "Function
/// Parameters").
inline constexpr int64_t kMaxKernelParameterBytes = 32764;

/// The alignment, in bytes, the launch contract gives every buffer argument
/// and TMA needs of a global address and of every global stride
/// (cuTensorMapEncodeTiled: globalAddress and globalStrides, multiples of
/// 16; 32 with 32-byte interleave).
inline constexpr int64_t kGlobalAlignment = 16;

/// A CUtensorMap is 128 opaque bytes, passed by value 64-byte aligned
/// (cuda.h: `CUtensorMap`, `CU_TENSOR_MAP_NUM_QWORDS` 16, `alignas(64)`).
inline constexpr int64_t kTensorMapBytes = 128;
inline constexpr int64_t kTensorMapAlignment = 64;

/// cuTensorMapEncodeTiled's ranges: rank 1 to 5, box dims 1 to 256,
/// element strides 1 to 8, and the box's inner extent a multiple of 16
/// bytes when not interleaved.
inline constexpr unsigned kMaxTensorMapRank = 5;
inline constexpr uint32_t kMaxTensorMapBoxDim = 256;
inline constexpr uint32_t kMaxTensorMapElementStride = 8;
inline constexpr int64_t kTensorMapInnerBoxMultiple = 16;

/// The most CTAs in a cluster: 8 portably, 16 on sm_90a for a kernel with
/// CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED (CUDA C Programming
/// Guide, "Thread Block Clusters").
inline constexpr uint32_t kMaxPortableClusterSize = 8;
inline constexpr uint32_t kMaxClusterSize = 16;

} // namespace mosaic::limits

#endif // MOSAIC_CONTRACTS_HARDWARELIMITS_H
