// RUN: ember-opt %s -ember-autodiff -split-input-file -verify-diagnostics

// A pure callback is opaque: differentiating through it is an error (as in
// JAX); an effect-only callback (debug.print) has no tangents and is kept.
func.func private @cb(%x: tensor<3xf32>) -> tensor<3xf32> {
  ember.host_callback 0(%x) {has_side_effect} : (tensor<3xf32>) -> ()
  // expected-error @+1 {{Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while taking gradients.}}
  %y = ember.host_callback 1(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func @through_callback(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y, %t = ember.jvp @cb(%x) tangents(%x) wrt [0] : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %t : tensor<3xf32>
}

// -----

// An io_callback (an effectful callback with results): JAX's words.
func.func private @io(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{IO callbacks do not support JVP.}}
  %y = ember.host_callback 2(%x) {has_side_effect} : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func @through_io_callback(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y, %t = ember.jvp @io(%x) tangents(%x) wrt [0] : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %t : tensor<3xf32>
}

// -----

// The stack a reverse-mode loop derivative saves its residuals on cannot be
// differentiated again (grad of grad through a run-time trip count).
func.func private @pushes(%x: tensor<f32>) -> tensor<i64> {
  %h = ember.constant dense<0> : tensor<i64>
  // expected-error @+1 {{cannot be differentiated again}}
  %h1 = ember.stack_push %h(%x) : (tensor<i64>, tensor<f32>) -> tensor<i64>
  return %h1 : tensor<i64>
}
func.func @jvp_push(%x: tensor<f32>) -> tensor<i64> {
  %y, %t = ember.jvp @pushes(%x) tangents(%x) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<i64>, tensor<i64>)
  return %y : tensor<i64>
}
