//===- EmberBatch.cpp - expand ember.vmap ---------------------------------===//
#include "TransformUtils.h"
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERBATCHPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;
using namespace mlir::ember;

namespace {

RankedTensorType withBatch(Type t, int64_t n) {
  auto r = cast<RankedTensorType>(t);
  SmallVector<int64_t> shape = {n};
  shape.append(r.getShape().begin(), r.getShape().end());
  return RankedTensorType::get(shape, r.getElementType());
}

Value broadcastBatch(OpBuilder &b, Location loc, Value v, int64_t n) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < t.getRank(); ++i)
    dims.push_back(i + 1);
  return BroadcastInDimOp::create(b, loc, withBatch(t, n), v, b.getDenseI64ArrayAttr(dims));
}

FailureOr<func::FuncOp> deriveBatched(ModuleOp module, SymbolTable &symbols, VmapOp op,
                                      func::FuncOp callee) {
  int64_t n = op.getBatchSize();
  auto fn = makePrivateFunc(module, symbols, op.getLoc(),
                            (callee.getName() + "_batched").str(),
                            FunctionType::get(op.getContext(), op.getOperandTypes(),
                                              op.getResultTypes()));
  Block &body = fn.front();
  OpBuilder b = OpBuilder::atBlockEnd(&body);
  Location loc = op.getLoc();
  // Per-example arguments are placeholders first; the batched ones are
  // remapped to the function's (batched) arguments below.
  DenseMap<Value, Value> batched; // per-example value -> batched value
  SmallVector<Value> exampleArgs;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (op.getBatched()[i]) {
      auto t = cast<RankedTensorType>(arg.getType());
      auto ex = UnrealizedConversionCastOp::create(
          b, loc, RankedTensorType::get(t.getShape().drop_front(), t.getElementType()),
          ValueRange{});
      exampleArgs.push_back(ex.getResult(0));
      batched[ex.getResult(0)] = arg;
    } else {
      exampleArgs.push_back(arg);
    }
  }
  auto results = inlineBody(b, callee, exampleArgs, symbols);
  if (failed(results))
    return failure();
  // Walk the per-example ops in order; rewrite those touching batched values.
  SmallVector<Operation *> ops;
  for (Operation &o : body)
    ops.push_back(&o);
  for (Operation *o : ops) {
    if (isa<UnrealizedConversionCastOp>(o) && o->getNumOperands() == 0)
      continue;
    if (isTransformOp(o))
      return o->emitError("ember-batch: nested transformation was not expanded");
    bool any = llvm::any_of(o->getOperands(), [&](Value v) { return batched.count(v); });
    if (!any)
      continue;
    auto rule = dyn_cast<BatchableOpInterface>(o);
    if (!rule)
      return o->emitError("ember-batch: cannot batch '") << o->getName() << "'";
    SmallVector<Value> operands;
    SmallVector<bool> isBatched;
    for (Value v : o->getOperands()) {
      auto it = batched.find(v);
      operands.push_back(it == batched.end() ? v : it->second);
      isBatched.push_back(it != batched.end());
    }
    b.setInsertionPoint(o);
    SmallVector<Value> res;
    if (failed(rule.batch(b, operands, isBatched, n, res)))
      return failure();
    for (auto [r, v] : llvm::zip(o->getResults(), res))
      batched[r] = v;
  }
  b.setInsertionPointToEnd(&body);
  SmallVector<Value> rets;
  for (Value v : *results) {
    auto it = batched.find(v);
    rets.push_back(it != batched.end() ? it->second : broadcastBatch(b, loc, v, n));
  }
  func::ReturnOp::create(b, loc, rets);
  // The per-example versions of batched ops are dead now: erase them.
  for (Operation *o : llvm::reverse(ops)) {
    if (o->getBlock() && o->use_empty() &&
        (isa<UnrealizedConversionCastOp>(o) ||
         llvm::any_of(o->getResults(), [&](Value r) { return batched.count(r); })))
      o->erase();
  }
  for (Operation *o : llvm::reverse(ops))
    if (isa<UnrealizedConversionCastOp>(o) && o->use_empty())
      o->erase();
  return fn;
}

struct EmberBatchPass : public mlir::ember::impl::EmberBatchPassBase<EmberBatchPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    if (failed(expandReady<VmapOp>(module, symbols, [&](VmapOp op, func::FuncOp callee) {
          return deriveBatched(module, symbols, op, callee);
        })))
      signalPassFailure();
  }
};

} // namespace
