//===- EmberTPUDialect.cpp - ember_tpu ops and their verifiers ------------===//
//
// Verifier rules are numbered as in docs/spec.md ("The ember_tpu kernel
// dialect"); test/Dialect/ember-tpu-invalid.mlir has one case per rule.
//
//===----------------------------------------------------------------------===//
#include "ember/IR/EmberTPUDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::ember_tpu;

#include "ember/IR/EmberTPUDialect.cpp.inc"
#include "ember/IR/EmberTPUEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ember/IR/EmberTPUAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "ember/IR/EmberTPUTypes.cpp.inc"

void EmberTPUDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ember/IR/EmberTPUOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ember/IR/EmberTPUAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "ember/IR/EmberTPUTypes.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "ember/IR/EmberTPUOps.cpp.inc"

//===----------------------------------------------------------------------===//
// dot_dimension_numbers: `<[..], [..], [..], [..], [..], [..], [..]>`
//===----------------------------------------------------------------------===//

#include "DotDimensionNumbers.h"

Attribute DotDimensionNumbersAttr::parse(AsmParser &parser, Type) {
  return parseDotDimensionNumbers<DotDimensionNumbersAttr>(parser);
}
void DotDimensionNumbersAttr::print(AsmPrinter &printer) const {
  printDotDimensionNumbers(printer, *this);
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

static std::optional<MemorySpace> memorySpaceOf(MemRefType t) {
  if (auto s = dyn_cast_or_null<MemorySpaceAttr>(t.getMemorySpace()))
    return s.getValue();
  return std::nullopt;
}

LogicalResult VectorStoreOp::verify() {
  auto vt = getValueToStore().getType();
  auto mt = getBase().getType();
  // vector_store_c1: the vector holds the memref's element type.
  if (vt.getElementType() != mt.getElementType())
    return emitOpError("vector_store_c1: the stored vector's element type ")
           << vt.getElementType() << " differs from the memref's "
           << mt.getElementType();
  // vector_store_c2: one index per memref dimension.
  if ((int64_t)getIndices().size() != mt.getRank())
    return emitOpError("vector_store_c2: expected ")
           << mt.getRank() << " indices, got " << getIndices().size();
  // vector_store_c3: the vector has the memref's rank and fits in it.
  if (vt.getRank() != mt.getRank())
    return emitOpError("vector_store_c3: the vector's rank ")
           << vt.getRank() << " differs from the memref's " << mt.getRank();
  for (auto [v, m] : llvm::zip(vt.getShape(), mt.getShape()))
    if (!ShapedType::isDynamic(m) && v > m)
      return emitOpError("vector_store_c3: the vector ")
             << vt << " does not fit in " << mt;
  // vector_store_c4: the mask has the vector's shape.
  if (getMask() &&
      cast<VectorType>(getMask().getType()).getShape() != vt.getShape())
    return emitOpError("vector_store_c4: the mask's shape differs from the "
                       "stored vector's");
  // vector_store_c5: strides are empty or one positive stride per dimension.
  ArrayRef<int32_t> strides = getStrides();
  if (!strides.empty() &&
      ((int64_t)strides.size() != mt.getRank() ||
       llvm::any_of(strides, [](int32_t s) { return s < 1; })))
    return emitOpError("vector_store_c5: strides must be empty or one "
                       "positive stride per memref dimension");
  return success();
}

LogicalResult MatmulOp::verify() {
  auto lt = getLhs().getType(), rt = getRhs().getType();
  auto res = getResult().getType();
  DotDimensionNumbersAttr dn = getDimensionNumbers();
  // matmul_c1: each operand dimension is contracting, free or batch, once.
  auto partition = [&](VectorType t, ArrayRef<int64_t> c, ArrayRef<int64_t> n,
                       ArrayRef<int64_t> b, StringRef which) -> LogicalResult {
    llvm::SmallBitVector seen(t.getRank());
    for (ArrayRef<int64_t> l : {c, n, b})
      for (int64_t d : l) {
        if (d < 0 || d >= t.getRank() || seen.test(d))
          return emitOpError("matmul_c1: the ")
                 << which << " dimensions must name each of its " << t.getRank()
                 << " dimensions once as contracting, free or batch";
        seen.set(d);
      }
    if (!seen.all())
      return emitOpError("matmul_c1: the ")
             << which << " dimensions must name each of its " << t.getRank()
             << " dimensions once as contracting, free or batch";
    return success();
  };
  if (failed(partition(lt, dn.getLhsContractingDims(),
                       dn.getLhsNonContractingDims(), dn.getLhsBatchDims(),
                       "lhs")) ||
      failed(partition(rt, dn.getRhsContractingDims(),
                       dn.getRhsNonContractingDims(), dn.getRhsBatchDims(),
                       "rhs")))
    return failure();
  // matmul_c2: contracting and batch dimensions pair up with equal sizes.
  auto pairUp = [&](ArrayRef<int64_t> l, ArrayRef<int64_t> r,
                    StringRef what) -> LogicalResult {
    if (l.size() != r.size())
      return emitOpError("matmul_c2: lhs and rhs have different numbers of ")
             << what << " dimensions";
    for (auto [a, b] : llvm::zip(l, r))
      if (lt.getDimSize(a) != rt.getDimSize(b))
        return emitOpError("matmul_c2: ")
               << what << " dimension sizes differ: lhs " << lt.getDimSize(a)
               << ", rhs " << rt.getDimSize(b);
    return success();
  };
  if (failed(pairUp(dn.getLhsContractingDims(), dn.getRhsContractingDims(),
                    "contracting")) ||
      failed(pairUp(dn.getLhsBatchDims(), dn.getRhsBatchDims(), "batch")))
    return failure();
  // matmul_c3: the output order lists the batch then free dimensions as
  // (operand, dimension) pairs, and the result has their sizes.
  ArrayRef<int64_t> order = dn.getOutputDimOrder();
  SmallVector<int64_t> expect;
  for (int64_t d : dn.getLhsBatchDims())
    expect.append({0, d});
  for (int64_t d : dn.getLhsNonContractingDims())
    expect.append({0, d});
  for (int64_t d : dn.getRhsNonContractingDims())
    expect.append({1, d});
  if (ArrayRef<int64_t>(expect) != order)
    return emitOpError("matmul_c3: the output order must list the batch "
                       "dimensions, then the lhs and rhs free dimensions");
  SmallVector<int64_t> shape;
  for (unsigned i = 0; i < order.size(); i += 2)
    shape.push_back(order[i] == 0 ? lt.getDimSize(order[i + 1])
                                  : rt.getDimSize(order[i + 1]));
  if (ArrayRef<int64_t>(shape) != res.getShape())
    return emitOpError("matmul_c3: the result's shape must be the batch and "
                       "free dimensions' sizes");
  // matmul_c4: the operands share an element type; the accumulator has the
  // result's type.
  if (lt.getElementType() != rt.getElementType())
    return emitOpError("matmul_c4: lhs and rhs element types differ");
  if (getAcc().getType() != res)
    return emitOpError("matmul_c4: the accumulator's type ")
           << getAcc().getType() << " differs from the result's " << res;
  // matmul_c5: the MXU accumulates in 32 bits.
  if (res.getElementType().getIntOrFloatBitWidth() != 32)
    return emitOpError("matmul_c5: the accumulator must have a 32-bit "
                       "element type, got ")
           << res.getElementType();
  return success();
}

LogicalResult IotaOp::verify() {
  auto t = getOutput().getType();
  // iota_c1: the dimensions are distinct dimensions of the result.
  llvm::SmallBitVector seen(t.getRank());
  if (getDimensions().empty())
    return emitOpError("iota_c1: at least one dimension is needed");
  for (int32_t d : getDimensions()) {
    if (d < 0 || d >= t.getRank() || seen.test(d))
      return emitOpError("iota_c1: dimension ")
             << d << " is out of range or repeated for " << t;
    seen.set(d);
  }
  return success();
}

LogicalResult TransposeOp::verify() {
  auto in = getVector().getType(), out = getResult().getType();
  ArrayRef<int64_t> perm = getPermutation();
  // transpose_c1: a permutation of the vector's dimensions.
  llvm::SmallBitVector seen(in.getRank());
  if ((int64_t)perm.size() != in.getRank())
    return emitOpError("transpose_c1: the permutation must have ")
           << in.getRank() << " entries";
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen.test(p))
      return emitOpError("transpose_c1: ")
             << p << " is out of range or repeated";
    seen.set(p);
  }
  // transpose_c2: the result is the permuted vector.
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(in.getDimSize(p));
  if (out.getElementType() != in.getElementType() ||
      ArrayRef<int64_t>(shape) != out.getShape())
    return emitOpError("transpose_c2: the result must be ")
           << VectorType::get(shape, in.getElementType());
  return success();
}

