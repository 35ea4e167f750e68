//===- EmberToLinalgScalar.cpp - scalar bodies of elementwise ops ---------===//
//
// The per-element computation of every elementwise ember op, built from
// arith/math/complex ops. Unsigned element types have been converted to
// signless ones by the time these run; the original element types (passed
// in) choose signed or unsigned arith ops.
//
//===----------------------------------------------------------------------===//
#include "EmberToLinalgCommon.h"

#include <limits>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::ember;

namespace {
bool isUnsignedOrBool(Type t) {
  auto i = dyn_cast<IntegerType>(t);
  return i && (i.isUnsigned() || i.getWidth() == 1);
}
bool isLowPrecision(Type t) {
  auto f = dyn_cast<FloatType>(t);
  return f && f.getWidth() <= 16; // (f16, bf16, 8- and 4-bit floats)
}

Value floatConst(OpBuilder &b, Location loc, Type t, double v) {
  return arith::ConstantOp::create(b, loc, t, floatAttrOf(t, v));
}
Value intConst(OpBuilder &b, Location loc, Type t, int64_t v) {
  return arith::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, v));
}
Value intConstAP(OpBuilder &b, Location loc, Type t, const APInt &v) {
  return arith::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, v));
}

/// Polynomial p(x) by Horner's rule, highest coefficient first.
Value horner(OpBuilder &b, Location loc, Value x, ArrayRef<double> coeffs) {
  Type t = x.getType();
  Value acc = floatConst(b, loc, t, coeffs.front());
  for (double c : coeffs.drop_front())
    acc = arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, acc, x),
                                floatConst(b, loc, t, c));
  return acc;
}

//===----------------------------------------------------------------------===//
// f32 log1p and erf^-1 as XLA's CPU backend computes them
//
// `jax.random.normal` is sqrt(2) * erf_inv(u); matching JAX bit for bit needs
// the same f32 operations in the same order, with fused multiply-adds in the
// same places. The sequences below follow XLA's log1p (a Cephes rational for
// |x| < sqrt(2) - 1, log(1 + x) otherwise, with a Cephes-style polynomial
// log) and StableHLO's f32 erf_inv decomposition (Giles' polynomials), as
// read off the code XLA generates on x86 (docs/decisions.md, "Bit-exact
// random numbers"). Every FMA is explicit (math.fma); every other product
// feeds something other than an add, so LLVM's contraction cannot change it.
//===----------------------------------------------------------------------===//

Value f32Bits(OpBuilder &b, Location loc, uint32_t bits) {
  APFloat v(APFloat::IEEEsingle(), APInt(32, bits));
  return arith::ConstantOp::create(b, loc, b.getF32Type(),
                                   b.getFloatAttr(b.getF32Type(), v));
}

Value fma(OpBuilder &b, Location loc, Value x, Value y, Value z) {
  return math::FmaOp::create(b, loc, x, y, z);
}

/// Horner's rule with an FMA per step; coefficients highest degree first.
Value hornerFma(OpBuilder &b, Location loc, Value x, ArrayRef<Value> coeffs) {
  Value acc = fma(b, loc, x, coeffs[0], coeffs[1]);
  for (Value c : coeffs.drop_front(2))
    acc = fma(b, loc, x, acc, c);
  return acc;
}

/// log(u) for f32 (Cephes-style: u = m * 2^e with m in [sqrt(1/2), sqrt(2))).
Value buildLogF32(OpBuilder &b, Location loc, Value u) {
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto c = [&](uint32_t bits) { return f32Bits(b, loc, bits); };
  auto ic = [&](int64_t v) { return intConst(b, loc, i32, v); };
  using P = arith::CmpFPredicate;
  Value minNormal = c(0x00800000);
  Value v = arith::SelectOp::create(
      b, loc, arith::CmpFOp::create(b, loc, P::OGT, u, minNormal), u,
      minNormal);
  Value bits = arith::BitcastOp::create(b, loc, i32, v);
  Value e = arith::SubIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, ic(23)), ic(127));
  Value mBits = arith::OrIOp::create(
      b, loc, arith::AndIOp::create(b, loc, bits, ic((int32_t)0x807FFFFF)),
      ic(0x3F000000));
  Value m = arith::BitcastOp::create(b, loc, f32, mBits);
  Value one = c(0x3F800000);
  Value ef = arith::AddFOp::create(
      b, loc, arith::SIToFPOp::create(b, loc, f32, e), one);
  Value lt = arith::CmpFOp::create(b, loc, P::OLT, m, c(0x3F3504F3));
  Value f = arith::AddFOp::create(
      b, loc, arith::AddFOp::create(b, loc, m, c(0xBF800000)),
      arith::SelectOp::create(b, loc, lt, m, c(0)));
  ef = arith::SelectOp::create(b, loc, lt,
                               arith::SubFOp::create(b, loc, ef, one), ef);
  Value z2 = arith::MulFOp::create(b, loc, f, f);
  Value z3 = arith::MulFOp::create(b, loc, z2, f);
  Value pa =
      hornerFma(b, loc, f, {c(0x3D9021BB), c(0xBDEBD1B8), c(0x3DEF251A)});
  Value pb =
      hornerFma(b, loc, f, {c(0xBDFE5D4F), c(0x3E11E9BF), c(0xBE2AAE50)});
  pb = fma(b, loc, z3, pa, pb);
  Value pc =
      hornerFma(b, loc, f, {c(0x3E4CCEAC), c(0xBE7FFFFC), c(0x3EAAAAAA)});
  pb = fma(b, loc, z3, pb, pc);
  Value r = arith::MulFOp::create(b, loc, ef, c(0xB95E8083)); // -ln2 low part
  r = fma(b, loc, z3, pb, r);
  Value g = fma(b, loc, arith::NegFOp::create(b, loc, z2), c(0x3F000000), f);
  Value s = arith::AddFOp::create(b, loc, g, r);
  s = fma(b, loc, ef, c(0x3F318000), s); // ln2 high part
  // u == 0 -> -inf, u == +inf -> +inf, u < 0 or NaN -> NaN.
  Value inf = c(0x7F800000);
  s = arith::SelectOp::create(
      b, loc, arith::CmpFOp::create(b, loc, P::OEQ, u, inf), inf, s);
  s = arith::SelectOp::create(
      b, loc, arith::CmpFOp::create(b, loc, P::OEQ, u, c(0)), c(0xFF800000), s);
  return arith::SelectOp::create(
      b, loc, arith::CmpFOp::create(b, loc, P::OGE, u, c(0)), s, c(0xFFFFFFFF));
}

/// log(1 + x) for f64 (and wider-than-f32 types) from math.log, without the
/// cancellation of log(1 + x) for small x (math-to-llvm lowers math.log1p that
/// way): with u = 1 + x rounded, log(u) * x / (u - 1) is within a few ulps
/// (Goldberg, "What every computer scientist should know about floating-point
/// arithmetic", theorem 4); u == 1 gives x, u == inf gives inf.
Value buildLog1pWide(OpBuilder &b, Location loc, Value x) {
  using P = arith::CmpFPredicate;
  Type t = x.getType();
  Value one = floatConst(b, loc, t, 1.0);
  Value u = arith::AddFOp::create(b, loc, one, x);
  Value d = arith::SubFOp::create(b, loc, u, one);
  Value logu = math::LogOp::create(b, loc, u);
  Value scaled =
      arith::MulFOp::create(b, loc, logu, arith::DivFOp::create(b, loc, x, d));
  Value inf = floatConst(b, loc, t, std::numeric_limits<double>::infinity());
  Value r = arith::SelectOp::create(
      b, loc, arith::CmpFOp::create(b, loc, P::OEQ, u, inf), logu, scaled);
  return arith::SelectOp::create(
      b, loc, arith::CmpFOp::create(b, loc, P::OEQ, u, one), x, r);
}

