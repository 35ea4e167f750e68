//===- LowerReductions.cpp - reductions and sort --------------------------===//
//
// reduce, argmax/argmin, cumulative, reduce_window and sort.
//
//===----------------------------------------------------------------------===//
#include "EmberToLinalgCommon.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::ember;

namespace {

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Full reductions of at least this many elements run as two stages: rows
/// first (a parallel loop, which ember-split-rows gives to both cores), then
/// the row results.
constexpr int64_t kSplitReductionMinElements = 1 << 18;

/// Float sums over an outer dimension at least this long are summed in
/// blocks (see ReduceLowering).
constexpr int64_t kTreeReductionMinLength = 256;

/// Reduces `in` over `dims` into `type` with the combiner of `kind`, starting
/// from `init` (the combiner's identity when null). Reassociation is allowed
/// (as XLA's reductions do), so LLVM vectorizes the loop with several partial
/// accumulators. With `anyZeroSign`, the combiner may also return either
/// zero for -0 and +0 (`nsz`): a float max or min is then three vector
/// instructions an element instead of six (the order of the two zeros takes
/// a blend and a mask; docs/decisions.md, "The rows of a large max or min
/// ignore the sign of zero").
Value buildReduction(OpBuilder &b, Location loc, Value in,
                     ArrayRef<int64_t> dims, RankedTensorType type,
                     ReduceKind kind, Type orig, Value init = nullptr,
                     bool anyZeroSign = false) {
  Type elem = type.getElementType();
  if (!init)
    init = filledTensor(
        b, loc, type,
        constScalar(b, loc, combinerIdentity(b, kind, elem, orig)));
  auto r = linalg::ReduceOp::create(
      b, loc, in, init, dims, [&](OpBuilder &bb, Location l, ValueRange a) {
        Value v = buildCombiner(bb, l, kind, a[0], a[1], orig);
        auto flags = arith::FastMathFlags::reassoc;
        if (anyZeroSign)
          flags = flags | arith::FastMathFlags::nsz;
        if (auto fm = v.getDefiningOp<arith::ArithFastMathInterface>())
          v.getDefiningOp()->setAttr(
              fm.getFastMathAttrName(),
              arith::FastMathFlagsAttr::get(bb.getContext(), flags));
        linalg::YieldOp::create(bb, l, v);
      });
  return r.getResult(0);
}

/// The linalg.generic defining `v` when it is elementwise: all loops
/// parallel, every operand and the result indexed by the identity over one
/// shape, a body that does not read the output. Else null.
linalg::GenericOp elementwiseGeneric(Value v) {
  auto g = v.getDefiningOp<linalg::GenericOp>();
  if (!g || g->getNumResults() != 1 || g.getNumDpsInits() != 1 ||
      g.getNumDpsInputs() == 0 || g.getNumLoops() != g.getNumParallelLoops())
    return nullptr;
  for (AffineMap m : g.getIndexingMapsArray())
    if (!m.isIdentity())
      return nullptr;
  Block &body = g.getRegion().front();
  if (!body.getArguments().back().use_empty())
    return nullptr;
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  for (Value in : g.getDpsInputs()) {
    auto t = dyn_cast<RankedTensorType>(in.getType());
    if (!t || t.getShape() != shape)
      return nullptr;
  }
  return g;
}

/// `g` (see elementwiseGeneric) again, one-dimensional, on `sliceOf` of each
/// of its operands.
Value cloneOnSlice(OpBuilder &b, Location loc, linalg::GenericOp g,
                   function_ref<Value(Value)> sliceOf) {
  SmallVector<Value> inputs;
  for (Value in : g.getDpsInputs())
    inputs.push_back(sliceOf(in));
  auto outType = cast<RankedTensorType>(g->getResult(0).getType());
  int64_t size = cast<RankedTensorType>(inputs[0].getType()).getDimSize(0);
  Block &body = g.getRegion().front();
  return buildGeneric(b, loc, inputs, outType.clone({size}),
                      [&](OpBuilder &nb, Location nl, ValueRange args) {
                        IRMapping map;
                        for (auto [from, to] :
                             llvm::zip(body.getArguments(), args))
                          map.map(from, to);
                        for (Operation &o : body.without_terminator())
                          nb.clone(o, map);
                        SmallVector<Value> r;
                        for (Value y : body.getTerminator()->getOperands())
                          r.push_back(map.lookupOrDefault(y));
                        return r;
                      })[0];
}

struct ReduceLowering : public OpConversionPattern<ReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    Type orig = op.getType().getElementType();
    Type elem = type.getElementType();
    if (!combinerIdentity(rewriter, op.getKind(), elem, orig))
      return rewriter.notifyMatchFailure(op,
                                         "no identity for this kind and type");
    Value in = adaptor.getOperand();
    auto inType = cast<RankedTensorType>(in.getType());
    ReduceKind kind = op.getKind();
    // A large full reduction: rows of the flattened operand, then the rows'
    // results (the same order for any number of threads). The row count is
    // the largest from 64 down to 8 that divides the size (the view is then a
    // reshape, which fuses with the producers); when none does, 64 rows take
    // all but the last n % 64 elements, whose reduction is where the rows'
    // results start. A slice of an elementwise producer's result would keep
    // it from fusing (one more pass over memory: `sum(x * x)` 11% slower on
    // two cores than one fused serial loop), so an elementwise linalg.generic
    // producer used only here is computed twice instead, on slices of its
    // operands (`cloneOnSlice`); other producers that would fuse (converts,
    // broadcasts) keep the reduction one loop.
    int64_t n = inType.hasStaticShape() ? inType.getNumElements() : 0;
    int64_t rows = 0;
    linalg::GenericOp sliceable;
    // A function ember-partition will split over processes keeps its
    // reductions one op each: upstream partitioning covers no reshape, and
    // each process sums only its block (the blocks' sums are combined
    // across processes).
    auto fn = op->getParentOfType<FunctionOpInterface>();
    bool reshapes = !(fn && hasSplitAxes(fn));
    if (reshapes && type.getRank() == 0 && n >= kSplitReductionMinElements) {
      for (int64_t k = 64; k >= 8 && !rows; --k)
        if (n % k == 0)
          rows = k;
      Operation *producer = op.getOperand().getDefiningOp();
      bool fuses = producer && (producer->hasTrait<OpTrait::Elementwise>() ||
                                isa<ConvertOp, BroadcastInDimOp>(producer));
      if (!rows && fuses && op.getOperand().hasOneUse())
        sliceable = elementwiseGeneric(in);
      if (!rows && (!fuses || sliceable))
        rows = 64;
    }
    if (rows) {
      int64_t body = n / rows * rows, tail = n - body;
      SmallVector<ReassociationIndices> all(1);
      for (int64_t d = 0; d < inType.getRank(); ++d)
        all[0].push_back(d);
      Value flat = inType.getRank() == 1
                       ? in
                       : tensor::CollapseShapeOp::create(rewriter, loc, in, all)
                             .getResult();
      auto slice = [&](Value whole, int64_t offset, int64_t size) -> Value {
        return tensor::ExtractSliceOp::create(
            rewriter, loc, whole,
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(offset)},
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(size)},
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)});
      };
      auto piece = [&](int64_t offset, int64_t size) -> Value {
        if (offset == 0 && size == n)
          return flat;
        if (sliceable)
          return cloneOnSlice(rewriter, loc, sliceable, [&](Value operand) {
            Value f = operand;
            if (inType.getRank() != 1)
              f = tensor::CollapseShapeOp::create(rewriter, loc, operand, all)
                      .getResult();
            return slice(f, offset, size);
          });
        return slice(flat, offset, size);
      };
      Value grid = tensor::ExpandShapeOp::create(
          rewriter, loc, inType.clone({rows, body / rows}), piece(0, body),
          ArrayRef<ReassociationIndices>{{0, 1}});
      // The rows of a large max or min leave the sign of a zero maximum
      // unspecified, as XLA's vectorized reductions do (JAX's max of a
      // million -0.0 and one +0.0 is -0.0); the row results are combined
      // with the order of zeros kept.
      bool minMax = kind == ReduceKind::Max || kind == ReduceKind::Min;
      Value perRow = buildReduction(rewriter, loc, grid, {1},
                                    type.clone({rows}), kind, orig, nullptr,
                                    /*anyZeroSign=*/minMax);
      Value start = tail ? buildReduction(rewriter, loc, piece(body, tail), {0},
                                          type, kind, orig)
                         : Value();
      rewriter.replaceOp(op, buildReduction(rewriter, loc, perRow, {0}, type,
                                            kind, orig, start));
      return success();
    }
    // A long float sum over one dimension that is not the innermost: each
    // output is a sequential sum (the vectorized loop runs across the inner
    // dimensions), whose rounding error grows with its length. Split the
    // dimension into blocks, sum each block, then the blocks' sums (as
    // XLA's CPU tree reduction rewriter does): a column mean of 10,000 f32
    // values was 50 ulp off, now about 1 (docs/decisions.md).
    auto dims = op.getDimensions();
    if (reshapes && kind == ReduceKind::Sum &&
        isa<FloatType, ComplexType>(elem) && dims.size() == 1 &&
        dims[0] != inType.getRank() - 1 && inType.hasStaticShape()) {
      int64_t d = dims[0], len = inType.getDimSize(d), block = 0;
      for (int64_t b = 8; b * b <= len; ++b)
        if (len % b == 0)
          block = b;
      if (len >= kTreeReductionMinLength && block) {
        SmallVector<int64_t> shape(inType.getShape());
        shape[d] = len / block;
        shape.insert(shape.begin() + d + 1, block);
        SmallVector<ReassociationIndices> groups;
        for (int64_t i = 0; i < inType.getRank(); ++i)
          groups.push_back(i < d    ? ReassociationIndices{i}
                           : i == d ? ReassociationIndices{d, d + 1}
                                    : ReassociationIndices{i + 1});
        Value split = tensor::ExpandShapeOp::create(
            rewriter, loc, inType.clone(shape), in, groups);
        SmallVector<int64_t> partial(shape);
        partial.erase(partial.begin() + d + 1);
        Value blocks = buildReduction(rewriter, loc, split, {d + 1},
                                      type.clone(partial), kind, orig);
        rewriter.replaceOp(
            op, buildReduction(rewriter, loc, blocks, {d}, type, kind, orig));
        return success();
      }
    }
    rewriter.replaceOp(
        op, buildReduction(rewriter, loc, in, dims, type, kind, orig));
    return success();
  }
};

