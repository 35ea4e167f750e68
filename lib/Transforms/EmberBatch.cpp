//===- EmberBatch.cpp - expand ember.vmap ---------------------------------===//
#include "TransformUtils.h"
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"
#include "ember/IR/EmberRefs.h"

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

RankedTensorType withBatch(Type t, int64_t n) { return batchedType(t, n); }

Value broadcastBatch(OpBuilder &b, Location loc, Value v, int64_t n) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < t.getRank(); ++i)
    dims.push_back(i + 1);
  return BroadcastInDimOp::create(b, loc, withBatch(t, n), v,
                                  b.getDenseI64ArrayAttr(dims));
}

/// Maps per-example values to their batched versions (batch dimension first).
using BatchMap = DenseMap<Value, Value>;

/// The module being transformed (custom-rule calls batch their functions),
/// and the axis name of the vmap being expanded (null when it has none).
struct BatchScope {
  ModuleOp module;
  SymbolTable *symbols;
  StringAttr axis;
  /// Per-example results of collectives replaced by a value that is the
  /// same on every lane (their uses were rewritten; function results and
  /// terminator operands are looked up here).
  DenseMap<Value, Value> sameOnLanes{};
};
thread_local BatchScope scope; // per thread: passes may run on several threads

/// Whether `o` is a collective over the axis of the vmap being expanded.
bool overOwnAxis(Operation *o) {
  if (!scope.axis ||
      !isa<PsumOp, PmaxOp, PminOp, PvaryOp, AllGatherOp, ReduceScatterOp,
           PpermuteOp, AllToAllOp, AxisIndexOp>(o))
    return false;
  return o->getAttrOfType<StringAttr>("axis") == scope.axis;
}

/// Whether `o` is a host callback without a batching rule of its own that
/// was traced inside per-device lanes over the axis being expanded.
bool isPerDeviceCallback(Operation *o) {
  auto cb = dyn_cast<HostCallbackOp>(o);
  if (!cb || !scope.axis || cb.getVmapMethod() != "none")
    return false;
  auto axes = cb.getDeviceAxes();
  return axes && llvm::is_contained(axes->getAsRange<StringAttr>(), scope.axis);
}

bool containsOwnCollective(Operation *o) {
  if (!scope.axis)
    return false;
  return o
      ->walk([](Operation *inner) {
        return overOwnAxis(inner) ? WalkResult::interrupt()
                                  : WalkResult::advance();
      })
      .wasInterrupted();
}

/// `perm` as a transpose of `x`.
Value transposed(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> perm) {
  return TransposeOp::create(b, loc, x, b.getDenseI64ArrayAttr(perm));
}

