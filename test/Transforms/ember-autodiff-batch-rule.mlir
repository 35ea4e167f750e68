// RUN: ember-opt %s -ember-autodiff -symbol-dce -split-input-file | FileCheck %s

// A call with a user's batching rule (`ember.batch_rule`) off the
// differentiated path stays a call through ember-autodiff, so that an
// enclosing vmap still applies the rule; here in the forward pass (the
// primal result) of a gradient.
// CHECK-LABEL: func @kept_off_the_path
// CHECK: call @plain(%arg1) {ember.batch_rule = @rule, ember.batch_size = 4 : i64}
// CHECK: ember.cos %arg0
func.func private @plain(%x: tensor<f32>) -> tensor<f32> {
  %0 = ember.exp %x : tensor<f32>
  return %0 : tensor<f32>
}
func.func private @rule(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func private @f(%x: tensor<f32>, %c: tensor<f32>) -> tensor<f32> {
  %0 = func.call @plain(%c) {ember.batch_rule = @rule, ember.batch_size = 4 : i64} : (tensor<f32>) -> tensor<f32>
  %1 = ember.sin %x : tensor<f32>
  %2 = ember.mul %0, %1 : tensor<f32>
  return %2 : tensor<f32>
}
func.func @kept_off_the_path(%x: tensor<f32>, %c: tensor<f32>) -> tensor<f32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @f(%x, %c) cotangents(%one) wrt [0] : (tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %g : tensor<f32>
}

// -----

// On the differentiated path the callee is differentiated in its place
// (the rule batches the call, not its derivative): d exp(x) = exp(x).
// CHECK-LABEL: func @inlined_on_the_path
// CHECK-NOT: call @plain
// CHECK: %[[E:.*]] = ember.exp %arg0
// CHECK: %[[G:.*]] = ember.mul %{{.*}}, %[[E]]
// CHECK: return %[[G]]
func.func private @plain(%x: tensor<f32>) -> tensor<f32> {
  %0 = ember.exp %x : tensor<f32>
  return %0 : tensor<f32>
}
func.func private @rule(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func private @f(%x: tensor<f32>) -> tensor<f32> {
  %0 = func.call @plain(%x) {ember.batch_rule = @rule, ember.batch_size = 4 : i64} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @inlined_on_the_path(%x: tensor<f32>) -> tensor<f32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @f(%x) cotangents(%one) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %g : tensor<f32>
}
