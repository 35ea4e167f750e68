//===- InferLayout.cpp - vector-register layouts of TPU kernels -----------===//
//
// `ember-tpu-infer-layout`: gives every vector a kernel (in Mosaic's form,
// after `ember-tpu-kernel`) makes or uses a layout in vector registers, the
// model of Mosaic's VectorLayout (`#ember_tpu.layout`: bitwidth, offsets,
// tiling, implicit dimension), records per op what it needs of its operands
// (`ember_tpu.in_layouts`) and what it makes (`ember_tpu.out_layouts`), and
// inserts an `ember_tpu.relayout` wherever an operand was made in a layout
// other than the one its user needs. Rejects (layout_c3) vectors and buffers
// a TPU cannot hold.
//
// The rules follow what Mosaic's `infer-vector-layout` does on a TPU v5e,
// as recorded from libtpu for the cross-check programs' kernels
// (test/data/tpu/mosaic_layouts.json, compared op by op in
// test/python/test_tpu_layouts.py): loads and stores in 8-row tiles at the
// offsets their indices give, splat constants and scalar broadcasts
// replicated, broadcasts replicating the dimensions they widen, reductions
// leaving the reduced direction replicated with an implicit dimension,
// elementwise ops meeting their operands' concrete offsets, MXU operands in
// the native tiling of their width. Written by hand: no upstream pass models
// TPU registers, and Mosaic's own pass lives in libtpu (the serialized kernel
// carries no layouts; Mosaic infers them again when it compiles).
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberTPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERTPUINFERLAYOUTPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;
namespace et = mlir::ember_tpu;

namespace {

using Layout = et::VectorLayoutAttr;
constexpr int64_t kRep = -1; // a replicated offset

/// Elements of `bw` bits in a 32-bit word.
int64_t packing(int64_t bw) { return 32 / bw; }

/// The two minor sizes of `shape` with the unit dimension `implicit` names
/// inserted (-1: a minor one, -2: a second-minor one).
std::pair<int64_t, int64_t> tiledDims(ArrayRef<int64_t> shape,
                                      int64_t implicit) {
  int64_t r = shape.size();
  if (implicit == -1)
    return {shape[r - 1], 1};
  if (implicit == -2)
    return {1, shape[r - 1]};
  return {shape[r - 2], shape[r - 1]};
}

struct Inference {
  MLIRContext *ctx;
  DenseMap<Value, Layout> layoutOf;

  Layout make(int64_t bw, int64_t sub, int64_t lane, int64_t rows,
              int64_t implicit) {
    return Layout::get(ctx, bw, sub, lane, rows, 128, implicit);
  }

  /// The width a vector of `vt` takes in registers; masks (i1), unless
  /// known from what was compared, take 32-bit lanes.
  static int64_t widthOf(VectorType vt, int64_t maskWidth = 32) {
    Type e = vt.getElementType();
    return e.isInteger(1) ? maskWidth : e.getIntOrFloatBitWidth();
  }

  /// The layout the VPU computes `vt` in, at `sub`, `lane`: 8-row tiles
  /// (TPU v5e keeps 16-bit values in (8, 128) tiles, two per register);
  /// rank-1 vectors lie along the lanes.
  Layout vpu(VectorType vt, int64_t sub = 0, int64_t lane = 0,
             int64_t maskWidth = 32) {
    bool rank1 = vt.getRank() == 1;
    return make(widthOf(vt, maskWidth), rank1 ? kRep : sub, lane, 8,
                rank1 ? -2 : 0);
  }

  /// The layout the MXU takes `vt` in: full registers of packed rows.
  Layout mxu(VectorType vt) {
    int64_t bw = widthOf(vt);
    return make(bw, 0, 0, 8 * packing(bw), 0);
  }

  Layout with(Layout l, int64_t bw, int64_t sub, int64_t lane,
              int64_t implicit) {
    return Layout::get(ctx, bw, sub, lane, l.getRows(), l.getCols(), implicit);
  }

