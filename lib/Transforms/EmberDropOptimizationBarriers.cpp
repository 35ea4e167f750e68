//===- EmberDropOptimizationBarriers.cpp - barriers become identities -----===//
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERDROPOPTIMIZATIONBARRIERSPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {
struct EmberDropOptimizationBarriersPass
    : public mlir::ember::impl::EmberDropOptimizationBarriersPassBase<
          EmberDropOptimizationBarriersPass> {
  void runOnOperation() override {
    getOperation()->walk([](ember::OptimizationBarrierOp op) {
      op->replaceAllUsesWith(op.getOperands());
      op->erase();
    });
  }
};
} // namespace
