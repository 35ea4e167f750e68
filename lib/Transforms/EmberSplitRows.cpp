//===- EmberSplitRows.cpp - large loop nests as functions of their rows ---===//
//
// A large linalg op on buffers whose first loop is parallel becomes a call
// of a function computing the rows [lo, hi) of that loop on subviews of its
// operands. The call covers every row, so the program means the same; the
// function carries `ember.rows`, which `ember-parallel-calls` turns into
// `ember_parallel_for` over the rows after the LLVM conversion.
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
    SmallVector<linalg::LinalgOp> ops;
    module.walk([&](linalg::LinalgOp op) {
      // Ops in loops (a scan's body) too, when larger: the pool's wake-up
      // (about 0.1 ms) comes on every iteration.
      if (!op.hasPureBufferSemantics() || op->getNumResults() != 0 ||
          !op->getParentOfType<func::FuncOp>() || op.getNumLoops() == 0 ||
          op.getIteratorTypesArray()[0] != utils::IteratorType::parallel)
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
    SymbolTable symbols(module);
    for (linalg::LinalgOp op : ops)
      split(module, symbols, op);
  }

  int64_t least(linalg::LinalgOp op) {
    return op->getParentOfType<LoopLikeOpInterface>() ? minElementsInLoops
                                                      : minElements;
  }

  void split(ModuleOp module, SymbolTable &symbols, linalg::LinalgOp op) {
    FailureOr<SmallVector<int64_t>> dims = rowDims(op);
    if (failed(dims))
      return;
    SmallVector<Operation *> constants;
    SmallVector<Value> args = ember::outlinedOperands(op, constants);
    Location loc = op->getLoc();
    OpBuilder b(op);
    Type index = b.getIndexType();
    SmallVector<Type> types = {index, index};
    for (Value v : args)
      types.push_back(v.getType());
    func::FuncOp fn = ember::makePrivateFunc(
        module, symbols, loc, "__ember_rows", b.getFunctionType(types, {}));
    fn->setAttr("ember.rows", b.getUnitAttr());
    Block &body = fn.getBody().front();
    OpBuilder fb = OpBuilder::atBlockBegin(&body);
    Value lo = body.getArgument(0), hi = body.getArgument(1);
    Value count = arith::SubIOp::create(fb, loc, hi, lo);
    IRMapping map;
    for (auto [v, arg] : llvm::zip(args, body.getArguments().drop_front(2)))
      map.map(v, arg);
    for (Operation *k : constants)
      fb.clone(*k, map); // maps the constant's results
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
