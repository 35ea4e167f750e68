// RUN: ember-opt %s -ember-linalg-to-gpu=merge-kernels=false -split-input-file | FileCheck %s
// RUN: ember-opt %s -ember-linalg-to-gpu="vectorize=false merge-kernels=false" -split-input-file | FileCheck %s --check-prefix=NOVEC
// (Merging launches: ember-linalg-to-gpu-merge.mlir.)

// An elementwise generic: one thread per element, 256 threads per block,
// ceil(n / 256) blocks, a bounds check, the body on loaded elements; the
// indices from the flat one in i32 (static sizes, fewer than 2^31 points).

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @elementwise
// CHECK: %[[G:.*]] = arith.ceildivui %[[N:.*]], %c256
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[G]], {{.*}} threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK: %[[BX:.*]] = arith.muli %[[B]], %c256
// CHECK: %[[I:.*]] = arith.addi %[[BX]], %[[TX]]
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[I]], %[[N]]
// CHECK: scf.if %[[IN]]
// CHECK: %[[I32:.*]] = arith.index_castui %[[I]] : index to i32
// CHECK: %[[R32:.*]] = arith.remui %[[I32]], %c256_i32 : i32
// CHECK: %[[Q32:.*]] = arith.divui %[[I32]], %c256_i32 : i32
// CHECK: %[[R:.*]] = arith.index_castui %[[R32]] : i32 to index
// CHECK: %[[Q:.*]] = arith.index_castui %[[Q32]] : i32 to index
// CHECK: memref.load %arg0[%[[Q]], %[[R]]]
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %arg1[%[[Q]], %[[R]]]
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
module {
  func.func @elementwise(%a: memref<8x256xf32>, %o: memref<8x256xf32>) {
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%a : memref<8x256xf32>) outs(%o : memref<8x256xf32>) {
    ^bb0(%x: f32, %y: f32):
      %e = math.exp %x : f32
      linalg.yield %e : f32
    }
    return
  }
}

// -----

// A large elementwise generic (2^19 points): each thread computes 4 points
// 256 apart, loading all before storing any; a block whose 1024 points are
// all in range runs unguarded, otherwise each point is guarded.

#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @unrolled
// CHECK: %[[G:.*]] = arith.ceildivui %{{.*}}, %c1024
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[G]], {{.*}} threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK: %[[S:.*]] = arith.muli %[[B]], %c1024
// CHECK: %[[I0:.*]] = arith.addi %[[S]], %[[TX]]
// CHECK: %[[E:.*]] = arith.addi %[[S]], %c1024
// CHECK: %[[W:.*]] = arith.cmpi ule, %[[E]], %{{.*}}
// CHECK: scf.if %[[W]] {
// CHECK:   %[[X0:.*]] = memref.load %arg0[%[[I0]]]
// CHECK:   %[[V0:.*]] = math.exp %[[X0]]
// CHECK:   %[[I1:.*]] = arith.addi %[[I0]], %c256
// CHECK:   %[[X1:.*]] = memref.load %arg0[%[[I1]]]
// CHECK:   math.exp %[[X1]]
// CHECK:   memref.load
// CHECK:   memref.load
// CHECK-NOT: memref.load
// CHECK:   memref.store %[[V0]], %arg1[%[[I0]]]
// CHECK:   memref.store
// CHECK:   memref.store
// CHECK:   memref.store
// CHECK: } else {
// CHECK:   arith.cmpi ult, %[[I0]]
// CHECK:   scf.if
// CHECK:     memref.load %arg0[%[[I0]]]
// CHECK:     memref.store
// CHECK-COUNT-3: scf.if
module {
  func.func @unrolled(%a: memref<524288xf32>, %o: memref<524288xf32>) {
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%a : memref<524288xf32>) outs(%o : memref<524288xf32>) {
    ^bb0(%x: f32, %y: f32):
      %e = math.exp %x : f32
      linalg.yield %e : f32
    }
    return
  }
}

// -----

