// RUN: ember-opt %s | ember-opt | FileCheck %s

// Round trip of the ember_tpu ops, attributes and types.

// CHECK-LABEL: func.func @kernel
// CHECK-SAME: #ember_tpu.memory_space<vmem>
// CHECK-SAME: window_params = [{pipeline_mode = #ember_tpu.pipeline_mode<synchronous>}, {pipeline_mode = #ember_tpu.pipeline_mode<synchronous>, revisit_mode = #ember_tpu.revisit_mode<any>}]
// CHECK: ember_tpu.matmul {{.*}}#ember_tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>
// CHECK: ember_tpu.matmul {{.*}}precision = #ember_tpu.contract_precision<fp32>
// CHECK: ember_tpu.iota {dimensions = array<i32: 1>}
// CHECK: ember_tpu.transpose
// CHECK: ember_tpu.dynamic_rotate %{{.*}} by %{{.*}} dim 1 : vector<8x128xf32>, i32 -> vector<8x128xf32>
// CHECK: ember_tpu.dynamic_rotate %{{.*}} by %{{.*}} dim 0 {stride = 2 : si32, stride_dimension = 1 : si32}
// CHECK: ember_tpu.concatenate %{{.*}}, %{{.*}} in 1 : vector<8x8xf32>, vector<8x128xf32> -> vector<8x136xf32>
// CHECK: ember_tpu.vector_store
// CHECK: ember_tpu.memref_slice
// CHECK: ember_tpu.enqueue_dma source
// CHECK: ember_tpu.wait_dma2 semaphore
// CHECK: ember_tpu.sem_signal
// CHECK: ember_tpu.sem_wait
// CHECK: ember_tpu.sem_read
// CHECK: ember_tpu.memref_squeeze
// CHECK: ember_tpu.traced_dma_start
// CHECK: ember_tpu.traced_dma_wait
func.func @kernel(%i: i32, %x: memref<8x128xf32, #ember_tpu.memory_space<vmem>>,
                  %h: memref<16x128xf32, #ember_tpu.memory_space<any>>,
                  %dsem: memref<!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>>,
                  %sem: memref<!ember_tpu.semaphore, #ember_tpu.memory_space<semaphore_mem>>)
    attributes {dimension_semantics = [#ember_tpu.dimension_semantics<parallel>],
                ember_tpu.core_type = #ember_tpu.core_type<tc>,
                window_params = [{pipeline_mode = #ember_tpu.pipeline_mode<synchronous>},
                                 {pipeline_mode = #ember_tpu.pipeline_mode<synchronous>,
                                  revisit_mode = #ember_tpu.revisit_mode<any>}]} {
  %c0 = arith.constant 0 : index
  %v = vector.load %x[%c0, %c0] : memref<8x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>
  %a = vector.extract_strided_slice %v {offsets = [0, 0], sizes = [8, 8], strides = [1, 1]} : vector<8x128xf32> to vector<8x8xf32>
  %b = vector.extract_strided_slice %v {offsets = [0, 0], sizes = [8, 128], strides = [1, 1]} : vector<8x128xf32> to vector<8x128xf32>
  %acc = arith.constant dense<0.0> : vector<8x128xf32>
  %m = ember_tpu.matmul %a, %b, %acc {dimension_numbers = #ember_tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>} : vector<8x8xf32>, vector<8x128xf32>, vector<8x128xf32> -> vector<8x128xf32>
  %mp = ember_tpu.matmul %a, %b, %acc {dimension_numbers = #ember_tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>, precision = #ember_tpu.contract_precision<fp32>} : vector<8x8xf32>, vector<8x128xf32>, vector<8x128xf32> -> vector<8x128xf32>
  %io = ember_tpu.iota {dimensions = array<i32: 1>} : vector<8x128xi32>
  %t = ember_tpu.transpose %m, [1, 0] : vector<8x128xf32> -> vector<128x8xf32>
  %three = arith.constant 3 : i32
  %rot = ember_tpu.dynamic_rotate %m by %three dim 1 : vector<8x128xf32>, i32 -> vector<8x128xf32>
  %rots = ember_tpu.dynamic_rotate %m by %three dim 0 {stride = 2 : si32, stride_dimension = 1 : si32} : vector<8x128xf32>, i32 -> vector<8x128xf32>
  %cat = ember_tpu.concatenate %a, %b in 1 : vector<8x8xf32>, vector<8x128xf32> -> vector<8x136xf32>
  ember_tpu.vector_store %x[%c0, %c0], %m {strides = array<i32>} : memref<8x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>,
  %z = arith.constant 0 : i32
  %w = ember_tpu.memref_slice %h[%i, %z] : memref<16x128xf32, #ember_tpu.memory_space<any>> -> memref<8x128xf32, #ember_tpu.memory_space<any>>
  ember_tpu.enqueue_dma source(%w : memref<8x128xf32, #ember_tpu.memory_space<any>>) target(%x : memref<8x128xf32, #ember_tpu.memory_space<vmem>>) target_semaphore(%dsem : memref<!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>>)
  ember_tpu.wait_dma2 semaphore(%dsem : memref<!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>>) src(%w : memref<8x128xf32, #ember_tpu.memory_space<any>>) dst(%x : memref<8x128xf32, #ember_tpu.memory_space<vmem>>)
  %one = arith.constant 1 : i32
  ember_tpu.sem_signal %sem, %one : memref<!ember_tpu.semaphore, #ember_tpu.memory_space<semaphore_mem>>
  ember_tpu.sem_wait %sem, %one : memref<!ember_tpu.semaphore, #ember_tpu.memory_space<semaphore_mem>>
  %r = ember_tpu.sem_read %sem : memref<!ember_tpu.semaphore, #ember_tpu.memory_space<semaphore_mem>> -> i32
  %w1 = ember_tpu.memref_slice %h[%i, %z] : memref<16x128xf32, #ember_tpu.memory_space<any>> -> memref<1x128xf32, #ember_tpu.memory_space<any>>
  %sq = ember_tpu.memref_squeeze %w1 : memref<1x128xf32, #ember_tpu.memory_space<any>> -> memref<128xf32, #ember_tpu.memory_space<any>>
  return
}

// The traced form of DMAs, before ember-tpu-kernel.
func.func @traced(%x: tensor<16x128xf32>, %b: tensor<2x8x128xf32>, %i: tensor<i32>) -> tensor<2x8x128xf32> {
  ember_tpu.traced_dma_start %x[%i, %i], %b[%i, %i, %i], sem[%i] {src_buffer = 0 : i64, dst_buffer = 1 : i64, sem_buffer = 2 : i64, src_sizes = array<i64: 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64>, dst_squeezed = array<i64: 0>} : tensor<16x128xf32>, tensor<2x8x128xf32>
  %n = ember_tpu.traced_dma_wait %x[%i, %i], %b[%i, %i, %i], sem[%i] {src_buffer = 0 : i64, dst_buffer = 1 : i64, sem_buffer = 2 : i64, src_sizes = array<i64: 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64>, dst_squeezed = array<i64: 0>} : tensor<16x128xf32>, tensor<2x8x128xf32> -> tensor<2x8x128xf32>
  return %n : tensor<2x8x128xf32>
}

// Scoped allocations (pl.run_scoped): Mosaic's region with its buffers and
// semaphores, and the traced form of an allocation.
// CHECK-LABEL: func.func @scoped
// CHECK: ember_tpu.region {
// CHECK: memref.alloca() : memref<2x8x128xf32, #ember_tpu.memory_space<vmem>>
// CHECK: ember_tpu.sem_alloc : memref<2x!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>>
// CHECK: %[[R:.*]] = ember_tpu.region {
// CHECK: ember_tpu.yield %{{.*}} : i32
// CHECK: } : i32
func.func @scoped() -> i32 {
  ember_tpu.region {
    %b = memref.alloca() : memref<2x8x128xf32, #ember_tpu.memory_space<vmem>>
    %s = ember_tpu.sem_alloc : memref<2x!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>>
  }
  %r = ember_tpu.region {
    %c = arith.constant 3 : i32
    ember_tpu.yield %c : i32
  } : i32
  return %r : i32
}

// CHECK-LABEL: func.func @traced_alloc
// CHECK: ember_tpu.traced_alloc {buffer = 2 : i64, memory_space = #ember_tpu.memory_space<vmem>} : tensor<2x8x128xf32>
// CHECK: ember_tpu.traced_alloc {buffer = 3 : i64, dma_semaphore, memory_space = #ember_tpu.memory_space<semaphore_mem>} : tensor<2xi32>
func.func @traced_alloc() -> (tensor<2x8x128xf32>, tensor<2xi32>) {
  %b = ember_tpu.traced_alloc {buffer = 2 : i64, memory_space = #ember_tpu.memory_space<vmem>} : tensor<2x8x128xf32>
  %s = ember_tpu.traced_alloc {buffer = 3 : i64, memory_space = #ember_tpu.memory_space<semaphore_mem>, dma_semaphore} : tensor<2xi32>
  return %b, %s : tensor<2x8x128xf32>, tensor<2xi32>
}

// CHECK-LABEL: func.func @device
// CHECK: ember_tpu.device_id : i32
func.func @device() -> i32 {
  %d = ember_tpu.device_id : i32
  return %d : i32
}

// Remote copies and signals (traced form): the target device, the send
// semaphore of a start, a wait on the send semaphore.
// CHECK-LABEL: func.func @remote
// CHECK: ember_tpu.traced_dma_start {{.*}} sem[] device %arg2 {{{.*}}src_sem_buffer = 3 : i64{{.*}}}
// CHECK: ember_tpu.traced_dma_wait {{.*}} sem[] {{{.*}}send{{.*}}}
// CHECK: ember_tpu.traced_sem_signal %arg2, sem[] device %arg2 {sem_buffer = 5 : i64}
func.func @remote(%b: tensor<2x8x128xf32>, %i: tensor<i32>, %d: tensor<i32>) -> tensor<2x8x128xf32> {
  ember_tpu.traced_dma_start %b[%i, %i, %i], %b[%i, %i, %i], sem[] device %d {src_buffer = 1 : i64, dst_buffer = 1 : i64, sem_buffer = 4 : i64, src_sem_buffer = 3 : i64, src_sizes = array<i64: 1, 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64: 0>, dst_squeezed = array<i64: 0>} : tensor<2x8x128xf32>, tensor<2x8x128xf32>
  %n = ember_tpu.traced_dma_wait %b[%i, %i, %i], %b[%i, %i, %i], sem[] {src_buffer = 1 : i64, dst_buffer = 1 : i64, sem_buffer = 3 : i64, send, src_sizes = array<i64: 1, 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64: 0>, dst_squeezed = array<i64: 0>} : tensor<2x8x128xf32>, tensor<2x8x128xf32> -> tensor<2x8x128xf32>
  ember_tpu.traced_sem_signal %d, sem[] device %d {sem_buffer = 5 : i64}
  return %n : tensor<2x8x128xf32>
}

// Another TensorCore of this device (a core_map kernel): `core`, with or
// without a device.
// CHECK-LABEL: func.func @remote_core
// CHECK: ember_tpu.traced_dma_start {{.*}} sem[] core %arg2 {{{.*}}src_sem_buffer = 3 : i64{{.*}}}
// CHECK: ember_tpu.traced_dma_wait {{.*}} sem[] device %arg2 core %arg2 {{{.*}}}
// CHECK: ember_tpu.traced_sem_signal %arg2, sem[] core %arg2 {sem_buffer = 5 : i64}
func.func @remote_core(%b: tensor<2x8x128xf32>, %i: tensor<i32>, %c: tensor<i32>) -> tensor<2x8x128xf32> {
  ember_tpu.traced_dma_start %b[%i, %i, %i], %b[%i, %i, %i], sem[] send_sem[] core %c {src_buffer = 1 : i64, dst_buffer = 1 : i64, sem_buffer = 4 : i64, src_sem_buffer = 3 : i64, src_sizes = array<i64: 1, 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64: 0>, dst_squeezed = array<i64: 0>} : tensor<2x8x128xf32>, tensor<2x8x128xf32>
  %n = ember_tpu.traced_dma_wait %b[%i, %i, %i], %b[%i, %i, %i], sem[] device %c core %c {src_buffer = 1 : i64, dst_buffer = 1 : i64, sem_buffer = 4 : i64, src_sizes = array<i64: 1, 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64: 0>, dst_squeezed = array<i64: 0>} : tensor<2x8x128xf32>, tensor<2x8x128xf32> -> tensor<2x8x128xf32>
  ember_tpu.traced_sem_signal %c, sem[] core %c {sem_buffer = 5 : i64}
  return %n : tensor<2x8x128xf32>
}

// CHECK-LABEL: func.func @barrier
// CHECK: ember_tpu.sem_barrier : memref<!ember_tpu.semaphore, #ember_tpu.memory_space<semaphore_mem>>
// CHECK: ember_tpu.traced_alloc {barrier, buffer = 2 : i64, memory_space = #ember_tpu.memory_space<semaphore_mem>} : tensor<i32>
func.func @barrier() -> tensor<i32> {
  %b = ember_tpu.sem_barrier : memref<!ember_tpu.semaphore, #ember_tpu.memory_space<semaphore_mem>>
  %t = ember_tpu.traced_alloc {buffer = 2 : i64, memory_space = #ember_tpu.memory_space<semaphore_mem>, barrier} : tensor<i32>
  return %t : tensor<i32>
}

// The PRNG, in both forms.
// CHECK-LABEL: func.func @prng
// CHECK: ember_tpu.prng_set_seed_32 %arg0, %arg0
// CHECK: ember_tpu.prng_random_bits : vector<8x128xi32>
// CHECK: ember_tpu.traced_prng_seed %arg1
// CHECK: ember_tpu.traced_prng_random_bits : tensor<8x128xi32>
func.func @prng(%s: i32, %t: tensor<i32>) -> (vector<8x128xi32>, tensor<8x128xi32>) {
  ember_tpu.prng_set_seed_32 %s, %s
  %v = ember_tpu.prng_random_bits : vector<8x128xi32>
  ember_tpu.traced_prng_seed %t
  %b = ember_tpu.traced_prng_random_bits : tensor<8x128xi32>
  return %v, %b : vector<8x128xi32>, tensor<8x128xi32>
}

// Strided windows and masked stores, in both forms.
// CHECK-LABEL: func.func @strided
// CHECK: ember_tpu.strided_load %arg0[%{{.*}}, %{{.*}}] {strides = array<i32: 2, 1>} : memref<16x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>
// CHECK: ember_tpu.strided_store %arg0[%{{.*}}, %{{.*}}], %{{.*}} {strides = array<i32: 2, 1>} : memref<16x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>
// CHECK: ember_tpu.traced_load %arg1[%arg2, %arg2] {strides = array<i32: 2, 1>} : tensor<16x128xf32> -> tensor<8x128xf32>
// CHECK: ember_tpu.traced_store %arg1[%arg2, %arg2], %{{.*}} {strides = array<i32: 2, 1>} : tensor<16x128xf32>, tensor<8x128xf32>
// CHECK: ember_tpu.traced_store %arg1[%arg2, %arg2], %arg1 masked %arg3 {strides = array<i32: 1, 1>} : tensor<16x128xf32>, tensor<16x128xf32>, tensor<16x128xi1>
func.func @strided(%m: memref<16x128xf32, #ember_tpu.memory_space<vmem>>, %t: tensor<16x128xf32>,
                   %i: tensor<i32>, %k: tensor<16x128xi1>) -> (tensor<16x128xf32>, tensor<16x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %v = ember_tpu.strided_load %m[%c0, %c0] {strides = array<i32: 2, 1>} : memref<16x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>
  ember_tpu.strided_store %m[%c1, %c0], %v {strides = array<i32: 2, 1>} : memref<16x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>
  %r = ember_tpu.traced_load %t[%i, %i] {strides = array<i32: 2, 1>} : tensor<16x128xf32> -> tensor<8x128xf32>
  %s = ember_tpu.traced_store %t[%i, %i], %r {strides = array<i32: 2, 1>} : tensor<16x128xf32>, tensor<8x128xf32>
  %u = ember_tpu.traced_store %t[%i, %i], %t masked %k {strides = array<i32: 1, 1>} : tensor<16x128xf32>, tensor<16x128xf32>, tensor<16x128xi1>
  return %s, %u : tensor<16x128xf32>, tensor<16x128xf32>
}

// Vector layouts (Mosaic's VectorLayout) and relayouts.
// CHECK-LABEL: func.func @layouts
// CHECK: ember_tpu.relayout %{{.*}} : vector<8x128xf32> from #ember_tpu.layout<32, {0, *}, (8, 128)> to #ember_tpu.layout<32, {0, 0}, (8, 128)>
// CHECK: ember_tpu.out_layouts = [#ember_tpu.layout<32, {*, 0}, (8, 128), -2>]
// CHECK: ember_tpu.out_layouts = [#ember_tpu.layout<16, {3, 5}, (16, 128)>]
func.func @layouts(%a: vector<8x128xf32>, %r: vector<128xf32>, %h: vector<16x128xbf16>) {
  %b = ember_tpu.relayout %a : vector<8x128xf32> from #ember_tpu.layout<32, {0, *}, (8, 128)> to #ember_tpu.layout<32, {0, 0}, (8, 128)>
  %s = arith.negf %r {ember_tpu.in_layouts = [#ember_tpu.layout<32, {*, 0}, (8, 128), -2>], ember_tpu.out_layouts = [#ember_tpu.layout<32, {*, 0}, (8, 128), -2>]} : vector<128xf32>
  %t = arith.negf %h {ember_tpu.out_layouts = [#ember_tpu.layout<16, {3, 5}, (16, 128)>]} : vector<16x128xbf16>
  return
}
