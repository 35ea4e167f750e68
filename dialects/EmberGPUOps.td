//===- EmberGPUOps.td - the ember_gpu kernel dialect ------*- tablegen -*-===//
//
// The Pallas-style GPU kernel dialect (docs/spec.md, "The ember_gpu kernel
// dialect"): mbarriers in shared memory, cluster barriers, async-proxy
// fences and TMA copies between global and shared memory, on memrefs inside
// gpu.func kernels. `ember-gpu-to-nvvm` lowers every op to typed NVVM ops.
//
//===----------------------------------------------------------------------===//
#ifndef EMBER_GPU_OPS_TD
#define EMBER_GPU_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Dialect/LLVMIR/LLVMTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def EmberGPU_Dialect : Dialect {
  let name = "ember_gpu";
  let summary = "Pallas-style GPU kernel operations: barriers, cluster sync, TMA";
  let description = [{
    Operations a Pallas Mosaic-GPU kernel is made of, one level above NVVM:
    they take memrefs (shared memory is `#gpu.address_space<workgroup>`) and
    indices, check what the hardware requires (arrival counts, box shapes,
    address spaces), and lower one-to-one onto NVVM ops.
  }];
  let cppNamespace = "::mlir::ember_gpu";
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect", "::mlir::memref::MemRefDialect"];
}

class EmberGPU_Op<string mnemonic, list<Trait> traits = []>
    : Op<EmberGPU_Dialect, mnemonic, traits>;

def EmberGPU_Barriers : MemRefRankOf<[I64], [1]>;

//===----------------------------------------------------------------------===//
// mbarriers
//===----------------------------------------------------------------------===//

def EmberGPU_BarrierInitOp : EmberGPU_Op<"barrier_init"> {
  let summary = "initializes mbarrier `barriers[index]` for `arrivals` arrivals";
  let arguments = (ins EmberGPU_Barriers:$barriers, Index:$index,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$arrivals);
  let assemblyFormat = [{
    $barriers `[` $index `]` `,` `arrivals` `=` $arrivals attr-dict `:` type($barriers)
  }];
  let hasVerifier = 1;
}

def EmberGPU_BarrierArriveOp : EmberGPU_Op<"barrier_arrive", [AttrSizedOperandSegments]> {
  let summary = "arrives on mbarrier `barriers[index]`, optionally expecting bytes";
  let description = [{
    One arrival of the calling thread. With `expect_tx`, the arrival also
    tells the barrier to wait for that many bytes of asynchronous copies
    (TMA) to land before its phase completes. With `cta`, the arrival is on
    the barrier at the same shared-memory address in block `cta` of the
    cluster (its rank), with release semantics at cluster scope: Pallas'
    `ClusterBarrier` arrives on every peer's copy of the barrier.
  }];
  let arguments = (ins EmberGPU_Barriers:$barriers, Index:$index,
                       Optional<I32>:$expect_tx, Optional<I32>:$cta);
  let assemblyFormat = [{
    $barriers `[` $index `]` (`,` `expect_tx` `=` $expect_tx^)? (`cta` `(` $cta^ `)`)? attr-dict `:` type($barriers)
  }];
  let hasVerifier = 1;
}

