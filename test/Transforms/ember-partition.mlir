// RUN: ember-opt %s -ember-partition -split-input-file | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#mk = affine_map<(d0, d1, d2) -> (d0, d1)>
#kn = affine_map<(d0, d1, d2) -> (d1, d2)>
#mn = affine_map<(d0, d1, d2) -> (d0, d2)>

// Rows split over the grid: the elementwise op and the product work on the
// block, the column sum is a partial sum combined with all_reduce, and the
// product (a contraction loop nest) goes to the runtime's GEMM.
// CHECK-LABEL: func @rows
// CHECK-SAME: (%{{.*}}: tensor<64x128xf32>{{.*}}, %{{.*}}: tensor<128x64xf32>{{.*}}) -> tensor<64xf32>
// CHECK-SAME: ember.partition = "spmd"
// CHECK: call @__ember_gemm{{.*}}(tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<64x64xf32>
// CHECK: math.tanh
// CHECK: linalg.reduce ins({{.*}} : tensor<64x64xf32>) outs({{.*}} : tensor<64xf32>)
// CHECK: shard.all_reduce {{.*}} on @grid grid_axes = [0] : tensor<64xf32> -> tensor<64xf32>
shard.grid @grid(shape = 2)
func.func @rows(%x: tensor<128x128xf32> {ember.split_axes = [[0]]}, %w: tensor<128x64xf32>) -> tensor<64xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %e = tensor.empty() : tensor<128x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<128x64xf32>) -> tensor<128x64xf32>
  %p = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %w : tensor<128x128xf32>, tensor<128x64xf32>) outs(%f : tensor<128x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = math.fma %a, %b, %c : f32
    linalg.yield %m : f32
  } -> tensor<128x64xf32>
  %e2 = tensor.empty() : tensor<128x64xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<128x64xf32>) outs(%e2 : tensor<128x64xf32>) {
  ^bb0(%a: f32, %b: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<128x64xf32>
  %e3 = tensor.empty() : tensor<64xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.reduce ins(%t : tensor<128x64xf32>) outs(%f3 : tensor<64xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %a = arith.addf %in, %init : f32
      linalg.yield %a : f32
    }
  return %s : tensor<64xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A split result stays the process's block; nothing is communicated.
// CHECK-LABEL: func @split_result
// CHECK-SAME: (%{{.*}}: tensor<4xf32>) -> tensor<4xf32>
// CHECK-SAME: ember.partition = "spmd"
// CHECK-NOT: shard.all
// CHECK: math.exp
// CHECK-NOT: shard.all
shard.grid @grid(shape = 4)
func.func @split_result(%x: tensor<16xf32> {ember.split_axes = [[0]]}) -> (tensor<16xf32> {ember.split_axes = [[0]]}) {
  %e = tensor.empty() : tensor<16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A whole result of a split elementwise op: the blocks are gathered, as the
// integer view of the buffer summed over the grid (one process contributes
// each element).
// CHECK-LABEL: func @gather_result
// CHECK-SAME: (%{{.*}}: tensor<4xf32>) -> tensor<16xf32>
// CHECK: math.exp
// CHECK: arith.bitcast {{.*}} : f32 to i32
// CHECK: %[[I:.*]] = shard.process_multi_index on @grid axes = [0] : index
// CHECK: tensor.insert_slice {{.*}} into {{.*}} : tensor<4xi32> into tensor<16xi32>
// CHECK: shard.all_reduce {{.*}} on @grid grid_axes = [0] : tensor<16xi32> -> tensor<16xi32>
// CHECK: arith.bitcast {{.*}} : i32 to f32
shard.grid @grid(shape = 4)
func.func @gather_result(%x: tensor<16xf32> {ember.split_axes = [[0]]}) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// An op upstream partitioning does not cover (a sort, here a call): the
// function keeps its calling convention but gathers its split argument at
// the entry and computes on whole arrays.
// CHECK-LABEL: func @gathered
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xi1>) -> tensor<8x8xi1>
// CHECK-SAME: ember.partition = "gathered"
// CHECK: arith.extui {{.*}} : i1 to i8
// CHECK: shard.all_reduce {{.*}} : tensor<8x8xi8> -> tensor<8x8xi8>
// CHECK: arith.trunci {{.*}} : i8 to i1
// CHECK: call @opaque({{.*}}) : (tensor<8x8xi1>) -> tensor<8x8xi1>
shard.grid @grid(shape = 4)
func.func private @opaque(tensor<8x8xi1>) -> tensor<8x8xi1>
func.func @gathered(%x: tensor<8x8xi1> {ember.split_axes = [[0]]}) -> tensor<8x8xi1> {
  %y = call @opaque(%x) : (tensor<8x8xi1>) -> tensor<8x8xi1>
  return %y : tensor<8x8xi1>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The gathered path slices a split result: each process returns its block,
// taken at its index on the grid axes (both axes of a 2x2 grid here, the
// row block index on the first).
// CHECK-LABEL: func @gathered_split_result
// CHECK-SAME: -> tensor<2x2xf32>
// CHECK-SAME: ember.partition = "gathered"
// CHECK: call @opaque2
// CHECK: shard.process_multi_index on @grid axes = [0] : index
// CHECK: tensor.extract_slice {{.*}} : tensor<4x4xf32> to tensor<2x4xf32>
// CHECK: shard.process_multi_index on @grid axes = [1] : index
// CHECK: tensor.extract_slice {{.*}} : tensor<2x4xf32> to tensor<2x2xf32>
shard.grid @grid(shape = 2x2)
func.func private @opaque2(tensor<4x4xf32>) -> tensor<4x4xf32>
func.func @gathered_split_result(%x: tensor<4x4xf32>) -> (tensor<4x4xf32> {ember.split_axes = [[0], [1]]}) {
  %y = call @opaque2(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// Without split arguments or results the pass does nothing.
// CHECK-LABEL: func @untouched
// CHECK-NOT: ember.partition
func.func @untouched(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Complex blocks are gathered part by part.
// CHECK-LABEL: func @complex
// CHECK: complex.re
// CHECK: shard.all_reduce {{.*}} : tensor<8xi32> -> tensor<8xi32>
// CHECK: complex.im
// CHECK: shard.all_reduce {{.*}} : tensor<8xi32> -> tensor<8xi32>
// CHECK: complex.create
shard.grid @grid(shape = 2)
func.func @complex(%x: tensor<8xcomplex<f32>> {ember.split_axes = [[0]]}) -> tensor<8xcomplex<f32>> {
  return %x : tensor<8xcomplex<f32>>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// On a grid of several axes upstream reshards nothing (it asserts): a whole
// result of split blocks takes the gathered path; blocks returned as they
// are split stay partitioned.
// CHECK-LABEL: func @grid_2d_whole
// CHECK-SAME: ember.partition = "gathered"
// CHECK-LABEL: func @grid_2d_blocks
// CHECK-SAME: (%{{.*}}: tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-SAME: ember.partition = "spmd"
shard.grid @grid(shape = 2x2)
func.func @grid_2d_whole(%x: tensor<4x4xf32> {ember.split_axes = [[0], [1]]}) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}
func.func @grid_2d_blocks(%x: tensor<4x4xf32> {ember.split_axes = [[0], [1]]}) -> (tensor<4x4xf32> {ember.split_axes = [[0], [1]]}) {
  %e = tensor.empty() : tensor<4x4xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %v = math.exp %a : f32
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>

// A constant broadcast (a generic reading a 0-d tensor into an empty, as
// ember-to-linalg writes `x * 2`) is computed at the block's shape where
// its user is split, like a fill: no whole array sliced at the rank.
// CHECK-LABEL: func @scalar_broadcast
// CHECK-SAME: (%{{.*}}: tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK-SAME: ember.partition = "spmd"
// CHECK-NOT: tensor<32x16xf32>
// CHECK-NOT: shard.all
// CHECK-NOT: process_multi_index
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<f32>) outs(%{{.*}} : tensor<8x16xf32>)
// CHECK: arith.mulf
shard.grid @grid(shape = 4)
func.func @scalar_broadcast(%x: tensor<32x16xf32> {ember.split_axes = [[0]]}) -> (tensor<32x16xf32> {ember.split_axes = [[0]]}) {
  %c = arith.constant dense<2.0> : tensor<f32>
  %e = tensor.empty() : tensor<32x16xf32>
  %b = linalg.generic {indexing_maps = [#scalar, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : tensor<f32>) outs(%e : tensor<32x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<32x16xf32>
  %e2 = tensor.empty() : tensor<32x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<32x16xf32>, tensor<32x16xf32>) outs(%e2 : tensor<32x16xf32>) {
  ^bb0(%a: f32, %c2: f32, %o: f32):
    %m = arith.mulf %a, %c2 : f32
    linalg.yield %m : f32
  } -> tensor<32x16xf32>
  return %y : tensor<32x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// An iota (a generic asking for its indices) is not such a broadcast: split,
// it would count from 0 in every block. It stays whole and each process
// takes its rows.
// CHECK-LABEL: func @iota_stays_whole
// CHECK-SAME: ember.partition = "spmd"
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<32x16xf32>)
// CHECK: linalg.index 0
// CHECK: shard.process_multi_index
// CHECK: tensor.extract_slice {{.*}} : tensor<32x16xf32> to tensor<8x16xf32>
shard.grid @grid(shape = 4)
func.func @iota_stays_whole(%x: tensor<32x16xf32> {ember.split_axes = [[0]]}) -> (tensor<32x16xf32> {ember.split_axes = [[0]]}) {
  %e = tensor.empty() : tensor<32x16xf32>
  %b = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<32x16xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %f = arith.sitofp %ii : i32 to f32
    linalg.yield %f : f32
  } -> tensor<32x16xf32>
  %e2 = tensor.empty() : tensor<32x16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<32x16xf32>, tensor<32x16xf32>) outs(%e2 : tensor<32x16xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.addf %a, %c : f32
    linalg.yield %m : f32
  } -> tensor<32x16xf32>
  return %y : tensor<32x16xf32>
}