// A large elementwise generic whose operands are contiguous along the
// innermost dimension (a multiple of 4): each thread moves 4 contiguous
// points with one aligned vector load or store per operand; an input
// constant along the innermost dimension is loaded once. The kernel checks
// the base addresses and otherwise takes the scalar path of @unrolled. With
// vectorize=false, or an innermost size not a multiple of 4, only that path.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func @vectorized
// CHECK: gpu.launch
// CHECK: %[[PA:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK: arith.remui %[[PA]], %c16
// CHECK: %[[PO:.*]] = memref.extract_aligned_pointer_as_index %arg2
// CHECK: arith.remui %[[PO]], %c16
// CHECK: scf.if %[[OK:.*]] {
// CHECK:   %[[F:.*]] = arith.muli %{{.*}}, %c4
// CHECK:   %[[V:.*]] = vector.load %arg0[%[[I:.*]], %[[J:.*]]] {alignment = 16 : i64} : memref<512x256xf32>, vector<4xf32>
// CHECK:   %[[X0:.*]] = vector.extract %[[V]][0]
// CHECK:   %[[R:.*]] = memref.load %arg1[%[[I]]]
// CHECK:   %[[P0:.*]] = arith.mulf %[[X0]], %[[R]]
// CHECK:   %[[W:.*]] = vector.from_elements %[[P0]], %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:   vector.store %[[W]], %arg2[%[[I]], %[[J]]] {alignment = 16 : i64}
// CHECK: } else {
// CHECK:   arith.muli %{{.*}}, %c1024
// CHECK-NOT: vector.
// CHECK: gpu.terminator
// CHECK-LABEL: func @not_multiple_of_4
// CHECK-NOT: vector.load
// CHECK: return
// NOVEC-LABEL: func @vectorized
// NOVEC-NOT: vector.
// NOVEC: return
module {
  func.func @vectorized(%a: memref<512x256xf32>, %r: memref<512xf32>, %o: memref<512x256xf32>) {
    linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
        ins(%a, %r : memref<512x256xf32>, memref<512xf32>) outs(%o : memref<512x256xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %e = arith.mulf %x, %y : f32
      linalg.yield %e : f32
    }
    return
  }
  func.func @not_multiple_of_4(%a: memref<65538x3xf32>, %o: memref<65538x3xf32>) {
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%a : memref<65538x3xf32>) outs(%o : memref<65538x3xf32>) {
    ^bb0(%x: f32, %z: f32):
      %e = math.exp %x : f32
      linalg.yield %e : f32
    }
    return
  }
}

// -----