/// The rule for a collective over the axis of the vmap being expanded: the
/// lanes are the batch dimension, so the collective becomes ops over it.
/// `x` is the operand in the batched function (with the batch dimension if
/// `xb`). Returns the result and whether it carries the batch dimension
/// (reductions and gathers give every lane the same value, so they do not).
FailureOr<std::pair<Value, bool>>
batchOwnCollective(OpBuilder &b, Operation *op, Value x, bool xb, int64_t n) {
  Location loc = op->getLoc();
  auto all = [&]() { return xb ? x : broadcastBatch(b, loc, x, n); };
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  auto dims0 = b.getDenseI64ArrayAttr({0});
  if (isa<PvaryOp>(op))
    return std::make_pair(x, xb);
  if (isa<PsumOp, PmaxOp, PminOp>(op)) {
    ReduceKind k = isa<PsumOp>(op)   ? ReduceKind::Sum
                   : isa<PmaxOp>(op) ? ReduceKind::Max
                                     : ReduceKind::Min;
    Value r = ReduceOp::create(b, loc, all(), k, dims0);
    return std::make_pair(r, false);
  }
  if (isa<AxisIndexOp>(op)) {
    Value r = IotaOp::create(b, loc, withBatch(resultType, n), 0);
    return std::make_pair(r, true);
  }
  if (auto g = dyn_cast<AllGatherOp>(op)) {
    // Every lane gets the batch dimension moved to `dimension`.
    Value xs = all();
    int64_t d = g.getDimension();
    int64_t rank = cast<RankedTensorType>(xs.getType()).getRank();
    SmallVector<int64_t> perm;
    for (int64_t k = 0; k < rank; ++k)
      perm.push_back(k < d ? k + 1 : k == d ? 0 : k);
    Value r = transposed(b, loc, xs, perm);
    if (g.getTiled())
      r = ReshapeOp::create(b, loc, resultType, r);
    return std::make_pair(r, false);
  }
  if (auto rs = dyn_cast<ReduceScatterOp>(op)) {
    // Sum over the lanes, then lane i takes entry (or block) i.
    Value sum = ReduceOp::create(b, loc, all(), ReduceKind::Sum, dims0);
    auto st = cast<RankedTensorType>(sum.getType());
    int64_t d = rs.getDimension();
    if (rs.getTiled()) {
      SmallVector<int64_t> shape(st.getShape());
      shape[d] /= n;
      shape.insert(shape.begin() + d, n);
      sum = ReshapeOp::create(b, loc, st.clone(shape), sum);
    }
    int64_t rank = cast<RankedTensorType>(sum.getType()).getRank();
    SmallVector<int64_t> perm = {d};
    for (int64_t k = 0; k < rank; ++k)
      if (k != d)
        perm.push_back(k);
    return std::make_pair(transposed(b, loc, sum, perm), true);
  }
  if (auto pp = dyn_cast<PpermuteOp>(op)) {
    // Lane dst reads lane src; a lane nobody sends to gets zeros.
    Value xs = all();
    auto xt = cast<RankedTensorType>(xs.getType());
    SmallVector<int64_t> from(n, -1);
    auto pairs = pp.getPairs();
    for (size_t i = 0; i + 1 < pairs.size(); i += 2)
      from[pairs[i + 1]] = pairs[i];
    SmallVector<int64_t> shape1(xt.getShape());
    shape1[0] = 1;
    SmallVector<Value> rows;
    for (int64_t dst = 0; dst < n; ++dst) {
      if (from[dst] < 0) {
        rows.push_back(
            ConstantOp::create(b, loc, splatOf(xt.clone(shape1), 0.0)));
        continue;
      }
      SmallVector<int64_t> start(xt.getRank(), 0), limit(xt.getShape()),
          strides(xt.getRank(), 1);
      start[0] = from[dst];
      limit[0] = from[dst] + 1;
      rows.push_back(SliceOp::create(b, loc, xs, start, limit, strides));
    }
    Value r = rows.size() == 1 ? rows[0]
                               : (Value)ConcatenateOp::create(b, loc, rows, 0);
    return std::make_pair(r, true);
  }
  if (auto a2a = dyn_cast<AllToAllOp>(op)) {
    // Lane i gets entry (block) i of dimension `split` from every lane j,
    // j indexing a new dimension at `concat` (tiled: merged into it).
    Value xs = all();
    auto xt = cast<RankedTensorType>(xs.getType());
    int64_t s = a2a.getSplit(), c = a2a.getConcat();
    if (a2a.getTiled()) {
      SmallVector<int64_t> shape(xt.getShape());
      shape[s + 1] /= n;
      shape.insert(shape.begin() + s + 1, n);
      xs = ReshapeOp::create(b, loc, xt.clone(shape), xs);
    }
    int64_t rank = cast<RankedTensorType>(xs.getType()).getRank();
    SmallVector<int64_t> rest;
    for (int64_t k = 0; k + 1 < rank; ++k)
      if (k != s)
        rest.push_back(k + 1);
    rest.insert(rest.begin() + c, 0);
    SmallVector<int64_t> perm = {s + 1};
    perm.append(rest.begin(), rest.end());
    Value r = transposed(b, loc, xs, perm);
    if (a2a.getTiled())
      r = ReshapeOp::create(b, loc, withBatch(resultType, n), r);
    return std::make_pair(r, true);
  }
  return op->emitError("ember-batch: unknown collective");
}

FailureOr<func::FuncOp> deriveBatchedFn(Location loc, func::FuncOp callee,
                                        ArrayRef<bool> flags, int64_t n);

