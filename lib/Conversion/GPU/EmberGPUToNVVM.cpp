//===- EmberGPUToNVVM.cpp - ember_gpu kernel ops to NVVM ------------------===//
//
// Each ember_gpu op becomes the NVVM op it stands for. Shared-memory
// operands become `!llvm.ptr<3>` addresses computed from the memref's
// aligned pointer and offset (what `memref.extract_strided_metadata` gives),
// so the memref may be a workgroup attribution, a global or a subview.
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERGPUTONVVMPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;
namespace eg = mlir::ember_gpu;

namespace {

/// The address of `buffer[index]` (`index` may be null: the first element)
/// in shared memory, as an i64.
Value sharedOffset(OpBuilder &b, Location loc, Value buffer, Value index) {
  auto type = cast<MemRefType>(buffer.getType());
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, buffer);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(
      b, loc, meta.getBaseBuffer());
  Value elements = meta.getOffset();
  if (index)
    elements = arith::AddIOp::create(b, loc, elements, index);
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  Value offset = arith::MulIOp::create(
      b, loc, elements, arith::ConstantIndexOp::create(b, loc, bytes));
  Value addr = arith::AddIOp::create(b, loc, base, offset);
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), addr).getResult();
}

/// The address of `buffer[index]` as a pointer into shared memory.
Value sharedAddress(OpBuilder &b, Location loc, Value buffer, Value index) {
  Value addr64 = sharedOffset(b, loc, buffer, index);
  auto ptrType = LLVM::LLVMPointerType::get(
      b.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared));
  return LLVM::IntToPtrOp::create(b, loc, ptrType, addr64);
}

Value i32Constant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
}

/// TMA coordinates run innermost dimension first; ember_gpu's run like
/// memref indices (outermost first).
SmallVector<Value> innermostFirst(ValueRange coordinates) {
  return llvm::to_vector(llvm::reverse(coordinates));
}

void lower(eg::BarrierInitOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  Value ptr = sharedAddress(b, loc, op.getBarriers(), op.getIndex());
  NVVM::MBarrierInitOp::create(b, loc, ptr,
                               i32Constant(b, loc, op.getArrivals()),
                               /*predicate=*/Value());
}

void lower(eg::BarrierArriveOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  Value ptr = sharedAddress(b, loc, op.getBarriers(), op.getIndex());
  if (Value cta = op.getCta()) {
    // The peer's barrier, seen through the cluster's shared-memory window.
    auto clusterPtr = LLVM::LLVMPointerType::get(
        b.getContext(),
        static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster));
    Value remote = NVVM::MapaOp::create(b, loc, clusterPtr, ptr, cta);
    NVVM::MBarrierArriveOp::create(b, loc, /*res=*/Type(), remote,
                                   /*count=*/Value(),
                                   NVVM::MemScopeKind::CLUSTER);
    return;
  }
  if (Value tx = op.getExpectTx())
    NVVM::MBarrierArriveExpectTxOp::create(b, loc, /*res=*/Type(), ptr, tx,
                                           /*scope=*/{}, /*relaxed=*/{},
                                           /*predicate=*/Value());
  else
    NVVM::MBarrierArriveOp::create(b, loc, b.getI64Type(), ptr,
                                   /*count=*/Value(), /*scope=*/{});
}

void lower(eg::BarrierWaitOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  Value ptr = sharedAddress(b, loc, op.getBarriers(), op.getIndex());
  // The suspend-time hint of each try (ns); the wait loops until the phase
  // completes.
  NVVM::MBarrierTryWaitParityOp::create(b, loc, ptr, op.getParity(),
                                        i32Constant(b, loc, 10000000));
}

void lower(eg::ClusterArriveOp op, OpBuilder &b) {
  UnitAttr aligned = b.getUnitAttr();
  if (op.getRelaxed())
    NVVM::ClusterArriveRelaxedOp::create(b, op.getLoc(), aligned);
  else
    NVVM::ClusterArriveOp::create(b, op.getLoc(), aligned);
}

