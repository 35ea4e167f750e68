//===- EmberBase.td - the ember dialect and its attributes -*- tablegen -*-===//
#ifndef EMBER_BASE_TD
#define EMBER_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Ember_Dialect : Dialect {
  let name = "ember";
  let summary = "Array operations with value semantics, traced from Python";
  let description = [{
    The `ember` dialect holds the array operations a JAX-style program is traced
    into: elementwise math, structural ops, reductions, contractions, gather and
    scatter, and the random-bit primitive. Operands are ranked tensors. Signed
    integers are signless (`i32`), unsigned integers are `ui32`, booleans `i1`.
  }];
  let cppNamespace = "::mlir::ember";
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
}

// Element types JAX has.
def Ember_Bool : I<1>;
// (2- and 4-bit integers: ml_dtypes' int2/int4/uint2/uint4, one per byte;
// ember-widen-narrow-ints computes on them in 8 bits.)
def Ember_SInt : AnyTypeOf<[I<2>, I<4>, I8, I16, I32, I64]>;
def Ember_UInt : AnyTypeOf<[UI<2>, UI<4>, UI8, UI16, UI32, UI64]>;
def Ember_Int : AnyTypeOf<[Ember_SInt, Ember_UInt]>;
// 8- and 4-bit floats (ml_dtypes'; stored one per byte, computed in f32).
def Ember_NarrowFloat : AnyTypeOf<[F8E4M3FN, F8E5M2, F8E4M3B11FNUZ, F8E4M3FNUZ,
                                   F8E5M2FNUZ, F8E3M4, F8E4M3, F8E8M0FNU,
                                   F4E2M1FN]>;
def Ember_Float : AnyTypeOf<[F16, BF16, F32, F64, Ember_NarrowFloat]>;
def Ember_Complex : AnyTypeOf<[Complex<F32>, Complex<F64>]>;
def Ember_Element : AnyTypeOf<[Ember_Bool, Ember_Int, Ember_Float, Ember_Complex]>;

def Ember_Tensor : StaticShapeTensorOf<[Ember_Element]>;

// What `ember-to-linalg` leaves of the dialect (optimization barriers) also
// holds the `?` dimensions of a program compiled for every size
// (python/ember/_src/dynamic_shapes.py).
def Ember_RankedTensor : RankedTensorOf<[Ember_Element]>;

