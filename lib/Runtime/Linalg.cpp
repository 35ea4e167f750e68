//===- Linalg.cpp - dense linear algebra for compiled code ----------------===//
//
// `ember.cholesky`, `ember.eigh`, `ember.lu`, `ember.qr`, `ember.svd` and
// `ember.triangular_solve` lower to these entries. They call LAPACK's potrf,
// getrf, syevd/heevd, geqrf + orgqr/ungqr and gesdd and BLAS's trsm when an
// embedder registers them (emberRuntimeSetLapackFunction; Python registers
// scipy-openblas32's, the library it already uses for GEMM) and plain loops
// otherwise (complex eigh and svd excepted: NaNs), so C API embedders and
// mlir-runner need nothing extra.
// Matrices are row-major and contiguous.
//
//===----------------------------------------------------------------------===//
#include "RuntimeEntries.h"

#include "ember-c/Runtime.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>
#include <vector>

namespace {
using C64 = std::complex<float>;
using C128 = std::complex<double>;

/// The library functions for element type T, null until an embedder
/// registers them: LAPACKE_?potrf(layout, uplo, n, a, lda),
/// LAPACKE_?getrf(layout, m, n, a, lda, ipiv) and cblas_?trsm(layout, side,
/// uplo, trans, diag, m, n, alpha, a, lda, b, ldb), 32-bit integers (alpha
/// by value for real types, by address for complex ones).
template <typename T> struct Lapack {
  static inline int (*potrf)(int, char, int, T *, int) = nullptr;
  static inline int (*getrf)(int, int, int, T *, int, int *) = nullptr;
  static inline void *trsm = nullptr;
  /// LAPACKE_?syevd / ?heevd(layout, jobz, uplo, n, a, lda, w), w real.
  static inline void *evd = nullptr;
  /// LAPACKE_?geqrf(layout, m, n, a, lda, tau) and ?orgqr / ?ungqr(layout,
  /// m, n, k, a, lda, tau).
  static inline int (*geqrf)(int, int, int, T *, int, T *) = nullptr;
  static inline int (*orgqr)(int, int, int, int, T *, int, const T *) = nullptr;
  /// LAPACKE_?gesdd(layout, jobz, m, n, a, lda, s, u, ldu, vt, ldvt), s
  /// real.
  static inline void *gesdd = nullptr;
};

constexpr int kColMajor = 102, kRowMajor = 101, kLeft = 141, kUpper = 121,
              kLower = 122, kNoTrans = 111, kTrans = 112, kNonUnit = 131,
              kUnit = 132;

template <typename T>
constexpr bool kIsComplex = std::is_same_v<T, C64> || std::is_same_v<T, C128>;

template <typename T> T conjOf(T x) {
  if constexpr (kIsComplex<T>)
    return std::conj(x);
  else
    return x;
}

/// The rows x cols identity (ones on the leading diagonal), row-major.
template <typename T> void setIdentity(T *x, int64_t rows, int64_t cols) {
  std::fill(x, x + rows * cols, T(0));
  for (int64_t i = 0; i < std::min(rows, cols); ++i)
    x[i * cols + i] = T(1);
}

/// The row-major lower triangle is the column-major upper one (of the
/// transpose, which for a Hermitian matrix is its conjugate): potrf('U')
/// leaves L in place, row-major, with no transposes.
template <typename T> int potrf(T *a, int n) {
  return Lapack<T>::potrf(kColMajor, 'U', n, a, n);
}
template <typename T> int getrf(T *a, int m, int n, int *ipiv) {
  return Lapack<T>::getrf(kRowMajor, m, n, a, n, ipiv);
}
template <typename T>
void trsm(int uplo, int trans, int diag, int n, int k, const T *a, T *b) {
  if constexpr (kIsComplex<T>) {
    using Fn = void (*)(int, int, int, int, int, int, int, const void *,
                        const void *, int, void *, int);
    T one(1);
    reinterpret_cast<Fn>(Lapack<T>::trsm)(kRowMajor, kLeft, uplo, trans, diag,
                                          n, k, &one, a, n, b, k);
  } else {
    using Fn = void (*)(int, int, int, int, int, int, int, T, const T *, int,
                        T *, int);
    reinterpret_cast<Fn>(Lapack<T>::trsm)(kRowMajor, kLeft, uplo, trans, diag,
                                          n, k, T(1), a, n, b, k);
  }
}

/// Row-major lower Cholesky in place (reading the lower triangle); false
/// when the matrix is not positive definite.
template <typename T> bool referenceCholesky(T *a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    auto d = std::real(a[j * n + j]);
    for (int64_t p = 0; p < j; ++p)
      d -= std::norm(a[j * n + p]);
    if (!(d > 0))
      return false;
    d = std::sqrt(d);
    a[j * n + j] = T(d);
    for (int64_t i = j + 1; i < n; ++i) {
      T s = a[i * n + j];
      for (int64_t p = 0; p < j; ++p)
        s -= a[i * n + p] * conjOf(a[j * n + p]);
      a[i * n + j] = s / T(d);
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
    bool ok = Lapack<T>::potrf && n <= INT32_MAX ? potrf(a, int(n)) == 0
                                                 : referenceCholesky(a, n);
    // Not positive definite: NaN in the lower triangle (JAX's result);
    // the upper one is zero either way.
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        if (j > i)
          a[i * n + j] = T(0);
        else if (!ok)
          a[i * n + j] =
              T(std::numeric_limits<decltype(std::real(a[0]))>::quiet_NaN());
  }
}

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
    if (Lapack<T>::getrf && m <= INT32_MAX && n <= INT32_MAX && k > 0) {
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

/// Cyclic Jacobi on a real symmetric row-major matrix (both triangles
/// filled): a becomes diagonal (the eigenvalues), v the eigenvectors as
/// columns. Stops when the off-diagonal mass is below epsilon relative to
/// the whole, or after 100 sweeps.
template <typename T> void referenceJacobi(T *a, T *v, int64_t n) {
  setIdentity(v, n, n);
  T eps = std::numeric_limits<T>::epsilon();
  for (int sweep = 0; sweep < 100; ++sweep) {
    T off = 0, all = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        all += a[i * n + j] * a[i * n + j];
        if (i != j)
          off += a[i * n + j] * a[i * n + j];
      }
    if (off <= eps * eps * all)
      return;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        T apq = a[p * n + q];
        if (apq == T(0))
          continue;
        T theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        T t = (theta >= 0 ? T(1) : T(-1)) /
              (std::abs(theta) + std::sqrt(theta * theta + 1));
        T c = 1 / std::sqrt(t * t + 1), s = t * c;
        auto rotate = [&](T &x, T &y) {
          T xp = x, yq = y;
          x = c * xp - s * yq;
          y = s * xp + c * yq;
        };
        for (int64_t k = 0; k < n; ++k)
          rotate(a[k * n + p], a[k * n + q]); // columns
        for (int64_t k = 0; k < n; ++k)
          rotate(a[p * n + k], a[q * n + k]); // rows
        for (int64_t k = 0; k < n; ++k)
          rotate(v[k * n + p], v[k * n + q]);
      }
  }
}

