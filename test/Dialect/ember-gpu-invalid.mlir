// RUN: ember-opt %s -split-input-file -verify-diagnostics
//
// One case per numbered verifier rule of lib/IR/GPU/EmberGPUDialect.cpp (see
// docs/spec.md, "The ember_gpu kernel dialect").

// barrier_c1
func.func @barrier_c1(%bars: memref<2xi64>, %i: index) {
  // expected-error @+1 {{barrier_c1: barriers must be in shared memory}}
  ember_gpu.barrier_arrive %bars[%i] : memref<2xi64>
  return
}

// -----

// barrier_arrive_c1
func.func @barrier_arrive_c1(%bars: memref<2xi64, #gpu.address_space<workgroup>>, %i: index, %n: i32) {
  // expected-error @+1 {{barrier_arrive_c1: an arrival on a peer block's barrier (`cta`) cannot expect bytes}}
  ember_gpu.barrier_arrive %bars[%i], expect_tx = %n cta(%n) : memref<2xi64, #gpu.address_space<workgroup>>
  return
}

// -----

// barrier_init_c1
func.func @barrier_init_c1(%bars: memref<2xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{barrier_init_c1: arrivals must be at most 2^20 - 1, got 1048576}}
  ember_gpu.barrier_init %bars[%i], arrivals = 1048576 : memref<2xi64, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @barrier_init_zero(%bars: memref<2xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{attribute 'arrivals' failed to satisfy constraint}}
  ember_gpu.barrier_init %bars[%i], arrivals = 0 : memref<2xi64, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @barrier_type(%bars: memref<2xi32, #gpu.address_space<workgroup>>, %i: index, %p: i32) {
  // expected-error @+1 {{must be 1D memref of 64-bit signless integer values}}
  ember_gpu.barrier_wait %bars[%i], parity = %p : memref<2xi32, #gpu.address_space<workgroup>>
  return
}

// -----

// copy_gmem_to_smem_c1
func.func @copy_gmem_to_smem_c1(%d: !llvm.ptr, %x: i32, %tile: memref<64x64xbf16>,
                                %bars: memref<1xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{copy_gmem_to_smem_c1: the shared-memory buffer must be statically shaped, contiguous and in shared memory}}
  ember_gpu.copy_gmem_to_smem %d[%x, %x], %tile, %bars[%i] : !llvm.ptr, memref<64x64xbf16>, memref<1xi64, #gpu.address_space<workgroup>>
  return
}

// -----

// copy_gmem_to_smem_c1: a column block of a shared buffer is not contiguous.
func.func @copy_gmem_to_smem_c1_strided(%d: !llvm.ptr, %x: i32,
    %tile: memref<64x32xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>,
    %bars: memref<1xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{copy_gmem_to_smem_c1: the shared-memory buffer must be statically shaped, contiguous and in shared memory}}
  ember_gpu.copy_gmem_to_smem %d[%x, %x], %tile, %bars[%i] : !llvm.ptr, memref<64x32xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>, memref<1xi64, #gpu.address_space<workgroup>>
  return
}

// -----

// copy_gmem_to_smem_c2
func.func @copy_gmem_to_smem_c2(%d: !llvm.ptr, %x: i32, %tile: memref<64x64xbf16, #gpu.address_space<workgroup>>,
                                %bars: memref<1xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{copy_gmem_to_smem_c2: a TMA box has 1 to 5 dimensions and one coordinate per dimension, got 1 coordinates for a buffer of rank 2}}
  ember_gpu.copy_gmem_to_smem %d[%x], %tile, %bars[%i] : !llvm.ptr, memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<1xi64, #gpu.address_space<workgroup>>
  return
}

// -----

// copy_gmem_to_smem_c3
func.func @copy_gmem_to_smem_c3(%d: !llvm.ptr, %x: i32, %tile: memref<64x4xbf16, #gpu.address_space<workgroup>>,
                                %bars: memref<1xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{copy_gmem_to_smem_c3: the innermost box dimension must span a multiple of 16 bytes, got 4 elements of 16 bits}}
  ember_gpu.copy_gmem_to_smem %d[%x, %x], %tile, %bars[%i] : !llvm.ptr, memref<64x4xbf16, #gpu.address_space<workgroup>>, memref<1xi64, #gpu.address_space<workgroup>>
  return
}

