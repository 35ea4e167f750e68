//===- EmberExpandTransforms.cpp - expand every transformation op ---------===//
//
// ember.jvp, ember.vjp and ember.vmap reference the function they transform.
// Each expansion needs its callee free of transformation ops (innermost
// first), and an expansion may create new ones (the batched function of a
// custom_vjp_call holds an ember.vjp, say), so the expansions alternate until
// none is left: there is no bound on how deeply transformations nest.
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBEREXPANDTRANSFORMSPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;
using namespace mlir::ember;

/// Drops the device mark of the kept vmaps that stuck transformations wait
/// for (those in their callees and the functions these call); whether any
/// was dropped.
static bool releaseDeviceVmaps(ModuleOp module, SymbolTable &symbols) {
  bool released = false;
  llvm::DenseSet<Operation *> seen;
  std::function<void(func::FuncOp)> release = [&](func::FuncOp fn) {
    if (!fn || !seen.insert(fn).second)
      return;
    fn.walk([&](Operation *op) {
      if (isDeviceVmap(op)) {
        op->removeAttr("ember.device_axis");
        released = true;
      } else if (auto call = dyn_cast<func::CallOp>(op)) {
        release(symbols.lookup<func::FuncOp>(call.getCallee()));
      }
    });
  };
  module.walk([&](Operation *op) {
    if (!isTransformOp(op) || isDeviceVmap(op))
      return;
    if (auto callee = op->getAttrOfType<FlatSymbolRefAttr>("callee"))
      release(symbols.lookup<func::FuncOp>(callee.getValue()));
  });
  return released;
}

namespace {
struct EmberExpandTransformsPass
    : public mlir::ember::impl::EmberExpandTransformsPassBase<
          EmberExpandTransformsPass> {
  using EmberExpandTransformsPassBase::EmberExpandTransformsPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (bool released = true; released;) {
      for (bool progress = true; progress;) {
        progress = false;
        if (failed(expandAutodiffOps(module, symbols, progress,
                                     keepKernelCalls)) ||
            failed(expandBatchOps(module, symbols, progress, keepKernelCalls,
                                  keepDeviceVmaps)))
          return signalPassFailure();
      }
      // A transformation of a function holding kept device vmaps (grad of
      // a shard_map) waits for them forever: those vmaps are expanded after
      // all (vectorized over their lanes, as without keep-device-vmaps).
      released = keepDeviceVmaps && releaseDeviceVmaps(module, symbols);
    }
    // No progress: either nothing is left, or what is left can never be
    // ready (a function that transforms itself, directly or not; with
    // keep-device-vmaps, a transformation of a function holding a kept
    // device vmap).
    WalkResult stuck = module.walk([&](Operation *op) {
      if (!isTransformOp(op) || (keepDeviceVmaps && isDeviceVmap(op)))
        return WalkResult::advance();
      op->emitOpError(
          "cannot be expanded: its function transforms itself (recursion "
          "through a transformation)");
      return WalkResult::interrupt();
    });
    if (stuck.wasInterrupted())
      return signalPassFailure();
    if (failed(inlineCustomCalls(module, symbols)))
      return signalPassFailure();
  }
};
} // namespace