/// exp(x) - 1 for f64 from math.exp (math-to-llvm lowers math.expm1 as
/// exp(x) - 1, which cancels for small x): with u = exp(x) rounded,
/// (u - 1) * x / log(u) (Kahan); u == 1 gives x, u - 1 == -1 gives -1 and
/// u == inf gives inf.
Value buildExpm1Wide(OpBuilder &b, Location loc, Value x) {
  using P = arith::CmpFPredicate;
  Type t = x.getType();
  Value one = floatConst(b, loc, t, 1.0);
  Value u = math::ExpOp::create(b, loc, x);
  Value um1 = arith::SubFOp::create(b, loc, u, one);
  Value scaled = arith::MulFOp::create(
      b, loc, um1,
      arith::DivFOp::create(b, loc, x, math::LogOp::create(b, loc, u)));
  Value inf = floatConst(b, loc, t, std::numeric_limits<double>::infinity());
  Value minusOne = floatConst(b, loc, t, -1.0);
  Value r = arith::SelectOp::create(
      b, loc, arith::CmpFOp::create(b, loc, P::OEQ, u, inf), u, scaled);
  r = arith::SelectOp::create(
      b, loc, arith::CmpFOp::create(b, loc, P::OEQ, um1, minusOne), minusOne,
      r);
  return arith::SelectOp::create(
      b, loc, arith::CmpFOp::create(b, loc, P::OEQ, u, one), x, r);
}

/// log(1 + x) for f32.
Value buildLog1pF32(OpBuilder &b, Location loc, Value x) {
  auto c = [&](uint32_t bits) { return f32Bits(b, loc, bits); };
  Value large =
      buildLogF32(b, loc, arith::AddFOp::create(b, loc, x, c(0x3F800000)));
  Value x2 = arith::MulFOp::create(b, loc, x, x);
  Value x0 = arith::MulFOp::create(b, loc, x, c(0)); // kept: NaN/inf propagate
  Value den = arith::AddFOp::create(b, loc, x0, c(0x3F800000));
  for (uint32_t q : {0x417101ADu, 0x42A6185Bu, 0x435DC32Du, 0x439A8CA3u,
                     0x43586D8Au, 0x42707982u})
    den = fma(b, loc, den, x, c(q));
  Value num = arith::AddFOp::create(b, loc, x0, c(0x383DE04B));
  for (uint32_t p : {0x3EFF40C5u, 0x40D284FAu, 0x41EF4B9Cu, 0x4273CC76u,
                     0x426473ADu, 0x41A05101u})
    num = fma(b, loc, num, x, c(p));
  Value q = arith::DivFOp::create(b, loc, num, den);
  Value y =
      arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, x, x2), q);
  y = fma(b, loc, x2, c(0xBF000000), y);
  Value small = arith::AddFOp::create(b, loc, x, y);
  Value isSmall =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                            math::AbsFOp::create(b, loc, x), c(0x3ED413CD));
  return arith::SelectOp::create(b, loc, isSmall, small, large);
}

/// erf for f32 as XLA's CPU routine computes it: x P(x^2) / Q(x^2) with
/// every Horner step an FMA, and +-1 from |x| >= 3.8325067 on. (XLA's
/// inlined variant, used for 0-d inputs and inside fusions, switches to +-1
/// at 3.7439206 instead; the two differ by one ulp between the thresholds.)
Value buildErfF32(OpBuilder &b, Location loc, Value x) {
  auto c = [&](uint32_t bits) { return f32Bits(b, loc, bits); };
  Value x2 = arith::MulFOp::create(b, loc, x, x);
  Value p = hornerFma(b, loc, x2,
                      {c(0x39702D51), c(0x3B5F5DA2), c(0x3D50B6EB),
                       c(0x3E3DA740), c(0x3F906EBA)});
  Value num = arith::MulFOp::create(b, loc, x, p);
  Value q =
      hornerFma(b, loc, x2,
                {c(0xB3FD3906), c(0x37C588DF), c(0x3A856D28), c(0x3C6687D4),
                 c(0x3DE34C21), c(0x3EFEB44A), c(0x3F800000)});
  Value r = arith::DivFOp::create(b, loc, num, q);
  Value big =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE,
                            math::AbsFOp::create(b, loc, x), c(0x407547CB));
  Value one = math::CopySignOp::create(b, loc, c(0x3F800000), x);
  return arith::SelectOp::create(b, loc, big, one, r);
}

/// erf^-1 for f32 (StableHLO's decomposition, evaluated as XLA does).
Value buildErfInvF32(OpBuilder &b, Location loc, Value x) {
  auto c = [&](uint32_t bits) { return f32Bits(b, loc, bits); };
  Value t = arith::MulFOp::create(b, loc, x, arith::NegFOp::create(b, loc, x));
  Value lg = buildLog1pF32(b, loc, t); // -w
  Value sm = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, lg,
                                   c(0xC0A00000));
  Value zs = arith::SubFOp::create(b, loc, c(0xC0200000), lg);
  Value zl = arith::AddFOp::create(
      b, loc, math::SqrtOp::create(b, loc, arith::NegFOp::create(b, loc, lg)),
      c(0xC0400000));
  Value z = arith::SelectOp::create(b, loc, sm, zs, zl);
  static const uint32_t kSmall[] = {0x32F16588, 0x34B84B36, 0xB66C7357,
                                    0xB6935AC1, 0x396532DB, 0xBAA45408,
                                    0xBB88E4EF, 0x3E7C8F63, 0x3FC02E2F};
  static const uint32_t kLarge[] = {0xB951F09B, 0x38D3B56B, 0x3AB0DC72,
                                    0xBB70BDE7, 0x3BBC127B, 0xBBF9C5D7,
                                    0x3C1AA57E, 0x3F8036DB, 0x40354F7E};
  SmallVector<Value> coeffs;
  for (int k = 0; k < 9; ++k)
    coeffs.push_back(
        arith::SelectOp::create(b, loc, sm, c(kSmall[k]), c(kLarge[k])));
  Value p = hornerFma(b, loc, z, coeffs);
  Value isOne =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                            math::AbsFOp::create(b, loc, x), c(0x3F800000));
  p = arith::SelectOp::create(b, loc, isOne, c(0x7F800000), p);
  return arith::MulFOp::create(b, loc, x, p);
}

/// erf^-1 by Giles' single-precision approximation ("Approximating the erfinv
/// function", GPU Computing Gems); f32 follows XLA exactly (above), f64 uses
/// the same form with two Newton steps on erf for full accuracy.
Value buildErfInv(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  if (t.isF32())
    return buildErfInvF32(b, loc, x);
  Value one = floatConst(b, loc, t, 1.0);
  // w = -log(1 - x^2), computed as -log1p(-x*x) for accuracy near 0.
  Value w = math::Log1pOp::create(
      b, loc,
      arith::NegFOp::create(b, loc, arith::MulFOp::create(b, loc, x, x)));
  w = arith::NegFOp::create(b, loc, w);
  Value small = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, w,
                                      floatConst(b, loc, t, 5.0));
  Value ws = arith::SubFOp::create(b, loc, w, floatConst(b, loc, t, 2.5));
  Value wl = arith::SubFOp::create(b, loc, math::SqrtOp::create(b, loc, w),
                                   floatConst(b, loc, t, 3.0));
  Value ps = horner(b, loc, ws,
                    {2.81022636e-08, 3.43273939e-07, -3.5233877e-06,
                     -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941});
  Value pl = horner(b, loc, wl,
                    {-0.000200214257, 0.000100950558, 0.00134934322,
                     -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682});
  Value p = arith::SelectOp::create(b, loc, small, ps, pl);
  Value r = arith::MulFOp::create(b, loc, p, x);
  // Two Newton steps on erf(r) - x = 0: r -= (erf(r) - x) / (2/sqrt(pi)
  // e^{-r^2}).
  for (int i = 0; i < 2; ++i) {
    Value err =
        arith::SubFOp::create(b, loc, math::ErfOp::create(b, loc, r), x);
    Value d = arith::MulFOp::create(
        b, loc, floatConst(b, loc, t, 1.1283791670955126),
        math::ExpOp::create(b, loc,
                            arith::NegFOp::create(
                                b, loc, arith::MulFOp::create(b, loc, r, r))));
    Value step = arith::DivFOp::create(b, loc, err, d);
    Value isFin = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                        math::AbsFOp::create(b, loc, r),
                                        floatConst(b, loc, t, INFINITY));
    r = arith::SelectOp::create(b, loc, isFin,
                                arith::SubFOp::create(b, loc, r, step), r);
  }
  // |x| == 1 gives +-inf.
  Value absx = math::AbsFOp::create(b, loc, x);
  Value isOne =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, absx, one);
  Value inf = arith::MulFOp::create(b, loc, x, floatConst(b, loc, t, INFINITY));
  return arith::SelectOp::create(b, loc, isOne, inf, r);
}

// Lanczos approximation (g = 7, n = 9), the standard coefficient set.
constexpr double kLanczosG = 7.0;
constexpr double kLanczos[] = {
    0.99999999999980993,  676.5203681218851,     -1259.1392167224028,
    771.32342877765313,   -176.61502916214059,   12.507343278686905,
    -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7};

