//===- EmberToLinalg.cpp - ember -> linalg/tensor/arith/math/scf ----------===//
#include "EmberToLinalgCommon.h"
#include "ember/Conversion/Passes.h"
#include "ember/Runtime/Runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERTOLINALGPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;
using namespace mlir::ember;

//===----------------------------------------------------------------------===//
// Type conversion
//===----------------------------------------------------------------------===//

EmberTypeConverter::EmberTypeConverter() {
  addConversion([](Type t) { return t; });
  addConversion([](IntegerType t) -> Type {
    // Booleans are stored one byte each (0 or 1), as NumPy stores them; the
    // LLVM lowering of memrefs cannot store i1 elements.
    if (t.getWidth() == 1)
      return IntegerType::get(t.getContext(), 8);
    if (t.isUnsigned())
      return IntegerType::get(t.getContext(), t.getWidth());
    return t;
  });
  addConversion([this](RankedTensorType t) -> Type {
    return t.clone(convertType(t.getElementType()));
  });
  auto cast = [](OpBuilder &b, Type type, ValueRange inputs,
                 Location loc) -> Value {
    return UnrealizedConversionCastOp::create(b, loc, type, inputs)
        .getResult(0);
  };
  addSourceMaterialization(cast);
  addTargetMaterialization(cast);
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

namespace {

Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType t) {
  return tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType());
}

Value filledTensor(OpBuilder &b, Location loc, RankedTensorType t,
                   Value scalar) {
  Value e = emptyTensor(b, loc, t);
  return linalg::FillOp::create(b, loc, scalar, e).getResult(0);
}

Value constScalar(OpBuilder &b, Location loc, TypedAttr a) {
  if (auto c = dyn_cast<complex::NumberAttr>(a)) {
    Type part = cast<ComplexType>(c.getType()).getElementType();
    SmallVector<Attribute> parts = {b.getFloatAttr(part, c.getReal()),
                                    b.getFloatAttr(part, c.getImag())};
    return complex::ConstantOp::create(b, loc, c.getType(),
                                       b.getArrayAttr(parts));
  }
  return arith::ConstantOp::create(b, loc, a);
}

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// Reads a 0-d integer tensor as an index (sign- or zero-extended).
Value scalarToIndex(OpBuilder &b, Location loc, Value t0d, Type origElem) {
  Value s = tensor::ExtractOp::create(b, loc, t0d, ValueRange{});
  return toIndex(b, loc, s, origElem);
}

Value clampIndex(OpBuilder &b, Location loc, Value i, int64_t lo, int64_t hi) {
  i = arith::MaxSIOp::create(b, loc, i, indexConst(b, loc, lo));
  return arith::MinSIOp::create(b, loc, i, indexConst(b, loc, hi));
}

SmallVector<utils::IteratorType> parallel(unsigned n) {
  return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
}

/// linalg.generic with identity maps over `outTypes`' shape.
SmallVector<Value> elementwiseGeneric(
    OpBuilder &b, Location loc, ValueRange inputs, TypeRange outTypes,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> body) {
  auto first = cast<RankedTensorType>(outTypes[0]);
  unsigned rank = first.getRank();
  SmallVector<Value> outs;
  for (Type t : outTypes)
    outs.push_back(emptyTensor(b, loc, cast<RankedTensorType>(t)));
  SmallVector<AffineMap> maps(inputs.size() + outs.size(),
                              b.getMultiDimIdentityMap(rank));
  auto g = linalg::GenericOp::create(
      b, loc, outTypes, inputs, outs, maps, parallel(rank),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        SmallVector<Value> r = body(nb, nl, args.take_front(inputs.size()));
        linalg::YieldOp::create(nb, nl, r);
      });
  return g.getResults();
}

} // namespace

Value mlir::ember::toIndex(OpBuilder &b, Location loc, Value s, Type origElem) {
  auto it = cast<IntegerType>(origElem);
  if (it.isUnsigned() || it.getWidth() == 1)
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), s);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), s);
}

namespace {

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

struct ElementwiseLowering : public ConversionPattern {
  ElementwiseLowering(const TypeConverter &tc, MLIRContext *ctx)
      : ConversionPattern(tc, MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    // bitcast_convert is elementwise too but lacks the trait (it may change
    // nothing but the element type's signedness).
    if (!isa<EmberDialect>(op->getDialect()) ||
        !(op->hasTrait<OpTrait::Elementwise>() || isa<BitcastConvertOp>(op)))
      return failure();
    SmallVector<Type> outTypes;
    if (failed(
            getTypeConverter()->convertTypes(op->getResultTypes(), outTypes)))
      return failure();
    bool ok = true;
    auto results = elementwiseGeneric(
        rewriter, op->getLoc(), operands, outTypes,
        [&](OpBuilder &b, Location loc, ValueRange stored) {
          // Booleans arrive as i8 storage: compute on i1, store back as i8.
          SmallVector<Value> args(stored);
          for (auto [i, v] : llvm::enumerate(op->getOperands()))
            if (getElementTypeOrSelf(v.getType()).isInteger(1))
              args[i] = arith::TruncIOp::create(b, loc, b.getI1Type(), args[i]);
          SmallVector<Value> r = buildElementwiseScalar(b, loc, op, args);
          for (Value &v : r)
            if (v.getType().isInteger(1))
              v = arith::ExtUIOp::create(b, loc, b.getI8Type(), v);
          if (r.empty()) {
            ok = false;
            // Keep the IR well formed; the pattern fails below.
            for (Type t : outTypes) {
              Type et = getElementTypeOrSelf(t);
              // getZeroAttr has no complex zero; build one from its parts.
              if (auto ct = dyn_cast<ComplexType>(et)) {
                Value z = constScalar(
                    b, loc,
                    cast<TypedAttr>(b.getZeroAttr(ct.getElementType())));
                r.push_back(complex::CreateOp::create(b, loc, ct, z, z));
                continue;
              }
              r.push_back(
                  constScalar(b, loc, cast<TypedAttr>(b.getZeroAttr(et))));
            }
          }
          return r;
        });
    if (!ok) {
      for (Value v : results)
        rewriter.eraseOp(v.getDefiningOp());
      return rewriter.notifyMatchFailure(op,
                                         "no lowering for this element type");
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Constants and iota
//===----------------------------------------------------------------------===//

struct ConstantLowering : public OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    if (!dense)
      return rewriter.notifyMatchFailure(op,
                                         "only dense constants are lowered");
    Type orig = op.getType().getElementType();
    if (orig.isInteger(1))
      dense = dense.mapValues(type.getElementType(),
                              [](const APInt &v) { return v.zext(8); });
    else if (type != op.getType())
      dense = dense.bitcast(type.getElementType());
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, type, dense);
    return success();
  }
};

struct IotaLowering : public OpConversionPattern<IotaOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(IotaOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    Type orig = op.getType().getElementType();
    int64_t dim = op.getIotaDimension();
    auto r = elementwiseGeneric(
        rewriter, op.getLoc(), {}, {type},
        [&](OpBuilder &b, Location loc, ValueRange) {
          Value i = linalg::IndexOp::create(b, loc, dim);
          Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), i);
          return SmallVector<Value>{
              convertScalar(b, loc, i64, b.getI64Type(), orig)};
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Structural ops
//===----------------------------------------------------------------------===//

struct BroadcastInDimLowering : public OpConversionPattern<BroadcastInDimOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BroadcastInDimOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    auto in = op.getOperand().getType();
    MLIRContext *ctx = op.getContext();
    SmallVector<AffineExpr> exprs;
    for (auto [i, d] : llvm::enumerate(op.getBroadcastDimensions())) {
      if (in.getDimSize(i) == 1 && type.getDimSize(d) != 1)
        exprs.push_back(getAffineConstantExpr(0, ctx));
      else
        exprs.push_back(getAffineDimExpr(d, ctx));
    }
    unsigned rank = type.getRank();
    SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, exprs, ctx),
                                   rewriter.getMultiDimIdentityMap(rank)};
    auto g = linalg::GenericOp::create(
        rewriter, op.getLoc(), type, adaptor.getOperand(),
        emptyTensor(rewriter, op.getLoc(), type), maps, parallel(rank),
        [](OpBuilder &b, Location loc, ValueRange args) {
          linalg::YieldOp::create(b, loc, args[0]);
        });
    rewriter.replaceOp(op, g.getResults());
    return success();
  }
};

