// RUN: ember-opt %s -ember-split-rows="min-elements=64 min-elements-in-loops=128" -split-input-file | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// The op becomes a call over every row of a function of [lo, hi) on
// subviews; a broadcast operand (no first loop in its map) is passed whole,
// and `linalg.index 0` is shifted by lo.
// CHECK-LABEL: func @split
// CHECK-SAME: (%[[A:.*]]: memref<16x8xf32>, %[[B:.*]]: memref<8xf32>, %[[C:.*]]: memref<16x8xf32>)
func.func @split(%a: memref<16x8xf32>, %b: memref<8xf32>, %c: memref<16x8xf32>) {
  // CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
  // CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
  // CHECK: call @[[F:__ember_rows]](%[[C0]], %[[C16]], %[[A]], %[[B]], %[[C]])
  // CHECK-NOT: linalg.generic
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<16x8xf32>, memref<8xf32>) outs(%c : memref<16x8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %s = arith.addf %x, %y : f32
    %t = arith.addf %s, %fi : f32
    linalg.yield %t : f32
  }
  return
}
// CHECK: func.func private @[[F]](%[[LO:.*]]: index, %[[HI:.*]]: index, %[[X:.*]]: memref<16x8xf32>, %[[Y:.*]]: memref<8xf32>, %[[Z:.*]]: memref<16x8xf32>) attributes {ember.rows}
// CHECK: %[[N:.*]] = arith.subi %[[HI]], %[[LO]]
// CHECK: %[[XS:.*]] = memref.subview %[[X]][%[[LO]], 0] [%[[N]], 8] [1, 1]
// CHECK: %[[ZS:.*]] = memref.subview %[[Z]][%[[LO]], 0] [%[[N]], 8] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[XS]], %[[Y]] : {{.*}}) outs(%[[ZS]] : {{.*}})
// CHECK: %[[I:.*]] = linalg.index 0
// CHECK: %[[IS:.*]] = arith.addi %[[I]], %[[LO]]
// CHECK: arith.index_cast %[[IS]]

// -----

