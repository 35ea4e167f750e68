// RUN: ember-opt %s -ember-autodiff -symbol-dce -canonicalize -cse -split-input-file | FileCheck %s

// The gradient of sum(tanh(W @ x)) with respect to W is compact: one forward
// contraction, tanh, tanh's derivative in JAX's form (the transpose of
// (t + t y)(1 - y): c (1 - y) + c (1 - y) y, the same rounding as JAX's),
// and one outer product; no zero tangents.
// CHECK-LABEL: func @grad_tanh_matvec
// CHECK-NEXT: ember.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT: ember.dot_general {{.*}} contract = [1] x [0]
// CHECK-NEXT: %[[Y:.*]] = ember.tanh
// CHECK-NEXT: %[[C:.*]] = ember.sub %{{.*}}, %[[Y]]
// CHECK-NEXT: %[[CY:.*]] = ember.mul %[[C]], %[[Y]]
// CHECK-NEXT: ember.add %[[C]], %[[CY]]
// CHECK-NEXT: ember.dot_general {{.*}} contract = [] x []
// CHECK-NEXT: return
func.func private @f(%w: tensor<4x3xf32>, %x: tensor<3xf32>) -> tensor<f32> {
  %0 = ember.dot_general %w, %x, batch = [] x [], contract = [1] x [0] : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4xf32>
  %1 = ember.tanh %0 : tensor<4xf32>
  %2 = ember.reduce sum %1, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}
func.func @grad_tanh_matvec(%w: tensor<4x3xf32>, %x: tensor<3xf32>) -> tensor<4x3xf32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @f(%w, %x) cotangents(%one) wrt [0] : (tensor<4x3xf32>, tensor<3xf32>, tensor<f32>) -> (tensor<f32>, tensor<4x3xf32>)
  return %g : tensor<4x3xf32>
}

// -----

