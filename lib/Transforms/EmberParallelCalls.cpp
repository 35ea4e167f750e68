//===- EmberParallelCalls.cpp - calls of row functions on threads --------===//
//
// After the LLVM conversion: each call `@f(lo, hi, args...)` of a function
// marked `ember.rows` (made by `ember-split-rows`) becomes
//
//   ember_parallel_for(@f_task, ctx, lo, hi)
//
// where `ctx` is a stack slot holding `args` and `@f_task(ctx, a, b)` loads
// them and calls `@f(a, b, args...)`. The runtime (lib/Runtime/Parallel.cpp)
// runs the task on pieces of [lo, hi) on its threads.
//
//===----------------------------------------------------------------------===//
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERPARALLELCALLSPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;

namespace {
constexpr StringLiteral kRuntime = "ember_parallel_for";

struct EmberParallelCallsPass
    : public mlir::ember::impl::EmberParallelCallsPassBase<
          EmberParallelCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<LLVM::LLVMFuncOp> rows;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      if (fn->hasAttr("ember.rows") && !fn.isExternal())
        rows.push_back(fn);
    if (rows.empty())
      return;
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    auto voidType = LLVM::LLVMVoidType::get(ctx);
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    if (!module.lookupSymbol(kRuntime))
      LLVM::LLVMFuncOp::create(
          mb, module.getLoc(), kRuntime,
          LLVM::LLVMFunctionType::get(voidType, {i64, i64, i64, i64}));
    SymbolTable symbols(module);
    for (LLVM::LLVMFuncOp fn : rows) {
      LLVM::LLVMFunctionType type = fn.getFunctionType();
      if (type.getNumParams() < 2 || type.getParamType(0) != i64 ||
          type.getParamType(1) != i64 ||
          !isa<LLVM::LLVMVoidType>(type.getReturnType())) {
        fn.emitOpError("ember.rows function must take (i64 lo, i64 hi, ...) "
                       "and return nothing");
        return signalPassFailure();
      }
      ArrayRef<Type> rest = type.getParams().drop_front(2);
      auto frame = LLVM::LLVMStructType::getLiteral(ctx, rest);
      // The task: loads the arguments from the frame and calls `fn`.
      Location loc = fn.getLoc();
      mb.setInsertionPointAfter(fn);
      auto task = LLVM::LLVMFuncOp::create(
          mb, loc, (fn.getName() + "_task").str(),
          LLVM::LLVMFunctionType::get(voidType, {ptr, i64, i64}),
          LLVM::Linkage::Internal);
      symbols.insert(task);
      Block *entry = task.addEntryBlock(mb);
      OpBuilder tb = OpBuilder::atBlockBegin(entry);
      SmallVector<Value> callArgs = {entry->getArgument(1),
                                     entry->getArgument(2)};
      for (auto [i, t] : llvm::enumerate(rest)) {
        Value at = LLVM::GEPOp::create(
            tb, loc, ptr, frame, entry->getArgument(0),
            ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
        callArgs.push_back(LLVM::LoadOp::create(tb, loc, t, at));
      }
      LLVM::CallOp::create(tb, loc, fn, callArgs);
      LLVM::ReturnOp::create(tb, loc, ValueRange{});
      // Each call: store the arguments, run the task on the rows.
      std::optional<SymbolTable::UseRange> uses = fn.getSymbolUses(module);
      SmallVector<LLVM::CallOp> calls;
      for (const SymbolTable::SymbolUse &use : *uses)
        if (auto call = dyn_cast<LLVM::CallOp>(use.getUser());
            call && call->getParentOp() != task)
          calls.push_back(call);
      for (LLVM::CallOp call : calls) {
        Location at = call.getLoc();
        auto caller = call->getParentOfType<LLVM::LLVMFuncOp>();
        OpBuilder eb = OpBuilder::atBlockBegin(&caller.getBody().front());
        Value one = LLVM::ConstantOp::create(eb, at, i64, 1);
        Value slot = LLVM::AllocaOp::create(eb, at, ptr, frame, one);
        OpBuilder cb(call);
        for (auto [i, v] :
             llvm::enumerate(call.getArgOperands().drop_front(2))) {
          Value field = LLVM::GEPOp::create(
              cb, at, ptr, frame, slot,
              ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
          LLVM::StoreOp::create(cb, at, v, field);
        }
        Value taskAddr = LLVM::PtrToIntOp::create(
            cb, at, i64, LLVM::AddressOfOp::create(cb, at, task));
        Value slotAddr = LLVM::PtrToIntOp::create(cb, at, i64, slot);
        LLVM::CallOp::create(cb, at, TypeRange{}, kRuntime,
                             ValueRange{taskAddr, slotAddr,
                                        call.getArgOperands()[0],
                                        call.getArgOperands()[1]});
        call->erase();
      }
    }
  }
};
} // namespace
