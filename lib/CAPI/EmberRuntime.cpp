//===- EmberRuntime.cpp - JIT compilation for the host CPU ----------------===//
#include "ember-c/Runtime.h"

#include "SmallGemm.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {
std::mutex symbolsMutex;
std::vector<std::pair<std::string, void *>> &extraSymbols() {
  static auto *v = new std::vector<std::pair<std::string, void *>>;
  return *v;
}
} // namespace

//===----------------------------------------------------------------------===//
// GEMM entry points of compiled code
//===----------------------------------------------------------------------===//

namespace {
// cblas_?gemm with 32-bit integers (CblasRowMajor = 101, CblasNoTrans = 111,
// CblasTrans = 112), e.g. from scipy-openblas32; null until an embedder
// provides them.
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float *, int,
                            const float *, int, float, float *, int);
using CblasDgemm = void (*)(int, int, int, int, int, int, double, const double *, int,
                            const double *, int, double, double *, int);
CblasSgemm cblasSgemm = nullptr;
CblasDgemm cblasDgemm = nullptr;

/// C[i,j] = sum_p A[i,p] B[p,j] for one row-major matrix, without BLAS.
template <typename T>
void referenceGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T *a,
                   const T *b, T *c) {
  for (int64_t i = 0; i < m; ++i) {
    T *row = c + i * n;
    for (int64_t j = 0; j < n; ++j)
      row[j] = T(0);
    for (int64_t p = 0; p < k; ++p) {
      T x = ta ? a[p * m + i] : a[i * k + p];
      for (int64_t j = 0; j < n; ++j)
        row[j] += x * (tb ? b[j * k + p] : b[p * n + j]);
    }
  }
}

template <typename T, typename Blas>
void gemm(Blas blas, int64_t ta, int64_t tb, int64_t batch, int64_t m, int64_t n,
          int64_t k, intptr_t aAddr, intptr_t bAddr, intptr_t cAddr) {
  auto *a = reinterpret_cast<const T *>(aAddr);
  auto *b = reinterpret_cast<const T *>(bAddr);
  auto *c = reinterpret_cast<T *>(cAddr);
  for (int64_t i = 0; i < batch; ++i) {
    const T *ai = a + i * m * k, *bi = b + i * k * n;
    T *ci = c + i * m * n;
    if (ember::runtime::smallGemmAvailable() &&
        (!blas || ember::runtime::smallGemmPreferred(m, n, k)))
      ember::runtime::smallGemm(ta, tb, m, n, k, ai, bi, ci);
    else if (blas)
      blas(101, ta ? 112 : 111, tb ? 112 : 111, (int)m, (int)n, (int)k, T(1), ai,
           ta ? (int)m : (int)k, bi, tb ? (int)k : (int)n, T(0), ci, (int)n);
    else
      referenceGemm(ta, tb, m, n, k, ai, bi, ci);
  }
}
} // namespace

namespace {
template <typename T>
void packGemmB(int64_t tb, int64_t n, int64_t k, intptr_t b, intptr_t packed) {
  if (ember::runtime::smallGemmAvailable())
    ember::runtime::packB(tb, n, k, reinterpret_cast<const T *>(b), reinterpret_cast<T *>(packed));
}

template <typename T, typename Blas>
void packedGemm(Blas blas, int64_t ta, int64_t tb, int64_t m, int64_t n, int64_t k,
                intptr_t a, intptr_t b, intptr_t packed, intptr_t c) {
  if (ember::runtime::smallGemmAvailable())
    ember::runtime::smallGemmPacked(ta, m, n, k, reinterpret_cast<const T *>(a),
                                    reinterpret_cast<const T *>(packed),
                                    reinterpret_cast<T *>(c));
  else // (nothing was packed)
    gemm<T>(blas, ta, tb, 1, m, n, k, a, b, c);
}
} // namespace

/// B packed once for the small-product kernel (a weight used in a loop), and
/// products with it; without the kernel (no AVX2) the products use B itself.
extern "C" void ember_gemm_pack_f32(int64_t tb, int64_t n, int64_t k, intptr_t b,
                                    intptr_t packed) {
  packGemmB<float>(tb, n, k, b, packed);
}
extern "C" void ember_gemm_pack_f64(int64_t tb, int64_t n, int64_t k, intptr_t b,
                                    intptr_t packed) {
  packGemmB<double>(tb, n, k, b, packed);
}
extern "C" void ember_gemm_packed_f32(int64_t ta, int64_t tb, int64_t m, int64_t n, int64_t k,
                                      intptr_t a, intptr_t b, intptr_t packed, intptr_t c) {
  packedGemm<float>(cblasSgemm, ta, tb, m, n, k, a, b, packed, c);
}
extern "C" void ember_gemm_packed_f64(int64_t ta, int64_t tb, int64_t m, int64_t n, int64_t k,
                                      intptr_t a, intptr_t b, intptr_t packed, intptr_t c) {
  packedGemm<double>(cblasDgemm, ta, tb, m, n, k, a, b, packed, c);
}

