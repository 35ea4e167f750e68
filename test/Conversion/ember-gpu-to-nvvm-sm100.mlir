// RUN: ember-opt %s --pass-pipeline='builtin.module(gpu.module(ember-gpu-to-nvvm))' | FileCheck %s
// RUN: ember-opt %s --ember-cuda-nvvm="chip=sm_100a features=+ptx86" --ember-cuda-binary="chip=sm_100a features=+ptx86" | FileCheck %s --check-prefix=PTX
// RUN: not ember-opt %s --ember-cuda-nvvm="chip=sm_90a features=+ptx81" 2>&1 | FileCheck %s --check-prefix=SM90

// Blackwell's tensor memory and tcgen05 MMA from ember_gpu ops; test_ember_gpu.py
// runs ptxas -arch=sm_100a on the PTX. On sm_90a NVVM's verifier refuses
// tcgen05 with a diagnostic (not a crash).

!bars = memref<2xi64, #gpu.address_space<workgroup>>

module attributes {gpu.container_module} {
gpu.module @k {
  // CHECK-LABEL: gpu.func @blackwell_mma
  gpu.func @blackwell_mma(%adesc: i64, %bdesc: i64, %idesc: i32, %acc: i1, %mask: i16, %parity: i32,
                          %desc: !llvm.ptr, %x: i32, %y: i32)
      workgroup(%slot: memref<1xi32, #gpu.address_space<workgroup>>, %bars: !bars,
                %tile: memref<64x64xbf16, #gpu.address_space<workgroup>>) kernel
      attributes {nvvm.cluster_dim = array<i32: 2, 1, 1>} {
    %c0 = arith.constant 0 : index
    // CHECK: nvvm.tcgen05.alloc %{{.*}}, %{{.*}} {group = #nvvm.cta_group<cta_2>} : !llvm.ptr<3>, i32
    ember_gpu.tmem_alloc %slot[%c0], columns = 128 collective : memref<1xi32, #gpu.address_space<workgroup>>
    // CHECK: nvvm.tcgen05.relinquish_alloc_permit {group = #nvvm.cta_group<cta_2>}
    ember_gpu.tmem_relinquish collective
    ember_gpu.barrier_init %bars[%c0], arrivals = 1 : !bars
    // CHECK: nvvm.tcgen05.fence <before>
    ember_gpu.tcgen05_fence before
    ember_gpu.cluster_arrive
    ember_gpu.cluster_wait
    // CHECK: nvvm.tcgen05.fence <after>
    ember_gpu.tcgen05_fence after
    %t = memref.load %slot[%c0] : memref<1xi32, #gpu.address_space<workgroup>>
    // CHECK: %[[T:.*]] = llvm.inttoptr %{{.*}} : i32 to !llvm.ptr<6>
    // CHECK: nvvm.tcgen05.mma %[[T]], %arg0, %arg1, %arg2, %arg3 {ctaGroup = #nvvm.cta_group<cta_2>, kind = #nvvm.tcgen05_mma_kind<f16>}
    ember_gpu.tcgen05_mma %t, %adesc, %bdesc, %idesc, %acc collective
    // A copy into this block's tile whose bytes count on the leader's barrier:
    // no NVVM op names a peer's barrier, so PTX, the barrier mapped by mapa.
    // CHECK: %[[LEAD:.*]] = arith.constant 0 : i32
    // CHECK: llvm.inline_asm has_side_effects {{.*}}mapa.shared::cluster.u32 tracker, $2, $3;{{.*}}cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes.cta_group::2 [$0], [$1, {$4, $5}], [tracker];{{.*}}", "r,l,r,r,r,r" %{{.*}}, %arg6, %{{.*}}, %[[LEAD]], %arg8, %arg7 : (i32, !llvm.ptr, i32, i32, i32, i32) -> ()
    %lead = arith.constant 0 : i32
    ember_gpu.copy_gmem_to_smem %desc[%x, %y], %tile, %bars[%c0] tracked_by = %lead : !llvm.ptr, memref<64x64xbf16, #gpu.address_space<workgroup>>, !bars
    // CHECK: nvvm.tcgen05.commit %{{.*}}, multicast_mask = %arg4 {group = #nvvm.cta_group<cta_2>} : !llvm.ptr<3>, i16
    ember_gpu.tcgen05_commit %bars[%c0], multicast = %mask collective : !bars
    ember_gpu.barrier_wait %bars[%c0], parity = %parity : !bars
    // CHECK: nvvm.tcgen05.ld %{{.*}} {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<4xi32>
    %v = ember_gpu.tmem_load %t : vector<4xi32>
    // CHECK: nvvm.tcgen05.wait <load>
    ember_gpu.tmem_wait load
    // CHECK: nvvm.tcgen05.st %{{.*}}, %{{.*}} {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<4xi32>
    ember_gpu.tmem_store %t, %v : vector<4xi32>
    // CHECK: nvvm.tcgen05.wait <store>
    ember_gpu.tmem_wait store
    // CHECK: nvvm.tcgen05.dealloc %{{.*}}, %{{.*}} {group = #nvvm.cta_group<cta_2>} : !llvm.ptr<6>, i32
    ember_gpu.tmem_dealloc %t, columns = 128 collective
    // CHECK-NOT: ember_gpu.
    gpu.return
  }

  // Blackwell's matrix descriptor: the same layout fields as Hopper's, bits
  // 46-48 = 0b001 and the swizzle mode in bits 61-63 (2: 128 bytes):
  // (2 << 61) | (1 << 46) | (1024 >> 4 << 32) | (16 >> 4 << 16).
  // CHECK-LABEL: gpu.func @blackwell_descriptor
  gpu.func @blackwell_descriptor(%out: memref<1xi64>)
      workgroup(%a: memref<8192xbf16, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : index
    // CHECK: arith.constant 4611756662049538048 : i64
    %d = ember_gpu.wgmma_descriptor %a[%c0], swizzle = 128, leading = 16, stride = 1024 tcgen05
        : memref<8192xbf16, #gpu.address_space<workgroup>>
    memref.store %d, %out[%c0] : memref<1xi64>
    gpu.return
  }
}
}

// PTX: .target sm_100a
// PTX: tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32
// PTX: tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned
// PTX: tcgen05.fence::before_thread_sync
// PTX: tcgen05.fence::after_thread_sync
// PTX: tcgen05.mma.cta_group::2.kind::f16
// PTX: mapa.shared::cluster.u32
// PTX: cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes.cta_group::2
// PTX: tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64
// PTX: tcgen05.ld.sync.aligned.32x32b.x4.b32
// PTX: tcgen05.wait::ld.sync.aligned
// PTX: tcgen05.st.sync.aligned.32x32b.x4.b32
// PTX: tcgen05.wait::st.sync.aligned
// PTX: tcgen05.dealloc.cta_group::2.sync.aligned.b32

// SM90: error: 'nvvm.tcgen05.alloc' op is not supported on sm_90a
