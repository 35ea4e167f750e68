// RUN: ember-opt %s -ember-scalarize-loop-counters -canonicalize | FileCheck %s

#id = affine_map<() -> ()>

// A counter (start 0, +1) carried as i32; its uses read the scalar.
// CHECK-LABEL: func @counter
// CHECK: %[[R:.*]]:2 = scf.for %{{.*}} = %{{.*}} iter_args(%[[K:.*]] = %c0_i32, %[[A:.*]] = %{{.*}}) -> (i32, tensor<8xf32>)
// CHECK-NOT: tensor.extract
// CHECK:   %[[I:.*]] = arith.index_cast %[[K]] : i32 to index
// CHECK:   tensor.insert %{{.*}} into %[[A]][%[[I]]]
// CHECK:   %[[N:.*]] = arith.addi %[[K]], %c1_i32 : i32
// CHECK:   scf.yield %[[N]], %{{.*}} : i32, tensor<8xf32>
// CHECK: %[[T:.*]] = tensor.from_elements %[[R]]#0 : tensor<i32>
// CHECK: return %[[T]], %[[R]]#1
func.func @counter(%a: tensor<8xf32>) -> (tensor<i32>, tensor<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant dense<0> : tensor<i32>
  %one = arith.constant dense<1> : tensor<i32>
  %f = arith.constant 2.0 : f32
  %r:2 = scf.for %i = %c0 to %c8 step %c1 iter_args(%k = %zero, %acc = %a) -> (tensor<i32>, tensor<8xf32>) {
    %x = tensor.extract %k[] : tensor<i32>
    %xi = arith.index_cast %x : i32 to index
    %acc2 = tensor.insert %f into %acc[%xi] : tensor<8xf32>
    %e = tensor.empty() : tensor<i32>
    %n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = []}
        ins(%k, %one : tensor<i32>, tensor<i32>) outs(%e : tensor<i32>) {
    ^bb0(%p: i32, %q: i32, %o: i32):
      %s = arith.addi %p, %q : i32
      linalg.yield %s : i32
    } -> tensor<i32>
    scf.yield %n, %acc2 : tensor<i32>, tensor<8xf32>
  }
  return %r#0, %r#1 : tensor<i32>, tensor<8xf32>
}

// A carried value whose next value reads a tensor element by element stays
// a tensor, and so does one that depends on it.
// CHECK-LABEL: func @data_dependent
// CHECK: scf.for {{.*}} -> (tensor<i32>, tensor<i32>)
func.func @data_dependent(%t: tensor<8xi32>) -> (tensor<i32>, tensor<i32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant dense<0> : tensor<i32>
  %r:2 = scf.for %i = %c0 to %c8 step %c1 iter_args(%k = %zero, %j = %zero) -> (tensor<i32>, tensor<i32>) {
    %s1 = tensor.extract_slice %t[%i] [1] [1] : tensor<8xi32> to tensor<1xi32>
    %kv = tensor.collapse_shape %s1 [] : tensor<1xi32> into tensor<i32>
    %e = tensor.empty() : tensor<i32>
    %n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = []}
        ins(%k, %kv : tensor<i32>, tensor<i32>) outs(%e : tensor<i32>) {
    ^bb0(%p: i32, %q: i32, %o: i32):
      %s = arith.addi %p, %q : i32
      linalg.yield %s : i32
    } -> tensor<i32>
    %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = []}
        ins(%j, %n : tensor<i32>, tensor<i32>) outs(%e : tensor<i32>) {
    ^bb0(%p: i32, %q: i32, %o: i32):
      %s = arith.addi %p, %q : i32
      linalg.yield %s : i32
    } -> tensor<i32>
    scf.yield %n, %m : tensor<i32>, tensor<i32>
  }
  return %r#0, %r#1 : tensor<i32>, tensor<i32>
}

// An extract of a tensor computed from constants becomes the computation.
// CHECK-LABEL: func @extract_of_constants
// CHECK-NOT: linalg.generic
// CHECK-NOT: tensor.extract
// CHECK: %[[S:.*]] = arith.subi %arg0, %c1_i64
// CHECK: return %[[S]]
func.func @extract_of_constants(%x: i64) -> i64 {
  %one = arith.constant dense<1> : tensor<i64>
  %t = tensor.from_elements %x : tensor<i64>
  %e = tensor.empty() : tensor<i64>
  %n = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = []}
      ins(%t, %one : tensor<i64>, tensor<i64>) outs(%e : tensor<i64>) {
  ^bb0(%p: i64, %q: i64, %o: i64):
    %s = arith.subi %p, %q : i64
    linalg.yield %s : i64
  } -> tensor<i64>
  %r = tensor.extract %n[] : tensor<i64>
  return %r : i64
}
