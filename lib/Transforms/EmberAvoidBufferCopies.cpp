//===- EmberAvoidBufferCopies.cpp - fewer copies from bufferization -------===//
//
// Before one-shot bufferization: a fill shared by several destinations is
// cloned for each, and reads of a tensor placed after an in-place write of
// it move above the write (EmberPasses.td). Upstream's empty-tensor
// elimination rewrites tensor.empty only; nothing upstream reorders reads,
// and the fills that CSE merges are Ember's own lowering of reductions.
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERAVOIDBUFFERCOPIESPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {

/// Whether `v` is available before `op` (defined in an enclosing region, or
/// earlier in op's block).
bool availableBefore(Value v, Operation *op) {
  Operation *def = v.getDefiningOp();
  Block *block = def ? def->getBlock() : cast<BlockArgument>(v).getOwner();
  if (block != op->getBlock())
    return block->getParent()->isAncestor(op->getParentRegion());
  return !def || def->isBeforeInBlock(op);
}

/// Gives every destination use of a shared fill but the first its own clone.
void cloneSharedFills(ModuleOp module) {
  SmallVector<linalg::GenericOp> fills;
  module.walk([&](linalg::GenericOp g) {
    if (g.hasPureTensorSemantics() && mlir::ember::fillValue(g) &&
        !g->getResult(0).hasOneUse())
      fills.push_back(g);
  });
  for (linalg::GenericOp fill : fills) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : fill->getResult(0).getUses()) {
      auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
      if (dps && dps.isDpsInit(&use))
        uses.push_back(&use);
    }
    // One keeps the original; the clones (with their own tensor.empty when
    // the fill writes one) go just before their users, which the fill and
    // its operands dominate.
    if (uses.size() < 2)
      continue;
    for (OpOperand *use : llvm::drop_begin(uses)) {
      OpBuilder b(use->getOwner());
      IRMapping map;
      Value init = fill.getDpsInitOperand(0)->get();
      if (auto empty = init.getDefiningOp<tensor::EmptyOp>())
        map.map(init, b.clone(*empty)->getResult(0));
      use->set(b.clone(*fill, map)->getResult(0));
    }
  }
}

/// Moves each pure read (tensor.extract_slice, tensor.extract) of a tensor
/// that follows an op writing that tensor in place (as its destination)
/// above the write, when the read's operands are available there: a pure
/// reordering, after which bufferization reads the buffer before the write
/// instead of copying it.
void readsBeforeWrites(ModuleOp module) {
  SmallVector<std::pair<Operation *, Operation *>> moves; // (read, write)
  module.walk([&](DestinationStyleOpInterface write) {
    if (!write.hasPureTensorSemantics())
      return;
    for (OpOperand &init : write.getDpsInitsMutable()) {
      Value t = init.get();
      for (Operation *read : t.getUsers()) {
        if (read == write || read->getBlock() != write->getBlock() ||
            !write->isBeforeInBlock(read) ||
            !isa<tensor::ExtractSliceOp, tensor::ExtractOp>(read))
          continue;
        if (llvm::all_of(read->getOperands(),
                         [&](Value v) { return availableBefore(v, write); }))
          moves.push_back({read, write});
      }
    }
  });
  for (auto [read, write] : moves)
    if (write->isBeforeInBlock(read))
      read->moveBefore(write);
}

/// Sinks each tensor.insert_slice whose result only the block's terminator
/// uses to just before the terminator, or before the first write into a
/// ref's buffer on the way (`materialize_in_destination`, which must stay
/// after every computation that reads the ref's value on entry): reads of
/// its destination placed after it then read the buffer before the write
/// (reading a slice in place rather than a copy of it).
void sinkFinalWrites(ModuleOp module) {
  SmallVector<std::pair<tensor::InsertSliceOp, Operation *>> writes;
  module.walk([&](tensor::InsertSliceOp write) {
    if (!write->getBlock()->mightHaveTerminator())
      return;
    Operation *term = write->getBlock()->getTerminator();
    if (!llvm::all_of(write->getUsers(),
                      [&](Operation *u) { return u == term; }))
      return;
    Operation *to = write->getNextNode();
    while (to != term && !isa<bufferization::MaterializeInDestinationOp>(to))
      to = to->getNextNode();
    if (to != write->getNextNode())
      writes.push_back({write, to});
  });
  for (auto [write, to] : writes)
    write->moveBefore(to);
}

struct EmberAvoidBufferCopiesPass
    : public mlir::ember::impl::EmberAvoidBufferCopiesPassBase<
          EmberAvoidBufferCopiesPass> {
  void runOnOperation() override {
    cloneSharedFills(getOperation());
    sinkFinalWrites(getOperation());
    readsBeforeWrites(getOperation());
  }
};
} // namespace
