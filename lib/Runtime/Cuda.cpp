//===- Cuda.cpp - the CUDA target's runtime over the driver API -----------===//
//
// The host code of the cuda target (lib/Pipelines/Targets/CUDA.cpp) calls
// the `mgpu*` functions that MLIR's `gpu-to-llvm` and gpu.binary translation
// emit (stream, allocation, copy, module and launch calls). They are
// implemented here over the CUDA driver API, which is loaded at run time
// with dlopen ("libcuda.so.1", or EMBER_CUDA_DRIVER's path): nothing CUDA
// is linked, and a machine without a driver only fails when CUDA code runs.
//
// Decisions (docs/design.md, "CUDA runtime"): one context (the primary
// context of device 0) and one stream, which every program's
// mgpuStreamCreate returns, so that work of successive calls stays ordered
// and no stream is created per call; a caching allocator (device blocks are
// kept by size class after mgpuMemFree and reused in stream order; cuMemAlloc
// only when the cache has none, the cache released and the allocation
// retried when the device is full); modules are loaded once per executable
// (gpu.binary's global constructors, run by the JIT at creation). Calls
// return without waiting for their kernels (asynchronous dispatch, see
// ember-gpu-defer-waits); whoever reads device memory on the host waits. A
// driver error is recorded with its CUDA name and the call that failed, and
// every later mgpu call does nothing until emberCudaTakeError() collects it,
// so a failed launch cannot feed garbage pointers to the next one; Python
// raises the error after the call. Large products call cuBLAS
// (ember_cuda_gemm), loaded the same way at the first product; host
// callbacks stage their buffers through host memory
// (ember_cuda_host_callback).
//
//===----------------------------------------------------------------------===//
#include "ember-c/Runtime.h"

#include "RuntimeEntries.h"

#include <dlfcn.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUstream = void *;
using CUevent = void *;

// CUlaunchConfig and CUlaunchAttribute of cuLaunchKernelEx (CUDA 12).
struct LaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    struct {
      unsigned x, y, z;
    } clusterDim;
  } value;
};
struct LaunchConfig {
  unsigned gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemBytes;
  CUstream stream;
  LaunchAttribute *attrs;
  unsigned numAttrs;
};
constexpr int kLaunchAttributeClusterDimension = 4;
constexpr int kFuncAttributeMaxDynamicSharedBytes = 8;
constexpr int kJitErrorLogBuffer = 5, kJitErrorLogBufferBytes = 6,
              kJitOptimizationLevel = 7;

/// The driver entry points Ember uses (`_v2` where the ABI has one).
struct Driver {
#define EMBER_CUDA_DRIVER_FUNCTIONS(X)                                         \
  X(cuInit, CUresult (*)(unsigned))                                            \
  X(cuGetErrorName, CUresult (*)(CUresult, const char **))                     \
  X(cuDeviceGetCount, CUresult (*)(int *))                                     \
  X(cuDeviceGet, CUresult (*)(CUdevice *, int))                                \
  X(cuDevicePrimaryCtxRetain, CUresult (*)(CUcontext *, CUdevice))             \
  X(cuCtxSetCurrent, CUresult (*)(CUcontext))                                  \
  X(cuStreamCreate, CUresult (*)(CUstream *, unsigned))                        \
  X(cuStreamSynchronize, CUresult (*)(CUstream))                               \
  X(cuStreamWaitEvent, CUresult (*)(CUstream, CUevent, unsigned))              \
  X(cuEventCreate, CUresult (*)(CUevent *, unsigned))                          \
  X(cuEventDestroy_v2, CUresult (*)(CUevent))                                  \
  X(cuEventRecord, CUresult (*)(CUevent, CUstream))                            \
  X(cuEventSynchronize, CUresult (*)(CUevent))                                 \
  X(cuMemAlloc_v2, CUresult (*)(CUdeviceptr *, size_t))                        \
  X(cuMemFree_v2, CUresult (*)(CUdeviceptr))                                   \
  X(cuMemcpyAsync, CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream))   \
  X(cuMemsetD32Async, CUresult (*)(CUdeviceptr, unsigned, size_t, CUstream))   \
  X(cuMemsetD16Async,                                                          \
    CUresult (*)(CUdeviceptr, unsigned short, size_t, CUstream))               \
  X(cuModuleLoadDataEx,                                                        \
    CUresult (*)(CUmodule *, const void *, unsigned, int *, void **))          \
  X(cuModuleGetFunction, CUresult (*)(CUfunction *, CUmodule, const char *))   \
  X(cuModuleUnload, CUresult (*)(CUmodule))                                    \
  X(cuFuncSetAttribute, CUresult (*)(CUfunction, int, int))                    \
  X(cuLaunchKernel,                                                            \
    CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, \
                 unsigned, unsigned, CUstream, void **, void **))              \
  X(cuLaunchKernelEx,                                                          \
    CUresult (*)(const LaunchConfig *, CUfunction, void **, void **))          \
  X(cuTensorMapEncodeTiled,                                                    \
    CUresult (*)(void *, int, unsigned, void *, const uint64_t *,              \
                 const uint64_t *, const unsigned *, const unsigned *, int,    \
                 int, int, int))
