// RUN: ember-opt %s -ember-batch -split-input-file -verify-diagnostics

// A pure callback without a vmap_method cannot be batched (as in JAX).
func.func private @h(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{cannot be batched: this callback has no vmap_method}}
  %y = ember.host_callback 2(%x) {vmap_method = "none"} : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func @unbatchable(%xs: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = ember.vmap @h(%xs) batched [true] size 2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
