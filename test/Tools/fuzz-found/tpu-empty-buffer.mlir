// RUN: ember-opt %s -split-input-file -verify-diagnostics -ember-tpu-kernel
// Found by ember-opt-fuzz (#21, `make fuzz-opt`): an empty kernel buffer
// (tensor<0x128xf32>) made ember-tpu-kernel build a vector type with an
// empty dimension (an assertion in MLIR). Empty arrays are errors.

// expected-error @+1 {{ember-tpu-kernel: a kernel buffer is empty (a dimension of size 0)}}
func.func @empty_buffer(%x: tensor<8x128xf32>, %o: tensor<0x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 0>} {
  return %x : tensor<8x128xf32>
}

// -----

func.func @empty_value(%x: tensor<8x128xf32>, %o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 1>} {
  // expected-error @+1 {{makes an empty array (a dimension of size 0), which TPU kernels cannot hold}}
  %e = ember.slice %x, start = [0, 0], limit = [0, 128], strides = [1, 1] : (tensor<8x128xf32>) -> tensor<0x128xf32>
  return %x : tensor<8x128xf32>
}
