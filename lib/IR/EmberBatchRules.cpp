//===- EmberBatchRules.cpp - the batching rule of every op ----------------===//
//
// Convention: a batched value carries the batch dimension first. A rule gets
// the op's operands in the batched function (each batched or not), builds the
// batched computation and returns results that all carry the batch dimension.
// Contractions stay contractions (dot_general gains a batch dimension) and
// dynamic indexing with batched indices becomes gather/scatter with batching
// dimensions: no loops.
//
//===----------------------------------------------------------------------===//
#include "ember/IR/EmberDialect.h"

#include "RuleSwitch.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::ember;

namespace {

RankedTensorType withBatch(Type t, int64_t n) { return batchedType(t, n); }

SmallVector<int64_t> shifted(ArrayRef<int64_t> v, int64_t by = 1) {
  SmallVector<int64_t> out;
  for (int64_t x : v)
    out.push_back(x + by);
  return out;
}

/// The slice size of a gather's batching dimension of size `n`: one
/// element, none when the dimension is empty (gather_c3).
int64_t batchingSliceSize(int64_t n) { return n == 0 ? 0 : 1; }

SmallVector<int64_t> prepend(int64_t first, ArrayRef<int64_t> rest) {
  SmallVector<int64_t> out = {first};
  out.append(rest.begin(), rest.end());
  return out;
}

struct BatchCtx {
  OpBuilder &b;
  Location loc;
  int64_t n;

  /// `v` with a leading batch dimension (broadcast when it has none).
  Value batched(Value v, bool isBatched) {
    if (isBatched)
      return v;
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> dims;
    for (int64_t i = 0; i < t.getRank(); ++i)
      dims.push_back(i + 1);
    return BroadcastInDimOp::create(b, loc, withBatch(t, n), v,
                                    b.getDenseI64ArrayAttr(dims));
  }

  /// A 0-d i32 zero: the start index of the batch dimension.
  Value zeroIndex() {
    return ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(RankedTensorType::get({}, b.getI32Type()),
                               b.getI32IntegerAttr(0)));
  }

  /// The [n, r] i64 matrix of per-example start indices from r scalar index
  /// operands (batched or not); with `hi`, index k is clamped to [0, hi[k]].
  Value indexMatrix(ArrayRef<Value> idx, ArrayRef<bool> isB,
                    ArrayRef<int64_t> hi = {}) {
    SmallVector<Value> cols;
    auto colType = RankedTensorType::get({n, 1}, b.getI64Type());
    auto vecType = RankedTensorType::get({n}, b.getI64Type());
    for (auto [k, v] : llvm::enumerate(idx)) {
      Value vb = batched(v, isB[k]); // [n]
      if (cast<RankedTensorType>(vb.getType()).getElementType() !=
          b.getI64Type())
        vb = ConvertOp::create(b, loc, vecType, vb);
      if (!hi.empty()) {
        auto bound = [&](int64_t x) {
          return (Value)ConstantOp::create(b, loc, splatOf(vecType, (double)x));
        };
        vb = ClampOp::create(b, loc, bound(0), vb, bound(hi[k]));
      }
      cols.push_back(ReshapeOp::create(b, loc, colType, vb));
    }
    return cols.size() == 1 ? cols[0]
                            : (Value)ConcatenateOp::create(b, loc, cols, 1);
  }

  /// Re-creates `op` with new operands, prefixed result types and attributes
  /// updated by `attrs`.
  Operation *recreate(Operation *op, ValueRange operands, NamedAttrList attrs) {
    OperationState state(loc, op->getName());
    state.addOperands(operands);
    for (Type t : op->getResultTypes())
      state.addTypes(withBatch(t, n));
    state.addAttributes(attrs);
    return b.create(state);
  }
};

