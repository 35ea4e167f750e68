//===- EmberShardToMpi.cpp - a partitioned module's collectives to MPI ----===//
//
// MLIR's convert-shard-to-mpi, with the DLTI entries it reads set for
// MPICH and this process, and the communicators it splits off
// MPI_COMM_WORLD for every collective (one per call, never freed) replaced
// by the world itself where the grid is the world.
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Conversion/ShardToMPI/ShardToMPI.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERSHARDTOMPIPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {
/// `mpi.allreduce` declares no memory effects, so buffer deallocation
/// rejects it; it reads its send buffer and writes its receive buffer.
struct AllReduceEffects
    : public MemoryEffectOpInterface::ExternalModel<AllReduceEffects,
                                                    mpi::AllReduceOp> {
  void
  getEffects(Operation *op,
             SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
                 &effects) const {
    auto r = cast<mpi::AllReduceOp>(op);
    effects.emplace_back(MemoryEffects::Read::get(), &r.getSendbufMutable());
    effects.emplace_back(MemoryEffects::Read::get(), &r.getRecvbufMutable());
    effects.emplace_back(MemoryEffects::Write::get(), &r.getRecvbufMutable());
  }
};
} // namespace

void mlir::ember::registerMpiEffectModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, mpi::MPIDialect *) {
    mpi::AllReduceOp::attachInterface<AllReduceEffects>(*ctx);
  });
}

namespace {
struct EmberShardToMpiPass
    : public mlir::ember::impl::EmberShardToMpiPassBase<EmberShardToMpiPass> {
  void runOnOperation() override {
    ModuleOp m = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<shard::GridOp> grids(m.getOps<shard::GridOp>());
    if (grids.empty())
      return;
    // The process's rank and the number of processes, where the module's
    // DLTI map gives them (Python writes them; convert-shard-to-mpi reads
    // the rank itself).
    int64_t worldSize = 0;
    SmallVector<DataLayoutEntryInterface> entries;
    bool hasImpl = false;
    if (auto old = m->getAttrOfType<MapAttr>("dlti.map"))
      for (DataLayoutEntryInterface e : old.getEntries()) {
        entries.push_back(e);
        auto key = dyn_cast<StringAttr>(e.getKey());
        if (!key)
          continue;
        hasImpl |= key.getValue() == "MPI:Implementation";
        if (key.getValue() == "MPI:comm_world-size")
          if (auto v = dyn_cast<IntegerAttr>(e.getValue()))
            worldSize = v.getInt();
      }
    if (!hasImpl) {
      entries.push_back(
          DataLayoutEntryAttr::get(StringAttr::get(ctx, "MPI:Implementation"),
                                   StringAttr::get(ctx, "MPICH")));
      m->setAttr("dlti.map", MapAttr::get(ctx, entries));
    }
    bool gridIsWorld = grids.size() == 1 && grids[0].getShape().size() == 1 &&
                       worldSize > 0 && grids[0].getShape()[0] == worldSize;
    OpPassManager pm(ModuleOp::getOperationName());
    pm.addPass(createConvertShardToMPIPass());
    if (failed(runPipeline(pm, m)))
      return signalPassFailure();
    if (gridIsWorld)
      m.walk([](mpi::CommSplitOp split) {
        split.getNewcomm().replaceAllUsesWith(split.getComm());
        split.erase();
      });
    for (shard::GridOp g :
         llvm::make_early_inc_range(m.getOps<shard::GridOp>()))
      g.erase();
  }
};
} // namespace
