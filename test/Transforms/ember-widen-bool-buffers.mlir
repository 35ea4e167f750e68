// RUN: ember-opt %s -ember-widen-bool-buffers | FileCheck %s

// Ownership flags of the deallocation pipeline: i1 buffers become i8 ones,
// through allocations, casts, calls and function signatures.
// CHECK-LABEL: func @flags
// CHECK: %[[M:.*]] = memref.alloc() : memref<2xi8>
// CHECK: %[[E:.*]] = arith.extui %{{.*}} : i1 to i8
// CHECK: memref.store %[[E]], %[[M]][%{{.*}}] : memref<2xi8>
// CHECK: %[[C:.*]] = memref.cast %[[M]] : memref<2xi8> to memref<?xi8>
// CHECK: call @helper(%[[C]]) : (memref<?xi8>) -> ()
// CHECK: %[[L:.*]] = memref.load %[[M]][%{{.*}}] : memref<2xi8>
// CHECK: %[[T:.*]] = arith.trunci %[[L]] : i8 to i1
// CHECK: return %[[T]] : i1
// CHECK: func.func private @helper(%{{.*}}: memref<?xi8>)
// CHECK-NOT: xi1>
func.func @flags(%b: i1, %i: index) -> i1 {
  %m = memref.alloc() : memref<2xi1>
  memref.store %b, %m[%i] : memref<2xi1>
  %c = memref.cast %m : memref<2xi1> to memref<?xi1>
  call @helper(%c) : (memref<?xi1>) -> ()
  %l = memref.load %m[%i] : memref<2xi1>
  memref.dealloc %m : memref<2xi1>
  return %l : i1
}
func.func private @helper(%m: memref<?xi1>) {
  %c0 = arith.constant 0 : index
  %true = arith.constant true
  memref.store %true, %m[%c0] : memref<?xi1>
  return
}
