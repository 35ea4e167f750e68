//===- EmberRefs.cpp - threading refs' values through a body --------------===//
//
// See include/ember/IR/EmberRefs.h. A ref's reads become the value last
// written, `ref_addupdate` an `ember.add`, `ref_swap` both; a loop or
// conditional whose regions write a ref carries its value as one more
// operand and result.
//
//===----------------------------------------------------------------------===//
#include "ember/IR/EmberRefs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::ember;

bool mlir::ember::isRefOp(Operation *op) {
  return isa<RefGetOp, RefSetOp, RefSwapOp, RefAddUpdateOp>(op);
}

Value RefThreading::entryValue(Value ref) {
  Value &v = onEntry[ref];
  if (!v) {
    // (A builder made now: the block's first op may have been erased.)
    OpBuilder at = anchor ? OpBuilder(anchor) : OpBuilder::atBlockBegin(&entry);
    v = RefGetOp::create(at, ref.getLoc(), ref).getResult();
  }
  return v;
}

Value RefThreading::valueOf(llvm::DenseMap<Value, Value> &current, Value ref) {
  Value &v = current[ref];
  if (!v)
    v = entryValue(ref);
  return v;
}

SmallVector<Value> RefThreading::writtenInside(Operation *op) {
  SmallVector<Value> refs;
  op->walk([&](Operation *inner) {
    if (isa<RefSetOp, RefSwapOp, RefAddUpdateOp>(inner) &&
        !llvm::is_contained(refs, inner->getOperand(0)))
      refs.push_back(inner->getOperand(0));
  });
  return refs;
}

static bool hasRefOps(Operation *op) {
  return op
      ->walk([](Operation *inner) {
        return isRefOp(inner) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

LogicalResult RefThreading::thread(Block &block,
                                   llvm::DenseMap<Value, Value> &current) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (auto get = dyn_cast<RefGetOp>(&op)) {
      if (get.getResult() == onEntry.lookup(get.getRef()))
        continue; // the entry read itself
      get.getResult().replaceAllUsesWith(valueOf(current, get.getRef()));
      get.erase();
    } else if (auto set = dyn_cast<RefSetOp>(&op)) {
      (void)entryValue(set.getRef()); // (the buffer's tensor: see the set)
      current[set.getRef()] = set.getValue();
      written.insert(set.getRef());
      lastWrite[set.getRef()] = set.getLoc();
      set.erase();
    } else if (auto swap = dyn_cast<RefSwapOp>(&op)) {
      swap.getResult().replaceAllUsesWith(valueOf(current, swap.getRef()));
      current[swap.getRef()] = swap.getValue();
      written.insert(swap.getRef());
      lastWrite[swap.getRef()] = swap.getLoc();
      swap.erase();
    } else if (auto add = dyn_cast<RefAddUpdateOp>(&op)) {
      OpBuilder b(add);
      Value old = valueOf(current, add.getRef());
      current[add.getRef()] =
          AddOp::create(b, add.getLoc(), old.getType(), old, add.getValue());
      written.insert(add.getRef());
      lastWrite[add.getRef()] = add.getLoc();
      add.erase();
    } else if (op.getNumRegions() && hasRefOps(&op)) {
      if (!isa<WhileOp, CaseOp>(&op))
        return op.emitOpError("holds ref ops (only ember.while and ember.case "
                              "regions may: ref_c2)");
      if (failed(threadRegions(&op, current)))
        return failure();
    }
  }
  return success();
}

/// A loop or conditional whose regions write refs is rebuilt with their
/// values threaded through it. A loop carries them: each written ref's value
/// before the loop is one more operand, both regions take it as one more
/// argument, the body yields its value after an iteration, and the loop's
/// extra result is its value after the loop (ref_c5: the condition writes
/// none). A conditional returns them: each branch yields the value it leaves
/// in each written ref (the value from above when it writes none). Refs
/// only read inside keep the value from above.
LogicalResult
RefThreading::threadRegions(Operation *op,
                            llvm::DenseMap<Value, Value> &current) {
  SmallVector<Value> refs = writtenInside(op);
  bool loop = isa<WhileOp>(op);
  unsigned n = op->getNumResults();
  SmallVector<Value> operands(op->getOperands());
  SmallVector<Type> types(op->getResultTypes());
  for (Value r : refs) {
    Value v = valueOf(current, r);
    if (loop)
      operands.push_back(v);
    types.push_back(v.getType());
  }
  OpBuilder b(op);
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  state.addTypes(types);
  state.addAttributes(op->getAttrs());
  for (unsigned i = 0; i < op->getNumRegions(); ++i)
    state.addRegion();
  Operation *rebuilt = b.create(state);
  for (auto [to, from] : llvm::zip(rebuilt->getRegions(), op->getRegions())) {
    to.takeBody(from);
    Block &block = to.front();
    llvm::DenseMap<Value, Value> inner = current;
    for (Value r : loop ? refs : SmallVector<Value>{})
      inner[r] = block.addArgument(valueOf(current, r).getType(), r.getLoc());
    if (failed(thread(block, inner)))
      return failure();
    if (loop && &to == &cast<WhileOp>(rebuilt).getCond())
      continue; // (yields the predicate only)
    Operation *yield = block.getTerminator();
    for (Value r : refs)
      yield->insertOperands(yield->getNumOperands(), inner[r]);
  }
  op->replaceAllUsesWith(rebuilt->getResults().take_front(n));
  op->erase();
  for (auto [i, r] : llvm::enumerate(refs)) {
    current[r] = rebuilt->getResult(n + i);
    written.insert(r);
  }
  return success();
}

LogicalResult
mlir::ember::threadRefsForTransform(Block &body, Operation *first,
                                    SmallVectorImpl<Value> &live) {
  bool any = false;
  for (Operation *o = first; o && !any; o = o->getNextNode())
    any = isRefOp(o) || (o->getNumRegions() && hasRefOps(o));
  if (!any)
    return success();
  Location loc = first->getLoc();
  OpBuilder b(first);
  // The reads on entry go before this marker (`first` may be a read, which
  // threading erases).
  Operation *anchor =
      UnrealizedConversionCastOp::create(b, loc, TypeRange{}, ValueRange{});
  // A temporary terminator holds `live`, which replacements update.
  b.setInsertionPointToEnd(&body);
  Operation *keep = func::ReturnOp::create(b, loc, live);
  RefThreading threading(body, anchor);
  llvm::DenseMap<Value, Value> current;
  LogicalResult result = threading.thread(body, current);
  if (succeeded(result)) {
    // One write of each written ref's last value, in the order of the reads
    // on entry (every ref written has one).
    b.setInsertionPoint(keep);
    for (Operation &o : body) {
      if (&o == anchor)
        break;
      auto get = dyn_cast<RefGetOp>(&o);
      if (!get || !threading.written.contains(get.getRef()))
        continue;
      Value last = current.lookup(get.getRef());
      if (last && last != get.getResult())
        RefSetOp::create(b, Location(threading.lastWrite.lookup(get.getRef())),
                         get.getRef(), last);
    }
  }
  live.assign(keep->getOperands().begin(), keep->getOperands().end());
  keep->erase();
  anchor->erase();
  return result;
}
