// RUN: ember-opt %s -ember-unique-results | FileCheck %s

// CHECK-LABEL: func @twice
// CHECK: %[[E:.*]] = tensor.empty() : tensor<3xf32>
// CHECK: %[[C:.*]] = linalg.copy ins(%arg0 : tensor<3xf32>) outs(%[[E]] : tensor<3xf32>)
// CHECK: return %arg0, %[[C]]
func.func @twice(%a: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  return %a, %a : tensor<3xf32>, tensor<3xf32>
}

// CHECK-LABEL: func @distinct
// CHECK-NOT: linalg.copy
func.func @distinct(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  return %a, %b : tensor<3xf32>, tensor<3xf32>
}