  Layout get(Value v) {
    auto it = layoutOf.find(v);
    if (it != layoutOf.end())
      return it->second;
    // A vector made where no rule reached (a kernel argument cannot be
    // one): the VPU's layout.
    return vpu(cast<VectorType>(v.getType()));
  }

  /// An operand's layout as `op` needs it, or unit for other operands.
  Attribute attrOf(Value v, Layout l) {
    return laidOut(v.getType()) ? Attribute(l) : Attribute(UnitAttr::get(ctx));
  }

  /// Vectors of rank 1 or more have layouts; scalars, buffers and 0-d
  /// vectors do not.
  static bool laidOut(Type t) {
    auto vt = dyn_cast<VectorType>(t);
    return vt && vt.getRank() > 0;
  }

  void record(Operation *op, ArrayRef<Layout> ins, ArrayRef<Layout> outs) {
    SmallVector<Attribute> in, out;
    for (auto [v, l] : llvm::zip(op->getOperands(), ins))
      in.push_back(attrOf(v, l));
    for (auto [v, l] : llvm::zip(op->getResults(), outs)) {
      out.push_back(attrOf(v, l));
      if (laidOut(v.getType()))
        layoutOf[v] = l;
    }
    if (llvm::any_of(op->getOperandTypes(), laidOut))
      op->setAttr("ember_tpu.in_layouts", ArrayAttr::get(ctx, in));
    if (llvm::any_of(op->getResultTypes(), laidOut))
      op->setAttr("ember_tpu.out_layouts", ArrayAttr::get(ctx, out));
  }

  /// Each operand as it is (unit for scalars).
  SmallVector<Layout> asTheyAre(ValueRange vs) {
    SmallVector<Layout> r;
    for (Value v : vs)
      r.push_back(isa<VectorType>(v.getType()) ? get(v) : Layout());
    return r;
  }

  /// The layout elementwise operands meet in: each offset the first
  /// concrete one among them, replicated where all are; operands replicated
  /// in both directions (splats) say nothing, and with nothing said the
  /// offsets are 0 (as Mosaic). Their tiling and implicit dimension where
  /// they agree, else the VPU's.
  Layout meetLayouts(ArrayRef<Layout> all, VectorType shape, int64_t bw) {
    SmallVector<Layout> ls;
    for (Layout l : all)
      if (l && !(l.getSublaneOffset() == kRep && l.getLaneOffset() == kRep))
        ls.push_back(l);
    if (ls.empty()) {
      Layout base =
          all.empty() || !all.front() ? vpu(shape, 0, 0, bw) : all.front();
      return with(base, bw, shape.getRank() == 1 ? kRep : 0, 0,
                  base.getImplicitDim());
    }
    int64_t sub = kRep, lane = kRep;
    for (Layout l : ls) {
      if (sub == kRep)
        sub = l.getSublaneOffset();
      if (lane == kRep)
        lane = l.getLaneOffset();
    }
    Layout first = ls.front();
    bool same = llvm::all_of(ls, [&](Layout l) {
      return l.getRows() == first.getRows() &&
             l.getImplicitDim() == first.getImplicitDim();
    });
    if (!same)
      return with(vpu(shape, 0, 0, bw), bw, sub, lane,
                  vpu(shape).getImplicitDim());
    return with(first, bw, sub, lane, first.getImplicitDim());
  }

  Layout meet(ValueRange vs, VectorType shape, int64_t bw) {
    SmallVector<Layout> ls;
    for (Value v : vs)
      if (isa<VectorType>(v.getType()))
        ls.push_back(get(v));
    return meetLayouts(ls, shape, bw);
  }

  /// The layouts values carried around a loop take: where the value
  /// entering and the one yielded meet.
  SmallVector<Layout> carriedMeet(ValueRange inits, ValueRange yielded) {
    SmallVector<Layout> r;
    for (auto [i, y] : llvm::zip(inits, yielded)) {
      auto vt = dyn_cast<VectorType>(i.getType());
      r.push_back(vt ? meetLayouts({get(i), get(y)}, vt,
                                   widthOf(vt, get(i).getBitwidth()))
                     : Layout());
    }
    return r;
  }