extern "C" void ember_gemm_f32(int64_t ta, int64_t tb, int64_t batch, int64_t m, int64_t n,
                               int64_t k, intptr_t a, intptr_t b, intptr_t c) {
  gemm<float>(cblasSgemm, ta, tb, batch, m, n, k, a, b, c);
}

extern "C" void ember_gemm_f64(int64_t ta, int64_t tb, int64_t batch, int64_t m, int64_t n,
                               int64_t k, intptr_t a, intptr_t b, intptr_t c) {
  gemm<double>(cblasDgemm, ta, tb, batch, m, n, k, a, b, c);
}

//===----------------------------------------------------------------------===//
// Memory of compiled code
//===----------------------------------------------------------------------===//

namespace {
/// Compiled code's `malloc`/`calloc`/`free` (the JIT binds those names to
/// these). Blocks of 64 KiB and more are kept after `free`, per exact size, for
/// the next call of the same function: glibc would return them to the
/// kernel and page-fault them in again on every call (for a scan over 100
/// steps, each residual buffer is megabytes). At most 512 MiB are kept.
/// Every block has a 16-byte header holding its size (malloc's alignment).
class BlockPool {
public:
  static constexpr size_t kHeader = 16, kMinPooled = size_t(64) << 10;

  void *take(size_t n, bool zero) {
    if (n >= kMinPooled) {
      std::lock_guard<std::mutex> lock(mu);
      auto it = blocks.find(n);
      if (it != blocks.end() && !it->second.empty()) {
        char *raw = it->second.back();
        it->second.pop_back();
        pooled -= n;
        if (zero)
          std::memset(raw + kHeader, 0, n);
        return raw + kHeader;
      }
    }
    if (n > SIZE_MAX - kHeader)
      return nullptr;
    auto *raw = static_cast<char *>(zero ? std::calloc(1, n + kHeader) : std::malloc(n + kHeader));
    if (!raw)
      return nullptr;
    *reinterpret_cast<size_t *>(raw) = n;
    return raw + kHeader;
  }

  void give(void *p) {
    if (!p)
      return;
    char *raw = static_cast<char *>(p) - kHeader;
    size_t n = *reinterpret_cast<size_t *>(raw);
    if (n >= kMinPooled) {
      std::lock_guard<std::mutex> lock(mu);
      if (pooled + n <= kMaxPooled) {
        blocks[n].push_back(raw);
        pooled += n;
        return;
      }
    }
    std::free(raw);
  }

private:
  static constexpr size_t kMaxPooled = size_t(512) << 20;
  std::mutex mu;
  std::unordered_map<size_t, std::vector<char *>> blocks;
  size_t pooled = 0;
};

BlockPool &blockPool() {
  static auto *pool = new BlockPool; // leaked: compiled code may run at exit
  return *pool;
}
} // namespace

extern "C" void *ember_malloc(size_t n) { return blockPool().take(n, false); }
extern "C" void *ember_calloc(size_t count, size_t size) {
  if (size && count > SIZE_MAX / size)
    return nullptr;
  return blockPool().take(count * size, true);
}
extern "C" void ember_free(void *p) { blockPool().give(p); }

//===----------------------------------------------------------------------===//
// Run-time stacks of compiled code (reverse mode through loops)
//===----------------------------------------------------------------------===//

namespace {
/// The bytes of the values pushed so far; a handle is its address (0: none).
struct EmberStack {
  std::vector<unsigned char> bytes;
  int64_t lanes = 0; // of the pushed values (0: none)
};
} // namespace

