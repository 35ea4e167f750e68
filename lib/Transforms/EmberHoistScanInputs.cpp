//===- EmberHoistScanInputs.cpp - batch per-element work out of loops -----===//
//
// In a counted `ember.while` (lax.scan, lax.map, fori_loop), iteration i often
// reads row i of an array defined outside the loop and computes on it with
// loop-invariant values only, e.g. `x_t @ Wx` in an RNN step. That work does
// not depend on the carry, so all iterations' worth can run before the loop
// as one batched computation (one large GEMM instead of n small ones), and
// the loop reads row i of the result. The batched form is an `ember.vmap` of
// an outlined function, expanded by `ember-expand-transforms` (ember-batch)
// with the ops' own batching rules. See docs/decisions.md, "Hoisting scan
// inputs".
//
//===----------------------------------------------------------------------===//
#include "TransformUtils.h"
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERHOISTSCANINPUTSPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;
using namespace mlir::ember;

namespace {

/// The most bytes of hoisted results per loop: they are all live at once.
constexpr int64_t kMaxHoistedBytes = int64_t(256) << 20;

bool definedOutside(Value v, WhileOp loop) {
  return !loop->isAncestor(v.getParentRegion()->getParentOp());
}

/// A row index of the loop: `a * i + b` for a counter `i` that starts at a
/// constant and grows by one per iteration, with a = +-1.
struct RowIndex {
  int64_t lo, hi; // the rows read, over all iterations
};

class Hoister {
public:
  Hoister(WhileOp loop, ModuleOp module, SymbolTable &symbols)
      : loop(loop), module(module), symbols(symbols),
        body(loop.getBody().front()) {}

  void run() {
    int64_t n = *loop.getTripCount();
    findCounters();
    // Slices of outer arrays at a row index, grouped by the index value.
    llvm::MapVector<Value, SmallVector<DynamicSliceOp>> groups;
    DenseMap<Value, RowIndex> rows;
    for (Operation &o : body.without_terminator()) {
      auto s = dyn_cast<DynamicSliceOp>(&o);
      if (!s || !isRowSlice(s))
        continue;
      Value idx = s.getStartIndices()[0];
      auto r = rowIndex(idx, n);
      if (!r)
        continue;
      auto t = cast<RankedTensorType>(s.getOperand().getType());
      if (r->lo < 0 || r->hi >= t.getDimSize(0))
        continue; // clamped reads: keep them in the loop
      rows[idx] = *r;
      groups[idx].push_back(s);
    }
    for (auto &[idx, slices] : groups)
      hoistGroup(idx, rows[idx], slices, n);
  }

private:
  void findCounters() {
    for (unsigned i = 0, e = loop.getInit().size(); i < e; ++i)
      if (auto c = affineCounter(loop, i); c && c->step == 1)
        counters[body.getArgument(i)] = c->start;
  }

  /// The rows `idx` takes over the n iterations, if it is +-counter + const.
  std::optional<RowIndex> rowIndex(Value idx, int64_t n) {
    int64_t a = 1, b = 0;
    Value i = idx;
    if (auto sub = idx.getDefiningOp<SubOp>()) {
      auto k = constantInt(sub.getLhs());
      if (!k)
        return std::nullopt;
      a = -1, b = *k, i = sub.getRhs();
    } else if (auto add = idx.getDefiningOp<AddOp>()) {
      if (auto k = constantInt(add.getRhs()))
        b = *k, i = add.getLhs();
      else if (auto k = constantInt(add.getLhs()))
        b = *k, i = add.getRhs();
      else
        return std::nullopt;
    }
    auto it = counters.find(i);
    if (it == counters.end())
      return std::nullopt;
    int64_t first = a * it->second + b, last = a * (it->second + n - 1) + b;
    return RowIndex{std::min(first, last), std::max(first, last)};
  }