  /// The offsets a load or store at `indices` of a buffer gives (dynamic
  /// indices: 0).
  std::pair<int64_t, int64_t> offsetsAt(ValueRange indices, Layout l) {
    auto [rows, cols] = l.vregSlice();
    auto at = [&](size_t k, int64_t mod) -> int64_t {
      if (k >= indices.size())
        return 0;
      APInt c;
      if (matchPattern(indices[indices.size() - 1 - k], m_ConstantInt(&c)))
        return ((c.getSExtValue() % mod) + mod) % mod;
      return 0;
    };
    return {at(1, rows), at(0, cols)};
  }

  /// A vector loaded from, or stored to, `indices` of a buffer.
  Layout memoryLayout(VectorType vt, ValueRange indices, int64_t maskWidth) {
    Layout l = vpu(vt, 0, 0, maskWidth);
    // A single row is tiled by rows of one.
    if (vt.getRank() >= 2 && vt.getShape()[vt.getRank() - 2] == 1)
      l = Layout::get(ctx, l.getBitwidth(), 0, 0, 1, 128, 0);
    auto [sub, lane] = offsetsAt(indices, l);
    if (vt.getRank() == 1)
      return with(l, l.getBitwidth(), kRep, lane, -2);
    return with(l, l.getBitwidth(), sub, lane, 0);
  }

  void visitBlock(Block &block) {
    for (Operation &op : block)
      visit(&op);
  }

