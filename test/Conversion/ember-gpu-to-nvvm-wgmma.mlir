// RUN: ember-opt %s --pass-pipeline='builtin.module(gpu.module(ember-gpu-to-nvvm))' | FileCheck %s
// RUN: ember-opt %s --ember-cuda-nvvm --ember-cuda-binary | FileCheck %s --check-prefix=PTX

// Hopper's wgmma group synchronization (sm_90a only).

module attributes {gpu.container_module} {
gpu.module @k {
  // CHECK-LABEL: gpu.func @wgmma_groups
  gpu.func @wgmma_groups() kernel {
    // CHECK: nvvm.wgmma.fence.aligned
    ember_gpu.wgmma_fence
    // CHECK: nvvm.wgmma.commit.group.sync.aligned
    ember_gpu.wgmma_commit
    // CHECK: nvvm.wgmma.wait.group.sync.aligned 1
    ember_gpu.wgmma_wait 1
    gpu.return
  }
}
}

// PTX: wgmma.fence.sync.aligned
// PTX: wgmma.commit_group.sync.aligned
// PTX: wgmma.wait_group.sync.aligned{{.*}}1;