#define EMBER_CUDA_MEMBER(NAME, TYPE)                                          \
  using NAME##Type = TYPE;                                                     \
  NAME##Type NAME = nullptr;
  EMBER_CUDA_DRIVER_FUNCTIONS(EMBER_CUDA_MEMBER)
#undef EMBER_CUDA_MEMBER
  std::string unavailable; // why the driver cannot be used ("" if it can)
  int devices = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
};

std::mutex errorMutex;
std::atomic<bool> failed{false};
std::string firstError;

void recordError(const std::string &message) {
  std::lock_guard<std::mutex> lock(errorMutex);
  if (!failed.exchange(true))
    firstError = message;
}

Driver &driver();

/// Records `result` of the driver call `what` when it is an error; true on
/// success.
bool check(CUresult result, const char *what) {
  if (result == 0)
    return true;
  const char *name = nullptr;
  Driver &d = driver();
  if (!d.cuGetErrorName || d.cuGetErrorName(result, &name) != 0 || !name)
    name = "CUDA_ERROR_UNKNOWN";
  recordError(std::string(name) + " (" + std::to_string(result) + ") in " +
              what);
  return false;
}

Driver &driver() {
  static Driver *d = [] {
    auto *d = new Driver;
    const char *path = std::getenv("EMBER_CUDA_DRIVER");
    if (!path || !*path)
      path = "libcuda.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      d->unavailable = std::string("the CUDA driver (") + path +
                       ") could not be loaded: " + dlerror();
      return d;
    }
#define EMBER_CUDA_LOAD(NAME, TYPE)                                            \
  d->NAME = reinterpret_cast<TYPE>(dlsym(lib, #NAME));                         \
  if (!d->NAME && d->unavailable.empty())                                      \
    d->unavailable =                                                           \
        std::string("the CUDA driver (") + path + ") has no " #NAME;
    EMBER_CUDA_DRIVER_FUNCTIONS(EMBER_CUDA_LOAD)
#undef EMBER_CUDA_LOAD
    if (!d->unavailable.empty())
      return d;
    const char *name = nullptr;
    CUresult r = d->cuInit(0);
    if (r != 0) {
      d->cuGetErrorName(r, &name);
      d->unavailable =
          std::string("cuInit failed: ") + (name ? name : "CUDA_ERROR_UNKNOWN");
      return d;
    }
    if (d->cuDeviceGetCount(&d->devices) != 0 || d->devices == 0) {
      d->devices = 0;
      d->unavailable = "the CUDA driver reports no GPU";
      return d;
    }
    CUdevice dev = 0;
    if (d->cuDeviceGet(&dev, 0) != 0 ||
        d->cuDevicePrimaryCtxRetain(&d->context, dev) != 0 ||
        d->cuCtxSetCurrent(d->context) != 0 ||
        d->cuStreamCreate(&d->stream, /*CU_STREAM_NON_BLOCKING=*/1) != 0) {
      d->devices = 0;
      d->unavailable = "the primary context or the stream of GPU 0 could not "
                       "be created";
    }
    return d;
  }();
  return *d;
}

/// The driver, usable from this thread (its context current), or null after
/// an error not yet collected or when there is no driver.
Driver *ready() {
  if (failed.load(std::memory_order_relaxed))
    return nullptr;
  Driver &d = driver();
  if (!d.unavailable.empty()) {
    recordError(d.unavailable);
    return nullptr;
  }
  thread_local bool current = false;
  if (!current) {
    if (!check(d.cuCtxSetCurrent(d.context), "cuCtxSetCurrent"))
      return nullptr;
    current = true;
  }
  return &d;
}

/// Device blocks by size class, kept after they are freed (stream order
/// makes reuse safe: everything runs on the one stream).
class Allocator {
public:
  static size_t sizeClass(size_t bytes) {
    size_t granule = bytes < (1u << 20) ? 512 : (2u << 20);
    return (std::max<size_t>(bytes, 1) + granule - 1) / granule * granule;
  }

  void *allocate(Driver &d, size_t bytes) {
    size_t size = sizeClass(bytes);
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = cached.find(size);
      if (it != cached.end()) {
        void *p = it->second;
        cached.erase(it);
        cachedBytes -= size;
        live[p] = size;
        return p;
      }
    }
    CUdeviceptr p = 0;
    CUresult r = d.cuMemAlloc_v2(&p, size);
    if (r == /*CUDA_ERROR_OUT_OF_MEMORY*/ 2) {
      release(d);
      r = d.cuMemAlloc_v2(&p, size);
    }
    if (!check(r, "cuMemAlloc"))
      return nullptr;
    std::lock_guard<std::mutex> lock(mutex);
    live[reinterpret_cast<void *>(p)] = size;
    ++allocations;
    return reinterpret_cast<void *>(p);
  }

  void free(void *p) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(p);
    if (it == live.end())
      return;
    cached.emplace(it->second, p);
    cachedBytes += it->second;
    live.erase(it);
  }

  /// Returns the cached blocks to the driver.
  void release(Driver &d) {
    std::multimap<size_t, void *> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex);
      blocks.swap(cached);
      cachedBytes = 0;
    }
    if (!blocks.empty())
      d.cuStreamSynchronize(d.stream);
    for (auto &[size, p] : blocks)
      d.cuMemFree_v2(reinterpret_cast<CUdeviceptr>(p));
  }

  std::mutex mutex;
  std::multimap<size_t, void *> cached;
  std::unordered_map<void *, size_t> live;
  size_t cachedBytes = 0;
  size_t allocations = 0; // cuMemAlloc calls
};

