// RUN: ember-opt %s --ember-transforms | FileCheck %s --check-prefix=TRANSFORMS
// RUN: ember-opt %s --ember-transforms --ember-optimize --ember-cpu-codegen | FileCheck %s --check-prefix=LLVM
// RUN: ember-opt %s --ember-cpu-pipeline | FileCheck %s --check-prefix=LLVM
// The stages compose to the whole pipeline: stage 1 leaves ember IR with no
// transformation op; the three stages end in the LLVM dialect.
// TRANSFORMS-NOT: ember.vjp
// TRANSFORMS: ember.cos
// TRANSFORMS-NOT: ember.vjp
// LLVM: llvm.func @main
// LLVM-NOT: ember.
func.func private @f(%x: tensor<4xf32>) -> tensor<f32> {
  %0 = ember.sin %x : tensor<4xf32>
  %1 = ember.reduce sum %0, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @f(%x) cotangents(%one) wrt [0] : (tensor<4xf32>, tensor<f32>) -> (tensor<f32>, tensor<4xf32>)
  return %g : tensor<4xf32>
}
