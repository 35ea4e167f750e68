// RUN: not ember-opt %s 2>&1 | FileCheck %s
//
// A parse error in ember.while's body after the cond region used a value the
// body defines (a forward reference resolved across the regions) is a
// diagnostic and a non-zero exit; it used to abort ("operation destroyed but
// still has uses") when the regions were destroyed body first. Found by
// tools/fuzz/ember_opt_mutate.py --seed 2.

// CHECK: error: redefinition of block '^bb0'
// CHECK-NOT: destroyed but still has uses
func.func @f(%w: tensor<4x4xf32>, %h0: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %zero = ember.constant dense<0> : tensor<i32>
  %r:2 = ember.while(%zero, %h0) : tensor<i32>, tensor<2x4xf32> cond {
    %i1 = ember.add %i, %one : tensor<i32>
    %p = ember.compare LT, %i1, %i1 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %h: tensor<2x4xf32>):
    %one = ember.constant dense<1> : tensor<i32>
  ^bb0(%j: tensor<i32>, %g: tensor<2x4xf32>):
    ember.yield %j, %g : tensor<i32>, tensor<2x4xf32>
  }
  return %r#1 : tensor<2x4xf32>
}

