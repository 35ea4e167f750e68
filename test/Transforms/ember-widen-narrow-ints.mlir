// RUN: ember-opt %s -ember-widen-narrow-ints -split-input-file -verify-diagnostics | FileCheck %s

// Ops on 2- and 4-bit integers compute in 8 bits between conversions, so
// each wraps as the narrow type would; constants hold extended values.
// CHECK-LABEL: func @add
func.func @add(%a: tensor<4xi4>, %b: tensor<4xi4>) -> tensor<4xi4> {
  // CHECK: %[[A:.*]] = ember.convert %arg0 : (tensor<4xi4>) -> tensor<4xi8>
  // CHECK: %[[B:.*]] = ember.convert %arg1 : (tensor<4xi4>) -> tensor<4xi8>
  // CHECK: %[[S:.*]] = ember.add %[[A]], %[[B]] : tensor<4xi8>
  // CHECK: %[[R:.*]] = ember.convert %[[S]] : (tensor<4xi8>) -> tensor<4xi4>
  // CHECK: return %[[R]]
  %0 = ember.add %a, %b : tensor<4xi4>
  return %0 : tensor<4xi4>
}

// CHECK-LABEL: func @constants_and_compares
func.func @constants_and_compares(%a: tensor<2xui4>) -> (tensor<2xi1>, tensor<2xi2>) {
  // CHECK-DAG: ember.constant dense<[15, 1]> : tensor<2xui8>
  // CHECK-DAG: ember.constant dense<[-2, 1]> : tensor<2xi8>
  %c = ember.constant dense<[15, 1]> : tensor<2xui4>
  %d = ember.constant dense<[-2, 1]> : tensor<2xi2>
  // CHECK: ember.compare LT, %{{.*}}, %{{.*}} : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xi1>
  %0 = ember.compare LT, %a, %c : (tensor<2xui4>, tensor<2xui4>) -> tensor<2xi1>
  return %0, %d : tensor<2xi1>, tensor<2xi2>
}

// Conversions and other types are left alone.
// CHECK-LABEL: func @kept
func.func @kept(%a: tensor<3xi4>, %x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  // CHECK: ember.convert %arg0 : (tensor<3xi4>) -> tensor<3xf32>
  // CHECK: ember.exp %arg1 : tensor<3xf32>
  %0 = ember.convert %a : (tensor<3xi4>) -> tensor<3xf32>
  %1 = ember.exp %x : tensor<3xf32>
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
}

// -----

func.func @bitcast_width(%a: tensor<2xi4>) -> tensor<i8> {
  // expected-error @+1 {{ember-widen-narrow-ints: a bit cast between 2- or 4-bit integers and another width is not supported}}
  %0 = ember.bitcast_convert %a : (tensor<2xi4>) -> tensor<i8>
  return %0 : tensor<i8>
}
