//===- Linalg.cpp - Cholesky and triangular solves for compiled code ------===//
//
// `ember.cholesky`, `ember.lu` and `ember.triangular_solve` lower to these
// entries. They call LAPACK's potrf and getrf and BLAS's trsm when an embedder
// registers them (emberRuntimeSetLapack; Python registers scipy-openblas32's,
// the library it already uses for GEMM) and plain loops otherwise, so C API
// embedders and mlir-runner need nothing extra. Matrices are row-major and
// contiguous.
//
//===----------------------------------------------------------------------===//
#include "RuntimeEntries.h"

#include "ember-c/Runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace {
// LAPACKE_?potrf(layout, uplo, n, a, lda) and cblas_?trsm(layout, side,
// uplo, trans, diag, m, n, alpha, a, lda, b, ldb), 32-bit integers.
using Spotrf = int (*)(int, char, int, float *, int);
using Dpotrf = int (*)(int, char, int, double *, int);
// LAPACKE_?getrf(layout, m, n, a, lda, ipiv)
using Sgetrf = int (*)(int, int, int, float *, int, int *);
using Dgetrf = int (*)(int, int, int, double *, int, int *);
using Strsm = void (*)(int, int, int, int, int, int, int, float, const float *,
                       int, float *, int);
using Dtrsm = void (*)(int, int, int, int, int, int, int, double,
                       const double *, int, double *, int);
Spotrf spotrf = nullptr;
Dpotrf dpotrf = nullptr;
Sgetrf sgetrf = nullptr;
Dgetrf dgetrf = nullptr;
Strsm strsm = nullptr;
Dtrsm dtrsm = nullptr;

constexpr int kColMajor = 102, kRowMajor = 101, kLeft = 141, kUpper = 121,
              kLower = 122, kNoTrans = 111, kTrans = 112, kNonUnit = 131,
              kUnit = 132;

int potrf(float *a, int n) { return spotrf(kColMajor, 'U', n, a, n); }
int potrf(double *a, int n) { return dpotrf(kColMajor, 'U', n, a, n); }
bool havePotrf(float *) { return spotrf; }
bool havePotrf(double *) { return dpotrf; }
void trsm(int uplo, int trans, int diag, int n, int k, const float *a,
          float *b) {
  strsm(kRowMajor, kLeft, uplo, trans, diag, n, k, 1.0f, a, n, b, k);
}
void trsm(int uplo, int trans, int diag, int n, int k, const double *a,
          double *b) {
  dtrsm(kRowMajor, kLeft, uplo, trans, diag, n, k, 1.0, a, n, b, k);
}
bool haveTrsm(float *) { return strsm; }
bool haveTrsm(double *) { return dtrsm; }

/// Row-major lower Cholesky in place (reading the lower triangle); false
/// when the matrix is not positive definite.
template <typename T> bool referenceCholesky(T *a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    T d = a[j * n + j];
    for (int64_t p = 0; p < j; ++p)
      d -= a[j * n + p] * a[j * n + p];
    if (!(d > T(0)))
      return false;
    d = std::sqrt(d);
    a[j * n + j] = d;
    for (int64_t i = j + 1; i < n; ++i) {
      T s = a[i * n + j];
      for (int64_t p = 0; p < j; ++p)
        s -= a[i * n + p] * a[j * n + p];
      a[i * n + j] = s / d;
    }
  }
  return true;
}

template <typename T>
void cholesky(int64_t batch, int64_t n, const T *in, T *out) {
  size_t size = size_t(n) * size_t(n);
  std::memcpy(out, in, batch * size * sizeof(T));
  for (int64_t b = 0; b < batch; ++b) {
    T *a = out + b * size;
    // The row-major lower triangle is the column-major upper one: potrf
    // with 'U' factors it in place without transposing.
    bool ok = havePotrf(a) && n <= INT32_MAX ? potrf(a, int(n)) == 0
                                             : referenceCholesky(a, n);
    if (!ok) {
      for (size_t i = 0; i < size; ++i)
        a[i] = std::numeric_limits<T>::quiet_NaN();
      continue;
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j)
        a[i * n + j] = T(0);
  }
}

int getrf(float *a, int m, int n, int *ipiv) {
  return sgetrf(kRowMajor, m, n, a, n, ipiv);
}
int getrf(double *a, int m, int n, int *ipiv) {
  return dgetrf(kRowMajor, m, n, a, n, ipiv);
}
bool haveGetrf(float *) { return sgetrf; }
bool haveGetrf(double *) { return dgetrf; }

/// Row-major LU with partial pivoting in place; piv[i] (0-based) is the
/// row swapped with row i at step i.
template <typename T>
void referenceLu(T *a, int64_t m, int64_t n, int32_t *piv) {
  int64_t k = std::min(m, n);
  for (int64_t j = 0; j < k; ++j) {
    int64_t p = j;
    for (int64_t i = j + 1; i < m; ++i)
      if (std::abs(a[i * n + j]) > std::abs(a[p * n + j]))
        p = i;
    piv[j] = int32_t(p);
    if (p != j)
      for (int64_t c = 0; c < n; ++c)
        std::swap(a[j * n + c], a[p * n + c]);
    T d = a[j * n + j];
    if (d == T(0))
      continue; // singular: U has a zero pivot, L's column stays
    for (int64_t i = j + 1; i < m; ++i) {
      T f = a[i * n + j] /= d;
      for (int64_t c = j + 1; c < n; ++c)
        a[i * n + c] -= f * a[j * n + c];
    }
  }
}

