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

/// ember -> LLVM dialect for the host CPU (the same pipeline Python runs).
void buildCpuPipeline(OpPassManager &pm);

} // namespace mlir::ember

#endif // EMBER_PIPELINES_PIPELINES_H
