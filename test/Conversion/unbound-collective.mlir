// RUN: ember-opt %s -ember-to-linalg -verify-diagnostics

// A collective whose axis no vmap binds cannot be lowered: there are no
// other lanes to combine with.
func.func @unbound(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{collective over axis "i" outside any ember.vmap that binds the axis}}
  %s = ember.psum %x axis "i" size 4 : tensor<3xf32>
  return %s : tensor<3xf32>
}
