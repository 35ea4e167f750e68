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
#include "ember/IR/EmberDialect.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERPARTITIONPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {
constexpr StringLiteral kSplitAttr = ember::kSplitAxesAttr;
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
  if (!t || !t.hasStaticShape() || !dims || (int64_t)dims.size() > t.getRank())
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
      return where->emitError()
                 << what << ": dimension " << d << " of `" << kSplitAttr
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
    Value size = arith::ConstantIndexOp::create(b, loc, grid.getShape()[a]);
    idx = arith::AddIOp::create(b, loc,
                                arith::MulIOp::create(b, loc, idx, size), m);
  }
  return idx;
}

/// Where this process's block (of type `block`, split along `dim` over
/// `axes`) lies in the whole array: offsets, sizes and strides.
struct BlockWindow {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};
BlockWindow blockWindow(OpBuilder &b, Location loc, shard::GridOp grid,
                        int64_t dim, ArrayRef<shard::GridAxis> axes,
                        RankedTensorType block) {
  int64_t rank = block.getRank();
  BlockWindow w{SmallVector<OpFoldResult>(rank, b.getIndexAttr(0)),
                {},
                SmallVector<OpFoldResult>(rank, b.getIndexAttr(1))};
  w.offsets[dim] = arith::MulIOp::create(b, loc, blockIndex(b, loc, grid, axes),
                                         arith::ConstantIndexOp::create(
                                             b, loc, block.getDimSize(dim)))
                       .getResult();
  for (int64_t s : block.getShape())
    w.sizes.push_back(b.getIndexAttr(s));
  return w;
}

/// The block of `v` (of type `full`) this process holds along `dim`.
Value sliceBlock(OpBuilder &b, Location loc, shard::GridOp grid, Value v,
                 int64_t dim, ArrayRef<shard::GridAxis> axes,
                 RankedTensorType block) {
  BlockWindow w = blockWindow(b, loc, grid, dim, axes, block);
  return tensor::ExtractSliceOp::create(b, loc, block, v, w.offsets, w.sizes,
                                        w.strides);
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

/// `type` computed element by element from `vs` (a linalg loop: arith casts
/// of whole tensors do not bufferize).
Value mapElements(OpBuilder &b, Location loc, ValueRange vs,
                  RankedTensorType type,
                  function_ref<Value(OpBuilder &, Location, ValueRange)> fn) {
  int64_t rank = type.getRank();
  SmallVector<AffineMap> maps(vs.size() + 1, b.getMultiDimIdentityMap(rank));
  Value init =
      tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  return linalg::GenericOp::create(
             b, loc, type, vs, init, maps,
             SmallVector<utils::IteratorType>(rank,
                                              utils::IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, fn(nb, l, args.drop_back()));
             })
      .getResult(0);
}

