// RUN: ember-opt %s --ember-cuda-pipeline="libdevice=%libdevice" | FileCheck %s
// RUN: ember-opt %s --ember-cuda-pipeline="chip=sm_100a features=+ptx86 libdevice=%libdevice" | FileCheck %s --check-prefix=SM100
// RUN: ember-opt %s --ember-cuda-gpu | FileCheck %s --check-prefix=GPU
// RUN: not ember-opt %s --ember-cuda-pipeline="chip=sm_90a colour=red" 2>&1 | FileCheck %s --check-prefix=BADOPT

// The whole CUDA pipeline: host code in the LLVM dialect launching the
// kernels asynchronously on one stream and returning without waiting for
// them (ember-gpu-defer-waits: the runtime's readers synchronize); the
// kernels serialized into gpu.binary ops as PTX for sm_90a. The
// reduction's initial fill is folded into its kernel: one launch.

// CHECK: llvm.func @main
// CHECK: %[[S:.*]] = llvm.call @mgpuStreamCreate()
// CHECK: gpu.launch_func <%[[S]] : !llvm.ptr> @main_kernel::@main_kernel blocks in
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: mgpuStreamSynchronize
// CHECK: llvm.return
// CHECK: gpu.binary @main_kernel
// CHECK-SAME: .target sm_90a
// SM100: .target sm_100a

// GPU: func.func @main
// GPU: gpu.launch_func @main_kernel::@main_kernel blocks in
// GPU: gpu.module @main_kernel
// GPU: gpu.all_reduce add

// BADOPT: unknown option 'colour' of target 'cuda' (options: chip, features, libdevice, cublas, vectorize, merge, format)

func.func @main(%x: tensor<8x512xf32>) -> tensor<8xf32> {
  %t = ember.tanh %x : tensor<8x512xf32>
  %s = ember.reduce sum %t, dims = [1] : (tensor<8x512xf32>) -> tensor<8xf32>
  return %s : tensor<8xf32>
}
