//===- EmberLinalgToGPU.cpp - bufferized linalg -> gpu.launch kernels -----===//
//
// The CUDA target's mapping of the bufferized program onto the device. Every
// linalg.generic left on the host becomes one gpu.launch (a fusion group is
// one generic after linalg-fuse-elementwise-ops), buffers the host allocates
// become device buffers, and the few scalars host control flow reads (loop
// predicates, branch indices) travel through small device-to-host copies.
//
// Upstream's parallel-loop mapping (`gpu-map-parallel-loops`) launches one
// thread per block and one block per iteration; the kernels here choose
// their own shape: 256 threads per block over the flattened parallel
// iterations, and for a reduction over many elements one block per output
// whose threads stride over the reduced elements and combine with
// gpu.all_reduce (warp shuffles after convert-gpu-to-nvvm). Written here
// because no upstream pass chooses launch shapes from a linalg op's
// iteration space (docs/decisions.md).
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"
#include "ember/Runtime/Runtime.h"

#include "../../Transforms/TransformUtils.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERLINALGTOGPUPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {

constexpr int64_t kThreads = 256;
/// A reduction over at least this many elements per output gets a block per
/// output; fewer, and one thread computes each output serially.
constexpr int64_t kBlockReduceMin = 128;
/// Blocks a reduction launches at least when its outputs are few (about 8 a
/// multiprocessor on an H100/H200's 132): each output's elements are then
/// split over several blocks, whose partial results a second kernel
/// combines. A block gets at least kElementsPerBlockMin elements.
constexpr int64_t kReduceBlocksMin = 1024;
constexpr int64_t kElementsPerBlockMin = 16 * kThreads;
/// Independent accumulators per thread in a block reduction: as many loads
/// in flight per thread, which HBM's latency needs (one in flight per thread
/// reads about a third of the H200's bandwidth).
constexpr int64_t kReduceUnroll = 4;
/// Points each thread of an elementwise kernel computes (for the same
/// reason), from this many points on.
constexpr int64_t kElementwiseUnroll = 4;
constexpr int64_t kUnrolledPointsMin = 1 << 16;

Value cIndex(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// The product of `sizes`, folded to a constant when they are constants.
Value product(OpBuilder &b, Location loc, ArrayRef<Value> sizes) {
  Value p = cIndex(b, loc, 1);
  for (Value s : sizes)
    p = b.createOrFold<arith::MulIOp>(loc, p, s);
  return p;
}

/// Row-major indices of `flat` (less than the product of `sizes`) in a space
/// of `sizes`. With static sizes whose product fits in 31 bits, in i32: a
/// GPU divides 64-bit integers in software, even by a constant about three
/// times the instructions, which made broadcasting kernels slow.
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value flat,
                               ArrayRef<Value> sizes) {
  SmallVector<Value> idx(sizes.size());
  int64_t total = 1;
  for (Value s : sizes) {
    std::optional<int64_t> c = getConstantIntValue(s);
    total = c && total <= INT32_MAX ? total * *c : INT64_MAX;
  }
  if (sizes.size() > 1 && total <= INT32_MAX) {
    Type i32 = b.getI32Type();
    Value f = arith::IndexCastUIOp::create(b, loc, i32, flat);
    for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
      Value v = f;
      if (i > 0) {
        Value s = arith::ConstantIntOp::create(b, loc, i32,
                                               *getConstantIntValue(sizes[i]));
        v = arith::RemUIOp::create(b, loc, f, s);
        f = arith::DivUIOp::create(b, loc, f, s);
      }
      idx[i] = arith::IndexCastUIOp::create(b, loc, b.getIndexType(), v);
    }
    return idx;
  }
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    if (i == 0) {
      idx[i] = flat;
      break;
    }
    idx[i] = arith::RemUIOp::create(b, loc, flat, sizes[i]);
    flat = arith::DivUIOp::create(b, loc, flat, sizes[i]);
  }
  return idx;
}

/// The memref indices an indexing map gives for the loop indices `iv`.
SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                            ArrayRef<Value> iv) {
  SmallVector<Value> out;
  for (unsigned i = 0; i < map.getNumResults(); ++i) {
    AffineExpr e = map.getResult(i);
    if (auto d = dyn_cast<AffineDimExpr>(e))
      out.push_back(iv[d.getPosition()]);
    else if (auto c = dyn_cast<AffineConstantExpr>(e))
      out.push_back(cIndex(b, loc, c.getValue()));
    else
      out.push_back(
          affine::AffineApplyOp::create(b, loc, map.getSubMap({i}), iv));
  }
  return out;
}

/// Emits the generic's body for the loop indices `iv`, with the output block
/// arguments bound to `outs`; returns the yielded values.
SmallVector<Value> emitBody(OpBuilder &b, Location loc, linalg::GenericOp op,
                            ArrayRef<Value> iv, ValueRange outs,
                            ArrayRef<Value> inputs = {}) {
  Block &body = op.getRegion().front();
  IRMapping map;
  for (OpOperand *in : op.getDpsInputOperands()) {
    BlockArgument arg = body.getArgument(in->getOperandNumber());
    if (arg.use_empty())
      continue;
    Value v = in->get();
    if (!inputs.empty() && inputs[in->getOperandNumber()])
      v = inputs[in->getOperandNumber()];
    else if (isa<MemRefType>(v.getType()))
      v = memref::LoadOp::create(
          b, loc, v, applyMap(b, loc, op.getMatchingIndexingMap(in), iv));
    map.map(arg, v);
  }
  for (auto [i, out] : llvm::enumerate(outs))
    if (out)
      map.map(body.getArgument(op.getNumDpsInputs() + i), out);
  for (Operation &o : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(o)) {
      map.map(index.getResult(), iv[index.getDim()]);
      continue;
    }
    b.clone(o, map);
  }
  SmallVector<Value> results;
  for (Value y : body.getTerminator()->getOperands())
    results.push_back(map.lookupOrDefault(y));
  return results;
}

/// Loads the current value of every output at the loop indices `iv`; with
/// `onlyRead`, a null value stands for each output the body does not read.
SmallVector<Value> loadOutputs(OpBuilder &b, Location loc, linalg::GenericOp op,
                               ArrayRef<Value> iv, bool onlyRead) {
  Block &body = op.getRegion().front();
  SmallVector<Value> outs;
  for (OpOperand &out : op.getDpsInitsMutable()) {
    if (onlyRead && body.getArgument(out.getOperandNumber()).use_empty()) {
      outs.push_back(Value());
      continue;
    }
    outs.push_back(memref::LoadOp::create(
        b, loc, out.get(),
        applyMap(b, loc, op.getMatchingIndexingMap(&out), iv)));
  }
  return outs;
}

void storeOutputs(OpBuilder &b, Location loc, linalg::GenericOp op,
                  ArrayRef<Value> iv, ValueRange values) {
  for (auto [out, v] : llvm::zip_equal(op.getDpsInitsMutable(), values))
    memref::StoreOp::create(
        b, loc, v, out.get(),
        applyMap(b, loc, op.getMatchingIndexingMap(&out), iv));
}

