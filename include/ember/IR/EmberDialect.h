//===- EmberDialect.h - the ember dialect -----------------------*- C++ -*-===//
#ifndef EMBER_IR_EMBERDIALECT_H
#define EMBER_IR_EMBERDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ember/IR/EmberDialect.h.inc"
#include "ember/IR/EmberEnums.h.inc"
namespace mlir::ember {
/// The JVP rule of an ember op (see DifferentiableOpInterface).
LogicalResult buildJvp(Operation *op, OpBuilder &b, ArrayRef<Value> tangents,
                       SmallVectorImpl<Value> &resultTangents);
/// The transpose rule of an ember op (see DifferentiableOpInterface).
LogicalResult buildTranspose(Operation *op, OpBuilder &b, ArrayRef<Value> cotangents,
                             ArrayRef<bool> linear, SmallVectorImpl<Value> &operandCotangents);
/// A splat constant `v` of tensor type `t` (float, integer or complex).
DenseElementsAttr splatOf(RankedTensorType t, double v);

/// `t` (a ranked tensor type) with a leading batch dimension of size `n`.
RankedTensorType batchedType(Type t, int64_t n);

/// The batching rule of an ember op (see BatchableOpInterface).
LogicalResult buildBatch(Operation *op, OpBuilder &b, ArrayRef<Value> operands,
                         ArrayRef<bool> batched, int64_t batchSize,
                         SmallVectorImpl<Value> &results);
} // namespace mlir::ember

#include "ember/IR/EmberInterfaces.h.inc"
#define GET_ATTRDEF_CLASSES
#include "ember/IR/EmberAttrs.h.inc"
#define GET_OP_CLASSES
#include "ember/IR/EmberOps.h.inc"

#endif // EMBER_IR_EMBERDIALECT_H
