//===- EmberToTPU.cpp - Pallas TPU kernels in Mosaic's form ---------------===//
//
// `ember-tpu-kernel`: a Pallas TPU kernel traced by Python is a function of
// values (grid indices as 0-d i32 tensors, then the kernel's buffers as
// tensors) returning the buffers' final values. This pass rewrites it into
// the form Mosaic compiles: grid indices are i32 scalars, buffers are memrefs
// in TPU memory spaces, each buffer is read once with `vector.load` (scalar
// buffers in SMEM with `memref.load`), the body computes on vectors with
// arith/math/vector/scf ops and `ember_tpu` ops, and each changed buffer is
// written back with `ember_tpu.vector_store`. Block index maps (transform
// functions) go through the same rewrite with scalar results.
//
// Written by hand rather than with the dialect-conversion framework: the
// rewrite changes every value's type at once (tensors to vectors or scalars)
// and maps region ops to other region ops, which a single walk with a value
// map does directly.
//
//===----------------------------------------------------------------------===//
#include "../EmberToLinalgCommon.h"
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"
#include "ember/IR/EmberTPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERTPUKERNELPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;
using namespace mlir::ember;
namespace et = mlir::ember_tpu;

namespace {

bool isUnsigned(Type t) {
  auto it = dyn_cast<IntegerType>(getElementTypeOrSelf(t));
  return it && it.isUnsigned();
}

/// Signless form of an element type (Mosaic computes on signless integers).
Type signless(Type t) {
  if (auto it = dyn_cast<IntegerType>(t); it && !it.isSignless())
    return IntegerType::get(t.getContext(), it.getWidth());
  return t;
}

/// tensor<T> -> T, tensor<s x T> -> vector<s x T>.
Type kernelType(Type t) {
  auto rt = cast<RankedTensorType>(t);
  Type e = signless(rt.getElementType());
  if (rt.getRank() == 0)
    return e;
  return VectorType::get(rt.getShape(), e);
}

/// `t` with the element type `e` (scalar or vector).
Type withElement(Type t, Type e) {
  if (auto v = dyn_cast<VectorType>(t))
    return VectorType::get(v.getShape(), e);
  return e;
}

/// `v` (vector or scalar) reshaped to `t` (vector or scalar) of the same
/// element count.
Value reshapeTo(OpBuilder &b, Location loc, Value v, Type t);

struct KernelBuilder {
  OpBuilder &b;
  IRMapping map;
  // Results computed ahead by the op they follow (a product's f32 convert).
  llvm::DenseMap<Operation *, Value> precomputed;

  // Values that are the contents of a kernel buffer (a memref argument) at
  // some point: the buffer's arguments, and what writes into them make.
  // Slices of such a value read the buffer, writes into it store there;
  // `version` says which write the value follows, so a value is in memory
  // only while no later write happened (`current`).
  struct Resident {
    Value mem;
    int64_t version;
  };
  llvm::DenseMap<Value, Resident> resident;
  llvm::DenseMap<Value, int64_t> versions;
  int64_t counter = 0;

  // The kernel's buffers (memref arguments), numbered from the first
  // argument after the grid.
  SmallVector<Value> buffers;

  explicit KernelBuilder(OpBuilder &b) : b(b) {}

  /// The memory space of the buffer whose contents `v` is, if it is one.
  std::optional<et::MemorySpace> spaceOf(Value v) {
    auto it = resident.find(v);
    if (it == resident.end())
      return std::nullopt;
    auto s = dyn_cast_or_null<et::MemorySpaceAttr>(
        cast<MemRefType>(it->second.mem.getType()).getMemorySpace());
    if (!s)
      return std::nullopt;
    return s.getValue();
  }

  /// Whether `v` is the contents of an SMEM buffer (read and written
  /// element by element).
  bool inSmem(Value v) { return spaceOf(v) == et::MemorySpace::smem; }

  /// Whether `v` is the contents of a buffer outside VMEM and SMEM (HBM,
  /// pl.ANY) or a semaphore, which kernels only reach through DMAs and
  /// semaphore ops.
  bool inHbm(Value v) {
    auto s = spaceOf(v);
    return s == et::MemorySpace::any || s == et::MemorySpace::hbm ||
           s == et::MemorySpace::semaphore_mem;
  }

  LogicalResult hbmError(Operation *op) {
    return op->emitOpError("reads or writes a buffer in HBM (pl.ANY) or a "
                           "semaphore directly; kernels copy HBM buffers to "
                           "VMEM with a DMA (pltpu.make_async_copy)");
  }

  /// The memref window of a traced DMA end.
  Value windowRef(Location loc, Value mem, ValueRange starts,
                  ArrayRef<int64_t> sizes, ArrayRef<int64_t> squeezed);
  /// Stores `v`, the value of buffer `mem`, there unless it is already.
  LogicalResult flush(Operation *op, Value v, Value mem);
  LogicalResult dma(Operation *op);
  /// A window of `operand` (static `fixed` starts, or the 0-d `starts`):
  /// read from its buffer when it is one's current contents (SMEM: one
  /// element), else sliced from the vector at constant starts.
  LogicalResult slice(Operation *op, Value operand, ValueRange starts,
                      ArrayRef<int64_t> fixed, ArrayRef<int64_t> sizes);
  /// The starts of a window, which must be constants, clamped into `shape`.
  FailureOr<SmallVector<int64_t>> constantStarts(Operation *op,
                                                 ValueRange starts,
                                                 ArrayRef<int64_t> shape,
                                                 ArrayRef<int64_t> sizes);
  LogicalResult staleError(Operation *op) {
    return op->emitOpError("reads a kernel buffer's contents from before a "
                           "later write, which TPU kernels cannot keep");
  }
  LogicalResult semaphore(Operation *op);
  /// `traced_load`/`traced_store`: a strided window of a VMEM buffer read
  /// (`strided_load`) or written (`strided_store`), or a masked write
  /// (`vector_store ... masked`).
  LogicalResult stridedAccess(Operation *op);
  /// The semaphore element a traced op names (a rank-0 semaphore memref).
  FailureOr<Value> semaphoreRef(Operation *op, int64_t buffer,
                                ValueRange starts, bool dma);

  bool current(Value v) {
    auto it = resident.find(v);
    return it != resident.end() &&
           versions.lookup(it->second.mem) == it->second.version;
  }

  /// The converted value of `v`; a buffer's current contents are loaded
  /// here when first needed whole. Null when `v` is a buffer's contents
  /// that a later write replaced.
  Value get(Value v) {
    if (Value m = map.lookupOrNull(v))
      return m;
    if (!current(v))
      return {};
    Value mem = resident[v].mem;
    auto mt = cast<MemRefType>(mem.getType());
    Location loc = mem.getLoc();
    if (inSmem(v)) {
      // SMEM holds scalars: a rank-0 buffer is read as one.
      if (mt.getRank())
        return {};
      Value l = memref::LoadOp::create(b, loc, mem, ValueRange{});
      map.map(v, l);
      return l;
    }
    SmallVector<Value> zeros(mt.getRank(),
                             arith::ConstantIndexOp::create(b, loc, 0));
    Value l = vector::LoadOp::create(
        b, loc, VectorType::get(mt.getShape(), mt.getElementType()), mem,
        zeros);
    map.map(v, l);
    return l;
  }

  /// Index operands of a window of `sizes` at `starts` (0-d integer values,
  /// or the constants `fixed` when `starts` is empty) in a buffer of
  /// `shape`, clamped into it as dynamic_slice clamps.
  SmallVector<Value> window(Location loc, ValueRange starts,
                            ArrayRef<int64_t> fixed, ArrayRef<int64_t> sizes,
                            ArrayRef<int64_t> shape) {
    SmallVector<Value> idx;
    for (unsigned k = 0; k < sizes.size(); ++k) {
      int64_t hi = shape[k] - sizes[k];
      if (starts.empty()) {
        idx.push_back(arith::ConstantIndexOp::create(
            b, loc, std::clamp<int64_t>(fixed[k], 0, hi)));
        continue;
      }
      // Constant starts (the usual `ref[...]`) clamp here.
      if (auto c = starts[k].getDefiningOp<ConstantOp>()) {
        auto a = cast<DenseElementsAttr>(c.getValue());
        int64_t v = (*a.value_begin<APInt>()).getSExtValue();
        idx.push_back(arith::ConstantIndexOp::create(
            b, loc, std::clamp<int64_t>(v, 0, hi)));
        continue;
      }
      Value s = get(starts[k]);
      Type t = s.getType();
      s = arith::MinSIOp::create(
          b, loc,
          arith::MaxSIOp::create(b, loc, s,
                                 arith::ConstantIntOp::create(b, loc, t, 0)),
          arith::ConstantIntOp::create(b, loc, t, hi));
      idx.push_back(arith::IndexCastOp::create(b, loc, b.getIndexType(), s));
    }
    return idx;
  }

  /// Loads of the buffer values used inside `op`'s regions but defined
  /// outside, before the regions may write the buffers.
  void materializeCaptured(Operation *op);
  void set(Operation *op, Value v) { map.map(op->getResult(0), v); }

