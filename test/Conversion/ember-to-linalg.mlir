// RUN: ember-opt %s -ember-to-linalg -split-input-file | FileCheck %s

// CHECK-LABEL: func @elementwise
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: math.exp
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = ember.add %a, %b : tensor<2x3xf32>
  %1 = ember.exp %0 : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}


// -----

// integer_pow by squaring and multiplying: x^5 = x * (x^2)^2 is three
// products; a negative power divides one by them; f16 rounds every product.
// CHECK-LABEL: func @integer_pow
// CHECK: linalg.generic
// CHECK: ^bb0(%[[X:.*]]: f32,
// CHECK-NEXT: %[[X2:.*]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT: %[[X4:.*]] = arith.mulf %[[X2]], %[[X2]]
// CHECK-NEXT: %[[X5:.*]] = arith.mulf %[[X]], %[[X4]]
// CHECK-NEXT: linalg.yield %[[X5]]
// CHECK: linalg.generic
// CHECK: arith.mulf
// CHECK-NEXT: arith.constant 1.0
// CHECK-NEXT: arith.divf
// CHECK: linalg.generic
// CHECK: arith.extf
// CHECK-NEXT: arith.extf
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.truncf
// CHECK-NOT: arith.mulf
// CHECK: linalg.yield
func.func @integer_pow(%a: tensor<4xf32>, %h: tensor<4xf16>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf16>) {
  %0 = ember.integer_pow %a, y = 5 : tensor<4xf32>
  %1 = ember.integer_pow %a, y = -2 : tensor<4xf32>
  %2 = ember.integer_pow %h, y = 2 : tensor<4xf16>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf16>
}

// -----

// CHECK-LABEL: func @unsigned_div(%{{.*}}: tensor<4xi32> {bufferization.writable = false}, %{{.*}}: tensor<4xi32> {bufferization.writable = false}) -> tensor<4xi32>
// CHECK: linalg.generic
// CHECK: %[[Z:.*]] = arith.cmpi eq
// CHECK: %[[SAFE:.*]] = arith.select %[[Z]]
// CHECK: %[[Q:.*]] = arith.divui %{{.*}}, %[[SAFE]] : i32
// CHECK: arith.select %[[Z]], %{{.*}}, %[[Q]] : i32
// CHECK-NOT: ui32
func.func @unsigned_div(%a: tensor<4xui32>, %b: tensor<4xui32>) -> tensor<4xui32> {
  %0 = ember.div %a, %b : tensor<4xui32>
  return %0 : tensor<4xui32>
}


// -----

// CHECK-LABEL: func @compare_f
// CHECK: linalg.generic
// CHECK: %[[C:.*]] = arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// Bools are stored as i8 bytes in tensors.
// CHECK: arith.extui %[[C]] : i1 to i8
// CHECK: -> tensor<4xi8>
func.func @compare_f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xi1> {
  %0 = ember.compare LT, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}


// -----

// CHECK-LABEL: func @convert_f32_i32
// CHECK: %[[HI:.*]] = arith.cmpf oge
// CHECK: %[[LO:.*]] = arith.cmpf olt
// CHECK: %[[NAN:.*]] = arith.cmpf uno
// CHECK: %[[V:.*]] = arith.fptosi %{{.*}} : f32 to i32
// CHECK: %[[S1:.*]] = arith.select %[[HI]], %{{.*}}, %[[V]] : i32
// CHECK: arith.select %[[LO]], %{{.*}}, %[[S1]] : i32
func.func @convert_f32_i32(%a: tensor<4xf32>) -> tensor<4xi32> {
  %0 = ember.convert %a : (tensor<4xf32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}


// -----

// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func @broadcast
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #{{.*}}]
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[X]]
func.func @broadcast(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = ember.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}


// -----

// CHECK-LABEL: func @reshape
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
func.func @reshape(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = ember.reshape %a : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}


// -----

// CHECK-LABEL: func @transpose
// CHECK: linalg.transpose ins(%{{.*}} : tensor<2x3xf32>) outs(%{{.*}} : tensor<3x2xf32>) permutation = [1, 0]
func.func @transpose(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = ember.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}


// -----

// CHECK-LABEL: func @slice
// CHECK: tensor.extract_slice %{{.*}}[0, 1] [2, 1] [1, 2] : tensor<2x3xf32> to tensor<2x1xf32>
func.func @slice(%a: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %0 = ember.slice %a, start = [0, 1], limit = [2, 3], strides = [1, 2] : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}


// -----

// CHECK-LABEL: func @pad
// CHECK: %[[PV:.*]] = tensor.extract %{{.*}}[] : tensor<f32>
// CHECK: %[[F:.*]] = linalg.fill ins(%[[PV]] : f32) outs(%{{.*}} : tensor<4x5xf32>)
// CHECK: %[[I:.*]] = tensor.insert_slice %{{.*}} into %[[F]][1, 0] [2, 3] [2, 1]
// CHECK: tensor.extract_slice %[[I]][0, 1] [4, 4] [1, 1] : tensor<4x5xf32> to tensor<4x4xf32>
func.func @pad(%a: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<4x4xf32> {
  %0 = ember.pad %a, %s, low = [1, -1], high = [0, 2], interior = [1, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}


// -----

// CHECK-LABEL: func @concatenate
// CHECK: %[[A:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [2, 3] [1, 1]
// CHECK: tensor.insert_slice %{{.*}} into %[[A]][2, 0] [1, 3] [1, 1]
func.func @concatenate(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>) -> tensor<3x3xf32> {
  %0 = ember.concatenate dim = 0, %a, %b : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}


// -----

// CHECK-LABEL: func @reduce
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ZERO]]
// CHECK: linalg.reduce ins(%{{.*}} : tensor<2x3xf32>) outs(%{{.*}} : tensor<2xf32>) dimensions = [1]
// CHECK: arith.addf
func.func @reduce(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = ember.reduce sum %a, dims = [1] : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}


// -----

