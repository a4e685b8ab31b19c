// RUN: mosaic-opt %s | FileCheck %s
// Printing, parsing again and printing once more must give the same text.
// RUN: mosaic-opt %s | mosaic-opt | FileCheck %s
// RUN: mosaic-opt %s --mlir-print-op-generic | mosaic-opt | FileCheck %s

// The multi-device ops (docs/RationaleMultiDevice.md) on symmetric kernel
// arguments.
// CHECK-LABEL: gpu.func @collectives
// CHECK-SAME: (%[[X:.*]]: memref<128x64xf32> {mosaic_gpu.symmetric}, %[[SEMS:.*]]: memref<2x4xi32, #gpu.address_space<global>> {mosaic_gpu.symmetric})
// CHECK: %[[ID:.*]] = mosaic_gpu.device_id : i32
// CHECK: %[[N:.*]] = mosaic_gpu.device_count : i32
// CHECK: %[[PEER:.*]] = mosaic_gpu.remote_ref %[[X]], %[[ID]] : memref<128x64xf32>
// CHECK: %[[V:.*]] = mosaic_gpu.vector_load %[[PEER]] : memref<128x64xf32> -> vector<128x64xf32>
// CHECK: mosaic_gpu.semaphore_signal %[[SEMS]][%[[ID]], %[[N]]], %[[N]] : memref<2x4xi32, #gpu.address_space<global>>
// CHECK: mosaic_gpu.semaphore_signal %[[SEMS]][%[[ID]], %[[N]]], %[[N]] on %[[ID]] : memref<2x4xi32, #gpu.address_space<global>>
// CHECK: %[[RSEMS:.*]] = mosaic_gpu.remote_ref %[[SEMS]], %[[N]] : memref<2x4xi32, #gpu.address_space<global>>
// CHECK: mosaic_gpu.semaphore_signal %[[RSEMS]][%[[ID]], %[[N]]], %[[N]] : memref<2x4xi32, #gpu.address_space<global>>
// CHECK: mosaic_gpu.semaphore_wait %[[SEMS]][%[[ID]], %[[N]]], %[[N]] : memref<2x4xi32, #gpu.address_space<global>>
gpu.module @kernels {
  gpu.func @collectives(%x: memref<128x64xf32> {mosaic_gpu.symmetric},
                        %sems: memref<2x4xi32, #gpu.address_space<global>> {mosaic_gpu.symmetric}) kernel {
    %id = mosaic_gpu.device_id : i32
    %n = mosaic_gpu.device_count : i32
    %peer = mosaic_gpu.remote_ref %x, %id : memref<128x64xf32>
    %v = mosaic_gpu.vector_load %peer : memref<128x64xf32> -> vector<128x64xf32>
    mosaic_gpu.semaphore_signal %sems[%id, %n], %n : memref<2x4xi32, #gpu.address_space<global>>
    mosaic_gpu.semaphore_signal %sems[%id, %n], %n on %id : memref<2x4xi32, #gpu.address_space<global>>
    %rsems = mosaic_gpu.remote_ref %sems, %n : memref<2x4xi32, #gpu.address_space<global>>
    mosaic_gpu.semaphore_signal %rsems[%id, %n], %n : memref<2x4xi32, #gpu.address_space<global>>
    mosaic_gpu.semaphore_wait %sems[%id, %n], %n : memref<2x4xi32, #gpu.address_space<global>>
    gpu.return
  }
}
