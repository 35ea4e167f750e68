// RUN: ember-opt %s -ember-lower-copies -split-input-file | FileCheck %s

// CHECK-LABEL: func @strided
func.func @strided(%a: memref<8xf32>, %b: memref<4xf32>) {
  %s = memref.subview %a[0] [4] [2] : memref<8xf32> to memref<4xf32, strided<[2]>>
  // CHECK-NOT: memref.copy
  // CHECK: linalg.copy ins(%{{.*}} : memref<4xf32, strided<[2]>>) outs(%{{.*}} : memref<4xf32>)
  memref.copy %s, %b : memref<4xf32, strided<[2]>> to memref<4xf32>
  return
}

// -----

// CHECK-LABEL: func @unranked_kept
func.func @unranked_kept(%a: memref<*xf32>, %b: memref<*xf32>) {
  // CHECK: memref.copy
  memref.copy %a, %b : memref<*xf32> to memref<*xf32>
  return
}