  Value constant(Location loc, Type t, TypedAttr scalar) {
    if (auto vt = dyn_cast<VectorType>(t))
      return arith::ConstantOp::create(b, loc, vt,
                                       SplatElementsAttr::get(vt, scalar));
    return arith::ConstantOp::create(b, loc, t, scalar);
  }

  Value zero(Location loc, Type t) {
    Type e = getElementTypeOrSelf(t);
    return constant(loc, t, cast<TypedAttr>(b.getZeroAttr(e)));
  }

  Value splatLike(Location loc, Type t, double f, int64_t i) {
    Type e = getElementTypeOrSelf(t);
    TypedAttr a = isa<FloatType>(e) ? (TypedAttr)b.getFloatAttr(e, f)
                                    : (TypedAttr)b.getIntegerAttr(e, i);
    return constant(loc, t, a);
  }

  LogicalResult block(Block &src);
  LogicalResult op(Operation *op);
  LogicalResult elementwise(Operation *op);
  Value convert(Location loc, Value v, Type from, Type to, Type resultType);
};

Value KernelBuilder::windowRef(Location loc, Value mem, ValueRange starts,
                               ArrayRef<int64_t> sizes,
                               ArrayRef<int64_t> squeezed) {
  auto mt = cast<MemRefType>(mem.getType());
  bool whole = sizes == mt.getShape();
  for (Value s : starts) {
    auto c = s.getDefiningOp<ConstantOp>();
    whole &=
        c &&
        (*cast<DenseElementsAttr>(c.getValue()).value_begin<APInt>()).isZero();
  }
  Value w = mem;
  if (!whole) {
    SmallVector<Value> idx;
    for (Value s : starts)
      idx.push_back(get(s));
    w = et::MemRefSliceOp::create(b, loc,
                                  MemRefType::get(sizes, mt.getElementType(),
                                                  MemRefLayoutAttrInterface(),
                                                  mt.getMemorySpace()),
                                  mem, idx, ValueRange{});
  }
  if (squeezed.empty())
    return w;
  SmallVector<int64_t> shape;
  for (auto [d, n] : llvm::enumerate(sizes))
    if (!llvm::is_contained(squeezed, (int64_t)d))
      shape.push_back(n);
  return et::MemRefSqueezeOp::create(
      b, loc,
      MemRefType::get(shape, mt.getElementType(), MemRefLayoutAttrInterface(),
                      mt.getMemorySpace()),
      w);
}

LogicalResult KernelBuilder::flush(Operation *op, Value v, Value mem) {
  if (current(v) && resident[v].mem == mem)
    return success();
  Value x = get(v);
  if (!x)
    return op->emitOpError("copies a kernel buffer's contents from before a "
                           "later write, which TPU kernels cannot keep");
  auto mt = cast<MemRefType>(mem.getType());
  if (!isa<VectorType>(x.getType()))
    return op->emitOpError("copies a buffer computed as a scalar");
  SmallVector<Value> zeros(mt.getRank(),
                           arith::ConstantIndexOp::create(b, op->getLoc(), 0));
  et::VectorStoreOp::create(b, op->getLoc(), x, mem, zeros, /*mask=*/Value(),
                            b.getDenseI32ArrayAttr({}), /*add=*/false);
  versions[mem] = ++counter;
  resident[v] = {mem, counter};
  return success();
}

FailureOr<Value> KernelBuilder::semaphoreRef(Operation *op, int64_t buffer,
                                             ValueRange starts, bool dma) {
  if (buffer < 0 || buffer >= (int64_t)buffers.size())
    return op->emitOpError("names no kernel buffer");
  Value mem = buffers[buffer];
  auto t = cast<MemRefType>(mem.getType());
  if (dma != isa<et::DMASemaphoreType>(t.getElementType()) ||
      !isa<et::DMASemaphoreType, et::SemaphoreType>(t.getElementType()))
    return op->emitOpError(
        dma ? "needs a DMA semaphore (pltpu.SemaphoreType.DMA)"
            : "needs a regular semaphore "
              "(pltpu.SemaphoreType.REGULAR)");
  if ((int64_t)starts.size() != t.getRank())
    return op->emitOpError("needs an index per semaphore array dimension");
  if (!t.getRank())
    return mem;
  SmallVector<int64_t> ones(t.getRank(), 1), all;
  for (int64_t d = 0; d < t.getRank(); ++d)
    all.push_back(d);
  return windowRef(op->getLoc(), mem, starts, ones, all);
}

LogicalResult KernelBuilder::semaphore(Operation *op) {
  Location loc = op->getLoc();
  int64_t buffer = op->getAttrOfType<IntegerAttr>("sem_buffer").getInt();
  if (auto s = dyn_cast<et::TracedSemSignalOp>(op)) {
    auto sem = semaphoreRef(op, buffer, s.getSemStarts(), /*dma=*/false);
    if (failed(sem))
      return failure();
    // (A remote signal: to the semaphore of device `device_id`, core
    // `core_id`.)
    et::SemaphoreSignalOp::create(
        b, loc, *sem, get(s.getAmount()),
        /*device_id=*/s.getDeviceId() ? get(s.getDeviceId()) : Value(),
        /*core_id=*/s.getCoreId() ? get(s.getCoreId()) : Value());
    return success();
  }
  if (auto w = dyn_cast<et::TracedSemWaitOp>(op)) {
    auto sem = semaphoreRef(op, buffer, w.getSemStarts(), /*dma=*/false);
    if (failed(sem))
      return failure();
    et::SemaphoreWaitOp::create(b, loc, *sem, get(w.getAmount()));
    return success();
  }
  auto r = cast<et::TracedSemReadOp>(op);
  auto sem = semaphoreRef(op, buffer, r.getSemStarts(), /*dma=*/false);
  if (failed(sem))
    return failure();
  set(op, et::SemaphoreReadOp::create(b, loc, b.getI32Type(), *sem));
  return success();
}

FailureOr<SmallVector<int64_t>>
KernelBuilder::constantStarts(Operation *op, ValueRange starts,
                              ArrayRef<int64_t> shape,
                              ArrayRef<int64_t> sizes) {
  SmallVector<int64_t> out;
  for (auto [k, i] : llvm::enumerate(starts)) {
    DenseElementsAttr a;
    auto c = i.getDefiningOp<ConstantOp>();
    if (!c || !(a = dyn_cast<DenseElementsAttr>(c.getValue())))
      return op->emitOpError("TPU kernels slice and update values (not in a "
                             "buffer) only at constant offsets (index the "
                             "ref with pl.ds instead)");
    int64_t v = (*a.value_begin<APInt>()).getSExtValue();
    out.push_back(std::clamp<int64_t>(v, 0, shape[k] - sizes[k]));
  }
  return out;
}

LogicalResult KernelBuilder::slice(Operation *op, Value operand,
                                   ValueRange starts, ArrayRef<int64_t> fixed,
                                   ArrayRef<int64_t> sizes) {
  Location loc = op->getLoc();
  Type resultType = kernelType(op->getResult(0).getType());
  if (inHbm(operand))
    return hbmError(op);
  if (current(operand)) {
    // A window of a buffer: read it from memory (SMEM: one element).
    Value mem = resident[operand].mem;
    auto mt = cast<MemRefType>(mem.getType());
    SmallVector<Value> idx = window(loc, starts, fixed, sizes, mt.getShape());
    Value r;
    if (inSmem(operand)) {
      if (!llvm::all_of(sizes, [](int64_t n) { return n == 1; }))
        return op->emitOpError("reads an SMEM buffer other than element by "
                               "element");
      r = memref::LoadOp::create(b, loc, mem, idx);
    } else {
      r = vector::LoadOp::create(
          b, loc, VectorType::get(sizes, mt.getElementType()), mem, idx);
    }
    set(op, reshapeTo(b, loc, r, resultType));
    return success();
  }
  Value x = get(operand);
  if (inSmem(operand) || !x)
    return staleError(op);
  auto shape = cast<RankedTensorType>(operand.getType()).getShape();
  SmallVector<int64_t> at(fixed);
  if (!starts.empty()) {
    auto cs = constantStarts(op, starts, shape, sizes);
    if (failed(cs))
      return failure();
    at = *cs;
  }
  if (sizes == shape) {
    set(op, reshapeTo(b, loc, x, resultType));
    return success();
  }
  SmallVector<int64_t> ones(sizes.size(), 1);
  Value r = vector::ExtractStridedSliceOp::create(b, loc, x, at, sizes, ones);
  set(op, reshapeTo(b, loc, r, resultType));
  return success();
}

LogicalResult KernelBuilder::dma(Operation *op) {
  Location loc = op->getLoc();
  auto start = dyn_cast<et::TracedDMAStartOp>(op);
  auto wait = dyn_cast<et::TracedDMAWaitOp>(op);
  auto attr = [&](StringRef n) {
    return op->getAttrOfType<IntegerAttr>(n).getInt();
  };
  auto arr = [&](StringRef n) {
    return op->getAttrOfType<DenseI64ArrayAttr>(n).asArrayRef();
  };
  int64_t nb = buffers.size();
  int64_t si = attr("src_buffer"), di = attr("dst_buffer"),
          mi = attr("sem_buffer");
  if (si < 0 || si >= nb || di < 0 || di >= nb || mi < 0 || mi >= nb)
    return op->emitOpError("names no kernel buffer");
  Value srcMem = buffers[si], dstMem = buffers[di];
  // The operands are the named buffers' values: the same shapes.
  Value src = start ? start.getSrc() : wait.getSrc();
  Value dst = start ? start.getDst() : wait.getDst();
  for (auto [v, mem, what] : {std::tuple(src, srcMem, "source"),
                              std::tuple(dst, dstMem, "destination")})
    if (cast<ShapedType>(v.getType()).getShape() !=
        cast<MemRefType>(mem.getType()).getShape())
      return op->emitOpError("names a kernel buffer of another shape than its ")
             << what << " operand";
  ValueRange srcStarts = start ? start.getSrcStarts() : wait.getSrcStarts();
  ValueRange dstStarts = start ? start.getDstStarts() : wait.getDstStarts();
  ValueRange semStarts = start ? start.getSemStarts() : wait.getSemStarts();
  if (start) {
    // What the copy reads and what it leaves alone must be in memory.
    if (failed(flush(op, start.getSrc(), srcMem)) ||
        failed(flush(op, start.getDst(), dstMem)))
      return failure();
  }
  Value srcW =
      windowRef(loc, srcMem, srcStarts, arr("src_sizes"), arr("src_squeezed"));
  Value dstW =
      windowRef(loc, dstMem, dstStarts, arr("dst_sizes"), arr("dst_squeezed"));
  auto semRef = semaphoreRef(op, mi, semStarts, /*dma=*/true);
  if (failed(semRef))
    return failure();
  Value semW = *semRef;
  // A remote copy: the target device's logical id and its TensorCore.
  Value deviceId = start ? start.getDeviceId() : wait.getDeviceId();
  Value device = deviceId ? get(deviceId) : Value();
  Value coreId = start ? start.getCoreId() : wait.getCoreId();
  Value coreV = coreId ? get(coreId) : Value();
  if (start) {
    Value sendSem;
    if (auto k = start.getSrcSemBuffer()) {
      auto r = semaphoreRef(op, (int64_t)*k, start.getSrcSemStarts(),
                            /*dma=*/true);
      if (failed(r))
        return failure();
      sendSem = *r;
    }
    et::EnqueueDMAOp::create(b, loc, srcW, sendSem, dstW, semW, device, coreV,
                             /*priority=*/0,
                             /*strict_ordering=*/false);
  } else if (wait.getSend()) {
    // Until the source is read (the send semaphore), as JAX writes it: the
    // ends swapped and a placeholder device and core. The destination
    // here is unchanged.
    Value zero = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 0);
    et::WaitDMA2Op::create(b, loc, semW, dstW, srcW, zero, zero,
                           /*strict_ordering=*/false);
    if (current(wait.getDst()))
      resident[wait.getDstAfter()] = resident[wait.getDst()];
    else if (Value v = map.lookupOrNull(wait.getDst()))
      map.map(wait.getDstAfter(), v);
    return success();
  } else {
    et::WaitDMA2Op::create(b, loc, semW, srcW, dstW, device, coreV,
                           /*strict_ordering=*/false);
  }
  // The destination changes under the copy; after the wait the buffer holds
  // the new value.
  versions[dstMem] = ++counter;
  if (wait)
    resident[wait.getDstAfter()] = {dstMem, counter};
  return success();
}

