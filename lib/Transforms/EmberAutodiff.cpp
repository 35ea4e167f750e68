//===- EmberAutodiff.cpp - expand ember.jvp / ember.vjp -------------------===//
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"
#include "TransformUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERAUTODIFFPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;
using namespace mlir::ember;

namespace {

bool isDifferentiable(Type t) { return isa<FloatType>(getElementTypeOrSelf(t)); }

Value zerosOf(OpBuilder &b, Location loc, Type type) {
  return ConstantOp::create(b, loc, splatOf(cast<RankedTensorType>(type), 0.0));
}

LogicalResult propagateTangents(OpBuilder &b, Block::iterator begin, Block::iterator end,
                                DenseMap<Value, Value> &tangent, SymbolTable &symbols);

/// Forward mode through `ember.while`: a new loop carries the tangents of
/// the differentiable carried values next to the primals; its body is the
/// old body followed by its tangent code (values from above keep their
/// tangents, regions being open). The old loop is replaced.
LogicalResult jvpWhile(OpBuilder &b, WhileOp op, DenseMap<Value, Value> &tangent,
                       SymbolTable &symbols) {
  Location loc = op.getLoc();
  b.setInsertionPoint(op);
  SmallVector<Value> init(op.getInit());
  SmallVector<unsigned> diff;
  for (auto [i, v] : llvm::enumerate(op.getInit()))
    if (isDifferentiable(v.getType())) {
      diff.push_back(i);
      Value t = tangent.lookup(v);
      init.push_back(t ? t : zerosOf(b, loc, v.getType()));
    }
  SmallVector<Type> types;
  for (Value v : init)
    types.push_back(v.getType());
  unsigned np = op.getInit().size();
  auto loop = WhileOp::create(b, loc, types, init);
  loop.setTripCountAttr(op.getTripCountAttr());
  SmallVector<Location> locs(types.size(), loc);
  for (auto [src, dst] : {std::pair<Region *, Region *>{&op.getCond(), &loop.getCond()},
                          std::pair<Region *, Region *>{&op.getBody(), &loop.getBody()}}) {
    Block &from = src->front();
    Block *into = b.createBlock(dst, {}, types, locs);
    IRMapping map;
    for (unsigned i = 0; i < np; ++i)
      map.map(from.getArgument(i), into->getArgument(i));
    for (auto [k, i] : llvm::enumerate(diff))
      tangent[into->getArgument(i)] = into->getArgument(np + k);
    b.setInsertionPointToEnd(into);
    for (Operation &o : from.without_terminator())
      b.clone(o, map);
    if (failed(propagateTangents(b, into->begin(), into->end(), tangent, symbols)))
      return failure();
    b.setInsertionPointToEnd(into);
    SmallVector<Value> yielded;
    for (Value v : from.getTerminator()->getOperands())
      yielded.push_back(map.lookupOrDefault(v));
    if (src == &op.getBody())
      for (unsigned i : diff) {
        Value t = tangent.lookup(yielded[i]);
        yielded.push_back(t ? t : zerosOf(b, loc, yielded[i].getType()));
      }
    YieldOp::create(b, loc, yielded);
  }
  for (unsigned i = 0; i < np; ++i)
    op.getResult(i).replaceAllUsesWith(loop.getResult(i));
  for (auto [k, i] : llvm::enumerate(diff))
    tangent[loop.getResult(i)] = loop.getResult(np + k);
  op.erase();
  return success();
}

/// Forward mode over the ops in [begin, end) of a block: fills `tangent`.
LogicalResult propagateTangents(OpBuilder &b, Block::iterator begin, Block::iterator end,
                                DenseMap<Value, Value> &tangent, SymbolTable &symbols) {
  SmallVector<Operation *> ops;
  for (auto it = begin; it != end; ++it)
    ops.push_back(&*it);
  for (Operation *op : ops) {
    if (isTransformOp(op))
      return op->emitError("ember-autodiff: nested transformation was not expanded");
    SmallVector<Value> ts;
    bool any = false;
    for (Value v : op->getOperands()) {
      Value t = tangent.lookup(v);
      ts.push_back(t);
      any |= (bool)t;
    }
    if (auto w = dyn_cast<WhileOp>(op)) {
      // Regions also read values from above.
      w.walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          any |= (bool)tangent.lookup(v);
      });
      if (!any)
        continue;
      if (failed(jvpWhile(b, w, tangent, symbols)))
        return failure();
      continue;
    }
    if (!any)
      continue;
    b.setInsertionPointAfter(op);
    if (auto c = dyn_cast<CustomJvpCallOp>(op)) {
      // The user's rule: jvp(args..., tangents..., captures...) -> (outs, touts).
      auto seg = c.getSegments();
      auto parts = splitSegments(c.getOperands(), seg);
      SmallVector<Value> ins(parts[0]);
      for (Value a : parts[0]) {
        Value t = tangent.lookup(a);
        ins.push_back(t ? t : zerosOf(b, op->getLoc(), a.getType()));
      }
      ins.append(parts[2].begin(), parts[2].end());
      auto rule = symbols.lookup<func::FuncOp>(c.getJvp());
      auto res = inlineBody(b, rule, ins, symbols);
      if (failed(res))
        return failure();
      unsigned n = op->getNumResults();
      for (unsigned i = 0; i < n; ++i)
        if (isDifferentiable(op->getResult(i).getType()))
          tangent[op->getResult(i)] = (*res)[n + i];
      continue;
    }
    if (auto c = dyn_cast<CustomVjpCallOp>(op)) {
      // Linearize through the user's fwd: the tangent map is ember.custom_linear,
      // known only by its transpose (bwd).
      auto seg = c.getSegments();
      auto parts = splitSegments(c.getOperands(), seg.take_front(4));
      SmallVector<Value> fwdIns(parts[0]);
      fwdIns.append(parts[2].begin(), parts[2].end());
      auto fwd = symbols.lookup<func::FuncOp>(c.getFwd());
      auto res = inlineBody(b, fwd, fwdIns, symbols);
      if (failed(res))
        return failure();
      unsigned n = op->getNumResults();
      SmallVector<Value> linIns(res->begin() + n, res->end());
      for (Value a : parts[0]) {
        Value t = tangent.lookup(a);
        linIns.push_back(t ? t : zerosOf(b, op->getLoc(), a.getType()));
      }
      linIns.append(parts[3].begin(), parts[3].end());
      auto lin = CustomLinearOp::create(
          b, op->getLoc(), op->getResultTypes(), c.getBwdAttr(), linIns,
          b.getDenseI64ArrayAttr({(int64_t)res->size() - n, (int64_t)parts[0].size(),
                                  (int64_t)parts[3].size()}));
      for (unsigned i = 0; i < n; ++i)
        if (isDifferentiable(op->getResult(i).getType()))
          tangent[op->getResult(i)] = lin.getResult(i);
      continue;
    }
    auto rule = dyn_cast<DifferentiableOpInterface>(op);
    if (!rule)
      return op->emitError("ember-autodiff: cannot differentiate '")
             << op->getName() << "' (no ember JVP rule)";
    b.setInsertionPointAfter(op);
    SmallVector<Value> out;
    if (failed(rule.jvp(b, ts, out)))
      return failure();
    for (auto [res, t] : llvm::zip(op->getResults(), out))
      if (t && isDifferentiable(res.getType()))
        tangent[res] = t;
  }
  return success();
}