/// Batches a custom-rule call by batching its callee and rule functions with
/// the same flags, so that the user's rule survives vmap.
LogicalResult batchCustom(OpBuilder &b, Operation *op, ArrayRef<Value> operands,
                          ArrayRef<bool> isBatched, int64_t n,
                          SmallVectorImpl<Value> &results) {
  auto seg = op->getAttrOfType<DenseI64ArrayAttr>("segments").asArrayRef();
  if (op->hasAttr("bwd_effects"))
    return emitUserError(op, runtime::ErrorKind::BackwardEffect)
           << "a custom_vjp whose backward pass writes a ref cannot be "
              "batched (vmap) yet";
  SmallVector<bool> args(isBatched.take_front(seg[0]));
  SmallVector<bool> caps[3];
  size_t at = seg[0];
  for (int k = 1; k < (int)std::min<size_t>(seg.size(), 4); ++k) {
    caps[k - 1].assign(isBatched.begin() + at, isBatched.begin() + at + seg[k]);
    at += seg[k];
  }
  auto lookup = [&](StringRef attr) {
    return scope.symbols->lookup<func::FuncOp>(
        op->getAttrOfType<FlatSymbolRefAttr>(attr).getValue());
  };
  auto concat = [](ArrayRef<bool> a, ArrayRef<bool> c) {
    SmallVector<bool> r(a);
    r.append(c.begin(), c.end());
    return r;
  };
  NamedAttrList attrs(op->getAttrs());
  auto callee =
      deriveBatchedFn(op->getLoc(), lookup("callee"), concat(args, caps[0]), n);
  if (failed(callee))
    return failure();
  attrs.set("callee", FlatSymbolRefAttr::get(*callee));
  if (isa<CustomJvpCallOp>(op)) {
    SmallVector<bool> jf = concat(concat(args, args), caps[1]);
    auto jvp = deriveBatchedFn(op->getLoc(), lookup("jvp"), jf, n);
    if (failed(jvp))
      return failure();
    attrs.set("jvp", FlatSymbolRefAttr::get(*jvp));
  } else {
    auto fwd =
        deriveBatchedFn(op->getLoc(), lookup("fwd"), concat(args, caps[1]), n);
    if (failed(fwd))
      return failure();
    // fwd's results are all batched now, so bwd gets batched residuals and
    // batched cotangents.
    int64_t nres = seg[4], nout = op->getNumResults();
    SmallVector<bool> bf(nres + nout, true);
    bf.append(caps[2].begin(), caps[2].end());
    auto bwd = deriveBatchedFn(op->getLoc(), lookup("bwd"), bf, n);
    if (failed(bwd))
      return failure();
    attrs.set("fwd", FlatSymbolRefAttr::get(*fwd));
    attrs.set("bwd", FlatSymbolRefAttr::get(*bwd));
  }
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  for (Type t : op->getResultTypes())
    state.addTypes(withBatch(t, n));
  state.addAttributes(attrs);
  Operation *c = b.create(state);
  results.append(c->getResults().begin(), c->getResults().end());
  return success();
}

/// Batches an ember.custom_linear (a custom_vjp's tangent map, known by its
/// transpose `bwd`): residuals and tangents are broadcast to the batch, the
/// results are batched, and `bwd` is batched to match (batched residuals
/// and cotangents, captures as they are). Forward-mode use still reaches
/// ember-inline-custom, which reports it; a transpose calls the batched bwd.
LogicalResult batchCustomLinear(OpBuilder &b, CustomLinearOp op,
                                ArrayRef<Value> operands,
                                ArrayRef<bool> isBatched, int64_t n,
                                SmallVectorImpl<Value> &results) {
  if (op.getBwdEffects())
    return emitUserError(op, runtime::ErrorKind::BackwardEffect)
           << "a custom_vjp whose backward pass writes a ref cannot be "
              "batched (vmap) yet";
  auto seg = op.getSegments();
  int64_t nres = seg[0], ntan = seg[1];
  SmallVector<Value> ins;
  SmallVector<bool> flags;
  for (auto [i, v] : llvm::enumerate(operands)) {
    bool capture = (int64_t)i >= nres + ntan;
    Value x = v;
    if (!capture && !isBatched[i])
      x = broadcastBatch(b, op.getLoc(), v, n);
    ins.push_back(x);
    if ((int64_t)i < nres)
      flags.push_back(true);
  }
  // bwd(residuals..., cotangents of the results..., captures...).
  flags.append(op.getNumResults(), true);
  for (int64_t i = nres + ntan; i < (int64_t)operands.size(); ++i)
    flags.push_back(isBatched[i]);
  auto bwd = scope.symbols->lookup<func::FuncOp>(op.getBwd());
  auto batchedBwd = deriveBatchedFn(op.getLoc(), bwd, flags, n);
  if (failed(batchedBwd))
    return failure();
  SmallVector<Type> types;
  for (Type t : op.getResultTypes())
    types.push_back(withBatch(t, n));
  auto c = CustomLinearOp::create(b, op.getLoc(), types,
                                  FlatSymbolRefAttr::get(*batchedBwd), ins,
                                  op.getSegmentsAttr(), IntegerAttr());
  results.append(c.getResults().begin(), c.getResults().end());
  return success();
}