// A product's precision stays on the products its derivatives are made of
// (VJP: both transposed products, the forward one unused; JVP: the
// primal and both tangent products).
// CHECK-LABEL: func @precision_kept
// CHECK-COUNT-2: ember.dot_general {{.*}} {precision = ["HIGHEST", "HIGHEST"]}
// CHECK-NOT: ember.dot_general
// CHECK-LABEL: func @precision_kept_jvp
// CHECK-COUNT-3: ember.dot_general {{.*}} {precision = ["HIGH", "HIGH"]}
// CHECK-NOT: ember.dot_general
func.func private @prod(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>) -> tensor<4x2xf32> {
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [0] {precision = ["HIGHEST", "HIGHEST"]} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
func.func @precision_kept(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>, %c: tensor<4x2xf32>) -> (tensor<4x3xf32>, tensor<3x2xf32>) {
  %y, %ga, %gb = ember.vjp @prod(%a, %b) cotangents(%c) wrt [0, 1] : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<4x3xf32>, tensor<3x2xf32>)
  return %ga, %gb : tensor<4x3xf32>, tensor<3x2xf32>
}
func.func private @prod_high(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>) -> tensor<4x2xf32> {
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [0] {precision = ["HIGH", "HIGH"]} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
func.func @precision_kept_jvp(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>, %ta: tensor<4x3xf32>, %tb: tensor<3x2xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %y, %t = ember.jvp @prod_high(%a, %b) tangents(%ta, %tb) wrt [0, 1] : (tensor<4x3xf32>, tensor<3x2xf32>, tensor<4x3xf32>, tensor<3x2xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>)
  return %y, %t : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// Forward mode: d(x * sin x) = t * sin x + x * (t * cos x).
// CHECK-LABEL: func @jvp_mul_sin
// CHECK-DAG: ember.sin
// CHECK-DAG: ember.cos
// CHECK-NOT: ember.jvp
func.func private @g(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = ember.sin %x : tensor<2xf32>
  %1 = ember.mul %x, %0 : tensor<2xf32>
  return %1 : tensor<2xf32>
}
func.func @jvp_mul_sin(%x: tensor<2xf32>, %t: tensor<2xf32>) -> tensor<2xf32> {
  %y, %ty = ember.jvp @g(%x) tangents(%t) wrt [0] : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  return %ty : tensor<2xf32>
}

// -----

// integer_pow's rule is JAX's: t * (y * x^(y-1)), x^1 written as x.
// CHECK-LABEL: func @jvp_integer_pow
// CHECK-DAG: %[[C3:.*]] = ember.constant dense<3.000000e+00>
// CHECK-DAG: %[[C2:.*]] = ember.constant dense<2.000000e+00>
// CHECK-DAG: %[[P:.*]] = ember.integer_pow %arg0, y = 2
// CHECK-DAG: %[[D3:.*]] = ember.mul %[[P]], %[[C3]]
// CHECK-DAG: ember.mul %arg1, %[[D3]]
// CHECK-DAG: %[[D2:.*]] = ember.mul %arg0, %[[C2]]
// CHECK-DAG: ember.mul %arg1, %[[D2]]
// CHECK-NOT: ember.jvp
func.func private @cube_and_square(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = ember.integer_pow %x, y = 3 : tensor<2xf32>
  %1 = ember.integer_pow %x, y = 2 : tensor<2xf32>
  return %0, %1 : tensor<2xf32>, tensor<2xf32>
}
func.func @jvp_integer_pow(%x: tensor<2xf32>, %t: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %y:2, %ty:2 = ember.jvp @cube_and_square(%x) tangents(%t) wrt [0] : (tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
  return %ty#0, %ty#1 : tensor<2xf32>, tensor<2xf32>
}

// -----

// Nested transformations expand innermost first (second derivative of sin).
// CHECK-LABEL: func @second_derivative
// CHECK-NOT: ember.vjp
// CHECK-NOT: call
// CHECK: ember.sin
func.func private @h(%x: tensor<f32>) -> tensor<f32> {
  %0 = ember.sin %x : tensor<f32>
  return %0 : tensor<f32>
}
func.func private @dh(%x: tensor<f32>) -> tensor<f32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @h(%x) cotangents(%one) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %g : tensor<f32>
}
func.func @second_derivative(%x: tensor<f32>) -> tensor<f32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @dh(%x) cotangents(%one) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %g : tensor<f32>
}

// -----

// Structural ops transpose into their adjoints: slice -> pad, broadcast ->
// reduce, transpose -> inverse transpose.
// CHECK-LABEL: func @structural
// CHECK-DAG: ember.pad
// CHECK-DAG: ember.reduce sum
// CHECK-DAG: ember.transpose
func.func private @s(%x: tensor<4x3xf32>) -> tensor<f32> {
  %0 = ember.slice %x, start = [1, 0], limit = [3, 3], strides = [1, 1] : (tensor<4x3xf32>) -> tensor<2x3xf32>
  %1 = ember.transpose %0, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %2 = ember.broadcast_in_dim %1, dims = [1, 2] : (tensor<3x2xf32>) -> tensor<5x3x2xf32>
  %3 = ember.mul %2, %2 : tensor<5x3x2xf32>
  %4 = ember.reduce sum %3, dims = [0, 1, 2] : (tensor<5x3x2xf32>) -> tensor<f32>
  return %4 : tensor<f32>
}
func.func @structural(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @s(%x) cotangents(%one) wrt [0] : (tensor<4x3xf32>, tensor<f32>) -> (tensor<f32>, tensor<4x3xf32>)
  return %g : tensor<4x3xf32>
}


// -----

// debug.print inside a differentiated function stays in the primal code, once.
// CHECK-LABEL: func @grad_with_print
// CHECK-COUNT-1: ember.host_callback 0
// CHECK-NOT: ember.host_callback
func.func private @pr(%x: tensor<3xf32>) -> tensor<f32> {
  ember.host_callback 0(%x) {has_side_effect} : (tensor<3xf32>) -> ()
  %0 = ember.mul %x, %x : tensor<3xf32>
  %1 = ember.reduce sum %0, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}
func.func @grad_with_print(%x: tensor<3xf32>, %ct: tensor<f32>) -> tensor<3xf32> {
  %y, %g = ember.vjp @pr(%x) cotangents(%ct) wrt [0] : (tensor<3xf32>, tensor<f32>) -> (tensor<f32>, tensor<3xf32>)
  return %g : tensor<3xf32>
}

// -----

// Differentiating through ember.case: the derived code runs every branch and
// selects on the index (index <= 0 picks branch 0).
// CHECK-LABEL: func @jvp_case
// CHECK-NOT: ember.case
// CHECK-DAG: ember.cos
// CHECK-DAG: ember.neg
// CHECK: ember.compare LE
// CHECK: ember.select
func.func private @fc(%i: tensor<i32>, %a: tensor<3xf32>) -> tensor<3xf32> {
  %r = ember.case %i : tensor<i32> -> tensor<3xf32> {
    %s = ember.sin %a : tensor<3xf32>
    ember.yield %s : tensor<3xf32>
  }, {
    %n = ember.neg %a : tensor<3xf32>
    ember.yield %n : tensor<3xf32>
  }
  return %r : tensor<3xf32>
}
func.func @jvp_case(%i: tensor<i32>, %a: tensor<3xf32>, %t: tensor<3xf32>) -> tensor<3xf32> {
  %y, %dy = ember.jvp @fc(%i, %a) tangents(%t) wrt [1] : (tensor<i32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %dy : tensor<3xf32>
}

// -----

// Forward mode through ember.while: the loop carries the tangent next to the
// primal; the body gains the tangent code (d(x*x) = 2 x dx here).
// CHECK-LABEL: func @jvp_while
// CHECK: %[[L:.*]]:3 = ember.while(%{{.*}}, %{{.*}}, %{{.*}}) : tensor<i32>, tensor<f32>, tensor<f32> cond {
// CHECK: } do {
// CHECK: ^bb0(%[[I:.*]]: tensor<i32>, %[[X:.*]]: tensor<f32>, %[[T:.*]]: tensor<f32>):
// CHECK: ember.mul %[[X]], %[[X]]
// CHECK: ember.yield
// CHECK: return %[[L]]#2
func.func private @sq(%x: tensor<f32>, %n: tensor<i32>) -> tensor<f32> {
  %zero = ember.constant dense<0> : tensor<i32>
  %r:2 = ember.while (%zero, %x) : tensor<i32>, tensor<f32> cond {
  ^bb0(%i: tensor<i32>, %v: tensor<f32>):
    %p = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %v: tensor<f32>):
    %one = ember.constant dense<1> : tensor<i32>
    %i1 = ember.add %i, %one : tensor<i32>
    %v2 = ember.mul %v, %v : tensor<f32>
    ember.yield %i1, %v2 : tensor<i32>, tensor<f32>
  }
  return %r#1 : tensor<f32>
}
func.func @jvp_while(%x: tensor<f32>, %n: tensor<i32>, %t: tensor<f32>) -> tensor<f32> {
  %y, %dy = ember.jvp @sq(%x, %n) tangents(%t) wrt [0] : (tensor<f32>, tensor<i32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %dy : tensor<f32>
}

// -----

// Reverse mode through a counted loop (lax.scan, fori_loop with static
// bounds): the forward loop saves the residual of x -> x*x (x itself) in a
// [trip_count] buffer; the backward loop @while_bwd reads it last first and
// applies the transposed body, ct -> 2 x ct. No unrolling.
// CHECK-LABEL: func @vjp_counted_loop
// CHECK: %[[N:.*]] = ember.constant dense<2> : tensor<i64>
// CHECK: %[[FWD:.*]]:3 = ember.while({{.*}}) {trip_count = 2 : i64} : tensor<f32>, tensor<i64>, tensor<2xf32>
// CHECK: ember.mul
// CHECK: ember.dynamic_update_slice
// CHECK: ember.while(%[[N]], %{{.*}}) {trip_count = 2 : i64} : tensor<i64>, tensor<f32>
// CHECK: ember.sub
// CHECK: ember.dynamic_slice %[[FWD]]#2
// CHECK: %[[P:.*]] = ember.mul
// CHECK-NOT: ember.mul
// CHECK: ember.add %[[P]], %[[P]]
// CHECK-NOT: ember.stack
func.func private @sq2(%x: tensor<f32>) -> tensor<f32> {
  %r = ember.while (%x) {trip_count = 2 : i64} : tensor<f32> cond {
  ^bb0(%v: tensor<f32>):
    %p = ember.constant dense<true> : tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%v: tensor<f32>):
    %v2 = ember.mul %v, %v : tensor<f32>
    ember.yield %v2 : tensor<f32>
  }
  return %r : tensor<f32>
}
func.func @vjp_counted_loop(%x: tensor<f32>, %ct: tensor<f32>) -> tensor<f32> {
  %y, %g = ember.vjp @sq2(%x) cotangents(%ct) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %g : tensor<f32>
}

// -----

// A residual that is a counter of the loop (lax.scan's index, where the
// transposed dynamic_update_slice reads the cotangent's row i) is not
// saved: the backward loop computes it from the iteration number k
// (i = 3 + 2 k), so the only buffer saved is v's.
// CHECK-LABEL: func @vjp_scan_index
// CHECK-NOT: tensor<2xi32>
// CHECK: %[[FWD:.*]]:5 = ember.while({{.*}}) {trip_count = 2 : i64} : tensor<i32>, tensor<f32>, tensor<8xf32>, tensor<i64>, tensor<2xf32> cond
// CHECK: ember.while(%{{[0-9]+}}, {{.*}}) {trip_count = 2 : i64}
// CHECK: %[[K:.*]] = ember.sub
// CHECK: %[[KI:.*]] = ember.convert %[[K]] : (tensor<i64>) -> tensor<i32>
// CHECK: %[[M:.*]] = ember.mul %[[KI]], %{{.*}} : tensor<i32>
// CHECK: %[[I:.*]] = ember.add %[[M]], %{{.*}} : tensor<i32>
// CHECK: ember.dynamic_slice %{{.*}}[%[[I]]]
// CHECK-NOT: tensor<2xi32>
func.func private @scan_index(%x: tensor<f32>, %acc0: tensor<8xf32>) -> tensor<8xf32> {
  %i0 = ember.constant dense<3> : tensor<i32>
  %r:3 = ember.while (%i0, %x, %acc0) {trip_count = 2 : i64} : tensor<i32>, tensor<f32>, tensor<8xf32> cond {
  ^bb0(%i: tensor<i32>, %v: tensor<f32>, %acc: tensor<8xf32>):
    %p = ember.constant dense<true> : tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %v: tensor<f32>, %acc: tensor<8xf32>):
    %v2 = ember.mul %v, %v : tensor<f32>
    %row = ember.reshape %v2 : (tensor<f32>) -> tensor<1xf32>
    %acc2 = ember.dynamic_update_slice %acc[%i], %row : tensor<8xf32>, tensor<1xf32>, tensor<i32>
    %two = ember.constant dense<2> : tensor<i32>
    %n = ember.add %i, %two : tensor<i32>
    ember.yield %n, %v2, %acc2 : tensor<i32>, tensor<f32>, tensor<8xf32>
  }
  return %r#2 : tensor<8xf32>
}
func.func @vjp_scan_index(%x: tensor<f32>, %acc: tensor<8xf32>, %ct: tensor<8xf32>) -> tensor<f32> {
  %y, %g = ember.vjp @scan_index(%x, %acc) cotangents(%ct) wrt [0] : (tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<f32>)
  return %g : tensor<f32>
}

