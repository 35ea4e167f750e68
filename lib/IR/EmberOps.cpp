//===- EmberOps.cpp - verifiers, type inference and folders ---------------===//
//
// Verifier rules carry the numbers of docs/spec.md (e.g. `slice_c2`).
//
//===----------------------------------------------------------------------===//
#include "ember/IR/EmberDialect.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::ember;

// `cond {...} do {...}` of ember.while. A value of the body (or a block
// argument of either region) can resolve a forward reference made earlier, in
// the cond region or outside the op; when parsing then fails, the regions are
// destroyed while those uses remain (an abort in MLIR's use-list checks).
// Dropping the regions' references and the uses of their values before
// failing makes that a diagnostic.
static ParseResult parseWhileRegions(OpAsmParser &parser, Region &cond,
                                     Region &body) {
  auto fail = [&]() {
    // Forward references from outside can also have been resolved to the
    // regions' block arguments and results: drop those uses as well.
    for (Region *region : {&cond, &body}) {
      region->dropAllReferences();
      region->walk([](Block *block) {
        for (BlockArgument arg : block->getArguments())
          arg.dropAllUses();
        for (Operation &op : *block)
          op.dropAllUses();
      });
    }
    return failure();
  };
  if (parser.parseKeyword("cond") || parser.parseRegion(cond))
    return fail();
  if (parser.parseKeyword("do") || parser.parseRegion(body))
    return fail();
  return success();
}

static void printWhileRegions(OpAsmPrinter &printer, Operation *, Region &cond,
                              Region &body) {
  printer << "cond ";
  printer.printRegion(cond);
  printer << " do ";
  printer.printRegion(body);
}

#define GET_OP_CLASSES
#include "ember/IR/EmberOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Checks that `dims` are distinct and in [0, rank).
static LogicalResult checkDims(std::optional<Location> loc,
                               ArrayRef<int64_t> dims, int64_t rank,
                               StringRef rule, StringRef what) {
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      return emitOptionalError(loc, rule, ": ", what, " dimension ", d,
                               " is out of range [0, ", rank, ")");
    if (!seen.insert(d).second)
      return emitOptionalError(loc, rule, ": ", what, " dimension ", d,
                               " appears twice");
  }
  return success();
}

static bool isZeroSplat(Attribute a) {
  if (!a)
    return false;
  return matchPattern(a, m_Zero()) || matchPattern(a, m_AnyZeroFloat());
}

static bool isOneSplat(Attribute a) {
  if (!a)
    return false;
  return matchPattern(a, m_One()) || matchPattern(a, m_OneFloat());
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

LogicalResult IotaOp::verify() {
  auto type = getOutput().getType();
  // iota_c1
  if (getIotaDimension() < 0 || getIotaDimension() >= type.getRank())
    return emitOpError("iota_c1: iota dimension ")
           << getIotaDimension() << " is out of range for rank "
           << type.getRank();
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult IsFiniteOp::inferReturnTypes(MLIRContext *ctx,
                                           std::optional<Location>,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto t = tensorOf(adaptor.getOperand());
  types.push_back(t.clone(IntegerType::get(ctx, 1)));
  return success();
}

static LogicalResult inferComplexPart(Value operand,
                                      SmallVectorImpl<Type> &types) {
  auto t = tensorOf(operand);
  auto c = dyn_cast<ComplexType>(t.getElementType());
  if (!c)
    return failure();
  types.push_back(t.clone(c.getElementType()));
  return success();
}

// optimization_barrier_c1: the results have the operands' types.
LogicalResult
OptimizationBarrierOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  for (Value v : adaptor.getOperands())
    types.push_back(v.getType());
  return success();
}

LogicalResult RealOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  return inferComplexPart(adaptor.getOperand(), types);
}

LogicalResult ImagOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  return inferComplexPart(adaptor.getOperand(), types);
}

LogicalResult ComplexOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto t = tensorOf(adaptor.getLhs());
  types.push_back(t.clone(ComplexType::get(t.getElementType())));
  return success();
}

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  types.push_back(tensorOf(adaptor.getLhs()).clone(IntegerType::get(ctx, 1)));
  return success();
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  if (auto inner = getOperand().getDefiningOp<NegOp>())
    return inner.getOperand();
  return {};
}

LogicalResult IntegerPowOp::verify() {
  // integer_pow_c1
  if ((int64_t)getY() < 0 && isa<IntegerType>(getElementTypeOrSelf(getType())))
    return emitOpError("integer_pow_c1: integers cannot be raised to the "
                       "negative power ")
           << (int64_t)getY();
  return success();
}

OpFoldResult IntegerPowOp::fold(FoldAdaptor) {
  if (getY() == 1)
    return getOperand();
  return {};
}

OpFoldResult NotOp::fold(FoldAdaptor) {
  if (auto inner = getOperand().getDefiningOp<NotOp>())
    return inner.getOperand();
  return {};
}

/// Whether constants of element type `elem` fold in APFloat: floats of 16
/// bits or more. (8- and 4-bit floats compute through f16 or f32 as XLA's
/// CPU code does, and APFloat aborts on results they cannot hold.)
static bool foldsAsFloat(Type elem) {
  return isa<FloatType>(elem) && elem.getIntOrFloatBitWidth() >= 16;
}

/// Folds a binary op of two constants when the element type is signless or
/// a float folded in APFloat; unsigned types are left to the lowering.
template <typename IntFn, typename FloatFn>
static Attribute foldConstants(Type type, ArrayRef<Attribute> operands,
                               IntFn intFn, FloatFn floatFn) {
  Type elem = getElementTypeOrSelf(type);
  if (elem.isSignlessInteger() && !elem.isInteger(1))
    return constFoldBinaryOp<IntegerAttr, APInt, void>(operands, intFn);
  if (foldsAsFloat(elem))
    return constFoldBinaryOp<FloatAttr, APFloat, void>(operands, floatFn);
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  Type elem = getElementTypeOrSelf(getType());
  // x + 0 -> x holds for integers; for floats only x + (-0.0) is exact, skip
  // it.
  if (isa<IntegerType>(elem) && !elem.isInteger(1) &&
      isZeroSplat(adaptor.getRhs()))
    return getLhs();
  return foldConstants(
      getType(), adaptor.getOperands(),
      [](const APInt &a, const APInt &b) { return a + b; },
      [](const APFloat &a, const APFloat &b) { return a + b; });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isZeroSplat(adaptor.getRhs()) &&
      !isa<ComplexType>(getElementTypeOrSelf(getType())))
    return getLhs();
  return foldConstants(
      getType(), adaptor.getOperands(),
      [](const APInt &a, const APInt &b) { return a - b; },
      [](const APFloat &a, const APFloat &b) { return a - b; });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  Type elem = getElementTypeOrSelf(getType());
  if (!elem.isInteger(1) && !isa<ComplexType>(elem) &&
      isOneSplat(adaptor.getRhs()))
    return getLhs();
  return foldConstants(
      getType(), adaptor.getOperands(),
      [](const APInt &a, const APInt &b) { return a * b; },
      [](const APFloat &a, const APFloat &b) { return a * b; });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  Type elem = getElementTypeOrSelf(getType());
  if (!isa<ComplexType>(elem) && isOneSplat(adaptor.getRhs()))
    return getLhs();
  if (foldsAsFloat(elem))
    return constFoldBinaryOp<FloatAttr, APFloat, void>(
        adaptor.getOperands(),
        [](const APFloat &a, const APFloat &b) { return a / b; });
  return {};
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  if (getOnTrue() == getOnFalse())
    return getOnTrue();
  auto pred = dyn_cast_if_present<DenseElementsAttr>(adaptor.getPred());
  if (pred && pred.isSplat())
    return pred.getSplatValue<bool>() ? getOnTrue() : getOnFalse();
  return {};
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return {};
}