LogicalResult KernelBuilder::stridedAccess(Operation *op) {
  Location loc = op->getLoc();
  auto load = dyn_cast<et::TracedLoadOp>(op);
  auto store = dyn_cast<et::TracedStoreOp>(op);
  Value buf = load ? load.getBuffer() : store.getBuffer();
  if (inHbm(buf))
    return hbmError(op);
  if (!current(buf))
    return staleError(op);
  if (inSmem(buf))
    return op->emitOpError("reads or writes an SMEM buffer by strided or "
                           "masked windows; kernels reach SMEM element by "
                           "element");
  Value mem = resident[buf].mem;
  auto mt = cast<MemRefType>(mem.getType());
  ArrayRef<int32_t> strides = load ? load.getStrides() : store.getStrides();
  auto shape =
      cast<ShapedType>(load ? load.getType() : store.getValue().getType())
          .getShape();
  // The window the strided elements span, clamped into the buffer as
  // dynamic_slice clamps.
  SmallVector<int64_t> extent;
  for (auto [n, st] : llvm::zip(shape, strides))
    extent.push_back(n ? (n - 1) * st + 1 : 0);
  SmallVector<Value> idx =
      window(loc, load ? load.getStarts() : store.getStarts(), {}, extent,
             mt.getShape());
  auto vt = VectorType::get(shape, mt.getElementType());
  bool unit = llvm::all_of(strides, [](int32_t st) { return st == 1; });
  if (load) {
    Value r = unit ? (Value)vector::LoadOp::create(b, loc, vt, mem, idx)
                   : (Value)et::StridedLoadOp::create(
                         b, loc, vt, mem, idx, b.getDenseI32ArrayAttr(strides));
    set(op, reshapeTo(b, loc, r, kernelType(load.getType())));
    return success();
  }
  Value v = get(store.getValue());
  Value mask = store.getMask() ? get(store.getMask()) : Value();
  if (!v || (store.getMask() && !mask))
    return staleError(op);
  v = reshapeTo(b, loc, v, vt);
  if (unit)
    et::VectorStoreOp::create(
        b, loc, v, mem, idx,
        mask ? reshapeTo(b, loc, mask, VectorType::get(shape, b.getI1Type()))
             : Value(),
        b.getDenseI32ArrayAttr({}), /*add=*/false);
  else
    et::StridedStoreOp::create(b, loc, v, mem, idx,
                               b.getDenseI32ArrayAttr(strides));
  versions[mem] = ++counter;
  resident[store.getResult()] = {mem, counter};
  return success();
}

/// The value a buffer held before the writes (stores, DMA waits) that made
/// `v` from it.
static Value rootBuffer(Value v) {
  while (true) {
    if (auto d = v.getDefiningOp<DynamicUpdateSliceOp>()) {
      v = d.getOperand();
    } else if (auto s = v.getDefiningOp<et::TracedStoreOp>()) {
      v = s.getBuffer();
    } else if (auto w = v.getDefiningOp<et::TracedDMAWaitOp>()) {
      v = w.getDst();
    } else if (auto c = v.getDefiningOp<CaseOp>()) {
      // A buffer every branch writes (or leaves) is the one it came from.
      unsigned i = cast<OpResult>(v).getResultNumber();
      Value root;
      for (Region &r : c.getBranches()) {
        Value y = rootBuffer(r.front().getTerminator()->getOperand(i));
        if (root && y != root)
          return v;
        root = y;
      }
      if (!root || c->isAncestor(root.getParentBlock()->getParentOp()))
        return v;
      v = root;
    } else if (auto w = v.getDefiningOp<WhileOp>()) {
      // So is a buffer a loop threads through.
      unsigned i = cast<OpResult>(v).getResultNumber();
      Block &body = w.getBody().front();
      if (rootBuffer(body.getTerminator()->getOperand(i)) !=
          body.getArgument(i))
        return v;
      v = w.getInit()[i];
    } else {
      return v;
    }
  }
}

void KernelBuilder::materializeCaptured(Operation *op) {
  llvm::SetVector<Value> used;
  getUsedValuesDefinedAbove(op->getRegions(), used);
  for (Value v : used)
    if (!map.lookupOrNull(v) && current(v) && !inHbm(v))
      (void)get(v);
}

LogicalResult KernelBuilder::block(Block &src) {
  for (Operation &o : src.without_terminator())
    if (failed(op(&o)))
      return failure();
  return success();
}

Value KernelBuilder::convert(Location loc, Value v, Type from, Type to,
                             Type resultType) {
  Type fe = signless(from), te = signless(to);
  if (fe == te)
    return v;
  bool fFloat = isa<FloatType>(fe), tFloat = isa<FloatType>(te);
  if (te.isInteger(1)) {
    Value z = zero(loc, v.getType());
    return fFloat
               ? (Value)arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE,
                                              v, z)
               : (Value)arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                              v, z);
  }
  if (fFloat && tFloat)
    return fe.getIntOrFloatBitWidth() < te.getIntOrFloatBitWidth()
               ? (Value)arith::ExtFOp::create(b, loc, resultType, v)
               : (Value)arith::TruncFOp::create(b, loc, resultType, v);
  bool fromU = isUnsigned(from) || fe.isInteger(1);
  if (!fFloat && tFloat)
    return fromU ? (Value)arith::UIToFPOp::create(b, loc, resultType, v)
                 : (Value)arith::SIToFPOp::create(b, loc, resultType, v);
  if (fFloat && !tFloat)
    return isUnsigned(to)
               ? (Value)arith::FPToUIOp::create(b, loc, resultType, v)
               : (Value)arith::FPToSIOp::create(b, loc, resultType, v);
  unsigned fw = fe.getIntOrFloatBitWidth(), tw = te.getIntOrFloatBitWidth();
  if (fw < tw)
    return fromU ? (Value)arith::ExtUIOp::create(b, loc, resultType, v)
                 : (Value)arith::ExtSIOp::create(b, loc, resultType, v);
  return arith::TruncIOp::create(b, loc, resultType, v);
}