LogicalResult batchWhile(OpBuilder &b, WhileOp op, ArrayRef<Value> operands,
                         ArrayRef<bool> isBatched, int64_t n, BatchMap &batched,
                         SmallVectorImpl<Value> &results);

/// Whether `call` carries a user's batching rule for a batch of `n`
/// (spec.md, "Batching rules on calls"): `ember.batch_rule`, the function
/// computing the call on operands batched along a new leading axis of
/// `ember.batch_size` lanes. A rule traced for another size (an enclosing
/// vmap's) is not this batch's.
bool hasBatchRule(func::CallOp call, int64_t n) {
  auto size = call->getAttrOfType<IntegerAttr>("ember.batch_size");
  return call->getAttrOfType<FlatSymbolRefAttr>("ember.batch_rule") && size &&
         size.getInt() == n;
}

/// A call batched by its rule: the rule's function on the operands, the
/// unbatched ones broadcast to the batch; every result is batched.
LogicalResult batchByRule(OpBuilder &b, func::CallOp call,
                          ArrayRef<Value> operands, ArrayRef<bool> isBatched,
                          int64_t n, SmallVectorImpl<Value> &results) {
  auto name = call->getAttrOfType<FlatSymbolRefAttr>("ember.batch_rule");
  auto rule = scope.symbols->lookup<func::FuncOp>(name.getValue());
  if (!rule || rule.isExternal())
    return call->emitError("ember-batch: the batching rule '")
           << name.getValue() << "' is not a function with a body";
  // The rule takes each operand with the batch axis, or, where it was
  // traced for an operand the same on every lane, without it (then the
  // operand must not be batched here).
  FunctionType type = rule.getFunctionType();
  bool fits = type.getNumInputs() == operands.size() &&
              type.getNumResults() == call->getNumResults();
  SmallVector<bool> takesBatch;
  for (auto [i, v] : llvm::enumerate(operands)) {
    Type plain = call->getOperand(i).getType();
    bool withAxis =
        i < type.getNumInputs() && type.getInput(i) == withBatch(plain, n);
    takesBatch.push_back(withAxis);
    fits = fits && i < type.getNumInputs() &&
           (withAxis || (type.getInput(i) == plain && !isBatched[i]));
  }
  for (auto [i, t] : llvm::enumerate(call->getResultTypes()))
    fits = fits && i < type.getNumResults() &&
           type.getResult(i) == withBatch(t, n);
  if (!fits)
    return call->emitError("ember-batch: the batching rule '")
           << name.getValue() << "' has type " << type
           << ", not the call's types with a leading axis of " << n;
  SmallVector<Value> args;
  for (auto [v, isB, takes] : llvm::zip(operands, isBatched, takesBatch))
    args.push_back(isB || !takes ? v : broadcastBatch(b, call.getLoc(), v, n));
  auto c = func::CallOp::create(b, call.getLoc(), rule, args);
  results.append(c.getResults().begin(), c.getResults().end());
  return success();
}

