/*===- ember-c/Ember.h - C API of the ember dialect ---------------*- C -*-===*/
#ifndef EMBER_C_EMBER_H
#define EMBER_C_EMBER_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Ember, ember);

/// Inserts the ember dialect and every upstream dialect and interface model
/// Ember's pipelines need into `registry`.
MLIR_CAPI_EXPORTED void emberRegisterDialects(MlirDialectRegistry registry);

/// Registers the ember passes, the upstream passes they use, and the named
/// pipelines (`ember-cpu-pipeline`) in the global pass registry.
MLIR_CAPI_EXPORTED void emberRegisterPassesAndPipelines(void);

/// Appends the CPU pipeline (ember -> LLVM dialect) to `passManager`.
MLIR_CAPI_EXPORTED void emberAddCpuPipeline(MlirOpPassManager passManager);

/// Appends one named stage to `passManager`: "transforms", "optimize",
/// "<target>-codegen" or "<target>-pipeline" (all three), e.g. "cpu-codegen".
/// Returns false (and adds nothing) for an unknown stage or target.
MLIR_CAPI_EXPORTED bool emberAddPipelineStage(MlirOpPassManager passManager,
                                              MlirStringRef stage);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_C_EMBER_H */
