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
/// as a pointer into shared memory.
Value sharedAddress(OpBuilder &b, Location loc, Value buffer, Value index) {
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
  Value addr64 =
      arith::IndexCastOp::create(b, loc, b.getI64Type(), addr).getResult();
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

void lower(eg::CopyGmemToSmemOp op, OpBuilder &b) {
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
      llvm::TypeSwitch<Operation *>(op)
          .Case<eg::BarrierInitOp, eg::BarrierArriveOp, eg::BarrierWaitOp,
                eg::ClusterArriveOp, eg::ClusterWaitOp, eg::FenceBarrierInitOp,
                eg::CommitSmemOp, eg::CopyGmemToSmemOp, eg::CopySmemToGmemOp,
                eg::WaitSmemToGmemOp>(
              [&](auto concrete) { lower(concrete, b); });
      op->erase();
    }
  }
};

} // namespace
