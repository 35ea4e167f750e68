//===- EmberCAPI.cpp - C API of the ember dialect -------------------------===//
#include "ember-c/Ember.h"
#include "ember/IR/EmberDialect.h"
#include "ember/Pipelines/Pipelines.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Ember, ember, mlir::ember::EmberDialect)

void emberRegisterDialects(MlirDialectRegistry registry) {
  mlir::ember::registerEmberDialects(*unwrap(registry));
}

void emberRegisterPassesAndPipelines(void) {
  mlir::ember::registerEmberPassesAndPipelines();
}

void emberAddCpuPipeline(MlirOpPassManager passManager) {
  mlir::ember::buildCpuPipeline(*unwrap(passManager));
}
