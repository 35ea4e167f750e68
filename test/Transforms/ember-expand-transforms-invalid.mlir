// RUN: ember-opt %s -ember-expand-transforms -verify-diagnostics

// A function that differentiates itself can never be expanded.
func.func private @r(%x: tensor<f32>) -> tensor<f32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  // expected-error @+1 {{cannot be expanded: its function transforms itself}}
  %y, %g = ember.vjp @r(%x) cotangents(%one) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %g : tensor<f32>
}

