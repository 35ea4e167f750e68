// RUN: ember-opt %s -ember-batch -symbol-dce -canonicalize -cse -split-input-file | FileCheck %s

// Refs passed to a vmapped function (docs/spec.md, "Refs", ref_c6): a ref
// marked batched holds one row per lane (`!ember.ref<tensor<n x ...>>`),
// one not marked is shared. Their values are threaded through the body
// (a loop accumulating into a ref carries its rows) and written back once.

// CHECK-LABEL: func @main
// CHECK-SAME: (%[[ACC:.*]]: !ember.ref<tensor<8x3xf32>>, %[[W:.*]]: !ember.ref<tensor<3xf32>>, %[[XS:.*]]: tensor<8x3xf32>)
// CHECK-DAG: %[[A0:.*]] = ember.ref_get %[[ACC]] : <tensor<8x3xf32>>
// CHECK-DAG: %[[W0:.*]] = ember.ref_get %[[W]] : <tensor<3xf32>>
// CHECK: %[[L:.*]]:2 = ember.while(%{{.*}}, %[[A0]]) {trip_count = 4 : i64} : tensor<i64>, tensor<8x3xf32>
// CHECK: ember.broadcast_in_dim %[[W0]], dims = [1] : (tensor<3xf32>) -> tensor<8x3xf32>
// CHECK: %[[S:.*]] = ember.reduce sum %[[L]]#1, dims = [1]
// CHECK: ember.ref_set %[[ACC]], %[[L]]#1 : <tensor<8x3xf32>>
// CHECK-NOT: ember.ref_set %[[W]]
// CHECK: return %[[S]]
func.func private @step(%acc: !ember.ref<tensor<3xf32>>, %w: !ember.ref<tensor<3xf32>>, %x: tensor<3xf32>) -> tensor<f32> {
  %zero = ember.constant dense<0> : tensor<i64>
  %one = ember.constant dense<1> : tensor<i64>
  %n = ember.constant dense<4> : tensor<i64>
  %l = ember.while (%zero) {trip_count = 4 : i64} : tensor<i64> cond {
  ^bb0(%j: tensor<i64>):
    %p = ember.compare LT, %j, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%j: tensor<i64>):
    %w0 = ember.ref_get %w : !ember.ref<tensor<3xf32>>
    %d = ember.mul %w0, %x : tensor<3xf32>
    ember.ref_addupdate %acc, %d : !ember.ref<tensor<3xf32>>
    %k = ember.add %j, %one : tensor<i64>
    ember.yield %k : tensor<i64>
  }
  %a = ember.ref_get %acc : !ember.ref<tensor<3xf32>>
  %s = ember.reduce sum %a, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
func.func @main(%acc: !ember.ref<tensor<8x3xf32>>, %w: !ember.ref<tensor<3xf32>>, %xs: tensor<8x3xf32>) -> tensor<8xf32> {
  %y = ember.vmap @step(%acc, %w, %xs) batched [true, false, true] size 8 : (!ember.ref<tensor<8x3xf32>>, !ember.ref<tensor<3xf32>>, tensor<8x3xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// A batched ref written with a value that is the same on every lane gets
// it broadcast; an unbatched ref may be written with such a value. A
// conditional writing a ref yields the ref's value from each branch, so
// the flattened conditional selects it (its write does not run twice).
// CHECK-LABEL: func @shared
// CHECK-SAME: (%[[R:.*]]: !ember.ref<tensor<4x2xf32>>, %[[C:.*]]: !ember.ref<tensor<f32>>, %[[K:.*]]: tensor<i32>)
// CHECK: %[[C0:.*]] = ember.ref_get %[[C]] : <tensor<f32>>
// CHECK: %[[ROW:.*]] = ember.broadcast_in_dim %[[C0]], dims = [] : (tensor<f32>) -> tensor<2xf32>
// CHECK: %[[C1:.*]] = ember.add %[[C0]], %{{.*}} : tensor<f32>
// CHECK: %[[P:.*]] = ember.compare LE, %[[K]]
// CHECK: %[[C2:.*]] = ember.select %[[P]], %[[C1]], %[[C0]]
// CHECK: ember.ref_set %[[C]], %[[C2]] : <tensor<f32>>
// CHECK: %[[B:.*]] = ember.broadcast_in_dim %[[ROW]], dims = [1] : (tensor<2xf32>) -> tensor<4x2xf32>
// CHECK: ember.ref_set %[[R]], %[[B]] : <tensor<4x2xf32>>
func.func private @fill(%r: !ember.ref<tensor<2xf32>>, %c: !ember.ref<tensor<f32>>, %k: tensor<i32>) -> tensor<f32> {
  %c0 = ember.ref_get %c : !ember.ref<tensor<f32>>
  %b = ember.broadcast_in_dim %c0, dims = [] : (tensor<f32>) -> tensor<2xf32>
  ember.ref_set %r, %b : !ember.ref<tensor<2xf32>>
  %u = ember.case %k : tensor<i32> -> tensor<f32> {
    %one = ember.constant dense<1.0> : tensor<f32>
    ember.ref_addupdate %c, %one : !ember.ref<tensor<f32>>
    ember.yield %one : tensor<f32>
  }, {
    %two = ember.constant dense<2.0> : tensor<f32>
    ember.yield %two : tensor<f32>
  }
  return %u : tensor<f32>
}
func.func @shared(%r: !ember.ref<tensor<4x2xf32>>, %c: !ember.ref<tensor<f32>>, %k: tensor<i32>) -> tensor<4xf32> {
  %y = ember.vmap @fill(%r, %c, %k) batched [true, false, false] size 4 : (!ember.ref<tensor<4x2xf32>>, !ember.ref<tensor<f32>>, tensor<i32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