struct ReshapeLowering : public OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    Location loc = op.getLoc();
    auto in = cast<RankedTensorType>(adaptor.getOperand().getType());
    // One collapse or one expand when the shapes allow it (e.g. dropping a
    // unit dimension): bufferization then views the buffer instead of
    // copying a strided one (a row of a loop's [n, ...] array).
    if (in.getRank() > 0 && type.getRank() > 0 &&
        in.getRank() != type.getRank()) {
      if (auto assoc = getReassociationIndicesForReshape(in, type)) {
        Value r = in.getRank() > type.getRank()
                      ? (Value)tensor::CollapseShapeOp::create(
                            rewriter, loc, type, adaptor.getOperand(), *assoc)
                      : (Value)tensor::ExpandShapeOp::create(
                            rewriter, loc, type, adaptor.getOperand(), *assoc);
        rewriter.replaceOp(op, r);
        return success();
      }
    }
    // Otherwise collapse to 1-d, then expand to the result shape.
    Value flat = adaptor.getOperand();
    auto flatType =
        RankedTensorType::get({in.getNumElements()}, in.getElementType());
    if (in.getRank() != 1) {
      SmallVector<ReassociationIndices> all;
      if (in.getRank() > 0)
        all.push_back(llvm::to_vector(llvm::seq<int64_t>(0, in.getRank())));
      flat = in.getRank() == 0
                 ? (Value)tensor::ExpandShapeOp::create(rewriter, loc, flatType,
                                                        flat, all)
                 : (Value)tensor::CollapseShapeOp::create(rewriter, loc,
                                                          flatType, flat, all);
    }
    Value result = flat;
    if (type.getRank() != 1) {
      SmallVector<ReassociationIndices> all;
      if (type.getRank() > 0)
        all.push_back(llvm::to_vector(llvm::seq<int64_t>(0, type.getRank())));
      result = type.getRank() == 0
                   ? (Value)tensor::CollapseShapeOp::create(rewriter, loc, type,
                                                            flat, all)
                   : (Value)tensor::ExpandShapeOp::create(rewriter, loc, type,
                                                          flat, all);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// ember.while -> scf.while; the regions move over with converted types and
/// their ember.yield terminators become scf.condition / scf.yield.
struct WhileLowering : public OpConversionPattern<WhileOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WhileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Type> types;
    if (failed(getTypeConverter()->convertTypes(op.getResultTypes(), types)))
      return failure();
    if (op.getTripCount() && isPureRegion(op.getCond()))
      return lowerCounted(op, adaptor, types, rewriter);
    auto loop =
        scf::WhileOp::create(rewriter, op.getLoc(), types, adaptor.getInit());
    for (auto [from, to] :
         {std::pair<Region *, Region *>{&op.getCond(), &loop.getBefore()},
          std::pair<Region *, Region *>{&op.getBody(), &loop.getAfter()}}) {
      rewriter.inlineRegionBefore(*from, *to, to->end());
      if (failed(rewriter.convertRegionTypes(to, *getTypeConverter())))
        return failure();
    }
    rewriter.replaceOp(op, loop.getResults());
    return success();
  }

private:
  static bool isPureRegion(Region &r) {
    return llvm::all_of(r.front().without_terminator(),
                        [](Operation &o) { return isMemoryEffectFree(&o); });
  }

  /// A loop that runs exactly `trip_count` times needs no predicate: it
  /// becomes `scf.for`, whose carried tensors bufferize in place (scf.while
  /// copies them, and allocates its predicate, on every iteration).
  LogicalResult lowerCounted(WhileOp op, OpAdaptor adaptor,
                             ArrayRef<Type> types,
                             ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    Value lb = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value ub =
        arith::ConstantIndexOp::create(rewriter, loc, *op.getTripCount());
    Value step = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto loop =
        scf::ForOp::create(rewriter, loc, lb, ub, step, adaptor.getInit());
    Region &to = loop.getRegion();
    rewriter.eraseBlock(&to.front());
    rewriter.inlineRegionBefore(op.getBody(), to, to.end());
    // The body's carried values, after a new induction variable.
    Block &body = to.front();
    TypeConverter::SignatureConversion sig(body.getNumArguments());
    sig.addInputs(rewriter.getIndexType());
    for (auto [i, t] : llvm::enumerate(types))
      sig.addInputs(i, t);
    rewriter.applySignatureConversion(&body, sig, getTypeConverter());
    rewriter.replaceOp(op, loop.getResults());
    return success();
  }
};

/// `ember.case` becomes a chain of `scf.if` on the clamped index: branch k
/// runs where the index is k, the last branch otherwise. (scf.if rather than
/// scf.index_switch: one-shot bufferization misses read-after-write
/// conflicts through index_switch results in MLIR 22, which corrupted
/// values computed in earlier switches.)
struct CaseLowering : public OpConversionPattern<CaseOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CaseOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Type> types;
    if (failed(getTypeConverter()->convertTypes(op.getResultTypes(), types)))
      return failure();
    int64_t n = op.getBranches().size();
    Value i = scalarToIndex(rewriter, loc, adaptor.getIndex(),
                            op.getIndex().getType().getElementType());
    i = clampIndex(rewriter, loc, i, 0, n - 1);
    // Builds the dispatch over branches k..n-1 into `into` (or replaces the
    // op when k == 0); returns the results.
    std::function<ValueRange(int64_t)> build = [&](int64_t k) -> ValueRange {
      Value isK = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::eq,
                                        i, indexConst(rewriter, loc, k));
      auto ifOp =
          scf::IfOp::create(rewriter, loc, types, isK, /*withElseRegion=*/true);
      Region &thenRegion = ifOp.getThenRegion(),
             &elseRegion = ifOp.getElseRegion();
      // Drop the default (empty) blocks and move the branch regions in.
      for (Region *r : {&thenRegion, &elseRegion})
        while (!r->empty())
          rewriter.eraseBlock(&r->front());
      rewriter.inlineRegionBefore(op.getBranches()[k], thenRegion,
                                  thenRegion.end());
      if (k + 2 == n) {
        rewriter.inlineRegionBefore(op.getBranches()[k + 1], elseRegion,
                                    elseRegion.end());
      } else {
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.createBlock(&elseRegion);
        ValueRange inner = build(k + 1);
        scf::YieldOp::create(rewriter, loc, inner);
      }
      return ifOp.getResults();
    };
    if (n == 1) {
      // A single branch: its body, inline.
      Block &b = op.getBranches()[0].front();
      auto yield = cast<YieldOp>(b.getTerminator());
      SmallVector<Value> results(yield.getValues());
      rewriter.inlineBlockBefore(&b, op);
      rewriter.eraseOp(yield);
      rewriter.replaceOp(op, results);
      return success();
    }
    rewriter.replaceOp(op, build(0));
    return success();
  }
};

struct YieldLowering : public OpConversionPattern<YieldOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(YieldOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (isa<scf::IfOp>(op->getParentOp())) {
      rewriter.replaceOpWithNewOp<scf::YieldOp>(op, adaptor.getValues());
      return success();
    }
    if (isa<scf::ForOp>(op->getParentOp())) {
      rewriter.replaceOpWithNewOp<scf::YieldOp>(op, adaptor.getValues());
      return success();
    }
    auto loop = dyn_cast<scf::WhileOp>(op->getParentOp());
    if (!loop)
      return rewriter.notifyMatchFailure(op, "parent not lowered yet");
    if (op->getParentRegion() == &loop.getBefore()) {
      // The predicate is a 0-d bool tensor (stored as i8).
      Value p = tensor::ExtractOp::create(rewriter, op.getLoc(),
                                          adaptor.getValues()[0], ValueRange{});
      if (!p.getType().isInteger(1))
        p = arith::TruncIOp::create(rewriter, op.getLoc(), rewriter.getI1Type(),
                                    p);
      rewriter.replaceOpWithNewOp<scf::ConditionOp>(
          op, p, loop.getBefore().front().getArguments());
    } else {
      rewriter.replaceOpWithNewOp<scf::YieldOp>(op, adaptor.getValues());
    }
    return success();
  }
};

