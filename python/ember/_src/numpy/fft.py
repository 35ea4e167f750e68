"""`jax.numpy.fft`: discrete Fourier transforms on Ember's primitives.

A length-2^k transform is the radix-2 Cooley-Tukey recursion with both
halves batched into one call per level (k levels of a reshape, a twiddle
multiply and a concatenation: O(n log n) work, O(log n) traced ops); any
other length goes through Bluestein's chirp-z algorithm on a power-of-two
transform (chirp phases reduced modulo 2n in integers, so f32 keeps its
precision). Every step is a linear Ember op, so `grad`, `jvp` and `vmap`
apply. Written here because no FFT primitive exists in the `ember` dialect;
docs/decisions.md, "FFT".
"""

import math

import numpy as np

from .. import dtypes
from ..config import config
from . import lax_numpy as jnp

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "fftn", "ifftn",
           "rfft2", "irfft2", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift",
           "ifftshift"]


def _complex_dtype(dtype):
    if dtypes.is_complex(dtype):
        return dtype
    return np.dtype(np.complex128 if config.jax_enable_x64 and np.dtype(dtype) == np.float64
                    else np.complex64)


def _real_dtype(cdtype):
    return np.dtype(np.float64 if np.dtype(cdtype) == np.complex128 else np.float32)


def _pow2(x):
    """The DFT along the last axis, whose length is a power of two."""
    n = x.shape[-1]
    if n == 1:
        return x
    half = n // 2
    # [x0 x1 x2 ...] -> [[x0 x2 ...], [x1 x3 ...]]: both halves in one call.
    pairs = jnp.swapaxes(jnp.reshape(x, x.shape[:-1] + (half, 2)), -1, -2)
    y = _pow2(pairs)
    even, odd = y[..., 0, :], y[..., 1, :]
    tw = np.exp(-2j * np.pi * np.arange(half) / n).astype(x.dtype)
    t = odd * tw
    return jnp.concatenate([even + t, even - t], axis=-1)


def _dft(x):
    """The DFT along the last axis, any length."""
    n = x.shape[-1]
    if n == 0:
        return x
    if n & (n - 1) == 0:
        return _pow2(x)
    # Bluestein: X_k = conj(w_k) sum_j (x_j conj(w_j)) w_(k-j), w_j = exp(i pi j^2 / n).
    m = 1 << (2 * n - 2).bit_length()
    j = np.arange(n, dtype=np.int64)
    phase = np.pi * ((j * j) % (2 * n)) / n
    w = np.exp(1j * phase)
    a = jnp.pad(x * np.conj(w).astype(x.dtype), [(0, 0)] * (x.ndim - 1) + [(0, m - n)])
    b = np.zeros(m, np.complex128)
    b[:n] = w
    b[m - n + 1:] = w[1:][::-1]
    fb = np.fft.fft(b).astype(x.dtype)  # a constant: the chirp's spectrum
    conv = _inverse_pow2(_pow2(a) * fb)
    return conv[..., :n] * np.conj(w).astype(x.dtype)


def _inverse_pow2(x):
    n = x.shape[-1]
    return jnp.conj(_pow2(jnp.conj(x))) / np.asarray(n, _real_dtype(x.dtype))


def _scale(norm, n, inverse):
    if norm in (None, "backward"):
        return 1.0 / n if inverse else 1.0
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if norm == "forward":
        return 1.0 if inverse else 1.0 / n
    raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')


def _fit(x, n, axis):
    """`x` cut or zero-padded to length n along `axis`."""
    size = x.shape[axis]
    if n is None or n == size:
        return x
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    if n < size:
        return jnp.take(x, jnp.arange(n), axis=axis)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, n - size)
    return jnp.pad(x, pad)


def _array(a, name):
    """`a` as an array (JAX's fft functions take arrays and scalars, not
    lists), with at least one axis."""
    jnp._check_arraylike(f"jax.numpy.fft.{name}", a)
    x = jnp.asarray(a)
    if x.ndim == 0:
        raise ValueError("axis -1 is out of bounds for array of dimension 0")
    return x


def _axis(axis, ndim, name):
    """`axis` in [0, ndim), JAX's errors otherwise (no wrapping)."""
    if isinstance(axis, (tuple, list)):
        raise ValueError(f"jax.numpy.fft.{name} does not support multiple axes. Please use "
                         f"jax.numpy.fft.{name}n. Got axis = {axis}.")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _c2c(a, n, axis, norm, inverse):
    x = _array(a, "ifft" if inverse else "fft")
    x = x.astype(_complex_dtype(x.dtype))
    axis = _axis(axis, x.ndim, "ifft" if inverse else "fft")
    x = _fit(x, n, axis)
    size = x.shape[axis]
    x = jnp.moveaxis(x, axis, -1)
    y = jnp.conj(_dft(jnp.conj(x))) if inverse else _dft(x)
    s = _scale(norm, size, inverse)
    if s != 1.0:
        y = y * np.asarray(s, _real_dtype(y.dtype))
    return jnp.moveaxis(y, -1, axis)


def fft(a, n=None, axis=-1, norm=None):
    return _c2c(a, n, axis, norm, False)


def ifft(a, n=None, axis=-1, norm=None):
    return _c2c(a, n, axis, norm, True)