/// propagateTangents over [begin, end of `body`), keeping `results` (values
/// of `body`) valid: an op the propagation replaces (ember.while) may define
/// some of them.
LogicalResult propagateKeeping(OpBuilder &b, Block &body, Block::iterator begin,
                               SmallVectorImpl<Value> &results,
                               DenseMap<Value, Value> &tangent, SymbolTable &symbols) {
  OpBuilder::InsertionGuard guard(b);
  bool empty = begin == body.end(); // (end() would then stand before `keep`)
  return keepingLive(body, results, [&](Operation *keep) {
    return propagateTangents(b, empty ? Block::iterator(keep) : begin, Block::iterator(keep),
                             tangent, symbols);
  });
}

struct Deriver {
  ModuleOp module;
  SymbolTable &symbols;

  func::FuncOp makeFunc(Location loc, StringRef base, FunctionType type) {
    return makePrivateFunc(module, symbols, loc, base, type);
  }

  FailureOr<func::FuncOp> deriveJvp(JvpOp op, func::FuncOp callee) {
    SmallVector<Type> ins(op.getOperandTypes());
    auto fn = makeFunc(op.getLoc(), (callee.getName() + "_jvp").str(),
                       FunctionType::get(op.getContext(), ins, op.getResultTypes()));
    Block &body = fn.front();
    OpBuilder b = OpBuilder::atBlockEnd(&body);
    unsigned np = op.getPrimals().size();
    auto results = inlineBody(b, callee, body.getArguments().take_front(np), symbols);
    if (failed(results))
      return failure();
    flattenCases(body, *results);
    b.setInsertionPointToEnd(&body);
    DenseMap<Value, Value> tangent;
    for (auto [k, i] : llvm::enumerate(op.getWrt()))
      if (isDifferentiable(body.getArgument(i).getType()))
        tangent[body.getArgument(i)] = body.getArgument(np + k);
    if (failed(propagateKeeping(b, body, body.begin(), *results, tangent, symbols)))
      return failure();
    b.setInsertionPointToEnd(&body);
    SmallVector<Value> rets(*results);
    for (Value v : *results) {
      Value t = tangent.lookup(v);
      rets.push_back(t ? t : zerosOf(b, op.getLoc(), v.getType()));
    }
    func::ReturnOp::create(b, op.getLoc(), rets);
    return fn;
  }