void lower(eg::ClusterWaitOp op, OpBuilder &b) {
  NVVM::ClusterWaitOp::create(b, op.getLoc(), b.getUnitAttr());
}

void lower(eg::FenceBarrierInitOp op, OpBuilder &b) {
  NVVM::FenceMbarrierInitOp::create(b, op.getLoc());
}

void lower(eg::CommitSmemOp op, OpBuilder &b) {
  MLIRContext *ctx = b.getContext();
  NVVM::FenceProxyOp::create(
      b, op.getLoc(),
      NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
}

/// A copy whose bytes count on the barrier of block `tracked_by` of its
/// 2-CTA pair. NVVM's TMA op types its barrier as a shared::cta pointer, so
/// it cannot name a peer's barrier: this is the PTX itself, the barrier's
/// shared::cluster address from `mapa` (docs/nvvm-ops.md).
void lowerTrackedCopy(eg::CopyGmemToSmemOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  Type i32 = b.getI32Type();
  auto toI32 = [&](Value ptr) {
    return LLVM::PtrToIntOp::create(b, loc, i32, ptr).getResult();
  };
  Value dst = toI32(sharedAddress(b, loc, op.getDestination(), Value()));
  Value bar = toI32(sharedAddress(b, loc, op.getBarriers(), op.getIndex()));
  SmallVector<Value> operands = {dst, op.getDescriptor(), bar,
                                 op.getTrackedBy()};
  size_t rank = op.getCoordinates().size();
  llvm::append_range(operands, innermostFirst(op.getCoordinates()));
  std::string coords;
  for (size_t i = 0; i < rank; ++i)
    coords += (i ? ", $" : "$") + std::to_string(4 + i);
  std::string ptx =
      "{\n.reg .b32 tracker;\nmapa.shared::cluster.u32 tracker, $2, $3;\n"
      "cp.async.bulk.tensor." +
      std::to_string(rank) +
      "d.shared::cta.global.tile.mbarrier::complete_tx::bytes.cta_group::2 "
      "[$0], [$1, {" +
      coords + "}], [tracker];\n}";
  std::string constraints = "r,l,r,r";
  for (size_t i = 0; i < rank; ++i)
    constraints += ",r";
  LLVM::InlineAsmOp::create(b, loc, /*res=*/Type(), operands, ptx, constraints,
                            /*has_side_effects=*/true,
                            /*is_align_stack=*/false,
                            LLVM::tailcallkind::TailCallKind::None,
                            /*asm_dialect=*/LLVM::AsmDialectAttr(),
                            /*operand_attrs=*/ArrayAttr());
}

void lower(eg::CopyGmemToSmemOp op, OpBuilder &b) {
  if (op.getTrackedBy())
    return lowerTrackedCopy(op, b);
  Location loc = op.getLoc();
  Value dst = sharedAddress(b, loc, op.getDestination(), Value());
  // The copy writes through the cluster's shared-memory window.
  auto clusterPtr = LLVM::LLVMPointerType::get(
      b.getContext(),
      static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster));
  dst = LLVM::AddrSpaceCastOp::create(b, loc, clusterPtr, dst);
  Value bar = sharedAddress(b, loc, op.getBarriers(), op.getIndex());
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, loc, dst, op.getDescriptor(), innermostFirst(op.getCoordinates()), bar,
      /*im2colOffsets=*/ValueRange(), op.getMulticast(),
      /*l2CacheHint=*/Value(), NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false,
      /*group=*/{}, /*predicate=*/Value());
}

void lower(eg::CopySmemToGmemOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  Value src = sharedAddress(b, loc, op.getSource(), Value());
  NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
      b, loc, op.getDescriptor(), src, innermostFirst(op.getCoordinates()),
      /*l2CacheHint=*/Value(),
      NVVM::TMAStoreModeAttr::get(b.getContext(), NVVM::TMAStoreMode::TILE),
      /*predicate=*/Value());
  NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
}

void lower(eg::WaitSmemToGmemOp op, OpBuilder &b) {
  NVVM::CpAsyncBulkWaitGroupOp::create(
      b, op.getLoc(), b.getI32IntegerAttr(op.getAllowInFlight()),
      op.getRead() ? b.getUnitAttr() : UnitAttr());
}

