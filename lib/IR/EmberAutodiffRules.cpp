//===- EmberAutodiffRules.cpp - JVP and transpose rule of every op --------===//
//
// One place for the differentiation rules of all ember ops. `buildJvp` builds
// result tangents that are linear in the operand tangents (null = zero);
// `buildTranspose` transposes the linear ops that JVP code is made of. Reverse
// mode is JVP followed by transposition (see EmberAutodiff.cpp). JAX's
// conventions hold at non-differentiable points: abs'(0) = 1, max/min ties
// share the tangent equally, sqrt'(0) = inf, comparisons and integer ops have
// zero derivatives.
//
//===----------------------------------------------------------------------===//
#include "ember/IR/EmberDialect.h"

#include "RuleSwitch.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>

using namespace mlir;
using namespace mlir::ember;

namespace {

/// Small builder for the ember ops the rules emit.
struct R {
  OpBuilder &b;
  Location loc;

  RankedTensorType ty(Value v) const {
    return cast<RankedTensorType>(v.getType());
  }

  Value splat(RankedTensorType t, double v) {
    return ConstantOp::create(b, loc, splatOf(t, v));
  }
  Value like(Value v, double c) { return splat(ty(v), c); }
  Value zeros(Type t) { return splat(cast<RankedTensorType>(t), 0.0); }
  Value orZeros(Value v, Type t) { return v ? v : zeros(t); }

  /// A copy of `op` with the operands at the given positions replaced.
  /// (Replacing by position, not by value through an IRMapping: the same
  /// value can be several operands, as in `x @ x`.)
  Operation *cloneWith(Operation *op,
                       ArrayRef<std::pair<unsigned, Value>> operands) {
    Operation *c = b.clone(*op);
    for (auto [i, v] : operands)
      c->setOperand(i, v);
    return c;
  }

  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value neg(Value x) { return NegOp::create(b, loc, x); }
  Value square(Value x) { return mul(x, x); }
  Value cmp(ComparisonDirection d, Value x, Value y) {
    return CompareOp::create(b, loc, d, x, y);
  }
  Value select(Value p, Value x, Value y) {
    return SelectOp::create(b, loc, x.getType(), p, x, y);
  }
  Value convert(Value x, Type elem) {
    auto t = ty(x);
    if (t.getElementType() == elem)
      return x;
    return ConvertOp::create(b, loc, t.clone(elem), x);
  }
  Value toFloat(Value pred, Value like) {
    return convert(pred, ty(like).getElementType());
  }
  Value bcast(Value x, RankedTensorType t, ArrayRef<int64_t> dims) {
    if (x.getType() == t)
      return x;
    return BroadcastInDimOp::create(b, loc, t, x, b.getDenseI64ArrayAttr(dims));
  }
  /// Broadcasts a reduction result back over the reduced dimensions.
  Value unreduce(Value r, RankedTensorType full, ArrayRef<int64_t> reduced) {
    SmallVector<int64_t> kept;
    for (int64_t i = 0; i < full.getRank(); ++i)
      if (!llvm::is_contained(reduced, i))
        kept.push_back(i);
    return bcast(r, full.clone(ty(r).getElementType()), kept);
  }
  Value reduceSum(Value x, ArrayRef<int64_t> dims) {
    if (dims.empty())
      return x;
    return ReduceOp::create(b, loc, x, ReduceKind::Sum,
                            b.getDenseI64ArrayAttr(dims));
  }
  Value reshape(Value x, Type t) {
    if (x.getType() == t)
      return x;
    return ReshapeOp::create(b, loc, t, x);
  }
  Value scalar(Value x) { return reshape(x, ty(x).clone(ArrayRef<int64_t>{})); }
};

/// Floats and complex numbers have tangents; other element types have
/// JAX's float0 (zero) tangents.
bool isFloatLike(Type t) {
  Type e = getElementTypeOrSelf(t);
  return isa<FloatType, ComplexType>(e);
}

/// Tangent of a unary elementwise op y = f(x), `tangent(t, x, y)` (null:
/// no rule). The rules below that call it directly compute the tangent in
/// JAX's own form (a division where JAX divides, ...), for JAX's rounding.
template <typename Fn>
LogicalResult unaryTangent(R &r, Operation *op, ArrayRef<Value> t,
                           SmallVectorImpl<Value> &out, Fn tangent) {
  if (!t[0]) {
    out.push_back(Value());
    return success();
  }
  Value d = tangent(t[0], op->getOperand(0), op->getResult(0));
  if (!d)
    return failure();
  out.push_back(d);
  return success();
}

/// Tangent of a unary elementwise op y = f(x): t * f'(x), f' given as a
/// function of x and y (primal values).
template <typename Fn>
LogicalResult unary(R &r, Operation *op, ArrayRef<Value> t,
                    SmallVectorImpl<Value> &out, Fn deriv) {
  return unaryTangent(r, op, t, out, [&](Value tt, Value x, Value y) {
    Value d = deriv(x, y);
    return d ? r.mul(tt, d) : Value();
  });
}

/// JAX's tie rule for max/min: each side gets its tangent where it wins, and
/// half of it where the operands are equal.
Value chooserTangent(R &r, Value x, Value y, Value tx, Value ty, bool isMax) {
  Value xWins = r.toFloat(
      r.cmp(isMax ? ComparisonDirection::GT : ComparisonDirection::LT, x, y),
      x);
  Value yWins = r.toFloat(
      r.cmp(isMax ? ComparisonDirection::LT : ComparisonDirection::GT, x, y),
      x);
  Value tie =
      r.mul(r.toFloat(r.cmp(ComparisonDirection::EQ, x, y), x), r.like(x, 0.5));
  Value out;
  auto acc = [&](Value v) { out = out ? r.add(out, v) : v; };
  if (tx)
    acc(r.mul(tx, r.add(xWins, tie)));
  if (ty)
    acc(r.mul(ty, r.add(yWins, tie)));
  return out;
}

/// Dimensions of a dot_general: batch, lhs free, rhs free.
struct DotDims {
  SmallVector<int64_t> lb, rb, lc, rc, lFree, rFree;
  DotDims(DotGeneralOp op) {
    auto l = op.getLhs().getType(), rr = op.getRhs().getType();
    lb.assign(op.getLhsBatchingDimensions().begin(),
              op.getLhsBatchingDimensions().end());
    rb.assign(op.getRhsBatchingDimensions().begin(),
              op.getRhsBatchingDimensions().end());
    lc.assign(op.getLhsContractingDimensions().begin(),
              op.getLhsContractingDimensions().end());
    rc.assign(op.getRhsContractingDimensions().begin(),
              op.getRhsContractingDimensions().end());
    for (int64_t i = 0; i < l.getRank(); ++i)
      if (!llvm::is_contained(lb, i) && !llvm::is_contained(lc, i))
        lFree.push_back(i);
    for (int64_t i = 0; i < rr.getRank(); ++i)
      if (!llvm::is_contained(rb, i) && !llvm::is_contained(rc, i))
        rFree.push_back(i);
  }
};

/// The cotangent of one dot_general operand: contract the result cotangent
/// with the other operand, then permute into the operand's layout.
/// `self*` describe the operand whose cotangent we want, `other*` the other.
Value dotTranspose(R &r, Value ct, Value other, RankedTensorType selfType,
                   ArrayRef<int64_t> selfBatch, ArrayRef<int64_t> selfContract,
                   ArrayRef<int64_t> selfFree, ArrayRef<int64_t> otherBatch,
                   ArrayRef<int64_t> otherContract, ArrayRef<int64_t> otherFree,
                   int64_t ctOtherFreeStart, ArrayAttr precision) {
  int64_t nb = selfBatch.size(), ns = selfFree.size();
  SmallVector<int64_t> ctBatch, ctContract;
  for (int64_t i = 0; i < nb; ++i)
    ctBatch.push_back(i);
  for (int64_t i = 0; i < (int64_t)otherFree.size(); ++i)
    ctContract.push_back(ctOtherFreeStart + i);
  // The other operand's remaining dims are its contracting dims, ascending.
  SmallVector<int64_t> otherRest(otherContract);
  llvm::sort(otherRest);
  auto otherType = r.ty(other);
  SmallVector<int64_t> shape;
  for (int64_t d : otherBatch)
    shape.push_back(otherType.getDimSize(d));
  auto ctType = r.ty(ct);
  for (int64_t i = 0; i < ctType.getRank(); ++i)
    if (!llvm::is_contained(ctBatch, i) && !llvm::is_contained(ctContract, i))
      shape.push_back(ctType.getDimSize(i));
  for (int64_t d : otherRest)
    shape.push_back(otherType.getDimSize(d));
  auto resType = RankedTensorType::get(shape, selfType.getElementType());
  // Result layout: [batch | ct free (= self free) | other contracting].
  SmallVector<int64_t> perm(selfType.getRank());
  for (int64_t d = 0; d < selfType.getRank(); ++d) {
    if (auto it = llvm::find(selfBatch, d); it != selfBatch.end())
      perm[d] = it - selfBatch.begin();
    else if (auto it2 = llvm::find(selfFree, d); it2 != selfFree.end())
      perm[d] = nb + (it2 - selfFree.begin());
    else {
      int64_t j = llvm::find(selfContract, d) - selfContract.begin();
      int64_t p = llvm::find(otherRest, otherContract[j]) - otherRest.begin();
      perm[d] = nb + ns + p;
    }
  }
  bool identity = true;
  for (int64_t d = 0; d < (int64_t)perm.size(); ++d)
    identity &= perm[d] == d;
  // With the operands swapped the layout is [other contracting | ct free]:
  // when that is the operand's own layout, no transpose is needed (the
  // weight gradient x^T @ ct of a matmul, say).
  if (!identity && nb == 0) {
    int64_t nr = otherRest.size();
    bool swapped = true;
    for (int64_t d = 0; d < (int64_t)perm.size(); ++d)
      swapped &= (perm[d] < ns ? perm[d] + nr : perm[d] - ns) == d;
    if (swapped) {
      SmallVector<int64_t> swappedShape(shape.begin() + ns, shape.end());
      swappedShape.append(shape.begin(), shape.begin() + ns);
      return DotGeneralOp::create(
          r.b, r.loc,
          RankedTensorType::get(swappedShape, selfType.getElementType()), other,
          ct, r.b.getDenseI64ArrayAttr({}), r.b.getDenseI64ArrayAttr({}),
          r.b.getDenseI64ArrayAttr(otherFree),
          r.b.getDenseI64ArrayAttr(ctContract), precision);
    }
  }
  Value dot = DotGeneralOp::create(
      r.b, r.loc, resType, ct, other, r.b.getDenseI64ArrayAttr(ctBatch),
      r.b.getDenseI64ArrayAttr(otherBatch),
      r.b.getDenseI64ArrayAttr(ctContract), r.b.getDenseI64ArrayAttr(otherFree),
      precision);
  if (identity)
    return dot;
  return TransposeOp::create(r.b, r.loc, dot, r.b.getDenseI64ArrayAttr(perm));
}

Value iotaLike(R &r, RankedTensorType t, int64_t dim) {
  return IotaOp::create(r.b, r.loc, t.clone(r.b.getI32Type()), dim);
}

/// Linear algebra helpers: matrices are the two trailing dimensions.
Value swapLastTwo(R &r, Value x) {
  int64_t rank = r.ty(x).getRank();
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 1], perm[rank - 2]);
  return TransposeOp::create(r.b, r.loc, x, r.b.getDenseI64ArrayAttr(perm));
}

