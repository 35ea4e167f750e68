//===- EmberInterfaces.td - rules every ember op declares --*- tablegen -*-===//
#ifndef EMBER_INTERFACES_TD
#define EMBER_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Ember_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::ember";
  let description = [{
    The differentiation rules of an op, used by `ember-autodiff`.

    `jvp` builds the tangents of the op's results from the tangents of its
    operands (a null Value is a zero tangent; a null result means zero). The
    op's own operands and results are the primal values. The built code must be
    linear in the tangents.

    `transpose` is defined for ops that appear with linear operands in JVP
    code: given the cotangents of the results (null = zero) and which operands
    are linear, it builds the cotangents of the linear operands (null = zero;
    entries for non-linear operands are ignored).

    The rules of all ops live in lib/IR/EmberAutodiffRules.cpp, one case per
    op next to each other, so a new op is one place to edit.
  }];
  let methods = [
    InterfaceMethod<"Builds the tangents of the results.", "::llvm::LogicalResult",
      "jvp", (ins "::mlir::OpBuilder &":$b, "::mlir::ArrayRef<::mlir::Value>":$tangents,
                  "::llvm::SmallVectorImpl<::mlir::Value> &":$resultTangents),
      /*methodBody=*/"", /*defaultImplementation=*/[{
        return ::mlir::ember::buildJvp($_op, b, tangents, resultTangents);
      }]>,
    InterfaceMethod<"Builds the cotangents of the linear operands.", "::llvm::LogicalResult",
      "transpose", (ins "::mlir::OpBuilder &":$b,
                        "::mlir::ArrayRef<::mlir::Value>":$cotangents,
                        "::llvm::ArrayRef<bool>":$linear,
                        "::llvm::SmallVectorImpl<::mlir::Value> &":$operandCotangents),
      /*methodBody=*/"", /*defaultImplementation=*/[{
        return ::mlir::ember::buildTranspose($_op, b, cotangents, linear, operandCotangents);
      }]>,
  ];
}

def Ember_BatchableOpInterface : OpInterface<"BatchableOpInterface"> {
  let cppNamespace = "::mlir::ember";
  let description = [{
    The batching rule of an op, used by `ember-batch`. `operands` are the
    op's operands in the batched function; `batched[i]` tells whether operand
    i carries a leading batch dimension of size `batchSize`. The rule builds
    the batched op(s) and returns results that all carry the leading batch
    dimension. Rules of all ops live in lib/IR/EmberBatchRules.cpp.
  }];
  let methods = [
    InterfaceMethod<"Builds the batched results.", "::llvm::LogicalResult", "batch",
      (ins "::mlir::OpBuilder &":$b, "::mlir::ArrayRef<::mlir::Value>":$operands,
           "::llvm::ArrayRef<bool>":$batched, "int64_t":$batchSize,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$results),
      /*methodBody=*/"", /*defaultImplementation=*/[{
        return ::mlir::ember::buildBatch($_op, b, operands, batched, batchSize, results);
      }]>,
  ];
}

//===----------------------------------------------------------------------===//
// Traits that classify an op for the transformation rules. The rule-coverage
// test (test/Dialect/rule-coverage.mlir) enumerates every op of the dialect
// and checks that each has the rules its traits and interfaces promise.
//===----------------------------------------------------------------------===//

// Linear in its float operands: the JVP applies the op to the tangents (the
// generic rule); the op must have a transpose rule.
def Ember_Linear : NativeOpTrait<"LinearTrait"> {
  let cppNamespace = "::mlir::ember";
}

// Piecewise constant or not differentiable by design (rounding, constants,
// stop_gradient): every result has a zero tangent.
def Ember_ZeroTangent : NativeOpTrait<"ZeroTangentTrait"> {
  let cppNamespace = "::mlir::ember";
}

// The passes transform the op themselves, not through per-op rules:
// transformation ops and custom-rule calls (the function they reference is
// transformed) and region ops (ember-autodiff and ember-batch handle
// ember.while / ember.case and their ember.yield).
def Ember_RulesInPasses : NativeOpTrait<"RulesInPassesTrait"> {
  let cppNamespace = "::mlir::ember";
}

#endif // EMBER_INTERFACES_TD