/// Puts the loop indices back in the order of the generic's dimensions.
SmallVector<Value> mergeIndices(ArrayRef<unsigned> parDims, ValueRange parIv,
                                ArrayRef<unsigned> redDims, ValueRange redIv,
                                unsigned numLoops) {
  SmallVector<Value> iv(numLoops);
  for (auto [d, v] : llvm::zip_equal(parDims, parIv))
    iv[d] = v;
  for (auto [d, v] : llvm::zip_equal(redDims, redIv))
    iv[d] = v;
  return iv;
}

/// The gpu.all_reduce kind of a combiner op, if it has one.
std::optional<gpu::AllReduceOperation> allReduceKind(Operation *op) {
  using K = gpu::AllReduceOperation;
  return llvm::TypeSwitch<Operation *, std::optional<K>>(op)
      .Case<arith::AddFOp, arith::AddIOp>([](auto) { return K::ADD; })
      .Case<arith::MulFOp, arith::MulIOp>([](auto) { return K::MUL; })
      .Case([](arith::MaxNumFOp) { return K::MAXNUMF; })
      .Case([](arith::MinNumFOp) { return K::MINNUMF; })
      .Case([](arith::MaximumFOp) { return K::MAXIMUMF; })
      .Case([](arith::MinimumFOp) { return K::MINIMUMF; })
      .Case([](arith::MaxSIOp) { return K::MAXSI; })
      .Case([](arith::MinSIOp) { return K::MINSI; })
      .Case([](arith::MaxUIOp) { return K::MAXUI; })
      .Case([](arith::MinUIOp) { return K::MINUI; })
      .Case([](arith::AndIOp) { return K::AND; })
      .Case([](arith::OrIOp) { return K::OR; })
      .Case([](arith::XOrIOp) { return K::XOR; })
      .Default([](Operation *) { return std::nullopt; });
}

/// A gpu.launch of `grid` blocks of `threads` threads; `build` fills the body
/// (before its terminator) given the block and thread ids along x.
void launch(OpBuilder &b, Location loc, Value grid, int64_t threads,
            function_ref<void(OpBuilder &, Value, Value)> build) {
  Value one = cIndex(b, loc, 1);
  auto l = gpu::LaunchOp::create(b, loc, grid, one, one,
                                 cIndex(b, loc, threads), one, one);
  Block &body = l.getBody().front();
  OpBuilder kb = OpBuilder::atBlockEnd(&body);
  auto term = gpu::TerminatorOp::create(kb, loc);
  kb.setInsertionPoint(term);
  build(kb, l.getBlockIds().x, l.getThreadIds().x);
}

/// The buffer `v` views (through views and casts).
Value bufferRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      v = view.getViewSource();
    else if (auto cast = dyn_cast<memref::CastOp>(def))
      v = cast.getSource();
    else if (auto meta = dyn_cast<memref::ExtractStridedMetadataOp>(def))
      v = meta.getSource();
    else
      break;
  }
  return v;
}

/// For each reduction generic whose output buffer a fill writes just before
/// it (nothing with memory effects between): that fill. Its kernel is
/// dropped and the reduction combines with the fill's value where it would
/// have read the buffer, saving a launch per reduction.
llvm::DenseMap<Operation *, linalg::GenericOp>
fillsBeforeReductions(ArrayRef<Operation *> work) {
  llvm::DenseMap<Operation *, linalg::GenericOp> fills;
  for (Operation *op : work) {
    auto g = dyn_cast<linalg::GenericOp>(op);
    if (!g || g.getNumReductionLoops() == 0 || g.getNumDpsInits() != 1)
      continue;
    Operation *prev = g->getPrevNode();
    while (prev && isMemoryEffectFree(prev))
      prev = prev->getPrevNode();
    auto fill = dyn_cast_or_null<linalg::GenericOp>(prev);
    Value out = g.getDpsInitOperand(0)->get();
    // (An input viewing the output would read the fill's values.)
    if (fill && mlir::ember::fillValue(fill) &&
        fill.getDpsInitOperand(0)->get() == out &&
        llvm::none_of(g.getDpsInputs(), [&](Value in) {
          return bufferRoot(in) == bufferRoot(out);
        }))
      fills[g] = fill;
  }
  return fills;
}

struct Lowering {
  linalg::GenericOp op;
  /// The value the output holds before the op (a fill folded into it), or
  /// null: then kernels read the output buffer.
  Value initial = {};
  /// Whether large elementwise kernels may use vector loads and stores.
  bool vectorize = true;
  SmallVector<unsigned> parDims, redDims;
  SmallVector<Value> parSizes, redSizes;
  /// The number of parallel points (product of parSizes).
  Value points;

