//===- EmberPrivatizeParallelLoops.cpp - scratch of its own per iteration ===//
//
// Loop-invariant code motion moves a `tensor.empty` out of a loop. For a
// sequential loop that is harmless: bufferization gives the empty one
// buffer, which every iteration overwrites (its contents are undefined, so
// no iteration reads what another left). An `scf.for` marked
// `ember.parallel` may run its iterations at the same time
// (ember-split-rows), so each use of an empty from outside such a loop gets
// its own clone just before the user: one buffer per iteration again.
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERPRIVATIZEPARALLELLOOPSPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {
/// A tensor whose contents are undefined until written (bufferization
/// shares its buffer between the writers).
bool isEmpty(Operation *op) {
  if (isa<tensor::EmptyOp>(op))
    return true;
  auto alloc = dyn_cast<bufferization::AllocTensorOp>(op);
  return alloc && !alloc.getCopy();
}

struct EmberPrivatizeParallelLoopsPass
    : public mlir::ember::impl::EmberPrivatizeParallelLoopsPassBase<
          EmberPrivatizeParallelLoopsPass> {
  void runOnOperation() override {
    getOperation().walk([&](scf::ForOp loop) {
      if (!loop->hasAttr(ember::kParallelLoopAttr))
        return;
      SmallVector<OpOperand *> uses;
      loop.getRegion().walk([&](Operation *user) {
        for (OpOperand &operand : user->getOpOperands()) {
          Operation *def = operand.get().getDefiningOp();
          if (def && isEmpty(def) && !loop->isAncestor(def))
            uses.push_back(&operand);
        }
      });
      for (OpOperand *use : uses) {
        OpBuilder b(use->getOwner());
        use->set(b.clone(*use->get().getDefiningOp())->getResult(0));
      }
    });
  }
};
} // namespace
