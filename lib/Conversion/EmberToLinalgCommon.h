//===- EmberToLinalgCommon.h - shared pieces of the lowering ----*- C++ -*-===//
#ifndef EMBER_LIB_CONVERSION_EMBERTOLINALGCOMMON_H
#define EMBER_LIB_CONVERSION_EMBERTOLINALGCOMMON_H

#include "ember/IR/EmberDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::ember {

/// The scalar body of an elementwise ember op applied to converted scalars.
/// Returns no values when the op/type combination has no lowering.
SmallVector<Value> buildElementwiseScalar(OpBuilder &b, Location loc,
                                          Operation *op, ValueRange args);

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

#endif

namespace mlir::ember {
/// Casts an integer scalar to index, zero-extending unsigned/bool types.
Value toIndex(OpBuilder &b, Location loc, Value s, Type origElem);
} // namespace mlir::ember