template <typename OpTy, bool IsMax>
struct ArgReduceLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpTy>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto idxType = cast<RankedTensorType>(
        this->getTypeConverter()->convertType(op.getResult().getType()));
    auto in = cast<RankedTensorType>(adaptor.getOperand().getType());
    Type orig = op.getOperand().getType().getElementType();
    Type elem = in.getElementType();
    int64_t axis = op.getAxis();
    TypedAttr start = combinerIdentity(
        rewriter, IsMax ? ReduceKind::Max : ReduceKind::Min, elem, orig);
    auto valType = idxType.clone(elem);
    Value valInit =
        filledTensor(rewriter, loc, valType, constScalar(rewriter, loc, start));
    Value idxInit = filledTensor(
        rewriter, loc, idxType,
        constScalar(rewriter, loc,
                    rewriter.getIntegerAttr(idxType.getElementType(), 0)));
    MLIRContext *ctx = op.getContext();
    unsigned rank = in.getRank();
    SmallVector<AffineExpr> outExprs;
    SmallVector<utils::IteratorType> iters;
    for (unsigned i = 0; i < rank; ++i) {
      iters.push_back(i == axis ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
      if ((int64_t)i != axis)
        outExprs.push_back(getAffineDimExpr(i, ctx));
    }
    AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);
    SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(rank),
                                   outMap, outMap};
    bool isFloat = isa<FloatType>(elem);
    bool isU = !orig.isSignlessInteger() || orig.isInteger(1);
    auto g = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valType, idxType}, adaptor.getOperand(),
        ValueRange{valInit, idxInit}, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = args[0], cur = args[1], curIdx = args[2];
          Value better;
          if (isFloat) {
            better = arith::CmpFOp::create(b, l,
                                           IsMax ? arith::CmpFPredicate::OGT
                                                 : arith::CmpFPredicate::OLT,
                                           x, cur);
            // The first NaN wins (NaN counts as the extreme).
            Value xNan =
                arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, x, x);
            Value curNan = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::UNO, cur, cur);
            Value notCurNan = arith::XOrIOp::create(
                b, l, curNan,
                arith::ConstantOp::create(b, l, b.getBoolAttr(true)));
            better = arith::OrIOp::create(
                b, l, arith::AndIOp::create(b, l, better, notCurNan),
                arith::AndIOp::create(b, l, xNan, notCurNan));
          } else {
            arith::CmpIPredicate p = IsMax ? (isU ? arith::CmpIPredicate::ugt
                                                  : arith::CmpIPredicate::sgt)
                                           : (isU ? arith::CmpIPredicate::ult
                                                  : arith::CmpIPredicate::slt);
            better = arith::CmpIOp::create(b, l, p, x, cur);
          }
          Value i = linalg::IndexOp::create(b, l, axis);
          Value iCast = arith::IndexCastOp::create(b, l, curIdx.getType(), i);
          // The very first element is always taken (covers all -inf / max-int).
          Value isFirst = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                                i, indexConst(b, l, 0));
          better = arith::OrIOp::create(b, l, better, isFirst);
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::SelectOp::create(b, l, better, x, cur),
                         arith::SelectOp::create(b, l, better, iCast, curIdx)});
        });
    rewriter.replaceOp(op, g.getResult(1));
    return success();
  }
};

