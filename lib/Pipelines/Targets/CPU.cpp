//===- CPU.cpp - the host CPU target --------------------------------------===//
//
// ember -> linalg on tensors -> fused elementwise loops -> buffers -> LLVM
// dialect, which the runtime's ORC JIT (lib/Runtime/Jit.cpp) compiles for the
// host CPU.
//
//===----------------------------------------------------------------------===//
#include "Common.h"
#include "ember/Pipelines/Pipelines.h"

namespace mlir::ember {
const TargetDescription &getCPUTarget();
} // namespace mlir::ember

using namespace mlir::ember;

static const char kCpuCodegen[] =
    "ember-widen-narrow-ints,ember-to-linalg,ember-narrow-floats,"
    "ember-partition,ember-shard-to-mpi,"
    "canonicalize,loop-invariant-code-motion,cse,"
    "ember-scalarize-loop-counters,canonicalize,cse," EMBER_FUSE_AND_BUFFERIZE
    "ember-outline-repeated-kernels{outline-all-above=16},"
    "ember-split-rows,"
    "ember-math-approx,"
    "convert-math-to-funcs,"
    "convert-linalg-to-loops,"
    "lower-affine,"
    "convert-scf-to-cf,"
    "convert-complex-to-standard,"
    "ember-narrow-floats,"
    "ember-arith-expand,"
    "expand-strided-metadata,"
    "lower-affine,"
    "ember-mpi-to-llvm,"
    "finalize-memref-to-llvm,"
    "convert-math-to-llvm,"
    "convert-math-to-libm,"
    "convert-complex-to-llvm,"
    "convert-arith-to-llvm,"
    "convert-index-to-llvm,"
    "convert-func-to-llvm,"
    "convert-cf-to-llvm,"
    "ember-parallel-calls,"
    "reconcile-unrealized-casts";

const TargetDescription &mlir::ember::getCPUTarget() {
  static const TargetStage stages[] = {{"llvm", kCpuCodegen}};
  static const TargetDescription cpu{
      "cpu", "ember -> linalg -> loops -> LLVM dialect for the host CPU",
      stages,
      "ORC JIT of the host (emberExecutableCreate), runtime entry points in "
      "lib/Runtime"};
  return cpu;
}