/// `x` (batched) padded per example with the batched 0-d values `pv`: pad a
/// mask of the data positions and select between the padded data and the
/// broadcast padding values.
Value padPerExample(BatchCtx &c, Value x, Value pv, ArrayRef<int64_t> low,
                    ArrayRef<int64_t> high, ArrayRef<int64_t> interior) {
  OpBuilder &b = c.b;
  auto xt = cast<RankedTensorType>(x.getType());
  auto scalar = [&](Type e, double v) {
    return (Value)ConstantOp::create(b, c.loc,
                                     splatOf(RankedTensorType::get({}, e), v));
  };
  auto padded = [&](Value v, Value with) {
    return (Value)PadOp::create(b, c.loc, v, with,
                                b.getDenseI64ArrayAttr(prepend(0, low)),
                                b.getDenseI64ArrayAttr(prepend(0, high)),
                                b.getDenseI64ArrayAttr(prepend(0, interior)));
  };
  Value data = padded(x, scalar(xt.getElementType(), 0.0));
  Value ones =
      ConstantOp::create(b, c.loc, splatOf(xt.clone(b.getI1Type()), 1.0));
  Value mask = padded(ones, scalar(b.getI1Type(), 0.0));
  auto outT = cast<RankedTensorType>(data.getType());
  Value fill =
      BroadcastInDimOp::create(b, c.loc, outT, pv, b.getDenseI64ArrayAttr({0}));
  return SelectOp::create(b, c.loc, outT, mask, data, fill);
}

/// The identity of a reduction kind, as a splat of `t`.
DenseElementsAttr identityOf(RankedTensorType t, ReduceKind kind) {
  Type e = t.getElementType();
  if (auto f = dyn_cast<FloatType>(e)) {
    return DenseElementsAttr::get(
        t, reductionIdentity(f.getFloatSemantics(), kind));
  }
  auto it = cast<IntegerType>(e);
  unsigned w = it.getWidth();
  bool u = it.isUnsigned() || w == 1;
  APInt v = kind == ReduceKind::Prod  ? APInt(w, 1)
            : kind == ReduceKind::And ? APInt::getAllOnes(w)
            : kind == ReduceKind::Max
                ? (u ? APInt::getMinValue(w) : APInt::getSignedMinValue(w))
            : kind == ReduceKind::Min
                ? (u ? APInt::getMaxValue(w) : APInt::getSignedMaxValue(w))
                : APInt::getZero(w);
  return DenseElementsAttr::get(t, v);
}

/// The elementwise op that combines two partial results of a reduction.
Value combineByKind(OpBuilder &b, Location loc, ReduceKind kind, Value x,
                    Value y) {
  switch (kind) {
  case ReduceKind::Sum:
    return AddOp::create(b, loc, x, y);
  case ReduceKind::Prod:
    return MulOp::create(b, loc, x, y);
  case ReduceKind::Max:
    return MaxOp::create(b, loc, x, y);
  case ReduceKind::Min:
    return MinOp::create(b, loc, x, y);
  case ReduceKind::And:
    return AndOp::create(b, loc, x, y);
  case ReduceKind::Or:
    return OrOp::create(b, loc, x, y);
  case ReduceKind::Xor:
    return XorOp::create(b, loc, x, y);
  }
  llvm_unreachable("unknown reduce kind");
}

} // namespace

RankedTensorType mlir::ember::batchedType(Type t, int64_t n) {
  auto r = cast<RankedTensorType>(t);
  SmallVector<int64_t> shape = {n};
  shape.append(r.getShape().begin(), r.getShape().end());
  return RankedTensorType::get(shape, r.getElementType());
}