  LogicalResult run(OpBuilder &b) {
    Location loc = op.getLoc();
    SmallVector<Range> ranges =
        cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc);
    for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray())) {
      Value size = getValueOrCreateConstantIndexOp(b, loc, ranges[d].size);
      if (it == utils::IteratorType::parallel) {
        parDims.push_back(d);
        parSizes.push_back(size);
      } else {
        redDims.push_back(d);
        redSizes.push_back(size);
      }
    }
    // No parallel point (an empty array): nothing to launch. CUDA rejects
    // an empty grid, so a count known only at run time guards the launch.
    points = product(b, loc, parSizes);
    std::optional<int64_t> staticPoints = getConstantIntValue(points);
    if (staticPoints && *staticPoints == 0)
      return success();
    OpBuilder::InsertionGuard guard(b);
    if (!staticPoints) {
      Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                        points, cIndex(b, loc, 0));
      b.setInsertionPoint(
          scf::IfOp::create(b, loc, any, /*withElse=*/false).thenYield());
    }
    if (!redDims.empty() && succeeded(blockReduce(b)))
      return success();
    threadPerPoint(b);
    return success();
  }

  /// A loop over the flattened reduced elements `from` to `to` by `step`,
  /// at the parallel point `parIv`, carrying the outputs (the body's output
  /// arguments) from `inits`.
  scf::ForOp reductionLoop(OpBuilder &b, ArrayRef<Value> parIv, Value from,
                           Value to, Value step, ValueRange inits) {
    Location loc = op.getLoc();
    auto loop = scf::ForOp::create(b, loc, from, to, step, inits);
    OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
    SmallVector<Value> redIv =
        delinearize(lb, loc, loop.getInductionVar(), redSizes);
    SmallVector<Value> iv =
        mergeIndices(parDims, parIv, redDims, redIv, op.getNumLoops());
    scf::YieldOp::create(lb, loc,
                         emitBody(lb, loc, op, iv, loop.getRegionIterArgs()));
    return loop;
  }

  /// One thread per point of the parallel space; a reduction runs serially
  /// in its thread.
  void threadPerPoint(OpBuilder &b) {
    Location loc = op.getLoc();
    std::optional<int64_t> staticPoints = getConstantIntValue(points);
    if (redDims.empty() &&
        (!staticPoints || *staticPoints >= kUnrolledPointsMin)) {
      unrolledElementwise(b);
      return;
    }
    Value grid =
        arith::CeilDivUIOp::create(b, loc, points, cIndex(b, loc, kThreads));
    Value reduced = product(b, loc, redSizes);
    launch(b, loc, grid, kThreads, [&](OpBuilder &kb, Value bid, Value tid) {
      Value gid = arith::AddIOp::create(
          kb, loc,
          arith::MulIOp::create(kb, loc, bid, cIndex(kb, loc, kThreads)), tid);
      Value inRange = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ult,
                                            gid, points);
      auto ifOp = scf::IfOp::create(kb, loc, inRange, /*withElse=*/false);
      OpBuilder tb = ifOp.getThenBodyBuilder();
      SmallVector<Value> parIv = delinearize(tb, loc, gid, parSizes);
      unsigned n = op.getNumLoops();
      if (redDims.empty()) {
        SmallVector<Value> iv = mergeIndices(parDims, parIv, {}, {}, n);
        storeOutputs(
            tb, loc, op, iv,
            emitBody(tb, loc, op, iv, loadOutputs(tb, loc, op, iv, true)));
        return;
      }
      // Outputs do not depend on the reduction dimensions: read them at 0.
      SmallVector<Value> zeros(redDims.size(), cIndex(tb, loc, 0));
      SmallVector<Value> iv0 = mergeIndices(parDims, parIv, redDims, zeros, n);
      scf::ForOp loop = reductionLoop(
          tb, parIv, cIndex(tb, loc, 0), reduced, cIndex(tb, loc, 1),
          initial ? SmallVector<Value>{initial}
                  : loadOutputs(tb, loc, op, iv0, false));
      storeOutputs(tb, loc, op, iv0, loop.getResults());
    });
  }

  /// An elementwise generic over many points: each thread computes
  /// kElementwiseUnroll points kThreads apart, every load before any store
  /// (so that its loads are in flight together); a block whose points are
  /// all in range runs them unguarded, the last block guards each.
  void unrolledElementwise(OpBuilder &b) {
    Location loc = op.getLoc();
    int64_t tile = kThreads * kElementwiseUnroll;
    Value grid =
        arith::CeilDivUIOp::create(b, loc, points, cIndex(b, loc, tile));
    SmallVector<int> kinds;
    if (vectorize && vectorKinds(kinds)) {
      launch(b, loc, grid, kThreads, [&](OpBuilder &kb, Value bid, Value tid) {
        // Vector accesses need aligned addresses: the layouts are checked
        // statically, the base addresses here (uniform in the block).
        Value aligned = arith::ConstantIntOp::create(kb, loc, 1, 1);
        for (auto [o, kind] : llvm::zip(op->getOpOperands(), kinds)) {
          if (kind != kContiguous)
            continue;
          Value p =
              memref::ExtractAlignedPointerAsIndexOp::create(kb, loc, o.get());
          Value rem = arith::RemUIOp::create(
              kb, loc, p, cIndex(kb, loc, vectorBytes(o.get())));
          aligned = arith::AndIOp::create(
              kb, loc, aligned,
              arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::eq, rem,
                                    cIndex(kb, loc, 0)));
        }
        auto ifOp = scf::IfOp::create(kb, loc, aligned, /*withElse=*/true);
        OpBuilder tb = ifOp.getThenBodyBuilder();
        vectorBody(tb, bid, tid, kinds);
        OpBuilder eb = ifOp.getElseBodyBuilder();
        unrolledBody(eb, bid, tid);
      });
      return;
    }
    launch(b, loc, grid, kThreads, [&](OpBuilder &kb, Value bid, Value tid) {
      unrolledBody(kb, bid, tid);
    });
  }

  /// How vectorBody reads each operand of the generic (in operand order).
  enum VectorKind { kScalar, kContiguous, kBroadcast };
  static constexpr int64_t kVectorWidth = 4;

  static int64_t vectorBytes(Value memref) {
    return kVectorWidth *
           cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8;
  }

  /// Whether the elementwise generic can move kVectorWidth contiguous
  /// points per thread, and how each operand is read: outputs (which the
  /// body must not read) and inputs varying along the innermost dimension
  /// contiguous there (it is their last index, with stride 1, and the other
  /// strides and the offset static multiples of the width), other inputs
  /// broadcast along it; elements of at most 4 bytes; the innermost size a
  /// multiple of the width.
  bool vectorKinds(SmallVectorImpl<int> &kinds) {
    unsigned n = op.getNumLoops();
    std::optional<int64_t> inner =
        n ? getConstantIntValue(parSizes.back()) : std::nullopt;
    if (!inner || *inner % kVectorWidth || !getConstantIntValue(points))
      return false;
    Block &body = op.getRegion().front();
    for (OpOperand &o : op->getOpOperands()) {
      bool isInit = op.isDpsInit(&o);
      auto type = dyn_cast<MemRefType>(o.get().getType());
      if (!type) {
        if (isInit)
          return false;
        kinds.push_back(kScalar);
        continue;
      }
      Type elem = type.getElementType();
      if (!elem.isIntOrFloat() || elem.getIntOrFloatBitWidth() > 32 ||
          elem.getIntOrFloatBitWidth() % 8 ||
          (isInit && !body.getArgument(o.getOperandNumber()).use_empty()))
        return false;
      AffineMap map = op.getMatchingIndexingMap(&o);
      if (!map.isFunctionOfDim(n - 1)) {
        if (isInit)
          return false;
        kinds.push_back(kBroadcast);
        continue;
      }
      AffineExpr last = getAffineDimExpr(n - 1, op.getContext());
      if (map.getResults().back() != last ||
          llvm::any_of(map.getResults().drop_back(),
                       [&](AffineExpr e) { return e.isFunctionOfDim(n - 1); }))
        return false;
      SmallVector<int64_t> strides;
      int64_t offset;
      if (failed(type.getStridesAndOffset(strides, offset)) ||
          offset == ShapedType::kDynamic || offset % kVectorWidth ||
          strides.back() != 1 ||
          llvm::any_of(ArrayRef(strides).drop_back(), [](int64_t s) {
            return s == ShapedType::kDynamic || s % kVectorWidth;
          }))
        return false;
      kinds.push_back(kContiguous);
    }
    return true;
  }

  /// A thread's kVectorWidth contiguous points (flat index 4 (256 b + t)):
  /// one aligned vector load per contiguous input, one scalar load per
  /// broadcast one, the body per point, one vector store per output.
  void vectorBody(OpBuilder &kb, Value bid, Value tid, ArrayRef<int> kinds) {
    Location loc = op.getLoc();
    unsigned n = op.getNumLoops();
    Value first = arith::MulIOp::create(
        kb, loc,
        arith::AddIOp::create(
            kb, loc,
            arith::MulIOp::create(kb, loc, bid, cIndex(kb, loc, kThreads)),
            tid),
        cIndex(kb, loc, kVectorWidth));
    Value inRange = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ult,
                                          first, points);
    auto guard = scf::IfOp::create(kb, loc, inRange, /*withElse=*/false);
    OpBuilder gb = guard.getThenBodyBuilder();
    SmallVector<Value> iv =
        mergeIndices(parDims, delinearize(gb, loc, first, parSizes), {}, {}, n);
    Block &body = op.getRegion().front();
    unsigned numOperands = op->getNumOperands();
    SmallVector<SmallVector<Value>> inputs(
        kVectorWidth, SmallVector<Value>(numOperands, Value()));
    for (OpOperand *in : op.getDpsInputOperands()) {
      unsigned i = in->getOperandNumber();
      if (kinds[i] == kScalar || body.getArgument(i).use_empty())
        continue;
      SmallVector<Value> idx =
          applyMap(gb, loc, op.getMatchingIndexingMap(in), iv);
      if (kinds[i] == kBroadcast) {
        Value v = memref::LoadOp::create(gb, loc, in->get(), idx);
        for (int64_t u = 0; u < kVectorWidth; ++u)
          inputs[u][i] = v;
        continue;
      }
      Type elem = cast<MemRefType>(in->get().getType()).getElementType();
      Value vec = vector::LoadOp::create(
          gb, loc, VectorType::get({kVectorWidth}, elem), in->get(), idx,
          /*nontemporal=*/false, llvm::MaybeAlign(vectorBytes(in->get())));
      for (int64_t u = 0; u < kVectorWidth; ++u)
        inputs[u][i] = vector::ExtractOp::create(gb, loc, vec, u);
    }
    SmallVector<SmallVector<Value>> results;
    SmallVector<Value> noOutputs(op.getNumDpsInits(), Value());
    for (int64_t u = 0; u < kVectorWidth; ++u) {
      SmallVector<Value> ivu(iv);
      if (u)
        ivu[n - 1] =
            arith::AddIOp::create(gb, loc, iv[n - 1], cIndex(gb, loc, u));
      results.push_back(emitBody(gb, loc, op, ivu, noOutputs, inputs[u]));
    }
    for (auto [k, out] : llvm::enumerate(op.getDpsInitsMutable())) {
      SmallVector<Value> elems;
      for (int64_t u = 0; u < kVectorWidth; ++u)
        elems.push_back(results[u][k]);
      Type elem = cast<MemRefType>(out.get().getType()).getElementType();
      Value vec = vector::FromElementsOp::create(
          gb, loc, VectorType::get({kVectorWidth}, elem), elems);
      vector::StoreOp::create(
          gb, loc, vec, out.get(),
          applyMap(gb, loc, op.getMatchingIndexingMap(&out), iv),
          /*nontemporal=*/false, llvm::MaybeAlign(vectorBytes(out.get())));
    }
  }

  /// Block `bid`'s kElementwiseUnroll * kThreads points, each thread's
  /// kThreads apart (unrolledElementwise).
  void unrolledBody(OpBuilder &kb, Value bid, Value tid) {
    Location loc = op.getLoc();
    int64_t tile = kThreads * kElementwiseUnroll;
    unsigned n = op.getNumLoops();
    {
      Value start = arith::MulIOp::create(kb, loc, bid, cIndex(kb, loc, tile));
      Value base = arith::AddIOp::create(kb, loc, start, tid);
      Value end = arith::AddIOp::create(kb, loc, start, cIndex(kb, loc, tile));
      Value whole = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ule,
                                          end, points);
      auto ifOp = scf::IfOp::create(kb, loc, whole, /*withElse=*/true);
      auto ivAt = [&](OpBuilder &ib, int64_t u) {
        Value gid = base;
        if (u)
          gid = arith::AddIOp::create(ib, loc, base,
                                      cIndex(ib, loc, u * kThreads));
        return std::make_pair(
            gid, mergeIndices(parDims, delinearize(ib, loc, gid, parSizes), {},
                              {}, n));
      };
      OpBuilder tb = ifOp.getThenBodyBuilder();
      SmallVector<SmallVector<Value>> ivs, values;
      for (int64_t u = 0; u < kElementwiseUnroll; ++u) {
        ivs.push_back(ivAt(tb, u).second);
        values.push_back(emitBody(tb, loc, op, ivs.back(),
                                  loadOutputs(tb, loc, op, ivs.back(), true)));
      }
      for (int64_t u = 0; u < kElementwiseUnroll; ++u)
        storeOutputs(tb, loc, op, ivs[u], values[u]);
      OpBuilder eb = ifOp.getElseBodyBuilder();
      for (int64_t u = 0; u < kElementwiseUnroll; ++u) {
        auto [gid, iv] = ivAt(eb, u);
        Value inRange = arith::CmpIOp::create(
            eb, loc, arith::CmpIPredicate::ult, gid, points);
        auto guard = scf::IfOp::create(eb, loc, inRange, /*withElse=*/false);
        OpBuilder gb = guard.getThenBodyBuilder();
        storeOutputs(
            gb, loc, op, iv,
            emitBody(gb, loc, op, iv, loadOutputs(gb, loc, op, iv, true)));
      }
    }
  }

  /// The combiner of a reduction generic applied to `a` and `b` (its output
  /// argument bound to `a`, the other operand to `b`).
  Value combine(OpBuilder &b, Operation *combiner, BlockArgument outArg,
                Value a, Value other) {
    IRMapping map;
    for (Value operand : combiner->getOperands())
      map.map(operand, operand == outArg ? a : other);
    return b.clone(*combiner, map)->getResult(0);
  }

  /// The block's threads reduce the flattened reduced elements [from, to)
  /// at the parallel point `parIv`, each thread the elements at its offset
  /// modulo kThreads, in kReduceUnroll independent accumulators (an
  /// unrolled loop over whole rounds, then the rest); returns the block's
  /// total (gpu.all_reduce), in every thread.
  Value blockTotal(OpBuilder &kb, Location loc, ArrayRef<Value> parIv,
                   Value from, Value to, Value tid, Operation *combiner,
                   BlockArgument outArg, TypedAttr neutral,
                   gpu::AllReduceOperation kind) {
    Value init = arith::ConstantOp::create(kb, loc, neutral);
    Value round = cIndex(kb, loc, kThreads * kReduceUnroll);
    Value count = arith::SubIOp::create(kb, loc, to, from);
    Value whole = arith::MulIOp::create(
        kb, loc, arith::DivUIOp::create(kb, loc, count, round), round);
    Value mainEnd = arith::AddIOp::create(kb, loc, from, whole);
    SmallVector<Value> inits(kReduceUnroll, init);
    auto main =
        scf::ForOp::create(kb, loc, arith::AddIOp::create(kb, loc, from, tid),
                           mainEnd, round, inits);
    {
      OpBuilder lb = OpBuilder::atBlockBegin(main.getBody());
      SmallVector<Value> next;
      for (int64_t u = 0; u < kReduceUnroll; ++u) {
        Value flat = main.getInductionVar();
        if (u)
          flat = arith::AddIOp::create(lb, loc, flat,
                                       cIndex(lb, loc, u * kThreads));
        SmallVector<Value> iv = mergeIndices(
            parDims, parIv, redDims, delinearize(lb, loc, flat, redSizes),
            op.getNumLoops());
        next.push_back(
            emitBody(lb, loc, op, iv, main.getRegionIterArgs()[u]).front());
      }
      scf::YieldOp::create(lb, loc, next);
    }
    scf::ForOp rest =
        reductionLoop(kb, parIv, arith::AddIOp::create(kb, loc, mainEnd, tid),
                      to, cIndex(kb, loc, kThreads), main.getResult(0));
    Value acc = rest.getResult(0);
    for (int64_t u = 1; u < kReduceUnroll; ++u)
      acc = combine(kb, combiner, outArg, acc, main.getResult(u));
    return gpu::AllReduceOp::create(
               kb, loc, acc,
               gpu::AllReduceOperationAttr::get(kb.getContext(), kind),
               /*uniform=*/true)
        .getResult();
  }

  /// In thread 0: the output at `parIv` combined with `total`.
  void storeCombined(OpBuilder &kb, Location loc, ArrayRef<Value> parIv,
                     Value tid, Value total, Operation *combiner,
                     BlockArgument outArg) {
    Value first = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::eq, tid,
                                        cIndex(kb, loc, 0));
    auto ifOp = scf::IfOp::create(kb, loc, first, /*withElse=*/false);
    OpBuilder tb = ifOp.getThenBodyBuilder();
    SmallVector<Value> zeros(redDims.size(), cIndex(tb, loc, 0));
    SmallVector<Value> iv0 =
        mergeIndices(parDims, parIv, redDims, zeros, op.getNumLoops());
    Value old =
        initial ? initial : loadOutputs(tb, loc, op, iv0, false).front();
    // (Every kind here is commutative.)
    storeOutputs(tb, loc, op, iv0, combine(tb, combiner, outArg, old, total));
  }

  /// One block per output point: its threads reduce strided slices of the
  /// reduced elements, then combine with gpu.all_reduce. When the outputs
  /// are too few to fill the GPU, each output's elements are split over
  /// `split` blocks writing partial results, and a second kernel (a block
  /// per output) combines them.
  LogicalResult blockReduce(OpBuilder &b) {
    if (op.getNumDpsInits() != 1)
      return failure();
    // Only worth it for many reduced elements; a dynamic count qualifies.
    int64_t staticCount = 1;
    bool dynamic = false;
    for (Value s : redSizes) {
      std::optional<int64_t> c = getConstantIntValue(s);
      if (!c) {
        staticCount = kBlockReduceMin;
        dynamic = true;
      } else {
        staticCount *= *c;
      }
    }
    if (staticCount < kBlockReduceMin)
      return failure();
    Block &body = op.getRegion().front();
    BlockArgument outArg = body.getArgument(op.getNumDpsInputs());
    SmallVector<Operation *, 1> combiners;
    if (!outArg.hasOneUse() ||
        !matchReduction(op.getRegionOutputArgs(), 0, combiners) ||
        combiners.size() != 1)
      return failure();
    Operation *combiner = combiners.front();
    std::optional<gpu::AllReduceOperation> kind = allReduceKind(combiner);
    std::optional<TypedAttr> neutral = arith::getNeutralElement(combiner);
    Type t = outArg.getType();
    if (!kind || !neutral ||
        !(t.isF32() || t.isF64() || t.isInteger(32) || t.isInteger(64)))
      return failure();

    Location loc = op.getLoc();
    Value reduced = product(b, loc, redSizes);
    std::optional<int64_t> staticPoints = getConstantIntValue(points);
    int64_t split = 1;
    if (staticPoints && !dynamic && *staticPoints < kReduceBlocksMin)
      split = std::max<int64_t>(
          1,
          std::min<int64_t>(llvm::divideCeil(kReduceBlocksMin, *staticPoints),
                            staticCount / kElementsPerBlockMin));
    if (split == 1) {
      launch(b, loc, points, kThreads,
             [&](OpBuilder &kb, Value bid, Value tid) {
               SmallVector<Value> parIv = delinearize(kb, loc, bid, parSizes);
               Value total =
                   blockTotal(kb, loc, parIv, cIndex(kb, loc, 0), reduced, tid,
                              combiner, outArg, *neutral, *kind);
               storeCombined(kb, loc, parIv, tid, total, combiner, outArg);
             });
      return success();
    }
    // Stage 1: block `bid` reduces chunk `bid % split` of output
    // `bid / split` into partial[bid].
    int64_t chunk = static_cast<int64_t>(llvm::divideCeil(staticCount, split));
    auto partialType = MemRefType::get({*staticPoints * split}, t);
    Value partial =
        gpu::AllocOp::create(b, loc, partialType, Type(), {}, {}, {}, false)
            .getResult(0);
    launch(b, loc, cIndex(b, loc, *staticPoints * split), kThreads,
           [&](OpBuilder &kb, Value bid, Value tid) {
             Value splitV = cIndex(kb, loc, split);
             Value point = arith::DivUIOp::create(kb, loc, bid, splitV);
             Value part = arith::RemUIOp::create(kb, loc, bid, splitV);
             SmallVector<Value> parIv = delinearize(kb, loc, point, parSizes);
             Value from = arith::MinUIOp::create(
                 kb, loc,
                 arith::MulIOp::create(kb, loc, part, cIndex(kb, loc, chunk)),
                 reduced);
             Value to = arith::MinUIOp::create(
                 kb, loc,
                 arith::AddIOp::create(kb, loc, from, cIndex(kb, loc, chunk)),
                 reduced);
             Value total = blockTotal(kb, loc, parIv, from, to, tid, combiner,
                                      outArg, *neutral, *kind);
             Value first = arith::CmpIOp::create(
                 kb, loc, arith::CmpIPredicate::eq, tid, cIndex(kb, loc, 0));
             auto ifOp = scf::IfOp::create(kb, loc, first, /*withElse=*/false);
             OpBuilder tb = ifOp.getThenBodyBuilder();
             memref::StoreOp::create(tb, loc, total, partial, bid);
           });
    // Stage 2: a block per output combines its `split` partial results.
    launch(b, loc, points, kThreads, [&](OpBuilder &kb, Value bid, Value tid) {
      SmallVector<Value> parIv = delinearize(kb, loc, bid, parSizes);
      Value base = arith::MulIOp::create(kb, loc, bid, cIndex(kb, loc, split));
      auto loop = scf::ForOp::create(
          kb, loc, tid, cIndex(kb, loc, split), cIndex(kb, loc, kThreads),
          ValueRange{arith::ConstantOp::create(kb, loc, *neutral)});
      {
        OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
        Value v =
            memref::LoadOp::create(lb, loc, partial,
                                   ValueRange{arith::AddIOp::create(
                                       lb, loc, base, loop.getInductionVar())});
        scf::YieldOp::create(
            lb, loc,
            combine(lb, combiner, outArg, loop.getRegionIterArgs()[0], v));
      }
      Value total = gpu::AllReduceOp::create(kb, loc, loop.getResult(0),
                                             gpu::AllReduceOperationAttr::get(
                                                 kb.getContext(), *kind),
                                             /*uniform=*/true)
                        .getResult();
      storeCombined(kb, loc, parIv, tid, total, combiner, outArg);
    });
    gpu::DeallocOp::create(b, loc, Type(), {}, partial);
    return success();
  }
};

