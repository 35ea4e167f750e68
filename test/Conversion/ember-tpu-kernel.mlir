// RUN: ember-opt %s -ember-tpu-kernel -split-input-file -verify-diagnostics | FileCheck %s

// A traced kernel (grid index, input block, output block) in Mosaic's form.
// CHECK-LABEL: func.func @k(
// CHECK-SAME: %{{.*}}: i32, %[[X:.*]]: memref<8x128xf32, #ember_tpu.memory_space<vmem>>, %[[O:.*]]: memref<8x128xf32, #ember_tpu.memory_space<vmem>>)
// CHECK-SAME: iteration_bounds = array<i64: 2>
// CHECK: %[[V:.*]] = vector.load %[[X]]
// CHECK: %[[E:.*]] = math.exp %[[V]] : vector<8x128xf32>
// CHECK: %[[S:.*]] = vector.multi_reduction <add>, %[[E]], %{{.*}} [1] : vector<8x128xf32> to vector<8xf32>
// CHECK: vector.shape_cast %[[S]] : vector<8xf32> to vector<8x1xf32>
// CHECK: vector.broadcast
// CHECK: arith.divf
// CHECK: ember_tpu.vector_store %[[O]]
func.func @k(%i: tensor<i32>, %x: tensor<8x128xf32>, %o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 1 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 1>, iteration_bounds = array<i64: 2>} {
  %e = ember.exp %x : tensor<8x128xf32>
  %s = ember.reduce sum %e, dims = [1] : (tensor<8x128xf32>) -> tensor<8xf32>
  %b = ember.broadcast_in_dim %s, dims = [0] : (tensor<8xf32>) -> tensor<8x128xf32>
  %r = ember.div %e, %b : tensor<8x128xf32>
  return %r : tensor<8x128xf32>
}

// -----

// An index map reading a scalar-prefetch buffer in SMEM.
// CHECK-LABEL: func.func @transform_0(
// CHECK-SAME: %{{.*}}: i32, %[[P:.*]]: memref<4xi32, #ember_tpu.memory_space<smem>>) -> (i32, i32)
// CHECK: memref.load %[[P]]
func.func @transform_0(%i: tensor<i32>, %p: tensor<4xi32>) -> (tensor<i32>, tensor<i32>)
    attributes {ember_tpu.grid_args = 1 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<smem>]} {
  %s = ember.dynamic_slice %p[%i], sizes = [1] : (tensor<4xi32>, tensor<i32>) -> tensor<1xi32>
  %v = ember.reshape %s : (tensor<1xi32>) -> tensor<i32>
  %z = ember.constant dense<0> : tensor<i32>
  return %v, %z : tensor<i32>, tensor<i32>
}

// -----

// Windows of buffers are read and written in memory: a read at a run-time
// offset is a vector.load there, a write into the output block a store at
// its offset, and the output is not stored again at the end.
// CHECK-LABEL: func.func @windows(
// CHECK: %[[I:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[R:.*]] = vector.load %arg1[%[[I]], %{{.*}}] : memref<16x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>
// CHECK: %[[E:.*]] = math.exp %[[R]]
// CHECK: ember_tpu.vector_store %arg2[%c8, %c0{{.*}}], %[[E]]
// CHECK-NOT: ember_tpu.vector_store
// CHECK: return
func.func @windows(%i: tensor<i32>, %x: tensor<16x128xf32>, %o: tensor<16x128xf32>) -> tensor<16x128xf32>
    attributes {ember_tpu.grid_args = 1 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 1>} {
  %z = ember.constant dense<0> : tensor<i32>
  %e8 = ember.constant dense<8> : tensor<i32>
  %w = ember.dynamic_slice %x[%i, %z], sizes = [8, 128] : (tensor<16x128xf32>, tensor<i32>, tensor<i32>) -> tensor<8x128xf32>
  %e = ember.exp %w : tensor<8x128xf32>
  %r = ember.dynamic_update_slice %o[%e8, %z], %e : tensor<16x128xf32>, tensor<8x128xf32>, tensor<i32>, tensor<i32>
  return %r : tensor<16x128xf32>
}