  FailureOr<func::FuncOp> deriveVjp(VjpOp op, func::FuncOp callee) {
    SmallVector<Type> ins(op.getOperandTypes());
    auto fn = makeFunc(op.getLoc(), (callee.getName() + "_vjp").str(),
                       FunctionType::get(op.getContext(), ins, op.getResultTypes()));
    Block &body = fn.front();
    OpBuilder b = OpBuilder::atBlockEnd(&body);
    Location loc = op.getLoc();
    unsigned np = op.getPrimals().size();
    auto results = inlineBody(b, callee, body.getArguments().take_front(np), symbols);
    if (failed(results))
      return failure();
    unrollCountedLoops(body, *results);
    flattenCases(body, *results);
    // 1. Linearize: JVP with symbolic seeds for the wrt arguments.
    DenseMap<Value, Value> tangent;
    SmallVector<Value> seeds;
    b.setInsertionPointToStart(&body);
    for (int64_t i : op.getWrt()) {
      Value arg = body.getArgument(i);
      if (!isDifferentiable(arg.getType())) {
        seeds.push_back(Value());
        continue;
      }
      auto seed = UnrealizedConversionCastOp::create(b, loc, arg.getType(), ValueRange{});
      seeds.push_back(seed.getResult(0));
      tangent[arg] = seed.getResult(0);
    }
    // (An iterator, not an op: the body may have no ops, e.g. the identity.)
    Block::iterator firstPrimal = b.getInsertionPoint();
    if (failed(propagateKeeping(b, body, firstPrimal, *results, tangent, symbols)))
      return failure();
    // 2. The linear ops: those that use a seed or a linear value.
    llvm::DenseSet<Value> linearValues;
    for (Value s : seeds)
      if (s)
        linearValues.insert(s);
    SmallVector<Operation *> linearOps;
    for (Operation &o : body) {
      if (isa<UnrealizedConversionCastOp>(o) && o.getNumOperands() == 0)
        continue;
      if (llvm::any_of(o.getOperands(), [&](Value v) { return linearValues.contains(v); })) {
        linearOps.push_back(&o);
        for (Value r : o.getResults())
          linearValues.insert(r);
      }
    }
    // 3. Transpose in reverse order, appending the adjoint at the end.
    b.setInsertionPointToEnd(&body);
    DenseMap<Value, Value> cotangent;
    auto accumulate = [&](Value v, Value ct) {
      if (!ct || !isDifferentiable(v.getType()))
        return;
      Value &slot = cotangent[v];
      slot = slot ? (Value)AddOp::create(b, loc, slot, ct) : ct;
    };
    for (auto [i, v] : llvm::enumerate(*results))
      if (Value t = tangent.lookup(v))
        accumulate(t, body.getArgument(np + i));
    for (Operation *o : llvm::reverse(linearOps)) {
      SmallVector<Value> cts;
      bool any = false;
      for (Value r : o->getResults()) {
        cts.push_back(cotangent.lookup(r));
        any |= (bool)cts.back();
      }
      if (!any)
        continue;
      if (auto lin = dyn_cast<CustomLinearOp>(o)) {
        // Its transpose is the user's bwd(residuals..., cts..., captures...).
        auto parts = splitSegments(lin.getOperands(), lin.getSegments());
        SmallVector<Value> ins(parts[0]);
        for (auto [r, ct] : llvm::zip(o->getResults(), cts))
          ins.push_back(ct ? ct : zerosOf(b, loc, r.getType()));
        ins.append(parts[2].begin(), parts[2].end());
        auto bwd = symbols.lookup<func::FuncOp>(lin.getBwd());
        auto res = inlineBody(b, bwd, ins, symbols);
        if (failed(res))
          return failure();
        if (res->size() != parts[1].size())
          return lin.emitError("custom_vjp bwd must return one cotangent per argument (got ")
                 << res->size() << ", expected " << parts[1].size() << ")";
        for (auto [v, ct] : llvm::zip(parts[1], *res))
          if (linearValues.contains(v))
            accumulate(v, ct);
        continue;
      }
      if (isa<WhileOp>(o))
        return o->emitError("ember.while cannot be differentiated in reverse mode (as in "
                            "JAX): use lax.scan or fori_loop with static bounds, or jvp");
      SmallVector<bool> linear;
      for (Value v : o->getOperands())
        linear.push_back(linearValues.contains(v));
      auto rule = dyn_cast<DifferentiableOpInterface>(o);
      SmallVector<Value> operandCts;
      if (!rule || failed(rule.transpose(b, cts, linear, operandCts)))
        return o->emitError("ember-autodiff: cannot transpose '") << o->getName() << "'";
      for (auto [v, ct] : llvm::zip(o->getOperands(), operandCts))
        if (linearValues.contains(v))
          accumulate(v, ct);
    }
    SmallVector<Value> rets(*results);
    for (auto [k, i] : llvm::enumerate(op.getWrt())) {
      Value ct = seeds[k] ? cotangent.lookup(seeds[k]) : Value();
      rets.push_back(ct ? ct : zerosOf(b, loc, body.getArgument(i).getType()));
    }
    func::ReturnOp::create(b, loc, rets);
    // 4. Erase the linear forward code and the seeds.
    for (Operation *o : llvm::reverse(linearOps)) {
      if (!o->use_empty())
        return o->emitError("ember-autodiff: linear value still used after transposition");
      o->erase();
    }
    for (Value s : seeds)
      if (s)
        s.getDefiningOp()->erase();
    return fn;
  }
};

struct EmberAutodiffPass
    : public mlir::ember::impl::EmberAutodiffPassBase<EmberAutodiffPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    Deriver d{module, symbols};
    auto count = [&] {
      size_t n = 0;
      module.walk([&](Operation *op) { n += isa<JvpOp, VjpOp>(op); });
      return n;
    };
    // Alternate until nothing is ready (a jvp may wait for a vjp and back).
    for (size_t before = count(); before != 0;) {
      if (failed(expandReady<JvpOp>(module, symbols, [&](JvpOp op, func::FuncOp callee) {
            return d.deriveJvp(op, callee);
          })) ||
          failed(expandReady<VjpOp>(module, symbols, [&](VjpOp op, func::FuncOp callee) {
            return d.deriveVjp(op, callee);
          })))
        return signalPassFailure();
      size_t after = count();
      if (after == before)
        break; // the rest waits for other transformations (ember-batch)
      before = after;
    }
  }
};

} // namespace
