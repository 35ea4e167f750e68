// RUN: ember-opt %s -ember-gpu-defer-waits | FileCheck %s

// The runtime's one stream orders GPU work: the host waits only where it
// reads device data (copied into host memory) itself or calls something
// that might.

module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k() kernel { gpu.return }
  }
  func.func private @ember_cuda_gemm(i64, i64, i64, i64, i64, i64, i64, i64, index, index, index)
  func.func private @host_function(index)

  // Stream-ordered: it only calls a runtime entry on device buffers.
  func.func private @gemm_helper(%a: memref<4xf32>) {
    %c = arith.constant 0 : i64
    %p = memref.extract_aligned_pointer_as_index %a : memref<4xf32> -> index
    func.call @ember_cuda_gemm(%c, %c, %c, %c, %c, %c, %c, %c, %p, %p, %p) : (i64, i64, i64, i64, i64, i64, i64, i64, index, index, index) -> ()
    return
  }
  // Not stream-ordered: it reads memory on the host.
  func.func private @reads_host(%a: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %v = memref.load %a[%c0] : memref<4xf32>
    return
  }
  // Not stream-ordered through a nested call.
  func.func private @calls_reads_host(%a: memref<4xf32>) {
    func.call @reads_host(%a) : (memref<4xf32>) -> ()
    return
  }

  // CHECK-LABEL: func.func @before_return
  // CHECK: gpu.launch_func async
  // CHECK-NOT: gpu.wait [
  // CHECK: return
  func.func @before_return(%n: index) {
    %t0 = gpu.wait async
    %t1 = gpu.launch_func async [%t0] @k::@k blocks in (%n, %n, %n) threads in (%n, %n, %n)
    gpu.wait [%t1]
    return
  }

  // CHECK-LABEL: func.func @before_stream_ordered_calls
  // CHECK: gpu.launch_func async
  // CHECK-NEXT: call @gemm_helper
  // CHECK: gpu.launch_func async
  // CHECK-NEXT: call @ember_cuda_gemm
  func.func @before_stream_ordered_calls(%n: index, %a: memref<4xf32>, %p: index) {
    %c = arith.constant 0 : i64
    %t0 = gpu.wait async
    %t1 = gpu.launch_func async [%t0] @k::@k blocks in (%n, %n, %n) threads in (%n, %n, %n)
    gpu.wait [%t1]
    func.call @gemm_helper(%a) : (memref<4xf32>) -> ()
    %t2 = gpu.wait async
    %t3 = gpu.launch_func async [%t2] @k::@k blocks in (%n, %n, %n) threads in (%n, %n, %n)
    gpu.wait [%t3]
    func.call @ember_cuda_gemm(%c, %c, %c, %c, %c, %c, %c, %c, %p, %p, %p) : (i64, i64, i64, i64, i64, i64, i64, i64, index, index, index) -> ()
    return
  }

  // A chain that copies into host memory (here a function argument) is
  // waited for before the host goes on, whatever follows.
  // CHECK-LABEL: func.func @kept
  // CHECK: gpu.memcpy async
  // CHECK-NEXT: gpu.wait [
  // CHECK-NEXT: memref.load
  // CHECK: gpu.memcpy async
  // CHECK-NEXT: gpu.wait [
  // CHECK-NEXT: call @reads_host
  // CHECK: gpu.memcpy async
  // CHECK-NEXT: gpu.launch_func async
  // CHECK-NEXT: gpu.wait [
  // CHECK-NEXT: call @host_function
  func.func @kept(%n: index, %d: memref<4xf32>, %h: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %t0 = gpu.wait async
    %t1 = gpu.memcpy async [%t0] %h, %d : memref<4xf32>, memref<4xf32>
    gpu.wait [%t1]
    %v = memref.load %h[%c0] : memref<4xf32>
    %t2 = gpu.wait async
    %t3 = gpu.launch_func async [%t2] @k::@k blocks in (%n, %n, %n) threads in (%n, %n, %n)
    %t4 = gpu.memcpy async [%t3] %h, %d : memref<4xf32>, memref<4xf32>
    gpu.wait [%t4]
    func.call @reads_host(%h) : (memref<4xf32>) -> ()
    %t5 = gpu.wait async
    %t6 = gpu.memcpy async [%t5] %h, %d : memref<4xf32>, memref<4xf32>
    %t7 = gpu.launch_func async [%t6] @k::@k blocks in (%n, %n, %n) threads in (%n, %n, %n)
    gpu.wait [%t7]
    func.call @host_function(%n) : (index) -> ()
    return
  }

  // Kernels, device buffers and copies into device memory only: the host
  // reads nothing they write (device memory is not host-visible), so no
  // wait stays, whatever follows (a loop's next iteration, host calls).
  // CHECK-LABEL: func.func @device_only
  // CHECK-NOT: gpu.wait [
  // CHECK: return
  func.func @device_only(%n: index, %h: memref<4xf32>) {
    %t0 = gpu.wait async
    %m, %t1 = gpu.alloc async [%t0] () : memref<4xf32>
    %t2 = gpu.memcpy async [%t1] %m, %h : memref<4xf32>, memref<4xf32>
    %t3 = gpu.launch_func async [%t2] @k::@k blocks in (%n, %n, %n) threads in (%n, %n, %n)
    %sv = memref.subview %m[1] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1], offset: 1>>
    %t4 = gpu.memcpy async [%t3] %sv, %sv : memref<2xf32, strided<[1], offset: 1>>, memref<2xf32, strided<[1], offset: 1>>
    gpu.wait [%t4]
    func.call @reads_host(%h) : (memref<4xf32>) -> ()
    %t5 = gpu.wait async
    %t6 = gpu.dealloc async [%t5] %m : memref<4xf32>
    gpu.wait [%t6]
    func.call @calls_reads_host(%h) : (memref<4xf32>) -> ()
    scf.for %i = %n to %n step %n {
      %t7 = gpu.wait async
      %t8 = gpu.launch_func async [%t7] @k::@k blocks in (%n, %n, %n) threads in (%n, %n, %n)
      gpu.wait [%t8]
      func.call @host_function(%n) : (index) -> ()
    }
    return
  }
}