Allocator &allocator() {
  static auto *a = new Allocator;
  return *a;
}

// Functions by (module, name): the host code asks before every launch.
std::mutex functionsMutex;
std::map<std::pair<void *, std::string>, CUfunction> functions;

void setDynamicSharedMemory(Driver &d, CUfunction f, int32_t smem) {
  // Above 48 KiB a kernel must opt in to its dynamic shared memory.
  if (smem > 48 * 1024)
    check(d.cuFuncSetAttribute(f, kFuncAttributeMaxDynamicSharedBytes, smem),
          "cuFuncSetAttribute");
}

/// cuBLAS, loaded at the first product: EMBER_CUBLAS's path (Python points
/// it at the nvidia-cublas wheel's library when it finds one), else
/// libcublas.so.13 or .12 as the loader finds them. One handle, bound to the
/// runtime's stream, so products stay ordered with the kernels around them.
struct Blas {
  using Status = int;
#define EMBER_CUBLAS_FUNCTIONS(X)                                              \
  X(cublasCreate_v2, Status (*)(void **))                                      \
  X(cublasSetStream_v2, Status (*)(void *, CUstream))                          \
  X(cublasGetStatusName, const char *(*)(Status))                              \
  X(cublasGemmStridedBatchedEx,                                                \
    Status (*)(void *, int, int, int, int, int, const void *, const void *,    \
               int, int, long long, const void *, int, int, long long,         \
               const void *, void *, int, int, long long, int, int, int))
#define EMBER_CUDA_MEMBER(NAME, TYPE)                                          \
  using NAME##Type = TYPE;                                                     \
  NAME##Type NAME = nullptr;
  EMBER_CUBLAS_FUNCTIONS(EMBER_CUDA_MEMBER)
#undef EMBER_CUDA_MEMBER
  void *handle = nullptr;
  std::string unavailable; // why cuBLAS cannot be used ("" if it can)
  std::mutex mutex;        // one product at a time on the handle

  // cuBLASLt (found through the cuBLAS library, which links it): a product
  // whose plan (descriptors and the heuristic's algorithm) is kept per
  // shape costs a few microseconds of host time where cublasGemm*Ex, which
  // plans every call, costs some 20 (measured on an H200). Off with
  // EMBER_CUBLASLT=0, or when a function is missing.
#define EMBER_CUBLASLT_FUNCTIONS(X)                                            \
  X(cublasLtCreate, Status (*)(void **))                                       \
  X(cublasLtMatmulDescCreate, Status (*)(void **, int, int))                   \
  X(cublasLtMatmulDescSetAttribute,                                            \
    Status (*)(void *, int, const void *, size_t))                             \
  X(cublasLtMatrixLayoutCreate,                                                \
    Status (*)(void **, int, uint64_t, uint64_t, int64_t))                     \
  X(cublasLtMatrixLayoutSetAttribute,                                          \
    Status (*)(void *, int, const void *, size_t))                             \
  X(cublasLtMatmulPreferenceCreate, Status (*)(void **))                       \
  X(cublasLtMatmulPreferenceSetAttribute,                                      \
    Status (*)(void *, int, const void *, size_t))                             \
  X(cublasLtMatmulAlgoGetHeuristic,                                            \
    Status (*)(void *, void *, void *, void *, void *, void *, void *, int,    \
               void *, int *))                                                 \
  X(cublasLtMatmul,                                                            \
    Status (*)(void *, void *, const void *, const void *, void *,             \
               const void *, void *, const void *, const void *, void *,       \
               void *, void *, const void *, void *, size_t, CUstream))
#define EMBER_CUDA_MEMBER(NAME, TYPE)                                          \
  using NAME##Type = TYPE;                                                     \
  NAME##Type NAME = nullptr;
  EMBER_CUBLASLT_FUNCTIONS(EMBER_CUDA_MEMBER)
#undef EMBER_CUDA_MEMBER
  void *lt = nullptr; // the cuBLASLt handle, or null: cublasGemm*Ex
  void *workspace = nullptr;
  /// A product's plan; `algo` is cublasLtMatmulHeuristicResult_t's first
  /// member (cublasLtMatmulAlgo_t, 64 bytes; the result is 96).
  struct Plan {
    void *desc = nullptr, *a = nullptr, *b = nullptr, *c = nullptr;
    alignas(8) unsigned char result[96] = {};
    bool ok = false;
  };
  std::map<std::array<int64_t, 8>, Plan> plans;
};

