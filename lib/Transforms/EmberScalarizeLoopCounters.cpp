//===- EmberScalarizeLoopCounters.cpp - loop counters as plain scalars ----===//
//
// After ember-to-linalg, a loop's integer counters (lax.scan's index, the
// iteration count autodiff adds) are rank-0 tensors carried by scf.for and
// updated by rank-0 linalg.generic ops; every use as an index is a
// tensor.extract. Once bufferized, each is a one-element buffer: on a GPU a
// device buffer that the host reads back (a synchronization) every
// iteration. This pass carries such values as scalars when they can be
// computed without reading a buffer (from constants, tensor.from_elements,
// and rank-0 elementwise generics of those), and replaces every
// tensor.extract of a value computable that way by the scalar computation.
// Upstream has no pass for it: canonicalization folds extract(from_elements)
// but neither changes carried types nor looks through a rank-0 generic.
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERSCALARIZELOOPCOUNTERSPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {

/// How deep a chain of rank-0 generics is followed.
constexpr int kMaxDepth = 16;

/// A rank-0 tensor of integers (not i1, whose buffers are widened).
bool isIntegerScalarTensor(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  if (!rt || rt.getRank() != 0)
    return false;
  auto i = dyn_cast<IntegerType>(rt.getElementType());
  return isa<IndexType>(rt.getElementType()) || (i && i.getWidth() > 1);
}

/// A rank-0 elementwise linalg.generic of integers whose payload is arith
/// ops only (which host code lowers on every target) and ignores its
/// outputs' values.
linalg::GenericOp scalarGeneric(Value v) {
  auto g = v.getDefiningOp<linalg::GenericOp>();
  if (!g || g.getNumLoops() != 0 || !g.hasPureTensorSemantics() ||
      !llvm::all_of(g->getResultTypes(), isIntegerScalarTensor))
    return nullptr;
  for (Value in : g.getDpsInputs())
    if (!isa<RankedTensorType>(in.getType()) ||
        cast<RankedTensorType>(in.getType()).getRank() != 0)
      return nullptr;
  Block &body = g.getRegion().front();
  for (BlockArgument out : body.getArguments().drop_front(g.getNumDpsInputs()))
    if (!out.use_empty())
      return nullptr;
  for (Operation &o : body.without_terminator())
    if (!isa<arith::ArithDialect>(o.getDialect()) || !isMemoryEffectFree(&o))
      return nullptr;
  return g;
}

/// Whether the rank-0 tensor `v` is computable as a scalar without reading
/// a buffer; `scalars` are carried values being made scalars.
bool computable(Value v, const llvm::DenseSet<Value> &scalars, int depth = 0) {
  if (scalars.contains(v))
    return true;
  if (depth > kMaxDepth)
    return false;
  if (!isIntegerScalarTensor(v.getType()))
    return false;
  if (auto c = v.getDefiningOp<arith::ConstantOp>())
    return isa<SplatElementsAttr>(c.getValue());
  if (auto fe = v.getDefiningOp<tensor::FromElementsOp>())
    return fe.getElements().size() == 1;
  if (auto g = scalarGeneric(v))
    return llvm::all_of(g.getDpsInputs(), [&](Value in) {
      return computable(in, scalars, depth + 1);
    });
  return false;
}

/// The scalar computation of a `computable` value, built at `b`.
Value materialize(OpBuilder &b, Location loc, Value v) {
  if (auto c = v.getDefiningOp<arith::ConstantOp>())
    return arith::ConstantOp::create(
        b, loc,
        cast<SplatElementsAttr>(c.getValue()).getSplatValue<TypedAttr>());
  if (auto fe = v.getDefiningOp<tensor::FromElementsOp>())
    return fe.getElements()[0];
  auto g = scalarGeneric(v);
  Block &body = g.getRegion().front();
  IRMapping map;
  for (auto [arg, in] : llvm::zip(body.getArguments(), g.getDpsInputs()))
    map.map(arg, materialize(b, loc, in));
  for (Operation &o : body.without_terminator())
    b.clone(o, map);
  unsigned r = cast<OpResult>(v).getResultNumber();
  return map.lookupOrDefault(body.getTerminator()->getOperand(r));
}

/// Carries the integer counters of `loop` as scalars.
void scalarize(scf::ForOp loop) {
  Block *body = loop.getBody();
  Operation *yield = body->getTerminator();
  // Candidates: rank-0 integer carries with a computable start; then drop,
  // to a fixed point, those whose next value needs a dropped one.
  llvm::SetVector<unsigned> chosen;
  for (auto [i, init] : llvm::enumerate(loop.getInitArgs()))
    if (isIntegerScalarTensor(init.getType()) && computable(init, {}))
      chosen.insert(i);
  for (bool changed = true; changed;) {
    changed = false;
    llvm::DenseSet<Value> args;
    for (unsigned i : chosen)
      args.insert(loop.getRegionIterArg(i));
    for (unsigned i : chosen.takeVector()) {
      if (computable(yield->getOperand(i), args))
        chosen.insert(i);
      else
        changed = true;
    }
  }
  if (chosen.empty())
    return;
  Location loc = loop.getLoc();
  OpBuilder b(loop);
  // Inside: the tensor is rebuilt from the scalar for the remaining uses.
  b.setInsertionPointToStart(body);
  for (unsigned i : chosen) {
    BlockArgument arg = loop.getRegionIterArg(i);
    Type tensorType = arg.getType();
    arg.setType(cast<RankedTensorType>(tensorType).getElementType());
    auto fe = tensor::FromElementsOp::create(b, loc, tensorType, Value(arg));
    arg.replaceAllUsesExcept(fe.getResult(), fe.getOperation());
  }
  b.setInsertionPoint(yield);
  for (unsigned i : chosen)
    yield->setOperand(i, materialize(b, loc, yield->getOperand(i)));
  b.setInsertionPoint(loop);
  for (unsigned i : chosen) {
    OpOperand &init = loop.getInitArgsMutable()[i];
    init.set(materialize(b, loc, init.get()));
  }
  b.setInsertionPointAfter(loop);
  for (unsigned i : chosen) {
    Value r = loop.getResult(i);
    Type tensorType = r.getType();
    r.setType(cast<RankedTensorType>(tensorType).getElementType());
    auto fe = tensor::FromElementsOp::create(b, loc, tensorType, r);
    r.replaceAllUsesExcept(fe.getResult(), fe.getOperation());
  }
}

struct EmberScalarizeLoopCountersPass
    : public mlir::ember::impl::EmberScalarizeLoopCountersPassBase<
          EmberScalarizeLoopCountersPass> {
  void runOnOperation() override {
    // Outer loops first, in program order: a loop's results become
    // from_elements of scalars, which makes the next loop's start
    // computable (autodiff's backward loop starts at the forward count).
    SmallVector<scf::ForOp> loops;
    getOperation().walk<WalkOrder::PreOrder>(
        [&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      scalarize(loop);
    SmallVector<tensor::ExtractOp> extracts;
    getOperation().walk([&](tensor::ExtractOp e) {
      if (e.getIndices().empty() && computable(e.getTensor(), {}))
        extracts.push_back(e);
    });
    for (tensor::ExtractOp e : extracts) {
      OpBuilder b(e);
      e.replaceAllUsesWith(materialize(b, e.getLoc(), e.getTensor()));
      e.erase();
    }
  }
};

} // namespace
