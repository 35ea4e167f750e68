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
