//===- EmberMpiToLlvm.cpp - mpi ops to calls of MPICH's C API -------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MPIToLLVM/MPIToLLVM.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MPI/IR/MPI.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERMPITOLLVMPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {
struct EmberMpiToLlvmPass
    : public mlir::ember::impl::EmberMpiToLlvmPassBase<EmberMpiToLlvmPass> {
  void runOnOperation() override {
    // (Most modules have no MPI op: no conversion walk for them.)
    bool any = false;
    getOperation().walk([&](Operation *op) {
      any = isa_and_nonnull<mpi::MPIDialect>(op->getDialect());
      return any ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (!any)
      return;
    MLIRContext *ctx = &getContext();
    LLVMTypeConverter converter(ctx);
    RewritePatternSet patterns(ctx);
    mpi::populateMPIToLLVMConversionPatterns(converter, patterns);
    ConversionTarget target(*ctx);
    target.addIllegalDialect<mpi::MPIDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