/// The buffers (roots) a launch's body reads and writes; fails when an op's
/// effects are not known.
struct Accesses {
  llvm::SmallPtrSet<Value, 8> reads, writes;

  LogicalResult collect(gpu::LaunchOp l) {
    WalkResult r = l.getBody().walk([&](Operation *op) {
      // (gpu.all_reduce combines registers of the block's threads.)
      if (isa<gpu::AllReduceOp, gpu::TerminatorOp>(op) ||
          op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
        return WalkResult::advance();
      auto iface = dyn_cast<MemoryEffectOpInterface>(op);
      if (!iface)
        return WalkResult::interrupt();
      SmallVector<MemoryEffects::EffectInstance> effects;
      iface.getEffects(effects);
      for (MemoryEffects::EffectInstance &e : effects) {
        if (!e.getValue())
          return WalkResult::interrupt();
        Value root = bufferRoot(e.getValue());
        if (isa<MemoryEffects::Read>(e.getEffect()))
          reads.insert(root);
        else
          writes.insert(root);
      }
      return WalkResult::advance();
    });
    return failure(r.wasInterrupted());
  }

  /// Whether two roots may be the same memory: the same value, or two
  /// buffers carried by loops (block arguments other than the function's)
  /// of the same type, which bufferization might have made one. Function
  /// arguments are distinct buffers (results are fresh ones, arguments
  /// are never written), and so are allocations.
  static bool mayAlias(Value a, Value b) {
    if (a == b)
      return true;
    auto carried = [](Value v) {
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && !isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
    };
    return carried(a) && carried(b) && a.getType() == b.getType();
  }

  /// Whether work with these accesses and `o`'s may run in any order.
  bool independentOf(const Accesses &o) const {
    auto meets = [](const llvm::SmallPtrSet<Value, 8> &a,
                    const llvm::SmallPtrSet<Value, 8> &b) {
      return llvm::any_of(a, [&](Value v) {
        return llvm::any_of(b, [&](Value w) { return mayAlias(v, w); });
      });
    };
    return !meets(writes, o.reads) && !meets(writes, o.writes) &&
           !meets(o.writes, reads);
  }
};

/// A launch of kThreads-thread blocks on a one-dimensional grid, without
/// async dependencies or dynamic shared memory: one that can share a
/// launch with another.
bool mergeable(gpu::LaunchOp l) {
  auto is = [](Value v, int64_t c) {
    std::optional<int64_t> x = getConstantIntValue(v);
    return x && *x == c;
  };
  return l.getAsyncDependencies().empty() && !l.getAsyncToken() &&
         !l.getDynamicSharedMemorySize() && !l.hasClusterSize() &&
         is(l.getBlockSizeX(), kThreads) && is(l.getBlockSizeY(), 1) &&
         is(l.getBlockSizeZ(), 1) && is(l.getGridSizeY(), 1) &&
         is(l.getGridSizeZ(), 1);
}

/// One launch doing `a`'s blocks then `b`'s (independent work): blocks
/// [0, a's grid) run a's body, the rest b's with their block index less a's
/// grid. Built at b; a and b are erased.
gpu::LaunchOp mergeLaunches(gpu::LaunchOp a, gpu::LaunchOp b) {
  OpBuilder hb(b);
  Location loc = b.getLoc();
  Value ga = a.getGridSizeX();
  Value grid = hb.createOrFold<arith::AddIOp>(loc, ga, b.getGridSizeX());
  Value one = cIndex(hb, loc, 1);
  auto merged = gpu::LaunchOp::create(hb, loc, grid, one, one,
                                      cIndex(hb, loc, kThreads), one, one);
  Block &body = merged.getBody().front();
  OpBuilder kb = OpBuilder::atBlockEnd(&body);
  Value bid = merged.getBlockIds().x;
  auto clone = [&](OpBuilder &ib, gpu::LaunchOp from, Value blockX) {
    Block &src = from.getBody().front();
    IRMapping map;
    for (auto [s, d] : llvm::zip(src.getArguments(), body.getArguments()))
      map.map(s, d);
    map.map(from.getBlockIds().x, blockX);
    map.map(from.getGridSize().x, from.getGridSizeX());
    for (Operation &op : src.without_terminator())
      ib.clone(op, map);
  };
  Value inA =
      arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ult, bid, ga);
  auto ifOp = scf::IfOp::create(kb, loc, inA, /*withElse=*/true);
  OpBuilder tb = ifOp.getThenBodyBuilder();
  clone(tb, a, bid);
  OpBuilder eb = ifOp.getElseBodyBuilder();
  clone(eb, b, arith::SubIOp::create(eb, loc, bid, ga));
  gpu::TerminatorOp::create(kb, loc);
  a.erase();
  b.erase();
  return merged;
}