/// bitcast_convert between element widths: a wide element splits into its
/// little-endian parts along a new trailing dimension, or parts merge.
struct BitcastResizeLowering : public OpConversionPattern<BitcastConvertOp> {
  BitcastResizeLowering(const TypeConverter &tc, MLIRContext *ctx)
      : OpConversionPattern(tc, ctx, /*benefit=*/2) {}
  LogicalResult
  matchAndRewrite(BitcastConvertOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto in = cast<RankedTensorType>(adaptor.getOperand().getType());
    auto out =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    unsigned wi = in.getElementTypeBitWidth(),
             wo = out.getElementTypeBitWidth();
    if (wi == wo)
      return failure(); // the elementwise pattern handles equal widths
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto asInt = [&](OpBuilder &b, Location l, Value v) -> Value {
      Type it = b.getIntegerType(v.getType().getIntOrFloatBitWidth());
      return v.getType() == it ? v
                               : (Value)arith::BitcastOp::create(b, l, it, v);
    };
    auto fromInt = [&](OpBuilder &b, Location l, Value v, Type t) -> Value {
      return v.getType() == t ? v : (Value)arith::BitcastOp::create(b, l, t, v);
    };
    if (wi > wo) {
      // Split: out[..., k] = bits(in[...]) >> (k * wo).
      unsigned rank = out.getRank();
      SmallVector<AffineExpr> inExprs;
      for (unsigned i = 0; i + 1 < rank; ++i)
        inExprs.push_back(getAffineDimExpr(i, ctx));
      SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, inExprs, ctx),
                                     rewriter.getMultiDimIdentityMap(rank)};
      auto g = linalg::GenericOp::create(
          rewriter, loc, out, adaptor.getOperand(),
          emptyTensor(rewriter, loc, out), maps, parallel(rank),
          [&](OpBuilder &b, Location l, ValueRange args) {
            Value bits = asInt(b, l, args[0]);
            Value k = arith::IndexCastOp::create(
                b, l, bits.getType(), linalg::IndexOp::create(b, l, rank - 1));
            Value sh = arith::MulIOp::create(
                b, l, k,
                arith::ConstantOp::create(
                    b, l, b.getIntegerAttr(bits.getType(), wo)));
            Value part =
                arith::TruncIOp::create(b, l, b.getIntegerType(wo),
                                        arith::ShRUIOp::create(b, l, bits, sh));
            linalg::YieldOp::create(b, l,
                                    fromInt(b, l, part, out.getElementType()));
          });
      rewriter.replaceOp(op, g.getResults());
      return success();
    }
    // Merge: acc |= zext(bits(in[..., k])) << (k * wi), then view as out.
    unsigned rank = in.getRank();
    Type wideInt = rewriter.getIntegerType(wo);
    auto accType = out.clone(wideInt);
    Value zero = arith::ConstantOp::create(rewriter, loc,
                                           rewriter.getIntegerAttr(wideInt, 0));
    Value init = filledTensor(rewriter, loc, accType, zero);
    SmallVector<AffineExpr> outExprs;
    for (unsigned i = 0; i + 1 < rank; ++i)
      outExprs.push_back(getAffineDimExpr(i, ctx));
    SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(rank),
                                   AffineMap::get(rank, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iters = parallel(rank);
    iters.back() = utils::IteratorType::reduction;
    auto g = linalg::GenericOp::create(
        rewriter, loc, accType, adaptor.getOperand(), init, maps, iters,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value bits =
              arith::ExtUIOp::create(b, l, wideInt, asInt(b, l, args[0]));
          Value k = arith::IndexCastOp::create(
              b, l, wideInt, linalg::IndexOp::create(b, l, rank - 1));
          Value sh = arith::MulIOp::create(
              b, l, k,
              arith::ConstantOp::create(b, l, b.getIntegerAttr(wideInt, wi)));
          Value acc = arith::OrIOp::create(
              b, l, args[1], arith::ShLIOp::create(b, l, bits, sh));
          linalg::YieldOp::create(b, l, acc);
        });
    Value result = g.getResult(0);
    if (out.getElementType() != wideInt)
      result =
          elementwiseGeneric(rewriter, loc, ValueRange{result}, TypeRange{out},
                             [&](OpBuilder &b, Location l, ValueRange xs) {
                               return SmallVector<Value>{
                                   fromInt(b, l, xs[0], out.getElementType())};
                             })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct StopGradientLowering : public OpConversionPattern<StopGradientOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StopGradientOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getOperand());
    return success();
  }
};

/// The barrier stays (on converted types) until after the last CSE;
/// ember-drop-optimization-barriers removes it before bufferization.
struct OptimizationBarrierLowering
    : public OpConversionPattern<OptimizationBarrierOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OptimizationBarrierOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<OptimizationBarrierOp>(op,
                                                       adaptor.getOperands());
    return success();
  }
};

struct TransposeLowering : public OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    Value init = emptyTensor(rewriter, op.getLoc(), type);
    auto t = linalg::TransposeOp::create(
        rewriter, op.getLoc(), adaptor.getOperand(), init, op.getPermutation());
    rewriter.replaceOp(op, t.getResults());
    return success();
  }
};

struct SliceLowering : public OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    // An empty result needs no data (and its start may equal the size).
    if (type.getNumElements() == 0) {
      rewriter.replaceOp(op, emptyTensor(rewriter, op.getLoc(), type));
      return success();
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, adaptor.getOperand(), ValueRange{}, ValueRange{},
        ValueRange{}, op.getStartIndices(), type.getShape(), op.getStrides());
    return success();
  }
};

/// Start indices clamped so that a window of `sizes` stays inside `shape`.
SmallVector<OpFoldResult> clampedStarts(OpBuilder &b, Location loc,
                                        ValueRange starts,
                                        ValueRange origStarts,
                                        ArrayRef<int64_t> shape,
                                        ArrayRef<int64_t> sizes) {
  SmallVector<OpFoldResult> r;
  for (auto [i, s] : llvm::enumerate(starts)) {
    Type orig = getElementTypeOrSelf(origStarts[i].getType());
    Value idx = scalarToIndex(b, loc, s, orig);
    r.push_back(clampIndex(b, loc, idx, 0, shape[i] - sizes[i]));
  }
  return r;
}

struct DynamicSliceLowering : public OpConversionPattern<DynamicSliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DynamicSliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    auto in = op.getOperand().getType();
    auto offsets =
        clampedStarts(rewriter, op.getLoc(), adaptor.getStartIndices(),
                      op.getStartIndices(), in.getShape(), op.getSliceSizes());
    SmallVector<OpFoldResult> sizes =
        getAsIndexOpFoldResult(op.getContext(), type.getShape());
    SmallVector<OpFoldResult> strides(type.getRank(), rewriter.getIndexAttr(1));
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, adaptor.getOperand(), offsets, sizes, strides);
    return success();
  }
};

struct DynamicUpdateSliceLowering
    : public OpConversionPattern<DynamicUpdateSliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DynamicUpdateSliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto in = op.getOperand().getType();
    auto upd = op.getUpdate().getType();
    auto offsets =
        clampedStarts(rewriter, op.getLoc(), adaptor.getStartIndices(),
                      op.getStartIndices(), in.getShape(), upd.getShape());
    SmallVector<OpFoldResult> sizes =
        getAsIndexOpFoldResult(op.getContext(), upd.getShape());
    SmallVector<OpFoldResult> strides(upd.getRank(), rewriter.getIndexAttr(1));
    rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
        op, adaptor.getUpdate(), adaptor.getOperand(), offsets, sizes, strides);
    return success();
  }
};

