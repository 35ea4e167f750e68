// RUN: ember-opt %s -ember-to-linalg -split-input-file | FileCheck %s
// RUN: ember-opt %s -split-input-file -pass-pipeline="builtin.module(ember-to-linalg,canonicalize,cse,linalg-generalize-named-ops,linalg-fuse-elementwise-ops,canonicalize,ember-avoid-buffer-copies,eliminate-empty-tensors,ember-unique-results,one-shot-bufferize{bufferize-function-boundaries allow-return-allocs-from-loops function-boundary-type-conversion=identity-layout-map unknown-type-conversion=identity-layout-map},buffer-results-to-out-params{hoist-static-allocs=true modify-public-functions=true},canonicalize,ember-lower-copies)" | FileCheck %s --check-prefix=BUF

// Ref arguments become buffers updated in place (LowerRefs.cpp). The second
// run is the CPU codegen up to bufferization and ember-lower-copies
// (lib/Pipelines/Targets).

// The reads and writes are threaded through the body: one read on entry,
// the addupdate an add, one write of the last value.
// CHECK-LABEL: func @step
// CHECK-SAME: (%[[R:.*]]: memref<4xf32>, %{{.*}}: tensor<4xf32> {bufferization.writable = false})
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[R]] restrict writable : memref<4xf32> to tensor<4xf32>
// CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%[[T]], %{{.*}})
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%[[M]], %{{.*}})
// CHECK: %[[W:.*]] = bufferization.materialize_in_destination %[[A]] in %[[T]]
// CHECK: bufferization.materialize_in_destination %[[W]] in writable %[[R]]
// The last value is computed in the ref's buffer: no copy into it.
// BUF-LABEL: func @step
// BUF-SAME: (%[[R:.*]]: memref<4xf32>, %[[X:.*]]: memref<4xf32>, %{{.*}}: memref<f32>)
// BUF: linalg.generic {{.*}} ins(%[[M:.*]], %[[X]] : memref<4xf32>, memref<4xf32>) outs(%[[R]] : memref<4xf32>)
// BUF-NOT: copy {{.*}}%[[R]]
// BUF: return
func.func @step(%r: !ember.ref<tensor<4xf32>>, %x: tensor<4xf32>) -> tensor<f32> {
  %v = ember.ref_get %r : !ember.ref<tensor<4xf32>>
  %y = ember.mul %v, %x : tensor<4xf32>
  ember.ref_set %r, %y : !ember.ref<tensor<4xf32>>
  ember.ref_addupdate %r, %x : !ember.ref<tensor<4xf32>>
  %s = ember.reduce sum %y, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// The value on entry is read after the last value is computed (and
// returned): the last value is computed elsewhere and copied in, after the
// returned value was copied out.
// CHECK-LABEL: func @swap
// CHECK-NOT: materialize_in_destination {{.*}} in %
// CHECK: bufferization.materialize_in_destination %{{.*}} in writable %arg0
// BUF-LABEL: func @swap
// BUF-SAME: (%[[R:.*]]: memref<4xf32>, %{{.*}}: memref<4xf32>, %[[OLD:.*]]: memref<4xf32>, %{{.*}}: memref<4xf32>)
// BUF: linalg.generic {{.*}} ins(%[[R]] : memref<4xf32>) outs(%[[E:.*]] : memref<4xf32>)
// BUF: linalg.copy ins(%[[R]] : memref<4xf32>) outs(%[[OLD]] : memref<4xf32>)
// BUF: linalg.copy ins(%[[E]] : memref<4xf32>) outs(%[[R]] : memref<4xf32>)
// BUF-NEXT: return
func.func @swap(%r: !ember.ref<tensor<4xf32>>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %old = ember.ref_swap %r, %x : !ember.ref<tensor<4xf32>>
  %e = ember.exp %old : tensor<4xf32>
  ember.ref_set %r, %e : !ember.ref<tensor<4xf32>>
  %n = ember.neg %old : tensor<4xf32>
  return %old, %n : tensor<4xf32>, tensor<4xf32>
}

// -----

// A ref only read: `to_tensor` without `writable`, nothing written. A ref
// of booleans is a buffer of bytes, as boolean arguments are.
// CHECK-LABEL: func @read
// CHECK-SAME: (%[[R:.*]]: memref<3xi8>)
// CHECK: bufferization.to_tensor %[[R]] restrict : memref<3xi8> to tensor<3xi8>
// CHECK-NOT: materialize_in_destination
// CHECK: return
func.func @read(%r: !ember.ref<tensor<3xi1>>) -> tensor<3xi1> {
  %v = ember.ref_get %r : !ember.ref<tensor<3xi1>>
  %n = ember.not %v : tensor<3xi1>
  return %n : tensor<3xi1>
}

// -----

// One element updated through dynamic_update_slice: the sum is stored
// into that element of the buffer, nothing else is written.
// BUF-LABEL: func @bump
// BUF-SAME: (%[[I:.*]]: memref<i32>, %[[R:.*]]: memref<3xf32>)
// BUF-NOT: memref.alloc() {{.*}} : memref<3xf32>
// BUF: linalg.copy
// BUF: %[[S:.*]] = memref.subview %[[R]]{{.*}} to memref<1xf32, strided<[1], offset: ?>>
// BUF-NEXT: linalg.generic {{.*}} outs(%[[S]] : memref<1xf32, strided<[1], offset: ?>>)
// BUF-NOT: copy
// BUF: return
func.func @bump(%i: tensor<i32>, %r: !ember.ref<tensor<3xf32>>) {
  %one = ember.constant dense<1.0> : tensor<1xf32>
  %v = ember.ref_get %r : !ember.ref<tensor<3xf32>>
  %s = ember.dynamic_slice %v[%i], sizes = [1] : (tensor<3xf32>, tensor<i32>) -> tensor<1xf32>
  %a = ember.add %s, %one : tensor<1xf32>
  %u = ember.dynamic_update_slice %v[%i], %a : tensor<3xf32>, tensor<1xf32>, tensor<i32>
  ember.ref_set %r, %u : !ember.ref<tensor<3xf32>>
  return
}

// -----

// A view of the value on entry is returned: the last value, an update of
// that value, is computed elsewhere and copied in.
// CHECK-LABEL: func @view_returned
// CHECK-NOT: materialize_in_destination {{.*}} in %
// CHECK: bufferization.materialize_in_destination %{{.*}} in writable %arg0
// BUF-LABEL: func @view_returned
// BUF: linalg.copy ins(%arg0 : memref<3xf32>) outs(%arg2 : memref<3xf32>)
// BUF: linalg.copy ins(%{{.*}} : memref<3xf32>) outs(%arg0 : memref<3xf32>)
// BUF-NEXT: return
func.func @view_returned(%r: !ember.ref<tensor<3xf32>>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %v = ember.ref_get %r : !ember.ref<tensor<3xf32>>
  %z = ember.constant dense<0> : tensor<i32>
  %s = ember.dynamic_slice %v[%z], sizes = [3] : (tensor<3xf32>, tensor<i32>) -> tensor<3xf32>
  %u = ember.dynamic_update_slice %v[%z], %x : tensor<3xf32>, tensor<3xf32>, tensor<i32>
  ember.ref_set %r, %u : !ember.ref<tensor<3xf32>>
  return %s : tensor<3xf32>
}

// -----

// The ref is updated in a loop, then in one branch of a conditional whose
// other branch yields the loop's value: the conditional's result may or may
// not be the ref's buffer, so it is copied in (bufferization could not
// prove an in-place write of it free of conflicts and failed).
// CHECK-LABEL: func @loop_then_cond
// CHECK: %[[T:.*]] = bufferization.to_tensor %arg0 restrict writable
// CHECK: %[[L:.*]]:2 = scf.for {{.*}} iter_args({{.*}}, %{{.*}} = %[[T]])
// CHECK: %[[C:.*]] = scf.if
// CHECK-NOT: materialize_in_destination %[[C]] in %[[T]]
// CHECK: bufferization.materialize_in_destination %[[C]] in writable %arg0
// BUF-LABEL: func @loop_then_cond
// BUF: scf.for
// BUF: scf.if
// BUF: linalg.copy
// BUF: return
func.func @loop_then_cond(%r: !ember.ref<tensor<f32>>, %p: tensor<i32>) {
  %v = ember.ref_get %r : !ember.ref<tensor<f32>>
  %z = ember.constant dense<0> : tensor<i32>
  %one = ember.constant dense<1.0> : tensor<f32>
  %w:2 = ember.while(%z, %v) {trip_count = 3 : i64} : tensor<i32>, tensor<f32> cond {
  ^bb0(%i: tensor<i32>, %a: tensor<f32>):
    %n = ember.constant dense<3> : tensor<i32>
    %c = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %c : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %a: tensor<f32>):
    %k = ember.constant dense<1> : tensor<i32>
    %i1 = ember.add %i, %k : tensor<i32>
    %a1 = ember.add %a, %one : tensor<f32>
    ember.yield %i1, %a1 : tensor<i32>, tensor<f32>
  }
  %c = ember.case %p : tensor<i32> -> tensor<f32> {
    %d = ember.mul %w#1, %w#1 : tensor<f32>
    ember.yield %d : tensor<f32>
  }, {
    ember.yield %w#1 : tensor<f32>
  }
  ember.ref_set %r, %c : !ember.ref<tensor<f32>>
  return
}

