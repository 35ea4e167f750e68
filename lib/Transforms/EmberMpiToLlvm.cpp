//===- EmberMpiToLlvm.cpp - mpi ops to calls of MPICH's C API -------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MPIToLLVM/MPIToLLVM.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

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
      return signalPassFailure();
    if (getOperation()->hasAttr("ember.device_threads"))
      callDeviceThreads();
  }

  /// A program for the in-process devices (threads of one process) calls
  /// the runtime's ember_devices_MPI_* functions instead of MPI's.
  void callDeviceThreads() {
    static const llvm::StringSet<> known = {
#define EMBER_DEVICE_MPI_ENTRY(NAME) #NAME,
#include "ember/Runtime/Runtime.def"
    };
    ModuleOp m = getOperation();
    for (auto fn : llvm::make_early_inc_range(m.getOps<LLVM::LLVMFuncOp>())) {
      StringRef name = fn.getSymName();
      if (!name.starts_with("MPI_") || !fn.isExternal())
        continue;
      if (!known.contains(name)) {
        fn.emitError() << "'" << name
                       << "' has no counterpart among the in-process "
                          "devices' threads";
        return signalPassFailure();
      }
      auto renamed = StringAttr::get(&getContext(), "ember_devices_" + name);
      if (failed(SymbolTable::replaceAllSymbolUses(fn, renamed, m)))
        return signalPassFailure();
      fn.setSymName(renamed);
    }
  }
};
} // namespace