template <typename T, typename R>
void eigh(int64_t batch, int64_t n, const T *in, T *vectors, R *values) {
  size_t size = size_t(n) * size_t(n);
  std::memcpy(vectors, in, batch * size * sizeof(T));
  std::vector<T> a, v;
  std::vector<int64_t> order(n);
  for (int64_t b = 0; b < batch; ++b) {
    T *x = vectors + b * size;
    R *w = values + b * n;
    bool ok = true;
    if (Lapack<T>::evd && n <= INT32_MAX) {
      using Fn = int (*)(int, char, char, int, T *, int, R *);
      ok = n == 0 || reinterpret_cast<Fn>(Lapack<T>::evd)(
                         kRowMajor, 'V', 'L', int(n), x, int(n), w) == 0;
    } else if constexpr (!kIsComplex<T>) {
      a.assign(x, x + size);
      for (int64_t i = 0; i < n; ++i) // the lower triangle, mirrored
        for (int64_t j = i + 1; j < n; ++j)
          a[i * n + j] = a[j * n + i];
      v.resize(size);
      referenceJacobi(a.data(), v.data(), n);
      for (int64_t i = 0; i < n; ++i)
        order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
        return a[i * n + i] < a[j * n + j];
      });
      for (int64_t k = 0; k < n; ++k) {
        w[k] = a[order[k] * n + order[k]];
        for (int64_t i = 0; i < n; ++i)
          x[i * n + k] = v[i * n + order[k]];
      }
    } else {
      ok = false; // complex matrices need LAPACK (docs/decisions.md)
    }
    if (!ok) {
      for (size_t i = 0; i < size; ++i)
        x[i] = T(std::numeric_limits<R>::quiet_NaN());
      for (int64_t i = 0; i < n; ++i)
        w[i] = std::numeric_limits<R>::quiet_NaN();
    }
  }
}