// -----

// Ref ops inside a counted loop: the written ref's value is one more
// carry (its value on entry in, its value after the loop written back),
// the ref only read inside is read on entry; bufferization updates the
// carry, and so the ref's buffer, in place: row i of %r gets x * s.
// CHECK-LABEL: func @rows_in_loop
// CHECK-DAG: %[[T:.*]] = bufferization.to_tensor %arg0 restrict writable
// CHECK-DAG: %[[S:.*]] = bufferization.to_tensor %arg1 restrict :
// CHECK: %[[L:.*]]:2 = scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %[[T]])
// CHECK: %[[W:.*]] = bufferization.materialize_in_destination %[[L]]#1 in %[[T]]
// CHECK: bufferization.materialize_in_destination %[[W]] in writable %arg0
// BUF-LABEL: func @rows_in_loop
// BUF-SAME: (%[[R:.*]]: memref<4x3xf32>, %[[S:.*]]: memref<f32>, %[[X:.*]]: memref<3xf32>)
// BUF-NOT: memref.alloc() {{.*}} : memref<4x3xf32>
// BUF: scf.for
// BUF: memref.subview %[[R]]
// BUF-NOT: linalg.copy
// BUF: return
func.func @rows_in_loop(%r: !ember.ref<tensor<4x3xf32>>, %s: !ember.ref<tensor<f32>>, %x: tensor<3xf32>) {
  %z = ember.constant dense<0> : tensor<i32>
  %zero = ember.constant dense<0> : tensor<i32>
  %w = ember.while(%z) {trip_count = 4 : i64} : tensor<i32> cond {
  ^bb0(%i: tensor<i32>):
    %n = ember.constant dense<4> : tensor<i32>
    %c = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %c : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>):
    %k = ember.constant dense<1> : tensor<i32>
    %sv = ember.ref_get %s : !ember.ref<tensor<f32>>
    %sb = ember.broadcast_in_dim %sv, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %row = ember.mul %x, %sb : tensor<3xf32>
    %row2 = ember.reshape %row : (tensor<3xf32>) -> tensor<1x3xf32>
    %v = ember.ref_get %r : !ember.ref<tensor<4x3xf32>>
    %u = ember.dynamic_update_slice %v[%i, %zero], %row2 : tensor<4x3xf32>, tensor<1x3xf32>, tensor<i32>, tensor<i32>
    ember.ref_set %r, %u : !ember.ref<tensor<4x3xf32>>
    %i1 = ember.add %i, %k : tensor<i32>
    ember.yield %i1 : tensor<i32>
  }
  return
}