/// The conjugate transpose of each trailing matrix of x.
Value adjointOf(R &r, Value x) {
  Value t = swapLastTwo(r, x);
  if (isa<ComplexType>(r.ty(x).getElementType()))
    return ConjOp::create(r.b, r.loc, t);
  return t;
}

/// x @ y per batch element (x^T @ y with `transX`).
Value batchedMatmul(R &r, Value x, Value y, bool transX = false) {
  auto xt = r.ty(x), yt = r.ty(y);
  int64_t rank = xt.getRank();
  SmallVector<int64_t> batch = llvm::to_vector(llvm::seq<int64_t>(0, rank - 2));
  SmallVector<int64_t> shape(xt.getShape().drop_back(2));
  shape.push_back(xt.getDimSize(transX ? rank - 1 : rank - 2));
  shape.push_back(yt.getDimSize(rank - 1));
  return DotGeneralOp::create(
      r.b, r.loc, RankedTensorType::get(shape, xt.getElementType()), x, y,
      r.b.getDenseI64ArrayAttr(batch), r.b.getDenseI64ArrayAttr(batch),
      r.b.getDenseI64ArrayAttr({transX ? rank - 2 : rank - 1}),
      r.b.getDenseI64ArrayAttr({rank - 2}), /*precision=*/nullptr);
}

/// `x` with the entries outside the triangle `lower` names set to zero
/// (the diagonal too with `strict`), and its diagonal times `diagScale`.
Value triangle(R &r, Value x, bool lower, bool strict, double diagScale = 1) {
  auto t = r.ty(x);
  int64_t rank = t.getRank();
  Value row = iotaLike(r, t, rank - 2), col = iotaLike(r, t, rank - 1);
  auto dir = lower
                 ? (strict ? ComparisonDirection::GT : ComparisonDirection::GE)
                 : (strict ? ComparisonDirection::LT : ComparisonDirection::LE);
  Value kept = r.select(r.cmp(dir, row, col), x, r.zeros(t));
  if (diagScale == 1 || strict)
    return kept;
  return r.select(r.cmp(ComparisonDirection::EQ, row, col),
                  r.mul(kept, r.like(kept, diagScale)), kept);
}

Value triangularSolve(R &r, TriangularSolveOp like, Value a, Value rhs,
                      bool transposeA) {
  return TriangularSolveOp::create(r.b, r.loc, rhs.getType(), a, rhs,
                                   like.getLower(), transposeA,
                                   like.getUnitDiagonal());
}

/// The permutation a sort applies along its dimension (as i32 positions).
Value sortPermutation(R &r, SortOp op) {
  SmallVector<Value> keys(op.getInputs().take_front(op.getNumKeys()));
  auto t = r.ty(keys[0]);
  keys.push_back(iotaLike(r, t, op.getDimension()));
  auto s = SortOp::create(r.b, r.loc, keys, op.getDimension(), op.getNumKeys(),
                          true);
  return s.getResult(op.getNumKeys());
}

/// Tangent of prod(x) over `dims`: sum_i t_i * prod_{j != i} x_j, with the
/// products of the others taken as exclusive prefix times exclusive suffix
/// products (exact when x has zeros; no division).
Value prodTangent(R &r, Value x, Value t, ArrayRef<int64_t> dims) {
  auto xt = r.ty(x);
  // Bring the reduced dimensions last and flatten them into one.
  SmallVector<int64_t> perm, kept;
  int64_t m = 1;
  for (int64_t i = 0; i < xt.getRank(); ++i)
    if (!llvm::is_contained(dims, i)) {
      perm.push_back(i);
      kept.push_back(xt.getDimSize(i));
    }
  for (int64_t d : dims) {
    perm.push_back(d);
    m *= xt.getDimSize(d);
  }
  auto flatType = xt.clone([&] {
    SmallVector<int64_t> s(kept);
    s.push_back(m);
    return s;
  }());
  auto flatten = [&](Value v) {
    bool identity = true;
    for (int64_t i = 0; i < (int64_t)perm.size(); ++i)
      identity &= perm[i] == i;
    if (!identity)
      v = TransposeOp::create(r.b, r.loc, v, r.b.getDenseI64ArrayAttr(perm));
    return r.reshape(v, flatType);
  };
  Value xf = flatten(x), tf = flatten(t);
  int64_t last = flatType.getRank() - 1;
  Value one = r.splat(RankedTensorType::get({}, xt.getElementType()), 1.0);
  SmallVector<int64_t> zeros(flatType.getRank(), 0), lo(zeros), hi(zeros);
  lo[last] = 1;
  hi[last] = -1;
  // Shifted right by one (a leading 1), then the inclusive scan: the exclusive
  // prefix.
  Value right = PadOp::create(r.b, r.loc, xf, one, r.b.getDenseI64ArrayAttr(lo),
                              r.b.getDenseI64ArrayAttr(hi),
                              r.b.getDenseI64ArrayAttr(zeros));
  Value prefix =
      CumulativeOp::create(r.b, r.loc, right, ReduceKind::Prod, last, false);
  Value left = PadOp::create(r.b, r.loc, xf, one, r.b.getDenseI64ArrayAttr(hi),
                             r.b.getDenseI64ArrayAttr(lo),
                             r.b.getDenseI64ArrayAttr(zeros));
  Value suffix =
      CumulativeOp::create(r.b, r.loc, left, ReduceKind::Prod, last, true);
  Value others = r.mul(prefix, suffix);
  return r.reduceSum(r.mul(tf, others), {last});
}

/// trigamma(x) = d/dx digamma(x): reflection for x <= 0, then six steps of
/// the recurrence psi1(z) = psi1(z + 1) + 1/z^2 and the asymptotic series
/// 1/w + 1/(2w^2) + sum B_2k / w^(2k+1) at w = z + 6.
Value trigamma(R &r, Value x) {
  auto one = [&](double v) { return r.like(x, v); };
  Value neg = r.cmp(ComparisonDirection::LE, x, one(0.0));
  Value z = r.select(neg, r.sub(one(1.0), x), x);
  Value acc = one(0.0);
  for (int k = 0; k < 6; ++k) {
    Value zk = r.add(z, one((double)k));
    acc = r.add(acc, r.div(one(1.0), r.square(zk)));
  }
  Value w = r.add(z, one(6.0));
  Value iw = r.div(one(1.0), w), iw2 = r.square(iw);
  // Tail in powers of 1/w^2: 1/6 - 1/30 w^-2 + 1/42 w^-4 - 1/30 w^-6 + 5/66
  // w^-8.
  Value tail = one(5.0 / 66.0);
  for (double c : {-1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 1.0 / 6.0})
    tail = r.add(r.mul(tail, iw2), one(c));
  Value series =
      r.add(r.add(iw, r.mul(one(0.5), iw2)), r.mul(r.mul(iw2, iw), tail));
  Value pos = r.add(acc, series);
  // psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x) for x <= 0.
  Value s = SinOp::create(r.b, r.loc, r.mul(one(M_PI), x));
  Value refl = r.sub(r.div(one(M_PI * M_PI), r.square(s)), pos);
  return r.select(neg, refl, pos);
}

/// `v` shifted by `s` along `axis` towards higher indices (towards lower ones
/// with `reverse`), the vacated places filled with `fill`.
Value shiftAlong(R &r, Value v, int64_t axis, int64_t s, bool reverse,
                 double fill) {
  int64_t rank = r.ty(v).getRank();
  SmallVector<int64_t> lo(rank, 0), hi(rank, 0), interior(rank, 0);
  (reverse ? hi : lo)[axis] = s;
  (reverse ? lo : hi)[axis] = -s;
  Value f = r.splat(RankedTensorType::get({}, r.ty(v).getElementType()), fill);
  return PadOp::create(r.b, r.loc, v, f, r.b.getDenseI64ArrayAttr(lo),
                       r.b.getDenseI64ArrayAttr(hi),
                       r.b.getDenseI64ArrayAttr(interior));
}

/// h_i = a_i h_{i-1} + b_i along `axis` (h_{-1} = 0; from the other end with
/// `reverse`), by log-step doubling on (a, b) pairs: no division, linear in b.
Value linearRecurrence(R &r, Value a, Value b, int64_t axis, bool reverse) {
  int64_t n = r.ty(a).getDimSize(axis);
  for (int64_t s = 1; s < n; s *= 2) {
    Value bs = shiftAlong(r, b, axis, s, reverse, 0.0);
    Value as = shiftAlong(r, a, axis, s, reverse, 1.0);
    b = r.add(r.mul(bs, a), b);
    a = r.mul(as, a);
  }
  return b;
}

/// Elements [start, limit) of `v` along `axis`, every `stride`-th.
Value sliceAlong(R &r, Value v, int64_t axis, int64_t start, int64_t limit,
                 int64_t stride = 1) {
  auto vt = r.ty(v);
  SmallVector<int64_t> lo(vt.getRank(), 0), hi(vt.getShape()),
      step(vt.getRank(), 1);
  lo[axis] = start;
  hi[axis] = limit;
  step[axis] = stride;
  return SliceOp::create(r.b, r.loc, v, r.b.getDenseI64ArrayAttr(lo),
                         r.b.getDenseI64ArrayAttr(hi),
                         r.b.getDenseI64ArrayAttr(step));
}

/// `even` at the even places along `axis` and `odd` at the odd ones (JAX's
/// `_interleave`: two interior-padded operands added).
Value interleave(R &r, Value even, Value odd, int64_t axis) {
  int64_t ne = r.ty(even).getDimSize(axis), no = r.ty(odd).getDimSize(axis);
  int64_t n = ne + no, rank = r.ty(even).getRank();
  Value zero =
      r.splat(RankedTensorType::get({}, r.ty(even).getElementType()), 0.0);
  auto spread = [&](Value v, int64_t first, int64_t count) {
    SmallVector<int64_t> lo(rank, 0), hi(rank, 0), interior(rank, 0);
    lo[axis] = first;
    hi[axis] = n - first - (2 * count - 1);
    interior[axis] = 1;
    return (Value)PadOp::create(
        r.b, r.loc, v, zero, r.b.getDenseI64ArrayAttr(lo),
        r.b.getDenseI64ArrayAttr(hi), r.b.getDenseI64ArrayAttr(interior));
  };
  if (no == 0)
    return even;
  return r.add(spread(even, 0, ne), spread(odd, 1, no));
}