/// Returns (sum A(z), d/dz sum A(z)) for the Lanczos series at z = x - 1.
std::pair<Value, Value> lanczosSeries(OpBuilder &b, Location loc, Value z) {
  Type t = z.getType();
  Value a = floatConst(b, loc, t, kLanczos[0]);
  Value da = floatConst(b, loc, t, 0.0);
  for (int i = 1; i < 9; ++i) {
    Value zi =
        arith::AddFOp::create(b, loc, z, floatConst(b, loc, t, (double)i));
    Value c = floatConst(b, loc, t, kLanczos[i]);
    a = arith::AddFOp::create(b, loc, a, arith::DivFOp::create(b, loc, c, zi));
    Value zi2 = arith::MulFOp::create(b, loc, zi, zi);
    da = arith::SubFOp::create(b, loc, da,
                               arith::DivFOp::create(b, loc, c, zi2));
  }
  return {a, da};
}

/// log|Gamma(x)| with the reflection formula for x < 0.5.
Value buildLgamma(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  Value half = floatConst(b, loc, t, 0.5);
  Value one = floatConst(b, loc, t, 1.0);
  Value pi = floatConst(b, loc, t, M_PI);
  Value reflect =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, half);
  // y = reflect ? 1 - x : x, then z = y - 1.
  Value y = arith::SelectOp::create(b, loc, reflect,
                                    arith::SubFOp::create(b, loc, one, x), x);
  Value z = arith::SubFOp::create(b, loc, y, one);
  auto [a, da] = lanczosSeries(b, loc, z);
  (void)da;
  Value tt =
      arith::AddFOp::create(b, loc, z, floatConst(b, loc, t, kLanczosG + 0.5));
  // lg = 0.5*log(2pi) + (z+0.5)*log(t) - t + log(a), with log(t) as
  // log(g + 1/2) + log1p(z / (g + 1/2)) and the middle terms factored as
  // (z + 1/2 - t / log(t)) log(t): no overflow of (z + 1/2) log(t) for a
  // large x, and lgamma(1) and lgamma(2) round to 0 (as XLA's).
  Value logT = arith::AddFOp::create(
      b, loc, floatConst(b, loc, t, std::log(kLanczosG + 0.5)),
      math::Log1pOp::create(
          b, loc,
          arith::DivFOp::create(b, loc, z,
                                floatConst(b, loc, t, kLanczosG + 0.5))));
  Value factor =
      arith::SubFOp::create(b, loc, arith::AddFOp::create(b, loc, z, half),
                            arith::DivFOp::create(b, loc, tt, logT));
  Value lg = arith::AddFOp::create(
      b, loc,
      arith::AddFOp::create(b, loc,
                            floatConst(b, loc, t, 0.91893853320467274178),
                            arith::MulFOp::create(b, loc, factor, logT)),
      math::LogOp::create(b, loc, a));
  // Reflection: log(pi / |sin(pi x)|) - lg(1 - x).
  Value s = math::AbsFOp::create(
      b, loc,
      math::SinOp::create(b, loc, arith::MulFOp::create(b, loc, pi, x)));
  Value refl = arith::SubFOp::create(
      b, loc, math::LogOp::create(b, loc, arith::DivFOp::create(b, loc, pi, s)),
      lg);
  Value r = arith::SelectOp::create(b, loc, reflect, refl, lg);
  // Poles (non-positive integers) give +inf; +-inf gives +inf.
  Value isInt = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                      math::FloorOp::create(b, loc, x), x);
  Value nonPos = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, x,
                                       floatConst(b, loc, t, 0.0));
  Value pole = arith::AndIOp::create(b, loc, isInt, nonPos);
  Value inf = floatConst(b, loc, t, INFINITY);
  Value isInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                      math::AbsFOp::create(b, loc, x), inf);
  r = arith::SelectOp::create(b, loc, arith::OrIOp::create(b, loc, pole, isInf),
                              inf, r);
  return r;
}

/// digamma(x) = d/dx lgamma(x), with reflection psi(1-x) - pi/tan(pi x).
Value buildDigamma(OpBuilder &b, Location loc, Value x) {
  Type t = x.getType();
  Value half = floatConst(b, loc, t, 0.5);
  Value one = floatConst(b, loc, t, 1.0);
  Value pi = floatConst(b, loc, t, M_PI);
  Value reflect =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, half);
  Value y = arith::SelectOp::create(b, loc, reflect,
                                    arith::SubFOp::create(b, loc, one, x), x);
  Value z = arith::SubFOp::create(b, loc, y, one);
  auto [a, da] = lanczosSeries(b, loc, z);
  Value tt =
      arith::AddFOp::create(b, loc, z, floatConst(b, loc, t, kLanczosG + 0.5));
  // psi = log(t) - g / t + da / a
  Value psi = arith::AddFOp::create(
      b, loc,
      arith::SubFOp::create(
          b, loc, math::LogOp::create(b, loc, tt),
          arith::DivFOp::create(b, loc, floatConst(b, loc, t, kLanczosG), tt)),
      arith::DivFOp::create(b, loc, da, a));
  Value refl = arith::SubFOp::create(
      b, loc, psi,
      arith::DivFOp::create(
          b, loc, pi,
          math::TanOp::create(b, loc, arith::MulFOp::create(b, loc, pi, x))));
  Value r = arith::SelectOp::create(b, loc, reflect, refl, psi);
  Value isInt = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                      math::FloorOp::create(b, loc, x), x);
  Value nonPos = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, x,
                                       floatConst(b, loc, t, 0.0));
  Value nan = floatConst(b, loc, t, NAN);
  return arith::SelectOp::create(
      b, loc, arith::AndIOp::create(b, loc, isInt, nonPos), nan, r);
}

//===----------------------------------------------------------------------===//
// Exponentially scaled modified Bessel functions of order 0 and 1 (Cephes)
//===----------------------------------------------------------------------===//

// Chebyshev coefficients, highest order first (Cephes i0.c and i1.c): on
// [0, 8] of exp(-x) I0(x) and exp(-x) I1(x) / x in y = x/2 - 2, on (8, inf)
// of exp(-x) sqrt(x) I0(x) and exp(-x) sqrt(x) I1(x) in y = 32/x - 2.
constexpr double kI0eSmall[] = {
    -4.41534164647933937950E-18, 3.33079451882223809783E-17,
    -2.43127984654795469359E-16, 1.71539128555513303061E-15,
    -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12,
    -1.72682629144155570723E-11, 9.67580903537323691224E-11,
    -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8,  6.04699502254191894932E-8,
    -2.67079385394061173391E-7,  1.11738753912010371815E-6,
    -4.41673835845875056359E-6,  1.64484480707288970893E-5,
    -5.75419501008210370398E-5,  1.88502885095841655729E-4,
    -5.76375574538582365885E-4,  1.63947561694133579842E-3,
    -4.32430999505057594430E-3,  1.05464603945949983183E-2,
    -2.37374148058994688156E-2,  4.93052842396707084878E-2,
    -9.49010970480476444210E-2,  1.71620901522208775349E-1,
    -3.04682672343198398683E-1,  6.76795274409476084995E-1};
constexpr double kI0eLarge[] = {
    -7.23318048787475395456E-18, -4.83050448594418207126E-18,
    4.46562142029675999901E-17,  3.46122286769746109310E-17,
    -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15,  3.81168066935262242075E-15,
    -9.55484669882830764870E-15, -4.15056934728722208663E-14,
    1.54008621752140982691E-14,  3.85277838274214270114E-13,
    7.18012445138366623367E-13,  -1.79417853150680611778E-12,
    -1.32158118404477131188E-11, -3.14991652796324136454E-11,
    1.18891471078464383424E-11,  4.94060238822496958910E-10,
    3.39623202570838634515E-9,   2.26666899049817806459E-8,
    2.04891858946906374183E-7,   2.89137052083475648297E-6,
    6.88975834691682398426E-5,   3.36911647825569408990E-3,
    8.04490411014108831608E-1};
constexpr double kI1eSmall[] = {
    2.77791411276104639959E-18, -2.11142121435816608115E-17,
    1.55363195773620046921E-16, -1.10559694773538630805E-15,
    7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12,
    1.17361862988909016308E-11, -6.66348972350202774223E-11,
    3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9,  -4.44505912879632808065E-8,
    2.00329475355213526229E-7,  -8.56872026469545474066E-7,
    3.47025130813767847674E-6,  -1.32731636560394358279E-5,
    4.78156510755005422638E-5,  -1.61760815825896745588E-4,
    5.12285956168575772895E-4,  -1.51357245063125314899E-3,
    4.15642294431288815669E-3,  -1.05640848946261981558E-2,
    2.47264490306265168283E-2,  -5.29459812080949914269E-2,
    1.02643658689847095384E-1,  -1.76416518357834055153E-1,
    2.52587186443633654823E-1};
