// RUN: ember-opt %s --ember-cpu-pipeline | mlir-runner -e main --entry-point-result=void -shared-libs=%c_runner_utils,%runner_utils | FileCheck %s

// sort (total order, stable, several operands), dot_general, gather, scatter.

func.func private @printMemrefF32(tensor<*xf32>) attributes {llvm.emit_c_interface}
func.func private @printMemrefI32(tensor<*xi32>) attributes {llvm.emit_c_interface}

func.func @main() {
  // Floats sort in JAX's order: -inf < -1 < -0 == +0 < ... < NaN, with equal
  // zeros (and NaNs of either sign) in input order.
  %k = ember.constant dense<[3.0, 0x7FC00000, -1.0, 2.0, 0.0, -0.0, 0xFF800000, 1.0, 0xFFC00000]> : tensor<9xf32>
  // CHECK: [-inf,  -1,  0,  -0,  1,  2,  3,  nan,  -nan]
  %0 = ember.sort dim = 0, keys = 1, %k : tensor<9xf32>
  %u0 = tensor.cast %0 : tensor<9xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u0) : (tensor<*xf32>) -> ()

  // Stable sort of a payload by one key.
  %key = ember.constant dense<[2.0, 1.0, 2.0, 1.0, 0.0]> : tensor<5xf32>
  %val = ember.constant dense<[10.0, 11.0, 12.0, 13.0, 14.0]> : tensor<5xf32>
  %1:2 = ember.sort dim = 0, keys = 1, %key, %val : tensor<5xf32>, tensor<5xf32>
  // CHECK: [0,  1,  1,  2,  2]
  %u1 = tensor.cast %1#0 : tensor<5xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u1) : (tensor<*xf32>) -> ()
  // CHECK: [14,  11,  13,  10,  12]
  %u2 = tensor.cast %1#1 : tensor<5xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()

  // Two keys compare lexicographically.
  %ka = ember.constant dense<[1, 0, 1, 0]> : tensor<4xi32>
  %kb = ember.constant dense<[5, 6, 4, -6]> : tensor<4xi32>
  %2:2 = ember.sort dim = 0, keys = 2, %ka, %kb : tensor<4xi32>, tensor<4xi32>
  // CHECK: [0,  0,  1,  1]
  %u3 = tensor.cast %2#0 : tensor<4xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u3) : (tensor<*xi32>) -> ()
  // CHECK: [-6,  6,  4,  5]
  %u4 = tensor.cast %2#1 : tensor<4xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u4) : (tensor<*xi32>) -> ()

  // Unsigned keys: 0xFFFFFFFF is the largest.
  %uk = ember.constant dense<[4294967295, 0, 7, 1]> : tensor<4xui32>
  %3 = ember.sort dim = 0, keys = 1, %uk : tensor<4xui32>
  %i3 = ember.bitcast_convert %3 : (tensor<4xui32>) -> tensor<4xi32>
  // CHECK: [0,  1,  7,  -1]
  %u5 = tensor.cast %i3 : tensor<4xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u5) : (tensor<*xi32>) -> ()

  // 2-d sort along dimension 0.
  %m = ember.constant dense<[[3.0, -1.0], [1.0, -2.0], [2.0, 5.0]]> : tensor<3x2xf32>
  // CHECK: {{\[\[}}1,   -2],
  // CHECK-NEXT: [2,   -1],
  // CHECK-NEXT: [3,   5]]
  %4 = ember.sort dim = 0, keys = 1, %m : tensor<3x2xf32>
  %u6 = tensor.cast %4 : tensor<3x2xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u6) : (tensor<*xf32>) -> ()

  // dot_general: matmul.
  %a = ember.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = ember.constant dense<[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]> : tensor<3x2xf32>
  // CHECK: {{\[\[}}4,   5],
  // CHECK-NEXT: [10,   11]]
  %5 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %u7 = tensor.cast %5 : tensor<2x2xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u7) : (tensor<*xf32>) -> ()
  // Batched matmul.
  %bl = ember.constant dense<[[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]> : tensor<2x2x2xf32>
  // CHECK: {{\[\[\[}}7,     10],
  // CHECK-NEXT: [15,     22]],
  // CHECK-NEXT: {{\[\[}}67,     78],
  // CHECK-NEXT: [91,     106]]]
  %6 = ember.dot_general %bl, %bl, batch = [0] x [0], contract = [2] x [1] : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %u8 = tensor.cast %6 : tensor<2x2x2xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u8) : (tensor<*xf32>) -> ()
  // i8 operands accumulate in the i32 result type (no i8 overflow).
  %c8 = ember.constant dense<[[100, 100], [-100, 100]]> : tensor<2x2xi8>
  // CHECK: {{\[\[}}20000,   0],
  // CHECK-NEXT: [0,   20000]]
  %7 = ember.dot_general %c8, %c8, batch = [] x [], contract = [1] x [1] : (tensor<2x2xi8>, tensor<2x2xi8>) -> tensor<2x2xi32>
  %u9 = tensor.cast %7 : tensor<2x2xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u9) : (tensor<*xi32>) -> ()

  // gather rows; clip clamps the start index, fill gives NaN out of bounds.
  %op = ember.constant dense<[[0.0, 1.0, 2.0], [10.0, 11.0, 12.0], [20.0, 21.0, 22.0], [30.0, 31.0, 32.0], [40.0, 41.0, 42.0]]> : tensor<5x3xf32>
  %idx = ember.constant dense<[[4], [0], [7], [-1]]> : tensor<4x1xi32>
  // CHECK: {{\[\[}}40,   41,   42],
  // CHECK-NEXT: [0,   1,   2],
  // CHECK-NEXT: [40,   41,   42],
  // CHECK-NEXT: [0,   1,   2]]
  %8 = ember.gather %op[%idx] {offset_dims = array<i64: 1>, collapsed_slice_dims = array<i64: 0>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 0>, index_vector_dim = 1, slice_sizes = array<i64: 1, 3>, mode = #ember<mode clip>} : (tensor<5x3xf32>, tensor<4x1xi32>) -> tensor<4x3xf32>
  %u10 = tensor.cast %8 : tensor<4x3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u10) : (tensor<*xf32>) -> ()
  // CHECK: {{\[\[}}40,   41,   42],
  // CHECK-NEXT: [0,   1,   2],
  // CHECK-NEXT: [nan,   nan,   nan],
  // CHECK-NEXT: [nan,   nan,   nan]]
  %9 = ember.gather %op[%idx] {offset_dims = array<i64: 1>, collapsed_slice_dims = array<i64: 0>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 0>, index_vector_dim = 1, slice_sizes = array<i64: 1, 3>, mode = #ember<mode fill>} : (tensor<5x3xf32>, tensor<4x1xi32>) -> tensor<4x3xf32>
  %u11 = tensor.cast %9 : tensor<4x3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u11) : (tensor<*xf32>) -> ()
  // Point gather with a 2-component index vector: op[1, 2], op[3, 0].
  %pidx = ember.constant dense<[[1, 2], [3, 0]]> : tensor<2x2xi32>
  // CHECK: [12,  30]
  %10 = ember.gather %op[%pidx] {offset_dims = array<i64>, collapsed_slice_dims = array<i64: 0, 1>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 0, 1>, index_vector_dim = 1, slice_sizes = array<i64: 1, 1>, mode = #ember<mode clip>} : (tensor<5x3xf32>, tensor<2x2xi32>) -> tensor<2xf32>
  %u12 = tensor.cast %10 : tensor<2xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u12) : (tensor<*xf32>) -> ()

  // scatter add with a duplicate index; fill drops the out-of-bounds row 9.
  %zeros = ember.constant dense<0.0> : tensor<5x3xf32>
  %sidx = ember.constant dense<[[1], [3], [1], [9]]> : tensor<4x1xi32>
  %upd = ember.constant dense<[[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 3.0], [4.0, 4.0, 4.0]]> : tensor<4x3xf32>
  // CHECK: {{\[\[}}0,   0,   0],
  // CHECK-NEXT: [4,   4,   4],
  // CHECK-NEXT: [0,   0,   0],
  // CHECK-NEXT: [2,   2,   2],
  // CHECK-NEXT: [0,   0,   0]]
  %11 = ember.scatter add %zeros[%sidx], %upd {update_window_dims = array<i64: 1>, inserted_window_dims = array<i64: 0>, operand_batching_dims = array<i64>, scatter_indices_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, index_vector_dim = 1, mode = #ember<mode fill>} : (tensor<5x3xf32>, tensor<4x1xi32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  %u13 = tensor.cast %11 : tensor<5x3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u13) : (tensor<*xf32>) -> ()
  // replace with clip: the later duplicate wins, 9 is clamped to 4.
  // CHECK: {{\[\[}}0,   1,   2],
  // CHECK-NEXT: [3,   3,   3],
  // CHECK-NEXT: [20,   21,   22],
  // CHECK-NEXT: [2,   2,   2],
  // CHECK-NEXT: [4,   4,   4]]
  %12 = ember.scatter replace %op[%sidx], %upd {update_window_dims = array<i64: 1>, inserted_window_dims = array<i64: 0>, operand_batching_dims = array<i64>, scatter_indices_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, index_vector_dim = 1, mode = #ember<mode clip>} : (tensor<5x3xf32>, tensor<4x1xi32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  %u14 = tensor.cast %12 : tensor<5x3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u14) : (tensor<*xf32>) -> ()
  // Point scatter-add into a vector (histogram): indices 0, 2, 2, 2.
  %hv = ember.constant dense<0> : tensor<3xi32>
  %hidx = ember.constant dense<[0, 2, 2, 2]> : tensor<4xi32>
  %hupd = ember.constant dense<1> : tensor<4xi32>
  // CHECK: [1,  0,  3]
  %13 = ember.scatter add %hv[%hidx], %hupd {update_window_dims = array<i64>, inserted_window_dims = array<i64: 0>, operand_batching_dims = array<i64>, scatter_indices_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, index_vector_dim = 1, mode = #ember<mode fill>} : (tensor<3xi32>, tensor<4xi32>, tensor<4xi32>) -> tensor<3xi32>
  %u15 = tensor.cast %13 : tensor<3xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u15) : (tensor<*xi32>) -> ()
  return
}
