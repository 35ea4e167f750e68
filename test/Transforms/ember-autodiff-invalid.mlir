// RUN: ember-opt %s -ember-autodiff -split-input-file -verify-diagnostics

// A pure callback is opaque: differentiating through it is an error (as in
// JAX); an effect-only callback (debug.print) has no tangents and is kept.
func.func private @cb(%x: tensor<3xf32>) -> tensor<3xf32> {
  ember.host_callback 0(%x) {has_side_effect} : (tensor<3xf32>) -> ()
  // expected-error @+1 {{Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while taking gradients.}}
  %y = ember.host_callback 1(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func @through_callback(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y, %t = ember.jvp @cb(%x) tangents(%x) wrt [0] : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %t : tensor<3xf32>
}

// -----

// An io_callback (an effectful callback with results): JAX's words.
func.func private @io(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{IO callbacks do not support JVP.}}
  %y = ember.host_callback 2(%x) {has_side_effect} : (tensor<3xf32>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}
func.func @through_io_callback(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y, %t = ember.jvp @io(%x) tangents(%x) wrt [0] : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %t : tensor<3xf32>
}

// -----

// The stack a reverse-mode loop derivative saves its residuals on cannot be
// differentiated again (grad of grad through a run-time trip count).
func.func private @pushes(%x: tensor<f32>) -> tensor<i64> {
  %h = ember.constant dense<0> : tensor<i64>
  // expected-error @+1 {{cannot be differentiated again}}
  %h1 = ember.stack_push %h(%x) : (tensor<i64>, tensor<f32>) -> tensor<i64>
  return %h1 : tensor<i64>
}
func.func @jvp_push(%x: tensor<f32>) -> tensor<i64> {
  %y, %t = ember.jvp @pushes(%x) tangents(%x) wrt [0] : (tensor<f32>, tensor<f32>) -> (tensor<i64>, tensor<i64>)
  return %y : tensor<i64>
}

// -----

// A backward-pass effect must be on the differentiated path: here the
// custom_vjp's input is a constant, so its bwd never runs and ember.vjp
// would miss the effect it promises.
func.func private @st(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
func.func private @st_fwd(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
func.func private @st_bwd(%ct: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  return %ct, %ct : tensor<f32>, tensor<f32>
}
func.func private @off_path(%x: tensor<f32>) -> tensor<f32> {
  %c = ember.constant dense<2.0> : tensor<f32>
  %y = ember.custom_vjp_call @st fwd @st_fwd bwd @st_bwd(%c) segments [1, 0, 0, 0, 0] {bwd_effects = 1 : i64} : (tensor<f32>) -> tensor<f32>
  %m = ember.mul %x, %y : tensor<f32>
  return %m : tensor<f32>
}
func.func @effects_off_path(%x: tensor<f32>) -> tensor<f32> {
  %one = ember.constant dense<1.0> : tensor<f32>
  // expected-error @+1 {{a custom_vjp whose backward pass writes a ref must be on the differentiated path}}
  %y, %g, %e = ember.vjp @off_path(%x) cotangents(%one) wrt [0] {effects = 1 : i64} : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>)
  return %g : tensor<f32>
}

// -----

// A ref passed to a differentiated function is not differentiated: a value
// with a tangent cannot be written into it (JAX's error, at the write).
func.func private @acc(%x: tensor<3xf32>, %r: !ember.ref<tensor<3xf32>>) -> tensor<3xf32> {
  %y = ember.sin %x : tensor<3xf32>
  // expected-error @+1 {{performing a set/swap operation with a differentiated value on a non-differentiated array reference of type Ref{float32[3]}}}
  ember.ref_addupdate %r, %y : !ember.ref<tensor<3xf32>>
  return %y : tensor<3xf32>
}
func.func @grad_writes_ref(%x: tensor<3xf32>, %r: !ember.ref<tensor<3xf32>>) -> (tensor<3xf32>, tensor<3xf32>) {
  %y, %g = ember.vjp @acc(%x, %r) cotangents(%x) wrt [0] : (tensor<3xf32>, !ember.ref<tensor<3xf32>>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %y, %g : tensor<3xf32>, tensor<3xf32>
}
