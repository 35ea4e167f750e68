//===- EmberDialect.h - the ember dialect -----------------------*- C++ -*-===//
#ifndef EMBER_IR_EMBERDIALECT_H
#define EMBER_IR_EMBERDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "ember/Runtime/Runtime.h"

#include "ember/IR/EmberDialect.h.inc"
#include "ember/IR/EmberEnums.h.inc"
namespace mlir::ember {
/// Traits of EmberInterfaces.td (Ember_Linear, Ember_ZeroTangent,
/// Ember_RulesInPasses): markers the rules and the rule-coverage test read.
template <typename ConcreteType>
class LinearTrait : public OpTrait::TraitBase<ConcreteType, LinearTrait> {};
template <typename ConcreteType>
class ZeroTangentTrait
    : public OpTrait::TraitBase<ConcreteType, ZeroTangentTrait> {};
template <typename ConcreteType>
class RulesInPassesTrait
    : public OpTrait::TraitBase<ConcreteType, RulesInPassesTrait> {};

/// Reports an error of a pass that is the user's, not Ember's (what they
/// asked for cannot be done): the message starts with "[ember:<id>]", from
/// which Python raises the exception Runtime.def names for the kind.
InFlightDiagnostic emitUserError(Operation *op, runtime::ErrorKind kind);

/// How a rule function runs: `Build` emits the rule's IR; `Probe` only says
/// whether the op has a rule (success) or not (failure), emitting nothing.
enum class RuleMode { Build, Probe };

/// The JVP rule of an ember op (see DifferentiableOpInterface).
LogicalResult buildJvp(Operation *op, OpBuilder &b, ArrayRef<Value> tangents,
                       SmallVectorImpl<Value> &resultTangents,
                       RuleMode mode = RuleMode::Build);
/// The transpose rule of an ember op (see DifferentiableOpInterface).
LogicalResult buildTranspose(Operation *op, OpBuilder &b,
                             ArrayRef<Value> cotangents, ArrayRef<bool> linear,
                             SmallVectorImpl<Value> &operandCotangents,
                             RuleMode mode = RuleMode::Build);
/// A splat constant `v` of tensor type `t` (float, integer or complex).
DenseElementsAttr splatOf(RankedTensorType t, double v);
/// `v` in the float semantics `sem`, rounded to nearest as XLA converts,
/// also where the type cannot hold it (8- and 4-bit floats): NaN or
/// infinity without them, negative numbers or zero in an unsigned type
/// without zero (NaN; NaN without NaN: negative zero), tiny values there
/// (the smallest). APFloat itself aborts on these.
llvm::APFloat floatIn(const llvm::fltSemantics &sem, double v);
/// A FloatAttr of the float type `t` holding `v` (see floatIn).
FloatAttr floatAttrOf(Type t, double v);
/// JAX's identity of a float reduction: 0 (NaN in a type without zero), 1,
/// -inf/+inf or, in a type without infinities, its lowest/largest value.
llvm::APFloat reductionIdentity(const llvm::fltSemantics &sem, ReduceKind kind);

/// The NumPy name of an element type ("float32", "bool", "complex64"; empty
/// for a type Ember does not have).
std::string dtypeName(Type elementType);
/// A tensor type as JAX prints an aval: "float32[3,4]".
std::string avalString(RankedTensorType t);

/// `t` (a ranked tensor type) with a leading batch dimension of size `n`.
RankedTensorType batchedType(Type t, int64_t n);

/// The batching rule of an ember op (see BatchableOpInterface).
LogicalResult buildBatch(Operation *op, OpBuilder &b, ArrayRef<Value> operands,
                         ArrayRef<bool> batched, int64_t batchSize,
                         SmallVectorImpl<Value> &results,
                         RuleMode mode = RuleMode::Build);

/// Which rules the ops called `name` have (probed without building IR).
struct OpRules {
  bool rulesInPasses; ///< Ember_RulesInPasses: the passes handle it
  bool jvp, linear, transpose, batch;
};
OpRules getOpRules(RegisteredOperationName name);
} // namespace mlir::ember

#include "ember/IR/EmberInterfaces.h.inc"
#define GET_ATTRDEF_CLASSES
#include "ember/IR/EmberAttrs.h.inc"
#define GET_TYPEDEF_CLASSES
#include "ember/IR/EmberTypes.h.inc"
#define GET_OP_CLASSES
#include "ember/IR/EmberOps.h.inc"

#endif // EMBER_IR_EMBERDIALECT_H
