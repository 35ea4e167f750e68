//===- EmberGPUDialect.cpp - ember_gpu ops and their verifiers ------------===//
//
// Verifier rules are numbered as in docs/spec.md ("The ember_gpu kernel
// dialect"); test/Dialect/ember-gpu-invalid.mlir has one case per rule.
//
//===----------------------------------------------------------------------===//
#include "ember/IR/EmberGPUDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::ember_gpu;

#include "ember/IR/EmberGPUDialect.cpp.inc"

void EmberGPUDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ember/IR/EmberGPUOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "ember/IR/EmberGPUOps.cpp.inc"

/// Whether `type` lives in a block's shared memory.
static bool inSharedMemory(MemRefType type) {
  Attribute space = type.getMemorySpace();
  if (auto gpuSpace = dyn_cast_or_null<gpu::AddressSpaceAttr>(space))
    return gpuSpace.getValue() == gpu::AddressSpace::Workgroup;
  if (auto intSpace = dyn_cast_or_null<IntegerAttr>(space))
    return intSpace.getInt() ==
           static_cast<int64_t>(NVVM::NVVMMemorySpace::Shared);
  return false;
}

// barrier_c1: barriers live in shared memory.
static LogicalResult verifyBarriers(Operation *op, Value barriers) {
  if (!inSharedMemory(cast<MemRefType>(barriers.getType())))
    return op->emitOpError("barrier_c1: barriers must be in shared memory "
                           "(#gpu.address_space<workgroup>)");
  return success();
}

LogicalResult BarrierInitOp::verify() {
  if (failed(verifyBarriers(*this, getBarriers())))
    return failure();
  // barrier_init_c1: PTX mbarriers count at most 2^20 - 1 arrivals.
  if (getArrivals() > (1 << 20) - 1)
    return emitOpError("barrier_init_c1: arrivals must be at most 2^20 - 1, "
                       "got ")
           << getArrivals();
  return success();
}

LogicalResult BarrierArriveOp::verify() {
  if (failed(verifyBarriers(*this, getBarriers())))
    return failure();
  // barrier_arrive_c1: a remote arrival (on a peer block's barrier) does not
  // expect bytes: copies signal the barrier of the block they land in.
  if (getCta() && getExpectTx())
    return emitOpError("barrier_arrive_c1: an arrival on a peer block's "
                       "barrier (`cta`) cannot expect bytes (`expect_tx`)");
  return success();
}

LogicalResult BarrierWaitOp::verify() {
  return verifyBarriers(*this, getBarriers());
}

/// Whether `type` is statically shaped with row-major contiguous strides
/// (any offset: a part of a larger buffer qualifies).
static bool isContiguousRowMajor(MemRefType type) {
  if (!type.hasStaticShape())
    return false;
  if (type.getLayout().isIdentity())
    return true;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  int64_t expected = 1;
  for (int64_t d = type.getRank() - 1; d >= 0; --d) {
    if (type.getDimSize(d) != 1 && strides[d] != expected)
      return false;
    expected *= type.getDimSize(d);
  }
  return true;
}

/// The rules a TMA box in shared memory obeys (`rule` names the op).
static LogicalResult verifyTmaBox(Operation *op, StringRef rule,
                                  MemRefType smem, size_t numCoordinates) {
  // <op>_c1: a contiguous, statically shaped buffer in shared memory.
  if (!inSharedMemory(smem) || !isContiguousRowMajor(smem))
    return op->emitOpError(rule) << "_c1: the shared-memory buffer must be "
                                    "statically shaped, contiguous and in "
                                    "shared memory, got "
                                 << smem;
  // <op>_c2: one coordinate per dimension, 1 to 5 dimensions.
  int64_t rank = smem.getRank();
  if (rank < 1 || rank > 5 || static_cast<int64_t>(numCoordinates) != rank)
    return op->emitOpError(rule)
           << "_c2: a TMA box has 1 to 5 dimensions and one coordinate per "
              "dimension, got "
           << numCoordinates << " coordinates for a buffer of rank " << rank;
  // <op>_c3: box dimensions of at most 256 elements; the innermost spans a
  // multiple of 16 bytes.
  ArrayRef<int64_t> shape = smem.getShape();
  for (int64_t d : shape)
    if (d < 1 || d > 256)
      return op->emitOpError(rule)
             << "_c3: every box dimension must hold 1 to 256 elements, got "
                "shape ["
             << shape << "]";
  int64_t bits = smem.getElementTypeBitWidth();
  if ((shape.back() * bits) % 128 != 0)
    return op->emitOpError(rule)
           << "_c3: the innermost box dimension must span a multiple of 16 "
              "bytes, got "
           << shape.back() << " elements of " << bits << " bits";
  return success();
}