// -----

// Row i of an array from above the loop (lax.scan's xs) is read again by the
// backward loop, not copied into a buffer each forward iteration: with
// v -> v * xs[i], the forward loop saves nothing (and, its result unused,
// is gone), and the backward loop slices the array it is given at the row
// its counter computes.
// CHECK-LABEL: func @vjp_scan_xs_row
// CHECK-NOT: ember.dynamic_update_slice
// CHECK: ember.while(%{{[0-9]+}}, %arg2) {trip_count = 2 : i64}
// CHECK: %[[K:.*]] = ember.sub
// CHECK: ember.dynamic_slice %arg1[%[[K]]]
func.func private @scan_xs(%x: tensor<f32>, %xs: tensor<2xf32>) -> tensor<f32> {
  %i0 = ember.constant dense<0> : tensor<i64>
  %r:2 = ember.while (%i0, %x) {trip_count = 2 : i64} : tensor<i64>, tensor<f32> cond {
  ^bb0(%i: tensor<i64>, %v: tensor<f32>):
    %p = ember.constant dense<true> : tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i64>, %v: tensor<f32>):
    %s = ember.dynamic_slice %xs[%i], sizes = [1] : (tensor<2xf32>, tensor<i64>) -> tensor<1xf32>
    %e = ember.reshape %s : (tensor<1xf32>) -> tensor<f32>
    %v2 = ember.mul %v, %e : tensor<f32>
    %one = ember.constant dense<1> : tensor<i64>
    %n = ember.add %i, %one : tensor<i64>
    ember.yield %n, %v2 : tensor<i64>, tensor<f32>
  }
  return %r#1 : tensor<f32>
}
func.func @vjp_scan_xs_row(%x: tensor<f32>, %xs: tensor<2xf32>, %ct: tensor<f32>) -> tensor<f32> {
  %y, %g = ember.vjp @scan_xs(%x, %xs) cotangents(%ct) wrt [0] : (tensor<f32>, tensor<2xf32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %g : tensor<f32>
}

// -----

// A checkpoint whose policy saves a value computed in a counted loop
// (dots_saveable on a product in a scan's body): the forward pass keeps it
// for every iteration, in a [trip_count, ...] buffer, and the recomputation
// reads row k of the buffer in iteration k (through @saved) instead of
// computing the product again. Rows are indexed by the loop's own counter.
// CHECK-LABEL: func @grad_remat_loop_dots
// CHECK: %[[F:.*]]:3 = ember.while({{.*}}) {trip_count = 3 : i64} : tensor<i64>, tensor<2xf32>, tensor<3x2xf32>
// CHECK-NEXT: ^bb0(%[[I:.*]]: tensor<i64>,
// CHECK: ember.dot_general
// CHECK: ember.dynamic_update_slice %{{.*}}[%[[I]], %{{.*}}]
// CHECK: ember.optimization_barrier %arg0, %arg1, %[[F]]#2
// CHECK-NOT: ember.dot_general %{{.*}}, %{{.*}}, batch = [] x [], contract = [1] x [0] {{.*}} -> tensor<2xf32>
// CHECK: ember.custom_jvp_call @saved jvp @saved_jvp
func.func private @steps(%w: tensor<2x2xf32>, %h0: tensor<2xf32>) -> tensor<2xf32> {
  %i0 = ember.constant dense<0> : tensor<i64>
  %r:2 = ember.while (%i0, %h0) {trip_count = 3 : i64} : tensor<i64>, tensor<2xf32> cond {
  ^bb0(%i: tensor<i64>, %h: tensor<2xf32>):
    %p = ember.constant dense<true> : tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i64>, %h: tensor<2xf32>):
    %d = ember.dot_general %w, %h, batch = [] x [], contract = [1] x [0] {ember.saveable} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %t = ember.sin %d : tensor<2xf32>
    %one = ember.constant dense<1> : tensor<i64>
    %n = ember.add %i, %one : tensor<i64>
    ember.yield %n, %t : tensor<i64>, tensor<2xf32>
  }
  return %r#1 : tensor<2xf32>
}
func.func private @steps_fwd(%w: tensor<2x2xf32>, %h: tensor<2xf32>) -> (tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>) {
  %t = func.call @steps(%w, %h) : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %t, %w, %h : tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>
}
func.func private @steps_bwd(%w: tensor<2x2xf32>, %h: tensor<2xf32>, %ct: tensor<2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>) {
  %y, %gw, %gh = ember.vjp @steps(%w, %h) cotangents(%ct) wrt [0, 1] : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2xf32>, tensor<2x2xf32>, tensor<2xf32>)
  return %gw, %gh : tensor<2x2xf32>, tensor<2xf32>
}
func.func private @steps_loss(%w: tensor<2x2xf32>, %h: tensor<2xf32>) -> tensor<f32> {
  %t = ember.custom_vjp_call @steps fwd @steps_fwd bwd @steps_bwd(%w, %h) segments [2, 0, 0, 0, 2] {ember.remat} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %s = ember.reduce sum %t, dims = [0] : (tensor<2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
func.func @grad_remat_loop_dots(%w: tensor<2x2xf32>, %h: tensor<2xf32>) -> tensor<2x2xf32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @steps_loss(%w, %h) cotangents(%one) wrt [0] : (tensor<2x2xf32>, tensor<2xf32>, tensor<f32>) -> (tensor<f32>, tensor<2x2xf32>)
  return %g : tensor<2x2xf32>
}

// -----

// A residual one cheap elementwise op computes from saved residuals and
// constants (tanh's derivative reads 1 - t beside t) is recomputed in the
// backward loop: the forward loop saves t alone.
// CHECK-LABEL: func @vjp_recomputed_residual
// CHECK: %[[FWD:.*]]:3 = ember.while({{.*}}) {trip_count = 2 : i64} : tensor<3xf32>, tensor<i64>, tensor<2x3xf32> cond
// CHECK: ember.tanh
// CHECK-NOT: ember.sub
// CHECK: ember.dynamic_update_slice
// CHECK-NOT: ember.dynamic_update_slice
// CHECK: ember.while(%{{[0-9]+}}, {{.*}}) {trip_count = 2 : i64}
// CHECK: %[[ROW:.*]] = ember.dynamic_slice %[[FWD]]#2
// CHECK: %[[T:.*]] = ember.reshape %[[ROW]]
// CHECK: ember.sub %{{.*}}, %[[T]] : tensor<3xf32>
func.func private @tanh2(%x: tensor<3xf32>) -> tensor<3xf32> {
  %r = ember.while (%x) {trip_count = 2 : i64} : tensor<3xf32> cond {
  ^bb0(%v: tensor<3xf32>):
    %p = ember.constant dense<true> : tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%v: tensor<3xf32>):
    %t = ember.tanh %v : tensor<3xf32>
    ember.yield %t : tensor<3xf32>
  }
  return %r : tensor<3xf32>
}
func.func @vjp_recomputed_residual(%x: tensor<3xf32>, %ct: tensor<3xf32>) -> tensor<3xf32> {
  %y, %g = ember.vjp @tanh2(%x) cotangents(%ct) wrt [0] : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %g : tensor<3xf32>
}

// -----

