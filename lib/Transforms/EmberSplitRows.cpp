//===- EmberSplitRows.cpp - large loop nests as functions of their rows ---===//
//
// A large linalg op on buffers whose first loop is parallel becomes a call
// of a function computing the rows [lo, hi) of that loop on subviews of its
// operands. The call covers every row, so the program means the same; the
// function carries `ember.rows`, which `ember-parallel-calls` turns into
// `ember_parallel_for` over the rows after the LLVM conversion. A loop
// marked `ember.parallel` (a Pallas grid's independent points) becomes a
// call of a function of its iterations the same way.
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERSPLITROWSPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {
/// For each operand of `op`: the dimension its first loop indexes (-1: none,
/// the operand is read whole). Fails when a map uses the first loop other
/// than as one plain dimension, or an output does not depend on it (rows
/// would then write the same elements).
FailureOr<SmallVector<int64_t>> rowDims(linalg::LinalgOp op) {
  SmallVector<int64_t> dims;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    int64_t at = -1;
    for (auto [p, e] : llvm::enumerate(map.getResults())) {
      if (!e.isFunctionOfDim(0))
        continue;
      auto d = dyn_cast<AffineDimExpr>(e);
      if (!d || at != -1)
        return failure();
      at = p;
    }
    if (at == -1 && !op.isDpsInput(&operand))
      return failure();
    dims.push_back(at);
  }
  return dims;
}

