//===- tma_roundtrip_host.cpp - Host side of tma_roundtrip.cu ------------===//
//
// The tensor is 100 x 40 f32 (cols x rows) with a row pitch of 104 elements
// (416 bytes: the stride is not the row width). Element (col, row) holds
// row * 1000 + col + 1, so zero and NaN never occur inside the tensor; the
// four pitch-padding elements of each row hold -1 and must never be loaded
// or written.
//
// Every box's innermost coordinate is a multiple of 4 elements (16 bytes),
// which is all Mosaic's kernels use; whether an H200 takes other origins is
// left to bench/gpu/tma-edge (docs/RationaleEmulator.md). The maps use 128B
// L2 promotion; the *_l2_none variants expect the fault an H200 raises when
// a box crosses the tensor's edge with L2_PROMOTION_NONE.
//
//===----------------------------------------------------------------------===//

#include "HostSupport.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace emutest;

namespace {

constexpr int32_t kCols = 100;
constexpr int32_t kRows = 40;
constexpr int32_t kPitch = 104;
constexpr unsigned kThreads = 128;

float tensorValue(int32_t col, int32_t row) {
  return static_cast<float>(row * 1000 + col + 1);
}

std::vector<float> makeTensor() {
  std::vector<float> tensor(kPitch * kRows, -1.0f);
  for (int32_t row = 0; row < kRows; ++row)
    for (int32_t col = 0; col < kCols; ++col)
      tensor[row * kPitch + col] = tensorValue(col, row);
  return tensor;
}

bool inside(int32_t col, int32_t row) {
  return col >= 0 && col < kCols && row >= 0 && row < kRows;
}

// The largest multiple of 4 elements (16 bytes of f32) not above `column`.
int32_t alignDown(int32_t column) { return column & ~int32_t(3); }

// Mirrors boxValue() in tma_roundtrip.cu.
float boxValue(uint32_t block, uint32_t index) {
  return static_cast<float>(block * 1000 + index + 1);
}

TiledTensor2d tensorDescription(CUdeviceptr address, uint32_t boxCols,
                                uint32_t boxRows, CUtensorMapSwizzle swizzle) {
  TiledTensor2d tensor;
  tensor.dataType = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  tensor.address = address;
  tensor.cols = kCols;
  tensor.rows = kRows;
  tensor.rowStrideBytes = kPitch * sizeof(float);
  tensor.boxCols = boxCols;
  tensor.boxRows = boxRows;
  tensor.swizzle = swizzle;
  return tensor;
}

uint32_t swizzleSpan(CUtensorMapSwizzle swizzle) {
  switch (swizzle) {
  case CU_TENSOR_MAP_SWIZZLE_32B:
    return 32;
  case CU_TENSOR_MAP_SWIZZLE_64B:
    return 64;
  case CU_TENSOR_MAP_SWIZZLE_128B:
    return 128;
  default:
    return 0;
  }
}

struct LoadCase {
  uint32_t boxCols;
  // Rows the box spans in the tensor; rows/rowElementStride are loaded.
  uint32_t boxRows;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  uint32_t rowElementStride = 1;
  CUtensorMapFloatOOBfill oobFill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  uint32_t sharedOffset = 0;
  CUtensorMapL2promotion l2Promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  // Only boxes inside the tensor.
  bool insideOnly = false;
};

// Box corners (col, row): inside; across the top-left corner (negative
// coordinates); across the bottom-right corner; and two boxes with a single
// 16-byte column or a single row inside the tensor.
std::vector<int32_t> loadCorners(const LoadCase &c) {
  int32_t cols = c.boxCols, rows = c.boxRows;
  int32_t stride = c.rowElementStride;
  if (c.insideOnly)
    return {4, 2, alignDown(kCols - cols), kRows - rows};
  return {4,
          2,
          alignDown(-cols / 2 - 1),
          -rows / 2 - 1,
          alignDown(kCols - cols / 2),
          kRows - rows / 2,
          -cols + 4,
          kRows - 1,
          kCols - 4,
          -rows + stride};
}

void runLoad(Session &session, Checker &checker, const LoadCase &c) {
  std::vector<float> host = makeTensor();
  DeviceBuffer tensor(host);
  TiledTensor2d description =
      tensorDescription(tensor.address(), c.boxCols, c.boxRows, c.swizzle);
  description.rowElementStride = c.rowElementStride;
  description.oobFill = c.oobFill;
  description.l2Promotion = c.l2Promotion;
  CUtensorMap map = encodeTiled(description);

  std::vector<int32_t> corners = loadCorners(c);
  uint32_t boxes = corners.size() / 2;
  uint32_t loadedRows = c.boxRows / c.rowElementStride;
  uint32_t elements = c.boxCols * loadedRows;
  DeviceBuffer cornerBuffer(corners);
  DeviceBuffer out(boxes * elements * sizeof(float));
  DeviceBuffer misalignment(sizeof(uint32_t));
  out.fill(0xA5);

  CUfunction function = session.function("tma_load_box");
  unsigned sharedBytes = c.sharedOffset + elements * sizeof(float);
  if (sharedBytes > 48 * 1024)
    setMaxDynamicSharedBytes(function, sharedBytes);
  uint32_t boxCols = c.boxCols, span = swizzleSpan(c.swizzle);
  uint32_t sharedOffset = c.sharedOffset;
  launch(function, {boxes}, {kThreads}, sharedBytes,
         {&map, cornerBuffer.parameter(), &boxCols, &loadedRows, &span,
          &sharedOffset, out.parameter(), misalignment.parameter()});

  std::vector<float> got = out.download<float>();
  for (uint32_t box = 0; box < boxes; ++box) {
    for (uint32_t i = 0; i < elements; ++i) {
      int32_t col = corners[2 * box] + static_cast<int32_t>(i % c.boxCols);
      int32_t row = corners[2 * box + 1] +
                    static_cast<int32_t>(i / c.boxCols * c.rowElementStride);
      std::string what = "box " + std::to_string(box) + " (" +
                         std::to_string(col) + ", " + std::to_string(row) + ")";
      float value = got[box * elements + i];
      if (inside(col, row))
        checker.equalBits(what, i, value, tensorValue(col, row));
      else if (c.oobFill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
        checker.equalBits(what + " out of bounds", i, value, 0.0f);
      else
        checker.expect(what + " out of bounds: NaN fill", i, std::isnan(value),
                       "got " + std::to_string(value));
    }
  }
  checker.equal("dynamic shared base % 1024", 0,
                misalignment.download<uint32_t>()[0], 0);
}

// Box corners that stay pairwise disjoint for every box up to 32 x 16.
std::vector<int32_t> storeCorners(uint32_t boxCols, uint32_t boxRows) {
  int32_t cols = boxCols, rows = boxRows;
  return {alignDown(-cols / 4 - 1),
          -rows / 4 - 1,
          alignDown(kCols - cols / 2),
          kRows - rows / 2,
          alignDown(kCols / 2 - cols / 2),
          kRows / 2 - rows / 2,
          -cols + 4,
          kRows - 3,
          kCols - 4,
          -rows + 2};
}

// Corners for reductions: the same box twice, overlapping boxes, and boxes
// across both corners of the tensor.
std::vector<int32_t> reduceCorners(uint32_t boxCols, uint32_t boxRows) {
  int32_t cols = boxCols, rows = boxRows;
  return {-4,
          -2,
          -4,
          -2,
          4,
          3,
          alignDown(kCols - cols / 2),
          kRows - rows / 2,
          -cols + 4,
          kRows - 3};
}

void runStore(Session &session, Checker &checker, uint32_t boxCols,
              uint32_t boxRows, CUtensorMapSwizzle swizzle, bool reduceAdd) {
  std::vector<float> initial = makeTensor();
  DeviceBuffer tensor(initial.size() * sizeof(float));
  if (reduceAdd)
    tensor.upload(initial.data(), initial.size() * sizeof(float));
  else
    tensor.fill(0xFF); // 0xFFFFFFFF: a NaN no store produces
  CUtensorMap map = encodeTiled(
      tensorDescription(tensor.address(), boxCols, boxRows, swizzle));

  std::vector<int32_t> corners = reduceAdd ? reduceCorners(boxCols, boxRows)
                                           : storeCorners(boxCols, boxRows);
  uint32_t boxes = corners.size() / 2;
  DeviceBuffer cornerBuffer(corners);
  uint32_t span = swizzleSpan(swizzle), reduce = reduceAdd;
  launch(session.function("tma_store_box"), {boxes}, {kThreads},
         boxCols * boxRows * sizeof(float),
         {&map, cornerBuffer.parameter(), &boxCols, &boxRows, &span, &reduce});

  std::vector<float> expected(initial.size(), bitsToFloat(0xFFFFFFFF));
  if (reduceAdd)
    expected = initial;
  std::vector<int> writes(initial.size(), 0);
  for (uint32_t box = 0; box < boxes; ++box) {
    for (uint32_t i = 0; i < boxCols * boxRows; ++i) {
      int32_t col = corners[2 * box] + static_cast<int32_t>(i % boxCols);
      int32_t row = corners[2 * box + 1] + static_cast<int32_t>(i / boxCols);
      if (!inside(col, row))
        continue;
      size_t at = row * kPitch + col;
      if (reduceAdd)
        expected[at] += boxValue(box, i);
      else
        expected[at] = boxValue(box, i);
      ++writes[at];
    }
  }
  if (!reduceAdd)
    for (int count : writes)
      if (count > 1)
        fail("tma_roundtrip: store boxes overlap (a corpus bug)");

  std::vector<float> got = tensor.download<float>();
  for (size_t at = 0; at < got.size(); ++at) {
    int32_t col = at % kPitch, row = at / kPitch;
    std::string what = "tensor (" + std::to_string(col) + ", " +
                       std::to_string(row) + ")" +
                       (writes[at] ? "" : " not written");
    checker.equalBits(what, at, got[at], expected[at]);
  }
}

enum class Copy { Load, Store, ReduceAdd };

// One box across the tensor's bottom-right corner, with a map whose L2
// promotion is NONE: the copy faults with CUDA_ERROR_ILLEGAL_INSTRUCTION,
// as every such load, store and reduction did on an H200.
void runAcrossEdgeWithoutL2Promotion(Session &session, Checker &checker,
                                     Copy copy) {
  constexpr uint32_t boxCols = 16, boxRows = 8;
  DeviceBuffer tensor(makeTensor());
  TiledTensor2d description = tensorDescription(
      tensor.address(), boxCols, boxRows, CU_TENSOR_MAP_SWIZZLE_NONE);
  description.l2Promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;
  CUtensorMap map = encodeTiled(description);
  std::vector<int32_t> corner = {kCols - 8, kRows - 4};
  DeviceBuffer cornerBuffer(corner);
  uint32_t cols = boxCols, rows = boxRows, span = 0, sharedOffset = 0;
  uint32_t reduce = copy == Copy::ReduceAdd;
  unsigned sharedBytes = boxCols * boxRows * sizeof(float);
  DeviceBuffer out(sharedBytes);
  DeviceBuffer misalignment(sizeof(uint32_t));
  CUresult result =
      copy == Copy::Load
          ? tryLaunch(
                session.function("tma_load_box"), {1}, {kThreads}, sharedBytes,
                {&map, cornerBuffer.parameter(), &cols, &rows, &span,
                 &sharedOffset, out.parameter(), misalignment.parameter()})
          : tryLaunch(
                session.function("tma_store_box"), {1}, {kThreads}, sharedBytes,
                {&map, cornerBuffer.parameter(), &cols, &rows, &span, &reduce});
  checker.expect("fault", 0, result == CUDA_ERROR_ILLEGAL_INSTRUCTION,
                 "got " + errorName(result) +
                     ", expected CUDA_ERROR_ILLEGAL_INSTRUCTION");
  finishAfterFault(checker);
}

// cuTensorMapEncodeTiled must refuse what cuda.h says it requires.
void runEncodeErrors(Session &, Checker &checker) {
  DeviceBuffer tensor(kPitch * kRows * sizeof(float));
  auto valid = [&] {
    return tensorDescription(tensor.address(), 32, 16,
                             CU_TENSOR_MAP_SWIZZLE_NONE);
  };
  struct Case {
    const char *what;
    TiledTensor2d tensor;
    CUresult expected;
  };
  std::vector<Case> cases;
  cases.push_back({"valid", valid(), CUDA_SUCCESS});
  TiledTensor2d t = valid();
  t.swizzle = CU_TENSOR_MAP_SWIZZLE_128B; // inner box 128 B: allowed
  cases.push_back({"128B swizzle, 128-byte box rows", t, CUDA_SUCCESS});
  t = valid();
  t.rowStrideBytes = 404;
  cases.push_back({"stride not a multiple of 16", t, CUDA_ERROR_INVALID_VALUE});
  t = valid();
  t.boxRows = 257;
  cases.push_back({"box dimension 257", t, CUDA_ERROR_INVALID_VALUE});
  t = valid();
  t.boxCols = 3;
  cases.push_back({"box rows of 12 bytes", t, CUDA_ERROR_INVALID_VALUE});
  t = valid();
  t.boxCols = 16;
  t.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
  cases.push_back(
      {"64-byte box rows with 32B swizzle", t, CUDA_ERROR_INVALID_VALUE});
  t = valid();
  t.address += 4;
  cases.push_back({"address not 16-byte aligned", t, CUDA_ERROR_INVALID_VALUE});
  t = valid();
  t.rowElementStride = 9;
  cases.push_back({"element stride 9", t, CUDA_ERROR_INVALID_VALUE});
  t = valid();
  t.dataType = CU_TENSOR_MAP_DATA_TYPE_INT32;
  t.oobFill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  cases.push_back({"NaN fill for int32", t, CUDA_ERROR_INVALID_VALUE});
  t = valid();
  t.cols = 0;
  cases.push_back({"zero-sized dimension", t, CUDA_ERROR_INVALID_VALUE});

  for (size_t i = 0; i < cases.size(); ++i) {
    CUtensorMap map;
    CUresult result = tryEncodeTiled(map, cases[i].tensor);
    checker.expect(cases[i].what, i, result == cases[i].expected,
                   "got " + errorName(result) + ", expected " +
                       errorName(cases[i].expected));
  }

  // Ranks outside 1..5.
  for (cuuint32_t rank : {0u, 6u}) {
    cuuint64_t dims[6] = {16, 16, 16, 16, 16, 16};
    cuuint64_t strides[5] = {64, 1024, 16384, 262144, 4194304};
    cuuint32_t box[6] = {4, 4, 4, 4, 4, 4};
    cuuint32_t elementStrides[6] = {1, 1, 1, 1, 1, 1};
    CUtensorMap map;
    CUresult result = cuTensorMapEncodeTiled(
        &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, rank,
        reinterpret_cast<void *>(tensor.address()), dims, strides, box,
        elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
        CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    checker.expect("rank " + std::to_string(rank), rank,
                   result == CUDA_ERROR_INVALID_VALUE,
                   "got " + errorName(result) +
                       ", expected CUDA_ERROR_INVALID_VALUE");
  }
}

LoadCase load(uint32_t boxCols, uint32_t boxRows, CUtensorMapSwizzle swizzle) {
  LoadCase c;
  c.boxCols = boxCols;
  c.boxRows = boxRows;
  c.swizzle = swizzle;
  return c;
}

} // namespace

int main(int argc, char **argv) {
  // Swizzled boxes are exactly one swizzle span wide, so each box row is
  // one span and the documented formula describes the whole box.
  LoadCase oobNan = load(24, 10, CU_TENSOR_MAP_SWIZZLE_NONE);
  oobNan.oobFill = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
  LoadCase strided = load(16, 12, CU_TENSOR_MAP_SWIZZLE_NONE);
  strided.rowElementStride = 3;
  // 160 KiB into dynamic shared memory: needs the >48 KiB opt-in.
  LoadCase farShared = load(32, 16, CU_TENSOR_MAP_SWIZZLE_128B);
  farShared.sharedOffset = 160 * 1024;
  // Boxes inside the tensor run with any L2 promotion.
  LoadCase insideNoPromotion = load(24, 10, CU_TENSOR_MAP_SWIZZLE_NONE);
  insideNoPromotion.l2Promotion = CU_TENSOR_MAP_L2_PROMOTION_NONE;
  insideNoPromotion.insideOnly = true;
  auto acrossEdge = [](Copy copy) {
    return [copy](Session &session, Checker &checker) {
      runAcrossEdgeWithoutL2Promotion(session, checker, copy);
    };
  };

  auto loadVariant = [](LoadCase c) {
    return [c](Session &session, Checker &checker) {
      runLoad(session, checker, c);
    };
  };
  auto storeVariant = [](uint32_t cols, uint32_t rows,
                         CUtensorMapSwizzle swizzle, bool reduceAdd) {
    return [=](Session &session, Checker &checker) {
      runStore(session, checker, cols, rows, swizzle, reduceAdd);
    };
  };
  return runVariants(
      "tma_roundtrip", argc, argv,
      {
          {"load_swizzle_none",
           loadVariant(load(24, 10, CU_TENSOR_MAP_SWIZZLE_NONE))},
          {"load_swizzle_32b",
           loadVariant(load(8, 16, CU_TENSOR_MAP_SWIZZLE_32B))},
          {"load_swizzle_64b",
           loadVariant(load(16, 16, CU_TENSOR_MAP_SWIZZLE_64B))},
          {"load_swizzle_128b",
           loadVariant(load(32, 16, CU_TENSOR_MAP_SWIZZLE_128B))},
          {"load_oob_nan_fill", loadVariant(oobNan)},
          {"load_element_strides", loadVariant(strided)},
          {"load_large_dynamic_shared", loadVariant(farShared)},
          {"store_swizzle_none",
           storeVariant(24, 10, CU_TENSOR_MAP_SWIZZLE_NONE, false)},
          {"store_swizzle_64b",
           storeVariant(16, 16, CU_TENSOR_MAP_SWIZZLE_64B, false)},
          {"store_swizzle_128b",
           storeVariant(32, 16, CU_TENSOR_MAP_SWIZZLE_128B, false)},
          {"reduce_add_swizzle_none",
           storeVariant(24, 10, CU_TENSOR_MAP_SWIZZLE_NONE, true)},
          {"reduce_add_swizzle_32b",
           storeVariant(8, 16, CU_TENSOR_MAP_SWIZZLE_32B, true)},
          {"load_inside_l2_none", loadVariant(insideNoPromotion)},
          {"load_across_edge_l2_none", acrossEdge(Copy::Load), true},
          {"store_across_edge_l2_none", acrossEdge(Copy::Store), true},
          {"reduce_add_across_edge_l2_none", acrossEdge(Copy::ReduceAdd), true},
          {"encode_errors", runEncodeErrors},
      });
}
