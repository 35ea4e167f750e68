//===- CPU.cpp - the host CPU target --------------------------------------===//
//
// ember -> linalg on tensors -> fused elementwise loops -> buffers -> LLVM
// dialect, which the runtime's ORC JIT (lib/Runtime/Jit.cpp) compiles for the
// host CPU.
//
//===----------------------------------------------------------------------===//
#include "ember/Pipelines/Pipelines.h"

namespace mlir::ember {
const TargetDescription &getCPUTarget();
} // namespace mlir::ember

using namespace mlir::ember;

static const char kCpuCodegen[] =
    "ember-to-linalg,"
    "canonicalize,loop-invariant-code-motion,cse,"
    "linalg-generalize-named-ops,linalg-fuse-elementwise-ops,"
    "canonicalize,"
    "ember-drop-optimization-barriers,"
    "ember-unique-results,"
    "one-shot-bufferize{bufferize-function-boundaries "
    "allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map "
    "unknown-type-conversion=identity-layout-map},"
    "buffer-results-to-out-params{hoist-static-allocs=true "
    "modify-public-functions=true},"
    "canonicalize,"
    "buffer-deallocation-pipeline,"
    "convert-bufferization-to-memref,"
    "ember-widen-bool-buffers,"
    "ember-lower-copies,"
    "ember-math-approx,"
    "convert-math-to-funcs,"
    "convert-linalg-to-loops,"
    "lower-affine,"
    "convert-scf-to-cf,"
    "convert-complex-to-standard,"
    "ember-arith-expand,"
    "expand-strided-metadata,"
    "lower-affine,"
    "finalize-memref-to-llvm,"
    "convert-math-to-llvm,"
    "convert-math-to-libm,"
    "convert-complex-to-llvm,"
    "convert-arith-to-llvm,"
    "convert-index-to-llvm,"
    "convert-func-to-llvm,"
    "convert-cf-to-llvm,"
    "reconcile-unrealized-casts";

const TargetDescription &mlir::ember::getCPUTarget() {
  static const TargetDescription cpu{
      "cpu", "ember -> linalg -> loops -> LLVM dialect for the host CPU",
      kCpuCodegen,
      "ORC JIT of the host (emberExecutableCreate), runtime entry points in "
      "lib/Runtime"};
  return cpu;
}
