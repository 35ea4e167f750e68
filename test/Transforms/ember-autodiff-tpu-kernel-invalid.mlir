// RUN: ember-opt %s -ember-expand-transforms=keep-kernel-calls=true -verify-diagnostics

// A kernel kept as a call has no derivative rule: on the differentiated
// path (no custom_vjp around it) it is the user's error.
module {
  func.func @main(%x: tensor<8x128xf32>, %ct: tensor<8x128xf32>) -> tensor<8x128xf32> {
    %y, %g = ember.vjp @f(%x) cotangents(%ct) wrt [0] : (tensor<8x128xf32>, tensor<8x128xf32>) -> (tensor<8x128xf32>, tensor<8x128xf32>)
    return %g : tensor<8x128xf32>
  }
  func.func private @f(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
    // expected-error @+1 {{a pallas_call on the differentiated path has no derivative rule}}
    %r = call @pallas_k(%x) : (tensor<8x128xf32>) -> tensor<8x128xf32>
    return %r : tensor<8x128xf32>
  }
  func.func private @pallas_k(%x: tensor<8x128xf32>) -> tensor<8x128xf32> attributes {ember_tpu.kernel_module = "(the kernel)"} {
    %c = ember.constant dense<2.0> : tensor<8x128xf32>
    %r = ember.mul %x, %c : tensor<8x128xf32>
    return %r : tensor<8x128xf32>
  }
}
