//===- EmberAutodiff.cpp - expand ember.jvp / ember.vjp -------------------===//
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"

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

bool isTransform(Operation *op) { return isa<JvpOp, VjpOp>(op); }

bool isDifferentiable(Type t) { return isa<FloatType>(getElementTypeOrSelf(t)); }

Value zerosOf(OpBuilder &b, Location loc, Type type) {
  auto t = cast<RankedTensorType>(type);
  Type e = t.getElementType();
  Attribute z = isa<FloatType>(e) ? (Attribute)b.getFloatAttr(e, 0.0)
                                  : (Attribute)b.getIntegerAttr(e, 0);
  return ConstantOp::create(b, loc, DenseElementsAttr::get(t, z));
}

/// Clones the body of `fn` into the current insertion point with `args` for
/// its arguments, inlining func.call ops recursively. Returns the values the
/// body returns.
FailureOr<SmallVector<Value>> inlineBody(OpBuilder &b, func::FuncOp fn, ValueRange args,
                                         SymbolTable &symbols, int depth = 0) {
  if (depth > 64)
    return fn.emitError("ember-autodiff: call nesting too deep (recursion?)");
  if (!fn.getBody().hasOneBlock())
    return fn.emitError("ember-autodiff: only single-block functions can be differentiated");
  IRMapping map;
  for (auto [a, v] : llvm::zip(fn.getArguments(), args))
    map.map(a, v);
  for (Operation &op : fn.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      SmallVector<Value> out;
      for (Value v : ret.getOperands())
        out.push_back(map.lookup(v));
      return out;
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal())
        return call.emitError("ember-autodiff: cannot differentiate through a call to '")
               << call.getCallee() << "'";
      SmallVector<Value> ins;
      for (Value v : call.getOperands())
        ins.push_back(map.lookup(v));
      auto res = inlineBody(b, callee, ins, symbols, depth + 1);
      if (failed(res))
        return failure();
      for (auto [r, v] : llvm::zip(call.getResults(), *res))
        map.map(r, v);
      continue;
    }
    b.clone(op, map);
  }
  return fn.emitError("ember-autodiff: function has no return");
}

/// Forward mode over the ops in [begin, end) of a block: fills `tangent`.
LogicalResult propagateTangents(OpBuilder &b, Block::iterator begin, Block::iterator end,
                                DenseMap<Value, Value> &tangent) {
  SmallVector<Operation *> ops;
  for (auto it = begin; it != end; ++it)
    ops.push_back(&*it);
  for (Operation *op : ops) {
    if (isTransform(op))
      return op->emitError("ember-autodiff: nested transformation was not expanded");
    SmallVector<Value> ts;
    bool any = false;
    for (Value v : op->getOperands()) {
      Value t = tangent.lookup(v);
      ts.push_back(t);
      any |= (bool)t;
    }
    if (!any)
      continue;
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

struct Deriver {
  ModuleOp module;
  SymbolTable &symbols;
  unsigned counter = 0;

  func::FuncOp makeFunc(Location loc, StringRef base, FunctionType type) {
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    std::string name;
    do {
      name = (base + "_" + std::to_string(counter++)).str();
    } while (symbols.lookup(name));
    auto fn = func::FuncOp::create(b, loc, name, type);
    fn.setPrivate();
    symbols.insert(fn);
    fn.addEntryBlock();
    return fn;
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
    DenseMap<Value, Value> tangent;
    for (auto [k, i] : llvm::enumerate(op.getWrt()))
      if (isDifferentiable(body.getArgument(i).getType()))
        tangent[body.getArgument(i)] = body.getArgument(np + k);
    if (failed(propagateTangents(b, body.begin(), body.end(), tangent)))
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
    Operation *firstPrimal = &*b.getInsertionPoint();
    if (failed(propagateTangents(b, Block::iterator(firstPrimal), body.end(), tangent)))
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

/// True when `fn` (following calls) contains no transformation op.
bool isReady(func::FuncOp fn, SymbolTable &symbols, llvm::DenseSet<Operation *> &seen) {
  if (!seen.insert(fn).second)
    return true;
  bool ready = true;
  fn.walk([&](Operation *op) {
    if (isTransform(op))
      ready = false;
    else if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        ready &= isReady(callee, symbols, seen);
  });
  return ready;
}

struct EmberAutodiffPass
    : public mlir::ember::impl::EmberAutodiffPassBase<EmberAutodiffPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    Deriver d{module, symbols};
    while (true) {
      SmallVector<Operation *> pending;
      module.walk([&](Operation *op) {
        if (isTransform(op))
          pending.push_back(op);
      });
      if (pending.empty())
        return;
      bool progress = false;
      for (Operation *op : pending) {
        auto calleeName = op->getAttrOfType<FlatSymbolRefAttr>("callee");
        auto callee = symbols.lookup<func::FuncOp>(calleeName.getValue());
        if (!callee) {
          op->emitError("ember-autodiff: unknown callee ") << calleeName;
          return signalPassFailure();
        }
        llvm::DenseSet<Operation *> seen;
        if (!isReady(callee, symbols, seen))
          continue;
        FailureOr<func::FuncOp> derived =
            isa<JvpOp>(op) ? d.deriveJvp(cast<JvpOp>(op), callee)
                           : d.deriveVjp(cast<VjpOp>(op), callee);
        if (failed(derived))
          return signalPassFailure();
        // Inline the derived function at the op (no call, no inliner needed).
        OpBuilder b(op);
        auto results = inlineBody(b, *derived, op->getOperands(), symbols);
        if (failed(results))
          return signalPassFailure();
        op->replaceAllUsesWith(*results);
        op->erase();
        symbols.erase(*derived);
        progress = true;
      }
      if (!progress) {
        pending.front()->emitError("ember-autodiff: transformations form a cycle");
        return signalPassFailure();
      }
    }
  }
};

} // namespace
