//===- EmberTPUOps.td - the ember_tpu kernel dialect ------*- tablegen -*-===//
//
// The TPU kernel dialect (docs/spec.md, "The ember_tpu kernel dialect"),
// modelled on Mosaic TPU's `tpu` dialect: every op, attribute and type here
// has the name, operands, operand segments and attributes of its Mosaic
// counterpart, so `ember-tpu-serialize` only renames them. A Pallas TPU
// kernel is a func.func over memrefs in TPU memory spaces whose body is
// arith/math/vector/scf ops and the ops below.
//
//===----------------------------------------------------------------------===//
#ifndef EMBER_TPU_OPS_TD
#define EMBER_TPU_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

def EmberTPU_Dialect : Dialect {
  let name = "ember_tpu";
  let summary = "Pallas TPU kernel operations, modelled on Mosaic TPU";
  let description = [{
    The operations of a Pallas TPU kernel above the vector layout: stores
    with strides and masks, the MXU matmul with its dimension numbers, iota
    and transposes of vectors, windows of memrefs, DMAs and semaphores.
    Memrefs carry `#ember_tpu.memory_space<...>`.
  }];
  let cppNamespace = "::mlir::ember_tpu";
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let dependentDialects = ["::mlir::vector::VectorDialect",
                           "::mlir::memref::MemRefDialect"];
}

class EmberTPU_Op<string mnemonic, list<Trait> traits = []>
    : Op<EmberTPU_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def EmberTPU_MemorySpace : I32EnumAttr<"MemorySpace", "a TPU memory space", [
    I32EnumAttrCase<"any", 0>, I32EnumAttrCase<"vmem", 1>,
    I32EnumAttrCase<"smem", 2>, I32EnumAttrCase<"hbm", 3>,
    I32EnumAttrCase<"semaphore_mem", 4>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ember_tpu";
}
def EmberTPU_MemorySpaceAttr
    : EnumAttr<EmberTPU_Dialect, EmberTPU_MemorySpace, "memory_space"> {
  let assemblyFormat = "`<` $value `>`";
}

def EmberTPU_DimensionSemantics : I32EnumAttr<"DimensionSemantics",
    "how grid steps along a dimension may be scheduled", [
    I32EnumAttrCase<"parallel", 0>, I32EnumAttrCase<"arbitrary", 1>,
    I32EnumAttrCase<"core_parallel", 2>, I32EnumAttrCase<"subcore_parallel", 3>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ember_tpu";
}
def EmberTPU_DimensionSemanticsAttr
    : EnumAttr<EmberTPU_Dialect, EmberTPU_DimensionSemantics, "dimension_semantics"> {
  let assemblyFormat = "`<` $value `>`";
}

def EmberTPU_CoreType : I32EnumAttr<"CoreType", "the core a kernel runs on", [
    I32EnumAttrCase<"tc", 0>, I32EnumAttrCase<"sc_scalar_subcore", 1>,
    I32EnumAttrCase<"sc_vector_subcore", 2>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ember_tpu";
}
def EmberTPU_CoreTypeAttr : EnumAttr<EmberTPU_Dialect, EmberTPU_CoreType, "core_type"> {
  let assemblyFormat = "`<` $value `>`";
}


def EmberTPU_PipelineMode : I32EnumAttr<"PipelineMode",
    "how a window's blocks are fetched across grid steps", [
    I32EnumAttrCase<"synchronous", 0>, I32EnumAttrCase<"double_buffered", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ember_tpu";
}
def EmberTPU_PipelineModeAttr
    : EnumAttr<EmberTPU_Dialect, EmberTPU_PipelineMode, "pipeline_mode"> {
  let assemblyFormat = "`<` $value `>`";
}

def EmberTPU_RevisitMode : I32EnumAttr<"RevisitMode",
    "when an output window's block may be visited again (pl.RevisitMode)", [
    I32EnumAttrCase<"immediate", 0>, I32EnumAttrCase<"any", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ember_tpu";
}
def EmberTPU_RevisitModeAttr
    : EnumAttr<EmberTPU_Dialect, EmberTPU_RevisitMode, "revisit_mode"> {
  let assemblyFormat = "`<` $value `>`";
}