LogicalResult KernelBuilder::elementwise(Operation *op) {
  Location loc = op->getLoc();
  StringRef name = op->getName().stripDialect();
  SmallVector<Value> a;
  for (Value v : op->getOperands())
    a.push_back(get(v));
  Type rt = kernelType(op->getResult(0).getType());
  Type orig = getElementTypeOrSelf(op->getOperand(0).getType());
  Type e = getElementTypeOrSelf(a[0].getType());
  bool f = isa<FloatType>(e), u = isUnsigned(orig) || e.isInteger(1);
  Value r;
  auto un = [&](auto tag) {
    using OpT = decltype(tag);
    r = OpT::create(b, loc, a[0]);
  };
  auto bin = [&](auto tag) {
    using OpT = decltype(tag);
    r = OpT::create(b, loc, a[0], a[1]);
  };
  if (name == "add")
    f ? bin(arith::AddFOp()) : bin(arith::AddIOp());
  else if (name == "sub")
    f ? bin(arith::SubFOp()) : bin(arith::SubIOp());
  else if (name == "mul")
    f ? bin(arith::MulFOp()) : bin(arith::MulIOp());
  else if (name == "div")
    f ? bin(arith::DivFOp())
      : (u ? bin(arith::DivUIOp()) : bin(arith::DivSIOp()));
  else if (name == "rem")
    f ? bin(arith::RemFOp())
      : (u ? bin(arith::RemUIOp()) : bin(arith::RemSIOp()));
  else if (name == "max")
    f ? bin(arith::MaximumFOp())
      : (u ? bin(arith::MaxUIOp()) : bin(arith::MaxSIOp()));
  else if (name == "min")
    f ? bin(arith::MinimumFOp())
      : (u ? bin(arith::MinUIOp()) : bin(arith::MinSIOp()));
  else if (name == "and" && !f)
    bin(arith::AndIOp());
  else if (name == "or" && !f)
    bin(arith::OrIOp());
  else if (name == "xor" && !f)
    bin(arith::XOrIOp());
  else if (name == "shift_left" && !f)
    bin(arith::ShLIOp());
  else if (name == "shift_right_logical" && !f)
    bin(arith::ShRUIOp());
  else if (name == "shift_right_arithmetic" && !f)
    bin(arith::ShRSIOp());
  else if (auto ip = dyn_cast<IntegerPowOp>(op)) {
    // Squaring and multiplying, as the CPU lowering; 1 / x^|y| for y < 0.
    auto mul = [&](Value p, Value q) -> Value {
      return f ? (Value)arith::MulFOp::create(b, loc, p, q)
               : (Value)arith::MulIOp::create(b, loc, p, q);
    };
    int64_t y = ip.getY();
    uint64_t n = y < 0 ? -(uint64_t)y : (uint64_t)y;
    Value acc, base = a[0];
    for (; n; n >>= 1) {
      if (n & 1)
        acc = acc ? mul(acc, base) : base;
      if (n > 1)
        base = mul(base, base);
    }
    Value one = splatLike(loc, rt, 1.0, 1);
    r = !acc    ? one
        : y > 0 ? acc
                : (Value)arith::DivFOp::create(b, loc, one, acc);
  } else if (name == "pow" && f)
    bin(math::PowFOp());
  else if (name == "atan2" && f)
    bin(math::Atan2Op());
  else if (name == "not" && !f)
    r = arith::XOrIOp::create(b, loc, a[0],
                              constant(loc, rt, b.getIntegerAttr(e, -1)));
  else if (name == "neg")
    r = f ? (Value)arith::NegFOp::create(b, loc, a[0])
          : (Value)arith::SubIOp::create(b, loc, zero(loc, rt), a[0]);
  else if (name == "abs")
    f ? un(math::AbsFOp()) : un(math::AbsIOp());
  else if (f && name == "exp")
    un(math::ExpOp());
  else if (f && name == "exp2")
    un(math::Exp2Op());
  else if (f && name == "log")
    un(math::LogOp());
  else if (f && name == "log1p")
    un(math::Log1pOp());
  else if (f && name == "expm1")
    un(math::ExpM1Op());
  else if (f && name == "tanh")
    un(math::TanhOp());
  else if (f && name == "sqrt")
    un(math::SqrtOp());
  else if (f && name == "rsqrt")
    un(math::RsqrtOp());
  else if (f && name == "sin")
    un(math::SinOp());
  else if (f && name == "cos")
    un(math::CosOp());
  else if (f && name == "tan")
    un(math::TanOp());
  else if (f && name == "erf")
    un(math::ErfOp());
  else if (f && name == "floor")
    un(math::FloorOp());
  else if (f && name == "ceil")
    un(math::CeilOp());
  else if (f && name == "round_nearest_even")
    un(math::RoundEvenOp());
  else if (f && name == "round_nearest_afz")
    un(math::RoundOp());
  else if (f && name == "logistic") {
    // 1 / (1 + exp(-x)).
    Value one = splatLike(loc, rt, 1.0, 1);
    Value ex = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, a[0]));
    r = arith::DivFOp::create(b, loc, one,
                              arith::AddFOp::create(b, loc, one, ex));
  } else if (name == "sign" && !e.isInteger(1)) {
    // -1, 0 or 1 by selects; a float zero or NaN is itself (XLA's sign).
    Value z = zero(loc, rt);
    Value rest = f ? a[0] : z;
    if (!u)
      rest = arith::SelectOp::create(
          b, loc, buildCompare(b, loc, ComparisonDirection::LT, a[0], z, orig),
          splatLike(loc, rt, -1.0, -1), rest);
    r = arith::SelectOp::create(
        b, loc, buildCompare(b, loc, ComparisonDirection::GT, a[0], z, orig),
        splatLike(loc, rt, 1.0, 1), rest);
  } else if (name == "select")
    r = arith::SelectOp::create(b, loc, a[0], a[1], a[2]);
  else if (name == "clamp")
    r = f ? (Value)arith::MinimumFOp::create(
                b, loc, arith::MaximumFOp::create(b, loc, a[1], a[0]), a[2])
          : (u ? (Value)arith::MinUIOp::create(
                     b, loc, arith::MaxUIOp::create(b, loc, a[1], a[0]), a[2])
               : (Value)arith::MinSIOp::create(
                     b, loc, arith::MaxSIOp::create(b, loc, a[1], a[0]), a[2]));
  else if (auto c = dyn_cast<CompareOp>(op))
    r = buildCompare(b, loc, c.getComparisonDirection(), a[0], a[1], orig);
  else if (isa<ConvertOp>(op))
    r = convert(loc, a[0], orig,
                getElementTypeOrSelf(op->getResult(0).getType()), rt);
  if (!r)
    return op->emitOpError("has no TPU kernel lowering for element type ")
           << orig;
  map.map(op->getResult(0), r);
  return success();
}

/// `v` (vector or scalar) reshaped to `t` (vector or scalar) of the same
/// element count.
Value reshapeTo(OpBuilder &b, Location loc, Value v, Type t) {
  if (v.getType() == t)
    return v;
  auto vt = dyn_cast<VectorType>(v.getType());
  auto tt = dyn_cast<VectorType>(t);
  if (!vt) // scalar -> vector<1x..x1>
    return vector::BroadcastOp::create(b, loc, tt, v);
  if (!tt) { // vector<1x..x1> -> scalar
    if (auto bc = v.getDefiningOp<vector::BroadcastOp>();
        bc && bc.getSource().getType() == t)
      return bc.getSource();
    SmallVector<int64_t> zeros(vt.getRank(), 0);
    return vector::ExtractOp::create(b, loc, v, zeros);
  }
  return vector::ShapeCastOp::create(b, loc, tt, v);
}

