// RUN: ember-opt %s -ember-batch -symbol-dce -canonicalize -cse -split-input-file | FileCheck %s

// A matrix-vector product over a batch of vectors stays one contraction (no
// loop): the batched vector becomes a free dimension of dot_general.
// CHECK-LABEL: func @batched_matvec
// CHECK-NOT: ember.vmap
// CHECK: ember.dot_general %{{.*}}, %{{.*}}, batch = [] x [], contract = [1] x [1] : (tensor<4x3xf32>, tensor<8x3xf32>) -> tensor<4x8xf32>
// CHECK: ember.transpose %{{.*}}, dims = [1, 0]
// CHECK: ember.tanh %{{.*}} : tensor<8x4xf32>
// CHECK: ember.reduce sum %{{.*}}, dims = [1] : (tensor<8x4xf32>) -> tensor<8xf32>
func.func private @f(%w: tensor<4x3xf32>, %x: tensor<3xf32>) -> tensor<f32> {
  %0 = ember.dot_general %w, %x, batch = [] x [], contract = [1] x [0] : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4xf32>
  %1 = ember.tanh %0 : tensor<4xf32>
  %2 = ember.reduce sum %1, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}
func.func @batched_matvec(%w: tensor<4x3xf32>, %xs: tensor<8x3xf32>) -> tensor<8xf32> {
  %y = ember.vmap @f(%w, %xs) batched [false, true] size 8 : (tensor<4x3xf32>, tensor<8x3xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// The batched product keeps the product's precision (one side batched, and
// both).
// CHECK-LABEL: func @batched_precision
// CHECK: ember.dot_general {{.*}} contract = [1] x [1] {precision = ["HIGHEST", "DEFAULT"]}
// CHECK: ember.dot_general {{.*}} batch = [0] x [0], contract = [2] x [1] {precision = ["HIGHEST", "DEFAULT"]}
func.func private @mv(%w: tensor<4x3xf32>, %x: tensor<3xf32>) -> tensor<4xf32> {
  %0 = ember.dot_general %w, %x, batch = [] x [], contract = [1] x [0] {precision = ["HIGHEST", "DEFAULT"]} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @batched_precision(%w: tensor<4x3xf32>, %ws: tensor<8x4x3xf32>, %xs: tensor<8x3xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %y = ember.vmap @mv(%w, %xs) batched [false, true] size 8 : (tensor<4x3xf32>, tensor<8x3xf32>) -> tensor<8x4xf32>
  %z = ember.vmap @mv(%ws, %xs) batched [true, true] size 8 : (tensor<8x4x3xf32>, tensor<8x3xf32>) -> tensor<8x4xf32>
  return %y, %z : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Both operands batched: the vmapped dimension is a dot_general batch dim.
// CHECK-LABEL: func @both_batched
// CHECK: ember.dot_general %{{.*}}, %{{.*}}, batch = [0] x [0], contract = [1] x [1] : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<5xf32>
func.func private @dot(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<f32> {
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [0] x [0] : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @both_batched(%a: tensor<5x3xf32>, %b: tensor<5x3xf32>) -> tensor<5xf32> {
  %y = ember.vmap @dot(%a, %b) batched [true, true] size 5 : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<5xf32>
  return %y : tensor<5xf32>
}

// -----

// A dynamic slice at batched indices becomes a gather with batching dims.
// CHECK-LABEL: func @batched_dynamic_slice
// CHECK-NOT: ember.dynamic_slice
// CHECK: ember.gather
// CHECK-SAME: operand_batching_dims = array<i64: 0>
func.func private @ds(%x: tensor<10xf32>, %i: tensor<i32>) -> tensor<3xf32> {
  %0 = ember.dynamic_slice %x[%i], sizes = [3] : (tensor<10xf32>, tensor<i32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @batched_dynamic_slice(%x: tensor<4x10xf32>, %i: tensor<4xi32>) -> tensor<4x3xf32> {
  %y = ember.vmap @ds(%x, %i) batched [true, true] size 4 : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// Over an empty batch, the gather's batching dimension takes a slice of
// size 0 (gather_c3: a slice of 1 would be out of the empty dimension).
// CHECK-LABEL: func @empty_batch_dynamic_slice
// CHECK: ember.gather
// CHECK-SAME: slice_sizes = array<i64: 0, 3>
func.func private @ds0(%x: tensor<10xf32>, %i: tensor<i32>) -> tensor<3xf32> {
  %0 = ember.dynamic_slice %x[%i], sizes = [3] : (tensor<10xf32>, tensor<i32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @empty_batch_dynamic_slice(%x: tensor<0x10xf32>, %i: tensor<0xi32>) -> tensor<0x3xf32> {
  %y = ember.vmap @ds0(%x, %i) batched [true, true] size 0 : (tensor<0x10xf32>, tensor<0xi32>) -> tensor<0x3xf32>
  return %y : tensor<0x3xf32>
}

// -----

// The same for a batched gather.
// CHECK-LABEL: func @empty_batch_gather
// CHECK: ember.gather
// CHECK-SAME: operand_batching_dims = array<i64: 0>
// CHECK-SAME: slice_sizes = array<i64: 0, 1>
func.func private @g0(%x: tensor<5xf32>, %i: tensor<2x1xi32>) -> tensor<2xf32> {
  %0 = ember.gather %x[%i] {collapsed_slice_dims = array<i64: 0>, index_vector_dim = 1 : i64, mode = #ember<mode clip>, offset_dims = array<i64>, operand_batching_dims = array<i64>, slice_sizes = array<i64: 1>, start_index_map = array<i64: 0>, start_indices_batching_dims = array<i64>} : (tensor<5xf32>, tensor<2x1xi32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @empty_batch_gather(%x: tensor<0x5xf32>, %i: tensor<0x2x1xi32>) -> tensor<0x2xf32> {
  %y = ember.vmap @g0(%x, %i) batched [true, true] size 0 : (tensor<0x5xf32>, tensor<0x2x1xi32>) -> tensor<0x2xf32>
  return %y : tensor<0x2xf32>
}

// -----

// Reductions shift their dimensions past the batch dimension.
// CHECK-LABEL: func @batched_reduce
// CHECK: ember.reduce max %{{.*}}, dims = [2] : (tensor<6x2x3xf32>) -> tensor<6x2xf32>
func.func private @r(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = ember.reduce max %x, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @batched_reduce(%x: tensor<6x2x3xf32>) -> tensor<6x2xf32> {
  %y = ember.vmap @r(%x) batched [true] size 6 : (tensor<6x2x3xf32>) -> tensor<6x2xf32>
  return %y : tensor<6x2xf32>
}

// -----

// A while loop with a batched predicate runs until every lane is done and
// keeps the values of finished lanes (select on the per-lane predicate).
// CHECK-LABEL: func @batched_while
// CHECK: ember.while
// CHECK: ember.reduce or
// CHECK: ember.select
func.func private @w(%x: tensor<f32>) -> tensor<f32> {
  %lim = ember.constant dense<100.0> : tensor<f32>
  %r = ember.while (%x) : tensor<f32> cond {
  ^bb0(%c: tensor<f32>):
    %p = ember.compare LT, %c, %lim : (tensor<f32>, tensor<f32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<f32>):
    %n = ember.add %c, %c : tensor<f32>
    ember.yield %n : tensor<f32>
  }
  return %r : tensor<f32>
}
func.func @batched_while(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = ember.vmap @w(%x) batched [true] size 4 : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A counted loop (lax.scan, fori_loop) stays one loop with its trip count: the
// counter and the closed-over step stay per-example (no batch dimension, no
// per-lane predicate), only the accumulator depending on the batched input
// is batched (a fixed point over the body).
// CHECK-LABEL: func @batched_counted_while
// CHECK: %[[R:.*]]:3 = ember.while(%{{.*}}, %{{.*}}, %{{.*}}) {trip_count = 3 : i64} : tensor<i32>, tensor<f32>, tensor<4xf32> cond {
// CHECK-NOT: ember.reduce or
// CHECK: ember.compare LT, %{{.*}}, %{{.*}} : (tensor<i32>, tensor<i32>) -> tensor<i1>
// CHECK: } do {
// CHECK: ember.add %{{.*}}, %{{.*}} : tensor<4xf32>
// CHECK-NOT: ember.select
// CHECK: return %[[R]]#2 : tensor<4xf32>
func.func private @acc(%x: tensor<f32>) -> tensor<f32> {
  %zero = ember.constant dense<0> : tensor<i32>
  %one = ember.constant dense<1> : tensor<i32>
  %n = ember.constant dense<3> : tensor<i32>
  %step0 = ember.constant dense<2.0> : tensor<f32>
  %r:3 = ember.while (%zero, %step0, %x) {trip_count = 3 : i64} : tensor<i32>, tensor<f32>, tensor<f32> cond {
  ^bb0(%i: tensor<i32>, %s: tensor<f32>, %a: tensor<f32>):
    %p = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %s: tensor<f32>, %a: tensor<f32>):
    %i1 = ember.add %i, %one : tensor<i32>
    %s1 = ember.mul %s, %s : tensor<f32>
    %a1 = ember.add %a, %s : tensor<f32>
    ember.yield %i1, %s1, %a1 : tensor<i32>, tensor<f32>, tensor<f32>
  }
  return %r#2 : tensor<f32>
}
func.func @batched_counted_while(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = ember.vmap @acc(%x) batched [true] size 4 : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A per-example padding value: mask of the data positions, then select.
// CHECK-LABEL: func @batched_pad_value
// CHECK: ember.pad
// CHECK: ember.pad {{.*}} : (tensor<3x4xi1>, tensor<i1>) -> tensor<3x8xi1>
// CHECK: ember.select
func.func private @p(%x: tensor<4xf32>, %c: tensor<f32>) -> tensor<8xf32> {
  %0 = ember.pad %x, %c, low = [0], high = [1], interior = [1] : (tensor<4xf32>, tensor<f32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func @batched_pad_value(%x: tensor<3x4xf32>, %c: tensor<3xf32>) -> tensor<3x8xf32> {
  %y = ember.vmap @p(%x, %c) batched [true, true] size 3 : (tensor<3x4xf32>, tensor<3xf32>) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// A sequential callback runs once per example, in order; the results are
// stacked. An expand_dims callback runs once on the batched inputs, with
// unbatched inputs given a leading dimension of 1.
// CHECK-LABEL: func @batched_callbacks
// CHECK-COUNT-2: ember.host_callback 0(%{{.*}}) {has_side_effect} : (tensor<3xf32>) -> ()
// CHECK-NOT: ember.host_callback 0
// CHECK: %[[W1:.*]] = ember.reshape %{{.*}} : (tensor<3xf32>) -> tensor<1x3xf32>
// CHECK: ember.host_callback 1(%{{.*}}, %[[W1]]) {vmap_method = "expand_dims"} : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
func.func private @g(%x: tensor<3xf32>, %w: tensor<3xf32>) -> tensor<3xf32> {
  ember.host_callback 0(%x) {has_side_effect} : (tensor<3xf32>) -> ()
  %y = ember.host_callback 1(%x, %w) {vmap_method = "expand_dims"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func @batched_callbacks(%xs: tensor<2x3xf32>, %w: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = ember.vmap @g(%xs, %w) batched [true, false] size 2 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// A legacy_vectorized callback runs once on the batched inputs, the
// unbatched ones as they are.
// CHECK-LABEL: func @legacy_vectorized_callback
// CHECK-NOT: ember.reshape
// CHECK: ember.host_callback 1(%arg0, %arg1) {vmap_method = "legacy_vectorized"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
func.func private @lv(%x: tensor<3xf32>, %w: tensor<3xf32>) -> tensor<3xf32> {
  %y = ember.host_callback 1(%x, %w) {vmap_method = "legacy_vectorized"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func @legacy_vectorized_callback(%xs: tensor<2x3xf32>, %w: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = ember.vmap @lv(%xs, %w) batched [true, false] size 2 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// A callback without a batching rule traced in per-device lanes (shard_map
// over "i") is called once per lane, in lane order, when the vmap of that
// axis is expanded; the lanes' calls name the device axes left ("j"), so a
// vmap over any other axis still rejects them.
// CHECK-LABEL: func @per_device_callback
// CHECK-COUNT-3: ember.host_callback 4(%{{.*}}) {device_axes = ["j"], vmap_method = "none"} : (tensor<2xf32>) -> tensor<2xf32>
// CHECK-NOT: ember.host_callback
// CHECK: ember.concatenate
func.func private @dev(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = ember.host_callback 4(%x) {device_axes = ["i", "j"], vmap_method = "none"} : (tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}
func.func @per_device_callback(%xs: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %y = ember.vmap @dev(%xs) batched [true] size 3 axis "i" : (tensor<3x2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}


// -----

// A case with a batched index becomes both branches plus a per-example select.
// CHECK-LABEL: func @batched_case
// CHECK-NOT: ember.case
// CHECK: ember.compare LE, %{{.*}}, %{{.*}} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
// CHECK: ember.select %{{.*}} : tensor<4x3xi1>, tensor<4x3xf32>
func.func private @gc(%i: tensor<i32>, %a: tensor<3xf32>) -> tensor<3xf32> {
  %r = ember.case %i : tensor<i32> -> tensor<3xf32> {
    ember.yield %a : tensor<3xf32>
  }, {
    %n = ember.neg %a : tensor<3xf32>
    ember.yield %n : tensor<3xf32>
  }
  return %r : tensor<3xf32>
}
func.func @batched_case(%is: tensor<4xi32>, %a: tensor<3xf32>) -> tensor<4x3xf32> {
  %y = ember.vmap @gc(%is, %a) batched [true, false] size 4 : (tensor<4xi32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// reduce_window with a per-example init value: pad with it per example
// (mask + select), reduce with the identity, then add the init once.
// CHECK-LABEL: func @batched_window_init
// CHECK: ember.select %{{.*}} : tensor<2x6xi1>, tensor<2x6xf32>
// CHECK: ember.reduce_window sum %{{.*}}, %{{.*}}, window = [1, 2], strides = [1, 1], low = [0, 0], high = [0, 0]
// CHECK: ember.add %{{.*}}, %{{.*}} : tensor<2x5xf32>
func.func private @rw(%x: tensor<4xf32>, %i: tensor<f32>) -> tensor<5xf32> {
  %r = ember.reduce_window sum %x, %i, window = [2], strides = [1], low = [1], high = [1] : (tensor<4xf32>, tensor<f32>) -> tensor<5xf32>
  return %r : tensor<5xf32>
}
func.func @batched_window_init(%xs: tensor<2x4xf32>, %is: tensor<2xf32>) -> tensor<2x5xf32> {
  %y = ember.vmap @rw(%xs, %is) batched [true, true] size 2 : (tensor<2x4xf32>, tensor<2xf32>) -> tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

// Run-time stacks (vmap of reverse mode through a while_loop): the lanes
// share one stack, whose handle is the maximum of the lanes' handles (0 for
// a lane that has not pushed); a push stores every lane (`lanes`, recorded
// by the stack), and a pop reads lane j at lane j's index (`lanes`).
// CHECK-LABEL: func @batch_stacks
// CHECK: %[[H:.*]] = ember.reduce max %arg1, dims = [0] : (tensor<4xi64>) -> tensor<i64>
// CHECK: %[[P:.*]] = ember.stack_push %[[H]](%arg0) {lanes = 4 : i64} : (tensor<i64>, tensor<4x3xf32>) -> tensor<i64>
// CHECK: %[[PB:.*]] = ember.broadcast_in_dim %[[P]], dims = [] : (tensor<i64>) -> tensor<4xi64>
// CHECK: %[[H2:.*]] = ember.reduce max %[[PB]], dims = [0] : (tensor<4xi64>) -> tensor<i64>
// CHECK: %[[K:.*]] = ember.broadcast_in_dim %arg2, dims = [] : (tensor<i64>) -> tensor<4xi64>
// CHECK: %{{.*}}, %[[V:.*]] = ember.stack_pop %[[H2]][%[[K]]] {lanes = 4 : i64} : (tensor<i64>, tensor<4xi64>) -> (tensor<i64>, tensor<4x3xf32>)
// CHECK: return %[[V]]
func.func private @stacks(%x: tensor<3xf32>, %h: tensor<i64>, %k: tensor<i64>) -> tensor<3xf32> {
  %h1 = ember.stack_push %h(%x) : (tensor<i64>, tensor<3xf32>) -> tensor<i64>
  %h2, %y = ember.stack_pop %h1[%k] : (tensor<i64>, tensor<i64>) -> (tensor<i64>, tensor<3xf32>)
  return %y : tensor<3xf32>
}
func.func @batch_stacks(%xs: tensor<4x3xf32>, %hs: tensor<4xi64>, %k: tensor<i64>) -> tensor<4x3xf32> {
  %r = ember.vmap @stacks(%xs, %hs, %k) batched [true, true, false] size 4 : (tensor<4x3xf32>, tensor<4xi64>, tensor<i64>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}


// -----

// The linear algebra ops take leading batch dimensions themselves: qr and
// svd (with one result or three) just gain the vmapped one.
// CHECK-LABEL: func @batched_qr_svd
// CHECK-NOT: ember.vmap
// CHECK: ember.qr %arg0 {full_matrices = true} : (tensor<6x4x3xf32>) -> (tensor<6x4x4xf32>, tensor<6x4x3xf32>)
// CHECK: ember.svd %arg0 {full_matrices = false} : (tensor<6x4x3xf32>) -> (tensor<6x3xf32>, tensor<6x4x3xf32>, tensor<6x3x3xf32>)
// CHECK: ember.svd %arg0 {full_matrices = false} : (tensor<6x4x3xf32>) -> tensor<6x3xf32>
func.func private @qs(%a: tensor<4x3xf32>) -> (tensor<4x4xf32>, tensor<4x3xf32>, tensor<3xf32>) {
  %q, %r = ember.qr %a {full_matrices = true} : (tensor<4x3xf32>) -> (tensor<4x4xf32>, tensor<4x3xf32>)
  %s, %u, %vh = ember.svd %a {full_matrices = false} : (tensor<4x3xf32>) -> (tensor<3xf32>, tensor<4x3xf32>, tensor<3x3xf32>)
  %s2 = ember.svd %a {full_matrices = false} : (tensor<4x3xf32>) -> tensor<3xf32>
  %u0 = ember.add %u, %r : tensor<4x3xf32>
  %t = ember.add %s, %s2 : tensor<3xf32>
  return %q, %u0, %t : tensor<4x4xf32>, tensor<4x3xf32>, tensor<3xf32>
}
func.func @batched_qr_svd(%as: tensor<6x4x3xf32>) -> (tensor<6x4x4xf32>, tensor<6x4x3xf32>, tensor<6x3xf32>) {
  %q, %u, %t = ember.vmap @qs(%as) batched [true] size 6 : (tensor<6x4x3xf32>) -> (tensor<6x4x4xf32>, tensor<6x4x3xf32>, tensor<6x3xf32>)
  return %q, %u, %t : tensor<6x4x4xf32>, tensor<6x4x3xf32>, tensor<6x3xf32>
}

// -----

// A call of a private function in a loop body of the vmapped function (a
// closure-converted function, say; calls at the top level are inlined):
// a call of the callee's batched clone.
// CHECK-LABEL: func @batched_call_in_loop
// CHECK: ember.while
// CHECK: } do {
// CHECK: call @g_batched(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-LABEL: func private @g_batched
// CHECK: ember.mul %{{.*}}, %{{.*}} : tensor<4xf32>
func.func private @g(%x: tensor<f32>) -> tensor<f32> {
  %0 = ember.mul %x, %x : tensor<f32>
  return %0 : tensor<f32>
}
func.func private @loop_calls_g(%x: tensor<f32>) -> tensor<f32> {
  %lim = ember.constant dense<100.0> : tensor<f32>
  %r = ember.while (%x) : tensor<f32> cond {
  ^bb0(%c: tensor<f32>):
    %p = ember.compare LT, %c, %lim : (tensor<f32>, tensor<f32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<f32>):
    %n = func.call @g(%c) : (tensor<f32>) -> tensor<f32>
    ember.yield %n : tensor<f32>
  }
  return %r : tensor<f32>
}
func.func @batched_call_in_loop(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = ember.vmap @loop_calls_g(%x) batched [true] size 4 : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A call with a user's batching rule (`ember.batch_rule`, traced for this
// batch size) is batched by calling the rule, its unbatched operands
// broadcast, instead of batching the callee's ops (spec.md, "Batching rules
// on calls"); a rule for another size is left to the callee's batching.
// CHECK-LABEL: func @batched_by_rule
// CHECK: %[[B:.*]] = ember.broadcast_in_dim %arg0, dims = [1] : (tensor<3xf32>) -> tensor<4x3xf32>
// CHECK: %[[C:.*]] = ember.cos %arg1 : tensor<4x3xf32>
// CHECK: %[[R:.*]] = ember.add %[[C]], %[[B]] : tensor<4x3xf32>
// CHECK-NOT: ember.sin
// CHECK: return %[[R]]
func.func private @plain(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %0 = ember.sin %x : tensor<3xf32>
  %1 = ember.add %0, %y : tensor<3xf32>
  return %1 : tensor<3xf32>
}
func.func private @rule(%x: tensor<4x3xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = ember.cos %x : tensor<4x3xf32>
  %1 = ember.add %0, %y : tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}
func.func private @body(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
  %0 = func.call @plain(%x, %y) {ember.batch_rule = @rule, ember.batch_size = 4 : i64} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @batched_by_rule(%y: tensor<3xf32>, %xs: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %r = ember.vmap @body(%xs, %y) batched [true, false] size 4 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// A rule traced for an operand the same on every lane (JAX's batch
// dimension None) takes it without the batch axis: no broadcast.
// CHECK-LABEL: func @rule_with_unbatched_operand
// CHECK-NOT: ember.broadcast_in_dim
// CHECK: %[[D:.*]] = ember.dot_general %arg1, %arg0
// CHECK-NOT: ember.sin
// CHECK: return %[[D]]
func.func private @mv(%a: tensor<2x3xf32>, %x: tensor<3xf32>) -> tensor<2xf32> {
  %0 = ember.sin %x : tensor<3xf32>
  %1 = ember.dot_general %a, %0, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}
func.func private @mv_rule(%a: tensor<2x3xf32>, %xs: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %0 = ember.dot_general %xs, %a, batch = [] x [], contract = [1] x [1] : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
func.func private @mv_body(%x: tensor<3xf32>, %a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = func.call @mv(%a, %x) {ember.batch_rule = @mv_rule, ember.batch_size = 4 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @rule_with_unbatched_operand(%a: tensor<2x3xf32>, %xs: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %r = ember.vmap @mv_body(%xs, %a) batched [true, false] size 4 : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

// CHECK-LABEL: func @rule_of_another_size
// CHECK: ember.sin %{{.*}} : tensor<2x3xf32>
// CHECK-NOT: ember.cos
func.func private @plain2(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = ember.sin %x : tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func private @rule2(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = ember.cos %x : tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
func.func private @body2(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = func.call @plain2(%x) {ember.batch_rule = @rule2, ember.batch_size = 4 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @rule_of_another_size(%xs: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = ember.vmap @body2(%xs) batched [true] size 2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

// A custom_vjp's tangent map (ember.custom_linear, known by its transpose)
// is batched by batching its bwd: residuals and tangents broadcast to the
// batch, the captures as they are (jacfwd of a custom_vjp function reaches
// here before ember-inline-custom reports forward mode).
// CHECK-LABEL: func @batched_custom_linear
// CHECK: ember.broadcast_in_dim
// CHECK: ember.custom_linear @[[BWD:[a-z_0-9]+]](%{{.*}}, %{{.*}}) segments [1, 1, 0] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: func.func private @[[BWD]](%{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xf32>) -> tensor<4xf32>
func.func private @bwd(%r: tensor<f32>, %ct: tensor<f32>) -> tensor<f32> {
  %0 = ember.mul %ct, %r : tensor<f32>
  return %0 : tensor<f32>
}
func.func private @lin(%r: tensor<f32>, %t: tensor<f32>) -> tensor<f32> {
  %0 = ember.custom_linear @bwd(%r, %t) segments [1, 1, 0] : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @batched_custom_linear(%r: tensor<f32>, %t: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ember.vmap @lin(%r, %t) batched [false, true] size 4 : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// fft transforms trailing dimensions: the batch is one more leading one.
// CHECK-LABEL: func @batched_fft
// CHECK-NOT: ember.vmap
// CHECK: ember.fft %{{.*}} {fft_lengths = array<i64: 8>, fft_type = "RFFT"} : (tensor<6x3x8xf32>) -> tensor<6x3x5xcomplex<f32>>
func.func private @rfft(%x: tensor<3x8xf32>) -> tensor<3x5xcomplex<f32>> {
  %0 = ember.fft %x {fft_type = "RFFT", fft_lengths = array<i64: 8>} : (tensor<3x8xf32>) -> tensor<3x5xcomplex<f32>>
  return %0 : tensor<3x5xcomplex<f32>>
}
func.func @batched_fft(%xs: tensor<6x3x8xf32>) -> tensor<6x3x5xcomplex<f32>> {
  %y = ember.vmap @rfft(%xs) batched [true] size 6 : (tensor<6x3x8xf32>) -> tensor<6x3x5xcomplex<f32>>
  return %y : tensor<6x3x5xcomplex<f32>>
}