// A sum over 1024 elements per output: one block per output, threads stride
// by 256 from their id in four independent accumulators (rounds of 1024
// elements, then the rest), which are combined; gpu.all_reduce combines the
// threads', thread 0 adds the initial value and stores.

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func @row_sum
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %{{.*}}, {{.*}} threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ACC:.*]]:4 = scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A0:.*]] = %[[Z]], %[[A1:.*]] = %[[Z]], %[[A2:.*]] = %[[Z]], %[[A3:.*]] = %[[Z]]) -> (f32, f32, f32, f32)
// CHECK:   memref.load %arg0[%[[B]], %[[R]]]
// CHECK:   arith.addf %{{.*}}, %[[A0]]
// CHECK:   %[[R1:.*]] = arith.addi %[[R]], %c256
// CHECK:   memref.load %arg0[%[[B]], %[[R1]]]
// CHECK:   arith.addf %{{.*}}, %[[A1]]
// CHECK: %[[REST:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[ACC]]#0) -> (f32)
// CHECK: %[[S1:.*]] = arith.addf %[[ACC]]#1, %[[REST]]
// CHECK: %[[S2:.*]] = arith.addf %[[ACC]]#2, %[[S1]]
// CHECK: %[[S3:.*]] = arith.addf %[[ACC]]#3, %[[S2]]
// CHECK: %[[TOT:.*]] = gpu.all_reduce add %[[S3]] uniform
// CHECK: scf.if
// CHECK: %[[OLD:.*]] = memref.load %arg1[%[[B]]]
// CHECK: %[[NEW:.*]] = arith.addf %[[TOT]], %[[OLD]]
// CHECK: memref.store %[[NEW]], %arg1[%[[B]]]
module {
  func.func @row_sum(%a: memref<16x1024xf32>, %o: memref<16xf32>) {
    linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
        ins(%a : memref<16x1024xf32>) outs(%o : memref<16xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
    return
  }
}

// -----

// A fill of the output just before a reduction (nothing with memory
// effects between) is folded into it: no kernel for the fill, and thread 0
// combines the total with the fill's value instead of loading the output.
// A fill the reduction does not directly follow stays a kernel.

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @fill_then_sum
// CHECK-SAME: (%{{.*}}: memref<16x1024xf32>, %{{.*}}: memref<16xf32>, %[[INIT:.*]]: f32)
// CHECK: gpu.launch
// CHECK: %[[TOT:.*]] = gpu.all_reduce add
// CHECK: scf.if
// CHECK-NOT: memref.load
// CHECK: %[[NEW:.*]] = arith.addf %[[TOT]], %[[INIT]]
// CHECK: memref.store %[[NEW]], %arg1
// CHECK-NOT: gpu.launch
// CHECK: return
// CHECK-LABEL: func @fill_then_other_write
// CHECK: gpu.launch
// CHECK: memref.store %cst
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK: gpu.all_reduce add
// CHECK: memref.load %arg1
module {
  func.func @fill_then_sum(%a: memref<16x1024xf32>, %o: memref<16xf32>, %init: f32) {
    %c = arith.constant 1.0 : f32
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
        outs(%o : memref<16xf32>) {
    ^bb0(%y: f32):
      linalg.yield %init : f32
    }
    %unused = arith.addf %c, %c : f32
    linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
        ins(%a : memref<16x1024xf32>) outs(%o : memref<16xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
    return
  }
  func.func @fill_then_other_write(%a: memref<16x1024xf32>, %o: memref<16xf32>, %b: memref<16xf32>) {
    %cst = arith.constant 0.0 : f32
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
        outs(%o : memref<16xf32>) {
    ^bb0(%y: f32):
      linalg.yield %cst : f32
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%b : memref<16xf32>) outs(%o : memref<16xf32>) {
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
        ins(%a : memref<16x1024xf32>) outs(%o : memref<16xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
    return
  }
}

// -----

// Few outputs (4) over many elements (2^20 each): each output's elements
// are split over 256 blocks (1024 blocks in all) writing partial results,
// and a block per output combines its 256 partials with the initial value.

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func @split_max
// CHECK: %[[P:.*]] = gpu.alloc () : memref<1024xf32>
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c1024
// CHECK:   %[[PT:.*]] = arith.divui %[[B]], %c256
// CHECK:   %[[PART:.*]] = arith.remui %[[B]], %c256
// CHECK:   arith.muli %[[PART]], %c4096
// CHECK:   memref.load %arg0[%[[PT]], %{{.*}}]
// CHECK:   arith.maxnumf
// CHECK:   %[[T:.*]] = gpu.all_reduce maxnumf %{{.*}} uniform
// CHECK:   scf.if
// CHECK:     memref.store %[[T]], %[[P]][%[[B]]]
// CHECK: gpu.launch blocks(%[[B2:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c4
// CHECK:   %[[BASE:.*]] = arith.muli %[[B2]], %c256
// CHECK:   scf.for %[[I:.*]] = %{{.*}} to %c256{{.*}} step %c256
// CHECK:     %[[J:.*]] = arith.addi %[[BASE]], %[[I]]
// CHECK:     memref.load %[[P]][%[[J]]]
// CHECK:   gpu.all_reduce maxnumf
// CHECK:   memref.load %arg1[%[[B2]]]
// CHECK:   memref.store %{{.*}}, %arg1[%[[B2]]]
// CHECK: gpu.dealloc %[[P]]
module {
  func.func @split_max(%a: memref<4x1048576xf32>, %o: memref<4xf32>) {
    linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
        ins(%a : memref<4x1048576xf32>) outs(%o : memref<4xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.maxnumf %x, %acc : f32
      linalg.yield %s : f32
    }
    return
  }
}

// -----

// A short reduction (4 elements per output), and one with two outputs (an
// argmax): one thread per output, a serial loop seeded with the outputs.

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func @short_and_multi_output
// CHECK: gpu.launch
// CHECK-NOT: gpu.all_reduce
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32)
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK-NOT: gpu.all_reduce
// CHECK: scf.for %[[K:.*]] = {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, i32)
// CHECK: arith.index_cast %[[K]] : index to i32
// CHECK-NOT: linalg.index
module {
  func.func @short_and_multi_output(%a: memref<16x4xf32>, %o: memref<16xf32>,
                                    %b: memref<16x1024xf32>, %m: memref<16xf32>, %i: memref<16xi32>) {
    linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
        ins(%a : memref<16x4xf32>) outs(%o : memref<16xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.maximumf %x, %acc : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["parallel", "reduction"]}
        ins(%b : memref<16x1024xf32>) outs(%m, %i : memref<16xf32>, memref<16xi32>) {
    ^bb0(%x: f32, %best: f32, %at: i32):
      %k = linalg.index 1 : index
      %ki = arith.index_cast %k : index to i32
      %gt = arith.cmpf ogt, %x, %best : f32
      %nb = arith.select %gt, %x, %best : f32
      %na = arith.select %gt, %ki, %at : i32
      linalg.yield %nb, %na : f32, i32
    }
    return
  }
}

// -----

// Host buffers become device buffers; a constant is copied to the device at
// entry and freed at the return; a scalar host code reads (a loop
// predicate) comes back through a one-thread kernel and a copy.

// CHECK-LABEL: func @host_side
// CHECK: %[[HOST:.*]] = memref.get_global @cst
// CHECK: %[[DEV:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: gpu.memcpy %[[DEV]], %[[HOST]]
// CHECK: %[[BUF:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: gpu.memcpy %[[BUF]], %[[DEV]]
// CHECK: %[[TMP:.*]] = gpu.alloc () : memref<1xi8>
// CHECK: gpu.launch
// CHECK:   memref.load %arg0[]
// CHECK:   memref.store %{{.*}}, %[[TMP]]
// CHECK: %[[STACK:.*]] = memref.alloca() : memref<1xi8>
// CHECK: gpu.memcpy %[[STACK]], %[[TMP]]
// CHECK: gpu.dealloc %[[TMP]]
// CHECK: memref.load %[[STACK]]
// CHECK: gpu.dealloc %[[BUF]]
// CHECK: gpu.dealloc %[[DEV]]
// CHECK-NEXT: return
module {
  memref.global "private" constant @cst : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  func.func @host_side(%p: memref<i8>) -> i8 {
    %c = memref.get_global @cst : memref<4xf32>
    %b = memref.alloc() : memref<4xf32>
    memref.copy %c, %b : memref<4xf32> to memref<4xf32>
    %v = memref.load %p[] : memref<i8>
    memref.dealloc %b : memref<4xf32>
    return %v : i8
  }
}

// -----

// A scalar host code writes goes to the device through a copy and a
// one-thread kernel.

// CHECK-LABEL: func @host_store
// CHECK: %[[STACK:.*]] = memref.alloca() : memref<1xf32>
// CHECK: memref.store %arg1, %[[STACK]]
// CHECK: %[[TMP:.*]] = gpu.alloc () : memref<1xf32>
// CHECK: gpu.memcpy %[[TMP]], %[[STACK]]
// CHECK: gpu.launch
// CHECK:   %[[X:.*]] = memref.load %[[TMP]]
// CHECK:   memref.store %[[X]], %arg0[%{{.*}}]
module {
  func.func @host_store(%m: memref<3xf32>, %v: f32) {
    %c1 = arith.constant 1 : index
    memref.store %v, %m[%c1] : memref<3xf32>
    return
  }
}

// -----

// A gather: the body's own loads (from tensor.extract) stay in the kernel;
// only host code's loads go through copies.

#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @gather
// CHECK: gpu.launch
// CHECK: %[[I:.*]] = memref.load %arg1[
// CHECK: %[[J:.*]] = arith.index_cast %[[I]]
// CHECK: memref.load %arg0[%[[J]]]
// CHECK: gpu.terminator
// CHECK-NOT: gpu.memcpy
module {
  func.func @gather(%t: memref<64xf32>, %idx: memref<8xi32>, %o: memref<8xf32>) {
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%idx : memref<8xi32>) outs(%o : memref<8xf32>) {
    ^bb0(%i: i32, %y: f32):
      %j = arith.index_cast %i : i32 to index
      %v = memref.load %t[%j] : memref<64xf32>
      linalg.yield %v : f32
    }
    return
  }
}

// -----

// A host loop of scalar work on buffers (as a scatter lowers) runs whole in
// one device thread; a loop that also runs a generic stays on the host.

#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @scatter_loop
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %c1{{.*}}) threads({{.*}}) in (%{{.*}} = %c1{{.*}}) {
// CHECK-NEXT: scf.for
// CHECK: memref.load %arg1
// CHECK: memref.load %arg0
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: gpu.memcpy
// CHECK: scf.for
// CHECK: gpu.launch
// CHECK: arith.addf
module {
  func.func @scatter_loop(%o: memref<64xf32>, %idx: memref<8xi32>, %u: memref<8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    scf.for %i = %c0 to %c8 step %c1 {
      %j32 = memref.load %idx[%i] : memref<8xi32>
      %j = arith.index_cast %j32 : i32 to index
      %a = memref.load %o[%j] : memref<64xf32>
      %b = memref.load %u[%i] : memref<8xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %o[%j] : memref<64xf32>
    }
    scf.for %i = %c0 to %c8 step %c1 {
      linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
          outs(%u : memref<8xf32>) {
      ^bb0(%y: f32):
        %z = arith.addf %y, %y : f32
        linalg.yield %z : f32
      }
    }
    return
  }
}

// -----

// An empty iteration space launches nothing; one known only at run time is
// guarded (CUDA rejects an empty grid).

#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @empty
// CHECK-NOT: gpu.launch
// CHECK: return
// CHECK-LABEL: func @dynamic
// CHECK: %[[N:.*]] = memref.dim %arg0
// CHECK: %[[ANY:.*]] = arith.cmpi ugt, %[[N]], %c0
// CHECK: scf.if %[[ANY]] {
// CHECK: gpu.launch
module {
  func.func @empty(%a: memref<0xf32>) {
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
        outs(%a : memref<0xf32>) {
    ^bb0(%y: f32):
      %z = arith.addf %y, %y : f32
      linalg.yield %z : f32
    }
    return
  }
  func.func @dynamic(%a: memref<?xf32>) {
    linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]}
        outs(%a : memref<?xf32>) {
    ^bb0(%y: f32):
      %z = arith.addf %y, %y : f32
      linalg.yield %z : f32
    }
    return
  }
}

