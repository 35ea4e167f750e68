//===- EmberMathApprox.cpp - inline polynomial math for f32 ---------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
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
    // The approximations clamp their argument with maxnum/minnum, which
    // drop a NaN where it is folded (exp(x - NaN) folded to 0, JAX's is
    // NaN): a NaN argument is passed through by a select first.
    getOperation()->walk([](Operation *op) {
      if (!isa<math::ExpOp, math::ExpM1Op, math::TanhOp>(op) ||
          !getElementTypeOrSelf(op->getResult(0).getType()).isF32())
        return;
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      Value x = op->getOperand(0), r = op->getResult(0);
      Value isNaN = arith::CmpFOp::create(b, op->getLoc(),
                                          arith::CmpFPredicate::UNO, x, x);
      auto sel = arith::SelectOp::create(b, op->getLoc(), isNaN, x, r);
      r.replaceAllUsesExcept(sel, sel);
    });
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return kApproximated.contains(name); });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
