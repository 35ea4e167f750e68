// RUN: ember-opt %s -ember-batch -split-input-file -verify-diagnostics

// A pure callback without a vmap_method cannot be batched (as in JAX).
func.func private @h(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{cannot be batched: this callback has no vmap_method}}
  %y = ember.host_callback 2(%x) {vmap_method = "none"} : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func @unbatchable(%xs: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = ember.vmap @h(%xs) batched [true] size 2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Per-device lanes of "i" do not make a vmap over another axis legal.
func.func private @d(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{cannot be batched: this callback has no vmap_method}}
  %y = ember.host_callback 2(%x) {device_axes = ["i"], vmap_method = "none"} : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func @other_axis(%xs: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = ember.vmap @d(%xs) batched [true] size 2 axis "j" : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Once its device lanes are expanded, an outer vmap of the user's cannot
// batch the lanes' calls either.
func.func private @d2(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{cannot be batched: this callback has no vmap_method}}
  %y = ember.host_callback 2(%x) {device_axes = ["i"], vmap_method = "none"} : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func private @lanes_i(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = ember.vmap @d2(%x) batched [true] size 2 axis "i" : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
func.func @user_vmap_outside(%xs: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  %y = ember.vmap @lanes_i(%xs) batched [true] size 4 : (tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  return %y : tensor<4x2x3xf32>
}

// -----

// Nor can an ordered io_callback (JAX's "Cannot vmap ordered IO callback").
func.func private @o(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{Cannot `vmap` ordered IO callback.}}
  %y = ember.host_callback 2(%x) {has_side_effect, vmap_method = "ordered"} : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func @ordered(%xs: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = ember.vmap @o(%xs) batched [true] size 2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// A pop that already has lanes is not batched again (vmap of vmap).
func.func private @lanes(%h: tensor<i64>, %k: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+1 {{cannot be batched: vmap of vmap of the reverse-mode derivative of a while_loop}}
  %h2, %y = ember.stack_pop %h[%k] {lanes = 2 : i64} : (tensor<i64>, tensor<2xi64>) -> (tensor<i64>, tensor<2xf32>)
  return %y : tensor<2xf32>
}
func.func @batch_lanes(%h: tensor<i64>, %k: tensor<3x2xi64>) -> tensor<3x2xf32> {
  %r = ember.vmap @lanes(%h, %k) batched [false, true] size 3 : (tensor<i64>, tensor<3x2xi64>) -> tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}

// -----

// A call (in a loop body) of a function without a body cannot be batched.
func.func private @external(tensor<f32>) -> tensor<f32>
func.func private @loop_calls_external(%x: tensor<f32>) -> tensor<f32> {
  %lim = ember.constant dense<100.0> : tensor<f32>
  %r = ember.while (%x) : tensor<f32> cond {
  ^bb0(%c: tensor<f32>):
    %p = ember.compare LT, %c, %lim : (tensor<f32>, tensor<f32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<f32>):
    // expected-error @+1 {{ember-batch: cannot batch a call of 'external', which has no body}}
    %n = func.call @external(%c) : (tensor<f32>) -> tensor<f32>
    ember.yield %n : tensor<f32>
  }
  return %r : tensor<f32>
}
func.func @batched_external(%xs: tensor<2xf32>) -> tensor<2xf32> {
  %y = ember.vmap @loop_calls_external(%xs) batched [true] size 2 : (tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func private @plain(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = ember.sin %x : tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func private @wrong(%x: tensor<3xf32>) -> tensor<3xf32> {
  return %x : tensor<3xf32>
}
func.func private @body(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{ember-batch: the batching rule 'wrong' has type}}
  %0 = func.call @plain(%x) {ember.batch_rule = @wrong, ember.batch_size = 4 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @bad_rule(%xs: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %r = ember.vmap @body(%xs) batched [true] size 4 : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// A rule traced for an unbatched operand cannot take a batched one.
func.func private @plain(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = ember.sin %x : tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func private @for_unbatched(%x: tensor<3xf32>) -> tensor<4x3xf32> {
  %0 = ember.broadcast_in_dim %x, dims = [1] : (tensor<3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
func.func private @body(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{ember-batch: the batching rule 'for_unbatched' has type}}
  %0 = func.call @plain(%x) {ember.batch_rule = @for_unbatched, ember.batch_size = 4 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @unbatched_rule_batched_operand(%xs: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %r = ember.vmap @body(%xs) batched [true] size 4 : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// A ref shared by the lanes (not batched) cannot be written with a value
// that varies over them (JAX's error, at the write).
func.func private @put(%x: tensor<3xf32>, %r: !ember.ref<tensor<3xf32>>) -> tensor<3xf32> {
  // expected-error @+1 {{performing a set/swap operation with vmapped value on an unbatched array reference of type Ref{float32[3]}}}
  ember.ref_set %r, %x : !ember.ref<tensor<3xf32>>
  return %x : tensor<3xf32>
}
func.func @vmap_writes_shared_ref(%xs: tensor<4x3xf32>, %r: !ember.ref<tensor<3xf32>>) -> tensor<4x3xf32> {
  %y = ember.vmap @put(%xs, %r) batched [true, false] size 4 : (tensor<4x3xf32>, !ember.ref<tensor<3xf32>>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
