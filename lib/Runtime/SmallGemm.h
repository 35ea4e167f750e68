//===- SmallGemm.h - Single-core GEMM kernels for small products -*- C++
//-*-===//
//
// Register-blocked row-major GEMM for the products where a BLAS library's
// packing and thread hand-off cost more than the arithmetic (e.g. the
// 32x256x256 step of a scan RNN). See docs/decisions.md, "Contractions".
//
//===----------------------------------------------------------------------===//

#ifndef EMBER_CAPI_SMALLGEMM_H
#define EMBER_CAPI_SMALLGEMM_H

#include <cstdint>

namespace ember::runtime {

/// Whether this CPU runs the kernels (AVX2 with FMA, or AVX-512F).
bool smallGemmAvailable();

/// Whether a product of this size should use the kernels rather than BLAS.
bool smallGemmPreferred(int64_t m, int64_t n, int64_t k);

/// C = op(A) op(B) for row-major A (m x k, or k x m when `ta`), B (k x n, or
/// n x k when `tb`) and C (m x n, overwritten). Requires smallGemmAvailable().
void smallGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
               const float *a, const float *b, float *c);
void smallGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
               const double *a, const double *b, double *c);

/// Elements of a buffer that holds B (k x n) packed for smallGemmPacked:
/// enough for the widest kernel's layout.
int64_t packedBSize(int64_t n, int64_t k, int64_t elementBytes);

/// Packs B (k x n, or n x k when `tb`) into `packed` (packedBSize elements),
/// in the layout of the kernel this CPU runs. Requires smallGemmAvailable().
void packB(bool tb, int64_t n, int64_t k, const float *b, float *packed);
void packB(bool tb, int64_t n, int64_t k, const double *b, double *packed);

/// smallGemm with B packed by packB (a B used by many products, such as a
/// weight in a loop, is packed once).
void smallGemmPacked(bool ta, int64_t m, int64_t n, int64_t k, const float *a,
                     const float *packed, float *c);
void smallGemmPacked(bool ta, int64_t m, int64_t n, int64_t k, const double *a,
                     const double *packed, double *c);

} // namespace ember::runtime

#endif // EMBER_CAPI_SMALLGEMM_H
