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

bool emberAddPipelineStage(MlirOpPassManager passManager, MlirStringRef stage) {
  using namespace mlir::ember;
  llvm::StringRef name = unwrap(stage);
  mlir::OpPassManager &pm = *unwrap(passManager);
  if (name == "transforms") {
    buildTransformsPipeline(pm);
    return true;
  }
  if (name == "optimize") {
    buildOptimizePipeline(pm);
    return true;
  }
  for (const TargetDescription *t : getTargets()) {
    if (name == (t->name + "-codegen").str()) {
      buildCodegenPipeline(*t, pm);
      return true;
    }
    if (name == (t->name + "-pipeline").str()) {
      buildTargetPipeline(*t, pm);
      return true;
    }
  }
  return false;
}
