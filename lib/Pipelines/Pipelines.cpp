//===- Pipelines.cpp - dialect registration and named pipelines -----------===//
#include "ember/Pipelines/Pipelines.h"
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Func/Extensions/AllExtensions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/InlinerInterfaceImpl.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include <mutex>

using namespace mlir;

void mlir::ember::registerEmberDialects(DialectRegistry &registry) {
  registry.insert<EmberDialect, affine::AffineDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  complex::ComplexDialect, func::FuncDialect, index::IndexDialect,
                  linalg::LinalgDialect, LLVM::LLVMDialect, math::MathDialect,
                  memref::MemRefDialect, scf::SCFDialect, tensor::TensorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  cf::registerBufferizableOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  func::registerAllExtensions(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerSubsetOpInterfaceExternalModels(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
  LLVM::registerInlinerInterface(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

// The CPU pipeline as text: the same string is what `ember-opt
// --ember-cpu-pipeline` and Python run, and what docs/design.md explains.
static const char kCpuPipeline[] =
    "ember-autodiff,ember-batch,ember-autodiff,ember-batch,ember-autodiff,ember-batch,"
    "ember-inline-custom,symbol-dce,canonicalize,cse,"
    "ember-hoist-scan-inputs,ember-batch,symbol-dce,"
    "ember-to-linalg,"
    "canonicalize,loop-invariant-code-motion,cse,"
    "linalg-generalize-named-ops,linalg-fuse-elementwise-ops,"
    "canonicalize,"
    "ember-drop-optimization-barriers,"
    "ember-unique-results,"
    "one-shot-bufferize{bufferize-function-boundaries allow-return-allocs-from-loops "
    "function-boundary-type-conversion=identity-layout-map unknown-type-conversion=identity-layout-map},"
    "buffer-results-to-out-params{hoist-static-allocs=true modify-public-functions=true},"
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

static void registerOnce();

void mlir::ember::buildCpuPipeline(OpPassManager &pm) {
  // The pipeline is parsed from text: make sure the passes it names exist,
  // so that embedders need not register anything first.
  registerEmberPassesAndPipelines();
  if (failed(parsePassPipeline(kCpuPipeline, pm, llvm::errs())))
    llvm::report_fatal_error("ember: the built-in CPU pipeline does not parse");
}

void mlir::ember::registerEmberPassesAndPipelines() {
  static std::once_flag once;
  std::call_once(once, registerOnce);
}

static void registerOnce() {
  mlir::ember::registerEmberPasses();
  // Upstream passes the pipelines use.
  registerCanonicalizerPass();
  registerCSEPass();
  registerLoopInvariantCodeMotionPass();
  registerInlinerPass();
  registerSymbolDCEPass();
  registerLinalgPasses();
  bufferization::registerBufferizationPasses();
  bufferization::registerBufferizationPipelines();
  memref::registerMemRefPasses();
  arith::registerArithPasses();
  registerConvertLinalgToLoopsPass();
  registerSCFToControlFlowPass();
  registerConvertComplexToStandardPass();
  registerConvertMathToFuncs();
  registerConvertMathToLibmPass();
  registerConvertMathToLLVMPass();
  registerFinalizeMemRefToLLVMConversionPass();
  registerConvertComplexToLLVMPass();
  registerArithToLLVMConversionPass();
  registerConvertIndexToLLVMPass();
  registerConvertFuncToLLVMPass();
  registerConvertControlFlowToLLVMPass();
  registerReconcileUnrealizedCastsPass();
  registerLowerAffinePass();
  registerConvertBufferizationToMemRefPass();
  PassPipelineRegistration<>(
      "ember-cpu-pipeline", "Lower ember to the LLVM dialect for the host CPU",
      [](OpPassManager &pm) {
        if (failed(parsePassPipeline(kCpuPipeline, pm, llvm::errs())))
          llvm::report_fatal_error("ember: the built-in CPU pipeline does not parse");
      });
}
