//===- Spec.h - Hardware layouts and numerics from the PTX ISA -*- C++ -*-===//
//
// The facts the emulator takes from the PTX ISA, as pure functions so that
// golden tests can check them one by one:
//  - shared-memory swizzling (PTX ISA 5.5.7, tensor copies: 16-byte chunks
//    XOR-permuted by address bits, span 32, 64 or 128 bytes);
//  - the wgmma shared-memory matrix descriptor (9.7.15.5.1) and the
//    canonical layouts it describes (K-major and MN-major, each swizzle);
//  - which thread and register hold which element of a wgmma accumulator
//    or register A fragment (9.7.15.5, "Register fragments");
//  - the floating-point formats (bf16, f16, tf32, e4m3, e5m2) with every
//    rounding mode `cvt` names.
// None of it is taken from the compiler in lib/.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_SPEC_H
#define MOSAIC_EMULATOR_SPEC_H

#include <cstdint>
#include <utility>

namespace mosaic::emulator::spec {

/// The shared-memory address a swizzled access of span `spanBytes` (0, 32,
/// 64, 128) really touches: bits [4, 4+b) ^= bits [7, 7+b) with b = log2 of
/// the span in 16-byte chunks. The pattern repeats every 8 * span bytes.
uint32_t swizzle(uint32_t address, uint32_t spanBytes);

/// A wgmma shared-memory matrix descriptor, decoded.
/// Bits 0-13: start address >> 4; 16-29: leading dimension byte offset >>
/// 4; 32-45: stride dimension byte offset >> 4; 49-51: base offset; 62-63:
/// layout (0 interleave / no swizzle, 1 128B, 2 64B, 3 32B).
struct MatrixDescriptor {
  uint32_t startAddress = 0;
  uint32_t leadingByteOffset = 0;
  uint32_t strideByteOffset = 0;
  uint32_t baseOffset = 0;
  /// 0 (none), 32, 64 or 128.
  uint32_t swizzleBytes = 0;

  static MatrixDescriptor decode(uint64_t bits);
  uint64_t encode() const;
};

/// The shared-memory byte address of element (mn, k) of a wgmma operand
/// described by `descriptor`: for A, mn is the row (M); for B, mn is the
/// column (N). `mnMajor` is the transposed layout (MN contiguous); the
/// default, K-major, has K contiguous. Canonical layouts in units of
/// T = 16 bytes / element size (also stated by CUTLASS's GMMA traits):
///   K-major,  no swizzle: ((8,m),(T,2k)) : ((1T,SBO),(1,LBO))
///   K-major,  swizzle S:  ((8,m),(T,2k)) : ((S/16 T,SBO),(1,T))
///   MN-major, no swizzle: ((T,1,m),(8,k)) : ((1,T,SBO),(1T,LBO))
///   MN-major, swizzle S:  ((T,S/16,m),(8,k)) : ((1,T,LBO),(S/16 T,SBO))
/// and the swizzle applies to the resulting absolute address.
uint32_t operandAddress(const MatrixDescriptor &descriptor, bool mnMajor,
                        uint32_t mn, uint32_t k, uint32_t elementBits);

/// (row, column) of accumulator element `index` of warpgroup thread
/// `thread` (0-127) for m64nNk*: row = 16 warp + lane/4 + 8 ((index/2) % 2),
/// column = 8 (index/4) + 2 (lane % 4) + index % 2. For f16 accumulators the
/// 32-bit register r holds elements 2r and 2r+1.
std::pair<uint32_t, uint32_t> accumulatorElement(uint32_t thread,
                                                 uint32_t index);

/// (row, k) of element `index` of the register A fragment of thread
/// `thread` for an A of `elementBits`-bit elements (16: m64k16, 8: m64k32,
/// 32 (tf32): m64k8). Elements are numbered as packed in the registers:
/// register index * (32 / elementBits) + position in the register.
std::pair<uint32_t, uint32_t> registerAElement(uint32_t thread, uint32_t index,
                                               uint32_t elementBits);

} // namespace mosaic::emulator::spec

#endif // MOSAIC_EMULATOR_SPEC_H
