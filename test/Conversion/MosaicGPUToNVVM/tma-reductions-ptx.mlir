// RUN: mosaic-opt %s -mosaic-gpu-pipeline --gpu-module-to-binary=format=isa | FileCheck %s

// `cp.reduce.async.bulk.tensor` carries the reduction but no element type:
// a signed and an unsigned min of one tile are the same instruction and
// differ only in their tensor maps (the `data_type` each map's description
// names; see lower-tma.mlir). Here smin and smax read the tile through one
// map (int32), umin, umax and inc through another (uint32), and the 64-bit
// add through a third (uint64): three map parameters after the two
// buffers.
// CHECK: .param .align 64 .b8 reductions_param_2[128]
// CHECK: .param .align 64 .b8 reductions_param_4[128]
// CHECK-NOT: reductions_param_5
// CHECK: cp.reduce.async.bulk.tensor.2d.global.shared::cta.min.tile.bulk_group [[[SIGNED:%rd[0-9]+]], {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%rd{{[0-9]+}}];
// CHECK: cp.reduce.async.bulk.tensor.2d.global.shared::cta.min.tile.bulk_group [[[UNSIGNED:%rd[0-9]+]], {
// CHECK: cp.reduce.async.bulk.tensor.2d.global.shared::cta.max.tile.bulk_group [[[SIGNED]], {
// CHECK: cp.reduce.async.bulk.tensor.2d.global.shared::cta.max.tile.bulk_group [[[UNSIGNED]], {
// CHECK: cp.reduce.async.bulk.tensor.2d.global.shared::cta.inc.tile.bulk_group [[[UNSIGNED]], {
// CHECK: cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%rd{{[0-9]+}}, {
gpu.module @kernels {
  gpu.func @reductions(%a: memref<256x32xi32>, %b: memref<256x16xi64>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 2, 1, 1>} {
    %c0 = arith.constant 0 : i32
    %s = mosaic_gpu.slice_smem 0 : memref<128x32xi32, #gpu.address_space<workgroup>>
    %l = mosaic_gpu.slice_smem 16384 : memref<128x16xi64, #gpu.address_space<workgroup>>
    mosaic_gpu.async_store %s to %a[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<smin>}
        : memref<128x32xi32, #gpu.address_space<workgroup>>, memref<256x32xi32>
    mosaic_gpu.async_store %s to %a[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<umin>}
        : memref<128x32xi32, #gpu.address_space<workgroup>>, memref<256x32xi32>
    mosaic_gpu.async_store %s to %a[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<smax>}
        : memref<128x32xi32, #gpu.address_space<workgroup>>, memref<256x32xi32>
    mosaic_gpu.async_store %s to %a[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<umax>}
        : memref<128x32xi32, #gpu.address_space<workgroup>>, memref<256x32xi32>
    mosaic_gpu.async_store %s to %a[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<inc>}
        : memref<128x32xi32, #gpu.address_space<workgroup>>, memref<256x32xi32>
    mosaic_gpu.async_store %l to %b[%c0, %c0] slice_lengths [128, 16]
        {reduction_op = #mosaic_gpu.tma_reduction<add>}
        : memref<128x16xi64, #gpu.address_space<workgroup>>, memref<256x16xi64>
    gpu.return
  }
}