/// All blocks of `v` along `dim`, concatenated: each process writes its
/// block into zeros and the integer views are summed over `axes`, which is
/// exact whatever the element type (one process contributes each element;
/// complex numbers part by part).
FailureOr<Value> gatherBlocks(OpBuilder &b, Location loc, shard::GridOp grid,
                              Value v, int64_t dim,
                              ArrayRef<shard::GridAxis> axes,
                              RankedTensorType full, Operation *where) {
  auto block = cast<RankedTensorType>(v.getType());
  Type e = block.getElementType();
  if (auto c = dyn_cast<ComplexType>(e)) {
    // The real and imaginary parts apart.
    Type part = c.getElementType();
    auto take = [&](bool imag) -> FailureOr<Value> {
      Value p =
          mapElements(b, loc, v, block.clone(part),
                      [&](OpBuilder &nb, Location l, ValueRange x) -> Value {
                        if (imag)
                          return complex::ImOp::create(nb, l, x[0]);
                        return complex::ReOp::create(nb, l, x[0]);
                      });
      return gatherBlocks(b, loc, grid, p, dim, axes, full.clone(part), where);
    };
    FailureOr<Value> re = take(false), im = take(true);
    if (failed(re) || failed(im))
      return failure();
    return mapElements(b, loc, ValueRange{*re, *im}, full,
                       [&](OpBuilder &nb, Location l, ValueRange x) -> Value {
                         return complex::CreateOp::create(nb, l, e, x[0], x[1]);
                       });
  }
  IntegerType carrier = carrierType(e);
  if (!carrier)
    return where->emitError() << "ember-partition: cannot gather blocks of "
                              << e << " elements",
           failure();
  Value bits = v;
  auto blockBits = block.clone(carrier);
  if (isa<FloatType>(e) || e != carrier)
    bits =
        mapElements(b, loc, v, blockBits,
                    [&](OpBuilder &nb, Location l, ValueRange x) -> Value {
                      if (isa<FloatType>(e))
                        return arith::BitcastOp::create(nb, l, carrier, x[0]);
                      return arith::ExtUIOp::create(nb, l, carrier, x[0]);
                    });
  auto fullBits = full.clone(carrier);
  Value zeros = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(fullBits, b.getIntegerAttr(carrier, 0)));
  BlockWindow w = blockWindow(b, loc, grid, dim, axes, block);
  Value placed = tensor::InsertSliceOp::create(b, loc, bits, zeros, w.offsets,
                                               w.sizes, w.strides);
  Value sum = shard::AllReduceOp::create(b, loc, placed, grid.getSymName(),
                                         axes, shard::ReductionKind::Sum);
  if (!isa<FloatType>(e) && e == carrier)
    return sum;
  return mapElements(b, loc, sum, full,
                     [&](OpBuilder &nb, Location l, ValueRange x) -> Value {
                       if (isa<FloatType>(e))
                         return arith::BitcastOp::create(nb, l, e, x[0]);
                       return arith::TruncIOp::create(nb, l, e, x[0]);
                     });
}

/// Whether upstream partitioning can split the reduction loops of `l`, if
/// any: one init, combined by one op whose kind and neutral element it
/// knows, of the result's element type (it asserts otherwise).
bool reductionCovered(linalg::LinalgOp l) {
  if (l.getNumReductionLoops() == 0)
    return true;
  if (l.getNumDpsInits() != 1 || l->getNumResults() != 1)
    return false;
  SmallVector<Operation *> combiners;
  if (!matchReduction(l.getRegionOutputArgs(), 0, combiners) ||
      combiners.size() != 1)
    return false;
  Operation *c = combiners[0];
  if (!isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp,
           arith::AddIOp, arith::MulIOp, arith::OrIOp, arith::XOrIOp,
           arith::AndIOp, arith::MaxSIOp, arith::MinSIOp>(c) ||
      !arith::getNeutralElement(c))
    return false;
  return getElementTypeOrSelf(l->getResult(0).getType()) ==
         c->getResult(0).getType();
}

/// The product of a contraction loop nest's two operands, where its body
/// is `out + a * b` (one FMA, or a multiplication and an addition); null
/// otherwise.
math::FmaOp contractionFma(linalg::GenericOp g) {
  Block &body = g.getRegion().front();
  if (g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 ||
      body.getOperations().size() != 2)
    return nullptr;
  auto fma = dyn_cast<math::FmaOp>(&body.front());
  if (!fma || fma.getA() != body.getArgument(0) ||
      fma.getB() != body.getArgument(1) || fma.getC() != body.getArgument(2) ||
      body.getTerminator()->getOperand(0) != fma.getResult())
    return nullptr;
  return fma;
}

bool isMulAdd(linalg::GenericOp g) {
  Block &body = g.getRegion().front();
  if (g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 ||
      body.getOperations().size() != 3)
    return false;
  auto mul = dyn_cast<arith::MulFOp>(&body.front());
  auto add = dyn_cast<arith::AddFOp>(mul ? mul->getNextNode() : nullptr);
  if (!mul || !add || mul.getLhs() != body.getArgument(0) ||
      mul.getRhs() != body.getArgument(1) ||
      body.getTerminator()->getOperand(0) != add.getResult())
    return false;
  return (add.getLhs() == mul.getResult() &&
          add.getRhs() == body.getArgument(2)) ||
         (add.getRhs() == mul.getResult() &&
          add.getLhs() == body.getArgument(2));
}

