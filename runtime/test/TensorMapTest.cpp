//===- TensorMapTest.cpp - cuTensorMapEncodeTiled arguments and rules ---===//
//
// Hand-worked cases: each expected number below is computed in the comment
// beside it from the TMA rules in cuda.h.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Runtime/TensorMap.h"

#include <gtest/gtest.h>

using namespace mosaic;
using namespace mosaic::runtime;

namespace {

BufferParameter buffer(ElementType type, std::vector<int64_t> shape) {
  BufferParameter result;
  result.index = 0;
  result.elementType = type;
  result.shape = std::move(shape);
  return result;
}

TensorMapDescription map(ElementType type, std::vector<uint64_t> dims,
                         std::vector<uint64_t> strides,
                         std::vector<uint32_t> box, unsigned swizzle = 0) {
  TensorMapDescription result;
  result.elementType = type;
  result.rank = static_cast<unsigned>(dims.size());
  result.globalDims = std::move(dims);
  result.globalStrides = std::move(strides);
  result.boxDims = std::move(box);
  result.elementStrides.assign(result.rank, 1);
  result.swizzleBytes = swizzle;
  return result;
}

/// The tma_roundtrip example: a 4096x64 bf16 buffer read in 128x64 boxes
/// through the (8, 64) tiling with the 128-byte swizzle. The tiled view
/// (512 row tiles, 1 column tile, 8 rows, 64 columns), innermost first, has
/// dims [64, 8, 1, 512] and byte strides [64 * 2, 64 * 2, 8 * 128] =
/// [128, 128, 1024]; a box is 16 row tiles of one 8x64 tile.
TensorMapDescription roundTripMap() {
  return map(ElementType::BF16, {64, 8, 1, 512}, {128, 128, 1024},
             {64, 8, 1, 16}, 128);
}

const BufferParameter kRoundTripBuffer = buffer(ElementType::BF16, {4096, 64});
constexpr CUdeviceptr kAddress = 0x7f0000000000;

std::string encodeError(const TensorMapDescription &entry,
                        const BufferParameter &parameter,
                        CUdeviceptr address = kAddress) {
  Expected<TensorMapEncodeArgs> args =
      tensorMapEncodeArgs(entry, parameter, address);
  EXPECT_FALSE(args.ok());
  return args.message();
}

TEST(TensorMap, RoundTripExample) {
  Expected<TensorMapEncodeArgs> args =
      tensorMapEncodeArgs(roundTripMap(), kRoundTripBuffer, kAddress);
  ASSERT_TRUE(args.ok()) << args.message();
  EXPECT_EQ(args->dataType, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(args->rank, 4u);
  EXPECT_EQ(args->globalAddress, reinterpret_cast<void *>(kAddress));
  EXPECT_EQ(args->globalDim, (std::array<cuuint64_t, 5>{64, 8, 1, 512, 0}));
  EXPECT_EQ(args->globalStrides,
            (std::array<cuuint64_t, 4>{128, 128, 1024, 0}));
  EXPECT_EQ(args->boxDim, (std::array<cuuint32_t, 5>{64, 8, 1, 16, 0}));
  EXPECT_EQ(args->elementStrides, (std::array<cuuint32_t, 5>{1, 1, 1, 1, 0}));
  EXPECT_EQ(args->interleave, CU_TENSOR_MAP_INTERLEAVE_NONE);
  EXPECT_EQ(args->swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  // The manifest says "none"; the runtime never encodes it (an H200 faults
  // on boxes across the tensor's edge with it).
  EXPECT_EQ(args->l2Promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  EXPECT_EQ(args->oobFill, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

/// The GEMM's A operand: 4096x4096 bf16 in 128x64 boxes, same tiling. The
/// view (512 row tiles, 64 column tiles, 8 rows, 64 columns) has dims
/// [64, 8, 64, 512] and strides [4096 * 2, 64 * 2, 8 * 8192] =
/// [8192, 128, 65536]: not increasing. Its last byte is at
/// 63*2 + 7*8192 + 63*128 + 511*65536 + 2 = 33554432, the buffer's size.
TEST(TensorMap, GemmOperandFillsTheBufferExactly) {
  TensorMapDescription entry = map(ElementType::BF16, {64, 8, 64, 512},
                                   {8192, 128, 65536}, {64, 8, 1, 16}, 128);
  BufferParameter a = buffer(ElementType::BF16, {4096, 4096});
  EXPECT_TRUE(checkTensorMap(entry, a).ok());
  BufferParameter smaller = buffer(ElementType::BF16, {4095, 4096});
  EXPECT_EQ(checkTensorMap(entry, smaller).message(),
            "tensor map 0 for parameter 0: global dims [64, 8, 64, 512] with "
            "strides [8192, 128, 65536] span 33554432 bytes, but parameter 0 "
            "is a bf16 buffer of shape [4095, 4096] (33546240 bytes)");
}

/// A plain 2-D map of a 4096x128 f32 buffer in 64x32 boxes: dims
/// [128, 4096], stride [128 * 4 = 512]; the box's inner 32 * 4 = 128 bytes
/// fit the 128-byte swizzle.
TEST(TensorMap, PlainTwoDimensional) {
  TensorMapDescription entry =
      map(ElementType::F32, {128, 4096}, {512}, {32, 64}, 128);
  entry.l2PromotionBytes = 128;
  entry.oobFillNan = true;
  Expected<TensorMapEncodeArgs> args = tensorMapEncodeArgs(
      entry, buffer(ElementType::F32, {4096, 128}), kAddress);
  ASSERT_TRUE(args.ok()) << args.message();
  EXPECT_EQ(args->dataType, CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
  EXPECT_EQ(args->rank, 2u);
  EXPECT_EQ(args->l2Promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  EXPECT_EQ(args->oobFill, CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
}

TEST(TensorMap, DataTypes) {
  struct Case {
    ElementType type;
    CUtensorMapDataType expected;
  };
  for (Case c : {Case{ElementType::F32, CU_TENSOR_MAP_DATA_TYPE_FLOAT32},
                 Case{ElementType::F16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16},
                 Case{ElementType::BF16, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16},
                 Case{ElementType::F64, CU_TENSOR_MAP_DATA_TYPE_FLOAT64},
                 Case{ElementType::I8, CU_TENSOR_MAP_DATA_TYPE_UINT8},
                 Case{ElementType::I16, CU_TENSOR_MAP_DATA_TYPE_UINT16},
                 Case{ElementType::I32, CU_TENSOR_MAP_DATA_TYPE_INT32},
                 Case{ElementType::I64, CU_TENSOR_MAP_DATA_TYPE_INT64},
                 Case{ElementType::F8E4M3FN, CU_TENSOR_MAP_DATA_TYPE_UINT8},
                 Case{ElementType::F8E5M2, CU_TENSOR_MAP_DATA_TYPE_UINT8}}) {
    // 16 bytes of elements per row, 4 rows, one box.
    uint32_t perRow = 16 / byteSize(c.type);
    TensorMapDescription entry = map(c.type, {perRow, 4}, {16}, {perRow, 4});
    Expected<TensorMapEncodeArgs> args =
        tensorMapEncodeArgs(entry, buffer(c.type, {4, perRow}), kAddress);
    ASSERT_TRUE(args.ok()) << spelling(c.type) << ": " << args.message();
    EXPECT_EQ(args->dataType, c.expected) << spelling(c.type);
  }
}

// A reduction's map names how TMA reads the elements, which decides how
// min and max compare them: i32 as int32 (smin, smax) or uint32 (umin,
// umax, inc, dec, ...), i64 as int64 or uint64; other types only as their
// default.
TEST(TensorMap, NamedDataTypes) {
  struct Case {
    ElementType type;
    TensorMapDataType named;
    CUtensorMapDataType expected;
  };
  for (Case c : {Case{ElementType::I32, TensorMapDataType::Int32,
                      CU_TENSOR_MAP_DATA_TYPE_INT32},
                 Case{ElementType::I32, TensorMapDataType::UInt32,
                      CU_TENSOR_MAP_DATA_TYPE_UINT32},
                 Case{ElementType::I64, TensorMapDataType::Int64,
                      CU_TENSOR_MAP_DATA_TYPE_INT64},
                 Case{ElementType::I64, TensorMapDataType::UInt64,
                      CU_TENSOR_MAP_DATA_TYPE_UINT64},
                 Case{ElementType::F32, TensorMapDataType::Float32,
                      CU_TENSOR_MAP_DATA_TYPE_FLOAT32},
                 Case{ElementType::F16, TensorMapDataType::Float16,
                      CU_TENSOR_MAP_DATA_TYPE_FLOAT16},
                 Case{ElementType::BF16, TensorMapDataType::BFloat16,
                      CU_TENSOR_MAP_DATA_TYPE_BFLOAT16},
                 Case{ElementType::I16, TensorMapDataType::UInt16,
                      CU_TENSOR_MAP_DATA_TYPE_UINT16},
                 Case{ElementType::I8, TensorMapDataType::UInt8,
                      CU_TENSOR_MAP_DATA_TYPE_UINT8},
                 Case{ElementType::F8E5M2, TensorMapDataType::UInt8,
                      CU_TENSOR_MAP_DATA_TYPE_UINT8}}) {
    uint32_t perRow = 16 / byteSize(c.type);
    TensorMapDescription entry = map(c.type, {perRow, 4}, {16}, {perRow, 4});
    entry.dataType = c.named;
    Expected<TensorMapEncodeArgs> args =
        tensorMapEncodeArgs(entry, buffer(c.type, {4, perRow}), kAddress);
    ASSERT_TRUE(args.ok()) << spelling(c.type) << " as " << spelling(c.named)
                           << ": " << args.message();
    EXPECT_EQ(args->dataType, c.expected)
        << spelling(c.type) << " as " << spelling(c.named);
  }
}

TEST(TensorMap, NamedDataTypeHoldsTheElements) {
  struct Case {
    ElementType type;
    TensorMapDataType named;
    const char *expected;
  };
  for (Case c :
       {Case{ElementType::I32, TensorMapDataType::Float32,
             "data type float32 does not hold i32 elements; they travel as "
             "uint32 or int32"},
        Case{ElementType::I32, TensorMapDataType::UInt64,
             "data type uint64 does not hold i32 elements; they travel as "
             "uint32 or int32"},
        Case{ElementType::I64, TensorMapDataType::Int32,
             "data type int32 does not hold i64 elements; they travel as "
             "uint64 or int64"},
        Case{ElementType::F16, TensorMapDataType::BFloat16,
             "data type bfloat16 does not hold f16 elements; they travel as "
             "float16"},
        Case{ElementType::I16, TensorMapDataType::Int32,
             "data type int32 does not hold i16 elements; they travel as "
             "uint16"}}) {
    uint32_t perRow = 16 / byteSize(c.type);
    TensorMapDescription entry = map(c.type, {perRow, 4}, {16}, {perRow, 4});
    entry.dataType = c.named;
    EXPECT_EQ(encodeError(entry, buffer(c.type, {4, perRow})),
              std::string("tensor map 0 for parameter 0: ") + c.expected);
  }
}

TEST(TensorMap, GlobalStrides) {
  TensorMapDescription entry = roundTripMap();
  entry.globalStrides[0] = 100;
  EXPECT_EQ(encodeError(entry, kRoundTripBuffer),
            "tensor map 0 for parameter 0: global stride of dim 1 is 100 "
            "bytes, TMA needs a multiple of 16");
  entry = roundTripMap();
  entry.globalStrides[2] = uint64_t(1) << 40;
  EXPECT_EQ(encodeError(entry, kRoundTripBuffer),
            "tensor map 0 for parameter 0: global stride of dim 3 is "
            "1099511627776 bytes, TMA needs less than 2^40");
}

TEST(TensorMap, GlobalDims) {
  TensorMapDescription entry = roundTripMap();
  entry.globalDims[1] = 0;
  EXPECT_EQ(encodeError(entry, kRoundTripBuffer),
            "tensor map 0 for parameter 0: global dim 1 is 0, TMA needs 1 to "
            "2^32");
  entry.globalDims[1] = (uint64_t(1) << 32) + 1;
  EXPECT_EQ(encodeError(entry, kRoundTripBuffer),
            "tensor map 0 for parameter 0: global dim 1 is 4294967297, TMA "
            "needs 1 to 2^32");
}

TEST(TensorMap, BoxDimsAndElementStrides) {
  TensorMapDescription entry = roundTripMap();
  entry.boxDims[3] = 257;
  EXPECT_EQ(encodeError(entry, kRoundTripBuffer),
            "tensor map 0 for parameter 0: box dim 3 is 257, TMA needs 1 to "
            "256");
  entry.boxDims[3] = 0;
  EXPECT_EQ(encodeError(entry, kRoundTripBuffer),
            "tensor map 0 for parameter 0: box dim 3 is 0, TMA needs 1 to 256");
  entry = roundTripMap();
  entry.elementStrides[2] = 9;
  EXPECT_EQ(encodeError(entry, kRoundTripBuffer),
            "tensor map 0 for parameter 0: element stride of dim 2 is 9, TMA "
            "needs 1 to 8");
}

TEST(TensorMap, InnerBoxBytes) {
  // 2 f32 are 8 bytes: not a multiple of 16.
  TensorMapDescription entry =
      map(ElementType::F32, {128, 4096}, {512}, {2, 64});
  BufferParameter parameter = buffer(ElementType::F32, {4096, 128});
  EXPECT_EQ(encodeError(entry, parameter),
            "tensor map 0 for parameter 0: box dim 0 spans 8 bytes (2 x f32), "
            "TMA needs a multiple of 16 bytes");
  // 32 f32 are 128 bytes: more than a 64-byte swizzle spans.
  entry = map(ElementType::F32, {128, 4096}, {512}, {32, 64}, 64);
  EXPECT_EQ(encodeError(entry, parameter),
            "tensor map 0 for parameter 0: box dim 0 spans 128 bytes, more "
            "than the 64-byte swizzle");
  entry.swizzleBytes = 128;
  EXPECT_TRUE(checkTensorMap(entry, parameter).ok());
}

TEST(TensorMap, Interleave) {
  BufferParameter parameter = buffer(ElementType::F16, {64, 32, 16});
  TensorMapDescription entry =
      map(ElementType::F16, {16, 32, 64}, {32, 1024}, {16, 8, 8}, 32);
  entry.interleaveBytes = 32;
  EXPECT_TRUE(checkTensorMap(entry, parameter).ok());
  // With interleave the inner box needs no multiple of 16 bytes.
  entry.boxDims[0] = 4;
  EXPECT_TRUE(checkTensorMap(entry, parameter).ok());
  entry.swizzleBytes = 128;
  EXPECT_EQ(encodeError(entry, parameter),
            "tensor map 0 for parameter 0: 32-byte interleave needs the "
            "32-byte swizzle, got 128-byte");
  entry.swizzleBytes = 32;
  entry.globalStrides[0] = 48;
  EXPECT_EQ(encodeError(entry, parameter),
            "tensor map 0 for parameter 0: global stride of dim 1 is 48 "
            "bytes, TMA needs a multiple of 32");
  entry.globalStrides[0] = 32;
  EXPECT_EQ(encodeError(entry, parameter, kAddress + 16),
            "tensor map 0 for parameter 0: global address 0x7f0000000010 is "
            "not 32-byte aligned");
  TensorMapDescription flat = map(ElementType::F16, {16, 2048}, {32}, {16, 8});
  flat.interleaveBytes = 16;
  EXPECT_EQ(encodeError(flat, parameter),
            "tensor map 0 for parameter 0: rank 2 with interleave: TMA needs "
            "rank 3 to 5 when interleaved");
}

TEST(TensorMap, AddressAlignment) {
  EXPECT_EQ(encodeError(roundTripMap(), kRoundTripBuffer, kAddress + 8),
            "tensor map 0 for parameter 0: global address 0x7f0000000008 is "
            "not 16-byte aligned");
}

TEST(TensorMap, RankAndArrayLengths) {
  TensorMapDescription entry = roundTripMap();
  entry.rank = 0;
  EXPECT_EQ(encodeError(entry, kRoundTripBuffer),
            "tensor map 0 for parameter 0: rank 0 is outside TMA's 1 to 5");
  entry.rank = 6;
  EXPECT_EQ(encodeError(entry, kRoundTripBuffer),
            "tensor map 0 for parameter 0: rank 6 is outside TMA's 1 to 5");
  entry = roundTripMap();
  entry.globalStrides.push_back(16);
  EXPECT_EQ(encodeError(entry, kRoundTripBuffer),
            "tensor map 0 for parameter 0: rank 4 needs 4 global dims, box "
            "dims and element strides and 3 global strides");
}

TEST(TensorMap, ElementTypeAndNanFill) {
  TensorMapDescription entry = roundTripMap();
  entry.elementType = ElementType::F16;
  EXPECT_EQ(encodeError(entry, kRoundTripBuffer),
            "tensor map 0 for parameter 0: element type f16 differs from the "
            "buffer's bf16");
  BufferParameter bytes = buffer(ElementType::F8E4M3FN, {4096, 128});
  entry = map(ElementType::F8E4M3FN, {128, 4096}, {128}, {128, 64}, 128);
  EXPECT_TRUE(checkTensorMap(entry, bytes).ok());
  entry.oobFillNan = true;
  EXPECT_EQ(encodeError(entry, bytes),
            "tensor map 0 for parameter 0: NaN out-of-bounds fill needs a "
            "floating-point TMA data type; f8E4M3FN is copied as integers");
}

TEST(TensorMap, RegionBeyondTheBuffer) {
  // One row too many: 63*2 + 4096*128 + 2 = 524416 > 4096 * 64 * 2 = 524288.
  TensorMapDescription entry =
      map(ElementType::BF16, {64, 4097}, {128}, {64, 128});
  EXPECT_EQ(encodeError(entry, kRoundTripBuffer),
            "tensor map 0 for parameter 0: global dims [64, 4097] with strides "
            "[128] span 524416 bytes, but parameter 0 is a bf16 buffer of "
            "shape [4096, 64] (524288 bytes)");
  // (2^32 - 1) * (2^40 - 16) does not fit in 64 bits.
  entry = map(ElementType::BF16, {64, uint64_t(1) << 32},
              {(uint64_t(1) << 40) - 16}, {64, 128});
  EXPECT_EQ(encodeError(entry, kRoundTripBuffer),
            "tensor map 0 for parameter 0: global dims [64, 4294967296] with "
            "strides [1099511627760] span over 2^64 bytes, but parameter 0 is "
            "a bf16 buffer of shape [4096, 64] (524288 bytes)");
}

} // namespace
