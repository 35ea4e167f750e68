//===- EmberPartition.cpp - SPMD partitioning over a shard.grid -----------===//
//
// A function whose arguments (or results) carry `ember.split_axes` becomes
// the program of one process of the module's `shard.grid`: MLIR's
// sharding-propagation and shard-partition do the work on the linalg ops
// they cover; this pass decides when they may run (upstream asserts on IR it
// does not cover), annotates the boundaries, and rewrites the resharding
// collectives they leave (`all_slice`, `all_gather`) into slices and
// `all_reduce`s, which convert-shard-to-mpi lowers. Functions the upstream
// passes cannot take keep the same calling convention (blocks in, whole or
// split results out) and compute on gathered arrays.
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERPARTITIONPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {
constexpr StringLiteral kSplitAttr = "ember.split_axes";
constexpr StringLiteral kPartitionAttr = "ember.partition";

/// Per tensor dimension, the grid axes it is split over.
using Split = SmallVector<SmallVector<shard::GridAxis>>;

bool isSplit(const Split &s) {
  return llvm::any_of(s, [](auto &axes) { return !axes.empty(); });
}

/// Reads `ember.split_axes` of a value of type `t`; an absent attribute is
/// no split. Checks the axes name grid axes, each at most once, and that
/// every split dimension divides evenly.
FailureOr<Split> readSplit(Attribute attr, Type type, shard::GridOp grid,
                           Operation *where, const Twine &what) {
  Split split;
  if (!attr)
    return split;
  auto t = dyn_cast<RankedTensorType>(type);
  auto dims = dyn_cast<ArrayAttr>(attr);
  if (!t || !t.hasStaticShape() || !dims ||
      (int64_t)dims.size() > t.getRank())
    return where->emitError() << what << ": `" << kSplitAttr
                              << "` needs a statically shaped tensor and an "
                                 "array of at most one axis list per "
                                 "dimension",
           failure();
  ArrayRef<int64_t> gridShape = grid.getShape();
  llvm::SmallBitVector used(gridShape.size());
  for (auto [d, entry] : llvm::enumerate(dims)) {
    auto axes = dyn_cast<ArrayAttr>(entry);
    if (!axes)
      return where->emitError() << what << ": dimension " << d
                                << " of `" << kSplitAttr
                                << "` is not an array of grid axes",
             failure();
    SmallVector<shard::GridAxis> list;
    int64_t parts = 1;
    for (Attribute a : axes) {
      auto i = dyn_cast<IntegerAttr>(a);
      if (!i || i.getInt() < 0 || i.getInt() >= (int64_t)gridShape.size() ||
          used.test(i.getInt()))
        return where->emitError()
                   << what << ": dimension " << d << " names grid axis " << a
                   << ", which grid @" << grid.getSymName()
                   << " lacks or another dimension uses",
               failure();
      used.set(i.getInt());
      list.push_back(i.getInt());
      parts *= gridShape[i.getInt()];
    }
    if (parts <= 0 || t.getDimSize(d) % parts)
      return where->emitError()
                 << what << ": dimension " << d << " of size "
                 << t.getDimSize(d) << " does not split evenly into " << parts
                 << " blocks",
             failure();
    split.push_back(std::move(list));
  }
  return split;
}

RankedTensorType localType(RankedTensorType t, const Split &split,
                           shard::GridOp grid) {
  SmallVector<int64_t> shape(t.getShape());
  for (auto [d, axes] : llvm::enumerate(split))
    for (shard::GridAxis a : axes)
      shape[d] /= grid.getShape()[a];
  return t.clone(shape);
}

/// This process's block number along `axes` (row-major over the listed
/// axes, the order all_gather concatenates blocks in).
Value blockIndex(OpBuilder &b, Location loc, shard::GridOp grid,
                 ArrayRef<shard::GridAxis> axes) {
  Value idx = arith::ConstantIndexOp::create(b, loc, 0);
  for (shard::GridAxis a : axes) {
    Value m = shard::ProcessMultiIndexOp::create(b, loc, grid.getSymName(),
                                                 ArrayRef<shard::GridAxis>{a})
                  .getResult()[0];
    Value size =
        arith::ConstantIndexOp::create(b, loc, grid.getShape()[a]);
    idx = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, idx, size), m);
  }
  return idx;
}