// -----

// A ref written in one branch of a conditional: both branches yield its
// value (the other the value from above), and the conditional's result is
// written back.
// CHECK-LABEL: func @write_in_branch
// CHECK: %[[T:.*]] = bufferization.to_tensor %arg0 restrict writable
// CHECK: %[[C:.*]]:2 = scf.if
// CHECK: scf.yield %{{.*}}, %[[T]]
// CHECK: } else {
// CHECK: scf.yield %{{.*}}, %{{.*}}
// CHECK: bufferization.materialize_in_destination %[[C]]#1 in
func.func @write_in_branch(%r: !ember.ref<tensor<3xf32>>, %p: tensor<i32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = ember.case %p : tensor<i32> -> tensor<3xf32> {
    ember.yield %x : tensor<3xf32>
  }, {
    %v = ember.ref_get %r : !ember.ref<tensor<3xf32>>
    %n = ember.neg %v : tensor<3xf32>
    ember.ref_addupdate %r, %x : !ember.ref<tensor<3xf32>>
    ember.yield %n : tensor<3xf32>
  }
  return %0 : tensor<3xf32>
}

// -----

// A loop whose body writes a ref in a conditional: the conditional's
// result is the loop's next carry; a read after the loop sees the value
// the loop left.
// CHECK-LABEL: func @cond_in_loop
// CHECK: %[[T:.*]] = bufferization.to_tensor %arg0 restrict writable
// CHECK: %[[L:.*]]:2 = scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %[[A:.*]] = %[[T]])
// CHECK: %[[C:.*]] = scf.if
// CHECK: scf.yield %{{.*}}, %[[C]]
// CHECK: linalg.generic {{.*}} ins(%[[L]]#1
func.func @cond_in_loop(%r: !ember.ref<tensor<f32>>) -> tensor<f32> {
  %z = ember.constant dense<0> : tensor<i32>
  %w = ember.while(%z) {trip_count = 5 : i64} : tensor<i32> cond {
  ^bb0(%i: tensor<i32>):
    %n = ember.constant dense<5> : tensor<i32>
    %c = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %c : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>):
    %k = ember.constant dense<1> : tensor<i32>
    %two = ember.constant dense<2> : tensor<i32>
    %m = ember.rem %i, %two : tensor<i32>
    ember.case %m : tensor<i32> {
      %one = ember.constant dense<1.0> : tensor<f32>
      ember.ref_addupdate %r, %one : !ember.ref<tensor<f32>>
      ember.yield
    }, {
      ember.yield
    }
    %i1 = ember.add %i, %k : tensor<i32>
    ember.yield %i1 : tensor<i32>
  }
  %v = ember.ref_get %r : !ember.ref<tensor<f32>>
  %e = ember.exp %v : tensor<f32>
  return %e : tensor<f32>
}
