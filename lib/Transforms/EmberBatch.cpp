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

/// Maps per-example values to their batched versions (batch dimension first).
using BatchMap = DenseMap<Value, Value>;

LogicalResult batchWhile(OpBuilder &b, WhileOp op, ArrayRef<Value> operands,
                         ArrayRef<bool> isBatched, int64_t n, BatchMap &batched,
                         SmallVectorImpl<Value> &results);

/// Rewrites the ops of `ops` (in order) that touch batched values with their
/// batching rules; `batched` grows with the batched results.
LogicalResult batchOps(OpBuilder &b, ArrayRef<Operation *> ops, int64_t n, BatchMap &batched) {
  for (Operation *o : ops) {
    if (isa<UnrealizedConversionCastOp>(o) && o->getNumOperands() == 0)
      continue;
    if (isTransformOp(o))
      return o->emitError("ember-batch: nested transformation was not expanded");
    bool any = llvm::any_of(o->getOperands(), [&](Value v) { return batched.count(v); });
    // Region ops also read values from above.
    o->walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        any |= (bool)batched.count(v);
    });
    if (!any)
      continue;
    SmallVector<Value> operands;
    SmallVector<bool> isBatched;
    for (Value v : o->getOperands()) {
      auto it = batched.find(v);
      operands.push_back(it == batched.end() ? v : it->second);
      isBatched.push_back(it != batched.end());
    }
    b.setInsertionPoint(o);
    SmallVector<Value> res;
    if (auto w = dyn_cast<WhileOp>(o)) {
      if (failed(batchWhile(b, w, operands, isBatched, n, batched, res)))
        return failure();
    } else {
      auto rule = dyn_cast<BatchableOpInterface>(o);
      if (!rule)
        return o->emitError("ember-batch: cannot batch '") << o->getName() << "'";
      if (failed(rule.batch(b, operands, isBatched, n, res)))
        return failure();
    }
    for (auto [r, v] : llvm::zip(o->getResults(), res))
      batched[r] = v;
  }
  return success();
}

/// Erases the per-example ops whose results were all replaced by batched ones.
void eraseReplaced(ArrayRef<Operation *> ops, BatchMap &batched) {
  for (Operation *o : llvm::reverse(ops))
    if (o->use_empty() && !o->hasTrait<OpTrait::IsTerminator>() &&
        (isa<UnrealizedConversionCastOp>(o) ||
         llvm::any_of(o->getResults(), [&](Value r) { return batched.count(r); })))
      o->erase();
}

/// Clones the ops of `src` (a region block whose arguments are all batched)
/// to the end of `dst`, whose arguments are the batched carried values, and
/// batches them. Returns the batched operands of `src`'s terminator.
FailureOr<SmallVector<Value>> batchBlockInto(OpBuilder &b, Block &src, Block &dst, int64_t n,
                                             BatchMap &batched) {
  b.setInsertionPointToEnd(&dst);
  IRMapping map;
  for (auto [s, d] : llvm::zip(src.getArguments(), dst.getArguments())) {
    auto ex = UnrealizedConversionCastOp::create(b, s.getLoc(), s.getType(), ValueRange{});
    map.map(s, ex.getResult(0));
    batched[ex.getResult(0)] = d;
  }
  SmallVector<Operation *> cloned;
  for (Operation &o : src.without_terminator())
    cloned.push_back(b.clone(o, map));
  if (failed(batchOps(b, cloned, n, batched)))
    return failure();
  b.setInsertionPointToEnd(&dst);
  SmallVector<Value> out;
  for (Value v : src.getTerminator()->getOperands()) {
    Value m = map.lookupOrDefault(v);
    auto it = batched.find(m);
    out.push_back(it != batched.end() ? it->second : broadcastBatch(b, v.getLoc(), m, n));
  }
  eraseReplaced(cloned, batched);
  for (Operation &o : llvm::make_early_inc_range(dst))
    if (isa<UnrealizedConversionCastOp>(o) && o.use_empty())
      o.erase();
  return out;
}

