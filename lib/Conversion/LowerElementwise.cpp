//===- LowerElementwise.cpp - elementwise ops -----------------------------===//
//
// Every op with the Elementwise trait becomes one linalg.generic whose body
// is built by buildElementwiseScalar (EmberToLinalgScalar.cpp);
// bitcast_convert between element widths splits or merges elements.
//
//===----------------------------------------------------------------------===//
#include "EmberToLinalgCommon.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::ember;

namespace {

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
    auto results = buildGeneric(
        rewriter, op->getLoc(), operands, outTypes,
        [&](OpBuilder &b, Location loc, ValueRange stored) {
          // Booleans (and 2- and 4-bit integers) arrive as i8 storage:
          // compute on their own width, store back as i8 (the value in the
          // low bits).
          auto narrowWidth = [](Type t) {
            auto it = dyn_cast<IntegerType>(getElementTypeOrSelf(t));
            return it && it.getWidth() < 8 ? it.getWidth() : 0u;
          };
          SmallVector<Value> args(stored);
          for (auto [i, v] : llvm::enumerate(op->getOperands()))
            if (unsigned w = narrowWidth(v.getType()))
              args[i] =
                  arith::TruncIOp::create(b, loc, b.getIntegerType(w), args[i]);
          SmallVector<Value> r = buildElementwiseScalar(b, loc, op, args);
          for (Value &v : r)
            if (narrowWidth(v.getType()))
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
      auto r = buildGeneric(
          rewriter, loc, adaptor.getOperand(), TypeRange{out},
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
            return SmallVector<Value>{
                fromInt(b, l, part, out.getElementType())};
          },
          AffineMap::get(rank, 0, inExprs, ctx));
      rewriter.replaceOp(op, r);
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
    SmallVector<utils::IteratorType> iters = parallelIterators(rank);
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
      result = buildGeneric(rewriter, loc, ValueRange{result}, TypeRange{out},
                            [&](OpBuilder &b, Location l, ValueRange xs) {
                              return SmallVector<Value>{
                                  fromInt(b, l, xs[0], out.getElementType())};
                            })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::ember::populateElementwiseLoweringPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ElementwiseLowering, BitcastResizeLowering>(
      converter, patterns.getContext());
}