/// cuBLASLt's workspace (32 MiB, the size NVIDIA suggests for Hopper).
constexpr size_t kLtWorkspaceBytes = 32u << 20;

/// Records a cuBLAS error; true on success.
bool checkBlas(Blas &b, Blas::Status status, const char *what) {
  if (status == 0)
    return true;
  const char *name =
      b.cublasGetStatusName ? b.cublasGetStatusName(status) : nullptr;
  recordError(std::string(name ? name : "CUBLAS_STATUS_UNKNOWN") + " (" +
              std::to_string(status) + ") in " + what);
  return false;
}

/// cuBLAS with its handle, or null after recording why it cannot be used.
Blas *blas(Driver &d) {
  static Blas *b = [&] {
    auto *b = new Blas;
    const char *env = std::getenv("EMBER_CUBLAS");
    std::string tried;
    void *lib = nullptr;
    for (const char *path : {env, "libcublas.so.13", "libcublas.so.12"}) {
      if (!path || !*path)
        continue;
      if ((lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        break;
      tried += std::string(tried.empty() ? "" : "; ") + dlerror();
      if (path == env)
        break; // an explicit path is the only one tried
    }
    if (!lib) {
      b->unavailable = "cuBLAS could not be loaded (" + tried +
                       "); install the nvidia-cublas package or set "
                       "EMBER_CUBLAS, or compile with the cuda target's "
                       "option cublas=false";
      return b;
    }
#define EMBER_CUBLAS_LOAD(NAME, TYPE)                                          \
  b->NAME = reinterpret_cast<Blas::NAME##Type>(dlsym(lib, #NAME));             \
  if (!b->NAME && b->unavailable.empty())                                      \
    b->unavailable = "the cuBLAS library has no " #NAME;
    EMBER_CUBLAS_FUNCTIONS(EMBER_CUBLAS_LOAD)
#undef EMBER_CUBLAS_LOAD
    if (b->unavailable.empty() &&
        (b->cublasCreate_v2(&b->handle) != 0 ||
         b->cublasSetStream_v2(b->handle, d.stream) != 0))
      b->unavailable = "cublasCreate or cublasSetStream failed";
    // cuBLASLt, from the same library's dependencies.
    const char *useLt = std::getenv("EMBER_CUBLASLT");
    bool lt = b->unavailable.empty() && !(useLt && std::string(useLt) == "0");
#define EMBER_CUBLASLT_LOAD(NAME, TYPE)                                        \
  b->NAME = reinterpret_cast<Blas::NAME##Type>(dlsym(lib, #NAME));             \
  lt = lt && b->NAME;
    EMBER_CUBLASLT_FUNCTIONS(EMBER_CUBLASLT_LOAD)
#undef EMBER_CUBLASLT_LOAD
    if (lt && b->cublasLtCreate(&b->lt) != 0)
      b->lt = nullptr;
    return b;
  }();
  if (!b->unavailable.empty()) {
    recordError(b->unavailable);
    return nullptr;
  }
  return b;
}

/// The cudaDataType of an EMBER_TYPE_CODE (Runtime.def), or -1.
int cudaDataType(int64_t code) {
  switch (code) {
  case 1: // float16
    return 2;
  case 2: // bfloat16
    return 14;
  case 3: // float32
    return 0;
  case 4: // float64
    return 1;
  default:
    return -1;
  }
}
} // namespace

//===----------------------------------------------------------------------===//
// The functions compiled host code calls (Runtime.def's EMBER_CUDA_ENTRY)
//===----------------------------------------------------------------------===//

extern "C" {
void *mgpuModuleLoad(void *data, size_t /*size*/) {
  Driver *d = ready();
  CUmodule module = nullptr;
  if (d)
    check(d->cuModuleLoadDataEx(&module, data, 0, nullptr, nullptr),
          "cuModuleLoadData");
  return module;
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  Driver *d = ready();
  CUmodule module = nullptr;
  if (!d)
    return nullptr;
  char log[4096] = {0};
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferBytes,
                   kJitOptimizationLevel};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log) - 1),
                    reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
  CUresult r = d->cuModuleLoadDataEx(&module, data, 3, options, values);
  if (r != 0 && log[0]) {
    check(r,
          (std::string("cuModuleLoadDataEx (PTX JIT: ") + log + ")").c_str());
    return nullptr;
  }
  check(r, "cuModuleLoadDataEx");
  return module;
}

