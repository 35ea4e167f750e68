//===- LowerControlFlow.cpp - while, case and yield -----------------------===//
//
// ember.while becomes scf.for (counted loops) or scf.while, ember.case a
// chain of scf.if; the regions move over with converted types.
//
//===----------------------------------------------------------------------===//
#include "EmberToLinalgCommon.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::ember;

namespace {

/// ember.while -> scf.while; the regions move over with converted types and
/// their ember.yield terminators become scf.condition / scf.yield.
struct WhileLowering : public OpConversionPattern<WhileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WhileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Type> types;
    if (failed(getTypeConverter()->convertTypes(op.getResultTypes(), types)))
      return failure();
    if (op.getTripCount() && isPureRegion(op.getCond()))
      return lowerCounted(op, adaptor, types, rewriter);
    auto loop =
        scf::WhileOp::create(rewriter, op.getLoc(), types, adaptor.getInit());
    for (auto [from, to] :
         {std::pair<Region *, Region *>{&op.getCond(), &loop.getBefore()},
          std::pair<Region *, Region *>{&op.getBody(), &loop.getAfter()}}) {
      rewriter.inlineRegionBefore(*from, *to, to->end());
      if (failed(rewriter.convertRegionTypes(to, *getTypeConverter())))
        return failure();
    }
    rewriter.replaceOp(op, loop.getResults());
    return success();
  }

private:
  static bool isPureRegion(Region &r) {
    return llvm::all_of(r.front().without_terminator(),
                        [](Operation &o) { return isMemoryEffectFree(&o); });
  }

  /// A loop that runs exactly `trip_count` times needs no predicate: it
  /// becomes `scf.for`, whose carried tensors bufferize in place (scf.while
  /// copies them, and allocates its predicate, on every iteration).
  LogicalResult lowerCounted(WhileOp op, OpAdaptor adaptor,
                             ArrayRef<Type> types,
                             ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    Value lb = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value ub =
        arith::ConstantIndexOp::create(rewriter, loc, *op.getTripCount());
    Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto loop =
        scf::ForOp::create(rewriter, loc, lb, ub, step, adaptor.getInit());
    // Independent iterations (while_c5): ember-split-rows may run them on
    // the threads once the carried tensors are buffers written in place.
    if (op.getParallel())
      loop->setAttr(kParallelLoopAttr, rewriter.getUnitAttr());
    Region &to = loop.getRegion();
    rewriter.eraseBlock(&to.front());
    rewriter.inlineRegionBefore(op.getBody(), to, to.end());
    // The body's carried values, after a new induction variable.
    Block &body = to.front();
    TypeConverter::SignatureConversion sig(body.getNumArguments());
    sig.addInputs(rewriter.getIndexType());
    for (auto [i, t] : llvm::enumerate(types))
      sig.addInputs(i, t);
    rewriter.applySignatureConversion(&body, sig, getTypeConverter());
    rewriter.replaceOp(op, loop.getResults());
    return success();
  }
};

/// `ember.case` becomes a chain of `scf.if` on the clamped index: branch k
/// runs where the index is k, the last branch otherwise. (scf.if rather than
/// scf.index_switch: one-shot bufferization misses read-after-write
/// conflicts through index_switch results in MLIR 22, which corrupted
/// values computed in earlier switches.)
struct CaseLowering : public OpConversionPattern<CaseOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CaseOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Type> types;
    if (failed(getTypeConverter()->convertTypes(op.getResultTypes(), types)))
      return failure();
    int64_t n = op.getBranches().size();
    Value i = scalarToIndex(rewriter, loc, adaptor.getIndex(),
                            op.getIndex().getType().getElementType());
    i = clampIndex(rewriter, loc, i, 0, n - 1);
    // Builds the dispatch over branches k..n-1 into `into` (or replaces the
    // op when k == 0); returns the results.
    std::function<ValueRange(int64_t)> build = [&](int64_t k) -> ValueRange {
      Value isK = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                        i, indexConst(rewriter, loc, k));
      auto ifOp =
          scf::IfOp::create(rewriter, loc, types, isK, /*withElseRegion=*/true);
      Region &thenRegion = ifOp.getThenRegion(),
             &elseRegion = ifOp.getElseRegion();
      // Drop the default (empty) blocks and move the branch regions in.
      for (Region *r : {&thenRegion, &elseRegion})
        while (!r->empty())
          rewriter.eraseBlock(&r->front());
      rewriter.inlineRegionBefore(op.getBranches()[k], thenRegion,
                                  thenRegion.end());
      if (k + 2 == n) {
        rewriter.inlineRegionBefore(op.getBranches()[k + 1], elseRegion,
                                    elseRegion.end());
      } else {
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.createBlock(&elseRegion);
        ValueRange inner = build(k + 1);
        scf::YieldOp::create(rewriter, loc, inner);
      }
      return ifOp.getResults();
    };
    if (n == 1) {
      // A single branch: its body, inline.
      Block &b = op.getBranches()[0].front();
      auto yield = cast<YieldOp>(b.getTerminator());
      SmallVector<Value> results(yield.getValues());
      rewriter.inlineBlockBefore(&b, op);
      rewriter.eraseOp(yield);
      rewriter.replaceOp(op, results);
      return success();
    }
    rewriter.replaceOp(op, build(0));
    return success();
  }
};

struct YieldLowering : public OpConversionPattern<YieldOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(YieldOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (isa<scf::IfOp>(op->getParentOp())) {
      rewriter.replaceOpWithNewOp<scf::YieldOp>(op, adaptor.getValues());
      return success();
    }
    if (isa<scf::ForOp>(op->getParentOp())) {
      rewriter.replaceOpWithNewOp<scf::YieldOp>(op, adaptor.getValues());
      return success();
    }
    auto loop = dyn_cast<scf::WhileOp>(op->getParentOp());
    if (!loop)
      return rewriter.notifyMatchFailure(op, "parent not lowered yet");
    if (op->getParentRegion() == &loop.getBefore()) {
      // The predicate is a 0-d bool tensor (stored as i8).
      Value p = tensor::ExtractOp::create(rewriter, op.getLoc(),
                                          adaptor.getValues()[0], ValueRange{});
      if (!p.getType().isInteger(1))
        p = arith::TruncIOp::create(rewriter, op.getLoc(), rewriter.getI1Type(),
                                    p);
      rewriter.replaceOpWithNewOp<scf::ConditionOp>(
          op, p, loop.getBefore().front().getArguments());
    } else {
      rewriter.replaceOpWithNewOp<scf::YieldOp>(op, adaptor.getValues());
    }
    return success();
  }
};

} // namespace

void mlir::ember::populateControlFlowLoweringPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<WhileLowering, CaseLowering, YieldLowering>(
      converter, patterns.getContext());
}