void lower(eg::WgmmaFenceOp op, OpBuilder &b) {
  NVVM::WgmmaFenceAlignedOp::create(b, op.getLoc());
}

void lower(eg::WgmmaCommitOp op, OpBuilder &b) {
  NVVM::WgmmaGroupSyncAlignedOp::create(b, op.getLoc());
}

void lower(eg::WgmmaWaitOp op, OpBuilder &b) {
  NVVM::WgmmaWaitGroupSyncOp::create(b, op.getLoc(), op.getAllowInFlight());
}

Value i64Constant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
}

void lower(eg::WgmmaDescriptorOp op, OpBuilder &b) {
  // PTX's matrix descriptor: bits 0-13 the start address, 16-29 the leading
  // and 32-45 the stride dimension byte offsets (each in 16-byte units),
  // 62-63 the swizzle mode (1: 128 bytes, 2: 64, 3: 32); the base offset
  // (bits 49-51) is 0, the buffer being aligned to the swizzle pattern.
  Location loc = op.getLoc();
  Value addr = sharedOffset(b, loc, op.getBuffer(), op.getIndex());
  Value start = arith::ShRUIOp::create(
      b, loc, arith::AndIOp::create(b, loc, addr, i64Constant(b, loc, 0x3FFFF)),
      i64Constant(b, loc, 4));
  int64_t swizzle = op.getSwizzle();
  uint64_t fields = (uint64_t(op.getLeadingByteOffset() >> 4) << 16) |
                    (uint64_t(op.getStrideByteOffset() >> 4) << 32);
  if (op.getTcgen05()) {
    // Blackwell: bits 46-48 hold 0b001; the swizzle mode is in bits 61-63
    // (2: 128 bytes, 4: 64, 6: 32).
    int64_t mode = swizzle == 128  ? 2
                   : swizzle == 64 ? 4
                   : swizzle == 32 ? 6
                                   : 0;
    fields |= (uint64_t(1) << 46) | (uint64_t(mode) << 61);
  } else {
    int64_t mode = swizzle == 128  ? 1
                   : swizzle == 64 ? 2
                   : swizzle == 32 ? 3
                                   : 0;
    fields |= uint64_t(mode) << 62;
  }
  Value desc = arith::OrIOp::create(
      b, loc, start, i64Constant(b, loc, static_cast<int64_t>(fields)));
  op.getDescriptor().replaceAllUsesWith(desc);
}

/// A wgmma whose A is in registers: NVVM's op takes A as a descriptor only,
/// so this is the PTX instruction, D's n / 2 registers tied in and out
/// (docs/nvvm-ops.md).
Value registerAWgmma(eg::WgmmaOp op, Type structType, Value acc, OpBuilder &b) {
  Location loc = op.getLoc();
  int64_t count = op.getN() / 2;
  SmallVector<Value> operands;
  for (int64_t i = 0; i < 4; ++i)
    operands.push_back(LLVM::ExtractElementOp::create(b, loc, op.getA(),
                                                      i32Constant(b, loc, i)));
  operands.push_back(op.getB());
  for (int64_t i = 0; i < count; ++i)
    operands.push_back(LLVM::ExtractValueOp::create(b, loc, acc, i));
  auto list = [](int64_t first, int64_t n) {
    std::string s;
    for (int64_t i = 0; i < n; ++i)
      s += (i ? ", $" : "$") + std::to_string(first + i);
    return s;
  };
  std::string type = op.getElementType().isBF16() ? "bf16" : "f16";
  std::string ptx = "wgmma.mma_async.sync.aligned.m64n" +
                    std::to_string(op.getN()) + "k16.f32." + type + "." + type +
                    " {" + list(0, count) + "}, {" + list(count, 4) + "}, $" +
                    std::to_string(count + 4) + ", 1, 1, 1, " +
                    (op.getTransposeB() ? "1" : "0") + ";";
  std::string constraints;
  for (int64_t i = 0; i < count; ++i)
    constraints += "=f,";
  constraints += "r,r,r,r,l";
  for (int64_t i = 0; i < count; ++i)
    constraints += "," + std::to_string(i);
  return LLVM::InlineAsmOp::create(b, loc, structType, operands, ptx,
                                   constraints, /*has_side_effects=*/true,
                                   /*is_align_stack=*/false,
                                   LLVM::tailcallkind::TailCallKind::None,
                                   /*asm_dialect=*/LLVM::AsmDialectAttr(),
                                   /*operand_attrs=*/ArrayAttr())
      .getRes();
}