void mgpuModuleUnload(void *module) {
  // At executable destruction, also after an error.
  Driver &d = driver();
  if (!module || !d.unavailable.empty())
    return;
  {
    std::lock_guard<std::mutex> lock(functionsMutex);
    for (auto it = functions.begin(); it != functions.end();)
      it = it->first.first == module ? functions.erase(it) : std::next(it);
  }
  // Calls return with their kernels in flight (asynchronous dispatch): they
  // finish before their module goes.
  d.cuStreamSynchronize(d.stream);
  d.cuModuleUnload(module);
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  Driver *d = ready();
  if (!d || !module)
    return nullptr;
  std::lock_guard<std::mutex> lock(functionsMutex);
  auto key = std::make_pair(module, std::string(name));
  auto it = functions.find(key);
  if (it != functions.end())
    return it->second;
  CUfunction f = nullptr;
  if (check(d->cuModuleGetFunction(&f, module, name),
            (std::string("cuModuleGetFunction(") + name + ")").c_str()))
    functions.emplace(key, f);
  return f;
}

void mgpuLaunchKernel(void *f, intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                      intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                      int32_t smem, void *stream, void **params, void **extra,
                      size_t /*paramsCount*/) {
  Driver *d = ready();
  if (!d || !f)
    return;
  setDynamicSharedMemory(*d, f, smem);
  check(d->cuLaunchKernel(f, gridX, gridY, gridZ, blockX, blockY, blockZ, smem,
                          stream, params, extra),
        "cuLaunchKernel");
}

void mgpuLaunchClusterKernel(void *f, intptr_t clusterX, intptr_t clusterY,
                             intptr_t clusterZ, intptr_t gridX, intptr_t gridY,
                             intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                             intptr_t blockZ, int32_t smem, void *stream,
                             void **params, void **extra,
                             size_t /*paramsCount*/) {
  Driver *d = ready();
  if (!d || !f)
    return;
  setDynamicSharedMemory(*d, f, smem);
  LaunchAttribute cluster{};
  cluster.id = kLaunchAttributeClusterDimension;
  cluster.value.clusterDim = {static_cast<unsigned>(clusterX),
                              static_cast<unsigned>(clusterY),
                              static_cast<unsigned>(clusterZ)};
  LaunchConfig config{static_cast<unsigned>(gridX),
                      static_cast<unsigned>(gridY),
                      static_cast<unsigned>(gridZ),
                      static_cast<unsigned>(blockX),
                      static_cast<unsigned>(blockY),
                      static_cast<unsigned>(blockZ),
                      static_cast<unsigned>(smem),
                      stream,
                      &cluster,
                      1};
  check(d->cuLaunchKernelEx(&config, f, params, extra), "cuLaunchKernelEx");
}

void *mgpuStreamCreate() {
  Driver *d = ready();
  return d ? d->stream : nullptr;
}

void mgpuStreamDestroy(void *) {} // the runtime's one stream lives on

void mgpuStreamSynchronize(void *stream) {
  if (Driver *d = ready())
    check(d->cuStreamSynchronize(stream), "cuStreamSynchronize");
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  if (Driver *d = ready())
    check(d->cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
}

void *mgpuEventCreate() {
  Driver *d = ready();
  CUevent e = nullptr;
  if (d)
    check(d->cuEventCreate(&e, /*CU_EVENT_DISABLE_TIMING=*/2), "cuEventCreate");
  return e;
}

void mgpuEventDestroy(void *event) {
  if (Driver *d = ready(); d && event)
    check(d->cuEventDestroy_v2(event), "cuEventDestroy");
}

void mgpuEventSynchronize(void *event) {
  if (Driver *d = ready(); d && event)
    check(d->cuEventSynchronize(event), "cuEventSynchronize");
}

void mgpuEventRecord(void *event, void *stream) {
  if (Driver *d = ready(); d && event)
    check(d->cuEventRecord(event, stream), "cuEventRecord");
}

void *mgpuMemAlloc(uint64_t bytes, void * /*stream*/, bool isHostShared) {
  Driver *d = ready();
  if (!d)
    return nullptr;
  if (isHostShared) {
    recordError("gpu.alloc host_shared (managed memory) is not supported by "
                "Ember's CUDA runtime");
    return nullptr;
  }
  return allocator().allocate(*d, bytes);
}

void mgpuMemFree(void *p, void * /*stream*/) { allocator().free(p); }

void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  if (Driver *d = ready(); d && bytes)
    check(d->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                           reinterpret_cast<CUdeviceptr>(src), bytes, stream),
          "cuMemcpyAsync");
}