/// Rewrites the ops of `ops` (in order) that touch batched values with their
/// batching rules; `batched` grows with the batched results.
LogicalResult batchOps(OpBuilder &b, ArrayRef<Operation *> ops, int64_t n,
                       BatchMap &batched) {
  for (Operation *o : ops) {
    if (isa<UnrealizedConversionCastOp>(o) && o->getNumOperands() == 0)
      continue;
    if (isTransformOp(o))
      return o->emitError(
          "ember-batch: nested transformation was not expanded");
    if (overOwnAxis(o)) {
      b.setInsertionPoint(o);
      Value x;
      bool xb = false;
      if (o->getNumOperands()) {
        auto it = batched.find(o->getOperand(0));
        xb = it != batched.end();
        x = xb ? it->second : o->getOperand(0);
      }
      auto r = batchOwnCollective(b, o, x, xb, n);
      if (failed(r))
        return failure();
      if (r->second)
        batched[o->getResult(0)] = r->first;
      else { // the same on every lane: it stays per-example
        o->getResult(0).replaceAllUsesWith(r->first);
        scope.sameOnLanes[o->getResult(0)] = r->first;
      }
      continue;
    }
    bool any = llvm::any_of(o->getOperands(),
                            [&](Value v) { return batched.count(v); });
    // Region ops also read values from above, and collectives over this
    // vmap's axis in them must be rewritten.
    o->walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        any |= (bool)batched.count(v);
    });
    any |= containsOwnCollective(o);
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
    } else if (isa<CustomJvpCallOp, CustomVjpCallOp>(o)) {
      if (failed(batchCustom(b, o, operands, isBatched, n, res)))
        return failure();
    } else if (auto lin = dyn_cast<CustomLinearOp>(o)) {
      if (failed(batchCustomLinear(b, lin, operands, isBatched, n, res)))
        return failure();
    } else if (auto call = dyn_cast<func::CallOp>(o);
               call && hasBatchRule(call, n)) {
      if (failed(batchByRule(b, call, operands, isBatched, n, res)))
        return failure();
    } else if (auto call = dyn_cast<func::CallOp>(o)) {
      // A call of a private function (a closure-converted function, a
      // kernel's interpreter): a call of its batched clone, every result
      // batched.
      auto callee = scope.symbols->lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal())
        return o->emitError("ember-batch: cannot batch a call of '")
               << call.getCallee() << "', which has no body";
      if (prepareTpuKernelCall(b, call, callee, operands, isBatched, n, res)) {
        // (A loop over the examples: every result batched.)
      } else if (auto fn = deriveBatchedFn(o->getLoc(), callee, isBatched, n);
                 failed(fn)) {
        return failure();
      } else {
        carryTpuKernel(callee, *fn, isBatched, n);
        auto c = func::CallOp::create(b, o->getLoc(), *fn, operands);
        res.append(c.getResults().begin(), c.getResults().end());
      }
    } else if (isa<RefGetOp>(o)) {
      // (A read on entry of a batched ref: the lanes' values.)
      res.push_back(RefGetOp::create(b, o->getLoc(), operands[0]));
    } else if (isa<RefSetOp>(o)) {
      // (The write of a ref's last value.) A ref that is not batched holds
      // one value for every lane: JAX's error for a value that varies.
      if (!isBatched[0])
        return emitUserError(o, runtime::ErrorKind::RefWrite)
               << "performing a set/swap operation with vmapped value on an "
                  "unbatched array reference of type Ref{"
               << avalString(
                      cast<RefType>(operands[0].getType()).getValueType())
               << "}. Move the array reference to be an argument to the "
                  "vmapped function?";
      Value v = isBatched[1] ? operands[1]
                             : broadcastBatch(b, o->getLoc(), operands[1], n);
      RefSetOp::create(b, o->getLoc(), operands[0], v);
    } else if (isRefOp(o)) {
      return o->emitError("ember-batch: ref op not threaded (internal)");
    } else if (isPerDeviceCallback(o)) {
      // A callback traced inside shard_map/pmap, batched over the axis of
      // its device lanes: each device calls it on its own block, so the
      // lanes call it one after the other (the `sequential` rule, applied
      // to a copy that says so). The lanes' calls still refuse any other
      // vmap but that of another device axis they were traced under.
      Operation *copy = b.clone(*o);
      copy->setAttr("vmap_method", b.getStringAttr("sequential"));
      LogicalResult ok = cast<BatchableOpInterface>(copy).batch(
          b, operands, isBatched, n, res);
      SmallVector<Attribute> rest;
      for (auto a :
           cast<HostCallbackOp>(o).getDeviceAxes()->getAsRange<StringAttr>())
        if (a != scope.axis)
          rest.push_back(a);
      for (Operation *p = copy->getNextNode(); p; p = p->getNextNode()) {
        auto call = dyn_cast<HostCallbackOp>(p);
        if (!call ||
            call.getCallbackId() != cast<HostCallbackOp>(o).getCallbackId())
          continue;
        call.setVmapMethod("none");
        if (rest.empty())
          call->removeAttr("device_axes");
        else
          call->setAttr("device_axes", b.getArrayAttr(rest));
      }
      copy->erase();
      if (failed(ok))
        return failure();
    } else {
      auto rule = dyn_cast<BatchableOpInterface>(o);
      if (!rule)
        return o->emitError("ember-batch: cannot batch '")
               << o->getName() << "'";
      if (failed(rule.batch(b, operands, isBatched, n, res)))
        return failure();
    }
    for (auto [r, v] : llvm::zip(o->getResults(), res))
      batched[r] = v;
  }
  return success();
}

