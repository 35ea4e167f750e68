// RUN: ember-opt %s -ember-hoist-scan-inputs -split-input-file | FileCheck %s
// RUN: ember-opt %s -ember-hoist-scan-inputs -ember-batch -symbol-dce -canonicalize -cse -split-input-file | FileCheck %s --check-prefix=BATCHED

// The RNN step: x_t @ Wx depends only on row t of %xs and on %wx, so all
// rows' products are one vmap before the loop; the loop reads row t of it.
// h @ Wh depends on the carry and stays.
// CHECK-LABEL: func @rnn
// CHECK: %[[ALL:.*]] = ember.vmap @scan_inputs(%[[XS:.*]], %[[WX:.*]]) batched [true, false] size 5 : (tensor<5x2x4xf32>, tensor<4x3xf32>) -> tensor<5x2x3xf32>
// CHECK: ember.while
// CHECK: } do {
// CHECK: ^bb0(%[[I:.*]]: tensor<i32>, %[[H:.*]]: tensor<2x3xf32>):
// CHECK: %[[ROW:.*]] = ember.dynamic_slice %[[ALL]][%[[I]], %{{.*}}, %{{.*}}], sizes = [1, 2, 3]
// CHECK: %[[U:.*]] = ember.reshape %[[ROW]] : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
// CHECK-NOT: ember.dynamic_slice %{{.*}}xs
// CHECK: %[[HW:.*]] = ember.dot_general %[[H]], %{{.*}}
// CHECK: ember.add %[[HW]], %[[U]]
// CHECK: func.func private @scan_inputs(%{{.*}}: tensor<2x4xf32>, %{{.*}}: tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK: ember.dot_general
// BATCHED-LABEL: func @rnn
// BATCHED: %[[ALL:.*]] = ember.dot_general %{{.*}}, %{{.*}}, batch = [] x [], contract = [2] x [0] : (tensor<5x2x4xf32>, tensor<4x3xf32>) -> tensor<5x2x3xf32>
// BATCHED: ember.while
// BATCHED: ember.dynamic_slice %[[ALL]]
// BATCHED-NOT: func.func private @scan_inputs
func.func @rnn(%wh: tensor<3x3xf32>, %wx: tensor<4x3xf32>, %xs: tensor<5x2x4xf32>, %h0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %zero = ember.constant dense<0> : tensor<i32>
  %r:2 = ember.while(%zero, %h0) {trip_count = 5 : i64} : tensor<i32>, tensor<2x3xf32> cond {
  ^bb0(%i: tensor<i32>, %h: tensor<2x3xf32>):
    %n = ember.constant dense<5> : tensor<i32>
    %p = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %h: tensor<2x3xf32>):
    %z = ember.constant dense<0> : tensor<i32>
    %s = ember.dynamic_slice %xs[%i, %z, %z], sizes = [1, 2, 4] : (tensor<5x2x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x2x4xf32>
    %x = ember.reshape %s : (tensor<1x2x4xf32>) -> tensor<2x4xf32>
    %hw = ember.dot_general %h, %wh, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
    %xw = ember.dot_general %x, %wx, batch = [] x [], contract = [1] x [0] : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %a = ember.add %hw, %xw : tensor<2x3xf32>
    %t = ember.tanh %a : tensor<2x3xf32>
    %one = ember.constant dense<1> : tensor<i32>
    %i1 = ember.add %i, %one : tensor<i32>
    ember.yield %i1, %t : tensor<i32>, tensor<2x3xf32>
  }
  return %r#1 : tensor<2x3xf32>
}

// -----

// A reverse scan over rows 1..4 of a 6-row array (counter from 2, row
// 6 - i): the rows read are sliced out first, and the loop reads row
// (6 - i) - 1 of the results.
// CHECK-LABEL: func @reverse_rows
// CHECK: %[[ROWS:.*]] = ember.slice %{{.*}}, start = [1, 0], limit = [5, 3], strides = [1, 1] : (tensor<6x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[ALL:.*]] = ember.vmap @scan_inputs(%[[ROWS]], %{{.*}}) batched [true, false] size 4
// CHECK: } do {
// CHECK: %[[K:.*]] = ember.sub %{{.*}}, %{{.*}} : tensor<i32>
// CHECK: %[[LO:.*]] = ember.constant dense<1> : tensor<i32>
// CHECK: %[[J:.*]] = ember.sub %[[K]], %[[LO]] : tensor<i32>
// CHECK: ember.dynamic_slice %[[ALL]][%[[J]], %{{.*}}, %{{.*}}], sizes = [1, 1, 2]
func.func @reverse_rows(%xs: tensor<6x3xf32>, %w: tensor<3x2xf32>) -> tensor<1x2xf32> {
  %two = ember.constant dense<2> : tensor<i32>
  %acc0 = ember.constant dense<0.0> : tensor<1x2xf32>
  %r:2 = ember.while(%two, %acc0) {trip_count = 4 : i64} : tensor<i32>, tensor<1x2xf32> cond {
  ^bb0(%i: tensor<i32>, %acc: tensor<1x2xf32>):
    %n = ember.constant dense<6> : tensor<i32>
    %p = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %acc: tensor<1x2xf32>):
    %six = ember.constant dense<6> : tensor<i32>
    %k = ember.sub %six, %i : tensor<i32>
    %z = ember.constant dense<0> : tensor<i32>
    %s = ember.dynamic_slice %xs[%k, %z], sizes = [1, 3] : (tensor<6x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>
    %y = ember.dot_general %s, %w, batch = [] x [], contract = [1] x [0] : (tensor<1x3xf32>, tensor<3x2xf32>) -> tensor<1x2xf32>
    %a = ember.add %acc, %y : tensor<1x2xf32>
    %one = ember.constant dense<1> : tensor<i32>
    %i1 = ember.add %i, %one : tensor<i32>
    ember.yield %i1, %a : tensor<i32>, tensor<1x2xf32>
  }
  return %r#1 : tensor<1x2xf32>
}

