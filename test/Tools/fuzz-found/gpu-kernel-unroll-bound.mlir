// RUN: ember-opt %s --ember-gpu-kernel | FileCheck %s
// Found by ember-opt-fuzz (#21, `make fuzz-opt`, a timeout): the
// `ember-gpu-kernel` pipeline unrolled every loop fully, so a loop that is
// not a kernel's per-thread loop (65538 iterations here) grew into hundreds
// of thousands of ops. Loops of more than 256 iterations stay loops; the
// short inner loop is still unrolled.

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @long_loop
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK-COUNT-3: math.exp
// CHECK-NOT: math.exp
// CHECK: return
func.func @long_loop(%a: memref<65538x3xf32>, %o: memref<65538x3xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<65538x3xf32>) outs(%o : memref<65538x3xf32>) {
  ^bb0(%x: f32, %z: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}