struct CumulativeLowering : public OpConversionPattern<CumulativeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CumulativeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(adaptor.getOperand().getType());
    Type orig = op.getType().getElementType();
    int64_t axis = op.getAxis(), n = type.getDimSize(axis);
    // (An empty operand is its own result: its slices along the axis would
    // start at offset 0 of an empty dimension.)
    if (n <= 1 || (type.hasStaticShape() && type.getNumElements() == 0)) {
      rewriter.replaceOp(op, adaptor.getOperand());
      return success();
    }
    bool rev = op.getReverse();
    auto kind = op.getKind();
    SmallVector<int64_t> sliceShape(type.getShape());
    sliceShape[axis] = 1;
    auto sliceType = type.clone(sliceShape);
    int64_t rank = type.getRank();
    // A float running sum is carried in a wider type (f64 for f32, f32 for
    // 16-bit floats) and rounded once per element: a sum kept in the
    // element type drifts (a bf16 cumsum of 1000 ones stopped at 256; XLA
    // sums in a tree and stays exact there).
    auto ft = dyn_cast<FloatType>(type.getElementType());
    if (kind == ReduceKind::Sum && ft && ft.getWidth() < 64) {
      Type wide = ft.getWidth() == 32 ? (Type)rewriter.getF64Type()
                                      : (Type)rewriter.getF32Type();
      auto wideSlice = sliceType.clone(wide);
      SmallVector<OpFoldResult> sizes =
          getAsIndexOpFoldResult(rewriter.getContext(), sliceShape);
      SmallVector<OpFoldResult> ones(rank, rewriter.getIndexAttr(1));
      auto offsetsAt = [&](OpBuilder &b, OpFoldResult p) {
        SmallVector<OpFoldResult> o(rank, b.getIndexAttr(0));
        o[axis] = p;
        return o;
      };
      auto widen = [&](OpBuilder &b, Location l, Value v) {
        return buildGeneric(b, l, ValueRange{v}, TypeRange{wideSlice},
                            [&](OpBuilder &bb, Location ll, ValueRange xs) {
                              return SmallVector<Value>{
                                  arith::ExtFOp::create(bb, ll, wide, xs[0])};
                            })[0];
      };
      Value first = tensor::ExtractSliceOp::create(
          rewriter, loc, sliceType, adaptor.getOperand(),
          offsetsAt(rewriter, rewriter.getIndexAttr(rev ? n - 1 : 0)), sizes,
          ones);
      Value run0 = widen(rewriter, loc, first);
      auto loop = scf::ForOp::create(
          rewriter, loc, indexConst(rewriter, loc, 1),
          indexConst(rewriter, loc, n), indexConst(rewriter, loc, 1),
          ValueRange{adaptor.getOperand(), run0},
          [&](OpBuilder &b, Location l, Value k, ValueRange iter) {
            Value cur = rev ? (Value)arith::SubIOp::create(
                                  b, l, indexConst(b, l, n - 1), k)
                            : k;
            Value c = tensor::ExtractSliceOp::create(
                b, l, sliceType, iter[0], offsetsAt(b, cur), sizes, ones);
            Value run =
                buildGeneric(b, l, ValueRange{iter[1], c}, TypeRange{wideSlice},
                             [&](OpBuilder &bb, Location ll, ValueRange xs) {
                               Value x =
                                   arith::ExtFOp::create(bb, ll, wide, xs[1]);
                               return SmallVector<Value>{
                                   arith::AddFOp::create(bb, ll, xs[0], x)};
                             })[0];
            Value s =
                buildGeneric(b, l, ValueRange{run}, TypeRange{sliceType},
                             [&](OpBuilder &bb, Location ll, ValueRange xs) {
                               return SmallVector<Value>{
                                   arith::TruncFOp::create(bb, ll, ft, xs[0])};
                             })[0];
            Value next = tensor::InsertSliceOp::create(
                b, l, s, iter[0], offsetsAt(b, cur), sizes, ones);
            scf::YieldOp::create(b, l, ValueRange{next, run});
          });
      rewriter.replaceOp(op, loop.getResult(0));
      return success();
    }
    auto loop = scf::ForOp::create(
        rewriter, loc, indexConst(rewriter, loc, 1),
        indexConst(rewriter, loc, n), indexConst(rewriter, loc, 1),
        ValueRange{adaptor.getOperand()},
        [&](OpBuilder &b, Location l, Value k, ValueRange iter) {
          Value acc = iter[0];
          // Position of this step and of the previous one.
          Value cur = rev ? (Value)arith::SubIOp::create(
                                b, l, indexConst(b, l, n - 1), k)
                          : k;
          Value prev =
              rev ? (Value)arith::AddIOp::create(b, l, cur, indexConst(b, l, 1))
                  : (Value)arith::SubIOp::create(b, l, cur,
                                                 indexConst(b, l, 1));
          auto offsetsAt = [&](Value p) {
            SmallVector<OpFoldResult> o(rank, b.getIndexAttr(0));
            o[axis] = p;
            return o;
          };
          SmallVector<OpFoldResult> sizes =
              getAsIndexOpFoldResult(b.getContext(), sliceShape);
          SmallVector<OpFoldResult> ones(rank, b.getIndexAttr(1));
          Value a = tensor::ExtractSliceOp::create(
              b, l, sliceType, acc, offsetsAt(prev), sizes, ones);
          Value c = tensor::ExtractSliceOp::create(b, l, sliceType, acc,
                                                   offsetsAt(cur), sizes, ones);
          Value s =
              buildGeneric(b, l, ValueRange{a, c}, TypeRange{sliceType},
                           [&](OpBuilder &bb, Location ll, ValueRange xs) {
                             return SmallVector<Value>{buildCombiner(
                                 bb, ll, kind, xs[0], xs[1], orig)};
                           })[0];
          Value next = tensor::InsertSliceOp::create(
              b, l, s, acc, offsetsAt(cur), sizes, ones);
          scf::YieldOp::create(b, l, next);
        });
    rewriter.replaceOp(op, loop.getResults());
    return success();
  }
};

