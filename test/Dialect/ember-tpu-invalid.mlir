// RUN: ember-opt %s -split-input-file -verify-diagnostics
//
// Cases for the numbered verifier rules of lib/IR/TPU/EmberTPUDialect.cpp
// (see docs/spec.md, "The ember_tpu kernel dialect").

func.func @store_elt(%x: memref<8x128xf32>, %v: vector<8x128xi32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{vector_store_c1}}
  ember_tpu.vector_store %x[%c0, %c0], %v {strides = array<i32>} : memref<8x128xf32>, vector<8x128xi32>,
  return
}

// -----

func.func @store_indices(%x: memref<8x128xf32>, %v: vector<8x128xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{vector_store_c2}}
  ember_tpu.vector_store %x[%c0], %v {strides = array<i32>} : memref<8x128xf32>, vector<8x128xf32>,
  return
}

// -----

func.func @store_fit(%x: memref<8x128xf32>, %v: vector<16x128xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{vector_store_c3}}
  ember_tpu.vector_store %x[%c0, %c0], %v {strides = array<i32>} : memref<8x128xf32>, vector<16x128xf32>,
  return
}

// -----

func.func @store_strides(%x: memref<8x128xf32>, %v: vector<8x128xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{vector_store_c5}}
  ember_tpu.vector_store %x[%c0, %c0], %v {strides = array<i32: 0, 1>} : memref<8x128xf32>, vector<8x128xf32>,
  return
}

// -----

