//===- EmberAutodiff.cpp - expand ember.jvp / ember.vjp -------------------===//
#include "TransformUtils.h"
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"
#include "ember/IR/EmberRefs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"

#include <functional>

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERAUTODIFFPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;
using namespace mlir::ember;

namespace {

/// Whether calls of recorded Pallas TPU kernels stay calls (the TPU
/// target's `ember-expand-transforms{keep-kernel-calls=true}`): a kernel in
/// a custom_vjp's fwd or bwd, or off the differentiated path, is then
/// lowered as that kernel.
thread_local bool keepKernels = false;

FailureOr<SmallVector<Value>> inlineAD(OpBuilder &b, func::FuncOp fn,
                                       ValueRange args, SymbolTable &symbols) {
  // Calls with a user's batching rule stay calls (an enclosing vmap applies
  // the rule); one on the differentiated path is inlined where the
  // tangents reach it (propagateTangents).
  return inlineBody(b, fn, args, symbols, keepKernels, 0,
                    /*keepBatchRules=*/true);
}

bool isDifferentiable(Type t) {
  return isa<FloatType, ComplexType>(getElementTypeOrSelf(t));
}

Value zerosOf(OpBuilder &b, Location loc, Type type) {
  return ConstantOp::create(b, loc, splatOf(cast<RankedTensorType>(type), 0.0));
}

LogicalResult propagateTangents(OpBuilder &b, Block::iterator begin,
                                Block::iterator end,
                                DenseMap<Value, Value> &tangent,
                                SymbolTable &symbols, bool reverse);

/// The attribute on an ember.custom_linear made by vjpWhile whose residuals
/// include a run-time stack: the index of that operand.
constexpr StringLiteral kStackOperand = "ember.stack_operand";

/// The attribute on an ember.custom_vjp_call made by `checkpoint`: its bwd
/// recomputes the function, and forward mode differentiates the function.
constexpr StringLiteral kRemat = "ember.remat";

/// The unit attribute on a checkpoint's ember.custom_vjp_call made with
/// prevent_cse=False: its recomputation needs no optimization barrier.
constexpr StringLiteral kRematNoBarrier = "ember.remat_no_barrier";

/// The unit attribute `checkpoint` puts (at trace time) on the ops of a
/// checkpointed function whose results its policy lets the forward pass
/// keep: products for `dots_saveable`, `ember.checkpoint_name` ops for the
/// name policies, whatever a user's policy accepts.
constexpr StringLiteral kSaveable = "ember.saveable";

/// The unit attribute on an ember.vjp whose expansion reports its residuals
/// (`jax.ad_checkpoint.print_saved_residuals`) in the module attribute
/// kResiduals.
constexpr StringLiteral kRecordResiduals = "ember.record_residuals";
constexpr StringLiteral kResiduals = "ember.residuals";

/// What saveMarked built for a checkpoint that keeps some of its values.
struct SavedValues {
  func::FuncOp fn;           // @remat_saved(args..., saved...) -> results
  SmallVector<Value> values; // the saved values, computed in the forward pass
  SmallVector<Value>
      results; // the forward pass's results (replacing the call's)
};

/// Whether the checkpoint policy keeps the results of `o`: a marked op
/// without regions with a float result.
bool isSavedOp(Operation &o) {
  return o.hasAttr(kSaveable) && o.getNumRegions() == 0 &&
         isa<DifferentiableOpInterface>(o) &&
         llvm::any_of(o.getResultTypes(), isDifferentiable);
}

/// A value a checkpoint's policy keeps: the results of `op`, computed at the
/// top level of the function (`loop` null) or at the top level of the body
/// of the counted loop `loop` there (kept for every iteration, in
/// [trip_count, ...] buffers).
struct SaveSite {
  Operation *op;
  WhileOp loop;
};

/// What the policy keeps in `fn`, in order. (Values in loops without a
/// static trip count, in nested loops and in branches are recomputed.)
SmallVector<SaveSite> sitesToSave(func::FuncOp fn) {
  SmallVector<SaveSite> sites;
  for (Operation &o : fn.front()) {
    if (isSavedOp(o)) {
      sites.push_back({&o, WhileOp()});
      continue;
    }
    auto loop = dyn_cast<WhileOp>(o);
    if (loop && loop.getTripCountAttr())
      for (Operation &inner : loop.getBody().front())
        if (isSavedOp(inner))
          sites.push_back({&inner, loop});
  }
  return sites;
}

/// Replaces the loop `op` by one that also carries `init`; in the body,
/// `next` builds (before the terminator, given the new block arguments)
/// the values yielded for them. The results of `op` are replaced by the
/// first results of the new loop, which is returned.
WhileOp
addCarried(OpBuilder &b, WhileOp op, ValueRange init,
           function_ref<SmallVector<Value>(OpBuilder &, ValueRange)> next) {
  OpBuilder::InsertionGuard guard(b);
  Location loc = op.getLoc();
  SmallVector<Type> extra(init.getTypes());
  SmallVector<Location> locs(extra.size(), loc);
  op.getCond().front().addArguments(extra, locs);
  Block &body = op.getBody().front();
  unsigned base = body.getNumArguments();
  body.addArguments(extra, locs);
  auto term = cast<YieldOp>(body.getTerminator());
  b.setInsertionPoint(term);
  SmallVector<Value> yielded(term.getOperands());
  llvm::append_range(yielded, next(b, body.getArguments().drop_front(base)));
  YieldOp::create(b, loc, yielded);
  term.erase();
  b.setInsertionPoint(op);
  SmallVector<Value> allInit(op.getInit());
  allInit.append(init.begin(), init.end());
  auto loop = WhileOp::create(b, loc, ValueRange(allInit).getTypes(), allInit);
  loop->setAttrs(op->getAttrDictionary());
  loop.getCond().takeBody(op.getCond());
  loop.getBody().takeBody(op.getBody());
  for (unsigned i = 0, e = op.getNumResults(); i < e; ++i)
    op.getResult(i).replaceAllUsesWith(loop.getResult(i));
  op.erase();
  return loop;
}

/// `[1, shape...]` of a tensor type: one row of a [trip_count, ...] buffer.
RankedTensorType rowType(Type t, int64_t rows = 1) {
  auto r = cast<RankedTensorType>(t);
  SmallVector<int64_t> shape{rows};
  shape.append(r.getShape().begin(), r.getShape().end());
  return RankedTensorType::get(shape, r.getElementType());
}

/// The carried value of `loop`'s body that counts its iterations from 0
/// (lax.scan's index), or null.
Value iterationCounter(WhileOp loop) {
  for (BlockArgument a : loop.getBody().front().getArguments()) {
    auto c = affineCounter(loop, a.getArgNumber());
    if (c && c->start == 0 && c->step == 1)
      return a;
  }
  return Value();
}

/// Makes the counted loop `loop` keep the values `vs` (defined at the top
/// level of its body) of every iteration: row k of a [trip_count, ...]
/// buffer holds iteration k's value. Returns the buffers (results of the
/// rebuilt loop).
SmallVector<Value> stackInLoop(OpBuilder &b, WhileOp loop, ArrayRef<Value> vs) {
  Location loc = loop.getLoc();
  int64_t n = loop.getTripCountAttr().getInt();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop);
  // The loop's own counter if it has one, else a new one.
  Value counter = iterationCounter(loop);
  SmallVector<Value> init;
  if (!counter)
    init.push_back(scalarI64(b, loc, 0));
  for (Value v : vs)
    init.push_back(zerosOf(b, loc, rowType(v.getType(), n)));
  unsigned np = loop.getInit().size() + (counter ? 0 : 1);
  auto next = [&](OpBuilder &bb, ValueRange args) {
    Value k = counter ? counter : args[0];
    SmallVector<Value> out;
    if (!counter)
      out.push_back(AddOp::create(bb, loc, k, scalarI64(bb, loc, 1)));
    for (auto [v, buf] : llvm::zip(vs, args.drop_front(counter ? 0 : 1))) {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<Value> idx{k};
      for (int64_t d = 0; d < t.getRank(); ++d)
        idx.push_back(scalarI64(bb, loc, 0));
      Value row = ReshapeOp::create(bb, loc, rowType(t), v);
      out.push_back(DynamicUpdateSliceOp::create(bb, loc, buf, row, idx));
    }
    return out;
  };
  WhileOp rebuilt = addCarried(b, loop, init, next);
  return SmallVector<Value>(rebuilt.getResults().drop_front(np));
}

/// Replaces the saved op `o` (in @remat_saved) by the given values `saved`
/// of its results, wrapped in an `ember.custom_jvp_call` whose rule is the
/// op's own JVP rule on those values, so the function differentiates as
/// before but no longer computes the op.
LogicalResult replaceBySaved(Operation *o, ValueRange saved,
                             SymbolTable &symbols) {
  Location loc = o->getLoc();
  MLIRContext *ctx = o->getContext();
  auto module = o->getParentOfType<ModuleOp>();
  SmallVector<Type> ins(o->getOperandTypes()), outs(o->getResultTypes());
  SmallVector<Type> primIns(ins);
  primIns.append(outs);
  // @saved(xs..., ys...) = ys
  auto prim = makePrivateFunc(module, symbols, loc, "saved",
                              FunctionType::get(ctx, primIns, outs));
  OpBuilder pb = OpBuilder::atBlockEnd(&prim.front());
  func::ReturnOp::create(pb, loc, prim.getArguments().drop_front(ins.size()));
  // @saved_jvp(xs..., ys..., txs..., tys...) = (ys..., jvp of o at xs, ys)
  SmallVector<Type> ruleIns(primIns), ruleOuts(outs);
  ruleIns.append(primIns);
  ruleOuts.append(outs);
  auto rule = makePrivateFunc(module, symbols, loc, "saved_jvp",
                              FunctionType::get(ctx, ruleIns, ruleOuts));
  OpBuilder rb = OpBuilder::atBlockEnd(&rule.front());
  auto args = rule.getArguments();
  IRMapping map;
  map.map(o->getOperands(), args.take_front(ins.size()));
  Operation *copy = rb.clone(*o, map);
  SmallVector<Value> tangents;
  for (auto [x, t] :
       llvm::zip(o->getOperands(),
                 args.drop_front(primIns.size()).take_front(ins.size())))
    tangents.push_back(isDifferentiable(x.getType()) ? t : Value());
  SmallVector<Value> resultTangents;
  if (failed(cast<DifferentiableOpInterface>(copy).jvp(rb, tangents,
                                                       resultTangents)))
    return failure();
  // The rule reads the saved results instead of computing them again.
  ValueRange ys = args.slice(ins.size(), outs.size());
  copy->replaceAllUsesWith(ys);
  copy->erase();
  SmallVector<Value> rets(ys);
  for (auto [y, t] : llvm::zip(ys, resultTangents))
    rets.push_back(t ? t : zerosOf(rb, loc, y.getType()));
  func::ReturnOp::create(rb, loc, rets);
  OpBuilder b(o);
  SmallVector<Value> callIns(o->getOperands());
  callIns.append(saved.begin(), saved.end());
  auto call = CustomJvpCallOp::create(
      b, loc, outs, FlatSymbolRefAttr::get(prim), FlatSymbolRefAttr::get(rule),
      callIns, b.getDenseI64ArrayAttr({(int64_t)callIns.size(), 0, 0}));
  o->replaceAllUsesWith(call.getResults());
  o->erase();
  return success();
}

