// RUN: ember-opt %s -ember-partition -split-input-file -verify-diagnostics

shard.grid @grid(shape = 2)
// split_axes_c4
// expected-error @below {{argument 0: dimension 0 of size 5 does not split evenly into 2 blocks}}
func.func @uneven(%x: tensor<5xf32> {ember.split_axes = [[0]]}) -> tensor<5xf32> {
  return %x : tensor<5xf32>
}

// -----

shard.grid @grid(shape = 2)
// split_axes_c3
// expected-error @below {{argument 0: dimension 0 names grid axis 1 : i64, which grid @grid lacks or another dimension uses}}
func.func @no_such_axis(%x: tensor<4xf32> {ember.split_axes = [[1]]}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2x2)
// split_axes_c3
// expected-error @below {{argument 0: dimension 1 names grid axis 0 : i64, which grid @grid lacks or another dimension uses}}
func.func @axis_twice(%x: tensor<4x4xf32> {ember.split_axes = [[0], [0]]}) -> tensor<4x4xf32> {
  return %x : tensor<4x4xf32>
}

// -----

shard.grid @grid(shape = 2)
// split_axes_c2
// expected-error @below {{result 0: `ember.split_axes` needs a statically shaped tensor and an array of at most one axis list per dimension}}
func.func @too_many_dims(%x: tensor<4xf32>) -> (tensor<4xf32> {ember.split_axes = [[0], []]}) {
  return %x : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2)
// split_axes_c2
// expected-error @below {{argument 0: `ember.split_axes` needs a statically shaped tensor}}
func.func @dynamic(%x: tensor<?xf32> {ember.split_axes = [[0]]}) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}

// -----

shard.grid @grid(shape = 2)
// split_axes_c2
// expected-error @below {{argument 0: dimension 0 of `ember.split_axes` is not an array of grid axes}}
func.func @not_axes(%x: tensor<4xf32> {ember.split_axes = [0]}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// split_axes_c1
// expected-error @below {{`ember.split_axes` needs exactly one shard.grid in the module, found 0}}
module {
  func.func @no_grid(%x: tensor<4xf32> {ember.split_axes = [[0]]}) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

shard.grid @grid(shape = 2)
// split_axes_c5
// expected-error @below {{`ember.split_axes` on a function without a body}}
func.func private @external(%x: tensor<4xf32> {ember.split_axes = [[0]]}) -> tensor<4xf32>