constexpr double kI1eLarge[] = {
    7.51729631084210481353E-18,  4.41434832307170791151E-18,
    -4.65030536848935832153E-17, -3.20952592199342395980E-17,
    2.96262899764595013876E-16,  3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15,
    1.04202769841288027642E-14,  4.27244001671195135429E-14,
    -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12,
    1.41258074366137813316E-11,  3.25260358301548823856E-11,
    -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9,  -2.63146884688951950684E-8,
    -2.51223623787020892529E-7,  -3.88256480887769039346E-6,
    -1.10588938762623716291E-4,  -9.76109749136146840777E-3,
    7.78576235018280120474E-1};

/// The Chebyshev series sum' c_k T_k(y / 2) by Clenshaw's recurrence, as
/// Cephes' chbevl evaluates it (coefficients highest order first).
Value chebyshevSeries(OpBuilder &b, Location loc, Value y,
                      ArrayRef<double> coeffs) {
  Type t = y.getType();
  Value b0 = floatConst(b, loc, t, coeffs.front());
  Value b1 = floatConst(b, loc, t, 0.0), b2 = b1;
  for (double c : coeffs.drop_front()) {
    b2 = b1;
    b1 = b0;
    b0 = arith::AddFOp::create(
        b, loc,
        arith::SubFOp::create(b, loc, arith::MulFOp::create(b, loc, y, b1), b2),
        floatConst(b, loc, t, c));
  }
  return arith::MulFOp::create(b, loc, floatConst(b, loc, t, 0.5),
                               arith::SubFOp::create(b, loc, b0, b2));
}

/// i0e(x) = exp(-|x|) I0(x) or, with `order1`, i1e(x) = exp(-|x|) I1(x) (odd).
/// f32 keeps the trailing terms that Cephes' single-precision versions
/// (i0f.c, i1f.c) use.
Value buildBesselIe(OpBuilder &b, Location loc, Value x, bool order1) {
  Type t = x.getType();
  ArrayRef<double> small = order1 ? ArrayRef(kI1eSmall) : ArrayRef(kI0eSmall);
  ArrayRef<double> large = order1 ? ArrayRef(kI1eLarge) : ArrayRef(kI0eLarge);
  if (t.isF32()) {
    small = small.take_back(order1 ? 17 : 18);
    large = large.take_back(7);
  }
  Value z = math::AbsFOp::create(b, loc, x);
  Value two = floatConst(b, loc, t, 2.0);
  // |x| <= 8: the series in z/2 - 2 (times z for order 1).
  Value ys = arith::SubFOp::create(
      b, loc, arith::MulFOp::create(b, loc, z, floatConst(b, loc, t, 0.5)),
      two);
  Value rs = chebyshevSeries(b, loc, ys, small);
  if (order1)
    rs = arith::MulFOp::create(b, loc, z, rs);
  // |x| > 8 (and NaN): the series in 32/z - 2, over sqrt(z); 0 at inf.
  Value yl = arith::SubFOp::create(
      b, loc, arith::DivFOp::create(b, loc, floatConst(b, loc, t, 32.0), z),
      two);
  Value rl = arith::DivFOp::create(b, loc, chebyshevSeries(b, loc, yl, large),
                                   math::SqrtOp::create(b, loc, z));
  Value isSmall = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, z,
                                        floatConst(b, loc, t, 8.0));
  Value r = arith::SelectOp::create(b, loc, isSmall, rs, rl);
  return order1 ? (Value)math::CopySignOp::create(b, loc, r, x) : r;
}

Value buildNextAfter(OpBuilder &b, Location loc, Value x, Value y) {
  // The step is taken on the bits of x's own type; comparisons (and the
  // NaN sum) are made in f32 for 16-bit floats, whose compares and selects
  // some LLVM backends cannot lower (bf16 aborted in instruction
  // selection).
  auto ft = cast<FloatType>(x.getType());
  unsigned w = ft.getWidth();
  Type it = b.getIntegerType(w);
  bool half = isLowPrecision(ft);
  Value xc = half ? (Value)arith::ExtFOp::create(b, loc, b.getF32Type(), x) : x;
  Value yc = half ? (Value)arith::ExtFOp::create(b, loc, b.getF32Type(), y) : y;
  Value xb = arith::BitcastOp::create(b, loc, it, x);
  Value yb = arith::BitcastOp::create(b, loc, it, y);
  Value zero = floatConst(b, loc, cast<FloatType>(xc.getType()), 0.0);
  auto cmp = [&](arith::CmpFPredicate p, Value l, Value r) {
    return arith::CmpFOp::create(b, loc, p, l, r).getResult();
  };
  Value isNan = cmp(arith::CmpFPredicate::UNO, xc, yc);
  Value eq = cmp(arith::CmpFPredicate::OEQ, xc, yc);
  Value xZero = cmp(arith::CmpFPredicate::OEQ, xc, zero);
  // Smallest subnormal with the sign of y.
  Value sign = arith::AndIOp::create(
      b, loc, yb, intConstAP(b, loc, it, APInt::getSignMask(w)));
  Value tiny = arith::OrIOp::create(b, loc, sign, intConst(b, loc, it, 1));
  // Moving away from zero adds one to the magnitude bits.
  Value xPos = cmp(arith::CmpFPredicate::OGT, xc, zero);
  Value xLtY = cmp(arith::CmpFPredicate::OLT, xc, yc);
  Value up = arith::XOrIOp::create(b, loc, xPos, xLtY);
  // up == false means "away from zero" when xPos == xLtY.
  Value r = arith::SelectOp::create(
      b, loc, up, arith::SubIOp::create(b, loc, xb, intConst(b, loc, it, 1)),
      arith::AddIOp::create(b, loc, xb, intConst(b, loc, it, 1)));
  r = arith::SelectOp::create(b, loc, xZero, tiny, r);
  r = arith::SelectOp::create(b, loc, eq, yb, r);
  Value nan = arith::AddFOp::create(b, loc, xc, yc);
  if (half)
    nan = arith::TruncFOp::create(b, loc, ft, nan);
  r = arith::SelectOp::create(b, loc, isNan,
                              arith::BitcastOp::create(b, loc, it, nan), r);
  return arith::BitcastOp::create(b, loc, ft, r);
}

/// Integer division and remainder with XLA's results where C is undefined:
/// x / 0 = -1 (all ones), x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0.
Value buildIntDivRem(OpBuilder &b, Location loc, Value x, Value y,
                     bool isUnsigned, bool isRem) {
  Type t = x.getType();
  unsigned w = t.getIntOrFloatBitWidth();
  Value zero = intConst(b, loc, t, 0);
  Value one = intConst(b, loc, t, 1);
  Value yZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, zero);
  Value bad = yZero;
  if (!isUnsigned && w > 1) {
    Value minInt = intConstAP(b, loc, t, APInt::getSignedMinValue(w));
    Value allOnes = intConst(b, loc, t, -1);
    Value overflow = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, minInt),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, allOnes));
    bad = arith::OrIOp::create(b, loc, yZero, overflow);
  }
  Value safeY = arith::SelectOp::create(b, loc, bad, one, y);
  Value q;
  if (isRem)
    q = isUnsigned ? (Value)arith::RemUIOp::create(b, loc, x, safeY)
                   : (Value)arith::RemSIOp::create(b, loc, x, safeY);
  else
    q = isUnsigned ? (Value)arith::DivUIOp::create(b, loc, x, safeY)
                   : (Value)arith::DivSIOp::create(b, loc, x, safeY);
  // With safeY = 1 for INT_MIN / -1: q = INT_MIN (right), rem = 0 (right).
  Value zeroCase = isRem ? x : intConst(b, loc, t, -1);
  return arith::SelectOp::create(b, loc, yZero, zeroCase, q);
}