LogicalResult CopyGmemToSmemOp::verify() {
  if (failed(verifyBarriers(*this, getBarriers())))
    return failure();
  // copy_gmem_to_smem_c4: a copy tracked by its pair's leader lands in its
  // own block only.
  if (getTrackedBy() && getMulticast())
    return emitOpError("copy_gmem_to_smem_c4: `tracked_by` and `multicast` "
                       "cannot be combined");
  return verifyTmaBox(*this, "copy_gmem_to_smem", getDestination().getType(),
                      getCoordinates().size());
}

LogicalResult CopySmemToGmemOp::verify() {
  return verifyTmaBox(*this, "copy_smem_to_gmem", getSource().getType(),
                      getCoordinates().size());
}

// tmem_alloc_c1 / tmem_dealloc_c1: TMEM is allocated in powers of two
// from 32 to 512 columns.
static LogicalResult verifyColumns(Operation *op, StringRef rule,
                                   int64_t columns) {
  if (columns < 32 || columns > 512 || !llvm::isPowerOf2_64(columns))
    return op->emitOpError(rule)
           << "_c1: TMEM columns must be a power of two from 32 to 512, got "
           << columns;
  return success();
}

LogicalResult TmemAllocOp::verify() {
  if (failed(verifyColumns(*this, "tmem_alloc", getColumns())))
    return failure();
  // tmem_alloc_c2: the address slot is in shared memory.
  if (!inSharedMemory(getSlot().getType()))
    return emitOpError("tmem_alloc_c2: the address slot must be in shared "
                       "memory (#gpu.address_space<workgroup>)");
  return success();
}

LogicalResult TmemDeallocOp::verify() {
  return verifyColumns(*this, "tmem_dealloc", getColumns());
}

LogicalResult Tcgen05CommitOp::verify() {
  return verifyBarriers(*this, getBarriers());
}

LogicalResult WgmmaDescriptorOp::verify() {
  // wgmma_descriptor_c1: the matrix is in shared memory.
  if (!inSharedMemory(getBuffer().getType()))
    return emitOpError("wgmma_descriptor_c1: the matrix must be in shared "
                       "memory (#gpu.address_space<workgroup>)");
  // wgmma_descriptor_c2: the swizzle modes of PTX's matrix descriptors.
  int64_t swizzle = getSwizzle();
  if (swizzle != 0 && swizzle != 32 && swizzle != 64 && swizzle != 128)
    return emitOpError("wgmma_descriptor_c2: swizzle must be 0, 32, 64 or "
                       "128 (bytes), got ")
           << swizzle;
  // wgmma_descriptor_c3: offsets are encoded in 14 bits of 16-byte units.
  for (int64_t offset : {getLeadingByteOffset(), getStrideByteOffset()})
    if (offset < 0 || offset % 16 != 0 || offset >= (int64_t(1) << 18))
      return emitOpError("wgmma_descriptor_c3: byte offsets must be "
                         "multiples of 16 below 2^18, got ")
             << offset;
  return success();
}

LogicalResult WgmmaOp::verify() {
  // wgmma_c1: f16 or bf16 (k = 16), tf32 (k = 8), or 8-bit floats (k = 32)
  // operands: a k-deep slice is 32 bytes of a row.
  Type element = getElementType();
  bool sixteen = element.isF16() || element.isBF16();
  if (!sixteen && !element.isTF32() && !isa<Float8E4M3FNType>(element) &&
      !isa<Float8E5M2Type>(element))
    return emitOpError("wgmma_c1: the operands' element type must be f16, "
                       "bf16, tf32, f8E4M3FN or f8E5M2, got ")
           << element;
  // wgmma_c2: n is a multiple of 8 from 8 to 256.
  int64_t n = getN();
  if (n < 8 || n > 256 || n % 8 != 0)
    return emitOpError("wgmma_c2: n must be a multiple of 8 from 8 to 256, "
                       "got ")
           << n;
  // wgmma_c3: the accumulator holds the thread's n / 2 values of D.
  for (Type type : {getAccumulator().getType(), getResult().getType()})
    if (cast<VectorType>(type).getNumElements() != n / 2)
      return emitOpError("wgmma_c3: the accumulator and the result must "
                         "hold n / 2 = ")
             << n / 2 << " values per thread, got " << type;
  // wgmma_c4: PTX reads an A in registers K-major only.
  if (isa<VectorType>(getA().getType()) && getTransposeA())
    return emitOpError("wgmma_c4: an A in registers cannot be transposed "
                       "(transpose_a)");
  // wgmma_c5: PTX transposes 16-bit operands only: tf32 and 8-bit A and B
  // are K-major, and an A in registers is 16-bit.
  if (!sixteen && (getTransposeA() || getTransposeB()))
    return emitOpError("wgmma_c5: ")
           << element
           << " operands must be K-major (no transpose_a or transpose_b)";
  if (!sixteen && isa<VectorType>(getA().getType()))
    return emitOpError("wgmma_c5: an A in registers must be f16 or bf16, got ")
           << element;
  return success();
}