// rotate_c1/c2, shared by dynamic_rotate and traced_rotate.
static LogicalResult verifyRotate(Operation *op, int64_t rank, int32_t dim,
                                  std::optional<int32_t> stride,
                                  std::optional<int32_t> strideDim) {
  // rotate_c1: the dimension is one of the value's.
  if (dim < 0 || dim >= rank)
    return op->emitOpError("rotate_c1: dimension ")
           << dim << " is out of range for rank " << rank;
  // rotate_c2: `stride` (not negative) and `stride_dimension` (another
  // dimension) come together.
  if (stride.has_value() != strideDim.has_value())
    return op->emitOpError(
        "rotate_c2: stride and stride_dimension come together");
  if (stride && (*stride < 0 || *strideDim < 0 || *strideDim >= rank ||
                 *strideDim == dim))
    return op->emitOpError("rotate_c2: the stride must not be negative and "
                           "stride_dimension must be another dimension");
  return success();
}

/// Rules strided_c1-c3 of a strided window: `value` (the vector or tensor
/// read or written) in `buffer` (memref or tensor) at `numStarts` starts.
static LogicalResult verifyStrided(Operation *op, ShapedType buffer,
                                   ShapedType value, size_t numStarts,
                                   ArrayRef<int32_t> strides) {
  // strided_c1: one start per buffer dimension.
  if ((int64_t)numStarts != buffer.getRank())
    return op->emitOpError("strided_c1: expected ")
           << buffer.getRank() << " starts, got " << numStarts;
  // strided_c2: one positive stride per dimension.
  if ((int64_t)strides.size() != buffer.getRank() ||
      llvm::any_of(strides, [](int32_t s) { return s < 1; }))
    return op->emitOpError(
        "strided_c2: expected one positive stride per dimension");
  // strided_c3: the value has the buffer's rank and element type, and its
  // strided window fits in the buffer.
  if (value.getRank() != buffer.getRank() ||
      value.getElementType() != buffer.getElementType())
    return op->emitOpError("strided_c3: ")
           << value << " does not have the rank and element type of " << buffer;
  for (auto [n, m, st] :
       llvm::zip(value.getShape(), buffer.getShape(), strides))
    if (!ShapedType::isDynamic(m) && n > 0 && (n - 1) * st + 1 > m)
      return op->emitOpError("strided_c3: ")
             << value << " with strides does not fit in " << buffer;
  return success();
}

