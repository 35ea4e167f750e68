// RUN: ember-opt %s -ember-autodiff -symbol-dce -canonicalize -cse -split-input-file | FileCheck %s

// Transposes of the collectives. Under vmap semantics a psum transposes to
// a psum; an invariant psum (shard_map's check_vma) transposes to pvary and
// pvary to an invariant psum; all_gather and reduce_scatter transpose to
// each other; ppermute to the inverse permutation; all_to_all swaps its
// split and concat dimensions.
// CHECK-LABEL: func @psums
// CHECK-DAG: ember.psum %arg1 axis "i" size 4 : tensor<3xf32>
// CHECK-DAG: ember.pvary %arg2 axis "i" size 4 : tensor<3xf32>
func.func private @f(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %a = ember.psum %x axis "i" size 4 : tensor<3xf32>
  %b = ember.psum %x axis "i" size 4 {invariant} : tensor<3xf32>
  return %a, %b : tensor<3xf32>, tensor<3xf32>
}
func.func @psums(%x: tensor<3xf32>, %ca: tensor<3xf32>, %cb: tensor<3xf32>) -> tensor<3xf32> {
  %a, %b, %g = ember.vjp @f(%x) cotangents(%ca, %cb) wrt [0] : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %g : tensor<3xf32>
}

// -----

// CHECK-LABEL: func @pvary
// CHECK: ember.psum %{{.*}} axis "i" size 4 {invariant} : tensor<3xf32>
func.func private @g(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = ember.pvary %x axis "i" size 4 : tensor<3xf32>
  return %a : tensor<3xf32>
}
func.func @pvary(%x: tensor<3xf32>, %c: tensor<3xf32>) -> tensor<3xf32> {
  %a, %g = ember.vjp @g(%x) cotangents(%c) wrt [0] : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %g : tensor<3xf32>
}

// -----

// CHECK-LABEL: func @gathers
// CHECK-DAG: ember.reduce_scatter %{{.*}} axis "i" size 2 dim 0 {tiled} : (tensor<6xf32>) -> tensor<3xf32>
// CHECK-DAG: ember.ppermute %{{.*}} axis "i" size 2 pairs [1, 0] : tensor<3xf32>
// CHECK-DAG: ember.all_to_all %{{.*}} axis "i" size 2 split 1 concat 0 : (tensor<3x2xf32>) -> tensor<2x3xf32>
func.func private @h(%x: tensor<3xf32>, %y: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<3xf32>, tensor<3x2xf32>) {
  %a = ember.all_gather %x axis "i" size 2 dim 0 {tiled} : (tensor<3xf32>) -> tensor<6xf32>
  %b = ember.ppermute %x axis "i" size 2 pairs [0, 1] : tensor<3xf32>
  %c = ember.all_to_all %y axis "i" size 2 split 0 concat 1 : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %a, %b, %c : tensor<6xf32>, tensor<3xf32>, tensor<3x2xf32>
}
func.func @gathers(%x: tensor<3xf32>, %y: tensor<2x3xf32>, %ca: tensor<6xf32>, %cb: tensor<3xf32>, %cc: tensor<3x2xf32>) -> (tensor<3xf32>, tensor<2x3xf32>) {
  %a, %b, %c, %gx, %gy = ember.vjp @h(%x, %y) cotangents(%ca, %cb, %cc) wrt [0, 1] : (tensor<3xf32>, tensor<2x3xf32>, tensor<6xf32>, tensor<3xf32>, tensor<3x2xf32>) -> (tensor<6xf32>, tensor<3xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<2x3xf32>)
  return %gx, %gy : tensor<3xf32>, tensor<2x3xf32>
}
