// RUN: ember-opt %s -split-input-file -verify-diagnostics --ember-tpu-kernel
// Found by the mutation fuzz (#21, 47th session: tools/fuzz/ember_opt_mutate.py
// --pipeline=--ember-tpu-kernel): ember-tpu-kernel cast every argument to a
// ranked tensor and made vectors of dynamic sizes (assertion failures); a
// ref, a tensor of dynamic shape, an op making one, and a missing grid count
// are now errors.

// expected-error @+1 {{a kernel's arguments and results are tensors of static shape}}
func.func @ref_argument(%i: !ember.ref<tensor<4xf32>>, %x: tensor<8x128xf32>, %o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 1 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 1>} {
  %s = ember.exp %x : tensor<8x128xf32>
  return %s : tensor<8x128xf32>
}

// -----

// expected-error @+1 {{a kernel's arguments and results are tensors of static shape}}
func.func @dynamic_argument(%o: tensor<?xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 0>} {
  %b = ember_tpu.traced_alloc {buffer = 5 : i64, memory_space = #ember_tpu.memory_space<vmem>} : tensor<8x128xf32>
  return %b : tensor<8x128xf32>
}

// -----

func.func @dynamic_result(%x: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>]} {
  // expected-error @+1 {{makes an array of dynamic shape, which TPU kernels cannot hold}}
  %c = tensor.cast %x : tensor<8x128xf32> to tensor<?x128xf32>
  %d = tensor.cast %c : tensor<?x128xf32> to tensor<8x128xf32>
  return %d : tensor<8x128xf32>
}

// -----

// expected-error @+1 {{ember_tpu.grid_args must be the number of grid arguments}}
func.func @grid_count(%x: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 3 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>]} {
  return %x : tensor<8x128xf32>
}
