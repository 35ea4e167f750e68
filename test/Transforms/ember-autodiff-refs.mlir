// RUN: ember-opt %s -ember-autodiff -symbol-dce -canonicalize -cse -split-input-file | FileCheck %s

// Refs passed to a differentiated function (docs/spec.md, "Refs", ref_c6):
// their values are threaded through the inlined body, so one read on entry
// and one write of each written ref's last value remain; a ref is not
// differentiated (transform_c7), so what is read from it has no tangent.

// CHECK-LABEL: func @grad
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>, %[[W:.*]]: !ember.ref<tensor<3xf32>>, %[[N:.*]]: !ember.ref<tensor<i32>>)
// CHECK-DAG: %[[W0:.*]] = ember.ref_get %[[W]]
// CHECK-DAG: %[[N0:.*]] = ember.ref_get %[[N]]
// CHECK-DAG: %[[P:.*]] = ember.mul %[[W0]], %[[X]]
// CHECK-DAG: %[[S:.*]] = ember.reduce sum %[[P]]
// CHECK-DAG: %[[N1:.*]] = ember.add %[[N0]], %{{.*}} : tensor<i32>
// CHECK-DAG: %[[T:.*]] = ember.sin %[[W0]]
// CHECK: ember.ref_set %[[W]], %[[T]]
// CHECK: ember.ref_set %[[N]], %[[N1]]
// The gradient of sum(w * x) with respect to x is w, read on entry.
// CHECK: return %[[S]], %[[W0]]
func.func private @f(%x: tensor<3xf32>, %w: !ember.ref<tensor<3xf32>>, %calls: !ember.ref<tensor<i32>>) -> tensor<f32> {
  %w0 = ember.ref_get %w : !ember.ref<tensor<3xf32>>
  %p = ember.mul %w0, %x : tensor<3xf32>
  %s = ember.reduce sum %p, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  %one = ember.constant dense<1> : tensor<i32>
  ember.ref_addupdate %calls, %one : !ember.ref<tensor<i32>>
  %t = ember.sin %w0 : tensor<3xf32>
  ember.ref_set %w, %t : !ember.ref<tensor<3xf32>>
  return %s : tensor<f32>
}
func.func @grad(%x: tensor<3xf32>, %w: !ember.ref<tensor<3xf32>>, %calls: !ember.ref<tensor<i32>>) -> (tensor<f32>, tensor<3xf32>) {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @f(%x, %w, %calls) cotangents(%one) wrt [0] : (tensor<3xf32>, !ember.ref<tensor<3xf32>>, !ember.ref<tensor<i32>>, tensor<f32>) -> (tensor<f32>, tensor<3xf32>)
  return %y, %g : tensor<f32>, tensor<3xf32>
}

// -----

// Forward mode: the tangent of sum(w * x) is sum(w * t); the ref is written
// once, after the computation.
// CHECK-LABEL: func @jvp
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>, %[[T:.*]]: tensor<3xf32>, %[[W:.*]]: !ember.ref<tensor<3xf32>>)
// CHECK: %[[W0:.*]] = ember.ref_get %[[W]]
// CHECK-DAG: ember.mul %[[W0]], %[[X]]
// CHECK-DAG: %[[WT:.*]] = ember.mul %[[W0]], %[[T]]
// CHECK-DAG: %[[ST:.*]] = ember.reduce sum %[[WT]]
// CHECK: ember.ref_set %[[W]]
// CHECK-NOT: ember.ref_
// CHECK: return %{{.*}}, %[[ST]]
func.func private @f(%x: tensor<3xf32>, %w: !ember.ref<tensor<3xf32>>) -> tensor<f32> {
  %w0 = ember.ref_get %w : !ember.ref<tensor<3xf32>>
  %p = ember.mul %w0, %x : tensor<3xf32>
  %s = ember.reduce sum %p, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  %two = ember.constant dense<2.0> : tensor<3xf32>
  ember.ref_addupdate %w, %two : !ember.ref<tensor<3xf32>>
  return %s : tensor<f32>
}
func.func @jvp(%x: tensor<3xf32>, %t: tensor<3xf32>, %w: !ember.ref<tensor<3xf32>>) -> (tensor<f32>, tensor<f32>) {
  %y, %ty = ember.jvp @f(%x, %w) tangents(%t) wrt [0] : (tensor<3xf32>, !ember.ref<tensor<3xf32>>, tensor<3xf32>) -> (tensor<f32>, tensor<f32>)
  return %y, %ty : tensor<f32>, tensor<f32>
}

// -----

// Reverse mode through a loop that reads a ref and counts into another:
// the counter becomes one more carry of the loop (written back after it),
// the weights read inside are the value read on entry.
// CHECK-LABEL: func @loop
// CHECK-SAME: %[[W:[^:]*]]: !ember.ref<tensor<3xf32>>, %[[N:[^:]*]]: !ember.ref<tensor<f32>>
// CHECK-DAG: %[[W0:.*]] = ember.ref_get %[[W]]
// CHECK-DAG: %[[N0:.*]] = ember.ref_get %[[N]]
// CHECK: %[[L:.*]]:{{[0-9]+}} = ember.while(%{{.*}}, %{{.*}}, %[[N0]]
// CHECK: ember.ref_set %[[N]], %[[L]]#2
// CHECK-NOT: ember.ref_
// CHECK: return
func.func private @g(%x: tensor<3xf32>, %w: !ember.ref<tensor<3xf32>>, %n: !ember.ref<tensor<f32>>) -> tensor<3xf32> {
  %zero = ember.constant dense<0> : tensor<i32>
  %one = ember.constant dense<1> : tensor<i32>
  %fone = ember.constant dense<1.0> : tensor<f32>
  %l:2 = ember.while (%zero, %x) {trip_count = 3 : i64} : tensor<i32>, tensor<3xf32> cond {
  ^bb0(%i: tensor<i32>, %y: tensor<3xf32>):
    %three = ember.constant dense<3> : tensor<i32>
    %p = ember.compare LT, %i, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %y: tensor<3xf32>):
    %w0 = ember.ref_get %w : !ember.ref<tensor<3xf32>>
    %m = ember.mul %y, %w0 : tensor<3xf32>
    %s = ember.sin %m : tensor<3xf32>
    ember.ref_addupdate %n, %fone : !ember.ref<tensor<f32>>
    %i1 = ember.add %i, %one : tensor<i32>
    ember.yield %i1, %s : tensor<i32>, tensor<3xf32>
  }
  return %l#1 : tensor<3xf32>
}
func.func @loop(%x: tensor<3xf32>, %ct: tensor<3xf32>, %w: !ember.ref<tensor<3xf32>>, %n: !ember.ref<tensor<f32>>) -> (tensor<3xf32>, tensor<3xf32>) {
  %y, %g = ember.vjp @g(%x, %w, %n) cotangents(%ct) wrt [0] : (tensor<3xf32>, !ember.ref<tensor<3xf32>>, !ember.ref<tensor<f32>>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %y, %g : tensor<3xf32>, tensor<3xf32>
}