void lower(eg::WgmmaOp op, OpBuilder &b) {
  // NVVM's wgmma takes and gives D as a struct of n / 2 f32 values.
  Location loc = op.getLoc();
  MLIRContext *ctx = b.getContext();
  auto vectorType = cast<VectorType>(op.getAccumulator().getType());
  int64_t count = vectorType.getNumElements();
  Type f32 = b.getF32Type();
  auto structType =
      LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(count, f32));
  Value acc = LLVM::PoisonOp::create(b, loc, structType);
  for (int64_t i = 0; i < count; ++i) {
    Value x = LLVM::ExtractElementOp::create(b, loc, op.getAccumulator(),
                                             i32Constant(b, loc, i));
    acc = LLVM::InsertValueOp::create(b, loc, acc, x, i);
  }
  Value sum;
  if (isa<VectorType>(op.getA().getType())) {
    sum = registerAWgmma(op, structType, acc, b);
  } else {
    Type element = op.getElementType();
    NVVM::WGMMATypes type = element.isBF16()   ? NVVM::WGMMATypes::bf16
                            : element.isF16()  ? NVVM::WGMMATypes::f16
                            : element.isTF32() ? NVVM::WGMMATypes::tf32
                            : isa<Float8E5M2Type>(element)
                                ? NVVM::WGMMATypes::e5m2
                                : NVVM::WGMMATypes::e4m3;
    // k: a 32-byte slice of a row (wgmma_c1).
    int64_t k = 256 / (element.isTF32() ? 32 : element.getIntOrFloatBitWidth());
    // K-major is `row` for A and `col` for B.
    sum = NVVM::WgmmaMmaAsyncOp::create(
              b, loc, structType, acc, op.getA(), op.getB(),
              NVVM::MMAShapeAttr::get(ctx, 64, op.getN(), k), type, type,
              NVVM::WGMMATypes::f32, NVVM::WGMMAScaleOut::one,
              NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
              op.getTransposeA() ? NVVM::MMALayout::col : NVVM::MMALayout::row,
              op.getTransposeB() ? NVVM::MMALayout::row : NVVM::MMALayout::col,
              /*satfinite=*/NVVM::MMAIntOverflowAttr())
              .getResult();
  }
  Value result = LLVM::PoisonOp::create(b, loc, vectorType);
  for (int64_t i = 0; i < count; ++i) {
    Value x = LLVM::ExtractValueOp::create(b, loc, sum, i);
    result = LLVM::InsertElementOp::create(b, loc, result, x,
                                           i32Constant(b, loc, i));
  }
  op.getResult().replaceAllUsesWith(result);
}

NVVM::CTAGroupKind ctaGroup(bool collective) {
  return collective ? NVVM::CTAGroupKind::CTA_2 : NVVM::CTAGroupKind::CTA_1;
}

/// A 32-bit TMEM address as the `!llvm.ptr<6>` the tcgen05 ops take.
Value tmemPointer(OpBuilder &b, Location loc, Value address) {
  auto ptrType = LLVM::LLVMPointerType::get(
      b.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Tensor));
  return LLVM::IntToPtrOp::create(b, loc, ptrType, address);
}

void lower(eg::TmemAllocOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  Value slot = sharedAddress(b, loc, op.getSlot(), op.getIndex());
  NVVM::Tcgen05AllocOp::create(b, loc, slot,
                               i32Constant(b, loc, op.getColumns()),
                               ctaGroup(op.getCollective()));
}

