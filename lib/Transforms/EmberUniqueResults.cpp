//===- EmberUniqueResults.cpp - one tensor per function result
//-------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERUNIQUERESULTSPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {
struct EmberUniqueResultsPass
    : public mlir::ember::impl::EmberUniqueResultsPassBase<
          EmberUniqueResultsPass> {
  void runOnOperation() override {
    getOperation().walk([&](func::ReturnOp ret) {
      llvm::DenseSet<Value> seen;
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value v = operand.get();
        auto t = dyn_cast<RankedTensorType>(v.getType());
        if (!t || seen.insert(v).second)
          continue;
        Value empty = tensor::EmptyOp::create(b, ret.getLoc(), t.getShape(),
                                              t.getElementType());
        operand.set(
            linalg::CopyOp::create(b, ret.getLoc(), v, empty).getResult(0));
      }
    });
  }
};
} // namespace