struct ReduceWindowLowering : public OpConversionPattern<ReduceWindowOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceWindowOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    auto in = cast<RankedTensorType>(adaptor.getOperand().getType());
    Type orig = op.getType().getElementType();
    Value init = tensor::ExtractOp::create(
        rewriter, loc, adaptor.getInitValue(), ValueRange{});
    // No window fits (one larger than the padded operand): an empty result,
    // with no loop over windows that would read past the operand.
    if (type.hasStaticShape() && type.getNumElements() == 0) {
      rewriter.replaceOp(op,
                         tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                                 type.getElementType()));
      return success();
    }
    // Pad the operand with the init value.
    SmallVector<int64_t> padded;
    bool anyPad = false;
    for (int64_t i = 0; i < in.getRank(); ++i) {
      padded.push_back(in.getDimSize(i) + op.getPaddingLow()[i] +
                       op.getPaddingHigh()[i]);
      anyPad |= op.getPaddingLow()[i] != 0 || op.getPaddingHigh()[i] != 0;
    }
    Value src = adaptor.getOperand();
    if (anyPad) {
      auto pt = in.clone(padded);
      Value big = filledTensor(rewriter, loc, pt, init);
      SmallVector<int64_t> ones(in.getRank(), 1);
      src = tensor::InsertSliceOp::create(
          rewriter, loc, src, big, ValueRange{}, ValueRange{}, ValueRange{},
          op.getPaddingLow(), in.getShape(), ones);
    }
    MLIRContext *ctx = op.getContext();
    unsigned rank = in.getRank();
    SmallVector<AffineExpr> inExprs, winExprs, outExprs;
    for (unsigned i = 0; i < rank; ++i) {
      AffineExpr o = getAffineDimExpr(i, ctx),
                 w = getAffineDimExpr(rank + i, ctx);
      inExprs.push_back(o * op.getWindowStrides()[i] + w);
      winExprs.push_back(w);
      outExprs.push_back(o);
    }
    SmallVector<AffineMap> maps = {AffineMap::get(2 * rank, 0, inExprs, ctx),
                                   AffineMap::get(2 * rank, 0, winExprs, ctx),
                                   AffineMap::get(2 * rank, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iters = parallelIterators(rank);
    iters.append(rank, utils::IteratorType::reduction);
    Value window = tensor::EmptyOp::create(
        rewriter, loc, op.getWindowDimensions(), type.getElementType());
    Value out = filledTensor(rewriter, loc, type, init);
    auto kind = op.getKind();
    auto g = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{src, window}, out, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(
              b, l, buildCombiner(b, l, kind, args[2], args[0], orig));
        });
    rewriter.replaceOp(op, g.getResults());
    return success();
  }
};

