// RUN: ember-opt %s -ember-mpi-to-llvm -split-input-file -verify-diagnostics

// The in-process devices' threads implement the MPI functions partitioned
// programs call (Runtime.def, EMBER_DEVICE_MPI_ENTRY: rank, size, split,
// all-reduce); a program calling another one is refused instead of
// failing to link.
module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "MPICH">, ember.device_threads} {
  func.func @send(%b: memref<4xf32>, %dest: i32, %tag: i32) {
    %w = mpi.comm_world : !mpi.comm
    // expected-error@+1 {{'MPI_Send' has no counterpart among the in-process devices' threads}}
    mpi.send(%b, %tag, %dest, %w) : memref<4xf32>, i32, i32
    return
  }
}

// -----

module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "MPICH">, ember.device_threads} {
  // expected-error@+1 {{'MPI_Wtime' has no counterpart among the in-process devices' threads}}
  llvm.func @MPI_Wtime() -> f64
  func.func @timed(%b: memref<4xf32>) -> f64 {
    %w = mpi.comm_world : !mpi.comm
    mpi.allreduce(%b, %b, MPI_SUM, %w) : memref<4xf32>, memref<4xf32>
    %t = llvm.call @MPI_Wtime() : () -> f64
    return %t : f64
  }
}
