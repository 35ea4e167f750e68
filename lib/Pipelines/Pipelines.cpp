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
using namespace mlir::ember;

void mlir::ember::registerEmberDialects(DialectRegistry &registry) {
  registry
      .insert<EmberDialect, affine::AffineDialect, arith::ArithDialect,
              bufferization::BufferizationDialect, cf::ControlFlowDialect,
              complex::ComplexDialect, func::FuncDialect, index::IndexDialect,
              linalg::LinalgDialect, LLVM::LLVMDialect, math::MathDialect,
              memref::MemRefDialect, scf::SCFDialect, tensor::TensorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
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

// The target-independent stages, as text: the same strings are what
// `ember-opt --ember-transforms` / `--ember-optimize`, Python's stages and
// docs/design.md names.
static const char kTransforms[] =
    "ember-expand-transforms,symbol-dce,canonicalize,cse";
static const char kOptimize[] =
    "ember-hoist-scan-inputs,ember-expand-transforms,symbol-dce";

// Every target, in one list (Targets.def): a new target adds its file under
// Targets/ and one line there.
namespace mlir::ember {
#define EMBER_TARGET(ID) const TargetDescription &get##ID##Target();
#include "Targets/Targets.def"
} // namespace mlir::ember

ArrayRef<const TargetDescription *> mlir::ember::getTargets() {
  static const TargetDescription *targets[] = {
#define EMBER_TARGET(ID) &get##ID##Target(),
#include "Targets/Targets.def"
  };
  return targets;
}

const TargetDescription *mlir::ember::lookupTarget(StringRef name) {
  for (const TargetDescription *t : getTargets())
    if (t->name == name)
      return t;
  return nullptr;
}

static void parseOrDie(StringRef text, OpPassManager &pm) {
  if (failed(parsePassPipeline(text, pm, llvm::errs())))
    llvm::report_fatal_error(
        llvm::Twine("ember: a built-in pipeline does not parse: ") + text);
}

void mlir::ember::buildTransformsPipeline(OpPassManager &pm) {
  registerEmberPassesAndPipelines();
  parseOrDie(kTransforms, pm);
}

void mlir::ember::buildOptimizePipeline(OpPassManager &pm) {
  registerEmberPassesAndPipelines();
  parseOrDie(kOptimize, pm);
}

void mlir::ember::buildCodegenPipeline(const TargetDescription &target,
                                       OpPassManager &pm) {
  registerEmberPassesAndPipelines();
  parseOrDie(target.codegenPipeline, pm);
}

void mlir::ember::buildTargetPipeline(const TargetDescription &target,
                                      OpPassManager &pm) {
  buildTransformsPipeline(pm);
  buildOptimizePipeline(pm);
  buildCodegenPipeline(target, pm);
}

void mlir::ember::buildCpuPipeline(OpPassManager &pm) {
  buildTargetPipeline(*lookupTarget("cpu"), pm);
}

static void registerOnce();

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
  // The stages, each reachable by name: ember-transforms, ember-optimize,
  // then per target ember-<t>-codegen and the whole ember-<t>-pipeline.
  PassPipelineRegistration<>(
      "ember-transforms",
      "Expand every transformation op, then clean up (stage 1)",
      [](OpPassManager &pm) { parseOrDie(kTransforms, pm); });
  PassPipelineRegistration<>(
      "ember-optimize",
      "Target-independent optimizations on ember IR (stage 2)",
      [](OpPassManager &pm) { parseOrDie(kOptimize, pm); });
  for (const TargetDescription *t : getTargets()) {
    PassPipelineRegistration<>(
        ("ember-" + t->name + "-codegen").str(),
        ("Lower optimized ember IR for the target '" + t->name +
         "': " + t->summary)
            .str(),
        [t](OpPassManager &pm) { parseOrDie(t->codegenPipeline, pm); });
    PassPipelineRegistration<>(
        ("ember-" + t->name + "-pipeline").str(),
        ("ember-transforms, ember-optimize, then ember-" + t->name + "-codegen")
            .str(),
        [t](OpPassManager &pm) {
          parseOrDie(kTransforms, pm);
          parseOrDie(kOptimize, pm);
          parseOrDie(t->codegenPipeline, pm);
        });
  }
}
