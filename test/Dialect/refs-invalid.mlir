// RUN: ember-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect
//
// One case per numbered rule of the refs (docs/spec.md, "Refs").

// ref_c1
// expected-error @+1 {{ref_c1: a ref holds a statically shaped tensor, not 'tensor<?xf32>'}}
func.func @ref_c1_shape(%r: !ember.ref<tensor<?xf32>>) {
  return
}

// -----

// ref_c1
// expected-error @+1 {{ref_c1: a ref holds a tensor of an element type Ember has, not 'si32'}}
func.func @ref_c1_element(%r: !ember.ref<tensor<2xsi32>>) {
  return
}

// -----

// ref_c2: the ref is not an argument of the function.
func.func @ref_c2_value(%r: !ember.ref<tensor<3xf32>>) -> tensor<3xf32> {
  %0 = "test.make_ref"() : () -> !ember.ref<tensor<3xf32>>
  // expected-error @+1 {{ref_c2: the ref must be an argument of the enclosing function and the op in its body}}
  %1 = ember.ref_get %0 : !ember.ref<tensor<3xf32>>
  return %1 : tensor<3xf32>
}

// -----

// ref_c2: the op is in a region of an op other than ember.while and
// ember.case.
func.func @ref_c2_region(%r: !ember.ref<tensor<f32>>) {
  "test.region"() ({
    // expected-error @+1 {{ref_c2: the ref must be an argument of the enclosing function and the op in its body or in ember.while and ember.case regions nested in it}}
    %1 = ember.ref_get %r : !ember.ref<tensor<f32>>
    "test.end"() : () -> ()
  }) : () -> ()
  return
}

// -----

// ref_c2: a case nested in another op's region.
func.func @ref_c2_case_in_region(%r: !ember.ref<tensor<f32>>, %p: tensor<i32>, %x: tensor<f32>) {
  "test.region"() ({
    %0 = ember.case %p : tensor<i32> -> tensor<f32> {
      ember.yield %x : tensor<f32>
    }, {
      // expected-error @+1 {{ref_c2}}
      %1 = ember.ref_get %r : !ember.ref<tensor<f32>>
      ember.yield %1 : tensor<f32>
    }
    "test.end"() : () -> ()
  }) : () -> ()
  return
}

// -----

// ref_c5: a while's condition writes a ref.
func.func @ref_c5(%r: !ember.ref<tensor<i32>>, %x: tensor<i32>) -> tensor<i32> {
  %0 = ember.while (%x) : tensor<i32> cond {
  ^bb0(%c: tensor<i32>):
    // expected-error @+1 {{ref_c5: a while's cond region does not write refs}}
    ember.ref_addupdate %r, %c : !ember.ref<tensor<i32>>
    %p = ember.compare LT, %c, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<i32>):
    ember.yield %c : tensor<i32>
  }
  return %0 : tensor<i32>
}

// -----

// ref_c3
func.func @ref_c3(%r: !ember.ref<tensor<3xf32>>, %v: tensor<2xf32>) {
  // expected-error @+1 {{ref_c3: the value has the ref's value type}}
  "ember.ref_set"(%r, %v) : (!ember.ref<tensor<3xf32>>, tensor<2xf32>) -> ()
  return
}

// -----

// ref_c4
func.func @ref_c4(%r: !ember.ref<tensor<3xi1>>, %v: tensor<3xi1>) {
  // expected-error @+1 {{ref_c4: addupdate needs a ref of numbers, not of booleans}}
  ember.ref_addupdate %r, %v : !ember.ref<tensor<3xi1>>
  return
}

// -----

// A tensor where the callee takes a ref (transform_c2).
func.func private @f(%r: !ember.ref<tensor<3xf32>>) -> tensor<3xf32>

func.func @transformed(%x: tensor<3xf32>, %t: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  // expected-error @+1 {{transform_c2}}
  %0:2 = ember.jvp @f(%x) tangents(%t) wrt [0] : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %0#0, %0#1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// transform_c7: a ref is not differentiated.
func.func private @f(%x: tensor<3xf32>, %r: !ember.ref<tensor<3xf32>>) -> tensor<3xf32>

func.func @wrt_ref(%x: tensor<3xf32>, %r: !ember.ref<tensor<3xf32>>, %c: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  // expected-error @+1 {{transform_c7: wrt index 1 names a ref argument}}
  %0:2 = ember.vjp @f(%x, %r) cotangents(%c) wrt [1] : (tensor<3xf32>, !ember.ref<tensor<3xf32>>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %0#0, %0#1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// ref_c6: one ref passed twice would be two refs in the callee.
func.func private @f(%a: !ember.ref<tensor<3xf32>>, %b: !ember.ref<tensor<3xf32>>) -> tensor<3xf32>

func.func @twice(%r: !ember.ref<tensor<3xf32>>) -> tensor<4x3xf32> {
  // expected-error @+1 {{ref_c6: a ref is passed more than once}}
  %0 = ember.vmap @f(%r, %r) batched [false, false] size 4 : (!ember.ref<tensor<3xf32>>, !ember.ref<tensor<3xf32>>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// ref_c6: a transformation op passing a ref stands where the ref ops may.
func.func private @f(%r: !ember.ref<tensor<3xf32>>) -> tensor<3xf32>

func.func @placed(%r: !ember.ref<tensor<3xf32>>) {
  scf.execute_region {
    // expected-error @+1 {{ref_c2: the ref must be an argument of the enclosing function}}
    %0 = ember.vmap @f(%r) batched [false] size 4 : (!ember.ref<tensor<3xf32>>) -> tensor<4x3xf32>
    scf.yield
  }
  return
}

// -----

// vmap_c3: a batched ref holds one row per lane.
func.func private @f(%r: !ember.ref<tensor<3xf32>>) -> tensor<3xf32>

func.func @rows(%r: !ember.ref<tensor<3xf32>>) -> tensor<4x3xf32> {
  // expected-error @+1 {{vmap_c3: input 0 must have type '!ember.ref<tensor<4x3xf32>>'}}
  %0 = ember.vmap @f(%r) batched [true] size 4 : (!ember.ref<tensor<3xf32>>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
