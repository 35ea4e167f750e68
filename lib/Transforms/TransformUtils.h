//===- TransformUtils.h - shared by the transformation passes ---*- C++ -*-===//
#ifndef EMBER_LIB_TRANSFORMS_TRANSFORMUTILS_H
#define EMBER_LIB_TRANSFORMS_TRANSFORMUTILS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::ember {

/// The integer value of a rank-0 integer `ember.constant`, or of an
/// `ember.convert` of one to another integer type.
std::optional<int64_t> constantInt(Value v);

/// A carried value of a loop that counts: starts at a constant and changes
/// by a constant each iteration (`v + step`, `step + v` or `v - c`).
struct AffineCounter {
  int64_t start, step;
};

/// Whether the `i`-th carried value of the ember.while `loop` is an
/// AffineCounter (its value in iteration k is start + k * step).
std::optional<AffineCounter> affineCounter(Operation *loop, unsigned i);

/// The value a fill writes everywhere (a generalized linalg.fill, on tensors
/// or buffers): for an all-parallel generic with one output, which it does
/// not read, written at every point (identity map), and a body yielding a
/// scalar input or a value from above; else null.
Value fillValue(linalg::GenericOp g);

/// True for the ops that reference a function and are expanded by a pass
/// (ember.jvp, ember.vjp, ember.vmap).
bool isTransformOp(Operation *op);

/// A 0-d i64 `ember.constant` (loop counters and indices the passes build).
Value scalarI64(OpBuilder &b, Location loc, int64_t v);

/// Splits `values` into consecutive ranges of the given sizes.
SmallVector<ValueRange> splitSegments(ValueRange values,
                                      ArrayRef<int64_t> sizes);

/// True when `fn`, following calls, contains no transformation op: it can be
/// transformed now (transformations expand innermost first).
bool isReadyToTransform(func::FuncOp fn, SymbolTable &symbols);

/// Whether `fn` is a Pallas kernel's interpreter with the kernel recorded
/// for the TPU target (or the reason it could not be recorded).
bool isRecordedTpuKernel(func::FuncOp fn);

/// Clones the body of `fn` at the builder's insertion point with `args` for
/// its arguments, inlining func.call ops recursively (but calls of recorded
/// TPU kernels with `keepKernelCalls`, and calls with a batching rule
/// (`ember.batch_rule`) with `keepBatchRules`); returns what it returns.
FailureOr<SmallVector<Value>> inlineBody(OpBuilder &b, func::FuncOp fn,
                                         ValueRange args, SymbolTable &symbols,
                                         bool keepKernelCalls = false,
                                         int depth = 0,
                                         bool keepBatchRules = false);

/// Runs `fn` with a temporary terminator of `body` (passed to `fn`) whose
/// operands are `live`; rewrites that replace values keep it up to date, and
/// `live` gets its final operands.
LogicalResult keepingLive(Block &body, SmallVectorImpl<Value> &live,
                          function_ref<LogicalResult(Operation *)> fn);

/// Replaces every `ember.case` under `root` by all of its branches, inlined,
/// and selects on the index. ember-autodiff and ember-batch transform this
/// form (as JAX batches a cond with a batched predicate); code that is not
/// transformed keeps the real conditional.
void flattenCases(Operation *root);

/// flattenCases on the op holding `body` (e.g. a function being built, not
/// yet terminated); `live` (values defined in `body`) is updated to the
/// values that replace them.
void flattenCases(Block &body, SmallVectorImpl<Value> &live);

/// The values `op` needs when it moves into a function of its own: its
/// operands, then the non-constant values its regions use from above.
/// `constants` receives the constant ops its regions use, which the function
/// clones instead of taking them as arguments.
SmallVector<Value> outlinedOperands(Operation *op,
                                    SmallVectorImpl<Operation *> &constants);

