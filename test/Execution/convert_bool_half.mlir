// RUN: ember-opt %s --ember-cpu-pipeline | mlir-runner -e main --entry-point-result=void -shared-libs=%c_runner_utils,%runner_utils | FileCheck %s

// Float -> int conversion truncates toward zero, saturates out-of-range
// values and maps NaN to 0; bool ops; f16 / bf16 arithmetic rounds once.

func.func private @printMemrefI32(tensor<*xi32>) attributes {llvm.emit_c_interface}
func.func private @printMemrefF32(tensor<*xf32>) attributes {llvm.emit_c_interface}

func.func @printi(%t: tensor<8xi32>) {
  %u = tensor.cast %t : tensor<8xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u) : (tensor<*xi32>) -> ()
  return
}
func.func @printf(%t: tensor<4xf32>) {
  %u = tensor.cast %t : tensor<4xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @bool_and(%a: tensor<8xi32>, %b: tensor<8xi32>) {
  %z = ember.constant dense<0> : tensor<8xi32>
  %p = ember.compare NE, %a, %z : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %q = ember.compare NE, %b, %z : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %r = ember.and %p, %q : tensor<8xi1>
  %i = ember.convert %r : (tensor<8xi1>) -> tensor<8xi32>
  func.call @printi(%i) : (tensor<8xi32>) -> ()
  return
}
func.func @bool_or(%a: tensor<8xi32>, %b: tensor<8xi32>) {
  %z = ember.constant dense<0> : tensor<8xi32>
  %p = ember.compare NE, %a, %z : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %q = ember.compare NE, %b, %z : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %r = ember.or %p, %q : tensor<8xi1>
  %i = ember.convert %r : (tensor<8xi1>) -> tensor<8xi32>
  func.call @printi(%i) : (tensor<8xi32>) -> ()
  return
}
func.func @bool_xor(%a: tensor<8xi32>, %b: tensor<8xi32>) {
  %z = ember.constant dense<0> : tensor<8xi32>
  %p = ember.compare NE, %a, %z : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %q = ember.compare NE, %b, %z : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %r = ember.xor %p, %q : tensor<8xi1>
  %i = ember.convert %r : (tensor<8xi1>) -> tensor<8xi32>
  func.call @printi(%i) : (tensor<8xi32>) -> ()
  return
}
func.func @bool_add(%a: tensor<8xi32>, %b: tensor<8xi32>) {
  %z = ember.constant dense<0> : tensor<8xi32>
  %p = ember.compare NE, %a, %z : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %q = ember.compare NE, %b, %z : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %r = ember.add %p, %q : tensor<8xi1>
  %i = ember.convert %r : (tensor<8xi1>) -> tensor<8xi32>
  func.call @printi(%i) : (tensor<8xi32>) -> ()
  return
}
func.func @bool_mul(%a: tensor<8xi32>, %b: tensor<8xi32>) {
  %z = ember.constant dense<0> : tensor<8xi32>
  %p = ember.compare NE, %a, %z : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %q = ember.compare NE, %b, %z : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %r = ember.mul %p, %q : tensor<8xi1>
  %i = ember.convert %r : (tensor<8xi1>) -> tensor<8xi32>
  func.call @printi(%i) : (tensor<8xi32>) -> ()
  return
}
func.func @bool_not(%a: tensor<8xi32>) {
  %z = ember.constant dense<0> : tensor<8xi32>
  %p = ember.compare NE, %a, %z : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %r = ember.not %p : tensor<8xi1>
  %i = ember.convert %r : (tensor<8xi1>) -> tensor<8xi32>
  func.call @printi(%i) : (tensor<8xi32>) -> ()
  return
}
func.func @bool_select(%a: tensor<8xi32>) {
  %z = ember.constant dense<0> : tensor<8xi32>
  %p = ember.compare NE, %a, %z : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi1>
  %x = ember.constant dense<[1, 2, 3, 4, 5, 6, 7, 8]> : tensor<8xi32>
  %y = ember.constant dense<[-1, -2, -3, -4, -5, -6, -7, -8]> : tensor<8xi32>
  %r = ember.select %p, %x, %y : tensor<8xi1>, tensor<8xi32>
  func.call @printi(%r) : (tensor<8xi32>) -> ()
  return
}

func.func @main() {
  %f = ember.constant dense<[1.9, -1.9, 3.0e9, -3.0e9, 0x7FC00000, 0x7F800000, 0xFF800000, 2147483520.0]> : tensor<8xf32>
  // CHECK: [1,  -1,  2147483647,  -2147483648,  0,  2147483647,  -2147483648,  2147483520]
  %0 = ember.convert %f : (tensor<8xf32>) -> tensor<8xi32>
  func.call @printi(%0) : (tensor<8xi32>) -> ()
  // To ui8: negative -> 0, too large -> 255, NaN -> 0.
  %g = ember.constant dense<[-1.0, 300.0, 255.9, 0x7FC00000, 0.5, 128.0, -0.5, 7.99]> : tensor<8xf32>
  %1 = ember.convert %g : (tensor<8xf32>) -> tensor<8xui8>
  // CHECK: [0,  255,  255,  0,  0,  128,  0,  7]
  %2 = ember.convert %1 : (tensor<8xui8>) -> tensor<8xi32>
  func.call @printi(%2) : (tensor<8xi32>) -> ()
  // Float -> bool is x != 0 (NaN is true); bool -> int is 0 / 1.
  // CHECK: [1,  1,  1,  1,  1,  1,  1,  1]
  %3 = ember.convert %g : (tensor<8xf32>) -> tensor<8xi1>
  %4 = ember.convert %3 : (tensor<8xi1>) -> tensor<8xi32>
  func.call @printi(%4) : (tensor<8xi32>) -> ()

  // Bool ops (see bool_buffers.mlir for bools that are materialized).
  %pi = ember.constant dense<[1, 1, 0, 0, 1, 0, 1, 0]> : tensor<8xi32>
  %qi = ember.constant dense<[1, 0, 1, 0, 1, 0, 0, 1]> : tensor<8xi32>
  // CHECK: [1,  0,  0,  0,  1,  0,  0,  0]
  func.call @bool_and(%pi, %qi) : (tensor<8xi32>, tensor<8xi32>) -> ()
  // CHECK: [1,  1,  1,  0,  1,  0,  1,  1]
  func.call @bool_or(%pi, %qi) : (tensor<8xi32>, tensor<8xi32>) -> ()
  // CHECK: [0,  1,  1,  0,  0,  0,  1,  1]
  func.call @bool_xor(%pi, %qi) : (tensor<8xi32>, tensor<8xi32>) -> ()
  // CHECK: [0,  0,  1,  1,  0,  1,  0,  1]
  func.call @bool_not(%pi) : (tensor<8xi32>) -> ()
  // bool add is or, bool mul is and.
  // CHECK: [1,  1,  1,  0,  1,  0,  1,  1]
  func.call @bool_add(%pi, %qi) : (tensor<8xi32>, tensor<8xi32>) -> ()
  // CHECK: [1,  0,  0,  0,  1,  0,  0,  0]
  func.call @bool_mul(%pi, %qi) : (tensor<8xi32>, tensor<8xi32>) -> ()
  // select picks on_true where pred holds.
  // CHECK: [1,  2,  -3,  -4,  5,  -6,  7,  -8]
  func.call @bool_select(%pi) : (tensor<8xi32>) -> ()

  // f16: 0.1 + 0.2 rounds to 0.2998046875; 65504 + 65504 overflows to inf;
  // 2048 + 1 rounds to even (2048).
  %h1 = ember.constant dense<[1.0, 0.1, 65504.0, 2048.0]> : tensor<4xf16>
  %h2 = ember.constant dense<[1.0, 0.2, 65504.0, 1.0]> : tensor<4xf16>
  %h = ember.add %h1, %h2 : tensor<4xf16>
  %hf = ember.convert %h : (tensor<4xf16>) -> tensor<4xf32>
  // CHECK: [2,  0.299805,  inf,  2048]
  func.call @printf(%hf) : (tensor<4xf32>) -> ()
  // bf16: 256 + 1 rounds to even (256), 1 + 1/128 is exact, 3 * 3 = 9.
  %b1 = ember.constant dense<[256.0, 1.0, 3.0, 0.1]> : tensor<4xbf16>
  %b2 = ember.constant dense<[1.0, 0.0078125, 3.0, 0.0]> : tensor<4xbf16>
  %bs = ember.add %b1, %b2 : tensor<4xbf16>
  %bsf = ember.convert %bs : (tensor<4xbf16>) -> tensor<4xf32>
  // CHECK: [256,  1.00781,  6,  0.100098]
  func.call @printf(%bsf) : (tensor<4xf32>) -> ()
  %bm = ember.mul %b1, %b2 : tensor<4xbf16>
  %bmf = ember.convert %bm : (tensor<4xbf16>) -> tensor<4xf32>
  // CHECK: [256,  0.0078125,  9,  0]
  func.call @printf(%bmf) : (tensor<4xf32>) -> ()
  // f32 -> f16 rounds to nearest and overflows to inf.
  %w = ember.constant dense<[1.0e5, 0.1, -1.0e5, 3.0]> : tensor<4xf32>
  %wh = ember.convert %w : (tensor<4xf32>) -> tensor<4xf16>
  %whf = ember.convert %wh : (tensor<4xf16>) -> tensor<4xf32>
  // CHECK: [inf,  0.0999756,  -inf,  3]
  func.call @printf(%whf) : (tensor<4xf32>) -> ()
  return
}
