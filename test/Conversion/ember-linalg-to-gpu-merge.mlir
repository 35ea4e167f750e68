// RUN: ember-opt %s -ember-linalg-to-gpu -canonicalize -split-input-file | FileCheck %s

// Three parameter updates (independent: each reads its own buffers and
// writes its own) become one launch: blocks [0, 4) the first (1024
// points), [4, 5) the second (with block index less 4), [5, 6) the third.

#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @updates
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c6, %{{.*}} = %c1, %{{.*}} = %c1) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK: %[[IN1:.*]] = arith.cmpi ult, %[[B]], %c5
// CHECK: scf.if %[[IN1]] {
// CHECK:   %[[IN0:.*]] = arith.cmpi ult, %[[B]], %c4
// CHECK:   scf.if %[[IN0]] {
// CHECK:     memref.store %{{.*}}, %arg2
// CHECK:   } else {
// CHECK:     %[[B1:.*]] = arith.subi %[[B]], %c4
// CHECK:     arith.muli %[[B1]], %c256
// CHECK:     memref.store %{{.*}}, %arg5
// CHECK: } else {
// CHECK:   %[[B2:.*]] = arith.subi %[[B]], %c5
// CHECK:   memref.store %{{.*}}, %arg8
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @updates(%w: memref<1024xf32>, %gw: memref<1024xf32>, %nw: memref<1024xf32>,
                   %b: memref<200xf32>, %gb: memref<200xf32>, %nb: memref<200xf32>,
                   %c: memref<10xf32>, %gc: memref<10xf32>, %nc: memref<10xf32>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%w, %gw : memref<1024xf32>, memref<1024xf32>) outs(%nw : memref<1024xf32>) {
  ^bb0(%x: f32, %g: f32, %o: f32):
    %r = arith.subf %x, %g : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%b, %gb : memref<200xf32>, memref<200xf32>) outs(%nb : memref<200xf32>) {
  ^bb0(%x: f32, %g: f32, %o: f32):
    %r = arith.subf %x, %g : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%c, %gc : memref<10xf32>, memref<10xf32>) outs(%nc : memref<10xf32>) {
  ^bb0(%x: f32, %g: f32, %o: f32):
    %r = arith.subf %x, %g : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// The second reads what the first writes (through a view of it), the
// third writes what the second reads: three launches. A deallocation
// between two launches also keeps them apart (canonicalize then drops the
// unused buffer).

#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @dependent
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK-LABEL: func @dealloc_between
// CHECK: gpu.launch
// CHECK: gpu.terminator
// CHECK: gpu.launch
func.func @dependent(%a: memref<64xf32>, %t: memref<64xf32>, %o: memref<32xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<64xf32>) outs(%t : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = math.exp %x : f32
    linalg.yield %r : f32
  }
  %v = memref.subview %t[0] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1]>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%v : memref<32xf32, strided<[1]>>) outs(%o : memref<32xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = math.exp %x : f32
    linalg.yield %r : f32
  }
  %w = memref.subview %a[32] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1], offset: 32>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%o : memref<32xf32>) outs(%w : memref<32xf32, strided<[1], offset: 32>>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}
func.func @dealloc_between(%a: memref<64xf32>, %o: memref<64xf32>, %p: memref<64xf32>) {
  %tmp = memref.alloc() : memref<64xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<64xf32>) outs(%o : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  memref.dealloc %tmp : memref<64xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<64xf32>) outs(%p : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

// In a loop, buffers carried by the loop of one type may be the same
// buffer: a write of one and a read of the other stay two launches. A
// carried buffer of another type is distinct: those merge.

#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @carried
// CHECK: scf.for
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1,
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c2,
// CHECK-NOT: gpu.launch
// CHECK: scf.yield
func.func @carried(%x: memref<64xf32>, %y: memref<64xf32>, %z: memref<32xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 iter_args(%a = %x, %b = %y, %c = %z) -> (memref<64xf32>, memref<64xf32>, memref<32xf32>) {
    %t = memref.alloc() : memref<64xf32>
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
        outs(%a : memref<64xf32>) {
    ^bb0(%o: f32):
      %r = arith.addf %o, %o : f32
      linalg.yield %r : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%b : memref<64xf32>) outs(%t : memref<64xf32>) {
    ^bb0(%v: f32, %o: f32):
      linalg.yield %v : f32
    }
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
        outs(%c : memref<32xf32>) {
    ^bb0(%o: f32):
      %r = arith.mulf %o, %o : f32
      linalg.yield %r : f32
    }
    scf.yield %a, %t, %c : memref<64xf32>, memref<64xf32>, memref<32xf32>
  }
  return
}
