// RUN: ember-opt %s -ember-outline-repeated-kernels -split-input-file | FileCheck %s
// RUN: ember-opt %s -ember-outline-repeated-kernels=outline-all-above=3 -split-input-file | FileCheck %s --check-prefix=ALL

#id = affine_map<(d0, d1) -> (d0, d1)>

// Two equal loop nests on different buffers share one function; the one that
// differs (a subtraction) stays where it is.
// CHECK-LABEL: func @repeated
// CHECK-SAME: (%[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<4x8xf32>, %[[C:.*]]: memref<4x8xf32>, %[[D:.*]]: memref<4x8xf32>)
func.func @repeated(%a: memref<4x8xf32>, %b: memref<4x8xf32>,
                    %c: memref<4x8xf32>, %d: memref<4x8xf32>) {
  // CHECK: call @[[K:__ember_kernel]](%[[A]], %[[B]])
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %t = math.tanh %x : f32
    linalg.yield %t : f32
  }
  // CHECK: call @[[K]](%[[C]], %[[D]])
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x8xf32>) outs(%d : memref<4x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %t = math.tanh %x : f32
    linalg.yield %t : f32
  }
  // CHECK: linalg.generic
  // CHECK: arith.subf
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x8xf32>) outs(%d : memref<4x8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %t = arith.subf %x, %y : f32
    linalg.yield %t : f32
  }
  return
}
// CHECK: func.func private @[[K]](%{{.*}}: memref<4x8xf32>, %{{.*}}: memref<4x8xf32>) attributes {passthrough = ["noinline"]}
// CHECK-NEXT: linalg.generic
// CHECK: math.tanh
// CHECK-NOT: func.func private

// -----

// Constants the body uses are cloned into the function; other values from
// above become arguments. Different shapes are different functions.
// CHECK-LABEL: func @captures
func.func @captures(%a: memref<16xf32>, %b: memref<16xf32>, %s: f32,
                    %c: memref<8xf32>, %d: memref<8xf32>) {
  %two = arith.constant 2.0 : f32
  // CHECK: call @[[K16:__ember_kernel[_0-9]*]](%{{.*}}, %{{.*}}, %{{.*}}) : (memref<16xf32>, memref<16xf32>, f32) -> ()
  // CHECK: call @[[K16]](
  // CHECK: call @[[K8:__ember_kernel[_0-9]*]](%{{.*}}, %{{.*}}, %{{.*}}) : (memref<8xf32>, memref<8xf32>, f32) -> ()
  // CHECK: call @[[K8]](
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %two : f32
    %n = arith.addf %m, %s : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%b : memref<16xf32>) outs(%a : memref<16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %two : f32
    %n = arith.addf %m, %s : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%c : memref<8xf32>) outs(%d : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %two : f32
    %n = arith.addf %m, %s : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%d : memref<8xf32>) outs(%c : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %two : f32
    %n = arith.addf %m, %s : f32
    linalg.yield %n : f32
  }
  return
}
// CHECK: func.func private @[[K16]](%{{.*}}: memref<16xf32>, %{{.*}}: memref<16xf32>, %[[S:.*]]: f32)
// CHECK: %[[TWO:.*]] = arith.constant 2.0
// CHECK: arith.mulf %{{.*}}, %[[TWO]]
// CHECK: arith.addf %{{.*}}, %[[S]]
// CHECK: func.func private @[[K8]](%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: f32)

// -----

// Inside a loop, equal ops stay inline (a call per iteration is not worth
// it); so do ops on tensors.
// CHECK-LABEL: func @in_loop
func.func @in_loop(%a: memref<4xf32>, %b: memref<4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK-NOT: call
  scf.for %i = %c0 to %n step %c1 {
    linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
    linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
  }
  return
}
// CHECK-NOT: func.func private

// -----

// CHECK-LABEL: func @tensors
func.func @tensors(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // CHECK-NOT: call
  %0 = linalg.copy ins(%a : tensor<4xf32>) outs(%b : tensor<4xf32>) -> tensor<4xf32>
  %1 = linalg.copy ins(%a : tensor<4xf32>) outs(%b : tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// With outline-all-above=3, a function with three or more loop nests becomes
// glue: the nest that occurs once gets a function too. A function with fewer
// keeps its single nests.
// ALL-LABEL: func @glue
// ALL: call @[[K:__ember_kernel[_0-9]*]](
// ALL: call @[[K]](
// ALL: call @[[ONCE:__ember_kernel[_0-9]*]](
// ALL-NOT: linalg.generic
// ALL-LABEL: func @small
// ALL: linalg.generic
// ALL: func.func private @[[K]]
// ALL: math.exp
// ALL: func.func private @[[ONCE]]({{.*}}) attributes {passthrough = ["noinline"]}
// ALL: arith.subf
// CHECK-LABEL: func @glue
// CHECK: call @__ember_kernel
// CHECK: call @__ember_kernel
// CHECK: linalg.generic
// CHECK: arith.subf
func.func @glue(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%b : memref<4xf32>) outs(%c : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%c : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %d = arith.subf %x, %y : f32
    linalg.yield %d : f32
  }
  return
}
func.func @small(%a: memref<4xf32>, %b: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %d = arith.mulf %x, %y : f32
    linalg.yield %d : f32
  }
  return
}