/// Householder QR of the row-major m x n matrix `a` as LAPACK's geqr2 and
/// ung2r compute it (each reflector H = I - tau v v^H makes a diagonal
/// entry real, R's diagonal signs are LAPACK's): `a` becomes R (its lower
/// part is left as is) and `q` (m x m) the product of the reflectors.
template <typename T> void referenceQr(T *a, int64_t m, int64_t n, T *q) {
  using R = decltype(std::real(T()));
  setIdentity(q, m, m);
  std::vector<T> v(m);
  for (int64_t j = 0; j < std::min(m, n); ++j) {
    T alpha = a[j * n + j];
    R xnorm = 0;
    for (int64_t i = j + 1; i < m; ++i)
      xnorm = std::hypot(xnorm, std::abs(a[i * n + j]));
    if (xnorm == 0 && std::imag(alpha) == R(0))
      continue; // H = I
    R beta =
        -std::copysign(std::hypot(std::abs(alpha), xnorm), std::real(alpha));
    T tau = (T(beta) - alpha) / T(beta), scale = T(1) / (alpha - T(beta));
    v[j] = T(1);
    for (int64_t i = j + 1; i < m; ++i)
      v[i] = a[i * n + j] * scale;
    // a <- H^H a on columns j.. (column j becomes (beta, 0, ...)).
    for (int64_t c = j; c < n; ++c) {
      T dot = 0;
      for (int64_t i = j; i < m; ++i)
        dot += conjOf(v[i]) * a[i * n + c];
      dot *= conjOf(tau);
      for (int64_t i = j; i < m; ++i)
        a[i * n + c] -= v[i] * dot;
    }
    // q <- q H.
    for (int64_t r = 0; r < m; ++r) {
      T dot = 0;
      for (int64_t i = j; i < m; ++i)
        dot += q[r * m + i] * v[i];
      dot *= tau;
      for (int64_t i = j; i < m; ++i)
        q[r * m + i] -= dot * conjOf(v[i]);
    }
  }
}

/// QR of each m x n matrix: q is m x qc and r is qc x n, qc = m with `full`
/// and min(m, n) otherwise (LAPACK's geqrf and orgqr/ungqr).
template <typename T>
void qr(int64_t batch, int64_t m, int64_t n, bool full, const T *in, T *q,
        T *r) {
  int64_t k = std::min(m, n), qc = full ? m : k;
  std::vector<T> a(size_t(m) * n), tau(k), qq;
  for (int64_t b = 0; b < batch; ++b) {
    std::copy(in + b * m * n, in + (b + 1) * m * n, a.begin());
    T *qb = q + b * m * qc, *rb = r + b * qc * n;
    bool lapack = Lapack<T>::geqrf && Lapack<T>::orgqr && k > 0 &&
                  m <= INT32_MAX && n <= INT32_MAX;
    if (lapack) {
      Lapack<T>::geqrf(kRowMajor, int(m), int(n), a.data(), int(n), tau.data());
      // The reflectors (below the diagonal of a's first k columns) in q's
      // first columns; orgqr forms q from them.
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < qc; ++j)
          qb[i * qc + j] = j < n ? a[i * n + j] : T(0);
      Lapack<T>::orgqr(kRowMajor, int(m), int(qc), int(k), qb, int(qc),
                       tau.data());
    } else {
      qq.resize(size_t(m) * m);
      referenceQr(a.data(), m, n, qq.data());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < qc; ++j)
          qb[i * qc + j] = qq[i * m + j];
    }
    for (int64_t i = 0; i < qc; ++i)
      for (int64_t j = 0; j < n; ++j)
        rb[i * n + j] = i <= j && i < m ? a[i * n + j] : T(0);
  }
}

