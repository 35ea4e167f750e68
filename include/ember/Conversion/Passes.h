//===- Passes.h - ember conversion passes -----------------------*- C++ -*-===//
#ifndef EMBER_CONVERSION_PASSES_H
#define EMBER_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::ember {

#define GEN_PASS_DECL
#include "ember/Transforms/Passes.h.inc"

/// Patterns rewriting every ember op to linalg/tensor/arith/math/scf/complex.
/// With `runtimeGemm`, large f32/f64 products call the runtime's GEMM entry
/// points (CPU); without, every product is a linalg.generic. With
/// `runtimeSort`, sorts call the runtime's sort; without, a rank sort.
void populateEmberToLinalgPatterns(const TypeConverter &converter,
                                   RewritePatternSet &patterns,
                                   bool runtimeGemm = true,
                                   bool runtimeSort = true);

/// The type converter of the lowering: unsigned integers become signless.
class EmberTypeConverter : public TypeConverter {
public:
  EmberTypeConverter();
};

#define GEN_PASS_REGISTRATION
#include "ember/Transforms/Passes.h.inc"

} // namespace mlir::ember

#endif // EMBER_CONVERSION_PASSES_H
