// RUN: ember-opt %s -ember-math-approx | FileCheck %s

// CHECK-LABEL: func @approximated
func.func @approximated(%x: f32) -> (f32, f32, f32) {
  // CHECK-NOT: math.tanh
  // CHECK-NOT: math.exp
  // CHECK-NOT: math.log
  %0 = math.tanh %x : f32
  %1 = math.exp %x : f32
  %2 = math.log %x : f32
  return %0, %1, %2 : f32, f32, f32
}

// CHECK-LABEL: func @kept
func.func @kept(%x: f32, %y: f64) -> (f32, f64) {
  // CHECK: math.erf %{{.*}} : f32
  %0 = math.erf %x : f32
  // CHECK: math.exp %{{.*}} : f64
  %1 = math.exp %y : f64
  return %0, %1 : f32, f64
}

// A NaN argument is passed through (the approximations' clamps drop it
// where it is folded: exp(x - NaN) folded to 0).
// CHECK-LABEL: func @nan_kept
func.func @nan_kept(%x: f32) -> f32 {
  // CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[X:.*]], %[[X]] : f32
  // CHECK: arith.select %[[NAN]], %[[X]], %{{.*}} : f32
  %0 = math.exp %x : f32
  return %0 : f32
}

// CHECK-LABEL: func @folded_nan
func.func @folded_nan() -> f32 {
  // CHECK: %[[C:.*]] = arith.constant 0x7FC00000 : f32
  // CHECK: return %[[C]]
  %nan = arith.constant 0x7FC00000 : f32
  %0 = math.exp %nan : f32
  return %0 : f32
}
