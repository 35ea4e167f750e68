// RUN: ember-opt %s -canonicalize -split-input-file | FileCheck %s

// A pad whose low and high cancel out is a shift, not the identity.
// CHECK-LABEL: func @pad_shift_not_folded
// CHECK: ember.pad
func.func @pad_shift_not_folded(%x: tensor<3xf32>, %p: tensor<f32>) -> tensor<3xf32> {
  %0 = ember.pad %x, %p, low = [1], high = [-1], interior = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func @pad_zero_folded
// CHECK-NOT: ember.pad
func.func @pad_zero_folded(%x: tensor<3xf32>, %p: tensor<f32>) -> tensor<3xf32> {
  %0 = ember.pad %x, %p, low = [0], high = [0], interior = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func @identities
// CHECK-NEXT: return %arg0
func.func @identities(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %z = ember.constant dense<0> : tensor<2x3xi32>
  %o = ember.constant dense<1> : tensor<2x3xi32>
  %0 = ember.add %x, %z : tensor<2x3xi32>
  %1 = ember.mul %0, %o : tensor<2x3xi32>
  %2 = ember.transpose %1, dims = [0, 1] : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %3 = ember.reshape %2 : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %4 = ember.neg %3 : tensor<2x3xi32>
  %5 = ember.neg %4 : tensor<2x3xi32>
  return %5 : tensor<2x3xi32>
}

// -----

// CHECK-LABEL: func @constant_fold
// CHECK: ember.constant dense<[4.000000e+00, 6.000000e+00]>
// CHECK-NOT: ember.add
func.func @constant_fold() -> tensor<2xf32> {
  %a = ember.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = ember.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %0 = ember.add %a, %b : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// A reduction over dimensions of size 1 is a reshape.
// CHECK-LABEL: func @reduce_unit_dims
// CHECK-NEXT: %[[R:.*]] = ember.reshape %arg0 : (tensor<1x4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[R]]
func.func @reduce_unit_dims(%x: tensor<1x4x1xf32>) -> tensor<4xf32> {
  %0 = ember.reduce max %x, dims = [0, 2] : (tensor<1x4x1xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A transposed operand of dot_general is read as it is, its dimensions
// mapped through the permutation (x^T y: lhs contracts dimension 0).
// CHECK-LABEL: func @dot_of_transposes
// CHECK-NOT: ember.transpose
// CHECK: ember.dot_general %arg0, %arg1, batch = [] x [], contract = [0] x [0]
// CHECK: ember.dot_general %arg2, %arg3, batch = [0] x [0], contract = [2] x [2]
func.func @dot_of_transposes(%x: tensor<40x48xf32>, %y: tensor<40x72xf32>,
                             %q: tensor<4x16x8xf32>, %k: tensor<4x32x8xf32>)
    -> (tensor<48x72xf32>, tensor<4x16x32xf32>) {
  %xt = ember.transpose %x, dims = [1, 0] : (tensor<40x48xf32>) -> tensor<48x40xf32>
  %0 = ember.dot_general %xt, %y, batch = [] x [], contract = [1] x [0] : (tensor<48x40xf32>, tensor<40x72xf32>) -> tensor<48x72xf32>
  // Attention scores q k^T with k's last two dimensions swapped.
  %kt = ember.transpose %k, dims = [0, 2, 1] : (tensor<4x32x8xf32>) -> tensor<4x8x32xf32>
  %1 = ember.dot_general %q, %kt, batch = [0] x [0], contract = [2] x [1] : (tensor<4x16x8xf32>, tensor<4x8x32xf32>) -> tensor<4x16x32xf32>
  return %0, %1 : tensor<48x72xf32>, tensor<4x16x32xf32>
}

// -----

// A permutation that reorders the free dimensions stays a transpose (the
// result's dimension order would change).
// CHECK-LABEL: func @dot_of_reordering_transpose
// CHECK: ember.transpose
// CHECK: ember.dot_general
func.func @dot_of_reordering_transpose(%x: tensor<2x3x5xf32>, %y: tensor<5x7xf32>) -> tensor<3x2x7xf32> {
  %xt = ember.transpose %x, dims = [1, 0, 2] : (tensor<2x3x5xf32>) -> tensor<3x2x5xf32>
  %0 = ember.dot_general %xt, %y, batch = [] x [], contract = [2] x [0] : (tensor<3x2x5xf32>, tensor<5x7xf32>) -> tensor<3x2x7xf32>
  return %0 : tensor<3x2x7xf32>
}

// -----

// x^1 is x; other powers stay.
// CHECK-LABEL: func @integer_pow_one
// CHECK-NEXT: %[[P:.*]] = ember.integer_pow %arg0, y = 2
// CHECK-NEXT: return %arg0, %[[P]]
func.func @integer_pow_one(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = ember.integer_pow %x, y = 1 : tensor<3xf32>
  %1 = ember.integer_pow %x, y = 2 : tensor<3xf32>
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// Constants of 8- and 4-bit floats are not folded (XLA computes on them
// through f16; APFloat aborts on a difference f8E8M0FNU cannot hold).
// CHECK-LABEL: func @narrow_float_constants
func.func @narrow_float_constants() -> tensor<2xf8E8M0FNU> {
  %a = ember.constant dense<[1.0, 2.0]> : tensor<2xf8E8M0FNU>
  %b = ember.constant dense<[4.0, 4.0]> : tensor<2xf8E8M0FNU>
  // CHECK: ember.sub
  %0 = ember.sub %a, %b : tensor<2xf8E8M0FNU>
  return %0 : tensor<2xf8E8M0FNU>
}
