//===- EmberGPUHoistAllocas.cpp - kernel stack buffers to the entry -------===//
//
// Fixed-size `memref.alloca`s nested in a kernel's loops and conditionals
// move to its entry block, where LLVM promotes them to registers (see the
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
      Block &entry = func.getBody().front();
      SmallVector<memref::AllocaOp> nested;
      func.walk([&](memref::AllocaOp op) {
        if (op->getBlock() != &entry && op.getType().hasStaticShape() &&
            op->getNumOperands() == 0)
          nested.push_back(op);
      });
      for (memref::AllocaOp op : nested)
        op->moveBefore(&entry, entry.begin());
    });
  }
};

} // namespace
