// RUN: ember-opt %s -ember-expand-transforms=keep-kernel-calls=true | FileCheck %s
// Found by ember-opt-fuzz (#21, `make fuzz-opt`, 38th session): a recorded
// TPU kernel whose text names an op of a dialect not yet loaded (`math.`)
// made ember-batch load that dialect while the pass manager ran (an abort:
// "Loading a dialect while in a multi-threaded execution context"). Recorded
// kernels are parsed in a context of their own; this one does not parse,
// which is the kernel's error, reported only when lowering for TPU.
// CHECK: ember_tpu.kernel_error = "k: NotImplementedError: under vmap, its recorded kernel does not parse"
module {
  func.func @main(%xs: tensor<3x16x128xf32>, %y: tensor<16x128xf32>) -> tensor<3x16x128xf32> {
    %r = ember.vmap @f(%xs, %y) batched [true, false] size 3 : (tensor<3x16x128xf32>, tensor<16x128xf32>) -> tensor<3x16x128xf32>
    return %r : tensor<3x16x128xf32>
  }
  func.func private @f(%x: tensor<16x128xf32>, %y: tensor<16x128xf32>) -> tensor<16x128xf32> {
    %r = call @pallas_k(%x, %y) : (tensor<16x128xf32>, tensor<16x128xf32>) -> tensor<16x128xf32>
    return %r : tensor<16x128xf32>
  }
  func.func private @pallas_k(%x: tensor<16x128xf32>, %y: tensor<16x128xf32>) -> tensor<16x128xf32>
      attributes {ember_tpu.kernel_module = "module { func.func @k(%arg0: tensor<i32>, %arg1: tensor<8x128xf32>, %arg2: tensor<8x128xf32>, %arg3: tensor<8x128xf32>) -> tensor<8x128xf32> attributes {dimension_semantics = [#ember_tpu.dimension_semantics<arbitrary>], ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>], ember_tpu.core_type = #ember_tpu.core_type<tc>, ember_tpu.grid_args = 1 : i64, ember_tpu.result_args = array<i64: 2>, iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 8, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 8, 128>}, {transform_indices = @transform_2, window_bounds = array<i64: 8, 128>}]} { %0 = ember.add %arg1, %arg2 : tensor<8x128xf32> return %0 : tensor<8x128xf32> } func.func @transform_0(%arg0: tensor<i32>) -> (tensor<i32>, tensor<i32>) attributes {ember_tpu.arg_spaces = [], ember_tpu.grid_args = 1 : i64} { %0 = ember.constant dense<0> : tensor<i32> return %arg0, %0 : tensor<i32>, tensor<i32> } func.func @transform_1(%arg0: tensor<i32>) -> (tensor<i32>, tensor<i32>) attributes {ember_tpu.arg_spaces = [], ember_tpu.grid_args = 1 : i64} {math.expber.constant dense<0> : tensor<i32> return %arg0, %0 : tensor<i32>, tensor<i32> } func.func @transform_2(%arg0: tensor<i32>) -> (tensor<i32>, tensor<i32>) attributes {ember_tpu.arg_spaces = [], ember_tpu.grid_args = 1 : i64} { %0 = ember.constant dense<0> : tensor<i32> return %arg0, %0 : tensor<i32>, tensor<i32> } }", ember_tpu.kernel_name = "k", ember_tpu.kernel_aliases = array<i64>} {
    %0 = ember.add %x, %y : tensor<16x128xf32>
    return %0 : tensor<16x128xf32>
  }
}
