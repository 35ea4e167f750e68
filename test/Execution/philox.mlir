// RUN: ember-opt %s --ember-cpu-pipeline | mlir-runner -e main --entry-point-result=void -shared-libs=%c_runner_utils,%runner_utils | FileCheck %s

// philox4x32 known answers (the Random123 philox4x32_10 test vectors):
//   key (0, 0),           counter (0, 0, 0, 0)
//     -> 0x6627e8d5 0xe169c58d 0xbc57ac4c 0x9b00dbd8
//   key (~0, ~0),         counter (~0, ~0, ~0, ~0)
//     -> 0x408f276d 0x41c83b0e 0xa20bc7c6 0x6d5451fd
//   key (0xa4093822, 0x299f31d0),
//   counter (0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344)
//     -> 0xd16cfe09 0x94fdcceb 0x5001e420 0x24126ea1
// Printed as i32 (bitcast), one output word per line.

func.func private @printMemrefI32(tensor<*xi32>) attributes {llvm.emit_c_interface}

func.func @print(%r: tensor<3xui32>) {
  %a = ember.bitcast_convert %r : (tensor<3xui32>) -> tensor<3xi32>
  %u = tensor.cast %a : tensor<3xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u) : (tensor<*xi32>) -> ()
  return
}

func.func @main() {
  %k0 = ember.constant dense<[0, 4294967295, 2752067618]> : tensor<3xui32>
  %k1 = ember.constant dense<[0, 4294967295, 698298832]> : tensor<3xui32>
  %x0 = ember.constant dense<[0, 4294967295, 608135816]> : tensor<3xui32>
  %x1 = ember.constant dense<[0, 4294967295, 2242054355]> : tensor<3xui32>
  %x2 = ember.constant dense<[0, 4294967295, 320440878]> : tensor<3xui32>
  %x3 = ember.constant dense<[0, 4294967295, 57701188]> : tensor<3xui32>
  %r:4 = ember.philox4x32 %k0, %k1, %x0, %x1, %x2, %x3 : tensor<3xui32>
  // CHECK: [1713891541,  1083123565,  -781386231]
  func.call @print(%r#0) : (tensor<3xui32>) -> ()
  // CHECK: [-513161843,  1103641358,  -1795306261]
  func.call @print(%r#1) : (tensor<3xui32>) -> ()
  // CHECK: [-1135104948,  -1576286266,  1342301216]
  func.call @print(%r#2) : (tensor<3xui32>) -> ()
  // CHECK: [-1694442536,  1834242557,  605187745]
  func.call @print(%r#3) : (tensor<3xui32>) -> ()
  return
}