LogicalResult BitcastConvertOp::verify() {
  auto in = getOperand().getType();
  auto out = getResult().getType();
  // bitcast_convert_c3 (before widths: complex types have none)
  if (isa<ComplexType>(in.getElementType()) ||
      isa<ComplexType>(out.getElementType()))
    return emitOpError("bitcast_convert_c3: complex element types have no "
                       "bit-level view");
  unsigned wi = in.getElementTypeBitWidth(), wo = out.getElementTypeBitWidth();
  if (wi == wo) {
    // bitcast_convert_c1
    if (in.getShape() != out.getShape())
      return emitOpError(
          "bitcast_convert_c1: operand and result shapes differ");
    return success();
  }
  // bitcast_convert_c2: a wider element splits into a trailing dimension of
  // width ratio (little-endian order); narrower elements merge the trailing
  // dimension, which must have exactly that size.
  auto wide = wi > wo ? in : out, narrow = wi > wo ? out : in;
  unsigned big = std::max(wi, wo), small = std::min(wi, wo);
  SmallVector<int64_t> expect(wide.getShape());
  expect.push_back(small ? big / small : 0);
  if (small == 0 || big % small != 0 ||
      narrow.getShape() != ArrayRef<int64_t>(expect))
    return emitOpError("bitcast_convert_c2: with element widths ")
           << wi << " and " << wo
           << ", the narrower side must have the wider side's shape "
           << "plus a trailing dimension of size " << (small ? big / small : 0);
  return success();
}

//===----------------------------------------------------------------------===//
// Structural
//===----------------------------------------------------------------------===//

LogicalResult BroadcastInDimOp::verify() {
  auto in = getOperand().getType();
  auto out = getResult().getType();
  auto dims = getBroadcastDimensions();
  // broadcast_in_dim_c1
  if (in.getElementType() != out.getElementType())
    return emitOpError("broadcast_in_dim_c1: element types differ");
  // broadcast_in_dim_c2
  if ((int64_t)dims.size() != in.getRank())
    return emitOpError("broadcast_in_dim_c2: broadcast_dimensions has ")
           << dims.size() << " entries, operand rank is " << in.getRank();
  // broadcast_in_dim_c3
  if (failed(checkDims(getLoc(), dims, out.getRank(), "broadcast_in_dim_c3",
                       "broadcast")))
    return failure();
  // broadcast_in_dim_c4
  for (auto [i, d] : llvm::enumerate(dims)) {
    int64_t s = in.getDimSize(i);
    if (s != 1 && s != out.getDimSize(d))
      return emitOpError("broadcast_in_dim_c4: operand dimension ")
             << i << " of size " << s
             << " cannot broadcast to result dimension " << d << " of size "
             << out.getDimSize(d);
  }
  return success();
}

OpFoldResult BroadcastInDimOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType() &&
      llvm::equal(getBroadcastDimensions(),
                  llvm::seq<int64_t>(0, getType().getRank())))
    return getOperand();
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getOperand()))
    return SplatElementsAttr::get(getType(), splat.getSplatValue<Attribute>());
  return {};
}

LogicalResult ReshapeOp::verify() {
  auto in = getOperand().getType();
  auto out = getResult().getType();
  // reshape_c1
  if (in.getElementType() != out.getElementType())
    return emitOpError("reshape_c1: element types differ");
  // reshape_c2
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("reshape_c2: operand has ")
           << in.getNumElements() << " elements, result has "
           << out.getNumElements();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  if (auto inner = getOperand().getDefiningOp<ReshapeOp>()) {
    getOperandMutable().assign(inner.getOperand());
    return getResult();
  }
  // A reshape of a broadcast that only inserts unit dimensions (as many
  // elements, operand dimensions in order) reshapes the broadcast's operand:
  // no copy for `vmap`'s size-1 lane dimension.
  if (auto bcast = getOperand().getDefiningOp<BroadcastInDimOp>()) {
    auto in = bcast.getOperand().getType();
    if (in.hasStaticShape() && getType().hasStaticShape() &&
        in.getNumElements() == getType().getNumElements() &&
        llvm::is_sorted(bcast.getBroadcastDimensions())) {
      getOperandMutable().assign(bcast.getOperand());
      if (getOperand().getType() == getType())
        return getOperand();
      return getResult();
    }
  }
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getOperand()))
    return dense.reshape(getType());
  return {};
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto in = tensorOf(adaptor.getOperand());
  auto perm = adaptor.getPermutation();
  // transpose_c1
  if ((int64_t)perm.size() != in.getRank())
    return emitOptionalError(loc, "transpose_c1: permutation has ", perm.size(),
                             " entries, operand rank is ", in.getRank());
  // transpose_c2
  if (failed(checkDims(loc, perm, in.getRank(), "transpose_c2", "permutation")))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(in.getDimSize(p));
  types.push_back(in.clone(shape));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  if (llvm::equal(getPermutation(), llvm::seq<int64_t>(0, getType().getRank())))
    return getOperand();
  return {};
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto in = tensorOf(adaptor.getOperand());
  auto start = adaptor.getStartIndices();
  auto limit = adaptor.getLimitIndices();
  auto strides = adaptor.getStrides();
  int64_t rank = in.getRank();
  // slice_c1
  if ((int64_t)start.size() != rank || (int64_t)limit.size() != rank ||
      (int64_t)strides.size() != rank)
    return emitOptionalError(loc, "slice_c1: start, limit and strides need ",
                             rank, " entries each");
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    // slice_c2
    if (start[i] < 0 || limit[i] > in.getDimSize(i) || start[i] > limit[i])
      return emitOptionalError(loc, "slice_c2: dimension ", i,
                               " needs 0 <= start (", start[i], ") <= limit (",
                               limit[i], ") <= size (", in.getDimSize(i), ")");
    // slice_c3
    if (strides[i] < 1)
      return emitOptionalError(loc, "slice_c3: stride ", strides[i],
                               " of dimension ", i, " must be positive");
    shape.push_back(llvm::divideCeil(limit[i] - start[i], strides[i]));
  }
  types.push_back(in.clone(shape));
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return {};
}

LogicalResult DynamicSliceOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  auto in = tensorOf(adaptor.getOperand());
  auto sizes = adaptor.getSliceSizes();
  // dynamic_slice_c1
  if ((int64_t)adaptor.getStartIndices().size() != in.getRank() ||
      (int64_t)sizes.size() != in.getRank())
    return emitOptionalError(loc, "dynamic_slice_c1: need ", in.getRank(),
                             " start indices and slice sizes");
  // dynamic_slice_c2
  for (int64_t i = 0; i < in.getRank(); ++i)
    if (sizes[i] < 0 || sizes[i] > in.getDimSize(i))
      return emitOptionalError(loc, "dynamic_slice_c2: slice size ", sizes[i],
                               " of dimension ", i,
                               " exceeds the operand size ", in.getDimSize(i));
  types.push_back(in.clone(sizes));
  return success();
}

LogicalResult DynamicUpdateSliceOp::verify() {
  auto in = getOperand().getType();
  auto upd = getUpdate().getType();
  // dynamic_update_slice_c1
  if (in.getElementType() != upd.getElementType() ||
      in.getRank() != upd.getRank())
    return emitOpError(
        "dynamic_update_slice_c1: update must have the operand's rank "
        "and element type");
  // dynamic_update_slice_c2
  if ((int64_t)getStartIndices().size() != in.getRank())
    return emitOpError("dynamic_update_slice_c2: need ")
           << in.getRank() << " start indices";
  // dynamic_update_slice_c3
  for (int64_t i = 0; i < in.getRank(); ++i)
    if (upd.getDimSize(i) > in.getDimSize(i))
      return emitOpError("dynamic_update_slice_c3: update dimension ")
             << i << " is larger than the operand";
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  auto in = tensorOf(adaptor.getOperand());
  auto pv = tensorOf(adaptor.getPaddingValue());
  // pad_c1
  if (pv.getRank() != 0 || pv.getElementType() != in.getElementType())
    return emitOptionalError(
        loc, "pad_c1: padding value must be a 0-d tensor of the "
             "operand's element type");
  auto lo = adaptor.getEdgePaddingLow();
  auto hi = adaptor.getEdgePaddingHigh();
  auto interior = adaptor.getInteriorPadding();
  int64_t rank = in.getRank();
  // pad_c2
  if ((int64_t)lo.size() != rank || (int64_t)hi.size() != rank ||
      (int64_t)interior.size() != rank)
    return emitOptionalError(loc, "pad_c2: low, high and interior need ", rank,
                             " entries each");
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    // pad_c3
    if (interior[i] < 0)
      return emitOptionalError(loc,
                               "pad_c3: interior padding must be non-negative");
    int64_t n = in.getDimSize(i);
    int64_t size =
        lo[i] + hi[i] + n + std::max<int64_t>(n - 1, 0) * interior[i];
    // pad_c4
    if (size < 0)
      return emitOptionalError(loc, "pad_c4: dimension ", i,
                               " would have size ", size);
    shape.push_back(size);
  }
  types.push_back(in.clone(shape));
  return success();
}

