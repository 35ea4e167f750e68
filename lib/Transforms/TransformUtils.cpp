//===- TransformUtils.cpp - shared by the transformation passes -----------===//
#include "TransformUtils.h"

#include "ember/IR/EmberDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::ember;

std::optional<int64_t> mlir::ember::constantInt(Value v) {
  // (Through conversions between integer types: x64 mode's Python ints.)
  if (auto cv = v.getDefiningOp<ConvertOp>()) {
    auto to = dyn_cast<IntegerType>(getElementTypeOrSelf(cv.getType()));
    auto x = constantInt(cv.getOperand());
    if (!to || !x ||
        !isa<IntegerType>(getElementTypeOrSelf(cv.getOperand().getType())))
      return std::nullopt;
    return APInt(64, *x, /*isSigned=*/true).trunc(to.getWidth()).getSExtValue();
  }
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  auto attr = dyn_cast<DenseIntElementsAttr>(c.getValue());
  if (!attr || attr.getType().getRank() != 0)
    return std::nullopt;
  return attr.getSplatValue<APInt>().getSExtValue();
}

std::optional<AffineCounter> mlir::ember::affineCounter(Operation *op,
                                                        unsigned i) {
  auto loop = cast<WhileOp>(op);
  Block &body = loop.getBody().front();
  auto start = constantInt(loop.getInit()[i]);
  if (!start)
    return std::nullopt;
  Value arg = body.getArgument(i);
  Value next = body.getTerminator()->getOperand(i);
  if (auto add = next.getDefiningOp<AddOp>()) {
    if (add.getLhs() == arg)
      if (auto k = constantInt(add.getRhs()))
        return AffineCounter{*start, *k};
    if (add.getRhs() == arg)
      if (auto k = constantInt(add.getLhs()))
        return AffineCounter{*start, *k};
  } else if (auto sub = next.getDefiningOp<SubOp>()) {
    if (sub.getLhs() == arg)
      if (auto k = constantInt(sub.getRhs()))
        return AffineCounter{*start, -*k};
  }
  return std::nullopt;
}

bool mlir::ember::isTransformOp(Operation *op) {
  return isa<JvpOp, VjpOp, VmapOp>(op);
}

Value mlir::ember::scalarI64(OpBuilder &b, Location loc, int64_t v) {
  return ConstantOp::create(
      b, loc, splatOf(RankedTensorType::get({}, b.getI64Type()), v));
}

SmallVector<ValueRange> mlir::ember::splitSegments(ValueRange values,
                                                   ArrayRef<int64_t> sizes) {
  SmallVector<ValueRange> out;
  size_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(values.slice(at, s));
    at += s;
  }
  return out;
}

static bool readyImpl(func::FuncOp fn, SymbolTable &symbols,
                      llvm::DenseSet<Operation *> &seen) {
  if (!seen.insert(fn).second)
    return true;
  bool ready = true;
  fn.walk([&](Operation *op) {
    if (isTransformOp(op))
      ready = false;
    else if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = symbols.lookup<func::FuncOp>(call.getCallee()))
        ready &= readyImpl(callee, symbols, seen);
  });
  return ready;
}

bool mlir::ember::isReadyToTransform(func::FuncOp fn, SymbolTable &symbols) {
  llvm::DenseSet<Operation *> seen;
  return readyImpl(fn, symbols, seen);
}

bool mlir::ember::isRecordedTpuKernel(func::FuncOp fn) {
  return fn->hasAttr("ember_tpu.kernel_module") ||
         fn->hasAttr("ember_tpu.kernel_error");
}

FailureOr<SmallVector<Value>>
mlir::ember::inlineBody(OpBuilder &b, func::FuncOp fn, ValueRange args,
                        SymbolTable &symbols, bool keepKernelCalls, int depth,
                        bool keepBatchRules) {
  if (depth > 64)
    return fn.emitError("call nesting too deep (recursion?)");
  if (!fn.getBody().hasOneBlock())
    return fn.emitError("only single-block functions can be transformed");
  IRMapping map;
  for (auto [a, v] : llvm::zip(fn.getArguments(), args))
    map.map(a, v);
  for (Operation &op : fn.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      SmallVector<Value> out;
      for (Value v : ret.getOperands())
        out.push_back(map.lookup(v));
      return out;
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal())
        return call.emitError("cannot transform through a call to '")
               << call.getCallee() << "'";
      if ((keepKernelCalls && isRecordedTpuKernel(callee)) ||
          (keepBatchRules && call->hasAttr("ember.batch_rule"))) {
        b.clone(op, map);
        continue;
      }
      SmallVector<Value> ins;
      for (Value v : call.getOperands())
        ins.push_back(map.lookup(v));
      auto res = inlineBody(b, callee, ins, symbols, keepKernelCalls, depth + 1,
                            keepBatchRules);
      if (failed(res))
        return failure();
      for (auto [r, v] : llvm::zip(call.getResults(), *res))
        map.map(r, v);
      continue;
    }
    b.clone(op, map);
  }
  return fn.emitError("function has no return");
}