LogicalResult StridedLoadOp::verify() {
  return verifyStrided(*this, getBase().getType(), getResult().getType(),
                       getIndices().size(), getStrides());
}

LogicalResult StridedStoreOp::verify() {
  return verifyStrided(*this, getBase().getType(), getValueToStore().getType(),
                       getIndices().size(), getStrides());
}

LogicalResult TracedLoadOp::verify() {
  return verifyStrided(*this, getBuffer().getType(), getResult().getType(),
                       getStarts().size(), getStrides());
}

LogicalResult TracedStoreOp::verify() {
  auto value = cast<ShapedType>(getValue().getType());
  if (failed(verifyStrided(*this, getBuffer().getType(), value,
                           getStarts().size(), getStrides())))
    return failure();
  // traced_store_c1: a mask has the value's shape, and comes with unit
  // strides (Mosaic's strided_store takes none).
  if (getMask()) {
    if (cast<ShapedType>(getMask().getType()).getShape() != value.getShape())
      return emitOpError("traced_store_c1: the mask's shape differs from the "
                         "value's");
    if (llvm::any_of(getStrides(), [](int32_t s) { return s != 1; }))
      return emitOpError("traced_store_c1: a masked store has unit strides");
  }
  return success();
}

LogicalResult DynamicRotateOp::verify() {
  return verifyRotate(*this, getValue().getType().getRank(), getDimension(),
                      getStride(), getStrideDimension());
}