// The carry v and its next value t are both residuals (v of the square, t
// of tanh): they share one buffer of trip_count + 1 rows, row 0 holding the
// initial carry, row k + 1 iteration k's t; the backward loop reads t at
// row k + 1 and v at row k.
// CHECK-LABEL: func @vjp_shared_carry_buffer
// CHECK: %[[ROW0:.*]] = ember.reshape %arg0 : (tensor<3xf32>) -> tensor<1x3xf32>
// CHECK: %[[BUF:.*]] = ember.dynamic_update_slice %{{.*}}[%[[Z:.*]], %[[Z]]], %[[ROW0]] : tensor<3x3xf32>
// CHECK: %[[FWD:.*]]:3 = ember.while(%arg0, %{{.*}}, %[[BUF]]) {trip_count = 2 : i64} : tensor<3xf32>, tensor<i64>, tensor<3x3xf32> cond
// CHECK: %[[T:.*]] = ember.tanh
// CHECK: %[[NEXT:.*]] = ember.add %{{.*}}, %{{.*}} : tensor<i64>
// CHECK: %[[TROW:.*]] = ember.reshape %[[T]]
// CHECK: ember.dynamic_update_slice %{{.*}}[%[[NEXT]], %{{.*}}], %[[TROW]]
// CHECK-NOT: ember.dynamic_update_slice
// CHECK: ember.while(%{{[0-9]+}}, {{.*}}) {trip_count = 2 : i64}
// CHECK: %[[K:.*]] = ember.sub
// CHECK: %[[K1:.*]] = ember.add %[[K]], %{{.*}} : tensor<i64>
// CHECK: ember.dynamic_slice %[[FWD]]#2[%[[K1]], %{{.*}}]
// CHECK: ember.dynamic_slice %[[FWD]]#2[%[[K]], %{{.*}}]
func.func private @sqtanh(%x: tensor<3xf32>) -> tensor<3xf32> {
  %r = ember.while (%x) {trip_count = 2 : i64} : tensor<3xf32> cond {
  ^bb0(%v: tensor<3xf32>):
    %p = ember.constant dense<true> : tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%v: tensor<3xf32>):
    %m = ember.mul %v, %v : tensor<3xf32>
    %t = ember.tanh %m : tensor<3xf32>
    ember.yield %t : tensor<3xf32>
  }
  return %r : tensor<3xf32>
}
func.func @vjp_shared_carry_buffer(%x: tensor<3xf32>, %ct: tensor<3xf32>) -> tensor<3xf32> {
  %y, %g = ember.vjp @sqtanh(%x) cotangents(%ct) wrt [0] : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %g : tensor<3xf32>
}

// -----

// Reverse mode through a loop with a run-time trip count (beyond JAX): the
// forward loop counts its iterations and pushes each iteration's residual on
// a run-time stack; the backward loop runs that many times, popping. The
// value from above (%w, with a tangent) receives the sum of the iterations'
// cotangents, carried by the backward loop.
// CHECK-LABEL: func @vjp_runtime_loop
// CHECK: %[[FWD:.*]]:4 = ember.while(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : tensor<i32>, tensor<f32>, tensor<i64>, tensor<i64>
// CHECK: ember.mul
// CHECK: ember.stack_push %{{.*}}(%{{.*}}) : (tensor<i64>, tensor<f32>) -> tensor<i64>
// CHECK: ember.while(%[[FWD]]#2, %[[FWD]]#3, %{{.*}}, %{{.*}}) : tensor<i64>, tensor<i64>, tensor<f32>, tensor<f32>
// CHECK: ember.compare GT
// CHECK: %[[K:.*]] = ember.sub
// CHECK: ember.stack_pop %{{.*}}[%[[K]]] : (tensor<i64>, tensor<i64>) -> (tensor<i64>, tensor<f32>)
// CHECK-NOT: ember.stack_free
func.func private @scale_loop(%x: tensor<f32>, %w: tensor<f32>, %n: tensor<i32>) -> tensor<f32> {
  %z = ember.constant dense<0> : tensor<i32>
  %r:2 = ember.while (%z, %x) : tensor<i32>, tensor<f32> cond {
  ^bb0(%i: tensor<i32>, %v: tensor<f32>):
    %p = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %v: tensor<f32>):
    %one = ember.constant dense<1> : tensor<i32>
    %i1 = ember.add %i, %one : tensor<i32>
    %v2 = ember.mul %v, %w : tensor<f32>
    ember.yield %i1, %v2 : tensor<i32>, tensor<f32>
  }
  return %r#1 : tensor<f32>
}
func.func @vjp_runtime_loop(%x: tensor<f32>, %w: tensor<f32>, %n: tensor<i32>, %ct: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %y, %gx, %gw = ember.vjp @scale_loop(%x, %w, %n) cotangents(%ct) wrt [0, 1] : (tensor<f32>, tensor<f32>, tensor<i32>, tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>)
  return %gx, %gw : tensor<f32>, tensor<f32>
}

// -----