void lower(eg::TmemDeallocOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  NVVM::Tcgen05DeallocOp::create(b, loc, tmemPointer(b, loc, op.getAddress()),
                                 i32Constant(b, loc, op.getColumns()),
                                 ctaGroup(op.getCollective()));
}

void lower(eg::TmemRelinquishOp op, OpBuilder &b) {
  NVVM::Tcgen05RelinquishAllocPermitOp::create(b, op.getLoc(),
                                               ctaGroup(op.getCollective()));
}

void lower(eg::TmemLoadOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  auto ld = NVVM::Tcgen05LdOp::create(b, loc, op.getType(), /*pack=*/false,
                                      NVVM::Tcgen05LdStShape::SHAPE_32X32B,
                                      tmemPointer(b, loc, op.getAddress()),
                                      /*offset=*/Value());
  op.getResult().replaceAllUsesWith(ld.getResult());
}

void lower(eg::TmemStoreOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  NVVM::Tcgen05StOp::create(
      b, loc, /*unpack=*/false, NVVM::Tcgen05LdStShape::SHAPE_32X32B,
      tmemPointer(b, loc, op.getAddress()), op.getValue(), /*offset=*/Value());
}

void lower(eg::TmemWaitOp op, OpBuilder &b) {
  NVVM::Tcgen05WaitOp::create(b, op.getLoc(),
                              op.getStore() ? NVVM::Tcgen05WaitKind::STORE
                                            : NVVM::Tcgen05WaitKind::LOAD);
}

void lower(eg::Tcgen05MmaOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  NVVM::Tcgen05MMAOp::create(
      b, loc, NVVM::Tcgen05MMAKind::F16, ctaGroup(op.getCollective()),
      NVVM::Tcgen05MMACollectorOp::DISCARD, /*aShift=*/false,
      tmemPointer(b, loc, op.getAccumulator()), op.getA(), op.getB(),
      op.getInstruction(), op.getAccumulate(), /*scaleInputD=*/Value(),
      /*disableOutputLane=*/Value());
}

void lower(eg::Tcgen05CommitOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  Value bar = sharedAddress(b, loc, op.getBarriers(), op.getIndex());
  NVVM::Tcgen05CommitOp::create(b, loc, bar, op.getMulticast(),
                                ctaGroup(op.getCollective()));
}

void lower(eg::Tcgen05FenceOp op, OpBuilder &b) {
  NVVM::Tcgen05FenceOp::create(
      b, op.getLoc(),
      op.getAfter() ? NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC
                    : NVVM::Tcgen05FenceKind::BEFORE_THREAD_SYNC);
}

struct EmberGPUToNVVMPass
    : public ember::impl::EmberGPUToNVVMPassBase<EmberGPUToNVVMPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<eg::EmberGPUDialect>(op->getDialect()))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      OpBuilder b(op);
      bool lowered =
          llvm::TypeSwitch<Operation *, bool>(op)
              .Case<eg::BarrierInitOp, eg::BarrierArriveOp, eg::BarrierWaitOp,
                    eg::ClusterArriveOp, eg::ClusterWaitOp,
                    eg::FenceBarrierInitOp, eg::CommitSmemOp,
                    eg::CopyGmemToSmemOp, eg::CopySmemToGmemOp,
                    eg::WaitSmemToGmemOp, eg::WgmmaFenceOp, eg::WgmmaCommitOp,
                    eg::WgmmaWaitOp, eg::WgmmaDescriptorOp, eg::WgmmaOp,
                    eg::TmemAllocOp, eg::TmemDeallocOp, eg::TmemRelinquishOp,
                    eg::TmemLoadOp, eg::TmemStoreOp, eg::TmemWaitOp,
                    eg::Tcgen05MmaOp, eg::Tcgen05CommitOp, eg::Tcgen05FenceOp>(
                  [&](auto concrete) {
                    lower(concrete, b);
                    return true;
                  })
              .Default([](Operation *unknown) {
                unknown->emitOpError("has no NVVM lowering (an Ember bug)");
                return false;
              });
      if (!lowered)
        return signalPassFailure();
      op->erase();
    }
  }
};

} // namespace