LogicalResult TracedRotateOp::verify() {
  return verifyRotate(*this, getValue().getType().getRank(), getDimension(),
                      getStride(), getStrideDimension());
}

LogicalResult ConcatenateOp::verify() {
  // concatenate_c1: at least one source; the dimension is one of theirs.
  if (getSources().empty())
    return emitOpError("concatenate_c1: needs at least one source");
  auto out = getOutput().getType();
  int64_t dim = getDimension();
  if (dim < 0 || dim >= out.getRank())
    return emitOpError("concatenate_c1: dimension ")
           << dim << " is out of range for rank " << out.getRank();
  // concatenate_c2: the sources have the result's rank, element type and
  // sizes except along `dimension`, where the result's is their sum.
  int64_t total = 0;
  for (Value v : getSources()) {
    auto t = cast<VectorType>(v.getType());
    if (t.getRank() != out.getRank() ||
        t.getElementType() != out.getElementType())
      return emitOpError("concatenate_c2: source ")
             << t << " does not match the result " << out;
    for (int64_t d = 0; d < out.getRank(); ++d)
      if (d != dim && t.getDimSize(d) != out.getDimSize(d))
        return emitOpError("concatenate_c2: source ")
               << t << " differs from the result " << out << " in dimension "
               << d;
    total += t.getDimSize(dim);
  }
  if (total != out.getDimSize(dim))
    return emitOpError("concatenate_c2: the sources have ")
           << total << " elements along dimension " << dim << ", the result "
           << out.getDimSize(dim);
  return success();
}

LogicalResult MemRefSliceOp::verify() {
  auto in = getMemRef().getType();
  auto out = getResult().getType();
  // memref_slice_c1: one offset per dimension.
  if ((int64_t)getBaseIdx().size() != in.getRank())
    return emitOpError("memref_slice_c1: expected ")
           << in.getRank() << " offsets, got " << getBaseIdx().size();
  // memref_slice_c2: same rank, element type and memory space.
  if (out.getRank() != in.getRank() ||
      out.getElementType() != in.getElementType() ||
      out.getMemorySpace() != in.getMemorySpace())
    return emitOpError("memref_slice_c2: the window must keep the memref's "
                       "rank, element type and memory space");
  // memref_slice_c3: the window fits; a size per dynamic window dimension.
  int64_t dynamic = 0;
  for (auto [o, i] : llvm::zip(out.getShape(), in.getShape())) {
    if (ShapedType::isDynamic(o)) {
      ++dynamic;
      continue;
    }
    if (!ShapedType::isDynamic(i) && o > i)
      return emitOpError("memref_slice_c3: the window ")
             << out << " does not fit in " << in;
  }
  if (dynamic != (int64_t)getDynamicSizes().size())
    return emitOpError("memref_slice_c3: expected ")
           << dynamic << " dynamic sizes, got " << getDynamicSizes().size();
  return success();
}

// sem_c1: a semaphore lives in semaphore memory and has the kind the op
// takes (`dma`: a DMA semaphore; otherwise a regular one).
static LogicalResult verifySemaphore(Operation *op, Value sem, bool dma) {
  auto t = cast<MemRefType>(sem.getType());
  if (memorySpaceOf(t) != MemorySpace::semaphore_mem)
    return op->emitOpError(
        "sem_c1: semaphores must be in #ember_tpu.memory_space<semaphore_mem>");
  bool isDma = isa<DMASemaphoreType>(t.getElementType());
  if (isDma != dma)
    return op->emitOpError("sem_c1: expected a ")
           << (dma ? "!ember_tpu.dma_semaphore" : "!ember_tpu.semaphore")
           << ", got " << t.getElementType();
  return success();
}

