// RUN: ember-opt %s -ember-drop-optimization-barriers -split-input-file | FileCheck %s

// Uses of the barrier's results read its operands.
// CHECK-LABEL: func @drop
// CHECK-NOT: ember.optimization_barrier
// CHECK: %[[E:.*]] = tensor.empty() : tensor<3xf32>
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<3xf32>, tensor<3xf32>) outs(%[[E]] : tensor<3xf32>)
#map = affine_map<(d0) -> (d0)>
func.func @drop(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %0:2 = ember.optimization_barrier %a, %b : tensor<3xf32>, tensor<3xf32>
  %e = tensor.empty() : tensor<3xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%0#0, %0#1 : tensor<3xf32>, tensor<3xf32>) outs(%e : tensor<3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %1 : tensor<3xf32>
}

// -----

// A program compiled for every size (design.md, "One compile for every
// size") has `?` dimensions when the barriers are dropped.
// CHECK-LABEL: func @drop_dynamic
// CHECK-NOT: ember.optimization_barrier
// CHECK: return %arg0 : tensor<?x4xf32>
func.func @drop_dynamic(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = ember.optimization_barrier %a : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
