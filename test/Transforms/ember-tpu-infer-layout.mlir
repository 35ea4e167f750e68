// RUN: ember-opt %s -ember-tpu-infer-layout -split-input-file -verify-diagnostics | FileCheck %s

// Vector-register tiling by element width: 32-bit (8, 128), 16-bit packed
// (16, 128), masks one 32-bit lane each, rank-1 vectors one sublane.
// CHECK-LABEL: func.func @k
// CHECK: vector.load {{.*}} {ember_tpu.out_layouts = [#ember_tpu.layout<32, (8, 128)>]}
// CHECK: vector.load {{.*}} {ember_tpu.out_layouts = [#ember_tpu.layout<16, (16, 128)>]}
// CHECK: arith.cmpf {{.*}} {ember_tpu.out_layouts = [#ember_tpu.layout<1, (8, 128)>]}
// CHECK: vector.multi_reduction {{.*}} {ember_tpu.out_layouts = [#ember_tpu.layout<32, (1, 128)>]}
func.func @k(%x: memref<8x128xf32, #ember_tpu.memory_space<vmem>>, %y: memref<16x128xbf16, #ember_tpu.memory_space<vmem>>) {
  %c0 = arith.constant 0 : index
  %a = vector.load %x[%c0, %c0] : memref<8x128xf32, #ember_tpu.memory_space<vmem>>, vector<8x128xf32>
  %b = vector.load %y[%c0, %c0] : memref<16x128xbf16, #ember_tpu.memory_space<vmem>>, vector<16x128xbf16>
  %m = arith.cmpf olt, %a, %a : vector<8x128xf32>
  %z = arith.constant dense<0.0> : vector<128xf32>
  %r = vector.multi_reduction <add>, %a, %z [0] : vector<8x128xf32> to vector<128xf32>
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