struct PadLowering : public OpConversionPattern<PadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    auto in = op.getOperand().getType();
    auto lo = op.getEdgePaddingLow(), hi = op.getEdgePaddingHigh();
    auto interior = op.getInteriorPadding();
    // Pad with the non-negative parts, then cut away negative padding.
    SmallVector<int64_t> bigShape, insertAt, strides, cutAt;
    bool needCut = false;
    for (int64_t i = 0; i < in.getRank(); ++i) {
      int64_t n = in.getDimSize(i);
      int64_t l = std::max<int64_t>(lo[i], 0), h = std::max<int64_t>(hi[i], 0);
      bigShape.push_back(l + h + n + std::max<int64_t>(n - 1, 0) * interior[i]);
      insertAt.push_back(l);
      strides.push_back(interior[i] + 1);
      cutAt.push_back(-std::min<int64_t>(lo[i], 0));
      needCut |= lo[i] < 0 || hi[i] < 0;
    }
    auto bigType = type.clone(bigShape);
    Value pv = tensor::ExtractOp::create(
        rewriter, loc, adaptor.getPaddingValue(), ValueRange{});
    Value big = filledTensor(rewriter, loc, bigType, pv);
    SmallVector<int64_t> sizes(in.getShape());
    big = tensor::InsertSliceOp::create(rewriter, loc, adaptor.getOperand(),
                                        big, ValueRange{}, ValueRange{},
                                        ValueRange{}, insertAt, sizes, strides);
    if (needCut) {
      SmallVector<int64_t> ones(type.getRank(), 1);
      big = tensor::ExtractSliceOp::create(
          rewriter, loc, type, big, ValueRange{}, ValueRange{}, ValueRange{},
          cutAt, type.getShape(), ones);
    }
    rewriter.replaceOp(op, big);
    return success();
  }
};

struct ConcatenateLowering : public OpConversionPattern<ConcatenateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConcatenateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    Value result = emptyTensor(rewriter, loc, type);
    int64_t dim = op.getDimension(), at = 0;
    for (Value v : adaptor.getInputs()) {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> offsets(type.getRank(), 0), ones(type.getRank(), 1);
      offsets[dim] = at;
      result = tensor::InsertSliceOp::create(
          rewriter, loc, v, result, ValueRange{}, ValueRange{}, ValueRange{},
          offsets, t.getShape(), ones);
      at += t.getDimSize(dim);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ReverseLowering : public OpConversionPattern<ReverseOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReverseOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    MLIRContext *ctx = op.getContext();
    unsigned rank = type.getRank();
    SmallVector<AffineExpr> exprs;
    for (unsigned i = 0; i < rank; ++i) {
      AffineExpr d = getAffineDimExpr(i, ctx);
      if (llvm::is_contained(op.getDimensions(), (int64_t)i))
        exprs.push_back(getAffineConstantExpr(type.getDimSize(i) - 1, ctx) - d);
      else
        exprs.push_back(d);
    }
    SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, exprs, ctx),
                                   rewriter.getMultiDimIdentityMap(rank)};
    auto g = linalg::GenericOp::create(
        rewriter, op.getLoc(), type, adaptor.getOperand(),
        emptyTensor(rewriter, op.getLoc(), type), maps, parallel(rank),
        [](OpBuilder &b, Location loc, ValueRange args) {
          linalg::YieldOp::create(b, loc, args[0]);
        });
    rewriter.replaceOp(op, g.getResults());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

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
    TypedAttr id = combinerIdentity(rewriter, op.getKind(), elem, orig);
    if (!id)
      return rewriter.notifyMatchFailure(op,
                                         "no identity for this kind and type");
    Value init =
        filledTensor(rewriter, loc, type, constScalar(rewriter, loc, id));
    auto kind = op.getKind();
    auto r = linalg::ReduceOp::create(
        rewriter, loc, adaptor.getOperand(), init, op.getDimensions(),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value v = buildCombiner(b, l, kind, args[0], args[1], orig);
          // Reductions may reassociate (as XLA's do): LLVM then vectorizes
          // the reduction loop with several partial accumulators.
          if (auto fm = v.getDefiningOp<arith::ArithFastMathInterface>())
            v.getDefiningOp()->setAttr(
                fm.getFastMathAttrName(),
                arith::FastMathFlagsAttr::get(b.getContext(),
                                              arith::FastMathFlags::reassoc));
          linalg::YieldOp::create(b, l, v);
        });
    rewriter.replaceOp(op, r.getResults());
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
    if (n <= 1) {
      rewriter.replaceOp(op, adaptor.getOperand());
      return success();
    }
    bool rev = op.getReverse();
    auto kind = op.getKind();
    SmallVector<int64_t> sliceShape(type.getShape());
    sliceShape[axis] = 1;
    auto sliceType = type.clone(sliceShape);
    int64_t rank = type.getRank();
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
          Value s = elementwiseGeneric(
              b, l, ValueRange{a, c}, TypeRange{sliceType},
              [&](OpBuilder &bb, Location ll, ValueRange xs) {
                return SmallVector<Value>{
                    buildCombiner(bb, ll, kind, xs[0], xs[1], orig)};
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
    SmallVector<utils::IteratorType> iters = parallel(rank);
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

/// Sort by rank: the destination of element i along the sort dimension is the
/// number of elements that sort before it (strictly less, or equal with a
/// smaller index). This is O(n^2) per lane but fully data-parallel and stable.
struct SortLowering : public OpConversionPattern<SortOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SortOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inputs = adaptor.getInputs();
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
    SmallVector<utils::IteratorType> iters = parallel(rank);
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

//===----------------------------------------------------------------------===//
// dot_general
//===----------------------------------------------------------------------===//

/// Declares the runtime function `name` (include/ember/Runtime/Runtime.def)
/// once.
void declareRuntimeFunction(ModuleOp module, StringRef name);
std::string buildBufferHelper(
    ModuleOp module, Location loc, StringRef prefix, TypeRange inTypes,
    TypeRange resultTypes,
    function_ref<void(OpBuilder &, ArrayRef<Value>, ArrayRef<Value>)> emit);

/// Contractions with at least this many multiply-adds call the runtime's
/// GEMM; smaller ones stay loop nests (a call costs about a microsecond).
constexpr int64_t kGemmMinWork = 32 * 32 * 32;
constexpr int64_t kGemmMinDepth = 8;

/// Products up to this many multiply-adds run on the runtime's single-core
/// kernel (`smallGemmPreferred` in lib/Runtime/SmallGemm.cpp).
constexpr int64_t kSmallGemmWork = int64_t(1) << 21;

/// The innermost loop around `op` if `v` is defined outside it, else null.
Operation *loopInvariantIn(Operation *op, Value v) {
  Operation *loop = op->getParentOp();
  while (loop && !isa<WhileOp, scf::ForOp, scf::WhileOp>(loop))
    loop = loop->getParentOp();
  return loop && !loop->isAncestor(v.getParentBlock()->getParentOp()) ? loop
                                                                      : nullptr;
}

/// C = op(A) B for a small product in `loop` whose B (k x n, n x k when
/// `transB`) is defined outside it: B is packed before the loop
/// (`ember_gemm_pack_*`) and each product reads the packed B
/// (`ember_gemm_packed_*`, which falls back to B on CPUs without the kernel).
Value lowerSmallDotWithPackedB(DotGeneralOp op, Value a, int64_t transA,
                               Value bv, int64_t transB, int64_t m, int64_t n,
                               int64_t k, Operation *loop,
                               RankedTensorType outType, OpBuilder &b) {
  Location loc = op.getLoc();
  auto module = op->getParentOfType<ModuleOp>();
  Type e = outType.getElementType();
  int64_t bytes = e.getIntOrFloatBitWidth() / 8;
  int64_t width = 2 * 64 / bytes; // the widest kernel's strips (packedBSize)
  auto packedType =
      RankedTensorType::get({k * ((n + width - 1) / width) * width}, e);
  std::string suffix = e.isF32() ? "_f32" : "_f64";
  std::string pack = "ember_gemm_pack" + suffix,
              packed = "ember_gemm_packed" + suffix;
  declareRuntimeFunction(module, pack);
  declareRuntimeFunction(module, packed);
  auto c = [&](OpBuilder &hb, int64_t v) {
    return (Value)arith::ConstantOp::create(hb, loc, hb.getI64IntegerAttr(v));
  };
  std::string packHelper = buildBufferHelper(
      module, loc, "__ember_gemm_pack", TypeRange{bv.getType()},
      TypeRange{packedType},
      [&](OpBuilder &hb, ArrayRef<Value> ins, ArrayRef<Value> outs) {
        func::CallOp::create(
            hb, loc, pack, TypeRange{},
            ValueRange{c(hb, transB), c(hb, n), c(hb, k), ins[0], outs[0]});
      });
  Value packedB;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop);
    packedB = func::CallOp::create(b, loc, packHelper, TypeRange{packedType},
                                   ValueRange{bv})
                  .getResult(0);
  }
  std::string helper = buildBufferHelper(
      module, loc, "__ember_gemm_packed",
      TypeRange{a.getType(), bv.getType(), packedType}, TypeRange{outType},
      [&](OpBuilder &hb, ArrayRef<Value> ins, ArrayRef<Value> outs) {
        func::CallOp::create(hb, loc, packed, TypeRange{},
                             ValueRange{c(hb, transA), c(hb, transB), c(hb, m),
                                        c(hb, n), c(hb, k), ins[0], ins[1],
                                        ins[2], outs[0]});
      });
  return func::CallOp::create(b, loc, helper, TypeRange{outType},
                              ValueRange{a, bv, packedB})
      .getResult(0);
}