void mgpuMemset32(void *dst, unsigned value, size_t count, void *stream) {
  if (Driver *d = ready(); d && count)
    check(d->cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                              stream),
          "cuMemsetD32Async");
}

void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream) {
  if (Driver *d = ready(); d && count)
    check(d->cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                              stream),
          "cuMemsetD16Async");
}

void ember_cuda_tensor_map(void *descriptor, int64_t dtype, int64_t rank,
                           void *global, int64_t d0, int64_t d1, int64_t d2,
                           int64_t d3, int64_t d4, int64_t b0, int64_t b1,
                           int64_t b2, int64_t b3, int64_t b4,
                           int64_t swizzle) {
  Driver *d = ready();
  if (!d)
    return;
  if (rank < 1 || rank > 5) {
    recordError("a TMA descriptor of rank " + std::to_string(rank));
    return;
  }
  // Ember gives shapes outermost first; the driver takes the innermost
  // first, and the byte strides of dimensions 1.. (the array is dense).
  static const int itemBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2};
  int64_t dims[5] = {d0, d1, d2, d3, d4}, box[5] = {b0, b1, b2, b3, b4};
  uint64_t globalDim[5], globalStrides[4];
  unsigned boxDim[5], elementStrides[5];
  uint64_t stride = dtype >= 0 && dtype < 10 ? itemBytes[dtype] : 1;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t k = rank - 1 - i;
    globalDim[i] = dims[k];
    boxDim[i] = static_cast<unsigned>(box[k]);
    elementStrides[i] = 1;
    if (i > 0)
      globalStrides[i - 1] = stride;
    stride *= dims[k];
  }
  int swizzleMode = swizzle == 128  ? 3
                    : swizzle == 64 ? 2
                    : swizzle == 32 ? 1
                                    : 0;
  check(d->cuTensorMapEncodeTiled(
            descriptor, static_cast<int>(dtype), static_cast<unsigned>(rank),
            global, globalDim, globalStrides, boxDim, elementStrides,
            /*interleave=*/0, swizzleMode, /*L2 promotion 128B=*/2,
            /*out-of-bounds fill: zeros=*/0),
        "cuTensorMapEncodeTiled");
}

/// The cuBLASLt plan of a product (made at its first call, then kept):
/// the same column-major reading as cublasGemmStridedBatchedEx's call
/// below, cuBLAS's A being our B. A plan without an algorithm (`ok`
/// false) sends the product to cublasGemmStridedBatchedEx.
Blas::Plan &ltPlan(Driver &d, Blas &bl, int ab, int out, int64_t transA,
                   int64_t transB, int64_t batch, int64_t m, int64_t n,
                   int64_t k, int compute) {
  std::array<int64_t, 8> key{ab, out, transA, transB, batch, m, n, k};
  auto [it, fresh] = bl.plans.try_emplace(key);
  Blas::Plan &p = it->second;
  if (!fresh)
    return p;
  if (!bl.workspace) {
    CUdeviceptr w = 0;
    if (d.cuMemAlloc_v2(&w, kLtWorkspaceBytes) != 0)
      return p;
    bl.workspace = reinterpret_cast<void *>(w);
  }
  constexpr int attrTransA = 3, attrTransB = 4, layoutBatchCount = 5,
                layoutBatchStride = 6, prefMaxWorkspace = 1;
  int scale = compute == 70 ? 1 : 0; // CUDA_R_64F for 64F compute, else 32F
  int32_t opA = transB ? 1 : 0, opB = transA ? 1 : 0;
  auto layout = [&](void **l, int type, int64_t rows, int64_t cols,
                    int64_t stride) {
    int32_t count = static_cast<int32_t>(batch);
    return bl.cublasLtMatrixLayoutCreate(l, type, rows, cols, rows) == 0 &&
           bl.cublasLtMatrixLayoutSetAttribute(*l, layoutBatchCount, &count,
                                               sizeof(count)) == 0 &&
           bl.cublasLtMatrixLayoutSetAttribute(*l, layoutBatchStride, &stride,
                                               sizeof(stride)) == 0;
  };
  void *pref = nullptr; // (kept, as the plan is: one a shape)
  uint64_t bytes = kLtWorkspaceBytes;
  int found = 0;
  p.ok = bl.cublasLtMatmulDescCreate(&p.desc, compute, scale) == 0 &&
         bl.cublasLtMatmulDescSetAttribute(p.desc, attrTransA, &opA,
                                           sizeof(opA)) == 0 &&
         bl.cublasLtMatmulDescSetAttribute(p.desc, attrTransB, &opB,
                                           sizeof(opB)) == 0 &&
         layout(&p.a, ab, transB ? k : n, transB ? n : k, k * n) &&
         layout(&p.b, ab, transA ? m : k, transA ? k : m, m * k) &&
         layout(&p.c, out, n, m, m * n) &&
         bl.cublasLtMatmulPreferenceCreate(&pref) == 0 &&
         bl.cublasLtMatmulPreferenceSetAttribute(pref, prefMaxWorkspace, &bytes,
                                                 sizeof(bytes)) == 0 &&
         bl.cublasLtMatmulAlgoGetHeuristic(bl.lt, p.desc, p.a, p.b, p.c, p.c,
                                           pref, 1, p.result, &found) == 0 &&
         found > 0;
  return p;
}