Value buildShift(OpBuilder &b, Location loc, Operation *op, Value x, Value s) {
  Type t = x.getType();
  unsigned w = t.getIntOrFloatBitWidth();
  Value width = intConst(b, loc, t, w);
  Value tooBig =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, s, width);
  Value zero = intConst(b, loc, t, 0);
  if (isa<ShiftLeftOp>(op))
    return arith::SelectOp::create(b, loc, tooBig, zero,
                                   arith::ShLIOp::create(b, loc, x, s));
  if (isa<ShiftRightLogicalOp>(op))
    return arith::SelectOp::create(b, loc, tooBig, zero,
                                   arith::ShRUIOp::create(b, loc, x, s));
  Value clamped =
      arith::SelectOp::create(b, loc, tooBig, intConst(b, loc, t, w - 1), s);
  return arith::ShRSIOp::create(b, loc, x, clamped);
}

Value buildThreefryRounds(OpBuilder &b, Location loc, Value k0, Value k1,
                          Value x0, Value x1, Value &out1) {
  Type t = k0.getType();
  auto rotl = [&](Value v, int r) {
    return arith::OrIOp::create(
        b, loc, arith::ShLIOp::create(b, loc, v, intConst(b, loc, t, r)),
        arith::ShRUIOp::create(b, loc, v, intConst(b, loc, t, 32 - r)));
  };
  Value ks[3] = {k0, k1,
                 arith::XOrIOp::create(b, loc,
                                       arith::XOrIOp::create(b, loc, k0, k1),
                                       intConst(b, loc, t, 0x1BD11BDA))};
  static const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  x0 = arith::AddIOp::create(b, loc, x0, ks[0]);
  x1 = arith::AddIOp::create(b, loc, x1, ks[1]);
  for (int g = 0; g < 5; ++g) {
    for (int r : rot[g % 2]) {
      x0 = arith::AddIOp::create(b, loc, x0, x1);
      x1 = rotl(x1, r);
      x1 = arith::XOrIOp::create(b, loc, x1, x0);
    }
    x0 = arith::AddIOp::create(b, loc, x0, ks[(g + 1) % 3]);
    x1 = arith::AddIOp::create(
        b, loc, arith::AddIOp::create(b, loc, x1, ks[(g + 2) % 3]),
        intConst(b, loc, t, g + 1));
  }
  out1 = x1;
  return x0;
}

/// Random123's Philox4x32-10 of the counter `x` under the key (k0, k1); the
/// 64-bit products are `arith.mului_extended` (high and low words).
SmallVector<Value> buildPhiloxRounds(OpBuilder &b, Location loc, Value k0,
                                     Value k1, ValueRange x) {
  Type t = k0.getType();
  auto u32 = [&](uint32_t v) { return intConstAP(b, loc, t, APInt(32, v)); };
  SmallVector<Value> w(x);
  for (int round = 0; round < 10; ++round) {
    if (round) {
      k0 = arith::AddIOp::create(b, loc, k0, u32(0x9E3779B9));
      k1 = arith::AddIOp::create(b, loc, k1, u32(0xBB67AE85));
    }
    auto p0 = arith::MulUIExtendedOp::create(b, loc, w[0], u32(0xD2511F53));
    auto p1 = arith::MulUIExtendedOp::create(b, loc, w[2], u32(0xCD9E8D57));
    auto mix = [&](Value hi, Value v, Value k) -> Value {
      return arith::XOrIOp::create(b, loc, arith::XOrIOp::create(b, loc, hi, v),
                                   k);
    };
    w = {mix(p1.getHigh(), w[1], k0), p1.getLow(), mix(p0.getHigh(), w[3], k1),
         p0.getLow()};
  }
  return w;
}

Value buildUnaryFloat(OpBuilder &b, Location loc, Operation *op, Value x) {
  Type t = x.getType();
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](NegOp) { return arith::NegFOp::create(b, loc, x); })
      .Case([&](AbsOp) { return math::AbsFOp::create(b, loc, x); })
      .Case([&](SignOp) -> Value {
        Value zero = floatConst(b, loc, t, 0.0);
        Value pos =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero);
        Value neg =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, zero);
        Value r = arith::SelectOp::create(b, loc, neg,
                                          floatConst(b, loc, t, -1.0), x);
        return arith::SelectOp::create(b, loc, pos, floatConst(b, loc, t, 1.0),
                                       r);
      })
      .Case([&](FloorOp) { return math::FloorOp::create(b, loc, x); })
      .Case([&](CeilOp) { return math::CeilOp::create(b, loc, x); })
      .Case([&](RoundNearestAfzOp) { return math::RoundOp::create(b, loc, x); })
      .Case([&](RoundNearestEvenOp) {
        return math::RoundEvenOp::create(b, loc, x);
      })
      .Case([&](ExpOp) { return math::ExpOp::create(b, loc, x); })
      .Case([&](Exp2Op) { return math::Exp2Op::create(b, loc, x); })
      .Case([&](LogOp) -> Value {
        // f32 as XLA's CPU backend computes it (bit for bit; the same
        // sequence serves log1p), others through MLIR's math.log.
        if (x.getType().isF32())
          return buildLogF32(b, loc, x);
        return math::LogOp::create(b, loc, x);
      })
      .Case([&](Log1pOp) {
        return x.getType().isF32() ? buildLog1pF32(b, loc, x)
                                   : buildLog1pWide(b, loc, x);
      })
      .Case([&](Expm1Op) -> Value {
        if (x.getType().isF32())
          return math::ExpM1Op::create(b, loc, x);
        return buildExpm1Wide(b, loc, x);
      })
      .Case([&](TanhOp) { return math::TanhOp::create(b, loc, x); })
      .Case([&](LogisticOp) -> Value {
        Value one = floatConst(b, loc, t, 1.0);
        Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
        return arith::DivFOp::create(b, loc, one,
                                     arith::AddFOp::create(b, loc, one, e));
      })
      .Case([&](SinOp) { return math::SinOp::create(b, loc, x); })
      .Case([&](CosOp) { return math::CosOp::create(b, loc, x); })
      .Case([&](TanOp) { return math::TanOp::create(b, loc, x); })
      .Case([&](AsinOp) { return math::AsinOp::create(b, loc, x); })
      .Case([&](AcosOp) { return math::AcosOp::create(b, loc, x); })
      .Case([&](AtanOp) { return math::AtanOp::create(b, loc, x); })
      .Case([&](SinhOp) { return math::SinhOp::create(b, loc, x); })
      .Case([&](CoshOp) { return math::CoshOp::create(b, loc, x); })
      .Case([&](AsinhOp) { return math::AsinhOp::create(b, loc, x); })
      .Case([&](AcoshOp) { return math::AcoshOp::create(b, loc, x); })
      .Case([&](AtanhOp) { return math::AtanhOp::create(b, loc, x); })
      .Case([&](SqrtOp) { return math::SqrtOp::create(b, loc, x); })
      .Case([&](RsqrtOp) -> Value {
        return arith::DivFOp::create(b, loc, floatConst(b, loc, t, 1.0),
                                     math::SqrtOp::create(b, loc, x));
      })
      .Case([&](CbrtOp) { return math::CbrtOp::create(b, loc, x); })
      .Case([&](ErfOp) {
        return x.getType().isF32() ? buildErfF32(b, loc, x)
                                   : (Value)math::ErfOp::create(b, loc, x);
      })
      .Case([&](ErfInvOp) { return buildErfInv(b, loc, x); })
      .Case([&](LgammaOp) { return buildLgamma(b, loc, x); })
      .Case([&](DigammaOp) { return buildDigamma(b, loc, x); })
      .Case([&](BesselI0eOp) { return buildBesselIe(b, loc, x, false); })
      .Case([&](BesselI1eOp) { return buildBesselIe(b, loc, x, true); })
      .Case([&](IsFiniteOp) -> Value {
        return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                     math::AbsFOp::create(b, loc, x),
                                     floatConst(b, loc, t, INFINITY));
      })
      .Default([](Operation *) { return Value(); });
}