OpFoldResult PadOp::fold(FoldAdaptor) {
  // Only no padding at all is the identity (low 1, high -1 shifts).
  auto zero = [](int64_t v) { return v == 0; };
  if (llvm::all_of(getEdgePaddingLow(), zero) &&
      llvm::all_of(getEdgePaddingHigh(), zero) &&
      llvm::all_of(getInteriorPadding(), zero))
    return getOperand();
  return {};
}

LogicalResult ConcatenateOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  auto inputs = adaptor.getInputs();
  // concatenate_c1
  if (inputs.empty())
    return emitOptionalError(loc, "concatenate_c1: needs at least one input");
  auto first = tensorOf(inputs[0]);
  int64_t dim = adaptor.getDimension();
  // concatenate_c2
  if (dim < 0 || dim >= first.getRank())
    return emitOptionalError(loc, "concatenate_c2: dimension ", dim,
                             " out of range for rank ", first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  shape[dim] = 0;
  for (Value v : inputs) {
    auto t = tensorOf(v);
    // concatenate_c3
    if (t.getElementType() != first.getElementType() ||
        t.getRank() != first.getRank())
      return emitOptionalError(
          loc, "concatenate_c3: inputs differ in rank or element type");
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (i != dim && t.getDimSize(i) != first.getDimSize(i))
        return emitOptionalError(
            loc, "concatenate_c3: inputs differ in dimension ", i);
    shape[dim] += t.getDimSize(dim);
  }
  types.push_back(first.clone(shape));
  return success();
}

OpFoldResult ConcatenateOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs()[0];
  return {};
}

LogicalResult ReverseOp::verify() {
  // reverse_c1
  return checkDims(getLoc(), getDimensions(), getType().getRank(), "reverse_c1",
                   "reverse");
}

OpFoldResult ReverseOp::fold(FoldAdaptor) {
  if (llvm::all_of(getDimensions(),
                   [&](int64_t d) { return getType().getDimSize(d) <= 1; }))
    return getOperand();
  return {};
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {
/// A reduction over dimensions of size 1 combines one element: a reshape
/// (ember-batch makes these from collectives over one lane).
struct ReduceUnitDims : public OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op,
                                PatternRewriter &rewriter) const override {
    auto in = op.getOperand().getType();
    if (!llvm::all_of(op.getDimensions(),
                      [&](int64_t d) { return in.getDimSize(d) == 1; }))
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getOperand());
    return success();
  }
};
} // namespace

void ReduceOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add<ReduceUnitDims>(context);
}

static LogicalResult checkKindForType(std::optional<Location> loc,
                                      ReduceKind kind, Type elem,
                                      StringRef rule) {
  bool isBitwise = kind == ReduceKind::And || kind == ReduceKind::Or ||
                   kind == ReduceKind::Xor;
  if (isBitwise && !isa<IntegerType>(elem))
    return emitOptionalError(loc, rule, ": kind ", stringifyReduceKind(kind),
                             " needs an integer or boolean element type");
  if ((kind == ReduceKind::Max || kind == ReduceKind::Min) &&
      isa<ComplexType>(elem))
    return emitOptionalError(loc, rule, ": kind ", stringifyReduceKind(kind),
                             " is not defined for complex elements");
  return success();
}

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto in = tensorOf(adaptor.getOperand());
  auto dims = adaptor.getDimensions();
  // reduce_c1
  if (failed(checkDims(loc, dims, in.getRank(), "reduce_c1", "reduced")))
    return failure();
  // reduce_c2
  if (failed(checkKindForType(loc, adaptor.getKind(), in.getElementType(),
                              "reduce_c2")))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < in.getRank(); ++i)
    if (!llvm::is_contained(dims, i))
      shape.push_back(in.getDimSize(i));
  types.push_back(in.clone(shape));
  return success();
}

static LogicalResult verifyArgReduce(Operation *op, RankedTensorType in,
                                     RankedTensorType out, int64_t axis) {
  StringRef name = op->getName().stripDialect();
  // argmax_c1 / argmin_c1
  if (axis < 0 || axis >= in.getRank())
    return op->emitOpError() << name << "_c1: axis " << axis
                             << " out of range for rank " << in.getRank();
  SmallVector<int64_t> shape(in.getShape());
  shape.erase(shape.begin() + axis);
  // argmax_c2 / argmin_c2
  if (out.getShape() != ArrayRef<int64_t>(shape))
    return op->emitOpError() << name << "_c2: result shape must drop the axis";
  return success();
}

LogicalResult ArgMaxOp::verify() {
  return verifyArgReduce(*this, getOperand().getType(), getResult().getType(),
                         getAxis());
}

LogicalResult ArgMinOp::verify() {
  return verifyArgReduce(*this, getOperand().getType(), getResult().getType(),
                         getAxis());
}

LogicalResult CumulativeOp::verify() {
  // cumulative_c1
  if (getAxis() < 0 || getAxis() >= getType().getRank())
    return emitOpError("cumulative_c1: axis ")
           << getAxis() << " out of range for rank " << getType().getRank();
  // cumulative_c2
  ReduceKind k = getKind();
  if (k != ReduceKind::Sum && k != ReduceKind::Prod && k != ReduceKind::Max &&
      k != ReduceKind::Min)
    return emitOpError("cumulative_c2: kind must be sum, prod, max or min");
  return checkKindForType(getLoc(), k, getType().getElementType(),
                          "cumulative_c2");
}

LogicalResult ReduceWindowOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &types) {
  auto in = tensorOf(adaptor.getOperand());
  auto init = tensorOf(adaptor.getInitValue());
  int64_t rank = in.getRank();
  // reduce_window_c1
  if (init.getRank() != 0 || init.getElementType() != in.getElementType())
    return emitOptionalError(
        loc, "reduce_window_c1: init value must be a 0-d tensor of "
             "the operand's element type");
  auto win = adaptor.getWindowDimensions();
  auto strides = adaptor.getWindowStrides();
  auto lo = adaptor.getPaddingLow();
  auto hi = adaptor.getPaddingHigh();
  // reduce_window_c2
  if ((int64_t)win.size() != rank || (int64_t)strides.size() != rank ||
      (int64_t)lo.size() != rank || (int64_t)hi.size() != rank)
    return emitOptionalError(
        loc, "reduce_window_c2: window, strides and padding need ", rank,
        " entries each");
  // reduce_window_c3
  if (failed(checkKindForType(loc, adaptor.getKind(), in.getElementType(),
                              "reduce_window_c3")))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    // reduce_window_c4
    if (win[i] < 1 || strides[i] < 1 || lo[i] < 0 || hi[i] < 0)
      return emitOptionalError(
          loc, "reduce_window_c4: window sizes and strides must be "
               "positive, padding non-negative");
    int64_t padded = in.getDimSize(i) + lo[i] + hi[i];
    shape.push_back(padded < win[i] ? 0 : (padded - win[i]) / strides[i] + 1);
  }
  types.push_back(in.clone(shape));
  return success();
}

LogicalResult SortOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  for (Value v : adaptor.getInputs())
    types.push_back(v.getType());
  return success();
}