  void visit(Operation *op);
  void visitBroadcast(vector::BroadcastOp op);
  void visitReduction(vector::MultiDimReductionOp op);
  void visitShapeCast(vector::ShapeCastOp op);
};

void Inference::visitBroadcast(vector::BroadcastOp op) {
  auto rt = op.getResultVectorType();
  auto st = dyn_cast<VectorType>(op.getSourceType());
  if (!st || st.getRank() == 0) {
    // A scalar: every element the same.
    Layout out = vpu(rt, kRep, kRep);
    record(op, {Layout()}, {out});
    return;
  }
  Layout in = get(op.getSource());
  auto [s2, s1] = tiledDims(st.getShape(), in.getImplicitDim());
  if (rt.getRank() == 1) {
    Layout out = in;
    record(op, {in}, {out});
    return;
  }
  if (st.getRank() == 1 && in.getImplicitDim() == -1) {
    // A column laid along the sublanes cannot become a row: move it.
    in = with(in, in.getBitwidth(), kRep, 0, -2);
    s2 = 1;
    s1 = st.getShape()[0];
  }
  if (in.getRows() != 8)
    // Rows are broadcast within the VPU's 8-row tiles.
    in = Layout::get(ctx, in.getBitwidth(), in.getSublaneOffset(),
                     in.getLaneOffset(), 8, 128, in.getImplicitDim());
  int64_t d2 = rt.getShape()[rt.getRank() - 2];
  int64_t d1 = rt.getShape()[rt.getRank() - 1];
  int64_t sub = (s2 == 1 && d2 != 1) ? kRep : in.getSublaneOffset();
  int64_t lane = (s1 == 1 && d1 != 1) ? kRep : in.getLaneOffset();
  record(op, {in}, {with(in, in.getBitwidth(), sub, lane, 0)});
}

void Inference::visitReduction(vector::MultiDimReductionOp op) {
  auto st = op.getSourceVectorType();
  int64_t r = st.getRank();
  Layout in = get(op.getSource());
  Layout acc =
      isa<VectorType>(op.getAcc().getType()) ? get(op.getAcc()) : Layout();
  auto dims = op.getReductionDims();
  bool minor = llvm::is_contained(dims, r - 1);
  bool second = r >= 2 && llvm::is_contained(dims, r - 2);
  auto rt = dyn_cast<VectorType>(op.getDest().getType());
  Layout out;
  if (rt) {
    int64_t bw = widthOf(rt, in.getBitwidth());
    if (minor && !second)
      out = with(in, bw, in.getSublaneOffset(), kRep, -1);
    else if (second && !minor)
      out = with(in, bw, kRep, in.getLaneOffset(), -2);
    else if (minor && second)
      out = with(in, bw, kRep, kRep, -2);
    else
      out = with(in, bw, in.getSublaneOffset(), in.getLaneOffset(),
                 in.getImplicitDim());
  }
  record(op, {in, acc}, {out});
}

void Inference::visitShapeCast(vector::ShapeCastOp op) {
  auto st = op.getSourceVectorType();
  auto rt = op.getResultVectorType();
  if (st.getRank() == 0 || rt.getRank() == 0) {
    record(op, {vpu(st)}, {vpu(rt)});
    return;
  }
  Layout in = get(op.getSource());
  auto sshape = st.getShape();
  auto rshape = rt.getShape();
  int64_t bw = in.getBitwidth();
  // The same two minor dimensions once implicit ones are counted: the
  // registers do not change.
  auto [s2, s1] = tiledDims(sshape, in.getImplicitDim());
  auto lead = [](ArrayRef<int64_t> s, int64_t keep) {
    int64_t n = 1;
    for (int64_t k = 0; k + keep < (int64_t)s.size(); ++k)
      n *= s[k];
    return n;
  };
  int64_t sLead = lead(sshape, in.getImplicitDim() ? 1 : 2);
  for (int64_t implicit : {0, -1, -2}) {
    if (rt.getRank() + (implicit ? 1 : 0) < 2)
      continue;
    auto [r2, r1] = tiledDims(rshape, implicit);
    // The first match keeps the registers: no implicit dimension before a
    // minor one before a second-minor one.
    if (r2 == s2 && r1 == s1 && lead(rshape, implicit ? 1 : 2) == sLead) {
      record(
          op, {in},
          {with(in, bw, in.getSublaneOffset(), in.getLaneOffset(), implicit)});
      return;
    }
  }
  Layout needed = vpu(st, 0, 0, bw);
  record(op, {needed}, {vpu(rt, 0, 0, bw)});
}

void Inference::visit(Operation *op) {
  auto vectorResult = [&]() -> VectorType {
    return op->getNumResults() == 1
               ? dyn_cast<VectorType>(op->getResult(0).getType())
               : VectorType();
  };
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    auto vt = vectorResult();
    if (!vt)
      return;
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    bool splat = dense && dense.isSplat();
    record(op, {}, {splat ? vpu(vt, kRep, kRep) : vpu(vt)});
    return;
  }
  if (auto b = dyn_cast<vector::BroadcastOp>(op))
    return visitBroadcast(b);
  if (auto r = dyn_cast<vector::MultiDimReductionOp>(op))
    return visitReduction(r);
  if (auto s = dyn_cast<vector::ShapeCastOp>(op))
    return visitShapeCast(s);
  if (auto l = dyn_cast<vector::LoadOp>(op)) {
    Layout out = memoryLayout(l.getVectorType(), l.getIndices(), 32);
    record(op, SmallVector<Layout>(op->getNumOperands()), {out});
    return;
  }
  if (auto s = dyn_cast<et::VectorStoreOp>(op)) {
    auto vt = cast<VectorType>(s.getValueToStore().getType());
    Layout value = memoryLayout(vt, s.getIndices(), 32);
    SmallVector<Layout> ins(op->getNumOperands());
    ins[0] = value;
    if (s.getMask())
      ins.back() = value;
    record(op, ins, {});
    return;
  }
  if (isa<et::StridedLoadOp, et::PRNGRandomBitsOp>(op)) {
    record(op, SmallVector<Layout>(op->getNumOperands()),
           {vpu(vectorResult())});
    return;
  }
  if (auto s = dyn_cast<et::StridedStoreOp>(op)) {
    SmallVector<Layout> ins(op->getNumOperands());
    ins[0] = vpu(cast<VectorType>(s.getValueToStore().getType()));
    record(op, ins, {});
    return;
  }
  if (auto m = dyn_cast<et::MatmulOp>(op)) {
    Layout acc = mxu(cast<VectorType>(m.getAcc().getType()));
    record(op,
           {mxu(cast<VectorType>(m.getLhs().getType())),
            mxu(cast<VectorType>(m.getRhs().getType())), acc},
           {mxu(vectorResult())});
    return;
  }
  if (auto io = dyn_cast<et::IotaOp>(op)) {
    auto vt = vectorResult();
    int64_t r = vt.getRank();
    auto dims = io.getDimensions();
    bool alongLanes = llvm::is_contained(dims, r - 1);
    bool alongSublanes = r >= 2 && llvm::is_contained(dims, r - 2);
    record(op, {}, {vpu(vt, alongSublanes ? 0 : kRep, alongLanes ? 0 : kRep)});
    return;
  }
  if (isa<et::TransposeOp, et::DynamicRotateOp, et::ConcatenateOp>(op)) {
    SmallVector<Layout> ins;
    for (Value v : op->getOperands())
      ins.push_back(isa<VectorType>(v.getType())
                        ? vpu(cast<VectorType>(v.getType()))
                        : Layout());
    record(op, ins, {vpu(vectorResult())});
    return;
  }
  if (auto e = dyn_cast<vector::ExtractOp>(op)) {
    // Reading elements needs them where the offsets say.
    Layout in = get(e.getSource());
    Layout at = with(in, in.getBitwidth(),
                     in.getSublaneOffset() == kRep ? 0 : in.getSublaneOffset(),
                     in.getLaneOffset() == kRep ? 0 : in.getLaneOffset(),
                     in.getImplicitDim());
    SmallVector<Layout> ins(op->getNumOperands());
    ins[0] = at;
    auto rt = vectorResult();
    record(op, ins, {rt ? vpu(rt) : Layout()});
    return;
  }
  if (auto e = dyn_cast<vector::ExtractStridedSliceOp>(op)) {
    Layout in = get(e.getSource());
    auto offsets = e.getOffsets();
    auto [rows, cols] = in.vregSlice();
    auto shift = [&](int64_t off, size_t k, int64_t mod) {
      if (off == kRep || offsets.size() <= k)
        return off;
      int64_t start =
          cast<IntegerAttr>(offsets[offsets.size() - 1 - k]).getInt();
      return (off + start) % mod;
    };
    int64_t rank = e.getSourceVectorType().getRank();
    bool covers = (int64_t)offsets.size() == rank;
    int64_t sub = covers && rank >= 2 ? shift(in.getSublaneOffset(), 1, rows)
                                      : in.getSublaneOffset();
    int64_t lane =
        covers ? shift(in.getLaneOffset(), 0, cols) : in.getLaneOffset();
    record(op, {in},
           {with(in, in.getBitwidth(), sub, lane, in.getImplicitDim())});
    return;
  }
  if (auto f = dyn_cast<scf::ForOp>(op)) {
    SmallVector<Layout> ins = asTheyAre(op->getOperands());
    SmallVector<Layout> carried = asTheyAre(f.getInitArgs());
    Operation *yield = f.getBody()->getTerminator();
    // The body with the entering layouts, then with the ones the entering
    // and yielded values meet in.
    for (int round = 0; round < 2; ++round) {
      for (auto [arg, l] : llvm::zip(f.getRegionIterArgs(), carried))
        if (l)
          layoutOf[arg] = l;
      visitBlock(*f.getBody());
      SmallVector<Layout> next =
          carriedMeet(f.getInitArgs(), yield->getOperands());
      if (next == carried)
        break;
      carried = next;
    }
    record(yield, carried, {});
    // What enters is relaid out to what is carried.
    std::copy(carried.begin(), carried.end(), ins.end() - carried.size());
    record(op, ins, carried);
    return;
  }
  if (auto w = dyn_cast<scf::WhileOp>(op)) {
    SmallVector<Layout> carried = asTheyAre(w.getInits());
    auto cond = w.getConditionOp();
    Operation *yield = w.getAfter().front().getTerminator();
    SmallVector<Layout> passed;
    for (int round = 0; round < 2; ++round) {
      for (auto [arg, l] : llvm::zip(w.getBeforeArguments(), carried))
        if (l)
          layoutOf[arg] = l;
      visitBlock(w.getBefore().front());
      passed = asTheyAre(cond.getArgs());
      for (auto [arg, l] : llvm::zip(w.getAfterArguments(), passed))
        if (l)
          layoutOf[arg] = l;
      visitBlock(w.getAfter().front());
      SmallVector<Layout> next =
          carriedMeet(w.getInits(), yield->getOperands());
      if (next == carried)
        break;
      carried = next;
    }
    SmallVector<Layout> condIns{Layout()};
    condIns.append(passed);
    record(cond, condIns, {});
    record(yield, carried, {});
    record(op, carried, passed);
    return;
  }
  if (auto i = dyn_cast<scf::IfOp>(op)) {
    for (Region &r : op->getRegions())
      for (Block &b : r)
        visitBlock(b);
    SmallVector<Layout> outs;
    for (auto [k, res] : llvm::enumerate(op->getResults())) {
      auto vt = dyn_cast<VectorType>(res.getType());
      if (!vt) {
        outs.push_back(Layout());
        continue;
      }
      SmallVector<Value> yielded{i.thenYield().getOperand(k)};
      if (i.elseBlock())
        yielded.push_back(i.elseYield().getOperand(k));
      outs.push_back(meet(yielded, vt, widthOf(vt)));
    }
    for (Region &r : op->getRegions())
      for (Block &b : r)
        record(b.getTerminator(), outs, {});
    record(op, {Layout()}, outs);
    return;
  }
  if (auto region = dyn_cast<et::RegionOp>(op)) {
    for (Block &b : region.getRegion())
      visitBlock(b);
    Operation *yield = region.getRegion().front().getTerminator();
    SmallVector<Layout> outs = asTheyAre(yield->getOperands());
    record(yield, outs, {});
    record(op, {}, outs);
    return;
  }
  // Casts: the same registers, elements of the result's width.
  if (isa<arith::ExtFOp, arith::TruncFOp, arith::ExtSIOp, arith::ExtUIOp,
          arith::TruncIOp, arith::SIToFPOp, arith::UIToFPOp, arith::FPToSIOp,
          arith::FPToUIOp, arith::BitcastOp, arith::IndexCastOp>(op)) {
    auto vt = vectorResult();
    if (!vt)
      return;
    Layout in = get(op->getOperand(0));
    record(op, {in},
           {with(in, widthOf(vt, in.getBitwidth()), in.getSublaneOffset(),
                 in.getLaneOffset(), in.getImplicitDim())});
    return;
  }
  // Elementwise ops (arith, math, comparisons, selects): operands meet.
  auto vt = vectorResult();
  bool elementwise =
      vt && op->getNumRegions() == 0 &&
      (op->hasTrait<OpTrait::Elementwise>() ||
       isa<arith::ArithDialect, math::MathDialect>(op->getDialect())) &&
      llvm::all_of(op->getOperandTypes(), [&](Type t) {
        auto ot = dyn_cast<VectorType>(t);
        return !ot || ot.getShape() == vt.getShape();
      });
  if (elementwise) {
    SmallVector<Value> values;
    for (Value v : op->getOperands())
      if (auto ot = dyn_cast<VectorType>(v.getType());
          ot && !ot.getElementType().isInteger(1))
        values.push_back(v);
    // Masks take the width of the values they select or compare.
    ValueRange among = values.empty() ? op->getOperands() : ValueRange(values);
    int64_t width = values.empty()
                        ? widthOf(vt)
                        : widthOf(cast<VectorType>(values[0].getType()));
    Layout m = meet(among, vt, width);
    int64_t bw = m.getBitwidth();
    SmallVector<Layout> ins;
    for (Value v : op->getOperands()) {
      auto ot = dyn_cast<VectorType>(v.getType());
      ins.push_back(ot ? with(m, widthOf(ot, bw), m.getSublaneOffset(),
                              m.getLaneOffset(), m.getImplicitDim())
                       : Layout());
    }
    record(op, ins,
           {with(m, widthOf(vt, bw), m.getSublaneOffset(), m.getLaneOffset(),
                 m.getImplicitDim())});
    return;
  }
  // Anything else with vectors: operands as they are, results in the
  // VPU's layout.
  if (llvm::any_of(op->getResultTypes(), llvm::IsaPred<VectorType>) ||
      llvm::any_of(op->getOperandTypes(), llvm::IsaPred<VectorType>)) {
    SmallVector<Layout> outs;
    for (Type t : op->getResultTypes())
      outs.push_back(isa<VectorType>(t) ? vpu(cast<VectorType>(t)) : Layout());
    record(op, asTheyAre(op->getOperands()), outs);
  }
  for (Region &r : op->getRegions())
    for (Block &b : r)
      visitBlock(b);
}

