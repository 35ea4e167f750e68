//===- Pipelines.h - named ember pipelines ----------------------*- C++ -*-===//
#ifndef EMBER_PIPELINES_PIPELINES_H
#define EMBER_PIPELINES_PIPELINES_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::ember {

/// Adds the ember dialect and the upstream dialects (plus their interface
/// models) that Ember's pipelines produce.
void registerEmberDialects(DialectRegistry &registry);

/// Registers the ember passes, the upstream passes Ember uses, and the named
/// pipelines (`ember-cpu-pipeline`).
void registerEmberPassesAndPipelines();

/// One step of a target's codegen, registered as `ember-<target>-<name>`.
struct TargetStage {
  llvm::StringRef name;
  /// Pass-pipeline text; `${option}` stands for a target option's value.
  llvm::StringRef pipeline;
};

/// A target option: every stage pipeline of the target (and the composed
/// ones) accepts `{name=value ...}`; `${name}` in the text is replaced.
struct TargetOption {
  llvm::StringRef name;
  llvm::StringRef defaultValue;
  llvm::StringRef help;
};

/// A compilation target: what follows the target-independent stages. Python
/// has the matching description (python/ember/_src/targets/), naming the
/// runtime that loads what the codegen pipeline produces.
struct TargetDescription {
  /// Short name: the pipelines are `ember-<name>-codegen` (all its stages)
  /// and `ember-<name>-pipeline` (the shared stages, then codegen).
  llvm::StringRef name;
  llvm::StringRef summary;
  /// The tail after `ember-optimize`, in order.
  llvm::ArrayRef<TargetStage> stages;
  /// What runs the result (documentation; the runtime itself is in Python's
  /// description and lib/Runtime).
  llvm::StringRef runtime;
  llvm::ArrayRef<TargetOption> options = {};
};

/// Every target Ember knows (lib/Pipelines/Targets/Targets.def).
llvm::ArrayRef<const TargetDescription *> getTargets();
/// The target called `name`, or null.
const TargetDescription *lookupTarget(llvm::StringRef name);

/// Stage 1, `ember-transforms`: expands every transformation op
/// (`ember-expand-transforms`), then symbol-dce, canonicalize, cse.
void buildTransformsPipeline(OpPassManager &pm);
/// Stage 2, `ember-optimize`: target-independent rewrites of ember IR.
void buildOptimizePipeline(OpPassManager &pm);
/// Stage 3, `ember-<target>-codegen`, with the target's default options.
void buildCodegenPipeline(const TargetDescription &target, OpPassManager &pm);
/// All three stages: `ember-<target>-pipeline`.
void buildTargetPipeline(const TargetDescription &target, OpPassManager &pm);

/// ember -> LLVM dialect for the host CPU: `buildTargetPipeline` of "cpu".
void buildCpuPipeline(OpPassManager &pm);

} // namespace mlir::ember

#endif // EMBER_PIPELINES_PIPELINES_H
