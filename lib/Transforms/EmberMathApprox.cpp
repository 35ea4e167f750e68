//===- EmberMathApprox.cpp - inline polynomial math for f32 ---------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERMATHAPPROXPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {
struct EmberMathApproxPass
    : public mlir::ember::impl::EmberMathApproxPassBase<EmberMathApproxPass> {
  void runOnOperation() override {
    // The predicate sees operation names without the dialect prefix in some
    // releases and with it in others; accept both spellings.
    static const llvm::StringSet<> kApproximated = {
        "exp",      "expm1",      "log",       "log1p",
        "log2",     "tanh",       "math.exp",  "math.expm1",
        "math.log", "math.log1p", "math.log2", "math.tanh"};
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return kApproximated.contains(name); });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