/// For a checkpoint `c` (applied to `ins`: arguments, then captures) whose
/// function has ops marked saveable: inlines the function at the builder's
/// point, returning the results of those ops as well, and builds
/// @remat_saved, the function with each of those ops replaced by given
/// values that differentiate as the op (replaceBySaved), so its VJP
/// recomputes everything but them. `fn` is null when nothing is saved.
FailureOr<SavedValues> saveMarked(OpBuilder &b, CustomVjpCallOp c,
                                  ArrayRef<Value> ins, SymbolTable &symbols) {
  Location loc = c.getLoc();
  MLIRContext *ctx = c.getContext();
  auto module = c->getParentOfType<ModuleOp>();
  auto callee = symbols.lookup<func::FuncOp>(c.getCallee());
  SavedValues saved;
  if (sitesToSave(callee).empty())
    return saved;
  SmallVector<Type> inTypes;
  for (Value v : ins)
    inTypes.push_back(v.getType());
  // @remat_fwd(ins...) -> (results..., saved...), inlined at the call.
  auto fwd = makePrivateFunc(module, symbols, loc, "remat_fwd",
                             FunctionType::get(ctx, inTypes, {}));
  OpBuilder fb = OpBuilder::atBlockEnd(&fwd.front());
  auto outs = inlineAD(fb, callee, fwd.front().getArguments(), symbols);
  if (failed(outs))
    return failure();
  // (The function's results are returned first: rebuilding a loop replaces
  // its results.)
  auto ret = func::ReturnOp::create(fb, loc, *outs);
  SmallVector<Value> kept;
  SmallVector<SaveSite> sites = sitesToSave(fwd);
  for (unsigned i = 0; i < sites.size();) {
    if (!sites[i].loop) {
      llvm::append_range(kept, sites[i++].op->getResults());
      continue;
    }
    // The sites of one loop are consecutive: all its kept values at once.
    WhileOp loop = sites[i].loop;
    SmallVector<Value> vs;
    for (; i < sites.size() && sites[i].loop == loop; ++i)
      llvm::append_range(vs, sites[i].op->getResults());
    llvm::append_range(kept, stackInLoop(fb, loop, vs));
  }
  SmallVector<Type> savedTypes(ValueRange(kept).getTypes());
  if (savedTypes.empty()) {
    symbols.erase(fwd);
    return saved;
  }
  SmallVector<Value> rets(ret.getOperands());
  rets.append(kept);
  ret.erase();
  fb.setInsertionPointToEnd(&fwd.front());
  func::ReturnOp::create(fb, loc, rets);
  fwd.setType(FunctionType::get(ctx, inTypes, TypeRange(ValueRange(rets))));
  auto fres = inlineAD(b, fwd, ins, symbols);
  if (failed(fres))
    return failure();
  symbols.erase(fwd);
  unsigned n = c.getNumResults();
  for (unsigned i = 0; i < n; ++i) {
    c.getResult(i).replaceAllUsesWith((*fres)[i]);
    saved.results.push_back((*fres)[i]);
  }
  saved.values.assign(fres->begin() + n, fres->end());

  // @remat_saved(ins..., saved...) -> results.
  SmallVector<Type> savedIns(inTypes);
  savedIns.append(savedTypes);
  saved.fn =
      makePrivateFunc(module, symbols, loc, "remat_saved",
                      FunctionType::get(ctx, savedIns, c.getResultTypes()));
  Block &body = saved.fn.front();
  fb.setInsertionPointToEnd(&body);
  outs =
      inlineAD(fb, callee, body.getArguments().take_front(ins.size()), symbols);
  if (failed(outs))
    return failure();
  func::ReturnOp::create(fb, loc, *outs);
  unsigned next = ins.size();
  sites = sitesToSave(saved.fn);
  for (unsigned i = 0; i < sites.size();) {
    if (!sites[i].loop) {
      Operation *o = sites[i++].op;
      unsigned m = o->getNumResults();
      if (failed(
              replaceBySaved(o, body.getArguments().slice(next, m), symbols)))
        return failure();
      next += m;
      continue;
    }
    // In a loop: iteration k reads row k of the buffers, counting k.
    WhileOp loop = sites[i].loop;
    unsigned first = i;
    for (; i < sites.size() && sites[i].loop == loop; ++i)
      ;
    Value k = iterationCounter(loop);
    if (!k) {
      fb.setInsertionPoint(loop);
      Value zero = scalarI64(fb, loc, 0);
      WhileOp counted =
          addCarried(fb, loop, zero, [&](OpBuilder &bb, ValueRange args) {
            return SmallVector<Value>{
                AddOp::create(bb, loc, args[0], scalarI64(bb, loc, 1))};
          });
      k = counted.getBody().front().getArguments().back();
    }
    for (unsigned j = first; j < i; ++j) {
      Operation *o = sites[j].op;
      fb.setInsertionPoint(o);
      SmallVector<Value> rows;
      for (Value r : o->getResults()) {
        auto t = cast<RankedTensorType>(r.getType());
        SmallVector<Value> idx{k};
        for (int64_t d = 0; d < t.getRank(); ++d)
          idx.push_back(scalarI64(fb, loc, 0));
        RankedTensorType one = rowType(t);
        Value s =
            DynamicSliceOp::create(fb, loc, body.getArgument(next++), idx,
                                   fb.getDenseI64ArrayAttr(one.getShape()));
        rows.push_back(ReshapeOp::create(fb, loc, t, s));
      }
      if (failed(replaceBySaved(o, rows, symbols)))
        return failure();
    }
  }
  return saved;
}

/// Transposes linear ops (JVP code) into adjoint code at the builder's
/// insertion point: `cotangent` maps linear values to their cotangents.
struct Transposer {
  OpBuilder &b;
  Location loc;
  SymbolTable &symbols;
  const llvm::DenseSet<Value> &linearValues;
  DenseMap<Value, Value> cotangent{};
  /// The values custom_vjp backward rules produce beyond their cotangents
  /// (`bwd_effects`), in the order of the calls in the forward pass.
  SmallVector<Value> effects{};
  /// Whether any transposed custom_linear has effects (they may only be
  /// returned from an ember.vjp: not from a loop or a case).
  bool hasEffects = false;

  void accumulate(Value v, Value ct) {
    if (!ct || !isDifferentiable(v.getType()))
      return;
    Value &slot = cotangent[v];
    slot = slot ? (Value)AddOp::create(b, loc, slot, ct) : ct;
  }

  /// Transposes `linearOps` (in program order) in reverse order.
  LogicalResult run(ArrayRef<Operation *> linearOps) {
    // (Collected backwards, returned in forward order.)
    SmallVector<SmallVector<Value>> effectsBack;
    for (Operation *o : llvm::reverse(linearOps)) {
      SmallVector<Value> cts;
      bool any = false;
      for (Value r : o->getResults()) {
        cts.push_back(cotangent.lookup(r));
        any |= (bool)cts.back();
      }
      auto linOp = dyn_cast<CustomLinearOp>(o);
      if (!any && linOp && linOp.getBwdEffects().value_or(0) > 0)
        return emitUserError(linOp, runtime::ErrorKind::BackwardEffect)
               << "a custom_vjp whose backward pass writes a ref must be on "
                  "the differentiated path: no cotangent reaches its results";
      if (!any) {
        // A loop whose residuals wait on a run-time stack that no backward
        // pass will pop: release it.
        if (auto at = o->getAttrOfType<IntegerAttr>(kStackOperand))
          StackFreeOp::create(b, loc, o->getOperand(at.getInt()));
        continue;
      }
      if (auto lin = dyn_cast<CustomLinearOp>(o)) {
        // Its transpose is bwd(residuals..., cts..., captures...).
        auto parts = splitSegments(lin.getOperands(), lin.getSegments());
        SmallVector<Value> ins(parts[0]);
        for (auto [r, ct] : llvm::zip(o->getResults(), cts))
          ins.push_back(ct ? ct : zerosOf(b, loc, r.getType()));
        ins.append(parts[2].begin(), parts[2].end());
        auto bwd = symbols.lookup<func::FuncOp>(lin.getBwd());
        auto res = inlineAD(b, bwd, ins, symbols);
        if (failed(res))
          return failure();
        size_t nEffects = lin.getBwdEffects().value_or(0);
        if (res->size() != parts[1].size() + nEffects)
          return lin.emitError("custom_vjp bwd must return one cotangent per "
                               "argument (got ")
                 << res->size() - nEffects << ", expected " << parts[1].size()
                 << ")";
        for (auto [v, ct] : llvm::zip(parts[1], *res))
          if (linearValues.contains(v))
            accumulate(v, ct);
        if (nEffects) {
          hasEffects = true;
          effectsBack.emplace_back(res->end() - nEffects, res->end());
        }
        continue;
      }
      SmallVector<bool> linear;
      for (Value v : o->getOperands())
        linear.push_back(linearValues.contains(v));
      auto rule = dyn_cast<DifferentiableOpInterface>(o);
      SmallVector<Value> operandCts;
      if (!rule || failed(rule.transpose(b, cts, linear, operandCts)))
        return o->emitError("ember-autodiff: cannot transpose '")
               << o->getName() << "'";
      for (auto [v, ct] : llvm::zip(o->getOperands(), operandCts))
        if (linearValues.contains(v))
          accumulate(v, ct);
    }
    for (auto &group : llvm::reverse(effectsBack))
      effects.append(group.begin(), group.end());
    return success();
  }
};
LogicalResult vjpWhile(OpBuilder &b, WhileOp op,
                       DenseMap<Value, Value> &tangent, SymbolTable &symbols);