/// The running max (min) of `x` along `axis` and its tangent for `t`, as
/// JAX's `associative_scan` computes them (the JVP rule JAX gives
/// `cummax`/`cummin`): adjacent pairs combined, the scan of those recursed
/// on, the even places combined from it; ties split the tangent in halves at
/// each combination (`chooserTangent`), so equal elements share it in the
/// tree's proportions, as under JAX.
std::pair<Value, Value> extremeScan(R &r, Value x, Value t, int64_t axis,
                                    bool isMax) {
  int64_t n = r.ty(x).getDimSize(axis);
  if (n < 2)
    return {x, t};
  auto combine = [&](Value a, Value b, Value ta, Value tb) {
    Value y = isMax ? (Value)MaxOp::create(r.b, r.loc, a, b)
                    : (Value)MinOp::create(r.b, r.loc, a, b);
    return std::make_pair(y, chooserTangent(r, a, b, ta, tb, isMax));
  };
  auto [px, pt] = combine(
      sliceAlong(r, x, axis, 0, n - 1, 2), sliceAlong(r, x, axis, 1, n, 2),
      sliceAlong(r, t, axis, 0, n - 1, 2), sliceAlong(r, t, axis, 1, n, 2));
  auto [ox, ot] = extremeScan(r, px, pt, axis, isMax);
  Value ex = sliceAlong(r, x, axis, 0, 1), et = sliceAlong(r, t, axis, 0, 1);
  if (n > 2) {
    int64_t m = r.ty(ox).getDimSize(axis);
    Value ax = n % 2 == 0 ? sliceAlong(r, ox, axis, 0, m - 1) : ox;
    Value at = n % 2 == 0 ? sliceAlong(r, ot, axis, 0, m - 1) : ot;
    auto [cx, ct] = combine(ax, sliceAlong(r, x, axis, 2, n, 2), at,
                            sliceAlong(r, t, axis, 2, n, 2));
    ex = ConcatenateOp::create(r.b, r.loc, ValueRange{ex, cx}, axis);
    et = ConcatenateOp::create(r.b, r.loc, ValueRange{et, ct}, axis);
  }
  return {interleave(r, ex, ox, axis), interleave(r, et, ot, axis)};
}

/// out[..., i, ...] = v[..., idx[..., i, ...], ...] along `axis` (idx i32,
/// same shape as v): a gather with every other dimension batched.
Value takeAlongAxis(R &r, Value v, Value idx, int64_t axis) {
  auto t = r.ty(v);
  int64_t rank = t.getRank();
  SmallVector<int64_t> shape(t.getShape());
  shape.push_back(1);
  Value idx1 =
      r.reshape(idx, RankedTensorType::get(shape, r.ty(idx).getElementType()));
  SmallVector<int64_t> batch;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      batch.push_back(d);
  SmallVector<int64_t> ones(rank, 1);
  return GatherOp::create(
      r.b, r.loc, t, v, idx1, r.b.getDenseI64ArrayAttr({}),
      r.b.getDenseI64ArrayAttr({axis}), r.b.getDenseI64ArrayAttr(batch),
      r.b.getDenseI64ArrayAttr(batch), r.b.getDenseI64ArrayAttr({axis}),
      r.b.getI64IntegerAttr(rank), r.b.getDenseI64ArrayAttr(ones),
      IndexModeAttr::get(r.b.getContext(), IndexMode::Clip));
}

/// The gather that reads, from an operand-shaped `src`, the window each
/// update of scatter `o` goes to (the scatter's inverse), in `mode`.
Value gatherWindows(R &r, ScatterOp o, Value src, IndexMode mode) {
  auto operand = o.getOperand().getType();
  auto upd = o.getUpdates().getType();
  SmallVector<int64_t> windowOperandDims;
  for (int64_t d = 0; d < operand.getRank(); ++d)
    if (!llvm::is_contained(o.getInsertedWindowDims(), d) &&
        !llvm::is_contained(o.getOperandBatchingDims(), d))
      windowOperandDims.push_back(d);
  SmallVector<int64_t> sizes;
  for (int64_t d = 0; d < operand.getRank(); ++d) {
    auto it = llvm::find(windowOperandDims, d);
    sizes.push_back(
        it == windowOperandDims.end()
            ? 1
            : upd.getDimSize(
                  o.getUpdateWindowDims()[it - windowOperandDims.begin()]));
  }
  return GatherOp::create(
      r.b, r.loc, upd.clone(r.ty(src).getElementType()), src,
      o.getScatterIndices(), o.getUpdateWindowDimsAttr(),
      o.getInsertedWindowDimsAttr(), o.getOperandBatchingDimsAttr(),
      o.getScatterIndicesBatchingDimsAttr(),
      o.getScatterDimsToOperandDimsAttr(), o.getIndexVectorDimAttr(),
      r.b.getDenseI64ArrayAttr(sizes),
      IndexModeAttr::get(r.b.getContext(), mode));
}

/// `updates` added into `operand` at the windows of scatter `o`.
Value scatterAddLike(R &r, ScatterOp o, Value operand, Value updates) {
  return ScatterOp::create(
      r.b, r.loc, operand.getType(), operand, o.getScatterIndices(), updates,
      o.getUpdateWindowDimsAttr(), o.getInsertedWindowDimsAttr(),
      o.getOperandBatchingDimsAttr(), o.getScatterIndicesBatchingDimsAttr(),
      o.getScatterDimsToOperandDimsAttr(), o.getIndexVectorDimAttr(),
      ScatterKindAttr::get(r.b.getContext(), ScatterKind::Add),
      o.getModeAttr());
}

/// JVP of a min/max scatter (JAX's rule): each element's tangent is the mean
/// of the tangents of the values that attain it, the operand's own value
/// counting as one of them when it is retained.
Value extremalScatterTangent(R &r, ScatterOp o, Value tOperand,
                             Value tUpdates) {
  IndexMode mode = o.getMode();
  Value updates = o.getUpdates();
  Value zerosU = r.zeros(updates.getType());
  Value ones = r.like(updates, 1.0);
  Value target = gatherWindows(r, o, o.getResult(), mode);
  Value initial = gatherWindows(r, o, o.getOperand(), mode);
  Value attained = r.cmp(ComparisonDirection::EQ, updates, target);
  Value retained = r.cmp(ComparisonDirection::EQ, initial, target);
  Value zerosO = r.zeros(o.getOperand().getType());
  Value numUpdates = gatherWindows(
      r, o, scatterAddLike(r, o, zerosO, r.select(attained, ones, zerosU)),
      mode);
  Value numRefs = gatherWindows(r, o, scatterAddLike(r, o, zerosO, ones), mode);
  Value shared = r.div(ones, r.add(numUpdates, ones));
  Value updatesCoef = r.select(
      attained, r.select(retained, shared, r.div(ones, numUpdates)), zerosU);
  Value operandCoef =
      r.div(r.sub(r.select(retained, shared, zerosU), ones), numRefs);
  Value tOp = r.orZeros(tOperand, o.getOperand().getType());
  Value tUpd = r.orZeros(tUpdates, updates.getType());
  Value windows = r.add(r.mul(gatherWindows(r, o, tOp, mode), operandCoef),
                        r.mul(tUpd, updatesCoef));
  return scatterAddLike(r, o, tOp, windows);
}

} // namespace

DenseElementsAttr mlir::ember::splatOf(RankedTensorType t, double v) {
  Type e = t.getElementType();
  if (auto c = dyn_cast<ComplexType>(e)) {
    auto ft = cast<FloatType>(c.getElementType());
    APFloat re(v);
    bool lost;
    re.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    APFloat im = APFloat::getZero(ft.getFloatSemantics());
    std::complex<APFloat> z(re, im);
    return DenseElementsAttr::get(t, ArrayRef<std::complex<APFloat>>(z));
  }
  if (isa<FloatType>(e))
    return DenseElementsAttr::get(t, floatAttrOf(e, v));
  return DenseElementsAttr::get(t, IntegerAttr::get(e, (int64_t)v));
}

APFloat mlir::ember::floatIn(const llvm::fltSemantics &sem, double v) {
  bool hasNaN = APFloat::semanticsHasNaN(sem);
  bool isSigned = APFloat::semanticsHasSignedRepr(sem);
  bool negative = std::signbit(v) && isSigned;
  auto nan = [&] {
    return hasNaN ? APFloat::getQNaN(sem, negative)
                  : APFloat::getZero(sem, true);
  };
  if (std::isnan(v))
    return nan();
  if (!isSigned && std::signbit(v))
    return nan();
  if (v == 0)
    return APFloat::semanticsHasZero(sem) ? APFloat::getZero(sem, negative)
                                          : nan();
  if (std::isinf(v))
    return APFloat::semanticsHasInf(sem) ? APFloat::getInf(sem, negative)
           : hasNaN                      ? nan()
                                         : APFloat::getLargest(sem, negative);
  APFloat x(v);
  if (!APFloat::semanticsHasZero(sem)) {
    APFloat smallest = APFloat::getSmallest(sem);
    bool lost;
    smallest.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven,
                     &lost);
    if (std::fabs(v) < smallest.convertToDouble())
      return APFloat::getSmallest(sem);
  }
  bool lost;
  x.convert(sem, APFloat::rmNearestTiesToEven, &lost);
  return x;
}

FloatAttr mlir::ember::floatAttrOf(Type t, double v) {
  auto f = cast<FloatType>(t);
  return FloatAttr::get(f, floatIn(f.getFloatSemantics(), v));
}

APFloat mlir::ember::reductionIdentity(const llvm::fltSemantics &sem,
                                       ReduceKind kind) {
  bool inf = APFloat::semanticsHasInf(sem);
  switch (kind) {
  case ReduceKind::Prod:
    return APFloat::getOne(sem);
  case ReduceKind::Max:
    return inf ? APFloat::getInf(sem, /*Negative=*/true)
           : APFloat::semanticsHasSignedRepr(sem)
               ? APFloat::getLargest(sem, /*Negative=*/true)
               : APFloat::getSmallest(sem);
  case ReduceKind::Min:
    return inf ? APFloat::getInf(sem) : APFloat::getLargest(sem);
  default:
    return floatIn(sem, 0.0);
  }
}

