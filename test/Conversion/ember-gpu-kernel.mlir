// RUN: ember-opt %s --ember-gpu-kernel | FileCheck %s

// The kernel form of a compiled plgpu kernel (mosaic_gpu_compile.py): a host
// function whose gpu.launch holds ember ops on each thread's part of an array
// (here 2 of 256 elements per thread). `ember-gpu-kernel` lowers them to
// scalar code, unrolled (the part stays in registers: no loop, no heap
// allocation), and outlines the launch into a gpu.module.

module attributes {gpu.container_module} {
  // CHECK-LABEL: func.func @k_host
  // CHECK: gpu.launch_func @k::@k blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%{{.*}} : memref<128x2xf32>)
  func.func @k_host(%a: memref<128x2xf32>) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    gpu.launch blocks(%bx, %by, %bz) in (%sbx = %c1, %sby = %c1, %sbz = %c1)
               threads(%tx, %ty, %tz) in (%stx = %c128, %sty = %c1, %stz = %c1)
               module(@k) function(@k) {
      %t = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1i = arith.constant 1 : index
      %x0 = memref.load %a[%t, %c0] : memref<128x2xf32>
      %x1 = memref.load %a[%t, %c1i] : memref<128x2xf32>
      %v = tensor.from_elements %x0, %x1 : tensor<2xf32>
      %w = ember.tanh %v : tensor<2xf32>
      %s = ember.add %w, %v : tensor<2xf32>
      %y0 = tensor.extract %s[%c0] : tensor<2xf32>
      %y1 = tensor.extract %s[%c1i] : tensor<2xf32>
      memref.store %y0, %a[%t, %c0] : memref<128x2xf32>
      memref.store %y1, %a[%t, %c1i] : memref<128x2xf32>
      gpu.terminator
    }
    return
  }
  // CHECK: gpu.module @k
  // CHECK: gpu.func @k(%[[A:.*]]: memref<128x2xf32>) kernel
  // CHECK-NOT: ember.
  // CHECK-NOT: memref.alloc(
  // CHECK-NOT: scf.for
  // The parts live on the thread's stack, at the kernel's start (LLVM
  // promotes them to registers).
  // CHECK: memref.alloca() {{.*}} : memref<2xf32>
  // CHECK: memref.load %[[A]]
  // CHECK: memref.load %[[A]]
  // CHECK-COUNT-2: math.tanh
  // CHECK: memref.store %{{.*}}, %[[A]]
  // CHECK: memref.store %{{.*}}, %[[A]]
  // CHECK: gpu.return
}
