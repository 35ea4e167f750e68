//===- EmberNarrowFloats.cpp - 8- and 4-bit floats without LLVM types -----===//
//
// LLVM has no 8- or 4-bit float types. Arithmetic on them computes in f32
// (upstream's emulation patterns); constants, extensions and truncations
// become integer ops here (EmberPasses.td, "ember-narrow-floats").
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERNARROWFLOATSPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {

bool isNarrowFloat(Type t) {
  auto f = dyn_cast<FloatType>(t);
  return f && f.getWidth() <= 8;
}

/// The narrow float types MLIR has (those LLVM cannot compute on).
SmallVector<Type> narrowFloatTypes(MLIRContext *ctx) {
  return {Float8E4M3FNType::get(ctx),      Float8E5M2Type::get(ctx),
          Float8E4M3Type::get(ctx),        Float8E4M3FNUZType::get(ctx),
          Float8E4M3B11FNUZType::get(ctx), Float8E5M2FNUZType::get(ctx),
          Float8E3M4Type::get(ctx),        Float8E8M0FNUType::get(ctx),
          Float4E2M1FNType::get(ctx),      Float6E2M3FNType::get(ctx),
          Float6E3M2FNType::get(ctx)};
}

uint64_t bitsOf(const llvm::APFloat &v) {
  return v.bitcastToAPInt().getZExtValue();
}

class Expander {
public:
  Expander(ModuleOp module) : module(module) {}

  /// Replaces `op` (a constant, extension or truncation of a narrow float).
  LogicalResult rewrite(Operation *op) {
    IRRewriter rewriter(op);
    rewriter.setInsertionPoint(op);
    Location loc = op->getLoc();
    if (isa<VectorType>(op->getResult(0).getType()))
      return op->emitError("ember-narrow-floats: vectors of 8- or 4-bit "
                           "floats are not supported");
    Value r;
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      auto ft = cast<FloatType>(c.getType());
      auto it = rewriter.getIntegerType(ft.getWidth());
      auto v = cast<FloatAttr>(c.getValue()).getValue();
      Value bits = arith::ConstantOp::create(
          rewriter, loc, it, rewriter.getIntegerAttr(it, v.bitcastToAPInt()));
      r = arith::BitcastOp::create(rewriter, loc, ft, bits);
    } else {
      Value x = op->getOperand(0);
      auto dst = cast<FloatType>(op->getResult(0).getType());
      Value f = toF32(rewriter, loc, x);
      r = fromF32(rewriter, loc, f, dst);
    }
    rewriter.replaceOp(op, r);
    return success();
  }

private:
  /// `x` (any float) as f32: narrow floats by their table (exact), f64 by
  /// rounding (a narrow result is then rounded twice).
  Value toF32(OpBuilder &b, Location loc, Value x) {
    auto t = cast<FloatType>(x.getType());
    if (t.isF32())
      return x;
    if (!isNarrowFloat(t))
      return t.getWidth() < 32
                 ? (Value)arith::ExtFOp::create(b, loc, b.getF32Type(), x)
                 : (Value)arith::TruncFOp::create(b, loc, b.getF32Type(), x);
    Value bits =
        arith::BitcastOp::create(b, loc, b.getIntegerType(t.getWidth()), x);
    Value index = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), bits);
    Value table = memref::GetGlobalOp::create(b, loc, tableType(t),
                                              tableFor(t).getSymName());
    return memref::LoadOp::create(b, loc, table, ValueRange{index});
  }

  /// The f32 `f` as `dst`.
  Value fromF32(OpBuilder &b, Location loc, Value f, FloatType dst) {
    if (dst.isF32())
      return f;
    if (isNarrowFloat(dst))
      return truncate(b, loc, f, dst);
    return dst.getWidth() > 32 ? (Value)arith::ExtFOp::create(b, loc, dst, f)
                               : (Value)arith::TruncFOp::create(b, loc, dst, f);
  }

  MemRefType tableType(FloatType t) {
    return MemRefType::get({int64_t(1) << t.getWidth()},
                           Float32Type::get(t.getContext()));
  }

  /// `memref.global` of the type's values as f32, one per bit pattern.
  memref::GlobalOp tableFor(FloatType t) {
    auto it = tables.find(t);
    if (it != tables.end())
      return it->second;
    const llvm::fltSemantics &sem = t.getFloatSemantics();
    SmallVector<float> values;
    for (uint64_t i = 0, n = uint64_t(1) << t.getWidth(); i < n; ++i) {
      llvm::APFloat v(sem, llvm::APInt(t.getWidth(), i));
      if (v.isNaN()) { // (APFloat converts f8E8M0FNU's NaN to infinity)
        values.push_back(std::numeric_limits<float>::quiet_NaN());
        continue;
      }
      bool lost;
      v.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven,
                &lost);
      values.push_back(v.convertToFloat());
    }
    OpBuilder b(module.getBodyRegion());
    std::string name;
    llvm::raw_string_ostream os(name);
    os << "__ember_" << t << "_values";
    auto type = tableType(t);
    auto init = DenseElementsAttr::get(
        RankedTensorType::get(type.getShape(), type.getElementType()),
        ArrayRef<float>(values));
    auto global = memref::GlobalOp::create(
        b, module.getLoc(), name, b.getStringAttr("private"), type, init,
        /*constant=*/true, /*alignment=*/nullptr);
    SymbolTable(module).insert(global);
    return tables[t] = global;
  }

  /// The f32 `x` rounded to `dst` (nearest, ties to even), as XLA converts:
  /// overflow gives infinity, else NaN, else (no NaN) the largest value;
  /// NaN gives NaN (no NaN: the sign bit alone); a type without zero gives
  /// NaN for zero and its smallest value on underflow; an unsigned type
  /// NaN for negative numbers.
  Value truncate(OpBuilder &b, Location loc, Value x, FloatType dst) {
    using llvm::APFloat;
    const llvm::fltSemantics &sem = dst.getFloatSemantics();
    unsigned w = dst.getWidth();
    int p = APFloat::semanticsPrecision(sem);
    int emin = APFloat::semanticsMinExponent(sem);
    bool hasInf = APFloat::semanticsHasInf(sem);
    bool hasNaN = APFloat::semanticsHasNaN(sem);
    bool hasZero = APFloat::semanticsHasZero(sem);
    bool isSigned = APFloat::semanticsHasSignedRepr(sem);
    bool negZero = hasZero && bitsOf(APFloat::getZero(sem, true)) != 0;
    unsigned expBits = w - (isSigned ? 1 : 0) - (p - 1);
    int64_t bias =
        (bitsOf(APFloat::getOne(sem)) >> (p - 1)) & ((1u << expBits) - 1);
    int64_t nanBits = hasNaN ? bitsOf(APFloat::getQNaN(sem)) : 1 << (w - 1);
    APFloat largest = APFloat::getLargest(sem);
    int64_t largestBits = bitsOf(largest);
    bool lost;
    largest.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);

    Type i32 = b.getI32Type(), f32 = b.getF32Type();
    auto ci = [&](int64_t v) -> Value {
      return arith::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(v));
    };
    auto cf = [&](float v) -> Value {
      return arith::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(v));
    };
    auto cmpi = [&](arith::CmpIPredicate pred, Value l, Value r) -> Value {
      return arith::CmpIOp::create(b, loc, pred, l, r);
    };
    auto cmpf = [&](arith::CmpFPredicate pred, Value l, Value r) -> Value {
      return arith::CmpFOp::create(b, loc, pred, l, r);
    };
    auto sel = [&](Value c, Value t, Value f) -> Value {
      return arith::SelectOp::create(b, loc, c, t, f);
    };
    auto shl = [&](Value v, Value s) -> Value {
      return arith::ShLIOp::create(b, loc, v, s);
    };
    auto shr = [&](Value v, Value s) -> Value {
      return arith::ShRUIOp::create(b, loc, v, s);
    };
    auto add = [&](Value l, Value r) -> Value {
      return arith::AddIOp::create(b, loc, l, r);
    };
    auto band = [&](Value l, Value r) -> Value {
      return arith::AndIOp::create(b, loc, l, r);
    };
    auto bor = [&](Value l, Value r) -> Value {
      return arith::OrIOp::create(b, loc, l, r);
    };
    // y * 2^k for k in [-252, 254], by two normal powers of two (compiled
    // code reads subnormals as zero, as XLA's).
    auto mulPow2 = [&](Value y, Value k) -> Value {
      Value k1 = arith::ShRSIOp::create(b, loc, k, ci(1));
      Value k2 = arith::SubIOp::create(b, loc, k, k1);
      for (Value kk : {k1, k2})
        y = arith::MulFOp::create(
            b, loc, y,
            arith::BitcastOp::create(b, loc, f32,
                                     shl(add(kk, ci(127)), ci(23))));
      return y;
    };

    Value xb = arith::BitcastOp::create(b, loc, i32, x);
    Value sign32 = band(xb, ci(INT32_MIN));
    Value signN = isSigned ? shr(sign32, ci(32 - w)) : ci(0);
    Value a = math::AbsFOp::create(b, loc, x);
    // The binade's exponent (f32 subnormals: -127), at least the type's
    // smallest normal one; the quantum there is 2^(e - (p - 1)).
    Value e = add(band(shr(xb, ci(23)), ci(0xff)), ci(-127));
    Value eq = arith::MaxSIOp::create(b, loc, e, ci(emin));
    Value qexp = add(eq, ci(-(p - 1)));
    Value scaled = mulPow2(a, arith::SubIOp::create(b, loc, ci(0), qexp));
    Value r = math::RoundEvenOp::create(b, loc, scaled);
    Value v = mulPow2(r, qexp);
    // Below the normal range the field is the rounded quotient (a carry
    // makes it the smallest normal number's); else the exponent and the
    // leading mantissa bits of the rounded value.
    Value vb = arith::BitcastOp::create(b, loc, i32, v);
    Value exponent = add(band(shr(vb, ci(23)), ci(0xff)), ci(bias - 127));
    Value mantissa = shr(band(vb, ci(0x7fffff)), ci(24 - p));
    Value normalField = bor(shl(exponent, ci(p - 1)), mantissa);
    Value subField = arith::FPToUIOp::create(b, loc, i32, r);
    Value field = sel(cmpi(arith::CmpIPredicate::slt, e, ci(emin)), subField,
                      normalField);
    Value magnitude = band(xb, ci(INT32_MAX));
    if (emin < -126) {
      // (f8E8M0FNU, p = 1: an f32 subnormal m * 2^-149 rounds to 2^-126
      // (field 1) from 1.5 * 2^-127 on, else to 2^-127 (field 0); the
      // float ops above read it as zero.)
      assert(p == 1 && "a type reaching below f32's normal range");
      Value isSub =
          cmpi(arith::CmpIPredicate::eq, shr(xb, ci(23)), shr(sign32, ci(23)));
      Value up = cmpi(arith::CmpIPredicate::uge, magnitude, ci(0x600000));
      field = sel(isSub, arith::ExtUIOp::create(b, loc, i32, up), field);
    }
    Value res = bor(field, signN);
    if (!negZero)
      res = sel(cmpi(arith::CmpIPredicate::eq, field, ci(0)), field, res);
    Value over = arith::OrIOp::create(
        b, loc,
        cmpf(arith::CmpFPredicate::OGT, v, cf(largest.convertToFloat())),
        cmpf(arith::CmpFPredicate::OEQ, a,
             cf(std::numeric_limits<float>::infinity())));
    int64_t overBits = hasInf   ? bitsOf(APFloat::getInf(sem))
                       : hasNaN ? nanBits
                                : largestBits;
    res = sel(over, bor(ci(overBits), signN), res);
    if (!hasZero)
      res = sel(cmpi(arith::CmpIPredicate::eq, magnitude, ci(0)), ci(nanBits),
                res);
    if (!isSigned)
      res =
          sel(cmpi(arith::CmpIPredicate::ne, sign32, ci(0)), ci(nanBits), res);
    res = sel(cmpf(arith::CmpFPredicate::UNO, x, x), bor(ci(nanBits), signN),
              res);
    Value narrow = arith::TruncIOp::create(b, loc, b.getIntegerType(w), res);
    return arith::BitcastOp::create(b, loc, dst, narrow);
  }

  ModuleOp module;
  llvm::DenseMap<Type, memref::GlobalOp> tables;
};

