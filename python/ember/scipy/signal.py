"""`jax.scipy.signal`: convolution, correlation, detrending and Fourier
spectral analysis (STFT, inverse STFT, Welch's PSD and cross spectral density).

Everything is composed from public Ember ops, so `jit`, `grad`, `jvp` and
`vmap` apply; shapes, modes, windows and segment layouts are static Python
values, as in JAX:

* direct convolution/correlation is one `lax.conv_general_dilated` with a
  batch and a feature dimension of one (the "full"/"same" edges are its
  padding); `method="fft"` and `fftconvolve` multiply `jnp.fft` spectra of a
  power-of-two size;
* the STFT cuts a signal into overlapping segments without a gather: with a
  hop h and k = ceil(nperseg / h), the segments are k reshaped (nseg, h)
  views of the signal shifted by 0, h, ..., (k-1)h, concatenated; the inverse
  STFT's overlap-add is the transpose of that (k padded, reshaped sums);
* windows named by a string or a tuple are computed here in NumPy (periodic,
  as SciPy's `get_window(..., fftbins=True)`); names not listed in `_WINDOWS`
  are delegated to `scipy.signal.get_window` when SciPy is installed.

Deviations follow JAX, not SciPy: integer inputs compute in float32 (64-bit
integers in the default float), `csd(x, x)` is the general cross spectrum
(pass `y=None` for the real PSD), `convolve2d`/`correlate2d` support only
boundary="fill" with fillvalue=0, `detrend` only "linear"/"constant" (with
static breakpoints), and `istft` does not check the NOLA condition (samples
with a window-square sum below 1e-10 are left unnormalized). Where JAX 0.10
departs from SciPy by accident, Ember follows SciPy: `istft(noverlap=0)`
means no overlap, and `fftconvolve`/`convolve(method="fft")` of float16
inputs compute in float32 (and return float16) instead of raising.
"""

import operator
import warnings

import numpy as np

import ember.numpy as jnp
from ember import lax
from ember._src import dtypes
from ember._src.config import config

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend",
           "fftconvolve", "istft", "stft", "welch"]


# --------------------------------------------------------------------------
# dtypes and small helpers
# --------------------------------------------------------------------------


def _inexact_dtype(dtype):
    """JAX's inexact dtype for an input of `dtype`: bool and integers up to 32
    bits become float32, 64-bit integers the default float; float64 is float32
    unless x64 is on."""
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return np.dtype(np.float64 if config.jax_enable_x64 else np.float32)
    if dtype == np.complex128:
        return np.dtype(np.complex128 if config.jax_enable_x64 else np.complex64)
    if dtypes.is_inexact(dtype):
        return dtype
    if np.issubdtype(dtype, np.integer) and dtype.itemsize == 8:
        return dtypes.default_float()
    return np.dtype(np.float32)


def _promote_inexact(*xs):
    xs = [jnp.asarray(x) for x in xs]
    dt = _inexact_dtype(jnp.result_type(*xs))
    return [x.astype(dt) for x in xs]


def _real_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.complex128:
        return np.dtype(np.float64)
    if dtype == np.complex64:
        return np.dtype(np.float32)
    return dtype


def _complex_dtype(dtype):
    return np.dtype(np.complex128 if np.dtype(dtype) in (np.float64, np.complex128)
                    else np.complex64)


def _norm_axis(axis, ndim):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _pow2(n):
    return 1 << max(int(n) - 1, 0).bit_length()


def _slice(x, starts, sizes, axes):
    for s, n, ax in zip(starts, sizes, axes):
        x = lax.slice_in_dim(x, int(s), int(s) + int(n), axis=ax)
    return x