  /// `s` reads one whole row of an array from outside the loop.
  bool isRowSlice(DynamicSliceOp s) {
    Value x = s.getOperand();
    auto t = dyn_cast<RankedTensorType>(x.getType());
    if (!t || !t.hasStaticShape() || t.getRank() == 0 ||
        !definedOutside(x, loop))
      return false;
    ArrayRef<int64_t> sizes = s.getSliceSizes();
    if (sizes[0] != 1)
      return false;
    for (int64_t d = 1; d < t.getRank(); ++d)
      if (sizes[d] != t.getDimSize(d) ||
          constantInt(s.getStartIndices()[d]) != 0)
        return false;
    return true;
  }

  void hoistGroup(Value idx, RowIndex r, ArrayRef<DynamicSliceOp> slices,
                  int64_t n) {
    // The ops that depend only on these slices and on values from outside.
    llvm::SetVector<Operation *> movable;
    DenseSet<Operation *> sliceOps;
    DenseSet<Value> dependent;
    for (DynamicSliceOp s : slices) {
      movable.insert(s);
      sliceOps.insert(s);
      dependent.insert(s.getResult());
    }
    for (Operation &o : body.without_terminator()) {
      if (movable.contains(&o) || o.getNumRegions() || !isMemoryEffectFree(&o))
        continue;
      bool ok = true, dep = false;
      for (Value v : o.getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && movable.contains(def)) {
          dep |= dependent.contains(v);
          continue;
        }
        ok &= definedOutside(v, loop);
      }
      if (!ok)
        continue;
      movable.insert(&o);
      if (dep)
        for (Value v : o.getResults())
          dependent.insert(v);
    }
    // Roots: dependent values the rest of the loop uses (not bare slices).
    SmallVector<Value> roots;
    int64_t bytes = 0;
    for (Operation *o : movable) {
      if (sliceOps.contains(o))
        continue;
      for (Value v : o->getResults()) {
        if (!dependent.contains(v) ||
            llvm::all_of(v.getUsers(),
                         [&](Operation *u) { return movable.contains(u); }))
          continue;
        auto t = dyn_cast<RankedTensorType>(v.getType());
        if (!t || !t.hasStaticShape())
          return;
        Type e = t.getElementType();
        int64_t parts = 1;
        if (auto c = dyn_cast<ComplexType>(e))
          e = c.getElementType(), parts = 2;
        if (!e.isIntOrFloat())
          return;
        bytes += n * t.getNumElements() * parts *
                 std::max<int64_t>(1, e.getIntOrFloatBitWidth() / 8);
        roots.push_back(v);
      }
    }
    if (roots.empty() || bytes > kMaxHoistedBytes)
      return;
    // The ops the roots need, in order; worth it only with a contraction.
    DenseSet<Operation *> needed;
    SmallVector<Value> work(roots);
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || !movable.contains(def) || !needed.insert(def).second)
        continue;
      if (!sliceOps.contains(def))
        work.append(def->operand_begin(), def->operand_end());
    }
    if (llvm::none_of(needed,
                      [](Operation *o) { return isa<DotGeneralOp>(o); }))
      return;

    // The outlined function: one row of each sliced array, then the values
    // from outside the loop; returns the roots.
    Location loc = loop.getLoc();
    SmallVector<DynamicSliceOp> used;
    llvm::SetVector<Value> outside;
    for (Operation *o : movable) {
      if (!needed.contains(o))
        continue;
      if (sliceOps.contains(o)) {
        used.push_back(cast<DynamicSliceOp>(o));
        continue;
      }
      for (Value v : o->getOperands())
        if (definedOutside(v, loop))
          outside.insert(v);
    }
    SmallVector<Type> argTypes, resultTypes;
    for (DynamicSliceOp s : used) {
      auto t = cast<RankedTensorType>(s.getType());
      argTypes.push_back(
          RankedTensorType::get(t.getShape().drop_front(), t.getElementType()));
    }
    for (Value v : outside)
      argTypes.push_back(v.getType());
    for (Value v : roots)
      resultTypes.push_back(v.getType());
    OpBuilder b(module.getContext());
    func::FuncOp fn = makePrivateFunc(module, symbols, loc, "scan_inputs",
                                      b.getFunctionType(argTypes, resultTypes));
    b.setInsertionPointToStart(&fn.front());
    IRMapping map;
    for (auto [j, s] : llvm::enumerate(used))
      map.map(s.getResult(),
              ReshapeOp::create(b, loc, s.getType(), fn.getArgument(j)));
    for (auto [j, v] : llvm::enumerate(outside))
      map.map(v, fn.getArgument(used.size() + j));
    for (Operation *o : movable)
      if (needed.contains(o) && !sliceOps.contains(o))
        b.clone(*o, map);
    SmallVector<Value> rets;
    for (Value v : roots)
      rets.push_back(map.lookup(v));
    func::ReturnOp::create(b, loc, rets);

    // Before the loop: all rows at once.
    b.setInsertionPoint(loop);
    SmallVector<Value> inputs;
    SmallVector<bool> batched;
    for (DynamicSliceOp s : used) {
      Value x = s.getOperand();
      auto t = cast<RankedTensorType>(x.getType());
      if (r.lo != 0 || r.hi != t.getDimSize(0) - 1) {
        SmallVector<int64_t> start(t.getRank(), 0), limit(t.getShape()),
            strides(t.getRank(), 1);
        start[0] = r.lo, limit[0] = r.hi + 1;
        x = SliceOp::create(b, loc, x, start, limit, strides);
      }
      inputs.push_back(x);
      batched.push_back(true);
    }
    for (Value v : outside) {
      inputs.push_back(v);
      batched.push_back(false);
    }
    SmallVector<Type> stacked;
    for (Value v : roots) {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape{n};
      shape.append(t.getShape().begin(), t.getShape().end());
      stacked.push_back(RankedTensorType::get(shape, t.getElementType()));
    }
    auto vmap =
        VmapOp::create(b, loc, stacked, fn.getSymName(), inputs, batched, n,
                       /*axis_name=*/StringAttr());

    // In the loop: row idx - lo of each result.
    if (Operation *def = idx.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(&body);
    Value row = idx;
    if (r.lo != 0) {
      auto it = cast<RankedTensorType>(idx.getType());
      row = SubOp::create(
          b, loc, idx, ConstantOp::create(b, loc, splatOf(it, (double)r.lo)));
    }
    for (auto [v, all] : llvm::zip(roots, vmap.getResults())) {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<Value> start{row};
      for (int64_t d = 0; d < t.getRank(); ++d)
        start.push_back(ConstantOp::create(
            b, loc, splatOf(cast<RankedTensorType>(idx.getType()), 0.0)));
      SmallVector<int64_t> sizes{1};
      sizes.append(t.getShape().begin(), t.getShape().end());
      Value s = DynamicSliceOp::create(b, loc, all, start,
                                       b.getDenseI64ArrayAttr(sizes));
      v.replaceAllUsesWith(ReshapeOp::create(b, loc, t, s).getResult());
    }
    // The loop's copies are dead now.
    for (Operation *o : llvm::reverse(movable))
      if (o->use_empty())
        o->erase();
  }

  WhileOp loop;
  ModuleOp module;
  SymbolTable &symbols;
  Block &body;
  DenseMap<Value, int64_t> counters;
};

struct EmberHoistScanInputsPass
    : public mlir::ember::impl::EmberHoistScanInputsPassBase<
          EmberHoistScanInputsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<WhileOp> loops;
    module.walk([&](WhileOp loop) {
      if (loop.getTripCount() && *loop.getTripCount() > 1)
        loops.push_back(loop);
    });
    for (WhileOp loop : loops)
      Hoister(loop, module, symbols).run();
  }
};

} // namespace
