//===- EmberWidenNarrowInts.cpp - 2- and 4-bit integers computed in 8 -----===//
//
// Ember ops on i2/i4/ui2/ui4 tensors are rebuilt on 8-bit integers between
// conversions, as XLA's CPU compiler computes them (EmberPasses.td,
// "ember-widen-narrow-ints").
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERWIDENNARROWINTSPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;
using namespace mlir::ember;

namespace {

/// The 8-bit integer type a 2- or 4-bit integer tensor type computes in,
/// or null for other types.
RankedTensorType widened(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  auto it = rt ? dyn_cast<IntegerType>(rt.getElementType()) : IntegerType();
  if (!it || it.getWidth() == 1 || it.getWidth() >= 8)
    return {};
  return rt.clone(IntegerType::get(t.getContext(), 8, it.getSignedness()));
}

struct EmberWidenNarrowIntsPass
    : public mlir::ember::impl::EmberWidenNarrowIntsPassBase<
          EmberWidenNarrowIntsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> todo;
    WalkResult walked = getOperation()->walk([&](Operation *op) {
      // (A bit cast to another width would regroup the narrow elements'
      // bits, which 8-bit elements do not hold.)
      if (auto bc = dyn_cast<BitcastConvertOp>(op))
        if ((widened(bc.getOperand().getType()) || widened(bc.getType())) &&
            bc.getOperand().getType().getElementTypeBitWidth() !=
                bc.getType().getElementTypeBitWidth()) {
          bc.emitOpError("ember-widen-narrow-ints: a bit cast between 2- or "
                         "4-bit integers and another width is not supported");
          return WalkResult::interrupt();
        }
      // (A constant held as a resource blob is left to ember-to-linalg.)
      if (auto c = dyn_cast<ConstantOp>(op))
        if (!isa<DenseIntElementsAttr>(c.getValue()))
          return WalkResult::advance();
      // (Refs keep their value type: their ops move a ref's bytes, and an
      // addupdate's wrapped sum has the same low bits.)
      auto isRef = [](Type t) { return isa<RefType>(t); };
      if (!isa<EmberDialect>(op->getDialect()) || isa<ConvertOp>(op) ||
          op->getNumRegions() != 0 ||
          llvm::any_of(op->getOperandTypes(), isRef) ||
          llvm::any_of(op->getResultTypes(), isRef))
        return WalkResult::advance();
      auto narrow = [](Value v) { return (bool)widened(v.getType()); };
      if (llvm::any_of(op->getOperands(), narrow) ||
          llvm::any_of(op->getResults(), narrow))
        todo.push_back(op);
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      return signalPassFailure();
    for (Operation *op : todo) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      SmallVector<Value> operands;
      for (Value v : op->getOperands()) {
        RankedTensorType w = widened(v.getType());
        operands.push_back(w ? (Value)ConvertOp::create(b, loc, w, v) : v);
      }
      SmallVector<Type> types;
      for (Type t : op->getResultTypes()) {
        RankedTensorType w = widened(t);
        types.push_back(w ? (Type)w : t);
      }
      OperationState state(loc, op->getName(), operands, types, op->getAttrs());
      if (auto c = dyn_cast<ConstantOp>(op)) {
        // (The values extended by signedness: the 8-bit constant holds them.)
        auto dense = cast<DenseIntElementsAttr>(c.getValue());
        bool isUnsigned =
            cast<IntegerType>(dense.getElementType()).isUnsigned();
        state.attributes.set(
            "value", dense.mapValues(
                         getElementTypeOrSelf(types[0]), [&](const APInt &v) {
                           return isUnsigned ? v.zext(8) : v.sext(8);
                         }));
      }
      Operation *wide = b.create(state);
      b.setInsertionPointAfter(wide);
      for (auto [old, now] : llvm::zip(op->getResults(), wide->getResults())) {
        Value back = now;
        if (old.getType() != now.getType())
          back = ConvertOp::create(b, loc, old.getType(), now);
        old.replaceAllUsesWith(back);
      }
      op->erase();
    }
  }
};

} // namespace