/// The principal square root of a complex `z` = x + iy, without the
/// rounding of the polar form (upstream's lowering gives sqrt(-4) a real
/// part of -9e-8 in f32): t = sqrt(|x|/2 + |z|/2), then (t, y/2t) for
/// x >= 0 and (|y|/2t, +-t) for x < 0, the sign of y's (a zero y counts as
/// positive, as XLA's); an infinite y gives (inf, y), a zero z (0, y).
static Value buildComplexSqrt(OpBuilder &b, Location loc, Value z) {
  auto ct = cast<ComplexType>(z.getType());
  Type ft = ct.getElementType();
  Value x = complex::ReOp::create(b, loc, z);
  Value y = complex::ImOp::create(b, loc, z);
  Value zero = floatConst(b, loc, ft, 0.0), half = floatConst(b, loc, ft, 0.5);
  Value inf = floatConst(b, loc, ft, INFINITY);
  auto cmp = [&](arith::CmpFPredicate p, Value l, Value r) -> Value {
    return arith::CmpFOp::create(b, loc, p, l, r);
  };
  auto sel = [&](Value c, Value t, Value f) -> Value {
    return arith::SelectOp::create(b, loc, c, t, f);
  };
  Value ax = math::AbsFOp::create(b, loc, x);
  Value ay = math::AbsFOp::create(b, loc, y);
  Value r = complex::AbsOp::create(b, loc, z);
  Value t = math::SqrtOp::create(
      b, loc,
      arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, ax, half),
                            arith::MulFOp::create(b, loc, r, half)));
  Value twoT = arith::AddFOp::create(b, loc, t, t);
  Value neg = cmp(arith::CmpFPredicate::OLT, x, zero);
  Value re = sel(neg, arith::DivFOp::create(b, loc, ay, twoT), t);
  Value signedT = sel(cmp(arith::CmpFPredicate::OLT, y, zero),
                      arith::NegFOp::create(b, loc, t), t);
  Value im = sel(neg, signedT, arith::DivFOp::create(b, loc, y, twoT));
  Value yInf = cmp(arith::CmpFPredicate::OEQ, ay, inf);
  re = sel(yInf, inf, re);
  im = sel(yInf, y, im);
  Value isZero =
      arith::AndIOp::create(b, loc, cmp(arith::CmpFPredicate::OEQ, x, zero),
                            cmp(arith::CmpFPredicate::OEQ, y, zero));
  re = sel(isZero, zero, re);
  im = sel(isZero, y, im);
  return complex::CreateOp::create(b, loc, ct, re, im);
}

Value buildUnaryComplex(OpBuilder &b, Location loc, Operation *op, Value x) {
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](NegOp) { return complex::NegOp::create(b, loc, x); })
      .Case([&](ExpOp) { return complex::ExpOp::create(b, loc, x); })
      .Case([&](LogOp) { return complex::LogOp::create(b, loc, x); })
      .Case([&](TanhOp) { return complex::TanhOp::create(b, loc, x); })
      .Case([&](SinOp) { return complex::SinOp::create(b, loc, x); })
      .Case([&](CosOp) { return complex::CosOp::create(b, loc, x); })
      .Case([&](SqrtOp) { return buildComplexSqrt(b, loc, x); })
      .Case([&](ConjOp) { return complex::ConjOp::create(b, loc, x); })
      .Case([&](RealOp) { return complex::ReOp::create(b, loc, x); })
      .Case([&](ImagOp) { return complex::ImOp::create(b, loc, x); })
      .Default([](Operation *) { return Value(); });
}

Value buildUnaryInt(OpBuilder &b, Location loc, Operation *op, Value x,
                    Type origElem) {
  Type t = x.getType();
  bool u = isUnsignedOrBool(origElem);
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](NegOp) {
        return arith::SubIOp::create(b, loc, intConst(b, loc, t, 0), x);
      })
      .Case([&](AbsOp) -> Value {
        return u ? x : (Value)math::AbsIOp::create(b, loc, x);
      })
      .Case([&](SignOp) -> Value {
        Value zero = intConst(b, loc, t, 0);
        Value one = intConst(b, loc, t, 1);
        if (u)
          return arith::SelectOp::create(
              b, loc,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x, zero),
              one, zero);
        Value pos =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, x, zero);
        Value neg =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, zero);
        return arith::SelectOp::create(
            b, loc, pos, one,
            arith::SelectOp::create(b, loc, neg, intConst(b, loc, t, -1),
                                    zero));
      })
      .Case([&](NotOp) {
        return arith::XOrIOp::create(b, loc, x, intConst(b, loc, t, -1));
      })
      .Case([&](PopulationCountOp) { return math::CtPopOp::create(b, loc, x); })
      .Case([&](ClzOp) { return math::CountLeadingZerosOp::create(b, loc, x); })
      .Default([](Operation *) { return Value(); });
}

Value buildBinary(OpBuilder &b, Location loc, Operation *op, Value x, Value y,
                  Type origElem) {
  Type t = x.getType();
  bool isF = isa<FloatType>(t);
  bool isC = isa<ComplexType>(t);
  bool isBool = t.isInteger(1);
  bool u = isUnsignedOrBool(origElem);
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](AddOp) -> Value {
        if (isF)
          return arith::AddFOp::create(b, loc, x, y);
        if (isC)
          return complex::AddOp::create(b, loc, x, y);
        if (isBool)
          return arith::OrIOp::create(b, loc, x, y);
        return arith::AddIOp::create(b, loc, x, y);
      })
      .Case([&](SubOp) -> Value {
        if (isF)
          return arith::SubFOp::create(b, loc, x, y);
        if (isC)
          return complex::SubOp::create(b, loc, x, y);
        return arith::SubIOp::create(b, loc, x, y);
      })
      .Case([&](MulOp) -> Value {
        if (isF)
          return arith::MulFOp::create(b, loc, x, y);
        if (isC)
          return complex::MulOp::create(b, loc, x, y);
        if (isBool)
          return arith::AndIOp::create(b, loc, x, y);
        return arith::MulIOp::create(b, loc, x, y);
      })
      .Case([&](DivOp) -> Value {
        if (isF)
          return arith::DivFOp::create(b, loc, x, y);
        if (isC)
          return complex::DivOp::create(b, loc, x, y);
        return buildIntDivRem(b, loc, x, y, u, /*isRem=*/false);
      })
      .Case([&](RemOp) -> Value {
        if (isF)
          return arith::RemFOp::create(b, loc, x, y);
        return buildIntDivRem(b, loc, x, y, u, /*isRem=*/true);
      })
      .Case([&](PowOp) -> Value {
        if (isF)
          return math::PowFOp::create(b, loc, x, y);
        if (isC)
          return complex::PowOp::create(b, loc, x, y);
        return math::IPowIOp::create(b, loc, x, y);
      })
      .Case([&](MaxOp) -> Value {
        if (isF)
          return arith::MaximumFOp::create(b, loc, x, y);
        if (isC)
          return Value();
        return u ? (Value)arith::MaxUIOp::create(b, loc, x, y)
                 : (Value)arith::MaxSIOp::create(b, loc, x, y);
      })
      .Case([&](MinOp) -> Value {
        if (isF)
          return arith::MinimumFOp::create(b, loc, x, y);
        if (isC)
          return Value();
        return u ? (Value)arith::MinUIOp::create(b, loc, x, y)
                 : (Value)arith::MinSIOp::create(b, loc, x, y);
      })
      .Case([&](Atan2Op) { return math::Atan2Op::create(b, loc, x, y); })
      .Case([&](NextAfterOp) { return buildNextAfter(b, loc, x, y); })
      .Case([&](AndOp) { return arith::AndIOp::create(b, loc, x, y); })
      .Case([&](OrOp) { return arith::OrIOp::create(b, loc, x, y); })
      .Case([&](XorOp) { return arith::XOrIOp::create(b, loc, x, y); })
      .Case<ShiftLeftOp, ShiftRightLogicalOp, ShiftRightArithmeticOp>(
          [&](Operation *o) { return buildShift(b, loc, o, x, y); })
      .Case([&](ComplexOp) -> Value {
        return complex::CreateOp::create(b, loc, ComplexType::get(t), x, y);
      })
      .Default([](Operation *) { return Value(); });
}
} // namespace

