//===- LowerGatherScatter.cpp - gather and scatter ------------------------===//
//
// gather becomes a linalg.generic that reads the operand at computed
// positions; scatter a loop nest over the updates.
//
//===----------------------------------------------------------------------===//
#include "EmberToLinalgCommon.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::ember;

namespace {

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

/// JAX's fill of an out-of-bounds gather window for the element type
/// `orig` (converted to `t`): NaN (NaN + 0i), the least signed or largest
/// unsigned integer, true.
TypedAttr gatherFillValue(OpBuilder &b, Type orig, Type t) {
  if (auto c = dyn_cast<ComplexType>(t))
    return complex::NumberAttr::get(c, NAN, 0.0);
  if (isa<FloatType>(t))
    return floatAttrOf(t, NAN);
  auto it = cast<IntegerType>(orig);
  unsigned w = it.getWidth();
  if (w == 1)
    return b.getIntegerAttr(t, 1);
  return b.getIntegerAttr(t, it.isUnsigned() ? APInt::getMaxValue(w)
                                             : APInt::getSignedMinValue(w));
}

/// Whether the index `i` lies in [0, hi].
Value inIndexRange(OpBuilder &b, Location loc, Value i, int64_t hi) {
  return arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, i,
                            indexConst(b, loc, 0)),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, i,
                            indexConst(b, loc, hi)));
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
    auto r = buildGeneric(
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
              inBounds = arith::AndIOp::create(b, l, inBounds,
                                               inIndexRange(b, l, iv[k], hi));
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
            Value z = constScalar(
                b, l,
                gatherFillValue(b, operand.getElementType(), v.getType()));
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
              ok = arith::AndIOp::create(b, l, ok,
                                         inIndexRange(b, l, iv[k], hi));
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

} // namespace

void mlir::ember::populateGatherScatterLoweringPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<GatherLowering, ScatterLowering>(converter,
                                                patterns.getContext());
}