def EmberTPU_ContractPrecision : I32EnumAttr<"ContractPrecision",
    "what the MXU computes a matrix product in", [
    I32EnumAttrCase<"bf16", 0>, I32EnumAttrCase<"fp32", 1>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::ember_tpu";
}
def EmberTPU_ContractPrecisionAttr
    : EnumAttr<EmberTPU_Dialect, EmberTPU_ContractPrecision, "contract_precision"> {
  let assemblyFormat = "`<` $value `>`";
}

def EmberTPU_VectorLayoutAttr : AttrDef<EmberTPU_Dialect, "VectorLayout"> {
  let mnemonic = "layout";
  let summary = "how a vector is laid out in vector registers (Mosaic's VectorLayout)";
  let description = [{
    `#ember_tpu.layout<bitwidth, {sublane_offset, lane_offset}, (rows, cols)[, implicit_dim]>`,
    the model of Mosaic's `#tpu.vpad<"bitwidth,{..},(..)[,implicit]">`:
    the vector's two minor dimensions are cut into tiles of `rows x cols`
    elements, as many tiles per vector register (8 sublanes of 128 32-bit
    lanes) as fit; elements narrower than 32 bits are packed into the
    sublanes. The offsets say where the first element sits in its register;
    `*` (replicated) says the value does not vary along sublanes or lanes,
    so any offset holds it. `implicit_dim` `-1` (or `-2`) lays a vector out
    as if a unit dimension were inserted in the minor (or second-minor)
    position: rank-1 vectors need one. Booleans (masks) take the bitwidth
    of the values compared. `ember-tpu-infer-layout` puts layouts on ops as
    `ember_tpu.in_layouts` and `ember_tpu.out_layouts`; replicated offsets
    are stored as -1.
  }];
  let parameters = (ins "int64_t":$bitwidth, "int64_t":$sublaneOffset,
                        "int64_t":$laneOffset, "int64_t":$rows,
                        "int64_t":$cols, "int64_t":$implicitDim);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Elements of this layout's width in one 32-bit word.
    int64_t packing() const { return 32 / std::max<int64_t>(getBitwidth(), 1); }
    /// The rows and columns of a vector that one register holds.
    std::pair<int64_t, int64_t> vregSlice() const {
      return {getRows(), 8 * packing() * 128 / getRows()};
    }
  }];
}

