//===- LowerRefs.cpp - ref arguments become buffers updated in place ------===//
//
// A function's `!ember.ref<T>` argument becomes a `memref` argument that the
// compiled code reads and writes in place (JAX's Ref passed to or closed over
// by a jitted function). Two steps:
//
// 1. `normalizeRefs` (before the conversion) threads each ref's value through
//    the function body in program order: every read becomes the value last
//    written, `ref_addupdate` an `ember.add`, so that one `ref_get` at the
//    entry (the value on entry) and one `ref_set` before the return (the
//    value on exit, for refs written) remain. A loop or conditional whose
//    regions write a ref carries its value as one more operand and result
//    (`RefThreading`); bufferization then updates the loop's carry, and so
//    the ref's buffer, in place.
// 2. The patterns lower that pair: the get is `bufferization.to_tensor
//    restrict` of the buffer (`writable` when the ref is written), the set a
//    `materialize_in_destination` into that tensor, which bufferization must
//    do in place (so empty-tensor elimination computes the final value in the
//    ref's buffer when it can), followed by one into the buffer itself (a
//    self-copy that canonicalization removes; it keeps the write alive).
//
// The writes into the buffers come last, after every in-place computation.
// 3. `copyRefAliases` (after the conversion): results, and values written
//    into another ref, that may share a written ref's buffer are copied
//    (`bufferization.alloc_tensor copy`, which no canonicalization removes)
//    before the first write.
//===----------------------------------------------------------------------===//
#include "EmberToLinalgCommon.h"
#include "ember/IR/EmberRefs.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::ember;

/// On a normalized `ref_set` whose value is computed outside the ref's
/// buffer and copied in.
static constexpr llvm::StringLiteral kRefCopyAttr = "ember.ref_copy";

/// `v` and the values computed from it that bufferization may place in its
/// buffer: views (reshapes, slices, identities), in-place updates of it,
/// and results of control flow and of ops that may write their operand's
/// buffer.
static SmallVector<Value> mayShareBuffer(Value v) {
  SmallVector<Value> out = {v};
  for (size_t i = 0; i < out.size(); ++i)
    for (Operation *use : out[i].getUsers()) {
      // (A use inside a loop or conditional: the op in `v`'s block.)
      Operation *user = out[i].getParentBlock()->findAncestorOpInBlock(*use);
      if (!user ||
          !isa<ReshapeOp, SliceOp, DynamicSliceOp, DynamicUpdateSliceOp,
               ScatterOp, StopGradientOp, CheckpointNameOp,
               OptimizationBarrierOp, ConvertOp, BitcastConvertOp,
               BroadcastInDimOp, TransposeOp, ReverseOp, PadOp, SortOp,
               CumulativeOp, WhileOp, CaseOp>(user))
        continue;
      for (Value r : user->getResults())
        if (!llvm::is_contained(out, r))
          out.push_back(r);
    }
  return out;
}

