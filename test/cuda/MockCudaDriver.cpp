//===- MockCudaDriver.cpp - a stand-in CUDA driver for the runtime's tests ===//
//
// The driver API entry points lib/Runtime/Cuda.cpp loads, over host memory,
// for testing the CUDA runtime on machines without a GPU
// (EMBER_CUDA_DRIVER=<this library>; test/python/test_cuda_runtime.py).
// Memory calls work (device memory is host memory), modules must be PTX
// with an entry, and launches are recorded, not run: kernels need a GPU.
// mock_cuda_log() returns what happened, one call per line.
// EMBER_MOCK_CUDA_FAIL=<function>[,<function>...] makes those functions
// fail with CUDA_ERROR_LAUNCH_FAILED (719); EMBER_MOCK_CUDA_DEVICES sets the
// count. EMBER_MOCK_CUDA_OPAQUE=1 makes device memory unreachable from the
// host, as a GPU's is: device addresses lie in a reserved range without access
// (a host read or write there is a segmentation fault), and the stand-in's own
// copies, fills and products reach the memory through a second mapping.
//
// The library also stands in for cuBLAS (EMBER_CUBLAS=<this library>): the
// few functions the runtime loads, computing products on host memory in
// column-major order as cuBLAS defines them, so that the runtime's
// row-major-to-column-major mapping is checked by results; f16 and bf16
// accumulate in float and round to nearest even, as cuBLAS's 32F compute.
// EMBER_MOCK_CUDA_FAIL=cublasGemmStridedBatchedEx makes the product fail with
// CUBLAS_STATUS_EXECUTION_FAILED (13). EMBER_MOCK_CUBLAS_SKIP=1 records
// products without computing them (for timing the host side of programs).
//
//===----------------------------------------------------------------------===//
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {
std::mutex mutex;
std::string log;
std::map<void *, size_t> live;

struct Module {
  std::string ptx;
};
struct Function {
  std::string name;
};

void note(const std::string &line) {
  std::lock_guard<std::mutex> lock(mutex);
  log += line + "\n";
}

/// EMBER_MOCK_CUDA_OPAQUE's two views of one range: `dev` (no access: the
/// addresses handed out) and `rw` (the stand-in's), blocks taken in order.
struct Opaque {
  char *dev = nullptr, *rw = nullptr;
  size_t size = 0, next = 0;
};

Opaque &opaque() {
  static Opaque o = [] {
    Opaque o;
    const char *on = std::getenv("EMBER_MOCK_CUDA_OPAQUE");
    if (!on || std::strcmp(on, "1") != 0)
      return o;
    o.size = size_t(64) << 30;
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    void *dev = mmap(nullptr, o.size, PROT_NONE, flags, -1, 0);
    void *rw = mmap(nullptr, o.size, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (dev == MAP_FAILED || rw == MAP_FAILED)
      std::abort();
    o.dev = static_cast<char *>(dev);
    o.rw = static_cast<char *>(rw);
    return o;
  }();
  return o;
}

/// Where the stand-in reads and writes the memory at device or host
/// address `p`.
void *view(unsigned long long p) {
  Opaque &o = opaque();
  char *c = reinterpret_cast<char *>(p);
  if (o.dev && c >= o.dev && c < o.dev + o.size)
    return o.rw + (c - o.dev);
  return c;
}
const void *view(const void *p) {
  return view(reinterpret_cast<unsigned long long>(p));
}
void *view(void *p) { return view(reinterpret_cast<unsigned long long>(p)); }

bool fails(const char *name) {
  const char *f = std::getenv("EMBER_MOCK_CUDA_FAIL");
  if (!f)
    return false;
  std::string list = std::string(",") + f + ",";
  return list.find(std::string(",") + name + ",") != std::string::npos;
}
} // namespace

#define FAIL_IF_ASKED(NAME)                                                    \
  if (fails(#NAME)) {                                                          \
    note("fail " #NAME);                                                       \
    return 719;                                                                \
  }

extern "C" {
const char *mock_cuda_log() {
  static std::string copy;
  std::lock_guard<std::mutex> lock(mutex);
  copy = log;
  return copy.c_str();
}

void mock_cuda_clear_log() {
  std::lock_guard<std::mutex> lock(mutex);
  log.clear();
}

size_t mock_cuda_live_blocks() {
  std::lock_guard<std::mutex> lock(mutex);
  return live.size();
}

int cuInit(unsigned) {
  FAIL_IF_ASKED(cuInit)
  return 0;
}

int cuGetErrorName(int code, const char **name) {
  switch (code) {
  case 1:
    *name = "CUDA_ERROR_INVALID_VALUE";
    return 0;
  case 2:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return 0;
  case 218:
    *name = "CUDA_ERROR_INVALID_PTX";
    return 0;
  case 719:
    *name = "CUDA_ERROR_LAUNCH_FAILED";
    return 0;
  default:
    return 1;
  }
}

int cuDeviceGetCount(int *count) {
  const char *n = std::getenv("EMBER_MOCK_CUDA_DEVICES");
  *count = n ? std::atoi(n) : 1;
  return 0;
}

int cuDeviceGet(int *device, int ordinal) {
  *device = ordinal;
  return 0;
}

int cuDeviceGetName(char *name, int length, int) {
  std::strncpy(name, "Ember mock GPU", length);
  return 0;
}

int cuDevicePrimaryCtxRetain(void **context, int) {
  static int primary;
  *context = &primary;
  return 0;
}

int cuCtxSetCurrent(void *) { return 0; }

int cuStreamCreate(void **stream, unsigned) {
  static int stream0;
  *stream = &stream0;
  note("cuStreamCreate");
  return 0;
}

int cuStreamSynchronize(void *) {
  FAIL_IF_ASKED(cuStreamSynchronize)
  note("cuStreamSynchronize");
  return 0;
}

int cuStreamWaitEvent(void *, void *, unsigned) {
  note("cuStreamWaitEvent");
  return 0;
}
int cuEventCreate(void **event, unsigned) {
  note("cuEventCreate");
  *event = new int(0);
  return 0;
}
int cuEventDestroy_v2(void *event) {
  delete static_cast<int *>(event);
  return 0;
}
int cuEventRecord(void *, void *) {
  note("cuEventRecord");
  return 0;
}
int cuEventSynchronize(void *) { return 0; }

int cuMemAlloc_v2(unsigned long long *p, size_t bytes) {
  FAIL_IF_ASKED(cuMemAlloc_v2)
  size_t rounded = std::max<size_t>(256, (bytes + 255) / 256 * 256);
  std::lock_guard<std::mutex> lock(mutex);
  Opaque &o = opaque();
  void *block;
  if (o.dev) {
    if (o.next + rounded > o.size)
      return 2; // CUDA_ERROR_OUT_OF_MEMORY
    block = o.dev + o.next;
    o.next += rounded;
  } else {
    block = std::aligned_alloc(256, rounded);
  }
  *p = reinterpret_cast<unsigned long long>(block);
  live[block] = bytes;
  log += "cuMemAlloc " + std::to_string(bytes) + "\n";
  return 0;
}

int cuMemFree_v2(unsigned long long p) {
  void *block = reinterpret_cast<void *>(p);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = live.find(block);
  if (it == live.end())
    return 1;
  if (opaque().dev)
    madvise(view(block), std::max<size_t>(256, (it->second + 255) / 256 * 256),
            MADV_DONTNEED);
  else
    std::free(block);
  live.erase(it);
  log += "cuMemFree\n";
  return 0;
}

int cuMemcpyAsync(unsigned long long dst, unsigned long long src, size_t bytes,
                  void *) {
  std::memcpy(view(dst), view(src), bytes);
  note("cuMemcpyAsync " + std::to_string(bytes));
  return 0;
}

int cuMemsetD32Async(unsigned long long dst, unsigned value, size_t n, void *) {
  auto *p = static_cast<uint32_t *>(view(dst));
  for (size_t i = 0; i < n; ++i)
    p[i] = value;
  return 0;
}

int cuMemsetD16Async(unsigned long long dst, unsigned short value, size_t n,
                     void *) {
  auto *p = static_cast<uint16_t *>(view(dst));
  for (size_t i = 0; i < n; ++i)
    p[i] = value;
  return 0;
}

int cuModuleLoadDataEx(void **module, const void *image, unsigned n,
                       int *options, void **values) {
  const char *text = static_cast<const char *>(image);
  if (fails("cuModuleLoadDataEx") || !std::strstr(text, ".entry")) {
    for (unsigned i = 0; i < n; ++i)
      if (options[i] == 5) // CU_JIT_ERROR_LOG_BUFFER
        std::strcpy(static_cast<char *>(values[i]), "mock: no .entry in PTX");
    note("fail cuModuleLoadDataEx");
    return 218;
  }
  *module = new Module{text};
  std::string opts;
  for (unsigned i = 0; i < n; ++i)
    if (options[i] == 7) // CU_JIT_OPTIMIZATION_LEVEL
      opts = " O" + std::to_string(reinterpret_cast<intptr_t>(values[i]));
  note("cuModuleLoadDataEx" + opts);
  return 0;
}

int cuModuleGetFunction(void **function, void *module, const char *name) {
  auto *m = static_cast<Module *>(module);
  if (m->ptx.find(std::string(".entry ") + name) == std::string::npos)
    return 1;
  *function = new Function{name};
  note(std::string("cuModuleGetFunction ") + name);
  return 0;
}

int cuModuleUnload(void *module) {
  delete static_cast<Module *>(module);
  note("cuModuleUnload");
  return 0;
}

int cuFuncSetAttribute(void *, int attribute, int value) {
  note("cuFuncSetAttribute " + std::to_string(attribute) + " " +
       std::to_string(value));
  return 0;
}

int cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                   unsigned bx, unsigned by, unsigned bz, unsigned smem, void *,
                   void **, void **) {
  FAIL_IF_ASKED(cuLaunchKernel)
  note("cuLaunchKernel " + static_cast<Function *>(function)->name + " grid " +
       std::to_string(gx) + "," + std::to_string(gy) + "," +
       std::to_string(gz) + " block " + std::to_string(bx) + "," +
       std::to_string(by) + "," + std::to_string(bz) + " smem " +
       std::to_string(smem));
  return 0;
}

int cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *,
                           const uint64_t *dims, const uint64_t *strides,
                           const unsigned *box, const unsigned *, int,
                           int swizzle, int, int) {
  std::string line =
      "cuTensorMapEncodeTiled dtype " + std::to_string(dtype) + " dims";
  for (unsigned i = 0; i < rank; ++i)
    line += " " + std::to_string(dims[i]);
  line += " strides";
  for (unsigned i = 0; i + 1 < rank; ++i)
    line += " " + std::to_string(strides[i]);
  line += " box";
  for (unsigned i = 0; i < rank; ++i)
    line += " " + std::to_string(box[i]);
  line += " swizzle " + std::to_string(swizzle);
  std::memset(map, 0xab, 128);
  note(line);
  return 0;
}

int cuLaunchKernelEx(const void *, void *, void **, void **) {
  note("cuLaunchKernelEx");
  return 0;
}
} // extern "C"

//===----------------------------------------------------------------------===//
// cuBLAS
//===----------------------------------------------------------------------===//

namespace {
// cudaDataType codes (library_types.h).
constexpr int kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14;

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023,
           bits;
  if (exp == 31)
    bits = sign | 0x7f800000u | (man << 13);
  else if (exp == 0 && man == 0)
    bits = sign;
  else if (exp == 0) { // subnormal: normalize
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while (!(man & 1024));
    bits = sign | uint32_t(127 - 15 - e) << 23 | ((man & 1023) << 13);
  } else
    bits = sign | (exp + 112) << 23 | (man << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = int32_t((x >> 23) & 255) - 127 + 15;
  uint32_t man = x & 0x7fffff;
  if (((x >> 23) & 255) == 255)
    return uint16_t(sign | 0x7c00 | (man ? 0x200 : 0));
  if (exp >= 31)
    return uint16_t(sign | 0x7c00);
  if (exp <= 0) { // subnormal or zero
    if (exp < -10)
      return uint16_t(sign);
    man |= 0x800000;
    uint32_t shift = uint32_t(14 - exp);
    uint32_t h = man >> shift, rest = man & ((1u << shift) - 1),
             half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1)))
      ++h;
    return uint16_t(sign | h);
  }
  uint32_t h = uint32_t(exp) << 10 | (man >> 13), rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h; // may carry into the exponent: still right
  return uint16_t(sign | h);
}