// -----

// Not hoisted: only elementwise work on the row (no contraction to batch),
// a product with the carry, rows read out of bounds (clamped), and a loop
// without a trip count.
// CHECK-LABEL: func @kept
// CHECK-NOT: ember.vmap
// CHECK: return
func.func @kept(%xs: tensor<4x3xf32>, %w: tensor<3x3xf32>, %c0: tensor<1x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>) {
  %zero = ember.constant dense<0> : tensor<i32>
  %a:2 = ember.while(%zero, %c0) {trip_count = 4 : i64} : tensor<i32>, tensor<1x3xf32> cond {
  ^bb0(%i: tensor<i32>, %c: tensor<1x3xf32>):
    %n = ember.constant dense<4> : tensor<i32>
    %p = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %c: tensor<1x3xf32>):
    %z = ember.constant dense<0> : tensor<i32>
    %s = ember.dynamic_slice %xs[%i, %z], sizes = [1, 3] : (tensor<4x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>
    %e = ember.exp %s : tensor<1x3xf32>
    %m = ember.mul %e, %c : tensor<1x3xf32>
    %cw = ember.dot_general %m, %w, batch = [] x [], contract = [1] x [0] : (tensor<1x3xf32>, tensor<3x3xf32>) -> tensor<1x3xf32>
    %one = ember.constant dense<1> : tensor<i32>
    %i1 = ember.add %i, %one : tensor<i32>
    ember.yield %i1, %cw : tensor<i32>, tensor<1x3xf32>
  }
  %b:2 = ember.while(%zero, %c0) {trip_count = 4 : i64} : tensor<i32>, tensor<1x3xf32> cond {
  ^bb0(%i: tensor<i32>, %c: tensor<1x3xf32>):
    %n = ember.constant dense<4> : tensor<i32>
    %p = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %c: tensor<1x3xf32>):
    %one = ember.constant dense<1> : tensor<i32>
    %k = ember.add %i, %one : tensor<i32>
    %z = ember.constant dense<0> : tensor<i32>
    %s = ember.dynamic_slice %xs[%k, %z], sizes = [1, 3] : (tensor<4x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>
    %sw = ember.dot_general %s, %w, batch = [] x [], contract = [1] x [0] : (tensor<1x3xf32>, tensor<3x3xf32>) -> tensor<1x3xf32>
    %d = ember.add %c, %sw : tensor<1x3xf32>
    %i1 = ember.add %i, %one : tensor<i32>
    ember.yield %i1, %d : tensor<i32>, tensor<1x3xf32>
  }
  %c:2 = ember.while(%zero, %c0) : tensor<i32>, tensor<1x3xf32> cond {
  ^bb0(%i: tensor<i32>, %c: tensor<1x3xf32>):
    %n = ember.constant dense<4> : tensor<i32>
    %p = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %c: tensor<1x3xf32>):
    %z = ember.constant dense<0> : tensor<i32>
    %s = ember.dynamic_slice %xs[%i, %z], sizes = [1, 3] : (tensor<4x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>
    %sw = ember.dot_general %s, %w, batch = [] x [], contract = [1] x [0] : (tensor<1x3xf32>, tensor<3x3xf32>) -> tensor<1x3xf32>
    %d = ember.add %c, %sw : tensor<1x3xf32>
    %one = ember.constant dense<1> : tensor<i32>
    %i1 = ember.add %i, %one : tensor<i32>
    ember.yield %i1, %d : tensor<i32>, tensor<1x3xf32>
  }
  return %a#1, %b#1, %c#1 : tensor<1x3xf32>, tensor<1x3xf32>, tensor<1x3xf32>
}
