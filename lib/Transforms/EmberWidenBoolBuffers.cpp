//===- EmberWidenBoolBuffers.cpp - store i1 buffers as bytes --------------===//
//
// MLIR 22's memref-to-LLVM lowering refuses loads and stores of i1 elements
// (it asserts), but the ownership-based deallocation pipeline creates
// memref<?xi1> buffers for its runtime ownership flags whenever a buffer's
// ownership is only known at run time (e.g. results of scf.if or
// scf.while). This pass gives every memref of i1 an i8 element type: stores
// zero-extend, loads truncate, and every other op (allocations, casts,
// deallocation, function signatures and calls) just takes the new types.
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERWIDENBOOLBUFFERSPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {

bool isBoolBuffer(Type t) {
  auto m = dyn_cast<BaseMemRefType>(t);
  return m && m.getElementType().isInteger(1);
}

struct BoolBufferTypeConverter : TypeConverter {
  BoolBufferTypeConverter() {
    addConversion([](Type t) { return t; });
    addConversion([](MemRefType t) -> Type {
      if (!t.getElementType().isInteger(1))
        return t;
      return t.clone(IntegerType::get(t.getContext(), 8));
    });
    addConversion([](UnrankedMemRefType t) -> Type {
      if (!t.getElementType().isInteger(1))
        return t;
      return UnrankedMemRefType::get(IntegerType::get(t.getContext(), 8),
                                     t.getMemorySpace());
    });
  }
};

struct StoreWidening : OpConversionPattern<memref::StoreOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(memref::StoreOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value v = arith::ExtUIOp::create(rewriter, op.getLoc(),
                                     rewriter.getI8Type(), adaptor.getValue());
    rewriter.replaceOpWithNewOp<memref::StoreOp>(op, v, adaptor.getMemref(),
                                                 adaptor.getIndices());
    return success();
  }
};

struct LoadWidening : OpConversionPattern<memref::LoadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(memref::LoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value v = memref::LoadOp::create(rewriter, op.getLoc(), adaptor.getMemref(),
                                     adaptor.getIndices());
    rewriter.replaceOpWithNewOp<arith::TruncIOp>(op, rewriter.getI1Type(), v);
    return success();
  }
};

/// Any other region-free op: the same op on the converted types.
struct RetypeOp : ConversionPattern {
  RetypeOp(const TypeConverter &tc, MLIRContext *ctx)
      : ConversionPattern(tc, MatchAnyOpTypeTag(), /*benefit=*/0, ctx) {}
  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (op->getNumRegions() != 0 || isa<memref::LoadOp, memref::StoreOp>(op))
      return failure();
    SmallVector<Type> types;
    if (failed(getTypeConverter()->convertTypes(op->getResultTypes(), types)))
      return failure();
    OperationState state(op->getLoc(), op->getName(), operands, types,
                         op->getAttrs(), op->getSuccessors());
    rewriter.replaceOp(op, rewriter.create(state)->getResults());
    return success();
  }
};

struct EmberWidenBoolBuffersPass
    : public mlir::ember::impl::EmberWidenBoolBuffersPassBase<
          EmberWidenBoolBuffersPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    BoolBufferTypeConverter converter;
    ConversionTarget target(*ctx);
    auto touchesBoolBuffers = [](Operation *op) {
      if (auto f = dyn_cast<FunctionOpInterface>(op))
        return llvm::any_of(f.getArgumentTypes(), isBoolBuffer) ||
               llvm::any_of(f.getResultTypes(), isBoolBuffer);
      return llvm::any_of(op->getOperandTypes(), isBoolBuffer) ||
             llvm::any_of(op->getResultTypes(), isBoolBuffer);
    };
    target.markUnknownOpDynamicallyLegal(
        [&](Operation *op) { return !touchesBoolBuffers(op); });
    RewritePatternSet patterns(ctx);
    patterns.add<StoreWidening, LoadWidening, RetypeOp>(converter, ctx);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
