//===- EmberLowerCopies.cpp - memref.copy -> linalg.copy ------------------===//
//
// Copies into out-parameters from fresh buffers are removed (the buffer
// becomes the out-parameter); the others become linalg.copy.
//
//===----------------------------------------------------------------------===//
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

/// Whether `op` (a copy from a fresh buffer into an out-parameter) can write
/// its destination directly: the source is a `memref.alloc` of the same
/// type in the copy's block, used only before the copy (or freed after
/// it), and the destination is an argument of the function's entry block
/// that nothing but the copy uses. (A callee's result, which
/// `buffer-results-to-out-params` passes back through a fresh buffer of the
/// caller, is then written into the caller's own out-parameter.)
bool forwardsToOutParam(memref::CopyOp op) {
  auto alloc = op.getSource().getDefiningOp<memref::AllocOp>();
  auto dst = dyn_cast<BlockArgument>(op.getTarget());
  if (!alloc || !dst || alloc->getBlock() != op->getBlock() ||
      op.getSource().getType() != op.getTarget().getType() ||
      !dst.getOwner()->isEntryBlock() || !dst.hasOneUse())
    return false;
  for (Operation *user : alloc->getUsers()) {
    if (user == op)
      continue;
    // A view of the buffer could be written after the copy, which must not
    // reach the out-parameter.
    if (llvm::any_of(user->getResultTypes(), llvm::IsaPred<BaseMemRefType>))
      return false;
    Operation *at = op->getBlock()->findAncestorOpInBlock(*user);
    if (!at)
      return false;
    if (isa<memref::DeallocOp>(user) ? !op->isBeforeInBlock(at)
                                     : !at->isBeforeInBlock(op))
      return false;
  }
  return true;
}

/// A copy between two views of the same elements (bufferization leaves one
/// when a slice of a ref's buffer is updated in place: the slice written
/// and the one the ref's value is assembled in are separate subviews). A
/// copy of a buffer onto itself is canonicalization's (memref.copy folds).
bool copiesOntoItself(memref::CopyOp op) {
  auto a = op.getSource().getDefiningOp<memref::SubViewOp>();
  auto b = op.getTarget().getDefiningOp<memref::SubViewOp>();
  return a && b && a.getSource() == b.getSource() &&
         a.getType() == b.getType() &&
         a.getMixedOffsets() == b.getMixedOffsets() &&
         a.getMixedSizes() == b.getMixedSizes() &&
         a.getMixedStrides() == b.getMixedStrides();
}

struct EmberLowerCopiesPass
    : public mlir::ember::impl::EmberLowerCopiesPassBase<EmberLowerCopiesPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation()->walk([&](memref::CopyOp op) { copies.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (memref::CopyOp op : copies) {
      if (copiesOntoItself(op)) {
        rewriter.eraseOp(op);
        continue;
      }
      if (forwardsToOutParam(op)) {
        auto alloc = op.getSource().getDefiningOp<memref::AllocOp>();
        for (Operation *user : llvm::to_vector(alloc->getUsers()))
          if (isa<memref::DeallocOp>(user))
            rewriter.eraseOp(user);
        Value dst = op.getTarget();
        rewriter.eraseOp(op);
        rewriter.replaceOp(alloc, dst);
        continue;
      }
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
