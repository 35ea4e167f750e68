// RUN: ember-opt %s -ember-batch -symbol-dce -canonicalize -cse -split-input-file | FileCheck %s

// Collectives over the axis the vmap binds become ops over the batch
// dimension: a psum is a sum over it (the same value on every lane, so it
// stays per-example and is broadcast only at the end); axis_index is an
// iota; ppermute reorders the lanes (zeros where nobody sends); all_gather
// moves the batch dimension into place.
// CHECK-LABEL: func @own_axis
// CHECK-NOT: ember.vmap
// CHECK-NOT: ember.psum
// CHECK-DAG: %[[SUM:.*]] = ember.reduce sum %arg0, dims = [0] : (tensor<4x3xf32>) -> tensor<3xf32>
// CHECK-DAG: ember.iota dim = 0 : tensor<4xi32>
// CHECK-DAG: ember.slice %arg0, start = [2, 0], limit = [3, 3]
// CHECK-DAG: ember.concatenate dim = 0
// CHECK-DAG: ember.broadcast_in_dim %[[SUM]], dims = [1] : (tensor<3xf32>) -> tensor<4x3xf32>
func.func private @lane(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<i32>, tensor<3xf32>, tensor<4x3xf32>) {
  %s = ember.psum %x axis "i" size 4 : tensor<3xf32>
  %i = ember.axis_index axis "i" size 4 : tensor<i32>
  %p = ember.ppermute %x axis "i" size 4 pairs [2, 0, 0, 1] : tensor<3xf32>
  %g = ember.all_gather %x axis "i" size 4 dim 0 : (tensor<3xf32>) -> tensor<4x3xf32>
  return %s, %i, %p, %g : tensor<3xf32>, tensor<i32>, tensor<3xf32>, tensor<4x3xf32>
}
func.func @own_axis(%xs: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4xi32>, tensor<4x3xf32>, tensor<4x4x3xf32>) {
  %r:4 = ember.vmap @lane(%xs) batched [true] size 4 axis "i" : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4xi32>, tensor<4x3xf32>, tensor<4x4x3xf32>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<4x3xf32>, tensor<4xi32>, tensor<4x3xf32>, tensor<4x4x3xf32>
}

// -----

// A collective over another axis (bound by an enclosing vmap) keeps its
// axis and shifts its dimensions past the new batch dimension.
// CHECK-LABEL: func @foreign_axis
// CHECK: ember.all_gather %{{.*}} axis "outer" size 2 dim 1 : (tensor<5x3xf32>) -> tensor<5x2x3xf32>
// CHECK: ember.psum %{{.*}} axis "outer" size 2 : tensor<5x3xf32>
// CHECK: ember.all_to_all %{{.*}} axis "outer" size 2 split 2 concat 1 : (tensor<5x3x2xf32>) -> tensor<5x2x3xf32>
func.func private @inner(%x: tensor<3xf32>, %y: tensor<3x2xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) {
  %g = ember.all_gather %x axis "outer" size 2 dim 0 : (tensor<3xf32>) -> tensor<2x3xf32>
  %s = ember.psum %x axis "outer" size 2 : tensor<3xf32>
  %a = ember.all_to_all %y axis "outer" size 2 split 1 concat 0 : (tensor<3x2xf32>) -> tensor<2x3xf32>
  return %g, %s, %a : tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>
}
func.func @foreign_axis(%xs: tensor<5x3xf32>, %ys: tensor<5x3x2xf32>) -> (tensor<5x2x3xf32>, tensor<5x3xf32>, tensor<5x2x3xf32>) {
  %r:3 = ember.vmap @inner(%xs, %ys) batched [true, true] size 5 : (tensor<5x3xf32>, tensor<5x3x2xf32>) -> (tensor<5x2x3xf32>, tensor<5x3xf32>, tensor<5x2x3xf32>)
  return %r#0, %r#1, %r#2 : tensor<5x2x3xf32>, tensor<5x3xf32>, tensor<5x2x3xf32>
}

// -----

// reduce_scatter sums over the lanes and gives lane i entry i; all_to_all
// is a transpose of the lane and split dimensions.
// CHECK-LABEL: func @scatter_and_all_to_all
// CHECK: %[[S:.*]] = ember.reduce sum %arg0, dims = [0] : (tensor<4x4x2xf32>) -> tensor<4x2xf32>
// CHECK: ember.transpose %arg0, dims = [1, 0, 2] : (tensor<4x4x2xf32>) -> tensor<4x4x2xf32>
func.func private @sa(%x: tensor<4x2xf32>) -> (tensor<2xf32>, tensor<4x2xf32>) {
  %s = ember.reduce_scatter %x axis "i" size 4 dim 0 : (tensor<4x2xf32>) -> tensor<2xf32>
  %a = ember.all_to_all %x axis "i" size 4 split 0 concat 0 : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %s, %a : tensor<2xf32>, tensor<4x2xf32>
}
func.func @scatter_and_all_to_all(%xs: tensor<4x4x2xf32>) -> (tensor<4x2xf32>, tensor<4x4x2xf32>) {
  %r:2 = ember.vmap @sa(%xs) batched [true] size 4 axis "i" : (tensor<4x4x2xf32>) -> (tensor<4x2xf32>, tensor<4x4x2xf32>)
  return %r#0, %r#1 : tensor<4x2xf32>, tensor<4x4x2xf32>
}
