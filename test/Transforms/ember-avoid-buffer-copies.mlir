// RUN: ember-opt %s -ember-avoid-buffer-copies -split-input-file | FileCheck %s
// RUN: ember-opt %s -ember-avoid-buffer-copies -split-input-file -one-shot-bufferize | FileCheck %s --check-prefix=BUF

// A fill two reductions write into (CSE merged their fills): one of them
// gets its own tensor.empty and fill, just before it, so bufferization
// copies nothing.

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d1)>
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @shared_fill
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[F0:.*]] = linalg.generic {{.*}} outs(%[[E0]] : tensor<4xf32>)
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[F1:.*]] = linalg.generic {{.*}} outs(%[[E1]] : tensor<4xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<8x4xf32>) outs(%[[F1]] : tensor<4xf32>)
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<8x4xf32>) outs(%[[F0]] : tensor<4xf32>)
// BUF-LABEL: func @shared_fill
// BUF-NOT: memref.copy
// BUF: return
func.func @shared_fill(%a: tensor<8x4xf32>, %b: tensor<8x4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
      outs(%e : tensor<4xf32>) {
  ^bb0(%y: f32):
    linalg.yield %cst : f32
  } -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "parallel"]}
      ins(%a : tensor<8x4xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %t = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "parallel"]}
      ins(%b : tensor<8x4xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %s, %t : tensor<4xf32>, tensor<4xf32>
}

// -----

// A fill read as an input is not a destination: nothing is cloned.

#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @fill_read
// CHECK-COUNT-1: tensor.empty
// CHECK-NOT: tensor.empty
func.func @fill_read(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %cst = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
      outs(%e : tensor<4xf32>) {
  ^bb0(%y: f32):
    linalg.yield %cst : f32
  } -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%f : tensor<4xf32>) outs(%a : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %f, %s : tensor<4xf32>, tensor<4xf32>
}

// -----

// In a loop body: the cotangent slot is zeroed (insert_slice) before the
// old value is read (extract_slice). The write sinks to the end of the
// body and the read moves above it, so the slot is read in place and the
// carried tensor is not copied each iteration.

// CHECK-LABEL: func @read_after_write
// CHECK: scf.for
// CHECK: %[[R:.*]] = tensor.extract_slice %[[T:.*]][%{{.*}}] [1] [1]
// CHECK: %[[D:.*]] = arith.addf
// CHECK: %[[W:.*]] = tensor.insert_slice %{{.*}} into %[[T]]
// CHECK-NEXT: scf.yield %[[W]], %[[D]]
// BUF-LABEL: func @read_after_write
// BUF: scf.for
// BUF-NOT: memref.alloc
// BUF: memref.copy %{{.*}}, %{{.*}} : memref<1xf32, {{.*}}> to memref<1xf32, {{.*}}>
// BUF-NEXT: scf.yield
func.func @read_after_write(%t0: tensor<100xf32>, %z: tensor<1xf32>) -> (tensor<100xf32>, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %cst = arith.constant 0.0 : f32
  %r:2 = scf.for %i = %c0 to %c100 step %c1 iter_args(%t = %t0, %acc = %cst) -> (tensor<100xf32>, f32) {
    %w = tensor.insert_slice %z into %t[%i] [1] [1] : tensor<1xf32> into tensor<100xf32>
    %s = tensor.extract_slice %t[%i] [1] [1] : tensor<100xf32> to tensor<1xf32>
    %v = tensor.extract %s[%c0] : tensor<1xf32>
    %d = arith.addf %acc, %v : f32
    scf.yield %w, %d : tensor<100xf32>, f32
  }
  return %r#0, %r#1 : tensor<100xf32>, f32
}

// -----

// A write into a ref's buffer (LowerRefs.cpp) stays after the computations:
// the final insert_slice sinks only to just before it.

// CHECK-LABEL: func @sink_stops_at_ref_write
// CHECK: %[[W:.*]] = tensor.insert_slice
// CHECK-NEXT: bufferization.materialize_in_destination
// CHECK-NEXT: return %[[W]]
func.func @sink_stops_at_ref_write(%r: memref<4xf32>, %x: tensor<1xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %t = bufferization.to_tensor %r restrict writable : memref<4xf32> to tensor<4xf32>
  %w = tensor.insert_slice %x into %t[1] [1] [1] : tensor<1xf32> into tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %n = linalg.negf ins(%y : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  bufferization.materialize_in_destination %n in writable %r : (tensor<4xf32>, memref<4xf32>) -> ()
  return %w : tensor<4xf32>
}