struct EmberSplitRowsPass
    : public mlir::ember::impl::EmberSplitRowsPassBase<EmberSplitRowsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // Parallel loops (a Pallas grid's independent points) first; their
    // linalg ops run on one thread each.
    SmallVector<scf::ForOp> loops;
    module.walk([&](scf::ForOp loop) {
      if (loop->hasAttr(ember::kParallelLoopAttr))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops) {
      bool nested = false;
      for (Operation *p = loop->getParentOp(); p && !nested;
           p = p->getParentOp())
        nested =
            p->hasAttr(ember::kParallelLoopAttr) || p->hasAttr("ember.rows");
      if (nested || failed(splitLoop(module, symbols, loop)))
        loop->removeAttr(ember::kParallelLoopAttr);
    }
    SmallVector<linalg::LinalgOp> ops;
    module.walk([&](linalg::LinalgOp op) {
      // Ops in loops (a scan's body) too, when larger: the pool's wake-up
      // (about 0.1 ms) comes on every iteration.
      if (!op.hasPureBufferSemantics() || op->getNumResults() != 0 ||
          !op->getParentOfType<func::FuncOp>() || op.getNumLoops() == 0 ||
          op.getIteratorTypesArray()[0] != utils::IteratorType::parallel ||
          op->getParentOfType<func::FuncOp>()->hasAttr("ember.rows"))
        return;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      int64_t work = 1;
      bool dynamic = false;
      for (int64_t r : ranges) {
        if (ShapedType::isDynamic(r))
          dynamic = true;
        else
          work *= r;
      }
      // Loop ranges known only at run time (a program compiled for every
      // size): split when there may be enough work; the call then checks.
      if (dynamic ? work > 0 && ranges[0] != 1
                  : ranges[0] >= 2 && work >= least(op))
        ops.push_back(op);
    });
    for (linalg::LinalgOp op : ops)
      split(module, symbols, op);
  }

  /// The runtime functions a parallel loop may call: products, sorts and
  /// decompositions work on the buffers they are given (host callbacks
  /// and run-time stacks do not: their order would change).
  static bool threadSafeCallee(StringRef name) {
    return llvm::any_of(ArrayRef<StringRef>{"ember_gemm", "ember_sort",
                                            "ember_cholesky", "ember_eigh",
                                            "ember_lu", "ember_qr", "ember_svd",
                                            "ember_triangular_solve"},
                        [&](StringRef p) { return name.starts_with(p); });
  }

  /// Whether `region` calls, directly or through the module's functions,
  /// only thread-safe runtime functions.
  static bool callsThreadSafe(ModuleOp module, Region &region,
                              DenseSet<Operation *> &seen) {
    WalkResult r = region.walk([&](Operation *op) {
      if (isa<CallOpInterface>(op) && !isa<func::CallOp>(op))
        return WalkResult::interrupt();
      auto call = dyn_cast<func::CallOp>(op);
      if (!call)
        return WalkResult::advance();
      auto fn = module.lookupSymbol<func::FuncOp>(call.getCallee());
      if (!fn)
        return WalkResult::interrupt();
      if (fn.isExternal())
        return threadSafeCallee(fn.getName()) ? WalkResult::advance()
                                              : WalkResult::interrupt();
      if (seen.insert(fn).second &&
          !callsThreadSafe(module, fn.getBody(), seen))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return !r.wasInterrupted();
  }

  /// A parallel loop as a call of a function of its iterations [lo, hi):
  /// its counters (carried `arg + c`) are computed from the iteration
  /// number; any other carried value keeps the loop sequential.
  LogicalResult splitLoop(ModuleOp module, SymbolTable &symbols,
                          scf::ForOp loop) {
    Block *body = loop.getBody();
    auto yield = cast<scf::YieldOp>(body->getTerminator());
    SmallVector<Value> steps;
    for (auto [arg, next] :
         llvm::zip(loop.getRegionIterArgs(), yield.getOperands())) {
      auto add = next.getDefiningOp<arith::AddIOp>();
      if (!add || add->getBlock() != body)
        return failure();
      Value other = add.getLhs() == arg   ? add.getRhs()
                    : add.getRhs() == arg ? add.getLhs()
                                          : Value();
      if (!other || !matchPattern(other, m_Constant()))
        return failure();
      steps.push_back(other);
    }
    DenseSet<Operation *> seen;
    if (!callsThreadSafe(module, loop.getRegion(), seen))
      return failure();
    std::optional<APInt> trips = loop.getStaticTripCount();
    if (trips && trips->getSExtValue() < 2)
      return failure();
    Location loc = loop.getLoc();
    OpBuilder b(loop);
    Type index = b.getIndexType();
    Value lb = loop.getLowerBound(), ub = loop.getUpperBound(),
          step = loop.getStep();
    // Iterations: ceil((ub - lb) / step), at least 0.
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value n = arith::MaxSIOp::create(
        b, loc, zero,
        arith::CeilDivSIOp::create(
            b, loc, arith::SubIOp::create(b, loc, ub, lb), step));
    // Counter `arg` at iteration k: init + k * c (after the loop: k = n).
    auto counterAt = [&](OpBuilder &at, Value k, Value init, Value c) {
      Value kk = k;
      if (init.getType() != index)
        kk = arith::IndexCastOp::create(at, loc, init.getType(), k);
      Value cc = at.clone(*c.getDefiningOp())->getResult(0);
      return arith::AddIOp::create(at, loc, init,
                                   arith::MulIOp::create(at, loc, kk, cc))
          .getResult();
    };
    auto plain = scf::ForOp::create(b, loc, lb, ub, step);
    OpBuilder pb = OpBuilder::atBlockBegin(plain.getBody());
    Value iv = plain.getInductionVar();
    Value k = arith::DivSIOp::create(
        pb, loc, arith::SubIOp::create(pb, loc, iv, lb), step);
    SmallVector<Value> argsNow = {iv};
    for (auto [init, c] : llvm::zip(loop.getInitArgs(), steps))
      argsNow.push_back(counterAt(pb, k, init, c));
    for (auto [result, init, c] :
         llvm::zip(loop.getResults(), loop.getInitArgs(), steps))
      result.replaceAllUsesWith(counterAt(b, n, init, c));
    yield->erase();
    Block *into = plain.getBody();
    into->getOperations().splice(Block::iterator(into->getTerminator()),
                                 body->getOperations());
    for (auto [from, to] : llvm::zip(body->getArguments(), argsNow))
      from.replaceAllUsesWith(to);
    loop->erase();
    // The function: runs iterations [lo, hi) of the plain loop.
    SmallVector<Value> args;
    IRMapping map;
    func::FuncOp fn =
        rowsFunction(module, symbols, plain, "__ember_iterations", args, map);
    Block &entry = fn.getBody().front();
    OpBuilder fb = OpBuilder::atBlockEnd(&entry);
    auto rows = cast<scf::ForOp>(fb.clone(*plain, map));
    fb.setInsertionPoint(rows);
    Value flb = rows.getLowerBound(), fstep = rows.getStep();
    auto bound = [&](Value i) {
      return arith::AddIOp::create(fb, loc, flb,
                                   arith::MulIOp::create(fb, loc, i, fstep))
          .getResult();
    };
    rows.setLowerBound(bound(entry.getArgument(0)));
    rows.setUpperBound(arith::MinSIOp::create(fb, loc, rows.getUpperBound(),
                                              bound(entry.getArgument(1))));
    fb.setInsertionPointAfter(rows);
    func::ReturnOp::create(fb, loc);
    SmallVector<Value> callArgs = {zero, n};
    callArgs.append(args);
    b.setInsertionPoint(plain);
    func::CallOp::create(b, loc, fn, callArgs);
    plain->erase();
    return success();
  }

  /// A private function `(lo, hi, args...)` marked `ember.rows` for the
  /// rows or iterations of `op`: `args` are what `op` uses from outside
  /// (ember::outlinedOperands), mapped by `map` to the function's arguments;
  /// the constants it uses are cloned into it.
  static func::FuncOp rowsFunction(ModuleOp module, SymbolTable &symbols,
                                   Operation *op, StringRef name,
                                   SmallVectorImpl<Value> &args,
                                   IRMapping &map) {
    SmallVector<Operation *> constants;
    args = ember::outlinedOperands(op, constants);
    OpBuilder b(op);
    SmallVector<Type> types = {b.getIndexType(), b.getIndexType()};
    for (Value v : args)
      types.push_back(v.getType());
    func::FuncOp fn = ember::makePrivateFunc(
        module, symbols, op->getLoc(), name, b.getFunctionType(types, {}));
    fn->setAttr("ember.rows", b.getUnitAttr());
    Block &entry = fn.getBody().front();
    for (auto [v, arg] : llvm::zip(args, entry.getArguments().drop_front(2)))
      map.map(v, arg);
    OpBuilder fb = OpBuilder::atBlockBegin(&entry);
    for (Operation *c : constants)
      fb.clone(*c, map); // maps the constant's results
    return fn;
  }

  int64_t least(linalg::LinalgOp op) {
    return op->getParentOfType<LoopLikeOpInterface>() ? minElementsInLoops
                                                      : minElements;
  }

  void split(ModuleOp module, SymbolTable &symbols, linalg::LinalgOp op) {
    FailureOr<SmallVector<int64_t>> dims = rowDims(op);
    if (failed(dims))
      return;
    Location loc = op->getLoc();
    OpBuilder b(op);
    SmallVector<Value> args;
    IRMapping map;
    func::FuncOp fn =
        rowsFunction(module, symbols, op, "__ember_rows", args, map);
    Block &body = fn.getBody().front();
    OpBuilder fb = OpBuilder::atBlockEnd(&body);
    Value lo = body.getArgument(0), hi = body.getArgument(1);
    Value count = arith::SubIOp::create(fb, loc, hi, lo);
    // The operands, cut to the rows.
    SmallVector<Value> operands;
    for (auto [operand, dim] : llvm::zip(op->getOpOperands(), *dims)) {
      Value v = map.lookup(operand.get());
      auto type = dyn_cast<MemRefType>(v.getType());
      if (dim >= 0 && type) {
        SmallVector<OpFoldResult> offsets, sizes, strides;
        for (int64_t d = 0; d < type.getRank(); ++d) {
          offsets.push_back(d == dim ? OpFoldResult(lo) : fb.getIndexAttr(0));
          if (d == dim)
            sizes.push_back(count);
          else if (type.isDynamicDim(d))
            sizes.push_back(memref::DimOp::create(fb, loc, v, d).getResult());
          else
            sizes.push_back(fb.getIndexAttr(type.getDimSize(d)));
          strides.push_back(fb.getIndexAttr(1));
        }
        v = memref::SubViewOp::create(fb, loc, v, offsets, sizes, strides);
      }
      operands.push_back(v);
    }
    Operation *rows = mlir::clone(fb, op, TypeRange{}, operands);
    // Bodies see indices relative to the rows: the first loop's shifts.
    for (Region &region : rows->getRegions())
      region.walk([&](linalg::IndexOp index) {
        if (index.getDim() != 0)
          return;
        OpBuilder ib(index->getContext());
        ib.setInsertionPointAfter(index);
        auto shifted = arith::AddIOp::create(ib, index.getLoc(), index, lo);
        index.getResult().replaceAllUsesExcept(shifted, shifted);
      });
    // Values from above (arguments and cloned constants), inside the
    // clone's regions.
    for (Region &region : rows->getRegions())
      for (auto [from, to] : map.getValueMap())
        replaceAllUsesInRegionWith(from, to, region);
    func::ReturnOp::create(fb, loc);
    SmallVector<Range> ranges = op.createLoopRanges(b, loc);
    SmallVector<Value> callArgs = {
        arith::ConstantIndexOp::create(b, loc, 0),
        getValueOrCreateConstantIndexOp(b, loc, ranges[0].size)};
    callArgs.append(args);
    if (!op.hasDynamicShape()) {
      func::CallOp::create(b, loc, fn, callArgs);
      op->erase();
      return;
    }
    // Dynamic ranges: the rows go to the threads when the iteration space
    // is large enough, else the op runs here as it was.
    Value work = arith::ConstantIndexOp::create(b, loc, 1);
    for (Range r : ranges)
      work = arith::MulIOp::create(
          b, loc, work, getValueOrCreateConstantIndexOp(b, loc, r.size));
    Value large = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::sge, work,
            arith::ConstantIndexOp::create(b, loc, least(op))),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, callArgs[1],
                              arith::ConstantIndexOp::create(b, loc, 2)));
    auto choice = scf::IfOp::create(b, loc, large, /*withElseRegion=*/true);
    OpBuilder tb = choice.getThenBodyBuilder();
    func::CallOp::create(tb, loc, fn, callArgs);
    op->moveBefore(choice.elseBlock()->getTerminator());
  }
};
} // namespace