template <typename T>
void lu(int64_t batch, int64_t m, int64_t n, const T *in, T *out,
        int32_t *pivots, int32_t *perm) {
  int64_t k = std::min(m, n);
  std::memcpy(out, in, size_t(batch) * m * n * sizeof(T));
  std::vector<int> ipiv(k);
  for (int64_t b = 0; b < batch; ++b) {
    T *a = out + b * m * n;
    int32_t *piv = pivots + b * k, *p = perm + b * m;
    if (haveGetrf(a) && m <= INT32_MAX && n <= INT32_MAX && k > 0) {
      getrf(a, int(m), int(n), ipiv.data()); // info > 0: singular, kept
      for (int64_t i = 0; i < k; ++i)
        piv[i] = ipiv[i] - 1;
    } else {
      referenceLu(a, m, n, piv);
    }
    for (int64_t i = 0; i < m; ++i)
      p[i] = int32_t(i);
    for (int64_t i = 0; i < k; ++i)
      std::swap(p[i], p[piv[i]]);
  }
}

/// Solves op(a) x = b in place in b (n x k), by substitution.
template <typename T>
void referenceSolve(bool lower, bool trans, bool unit, int64_t n, int64_t k,
                    const T *a, T *b) {
  // op(a) is lower triangular when exactly one of lower / trans holds.
  bool forward = lower != trans;
  auto at = [&](int64_t i, int64_t j) {
    return trans ? a[j * n + i] : a[i * n + j];
  };
  for (int64_t s = 0; s < n; ++s) {
    int64_t i = forward ? s : n - 1 - s;
    T *row = b + i * k;
    for (int64_t t = 0; t < s; ++t) {
      int64_t j = forward ? t : n - 1 - t;
      T f = at(i, j);
      const T *xj = b + j * k;
      for (int64_t c = 0; c < k; ++c)
        row[c] -= f * xj[c];
    }
    if (!unit) {
      T d = at(i, i);
      for (int64_t c = 0; c < k; ++c)
        row[c] /= d;
    }
  }
}

template <typename T>
void triangularSolve(int64_t batch, int64_t n, int64_t k, bool lower,
                     bool trans, bool unit, const T *a, const T *b, T *out) {
  std::memcpy(out, b, size_t(batch) * n * k * sizeof(T));
  for (int64_t i = 0; i < batch; ++i) {
    const T *ai = a + i * n * n;
    T *xi = out + i * n * k;
    if (haveTrsm(xi) && n <= INT32_MAX && k <= INT32_MAX && n > 0 && k > 0)
      trsm(lower ? kLower : kUpper, trans ? kTrans : kNoTrans,
           unit ? kUnit : kNonUnit, int(n), int(k), ai, xi);
    else
      referenceSolve(lower, trans, unit, n, k, ai, xi);
  }
}
} // namespace

extern "C" void ember_cholesky_f32(int64_t batch, int64_t n, intptr_t a,
                                   intptr_t out) {
  cholesky(batch, n, reinterpret_cast<const float *>(a),
           reinterpret_cast<float *>(out));
}
extern "C" void ember_cholesky_f64(int64_t batch, int64_t n, intptr_t a,
                                   intptr_t out) {
  cholesky(batch, n, reinterpret_cast<const double *>(a),
           reinterpret_cast<double *>(out));
}
extern "C" void ember_lu_f32(int64_t batch, int64_t m, int64_t n, intptr_t a,
                             intptr_t out, intptr_t pivots, intptr_t perm) {
  lu(batch, m, n, reinterpret_cast<const float *>(a),
     reinterpret_cast<float *>(out), reinterpret_cast<int32_t *>(pivots),
     reinterpret_cast<int32_t *>(perm));
}
extern "C" void ember_lu_f64(int64_t batch, int64_t m, int64_t n, intptr_t a,
                             intptr_t out, intptr_t pivots, intptr_t perm) {
  lu(batch, m, n, reinterpret_cast<const double *>(a),
     reinterpret_cast<double *>(out), reinterpret_cast<int32_t *>(pivots),
     reinterpret_cast<int32_t *>(perm));
}
extern "C" void ember_triangular_solve_f32(int64_t batch, int64_t n, int64_t k,
                                           int64_t lower, int64_t trans,
                                           int64_t unit, intptr_t a, intptr_t b,
                                           intptr_t out) {
  triangularSolve(
      batch, n, k, lower, trans, unit, reinterpret_cast<const float *>(a),
      reinterpret_cast<const float *>(b), reinterpret_cast<float *>(out));
}
extern "C" void ember_triangular_solve_f64(int64_t batch, int64_t n, int64_t k,
                                           int64_t lower, int64_t trans,
                                           int64_t unit, intptr_t a, intptr_t b,
                                           intptr_t out) {
  triangularSolve(
      batch, n, k, lower, trans, unit, reinterpret_cast<const double *>(a),
      reinterpret_cast<const double *>(b), reinterpret_cast<double *>(out));
}

void emberRuntimeSetLapack(void *spotrfFn, void *dpotrfFn, void *sgetrfFn,
                           void *dgetrfFn, void *strsmFn, void *dtrsmFn) {
  spotrf = reinterpret_cast<Spotrf>(spotrfFn);
  dpotrf = reinterpret_cast<Dpotrf>(dpotrfFn);
  sgetrf = reinterpret_cast<Sgetrf>(sgetrfFn);
  dgetrf = reinterpret_cast<Dgetrf>(dgetrfFn);
  strsm = reinterpret_cast<Strsm>(strsmFn);
  dtrsm = reinterpret_cast<Dtrsm>(dtrsmFn);
}