/// Appends `n` bytes at `data` to the stack `*hin` (created when 0, with the
/// pushed values' `lanes`) and stores its handle in `*hout`.
extern "C" void ember_stack_push(intptr_t hin, intptr_t hout, intptr_t data, int64_t n,
                                 int64_t lanes) {
  auto *s = reinterpret_cast<EmberStack *>(*reinterpret_cast<int64_t *>(hin));
  if (!s) {
    s = new EmberStack;
    s->lanes = lanes;
  }
  size_t at = s->bytes.size();
  s->bytes.resize(at + n); // grows geometrically
  if (n)
    std::memcpy(s->bytes.data() + at, reinterpret_cast<const void *>(data), n);
  *reinterpret_cast<int64_t *>(hout) = reinterpret_cast<int64_t>(s);
}

/// Copies value bytes of push number `*index` (pushes of `entry` bytes each;
/// the value at `offset` in the push) to `data`. With `lanes` > 0 the value
/// has that many lanes of `laneBytes` each, and lane j comes from push
/// `index[j]`: its lane j, or all of it when the pushes had no lanes (they
/// are then `entry / lanes` bytes). A negative index (a finished lane)
/// gives zeros.
extern "C" void ember_stack_read(intptr_t h, intptr_t index, int64_t lanes, int64_t entry,
                                 int64_t offset, intptr_t data, int64_t laneBytes) {
  auto *s = reinterpret_cast<EmberStack *>(*reinterpret_cast<int64_t *>(h));
  auto *idx = reinterpret_cast<const int64_t *>(index);
  auto *out = reinterpret_cast<unsigned char *>(data);
  int64_t laneStride = laneBytes;
  if (lanes && s && s->lanes == 0) { // every lane reads the whole value
    entry /= lanes;
    offset /= lanes;
    laneStride = 0;
  }
  for (int64_t j = 0, n = std::max<int64_t>(lanes, 1); j < n; ++j) {
    int64_t k = idx[lanes ? j : 0];
    size_t from = (size_t)(k * entry + offset + j * laneStride);
    if (k < 0 || !s || from + laneBytes > s->bytes.size()) // not reached for k >= 0
      std::memset(out + j * laneBytes, 0, laneBytes);
    else if (laneBytes)
      std::memcpy(out + j * laneBytes, s->bytes.data() + from, laneBytes);
  }
}

/// After the reads of push `*index` (of every lane's index): frees the stack
/// `*hin` when that was push 0 for all lanes (the last read of a backward
/// loop), storing the new handle (0 once freed) in `*hout`.
extern "C" void ember_stack_release(intptr_t hin, intptr_t hout, intptr_t index, int64_t lanes) {
  auto *s = reinterpret_cast<EmberStack *>(*reinterpret_cast<int64_t *>(hin));
  auto *idx = reinterpret_cast<const int64_t *>(index);
  int64_t last = idx[0];
  for (int64_t j = 1; j < lanes; ++j)
    last = std::max(last, idx[j]);
  if (last <= 0) {
    delete s;
    s = nullptr;
  }
  *reinterpret_cast<int64_t *>(hout) = reinterpret_cast<int64_t>(s);
}

extern "C" void ember_stack_free(intptr_t h) {
  delete reinterpret_cast<EmberStack *>(*reinterpret_cast<int64_t *>(h));
}

void emberRuntimeSetCblasGemm(void *sgemm, void *dgemm) {
  cblasSgemm = reinterpret_cast<CblasSgemm>(sgemm);
  cblasDgemm = reinterpret_cast<CblasDgemm>(dgemm);
}

void emberRuntimeRegisterSymbol(MlirStringRef name, void *address) {
  std::lock_guard<std::mutex> lock(symbolsMutex);
  std::string n(name.data, name.length);
  for (auto &kv : extraSymbols())
    if (kv.first == n) {
      kv.second = address;
      return;
    }
  extraSymbols().emplace_back(n, address);
}

struct EmberExecutable {
  std::unique_ptr<mlir::ExecutionEngine> engine;
};

static void report(void (*onError)(MlirStringRef, void *), void *userData,
                   const std::string &msg) {
  if (onError)
    onError(mlirStringRefCreate(msg.data(), msg.size()), userData);
}