/// Contraction loop nests accumulate with FMAs, a combiner upstream
/// partitioning does not know: they multiply and add instead (the products
/// go to the GEMM afterwards, raiseContractions).
void splitFmas(func::FuncOp f) {
  f.walk([](linalg::GenericOp g) {
    math::FmaOp fma = contractionFma(g);
    if (!fma || g.getNumReductionLoops() == 0)
      return;
    OpBuilder b(fma);
    Value p = arith::MulFOp::create(b, fma.getLoc(), fma.getA(), fma.getB());
    Value s = arith::AddFOp::create(b, fma.getLoc(), fma.getC(), p);
    fma.getResult().replaceAllUsesWith(s);
    fma.erase();
  });
}

/// Whether upstream propagation and partitioning are known to handle every
/// op of `f`: constants, empties, and linalg structured ops on tensors whose
/// bodies read nothing but their block arguments and scalars (a captured
/// tensor would be read with global indices from a local block).
bool partitionable(func::FuncOp f) {
  if (!f.getBody().hasOneBlock())
    return false;
  for (Operation &op : f.getBody().front()) {
    if (isa<func::ReturnOp, arith::ConstantOp, tensor::EmptyOp>(op))
      continue;
    auto l = dyn_cast<linalg::LinalgOp>(op);
    if (!l || !l.hasPureTensorSemantics() ||
        !llvm::all_of(l.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isProjectedPermutation(); }))
      return false;
    if (!reductionCovered(l))
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
      if (inner->getNumRegions())
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

/// The split axes of the `shard.shard` annotating result `r` for itself,
/// or null.
std::optional<SmallVector<shard::GridAxesAttr>> resultSplit(Value r) {
  for (Operation *u : r.getUsers())
    if (auto s = dyn_cast<shard::ShardOp>(u))
      if (!s.getAnnotateForUsers())
        if (auto def = s.getSharding().getDefiningOp<shard::ShardingOp>())
          return SmallVector<shard::GridAxesAttr>(def.getSplitAxes().getAxes());
  return std::nullopt;
}

/// Whether a linalg op that asks for its iteration index along some loops
/// keeps those loops whole: a split loop would count from 0 in every block.
bool indicesStayGlobal(linalg::LinalgOp l) {
  SmallVector<int64_t> dims;
  l->walk([&](linalg::IndexOp i) { dims.push_back(i.getDim()); });
  if (dims.empty())
    return true;
  if (l->getNumResults() != 1)
    return false;
  auto split = resultSplit(l->getResult(0));
  if (!split)
    return false;
  AffineMap out = l.getIndexingMapMatchingResult(l->getResult(0));
  for (int64_t d : dims) {
    std::optional<unsigned> p =
        out.getResultPosition(getAffineDimExpr(d, l->getContext()));
    if (!p)
      return false;
    if (*p < split->size() && !(*split)[*p].empty())
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
    if (auto l = dyn_cast<linalg::LinalgOp>(op); l && !indicesStayGlobal(l))
      return false;
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

/// Whether shard-partition would reshard a value for some user (a user's
/// annotation differing from the value's own), which upstream does on
/// one-dimensional grids only (it asserts on others).
bool reshards(func::FuncOp f) {
  bool found = false;
  f.walk([&](shard::ShardOp use) {
    auto def = use.getSrc().getDefiningOp<shard::ShardOp>();
    if (use.getAnnotateForUsers() && def && !def.getAnnotateForUsers() &&
        shard::Sharding(def.getSharding()) !=
            shard::Sharding(use.getSharding()))
      found = true;
  });
  return found;
}

/// Gives each use of a multiply used empty or constant tensor its own op,
/// so that each takes the sharding its one user asks for (propagate).
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

/// Whether `v` is all zeros: a zero-filled or zero-splat tensor.
bool isZeros(Value v) {
  if (auto fill = v.getDefiningOp<linalg::FillOp>())
    return matchPattern(fill.getInputs()[0], m_AnyZeroFloat());
  DenseElementsAttr d;
  return matchPattern(v, m_Constant(&d)) && d.isSplat() &&
         isa<FloatType>(d.getElementType()) &&
         d.getSplatValue<APFloat>().isZero();
}

/// The contraction loop nests of `f` (f32/f64 `linalg.generic`s of two
/// operands whose body is one FMA, as ember-to-linalg lowers a product it
/// does not give to the GEMM, or a multiplication and an addition, as
/// splitFmas leaves it) become `ember.dot_general` again (plus their
/// initial value where it is not zeros), for ember-to-linalg to give to the
/// runtime's GEMM. Returns whether any was raised.
bool raiseContractions(func::FuncOp f) {
  SmallVector<linalg::GenericOp> generics;
  f.walk([&](linalg::GenericOp g) { generics.push_back(g); });
  bool raised = false;
  for (linalg::GenericOp g : generics) {
    if (g.getNumDpsInputs() != 2 || g.getNumDpsInits() != 1 ||
        g->getNumResults() != 1 || !g.hasPureTensorSemantics())
      continue;
    Value lhs = g.getDpsInputs()[0], rhs = g.getDpsInputs()[1];
    Value init = g.getDpsInits()[0];
    auto out = cast<RankedTensorType>(g->getResult(0).getType());
    Type e = out.getElementType();
    if (!(e.isF32() || e.isF64()) || getElementTypeOrSelf(lhs) != e ||
        getElementTypeOrSelf(rhs) != e)
      continue;
    if (!contractionFma(g) && !isMulAdd(g))
      continue;
    // Each loop's position in the operands and the result (-1: absent).
    int64_t n = g.getNumLoops();
    SmallVector<AffineMap> maps = g.getIndexingMapsArray();
    SmallVector<SmallVector<int64_t>> pos(3, SmallVector<int64_t>(n, -1));
    bool plain = true;
    for (int k = 0; k < 3 && plain; ++k)
      for (auto [i, r] : llvm::enumerate(maps[k].getResults())) {
        auto d = dyn_cast<AffineDimExpr>(r);
        if (!d || pos[k][d.getPosition()] >= 0) {
          plain = false;
          break;
        }
        pos[k][d.getPosition()] = i;
      }
    if (!plain)
      continue;
    SmallVector<int64_t> batch, lFree, rFree, lc, rc;
    SmallVector<utils::IteratorType> iters = g.getIteratorTypesArray();
    for (int64_t d = 0; d < n && plain; ++d) {
      bool inL = pos[0][d] >= 0, inR = pos[1][d] >= 0, inO = pos[2][d] >= 0;
      if (iters[d] == utils::IteratorType::reduction) {
        plain = inL && inR && !inO;
        lc.push_back(pos[0][d]);
        rc.push_back(pos[1][d]);
      } else if (!inO) {
        plain = false;
      } else if (inL && inR) {
        batch.push_back(d);
      } else if (inL) {
        lFree.push_back(d);
      } else if (inR) {
        rFree.push_back(d);
      } else {
        plain = false;
      }
    }
    if (!plain || lc.empty())
      continue;
    // dot_general's result: the batch dimensions, then the left operand's
    // free ones in its order, then the right's.
    auto by = [&](int k) {
      return [&, k](int64_t a, int64_t b) { return pos[k][a] < pos[k][b]; };
    };
    llvm::sort(batch, by(2));
    llvm::sort(lFree, by(0));
    llvm::sort(rFree, by(1));
    SmallVector<int64_t> order(batch);
    order.append(lFree);
    order.append(rFree);
    if (!llvm::all_of(llvm::enumerate(order), [&](auto p) {
          return pos[2][p.value()] == (int64_t)p.index();
        }))
      continue;
    SmallVector<int64_t> lb, rb;
    for (int64_t d : batch) {
      lb.push_back(pos[0][d]);
      rb.push_back(pos[1][d]);
    }
    OpBuilder b(g);
    Location loc = g.getLoc();
    Value dot = ember::DotGeneralOp::create(
        b, loc, out, lhs, rhs, b.getDenseI64ArrayAttr(lb),
        b.getDenseI64ArrayAttr(rb), b.getDenseI64ArrayAttr(lc),
        b.getDenseI64ArrayAttr(rc), /*precision=*/nullptr);
    if (!isZeros(init))
      dot = ember::AddOp::create(b, loc, dot, init);
    g->getResult(0).replaceAllUsesWith(dot);
    g.erase();
    raised = true;
  }
  return raised;
}

struct Boundary {
  SmallVector<Split> args, results;
};

/// The sharding `split` describes on `grid`.
shard::Sharding shardingOf(shard::GridOp grid, const Split &split) {
  MLIRContext *ctx = grid.getContext();
  SmallVector<shard::GridAxesAttr> axes;
  int64_t n = split.size();
  while (n > 0 && split[n - 1].empty())
    --n;
  for (int64_t d = 0; d < n; ++d)
    axes.push_back(shard::GridAxesAttr::get(ctx, split[d]));
  return shard::Sharding::get(FlatSymbolRefAttr::get(grid.getSymNameAttr()),
                              axes);
}

bool isCreator(Operation *op) {
  return op && isa<tensor::EmptyOp, arith::ConstantOp>(op);
}

/// A fill of a creator used once: like a creator, it takes the sharding its
/// user asks for (the zeros a product accumulates into, say).
bool isLazyFill(Operation *op) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op);
  return fill && fill->getResult(0).hasOneUse() &&
         isCreator(fill.getOutputs()[0].getDefiningOp()) &&
         fill.getOutputs()[0].hasOneUse();
}

/// A broadcast of scalars into a creator used once (a generic without
/// reductions or iteration indices whose inputs are 0-d tensors, as
/// ember-to-linalg writes a constant broadcast): like a lazy fill, each
/// device computes the block its user asks for instead of the whole array,
/// sliced. (An iota, asking for its indices, stays whole and sliced: a
/// split one would count from 0 in every block.)
bool isLazyBroadcast(Operation *op) {
  auto g = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!g || g->getNumResults() != 1 || !g->getResult(0).hasOneUse() ||
      g.getNumDpsInits() != 1 || g.getNumReductionLoops() != 0 ||
      !g.getBody()->getOps<linalg::IndexOp>().empty())
    return false;
  Value init = g.getDpsInits()[0];
  if (!isCreator(init.getDefiningOp()) || !init.hasOneUse())
    return false;
  return llvm::all_of(g.getDpsInputOperands(), [](OpOperand *in) {
    auto t = dyn_cast<RankedTensorType>(in->get().getType());
    return !t || t.getRank() == 0;
  });
}

