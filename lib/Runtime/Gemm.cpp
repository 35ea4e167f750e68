//===- Gemm.cpp - GEMM entry points of compiled code ----------------------===//
//
// Large f32/f64 contractions call CBLAS (OpenBLAS, when an embedder provides
// it), small ones the runtime's own kernel (SmallGemm.cpp).
//
//===----------------------------------------------------------------------===//
#include "RuntimeEntries.h"
#include "SmallGemm.h"

#include "ember-c/Runtime.h"

#include <cstdint>

namespace {
// cblas_?gemm with 32-bit integers (CblasRowMajor = 101, CblasNoTrans = 111,
// CblasTrans = 112), e.g. from scipy-openblas32; null until an embedder
// provides them.
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float *,
                            int, const float *, int, float, float *, int);
using CblasDgemm = void (*)(int, int, int, int, int, int, double,
                            const double *, int, const double *, int, double,
                            double *, int);
CblasSgemm cblasSgemm = nullptr;
CblasDgemm cblasDgemm = nullptr;

/// C[i,j] = sum_p A[i,p] B[p,j] for one row-major matrix, without BLAS:
/// each row of C written once per term (the first term initializes it).
template <typename T>
void referenceGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   const T *a, const T *b, T *c) {
  for (int64_t i = 0; i < m; ++i) {
    T *row = c + i * n;
    if (k == 0)
      for (int64_t j = 0; j < n; ++j)
        row[j] = T(0);
    for (int64_t p = 0; p < k; ++p) {
      T x = ta ? a[p * m + i] : a[i * k + p];
      if (p == 0)
        for (int64_t j = 0; j < n; ++j)
          row[j] = x * (tb ? b[j * k] : b[j]);
      else
        for (int64_t j = 0; j < n; ++j)
          row[j] += x * (tb ? b[j * k + p] : b[p * n + j]);
    }
  }
}

/// An outer product (k = 1, or an empty product) runs as the loops above,
/// writing C once: OpenBLAS and the small kernel pack their operands for a
/// depth that is not there. Compiled code keeps shallow products as loop
/// nests when their depth is known (LowerDot.cpp's kGemmMinDepth); a
/// program compiled for every size (python/ember/_src/dynamic_shapes.py)
/// learns it at run time. (Deeper ones stay with the packing kernels: the
/// loops above write C once per term.)
constexpr int64_t kShallowDepth = 2;

template <typename T, typename Blas>
void gemm(Blas blas, int64_t ta, int64_t tb, int64_t batch, int64_t m,
          int64_t n, int64_t k, intptr_t aAddr, intptr_t bAddr,
          intptr_t cAddr) {
  auto *a = reinterpret_cast<const T *>(aAddr);
  auto *b = reinterpret_cast<const T *>(bAddr);
  auto *c = reinterpret_cast<T *>(cAddr);
  for (int64_t i = 0; i < batch; ++i) {
    const T *ai = a + i * m * k, *bi = b + i * k * n;
    T *ci = c + i * m * n;
    if (k < kShallowDepth)
      referenceGemm(ta, tb, m, n, k, ai, bi, ci);
    else if (ember::runtime::smallGemmAvailable() &&
             (!blas || ember::runtime::smallGemmPreferred(m, n, k)))
      ember::runtime::smallGemm(ta, tb, m, n, k, ai, bi, ci);
    else if (blas)
      blas(101, ta ? 112 : 111, tb ? 112 : 111, (int)m, (int)n, (int)k, T(1),
           ai, ta ? (int)m : (int)k, bi, tb ? (int)k : (int)n, T(0), ci,
           (int)n);
    else
      referenceGemm(ta, tb, m, n, k, ai, bi, ci);
  }
}
} // namespace

namespace {
template <typename T>
void packGemmB(int64_t tb, int64_t n, int64_t k, intptr_t b, intptr_t packed) {
  if (ember::runtime::smallGemmAvailable())
    ember::runtime::packB(tb, n, k, reinterpret_cast<const T *>(b),
                          reinterpret_cast<T *>(packed));
}

template <typename T, typename Blas>
void packedGemm(Blas blas, int64_t ta, int64_t tb, int64_t m, int64_t n,
                int64_t k, intptr_t a, intptr_t b, intptr_t packed,
                intptr_t c) {
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
extern "C" void ember_gemm_pack_f32(int64_t tb, int64_t n, int64_t k,
                                    intptr_t b, intptr_t packed) {
  packGemmB<float>(tb, n, k, b, packed);
}
extern "C" void ember_gemm_pack_f64(int64_t tb, int64_t n, int64_t k,
                                    intptr_t b, intptr_t packed) {
  packGemmB<double>(tb, n, k, b, packed);
}
extern "C" void ember_gemm_packed_f32(int64_t ta, int64_t tb, int64_t m,
                                      int64_t n, int64_t k, intptr_t a,
                                      intptr_t b, intptr_t packed, intptr_t c) {
  packedGemm<float>(cblasSgemm, ta, tb, m, n, k, a, b, packed, c);
}
extern "C" void ember_gemm_packed_f64(int64_t ta, int64_t tb, int64_t m,
                                      int64_t n, int64_t k, intptr_t a,
                                      intptr_t b, intptr_t packed, intptr_t c) {
  packedGemm<double>(cblasDgemm, ta, tb, m, n, k, a, b, packed, c);
}

extern "C" void ember_gemm_f32(int64_t ta, int64_t tb, int64_t batch, int64_t m,
                               int64_t n, int64_t k, intptr_t a, intptr_t b,
                               intptr_t c) {
  gemm<float>(cblasSgemm, ta, tb, batch, m, n, k, a, b, c);
}

extern "C" void ember_gemm_f64(int64_t ta, int64_t tb, int64_t batch, int64_t m,
                               int64_t n, int64_t k, intptr_t a, intptr_t b,
                               intptr_t c) {
  gemm<double>(cblasDgemm, ta, tb, batch, m, n, k, a, b, c);
}

void emberRuntimeSetCblasGemm(void *sgemm, void *dgemm) {
  cblasSgemm = reinterpret_cast<CblasSgemm>(sgemm);
  cblasDgemm = reinterpret_cast<CblasDgemm>(dgemm);
}