/// Merges runs of independent launches in each block of host code (nothing
/// with memory effects between them): a launch costs the host some 7 us on
/// an H200 machine, which bounded the MLP step (its six parameter updates
/// are one launch now).
void mergeIndependentLaunches(func::FuncOp fn) {
  SmallVector<Block *> blocks;
  fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::LaunchOp>(op))
      return WalkResult::skip();
    for (Region &r : op->getRegions())
      for (Block &blk : r)
        blocks.push_back(&blk);
    return WalkResult::advance();
  });
  for (Block *blk : blocks) {
    gpu::LaunchOp prev;
    Accesses prevAccess;
    for (Operation &op : llvm::make_early_inc_range(*blk)) {
      auto l = dyn_cast<gpu::LaunchOp>(&op);
      if (!l) {
        if (!isMemoryEffectFree(&op))
          prev = {};
        continue;
      }
      Accesses acc;
      if (!mergeable(l) || failed(acc.collect(l))) {
        prev = {};
        continue;
      }
      if (prev && prevAccess.independentOf(acc)) {
        prev = mergeLaunches(prev, l);
        prevAccess.reads.insert(acc.reads.begin(), acc.reads.end());
        prevAccess.writes.insert(acc.writes.begin(), acc.writes.end());
        continue;
      }
      prev = l;
      prevAccess = std::move(acc);
    }
  }
}