/// Lanes at least this long sort through the runtime.
constexpr int64_t kRuntimeSortMinLength = 64;

/// The sort through the runtime (O(n log n) per lane, stable): the keys,
/// moved so that the sort dimension is innermost and mapped to 64-bit
/// integers whose unsigned order is the sort order (IEEE total order for
/// floats), go to `ember_sort_keys`, which returns per lane the source index
/// of each destination; every operand is then gathered by it. Fails (for
/// the rank sort) on complex keys and short lanes.
FailureOr<SmallVector<Value>> lowerSortToRuntime(SortOp op, ValueRange inputs,
                                                 OpBuilder &b) {
  Location loc = op.getLoc();
  auto type = cast<RankedTensorType>(inputs[0].getType());
  int64_t rank = type.getRank(), dim = op.getDimension();
  int64_t numKeys = op.getNumKeys();
  // Short lanes keep the rank sort: a few compares per element, no call, and
  // it fuses with its neighbours.
  if (type.getDimSize(dim) < kRuntimeSortMinLength)
    return failure();
  for (int64_t k = 0; k < numKeys; ++k)
    if (!isa<IntegerType, FloatType>(
            getElementTypeOrSelf(op.getInputs()[k].getType())))
      return failure();
  // The sort dimension last.
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim)
      perm.push_back(d);
  perm.push_back(dim);
  SmallVector<int64_t> shape;
  for (int64_t d : perm)
    shape.push_back(type.getDimSize(d));
  bool moved = dim != rank - 1;
  auto toLast = [&](Value v) -> Value {
    if (!moved)
      return v;
    auto t = cast<RankedTensorType>(v.getType());
    Value init = tensor::EmptyOp::create(b, loc, shape, t.getElementType());
    return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
  };
  SmallVector<Value> last;
  for (Value v : inputs)
    last.push_back(toLast(v));
  int64_t n = shape.back(), lanes = 1;
  for (int64_t d : ArrayRef<int64_t>(shape).drop_back())
    lanes *= d;
  // The keys as one tensor<numKeys x shape x i64> of order-preserving codes.
  SmallVector<int64_t> keysShape = {numKeys};
  keysShape.append(shape.begin(), shape.end());
  Type i64 = b.getI64Type();
  Value keys = tensor::EmptyOp::create(b, loc, keysShape, i64);
  auto laneType = RankedTensorType::get(shape, i64);
  for (int64_t k = 0; k < numKeys; ++k) {
    Type orig = getElementTypeOrSelf(op.getInputs()[k].getType());
    bool isUnsigned = isa<IntegerType>(orig) &&
                      (!orig.isSignlessInteger() || orig.isInteger(1));
    Value code = buildGeneric(
        b, loc, last[k], laneType,
        [&](OpBuilder &hb, Location l, ValueRange args) {
          Value t = totalOrderKey(hb, l, args[0]);
          unsigned w = t.getType().getIntOrFloatBitWidth();
          if (isUnsigned)
            return SmallVector<Value>{
                w == 64 ? t : (Value)arith::ExtUIOp::create(hb, l, i64, t)};
          Value s = w == 64 ? t : (Value)arith::ExtSIOp::create(hb, l, i64, t);
          // Signed order as unsigned order: flip the sign bit.
          return SmallVector<Value>{arith::XOrIOp::create(
              hb, l, s,
              arith::ConstantOp::create(hb, l,
                                        hb.getI64IntegerAttr(INT64_MIN)))};
        })[0];
    SmallVector<OpFoldResult> offsets(rank + 1, b.getIndexAttr(0)),
        sizes = {b.getIndexAttr(1)}, strides(rank + 1, b.getIndexAttr(1));
    offsets[0] = b.getIndexAttr(k);
    for (int64_t d : shape)
      sizes.push_back(b.getIndexAttr(d));
    keys = tensor::InsertSliceOp::create(b, loc, code, keys, offsets, sizes,
                                         strides);
  }
  auto module = op->getParentOfType<ModuleOp>();
  declareRuntimeFunction(module, "ember_sort_keys");
  std::string name = buildBufferHelper(
      module, loc, "__ember_sort", TypeRange{keys.getType()},
      TypeRange{laneType},
      [&](OpBuilder &hb, ArrayRef<Value> ins, ArrayRef<Value> outs) {
        auto c = [&](int64_t v) {
          return (Value)arith::ConstantOp::create(hb, loc,
                                                  hb.getI64IntegerAttr(v));
        };
        func::CallOp::create(
            hb, loc, "ember_sort_keys", TypeRange{},
            ValueRange{c(lanes), c(n), c(numKeys), ins[0], outs[0]});
      });
  Value source =
      func::CallOp::create(b, loc, name, TypeRange{laneType}, ValueRange{keys})
          .getResult(0);
  // out[..., j] = in[..., source[..., j]]
  SmallVector<Type> outTypes;
  for (Value v : last)
    outTypes.push_back(v.getType());
  SmallVector<Value> sorted =
      buildGeneric(b, loc, source, outTypes,
                   [&](OpBuilder &hb, Location l, ValueRange args) {
                     SmallVector<Value> idx;
                     for (int64_t d = 0; d < rank - 1; ++d)
                       idx.push_back(linalg::IndexOp::create(hb, l, d));
                     idx.push_back(arith::IndexCastOp::create(
                         hb, l, hb.getIndexType(), args[0]));
                     SmallVector<Value> ys;
                     for (Value v : last)
                       ys.push_back(tensor::ExtractOp::create(hb, l, v, idx));
                     return ys;
                   });
  if (!moved)
    return sorted;
  // Back to the original dimension order.
  SmallVector<int64_t> inverse(rank);
  for (int64_t i = 0; i < rank; ++i)
    inverse[perm[i]] = i;
  SmallVector<Value> results;
  for (auto [v, orig] : llvm::zip(sorted, inputs)) {
    auto t = cast<RankedTensorType>(orig.getType());
    Value init =
        tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType());
    results.push_back(
        linalg::TransposeOp::create(b, loc, v, init, inverse).getResult()[0]);
  }
  return results;
}

