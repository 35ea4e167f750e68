// RUN: ember-opt %s -ember-autodiff -split-input-file -verify-diagnostics

func.func private @k(%x: tensor<4xf32>) -> tensor<3xf32> {
  %s = ember.constant dense<0xFF800000> : tensor<f32>
  // expected-error @+1 {{has no JVP rule for window kind prod}}
  %0 = ember.reduce_window prod %x, %s, window = [2], strides = [1], low = [0], high = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @no_rule(%x: tensor<4xf32>) -> tensor<3xf32> {
  %y, %t = ember.jvp @k(%x) tangents(%x) wrt [0] : (tensor<4xf32>, tensor<4xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %t : tensor<3xf32>
}

// -----

// A pure callback is opaque: differentiating through it is an error (as in
// JAX); an effect-only callback (debug.print) has no tangents and is kept.
func.func private @cb(%x: tensor<3xf32>) -> tensor<3xf32> {
  ember.host_callback 0(%x) {has_side_effect} : (tensor<3xf32>) -> ()
  // expected-error @+1 {{cannot be differentiated: pure callbacks do not support JVP}}
  %y = ember.host_callback 1(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func @through_callback(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y, %t = ember.jvp @cb(%x) tangents(%x) wrt [0] : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %t : tensor<3xf32>
}

// -----

// Reverse mode through ember.while is refused (as in JAX); forward mode works.
func.func private @loop(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{ember.while cannot be differentiated in reverse mode}}
  %r = ember.while (%x) : tensor<f32> cond {
  ^bb0(%v: tensor<f32>):
    %c = ember.constant dense<1.000000e+01> : tensor<f32>
    %p = ember.compare LT, %v, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%v: tensor<f32>):
    %v2 = ember.mul %v, %v : tensor<f32>
    ember.yield %v2 : tensor<f32>
  }
  return %r : tensor<f32>
}
func.func @grad_loop(%x: tensor<f32>, %ct: tensor<f32>) -> tensor<f32> {
  %y, %g = ember.vjp @loop(%x) cotangents(%ct) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %g : tensor<f32>
}
