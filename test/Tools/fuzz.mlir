// RUN: %PYTHON %S/fuzz_ember_opt.py ember-opt %S/../Dialect/ops.mlir 300 1234 | FileCheck %s
// RUN: %PYTHON %S/fuzz_ember_opt.py ember-opt %S/../Dialect/invalid.mlir 100 99 | FileCheck %s

// Truncated and byte-mutated copies of the round-trip and invalid tests must
// make ember-opt exit with a diagnostic (status 1) or succeed (status 0),
// never crash.

// CHECK-NOT: CRASH
// CHECK: no crashes
