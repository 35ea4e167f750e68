//===- ember-opt.cpp - the ember optimizer driver -------------------------===//
//
// MlirOptMain with the ember dialect and only the upstream dialects and
// passes Ember uses.
//
//===----------------------------------------------------------------------===//
#include "ember/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::ember::registerEmberDialects(registry);
  mlir::ember::registerEmberPassesAndPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Ember optimizer driver\n", registry));
}
