// RUN: ember-opt %s -ember-autodiff -ember-inline-custom -symbol-dce -canonicalize -split-input-file | FileCheck %s

// The user's JVP rule (here: derivative 100) is what reverse mode uses; the
// remaining primal call is inlined.
// CHECK-LABEL: func @custom_jvp_grad
// CHECK-NOT: ember.custom_jvp_call
// CHECK: ember.constant dense<1.000000e+02>
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
func.func @custom_jvp_grad(%x: tensor<f32>) -> tensor<f32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %d = ember.vjp @g(%x) cotangents(%one) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %d : tensor<f32>
}

// -----

// Without differentiation the call is the callee.
// CHECK-LABEL: func @custom_plain
// CHECK-NEXT: ember.sin
// CHECK-NEXT: return
func.func private @f(%x: tensor<f32>) -> tensor<f32> {
  %0 = ember.sin %x : tensor<f32>
  return %0 : tensor<f32>
}
func.func private @f_jvp(%x: tensor<f32>, %t: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  return %x, %t : tensor<f32>, tensor<f32>
}
func.func @custom_plain(%x: tensor<f32>) -> tensor<f32> {
  %0 = ember.custom_jvp_call @f jvp @f_jvp(%x) segments [1, 0, 0] : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A callee holding a custom call of its own (one custom_jvp function
// calling another) is inlined until no custom call is left.
// CHECK-LABEL: func @nested_custom_calls
// CHECK-NOT: ember.custom_jvp_call
// CHECK: ember.cos
// CHECK: ember.sin
func.func private @inner(%x: tensor<f32>) -> tensor<f32> {
  %0 = ember.sin %x : tensor<f32>
  return %0 : tensor<f32>
}
func.func private @inner_jvp(%x: tensor<f32>, %t: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %0 = ember.sin %x : tensor<f32>
  return %0, %t : tensor<f32>, tensor<f32>
}
func.func private @outer(%x: tensor<f32>) -> tensor<f32> {
  %c = ember.cos %x : tensor<f32>
  %0 = ember.custom_jvp_call @inner jvp @inner_jvp(%c) segments [1, 0, 0] : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func private @outer_jvp(%x: tensor<f32>, %t: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %0 = func.call @outer(%x) : (tensor<f32>) -> tensor<f32>
  return %0, %t : tensor<f32>, tensor<f32>
}
func.func @nested_custom_calls(%x: tensor<f32>) -> tensor<f32> {
  %0 = ember.custom_jvp_call @outer jvp @outer_jvp(%x) segments [1, 0, 0] : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
