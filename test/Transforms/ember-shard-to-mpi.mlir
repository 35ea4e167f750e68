// RUN: ember-opt %s -ember-shard-to-mpi -split-input-file | FileCheck %s

// A one-dimensional grid as large as the world: the collective runs on
// MPI_COMM_WORLD (no communicator split per call), MPICH's ABI is added to
// the module's DLTI entries, and the grid is gone.
// CHECK: module attributes {dlti.map = #dlti.map<"MPI:comm_world-rank" = 1 : i32, "MPI:comm_world-size" = 2 : i32, "MPI:Implementation" = "MPICH">}
// CHECK-NOT: shard.grid
// CHECK-LABEL: func @world
// CHECK-NOT: mpi.comm_split
// CHECK: mpi.comm_rank
// CHECK-NOT: mpi.comm_split
// CHECK: %[[W:.*]] = mpi.comm_world : !mpi.comm
// CHECK-NEXT: mpi.allreduce(%{{.*}}, %{{.*}}, MPI_SUM, %[[W]]) : memref<4xf32>, memref<4xf32>
module attributes {dlti.map = #dlti.map<"MPI:comm_world-rank" = 1 : i32, "MPI:comm_world-size" = 2 : i32>} {
  shard.grid @grid(shape = 2)
  func.func @world(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = shard.all_reduce %x on @grid grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

// An axis of a larger grid: convert-shard-to-mpi's communicator split stays.
// CHECK-LABEL: func @axis
// CHECK: %[[C:.*]] = mpi.comm_split
// CHECK-NEXT: mpi.allreduce(%{{.*}}, %{{.*}}, MPI_SUM, %[[C]])
module attributes {dlti.map = #dlti.map<"MPI:comm_world-size" = 4 : i32>} {
  shard.grid @grid(shape = 2x2)
  func.func @axis(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = shard.all_reduce %x on @grid grid_axes = [1] : tensor<4xf32> -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
}

// -----

// Without a grid the pass does nothing (no DLTI entry is added).
// CHECK-NOT: dlti.map
// CHECK-LABEL: func @plain
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