LogicalResult SortOp::verify() {
  // sort_c1
  if (getInputs().empty())
    return emitOpError("sort_c1: needs at least one input");
  auto first = cast<RankedTensorType>(getInputs()[0].getType());
  // sort_c2
  for (Value v : getInputs())
    if (cast<RankedTensorType>(v.getType()).getShape() != first.getShape())
      return emitOpError("sort_c2: all inputs must have the same shape");
  // sort_c3
  if (getDimension() < 0 || getDimension() >= first.getRank())
    return emitOpError("sort_c3: dimension ")
           << getDimension() << " out of range for rank " << first.getRank();
  // sort_c4
  if (getNumKeys() < 1 || getNumKeys() > (int64_t)getInputs().size())
    return emitOpError("sort_c4: num_keys must be in [1, number of inputs]");
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

/// f32, f64 or complex of them (the element types the runtime's LAPACK
/// calls take).
static bool isLapackElement(Type t) {
  if (auto c = dyn_cast<ComplexType>(t))
    t = c.getElementType();
  return t.isF32() || t.isF64();
}

/// The two rules every linear algebra op has: `shapeRule` (square trailing
/// matrices, or any matrices unless `square`) and `elementRule` (a LAPACK
/// element type), for the operand `what` of type `t`.
static LogicalResult verifyMatrices(Operation *op, RankedTensorType t,
                                    StringRef what, bool square,
                                    StringRef shapeRule,
                                    StringRef elementRule) {
  int64_t r = t.getRank();
  if (r < 2 || (square && t.getDimSize(r - 1) != t.getDimSize(r - 2)))
    return op->emitOpError(shapeRule)
           << ": " << what << " must be (a batch of) "
           << (square ? "square " : "") << "matrices, got " << t;
  if (!isLapackElement(t.getElementType()))
    return op->emitOpError(elementRule)
           << ": element type must be f32, f64 or complex of them, got "
           << t.getElementType();
  return success();
}

LogicalResult CholeskyOp::verify() {
  return verifyMatrices(*this, cast<RankedTensorType>(getOperand().getType()),
                        "the operand", true, "cholesky_c1", "cholesky_c2");
}

LogicalResult LuOp::verify() {
  auto t = cast<RankedTensorType>(getOperand().getType());
  int64_t r = t.getRank();
  if (failed(verifyMatrices(*this, t, "the operand", false, "lu_c1", "lu_c2")))
    return failure();
  // lu_c3
  int64_t m = t.getDimSize(r - 2), k = std::min(m, t.getDimSize(r - 1));
  auto batchOf = [&](int64_t last) {
    SmallVector<int64_t> s(t.getShape().drop_back(2));
    s.push_back(last);
    return RankedTensorType::get(s, IntegerType::get(getContext(), 32));
  };
  if (getLu().getType() != t || getPivots().getType() != batchOf(k) ||
      getPermutation().getType() != batchOf(m))
    return emitOpError("lu_c3: results must be the operand's type, ")
           << batchOf(k) << " and " << batchOf(m);
  return success();
}

LogicalResult EighOp::verify() {
  auto t = cast<RankedTensorType>(getOperand().getType());
  if (failed(
          verifyMatrices(*this, t, "the operand", true, "eigh_c1", "eigh_c2")))
    return failure();
  // eigh_c3
  Type real = t.getElementType();
  if (auto c = dyn_cast<ComplexType>(real))
    real = c.getElementType();
  auto values = RankedTensorType::get(t.getShape().drop_back(), real);
  if (getVectors().getType() != t || getValues().getType() != values)
    return emitOpError("eigh_c3: results must be the operand's type and ")
           << values;
  return success();
}

/// A matrix type with `t`'s batch dimensions and element type.
static RankedTensorType matrixLike(RankedTensorType t, int64_t rows,
                                   int64_t cols, Type element = {}) {
  SmallVector<int64_t> s(t.getShape().drop_back(2));
  s.push_back(rows);
  if (cols >= 0)
    s.push_back(cols);
  return RankedTensorType::get(s, element ? element : t.getElementType());
}

LogicalResult QrOp::verify() {
  auto t = cast<RankedTensorType>(getOperand().getType());
  if (failed(verifyMatrices(*this, t, "the operand", false, "qr_c1", "qr_c2")))
    return failure();
  // qr_c3
  int64_t r = t.getRank(), m = t.getDimSize(r - 2), n = t.getDimSize(r - 1);
  int64_t c = getFullMatrices() ? m : std::min(m, n);
  auto q = matrixLike(t, m, c), rt = matrixLike(t, c, n);
  if (getQ().getType() != q || getR().getType() != rt)
    return emitOpError("qr_c3: results must be ") << q << " and " << rt;
  return success();
}

LogicalResult SvdOp::verify() {
  auto t = cast<RankedTensorType>(getOperand().getType());
  if (failed(
          verifyMatrices(*this, t, "the operand", false, "svd_c1", "svd_c2")))
    return failure();
  // svd_c3
  if (getNumResults() != 1 && getNumResults() != 3)
    return emitOpError("svd_c3: expected 1 result (s) or 3 (s, u, vh), got ")
           << getNumResults();
  // svd_c4
  int64_t r = t.getRank(), m = t.getDimSize(r - 2), n = t.getDimSize(r - 1);
  int64_t k = std::min(m, n);
  Type real = t.getElementType();
  if (auto c = dyn_cast<ComplexType>(real))
    real = c.getElementType();
  bool full = getFullMatrices();
  auto s = matrixLike(t, k, -1, real), u = matrixLike(t, m, full ? m : k),
       vh = matrixLike(t, full ? n : k, n);
  if (!computesUv() && getS().getType() != s)
    return emitOpError("svd_c4: the result must be ") << s;
  if (computesUv() && (getS().getType() != s || getU().getType() != u ||
                       getVh().getType() != vh))
    return emitOpError("svd_c4: results must be ")
           << s << ", " << u << " and " << vh;
  return success();
}

LogicalResult FftOp::verify() {
  auto in = cast<RankedTensorType>(getOperand().getType());
  auto out = cast<RankedTensorType>(getType());
  StringRef kind = getFftType();
  // fft_c1
  if (kind != "FFT" && kind != "IFFT" && kind != "RFFT" && kind != "IRFFT")
    return emitOpError("fft_c1: fft_type must be FFT, IFFT, RFFT or IRFFT, "
                       "got ")
           << kind;
  ArrayRef<int64_t> n = getFftLengths();
  // fft_c2
  if (n.empty() || n.size() > 3 || int64_t(n.size()) > in.getRank())
    return emitOpError("fft_c2: fft_lengths must have 1 to 3 entries, at "
                       "most the operand's rank");
  if (llvm::any_of(n, [](int64_t v) { return v < 0; }))
    return emitOpError("fft_c2: fft_lengths must not be negative");
  // fft_c3: element types. FFT and IFFT complex to the same, RFFT real to
  // complex, IRFFT complex to real, of 32 or 64 bits.
  auto isC = [](Type t) { return isa<ComplexType>(t); };
  Type inE = in.getElementType(), outE = out.getElementType();
  Type inReal = isC(inE) ? cast<ComplexType>(inE).getElementType() : inE;
  Type outReal = isC(outE) ? cast<ComplexType>(outE).getElementType() : outE;
  bool wantInC = kind != "RFFT", wantOutC = kind != "IRFFT";
  if (isC(inE) != wantInC || isC(outE) != wantOutC || inReal != outReal ||
      !(inReal.isF32() || inReal.isF64()))
    return emitOpError("fft_c3: ")
           << kind << " takes a " << (wantInC ? "complex" : "real")
           << " operand to a " << (wantOutC ? "complex" : "real")
           << " result of the same precision (32 or 64 bits), got " << inE
           << " to " << outE;
  // fft_c4: shapes. The batch dimensions pass through; the trailing ones
  // are fft_lengths, the last halved (n // 2 + 1) on the complex side of
  // RFFT and IRFFT.
  int64_t k = n.size(), rank = in.getRank();
  SmallVector<int64_t> trailing(n);
  SmallVector<int64_t> half(n);
  half.back() = n.back() / 2 + 1;
  ArrayRef<int64_t> wantIn = kind == "IRFFT" ? half : trailing;
  ArrayRef<int64_t> wantOut = kind == "RFFT" ? half : trailing;
  auto list = [](ArrayRef<int64_t> v) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "[";
    llvm::interleaveComma(v, os);
    os << "]";
    return text;
  };
  if (out.getRank() != rank ||
      in.getShape().drop_back(k) != out.getShape().drop_back(k) ||
      in.getShape().take_back(k) != wantIn ||
      out.getShape().take_back(k) != wantOut)
    return emitOpError("fft_c4: the operand's and result's trailing "
                       "dimensions must be ")
           << list(wantIn) << " and " << list(wantOut)
           << " and their leading ones equal";
  return success();
}

LogicalResult TriangularSolveOp::verify() {
  auto a = cast<RankedTensorType>(getA().getType());
  auto b = cast<RankedTensorType>(getB().getType());
  int64_t r = a.getRank();
  if (failed(verifyMatrices(*this, a, "a", true, "triangular_solve_c1",
                            "triangular_solve_c4")))
    return failure();
  // triangular_solve_c2
  if (b.getRank() != r ||
      a.getShape().drop_back(2) != b.getShape().drop_back(2) ||
      b.getDimSize(r - 2) != a.getDimSize(r - 1))
    return emitOpError("triangular_solve_c2: b must be (..., n, k) with a's "
                       "batch dimensions and n, got ")
           << b << " for a of type " << a;
  // triangular_solve_c3
  if (a.getElementType() != b.getElementType() || getType() != b)
    return emitOpError("triangular_solve_c3: a, b and the result must have "
                       "one element type and the result b's type");
  return success();
}