/// A large f32/f64 `dot_general` becomes a call of the runtime's batched GEMM
/// (docs/decisions.md, "Contractions"):
///
///   ember_gemm_f32(transA, transB, batch, m, n, k, a, b, c)   (row-major)
///
/// Operands whose dimensions are already in GEMM order (possibly transposed
/// as a matrix) are passed as they are; others are transposed first.
FailureOr<Value> lowerDotToGemm(DotGeneralOp op, Value lhsV, Value rhsV,
                                RankedTensorType outType, OpBuilder &b) {
  auto lhs = op.getLhs().getType(), rhs = op.getRhs().getType();
  Type e = op.getType().getElementType();
  if (!(e.isF32() || e.isF64()) || lhs.getElementType() != e ||
      rhs.getElementType() != e)
    return failure();
  auto lb = op.getLhsBatchingDimensions(), rb = op.getRhsBatchingDimensions();
  auto lc = op.getLhsContractingDimensions(),
       rc = op.getRhsContractingDimensions();
  SmallVector<int64_t> lFree, rFree;
  for (int64_t i = 0; i < lhs.getRank(); ++i)
    if (!llvm::is_contained(lb, i) && !llvm::is_contained(lc, i))
      lFree.push_back(i);
  for (int64_t i = 0; i < rhs.getRank(); ++i)
    if (!llvm::is_contained(rb, i) && !llvm::is_contained(rc, i))
      rFree.push_back(i);
  auto prod = [](RankedTensorType t, ArrayRef<int64_t> dims) {
    int64_t p = 1;
    for (int64_t d : dims)
      p *= t.getDimSize(d);
    return p;
  };
  int64_t batch = prod(lhs, lb), m = prod(lhs, lFree), k = prod(lhs, lc),
          n = prod(rhs, rFree);
  // With a short contraction the product is memory bound: a loop nest
  // (fusable with what follows, e.g. a transpose) beats a GEMM call.
  if (batch * m * n * k < kGemmMinWork || k < kGemmMinDepth || m > INT32_MAX ||
      n > INT32_MAX || k > INT32_MAX)
    return failure();
  Location loc = op.getLoc();
  auto concat = [](std::initializer_list<ArrayRef<int64_t>> parts) {
    SmallVector<int64_t> out;
    for (ArrayRef<int64_t> p : parts)
      out.append(p.begin(), p.end());
    return out;
  };
  auto isIdentity = [](ArrayRef<int64_t> perm) {
    for (auto [i, p] : llvm::enumerate(perm))
      if ((int64_t)i != p)
        return false;
    return true;
  };
  // Returns the operand in a GEMM layout and whether it is transposed.
  auto arrange =
      [&](Value v, SmallVector<int64_t> plain,
          SmallVector<int64_t> transposed) -> std::pair<Value, int64_t> {
    if (isIdentity(plain))
      return {v, 0};
    if (isIdentity(transposed))
      return {v, 1};
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape;
    for (int64_t p : plain)
      shape.push_back(t.getDimSize(p));
    Value init = tensor::EmptyOp::create(b, loc, shape, t.getElementType());
    Value r =
        linalg::TransposeOp::create(b, loc, v, init, plain).getResult()[0];
    return {r, 0};
  };
  auto [a, transA] =
      arrange(lhsV, concat({lb, lFree, lc}), concat({lb, lc, lFree}));
  auto [bm, transB] =
      arrange(rhsV, concat({rb, rc, rFree}), concat({rb, rFree, rc}));
  // A small product in a loop with B from outside the loop (a weight in a
  // scan step) packs B once, before the loop, for the runtime's small-product
  // kernel, which would pack it on every call. Batched products with a
  // transposed B from outside transpose it explicitly, and
  // loop-invariant-code-motion moves the transpose out of the loop.
  Operation *loop = loopInvariantIn(op, rhsV);
  bool small = batch * m * n * k <= kSmallGemmWork;
  if (loop && small && batch == 1 && bm == rhsV)
    return lowerSmallDotWithPackedB(op, a, transA, rhsV, transB, m, n, k, loop,
                                    outType, b);
  if (transB && small && loop) {
    auto t = cast<RankedTensorType>(rhsV.getType());
    SmallVector<int64_t> perm = concat({rb, rc, rFree}), shape;
    for (int64_t p : perm)
      shape.push_back(t.getDimSize(p));
    Value init = tensor::EmptyOp::create(b, loc, shape, t.getElementType());
    bm = linalg::TransposeOp::create(b, loc, rhsV, init, perm).getResult()[0];
    transB = 0;
  }
  auto module = op->getParentOfType<ModuleOp>();
  std::string entry = e.isF32() ? "ember_gemm_f32" : "ember_gemm_f64";
  declareRuntimeFunction(module, entry);
  std::string name = buildBufferHelper(
      module, loc, "__ember_gemm", TypeRange{a.getType(), bm.getType()},
      TypeRange{outType},
      [&, transA = transA, transB = transB](OpBuilder &hb, ArrayRef<Value> ins,
                                            ArrayRef<Value> outs) {
        auto c = [&](int64_t v) {
          return (Value)arith::ConstantOp::create(hb, loc,
                                                  hb.getI64IntegerAttr(v));
        };
        func::CallOp::create(hb, loc, entry, TypeRange{},
                             ValueRange{c(transA), c(transB), c(batch), c(m),
                                        c(n), c(k), ins[0], ins[1], outs[0]});
      });
  return func::CallOp::create(b, loc, name, TypeRange{outType},
                              ValueRange{a, bm})
      .getResult(0);
}

struct DotGeneralLowering : public OpConversionPattern<DotGeneralOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DotGeneralOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    auto lhs = op.getLhs().getType(), rhs = op.getRhs().getType();
    auto lb = op.getLhsBatchingDimensions(), rb = op.getRhsBatchingDimensions();
    auto lc = op.getLhsContractingDimensions(),
         rc = op.getRhsContractingDimensions();
    MLIRContext *ctx = op.getContext();
    if (auto call = lowerDotToGemm(op, adaptor.getLhs(), adaptor.getRhs(), type,
                                   rewriter);
        succeeded(call)) {
      rewriter.replaceOp(op, *call);
      return success();
    }
    // Iteration order: batch, lhs free, contracting, rhs free (rhs free
    // innermost keeps the inner loop contiguous for row-major operands).
    int64_t nb = lb.size(), nc = lc.size();
    SmallVector<int64_t> lFree, rFree;
    for (int64_t i = 0; i < lhs.getRank(); ++i)
      if (!llvm::is_contained(lb, i) && !llvm::is_contained(lc, i))
        lFree.push_back(i);
    for (int64_t i = 0; i < rhs.getRank(); ++i)
      if (!llvm::is_contained(rb, i) && !llvm::is_contained(rc, i))
        rFree.push_back(i);
    int64_t nl = lFree.size(), nr = rFree.size();
    // Contracting dimensions of size 1 (outer products, e.g. per-example
    // weight gradients) need no reduction loop: the op is then all-parallel,
    // so elementwise fusion can merge it with its consumers.
    bool unitContraction =
        llvm::all_of(lc, [&](int64_t d) { return lhs.getDimSize(d) == 1; });
    if (unitContraction)
      nc = 0;
    int64_t total = nb + nl + nc + nr;
    auto dimOf = [&](int64_t pos) { return getAffineDimExpr(pos, ctx); };
    SmallVector<AffineExpr> lExprs(lhs.getRank()), rExprs(rhs.getRank()),
        oExprs;
    for (int64_t k = 0; k < nb; ++k) {
      lExprs[lb[k]] = dimOf(k);
      rExprs[rb[k]] = dimOf(k);
    }
    for (int64_t k = 0; k < nl; ++k)
      lExprs[lFree[k]] = dimOf(nb + k);
    for (int64_t k = 0; k < (int64_t)lc.size(); ++k) {
      AffineExpr e =
          unitContraction ? getAffineConstantExpr(0, ctx) : dimOf(nb + nl + k);
      lExprs[lc[k]] = e;
      rExprs[rc[k]] = e;
    }
    for (int64_t k = 0; k < nr; ++k)
      rExprs[rFree[k]] = dimOf(nb + nl + nc + k);
    for (int64_t k = 0; k < nb + nl; ++k)
      oExprs.push_back(dimOf(k));
    for (int64_t k = 0; k < nr; ++k)
      oExprs.push_back(dimOf(nb + nl + nc + k));
    SmallVector<AffineMap> maps = {AffineMap::get(total, 0, lExprs, ctx),
                                   AffineMap::get(total, 0, rExprs, ctx),
                                   AffineMap::get(total, 0, oExprs, ctx)};
    SmallVector<utils::IteratorType> iters = parallel(total);
    for (int64_t k = 0; k < nc; ++k)
      iters[nb + nl + k] = utils::IteratorType::reduction;
    Type origOut = op.getType().getElementType();
    Type lOrig = lhs.getElementType(), rOrig = rhs.getElementType();
    Type elem = type.getElementType();
    Value init =
        unitContraction
            ? emptyTensor(rewriter, loc, type)
            : filledTensor(
                  rewriter, loc, type,
                  constScalar(rewriter, loc,
                              combinerIdentity(rewriter, ReduceKind::Sum, elem,
                                               origOut)));
    auto g = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{adaptor.getLhs(), adaptor.getRhs()},
        init, maps, iters, [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = convertScalar(b, l, args[0], lOrig, origOut);
          Value y = convertScalar(b, l, args[1], rOrig, origOut);
          Value p = buildCombiner(b, l, ReduceKind::Prod, x, y, origOut);
          linalg::YieldOp::create(
              b, l,
              unitContraction
                  ? p
                  : buildCombiner(b, l, ReduceKind::Sum, args[2], p, origOut));
        });
    rewriter.replaceOp(op, g.getResults());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Gather and scatter