/// Erases `o` and forgets its results: a later op may be allocated at the
/// same address, and a stale entry would map its results to unrelated values.
void eraseFromMap(Operation *o, BatchMap &batched) {
  for (Value r : o->getResults()) {
    batched.erase(r);
    scope.sameOnLanes.erase(r);
  }
  o->erase();
}

/// Erases the per-example ops whose results were all replaced by batched ones.
void eraseReplaced(ArrayRef<Operation *> ops, BatchMap &batched) {
  for (Operation *o : llvm::reverse(ops))
    if (o->use_empty() && !o->hasTrait<OpTrait::IsTerminator>() &&
        (isa<UnrealizedConversionCastOp>(o) || overOwnAxis(o) ||
         llvm::any_of(o->getResults(),
                      [&](Value r) { return batched.count(r); }) ||
         // An op without results (a host callback) that read batched values
         // was rewritten by its rule.
         (o->getNumResults() == 0 &&
          llvm::any_of(o->getOperands(),
                       [&](Value v) { return batched.count(v); }))))
      eraseFromMap(o, batched);
}

/// Clones the ops of `src` (a region block) to the end of `dst`, whose
/// arguments are the carried values (batched ones where `argBatched` says so;
/// all of them when it is empty), and batches them. Returns the operands of
/// `src`'s terminator, batched (or, for an unbatched carry, as they are).
FailureOr<SmallVector<Value>> batchBlockInto(OpBuilder &b, Block &src,
                                             Block &dst, int64_t n,
                                             BatchMap &batched,
                                             ArrayRef<bool> argBatched = {}) {
  b.setInsertionPointToEnd(&dst);
  IRMapping map;
  for (auto [i, s, d] :
       llvm::enumerate(src.getArguments(), dst.getArguments())) {
    if (!argBatched.empty() && !argBatched[i]) {
      map.map(s, d); // an unbatched carried value stays as it is
      continue;
    }
    auto ex = UnrealizedConversionCastOp::create(b, s.getLoc(), s.getType(),
                                                 ValueRange{});
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
  for (auto [i, v] : llvm::enumerate(src.getTerminator()->getOperands())) {
    Value m = map.lookupOrDefault(v);
    if (Value same = scope.sameOnLanes.lookup(m))
      m = same;
    auto it = batched.find(m);
    if (it != batched.end())
      out.push_back(it->second);
    else if (!argBatched.empty() && !argBatched[i])
      out.push_back(m); // an unbatched carried value stays unbatched
    else
      out.push_back(broadcastBatch(b, v.getLoc(), m, n));
  }
  eraseReplaced(cloned, batched);
  for (Operation &o : llvm::make_early_inc_range(dst))
    if (isa<UnrealizedConversionCastOp>(o) && o.use_empty())
      eraseFromMap(&o, batched);
  return out;
}

/// Which values of `block` depend on a batched value: its arguments marked
/// in `argBatched`, or a value from above that `batched` maps.
llvm::DenseSet<Value> batchedIn(Block &block, ArrayRef<bool> argBatched,
                                const BatchMap &batched) {
  llvm::DenseSet<Value> dep;
  for (auto [arg, f] : llvm::zip(block.getArguments(), argBatched))
    if (f)
      dep.insert(arg);
  for (Operation &o : block) {
    bool any = false;
    o.walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        any |= dep.contains(v) || batched.count(v);
    });
    if (any || containsOwnCollective(&o))
      for (Value r : o.getResults())
        dep.insert(r);
  }
  return dep;
}

