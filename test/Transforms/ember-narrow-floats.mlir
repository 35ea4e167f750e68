// RUN: ember-opt %s -ember-narrow-floats -split-input-file -verify-diagnostics | FileCheck %s

// Arithmetic computes in f32 and rounds back; an extension reads the
// type's table of values; a truncation rounds with integer and f32 ops and
// bit-casts; a constant becomes its bits.
// CHECK-DAG: memref.global "private" constant @__ember_f8E4M3FN_values : memref<256xf32> = dense<"0x000000000000003B0000803B
// CHECK-DAG: memref.global "private" constant @__ember_f8E5M2_values : memref<256xf32>
// CHECK-LABEL: func @add
func.func @add(%a: f8E4M3FN, %b: f8E4M3FN) -> f8E4M3FN {
  // CHECK-NOT: arith.addf %{{.*}} : f8E4M3FN
  // CHECK: %[[A:.*]] = arith.bitcast %{{.*}} : f8E4M3FN to i8
  // CHECK: arith.index_castui %[[A]] : i8 to index
  // CHECK: memref.get_global @__ember_f8E4M3FN_values
  // CHECK: memref.load
  // CHECK: arith.addf %{{.*}}, %{{.*}} : f32
  // CHECK: math.roundeven %{{.*}} : f32
  // CHECK: %[[BITS:.*]] = arith.trunci %{{.*}} : i32 to i8
  // CHECK: arith.bitcast %[[BITS]] : i8 to f8E4M3FN
  %0 = arith.addf %a, %b : f8E4M3FN
  return %0 : f8E4M3FN
}

// CHECK-LABEL: func @constant
func.func @constant() -> f4E2M1FN {
  // CHECK: %[[C:.*]] = arith.constant -3 : i4
  // CHECK: arith.bitcast %[[C]] : i4 to f4E2M1FN
  %0 = arith.constant -3.0 : f4E2M1FN
  return %0 : f4E2M1FN
}

// Other widths convert through f32.
// CHECK-LABEL: func @wide
func.func @wide(%x: f64, %y: f8E5M2) -> (f8E5M2, f64, bf16) {
  // CHECK: arith.truncf %{{.*}} : f64 to f32
  // CHECK: math.roundeven
  %0 = arith.truncf %x : f64 to f8E5M2
  // CHECK: memref.load %{{.*}} : memref<256xf32>
  // CHECK: arith.extf %{{.*}} : f32 to f64
  %1 = arith.extf %y : f8E5M2 to f64
  // CHECK: arith.truncf %{{.*}} : f32 to bf16
  %2 = arith.extf %y : f8E5M2 to bf16
  return %0, %1, %2 : f8E5M2, f64, bf16
}

// CHECK-LABEL: func @untouched
func.func @untouched(%x: f16, %y: f8E4M3FN, %c: i1) -> (f16, f8E4M3FN, tensor<2xf8E4M3FN>) {
  // CHECK: arith.addf %{{.*}}, %{{.*}} : f16
  // CHECK: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f8E4M3FN
  // CHECK: arith.constant dense<[1.500000e+00, 2.000000e+00]> : tensor<2xf8E4M3FN>
  %0 = arith.addf %x, %x : f16
  %1 = arith.select %c, %y, %y : f8E4M3FN
  %2 = arith.constant dense<[1.5, 2.0]> : tensor<2xf8E4M3FN>
  return %0, %1, %2 : f16, f8E4M3FN, tensor<2xf8E4M3FN>
}

// -----

func.func @vector(%v: vector<4xf32>) -> vector<4xf8E4M3FN> {
  // expected-error @+1 {{ember-narrow-floats: vectors of 8- or 4-bit floats are not supported}}
  %0 = arith.truncf %v : vector<4xf32> to vector<4xf8E4M3FN>
  return %0 : vector<4xf8E4M3FN>
}
