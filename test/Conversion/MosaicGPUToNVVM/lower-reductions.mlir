// RUN: mosaic-opt %s -split-input-file -mosaic-gpu-infer-layouts -mosaic-gpu-apply-transforms -mosaic-gpu-lower | FileCheck %s

// A row sum of a 64x16 WGMMA vector. Each thread holds 8 registers: rows r
// and r + 8 at positions (0, 1, 4, 5) and (2, 3, 6, 7). It first adds its
// own registers into one partial per row, then the 4 lanes that share a row
// (lane % 4) exchange partials with butterfly shuffles at offsets 1 and 2.
// The result (WGMMA_ROW: rows r and r + 8) is added to the accumulator.
// broadcast_in_dim back to 64x16 picks, for each register, the row it lies
// in: a vector.shuffle with the mask [0, 0, 1, 1, 0, 0, 1, 1].
// CHECK-LABEL: func @row_sum
// CHECK: %[[V:.*]] = vector.insert_strided_slice %{{.*}} {offsets = [6], strides = [1]} : vector<2xf32> into vector<8xf32>
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<1xf32>
// CHECK: %[[ZERO_SCALAR:.*]] = vector.extract %[[ZERO]][0] : f32 from vector<1xf32>
// CHECK: %[[ACC:.*]] = vector.broadcast %[[ZERO_SCALAR]] : f32 to vector<2xf32>
// CHECK: %[[E0:.*]] = vector.extract %[[V]][0] : f32 from vector<8xf32>
// CHECK: %[[E1:.*]] = vector.extract %[[V]][1] : f32 from vector<8xf32>
// CHECK: %[[S01:.*]] = arith.addf %[[E1]], %[[E0]] : f32
// CHECK: %[[E2:.*]] = vector.extract %[[V]][2] : f32 from vector<8xf32>
// CHECK: %[[E3:.*]] = vector.extract %[[V]][3] : f32 from vector<8xf32>
// CHECK: %[[S23:.*]] = arith.addf %[[E3]], %[[E2]] : f32
// CHECK: %[[E4:.*]] = vector.extract %[[V]][4] : f32 from vector<8xf32>
// CHECK: %[[S014:.*]] = arith.addf %[[E4]], %[[S01]] : f32
// CHECK: %[[E5:.*]] = vector.extract %[[V]][5] : f32 from vector<8xf32>
// CHECK: %[[ROW_R:.*]] = arith.addf %[[E5]], %[[S014]] : f32
// CHECK: %[[E6:.*]] = vector.extract %[[V]][6] : f32 from vector<8xf32>
// CHECK: %[[S236:.*]] = arith.addf %[[E6]], %[[S23]] : f32
// CHECK: %[[E7:.*]] = vector.extract %[[V]][7] : f32 from vector<8xf32>
// CHECK: %[[ROW_R8:.*]] = arith.addf %[[E7]], %[[S236]] : f32
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: %[[WIDTH:.*]] = arith.constant 32 : i32
// CHECK: %[[X1:.*]], %{{.*}} = gpu.shuffle xor %[[ROW_R]], %[[ONE]], %[[WIDTH]] : f32
// CHECK: %[[R1:.*]] = arith.addf %[[X1]], %[[ROW_R]] : f32
// CHECK: %[[Y1:.*]], %{{.*}} = gpu.shuffle xor %[[ROW_R8]], %{{.*}}, %{{.*}} : f32
// CHECK: %[[R81:.*]] = arith.addf %[[Y1]], %[[ROW_R8]] : f32
// CHECK: %[[TWO:.*]] = arith.constant 2 : i32
// CHECK: %[[X2:.*]], %{{.*}} = gpu.shuffle xor %[[R1]], %[[TWO]], %{{.*}} : f32
// CHECK: %[[R2:.*]] = arith.addf %[[X2]], %[[R1]] : f32
// CHECK: %[[TWO_B:.*]] = arith.constant 2 : i32
// CHECK: %[[Y2:.*]], %{{.*}} = gpu.shuffle xor %[[R81]], %[[TWO_B]], %{{.*}} : f32
// CHECK: %[[R82:.*]] = arith.addf %[[Y2]], %[[R81]] : f32
// CHECK-NOT: gpu.shuffle
// CHECK: %[[ROWS:.*]] = vector.from_elements %[[R2]], %[[R82]] : vector<2xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[ROWS]], %[[ACC]] : vector<2xf32>
// CHECK: %[[SPREAD:.*]] = vector.shuffle %[[SUM]], %[[SUM]] [0, 0, 1, 1, 0, 0, 1, 1] : vector<2xf32>, vector<2xf32>
// CHECK: arith.subf %[[V]], %[[SPREAD]] : vector<8xf32>
// CHECK-NOT: mosaic_gpu
#wgmma = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
func.func @row_sum(%in: memref<64x16xf32>, %out: memref<64x16xf32>) {
  %v = mosaic_gpu.vector_load %in : memref<64x16xf32> -> vector<64x16xf32>
  %w = mosaic_gpu.layout_cast %v : vector<64x16xf32> to #wgmma
  %zero = arith.constant dense<0.0> : vector<64xf32>
  %sum = vector.multi_reduction <add>, %w, %zero [1] : vector<64x16xf32> to vector<64xf32>
  %b = mosaic_gpu.broadcast_in_dim %sum, dims [0] : vector<64xf32> -> vector<64x16xf32>
  %d = arith.subf %w, %b : vector<64x16xf32>
  mosaic_gpu.vector_store %d, %out : vector<64x16xf32>, memref<64x16xf32>
  return
}