LogicalResult mlir::ember::buildBatch(Operation *op, OpBuilder &b,
                                      ArrayRef<Value> operands,
                                      ArrayRef<bool> isBatched, int64_t n,
                                      SmallVectorImpl<Value> &results,
                                      RuleMode mode) {
  BatchCtx c{b, op->getLoc(), n};
  auto all = [&]() {
    SmallVector<Value> vs;
    for (auto [v, isB] : llvm::zip(operands, isBatched))
      vs.push_back(c.batched(v, isB));
    return vs;
  };
  auto attrs = [&]() { return NamedAttrList(op->getAttrs()); };
  auto done = [&](Operation *newOp) {
    results.append(newOp->getResults().begin(), newOp->getResults().end());
    return success();
  };
  auto doneValue = [&](Value v) {
    results.push_back(v);
    return success();
  };
  auto setArray = [&](NamedAttrList &a, StringRef name, ArrayRef<int64_t> v) {
    a.set(name, b.getDenseI64ArrayAttr(v));
  };
  auto arrayAttr = [&](StringRef name) {
    return cast<DenseI64ArrayAttr>(op->getAttr(name)).asArrayRef();
  };
  auto intAttr = [&](StringRef name) {
    return cast<IntegerAttr>(op->getAttr(name)).getInt();
  };

  // Elementwise ops (and ops that act per element like them): broadcast the
  // unbatched operands and apply the op to the batched shapes.
  bool perElement = op->hasTrait<OpTrait::Elementwise>() ||
                    isa<StopGradientOp, CheckpointNameOp, BitcastConvertOp>(op);
  if (mode == RuleMode::Probe && (perElement || isa<OptimizationBarrierOp>(op)))
    return success();
  if (perElement)
    return done(c.recreate(op, all(), attrs()));
  if (isa<OptimizationBarrierOp>(op)) { // unbatched operands stay unbatched
    Operation *bar = OptimizationBarrierOp::create(b, c.loc, operands);
    for (auto [r, isB] : llvm::zip(bar->getResults(), isBatched))
      results.push_back(isB ? r : c.batched(r, false));
    return success();
  }

  return RuleSwitch(op, mode)
      .Case<ConstantOp, IotaOp, AxisIndexOp>([&](auto o) {
        // No operands, so nothing batched: the same value for every example.
        // (ember-batch keeps such ops as they are; this is the rule's meaning.)
        Operation *same = b.clone(*o);
        results.push_back(c.batched(same->getResult(0), false));
        return success();
      })
      .Case([&](BroadcastInDimOp o) {
        NamedAttrList a = attrs();
        setArray(a, "broadcast_dimensions",
                 prepend(0, shifted(o.getBroadcastDimensions())));
        return done(c.recreate(op, all(), a));
      })
      .Case([&](ReshapeOp o) { return done(c.recreate(op, all(), attrs())); })
      .Case([&](TransposeOp o) {
        NamedAttrList a = attrs();
        setArray(a, "permutation", prepend(0, shifted(o.getPermutation())));
        return done(c.recreate(op, all(), a));
      })
      .Case([&](SliceOp o) {
        NamedAttrList a = attrs();
        setArray(a, "start_indices", prepend(0, o.getStartIndices()));
        setArray(a, "limit_indices", prepend(n, o.getLimitIndices()));
        setArray(a, "strides", prepend(1, o.getStrides()));
        return done(c.recreate(op, all(), a));
      })
      .Case<ReverseOp>([&](auto o) {
        NamedAttrList a = attrs();
        setArray(a, "dimensions", shifted(arrayAttr("dimensions")));
        return done(c.recreate(op, all(), a));
      })
      .Case([&](ReduceOp o) {
        NamedAttrList a = attrs();
        setArray(a, "dimensions", shifted(o.getDimensions()));
        return done(c.recreate(op, all(), a));
      })
      // Collectives over an axis bound by an enclosing vmap (ember-batch
      // handles those over the axis of the vmap it expands): they act per
      // lane of that axis, so the new batch dimension is one more dimension.
      .Case<PsumOp, PmaxOp, PminOp, PvaryOp, PpermuteOp>(
          [&](auto o) { return done(c.recreate(op, all(), attrs())); })
      .Case<AllGatherOp, ReduceScatterOp>([&](auto o) {
        NamedAttrList a = attrs();
        a.set("dimension", b.getI64IntegerAttr(o.getDimension() + 1));
        return done(c.recreate(op, all(), a));
      })
      .Case([&](AllToAllOp o) {
        NamedAttrList a = attrs();
        a.set("split", b.getI64IntegerAttr(o.getSplit() + 1));
        a.set("concat", b.getI64IntegerAttr(o.getConcat() + 1));
        return done(c.recreate(op, all(), a));
      })
      .Case<ArgMaxOp, ArgMinOp, CumulativeOp>([&](auto o) {
        NamedAttrList a = attrs();
        a.set("axis", b.getI64IntegerAttr(intAttr("axis") + 1));
        return done(c.recreate(op, all(), a));
      })
      .Case([&](ConcatenateOp o) {
        NamedAttrList a = attrs();
        a.set("dimension", b.getI64IntegerAttr(o.getDimension() + 1));
        return done(c.recreate(op, all(), a));
      })
      // Batch dimensions are leading dimensions of these ops already.
      .Case<CholeskyOp, EighOp, FftOp, LuOp, QrOp, SvdOp, TriangularSolveOp>(
          [&](auto o) { return done(c.recreate(op, all(), attrs())); })
      .Case([&](SortOp o) {
        NamedAttrList a = attrs();
        a.set("dimension", b.getI64IntegerAttr(o.getDimension() + 1));
        return done(c.recreate(op, all(), a));
      })
      .Case([&](PadOp o) -> LogicalResult {
        NamedAttrList a = attrs();
        setArray(a, "edge_padding_low", prepend(0, o.getEdgePaddingLow()));
        setArray(a, "edge_padding_high", prepend(0, o.getEdgePaddingHigh()));
        setArray(a, "interior_padding", prepend(0, o.getInteriorPadding()));
        Value x = c.batched(operands[0], isBatched[0]);
        if (!isBatched[1])
          return done(c.recreate(op, {x, operands[1]}, a));
        return doneValue(padPerExample(c, x, operands[1], o.getEdgePaddingLow(),
                                       o.getEdgePaddingHigh(),
                                       o.getInteriorPadding()));
      })
      .Case([&](ReduceWindowOp o) -> LogicalResult {
        NamedAttrList a = attrs();
        setArray(a, "window_dimensions", prepend(1, o.getWindowDimensions()));
        setArray(a, "window_strides", prepend(1, o.getWindowStrides()));
        setArray(a, "padding_low", prepend(0, o.getPaddingLow()));
        setArray(a, "padding_high", prepend(0, o.getPaddingHigh()));
        Value x = c.batched(operands[0], isBatched[0]);
        if (!isBatched[1])
          return done(c.recreate(op, {x, operands[1]}, a));
        // A per-example init value: pad with it per example, reduce with the
        // kind's identity and no padding, then combine with the init once.
        SmallVector<int64_t> none(o.getPaddingLow().size(), 0);
        Value padded = padPerExample(c, x, operands[1], o.getPaddingLow(),
                                     o.getPaddingHigh(), none);
        auto elem = getElementTypeOrSelf(x.getType());
        Value ident = ConstantOp::create(
            b, c.loc, identityOf(RankedTensorType::get({}, elem), o.getKind()));
        setArray(a, "padding_low", prepend(0, none));
        setArray(a, "padding_high", prepend(0, none));
        Operation *rw = c.recreate(op, {padded, ident}, a);
        Value r = rw->getResult(0);
        auto rt = cast<RankedTensorType>(r.getType());
        Value init = BroadcastInDimOp::create(b, c.loc, rt, operands[1],
                                              b.getDenseI64ArrayAttr({0}));
        return doneValue(combineByKind(b, c.loc, o.getKind(), r, init));
      })
      .Case([&](DotGeneralOp o) {
        auto lb = o.getLhsBatchingDimensions(),
             rb = o.getRhsBatchingDimensions();
        auto lc = o.getLhsContractingDimensions(),
             rc = o.getRhsContractingDimensions();
        auto resType = withBatch(o.getType(), n);
        if (isBatched[0] && isBatched[1]) {
          // The vmapped dimension becomes the first batch dimension.
          auto d = DotGeneralOp::create(
              b, c.loc, resType, operands[0], operands[1],
              b.getDenseI64ArrayAttr(prepend(0, shifted(lb))),
              b.getDenseI64ArrayAttr(prepend(0, shifted(rb))),
              b.getDenseI64ArrayAttr(shifted(lc)),
              b.getDenseI64ArrayAttr(shifted(rc)), o.getPrecisionAttr());
          return doneValue(d);
        }
        // One side batched: the vmapped dimension is a free dimension of that
        // side; move it to the front of the result afterwards.
        bool left = isBatched[0];
        auto lType = cast<RankedTensorType>(operands[0].getType());
        auto rType = cast<RankedTensorType>(operands[1].getType());
        SmallVector<int64_t> nlb =
            left ? shifted(lb) : SmallVector<int64_t>(lb);
        SmallVector<int64_t> nlc =
            left ? shifted(lc) : SmallVector<int64_t>(lc);
        SmallVector<int64_t> nrb =
            left ? SmallVector<int64_t>(rb) : shifted(rb);
        SmallVector<int64_t> nrc =
            left ? SmallVector<int64_t>(rc) : shifted(rc);
        // Result layout: batch, lhs free (in order), rhs free (in order).
        int64_t nb = lb.size();
        int64_t lFree = lType.getRank() - nlb.size() - nlc.size();
        int64_t pos =
            left ? nb : nb + lFree; // the vmapped dim is the first free dim
        auto outType = o.getType();
        SmallVector<int64_t> shape(outType.getShape());
        shape.insert(shape.begin() + pos, n);
        auto dotType = RankedTensorType::get(shape, outType.getElementType());
        (void)rType;
        Value d = DotGeneralOp::create(
            b, c.loc, dotType, operands[0], operands[1],
            b.getDenseI64ArrayAttr(nlb), b.getDenseI64ArrayAttr(nrb),
            b.getDenseI64ArrayAttr(nlc), b.getDenseI64ArrayAttr(nrc),
            o.getPrecisionAttr());
        if (pos == 0)
          return doneValue(d);
        SmallVector<int64_t> perm = {pos};
        for (int64_t i = 0; i < (int64_t)shape.size(); ++i)
          if (i != pos)
            perm.push_back(i);
        return doneValue(
            TransposeOp::create(b, c.loc, d, b.getDenseI64ArrayAttr(perm)));
      })
      .Case([&](DynamicSliceOp o) -> LogicalResult {
        auto sizes = o.getSliceSizes();
        bool indicesBatched =
            llvm::any_of(isBatched.drop_front(), [](bool x) { return x; });
        Value x = c.batched(operands[0], isBatched[0]);
        if (!indicesBatched) {
          SmallVector<Value> idx = {c.zeroIndex()};
          idx.append(operands.begin() + 1, operands.end());
          return doneValue(DynamicSliceOp::create(
              b, c.loc, x, idx, b.getDenseI64ArrayAttr(prepend(n, sizes))));
        }
        // Batched start indices: a gather whose operand and indices share
        // the batch dimension (gather's clip mode clamps like dynamic_slice).
        int64_t r = sizes.size();
        Value indices =
            c.indexMatrix(operands.drop_front(), isBatched.drop_front());
        SmallVector<int64_t> offsetDims, startMap;
        for (int64_t i = 0; i < r; ++i) {
          offsetDims.push_back(i + 1);
          startMap.push_back(i + 1);
        }
        auto g = GatherOp::create(
            b, c.loc, withBatch(o.getType(), n), x, indices,
            b.getDenseI64ArrayAttr(offsetDims), b.getDenseI64ArrayAttr({}),
            b.getDenseI64ArrayAttr({0}), b.getDenseI64ArrayAttr({0}),
            b.getDenseI64ArrayAttr(startMap), b.getI64IntegerAttr(1),
            b.getDenseI64ArrayAttr(prepend(batchingSliceSize(n), sizes)),
            IndexModeAttr::get(b.getContext(), IndexMode::Clip));
        return doneValue(g);
      })
      .Case([&](DynamicUpdateSliceOp o) -> LogicalResult {
        bool indicesBatched =
            llvm::any_of(isBatched.drop_front(2), [](bool x) { return x; });
        Value x = c.batched(operands[0], isBatched[0]);
        Value u = c.batched(operands[1], isBatched[1]);
        if (!indicesBatched) {
          SmallVector<Value> idx = {c.zeroIndex()};
          idx.append(operands.begin() + 2, operands.end());
          return doneValue(
              DynamicUpdateSliceOp::create(b, c.loc, x.getType(), x, u, idx));
        }
        // Batched start indices: clamp like dynamic_update_slice does, then
        // scatter whole windows with a shared batch dimension.
        auto upd = o.getUpdate().getType();
        auto operand = o.getOperand().getType();
        int64_t r = upd.getRank();
        SmallVector<int64_t> hi;
        for (int64_t k = 0; k < r; ++k)
          hi.push_back(operand.getDimSize(k) - upd.getDimSize(k));
        Value indices =
            c.indexMatrix(operands.drop_front(2), isBatched.drop_front(2), hi);
        SmallVector<int64_t> windowDims, toOperand;
        for (int64_t i = 0; i < r; ++i) {
          windowDims.push_back(i + 1);
          toOperand.push_back(i + 1);
        }
        auto s = ScatterOp::create(
            b, c.loc, x.getType(), x, indices, u,
            b.getDenseI64ArrayAttr(windowDims), b.getDenseI64ArrayAttr({}),
            b.getDenseI64ArrayAttr({0}), b.getDenseI64ArrayAttr({0}),
            b.getDenseI64ArrayAttr(toOperand), b.getI64IntegerAttr(1),
            ScatterKindAttr::get(b.getContext(), ScatterKind::Replace),
            IndexModeAttr::get(b.getContext(), IndexMode::Clip));
        return doneValue(s);
      })
      .Case([&](GatherOp o) {
        Value x = c.batched(operands[0], isBatched[0]);
        Value idx = c.batched(operands[1], isBatched[1]);
        auto g = GatherOp::create(
            b, c.loc, withBatch(o.getType(), n), x, idx,
            b.getDenseI64ArrayAttr(shifted(o.getOffsetDims())),
            b.getDenseI64ArrayAttr(shifted(o.getCollapsedSliceDims())),
            b.getDenseI64ArrayAttr(
                prepend(0, shifted(o.getOperandBatchingDims()))),
            b.getDenseI64ArrayAttr(
                prepend(0, shifted(o.getStartIndicesBatchingDims()))),
            b.getDenseI64ArrayAttr(shifted(o.getStartIndexMap())),
            b.getI64IntegerAttr(o.getIndexVectorDim() + 1),
            b.getDenseI64ArrayAttr(
                prepend(batchingSliceSize(n), o.getSliceSizes())),
            o.getModeAttr());
        return doneValue(g);
      })
      .Case([&](ScatterOp o) {
        Value x = c.batched(operands[0], isBatched[0]);
        Value idx = c.batched(operands[1], isBatched[1]);
        Value u = c.batched(operands[2], isBatched[2]);
        auto s = ScatterOp::create(
            b, c.loc, x.getType(), x, idx, u,
            b.getDenseI64ArrayAttr(shifted(o.getUpdateWindowDims())),
            b.getDenseI64ArrayAttr(shifted(o.getInsertedWindowDims())),
            b.getDenseI64ArrayAttr(
                prepend(0, shifted(o.getOperandBatchingDims()))),
            b.getDenseI64ArrayAttr(
                prepend(0, shifted(o.getScatterIndicesBatchingDims()))),
            b.getDenseI64ArrayAttr(shifted(o.getScatterDimsToOperandDims())),
            b.getI64IntegerAttr(o.getIndexVectorDim() + 1), o.getKindAttr(),
            o.getModeAttr());
        return doneValue(s);
      })
      .Case([&](HostCallbackOp o) -> LogicalResult {
        StringRef method = o.getVmapMethod();
        if (method == "ordered")
          return emitUserError(o, runtime::ErrorKind::OrderedNotBatchable)
                 << "Cannot `vmap` ordered IO callback.";
        if (method == "none")
          return emitUserError(o, runtime::ErrorKind::NotBatchable)
                 << ("cannot be batched: this callback has no vmap_method "
                     "(pass vmap_method='sequential', 'expand_dims' or "
                     "'broadcast_all')");
        if (method != "sequential") {
          // One call on the batched inputs; `expand_dims` gives unbatched
          // inputs a leading dimension of 1 instead of broadcasting them,
          // `legacy_vectorized` leaves them as they are.
          SmallVector<Value> ins;
          for (auto [v, isB] : llvm::zip(operands, isBatched)) {
            if (isB || method == "broadcast_all") {
              ins.push_back(c.batched(v, isB));
              continue;
            }
            if (method == "legacy_vectorized") {
              ins.push_back(v);
              continue;
            }
            ins.push_back(
                ReshapeOp::create(b, c.loc, withBatch(v.getType(), 1), v));
          }
          return done(c.recreate(op, ins, attrs()));
        }
        // One call per example, in order; results are stacked.
        SmallVector<SmallVector<Value>> perResult(o->getNumResults());
        for (int64_t i = 0; i < n; ++i) {
          SmallVector<Value> ins;
          for (auto [v, isB] : llvm::zip(operands, isBatched)) {
            if (!isB) {
              ins.push_back(v);
              continue;
            }
            auto t = cast<RankedTensorType>(v.getType());
            SmallVector<int64_t> start(t.getRank(), 0), limit(t.getShape()),
                strides(t.getRank(), 1);
            start[0] = i;
            limit[0] = i + 1;
            Value s = SliceOp::create(
                b, c.loc, v, b.getDenseI64ArrayAttr(start),
                b.getDenseI64ArrayAttr(limit), b.getDenseI64ArrayAttr(strides));
            auto unbatched = RankedTensorType::get(t.getShape().drop_front(),
                                                   t.getElementType());
            ins.push_back(ReshapeOp::create(b, c.loc, unbatched, s));
          }
          OperationState state(c.loc, op->getName());
          state.addOperands(ins);
          state.addTypes(op->getResultTypes());
          state.addAttributes(op->getAttrs());
          Operation *call = b.create(state);
          for (auto [k, r] : llvm::enumerate(call->getResults()))
            perResult[k].push_back(
                ReshapeOp::create(b, c.loc, withBatch(r.getType(), 1), r));
        }
        for (auto &parts : perResult)
          results.push_back(parts.size() == 1 ? parts[0]
                                              : (Value)ConcatenateOp::create(
                                                    b, c.loc, parts, 0));
        return success();
      })
      // Run-time stacks (reverse mode through a while_loop): the lanes share
      // one stack. A batched (masked) forward loop pushes every lane's values
      // at each of its iterations (lanes = n), so lane j's push k is lane j
      // of push k; the backward loop reads lane j at its own index. When only
      // the backward loop is batched (vmap of a VJP over cotangents, as in
      // jacrev), the pushes have no lanes and every lane reads whole pushes
      // (the runtime knows from the stack). The handles of the lanes are the
      // stack's or 0 (a lane that never ran): their maximum.
      .Case<StackPushOp, StackPopOp, StackFreeOp>([&](Operation *o)
                                                      -> LogicalResult {
        auto push = dyn_cast<StackPushOp>(o);
        auto pop = dyn_cast<StackPopOp>(o);
        if ((pop && pop.getLanes()) || (push && push.getLanes()))
          return emitUserError(o, runtime::ErrorKind::NotBatchable)
                 << ("cannot be batched: vmap of vmap of the reverse-mode "
                     "derivative of a while_loop with a run-time trip count is "
                     "not "
                     "supported; use fori_loop with static bounds or lax.scan");
        Value handle = operands[0];
        if (isBatched[0])
          handle = ReduceOp::create(b, c.loc, handle, ReduceKind::Max,
                                    b.getDenseI64ArrayAttr({0}));
        auto shared = [&](Value h) { return c.batched(h, false); };
        if (isa<StackFreeOp>(o)) {
          StackFreeOp::create(b, c.loc, handle);
          return success();
        }
        if (push) {
          SmallVector<Value> vals;
          for (auto [v, isB] :
               llvm::zip(operands.drop_front(), isBatched.drop_front()))
            vals.push_back(c.batched(v, isB));
          Value h = StackPushOp::create(b, c.loc, handle.getType(), handle,
                                        vals, b.getI64IntegerAttr(n));
          results.push_back(shared(h));
          return success();
        }
        SmallVector<Type> types;
        for (Type t : pop.getValues().getTypes())
          types.push_back(withBatch(t, n));
        auto batchedPop = StackPopOp::create(
            b, c.loc, handle.getType(), types, handle,
            c.batched(operands[1], isBatched[1]), b.getI64IntegerAttr(n));
        results.push_back(shared(batchedPop.getResult()));
        results.append(batchedPop.getValues().begin(),
                       batchedPop.getValues().end());
        return success();
      })
      .Default([&](Operation *o) -> LogicalResult {
        return o->emitOpError("has no batching rule");
      });
}