/// Whether `loop` is scalar work on buffers that can run as it is in one
/// device thread: no results, and inside only arithmetic, structured
/// control flow, loads, stores and buffer views (scatter and sort lower to
/// such loops).
bool isSerialDeviceLoop(Operation *loop) {
  if (loop->getNumResults() != 0)
    return false;
  bool touchesMemory = false;
  WalkResult r = loop->walk([&](Operation *op) {
    if (isa<memref::LoadOp, memref::StoreOp>(op)) {
      touchesMemory = true;
      return WalkResult::advance();
    }
    Dialect *d = op->getDialect();
    if (isa<scf::SCFDialect, arith::ArithDialect, math::MathDialect,
            affine::AffineDialect, index::IndexDialect>(d) ||
        isa<memref::SubViewOp, memref::CastOp, memref::ExpandShapeOp,
            memref::CollapseShapeOp, memref::DimOp>(op))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return !r.wasInterrupted() && touchesMemory;
}

bool insideKernel(Operation *op) {
  return op->getParentOfType<gpu::LaunchOp>() != nullptr;
}

/// Reads one element of device memory into a host value: a one-thread
/// kernel copies it into a device scalar, which is copied to the host stack.
Value loadToHost(OpBuilder &b, Location loc, Value mem, ValueRange idx) {
  auto type = cast<MemRefType>(mem.getType());
  auto one = MemRefType::get({1}, type.getElementType());
  Value dev =
      gpu::AllocOp::create(b, loc, one, Type(), {}, {}, {}, false).getResult(0);
  launch(b, loc, cIndex(b, loc, 1), 1, [&](OpBuilder &kb, Value, Value) {
    Value v = memref::LoadOp::create(kb, loc, mem, idx);
    memref::StoreOp::create(kb, loc, v, dev, cIndex(kb, loc, 0));
  });
  Value host = memref::AllocaOp::create(b, loc, one);
  gpu::MemcpyOp::create(b, loc, Type(), {}, host, dev);
  gpu::DeallocOp::create(b, loc, Type(), {}, dev);
  return memref::LoadOp::create(b, loc, host, cIndex(b, loc, 0));
}

/// Writes a host value into one element of device memory.
void storeFromHost(OpBuilder &b, Location loc, Value v, Value mem,
                   ValueRange idx) {
  auto type = cast<MemRefType>(mem.getType());
  auto one = MemRefType::get({1}, type.getElementType());
  Value host = memref::AllocaOp::create(b, loc, one);
  memref::StoreOp::create(b, loc, v, host, cIndex(b, loc, 0));
  Value dev =
      gpu::AllocOp::create(b, loc, one, Type(), {}, {}, {}, false).getResult(0);
  gpu::MemcpyOp::create(b, loc, Type(), {}, dev, host);
  launch(b, loc, cIndex(b, loc, 1), 1, [&](OpBuilder &kb, Value, Value) {
    Value x = memref::LoadOp::create(kb, loc, dev, cIndex(kb, loc, 0));
    memref::StoreOp::create(kb, loc, x, mem, idx);
  });
  gpu::DeallocOp::create(b, loc, Type(), {}, dev);
}

/// Whether `v` is only passed (directly or through casts) to the runtime's
/// entries called from host code, which read it on the host: a host
/// callback's signature record and address lists.
bool onlyPassedToRuntime(Value v) {
  return llvm::all_of(v.getUsers(), [](Operation *u) {
    if (auto cast = dyn_cast<memref::CastOp>(u))
      return onlyPassedToRuntime(cast.getResult());
    auto call = dyn_cast<func::CallOp>(u);
    return call && call.getCallee().starts_with("ember_cuda_");
  });
}

/// A call of a CPU runtime entry from host code (LAPACK, the run-time
/// stacks: Runtime.def's EMBER_RUNTIME_ENTRY) on device buffers: each
/// buffer whose address it takes is copied into a host buffer before the
/// call and back after it, and the call gets the host addresses. Fails
/// when an address is not a whole buffer of static shape.
LogicalResult stageThroughHost(func::CallOp call) {
  OpBuilder b(call);
  Location loc = call.getLoc();
  llvm::MapVector<Value, Value> staged; // device buffer -> host buffer
  SmallVector<Value> operands(call.getOperands());
  for (Value &v : operands) {
    if (!isa<IndexType>(v.getType()))
      continue;
    auto p = v.getDefiningOp<memref::ExtractAlignedPointerAsIndexOp>();
    auto type =
        p ? dyn_cast<MemRefType>(p.getSource().getType()) : MemRefType();
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity())
      return failure();
    Value &host = staged[p.getSource()];
    if (!host) {
      auto alloc = memref::AllocOp::create(b, loc, type);
      alloc->setAttr("ember.host", b.getUnitAttr());
      gpu::MemcpyOp::create(b, loc, Type(), {}, alloc, p.getSource());
      host = alloc;
    }
    v = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, host);
  }
  call->setOperands(operands);
  b.setInsertionPointAfter(call);
  for (auto [dev, host] : staged) {
    gpu::MemcpyOp::create(b, loc, Type(), {}, dev, host);
    memref::DeallocOp::create(b, loc, host)
        ->setAttr("ember.host", b.getUnitAttr());
  }
  return success();
}