LogicalResult KernelBuilder::op(Operation *op) {
  Location loc = op->getLoc();
  if (auto it = precomputed.find(op); it != precomputed.end()) {
    set(op, it->second);
    return success();
  }
  // Scoped buffers were allocated at the kernel's region start (convert).
  if (isa<et::TracedAllocOp>(op))
    return success();
  if (auto ai = dyn_cast<AxisIndexOp>(op)) {
    // Under shard_map over one mesh axis, the axis index is the device's
    // logical id (its stride along the axis is 1), taken modulo the axis
    // size as JAX computes it.
    Value id = et::DeviceIdOp::create(b, loc, b.getI32Type());
    Value n = arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                           (int64_t)ai.getAxisSize());
    set(op, arith::RemSIOp::create(b, loc, id, n));
    return success();
  }
  if (isa<et::TracedDMAStartOp, et::TracedDMAWaitOp>(op))
    return dma(op);
  if (isa<et::TracedSemSignalOp, et::TracedSemWaitOp, et::TracedSemReadOp>(op))
    return semaphore(op);
  if (auto seed = dyn_cast<et::TracedPRNGSeedOp>(op)) {
    SmallVector<Value> seeds;
    for (Value v : seed.getSeeds())
      seeds.push_back(get(v));
    et::PRNGSetSeed32Op::create(b, loc, seeds);
    return success();
  }
  if (auto bits = dyn_cast<et::TracedPRNGRandomBitsOp>(op)) {
    set(op, et::PRNGRandomBitsOp::create(b, loc, kernelType(bits.getType())));
    return success();
  }
  if (isa<et::TracedLoadOp, et::TracedStoreOp>(op))
    return stridedAccess(op);
  if (!isa<SliceOp, DynamicSliceOp, DynamicUpdateSliceOp, WhileOp, CaseOp>(op))
    for (Value o : op->getOperands())
      if (inHbm(o))
        return hbmError(op);
  if (!isa<SliceOp, DynamicSliceOp, DynamicUpdateSliceOp, WhileOp, CaseOp>(op))
    for (Value o : op->getOperands())
      if (!get(o))
        return inSmem(o) ? (LogicalResult)op->emitOpError(
                               "uses an SMEM buffer (scalar prefetch or SMEM "
                               "scratch) whole; kernels read and write it "
                               "element by element")
                         : staleError(op);
  if (op->hasTrait<OpTrait::Elementwise>() &&
      isa<EmberDialect>(op->getDialect()))
    return elementwise(op);
  if (isa<StopGradientOp, OptimizationBarrierOp>(op)) {
    for (auto [r, o] : llvm::zip(op->getResults(), op->getOperands()))
      map.map(r, get(o));
    return success();
  }
  if (auto c = dyn_cast<ConstantOp>(op)) {
    auto value = cast<DenseElementsAttr>(c.getValue());
    Type t = kernelType(c.getType());
    Type e = getElementTypeOrSelf(t);
    if (value.getElementType() != e) // unsigned: the same bits, signless
      value = value.bitcast(e);
    if (auto vt = dyn_cast<VectorType>(t))
      set(c, arith::ConstantOp::create(b, loc, vt, value.reshape(vt)));
    else
      set(c, arith::ConstantOp::create(
                 b, loc, t, cast<TypedAttr>(*value.value_begin<Attribute>())));
    return success();
  }
  if (auto bc = dyn_cast<BitcastConvertOp>(op)) {
    Value x = get(bc.getOperand());
    Type t = kernelType(bc.getType());
    if (getElementTypeOrSelf(x.getType()).getIntOrFloatBitWidth() !=
        getElementTypeOrSelf(t).getIntOrFloatBitWidth())
      return op->emitOpError("TPU kernels bitcast between element types of "
                             "one width (pltpu.bitcast packs rows otherwise)");
    set(bc,
        x.getType() == t ? x : (Value)arith::BitcastOp::create(b, loc, t, x));
    return success();
  }
  if (auto io = dyn_cast<IotaOp>(op)) {
    auto t = dyn_cast<VectorType>(kernelType(io.getType()));
    if (!t || !isa<IntegerType>(t.getElementType()))
      return op->emitOpError(
          "TPU kernels take iotas of integers of rank 1 or more");
    set(io, et::IotaOp::create(
                b, loc, t,
                b.getDenseI32ArrayAttr({(int32_t)io.getIotaDimension()})));
    return success();
  }
  if (auto bc = dyn_cast<BroadcastInDimOp>(op)) {
    Value x = get(bc.getOperand());
    auto out = cast<VectorType>(kernelType(bc.getType()));
    auto in = dyn_cast<VectorType>(x.getType());
    if (in) {
      // Put the operand's dimensions where they go (size 1 elsewhere), then
      // broadcast; the dimensions must keep their order.
      ArrayRef<int64_t> dims = bc.getBroadcastDimensions();
      if (!llvm::is_sorted(dims))
        return op->emitOpError(
            "TPU kernels take broadcasts that keep the dimensions' order");
      SmallVector<int64_t> shape(out.getRank(), 1);
      for (auto [i, d] : llvm::enumerate(dims))
        shape[d] = in.getDimSize(i);
      x = reshapeTo(b, loc, x, VectorType::get(shape, in.getElementType()));
    }
    set(bc, x.getType() == out
                ? x
                : (Value)vector::BroadcastOp::create(b, loc, out, x));
    return success();
  }
  if (auto rs = dyn_cast<ReshapeOp>(op)) {
    set(rs, reshapeTo(b, loc, get(rs.getOperand()), kernelType(rs.getType())));
    return success();
  }
  if (auto tr = dyn_cast<TransposeOp>(op)) {
    Value x = get(tr.getOperand());
    if (!isa<VectorType>(x.getType())) {
      set(tr, x);
      return success();
    }
    set(tr, et::TransposeOp::create(b, loc, kernelType(tr.getType()), x,
                                    tr.getPermutation()));
    return success();
  }
  if (auto sl = dyn_cast<SliceOp>(op)) {
    if (llvm::any_of(sl.getStrides(), [](int64_t s) { return s != 1; }))
      return op->emitOpError("TPU kernels take slices of stride 1");
    SmallVector<int64_t> sizes;
    for (auto [s, l] : llvm::zip(sl.getStartIndices(), sl.getLimitIndices()))
      sizes.push_back(l - s);
    return slice(op, sl.getOperand(), {}, sl.getStartIndices(), sizes);
  }
  if (auto ds = dyn_cast<DynamicSliceOp>(op))
    return slice(op, ds.getOperand(), ds.getStartIndices(), {},
                 ds.getSliceSizes());
  if (auto dus = dyn_cast<DynamicUpdateSliceOp>(op)) {
    auto in = cast<RankedTensorType>(dus.getOperand().getType());
    auto up = cast<RankedTensorType>(dus.getUpdate().getType());
    if (inHbm(dus.getOperand()))
      return hbmError(op);
    Value u = get(dus.getUpdate());
    if (!u)
      return staleError(op);
    if (current(dus.getOperand())) {
      // A write into a buffer: store the window there (SMEM: its element).
      Value mem = resident[dus.getOperand()].mem;
      auto mt = cast<MemRefType>(mem.getType());
      SmallVector<Value> idx =
          window(loc, dus.getStartIndices(), {}, up.getShape(), mt.getShape());
      if (inSmem(dus.getOperand())) {
        if (up.getNumElements() != 1)
          return op->emitOpError("writes an SMEM buffer other than element "
                                 "by element");
        memref::StoreOp::create(
            b, loc, reshapeTo(b, loc, u, mt.getElementType()), mem, idx);
      } else {
        et::VectorStoreOp::create(
            b, loc,
            reshapeTo(b, loc, u,
                      VectorType::get(up.getShape(), mt.getElementType())),
            mem, idx, /*mask=*/Value(), b.getDenseI32ArrayAttr({}),
            /*add=*/false);
      }
      versions[mem] = ++counter;
      resident[dus.getResult()] = {mem, counter};
      return success();
    }
    if (inSmem(dus.getOperand()) || !get(dus.getOperand()))
      return staleError(op);
    // A value (not in memory): insert the update at constant offsets.
    auto starts =
        constantStarts(op, dus.getStartIndices(), in.getShape(), up.getShape());
    if (failed(starts))
      return failure();
    if (up.getShape() == in.getShape()) {
      set(dus, u);
      return success();
    }
    SmallVector<int64_t> ones(starts->size(), 1);
    set(dus, vector::InsertStridedSliceOp::create(
                 b, loc, u, get(dus.getOperand()), *starts, ones));
    return success();
  }
  if (auto red = dyn_cast<ReduceOp>(op)) {
    Value x = get(red.getOperand());
    auto in = cast<VectorType>(x.getType());
    Type e = in.getElementType();
    bool f = isa<FloatType>(e);
    bool u = isUnsigned(red.getOperand().getType());
    vector::CombiningKind kind;
    switch (red.getKind()) {
    case ReduceKind::Sum:
      kind = vector::CombiningKind::ADD;
      break;
    case ReduceKind::Prod:
      kind = vector::CombiningKind::MUL;
      break;
    case ReduceKind::Max:
      kind =
          f ? vector::CombiningKind::MAXIMUMF
            : (u ? vector::CombiningKind::MAXUI : vector::CombiningKind::MAXSI);
      break;
    case ReduceKind::Min:
      kind =
          f ? vector::CombiningKind::MINIMUMF
            : (u ? vector::CombiningKind::MINUI : vector::CombiningKind::MINSI);
      break;
    case ReduceKind::And:
      kind = vector::CombiningKind::AND;
      break;
    case ReduceKind::Or:
      kind = vector::CombiningKind::OR;
      break;
    case ReduceKind::Xor:
      kind = vector::CombiningKind::XOR;
      break;
    }
    // The identity of the combiner for the accumulator.
    TypedAttr ident;
    const llvm::fltSemantics *sem =
        f ? &cast<FloatType>(e).getFloatSemantics() : nullptr;
    unsigned w = f ? 0 : e.getIntOrFloatBitWidth();
    switch (red.getKind()) {
    case ReduceKind::Sum:
    case ReduceKind::Or:
    case ReduceKind::Xor:
      ident = cast<TypedAttr>(b.getZeroAttr(e));
      break;
    case ReduceKind::Prod:
      ident = f ? (TypedAttr)b.getFloatAttr(e, 1.0)
                : (TypedAttr)b.getIntegerAttr(e, 1);
      break;
    case ReduceKind::And:
      ident = b.getIntegerAttr(e, APInt::getAllOnes(w));
      break;
    case ReduceKind::Max:
      ident =
          f ? (TypedAttr)b.getFloatAttr(
                  e, APFloat::getInf(*sem, /*Negative=*/true))
            : (TypedAttr)b.getIntegerAttr(e, u ? APInt::getMinValue(w)
                                               : APInt::getSignedMinValue(w));
      break;
    case ReduceKind::Min:
      ident =
          f ? (TypedAttr)b.getFloatAttr(e, APFloat::getInf(*sem))
            : (TypedAttr)b.getIntegerAttr(e, u ? APInt::getMaxValue(w)
                                               : APInt::getSignedMaxValue(w));
      break;
    }
    // A full reduction goes through a leading unit dimension (as Pallas
    // writes it), so the accumulator is a vector.
    SmallVector<int64_t> dims(red.getDimensions());
    Type resultType = kernelType(red.getType());
    bool full = !isa<VectorType>(resultType);
    if (full) {
      SmallVector<int64_t> shape{1};
      llvm::append_range(shape, in.getShape());
      x = vector::ShapeCastOp::create(b, loc, VectorType::get(shape, e), x);
      for (int64_t &d : dims)
        ++d;
    }
    auto xt = cast<VectorType>(x.getType());
    SmallVector<int64_t> kept;
    for (int64_t d = 0; d < xt.getRank(); ++d)
      if (!llvm::is_contained(dims, d))
        kept.push_back(xt.getDimSize(d));
    auto accT = VectorType::get(kept, e);
    Value acc = constant(loc, accT, ident);
    Value r = vector::MultiDimReductionOp::create(b, loc, kind, x, acc, dims);
    set(red, reshapeTo(b, loc, r, resultType));
    return success();
  }
  if (auto dot = dyn_cast<DotGeneralOp>(op)) {
    auto lt = cast<RankedTensorType>(dot.getLhs().getType());
    auto rt = cast<RankedTensorType>(dot.getRhs().getType());
    auto free = [](RankedTensorType t, ArrayRef<int64_t> c,
                   ArrayRef<int64_t> bd) {
      SmallVector<int64_t> r;
      for (int64_t d = 0; d < t.getRank(); ++d)
        if (!llvm::is_contained(c, d) && !llvm::is_contained(bd, d))
          r.push_back(d);
      return r;
    };
    auto lf = free(lt, dot.getLhsContractingDimensions(),
                   dot.getLhsBatchingDimensions());
    auto rf = free(rt, dot.getRhsContractingDimensions(),
                   dot.getRhsBatchingDimensions());
    SmallVector<int64_t> order;
    for (int64_t d : dot.getLhsBatchingDimensions())
      order.append({0, d});
    for (int64_t d : lf)
      order.append({0, d});
    for (int64_t d : rf)
      order.append({1, d});
    auto dn = et::DotDimensionNumbersAttr::get(
        b.getContext(), dot.getLhsContractingDimensions(),
        dot.getRhsContractingDimensions(), lf, rf, order,
        dot.getLhsBatchingDimensions(), dot.getRhsBatchingDimensions());
    // The product's precision, as JAX lowers it for Mosaic: HIGHEST is
    // `fp32`, DEFAULT Mosaic's default; HIGH and per-operand precisions
    // JAX does not lower either.
    et::ContractPrecisionAttr precision;
    if (auto p = dot.getPrecision()) {
      StringRef l = cast<StringAttr>((*p)[0]).getValue();
      if (p->size() == 1) // (JAX's Mosaic lowering takes no preset either)
        return op->emitOpError("dot algorithm presets are not supported in "
                               "TPU kernels (got ")
               << l << "; DEFAULT and HIGHEST precisions are)";
      StringRef r = cast<StringAttr>((*p)[1]).getValue();
      if (l != r)
        return op->emitOpError(
            "per-operand dot precision is not supported in TPU kernels");
      if (l == "HIGH")
        return op->emitOpError("dot precision HIGH is not supported in TPU "
                               "kernels (DEFAULT and HIGHEST are)");
      if (l == "HIGHEST")
        precision = et::ContractPrecisionAttr::get(b.getContext(),
                                                   et::ContractPrecision::fp32);
    }
    Value lhs = get(dot.getLhs()), rhs = get(dot.getRhs());
    auto out = dyn_cast<VectorType>(kernelType(dot.getType()));
    if (!out || !isa<VectorType>(lhs.getType()) ||
        !isa<VectorType>(rhs.getType()))
      return op->emitOpError("TPU kernels take products of vectors");
    // Mixed operand types meet in the result's element type.
    if (getElementTypeOrSelf(lhs.getType()) !=
        getElementTypeOrSelf(rhs.getType())) {
      Type e = out.getElementType();
      lhs = convert(loc, lhs, lt.getElementType(), e,
                    withElement(lhs.getType(), e));
      rhs = convert(loc, rhs, rt.getElementType(), e,
                    withElement(rhs.getType(), e));
    }
    // 16-bit float products accumulate in f32 (Mosaic's accumulator is
    // 32-bit, as XLA's on the CPU); a convert of the product to f32 takes
    // the accumulator directly.
    Type oe = out.getElementType();
    if (isa<FloatType>(oe) && oe.getIntOrFloatBitWidth() < 32) {
      auto wide = VectorType::get(out.getShape(), b.getF32Type());
      Value m =
          et::MatmulOp::create(b, loc, wide, lhs, rhs, zero(loc, wide),
                               /*transpose_lhs_hint=*/false, dn, precision);
      set(dot, arith::TruncFOp::create(b, loc, out, m));
      for (Operation *user : dot->getUsers())
        if (auto cv = dyn_cast<ConvertOp>(user);
            cv && getElementTypeOrSelf(cv.getType()).isF32())
          precomputed[cv] = m;
      return success();
    }
    set(dot, et::MatmulOp::create(b, loc, out, lhs, rhs, zero(loc, out),
                                  /*transpose_lhs_hint=*/false, dn, precision));
    return success();
  }
  if (auto cat = dyn_cast<ConcatenateOp>(op)) {
    // Mosaic's concatenate, as JAX lowers jnp.concatenate (Mosaic's layout
    // inference takes no vector.insert_strided_slice).
    SmallVector<Value> sources;
    for (Value in : cat.getInputs())
      sources.push_back(get(in));
    set(cat,
        et::ConcatenateOp::create(b, loc, kernelType(cat.getType()), sources,
                                  b.getI32IntegerAttr(cat.getDimension())));
    return success();
  }
  if (auto rot = dyn_cast<et::TracedRotateOp>(op)) {
    Value x = get(rot.getValue());
    set(rot, et::DynamicRotateOp::create(
                 b, loc, x.getType(), x, get(rot.getAmount()),
                 rot.getDimensionAttr(), rot.getStrideAttr(),
                 rot.getStrideDimensionAttr()));
    return success();
  }
  if (auto w = dyn_cast<WhileOp>(op)) {
    // A carried buffer that the body only writes into (a ref threaded
    // through the loop) stays in memory: it is not carried by scf.while.
    Block &cond = w.getCond().front();
    Block &body = w.getBody().front();
    unsigned n = w.getInit().size();
    SmallVector<Value> inMem(n); // the buffer, or null
    // (A buffer whose contents a DMA started before the loop is replacing
    // is in memory too: the body waits for the copy before it reads.)
    for (unsigned i = 0; i < n; ++i) {
      Value init = w.getInit()[i];
      if (!resident.count(init))
        continue;
      Value y = rootBuffer(body.getTerminator()->getOperand(i));
      if (y == body.getArgument(i))
        inMem[i] = resident[init].mem;
    }
    materializeCaptured(op);
    // Buffers the body writes: what was in them before is stale inside.
    llvm::SmallPtrSet<Value, 4> written;
    for (unsigned i = 0; i < n; ++i)
      if (inMem[i] &&
          body.getTerminator()->getOperand(i) != body.getArgument(i))
        written.insert(inMem[i]);
    for (Value m : written)
      versions[m] = ++counter;
    SmallVector<Value> init;
    SmallVector<Type> types;
    for (unsigned i = 0; i < n; ++i) {
      if (inMem[i])
        continue;
      if (inHbm(w.getInit()[i]))
        return hbmError(op);
      init.push_back(get(w.getInit()[i]));
      if (!init.back())
        return staleError(op);
      types.push_back(init.back().getType());
    }
    auto sw = scf::WhileOp::create(b, loc, types, init);
    SmallVector<Location> locs(types.size(), loc);
    auto bindArgs = [&](Block &src, Block *dst) {
      unsigned k = 0;
      for (unsigned i = 0; i < n; ++i) {
        if (inMem[i])
          resident[src.getArgument(i)] = {inMem[i], versions[inMem[i]]};
        else
          map.map(src.getArgument(i), dst->getArgument(k++));
      }
    };
    {
      OpBuilder::InsertionGuard guard(b);
      // Before region: the condition.
      Block *before = b.createBlock(&sw.getBefore(), {}, types, locs);
      bindArgs(cond, before);
      if (failed(block(cond)))
        return failure();
      Value pred = get(cond.getTerminator()->getOperand(0));
      scf::ConditionOp::create(b, loc, pred, before->getArguments());
      // After region: the body.
      Block *after = b.createBlock(&sw.getAfter(), {}, types, locs);
      bindArgs(body, after);
      if (failed(block(body)))
        return failure();
      SmallVector<Value> next;
      for (unsigned i = 0; i < n; ++i) {
        if (inMem[i])
          continue;
        next.push_back(get(body.getTerminator()->getOperand(i)));
        if (!next.back())
          return staleError(op);
      }
      scf::YieldOp::create(b, loc, next);
    }
    for (Value m : written)
      versions[m] = ++counter;
    unsigned k = 0;
    for (unsigned i = 0; i < n; ++i) {
      if (inMem[i])
        resident[w.getResult(i)] = {inMem[i], versions[inMem[i]]};
      else
        map.map(w.getResult(i), sw.getResult(k++));
    }
    return success();
  }
  if (auto c = dyn_cast<CaseOp>(op)) {
    // index clamped into the branches; branch k runs when index == k, as a
    // chain of scf.if (the last branch is the final else). A result that
    // every branch makes by writing into the same buffer (a ref written
    // under pl.when) stays in memory instead of being a result.
    unsigned n = c.getBranches().size(), nr = c.getNumResults();
    SmallVector<Value> inMem(nr);
    for (unsigned i = 0; i < nr; ++i) {
      Value root;
      bool same = true;
      for (Region &r : c.getBranches()) {
        Value y = rootBuffer(r.front().getTerminator()->getOperand(i));
        same &= !root || y == root;
        root = y;
      }
      // (Also one a DMA in flight is replacing: a branch may wait for it.)
      if (same && root &&
          !c->isProperAncestor(root.getParentBlock()->getParentOp()) &&
          resident.count(root))
        inMem[i] = resident[root].mem;
    }
    materializeCaptured(op);
    SmallVector<Type> types;
    for (unsigned i = 0; i < nr; ++i)
      if (!inMem[i])
        types.push_back(kernelType(c.getResult(i).getType()));
    Value index = get(c.getIndex());
    auto entry = versions;
    llvm::SmallPtrSet<Value, 4> changed;
    // One branch from the versions at the case's entry; its kept results.
    auto branch = [&](Region &region) -> FailureOr<SmallVector<Value>> {
      versions = entry;
      if (failed(block(region.front())))
        return failure();
      SmallVector<Value> out;
      for (unsigned i = 0; i < nr; ++i) {
        if (inMem[i])
          continue;
        out.push_back(get(region.front().getTerminator()->getOperand(i)));
        if (!out.back())
          return staleError(c);
      }
      for (auto [m, v] : versions)
        if (entry.lookup(m) != v)
          changed.insert(m);
      return out;
    };
    std::function<FailureOr<SmallVector<Value>>(unsigned)> emit =
        [&](unsigned k) -> FailureOr<SmallVector<Value>> {
      if (k + 1 == n)
        return branch(c.getBranches()[k]);
      Value kc = arith::ConstantIntOp::create(b, loc, index.getType(), k);
      // Indices below 0 run the first branch (JAX clamps).
      Value take = arith::CmpIOp::create(
          b, loc, k == 0 ? arith::CmpIPredicate::sle : arith::CmpIPredicate::eq,
          index, kc);
      auto ifOp = scf::IfOp::create(b, loc, types, take, /*withElse=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      auto out = branch(c.getBranches()[k]);
      if (failed(out))
        return failure();
      // Without results the builder made the yields already.
      if (!types.empty())
        scf::YieldOp::create(b, loc, *out);
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      auto rest = emit(k + 1);
      if (failed(rest))
        return failure();
      if (!types.empty())
        scf::YieldOp::create(b, loc, *rest);
      return SmallVector<Value>(ifOp.getResults());
    };
    auto results = emit(0);
    if (failed(results))
      return failure();
    versions = entry;
    for (Value m : changed)
      versions[m] = ++counter;
    unsigned k = 0;
    for (unsigned i = 0; i < nr; ++i) {
      if (inMem[i]) {
        // Every branch left the buffer holding the result.
        if (!changed.count(inMem[i]))
          versions[inMem[i]] = ++counter;
        resident[c.getResult(i)] = {inMem[i], versions[inMem[i]]};
      } else {
        map.map(c.getResult(i), (*results)[k++]);
      }
    }
    return success();
  }
  return op->emitOpError("has no TPU kernel lowering");
}

struct EmberTPUKernelPass
    : public ember::impl::EmberTPUKernelPassBase<EmberTPUKernelPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("ember_tpu.grid_args"))
        kernels.push_back(fn);
    for (func::FuncOp fn : kernels)
      if (failed(convert(fn)))
        return signalPassFailure();
  }

  LogicalResult convert(func::FuncOp fn) {
    MLIRContext *ctx = fn.getContext();
    // A kernel traced as values takes and returns tensors of static shape.
    auto staticTensor = [](Type t) {
      auto r = dyn_cast<RankedTensorType>(t);
      return r && r.hasStaticShape();
    };
    if (!llvm::all_of(fn.getArgumentTypes(), staticTensor) ||
        !llvm::all_of(fn.getResultTypes(), staticTensor))
      return fn.emitError("ember-tpu-kernel: a kernel's arguments and results "
                          "are tensors of static shape");
    // Vectors have no empty dimension: a kernel's arrays are not empty.
    auto empty = [](Type t) {
      auto r = dyn_cast<RankedTensorType>(t);
      return r && llvm::is_contained(r.getShape(), 0);
    };
    if (llvm::any_of(fn.getArgumentTypes(), empty))
      return fn.emitError("ember-tpu-kernel: a kernel buffer is empty (a "
                          "dimension of size 0)");
    WalkResult emptyResult = fn.walk([&](Operation *op) {
      if (llvm::any_of(op->getResultTypes(), empty)) {
        op->emitOpError("makes an empty array (a dimension of size 0), "
                        "which TPU kernels cannot hold");
        return WalkResult::interrupt();
      }
      if (llvm::any_of(op->getResultTypes(), [&](Type t) {
            return isa<TensorType>(t) && !staticTensor(t);
          })) {
        op->emitOpError("makes an array of dynamic shape, which TPU kernels "
                        "cannot hold");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (emptyResult.wasInterrupted())
      return failure();
    auto gridArgs = fn->getAttrOfType<IntegerAttr>("ember_tpu.grid_args");
    auto spaces = fn->getAttrOfType<ArrayAttr>("ember_tpu.arg_spaces");
    auto resultArgs =
        fn->getAttrOfType<DenseI64ArrayAttr>("ember_tpu.result_args");
    auto dmaSems =
        fn->getAttrOfType<DenseI64ArrayAttr>("ember_tpu.dma_semaphores");
    int64_t nargs = fn.getNumArguments();
    if (!gridArgs || gridArgs.getInt() < 0 || gridArgs.getInt() > nargs)
      return fn.emitError("ember-tpu-kernel: ember_tpu.grid_args must be the "
                          "number of grid arguments (an integer)");
    int64_t ng = gridArgs.getInt();
    if (!spaces || (int64_t)spaces.size() != nargs - ng)
      return fn.emitError("ember-tpu-kernel: ember_tpu.arg_spaces must give a "
                          "memory space for each argument after the grid");
    // Blocks with squeezed dimensions (pl.Squeezed, or a vmap's batch) are
    // buffers with those dimensions of size 1, as JAX lowers them; the
    // kernel works on a squeezed view of each.
    auto squeezedDims = fn->getAttrOfType<ArrayAttr>("ember_tpu.squeezed_dims");
    if (squeezedDims && (int64_t)squeezedDims.size() != nargs - ng)
      return fn.emitError("ember-tpu-kernel: ember_tpu.squeezed_dims must "
                          "list dimensions for each argument after the grid");
    auto squeezedOf = [&](int64_t i) {
      if (!squeezedDims || i < ng)
        return ArrayRef<int64_t>();
      auto d = dyn_cast<DenseI64ArrayAttr>(squeezedDims[i - ng]);
      return d ? d.asArrayRef() : ArrayRef<int64_t>();
    };
    // The new signature.
    SmallVector<Type> argTypes;
    for (int64_t i = 0; i < nargs; ++i) {
      auto t = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
      if (i < ng) {
        if (t.getRank() != 0 || !t.getElementType().isInteger(32))
          return fn.emitError("ember-tpu-kernel: grid arguments are i32");
        argTypes.push_back(t.getElementType());
        continue;
      }
      // Semaphores: DMA ones where ember_tpu.dma_semaphores says.
      Type elt = signless(t.getElementType());
      auto space = dyn_cast<et::MemorySpaceAttr>(spaces[i - ng]);
      if (space && space.getValue() == et::MemorySpace::semaphore_mem)
        elt = dmaSems && llvm::is_contained(dmaSems.asArrayRef(), i - ng)
                  ? (Type)et::DMASemaphoreType::get(ctx)
                  : (Type)et::SemaphoreType::get(ctx);
      SmallVector<int64_t> shape(t.getShape());
      for (int64_t d : squeezedOf(i)) {
        if (d < 0 || d > (int64_t)shape.size())
          return fn.emitError("ember-tpu-kernel: squeezed dimension ")
                 << d << " of argument " << i << " is out of range";
        shape.insert(shape.begin() + d, 1);
      }
      argTypes.push_back(MemRefType::get(
          shape, elt, MemRefLayoutAttrInterface(), spaces[i - ng]));
    }
    SmallVector<Type> resultTypes;
    if (!resultArgs)
      for (Type t : fn.getResultTypes())
        resultTypes.push_back(kernelType(t));
    OpBuilder b(fn);
    auto nf =
        func::FuncOp::create(b, fn.getLoc(), fn.getSymName(),
                             FunctionType::get(ctx, argTypes, resultTypes));
    for (NamedAttribute a : fn->getAttrs()) {
      StringRef n = a.getName().strref();
      if (n == "ember_tpu.grid_args" || n == "ember_tpu.arg_spaces" ||
          n == "ember_tpu.result_args" || n == "ember_tpu.dma_semaphores" ||
          n == "ember_tpu.squeezed_dims" || n == "ember_tpu.collective_id" ||
          n == "function_type" || n == "sym_name" || n == "arg_attrs" ||
          n == "res_attrs")
        continue;
      nf->setAttr(a.getName(), a.getValue());
    }
    Block *entry = nf.addEntryBlock();
    b.setInsertionPointToStart(entry);
    KernelBuilder kb(b);
    Location loc = fn.getLoc();
    Block &src = fn.getBody().front();
    for (int64_t i = 0; i < nargs; ++i) {
      Value a = entry->getArgument(i);
      if (i < ng) {
        kb.map.map(src.getArgument(i), a);
        continue;
      }
      auto mt = cast<MemRefType>(a.getType());
      if (!squeezedOf(i).empty()) {
        mt = MemRefType::get(
            cast<RankedTensorType>(fn.getArgumentTypes()[i]).getShape(),
            mt.getElementType(), MemRefLayoutAttrInterface(),
            mt.getMemorySpace());
        a = et::MemRefSqueezeOp::create(b, loc, mt, a);
      }
      auto space = dyn_cast<et::MemorySpaceAttr>(mt.getMemorySpace());
      kb.buffers.push_back(a);
      if (space && (space.getValue() == et::MemorySpace::any ||
                    space.getValue() == et::MemorySpace::hbm ||
                    space.getValue() == et::MemorySpace::semaphore_mem)) {
        // In memory only: reached by DMAs.
        kb.resident[src.getArgument(i)] = {a, 0};
        kb.versions[a] = 0;
        continue;
      }
      if (space && space.getValue() == et::MemorySpace::smem) {
        // Read and written element by element where the kernel does.
        kb.resident[src.getArgument(i)] = {a, 0};
        kb.versions[a] = 0;
        continue;
      }
      if (mt.getRank() == 0)
        return fn.emitError("ember-tpu-kernel: VMEM buffers have rank 1 or "
                            "more");
      SmallVector<Value> zeros(mt.getRank(),
                               arith::ConstantIndexOp::create(b, loc, 0));
      kb.map.map(src.getArgument(i),
                 vector::LoadOp::create(
                     b, loc,
                     VectorType::get(mt.getShape(), mt.getElementType()), a,
                     zeros));
      kb.resident[src.getArgument(i)] = {a, 0};
      kb.versions[a] = 0;
    }
    // Buffers of `pl.run_scoped` (`traced_alloc`): allocated at the start
    // of one `region` holding the whole kernel, as Mosaic scopes them, and
    // numbered after the arguments.
    SmallVector<et::TracedAllocOp> allocs;
    fn.walk([&](et::TracedAllocOp a) { allocs.push_back(a); });
    llvm::sort(allocs, [](et::TracedAllocOp x, et::TracedAllocOp y) {
      return x.getBufferAttr().getInt() < y.getBufferAttr().getInt();
    });
    et::RegionOp scope;
    if (!allocs.empty()) {
      if (!resultArgs) {
        nf.erase();
        return fn.emitError("ember-tpu-kernel: scoped buffers need a kernel "
                            "that writes its results into buffers "
                            "(ember_tpu.result_args)");
      }
      // (The barrier semaphore alone is no allocation: no region.)
      if (llvm::any_of(allocs,
                       [](et::TracedAllocOp a) { return !a.getBarrier(); })) {
        scope = et::RegionOp::create(b, loc, TypeRange{});
        b.setInsertionPointToStart(&scope.getRegion().emplaceBlock());
      }
      for (auto [k, a] : llvm::enumerate(allocs)) {
        int64_t number = a.getBufferAttr().getInt();
        if (number != nargs - ng + (int64_t)k) {
          nf.erase();
          return a.emitOpError("is buffer ")
                 << number << ", expected " << nargs - ng + (int64_t)k
                 << " (scoped buffers are numbered after the arguments, "
                    "each once)";
        }
        auto t = cast<RankedTensorType>(a.getType());
        if (llvm::is_contained(t.getShape(), 0)) {
          nf.erase();
          return a.emitOpError("allocates an empty buffer");
        }
        auto space = et::MemorySpaceAttr::get(ctx, a.getMemorySpace());
        Value mem;
        if (a.getBarrier()) {
          // The kernel's barrier semaphore (named by its collective_id).
          mem = et::SemaphoreBarrierOp::create(
              b, a.getLoc(),
              MemRefType::get({}, et::SemaphoreType::get(ctx),
                              MemRefLayoutAttrInterface(), space));
        } else if (a.getMemorySpace() == et::MemorySpace::semaphore_mem) {
          Type elt = a.getDmaSemaphore() ? (Type)et::DMASemaphoreType::get(ctx)
                                         : (Type)et::SemaphoreType::get(ctx);
          mem = et::SemaphoreAllocOp::create(
              b, a.getLoc(),
              MemRefType::get(t.getShape(), elt, MemRefLayoutAttrInterface(),
                              space));
        } else {
          if (a.getMemorySpace() == et::MemorySpace::vmem && t.getRank() == 0) {
            nf.erase();
            return a.emitOpError("allocates a rank-0 VMEM buffer (VMEM "
                                 "buffers have rank 1 or more)");
          }
          mem = memref::AllocaOp::create(
              b, a.getLoc(),
              MemRefType::get(t.getShape(), signless(t.getElementType()),
                              MemRefLayoutAttrInterface(), space));
        }
        kb.buffers.push_back(mem);
        // In memory only; read where the kernel reads it.
        kb.resident[a.getResult()] = {mem, 0};
        kb.versions[mem] = 0;
      }
    }
    if (failed(kb.block(src))) {
      nf.erase();
      return failure();
    }
    Operation *ret = src.getTerminator();
    SmallVector<Value> outs;
    if (resultArgs) {
      if ((int64_t)resultArgs.size() != (int64_t)ret->getNumOperands())
        return fn.emitError("ember-tpu-kernel: ember_tpu.result_args must "
                            "name a buffer for each result");
      for (auto [v, j] :
           llvm::zip(ret->getOperands(), resultArgs.asArrayRef())) {
        // Buffers count from the first argument after the grid.
        int64_t k = j + ng;
        if (j < 0 || k >= nargs)
          return fn.emitError("ember-tpu-kernel: ember_tpu.result_args names "
                              "no buffer: ")
                 << j;
        Value buf = kb.buffers[j];
        if (cast<ShapedType>(v.getType()).getShape() !=
            cast<ShapedType>(fn.getArgumentTypes()[k]).getShape())
          return ret->emitOpError("returns a value of type ")
                 << v.getType() << " into the result buffer of type "
                 << fn.getArgumentTypes()[k];
        // A buffer whose contents the result already is is not written
        // (returned as it came in, or written in place).
        if (kb.current(v) && kb.resident[v].mem == buf)
          continue;
        auto mt = cast<MemRefType>(buf.getType());
        Value val = kb.get(v);
        if (!val)
          return ret->emitOpError("returns a kernel buffer's contents from "
                                  "before a later write, which TPU kernels "
                                  "cannot keep");
        if (mt.getRank() == 0 || !isa<VectorType>(val.getType())) {
          SmallVector<Value> zeros(mt.getRank(),
                                   arith::ConstantIndexOp::create(b, loc, 0));
          memref::StoreOp::create(
              b, loc, reshapeTo(b, loc, val, mt.getElementType()), buf, zeros);
          continue;
        }
        SmallVector<Value> zeros(mt.getRank(),
                                 arith::ConstantIndexOp::create(b, loc, 0));
        et::VectorStoreOp::create(b, loc, val, buf, zeros, /*mask=*/Value(),
                                  b.getDenseI32ArrayAttr({}),
                                  /*add=*/false);
      }
    } else {
      for (Value v : ret->getOperands())
        outs.push_back(kb.get(v));
    }
    if (scope) {
      et::YieldOp::create(b, loc);
      b.setInsertionPointAfter(scope);
    }
    func::ReturnOp::create(b, loc, outs);
    // Drop what the rewrite made and nothing uses (reshapes of scalars).
    SmallVector<Operation *> ops;
    nf.walk([&](Operation *o) { ops.push_back(o); });
    for (Operation *o : llvm::reverse(ops))
      if (isOpTriviallyDead(o))
        o->erase();
    StringAttr name = fn.getSymNameAttr();
    fn.erase();
    nf.setSymNameAttr(name);
    return success();
  }
};

} // namespace