/// Sort by rank: the destination of element i along the sort dimension is the
/// number of elements that sort before it (strictly less, or equal with a
/// smaller index). This is O(n^2) per lane but fully data-parallel and stable:
/// the CUDA target's sort (the CPU calls the runtime).
struct SortLowering : public OpConversionPattern<SortOp> {
  SortLowering(const TypeConverter &converter, MLIRContext *ctx,
               bool runtimeSort)
      : OpConversionPattern(converter, ctx), runtimeSort(runtimeSort) {}
  bool runtimeSort;
  LogicalResult
  matchAndRewrite(SortOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputs = adaptor.getInputs();
    // An empty sort is its operands (the runtime's lane copies would slice
    // the empty dimensions).
    if (auto t = cast<RankedTensorType>(inputs[0].getType());
        t.hasStaticShape() && t.getNumElements() == 0) {
      rewriter.replaceOp(op, inputs);
      return success();
    }
    if (runtimeSort) {
      if (auto sorted = lowerSortToRuntime(op, inputs, rewriter);
          succeeded(sorted)) {
        rewriter.replaceOp(op, *sorted);
        return success();
      }
    }
    auto type = cast<RankedTensorType>(inputs[0].getType());
    unsigned rank = type.getRank();
    int64_t dim = op.getDimension();
    int64_t numKeys = op.getNumKeys();
    MLIRContext *ctx = op.getContext();
    // Pass 1: iteration (dims..., j); dest[..., i] = #{j : key_j before key_i}.
    SmallVector<AffineExpr> selfExprs, otherExprs;
    for (unsigned i = 0; i < rank; ++i) {
      selfExprs.push_back(getAffineDimExpr(i, ctx));
      otherExprs.push_back(i == dim ? getAffineDimExpr(rank, ctx)
                                    : getAffineDimExpr(i, ctx));
    }
    AffineMap self = AffineMap::get(rank + 1, 0, selfExprs, ctx);
    AffineMap other = AffineMap::get(rank + 1, 0, otherExprs, ctx);
    SmallVector<Value> ins;
    SmallVector<AffineMap> maps;
    for (int64_t k = 0; k < numKeys; ++k) {
      ins.push_back(inputs[k]);
      maps.push_back(self);
    }
    for (int64_t k = 0; k < numKeys; ++k) {
      ins.push_back(inputs[k]);
      maps.push_back(other);
    }
    maps.push_back(self);
    auto destType = type.clone(rewriter.getIndexType());
    Value zero = indexConst(rewriter, loc, 0);
    Value destInit = filledTensor(rewriter, loc, destType, zero);
    SmallVector<utils::IteratorType> iters = parallelIterators(rank);
    iters.push_back(utils::IteratorType::reduction);
    auto pass1 = linalg::GenericOp::create(
        rewriter, loc, destType, ins, destInit, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          // before = lexicographic total-order less-than, ties broken by index.
          Value i = linalg::IndexOp::create(b, l, dim);
          Value j = linalg::IndexOp::create(b, l, rank);
          Value before =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, j, i);
          for (int64_t k = numKeys - 1; k >= 0; --k) {
            Value xi = totalOrderKey(b, l, args[k]);
            Value xj = totalOrderKey(b, l, args[numKeys + k]);
            Type origElem = getElementTypeOrSelf(op.getInputs()[k].getType());
            // Float keys compare as signed integers after totalOrderKey.
            bool u = isa<IntegerType>(origElem) &&
                     (!origElem.isSignlessInteger() || origElem.isInteger(1));
            Value lt = arith::CmpIOp::create(
                b, l, u ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt,
                xj, xi);
            Value eq =
                arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, xj, xi);
            before = arith::OrIOp::create(
                b, l, lt, arith::AndIOp::create(b, l, eq, before));
          }
          Value acc = args.back();
          Value inc = arith::AddIOp::create(b, l, acc, indexConst(b, l, 1));
          linalg::YieldOp::create(
              b, l,
              ValueRange{arith::SelectOp::create(b, l, before, inc, acc)});
        });
    Value dest = pass1.getResult(0);
    // Pass 2: iteration (dims..., i) where dim is the destination k;
    // out[..., k] = in[..., i] for the i with dest[..., i] == k.
    SmallVector<Value> ins2 = {dest};
    SmallVector<AffineMap> maps2 = {other};
    for (Value v : inputs) {
      ins2.push_back(v);
      maps2.push_back(other);
    }
    SmallVector<Type> outTypes;
    for (Value v : inputs) {
      outTypes.push_back(v.getType());
      maps2.push_back(self);
    }
    auto pass2 = linalg::GenericOp::create(
        rewriter, loc, outTypes, ins2, inputs, maps2, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value k = linalg::IndexOp::create(b, l, dim);
          Value hit =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, args[0], k);
          size_t n = inputs.size();
          SmallVector<Value> ys;
          for (size_t m = 0; m < n; ++m)
            ys.push_back(arith::SelectOp::create(b, l, hit, args[1 + m],
                                                 args[1 + n + m]));
          linalg::YieldOp::create(b, l, ys);
        });
    rewriter.replaceOp(op, pass2.getResults());
    return success();
  }
};

} // namespace

void mlir::ember::populateReductionLoweringPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns,
    bool runtimeSort) {
  patterns.add<ReduceLowering, ArgReduceLowering<ArgMaxOp, true>,
               ArgReduceLowering<ArgMinOp, false>, CumulativeLowering,
               ReduceWindowLowering>(converter, patterns.getContext());
  patterns.add<SortLowering>(converter, patterns.getContext(), runtimeSort);
}
