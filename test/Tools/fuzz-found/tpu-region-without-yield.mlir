// RUN: ember-opt %s -split-input-file -verify-diagnostics
// Found by the mutation fuzz (#21, tools/fuzz/ember_opt_mutate.py, seed
// 5001 over the recorded TPU kernels): an ember_tpu.region whose yield was
// deleted made its verifier ask for a terminator the block lacked (an
// assertion failure before the implicit-terminator trait could report it).

func.func @no_yield() {
  // expected-error @+1 {{region_c1: the region ends in an ember_tpu.yield}}
  "ember_tpu.region"() ({
    %c0 = arith.constant 0 : i32
  }) : () -> ()
  return
}
