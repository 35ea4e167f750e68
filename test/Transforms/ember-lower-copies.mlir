// RUN: ember-opt %s -ember-lower-copies -split-input-file | FileCheck %s

// CHECK-LABEL: func @strided
func.func @strided(%a: memref<8xf32>, %b: memref<4xf32>) {
  %s = memref.subview %a[0] [4] [2] : memref<8xf32> to memref<4xf32, strided<[2]>>
  // CHECK-NOT: memref.copy
  // CHECK: linalg.copy ins(%{{.*}} : memref<4xf32, strided<[2]>>) outs(%{{.*}} : memref<4xf32>)
  memref.copy %s, %b : memref<4xf32, strided<[2]>> to memref<4xf32>
  return
}

// -----

// CHECK-LABEL: func @unranked_kept
func.func @unranked_kept(%a: memref<*xf32>, %b: memref<*xf32>) {
  // CHECK: memref.copy
  memref.copy %a, %b : memref<*xf32> to memref<*xf32>
  return
}

// -----

// A callee's result passed back through a fresh buffer and copied into the
// out-parameter: the callee writes the out-parameter directly.
func.func private @callee(%x: memref<4xf32>, %out: memref<4xf32>)

// CHECK-LABEL: func @forwarded
// CHECK-SAME: (%[[X:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>)
// CHECK-NOT: memref.alloc
// CHECK: call @callee(%[[X]], %[[OUT]])
// CHECK-NOT: copy
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @forwarded(%x: memref<4xf32>, %out: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  call @callee(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

func.func private @callee(%x: memref<4xf32>, %out: memref<4xf32>)

// The buffer is read after the copy: it stays, and the copy too.
// CHECK-LABEL: func @read_after
// CHECK: memref.alloc
// CHECK: linalg.copy
func.func @read_after(%x: memref<4xf32>, %out: memref<4xf32>) -> f32 {
  %a = memref.alloc() : memref<4xf32>
  call @callee(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  return %v : f32
}

// -----

func.func private @callee(%x: memref<4xf32>, %out: memref<4xf32>)

// The destination is not an out-parameter of this function (another use):
// kept.
// CHECK-LABEL: func @used_twice
// CHECK: memref.alloc
// CHECK: linalg.copy
func.func @used_twice(%x: memref<4xf32>, %out: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  call @callee(%out, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  return
}

// -----

// A view of the buffer written after the copy: kept.
// CHECK-LABEL: func @view_written_after
// CHECK: memref.alloc
// CHECK: linalg.copy
func.func @view_written_after(%out: memref<4xf32>, %x: f32) {
  %a = memref.alloc() : memref<4xf32>
  %v = memref.subview %a[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  %c0 = arith.constant 0 : index
  memref.store %x, %v[%c0] : memref<2xf32, strided<[1]>>
  memref.dealloc %a : memref<4xf32>
  return
}

// A copy between two equal views of one buffer copies nothing.
// CHECK-LABEL: func @onto_itself
// CHECK-NOT: copy
// CHECK: return
func.func @onto_itself(%a: memref<8xf32>, %i: index) {
  %0 = memref.subview %a[%i] [2] [1] : memref<8xf32> to memref<2xf32, strided<[1], offset: ?>>
  %1 = memref.subview %a[%i] [2] [1] : memref<8xf32> to memref<2xf32, strided<[1], offset: ?>>
  memref.copy %0, %1 : memref<2xf32, strided<[1], offset: ?>> to memref<2xf32, strided<[1], offset: ?>>
  return
}

// Other offsets: a real copy.
// CHECK-LABEL: func @shifted
// CHECK: linalg.copy
func.func @shifted(%a: memref<8xf32>, %i: index, %j: index) {
  %0 = memref.subview %a[%i] [2] [1] : memref<8xf32> to memref<2xf32, strided<[1], offset: ?>>
  %1 = memref.subview %a[%j] [2] [1] : memref<8xf32> to memref<2xf32, strided<[1], offset: ?>>
  memref.copy %0, %1 : memref<2xf32, strided<[1], offset: ?>> to memref<2xf32, strided<[1], offset: ?>>
  return
}
