// RUN: ember-opt %s -ember-mpi-to-llvm -split-input-file | FileCheck %s

// mpi ops become calls of MPICH's C API (MPI_COMM_WORLD is MPICH's handle
// 0x44000000, MPI_SUM 0x58000003, and the same send and receive buffer
// MPI_IN_PLACE); the memref operand's descriptor is taken apart from an
// unrealized cast, which finalize-memref-to-llvm resolves in the CPU
// pipeline.
// CHECK-DAG: llvm.func @MPI_Allreduce(!llvm.ptr, !llvm.ptr, i32, i32, i32, i32) -> i32
// CHECK-LABEL: func @allreduce
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : memref<4xf32> to !llvm.struct
// CHECK: %[[W:.*]] = llvm.mlir.constant(1140850688 : i64) : i64
// CHECK: %[[INPLACE:.*]] = llvm.inttoptr
// CHECK: %[[SUM:.*]] = llvm.mlir.constant(1476395011 : i32) : i32
// CHECK: %[[W32:.*]] = llvm.trunc %[[W]] : i64 to i32
// CHECK: llvm.call @MPI_Allreduce(%[[INPLACE]], %{{.*}}, %{{.*}}, %{{.*}}, %[[SUM]], %[[W32]])
module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "MPICH">} {
  func.func @allreduce(%b: memref<4xf32>) {
    %w = mpi.comm_world : !mpi.comm
    mpi.allreduce(%b, %b, MPI_SUM, %w) : memref<4xf32>, memref<4xf32>
    return
  }
}

// -----

// A program for the in-process devices (`ember.device_threads`) calls the
// runtime's threads instead of MPI: the same MPICH handles, the functions
// renamed ember_devices_MPI_*.
// CHECK-DAG: llvm.func @ember_devices_MPI_Allreduce(!llvm.ptr, !llvm.ptr, i32, i32, i32, i32) -> i32
// CHECK-DAG: llvm.func @ember_devices_MPI_Comm_rank(i32, !llvm.ptr) -> i32
// CHECK-NOT: llvm.func @MPI_
// CHECK-LABEL: func @on_threads
// CHECK: llvm.call @ember_devices_MPI_Comm_rank
// CHECK: llvm.call @ember_devices_MPI_Allreduce
module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "MPICH">, ember.device_threads} {
  func.func @on_threads(%b: memref<4xf32>) -> i32 {
    %w = mpi.comm_world : !mpi.comm
    %r = mpi.comm_rank(%w) : i32
    mpi.allreduce(%b, %b, MPI_SUM, %w) : memref<4xf32>, memref<4xf32>
    return %r : i32
  }
}