/// The buffer `v` is a view of (through casts), or null.
Operation *castRoot(Value v) {
  while (auto c = v.getDefiningOp<memref::CastOp>())
    v = c.getSource();
  return v.getDefiningOp();
}

/// Marks with `ember.host` the buffers only host code uses and the functions
/// only such buffers are passed to: buffer deallocation's bookkeeping (the
/// lists of pointers and ownership flags, and its `dealloc_helper`), which
/// on the device would cost a launch per element written and a
/// synchronization per flag read. A candidate function has a body of scalar
/// work on its arguments (structured control flow, arithmetic, loads and
/// stores);
/// a candidate buffer is a memref.alloc used only by host loads, stores,
/// deallocs, casts and calls of candidate functions. Functions receiving
/// any other buffer, and buffers passed to them, drop out to a fixed point.
void markHostBookkeeping(ModuleOp module) {
  llvm::SetVector<func::FuncOp> fns;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() || fn.isPublic())
      continue;
    bool scalarWork =
        !fn.walk([](Operation *op) {
             if (isa<func::ReturnOp, func::FuncOp, memref::LoadOp,
                     memref::StoreOp>(op))
               return WalkResult::advance();
             Dialect *d = op->getDialect();
             if (isa<scf::SCFDialect, arith::ArithDialect, index::IndexDialect>(
                     d) ||
                 isa<memref::DimOp>(op))
               return WalkResult::advance();
             return WalkResult::interrupt();
           }).wasInterrupted();
    if (scalarWork)
      fns.insert(fn);
  }
  llvm::SetVector<Operation *> bufs;
  std::function<bool(Value)> hostUses = [&](Value v) {
    return llvm::all_of(v.getUsers(), [&](Operation *u) {
      if (auto c = dyn_cast<memref::CastOp>(u))
        return hostUses(c.getResult());
      if (auto call = dyn_cast<func::CallOp>(u))
        return fns.contains(
            module.lookupSymbol<func::FuncOp>(call.getCalleeAttr()));
      return isa<memref::LoadOp, memref::StoreOp, memref::DeallocOp>(u) &&
             !u->getParentOfType<linalg::LinalgOp>();
    });
  };
  module.walk([&](memref::AllocOp a) {
    if (hostUses(a.getResult()))
      bufs.insert(a);
  });
  for (bool changed = true; changed;) {
    changed = false;
    module.walk([&](func::CallOp call) {
      auto fn = module.lookupSymbol<func::FuncOp>(call.getCalleeAttr());
      if (!fn || !fns.contains(fn))
        return;
      bool hostArgs = llvm::all_of(call.getOperands(), [&](Value v) {
        return !isa<MemRefType>(v.getType()) || bufs.contains(castRoot(v));
      });
      if (!hostArgs) {
        fns.remove(fn);
        changed = true;
      }
    });
    for (Operation *a : bufs.takeVector()) {
      if (hostUses(a->getResult(0)))
        bufs.insert(a);
      else
        changed = true;
    }
  }
  auto unit = UnitAttr::get(module.getContext());
  for (Operation *a : bufs) {
    a->setAttr("ember.host", unit);
    for (Operation *u : a->getResult(0).getUsers())
      if (isa<memref::DeallocOp>(u))
        u->setAttr("ember.host", unit);
  }
  for (func::FuncOp fn : fns)
    fn->setAttr("ember.host", unit);
}

/// Whether `mem` is a host buffer (a stack buffer, or one marked by
/// markHostBookkeeping), or an argument of a host function.
bool isHostBuffer(Value mem) {
  if (auto arg = dyn_cast<BlockArgument>(mem))
    return arg.getOwner()->getParentOp()->hasAttr("ember.host");
  Operation *root = castRoot(mem);
  return root && (isa<memref::AllocaOp>(root) || root->hasAttr("ember.host"));
}