/// For a counted loop whose predicate depends on no batched value, the
/// carries to batch: those that depend on batched values, a fixed point over
/// the body. std::nullopt for any other loop.
std::optional<SmallVector<bool>> countedLoopCarries(WhileOp op,
                                                    ArrayRef<bool> isBatched,
                                                    const BatchMap &batched) {
  if (!op.getTripCountAttr())
    return std::nullopt;
  SmallVector<bool> flags(isBatched);
  Block &body = op.getBody().front();
  for (bool changed = true; changed;) {
    changed = false;
    llvm::DenseSet<Value> dep = batchedIn(body, flags, batched);
    for (auto [i, v] : llvm::enumerate(body.getTerminator()->getOperands()))
      if (!flags[i] && dep.contains(v))
        flags[i] = changed = true;
  }
  // The predicate, and everything else the cond region computes, must not
  // read a batched value: the cond region is cloned as it is.
  Block &cond = op.getCond().front();
  llvm::DenseSet<Value> condDep = batchedIn(cond, flags, batched);
  for (Operation &o : cond)
    for (Value v : o.getOperands())
      if (condDep.contains(v) || batched.count(v))
        return std::nullopt;
  return flags;
}

/// A counted loop (`trip_count`) runs the same number of times in every
/// lane: it stays one loop, its predicate stays per-example, and only the
/// carried values that depend on batched ones (a fixed point, as JAX's scan
/// batching rule finds it) get the batch dimension. `flags` are the
/// carries to batch (`countedLoopCarries`).
FailureOr<SmallVector<Value>> batchCountedWhile(OpBuilder &b, WhileOp op,
                                                ArrayRef<Value> operands,
                                                ArrayRef<bool> isBatched,
                                                ArrayRef<bool> flags, int64_t n,
                                                BatchMap &batched) {
  Block &bodySrc = op.getBody().front();
  Block &condSrc = op.getCond().front();
  Location loc = op.getLoc();
  SmallVector<Value> init;
  SmallVector<Type> types;
  for (auto [v, isB, f] : llvm::zip(operands, isBatched, flags)) {
    init.push_back(f && !isB ? broadcastBatch(b, loc, v, n) : v);
    types.push_back(init.back().getType());
  }
  auto loop = WhileOp::create(b, loc, types, init);
  loop.setTripCountAttr(op.getTripCountAttr());
  // Each lane's iterations are independent as the loop's were.
  loop.setParallel(op.getParallel());
  SmallVector<Location> locs(types.size(), loc);
  Block *cond = b.createBlock(&loop.getCond(), {}, types, locs);
  Block *body = b.createBlock(&loop.getBody(), {}, types, locs);
  // The predicate depends on no batched value: a plain clone.
  b.setInsertionPointToEnd(cond);
  IRMapping condMap;
  condMap.map(condSrc.getArguments(), cond->getArguments());
  for (Operation &o : condSrc)
    b.clone(o, condMap);
  auto next = batchBlockInto(b, bodySrc, *body, n, batched, flags);
  if (failed(next))
    return failure();
  b.setInsertionPointToEnd(body);
  YieldOp::create(b, loc, *next);
  b.setInsertionPointAfter(loop);
  SmallVector<Value> results;
  for (auto [r, f] : llvm::zip(loop.getResults(), flags))
    results.push_back(f ? r : broadcastBatch(b, loc, r, n));
  return results;
}

