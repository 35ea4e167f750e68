// RUN: ember-opt %s --ember-cpu-pipeline | mlir-runner -e main --entry-point-result=void -shared-libs=%c_runner_utils,%runner_utils | FileCheck %s

// Integer semantics: XLA results where C is undefined (x / 0 = -1, x % 0 = x,
// INT_MIN / -1 = INT_MIN), shifts by >= bitwidth, popcount/clz, and
// signed vs unsigned compare and convert.

func.func private @printMemrefI32(tensor<*xi32>) attributes {llvm.emit_c_interface}
func.func private @printMemrefI64(tensor<*xi64>) attributes {llvm.emit_c_interface}

func.func @print(%t: tensor<5xi32>) {
  %u = tensor.cast %t : tensor<5xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u) : (tensor<*xi32>) -> ()
  return
}
func.func @printu(%t: tensor<5xui32>) {
  %c = ember.convert %t : (tensor<5xui32>) -> tensor<5xi64>
  %u = tensor.cast %c : tensor<5xi64> to tensor<*xi64>
  func.call @printMemrefI64(%u) : (tensor<*xi64>) -> ()
  return
}

func.func @main() {

  // integer_pow: 7^3, (-7)^3, 5^0, wrapping, 0^5.
  %ipa = ember.constant dense<[7, -7, 5, 65536, 0]> : tensor<5xi32>
  // CHECK: [343,  -343,  125,  0,  0]
  %ip0 = ember.integer_pow %ipa, y = 3 : tensor<5xi32>
  %ip1 = ember.integer_pow %ipa, y = 0 : tensor<5xi32>
  %ip2 = ember.integer_pow %ipa, y = 2 : tensor<5xi32>
  %ip3 = ember.integer_pow %ipa, y = 5 : tensor<5xi32>
  func.call @print(%ip0) : (tensor<5xi32>) -> ()
  // CHECK: [1,  1,  1,  1,  1]
  func.call @print(%ip1) : (tensor<5xi32>) -> ()
  // CHECK: [49,  49,  25,  0,  0]
  func.call @print(%ip2) : (tensor<5xi32>) -> ()
  // CHECK: [16807,  -16807,  3125,  0,  0]
  func.call @print(%ip3) : (tensor<5xi32>) -> ()
  %a = ember.constant dense<[7, -7, 5, -2147483648, 0]> : tensor<5xi32>
  %b = ember.constant dense<[2, 2, 0, -1, 0]> : tensor<5xi32>
  // CHECK: [3,  -3,  -1,  -2147483648,  -1]
  %0 = ember.div %a, %b : tensor<5xi32>
  func.call @print(%0) : (tensor<5xi32>) -> ()
  // CHECK: [1,  -1,  5,  0,  0]
  %1 = ember.rem %a, %b : tensor<5xi32>
  func.call @print(%1) : (tensor<5xi32>) -> ()

  %ua = ember.constant dense<[7, 4294967295, 5, 10, 9]> : tensor<5xui32>
  %ub = ember.constant dense<[2, 2, 0, 3, 0]> : tensor<5xui32>
  // CHECK: [3,  2147483647,  4294967295,  3,  4294967295]
  %2 = ember.div %ua, %ub : tensor<5xui32>
  func.call @printu(%2) : (tensor<5xui32>) -> ()
  // CHECK: [1,  1,  5,  1,  9]
  %3 = ember.rem %ua, %ub : tensor<5xui32>
  func.call @printu(%3) : (tensor<5xui32>) -> ()

  %x = ember.constant dense<[1, -8, -8, 1, 16]> : tensor<5xi32>
  %s = ember.constant dense<[31, 32, 1, 33, -1]> : tensor<5xi32>
  // CHECK: [-2147483648,  0,  -16,  0,  0]
  %4 = ember.shift_left %x, %s : tensor<5xi32>
  func.call @print(%4) : (tensor<5xi32>) -> ()
  // CHECK: [0,  0,  2147483644,  0,  0]
  %5 = ember.shift_right_logical %x, %s : tensor<5xi32>
  func.call @print(%5) : (tensor<5xi32>) -> ()
  // CHECK: [0,  -1,  -4,  0,  0]
  %6 = ember.shift_right_arithmetic %x, %s : tensor<5xi32>
  func.call @print(%6) : (tensor<5xi32>) -> ()

  %p = ember.constant dense<[0, 7, -1, 256, -2147483648]> : tensor<5xi32>
  // CHECK: [0,  3,  32,  1,  1]
  %7 = ember.population_count %p : tensor<5xi32>
  func.call @print(%7) : (tensor<5xi32>) -> ()
  // CHECK: [32,  29,  0,  23,  0]
  %8 = ember.clz %p : tensor<5xi32>
  func.call @print(%8) : (tensor<5xi32>) -> ()

  // Signed vs unsigned comparison of the same bits.
  %sl = ember.constant dense<[1, -1, 0, -2, 5]> : tensor<5xi32>
  %sr = ember.constant dense<[2, 1, -1, -1, 5]> : tensor<5xi32>
  // CHECK: [1,  1,  0,  1,  0]
  %9 = ember.compare LT, %sl, %sr : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi1>
  %b9 = ember.convert %9 : (tensor<5xi1>) -> tensor<5xi32>
  func.call @print(%b9) : (tensor<5xi32>) -> ()
  %ul = ember.bitcast_convert %sl : (tensor<5xi32>) -> tensor<5xui32>
  %ur = ember.bitcast_convert %sr : (tensor<5xi32>) -> tensor<5xui32>
  // CHECK: [1,  0,  1,  1,  0]
  %10 = ember.compare LT, %ul, %ur : (tensor<5xui32>, tensor<5xui32>) -> tensor<5xi1>
  %b10 = ember.convert %10 : (tensor<5xi1>) -> tensor<5xi32>
  func.call @print(%b10) : (tensor<5xi32>) -> ()
  // CHECK: [0,  1,  0,  0,  1]
  %11 = ember.compare GE, %ul, %ur : (tensor<5xui32>, tensor<5xui32>) -> tensor<5xi1>
  %b11 = ember.convert %11 : (tensor<5xi1>) -> tensor<5xi32>
  func.call @print(%b11) : (tensor<5xi32>) -> ()
  // Unsigned max / min.
  // CHECK: [2,  4294967295,  4294967295,  4294967295,  5]
  %12 = ember.max %ul, %ur : tensor<5xui32>
  func.call @printu(%12) : (tensor<5xui32>) -> ()

  // Conversions: ui8 zero-extends, i8 sign-extends, i32 -> ui32 keeps bits.
  %u8 = ember.constant dense<[255, 128, 0, 1, 127]> : tensor<5xui8>
  // CHECK: [255,  128,  0,  1,  127]
  %13 = ember.convert %u8 : (tensor<5xui8>) -> tensor<5xi32>
  func.call @print(%13) : (tensor<5xi32>) -> ()
  %s8 = ember.bitcast_convert %u8 : (tensor<5xui8>) -> tensor<5xi8>
  // CHECK: [-1,  -128,  0,  1,  127]
  %14 = ember.convert %s8 : (tensor<5xi8>) -> tensor<5xi32>
  func.call @print(%14) : (tensor<5xi32>) -> ()
  // CHECK: [1,  4294967295,  0,  4294967294,  5]
  %15 = ember.convert %sl : (tensor<5xi32>) -> tensor<5xui32>
  func.call @printu(%15) : (tensor<5xui32>) -> ()
  // i32 -> i8 truncates.
  %big = ember.constant dense<[256, 257, -129, 127, 128]> : tensor<5xi32>
  %16 = ember.convert %big : (tensor<5xi32>) -> tensor<5xi8>
  // CHECK: [0,  1,  127,  127,  -128]
  %17 = ember.convert %16 : (tensor<5xi8>) -> tensor<5xi32>
  func.call @print(%17) : (tensor<5xi32>) -> ()
  // abs / neg / sign on signed ints.
  // CHECK: [1,  1,  0,  2,  5]
  %18 = ember.abs %sl : tensor<5xi32>
  func.call @print(%18) : (tensor<5xi32>) -> ()
  // CHECK: [1,  -1,  0,  -1,  1]
  %19 = ember.sign %sl : tensor<5xi32>
  func.call @print(%19) : (tensor<5xi32>) -> ()
  return
}