LogicalResult mlir::ember::buildJvp(Operation *op, OpBuilder &b,
                                    ArrayRef<Value> t,
                                    SmallVectorImpl<Value> &out,
                                    RuleMode mode) {
  R r{b, op->getLoc()};
  bool probe = mode == RuleMode::Probe;
  // Results that are not floats have zero tangents (JAX's float0); the stack
  // ops' rule below refuses tangents even for their integer handles.
  if (!probe && !isa<StackPushOp, StackPopOp, StackFreeOp>(op) &&
      llvm::none_of(op->getResultTypes(), isFloatLike)) {
    out.append(op->getNumResults(), Value());
    return success();
  }
  auto pass = [&](Value v) {
    out.push_back(v);
    return success();
  };
  auto zero = [&]() {
    out.append(op->getNumResults(), Value());
    return success();
  };
  auto linearSame = [&]() -> LogicalResult {
    // A linear op: the same op applied to the tangents.
    if (llvm::all_of(t, [](Value v) { return !v; }))
      return zero();
    // Float operands take their tangents (zero when absent); integer
    // operands (indices) keep their primal values.
    IRMapping map;
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (isFloatLike(v.getType()))
        map.map(v, t[i] ? t[i] : r.zeros(v.getType()));
    Operation *c = b.clone(*op, map);
    out.append(c->getResults().begin(), c->getResults().end());
    return success();
  };
  // Ops whose traits say what their JVP is (EmberInterfaces.td).
  if (op->hasTrait<ZeroTangentTrait>())
    return probe ? success() : zero();
  if (op->hasTrait<LinearTrait>())
    return probe ? success() : linearSame();
  return RuleSwitch(op, mode)
      .Case<StackPushOp, StackPopOp, StackFreeOp>([&](auto o) -> LogicalResult {
        // The values a stack saves are residuals of a derivative:
        // differentiating through them again would need their tangents saved
        // too. (Handles and other integer results have zero tangents.)
        if (llvm::any_of(t, [](Value v) { return v; }) ||
            llvm::any_of(o->getResultTypes(), isFloatLike))
          return emitUserError(o, runtime::ErrorKind::NotDifferentiableAgain)
                 << ("cannot be differentiated: the reverse-mode derivative of "
                     "a while_loop with a "
                     "run-time trip count cannot be differentiated again; use "
                     "fori_loop with static "
                     "bounds or lax.scan for higher-order derivatives");
        return zero();
      })
      .Case([&](BitcastConvertOp o) -> LogicalResult {
        return emitUserError(o, runtime::ErrorKind::NoJvpRule)
               << ("has no JVP rule: bit patterns reinterpreted as floats "
                   "cannot "
                   "be differentiated");
      })
      .Case<OptimizationBarrierOp, CheckpointNameOp>(
          [&](Operation *) -> LogicalResult {
            out.append(t.begin(), t.end()); // tangents pass through
            return success();
          })
      .Case<PmaxOp, PminOp>([&](auto o) -> LogicalResult {
        if (!t[0])
          return zero();
        // As in JAX: the lanes that hold the extremum are not told apart.
        return emitUserError(o, runtime::ErrorKind::NoJvpRule)
               << "has no JVP rule: Differentiation rule for '"
               << o->getName().stripDialect() << "' not implemented";
      })
      .Case([&](ReduceOp o) -> LogicalResult {
        if (!t[0])
          return zero();
        Value x = o.getOperand(), y = o.getResult();
        auto dims = o.getDimensions();
        switch (o.getKind()) {
        case ReduceKind::Sum:
          return linearSame();
        case ReduceKind::Max:
        case ReduceKind::Min: {
          Value loc = r.toFloat(
              r.cmp(ComparisonDirection::EQ, x, r.unreduce(y, r.ty(x), dims)),
              x);
          Value count = r.reduceSum(loc, dims);
          return pass(r.div(r.reduceSum(r.mul(t[0], loc), dims), count));
        }
        case ReduceKind::Prod:
          return pass(prodTangent(r, x, t[0], dims));
        default:
          return zero();
        }
      })
      .Case([&](CumulativeOp o) -> LogicalResult {
        if (o.getKind() == ReduceKind::Sum)
          return linearSame();
        if (!t[0])
          return zero();
        int64_t axis = o.getAxis();
        bool rev = o.getReverse();
        if (o.getKind() == ReduceKind::Prod) {
          // y_i = x_i y_{i-1}, so dy_i = x_i dy_{i-1} + y_{i-1} t_i: a linear
          // recurrence (no division, so zeros in x are fine).
          Value prev = shiftAlong(r, o.getResult(), axis, 1, rev, 1.0);
          return pass(linearRecurrence(r, o.getOperand(), r.mul(prev, t[0]),
                                       axis, rev));
        }
        if (o.getKind() == ReduceKind::Max || o.getKind() == ReduceKind::Min) {
          // JAX's rule: the JVP of its associative scan of max (min), ties
          // sharing the tangent; `reverse` scans the reversed operand.
          Value x = o.getOperand(), tt = t[0];
          auto flip = [&](Value v) {
            return (Value)ReverseOp::create(b, r.loc, v,
                                            b.getDenseI64ArrayAttr({axis}));
          };
          if (rev) {
            x = flip(x);
            tt = flip(tt);
          }
          Value dy = extremeScan(r, x, tt, axis, o.getKind() == ReduceKind::Max)
                         .second;
          return pass(rev ? flip(dy) : dy);
        }
        return emitUserError(o, runtime::ErrorKind::NoJvpRule)
               << "has no JVP rule for kind "
               << stringifyReduceKind(o.getKind());
      })
      .Case([&](MulOp o) -> LogicalResult {
        Value res;
        if (t[0])
          res = r.mul(t[0], o.getRhs());
        if (t[1])
          res = res ? r.add(res, r.mul(o.getLhs(), t[1]))
                    : r.mul(o.getLhs(), t[1]);
        return pass(res);
      })
      .Case([&](DivOp o) -> LogicalResult {
        // d(x/y) = tx / y - ty * (x/y) / y
        Value res;
        if (t[0])
          res = r.div(t[0], o.getRhs());
        if (t[1]) {
          // JAX's form: (-ty x) y^-2, y^-2 = 1 / (y y).
          Value y = o.getRhs();
          Value d = r.mul(r.mul(r.neg(t[1]), o.getLhs()),
                          r.div(r.like(y, 1.0), r.square(y)));
          res = res ? r.add(res, d) : d;
        }
        return pass(res);
      })
      .Case([&](PowOp o) -> LogicalResult {
        Value x = o.getLhs(), y = o.getRhs(), z = o.getResult(), res;
        if (t[0]) {
          // y * x^(y-1); zero where y == 0 (JAX's rule).
          Value d =
              r.mul(y, PowOp::create(b, r.loc, x, r.sub(y, r.like(y, 1.0))));
          d = r.select(r.cmp(ComparisonDirection::EQ, y, r.like(y, 0.0)),
                       r.like(y, 0.0), d);
          res = r.mul(t[0], d);
        }
        if (t[1]) {
          Value logx = LogOp::create(b, r.loc, x);
          logx = r.select(r.cmp(ComparisonDirection::EQ, x, r.like(x, 0.0)),
                          r.like(x, 0.0), logx);
          Value d = r.mul(t[1], r.mul(logx, z));
          res = res ? r.add(res, d) : d;
        }
        return pass(res);
      })
      .Case([&](MaxOp o) {
        return pass(
            chooserTangent(r, o.getLhs(), o.getRhs(), t[0], t[1], true));
      })
      .Case([&](MinOp o) {
        return pass(
            chooserTangent(r, o.getLhs(), o.getRhs(), t[0], t[1], false));
      })
      .Case([&](Atan2Op o) -> LogicalResult {
        Value x = o.getLhs(), y = o.getRhs(), res;
        Value den = r.add(r.square(x), r.square(y));
        if (t[0])
          res = r.mul(t[0], r.div(y, den));
        if (t[1]) {
          Value d = r.neg(r.mul(t[1], r.div(x, den)));
          res = res ? r.add(res, d) : d;
        }
        return pass(res);
      })
      .Case([&](RemOp o) -> LogicalResult {
        // rem(x, y) = x - y * trunc(x / y)
        Value res = t[0];
        if (t[1]) {
          Value q = r.div(o.getLhs(), o.getRhs());
          Value tr = r.select(r.cmp(ComparisonDirection::LT, q, r.like(q, 0.0)),
                              CeilOp::create(b, r.loc, q),
                              FloorOp::create(b, r.loc, q));
          Value d = r.neg(r.mul(t[1], tr));
          res = res ? r.add(res, d) : d;
        }
        return pass(res);
      })
      .Case([&](AbsOp o) {
        // JAX: abs'(x) = 1 for x >= 0 (so abs'(0) = 1), -1 otherwise.
        return unary(r, op, t, out, [&](Value x, Value) {
          return r.select(r.cmp(ComparisonDirection::GE, x, r.like(x, 0.0)),
                          r.like(x, 1.0), r.like(x, -1.0));
        });
      })
      .Case([&](ExpOp o) {
        return unary(r, op, t, out, [&](Value, Value y) { return y; });
      })
      .Case([&](Exp2Op o) {
        return unary(r, op, t, out, [&](Value, Value y) {
          return r.mul(y, r.like(y, M_LN2));
        });
      })
      .Case([&](LogOp o) {
        return unaryTangent(r, op, t, out, [&](Value tt, Value x, Value) {
          return r.div(tt, x);
        });
      })
      .Case([&](Log1pOp o) {
        return unaryTangent(r, op, t, out, [&](Value tt, Value x, Value) {
          return r.div(tt, r.add(x, r.like(x, 1.0)));
        });
      })
      .Case([&](Expm1Op o) {
        return unary(r, op, t, out,
                     [&](Value, Value y) { return r.add(y, r.like(y, 1.0)); });
      })
      .Case([&](TanhOp o) {
        return unaryTangent(r, op, t, out, [&](Value tt, Value, Value y) {
          return r.mul(r.add(tt, r.mul(tt, y)), r.sub(r.like(y, 1.0), y));
        });
      })
      .Case([&](LogisticOp o) {
        return unary(r, op, t, out, [&](Value, Value y) {
          return r.mul(y, r.sub(r.like(y, 1.0), y));
        });
      })
      .Case([&](SinOp o) {
        return unary(r, op, t, out, [&](Value x, Value) {
          return (Value)CosOp::create(b, r.loc, x);
        });
      })
      .Case([&](CosOp o) {
        return unary(r, op, t, out, [&](Value x, Value) {
          return r.neg(SinOp::create(b, r.loc, x));
        });
      })
      .Case([&](TanOp o) {
        return unary(r, op, t, out, [&](Value, Value y) {
          return r.add(r.like(y, 1.0), r.square(y));
        });
      })
      .Case([&](AsinOp o) {
        return unary(r, op, t, out, [&](Value x, Value) {
          return (Value)RsqrtOp::create(b, r.loc,
                                        r.sub(r.like(x, 1.0), r.square(x)));
        });
      })
      .Case([&](AcosOp o) {
        return unary(r, op, t, out, [&](Value x, Value) {
          return r.neg(
              RsqrtOp::create(b, r.loc, r.sub(r.like(x, 1.0), r.square(x))));
        });
      })
      .Case([&](AtanOp o) {
        return unaryTangent(r, op, t, out, [&](Value tt, Value x, Value) {
          return r.div(tt, r.add(r.like(x, 1.0), r.square(x)));
        });
      })
      .Case([&](SinhOp o) {
        return unary(r, op, t, out, [&](Value x, Value) {
          return (Value)CoshOp::create(b, r.loc, x);
        });
      })
      .Case([&](CoshOp o) {
        return unary(r, op, t, out, [&](Value x, Value) {
          return (Value)SinhOp::create(b, r.loc, x);
        });
      })
      .Case([&](AsinhOp o) {
        return unary(r, op, t, out, [&](Value x, Value) {
          return (Value)RsqrtOp::create(b, r.loc,
                                        r.add(r.square(x), r.like(x, 1.0)));
        });
      })
      .Case([&](AcoshOp o) {
        return unary(r, op, t, out, [&](Value x, Value) {
          return (Value)RsqrtOp::create(b, r.loc,
                                        r.sub(r.square(x), r.like(x, 1.0)));
        });
      })
      .Case([&](AtanhOp o) {
        return unaryTangent(r, op, t, out, [&](Value tt, Value x, Value) {
          Value one = r.like(x, 1.0);
          return r.mul(r.div(one, r.add(one, x)), r.div(tt, r.sub(one, x)));
        });
      })
      .Case([&](SqrtOp o) {
        return unary(r, op, t, out,
                     [&](Value, Value y) { return r.div(r.like(y, 0.5), y); });
      })
      .Case([&](RsqrtOp o) {
        return unary(r, op, t, out, [&](Value x, Value y) {
          return r.mul(r.like(y, -0.5), r.div(y, x));
        });
      })
      .Case([&](IntegerPowOp o) -> LogicalResult {
        // JAX's rule: t * (y * x^(y-1)); zero for y = 0.
        int64_t y = o.getY();
        if (!t[0] || y == 0) {
          out.push_back(Value());
          return success();
        }
        Value x = o.getOperand();
        if (y == 1) {
          out.push_back(t[0]);
          return success();
        }
        Value pow = y - 1 == 1 ? x
                               : (Value)IntegerPowOp::create(
                                     b, r.loc, x, b.getI64IntegerAttr(y - 1));
        out.push_back(r.mul(t[0], r.mul(r.like(x, (double)y), pow)));
        return success();
      })
      .Case([&](CbrtOp o) {
        // t * (1/3 * y^-2), y^-2 = 1 / (y y).
        return unary(r, op, t, out, [&](Value, Value y) {
          return r.mul(r.like(y, 1.0 / 3.0),
                       r.div(r.like(y, 1.0), r.square(y)));
        });
      })
      .Case([&](ErfOp o) {
        return unaryTangent(r, op, t, out, [&](Value tt, Value x, Value) {
          return r.mul(r.like(x, 2.0 / std::sqrt(M_PI)),
                       r.mul(tt, ExpOp::create(b, r.loc, r.neg(r.square(x)))));
        });
      })
      .Case([&](ErfInvOp o) {
        return unary(r, op, t, out, [&](Value, Value y) {
          return r.mul(r.like(y, std::sqrt(M_PI) / 2.0),
                       ExpOp::create(b, r.loc, r.square(y)));
        });
      })
      .Case([&](DigammaOp o) {
        return unary(r, op, t, out,
                     [&](Value x, Value) { return trigamma(r, x); });
      })
      .Case([&](LgammaOp o) {
        return unary(r, op, t, out, [&](Value x, Value) {
          return (Value)DigammaOp::create(b, r.loc, x);
        });
      })
      .Case([&](BesselI0eOp o) {
        // d/dx i0e(x) = i1e(x) - sign(x) i0e(x).
        return unary(r, op, t, out, [&](Value x, Value y) {
          return r.sub(BesselI1eOp::create(b, r.loc, x),
                       r.mul(SignOp::create(b, r.loc, x), y));
        });
      })
      .Case([&](BesselI1eOp o) {
        // d/dx i1e(x) = i0e(x) - i1e(x) (sign(x) + 1/x), and 1/2 (the limit)
        // where |x| <= eps, as JAX; x is replaced there so that the unused
        // branch stays finite.
        return unary(r, op, t, out, [&](Value x, Value y) {
          auto ft = cast<FloatType>(r.ty(x).getElementType());
          Value eps =
              r.like(x, std::ldexp(1.0, 1 - (int)APFloat::semanticsPrecision(
                                                ft.getFloatSemantics())));
          Value notTiny =
              r.cmp(ComparisonDirection::GT, AbsOp::create(b, r.loc, x), eps);
          Value safe = r.select(notTiny, x, eps);
          Value d = r.sub(BesselI0eOp::create(b, r.loc, safe),
                          r.mul(y, r.add(SignOp::create(b, r.loc, safe),
                                         r.div(r.like(x, 1.0), safe))));
          return r.select(notTiny, d, r.like(x, 0.5));
        });
      })
      .Case([&](SelectOp o) -> LogicalResult {
        if (!t[1] && !t[2])
          return zero();
        return pass(r.select(o.getPred(), r.orZeros(t[1], o.getType()),
                             r.orZeros(t[2], o.getType())));
      })
      .Case([&](ClampOp o) -> LogicalResult {
        Value lo = o.getMin(), x = o.getOperand(), hi = o.getMax(), res;
        auto acc = [&](Value v) { res = res ? r.add(res, v) : v; };
        Value zeroT = r.zeros(o.getType());
        if (t[1]) {
          Value in =
              AndOp::create(b, r.loc, r.cmp(ComparisonDirection::GT, x, lo),
                            r.cmp(ComparisonDirection::LT, x, hi));
          acc(r.select(in, t[1], zeroT));
        }
        if (t[0]) {
          Value in =
              AndOp::create(b, r.loc, r.cmp(ComparisonDirection::GT, lo, x),
                            r.cmp(ComparisonDirection::LT, lo, hi));
          acc(r.select(in, t[0], zeroT));
        }
        if (t[2])
          acc(r.select(r.cmp(ComparisonDirection::LT, hi, x), t[2], zeroT));
        return pass(res);
      })
      .Case([&](ConvertOp o) -> LogicalResult {
        if (!t[0] || !isFloatLike(o.getOperand().getType()))
          return zero();
        return pass(r.convert(t[0], o.getType().getElementType()));
      })
      .Case([&](DynamicSliceOp o) -> LogicalResult {
        if (!t[0])
          return zero();
        IRMapping map;
        map.map(o.getOperand(), t[0]);
        return pass(b.clone(*op, map)->getResult(0));
      })
      .Case([&](DynamicUpdateSliceOp o) -> LogicalResult {
        if (!t[0] && !t[1])
          return zero();
        IRMapping map;
        map.map(o.getOperand(), r.orZeros(t[0], o.getOperand().getType()));
        map.map(o.getUpdate(), r.orZeros(t[1], o.getUpdate().getType()));
        return pass(b.clone(*op, map)->getResult(0));
      })
      .Case([&](ScatterOp o) -> LogicalResult {
        if (!t[0] && !t[2])
          return zero();
        ScatterKind kind = o.getKind();
        if (kind == ScatterKind::Min || kind == ScatterKind::Max) {
          if (isa<ComplexType>(o.getType().getElementType()))
            return emitUserError(o, runtime::ErrorKind::NoJvpRule)
                   << "has no JVP rule for scatter kind "
                   << stringifyScatterKind(kind) << " of complex values";
          return pass(extremalScatterTangent(r, o, t[0], t[2]));
        }
        if (kind == ScatterKind::Mul) {
          // As in JAX: only the operand's tangent (updates held constant).
          if (t[2])
            return emitUserError(o, runtime::ErrorKind::NoJvpRule)
                   << "has no JVP rule for scatter kind "
                   << stringifyScatterKind(kind)
                   << " with respect to its updates";
          return pass(r.cloneWith(op, {{0, t[0]}})->getResult(0)); // linear
        }
        if (kind != ScatterKind::Add && kind != ScatterKind::Replace)
          return emitUserError(o, runtime::ErrorKind::NoJvpRule)
                 << "has no JVP rule for scatter kind "
                 << stringifyScatterKind(kind);
        IRMapping map;
        map.map(o.getOperand(), r.orZeros(t[0], o.getOperand().getType()));
        map.map(o.getUpdates(), r.orZeros(t[2], o.getUpdates().getType()));
        return pass(b.clone(*op, map)->getResult(0));
      })
      .Case([&](DotGeneralOp o) -> LogicalResult {
        // Bilinear: lhs' . rhs + lhs . rhs' (by operand position).
        Value res;
        if (t[0])
          res = r.cloneWith(op, {{0, t[0]}})->getResult(0);
        if (t[1]) {
          Value v = r.cloneWith(op, {{1, t[1]}})->getResult(0);
          res = res ? r.add(res, v) : v;
        }
        return pass(res);
      })
      .Case([&](CholeskyOp o) -> LogicalResult {
        // L' = L phi(L^-1 A' L^-H), phi = the lower triangle with the
        // diagonal halved (Murray, arXiv:1602.07527; JAX's rule).
        if (!t[0])
          return zero();
        Value l = o.getResult();
        auto solve = [&](Value m, Value rhs) {
          return TriangularSolveOp::create(b, r.loc, rhs.getType(), m, rhs,
                                           true, false, false)
              .getResult();
        };
        // X L^H = Y  <=>  conj(L) X^T = Y^T
        Value lc = isa<ComplexType>(r.ty(l).getElementType())
                       ? (Value)ConjOp::create(b, r.loc, l)
                       : l;
        Value y = solve(l, t[0]);                               // L^-1 A'
        Value x = swapLastTwo(r, solve(lc, swapLastTwo(r, y))); // Y L^-H
        return pass(batchedMatmul(r, l, triangle(r, x, true, false, 0.5)));
      })
      .Case([&](LuOp o) -> LogicalResult {
        // P a = L U: with X = L^-1 P a' U^-1, L' = L tril(X, -1) and
        // U' = triu(X) U (JAX's rule); integer results have no tangent. For
        // an m x n a, L is completed to m x m and U to n x n with identity
        // blocks (L's strict lower part padded or cut to m columns, U's
        // upper part padded or cut to n rows).
        auto at = cast<RankedTensorType>(o.getOperand().getType());
        int64_t rank = at.getRank(), m = at.getDimSize(rank - 2),
                n = at.getDimSize(rank - 1);
        if (!t[0])
          return zero();
        Value lu = o.getLu();
        SmallVector<int64_t> keep =
            llvm::to_vector(llvm::seq<int64_t>(0, rank - 1));
        auto square = [&](int64_t size) {
          SmallVector<int64_t> s(at.getShape());
          s[rank - 2] = s[rank - 1] = size;
          return at.clone(s);
        };
        RankedTensorType mm = square(m), nn = square(n);
        Value perm =
            r.bcast(o.getPermutation(), mm.clone(r.b.getI32Type()), keep);
        // (Selects, not converts: the element type may be complex.)
        auto oneHot = [&](Value pred, RankedTensorType like) {
          return r.select(pred, r.splat(like, 1.0), r.zeros(like));
        };
        auto eyeOf = [&](RankedTensorType sq) {
          return r.cmp(ComparisonDirection::EQ, iotaLike(r, sq, rank - 2),
                       iotaLike(r, sq, rank - 1));
        };
        Value pmat = oneHot(
            r.cmp(ComparisonDirection::EQ, perm, iotaLike(r, mm, rank - 1)),
            mm);
        Value pa = batchedMatmul(r, pmat, t[0]);
        // Pads (or, negative, cuts) the trailing two dimensions at their end.
        auto padEnd = [&](Value x, int64_t rows, int64_t cols) {
          if (!rows && !cols)
            return x;
          SmallVector<int64_t> low(rank, 0), high(rank, 0);
          high[rank - 2] = rows;
          high[rank - 1] = cols;
          Value zeroScalar =
              r.zeros(RankedTensorType::get({}, at.getElementType()));
          return (Value)PadOp::create(
              b, r.loc, x, zeroScalar, b.getDenseI64ArrayAttr(low),
              b.getDenseI64ArrayAttr(high), b.getDenseI64ArrayAttr(low));
        };
        Value l = r.add(padEnd(triangle(r, lu, true, true), 0, m - n),
                        oneHot(eyeOf(mm), mm));
        Value u = padEnd(triangle(r, lu, false, false), n - m, 0);
        if (n > m) {
          Value rest = r.cmp(ComparisonDirection::GE, iotaLike(r, nn, rank - 2),
                             r.splat(nn.clone(r.b.getI32Type()), double(m)));
          u = r.add(u, oneHot(AndOp::create(b, r.loc, eyeOf(nn), rest), nn));
        }
        Value la = TriangularSolveOp::create(b, r.loc, pa.getType(), l, pa,
                                             true, false, true);
        // X U = la  <=>  U^T X^T = la^T
        Value x = swapLastTwo(r, TriangularSolveOp::create(
                                     b, r.loc, r.ty(swapLastTwo(r, la)), u,
                                     swapLastTwo(r, la), false, true, false));
        out.push_back(r.add(batchedMatmul(r, l, triangle(r, x, true, true)),
                            batchedMatmul(r, triangle(r, x, false, false), u)));
        out.push_back(Value());
        out.push_back(Value());
        return success();
      })
      .Case([&](EighOp o) -> LogicalResult {
        // a V = V diag(w): with M = V^H a' V, w' = real(diag(M)) and
        // V' = V (F o M), F_ij = 1 / (w_j - w_i) off the diagonal (JAX's
        // rule).
        if (!t[0])
          return zero();
        Value v = o.getVectors(), w = o.getValues();
        auto vt = r.ty(v);
        int64_t rank = vt.getRank();
        bool cplx = isa<ComplexType>(vt.getElementType());
        Value av = batchedMatmul(r, t[0], v);
        Value m = batchedMatmul(r, adjointOf(r, v), av);
        auto realMat = vt.clone(r.ty(w).getElementType());
        SmallVector<int64_t> rows =
            llvm::to_vector(llvm::seq<int64_t>(0, rank - 1));
        SmallVector<int64_t> cols =
            llvm::to_vector(llvm::seq<int64_t>(0, rank - 2));
        cols.push_back(rank - 1);
        Value gap = r.sub(r.bcast(w, realMat, cols), r.bcast(w, realMat, rows));
        Value eye =
            r.cmp(ComparisonDirection::EQ, iotaLike(r, realMat, rank - 2),
                  iotaLike(r, realMat, rank - 1));
        Value one = r.like(gap, 1.0);
        Value f = r.select(eye, r.zeros(realMat),
                           r.div(one, r.select(eye, one, gap)));
        if (cplx)
          f = r.convert(f, vt.getElementType());
        out.push_back(batchedMatmul(r, v, r.mul(f, m)));
        Value diag =
            r.reduceSum(r.select(eye, m, r.zeros(m.getType())), {rank - 1});
        out.push_back(cplx ? (Value)RealOp::create(b, r.loc, diag) : diag);
        return success();
      })
      .Case([&](QrOp o) -> LogicalResult {
        // a = Q R, m >= n (or the leading m x m block when m < n): with
        // Y = a' R^-1 and C = Q^H Y, Omega = tril(C, -1) - tril(C, -1)^H
        // (plus C's imaginary diagonal when complex), Q' = Q (Omega - C) + Y
        // and R' = (C - Omega) R. A wide a = [a1 a2] has R = [R1 Q^H a2]:
        // R2' = Q'^H a2 + Q^H a2' (JAX's rules).
        auto at = cast<RankedTensorType>(o.getOperand().getType());
        int64_t rank = at.getRank(), m = at.getDimSize(rank - 2),
                n = at.getDimSize(rank - 1);
        if (o.getFullMatrices() && m > n)
          return emitUserError(o, runtime::ErrorKind::NoJvpRule)
                 << "has no JVP rule for full_matrices=True with more rows "
                    "than columns";
        if (!t[0])
          return zero();
        int64_t k = std::min(m, n);
        auto cols = [&](Value v, int64_t lo, int64_t hi) {
          auto vt = r.ty(v);
          SmallVector<int64_t> start(vt.getRank(), 0), limit(vt.getShape()),
              step(vt.getRank(), 1);
          start.back() = lo;
          limit.back() = hi;
          return (Value)SliceOp::create(
              b, r.loc, v, b.getDenseI64ArrayAttr(start),
              b.getDenseI64ArrayAttr(limit), b.getDenseI64ArrayAttr(step));
        };
        Value q = o.getQ(), rr = o.getR(), dx = t[0];
        Value r1 = k < n ? cols(rr, 0, k) : rr;
        Value dx1 = k < n ? cols(dx, 0, k) : dx;
        bool cplx = isa<ComplexType>(at.getElementType());
        auto adjoint = [&](Value v) { return adjointOf(r, v); };
        // Y R1 = dx1  <=>  R1^T Y^T = dx1^T
        Value y = swapLastTwo(r, TriangularSolveOp::create(
                                     b, r.loc, r.ty(swapLastTwo(r, dx1)), r1,
                                     swapLastTwo(r, dx1), false, true, false));
        Value c = batchedMatmul(r, adjoint(q), y);
        Value low = triangle(r, c, true, true);
        Value omega = r.sub(low, adjoint(low));
        if (cplx) {
          auto ct = r.ty(c);
          Value re =
              r.convert(RealOp::create(b, r.loc, c), ct.getElementType());
          Value eye = r.cmp(ComparisonDirection::EQ, iotaLike(r, ct, rank - 2),
                            iotaLike(r, ct, rank - 1));
          omega = r.add(omega, r.select(eye, r.sub(c, re), r.zeros(ct)));
        }
        Value dq = r.add(batchedMatmul(r, q, r.sub(omega, c)), y);
        Value dr = batchedMatmul(r, r.sub(c, omega), r1);
        if (k < n) {
          Value x2 = cols(o.getOperand(), k, n), dx2 = cols(dx, k, n);
          Value dr2 = r.add(batchedMatmul(r, adjoint(dq), x2),
                            batchedMatmul(r, adjoint(q), dx2));
          dr = ConcatenateOp::create(b, r.loc, ValueRange{dr, dr2}, rank - 1);
        }
        out.push_back(dq);
        out.push_back(dr);
        return success();
      })
      .Case([&](SvdOp o) -> LogicalResult {
        // a = U diag(s) V^H (thin): with dS = U^H a' V, s' = real(diag(dS)),
        // F_ij = 1 / (s_j^2 - s_i^2) off the diagonal,
        // U' = U (F o (dS S + S dS^H) + (dS - dS^H) / 2 S^-1) and
        // V' = V (F o (S dS + dS^H S)), plus (I - U U^H) a' V S^-1 for U
        // when m > n and (I - V V^H) a'^H U S^-1 for V when n > m (JAX's
        // rule).
        auto at = cast<RankedTensorType>(o.getOperand().getType());
        int64_t rank = at.getRank(), m = at.getDimSize(rank - 2),
                n = at.getDimSize(rank - 1);
        if (o.computesUv() && o.getFullMatrices() && m != n)
          return emitUserError(o, runtime::ErrorKind::NoJvpRule)
                 << "has no JVP rule for full_matrices=True on non-square "
                    "matrices";
        if (!t[0])
          return zero();
        int64_t k = std::min(m, n);
        Type elem = at.getElementType();
        bool cplx = isa<ComplexType>(elem);
        auto adjoint = [&](Value v) { return adjointOf(r, v); };
        Value s, u, vh;
        if (o.computesUv()) {
          s = o.getS(), u = o.getU(), vh = o.getVh();
        } else {
          auto sv = SvdOp::create(
              b, r.loc,
              TypeRange{o.getS().getType(),
                        RankedTensorType::get(
                            [&] {
                              SmallVector<int64_t> sh(at.getShape());
                              sh.back() = k;
                              return sh;
                            }(),
                            elem),
                        RankedTensorType::get(
                            [&] {
                              SmallVector<int64_t> sh(at.getShape());
                              sh[rank - 2] = k;
                              return sh;
                            }(),
                            elem)},
              o.getOperand(), false);
          s = sv.getS(), u = sv.getU(), vh = sv.getVh();
        }
        Value v = adjoint(vh), da = t[0];
        Value ds = batchedMatmul(r, adjoint(u), batchedMatmul(r, da, v));
        auto kk = r.ty(ds); // (..., k, k) of elem
        auto realK = kk.clone(r.ty(s).getElementType());
        Value eye = r.cmp(ComparisonDirection::EQ, iotaLike(r, kk, rank - 2),
                          iotaLike(r, kk, rank - 1));
        Value diag = r.reduceSum(r.select(eye, ds, r.zeros(kk)), {rank - 1});
        out.push_back(cplx ? (Value)RealOp::create(b, r.loc, diag) : diag);
        if (!o.computesUv())
          return success();
        auto asElem = [&](Value x) { return r.convert(x, elem); };
        SmallVector<int64_t> batch =
            llvm::to_vector(llvm::seq<int64_t>(0, rank - 2));
        auto along = [&](Value x, RankedTensorType to, int64_t dim) {
          SmallVector<int64_t> dims(batch);
          dims.push_back(dim);
          return r.bcast(x, to.clone(r.ty(x).getElementType()), dims);
        };
        Value sj = along(s, realK, rank - 1), si = along(s, realK, rank - 2);
        Value eyeR = r.select(eye, r.like(sj, 1.0), r.zeros(realK));
        Value f = r.sub(r.div(r.like(sj, 1.0),
                              r.add(r.mul(r.add(sj, si), r.sub(sj, si)), eyeR)),
                        eyeR);
        Value zeroS =
            r.select(r.cmp(ComparisonDirection::EQ, s, r.zeros(r.ty(s))),
                     r.like(s, 1.0), r.zeros(r.ty(s)));
        Value sInv = r.sub(r.div(r.like(s, 1.0), r.add(s, zeroS)), zeroS);
        Value sInvMat =
            r.select(eye, along(sInv, realK, rank - 1), r.zeros(realK));
        Value dss = r.mul(asElem(sj), ds), sds = r.mul(asElem(si), ds);
        Value fe = asElem(f);
        Value inner =
            r.add(r.mul(fe, r.add(dss, adjoint(dss))),
                  r.mul(r.mul(r.like(ds, 0.5), r.sub(ds, adjoint(ds))),
                        asElem(sInvMat)));
        Value du = batchedMatmul(r, u, inner);
        Value dv = batchedMatmul(r, v, r.mul(fe, r.add(sds, adjoint(sds))));
        // The parts outside the span of U (V): (I - U U^H) x / s.
        auto outside = [&](Value basis, Value x) {
          Value p = r.sub(
              x, batchedMatmul(r, basis, batchedMatmul(r, adjoint(basis), x)));
          return r.div(p, asElem(along(s, r.ty(p), rank - 1)));
        };
        if (m > n)
          du = r.add(du, outside(u, batchedMatmul(r, da, v)));
        if (n > m)
          dv = r.add(dv, outside(v, batchedMatmul(r, adjoint(da), u)));
        out.push_back(du);
        out.push_back(adjoint(dv));
        return success();
      })
      .Case([&](TriangularSolveOp o) -> LogicalResult {
        // x = op(a)^-1 b: x' = op(a)^-1 (b' - op(a') x), a' restricted to
        // the triangle the op reads.
        Value res;
        if (t[1])
          res = triangularSolve(r, o, o.getA(), t[1], o.getTransposeA());
        if (t[0]) {
          Value da = triangle(r, t[0], o.getLower(), o.getUnitDiagonal());
          Value p = batchedMatmul(r, da, o.getResult(), o.getTransposeA());
          Value d = triangularSolve(r, o, o.getA(), p, o.getTransposeA());
          res = res ? r.sub(res, d) : r.neg(d);
        }
        return res ? pass(res) : zero();
      })
      .Case([&](SortOp o) -> LogicalResult {
        // Sort the tangents as payload alongside the primal operands.
        size_t n = o.getInputs().size();
        SmallVector<Value> ops(o.getInputs());
        bool any = false;
        for (size_t i = 0; i < n; ++i) {
          any |= (bool)t[i];
          ops.push_back(r.orZeros(t[i], o.getInputs()[i].getType()));
        }
        if (!any)
          return zero();
        auto s = SortOp::create(b, r.loc, ops, o.getDimension(), o.getNumKeys(),
                                true);
        for (size_t i = 0; i < n; ++i)
          out.push_back(isFloatLike(o.getInputs()[i].getType())
                            ? s.getResult(n + i)
                            : Value());
        return success();
      })
      .Case([&](ReduceWindowOp o) -> LogicalResult {
        // Decompose into one strided slice per window offset of the padded
        // operand: sum adds the tangent slices; max/min follow the first
        // extreme element; prod is init * sum_k t_k * prod_{j != k} x_j, with
        // prefix and suffix products (no division: zeros are fine). Built
        // from pad/slice/add/mul/select, which all have transpose rules, so
        // reverse mode needs nothing more.
        if (!t[0])
          return zero();
        ReduceKind kind = o.getKind();
        if (kind != ReduceKind::Sum && kind != ReduceKind::Max &&
            kind != ReduceKind::Min && kind != ReduceKind::Prod)
          return emitUserError(o, runtime::ErrorKind::NoJvpRule)
                 << "has no JVP rule for window kind "
                 << stringifyReduceKind(kind);
        auto in = o.getOperand().getType();
        auto outT = o.getType();
        if (outT.getNumElements() == 0)
          return zero(); // (no window fits: nothing depends on the operand)
        int64_t rank = in.getRank();
        auto win = o.getWindowDimensions(), strides = o.getWindowStrides();
        SmallVector<int64_t> zeros(rank, 0);
        auto scalarT = RankedTensorType::get({}, in.getElementType());
        Value init = r.reshape(o.getInitValue(), scalarT);
        Value xp = PadOp::create(b, r.loc, o.getOperand(), init,
                                 b.getDenseI64ArrayAttr(o.getPaddingLow()),
                                 b.getDenseI64ArrayAttr(o.getPaddingHigh()),
                                 b.getDenseI64ArrayAttr(zeros));
        Value tp = PadOp::create(b, r.loc, t[0], r.zeros(scalarT),
                                 b.getDenseI64ArrayAttr(o.getPaddingLow()),
                                 b.getDenseI64ArrayAttr(o.getPaddingHigh()),
                                 b.getDenseI64ArrayAttr(zeros));
        int64_t count = 1;
        for (int64_t w : win)
          count *= w;
        Value best, tan;
        SmallVector<Value> xSlices, tSlices;
        for (int64_t k = 0; k < count; ++k) {
          SmallVector<int64_t> start(rank), limit(rank);
          int64_t rest = k;
          for (int64_t d = rank - 1; d >= 0; --d) {
            start[d] = rest % win[d];
            rest /= win[d];
            int64_t n = outT.getDimSize(d);
            limit[d] = n == 0 ? start[d] : start[d] + (n - 1) * strides[d] + 1;
          }
          auto slice = [&](Value v) {
            return (Value)SliceOp::create(
                b, r.loc, v, b.getDenseI64ArrayAttr(start),
                b.getDenseI64ArrayAttr(limit), b.getDenseI64ArrayAttr(strides));
          };
          Value ts = slice(tp);
          if (kind == ReduceKind::Sum) {
            tan = tan ? r.add(tan, ts) : ts;
            continue;
          }
          Value xs = slice(xp);
          if (kind == ReduceKind::Prod) {
            xSlices.push_back(xs);
            tSlices.push_back(ts);
            continue;
          }
          if (!best) {
            best = xs;
            tan = ts;
            continue;
          }
          Value better =
              r.cmp(kind == ReduceKind::Max ? ComparisonDirection::GT
                                            : ComparisonDirection::LT,
                    xs, best);
          tan = r.select(better, ts, tan);
          best = r.select(better, xs, best);
        }
        if (kind == ReduceKind::Prod) {
          // suffix[k] = x_{k+1} * ... * x_{count-1}; prefix accumulates.
          SmallVector<Value> suffix(count);
          for (int64_t k = count - 2; k >= 0; --k)
            suffix[k] = suffix[k + 1] ? r.mul(xSlices[k + 1], suffix[k + 1])
                                      : xSlices[k + 1];
          Value prefix;
          for (int64_t k = 0; k < count; ++k) {
            Value others = prefix && suffix[k] ? r.mul(prefix, suffix[k])
                           : prefix            ? prefix
                                               : suffix[k];
            Value term = others ? r.mul(tSlices[k], others) : tSlices[k];
            tan = tan ? r.add(tan, term) : term;
            prefix = prefix ? r.mul(prefix, xSlices[k]) : xSlices[k];
          }
          if (!tan)
            return zero(); // an empty window
          tan = r.mul(tan, r.bcast(init, outT, {}));
        }
        return pass(tan);
      })
      .Case([&](HostCallbackOp o) -> LogicalResult {
        if (llvm::all_of(t, [](Value v) { return !v; }))
          return zero();
        // As in JAX (and in its words): the host function is opaque, its
        // derivative unknown; an effectful one is an io_callback.
        if (o.getHasSideEffect())
          return emitUserError(o, runtime::ErrorKind::NotDifferentiable)
                 << "IO callbacks do not support JVP.";
        return emitUserError(o, runtime::ErrorKind::NotDifferentiable)
               << ("Pure callbacks do not support JVP. Please use "
                   "`jax.custom_jvp` to use callbacks while taking gradients.");
      })
      .Default([&](Operation *o) -> LogicalResult {
        if (llvm::all_of(t, [](Value v) { return !v; }))
          return zero();
        return emitUserError(o, runtime::ErrorKind::NoJvpRule)
               << "has no JVP rule (Ember cannot differentiate it yet)";
      });
}