func.func @matmul_dims(%a: vector<8x8xf32>, %b: vector<8x128xf32>, %c: vector<8x128xf32>) {
  // expected-error @+1 {{matmul_c1}}
  %m = ember_tpu.matmul %a, %b, %c {dimension_numbers = #ember_tpu.dot_dimension_numbers<[1], [0], [], [1], [1, 1], [], []>} : vector<8x8xf32>, vector<8x128xf32>, vector<8x128xf32> -> vector<8x128xf32>
  return
}

// -----

func.func @matmul_sizes(%a: vector<8x16xf32>, %b: vector<8x128xf32>, %c: vector<8x128xf32>) {
  // expected-error @+1 {{matmul_c2}}
  %m = ember_tpu.matmul %a, %b, %c {dimension_numbers = #ember_tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>} : vector<8x16xf32>, vector<8x128xf32>, vector<8x128xf32> -> vector<8x128xf32>
  return
}

// -----

func.func @matmul_result(%a: vector<8x8xf32>, %b: vector<8x128xf32>, %c: vector<8x64xf32>) {
  // expected-error @+1 {{matmul_c3}}
  %m = ember_tpu.matmul %a, %b, %c {dimension_numbers = #ember_tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>} : vector<8x8xf32>, vector<8x128xf32>, vector<8x64xf32> -> vector<8x64xf32>
  return
}

// -----

func.func @matmul_acc(%a: vector<8x8xf32>, %b: vector<8x128xf32>, %c: vector<8x128xi32>) {
  // expected-error @+1 {{matmul_c4}}
  %m = ember_tpu.matmul %a, %b, %c {dimension_numbers = #ember_tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>} : vector<8x8xf32>, vector<8x128xf32>, vector<8x128xi32> -> vector<8x128xf32>
  return
}

// -----

func.func @matmul_acc_width(%a: vector<8x8xbf16>, %b: vector<8x128xbf16>, %c: vector<8x128xbf16>) {
  // expected-error @+1 {{matmul_c5}}
  %m = ember_tpu.matmul %a, %b, %c {dimension_numbers = #ember_tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>} : vector<8x8xbf16>, vector<8x128xbf16>, vector<8x128xbf16> -> vector<8x128xbf16>
  return
}

// -----

func.func @iota_dims() {
  // expected-error @+1 {{iota_c1}}
  %i = ember_tpu.iota {dimensions = array<i32: 2>} : vector<8x128xi32>
  return
}

// -----

func.func @transpose_perm(%v: vector<8x128xf32>) {
  // expected-error @+1 {{transpose_c1}}
  %t = ember_tpu.transpose %v, [0, 0] : vector<8x128xf32> -> vector<8x128xf32>
  return
}

// -----

func.func @transpose_result(%v: vector<8x128xf32>) {
  // expected-error @+1 {{transpose_c2}}
  %t = ember_tpu.transpose %v, [1, 0] : vector<8x128xf32> -> vector<8x128xf32>
  return
}

// -----

func.func @slice_offsets(%x: memref<16x128xf32>, %i: i32) {
  // expected-error @+1 {{memref_slice_c1}}
  %w = ember_tpu.memref_slice %x[%i] : memref<16x128xf32> -> memref<8x128xf32>
  return
}

// -----

func.func @slice_type(%x: memref<16x128xf32>, %i: i32) {
  // expected-error @+1 {{memref_slice_c2}}
  %w = ember_tpu.memref_slice %x[%i, %i] : memref<16x128xf32> -> memref<8x128xi32>
  return
}

// -----

func.func @slice_fit(%x: memref<16x128xf32>, %i: i32) {
  // expected-error @+1 {{memref_slice_c3}}
  %w = ember_tpu.memref_slice %x[%i, %i] : memref<16x128xf32> -> memref<32x128xf32>
  return
}

// -----

func.func @dma_ends(%a: memref<8x128xf32>, %b: memref<16x128xf32>, %s: memref<!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>>) {
  // expected-error @+1 {{dma_c1}}
  ember_tpu.enqueue_dma source(%a : memref<8x128xf32>) target(%b : memref<16x128xf32>) target_semaphore(%s : memref<!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>>)
  return
}

// -----

func.func @dma_sem(%a: memref<8x128xf32>, %b: memref<8x128xf32>) {
  // expected-error @+1 {{dma_c2}}
  ember_tpu.enqueue_dma source(%a : memref<8x128xf32>) target(%b : memref<8x128xf32>)
  return
}

// -----

func.func @sem_space(%s: memref<!ember_tpu.semaphore>, %n: i32) {
  // expected-error @+1 {{sem_c1}}
  ember_tpu.sem_wait %s, %n : memref<!ember_tpu.semaphore>
  return
}

// -----

func.func @sem_kind(%s: memref<!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>>, %n: i32) {
  // expected-error @+1 {{sem_c1}}
  ember_tpu.sem_signal %s, %n : memref<!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>>
  return
}

// -----

func.func @squeeze(%x: memref<2x128xf32>) {
  // expected-error @+1 {{memref_squeeze_c1}}
  %s = ember_tpu.memref_squeeze %x : memref<2x128xf32> -> memref<128xf32>
  return
}

// -----

func.func @traced_window(%x: tensor<16x128xf32>, %b: tensor<8x128xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{traced_dma_c1}}
  ember_tpu.traced_dma_start %x[%i, %i], %b[%i, %i], sem[] {src_buffer = 0 : i64, dst_buffer = 1 : i64, sem_buffer = 2 : i64, src_sizes = array<i64: 8, 64>, dst_sizes = array<i64: 8, 128>, src_squeezed = array<i64>, dst_squeezed = array<i64>} : tensor<16x128xf32>, tensor<8x128xf32>
  return
}

// -----

func.func @traced_result(%x: tensor<16x128xf32>, %b: tensor<8x128xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{traced_dma_c2}}
  %n = ember_tpu.traced_dma_wait %x[%i, %i], %b[%i, %i], sem[] {src_buffer = 0 : i64, dst_buffer = 1 : i64, sem_buffer = 2 : i64, src_sizes = array<i64: 8, 128>, dst_sizes = array<i64: 8, 128>, src_squeezed = array<i64>, dst_squeezed = array<i64>} : tensor<16x128xf32>, tensor<8x128xf32> -> tensor<16x128xf32>
  return
}

// -----

// expected-error @+1 {{layout_c1}}
func.func @bad_layout() attributes {l = #ember_tpu.layout<64, {0, 0}, (8, 128)>} {
  return
}

// -----

// expected-error @+1 {{layout_c1}}
func.func @bad_tiling() attributes {l = #ember_tpu.layout<32, {0, 0}, (16, 128)>} {
  return
}

// -----

// expected-error @+1 {{layout_c1}}
func.func @bad_offset() attributes {l = #ember_tpu.layout<32, {8, 0}, (8, 128)>} {
  return
}

// -----

// expected-error @+1 {{layout_c1}}
func.func @bad_implicit() attributes {l = #ember_tpu.layout<32, {0, 0}, (8, 128), -3>} {
  return
}

// -----

func.func @layout_mismatch(%a: vector<8x128xf32>) {
  // expected-error @+1 {{layout_c2}}
  %b = arith.addf %a, %a {ember_tpu.out_layouts = [#ember_tpu.layout<16, {0, 0}, (16, 128)>]} : vector<8x128xf32>
  return
}

// -----

func.func @layout_rank(%a: vector<128xf32>) {
  // expected-error @+1 {{layout_c2}}
  %b = arith.addf %a, %a {ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, 0}, (8, 128)>]} : vector<128xf32>
  return
}

// -----

func.func @in_layouts_count(%a: vector<8x128xf32>) {
  // expected-error @+1 {{layout_c2: ember_tpu.in_layouts needs an entry per operand}}
  %b = arith.addf %a, %a {ember_tpu.in_layouts = [#ember_tpu.layout<32, {0, 0}, (8, 128)>]} : vector<8x128xf32>
  return
}

// -----

func.func @relayout_fit(%a: vector<8x128xf32>) {
  // expected-error @+1 {{relayout_c1}}
  %b = ember_tpu.relayout %a : vector<8x128xf32> from #ember_tpu.layout<32, {0, *}, (8, 128)> to #ember_tpu.layout<16, {0, 0}, (8, 128)>
  return
}

// -----

func.func @relayout_same(%a: vector<8x128xf32>) {
  // expected-error @+1 {{relayout_c2}}
  %b = ember_tpu.relayout %a : vector<8x128xf32> from #ember_tpu.layout<32, {0, 0}, (8, 128)> to #ember_tpu.layout<32, {0, 0}, (8, 128)>
  return
}

// -----

func.func @sem_alloc_space() {
  // expected-error @+1 {{sem_alloc_c1}}
  %s = ember_tpu.sem_alloc : memref<!ember_tpu.semaphore, #ember_tpu.memory_space<vmem>>
  return
}

// -----

func.func @region_results() -> i32 {
  // expected-error @+1 {{region_c1}}
  %r = ember_tpu.region {
    %c = arith.constant 3 : i64
    ember_tpu.yield %c : i64
  } : i32
  return %r : i32
}

// -----

func.func @traced_alloc_hbm() -> tensor<8x128xf32> {
  // expected-error @+1 {{traced_alloc_c1}}
  %b = ember_tpu.traced_alloc {buffer = 1 : i64, memory_space = #ember_tpu.memory_space<any>} : tensor<8x128xf32>
  return %b : tensor<8x128xf32>
}

// -----

func.func @traced_alloc_dma_vmem() -> tensor<8x128xf32> {
  // expected-error @+1 {{traced_alloc_c2}}
  %b = ember_tpu.traced_alloc {buffer = 1 : i64, memory_space = #ember_tpu.memory_space<vmem>, dma_semaphore} : tensor<8x128xf32>
  return %b : tensor<8x128xf32>
}

// -----

func.func @traced_alloc_negative() -> tensor<8x128xf32> {
  // expected-error @+1 {{traced_alloc_c3}}
  %b = ember_tpu.traced_alloc {buffer = -1 : i64, memory_space = #ember_tpu.memory_space<vmem>} : tensor<8x128xf32>
  return %b : tensor<8x128xf32>
}

// -----

func.func @send_sem_local(%b: tensor<2x8x128xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{traced_dma_c3}}
  ember_tpu.traced_dma_start %b[%i, %i, %i], %b[%i, %i, %i], sem[] {src_buffer = 1 : i64, dst_buffer = 1 : i64, sem_buffer = 4 : i64, src_sem_buffer = 3 : i64, src_sizes = array<i64: 1, 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64: 0>, dst_squeezed = array<i64: 0>} : tensor<2x8x128xf32>, tensor<2x8x128xf32>
  return
}

// -----

func.func @send_on_start(%b: tensor<2x8x128xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{traced_dma_c3}}
  ember_tpu.traced_dma_start %b[%i, %i, %i], %b[%i, %i, %i], sem[] {src_buffer = 1 : i64, dst_buffer = 1 : i64, sem_buffer = 4 : i64, send, src_sizes = array<i64: 1, 8, 128>, dst_sizes = array<i64: 1, 8, 128>, src_squeezed = array<i64: 0>, dst_squeezed = array<i64: 0>} : tensor<2x8x128xf32>, tensor<2x8x128xf32>
  return
}

// -----

func.func @barrier_dma() -> memref<!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>> {
  // expected-error @+1 {{sem_c1}}
  %b = ember_tpu.sem_barrier : memref<!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>>
  return %b : memref<!ember_tpu.dma_semaphore, #ember_tpu.memory_space<semaphore_mem>>
}

// -----

func.func @barrier_shape() -> tensor<2xi32> {
  // expected-error @+1 {{traced_alloc_c4}}
  %b = ember_tpu.traced_alloc {buffer = 1 : i64, memory_space = #ember_tpu.memory_space<semaphore_mem>, barrier} : tensor<2xi32>
  return %b : tensor<2xi32>
}

// -----

func.func @prng_no_seed() {
  // expected-error @+1 {{prng_c1}}
  ember_tpu.prng_set_seed_32
  return
}

// -----

func.func @traced_prng_no_seed() {
  // expected-error @+1 {{prng_c1}}
  ember_tpu.traced_prng_seed
  return
}

// -----

func.func @prng_rank_one() -> vector<128xi32> {
  // expected-error @+1 {{prng_c2}}
  %v = ember_tpu.prng_random_bits : vector<128xi32>
  return %v : vector<128xi32>
}

// -----

func.func @traced_prng_rank_one() -> tensor<128xi32> {
  // expected-error @+1 {{prng_c2}}
  %b = ember_tpu.traced_prng_random_bits : tensor<128xi32>
  return %b : tensor<128xi32>
}

// -----

func.func @rotate_dim(%v: vector<8x128xf32>, %n: i32) {
  // expected-error @+1 {{rotate_c1}}
  %r = ember_tpu.dynamic_rotate %v by %n dim 2 : vector<8x128xf32>, i32 -> vector<8x128xf32>
  return
}

// -----

func.func @rotate_stride_alone(%v: vector<8x128xf32>, %n: i32) {
  // expected-error @+1 {{rotate_c2}}
  %r = ember_tpu.dynamic_rotate %v by %n dim 0 {stride = 1 : si32} : vector<8x128xf32>, i32 -> vector<8x128xf32>
  return
}

// -----

func.func @rotate_stride_same_dim(%v: tensor<8x128xf32>, %n: tensor<i32>) {
  // expected-error @+1 {{rotate_c2}}
  %r = ember_tpu.traced_rotate %v by %n dim 0 {stride = 1 : si32, stride_dimension = 0 : si32} : tensor<8x128xf32>, tensor<i32>
  return
}

// -----

func.func @concatenate_none() {
  // expected-error @+1 {{concatenate_c1}}
  %r = "ember_tpu.concatenate"() {dimension = 0 : i32} : () -> vector<8x128xf32>
  return
}

// -----

func.func @concatenate_sizes(%a: vector<8x128xf32>, %b: vector<8x128xf32>) {
  // expected-error @+1 {{concatenate_c2}}
  %r = ember_tpu.concatenate %a, %b in 0 : vector<8x128xf32>, vector<8x128xf32> -> vector<8x256xf32>
  return
}

// -----

func.func @strided_starts(%m: memref<16x128xf32, #ember_tpu.memory_space<vmem>>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{strided_c1}}
  %v = ember_tpu.strided_load %m[%c0] {strides = array<i32: 2, 1>} : memref<16x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>
  return
}

// -----

func.func @strided_zero_stride(%m: memref<16x128xf32, #ember_tpu.memory_space<vmem>>, %v: vector<8x128xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{strided_c2}}
  ember_tpu.strided_store %m[%c0, %c0], %v {strides = array<i32: 0, 1>} : memref<16x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>
  return
}

// -----

func.func @strided_does_not_fit(%m: memref<16x128xf32, #ember_tpu.memory_space<vmem>>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{strided_c3}}
  %v = ember_tpu.strided_load %m[%c0, %c0] {strides = array<i32: 3, 1>} : memref<16x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>
  return
}

// -----

func.func @traced_load_type(%t: tensor<16x128xf32>, %i: tensor<i32>) {
  // expected-error @+1 {{strided_c3}}
  %r = ember_tpu.traced_load %t[%i, %i] {strides = array<i32: 2, 1>} : tensor<16x128xf32> -> tensor<8x128xi32>
  return
}

// -----

func.func @traced_store_mask_shape(%t: tensor<16x128xf32>, %i: tensor<i32>, %k: tensor<8x128xi1>) {
  // expected-error @+1 {{traced_store_c1}}
  %u = ember_tpu.traced_store %t[%i, %i], %t masked %k {strides = array<i32: 1, 1>} : tensor<16x128xf32>, tensor<16x128xf32>, tensor<8x128xi1>
  return
}

// -----

func.func @traced_store_mask_strided(%t: tensor<16x128xf32>, %v: tensor<8x128xf32>, %i: tensor<i32>, %k: tensor<8x128xi1>) {
  // expected-error @+1 {{traced_store_c1}}
  %u = ember_tpu.traced_store %t[%i, %i], %v masked %k {strides = array<i32: 2, 1>} : tensor<16x128xf32>, tensor<8x128xf32>, tensor<8x128xi1>
  return
}
