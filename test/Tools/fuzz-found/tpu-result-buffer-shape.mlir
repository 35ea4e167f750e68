// RUN: ember-opt %s -verify-diagnostics -ember-tpu-kernel
// Found by ember-opt-fuzz (#21, `make fuzz-opt`, 39th session):
// ember-tpu-kernel stored a returned value into a result buffer of another
// shape (a vector_store that did not verify: invalid IR after the pass).

func.func @axis_index(%x: tensor<8x128xf32>, %o: tensor<5x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 1>} {
  %i = ember.axis_index axis "x" size 4 : tensor<i32>
  %f = ember.convert %i : (tensor<i32>) -> tensor<f32>
  %b = ember.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<8x128xf32>
  %y = ember.add %x, %b : tensor<8x128xf32>
  // expected-error @+1 {{returns a value of type 'tensor<8x128xf32>' into the result buffer of type 'tensor<5x128xf32>'}}
  return %y : tensor<8x128xf32>
}