LogicalResult vjpCase(OpBuilder &b, CaseOp op, DenseMap<Value, Value> &tangent,
                      SymbolTable &symbols);

/// Forward mode through `ember.while`: a new loop carries the tangents of
/// the differentiable carried values next to the primals; its body is the
/// old body followed by its tangent code (values from above keep their
/// tangents, regions being open). The old loop is replaced.
LogicalResult jvpWhile(OpBuilder &b, WhileOp op,
                       DenseMap<Value, Value> &tangent, SymbolTable &symbols) {
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
  // Tangents are written where their primals are: still independent.
  loop.setParallel(op.getParallel());
  SmallVector<Location> locs(types.size(), loc);
  for (auto [src, dst] :
       {std::pair<Region *, Region *>{&op.getCond(), &loop.getCond()},
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
    // The yield is built before the tangent code: differentiating a nested
    // loop replaces it (and its results) by a new one, which updates the
    // yield's operands but not `map`.
    SmallVector<Value> mapped;
    for (Value v : from.getTerminator()->getOperands())
      mapped.push_back(map.lookupOrDefault(v));
    auto primalYield = YieldOp::create(b, loc, mapped);
    if (failed(propagateTangents(b, into->begin(), Block::iterator(primalYield),
                                 tangent, symbols,
                                 /*reverse=*/false)))
      return failure();
    b.setInsertionPoint(primalYield);
    SmallVector<Value> yielded(primalYield.getOperands());
    if (src == &op.getBody())
      for (unsigned i : diff) {
        Value t = tangent.lookup(yielded[i]);
        yielded.push_back(t ? t : zerosOf(b, loc, yielded[i].getType()));
      }
    YieldOp::create(b, loc, yielded);
    primalYield.erase();
  }
  for (unsigned i = 0; i < np; ++i)
    op.getResult(i).replaceAllUsesWith(loop.getResult(i));
  for (auto [k, i] : llvm::enumerate(diff))
    tangent[loop.getResult(i)] = loop.getResult(np + k);
  op.erase();
  return success();
}

/// Which results of `fn` depend on its arguments `args` (def-use chains; a
/// use inside a region counts for the op holding it; through `func.call`,
/// only the callee's results that depend on the reached arguments).
SmallVector<bool> dependentResults(func::FuncOp fn, ArrayRef<unsigned> args,
                                   SymbolTable &symbols) {
  Block &body = fn.getBody().front();
  SmallVector<bool> out(fn.getNumResults(), false);
  SmallVector<Value> work;
  DenseSet<Value> reached;
  DenseSet<Operation *> seen;
  DenseMap<Operation *, SmallVector<unsigned>> callArgs;
  auto reach = [&](Value v) {
    if (reached.insert(v).second)
      work.push_back(v);
  };
  for (unsigned i : args)
    reach(body.getArgument(i));
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *top = body.findAncestorOpInBlock(*use.getOwner());
      if (!top)
        continue;
      if (isa<func::ReturnOp>(top)) {
        if (use.getOwner() == top)
          out[use.getOperandNumber()] = true;
        else
          out.assign(out.size(), true);
        continue;
      }
      auto call = dyn_cast<func::CallOp>(top);
      auto callee =
          call ? symbols.lookup<func::FuncOp>(call.getCallee()) : nullptr;
      if (callee && use.getOwner() == top) {
        callArgs[top].push_back(use.getOperandNumber());
        SmallVector<bool> dep =
            dependentResults(callee, callArgs[top], symbols);
        for (auto [r, d] : llvm::zip(call.getResults(), dep))
          if (d)
            reach(r);
        continue;
      }
      if (seen.insert(top).second)
        for (Value r : top->getResults())
          reach(r);
    }
  }
  return out;
}

/// Adds to `active` the float values of `block` that depend on values
/// already in it (the differentiated arguments): through every op whose
/// derivative is not zero by rule; through a loop one carry at a time (to a
/// fixpoint) and a conditional one result at a time, so that a counter a
/// loop carries beside a differentiated value is not active.
void markActive(Block &block, DenseSet<Value> &active) {
  auto mark = [&](Value v) {
    return isDifferentiable(v.getType()) && active.insert(v).second;
  };
  for (Operation &op : block) {
    if (auto w = dyn_cast<WhileOp>(&op)) {
      Block &cond = w.getCond().front(), &body = w.getBody().front();
      auto carry = [&](unsigned i) {
        bool grew = mark(body.getArgument(i));
        mark(cond.getArgument(i));
        return grew;
      };
      for (auto [i, v] : llvm::enumerate(w.getInit()))
        if (active.contains(v))
          carry(i);
      for (bool grew = true; grew;) {
        markActive(body, active);
        grew = false;
        for (auto [i, v] : llvm::enumerate(body.getTerminator()->getOperands()))
          if (active.contains(v))
            grew |= carry(i);
      }
      for (auto [i, r] : llvm::enumerate(w.getResults()))
        if (active.contains(body.getArgument(i)))
          mark(r);
      continue;
    }
    if (auto c = dyn_cast<CaseOp>(&op)) {
      for (Region &r : c.getBranches()) {
        markActive(r.front(), active);
        for (auto [i, v] :
             llvm::enumerate(r.front().getTerminator()->getOperands()))
          if (active.contains(v))
            mark(c->getResult(i));
      }
      continue;
    }
    if (op.hasTrait<ZeroTangentTrait>())
      continue;
    bool uses = false;
    op.walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        uses |= active.contains(v);
    });
    if (uses)
      for (Value r : op.getResults())
        mark(r);
  }
}

/// The writes of refs that threadRefsForTransform leaves in `body`: JAX's
/// error for one of a value that depends on the differentiated arguments
/// (`wrt`), as a ref is not differentiated (transform_c7).
LogicalResult checkRefWrites(Block &body, ArrayRef<int64_t> wrt) {
  DenseSet<Value> active;
  for (int64_t i : wrt)
    if (isDifferentiable(body.getArgument(i).getType()))
      active.insert(body.getArgument(i));
  bool writes = false;
  for (Operation &o : body)
    writes |= isa<RefSetOp>(o);
  if (!writes)
    return success();
  markActive(body, active);
  for (Operation &o : body)
    if (auto set = dyn_cast<RefSetOp>(&o);
        set && active.contains(set.getValue()))
      return emitUserError(set, runtime::ErrorKind::RefWrite)
             << "performing a set/swap operation with a differentiated value "
                "on a non-differentiated array reference of type Ref{"
             << avalString(cast<RefType>(set.getRef().getType()).getValueType())
             << "}. Move the array reference to be an argument of the "
                "differentiated function?";
  return success();
}

/// A custom_jvp/custom_vjp function's rules see only its arguments' tangents:
/// when the function's result depends on a value it closes over (the second
/// segment, the callee's arguments after the first segment) that is being
/// differentiated, that dependence would silently get a zero derivative, so
/// it is an error (JAX raises UnexpectedTracerError there). Values only the
/// rules use (for instance at their primal values, as a first-order rule
/// needs) are fine.
LogicalResult checkNoCapturedTangent(Operation *op, ArrayRef<ValueRange> parts,
                                     DenseMap<Value, Value> &tangent,
                                     SymbolTable &symbols, StringRef kind) {
  if (parts.size() < 2)
    return success();
  SmallVector<unsigned> active;
  for (auto [k, v] : llvm::enumerate(parts[1]))
    if (isDifferentiable(v.getType()) && tangent.lookup(v))
      active.push_back(parts[0].size() + k);
  if (active.empty())
    return success();
  auto callee = symbols.lookup<func::FuncOp>(
      op->getAttrOfType<FlatSymbolRefAttr>("callee").getValue());
  if (callee &&
      !llvm::is_contained(dependentResults(callee, active, symbols), true))
    return success();
  return emitUserError(op, runtime::ErrorKind::ClosedOverTangent)
         << "a " << kind
         << " function closes over a value that is being differentiated; "
            "its rule cannot see that value's derivative. Pass the value as "
            "an argument of the function instead";
}

/// Forward mode over the ops in [begin, end) of a block: fills `tangent`.
/// With `reverse` (linearizing for ember.vjp) a loop becomes a forward loop
/// that saves residuals and an ember.custom_linear whose transpose is the
/// backward loop (vjpWhile); otherwise the loop carries its tangents.
/// `fn`'s body inlined before `op` on `args`, and the tangents propagated
/// through the inlined ops; returns what the body returns.
FailureOr<SmallVector<Value>>
differentiateInPlace(OpBuilder &b, Operation *op, func::FuncOp fn,
                     ValueRange args, DenseMap<Value, Value> &tangent,
                     SymbolTable &symbols, bool reverse) {
  b.setInsertionPoint(op);
  Operation *before = op->getPrevNode();
  auto res = inlineAD(b, fn, args, symbols);
  if (failed(res))
    return failure();
  Block::iterator first =
      before ? std::next(Block::iterator(before)) : op->getBlock()->begin();
  if (failed(propagateTangents(b, first, Block::iterator(op), tangent, symbols,
                               reverse)))
    return failure();
  return res;
}