// dma_c1: a copy's two ends have the same shape and element type.
static LogicalResult verifyCopyEnds(Operation *op, Value a, Value b) {
  auto x = cast<MemRefType>(a.getType()), y = cast<MemRefType>(b.getType());
  if (x.getShape() != y.getShape() || x.getElementType() != y.getElementType())
    return op->emitOpError("dma_c1: source ")
           << x << " and target " << y
           << " must have the same shape and element type";
  return success();
}

LogicalResult EnqueueDMAOp::verify() {
  if (failed(verifyCopyEnds(*this, getSource(), getTarget())))
    return failure();
  // dma_c2: the target semaphore says when the copy landed.
  if (!getTargetSemaphore())
    return emitOpError("dma_c2: a DMA needs a target semaphore");
  if (failed(verifySemaphore(*this, getTargetSemaphore(), /*dma=*/true)))
    return failure();
  if (getSourceSemaphore() &&
      failed(verifySemaphore(*this, getSourceSemaphore(), /*dma=*/true)))
    return failure();
  return success();
}

LogicalResult WaitDMA2Op::verify() {
  if (failed(verifyCopyEnds(*this, getSrc(), getDst())))
    return failure();
  return verifySemaphore(*this, getSemaphore(), /*dma=*/true);
}

LogicalResult SemaphoreSignalOp::verify() {
  return verifySemaphore(*this, getSemaphore(), /*dma=*/false);
}

LogicalResult SemaphoreWaitOp::verify() {
  return verifySemaphore(*this, getSemaphore(), /*dma=*/false);
}

LogicalResult SemaphoreReadOp::verify() {
  auto t = cast<MemRefType>(getSemaphore().getType());
  if (memorySpaceOf(t) != MemorySpace::semaphore_mem)
    return emitOpError(
        "sem_c1: semaphores must be in #ember_tpu.memory_space<semaphore_mem>");
  return success();
}

LogicalResult MemRefSqueezeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  // memref_squeeze_c1: the result is the input without some unit
  // dimensions, in the same memory space.
  ArrayRef<int64_t> a = in.getShape(), r = out.getShape();
  unsigned j = 0;
  for (int64_t d : a) {
    if (j < r.size() && r[j] == d) {
      ++j;
      continue;
    }
    if (d != 1)
      break;
  }
  if (j != r.size() || in.getElementType() != out.getElementType() ||
      in.getMemorySpace() != out.getMemorySpace() ||
      in.getRank() - out.getRank() !=
          (int64_t)llvm::count(a, 1) - (int64_t)llvm::count(r, 1))
    return emitOpError("memref_squeeze_c1: ")
           << out << " is not " << in << " without some unit dimensions";
  return success();
}

// traced_dma_c1: a start per buffer dimension, windows inside their
// buffers, squeezed dimensions of size 1, and equal windows once squeezed.
template <typename OpT> static LogicalResult verifyTracedDMA(OpT op) {
  auto window = [&](RankedTensorType t, size_t starts, ArrayRef<int64_t> sizes,
                    ArrayRef<int64_t> squeezed,
                    StringRef which) -> FailureOr<SmallVector<int64_t>> {
    if ((int64_t)starts != t.getRank() || (int64_t)sizes.size() != t.getRank())
      return op.emitOpError("traced_dma_c1: the ")
             << which << " window needs a start and a size per dimension";
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (sizes[d] < 1 || sizes[d] > t.getDimSize(d))
        return op.emitOpError("traced_dma_c1: the ")
               << which << " window does not fit its buffer";
      if (llvm::is_contained(squeezed, d)) {
        if (sizes[d] != 1)
          return op.emitOpError("traced_dma_c1: squeezed ")
                 << which << " dimensions have size 1";
        continue;
      }
      shape.push_back(sizes[d]);
    }
    return shape;
  };
  auto s = window(op.getSrc().getType(), op.getSrcStarts().size(),
                  op.getSrcSizes(), op.getSrcSqueezed(), "source");
  auto d = window(op.getDst().getType(), op.getDstStarts().size(),
                  op.getDstSizes(), op.getDstSqueezed(), "destination");
  if (failed(s) || failed(d))
    return failure();
  if (*s != *d || op.getSrc().getType().getElementType() !=
                      op.getDst().getType().getElementType())
    return op.emitOpError("traced_dma_c1: the source and destination windows "
                          "differ");
  return success();
}

