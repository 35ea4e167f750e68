"""`jax.numpy.fft`: discrete Fourier transforms on the `ember.fft` op (the
runtime's FFT, SciPy's pocketfft where registered: compiler.py), as JAX's
are on `lax.fft`: the axes moved last, cut or zero-padded to the lengths
asked for, transformed (up to three at once), scaled for `norm` and moved
back. The op is linear with JVP, transpose and batching rules in C++, so
`grad`, `jvp` and `vmap` apply.
"""

import math

import numpy as np

from .. import dtypes, lax_linalg
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
    return np.dtype(np.float64 if np.dtype(cdtype) in (np.complex128, np.float64)
                    else np.float32)


def _transform(x, kind, axes, lengths, norm):
    """The op `kind` over `axes` (x already cut or padded to `lengths`
    there; the last of them halved on the complex side of RFFT and IRFFT),
    scaled for `norm`."""
    if not axes:
        return x
    total = math.prod(lengths)
    if len(axes) <= 3:
        y = _op_on(x, kind, axes, lengths)
    elif kind == "RFFT":  # (the op takes three axes at once; the DFT is separable)
        y = _chunks(_op_on(x, "RFFT", axes[-1:], lengths[-1:]), "FFT", axes[:-1],
                    lengths[:-1])
    elif kind == "IRFFT":
        y = _op_on(_chunks(x, "IFFT", axes[:-1], lengths[:-1]), "IRFFT", axes[-1:],
                   lengths[-1:])
    else:
        y = _chunks(x, kind, axes, lengths)
    # (No points: the op's zeros, nothing to scale.)
    factor = _scale(norm, total, kind in ("IFFT", "IRFFT")) if total else 1.0
    if factor != 1.0:
        y = y * np.asarray(factor, _real_dtype(y.dtype))
    return y


def _op_on(x, kind, axes, lengths):
    """`ember.fft` over `axes`: moved last, transformed, moved back."""
    last = tuple(range(x.ndim - len(axes), x.ndim))
    y = lax_linalg.fft(jnp.moveaxis(x, axes, last), kind, lengths)
    return jnp.moveaxis(y, last, axes)


def _chunks(x, kind, axes, lengths):
    for i in range(0, len(axes), 3):
        x = _op_on(x, kind, axes[i:i + 3], lengths[i:i + 3])
    return x


def _scale(norm, n, inverse):
    """The factor `norm` asks for beyond the op's own (IFFT and IRFFT divide
    by n already)."""
    if norm in (None, "backward"):
        return 1.0
    if norm == "ortho":
        return math.sqrt(n) if inverse else 1.0 / math.sqrt(n)
    if norm == "forward":
        return float(n) if inverse else 1.0 / n
    raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')


def _fit(x, n, axis):
    """`x` cut or zero-padded to length n along `axis`."""
    size = x.shape[axis]
    if n is None or n == size:
        return x
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    if n < size:
        return x[(slice(None),) * axis + (slice(0, n),)]
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


def _real_input(x, name):
    """A real operand of RFFT: f32 or f64 (integers and booleans become
    floats; JAX's error for complex and narrow floats)."""
    if dtypes.is_complex(x.dtype):
        raise ValueError(f"only real valued inputs supported for {name}")
    if not dtypes.is_inexact(x.dtype):
        x = x.astype(_real_dtype(_complex_dtype(dtypes.to_inexact(x.dtype))))
    if x.dtype not in (np.float32, np.float64):
        raise ValueError(f"RFFT input must be float32 or float64, got {x.dtype}")
    return x


def _c2c(a, n, axis, norm, inverse):
    name = "ifft" if inverse else "fft"
    x = _array(a, name)
    x = x.astype(_complex_dtype(x.dtype))
    axis = _axis(axis, x.ndim, name)
    x = _fit(x, n, axis)
    return _transform(x, "IFFT" if inverse else "FFT", (axis,), (x.shape[axis],), norm)


def fft(a, n=None, axis=-1, norm=None):
    return _c2c(a, n, axis, norm, False)


def ifft(a, n=None, axis=-1, norm=None):
    return _c2c(a, n, axis, norm, True)


def rfft(a, n=None, axis=-1, norm=None):
    x = _real_input(_array(a, "rfft"), "rfft")
    axis = _axis(axis, x.ndim, "rfft")
    x = _fit(x, n, axis)
    return _transform(x, "RFFT", (axis,), (x.shape[axis],), norm)


def _irfft_length(x, n, axis):
    """The output length along `axis` (2 (m - 1) by default) and `x` cut or
    padded to its n // 2 + 1 frequencies there."""
    if n is None:
        # (A spectrum of one point is the transform of no points, as JAX's.)
        n = max(0, 2 * (x.shape[axis] - 1))
        if n == 0:
            return 0, x
    n = int(n)
    if n < 1:
        raise ValueError("Shape should be positive.")
    return n, _fit(x, n // 2 + 1, axis)


def irfft(a, n=None, axis=-1, norm=None):
    x = _array(a, "irfft")
    x = x.astype(_complex_dtype(x.dtype))
    axis = _axis(axis, x.ndim, "irfft")
    n, x = _irfft_length(x, n, axis)
    return _transform(x, "IRFFT", (axis,), (n,), norm)


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


def _fit_all(x, axes, sizes):
    for ax, n in zip(axes, sizes):
        x = _fit(x, n, ax)
    return x


def _c2cn(a, s, axes, norm, name):
    x = jnp.asarray(a)
    axes, sizes = _axes_and_sizes(x, s, axes, name)
    x = _fit_all(x.astype(_complex_dtype(x.dtype)), axes, sizes)
    return _transform(x, "IFFT" if name == "ifftn" else "FFT", axes,
                      tuple(x.shape[a] for a in axes), norm)


def fftn(a, s=None, axes=None, norm=None):
    return _c2cn(a, s, axes, norm, "fftn")


def ifftn(a, s=None, axes=None, norm=None):
    return _c2cn(a, s, axes, norm, "ifftn")


def rfftn(a, s=None, axes=None, norm=None):
    x = jnp.asarray(a)
    axes, sizes = _axes_and_sizes(x, s, axes, "rfftn")
    if not axes:
        return x  # (no axes: the input itself, as JAX's)
    x = _fit_all(_real_input(x, "rfftn"), axes, sizes)
    return _transform(x, "RFFT", axes, tuple(x.shape[a] for a in axes), norm)


def irfftn(a, s=None, axes=None, norm=None):
    x = jnp.asarray(a)
    axes, sizes = _axes_and_sizes(x, s, axes, "irfftn")
    if not axes:
        return x.astype(_complex_dtype(x.dtype))  # (as JAX's)
    x = _fit_all(x.astype(_complex_dtype(x.dtype)), axes[:-1], sizes[:-1])
    n, x = _irfft_length(x, sizes[-1], axes[-1])
    lengths = tuple(x.shape[a] for a in axes[:-1]) + (n,)
    return _transform(x, "IRFFT", axes, lengths, norm)


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