/// The block of `v` (of type `full`) this process holds along `dim`.
Value sliceBlock(OpBuilder &b, Location loc, shard::GridOp grid, Value v,
                 int64_t dim, ArrayRef<shard::GridAxis> axes,
                 RankedTensorType block) {
  Value idx = blockIndex(b, loc, grid, axes);
  Value offset = arith::MulIOp::create(
      b, loc, idx,
      arith::ConstantIndexOp::create(b, loc, block.getDimSize(dim)));
  int64_t rank = block.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
      sizes, strides(rank, b.getIndexAttr(1));
  offsets[dim] = offset;
  for (int64_t s : block.getShape())
    sizes.push_back(b.getIndexAttr(s));
  return tensor::ExtractSliceOp::create(b, loc, block, v, offsets, sizes,
                                        strides);
}

/// The integer type whose bits hold an element of `e` for the sum below
/// (i1 is widened to i8); null for elements that have none (complex).
IntegerType carrierType(Type e) {
  if (auto i = dyn_cast<IntegerType>(e))
    return IntegerType::get(e.getContext(), std::max(8u, i.getWidth()));
  if (auto f = dyn_cast<FloatType>(e))
    return IntegerType::get(e.getContext(), f.getWidth());
  return nullptr;
}

/// All blocks of `v` along `dim`, concatenated: each process writes its
/// block into zeros and the integer views are summed over `axes`, which is
/// exact whatever the element type (one process contributes each element).
FailureOr<Value> gatherBlocks(OpBuilder &b, Location loc, shard::GridOp grid,
                              Value v, int64_t dim,
                              ArrayRef<shard::GridAxis> axes,
                              RankedTensorType full, Operation *where) {
  auto block = cast<RankedTensorType>(v.getType());
  Type e = block.getElementType();
  IntegerType carrier = carrierType(e);
  if (!carrier)
    return where->emitError() << "ember-partition: cannot gather blocks of "
                              << e << " elements",
           failure();
  Value bits = v;
  auto blockBits = block.clone(carrier);
  if (isa<FloatType>(e))
    bits = arith::BitcastOp::create(b, loc, blockBits, v);
  else if (e != carrier)
    bits = arith::ExtUIOp::create(b, loc, blockBits, v);
  auto fullBits = full.clone(carrier);
  Value zeros = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(fullBits, b.getIntegerAttr(carrier, 0)));
  Value idx = blockIndex(b, loc, grid, axes);
  Value offset = arith::MulIOp::create(
      b, loc, idx,
      arith::ConstantIndexOp::create(b, loc, block.getDimSize(dim)));
  int64_t rank = block.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes,
      strides(rank, b.getIndexAttr(1));
  offsets[dim] = offset;
  for (int64_t s : block.getShape())
    sizes.push_back(b.getIndexAttr(s));
  Value placed = tensor::InsertSliceOp::create(b, loc, bits, zeros, offsets,
                                               sizes, strides);
  Value sum = shard::AllReduceOp::create(b, loc, placed, grid.getSymName(),
                                         axes, shard::ReductionKind::Sum);
  if (isa<FloatType>(e))
    return (Value)arith::BitcastOp::create(b, loc, full, sum);
  if (e != carrier)
    return (Value)arith::TruncIOp::create(b, loc, full, sum);
  return sum;
}

