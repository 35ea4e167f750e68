//===- EmberGPUDeferWaits.cpp - no host waits where stream order suffices -===//
//
// Erases the blocking gpu.wait that gpu-async-region puts before returns and
// before calls of stream-ordered functions (see the pass description in
// EmberPasses.td): Ember's CUDA runtime runs everything on one stream.
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERGPUDEFERWAITSPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {

struct EmberGPUDeferWaitsPass
    : public ember::impl::EmberGPUDeferWaitsPassBase<EmberGPUDeferWaitsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    known.clear(); // (the pass object may run on several modules)
    SymbolTable symbols(module);
    SmallVector<gpu::WaitOp> erase;
    module.walk([&](gpu::WaitOp wait) {
      // Only blocking waits (no token result) in host functions.
      if (wait.getAsyncToken() || wait->getParentOfType<gpu::GPUModuleOp>())
        return;
      // Nothing the host reads: GPU work only (kernels, device buffers,
      // copies into device memory), ordered by the stream.
      if (!reachesHost(wait.getAsyncDependencies())) {
        erase.push_back(wait);
        return;
      }
      Operation *next = wait->getNextNode();
      if (isa_and_nonnull<func::ReturnOp>(next)) {
        erase.push_back(wait);
        return;
      }
      if (auto call = dyn_cast_or_null<func::CallOp>(next))
        if (streamOrdered(symbols.lookup<func::FuncOp>(call.getCallee()),
                          symbols))
          erase.push_back(wait);
    });
    for (gpu::WaitOp wait : erase)
      wait.erase();
  }

  /// Whether the chain of asynchronous GPU operations ending in `tokens`
  /// may write memory the host reads: a copy into a host buffer, or a
  /// token from elsewhere (conservatively).
  static bool reachesHost(ValueRange tokens) {
    SmallVector<Value> work(tokens.begin(), tokens.end());
    llvm::DenseSet<Value> seen;
    while (!work.empty()) {
      Value t = work.pop_back_val();
      if (!seen.insert(t).second)
        continue;
      Operation *def = t.getDefiningOp();
      if (!isa_and_nonnull<gpu::LaunchFuncOp, gpu::AllocOp, gpu::DeallocOp,
                           gpu::MemcpyOp, gpu::MemsetOp, gpu::WaitOp>(def))
        return true;
      if (auto copy = dyn_cast<gpu::MemcpyOp>(def))
        if (!onDevice(copy.getDst()))
          return true;
      auto deps = cast<gpu::AsyncOpInterface>(def).getAsyncDependencies();
      work.append(deps.begin(), deps.end());
    }
    return false;
  }

  /// Whether `mem` is (a view of) a buffer gpu.alloc made.
  static bool onDevice(Value mem) {
    while (Operation *def = mem.getDefiningOp()) {
      if (isa<gpu::AllocOp>(def))
        return true;
      if (!isa<ViewLikeOpInterface>(def))
        return false;
      mem = cast<ViewLikeOpInterface>(def).getViewSource();
    }
    return false;
  }

  /// Whether calling `fn` needs no wait for the GPU work before the call: a
  /// runtime entry on device buffers, or a function whose only effects are
  /// GPU operations and calls of such functions.
  bool streamOrdered(func::FuncOp fn, SymbolTable &symbols) {
    if (!fn)
      return false;
    if (fn.isExternal())
      return fn.getSymName().starts_with("ember_cuda_");
    auto [it, inserted] = known.try_emplace(fn, false);
    if (!inserted)
      return it->second; // (false while being decided: recursion)
    bool ordered =
        !fn.walk([&](Operation *op) {
             if (isa<memref::LoadOp, memref::StoreOp, memref::CopyOp>(op))
               return WalkResult::interrupt();
             if (auto call = dyn_cast<func::CallOp>(op))
               if (!streamOrdered(
                       symbols.lookup<func::FuncOp>(call.getCallee()), symbols))
                 return WalkResult::interrupt();
             if (isa<CallOpInterface>(op) && !isa<func::CallOp>(op))
               return WalkResult::interrupt();
             return WalkResult::advance();
           }).wasInterrupted();
    known[fn] = ordered;
    return ordered;
  }

  llvm::DenseMap<Operation *, bool> known;
};

} // namespace