//===----------------------------------------------------------------------===//
// Contraction, gather and scatter
//===----------------------------------------------------------------------===//

namespace {
/// dot_general of a transposed operand reads the operand itself, its
/// batching and contracting dimensions mapped through the permutation (as
/// XLA's algebraic simplifier does), when the permutation keeps the free
/// dimensions in order (so the result's dimension order is unchanged). GEMM
/// calls then take a transposed matrix as a flag instead of a copy.
struct FoldTransposeIntoDot : public OpRewritePattern<DotGeneralOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DotGeneralOp op,
                                PatternRewriter &rewriter) const override {
    Value operands[2] = {op.getLhs(), op.getRhs()};
    SmallVector<int64_t> batch[2] = {
        llvm::to_vector(op.getLhsBatchingDimensions()),
        llvm::to_vector(op.getRhsBatchingDimensions())};
    SmallVector<int64_t> contract[2] = {
        llvm::to_vector(op.getLhsContractingDimensions()),
        llvm::to_vector(op.getRhsContractingDimensions())};
    bool changed = false;
    for (int side = 0; side < 2; ++side) {
      auto t = operands[side].getDefiningOp<TransposeOp>();
      if (!t)
        continue;
      ArrayRef<int64_t> perm = t.getPermutation();
      // The free dimensions of the transposed value, in order, must map to
      // increasing dimensions of its operand.
      int64_t last = -1;
      bool ordered = true;
      for (int64_t d = 0; d < (int64_t)perm.size(); ++d) {
        if (llvm::is_contained(batch[side], d) ||
            llvm::is_contained(contract[side], d))
          continue;
        ordered &= perm[d] > last;
        last = perm[d];
      }
      if (!ordered)
        continue;
      for (int64_t &d : batch[side])
        d = perm[d];
      for (int64_t &d : contract[side])
        d = perm[d];
      operands[side] = t.getOperand();
      changed = true;
    }
    if (!changed)
      return failure();
    rewriter.replaceOpWithNewOp<DotGeneralOp>(
        op, op.getType(), operands[0], operands[1], batch[0], batch[1],
        contract[0], contract[1], op.getPrecisionAttr());
    return success();
  }
};
} // namespace

void DotGeneralOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                               MLIRContext *context) {
  results.add<FoldTransposeIntoDot>(context);
}

LogicalResult DotGeneralOp::verify() {
  auto lhs = getLhs().getType();
  auto rhs = getRhs().getType();
  auto lb = getLhsBatchingDimensions(), rb = getRhsBatchingDimensions();
  auto lc = getLhsContractingDimensions(), rc = getRhsContractingDimensions();
  // dot_general_c1
  if (lb.size() != rb.size())
    return emitOpError(
        "dot_general_c1: lhs and rhs batching dimensions differ in number");
  // dot_general_c2
  if (lc.size() != rc.size())
    return emitOpError(
        "dot_general_c2: lhs and rhs contracting dimensions differ in number");
  // dot_general_c3
  SmallVector<int64_t> lAll(lb), rAll(rb);
  lAll.append(lc.begin(), lc.end());
  rAll.append(rc.begin(), rc.end());
  if (failed(
          checkDims(getLoc(), lAll, lhs.getRank(), "dot_general_c3", "lhs")) ||
      failed(checkDims(getLoc(), rAll, rhs.getRank(), "dot_general_c3", "rhs")))
    return failure();
  // dot_general_c4
  for (auto [l, r] : llvm::zip(lb, rb))
    if (lhs.getDimSize(l) != rhs.getDimSize(r))
      return emitOpError("dot_general_c4: batch dimension sizes differ (")
             << lhs.getDimSize(l) << " vs " << rhs.getDimSize(r) << ")";
  // dot_general_c5
  for (auto [l, r] : llvm::zip(lc, rc))
    if (lhs.getDimSize(l) != rhs.getDimSize(r))
      return emitOpError("dot_general_c5: contracting dimension sizes differ (")
             << lhs.getDimSize(l) << " vs " << rhs.getDimSize(r) << ")";
  SmallVector<int64_t> shape;
  for (int64_t d : lb)
    shape.push_back(lhs.getDimSize(d));
  for (int64_t i = 0; i < lhs.getRank(); ++i)
    if (!llvm::is_contained(lAll, i))
      shape.push_back(lhs.getDimSize(i));
  for (int64_t i = 0; i < rhs.getRank(); ++i)
    if (!llvm::is_contained(rAll, i))
      shape.push_back(rhs.getDimSize(i));
  // dot_general_c6
  if (getType().getShape() != ArrayRef<int64_t>(shape))
    return emitOpError(
        "dot_general_c6: result shape must be batch, lhs free, rhs free");
  // dot_general_c7
  if (auto p = getPrecision()) {
    static const llvm::StringSet<> presets = {
        "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM",
        "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM",
        "F16_F16_F16",       "F16_F16_F32",
        "BF16_BF16_BF16",    "BF16_BF16_F32",
        "BF16_BF16_F32_X3",  "BF16_BF16_F32_X6",
        "BF16_BF16_F32_X9",  "TF32_TF32_F32",
        "TF32_TF32_F32_X3",  "F32_F32_F32",
        "F64_F64_F64"};
    bool ok = p->size() == 2;
    for (Attribute a : *p) {
      StringRef v = cast<StringAttr>(a).getValue();
      ok &= v == "DEFAULT" || v == "HIGH" || v == "HIGHEST";
    }
    if (p->size() == 1)
      ok = presets.contains(cast<StringAttr>((*p)[0]).getValue());
    if (!ok)
      return emitOpError("dot_general_c7: precision names two of DEFAULT, "
                         "HIGH and HIGHEST (lhs, rhs), or one algorithm "
                         "preset (JAX's DotAlgorithmPreset but DEFAULT)");
  }
  return success();
}

LogicalResult GatherOp::verify() {
  auto operand = getOperand().getType();
  auto indices = getStartIndices().getType();
  auto result = getResult().getType();
  int64_t ivd = getIndexVectorDim();
  // gather_c1
  if (ivd < 0 || ivd > indices.getRank())
    return emitOpError("gather_c1: index_vector_dim out of range");
  int64_t indexVectorSize =
      ivd == indices.getRank() ? 1 : indices.getDimSize(ivd);
  // gather_c2
  if ((int64_t)getStartIndexMap().size() != indexVectorSize)
    return emitOpError("gather_c2: start_index_map has ")
           << getStartIndexMap().size() << " entries, the index vector has "
           << indexVectorSize;
  // gather_c3
  auto sizes = getSliceSizes();
  if ((int64_t)sizes.size() != operand.getRank())
    return emitOpError(
        "gather_c3: slice_sizes needs one entry per operand dimension");
  for (int64_t i = 0; i < operand.getRank(); ++i)
    if (sizes[i] < 0 || sizes[i] > operand.getDimSize(i))
      return emitOpError("gather_c3: slice size ")
             << sizes[i] << " of dimension " << i << " is out of bounds";
  // gather_c4
  if (failed(checkDims(getLoc(), getStartIndexMap(), operand.getRank(),
                       "gather_c4", "start_index_map")))
    return failure();
  SmallVector<int64_t> removed(getCollapsedSliceDims());
  removed.append(getOperandBatchingDims().begin(),
                 getOperandBatchingDims().end());
  // gather_c5
  if (failed(checkDims(getLoc(), removed, operand.getRank(), "gather_c5",
                       "collapsed or batching")))
    return failure();
  for (int64_t d : removed)
    if (sizes[d] > 1)
      return emitOpError("gather_c5: collapsed dimension ")
             << d << " must have slice size 0 or 1";
  // gather_c6
  if (getOperandBatchingDims().size() != getStartIndicesBatchingDims().size())
    return emitOpError(
        "gather_c6: operand and indices batching dims differ in number");
  SmallVector<int64_t> batchShape;
  for (int64_t i = 0; i < indices.getRank(); ++i)
    if (i != ivd)
      batchShape.push_back(indices.getDimSize(i));
  SmallVector<int64_t> offsetSizes;
  for (int64_t i = 0; i < operand.getRank(); ++i)
    if (!llvm::is_contained(removed, i))
      offsetSizes.push_back(sizes[i]);
  auto offsetDims = getOffsetDims();
  // gather_c7
  int64_t rank = (int64_t)batchShape.size() + (int64_t)offsetDims.size();
  if (offsetDims.size() != offsetSizes.size() || result.getRank() != rank)
    return emitOpError(
        "gather_c7: offset_dims must name one result dimension per "
        "non-collapsed slice dimension");
  if (failed(checkDims(getLoc(), offsetDims, rank, "gather_c7", "offset")))
    return failure();
  SmallVector<int64_t> shape;
  unsigned b = 0, o = 0;
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(llvm::is_contained(offsetDims, i) ? offsetSizes[o++]
                                                      : batchShape[b++]);
  // gather_c8
  if (result.getShape() != ArrayRef<int64_t>(shape) ||
      result.getElementType() != operand.getElementType())
    return emitOpError(
        "gather_c8: result type does not match the gather shape");
  return success();
}