LogicalResult propagateTangents(OpBuilder &b, Block::iterator begin,
                                Block::iterator end,
                                DenseMap<Value, Value> &tangent,
                                SymbolTable &symbols, bool reverse) {
  SmallVector<Operation *> ops;
  for (auto it = begin; it != end; ++it)
    ops.push_back(&*it);
  for (Operation *op : ops) {
    if (isTransformOp(op))
      return op->emitError(
          "ember-autodiff: nested transformation was not expanded");
    SmallVector<Value> ts;
    bool any = false;
    for (Value v : op->getOperands()) {
      Value t = tangent.lookup(v);
      ts.push_back(t);
      any |= (bool)t;
    }
    if (isa<WhileOp, CaseOp>(op)) {
      // Regions also read values from above.
      op->walk([&](Operation *inner) {
        for (Value v : inner->getOperands())
          any |= (bool)tangent.lookup(v);
      });
      if (!any)
        continue;
      LogicalResult r = success();
      if (auto w = dyn_cast<WhileOp>(op))
        r = reverse ? vjpWhile(b, w, tangent, symbols)
                    : jvpWhile(b, w, tangent, symbols);
      else if (reverse) // (forward mode flattens cases first)
        r = vjpCase(b, cast<CaseOp>(op), tangent, symbols);
      else
        r = op->emitError(
            "ember-autodiff: ember.case must be flattened for forward mode");
      if (failed(r))
        return failure();
      continue;
    }
    if (!any)
      continue;
    b.setInsertionPointAfter(op);
    if (auto c = dyn_cast<CustomJvpCallOp>(op)) {
      // The user's rule: jvp(args..., tangents..., captures...) -> (outs,
      // touts).
      auto seg = c.getSegments();
      auto parts = splitSegments(c.getOperands(), seg);
      if (failed(checkNoCapturedTangent(op, parts, tangent, symbols,
                                        "custom_jvp")))
        return failure();
      SmallVector<Value> ins(parts[0]);
      for (Value a : parts[0]) {
        Value t = tangent.lookup(a);
        ins.push_back(t ? t : zerosOf(b, op->getLoc(), a.getType()));
      }
      ins.append(parts[2].begin(), parts[2].end());
      auto rule = symbols.lookup<func::FuncOp>(c.getJvp());
      auto res = inlineAD(b, rule, ins, symbols);
      if (failed(res))
        return failure();
      unsigned n = op->getNumResults();
      for (unsigned i = 0; i < n; ++i)
        if (isDifferentiable(op->getResult(i).getType()))
          tangent[op->getResult(i)] = (*res)[n + i];
      continue;
    }
    if (auto c = dyn_cast<CustomVjpCallOp>(op);
        c && reverse && c->hasAttr(kRemat)) {
      // A checkpointed function: the call stays the primal computation and
      // its tangent map is an ember.custom_linear whose transpose
      // @remat_bwd is ember.vjp of the function on the saved inputs (its
      // arguments and the values it closes over, which get cotangents too),
      // so the function runs again in the backward pass.
      auto parts =
          splitSegments(c.getOperands(), c.getSegments().take_front(2));
      SmallVector<Value> ins(parts[0]);
      ins.append(parts[1].begin(), parts[1].end());
      SmallVector<int64_t> wrt;
      SmallVector<Value> tans;
      for (auto [i, v] : llvm::enumerate(ins))
        if (Value t = tangent.lookup(v); t && isDifferentiable(v.getType())) {
          wrt.push_back(i);
          tans.push_back(t);
        }
      if (wrt.empty())
        continue;
      Location loc = c.getLoc();
      auto module = c->getParentOfType<ModuleOp>();
      // With a policy that saves values, the forward pass keeps them, and
      // the recomputation (@remat_saved) takes them instead of recomputing
      // them.
      FlatSymbolRefAttr target = c.getCalleeAttr();
      SmallVector<Value> primalIns(ins), results(c.getResults());
      auto saved = saveMarked(b, c, ins, symbols);
      if (failed(saved))
        return failure();
      if (saved->fn) {
        target = FlatSymbolRefAttr::get(saved->fn);
        primalIns.append(saved->values);
        results = saved->results;
      }
      SmallVector<Type> bwdIns, bwdOuts;
      for (Value v : primalIns)
        bwdIns.push_back(v.getType());
      bwdIns.append(c.getResultTypes().begin(), c.getResultTypes().end());
      for (Value t : tans)
        bwdOuts.push_back(t.getType());
      auto fn =
          makePrivateFunc(module, symbols, loc, "remat_bwd",
                          FunctionType::get(c.getContext(), bwdIns, bwdOuts));
      OpBuilder fb = OpBuilder::atBlockEnd(&fn.front());
      SmallVector<Type> vjpTypes(c.getResultTypes());
      vjpTypes.append(bwdOuts);
      auto args = fn.front().getArguments();
      // The recomputation reads its inputs through a barrier (unless the
      // user passed prevent_cse=False), so that CSE does not merge it with
      // the forward pass, which would keep the residuals after all.
      SmallVector<Value> primals(args.take_front(primalIns.size()));
      if (!c->hasAttr(kRematNoBarrier)) {
        auto bar = OptimizationBarrierOp::create(fb, loc, ValueRange(primals));
        primals.assign(bar->result_begin(), bar->result_end());
      }
      auto vjp = VjpOp::create(fb, loc, vjpTypes, target, primals,
                               args.drop_front(primalIns.size()),
                               fb.getDenseI64ArrayAttr(wrt), IntegerAttr());
      func::ReturnOp::create(fb, loc,
                             vjp.getResults().drop_front(c.getNumResults()));
      SmallVector<Value> linIns(primalIns);
      linIns.append(tans);
      auto lin = CustomLinearOp::create(
          b, loc, c.getResultTypes(), FlatSymbolRefAttr::get(fn), linIns,
          b.getDenseI64ArrayAttr(
              {(int64_t)primalIns.size(), (int64_t)tans.size(), 0}),
          IntegerAttr());
      for (auto [r, t] : llvm::zip(results, lin.getResults()))
        if (isDifferentiable(r.getType()))
          tangent[r] = t;
      if (target != c.getCalleeAttr())
        op->erase(); // its results were replaced by the inlined forward pass
      continue;
    }
    if (auto c = dyn_cast<CustomVjpCallOp>(op);
        c && !reverse && c->hasAttr(kRemat)) {
      // A checkpointed function (its bwd recomputes it): forward mode
      // differentiates the function itself.
      auto parts =
          splitSegments(c.getOperands(), c.getSegments().take_front(2));
      SmallVector<Value> ins(parts[0]);
      ins.append(parts[1].begin(), parts[1].end());
      auto res = differentiateInPlace(
          b, op, symbols.lookup<func::FuncOp>(c.getCallee()), ins, tangent,
          symbols, reverse);
      if (failed(res))
        return failure();
      for (auto [r, v] : llvm::zip(op->getResults(), *res)) {
        if (Value t = tangent.lookup(v))
          tangent[r] = t;
      }
      continue;
    }
    if (auto c = dyn_cast<CustomVjpCallOp>(op)) {
      // Linearize through the user's fwd: the tangent map is
      // ember.custom_linear, known only by its transpose (bwd).
      auto seg = c.getSegments();
      auto parts = splitSegments(c.getOperands(), seg.take_front(4));
      if (failed(checkNoCapturedTangent(op, parts, tangent, symbols,
                                        "custom_vjp")))
        return failure();
      SmallVector<Value> fwdIns(parts[0]);
      fwdIns.append(parts[2].begin(), parts[2].end());
      auto fwd = symbols.lookup<func::FuncOp>(c.getFwd());
      auto res = inlineAD(b, fwd, fwdIns, symbols);
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
          b.getDenseI64ArrayAttr({(int64_t)res->size() - n,
                                  (int64_t)parts[0].size(),
                                  (int64_t)parts[3].size()}),
          IntegerAttr());
      if (auto effects = c.getBwdEffectsAttr())
        lin.setBwdEffectsAttr(effects);
      // fwd's results are the primal results (as in JAX): the function is
      // not run a second time.
      for (unsigned i = 0; i < n; ++i) {
        op->getResult(i).replaceAllUsesWith((*res)[i]);
        if (isDifferentiable((*res)[i].getType()))
          tangent[(*res)[i]] = lin.getResult(i);
      }
      op->erase();
      continue;
    }
    if (auto call = dyn_cast<func::CallOp>(op);
        call && call->hasAttr("ember.batch_rule")) {
      // A call with a batching rule on the differentiated path: its callee
      // is differentiated (the rule batches the call, not its derivative).
      auto res = differentiateInPlace(
          b, op, symbols.lookup<func::FuncOp>(call.getCallee()),
          op->getOperands(), tangent, symbols, reverse);
      if (failed(res))
        return failure();
      for (auto [r, v] : llvm::zip(op->getResults(), *res))
        r.replaceAllUsesWith(v);
      op->erase();
      continue;
    }
    if (isa<RefSetOp>(op))
      continue; // (no results; checkRefWrites checked its value)
    auto rule = dyn_cast<DifferentiableOpInterface>(op);
    if (auto call = dyn_cast<func::CallOp>(op); call && !rule) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (callee && isRecordedTpuKernel(callee))
        return emitUserError(op, runtime::ErrorKind::NotOnTarget)
               << "lowering for TPU: a pallas_call on the differentiated path "
                  "has no derivative rule; give the function calling it a "
                  "custom_vjp whose fwd and bwd call kernels";
    }
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

/// Erases linear ops (in program order) once their transposition is built.
LogicalResult eraseLinearOps(ArrayRef<Operation *> ops) {
  for (Operation *o : llvm::reverse(ops)) {
    if (!o->use_empty())
      return o->emitError(
          "ember-autodiff: linear value still used after transposition");
    o->erase();
  }
  return success();
}

/// The linear part of a region's block that was linearized in place (a loop
/// body, a branch): its linear ops, and the primal values they read
/// (residuals), which are either values from above (`captures`), pure ops of
/// those (recomputed), or values of the block (`saved`, handed over by the
/// forward code). `tOut` collects the tangents from above the linear ops
/// read. `tOut` and `captures` may be shared by several regions of one op.
struct LinearSplit {
  Region &region;
  llvm::SetVector<Value> &tOut, &captures;
  llvm::DenseSet<Value> lin; // seeds, then the linear ops' results
  SmallVector<Operation *> linOps, rematOps;
  llvm::SetVector<Value> saved;
  /// Optional: the values the backward pass computes itself, given to it
  /// like outside values (a counted loop's iteration counters). Data
  /// movement reading them is recomputed there instead of saved: row i of
  /// an outer array (lax.scan's xs) is read again, not copied each
  /// iteration into a buffer.
  std::function<bool(Value)> isCounter{};
  // Filled by placeholder() / transposeInto().
  llvm::DenseSet<Value> bwdLin;
  SmallVector<Operation *> placeholders, clones;

  bool outside(Value v) const {
    return !region.isAncestor(v.getParentRegion());
  }

