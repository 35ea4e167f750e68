//===- RuleCoverage.cpp - which rules an op has ---------------------------===//
//
// Asks the rule functions about an op without building anything: a bare op
// of the name (no operands, results or regions) selects the rule's case, and
// RuleMode::Probe stops there. The rule-coverage test runs this for every op
// of the dialect.
//
//===----------------------------------------------------------------------===//
#include "ember/IR/EmberDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ember;

OpRules mlir::ember::getOpRules(RegisteredOperationName name) {
  OpRules rules{};
  rules.rulesInPasses = name.hasTrait<RulesInPassesTrait>();
  rules.linear = name.hasTrait<LinearTrait>();
  MLIRContext *ctx = name.getIdentifier().getContext();
  Operation *op =
      Operation::create(UnknownLoc::get(ctx), name, /*resultTypes=*/{},
                        /*operands=*/{}, NamedAttrList(),
                        /*properties=*/nullptr, /*successors=*/{},
                        /*numRegions=*/0);
  OpBuilder b(ctx);
  SmallVector<Value> out;
  if (name.hasInterface<DifferentiableOpInterface>()) {
    rules.jvp = succeeded(buildJvp(op, b, {}, out, RuleMode::Probe));
    rules.transpose =
        succeeded(buildTranspose(op, b, {}, {}, out, RuleMode::Probe));
  }
  if (name.hasInterface<BatchableOpInterface>())
    rules.batch = succeeded(buildBatch(op, b, {}, {}, 0, out, RuleMode::Probe));
  op->destroy();
  return rules;
}