// -----

// A host callback on device buffers: the call goes to the runtime's
// ember_cuda_host_callback (which stages the buffers through host memory);
// its signature record and address lists stay in host memory (no device
// copy of the global, no device allocation for the allocas), while the
// result buffer is a device allocation.
memref.global "private" constant @sig : memref<7xi64> = dense<[0, 1, 1, 3, 1, 4, 3]>
func.func private @ember_host_callback(memref<?xi64>, memref<?xindex>, memref<?xindex>)
// CHECK-LABEL: func @host_callback
// CHECK: %[[SIG:.*]] = memref.get_global @sig
// CHECK-NOT: gpu.memcpy
// CHECK: %[[OUT:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: memref.alloca() : memref<1xindex>
// CHECK-NOT: gpu.
// CHECK: call @ember_cuda_host_callback(
// CHECK: func.func private @ember_cuda_host_callback(memref<?xi64>, memref<?xindex>, memref<?xindex>)
func.func @host_callback(%x: memref<4xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %sig = memref.get_global @sig : memref<7xi64>
  %out = memref.alloc() : memref<4xf32>
  %px = memref.extract_aligned_pointer_as_index %x : memref<4xf32> -> index
  %po = memref.extract_aligned_pointer_as_index %out : memref<4xf32> -> index
  %args = memref.alloca() : memref<1xindex>
  memref.store %px, %args[%c0] : memref<1xindex>
  %res = memref.alloca() : memref<1xindex>
  memref.store %po, %res[%c0] : memref<1xindex>
  %s = memref.cast %sig : memref<7xi64> to memref<?xi64>
  %a = memref.cast %args : memref<1xindex> to memref<?xindex>
  %r = memref.cast %res : memref<1xindex> to memref<?xindex>
  func.call @ember_host_callback(%s, %a, %r) : (memref<?xi64>, memref<?xindex>, memref<?xindex>) -> ()
  return %out : memref<4xf32>
}