  void analyze(Block &block, const llvm::DenseSet<Value> &outerTangents,
               const llvm::DenseSet<Operation *> &skip, ArrayRef<Value> yTan) {
    auto isOuterTangent = [&](Value v) {
      return outside(v) && outerTangents.contains(v);
    };
    for (Operation &o : block.without_terminator()) {
      if (skip.contains(&o))
        continue;
      bool isLin = false;
      for (Value v : o.getOperands()) {
        if (lin.contains(v)) {
          isLin = true;
        } else if (isOuterTangent(v)) {
          isLin = true;
          tOut.insert(v);
        }
      }
      if (!isLin)
        continue;
      linOps.push_back(&o);
      for (Value r : o.getResults())
        lin.insert(r);
    }
    for (Value t : yTan)
      if (t && isOuterTangent(t))
        tOut.insert(t);
    DenseMap<Operation *, bool> rematMemo;
    // Whether a recomputable op reads a counter (directly or not): only
    // data movement may (a product of row i is saved, not recomputed).
    llvm::DenseSet<Operation *> readsCounter;
    llvm::DenseSet<Operation *> rematNeeded;
    auto counter = [&](Value v) { return isCounter && isCounter(v); };
    std::function<bool(Operation *)> remat = [&](Operation *d) -> bool {
      auto it = rematMemo.find(d);
      if (it != rematMemo.end())
        return it->second;
      bool ok = d->getNumRegions() == 0 && isMemoryEffectFree(d);
      bool viaCounter = false;
      for (Value v : d->getOperands()) {
        if (!ok)
          break;
        if (outside(v))
          continue;
        if (counter(v)) {
          viaCounter = true;
          continue;
        }
        Operation *def = v.getDefiningOp();
        ok = def && remat(def);
        viaCounter |= ok && readsCounter.contains(def);
      }
      if (ok && viaCounter) {
        ok = isa<DynamicSliceOp, ReshapeOp, SliceOp, TransposeOp,
                 BroadcastInDimOp>(d);
        readsCounter.insert(d);
      }
      rematMemo[d] = ok;
      return ok;
    };
    std::function<void(Value)> classify = [&](Value v) {
      if (lin.contains(v) || tOut.contains(v))
        return;
      if (outside(v)) {
        captures.insert(v);
        return;
      }
      if (counter(v)) {
        saved.insert(v); // (the caller recomputes it from the iteration)
        return;
      }
      Operation *def = v.getDefiningOp();
      if (def && remat(def)) {
        if (rematNeeded.insert(def).second)
          for (Value w : def->getOperands())
            classify(w);
        return;
      }
      saved.insert(v);
    };
    for (Operation *o : linOps)
      for (Value v : o->getOperands())
        classify(v);
    for (Operation &o : block.without_terminator())
      if (rematNeeded.contains(&o))
        rematOps.push_back(&o);
  }

  /// A placeholder at `fb` standing for the tangent `v` in the transposed copy.
  Value placeholder(OpBuilder &fb, Value v, IRMapping &map) {
    auto p = UnrealizedConversionCastOp::create(fb, v.getLoc(), v.getType(),
                                                ValueRange{});
    placeholders.push_back(p);
    bwdLin.insert(p.getResult(0));
    map.map(v, p.getResult(0));
    return p.getResult(0);
  }

  /// Clones the recomputed and linear ops at `fb` through `map` (residuals
  /// and placeholders mapped) and transposes the copies, seeding the
  /// cotangents `cts` of the block's result tangents `yTan`.
  LogicalResult transposeInto(OpBuilder &fb, IRMapping &map,
                              ArrayRef<Value> yTan, ValueRange cts,
                              Transposer &tr) {
    for (Operation *o : rematOps)
      fb.clone(*o, map);
    for (Operation *o : linOps) {
      Operation *c = fb.clone(*o, map);
      clones.push_back(c);
      for (Value r : c->getResults())
        bwdLin.insert(r);
    }
    for (auto [t, ct] : llvm::zip(yTan, cts))
      if (t) {
        Value mt = map.lookupOrDefault(t);
        if (bwdLin.contains(mt))
          tr.accumulate(mt, ct);
      }
    return tr.run(clones);
  }

  /// Erases the transposed copies and the placeholders.
  LogicalResult eraseClones() {
    if (failed(eraseLinearOps(clones)))
      return failure();
    for (Operation *p : placeholders)
      p->erase();
    return success();
  }
};

/// The value of the rank-0 integer `v` of `loop`'s body in iteration k, if it
/// is start + k * step: a counter of the loop (affineCounter), a constant,
/// or sums, differences, constant multiples and integer conversions of
/// those (a reverse scan reads row n - 1 - i).
std::optional<AffineCounter> affineInIteration(WhileOp loop, Value v,
                                               int depth = 0) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() != 0 || !isa<IntegerType>(t.getElementType()) ||
      depth > 8)
    return std::nullopt;
  Block &body = loop.getBody().front();
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == &body ? affineCounter(loop, arg.getArgNumber())
                                   : std::nullopt;
  if (auto c = constantInt(v))
    return AffineCounter{*c, 0};
  Operation *op = v.getDefiningOp();
  if (!op || op->getBlock() != &body)
    return std::nullopt;
  auto operand = [&](unsigned i) {
    return affineInIteration(loop, op->getOperand(i), depth + 1);
  };
  if (isa<ConvertOp>(op) &&
      isa<IntegerType>(getElementTypeOrSelf(op->getOperand(0).getType())))
    return operand(0);
  if (!isa<AddOp, SubOp, MulOp>(op))
    return std::nullopt;
  auto x = operand(0), y = operand(1);
  if (!x || !y)
    return std::nullopt;
  if (isa<AddOp>(op))
    return AffineCounter{x->start + y->start, x->step + y->step};
  if (isa<SubOp>(op))
    return AffineCounter{x->start - y->start, x->step - y->step};
  if (x->step == 0)
    return AffineCounter{x->start * y->start, x->start * y->step};
  if (y->step == 0)
    return AffineCounter{x->start * y->start, x->step * y->start};
  return std::nullopt; // (quadratic in k)
}