/// One-sided (Hestenes) Jacobi on the columns of the real row-major m x n
/// matrix w (m >= n): w <- w V with orthogonal columns, V in v (n x n).
template <typename T>
void referenceJacobiColumns(T *w, T *v, int64_t m, int64_t n) {
  setIdentity(v, n, n);
  T eps = std::numeric_limits<T>::epsilon();
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        T alpha = 0, beta = 0, gamma = 0;
        for (int64_t i = 0; i < m; ++i) {
          alpha += w[i * n + p] * w[i * n + p];
          beta += w[i * n + q] * w[i * n + q];
          gamma += w[i * n + p] * w[i * n + q];
        }
        if (!(std::abs(gamma) > eps * std::sqrt(alpha * beta)))
          continue;
        rotated = true;
        T zeta = (beta - alpha) / (2 * gamma);
        T t = (zeta >= 0 ? T(1) : T(-1)) /
              (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
        T c = 1 / std::sqrt(1 + t * t), s = c * t;
        auto rotate = [&](T *x, int64_t rows) {
          for (int64_t i = 0; i < rows; ++i) {
            T xp = x[i * n + p], xq = x[i * n + q];
            x[i * n + p] = c * xp - s * xq;
            x[i * n + q] = s * xp + c * xq;
          }
        };
        rotate(w, m);
        rotate(v, n);
      }
    if (!rotated)
      return;
  }
}

/// SVD of one real row-major m x n matrix `a` (m >= n) by one-sided Jacobi:
/// s descending, u m x uc (from a QR of the rotated columns, which also
/// completes it for zero singular values and full matrices), vt n x n.
template <typename T>
void referenceSvdTall(const T *a, int64_t m, int64_t n, int64_t uc, T *s, T *u,
                      T *vt) {
  std::vector<T> w(a, a + m * n), v(size_t(n) * n), q(size_t(m) * m);
  referenceJacobiColumns(w.data(), v.data(), m, n);
  std::vector<T> norms(n);
  std::vector<int64_t> order(n);
  for (int64_t j = 0; j < n; ++j) {
    T sq = 0;
    for (int64_t i = 0; i < m; ++i)
      sq += w[i * n + j] * w[i * n + j];
    norms[j] = std::sqrt(sq);
    order[j] = j;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t i, int64_t j) { return norms[i] > norms[j]; });
  std::vector<T> ws(size_t(m) * n);
  for (int64_t j = 0; j < n; ++j) {
    s[j] = norms[order[j]];
    for (int64_t i = 0; i < m; ++i)
      ws[i * n + j] = w[i * n + order[j]];
    if (vt)
      for (int64_t i = 0; i < n; ++i)
        vt[j * n + i] = v[i * n + order[j]];
  }
  if (!u)
    return;
  referenceQr(ws.data(), m, n, q.data()); // ws becomes R, diagonal +-s
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < uc; ++j)
      u[i * uc + j] = j < n && ws[j * n + j] < 0 ? -q[i * m + j] : q[i * m + j];
}

