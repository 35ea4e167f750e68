//===- MosaicSerialOps.td - Mosaic's attribute vocabulary -*- tablegen -*-===//
//
// The attributes and types of Mosaic's `tpu` dialect, under its name, for
// the serialized kernels Ember writes (targets/tpu.py): a serialized module's
// ops are unregistered `stable_mosaic.*` ops, but memref memory spaces must
// be attributes of a registered (non-builtin) dialect, and a reader parses
// these by Mosaic's syntax. Only `ember-tpu-serialize`'s output uses them;
// kernels are built and verified in `ember_tpu`.
//
//===----------------------------------------------------------------------===//
#ifndef MOSAIC_SERIAL_OPS_TD
#define MOSAIC_SERIAL_OPS_TD

include "EmberTPUOps.td"

def MosaicSerial_Dialect : Dialect {
  let name = "tpu";
  let summary = "Mosaic TPU's attributes and types, for serialized kernels only";
  let cppNamespace = "::mlir::ember_tpu::serial";
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
}

def MosaicSerial_MemorySpaceAttr
    : EnumAttr<MosaicSerial_Dialect, EmberTPU_MemorySpace, "memory_space"> {
  let assemblyFormat = "`<` $value `>`";
}
def MosaicSerial_DimensionSemanticsAttr
    : EnumAttr<MosaicSerial_Dialect, EmberTPU_DimensionSemantics, "dimension_semantics"> {
  let assemblyFormat = "`<` $value `>`";
}
def MosaicSerial_CoreTypeAttr : EnumAttr<MosaicSerial_Dialect, EmberTPU_CoreType, "core_type"> {
  let assemblyFormat = "`<` $value `>`";
}
def MosaicSerial_PipelineModeAttr
    : EnumAttr<MosaicSerial_Dialect, EmberTPU_PipelineMode, "pipeline_mode"> {
  let assemblyFormat = "`<` $value `>`";
}
def MosaicSerial_RevisitModeAttr
    : EnumAttr<MosaicSerial_Dialect, EmberTPU_RevisitMode, "revisit_mode"> {
  let assemblyFormat = "`<` $value `>`";
}
def MosaicSerial_ContractPrecisionAttr
    : EnumAttr<MosaicSerial_Dialect, EmberTPU_ContractPrecision, "contract_precision"> {
  let assemblyFormat = "`<` $value `>`";
}
def MosaicSerial_DotDimensionNumbersAttr
    : AttrDef<MosaicSerial_Dialect, "DotDimensionNumbers"> {
  let mnemonic = "dot_dimension_numbers";
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
def MosaicSerial_SemaphoreType : TypeDef<MosaicSerial_Dialect, "Semaphore", [MemRefElementTypeInterface]> {
  let mnemonic = "semaphore";
}
def MosaicSerial_DMASemaphoreType : TypeDef<MosaicSerial_Dialect, "DMASemaphore", [MemRefElementTypeInterface]> {
  let mnemonic = "dma_semaphore";
}

#endif // MOSAIC_SERIAL_OPS_TD
