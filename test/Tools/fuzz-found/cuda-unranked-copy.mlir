// RUN: ember-opt %s -verify-diagnostics --ember-cuda-gpu
// Found by ember-opt-fuzz (#21, `make fuzz-opt`): ember-linalg-to-gpu cast
// an unranked copy's operands to ranked memrefs (an assertion failure).

func.func @unranked_kept(%a: memref<*xf32>, %b: memref<*xf32>) {
  // expected-error @+1 {{copies of unranked buffers are not supported by the cuda target}}
  memref.copy %a, %b : memref<*xf32> to memref<*xf32>
  return
}