//===----------------------------------------------------------------------===//

/// Reads the index vector of `indices` at batch position `batch` (the indices'
/// dimensions other than index_vector_dim, in order).
SmallVector<Value> readIndexVector(OpBuilder &b, Location loc, Value indices,
                                   Type origElem, ArrayRef<Value> batch,
                                   int64_t ivd, int64_t count) {
  auto t = cast<RankedTensorType>(indices.getType());
  SmallVector<Value> out;
  for (int64_t k = 0; k < count; ++k) {
    SmallVector<Value> pos;
    unsigned bi = 0;
    for (int64_t d = 0; d < t.getRank(); ++d)
      pos.push_back(d == ivd ? indexConst(b, loc, k) : batch[bi++]);
    Value s = tensor::ExtractOp::create(b, loc, indices, pos);
    out.push_back(toIndex(b, loc, s, origElem));
  }
  return out;
}

struct GatherLowering : public OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type =
        cast<RankedTensorType>(getTypeConverter()->convertType(op.getType()));
    auto operand = op.getOperand().getType();
    auto indicesT = op.getStartIndices().getType();
    Type idxOrig = indicesT.getElementType();
    int64_t ivd = op.getIndexVectorDim();
    int64_t count = op.getStartIndexMap().size();
    auto offsetDims = op.getOffsetDims();
    auto sizes = op.getSliceSizes();
    bool fill = op.getMode() == IndexMode::Fill;
    Value src = adaptor.getOperand(), indices = adaptor.getStartIndices();
    auto r = elementwiseGeneric(
        rewriter, loc, {}, {type}, [&](OpBuilder &b, Location l, ValueRange) {
          SmallVector<Value> batch, offsets;
          for (int64_t d = 0; d < type.getRank(); ++d) {
            Value i = linalg::IndexOp::create(b, l, d);
            (llvm::is_contained(offsetDims, d) ? offsets : batch).push_back(i);
          }
          SmallVector<Value> iv =
              readIndexVector(b, l, indices, idxOrig, batch, ivd, count);
          // Full operand index: start + offset (+ batching position).
          SmallVector<Value> full(operand.getRank(), indexConst(b, l, 0));
          Value inBounds = arith::ConstantOp::create(b, l, b.getBoolAttr(true));
          for (int64_t k = 0; k < count; ++k) {
            int64_t d = op.getStartIndexMap()[k];
            int64_t hi = operand.getDimSize(d) - sizes[d];
            if (fill) {
              Value ok = arith::AndIOp::create(
                  b, l,
                  arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, iv[k],
                                        indexConst(b, l, 0)),
                  arith::CmpIOp::create(b, l, arith::CmpIPredicate::sle, iv[k],
                                        indexConst(b, l, hi)));
              inBounds = arith::AndIOp::create(b, l, inBounds, ok);
            }
            full[d] = clampIndex(b, l, iv[k], 0, hi);
          }
          // Batching dims: the operand position is the matching indices
          // position.
          SmallVector<int64_t> indexBatchDims;
          for (int64_t d = 0; d < indicesT.getRank(); ++d)
            if (d != ivd)
              indexBatchDims.push_back(d);
          for (auto [od, idim] : llvm::zip(op.getOperandBatchingDims(),
                                           op.getStartIndicesBatchingDims())) {
            auto it = llvm::find(indexBatchDims, idim);
            full[od] = batch[it - indexBatchDims.begin()];
          }
          unsigned oi = 0;
          for (int64_t d = 0; d < operand.getRank(); ++d) {
            if (llvm::is_contained(op.getCollapsedSliceDims(), d) ||
                llvm::is_contained(op.getOperandBatchingDims(), d))
              continue;
            full[d] = arith::AddIOp::create(b, l, full[d], offsets[oi++]);
          }
          Value v = tensor::ExtractOp::create(b, l, src, full);
          if (fill) {
            Value z =
                constScalar(b, l, cast<TypedAttr>(b.getZeroAttr(v.getType())));
            if (isa<FloatType>(v.getType()))
              z = constScalar(b, l, b.getFloatAttr(v.getType(), NAN));
            else if (operand.getElementType().isInteger(1))
              z = constScalar(b, l, b.getIntegerAttr(v.getType(), 1));
            v = arith::SelectOp::create(b, l, inBounds, v, z);
          }
          return SmallVector<Value>{v};
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct ScatterLowering : public OpConversionPattern<ScatterOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScatterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto operand = op.getOperand().getType();
    auto updatesT = op.getUpdates().getType();
    auto indicesT = op.getScatterIndices().getType();
    Type idxOrig = indicesT.getElementType();
    Type orig = operand.getElementType();
    int64_t ivd = op.getIndexVectorDim();
    int64_t count = op.getScatterDimsToOperandDims().size();
    auto windowDims = op.getUpdateWindowDims();
    bool clip = op.getMode() == IndexMode::Clip;
    auto kind = op.getKind();
    Value indices = adaptor.getScatterIndices(), updates = adaptor.getUpdates();
    // Operand dims that receive update window dims, in order.
    SmallVector<int64_t> windowOperandDims;
    for (int64_t d = 0; d < operand.getRank(); ++d)
      if (!llvm::is_contained(op.getInsertedWindowDims(), d) &&
          !llvm::is_contained(op.getOperandBatchingDims(), d))
        windowOperandDims.push_back(d);
    SmallVector<int64_t> windowSize(operand.getRank(), 1);
    for (auto [k, d] : llvm::enumerate(windowOperandDims))
      windowSize[d] = updatesT.getDimSize(windowDims[k]);
    SmallVector<int64_t> indexBatchDims;
    for (int64_t d = 0; d < indicesT.getRank(); ++d)
      if (d != ivd)
        indexBatchDims.push_back(d);

    SmallVector<Value> lbs, ubs, steps;
    for (int64_t d = 0; d < updatesT.getRank(); ++d) {
      lbs.push_back(indexConst(rewriter, loc, 0));
      ubs.push_back(indexConst(rewriter, loc, updatesT.getDimSize(d)));
      steps.push_back(indexConst(rewriter, loc, 1));
    }
    auto nest = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, ValueRange{adaptor.getOperand()},
        [&](OpBuilder &b, Location l, ValueRange ivs,
            ValueRange iter) -> scf::ValueVector {
          Value acc = iter[0];
          SmallVector<Value> scatterPos, windowPos;
          for (int64_t d = 0; d < updatesT.getRank(); ++d)
            (llvm::is_contained(windowDims, d) ? windowPos : scatterPos)
                .push_back(ivs[d]);
          SmallVector<Value> iv =
              readIndexVector(b, l, indices, idxOrig, scatterPos, ivd, count);
          SmallVector<Value> full(operand.getRank(), indexConst(b, l, 0));
          Value ok = arith::ConstantOp::create(b, l, b.getBoolAttr(true));
          for (int64_t k = 0; k < count; ++k) {
            int64_t d = op.getScatterDimsToOperandDims()[k];
            int64_t hi = operand.getDimSize(d) - windowSize[d];
            if (clip) {
              full[d] = clampIndex(b, l, iv[k], 0, hi);
            } else {
              full[d] = iv[k];
              ok = arith::AndIOp::create(
                  b, l, ok,
                  arith::AndIOp::create(
                      b, l,
                      arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge,
                                            iv[k], indexConst(b, l, 0)),
                      arith::CmpIOp::create(b, l, arith::CmpIPredicate::sle,
                                            iv[k], indexConst(b, l, hi))));
            }
          }
          for (auto [od, idim] :
               llvm::zip(op.getOperandBatchingDims(),
                         op.getScatterIndicesBatchingDims())) {
            auto it = llvm::find(indexBatchDims, idim);
            full[od] = scatterPos[it - indexBatchDims.begin()];
          }
          for (auto [k, d] : llvm::enumerate(windowOperandDims))
            full[d] = arith::AddIOp::create(b, l, full[d], windowPos[k]);
          auto ifOp = scf::IfOp::create(
              b, l, ok,
              [&](OpBuilder &tb, Location tl) {
                Value u = tensor::ExtractOp::create(tb, tl, updates, ivs);
                Value v = u;
                if (kind != ScatterKind::Replace) {
                  Value old = tensor::ExtractOp::create(tb, tl, acc, full);
                  ReduceKind rk = kind == ScatterKind::Add   ? ReduceKind::Sum
                                  : kind == ScatterKind::Mul ? ReduceKind::Prod
                                  : kind == ScatterKind::Min ? ReduceKind::Min
                                                             : ReduceKind::Max;
                  v = buildCombiner(tb, tl, rk, old, u, orig);
                }
                Value n = tensor::InsertOp::create(tb, tl, v, acc, full);
                scf::YieldOp::create(tb, tl, n);
              },
              [&](OpBuilder &eb, Location el) {
                scf::YieldOp::create(eb, el, acc);
              });
          return {ifOp.getResult(0)};
        });
    rewriter.replaceOp(op, nest.results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Host callbacks
//===----------------------------------------------------------------------===//

/// The code of an element type in a host callback's signature record
/// (EMBER_TYPE_CODE in Runtime.def; Python reads the same table).
int64_t hostTypeCode(Type t) {
  std::string name;
  if (t.isF16())
    name = "float16";
  else if (t.isBF16())
    name = "bfloat16";
  else if (t.isF32())
    name = "float32";
  else if (t.isF64())
    name = "float64";
  else if (auto i = dyn_cast<IntegerType>(t))
    name = i.getWidth() == 1 ? std::string("bool")
                             : (i.isUnsigned() ? "uint" : "int") +
                                   std::to_string(i.getWidth());
  else if (auto c = dyn_cast<ComplexType>(t))
    name = c.getElementType().isF32() ? "complex64" : "complex128";
  return runtime::typeCode(name);
}

/// Declares the external runtime function `name` once.
void declareRuntimeFunction(ModuleOp module, StringRef name) {
  if (module.lookupSymbol(name))
    return;
  const runtime::EntryPoint *entry = runtime::lookupEntryPoint(name);
  if (!entry)
    llvm::report_fatal_error(llvm::Twine("ember: '") + name +
                             "' is not a runtime entry point (Runtime.def)");
  Builder tb(module.getContext());
  SmallVector<Type> params;
  for (runtime::Param p : entry->params) {
    switch (p) {
    case runtime::Param::I64:
      params.push_back(tb.getI64Type());
      break;
    case runtime::Param::Addr:
      params.push_back(tb.getIndexType());
      break;
    case runtime::Param::MemRefI64:
      params.push_back(
          MemRefType::get({ShapedType::kDynamic}, tb.getI64Type()));
      break;
    case runtime::Param::MemRefIndex:
      params.push_back(
          MemRefType::get({ShapedType::kDynamic}, tb.getIndexType()));
      break;
    }
  }
  FunctionType type = tb.getFunctionType(params, {});
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  auto decl = func::FuncOp::create(mb, module.getLoc(), name, type);
  decl.setPrivate();
}

/// Builds `func.func private @<prefix>_<k>(inTypes) -> resultTypes` that
/// hands raw buffers to a runtime function: its tensor arguments become
/// read-only buffers, its results freshly allocated buffers, and `emit` gets
/// their aligned addresses (index values) to build the runtime call. Being
/// arguments of the helper keeps the operand buffers alive across the call
/// (extracting an address is not a use the deallocation pipeline respects).
/// Returns the helper's name.
std::string buildBufferHelper(
    ModuleOp module, Location loc, StringRef prefix, TypeRange inTypes,
    TypeRange resultTypes,
    function_ref<void(OpBuilder &, ArrayRef<Value>, ArrayRef<Value>)> emit) {
  std::string name;
  for (int k = 0;; ++k) {
    name = (prefix + "_" + Twine(k)).str();
    if (!module.lookupSymbol(name))
      break;
  }
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  auto helper = func::FuncOp::create(mb, loc, name,
                                     mb.getFunctionType(inTypes, resultTypes));
  helper.setPrivate();
  Block *body = helper.addEntryBlock();
  OpBuilder hb = OpBuilder::atBlockEnd(body);
  auto bufferOf = [&](Type t) {
    auto tt = cast<RankedTensorType>(t);
    return MemRefType::get(tt.getShape(), tt.getElementType());
  };
  SmallVector<Value> inPtrs, outPtrs, outBufs;
  for (BlockArgument a : body->getArguments()) {
    Value m =
        bufferization::ToBufferOp::create(hb, loc, bufferOf(a.getType()), a,
                                          /*readOnly=*/true);
    inPtrs.push_back(
        memref::ExtractAlignedPointerAsIndexOp::create(hb, loc, m));
  }
  for (Type t : resultTypes) {
    Value m = memref::AllocOp::create(hb, loc, bufferOf(t));
    outBufs.push_back(m);
    outPtrs.push_back(
        memref::ExtractAlignedPointerAsIndexOp::create(hb, loc, m));
  }
  emit(hb, inPtrs, outPtrs);
  SmallVector<Value> outs;
  for (auto [m, t] : llvm::zip(outBufs, resultTypes))
    outs.push_back(bufferization::ToTensorOp::create(hb, loc, t, m,
                                                     /*restrict=*/true,
                                                     /*writable=*/true));
  func::ReturnOp::create(hb, loc, outs);
  return name;
}

/// `ember.host_callback` becomes a call of a buffer helper that calls
///
///   ember_host_callback(signature, operand addresses, result addresses)
///
/// where `signature` is an i64 record [callback id, #operands, #results,
/// then per value: type code, rank, dims...] and the address lists are
/// memrefs of indices.
struct HostCallbackLowering : public OpConversionPattern<HostCallbackOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(HostCallbackOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto module = op->getParentOfType<ModuleOp>();
    SmallVector<Type> resultTypes;
    if (failed(
            getTypeConverter()->convertTypes(op.getResultTypes(), resultTypes)))
      return failure();

    // The signature record, from the op's own (unconverted) types.
    SmallVector<int64_t> sig = {op.getCallbackIdAttr().getInt(),
                                (int64_t)op.getNumOperands(),
                                (int64_t)op.getNumResults()};
    auto describe = [&](Type t) {
      auto rt = cast<RankedTensorType>(t);
      sig.push_back(hostTypeCode(rt.getElementType()));
      sig.push_back(rt.getRank());
      sig.append(rt.getShape().begin(), rt.getShape().end());
    };
    for (Type t : op.getOperandTypes())
      describe(t);
    for (Type t : op.getResultTypes())
      describe(t);
    if (llvm::is_contained(sig, -1))
      return rewriter.notifyMatchFailure(op, "unsupported element type");

    Builder tb(op.getContext());
    auto i64 = tb.getI64Type();
    auto idx = tb.getIndexType();
    auto dynI64 = MemRefType::get({ShapedType::kDynamic}, i64);
    auto dynIdx = MemRefType::get({ShapedType::kDynamic}, idx);
    StringRef entry = "ember_host_callback";
    declareRuntimeFunction(module, entry);
    ValueRange ins = adaptor.getOperands();
    std::string name = buildBufferHelper(
        module, loc, "__ember_host_callback", TypeRange(ins), resultTypes,
        [&](OpBuilder &hb, ArrayRef<Value> inPtrs, ArrayRef<Value> outPtrs) {
          auto sigConst = arith::ConstantOp::create(
              hb, loc,
              DenseElementsAttr::get(
                  RankedTensorType::get({(int64_t)sig.size()}, i64),
                  ArrayRef<int64_t>(sig)));
          Value sigBuf = bufferization::ToBufferOp::create(
              hb, loc, MemRefType::get({(int64_t)sig.size()}, i64), sigConst,
              /*readOnly=*/true);
          auto addresses = [&](ArrayRef<Value> ptrs) -> Value {
            auto t = MemRefType::get(
                {(int64_t)std::max<size_t>(ptrs.size(), 1)}, idx);
            Value buf = memref::AllocaOp::create(hb, loc, t);
            for (auto [i, p] : llvm::enumerate(ptrs))
              memref::StoreOp::create(hb, loc, p, buf,
                                      ValueRange{indexConst(hb, loc, i)});
            return memref::CastOp::create(hb, loc, dynIdx, buf);
          };
          Value argBuf = addresses(inPtrs), resBuf = addresses(outPtrs);
          func::CallOp::create(
              hb, loc, entry, TypeRange{},
              ValueRange{memref::CastOp::create(hb, loc, dynI64, sigBuf),
                         argBuf, resBuf});
        });
    rewriter.replaceOpWithNewOp<func::CallOp>(op, name, resultTypes, ins);
    return success();
  }
};

