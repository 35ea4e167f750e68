//===- LowerStructural.cpp - data movement ops ----------------------------===//
//
// Ops that create or move data without arithmetic: constants, iota,
// broadcast_in_dim, reshape, transpose, slices, pad, concatenate, reverse,
// and the identities stop_gradient, checkpoint_name and
// optimization_barrier.
//
//===----------------------------------------------------------------------===//
#include "EmberToLinalgCommon.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::ember;

namespace {

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
    auto origInt = dyn_cast<IntegerType>(orig);
    if (origInt && origInt.getWidth() < 8) // (bools, 2- and 4-bit integers)
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
    auto r = buildGeneric(
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
    auto r = buildGeneric(
        rewriter, op.getLoc(), adaptor.getOperand(), {type},
        [](OpBuilder &, Location, ValueRange args) {
          return SmallVector<Value>{args[0]};
        },
        AffineMap::get(type.getRank(), 0, exprs, ctx));
    rewriter.replaceOp(op, r);
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

/// Identities that only mean something to the transformations.
template <typename OpT>
struct IdentityLowering : public OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
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
    if (type.getNumElements() == 0) {
      // (Nothing to compute; a slice of an empty result may start at the
      // end of the padded tensor, which tensor.extract_slice rejects.)
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, type));
      return success();
    }
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
    // (An empty operand inserts nothing; its offset may be the end, which
    // tensor.insert_slice rejects: the transpose of x[n:].)
    if (in.getNumElements() != 0)
      big = tensor::InsertSliceOp::create(
          rewriter, loc, adaptor.getOperand(), big, ValueRange{}, ValueRange{},
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
      // Empty pieces add nothing (and a slice may not start at the end).
      if (t.getNumElements() == 0)
        continue;
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
    auto r = buildGeneric(
        rewriter, op.getLoc(), adaptor.getOperand(), {type},
        [](OpBuilder &, Location, ValueRange args) {
          return SmallVector<Value>{args[0]};
        },
        AffineMap::get(rank, 0, exprs, ctx));
    rewriter.replaceOp(op, r);
    return success();
  }
};

} // namespace

void mlir::ember::populateStructuralLoweringPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ConstantLowering, IotaLowering, IdentityLowering<StopGradientOp>,
               IdentityLowering<CheckpointNameOp>, OptimizationBarrierLowering,
               BroadcastInDimLowering, ReshapeLowering, TransposeLowering,
               SliceLowering, DynamicSliceLowering, DynamicUpdateSliceLowering,
               PadLowering, ConcatenateLowering, ReverseLowering>(
      converter, patterns.getContext());
}
