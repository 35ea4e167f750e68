//===- Fft.cpp - discrete Fourier transforms for compiled code ------------===//
//
// `ember.fft` lowers to `ember_fft_{f32,f64,c64,c128}` (by the operand's
// element type). They call the FFT an embedder registers
// (emberRuntimeSetFftFunction; Python registers SciPy's pocketfft, the FFT
// NumPy and SciPy ship) and otherwise compute each one-dimensional DFT
// directly in double precision, O(n^2) per line, so that C API embedders and
// mlir-runner need nothing extra. No FFT library with a C interface is
// installable from PyPI without FFTW's GPL, hence the registration rather
// than a dependency (docs/design.md, "FFT").
//
//===----------------------------------------------------------------------===//
#include "RuntimeEntries.h"

#include "ember-c/Runtime.h"

#include <cmath>
#include <complex>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace {
using C = std::complex<double>;

EmberFftFunction registered = nullptr;

enum Kind : int64_t { kFft = 0, kIfft = 1, kRfft = 2, kIrfft = 3 };

/// In-place DFT of every line along dimension `axis` of the row-major array
/// `a` of shape `dims` (inverse: the conjugate kernel, unscaled).
void dftAlong(std::vector<C> &a, const std::vector<int64_t> &dims, size_t axis,
              bool inverse) {
  int64_t n = dims[axis], inner = 1, outer = 1;
  for (size_t d = axis + 1; d < dims.size(); ++d)
    inner *= dims[d];
  for (size_t d = 0; d < axis; ++d)
    outer *= dims[d];
  if (n <= 1)
    return;
  const double sign = inverse ? 1.0 : -1.0;
  std::vector<C> w(n), line(n);
  for (int64_t k = 0; k < n; ++k) {
    double phase = sign * 2.0 * M_PI * double(k) / double(n);
    w[k] = C(std::cos(phase), std::sin(phase));
  }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      C *base = a.data() + o * n * inner + i;
      for (int64_t k = 0; k < n; ++k) {
        C sum = 0;
        for (int64_t j = 0; j < n; ++j)
          sum += base[j * inner] * w[(j * k) % n];
        line[k] = sum;
      }
      for (int64_t k = 0; k < n; ++k)
        base[k * inner] = line[k];
    }
}

/// The transform of one batch element: `in` and `out` as complex<double>
/// arrays of the operand's and result's trailing shape (real ones widened).
void reference(Kind kind, const std::vector<int64_t> &n,
               const std::vector<C> &in, std::vector<C> &out) {
  size_t k = n.size();
  int64_t total = 1;
  for (int64_t v : n)
    total *= v;
  if (kind == kFft || kind == kIfft || kind == kRfft) {
    std::vector<C> a = in;
    for (size_t d = 0; d < k; ++d)
      dftAlong(a, n, d, kind == kIfft);
    if (kind == kIfft)
      for (C &v : a)
        v /= double(total);
    if (kind != kRfft) {
      out = a;
      return;
    }
    // The non-negative frequencies of the last dimension.
    int64_t last = n.back(), half = last / 2 + 1;
    out.assign(total / std::max<int64_t>(last, 1) * half, 0);
    for (int64_t r = 0; r < total / std::max<int64_t>(last, 1); ++r)
      for (int64_t j = 0; j < half; ++j)
        out[r * half + j] = a[r * last + j];
    return;
  }
  // IRFFT: the inverse over the other dimensions first, then each line of
  // the last one made whole (X[n - j] = conj(X[j])) and inverted; the real
  // part.
  int64_t last = n.back(), half = last / 2 + 1;
  std::vector<int64_t> halfDims = n;
  halfDims.back() = half;
  std::vector<C> a = in;
  for (size_t d = 0; d + 1 < k; ++d)
    dftAlong(a, halfDims, d, true);
  int64_t rows = total / std::max<int64_t>(last, 1);
  std::vector<C> full(rows * last);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < last; ++j)
      full[r * last + j] =
          j < half ? a[r * half + j] : std::conj(a[r * half + (last - j)]);
  dftAlong(full, n, k - 1, true);
  out.resize(full.size());
  for (size_t i = 0; i < full.size(); ++i)
    out[i] = C(full[i].real() / double(total), 0);
}

/// ember_fft_* for operand element type In (float, double or their complex
/// types); the result's element type follows from the kind.
template <typename In>
void fft(int64_t batch, int64_t kind, int64_t ndims, const int64_t *lengths,
         intptr_t inAddr, intptr_t outAddr) {
  using Real = decltype(std::real(In()));
  std::vector<int64_t> n(lengths, lengths + ndims);
  if (registered) {
    registered(kind, std::is_same_v<Real, double>, batch, ndims, n.data(),
               reinterpret_cast<const void *>(inAddr),
               reinterpret_cast<void *>(outAddr));
    return;
  }
  int64_t total = 1;
  for (int64_t v : n)
    total *= v;
  int64_t last = n.empty() ? 1 : n.back();
  int64_t halfTotal = last ? total / last * (last / 2 + 1) : 0;
  int64_t inSize = kind == kIrfft ? halfTotal : total;
  int64_t outSize = kind == kRfft ? halfTotal : total;
  bool complexOut = kind != kIrfft;
  const In *in = reinterpret_cast<const In *>(inAddr);
  std::vector<C> a(inSize), b;
  for (int64_t e = 0; e < batch; ++e) {
    for (int64_t i = 0; i < inSize; ++i)
      a[i] = C(in[e * inSize + i]);
    reference(Kind(kind), n, a, b);
    if (complexOut) {
      auto *out = reinterpret_cast<std::complex<Real> *>(outAddr) + e * outSize;
      for (int64_t i = 0; i < outSize; ++i)
        out[i] = std::complex<Real>(Real(b[i].real()), Real(b[i].imag()));
    } else {
      auto *out = reinterpret_cast<Real *>(outAddr) + e * outSize;
      for (int64_t i = 0; i < outSize; ++i)
        out[i] = Real(b[i].real());
    }
  }
}
} // namespace

#define EMBER_FFT_ENTRY(SUFFIX, T)                                             \
  extern "C" void ember_fft_##SUFFIX(int64_t batch, int64_t kind,              \
                                     int64_t ndims, int64_t n0, int64_t n1,    \
                                     int64_t n2, intptr_t in, intptr_t out) {  \
    const int64_t lengths[3] = {n0, n1, n2};                                   \
    fft<T>(batch, kind, ndims, lengths, in, out);                              \
  }
EMBER_FFT_ENTRY(f32, float)
EMBER_FFT_ENTRY(f64, double)
EMBER_FFT_ENTRY(c64, std::complex<float>)
EMBER_FFT_ENTRY(c128, std::complex<double>)
#undef EMBER_FFT_ENTRY

void emberRuntimeSetFftFunction(EmberFftFunction fn) { registered = fn; }
