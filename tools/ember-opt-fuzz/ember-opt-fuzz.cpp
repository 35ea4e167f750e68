//===- ember-opt-fuzz.cpp - coverage-guided fuzzing of ember-opt ----------===//
//
// A libFuzzer target (#21) for what `ember-opt` does with a module: parse,
// verify, then run one of Ember's pipelines or one of its passes alone. An
// input is a first line that picks what runs (a decimal number, or else the
// sum of its bytes, modulo the number of choices; see kPipelines and
// kPasses; `tools/fuzz/opt_fuzz_corpus.py` writes seeds as
// "<index>\n<module>") and the module's text after it.
//
// What counts as a finding (libFuzzer stops and writes the input):
//   - any signal, abort, sanitizer report, hang or runaway memory, as for
//     every libFuzzer target;
//   - a pass that leaves IR the verifier rejects (Ember's bug: passes must
//     keep IR valid), reported with the pass's name;
//   - a pipeline that fails without an error diagnostic (ember-opt would
//     exit non-zero saying nothing).
// Invalid modules and pipelines that fail with a diagnostic are fine: that
// is how ember-opt must treat bad input.
//
//===----------------------------------------------------------------------===//
#include "ember/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>

using namespace mlir;

namespace {
/// The pipelines an input can pick. Target stages run after the shared
/// stages they expect; `ember-gpu-kernel` and `ember-tpu-kernel` take the
/// kernel forms their lit tests hold.
const char *const kPipelines[] = {
    "",
    "canonicalize,cse",
    "ember-transforms",
    "ember-transforms,ember-optimize",
    "ember-cpu-pipeline",
    "ember-transforms,ember-optimize,ember-cuda-gpu,ember-cuda-nvvm",
    "ember-gpu-kernel",
    "ember-tpu-kernel",
};
constexpr unsigned kNumPipelines = sizeof(kPipelines) / sizeof(kPipelines[0]);

/// Every pass of Ember's, alone (choices kNumPipelines and on): a pass given
/// IR of another stage than it expects must fail with a diagnostic, never
/// crash.
const char *const kPasses[] = {
    "ember-to-linalg",
    "ember-outline-repeated-kernels",
    "ember-split-rows",
    "ember-parallel-calls",
    "ember-lower-copies",
    "ember-math-approx",
    "ember-arith-expand",
    "ember-narrow-floats",
    "ember-widen-narrow-ints",
    "ember-widen-bool-buffers",
    "ember-expand-transforms",
    "ember-autodiff",
    "ember-batch",
    "ember-hoist-scan-inputs",
    "ember-inline-custom",
    "ember-drop-optimization-barriers",
    "ember-scalarize-loop-counters",
    "ember-unique-results",
    "ember-avoid-buffer-copies",
    "ember-privatize-parallel-loops",
    "ember-partition",
    "ember-shard-to-mpi",
    "ember-mpi-to-llvm",
    "ember-linalg-to-gpu",
    "ember-gpu-to-nvvm",
    "ember-gpu-hoist-allocas",
    "ember-gpu-defer-waits",
    "ember-tpu-kernel",
    "ember-tpu-infer-layout",
};
constexpr unsigned kNumPasses = sizeof(kPasses) / sizeof(kPasses[0]);

/// Verifies the IR after every pass that succeeded; IR a pass leaves invalid
/// is reported with the pass's name and aborts the run.
struct VerifyAfterEachPass : public PassInstrumentation {
  void runAfterPass(Pass *pass, Operation *op) override {
    if (succeeded(verify(op)))
      return;
    llvm::errs() << "ember-opt-fuzz: the IR is invalid after the pass '"
                 << pass->getArgument() << "' (" << pass->getName() << ")\n";
    abort();
  }
};

const DialectRegistry &registry() {
  static const DialectRegistry *r = [] {
    auto *reg = new DialectRegistry();
    ember::registerEmberDialects(*reg);
    ember::registerEmberPassesAndPipelines();
    return reg;
  }();
  return *r;
}
} // namespace

// The uninstrumented MLIR libraries use LLVM's bump allocator, whose slabs
// inline header code poisons (false reports), as in `make test-asan`.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0:detect_leaks=0";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef input(reinterpret_cast<const char *>(data), size);
  auto [head, text] = input.split('\n');
  unsigned pick = 0;
  if (head.getAsInteger(10, pick)) {
    pick = 0;
    for (char c : head)
      pick += static_cast<unsigned char>(c);
  }
  pick %= kNumPipelines + kNumPasses;
  const char *pipeline =
      pick < kNumPipelines ? kPipelines[pick] : kPasses[pick - kNumPipelines];

  MLIRContext context(registry(), MLIRContext::Threading::DISABLED);
  context.allowUnregisteredDialects(false);
  context.printOpOnDiagnostic(false);
  unsigned errors = 0;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      ++errors;
    return success();
  });

  // As ember-opt reads a file: a null-terminated copy (the lexer relies on
  // the terminator; libFuzzer's bytes have none).
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text),
                               llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module || !*pipeline)
    return 0;

  PassManager pm(&context, ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  pm.enableVerifier(false);
  pm.addInstrumentation(std::make_unique<VerifyAfterEachPass>());
  std::string pipelineErrors;
  llvm::raw_string_ostream os(pipelineErrors);
  if (failed(parsePassPipeline(pipeline, pm, os))) {
    llvm::errs() << "ember-opt-fuzz: cannot build '" << pipeline
                 << "': " << pipelineErrors << "\n";
    abort();
  }
  if (failed(pm.run(*module)) && errors == 0) {
    llvm::errs() << "ember-opt-fuzz: '" << pipeline
                 << "' failed without an error diagnostic\n";
    abort();
  }
  return 0;
}