// -----

// copy_gmem_to_smem_c3
func.func @copy_gmem_to_smem_c3_big(%d: !llvm.ptr, %x: i32, %tile: memref<512x64xbf16, #gpu.address_space<workgroup>>,
                                    %bars: memref<1xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{copy_gmem_to_smem_c3: every box dimension must hold 1 to 256 elements, got shape [512, 64]}}
  ember_gpu.copy_gmem_to_smem %d[%x, %x], %tile, %bars[%i] : !llvm.ptr, memref<512x64xbf16, #gpu.address_space<workgroup>>, memref<1xi64, #gpu.address_space<workgroup>>
  return
}

// -----

// copy_gmem_to_smem_c4
func.func @copy_gmem_to_smem_c4(%d: !llvm.ptr, %x: i32, %m: i16, %tile: memref<64x64xbf16, #gpu.address_space<workgroup>>,
                                %bars: memref<1xi64, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{copy_gmem_to_smem_c4: `tracked_by` and `multicast` cannot be combined}}
  ember_gpu.copy_gmem_to_smem %d[%x, %x], %tile, %bars[%i], multicast = %m tracked_by = %x : !llvm.ptr, memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<1xi64, #gpu.address_space<workgroup>>
  return
}

// -----

// copy_smem_to_gmem_c1
func.func @copy_smem_to_gmem_c1(%d: !llvm.ptr, %x: i32, %tile: memref<?x64xf32, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{copy_smem_to_gmem_c1: the shared-memory buffer must be statically shaped}}
  ember_gpu.copy_smem_to_gmem %tile, %d[%x, %x] : memref<?x64xf32, #gpu.address_space<workgroup>>, !llvm.ptr
  return
}

// -----

// copy_smem_to_gmem_c2
func.func @copy_smem_to_gmem_c2(%d: !llvm.ptr, %x: i32, %tile: memref<2x2x2x2x2x4xf32, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{copy_smem_to_gmem_c2: a TMA box has 1 to 5 dimensions}}
  ember_gpu.copy_smem_to_gmem %tile, %d[%x, %x, %x, %x, %x, %x] : memref<2x2x2x2x2x4xf32, #gpu.address_space<workgroup>>, !llvm.ptr
  return
}

// -----

// copy_smem_to_gmem_c3
func.func @copy_smem_to_gmem_c3(%d: !llvm.ptr, %x: i32, %tile: memref<8x3xf32, #gpu.address_space<workgroup>>) {
  // expected-error @+1 {{copy_smem_to_gmem_c3: the innermost box dimension must span a multiple of 16 bytes}}
  ember_gpu.copy_smem_to_gmem %tile, %d[%x, %x] : memref<8x3xf32, #gpu.address_space<workgroup>>, !llvm.ptr
  return
}

// -----

func.func @wait_too_many() {
  // expected-error @+1 {{attribute 'allow_in_flight' failed to satisfy constraint}}
  ember_gpu.wait_smem_to_gmem 64
  return
}

// -----

// tmem_alloc_c1
func.func @tmem_alloc_c1(%slot: memref<1xi32, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{tmem_alloc_c1: TMEM columns must be a power of two from 32 to 512, got 96}}
  ember_gpu.tmem_alloc %slot[%i], columns = 96 : memref<1xi32, #gpu.address_space<workgroup>>
  return
}

// -----

// tmem_alloc_c1
func.func @tmem_alloc_c1_big(%slot: memref<1xi32, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{tmem_alloc_c1: TMEM columns must be a power of two from 32 to 512, got 1024}}
  ember_gpu.tmem_alloc %slot[%i], columns = 1024 : memref<1xi32, #gpu.address_space<workgroup>>
  return
}

// -----

// tmem_alloc_c2
func.func @tmem_alloc_c2(%slot: memref<1xi32>, %i: index) {
  // expected-error @+1 {{tmem_alloc_c2: the address slot must be in shared memory}}
  ember_gpu.tmem_alloc %slot[%i], columns = 64 : memref<1xi32>
  return
}

// -----