func::FuncOp mlir::ember::makePrivateFunc(ModuleOp module, SymbolTable &symbols,
                                          Location loc, StringRef base,
                                          FunctionType type) {
  OpBuilder b(module.getBodyRegion());
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc, base, type);
  fn.setPrivate();
  symbols.insert(fn); // renames on collision
  fn.addEntryBlock();
  return fn;
}

LogicalResult
mlir::ember::keepingLive(Block &body, SmallVectorImpl<Value> &live,
                         function_ref<LogicalResult(Operation *)> fn) {
  // A temporary terminator holds `live` as operands, which rewrites update.
  OpBuilder b = OpBuilder::atBlockEnd(&body);
  Operation *keep =
      func::ReturnOp::create(b, body.getParentOp()->getLoc(), live);
  LogicalResult r = fn(keep);
  live.assign(keep->getOperands().begin(), keep->getOperands().end());
  keep->erase();
  return r;
}

void mlir::ember::flattenCases(Block &body, SmallVectorImpl<Value> &live) {
  (void)keepingLive(body, live, [&](Operation *) {
    flattenCases(body.getParentOp());
    return success();
  });
}

void mlir::ember::flattenCases(Operation *root) {
  SmallVector<CaseOp> cases;
  root->walk<WalkOrder::PreOrder>([&](CaseOp op) { cases.push_back(op); });
  // Outer cases first: an inner case moves out with its branch's ops and is
  // flattened in turn.
  for (CaseOp op : cases) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<SmallVector<Value>> yielded;
    for (Region &r : op.getBranches()) {
      Block &block = r.front();
      yielded.emplace_back(cast<YieldOp>(block.getTerminator()).getValues());
      for (Operation &o :
           llvm::make_early_inc_range(block.without_terminator()))
        o.moveBefore(op);
    }
    // Branch k is taken where the clamped index is k: select from the last
    // branch backwards (index <= 0 picks branch 0).
    Value index = op.getIndex();
    auto indexType = cast<RankedTensorType>(index.getType());
    SmallVector<Value> res(yielded.back());
    for (int64_t k = (int64_t)yielded.size() - 2; k >= 0; --k) {
      Value c = ConstantOp::create(b, loc, splatOf(indexType, (double)k));
      Value p = CompareOp::create(
          b, loc, k == 0 ? ComparisonDirection::LE : ComparisonDirection::EQ,
          index, c);
      for (auto [j, v] : llvm::enumerate(res)) {
        auto t = cast<RankedTensorType>(v.getType());
        Value pj = t.getRank() == 0 ? p
                                    : (Value)BroadcastInDimOp::create(
                                          b, loc, t.clone(b.getI1Type()), p,
                                          b.getDenseI64ArrayAttr({}));
        res[j] = SelectOp::create(b, loc, t, pj, yielded[k][j], v);
      }
    }
    op->replaceAllUsesWith(res);
    op->erase();
  }
}

SmallVector<Value>
mlir::ember::outlinedOperands(Operation *op,
                              SmallVectorImpl<Operation *> &constants) {
  SmallVector<Value> args(op->getOperands());
  SetVector<Value> above;
  getUsedValuesDefinedAbove(op->getRegions(), above);
  for (Value v : above) {
    if (v.getDefiningOp() && matchPattern(v, m_Constant()))
      constants.push_back(v.getDefiningOp());
    else
      args.push_back(v);
  }
  return args;
}

Value mlir::ember::fillValue(linalg::GenericOp g) {
  if (g.getNumDpsInits() != 1 || g.getNumReductionLoops() != 0 ||
      !g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity())
    return {};
  Block &body = g.getRegion().front();
  if (!body.getArgument(g.getNumDpsInputs()).use_empty() ||
      !llvm::hasSingleElement(body))
    return {};
  Value y = body.getTerminator()->getOperand(0);
  if (auto arg = dyn_cast<BlockArgument>(y)) {
    if (arg.getOwner() != &body)
      return y;
    if (arg.getArgNumber() >= g.getNumDpsInputs())
      return {};
    Value in = g.getDpsInputOperand(arg.getArgNumber())->get();
    return isa<ShapedType>(in.getType()) ? Value() : in;
  }
  return y.getParentRegion()->isProperAncestor(&g.getRegion()) ? y : Value();
}