LogicalResult ScatterOp::verify() {
  auto operand = getOperand().getType();
  auto indices = getScatterIndices().getType();
  auto updates = getUpdates().getType();
  int64_t ivd = getIndexVectorDim();
  // scatter_c1
  if (ivd < 0 || ivd > indices.getRank())
    return emitOpError("scatter_c1: index_vector_dim out of range");
  int64_t indexVectorSize =
      ivd == indices.getRank() ? 1 : indices.getDimSize(ivd);
  // scatter_c2
  if ((int64_t)getScatterDimsToOperandDims().size() != indexVectorSize)
    return emitOpError("scatter_c2: scatter_dims_to_operand_dims has ")
           << getScatterDimsToOperandDims().size()
           << " entries, the index vector has " << indexVectorSize;
  // scatter_c3
  int64_t windowRank = getUpdateWindowDims().size() +
                       getInsertedWindowDims().size() +
                       getOperandBatchingDims().size();
  if (windowRank != operand.getRank())
    return emitOpError(
        "scatter_c3: update_window_dims, inserted_window_dims and "
        "operand_batching_dims must cover the operand rank");
  // scatter_c4
  int64_t scatterRank = indices.getRank() - (ivd < indices.getRank() ? 1 : 0);
  if (updates.getRank() != scatterRank + (int64_t)getUpdateWindowDims().size())
    return emitOpError(
        "scatter_c4: updates rank must be the scatter rank plus the "
        "number of update_window_dims");
  // scatter_c5
  if (updates.getElementType() != operand.getElementType())
    return emitOpError("scatter_c5: updates and operand element types differ");
  if (failed(checkDims(getLoc(), getUpdateWindowDims(), updates.getRank(),
                       "scatter_c6", "update window")) ||
      failed(checkDims(getLoc(), getScatterDimsToOperandDims(),
                       operand.getRank(), "scatter_c6",
                       "scatter_dims_to_operand_dims")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Transformation ops
//===----------------------------------------------------------------------===//

static LogicalResult verifyRefPlacement(Operation *op, Value ref, bool writes);

// ref_c6: a transformation op passing refs to its function stands where the
// ref ops may (ref_c2: it reads and writes them), and passes each ref once
// (its function would see one buffer as two refs).
static LogicalResult verifyPassedRefs(Operation *op, ValueRange operands) {
  llvm::SmallPtrSet<void *, 4> seen;
  for (Value v : operands) {
    if (!isa<RefType>(v.getType()))
      continue;
    if (!seen.insert(v.getAsOpaquePointer()).second)
      return op->emitOpError("ref_c6: a ref is passed more than once");
    if (failed(verifyRefPlacement(op, v, /*writes=*/true)))
      return failure();
  }
  return success();
}

static LogicalResult verifyTransform(Operation *op, StringRef callee,
                                     ValueRange primals, ValueRange extra,
                                     ArrayRef<int64_t> wrt, TypeRange results,
                                     bool forward,
                                     SymbolTableCollection &symbols) {
  auto fn = symbols.lookupNearestSymbolFrom<func::FuncOp>(
      op, StringAttr::get(op->getContext(), callee));
  // transform_c1
  if (!fn)
    return op->emitOpError("transform_c1: '")
           << callee << "' does not name a func.func";
  FunctionType ft = fn.getFunctionType();
  // transform_c2
  if (TypeRange(primals) != ft.getInputs())
    return op->emitOpError(
               "transform_c2: primal types do not match the inputs of '")
           << callee << "'";
  // transform_c3
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t i : wrt)
    if (i < 0 || i >= (int64_t)ft.getNumInputs() || !seen.insert(i).second)
      return op->emitOpError("transform_c3: wrt index ")
             << i << " is invalid or repeated";
  // transform_c7
  for (int64_t i : wrt)
    if (isa<RefType>(ft.getInput(i)))
      return op->emitOpError("transform_c7: wrt index ")
             << i << " names a ref argument (refs are not differentiated)";
  if (failed(verifyPassedRefs(op, primals)))
    return failure();
  // transform_c4
  SmallVector<Type> expectExtra, expectResults(ft.getResults());
  for (int64_t i : wrt)
    (forward ? expectExtra : expectResults).push_back(ft.getInput(i));
  if (forward)
    expectResults.append(ft.getResults().begin(), ft.getResults().end());
  else
    expectExtra.assign(ft.getResults().begin(), ft.getResults().end());
  if (TypeRange(extra) != TypeRange(expectExtra))
    return op->emitOpError("transform_c4: ")
           << (forward
                   ? "tangents must match the types of the wrt inputs"
                   : "cotangents must match the result types of the callee");
  // transform_c5
  if (results != TypeRange(expectResults))
    return op->emitOpError("transform_c5: result types must be the callee's "
                           "results followed by ")
           << (forward ? "their tangents" : "the cotangents of the wrt inputs");
  return success();
}

LogicalResult JvpOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyTransform(*this, getCallee(), getPrimals(), getTangents(),
                         getWrt(), getResultTypes(), /*forward=*/true, symbols);
}

LogicalResult VjpOp::verifySymbolUses(SymbolTableCollection &symbols) {
  // transform_c6
  int64_t effects = getEffects().value_or(0);
  if (effects < 0 || effects > (int64_t)getNumResults())
    return emitOpError("transform_c6: effects must be non-negative and at "
                       "most the number of results");
  return verifyTransform(*this, getCallee(), getPrimals(), getCotangents(),
                         getWrt(),
                         TypeRange(getResultTypes()).drop_back(effects),
                         /*forward=*/false, symbols);
}

LogicalResult JvpOp::verify() { return success(); }
LogicalResult VjpOp::verify() { return success(); }

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// collective_c1: the axis has a name and at least one lane.
static LogicalResult verifyAxis(Operation *op, StringRef axis, int64_t size) {
  if (axis.empty())
    return op->emitOpError("collective_c1: the axis name is empty");
  if (size < 1)
    return op->emitOpError("collective_c1: the axis size must be at least "
                           "1, got ")
           << size;
  return success();
}

LogicalResult PsumOp::verify() {
  return verifyAxis(*this, getAxis(), getAxisSize());
}
LogicalResult PmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getAxisSize());
}
LogicalResult PminOp::verify() {
  return verifyAxis(*this, getAxis(), getAxisSize());
}
LogicalResult PvaryOp::verify() {
  return verifyAxis(*this, getAxis(), getAxisSize());
}
LogicalResult AxisIndexOp::verify() {
  if (failed(verifyAxis(*this, getAxis(), getAxisSize())))
    return failure();
  // axis_index_c1
  if (getType().getRank() != 0)
    return emitOpError("axis_index_c1: the result is a 0-d tensor<i32>");
  return success();
}