// tmem_dealloc_c1
func.func @tmem_dealloc_c1(%t: i32) {
  // expected-error @+1 {{tmem_dealloc_c1: TMEM columns must be a power of two from 32 to 512, got 16}}
  ember_gpu.tmem_dealloc %t, columns = 16
  return
}

// -----

func.func @tmem_load_shape(%t: i32) {
  // expected-error @+1 {{result #0 must be 32-bit signless integer or vector of 32-bit signless integer values of length 2/4/8/16/32/64/128}}
  %v = ember_gpu.tmem_load %t : vector<3xi32>
  return
}

// -----

func.func @wgmma_wait_range() {
  // expected-error @+1 {{attribute 'allow_in_flight' failed to satisfy constraint}}
  ember_gpu.wgmma_wait 8
  return
}

// -----

func.func @wgmma_descriptor_space(%b: memref<64xbf16>, %i: index) {
  // expected-error @+1 {{wgmma_descriptor_c1: the matrix must be in shared memory}}
  %d = ember_gpu.wgmma_descriptor %b[%i], swizzle = 128, leading = 16, stride = 1024 : memref<64xbf16>
  return
}

// -----

func.func @wgmma_descriptor_swizzle(%b: memref<64xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{wgmma_descriptor_c2: swizzle must be 0, 32, 64 or 128 (bytes), got 16}}
  %d = ember_gpu.wgmma_descriptor %b[%i], swizzle = 16, leading = 16, stride = 1024 : memref<64xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @wgmma_descriptor_offset(%b: memref<64xbf16, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{wgmma_descriptor_c3: byte offsets must be multiples of 16 below 2^18, got 1000}}
  %d = ember_gpu.wgmma_descriptor %b[%i], swizzle = 128, leading = 16, stride = 1000 : memref<64xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @wgmma_type(%acc: vector<32xf32>, %a: i64, %b: i64) {
  // expected-error @+1 {{wgmma_c1: the operands' element type must be f16, bf16, tf32, f8E4M3FN or f8E5M2, got 'f32'}}
  %d = ember_gpu.wgmma %acc, %a, %b, n = 64, f32 : vector<32xf32>, i64 -> vector<32xf32>
  return
}

// -----

func.func @wgmma_n(%acc: vector<6xf32>, %a: i64, %b: i64) {
  // expected-error @+1 {{wgmma_c2: n must be a multiple of 8 from 8 to 256, got 12}}
  %d = ember_gpu.wgmma %acc, %a, %b, n = 12, f16 : vector<6xf32>, i64 -> vector<6xf32>
  return
}

// -----

func.func @wgmma_register_a(%acc: vector<32xf32>, %a: vector<4xi32>, %b: i64) {
  // expected-error @+1 {{wgmma_c4: an A in registers cannot be transposed (transpose_a)}}
  %d = ember_gpu.wgmma %acc, %a, %b, n = 64, bf16 transpose_a : vector<32xf32>, vector<4xi32> -> vector<32xf32>
  return
}

// -----

func.func @wgmma_tf32_transposed(%acc: vector<32xf32>, %a: i64, %b: i64) {
  // expected-error @+1 {{wgmma_c5: 'tf32' operands must be K-major (no transpose_a or transpose_b)}}
  %d = ember_gpu.wgmma %acc, %a, %b, n = 64, tf32 transpose_b : vector<32xf32>, i64 -> vector<32xf32>
  return
}

// -----

func.func @wgmma_fp8_register_a(%acc: vector<32xf32>, %a: vector<4xi32>, %b: i64) {
  // expected-error @+1 {{wgmma_c5: an A in registers must be f16 or bf16, got 'f8E4M3FN'}}
  %d = ember_gpu.wgmma %acc, %a, %b, n = 64, f8E4M3FN : vector<32xf32>, vector<4xi32> -> vector<32xf32>
  return
}

// -----

func.func @wgmma_accumulator(%acc: vector<64xf32>, %a: i64, %b: i64) {
  // expected-error @+1 {{wgmma_c3: the accumulator and the result must hold n / 2 = 32 values per thread, got 'vector<64xf32>'}}
  %d = ember_gpu.wgmma %acc, %a, %b, n = 64, bf16 : vector<64xf32>, i64 -> vector<64xf32>
  return
}