// No cotangent reaches the loop (its result is stop_gradient'ed): its
// stack is released instead of popped.
// CHECK-LABEL: func @vjp_runtime_loop_unused
// CHECK: ember.stack_push
// CHECK-NOT: ember.stack_pop
// CHECK: ember.stack_free
func.func private @unused_loop(%x: tensor<f32>, %n: tensor<i32>) -> tensor<f32> {
  %z = ember.constant dense<0> : tensor<i32>
  %r:2 = ember.while (%z, %x) : tensor<i32>, tensor<f32> cond {
  ^bb0(%i: tensor<i32>, %v: tensor<f32>):
    %p = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %v: tensor<f32>):
    %one = ember.constant dense<1> : tensor<i32>
    %i1 = ember.add %i, %one : tensor<i32>
    %v2 = ember.sin %v : tensor<f32>
    ember.yield %i1, %v2 : tensor<i32>, tensor<f32>
  }
  %s = ember.stop_gradient %r#1 : tensor<f32>
  %y = ember.add %s, %x : tensor<f32>
  return %y : tensor<f32>
}
func.func @vjp_runtime_loop_unused(%x: tensor<f32>, %n: tensor<i32>, %ct: tensor<f32>) -> tensor<f32> {
  %y, %g = ember.vjp @unused_loop(%x, %n) cotangents(%ct) wrt [0] : (tensor<f32>, tensor<i32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %g : tensor<f32>
}

// -----

// Reverse mode through ember.case: only the taken branch is differentiated.
// Branch 0 recomputes sqrt(x) (a pure op of a value from above) in its
// transposed copy; the untaken branch never meets the cotangent.
// CHECK-LABEL: func @vjp_case
// CHECK: ember.case %arg1 : tensor<i32> -> tensor<f32> {
// CHECK: ember.sqrt %arg0
// CHECK: ember.div
// CHECK: ember.mul %arg2
// CHECK: }, {
// CHECK: ember.mul %arg2
// CHECK-NOT: ember.select
func.func private @branchy(%x: tensor<f32>, %i: tensor<i32>) -> tensor<f32> {
  %r = ember.case %i : tensor<i32> -> tensor<f32> {
    %s = ember.sqrt %x : tensor<f32>
    ember.yield %s : tensor<f32>
  }, {
    %z = ember.constant dense<2.0> : tensor<f32>
    %m = ember.mul %x, %z : tensor<f32>
    ember.yield %m : tensor<f32>
  }
  return %r : tensor<f32>
}
func.func @vjp_case(%x: tensor<f32>, %i: tensor<i32>, %ct: tensor<f32>) -> tensor<f32> {
  %y, %g = ember.vjp @branchy(%x, %i) cotangents(%ct) wrt [0] : (tensor<f32>, tensor<i32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %g : tensor<f32>
}

// -----

// A checkpointed function (custom_vjp_call marked ember.remat, made by
// jax.checkpoint): forward mode differentiates the function itself instead
// of refusing the custom VJP; d/dx sin(x) = cos(x).
// CHECK-LABEL: func @jvp_remat
// CHECK: ember.cos %arg0
// CHECK: ember.mul
func.func private @ck(%x: tensor<f32>) -> tensor<f32> {
  %y = ember.sin %x : tensor<f32>
  return %y : tensor<f32>
}
func.func private @ck_fwd(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %y = ember.sin %x : tensor<f32>
  return %y, %x : tensor<f32>, tensor<f32>
}
func.func private @ck_bwd(%x: tensor<f32>, %ct: tensor<f32>) -> tensor<f32> {
  %y, %g = ember.vjp @ck(%x) cotangents(%ct) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %g : tensor<f32>
}
func.func private @uses_ck(%x: tensor<f32>) -> tensor<f32> {
  %y = ember.custom_vjp_call @ck fwd @ck_fwd bwd @ck_bwd(%x) segments [1, 0, 0, 0, 1] {ember.remat} : (tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}
func.func @jvp_remat(%x: tensor<f32>, %t: tensor<f32>) -> tensor<f32> {
  %y, %dy = ember.jvp @uses_ck(%x) tangents(%t) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %dy : tensor<f32>
}

// -----

// reduce_window prod: each window's tangent is init * sum_k t_k * (product of
// the other elements), from prefix and suffix products (no division, so
// zeros are fine). Window 2: t0 * x1 + t1 * x0, then times init.
// CHECK-LABEL: func @jvp_window_prod
// CHECK-NOT: ember.div
// CHECK-COUNT-2: ember.slice %arg0
// CHECK-NOT: ember.div
func.func private @wprod(%x: tensor<4xf32>) -> tensor<3xf32> {
  %s = ember.constant dense<1.0> : tensor<f32>
  %0 = ember.reduce_window prod %x, %s, window = [2], strides = [1], low = [0], high = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @jvp_window_prod(%x: tensor<4xf32>, %t: tensor<4xf32>) -> tensor<3xf32> {
  %y, %dy = ember.jvp @wprod(%x) tangents(%t) wrt [0] : (tensor<4xf32>, tensor<4xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %dy : tensor<3xf32>
}

// -----

// No window fits: the tangent is zero (the rule sliced windows that do not
// exist and aborted while building them).
// CHECK-LABEL: func @jvp_window_none_fits
// CHECK-NOT: ember.slice
// CHECK: return
func.func private @wnone(%x: tensor<5xf32>) -> tensor<0xf32> {
  %s = ember.constant dense<0.0> : tensor<f32>
  %0 = ember.reduce_window sum %x, %s, window = [7], strides = [1], low = [0], high = [0] : (tensor<5xf32>, tensor<f32>) -> tensor<0xf32>
  return %0 : tensor<0xf32>
}
func.func @jvp_window_none_fits(%x: tensor<5xf32>, %t: tensor<5xf32>) -> tensor<0xf32> {
  %y, %dy = ember.jvp @wnone(%x) tangents(%t) wrt [0] : (tensor<5xf32>, tensor<5xf32>) -> (tensor<0xf32>, tensor<0xf32>)
  return %dy : tensor<0xf32>
}

// -----

// Complex parts transpose with JAX's convention: real^T c = c + 0i,
// imag^T c = 0 - ci (transposes, not adjoints).
// CHECK-LABEL: func @vjp_complex_parts
// CHECK: %[[Z:.*]] = ember.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[N:.*]] = ember.neg %arg1
// CHECK: %[[I:.*]] = ember.complex %[[Z]], %[[N]]
// CHECK: %[[R:.*]] = ember.complex %arg1, %[[Z]]
// CHECK: ember.add %[[I]], %[[R]] : tensor<complex<f32>>
func.func private @re_part(%z: tensor<complex<f32>>) -> tensor<f32> {
  %r = ember.real %z : (tensor<complex<f32>>) -> tensor<f32>
  %i = ember.imag %z : (tensor<complex<f32>>) -> tensor<f32>
  %s = ember.add %r, %i : tensor<f32>
  return %s : tensor<f32>
}
func.func @vjp_complex_parts(%z: tensor<complex<f32>>, %ct: tensor<f32>) -> tensor<complex<f32>> {
  %y, %g = ember.vjp @re_part(%z) cotangents(%ct) wrt [0] : (tensor<complex<f32>>, tensor<f32>) -> (tensor<f32>, tensor<complex<f32>>)
  return %g : tensor<complex<f32>>
}

// -----

// A checkpoint whose policy saves the product (dots_saveable marks the
// dot_general `ember.saveable` when tracing): the forward pass keeps x . w,
// and the recomputation in the backward pass takes it (a custom_jvp_call of
// @saved, differentiated by the op's own JVP rule on the saved value) instead
// of computing it again; tanh is recomputed from it. The recomputation reads
// its inputs through an optimization barrier, so CSE cannot merge it with the
// forward pass.
// CHECK-LABEL: func @grad_remat_dots
// CHECK: %[[P:.*]] = ember.dot_general %arg0, %arg1, batch = [] x [], contract = [1] x [0]
// CHECK: %[[B:.*]]:3 = ember.optimization_barrier %arg0, %arg1, %[[P]] : tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x4xf32>
// CHECK: %[[S:.*]] = ember.custom_jvp_call @saved jvp @saved_jvp(%[[B]]#0, %[[B]]#1, %[[B]]#2) segments [3, 0, 0]
// CHECK-NOT: ember.dot_general %[[B]]#0, %[[B]]#1
// CHECK: ember.tanh %[[S]]
// CHECK-NOT: ember.dot_general %[[B]]#0, %[[B]]#1
// CHECK: ember.dot_general %[[B]]#0, %{{.*}}, batch = [] x [], contract = [0] x [0]
// CHECK-LABEL: func.func private @saved(
// CHECK: return %arg2
// CHECK-LABEL: func.func private @saved_jvp(
// CHECK-DAG: %[[A:.*]] = ember.dot_general %arg3, %arg1
// CHECK-DAG: %[[D:.*]] = ember.dot_general %arg0, %arg4
// CHECK: ember.add
// CHECK: return %arg2, %{{.*}}
func.func private @blk(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %p = ember.dot_general %x, %w, batch = [] x [], contract = [1] x [0] {ember.saveable} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %t = ember.tanh %p : tensor<2x4xf32>
  return %t : tensor<2x4xf32>
}
func.func private @blk_fwd(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x3xf32>, tensor<3x4xf32>) {
  %t = func.call @blk(%x, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %t, %x, %w : tensor<2x4xf32>, tensor<2x3xf32>, tensor<3x4xf32>
}
func.func private @blk_bwd(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %ct: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<3x4xf32>) {
  %y, %gx, %gw = ember.vjp @blk(%x, %w) cotangents(%ct) wrt [0, 1] : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x3xf32>, tensor<3x4xf32>)
  return %gx, %gw : tensor<2x3xf32>, tensor<3x4xf32>
}
func.func private @loss(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<f32> {
  %t = ember.custom_vjp_call @blk fwd @blk_fwd bwd @blk_bwd(%x, %w) segments [2, 0, 0, 0, 2] {ember.remat} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %s = ember.reduce sum %t, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
func.func @grad_remat_dots(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @loss(%x, %w) cotangents(%one) wrt [1] : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<f32>) -> (tensor<f32>, tensor<3x4xf32>)
  return %g : tensor<3x4xf32>
}

// -----

// A value named by checkpoint_name and saved by the policy: the recomputation
// takes it (the custom_jvp_call's primal is the saved value; the sin feeding
// its unused operand is dead once ember-inline-custom inlines @saved), and
// cos, the derivative, is computed from the input. The tangent passes
// through the name: the rule returns it unchanged.
// CHECK-LABEL: func @grad_remat_named
// CHECK: %[[S:.*]] = ember.sin %arg0
// CHECK: %[[N:.*]] = ember.checkpoint_name %[[S]] "h"
// CHECK: %[[B:.*]]:2 = ember.optimization_barrier %arg0, %[[N]]
// CHECK: %[[R:.*]] = ember.sin %[[B]]#0
// CHECK: ember.cos %[[B]]#0
// CHECK: ember.custom_jvp_call @saved jvp @saved_jvp(%[[R]], %[[B]]#1) segments [2, 0, 0]
// CHECK: return
// CHECK-LABEL: func.func private @saved(
// CHECK-NEXT: return %arg1
// CHECK-LABEL: func.func private @saved_jvp(
// CHECK-NEXT: return %arg1, %arg2
func.func private @nblk(%x: tensor<3xf32>) -> tensor<3xf32> {
  %s = ember.sin %x : tensor<3xf32>
  %n = ember.checkpoint_name %s "h" {ember.saveable} : tensor<3xf32>
  %e = ember.mul %n, %n : tensor<3xf32>
  return %e : tensor<3xf32>
}
func.func private @nblk_fwd(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %t = func.call @nblk(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %t, %x : tensor<3xf32>, tensor<3xf32>
}
func.func private @nblk_bwd(%x: tensor<3xf32>, %ct: tensor<3xf32>) -> tensor<3xf32> {
  %y, %gx = ember.vjp @nblk(%x) cotangents(%ct) wrt [0] : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %gx : tensor<3xf32>
}
func.func private @nloss(%x: tensor<3xf32>) -> tensor<f32> {
  %t = ember.custom_vjp_call @nblk fwd @nblk_fwd bwd @nblk_bwd(%x) segments [1, 0, 0, 0, 1] {ember.remat} : (tensor<3xf32>) -> tensor<3xf32>
  %s = ember.reduce sum %t, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
func.func @grad_remat_named(%x: tensor<3xf32>) -> tensor<3xf32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g = ember.vjp @nloss(%x) cotangents(%one) wrt [0] : (tensor<3xf32>, tensor<f32>) -> (tensor<f32>, tensor<3xf32>)
  return %g : tensor<3xf32>
}

// -----

// ember.record_residuals: the expansion lists what the backward pass reads
// from the forward pass (here cos x, computed in the forward pass, and not
// the argument itself) in the module attribute ember.residuals.
// CHECK: module attributes {ember.residuals = [{loc = "f.py:3:4 (g)", op = "cos", type = tensor<3xf32>}]}
func.func private @rsin(%x: tensor<3xf32>) -> tensor<3xf32> {
  %s = ember.sin %x : tensor<3xf32> loc("g"("f.py":3:4))
  return %s : tensor<3xf32>
}
func.func @record(%x: tensor<3xf32>, %ct: tensor<3xf32>) -> tensor<3xf32> {
  %y, %g = ember.vjp @rsin(%x) cotangents(%ct) wrt [0] {ember.record_residuals} : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %g : tensor<3xf32>
}

// -----

// Cholesky's JVP: L' = L phi(L^-1 A' L^-T), two triangular solves (the
// second on transposes), the lower triangle with the diagonal halved, one
// product with L.
// CHECK-LABEL: func @jvp_cholesky
// CHECK: %[[L:.*]] = ember.cholesky %{{.*}} : tensor<3x3xf32>
// CHECK: ember.triangular_solve %[[L]], %{{.*}} {lower = true, transpose_a = false, unit_diagonal = false}
// CHECK: ember.transpose
// CHECK: ember.triangular_solve %[[L]]
// CHECK: ember.compare  GE
// CHECK: ember.mul
// CHECK: ember.dot_general %[[L]], %{{.*}}, batch = [] x [], contract = [1] x [0]
func.func private @chol(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = ember.cholesky %a : tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}
func.func @jvp_cholesky(%a: tensor<3x3xf32>, %t: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %y, %ty = ember.jvp @chol(%a) tangents(%t) wrt [0] : (tensor<3x3xf32>, tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>)
  return %ty : tensor<3x3xf32>
}

// -----

// The triangular solve is linear in b: b's cotangent solves the transposed
// system with the same triangle.
// CHECK-LABEL: func @grad_triangular_solve_b
// CHECK: ember.triangular_solve %{{.*}}, %{{.*}} {lower = true, transpose_a = true, unit_diagonal = true}
func.func private @tsolve(%a: tensor<3x3xf32>, %b: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %0 = ember.triangular_solve %a, %b {lower = true, transpose_a = false, unit_diagonal = true} : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
func.func @grad_triangular_solve_b(%a: tensor<3x3xf32>, %b: tensor<3x2xf32>, %ct: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %y, %g = ember.vjp @tsolve(%a, %b) cotangents(%ct) wrt [1] : (tensor<3x3xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>)
  return %g : tensor<3x2xf32>
}

// -----

// LU's JVP: the permuted tangent (a one-hot product), a unit-lower solve,
// a transposed upper solve, then L' + U'.
// CHECK-LABEL: func @jvp_lu
// CHECK: %[[LU:.*]], %{{.*}}, %[[P:.*]] = ember.lu
// CHECK: ember.compare  EQ
// CHECK: ember.triangular_solve %{{.*}}, %{{.*}} {lower = true, transpose_a = false, unit_diagonal = true}
// CHECK: ember.triangular_solve %{{.*}}, %{{.*}} {lower = false, transpose_a = true, unit_diagonal = false}
// CHECK: ember.add
func.func private @lu(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %lu, %p, %q = ember.lu %a : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xi32>, tensor<3xi32>)
  return %lu : tensor<3x3xf32>
}
func.func @jvp_lu(%a: tensor<3x3xf32>, %t: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %y, %ty = ember.jvp @lu(%a) tangents(%t) wrt [0] : (tensor<3x3xf32>, tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>)
  return %ty : tensor<3x3xf32>
}

// -----

// A wide LU (2 x 3): L is the strict lower part cut to 2 x 2 plus I, U the
// upper part padded to 3 x 3 with a 1 in the new corner.
// CHECK-LABEL: func @jvp_lu_wide
// CHECK: ember.pad %{{.*}}, %{{.*}}, low = [0, 0], high = [0, -1], interior = [0, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x2xf32>
// CHECK: ember.pad %{{.*}}, %{{.*}}, low = [0, 0], high = [1, 0], interior = [0, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3x3xf32>
// CHECK: ember.compare  GE
// CHECK: ember.triangular_solve %{{.*}}, %{{.*}} {lower = false, transpose_a = true, unit_diagonal = false} : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
func.func private @luw(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %lu, %p, %q = ember.lu %a : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2xi32>, tensor<2xi32>)
  return %lu : tensor<2x3xf32>
}
func.func @jvp_lu_wide(%a: tensor<2x3xf32>, %t: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y, %ty = ember.jvp @luw(%a) tangents(%t) wrt [0] : (tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  return %ty : tensor<2x3xf32>
}

// -----

// eigh's JVP: M = V^T A' V, w' = diag(M) (V' = V (F o M) is not asked
// for, so nothing of it is left).
// CHECK-LABEL: func @jvp_eigh
// (V^T read as V: the transpose folds into the product.)
// CHECK: %[[V:.*]], %{{.*}} = ember.eigh
// CHECK: %[[AV:.*]] = ember.dot_general %arg1, %[[V]]
// CHECK: ember.dot_general %[[V]], %[[AV]], batch = [] x [], contract = [0] x [0]
// CHECK: ember.compare  EQ
// CHECK: ember.reduce  sum %{{.*}}, dims = [1]
// CHECK-NOT: ember.div
func.func private @eig(%a: tensor<3x3xf32>) -> tensor<3xf32> {
  %v, %w = ember.eigh %a : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xf32>)
  return %w : tensor<3xf32>
}
func.func @jvp_eigh(%a: tensor<3x3xf32>, %t: tensor<3x3xf32>) -> tensor<3xf32> {
  %y, %ty = ember.jvp @eig(%a) tangents(%t) wrt [0] : (tensor<3x3xf32>, tensor<3x3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %ty : tensor<3xf32>
}

// -----

// qr's JVP (tall): Y = A' R^-1 as a transposed upper solve, C = Q^T Y,
// Q' = Q (Omega - C) + Y and R' = (C - Omega) R.
// CHECK-LABEL: func @jvp_qr
// CHECK: %[[Q:.*]], %[[R:.*]] = ember.qr %arg0 {full_matrices = false}
// CHECK: ember.triangular_solve %[[R]], %{{.*}} {lower = false, transpose_a = true, unit_diagonal = false}
// CHECK: %[[C:.*]] = ember.dot_general %[[Q]], %{{.*}}, batch = [] x [], contract = [0] x [1]
// CHECK: ember.compare  GT
// CHECK: %[[OMEGA:.*]] = ember.sub
// CHECK: ember.sub %[[OMEGA]], %[[C]]
// CHECK: ember.dot_general %[[Q]]
// CHECK: ember.sub %[[C]], %[[OMEGA]]
// CHECK: ember.dot_general %{{.*}}, %[[R]]
func.func private @qr(%a: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>) {
  %q, %r = ember.qr %a {full_matrices = false} : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
  return %q, %r : tensor<4x3xf32>, tensor<3x3xf32>
}
func.func @jvp_qr(%a: tensor<4x3xf32>, %t: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>) {
  %q, %r, %tq, %tr = ember.jvp @qr(%a) tangents(%t) wrt [0] : (tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>, tensor<4x3xf32>, tensor<3x3xf32>)
  return %tq, %tr : tensor<4x3xf32>, tensor<3x3xf32>
}

// -----

// A wide qr's R' gets a second block, Q'^T A2 + Q^T A2', joined to the first.
// CHECK-LABEL: func @jvp_qr_wide
// CHECK: ember.qr
// CHECK: ember.slice
// CHECK: ember.concatenate dim = 1
func.func private @qrw(%a: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %q, %r = ember.qr %a {full_matrices = false} : (tensor<2x3xf64>) -> (tensor<2x2xf64>, tensor<2x3xf64>)
  return %r : tensor<2x3xf64>
}
func.func @jvp_qr_wide(%a: tensor<2x3xf64>, %t: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %r, %tr = ember.jvp @qrw(%a) tangents(%t) wrt [0] : (tensor<2x3xf64>, tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>)
  return %tr : tensor<2x3xf64>
}

// -----

// svd's JVP for the singular values alone needs U and V: the rule adds a
// thin svd with vectors; s' = real(diag(U^H A' V)).
// CHECK-LABEL: func @jvp_svd_values
// CHECK: %{{.*}}:3 = ember.svd %arg0 {full_matrices = false} : (tensor<3x4xcomplex<f32>>) -> (tensor<3xf32>, tensor<3x3xcomplex<f32>>, tensor<3x4xcomplex<f32>>)
// CHECK: ember.conj
// CHECK: ember.reduce  sum %{{.*}}, dims = [1]
// CHECK: ember.real
// CHECK-NOT: ember.div
func.func private @sv(%a: tensor<3x4xcomplex<f32>>) -> tensor<3xf32> {
  %s = ember.svd %a {full_matrices = false} : (tensor<3x4xcomplex<f32>>) -> tensor<3xf32>
  return %s : tensor<3xf32>
}
func.func @jvp_svd_values(%a: tensor<3x4xcomplex<f32>>, %t: tensor<3x4xcomplex<f32>>) -> tensor<3xf32> {
  %s, %ts = ember.jvp @sv(%a) tangents(%t) wrt [0] : (tensor<3x4xcomplex<f32>>, tensor<3x4xcomplex<f32>>) -> (tensor<3xf32>, tensor<3xf32>)
  return %ts : tensor<3xf32>
}

// -----

// A fill scatter drops out-of-bounds updates, so their cotangent is zero:
// the windows are read clamped and masked by a fill gather of ones (NaN
// where dropped), not read by a fill gather (NaN there).
// CHECK-LABEL: func @scatter_fill_vjp
// CHECK-DAG: %[[ONES:.*]] = ember.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-DAG: %[[PROBE:.*]] = ember.gather %[[ONES]][%arg1] {{.*}}mode = #ember<mode fill>
// CHECK-DAG: %[[READ:.*]] = ember.gather %arg3[%arg1] {{.*}}mode = #ember<mode clip>
// CHECK-DAG: %[[IN:.*]] = ember.compare EQ, %[[PROBE]], %[[PROBE]]
// CHECK: ember.select %[[IN]], %[[READ]], %{{.*}}
func.func private @sa(%o: tensor<4xf32>, %i: tensor<3x1xi32>, %u: tensor<3xf32>) -> tensor<4xf32> {
  %0 = ember.scatter add %o[%i], %u {index_vector_dim = 1 : i64, inserted_window_dims = array<i64: 0>, mode = #ember<mode fill>, operand_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, scatter_indices_batching_dims = array<i64>, update_window_dims = array<i64>} : (tensor<4xf32>, tensor<3x1xi32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @scatter_fill_vjp(%o: tensor<4xf32>, %i: tensor<3x1xi32>, %u: tensor<3xf32>, %c: tensor<4xf32>) -> tensor<3xf32> {
  %r, %g = ember.vjp @sa(%o, %i, %u) cotangents(%c) wrt [2] : (tensor<4xf32>, tensor<3x1xi32>, tensor<3xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<3xf32>)
  return %g : tensor<3xf32>
}

// -----

// A max scatter's tangent (JAX's rule): the windows' tangents weighted by
// which values attain each result (counted by add scatters of the
// attainers and of all updates), added into the operand's tangent.
// CHECK-LABEL: func @scatter_max_jvp
// CHECK-DAG: ember.scatter add %{{.*}}[%arg1], %{{.*}} {{.*}}mode = #ember<mode clip>
// CHECK-DAG: ember.compare EQ, %arg2, %{{.*}} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
// CHECK-DAG: ember.div
// CHECK: %[[T:.*]] = ember.scatter add %arg3[%arg1], %{{.*}}
// CHECK: return %{{.*}}, %[[T]]
func.func private @smax(%o: tensor<4xf32>, %i: tensor<3x1xi32>, %u: tensor<3xf32>) -> tensor<4xf32> {
  %0 = ember.scatter max %o[%i], %u {index_vector_dim = 1 : i64, inserted_window_dims = array<i64: 0>, mode = #ember<mode clip>, operand_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, scatter_indices_batching_dims = array<i64>, update_window_dims = array<i64>} : (tensor<4xf32>, tensor<3x1xi32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @scatter_max_jvp(%o: tensor<4xf32>, %i: tensor<3x1xi32>, %u: tensor<3xf32>, %to: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r, %t = ember.jvp @smax(%o, %i, %u) tangents(%to) wrt [0] : (tensor<4xf32>, tensor<3x1xi32>, tensor<3xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %r, %t : tensor<4xf32>, tensor<4xf32>
}

// -----

// Backward-pass effects (JAX's stash_grads): the custom_vjp's bwd returns
// its cotangent and then the new value of a ref it writes (bwd_effects = 1);
// ember.vjp {effects = 1} returns that value after the gradient. Here the
// stash point's cotangent is d/dy sin(y) = cos(x).
// CHECK-LABEL: func @stash_effects
// CHECK: %[[C:.*]] = ember.cos %arg0
// CHECK: return %{{.*}}, %[[C]] : tensor<f32>, tensor<f32>
func.func private @st(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
func.func private @st_fwd(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
func.func private @st_bwd(%ct: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  return %ct, %ct : tensor<f32>, tensor<f32>
}
func.func private @stashed(%x: tensor<f32>) -> tensor<f32> {
  %y = ember.custom_vjp_call @st fwd @st_fwd bwd @st_bwd(%x) segments [1, 0, 0, 0, 0] {bwd_effects = 1 : i64} : (tensor<f32>) -> tensor<f32>
  %s = ember.sin %y : tensor<f32>
  return %s : tensor<f32>
}
func.func @stash_effects(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %one = ember.constant dense<1.0> : tensor<f32>
  %y, %g, %stashed = ember.vjp @stashed(%x) cotangents(%one) wrt [0] {effects = 1 : i64} : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>)
  return %g, %stashed : tensor<f32>, tensor<f32>
}

// -----

// A counted loop that runs zero times (`fori_loop(0, 0, ...)`) is its
// initial values: reverse mode saves nothing (it used to read a row of a
// residual buffer of zero rows, and the op's builder aborted).
// CHECK-LABEL: func @zero_trips_grad
// CHECK-NOT: ember.while
// CHECK-NOT: ember.dynamic_slice
// CHECK: return %{{.*}}, %arg1
func.func private @zero_trips(%x: tensor<f32>) -> tensor<f32> {
  %z = ember.constant dense<0> : tensor<i32>
  %r:2 = ember.while(%z, %x) {trip_count = 0 : i64} : tensor<i32>, tensor<f32> cond {
  ^bb0(%i: tensor<i32>, %c: tensor<f32>):
    %p = ember.compare LT, %i, %z : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %c: tensor<f32>):
    %one = ember.constant dense<1> : tensor<i32>
    %i1 = ember.add %i, %one : tensor<i32>
    %m = ember.mul %c, %x : tensor<f32>
    ember.yield %i1, %m : tensor<i32>, tensor<f32>
  }
  return %r#1 : tensor<f32>
}
func.func @zero_trips_grad(%x: tensor<f32>, %ct: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %y, %g = ember.vjp @zero_trips(%x) cotangents(%ct) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
  return %y, %g : tensor<f32>, tensor<f32>
}

// -----

// cummax's JVP is JAX's: the JVP of its associative scan of max (adjacent
// pairs combined with strided slices, the tangent split in halves where
// they tie, the scan of the pairs, the even places combined, the two
// interleaved by interior padding), not a gather of the last maximum.
// CHECK-LABEL: func @jvp_cummax
// CHECK: ember.slice {{.*}} start = [0], limit = [3], strides = [2]
// CHECK: ember.slice {{.*}} start = [1], limit = [4], strides = [2]
// CHECK: ember.max
// CHECK: ember.compare EQ
// CHECK: ember.pad
// CHECK-NOT: ember.gather
// CHECK: return
func.func private @cm(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ember.cumulative max %x, axis = 0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @jvp_cummax(%x: tensor<4xf32>, %t: tensor<4xf32>) -> tensor<4xf32> {
  %y, %ty = ember.jvp @cm(%x) tangents(%t) wrt [0] : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %ty : tensor<4xf32>
}

// -----

// fft is linear: RFFT's cotangent is the real part of the FFT of the
// cotangent zero-padded to the full spectrum; IRFFT's the conjugated RFFT of
// the cotangent, weighted (once for frequency 0 and n / 2, twice for the
// others) over n.
// CHECK-LABEL: func @grad_rfft
// CHECK: %[[P:.*]] = ember.pad %{{.*}}, %{{.*}}, low = [0, 0], high = [0, 3], interior = [0, 0] : (tensor<2x5xcomplex<f32>>, tensor<complex<f32>>) -> tensor<2x8xcomplex<f32>>
// CHECK: %[[F:.*]] = ember.fft %[[P]] {fft_lengths = array<i64: 8>, fft_type = "FFT"}
// CHECK: ember.real %[[F]]
func.func private @rfft(%x: tensor<2x8xf32>) -> tensor<2x5xcomplex<f32>> {
  %0 = ember.fft %x {fft_type = "RFFT", fft_lengths = array<i64: 8>} : (tensor<2x8xf32>) -> tensor<2x5xcomplex<f32>>
  return %0 : tensor<2x5xcomplex<f32>>
}
func.func @grad_rfft(%x: tensor<2x8xf32>, %ct: tensor<2x5xcomplex<f32>>) -> tensor<2x8xf32> {
  %y, %g = ember.vjp @rfft(%x) cotangents(%ct) wrt [0] : (tensor<2x8xf32>, tensor<2x5xcomplex<f32>>) -> (tensor<2x5xcomplex<f32>>, tensor<2x8xf32>)
  return %g : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func @grad_irfft
// CHECK: %[[R:.*]] = ember.fft %{{.*}} {fft_lengths = array<i64: 8>, fft_type = "RFFT"} : (tensor<8xf32>) -> tensor<5xcomplex<f32>>
// CHECK: ember.select
// CHECK: %[[M:.*]] = ember.mul %[[R]]
// CHECK: ember.conj %[[M]]
func.func private @irfft(%x: tensor<5xcomplex<f32>>) -> tensor<8xf32> {
  %0 = ember.fft %x {fft_type = "IRFFT", fft_lengths = array<i64: 8>} : (tensor<5xcomplex<f32>>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func @grad_irfft(%x: tensor<5xcomplex<f32>>, %ct: tensor<8xf32>) -> tensor<5xcomplex<f32>> {
  %y, %g = ember.vjp @irfft(%x) cotangents(%ct) wrt [0] : (tensor<5xcomplex<f32>>, tensor<8xf32>) -> (tensor<8xf32>, tensor<5xcomplex<f32>>)
  return %g : tensor<5xcomplex<f32>>
}

// -----

// FFT's JVP applies FFT to the tangent; its transpose is FFT again.
// CHECK-LABEL: func @jvp_fft
// CHECK: ember.fft %{{.*}} {fft_lengths = array<i64: 4>, fft_type = "FFT"}
// CHECK: ember.fft %{{.*}} {fft_lengths = array<i64: 4>, fft_type = "FFT"}
func.func private @fft(%x: tensor<4xcomplex<f64>>) -> tensor<4xcomplex<f64>> {
  %0 = ember.fft %x {fft_type = "FFT", fft_lengths = array<i64: 4>} : (tensor<4xcomplex<f64>>) -> tensor<4xcomplex<f64>>
  return %0 : tensor<4xcomplex<f64>>
}
func.func @jvp_fft(%x: tensor<4xcomplex<f64>>, %t: tensor<4xcomplex<f64>>) -> (tensor<4xcomplex<f64>>, tensor<4xcomplex<f64>>) {
  %y, %ty = ember.jvp @fft(%x) tangents(%t) wrt [0] : (tensor<4xcomplex<f64>>, tensor<4xcomplex<f64>>) -> (tensor<4xcomplex<f64>>, tensor<4xcomplex<f64>>)
  return %y, %ty : tensor<4xcomplex<f64>>, tensor<4xcomplex<f64>>
}