/// The shape of all_gather's result (gather_c1/c2).
static FailureOr<SmallVector<int64_t>> gatheredShape(Operation *op,
                                                     ArrayRef<int64_t> in,
                                                     int64_t dim, int64_t n,
                                                     bool tiled) {
  int64_t rank = in.size();
  if (dim < 0 || dim > rank - (tiled ? 1 : 0))
    return op->emitOpError("all_gather_c1: dimension ")
           << dim << " is out of range for an operand of rank " << rank;
  SmallVector<int64_t> out(in);
  if (tiled)
    out[dim] *= n;
  else
    out.insert(out.begin() + dim, n);
  return out;
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyAxis(*this, getAxis(), getAxisSize())))
    return failure();
  auto in = cast<RankedTensorType>(getOperand().getType());
  auto shape = gatheredShape(*this, in.getShape(), getDimension(),
                             getAxisSize(), getTiled());
  if (failed(shape))
    return failure();
  // all_gather_c2
  if (getType() != in.clone(*shape))
    return emitOpError("all_gather_c2: the result must be ")
           << in.clone(*shape);
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyAxis(*this, getAxis(), getAxisSize())))
    return failure();
  auto in = cast<RankedTensorType>(getOperand().getType());
  int64_t d = getDimension(), n = getAxisSize();
  // reduce_scatter_c1
  if (d < 0 || d >= in.getRank())
    return emitOpError("reduce_scatter_c1: dimension ")
           << d << " is out of range for an operand of rank " << in.getRank();
  SmallVector<int64_t> out(in.getShape());
  // reduce_scatter_c2
  if (getTiled() ? out[d] % n != 0 : out[d] != n)
    return emitOpError("reduce_scatter_c2: dimension ")
           << d << " has " << out[d] << " entries, which "
           << (getTiled() ? "the axis size does not divide"
                          : "is not the axis size")
           << " (" << n << ")";
  if (getTiled())
    out[d] /= n;
  else
    out.erase(out.begin() + d);
  // reduce_scatter_c3
  if (getType() != in.clone(out))
    return emitOpError("reduce_scatter_c3: the result must be ")
           << in.clone(out);
  return success();
}

LogicalResult PpermuteOp::verify() {
  if (failed(verifyAxis(*this, getAxis(), getAxisSize())))
    return failure();
  auto pairs = getPairs();
  // ppermute_c1
  if (pairs.size() % 2)
    return emitOpError("ppermute_c1: pairs must list (source, destination) "
                       "pairs");
  llvm::SmallSet<int64_t, 8> src, dst;
  for (size_t i = 0; i < pairs.size(); i += 2) {
    for (int64_t l : {pairs[i], pairs[i + 1]})
      if (l < 0 || l >= getAxisSize())
        return emitOpError("ppermute_c1: lane ")
               << l << " is out of range [0, " << getAxisSize() << ")";
    // ppermute_c2
    if (!src.insert(pairs[i]).second || !dst.insert(pairs[i + 1]).second)
      return emitOpError("ppermute_c2: a lane is a source or a destination "
                         "more than once");
  }
  return success();
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyAxis(*this, getAxis(), getAxisSize())))
    return failure();
  auto in = cast<RankedTensorType>(getOperand().getType());
  int64_t s = getSplit(), c = getConcat(), n = getAxisSize(),
          rank = in.getRank();
  // all_to_all_c1
  if (s < 0 || s >= rank || c < 0 || c >= rank)
    return emitOpError("all_to_all_c1: split and concat dimensions must be in "
                       "[0, ")
           << rank << ")";
  SmallVector<int64_t> out(in.getShape());
  // all_to_all_c2
  if (getTiled() ? out[s] % n != 0 : out[s] != n)
    return emitOpError("all_to_all_c2: split dimension ")
           << s << " has " << out[s] << " entries, which "
           << (getTiled() ? "the axis size does not divide"
                          : "is not the axis size")
           << " (" << n << ")";
  if (getTiled()) {
    out[s] /= n;
    out[c] *= n;
  } else {
    out.erase(out.begin() + s);
    out.insert(out.begin() + c, n);
  }
  // all_to_all_c3
  if (getType() != in.clone(out))
    return emitOpError("all_to_all_c3: the result must be ") << in.clone(out);
  return success();
}

LogicalResult VmapOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto fn =
      symbols.lookupNearestSymbolFrom<func::FuncOp>(*this, getCalleeAttr());
  // vmap_c1
  if (!fn)
    return emitOpError("vmap_c1: '")
           << getCallee() << "' does not name a func.func";
  FunctionType ft = fn.getFunctionType();
  int64_t n = getBatchSize();
  // vmap_c2
  if (getInputs().size() != ft.getNumInputs() ||
      getBatched().size() != ft.getNumInputs())
    return emitOpError("vmap_c2: needs one input and one batched flag per "
                       "argument of '")
           << getCallee() << "'";
  // vmap_c6 (before any type with a leading `n` is built)
  if (n < 0)
    return emitOpError("vmap_c6: the batch size ") << n << " is negative";
  auto withBatch = [&](Type t) -> Type {
    if (auto ref = dyn_cast<RefType>(t))
      return RefType::get(getContext(), batchedType(ref.getValueType(), n));
    return batchedType(t, n);
  };
  if (failed(verifyPassedRefs(*this, getInputs())))
    return failure();
  // vmap_c3
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    Type expect =
        getBatched()[i] ? (Type)withBatch(ft.getInput(i)) : ft.getInput(i);
    if (v.getType() != expect)
      return emitOpError("vmap_c3: input ")
             << i << " must have type " << expect;
  }
  // vmap_c5
  if (getAxisName() && getAxisName()->empty())
    return emitOpError("vmap_c5: the axis name is empty");
  // vmap_c4
  if (getNumResults() != ft.getNumResults())
    return emitOpError("vmap_c4: one result per result of the callee");
  for (auto [i, t] : llvm::enumerate(getResultTypes()))
    if (t != withBatch(ft.getResult(i)))
      return emitOpError("vmap_c4: result ")
             << i << " must be the callee's result type "
             << "with a leading dimension of size " << n;
  return success();
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

LogicalResult WhileOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  for (Value v : adaptor.getInit())
    types.push_back(v.getType());
  return success();
}

LogicalResult WhileOp::verify() {
  // while_c4
  if (auto n = getTripCountAttr(); n && n.getInt() < 0)
    return emitOpError("while_c4: trip_count must be non-negative");
  // while_c5
  if (getParallel() && !getTripCountAttr())
    return emitOpError("while_c5: a parallel loop must have a trip_count");
  TypeRange carried = getInit().getTypes();
  for (auto [name, region] :
       {std::pair<StringRef, Region *>{"cond", &getCond()},
        std::pair<StringRef, Region *>{"body", &getBody()}}) {
    // while_c1
    if (region->empty())
      return emitOpError("while_c1: the ") << name << " region has no block";
    Block &block = region->front();
    if (block.getArgumentTypes() != carried)
      return emitOpError("while_c1: the ")
             << name
             << " region must take the carried values as block arguments";
    // A block may lack a terminator here (invalid input): no getTerminator.
    auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(&block.back());
    if (!yield)
      return emitOpError("while_c1: the ")
             << name << " region must end in ember.yield";
    if (name == "cond") {
      // while_c2
      auto t = yield.getValues().size() == 1
                   ? dyn_cast<RankedTensorType>(yield.getValues()[0].getType())
                   : RankedTensorType();
      if (!t || t.getRank() != 0 || !t.getElementType().isInteger(1))
        return emitOpError(
            "while_c2: the cond region must yield one tensor<i1>");
    } else if (yield.getValues().getTypes() != carried) {
      // while_c3
      return emitOpError(
          "while_c3: the body region must yield values of the carried types");
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Custom derivative rules
//===----------------------------------------------------------------------===//

static LogicalResult checkCallee(Operation *op, SymbolTableCollection &symbols,
                                 FlatSymbolRefAttr name, StringRef rule) {
  // custom_c1
  if (!symbols.lookupNearestSymbolFrom<func::FuncOp>(op, name))
    return op->emitOpError(rule)
           << ": '" << name.getValue() << "' does not name a func.func";
  return success();
}

static LogicalResult checkSegments(Operation *op, ArrayRef<int64_t> segments,
                                   size_t count) {
  int64_t total = 0;
  for (int64_t s : segments)
    total += s;
  // custom_c2
  if (total != (int64_t)op->getNumOperands() ||
      llvm::any_of(segments, [](int64_t s) { return s < 0; }))
    return op->emitOpError(
        "custom_c2: segments must be non-negative and add up to the number "
        "of operands");
  if (segments.size() != count)
    return op->emitOpError("custom_c2: expected ") << count << " segments";
  return success();
}

LogicalResult
CustomJvpCallOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(checkCallee(*this, symbols, getCalleeAttr(), "custom_c1")) ||
      failed(checkCallee(*this, symbols, getJvpAttr(), "custom_c1")))
    return failure();
  return checkSegments(*this, getSegments(), 3);
}

LogicalResult
CustomVjpCallOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(checkCallee(*this, symbols, getCalleeAttr(), "custom_c1")) ||
      failed(checkCallee(*this, symbols, getFwdAttr(), "custom_c1")) ||
      failed(checkCallee(*this, symbols, getBwdAttr(), "custom_c1")))
    return failure();
  int64_t total = 0;
  for (int64_t s : getSegments().drop_back())
    total += s;
  // custom_c2
  if (getSegments().size() != 5 || total != (int64_t)getNumOperands())
    return emitOpError(
        "custom_c2: segments must be [#args, #callee captures, #fwd captures, "
        "#bwd captures, #residuals] and cover the operands");
  // custom_c3
  if (auto effects = getBwdEffects()) {
    auto bwd =
        symbols.lookupNearestSymbolFrom<func::FuncOp>(*this, getBwdAttr());
    if (*effects < 0 ||
        (int64_t)bwd.getNumResults() != getSegments()[0] + *effects)
      return emitOpError("custom_c3: bwd must return one cotangent per "
                         "argument followed by bwd_effects values");
  }
  return success();
}

