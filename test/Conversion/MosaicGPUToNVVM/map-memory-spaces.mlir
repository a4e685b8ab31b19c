// RUN: mosaic-opt %s -mosaic-gpu-map-memory-spaces | FileCheck %s

// GPU address spaces become NVPTX address space numbers everywhere: block
// arguments, results, nested types.
// CHECK-LABEL: func @spaces
// CHECK-SAME: (%{{.*}}: memref<4xf32, 3>, %{{.*}}: memref<4xf32, 1>, %{{.*}}: memref<4xf32, 5>, %{{.*}}: memref<4xf32>)
func.func @spaces(%w: memref<4xf32, #gpu.address_space<workgroup>>,
                  %g: memref<4xf32, #gpu.address_space<global>>,
                  %p: memref<4xf32, #gpu.address_space<private>>,
                  %d: memref<4xf32>) -> memref<2xf32, strided<[1], offset: 2>, #gpu.address_space<workgroup>> {
  // CHECK: memref.subview %{{.*}}[2] [2] [1] : memref<4xf32, 3> to memref<2xf32, strided<[1], offset: 2>, 3>
  %s = memref.subview %w[2] [2] [1] : memref<4xf32, #gpu.address_space<workgroup>> to memref<2xf32, strided<[1], offset: 2>, #gpu.address_space<workgroup>>
  return %s : memref<2xf32, strided<[1], offset: 2>, #gpu.address_space<workgroup>>
}
