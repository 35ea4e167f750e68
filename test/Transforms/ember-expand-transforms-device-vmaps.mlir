// RUN: ember-opt %s -split-input-file -ember-expand-transforms=keep-device-vmaps=true -verify-diagnostics | FileCheck %s

// With keep-device-vmaps (StableHLO out), a vmap whose lanes are devices
// (shard_map, pmap: `ember.device_axis`) stays; the transformations inside
// its callee and every other vmap are expanded.

// CHECK-LABEL: func.func @main(
// CHECK: ember.vmap @body(%arg0) batched [true] size 4 axis "x" {ember.device_axis}
// CHECK-NOT: ember.vmap
// CHECK-LABEL: func.func private @body(
// CHECK-NOT: ember.vmap
// CHECK: ember.psum
func.func @main(%x: tensor<4x2xf32>, %y: tensor<3x2xf32>) -> (tensor<4x2xf32>, tensor<3x2xf32>) {
  %a = ember.vmap @body(%x) batched [true] size 4 axis "x" {ember.device_axis} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %b = ember.vmap @neg2(%y) batched [true] size 3 : (tensor<3x2xf32>) -> tensor<3x2xf32>
  return %a, %b : tensor<4x2xf32>, tensor<3x2xf32>
}
func.func private @body(%v: tensor<2xf32>) -> tensor<2xf32> {
  %s = ember.vmap @neg(%v) batched [true] size 2 : (tensor<2xf32>) -> tensor<2xf32>
  %p = ember.psum %s axis "x" size 4 : tensor<2xf32>
  return %p : tensor<2xf32>
}
func.func private @neg(%v: tensor<f32>) -> tensor<f32> {
  %n = ember.neg %v : tensor<f32>
  return %n : tensor<f32>
}
func.func private @neg2(%v: tensor<2xf32>) -> tensor<2xf32> {
  %n = ember.neg %v : tensor<2xf32>
  return %n : tensor<2xf32>
}

// -----

// A transformation of a function holding a kept device vmap (grad of a
// shard_map) would wait for it forever: that vmap is expanded after all
// (vectorized over its lanes), and the gradient with it.
// CHECK-LABEL: func.func @grad_of_shard_map(
// CHECK-NOT: ember.vjp
// CHECK-NOT: ember.vmap
// CHECK: return
func.func @grad_of_shard_map(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @loss(%x) cotangents(%one) wrt [0] : (tensor<4x2xf32>, tensor<f32>) -> (tensor<f32>, tensor<4x2xf32>)
  return %g : tensor<4x2xf32>
}
func.func private @loss(%x: tensor<4x2xf32>) -> tensor<f32> {
  %a = ember.vmap @body(%x) batched [true] size 4 axis "x" {ember.device_axis} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %s = ember.reduce sum %a, dims = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
func.func private @body(%v: tensor<2xf32>) -> tensor<2xf32> {
  %p = ember.psum %v axis "x" size 4 : tensor<2xf32>
  return %p : tensor<2xf32>
}