EmberExecutable *emberExecutableCreate(MlirModule module, int optLevel,
                                       void (*onError)(MlirStringRef, void *),
                                       void *userData) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    return true;
  }();
  (void)initialized;
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) {
    report(onError, userData, llvm::toString(builder.takeError()));
    return nullptr;
  }
  auto level = optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
               : optLevel == 2 ? llvm::CodeGenOptLevel::Default
               : optLevel == 1 ? llvm::CodeGenOptLevel::Less
                               : llvm::CodeGenOptLevel::None;
  builder->setCodeGenOptLevel(level);
  // Contract a*b+c into fused multiply-adds where the CPU has them, as XLA's
  // CPU backend does (results then match JAX's bit for bit more often).
  builder->getOptions().AllowFPOpFusion = llvm::FPOpFusion::Fast;
  auto tm = builder->createTargetMachine();
  if (!tm) {
    report(onError, userData, llvm::toString(tm.takeError()));
    return nullptr;
  }
  llvm::TargetMachine *machine = tm->get();
  std::string cpu = machine->getTargetCPU().str();
  std::string features = machine->getTargetFeatureString().str();
  auto optimize = mlir::makeOptimizingTransformer(optLevel, /*sizeLevel=*/0, machine);
  // Functions carry the host CPU and features so that the optimizer's cost
  // model (vectorization above all) targets this machine.
  auto transformer = [&](llvm::Module *m) -> llvm::Error {
    for (llvm::Function &f : *m) {
      if (f.isDeclaration())
        continue;
      f.addFnAttr("target-cpu", cpu);
      f.addFnAttr("target-features", features);
    }
    return optimize(m);
  };
  mlir::ExecutionEngineOptions options;
  options.transformer = transformer;
  options.jitCodeGenOptLevel = level;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = false;
  auto engine = mlir::ExecutionEngine::create(unwrap(module), options, std::move(*tm));
  if (!engine) {
    report(onError, userData, llvm::toString(engine.takeError()));
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(symbolsMutex);
    (*engine)->registerSymbols([&](llvm::orc::MangleAndInterner interner) {
        llvm::orc::SymbolMap map;
        map[interner("ember_gemm_f32")] = {llvm::orc::ExecutorAddr::fromPtr(&ember_gemm_f32),
                                           llvm::JITSymbolFlags::Exported};
        map[interner("ember_gemm_f64")] = {llvm::orc::ExecutorAddr::fromPtr(&ember_gemm_f64),
                                           llvm::JITSymbolFlags::Exported};
        for (auto [name, fn] :
             {std::pair<const char *, void *>{"ember_gemm_pack_f32", (void *)&ember_gemm_pack_f32},
              {"ember_gemm_pack_f64", (void *)&ember_gemm_pack_f64},
              {"ember_gemm_packed_f32", (void *)&ember_gemm_packed_f32},
              {"ember_gemm_packed_f64", (void *)&ember_gemm_packed_f64}})
          map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                                 llvm::JITSymbolFlags::Exported};
        // (calloc too: LLVM may fold malloc + memset into calloc.)
        map[interner("malloc")] = {llvm::orc::ExecutorAddr::fromPtr(&ember_malloc),
                                   llvm::JITSymbolFlags::Exported};
        map[interner("calloc")] = {llvm::orc::ExecutorAddr::fromPtr(&ember_calloc),
                                   llvm::JITSymbolFlags::Exported};
        map[interner("free")] = {llvm::orc::ExecutorAddr::fromPtr(&ember_free),
                                 llvm::JITSymbolFlags::Exported};
        map[interner("ember_stack_push")] = {
            llvm::orc::ExecutorAddr::fromPtr(&ember_stack_push), llvm::JITSymbolFlags::Exported};
        map[interner("ember_stack_read")] = {
            llvm::orc::ExecutorAddr::fromPtr(&ember_stack_read), llvm::JITSymbolFlags::Exported};
        map[interner("ember_stack_release")] = {
            llvm::orc::ExecutorAddr::fromPtr(&ember_stack_release),
            llvm::JITSymbolFlags::Exported};
        map[interner("ember_stack_free")] = {
            llvm::orc::ExecutorAddr::fromPtr(&ember_stack_free), llvm::JITSymbolFlags::Exported};
        for (auto &[n, addr] : extraSymbols())
          map[interner(n)] = {llvm::orc::ExecutorAddr::fromPtr(addr),
                              llvm::JITSymbolFlags::Exported};
        return map;
      });
  }
  auto *exe = new EmberExecutable;
  exe->engine = std::move(*engine);
  return exe;
}

void *emberExecutableLookupPacked(EmberExecutable *exe, MlirStringRef name) {
  auto fn = exe->engine->lookupPacked(unwrap(name));
  if (!fn) {
    llvm::consumeError(fn.takeError());
    return nullptr;
  }
  return reinterpret_cast<void *>(*fn);
}

void emberExecutableDestroy(EmberExecutable *exe) { delete exe; }
