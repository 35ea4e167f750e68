// RUN: ember-opt %s -split-input-file -verify-diagnostics
//
// One case per numbered verifier rule of lib/IR/EmberOps.cpp (see docs/spec.md).
// Rules checked in result type inference (InferTypeOpAdaptor) report the rule
// and then "failed to infer returned types".
//
// Unreachable from textual IR (skipped):
//   sort_c1 - the custom syntax cannot spell a sort with no operands.

// iota_c1
func.func @iota_c1() -> tensor<2x3xi32> {
  // expected-error @+1 {{iota_c1: iota dimension 2 is out of range for rank 2}}
  %0 = ember.iota dim = 2 : tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

// integer_pow_c1
func.func @integer_pow_c1(%a: tensor<3xi32>) -> tensor<3xi32> {
  // expected-error @+1 {{integer_pow_c1: integers cannot be raised to the negative power -2}}
  %0 = ember.integer_pow %a, y = -2 : tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

func.func @integer_pow_bool(%a: tensor<3xi1>) -> tensor<3xi1> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor}}
  %0 = ember.integer_pow %a, y = 2 : tensor<3xi1>
  return %0 : tensor<3xi1>
}

// -----

// bitcast_convert_c1
func.func @bitcast_convert_c1(%a: tensor<2x3xf32>) -> tensor<3x2xi32> {
  // expected-error @+1 {{bitcast_convert_c1: operand and result shapes differ}}
  %0 = ember.bitcast_convert %a : (tensor<2x3xf32>) -> tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
}

// -----

