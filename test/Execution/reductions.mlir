// RUN: ember-opt %s --ember-cpu-pipeline | mlir-runner -e main --entry-point-result=void -shared-libs=%c_runner_utils,%runner_utils | FileCheck %s

// reduce, argmax/argmin, cumulative and reduce_window.

func.func private @printMemrefF32(tensor<*xf32>) attributes {llvm.emit_c_interface}
func.func private @printMemrefI32(tensor<*xi32>) attributes {llvm.emit_c_interface}


func.func @main() {
  %a = ember.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  // CHECK: [6,  15]
  %0 = ember.reduce sum %a, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  %u0 = tensor.cast %0 : tensor<2xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u0) : (tensor<*xf32>) -> ()
  // CHECK: [21]
  %1 = ember.reduce sum %a, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  %u1 = tensor.cast %1 : tensor<f32> to tensor<*xf32>
  func.call @printMemrefF32(%u1) : (tensor<*xf32>) -> ()
  // CHECK: [4,  10,  18]
  %2 = ember.reduce prod %a, dims = [0] : (tensor<2x3xf32>) -> tensor<3xf32>
  %u2 = tensor.cast %2 : tensor<3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()

  // max propagates NaN.
  %n = ember.constant dense<[[1.0, 0x7FC00000, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  // CHECK: [nan,  6]
  %3 = ember.reduce max %n, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  %u3 = tensor.cast %3 : tensor<2xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u3) : (tensor<*xf32>) -> ()
  // CHECK: [nan,  4]
  %4 = ember.reduce min %n, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  %u4 = tensor.cast %4 : tensor<2xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u4) : (tensor<*xf32>) -> ()

  // Integer min / prod / xor.
  %ia = ember.constant dense<[[3, -1, 2], [7, 7, 0]]> : tensor<2x3xi32>
  // CHECK: [-1,  0]
  %5 = ember.reduce min %ia, dims = [1] : (tensor<2x3xi32>) -> tensor<2xi32>
  %u5 = tensor.cast %5 : tensor<2xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u5) : (tensor<*xi32>) -> ()
  // CHECK: [-6,  0]
  %6 = ember.reduce prod %ia, dims = [1] : (tensor<2x3xi32>) -> tensor<2xi32>
  %u6 = tensor.cast %6 : tensor<2xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u6) : (tensor<*xi32>) -> ()
  // CHECK: [-2,  0]
  %7 = ember.reduce xor %ia, dims = [1] : (tensor<2x3xi32>) -> tensor<2xi32>
  %u7 = tensor.cast %7 : tensor<2xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u7) : (tensor<*xi32>) -> ()
  // Unsigned max: 0xFFFFFFFF is the largest.
  %ub = ember.constant dense<[[1, 4294967295, 2], [0, 0, 0]]> : tensor<2x3xui32>
  %8 = ember.reduce max %ub, dims = [1] : (tensor<2x3xui32>) -> tensor<2xui32>
  %i8 = ember.bitcast_convert %8 : (tensor<2xui32>) -> tensor<2xi32>
  // CHECK: [-1,  0]
  %u8 = tensor.cast %i8 : tensor<2xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u8) : (tensor<*xi32>) -> ()

  // argmax: the first maximum wins; a NaN counts as the maximum (first NaN);
  // an all -inf row gives 0.
  %t = ember.constant dense<[[1.0, 3.0, 3.0, 0.0], [1.0, 0x7FC00000, 5.0, 0x7FC00000], [0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000]]> : tensor<3x4xf32>
  // CHECK: [1,  1,  0]
  %9 = ember.argmax %t, axis = 1 : (tensor<3x4xf32>) -> tensor<3xi32>
  %u9 = tensor.cast %9 : tensor<3xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u9) : (tensor<*xi32>) -> ()
  // CHECK: [3,  1,  0]
  %10 = ember.argmin %t, axis = 1 : (tensor<3x4xf32>) -> tensor<3xi32>
  %u10 = tensor.cast %10 : tensor<3xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u10) : (tensor<*xi32>) -> ()
  // argmax over axis 0 and on unsigned ints.
  // CHECK: [0,  0,  0]
  %11 = ember.argmax %ub, axis = 0 : (tensor<2x3xui32>) -> tensor<3xi32>
  %u11 = tensor.cast %11 : tensor<3xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u11) : (tensor<*xi32>) -> ()
  // argmax + argmin per row: (1 + 0, 0 + 0).
  // CHECK: [1,  0]
  %12 = ember.argmax %ub, axis = 1 : (tensor<2x3xui32>) -> tensor<2xi32>
  %b12 = ember.argmin %ub, axis = 1 : (tensor<2x3xui32>) -> tensor<2xi32>
  %s12 = ember.add %12, %b12 : tensor<2xi32>
  %u12 = tensor.cast %s12 : tensor<2xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u12) : (tensor<*xi32>) -> ()

  // cumulative: forward and reverse.
  %c = ember.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  // CHECK: [1,  3,  6,  10]
  %13 = ember.cumulative sum %c, axis = 0 : tensor<4xf32>
  %u13 = tensor.cast %13 : tensor<4xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u13) : (tensor<*xf32>) -> ()
  // CHECK: [10,  9,  7,  4]
  %14 = ember.cumulative sum %c, axis = 0 {reverse = true} : tensor<4xf32>
  %u14 = tensor.cast %14 : tensor<4xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u14) : (tensor<*xf32>) -> ()
  // CHECK: [24,  24,  12,  4]
  %15 = ember.cumulative prod %c, axis = 0 {reverse = true} : tensor<4xf32>
  %u15 = tensor.cast %15 : tensor<4xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u15) : (tensor<*xf32>) -> ()
  %ci = ember.constant dense<[[1, 3, 2, 5], [4, -1, 0, 9]]> : tensor<2x4xi32>
  // CHECK: {{\[\[}}1,   3,   3,   5],
  // CHECK-NEXT: [4,   4,   4,   9]]
  %16 = ember.cumulative max %ci, axis = 1 : tensor<2x4xi32>
  %u16 = tensor.cast %16 : tensor<2x4xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u16) : (tensor<*xi32>) -> ()
  // CHECK: {{\[\[}}1,   -1,   0,   5],
  // CHECK-NEXT: [4,   -1,   0,   9]]
  %17 = ember.cumulative min %ci, axis = 0 {reverse = true} : tensor<2x4xi32>
  %u17 = tensor.cast %17 : tensor<2x4xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u17) : (tensor<*xi32>) -> ()

  // reduce_window: 2x2 max pooling with one column of high padding (-inf).
  %ninf = ember.constant dense<0xFF800000> : tensor<f32>
  // CHECK: {{\[\[}}5,   6,   6]]
  %18 = ember.reduce_window max %a, %ninf, window = [2, 2], strides = [1, 1], low = [0, 0], high = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<1x3xf32>
  %u18 = tensor.cast %18 : tensor<1x3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u18) : (tensor<*xf32>) -> ()
  // Sum pooling, window 2, stride 2, low padding 1 (init 0): [0,1 | 2,3 | 4,5].
  %w = ember.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>
  %z = ember.constant dense<0.0> : tensor<f32>
  // CHECK: [1,  5,  9]
  %19 = ember.reduce_window sum %w, %z, window = [2], strides = [2], low = [1], high = [0] : (tensor<5xf32>, tensor<f32>) -> tensor<3xf32>
  %u19 = tensor.cast %19 : tensor<3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u19) : (tensor<*xf32>) -> ()
  return
}
