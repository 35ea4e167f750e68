//===- EmberToLinalg.cpp - ember -> linalg/tensor/arith/math/scf ----------===//
//
// The ember-to-linalg pass, its type converter and the helpers shared by the
// op families, whose patterns live in Lower<Family>.cpp (one populate
// function each, declared in EmberToLinalgCommon.h).
//
//===----------------------------------------------------------------------===//
#include "EmberToLinalgCommon.h"
#include "ember/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::ember {
#define GEN_PASS_DEF_EMBERTOLINALGPASS
#include "ember/Transforms/Passes.h.inc"
} // namespace mlir::ember

using namespace mlir;
using namespace mlir::ember;

//===----------------------------------------------------------------------===//
// Type conversion
//===----------------------------------------------------------------------===//

EmberTypeConverter::EmberTypeConverter() {
  addConversion([](Type t) { return t; });
  addConversion([](IntegerType t) -> Type {
    // Booleans are stored one byte each (0 or 1), as NumPy stores them; the
    // LLVM lowering of memrefs cannot store i1 elements. 2- and 4-bit
    // integers too: one per byte, the value in the low bits (ml_dtypes'
    // layout; MLIR 22 would pack them).
    if (t.getWidth() < 8)
      return IntegerType::get(t.getContext(), 8);
    if (t.isUnsigned())
      return IntegerType::get(t.getContext(), t.getWidth());
    return t;
  });
  addConversion([this](RankedTensorType t) -> Type {
    return t.clone(convertType(t.getElementType()));
  });
  // A ref argument is the buffer the compiled code updates in place.
  addConversion([this](RefType t) -> Type {
    RankedTensorType v = t.getValueType();
    return MemRefType::get(v.getShape(), convertType(v.getElementType()));
  });
  auto cast = [](OpBuilder &b, Type type, ValueRange inputs,
                 Location loc) -> Value {
    return UnrealizedConversionCastOp::create(b, loc, type, inputs)
        .getResult(0);
  };
  addSourceMaterialization(cast);
  addTargetMaterialization(cast);
}

//===----------------------------------------------------------------------===//
// Helpers shared by the op families
//===----------------------------------------------------------------------===//

Value mlir::ember::emptyTensor(OpBuilder &b, Location loc, RankedTensorType t) {
  return tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType());
}

Value mlir::ember::filledTensor(OpBuilder &b, Location loc, RankedTensorType t,
                                Value scalar) {
  Value e = emptyTensor(b, loc, t);
  return linalg::FillOp::create(b, loc, scalar, e).getResult(0);
}

Value mlir::ember::constScalar(OpBuilder &b, Location loc, TypedAttr a) {
  if (auto c = dyn_cast<complex::NumberAttr>(a)) {
    Type part = cast<ComplexType>(c.getType()).getElementType();
    SmallVector<Attribute> parts = {b.getFloatAttr(part, c.getReal()),
                                    b.getFloatAttr(part, c.getImag())};
    return complex::ConstantOp::create(b, loc, c.getType(),
                                       b.getArrayAttr(parts));
  }
  return arith::ConstantOp::create(b, loc, a);
}

Value mlir::ember::indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value mlir::ember::toIndex(OpBuilder &b, Location loc, Value s, Type origElem) {
  auto it = cast<IntegerType>(origElem);
  if (it.isUnsigned() || it.getWidth() == 1)
    return arith::IndexCastUIOp::create(b, loc, b.getIndexType(), s);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), s);
}

Value mlir::ember::scalarToIndex(OpBuilder &b, Location loc, Value t0d,
                                 Type origElem) {
  Value s = tensor::ExtractOp::create(b, loc, t0d, ValueRange{});
  return toIndex(b, loc, s, origElem);
}

Value mlir::ember::clampIndex(OpBuilder &b, Location loc, Value i, int64_t lo,
                              int64_t hi) {
  i = arith::MaxSIOp::create(b, loc, i, indexConst(b, loc, lo));
  return arith::MinSIOp::create(b, loc, i, indexConst(b, loc, hi));
}

SmallVector<utils::IteratorType> mlir::ember::parallelIterators(unsigned n) {
  return SmallVector<utils::IteratorType>(n, utils::IteratorType::parallel);
}