/// SVD of each m x n matrix (LAPACK's gesdd): s (k = min(m, n), real,
/// descending), and with `u` u (m x uc) and vh (vr x n), uc = vr = m, n with
/// `full` and k otherwise.
template <typename T, typename R>
void svd(int64_t batch, int64_t m, int64_t n, bool full, const T *in, R *s,
         T *u, T *vh) {
  int64_t k = std::min(m, n), uc = full ? m : k, vr = full ? n : k;
  std::vector<T> a(size_t(m) * n), at;
  std::vector<R> sr;
  for (int64_t b = 0; b < batch; ++b) {
    std::copy(in + b * m * n, in + (b + 1) * m * n, a.begin());
    R *sb = s + b * k;
    T *ub = u ? u + b * m * uc : nullptr, *vb = u ? vh + b * vr * n : nullptr;
    bool ok = true;
    if (k == 0) {
      // Nothing to factor: full u and vh are identities.
    } else if (Lapack<T>::gesdd && m <= INT32_MAX && n <= INT32_MAX) {
      // (Row-major LAPACKE transposes to gesdd's column-major a: the signs
      // of the singular vectors are then NumPy's and JAX's.)
      using Fn =
          int (*)(int, char, int, int, T *, int, R *, T *, int, T *, int);
      T scratch[1];
      ok = reinterpret_cast<Fn>(Lapack<T>::gesdd)(
               kRowMajor, u ? (full ? 'A' : 'S') : 'N', int(m), int(n),
               a.data(), int(n), sb, ub ? ub : scratch,
               int(std::max<int64_t>(uc, 1)), ub ? vb : scratch, int(n)) == 0;
    } else if constexpr (!kIsComplex<T>) {
      if (m >= n) {
        referenceSvdTall(a.data(), m, n, uc, sb, ub, vb);
      } else { // a^T = v s u^T
        at.resize(size_t(m) * n);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            at[j * m + i] = a[i * n + j];
        std::vector<T> ut(ub ? size_t(n) * vr : 0), vt(ub ? size_t(m) * m : 0);
        referenceSvdTall(at.data(), n, m, vr, sb, ub ? ut.data() : nullptr,
                         ub ? vt.data() : nullptr);
        if (ub) {
          for (int64_t i = 0; i < m; ++i) // u = (vt)^T, m x m
            for (int64_t j = 0; j < m; ++j)
              ub[i * uc + j] = vt[j * m + i];
          for (int64_t i = 0; i < vr; ++i) // vh = (ut)^T
            for (int64_t j = 0; j < n; ++j)
              vb[i * n + j] = ut[j * vr + i];
        }
      }
    } else {
      ok = false; // complex matrices need LAPACK (docs/decisions.md)
    }
    if (ub && k == 0) {
      setIdentity(ub, m, uc);
      setIdentity(vb, vr, n);
    }
    if (!ok) {
      R nan = std::numeric_limits<R>::quiet_NaN();
      std::fill(sb, sb + k, nan);
      if (ub) {
        std::fill(ub, ub + m * uc, T(nan));
        std::fill(vb, vb + vr * n, T(nan));
      }
    }
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
    if (Lapack<T>::trsm && n <= INT32_MAX && k <= INT32_MAX && n > 0 && k > 0)
      trsm(lower ? kLower : kUpper, trans ? kTrans : kNoTrans,
           unit ? kUnit : kNonUnit, int(n), int(k), ai, xi);
    else
      referenceSolve(lower, trans, unit, n, k, ai, xi);
  }
}
} // namespace