// Too small, a reduction first loop, and an output that does not depend on
// the first loop stay.
// CHECK-LABEL: func @kept
func.func @kept(%a: memref<4x8xf32>, %big: memref<16x8xf32>, %r: memref<8xf32>, %n: index) {
  // CHECK-NOT: call
  linalg.copy ins(%a : memref<4x8xf32>) outs(%a : memref<4x8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%big : memref<16x8xf32>) outs(%r : memref<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%big : memref<16x8xf32>) outs(%r : memref<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

// An op in a loop (a scan's body) is split when it reaches
// min-elements-in-loops (128 here): the rows run on every iteration. One of
// 64 points, enough outside loops, stays.
// CHECK-LABEL: func @in_loop
func.func @in_loop(%big: memref<16x8xf32>, %small: memref<8x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK: scf.for
  // CHECK: call @__ember_rows{{.*}}(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (index, index, memref<16x8xf32>, memref<16x8xf32>) -> ()
  // CHECK-NEXT: linalg.copy ins(%{{.*}} : memref<8x8xf32>)
  // CHECK-NEXT: }
  scf.for %i = %c0 to %n step %c1 {
    linalg.copy ins(%big : memref<16x8xf32>) outs(%big : memref<16x8xf32>)
    linalg.copy ins(%small : memref<8x8xf32>) outs(%small : memref<8x8xf32>)
  }
  return
}

// -----

// Dynamic loop ranges (a program compiled for every size): the call goes
// under an scf.if on the iteration space (rows x 8 >= 64, at least two
// rows), the op stays in the else branch; subviews take the dynamic sizes.
// CHECK-LABEL: func @split_dynamic
// CHECK-SAME: (%[[A:.*]]: memref<?x8xf32>, %[[C:.*]]: memref<?x8xf32>)
func.func @split_dynamic(%a: memref<?x8xf32>, %c: memref<?x8xf32>) {
  // CHECK-DAG: %[[N:.*]] = memref.dim %[[A]], %{{.*}} : memref<?x8xf32>
  // CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
  // CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
  // CHECK-DAG: %[[W:.*]] = arith.muli %{{.*}}, %[[C8]]
  // CHECK-DAG: %[[BIG:.*]] = arith.cmpi sge, %[[W]], %[[C64]]
  // CHECK-DAG: %[[ROWS:.*]] = arith.cmpi sge, %[[N]], %{{.*}}
  // CHECK: %[[OK:.*]] = arith.andi %[[BIG]], %[[ROWS]]
  // CHECK: scf.if %[[OK]] {
  // CHECK-NEXT: call @[[F:__ember_rows.*]](%{{.*}}, %[[N]], %[[A]], %[[C]])
  // CHECK-NEXT: } else {
  // CHECK-NEXT: linalg.generic
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<?x8xf32>) outs(%c : memref<?x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  }
  return
}
// CHECK: func.func private @[[F]](%[[LO:.*]]: index, %[[HI:.*]]: index, %[[X:.*]]: memref<?x8xf32>, %[[Z:.*]]: memref<?x8xf32>) attributes {ember.rows}
// CHECK: %[[M:.*]] = arith.subi %[[HI]], %[[LO]]
// CHECK: memref.subview %[[X]][%[[LO]], 0] [%[[M]], 8] [1, 1]

// -----

// A parallel loop (a Pallas grid's independent points) becomes a call of a
// function of its iterations [lo, hi): its counter (carried i + 1) is
// computed from the iteration number, inside and after the loop, and the
// linalg op in its body is not split itself (the loop is on the threads).
// CHECK-LABEL: func @parallel_loop
// CHECK-SAME: (%[[OUT:.*]]: memref<16x64xf32>, %[[IN:.*]]: memref<16x64xf32>)
func.func @parallel_loop(%out: memref<16x64xf32>, %in: memref<16x64xf32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  // CHECK: %[[N:.*]] = arith.maxsi
  // CHECK: call @[[F:__ember_iterations]](%{{.*}}, %[[N]], %{{.*}}, %{{.*}}, %{{.*}}, %[[IN]], %[[OUT]])
  // CHECK-NOT: scf.for
  // CHECK: %[[K:.*]] = arith.index_cast %[[N]] : index to i32
  // CHECK: %[[M:.*]] = arith.muli %[[K]], %{{.*}} : i32
  // CHECK: %[[LAST:.*]] = arith.addi %{{.*}}, %[[M]] : i32
  // CHECK: return %[[LAST]]
  %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%k = %z) -> (i32) {
    %k2 = arith.muli %k, %two : i32
    %row = arith.index_cast %k2 : i32 to index
    %s = memref.subview %in[%row, 0] [2, 64] [1, 1] : memref<16x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    %d = memref.subview %out[%row, 0] [2, 64] [1, 1] : memref<16x64xf32> to memref<2x64xf32, strided<[64, 1], offset: ?>>
    linalg.copy ins(%s : memref<2x64xf32, strided<[64, 1], offset: ?>>) outs(%d : memref<2x64xf32, strided<[64, 1], offset: ?>>)
    %next = arith.addi %k, %one : i32
    scf.yield %next : i32
  } {ember.parallel}
  return %r : i32
}
// (The loop's constant bounds are cloned into the function.)
// CHECK: func.func private @[[F]](%[[LO:.*]]: index, %[[HI:.*]]: index, %{{.*}}: index, %[[UB:.*]]: index, %{{.*}}: index, %{{.*}}: memref<16x64xf32>, %{{.*}}: memref<16x64xf32>) attributes {ember.rows}
// CHECK-DAG: %[[LB:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[ST:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[A:.*]] = arith.muli %[[LO]], %[[ST]]
// CHECK-DAG: %[[FROM:.*]] = arith.addi %[[LB]], %[[A]]
// CHECK-DAG: %[[B:.*]] = arith.muli %[[HI]], %[[ST]]
// CHECK-DAG: %[[UPTO:.*]] = arith.addi %[[LB]], %[[B]]
// CHECK: %[[TO:.*]] = arith.minsi %{{.*}}, %[[UPTO]]
// CHECK: scf.for %[[IV:.*]] = %[[FROM]] to %[[TO]] step %[[ST]] {
// CHECK: %[[D:.*]] = arith.subi %[[IV]], %[[LB]]
// CHECK: arith.divsi %[[D]], %[[ST]]
// CHECK-NOT: __ember_rows
// CHECK: linalg.copy
// CHECK-NOT: ember.parallel

// -----

// Parallel loops that stay sequential (the mark removed): one carrying a
// value that is no counter, one calling a host callback, one of a single
// iteration.
// CHECK-LABEL: func @parallel_kept
// CHECK-NOT: call @__ember_iterations
// CHECK-NOT: ember.parallel
func.func private @ember_host_callback(memref<?xi64>, memref<?xindex>, memref<?xindex>)
func.func @parallel_kept(%buf: memref<8xf32>, %ids: memref<?xi64>, %a: memref<?xindex>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%s = %f) -> (f32) {
    %x = memref.load %buf[%i] : memref<8xf32>
    %t = arith.addf %s, %x : f32
    scf.yield %t : f32
  } {ember.parallel}
  scf.for %i = %c0 to %c8 step %c1 {
    func.call @ember_host_callback(%ids, %a, %a) : (memref<?xi64>, memref<?xindex>, memref<?xindex>) -> ()
  } {ember.parallel}
  scf.for %i = %c0 to %c1 step %c1 {
    memref.store %f, %buf[%i] : memref<8xf32>
  } {ember.parallel}
  return %r : f32
}

// -----

// A product in the body (the runtime's GEMM works on the buffers given):
// the loop goes to the threads.
// CHECK-LABEL: func @parallel_gemm
// CHECK: call @__ember_iterations
func.func private @ember_gemm_f32(i64, i64, i64, i64, i64, i64, index, index, index)
func.func @parallel_gemm(%p: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %i1 = arith.constant 1 : i64
  scf.for %i = %c0 to %c4 step %c1 {
    func.call @ember_gemm_f32(%i1, %i1, %i1, %i1, %i1, %i1, %p, %p, %i) : (i64, i64, i64, i64, i64, i64, index, index, index) -> ()
  } {ember.parallel}
  return
}