/// A while loop with batched values runs until no lane wants to continue;
/// lanes that are done keep their values (JAX's batching of while_loop).
LogicalResult batchWhile(OpBuilder &b, WhileOp op, ArrayRef<Value> operands,
                         ArrayRef<bool> isBatched, int64_t n, BatchMap &batched,
                         SmallVectorImpl<Value> &results) {
  if (auto flags = countedLoopCarries(op, isBatched, batched)) {
    auto counted =
        batchCountedWhile(b, op, operands, isBatched, *flags, n, batched);
    if (failed(counted))
      return failure();
    results.append(counted->begin(), counted->end());
    return success();
  }
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
  Value any = ReduceOp::create(b, loc, *pc, ReduceKind::Or,
                               b.getDenseI64ArrayAttr({0}));
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

FailureOr<func::FuncOp> deriveBatchedFn(Location loc, func::FuncOp callee,
                                        ArrayRef<bool> flags, int64_t n) {
  ModuleOp module = scope.module;
  SymbolTable &symbols = *scope.symbols;
  SmallVector<Type> ins, outs;
  for (auto [t, f] : llvm::zip(callee.getArgumentTypes(), flags)) {
    if (auto ref = dyn_cast<RefType>(t); ref && f)
      ins.push_back(
          RefType::get(t.getContext(), withBatch(ref.getValueType(), n)));
    else
      ins.push_back(f ? (Type)withBatch(t, n) : t);
  }
  for (Type t : callee.getResultTypes())
    outs.push_back(withBatch(t, n));
  auto fn = makePrivateFunc(module, symbols, loc,
                            (callee.getName() + "_batched").str(),
                            FunctionType::get(callee.getContext(), ins, outs));
  Block &body = fn.front();
  OpBuilder b = OpBuilder::atBlockEnd(&body);
  // Batched arguments get per-example placeholders for the cloned body.
  BatchMap batched;
  SmallVector<Value> exampleArgs;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (!flags[i]) {
      exampleArgs.push_back(arg);
      continue;
    }
    // (A batched ref's placeholder is a ref of one example's value.)
    Type example = callee.getArgumentTypes()[i];
    auto ex = UnrealizedConversionCastOp::create(b, loc, example, ValueRange{});
    exampleArgs.push_back(ex.getResult(0));
    batched[ex.getResult(0)] = arg;
  }
  // A recorded TPU kernel's call stays a call, so that batchOps batches
  // its recorded kernel too (carryTpuKernel).
  // A call with a user's batching rule stays a call, so that batchOps
  // applies the rule.
  Operation *beforeBody = body.empty() ? nullptr : &body.back();
  auto results = inlineBody(b, callee, exampleArgs, symbols,
                            /*keepKernelCalls=*/true, 0,
                            /*keepBatchRules=*/true);
  // Refs passed to the function: their values threaded through it (a read
  // on entry, a write of the last value), so that loops and conditionals
  // carry them as values.
  if (failed(results) ||
      failed(threadRefsForTransform(
          body,
          beforeBody ? beforeBody->getNextNode()
                     : (body.empty() ? nullptr : &body.front()),
          *results)))
    return failure();
  flattenCases(body, *results);
  b.setInsertionPointToEnd(&body);
  SmallVector<Operation *> ops;
  for (Operation &o : body)
    ops.push_back(&o);
  if (failed(batchOps(b, ops, n, batched)))
    return failure();
  b.setInsertionPointToEnd(&body);
  SmallVector<Value> rets;
  for (Value v : *results) {
    if (Value same = scope.sameOnLanes.lookup(v))
      v = same;
    auto it = batched.find(v);
    rets.push_back(it != batched.end() ? it->second
                                       : broadcastBatch(b, loc, v, n));
  }
  func::ReturnOp::create(b, loc, rets);
  eraseReplaced(ops, batched);
  for (Operation &o : llvm::make_early_inc_range(body))
    if (isa<UnrealizedConversionCastOp>(o) && o.use_empty())
      o.erase();
  return fn;
}

struct EmberBatchPass
    : public mlir::ember::impl::EmberBatchPassBase<EmberBatchPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    bool progress = false;
    if (failed(expandBatchOps(module, symbols, progress)))
      signalPassFailure();
  }
};

} // namespace

bool mlir::ember::isDeviceVmap(Operation *op) {
  return isa<VmapOp>(op) && op->hasAttr("ember.device_axis");
}

LogicalResult mlir::ember::expandBatchOps(ModuleOp module, SymbolTable &symbols,
                                          bool &progress, bool keepKernelCalls,
                                          bool keepDeviceVmaps) {
  scope = BatchScope{module, &symbols, StringAttr()};
  return expandReady<VmapOp>(
      module, symbols,
      [&](VmapOp op, func::FuncOp callee) {
        SmallVector<bool> flags(op.getBatched());
        scope.axis = op.getAxisNameAttr();
        auto fn =
            deriveBatchedFn(op.getLoc(), callee, flags, op.getBatchSize());
        scope.axis = StringAttr();
        return fn;
      },
      progress, keepKernelCalls, /*keepBatchRules=*/true,
      [&](VmapOp op) { return keepDeviceVmaps && isDeviceVmap(op); });
}
