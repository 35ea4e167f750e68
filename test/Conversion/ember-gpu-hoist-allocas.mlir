// RUN: ember-opt %s --ember-gpu-hoist-allocas | FileCheck %s

// Fixed-size allocas in a kernel's loops and conditionals, or later in its
// entry block, move to the start of the entry block, in their order (LLVM
// keeps only those in registers); a dynamically sized one stays.

gpu.module @k {
  // CHECK-LABEL: gpu.func @f
  // CHECK-NEXT: memref.alloca() : memref<4xf32>
  // CHECK-NEXT: memref.alloca() : memref<2xf32>
  // CHECK-NEXT: memref.alloca() : memref<3xf32>
  // CHECK: scf.for
  // CHECK-NOT: memref.alloca() : memref<4xf32>
  // CHECK: scf.if
  // CHECK-NOT: memref.alloca() : memref<2xf32>
  // CHECK: memref.alloca(%{{.*}}) : memref<?xf32>
  gpu.func @f(%n: index, %c: i1, %x: f32) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      %t = memref.alloca() : memref<4xf32>
      memref.store %x, %t[%c0] : memref<4xf32>
      scf.if %c {
        %u = memref.alloca() : memref<2xf32>
        memref.store %x, %u[%c0] : memref<2xf32>
      }
    }
    %e = memref.alloca() : memref<3xf32>
    memref.store %x, %e[%c0] : memref<3xf32>
    %d = memref.alloca(%n) : memref<?xf32>
    memref.store %x, %d[%c0] : memref<?xf32>
    gpu.return
  }
}
