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

def EmberGPU_BarrierArriveOp : EmberGPU_Op<"barrier_arrive"> {
  let summary = "arrives on mbarrier `barriers[index]`, optionally expecting bytes";
  let description = [{
    One arrival of the calling thread. With `expect_tx`, the arrival also
    tells the barrier to wait for that many bytes of asynchronous copies
    (TMA) to land before its phase completes.
  }];
  let arguments = (ins EmberGPU_Barriers:$barriers, Index:$index,
                       Optional<I32>:$expect_tx);
  let assemblyFormat = [{
    $barriers `[` $index `]` (`,` `expect_tx` `=` $expect_tx^)? attr-dict `:` type($barriers)
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
    bit is set in the 16-bit mask.
  }];
  let arguments = (ins LLVM_AnyPointer:$descriptor, Variadic<I32>:$coordinates,
                       AnyMemRef:$destination, EmberGPU_Barriers:$barriers,
                       Index:$index, Optional<I16>:$multicast);
  let assemblyFormat = [{
    $descriptor `[` $coordinates `]` `,` $destination `,` $barriers `[` $index `]`
    (`,` `multicast` `=` $multicast^)? attr-dict `:` type($descriptor) `,`
    type($destination) `,` type($barriers)
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

#endif // EMBER_GPU_OPS_TD
