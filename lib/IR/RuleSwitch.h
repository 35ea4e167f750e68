//===- RuleSwitch.h - a TypeSwitch over op rules that can be probed -*- C++
//-*-===//
//
// The per-op rules (JVP, transpose, batching) dispatch on the op's class with
// `.Case<...>(fn)` like llvm::TypeSwitch. RuleSwitch does the same, and in
// RuleMode::Probe answers whether a case exists without running it, which
// lets the rule-coverage test ask every op of the dialect for its rules.
//
//===----------------------------------------------------------------------===//
#ifndef EMBER_LIB_IR_RULESWITCH_H
#define EMBER_LIB_IR_RULESWITCH_H

#include "ember/IR/EmberDialect.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <type_traits>

namespace mlir::ember {

class RuleSwitch {
public:
  RuleSwitch(Operation *op, RuleMode mode) : op(op), mode(mode) {}

  /// Several op classes sharing one rule.
  template <typename CaseT, typename CaseT2, typename... Rest, typename Fn>
  RuleSwitch &Case(Fn &&fn) {
    Case<CaseT>(fn);
    return Case<CaseT2, Rest...>(fn);
  }

  template <typename CaseT, typename Fn> RuleSwitch &Case(Fn &&fn) {
    if (!result && isa<CaseT>(op))
      result = mode == RuleMode::Probe ? success()
                                       : LogicalResult(fn(cast<CaseT>(op)));
    return *this;
  }

  /// The op class is the callable's parameter type.
  template <typename Fn> RuleSwitch &Case(Fn &&fn) {
    using Arg = std::remove_cv_t<std::remove_reference_t<
        typename llvm::function_traits<std::decay_t<Fn>>::template arg_t<0>>>;
    return Case<Arg>(std::forward<Fn>(fn));
  }

  /// No case matched: the op has no rule (failure when probing).
  template <typename Fn> LogicalResult Default(Fn &&fn) {
    if (result)
      return *result;
    if (mode == RuleMode::Probe)
      return failure();
    return fn(op);
  }

private:
  Operation *op;
  RuleMode mode;
  std::optional<LogicalResult> result;
};

} // namespace mlir::ember

#endif // EMBER_LIB_IR_RULESWITCH_H