// A large full reduction runs as rows (a parallel loop), then the rows'
// results.
// CHECK-LABEL: func @reduce_split
// CHECK: %[[F:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<512x1024xf32> into tensor<524288xf32>
// CHECK: %[[G:.*]] = tensor.expand_shape %[[F]] {{\[\[}}0, 1]] output_shape [64, 8192] : tensor<524288xf32> into tensor<64x8192xf32>
// CHECK: %[[ROWS:.*]] = linalg.reduce ins(%[[G]] : tensor<64x8192xf32>) outs(%{{.*}} : tensor<64xf32>) dimensions = [1]
// CHECK-NEXT: (%{{.*}}: f32, %{{.*}}: f32) {
// CHECK-NEXT: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK: linalg.reduce ins(%[[ROWS]] : tensor<64xf32>) outs(%{{.*}} : tensor<f32>) dimensions = [0]
func.func @reduce_split(%a: tensor<512x1024xf32>) -> tensor<f32> {
  %0 = ember.reduce sum %a, dims = [0, 1] : (tensor<512x1024xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A size no row count from 64 to 8 divides: 64 rows take all but the last
// n % 64 elements; the tail's reduction is where the rows' results start.
// The rows of a max ignore the sign of zero (nsz); the tail and the final
// combination order -0 below +0.
// CHECK-LABEL: func @reduce_split_tail
// CHECK: %[[BODY:.*]] = tensor.extract_slice %arg0[0] [786432] [1] : tensor<786433xf32> to tensor<786432xf32>
// CHECK: %[[G:.*]] = tensor.expand_shape %[[BODY]] {{\[\[}}0, 1]] output_shape [64, 12288]
// CHECK: %[[ROWS:.*]] = linalg.reduce ins(%[[G]] : tensor<64x12288xf32>) outs(%{{.*}} : tensor<64xf32>) dimensions = [1]
// CHECK-NEXT: (%{{.*}}: f32, %{{.*}}: f32) {
// CHECK-NEXT: arith.maximumf %{{.*}}, %{{.*}} fastmath<reassoc,nsz> : f32
// CHECK: %[[TAIL:.*]] = tensor.extract_slice %arg0[786432] [1] [1] : tensor<786433xf32> to tensor<1xf32>
// CHECK: %[[START:.*]] = linalg.reduce ins(%[[TAIL]] : tensor<1xf32>) outs(%{{.*}} : tensor<f32>) dimensions = [0]
// CHECK-NEXT: (%{{.*}}: f32, %{{.*}}: f32) {
// CHECK-NEXT: arith.maximumf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK: linalg.reduce ins(%[[ROWS]] : tensor<64xf32>) outs(%[[START]] : tensor<f32>) dimensions = [0]
// CHECK-NEXT: (%{{.*}}: f32, %{{.*}}: f32) {
// CHECK-NEXT: arith.maximumf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
func.func @reduce_split_tail(%a: tensor<786433xf32>) -> tensor<f32> {
  %0 = ember.reduce max %a, dims = [0] : (tensor<786433xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// The same split of an elementwise producer used only by the reduction: the
// producer is computed again on slices of its flattened operands, once for
// the rows and once for the tail, so that each fuses with its reduction.
// CHECK-LABEL: func @reduce_split_tail_producer
// CHECK: %[[A:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<3x262147xf32> into tensor<786441xf32>
// CHECK: %[[S:.*]] = tensor.extract_slice %[[A]][0] [786432] [1]
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[S]], %{{.*}} : tensor<786432xf32>, tensor<786432xf32>)
// CHECK: arith.mulf
// CHECK: %[[G:.*]] = tensor.expand_shape %[[P]] {{\[\[}}0, 1]] output_shape [64, 12288]
// CHECK: %[[ROWS:.*]] = linalg.reduce ins(%[[G]] : tensor<64x12288xf32>)
// CHECK: %[[T:.*]] = tensor.extract_slice %{{.*}}[786432] [9] [1] : tensor<786441xf32> to tensor<9xf32>
// CHECK: %[[PT:.*]] = linalg.generic {{.*}} ins(%[[T]], %{{.*}} : tensor<9xf32>, tensor<9xf32>)
// CHECK: %[[START:.*]] = linalg.reduce ins(%[[PT]] : tensor<9xf32>)
// CHECK: linalg.reduce ins(%[[ROWS]] : tensor<64xf32>) outs(%[[START]] : tensor<f32>)
func.func @reduce_split_tail_producer(%a: tensor<3x262147xf32>) -> tensor<f32> {
  %0 = ember.mul %a, %a : tensor<3x262147xf32>
  %1 = ember.reduce sum %0, dims = [0, 1] : (tensor<3x262147xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A producer with another use keeps the one fused serial loop.
// CHECK-LABEL: func @reduce_tail_shared_producer
// CHECK-NOT: tensor.extract_slice
// CHECK: linalg.reduce ins(%{{.*}} : tensor<786433xf32>) outs(%{{.*}} : tensor<f32>) dimensions = [0]
func.func @reduce_tail_shared_producer(%a: tensor<786433xf32>) -> (tensor<f32>, tensor<786433xf32>) {
  %0 = ember.mul %a, %a : tensor<786433xf32>
  %1 = ember.reduce sum %0, dims = [0] : (tensor<786433xf32>) -> tensor<f32>
  return %1, %0 : tensor<f32>, tensor<786433xf32>
}

// -----

// A long float sum over an outer dimension (each output a sequential sum)
// runs in blocks: 1000 = 40 blocks of 25 (the largest divisor up to
// sqrt(1000)), then the 40 block sums. The innermost dimension and short
// ones are reduced in one step (vectorized, or short enough).
// CHECK-LABEL: func @reduce_tree
// CHECK: %[[S:.*]] = tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [40, 25, 8] : tensor<1000x8xf32> into tensor<40x25x8xf32>
// CHECK: %[[B:.*]] = linalg.reduce ins(%[[S]] : tensor<40x25x8xf32>) outs(%{{.*}} : tensor<40x8xf32>) dimensions = [1]
// CHECK: linalg.reduce ins(%[[B]] : tensor<40x8xf32>) outs(%{{.*}} : tensor<8xf32>) dimensions = [0]
// CHECK: linalg.reduce ins(%arg0 : tensor<1000x8xf32>) outs(%{{.*}} : tensor<1000xf32>) dimensions = [1]
// CHECK: linalg.reduce ins(%arg1 : tensor<200x8xf32>) outs(%{{.*}} : tensor<8xf32>) dimensions = [0]
// CHECK-NOT: expand_shape
func.func @reduce_tree(%a: tensor<1000x8xf32>, %b: tensor<200x8xf32>) -> (tensor<8xf32>, tensor<1000xf32>, tensor<8xf32>) {
  %0 = ember.reduce sum %a, dims = [0] : (tensor<1000x8xf32>) -> tensor<8xf32>
  %1 = ember.reduce sum %a, dims = [1] : (tensor<1000x8xf32>) -> tensor<1000xf32>
  %2 = ember.reduce sum %b, dims = [0] : (tensor<200x8xf32>) -> tensor<8xf32>
  return %0, %1, %2 : tensor<8xf32>, tensor<1000xf32>, tensor<8xf32>
}


// -----

// CHECK-DAG: #[[L:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[R:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[O:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func @dot_general
// CHECK: linalg.generic {indexing_maps = [#[[L]], #[[R]], #[[O]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[F:.*]] = math.fma %[[A]], %[[B]], %[[ACC]] : f32
// CHECK-NEXT: linalg.yield %[[F]]
func.func @dot_general(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}


// -----

// CHECK-LABEL: func @dynamic_slice
// CHECK: %[[I:.*]] = arith.index_cast
// CHECK: %[[LO:.*]] = arith.maxsi %[[I]], %{{.*}} : index
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK: %[[S:.*]] = arith.minsi %[[LO]], %[[C3]] : index
// CHECK: tensor.extract_slice %{{.*}}[%[[S]]] [2] [1] : tensor<5xf32> to tensor<2xf32>
func.func @dynamic_slice(%a: tensor<5xf32>, %i: tensor<i32>) -> tensor<2xf32> {
  %0 = ember.dynamic_slice %a[%i], sizes = [2] : (tensor<5xf32>, tensor<i32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}


// -----

// CHECK-LABEL: func @sort
// CHECK: %[[RANK:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} outs(%{{.*}} : tensor<4xindex>)
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i32
// CHECK: linalg.generic {{.*}}ins(%[[RANK]], %{{.*}} : tensor<4xindex>, tensor<4xf32>)
func.func @sort(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ember.sort dim = 0, keys = 1, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A long sort calls the runtime: the keys become order-preserving i64 codes
// (the sort dimension moved innermost), ember_sort_keys returns each
// destination's source index, and every operand is gathered by it.
// CHECK-LABEL: func @long_sort
// CHECK: linalg.transpose
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK: tensor.insert_slice
// CHECK: %[[SRC:.*]] = call @__ember_sort{{.*}} -> tensor<3x100xi64>
// CHECK: linalg.generic {{.*}}ins(%[[SRC]] : tensor<3x100xi64>)
// CHECK: tensor.extract
// CHECK: tensor.extract
// CHECK: linalg.transpose
// CHECK: func.func private @__ember_sort
// CHECK: call @ember_sort_keys
func.func @long_sort(%a: tensor<100x3xf32>, %b: tensor<100x3xi32>) -> (tensor<100x3xf32>, tensor<100x3xi32>) {
  %0:2 = ember.sort dim = 0, keys = 1, %a, %b : tensor<100x3xf32>, tensor<100x3xi32>
  return %0#0, %0#1 : tensor<100x3xf32>, tensor<100x3xi32>
}


// -----

// CHECK-LABEL: func @gather
// CHECK: linalg.generic {{.*}}outs(%{{.*}} : tensor<4x3xf32>)
// CHECK: %[[B:.*]] = linalg.index 0
// CHECK: tensor.extract %{{.*}}[%[[B]], %{{.*}}] : tensor<4x1xi32>
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract %{{.*}} : tensor<5x3xf32>
func.func @gather(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>) -> tensor<4x3xf32> {
  %0 = ember.gather %a[%idx] {offset_dims = array<i64: 1>, collapsed_slice_dims = array<i64: 0>, operand_batching_dims = array<i64>, start_indices_batching_dims = array<i64>, start_index_map = array<i64: 0>, index_vector_dim = 1, slice_sizes = array<i64: 1, 3>, mode = #ember<mode clip>} : (tensor<5x3xf32>, tensor<4x1xi32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}


// -----

// CHECK-LABEL: func @scatter
// CHECK: scf.for {{.*}} -> (tensor<5x3xf32>)
// CHECK: scf.for {{.*}} -> (tensor<5x3xf32>)
// CHECK: scf.if
// CHECK: arith.addf
// CHECK: tensor.insert
func.func @scatter(%a: tensor<5x3xf32>, %idx: tensor<4x1xi32>, %upd: tensor<4x3xf32>) -> tensor<5x3xf32> {
  %0 = ember.scatter add %a[%idx], %upd {update_window_dims = array<i64: 1>, inserted_window_dims = array<i64: 0>, operand_batching_dims = array<i64>, scatter_indices_batching_dims = array<i64>, scatter_dims_to_operand_dims = array<i64: 0>, index_vector_dim = 1, mode = #ember<mode fill>} : (tensor<5x3xf32>, tensor<4x1xi32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}


// -----

// A float running sum is carried in f64 (f32 for 16-bit floats) and rounded
// once per element; other kinds combine the previous element.
// An empty sort is its operands.
// CHECK-LABEL: func @sort_empty
// CHECK-NOT: tensor.insert_slice
// CHECK: return %arg0, %arg1
func.func @sort_empty(%a: tensor<0x65xi32>, %b: tensor<0x65xi32>) -> (tensor<0x65xi32>, tensor<0x65xi32>) {
  %0:2 = ember.sort dim = 1, keys = 1, %a, %b : tensor<0x65xi32>, tensor<0x65xi32>
  return %0#0, %0#1 : tensor<0x65xi32>, tensor<0x65xi32>
}

// -----

// An empty operand is its own running sum (no slices of the empty dimension).
// CHECK-LABEL: func @cumulative_empty
// CHECK-NOT: tensor.extract_slice
// CHECK: return %arg0
func.func @cumulative_empty(%a: tensor<0x3xf32>) -> tensor<0x3xf32> {
  %0 = ember.cumulative sum %a, axis = 1 : tensor<0x3xf32>
  return %0 : tensor<0x3xf32>
}

// -----

// CHECK-LABEL: func @cumulative
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<2x3xf32>, tensor<2x1xf64>)
// CHECK: tensor.extract_slice
// CHECK: arith.addf %{{.*}}, %{{.*}} : f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: tensor.insert_slice
func.func @cumulative(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = ember.cumulative sum %a, axis = 1 : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func @cumulative_max
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (tensor<2x3xbf16>)
// CHECK: tensor.extract_slice
// CHECK: tensor.extract_slice
// CHECK: linalg.generic
// CHECK: tensor.insert_slice
func.func @cumulative_max(%a: tensor<2x3xbf16>) -> tensor<2x3xbf16> {
  %0 = ember.cumulative max %a, axis = 1 : tensor<2x3xbf16>
  return %0 : tensor<2x3xbf16>
}


// -----

// CHECK-LABEL: func @argmax
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: %{{.*}}:2 = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf uno
// CHECK: linalg.index 1
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f32, i32
func.func @argmax(%a: tensor<2x3xf32>) -> tensor<2xi32> {
  %0 = ember.argmax %a, axis = 1 : (tensor<2x3xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}


// -----

// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0 + d2, d1 + d3)>
// CHECK-LABEL: func @reduce_window
// CHECK: linalg.generic {indexing_maps = [#[[IN]], {{.*}}iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: arith.maximumf
func.func @reduce_window(%a: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<1x2xf32> {
  %0 = ember.reduce_window max %a, %s, window = [2, 2], strides = [1, 1], low = [0, 0], high = [0, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// -----

// A window larger than the operand: an empty result, no loop (it read past
// the operand and failed linalg's verifier).
// CHECK-LABEL: func @reduce_window_none_fits
// CHECK-NOT: linalg.generic
// CHECK: tensor.empty() : tensor<0xf32>
func.func @reduce_window_none_fits(%a: tensor<5xf32>, %s: tensor<f32>) -> tensor<0xf32> {
  %0 = ember.reduce_window sum %a, %s, window = [7], strides = [1], low = [0], high = [0] : (tensor<5xf32>, tensor<f32>) -> tensor<0xf32>
  return %0 : tensor<0xf32>
}


// -----

// CHECK-LABEL: func @iota
// CHECK: linalg.generic
// CHECK: linalg.index 1
// CHECK: arith.index_cast
func.func @iota() -> tensor<2x3xi32> {
  %0 = ember.iota dim = 1 : tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}


// -----

// CHECK-LABEL: func @threefry(%{{.*}}: tensor<4xi32> {bufferization.writable = false}, %{{.*}}: tensor<4xi32> {bufferization.writable = false}) -> (tensor<4xi32>, tensor<4xi32>)
// CHECK: %{{.*}}:2 = linalg.generic
// CHECK: arith.constant 466688986 : i32
// CHECK-COUNT-20: arith.shli
// CHECK: linalg.yield %{{.*}}, %{{.*}} : i32, i32
func.func @threefry(%k: tensor<4xui32>, %x: tensor<4xui32>) -> (tensor<4xui32>, tensor<4xui32>) {
  %0:2 = ember.threefry2x32 %k, %k, %x, %x : tensor<4xui32>
  return %0#0, %0#1 : tensor<4xui32>, tensor<4xui32>
}

// -----

// Philox's products are mului_extended: ten rounds of two.
// CHECK-LABEL: func @philox
// CHECK: %{{.*}}:4 = linalg.generic
// CHECK-COUNT-20: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: linalg.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : i32, i32, i32, i32
func.func @philox(%k: tensor<4xui32>, %x: tensor<4xui32>) -> (tensor<4xui32>, tensor<4xui32>, tensor<4xui32>, tensor<4xui32>) {
  %0:4 = ember.philox4x32 %k, %k, %x, %x, %x, %x : tensor<4xui32>
  return %0#0, %0#1, %0#2, %0#3 : tensor<4xui32>, tensor<4xui32>, tensor<4xui32>, tensor<4xui32>
}

// -----

// Arguments are the caller's: bufferization must not write into them.
// CHECK-LABEL: func @args_not_writable(%{{.*}}: tensor<4xf32> {bufferization.writable = false})
func.func @args_not_writable(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ember.cumulative sum %a, axis = 0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An empty slice starting at the end of the operand needs no data.
// CHECK-LABEL: func @empty_slice
// CHECK-NOT: tensor.extract_slice
// CHECK: tensor.empty() : tensor<0x4xf32>
func.func @empty_slice(%a: tensor<3x4xf32>) -> tensor<0x4xf32> {
  %0 = ember.slice %a, start = [3, 0], limit = [3, 4], strides = [1, 1] : (tensor<3x4xf32>) -> tensor<0x4xf32>
  return %0 : tensor<0x4xf32>
}

// -----

// A wider element splits into little-endian parts along a new dimension.
// CHECK-LABEL: func @bitcast_split
// CHECK: linalg.generic
// CHECK: arith.shrui
// CHECK: arith.trunci {{.*}} : i32 to i8
func.func @bitcast_split(%a: tensor<3xi32>) -> tensor<3x4xui8> {
  %0 = ember.bitcast_convert %a : (tensor<3xi32>) -> tensor<3x4xui8>
  return %0 : tensor<3x4xui8>
}

// -----

// Narrow elements merge their trailing dimension into one wide element.
// CHECK-LABEL: func @bitcast_merge
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.shli
// CHECK: arith.bitcast {{.*}} : i32 to f32
func.func @bitcast_merge(%a: tensor<3x4xui8>) -> tensor<3xf32> {
  %0 = ember.bitcast_convert %a : (tensor<3x4xui8>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A host callback becomes a call of a helper that passes the signature
// record [id, #in, #out, (type code, rank, dims)...] and the buffers'
// addresses to the runtime entry point.
// CHECK-LABEL: func @host_callback
// CHECK: %[[R:.*]] = call @__ember_host_callback_0(%{{.*}}, %{{.*}}) : (tensor<2x3xf32>, tensor<i8>) -> tensor<3xi32>
// CHECK: return %[[R]]
// CHECK: func.func private @ember_host_callback(memref<?xi64>, memref<?xindex>, memref<?xindex>)
// The operands arrive as any strided view (no copy for a slice); one that
// is not row-major is copied first.
// CHECK: func.func private @__ember_host_callback_0(%[[A:[a-z0-9]+]]: tensor<2x3xf32> {bufferization.buffer_layout = strided<[?, ?], offset: ?>
// CHECK: %[[V:.*]] = bufferization.to_buffer %[[A]] read_only : tensor<2x3xf32> to memref<2x3xf32, strided<[?, ?], offset: ?>>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}:2, %[[S:.*]]:2 = memref.extract_strided_metadata %[[V]]
// CHECK: arith.cmpi eq, %[[S]]#1, %c1
// CHECK: arith.cmpi eq, %[[S]]#0, %c3
// CHECK: scf.if
// CHECK-NEXT: scf.yield %[[V]]
// CHECK: memref.alloc() : memref<2x3xf32>
// CHECK: memref.copy
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<3xi32>
// CHECK: arith.constant dense<[5, 2, 1, 3, 2, 2, 3, 5, 0, 8, 1, 3]> : tensor<12xi64>
// CHECK: call @ember_host_callback
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable
func.func @host_callback(%x: tensor<2x3xf32>, %p: tensor<i1>) -> tensor<3xi32> {
  %y = ember.host_callback 5(%x, %p) : (tensor<2x3xf32>, tensor<i1>) -> tensor<3xi32>
  return %y : tensor<3xi32>
}

// -----

// f32 log1p is XLA's sequence (a rational for small |x|, a polynomial log
// otherwise) with explicit FMAs, not math.log1p, so results match JAX's bits.
// CHECK-LABEL: func @log1p_f32
// CHECK-NOT: math.log1p
// The log branch ends in a select that gives NaN unless its argument is
// ordered and >= 0: NaN in, NaN out (an unordered compare once let NaN
// through as -87).
// CHECK: %[[OK:.*]] = arith.cmpf oge, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: arith.select %[[OK]], %{{.*}}, %{{.*}} : f32
// CHECK: math.fma
// CHECK: arith.divf
// CHECK-NOT: math.log1p
func.func @log1p_f32(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ember.log1p %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Large f32 contractions call the runtime's batched GEMM. An operand whose
// dimensions are in matrix order but transposed is passed with its trans flag
// (transB = 1 for %b, transA = 1 for %x); a layout no flag covers (%y, batch
// dimension in the middle) is transposed first.
// CHECK-LABEL: func @gemm
// CHECK: %[[R:.*]] = call @__ember_gemm_0(%{{.*}}, %{{.*}}) : (tensor<64x32xf32>, tensor<48x32xf32>) -> tensor<64x48xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%{{.*}} : tensor<64x4x32xf32>) outs(%{{.*}} : tensor<4x64x32xf32>) permutation = [1, 0, 2]
// CHECK: call @__ember_gemm_1(%{{.*}}, %[[T]])
// CHECK: func.func private @ember_gemm_f32(i64, i64, i64, i64, i64, i64, index, index, index)
// CHECK: func.func private @__ember_gemm_0(
// CHECK: %[[C:.*]] = memref.alloc() : memref<64x48xf32>
// transA = 0, transB = 1, batch = 1, m = 64, n = 48, k = 32:
// CHECK: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 64 : i64
// CHECK-NEXT: arith.constant 48 : i64
// CHECK-NEXT: arith.constant 32 : i64
// CHECK-NEXT: call @ember_gemm_f32(
func.func @gemm(%a: tensor<64x32xf32>, %b: tensor<48x32xf32>, %x: tensor<4x64x32xf32>,
                %y: tensor<64x4x32xf32>) -> (tensor<64x48xf32>, tensor<4x32x32xf32>) {
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [1] : (tensor<64x32xf32>, tensor<48x32xf32>) -> tensor<64x48xf32>
  %1 = ember.dot_general %x, %y, batch = [0] x [1], contract = [1] x [0] : (tensor<4x64x32xf32>, tensor<64x4x32xf32>) -> tensor<4x32x32xf32>
  return %0, %1 : tensor<64x48xf32>, tensor<4x32x32xf32>
}

// -----

// Products with the same operand types and flags share one buffer helper;
// another shape (or flag) gets its own.
// CHECK-LABEL: func @gemm_shared_helper
// CHECK: call @__ember_gemm_0(%arg0, %arg1)
// CHECK: call @__ember_gemm_0(%arg0, %arg1)
// CHECK: call @__ember_gemm_1(%arg1, %arg0)
// CHECK: func.func private @__ember_gemm_0(
// CHECK: func.func private @__ember_gemm_1(
// CHECK-NOT: func.func private @__ember_gemm_2(
func.func @gemm_shared_helper(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>)
    -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %2 = ember.dot_general %b, %a, batch = [] x [], contract = [1] x [1] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0, %1, %2 : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// ember.case becomes a chain of scf.if on the index clamped to the
// branches: branch k where the index is k, the last branch otherwise.
// CHECK-LABEL: func @case
// CHECK: tensor.extract
// CHECK: arith.maxsi
// CHECK: %[[C:.*]] = arith.minsi
// CHECK: %[[P:.*]] = arith.cmpi eq, %[[C]], %{{.*}} : index
// CHECK: scf.if %[[P]] -> (tensor<3xf32>) {
// CHECK: scf.yield %{{.*}} : tensor<3xf32>
// CHECK: } else {
// CHECK: math.exp
func.func @case(%i: tensor<i32>, %a: tensor<3xf32>) -> tensor<3xf32> {
  %r = ember.case %i : tensor<i32> -> tensor<3xf32> {
    ember.yield %a : tensor<3xf32>
  }, {
    %e = ember.exp %a : tensor<3xf32>
    ember.yield %e : tensor<3xf32>
  }
  return %r : tensor<3xf32>
}

// -----

// f32 erf is XLA's rational approximation (FMAs and one division), not a
// libm call.
// CHECK-LABEL: func @erf_f32
// CHECK-NOT: math.erf
// CHECK: math.fma
// CHECK: arith.divf
// CHECK: math.copysign
func.func @erf_f32(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ember.erf %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Run-time stack ops become buffer helpers that move one value at a time:
// push in order (the first call reads the input handle) with each value's
// byte count (bools are bytes); a pop reads each value of push k (14 bytes
// per push: the value at offset 0 or 12) and then releases the stack.
// CHECK-LABEL: func @stacks
// CHECK: call @__ember_stack_push_0(%arg0, %arg1, %arg2) : (tensor<i64>, tensor<3xf32>, tensor<2xi8>) -> tensor<i64>
// CHECK: call @__ember_stack_pop_0(%{{.*}}, %arg3) : (tensor<i64>, tensor<i64>) -> (tensor<i64>, tensor<3xf32>, tensor<2xi8>)
// CHECK: call @__ember_stack_free_0(%{{.*}}) : (tensor<i64>) -> ()
// CHECK: func.func private @ember_stack_push(index, index, index, i64, i64)
// CHECK: func.func private @__ember_stack_push_0
// CHECK: %[[C12:.*]] = arith.constant 12 : i64
// CHECK: call @ember_stack_push(%{{.*}}, %[[OUT:.*]], %{{.*}}, %[[C12]], %{{.*}})
// CHECK: %[[C2:.*]] = arith.constant 2 : i64
// CHECK: call @ember_stack_push(%[[OUT]], %[[OUT]], %{{.*}}, %[[C2]], %{{.*}})
// CHECK: func.func private @ember_stack_read(index, index, i64, i64, i64, index, i64)
// CHECK: func.func private @ember_stack_release(index, index, index, i64)
// CHECK: func.func private @__ember_stack_pop_0
// CHECK: %[[L:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[E:.*]] = arith.constant 14 : i64
// CHECK-NEXT: %[[O:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[N:.*]] = arith.constant 12 : i64
// CHECK-NEXT: call @ember_stack_read(%[[H:.*]], %[[K:.*]], %[[L]], %[[E]], %[[O]], %{{.*}}, %[[N]])
// CHECK: %[[O2:.*]] = arith.constant 12 : i64
// CHECK-NEXT: %[[B:.*]] = arith.constant 2 : i64
// CHECK-NEXT: call @ember_stack_read(%[[H]], %[[K]], %{{.*}}, %{{.*}}, %[[O2]], %{{.*}}, %[[B]])
// CHECK: call @ember_stack_release(%[[H]], %{{.*}}, %[[K]], %{{.*}})
// CHECK: func.func private @__ember_stack_free_0
// CHECK: call @ember_stack_free
func.func @stacks(%h: tensor<i64>, %x: tensor<3xf32>, %b: tensor<2xi1>, %k: tensor<i64>) -> tensor<3xf32> {
  %h1 = ember.stack_push %h(%x, %b) : (tensor<i64>, tensor<3xf32>, tensor<2xi1>) -> tensor<i64>
  %h2, %y, %c = ember.stack_pop %h1[%k] : (tensor<i64>, tensor<i64>) -> (tensor<i64>, tensor<3xf32>, tensor<2xi1>)
  ember.stack_free %h2 : tensor<i64>
  return %y : tensor<3xf32>
}

// -----

// With lanes, each read takes a lane's bytes (12 of 48) from its own push.
// CHECK-LABEL: func @stack_lanes
// CHECK: func.func private @__ember_stack_pop_0
// CHECK: %[[L:.*]] = arith.constant 4 : i64
// CHECK-NEXT: %[[E:.*]] = arith.constant 48 : i64
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[N:.*]] = arith.constant 12 : i64
// CHECK-NEXT: call @ember_stack_read(%{{.*}}, %{{.*}}, %[[L]], %[[E]], %[[Z]], %{{.*}}, %[[N]])
// CHECK: %[[L2:.*]] = arith.constant 4 : i64
// CHECK-NEXT: call @ember_stack_release(%{{.*}}, %{{.*}}, %{{.*}}, %[[L2]])
func.func @stack_lanes(%h: tensor<i64>, %k: tensor<4xi64>) -> tensor<4x3xf32> {
  %h2, %y = ember.stack_pop %h[%k] {lanes = 4 : i64} : (tensor<i64>, tensor<4xi64>) -> (tensor<i64>, tensor<4x3xf32>)
  return %y : tensor<4x3xf32>
}

// -----

// A reshape that only drops or adds unit dimensions is one collapse or one
// expand (so that a row of a larger buffer stays a view after bufferization).
// CHECK-LABEL: func @reshape_unit_dims
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<1x2x3xf32> into tensor<2x3xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [2, 3, 1] : tensor<2x3xf32> into tensor<2x3x1xf32>
func.func @reshape_unit_dims(%a: tensor<1x2x3xf32>, %b: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3x1xf32>) {
  %0 = ember.reshape %a : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
  %1 = ember.reshape %b : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3x1xf32>
}

// -----

// A loop without a trip count is scf.while: the predicate region becomes
// `before`, yielding scf.condition.
// CHECK-LABEL: func @while_loop
// CHECK: scf.while (%{{.*}} = %{{.*}}) : (tensor<i32>) -> tensor<i32>
// CHECK: arith.cmpi slt
// CHECK: scf.condition(%{{.*}}) %{{.*}} : tensor<i32>
// CHECK: } do {
// CHECK: arith.addi
// CHECK: scf.yield %{{.*}} : tensor<i32>
func.func @while_loop(%x: tensor<i32>) -> tensor<i32> {
  %ten = ember.constant dense<10> : tensor<i32>
  %one = ember.constant dense<1> : tensor<i32>
  %r = ember.while(%x) : tensor<i32> cond {
  ^bb0(%c: tensor<i32>):
    %p = ember.compare LT, %c, %ten : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<i32>):
    %n = ember.add %c, %one : tensor<i32>
    ember.yield %n : tensor<i32>
  }
  return %r : tensor<i32>
}

// -----

// A loop with a trip count needs no predicate: it is scf.for over
// [0, trip_count), carrying the same values (its tensors bufferize in place).
// CHECK-LABEL: func @counted_loop
// CHECK-DAG: %[[LB:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[UB:.*]] = arith.constant 7 : index
// CHECK-DAG: %[[ST:.*]] = arith.constant 1 : index
// CHECK: %[[R:.*]]:2 = scf.for %{{.*}} = %[[LB]] to %[[UB]] step %[[ST]] iter_args(%[[I:.*]] = %{{.*}}, %[[S:.*]] = %{{.*}}) -> (tensor<i32>, tensor<3xf32>)
// CHECK-NOT: arith.cmpi
// CHECK: scf.yield %{{.*}}, %{{.*}} : tensor<i32>, tensor<3xf32>
// CHECK: return %[[R]]#1
func.func @counted_loop(%s: tensor<3xf32>) -> tensor<3xf32> {
  %zero = ember.constant dense<0> : tensor<i32>
  %seven = ember.constant dense<7> : tensor<i32>
  %one = ember.constant dense<1> : tensor<i32>
  %r:2 = ember.while(%zero, %s) {trip_count = 7 : i64} : tensor<i32>, tensor<3xf32> cond {
  ^bb0(%c: tensor<i32>, %v: tensor<3xf32>):
    %p = ember.compare LT, %c, %seven : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<i32>, %v: tensor<3xf32>):
    %n = ember.add %c, %one : tensor<i32>
    %w = ember.sin %v : tensor<3xf32>
    ember.yield %n, %w : tensor<i32>, tensor<3xf32>
  }
  return %r#1 : tensor<3xf32>
}

// -----

// A parallel loop (while_c5) is the same scf.for, marked `ember.parallel`
// for ember-split-rows.
// CHECK-LABEL: func @parallel_loop
// CHECK: scf.for
// CHECK: scf.yield
// CHECK-NEXT: } {ember.parallel}
func.func @parallel_loop(%s: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %zero = ember.constant dense<0> : tensor<i32>
  %four = ember.constant dense<4> : tensor<i32>
  %one = ember.constant dense<1> : tensor<i32>
  %r:2 = ember.while(%zero, %s) {parallel, trip_count = 4 : i64} : tensor<i32>, tensor<4x3xf32> cond {
  ^bb0(%c: tensor<i32>, %v: tensor<4x3xf32>):
    %p = ember.compare LT, %c, %four : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%c: tensor<i32>, %v: tensor<4x3xf32>):
    %n = ember.add %c, %one : tensor<i32>
    %z = ember.constant dense<0> : tensor<i32>
    %row = ember.dynamic_slice %v[%c, %z], sizes = [1, 3] : (tensor<4x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>
    %w = ember.sin %row : tensor<1x3xf32>
    %u = ember.dynamic_update_slice %v[%c, %z], %w : tensor<4x3xf32>, tensor<1x3xf32>, tensor<i32>, tensor<i32>
    ember.yield %n, %u : tensor<i32>, tensor<4x3xf32>
  }
  return %r#1 : tensor<4x3xf32>
}

// -----

// The barrier stays, on converted types (ember-drop-optimization-barriers
// removes it before bufferization).
// CHECK-LABEL: func @optimization_barrier
// CHECK: %[[B:.*]]:2 = ember.optimization_barrier %arg0, %arg1 : tensor<3xi32>, tensor<f32>
// CHECK: return %[[B]]#0
func.func @optimization_barrier(%a: tensor<3xui32>, %b: tensor<f32>) -> tensor<3xui32> {
  %0:2 = ember.optimization_barrier %a, %b : tensor<3xui32>, tensor<f32>
  return %0#0 : tensor<3xui32>
}

// -----

// A small product in a loop whose B comes from outside the loop (a weight in
// a scan step; here transposed, as dz . W^T in the backward pass) packs B
// once, before the loop, for the runtime's small-product kernel (64x64 B in
// strips of 32 columns: 4096 elements; transB = 1), and each product reads
// the packed B (B itself is passed for CPUs without the kernel).
// CHECK-LABEL: func @loop_invariant_rhs
// CHECK: %[[P:.*]] = call @__ember_gemm_pack_0(%arg0) : (tensor<64x64xf32>) -> tensor<4096xf32>
// CHECK: scf.for
// CHECK: call @__ember_gemm_packed_0(%{{.*}}, %arg0, %[[P]]) : (tensor<32x64xf32>, tensor<64x64xf32>, tensor<4096xf32>) -> tensor<32x64xf32>
// CHECK: func.func private @__ember_gemm_pack_0
// CHECK: %[[TB:.*]] = arith.constant 1 : i64
// CHECK: call @ember_gemm_pack_f32(%[[TB]],
// CHECK: func.func private @__ember_gemm_packed_0
// CHECK: call @ember_gemm_packed_f32(
func.func @loop_invariant_rhs(%w: tensor<64x64xf32>, %h0: tensor<32x64xf32>) -> tensor<32x64xf32> {
  %zero = ember.constant dense<0> : tensor<i32>
  %r:2 = ember.while(%zero, %h0) {trip_count = 4 : i64} : tensor<i32>, tensor<32x64xf32> cond {
  ^bb0(%i: tensor<i32>, %h: tensor<32x64xf32>):
    %n = ember.constant dense<4> : tensor<i32>
    %p = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %h: tensor<32x64xf32>):
    %d = ember.dot_general %h, %w, batch = [] x [], contract = [1] x [1] : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
    %one = ember.constant dense<1> : tensor<i32>
    %i1 = ember.add %i, %one : tensor<i32>
    ember.yield %i1, %d : tensor<i32>, tensor<32x64xf32>
  }
  return %r#1 : tensor<32x64xf32>
}

// -----

// With batch dimensions, a transposed B from outside the loop is transposed
// explicitly (loop-invariant-code-motion moves it out of the loop), and the
// GEMM takes it as it is (transB = 0).
// CHECK-LABEL: func @loop_invariant_batched_transposed_rhs
// CHECK: scf.for
// CHECK: %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<2x64x64xf32>) outs(%{{.*}} : tensor<2x64x64xf32>) permutation = [0, 2, 1]
// CHECK: call @__ember_gemm_0(%{{.*}}, %[[T]])
// CHECK: func.func private @__ember_gemm_0
// CHECK: %[[TA:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i64
// CHECK: call @ember_gemm_f32(%[[TA]], %[[TB]],
func.func @loop_invariant_batched_transposed_rhs(%w: tensor<2x64x64xf32>, %h0: tensor<2x32x64xf32>) -> tensor<2x32x64xf32> {
  %zero = ember.constant dense<0> : tensor<i32>
  %r:2 = ember.while(%zero, %h0) {trip_count = 4 : i64} : tensor<i32>, tensor<2x32x64xf32> cond {
  ^bb0(%i: tensor<i32>, %h: tensor<2x32x64xf32>):
    %n = ember.constant dense<4> : tensor<i32>
    %p = ember.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    ember.yield %p : tensor<i1>
  } do {
  ^bb0(%i: tensor<i32>, %h: tensor<2x32x64xf32>):
    %d = ember.dot_general %h, %w, batch = [0] x [0], contract = [2] x [2] : (tensor<2x32x64xf32>, tensor<2x64x64xf32>) -> tensor<2x32x64xf32>
    %one = ember.constant dense<1> : tensor<i32>
    %i1 = ember.add %i, %one : tensor<i32>
    ember.yield %i1, %d : tensor<i32>, tensor<2x32x64xf32>
  }
  return %r#1 : tensor<2x32x64xf32>
}

// -----

// bessel_i0e/i1e: Cephes' two Chebyshev series (in |x|/2 - 2, and in
// 32/|x| - 2 over sqrt(|x|)), selected on |x| <= 8; i1e takes x's sign.
// CHECK-LABEL: func @bessel
// CHECK: linalg.generic
// CHECK: math.absf
// CHECK: math.sqrt
// CHECK: arith.cmpf ole
// CHECK: arith.select
// CHECK-NOT: math.copysign
// CHECK: linalg.generic
// CHECK: math.absf
// CHECK: math.sqrt
// CHECK: arith.cmpf ole
// CHECK: arith.select
// CHECK: math.copysign
func.func @bessel(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = ember.bessel_i0e %x : tensor<4xf32>
  %1 = ember.bessel_i1e %x : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// cholesky and triangular_solve call the runtime through buffer helpers:
// batch, n (and k, lower, transpose_a, unit_diagonal), the operands, the
// result.
// CHECK-LABEL: func @linalg
// CHECK: %[[L:.*]] = call @__ember_cholesky{{.*}}(%{{.*}}) : (tensor<2x3x3xf64>) -> tensor<2x3x3xf64>
// CHECK: call @__ember_triangular_solve{{.*}}(%[[L]], %{{.*}}) : (tensor<2x3x3xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
// CHECK: func.func private @ember_cholesky_f64(i64, i64, index, index)
// CHECK: func.func private @__ember_cholesky
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[THREE:.*]] = arith.constant 3 : i64
// CHECK: call @ember_cholesky_f64(%[[TWO]], %[[THREE]], %{{.*}}, %{{.*}})
// CHECK: func.func private @ember_triangular_solve_f64(i64, i64, i64, i64, i64, i64, index, index, index)
// CHECK: call @ember_triangular_solve_f64
func.func @linalg(%a: tensor<2x3x3xf64>, %b: tensor<2x3x4xf64>) -> tensor<2x3x4xf64> {
  %l = ember.cholesky %a : tensor<2x3x3xf64>
  %x = ember.triangular_solve %l, %b {lower = true, transpose_a = true, unit_diagonal = false} : (tensor<2x3x3xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
  return %x : tensor<2x3x4xf64>
}

// -----

// fft calls the runtime through a buffer helper: batch (the leading
// dimensions' product), kind (2: RFFT), ndims, the lengths (1 past ndims),
// the operand, the result.
// CHECK-LABEL: func @fft
// CHECK: call @__ember_fft{{.*}}(%{{.*}}) : (tensor<2x3x8xf32>) -> tensor<2x3x5xcomplex<f32>>
// CHECK: func.func private @ember_fft_f32(i64, i64, i64, i64, i64, i64, index, index)
// CHECK: func.func private @__ember_fft
// CHECK-DAG: %[[SIX:.*]] = arith.constant 6 : i64
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[EIGHT:.*]] = arith.constant 8 : i64
// CHECK: call @ember_fft_f32(%[[SIX]], %[[TWO]], %[[ONE]], %[[EIGHT]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
func.func @fft(%x: tensor<2x3x8xf32>) -> tensor<2x3x5xcomplex<f32>> {
  %0 = ember.fft %x {fft_type = "RFFT", fft_lengths = array<i64: 8>} : (tensor<2x3x8xf32>) -> tensor<2x3x5xcomplex<f32>>
  return %0 : tensor<2x3x5xcomplex<f32>>
}

// -----

// CHECK-LABEL: func @lu
// CHECK: call @__ember_lu{{.*}}(%{{.*}}) : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3xi32>, tensor<4xi32>)
// CHECK: func.func private @ember_lu_f32(i64, i64, i64, index, index, index, index)
// CHECK: func.func private @__ember_lu
// CHECK: call @ember_lu_f32
func.func @lu(%a: tensor<4x3xf32>) -> tensor<3xi32> {
  %lu, %p, %q = ember.lu %a : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3xi32>, tensor<4xi32>)
  return %p : tensor<3xi32>
}

// -----

// CHECK-LABEL: func @eigh
// CHECK: call @__ember_eigh{{.*}}(%{{.*}}) : (tensor<3x3xcomplex<f64>>) -> (tensor<3x3xcomplex<f64>>, tensor<3xf64>)
// CHECK: func.func private @ember_eigh_c128(i64, i64, index, index, index)
// CHECK: call @ember_eigh_c128
func.func @eigh(%a: tensor<3x3xcomplex<f64>>) -> tensor<3xf64> {
  %v, %w = ember.eigh %a : (tensor<3x3xcomplex<f64>>) -> (tensor<3x3xcomplex<f64>>, tensor<3xf64>)
  return %w : tensor<3xf64>
}

// -----

// CHECK-LABEL: func @qr
// CHECK: call @__ember_qr{{.*}}(%{{.*}}) : (tensor<2x5x3xf32>) -> (tensor<2x5x5xf32>, tensor<2x5x3xf32>)
// CHECK: func.func private @ember_qr_f32(i64, i64, i64, i64, index, index, index)
// CHECK: func.func private @__ember_qr
// CHECK-DAG: arith.constant 2 : i64
// CHECK-DAG: arith.constant 5 : i64
// CHECK-DAG: arith.constant 3 : i64
// CHECK-DAG: arith.constant 1 : i64
// CHECK: call @ember_qr_f32
func.func @qr(%a: tensor<2x5x3xf32>) -> tensor<2x5x3xf32> {
  %q, %r = ember.qr %a {full_matrices = true} : (tensor<2x5x3xf32>) -> (tensor<2x5x5xf32>, tensor<2x5x3xf32>)
  return %r : tensor<2x5x3xf32>
}

// -----

// The suffix is the operand's element type (s is real), and without U and
// V^H the call is the values-only entry.
// CHECK-LABEL: func @svd
// CHECK: call @__ember_svd{{.*}}(%{{.*}}) : (tensor<4x3xcomplex<f32>>) -> (tensor<3xf32>, tensor<4x3xcomplex<f32>>, tensor<3x3xcomplex<f32>>)
// CHECK: call @__ember_svd_values{{.*}}(%{{.*}}) : (tensor<4x3xcomplex<f32>>) -> tensor<3xf32>
// CHECK-DAG: func.func private @ember_svd_c64(i64, i64, i64, i64, index, index, index, index)
// CHECK-DAG: func.func private @ember_svd_values_c64(i64, i64, i64, index, index)
func.func @svd(%a: tensor<4x3xcomplex<f32>>) -> (tensor<3xf32>, tensor<3xf32>) {
  %s, %u, %vh = ember.svd %a {full_matrices = false} : (tensor<4x3xcomplex<f32>>) -> (tensor<3xf32>, tensor<4x3xcomplex<f32>>, tensor<3x3xcomplex<f32>>)
  %s2 = ember.svd %a {full_matrices = false} : (tensor<4x3xcomplex<f32>>) -> tensor<3xf32>
  return %s, %s2 : tensor<3xf32>, tensor<3xf32>
}

// -----

// A `fill` gather's out-of-bounds windows hold JAX's defaults: the least
// signed integer, the largest unsigned one, NaN + 0i.
// CHECK-LABEL: func @gather_fill_defaults
// CHECK: arith.constant -128 : i8
// CHECK: arith.constant -1 : i8
// CHECK: complex.constant [0x7FC00000 : f32, 0.000000e+00 : f32] : complex<f32>
func.func @gather_fill_defaults(%a: tensor<4xi8>, %u: tensor<4xui8>, %c: tensor<4xcomplex<f32>>, %i: tensor<2x1xi32>) -> (tensor<2xi8>, tensor<2xui8>, tensor<2xcomplex<f32>>) {
  %0 = ember.gather %a[%i] {collapsed_slice_dims = array<i64: 0>, index_vector_dim = 1 : i64, mode = #ember<mode fill>, offset_dims = array<i64>, operand_batching_dims = array<i64>, slice_sizes = array<i64: 1>, start_index_map = array<i64: 0>, start_indices_batching_dims = array<i64>} : (tensor<4xi8>, tensor<2x1xi32>) -> tensor<2xi8>
  %1 = ember.gather %u[%i] {collapsed_slice_dims = array<i64: 0>, index_vector_dim = 1 : i64, mode = #ember<mode fill>, offset_dims = array<i64>, operand_batching_dims = array<i64>, slice_sizes = array<i64: 1>, start_index_map = array<i64: 0>, start_indices_batching_dims = array<i64>} : (tensor<4xui8>, tensor<2x1xi32>) -> tensor<2xui8>
  %2 = ember.gather %c[%i] {collapsed_slice_dims = array<i64: 0>, index_vector_dim = 1 : i64, mode = #ember<mode fill>, offset_dims = array<i64>, operand_batching_dims = array<i64>, slice_sizes = array<i64: 1>, start_index_map = array<i64: 0>, start_indices_batching_dims = array<i64>} : (tensor<4xcomplex<f32>>, tensor<2x1xi32>) -> tensor<2xcomplex<f32>>
  return %0, %1, %2 : tensor<2xi8>, tensor<2xui8>, tensor<2xcomplex<f32>>
}

// -----

// A complex square root is built from its parts (no polar-form rounding).
// CHECK-LABEL: func @complex_sqrt
// CHECK-NOT: complex.sqrt
// CHECK: complex.abs
// CHECK: math.sqrt
// CHECK: complex.create
func.func @complex_sqrt(%a: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  %0 = ember.sqrt %a : tensor<4xcomplex<f32>>
  return %0 : tensor<4xcomplex<f32>>
}

// -----

// Negative padding that leaves nothing: an empty tensor (a slice starting
// at the end of the padded tensor was invalid IR).
// CHECK-LABEL: func @pad_to_empty
// CHECK-NOT: tensor.extract_slice
// CHECK: tensor.empty() : tensor<0xf32>
func.func @pad_to_empty(%a: tensor<1xf32>, %p: tensor<f32>) -> tensor<0xf32> {
  %0 = ember.pad %a, %p, low = [-1], high = [0], interior = [0] : (tensor<1xf32>, tensor<f32>) -> tensor<0xf32>
  return %0 : tensor<0xf32>
}

// -----

// Padding an empty tensor (the transpose of x[n:]) inserts nothing: its
// offset, the end of the result, is no valid insert_slice offset.
// CHECK-LABEL: func @pad_from_empty
// CHECK-NOT: tensor.insert_slice
// CHECK: linalg.fill
func.func @pad_from_empty(%a: tensor<0xf32>, %p: tensor<f32>) -> tensor<3xf32> {
  %0 = ember.pad %a, %p, low = [3], high = [0], interior = [0] : (tensor<0xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