LogicalResult TracedDMAStartOp::verify() {
  if (failed(verifyTracedDMA(*this)))
    return failure();
  // traced_dma_c3: a send semaphore only for a remote copy (a device_id or
  // a core_id), and its starts only with one; `send` only on waits.
  if ((getSrcSemBuffer() || !getSrcSemStarts().empty()) && !getDeviceId() &&
      !getCoreId())
    return emitOpError("traced_dma_c3: a send semaphore belongs to a remote "
                       "copy (with a device_id or core_id)");
  if (!getSrcSemBuffer() && !getSrcSemStarts().empty())
    return emitOpError("traced_dma_c3: send semaphore starts without "
                       "src_sem_buffer");
  if (getSend())
    return emitOpError("traced_dma_c3: `send` marks waits only");
  return success();
}

LogicalResult TracedDMAWaitOp::verify() {
  if (failed(verifyTracedDMA(*this)))
    return failure();
  if (getSrcSemBuffer() || !getSrcSemStarts().empty())
    return emitOpError("traced_dma_c3: a wait names one semaphore (`send` "
                       "for the send semaphore)");
  // traced_dma_c2: the wait's result is the destination buffer's value.
  if (getDstAfter().getType() != getDst().getType())
    return emitOpError("traced_dma_c2: the result must have the destination "
                       "buffer's type");
  return success();
}

LogicalResult SemaphoreAllocOp::verify() {
  // sem_alloc_c1: allocated semaphores live in semaphore memory.
  if (memorySpaceOf(getResult().getType()) != MemorySpace::semaphore_mem)
    return emitOpError("sem_alloc_c1: semaphores must be in "
                       "#ember_tpu.memory_space<semaphore_mem>");
  return success();
}

LogicalResult SemaphoreBarrierOp::verify() {
  // sem_c1: a regular semaphore in semaphore memory.
  if (memorySpaceOf(getResult().getType()) != MemorySpace::semaphore_mem ||
      !isa<SemaphoreType>(getResult().getType().getElementType()))
    return emitOpError(
        "sem_c1: the barrier semaphore is a regular semaphore in "
        "#ember_tpu.memory_space<semaphore_mem>");
  return success();
}

/// prng_c1: at least one seed.
static LogicalResult verifySeeds(Operation *op, ValueRange seeds) {
  if (seeds.empty())
    return op->emitOpError("prng_c1: needs at least one seed");
  return success();
}

/// prng_c2: bits come as a vector of rank 2 or more (Mosaic's vregs).
static LogicalResult verifyBitsRank(Operation *op, ShapedType t) {
  if (t.getRank() < 2)
    return op->emitOpError("prng_c2: random bits need a result of rank 2 or "
                           "more, not ")
           << t;
  return success();
}

LogicalResult PRNGSetSeed32Op::verify() {
  return verifySeeds(*this, getSeeds());
}

LogicalResult TracedPRNGSeedOp::verify() {
  return verifySeeds(*this, getSeeds());
}

LogicalResult PRNGRandomBitsOp::verify() {
  return verifyBitsRank(*this, getOutput().getType());
}

LogicalResult TracedPRNGRandomBitsOp::verify() {
  return verifyBitsRank(*this, getBits().getType());
}

