// RUN: ember-opt %s -ember-expand-transforms=keep-kernel-calls=true | FileCheck %s
// RUN: ember-opt %s -ember-expand-transforms | FileCheck %s --check-prefix=INLINED

// Reverse mode through a custom_vjp whose fwd and bwd call a Pallas kernel
// recorded for the TPU target (`ember_tpu.kernel_module`): with
// keep-kernel-calls, ember-autodiff keeps both calls (the TPU target lowers
// them as the kernel); without it they are inlined as any call.

// CHECK-LABEL: func.func @main(
// CHECK: call @pallas_k(%arg0)
// CHECK: call @pallas_k(
// CHECK: return

// INLINED-LABEL: func.func @main(
// INLINED-NOT: call
// INLINED: return
module {
  func.func @main(%x: tensor<8x128xf32>, %ct: tensor<8x128xf32>) -> (tensor<8x128xf32>, tensor<8x128xf32>) {
    %y, %g = ember.vjp @f(%x) cotangents(%ct) wrt [0] : (tensor<8x128xf32>, tensor<8x128xf32>) -> (tensor<8x128xf32>, tensor<8x128xf32>)
    return %y, %g : tensor<8x128xf32>, tensor<8x128xf32>
  }
  func.func private @f(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
    %r = ember.custom_vjp_call @prim fwd @fwd bwd @bwd(%x) segments [1, 0, 0, 0, 0] : (tensor<8x128xf32>) -> tensor<8x128xf32>
    return %r : tensor<8x128xf32>
  }
  func.func private @prim(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
    %r = call @pallas_k(%x) : (tensor<8x128xf32>) -> tensor<8x128xf32>
    return %r : tensor<8x128xf32>
  }
  func.func private @fwd(%x: tensor<8x128xf32>) -> tensor<8x128xf32> {
    %r = call @pallas_k(%x) : (tensor<8x128xf32>) -> tensor<8x128xf32>
    return %r : tensor<8x128xf32>
  }
  func.func private @bwd(%g: tensor<8x128xf32>) -> tensor<8x128xf32> {
    %r = call @pallas_k(%g) : (tensor<8x128xf32>) -> tensor<8x128xf32>
    return %r : tensor<8x128xf32>
  }
  func.func private @pallas_k(%x: tensor<8x128xf32>) -> tensor<8x128xf32> attributes {ember_tpu.kernel_module = "(the kernel)"} {
    %c = ember.constant dense<2.0> : tensor<8x128xf32>
    %r = ember.mul %x, %c : tensor<8x128xf32>
    return %r : tensor<8x128xf32>
  }
}
