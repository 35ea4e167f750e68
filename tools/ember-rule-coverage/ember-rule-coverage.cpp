//===- ember-rule-coverage.cpp - every op has its rules -------------------===//
//
// Lists every op of the ember dialect with the rules it has and fails (exit
// code 1) when one lacks a rule it must have:
//   - an op with the rule interfaces needs a JVP rule and a batching rule;
//   - an op marked Ember_Linear also needs a transpose rule;
//   - an op without the interfaces must be marked Ember_RulesInPasses (the
//     passes transform the function it references).
// test/Dialect/rule-coverage.mlir runs it, so a new op cannot ship without
// its rules.
//
//===----------------------------------------------------------------------===//
#include "ember/IR/EmberDialect.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

int main() {
  MLIRContext ctx;
  ctx.getOrLoadDialect<ember::EmberDialect>();
  unsigned ops = 0, missing = 0;
  for (RegisteredOperationName name : ctx.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "ember")
      continue;
    ++ops;
    ember::OpRules r = ember::getOpRules(name);
    bool hasInterfaces =
        name.hasInterface<ember::DifferentiableOpInterface>() &&
        name.hasInterface<ember::BatchableOpInterface>();
    llvm::SmallVector<llvm::StringRef> lacks;
    if (r.rulesInPasses) {
      llvm::outs() << name.getStringRef() << ": rules in the passes\n";
      continue;
    }
    if (!hasInterfaces)
      lacks.push_back("the rule interfaces (or Ember_RulesInPasses)");
    if (!r.jvp)
      lacks.push_back("a JVP rule");
    if (r.linear && !r.transpose)
      lacks.push_back("a transpose rule (it is Ember_Linear)");
    if (!r.batch)
      lacks.push_back("a batching rule");
    llvm::outs() << name.getStringRef() << ":" << (r.jvp ? " jvp" : "")
                 << (r.linear ? " (linear)" : "")
                 << (r.transpose ? " transpose" : "")
                 << (r.batch ? " batch" : "");
    if (!lacks.empty()) {
      ++missing;
      llvm::outs() << "  MISSING:";
      for (llvm::StringRef l : lacks)
        llvm::outs() << " " << l << ";";
    }
    llvm::outs() << "\n";
  }
  if (missing) {
    llvm::errs() << "ember-rule-coverage: " << missing << " of " << ops
                 << " ops lack rules (see MISSING above)\n";
    return 1;
  }
  llvm::outs() << "all " << ops << " ember ops have their rules\n";
  return 0;
}