void ember_cuda_gemm(int64_t typeAB, int64_t typeC, int64_t transA,
                     int64_t transB, int64_t batch, int64_t m, int64_t n,
                     int64_t k, intptr_t a, intptr_t b, intptr_t c) {
  Driver *d = ready();
  if (!d)
    return;
  Blas *bl = blas(*d);
  if (!bl)
    return;
  int ab = cudaDataType(typeAB), out = cudaDataType(typeC);
  if (ab < 0 || out < 0 || batch > INT32_MAX || m > INT32_MAX ||
      n > INT32_MAX || k > INT32_MAX) {
    recordError("ember_cuda_gemm: unsupported types or sizes");
    return;
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, and a
  // row-major matrix read as column-major is its transpose: cuBLAS gets B
  // first, each operand transposed when it is stored transposed.
  constexpr int opN = 0, opT = 1;
  constexpr int compute32F = 68, compute64F = 70, gemmDefault = -1;
  bool f64 = typeC == 4;
  double one64 = 1, zero64 = 0;
  float one32 = 1, zero32 = 0;
  const void *alpha = f64 ? static_cast<const void *>(&one64) : &one32;
  const void *beta = f64 ? static_cast<const void *>(&zero64) : &zero32;
  std::lock_guard<std::mutex> lock(bl->mutex);
  // cuBLASLt's heuristic assumes operands aligned to 256 bytes (its
  // preference's default): the allocator's blocks are; a product on views
  // into a buffer may not be.
  if (bl->lt && ((a | b | c) & 255) == 0) {
    Blas::Plan &plan = ltPlan(*d, *bl, ab, out, transA, transB, batch, m, n, k,
                              f64 ? compute64F : compute32F);
    if (plan.ok) {
      checkBlas(*bl,
                bl->cublasLtMatmul(
                    bl->lt, plan.desc, alpha, reinterpret_cast<const void *>(b),
                    plan.a, reinterpret_cast<const void *>(a), plan.b, beta,
                    reinterpret_cast<void *>(c), plan.c,
                    reinterpret_cast<void *>(c), plan.c, plan.result,
                    bl->workspace, kLtWorkspaceBytes, d->stream),
                "cublasLtMatmul");
      return;
    }
  }
  checkBlas(*bl,
            bl->cublasGemmStridedBatchedEx(
                bl->handle, transB ? opT : opN, transA ? opT : opN,
                static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                alpha, reinterpret_cast<const void *>(b), ab,
                static_cast<int>(transB ? k : n), k * n,
                reinterpret_cast<const void *>(a), ab,
                static_cast<int>(transA ? m : k), m * k, beta,
                reinterpret_cast<void *>(c), out, static_cast<int>(n), m * n,
                static_cast<int>(batch), f64 ? compute64F : compute32F,
                gemmDefault),
            "cublasGemmStridedBatchedEx");
}

/// A host callback of the cuda target: its operands are copied from the
/// device into host buffers (after the work queued before them), the
/// embedder's ember_host_callback runs on those, and its results are copied
/// to the device. Same signature as the hook (three memrefs: the signature
/// record [id, #operands, #results, per value: type code, rank, dims...]
/// and the operands' and results' addresses).
using HostCallbackHook = void (*)(int64_t *, int64_t *, int64_t, int64_t,
                                  int64_t, int64_t *, int64_t *, int64_t,
                                  int64_t, int64_t, int64_t *, int64_t *,
                                  int64_t, int64_t, int64_t);

void ember_cuda_host_callback(int64_t *sigAlloc, int64_t *sig, int64_t sigOff,
                              int64_t sigSize, int64_t sigStride,
                              int64_t *argsAlloc, int64_t *args,
                              int64_t argsOff, int64_t argsSize,
                              int64_t argsStride, int64_t *resAlloc,
                              int64_t *results, int64_t resOff, int64_t resSize,
                              int64_t resStride) {
  Driver *d = ready();
  if (!d)
    return;
  auto hook = reinterpret_cast<HostCallbackHook>(
      ember::runtime::registeredSymbol("ember_host_callback"));
  if (!hook) {
    recordError("a host callback, but no embedder registered "
                "ember_host_callback");
    return;
  }
  // Element bytes by EMBER_TYPE_CODE (bool is a byte in memory).
  static const int64_t itemBytes[] = {0, 2, 2, 4, 8, 1, 1, 2,
                                      4, 8, 1, 2, 4, 8, 8, 16};
  const int64_t *s = sig + sigOff;
  int64_t operands = s[1], outs = s[2], at = 3;
  std::vector<std::vector<char>> host(operands + outs);
  std::vector<int64_t> addresses(operands + outs), bytes(operands + outs);
  for (int64_t i = 0; i < operands + outs; ++i) {
    int64_t code = s[at], rank = s[at + 1], n = 1;
    for (int64_t r = 0; r < rank; ++r)
      n *= s[at + 2 + r];
    at += 2 + rank;
    bytes[i] = n * (code > 0 && code < 16 ? itemBytes[code] : 1);
    host[i].resize(std::max<int64_t>(1, bytes[i]));
    addresses[i] = reinterpret_cast<int64_t>(host[i].data());
  }
  // The operands, once the work that computes them is done.
  for (int64_t i = 0; i < operands; ++i)
    if (bytes[i] &&
        !check(d->cuMemcpyAsync(
                   reinterpret_cast<CUdeviceptr>(host[i].data()),
                   static_cast<CUdeviceptr>((args + argsOff)[i * argsStride]),
                   bytes[i], d->stream),
               "cuMemcpyAsync"))
      return;
  if (!check(d->cuStreamSynchronize(d->stream), "cuStreamSynchronize"))
    return;
  int64_t *hostArgs = addresses.data(), *hostResults = hostArgs + operands;
  hook(sigAlloc, sig, sigOff, sigSize, sigStride, hostArgs, hostArgs, 0,
       operands, 1, hostResults, hostResults, 0, outs, 1);
  for (int64_t i = 0; i < outs; ++i)
    if (bytes[operands + i])
      check(d->cuMemcpyAsync(
                static_cast<CUdeviceptr>((results + resOff)[i * resStride]),
                reinterpret_cast<CUdeviceptr>(host[operands + i].data()),
                bytes[operands + i], d->stream),
            "cuMemcpyAsync");
  // (The host buffers go when this returns: the copies must be done.)
  check(d->cuStreamSynchronize(d->stream), "cuStreamSynchronize");
}

void mgpuSetDefaultDevice(int32_t device) {
  if (device != 0)
    recordError("Ember's CUDA runtime uses GPU 0 only (asked for GPU " +
                std::to_string(device) + ")");
}
} // extern "C"