def _centered(x, shape, axes):
    """The centred part of `x` of the given sizes along `axes` (SciPy's "same"
    and "valid" cut-outs of a full convolution)."""
    starts = [(x.shape[ax] - n) // 2 for n, ax in zip(shape, axes)]
    return _slice(x, starts, shape, axes)


_MODES = ("full", "same", "valid")


# --------------------------------------------------------------------------
# Convolution and correlation
# --------------------------------------------------------------------------


def _direct_convolve(in1, in2, mode, precision, correlate2d=False):
    """The N-d convolution of in1 and in2 (already of one inexact dtype and rank).

    correlate2d: SciPy's (and JAX's) `correlate2d` quirks: its "same" window
    starts one sample later for an even kernel length, and a "valid" result
    whose in2 is the larger input comes back conjugated."""
    if in1.ndim == 0:
        return in1 * in2
    s1, s2 = in1.shape, in2.shape
    swap = False
    if mode == "valid":
        if all(a >= b for a, b in zip(s1, s2)):
            pass
        elif all(a <= b for a, b in zip(s1, s2)):
            swap = True
            in1, in2 = in2, in1
            s1, s2 = s2, s1
        else:
            raise ValueError("One input must be smaller than the other in every dimension.")
    nd = in1.ndim
    if mode == "full":
        padding = [(k - 1, k - 1) for k in s2]
    elif mode == "same":
        padding = [(k - 1 - (k - 1) // 2, (k - 1) // 2) for k in s2]
        if correlate2d:
            padding = [(hi, lo) for lo, hi in padding]
    else:
        padding = [(0, 0)] * nd
    # lax convolutions correlate: flipping the kernel convolves.
    lhs = jnp.reshape(in1, (1, 1) + s1)
    rhs = jnp.reshape(jnp.flip(in2), (1, 1) + s2)
    out = lax.conv_general_dilated(lhs, rhs, (1,) * nd, padding, precision=precision)
    out = jnp.reshape(out, out.shape[2:])
    if swap and correlate2d and dtypes.is_complex(out.dtype):
        out = jnp.conj(out)
    return out


def _check_args(in1, in2, mode):
    if mode not in _MODES:
        raise ValueError("mode must be one of ['full', 'same', 'valid']")
    in1, in2 = _promote_inexact(in1, in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 must have the same number of dimensions")
    if in1.size == 0 or in2.size == 0:
        raise ValueError("zero-size arrays not supported in convolutions, got shapes "
                         f"{in1.shape} and {in2.shape}.")
    return in1, in2


def _check_method(method):
    if method not in ("auto", "fft", "direct"):
        raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """The N-dimensional convolution of `in1` and `in2` (SciPy's `convolve`).

    mode: "full" (default), "same" (centred, the size of in1) or "valid" (only
    where the inputs overlap fully). method: "auto"/"direct" use
    `lax.conv_general_dilated`, "fft" uses `fftconvolve`.
    """
    _check_method(method)
    in1, in2 = _check_args(in1, in2, mode)
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    return _direct_convolve(in1, in2, mode, precision)


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """The N-dimensional cross-correlation of `in1` and `in2` (SciPy's
    `correlate`): the convolution of in1 with the reversed conjugate of in2."""
    _check_method(method)
    in1, in2 = _check_args(in1, in2, mode)
    in2 = jnp.flip(jnp.conj(in2))
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    return _direct_convolve(in1, in2, mode, precision)


def _check_2d(name, in1, in2, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    if jnp.ndim(in1) != 2 or jnp.ndim(in2) != 2:
        raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-dimensional convolution of `in1` and `in2` (SciPy's `convolve2d`;
    only boundary="fill" with fillvalue=0, as JAX)."""
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    in1, in2 = _check_args(in1, in2, mode)
    return _direct_convolve(in1, in2, mode, precision)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The 2-dimensional cross-correlation (SciPy's `correlate2d`; only
    boundary="fill" with fillvalue=0). As SciPy and JAX, its "same" window is
    one sample later than `correlate`'s along an axis where in2 has an even
    length, and a "valid" correlation whose in2 is the larger input comes back
    conjugated."""
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    in1, in2 = _check_args(in1, in2, mode)
    in2 = jnp.flip(jnp.conj(in2))
    return _direct_convolve(in1, in2, mode, precision, correlate2d=True)


def fftconvolve(in1, in2, mode="full", axes=None):
    """The convolution of `in1` and `in2` through FFTs (SciPy's `fftconvolve`).

    axes: the axes to convolve along (default all); the other axes must have
    equal sizes in both inputs and are carried along (as JAX, no broadcasting).
    """
    if mode not in _MODES:
        raise ValueError("mode must be one of ['same', 'full', 'valid']")
    in1, in2 = _promote_inexact(in1, in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    dtype = in1.dtype
    if in1.ndim == 0:
        return in1 * in2
    if in1.size == 0 or in2.size == 0:
        return jnp.zeros((0,), dtype)
    if axes is None:
        axes = tuple(range(in1.ndim))
    elif np.ndim(axes) == 0:
        axes = (operator.index(axes),)
    axes = tuple(sorted({_norm_axis(a, in1.ndim) for a in axes}))
    mapped = [i for i in range(in1.ndim) if i not in axes]
    if any(in1.shape[i] != in2.shape[i] for i in mapped):
        raise ValueError(f"mapped axes must have same shape; got in1.shape={in1.shape} "
                         f"in2.shape={in2.shape} axes={axes}")
    if not axes:
        return in1 * in2
    s1 = [in1.shape[a] for a in axes]
    s2 = [in2.shape[a] for a in axes]
    if mode == "valid":
        if not (all(a >= b for a, b in zip(s1, s2)) or all(a <= b for a, b in zip(s1, s2))):
            raise ValueError("For 'valid' mode, One input must be at least as large as the "
                             "other in every dimension.")
    full = [a + b - 1 for a, b in zip(s1, s2)]
    fshape = [_pow2(n) for n in full]
    work = dtype
    if dtype in (np.float16, dtypes.bfloat16):
        work = np.dtype(np.float32)  # jnp.fft computes in float32 anyway
    a, b = in1.astype(work), in2.astype(work)
    if dtypes.is_complex(work):
        out = jnp.fft.ifftn(jnp.fft.fftn(a, fshape, axes) * jnp.fft.fftn(b, fshape, axes),
                            fshape, axes)
    else:
        out = jnp.fft.irfftn(jnp.fft.rfftn(a, fshape, axes) * jnp.fft.rfftn(b, fshape, axes),
                             fshape, axes)
    out = _slice(out, [0] * len(axes), full, axes)
    if mode == "same":
        out = _centered(out, s1, axes)
    elif mode == "valid":
        out = _centered(out, [abs(a - b) + 1 for a, b in zip(s1, s2)], axes)
    return out.astype(dtype)


# --------------------------------------------------------------------------
# Detrending
# --------------------------------------------------------------------------


def _detrend_last(x, type, bp=()):
    """`x` minus its mean ("constant") or least-squares line(s) ("linear",
    one per piece between the static breakpoints) along the last axis."""
    n = x.shape[-1]
    if type == "constant":
        return x - jnp.mean(x, axis=-1, keepdims=True)
    edges = sorted({0, n, *bp})
    pieces = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        seg = lax.slice_in_dim(x, lo, hi, axis=-1)
        resid = seg - jnp.mean(seg, axis=-1, keepdims=True)
        if hi - lo > 1:
            t = np.arange(hi - lo, dtype=np.float64)
            t -= t.mean()
            tc = (t / np.dot(t, t)).astype(_real_dtype(x.dtype))
            slope = jnp.sum(seg * tc, axis=-1, keepdims=True)
            resid = resid - slope * t.astype(_real_dtype(x.dtype))
        pieces.append(resid)
    return pieces[0] if len(pieces) == 1 else jnp.concatenate(pieces, axis=-1)


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):
    """`data` minus its linear least-squares fit ("linear", piecewise between
    the breakpoints `bp`) or its mean ("constant") along `axis` (SciPy's
    `detrend`; the breakpoints are static)."""
    if overwrite_data is not None:
        raise NotImplementedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    x = jnp.asarray(data)
    dtype = _inexact_dtype(x.dtype)
    work = np.dtype(np.float32) if dtype in (np.float16, dtypes.bfloat16) else dtype
    x = x.astype(work)
    axis = _norm_axis(axis, x.ndim)
    n = x.shape[axis]
    bps = ()
    if type == "linear":
        bps = tuple(int(b) for b in np.atleast_1d(np.asarray(bp)).ravel())
        if any(b < 0 or b > n for b in bps):
            raise ValueError("Breakpoints must be non-negative and less than length of data "
                             "along given axis.")
    y = _detrend_last(jnp.moveaxis(x, axis, -1), type, bps)
    return jnp.moveaxis(y, -1, axis).astype(dtype)


# --------------------------------------------------------------------------
# Windows (static NumPy arrays, periodic as SciPy's get_window(fftbins=True))
# --------------------------------------------------------------------------


def _cosine_sum(m, coeffs):
    x = 2 * np.pi * np.arange(m) / (m - 1)
    return sum((-1) ** k * c * np.cos(k * x) for k, c in enumerate(coeffs))


def _tukey(m, alpha=0.5):
    if alpha <= 0:
        return np.ones(m)
    if alpha >= 1:
        return _cosine_sum(m, (0.5, 0.5))
    n = np.arange(m, dtype=np.float64)
    edge = alpha * (m - 1) / 2
    w = np.ones(m)
    left = n < edge
    right = n > (m - 1) - edge
    w[left] = 0.5 * (1 + np.cos(np.pi * (n[left] / edge - 1)))
    w[right] = 0.5 * (1 + np.cos(np.pi * ((m - 1 - n[right]) / edge - 1)))
    return w


def _parzen(m):
    n = np.abs(np.arange(m) - (m - 1) / 2) / (m / 2)
    inner = 1 - 6 * n ** 2 + 6 * n ** 3
    outer = 2 * (1 - n) ** 3
    return np.where(n * (m / 2) <= (m - 1) / 4, inner, outer)


def _bohman(m):
    f = np.abs(np.linspace(-1, 1, m))
    w = (1 - f) * np.cos(np.pi * f) + np.sin(np.pi * f) / np.pi
    w[0] = w[-1] = 0.0
    return w


def _triang(m):
    d = (m + m % 2) / 2
    return 1 - np.abs(np.arange(m) - (m - 1) / 2) / d


def _barthann(m):
    f = np.abs(np.arange(m) / (m - 1) - 0.5)
    return 0.62 - 0.48 * f + 0.38 * np.cos(2 * np.pi * f)


def _kaiser(m, beta):
    r = 2 * np.arange(m) / (m - 1) - 1
    return np.i0(beta * np.sqrt(np.clip(1 - r * r, 0, None))) / np.i0(beta)


def _gaussian(m, std):
    n = np.arange(m) - (m - 1) / 2
    return np.exp(-(n * n) / (2.0 * std * std))


def _general_hamming(m, alpha):
    return _cosine_sum(m, (alpha, 1 - alpha))


def _coeffs(*c):
    return lambda m: _cosine_sum(m, c)


# name -> (symmetric window of length m >= 2, parameters..., number of required parameters)
_WINDOWS = {
    "hann": (_coeffs(0.5, 0.5), 0),
    "hamming": (_coeffs(0.54, 0.46), 0),
    "blackman": (_coeffs(0.42, 0.50, 0.08), 0),
    "blackmanharris": (_coeffs(0.35875, 0.48829, 0.14128, 0.01168), 0),
    "nuttall": (_coeffs(0.3635819, 0.4891775, 0.1365995, 0.0106411), 0),
    "flattop": (_coeffs(0.21557895, 0.41663158, 0.277263158, 0.083578947, 0.006947368), 0),
    "boxcar": (np.ones, 0),
    "bartlett": (lambda m: 1 - np.abs(2 * np.arange(m) / (m - 1) - 1), 0),
    "triang": (_triang, 0),
    "cosine": (lambda m: np.sin(np.pi * (np.arange(m) + 0.5) / m), 0),
    "bohman": (_bohman, 0),
    "parzen": (_parzen, 0),
    "barthann": (_barthann, 0),
    "tukey": (_tukey, 0),
    "kaiser": (_kaiser, 1),
    "gaussian": (_gaussian, 1),
    "general_hamming": (_general_hamming, 1),
}
_ALIASES = {
    "han": "hann", "hamm": "hamming", "ham": "hamming",
    "black": "blackman", "blk": "blackman", "blackharr": "blackmanharris",
    "bkh": "blackmanharris", "nutl": "nuttall", "nut": "nuttall", "flat": "flattop",
    "flt": "flattop", "box": "boxcar", "ones": "boxcar", "rect": "boxcar",
    "rectangular": "boxcar", "bart": "bartlett", "brt": "bartlett", "triangle": "triang",
    "tri": "triang", "halfcosine": "cosine", "parz": "parzen",
    "par": "parzen", "brthan": "barthann", "bth": "barthann", "tuk": "tukey",
    "ksr": "kaiser", "gauss": "gaussian", "gss": "gaussian",
    "general hamming": "general_hamming",
}


def _get_window(window, nperseg):
    """The periodic window `window` (a name or a (name, params...) tuple) of
    length nperseg, as a float64 NumPy array."""
    if isinstance(window, tuple):
        name, params = window[0], tuple(window[1:])
    else:
        name, params = window, ()
    if not isinstance(name, str):
        raise ValueError(f"window must be a string, a tuple or an array, got {window!r}")
    key = _ALIASES.get(name, name)
    if key not in _WINDOWS:
        try:
            from scipy.signal import get_window
        except ImportError:
            raise ValueError(f"Unknown window type {name!r} (SciPy is not installed, "
                             f"Ember knows {sorted(_WINDOWS)}).") from None
        return np.asarray(get_window(window, nperseg), np.float64)
    fn, nreq = _WINDOWS[key]
    if len(params) < nreq:
        raise ValueError(f"The '{key}' window needs one or more parameters -- pass a tuple.")
    if nperseg <= 1:
        return np.ones(nperseg)
    # Periodic: the symmetric window one longer, without its last point.
    m = nperseg + 1
    return np.asarray(fn(m, *params), np.float64)[:nperseg]


# --------------------------------------------------------------------------
# Segments, spectra and overlap-add
# --------------------------------------------------------------------------


def _segments(x, nperseg, nstep, nseg):
    """x[..., j*nstep : j*nstep + nperseg] for j < nseg, as (..., nseg, nperseg)."""
    k = -(-nperseg // nstep)
    need = (nseg + k - 1) * nstep
    if x.shape[-1] < need:
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, need - x.shape[-1])])
    lead = x.shape[:-1]
    chunks = [jnp.reshape(lax.slice_in_dim(x, r * nstep, (r + nseg) * nstep, axis=-1),
                          lead + (nseg, nstep)) for r in range(k)]
    seg = chunks[0] if k == 1 else jnp.concatenate(chunks, axis=-1)
    return seg[..., :nperseg]


def _overlap_add(seg, nstep):
    """The sum of the segments (..., nseg, nperseg) placed nstep apart: the
    transpose of `_segments`."""
    nseg, nperseg = seg.shape[-2:]
    k = -(-nperseg // nstep)
    lead = seg.shape[:-2]
    pad = [(0, 0)] * (seg.ndim - 1)
    if nperseg < k * nstep:
        seg = jnp.pad(seg, pad + [(0, k * nstep - nperseg)])
    total = (nseg + k - 1) * nstep
    out = None
    for r in range(k):
        part = jnp.reshape(seg[..., r * nstep:(r + 1) * nstep], lead + (nseg * nstep,))
        part = jnp.pad(part, [(0, 0)] * len(lead) + [(r * nstep, total - (r + nseg) * nstep)])
        out = part if out is None else out + part
    return out[..., :nperseg + (nseg - 1) * nstep]


def _extend(x, n, kind):
    """x extended by n samples at both ends of its last axis."""
    if kind == "zeros":
        return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)])
    first, last = x[..., :1], x[..., -1:]
    if kind == "constant":
        left = jnp.broadcast_to(first, x.shape[:-1] + (n,))
        right = jnp.broadcast_to(last, x.shape[:-1] + (n,))
    else:  # even / odd: mirrored about the end samples (which are not repeated)
        left = jnp.flip(x[..., 1:n + 1], axis=-1)
        right = jnp.flip(x[..., x.shape[-1] - n - 1:x.shape[-1] - 1], axis=-1)
        if kind == "odd":
            left = 2 * first - left
            right = 2 * last - right
    return jnp.concatenate([left, x, right], axis=-1)


_BOUNDARIES = ("even", "odd", "constant", "zeros", None)


def _window_and_nperseg(window, nperseg, n, dtype):
    """(window as an array of `dtype`, its NumPy float64 values or None when
    it is a traced array, nperseg)."""
    if isinstance(window, (str, tuple)):
        if nperseg is None:
            nperseg = 256
        nperseg = operator.index(nperseg)
        if nperseg < 1:
            raise ValueError("nperseg must be a positive integer")
        if nperseg > n:
            warnings.warn(f"nperseg = {nperseg} is greater than input length  = {n}, "
                          f"using nperseg = {n}", stacklevel=3)
            nperseg = n
        w = _get_window(window, nperseg)
        return jnp.asarray(w.astype(dtype)), w, nperseg
    win = jnp.asarray(window)
    if win.ndim != 1:
        raise ValueError("window must be 1-D")
    if n < win.shape[0]:
        raise ValueError("window is longer than input signal")
    if nperseg is None:
        nperseg = win.shape[0]
    elif operator.index(nperseg) != win.shape[0]:
        raise ValueError("value specified for nperseg is different from length of window")
    static = None
    if isinstance(window, (np.ndarray, list)):
        static = np.asarray(window, np.float64)
    return win.astype(dtype), static, int(nperseg)


def _detrend_fn(detrend_type, axis, ndim):
    """A function detrending segments (..., nseg, nperseg) along their last
    axis; `axis` is the caller's, `ndim` the signal's rank."""
    if detrend_type is False or detrend_type is None:
        return lambda d: d
    if callable(detrend_type):
        if axis % ndim == ndim - 1:
            return detrend_type
        # The user's function sees the samples at `axis` (as SciPy).
        pos = axis if axis >= 0 else axis - 1
        return lambda d: jnp.moveaxis(detrend_type(jnp.moveaxis(d, -1, pos)), pos, -1)
    if detrend_type not in ("constant", "linear"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    return lambda d: _detrend_last(d, detrend_type)


def _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided,
              scaling, axis, mode, boundary=None, padded=False):
    """(freqs, times, result) for `stft` (mode "stft") and `csd` (mode "psd");
    result is (..., nfreq at `axis`, ..., nseg)."""
    if scaling not in ("density", "spectrum"):
        raise ValueError(f"Unknown scaling: {scaling}")
    if boundary not in _BOUNDARIES:
        raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                         f"{list(_BOUNDARIES)}")
    same = y is None
    x = jnp.asarray(x)
    ys = () if same else (jnp.asarray(y),)
    dtype = _inexact_dtype(jnp.result_type(x, *ys))
    if dtype in (np.float16, dtypes.bfloat16):
        dtype = np.dtype(np.float32)
    rdtype = _real_dtype(dtype)
    axis = operator.index(axis)
    x = jnp.moveaxis(x.astype(dtype), _norm_axis(axis, x.ndim), -1)
    if not same:
        y = ys[0]
        y = jnp.moveaxis(y.astype(dtype), _norm_axis(axis, y.ndim), -1)
        try:
            lead = jnp.broadcast_shapes(x.shape[:-1], y.shape[:-1])
        except ValueError:
            raise ValueError("x and y cannot be broadcast together.") from None
        n = max(x.shape[-1], y.shape[-1])
        x = jnp.broadcast_to(jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])]),
                             lead + (n,))
        y = jnp.broadcast_to(jnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, n - y.shape[-1])]),
                             lead + (n,))
    if x.size == 0:
        empty = jnp.zeros(x.shape, rdtype)
        out_dtype = rdtype if mode == "psd" and same else _complex_dtype(dtype)
        return empty, empty, jnp.zeros(x.shape, out_dtype)
    n = x.shape[-1]
    win, win_np, nperseg = _window_and_nperseg(window, nperseg, n, rdtype)
    noverlap = nperseg // 2 if noverlap is None else operator.index(noverlap)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    nfft = nperseg if nfft is None else operator.index(nfft)
    if nfft < nperseg:
        raise ValueError("nfft must be greater than or equal to nperseg.")
    nstep = nperseg - noverlap

    if boundary is not None:
        x = _extend(x, nperseg // 2, boundary)
        if not same:
            y = _extend(y, nperseg // 2, boundary)
    if padded:
        extra = (-(x.shape[-1] - nperseg) % nstep) % nperseg
        pad = [(0, 0)] * (x.ndim - 1) + [(0, extra)]
        x = jnp.pad(x, pad)
        if not same:
            y = jnp.pad(y, pad)

    complex_in = dtypes.is_complex(dtype)
    if return_onesided and complex_in:
        warnings.warn("Input data is complex, switching to return_onesided=False",
                      stacklevel=3)
    onesided = bool(return_onesided) and not complex_in

    length = x.shape[-1]
    nseg = (length - nperseg) // nstep + 1
    detrend_func = _detrend_fn(detrend_type, axis, x.ndim)

    def spectrum(sig):
        seg = detrend_func(_segments(sig, nperseg, nstep, nseg)) * win
        if onesided:
            return jnp.fft.rfft(seg, n=nfft, axis=-1)
        return jnp.fft.fft(seg, n=nfft, axis=-1)

    fs = jnp.asarray(fs, rdtype)
    wsum = jnp.sum(win)
    if scaling == "density":
        scale = 1.0 / (fs * jnp.sum(win * win))
    else:
        scale = 1.0 / (wsum * wsum)

    fx = spectrum(x)
    if mode == "stft":
        result = fx * (1.0 / wsum).astype(rdtype)
    else:
        if same:
            result = jnp.real(fx) ** 2 + jnp.imag(fx) ** 2
        else:
            result = jnp.conj(fx) * spectrum(y)
        result = result * scale
        if onesided:
            dbl = np.full(result.shape[-1], 2.0)
            dbl[0] = 1.0
            if nfft % 2 == 0:
                dbl[-1] = 1.0
            result = result * dbl.astype(rdtype)
    result = result.astype(_complex_dtype(rdtype) if mode == "stft" or not same else rdtype)

    k = np.arange(nfft // 2 + 1 if onesided else nfft)
    if not onesided:
        k = np.where(k < (nfft + 1) // 2, k, k - nfft)  # fftfreq's order
    freqs = jnp.asarray((k / nfft).astype(rdtype)) * fs
    t = nperseg / 2 + nstep * np.arange(nseg)
    if boundary is not None:
        t = t - nperseg / 2
    times = jnp.asarray(t.astype(rdtype)) / fs

    # (..., nseg, nfreq) -> frequencies at `axis` (counted in the result's rank
    # for a negative axis, as SciPy), segments last.
    result = jnp.moveaxis(result, -1, axis if axis >= 0 else axis - 1)
    return freqs, times, result


def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1):
    """The short-time Fourier transform of `x` (SciPy's `stft`): returns
    (f, t, Zxx) with the frequencies at `axis` of Zxx and the segment times last."""
    return _spectral(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                     "spectrum", axis, "stft", boundary, padded)


def _median_bias(n):
    """The bias of the median of n chi-square(2) periodograms (SciPy's correction)."""
    k = np.arange(1, (n - 1) // 2 + 1)
    return 1.0 + float(np.sum(1.0 / (2 * k + 1) - 1.0 / (2 * k)))


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided=True, scaling="density", axis=-1,
        average="mean"):
    """The cross power spectral density of `x` and `y` by Welch's method
    (SciPy's `csd`): returns (f, Pxy). With y=None, the (real) PSD of x."""
    if average not in ("mean", "median"):
        raise ValueError(f'average must be "median" or "mean", got {average}')
    freqs, _, pxy = _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                              return_onesided, scaling, axis, "psd")
    if pxy.ndim >= 2 and pxy.size > 0:
        nseg = pxy.shape[-1]
        if average == "mean":
            pxy = jnp.mean(pxy, axis=-1)
        else:
            bias = _median_bias(nseg)
            if dtypes.is_complex(pxy.dtype):
                med = lax.complex(jnp.median(jnp.real(pxy), axis=-1),
                                  jnp.median(jnp.imag(pxy), axis=-1))
            else:
                med = jnp.median(pxy, axis=-1)
            pxy = med / np.asarray(bias, _real_dtype(pxy.dtype))
    return freqs, pxy


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1,
          average="mean"):
    """The power spectral density of `x` by Welch's method (SciPy's `welch`):
    returns (f, Pxx)."""
    freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                     nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                     scaling=scaling, axis=axis, average=average)
    return freqs, jnp.real(pxx)


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2):
    """The inverse short-time Fourier transform (SciPy's `istft`, without its
    NOLA check): returns (t, x). noverlap=0 means no overlap, as in SciPy
    (JAX 0.10 takes it for the default nperseg // 2)."""
    z = jnp.asarray(Zxx)
    if z.ndim < 2:
        raise ValueError("Input stft must be at least 2d!")
    time_axis = _norm_axis(time_axis, z.ndim)
    freq_axis = _norm_axis(freq_axis, z.ndim)
    if time_axis == freq_axis:
        raise ValueError("Must specify differing time and frequency axes!")
    dtype = _inexact_dtype(z.dtype)
    if dtype in (np.float16, dtypes.bfloat16):
        dtype = np.dtype(np.float32)
    cdtype = _complex_dtype(dtype)
    rdtype = _real_dtype(cdtype)
    z = z.astype(cdtype)
    nseg = z.shape[time_axis]
    nfreq = z.shape[freq_axis]
    n_default = 2 * (nfreq - 1) if input_onesided else nfreq
    if nperseg is None:
        nperseg = n_default
    nperseg = operator.index(nperseg)
    if nperseg < 1:
        raise ValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft = nperseg if (input_onesided and nperseg == n_default + 1) else n_default
    else:
        nfft = operator.index(nfft)
        if nfft < nperseg:
            raise ValueError("nfft must be greater than or equal to nperseg.")
    noverlap = nperseg // 2 if noverlap is None else operator.index(noverlap)
    if noverlap >= nperseg:
        raise ValueError("noverlap must be less than nperseg.")
    nstep = nperseg - noverlap

    if isinstance(window, (str, tuple)):
        win_np = _get_window(window, nperseg)
        win = jnp.asarray(win_np.astype(rdtype))
    else:
        win = jnp.asarray(window)
        if win.ndim != 1:
            raise ValueError("window must be 1-D")
        if win.shape[0] != nperseg:
            raise ValueError(f"window must have length of {nperseg}")
        win_np = np.asarray(window, np.float64) if isinstance(window, (np.ndarray, list)) \
            else None
        win = win.astype(rdtype)

    # (..., freq, time) -> segments (..., nseg, nfft).
    outer = [i for i in range(z.ndim) if i not in (time_axis, freq_axis)]
    z = jnp.transpose(z, outer + [time_axis, freq_axis])
    if input_onesided:
        segs = jnp.fft.irfft(z, n=nfft, axis=-1)
    else:
        segs = jnp.fft.ifft(z, n=nfft, axis=-1)
    segs = segs[..., :nperseg]
    x = _overlap_add(segs * (win * jnp.sum(win)), nstep)
    if win_np is not None:
        norm = _overlap_add_np(win_np ** 2, nseg, nstep)
    else:
        norm = _overlap_add(jnp.broadcast_to(win * win, (nseg, nperseg)), nstep)
    if boundary:
        cut = nperseg // 2
        x = x[..., cut:-cut]
        norm = norm[cut:-cut]
    if win_np is not None:
        x = x / np.where(norm > 1e-10, norm, 1.0).astype(rdtype)
    else:
        x = x / jnp.where(norm > 1e-10, norm, 1.0)

    if x.ndim > 1 and time_axis != z.ndim - 1:
        t_ax = time_axis - 1 if freq_axis < time_axis else time_axis
        x = jnp.moveaxis(x, -1, t_ax)
    fs = jnp.asarray(fs, rdtype)
    times = jnp.asarray(np.arange(x.shape[0]).astype(rdtype)) / fs
    return times, x


def _overlap_add_np(w, nseg, nstep):
    """NumPy overlap-add of nseg copies of w placed nstep apart."""
    k = -(-w.shape[0] // nstep)
    padded = np.zeros(k * nstep)
    padded[:w.shape[0]] = w
    out = np.zeros((nseg + k - 1) * nstep)
    for r in range(k):
        out[r * nstep:(r + nseg) * nstep] += np.tile(padded[r * nstep:(r + 1) * nstep], nseg)
    return out[:w.shape[0] + (nseg - 1) * nstep]

