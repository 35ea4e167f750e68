//===- CUDA.cpp - NVIDIA GPUs through NVVM --------------------------------===//
//
// ember -> linalg on tensors (large products as calls of ember_cuda_gemm,
// cuBLAS) -> fused generics -> buffers -> one gpu.launch per generic
// (ember-linalg-to-gpu) -> outlined gpu.module kernels -> NVVM
// -> PTX embedded in a gpu.binary; the host code is LLVM dialect whose
// gpu.launch_func and buffer operations become calls of the `mgpu*`
// functions, which lib/Runtime/Cuda.cpp implements over the CUDA driver.
//
// Stages (each also `ember-cuda-<stage>`):
//   gpu     buffers and kernels in the gpu dialect
//   nvvm    kernels in NVVM, host code in the LLVM dialect
//   binary  kernels serialized (PTX by default) into gpu.binary
//
//===----------------------------------------------------------------------===//
#include "Common.h"
#include "ember/Pipelines/Pipelines.h"

namespace mlir::ember {
const TargetDescription &getCUDATarget();
} // namespace mlir::ember

using namespace mlir::ember;

static const char kGpu[] =
    "ember-to-linalg{runtime-gemm=false runtime-sort=false "
    "cuda-gemm=${cublas} device-buffers=true},"
    "canonicalize,cse,ember-scalarize-loop-counters,canonicalize,"
    "cse," EMBER_FUSE_AND_BUFFERIZE "linalg-generalize-named-ops,"
    "ember-linalg-to-gpu{vectorize=${vectorize} merge-kernels=${merge}},"
    "convert-math-to-funcs{convert-ctlz=false},"
    "gpu-launch-sink-index-computations,"
    "gpu-kernel-outlining,"
    "canonicalize,cse";

static const char kNvvm[] =
    "func.func(gpu-async-region),ember-gpu-defer-waits,"
    "lower-affine,convert-scf-to-cf,"
    "convert-complex-to-standard,"
    "ember-arith-expand,"
    "nvvm-attach-target{chip=${chip} features=${features} O=3 "
    "l=${libdevice}},"
    "gpu.module(ember-gpu-to-nvvm,expand-strided-metadata,convert-gpu-to-nvvm,"
    "canonicalize,cse,"
    "reconcile-unrealized-casts),"
    "expand-strided-metadata,lower-affine,"
    "gpu-to-llvm,"
    "finalize-memref-to-llvm,"
    "convert-math-to-llvm,"
    "convert-arith-to-llvm,"
    "convert-index-to-llvm,"
    "convert-func-to-llvm,"
    "convert-cf-to-llvm,"
    "canonicalize,cse,"
    "reconcile-unrealized-casts";

static const char kBinary[] = "gpu-module-to-binary{format=${format}}";

const TargetDescription &mlir::ember::getCUDATarget() {
  static const TargetStage stages[] = {
      {"gpu", kGpu}, {"nvvm", kNvvm}, {"binary", kBinary}};
  static const TargetOption options[] = {
      {"chip", "sm_90a", "the GPU architecture"},
      {"features", "+ptx81",
       "PTX ISA version: +ptx81 (sm_90a; 8.1 lifts the 4352-byte limit on "
       "a kernel's parameters), +ptx86 (sm_100a)"},
      {"libdevice", "",
       "libdevice.10.bc to link (empty: the CUDA toolkit's, found through "
       "CUDA_ROOT, CUDA_HOME or CUDA_PATH)"},
      {"cublas", "true",
       "large f32/f64/f16/bf16 products call cuBLAS (ember_cuda_gemm); "
       "false: they are plain kernels"},
      {"vectorize", "true",
       "large elementwise kernels move 4 contiguous elements per thread "
       "with vector loads and stores where the operands allow"},
      {"merge", "true", "consecutive independent kernels share one launch"},
      {"format", "isa",
       "what gpu.binary holds: isa (PTX), bin (cubin, needs "
       "ptxas), fatbin"}};
  static const TargetDescription cuda{
      "cuda", "ember -> linalg -> gpu kernels -> NVVM -> PTX for NVIDIA GPUs",
      stages,
      "CUDA driver loaded at run time (lib/Runtime/Cuda.cpp implements the "
      "mgpu* functions the host code calls)",
      options};
  return cuda;
}