/// Reverse mode through `ember.while` (docs/decisions.md, "Reverse mode through
/// loops"). The body is linearized in place; its linear ops (JVP code) move
/// to a backward loop in a new function @while_bwd, and the forward loop
/// keeps the primal ops and saves, each iteration, the primal values that the
/// linear ops read (residuals): in [trip_count, ...] buffers when the trip
/// count is static, else on a run-time stack (ember.stack_push/pop). The
/// loop's tangent map becomes an ember.custom_linear whose transpose is
/// @while_bwd, which runs the transposed body once per iteration, last
/// first. Values from above are passed to @while_bwd; those with tangents
/// receive the cotangents the iterations accumulate.
LogicalResult vjpWhile(OpBuilder &b, WhileOp op,
                       DenseMap<Value, Value> &tangent, SymbolTable &symbols) {
  OpBuilder::InsertionGuard guard(b);
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  auto module = op->getParentOfType<ModuleOp>();
  Block &body = op.getBody().front();
  Region &bodyRegion = op.getBody();
  unsigned np = op.getInit().size();
  IntegerAttr trips = op.getTripCountAttr();
  auto i64Scalar = RankedTensorType::get({}, b.getI64Type());
  auto outside = [&](Value v) {
    return !bodyRegion.isAncestor(v.getParentRegion());
  };

  // 1. Linearize the body in place, with a seed for each differentiable
  //    carried value; values from above keep their tangents.
  SmallVector<unsigned> diff;
  for (unsigned i = 0; i < np; ++i)
    if (isDifferentiable(op.getInit()[i].getType()))
      diff.push_back(i);
  llvm::DenseSet<Value> outerTangents;
  for (auto &kv : tangent)
    outerTangents.insert(kv.second);
  DenseMap<Value, Value> inner(tangent);
  b.setInsertionPointToStart(&body);
  SmallVector<Value> seeds;
  llvm::DenseSet<Operation *> seedOps;
  for (unsigned i : diff) {
    auto seed = UnrealizedConversionCastOp::create(
        b, loc, body.getArgument(i).getType(), ValueRange{});
    seeds.push_back(seed.getResult(0));
    seedOps.insert(seed);
    inner[body.getArgument(i)] = seed.getResult(0);
  }
  auto term = cast<YieldOp>(body.getTerminator());
  if (failed(propagateTangents(b, b.getInsertionPoint(), Block::iterator(term),
                               inner, symbols,
                               /*reverse=*/true)))
    return failure();
  SmallVector<Value> yTan;
  for (unsigned i : diff)
    yTan.push_back(inner.lookup(term.getOperand(i)));

  // 2. The linear ops of the body and their residuals.
  llvm::SetVector<Value> tOut, captures;
  LinearSplit split{bodyRegion, tOut, captures};
  if (trips)
    split.isCounter = [&](Value v) {
      return affineInIteration(op, v).has_value();
    };
  split.lin.insert(seeds.begin(), seeds.end());
  split.analyze(body, outerTangents, seedOps, yTan);
  SmallVector<Operation *> &linOps = split.linOps;
  // With a static trip count, a residual that is affine in the iteration
  // number (lax.scan's index, n - 1 - i in a reverse scan) is recomputed
  // from it instead of saved: no buffer, and on a GPU no device value the
  // host must read back.
  SmallVector<std::pair<Value, AffineCounter>> counters;
  llvm::SetVector<Value> saved;
  for (Value v : split.saved) {
    std::optional<AffineCounter> c;
    if (trips)
      c = affineInIteration(op, v);
    if (c)
      counters.push_back({v, *c});
    else
      saved.insert(v);
  }

  // 3. A residual that one cheap elementwise op computes from other saved
  //    residuals, counters and constants (1 - tanh(x) beside tanh(x)) is
  //    recomputed from them in the backward loop instead of saved: a buffer
  //    written each forward iteration (a launch on a GPU) for an op the
  //    backward loop fuses into its own.
  SmallVector<Operation *> recomputed;
  {
    auto counted = [&](Value v) {
      return llvm::any_of(counters, [&](auto &c) { return c.first == v; });
    };
    auto constant = [](Value v) { return v.getDefiningOp<ConstantOp>(); };
    llvm::SetVector<Value> candidates;
    for (Value v : saved) {
      Operation *def = v.getDefiningOp();
      if (def && def->getBlock() == &body &&
          isa<AddOp, SubOp, MulOp, NegOp, ConvertOp, MaxOp>(def) &&
          llvm::all_of(def->getOperands(), [&](Value x) {
            return constant(x) || counted(x) || saved.contains(x);
          }))
        candidates.insert(v);
    }
    for (Value v : candidates)
      if (llvm::none_of(v.getDefiningOp()->getOperands(),
                        [&](Value x) { return candidates.contains(x); })) {
        recomputed.push_back(v.getDefiningOp());
        saved.remove(v);
      }
  }

  // 3b. A carried value saved beside its next value (an RNN's h before and
  //    after the step) shares its buffer: the next value's buffer gets a
  //    row more, row 0 holds the carry's initial value and row k + 1 the
  //    next value of iteration k, so iteration k's carried value is row k.
  //    (A value holds one carry's rows at most and is not itself a carry
  //    read from another's buffer.)
  DenseMap<Value, unsigned> shifted; // next value -> index of the carry
  DenseMap<Value, Value> carryOf;    // carried value -> its next value
  if (trips)
    for (unsigned j = 0; j < np; ++j) {
      Value carried = body.getArgument(j), next = term.getOperand(j);
      if (carried != next && saved.contains(carried) && saved.contains(next) &&
          !shifted.count(next) && !shifted.count(carried) &&
          !carryOf.count(next)) {
        shifted[next] = j;
        carryOf[carried] = next;
      }
    }
  for (auto &kv : carryOf)
    saved.remove(kv.first);

  // 4. @while_bwd(n, storage..., captures..., cts...) -> (init cts..., tOut
  // cts...).
  bool useStack = !trips && !saved.empty();
  int64_t n = trips ? trips.getInt() : 0;
  auto storageType = [&](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape{n + (shifted.count(v) ? 1 : 0)};
    shape.append(t.getShape().begin(), t.getShape().end());
    return RankedTensorType::get(shape, t.getElementType());
  };
  SmallVector<Type> storageTypes;
  if (useStack)
    storageTypes.push_back(i64Scalar);
  else if (trips)
    for (Value v : saved)
      storageTypes.push_back(storageType(v));
  SmallVector<Type> bwdIns{i64Scalar}, bwdOuts, ctTypes;
  bwdIns.append(storageTypes);
  for (Value v : captures)
    bwdIns.push_back(v.getType());
  for (unsigned i : diff)
    ctTypes.push_back(op.getInit()[i].getType());
  bwdIns.append(ctTypes);
  bwdOuts.append(ctTypes);
  for (Value v : tOut)
    bwdOuts.push_back(v.getType());
  auto fn = makePrivateFunc(module, symbols, loc, "while_bwd",
                            FunctionType::get(ctx, bwdIns, bwdOuts));
  {
    Block &entry = fn.front();
    OpBuilder fb = OpBuilder::atBlockEnd(&entry);
    unsigned ns = storageTypes.size(), nc = captures.size();
    ValueRange storageArgs = entry.getArguments().slice(1, ns);
    ValueRange captureArgs = entry.getArguments().slice(1 + ns, nc);
    ValueRange ctArgs = entry.getArguments().slice(1 + ns + nc, diff.size());
    SmallVector<Value> init{entry.getArgument(0)};
    if (useStack)
      init.push_back(storageArgs[0]);
    init.append(ctArgs.begin(), ctArgs.end());
    for (Value v : tOut)
      init.push_back(zerosOf(fb, loc, v.getType()));
    SmallVector<Type> types;
    for (Value v : init)
      types.push_back(v.getType());
    auto loop = WhileOp::create(fb, loc, types, init);
    loop.setTripCountAttr(trips);
    SmallVector<Location> locs(types.size(), loc);
    Block *cond = fb.createBlock(&loop.getCond(), {}, types, locs);
    Value more = CompareOp::create(fb, loc, ComparisonDirection::GT,
                                   cond->getArgument(0), scalarI64(fb, loc, 0));
    YieldOp::create(fb, loc, ValueRange{more});
    Block *bb = fb.createBlock(&loop.getBody(), {}, types, locs);
    unsigned at = 0;
    Value k =
        SubOp::create(fb, loc, bb->getArgument(at++), scalarI64(fb, loc, 1));
    Value handle = useStack ? bb->getArgument(at++) : Value();
    ValueRange ctIn = bb->getArguments().slice(at, diff.size());
    ValueRange accIn = bb->getArguments().slice(at + diff.size(), tOut.size());
    IRMapping map;
    for (auto [v, a] : llvm::zip(captures, captureArgs))
      map.map(v, a);
    if (useStack) {
      SmallVector<Type> savedTypes;
      for (Value v : saved)
        savedTypes.push_back(v.getType());
      // Push k (the forward loop pushed once per iteration, from 0).
      auto pop = StackPopOp::create(fb, loc, i64Scalar, savedTypes, handle, k,
                                    IntegerAttr());
      handle = pop.getResult();
      for (auto [v, p] : llvm::zip(saved, pop.getValues()))
        map.map(v, p);
    } else if (trips) {
      auto row = [&](Value buf, Value i, RankedTensorType t) -> Value {
        SmallVector<Value> idx{i};
        for (int64_t d = 0; d < t.getRank(); ++d)
          idx.push_back(scalarI64(fb, loc, 0));
        SmallVector<int64_t> sizes{1};
        sizes.append(t.getShape().begin(), t.getShape().end());
        Value s = DynamicSliceOp::create(fb, loc, buf, idx,
                                         fb.getDenseI64ArrayAttr(sizes));
        return ReshapeOp::create(fb, loc, t, s);
      };
      DenseMap<Value, Value> bufOf;
      for (auto [v, buf] : llvm::zip(saved, storageArgs)) {
        auto t = cast<RankedTensorType>(v.getType());
        bufOf[v] = buf;
        map.map(v, row(buf,
                       shifted.count(v)
                           ? AddOp::create(fb, loc, k, scalarI64(fb, loc, 1))
                           : k,
                       t));
      }
      for (auto &[carried, next] : carryOf)
        map.map(carried, row(bufOf.lookup(next), k,
                             cast<RankedTensorType>(carried.getType())));
      for (auto [v, c] : counters) {
        auto t = cast<RankedTensorType>(v.getType());
        auto constant = [&](int64_t x) {
          return ConstantOp::create(
              fb, loc,
              DenseElementsAttr::get(
                  t, APInt(t.getElementTypeBitWidth(), x, /*isSigned=*/true)));
        };
        Value i = ConvertOp::create(fb, loc, t, k);
        map.map(v, AddOp::create(fb, loc,
                                 MulOp::create(fb, loc, i, constant(c.step)),
                                 constant(c.start)));
      }
    }
    for (Operation *r : recomputed) {
      for (Value x : r->getOperands())
        if (auto c = x.getDefiningOp<ConstantOp>(); c && !map.contains(x))
          map.map(x, fb.clone(*c)->getResult(0));
      fb.clone(*r, map);
    }
    SmallVector<Value> seedPh, outPh;
    for (Value sd : seeds)
      seedPh.push_back(split.placeholder(fb, sd, map));
    for (Value v : tOut)
      outPh.push_back(split.placeholder(fb, v, map));
    Transposer tr{fb, loc, symbols, split.bwdLin};
    if (failed(split.transposeInto(fb, map, yTan, ctIn, tr)))
      return failure();
    if (tr.hasEffects)
      return emitUserError(op, runtime::ErrorKind::BackwardEffect)
             << "a custom_vjp whose backward pass writes a ref is not "
                "supported inside a loop yet";
    SmallVector<Value> yielded{k};
    if (useStack)
      yielded.push_back(handle);
    for (auto [p, v] : llvm::zip(seedPh, seeds)) {
      Value ct = tr.cotangent.lookup(p);
      yielded.push_back(ct ? ct : zerosOf(fb, loc, v.getType()));
    }
    for (auto [p, acc] : llvm::zip(outPh, accIn)) {
      Value ct = tr.cotangent.lookup(p);
      yielded.push_back(ct ? (Value)AddOp::create(fb, loc, acc, ct) : acc);
    }
    YieldOp::create(fb, loc, yielded);
    if (failed(split.eraseClones()))
      return failure();
    fb.setInsertionPointToEnd(&entry);
    SmallVector<Value> rets(loop.getResults().drop_front(useStack ? 2 : 1));
    func::ReturnOp::create(fb, loc, rets);
  }

  // 5. The forward loop: the primal body, counting iterations and saving
  //    the residuals.
  if (failed(eraseLinearOps(linOps)))
    return failure();
  for (Operation *sd : seedOps)
    sd->erase();
  SmallVector<Type> extra{i64Scalar};
  extra.append(storageTypes);
  SmallVector<Location> extraLocs(extra.size(), loc);
  op.getCond().front().addArguments(extra, extraLocs);
  unsigned base = body.getNumArguments();
  body.addArguments(extra, extraLocs);
  b.setInsertionPoint(term);
  SmallVector<Value> yielded(term.getOperands());
  Value count = body.getArgument(base);
  yielded.push_back(AddOp::create(b, loc, count, scalarI64(b, loc, 1)));
  if (useStack) {
    yielded.push_back(StackPushOp::create(b, loc, i64Scalar,
                                          body.getArgument(base + 1),
                                          saved.getArrayRef(), IntegerAttr()));
  } else if (trips) {
    for (auto [j, v] : llvm::enumerate(saved)) {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<Value> idx{
          shifted.count(v)
              ? (Value)AddOp::create(b, loc, count, scalarI64(b, loc, 1))
              : count};
      for (int64_t d = 0; d < t.getRank(); ++d)
        idx.push_back(scalarI64(b, loc, 0));
      SmallVector<int64_t> shape{1};
      shape.append(t.getShape().begin(), t.getShape().end());
      Value row = ReshapeOp::create(
          b, loc, RankedTensorType::get(shape, t.getElementType()), v);
      yielded.push_back(DynamicUpdateSliceOp::create(
          b, loc, body.getArgument(base + 1 + j), row, idx));
    }
  }
  YieldOp::create(b, loc, yielded);
  term.erase();
  b.setInsertionPoint(op);
  SmallVector<Value> init(op.getInit());
  init.push_back(scalarI64(b, loc, 0));
  if (useStack)
    init.push_back(scalarI64(b, loc, 0));
  else if (trips)
    for (Value v : saved) {
      Value buf = zerosOf(b, loc, storageType(v));
      auto it = shifted.find(v);
      if (it != shifted.end()) {
        // Row 0: the carry's initial value.
        Value first = op.getInit()[it->second];
        auto t = cast<RankedTensorType>(first.getType());
        SmallVector<int64_t> shape{1};
        shape.append(t.getShape().begin(), t.getShape().end());
        SmallVector<Value> idx(t.getRank() + 1, scalarI64(b, loc, 0));
        buf = DynamicUpdateSliceOp::create(
            b, loc, buf,
            ReshapeOp::create(b, loc,
                              RankedTensorType::get(shape, t.getElementType()),
                              first),
            idx);
      }
      init.push_back(buf);
    }
  SmallVector<Type> types;
  for (Value v : init)
    types.push_back(v.getType());
  auto loop = WhileOp::create(b, loc, types, init);
  loop.setTripCountAttr(trips);
  loop.getCond().takeBody(op.getCond());
  loop.getBody().takeBody(op.getBody());
  for (unsigned i = 0; i < np; ++i)
    op.getResult(i).replaceAllUsesWith(loop.getResult(i));
  op.erase();
  b.setInsertionPointAfter(loop);

  // 6. The tangent map of the loop, known by its transpose @while_bwd
  //    (which runs trip_count iterations when that is known).
  SmallVector<Value> linIns(loop.getResults().drop_front(np));
  if (trips)
    linIns[0] = scalarI64(b, loc, trips.getInt());
  linIns.append(captures.begin(), captures.end());
  int64_t nres = linIns.size();
  for (unsigned i : diff) {
    Value t = tangent.lookup(loop.getInit()[i]);
    linIns.push_back(t ? t : zerosOf(b, loc, loop.getInit()[i].getType()));
  }
  linIns.append(tOut.begin(), tOut.end());
  auto linOp = CustomLinearOp::create(
      b, loc, ctTypes, FlatSymbolRefAttr::get(fn), linIns,
      b.getDenseI64ArrayAttr({nres, (int64_t)(linIns.size() - nres), 0}),
      IntegerAttr());
  if (useStack)
    linOp->setAttr(kStackOperand, b.getI64IntegerAttr(1));
  for (auto [k, i] : llvm::enumerate(diff))
    tangent[loop.getResult(i)] = linOp.getResult(k);
  return success();
}