void ember::runtime::bindCudaEntries(void (*bind)(const char *, void *, void *),
                                     void *user) {
#define EMBER_CUDA_ENTRY(NAME)                                                 \
  bind(#NAME, reinterpret_cast<void *>(&NAME), user);
#include "ember/Runtime/Runtime.def"
}

//===----------------------------------------------------------------------===//
// The C API (ember-c/Runtime.h)
//===----------------------------------------------------------------------===//

int emberCudaDeviceCount(void) { return driver().devices; }

MlirStringRef emberCudaUnavailableReason(void) {
  const std::string &why = driver().unavailable;
  return mlirStringRefCreate(why.data(), why.size());
}

size_t emberCudaTakeError(char *buffer, size_t size) {
  std::lock_guard<std::mutex> lock(errorMutex);
  if (!failed.load())
    return 0;
  size_t n = firstError.size();
  if (size) {
    size_t k = std::min(n, size - 1);
    std::memcpy(buffer, firstError.data(), k);
    buffer[k] = 0;
  }
  firstError.clear();
  failed.store(false);
  return n ? n : 1;
}

void *emberCudaAlloc(size_t bytes) {
  Driver *d = ready();
  return d ? allocator().allocate(*d, bytes) : nullptr;
}

void emberCudaFree(void *p) { allocator().free(p); }

void emberCudaCopy(void *dst, const void *src, size_t bytes) {
  Driver *d = ready();
  if (!d || !bytes)
    return;
  if (check(d->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                             reinterpret_cast<CUdeviceptr>(src), bytes,
                             d->stream),
            "cuMemcpyAsync"))
    check(d->cuStreamSynchronize(d->stream), "cuStreamSynchronize");
}

void emberCudaSynchronize(void) {
  if (Driver *d = ready())
    check(d->cuStreamSynchronize(d->stream), "cuStreamSynchronize");
}

void emberCudaReleaseCache(void) {
  Driver &d = driver();
  if (d.unavailable.empty())
    allocator().release(d);
}

void emberCudaAllocatorStats(size_t *allocations, size_t *cachedBytes) {
  Allocator &a = allocator();
  std::lock_guard<std::mutex> lock(a.mutex);
  *allocations = a.allocations;
  *cachedBytes = a.cachedBytes;
}