// -----

// A CPU runtime entry (LAPACK, the run-time stacks) called from host code
// on device buffers: each buffer is staged through a host buffer (copied
// in before the call, back after it), and the call gets host addresses.
func.func private @ember_cholesky_f32(i64, i64, index, index)
// CHECK-LABEL: func @staged_call
// CHECK: %[[HA:.*]] = memref.alloc() {ember.host} : memref<3x3xf32>
// CHECK: gpu.memcpy %[[HA]], %arg0
// CHECK: %[[PA:.*]] = memref.extract_aligned_pointer_as_index %[[HA]]
// CHECK: %[[HB:.*]] = memref.alloc() {ember.host} : memref<3x3xf32>
// CHECK: gpu.memcpy %[[HB]], %arg1
// CHECK: %[[PB:.*]] = memref.extract_aligned_pointer_as_index %[[HB]]
// CHECK: call @ember_cholesky_f32(%{{.*}}, %{{.*}}, %[[PA]], %[[PB]])
// CHECK: gpu.memcpy %arg0, %[[HA]]
// CHECK: memref.dealloc %[[HA]] {ember.host}
// CHECK: gpu.memcpy %arg1, %[[HB]]
// CHECK: memref.dealloc %[[HB]] {ember.host}
func.func @staged_call(%a: memref<3x3xf32>, %b: memref<3x3xf32>) {
  %c1 = arith.constant 1 : i64
  %c3 = arith.constant 3 : i64
  %pa = memref.extract_aligned_pointer_as_index %a : memref<3x3xf32> -> index
  %pb = memref.extract_aligned_pointer_as_index %b : memref<3x3xf32> -> index
  func.call @ember_cholesky_f32(%c1, %c3, %pa, %pb) : (i64, i64, index, index) -> ()
  return
}

