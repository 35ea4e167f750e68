// RUN: ember-opt %s --ember-cpu-pipeline | mlir-runner -e main --entry-point-result=void -shared-libs=%c_runner_utils,%runner_utils | FileCheck %s

// threefry2x32 known answers (the Random123 threefry2x32_20 test vectors,
// reproduced with a pure-Python implementation), and iota.
//   key (0, 0),             counter (0, 0)             -> 0x6b200159 0x99ba4efe
//   key (~0, ~0),           counter (~0, ~0)           -> 0x1cb996fc 0xbb002be7
//   key (0x13198a2e, 0x03707344), ctr (0x243f6a88, 0x85a308d3) -> 0xc4923a9c 0x483df7a0
// Printed as i32 (bitcast).

func.func private @printMemrefI32(tensor<*xi32>) attributes {llvm.emit_c_interface}
func.func private @printMemrefF64(tensor<*xf64>) attributes {llvm.emit_c_interface}

func.func @main() {
  %k0 = ember.constant dense<[0, 4294967295, 320440878]> : tensor<3xui32>
  %k1 = ember.constant dense<[0, 4294967295, 57701188]> : tensor<3xui32>
  %x0 = ember.constant dense<[0, 4294967295, 608135816]> : tensor<3xui32>
  %x1 = ember.constant dense<[0, 4294967295, 2242054355]> : tensor<3xui32>
  %r:2 = ember.threefry2x32 %k0, %k1, %x0, %x1 : tensor<3xui32>
  %a = ember.bitcast_convert %r#0 : (tensor<3xui32>) -> tensor<3xi32>
  %b = ember.bitcast_convert %r#1 : (tensor<3xui32>) -> tensor<3xi32>
  // CHECK: [1797259609,  481924860,  -997049700]
  %ua = tensor.cast %a : tensor<3xi32> to tensor<*xi32>
  func.call @printMemrefI32(%ua) : (tensor<*xi32>) -> ()
  // CHECK: [-1715843330,  -1157616665,  1212020640]
  %ub = tensor.cast %b : tensor<3xi32> to tensor<*xi32>
  func.call @printMemrefI32(%ub) : (tensor<*xi32>) -> ()

  // iota along each dimension, integer and float.
  // CHECK: {{\[\[}}0,   0,   0],
  // CHECK-NEXT: [1,   1,   1]]
  %i0 = ember.iota dim = 0 : tensor<2x3xi32>
  %ui0 = tensor.cast %i0 : tensor<2x3xi32> to tensor<*xi32>
  func.call @printMemrefI32(%ui0) : (tensor<*xi32>) -> ()
  // CHECK: {{\[\[}}0,   1,   2],
  // CHECK-NEXT: [0,   1,   2]]
  %i1 = ember.iota dim = 1 : tensor<2x3xi32>
  %ui1 = tensor.cast %i1 : tensor<2x3xi32> to tensor<*xi32>
  func.call @printMemrefI32(%ui1) : (tensor<*xi32>) -> ()
  // CHECK: [0,  1,  2,  3]
  %i2 = ember.iota dim = 0 : tensor<4xf64>
  %ui2 = tensor.cast %i2 : tensor<4xf64> to tensor<*xf64>
  func.call @printMemrefF64(%ui2) : (tensor<*xf64>) -> ()
  return
}
