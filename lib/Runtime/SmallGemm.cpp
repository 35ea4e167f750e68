//===- SmallGemm.cpp - Single-core GEMM kernels for small products --------===//
//
// C = A B one strip of 2 vectors of columns at a time: the strip of B
// (k x 2 vectors) is copied to a contiguous panel, then blocks of R rows of C
// are accumulated in 2R vector registers over the whole contraction (two
// vector loads of the panel and R broadcasts of A, folded into the FMAs, per
// step) and stored once. Only B's strip is packed, A is read in place, and
// nothing runs on other threads: for the products these kernels take, BLAS
// libraries spend as long packing and handing work to threads as computing.
// A product whose C has one block of rows reads B in place instead (no block
// would reuse a packed strip), and one row times B^T is dot products of
// B^T's contiguous rows (docs/decisions.md, "Small products").
// The kernels are compiled for AVX-512F and for AVX2+FMA and chosen at run
// time.
//
//===----------------------------------------------------------------------===//

#include "SmallGemm.h"

#include "RuntimeEntries.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace ember::runtime {
namespace {

typedef float F32x16 __attribute__((vector_size(64), aligned(4)));
typedef float F32x8 __attribute__((vector_size(32), aligned(4)));
typedef double F64x8 __attribute__((vector_size(64), aligned(8)));
typedef double F64x4 __attribute__((vector_size(32), aligned(8)));

#define EMBER_INLINE inline __attribute__((always_inline))

/// Operand A with element (i, p) at a[i * si + p * sp].
template <typename T> struct Lhs {
  const T *a;
  int64_t si, sp;
};

/// C[0:R, 0:NV*W] = A[0:R, :] B[:, 0:NV*W] for a row-major B with row stride
/// ldb and C with row stride ldc.
template <typename V, typename T, int R, int NV>
EMBER_INLINE void microKernel(int64_t k, Lhs<T> lhs, const T *b, int64_t ldb,
                              T *c, int64_t ldc) {
  constexpr int W = sizeof(V) / sizeof(T);
  V acc[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = V{};
  for (int64_t p = 0; p < k; ++p) {
    V bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      std::memcpy(&bv[v], b + p * ldb + v * W, sizeof(V));
    const T *ap = lhs.a + p * lhs.sp;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      V av = ap[r * lhs.si] - V{}; // a splat (x - 0 is x, also for -0)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        acc[r][v] += av * bv[v];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      std::memcpy(c + r * ldc + v * W, &acc[r][v], sizeof(V));
}

/// Runs microKernel<R> on `rows` (1..R) rows.
template <typename V, typename T, int R, int NV>
EMBER_INLINE void rowBlock(int rows, int64_t k, Lhs<T> lhs, const T *b,
                           int64_t ldb, T *c, int64_t ldc) {
  if constexpr (R > 1) {
    if (rows < R)
      return rowBlock<V, T, R - 1, NV>(rows, k, lhs, b, ldb, c, ldc);
  }
  microKernel<V, T, R, NV>(k, lhs, b, ldb, c, ldc);
}

/// B with element (p, j) at b[p * sp + j * sj].
template <typename T> struct Rhs {
  const T *b;
  int64_t sp, sj;
};

/// Copies the strip of columns [j, j + cols) of B into `panel`, k rows of
/// `width` elements (zeros beyond `cols`).
template <typename T>
void packStrip(Rhs<T> rhs, int64_t k, int64_t j, int64_t cols, int64_t width,
               T *panel) {
  // Whole rows of a strip are copied with a fixed size: GCC turns a
  // variable-size memcpy into `rep movs`, slow for 64-128 bytes.
  if (rhs.sj == 1 && cols == width && width * sizeof(T) == 128) {
    for (int64_t p = 0; p < k; ++p)
      std::memcpy(panel + p * width, rhs.b + p * rhs.sp + j, 128);
  } else if (rhs.sj == 1 && cols == width && width * sizeof(T) == 64) {
    for (int64_t p = 0; p < k; ++p)
      std::memcpy(panel + p * width, rhs.b + p * rhs.sp + j, 64);
  } else if (rhs.sj == 1) { // copy rows of the strip
    for (int64_t p = 0; p < k; ++p) {
      T *dst = panel + p * width;
      std::memcpy(dst, rhs.b + p * rhs.sp + j, cols * sizeof(T));
      std::fill(dst + cols, dst + width, T(0));
    }
  } else { // B^T given: its rows are the strip's columns
    for (int64_t q = 0; q < cols; ++q) {
      const T *src = rhs.b + (j + q) * rhs.sj;
      for (int64_t p = 0; p < k; ++p)
        panel[p * width + q] = src[p * rhs.sp];
    }
    for (int64_t q = cols; q < width; ++q)
      for (int64_t p = 0; p < k; ++p)
        panel[p * width + q] = T(0);
  }
}

/// C (m x n, row stride n) = A B. Each strip of 2W columns of B (k x 2W) is
/// copied to `panel` first, so that the row blocks read it from L1 at
/// consecutive addresses (B's own rows are often a power of two apart, which
/// maps a strip onto a few cache sets); with `packed` (from packB), the
/// strips are read from there instead.
/// c[j] = a . b_j for one row `a` (k contiguous) and the rows b_j of B^T
/// (k contiguous each, `ldb` apart): a vector-matrix product with B
/// transposed, which reads B once where packing its strips would gather it
/// column by column. Two vector accumulators per dot product.
template <typename V, typename T>
EMBER_INLINE void dotRows(int64_t n, int64_t k, const T *a, const T *b,
                          int64_t ldb, T *c) {
  constexpr int W = sizeof(V) / sizeof(T);
  for (int64_t j = 0; j < n; ++j) {
    const T *bj = b + j * ldb;
    V acc0{}, acc1{};
    int64_t p = 0;
    for (; p + 2 * W <= k; p += 2 * W) {
      V x0, x1, y0, y1;
      std::memcpy(&x0, a + p, sizeof(V));
      std::memcpy(&x1, a + p + W, sizeof(V));
      std::memcpy(&y0, bj + p, sizeof(V));
      std::memcpy(&y1, bj + p + W, sizeof(V));
      acc0 += x0 * y0;
      acc1 += x1 * y1;
    }
    for (; p + W <= k; p += W) {
      V x, y;
      std::memcpy(&x, a + p, sizeof(V));
      std::memcpy(&y, bj + p, sizeof(V));
      acc0 += x * y;
    }
    acc0 += acc1;
    T sum = 0;
    for (int l = 0; l < W; ++l)
      sum += acc0[l];
    for (; p < k; ++p)
      sum += a[p] * bj[p];
    c[j] = sum;
  }
}

template <typename V, typename T, int R>
EMBER_INLINE void driver(int64_t m, int64_t n, int64_t k, Lhs<T> lhs,
                         Rhs<T> rhs, const T *packed, T *panel, T *c) {
  constexpr int W = sizeof(V) / sizeof(T);
  if (m == 1 && !packed && rhs.sp == 1 && rhs.sj != 1) {
    // One row (contiguous whatever its transposition) times B^T.
    dotRows<V, T>(n, k, lhs.a, rhs.b, rhs.sj, c);
    return;
  }
  for (int64_t j = 0; j < n; j += 2 * W) {
    int64_t cols = std::min<int64_t>(2 * W, n - j);
    int nv = cols > W ? 2 : 1;
    int64_t width = nv * W;
    const T *strip = panel;
    if (packed) {
      strip = packed + (j / (2 * W)) * k * 2 * W;
      width = 2 * W;
    } else if (rhs.sj == 1 && m <= R && cols == width) {
      // One block of rows (a matrix-vector product): no block reuses the
      // strip, so B is read in place, once, at its row stride.
      strip = rhs.b + j;
      width = rhs.sp;
    } else {
      packStrip(rhs, k, j, cols, width, panel);
    }
    for (int64_t i = 0; i < m; i += R) {
      int rows = (int)std::min<int64_t>(R, m - i);
      Lhs<T> block{lhs.a + i * lhs.si, lhs.si, lhs.sp};
      if (cols == nv * W) { // whole vectors: store straight into C
        if (nv == 2)
          rowBlock<V, T, R, 2>(rows, k, block, strip, width, c + i * n + j, n);
        else
          rowBlock<V, T, R, 1>(rows, k, block, strip, width, c + i * n + j, n);
        continue;
      }
      T tile[R * 2 * W];
      if (nv == 2)
        rowBlock<V, T, R, 2>(rows, k, block, strip, width, tile, 2 * W);
      else
        rowBlock<V, T, R, 1>(rows, k, block, strip, width, tile, 2 * W);
      for (int r = 0; r < rows; ++r)
        std::memcpy(c + (i + r) * n + j, tile + r * 2 * W, cols * sizeof(T));
    }
  }
}

#define EMBER_DRIVER(NAME, TARGET, T, V, R)                                    \
  __attribute__((target(TARGET))) void NAME(int64_t m, int64_t n, int64_t k,   \
                                            Lhs<T> lhs, Rhs<T> rhs,            \
                                            const T *packed, T *panel, T *c) { \
    driver<V, T, R>(m, n, k, lhs, rhs, packed, panel, c);                      \
  }
EMBER_DRIVER(driverAvx512, "avx512f", float, F32x16, 8)
EMBER_DRIVER(driverAvx512, "avx512f", double, F64x8, 8)
EMBER_DRIVER(driverAvx2, "avx2,fma", float, F32x8, 6)
EMBER_DRIVER(driverAvx2, "avx2,fma", double, F64x4, 6)
#undef EMBER_DRIVER

bool hasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

/// Elements per strip of B: two vectors of the kernel in use.
template <typename T> int64_t stripWidth() {
  return 2 * (hasAvx512() ? 64 : 32) / (int64_t)sizeof(T);
}

template <typename T>
void gemmImpl(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T *a,
              const T *b, const T *packed, T *c) {
  if (m == 0 || n == 0)
    return;
  Lhs<T> lhs{a, ta ? 1 : k, ta ? m : 1};
  Rhs<T> rhs{b, tb ? 1 : n, tb ? k : 1};
  // The panel: k rows of two vectors (of 64 bytes at most).
  thread_local std::vector<T> panel;
  if (!packed)
    panel.resize(k * 2 * (64 / sizeof(T)));
  if (hasAvx512())
    driverAvx512(m, n, k, lhs, rhs, packed, panel.data(), c);
  else
    driverAvx2(m, n, k, lhs, rhs, packed, panel.data(), c);
}

template <typename T>
void packImpl(bool tb, int64_t n, int64_t k, const T *b, T *packed) {
  Rhs<T> rhs{b, tb ? 1 : n, tb ? k : 1};
  int64_t width = stripWidth<T>();
  for (int64_t j = 0; j < n; j += width)
    packStrip(rhs, k, j, std::min(width, n - j), width,
              packed + (j / width) * k * width);
}

} // namespace

bool smallGemmAvailable() {
  static const bool has = hasAvx512() || (__builtin_cpu_supports("avx2") &&
                                          __builtin_cpu_supports("fma"));
  return has;
}

bool smallGemmPreferred(int64_t m, int64_t n, int64_t k) {
  // One core at its peak matches OpenBLAS on two cores up to about 2^21
  // multiply-adds (a 32x256x256 product); OpenBLAS's threads win above. In
  // a piece of a pool job (a Pallas grid's points on the threads) OpenBLAS
  // has one thread too: the kernels are faster up to 256x256x256 (a Pallas
  // matmul with such blocks 1.13-1.15x OpenBLAS's 1024^3 against 1.16-1.32)
  // and several times slower at 512^3.
  int bits = ember::runtime::inParallelPiece() ? 24 : 21;
  return m * n * k <= (int64_t(1) << bits);
}

void smallGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
               const float *a, const float *b, float *c) {
  gemmImpl(ta, tb, m, n, k, a, b, (const float *)nullptr, c);
}

void smallGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
               const double *a, const double *b, double *c) {
  gemmImpl(ta, tb, m, n, k, a, b, (const double *)nullptr, c);
}

int64_t packedBSize(int64_t n, int64_t k, int64_t elementBytes) {
  int64_t width = 2 * 64 / elementBytes; // the widest kernel's strips
  return k * ((n + width - 1) / width) * width;
}

void packB(bool tb, int64_t n, int64_t k, const float *b, float *packed) {
  packImpl(tb, n, k, b, packed);
}
void packB(bool tb, int64_t n, int64_t k, const double *b, double *packed) {
  packImpl(tb, n, k, b, packed);
}

void smallGemmPacked(bool ta, int64_t m, int64_t n, int64_t k, const float *a,
                     const float *packed, float *c) {
  gemmImpl(ta, false, m, n, k, a, (const float *)nullptr, packed, c);
}
void smallGemmPacked(bool ta, int64_t m, int64_t n, int64_t k, const double *a,
                     const double *packed, double *c) {
  gemmImpl(ta, false, m, n, k, a, (const double *)nullptr, packed, c);
}

} // namespace ember::runtime