struct EmberNarrowFloatsPass
    : public mlir::ember::impl::EmberNarrowFloatsPassBase<
          EmberNarrowFloatsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // Arithmetic in f32 (extensions and truncations around each op).
    TypeConverter converter;
    arith::populateEmulateUnsupportedFloatsConversions(
        converter, narrowFloatTypes(ctx), Float32Type::get(ctx));
    RewritePatternSet patterns(ctx);
    arith::populateEmulateUnsupportedFloatsPatterns(patterns, converter);
    ConversionTarget target(*ctx);
    arith::populateEmulateUnsupportedFloatsLegality(target, converter);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    // Then the conversions themselves, and constants.
    SmallVector<Operation *> todo;
    module.walk([&](Operation *op) {
      bool narrow =
          TypeSwitch<Operation *, bool>(op)
              .Case([](arith::ConstantOp c) {
                // (Tensor constants are bytes in memory already: their
                // globals store the bits.)
                return !isa<TensorType>(c.getType()) &&
                       isNarrowFloat(getElementTypeOrSelf(c.getType()));
              })
              .Case<arith::ExtFOp, arith::TruncFOp>([](Operation *o) {
                return isNarrowFloat(
                           getElementTypeOrSelf(o->getOperand(0).getType())) ||
                       isNarrowFloat(
                           getElementTypeOrSelf(o->getResult(0).getType()));
              })
              .Default([](Operation *) { return false; });
      if (narrow)
        todo.push_back(op);
    });
    Expander expander(module);
    for (Operation *op : todo)
      if (failed(expander.rewrite(op)))
        return signalPassFailure();
  }
};

} // namespace
