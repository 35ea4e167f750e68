// RUN: ember-opt %s | ember-opt | FileCheck %s
// RUN: ember-opt %s -mlir-print-op-generic | ember-opt | FileCheck %s

// Mutable array references (docs/spec.md, "Refs"): round trip.

// CHECK-LABEL: func @refs
// CHECK-SAME: %[[R:.*]]: !ember.ref<tensor<3xf32>>
// CHECK: %[[V:.*]] = ember.ref_get %[[R]] : <tensor<3xf32>>
// CHECK: ember.ref_set %[[R]], %[[V]] : <tensor<3xf32>>
// CHECK: %[[O:.*]] = ember.ref_swap %[[R]], %[[V]] : <tensor<3xf32>>
// CHECK: ember.ref_addupdate %[[R]], %[[O]] : <tensor<3xf32>>
// CHECK: ember.ref_get %{{.*}} : <tensor<2xi1>>
func.func @refs(%r: !ember.ref<tensor<3xf32>>, %b: !ember.ref<tensor<2xi1>>) -> tensor<2xi1> {
  %v = ember.ref_get %r : !ember.ref<tensor<3xf32>>
  ember.ref_set %r, %v : !ember.ref<tensor<3xf32>>
  %old = ember.ref_swap %r, %v : !ember.ref<tensor<3xf32>>
  ember.ref_addupdate %r, %old : !ember.ref<tensor<3xf32>>
  %m = ember.ref_get %b : !ember.ref<tensor<2xi1>>
  return %m : tensor<2xi1>
}

// CHECK-LABEL: func @scalar_ref
// CHECK-SAME: !ember.ref<tensor<complex<f64>>>
func.func @scalar_ref(%r: !ember.ref<tensor<complex<f64>>>) {
  return
}

// Ref ops in the regions of loops and conditionals (ref_c2); the
// condition reads.
// CHECK-LABEL: func @in_regions
// CHECK: ember.while
// CHECK: ember.ref_get %arg0
// CHECK: ember.ref_addupdate %arg0
// CHECK: ember.case
// CHECK: ember.ref_set %arg0
func.func @in_regions(%r: !ember.ref<tensor<i32>>, %x: tensor<i32>) -> tensor<i32> {
  %0 = ember.while (%x) : tensor<i32> cond {
  ^bb0(%c: tensor<i32>):
    %v = ember.ref_get %r : !ember.ref<tensor<i32>>
    %p = ember.compare LT, %c, %v : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<i32>):
    ember.ref_addupdate %r, %c : !ember.ref<tensor<i32>>
    ember.yield %c : tensor<i32>
  }
  %1 = ember.case %x : tensor<i32> -> tensor<i32> {
    ember.yield %0 : tensor<i32>
  }, {
    ember.ref_set %r, %0 : !ember.ref<tensor<i32>>
    ember.yield %x : tensor<i32>
  }
  return %1 : tensor<i32>
}

// Transformation ops pass refs to their functions (ref_c6); a batched ref
// holds one row per lane (vmap_c3).
// CHECK-LABEL: func @transformed
// CHECK: ember.jvp @takes_ref(%{{.*}}, %arg1) tangents(%{{.*}}) wrt [0] : (tensor<3xf32>, !ember.ref<tensor<3xf32>>, tensor<3xf32>)
// CHECK: ember.vjp @takes_ref(%{{.*}}, %arg1) cotangents(%{{.*}}) wrt [0] : (tensor<3xf32>, !ember.ref<tensor<3xf32>>, tensor<3xf32>)
// CHECK: ember.vmap @takes_ref(%{{.*}}, %arg2) batched [true, true] size 4 : (tensor<4x3xf32>, !ember.ref<tensor<4x3xf32>>)
func.func private @takes_ref(%x: tensor<3xf32>, %r: !ember.ref<tensor<3xf32>>) -> tensor<3xf32>
func.func @transformed(%x: tensor<3xf32>, %r: !ember.ref<tensor<3xf32>>, %rows: !ember.ref<tensor<4x3xf32>>, %xs: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %y, %ty = ember.jvp @takes_ref(%x, %r) tangents(%x) wrt [0] : (tensor<3xf32>, !ember.ref<tensor<3xf32>>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  %z, %g = ember.vjp @takes_ref(%x, %r) cotangents(%x) wrt [0] : (tensor<3xf32>, !ember.ref<tensor<3xf32>>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  %b = ember.vmap @takes_ref(%xs, %rows) batched [true, true] size 4 : (tensor<4x3xf32>, !ember.ref<tensor<4x3xf32>>) -> tensor<4x3xf32>
  return %b : tensor<4x3xf32>
}