// -----

// A DMA from an HBM window into slot %s of a VMEM buffer: windows are
// memref_slice (and memref_squeeze for the dropped slot dimension), the
// semaphore is a DMA semaphore, and after the wait the slot is read from
// memory.
// CHECK-LABEL: func.func @dma(
// CHECK-SAME: memref<64x128xf32, #ember_tpu.memory_space<any>>
// CHECK-SAME: memref<!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>>
// CHECK: %[[SRC:.*]] = ember_tpu.memref_slice %arg1[
// CHECK: %[[SLOT:.*]] = ember_tpu.memref_slice %arg3[
// CHECK: %[[DST:.*]] = ember_tpu.memref_squeeze %[[SLOT]]
// CHECK: ember_tpu.enqueue_dma source(%[[SRC]] : {{.*}}) target(%[[DST]] : {{.*}}) target_semaphore(%arg4 :
// CHECK: ember_tpu.wait_dma2 semaphore(%arg4 :
// CHECK: vector.load %arg3[
// CHECK: ember_tpu.vector_store %arg2
func.func @dma(%i: tensor<i32>, %x: tensor<64x128xf32>, %o: tensor<8x128xf32>, %b: tensor<2x8x128xf32>, %sem: tensor<i32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 1 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<any>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<semaphore_mem>],
                ember_tpu.dma_semaphores = array<i64: 3>,
                ember_tpu.result_args = array<i64: 1>} {
  %s = ember.constant dense<1> : tensor<i32>
  %z = ember.constant dense<0> : tensor<i32>
  ember_tpu.traced_dma_start %x[%i, %z], %b[%s, %z, %z], sem[] {src_buffer = 0 : i64, dst_buffer = 2 : i64, sem_buffer = 3 : i64, src_sizes = array<i64: 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64>, dst_squeezed = array<i64: 0>} : tensor<64x128xf32>, tensor<2x8x128xf32>
  %n = ember_tpu.traced_dma_wait %x[%i, %z], %b[%s, %z, %z], sem[] {src_buffer = 0 : i64, dst_buffer = 2 : i64, sem_buffer = 3 : i64, src_sizes = array<i64: 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64>, dst_squeezed = array<i64: 0>} : tensor<64x128xf32>, tensor<2x8x128xf32> -> tensor<2x8x128xf32>
  %r = ember.dynamic_slice %n[%s, %z, %z], sizes = [1, 8, 128] : (tensor<2x8x128xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x8x128xf32>
  %v = ember.reshape %r : (tensor<1x8x128xf32>) -> tensor<8x128xf32>
  return %v : tensor<8x128xf32>
}

// -----

// Regular semaphores: signal, read and wait on element 1 of an array.
// CHECK-LABEL: func.func @sems(
// CHECK: %[[W:.*]] = ember_tpu.memref_slice %arg2[
// CHECK: %[[S:.*]] = ember_tpu.memref_squeeze %[[W]] : memref<1x!ember_tpu.semaphore, #ember_tpu.memory_space<semaphore_mem>> -> memref<!ember_tpu.semaphore, #ember_tpu.memory_space<semaphore_mem>>
// CHECK: ember_tpu.sem_signal %[[S]], %{{.*}}
// CHECK: ember_tpu.sem_read
// CHECK: ember_tpu.sem_wait
func.func @sems(%x: tensor<8x128xf32>, %o: tensor<8x128xf32>, %sem: tensor<2xi32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<semaphore_mem>],
                ember_tpu.result_args = array<i64: 1>} {
  %one = ember.constant dense<1> : tensor<i32>
  ember_tpu.traced_sem_signal %one, sem[%one] {sem_buffer = 2 : i64}
  %n = ember_tpu.traced_sem_read sem[%one] {sem_buffer = 2 : i64}
  ember_tpu.traced_sem_wait %n, sem[%one] {sem_buffer = 2 : i64}
  return %x : tensor<8x128xf32>
}

// -----

