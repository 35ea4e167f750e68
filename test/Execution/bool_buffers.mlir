// RUN: ember-opt %s --ember-cpu-pipeline | mlir-runner -e main --entry-point-result=void -shared-libs=%c_runner_utils,%runner_utils | FileCheck %s

// Bools that do not fuse away: constants used several times, bools passed
// between functions, structural ops and reductions on bools (stored as bytes).

func.func private @printMemrefI32(tensor<*xi32>) attributes {llvm.emit_c_interface}

func.func @printb(%t: tensor<5xi1>) {
  %c = ember.convert %t : (tensor<5xi1>) -> tensor<5xi32>
  %u = tensor.cast %c : tensor<5xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u) : (tensor<*xi32>) -> ()
  return
}

func.func @main() {
  %p = ember.constant dense<[true, true, false, false, true]> : tensor<5xi1>
  %q = ember.constant dense<[true, false, true, false, false]> : tensor<5xi1>
  // CHECK: [1,  0,  0,  0,  0]
  %0 = ember.and %p, %q : tensor<5xi1>
  func.call @printb(%0) : (tensor<5xi1>) -> ()
  // CHECK: [1,  1,  1,  0,  1]
  %1 = ember.or %p, %q : tensor<5xi1>
  func.call @printb(%1) : (tensor<5xi1>) -> ()
  // CHECK: [0,  1,  1,  0,  1]
  %2 = ember.xor %p, %q : tensor<5xi1>
  func.call @printb(%2) : (tensor<5xi1>) -> ()
  // CHECK: [0,  0,  1,  1,  0]
  %3 = ember.not %p : tensor<5xi1>
  func.call @printb(%3) : (tensor<5xi1>) -> ()
  // CHECK: [1,  0,  1,  1,  0]
  %4 = ember.reverse %2, dims = [0] : tensor<5xi1>
  func.call @printb(%4) : (tensor<5xi1>) -> ()

  // Compare, transpose and an or-reduction of a 2-d bool tensor.
  %sl = ember.constant dense<[[1, -1, 0], [-2, 5, 3]]> : tensor<2x3xi32>
  %sr = ember.constant dense<[[2, 1, -1], [-1, 5, 9]]> : tensor<2x3xi32>
  %lt = ember.compare LT, %sl, %sr : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  %t = ember.transpose %lt, dims = [1, 0] : (tensor<2x3xi1>) -> tensor<3x2xi1>
  %any = ember.reduce or %t, dims = [1] : (tensor<3x2xi1>) -> tensor<3xi1>
  %all = ember.reduce and %t, dims = [1] : (tensor<3x2xi1>) -> tensor<3xi1>
  %cat = ember.concatenate dim = 0, %any, %all : (tensor<3xi1>, tensor<3xi1>) -> tensor<6xi1>
  %ci = ember.convert %cat : (tensor<6xi1>) -> tensor<6xi32>
  // CHECK: [1,  1,  1,  1,  0,  0]
  %u = tensor.cast %ci : tensor<6xi32> to tensor<*xi32>
  func.call @printMemrefI32(%u) : (tensor<*xi32>) -> ()
  return
}