def EmberTPU_DotDimensionNumbersAttr
    : AttrDef<EmberTPU_Dialect, "DotDimensionNumbers"> {
  let mnemonic = "dot_dimension_numbers";
  let summary = "contracting, free and batch dimensions of a matmul";
  let description = [{
    `<[lhs contracting], [rhs contracting], [lhs free], [rhs free],
    [output order], [lhs batch], [rhs batch]>`; the output order lists
    (operand, dimension) pairs flattened: `[0, 0, 1, 1]` is lhs dimension 0
    then rhs dimension 1.
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$lhs_contracting_dims,
    ArrayRefParameter<"int64_t">:$rhs_contracting_dims,
    ArrayRefParameter<"int64_t">:$lhs_non_contracting_dims,
    ArrayRefParameter<"int64_t">:$rhs_non_contracting_dims,
    ArrayRefParameter<"int64_t">:$output_dim_order,
    ArrayRefParameter<"int64_t">:$lhs_batch_dims,
    ArrayRefParameter<"int64_t">:$rhs_batch_dims);
  let hasCustomAssemblyFormat = 1;
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def EmberTPU_SemaphoreType : TypeDef<EmberTPU_Dialect, "Semaphore", [MemRefElementTypeInterface]> {
  let mnemonic = "semaphore";
  let summary = "a counting semaphore (in semaphore memory)";
}
def EmberTPU_DMASemaphoreType : TypeDef<EmberTPU_Dialect, "DMASemaphore", [MemRefElementTypeInterface]> {
  let mnemonic = "dma_semaphore";
  let summary = "a semaphore a DMA signals when its bytes have landed";
}

def EmberTPU_AnySemaphore : AnyTypeOf<[EmberTPU_SemaphoreType, EmberTPU_DMASemaphoreType]>;
def EmberTPU_SemaphoreRef : MemRefRankOf<[EmberTPU_AnySemaphore], [0]>;

//===----------------------------------------------------------------------===//
// Vector ops
//===----------------------------------------------------------------------===//

def EmberTPU_VectorStoreOp : EmberTPU_Op<"vector_store", [AttrSizedOperandSegments]> {
  let summary = "stores a vector into a memref window, optionally masked or strided";
  let description = [{
    Writes `valueToStore` at `base[indices]` (with `strides`, every
    `strides[d]`-th row of dimension `d`); with a `mask`, only the lanes whose
    mask bit is set. With `add`, adds to what is there.
  }];
  let arguments = (ins AnyVectorOfNonZeroRank:$valueToStore, AnyMemRef:$base,
                       Variadic<Index>:$indices,
                       Optional<VectorOfAnyRankOf<[I1]>>:$mask,
                       DenseI32ArrayAttr:$strides,
                       DefaultValuedAttr<BoolAttr, "false">:$add);
  let assemblyFormat = [{
    $base `[` $indices `]` `,` $valueToStore (`masked` $mask^)? attr-dict
      `:` type($base) `,` type($valueToStore) `,` type($mask)
  }];
  let hasVerifier = 1;
}

def EmberTPU_StridedLoadOp : EmberTPU_Op<"strided_load"> {
  let summary = "reads every `strides[d]`-th element of a memref window";
  let description = [{
    Mosaic's `tpu.strided_load` (a ref read with `pl.ds(start, size,
    stride)`): element `i` of the result is `base[indices + i * strides]`.
  }];
  let arguments = (ins AnyMemRef:$base, Variadic<Index>:$indices,
                       DenseI32ArrayAttr:$strides);
  let results = (outs AnyVectorOfNonZeroRank:$result);
  let assemblyFormat = [{
    $base `[` $indices `]` attr-dict `:` type($base) `,` type($result)
  }];
  let hasVerifier = 1;
}

def EmberTPU_StridedStoreOp : EmberTPU_Op<"strided_store"> {
  let summary = "writes a vector to every `strides[d]`-th element of a memref window";
  let description = [{
    Mosaic's `tpu.strided_store` (a ref write with `pl.ds(start, size,
    stride)`): `base[indices + i * strides]` takes element `i`.
  }];
  let arguments = (ins AnyVectorOfNonZeroRank:$valueToStore, AnyMemRef:$base,
                       Variadic<Index>:$indices, DenseI32ArrayAttr:$strides);
  let assemblyFormat = [{
    $base `[` $indices `]` `,` $valueToStore attr-dict `:` type($base) `,`
      type($valueToStore)
  }];
  let hasVerifier = 1;
}

def EmberTPU_MatmulOp : EmberTPU_Op<"matmul", [Pure]> {
  let summary = "an MXU matrix product with an accumulator";
  let description = [{
    `acc + lhs . rhs`, contracting and batching the dimensions that
    `dimension_numbers` names; the result's dimensions come in the order it
    gives. The accumulator has the result's type. `precision` (Mosaic's:
    `fp32` for a product asked at HIGHEST precision; absent, Mosaic's
    default) is what f32 operands are multiplied in.
  }];
  let arguments = (ins AnyVectorOfNonZeroRank:$lhs, AnyVectorOfNonZeroRank:$rhs,
                       AnyVectorOfNonZeroRank:$acc,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs_hint,
                       EmberTPU_DotDimensionNumbersAttr:$dimension_numbers,
                       OptionalAttr<EmberTPU_ContractPrecisionAttr>:$precision);
  let results = (outs AnyVectorOfNonZeroRank:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $acc attr-dict `:` type($lhs) `,` type($rhs) `,` type($acc)
      `->` type($result)
  }];
  let hasVerifier = 1;
}

def EmberTPU_IotaOp : EmberTPU_Op<"iota", [Pure]> {
  let summary = "a vector of indices along the given dimensions";
  let arguments = (ins DenseI32ArrayAttr:$dimensions);
  let results = (outs VectorOfNonZeroRankOf<[AnyInteger]>:$output);
  let assemblyFormat = "attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def EmberTPU_TransposeOp : EmberTPU_Op<"transpose", [Pure]> {
  let summary = "permutes the dimensions of a vector";
  let arguments = (ins AnyVectorOfNonZeroRank:$vector, DenseI64ArrayAttr:$permutation);
  let results = (outs AnyVectorOfNonZeroRank:$result);
  let assemblyFormat = [{
    $vector `,` $permutation attr-dict `:` type($vector) `->` type($result)
  }];
  let hasVerifier = 1;
}

// A 0-d i32 tensor: a scalar of a kernel traced as values.
def EmberTPU_ScalarIndex : 0DTensorOf<[I32]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getI32Type())";
}

def EmberTPU_DynamicRotateOp : EmberTPU_Op<"dynamic_rotate",
    [Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "rotates a vector along a dimension by a run-time amount";
  let description = [{
    Mosaic's `tpu.dynamic_rotate` (`pltpu.roll`): element `i` along
    `dimension` moves to `(i + amount) mod size`, jnp.roll's direction. With
    `stride`, slice `j` along `stride_dimension` rotates by
    `amount + j * stride`.
  }];
  let arguments = (ins AnyVectorOfNonZeroRank:$value, I32:$amount, SI32Attr:$dimension,
                       OptionalAttr<SI32Attr>:$stride,
                       OptionalAttr<SI32Attr>:$stride_dimension);
  let results = (outs AnyVectorOfNonZeroRank:$result);
  let assemblyFormat = [{
    $value `by` $amount `dim` $dimension attr-dict `:` type($value) `,` type($amount)
      `->` type($result)
  }];
  let hasVerifier = 1;
}

def EmberTPU_TracedRotateOp : EmberTPU_Op<"traced_rotate",
    [Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "`pltpu.roll` (traced form)";
  let description = [{
    `pltpu.roll` in a kernel traced as a function of values (the input of
    `ember-tpu-kernel`, which makes it `dynamic_rotate`): the amount is a 0-d
    i32 tensor; the attributes are `dynamic_rotate`'s.
  }];
  let arguments = (ins AnyStaticShapeTensor:$value, EmberTPU_ScalarIndex:$amount,
                       SI32Attr:$dimension, OptionalAttr<SI32Attr>:$stride,
                       OptionalAttr<SI32Attr>:$stride_dimension);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $value `by` $amount `dim` $dimension attr-dict `:` type($value) `,` type($amount)
  }];
  let hasVerifier = 1;
}

def EmberTPU_TracedLoadOp : EmberTPU_Op<"traced_load", [Pure]> {
  let summary = "a strided ref read (traced form)";
  let description = [{
    A kernel ref read with `pl.ds(start, size, stride)` in a kernel traced as
    a function of values (the input of `ember-tpu-kernel`, which makes it
    `strided_load` on the buffer): `buffer` is the buffer's current value,
    `starts` the window's 0-d i32 starts, and element `i` of the result is
    `buffer[starts + i * strides]`.
  }];
  let arguments = (ins AnyStaticShapeTensor:$buffer, Variadic<EmberTPU_ScalarIndex>:$starts,
                       DenseI32ArrayAttr:$strides);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $buffer `[` $starts `]` attr-dict `:` type($buffer) `->` type($result)
  }];
  let hasVerifier = 1;
}

def EmberTPU_TracedStoreOp : EmberTPU_Op<"traced_store",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["buffer", "result"]>]> {
  let summary = "a strided or masked ref write (traced form)";
  let description = [{
    A kernel ref write with `pl.ds(start, size, stride)`, or
    `pltpu.store(ref, value, mask=)`, in a kernel traced as a function of
    values (`ember-tpu-kernel` makes it `strided_store`, or a masked
    `vector_store`, on the buffer): the result is `buffer` with
    `buffer[starts + i * strides]` set to element `i` of `value` (where
    `mask` holds).
  }];
  let arguments = (ins AnyStaticShapeTensor:$buffer, AnyStaticShapeTensor:$value,
                       Variadic<EmberTPU_ScalarIndex>:$starts,
                       Optional<TensorOf<[I1]>>:$mask, DenseI32ArrayAttr:$strides);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $buffer `[` $starts `]` `,` $value (`masked` $mask^)? attr-dict `:` type($buffer) `,`
      type($value) (`,` type($mask)^)?
  }];
  let hasVerifier = 1;
}

def EmberTPU_ConcatenateOp : EmberTPU_Op<"concatenate", [Pure]> {
  let summary = "joins vectors along a dimension";
  let description = [{
    Mosaic's `tpu.concatenate` (`jnp.concatenate` in a kernel): the sources
    one after another along `dimension`.
  }];
  let arguments = (ins Variadic<AnyVectorOfNonZeroRank>:$sources, I32Attr:$dimension);
  let results = (outs AnyVectorOfNonZeroRank:$output);
  let assemblyFormat = [{
    $sources `in` $dimension attr-dict `:` type($sources) `->` type($output)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Memory: windows, DMAs, semaphores
//===----------------------------------------------------------------------===//

def EmberTPU_RelayoutOp : EmberTPU_Op<"relayout",
    [Pure, AllTypesMatch<["input", "output"]>]> {
  let summary = "moves a vector from one register layout to another";
  let description = [{
    The same vector, laid out as `out_layout` from `in_layout` (Mosaic's
    `tpu.relayout`). `ember-tpu-infer-layout` inserts one wherever an op
    needs an operand in another layout than the one it was made in
    (shifting offsets, changing tilings, making a replicated value's
    offsets concrete); serialized kernels have none (Mosaic infers its own).
  }];
  let arguments = (ins AnyVectorOfNonZeroRank:$input,
                       EmberTPU_VectorLayoutAttr:$in_layout,
                       EmberTPU_VectorLayoutAttr:$out_layout);
  let results = (outs AnyVectorOfNonZeroRank:$output);
  let assemblyFormat = "$input `:` type($input) `from` qualified($in_layout) `to` qualified($out_layout) attr-dict";
  let hasVerifier = 1;
}

def EmberTPU_MemRefSliceOp : EmberTPU_Op<"memref_slice",
                                         [Pure, AttrSizedOperandSegments]> {
  let summary = "a window of a memref at the given offsets";
  let arguments = (ins AnyMemRef:$mem_ref, Variadic<I32>:$base_idx,
                       Variadic<I32>:$dynamic_sizes);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = [{
    $mem_ref `[` $base_idx `]` (`<` $dynamic_sizes^ `>`)? attr-dict `:`
      type($mem_ref) `->` type($result)
  }];
  let hasVerifier = 1;
}

def EmberTPU_EnqueueDMAOp : EmberTPU_Op<"enqueue_dma", [AttrSizedOperandSegments]> {
  let summary = "starts copying `source` into `target`";
  let description = [{
    Asynchronous: `target_semaphore` is signalled when the bytes have landed
    (`wait_dma2` waits for it). With `device_id`, `target` is on another
    device (a remote copy). The operands are those of Mosaic's serialization
    version 11, which Ember writes (later versions add a subcore id).
  }];
  let arguments = (ins AnyMemRef:$source, Optional<EmberTPU_SemaphoreRef>:$source_semaphore,
                       AnyMemRef:$target, Optional<EmberTPU_SemaphoreRef>:$target_semaphore,
                       Optional<I32>:$device_id, Optional<I32>:$core_id,
                       DefaultValuedAttr<I32Attr, "0">:$priority,
                       DefaultValuedAttr<BoolAttr, "false">:$strict_ordering);
  let assemblyFormat = [{
    `source` `(` $source `:` type($source) `)`
    `target` `(` $target `:` type($target) `)`
    (`source_semaphore` `(` $source_semaphore^ `:` type($source_semaphore) `)`)?
    (`target_semaphore` `(` $target_semaphore^ `:` type($target_semaphore) `)`)?
    (`device_id` `(` $device_id^ `)`)? (`core_id` `(` $core_id^ `)`)? attr-dict
  }];
  let hasVerifier = 1;
}

def EmberTPU_WaitDMA2Op : EmberTPU_Op<"wait_dma2", [AttrSizedOperandSegments]> {
  let summary = "waits until the copy from `src` to `dst` signalled `semaphore`";
  let arguments = (ins EmberTPU_SemaphoreRef:$semaphore, AnyMemRef:$src, AnyMemRef:$dst,
                       Optional<I32>:$device_id, Optional<I32>:$core_id,
                       DefaultValuedAttr<BoolAttr, "false">:$strict_ordering);
  let assemblyFormat = [{
    `semaphore` `(` $semaphore `:` type($semaphore) `)` `src` `(` $src `:` type($src) `)`
    `dst` `(` $dst `:` type($dst) `)` (`device_id` `(` $device_id^ `)`)?
    (`core_id` `(` $core_id^ `)`)? attr-dict
  }];
  let hasVerifier = 1;
}

def EmberTPU_SemaphoreSignalOp : EmberTPU_Op<"sem_signal", [AttrSizedOperandSegments]> {
  let summary = "adds `amount` to a semaphore (on another device with `device_id`)";
  let arguments = (ins EmberTPU_SemaphoreRef:$semaphore, I32:$amount,
                       Optional<I32>:$device_id, Optional<I32>:$core_id);
  let assemblyFormat = [{
    $semaphore `,` $amount (`device_id` $device_id^)? (`core_id` $core_id^)?
      attr-dict `:` type($semaphore)
  }];
  let hasVerifier = 1;
}

def EmberTPU_SemaphoreWaitOp : EmberTPU_Op<"sem_wait"> {
  let summary = "waits until a semaphore holds `amount`, then subtracts it";
  let arguments = (ins EmberTPU_SemaphoreRef:$semaphore, I32:$amount);
  let assemblyFormat = "$semaphore `,` $amount attr-dict `:` type($semaphore)";
  let hasVerifier = 1;
}

def EmberTPU_SemaphoreReadOp : EmberTPU_Op<"sem_read"> {
  let summary = "the current value of a semaphore";
  let arguments = (ins EmberTPU_SemaphoreRef:$semaphore);
  let results = (outs I32:$result);
  let assemblyFormat = "$semaphore attr-dict `:` type($semaphore) `->` type($result)";
  let hasVerifier = 1;
}

def EmberTPU_MemRefSqueezeOp : EmberTPU_Op<"memref_squeeze", [Pure]> {
  let summary = "a memref with some of its unit dimensions dropped";
  let arguments = (ins AnyMemRef:$input);
  let results = (outs AnyMemRef:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def EmberTPU_DeviceIdOp : EmberTPU_Op<"device_id", [Pure]> {
  let summary = "the logical id of the device the kernel runs on";
  let description = [{
    Mosaic's `tpu.device_id`: in a kernel under `shard_map`, the device's
    logical id, from which a mesh axis index is computed.
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def EmberTPU_SemaphoreBarrierOp : EmberTPU_Op<"sem_barrier", [Pure]> {
  let summary = "the kernel's barrier semaphore (pltpu.get_barrier_semaphore)";
  let description = [{
    Mosaic's `tpu.sem_barrier`: the semaphore devices signal each other to
    meet (the kernel's `collective_id` names it).
  }];
  let results = (outs EmberTPU_SemaphoreRef:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def EmberTPU_SemaphoreAllocOp : EmberTPU_Op<"sem_alloc"> {
  let summary = "semaphores allocated for the rest of the enclosing region";
  let description = [{
    Mosaic's `tpu.sem_alloc`: fresh semaphores (zero), live until the end of
    the enclosing `region` (`pl.run_scoped`'s semaphores).
  }];
  let results = (outs Res<MemRefOf<[EmberTPU_AnySemaphore]>, "",
                          [MemAlloc<DefaultResource>]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def EmberTPU_RegionOp : EmberTPU_Op<"region",
    [RecursiveMemoryEffects, SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "a scope for the buffers and semaphores allocated in it";
  let description = [{
    Mosaic's `tpu.region`: runs its single block once; the `memref.alloca`
    buffers and `sem_alloc` semaphores made in it live until its end
    (`pl.run_scoped`). Its results are the operands of its `yield`.
  }];
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$region);
  let assemblyFormat = "attr-dict-with-keyword $region (`:` type($results)^)?";
  let hasVerifier = 1;
}

def EmberTPU_YieldOp : EmberTPU_Op<"yield",
    [Pure, Terminator, ReturnLike, HasParent<"RegionOp">]> {
  let summary = "ends a region, giving its results";
  let arguments = (ins Variadic<AnyType>:$results);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
  let assemblyFormat = "attr-dict ($results^ `:` type($results))?";
}

//===----------------------------------------------------------------------===//
// Traced DMAs (before ember-tpu-kernel)
//===----------------------------------------------------------------------===//

def EmberTPU_PRNGSetSeed32Op : EmberTPU_Op<"prng_set_seed_32",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "seeds the TPU's hardware PRNG (pltpu.prng_seed)";
  let description = [{
    Mosaic's `tpu.prng_set_seed_32`: sets the core's PRNG state from one or
    more 32-bit seeds, which it mixes.

    ```mlir
    ember_tpu.prng_set_seed_32 %s0, %s1
    ```
  }];
  let arguments = (ins Variadic<I32>:$seeds);
  let assemblyFormat = "$seeds attr-dict";
  let hasVerifier = 1;
}

def EmberTPU_PRNGRandomBitsOp : EmberTPU_Op<"prng_random_bits",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "random bits from the TPU's hardware PRNG (pltpu.prng_random_bits)";
  let description = [{
    Mosaic's `tpu.prng_random_bits`: a vector of 32-bit random bits from the
    core's PRNG, whose state moves on.

    ```mlir
    %bits = ember_tpu.prng_random_bits : vector<8x128xi32>
    ```
  }];
  let results = (outs VectorOfAnyRankOf<[I32]>:$output);
  let assemblyFormat = "attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def EmberTPU_TracedPRNGSeedOp : EmberTPU_Op<"traced_prng_seed",
    [MemoryEffects<[MemWrite]>]> {
  let summary = "seeds the PRNG (traced form)";
  let description = [{
    `pltpu.prng_seed` in a kernel traced as a function of values (the input
    of `ember-tpu-kernel`, which makes it `prng_set_seed_32`): the seeds as
    0-d i32 tensors.
  }];
  let arguments = (ins Variadic<EmberTPU_ScalarIndex>:$seeds);
  let assemblyFormat = "$seeds attr-dict";
  let hasVerifier = 1;
}

def EmberTPU_TracedPRNGRandomBitsOp : EmberTPU_Op<"traced_prng_random_bits",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "random bits from the PRNG (traced form)";
  let description = [{
    `pltpu.prng_random_bits` in a kernel traced as a function of values:
    `ember-tpu-kernel` makes it `prng_random_bits` of the tensor's shape.
  }];
  let results = (outs StaticShapeTensorOf<[I32]>:$bits);
  let assemblyFormat = "attr-dict `:` type($bits)";
  let hasVerifier = 1;
}

class EmberTPU_TracedDMAOp<string mnemonic, dag outs>
    : EmberTPU_Op<mnemonic, [AttrSizedOperandSegments]> {
  let description = [{
    A DMA in a kernel traced as a function of values (the input of
    `ember-tpu-kernel`): `src` and `dst` are the current values of the
    kernel buffers numbered `src_buffer` and `dst_buffer` (arguments after
    the grid), the windows start at the 0-d starts and have `*_sizes`, the
    `*_squeezed` dimensions are dropped from the window, and the semaphore
    is element `sem_starts` of buffer `sem_buffer`. A remote copy
    (`make_async_remote_copy`) has the target's logical `device_id` and/or
    its TensorCore `core_id` (another core of this device, in a core_map
    kernel); its start also names the send semaphore (`src_sem_buffer`,
    `src_sem_starts`), and a wait with `send` waits on the send semaphore
    (`sem_buffer`) until the source is read, the destination unchanged.
  }];
  let arguments = (ins AnyRankedTensor:$src, AnyRankedTensor:$dst,
                       Variadic<EmberTPU_ScalarIndex>:$src_starts,
                       Variadic<EmberTPU_ScalarIndex>:$dst_starts,
                       Variadic<EmberTPU_ScalarIndex>:$sem_starts,
                       Variadic<EmberTPU_ScalarIndex>:$src_sem_starts,
                       Optional<EmberTPU_ScalarIndex>:$device_id,
                       Optional<EmberTPU_ScalarIndex>:$core_id,
                       I64Attr:$src_buffer, I64Attr:$dst_buffer, I64Attr:$sem_buffer,
                       DenseI64ArrayAttr:$src_sizes, DenseI64ArrayAttr:$dst_sizes,
                       DenseI64ArrayAttr:$src_squeezed, DenseI64ArrayAttr:$dst_squeezed,
                       OptionalAttr<I64Attr>:$src_sem_buffer, UnitAttr:$send);
  let results = outs;
  let hasVerifier = 1;
}

def EmberTPU_TracedDMAStartOp
    : EmberTPU_TracedDMAOp<"traced_dma_start", (outs)> {
  let summary = "starts a DMA between kernel buffers (traced form)";
  let assemblyFormat = [{
    $src `[` $src_starts `]` `,` $dst `[` $dst_starts `]` `,` `sem` `[` $sem_starts `]`
      (`send_sem` `[` $src_sem_starts^ `]`)? (`device` $device_id^)?
      (`core` $core_id^)? attr-dict `:` type($src) `,` type($dst)
  }];
}

def EmberTPU_TracedDMAWaitOp
    : EmberTPU_TracedDMAOp<"traced_dma_wait", (outs AnyRankedTensor:$dst_after)> {
  let summary = "waits for a DMA; the destination buffer's new value (traced form)";
  let assemblyFormat = [{
    $src `[` $src_starts `]` `,` $dst `[` $dst_starts `]` `,` `sem` `[` $sem_starts `]`
      (`send_sem` `[` $src_sem_starts^ `]`)? (`device` $device_id^)?
      (`core` $core_id^)? attr-dict `:` type($src) `,` type($dst) `->` type($dst_after)
  }];
}

class EmberTPU_TracedSemOp<string mnemonic, dag ins, dag outs, list<Trait> traits = []>
    : EmberTPU_Op<mnemonic, traits> {
  let description = [{
    A regular semaphore operation in a kernel traced as a function of values
    (the input of `ember-tpu-kernel`): the semaphore is element `sem_starts`
    of kernel buffer `sem_buffer`.
  }];
  let arguments = ins;
  let results = outs;
}

def EmberTPU_TracedSemSignalOp : EmberTPU_TracedSemOp<"traced_sem_signal",
    (ins EmberTPU_ScalarIndex:$amount, Variadic<EmberTPU_ScalarIndex>:$sem_starts,
         Optional<EmberTPU_ScalarIndex>:$device_id, Optional<EmberTPU_ScalarIndex>:$core_id,
         I64Attr:$sem_buffer), (outs),
    [AttrSizedOperandSegments]> {
  let summary = "adds to a regular semaphore, of device `device_id` and TensorCore `core_id` "
                "if given (traced form)";
  let assemblyFormat = [{
    $amount `,` `sem` `[` $sem_starts `]` (`device` $device_id^)? (`core` $core_id^)?
    attr-dict
  }];
}

def EmberTPU_TracedSemWaitOp : EmberTPU_TracedSemOp<"traced_sem_wait",
    (ins EmberTPU_ScalarIndex:$amount, Variadic<EmberTPU_ScalarIndex>:$sem_starts,
         I64Attr:$sem_buffer), (outs)> {
  let summary = "waits on a regular semaphore (traced form)";
  let assemblyFormat = "$amount `,` `sem` `[` $sem_starts `]` attr-dict";
}

def EmberTPU_TracedSemReadOp : EmberTPU_TracedSemOp<"traced_sem_read",
    (ins Variadic<EmberTPU_ScalarIndex>:$sem_starts, I64Attr:$sem_buffer),
    (outs EmberTPU_ScalarIndex:$value)> {
  let summary = "reads a regular semaphore (traced form)";
  let assemblyFormat = "`sem` `[` $sem_starts `]` attr-dict";
}

def EmberTPU_TracedAllocOp : EmberTPU_Op<"traced_alloc"> {
  let summary = "a scoped kernel buffer (pl.run_scoped; traced form)";
  let description = [{
    A buffer allocated while the kernel runs (`pl.run_scoped`), in a kernel
    traced as a function of values: the result is its (undefined) initial
    contents, and it is kernel buffer number `buffer` (numbered after the
    arguments, in order). `dma_semaphore` marks semaphores that DMAs signal;
    `barrier` is the kernel's barrier semaphore (`get_barrier_semaphore`),
    not an allocation.
  }];
  let arguments = (ins I64Attr:$buffer, EmberTPU_MemorySpaceAttr:$memory_space,
                       UnitAttr:$dma_semaphore, UnitAttr:$barrier);
  let results = (outs Res<AnyRankedTensor, "", [MemAlloc<DefaultResource>]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // EMBER_TPU_OPS_TD