// bitcast_convert_c3
func.func @bitcast_convert_c3(%a: tensor<2xcomplex<f32>>) -> tensor<2xi64> {
  // expected-error @+1 {{bitcast_convert_c3: complex element types have no bit-level view}}
  %0 = ember.bitcast_convert %a : (tensor<2xcomplex<f32>>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// bitcast_convert_c2
func.func @bitcast_convert_c2(%a: tensor<2x3xf32>) -> tensor<2x3xi16> {
  // expected-error @+1 {{bitcast_convert_c2: with element widths 32 and 16, the narrower side must have the wider side's shape plus a trailing dimension of size 2}}
  %0 = ember.bitcast_convert %a : (tensor<2x3xf32>) -> tensor<2x3xi16>
  return %0 : tensor<2x3xi16>
}

// -----

// broadcast_in_dim_c1
func.func @broadcast_in_dim_c1(%a: tensor<3xf32>) -> tensor<2x3xf64> {
  // expected-error @+1 {{broadcast_in_dim_c1: element types differ}}
  %0 = ember.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// -----

// broadcast_in_dim_c2
func.func @broadcast_in_dim_c2(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{broadcast_in_dim_c2: broadcast_dimensions has 2 entries, operand rank is 1}}
  %0 = ember.broadcast_in_dim %a, dims = [0, 1] : (tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// broadcast_in_dim_c3
func.func @broadcast_in_dim_c3(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{broadcast_in_dim_c3: broadcast dimension 2 is out of range [0, 2)}}
  %0 = ember.broadcast_in_dim %a, dims = [2] : (tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// broadcast_in_dim_c4
func.func @broadcast_in_dim_c4(%a: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{broadcast_in_dim_c4: operand dimension 0 of size 3 cannot broadcast to result dimension 1 of size 4}}
  %0 = ember.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// reshape_c1
func.func @reshape_c1(%a: tensor<2x3xf32>) -> tensor<6xi32> {
  // expected-error @+1 {{reshape_c1: element types differ}}
  %0 = ember.reshape %a : (tensor<2x3xf32>) -> tensor<6xi32>
  return %0 : tensor<6xi32>
}

// -----

// reshape_c2
func.func @reshape_c2(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{reshape_c2: operand has 6 elements, result has 7}}
  %0 = ember.reshape %a : (tensor<2x3xf32>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

// transpose_c1
func.func @transpose_c1(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{transpose_c1: permutation has 3 entries, operand rank is 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.transpose %a, dims = [1, 0, 2] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// transpose_c2
func.func @transpose_c2(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{transpose_c2: permutation dimension 1 appears twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.transpose %a, dims = [1, 1] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// slice_c1
func.func @slice_c1(%a: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // expected-error @+2 {{slice_c1: start, limit and strides need 2 entries each}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.slice %a, start = [0], limit = [2, 3], strides = [1, 2] : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// slice_c2
func.func @slice_c2(%a: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // expected-error @+2 {{slice_c2: dimension 1 needs 0 <= start (0) <= limit (4) <= size (3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.slice %a, start = [0, 0], limit = [2, 4], strides = [1, 4] : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// slice_c3
func.func @slice_c3(%a: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // expected-error @+2 {{slice_c3: stride 0 of dimension 1 must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.slice %a, start = [0, 0], limit = [2, 1], strides = [1, 0] : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// dynamic_slice_c1
func.func @dynamic_slice_c1(%a: tensor<2x3xf32>, %i: tensor<i32>) -> tensor<1x2xf32> {
  // expected-error @+2 {{dynamic_slice_c1: need 2 start indices and slice sizes}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.dynamic_slice %a[%i], sizes = [1, 2] : (tensor<2x3xf32>, tensor<i32>) -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// -----

// dynamic_slice_c2
func.func @dynamic_slice_c2(%a: tensor<2x3xf32>, %i: tensor<i32>) -> tensor<1x4xf32> {
  // expected-error @+2 {{dynamic_slice_c2: slice size 4 of dimension 1 exceeds the operand size 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.dynamic_slice %a[%i, %i], sizes = [1, 4] : (tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
  return %0 : tensor<1x4xf32>
}

// -----

// dynamic_update_slice_c1
func.func @dynamic_update_slice_c1(%a: tensor<2x3xf32>, %u: tensor<1x2xi32>, %i: tensor<i32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{dynamic_update_slice_c1: update must have the operand's rank and element type}}
  %0 = ember.dynamic_update_slice %a[%i, %i], %u : tensor<2x3xf32>, tensor<1x2xi32>, tensor<i32>, tensor<i32>
  return %0 : tensor<2x3xf32>
}

// -----

// dynamic_update_slice_c2
func.func @dynamic_update_slice_c2(%a: tensor<2x3xf32>, %u: tensor<1x2xf32>, %i: tensor<i32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{dynamic_update_slice_c2: need 2 start indices}}
  %0 = ember.dynamic_update_slice %a[%i], %u : tensor<2x3xf32>, tensor<1x2xf32>, tensor<i32>
  return %0 : tensor<2x3xf32>
}

// -----

// dynamic_update_slice_c3
func.func @dynamic_update_slice_c3(%a: tensor<2x3xf32>, %u: tensor<1x4xf32>, %i: tensor<i32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{dynamic_update_slice_c3: update dimension 1 is larger than the operand}}
  %0 = ember.dynamic_update_slice %a[%i, %i], %u : tensor<2x3xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>
  return %0 : tensor<2x3xf32>
}

// -----

// pad_c1
func.func @pad_c1(%a: tensor<2x3xf32>, %s: tensor<1xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{pad_c1: padding value must be a 0-d tensor of the operand's element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.pad %a, %s, low = [0, 0], high = [0, 0], interior = [0, 0] : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// pad_c2
func.func @pad_c2(%a: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{pad_c2: low, high and interior need 2 entries each}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.pad %a, %s, low = [0, 0], high = [0], interior = [0, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// pad_c3
func.func @pad_c3(%a: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{pad_c3: interior padding must be non-negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.pad %a, %s, low = [0, 0], high = [0, 0], interior = [0, -1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// pad_c4
func.func @pad_c4(%a: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<2x0xf32> {
  // expected-error @+2 {{pad_c4: dimension 1 would have size -1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.pad %a, %s, low = [0, -2], high = [0, -2], interior = [0, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x0xf32>
  return %0 : tensor<2x0xf32>
}

// -----

// concatenate_c1
func.func @concatenate_c1() -> tensor<0xf32> {
  // expected-error @+2 {{concatenate_c1: needs at least one input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.concatenate dim = 0, : () -> tensor<0xf32>
  return %0 : tensor<0xf32>
}

// -----

// concatenate_c2
func.func @concatenate_c2(%a: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{concatenate_c2: dimension 2 out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.concatenate dim = 2, %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// concatenate_c3
func.func @concatenate_c3(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{concatenate_c3: inputs differ in dimension 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.concatenate dim = 0, %a, %b : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// reverse_c1
func.func @reverse_c1(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{reverse_c1: reverse dimension 2 is out of range [0, 2)}}
  %0 = ember.reverse %a, dims = [2] : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// reduce_c1
func.func @reduce_c1(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{reduce_c1: reduced dimension 1 appears twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.reduce sum %a, dims = [1, 1] : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// reduce_c2
func.func @reduce_c2(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{reduce_c2: kind and needs an integer or boolean element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.reduce and %a, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// argmax_c1
func.func @argmax_c1(%a: tensor<2x3xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{argmax_c1: axis 2 out of range for rank 2}}
  %0 = ember.argmax %a, axis = 2 : (tensor<2x3xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// argmax_c2
func.func @argmax_c2(%a: tensor<2x3xf32>) -> tensor<3xi32> {
  // expected-error @+1 {{argmax_c2: result shape must drop the axis}}
  %0 = ember.argmax %a, axis = 1 : (tensor<2x3xf32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

// argmin_c1 (argmin shares the argmax rules)
func.func @argmin_c1(%a: tensor<2x3xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{argmin_c1: axis -1 out of range for rank 2}}
  %0 = ember.argmin %a, axis = -1 : (tensor<2x3xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// cumulative_c1
func.func @cumulative_c1(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{cumulative_c1: axis 2 out of range for rank 2}}
  %0 = ember.cumulative sum %a, axis = 2 : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// cumulative_c2
func.func @cumulative_c2(%a: tensor<2x3xi32>) -> tensor<2x3xi32> {
  // expected-error @+1 {{cumulative_c2: kind must be sum, prod, max or min}}
  %0 = ember.cumulative xor %a, axis = 1 : tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

// reduce_window_c1
func.func @reduce_window_c1(%a: tensor<2x3xf32>, %s: tensor<1xf32>) -> tensor<1x2xf32> {
  // expected-error @+2 {{reduce_window_c1: init value must be a 0-d tensor of the operand's element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.reduce_window max %a, %s, window = [2, 2], strides = [1, 1], low = [0, 0], high = [0, 0] : (tensor<2x3xf32>, tensor<1xf32>) -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// -----

// reduce_window_c2
func.func @reduce_window_c2(%a: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<1x2xf32> {
  // expected-error @+2 {{reduce_window_c2: window, strides and padding need 2 entries each}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.reduce_window max %a, %s, window = [2], strides = [1, 1], low = [0, 0], high = [0, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// -----

// reduce_window_c3
func.func @reduce_window_c3(%a: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<1x2xf32> {
  // expected-error @+2 {{reduce_window_c3: kind or needs an integer or boolean element type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.reduce_window or %a, %s, window = [2, 2], strides = [1, 1], low = [0, 0], high = [0, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// -----

// reduce_window_c4
func.func @reduce_window_c4(%a: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<1x2xf32> {
  // expected-error @+2 {{reduce_window_c4: window sizes and strides must be positive, padding non-negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = ember.reduce_window max %a, %s, window = [2, 2], strides = [1, 0], low = [0, 0], high = [0, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// -----

// sort_c2
func.func @sort_c2(%a: tensor<2x3xf32>, %b: tensor<3x2xi32>) {
  // expected-error @+1 {{sort_c2: all inputs must have the same shape}}
  %0:2 = ember.sort dim = 1, keys = 1, %a, %b : tensor<2x3xf32>, tensor<3x2xi32>
  return
}

// -----

// sort_c3
func.func @sort_c3(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{sort_c3: dimension 2 out of range for rank 2}}
  %0 = ember.sort dim = 2, keys = 1, %a : tensor<2x3xf32>
  return
}

// -----

// sort_c4
func.func @sort_c4(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{sort_c4: num_keys must be in [1, number of inputs]}}
  %0 = ember.sort dim = 1, keys = 2, %a : tensor<2x3xf32>
  return
}

// -----

// dot_general_c1
func.func @dot_general_c1(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{dot_general_c1: lhs and rhs batching dimensions differ in number}}
  %0 = ember.dot_general %a, %b, batch = [0] x [], contract = [1] x [1] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// dot_general_c2
func.func @dot_general_c2(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{dot_general_c2: lhs and rhs contracting dimensions differ in number}}
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// dot_general_c3
func.func @dot_general_c3(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{dot_general_c3: lhs dimension 2 is out of range [0, 2)}}
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [2] x [1] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// dot_general_c4
func.func @dot_general_c4(%a: tensor<2x3x4xf32>, %b: tensor<5x4x6xf32>) -> tensor<2x3x6xf32> {
  // expected-error @+1 {{dot_general_c4: batch dimension sizes differ (2 vs 5)}}
  %0 = ember.dot_general %a, %b, batch = [0] x [0], contract = [2] x [1] : (tensor<2x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x3x6xf32>
  return %0 : tensor<2x3x6xf32>
}

// -----

// dot_general_c5
func.func @dot_general_c5(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{dot_general_c5: contracting dimension sizes differ (3 vs 4)}}
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// dot_general_c7
func.func @dot_general_c7(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{dot_general_c7: precision names two of DEFAULT, HIGH and HIGHEST}}
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [0] {precision = ["HIGHEST"]} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// dot_general_c7: one name is an algorithm preset (DEFAULT is no preset:
// the product then has no precision).
func.func @dot_general_c7_preset(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{dot_general_c7: precision names two of DEFAULT, HIGH and HIGHEST (lhs, rhs), or one algorithm preset}}
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [0] {precision = ["F32_F32_F16"]} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// dot_general_c7
func.func @dot_general_c7_name(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{dot_general_c7}}
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [0] {precision = ["float32", "float32"]} : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// dot_general_c6
func.func @dot_general_c6(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<5x2xf32> {
  // expected-error @+1 {{dot_general_c6: result shape must be batch, lhs free, rhs free}}
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<5x2xf32>
  return %0 : tensor<5x2xf32>
}

// -----

// gather_c1
func.func @gather_c1(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{gather_c1: index_vector_dim out of range}}
  %0 = ember.gather %a[%idx] {offset_dims = array<i64: 1>, collapsed_slice_dims = array<i64: 0>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 0>, index_vector_dim = 3, slice_sizes = array<i64: 1, 3>, mode = #ember<mode clip>} : (tensor<5x3xf32>, tensor<4x1xi32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// gather_c2
func.func @gather_c2(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{gather_c2: start_index_map has 2 entries, the index vector has 1}}
  %0 = ember.gather %a[%idx] {offset_dims = array<i64: 1>, collapsed_slice_dims = array<i64: 0>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 0, 1>, index_vector_dim = 1, slice_sizes = array<i64: 1, 3>, mode = #ember<mode clip>} : (tensor<5x3xf32>, tensor<4x1xi32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// gather_c3
func.func @gather_c3(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{gather_c3: slice size 4 of dimension 1 is out of bounds}}
  %0 = ember.gather %a[%idx] {offset_dims = array<i64: 1>, collapsed_slice_dims = array<i64: 0>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 0>, index_vector_dim = 1, slice_sizes = array<i64: 1, 4>, mode = #ember<mode clip>} : (tensor<5x3xf32>, tensor<4x1xi32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// gather_c4
func.func @gather_c4(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{gather_c4: start_index_map dimension 2 is out of range [0, 2)}}
  %0 = ember.gather %a[%idx] {offset_dims = array<i64: 1>, collapsed_slice_dims = array<i64: 0>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 2>, index_vector_dim = 1, slice_sizes = array<i64: 1, 3>, mode = #ember<mode clip>} : (tensor<5x3xf32>, tensor<4x1xi32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// gather_c5
func.func @gather_c5(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{gather_c5: collapsed dimension 0 must have slice size 0 or 1}}
  %0 = ember.gather %a[%idx] {offset_dims = array<i64: 1>, collapsed_slice_dims = array<i64: 0>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 0>, index_vector_dim = 1, slice_sizes = array<i64: 2, 3>, mode = #ember<mode clip>} : (tensor<5x3xf32>, tensor<4x1xi32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// gather_c6
func.func @gather_c6(%a: tensor<4x3xf32>, %idx: tensor<4x1xi32>) -> tensor<4xf32> {
  // expected-error @+1 {{gather_c6: operand and indices batching dims differ in number}}
  %0 = ember.gather %a[%idx] {offset_dims = array<i64>, collapsed_slice_dims = array<i64: 1>, operand_batching_dims = array<i64: 0>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 1>, index_vector_dim = 1, slice_sizes = array<i64: 1, 1>, mode = #ember<mode clip>} : (tensor<4x3xf32>, tensor<4x1xi32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// gather_c7
func.func @gather_c7(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{gather_c7: offset_dims must name one result dimension per non-collapsed slice dimension}}
  %0 = ember.gather %a[%idx] {offset_dims = array<i64>, collapsed_slice_dims = array<i64: 0>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 0>, index_vector_dim = 1, slice_sizes = array<i64: 1, 3>, mode = #ember<mode clip>} : (tensor<5x3xf32>, tensor<4x1xi32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// gather_c8
func.func @gather_c8(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{gather_c8: result type does not match the gather shape}}
  %0 = ember.gather %a[%idx] {offset_dims = array<i64: 1>, collapsed_slice_dims = array<i64: 0>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 0>, index_vector_dim = 1, slice_sizes = array<i64: 1, 3>, mode = #ember<mode clip>} : (tensor<5x3xf32>, tensor<4x1xi32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// scatter_c1
func.func @scatter_c1(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>, %upd: tensor<4x3xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{scatter_c1: index_vector_dim out of range}}
  %0 = ember.scatter add %a[%idx], %upd {update_window_dims = array<i64: 1>, inserted_window_dims = array<i64: 0>, operand_batching_dims = array<i64>, scatter_indices_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, index_vector_dim = -1, mode = #ember<mode fill>} : (tensor<5x3xf32>, tensor<4x1xi32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// scatter_c2
func.func @scatter_c2(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>, %upd: tensor<4x3xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{scatter_c2: scatter_dims_to_operand_dims has 2 entries, the index vector has 1}}
  %0 = ember.scatter add %a[%idx], %upd {update_window_dims = array<i64: 1>, inserted_window_dims = array<i64: 0>, operand_batching_dims = array<i64>, scatter_indices_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0, 1>, index_vector_dim = 1, mode = #ember<mode fill>} : (tensor<5x3xf32>, tensor<4x1xi32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// scatter_c3
func.func @scatter_c3(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>, %upd: tensor<4x3xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{scatter_c3: update_window_dims, inserted_window_dims and operand_batching_dims must cover the operand rank}}
  %0 = ember.scatter add %a[%idx], %upd {update_window_dims = array<i64: 1>, inserted_window_dims = array<i64>, operand_batching_dims = array<i64>, scatter_indices_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, index_vector_dim = 1, mode = #ember<mode fill>} : (tensor<5x3xf32>, tensor<4x1xi32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// scatter_c4
func.func @scatter_c4(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>, %upd: tensor<4x3x1xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{scatter_c4: updates rank must be the scatter rank plus the number of update_window_dims}}
  %0 = ember.scatter add %a[%idx], %upd {update_window_dims = array<i64: 1>, inserted_window_dims = array<i64: 0>, operand_batching_dims = array<i64>, scatter_indices_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, index_vector_dim = 1, mode = #ember<mode fill>} : (tensor<5x3xf32>, tensor<4x1xi32>, tensor<4x3x1xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// scatter_c5
func.func @scatter_c5(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>, %upd: tensor<4x3xi32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{scatter_c5: updates and operand element types differ}}
  %0 = ember.scatter add %a[%idx], %upd {update_window_dims = array<i64: 1>, inserted_window_dims = array<i64: 0>, operand_batching_dims = array<i64>, scatter_indices_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, index_vector_dim = 1, mode = #ember<mode fill>} : (tensor<5x3xf32>, tensor<4x1xi32>, tensor<4x3xi32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// scatter_c6
func.func @scatter_c6(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>, %upd: tensor<4x3xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{scatter_c6: update window dimension 2 is out of range [0, 2)}}
  %0 = ember.scatter add %a[%idx], %upd {update_window_dims = array<i64: 2>, inserted_window_dims = array<i64: 0>, operand_batching_dims = array<i64>, scatter_indices_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, index_vector_dim = 1, mode = #ember<mode fill>} : (tensor<5x3xf32>, tensor<4x1xi32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// transform_c1
func.func @transform_c1(%x: tensor<f32>) {
  // expected-error @+1 {{transform_c1: 'nope' does not name a func.func}}
  %y, %t = ember.jvp @nope(%x) tangents(%x) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

func.func private @id(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
// transform_c2
func.func @transform_c2(%x: tensor<2xf32>) {
  // expected-error @+1 {{transform_c2: primal types do not match the inputs of 'id'}}
  %y, %t = ember.jvp @id(%x) tangents(%x) wrt [0] : (tensor<2xf32>, tensor<2xf32>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

func.func private @id(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
// transform_c3
func.func @transform_c3(%x: tensor<f32>) {
  // expected-error @+1 {{transform_c3: wrt index 1 is invalid or repeated}}
  %y, %t = ember.jvp @id(%x) tangents(%x) wrt [1] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

func.func private @id(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
// transform_c4
func.func @transform_c4(%x: tensor<f32>, %c: tensor<2xf32>) {
  // expected-error @+1 {{transform_c4: cotangents must match the result types of the callee}}
  %y, %t = ember.vjp @id(%x) cotangents(%c) wrt [0] : (tensor<f32>, tensor<2xf32>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

func.func private @id(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
// transform_c5
func.func @transform_c5(%x: tensor<f32>) {
  // expected-error @+1 {{transform_c5: result types must be the callee's results followed by their tangents}}
  %y = ember.jvp @id(%x) tangents(%x) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>)
  return
}

// -----

// while_c1: a region whose block has no terminator is a diagnostic, not an
// abort (found by fuzzing ember-opt).
func.func @while_c1_no_terminator(%x: tensor<i32>) {
  // expected-error @+1 {{while_c1: the cond region must end in ember.yield}}
  %r = ember.while (%x) : tensor<i32> cond {
  ^bb0(%c: tensor<i32>):
    %p = ember.constant dense<true> : tensor<i1>
  } do {
  ^bb0(%c: tensor<i32>):
    ember.yield %c : tensor<i32>
  }
  return
}

// -----

// while_c1
func.func @while_c1(%x: tensor<i32>) {
  // expected-error @+1 {{while_c1: the cond region must take the carried values as block arguments}}
  %r = ember.while (%x) : tensor<i32> cond {
  ^bb0(%c: tensor<f32>):
    %p = ember.constant dense<true> : tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<i32>):
    ember.yield %c : tensor<i32>
  }
  return
}

// -----

// while_c2
func.func @while_c2(%x: tensor<i32>) {
  // expected-error @+1 {{while_c2: the cond region must yield one tensor<i1>}}
  %r = ember.while (%x) : tensor<i32> cond {
  ^bb0(%c: tensor<i32>):
    ember.yield %c : tensor<i32>
  } do {
  ^bb0(%c: tensor<i32>):
    ember.yield %c : tensor<i32>
  }
  return
}

// -----

// while_c3
func.func @while_c3(%x: tensor<i32>) {
  // expected-error @+1 {{while_c3: the body region must yield values of the carried types}}
  %r = ember.while (%x) : tensor<i32> cond {
  ^bb0(%c: tensor<i32>):
    %p = ember.constant dense<true> : tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<i32>):
    %f = ember.convert %c : (tensor<i32>) -> tensor<f32>
    ember.yield %f : tensor<f32>
  }
  return
}

// -----

// vmap_c1
func.func @vmap_c1(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{vmap_c1: 'nope' does not name a func.func}}
  %y = ember.vmap @nope(%x) batched [true] size 2 : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func private @g(%x: tensor<3xf32>) -> tensor<f32> {
  %0 = ember.reduce sum %x, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
// vmap_c2
func.func @vmap_c2(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{vmap_c2: needs one input and one batched flag per argument of 'g'}}
  %y = ember.vmap @g(%x, %x) batched [true, true] size 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func private @g(%x: tensor<3xf32>) -> tensor<f32> {
  %0 = ember.reduce sum %x, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
// vmap_c3
func.func @vmap_c3(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{vmap_c3: input 0 must have type 'tensor<2x3xf32>'}}
  %y = ember.vmap @g(%x) batched [true] size 2 : (tensor<4x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func private @g(%x: tensor<3xf32>) -> tensor<f32> {
  %0 = ember.reduce sum %x, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
// vmap_c4
func.func @vmap_c4(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{vmap_c4: result 0 must be the callee's result type with a leading dimension of size 2}}
  %y = ember.vmap @g(%x) batched [true] size 2 : (tensor<2x3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func private @id(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
// custom_c1
func.func @custom_c1(%x: tensor<f32>) {
  // expected-error @+1 {{custom_c1: 'nope' does not name a func.func}}
  %y = ember.custom_jvp_call @id jvp @nope(%x) segments [1, 0, 0] : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func private @id(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
// custom_c2
func.func @custom_c2(%x: tensor<f32>) {
  // expected-error @+1 {{custom_c2: segments must be non-negative and add up to the number of operands}}
  %y = ember.custom_jvp_call @id jvp @id(%x) segments [2, 0, 0] : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func private @id(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
// custom_c3: bwd returns one cotangent per argument, then bwd_effects values.
func.func @custom_c3(%x: tensor<f32>) {
  // expected-error @+1 {{custom_c3: bwd must return one cotangent per argument followed by bwd_effects values}}
  %y = ember.custom_vjp_call @id fwd @id bwd @id(%x) segments [1, 0, 0, 0, 0] {bwd_effects = 1 : i64} : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func private @id(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
// transform_c6
func.func @transform_c6(%x: tensor<f32>) {
  // expected-error @+1 {{transform_c6: effects must be non-negative and at most the number of results}}
  %y, %g = ember.vjp @id(%x) cotangents(%x) wrt [0] {effects = 3 : i64} : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

// host_callback_c1
func.func @host_callback_c1(%x: tensor<f32>) {
  // expected-error @+1 {{host_callback_c1: callback_id must be non-negative}}
  ember.host_callback -1(%x) {has_side_effect} : (tensor<f32>) -> ()
  return
}

// -----

// host_callback_c2
func.func @host_callback_c2(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{host_callback_c2: vmap_method must be sequential, expand_dims, broadcast_all, legacy_vectorized, none or ordered, got 'loop'}}
  %y = ember.host_callback 0(%x) {vmap_method = "loop"} : (tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// host_callback_c3
func.func @host_callback_c3(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{host_callback_c3: device_axes must be non-empty and come with vmap_method 'none'}}
  %y = ember.host_callback 0(%x) {device_axes = ["i"], vmap_method = "sequential"} : (tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

func.func @host_callback_c3_empty(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{host_callback_c3: device_axes must be non-empty and come with vmap_method 'none'}}
  %y = ember.host_callback 0(%x) {device_axes = [], vmap_method = "none"} : (tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// case_c1
func.func @case_c1(%i: tensor<2xi32>, %a: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{case_c1: the index must be a 0-d tensor<i32>}}
  %r = ember.case %i : tensor<2xi32> -> tensor<f32> {
    ember.yield %a : tensor<f32>
  }
  return %r : tensor<f32>
}

// -----

// case_c2
func.func @case_c2(%i: tensor<i32>) {
  // expected-error @+1 {{case_c2: there must be at least one branch}}
  "ember.case"(%i) : (tensor<i32>) -> ()
  return
}

// -----

// case_c3
func.func @case_c3(%i: tensor<i32>, %a: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{case_c3: branch 0 must take no arguments}}
  %r = "ember.case"(%i) ({
  ^bb0(%x: tensor<f32>):
    ember.yield %x : tensor<f32>
  }) : (tensor<i32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// case_c4
func.func @case_c4(%i: tensor<i32>, %a: tensor<f32>, %b: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{case_c4: branch 1 must end in ember.yield with values of the result types}}
  %r = ember.case %i : tensor<i32> -> tensor<f32> {
    ember.yield %a : tensor<f32>
  }, {
    ember.yield %b : tensor<i32>
  }
  return %r : tensor<f32>
}

// -----

// while_c4
func.func @while_c4(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{while_c4: trip_count must be non-negative}}
  %r = ember.while (%x) {trip_count = -1 : i64} : tensor<f32> cond {
  ^bb0(%v: tensor<f32>):
    %p = ember.constant dense<false> : tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%v: tensor<f32>):
    ember.yield %v : tensor<f32>
  }
  return %r : tensor<f32>
}

// -----

// while_c5
func.func @while_c5(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{while_c5: a parallel loop must have a trip_count}}
  %r = ember.while (%x) {parallel} : tensor<f32> cond {
  ^bb0(%v: tensor<f32>):
    %p = ember.constant dense<false> : tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%v: tensor<f32>):
    ember.yield %v : tensor<f32>
  }
  return %r : tensor<f32>
}

// -----

func.func @stack_c1(%h: tensor<i32>, %x: tensor<f32>) -> tensor<i64> {
  // expected-error @+1 {{stack_c1: the stack operand must be a tensor<i64>}}
  %h1 = ember.stack_push %h(%x) : (tensor<i32>, tensor<f32>) -> tensor<i64>
  return %h1 : tensor<i64>
}

// -----

func.func @stack_c1_result(%h: tensor<i64>, %k: tensor<i64>) -> tensor<f32> {
  // expected-error @+1 {{stack_c1: the first result must be a tensor<i64>}}
  %h1, %x = ember.stack_pop %h[%k] : (tensor<i64>, tensor<i64>) -> (tensor<2xi64>, tensor<f32>)
  return %x : tensor<f32>
}

// -----

func.func @stack_c3_index(%h: tensor<i64>, %k: tensor<2xi64>) -> tensor<f32> {
  // expected-error @+1 {{stack_c3: the index must be a tensor<i64>, or a tensor<Lxi64> with lanes = L >= 1}}
  %h1, %x = ember.stack_pop %h[%k] : (tensor<i64>, tensor<2xi64>) -> (tensor<i64>, tensor<f32>)
  return %x : tensor<f32>
}

// -----

func.func @stack_c3_lanes(%h: tensor<i64>, %k: tensor<2xi64>) -> tensor<3xf32> {
  // expected-error @+1 {{stack_c3: with lanes = 2, every value has a leading dimension of 2}}
  %h1, %x = ember.stack_pop %h[%k] {lanes = 2 : i64} : (tensor<i64>, tensor<2xi64>) -> (tensor<i64>, tensor<3xf32>)
  return %x : tensor<3xf32>
}

// -----

func.func @stack_c2(%h: tensor<i64>) -> tensor<i64> {
  // expected-error @+1 {{stack_c2: a push needs at least one value}}
  %h1 = ember.stack_push %h() : (tensor<i64>) -> tensor<i64>
  return %h1 : tensor<i64>
}

// -----

func.func @optimization_barrier_c1(%x: tensor<3xf32>) -> tensor<2xf32> {
  // optimization_barrier_c1: the results have the operands' types.
  // expected-error @+2 {{'ember.optimization_barrier' op inferred type(s) 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'ember.optimization_barrier' op failed to infer returned types}}
  %y = "ember.optimization_barrier"(%x) : (tensor<3xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @stack_c3_push_lanes(%h: tensor<i64>, %x: tensor<3xf32>) -> tensor<i64> {
  // expected-error @+1 {{stack_c3: with lanes = 2, every value has a leading dimension of 2}}
  %h1 = ember.stack_push %h(%x) {lanes = 2 : i64} : (tensor<i64>, tensor<3xf32>) -> tensor<i64>
  return %h1 : tensor<i64>
}

// -----

// collective_c1
func.func @collective_c1(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{collective_c1: the axis size must be at least 1, got 0}}
  %0 = ember.psum %x axis "i" size 0 : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// collective_c1 (empty name)
func.func @collective_c1_name(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{collective_c1: the axis name is empty}}
  %0 = ember.pvary %x axis "" size 2 : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// axis_index_c1
func.func @axis_index_c1() -> tensor<2xi32> {
  // expected-error @+1 {{axis_index_c1: the result is a 0-d tensor<i32>}}
  %0 = ember.axis_index axis "i" size 2 : tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// all_gather_c1
func.func @all_gather_c1(%x: tensor<3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{all_gather_c1: dimension 2 is out of range for an operand of rank 1}}
  %0 = ember.all_gather %x axis "i" size 2 dim 2 : (tensor<3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// all_gather_c2
func.func @all_gather_c2(%x: tensor<3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{all_gather_c2: the result must be 'tensor<2x3xf32>'}}
  %0 = ember.all_gather %x axis "i" size 2 dim 0 : (tensor<3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// reduce_scatter_c1
func.func @reduce_scatter_c1(%x: tensor<2xf32>) -> tensor<f32> {
  // expected-error @+1 {{reduce_scatter_c1: dimension 1 is out of range for an operand of rank 1}}
  %0 = ember.reduce_scatter %x axis "i" size 2 dim 1 : (tensor<2xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// reduce_scatter_c2
func.func @reduce_scatter_c2(%x: tensor<6xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{reduce_scatter_c2: dimension 0 has 6 entries, which the axis size does not divide (4)}}
  %0 = ember.reduce_scatter %x axis "i" size 4 dim 0 {tiled} : (tensor<6xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// reduce_scatter_c3
func.func @reduce_scatter_c3(%x: tensor<4x3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduce_scatter_c3: the result must be 'tensor<3xf32>'}}
  %0 = ember.reduce_scatter %x axis "i" size 4 dim 0 : (tensor<4x3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// ppermute_c1
func.func @ppermute_c1(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{ppermute_c1: lane 5 is out of range [0, 4)}}
  %0 = ember.ppermute %x axis "i" size 4 pairs [0, 5] : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// ppermute_c1 (odd count)
func.func @ppermute_c1_pairs(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{ppermute_c1: pairs must list (source, destination) pairs}}
  %0 = ember.ppermute %x axis "i" size 4 pairs [0, 1, 2] : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// ppermute_c2
func.func @ppermute_c2(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{ppermute_c2: a lane is a source or a destination more than once}}
  %0 = ember.ppermute %x axis "i" size 4 pairs [0, 1, 2, 1] : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// all_to_all_c1
func.func @all_to_all_c1(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{all_to_all_c1: split and concat dimensions must be in [0, 1)}}
  %0 = ember.all_to_all %x axis "i" size 4 split 0 concat 1 : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// all_to_all_c2
func.func @all_to_all_c2(%x: tensor<3x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{all_to_all_c2: split dimension 0 has 3 entries, which is not the axis size (4)}}
  %0 = ember.all_to_all %x axis "i" size 4 split 0 concat 0 : (tensor<3x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// all_to_all_c3
func.func @all_to_all_c3(%x: tensor<8x2xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{all_to_all_c3: the result must be 'tensor<2x8xf32>'}}
  %0 = ember.all_to_all %x axis "i" size 4 split 0 concat 1 {tiled} : (tensor<8x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

// -----

// vmap_c5
func.func private @vmap_c5_f(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
func.func @vmap_c5(%xs: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{vmap_c5: the axis name is empty}}
  %r = ember.vmap @vmap_c5_f(%xs) batched [true] size 2 axis "" : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// vmap_c6 (was an abort: a tensor type of size -1 built in the verifier)
func.func private @vmap_c6_f(%x: tensor<3xf32>) -> tensor<f32> {
  %0 = ember.reduce sum %x, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @vmap_c6(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{vmap_c6: the batch size -1 is negative}}
  %y = ember.vmap @vmap_c6_f(%x) batched [true] size -1 : (tensor<2x3xf32>) -> tensor<3xf32>
  return
}

// -----

// cholesky_c1
func.func @cholesky_c1(%a: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{cholesky_c1: the operand must be (a batch of) square matrices}}
  %0 = ember.cholesky %a : tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// cholesky_c2
func.func @cholesky_c2(%a: tensor<3x3xf16>) -> tensor<3x3xf16> {
  // expected-error @+1 {{cholesky_c2: element type must be f32, f64 or complex of them, got 'f16'}}
  %0 = ember.cholesky %a : tensor<3x3xf16>
  return %0 : tensor<3x3xf16>
}

// -----

// triangular_solve_c1
func.func @triangular_solve_c1(%a: tensor<3xf32>, %b: tensor<3x2xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{triangular_solve_c1: a must be (a batch of) square matrices}}
  %0 = ember.triangular_solve %a, %b {lower = true, transpose_a = false, unit_diagonal = false} : (tensor<3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// triangular_solve_c2
func.func @triangular_solve_c2(%a: tensor<2x3x3xf32>, %b: tensor<3x3x2xf32>) -> tensor<3x3x2xf32> {
  // expected-error @+1 {{triangular_solve_c2: b must be (..., n, k) with a's batch dimensions and n}}
  %0 = ember.triangular_solve %a, %b {lower = true, transpose_a = false, unit_diagonal = false} : (tensor<2x3x3xf32>, tensor<3x3x2xf32>) -> tensor<3x3x2xf32>
  return %0 : tensor<3x3x2xf32>
}

// -----

// triangular_solve_c3
func.func @triangular_solve_c3(%a: tensor<3x3xf32>, %b: tensor<3x2xf64>) -> tensor<3x2xf64> {
  // expected-error @+1 {{triangular_solve_c3: a, b and the result must have one element type}}
  %0 = ember.triangular_solve %a, %b {lower = true, transpose_a = false, unit_diagonal = false} : (tensor<3x3xf32>, tensor<3x2xf64>) -> tensor<3x2xf64>
  return %0 : tensor<3x2xf64>
}

// -----

// triangular_solve_c4
func.func @triangular_solve_c4(%a: tensor<3x3xbf16>, %b: tensor<3x2xbf16>) -> tensor<3x2xbf16> {
  // expected-error @+1 {{triangular_solve_c4: element type must be f32, f64 or complex of them, got 'bf16'}}
  %0 = ember.triangular_solve %a, %b {lower = true, transpose_a = false, unit_diagonal = false} : (tensor<3x3xbf16>, tensor<3x2xbf16>) -> tensor<3x2xbf16>
  return %0 : tensor<3x2xbf16>
}

// -----

// lu_c1
func.func @lu_c1(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{lu_c1: the operand must be (a batch of) matrices}}
  %lu, %p, %q = ember.lu %a : (tensor<3xf32>) -> (tensor<3xf32>, tensor<1xi32>, tensor<1xi32>)
  return %lu : tensor<3xf32>
}

// -----

// lu_c2
func.func @lu_c2(%a: tensor<3x3xf16>) -> tensor<3x3xf16> {
  // expected-error @+1 {{lu_c2: element type must be f32, f64 or complex of them, got 'f16'}}
  %lu, %p, %q = ember.lu %a : (tensor<3x3xf16>) -> (tensor<3x3xf16>, tensor<3xi32>, tensor<3xi32>)
  return %lu : tensor<3x3xf16>
}

// -----

// lu_c3
func.func @lu_c3(%a: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{lu_c3: results must be the operand's type, 'tensor<3xi32>' and 'tensor<4xi32>'}}
  %lu, %p, %q = ember.lu %a : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4xi32>, tensor<4xi32>)
  return %lu : tensor<4x3xf32>
}

// -----

// eigh_c1
func.func @eigh_c1(%a: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{eigh_c1: the operand must be (a batch of) square matrices}}
  %v, %w = ember.eigh %a : (tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3xf32>)
  return %v : tensor<3x4xf32>
}

// -----

// eigh_c2
func.func @eigh_c2(%a: tensor<3x3xbf16>) -> tensor<3x3xbf16> {
  // expected-error @+1 {{eigh_c2: element type must be f32, f64 or complex of them, got 'bf16'}}
  %v, %w = ember.eigh %a : (tensor<3x3xbf16>) -> (tensor<3x3xbf16>, tensor<3xbf16>)
  return %v : tensor<3x3xbf16>
}

// -----

// eigh_c3
func.func @eigh_c3(%a: tensor<3x3xcomplex<f32>>) -> tensor<3x3xcomplex<f32>> {
  // expected-error @+1 {{eigh_c3: results must be the operand's type and 'tensor<3xf32>'}}
  %v, %w = ember.eigh %a : (tensor<3x3xcomplex<f32>>) -> (tensor<3x3xcomplex<f32>>, tensor<3xf64>)
  return %v : tensor<3x3xcomplex<f32>>
}

// -----

// qr_c1
func.func @qr_c1(%a: tensor<3xf32>) -> tensor<3x1xf32> {
  // expected-error @+1 {{qr_c1: the operand must be (a batch of) matrices, got 'tensor<3xf32>'}}
  %q, %r = ember.qr %a {full_matrices = false} : (tensor<3xf32>) -> (tensor<3x1xf32>, tensor<1xf32>)
  return %q : tensor<3x1xf32>
}

// -----

// qr_c2
func.func @qr_c2(%a: tensor<3x3xf16>) -> tensor<3x3xf16> {
  // expected-error @+1 {{qr_c2: element type must be f32, f64 or complex of them, got 'f16'}}
  %q, %r = ember.qr %a {full_matrices = false} : (tensor<3x3xf16>) -> (tensor<3x3xf16>, tensor<3x3xf16>)
  return %q : tensor<3x3xf16>
}

// -----

// qr_c3
func.func @qr_c3(%a: tensor<5x3xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{qr_c3: results must be 'tensor<5x5xf32>' and 'tensor<5x3xf32>'}}
  %q, %r = ember.qr %a {full_matrices = true} : (tensor<5x3xf32>) -> (tensor<5x3xf32>, tensor<3x3xf32>)
  return %q : tensor<5x3xf32>
}

// -----

// svd_c1
func.func @svd_c1(%a: tensor<3xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{svd_c1: the operand must be (a batch of) matrices}}
  %s = ember.svd %a {full_matrices = false} : (tensor<3xf32>) -> tensor<1xf32>
  return %s : tensor<1xf32>
}

// -----

// svd_c2
func.func @svd_c2(%a: tensor<3x3xbf16>) -> tensor<3xbf16> {
  // expected-error @+1 {{svd_c2: element type must be f32, f64 or complex of them, got 'bf16'}}
  %s = ember.svd %a {full_matrices = false} : (tensor<3x3xbf16>) -> tensor<3xbf16>
  return %s : tensor<3xbf16>
}

// -----

// svd_c3
func.func @svd_c3(%a: tensor<3x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{svd_c3: expected 1 result (s) or 3 (s, u, vh), got 2}}
  %s, %u = ember.svd %a {full_matrices = false} : (tensor<3x3xf32>) -> (tensor<3xf32>, tensor<3x3xf32>)
  return %s : tensor<3xf32>
}

// -----

// svd_c4
func.func @svd_c4(%a: tensor<2x4x3xcomplex<f64>>) -> tensor<2x3xf64> {
  // expected-error @+1 {{svd_c4: results must be 'tensor<2x3xf64>', 'tensor<2x4x4xcomplex<f64>>' and 'tensor<2x3x3xcomplex<f64>>'}}
  %s, %u, %vh = ember.svd %a {full_matrices = true} : (tensor<2x4x3xcomplex<f64>>) -> (tensor<2x3xf64>, tensor<2x4x3xcomplex<f64>>, tensor<2x3x3xcomplex<f64>>)
  return %s : tensor<2x3xf64>
}

// -----

// svd_c4
func.func @svd_c4_values(%a: tensor<4x3xcomplex<f32>>) -> tensor<3xcomplex<f32>> {
  // expected-error @+1 {{svd_c4: the result must be 'tensor<3xf32>'}}
  %s = ember.svd %a {full_matrices = false} : (tensor<4x3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
  return %s : tensor<3xcomplex<f32>>
}

// -----

// Ember's tensors have static shapes (docs/spec.md, "Types"): a dynamic
// dimension is a verifier error, never a crash in the lowering.
func.func @dynamic_operand(%a: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor}}
  %0 = ember.tanh %a : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @dynamic_result() -> tensor<?xi32> {
  // expected-error @+1 {{result #0 must be statically shaped tensor}}
  %0 = ember.iota dim = 0 : tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

func.func @philox_types(%k: tensor<4xui32>, %x: tensor<4xi32>) {
  // expected-error @+1 {{'ember.philox4x32' op operand #2 must be}}
  %0:4 = "ember.philox4x32"(%k, %k, %x, %x, %x, %x) : (tensor<4xui32>, tensor<4xui32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) -> (tensor<4xui32>, tensor<4xui32>, tensor<4xui32>, tensor<4xui32>)
  return
}

// -----

func.func @philox_shapes(%k: tensor<4xui32>, %x: tensor<3xui32>) {
  // expected-error @+1 {{'ember.philox4x32' op failed to verify that all of {key0, key1, x0, x1, x2, x3, out0, out1, out2, out3} have same type}}
  %0:4 = "ember.philox4x32"(%k, %k, %x, %x, %x, %x) : (tensor<4xui32>, tensor<4xui32>, tensor<3xui32>, tensor<3xui32>, tensor<3xui32>, tensor<3xui32>) -> (tensor<4xui32>, tensor<4xui32>, tensor<4xui32>, tensor<4xui32>)
  return
}

// -----

// fft_c1
func.func @fft_c1(%x: tensor<4x8xcomplex<f32>>) -> tensor<4x8xcomplex<f32>> {
  // expected-error @+1 {{fft_c1: fft_type must be FFT, IFFT, RFFT or IRFFT, got DCT}}
  %0 = ember.fft %x {fft_type = "DCT", fft_lengths = array<i64: 8>} : (tensor<4x8xcomplex<f32>>) -> tensor<4x8xcomplex<f32>>
  return %0 : tensor<4x8xcomplex<f32>>
}

// -----

// fft_c2
func.func @fft_c2(%x: tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>> {
  // expected-error @+1 {{fft_c2: fft_lengths must have 1 to 3 entries, at most the operand's rank}}
  %0 = ember.fft %x {fft_type = "FFT", fft_lengths = array<i64: 1, 8>} : (tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>>
  return %0 : tensor<8xcomplex<f32>>
}

// -----

// fft_c3
func.func @fft_c3(%x: tensor<8xcomplex<f32>>) -> tensor<5xcomplex<f32>> {
  // expected-error @+1 {{fft_c3: RFFT takes a real operand to a complex result of the same precision}}
  %0 = ember.fft %x {fft_type = "RFFT", fft_lengths = array<i64: 8>} : (tensor<8xcomplex<f32>>) -> tensor<5xcomplex<f32>>
  return %0 : tensor<5xcomplex<f32>>
}

// -----

// fft_c3
func.func @fft_c3_f16(%x: tensor<8xf16>) -> tensor<5xcomplex<f32>> {
  // expected-error @+1 {{fft_c3: RFFT takes a real operand to a complex result of the same precision (32 or 64 bits)}}
  %0 = ember.fft %x {fft_type = "RFFT", fft_lengths = array<i64: 8>} : (tensor<8xf16>) -> tensor<5xcomplex<f32>>
  return %0 : tensor<5xcomplex<f32>>
}

// -----

// fft_c4
func.func @fft_c4(%x: tensor<3x8xf32>) -> tensor<3x8xcomplex<f32>> {
  // expected-error @+1 {{fft_c4: the operand's and result's trailing dimensions must be [8] and [5]}}
  %0 = ember.fft %x {fft_type = "RFFT", fft_lengths = array<i64: 8>} : (tensor<3x8xf32>) -> tensor<3x8xcomplex<f32>>
  return %0 : tensor<3x8xcomplex<f32>>
}

// -----

// fft_c4
func.func @fft_c4_irfft(%x: tensor<3x4x5xcomplex<f64>>) -> tensor<3x4x9xf64> {
  // expected-error @+1 {{fft_c4: the operand's and result's trailing dimensions must be [4, 5] and [4, 8]}}
  %0 = ember.fft %x {fft_type = "IRFFT", fft_lengths = array<i64: 4, 8>} : (tensor<3x4x5xcomplex<f64>>) -> tensor<3x4x9xf64>
  return %0 : tensor<3x4x9xf64>
}