/// layout_c3: vectors and buffers a TPU can hold.
LogicalResult checkHoldable(Operation *op) {
  auto bad = [](Type e) {
    return !e.isIntOrFloat() || e.getIntOrFloatBitWidth() > 32;
  };
  if (auto fn = dyn_cast<func::FuncOp>(op)) {
    for (Type t : fn.getArgumentTypes())
      if (auto mt = dyn_cast<MemRefType>(t);
          mt && mt.getElementType().isIntOrFloat() &&
          mt.getElementType().getIntOrFloatBitWidth() > 32)
        return fn.emitOpError("layout_c3: TPU kernels take buffers of "
                              "at most 32-bit elements, not ")
               << mt;
    return success();
  }
  for (Type t : op->getResultTypes())
    if (auto vt = dyn_cast<VectorType>(t); vt && bad(vt.getElementType()))
      return op->emitOpError("layout_c3: TPU vector registers hold elements "
                             "of at most 32 bits, not those of ")
             << vt;
  return success();
}

/// Puts an `ember_tpu.relayout` before every use whose needed layout is not
/// the one its operand was made in.
void insertRelayouts(Operation *root, Inference &inf) {
  SmallVector<Operation *> users;
  root->walk([&](Operation *op) {
    if (op->hasAttr("ember_tpu.in_layouts"))
      users.push_back(op);
  });
  for (Operation *op : users) {
    auto ins = cast<ArrayAttr>(op->getAttr("ember_tpu.in_layouts"));
    for (auto [k, a] : llvm::enumerate(ins)) {
      auto want = dyn_cast<Layout>(a);
      if (!want)
        continue;
      Value v = op->getOperand(k);
      Layout have = inf.get(v);
      if (have == want)
        continue;
      OpBuilder b(op);
      Value moved =
          b.create<et::RelayoutOp>(op->getLoc(), v.getType(), v, have, want);
      op->setOperand(k, moved);
    }
  }
}

struct EmberTPUInferLayoutPass
    : public ember::impl::EmberTPUInferLayoutPassBase<EmberTPUInferLayoutPass> {
  void runOnOperation() override {
    WalkResult r = getOperation().walk([&](Operation *op) -> WalkResult {
      return failed(checkHoldable(op)) ? WalkResult::interrupt()
                                       : WalkResult::advance();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      Inference inf{&getContext(), {}};
      inf.visitBlock(fn.getBody().front());
      insertRelayouts(fn, inf);
    }
  }
};

} // namespace
