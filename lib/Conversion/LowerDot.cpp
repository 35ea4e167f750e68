//===- LowerDot.cpp - dot_general -----------------------------------------===//
//
// dot_general becomes a linalg.generic contraction or, when large enough, a
// call of the runtime's GEMM: OpenBLAS's on the CPU, cuBLAS's on the GPU
// (docs/decisions.md, "Contractions").
//
//===----------------------------------------------------------------------===//
#include "EmberToLinalgCommon.h"

#include "ember/Runtime/Runtime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"

using namespace mlir;
using namespace mlir::ember;

namespace {

/// Contractions with at least this many multiply-adds call the runtime's
/// GEMM; smaller ones stay loop nests (a call costs about a microsecond).
constexpr int64_t kGemmMinWork = 32 * 32 * 32;
constexpr int64_t kGemmMinDepth = 8;

/// Products up to this many multiply-adds run on the runtime's single-core
/// kernel (`smallGemmPreferred` in lib/Runtime/SmallGemm.cpp).
constexpr int64_t kSmallGemmWork = int64_t(1) << 21;

/// The dimensions of an operand of rank `rank` that are neither batch nor
/// contracting dimensions, in order.
SmallVector<int64_t> freeDims(int64_t rank, ArrayRef<int64_t> batch,
                              ArrayRef<int64_t> contracting) {
  SmallVector<int64_t> free;
  for (int64_t i = 0; i < rank; ++i)
    if (!llvm::is_contained(batch, i) && !llvm::is_contained(contracting, i))
      free.push_back(i);
  return free;
}

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

/// Whether the runtime's GEMM for `gemm` computes a product of `a` operands
/// into `c` elements: f32 and f64 on the CPU; on the GPU (cuBLAS) also f16
/// and bf16, into their own type or into f32 (accumulating in f32).
bool gemmTakes(GemmEntry gemm, Type a, Type c) {
  if (gemm == GemmEntry::Cpu)
    return a == c && (a.isF32() || a.isF64());
  if (gemm == GemmEntry::Cuda)
    return (a == c && (a.isF32() || a.isF64() || a.isF16() || a.isBF16())) ||
           ((a.isF16() || a.isBF16()) && c.isF32());
  return false;
}

/// The code of a float type in Runtime.def's EMBER_TYPE_CODE table.
int64_t floatTypeCode(Type t) {
  return runtime::typeCode(t.isF16()    ? "float16"
                           : t.isBF16() ? "bfloat16"
                           : t.isF32()  ? "float32"
                                        : "float64");
}

/// A large enough `dot_general` becomes a call of the runtime's batched GEMM
/// (docs/decisions.md, "Contractions"), on the CPU
///
///   ember_gemm_f32(transA, transB, batch, m, n, k, a, b, c)   (row-major)
///
/// and on the GPU, with the operands' and the result's type codes,
///
///   ember_cuda_gemm(typeAB, typeC, transA, transB, batch, m, n, k, a, b, c)
///
/// which calls cuBLAS on the device buffers (lib/Runtime/Cuda.cpp).
/// Operands whose dimensions are already in GEMM order (possibly transposed
/// as a matrix) are passed as they are; others are transposed first.
FailureOr<Value> lowerDotToGemm(DotGeneralOp op, Value lhsV, Value rhsV,
                                RankedTensorType outType, GemmEntry gemm,
                                OpBuilder &b) {
  auto lhs = op.getLhs().getType(), rhs = op.getRhs().getType();
  Type e = op.getType().getElementType();
  if (lhs.getElementType() != rhs.getElementType() ||
      !gemmTakes(gemm, lhs.getElementType(), e))
    return failure();
  bool cuda = gemm == GemmEntry::Cuda;
  auto lb = op.getLhsBatchingDimensions(), rb = op.getRhsBatchingDimensions();
  auto lc = op.getLhsContractingDimensions(),
       rc = op.getRhsContractingDimensions();
  SmallVector<int64_t> lFree = freeDims(lhs.getRank(), lb, lc),
                       rFree = freeDims(rhs.getRank(), rb, rc);
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
  Operation *loop = cuda ? nullptr : loopInvariantIn(op, rhsV);
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
  std::string entry = cuda        ? "ember_cuda_gemm"
                      : e.isF32() ? "ember_gemm_f32"
                                  : "ember_gemm_f64";
  declareRuntimeFunction(module, entry);
  int64_t typeAB = floatTypeCode(lhs.getElementType()),
          typeC = floatTypeCode(e);
  std::string name = buildBufferHelper(
      module, loc, "__ember_gemm", TypeRange{a.getType(), bm.getType()},
      TypeRange{outType},
      [&, transA = transA, transB = transB](OpBuilder &hb, ArrayRef<Value> ins,
                                            ArrayRef<Value> outs) {
        auto c = [&](int64_t v) {
          return (Value)arith::ConstantOp::create(hb, loc,
                                                  hb.getI64IntegerAttr(v));
        };
        SmallVector<Value> args;
        if (cuda)
          args = {c(typeAB), c(typeC)};
        args.append({c(transA), c(transB), c(batch), c(m), c(n), c(k), ins[0],
                     ins[1], outs[0]});
        func::CallOp::create(hb, loc, entry, TypeRange{}, args);
      },
      /*identityLayouts=*/cuda);
  return func::CallOp::create(b, loc, name, TypeRange{outType},
                              ValueRange{a, bm})
      .getResult(0);
}

struct DotGeneralLowering : public OpConversionPattern<DotGeneralOp> {
  DotGeneralLowering(const TypeConverter &converter, MLIRContext *ctx,
                     GemmEntry gemm)
      : OpConversionPattern(converter, ctx), gemm(gemm) {}
  GemmEntry gemm;
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
    if (FailureOr<Value> call =
            gemm != GemmEntry::None
                ? lowerDotToGemm(op, adaptor.getLhs(), adaptor.getRhs(), type,
                                 gemm, rewriter)
                : FailureOr<Value>(failure());
        succeeded(call)) {
      rewriter.replaceOp(op, *call);
      return success();
    }
    // Iteration order: batch, lhs free, contracting, rhs free (rhs free
    // innermost keeps the inner loop contiguous for row-major operands).
    int64_t nb = lb.size(), nc = lc.size();
    SmallVector<int64_t> lFree = freeDims(lhs.getRank(), lb, lc),
                         rFree = freeDims(rhs.getRank(), rb, rc);
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
    SmallVector<utils::IteratorType> iters = parallelIterators(total);
    for (int64_t k = 0; k < nc; ++k)
      iters[nb + nl + k] = utils::IteratorType::reduction;
    Type origOut = op.getType().getElementType();
    Type lOrig = lhs.getElementType(), rOrig = rhs.getElementType();
    // f16, bf16 and 8-bit float products accumulate in f32 and round once
    // at the end (as XLA does): summing in the narrow type loses digits with
    // every term.
    Type accOrig = origOut;
    auto outFloat = dyn_cast<FloatType>(origOut);
    if (!unitContraction && outFloat && outFloat.getWidth() <= 16)
      accOrig = rewriter.getF32Type();
    // (Unsigned types are signless once converted.)
    Type accElem = accOrig != origOut ? accOrig : type.getElementType();
    auto accType = type.clone(accElem);
    Value init =
        unitContraction
            ? emptyTensor(rewriter, loc, accType)
            : filledTensor(
                  rewriter, loc, accType,
                  constScalar(rewriter, loc,
                              combinerIdentity(rewriter, ReduceKind::Sum,
                                               accElem, accOrig)));
    auto g = linalg::GenericOp::create(
        rewriter, loc, accType, ValueRange{adaptor.getLhs(), adaptor.getRhs()},
        init, maps, iters, [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = convertScalar(b, l, args[0], lOrig, accOrig);
          Value y = convertScalar(b, l, args[1], rOrig, accOrig);
          // Float accumulations are explicit FMAs (as XLA's dot emitter
          // computes them), also where a*b+c is not contracted otherwise (a
          // transformation outside jit: Runtime.h).
          if (!unitContraction && isa<FloatType>(accOrig)) {
            linalg::YieldOp::create(
                b, l, ValueRange{math::FmaOp::create(b, l, x, y, args[2])});
            return;
          }
          Value p = buildCombiner(b, l, ReduceKind::Prod, x, y, accOrig);
          linalg::YieldOp::create(
              b, l,
              unitContraction
                  ? p
                  : buildCombiner(b, l, ReduceKind::Sum, args[2], p, accOrig));
        });
    Value result = g.getResult(0);
    if (accOrig != origOut)
      result = buildGeneric(rewriter, loc, result, type,
                            [&](OpBuilder &b, Location l, ValueRange args) {
                              return SmallVector<Value>{convertScalar(
                                  b, l, args[0], accOrig, origOut)};
                            })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::ember::populateDotLoweringPatterns(const TypeConverter &converter,
                                              RewritePatternSet &patterns,
                                              GemmEntry gemm) {
  patterns.add<DotGeneralLowering>(converter, patterns.getContext(), gemm);
}