/// Bytes of a tensor's buffer (i1 elements take a byte, as in memory).
int64_t bufferBytes(Type t) {
  auto rt = cast<RankedTensorType>(t);
  Type e = rt.getElementType();
  int64_t parts = 1;
  if (auto c = dyn_cast<ComplexType>(e)) {
    parts = 2;
    e = c.getElementType();
  }
  return rt.getNumElements() * parts * ((e.getIntOrFloatBitWidth() + 7) / 8);
}

/// The run-time stack ops become calls of buffer helpers that move one value
/// at a time (docs/decisions.md, "Reverse mode through loops"):
///
///   ember_stack_push(handle in, handle out, data, bytes, lanes)   (per value)
///   ember_stack_read(handle, index, lanes, push bytes, offset, data,
///                    lane bytes)                             (per value)
///   ember_stack_release(handle in, handle out, index, lanes)
///   ember_stack_free(handle)
///
/// with the addresses of the handle, index and data buffers.
template <typename OpT> struct StackLowering : public OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  using Adaptor = typename OpConversionPattern<OpT>::OpAdaptor;
  LogicalResult
  matchAndRewrite(OpT op, Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto module = op->template getParentOfType<ModuleOp>();
    SmallVector<Type> resultTypes;
    if (failed(this->getTypeConverter()->convertTypes(op->getResultTypes(),
                                                      resultTypes)))
      return failure();
    constexpr bool isPush = std::is_same_v<OpT, StackPushOp>;
    constexpr bool isPop = std::is_same_v<OpT, StackPopOp>;
    StringRef base = isPush  ? "ember_stack_push"
                     : isPop ? "ember_stack_pop"
                             : "ember_stack_free";
    // (ember_stack_pop names only the helper: it calls read and release.)
    if (isPop) {
      declareRuntimeFunction(module, "ember_stack_read");
      declareRuntimeFunction(module, "ember_stack_release");
    } else {
      declareRuntimeFunction(module, base);
    }
    SmallVector<int64_t> bytes;
    if (isPush || isPop)
      for (Type t : isPush ? TypeRange(op->getOperandTypes()).drop_front()
                           : TypeRange(op->getResultTypes()).drop_front())
        bytes.push_back(bufferBytes(t));
    int64_t lanes = 0;
    if constexpr (isPush || isPop)
      lanes = (int64_t)op.getLanes().value_or(0);
    ValueRange ins = adaptor.getOperands();
    std::string name = buildBufferHelper(
        module, loc, ("__" + base).str(), TypeRange(ins), resultTypes,
        [&](OpBuilder &hb, ArrayRef<Value> inPtrs, ArrayRef<Value> outPtrs) {
          auto i64c = [&](int64_t v) {
            return (Value)arith::ConstantOp::create(hb, loc,
                                                    hb.getI64IntegerAttr(v));
          };
          if (isPush) {
            for (auto [j, n] : llvm::enumerate(bytes))
              func::CallOp::create(hb, loc, base, TypeRange{},
                                   ValueRange{j == 0 ? inPtrs[0] : outPtrs[0],
                                              outPtrs[0], inPtrs[j + 1],
                                              i64c(n), i64c(lanes)});
          } else if (isPop) {
            // A push holds its values one after another.
            int64_t entry = 0;
            for (int64_t n : bytes)
              entry += n;
            int64_t offset = 0;
            for (auto [j, n] : llvm::enumerate(bytes)) {
              func::CallOp::create(hb, loc, "ember_stack_read", TypeRange{},
                                   ValueRange{inPtrs[0], inPtrs[1], i64c(lanes),
                                              i64c(entry), i64c(offset),
                                              outPtrs[j + 1],
                                              i64c(lanes ? n / lanes : n)});
              offset += n;
            }
            func::CallOp::create(
                hb, loc, "ember_stack_release", TypeRange{},
                ValueRange{inPtrs[0], outPtrs[0], inPtrs[1], i64c(lanes)});
          } else {
            func::CallOp::create(hb, loc, base, TypeRange{},
                                 ValueRange{inPtrs[0]});
          }
        });
    rewriter.replaceOpWithNewOp<func::CallOp>(op, name, resultTypes, ins);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct EmberToLinalgPass
    : public mlir::ember::impl::EmberToLinalgPassBase<EmberToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    EmberTypeConverter converter;
    ConversionTarget target(*ctx);
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, complex::ComplexDialect>();
    target.addIllegalDialect<EmberDialect>();
    target.addDynamicallyLegalOp<OptimizationBarrierOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp f) {
      return converter.isSignatureLegal(f.getFunctionType()) &&
             converter.isLegal(&f.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    RewritePatternSet patterns(ctx);
    populateEmberToLinalgPatterns(converter, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    // Arguments belong to the caller (value semantics): bufferization must
    // never write into them in place.
    OpBuilder b(ctx);
    getOperation().walk([&](func::FuncOp f) {
      if (f.isExternal())
        return;
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        if (isa<TensorType>(f.getArgument(i).getType()))
          f.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
    });
  }
};

} // namespace

void mlir::ember::populateEmberToLinalgPatterns(const TypeConverter &converter,
                                                RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ElementwiseLowering>(converter, ctx);
  patterns.add<
      ConstantLowering, IotaLowering, StopGradientLowering,
      OptimizationBarrierLowering, BitcastResizeLowering, WhileLowering,
      CaseLowering, YieldLowering, BroadcastInDimLowering, ReshapeLowering,
      TransposeLowering, SliceLowering, DynamicSliceLowering,
      DynamicUpdateSliceLowering, PadLowering, ConcatenateLowering,
      ReverseLowering, ReduceLowering, ArgReduceLowering<ArgMaxOp, true>,
      ArgReduceLowering<ArgMinOp, false>, CumulativeLowering,
      ReduceWindowLowering, SortLowering, DotGeneralLowering, GatherLowering,
      ScatterLowering, HostCallbackLowering, StackLowering<StackPushOp>,
      StackLowering<StackPopOp>, StackLowering<StackFreeOp>>(converter, ctx);
}
