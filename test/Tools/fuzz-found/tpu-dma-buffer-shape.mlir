// RUN: ember-opt %s -verify-diagnostics -ember-tpu-kernel
// Found by ember-opt-fuzz (#21, `make fuzz-opt`): a traced DMA naming a
// kernel buffer of another shape than its operand made ember-tpu-kernel
// store the operand into that buffer (a vector_store the verifier rejects).

func.func @dma(%i: tensor<i32>, %x: tensor<64x128xf32>, %o: tensor<8x128xf32>, %b: tensor<2x8x128xf32>, %sem: tensor<i32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 1 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<any>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<semaphore_mem>],
                ember_tpu.dma_semaphores = array<i64: 3>,
                ember_tpu.result_args = array<i64: 1>} {
  %s = ember.constant dense<1> : tensor<i32>
  %z = ember.constant dense<0> : tensor<i32>
  // expected-error @+1 {{names a kernel buffer of another shape than its source operand}}
  ember_tpu.traced_dma_start %x[%i, %z], %b[%s, %z, %z], sem[] {src_buffer = 1 : i64, dst_buffer = 2 : i64, sem_buffer = 3 : i64, src_sizes = array<i64: 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64>, dst_squeezed = array<i64: 0>} : tensor<64x128xf32>, tensor<2x8x128xf32>
  %n = ember_tpu.traced_dma_wait %x[%i, %z], %b[%s, %z, %z], sem[] {src_buffer = 0 : i64, dst_buffer = 2 : i64, sem_buffer = 3 : i64, src_sizes = array<i64: 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64>, dst_squeezed = array<i64: 0>} : tensor<64x128xf32>, tensor<2x8x128xf32> -> tensor<2x8x128xf32>
  %r = ember.dynamic_slice %n[%s, %z, %z], sizes = [1, 8, 128] : (tensor<2x8x128xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x8x128xf32>
  %v = ember.reshape %r : (tensor<1x8x128xf32>) -> tensor<8x128xf32>
  return %v : tensor<8x128xf32>
}
