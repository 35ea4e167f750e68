// RUN: ember-opt %s -ember-expand-transforms -symbol-dce -canonicalize -cse -split-input-file | FileCheck %s

// grad of (sum of vmap of grad of sin): four nested transformations, mixed,
// expanded innermost first in one pass. d/dx sum(cos(x)) = -sin(x).
// CHECK-LABEL: func @grad_vmap_grad
// CHECK-NOT: ember.vjp
// CHECK-NOT: ember.vmap
// CHECK: %[[S:.*]] = ember.sin %{{.*}} : tensor<3xf32>
// CHECK: %[[N:.*]] = ember.neg %[[S]] : tensor<3xf32>
// CHECK: return %[[N]]
func.func private @f0(%x: tensor<f32>) -> tensor<f32> {
  %0 = ember.sin %x : tensor<f32>
  return %0 : tensor<f32>
}
func.func private @f1(%x: tensor<f32>) -> tensor<f32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @f0(%x) cotangents(%one) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %g : tensor<f32>
}
func.func private @f2(%xs: tensor<3xf32>) -> tensor<f32> {
  %v = ember.vmap @f1(%xs) batched [true] size 3 : (tensor<3xf32>) -> tensor<3xf32>
  %s = ember.reduce sum %v, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
func.func @grad_vmap_grad(%xs: tensor<3xf32>) -> tensor<3xf32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @f2(%xs) cotangents(%one) wrt [0] : (tensor<3xf32>, tensor<f32>) -> (tensor<f32>, tensor<3xf32>)
  return %g : tensor<3xf32>
}

// -----

// A custom rule's call that nothing differentiates is inlined: the user's
// JVP (derivative 100) is what reverse mode used.
// CHECK-LABEL: func @custom_rule_inlined
// CHECK-NOT: ember.custom_jvp_call
// CHECK-DAG: ember.constant dense<1.000000e+02>
// CHECK-DAG: ember.sin
func.func private @f(%x: tensor<f32>) -> tensor<f32> {
  %0 = ember.sin %x : tensor<f32>
  return %0 : tensor<f32>
}
func.func private @f_jvp(%x: tensor<f32>, %t: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %0 = ember.sin %x : tensor<f32>
  %c = ember.constant dense<100.0> : tensor<f32>
  %1 = ember.mul %t, %c : tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}
func.func private @g(%x: tensor<f32>) -> tensor<f32> {
  %0 = ember.custom_jvp_call @f jvp @f_jvp(%x) segments [1, 0, 0] : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @custom_rule_inlined(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %d = ember.vjp @g(%x) cotangents(%one) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %y, %d : tensor<f32>, tensor<f32>
}
