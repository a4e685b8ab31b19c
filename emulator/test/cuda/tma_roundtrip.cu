//===- tma_roundtrip.cu - TMA loads, stores and reductions on f32 tiles --===//
//
// One CTA per box of a 2-D f32 tensor. The host (tma_roundtrip_host.cpp)
// encodes the tensor map (swizzle, out-of-bounds fill, element strides) and
// picks box corners inside, across and beyond the tensor's edges.
//
// Shared-memory boxes are dense, row after row (boxCols * 4 bytes a row), at
// swizzled addresses: the element at byte offset L of the box lives at
// swizzle(box + L, span). The kernels undo or apply that swizzle themselves,
// so a wrong swizzle in the copy engine shows up as misplaced elements.
//
//===----------------------------------------------------------------------===//

#include "DeviceSupport.cuh"

using namespace emutest;

namespace {

__device__ float *boxElement(uint8_t *box, uint32_t row, uint32_t col,
                             uint32_t boxCols, uint32_t swizzleSpan) {
  uint32_t base = sharedAddress(box);
  uint32_t address =
      swizzle(base + (row * boxCols + col) * sizeof(float), swizzleSpan);
  return reinterpret_cast<float *>(box + (address - base));
}

// The value CTA `block` puts at element `index` of the box it stores or adds.
__device__ float boxValue(uint32_t block, uint32_t index) {
  return static_cast<float>(block * 1000 + index + 1);
}

} // namespace

// CTA b loads the box whose corner is (corners[2b], corners[2b+1]) into
// dynamic shared memory at `sharedOffset` and writes its boxRows x boxCols
// elements to out[b][row][col]. Block 0 also reports the dynamic shared
// memory base modulo 1024 (the declaration asks for 1024-byte alignment).
extern "C" __global__ void __launch_bounds__(128)
    tma_load_box(const __grid_constant__ CUtensorMap map,
                 const int32_t *corners, uint32_t boxCols, uint32_t boxRows,
                 uint32_t swizzleSpan, uint32_t sharedOffset, float *out,
                 uint32_t *dynamicSharedMisalignment) {
  __shared__ uint64_t full;
  uint32_t barrier = sharedAddress(&full);
  uint8_t *box = dynamicShared + sharedOffset;
  uint32_t elements = boxCols * boxRows;

  if (threadIdx.x == 0) {
    mbarrierInit(barrier, 1);
    fenceMbarrierInit();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    mbarrierArriveExpectTx(barrier, elements * sizeof(float));
    tmaLoad2d(sharedAddress(box), map, corners[2 * blockIdx.x],
              corners[2 * blockIdx.x + 1], barrier);
  }
  mbarrierWaitParity(barrier, 0);

  for (uint32_t i = threadIdx.x; i < elements; i += blockDim.x)
    out[blockIdx.x * elements + i] =
        *boxElement(box, i / boxCols, i % boxCols, boxCols, swizzleSpan);
  if (blockIdx.x == 0 && threadIdx.x == 0)
    *dynamicSharedMisalignment = sharedAddress(dynamicShared) % 1024;
}

// CTA b fills a box with boxValue(b, row * boxCols + col) through ordinary
// stores at the swizzled addresses, then one thread writes it to the tensor
// at (corners[2b], corners[2b+1]) with a TMA store, or with a TMA reduce-add
// when `reduceAdd` is set. Elements outside the tensor are not written.
extern "C" __global__ void __launch_bounds__(128)
    tma_store_box(const __grid_constant__ CUtensorMap map,
                  const int32_t *corners, uint32_t boxCols, uint32_t boxRows,
                  uint32_t swizzleSpan, uint32_t reduceAdd) {
  uint8_t *box = dynamicShared;
  uint32_t elements = boxCols * boxRows;
  for (uint32_t i = threadIdx.x; i < elements; i += blockDim.x)
    *boxElement(box, i / boxCols, i % boxCols, boxCols, swizzleSpan) =
        boxValue(blockIdx.x, i);
  // The copy engine reads through the async proxy.
  fenceProxyAsyncShared();
  __syncthreads();

  if (threadIdx.x == 0) {
    int32_t x = corners[2 * blockIdx.x], y = corners[2 * blockIdx.x + 1];
    if (reduceAdd)
      tmaReduceAdd2d(map, x, y, sharedAddress(box));
    else
      tmaStore2d(map, x, y, sharedAddress(box));
    bulkCommitGroup();
    // Shared memory could be reused from here on...
    bulkWaitGroupRead0();
    // ...and the global writes are complete from here on.
    bulkWaitGroup0();
  }
}
