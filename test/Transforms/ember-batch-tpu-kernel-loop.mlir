// RUN: ember-opt %s -split-input-file -ember-expand-transforms=keep-kernel-calls=true | FileCheck %s

// vmap of a Pallas kernel's interpreter with its kernel recorded for TPU,
// the cases JAX's pallas_call batching rule handles before batching the
// grid. Batched scalar-prefetch operands: a counted loop over the examples,
// each calling the unbatched interpreter (which keeps its kernel) on its
// rows, the results written into row i of [n, ...] buffers.

// CHECK-LABEL: func.func @main(
// CHECK: %[[L:.*]]:2 = ember.while({{.*}}) {trip_count = 2 : i64} : tensor<i64>, tensor<2x16x128xf32> cond
// CHECK: ember.compare LT
// CHECK: } do {
// CHECK: ^bb0(%[[I:.*]]: tensor<i64>, %[[BUF:.*]]: tensor<2x16x128xf32>):
// CHECK: %[[IDX:.*]] = ember.dynamic_slice %arg0[%[[I]], %{{.*}}], sizes = [1, 5]
// CHECK: %[[ROW:.*]] = ember.reshape %[[IDX]] {{.*}} -> tensor<5xi32>
// CHECK: %[[X:.*]] = ember.dynamic_slice %arg1[%[[I]], %{{.*}}, %{{.*}}], sizes = [1, 16, 128]
// CHECK: %[[XR:.*]] = ember.reshape %[[X]]
// CHECK: %[[R:.*]] = func.call @pallas_k(%[[ROW]], %[[XR]]) : (tensor<5xi32>, tensor<16x128xf32>) -> tensor<16x128xf32>
// CHECK: %[[R1:.*]] = ember.reshape %[[R]] {{.*}} -> tensor<1x16x128xf32>
// CHECK: ember.dynamic_update_slice %[[BUF]][%[[I]], %{{.*}}, %{{.*}}], %[[R1]]
// CHECK: return %[[L]]#1
// CHECK-NOT: pallas_k_batched
module {
  func.func @main(%idx: tensor<2x5xi32>, %xs: tensor<2x16x128xf32>) -> tensor<2x16x128xf32> {
    %r = ember.vmap @f(%idx, %xs) batched [true, true] size 2 : (tensor<2x5xi32>, tensor<2x16x128xf32>) -> tensor<2x16x128xf32>
    return %r : tensor<2x16x128xf32>
  }
  func.func private @f(%i: tensor<5xi32>, %x: tensor<16x128xf32>) -> tensor<16x128xf32> {
    %r = call @pallas_k(%i, %x) : (tensor<5xi32>, tensor<16x128xf32>) -> tensor<16x128xf32>
    return %r : tensor<16x128xf32>
  }
  func.func private @pallas_k(%i: tensor<5xi32>, %x: tensor<16x128xf32>) -> tensor<16x128xf32>
      attributes {ember_tpu.kernel_module = "module { func.func @k(%arg0: tensor<i32>, %arg1: tensor<5xi32>, %arg2: tensor<8x128xf32>, %arg3: tensor<8x128xf32>) -> tensor<8x128xf32> attributes {ember_tpu.grid_args = 1 : i64, scalar_prefetch = 1 : i64, scratch_operands = 0 : i64} { return %arg2 : tensor<8x128xf32> } }", ember_tpu.kernel_name = "k", ember_tpu.kernel_aliases = array<i64>} {
    %0 = ember.add %x, %x : tensor<16x128xf32>
    return %0 : tensor<16x128xf32>
  }
}

// -----

// An unbatched operand aliased to an output is broadcast along the batch
// first, so the batched kernel's output can alias it.

// CHECK-LABEL: func.func @main(
// CHECK: %[[B:.*]] = ember.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<8x128xf32>) -> tensor<3x8x128xf32>
// CHECK: call @pallas_k_batched(%arg0, %[[B]]) : (tensor<3x8x128xf32>, tensor<3x8x128xf32>) -> tensor<3x8x128xf32>
// CHECK-LABEL: func.func private @pallas_k_batched(
// CHECK-SAME: iteration_bounds = array<i64: 3>
module {
  func.func @main(%xs: tensor<3x8x128xf32>, %y: tensor<8x128xf32>) -> tensor<3x8x128xf32> {
    %r = ember.vmap @f(%xs, %y) batched [true, false] size 3 : (tensor<3x8x128xf32>, tensor<8x128xf32>) -> tensor<3x8x128xf32>
    return %r : tensor<3x8x128xf32>
  }
  func.func private @f(%x: tensor<8x128xf32>, %y: tensor<8x128xf32>) -> tensor<8x128xf32> {
    %r = call @pallas_k(%x, %y) : (tensor<8x128xf32>, tensor<8x128xf32>) -> tensor<8x128xf32>
    return %r : tensor<8x128xf32>
  }
  func.func private @pallas_k(%x: tensor<8x128xf32>, %y: tensor<8x128xf32>) -> tensor<8x128xf32>
      attributes {ember_tpu.kernel_module = "module { func.func @k(%arg0: tensor<8x128xf32>, %arg1: tensor<8x128xf32>, %arg2: tensor<8x128xf32>) -> tensor<8x128xf32> attributes {ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>], ember_tpu.grid_args = 0 : i64, ember_tpu.result_args = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64} { return %arg0 : tensor<8x128xf32> } }", ember_tpu.kernel_name = "k", ember_tpu.kernel_aliases = array<i64: 1, 0>} {
    %0 = ember.add %x, %y : tensor<8x128xf32>
    return %0 : tensor<8x128xf32>
  }
}