// A mutable array reference (JAX's `Ref`): a buffer holding a value of a
// statically shaped tensor type, read and written by the ref ops.
def Ember_RefType : TypeDef<Ember_Dialect, "Ref"> {
  let mnemonic = "ref";
  let summary = "mutable array reference";
  let description = [{
    `!ember.ref<tensor<3xf32>>` is a buffer that holds a `tensor<3xf32>`
    value (JAX's `Ref`). Functions take refs as arguments; `ember.ref_get`,
    `ember.ref_set`, `ember.ref_swap` and `ember.ref_addupdate` read and
    write it. The codegen makes each ref argument a buffer updated in place
    (`ember-to-linalg`; docs/spec.md, "Refs").
  }];
  let parameters = (ins "::mlir::RankedTensorType":$valueType);
  let assemblyFormat = "`<` $valueType `>`";
  let genVerifyDecl = 1;
}
// What a transformation op (jvp, vjp, vmap) passes to its function.
def Ember_TensorOrRef : AnyTypeOf<[Ember_Tensor, Ember_RefType]>;
def Ember_BoolTensor : StaticShapeTensorOf<[Ember_Bool]>;
def Ember_IntTensor : StaticShapeTensorOf<[Ember_Int]>;
def Ember_IntOrBoolTensor : StaticShapeTensorOf<[Ember_Bool, Ember_Int]>;
def Ember_FloatTensor : StaticShapeTensorOf<[Ember_Float]>;
def Ember_FloatOrComplexTensor : StaticShapeTensorOf<[Ember_Float, Ember_Complex]>;
def Ember_NumericTensor : StaticShapeTensorOf<[Ember_Int, Ember_Float, Ember_Complex]>;
def Ember_RealTensor : StaticShapeTensorOf<[Ember_Int, Ember_Float]>;
def Ember_ComplexTensor : StaticShapeTensorOf<[Ember_Complex]>;
def Ember_ScalarIndexTensor : 0DTensorOf<[Ember_Int]>;
def Ember_U32Tensor : StaticShapeTensorOf<[UI32]>;

// Enumerations.
def Ember_CmpEQ : I32EnumAttrCase<"EQ", 0>;
def Ember_CmpNE : I32EnumAttrCase<"NE", 1>;
def Ember_CmpLT : I32EnumAttrCase<"LT", 2>;
def Ember_CmpLE : I32EnumAttrCase<"LE", 3>;
def Ember_CmpGT : I32EnumAttrCase<"GT", 4>;
def Ember_CmpGE : I32EnumAttrCase<"GE", 5>;
def Ember_ComparisonDirection : I32EnumAttr<"ComparisonDirection",
    "comparison direction",
    [Ember_CmpEQ, Ember_CmpNE, Ember_CmpLT, Ember_CmpLE, Ember_CmpGT, Ember_CmpGE]> {
  let cppNamespace = "::mlir::ember";
  let genSpecializedAttr = 0;
}
def Ember_ComparisonDirectionAttr : EnumAttr<Ember_Dialect, Ember_ComparisonDirection, "cmp">;

def Ember_RedSum : I32EnumAttrCase<"Sum", 0, "sum">;
def Ember_RedProd : I32EnumAttrCase<"Prod", 1, "prod">;
def Ember_RedMax : I32EnumAttrCase<"Max", 2, "max">;
def Ember_RedMin : I32EnumAttrCase<"Min", 3, "min">;
def Ember_RedAnd : I32EnumAttrCase<"And", 4, "and">;
def Ember_RedOr : I32EnumAttrCase<"Or", 5, "or">;
def Ember_RedXor : I32EnumAttrCase<"Xor", 6, "xor">;
def Ember_ReduceKind : I32EnumAttr<"ReduceKind", "reduction combiner",
    [Ember_RedSum, Ember_RedProd, Ember_RedMax, Ember_RedMin, Ember_RedAnd,
     Ember_RedOr, Ember_RedXor]> {
  let cppNamespace = "::mlir::ember";
  let genSpecializedAttr = 0;
}
def Ember_ReduceKindAttr : EnumAttr<Ember_Dialect, Ember_ReduceKind, "reduce">;

def Ember_ScReplace : I32EnumAttrCase<"Replace", 0, "replace">;
def Ember_ScAdd : I32EnumAttrCase<"Add", 1, "add">;
def Ember_ScMul : I32EnumAttrCase<"Mul", 2, "mul">;
def Ember_ScMin : I32EnumAttrCase<"Min", 3, "min">;
def Ember_ScMax : I32EnumAttrCase<"Max", 4, "max">;
def Ember_ScatterKind : I32EnumAttr<"ScatterKind", "scatter combiner",
    [Ember_ScReplace, Ember_ScAdd, Ember_ScMul, Ember_ScMin, Ember_ScMax]> {
  let cppNamespace = "::mlir::ember";
  let genSpecializedAttr = 0;
}
def Ember_ScatterKindAttr : EnumAttr<Ember_Dialect, Ember_ScatterKind, "scatter">;

def Ember_ModeClip : I32EnumAttrCase<"Clip", 0, "clip">;
def Ember_ModeFill : I32EnumAttrCase<"Fill", 1, "fill">;
def Ember_IndexMode : I32EnumAttr<"IndexMode",
    "out-of-bounds handling: clip indices, or fill (gather) / drop (scatter)",
    [Ember_ModeClip, Ember_ModeFill]> {
  let cppNamespace = "::mlir::ember";
  let genSpecializedAttr = 0;
}
def Ember_IndexModeAttr : EnumAttr<Ember_Dialect, Ember_IndexMode, "mode">;

#endif // EMBER_BASE_TD