// A DMA needs a DMA semaphore.
func.func @dma_sem_kind(%x: tensor<64x128xf32>, %o: tensor<8x128xf32>, %sem: tensor<i32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<any>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<semaphore_mem>],
                ember_tpu.result_args = array<i64: 1>} {
  %z = ember.constant dense<0> : tensor<i32>
  // expected-error @+1 {{needs a DMA semaphore}}
  ember_tpu.traced_dma_start %x[%z, %z], %o[%z, %z], sem[] {src_buffer = 0 : i64, dst_buffer = 1 : i64, sem_buffer = 2 : i64, src_sizes = array<i64: 8, 128>, dst_sizes = array<i64: 8, 128>, src_squeezed = array<i64>, dst_squeezed = array<i64>} : tensor<64x128xf32>, tensor<8x128xf32>
  return %o : tensor<8x128xf32>
}

// -----

// HBM buffers are only reached by DMAs.
func.func @hbm(%i: tensor<i32>, %x: tensor<64x128xf32>, %o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 1 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<any>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 1>} {
  // expected-error @+1 {{reads or writes a buffer in HBM}}
  %r = ember.slice %x, start = [0, 0], limit = [8, 128], strides = [1, 1] : (tensor<64x128xf32>) -> tensor<8x128xf32>
  return %r : tensor<8x128xf32>
}

// -----

// Ops without a kernel form are reported where they are.
func.func @bad(%i: tensor<i32>, %x: tensor<8x128xf32>, %o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 1 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 1>} {
  // expected-error @+1 {{has no TPU kernel lowering}}
  %s = ember.lgamma %x : tensor<8x128xf32>
  return %s : tensor<8x128xf32>
}

// -----

// Squeezed block dimensions (pl.Squeezed, or a vmap's batch): the buffers
// keep them with size 1, as JAX lowers them, and the kernel works on a
// squeezed view.
// CHECK-LABEL: func.func @squeezed(
// CHECK-SAME: %{{.*}}: i32, %[[X:.*]]: memref<1x8x128xf32, #ember_tpu.memory_space<vmem>>, %[[O:.*]]: memref<8x1x128xf32, #ember_tpu.memory_space<vmem>>)
// CHECK-NOT: ember_tpu.squeezed_dims
// CHECK: %[[XS:.*]] = ember_tpu.memref_squeeze %[[X]] : memref<1x8x128xf32, #ember_tpu.memory_space<vmem>> -> memref<8x128xf32, #ember_tpu.memory_space<vmem>>
// CHECK: vector.load %[[XS]]
// CHECK: %[[OS:.*]] = ember_tpu.memref_squeeze %[[O]] : memref<8x1x128xf32, #ember_tpu.memory_space<vmem>> -> memref<8x128xf32, #ember_tpu.memory_space<vmem>>
// CHECK: ember_tpu.vector_store %[[OS]]
func.func @squeezed(%i: tensor<i32>, %x: tensor<8x128xf32>, %o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 1 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.squeezed_dims = [array<i64: 0>, array<i64: 1>],
                ember_tpu.result_args = array<i64: 1>, iteration_bounds = array<i64: 2>} {
  %r = ember.neg %x : tensor<8x128xf32>
  return %r : tensor<8x128xf32>
}

// -----

// expected-error @+1 {{ember-tpu-kernel: squeezed dimension 3 of argument 1 is out of range}}
func.func @squeezed_out_of_range(%i: tensor<i32>, %x: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 1 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>],
                ember_tpu.squeezed_dims = [array<i64: 3>],
                ember_tpu.result_args = array<i64: 0>, iteration_bounds = array<i64: 2>} {
  return %x : tensor<8x128xf32>
}

// -----

