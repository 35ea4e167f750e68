//===- EmberGPUHoistAllocas.cpp - kernel stack buffers to the entry -------===//
//
// Fixed-size `memref.alloca`s of a kernel (nested in its loops and
// conditionals, or later in its entry block) move to the start of its entry
// block, where LLVM promotes them to registers (see the
// pass description in EmberPasses.td).
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERGPUHOISTALLOCASPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {

struct EmberGPUHoistAllocasPass
    : public ember::impl::EmberGPUHoistAllocasPassBase<
          EmberGPUHoistAllocasPass> {
  void runOnOperation() override {
    getOperation()->walk([](gpu::GPUFuncOp func) {
      if (func.getBody().empty())
        return;
      // Also those of the entry block itself: converting its conditionals
      // to branches later splits it, and LLVM promotes only the allocas at
      // the start of a function.
      Block &entry = func.getBody().front();
      SmallVector<memref::AllocaOp> fixed;
      func.walk([&](memref::AllocaOp op) {
        if (op.getType().hasStaticShape() && op->getNumOperands() == 0)
          fixed.push_back(op);
      });
      for (memref::AllocaOp op : llvm::reverse(fixed))
        op->moveBefore(&entry, entry.begin());
    });
  }
};

} // namespace