/// When `callee` holds a Pallas kernel's interpreter with the kernel recorded
/// for the TPU target (`ember_tpu.kernel_module`), records on `batchedFn`
/// (its batched clone) the kernel batched as JAX batches a pallas_call, or
/// why it cannot be (BatchTpuKernel.cpp). `operandBatched` flags the call's
/// operands; every result is batched, the batch dimension first.
void carryTpuKernel(func::FuncOp callee, func::FuncOp batchedFn,
                    ArrayRef<bool> operandBatched, int64_t n);

/// Before batching a call of a Pallas kernel's interpreter with its kernel
/// recorded for TPU (`callee`), does what JAX's pallas_call batching rule
/// does first: an unbatched operand aliased to an output is broadcast,
/// batched scalar-prefetch operands of a batch of one are squeezed
/// (`operands`/`isBatched` updated); with batched scalar-prefetch operands
/// of a larger batch the call becomes a counted loop over the examples and
/// its batched results are appended to `results` (returns true).
bool prepareTpuKernelCall(OpBuilder &b, func::CallOp call, func::FuncOp callee,
                          SmallVectorImpl<Value> &operands,
                          SmallVectorImpl<bool> &isBatched, int64_t n,
                          SmallVectorImpl<Value> &results);

/// A new private function in `module` named after `base`, with an entry block.
func::FuncOp makePrivateFunc(ModuleOp module, SymbolTable &symbols,
                             Location loc, StringRef base, FunctionType type);

/// Runs `expand(op, callee)` on every ready transformation op of kind `OpT`
/// until none is left or none is ready; the result replaces the op. Sets
/// `progress` when at least one op was expanded.
template <typename OpT, typename Fn>
LogicalResult expandReady(ModuleOp module, SymbolTable &symbols, Fn expand,
                          bool &progress, bool keepKernelCalls = false,
                          bool keepBatchRules = false,
                          function_ref<bool(OpT)> keep = nullptr) {
  while (true) {
    SmallVector<OpT> pending;
    module.walk([&](OpT op) {
      if (!keep || !keep(op))
        pending.push_back(op);
    });
    bool any = false;
    for (OpT op : pending) {
      auto callee = symbols.lookup<func::FuncOp>(op.getCallee());
      if (!callee)
        return op.emitError("unknown callee ") << op.getCallee();
      if (!isReadyToTransform(callee, symbols))
        continue;
      FailureOr<func::FuncOp> derived = expand(op, callee);
      if (failed(derived))
        return failure();
      OpBuilder b(op);
      auto results = inlineBody(b, *derived, op->getOperands(), symbols,
                                keepKernelCalls, 0, keepBatchRules);
      if (failed(results))
        return failure();
      op->replaceAllUsesWith(*results);
      op->erase();
      symbols.erase(*derived);
      any = true;
    }
    if (!any)
      return success(); // the rest waits for other transformations
    progress = true;
  }
}

/// One round of each expansion, as used by `ember-expand-transforms`: every
/// ready `ember.jvp`/`ember.vjp` (autodiff), every ready `ember.vmap`
/// (batching). `progress` is set when something was expanded.
LogicalResult expandAutodiffOps(ModuleOp module, SymbolTable &symbols,
                                bool &progress, bool keepKernelCalls = false);
/// With `keepDeviceVmaps`, vmaps whose lanes are devices
/// (`ember.device_axis`: shard_map, pmap) stay (StableHLO out).
LogicalResult expandBatchOps(ModuleOp module, SymbolTable &symbols,
                             bool &progress, bool keepKernelCalls = false,
                             bool keepDeviceVmaps = false);

/// Whether `op` is a vmap whose lanes are devices (`ember.device_axis`).
bool isDeviceVmap(Operation *op);

/// Inlines the callee of every `ember.custom_jvp_call` / `custom_vjp_call`
/// (what remains of a custom rule once nothing differentiates it); a
/// remaining `ember.custom_linear` is an error (forward mode of custom_vjp).
LogicalResult inlineCustomCalls(ModuleOp module, SymbolTable &symbols);

} // namespace mlir::ember

#endif