LogicalResult RegionOp::verify() {
  // region_c1: the region ends in a yield that gives one value of each
  // result's type (checked here before the implicit-terminator trait is).
  Block &body = getRegion().front();
  if (body.empty() || !isa<YieldOp>(body.back()))
    return emitOpError("region_c1: the region ends in an ember_tpu.yield");
  Operation *term = &body.back();
  if (term->getOperandTypes() != getResultTypes())
    return emitOpError("region_c1: the yield's operands must have the "
                       "region's result types");
  return success();
}

LogicalResult TracedAllocOp::verify() {
  // traced_alloc_c1: scoped buffers are in VMEM, SMEM or semaphore memory
  // (HBM is the kernel's operands' only).
  MemorySpace space = getMemorySpace();
  if (space != MemorySpace::vmem && space != MemorySpace::smem &&
      space != MemorySpace::semaphore_mem)
    return emitOpError("traced_alloc_c1: scoped buffers are in vmem, smem or "
                       "semaphore_mem, not ")
           << stringifyMemorySpace(space);
  // traced_alloc_c2: only semaphores are DMA semaphores.
  if (getDmaSemaphore() && space != MemorySpace::semaphore_mem)
    return emitOpError("traced_alloc_c2: dma_semaphore marks semaphores "
                       "(semaphore_mem) only");
  // traced_alloc_c4: the barrier semaphore is one regular semaphore.
  if (getBarrier() && (space != MemorySpace::semaphore_mem ||
                       getDmaSemaphore() || getType().getRank() != 0))
    return emitOpError("traced_alloc_c4: the barrier semaphore is one regular "
                       "semaphore (rank 0, semaphore_mem)");
  // traced_alloc_c3: buffer numbers are not negative.
  if (getBufferAttr().getInt() < 0)
    return emitOpError("traced_alloc_c3: buffer numbers are not negative");
  return success();
}

//===----------------------------------------------------------------------===//
// Vector layouts
//===----------------------------------------------------------------------===//

Attribute VectorLayoutAttr::parse(AsmParser &parser, Type) {
  // `<bitwidth, {sublane, lane}, (rows, cols)[, implicit]>`, `*` for a
  // replicated offset.
  auto offset = [&](int64_t &v) -> ParseResult {
    if (succeeded(parser.parseOptionalStar())) {
      v = -1;
      return success();
    }
    return parser.parseInteger(v);
  };
  int64_t bw, sub, lane, rows, cols, implicit = 0;
  if (parser.parseLess() || parser.parseInteger(bw) || parser.parseComma() ||
      parser.parseLBrace() || offset(sub) || parser.parseComma() ||
      offset(lane) || parser.parseRBrace() || parser.parseComma() ||
      parser.parseLParen() || parser.parseInteger(rows) ||
      parser.parseComma() || parser.parseInteger(cols) || parser.parseRParen())
    return {};
  if (succeeded(parser.parseOptionalComma()) && parser.parseInteger(implicit))
    return {};
  if (parser.parseGreater())
    return {};
  return parser.getChecked<VectorLayoutAttr>(parser.getContext(), bw, sub, lane,
                                             rows, cols, implicit);
}

void VectorLayoutAttr::print(AsmPrinter &printer) const {
  auto offset = [&](int64_t v) {
    if (v < 0)
      printer << "*";
    else
      printer << v;
  };
  printer << "<" << getBitwidth() << ", {";
  offset(getSublaneOffset());
  printer << ", ";
  offset(getLaneOffset());
  printer << "}, (" << getRows() << ", " << getCols() << ")";
  if (getImplicitDim())
    printer << ", " << getImplicitDim();
  printer << ">";
}