LogicalResult CustomLinearOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(checkCallee(*this, symbols, getBwdAttr(), "custom_c1")))
    return failure();
  // custom_c3
  if (getBwdEffects().value_or(0) < 0)
    return emitOpError("custom_c3: bwd_effects must be non-negative");
  return checkSegments(*this, getSegments(), 3);
}

//===----------------------------------------------------------------------===//
// Host callbacks
//===----------------------------------------------------------------------===//

LogicalResult HostCallbackOp::verify() {
  // host_callback_c1
  if (getCallbackIdAttr().getInt() < 0)
    return emitOpError("host_callback_c1: callback_id must be non-negative");
  // host_callback_c2
  StringRef m = getVmapMethod();
  if (m != "sequential" && m != "expand_dims" && m != "broadcast_all" &&
      m != "legacy_vectorized" && m != "none" && m != "ordered")
    return emitOpError(
               "host_callback_c2: vmap_method must be sequential, expand_dims, "
               "broadcast_all, legacy_vectorized, none or ordered, got '")
           << m << "'";
  // host_callback_c3
  if (auto axes = getDeviceAxes()) {
    if (axes->empty() || m != "none")
      return emitOpError("host_callback_c3: device_axes must be non-empty and "
                         "come with vmap_method 'none'");
  }
  return success();
}

void HostCallbackOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // A pure callback has no effects (it may be removed or merged); an
  // effectful one reads and writes the host's state, which orders it.
  if (!getHasSideEffect())
    return;
  effects.emplace_back(MemoryEffects::Read::get());
  effects.emplace_back(MemoryEffects::Write::get());
}

//===----------------------------------------------------------------------===//
// Run-time stacks
//===----------------------------------------------------------------------===//

/// stack_c1: a stack handle is a `tensor<i64>`.
static LogicalResult checkStackHandle(Operation *op, Type t, StringRef what) {
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt || rt.getRank() != 0 || !rt.getElementType().isSignlessInteger(64))
    return op->emitOpError("stack_c1: the ")
           << what << " must be a tensor<i64>, got " << t;
  return success();
}

/// Stack ops read and write the run-time stack: they are ordered and kept.
static void
stackEffects(SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
                 &effects) {
  effects.emplace_back(MemoryEffects::Read::get());
  effects.emplace_back(MemoryEffects::Write::get());
}

/// stack_c3: with `lanes`, every pushed or popped value has that many lanes
/// (its leading dimension).
static LogicalResult checkStackLanes(Operation *op,
                                     std::optional<uint64_t> lanes,
                                     TypeRange values) {
  if (!lanes)
    return success();
  for (Type t : values) {
    auto r = dyn_cast<RankedTensorType>(t);
    if (!r || r.getRank() == 0 || r.getDimSize(0) != (int64_t)*lanes)
      return op->emitOpError("stack_c3: with lanes = ")
             << *lanes << ", every value has a leading dimension of " << *lanes;
  }
  return success();
}

LogicalResult StackPushOp::verify() {
  if (failed(checkStackHandle(*this, getStack().getType(), "stack operand")) ||
      failed(checkStackHandle(*this, getResult().getType(), "result")))
    return failure();
  // stack_c2
  if (getValues().empty())
    return emitOpError("stack_c2: a push needs at least one value");
  // stack_c3
  if (getLanes() && *getLanes() < 1)
    return emitOpError("stack_c3: lanes must be at least 1");
  return checkStackLanes(*this, getLanes(), getValues().getTypes());
}

LogicalResult StackPopOp::verify() {
  if (failed(checkStackHandle(*this, getStack().getType(), "stack operand")) ||
      failed(checkStackHandle(*this, getResult().getType(), "first result")))
    return failure();
  if (getValues().empty())
    return emitOpError("stack_c2: a pop needs at least one value");
  // stack_c3
  auto index = dyn_cast<RankedTensorType>(getIndex().getType());
  std::optional<uint64_t> lanes = getLanes();
  SmallVector<int64_t> shape;
  if (lanes)
    shape.push_back((int64_t)*lanes);
  if (!index || !index.getElementType().isInteger(64) ||
      index.getShape() != ArrayRef(shape) || (lanes && *lanes < 1))
    return emitOpError(
        "stack_c3: the index must be a tensor<i64>, or a tensor<Lxi64> with "
        "lanes = L >= 1");
  return checkStackLanes(*this, lanes, getValues().getTypes());
}

LogicalResult StackFreeOp::verify() {
  return checkStackHandle(*this, getStack().getType(), "stack operand");
}

void StackPushOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  stackEffects(effects);
}
void StackPopOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  stackEffects(effects);
}
void StackFreeOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  stackEffects(effects);
}

//===----------------------------------------------------------------------===//
// Case
//===----------------------------------------------------------------------===//

LogicalResult CaseOp::verify() {
  // case_c1
  if (getIndex().getType().getRank() != 0)
    return emitOpError("case_c1: the index must be a 0-d tensor<i32>");
  // case_c2
  if (getBranches().empty())
    return emitOpError("case_c2: there must be at least one branch");
  for (auto [k, region] : llvm::enumerate(getBranches())) {
    // case_c4 (a branch without a block is invalid input, not an abort)
    if (region.empty())
      return emitOpError("case_c4: branch ") << k << " has no block";
    Block &block = region.front();
    // case_c3
    if (block.getNumArguments() != 0)
      return emitOpError("case_c3: branch ") << k << " must take no arguments";
    auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(&block.back());
    // case_c4
    if (!yield || yield.getValues().getTypes() != getResultTypes())
      return emitOpError("case_c4: branch ")
             << k << " must end in ember.yield with values of the result types";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Mutable array references
//===----------------------------------------------------------------------===//

// ref_c2: the ref is an argument of the function the op is in, and the op
// is in that function's body or in regions of `ember.while` and `ember.case`
// ops nested in it (ember-to-linalg threads the ref's value through them).
// ref_c5: an op writing a ref is not in a while's `cond` region.
static LogicalResult verifyRefPlacement(Operation *op, Value ref, bool writes) {
  auto arg = dyn_cast<BlockArgument>(ref);
  Operation *at = op, *parent = op->getParentOp();
  bool inCond = false;
  while (parent && isa<WhileOp, CaseOp>(parent)) {
    if (auto w = dyn_cast<WhileOp>(parent))
      inCond |= at->getParentRegion() == &w.getCond();
    at = parent;
    parent = at->getParentOp();
  }
  auto f = dyn_cast_or_null<FunctionOpInterface>(parent);
  if (!arg || !f || arg.getOwner() != &f.getFunctionBody().front() ||
      at->getBlock() != &f.getFunctionBody().front())
    return op->emitOpError("ref_c2: the ref must be an argument of the "
                           "enclosing function and the op in its body or in "
                           "ember.while and ember.case regions nested in it");
  if (writes && inCond)
    return op->emitOpError("ref_c5: a while's cond region does not write "
                           "refs");
  return success();
}

LogicalResult RefGetOp::verify() {
  return verifyRefPlacement(*this, getRef(), /*writes=*/false);
}
LogicalResult RefSetOp::verify() {
  return verifyRefPlacement(*this, getRef(), /*writes=*/true);
}
LogicalResult RefSwapOp::verify() {
  return verifyRefPlacement(*this, getRef(), /*writes=*/true);
}
LogicalResult RefAddUpdateOp::verify() {
  // ref_c4: addupdate adds numbers.
  if (getValue().getType().getElementType().isInteger(1))
    return emitOpError("ref_c4: addupdate needs a ref of numbers, not of "
                       "booleans");
  return verifyRefPlacement(*this, getRef(), /*writes=*/true);
}
