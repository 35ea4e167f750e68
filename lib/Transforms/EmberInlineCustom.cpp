//===- EmberInlineCustom.cpp - inline custom-derivative calls -------------===//
#include "TransformUtils.h"
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERINLINECUSTOMPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;
using namespace mlir::ember;

/// Inlines the custom calls `ops` (a custom_linear left is forward mode of a
/// custom_vjp function: the user's error).
static LogicalResult inlineCollected(ArrayRef<Operation *> ops,
                                     SymbolTable &symbols) {
  for (Operation *op : ops) {
    if (isa<CustomLinearOp>(op))
      return emitUserError(op, runtime::ErrorKind::JvpOfCustomVjp)
             << "can't apply forward-mode autodiff (jvp) to a custom_vjp "
                "function.";
    auto callee = symbols.lookup<func::FuncOp>(
        op->getAttrOfType<FlatSymbolRefAttr>("callee").getValue());
    auto seg = op->getAttrOfType<DenseI64ArrayAttr>("segments").asArrayRef();
    auto parts = splitSegments(op->getOperands(), seg.take_front(2));
    SmallVector<Value> ins(parts[0]);
    ins.append(parts[1].begin(), parts[1].end());
    OpBuilder b(op);
    auto res = inlineBody(b, callee, ins, symbols);
    if (failed(res))
      return failure();
    op->replaceAllUsesWith(*res);
    op->erase();
  }
  return success();
}

LogicalResult mlir::ember::inlineCustomCalls(ModuleOp module,
                                             SymbolTable &symbols) {
  // Until none is left: an inlined body may hold custom calls of its own
  // (a custom_jvp function calling another, under two derivatives).
  SmallVector<Operation *> ops;
  auto collect = [&] {
    ops.clear();
    module.walk([&](Operation *op) {
      if (isa<CustomJvpCallOp, CustomVjpCallOp, CustomLinearOp>(op))
        ops.push_back(op);
    });
    return !ops.empty();
  };
  while (collect()) {
    if (failed(inlineCollected(ops, symbols)))
      return failure();
  }
  return success();
}

namespace {
struct EmberInlineCustomPass
    : public mlir::ember::impl::EmberInlineCustomPassBase<
          EmberInlineCustomPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    if (failed(inlineCustomCalls(module, symbols)))
      signalPassFailure();
  }
};
} // namespace
