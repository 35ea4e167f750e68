// RUN: not ember-opt %s 2>&1 | FileCheck %s
//
// A forward reference made before the function (%c, %one) resolved to a block
// argument of ember.while's region, then a parse error: a diagnostic and a
// non-zero exit, not an abort ("Cannot destroy a value that still has uses").
// Found by tools/fuzz/ember_opt_mutate.py --seed 2.

// CHECK: error: redefinition of SSA value '%n'
// CHECK-NOT: still has uses
    %n = ember.add %c, %one : tensor<i32>
func.func @while_loop(%x: tensor<i32>) -> tensor<i32> {
  %ten = ember.constant dense<10> : tensor<i32>
  %one = ember.constant dense<1> : tensor<i32>
  %r = ember.while(%x) : tensor<i32> cond {
  ^bb0(%c: tensor<i32>):
    %p = ember.compare LT, %c, %ten : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
    %n = ember.add %c, %one : tensor<i32>
    ember.yield %n : tensor<i32>
  }
  return %r : tensor<i32>
}