LogicalResult
VectorLayoutAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t bitwidth, int64_t sublaneOffset,
                         int64_t laneOffset, int64_t rows, int64_t cols,
                         int64_t implicitDim) {
  // layout_c1: 8-, 16- or 32-bit elements; power-of-two tiles of whole
  // lanes (multiples of 128 columns) that fit one register; offsets inside
  // the register's slice or replicated; implicit dimension none, -1 or -2.
  if (bitwidth != 8 && bitwidth != 16 && bitwidth != 32)
    return emitError() << "layout_c1: TPU vector registers hold 8-, 16- or "
                          "32-bit elements, not "
                       << bitwidth << "-bit ones";
  int64_t capacity = 8 * (32 / bitwidth) * 128;
  if (rows < 1 || cols < 128 || !llvm::isPowerOf2_64(rows) ||
      !llvm::isPowerOf2_64(cols) || rows * cols > capacity)
    return emitError() << "layout_c1: a tile of " << bitwidth
                       << "-bit elements has power-of-two rows and at least "
                          "128 columns and fits one register ("
                       << capacity << " elements), not (" << rows << ", "
                       << cols << ")";
  int64_t sliceCols = capacity / rows;
  if (sublaneOffset < -1 || sublaneOffset >= rows || laneOffset < -1 ||
      laneOffset >= sliceCols)
    return emitError() << "layout_c1: offsets lie in the register's " << rows
                       << " x " << sliceCols << " slice or are replicated (*)";
  if (implicitDim != 0 && implicitDim != -1 && implicitDim != -2)
    return emitError() << "layout_c1: the implicit dimension is -1 or -2, not "
                       << implicitDim;
  return success();
}

/// Whether `layout` can lay out `vt`: the elements' width (masks take the
/// width of what was compared) and a rank of two once the implicit
/// dimension is counted.
static bool layoutFits(VectorLayoutAttr layout, VectorType vt) {
  Type e = vt.getElementType();
  if (!e.isIntOrFloat())
    return false;
  if (!e.isInteger(1) &&
      layout.getBitwidth() != (int64_t)e.getIntOrFloatBitWidth())
    return false;
  return vt.getRank() + (layout.getImplicitDim() ? 1 : 0) >= 2;
}

/// layout_c2 for the layouts `attr` gives `values` (one each, unit for
/// those that are not vectors).
static LogicalResult checkLayouts(Operation *op, StringRef name, Attribute attr,
                                  ValueRange values) {
  auto layouts = dyn_cast<ArrayAttr>(attr);
  if (!layouts || layouts.size() != values.size())
    return op->emitOpError("layout_c2: ")
           << name << " needs an entry per "
           << (name.ends_with("in_layouts") ? "operand" : "result");
  for (auto [v, a] : llvm::zip(values, layouts)) {
    auto vt = dyn_cast<VectorType>(v.getType());
    if (!vt || vt.getRank() == 0) {
      if (!isa<UnitAttr>(a))
        return op->emitOpError("layout_c2: values that are not vectors (or "
                               "are 0-d ones) have a unit layout");
      continue;
    }
    auto l = dyn_cast<VectorLayoutAttr>(a);
    if (!l || !layoutFits(l, vt))
      return op->emitOpError("layout_c2: layout ")
             << a << " does not fit a value of type " << vt;
  }
  return success();
}

LogicalResult RelayoutOp::verify() {
  // relayout_c1: both layouts fit the vector; relayout_c2: they differ.
  auto vt = getInput().getType();
  if (!layoutFits(getInLayout(), vt) || !layoutFits(getOutLayout(), vt))
    return emitOpError("relayout_c1: the layouts do not fit ") << vt;
  if (getInLayout() == getOutLayout())
    return emitOpError("relayout_c2: a relayout changes the layout");
  return success();
}

LogicalResult
EmberTPUDialect::verifyOperationAttribute(Operation *op,
                                          NamedAttribute attribute) {
  // layout_c2: a layout per operand (`ember_tpu.in_layouts`) or result
  // (`ember_tpu.out_layouts`), each vector's fitting its width and rank.
  if (attribute.getName() == "ember_tpu.out_layouts")
    return checkLayouts(op, attribute.getName(), attribute.getValue(),
                        op->getResults());
  if (attribute.getName() == "ember_tpu.in_layouts")
    return checkLayouts(op, attribute.getName(), attribute.getValue(),
                        op->getOperands());
  return success();
}