SmallVector<Value> mlir::ember::buildGeneric(
    OpBuilder &b, Location loc, ValueRange inputs, TypeRange outTypes,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> body,
    ArrayRef<AffineMap> inputMaps) {
  auto first = cast<RankedTensorType>(outTypes[0]);
  unsigned rank = first.getRank();
  SmallVector<Value> outs;
  for (Type t : outTypes)
    outs.push_back(emptyTensor(b, loc, cast<RankedTensorType>(t)));
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  SmallVector<AffineMap> maps(inputMaps);
  maps.resize(inputs.size(), identity);
  maps.append(outs.size(), identity);
  auto g = linalg::GenericOp::create(
      b, loc, outTypes, inputs, outs, maps, parallelIterators(rank),
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        SmallVector<Value> r = body(nb, nl, args.take_front(inputs.size()));
        linalg::YieldOp::create(nb, nl, r);
      });
  return g.getResults();
}

namespace {

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct EmberToLinalgPass
    : public mlir::ember::impl::EmberToLinalgPassBase<EmberToLinalgPass> {
  using EmberToLinalgPassBase::EmberToLinalgPassBase;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // A collective left here names an axis no vmap binds: the program
    // computes one lane, and there are no others to combine with.
    WalkResult unbound = getOperation()->walk([](Operation *op) {
      if (!isa<PsumOp, PmaxOp, PminOp, PvaryOp, AllGatherOp, ReduceScatterOp,
               PpermuteOp, AllToAllOp, AxisIndexOp>(op))
        return WalkResult::advance();
      op->emitError("collective over axis ")
          << op->getAttr("axis")
          << " outside any ember.vmap that binds the axis (vmap "
             "axis_name, shard_map or pmap)";
      return WalkResult::interrupt();
    });
    if (unbound.wasInterrupted())
      return signalPassFailure();
    if (failed(normalizeRefs(getOperation())))
      return signalPassFailure();
    EmberTypeConverter converter;
    ConversionTarget target(*ctx);
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, complex::ComplexDialect,
                           bufferization::BufferizationDialect>();
    target.addIllegalDialect<EmberDialect>();
    target.addDynamicallyLegalOp<OptimizationBarrierOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp f) {
      return converter.isSignatureLegal(f.getFunctionType()) &&
             converter.isLegal(&f.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    RewritePatternSet patterns(ctx);
    if (runtimeGemm && cudaGemm) {
      getOperation().emitError("ember-to-linalg: runtime-gemm and cuda-gemm "
                               "are exclusive");
      return signalPassFailure();
    }
    GemmEntry gemm = cudaGemm      ? GemmEntry::Cuda
                     : runtimeGemm ? GemmEntry::Cpu
                                   : GemmEntry::None;
    // A module ember-partition will partition keeps its products as
    // contractions (linalg ops upstream partitioning covers); ember-partition
    // gives them to the GEMM afterwards.
    for (auto f : getOperation().getOps<FunctionOpInterface>())
      if (hasSplitAxes(f))
        gemm = GemmEntry::None;
    populateEmberToLinalgPatterns(converter, patterns, gemm, runtimeSort,
                                  deviceBuffers);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    copyRefAliases(getOperation());
    // Arguments belong to the caller (value semantics): bufferization must
    // never write into them in place.
    OpBuilder b(ctx);
    getOperation().walk([&](func::FuncOp f) {
      if (f.isExternal())
        return;
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        if (isa<TensorType>(f.getArgument(i).getType()))
          f.setArgAttr(i, "bufferization.writable", b.getBoolAttr(false));
    });
  }
};

} // namespace
void mlir::ember::populateEmberToLinalgPatterns(const TypeConverter &converter,
                                                RewritePatternSet &patterns,
                                                GemmEntry gemm,
                                                bool runtimeSort,
                                                bool deviceBuffers) {
  populateElementwiseLoweringPatterns(converter, patterns);
  populateStructuralLoweringPatterns(converter, patterns);
  populateControlFlowLoweringPatterns(converter, patterns);
  populateReductionLoweringPatterns(converter, patterns, runtimeSort);
  populateDotLoweringPatterns(converter, patterns, gemm);
  populateGatherScatterLoweringPatterns(converter, patterns);
  populateRuntimeCallLoweringPatterns(converter, patterns, deviceBuffers);
  populateRefLoweringPatterns(converter, patterns);
}