// The entries of each element type (Runtime.def): SUFFIX, C++ type.
#define EMBER_LINALG_ENTRIES(SUFFIX, T)                                        \
  extern "C" void ember_cholesky_##SUFFIX(int64_t batch, int64_t n,            \
                                          intptr_t a, intptr_t out) {          \
    cholesky(batch, n, reinterpret_cast<const T *>(a),                         \
             reinterpret_cast<T *>(out));                                      \
  }                                                                            \
  extern "C" void ember_eigh_##SUFFIX(int64_t batch, int64_t n, intptr_t a,    \
                                      intptr_t vectors, intptr_t values) {     \
    eigh(batch, n, reinterpret_cast<const T *>(a),                             \
         reinterpret_cast<T *>(vectors),                                       \
         reinterpret_cast<decltype(std::real(T())) *>(values));                \
  }                                                                            \
  extern "C" void ember_lu_##SUFFIX(int64_t batch, int64_t m, int64_t n,       \
                                    intptr_t a, intptr_t out, intptr_t piv,    \
                                    intptr_t perm) {                           \
    lu(batch, m, n, reinterpret_cast<const T *>(a),                            \
       reinterpret_cast<T *>(out), reinterpret_cast<int32_t *>(piv),           \
       reinterpret_cast<int32_t *>(perm));                                     \
  }                                                                            \
  extern "C" void ember_qr_##SUFFIX(int64_t batch, int64_t m, int64_t n,       \
                                    int64_t full, intptr_t a, intptr_t q,      \
                                    intptr_t r) {                              \
    qr(batch, m, n, full, reinterpret_cast<const T *>(a),                      \
       reinterpret_cast<T *>(q), reinterpret_cast<T *>(r));                    \
  }                                                                            \
  extern "C" void ember_svd_##SUFFIX(int64_t batch, int64_t m, int64_t n,      \
                                     int64_t full, intptr_t a, intptr_t s,     \
                                     intptr_t u, intptr_t vh) {                \
    svd(batch, m, n, full, reinterpret_cast<const T *>(a),                     \
        reinterpret_cast<decltype(std::real(T())) *>(s),                       \
        reinterpret_cast<T *>(u), reinterpret_cast<T *>(vh));                  \
  }                                                                            \
  extern "C" void ember_svd_values_##SUFFIX(                                   \
      int64_t batch, int64_t m, int64_t n, intptr_t a, intptr_t s) {           \
    svd(batch, m, n, false, reinterpret_cast<const T *>(a),                    \
        reinterpret_cast<decltype(std::real(T())) *>(s), (T *)nullptr,         \
        (T *)nullptr);                                                         \
  }                                                                            \
  extern "C" void ember_triangular_solve_##SUFFIX(                             \
      int64_t batch, int64_t n, int64_t k, int64_t lower, int64_t trans,       \
      int64_t unit, intptr_t a, intptr_t b, intptr_t out) {                    \
    triangularSolve(                                                           \
        batch, n, k, lower, trans, unit, reinterpret_cast<const T *>(a),       \
        reinterpret_cast<const T *>(b), reinterpret_cast<T *>(out));           \
  }
EMBER_LINALG_ENTRIES(f32, float)
EMBER_LINALG_ENTRIES(f64, double)
EMBER_LINALG_ENTRIES(c64, C64)
EMBER_LINALG_ENTRIES(c128, C128)
#undef EMBER_LINALG_ENTRIES

bool emberRuntimeSetLapackFunction(MlirStringRef name, void *fn) {
  std::string_view n(name.data, name.length);
  auto set = [&](auto *t, char kind) {
    using T = std::remove_pointer_t<decltype(t)>;
    if (kind == 'p')
      Lapack<T>::potrf = reinterpret_cast<decltype(Lapack<T>::potrf)>(fn);
    else if (kind == 'g')
      Lapack<T>::getrf = reinterpret_cast<decltype(Lapack<T>::getrf)>(fn);
    else if (kind == 't')
      Lapack<T>::trsm = fn;
    else if (kind == 'q')
      Lapack<T>::geqrf = reinterpret_cast<decltype(Lapack<T>::geqrf)>(fn);
    else if (kind == 'o')
      Lapack<T>::orgqr = reinterpret_cast<decltype(Lapack<T>::orgqr)>(fn);
    else if (kind == 's')
      Lapack<T>::gesdd = fn;
    else
      Lapack<T>::evd = fn;
    return true;
  };
  if (n.empty())
    return false;
  std::string_view op = n.substr(1);
  bool real = n[0] == 's' || n[0] == 'd';
  char kind = op == "potrf"                      ? 'p'
              : op == "getrf"                    ? 'g'
              : op == "trsm"                     ? 't'
              : op == (real ? "syevd" : "heevd") ? 'e'
              : op == "geqrf"                    ? 'q'
              : op == (real ? "orgqr" : "ungqr") ? 'o'
              : op == "gesdd"                    ? 's'
                                                 : 0;
  if (!kind)
    return false;
  switch (n[0]) {
  case 's':
    return set(static_cast<float *>(nullptr), kind);
  case 'd':
    return set(static_cast<double *>(nullptr), kind);
  case 'c':
    return set(static_cast<C64 *>(nullptr), kind);
  case 'z':
    return set(static_cast<C128 *>(nullptr), kind);
  default:
    return false;
  }
}
