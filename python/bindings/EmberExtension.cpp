//===- EmberExtension.cpp - ember's Python site initializer ---------------===//
//
// Loaded by ember._mlir._mlir_libs at import: registers the ember dialect, the
// upstream dialects Ember uses, and every pass and pipeline, so that each
// ember._mlir.ir.Context can parse, build and lower Ember IR.
//
//===----------------------------------------------------------------------===//
#include "ember-c/Ember.h"
#include "mlir/Bindings/Python/Nanobind.h"
#include "mlir/Bindings/Python/NanobindAdaptors.h"

namespace nb = nanobind;

NB_MODULE(_site_initialize_0, m) {
  m.doc() = "Ember dialect and pass registration";
  emberRegisterPassesAndPipelines();
  m.def("register_dialects",
        [](MlirDialectRegistry registry) { emberRegisterDialects(registry); });
  // Every context loads the registered dialects: creating an op of a dialect
  // that is registered but not loaded would abort the process.
}
