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

  // A 64x64x16 bf16 MMA from 128-byte-swizzled operands: A K-major (rows of
  // 128 bytes, 8-row groups 1024 bytes apart), B N-major.
  // CHECK-LABEL: gpu.func @wgmma_mma
  gpu.func @wgmma_mma(%out: memref<32xf32>, %i: index)
      workgroup(%a: memref<4096xbf16, #gpu.address_space<workgroup>>,
                %b: memref<1024xbf16, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : index
    %acc = vector.load %out[%c0] : memref<32xf32>, vector<32xf32>
    // CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index
    // CHECK: %[[ADDR:.*]] = arith.index_cast {{.*}} : index to i64
    // CHECK: %[[LOW:.*]] = arith.andi %[[ADDR]], %{{.*}} : i64
    // CHECK: %[[START:.*]] = arith.shrui %[[LOW]], %{{.*}} : i64
    // Swizzle mode 1 (bit 62), stride 1024 >> 4 = 64 (bit 32), leading 16 >> 4 = 1 (bit 16):
    // 0x4000004000010000.
    // CHECK: %[[FIELDS:.*]] = arith.constant 4611686293305360384 : i64
    // CHECK: %[[ADESC:.*]] = arith.ori %[[START]], %[[FIELDS]] : i64
    %da = ember_gpu.wgmma_descriptor %a[%i], swizzle = 128, leading = 16, stride = 1024
        : memref<4096xbf16, #gpu.address_space<workgroup>>
    // MN-major B: atoms along N 2048 bytes apart, 8-row groups 1024 apart.
    // CHECK: arith.constant 4611686293313683456 : i64
    %db = ember_gpu.wgmma_descriptor %b[%c0], swizzle = 128, leading = 2048, stride = 1024
        : memref<1024xbf16, #gpu.address_space<workgroup>>
    // CHECK-COUNT-32: llvm.insertvalue
    // CHECK: nvvm.wgmma.mma_async %[[ADESC]], %{{.*}}, %{{.*}}, <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
    // CHECK-COUNT-32: llvm.insertelement
    %d = ember_gpu.wgmma %acc, %da, %db, n = 64, bf16 transpose_b
        : vector<32xf32>, i64 -> vector<32xf32>
    vector.store %d, %out[%c0] : memref<32xf32>, vector<32xf32>
    gpu.return
  }

  // A in registers (P of attention, say): no NVVM op takes A's registers, so
  // the PTX instruction, D's 32 registers tied in and out.
  // CHECK-LABEL: gpu.func @wgmma_register_a
  gpu.func @wgmma_register_a(%out: memref<32xf32>, %regs: vector<4xi32>, %i: index)
      workgroup(%b: memref<1024xbf16, #gpu.address_space<workgroup>>) kernel {
    %c0 = arith.constant 0 : index
    %acc = vector.load %out[%c0] : memref<32xf32>, vector<32xf32>
    %db = ember_gpu.wgmma_descriptor %b[%i], swizzle = 128, leading = 2048, stride = 1024
        : memref<1024xbf16, #gpu.address_space<workgroup>>
    // CHECK-COUNT-4: llvm.extractelement %arg1
    // CHECK: llvm.inline_asm has_side_effects "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, {{.*}}, $31}, {$32, $33, $34, $35}, $36, 1, 1, 1, 1;", "=f,{{.*}},=f,r,r,r,r,l,0,1,{{.*}},31" {{.*}} -> !llvm.struct<(f32,
    %d = ember_gpu.wgmma %acc, %regs, %db, n = 64, bf16 transpose_b
        : vector<32xf32>, vector<4xi32> -> vector<32xf32>
    vector.store %d, %out[%c0] : memref<32xf32>, vector<32xf32>
    gpu.return
  }

  // tf32 (f32 data, 8-deep slices) and e4m3 (32-deep) operands, both
  // K-major: NVVM's op with k = 8 and k = 32.
  // CHECK-LABEL: gpu.func @wgmma_tf32_fp8
  gpu.func @wgmma_tf32_fp8(%out: memref<32xf32>, %da: i64, %db: i64) kernel {
    %c0 = arith.constant 0 : index
    %acc = vector.load %out[%c0] : memref<32xf32>, vector<32xf32>
    // CHECK: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 8>, D[<f32>, <one>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
    %t = ember_gpu.wgmma %acc, %da, %db, n = 64, tf32 : vector<32xf32>, i64 -> vector<32xf32>
    // CHECK: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 64, k = 32>, D[<f32>, <one>], A[<e4m3>, <one>, <row>], B[<e4m3>, <one>, <col>]
    %e = ember_gpu.wgmma %t, %da, %db, n = 64, f8E4M3FN : vector<32xf32>, i64 -> vector<32xf32>
    vector.store %e, %out[%c0] : memref<32xf32>, vector<32xf32>
    gpu.return
  }
}
}

// PTX: wgmma.fence.sync.aligned
// PTX: wgmma.commit_group.sync.aligned
// PTX: wgmma.wait_group.sync.aligned{{[^;]*}}1;
// The immediates: scale-a, scale-b, A not transposed (K-major), B transposed (N-major).
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16{{[^;]*}}, p, 1,{{ *}}1, 0,{{ *}}1;
// A in registers: a brace list of four 32-bit registers.
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{{[^}]*}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, 1, 1, 1, 1;
// PTX: wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32
// PTX: wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3
