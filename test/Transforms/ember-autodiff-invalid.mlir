// RUN: ember-opt %s -ember-autodiff -split-input-file -verify-diagnostics

func.func private @k(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{has no JVP rule for kind max}}
  %0 = ember.cumulative max %x, axis = 0 : tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @no_rule(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y, %t = ember.jvp @k(%x) tangents(%x) wrt [0] : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
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
