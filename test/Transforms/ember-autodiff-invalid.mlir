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