// -----

// A row max over 128 columns: 64 registers per thread fold into 2 partials
// (62 in-thread maximumf), then 4 shuffle steps and the -inf accumulator.
// CHECK-LABEL: func @row_max
// CHECK: %[[NINF:.*]] = arith.constant dense<0xFF800000> : vector<1xf32>
// CHECK: %[[NINF_SCALAR:.*]] = vector.extract %[[NINF]][0] : f32 from vector<1xf32>
// CHECK: %[[ACC:.*]] = vector.broadcast %[[NINF_SCALAR]] : f32 to vector<2xf32>
// CHECK-COUNT-62: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: arith.maximumf
// CHECK: gpu.shuffle xor %{{.*}}, %[[OFF1:.*]], %{{.*}} : f32
// CHECK: arith.maximumf
// CHECK: gpu.shuffle xor
// CHECK: arith.maximumf
// CHECK: %[[OFF2:.*]] = arith.constant 2 : i32
// CHECK: gpu.shuffle xor %{{.*}}, %[[OFF2]], %{{.*}} : f32
// CHECK: %[[M0:.*]] = arith.maximumf
// CHECK: gpu.shuffle xor
// CHECK: %[[M1:.*]] = arith.maximumf
// CHECK-NOT: gpu.shuffle
// CHECK: %[[ROWS:.*]] = vector.from_elements %[[M0]], %[[M1]] : vector<2xf32>
// CHECK: arith.maximumf %[[ROWS]], %[[ACC]] : vector<2xf32>
func.func @row_max(%in: memref<64x128xf32>, %out: memref<64xf32>) {
  %v = mosaic_gpu.vector_load %in : memref<64x128xf32> -> vector<64x128xf32>
  %ninf = arith.constant dense<0xFF800000> : vector<64xf32>
  %max = vector.multi_reduction <maximumf>, %v, %ninf [1] : vector<64x128xf32> to vector<64xf32>
  mosaic_gpu.vector_store %max, %out : vector<64xf32>, memref<64xf32>
  return
}

// -----