/// Whether upstream propagation and partitioning are known to handle every
/// op of `f`: constants, empties, and linalg structured ops on tensors whose
/// bodies read nothing but their block arguments and scalars (a captured
/// tensor would be read with global indices from a local block) and do not
/// ask for their iteration index (which becomes the block's).
bool partitionable(func::FuncOp f) {
  if (!f.getBody().hasOneBlock())
    return false;
  for (Operation &op : f.getBody().front()) {
    if (isa<func::ReturnOp, arith::ConstantOp, tensor::EmptyOp>(op))
      continue;
    auto l = dyn_cast<linalg::LinalgOp>(op);
    if (!l || !l.hasPureTensorSemantics())
      return false;
    for (Value v : op.getOperands()) {
      if (!isa<ShapedType>(v.getType()))
        continue;
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (!t || !t.hasStaticShape() || !carrierType(t.getElementType()))
        return false;
    }
    WalkResult r = op.walk([&](Operation *inner) {
      if (inner == &op)
        return WalkResult::advance();
      if (isa<linalg::IndexOp>(inner) || inner->getNumRegions())
        return WalkResult::interrupt();
      for (Value v : inner->getOperands())
        if (!op.isAncestor(v.getParentRegion()->getParentOp()) &&
            isa<ShapedType>(v.getType()))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      return false;
  }
  return true;
}

/// Every op that defines tensors has each result annotated for its own
/// sharding and each tensor operand annotated for its users: what
/// shard-partition expects (it asserts otherwise).
bool fullyAnnotated(func::FuncOp f) {
  for (Operation &op : f.getBody().front()) {
    if (isa<shard::ShardOp, shard::ShardingOp, func::ReturnOp>(op))
      continue;
    for (Value r : op.getResults()) {
      if (!isa<RankedTensorType>(r.getType()))
        continue;
      if (!llvm::any_of(r.getUsers(), [](Operation *u) {
            auto s = dyn_cast<shard::ShardOp>(u);
            return s && !s.getAnnotateForUsers();
          }))
        return false;
    }
    for (Value v : op.getOperands()) {
      if (!isa<RankedTensorType>(v.getType()))
        continue;
      auto s = v.getDefiningOp<shard::ShardOp>();
      if (!s || !s.getAnnotateForUsers())
        return false;
    }
  }
  return true;
}

Value makeSharding(OpBuilder &b, Location loc, shard::GridOp grid,
                   const Split &split, int64_t rank) {
  SmallVector<shard::GridAxesAttr> axes;
  for (int64_t d = 0; d < rank; ++d)
    axes.push_back(shard::GridAxesAttr::get(
        b.getContext(), d < (int64_t)split.size()
                            ? ArrayRef<shard::GridAxis>(split[d])
                            : ArrayRef<shard::GridAxis>{}));
  return shard::ShardingOp::create(b, loc, grid.getSymName(), axes);
}

/// Gives each use of a multiply used empty or constant tensor its own op:
/// propagation annotates a value once, and users sharded differently would
/// share it (upstream asserts on that).
void unshare(func::FuncOp f) {
  SmallVector<Operation *> ops;
  for (Operation &op : f.getBody().front())
    if (isa<tensor::EmptyOp, arith::ConstantOp>(op) &&
        isa<RankedTensorType>(op.getResult(0).getType()))
      ops.push_back(&op);
  for (Operation *op : ops) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &u : op->getUses())
      uses.push_back(&u);
    for (OpOperand *u : llvm::drop_begin(uses)) {
      OpBuilder b(u->getOwner());
      u->set(b.clone(*op)->getResult(0));
    }
  }
}

struct Boundary {
  SmallVector<Split> args, results;
};

/// Annotates the boundary of `f` for propagation: each argument with its
/// split for its users, each result with its own. Fails where upstream
/// would not cover `f`.
LogicalResult annotate(func::FuncOp f, shard::GridOp grid,
                       const Boundary &bd) {
  if (!partitionable(f))
    return failure();
  unshare(f);
  Block &entry = f.getBody().front();
  OpBuilder b(&entry, entry.begin());
  Location loc = f.getLoc();
  for (auto [i, arg] : llvm::enumerate(f.getArguments())) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t || arg.use_empty())
      continue;
    Value sh = makeSharding(b, loc, grid, bd.args[i], t.getRank());
    auto ann = shard::ShardOp::create(b, loc, arg, sh,
                                      /*annotate_for_users=*/true);
    arg.replaceAllUsesExcept(ann, ann);
  }
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  b.setInsertionPoint(ret);
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      continue;
    // A returned argument or annotation: copy it so the result has an op
    // of its own to annotate.
    if (isa<BlockArgument>(v) || v.getDefiningOp<shard::ShardOp>())
      return failure();
    Value sh = makeSharding(b, loc, grid, bd.results[i], t.getRank());
    auto ann = shard::ShardOp::create(b, loc, v, sh, false);
    ret->setOperand(i, ann);
  }
  return success();
}
} // namespace