struct EmberLinalgToGPUPass
    : public mlir::ember::impl::EmberLinalgToGPUPassBase<EmberLinalgToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(&getContext()));
    markHostBookkeeping(module);
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn.isExternal() && !fn->hasAttr("ember.host") &&
          failed(lowerFunction(fn)))
        return signalPassFailure();
  }

  LogicalResult lowerFunction(func::FuncOp fn) {
    // A host callback takes device buffers: the runtime's
    // ember_cuda_host_callback stages them through host memory around the
    // embedder's ember_host_callback (same signature).
    fn.walk([&](func::CallOp call) {
      if (call.getCallee() != "ember_host_callback")
        return;
      auto module = fn->getParentOfType<ModuleOp>();
      StringRef name = "ember_cuda_host_callback";
      if (!module.lookupSymbol(name)) {
        auto hook = module.lookupSymbol<func::FuncOp>(call.getCallee());
        OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
        func::FuncOp::create(mb, hook.getLoc(), name, hook.getFunctionType())
            .setPrivate();
      }
      call.setCallee(name);
    });
    // Host code may only call functions with bodies (which this pass lowers
    // too) and the runtime's entries on device buffers (`ember_cuda_*`,
    // Runtime.def); the other runtime entry points work on host memory.
    WalkResult calls = fn.walk([&](func::CallOp call) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (callee && callee.isExternal() &&
          !callee.getSymName().starts_with("ember_cuda_")) {
        const auto *entry =
            mlir::ember::runtime::lookupEntryPoint(callee.getSymName());
        if (entry && !entry->hook && succeeded(stageThroughHost(call)))
          return WalkResult::advance();
        mlir::ember::emitUserError(call,
                                   mlir::ember::runtime::ErrorKind::NotOnTarget)
            << "this needs the CPU runtime entry point '" << call.getCallee()
            << "', which the cuda target does not provide yet";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (calls.wasInterrupted())
      return failure();

    // Loops of scalar work on buffers (a scatter, a sort) run in one device
    // thread, not as a host loop launching a kernel per element access.
    SmallVector<Operation *> serial;
    fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<linalg::LinalgOp, gpu::LaunchOp>(op))
        return WalkResult::skip();
      if (isa<scf::ForOp, scf::WhileOp>(op) && isSerialDeviceLoop(op)) {
        serial.push_back(op);
        return WalkResult::skip();
      }
      return WalkResult::advance();
    });
    OpBuilder sb(fn.getContext());
    for (Operation *loop : serial) {
      sb.setInsertionPoint(loop);
      launch(sb, loop->getLoc(), cIndex(sb, loop->getLoc(), 1), 1,
             [&](OpBuilder &kb, Value, Value) {
               loop->moveBefore(kb.getInsertionBlock(), kb.getInsertionPoint());
             });
    }

    // Host ops only: the bodies of linalg ops become kernel code as they
    // are, so the walk does not enter them.
    SmallVector<Operation *> work;
    fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (isa<linalg::LinalgOp>(op)) {
        work.push_back(op);
        return WalkResult::skip();
      }
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp,
              memref::CopyOp, memref::GetGlobalOp, memref::LoadOp,
              memref::StoreOp>(op))
        work.push_back(op);
      return WalkResult::advance();
    });
    llvm::DenseMap<Operation *, linalg::GenericOp> fills =
        fillsBeforeReductions(work);
    llvm::DenseSet<Operation *> folded;
    for (auto &[reduction, fill] : fills)
      folded.insert(fill);
    OpBuilder b(fn.getContext());
    for (Operation *op : work) {
      b.setInsertionPoint(op);
      Location loc = op->getLoc();
      if (folded.contains(op))
        continue; // (erased with the reduction it is folded into)
      if (auto g = dyn_cast<linalg::GenericOp>(op)) {
        if (!g.hasPureBufferSemantics())
          return g.emitOpError("expected buffers after bufferization");
        linalg::GenericOp fill = fills.lookup(op);
        if (failed(Lowering{g, fill ? mlir::ember::fillValue(fill) : Value(),
                            vectorize}
                       .run(b)))
          return failure();
        op->erase();
        if (fill)
          fill->erase();
      } else if (isa<linalg::LinalgOp>(op)) {
        return op->emitOpError("expected linalg.generic (run "
                               "linalg-generalize-named-ops first)");
      } else if (op->hasAttr("ember.host")) {
        continue; // (a host buffer staging a runtime call's operand)
      } else if (auto a = dyn_cast<memref::AllocOp>(op)) {
        if (!a.getSymbolOperands().empty())
          return a.emitOpError("symbol operands are not supported");
        auto dev = gpu::AllocOp::create(b, loc, a.getType(), Type(), {},
                                        a.getDynamicSizes(), {}, false);
        a.replaceAllUsesWith(dev.getResult(0));
        a.erase();
      } else if (auto a = dyn_cast<memref::AllocaOp>(op)) {
        // Stack buffers of the host: only scalars host code reads and writes
        // itself stay there; one a kernel reads must live on the device.
        bool hostOnly = llvm::all_of(a->getUsers(), [](Operation *u) {
          if (auto cast = dyn_cast<memref::CastOp>(u))
            return onlyPassedToRuntime(cast.getResult());
          return isa<memref::LoadOp, memref::StoreOp, gpu::MemcpyOp>(u) &&
                 !insideKernel(u);
        });
        if (!hostOnly)
          return a.emitOpError("stack buffers used by device code are not "
                               "supported by the cuda target");
      } else if (auto d = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(b, loc, Type(), {}, d.getMemref());
        d.erase();
      } else if (auto c = dyn_cast<memref::CopyOp>(op)) {
        auto src = dyn_cast<MemRefType>(c.getSource().getType());
        auto dst = dyn_cast<MemRefType>(c.getTarget().getType());
        if (!src || !dst)
          return c.emitOpError(
              "copies of unranked buffers are not supported by the cuda "
              "target");
        if (!src.getLayout().isIdentity() || !dst.getLayout().isIdentity())
          return c.emitOpError("strided copies must be linalg.copy here (run "
                               "ember-lower-copies first)");
        gpu::MemcpyOp::create(b, loc, Type(), {}, c.getTarget(), c.getSource());
        c.erase();
      } else if (auto g = dyn_cast<memref::GetGlobalOp>(op)) {
        // (A host callback's signature record stays on the host.)
        if (onlyPassedToRuntime(g.getResult()))
          continue;
        // Constants live in host memory: copy each to the device once, at
        // the function's entry, and free it at every return.
        b.setInsertionPointToStart(&fn.getBody().front());
        Value host =
            memref::GetGlobalOp::create(b, loc, g.getType(), g.getNameAttr());
        Value dev =
            gpu::AllocOp::create(b, loc, g.getType(), Type(), {}, {}, {}, false)
                .getResult(0);
        gpu::MemcpyOp::create(b, loc, Type(), {}, dev, host);
        g.replaceAllUsesWith(dev);
        g.erase();
        fn.walk([&](func::ReturnOp ret) {
          OpBuilder rb(ret);
          gpu::DeallocOp::create(rb, loc, Type(), {}, dev);
        });
      } else if (auto l = dyn_cast<memref::LoadOp>(op)) {
        if (isHostBuffer(l.getMemRef()))
          continue;
        l.replaceAllUsesWith(loadToHost(b, loc, l.getMemRef(), l.getIndices()));
        l.erase();
      } else if (auto s = dyn_cast<memref::StoreOp>(op)) {
        if (isHostBuffer(s.getMemRef()))
          continue;
        storeFromHost(b, loc, s.getValue(), s.getMemRef(), s.getIndices());
        s.erase();
      }
    }
    if (mergeKernels)
      mergeIndependentLaunches(fn);
    return success();
  }
};

} // namespace