// Scoped buffers (pl.run_scoped): allocated at the start of one region that
// holds the kernel, numbered after the arguments; a DMA fills the VMEM one,
// which is read from memory after the wait, and the output is written back
// inside the region.
// CHECK-LABEL: func.func @scoped(
// CHECK-SAME: %[[X:.*]]: memref<8x128xf32, #ember_tpu.memory_space<any>>, %[[O:.*]]: memref<8x128xf32, #ember_tpu.memory_space<vmem>>)
// CHECK: ember_tpu.region {
// CHECK: %[[B:.*]] = memref.alloca() : memref<8x128xf32, #ember_tpu.memory_space<vmem>>
// CHECK: %[[S:.*]] = ember_tpu.sem_alloc : memref<!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>>
// CHECK: ember_tpu.enqueue_dma source(%[[X]] : {{.*}}) target(%[[B]] : {{.*}}) target_semaphore(%[[S]] :
// CHECK: ember_tpu.wait_dma2 semaphore(%[[S]] :
// CHECK: %[[V:.*]] = vector.load %[[B]][
// CHECK: ember_tpu.vector_store %[[O]]{{.*}}, %{{.*}}
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @scoped(%x: tensor<8x128xf32>, %o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<any>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 1>} {
  %z = ember.constant dense<0> : tensor<i32>
  %b = ember_tpu.traced_alloc {buffer = 2 : i64, memory_space = #ember_tpu.memory_space<vmem>} : tensor<8x128xf32>
  %s = ember_tpu.traced_alloc {buffer = 3 : i64, memory_space = #ember_tpu.memory_space<semaphore_mem>, dma_semaphore} : tensor<i32>
  ember_tpu.traced_dma_start %x[%z, %z], %b[%z, %z], sem[] {src_buffer = 0 : i64, dst_buffer = 2 : i64, sem_buffer = 3 : i64, src_sizes = array<i64: 8, 128>, dst_sizes = array<i64: 8, 128>, src_squeezed = array<i64>, dst_squeezed = array<i64>} : tensor<8x128xf32>, tensor<8x128xf32>
  %n = ember_tpu.traced_dma_wait %x[%z, %z], %b[%z, %z], sem[] {src_buffer = 0 : i64, dst_buffer = 2 : i64, sem_buffer = 3 : i64, src_sizes = array<i64: 8, 128>, dst_sizes = array<i64: 8, 128>, src_squeezed = array<i64>, dst_squeezed = array<i64>} : tensor<8x128xf32>, tensor<8x128xf32> -> tensor<8x128xf32>
  %y = ember.exp %n : tensor<8x128xf32>
  return %y : tensor<8x128xf32>
}

// -----

// Scoped buffers are numbered after the arguments, each once.
func.func @scoped_number(%o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 0>} {
  // expected-error @+1 {{is buffer 5, expected 1}}
  %b = ember_tpu.traced_alloc {buffer = 5 : i64, memory_space = #ember_tpu.memory_space<vmem>} : tensor<8x128xf32>
  return %b : tensor<8x128xf32>
}

// -----

// A kernel under shard_map: the mesh axis index is the device's logical id
// modulo the axis size.
// CHECK-LABEL: func.func @axis_index(
// CHECK: %[[D:.*]] = ember_tpu.device_id : i32
// CHECK: %[[N:.*]] = arith.constant 4 : i32
// CHECK: arith.remsi %[[D]], %[[N]] : i32
func.func @axis_index(%x: tensor<8x128xf32>, %o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 1>} {
  %i = ember.axis_index axis "x" size 4 : tensor<i32>
  %f = ember.convert %i : (tensor<i32>) -> tensor<f32>
  %b = ember.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<8x128xf32>
  %y = ember.add %x, %b : tensor<8x128xf32>
  return %y : tensor<8x128xf32>
}

// -----

// A remote copy from slot 0 into slot 1 of the target device's buffer: the
// start names the send and receive semaphores and the device; the send wait
// is JAX's (ends swapped, a placeholder device and core), the receive wait
// names the device; a remote signal names it too.
// CHECK-LABEL: func.func @remote(
// CHECK: %[[D:.*]] = ember_tpu.device_id : i32
// CHECK: ember_tpu.enqueue_dma source(%{{.*}}) target(%{{.*}}) source_semaphore(%arg3 : {{.*}}) target_semaphore(%arg4 : {{.*}}) device_id(%[[T:.*]])
// CHECK: ember_tpu.wait_dma2 semaphore(%arg3 : {{.*}}) src({{.*}}) dst({{.*}}) device_id(%[[Z:.*]]) core_id(%[[Z]])
// CHECK: ember_tpu.wait_dma2 semaphore(%arg4 : {{.*}}) src({{.*}}) dst({{.*}}) device_id(%[[T]])
// CHECK: ember_tpu.sem_signal %arg5, %{{.*}} device_id %[[T]]
func.func @remote(%x: tensor<8x128xf32>, %o: tensor<8x128xf32>, %b: tensor<2x8x128xf32>, %send: tensor<i32>, %recv: tensor<i32>, %ready: tensor<i32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<semaphore_mem>, #ember_tpu.memory_space<semaphore_mem>, #ember_tpu.memory_space<semaphore_mem>],
                ember_tpu.dma_semaphores = array<i64: 3, 4>,
                ember_tpu.result_args = array<i64: 1>} {
  %z = ember.constant dense<0> : tensor<i32>
  %one = ember.constant dense<1> : tensor<i32>
  %i = ember.axis_index axis "x" size 4 : tensor<i32>
  %r0 = ember.add %i, %one : tensor<i32>
  %four = ember.constant dense<4> : tensor<i32>
  %t = ember.rem %r0, %four : tensor<i32>
  ember_tpu.traced_dma_start %b[%z, %z, %z], %b[%one, %z, %z], sem[] send_sem[] device %t {src_buffer = 2 : i64, dst_buffer = 2 : i64, sem_buffer = 4 : i64, src_sem_buffer = 3 : i64, src_sizes = array<i64: 1, 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64: 0>, dst_squeezed = array<i64: 0>} : tensor<2x8x128xf32>, tensor<2x8x128xf32>
  %w1 = ember_tpu.traced_dma_wait %b[%z, %z, %z], %b[%one, %z, %z], sem[] {src_buffer = 2 : i64, dst_buffer = 2 : i64, sem_buffer = 3 : i64, send, src_sizes = array<i64: 1, 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64: 0>, dst_squeezed = array<i64: 0>} : tensor<2x8x128xf32>, tensor<2x8x128xf32> -> tensor<2x8x128xf32>
  %w2 = ember_tpu.traced_dma_wait %b[%z, %z, %z], %w1[%one, %z, %z], sem[] device %t {src_buffer = 2 : i64, dst_buffer = 2 : i64, sem_buffer = 4 : i64, src_sizes = array<i64: 1, 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64: 0>, dst_squeezed = array<i64: 0>} : tensor<2x8x128xf32>, tensor<2x8x128xf32> -> tensor<2x8x128xf32>
  ember_tpu.traced_sem_signal %one, sem[] device %t {sem_buffer = 5 : i64}
  %s = ember.slice %w2, start = [1, 0, 0], limit = [2, 8, 128], strides = [1, 1, 1] : (tensor<2x8x128xf32>) -> tensor<1x8x128xf32>
  %r = ember.reshape %s : (tensor<1x8x128xf32>) -> tensor<8x128xf32>
  return %r : tensor<8x128xf32>
}

// -----

// The barrier semaphore (pltpu.get_barrier_semaphore): Mosaic's
// sem_barrier, no region (it is not an allocation); the collective id is
// the custom call's, not the kernel's.
// CHECK-LABEL: func.func @barrier(
// CHECK-NOT: collective_id
// CHECK-NOT: ember_tpu.region
// CHECK: %[[B:.*]] = ember_tpu.sem_barrier : memref<!ember_tpu.semaphore, #ember_tpu.memory_space<semaphore_mem>>
// CHECK: ember_tpu.sem_signal %[[B]], %{{.*}} device_id %{{.*}}
// CHECK: ember_tpu.sem_wait %[[B]]
func.func @barrier(%x: tensor<8x128xf32>, %o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.collective_id = 0 : i64,
                ember_tpu.result_args = array<i64: 1>} {
  %one = ember.constant dense<1> : tensor<i32>
  %two = ember.constant dense<2> : tensor<i32>
  %b = ember_tpu.traced_alloc {buffer = 2 : i64, memory_space = #ember_tpu.memory_space<semaphore_mem>, barrier} : tensor<i32>
  ember_tpu.traced_sem_signal %one, sem[] device %one {sem_buffer = 2 : i64}
  ember_tpu.traced_sem_wait %two, sem[] {sem_buffer = 2 : i64}
  return %x : tensor<8x128xf32>
}

// -----

// The PRNG (pltpu.prng_seed, prng_random_bits): Mosaic's prng_set_seed_32
// of the seeds, then prng_random_bits as a vector, used like any value.
// CHECK-LABEL: func.func @prng(
// CHECK: %[[S:.*]] = arith.constant 7 : i32
// CHECK: ember_tpu.prng_set_seed_32 %[[S]], %{{.*}}
// CHECK: %[[B:.*]] = ember_tpu.prng_random_bits : vector<8x128xi32>
// CHECK: arith.sitofp %[[B]]
func.func @prng(%o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 0>} {
  %seed = ember.constant dense<7> : tensor<i32>
  %three = ember.constant dense<3> : tensor<i32>
  ember_tpu.traced_prng_seed %seed, %three
  %bits = ember_tpu.traced_prng_random_bits : tensor<8x128xi32>
  %f = ember.convert %bits : (tensor<8x128xi32>) -> tensor<8x128xf32>
  return %f : tensor<8x128xf32>
}

// -----

// pltpu.roll (traced_rotate) is Mosaic's dynamic_rotate and a concatenate
// Mosaic's concatenate, as JAX lowers them (Mosaic's layout inference takes
// no vector.insert_strided_slice).
// CHECK-LABEL: func.func @rotate_concat(
// CHECK: %[[V:.*]] = vector.load
// CHECK: %[[N:.*]] = arith.constant 3 : i32
// CHECK: %[[R:.*]] = ember_tpu.dynamic_rotate %[[V]] by %[[N]] dim 1 {stride = 1 : si32, stride_dimension = 0 : si32} : vector<8x128xf32>, i32 -> vector<8x128xf32>
// CHECK: %[[C:.*]] = ember_tpu.concatenate %{{.*}}, %{{.*}} in 0 : vector<4x128xf32>, vector<4x128xf32> -> vector<8x128xf32>
// CHECK-NOT: insert_strided_slice
// CHECK: arith.addf %[[R]], %[[C]]
func.func @rotate_concat(%x: tensor<8x128xf32>, %o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 1>} {
  %n = ember.constant dense<3> : tensor<i32>
  %r = ember_tpu.traced_rotate %x by %n dim 1 {stride = 1 : si32, stride_dimension = 0 : si32} : tensor<8x128xf32>, tensor<i32>
  %lo = ember.slice %x, start = [0, 0], limit = [4, 128], strides = [1, 1] : (tensor<8x128xf32>) -> tensor<4x128xf32>
  %hi = ember.slice %x, start = [4, 0], limit = [8, 128], strides = [1, 1] : (tensor<8x128xf32>) -> tensor<4x128xf32>
  %c = ember.concatenate dim = 0, %hi, %lo : (tensor<4x128xf32>, tensor<4x128xf32>) -> tensor<8x128xf32>
  %s = ember.add %r, %c : tensor<8x128xf32>
  return %s : tensor<8x128xf32>
}

// -----

// sign: -1, 0 or 1 by two selects (a float zero or NaN is itself).
// CHECK-LABEL: func.func @sign(
// CHECK: %[[V:.*]] = vector.load
// CHECK: %[[Z:.*]] = arith.constant dense<0.000000e+00> : vector<8x128xf32>
// CHECK: %[[LT:.*]] = arith.cmpf olt, %[[V]], %[[Z]]
// CHECK: %[[N:.*]] = arith.select %[[LT]], %{{.*}}, %[[V]]
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %[[V]], %[[Z]]
// CHECK: arith.select %[[GT]], %{{.*}}, %[[N]]
func.func @sign(%x: tensor<8x128xf32>, %o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 1>} {
  %s = ember.sign %x : tensor<8x128xf32>
  return %s : tensor<8x128xf32>
}

// -----

// A core_map kernel's copy to the next TensorCore of this device: `core_id`
// on the start, the receive wait and the signal (no device: this one); the
// core index is the grid index.
// CHECK-LABEL: func.func @remote_core(
// CHECK: %[[C:.*]] = arith.remsi %{{.*}}, %{{.*}} : i32
// CHECK: ember_tpu.enqueue_dma source(%{{.*}}) target(%{{.*}}) source_semaphore(%arg4 : {{.*}}) target_semaphore(%arg5 : {{.*}}) core_id(%[[C]])
// CHECK: ember_tpu.wait_dma2 semaphore(%arg5 : {{.*}}) src({{.*}}) dst({{.*}}) core_id(%[[C]])
// CHECK: ember_tpu.sem_signal %arg6, %{{.*}} core_id %[[C]]
func.func @remote_core(%c: tensor<i32>, %x: tensor<8x128xf32>, %o: tensor<8x128xf32>, %b: tensor<2x8x128xf32>, %send: tensor<i32>, %recv: tensor<i32>, %ready: tensor<i32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 1 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<semaphore_mem>, #ember_tpu.memory_space<semaphore_mem>, #ember_tpu.memory_space<semaphore_mem>],
                ember_tpu.dma_semaphores = array<i64: 3, 4>,
                ember_tpu.result_args = array<i64: 1>} {
  %z = ember.constant dense<0> : tensor<i32>
  %one = ember.constant dense<1> : tensor<i32>
  %two = ember.constant dense<2> : tensor<i32>
  %r0 = ember.add %c, %one : tensor<i32>
  %t = ember.rem %r0, %two : tensor<i32>
  ember_tpu.traced_dma_start %b[%z, %z, %z], %b[%one, %z, %z], sem[] send_sem[] core %t {src_buffer = 2 : i64, dst_buffer = 2 : i64, sem_buffer = 4 : i64, src_sem_buffer = 3 : i64, src_sizes = array<i64: 1, 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64: 0>, dst_squeezed = array<i64: 0>} : tensor<2x8x128xf32>, tensor<2x8x128xf32>
  %w1 = ember_tpu.traced_dma_wait %b[%z, %z, %z], %b[%one, %z, %z], sem[] {src_buffer = 2 : i64, dst_buffer = 2 : i64, sem_buffer = 3 : i64, send, src_sizes = array<i64: 1, 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64: 0>, dst_squeezed = array<i64: 0>} : tensor<2x8x128xf32>, tensor<2x8x128xf32> -> tensor<2x8x128xf32>
  %w2 = ember_tpu.traced_dma_wait %b[%z, %z, %z], %w1[%one, %z, %z], sem[] core %t {src_buffer = 2 : i64, dst_buffer = 2 : i64, sem_buffer = 4 : i64, src_sizes = array<i64: 1, 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64: 0>, dst_squeezed = array<i64: 0>} : tensor<2x8x128xf32>, tensor<2x8x128xf32> -> tensor<2x8x128xf32>
  ember_tpu.traced_sem_signal %one, sem[] core %t {sem_buffer = 5 : i64}
  %s = ember.slice %w2, start = [1, 0, 0], limit = [2, 8, 128], strides = [1, 1, 1] : (tensor<2x8x128xf32>) -> tensor<1x8x128xf32>
  %r = ember.reshape %s : (tensor<1x8x128xf32>) -> tensor<8x128xf32>
  return %r : tensor<8x128xf32>
}

// -----

// A product's precision: HIGHEST is Mosaic's fp32 contraction, DEFAULT
// Mosaic's default (no attribute), as JAX lowers them.
// CHECK-LABEL: func.func @dot_precision(
// CHECK: ember_tpu.matmul {{.*}}precision = #ember_tpu.contract_precision<fp32>
// CHECK: ember_tpu.matmul
// CHECK-NOT: precision
// CHECK: return
func.func @dot_precision(%x: tensor<8x128xf32>, %y: tensor<128x128xf32>, %o: tensor<8x128xf32>, %p: tensor<8x128xf32>) -> (tensor<8x128xf32>, tensor<8x128xf32>)
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 2, 3>} {
  %a = ember.dot_general %x, %y, batch = [] x [], contract = [1] x [0] {precision = ["HIGHEST", "HIGHEST"]} : (tensor<8x128xf32>, tensor<128x128xf32>) -> tensor<8x128xf32>
  %b = ember.dot_general %x, %y, batch = [] x [], contract = [1] x [0] {precision = ["DEFAULT", "DEFAULT"]} : (tensor<8x128xf32>, tensor<128x128xf32>) -> tensor<8x128xf32>
  return %a, %b : tensor<8x128xf32>, tensor<8x128xf32>
}

// -----

func.func @dot_precision_per_operand(%x: tensor<8x128xf32>, %y: tensor<128x128xf32>, %o: tensor<8x128xf32>) -> tensor<8x128xf32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 2>} {
  // expected-error @+1 {{per-operand dot precision is not supported in TPU kernels}}
  %a = ember.dot_general %x, %y, batch = [] x [], contract = [1] x [0] {precision = ["HIGHEST", "DEFAULT"]} : (tensor<8x128xf32>, tensor<128x128xf32>) -> tensor<8x128xf32>
  return %a : tensor<8x128xf32>
}

// -----

// Strided windows are Mosaic's strided_load and strided_store on the
// buffers (the run-time start clamped so the strided window fits), a
// masked write a masked vector_store; the output is not stored again.
// CHECK-LABEL: func.func @strided(
// CHECK: %[[I:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: %[[R:.*]] = ember_tpu.strided_load %arg1[%[[I]], %{{.*}}] {strides = array<i32: 2, 1>} : memref<16x128xf32, #ember_tpu.memory_space<vmem>>, vector<4x128xf32>
// CHECK: %[[E:.*]] = math.exp %[[R]]
// CHECK: ember_tpu.strided_store %arg2[%c1{{.*}}, %c0{{.*}}], %[[E]] {strides = array<i32: 3, 1>}
// CHECK: %[[M:.*]] = arith.cmpf
// CHECK: ember_tpu.vector_store %arg2[%c0{{.*}}, %c0{{.*}}], %{{.*}} masked %[[M]] {strides = array<i32>}
// CHECK-NOT: ember_tpu.vector_store
func.func @strided(%i: tensor<i32>, %x: tensor<16x128xf32>, %o: tensor<16x128xf32>) -> tensor<16x128xf32>
    attributes {ember_tpu.grid_args = 1 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<vmem>, #ember_tpu.memory_space<vmem>],
                ember_tpu.result_args = array<i64: 1>, iteration_bounds = array<i64: 2>} {
  %c1 = ember.constant dense<1> : tensor<i32>
  %c0 = ember.constant dense<0> : tensor<i32>
  %r = ember_tpu.traced_load %x[%i, %c0] {strides = array<i32: 2, 1>} : tensor<16x128xf32> -> tensor<4x128xf32>
  %e = ember.exp %r : tensor<4x128xf32>
  %s = ember_tpu.traced_store %o[%c1, %c0], %e {strides = array<i32: 3, 1>} : tensor<16x128xf32>, tensor<4x128xf32>
  %z = ember.constant dense<0.0> : tensor<16x128xf32>
  %m = ember.compare GT, %x, %z : (tensor<16x128xf32>, tensor<16x128xf32>) -> tensor<16x128xi1>
  %u = ember_tpu.traced_store %s[%c0, %c0], %x masked %m {strides = array<i32: 1, 1>} : tensor<16x128xf32>, tensor<16x128xf32>, tensor<16x128xi1>
  return %u : tensor<16x128xf32>
}

// -----

// A strided read of an SMEM buffer is an error at the op.
func.func @strided_smem(%p: tensor<8xi32>) -> tensor<i32>
    attributes {ember_tpu.grid_args = 0 : i64,
                ember_tpu.arg_spaces = [#ember_tpu.memory_space<smem>]} {
  %c0 = ember.constant dense<0> : tensor<i32>
  // expected-error @+1 {{reads or writes an SMEM buffer by strided or masked windows}}
  %r = ember_tpu.traced_load %p[%c0] {strides = array<i32: 2>} : tensor<8xi32> -> tensor<4xi32>
  %v = ember.reduce sum %r, dims = [0] : (tensor<4xi32>) -> tensor<i32>
  return %v : tensor<i32>
}
