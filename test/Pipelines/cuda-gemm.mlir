// RUN: ember-opt %s --ember-cuda-gpu | FileCheck %s
// RUN: ember-opt %s --ember-cuda-gpu="cublas=false" | FileCheck %s --check-prefix=KERNELS

// The cuda target's products: by default a host call of ember_cuda_gemm on
// the device buffers (ember-linalg-to-gpu lets host code call the runtime's
// ember_cuda_* entries, which take device addresses): the operands' and the
// result's buffers are passed as they are, row-major, with no run-time
// layout check (whose ownership records would be host stores into device
// memory) and no kernel; with cublas=false a kernel.

// CHECK-LABEL: func.func @main
// CHECK-NEXT: call @__ember_gemm_0(%arg0, %arg1, %arg2)
// CHECK-NEXT: return
// CHECK: func.func private @__ember_gemm_0(%[[A:.*]]: memref<128x64xf32>, %[[B:.*]]: memref<64x96xf32>, %[[C:.*]]: memref<128x96xf32>)
// CHECK-NOT: gpu.
// CHECK: %[[PA:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: %[[PB:.*]] = memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: %[[PC:.*]] = memref.extract_aligned_pointer_as_index %[[C]]
// CHECK: call @ember_cuda_gemm({{.*}}, %[[PA]], %[[PB]], %[[PC]])
// CHECK-NOT: gpu.

// KERNELS-LABEL: func.func @main
// KERNELS-NOT: ember_cuda_gemm
// KERNELS: gpu.launch_func
// KERNELS-NOT: ember_cuda_gemm

func.func @main(%a: tensor<128x64xf32>, %b: tensor<64x96xf32>) -> tensor<128x96xf32> {
  %0 = ember.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<128x64xf32>, tensor<64x96xf32>) -> tensor<128x96xf32>
  return %0 : tensor<128x96xf32>
}
