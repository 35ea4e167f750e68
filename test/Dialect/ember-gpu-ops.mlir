// RUN: ember-opt %s | ember-opt | FileCheck %s

// Round trip of every ember_gpu op.

!bars = memref<2xi64, #gpu.address_space<workgroup>>
!tile = memref<64x64xbf16, #gpu.address_space<workgroup>>

// CHECK-LABEL: gpu.func @all_ops
gpu.module @k {
  gpu.func @all_ops(%desc: !llvm.ptr, %x: i32, %y: i32, %parity: i32, %bytes: i32, %mask: i16)
      workgroup(%bars: !bars, %tile: !tile) kernel {
    %c0 = arith.constant 0 : index
    // CHECK: ember_gpu.barrier_init %{{.*}}[%{{.*}}], arrivals = 128 : memref<2xi64, #gpu.address_space<workgroup>>
    ember_gpu.barrier_init %bars[%c0], arrivals = 128 : !bars
    // CHECK: ember_gpu.fence_barrier_init
    ember_gpu.fence_barrier_init
    // CHECK: ember_gpu.barrier_arrive %{{.*}}[%{{.*}}] : memref
    ember_gpu.barrier_arrive %bars[%c0] : !bars
    // CHECK: ember_gpu.barrier_arrive %{{.*}}[%{{.*}}], expect_tx = %{{.*}} : memref
    ember_gpu.barrier_arrive %bars[%c0], expect_tx = %bytes : !bars
    // CHECK: ember_gpu.barrier_arrive %{{.*}}[%{{.*}}] cta(%{{.*}}) : memref
    ember_gpu.barrier_arrive %bars[%c0] cta(%x) : !bars
    // CHECK: ember_gpu.copy_gmem_to_smem %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}, %{{.*}}[%{{.*}}] : !llvm.ptr, memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<2xi64, #gpu.address_space<workgroup>>
    ember_gpu.copy_gmem_to_smem %desc[%x, %y], %tile, %bars[%c0] : !llvm.ptr, !tile, !bars
    // CHECK: ember_gpu.copy_gmem_to_smem {{.*}}, multicast = %{{.*}} :
    ember_gpu.copy_gmem_to_smem %desc[%x, %y], %tile, %bars[%c0], multicast = %mask : !llvm.ptr, !tile, !bars
    // CHECK: ember_gpu.copy_gmem_to_smem {{.*}} tracked_by = %{{.*}} :
    ember_gpu.copy_gmem_to_smem %desc[%x, %y], %tile, %bars[%c0] tracked_by = %x : !llvm.ptr, !tile, !bars
    // A block of rows at a run-time offset is contiguous: a valid box.
    %rows = memref.subview %tile[%c0, 0] [32, 64] [1, 1] : !tile to memref<32x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
    // CHECK: ember_gpu.copy_gmem_to_smem {{.*}} : !llvm.ptr, memref<32x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
    ember_gpu.copy_gmem_to_smem %desc[%x, %y], %rows, %bars[%c0] : !llvm.ptr, memref<32x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>, !bars
    // CHECK: ember_gpu.barrier_wait %{{.*}}[%{{.*}}], parity = %{{.*}} : memref
    ember_gpu.barrier_wait %bars[%c0], parity = %parity : !bars
    // CHECK: ember_gpu.commit_smem
    ember_gpu.commit_smem
    // CHECK: ember_gpu.copy_smem_to_gmem %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<64x64xbf16, #gpu.address_space<workgroup>>, !llvm.ptr
    ember_gpu.copy_smem_to_gmem %tile, %desc[%x, %y] : !tile, !llvm.ptr
    // CHECK: ember_gpu.wait_smem_to_gmem 0 read
    ember_gpu.wait_smem_to_gmem 0 read
    // CHECK: ember_gpu.wait_smem_to_gmem 1{{$}}
    ember_gpu.wait_smem_to_gmem 1
    // CHECK: ember_gpu.cluster_arrive relaxed
    ember_gpu.cluster_arrive relaxed
    // CHECK: ember_gpu.cluster_arrive{{$}}
    ember_gpu.cluster_arrive
    // CHECK: ember_gpu.cluster_wait
    ember_gpu.cluster_wait
    // CHECK: ember_gpu.wgmma_fence
    ember_gpu.wgmma_fence
    // CHECK: ember_gpu.wgmma_commit
    ember_gpu.wgmma_commit
    // CHECK: ember_gpu.wgmma_wait 1
    ember_gpu.wgmma_wait 1
    gpu.return
  }

  // CHECK-LABEL: gpu.func @wgmma_ops
  gpu.func @wgmma_ops(%acc: vector<64xf32>)
      workgroup(%a: memref<8192xf16, #gpu.address_space<workgroup>>,
                %f: memref<4096xf32, #gpu.address_space<workgroup>>,
                %q: memref<8192xf8E4M3FN, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : index
    // CHECK: %[[D:.*]] = ember_gpu.wgmma_descriptor %{{.*}}[%{{.*}}], swizzle = 64, leading = 16, stride = 512 : memref<8192xf16, #gpu.address_space<workgroup>>
    %d = ember_gpu.wgmma_descriptor %a[%c0], swizzle = 64, leading = 16, stride = 512
        : memref<8192xf16, #gpu.address_space<workgroup>>
    // CHECK: ember_gpu.wgmma_descriptor %{{.*}}[%{{.*}}], swizzle = 32, leading = 16, stride = 256 tcgen05 : memref<8192xf16
    %t = ember_gpu.wgmma_descriptor %a[%c0], swizzle = 32, leading = 16, stride = 256 tcgen05
        : memref<8192xf16, #gpu.address_space<workgroup>>
    // CHECK: ember_gpu.wgmma %{{.*}}, %[[D]], %[[D]], n = 128, f16 transpose_a transpose_b : vector<64xf32>, i64 -> vector<64xf32>
    %r = ember_gpu.wgmma %acc, %d, %d, n = 128, f16 transpose_a transpose_b
        : vector<64xf32>, i64 -> vector<64xf32>
    // CHECK: ember_gpu.wgmma %{{.*}}, %[[D]], %[[D]], n = 128, f16 : vector<64xf32>, i64 -> vector<64xf32>
    %s = ember_gpu.wgmma %r, %d, %d, n = 128, f16 : vector<64xf32>, i64 -> vector<64xf32>
    // A in registers: the thread's four 32-bit registers of A's fragment.
    // CHECK: ember_gpu.wgmma %{{.*}}, %{{.*}}, %[[D]], n = 128, f16 transpose_b : vector<64xf32>, vector<4xi32> -> vector<64xf32>
    %regs = arith.constant dense<0> : vector<4xi32>
    %u = ember_gpu.wgmma %s, %regs, %d, n = 128, f16 transpose_b : vector<64xf32>, vector<4xi32> -> vector<64xf32>
    // Descriptors of f32 (read as tf32) and 8-bit float matrices.
    // CHECK: ember_gpu.wgmma_descriptor %{{.*}}[%{{.*}}], swizzle = 128, leading = 16, stride = 1024 : memref<4096xf32, #gpu.address_space<workgroup>>
    %df = ember_gpu.wgmma_descriptor %f[%c0], swizzle = 128, leading = 16, stride = 1024
        : memref<4096xf32, #gpu.address_space<workgroup>>
    // CHECK: ember_gpu.wgmma_descriptor %{{.*}}[%{{.*}}], swizzle = 128, leading = 16, stride = 1024 : memref<8192xf8E4M3FN, #gpu.address_space<workgroup>>
    %dq = ember_gpu.wgmma_descriptor %q[%c0], swizzle = 128, leading = 16, stride = 1024
        : memref<8192xf8E4M3FN, #gpu.address_space<workgroup>>
    // tf32 and 8-bit operands (K-major).
    // CHECK: ember_gpu.wgmma %{{.*}}, %{{.*}}, %{{.*}}, n = 128, tf32 : vector<64xf32>, i64 -> vector<64xf32>
    %w = ember_gpu.wgmma %u, %df, %df, n = 128, tf32 : vector<64xf32>, i64 -> vector<64xf32>
    // CHECK: ember_gpu.wgmma %{{.*}}, %{{.*}}, %{{.*}}, n = 128, f8E4M3FN : vector<64xf32>, i64 -> vector<64xf32>
    %e = ember_gpu.wgmma %w, %dq, %dq, n = 128, f8E4M3FN : vector<64xf32>, i64 -> vector<64xf32>
    gpu.return
  }

  // CHECK-LABEL: gpu.func @tmem_ops
  gpu.func @tmem_ops(%adesc: i64, %bdesc: i64, %idesc: i32, %acc: i1, %mask: i16)
      workgroup(%slot: memref<1xi32, #gpu.address_space<workgroup>>, %bars: !bars) kernel {
    %c0 = arith.constant 0 : index
    // CHECK: ember_gpu.tmem_alloc %{{.*}}[%{{.*}}], columns = 128 collective : memref<1xi32, #gpu.address_space<workgroup>>
    ember_gpu.tmem_alloc %slot[%c0], columns = 128 collective : memref<1xi32, #gpu.address_space<workgroup>>
    // CHECK: ember_gpu.tmem_relinquish collective
    ember_gpu.tmem_relinquish collective
    %t = memref.load %slot[%c0] : memref<1xi32, #gpu.address_space<workgroup>>
    // CHECK: ember_gpu.tcgen05_mma %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} collective
    ember_gpu.tcgen05_mma %t, %adesc, %bdesc, %idesc, %acc collective
    // CHECK: ember_gpu.tcgen05_commit %{{.*}}[%{{.*}}], multicast = %{{.*}} collective : memref
    ember_gpu.tcgen05_commit %bars[%c0], multicast = %mask collective : !bars
    // CHECK: ember_gpu.tcgen05_fence after
    ember_gpu.tcgen05_fence after
    // CHECK: ember_gpu.tcgen05_fence before
    ember_gpu.tcgen05_fence before
    // CHECK: %[[V:.*]] = ember_gpu.tmem_load %{{.*}} : vector<4xi32>
    %v = ember_gpu.tmem_load %t : vector<4xi32>
    // CHECK: ember_gpu.tmem_wait load
    ember_gpu.tmem_wait load
    // CHECK: ember_gpu.tmem_store %{{.*}}, %[[V]] : vector<4xi32>
    ember_gpu.tmem_store %t, %v : vector<4xi32>
    // CHECK: ember_gpu.tmem_wait store
    ember_gpu.tmem_wait store
    // CHECK: ember_gpu.tmem_dealloc %{{.*}}, columns = 128 collective
    ember_gpu.tmem_dealloc %t, columns = 128 collective
    gpu.return
  }
}