// Shuffles move 32-bit words: bf16 partials travel widened to f32 and are
// truncated back before they are combined.
// CHECK-LABEL: func @narrow_sum
// CHECK-COUNT-6: arith.addf %{{.*}}, %{{.*}} : bf16
// CHECK: %[[WIDE:.*]] = arith.extf %[[PARTIAL:.*]] : bf16 to f32
// CHECK: %[[MOVED:.*]], %{{.*}} = gpu.shuffle xor %[[WIDE]], %{{.*}}, %{{.*}} : f32
// CHECK: %[[NARROW:.*]] = arith.truncf %[[MOVED]] : f32 to bf16
// CHECK: arith.addf %[[NARROW]], %[[PARTIAL]] : bf16
// CHECK-COUNT-3: gpu.shuffle xor %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-NOT: gpu.shuffle
// CHECK: vector.from_elements %{{.*}}, %{{.*}} : vector<2xbf16>
#wgmma = #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
func.func @narrow_sum(%in: memref<64x16xbf16>, %out: memref<64xbf16>) {
  %v = mosaic_gpu.vector_load %in : memref<64x16xbf16> -> vector<64x16xbf16>
  %w = mosaic_gpu.layout_cast %v : vector<64x16xbf16> to #wgmma
  %z = arith.constant dense<0.0> : vector<64xbf16>
  %r = vector.multi_reduction <add>, %w, %z [1] : vector<64x16xbf16> to vector<64xbf16>
  mosaic_gpu.vector_store %r, %out : vector<64xbf16>, memref<64xbf16>
  return
}

// -----

// A reshape between strided layouts keeps row-major order, so every element
// stays in its register: the identity shuffle over the 64 registers.
// CHECK-LABEL: func @reshape
// CHECK: %[[V:.*]] = vector.insert_strided_slice %{{.*}} {offsets = [60], strides = [1]} : vector<4xf32> into vector<64xf32>
// CHECK: %[[FLAT:.*]] = vector.shuffle %[[V]], %[[V]] [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] : vector<64xf32>, vector<64xf32>
// CHECK: vector.extract_strided_slice %[[FLAT]] {offsets = [0], sizes = [4], strides = [1]}
// CHECK: vector.store %{{.*}} : memref<8192xf32>, vector<4xf32>
// CHECK-NOT: vector.shape_cast
func.func @reshape(%in: memref<128x64xf32>, %out: memref<8192xf32>) {
  %v = mosaic_gpu.vector_load %in : memref<128x64xf32> -> vector<128x64xf32>
  %r = vector.shape_cast %v : vector<128x64xf32> to vector<8192xf32>
  mosaic_gpu.vector_store %r, %out : vector<8192xf32>, memref<8192xf32>
  return
}

// -----

// A broadcast scalar is a splat: one register per thread, spread over the
// strided registers where the addition uses it.
// CHECK-LABEL: func @scalar_broadcast
// CHECK-SAME: (%[[X:.*]]: f32,
// CHECK: %[[SPLAT:.*]] = vector.broadcast %[[X]] : f32 to vector<1xf32>
// CHECK: %[[V:.*]] = vector.insert_strided_slice %{{.*}} {offsets = [60], strides = [1]} : vector<4xf32> into vector<64xf32>
// CHECK: %[[SCALAR:.*]] = vector.extract %[[SPLAT]][0] : f32 from vector<1xf32>
// CHECK: %[[SPREAD:.*]] = vector.broadcast %[[SCALAR]] : f32 to vector<64xf32>
// CHECK: arith.addf %[[V]], %[[SPREAD]] : vector<64xf32>
func.func @scalar_broadcast(%x: f32, %out: memref<128x64xf32>) {
  %b = vector.broadcast %x : f32 to vector<128x64xf32>
  %v = mosaic_gpu.vector_load %out : memref<128x64xf32> -> vector<128x64xf32>
  %s = arith.addf %v, %b : vector<128x64xf32>
  mosaic_gpu.vector_store %s, %out : vector<128x64xf32>, memref<128x64xf32>
  return
}

// -----

