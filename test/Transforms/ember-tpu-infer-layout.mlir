// RUN: ember-opt %s -ember-tpu-infer-layout -split-input-file -verify-diagnostics | FileCheck %s

// Loads in 8-row tiles at the offsets their indices give (a single row in
// rows of one); splats replicated; an elementwise op meets its operands'
// concrete offsets, and a replicated operand is relaid out to them.
// CHECK-LABEL: func.func @k
// CHECK: %[[A:.*]] = vector.load {{.*}} {ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, 0}, (8, 128)>]}
// CHECK: vector.load {{.*}} {ember_tpu.out_layouts = [#ember_tpu.layout<16, {0, 0}, (8, 128)>]}
// CHECK: vector.load {{.*}} {ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, 0}, (1, 128)>]}
// CHECK: vector.load %{{.*}}[%c3, %c0] {ember_tpu.out_layouts = [#ember_tpu.layout<32, {3, 0}, (8, 128)>]}
// CHECK: %[[S:.*]] = arith.constant {ember_tpu.out_layouts = [#ember_tpu.layout<32, {*, *}, (8, 128)>]} dense<2.0
// CHECK: %[[R:.*]] = ember_tpu.relayout %[[S]] : {{.*}} from #ember_tpu.layout<32, {*, *}, (8, 128)> to #ember_tpu.layout<32, {0, 0}, (8, 128)>
// CHECK: arith.mulf %[[A]], %[[R]] {ember_tpu.in_layouts = [#ember_tpu.layout<32, {0, 0}, (8, 128)>, #ember_tpu.layout<32, {0, 0}, (8, 128)>], ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, 0}, (8, 128)>]}
// CHECK: arith.cmpf {{.*}} {ember_tpu.in_layouts = {{.*}}, ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, 0}, (8, 128)>]} : vector<8x128xf32>
func.func @k(%x: memref<8x128xf32, #ember_tpu.memory_space<vmem>>, %y: memref<16x128xbf16, #ember_tpu.memory_space<vmem>>, %z: memref<8x128xf32, #ember_tpu.memory_space<vmem>>) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %a = vector.load %x[%c0, %c0] : memref<8x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>
  %b = vector.load %y[%c0, %c0] : memref<16x128xbf16, #ember_tpu.memory_space<vmem>>, vector<16x128xbf16>
  %row = vector.load %x[%c0, %c0] : memref<8x128xf32, #ember_tpu.memory_space<vmem>>, vector<1x128xf32>
  %off = vector.load %z[%c3, %c0] : memref<8x128xf32, #ember_tpu.memory_space<vmem>>, vector<4x128xf32>
  %two = arith.constant dense<2.0> : vector<8x128xf32>
  %p = arith.mulf %a, %two : vector<8x128xf32>
  %m = arith.cmpf olt, %a, %p : vector<8x128xf32>
  return
}

// -----

// A reduction over the lanes leaves the lanes replicated and the result
// along the sublanes (implicit minor dimension); reshaped to a column and
// broadcast along the lanes it stays lane-replicated, and is relaid out
// where it meets a vector of concrete offsets. Over the sublanes: the
// other way round.
// CHECK-LABEL: func.func @softmax_row
// CHECK: vector.multi_reduction <maximumf>{{.*}}ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, *}, (8, 128), -1>]
// CHECK: vector.shape_cast {{.*}}ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, *}, (8, 128)>]
// CHECK: %[[B:.*]] = vector.broadcast {{.*}}ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, *}, (8, 128)>]
// CHECK: %[[R:.*]] = ember_tpu.relayout %[[B]] : {{.*}} from #ember_tpu.layout<32, {0, *}, (8, 128)> to #ember_tpu.layout<32, {0, 0}, (8, 128)>
// CHECK: arith.subf %{{.*}}, %[[R]]
// CHECK: vector.multi_reduction <add>{{.*}}ember_tpu.out_layouts = [#ember_tpu.layout<32, {*, 0}, (8, 128), -2>]
func.func @softmax_row(%x: memref<8x256xf32, #ember_tpu.memory_space<vmem>>) {
  %c0 = arith.constant 0 : index
  %a = vector.load %x[%c0, %c0] : memref<8x256xf32, #ember_tpu.memory_space<vmem>>, vector<8x256xf32>
  %init = arith.constant dense<0xFF800000> : vector<8xf32>
  %m = vector.multi_reduction <maximumf>, %a, %init [1] : vector<8x256xf32> to vector<8xf32>
  %c = vector.shape_cast %m : vector<8xf32> to vector<8x1xf32>
  %b = vector.broadcast %c : vector<8x1xf32> to vector<8x256xf32>
  %d = arith.subf %a, %b : vector<8x256xf32>
  %zero = arith.constant dense<0.0> : vector<256xf32>
  %s = vector.multi_reduction <add>, %d, %zero [0] : vector<8x256xf32> to vector<256xf32>
  return
}

