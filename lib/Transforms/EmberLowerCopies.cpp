//===- EmberLowerCopies.cpp - memref.copy -> linalg.copy ------------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERLOWERCOPIESPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {
struct EmberLowerCopiesPass
    : public mlir::ember::impl::EmberLowerCopiesPassBase<EmberLowerCopiesPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation()->walk([&](memref::CopyOp op) { copies.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp op : copies) {
      // Only ranked memrefs of the same element type have a linalg.copy form.
      auto src = dyn_cast<MemRefType>(op.getSource().getType());
      auto dst = dyn_cast<MemRefType>(op.getTarget().getType());
      if (!src || !dst || src.getElementType() != dst.getElementType())
        continue;
      rewriter.setInsertionPoint(op);
      linalg::CopyOp::create(rewriter, op.getLoc(), op.getSource(),
                             op.getTarget());
      rewriter.eraseOp(op);
    }
  }
};
} // namespace