Value mlir::ember::buildCompare(OpBuilder &b, Location loc,
                                ComparisonDirection dir, Value x, Value y,
                                Type origElem) {
  // Scalars here; vectors of them in TPU kernels (EmberToTPU.cpp).
  Type elem = getElementTypeOrSelf(x.getType());
  if (isa<FloatType>(elem)) {
    arith::CmpFPredicate p;
    switch (dir) {
    case ComparisonDirection::EQ:
      p = arith::CmpFPredicate::OEQ;
      break;
    case ComparisonDirection::NE:
      p = arith::CmpFPredicate::UNE;
      break;
    case ComparisonDirection::LT:
      p = arith::CmpFPredicate::OLT;
      break;
    case ComparisonDirection::LE:
      p = arith::CmpFPredicate::OLE;
      break;
    case ComparisonDirection::GT:
      p = arith::CmpFPredicate::OGT;
      break;
    case ComparisonDirection::GE:
      p = arith::CmpFPredicate::OGE;
      break;
    }
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  if (isa<ComplexType>(elem)) {
    if (dir == ComparisonDirection::EQ)
      return complex::EqualOp::create(b, loc, x, y);
    return complex::NotEqualOp::create(b, loc, x, y);
  }
  bool u = isUnsignedOrBool(origElem);
  arith::CmpIPredicate p;
  switch (dir) {
  case ComparisonDirection::EQ:
    p = arith::CmpIPredicate::eq;
    break;
  case ComparisonDirection::NE:
    p = arith::CmpIPredicate::ne;
    break;
  case ComparisonDirection::LT:
    p = u ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt;
    break;
  case ComparisonDirection::LE:
    p = u ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle;
    break;
  case ComparisonDirection::GT:
    p = u ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt;
    break;
  case ComparisonDirection::GE:
    p = u ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge;
    break;
  }
  return arith::CmpIOp::create(b, loc, p, x, y);
}

Value mlir::ember::convertScalar(OpBuilder &b, Location loc, Value v, Type from,
                                 Type to) {
  if (from == to)
    return v;
  Type src = v.getType();
  Type dst = to;
  if (auto it = dyn_cast<IntegerType>(to))
    dst = b.getIntegerType(it.getWidth());
  bool srcU = isUnsignedOrBool(from);
  // To bool: x != 0.
  if (dst.isInteger(1)) {
    if (isa<FloatType>(src))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                   floatConst(b, loc, src, 0.0));
    if (auto c = dyn_cast<ComplexType>(src)) {
      Value z = floatConst(b, loc, c.getElementType(), 0.0);
      return arith::OrIOp::create(
          b, loc,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE,
                                complex::ReOp::create(b, loc, v), z),
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE,
                                complex::ImOp::create(b, loc, v), z));
    }
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                                 intConst(b, loc, src, 0));
  }
  if (auto dc = dyn_cast<ComplexType>(dst)) {
    Type part = dc.getElementType();
    if (auto sc = dyn_cast<ComplexType>(src)) {
      Value re = convertScalar(b, loc, complex::ReOp::create(b, loc, v),
                               sc.getElementType(), part);
      Value im = convertScalar(b, loc, complex::ImOp::create(b, loc, v),
                               sc.getElementType(), part);
      return complex::CreateOp::create(b, loc, dc, re, im);
    }
    Value re = convertScalar(b, loc, v, from, part);
    return complex::CreateOp::create(b, loc, dc, re,
                                     floatConst(b, loc, part, 0.0));
  }
  if (auto sc = dyn_cast<ComplexType>(src))
    return convertScalar(b, loc, complex::ReOp::create(b, loc, v),
                         sc.getElementType(), to);
  if (auto di = dyn_cast<IntegerType>(dst)) {
    if (auto si = dyn_cast<IntegerType>(src)) {
      if (si.getWidth() == di.getWidth())
        return v;
      if (si.getWidth() > di.getWidth())
        return arith::TruncIOp::create(b, loc, dst, v);
      return srcU ? (Value)arith::ExtUIOp::create(b, loc, dst, v)
                  : (Value)arith::ExtSIOp::create(b, loc, dst, v);
    }
    // Float to integer: NaN -> 0, saturate out-of-range values.
    bool dstU = isa<IntegerType>(to) && cast<IntegerType>(to).isUnsigned();
    unsigned w = di.getWidth();
    Value x = v;
    if (isLowPrecision(src)) {
      x = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
      src = b.getF32Type();
    }
    APFloat hiF(cast<FloatType>(src).getFloatSemantics());
    APInt hiI = dstU ? APInt::getMaxValue(w) : APInt::getSignedMaxValue(w);
    APInt loI = dstU ? APInt::getMinValue(w) : APInt::getSignedMinValue(w);
    // Limits as exact powers of two: x >= 2^(w or w-1) saturates high.
    double hiPow = std::ldexp(1.0, dstU ? w : w - 1);
    double loPow = dstU ? 0.0 : -std::ldexp(1.0, w - 1);
    Value tooHigh = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, x,
                                          floatConst(b, loc, src, hiPow));
    Value tooLow = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                         floatConst(b, loc, src, loPow));
    Value isNan =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
    Value safe = arith::SelectOp::create(
        b, loc,
        arith::OrIOp::create(
            b, loc, arith::OrIOp::create(b, loc, tooHigh, tooLow), isNan),
        floatConst(b, loc, src, 0.0), x);
    Value r = dstU ? (Value)arith::FPToUIOp::create(b, loc, dst, safe)
                   : (Value)arith::FPToSIOp::create(b, loc, dst, safe);
    r = arith::SelectOp::create(b, loc, tooHigh, intConstAP(b, loc, dst, hiI),
                                r);
    r = arith::SelectOp::create(b, loc, tooLow, intConstAP(b, loc, dst, loI),
                                r);
    return r;
  }
  // Destination is a float.
  if (isa<IntegerType>(src))
    return srcU ? (Value)arith::UIToFPOp::create(b, loc, dst, v)
                : (Value)arith::SIToFPOp::create(b, loc, dst, v);
  unsigned sw = src.getIntOrFloatBitWidth(), dw = dst.getIntOrFloatBitWidth();
  if (sw < dw)
    return arith::ExtFOp::create(b, loc, dst, v);
  if (sw > dw)
    return arith::TruncFOp::create(b, loc, dst, v);
  // f16 <-> bf16.
  return arith::TruncFOp::create(
      b, loc, dst, arith::ExtFOp::create(b, loc, b.getF32Type(), v));
}

/// x^y by squaring and multiplying (as XLA expands integer_pow): each
/// product is rounded to x's type, half floats included, so the result is
/// that of the same chain of `mul` ops. A negative y divides one by it.
static Value buildIntegerPow(OpBuilder &b, Location loc, Value x, int64_t y) {
  Type t = x.getType();
  auto mul = [&](Value p, Value q) -> Value {
    if (isLowPrecision(t)) {
      Value r = arith::MulFOp::create(
          b, loc, arith::ExtFOp::create(b, loc, b.getF32Type(), p),
          arith::ExtFOp::create(b, loc, b.getF32Type(), q));
      return arith::TruncFOp::create(b, loc, t, r);
    }
    if (isa<FloatType>(t))
      return arith::MulFOp::create(b, loc, p, q);
    if (isa<ComplexType>(t))
      return complex::MulOp::create(b, loc, p, q);
    return arith::MulIOp::create(b, loc, p, q);
  };
  auto one = [&]() -> Value {
    if (auto ct = dyn_cast<ComplexType>(t)) {
      Type e = ct.getElementType();
      return complex::CreateOp::create(b, loc, ct, floatConst(b, loc, e, 1.0),
                                       floatConst(b, loc, e, 0.0));
    }
    return isa<FloatType>(t) ? floatConst(b, loc, t, 1.0)
                             : intConst(b, loc, t, 1);
  };
  uint64_t n = y < 0 ? -(uint64_t)y : (uint64_t)y;
  Value acc, base = x;
  while (n) {
    if (n & 1)
      acc = acc ? mul(acc, base) : base;
    n >>= 1;
    if (n)
      base = mul(base, base);
  }
  if (!acc)
    return one();
  if (y > 0)
    return acc;
  if (isa<ComplexType>(t))
    return complex::DivOp::create(b, loc, one(), acc);
  if (isLowPrecision(t))
    return arith::TruncFOp::create(
        b, loc, t,
        arith::DivFOp::create(
            b, loc, floatConst(b, loc, b.getF32Type(), 1.0),
            arith::ExtFOp::create(b, loc, b.getF32Type(), acc)));
  return arith::DivFOp::create(b, loc, one(), acc);
}