bool isLazy(Operation *op) { return isLazyFill(op) || isLazyBroadcast(op); }

/// Propagates shardings forward from the arguments' through `f` and
/// annotates every tensor value for its definition and every tensor
/// operand for its user, as shard-partition expects. Each op's sharding is
/// what its ShardingInterface derives from its operands' (the methods
/// MLIR's sharding-propagation calls); where they conflict, the first
/// sharded operand decides, and where nothing is known the op is
/// replicated. MLIR's own sharding-propagation pass is not used: it asserts
/// when the users of one value ask for different shardings (the
/// data-parallel MLP step does). Creators (empties, splat constants, and
/// fills or broadcasts of scalars into them) take the sharding their one
/// user asks for. Fails where an op lacks the interface.
LogicalResult propagate(func::FuncOp f, shard::GridOp grid,
                        const Boundary &bd) {
  Block &entry = f.getBody().front();
  DenseMap<Value, shard::Sharding> defined;
  SmallVector<Value> order;
  auto define = [&](Value v, const shard::Sharding &s) {
    if (defined.try_emplace(v, s).second)
      order.push_back(v);
  };
  for (auto [i, arg] : llvm::enumerate(f.getArguments()))
    if (isa<RankedTensorType>(arg.getType()))
      define(arg, shardingOf(grid, bd.args[i]));
  shard::Sharding replicated = shardingOf(grid, {});
  // Annotates the use `u` for its user with sharding `s`.
  std::function<void(OpOperand &, const shard::Sharding &)> use =
      [&](OpOperand &u, const shard::Sharding &s) {
        Value v = u.get();
        if (!isa<RankedTensorType>(v.getType()))
          return;
        if (!defined.count(v)) {
          Operation *def = v.getDefiningOp();
          DenseElementsAttr d;
          bool splat = !matchPattern(v, m_Constant(&d)) || d.isSplat();
          define(v, (isCreator(def) || isLazy(def)) && splat ? s : replicated);
          if (isLazyFill(def))
            use(cast<linalg::FillOp>(def).getOutputsMutable()[0], s);
          if (isLazyBroadcast(def)) {
            auto g = cast<linalg::GenericOp>(def);
            for (OpOperand *in : g.getDpsInputOperands())
              use(*in, replicated);
            use(g.getDpsInitsMutable()[0], s);
          }
        }
        OpBuilder b(u.getOwner());
        Value sh = shard::ShardingOp::create(b, u.getOwner()->getLoc(), s);
        u.set(shard::ShardOp::create(b, u.getOwner()->getLoc(), v, sh,
                                     /*annotate_for_users=*/true));
      };
  for (Operation &op : llvm::make_early_inc_range(entry)) {
    if (isCreator(&op) || isLazy(&op) ||
        isa<shard::ShardOp, shard::ShardingOp>(op))
      continue;
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (OpOperand &u : ret->getOpOperands())
        use(u, shardingOf(grid, bd.results[u.getOperandNumber()]));
      continue;
    }
    auto si = dyn_cast<shard::ShardingInterface>(op);
    if (!si)
      return failure();
    SmallVector<shard::Sharding, 4> operands;
    for (Value v : op.getOperands())
      operands.push_back(defined.lookup(v));
    FailureOr<shard::ShardingOption> option =
        si.getShardingOption(operands, {});
    for (size_t k = 0; failed(option) && k < operands.size(); ++k) {
      if (!operands[k])
        continue;
      SmallVector<shard::Sharding, 4> one(operands.size());
      one[k] = operands[k];
      option = si.getShardingOption(one, {});
    }
    if (failed(option))
      option = shard::ShardingOption();
    if (option->empty || !option->grid) {
      option->grid = FlatSymbolRefAttr::get(grid.getSymNameAttr());
      option->empty = false;
    }
    FailureOr<std::vector<shard::Sharding>> ann =
        si.getShardingAnnotations(*option);
    if (failed(ann))
      return failure();
    for (OpOperand &u : op.getOpOperands())
      if ((*ann)[u.getOperandNumber()])
        use(u, (*ann)[u.getOperandNumber()]);
    for (OpResult r : op.getResults())
      if (isa<RankedTensorType>(r.getType()))
        define(r, (*ann)[op.getNumOperands() + r.getResultNumber()]);
  }
  // Each value's own sharding, right after its definition.
  for (Value v : order) {
    OpBuilder b(f.getContext());
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(&entry);
    Value sh = shard::ShardingOp::create(b, v.getLoc(), defined[v]);
    auto ann = shard::ShardOp::create(b, v.getLoc(), v, sh, false);
    v.replaceAllUsesExcept(ann, ann);
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
  // Upstream's diagnostics on what it cannot take are not the user's: the
  // function then takes the gathered path.
  ScopedDiagnosticHandler quiet(f.getContext(),
                                [](Diagnostic &) { return success(); });
  // Unit dimensions (keepdims reductions, `x[:, None]`) as reshapes and
  // constant indices, which upstream partitioning does not cover, are
  // dropped.
  OpPassManager prepare(func::FuncOp::getOperationName());
  if (failed(parsePassPipeline("linalg-fold-unit-extent-dims,canonicalize,cse",
                               prepare)) ||
      failed(runPipeline(prepare, f)))
    return false;
  splitFmas(f);
  unshare(f);
  if (!partitionable(f) || failed(propagate(f, grid, bd)) ||
      !fullyAnnotated(f) || (grid.getRank() != 1 && reshards(f)))
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
  for (func::FuncOp f : m.getOps<func::FuncOp>())
    if (ember::hasSplitAxes(f))
      funcs.push_back(f);
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
          readSplit(f.getArgAttr(i, kSplitAttr), f.getArgumentTypes()[i], grid,
                    f, "argument " + Twine(i));
      if (failed(s))
        return signalPassFailure();
      bd.args.push_back(*s);
      f.removeArgAttr(i, StringAttr::get(&getContext(), kSplitAttr));
    }
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      FailureOr<Split> s =
          readSplit(f.getResultAttr(i, kSplitAttr), f.getResultTypes()[i], grid,
                    f, "result " + Twine(i));
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
  // ember-to-linalg kept every product of the module as a loop nest for the
  // partitioning; the contractions go to the runtime's GEMM now.
  bool raised = false;
  for (func::FuncOp f : m.getOps<func::FuncOp>())
    raised |= raiseContractions(f);
  if (!raised)
    return;
  OpPassManager lower(ModuleOp::getOperationName());
  if (failed(parsePassPipeline("ember-to-linalg", lower)) ||
      failed(runPipeline(lower, m)))
    return signalPassFailure();
}
} // namespace