LogicalResult mlir::ember::normalizeRefs(ModuleOp module) {
  WalkResult result = module.walk([](func::FuncOp f) {
    if (f.isExternal())
      return WalkResult::advance();
    Block &entry = f.getBody().front();
    SmallVector<BlockArgument> refs;
    for (BlockArgument a : entry.getArguments())
      if (isa<RefType>(a.getType()))
        refs.push_back(a);
    if (refs.empty())
      return WalkResult::advance();
    // Only the ref ops may use a ref: a call passing it on would write the
    // buffer behind this function's threaded values.
    for (BlockArgument r : refs)
      for (Operation *user : r.getUsers())
        if (!isRefOp(user)) {
          user->emitOpError("uses a ref argument of '")
              << f.getSymName()
              << "': only ember.ref_get, ref_set, ref_swap and ref_addupdate "
                 "may (ember-to-linalg)";
          return WalkResult::interrupt();
        }
    RefThreading threading(entry);
    llvm::DenseMap<Value, Value> current;
    if (failed(threading.thread(entry, current)))
      return WalkResult::interrupt();
    auto &written = threading.written;
    auto entryValue = [&](Value ref) { return threading.entryValue(ref); };
    Operation *ret = entry.getTerminator();
    OpBuilder b(ret);
    for (BlockArgument r : refs) {
      if (!written.contains(r))
        continue;
      Value init = entryValue(r), last = current[r];
      if (last == init)
        continue; // (written back unchanged)
      auto set = RefSetOp::create(b, r.getLoc(), r, last);
      // The last value is computed in the ref's buffer when nothing that
      // may share the buffer of the value on entry is read after the op
      // that computes it, or returned; otherwise it is computed elsewhere
      // and copied in (bufferization cannot resolve that conflict once the
      // computation writes the buffer).
      Operation *def = last.getDefiningOp();
      bool inPlace = def && def->getBlock() == &entry;
      SmallVector<Value> shared =
          inPlace ? mayShareBuffer(init) : SmallVector<Value>{};
      // A conditional whose branches yield the buffer itself in one and a
      // value computed elsewhere in another may or may not be the buffer:
      // bufferization cannot write it there in place, so it is copied in.
      if (isa_and_nonnull<CaseOp>(def) && llvm::is_contained(shared, last))
        inPlace = false;
      for (Value v : inPlace ? shared : SmallVector<Value>{})
        for (OpOperand &use : v.getUses()) {
          Operation *user = entry.findAncestorOpInBlock(*use.getOwner());
          if (user != set && (user == ret || def->isBeforeInBlock(user)))
            inPlace = false;
        }
      if (!inPlace)
        set->setAttr(kRefCopyAttr, b.getUnitAttr());
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

namespace {

struct RefGetLowering : public OpConversionPattern<RefGetOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RefGetOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    bool writtenLater = llvm::any_of(
        op.getRef().getUsers(), [](Operation *u) { return isa<RefSetOp>(u); });
    auto type = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    rewriter.replaceOpWithNewOp<bufferization::ToTensorOp>(
        op, type, adaptor.getRef(), /*restrict=*/true,
        /*writable=*/writtenLater);
    return success();
  }
};

struct RefSetLowering : public OpConversionPattern<RefSetOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RefSetOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value buffer = adaptor.getRef();
    bufferization::ToTensorOp entry;
    for (Operation *u : buffer.getUsers())
      if (auto t = dyn_cast<bufferization::ToTensorOp>(u))
        entry = t;
    if (!entry)
      return rewriter.notifyMatchFailure(op, "the ref's entry read is missing "
                                             "(run normalizeRefs first)");
    Location loc = op.getLoc();
    Value value = adaptor.getValue();
    if (!op->hasAttr(kRefCopyAttr))
      value = bufferization::MaterializeInDestinationOp::create(
                  rewriter, loc, value, entry.getResult())
                  .getResult();
    // (Every ref's buffer is written after every in-place computation: a
    // ref's new value may read another ref's value on entry.)
    rewriter.setInsertionPoint(op->getBlock()->getTerminator());
    bufferization::MaterializeInDestinationOp::create(
        rewriter, loc, TypeRange{}, value, buffer, /*restrict=*/false,
        /*writable=*/true);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::ember::populateRefLoweringPatterns(const TypeConverter &converter,
                                              RewritePatternSet &patterns) {
  patterns.add<RefGetLowering, RefSetLowering>(converter,
                                               patterns.getContext());
}

/// Copies what may share a written ref's buffer with the value it held on
/// entry and is returned or written into a ref (see the file comment).
static void copyRefAliases(func::FuncOp f) {
  SmallVector<bufferization::MaterializeInDestinationOp> writes;
  llvm::DenseMap<Value, Value> entryOf; // written buffer -> its entry tensor
  f.walk([&](bufferization::MaterializeInDestinationOp m) {
    Value buffer = m.getDest();
    if (auto entry = buffer.getDefiningOp<bufferization::ToTensorOp>())
      buffer = entry.getBuffer();
    if (!isa<BlockArgument>(buffer) || !isa<BaseMemRefType>(buffer.getType()))
      return;
    writes.push_back(m);
    for (Operation *u : buffer.getUsers())
      if (auto t = dyn_cast<bufferization::ToTensorOp>(u))
        entryOf[buffer] = t.getResult();
  });
  if (writes.empty())
    return;
  // The ops computing from each written ref's value on entry, and the ops
  // holding them (a loop or conditional yielding what was computed inside
  // may yield the buffer itself).
  llvm::DenseMap<Value, llvm::DenseSet<Operation *>> slices;
  for (auto [buffer, entry] : entryOf) {
    llvm::DenseSet<Operation *> &slice = slices[entry];
    SmallVector<Value> work = {entry};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers())
        for (Operation *op = user; op && op != f.getOperation();
             op = op->getParentOp())
          if (slice.insert(op).second)
            llvm::append_range(work, op->getResults());
    }
  }
  auto fromEntry = [&](Value v, Value except) {
    for (auto &[entry, slice] : slices)
      if (entry != except &&
          (v == entry ||
           (v.getDefiningOp() && slice.contains(v.getDefiningOp()))))
        return true;
    return false;
  };
  Operation *first = writes.front();
  for (auto m : writes)
    if (m->isBeforeInBlock(first))
      first = m;
  OpBuilder b(first);
  auto copy = [&](OpOperand &operand) {
    Value v = operand.get();
    operand.set(bufferization::AllocTensorOp::create(
        b, v.getLoc(), cast<RankedTensorType>(v.getType()), ValueRange{}, v));
  };
  for (auto m : writes) {
    // (A write of what was written in place reads the ref's own buffer.)
    if (m.getSource()
            .getDefiningOp<bufferization::MaterializeInDestinationOp>())
      continue;
    // A ref's new value may be computed from its own value on entry
    // (bufferization orders the two: only this write changes the buffer).
    Value buffer = m.getDest();
    if (auto entry = buffer.getDefiningOp<bufferization::ToTensorOp>())
      buffer = entry.getBuffer();
    if (fromEntry(m.getSource(), entryOf.lookup(buffer)))
      copy(m.getSourceMutable());
  }
  f.walk([&](func::ReturnOp ret) {
    for (OpOperand &operand : ret->getOpOperands())
      if (isa<RankedTensorType>(operand.get().getType()) &&
          fromEntry(operand.get(), Value()))
        copy(operand);
  });
}

void mlir::ember::copyRefAliases(ModuleOp module) {
  module.walk([](func::FuncOp f) {
    if (!f.isExternal())
      ::copyRefAliases(f);
  });
}
