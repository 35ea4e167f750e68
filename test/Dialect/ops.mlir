// RUN: ember-opt %s | ember-opt | FileCheck %s
// RUN: ember-opt %s -mlir-print-op-generic | ember-opt | FileCheck %s

// CHECK-LABEL: func @elementwise
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %i: tensor<2x3xi32>,
                       %u: tensor<2x3xui32>, %c: tensor<2x3xcomplex<f32>>) {
  // CHECK: ember.neg
  %0 = ember.neg %a : tensor<2x3xf32>
  // CHECK: ember.abs
  %1 = ember.abs %i : tensor<2x3xi32>
  // CHECK: ember.sign
  %2 = ember.sign %a : tensor<2x3xf32>
  // CHECK: ember.floor
  %3 = ember.floor %a : tensor<2x3xf32>
  // CHECK: ember.ceil
  %4 = ember.ceil %a : tensor<2x3xf32>
  // CHECK: ember.round_nearest_afz
  %5 = ember.round_nearest_afz %a : tensor<2x3xf32>
  // CHECK: ember.round_nearest_even
  %6 = ember.round_nearest_even %a : tensor<2x3xf32>
  // CHECK: ember.exp
  %7 = ember.exp %a : tensor<2x3xf32>
  // CHECK: ember.exp2
  %8 = ember.exp2 %a : tensor<2x3xf32>
  // CHECK: ember.log
  %9 = ember.log %a : tensor<2x3xf32>
  // CHECK: ember.log1p
  %10 = ember.log1p %a : tensor<2x3xf32>
  // CHECK: ember.expm1
  %11 = ember.expm1 %a : tensor<2x3xf32>
  // CHECK: ember.tanh
  %12 = ember.tanh %a : tensor<2x3xf32>
  // CHECK: ember.logistic
  %13 = ember.logistic %a : tensor<2x3xf32>
  // CHECK: ember.sin
  %14 = ember.sin %a : tensor<2x3xf32>
  // CHECK: ember.cos
  %15 = ember.cos %a : tensor<2x3xf32>
  // CHECK: ember.tan
  %16 = ember.tan %a : tensor<2x3xf32>
  // CHECK: ember.asin
  %17 = ember.asin %a : tensor<2x3xf32>
  // CHECK: ember.acos
  %18 = ember.acos %a : tensor<2x3xf32>
  // CHECK: ember.atan
  %19 = ember.atan %a : tensor<2x3xf32>
  // CHECK: ember.sinh
  %20 = ember.sinh %a : tensor<2x3xf32>
  // CHECK: ember.cosh
  %21 = ember.cosh %a : tensor<2x3xf32>
  // CHECK: ember.asinh
  %22 = ember.asinh %a : tensor<2x3xf32>
  // CHECK: ember.acosh
  %23 = ember.acosh %a : tensor<2x3xf32>
  // CHECK: ember.atanh
  %24 = ember.atanh %a : tensor<2x3xf32>
  // CHECK: ember.sqrt
  %25 = ember.sqrt %a : tensor<2x3xf32>
  // CHECK: ember.rsqrt
  %26 = ember.rsqrt %a : tensor<2x3xf32>
  // CHECK: ember.cbrt
  %27 = ember.cbrt %a : tensor<2x3xf32>
  // CHECK: ember.erf
  %28 = ember.erf %a : tensor<2x3xf32>
  // CHECK: ember.erf_inv
  %29 = ember.erf_inv %a : tensor<2x3xf32>
  // CHECK: ember.lgamma
  %30 = ember.lgamma %a : tensor<2x3xf32>
  // CHECK: ember.digamma
  %31 = ember.digamma %a : tensor<2x3xf32>
  // CHECK: ember.bessel_i0e
  %i0e = ember.bessel_i0e %a : tensor<2x3xf32>
  // CHECK: ember.bessel_i1e
  %i1e = ember.bessel_i1e %a : tensor<2x3xf32>
  // CHECK: ember.integer_pow %{{.*}}, y = -3 : tensor<2x3xf32>
  %ip = ember.integer_pow %a, y = -3 : tensor<2x3xf32>
  // CHECK: ember.integer_pow %{{.*}}, y = 5 : tensor<2x3xi32>
  %ipi = ember.integer_pow %i, y = 5 : tensor<2x3xi32>
  // CHECK: ember.is_finite {{.*}} -> tensor<2x3xi1>
  %32 = ember.is_finite %a : (tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK: ember.not
  %33 = ember.not %u : tensor<2x3xui32>
  // CHECK: ember.population_count
  %34 = ember.population_count %i : tensor<2x3xi32>
  // CHECK: ember.clz
  %35 = ember.clz %i : tensor<2x3xi32>
  // CHECK: ember.real
  %36 = ember.real %c : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xf32>
  // CHECK: ember.imag
  %37 = ember.imag %c : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xf32>
  // CHECK: ember.conj
  %38 = ember.conj %c : tensor<2x3xcomplex<f32>>
  // CHECK: ember.add
  %40 = ember.add %a, %b : tensor<2x3xf32>
  // CHECK: ember.sub
  %41 = ember.sub %a, %b : tensor<2x3xf32>
  // CHECK: ember.mul
  %42 = ember.mul %a, %b : tensor<2x3xf32>
  // CHECK: ember.div
  %43 = ember.div %i, %i : tensor<2x3xi32>
  // CHECK: ember.rem
  %44 = ember.rem %a, %b : tensor<2x3xf32>
  // CHECK: ember.pow
  %45 = ember.pow %a, %b : tensor<2x3xf32>
  // CHECK: ember.max
  %46 = ember.max %a, %b : tensor<2x3xf32>
  // CHECK: ember.min
  %47 = ember.min %u, %u : tensor<2x3xui32>
  // CHECK: ember.atan2
  %48 = ember.atan2 %a, %b : tensor<2x3xf32>
  // CHECK: ember.nextafter
  %49 = ember.nextafter %a, %b : tensor<2x3xf32>
  // CHECK: ember.and
  %50 = ember.and %i, %i : tensor<2x3xi32>
  // CHECK: ember.or
  %51 = ember.or %i, %i : tensor<2x3xi32>
  // CHECK: ember.xor
  %52 = ember.xor %i, %i : tensor<2x3xi32>
  // CHECK: ember.shift_left
  %53 = ember.shift_left %i, %i : tensor<2x3xi32>
  // CHECK: ember.shift_right_logical
  %54 = ember.shift_right_logical %i, %i : tensor<2x3xi32>
  // CHECK: ember.shift_right_arithmetic
  %55 = ember.shift_right_arithmetic %i, %i : tensor<2x3xi32>
  // CHECK: ember.complex
  %56 = ember.complex %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xcomplex<f32>>
  // CHECK: ember.compare LT
  %57 = ember.compare LT, %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK: ember.select
  %58 = ember.select %57, %a, %b : tensor<2x3xi1>, tensor<2x3xf32>
  // CHECK: ember.clamp
  %59 = ember.clamp %a, %b, %a : tensor<2x3xf32>
  // CHECK: ember.convert
  %60 = ember.convert %a : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  // CHECK: ember.bitcast_convert
  %61 = ember.bitcast_convert %a : (tensor<2x3xf32>) -> tensor<2x3xui32>
  // CHECK: ember.threefry2x32
  %62:2 = ember.threefry2x32 %u, %u, %u, %u : tensor<2x3xui32>
  // CHECK: ember.philox4x32 %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x3xui32>
  %63:4 = ember.philox4x32 %u, %u, %u, %u, %u, %u : tensor<2x3xui32>
  return
}

// CHECK-LABEL: func @structural
func.func @structural(%a: tensor<2x3xf32>, %s: tensor<f32>, %i: tensor<i32>) {
  // CHECK: ember.constant dense<1.000000e+00> : tensor<2xf32>
  %c = ember.constant dense<1.0> : tensor<2xf32>
  // CHECK: ember.iota dim = 1 : tensor<2x3xi32>
  %0 = ember.iota dim = 1 : tensor<2x3xi32>
  // CHECK: ember.broadcast_in_dim %{{.*}}, dims = [1, 2]
  %1 = ember.broadcast_in_dim %a, dims = [1, 2] : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
  // CHECK: ember.reshape
  %2 = ember.reshape %a : (tensor<2x3xf32>) -> tensor<6xf32>
  // CHECK: ember.transpose %{{.*}}, dims = [1, 0]
  %3 = ember.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  // CHECK: ember.slice
  %4 = ember.slice %a, start = [0, 1], limit = [2, 3], strides = [1, 2] : (tensor<2x3xf32>) -> tensor<2x1xf32>
  // CHECK: ember.dynamic_slice
  %5 = ember.dynamic_slice %a[%i, %i], sizes = [1, 2] : (tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x2xf32>
  // CHECK: ember.dynamic_update_slice
  %6 = ember.dynamic_update_slice %a[%i, %i], %5 : tensor<2x3xf32>, tensor<1x2xf32>, tensor<i32>, tensor<i32>
  // CHECK: ember.pad
  %7 = ember.pad %a, %s, low = [1, -1], high = [0, 2], interior = [1, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<4x4xf32>
  // CHECK: ember.concatenate
  %8 = ember.concatenate dim = 0, %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  // CHECK: ember.reverse
  %9 = ember.reverse %a, dims = [0] : tensor<2x3xf32>
  // CHECK: ember.reduce max
  %10 = ember.reduce max %a, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  // CHECK: ember.argmax
  %11 = ember.argmax %a, axis = 1 : (tensor<2x3xf32>) -> tensor<2xi32>
  // CHECK: ember.argmin
  %12 = ember.argmin %a, axis = 0 : (tensor<2x3xf32>) -> tensor<3xi32>
  // CHECK: ember.cumulative sum
  %13 = ember.cumulative sum %a, axis = 1 {reverse = true} : tensor<2x3xf32>
  // CHECK: ember.reduce_window max
  %14 = ember.reduce_window max %a, %s, window = [2, 2], strides = [1, 1], low = [0, 0], high = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<1x3xf32>
  // CHECK: ember.sort
  %15:2 = ember.sort dim = 1, keys = 1, %a, %a : tensor<2x3xf32>, tensor<2x3xf32>
  // CHECK: ember.dot_general
  %16 = ember.dot_general %a, %a, batch = [] x [], contract = [1] x [1] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  // CHECK: ember.dot_general {{.*}} {precision = ["HIGHEST", "DEFAULT"]}
  %p16 = ember.dot_general %a, %a, batch = [] x [], contract = [1] x [1] {precision = ["HIGHEST", "DEFAULT"]} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  // An algorithm preset (JAX's DotAlgorithmPreset).
  // CHECK: ember.dot_general {{.*}} {precision = ["BF16_BF16_F32_X3"]}
  %q16 = ember.dot_general %a, %a, batch = [] x [], contract = [1] x [1] {precision = ["BF16_BF16_F32_X3"]} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// CHECK-LABEL: func @gather_scatter
func.func @gather_scatter(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>, %upd: tensor<4x3xf32>) {
  // CHECK: ember.gather
  %0 = ember.gather %a[%idx] {offset_dims = array<i64: 1>, collapsed_slice_dims = array<i64: 0>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 0>, index_vector_dim = 1, slice_sizes = array<i64: 1, 3>, mode = #ember<mode clip>} : (tensor<5x3xf32>, tensor<4x1xi32>) -> tensor<4x3xf32>
  // CHECK: ember.scatter add
  %1 = ember.scatter add %a[%idx], %upd {update_window_dims = array<i64: 1>, inserted_window_dims = array<i64: 0>, operand_batching_dims = array<i64>, scatter_indices_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, index_vector_dim = 1, mode = #ember<mode fill>} : (tensor<5x3xf32>, tensor<4x1xi32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  return
}

// CHECK-LABEL: func @sort_mixed
func.func @sort_mixed(%k: tensor<5xf32>, %v: tensor<5xi32>) -> (tensor<5xf32>, tensor<5xi32>) {
  // CHECK: ember.sort dim = 0, keys = 1, %{{.*}}, %{{.*}} : tensor<5xf32>, tensor<5xi32>
  %0:2 = ember.sort dim = 0, keys = 1, %k, %v : tensor<5xf32>, tensor<5xi32>
  return %0#0, %0#1 : tensor<5xf32>, tensor<5xi32>
}

func.func private @callee(%x: tensor<3xf32>) -> tensor<f32> {
  %0 = ember.reduce sum %x, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
// CHECK-LABEL: func @transforms
func.func @transforms(%x: tensor<3xf32>, %c: tensor<f32>, %dyn: tensor<?x3xf32>) -> tensor<3xf32> {
  // CHECK: ember.jvp @callee(%{{.*}}) tangents(%{{.*}}) wrt [0]
  %y, %t = ember.jvp @callee(%x) tangents(%x) wrt [0] : (tensor<3xf32>, tensor<3xf32>) -> (tensor<f32>, tensor<f32>)
  // CHECK: ember.vjp @callee(%{{.*}}) cotangents(%{{.*}}) wrt [0]
  %z, %g = ember.vjp @callee(%x) cotangents(%c) wrt [0] : (tensor<3xf32>, tensor<f32>) -> (tensor<f32>, tensor<3xf32>)
  // CHECK: ember.stop_gradient
  %s = ember.stop_gradient %g : tensor<3xf32>
  // CHECK: ember.checkpoint_name %{{.*}} "layer0" : tensor<3xf32>
  %n = ember.checkpoint_name %s "layer0" : tensor<3xf32>
  // CHECK: ember.optimization_barrier %{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>
  %ob:2 = ember.optimization_barrier %s, %g : tensor<3xf32>, tensor<3xf32>
  // Dynamic dimensions: the one ember op that takes them.
  // CHECK: ember.optimization_barrier %{{.*}} : tensor<?x3xf32>
  %od = ember.optimization_barrier %dyn : tensor<?x3xf32>
  return %s : tensor<3xf32>
}

// CHECK-LABEL: func @while_loop
func.func @while_loop(%x: tensor<i32>, %ten: tensor<i32>) -> tensor<i32> {
  // CHECK: ember.while
  // CHECK: cond
  // CHECK: do
  %r = ember.while (%x) : tensor<i32> cond {
  ^bb0(%c: tensor<i32>):
    %p = ember.compare LT, %c, %ten : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<i32>):
    %n = ember.add %c, %c : tensor<i32>
    ember.yield %n : tensor<i32>
  }
  return %r : tensor<i32>
}

// CHECK-LABEL: func @parallel_while_loop
func.func @parallel_while_loop(%x: tensor<i32>, %ten: tensor<i32>) -> tensor<i32> {
  // CHECK: ember.while(%{{.*}}) {parallel, trip_count = 3 : i64}
  %r = ember.while (%x) {parallel, trip_count = 3 : i64} : tensor<i32> cond {
  ^bb0(%c: tensor<i32>):
    %p = ember.compare LT, %c, %ten : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<i32>):
    %n = ember.add %c, %c : tensor<i32>
    ember.yield %n : tensor<i32>
  }
  return %r : tensor<i32>
}

func.func private @per_example(%x: tensor<3xf32>, %w: tensor<3xf32>) -> tensor<f32> {
  %0 = ember.mul %x, %w : tensor<3xf32>
  %1 = ember.reduce sum %0, dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}
// CHECK-LABEL: func @vmap
func.func @vmap(%xs: tensor<8x3xf32>, %w: tensor<3xf32>) -> tensor<8xf32> {
  // CHECK: ember.vmap @per_example(%{{.*}}, %{{.*}}) batched [true, false] size 8
  %y = ember.vmap @per_example(%xs, %w) batched [true, false] size 8 : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}
// CHECK-LABEL: func @host_callback
func.func @host_callback(%x: tensor<4xf32>, %i: tensor<i32>) -> tensor<4xf32> {
  // CHECK: ember.host_callback 0(%{{.*}}) {has_side_effect} : (tensor<4xf32>) -> ()
  ember.host_callback 0(%x) {has_side_effect} : (tensor<4xf32>) -> ()
  // CHECK: ember.host_callback 1(%{{.*}}, %{{.*}}) {vmap_method = "expand_dims"} : (tensor<4xf32>, tensor<i32>) -> tensor<4xf32>
  %y = ember.host_callback 1(%x, %i) {vmap_method = "expand_dims"} : (tensor<4xf32>, tensor<i32>) -> tensor<4xf32>
  // CHECK: ember.host_callback 2(%{{.*}}) {device_axes = ["i", "j"], vmap_method = "none"} : (tensor<4xf32>) -> tensor<4xf32>
  %z = ember.host_callback 2(%y) {device_axes = ["i", "j"], vmap_method = "none"} : (tensor<4xf32>) -> tensor<4xf32>
  return %z : tensor<4xf32>
}
// CHECK-LABEL: func @case
func.func @case(%i: tensor<i32>, %a: tensor<3xf32>) -> tensor<3xf32> {
  // CHECK: ember.case %{{.*}} : tensor<i32> -> tensor<3xf32> {
  // CHECK: ember.yield %{{.*}} : tensor<3xf32>
  // CHECK: }, {
  // CHECK: ember.neg
  %r = ember.case %i : tensor<i32> -> tensor<3xf32> {
    ember.yield %a : tensor<3xf32>
  }, {
    %n = ember.neg %a : tensor<3xf32>
    ember.yield %n : tensor<3xf32>
  }
  return %r : tensor<3xf32>
}

// CHECK-LABEL: func @stacks
// CHECK: ember.stack_push %{{.*}}(%{{.*}}, %{{.*}}) : (tensor<i64>, tensor<3xf32>, tensor<i1>) -> tensor<i64>
// CHECK: ember.stack_pop %{{.*}}[%{{.*}}] : (tensor<i64>, tensor<i64>) -> (tensor<i64>, tensor<3xf32>, tensor<i1>)
// CHECK: ember.stack_pop %{{.*}}[%{{.*}}] {lanes = 4 : i64} : (tensor<i64>, tensor<4xi64>) -> (tensor<i64>, tensor<4x3xf32>)
// CHECK: ember.stack_push %{{.*}}(%{{.*}}) {lanes = 4 : i64} : (tensor<i64>, tensor<4x3xf32>) -> tensor<i64>
// CHECK: ember.stack_free %{{.*}} : tensor<i64>
func.func @stacks(%h: tensor<i64>, %x: tensor<3xf32>, %b: tensor<i1>, %k: tensor<i64>, %ks: tensor<4xi64>) -> tensor<3xf32> {
  %h1 = ember.stack_push %h(%x, %b) : (tensor<i64>, tensor<3xf32>, tensor<i1>) -> tensor<i64>
  %h2, %y, %c = ember.stack_pop %h1[%k] : (tensor<i64>, tensor<i64>) -> (tensor<i64>, tensor<3xf32>, tensor<i1>)
  %h3, %ys = ember.stack_pop %h2[%ks] {lanes = 4 : i64} : (tensor<i64>, tensor<4xi64>) -> (tensor<i64>, tensor<4x3xf32>)
  %h4 = ember.stack_push %h3(%ys) {lanes = 4 : i64} : (tensor<i64>, tensor<4x3xf32>) -> tensor<i64>
  ember.stack_free %h4 : tensor<i64>
  return %y : tensor<3xf32>
}

// CHECK-LABEL: func @linalg
// CHECK: ember.lu %{{.*}} : (tensor<2x3x3xf32>) -> (tensor<2x3x3xf32>, tensor<2x3xi32>, tensor<2x3xi32>)
// CHECK: ember.eigh %{{.*}} : (tensor<2x3x3xf32>) -> (tensor<2x3x3xf32>, tensor<2x3xf32>)
// CHECK: %[[L:.*]] = ember.cholesky %{{.*}} : tensor<2x3x3xf32>
// CHECK: ember.triangular_solve %[[L]], %{{.*}} {lower = true, transpose_a = false, unit_diagonal = false} : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
func.func @linalg(%a: tensor<2x3x3xf32>, %b: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %lu, %piv, %perm = ember.lu %a : (tensor<2x3x3xf32>) -> (tensor<2x3x3xf32>, tensor<2x3xi32>, tensor<2x3xi32>)
  %v, %w = ember.eigh %lu : (tensor<2x3x3xf32>) -> (tensor<2x3x3xf32>, tensor<2x3xf32>)
  %l = ember.cholesky %v : tensor<2x3x3xf32>
  %x = ember.triangular_solve %l, %b {lower = true, transpose_a = false, unit_diagonal = false} : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %x : tensor<2x3x4xf32>
}

// CHECK-LABEL: func @fft
// CHECK: ember.fft %{{.*}} {fft_lengths = array<i64: 8>, fft_type = "RFFT"} : (tensor<3x8xf32>) -> tensor<3x5xcomplex<f32>>
// CHECK: ember.fft %{{.*}} {fft_lengths = array<i64: 8>, fft_type = "IRFFT"} : (tensor<3x5xcomplex<f32>>) -> tensor<3x8xf32>
// CHECK: ember.fft %{{.*}} {fft_lengths = array<i64: 4, 2, 7>, fft_type = "IFFT"} : (tensor<4x2x7xcomplex<f64>>) -> tensor<4x2x7xcomplex<f64>>
func.func @fft(%x: tensor<3x8xf32>, %c: tensor<4x2x7xcomplex<f64>>) -> (tensor<3x8xf32>, tensor<4x2x7xcomplex<f64>>) {
  %0 = ember.fft %x {fft_type = "RFFT", fft_lengths = array<i64: 8>} : (tensor<3x8xf32>) -> tensor<3x5xcomplex<f32>>
  %1 = ember.fft %0 {fft_type = "IRFFT", fft_lengths = array<i64: 8>} : (tensor<3x5xcomplex<f32>>) -> tensor<3x8xf32>
  %2 = ember.fft %c {fft_type = "IFFT", fft_lengths = array<i64: 4, 2, 7>} : (tensor<4x2x7xcomplex<f64>>) -> tensor<4x2x7xcomplex<f64>>
  return %1, %2 : tensor<3x8xf32>, tensor<4x2x7xcomplex<f64>>
}

// CHECK-LABEL: func @qr_svd
// CHECK: ember.qr %{{.*}} {full_matrices = false} : (tensor<2x5x3xcomplex<f32>>) -> (tensor<2x5x3xcomplex<f32>>, tensor<2x3x3xcomplex<f32>>)
// CHECK: ember.qr %{{.*}} {full_matrices = true} : (tensor<2x5x3xcomplex<f32>>) -> (tensor<2x5x5xcomplex<f32>>, tensor<2x5x3xcomplex<f32>>)
// CHECK: ember.svd %{{.*}} {full_matrices = false} : (tensor<2x5x3xcomplex<f32>>) -> (tensor<2x3xf32>, tensor<2x5x3xcomplex<f32>>, tensor<2x3x3xcomplex<f32>>)
// CHECK: ember.svd %{{.*}} {full_matrices = false} : (tensor<2x5x3xcomplex<f32>>) -> tensor<2x3xf32>
func.func @qr_svd(%a: tensor<2x5x3xcomplex<f32>>) -> tensor<2x3xf32> {
  %q, %r = ember.qr %a {full_matrices = false} : (tensor<2x5x3xcomplex<f32>>) -> (tensor<2x5x3xcomplex<f32>>, tensor<2x3x3xcomplex<f32>>)
  %qf, %rf = ember.qr %a {full_matrices = true} : (tensor<2x5x3xcomplex<f32>>) -> (tensor<2x5x5xcomplex<f32>>, tensor<2x5x3xcomplex<f32>>)
  %s, %u, %vh = ember.svd %a {full_matrices = false} : (tensor<2x5x3xcomplex<f32>>) -> (tensor<2x3xf32>, tensor<2x5x3xcomplex<f32>>, tensor<2x3x3xcomplex<f32>>)
  %s2 = ember.svd %a {full_matrices = false} : (tensor<2x5x3xcomplex<f32>>) -> tensor<2x3xf32>
  return %s2 : tensor<2x3xf32>
}

// Backward-pass effects round-trip (custom_vjp bwd writing a ref).
// CHECK-LABEL: func @backward_effects
// CHECK: ember.custom_vjp_call @eff_f fwd @eff_f bwd @eff_bwd(%{{.*}}) segments [1, 0, 0, 0, 0] {bwd_effects = 1 : i64}
// CHECK: ember.vjp @eff_f(%{{.*}}) cotangents(%{{.*}}) wrt [0] {effects = 1 : i64}
func.func private @eff_f(%x: tensor<f32>) -> tensor<f32> {
  return %x : tensor<f32>
}
func.func private @eff_bwd(%ct: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  return %ct, %ct : tensor<f32>, tensor<f32>
}
func.func @backward_effects(%x: tensor<f32>) -> tensor<f32> {
  %y = ember.custom_vjp_call @eff_f fwd @eff_f bwd @eff_bwd(%x) segments [1, 0, 0, 0, 0] {bwd_effects = 1 : i64} : (tensor<f32>) -> tensor<f32>
  %z, %g, %e = ember.vjp @eff_f(%y) cotangents(%x) wrt [0] {effects = 1 : i64} : (tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>)
  return %e : tensor<f32>
}

// 8- and 4-bit floats are element types of every float op.
// CHECK-LABEL: func @narrow_floats
func.func @narrow_floats(%a: tensor<4xf8E4M3FN>, %b: tensor<4xf4E2M1FN>, %c: tensor<4xf8E8M0FNU>) -> tensor<4xf8E5M2> {
  // CHECK: ember.exp %{{.*}} : tensor<4xf8E4M3FN>
  %0 = ember.exp %a : tensor<4xf8E4M3FN>
  // CHECK: ember.add %{{.*}} : tensor<4xf4E2M1FN>
  %1 = ember.add %b, %b : tensor<4xf4E2M1FN>
  // CHECK: ember.mul %{{.*}} : tensor<4xf8E8M0FNU>
  %2 = ember.mul %c, %c : tensor<4xf8E8M0FNU>
  // CHECK: ember.convert %{{.*}} : (tensor<4xf8E4M3FN>) -> tensor<4xf8E5M2>
  %3 = ember.convert %0 : (tensor<4xf8E4M3FN>) -> tensor<4xf8E5M2>
  return %3 : tensor<4xf8E5M2>
}
