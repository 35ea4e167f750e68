// RUN: ember-opt %s -ember-linalg-to-gpu -split-input-file -verify-diagnostics

func.func private @ember_gemm_f32(i64, i64, i64, i64, i64, i64, index, index, index)
func.func @runtime_call(%a: index) {
  %c = arith.constant 0 : i64
  // expected-error @+1 {{this needs the CPU runtime entry point 'ember_gemm_f32', which the cuda target does not provide yet}}
  func.call @ember_gemm_f32(%c, %c, %c, %c, %c, %c, %a, %a, %a) : (i64, i64, i64, i64, i64, i64, index, index, index) -> ()
  return
}

// -----

func.func @named_op(%a: memref<4xf32>, %b: memref<4xf32>) {
  // expected-error @+1 {{expected linalg.generic (run linalg-generalize-named-ops first)}}
  linalg.copy ins(%a : memref<4xf32>) outs(%b : memref<4xf32>)
  return
}

// -----

func.func @on_tensors(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected buffers after bufferization}}
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%a : tensor<4xf32>) {
  ^bb0(%x: f32):
    linalg.yield %x : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The runtime's entries on device buffers (ember_cuda_*) stay host calls.
func.func private @ember_cuda_gemm(i64, i64, i64, i64, i64, i64, i64, i64, index, index, index)
func.func @device_runtime_call(%a: index) {
  %c = arith.constant 0 : i64
  func.call @ember_cuda_gemm(%c, %c, %c, %c, %c, %c, %c, %c, %a, %a, %a) : (i64, i64, i64, i64, i64, i64, i64, i64, index, index, index) -> ()
  return
}