def EmberGPU_BarrierWaitOp : EmberGPU_Op<"barrier_wait"> {
  let summary = "waits until the phase of `barriers[index]` with `parity` completes";
  let arguments = (ins EmberGPU_Barriers:$barriers, Index:$index, I32:$parity);
  let assemblyFormat = [{
    $barriers `[` $index `]` `,` `parity` `=` $parity attr-dict `:` type($barriers)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Cluster synchronization and fences
//===----------------------------------------------------------------------===//

def EmberGPU_ClusterArriveOp : EmberGPU_Op<"cluster_arrive"> {
  let summary = "arrives on the cluster barrier (every thread of every block)";
  let description = [{
    `relaxed` drops the release ordering (the arrival does not publish the
    thread's earlier memory writes to the cluster).
  }];
  let arguments = (ins UnitAttr:$relaxed);
  let assemblyFormat = "(`relaxed` $relaxed^)? attr-dict";
}

def EmberGPU_ClusterWaitOp : EmberGPU_Op<"cluster_wait"> {
  let summary = "waits until every thread of the cluster arrived";
  let assemblyFormat = "attr-dict";
}

def EmberGPU_FenceBarrierInitOp : EmberGPU_Op<"fence_barrier_init"> {
  let summary = "makes mbarrier initialization visible to the cluster";
  let assemblyFormat = "attr-dict";
}

def EmberGPU_CommitSmemOp : EmberGPU_Op<"commit_smem"> {
  let summary = "orders the block's shared-memory writes before async copies";
  let description = [{
    Pallas' `commit_smem`: a proxy fence, so that a TMA copy issued after it
    reads what the threads wrote to shared memory before it.
  }];
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// TMA copies
//===----------------------------------------------------------------------===//

def EmberGPU_CopyGmemToSmemOp : EmberGPU_Op<"copy_gmem_to_smem", [AttrSizedOperandSegments]> {
  let summary = "asynchronous TMA copy of a box of global memory into shared memory";
  let description = [{
    Copies the box of the tensor that `descriptor` (a CUtensorMap in global
    or parameter memory) describes, at `coordinates` (outermost dimension
    first, like memref indices), into `destination`; the transfer counts
    its bytes on `barriers[index]`. With `multicast`, the box lands at the
    same offset in the shared memory of every block of the cluster whose
    bit is set in the 16-bit mask. With `tracked_by`, a block of a 2-CTA
    pair (tcgen05's cta_group::2) lands the box in its own shared memory
    but counts its bytes on the barrier at the same offset in block
    `tracked_by` of the cluster (its pair's leader, or itself), so that one
    barrier of the leader observes both halves of a collective MMA's
    operands.
  }];
  let arguments = (ins LLVM_AnyPointer:$descriptor, Variadic<I32>:$coordinates,
                       AnyMemRef:$destination, EmberGPU_Barriers:$barriers,
                       Index:$index, Optional<I16>:$multicast,
                       Optional<I32>:$tracked_by);
  let assemblyFormat = [{
    $descriptor `[` $coordinates `]` `,` $destination `,` $barriers `[` $index `]`
    (`,` `multicast` `=` $multicast^)? (`tracked_by` `=` $tracked_by^)? attr-dict
    `:` type($descriptor) `,` type($destination) `,` type($barriers)
  }];
  let hasVerifier = 1;
}

def EmberGPU_CopySmemToGmemOp : EmberGPU_Op<"copy_smem_to_gmem"> {
  let summary = "asynchronous TMA copy of shared memory into a box of global memory";
  let description = [{
    Stores `source` at `coordinates` of the tensor `descriptor` describes,
    and commits the copy to the thread's bulk async-group (waited for by
    `wait_smem_to_gmem`).
  }];
  let arguments = (ins AnyMemRef:$source, LLVM_AnyPointer:$descriptor,
                       Variadic<I32>:$coordinates);
  let assemblyFormat = [{
    $source `,` $descriptor `[` $coordinates `]` attr-dict `:` type($source) `,`
    type($descriptor)
  }];
  let hasVerifier = 1;
}

def EmberGPU_WaitSmemToGmemOp : EmberGPU_Op<"wait_smem_to_gmem"> {
  let summary = "waits until at most `allow_in_flight` shared-to-global copies are pending";
  let description = [{
    With `read`, waits only until the pending copies have finished reading
    their shared memory (it may be overwritten), not until their writes to
    global memory are visible.
  }];
  let arguments = (ins ConfinedAttr<I32Attr, [IntMinValue<0>, IntMaxValue<63>]>:$allow_in_flight,
                       UnitAttr:$read);
  let assemblyFormat = "$allow_in_flight (`read` $read^)? attr-dict";
}

//===----------------------------------------------------------------------===//
// wgmma groups (Hopper)
//===----------------------------------------------------------------------===//

def EmberGPU_WgmmaFenceOp : EmberGPU_Op<"wgmma_fence"> {
  let summary = "orders register and SMEM accesses before the warpgroup's next wgmma";
  let assemblyFormat = "attr-dict";
}

def EmberGPU_WgmmaCommitOp : EmberGPU_Op<"wgmma_commit"> {
  let summary = "closes the group of wgmma operations issued since the last commit";
  let assemblyFormat = "attr-dict";
}

def EmberGPU_WgmmaWaitOp : EmberGPU_Op<"wgmma_wait"> {
  let summary = "waits until at most `allow_in_flight` wgmma groups are pending";
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<0>, IntMaxValue<7>]>:$allow_in_flight);
  let assemblyFormat = "$allow_in_flight attr-dict";
}

def EmberGPU_WgmmaDescriptorOp : EmberGPU_Op<"wgmma_descriptor", [Pure]> {
  let summary = "the 64-bit shared-memory matrix descriptor of `buffer[index]`";
  let description = [{
    Describes a matrix operand of `wgmma` in shared memory, starting at
    element `index` of `buffer` (flattened, row-major; f16, bf16, f32 read
    as tf32, or 8-bit floats): its swizzle mode
    (0 for none, or 32, 64 or 128 bytes) and the leading and stride
    dimension byte offsets of PTX's canonical layouts (for a K-major swizzled
    operand: the stride between groups of 8 rows; for an MN-major swizzled
    operand: the strides between swizzle atoms along MN (leading) and
    between groups of 8 rows along K (stride)). The buffer's start must be
    aligned to the swizzle pattern (`swizzle` x 8 bytes). With `tcgen05`,
    the descriptor has Blackwell's format (for `tcgen05_mma`), the same
    layouts in other bits.
  }];
  let arguments = (ins MemRefRankOf<[F16, BF16, F32, F8E4M3FN, F8E5M2], [1]>:$buffer, Index:$index,
                       I64Attr:$swizzle, I64Attr:$leading_byte_offset,
                       I64Attr:$stride_byte_offset, UnitAttr:$tcgen05);
  let results = (outs I64:$descriptor);
  let assemblyFormat = [{
    $buffer `[` $index `]` `,` `swizzle` `=` $swizzle `,` `leading` `=` $leading_byte_offset
    `,` `stride` `=` $stride_byte_offset (`tcgen05` $tcgen05^)? attr-dict `:` type($buffer)
  }];
  let hasVerifier = 1;
}

def EmberGPU_WgmmaOp : EmberGPU_Op<"wgmma"> {
  let summary = "issues a warpgroup MMA: D (registers) += A * B (64 x n x k)";
  let description = [{
    Run by the 128 threads of a warpgroup together. `a` and `b` are
    `wgmma_descriptor`s of a 64 x k matrix A and a k x n matrix B of
    `element_type` in shared memory: f16 or bf16 (k = 16), tf32 (f32 data
    read as tf32, k = 8) or f8E4M3FN / f8E5M2 (k = 32); `transpose_a`
    marks A as M-major and `transpose_b` marks B as N-major (both K-major
    otherwise; only 16-bit operands may be transposed).
    A may instead be in registers: `a` is then the thread's four 32-bit
    registers of A's fragment (8 elements, two to a register, in the order
    of the thread's part of a 64 x 16 accumulator: PTX's register fragment
    of A).
    `accumulator` is the thread's fragment of the 64 x n f32 matrix D in
    PTX's wgmma layout (n / 2 values); the result is D + A * B. The MMA is
    asynchronous: the result's registers and the operands' shared memory
    are in use until `wgmma_commit` and `wgmma_wait` say it completed.
  }];
  let arguments = (ins VectorOfRankAndType<[1], [F32]>:$accumulator,
                       AnyTypeOf<[I64, VectorOfLengthAndType<[4], [I32]>]>:$a, I64:$b,
                       I64Attr:$n, TypeAttr:$element_type, UnitAttr:$transpose_a,
                       UnitAttr:$transpose_b);
  let results = (outs VectorOfRankAndType<[1], [F32]>:$result);
  let assemblyFormat = [{
    $accumulator `,` $a `,` $b `,` `n` `=` $n `,` $element_type
    (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)? attr-dict
    `:` type($accumulator) `,` type($a) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tensor memory and tcgen05 (Blackwell)
//===----------------------------------------------------------------------===//

def EmberGPU_TmemAllocOp : EmberGPU_Op<"tmem_alloc"> {
  let summary = "allocates `columns` TMEM columns; writes their address to `slot`";
  let description = [{
    Run by one warp. The address lands in `slot` (a 32-bit word of shared
    memory), where the block's threads read it after a barrier. With
    `collective`, the pair of blocks of a 2-CTA cluster allocates together.
  }];
  let arguments = (ins MemRefRankOf<[I32], [1]>:$slot, Index:$index,
                       I64Attr:$columns, UnitAttr:$collective);
  let assemblyFormat = [{
    $slot `[` $index `]` `,` `columns` `=` $columns (`collective` $collective^)? attr-dict
    `:` type($slot)
  }];
  let hasVerifier = 1;
}

def EmberGPU_TmemDeallocOp : EmberGPU_Op<"tmem_dealloc"> {
  let summary = "frees the `columns` TMEM columns at `address`";
  let arguments = (ins I32:$address, I64Attr:$columns, UnitAttr:$collective);
  let assemblyFormat = [{
    $address `,` `columns` `=` $columns (`collective` $collective^)? attr-dict
  }];
  let hasVerifier = 1;
}

def EmberGPU_TmemRelinquishOp : EmberGPU_Op<"tmem_relinquish"> {
  let summary = "gives up the block's right to allocate TMEM (lets peers allocate)";
  let arguments = (ins UnitAttr:$collective);
  let assemblyFormat = "(`collective` $collective^)? attr-dict";
}

def EmberGPU_TmemLoadOp : EmberGPU_Op<"tmem_load"> {
  let summary = "asynchronously loads 32-bit words of TMEM into registers";
  let description = [{
    Each thread of the warp reads its lane of `address` (the 32x32b shape:
    lane i of the warp's 32 lanes) and as many consecutive columns as the
    result has elements; complete with `tmem_wait load` before using the
    registers' old contents' TMEM again.
  }];
  let arguments = (ins I32:$address);
  let results = (outs AnyTypeOf<[I32, VectorOfLengthAndType<[2, 4, 8, 16, 32, 64, 128], [I32]>]>:$result);
  let assemblyFormat = "$address attr-dict `:` type($result)";
}

def EmberGPU_TmemStoreOp : EmberGPU_Op<"tmem_store"> {
  let summary = "asynchronously stores registers into TMEM (32x32b shape)";
  let arguments = (ins I32:$address,
                       AnyTypeOf<[I32, VectorOfLengthAndType<[2, 4, 8, 16, 32, 64, 128], [I32]>]>:$value);
  let assemblyFormat = "$address `,` $value attr-dict `:` type($value)";
}

def EmberGPU_TmemWaitOp : EmberGPU_Op<"tmem_wait"> {
  let summary = "waits for the thread's TMEM loads (`load`) or stores (`store`)";
  let arguments = (ins UnitAttr:$store);
  let assemblyFormat = "(`store` $store^) : (`load`)? attr-dict";
}

def EmberGPU_Tcgen05MmaOp : EmberGPU_Op<"tcgen05_mma"> {
  let summary = "issues a tensor-core MMA: D (TMEM) = A * B (+ D if `accumulate`)";
  let description = [{
    `a` and `b` are shared-memory matrix descriptors (64-bit), `instruction`
    the 32-bit instruction descriptor (shapes and types), `accumulate` whether
    D is added to. With `collective`, one block issues the MMA of a 2-CTA
    pair (cta_group::2). Completion is observed by `tcgen05_commit`.
  }];
  let arguments = (ins I32:$accumulator, I64:$a, I64:$b, I32:$instruction, I1:$accumulate,
                       UnitAttr:$collective);
  let assemblyFormat = [{
    $accumulator `,` $a `,` $b `,` $instruction `,` $accumulate (`collective` $collective^)?
    attr-dict
  }];
}

def EmberGPU_Tcgen05CommitOp : EmberGPU_Op<"tcgen05_commit"> {
  let summary = "arrives on `barriers[index]` once the thread's MMAs completed";
  let description = [{
    With `multicast`, the arrival reaches the barrier at the same offset in
    every block of the cluster whose bit is set (a 2-CTA pair's MMA signals
    both blocks); `collective` marks a 2-CTA pair's MMAs.
  }];
  let arguments = (ins EmberGPU_Barriers:$barriers, Index:$index, Optional<I16>:$multicast,
                       UnitAttr:$collective);
  let assemblyFormat = [{
    $barriers `[` $index `]` (`,` `multicast` `=` $multicast^)? (`collective` $collective^)?
    attr-dict `:` type($barriers)
  }];
  let hasVerifier = 1;
}

def EmberGPU_Tcgen05FenceOp : EmberGPU_Op<"tcgen05_fence"> {
  let summary = "orders tcgen05 operations around a thread synchronization";
  let arguments = (ins UnitAttr:$after);
  let assemblyFormat = "(`after` $after^) : (`before`)? attr-dict";
}

#endif // EMBER_GPU_OPS_TD