/// Reverse mode through `ember.case` (docs/decisions.md, "Reverse mode through
/// conditionals"): each branch is linearized in place; the forward case
/// returns, next to its results, the residuals of every branch (the taken
/// branch's, zeros for the others), and the branches' tangent maps become one
/// ember.custom_linear whose transpose @case_bwd is a case on the same index
/// running the taken branch's transposed linear ops. Only the taken branch is
/// evaluated or differentiated, as in JAX: the other branches' derivatives
/// (possibly inf or NaN where they are undefined) never meet the cotangent.
LogicalResult vjpCase(OpBuilder &b, CaseOp op, DenseMap<Value, Value> &tangent,
                      SymbolTable &symbols) {
  OpBuilder::InsertionGuard guard(b);
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  auto module = op->getParentOfType<ModuleOp>();
  unsigned nr = op.getNumResults(), nb = op.getBranches().size();
  SmallVector<unsigned> diff;
  for (unsigned j = 0; j < nr; ++j)
    if (isDifferentiable(op.getResult(j).getType()))
      diff.push_back(j);
  llvm::DenseSet<Value> outerTangents;
  for (auto &kv : tangent)
    outerTangents.insert(kv.second);

  // 1. Linearize each branch in place and split off its linear part.
  llvm::SetVector<Value> tOut, captures;
  SmallVector<std::unique_ptr<LinearSplit>> splits;
  SmallVector<SmallVector<Value>> yTans;
  for (Region &r : op.getBranches()) {
    Block &block = r.front();
    DenseMap<Value, Value> inner(tangent);
    auto term = cast<YieldOp>(block.getTerminator());
    if (failed(propagateTangents(b, block.begin(), Block::iterator(term), inner,
                                 symbols,
                                 /*reverse=*/true)))
      return failure();
    SmallVector<Value> yTan;
    for (unsigned j : diff)
      yTan.push_back(inner.lookup(term.getOperand(j)));
    auto split = std::make_unique<LinearSplit>(LinearSplit{r, tOut, captures});
    split->analyze(block, outerTangents, {}, yTan);
    splits.push_back(std::move(split));
    yTans.push_back(std::move(yTan));
  }
  SmallVector<Type> ctTypes;
  for (unsigned j : diff)
    ctTypes.push_back(op.getResult(j).getType());

  // 2. @case_bwd(index, saved of every branch..., captures..., cts...) -> tOut
  // cts.
  SmallVector<Type> savedTypes;
  SmallVector<unsigned> savedStart;
  for (auto &sp : splits) {
    savedStart.push_back(savedTypes.size());
    for (Value v : sp->saved)
      savedTypes.push_back(v.getType());
  }
  SmallVector<Type> bwdIns{op.getIndex().getType()}, bwdOuts;
  bwdIns.append(savedTypes);
  for (Value v : captures)
    bwdIns.push_back(v.getType());
  bwdIns.append(ctTypes);
  for (Value v : tOut)
    bwdOuts.push_back(v.getType());
  func::FuncOp fn;
  if (!tOut.empty()) {
    fn = makePrivateFunc(module, symbols, loc, "case_bwd",
                         FunctionType::get(ctx, bwdIns, bwdOuts));
    Block &entry = fn.front();
    OpBuilder fb = OpBuilder::atBlockEnd(&entry);
    unsigned ns = savedTypes.size(), nc = captures.size();
    ValueRange savedArgs = entry.getArguments().slice(1, ns);
    ValueRange captureArgs = entry.getArguments().slice(1 + ns, nc);
    ValueRange ctArgs = entry.getArguments().slice(1 + ns + nc, diff.size());
    auto bcase = CaseOp::create(fb, loc, bwdOuts, entry.getArgument(0), nb);
    for (unsigned k = 0; k < nb; ++k) {
      LinearSplit &sp = *splits[k];
      fb.createBlock(&bcase.getBranches()[k]);
      IRMapping map;
      for (auto [v, a] : llvm::zip(captures, captureArgs))
        map.map(v, a);
      for (auto [i, v] : llvm::enumerate(sp.saved))
        map.map(v, savedArgs[savedStart[k] + i]);
      SmallVector<Value> outPh;
      for (Value v : tOut)
        outPh.push_back(sp.placeholder(fb, v, map));
      Transposer tr{fb, loc, symbols, sp.bwdLin};
      if (failed(sp.transposeInto(fb, map, yTans[k], ctArgs, tr)))
        return failure();
      if (tr.hasEffects)
        return emitUserError(op, runtime::ErrorKind::BackwardEffect)
               << "a custom_vjp whose backward pass writes a ref is not "
                  "supported inside a cond or switch yet";
      SmallVector<Value> yielded;
      for (auto [p, v] : llvm::zip(outPh, tOut)) {
        Value ct = tr.cotangent.lookup(p);
        yielded.push_back(ct ? ct : zerosOf(fb, loc, v.getType()));
      }
      YieldOp::create(fb, loc, yielded);
      if (failed(sp.eraseClones()))
        return failure();
    }
    fb.setInsertionPointToEnd(&entry);
    func::ReturnOp::create(fb, loc, bcase.getResults());
  }

  // 3. The forward case: the primal branches, each also returning its
  //    residuals (zeros in the other branches' slots).
  for (auto &sp : splits)
    if (failed(eraseLinearOps(sp->linOps)))
      return failure();
  SmallVector<Type> types(op.getResultTypes());
  types.append(savedTypes);
  b.setInsertionPoint(op);
  auto fwd = CaseOp::create(b, loc, types, op.getIndex(), nb);
  for (unsigned k = 0; k < nb; ++k) {
    Region &dst = fwd.getBranches()[k];
    dst.takeBody(op.getBranches()[k]);
    Block &block = dst.front();
    auto term = cast<YieldOp>(block.getTerminator());
    b.setInsertionPoint(term);
    SmallVector<Value> yielded(term.getOperands());
    for (unsigned kk = 0; kk < nb; ++kk)
      for (Value v : splits[kk]->saved)
        yielded.push_back(kk == k ? v : zerosOf(b, loc, v.getType()));
    YieldOp::create(b, loc, yielded);
    term.erase();
  }
  for (unsigned j = 0; j < nr; ++j)
    op.getResult(j).replaceAllUsesWith(fwd.getResult(j));
  op.erase();
  if (tOut.empty())
    return success(); // no tangent reaches the results

  // 4. The tangent map of the case, known by its transpose @case_bwd.
  b.setInsertionPointAfter(fwd);
  SmallVector<Value> linIns{fwd.getIndex()};
  linIns.append(fwd.getResults().begin() + nr, fwd.getResults().end());
  linIns.append(captures.begin(), captures.end());
  int64_t nres = linIns.size();
  linIns.append(tOut.begin(), tOut.end());
  auto linOp = CustomLinearOp::create(
      b, loc, ctTypes, FlatSymbolRefAttr::get(fn), linIns,
      b.getDenseI64ArrayAttr({nres, (int64_t)tOut.size(), 0}), IntegerAttr());
  for (auto [k, j] : llvm::enumerate(diff))
    tangent[fwd.getResult(j)] = linOp.getResult(k);
  return success();
}

/// propagateTangents over [begin, end of `body`), keeping `results` (values
/// of `body`) valid: an op the propagation replaces (ember.while) may define
/// some of them.
LogicalResult propagateKeeping(OpBuilder &b, Block &body, Block::iterator begin,
                               SmallVectorImpl<Value> &results,
                               DenseMap<Value, Value> &tangent,
                               SymbolTable &symbols, bool reverse) {
  OpBuilder::InsertionGuard guard(b);
  bool empty = begin == body.end(); // (end() would then stand before `keep`)
  return keepingLive(body, results, [&](Operation *keep) {
    return propagateTangents(b, empty ? Block::iterator(keep) : begin,
                             Block::iterator(keep), tangent, symbols, reverse);
  });
}

/// "file:line:col (function)" for a location made by the tracer.
std::string describeLocation(Location loc) {
  std::string function;
  if (auto named = dyn_cast<NameLoc>(loc)) {
    function = named.getName().str();
    loc = named.getChildLoc();
  }
  std::string out = "<unknown>";
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    out = (file.getFilename().getValue() + ":" + Twine(file.getLine()) + ":" +
           Twine(file.getColumn()))
              .str();
  return function.empty() ? out : out + " (" + function + ")";
}

