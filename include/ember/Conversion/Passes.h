//===- Passes.h - ember conversion passes -----------------------*- C++ -*-===//
#ifndef EMBER_CONVERSION_PASSES_H
#define EMBER_CONVERSION_PASSES_H

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::ember {

#define GEN_PASS_DECL
#include "ember/Transforms/Passes.h.inc"

/// Which runtime GEMM large products call: none (every product is a
/// linalg.generic), the CPU's (`ember_gemm_*`, f32/f64) or the GPU's
/// (`ember_cuda_gemm`, cuBLAS on device buffers; f32/f64/f16/bf16).
enum class GemmEntry { None, Cpu, Cuda };

/// Patterns rewriting every ember op to linalg/tensor/arith/math/scf/complex.
/// Large products call the runtime GEMM `gemm`. With `runtimeSort`, sorts
/// call the runtime's sort; without, a rank sort. With `deviceBuffers`,
/// runtime calls get row-major buffers (the cuda target's device memory).
void populateEmberToLinalgPatterns(const TypeConverter &converter,
                                   RewritePatternSet &patterns,
                                   GemmEntry gemm = GemmEntry::Cpu,
                                   bool runtimeSort = true,
                                   bool deviceBuffers = false);

/// Marks an scf.for lowered from a `parallel` ember.while (spec rule
/// while_c5): its iterations are independent, and once its carried tensors
/// are buffers written in place `ember-split-rows` runs them on the threads.
constexpr llvm::StringLiteral kParallelLoopAttr = "ember.parallel";

/// The type converter of the lowering: unsigned integers become signless.
class EmberTypeConverter : public TypeConverter {
public:
  EmberTypeConverter();
};

/// Per tensor dimension, the axes of the module's `shard.grid` an argument
/// or result is split over (ember-partition's input).
constexpr llvm::StringLiteral kSplitAxesAttr = "ember.split_axes";

/// Whether `f` has arguments or results carrying `kSplitAxesAttr`.
inline bool hasSplitAxes(FunctionOpInterface f) {
  for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i)
    if (f.getArgAttr(i, kSplitAxesAttr))
      return true;
  for (unsigned i = 0, e = f.getNumResults(); i < e; ++i)
    if (f.getResultAttr(i, kSplitAxesAttr))
      return true;
  return false;
}

/// Memory effects for the `mpi` ops ember-shard-to-mpi emits (upstream
/// declares none, which buffer deallocation rejects).
void registerMpiEffectModels(DialectRegistry &registry);

#define GEN_PASS_REGISTRATION
#include "ember/Transforms/Passes.h.inc"

} // namespace mlir::ember

#endif // EMBER_CONVERSION_PASSES_H
