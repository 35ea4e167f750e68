// RUN: ember-opt %s --ember-cpu-pipeline | mlir-runner -e main --entry-point-result=void -shared-libs=%c_runner_utils,%runner_utils | FileCheck %s

// Structural ops; expected values checked against numpy.

func.func private @printMemrefF32(tensor<*xf32>) attributes {llvm.emit_c_interface}

func.func @main() {
  %a = ember.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %zero = ember.constant dense<0.0> : tensor<f32>

  // Negative low padding on dim 1 drops a column; interior padding on dim 0.
  // CHECK-LABEL: sizes = [4, 4]
  // CHECK-NEXT: {{\[\[}}0,   0,   0,   0],
  // CHECK-NEXT:  [2,   3,   0,   0],
  // CHECK-NEXT:  [0,   0,   0,   0],
  // CHECK-NEXT:  [5,   6,   0,   0]]
  %0 = ember.pad %a, %zero, low = [1, -1], high = [0, 2], interior = [1, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<4x4xf32>
  %u0 = tensor.cast %0 : tensor<4x4xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u0) : (tensor<*xf32>) -> ()

  // CHECK-LABEL: sizes = [2, 4]
  // CHECK-NEXT: {{\[\[}}1,   2,   3,   7],
  // CHECK-NEXT:  [4,   5,   6,   8]]
  %b = ember.constant dense<[[7.0], [8.0]]> : tensor<2x1xf32>
  %1 = ember.concatenate dim = 1, %a, %b : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %u1 = tensor.cast %1 : tensor<2x4xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u1) : (tensor<*xf32>) -> ()

  // CHECK-LABEL: sizes = [2, 3]
  // CHECK-NEXT: {{\[\[}}6,   5,   4],
  // CHECK-NEXT:  [3,   2,   1]]
  %2 = ember.reverse %a, dims = [0, 1] : tensor<2x3xf32>
  %u2 = tensor.cast %2 : tensor<2x3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()

  // CHECK-LABEL: sizes = [3, 2]
  // CHECK-NEXT: {{\[\[}}1,   4],
  // CHECK-NEXT:  [2,   5],
  // CHECK-NEXT:  [3,   6]]
  %3 = ember.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %u3 = tensor.cast %3 : tensor<3x2xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u3) : (tensor<*xf32>) -> ()

  // CHECK-LABEL: sizes = [3, 2]
  // CHECK-NEXT: {{\[\[}}1,   2],
  // CHECK-NEXT:  [3,   4],
  // CHECK-NEXT:  [5,   6]]
  %4 = ember.reshape %a : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %u4 = tensor.cast %4 : tensor<3x2xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u4) : (tensor<*xf32>) -> ()

  // CHECK-LABEL: sizes = [2, 3]
  // CHECK-NEXT: {{\[\[}}1,   2,   3],
  // CHECK-NEXT:  [1,   2,   3]]
  %row = ember.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %5 = ember.broadcast_in_dim %row, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %u5 = tensor.cast %5 : tensor<2x3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u5) : (tensor<*xf32>) -> ()

  // CHECK-LABEL: sizes = [2, 3]
  // CHECK-NEXT: {{\[\[}}0,   1,   2],
  // CHECK-NEXT:  [0,   1,   2]]
  %6 = ember.iota dim = 1 : tensor<2x3xf32>
  %u6 = tensor.cast %6 : tensor<2x3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u6) : (tensor<*xf32>) -> ()

  %x = ember.iota dim = 0 : tensor<10xf32>
  // Strided slice: start 1, limit 9, stride 3.
  // CHECK-LABEL: sizes = [3]
  // CHECK-NEXT: [1,  4,  7]
  %7 = ember.slice %x, start = [1], limit = [9], strides = [3] : (tensor<10xf32>) -> tensor<3xf32>
  %u7 = tensor.cast %7 : tensor<3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u7) : (tensor<*xf32>) -> ()

  // dynamic_slice clamps the start so that the slice stays in bounds:
  // 8 -> 7, -2 -> 0, 4 stays.
  %i8 = ember.constant dense<8> : tensor<i32>
  %im2 = ember.constant dense<-2> : tensor<i32>
  %i4 = ember.constant dense<4> : tensor<i32>
  // CHECK-LABEL: sizes = [3]
  // CHECK-NEXT: [7,  8,  9]
  %8 = ember.dynamic_slice %x[%i8], sizes = [3] : (tensor<10xf32>, tensor<i32>) -> tensor<3xf32>
  %u8 = tensor.cast %8 : tensor<3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u8) : (tensor<*xf32>) -> ()
  // CHECK-LABEL: sizes = [3]
  // CHECK-NEXT: [0,  1,  2]
  %9 = ember.dynamic_slice %x[%im2], sizes = [3] : (tensor<10xf32>, tensor<i32>) -> tensor<3xf32>
  %u9 = tensor.cast %9 : tensor<3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u9) : (tensor<*xf32>) -> ()
  // CHECK-LABEL: sizes = [3]
  // CHECK-NEXT: [4,  5,  6]
  %10 = ember.dynamic_slice %x[%i4], sizes = [3] : (tensor<10xf32>, tensor<i32>) -> tensor<3xf32>
  %u10 = tensor.cast %10 : tensor<3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u10) : (tensor<*xf32>) -> ()

  // dynamic_update_slice clamps too: start 8 -> 7.
  // CHECK-LABEL: sizes = [10]
  // CHECK-NEXT: [0,  1,  2,  3,  4,  5,  6,  100,  200,  300]
  %upd = ember.constant dense<[100.0, 200.0, 300.0]> : tensor<3xf32>
  %11 = ember.dynamic_update_slice %x[%i8], %upd : tensor<10xf32>, tensor<3xf32>, tensor<i32>
  %u11 = tensor.cast %11 : tensor<10xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u11) : (tensor<*xf32>) -> ()

  // 2-d dynamic_slice with an unsigned start index.
  // CHECK-LABEL: sizes = [2, 2]
  // CHECK-NEXT: {{\[\[}}2,   3],
  // CHECK-NEXT:  [5,   6]]
  %r0 = ember.constant dense<0> : tensor<ui32>
  %r5 = ember.constant dense<5> : tensor<ui32>
  %12 = ember.dynamic_slice %a[%r0, %r5], sizes = [2, 2] : (tensor<2x3xf32>, tensor<ui32>, tensor<ui32>) -> tensor<2x2xf32>
  %u12 = tensor.cast %12 : tensor<2x2xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u12) : (tensor<*xf32>) -> ()
  return
}