namespace {
struct EmberPartitionPass
    : public mlir::ember::impl::EmberPartitionPassBase<EmberPartitionPass> {
  void runOnOperation() override;

  /// Rewrites all_gather / all_slice into what convert-shard-to-mpi takes.
  LogicalResult lowerResharding(func::FuncOp f, shard::GridOp grid);
  /// The gathered path: split arguments are gathered at the entry, split
  /// results sliced at the exit.
  LogicalResult gatherBoundary(func::FuncOp f, shard::GridOp grid,
                               const Boundary &bd);
  /// Annotate + propagate + partition; false when upstream cannot take `f`.
  bool trySpmd(func::FuncOp f, shard::GridOp grid, const Boundary &bd);
};

LogicalResult EmberPartitionPass::lowerResharding(func::FuncOp f,
                                                  shard::GridOp grid) {
  SmallVector<Operation *> ops;
  f.walk([&](Operation *op) {
    if (isa<shard::AllGatherOp, shard::AllSliceOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    Value r;
    if (auto g = dyn_cast<shard::AllGatherOp>(op)) {
      FailureOr<Value> v = gatherBlocks(
          b, loc, grid, g.getInput(), g.getGatherAxis().getSExtValue(),
          g.getGridAxes(), cast<RankedTensorType>(g.getType()), op);
      if (failed(v))
        return failure();
      r = *v;
    } else {
      auto s = cast<shard::AllSliceOp>(op);
      r = sliceBlock(b, loc, grid, s.getInput(),
                     s.getSliceAxis().getSExtValue(), s.getGridAxes(),
                     cast<RankedTensorType>(s.getType()));
    }
    op->getResult(0).replaceAllUsesWith(r);
    op->erase();
  }
  return success();
}

LogicalResult EmberPartitionPass::gatherBoundary(func::FuncOp f,
                                                 shard::GridOp grid,
                                                 const Boundary &bd) {
  Block &entry = f.getBody().front();
  OpBuilder b(&entry, entry.begin());
  Location loc = f.getLoc();
  SmallVector<Type> inputs(f.getArgumentTypes()), outputs(f.getResultTypes());
  for (auto [i, arg] : llvm::enumerate(f.getArguments())) {
    if (!isSplit(bd.args[i]))
      continue;
    auto full = cast<RankedTensorType>(arg.getType());
    auto block = localType(full, bd.args[i], grid);
    arg.setType(block);
    inputs[i] = block;
    // Gather dimension by dimension: each step widens one dimension.
    SmallVector<OpOperand *> uses;
    for (OpOperand &u : arg.getUses())
      uses.push_back(&u);
    Value v = arg;
    SmallVector<int64_t> shape(block.getShape());
    for (auto [d, axes] : llvm::enumerate(bd.args[i])) {
      if (axes.empty())
        continue;
      shape[d] = full.getDimSize(d);
      FailureOr<Value> g =
          gatherBlocks(b, loc, grid, v, d, axes, full.clone(shape), f);
      if (failed(g))
        return failure();
      v = *g;
    }
    for (OpOperand *u : uses)
      u->set(v);
  }
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  b.setInsertionPoint(ret);
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (!isSplit(bd.results[i]))
      continue;
    auto full = cast<RankedTensorType>(v.getType());
    Value cur = v;
    SmallVector<int64_t> shape(full.getShape());
    for (auto [d, axes] : llvm::enumerate(bd.results[i])) {
      if (axes.empty())
        continue;
      for (shard::GridAxis a : axes)
        shape[d] /= grid.getShape()[a];
      cur = sliceBlock(b, loc, grid, cur, d, axes, full.clone(shape));
    }
    ret->setOperand(i, cur);
    outputs[i] = cur.getType();
  }
  f.setFunctionType(FunctionType::get(f.getContext(), inputs, outputs));
  return success();
}

bool EmberPartitionPass::trySpmd(func::FuncOp f, shard::GridOp grid,
                                 const Boundary &bd) {
  if (failed(annotate(f, grid, bd)))
    return false;
  OpPassManager propagate(func::FuncOp::getOperationName());
  shard::ShardingPropagationOptions o;
  o.traversal = shard::TraversalOrder::ForwardBackward;
  propagate.addPass(shard::createShardingPropagation(o));
  if (failed(runPipeline(propagate, f)) || !fullyAnnotated(f))
    return false;
  OpPassManager partition(func::FuncOp::getOperationName());
  partition.addPass(shard::createPartition());
  partition.addPass(createCanonicalizerPass());
  if (failed(runPipeline(partition, f)))
    return false;
  bool left = false;
  f.walk([&](Operation *op) {
    if (op->getDialect() && isa<shard::ShardDialect>(op->getDialect()) &&
        !isa<shard::AllReduceOp, shard::AllGatherOp, shard::AllSliceOp,
             shard::ProcessMultiIndexOp, shard::ProcessLinearIndexOp,
             shard::GridShapeOp>(op))
      left = true;
  });
  return !left;
}

void EmberPartitionPass::runOnOperation() {
  ModuleOp m = getOperation();
  SmallVector<shard::GridOp> grids(m.getOps<shard::GridOp>());
  SmallVector<func::FuncOp> funcs;
  for (func::FuncOp f : m.getOps<func::FuncOp>()) {
    bool marked = false;
    for (unsigned i = 0; i < f.getNumArguments(); ++i)
      marked |= (bool)f.getArgAttr(i, kSplitAttr);
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      marked |= (bool)f.getResultAttr(i, kSplitAttr);
    if (marked)
      funcs.push_back(f);
  }
  if (funcs.empty())
    return;
  if (grids.size() != 1) {
    m.emitError() << "ember-partition: `" << kSplitAttr
                  << "` needs exactly one shard.grid in the module, found "
                  << grids.size();
    return signalPassFailure();
  }
  shard::GridOp grid = grids.front();
  if (!grid.getShape().empty() &&
      llvm::any_of(grid.getShape(), [](int64_t s) { return s <= 0; })) {
    grid.emitError() << "ember-partition: the grid needs a static shape";
    return signalPassFailure();
  }
  for (func::FuncOp f : funcs) {
    if (f.isExternal()) {
      f.emitError() << "ember-partition: `" << kSplitAttr
                    << "` on a function without a body";
      return signalPassFailure();
    }
    Boundary bd;
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      FailureOr<Split> s =
          readSplit(f.getArgAttr(i, kSplitAttr), f.getArgumentTypes()[i],
                    grid, f, "argument " + Twine(i));
      if (failed(s))
        return signalPassFailure();
      bd.args.push_back(*s);
      f.removeArgAttr(i, StringAttr::get(&getContext(), kSplitAttr));
    }
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      FailureOr<Split> s =
          readSplit(f.getResultAttr(i, kSplitAttr), f.getResultTypes()[i],
                    grid, f, "result " + Twine(i));
      if (failed(s))
        return signalPassFailure();
      bd.results.push_back(*s);
      f.removeResultAttr(i, StringAttr::get(&getContext(), kSplitAttr));
    }
    // Upstream passes run on a copy; the original stays for the gathered
    // path if they cannot take it.
    OpBuilder b(f);
    auto copy = cast<func::FuncOp>(b.clone(*f));
    std::string name = f.getName().str();
    copy.setName(name + ".ember_partition");
    StringRef how = "spmd";
    if (trySpmd(copy, grid, bd)) {
      f.erase();
      copy.setName(name);
      f = copy;
    } else {
      copy.erase();
      if (failed(gatherBoundary(f, grid, bd)))
        return signalPassFailure();
      how = "gathered";
    }
    if (failed(lowerResharding(f, grid)))
      return signalPassFailure();
    f->setAttr(kPartitionAttr, StringAttr::get(&getContext(), how));
  }
}
} // namespace
