// RUN: ember-opt %s -ember-privatize-parallel-loops -split-input-file | FileCheck %s

#id = affine_map<(d0) -> (d0)>

// An empty tensor from outside a parallel loop gets a clone before each
// user inside it (in nested regions too); the empty outside stays for its
// other users.
// CHECK-LABEL: func @privatized
func.func @privatized(%x: tensor<128xf32>, %out: tensor<4x128xf32>, %p: i1) -> (tensor<4x128xf32>, tensor<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // CHECK: %[[E:.*]] = tensor.empty() : tensor<128xf32>
  %e = tensor.empty() : tensor<128xf32>
  // CHECK: scf.for
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out) -> (tensor<4x128xf32>) {
    // CHECK: %[[E1:.*]] = tensor.empty() : tensor<128xf32>
    // CHECK-NEXT: linalg.generic {{.*}} outs(%[[E1]] : tensor<128xf32>)
    %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : tensor<128xf32>) outs(%e : tensor<128xf32>) {
    ^bb0(%a: f32, %b: f32):
      %s = math.sin %a : f32
      linalg.yield %s : f32
    } -> tensor<128xf32>
    // CHECK: scf.if
    // CHECK: %[[E2:.*]] = tensor.empty() : tensor<128xf32>
    // CHECK-NEXT: linalg.generic {{.*}} outs(%[[E2]] : tensor<128xf32>)
    %z = scf.if %p -> (tensor<128xf32>) {
      %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
          ins(%y : tensor<128xf32>) outs(%e : tensor<128xf32>) {
      ^bb0(%a: f32, %b: f32):
        %s = math.cos %a : f32
        linalg.yield %s : f32
      } -> tensor<128xf32>
      scf.yield %w : tensor<128xf32>
    } else {
      scf.yield %y : tensor<128xf32>
    }
    %row = tensor.expand_shape %z [[0, 1]] output_shape [1, 128] : tensor<128xf32> into tensor<1x128xf32>
    %n = tensor.insert_slice %row into %o[%i, 0] [1, 128] [1, 1] : tensor<1x128xf32> into tensor<4x128xf32>
    scf.yield %n : tensor<4x128xf32>
  } {ember.parallel}
  // CHECK: linalg.generic {{.*}} outs(%[[E]] : tensor<128xf32>)
  %after = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<128xf32>) outs(%e : tensor<128xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  } -> tensor<128xf32>
  return %r, %after : tensor<4x128xf32>, tensor<128xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A loop without the mark keeps sharing the empty (its iterations run in
// order).
// CHECK-LABEL: func @sequential
// CHECK: tensor.empty
// CHECK-NOT: tensor.empty
func.func @sequential(%x: tensor<128xf32>, %n: index) -> tensor<128xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = tensor.empty() : tensor<128xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%v = %x) -> (tensor<128xf32>) {
    %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%v : tensor<128xf32>) outs(%e : tensor<128xf32>) {
    ^bb0(%a: f32, %b: f32):
      %s = math.sin %a : f32
      linalg.yield %s : f32
    } -> tensor<128xf32>
    scf.yield %y : tensor<128xf32>
  }
  return %r : tensor<128xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>

// Loop-invariant code motion also moves the slices of an empty that a
// concatenation's pieces are written into: a use of such a slice inside a
// parallel loop gets a clone of the empty and of the slice (two iterations
// wrote the same buffer's halves at once: a Pallas grid's sample_block
// drew wrong blocks under load).
// CHECK-LABEL: func @privatized_slice
func.func @privatized_slice(%x: tensor<16x128xf32>, %out: tensor<4x16x256xf32>) -> tensor<4x16x256xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %e = tensor.empty() : tensor<16x256xf32>
  %half = tensor.extract_slice %e[0, 0] [16, 128] [1, 1] : tensor<16x256xf32> to tensor<16x128xf32>
  // CHECK: scf.for
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out) -> (tensor<4x16x256xf32>) {
    // CHECK: %[[E1:.*]] = tensor.empty() : tensor<16x256xf32>
    // CHECK-NEXT: %[[H1:.*]] = tensor.extract_slice %[[E1]][0, 0] [16, 128] [1, 1]
    // CHECK-NEXT: linalg.generic {{.*}} outs(%[[H1]] : tensor<16x128xf32>)
    %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%x : tensor<16x128xf32>) outs(%half : tensor<16x128xf32>) {
    ^bb0(%a: f32, %b: f32):
      %s = math.sin %a : f32
      linalg.yield %s : f32
    } -> tensor<16x128xf32>
    %full = tensor.insert_slice %y into %e[0, 0] [16, 128] [1, 1] : tensor<16x128xf32> into tensor<16x256xf32>
    %row = tensor.expand_shape %full [[0, 1], [2]] output_shape [1, 16, 256] : tensor<16x256xf32> into tensor<1x16x256xf32>
    %n = tensor.insert_slice %row into %o[%i, 0, 0] [1, 16, 256] [1, 1, 1] : tensor<1x16x256xf32> into tensor<4x16x256xf32>
    scf.yield %n : tensor<4x16x256xf32>
  } {ember.parallel}
  return %r : tensor<4x16x256xf32>
}
