//===- EmberPrivatizeParallelLoops.cpp - scratch of its own per iteration ===//
//
// Loop-invariant code motion moves a `tensor.empty` out of a loop. For a
// sequential loop that is harmless: bufferization gives the empty one
// buffer, which every iteration overwrites (its contents are undefined, so
// no iteration reads what another left). An `scf.for` marked
// `ember.parallel` may run its iterations at the same time
// (ember-split-rows), so each use of an empty from outside such a loop gets
// its own clone just before the user: one buffer per iteration again. The
// motion also takes views of an empty (the slices a concatenation's pieces
// are written into, reshapes): a use of such a view gets a clone of the
// empty and of each view on the way.
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

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

/// A view that only selects or reshapes part of its source, so that an
/// empty seen through it is still an empty's buffer.
bool isView(Operation *op) {
  return isa<tensor::ExtractSliceOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp, tensor::CastOp>(op);
}

/// The ops from an empty made outside `loop` to `v` through views, in
/// order (the empty first), or none.
SmallVector<Operation *> emptyChain(Value v, scf::ForOp loop) {
  SmallVector<Operation *> chain;
  Operation *def = v.getDefiningOp();
  while (def && !loop->isAncestor(def) && isView(def)) {
    chain.push_back(def);
    def = def->getOperand(0).getDefiningOp();
  }
  if (!def || loop->isAncestor(def) || !isEmpty(def))
    return {};
  chain.push_back(def);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

struct EmberPrivatizeParallelLoopsPass
    : public mlir::ember::impl::EmberPrivatizeParallelLoopsPassBase<
          EmberPrivatizeParallelLoopsPass> {
  void runOnOperation() override {
    getOperation().walk([&](scf::ForOp loop) {
      if (!loop->hasAttr(ember::kParallelLoopAttr))
        return;
      SmallVector<std::pair<OpOperand *, SmallVector<Operation *>>> uses;
      loop.getRegion().walk([&](Operation *user) {
        for (OpOperand &operand : user->getOpOperands())
          if (auto chain = emptyChain(operand.get(), loop); !chain.empty())
            uses.push_back({&operand, chain});
      });
      for (auto &[use, chain] : uses) {
        OpBuilder b(use->getOwner());
        IRMapping map;
        Operation *last = nullptr;
        for (Operation *op : chain)
          last = b.clone(*op, map);
        use->set(last->getResult(0));
      }
    });
  }
};
} // namespace
