// RUN: ember-opt %s -ember-expand-transforms=keep-kernel-calls=true | FileCheck %s
// RUN: ember-opt %s -ember-expand-transforms | FileCheck %s --check-prefix=INLINED

// vmap of a Pallas kernel's interpreter whose kernel is recorded for the TPU
// target (`ember_tpu.kernel_module`, python/ember/_src/pallas/tpu_kernel.py):
// with keep-kernel-calls the call stays, of the interpreter's batched clone,
// which carries the kernel batched as JAX's pallas_call batching rule does:
// a leading "parallel" grid dimension of the batch size, a squeezed leading
// window dimension indexed by it for the batched operand and the output,
// the unbatched operand's window unchanged (its index map ignores the new
// grid index).

// CHECK-LABEL: func.func @main(
// CHECK: %[[R:.*]] = call @pallas_k_batched(%arg0, %arg1) : (tensor<3x16x128xf32>, tensor<16x128xf32>) -> tensor<3x16x128xf32>
// CHECK: return %[[R]]
// CHECK-LABEL: func.func private @pallas_k_batched(
// CHECK-SAME: ember_tpu.kernel_aliases = array<i64>
// CHECK-SAME: func.func @k(%arg0: tensor<i32>{{[^,]*}}, %arg1: tensor<i32>{{[^,]*}}, %arg2: tensor<8x128xf32>
// CHECK-SAME: dimension_semantics = [#ember_tpu.dimension_semantics<parallel>, #ember_tpu.dimension_semantics<arbitrary>]
// CHECK-SAME: ember_tpu.grid_args = 2 : i64
// CHECK-SAME: ember_tpu.squeezed_dims = [array<i64: 0>, array<i64>, array<i64: 0>]
// CHECK-SAME: iteration_bounds = array<i64: 3, 2>
// CHECK-SAME: window_params = [{{[{]}}transform_indices = @transform_0, window_bounds = array<i64: 1, 8, 128>{{[}]}}, {{[{]}}transform_indices = @transform_1, window_bounds = array<i64: 8, 128>{{[}]}}, {{[{]}}transform_indices = @transform_2, window_bounds = array<i64: 1, 8, 128>{{[}]}}]
// CHECK-SAME: func.func @transform_0(%arg0: tensor<i32>{{[^,]*}}, %arg1: tensor<i32>{{( loc[(][^)]*[)])?}}) -> (tensor<i32>, tensor<i32>, tensor<i32>)
// CHECK-SAME: return %arg0, %arg1, %0 : tensor<i32>, tensor<i32>, tensor<i32>
// CHECK-SAME: func.func @transform_1(%arg0: tensor<i32>{{[^,]*}}, %arg1: tensor<i32>{{( loc[(][^)]*[)])?}}) -> (tensor<i32>, tensor<i32>)
// CHECK-SAME: return %arg1, %0 : tensor<i32>, tensor<i32>
// CHECK-SAME: ember_tpu.kernel_name = "k"
// CHECK: ember.add %{{.*}}, %{{.*}} : tensor<3x16x128xf32>

// INLINED-LABEL: func.func @main(
// INLINED-NOT: call
// INLINED: ember.add
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
      attributes {ember_tpu.kernel_module = "module { func.func @k(%arg0: tensor<i32>, %arg1: tensor<8x128xf32>, %arg2: tensor<8x128xf32>, %arg3: tensor<8x128xf32>) -> tensor<8x128xf32> attributes {dimension_semantics = [#ember_tpu.dimension_semantics<arbitrary>], ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>], ember_tpu.core_type = #ember_tpu.core_type<tc>, ember_tpu.grid_args = 1 : i64, ember_tpu.result_args = array<i64: 2>, iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 8, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 8, 128>}, {transform_indices = @transform_2, window_bounds = array<i64: 8, 128>}]} { %0 = ember.add %arg1, %arg2 : tensor<8x128xf32> return %0 : tensor<8x128xf32> } func.func @transform_0(%arg0: tensor<i32>) -> (tensor<i32>, tensor<i32>) attributes {ember_tpu.arg_spaces = [], ember_tpu.grid_args = 1 : i64} { %0 = ember.constant dense<0> : tensor<i32> return %arg0, %0 : tensor<i32>, tensor<i32> } func.func @transform_1(%arg0: tensor<i32>) -> (tensor<i32>, tensor<i32>) attributes {ember_tpu.arg_spaces = [], ember_tpu.grid_args = 1 : i64} { %0 = ember.constant dense<0> : tensor<i32> return %arg0, %0 : tensor<i32>, tensor<i32> } func.func @transform_2(%arg0: tensor<i32>) -> (tensor<i32>, tensor<i32>) attributes {ember_tpu.arg_spaces = [], ember_tpu.grid_args = 1 : i64} { %0 = ember.constant dense<0> : tensor<i32> return %arg0, %0 : tensor<i32>, tensor<i32> } }", ember_tpu.kernel_name = "k", ember_tpu.kernel_aliases = array<i64>} {
    %0 = ember.add %x, %y : tensor<16x128xf32>
    return %0 : tensor<16x128xf32>
  }
}