/// Records in the module attribute kResiduals the values of `body` (a VJP
/// just transposed; the adjoint code follows `lastPrimal`) that the adjoint
/// code reads from the forward pass: arguments (of the first `np`) in order,
/// then op results in program order, each as a dictionary with its `type`
/// and `argument` (an index), `constant`, `name` (a checkpoint_name) or
/// `op` (the op's name), with the op's `loc`.
void recordResiduals(Block &body, Operation *lastPrimal, unsigned np) {
  llvm::DenseSet<Operation *> adjoint;
  for (auto it = lastPrimal ? std::next(Block::iterator(lastPrimal))
                            : body.begin();
       it != body.end(); ++it)
    adjoint.insert(&*it);
  llvm::DenseSet<Value> used;
  for (Operation *o : adjoint)
    o->walk([&](Operation *inner) {
      for (Value v : inner->getOperands()) {
        if (auto arg = dyn_cast<BlockArgument>(v)) {
          if (arg.getOwner() == &body && arg.getArgNumber() < np)
            used.insert(v);
        } else if (Operation *def = v.getDefiningOp();
                   def->getBlock() == &body && !adjoint.contains(def)) {
          used.insert(v);
        }
      }
    });
  MLIRContext *ctx = body.getParentOp()->getContext();
  Builder b(ctx);
  SmallVector<Attribute> entries;
  // The op that computes `v` as JAX names it: for a result of a
  // checkpointed function (JAX's primitive `checkpoint`), the op inside the
  // function that computes what it returns, as JAX lists it.
  auto source = [&](Value v) -> Operation * {
    Operation *def = v.getDefiningOp();
    for (int depth = 0; def && def->hasAttr(kRemat) && depth < 16; ++depth) {
      auto call = cast<CustomVjpCallOp>(def);
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (!callee || callee.isExternal())
        break;
      Value inner = callee.getBody().front().getTerminator()->getOperand(
          cast<OpResult>(v).getResultNumber());
      if (!inner.getDefiningOp())
        break;
      v = inner;
      def = inner.getDefiningOp();
    }
    return def;
  };
  auto entry = [&](Value v, StringRef kind, Attribute what) {
    SmallVector<NamedAttribute> fields{
        b.getNamedAttr("type", TypeAttr::get(v.getType())),
        b.getNamedAttr(kind, what)};
    if (Operation *def = source(v))
      fields.push_back(b.getNamedAttr(
          "loc", b.getStringAttr(describeLocation(def->getLoc()))));
    entries.push_back(b.getDictionaryAttr(fields));
  };
  auto opName = [&](Operation *o) -> StringAttr {
    if (o->hasAttr(kRemat)) // a checkpointed function returning its input
      return b.getStringAttr("checkpoint");
    if (auto loop = dyn_cast<WhileOp>(o); loop && loop.getTripCountAttr())
      return b.getStringAttr("scan");      // (lax.scan, fori_loop: JAX's scan)
    if (auto cmp = dyn_cast<CompareOp>(o)) // JAX's `gt`, `eq`, ...
      return b.getStringAttr(
          StringRef(stringifyComparisonDirection(cmp.getComparisonDirection()))
              .lower());
    return b.getStringAttr(o->getName().stripDialect());
  };
  for (BlockArgument a : body.getArguments().take_front(np))
    if (used.contains(a))
      entry(a, "argument", b.getI64IntegerAttr(a.getArgNumber()));
  // Constants after the arguments (as JAX lists them), then op results.
  // (Scalars are JAX's literals, which its backward pass holds itself.)
  auto primal = llvm::make_filter_range(
      body, [&](Operation &o) { return !adjoint.contains(&o); });
  for (Operation &o : primal)
    if (isa<ConstantOp>(o) && used.contains(o.getResult(0)) &&
        cast<RankedTensorType>(o.getResult(0).getType()).getRank() > 0)
      entry(o.getResult(0), "constant", b.getUnitAttr());
  for (Operation &o : primal) {
    for (Value r : o.getResults()) {
      if (!used.contains(r) || isa<ConstantOp>(o))
        continue;
      Operation *def = source(r);
      if (auto named = dyn_cast<CheckpointNameOp>(def))
        entry(r, "name", named.getNameAttr());
      else
        entry(r, "op", opName(def));
    }
  }
  body.getParentOp()->getParentOfType<ModuleOp>()->setAttr(
      kResiduals, b.getArrayAttr(entries));
}

struct Deriver {
  ModuleOp module;
  SymbolTable &symbols;

  func::FuncOp makeFunc(Location loc, StringRef base, FunctionType type) {
    return makePrivateFunc(module, symbols, loc, base, type);
  }

  FailureOr<func::FuncOp> deriveJvp(JvpOp op, func::FuncOp callee) {
    SmallVector<Type> ins(op.getOperandTypes());
    auto fn =
        makeFunc(op.getLoc(), (callee.getName() + "_jvp").str(),
                 FunctionType::get(op.getContext(), ins, op.getResultTypes()));
    Block &body = fn.front();
    OpBuilder b = OpBuilder::atBlockEnd(&body);
    unsigned np = op.getPrimals().size();
    auto results =
        inlineAD(b, callee, body.getArguments().take_front(np), symbols);
    if (failed(results) ||
        failed(threadRefsForTransform(
            body, body.empty() ? nullptr : &body.front(), *results)) ||
        failed(checkRefWrites(body, op.getWrt())))
      return failure();
    flattenCases(body, *results);
    b.setInsertionPointToEnd(&body);
    DenseMap<Value, Value> tangent;
    for (auto [k, i] : llvm::enumerate(op.getWrt()))
      if (isDifferentiable(body.getArgument(i).getType()))
        tangent[body.getArgument(i)] = body.getArgument(np + k);
    if (failed(propagateKeeping(b, body, body.begin(), *results, tangent,
                                symbols,
                                /*reverse=*/false)))
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
    auto fn =
        makeFunc(op.getLoc(), (callee.getName() + "_vjp").str(),
                 FunctionType::get(op.getContext(), ins, op.getResultTypes()));
    Block &body = fn.front();
    OpBuilder b = OpBuilder::atBlockEnd(&body);
    Location loc = op.getLoc();
    unsigned np = op.getPrimals().size();
    auto results =
        inlineAD(b, callee, body.getArguments().take_front(np), symbols);
    if (failed(results) ||
        failed(threadRefsForTransform(
            body, body.empty() ? nullptr : &body.front(), *results)) ||
        failed(checkRefWrites(body, op.getWrt())))
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
      auto seed = UnrealizedConversionCastOp::create(b, loc, arg.getType(),
                                                     ValueRange{});
      seeds.push_back(seed.getResult(0));
      tangent[arg] = seed.getResult(0);
    }
    // (An iterator, not an op: the body may have no ops, e.g. the identity.)
    Block::iterator firstPrimal = b.getInsertionPoint();
    if (failed(propagateKeeping(b, body, firstPrimal, *results, tangent,
                                symbols,
                                /*reverse=*/true)))
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
      if (llvm::any_of(o.getOperands(),
                       [&](Value v) { return linearValues.contains(v); })) {
        linearOps.push_back(&o);
        for (Value r : o.getResults())
          linearValues.insert(r);
      }
    }
    // 3. Transpose in reverse order, appending the adjoint at the end.
    Operation *lastPrimal = body.empty() ? nullptr : &body.back();
    b.setInsertionPointToEnd(&body);
    Transposer tr{b, loc, symbols, linearValues};
    for (auto [i, v] : llvm::enumerate(*results))
      if (Value t = tangent.lookup(v))
        tr.accumulate(t, body.getArgument(np + i));
    if (failed(tr.run(linearOps)))
      return failure();
    if (op->hasAttr(kRecordResiduals))
      recordResiduals(body, lastPrimal, np);
    DenseMap<Value, Value> &cotangent = tr.cotangent;
    SmallVector<Value> rets(*results);
    for (auto [k, i] : llvm::enumerate(op.getWrt())) {
      Value ct = seeds[k] ? cotangent.lookup(seeds[k]) : Value();
      rets.push_back(ct ? ct : zerosOf(b, loc, body.getArgument(i).getType()));
    }
    // The backward pass's effects: every custom_vjp with bwd_effects in the
    // callee must have been transposed (the Python side counted them).
    int64_t wantEffects = op.getEffects().value_or(0);
    for (Operation &o : body)
      if (auto lin = dyn_cast<CustomLinearOp>(o);
          lin && lin.getBwdEffects().value_or(0) > 0 &&
          !llvm::is_contained(linearOps, &o))
        return emitUserError(lin, runtime::ErrorKind::BackwardEffect)
               << "a custom_vjp whose backward pass writes a ref must be on "
                  "the differentiated path: its inputs do not depend on the "
                  "differentiated arguments";
    if ((int64_t)tr.effects.size() != wantEffects)
      return emitUserError(op, runtime::ErrorKind::BackwardEffect)
             << "a custom_vjp whose backward pass writes a ref must be on the "
                "differentiated path, outside loops and nested "
                "transformations ("
             << wantEffects << " backward-pass effects expected, "
             << tr.effects.size() << " found)";
    if (TypeRange(tr.effects) !=
        TypeRange(op.getResultTypes()).take_back(wantEffects))
      return op.emitError("ember.vjp: the backward-pass effects have other "
                          "types than its last results");
    rets.append(tr.effects.begin(), tr.effects.end());
    func::ReturnOp::create(b, loc, rets);
    // 4. Erase the linear forward code and the seeds.
    if (failed(eraseLinearOps(linearOps)))
      return failure();
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
    // Alternate until nothing is ready (a jvp may wait for a vjp and back);
    // the rest waits for other transformations (ember-batch).
    for (bool progress = true; progress;) {
      progress = false;
      if (failed(expandAutodiffOps(module, symbols, progress)))
        return signalPassFailure();
    }
  }
};

} // namespace

/// Replaces each counted loop that runs zero times (`trip_count = 0`: a
/// `fori_loop(0, 0, ...)`) by its initial values. Its body never runs, and
/// reverse mode would otherwise save its residuals in buffers of zero rows
/// and read a row of them.
static void foldZeroTripLoops(ModuleOp module) {
  SmallVector<WhileOp> dead;
  module.walk([&](WhileOp loop) {
    if (std::optional<uint64_t> trips = loop.getTripCount(); trips && !*trips)
      dead.push_back(loop);
  });
  for (WhileOp loop : dead) {
    loop->replaceAllUsesWith(loop.getInit());
    loop->erase();
  }
}

LogicalResult mlir::ember::expandAutodiffOps(ModuleOp module,
                                             SymbolTable &symbols,
                                             bool &progress,
                                             bool keepKernelCalls) {
  foldZeroTripLoops(module);
  keepKernels = keepKernelCalls;
  auto reset = llvm::make_scope_exit([] { keepKernels = false; });
  Deriver d{module, symbols};
  if (failed(expandReady<JvpOp>(
          module, symbols,
          [&](JvpOp op, func::FuncOp callee) {
            return d.deriveJvp(op, callee);
          },
          progress, keepKernelCalls, /*keepBatchRules=*/true)))
    return failure();
  return expandReady<VjpOp>(
      module, symbols,
      [&](VjpOp op, func::FuncOp callee) { return d.deriveVjp(op, callee); },
      progress, keepKernelCalls, /*keepBatchRules=*/true);
}
