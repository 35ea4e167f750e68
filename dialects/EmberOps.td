//===- EmberOps.td - ember array operations --------------*- tablegen -*-===//
//
// Semantics and the numbered verifier rules are in docs/spec.md; the rule
// numbers (e.g. `slice_c2`) appear in the verifiers and in invalid.mlir.
//
//===----------------------------------------------------------------------===//
#ifndef EMBER_OPS_TD
#define EMBER_OPS_TD

include "EmberBase.td"
include "EmberInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/OpBase.td"

class Ember_Op<string mnemonic, list<Trait> traits = []>
    : Op<Ember_Dialect, mnemonic,
         traits # [Ember_DifferentiableOpInterface, Ember_BatchableOpInterface]>;

// Transformation ops reference a function by symbol and are expanded by passes.
class Ember_TransformOp<string mnemonic, list<Trait> traits = []>
    : Op<Ember_Dialect, mnemonic,
         traits # [AttrSizedOperandSegments, Ember_RulesInPasses,
                   DeclareOpInterfaceMethods<SymbolUserOpInterface>]>;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Ember_ConstantOp : Ember_Op<"constant",
    [Ember_ZeroTangent, ConstantLike, Pure, AllTypesMatch<["value", "output"]>]> {
  let summary = "a constant tensor";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Ember_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Ember_IotaOp : Ember_Op<"iota", [Ember_ZeroTangent, Pure]> {
  let summary = "indices along one dimension";
  let arguments = (ins I64Attr:$iota_dimension);
  let results = (outs StaticShapeTensorOf<[Ember_Int, Ember_Float]>:$output);
  let assemblyFormat = "`dim` `=` $iota_dimension attr-dict `:` type($output)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Ember_UnaryOp<string mnemonic, Type T, list<Trait> traits = []>
    : Ember_Op<mnemonic, traits # [Pure, Elementwise, SameOperandsAndResultType]> {
  let arguments = (ins T:$operand);
  let results = (outs T:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

def Ember_NegOp : Ember_UnaryOp<"neg", Ember_NumericTensor, [Ember_Linear]> { let hasFolder = 1; }
def Ember_AbsOp : Ember_UnaryOp<"abs", Ember_RealTensor>;
def Ember_SignOp : Ember_UnaryOp<"sign", Ember_RealTensor, [Ember_ZeroTangent]>;
def Ember_FloorOp : Ember_UnaryOp<"floor", Ember_FloatTensor, [Ember_ZeroTangent]>;
def Ember_CeilOp : Ember_UnaryOp<"ceil", Ember_FloatTensor, [Ember_ZeroTangent]>;
def Ember_RoundNearestAfzOp : Ember_UnaryOp<"round_nearest_afz", Ember_FloatTensor, [Ember_ZeroTangent]>;
def Ember_RoundNearestEvenOp : Ember_UnaryOp<"round_nearest_even", Ember_FloatTensor, [Ember_ZeroTangent]>;
def Ember_ExpOp : Ember_UnaryOp<"exp", Ember_FloatOrComplexTensor>;
def Ember_Exp2Op : Ember_UnaryOp<"exp2", Ember_FloatTensor>;
def Ember_LogOp : Ember_UnaryOp<"log", Ember_FloatOrComplexTensor>;
def Ember_Log1pOp : Ember_UnaryOp<"log1p", Ember_FloatTensor>;
def Ember_Expm1Op : Ember_UnaryOp<"expm1", Ember_FloatTensor>;
def Ember_TanhOp : Ember_UnaryOp<"tanh", Ember_FloatOrComplexTensor>;
def Ember_LogisticOp : Ember_UnaryOp<"logistic", Ember_FloatTensor>;
def Ember_SinOp : Ember_UnaryOp<"sin", Ember_FloatOrComplexTensor>;
def Ember_CosOp : Ember_UnaryOp<"cos", Ember_FloatOrComplexTensor>;
def Ember_TanOp : Ember_UnaryOp<"tan", Ember_FloatTensor>;
def Ember_AsinOp : Ember_UnaryOp<"asin", Ember_FloatTensor>;
def Ember_AcosOp : Ember_UnaryOp<"acos", Ember_FloatTensor>;
def Ember_AtanOp : Ember_UnaryOp<"atan", Ember_FloatTensor>;
def Ember_SinhOp : Ember_UnaryOp<"sinh", Ember_FloatTensor>;
def Ember_CoshOp : Ember_UnaryOp<"cosh", Ember_FloatTensor>;
def Ember_AsinhOp : Ember_UnaryOp<"asinh", Ember_FloatTensor>;
def Ember_AcoshOp : Ember_UnaryOp<"acosh", Ember_FloatTensor>;
def Ember_AtanhOp : Ember_UnaryOp<"atanh", Ember_FloatTensor>;
def Ember_SqrtOp : Ember_UnaryOp<"sqrt", Ember_FloatOrComplexTensor>;
def Ember_RsqrtOp : Ember_UnaryOp<"rsqrt", Ember_FloatTensor>;
def Ember_CbrtOp : Ember_UnaryOp<"cbrt", Ember_FloatTensor>;
def Ember_ErfOp : Ember_UnaryOp<"erf", Ember_FloatTensor>;
def Ember_ErfInvOp : Ember_UnaryOp<"erf_inv", Ember_FloatTensor>;
def Ember_LgammaOp : Ember_UnaryOp<"lgamma", Ember_FloatTensor>;
def Ember_DigammaOp : Ember_UnaryOp<"digamma", Ember_FloatTensor>;
def Ember_BesselI0eOp : Ember_UnaryOp<"bessel_i0e", Ember_FloatTensor>;
def Ember_BesselI1eOp : Ember_UnaryOp<"bessel_i1e", Ember_FloatTensor>;
def Ember_NotOp : Ember_UnaryOp<"not", Ember_IntOrBoolTensor, [Ember_ZeroTangent]> { let hasFolder = 1; }
def Ember_PopulationCountOp : Ember_UnaryOp<"population_count", Ember_IntTensor, [Ember_ZeroTangent]>;
def Ember_ClzOp : Ember_UnaryOp<"clz", Ember_IntTensor, [Ember_ZeroTangent]>;
def Ember_ConjOp : Ember_UnaryOp<"conj", Ember_ComplexTensor, [Ember_Linear]>;

def Ember_IntegerPowOp : Ember_Op<"integer_pow",
    [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "x raised to a constant integer power";
  let description = [{
    `x^y` for a constant integer `y` (JAX's `integer_pow`), computed by
    repeated squaring and multiplication; a negative `y` divides one by the
    product. `y = 0` gives ones.
  }];
  let arguments = (ins Ember_NumericTensor:$operand, I64Attr:$y);
  let results = (outs Ember_NumericTensor:$result);
  let assemblyFormat = "$operand `,` `y` `=` $y attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Ember_IsFiniteOp : Ember_Op<"is_finite",
    [Ember_ZeroTangent, Pure, Elementwise, SameOperandsAndResultShape, InferTypeOpAdaptor]> {
  let summary = "true where the operand is neither infinite nor NaN";
  let arguments = (ins Ember_FloatTensor:$operand);
  let results = (outs Ember_BoolTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` functional-type(operands, results)";
}

class Ember_ComplexPartOp<string mnemonic>
    : Ember_Op<mnemonic, [Ember_Linear, Pure, Elementwise, SameOperandsAndResultShape,
                          InferTypeOpAdaptor]> {
  let arguments = (ins Ember_ComplexTensor:$operand);
  let results = (outs Ember_FloatTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` functional-type(operands, results)";
}
def Ember_RealOp : Ember_ComplexPartOp<"real">;
def Ember_ImagOp : Ember_ComplexPartOp<"imag">;

class Ember_BinaryOp<string mnemonic, Type T, list<Trait> traits = []>
    : Ember_Op<mnemonic, traits # [Pure, Elementwise, SameOperandsAndResultType]> {
  let arguments = (ins T:$lhs, T:$rhs);
  let results = (outs T:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Ember_AddOp : Ember_BinaryOp<"add", Ember_Tensor, [Ember_Linear, Commutative]> { let hasFolder = 1; }
def Ember_SubOp : Ember_BinaryOp<"sub", Ember_NumericTensor, [Ember_Linear]> { let hasFolder = 1; }
def Ember_MulOp : Ember_BinaryOp<"mul", Ember_Tensor, [Commutative]> { let hasFolder = 1; }
def Ember_DivOp : Ember_BinaryOp<"div", Ember_NumericTensor> { let hasFolder = 1; }
def Ember_RemOp : Ember_BinaryOp<"rem", Ember_RealTensor>;
def Ember_PowOp : Ember_BinaryOp<"pow", Ember_NumericTensor>;
def Ember_MaxOp : Ember_BinaryOp<"max", Ember_Tensor, [Commutative]>;
def Ember_MinOp : Ember_BinaryOp<"min", Ember_Tensor, [Commutative]>;
def Ember_Atan2Op : Ember_BinaryOp<"atan2", Ember_FloatTensor>;
def Ember_NextAfterOp : Ember_BinaryOp<"nextafter", Ember_FloatTensor, [Ember_ZeroTangent]>;
def Ember_AndOp : Ember_BinaryOp<"and", Ember_IntOrBoolTensor, [Ember_ZeroTangent, Commutative]>;
def Ember_OrOp : Ember_BinaryOp<"or", Ember_IntOrBoolTensor, [Ember_ZeroTangent, Commutative]>;
def Ember_XorOp : Ember_BinaryOp<"xor", Ember_IntOrBoolTensor, [Ember_ZeroTangent, Commutative]>;
def Ember_ShiftLeftOp : Ember_BinaryOp<"shift_left", Ember_IntTensor, [Ember_ZeroTangent]>;
def Ember_ShiftRightLogicalOp : Ember_BinaryOp<"shift_right_logical", Ember_IntTensor, [Ember_ZeroTangent]>;
def Ember_ShiftRightArithmeticOp : Ember_BinaryOp<"shift_right_arithmetic", Ember_IntTensor, [Ember_ZeroTangent]>;

def Ember_ComplexOp : Ember_Op<"complex",
    [Ember_Linear, Pure, Elementwise, SameOperandsShape, SameOperandsElementType,
     SameOperandsAndResultShape, InferTypeOpAdaptor]> {
  let summary = "complex number from real and imaginary parts";
  let arguments = (ins StaticShapeTensorOf<[F32, F64]>:$lhs, StaticShapeTensorOf<[F32, F64]>:$rhs);
  let results = (outs Ember_ComplexTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Ember_CompareOp : Ember_Op<"compare",
    [Ember_ZeroTangent, Pure, Elementwise, SameTypeOperands, SameOperandsAndResultShape,
     InferTypeOpAdaptor]> {
  let summary = "elementwise comparison (IEEE: any comparison with NaN is false, NE true)";
  let arguments = (ins Ember_ComparisonDirectionAttr:$comparison_direction,
                       Ember_Tensor:$lhs, Ember_Tensor:$rhs);
  let results = (outs Ember_BoolTensor:$result);
  let assemblyFormat = [{
    $comparison_direction `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Ember_SelectOp : Ember_Op<"select", [Pure, Elementwise,
    AllTypesMatch<["on_true", "on_false", "result"]>, AllShapesMatch<["pred", "result"]>]> {
  let summary = "pick on_true where pred holds, else on_false";
  let arguments = (ins Ember_BoolTensor:$pred, Ember_Tensor:$on_true, Ember_Tensor:$on_false);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $pred `,` $on_true `,` $on_false attr-dict `:` type($pred) `,` type($result)
  }];
  let hasFolder = 1;
}

def Ember_ClampOp : Ember_Op<"clamp", [Pure, Elementwise,
    AllTypesMatch<["min", "operand", "max", "result"]>]> {
  let summary = "min(max(operand, min), max)";
  let arguments = (ins Ember_RealTensor:$min, Ember_RealTensor:$operand, Ember_RealTensor:$max);
  let results = (outs Ember_RealTensor:$result);
  let assemblyFormat = "$min `,` $operand `,` $max attr-dict `:` type($result)";
}

def Ember_ConvertOp : Ember_Op<"convert", [Pure, Elementwise, SameOperandsAndResultShape]> {
  let summary = "convert elements to another dtype (C casts; float to int truncates, saturating)";
  let arguments = (ins Ember_Tensor:$operand);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Ember_BitcastConvertOp : Ember_Op<"bitcast_convert", [Pure]> {
  let summary = "reinterpret the bits of each element as another dtype";
  let arguments = (ins Ember_Tensor:$operand);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Structural
//===----------------------------------------------------------------------===//

def Ember_BroadcastInDimOp : Ember_Op<"broadcast_in_dim", [Ember_Linear, Pure]> {
  let summary = "broadcast an operand into a larger shape";
  let arguments = (ins Ember_Tensor:$operand, DenseI64ArrayAttr:$broadcast_dimensions);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `dims` `=` $broadcast_dimensions attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Ember_ReshapeOp : Ember_Op<"reshape", [Ember_Linear, Pure]> {
  let summary = "same elements in row-major order, another shape";
  let arguments = (ins Ember_Tensor:$operand);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Ember_TransposeOp : Ember_Op<"transpose", [Ember_Linear, Pure, InferTypeOpAdaptor]> {
  let summary = "permute dimensions: result dim i is operand dim permutation[i]";
  let arguments = (ins Ember_Tensor:$operand, DenseI64ArrayAttr:$permutation);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `dims` `=` $permutation attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Ember_SliceOp : Ember_Op<"slice", [Ember_Linear, Pure, InferTypeOpAdaptor]> {
  let summary = "static strided slice";
  let arguments = (ins Ember_Tensor:$operand, DenseI64ArrayAttr:$start_indices,
                       DenseI64ArrayAttr:$limit_indices, DenseI64ArrayAttr:$strides);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` `start` `=` $start_indices `,` `limit` `=` $limit_indices `,`
    `strides` `=` $strides attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Ember_DynamicSliceOp : Ember_Op<"dynamic_slice", [Pure, InferTypeOpAdaptor]> {
  let summary = "slice at run-time start indices, clamped so the slice stays in bounds";
  let arguments = (ins Ember_Tensor:$operand, Variadic<Ember_ScalarIndexTensor>:$start_indices,
                       DenseI64ArrayAttr:$slice_sizes);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $operand `[` $start_indices `]` `,` `sizes` `=` $slice_sizes attr-dict `:`
    functional-type(operands, results)
  }];
}

def Ember_DynamicUpdateSliceOp : Ember_Op<"dynamic_update_slice",
    [Pure, AllTypesMatch<["operand", "result"]>]> {
  let summary = "write update into operand at run-time start indices (clamped)";
  let arguments = (ins Ember_Tensor:$operand, Ember_Tensor:$update,
                       Variadic<Ember_ScalarIndexTensor>:$start_indices);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $operand `[` $start_indices `]` `,` $update attr-dict `:`
    type($operand) `,` type($update) (`,` type($start_indices)^)?
  }];
  let hasVerifier = 1;
}

def Ember_PadOp : Ember_Op<"pad", [Ember_Linear, Pure, InferTypeOpAdaptor]> {
  let summary = "pad with low, high (may be negative) and interior padding";
  let arguments = (ins Ember_Tensor:$operand, Ember_Tensor:$padding_value,
                       DenseI64ArrayAttr:$edge_padding_low,
                       DenseI64ArrayAttr:$edge_padding_high,
                       DenseI64ArrayAttr:$interior_padding);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $operand `,` $padding_value `,` `low` `=` $edge_padding_low `,` `high` `=`
    $edge_padding_high `,` `interior` `=` $interior_padding attr-dict `:`
    functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Ember_ConcatenateOp : Ember_Op<"concatenate", [Ember_Linear, Pure, InferTypeOpAdaptor]> {
  let summary = "join tensors along one dimension";
  let arguments = (ins Variadic<Ember_Tensor>:$inputs, I64Attr:$dimension);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    `dim` `=` $dimension `,` $inputs attr-dict `:` functional-type(operands, results)
  }];
  let hasFolder = 1;
}

def Ember_ReverseOp : Ember_Op<"reverse", [Ember_Linear, Pure, SameOperandsAndResultType]> {
  let summary = "reverse the order of elements along some dimensions";
  let arguments = (ins Ember_Tensor:$operand, DenseI64ArrayAttr:$dimensions);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = "$operand `,` `dims` `=` $dimensions attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def Ember_ReduceOp : Ember_Op<"reduce", [Pure, InferTypeOpAdaptor]> {
  let summary = "reduce over dimensions with a combiner (sum, prod, max, min, and, or, xor)";
  let arguments = (ins Ember_Tensor:$operand, Ember_ReduceKindAttr:$kind,
                       DenseI64ArrayAttr:$dimensions);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $kind $operand `,` `dims` `=` $dimensions attr-dict `:` functional-type(operands, results)
  }];
  let hasCanonicalizer = 1;
}

class Ember_ArgReduceOp<string mnemonic> : Ember_Op<mnemonic, [Ember_ZeroTangent, Pure]> {
  let arguments = (ins Ember_RealTensor:$operand, I64Attr:$axis);
  let results = (outs StaticShapeTensorOf<[Ember_Int]>:$result);
  let assemblyFormat = [{
    $operand `,` `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}
def Ember_ArgMaxOp : Ember_ArgReduceOp<"argmax"> {
  let summary = "index of the first maximum along an axis (a NaN counts as the maximum)";
}
def Ember_ArgMinOp : Ember_ArgReduceOp<"argmin"> {
  let summary = "index of the first minimum along an axis (a NaN counts as the minimum)";
}

def Ember_CumulativeOp : Ember_Op<"cumulative", [Pure, SameOperandsAndResultType]> {
  let summary = "inclusive scan along an axis (sum, prod, max, min), optionally reversed";
  let arguments = (ins Ember_NumericTensor:$operand, Ember_ReduceKindAttr:$kind, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Ember_NumericTensor:$result);
  let assemblyFormat = "$kind $operand `,` `axis` `=` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Ember_ReduceWindowOp : Ember_Op<"reduce_window", [Pure, InferTypeOpAdaptor]> {
  let summary = "reduce each window of a padded operand (pooling)";
  let arguments = (ins Ember_RealTensor:$operand, Ember_RealTensor:$init_value,
                       Ember_ReduceKindAttr:$kind,
                       DenseI64ArrayAttr:$window_dimensions,
                       DenseI64ArrayAttr:$window_strides,
                       DenseI64ArrayAttr:$padding_low,
                       DenseI64ArrayAttr:$padding_high);
  let results = (outs Ember_RealTensor:$result);
  let assemblyFormat = [{
    $kind $operand `,` $init_value `,` `window` `=` $window_dimensions `,` `strides` `=`
    $window_strides `,` `low` `=` $padding_low `,` `high` `=` $padding_high attr-dict `:`
    functional-type(operands, results)
  }];
}

def Ember_SortOp : Ember_Op<"sort", [Pure, InferTypeOpAdaptor]> {
  let summary = "sort several operands along a dimension by their first num_keys operands";
  let description = [{
    Keys compare lexicographically in ascending total order: for floats NaNs sort
    last and -0.0 before +0.0. With `is_stable` equal keys keep their order.
  }];
  let arguments = (ins Variadic<Ember_RealTensor>:$inputs, I64Attr:$dimension,
                       I64Attr:$num_keys, DefaultValuedAttr<BoolAttr, "true">:$is_stable);
  let results = (outs Variadic<Ember_RealTensor>:$results);
  let assemblyFormat = [{
    `dim` `=` $dimension `,` `keys` `=` $num_keys `,` $inputs attr-dict `:` type($inputs)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra (runtime calls: LAPACK and BLAS when the embedder gives them)
//===----------------------------------------------------------------------===//

def Ember_CholeskyOp : Ember_Op<"cholesky", [Pure, SameOperandsAndResultType]> {
  let summary = "lower Cholesky factor of (a batch of) symmetric positive definite matrices";
  let description = [{
    Reads the lower triangle of each trailing n x n matrix `a` and returns L,
    lower triangular with a positive diagonal, such that a = L L^H; the strict
    upper triangle of the result is zero. Where `a` is not positive definite
    the whole matrix of the result is NaN (as JAX).
  }];
  let arguments = (ins Ember_FloatOrComplexTensor:$operand);
  let results = (outs Ember_FloatOrComplexTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand)";
  let hasVerifier = 1;
}

def Ember_LuOp : Ember_Op<"lu", [Pure]> {
  let summary = "LU decomposition with partial pivoting of (a batch of) matrices";
  let description = [{
    For each trailing m x n matrix a: P a = L U with L unit lower triangular
    (m x k, k = min(m, n)) and U upper triangular (k x n), packed in `lu` (L
    below the diagonal, U on and above it). `pivots` (k, i32) are LAPACK's
    row swaps, 0-based: row i was swapped with row pivots[i], in order;
    `permutation` (m, i32) is the row of a that each row of P a is. A
    singular matrix gives a zero on U's diagonal.
  }];
  let arguments = (ins Ember_FloatOrComplexTensor:$operand);
  let results = (outs Ember_FloatOrComplexTensor:$lu, Ember_IntTensor:$pivots,
                      Ember_IntTensor:$permutation);
  let assemblyFormat = "$operand attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Ember_EighOp : Ember_Op<"eigh", [Pure]> {
  let summary = "eigenvectors and eigenvalues of (a batch of) Hermitian matrices";
  let description = [{
    Reads the lower triangle of each trailing n x n matrix a (real symmetric
    or complex Hermitian) and returns V, whose columns are orthonormal
    eigenvectors, and w, the eigenvalues in ascending order (real), with
    a V = V diag(w).
  }];
  let arguments = (ins Ember_FloatOrComplexTensor:$operand);
  let results = (outs Ember_FloatOrComplexTensor:$vectors, Ember_FloatTensor:$values);
  let assemblyFormat = "$operand attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Ember_QrOp : Ember_Op<"qr", [Pure]> {
  let summary = "QR decomposition of (a batch of) matrices";
  let description = [{
    For each trailing m x n matrix a: a = Q R with Q's columns orthonormal
    and R upper triangular (LAPACK's geqrf and orgqr/ungqr, so R's diagonal
    has LAPACK's signs). With `full_matrices` Q is m x m and R m x n,
    otherwise Q is m x k and R k x n, k = min(m, n).
  }];
  let arguments = (ins Ember_FloatOrComplexTensor:$operand,
                       BoolAttr:$full_matrices);
  let results = (outs Ember_FloatOrComplexTensor:$q, Ember_FloatOrComplexTensor:$r);
  let assemblyFormat = "$operand attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Ember_SvdOp : Ember_Op<"svd", [Pure]> {
  let summary = "singular value decomposition of (a batch of) matrices";
  let description = [{
    For each trailing m x n matrix a: the singular values s (k = min(m, n),
    real, descending) and, when the op has three results, U and V^H with
    a = U diag(s) V^H (LAPACK's gesdd). With `full_matrices` U is m x m and
    V^H n x n, otherwise m x k and k x n.
  }];
  let arguments = (ins Ember_FloatOrComplexTensor:$operand,
                       BoolAttr:$full_matrices);
  let results = (outs Variadic<Ember_FloatOrComplexTensor>:$results);
  let assemblyFormat = "$operand attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether the op computes U and V^H too (three results).
    bool computesUv() { return getNumResults() == 3; }
    Value getS() { return getResult(0); }
    Value getU() { return getResult(1); }
    Value getVh() { return getResult(2); }
  }];
}

def Ember_TriangularSolveOp : Ember_Op<"triangular_solve", [Pure]> {
  let summary = "solve op(a) x = b for triangular a, for a batch of matrices";
  let description = [{
    `a` is (..., n, n), `b` and the result (..., n, k), with equal batch
    dimensions. op(a) is `a` or, with `transpose_a`, its transpose. Only the
    triangle `lower` names is read; with `unit_diagonal` the diagonal is taken
    to be ones and not read either.
  }];
  let arguments = (ins Ember_FloatOrComplexTensor:$a, Ember_FloatOrComplexTensor:$b, BoolAttr:$lower,
                       BoolAttr:$transpose_a, BoolAttr:$unit_diagonal);
  let results = (outs Ember_FloatOrComplexTensor:$result);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Ember_FftOp : Ember_Op<"fft", [Ember_Linear, Pure]> {
  let summary = "discrete Fourier transform over the trailing dimensions";
  let description = [{
    The DFT over the trailing k = len(fft_lengths) dimensions (1 to 3) of
    each element of the leading (batch) dimensions, as StableHLO's `fft`:
    `FFT` complex to complex, `IFFT` its inverse (scaled by 1 / prod(n)),
    `RFFT` a real operand to the n // 2 + 1 non-negative frequencies of
    the last dimension (complex), `IRFFT` such a half spectrum back to the
    real signal of `fft_lengths`. Compiled code calls the runtime's
    `ember_fft_*`, which calls the FFT an embedder registers (Python:
    SciPy's pocketfft) or computes each DFT directly.
  }];
  let arguments = (ins Ember_FloatOrComplexTensor:$operand, StrAttr:$fft_type,
                       DenseI64ArrayAttr:$fft_lengths);
  let results = (outs Ember_FloatOrComplexTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contraction, gather and scatter
//===----------------------------------------------------------------------===//

def Ember_DotGeneralOp : Ember_Op<"dot_general", [Pure]> {
  let summary = "generalized contraction with batch and contracting dimensions";
  let description = [{
    Result dimensions are the batch dimensions, then lhs free dimensions, then
    rhs free dimensions. Operands are converted to the result element type
    (the preferred element type) before multiplying and accumulating.
    `precision` (optional: the target's default) is JAX's `precision=`, per
    operand, as StableHLO's precision config names it (`DEFAULT`, `HIGH`,
    `HIGHEST`): what accelerators compute f32 products in (the CPU always
    computes them in f32). Products derived from this one (its JVP,
    transpose and batched forms) keep it.
  }];
  let arguments = (ins Ember_NumericTensor:$lhs, Ember_NumericTensor:$rhs,
                       DenseI64ArrayAttr:$lhs_batching_dimensions,
                       DenseI64ArrayAttr:$rhs_batching_dimensions,
                       DenseI64ArrayAttr:$lhs_contracting_dimensions,
                       DenseI64ArrayAttr:$rhs_contracting_dimensions,
                       OptionalAttr<StrArrayAttr>:$precision);
  let results = (outs Ember_NumericTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` `batch` `=` $lhs_batching_dimensions `x` $rhs_batching_dimensions
    `,` `contract` `=` $lhs_contracting_dimensions `x` $rhs_contracting_dimensions
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Ember_GatherOp : Ember_Op<"gather", [Ember_Linear, Pure]> {
  let summary = "gather slices of operand at indices (StableHLO dimension numbers)";
  let arguments = (ins Ember_Tensor:$operand, Ember_IntTensor:$start_indices,
                       DenseI64ArrayAttr:$offset_dims,
                       DenseI64ArrayAttr:$collapsed_slice_dims,
                       DenseI64ArrayAttr:$operand_batching_dims,
                       DenseI64ArrayAttr:$start_indices_batching_dims,
                       DenseI64ArrayAttr:$start_index_map,
                       I64Attr:$index_vector_dim,
                       DenseI64ArrayAttr:$slice_sizes,
                       Ember_IndexModeAttr:$mode);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $operand `[` $start_indices `]` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Ember_ScatterOp : Ember_Op<"scatter", [Pure, AllTypesMatch<["operand", "result"]>]> {
  let summary = "combine updates into operand at indices (StableHLO dimension numbers)";
  let description = [{
    Updates are applied in row-major order of the update tensor; with `kind`
    replace, a later update of the same element wins. Mode `clip` clamps
    start indices into bounds; `fill` drops out-of-bounds updates.
  }];
  let arguments = (ins Ember_Tensor:$operand, Ember_IntTensor:$scatter_indices,
                       Ember_Tensor:$updates,
                       DenseI64ArrayAttr:$update_window_dims,
                       DenseI64ArrayAttr:$inserted_window_dims,
                       DenseI64ArrayAttr:$operand_batching_dims,
                       DenseI64ArrayAttr:$scatter_indices_batching_dims,
                       DenseI64ArrayAttr:$scatter_dims_to_operand_dims,
                       I64Attr:$index_vector_dim,
                       Ember_ScatterKindAttr:$kind,
                       Ember_IndexModeAttr:$mode);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $kind $operand `[` $scatter_indices `]` `,` $updates attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Random bits
//===----------------------------------------------------------------------===//

def Ember_Threefry2x32Op : Ember_Op<"threefry2x32",
    [Ember_ZeroTangent, Pure, Elementwise, AllTypesMatch<["key0", "key1", "x0", "x1", "out0", "out1"]>]> {
  let summary = "Threefry-2x32 block cipher (20 rounds), elementwise on ui32";
  let arguments = (ins Ember_U32Tensor:$key0, Ember_U32Tensor:$key1,
                       Ember_U32Tensor:$x0, Ember_U32Tensor:$x1);
  let results = (outs Ember_U32Tensor:$out0, Ember_U32Tensor:$out1);
  let assemblyFormat = "$key0 `,` $key1 `,` $x0 `,` $x1 attr-dict `:` type($out0)";
}

def Ember_Philox4x32Op : Ember_Op<"philox4x32",
    [Ember_ZeroTangent, Pure, Elementwise,
     AllTypesMatch<["key0", "key1", "x0", "x1", "x2", "x3", "out0", "out1", "out2", "out3"]>]> {
  let summary = "Philox-4x32 block cipher (10 rounds), elementwise on ui32";
  let description = [{
    Random123's Philox4x32-10 (the generator behind XLA's default
    `RngBitGenerator` on the CPU): the 128-bit counter `(x0, x1, x2, x3)`
    enciphered under the 64-bit key `(key0, key1)`, elementwise.
  }];
  let arguments = (ins Ember_U32Tensor:$key0, Ember_U32Tensor:$key1,
                       Ember_U32Tensor:$x0, Ember_U32Tensor:$x1,
                       Ember_U32Tensor:$x2, Ember_U32Tensor:$x3);
  let results = (outs Ember_U32Tensor:$out0, Ember_U32Tensor:$out1,
                      Ember_U32Tensor:$out2, Ember_U32Tensor:$out3);
  let assemblyFormat = [{
    $key0 `,` $key1 `,` $x0 `,` $x1 `,` $x2 `,` $x3 attr-dict `:` type($out0)
  }];
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

def Ember_WhileOp : Ember_Op<"while", [Ember_RulesInPasses, RecursiveMemoryEffects, InferTypeOpAdaptor]> {
  let summary = "loop while a predicate holds, carrying tensors";
  let description = [{
    Starting from `init`, evaluates the `cond` region on the carried values
    and, while it yields true, replaces them with what the `body` region
    yields. Both regions take the carried values as block arguments; `cond`
    yields one `tensor<i1>`, `body` yields new carried values of the same
    types. The results are the final carried values.

    ```mlir
    %r = ember.while (%x) : tensor<i32> cond {
    ^bb0(%c: tensor<i32>):
      %p = ember.compare LT, %c, %ten : (tensor<i32>, tensor<i32>) -> tensor<i1>
      ember.yield %p : tensor<i1>
    } do {
    ^bb0(%c: tensor<i32>):
      %n = ember.add %c, %one : tensor<i32>
      ember.yield %n : tensor<i32>
    }
    ```
  }];
  // `trip_count`, when present, promises that the loop runs exactly that many
  // times (lax.scan / fori_loop with static bounds): reverse-mode
  // ember-autodiff saves residuals in [trip_count, ...] buffers (a run-time
  // stack otherwise), and ember-batch unrolls such loops.
  // `parallel` (with `trip_count`) promises that the iterations are
  // independent (docs/spec.md, while_c5): the CPU lowering may run them on
  // several threads.
  let arguments = (ins Variadic<Ember_Tensor>:$init, OptionalAttr<I64Attr>:$trip_count,
                       UnitAttr:$parallel);
  let results = (outs Variadic<Ember_Tensor>:$results);
  let regions = (region SizedRegion<1>:$cond, SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $init `)` attr-dict `:` type($init) custom<WhileRegions>($cond, $body)
  }];
  let hasVerifier = 1;
}

def Ember_CaseOp : Ember_Op<"case", [Ember_RulesInPasses, RecursiveMemoryEffects]> {
  let summary = "run one of several regions, chosen by an index";
  let description = [{
    Runs the region `branches[index]` (the index clamped to
    `[0, #branches - 1]`, as `lax.switch` does) and returns what it yields.
    Regions take no arguments and use values from above; each ends in
    `ember.yield` with values of the result types. `lax.cond` is a case on
    its boolean predicate converted to an index (false first).

    ```mlir
    %r = ember.case %i : tensor<i32> -> tensor<f32> {
      ember.yield %a : tensor<f32>
    }, {
      %n = ember.neg %a : tensor<f32>
      ember.yield %n : tensor<f32>
    }
    ```
  }];
  let arguments = (ins TensorOf<[I32]>:$index);
  let results = (outs Variadic<Ember_Tensor>:$results);
  let regions = (region VariadicRegion<SizedRegion<1>>:$branches);
  let assemblyFormat = [{
    $index `:` type($index) (`->` type($results)^)? $branches attr-dict
  }];
  let hasVerifier = 1;
}

def Ember_YieldOp : Ember_Op<"yield", [Ember_RulesInPasses, Pure, Terminator, ReturnLike,
                                     ParentOneOf<["WhileOp", "CaseOp"]>]> {
  let summary = "terminator of ember region ops";
  let arguments = (ins Variadic<Ember_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

//===----------------------------------------------------------------------===//
// Run-time stacks (reverse mode through loops with a run-time trip count)
//===----------------------------------------------------------------------===//

def Ember_StackPushOp : Ember_Op<"stack_push",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "push tensors on a stack that grows at run time";
  let description = [{
    Copies `values` on top of the run-time stack `stack` (a `tensor<i64>`
    handle; 0 is the empty stack, created on the first push) and returns the
    handle. `ember-autodiff` emits it in the forward loop of a
    reverse-differentiated `ember.while` without a trip count, to save each
    iteration's residuals; `ember.stack_pop` reads them back in reverse order.
    With `lanes = L` (made by `ember-batch`: a batched loop), the values have
    a leading dimension of L lanes; the stack records it, so that a pop with
    lanes reads lane j of each push (and every lane reads the whole push from
    a stack of pushes without lanes).
    Lowered to the runtime entry `ember_stack_push` (docs/decisions.md).

    ```mlir
    %h1 = ember.stack_push %h0 (%x, %y) : (tensor<i64>, tensor<3xf32>, tensor<f32>) -> tensor<i64>
    ```
  }];
  let arguments = (ins Ember_Tensor:$stack, Variadic<Ember_Tensor>:$values,
                       OptionalAttr<I64Attr>:$lanes);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $stack `(` $values `)` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Ember_StackPopOp : Ember_Op<"stack_pop",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "read back the tensors of one push from a run-time stack";
  let description = [{
    Returns the values of push number `index` (0 is the first push; all
    pushes on one stack carry the same types), after the new handle. The
    reads of a backward loop go from the last push down to push 0, and the
    read of push 0 frees the stack (the handle is then 0).

    With `lanes = L` (made by `ember-batch`), `index` is a `tensor<Lxi64>`,
    the results have a leading dimension of L lanes, and lane j of each
    result comes from push `index[j]`: its lane j if the pushes had lanes,
    else the whole pushed value (zeros where `index[j]` is negative: a lane
    that has finished). The stack is freed when no index is above 0.

    ```mlir
    %h1, %x, %y = ember.stack_pop %h0[%k] : (tensor<i64>, tensor<i64>) -> (tensor<i64>, tensor<3xf32>, tensor<f32>)
    ```
  }];
  let arguments = (ins Ember_Tensor:$stack, Ember_Tensor:$index, OptionalAttr<I64Attr>:$lanes);
  let results = (outs Ember_Tensor:$result, Variadic<Ember_Tensor>:$values);
  let assemblyFormat = [{
    $stack `[` $index `]` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Ember_StackFreeOp : Ember_Op<"stack_free",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "free a run-time stack whose values are not needed";
  let description = [{
    Releases `stack` and everything still on it (reverse mode emits it when
    no cotangent reaches a loop whose forward pass pushed residuals).

    ```mlir
    ember.stack_free %h : tensor<i64>
    ```
  }];
  let arguments = (ins Ember_Tensor:$stack);
  let assemblyFormat = "$stack attr-dict `:` type($stack)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Differentiation
//===----------------------------------------------------------------------===//

def Ember_HostCallbackOp : Ember_Op<"host_callback",
    [DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "calls a function of the host program on tensors";
  let description = [{
    Calls the host function registered under `callback_id` with the values
    of `inputs` and returns the tensors it produces. The embedder (Ember's
    Python runtime) owns the registry; compiled code reaches it through the
    C symbol `ember_host_callback` (see docs/decisions.md). With
    `has_side_effect` the op is ordered and never removed (`debug.print`,
    `io_callback`); without it the op is pure and may be removed when its
    results are unused (`pure_callback`). `vmap_method` says how
    `ember-batch` batches it: `sequential` (one call per example),
    `expand_dims` (one call; unbatched inputs get a leading dimension of
    size 1), `broadcast_all` (one call; every input batched), `none`
    (batching is an error) or `ordered` (an ordered `io_callback`:
    batching is JAX's ValueError). `device_axes` (with `none` only) names
    the axes of per-device lanes (`shard_map`, `pmap`) the op was traced
    under: batching over one of them calls once per device, as each device
    calls its own callback; over any other axis it stays an error.

    ```mlir
    %y = ember.host_callback 3 (%x) {vmap_method = "sequential"}
        : (tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<Ember_Tensor>:$inputs, I64Attr:$callback_id,
                       UnitAttr:$has_side_effect,
                       DefaultValuedStrAttr<StrAttr, "sequential">:$vmap_method,
                       OptionalAttr<StrArrayAttr>:$device_axes);
  let results = (outs Variadic<Ember_Tensor>:$results);
  let assemblyFormat = [{
    $callback_id `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)
  }];
  let hasVerifier = 1;
}

def Ember_StopGradientOp : Ember_Op<"stop_gradient", [Ember_ZeroTangent, Pure, SameOperandsAndResultType]> {
  let summary = "identity whose derivative is zero";
  let arguments = (ins Ember_Tensor:$operand);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

def Ember_CheckpointNameOp : Ember_Op<"checkpoint_name", [Pure, SameOperandsAndResultType]> {
  let summary = "identity that names a value for checkpoint policies";
  let description = [{
    Returns its operand (`jax.ad_checkpoint.checkpoint_name`). A checkpoint
    policy such as `save_only_these_names` decides by `name` whether the
    forward pass keeps the value; derivatives pass through it and batching
    keeps it. `ember-to-linalg` replaces it by its operand.

    ```mlir
    %y = ember.checkpoint_name %x "layer0" : tensor<4xf32>
    ```
  }];
  let arguments = (ins Ember_Tensor:$operand, StrAttr:$name);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = "$operand $name attr-dict `:` type($result)";
}

def Ember_OptimizationBarrierOp : Ember_Op<"optimization_barrier",
    [MemoryEffects<[MemRead]>, InferTypeOpAdaptor]> {
  let summary = "identity that optimizations do not look through";
  let description = [{
    Returns its operands. Its results are new values to CSE and fusion, and
    it is not folded, so computations on them are not merged with the same
    computations on the operands (`lax.optimization_barrier`; `checkpoint`
    puts one before the recomputation of its function). Its read effect keeps
    it from being moved; an unused barrier is dead. `ember-to-linalg` keeps
    it on tensors and `ember-drop-optimization-barriers` removes it just
    before bufferization, after the last CSE. Derivatives and batching pass
    through it. Its tensors may have `?` dimensions: it is the one ember op
    left when a program is made dynamic after `ember-to-linalg`.

    ```mlir
    %y:2 = ember.optimization_barrier %a, %b : tensor<3xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Ember_RankedTensor>:$operands);
  let results = (outs Variadic<Ember_RankedTensor>:$results);
  let assemblyFormat = "$operands attr-dict `:` type($operands)";
}

//===----------------------------------------------------------------------===//
// Mutable array references (JAX's Ref)
//===----------------------------------------------------------------------===//

// A ref op's ref is an argument of the function it is in, and the op sits
// in that function's body or in ember.while/ember.case regions in it
// (ref_c2, verified in C++). Transformation ops may pass refs to their
// functions (ref_c6): ember-autodiff and ember-batch thread the refs'
// values through the transformed body (ember/IR/EmberRefs.h).
class Ember_RefOp<string mnemonic, list<Trait> traits = []>
    : Op<Ember_Dialect, mnemonic, traits # [Ember_RulesInPasses]> {
  let hasVerifier = 1;
}

def Ember_RefGetOp : Ember_RefOp<"ref_get", [MemoryEffects<[MemRead]>,
    TypesMatchWith<"ref_c3: the result has the ref's value type", "ref", "result",
                   "::llvm::cast<::mlir::ember::RefType>($_self).getValueType()">]> {
  let summary = "reads the value of a ref";
  let description = [{
    `ref[...]`: the value the ref holds now.

    ```mlir
    %v = ember.ref_get %r : !ember.ref<tensor<3xf32>>
    ```
  }];
  let arguments = (ins Ember_RefType:$ref);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = "$ref attr-dict `:` type($ref)";
}

def Ember_RefSetOp : Ember_RefOp<"ref_set", [MemoryEffects<[MemWrite]>,
    TypesMatchWith<"ref_c3: the value has the ref's value type", "ref", "value",
                   "::llvm::cast<::mlir::ember::RefType>($_self).getValueType()">]> {
  let summary = "writes a value into a ref";
  let description = [{
    `ref[...] = value`.

    ```mlir
    ember.ref_set %r, %v : !ember.ref<tensor<3xf32>>
    ```
  }];
  let arguments = (ins Ember_RefType:$ref, Ember_Tensor:$value);
  let assemblyFormat = "$ref `,` $value attr-dict `:` type($ref)";
}

def Ember_RefSwapOp : Ember_RefOp<"ref_swap", [MemoryEffects<[MemRead, MemWrite]>,
    TypesMatchWith<"ref_c3: the value has the ref's value type", "ref", "value",
                   "::llvm::cast<::mlir::ember::RefType>($_self).getValueType()">,
    TypesMatchWith<"ref_c3: the result has the ref's value type", "ref", "result",
                   "::llvm::cast<::mlir::ember::RefType>($_self).getValueType()">]> {
  let summary = "writes a value into a ref and returns the value it held";
  let description = [{
    `jax.ref.swap(ref, (), value)`.

    ```mlir
    %old = ember.ref_swap %r, %v : !ember.ref<tensor<3xf32>>
    ```
  }];
  let arguments = (ins Ember_RefType:$ref, Ember_Tensor:$value);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = "$ref `,` $value attr-dict `:` type($ref)";
}

def Ember_RefAddUpdateOp : Ember_RefOp<"ref_addupdate", [MemoryEffects<[MemRead, MemWrite]>,
    TypesMatchWith<"ref_c3: the value has the ref's value type", "ref", "value",
                   "::llvm::cast<::mlir::ember::RefType>($_self).getValueType()">]> {
  let summary = "adds a value to the value of a ref";
  let description = [{
    `ref[...] += value` (`jax.ref.addupdate`); the ref holds numbers, not
    booleans (ref_c4).

    ```mlir
    ember.ref_addupdate %r, %v : !ember.ref<tensor<3xf32>>
    ```
  }];
  let arguments = (ins Ember_RefType:$ref, Ember_Tensor:$value);
  let assemblyFormat = "$ref `,` $value attr-dict `:` type($ref)";
}

def Ember_JvpOp : Ember_TransformOp<"jvp"> {
  let summary = "forward-mode derivative of a function (expanded by ember-autodiff)";
  let description = [{
    Calls `@callee` on `primals` and returns its results followed by the
    tangents of its results, given `tangents` for the arguments listed in
    `wrt` (the other arguments have zero tangents).

    ```mlir
    %y, %ty = ember.jvp @f(%x) tangents(%tx) wrt [0]
        : (tensor<3xf32>, tensor<3xf32>) -> (tensor<f32>, tensor<f32>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<Ember_TensorOrRef>:$primals,
                       Variadic<Ember_Tensor>:$tangents, DenseI64ArrayAttr:$wrt);
  let results = (outs Variadic<Ember_Tensor>:$results);
  let assemblyFormat = [{
    $callee `(` $primals `)` `tangents` `(` $tangents `)` `wrt` $wrt attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Ember_VjpOp : Ember_TransformOp<"vjp"> {
  let summary = "reverse-mode derivative of a function (expanded by ember-autodiff)";
  let description = [{
    Calls `@callee` on `primals` and returns its results followed by the
    cotangents of the arguments listed in `wrt`, given `cotangents` for its
    results. With `effects` = N, N more results follow: the values the
    backward rules of the `custom_vjp_call`s in `@callee` produce beyond
    their cotangents (`bwd_effects`; refs their backward passes write), in
    the order of the calls.

    ```mlir
    %y, %gx = ember.vjp @f(%x) cotangents(%one) wrt [0]
        : (tensor<3xf32>, tensor<f32>) -> (tensor<f32>, tensor<3xf32>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<Ember_TensorOrRef>:$primals,
                       Variadic<Ember_Tensor>:$cotangents, DenseI64ArrayAttr:$wrt,
                       OptionalAttr<I64Attr>:$effects);
  let results = (outs Variadic<Ember_Tensor>:$results);
  let assemblyFormat = [{
    $callee `(` $primals `)` `cotangents` `(` $cotangents `)` `wrt` $wrt attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Ember_CustomJvpCallOp : Op<Ember_Dialect, "custom_jvp_call",
    [Ember_RulesInPasses, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "call of a function with a user-defined JVP rule";
  let description = [{
    Computes `@callee(args..., callee_captures...)`. Forward and reverse mode
    differentiate it with `@jvp(args..., tangents..., jvp_captures...)`, which
    returns the callee's results followed by their tangents (linear in the
    tangents). `segments` = [#args, #callee captures, #jvp captures] splits
    the operands. `ember-batch` batches the callee and the rule together, so
    the rule survives vmap; `ember-inline-custom` finally inlines the callee.
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, FlatSymbolRefAttr:$jvp,
                       Variadic<Ember_Tensor>:$operands, DenseI64ArrayAttr:$segments);
  let results = (outs Variadic<Ember_Tensor>:$results);
  let assemblyFormat = [{
    $callee `jvp` $jvp `(` $operands `)` `segments` $segments attr-dict `:`
    functional-type(operands, results)
  }];
}

def Ember_CustomVjpCallOp : Op<Ember_Dialect, "custom_vjp_call",
    [Ember_RulesInPasses, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "call of a function with a user-defined VJP rule";
  let description = [{
    Computes `@callee(args..., callee_captures...)`. Reverse mode uses
    `@fwd(args..., fwd_captures...)`, which returns the results followed by
    residuals, and `@bwd(residuals..., cotangents..., bwd_captures...)`,
    which returns one cotangent per argument, then `bwd_effects` more
    values (the new values of refs the backward rule writes: effects of the
    backward pass, which `ember-autodiff` returns from the enclosing
    `ember.vjp`). `segments` = [#args, #callee captures, #fwd captures,
    #bwd captures, #residuals].
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, FlatSymbolRefAttr:$fwd,
                       FlatSymbolRefAttr:$bwd, Variadic<Ember_Tensor>:$operands,
                       DenseI64ArrayAttr:$segments, OptionalAttr<I64Attr>:$bwd_effects);
  let results = (outs Variadic<Ember_Tensor>:$results);
  let assemblyFormat = [{
    $callee `fwd` $fwd `bwd` $bwd `(` $operands `)` `segments` $segments attr-dict `:`
    functional-type(operands, results)
  }];
}

def Ember_CustomLinearOp : Op<Ember_Dialect, "custom_linear",
    [Ember_RulesInPasses, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the linear map of a custom_vjp_call, defined by its transpose";
  let description = [{
    Produced by `ember-autodiff` while linearizing an `ember.custom_vjp_call`:
    maps tangents of the arguments to tangents of the results. Only its
    transpose is known (`@bwd(residuals..., cotangents..., captures...)`), so
    it must be transposed away; forward-mode use is an error.
    `segments` = [#residuals, #tangents, #bwd captures].
  }];
  let arguments = (ins FlatSymbolRefAttr:$bwd, Variadic<Ember_Tensor>:$operands,
                       DenseI64ArrayAttr:$segments, OptionalAttr<I64Attr>:$bwd_effects);
  let results = (outs Variadic<Ember_Tensor>:$results);
  let assemblyFormat = [{
    $bwd `(` $operands `)` `segments` $segments attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Collectives over named axes
//===----------------------------------------------------------------------===//

// Each collective names one axis (`axis`, of `axis_size` lanes) bound by an
// enclosing `ember.vmap ... axis "name"` (jax.vmap(axis_name=),
// shard_map, pmap). Inside that vmap's callee a value is one lane's; the
// collective combines the lanes. `ember-batch` rewrites a collective over
// the axis of the vmap it expands into ops over the batch dimension, and
// shifts the dimensions of collectives over other (enclosing) axes.
class Ember_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Ember_Op<mnemonic, traits # [Pure]> {
  let hasVerifier = 1;
}

class Ember_AllReduceOp<string mnemonic, list<Trait> traits = []>
    : Ember_CollectiveOp<mnemonic, traits # [SameOperandsAndResultType]> {
  let arguments = (ins Ember_NumericTensor:$operand, StrAttr:$axis,
                       I64Attr:$axis_size, UnitAttr:$invariant);
  let results = (outs Ember_NumericTensor:$result);
  let assemblyFormat = [{
    $operand `axis` $axis `size` $axis_size attr-dict `:` type($result)
  }];
}

def Ember_PsumOp : Ember_AllReduceOp<"psum", [Ember_Linear]> {
  let summary = "sum over the lanes of a named axis (lax.psum)";
  let description = [{
    Every lane gets the sum of the operand over the lanes of `axis`. With
    `invariant` (shard_map's `check_vma=True`) the result is the same value
    on every lane and the transpose is `ember.pvary`; without it (vmap
    semantics) the transpose is a psum again.
  }];
}
def Ember_PmaxOp : Ember_AllReduceOp<"pmax"> {
  let summary = "maximum over the lanes of a named axis (lax.pmax)";
}
def Ember_PminOp : Ember_AllReduceOp<"pmin"> {
  let summary = "minimum over the lanes of a named axis (lax.pmin)";
}

def Ember_PvaryOp : Ember_CollectiveOp<"pvary", [Ember_Linear, SameOperandsAndResultType]> {
  let summary = "a lane-invariant value used as a varying one (lax.pvary)";
  let description = [{
    The identity on each lane. It marks where a value that is the same on
    every lane of `axis` meets lane-varying values, so that reverse mode
    sums its cotangent over the lanes (its transpose is an invariant psum).
  }];
  let arguments = (ins Ember_Tensor:$operand, StrAttr:$axis, I64Attr:$axis_size);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $operand `axis` $axis `size` $axis_size attr-dict `:` type($result)
  }];
}

def Ember_AllGatherOp : Ember_CollectiveOp<"all_gather", [Ember_Linear]> {
  let summary = "the lanes' operands stacked (or concatenated) on every lane";
  let description = [{
    Without `tiled` the result has a new dimension `dimension` of size
    `axis_size` indexed by lane; with `tiled` the lanes' operands are
    concatenated along `dimension`.
  }];
  let arguments = (ins Ember_Tensor:$operand, StrAttr:$axis, I64Attr:$axis_size,
                       I64Attr:$dimension, UnitAttr:$tiled);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $operand `axis` $axis `size` $axis_size `dim` $dimension attr-dict `:`
    functional-type(operands, results)
  }];
}

def Ember_ReduceScatterOp : Ember_CollectiveOp<"reduce_scatter", [Ember_Linear]> {
  let summary = "sum over the lanes, lane i keeping block i (lax.psum_scatter)";
  let description = [{
    Without `tiled`, dimension `dimension` of the operand has `axis_size`
    entries and lane i gets the sum over the lanes of entry i (the dimension
    is removed); with `tiled` the dimension is split into `axis_size` equal
    blocks and lane i gets the summed block i.
  }];
  let arguments = (ins Ember_NumericTensor:$operand, StrAttr:$axis,
                       I64Attr:$axis_size, I64Attr:$dimension, UnitAttr:$tiled);
  let results = (outs Ember_NumericTensor:$result);
  let assemblyFormat = [{
    $operand `axis` $axis `size` $axis_size `dim` $dimension attr-dict `:`
    functional-type(operands, results)
  }];
}

def Ember_PpermuteOp : Ember_CollectiveOp<"ppermute", [Ember_Linear, SameOperandsAndResultType]> {
  let summary = "send each lane's operand to another lane (lax.ppermute)";
  let description = [{
    `pairs` lists (source, destination) lane pairs flattened; a lane that is
    no destination gets zeros.
  }];
  let arguments = (ins Ember_Tensor:$operand, StrAttr:$axis, I64Attr:$axis_size,
                       DenseI64ArrayAttr:$pairs);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $operand `axis` $axis `size` $axis_size `pairs` $pairs attr-dict `:` type($result)
  }];
}

def Ember_AllToAllOp : Ember_CollectiveOp<"all_to_all", [Ember_Linear]> {
  let summary = "lane i gets block i of every lane's operand (lax.all_to_all)";
  let description = [{
    Without `tiled`, dimension `split` (of `axis_size` entries) is removed
    and a dimension of `axis_size` entries, indexed by the sending lane, is
    inserted at `concat`. With `tiled`, `split` is cut into `axis_size`
    blocks and the received blocks are concatenated along `concat`.
  }];
  let arguments = (ins Ember_Tensor:$operand, StrAttr:$axis, I64Attr:$axis_size,
                       I64Attr:$split, I64Attr:$concat, UnitAttr:$tiled);
  let results = (outs Ember_Tensor:$result);
  let assemblyFormat = [{
    $operand `axis` $axis `size` $axis_size `split` $split `concat` $concat attr-dict `:`
    functional-type(operands, results)
  }];
}

def Ember_AxisIndexOp : Ember_CollectiveOp<"axis_index", [Ember_ZeroTangent]> {
  let summary = "the lane's index along a named axis (lax.axis_index)";
  let arguments = (ins StrAttr:$axis, I64Attr:$axis_size);
  let results = (outs TensorOf<[I32]>:$result);
  let assemblyFormat = "`axis` $axis `size` $axis_size attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Batching
//===----------------------------------------------------------------------===//

def Ember_VmapOp : Op<Ember_Dialect, "vmap",
    [Ember_RulesInPasses, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "vectorizing map of a function (expanded by ember-batch)";
  let description = [{
    Applies `@callee` to each of `batch_size` slices of the inputs marked
    batched (their leading dimension) and stacks the results along a new
    leading dimension. Inputs not marked batched are shared by all slices.
    With `axis "name"`, the slices are the lanes of a named axis that
    collectives in the callee (and in functions it calls) combine.

    ```mlir
    %y = ember.vmap @f(%xs, %w) batched [true, false] size 8
        : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<Ember_TensorOrRef>:$inputs,
                       DenseBoolArrayAttr:$batched, I64Attr:$batch_size,
                       OptionalAttr<StrAttr>:$axis_name);
  let results = (outs Variadic<Ember_Tensor>:$results);
  let assemblyFormat = [{
    $callee `(` $inputs `)` `batched` $batched `size` $batch_size
    (`axis` $axis_name^)? attr-dict `:` functional-type(operands, results)
  }];
}

#endif // EMBER_OPS_TD