float load(const void *p, int type, long long i) {
  switch (type) {
  case kR32F:
    return static_cast<const float *>(p)[i];
  case kR16F:
    return halfToFloat(static_cast<const uint16_t *>(p)[i]);
  default: { // kR16BF
    uint32_t bits = uint32_t(static_cast<const uint16_t *>(p)[i]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  }
}

void store(void *p, int type, long long i, float v) {
  switch (type) {
  case kR32F:
    static_cast<float *>(p)[i] = v;
    return;
  case kR16F:
    static_cast<uint16_t *>(p)[i] = floatToHalf(v);
    return;
  default: { // kR16BF, round to nearest even
    uint32_t x;
    std::memcpy(&x, &v, 4);
    if ((x & 0x7fffffff) > 0x7f800000)
      x |= 0x400000; // quiet NaN
    else
      x += 0x7fff + ((x >> 16) & 1);
    static_cast<uint16_t *>(p)[i] = uint16_t(x >> 16);
  }
  }
}

void *currentStream = nullptr;
} // namespace

extern "C" {
int cublasCreate_v2(void **handle) {
  static int h;
  *handle = &h;
  note("cublasCreate");
  return 0;
}

int cublasDestroy_v2(void *) { return 0; }

int cublasSetStream_v2(void *, void *stream) {
  currentStream = stream;
  note("cublasSetStream");
  return 0;
}

const char *cublasGetStatusName(int status) {
  return status == 13 ? "CUBLAS_STATUS_EXECUTION_FAILED"
                      : "CUBLAS_STATUS_INVALID_VALUE";
}

} // extern "C"
namespace {
int product(int transa, int transb, long long m, long long n, long long k,
            const void *alpha, const void *a, int atype, long long lda,
            long long strideA, const void *b, int btype, long long ldb,
            long long strideB, const void *beta, void *c, int ctype,
            long long ldc, long long strideC, long long batch);
} // namespace
extern "C" {

// C (m x n, column-major, leading dimension ldc) = op(A) op(B), batched.
int cublasGemmStridedBatchedEx(void *, int transa, int transb, int m, int n,
                               int k, const void *alpha, const void *a,
                               int atype, int lda, long long strideA,
                               const void *b, int btype, int ldb,
                               long long strideB, const void *beta, void *c,
                               int ctype, int ldc, long long strideC, int batch,
                               int compute, int algo) {
  if (fails("cublasGemmStridedBatchedEx")) {
    note("fail cublasGemmStridedBatchedEx");
    return 13;
  }
  note("cublasGemmStridedBatchedEx " + std::string(transa ? "T" : "N") +
       std::string(transb ? "T" : "N") + " m=" + std::to_string(m) +
       " n=" + std::to_string(n) + " k=" + std::to_string(k) +
       " lda=" + std::to_string(lda) + " ldb=" + std::to_string(ldb) +
       " ldc=" + std::to_string(ldc) + " batch=" + std::to_string(batch) +
       " types=" + std::to_string(atype) + "," + std::to_string(btype) + "," +
       std::to_string(ctype) + " compute=" + std::to_string(compute) +
       " algo=" + std::to_string(algo));
  if (atype != btype || (transa | transb) > 1)
    return 7; // CUBLAS_STATUS_INVALID_VALUE
  return product(transa, transb, m, n, k, alpha, a, atype, lda, strideA, b,
                 btype, ldb, strideB, beta, c, ctype, ldc, strideC, batch);
}

// cuBLASLt: descriptors hold what cublasLtMatmul reads back (the matrices'
// stored sizes and batch strides, the operations); the heuristic offers
// one algorithm, which the product ignores. The product is the one above.
struct LtLayout {
  int type;
  long long rows, cols, ld, count = 1, stride = 0;
};
struct LtDesc {
  int compute, transa = 0, transb = 0;
};

int cublasLtCreate(void **handle) {
  note("cublasLtCreate");
  static int h;
  *handle = &h;
  return 0;
}
int cublasLtMatmulDescCreate(void **desc, int compute, int) {
  *desc = new LtDesc{compute};
  return 0;
}
int cublasLtMatmulDescSetAttribute(void *desc, int attr, const void *buf,
                                   size_t) {
  auto *d = static_cast<LtDesc *>(desc);
  if (attr == 3)
    d->transa = *static_cast<const int32_t *>(buf);
  else if (attr == 4)
    d->transb = *static_cast<const int32_t *>(buf);
  else
    return 7;
  return 0;
}
int cublasLtMatrixLayoutCreate(void **layout, int type, uint64_t rows,
                               uint64_t cols, int64_t ld) {
  *layout = new LtLayout{type, static_cast<long long>(rows),
                         static_cast<long long>(cols), ld};
  return 0;
}
int cublasLtMatrixLayoutSetAttribute(void *layout, int attr, const void *buf,
                                     size_t) {
  auto *l = static_cast<LtLayout *>(layout);
  if (attr == 5)
    l->count = *static_cast<const int32_t *>(buf);
  else if (attr == 6)
    l->stride = *static_cast<const int64_t *>(buf);
  else
    return 7;
  return 0;
}
int cublasLtMatmulPreferenceCreate(void **pref) {
  static int p;
  *pref = &p;
  return 0;
}
int cublasLtMatmulPreferenceSetAttribute(void *, int, const void *, size_t) {
  return 0;
}
int cublasLtMatmulAlgoGetHeuristic(void *, void *, void *, void *, void *,
                                   void *, void *, int requested, void *results,
                                   int *found) {
  if (fails("cublasLtMatmulAlgoGetHeuristic")) {
    *found = 0;
    return 15; // CUBLAS_STATUS_NOT_SUPPORTED
  }
  std::memset(results, 0, 96);
  *found = requested > 0 ? 1 : 0;
  return 0;
}
int cublasLtMatmul(void *, void *desc, const void *alpha, const void *a,
                   void *adesc, const void *b, void *bdesc, const void *beta,
                   const void *c, void *cdesc, void *d, void *ddesc,
                   const void *, void *, size_t, void *) {
  auto *op = static_cast<LtDesc *>(desc);
  auto *la = static_cast<LtLayout *>(adesc);
  auto *lb = static_cast<LtLayout *>(bdesc);
  auto *lc = static_cast<LtLayout *>(cdesc);
  if (fails("cublasLtMatmul")) {
    note("fail cublasLtMatmul");
    return 13;
  }
  long long m = lc->rows, n = lc->cols, k = op->transa ? la->rows : la->cols;
  note("cublasLtMatmul " + std::string(op->transa ? "T" : "N") +
       std::string(op->transb ? "T" : "N") + " m=" + std::to_string(m) +
       " n=" + std::to_string(n) + " k=" + std::to_string(k) +
       " lda=" + std::to_string(la->ld) + " ldb=" + std::to_string(lb->ld) +
       " ldc=" + std::to_string(lc->ld) + " batch=" +
       std::to_string(lc->count) + " types=" + std::to_string(la->type) + "," +
       std::to_string(lb->type) + "," + std::to_string(lc->type) +
       " compute=" + std::to_string(op->compute));
  if (c != d || ddesc != cdesc || la->type != lb->type)
    return 7;
  return product(op->transa, op->transb, m, n, k, alpha, a, la->type, la->ld,
                 la->stride, b, lb->type, lb->ld, lb->stride, beta, d, lc->type,
                 lc->ld, lc->stride, lc->count);
}
} // extern "C"

namespace {
// C (m x n, column-major, leading dimension ldc) = alpha op(A) op(B) +
// beta C, batched, as cuBLAS defines it.
int product(int transa, int transb, long long m, long long n, long long k,
            const void *alpha, const void *a, int atype, long long lda,
            long long strideA, const void *b, int btype, long long ldb,
            long long strideB, const void *beta, void *c, int ctype,
            long long ldc, long long strideC, long long batch) {
  static const bool skip = std::getenv("EMBER_MOCK_CUBLAS_SKIP") != nullptr;
  if (skip)
    return 0;
  a = view(a);
  b = view(b);
  c = view(c);
  alpha = view(alpha);
  beta = view(beta);
  // Operand (row r, column q) of op(X) for a column-major X.
  auto at = [](long long ld, int trans, long long r, long long q) {
    return trans ? q + r * ld : r + q * ld;
  };
  for (int s = 0; s < batch; ++s)
    for (long long i = 0; i < m; ++i)
      for (long long j = 0; j < n; ++j) {
        long long ci = s * strideC + i + j * ldc;
        if (ctype == kR64F) {
          double acc = 0;
          for (long long l = 0; l < k; ++l)
            acc += static_cast<const double *>(
                       a)[s * strideA + at(lda, transa, i, l)] *
                   static_cast<const double *>(
                       b)[s * strideB + at(ldb, transb, l, j)];
          double al = *static_cast<const double *>(alpha),
                 be = *static_cast<const double *>(beta);
          double *cp = static_cast<double *>(c) + ci;
          *cp = al * acc + (be != 0 ? be * *cp : 0);
          continue;
        }
        float acc = 0;
        for (long long l = 0; l < k; ++l)
          acc += load(a, atype, s * strideA + at(lda, transa, i, l)) *
                 load(b, btype, s * strideB + at(ldb, transb, l, j));
        float al = *static_cast<const float *>(alpha),
              be = *static_cast<const float *>(beta);
        store(c, ctype, ci, al * acc + (be != 0 ? be * load(c, ctype, ci) : 0));
      }
  return 0;
}
} // namespace