def rfft(a, n=None, axis=-1, norm=None):
    x = _array(a, "rfft")
    if dtypes.is_complex(x.dtype):
        raise ValueError("only real valued inputs supported for rfft")
    axis = _axis(axis, x.ndim, "rfft")
    y = fft(x, n, axis, norm)
    keep = y.shape[axis] // 2 + 1
    return jnp.take(y, jnp.arange(keep), axis=axis)


def irfft(a, n=None, axis=-1, norm=None):
    x = _array(a, "irfft")
    x = x.astype(_complex_dtype(x.dtype))
    axis = _axis(axis, x.ndim, "irfft")
    if n is None:
        # (A spectrum of one point is the transform of no points, as JAX's.)
        n = max(0, 2 * (x.shape[axis] - 1))
        if n == 0:
            shape = list(x.shape)
            shape[axis] = 0
            return jnp.zeros(shape, _real_dtype(x.dtype))
    n = int(n)
    if n < 1:
        raise ValueError("Shape should be positive.")
    half = n // 2 + 1
    x = _fit(x, half, axis)
    x = jnp.moveaxis(x, axis, -1)
    # The full Hermitian spectrum: X[n-k] = conj(X[k]).
    mirror = jnp.conj(x[..., 1:n - half + 1][..., ::-1])
    full = jnp.concatenate([x, mirror], axis=-1)
    y = jnp.real(ifft(full, axis=-1, norm=norm))
    return jnp.moveaxis(y, -1, axis)


def hfft(a, n=None, axis=-1, norm=None):
    """The FFT of a signal with Hermitian symmetry (a real spectrum)."""
    x = _array(a, "hfft")
    inv = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}
    return irfft(jnp.conj(x), n, axis, inv[norm])


def ihfft(a, n=None, axis=-1, norm=None):
    inv = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}
    return jnp.conj(rfft(a, n, axis, inv[norm]))


def _axes_and_sizes(x, s, axes, name):
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(-len(s), 0))
    if len(set(axes)) != len(axes):
        raise ValueError(f"jax.numpy.fft.{name} does not support repeated axes. Got axes "
                         f"{tuple(axes)}.")
    if s is not None and len(s) > x.ndim:
        raise ValueError(f"FFT input shape {x.shape} must have at least as many input "
                         f"dimensions as fft_lengths {tuple(s)}.")
    axes = tuple(_axis(a, x.ndim, name) for a in axes)
    sizes = [None] * len(axes) if s is None else list(s)
    if len(sizes) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    return axes, sizes


def fftn(a, s=None, axes=None, norm=None):
    x = jnp.asarray(a)
    axes, sizes = _axes_and_sizes(x, s, axes, "fftn")
    x = x.astype(_complex_dtype(x.dtype))
    for ax, n in zip(axes, sizes):
        x = fft(x, n, ax, norm)
    return x


def ifftn(a, s=None, axes=None, norm=None):
    x = jnp.asarray(a)
    axes, sizes = _axes_and_sizes(x, s, axes, "ifftn")
    x = x.astype(_complex_dtype(x.dtype))
    for ax, n in zip(axes, sizes):
        x = ifft(x, n, ax, norm)
    return x


def rfftn(a, s=None, axes=None, norm=None):
    x = jnp.asarray(a)
    axes, sizes = _axes_and_sizes(x, s, axes, "rfftn")
    if not axes:
        return x  # (no axes: the input itself, as JAX's)
    x = rfft(x, sizes[-1], axes[-1], norm)
    for ax, n in zip(axes[:-1], sizes[:-1]):
        x = fft(x, n, ax, norm)
    return x


def irfftn(a, s=None, axes=None, norm=None):
    x = jnp.asarray(a)
    axes, sizes = _axes_and_sizes(x, s, axes, "irfftn")
    if not axes:
        return x.astype(_complex_dtype(x.dtype))  # (as JAX's)
    for ax, n in zip(axes[:-1], sizes[:-1]):
        x = ifft(x, n, ax, norm)
    return irfft(x, sizes[-1], axes[-1], norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
    return fftn(a, s, axes, norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
    return ifftn(a, s, axes, norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
    return rfftn(a, s, axes, norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
    return irfftn(a, s, axes, norm)


def _freqs(k, n, d, dtype):
    """k / (n d) computed in `dtype`, as JAX's (d = 0 gives infinities and
    a NaN, not an error)."""
    dt = dtypes.default_float() if dtype is None else dtypes.canonicalize_dtype(dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        return jnp.asarray(k.astype(dt) / np.asarray(n * d).astype(dt))


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    n = int(n)
    k = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)]) \
        if n > 0 else np.zeros(0)
    return _freqs(k, n, d, dtype)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    n = int(n)
    return _freqs(np.arange(0, n // 2 + 1) if n >= 0 else np.zeros(0), n, d, dtype)


def _shift(x, axes, sign):
    x = jnp.asarray(x)
    axes = tuple(range(x.ndim)) if axes is None else (
        (axes,) if isinstance(axes, int) else tuple(axes))
    return jnp.roll(x, [sign * (x.shape[a] // 2) for a in axes], axes)


def fftshift(x, axes=None):
    return _shift(x, axes, 1)


def ifftshift(x, axes=None):
    return _shift(x, axes, -1)