// Reducing a splat needs no data movement: a sum over 64 equal elements is
// the value times 64 (then plus the accumulator); a max is the value itself.
// CHECK-LABEL: func @splat_reductions
// CHECK: %[[THREE:.*]] = arith.constant dense<3.000000e+00> : vector<1xf32>
// CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : vector<1xf32>
// CHECK: %[[X:.*]] = vector.extract %[[THREE]][0] : f32 from vector<1xf32>
// CHECK: %[[COUNT:.*]] = arith.constant 6.400000e+01 : f32
// CHECK: %[[TIMES:.*]] = arith.mulf %[[X]], %[[COUNT]] : f32
// CHECK: %[[SPREAD:.*]] = vector.broadcast %[[TIMES]] : f32 to vector<1xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[SPREAD]], %[[ONE]] : vector<1xf32>
// CHECK: %[[Y:.*]] = vector.extract %[[THREE]][0] : f32 from vector<1xf32>
// CHECK-NOT: arith.mulf
// CHECK: %[[SAME:.*]] = vector.broadcast %[[Y]] : f32 to vector<1xf32>
// CHECK: %[[MAX:.*]] = arith.maximumf %[[SAME]], %[[ONE]] : vector<1xf32>
// CHECK: arith.addf %[[SUM]], %[[MAX]] : vector<1xf32>
func.func @splat_reductions(%out: memref<128xf32>) {
  %c = arith.constant dense<3.0> : vector<128x64xf32>
  %z = arith.constant dense<1.0> : vector<128xf32>
  %sum = vector.multi_reduction <add>, %c, %z [1] : vector<128x64xf32> to vector<128xf32>
  %max = vector.multi_reduction <maximumf>, %c, %z [1] : vector<128x64xf32> to vector<128xf32>
  %both = arith.addf %sum, %max : vector<128xf32>
  mosaic_gpu.vector_store %both, %out : vector<128xf32>, memref<128xf32>
  return
}

// -----

// Slices and extracts of whole tiles stay in registers: each thread keeps
// its own elements of the part, so the lowering picks register positions.
// A 128x64 WGMMA vector is 2 blocks of 64 rows x 8 column groups x 2 row
// halves x 2; the second 64-row block is positions 32..63, and the columns
// 32..63 of a block are its last 4 column groups.
// CHECK-LABEL: gpu.func @slices
// CHECK: vector.shuffle %[[V:[0-9]+]], %[[V]] [32, 33, 34, {{.*}}, 62, 63] : vector<64xf32>, vector<64xf32>
// CHECK: vector.shuffle %[[V]], %[[V]] [16, 17, {{.*}}, 30, 31, 48, 49, {{.*}}, 62, 63] : vector<64xf32>, vector<64xf32>
// CHECK: vector.shuffle %[[X:[0-9]+]], %[[X]] [32, 33, {{.*}}, 62, 63] : vector<64xf32>, vector<64xf32>
gpu.module @kernels {
  gpu.func @slices(%ref: memref<128x64xf32>, %ref3: memref<2x64x64xf32>,
                   %rows: memref<64x64xf32>, %cols: memref<128x32xf32>, %second: memref<64x64xf32>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>} {
    %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
    %t = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
    %low = vector.extract_strided_slice %t {offsets = [64, 0], sizes = [64, 64], strides = [1, 1]} : vector<128x64xf32> to vector<64x64xf32>
    mosaic_gpu.vector_store %low, %rows : vector<64x64xf32>, memref<64x64xf32>
    %right = vector.extract_strided_slice %t {offsets = [0, 32], sizes = [128, 32], strides = [1, 1]} : vector<128x64xf32> to vector<128x32xf32>
    mosaic_gpu.vector_store %right, %cols : vector<128x32xf32>, memref<128x32xf32>
    %w = mosaic_gpu.vector_load %ref3 : memref<2x64x64xf32> -> vector<2x64x64xf32>
    %u = mosaic_gpu.layout_cast %w : vector<2x64x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
    %e = vector.extract %u[1] : vector<64x64xf32> from vector<2x64x64xf32>
    mosaic_gpu.vector_store %e, %second : vector<64x64xf32>, memref<64x64xf32>
    gpu.return
  }
}
