// RUN: ember-opt %s -ember-to-linalg="runtime-gemm=false cuda-gemm=true" -split-input-file | FileCheck %s
// RUN: not ember-opt %s -ember-to-linalg="cuda-gemm=true" -split-input-file 2>&1 | FileCheck %s --check-prefix=BOTH

// With cuda-gemm, large products call ember_cuda_gemm (cuBLAS on device
// buffers) with the operands' and the result's type codes (Runtime.def:
// 1 float16, 2 bfloat16, 3 float32, 4 float64) before the CPU's flags.

// CHECK-LABEL: func @f32
// CHECK: call @__ember_gemm_0(
// CHECK: func.func private @ember_cuda_gemm(i64, i64, i64, i64, i64, i64, i64, i64, index, index, index)
// CHECK: func.func private @__ember_gemm_0(
// CHECK: memref.alloc() : memref<64x48xf32>
// typeAB = 3, typeC = 3, transA = 0, transB = 1, batch = 1, m = 64, n = 48, k = 32:
// CHECK: arith.constant 3 : i64
// CHECK-NEXT: arith.constant 3 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 1 : i64
// CHECK-NEXT: arith.constant 64 : i64
// CHECK-NEXT: arith.constant 48 : i64
// CHECK-NEXT: arith.constant 32 : i64
// CHECK-NEXT: call @ember_cuda_gemm(
// BOTH: error: ember-to-linalg: runtime-gemm and cuda-gemm are exclusive
func.func @f32(%a: tensor<64x32xf32>, %b: tensor<48x32xf32>) -> tensor<64x48xf32> {
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [1] : (tensor<64x32xf32>, tensor<48x32xf32>) -> tensor<64x48xf32>
  return %0 : tensor<64x48xf32>
}

// -----

// bf16 operands into an f32 result (cuBLAS accumulates in f32), batched.
// CHECK-LABEL: func @bf16_to_f32
// CHECK: func.func private @__ember_gemm_0(
// CHECK: arith.constant 2 : i64
// CHECK-NEXT: arith.constant 3 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 0 : i64
// CHECK-NEXT: arith.constant 4 : i64
// CHECK-NEXT: arith.constant 64 : i64
// CHECK-NEXT: arith.constant 16 : i64
// CHECK-NEXT: arith.constant 32 : i64
// CHECK-NEXT: call @ember_cuda_gemm(
func.func @bf16_to_f32(%x: tensor<4x64x32xbf16>, %y: tensor<4x32x16xbf16>) -> tensor<4x64x16xf32> {
  %0 = ember.dot_general %x, %y, batch = [0] x [0], contract = [2] x [1] : (tensor<4x64x32xbf16>, tensor<4x32x16xbf16>) -> tensor<4x64x16xf32>
  return %0 : tensor<4x64x16xf32>
}

// -----

// Small products, integer and complex products stay loop nests.
// CHECK-LABEL: func @not_gemm
// CHECK-NOT: ember_cuda_gemm
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: ember_cuda_gemm
func.func @not_gemm(%a: tensor<8x8xf32>, %i: tensor<64x64xi32>, %c: tensor<64x64xcomplex<f32>>)
    -> (tensor<8x8xf32>, tensor<64x64xi32>, tensor<64x64xcomplex<f32>>) {
  %0 = ember.dot_general %a, %a, batch = [] x [], contract = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = ember.dot_general %i, %i, batch = [] x [], contract = [1] x [0] : (tensor<64x64xi32>, tensor<64x64xi32>) -> tensor<64x64xi32>
  %2 = ember.dot_general %c, %c, batch = [] x [], contract = [1] x [0] : (tensor<64x64xcomplex<f32>>, tensor<64x64xcomplex<f32>>) -> tensor<64x64xcomplex<f32>>
  return %0, %1, %2 : tensor<8x8xf32>, tensor<64x64xi32>, tensor<64x64xcomplex<f32>>
}
