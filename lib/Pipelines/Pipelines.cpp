//===- Pipelines.cpp - dialect registration and named pipelines -----------===//
#include "ember/Pipelines/Pipelines.h"
#include "ember/Conversion/Passes.h"
#include "ember/IR/EmberDialect.h"
#include "ember/IR/EmberGPUDialect.h"
#include "ember/IR/EmberTPUDialect.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ComplexToLLVM/ComplexToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Affine/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Arith/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/Extensions/AllExtensions.h"
#include "mlir/Dialect/Func/Extensions/ShardingExtensions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/InlinerInterfaceImpl.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/MPI/IR/MPI.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include <mutex>

using namespace mlir;
using namespace mlir::ember;

void mlir::ember::registerEmberDialects(DialectRegistry &registry) {
  registry.insert<EmberDialect, ember_gpu::EmberGPUDialect,
                  ember_tpu::EmberTPUDialect,
                  ember_tpu::serial::MosaicSerialDialect, vector::VectorDialect,
                  affine::AffineDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  complex::ComplexDialect, func::FuncDialect, gpu::GPUDialect,
                  index::IndexDialect, NVVM::NVVMDialect, linalg::LinalgDialect,
                  LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
                  scf::SCFDialect, tensor::TensorDialect>();
  // Partitioning over a grid (ember-partition) and its MPI lowering.
  registry.insert<shard::ShardDialect, mpi::MPIDialect, DLTIDialect>();
  arith::registerShardingInterfaceExternalModels(registry);
  func::registerShardingInterfaceExternalModels(registry);
  linalg::registerShardingInterfaceExternalModels(registry);
  tensor::registerShardingInterfaceExternalModels(registry);
  registerMpiEffectModels(registry);
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
  // One-shot bufferization compares slices through ValueBoundsOpInterface
  // (a dialect without its promised models aborts the process there).
  affine::registerValueBoundsOpInterfaceExternalModels(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  linalg::registerValueBoundsOpInterfaceExternalModels(registry);
  memref::registerValueBoundsOpInterfaceExternalModels(registry);
  scf::registerValueBoundsOpInterfaceExternalModels(registry);
  tensor::registerValueBoundsOpInterfaceExternalModels(registry);
  LLVM::registerInlinerInterface(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  // The CUDA target: serializing kernels (NVVM target attribute) and
  // translating gpu.binary / gpu.launch_func host code.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerGPUDialectTranslation(registry);
  // gpu.binary's default `#gpu.select_object`: the binary embedded as a
  // constant, loaded by global constructors (the JIT runs them: Jit.cpp).
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  registerNVVMDialectTranslation(registry);
  // `gpu-to-llvm` converts host code through each dialect's
  // ConvertToLLVMPatternInterface.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertComplexToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
}

// The target-independent stages, as text: the same strings are what
// `ember-opt --ember-transforms` / `--ember-optimize`, Python's stages and
// docs/design.md names.
static const char kTransforms[] =
    "ember-expand-transforms,symbol-dce,canonicalize,cse";
static const char kOptimize[] =
    "ember-hoist-scan-inputs,ember-expand-transforms,symbol-dce";
// A compiled plgpu kernel (python/ember/_src/pallas/mosaic_gpu_compile.py):
// a host function whose gpu.launch holds ember ops on per-thread values and
// ember_gpu ops -> loops on registers and buffers, outlined into a
// gpu.module. The per-thread loops are unrolled (a thread's part of an
// array stays in registers), those of up to 256 iterations (a thread holds
// far fewer registers; longer loops, which only IR that is not a kernel
// has, stay loops rather than growing without bound: found by fuzzing); its
// temporaries live on the thread's stack.
static const char kGpuKernel[] =
    "ember-to-linalg{runtime-gemm=false runtime-sort=false},canonicalize,cse,"
    "linalg-fuse-elementwise-ops,canonicalize,"
    "one-shot-bufferize{allow-return-allocs-from-loops "
    "unknown-type-conversion=identity-layout-map},"
    "canonicalize,func.func(promote-buffers-to-stack{max-alloc-size-in-bytes="
    "65536}),"
    "convert-linalg-to-affine-loops,"
    "func.func(affine-loop-unroll{unroll-factor=-1 unroll-full-threshold=256}),"
    "lower-affine,convert-bufferization-to-memref,canonicalize,cse,"
    "gpu-launch-sink-index-computations,gpu-kernel-outlining,"
    "ember-gpu-hoist-allocas,canonicalize,cse";

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

/// The text of `stages` with every `${option}` replaced: `options` is
/// `name=value ...` (values without spaces), others take their defaults.
static FailureOr<std::string>
expandStages(const TargetDescription &t, ArrayRef<TargetStage> stages,
             StringRef options,
             function_ref<LogicalResult(const Twine &)> errorHandler) {
  llvm::StringMap<std::string> values;
  for (const TargetOption &o : t.options)
    values[o.name] = o.defaultValue.str();
  SmallVector<StringRef> words;
  options.split(words, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef w : words) {
    auto [key, value] = w.split('=');
    if (!values.count(key)) {
      std::string known;
      for (const TargetOption &o : t.options)
        known += (known.empty() ? "" : ", ") + o.name.str();
      (void)errorHandler("unknown option '" + key + "' of target '" + t.name +
                         "' (options: " + known + ")");
      return failure();
    }
    values[key] = value.str();
  }
  std::string text;
  for (const TargetStage &stage : stages) {
    if (!text.empty())
      text += ",";
    StringRef rest = stage.pipeline;
    while (!rest.empty()) {
      size_t at = rest.find("${");
      text += rest.take_front(at).str();
      if (at == StringRef::npos)
        break;
      size_t end = rest.find('}', at);
      text += values.lookup(rest.slice(at + 2, end));
      rest = rest.drop_front(end + 1);
    }
  }
  return text;
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
  FailureOr<std::string> text = expandStages(
      target, target.stages, "", [](const Twine &) { return failure(); });
  parseOrDie(*text, pm);
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

/// Registers `ember-<target>-<suffix>`: the shared stages when `shared`, then
/// the target's `stages`, taking the target's options.
static void registerTargetPipeline(const TargetDescription *t, StringRef suffix,
                                   std::string description, bool shared,
                                   ArrayRef<TargetStage> stages) {
  std::string arg = ("ember-" + t->name + "-" + suffix).str();
  if (!t->options.empty()) {
    description += " (options:";
    for (const TargetOption &o : t->options)
      description +=
          (" " + o.name + "=<" + o.help + ", default '" + o.defaultValue + "'>")
              .str();
    description += ")";
  }
  registerPassPipeline(
      arg, description,
      [t, shared,
       stages](OpPassManager &pm, StringRef options,
               function_ref<LogicalResult(const Twine &)> errorHandler) {
        FailureOr<std::string> text =
            expandStages(*t, stages, options, errorHandler);
        if (failed(text))
          return failure();
        if (shared) {
          parseOrDie(kTransforms, pm);
          parseOrDie(kOptimize, pm);
        }
        return parsePassPipeline(*text, pm, llvm::errs());
      },
      [](function_ref<void(const mlir::detail::PassOptions &)>) {});
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
  // The CUDA target.
  registerGpuKernelOutliningPass();
  registerGpuLaunchSinkIndexComputationsPass();
  affine::registerAffineLoopUnrollPass();
  registerGpuAsyncRegionPass();
  registerGpuNVVMAttachTarget();
  registerGpuModuleToBinaryPass();
  registerConvertGpuOpsToNVVMOpsPass();
  registerGpuToLLVMConversionPass();
  registerConvertNVVMToLLVMPass();
  shard::registerShardPasses();
  registerConvertShardToMPIPass();
  // The stages, each reachable by name: ember-transforms, ember-optimize,
  // then per target ember-<t>-codegen and the whole ember-<t>-pipeline.
  PassPipelineRegistration<>(
      "ember-transforms",
      "Expand every transformation op, then clean up (stage 1)",
      [](OpPassManager &pm) { parseOrDie(kTransforms, pm); });
  PassPipelineRegistration<>(
      "ember-gpu-kernel",
      "A compiled plgpu kernel (a gpu.launch of ember and ember_gpu ops on "
      "per-thread values) to unrolled loops, outlined into a gpu.module",
      [](OpPassManager &pm) { parseOrDie(kGpuKernel, pm); });
  PassPipelineRegistration<>(
      "ember-optimize",
      "Target-independent optimizations on ember IR (stage 2)",
      [](OpPassManager &pm) { parseOrDie(kOptimize, pm); });
  for (const TargetDescription *t : getTargets()) {
    std::string what = ("the target '" + t->name + "': " + t->summary).str();
    registerTargetPipeline(t, "codegen", "Lower optimized ember IR for " + what,
                           false, t->stages);
    registerTargetPipeline(
        t, "pipeline",
        ("ember-transforms, ember-optimize, then ember-" + t->name + "-codegen")
            .str(),
        true, t->stages);
    // Each stage by itself, when there are several.
    if (t->stages.size() > 1)
      for (const TargetStage &stage : t->stages)
        registerTargetPipeline(
            t, stage.name,
            ("Codegen stage '" + stage.name + "' of " + what).str(), false,
            ArrayRef<TargetStage>(stage));
  }
}
