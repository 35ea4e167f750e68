// Invalid IR gives a diagnostic and a failing exit status, not a crash.
// RUN: not ember-opt %s 2>&1 | FileCheck %s
// RUN: not ember-opt %s -ember-to-linalg 2>&1 | FileCheck %s
// Parse errors too.
// RUN: echo 'func.func @f(%a: tensor<2xf32>) { %0 = ember.add %a : tensor<2xf32> }' | not ember-opt 2>&1 | FileCheck %s --check-prefix=PARSE
// An unknown op in the ember dialect.
// RUN: echo '"ember.frobnicate"() : () -> ()' | not ember-opt 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// The lowering reports ops it cannot lower instead of crashing.
// RUN: echo 'func.func @f(%a: tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>> { %0 = ember.max %a, %a : tensor<2xcomplex<f32>> return %0 : tensor<2xcomplex<f32>> }' | not ember-opt -ember-to-linalg 2>&1 | FileCheck %s --check-prefix=LOWER

// CHECK: error: slice_c3: stride 0 of dimension 0 must be positive
// CHECK: error: 'ember.slice' op failed to infer returned types
// PARSE: error: expected ','
// UNKNOWN: error: {{.*}}ember.frobnicate
// LOWER: error: failed to legalize operation 'ember.max'

func.func @f(%a: tensor<4xf32>) -> tensor<2xf32> {
  %0 = ember.slice %a, start = [0], limit = [2], strides = [0] : (tensor<4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