SmallVector<Value> mlir::ember::buildElementwiseScalar(OpBuilder &b,
                                                       Location loc,
                                                       Operation *op,
                                                       ValueRange args) {
  SmallVector<Type> argTypes, resTypes;
  for (Value v : op->getOperands())
    argTypes.push_back(getElementTypeOrSelf(v.getType()));
  for (Value v : op->getResults())
    resTypes.push_back(getElementTypeOrSelf(v.getType()));

  if (auto c = dyn_cast<ConvertOp>(op))
    return {convertScalar(b, loc, args[0], argTypes[0], resTypes[0])};
  if (isa<BitcastConvertOp>(op)) {
    Type dst = resTypes[0];
    if (auto it = dyn_cast<IntegerType>(dst))
      dst = b.getIntegerType(it.getWidth());
    if (dst == args[0].getType())
      return {args[0]};
    return {arith::BitcastOp::create(b, loc, dst, args[0])};
  }
  if (isa<SelectOp>(op))
    return {arith::SelectOp::create(b, loc, args[0], args[1], args[2])};
  if (isa<Threefry2x32Op>(op)) {
    Value out1;
    Value out0 =
        buildThreefryRounds(b, loc, args[0], args[1], args[2], args[3], out1);
    return {out0, out1};
  }
  if (isa<Philox4x32Op>(op))
    return buildPhiloxRounds(b, loc, args[0], args[1], args.drop_front(2));

  if (auto ip = dyn_cast<IntegerPowOp>(op))
    return {buildIntegerPow(b, loc, args[0], ip.getY())};
  // A step of one unit in the last place of the operands' own type (in f32
  // a half's neighbour would round back to it).
  if (isa<NextAfterOp>(op))
    return {buildNextAfter(b, loc, args[0], args[1])};

  // Half-precision floats compute in f32 and round once at the end; for a
  // single IEEE operation this gives the correctly rounded half result.
  SmallVector<Value> xs(args);
  bool upcast = llvm::any_of(argTypes, isLowPrecision);
  if (upcast)
    for (auto &x : xs)
      if (isLowPrecision(x.getType()))
        x = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
  auto finish = [&](Value r) -> SmallVector<Value> {
    if (!r)
      return {};
    if (upcast && isLowPrecision(resTypes[0]) && r.getType() != resTypes[0]) {
      // 8- and 4-bit results are rounded to f16 first, as XLA's CPU code
      // computes them in f16 (f8E8M0FNU, beyond f16's range, in f32).
      auto ft = cast<FloatType>(resTypes[0]);
      if (ft.getWidth() <= 8 && !isa<Float8E8M0FNUType>(ft) &&
          r.getType().isF32())
        r = arith::TruncFOp::create(b, loc, b.getF16Type(), r);
      r = arith::TruncFOp::create(b, loc, resTypes[0], r);
    }
    return {r};
  };

  if (auto cmp = dyn_cast<CompareOp>(op))
    return finish(buildCompare(b, loc, cmp.getComparisonDirection(), xs[0],
                               xs[1], argTypes[0]));
  if (auto clamp = dyn_cast<ClampOp>(op)) {
    Type t = xs[0].getType();
    if (isa<FloatType>(t))
      return finish(arith::MinimumFOp::create(
          b, loc, arith::MaximumFOp::create(b, loc, xs[1], xs[0]), xs[2]));
    bool u = isUnsignedOrBool(argTypes[0]);
    Value lo = u ? (Value)arith::MaxUIOp::create(b, loc, xs[1], xs[0])
                 : (Value)arith::MaxSIOp::create(b, loc, xs[1], xs[0]);
    return finish(u ? (Value)arith::MinUIOp::create(b, loc, lo, xs[2])
                    : (Value)arith::MinSIOp::create(b, loc, lo, xs[2]));
  }
  if (xs.size() == 2)
    return finish(buildBinary(b, loc, op, xs[0], xs[1], argTypes[0]));
  Type t = xs[0].getType();
  if (isa<FloatType>(t))
    return finish(buildUnaryFloat(b, loc, op, xs[0]));
  if (isa<ComplexType>(t))
    return finish(buildUnaryComplex(b, loc, op, xs[0]));
  return finish(buildUnaryInt(b, loc, op, xs[0], argTypes[0]));
}

Value mlir::ember::buildCombiner(OpBuilder &b, Location loc, ReduceKind kind,
                                 Value x, Value y, Type origElem) {
  Type t = x.getType();
  bool isF = isa<FloatType>(t), isC = isa<ComplexType>(t);
  // Booleans may be i1 values or their i8 storage (0 or 1).
  bool isBool = t.isInteger(1) || origElem.isInteger(1);
  bool u = isUnsignedOrBool(origElem);
  switch (kind) {
  case ReduceKind::Sum:
    if (isF)
      return arith::AddFOp::create(b, loc, x, y);
    if (isC)
      return complex::AddOp::create(b, loc, x, y);
    if (isBool)
      return arith::OrIOp::create(b, loc, x, y);
    return arith::AddIOp::create(b, loc, x, y);
  case ReduceKind::Prod:
    if (isF)
      return arith::MulFOp::create(b, loc, x, y);
    if (isC)
      return complex::MulOp::create(b, loc, x, y);
    if (isBool)
      return arith::AndIOp::create(b, loc, x, y);
    return arith::MulIOp::create(b, loc, x, y);
  case ReduceKind::Max:
    if (isF)
      return arith::MaximumFOp::create(b, loc, x, y);
    return u ? (Value)arith::MaxUIOp::create(b, loc, x, y)
             : (Value)arith::MaxSIOp::create(b, loc, x, y);
  case ReduceKind::Min:
    if (isF)
      return arith::MinimumFOp::create(b, loc, x, y);
    return u ? (Value)arith::MinUIOp::create(b, loc, x, y)
             : (Value)arith::MinSIOp::create(b, loc, x, y);
  case ReduceKind::And:
    return arith::AndIOp::create(b, loc, x, y);
  case ReduceKind::Or:
    return arith::OrIOp::create(b, loc, x, y);
  case ReduceKind::Xor:
    return arith::XOrIOp::create(b, loc, x, y);
  }
  return {};
}

TypedAttr mlir::ember::combinerIdentity(OpBuilder &b, ReduceKind kind, Type t,
                                        Type origElem) {
  bool u = isUnsignedOrBool(origElem);
  if (auto ft = dyn_cast<FloatType>(t)) {
    switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Prod:
    case ReduceKind::Max:
    case ReduceKind::Min:
      return b.getFloatAttr(t, reductionIdentity(ft.getFloatSemantics(), kind));
    default:
      return {};
    }
  }
  if (auto ct = dyn_cast<ComplexType>(t)) {
    double v = kind == ReduceKind::Prod ? 1.0 : 0.0;
    Type e = ct.getElementType();
    return cast<TypedAttr>(complex::NumberAttr::get(ct, v, 0.0));
    (void)e;
  }
  unsigned w = t.getIntOrFloatBitWidth();
  if (origElem.isInteger(1)) {
    bool one = kind == ReduceKind::And || kind == ReduceKind::Prod ||
               kind == ReduceKind::Min;
    return b.getIntegerAttr(t, one ? 1 : 0);
  }
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Or:
  case ReduceKind::Xor:
    return b.getIntegerAttr(t, 0);
  case ReduceKind::Prod:
    return b.getIntegerAttr(t, 1);
  case ReduceKind::And:
    return b.getIntegerAttr(t, APInt::getAllOnes(w));
  case ReduceKind::Max:
    return b.getIntegerAttr(t, u ? APInt::getMinValue(w)
                                 : APInt::getSignedMinValue(w));
  case ReduceKind::Min:
    return b.getIntegerAttr(t, u ? APInt::getMaxValue(w)
                                 : APInt::getSignedMaxValue(w));
  }
  return {};
}

Value mlir::ember::totalOrderKey(OpBuilder &b, Location loc, Value x) {
  auto ft = dyn_cast<FloatType>(x.getType());
  if (!ft)
    return x;
  unsigned w = ft.getWidth();
  Type it = b.getIntegerType(w);
  // JAX's order: -0.0 equals 0.0 and every NaN equals +NaN (after +inf), so
  // both are canonicalized before the bits are read.
  const auto &sem = ft.getFloatSemantics();
  Value isNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  if (APFloat::semanticsHasZero(sem)) {
    Value zero = floatConst(b, loc, ft, 0.0);
    x = arith::SelectOp::create(
        b, loc,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, zero), zero,
        x);
  }
  Value bits = arith::BitcastOp::create(b, loc, it, x);
  Value key;
  if (APFloat::semanticsHasSignedRepr(sem)) {
    // Negative floats: flip all but the sign bit so that the signed
    // integer order is the IEEE total order.
    Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, bits,
                                      intConst(b, loc, it, 0));
    Value flipped = arith::XOrIOp::create(
        b, loc, bits, intConstAP(b, loc, it, APInt::getSignedMaxValue(w)));
    key = arith::SelectOp::create(b, loc, neg, flipped, bits);
  } else {
    // (An unsigned type's bits are in order as unsigned integers.)
    key = arith::XOrIOp::create(b, loc, bits,
                                intConstAP(b, loc, it, APInt::getSignMask(w)));
  }
  if (!APFloat::semanticsHasNaN(sem))
    return key;
  // Every NaN after +inf (a NaN's own bits may sort anywhere: f8E4M3FNUZ's
  // is the pattern of -0).
  return arith::SelectOp::create(
      b, loc, isNaN, intConstAP(b, loc, it, APInt::getSignedMaxValue(w)), key);
}
