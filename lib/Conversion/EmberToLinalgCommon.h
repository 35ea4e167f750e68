//===- EmberToLinalgCommon.h - shared pieces of the lowering ----*- C++ -*-===//
//
// Declarations shared by the files of the ember-to-linalg conversion: the
// patterns of each op family (Lower<Family>.cpp), the helpers that build
// tensors and linalg.generic ops (EmberToLinalg.cpp), the scalar bodies
// (EmberToLinalgScalar.cpp) and the runtime-call helpers
// (LowerRuntimeCalls.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef EMBER_LIB_CONVERSION_EMBERTOLINALGCOMMON_H
#define EMBER_LIB_CONVERSION_EMBERTOLINALGCOMMON_H

#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::ember {

//===----------------------------------------------------------------------===//
// Patterns, one function per op family
//===----------------------------------------------------------------------===//

/// Every `Elementwise` op and bitcast_convert (LowerElementwise.cpp).
void populateElementwiseLoweringPatterns(const TypeConverter &converter,
                                         RewritePatternSet &patterns);
/// Constants, iota, reshapes, transposes, slices, pad, concatenate, reverse
/// and the identity ops (LowerStructural.cpp).
void populateStructuralLoweringPatterns(const TypeConverter &converter,
                                        RewritePatternSet &patterns);
/// while, case and yield (LowerControlFlow.cpp).
void populateControlFlowLoweringPatterns(const TypeConverter &converter,
                                         RewritePatternSet &patterns);
/// reduce, argmax/argmin, cumulative, reduce_window, sort
/// (LowerReductions.cpp); `runtimeSort`: sorts call the runtime.
void populateReductionLoweringPatterns(const TypeConverter &converter,
                                       RewritePatternSet &patterns,
                                       bool runtimeSort);
/// dot_general (LowerDot.cpp).
void populateDotLoweringPatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns, GemmEntry gemm);
/// gather and scatter (LowerGatherScatter.cpp).
void populateGatherScatterLoweringPatterns(const TypeConverter &converter,
                                           RewritePatternSet &patterns);
/// host_callback and the run-time stack ops (LowerRuntimeCalls.cpp). With
/// `deviceBuffers` (the cuda target), a host callback's operands are passed
/// as row-major buffers (no run-time layout check, see buildBufferHelper).
void populateRuntimeCallLoweringPatterns(const TypeConverter &converter,
                                         RewritePatternSet &patterns,
                                         bool deviceBuffers = false);

/// Ref arguments as buffers updated in place (LowerRefs.cpp): the get and
/// set that `normalizeRefs` leaves.
void populateRefLoweringPatterns(const TypeConverter &converter,
                                 RewritePatternSet &patterns);
/// Threads each ref argument's value through its function's body, leaving
/// one `ref_get` at the entry and, for refs written, one `ref_set` before
/// the return (LowerRefs.cpp). Fails (with a diagnostic) where another op
/// uses a ref.
LogicalResult normalizeRefs(ModuleOp module);
/// After the conversion: copies the values that may share a written ref's
/// buffer and are returned or written into a ref, before the first write
/// (LowerRefs.cpp).
void copyRefAliases(ModuleOp module);

//===----------------------------------------------------------------------===//
// Tensors, indices and linalg.generic (EmberToLinalg.cpp)
//===----------------------------------------------------------------------===//

/// A `tensor.empty` of type `t`.
Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType t);

/// A tensor of type `t` filled with `scalar`.
Value filledTensor(OpBuilder &b, Location loc, RankedTensorType t,
                   Value scalar);

/// A scalar constant (arith, or complex for a complex::NumberAttr).
Value constScalar(OpBuilder &b, Location loc, TypedAttr a);

Value indexConst(OpBuilder &b, Location loc, int64_t v);

/// Casts an integer scalar to index, zero-extending unsigned/bool types.
Value toIndex(OpBuilder &b, Location loc, Value s, Type origElem);

/// Reads a 0-d integer tensor as an index (sign- or zero-extended).
Value scalarToIndex(OpBuilder &b, Location loc, Value t0d, Type origElem);

/// `i` clamped to [lo, hi].
Value clampIndex(OpBuilder &b, Location loc, Value i, int64_t lo, int64_t hi);

/// `n` parallel iterator types.
SmallVector<utils::IteratorType> parallelIterators(unsigned n);

/// A `linalg.generic` whose loops are all parallel and span the shape of
/// `outTypes` (results of one shape), each result written into a fresh
/// `tensor.empty` through the identity map. Input k is read through
/// `inputMaps[k]`, or through the identity when `inputMaps` is empty. `body`
/// gets the input elements and returns one element per result. Returns the
/// results.
SmallVector<Value> buildGeneric(
    OpBuilder &b, Location loc, ValueRange inputs, TypeRange outTypes,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> body,
    ArrayRef<AffineMap> inputMaps = {});

//===----------------------------------------------------------------------===//
// Runtime calls (LowerRuntimeCalls.cpp)
//===----------------------------------------------------------------------===//

/// Declares the runtime function `name` (include/ember/Runtime/Runtime.def)
/// once.
void declareRuntimeFunction(ModuleOp module, StringRef name);

/// Builds a private function that hands raw buffers to a runtime function:
/// `emit` gets the aligned addresses of its operand and result buffers and
/// builds the call. Returns the function's name.
/// With `identityLayouts`, the operands are passed as row-major buffers
/// (bufferization copies a strided one at the call) instead of being
/// checked at run time and copied only when strided: the cuda target's
/// helpers, whose host code must not build the run-time ownership records a
/// conditional copy needs.
std::string buildBufferHelper(
    ModuleOp module, Location loc, StringRef prefix, TypeRange inTypes,
    TypeRange resultTypes,
    function_ref<void(OpBuilder &, ArrayRef<Value>, ArrayRef<Value>)> emit,
    bool identityLayouts = false);

//===----------------------------------------------------------------------===//
// Scalar bodies (EmberToLinalgScalar.cpp)
//===----------------------------------------------------------------------===//

/// The scalar body of an elementwise ember op applied to converted scalars.
/// Returns no values when the op/type combination has no lowering.
SmallVector<Value> buildElementwiseScalar(OpBuilder &b, Location loc,
                                          Operation *op, ValueRange args);

/// `x dir y` for (converted) scalars or vectors of them (TPU kernels);
/// `origElem` is the ember element type, which carries signedness.
Value buildCompare(OpBuilder &b, Location loc, ComparisonDirection dir, Value x,
                   Value y, Type origElem);

/// Converts a scalar between element types (`from`/`to` are the original
/// ember element types, which carry signedness).
Value convertScalar(OpBuilder &b, Location loc, Value v, Type from, Type to);

/// Combines two scalars with a reduction kind.
Value buildCombiner(OpBuilder &b, Location loc, ReduceKind kind, Value x,
                    Value y, Type origElem);

/// The identity of a reduction kind for a (converted) scalar type.
TypedAttr combinerIdentity(OpBuilder &b, ReduceKind kind, Type t,
                           Type origElem);

/// An integer whose signed order is the total order of `x` (floats); `x`
/// itself for integers.
Value totalOrderKey(OpBuilder &b, Location loc, Value x);

} // namespace mlir::ember

#endif // EMBER_LIB_CONVERSION_EMBERTOLINALGCOMMON_H
