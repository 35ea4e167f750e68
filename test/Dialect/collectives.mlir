// RUN: ember-opt %s | ember-opt | FileCheck %s
// RUN: ember-opt %s -mlir-print-op-generic | ember-opt | FileCheck %s

// Collectives over a named axis, and a vmap that binds one.
// CHECK-LABEL: func private @lane
// CHECK: ember.psum %{{.*}} axis "i" size 4 {invariant} : tensor<2x4xf32>
// CHECK: ember.pmax %{{.*}} axis "i" size 4 : tensor<2x4xf32>
// CHECK: ember.pmin %{{.*}} axis "i" size 4 : tensor<2x4xf32>
// CHECK: ember.pvary %{{.*}} axis "i" size 4 : tensor<2x4xf32>
// CHECK: ember.all_gather %{{.*}} axis "i" size 4 dim 1 : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
// CHECK: ember.all_gather %{{.*}} axis "i" size 4 dim 1 {tiled} : (tensor<2x4xf32>) -> tensor<2x16xf32>
// CHECK: ember.reduce_scatter %{{.*}} axis "i" size 4 dim 1 : (tensor<2x4xf32>) -> tensor<2xf32>
// CHECK: ember.reduce_scatter %{{.*}} axis "i" size 4 dim 1 {tiled} : (tensor<2x4xf32>) -> tensor<2x1xf32>
// CHECK: ember.ppermute %{{.*}} axis "i" size 4 pairs [0, 1, 1, 2] : tensor<2x4xf32>
// CHECK: ember.all_to_all %{{.*}} axis "i" size 4 split 1 concat 0 : (tensor<2x4xf32>) -> tensor<4x2xf32>
// CHECK: ember.all_to_all %{{.*}} axis "i" size 4 split 1 concat 0 {tiled} : (tensor<2x4xf32>) -> tensor<8x1xf32>
// CHECK: ember.axis_index axis "i" size 4 : tensor<i32>
func.func private @lane(%x: tensor<2x4xf32>) -> tensor<i32> {
  %0 = ember.psum %x axis "i" size 4 {invariant} : tensor<2x4xf32>
  %1 = ember.pmax %x axis "i" size 4 : tensor<2x4xf32>
  %2 = ember.pmin %x axis "i" size 4 : tensor<2x4xf32>
  %3 = ember.pvary %x axis "i" size 4 : tensor<2x4xf32>
  %4 = ember.all_gather %x axis "i" size 4 dim 1 : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
  %5 = ember.all_gather %x axis "i" size 4 dim 1 {tiled} : (tensor<2x4xf32>) -> tensor<2x16xf32>
  %6 = ember.reduce_scatter %x axis "i" size 4 dim 1 : (tensor<2x4xf32>) -> tensor<2xf32>
  %7 = ember.reduce_scatter %x axis "i" size 4 dim 1 {tiled} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %8 = ember.ppermute %x axis "i" size 4 pairs [0, 1, 1, 2] : tensor<2x4xf32>
  %9 = ember.all_to_all %x axis "i" size 4 split 1 concat 0 : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %10 = ember.all_to_all %x axis "i" size 4 split 1 concat 0 {tiled} : (tensor<2x4xf32>) -> tensor<8x1xf32>
  %11 = ember.axis_index axis "i" size 4 : tensor<i32>
  return %11 : tensor<i32>
}
// CHECK-LABEL: func @named
// CHECK: ember.vmap @lane(%{{.*}}) batched [true] size 4 axis "i"
func.func @named(%xs: tensor<4x2x4xf32>) -> tensor<4xi32> {
  %r = ember.vmap @lane(%xs) batched [true] size 4 axis "i" : (tensor<4x2x4xf32>) -> tensor<4xi32>
  return %r : tensor<4xi32>
}