// -----

// The MXU takes bf16 operands in full registers of 16 rows: loads in
// 8-row tiles are relaid out. iota varies along one direction only.
// CHECK-LABEL: func.func @mxu
// CHECK: %[[L:.*]] = vector.load {{.*}}#ember_tpu.layout<16, {0, 0}, (8, 128)>
// CHECK: %[[R:.*]] = ember_tpu.relayout %[[L]] : {{.*}} from #ember_tpu.layout<16, {0, 0}, (8, 128)> to #ember_tpu.layout<16, {0, 0}, (16, 128)>
// CHECK: ember_tpu.matmul %[[R]], {{.*}}ember_tpu.in_layouts = [#ember_tpu.layout<16, {0, 0}, (16, 128)>, #ember_tpu.layout<16, {0, 0}, (16, 128)>, #ember_tpu.layout<32, {0, 0}, (8, 128)>], ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, 0}, (8, 128)>]
// CHECK: ember_tpu.iota {{.*}}ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, *}, (8, 128)>]
// CHECK: ember_tpu.iota {{.*}}ember_tpu.out_layouts = [#ember_tpu.layout<32, {*, 0}, (8, 128)>]
func.func @mxu(%x: memref<128x128xbf16, #ember_tpu.memory_space<vmem>>) {
  %c0 = arith.constant 0 : index
  %a = vector.load %x[%c0, %c0] : memref<128x128xbf16, #ember_tpu.memory_space<vmem>>, vector<128x128xbf16>
  %acc = arith.constant dense<0.0> : vector<128x128xf32>
  %p = ember_tpu.matmul %a, %a, %acc {dimension_numbers = #ember_tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>} : vector<128x128xbf16>, vector<128x128xbf16>, vector<128x128xf32> -> vector<128x128xf32>
  %r = ember_tpu.iota {dimensions = array<i32: 0>} : vector<8x128xi32>
  %l = ember_tpu.iota {dimensions = array<i32: 1>} : vector<8x128xi32>
  return
}

// -----

// A value carried around a loop that enters replicated takes the offsets
// of what the body yields.
// CHECK-LABEL: func.func @loop
// CHECK: scf.for {{.*}} iter_args(%[[C:.*]] = %{{.*}}) -> (vector<8x128xf32>)
// CHECK: arith.addf %[[C]], {{.*}}ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, 0}, (8, 128)>]
// CHECK: scf.yield {ember_tpu.in_layouts = [#ember_tpu.layout<32, {0, 0}, (8, 128)>]}
// CHECK: ember_tpu.in_layouts = [unit, unit, unit, #ember_tpu.layout<32, {0, 0}, (8, 128)>], ember_tpu.out_layouts = [#ember_tpu.layout<32, {0, 0}, (8, 128)>]
func.func @loop(%x: memref<8x128xf32, #ember_tpu.memory_space<vmem>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = vector.load %x[%c0, %c0] : memref<8x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>
  %zero = arith.constant dense<0.0> : vector<8x128xf32>
  %s = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (vector<8x128xf32>) {
    %n = arith.addf %acc, %a : vector<8x128xf32>
    scf.yield %n : vector<8x128xf32>
  }
  return
}

// -----

// Vectors of 64-bit elements do not fit a TPU's registers.
func.func @wide(%x: memref<8x128xf32, #ember_tpu.memory_space<vmem>>) {
  %c0 = arith.constant 0 : index
  %a = vector.load %x[%c0, %c0] : memref<8x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>
  // expected-error @+1 {{layout_c3}}
  %w = arith.extf %a : vector<8x128xf32> to vector<8x128xf64>
  return
}

// -----

// expected-error @+1 {{layout_c3}}
func.func @wide_buffer(%x: memref<8x128xi64, #ember_tpu.memory_space<vmem>>) {
  return
}
