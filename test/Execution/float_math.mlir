// RUN: ember-opt %s --ember-cpu-pipeline | mlir-runner -e main --entry-point-result=void -shared-libs=%c_runner_utils,%runner_utils | FileCheck %s

// Float unary math on f32. Expected values from Python's math module (SciPy's
// i0e/i1e for the Bessel functions), printed with 6 significant digits by
// printMemrefF32; lgamma(1) may be off from 0 by about one f32 ulp of 1.

func.func private @printMemrefF32(tensor<*xf32>) attributes {llvm.emit_c_interface}

func.func @print(%t: tensor<4xf32>) {
  %u = tensor.cast %t : tensor<4xf32> to tensor<*xf32>
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  %x = ember.constant dense<[0.5, 1.0, 2.0, 4.0]> : tensor<4xf32>
  %s = ember.constant dense<[-2.0, -0.5, 0.0, 0.5]> : tensor<4xf32>
  %e = ember.constant dense<[-0.9, -0.5, 0.0, 0.5]> : tensor<4xf32>
  %g = ember.constant dense<[0.5, 1.0, 3.0, -1.5]> : tensor<4xf32>
  %k = ember.constant dense<[-10.0, -1.0, 0.0, 2.0]> : tensor<4xf32>

  // CHECK: [0.125,  1,  8,  64]
  %ip3 = ember.integer_pow %x, y = 3 : tensor<4xf32>
  func.call @print(%ip3) : (tensor<4xf32>) -> ()
  // CHECK: [4,  1,  0.25,  0.0625]
  %ipm2 = ember.integer_pow %x, y = -2 : tensor<4xf32>
  func.call @print(%ipm2) : (tensor<4xf32>) -> ()

  // exp(4) = 54.59815: the f32 polynomial may round the 6th digit either way.
  // CHECK: [1.64872,  2.71828,  7.38906,  54.598{{[12]}}]
  %0 = ember.exp %x : tensor<4xf32>
  func.call @print(%0) : (tensor<4xf32>) -> ()
  // CHECK: [-0.693147,  0,  0.693147,  1.38629]
  %1 = ember.log %x : tensor<4xf32>
  func.call @print(%1) : (tensor<4xf32>) -> ()
  // CHECK: [-0.964028,  -0.462117,  0,  0.462117]
  %2 = ember.tanh %s : tensor<4xf32>
  func.call @print(%2) : (tensor<4xf32>) -> ()
  // CHECK: [-0.909297,  -0.479426,  0,  0.479426]
  %3 = ember.sin %s : tensor<4xf32>
  func.call @print(%3) : (tensor<4xf32>) -> ()
  // CHECK: [-0.995322,  -0.5205,  0,  0.5205]
  %4 = ember.erf %s : tensor<4xf32>
  func.call @print(%4) : (tensor<4xf32>) -> ()
  // CHECK: [-1.16309,  -0.476936,  0,  0.476936]
  %5 = ember.erf_inv %e : tensor<4xf32>
  func.call @print(%5) : (tensor<4xf32>) -> ()
  // (XLA's Lanczos form: lgamma(3) rounds to 0.6931474 in f32, as XLA's.)
  // CHECK: [0.572365,  {{0|[0-9.]+e-0[67]}},  {{0.69314[78]}},  0.860047]
  %6 = ember.lgamma %g : tensor<4xf32>
  func.call @print(%6) : (tensor<4xf32>) -> ()
  // CHECK: [-1.96351,  {{-0.57721[56]}},  0.922784,  0.703157]
  %7 = ember.digamma %g : tensor<4xf32>
  func.call @print(%7) : (tensor<4xf32>) -> ()
  // CHECK: [0.119203,  0.377541,  0.5,  0.622459]
  %8 = ember.logistic %s : tensor<4xf32>
  func.call @print(%8) : (tensor<4xf32>) -> ()
  // CHECK: [1.41421,  1,  0.707107,  0.5]
  %9 = ember.rsqrt %x : tensor<4xf32>
  func.call @print(%9) : (tensor<4xf32>) -> ()
  // CHECK: [-1.25992,  -0.793701,  0,  0.793701]
  %10 = ember.cbrt %s : tensor<4xf32>
  func.call @print(%10) : (tensor<4xf32>) -> ()
  // Both series: |x| > 8 and |x| <= 8; i1e is odd.
  // CHECK: [0.127833,  0.46576,  1,  0.308508]
  %11 = ember.bessel_i0e %k : tensor<4xf32>
  func.call @print(%11) : (tensor<4xf32>) -> ()
  // CHECK: [-0.121263,  -0.20791,  0,  0.215269]
  %12 = ember.bessel_i1e %k : tensor<4xf32>
  func.call @print(%12) : (tensor<4xf32>) -> ()
  return
}
