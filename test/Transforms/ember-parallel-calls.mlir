// RUN: ember-opt %s -ember-parallel-calls -split-input-file -verify-diagnostics | FileCheck %s

// A call of an `ember.rows` function stores its other arguments in a frame
// and runs a task over [lo, hi) through the runtime.
module {
  llvm.func @rows(%lo: i64, %hi: i64, %p: !llvm.ptr, %k: f32) attributes {ember.rows} {
    llvm.return
  }
  // CHECK: llvm.func internal @rows_task(%[[F:.*]]: !llvm.ptr, %[[A:.*]]: i64, %[[B:.*]]: i64)
  // CHECK: %[[Q:.*]] = llvm.load
  // CHECK: %[[J:.*]] = llvm.load
  // CHECK: llvm.call @rows(%[[A]], %[[B]], %[[Q]], %[[J]])
  // CHECK-LABEL: llvm.func @caller
  // CHECK-SAME: (%[[P:.*]]: !llvm.ptr, %[[K:.*]]: f32)
  llvm.func @caller(%p: !llvm.ptr, %k: f32) {
    // CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i64)
    // CHECK: %[[SLOT:.*]] = llvm.alloca %[[ONE]] x !llvm.struct<(ptr, f32)>
    %lo = llvm.mlir.constant(0 : i64) : i64
    %hi = llvm.mlir.constant(100 : i64) : i64
    // CHECK: %[[A0:.*]] = llvm.getelementptr %[[SLOT]][0, 0]
    // CHECK: llvm.store %[[P]], %[[A0]]
    // CHECK: %[[A1:.*]] = llvm.getelementptr %[[SLOT]][0, 1]
    // CHECK: llvm.store %[[K]], %[[A1]]
    // CHECK: %[[T:.*]] = llvm.mlir.addressof @rows_task
    // CHECK: %[[TI:.*]] = llvm.ptrtoint %[[T]]
    // CHECK: %[[SI:.*]] = llvm.ptrtoint %[[SLOT]]
    // CHECK: llvm.call @ember_parallel_for(%[[TI]], %[[SI]], %{{.*}}, %{{.*}})
    // CHECK-NOT: llvm.call @rows(
    llvm.call @rows(%lo, %hi, %p, %k) : (i64, i64, !llvm.ptr, f32) -> ()
    llvm.return
  }
  // CHECK: llvm.func @ember_parallel_for(i64, i64, i64, i64)
}

// -----

module {
  // expected-error @below {{ember.rows function must take (i64 lo, i64 hi, ...) and return nothing}}
  llvm.func @bad(%lo: i32) attributes {ember.rows} {
    llvm.return
  }
}