// -----

// Buffer deallocation's bookkeeping (pointer lists, ownership flags and the
// helper that compares them) stays on the host; a device buffer passed to
// the helper makes it (and the buffers passed with it) device code.
// CHECK-LABEL: func private @helper
// CHECK-SAME: ember.host
// CHECK-NOT: gpu.launch
// CHECK: return
func.func private @helper(%p: memref<?xindex>, %f: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %x = memref.load %p[%c0] : memref<?xindex>
  %b = arith.index_cast %x : index to i8
  memref.store %b, %f[%c0] : memref<?xi8>
  return
}
// CHECK-LABEL: func @bookkeeping
// CHECK: %[[P:.*]] = memref.alloc() {ember.host} : memref<2xindex>
// CHECK: %[[F:.*]] = memref.alloc() {ember.host} : memref<2xi8>
// CHECK-NOT: gpu.memcpy
// CHECK-NOT: gpu.launch
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: call @helper
// CHECK: memref.load %[[F]]
// CHECK: memref.dealloc %[[P]] {ember.host}
func.func @bookkeeping(%a: memref<4xf32>) -> i8 {
  %c0 = arith.constant 0 : index
  %p = memref.alloc() : memref<2xindex>
  %f = memref.alloc() : memref<2xi8>
  %i = memref.extract_aligned_pointer_as_index %a : memref<4xf32> -> index
  memref.store %i, %p[%c0] : memref<2xindex>
  %pc = memref.cast %p : memref<2xindex> to memref<?xindex>
  %fc = memref.cast %f : memref<2xi8> to memref<?xi8>
  call @helper(%pc, %fc) : (memref<?xindex>, memref<?xi8>) -> ()
  %r = memref.load %f[%c0] : memref<2xi8>
  memref.dealloc %p : memref<2xindex>
  memref.dealloc %f : memref<2xi8>
  return %r : i8
}

// -----

// CHECK-LABEL: func private @helper
// CHECK-NOT: ember.host
// CHECK: gpu.launch
func.func private @helper(%p: memref<?xindex>, %f: memref<?xi8>) {
  %c0 = arith.constant 0 : index
  %x = memref.load %p[%c0] : memref<?xindex>
  %b = arith.index_cast %x : index to i8
  memref.store %b, %f[%c0] : memref<?xi8>
  return
}
// CHECK-LABEL: func @device_flags
// CHECK: gpu.alloc () : memref<2xindex>
// CHECK-NOT: ember.host
func.func @device_flags(%f: memref<2xi8>) {
  %p = memref.alloc() : memref<2xindex>
  %pc = memref.cast %p : memref<2xindex> to memref<?xindex>
  %fc = memref.cast %f : memref<2xi8> to memref<?xi8>
  call @helper(%pc, %fc) : (memref<?xindex>, memref<?xi8>) -> ()
  memref.dealloc %p : memref<2xindex>
  return
}