/// A while loop with batched values runs until no lane wants to continue;
/// lanes that are done keep their values (JAX's batching of while_loop).
LogicalResult batchWhile(OpBuilder &b, WhileOp op, ArrayRef<Value> operands,
                         ArrayRef<bool> isBatched, int64_t n, BatchMap &batched,
                         SmallVectorImpl<Value> &results) {
  Location loc = op.getLoc();
  SmallVector<Value> init;
  SmallVector<Type> types;
  for (auto [v, isB] : llvm::zip(operands, isBatched)) {
    init.push_back(isB ? v : broadcastBatch(b, loc, v, n));
    types.push_back(init.back().getType());
  }
  auto loop = WhileOp::create(b, loc, types, init);
  SmallVector<Location> locs(types.size(), loc);
  Block *cond = b.createBlock(&loop.getCond(), {}, types, locs);
  Block *body = b.createBlock(&loop.getBody(), {}, types, locs);
  auto lanePred = [&](Block &into) -> FailureOr<Value> {
    auto p = batchBlockInto(b, op.getCond().front(), into, n, batched);
    if (failed(p))
      return failure();
    return (*p)[0]; // tensor<n x i1>
  };
  // cond: continue while any lane continues.
  auto pc = lanePred(*cond);
  if (failed(pc))
    return failure();
  b.setInsertionPointToEnd(cond);
  Value any = ReduceOp::create(b, loc, *pc, ReduceKind::Or, b.getDenseI64ArrayAttr({0}));
  YieldOp::create(b, loc, any);
  // body: step every lane, keep the old values of finished lanes.
  auto pb = lanePred(*body);
  if (failed(pb))
    return failure();
  auto next = batchBlockInto(b, op.getBody().front(), *body, n, batched);
  if (failed(next))
    return failure();
  b.setInsertionPointToEnd(body);
  SmallVector<Value> kept;
  for (auto [newV, old] : llvm::zip(*next, body->getArguments())) {
    auto t = cast<RankedTensorType>(old.getType());
    Value mask = *pb;
    if (t.getRank() > 1)
      mask = BroadcastInDimOp::create(b, loc, t.clone(b.getI1Type()), *pb,
                                      b.getDenseI64ArrayAttr({0}));
    kept.push_back(SelectOp::create(b, loc, t, mask, newV, old));
  }
  YieldOp::create(b, loc, kept);
  b.setInsertionPointAfter(loop);
  results.append(loop.getResults().begin(), loop.getResults().end());
  return success();
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
  // Batched arguments get per-example placeholders for the cloned body.
  BatchMap batched;
  SmallVector<Value> exampleArgs;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (!op.getBatched()[i]) {
      exampleArgs.push_back(arg);
      continue;
    }
    auto t = cast<RankedTensorType>(arg.getType());
    auto ex = UnrealizedConversionCastOp::create(
        b, loc, RankedTensorType::get(t.getShape().drop_front(), t.getElementType()),
        ValueRange{});
    exampleArgs.push_back(ex.getResult(0));
    batched[ex.getResult(0)] = arg;
  }
  auto results = inlineBody(b, callee, exampleArgs, symbols);
  if (failed(results))
    return failure();
  SmallVector<Operation *> ops;
  for (Operation &o : body)
    ops.push_back(&o);
  if (failed(batchOps(b, ops, n, batched)))
    return failure();
  b.setInsertionPointToEnd(&body);
  SmallVector<Value> rets;
  for (Value v : *results) {
    auto it = batched.find(v);
    rets.push_back(it != batched.end() ? it->second : broadcastBatch(b, loc, v, n));
  }
  func::ReturnOp::create(b, loc, rets);
  eraseReplaced(ops, batched);
  for (Operation &o : llvm::make_early_inc_range(body))
    if (isa<UnrealizedConversionCastOp>(o) && o.use_empty())
      o.erase();
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