LogicalResult mlir::ember::buildTranspose(Operation *op, OpBuilder &b,
                                          ArrayRef<Value> ct,
                                          ArrayRef<bool> linear,
                                          SmallVectorImpl<Value> &out,
                                          RuleMode mode) {
  R r{b, op->getLoc()};
  out.assign(op->getNumOperands(), Value());
  if (mode == RuleMode::Build && llvm::all_of(ct, [](Value v) { return !v; }))
    return success();
  Value c = ct.empty() ? Value() : ct[0];
  auto needs = [&](unsigned i) { return linear[i] && c; };
  return RuleSwitch(op, mode)
      .Case([&](AddOp o) {
        if (needs(0))
          out[0] = c;
        if (needs(1))
          out[1] = c;
        return success();
      })
      .Case([&](SubOp o) {
        if (needs(0))
          out[0] = c;
        if (needs(1))
          out[1] = r.neg(c);
        return success();
      })
      .Case([&](NegOp o) {
        out[0] = r.neg(c);
        return success();
      })
      .Case([&](MulOp o) -> LogicalResult {
        if (linear[0] && linear[1])
          return o.emitOpError("is not linear in its tangent operands");
        if (linear[0])
          out[0] = r.mul(c, o.getRhs());
        if (linear[1])
          out[1] = r.mul(o.getLhs(), c);
        return success();
      })
      .Case([&](DivOp o) -> LogicalResult {
        if (linear[1])
          return o.emitOpError("is not linear in its divisor");
        out[0] = r.div(c, o.getRhs());
        return success();
      })
      .Case([&](ConvertOp o) {
        out[0] = r.convert(c, o.getOperand().getType().getElementType());
        return success();
      })
      // Complex parts, with JAX's convention (transposes, not adjoints:
      // real^T(c) = c + 0i, imag^T(c) = 0 - ci, complex^T(c) = (re c, -im c)).
      .Case([&](RealOp o) {
        out[0] = ComplexOp::create(b, r.loc, c, r.zeros(c.getType()));
        return success();
      })
      .Case([&](ImagOp o) {
        out[0] = ComplexOp::create(b, r.loc, r.zeros(c.getType()), r.neg(c));
        return success();
      })
      .Case([&](ConjOp o) {
        out[0] = ConjOp::create(b, r.loc, c);
        return success();
      })
      .Case([&](ComplexOp o) {
        if (needs(0))
          out[0] = RealOp::create(b, r.loc, c);
        if (needs(1))
          out[1] = r.neg(ImagOp::create(b, r.loc, c));
        return success();
      })
      .Case([&](SelectOp o) {
        Value z = r.zeros(o.getType());
        if (linear[1])
          out[1] = r.select(o.getPred(), c, z);
        if (linear[2])
          out[2] = r.select(o.getPred(), z, c);
        return success();
      })
      .Case([&](ReshapeOp o) {
        out[0] = r.reshape(c, o.getOperand().getType());
        return success();
      })
      .Case([&](TransposeOp o) {
        auto perm = o.getPermutation();
        SmallVector<int64_t> inv(perm.size());
        for (auto [i, p] : llvm::enumerate(perm))
          inv[p] = i;
        out[0] = TransposeOp::create(b, r.loc, c, b.getDenseI64ArrayAttr(inv));
        return success();
      })
      .Case([&](ReverseOp o) {
        out[0] = ReverseOp::create(b, r.loc, c, o.getDimensionsAttr());
        return success();
      })
      // Collectives (vmap semantics: the transpose of the linear map over
      // all lanes). An invariant psum (shard_map with check_vma) gets its
      // cotangent once, not once per lane: it only becomes varying again;
      // pvary is where a value became varying, so its cotangent is summed.
      .Case([&](PsumOp o) {
        if (o.getInvariant())
          out[0] = PvaryOp::create(b, r.loc, c, o.getAxisAttr(),
                                   o.getAxisSizeAttr());
        else
          out[0] = PsumOp::create(b, r.loc, c, o.getAxisAttr(),
                                  o.getAxisSizeAttr(), UnitAttr());
        return success();
      })
      .Case([&](PvaryOp o) {
        out[0] = PsumOp::create(b, r.loc, c, o.getAxisAttr(),
                                o.getAxisSizeAttr(), b.getUnitAttr());
        return success();
      })
      .Case([&](AllGatherOp o) {
        out[0] = ReduceScatterOp::create(
            b, r.loc, o.getOperand().getType(), c, o.getAxisAttr(),
            o.getAxisSizeAttr(), o.getDimensionAttr(), o.getTiledAttr());
        return success();
      })
      .Case([&](ReduceScatterOp o) {
        out[0] = AllGatherOp::create(b, r.loc, o.getOperand().getType(), c,
                                     o.getAxisAttr(), o.getAxisSizeAttr(),
                                     o.getDimensionAttr(), o.getTiledAttr());
        return success();
      })
      .Case([&](PpermuteOp o) {
        SmallVector<int64_t> inv(o.getPairs());
        for (size_t i = 0; i + 1 < inv.size(); i += 2)
          std::swap(inv[i], inv[i + 1]);
        out[0] = PpermuteOp::create(b, r.loc, c, o.getAxisAttr(),
                                    o.getAxisSizeAttr(),
                                    b.getDenseI64ArrayAttr(inv));
        return success();
      })
      .Case([&](AllToAllOp o) {
        out[0] = AllToAllOp::create(b, r.loc, o.getOperand().getType(), c,
                                    o.getAxisAttr(), o.getAxisSizeAttr(),
                                    o.getConcatAttr(), o.getSplitAttr(),
                                    o.getTiledAttr());
        return success();
      })
      .Case([&](BroadcastInDimOp o) {
        auto in = o.getOperand().getType();
        auto res = o.getType();
        auto dims = o.getBroadcastDimensions();
        SmallVector<int64_t> sum;
        for (int64_t d = 0; d < res.getRank(); ++d) {
          auto it = llvm::find(dims, d);
          if (it == dims.end())
            sum.push_back(d);
          else if (in.getDimSize(it - dims.begin()) == 1 &&
                   res.getDimSize(d) != 1)
            sum.push_back(d);
        }
        out[0] = r.reshape(r.reduceSum(c, sum), in);
        return success();
      })
      .Case([&](ReduceOp o) -> LogicalResult {
        if (o.getKind() != ReduceKind::Sum)
          return o.emitOpError("is not linear");
        out[0] = r.unreduce(c, o.getOperand().getType(), o.getDimensions());
        return success();
      })
      .Case([&](CumulativeOp o) -> LogicalResult {
        if (o.getKind() != ReduceKind::Sum)
          return o.emitOpError("is not linear");
        out[0] = CumulativeOp::create(b, r.loc, c, ReduceKind::Sum, o.getAxis(),
                                      !o.getReverse());
        return success();
      })
      .Case([&](SliceOp o) {
        auto in = o.getOperand().getType();
        SmallVector<int64_t> lo, hi, interior;
        for (int64_t d = 0; d < in.getRank(); ++d) {
          int64_t n = o.getType().getDimSize(d), s = o.getStrides()[d];
          int64_t start = o.getStartIndices()[d];
          int64_t end = n == 0 ? start : start + (n - 1) * s + 1;
          lo.push_back(start);
          hi.push_back(in.getDimSize(d) - end);
          interior.push_back(n == 0 ? 0 : s - 1);
        }
        Value z = r.zeros(RankedTensorType::get({}, in.getElementType()));
        out[0] = PadOp::create(b, r.loc, c, z, b.getDenseI64ArrayAttr(lo),
                               b.getDenseI64ArrayAttr(hi),
                               b.getDenseI64ArrayAttr(interior));
        return success();
      })
      .Case([&](PadOp o) {
        auto in = o.getOperand().getType();
        auto lo = o.getEdgePaddingLow(), hi = o.getEdgePaddingHigh();
        auto interior = o.getInteriorPadding();
        // Undo negative padding first (pad the cotangent with zeros), then
        // take every (interior+1)-th element from the padded region.
        SmallVector<int64_t> plo, phi, zeros(in.getRank(), 0), start, limit,
            stride;
        bool anyNeg = false;
        for (int64_t d = 0; d < in.getRank(); ++d) {
          plo.push_back(std::max<int64_t>(-lo[d], 0));
          phi.push_back(std::max<int64_t>(-hi[d], 0));
          anyNeg |= lo[d] < 0 || hi[d] < 0;
        }
        Value full = c;
        Value z = r.zeros(RankedTensorType::get({}, in.getElementType()));
        if (anyNeg)
          full = PadOp::create(b, r.loc, c, z, b.getDenseI64ArrayAttr(plo),
                               b.getDenseI64ArrayAttr(phi),
                               b.getDenseI64ArrayAttr(zeros));
        for (int64_t d = 0; d < in.getRank(); ++d) {
          int64_t n = in.getDimSize(d);
          int64_t s0 = std::max<int64_t>(lo[d], 0);
          start.push_back(s0);
          limit.push_back(n == 0 ? s0 : s0 + (n - 1) * (interior[d] + 1) + 1);
          stride.push_back(interior[d] + 1);
        }
        Value ctx = SliceOp::create(
            b, r.loc, full, b.getDenseI64ArrayAttr(start),
            b.getDenseI64ArrayAttr(limit), b.getDenseI64ArrayAttr(stride));
        if (linear[0])
          out[0] = ctx;
        if (linear[1]) {
          SmallVector<int64_t> all, allIn;
          for (int64_t d = 0; d < in.getRank(); ++d)
            all.push_back(d);
          out[1] = r.sub(r.reduceSum(c, all), r.reduceSum(ctx, all));
        }
        return success();
      })
      .Case([&](ConcatenateOp o) {
        int64_t dim = o.getDimension(), at = 0;
        auto res = o.getType();
        for (auto [i, v] : llvm::enumerate(o.getInputs())) {
          auto t = cast<RankedTensorType>(v.getType());
          SmallVector<int64_t> start(res.getRank(), 0), limit(res.getShape()),
              stride(res.getRank(), 1);
          start[dim] = at;
          limit[dim] = at + t.getDimSize(dim);
          at += t.getDimSize(dim);
          if (linear[i])
            out[i] = SliceOp::create(b, r.loc, c, b.getDenseI64ArrayAttr(start),
                                     b.getDenseI64ArrayAttr(limit),
                                     b.getDenseI64ArrayAttr(stride));
        }
        return success();
      })
      .Case([&](DynamicSliceOp o) {
        SmallVector<Value> ops = {r.zeros(o.getOperand().getType()), c};
        ops.append(o.getStartIndices().begin(), o.getStartIndices().end());
        out[0] = DynamicUpdateSliceOp::create(
            b, r.loc, o.getOperand().getType(), ops[0], c, o.getStartIndices());
        return success();
      })
      .Case([&](DynamicUpdateSliceOp o) {
        if (linear[0])
          out[0] = DynamicUpdateSliceOp::create(
              b, r.loc, o.getType(), c, r.zeros(o.getUpdate().getType()),
              o.getStartIndices());
        if (linear[1])
          out[1] = DynamicSliceOp::create(
              b, r.loc, c, o.getStartIndices(),
              b.getDenseI64ArrayAttr(o.getUpdate().getType().getShape()));
        return success();
      })
      .Case([&](GatherOp o) {
        out[0] = ScatterOp::create(
            b, r.loc, o.getOperand().getType(),
            r.zeros(o.getOperand().getType()), o.getStartIndices(), c,
            o.getOffsetDimsAttr(), o.getCollapsedSliceDimsAttr(),
            o.getOperandBatchingDimsAttr(), o.getStartIndicesBatchingDimsAttr(),
            o.getStartIndexMapAttr(), o.getIndexVectorDimAttr(),
            ScatterKindAttr::get(b.getContext(), ScatterKind::Add),
            o.getModeAttr());
        return success();
      })
      .Case([&](ScatterOp o) {
        auto upd = o.getUpdates().getType();
        if (linear[0]) {
          if (o.getKind() == ScatterKind::Add) {
            out[0] = c;
          } else if (o.getKind() == ScatterKind::Mul) {
            // Scaling by the (constant) updates is self-adjoint.
            out[0] = r.cloneWith(op, {{0, c}})->getResult(0);
          } else {
            out[0] = r.cloneWith(op, {{0, c}, {2, r.zeros(upd)}})->getResult(0);
          }
        }
        if (linear[2]) {
          // Gather back the window each update went to.
          if (o.getMode() != IndexMode::Fill) {
            out[2] = gatherWindows(r, o, c, o.getMode());
          } else {
            // A dropped (out-of-bounds) update has a zero cotangent, where
            // a fill gather reads NaN: the windows are read clamped and
            // masked by a fill gather of ones (NaN exactly where dropped).
            Value ones = r.splat(r.ty(c).clone(b.getF32Type()), 1.0);
            Value probe = gatherWindows(r, o, ones, IndexMode::Fill);
            Value read = gatherWindows(r, o, c, IndexMode::Clip);
            out[2] = r.select(r.cmp(ComparisonDirection::EQ, probe, probe),
                              read, r.zeros(read.getType()));
          }
        }
        return success();
      })
      .Case([&](DotGeneralOp o) -> LogicalResult {
        if (linear[0] && linear[1])
          return o.emitOpError("is not linear in its tangent operands");
        DotDims d(o);
        int64_t nb = d.lb.size(), nl = d.lFree.size();
        if (linear[0])
          out[0] = dotTranspose(r, c, o.getRhs(), o.getLhs().getType(), d.lb,
                                d.lc, d.lFree, d.rb, d.rc, d.rFree, nb + nl,
                                o.getPrecisionAttr());
        if (linear[1])
          out[1] = dotTranspose(r, c, o.getLhs(), o.getRhs().getType(), d.rb,
                                d.rc, d.rFree, d.lb, d.lc, d.lFree, nb,
                                o.getPrecisionAttr());
        return success();
      })
      .Case([&](FftOp o) -> LogicalResult {
        // The DFT matrix is symmetric: FFT and IFFT are their own
        // transposes. RFFT (real to the half spectrum) transposes to the
        // real part of the FFT of the cotangent zero-padded to the full
        // spectrum; IRFFT to the conjugate of the RFFT of the cotangent
        // with the frequencies that stand for two weighted twice, over
        // prod(n) (JAX's rules).
        auto inT = cast<RankedTensorType>(o.getOperand().getType());
        ArrayRef<int64_t> n = o.getFftLengths();
        int64_t rank = inT.getRank();
        auto fft = [&](Value x, StringRef kind, Type t) -> Value {
          return FftOp::create(b, r.loc, t, x, b.getStringAttr(kind),
                               o.getFftLengthsAttr());
        };
        StringRef kind = o.getFftType();
        if (kind == "FFT" || kind == "IFFT") {
          out[0] = fft(c, kind, inT);
          return success();
        }
        if (kind == "RFFT") {
          auto ctT = r.ty(c);
          SmallVector<int64_t> full(ctT.getShape());
          full.back() = n.back();
          SmallVector<int64_t> lo(rank, 0), hi(rank, 0), interior(rank, 0);
          hi.back() = n.back() - ctT.getShape().back();
          Value zero =
              r.splat(RankedTensorType::get({}, ctT.getElementType()), 0.0);
          Value padded = PadOp::create(
              b, r.loc, c, zero, b.getDenseI64ArrayAttr(lo),
              b.getDenseI64ArrayAttr(hi), b.getDenseI64ArrayAttr(interior));
          out[0] =
              RealOp::create(b, r.loc, fft(padded, "FFT", ctT.clone(full)));
          return success();
        }
        // IRFFT: the half spectrum's k = 0 (and n / 2 for even n) once,
        // the others twice.
        Value x = fft(c, "RFFT", inT);
        int64_t h = inT.getShape().back();
        Type real = cast<ComplexType>(inT.getElementType()).getElementType();
        auto realT = inT.clone(real);
        Value k = r.convert(iotaLike(r, realT, rank - 1), real);
        Value once = r.cmp(ComparisonDirection::EQ, k, r.splat(realT, 0.0));
        if (n.back() % 2 == 0)
          once = OrOp::create(
              b, r.loc, once,
              r.cmp(ComparisonDirection::EQ, k, r.splat(realT, double(h - 1))));
        double scale = 1.0;
        for (int64_t v : n)
          scale /= double(v);
        Value weight =
            r.select(once, r.splat(realT, scale), r.splat(realT, 2 * scale));
        // (Conjugated: JAX's convention for the cotangent of a complex
        // operand of a map to reals.)
        out[0] = ConjOp::create(
            b, r.loc, r.mul(x, r.convert(weight, inT.getElementType())));
        return success();
      })
      .Case([&](TriangularSolveOp o) -> LogicalResult {
        // Linear in b: b's cotangent solves the transposed system.
        if (linear[0])
          return o.emitOpError("is not linear in its matrix operand");
        if (needs(1))
          out[1] = triangularSolve(r, o, o.getA(), c, !o.getTransposeA());
        return success();
      })
      .Case([&](SortOp o) -> LogicalResult {
        // JVP sorts tangents as payload: route each cotangent back through
        // the inverse permutation (sorting by the permutation undoes it).
        size_t n = o.getInputs().size();
        Value perm;
        for (size_t i = 0; i < n; ++i) {
          if (!linear[i])
            continue;
          if ((int64_t)i < o.getNumKeys())
            return o.emitOpError("cannot transpose with respect to a sort key");
          if (!ct[i])
            continue;
          if (!perm)
            perm = sortPermutation(r, o);
          auto s = SortOp::create(b, r.loc, ValueRange{perm, ct[i]},
                                  o.getDimension(), 1, true);
          out[i] = s.getResult(1);
        }
        return success();
      })
      .Default([&](Operation *o) -> LogicalResult {
        return o->emitOpError("has no transpose rule (it is not linear)");
      });
}
