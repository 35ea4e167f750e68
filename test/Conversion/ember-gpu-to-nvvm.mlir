// RUN: ember-opt %s --pass-pipeline='builtin.module(gpu.module(ember-gpu-to-nvvm))' | FileCheck %s
// RUN: ember-opt %s --ember-cuda-nvvm --ember-cuda-binary | FileCheck %s --check-prefix=PTX
// RUN: ember-opt %s --ember-cuda-nvvm="chip=sm_100a features=+ptx86" --ember-cuda-binary="chip=sm_100a features=+ptx86" | FileCheck %s --check-prefix=PTX

// ember_gpu ops become typed NVVM ops (inline PTX only for a pair-tracked copy:
// ember-gpu-to-nvvm-sm100.mlir), and
// the whole kernel reaches PTX for sm_90a and sm_100a (test_ember_gpu.py runs
// ptxas on it).

!bars = memref<2xi64, #gpu.address_space<workgroup>>
!tile = memref<64x64xbf16, #gpu.address_space<workgroup>>

module attributes {gpu.container_module} {
gpu.module @k {
  // CHECK-LABEL: gpu.func @tma_pipeline
  gpu.func @tma_pipeline(%desc: !llvm.ptr, %out: !llvm.ptr, %x: i32, %y: i32, %parity: i32, %mask: i16)
      workgroup(%bars: !bars, %tile: !tile) kernel attributes {nvvm.cluster_dim = array<i32: 2, 1, 1>} {
    %c1 = arith.constant 1 : index
    %bytes = arith.constant 8192 : i32
    // The barrier's address: the buffer's aligned pointer plus 8 bytes per index.
    // CHECK: %[[META:.*]], %[[OFF:.*]], %{{.*}}, %{{.*}} = memref.extract_strided_metadata %{{.*}} : memref<2xi64, #gpu.address_space<workgroup>>
    // CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[META]]
    // CHECK: %[[EL:.*]] = arith.addi %[[OFF]], %{{.*}} : index
    // CHECK: %[[BYTES:.*]] = arith.muli %[[EL]], %{{.*}} : index
    // CHECK: %[[ADDR:.*]] = arith.addi %[[BASE]], %[[BYTES]] : index
    // CHECK: %[[I64:.*]] = arith.index_cast %[[ADDR]] : index to i64
    // CHECK: %[[BAR:.*]] = llvm.inttoptr %[[I64]] : i64 to !llvm.ptr<3>
    // CHECK: nvvm.mbarrier.init %[[BAR]], %{{.*}} : !llvm.ptr<3>, i32
    ember_gpu.barrier_init %bars[%c1], arrivals = 1 : !bars
    // CHECK: nvvm.fence.mbarrier.init
    ember_gpu.fence_barrier_init
    // CHECK: nvvm.cluster.arrive.relaxed {aligned}
    ember_gpu.cluster_arrive relaxed
    // CHECK: nvvm.cluster.wait {aligned}
    ember_gpu.cluster_wait
    // CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
    ember_gpu.barrier_arrive %bars[%c1], expect_tx = %bytes : !bars
    // Coordinates innermost first; the destination seen through the cluster window.
    // CHECK: %[[DST:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr<3> to !llvm.ptr<7>
    // CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[DST]], %{{.*}}, %{{.*}}, box[%arg3, %arg2] : !llvm.ptr<7>, !llvm.ptr
    ember_gpu.copy_gmem_to_smem %desc[%x, %y], %tile, %bars[%c1] : !llvm.ptr, !tile, !bars
    // CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} multicast_mask = %arg5 : !llvm.ptr<7>, !llvm.ptr
    ember_gpu.copy_gmem_to_smem %desc[%x, %y], %tile, %bars[%c1], multicast = %mask : !llvm.ptr, !tile, !bars
    // CHECK: nvvm.mbarrier.try_wait.parity %{{.*}}, %arg4, %{{.*}} : !llvm.ptr<3>, i32, i32
    ember_gpu.barrier_wait %bars[%c1], parity = %parity : !bars
    // CHECK: %{{.*}} = nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3> -> i64
    ember_gpu.barrier_arrive %bars[%c1] : !bars
    // An arrival on the peer block's barrier: its address in the cluster window.
    // CHECK: %[[PEER:.*]] = nvvm.mapa %{{.*}}, %arg2 : !llvm.ptr<3> -> !llvm.ptr<7>
    // CHECK: nvvm.mbarrier.arrive %[[PEER]] {scope = #nvvm.mem_scope<cluster>} : !llvm.ptr<7>
    ember_gpu.barrier_arrive %bars[%c1] cta(%x) : !bars
    // CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    ember_gpu.commit_smem
    // CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %arg1, %{{.*}}, box[%arg3, %arg2] :
    // CHECK-NEXT: nvvm.cp.async.bulk.commit.group
    ember_gpu.copy_smem_to_gmem %tile, %out[%x, %y] : !tile, !llvm.ptr
    // CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
    ember_gpu.wait_smem_to_gmem 0 read
    // CHECK-NOT: ember_gpu.
    gpu.return
  }
}
}

// PTX: .explicitcluster
// PTX: mbarrier.init.shared.b64
// PTX: fence.mbarrier_init.release.cluster
// PTX: barrier.cluster.arrive.relaxed.aligned
// PTX: barrier.cluster.wait.aligned
// PTX: mbarrier.arrive.expect_tx.shared.b64
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster
// PTX: mbarrier.try_wait.parity.shared.b64
// PTX: mapa.shared::cluster
// PTX: mbarrier.arrive.release.cluster.shared::cluster.b64
// PTX: fence.proxy.async.shared::cta
// PTX: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
// PTX: cp.async.bulk.commit_group
// PTX: cp.async.bulk.wait_group.read
