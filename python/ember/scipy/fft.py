"""`jax.scipy.fft`: the discrete cosine transform (type 2, as JAX) and its
inverse, one-dimensional and along several axes.

Every transform is linear in its input, so it is built from linear Ember ops
(`grad`, `jvp` and `vmap` apply): a short axis is multiplied by the constant
DCT matrix (one `dot_general`, exact to f32 rounding); a long one goes through
`jnp.fft` with Makhoul's reordering (an n-point complex FFT of the even and the
reversed odd samples, then a quarter-sample phase twist). Real and imaginary
parts of a complex input are transformed separately.

Only type 2 exists in JAX (its `dct`/`idct` raise NotImplementedError for the
other types), and only the norms None/"backward"/"ortho"; Ember does the same.
"""

import math

import numpy as np

import ember.numpy as jnp
from ember import lax
from ember._src import dtypes
from ember._src.config import config

__all__ = ["dct", "dctn", "idct", "idctn"]

# Up to this length a transform is one product with the constant n x n matrix;
# beyond it the O(n log n) FFT route keeps the program and the constant small.
_MATRIX_MAX = 256


def _inexact_dtype(dtype):
    """JAX's dtype for the transform of an array of `dtype`: integers and bool
    become float32 (64-bit integers the default float), float16/bfloat16 are
    computed in float32, complex stays complex."""
    dtype = np.dtype(dtype)
    if dtypes.is_complex(dtype):
        return dtype
    if dtype == np.float64:
        return np.dtype(np.float64 if config.jax_enable_x64 else np.float32)
    if np.issubdtype(dtype, np.integer) and dtype.itemsize == 8:
        return dtypes.default_float()
    return np.dtype(np.float32)


def _check_type(type):
    if type != 2:
        raise NotImplementedError("Only DCT type 2 is implemented.")


def _check_norm(name, norm):
    if norm not in (None, "backward", "ortho"):
        raise ValueError(f"jax.scipy.fft.{name}: norm={norm!r} is not implemented")


def _axis(axis, ndim):
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _fit(x, n, axis):
    """`x` cut or zero-padded to length `n` along `axis`."""
    size = x.shape[axis]
    if n is None or n == size:
        return x
    n = int(n)
    if n < 1:
        raise ValueError(f"invalid number of data points ({n}) specified")
    if n < size:
        return lax.slice_in_dim(x, 0, n, axis=axis)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, n - size)
    return jnp.pad(x, pad)


def _ortho_scale(n):
    """The factors that make the type-2 DCT orthonormal: sqrt(1/(4n)) for k=0,
    sqrt(1/(2n)) otherwise."""
    f = np.full(n, math.sqrt(1.0 / (2 * n)))
    f[0] = math.sqrt(1.0 / (4 * n))
    return f


def _dct_matrix(n, norm, inverse):
    """M such that y = x @ M is the DCT (or its inverse) of x along its last axis."""
    k = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    # c[k, j] = 2 cos(pi k (2j + 1) / (2n)): y_k = sum_j c[k, j] x_j (SciPy's "backward" DCT-II).
    c = 2.0 * np.cos(np.pi * ((k * (2 * j + 1)) % (4 * n)) / (2 * n))
    if norm == "ortho":
        c = c * _ortho_scale(n)[:, None]
        m = c.T if not inverse else c  # orthonormal: the inverse is the transpose
    else:
        m = c.T if not inverse else np.linalg.inv(c).T
    return m


def _dct_last_real(x, norm, inverse):
    """The DCT-II (or its inverse) of a real array along its last axis."""
    n = x.shape[-1]
    if n <= _MATRIX_MAX:
        m = jnp.asarray(_dct_matrix(n, norm, inverse).astype(x.dtype))
        return jnp.matmul(x, m)
    half = (n + 1) // 2
    k = np.arange(n)
    if not inverse:
        # v = [x0, x2, x4, ..., x5, x3, x1]; y_k = 2 Re(exp(-i pi k / 2n) FFT(v)_k).
        v = jnp.concatenate([x[..., 0::2], jnp.flip(x[..., 1::2], axis=-1)], axis=-1)
        spec = jnp.fft.fft(v, axis=-1)
        tw = np.exp(-1j * np.pi * k / (2 * n))
        y = 2.0 * (jnp.real(spec) * tw.real.astype(x.dtype)
                   - jnp.imag(spec) * tw.imag.astype(x.dtype))
        if norm == "ortho":
            y = y * _ortho_scale(n).astype(x.dtype)
        return y
    # Inverse: with X the backward DCT-II of x and X_n = 0,
    # FFT(v)_k = exp(i pi k / 2n) (X_k - i X_{n-k}) / 2.
    if norm == "ortho":
        x = x / _ortho_scale(n).astype(x.dtype)
    rev = jnp.concatenate([jnp.zeros_like(x[..., :1]), jnp.flip(x[..., 1:], axis=-1)], axis=-1)
    tw = np.exp(1j * np.pi * k / (2 * n)) / 2
    re = x * tw.real.astype(x.dtype) + rev * tw.imag.astype(x.dtype)
    im = x * tw.imag.astype(x.dtype) - rev * tw.real.astype(x.dtype)
    v = jnp.real(jnp.fft.ifft(lax.complex(re, im), axis=-1))
    # v = [x0, x2, x4, ..., x5, x3, x1]: interleave back.
    even = v[..., :half]
    odd = jnp.flip(v[..., half:], axis=-1)
    if n % 2:
        odd = jnp.pad(odd, [(0, 0)] * (x.ndim - 1) + [(0, 1)])
    y = jnp.reshape(jnp.stack([even, odd], axis=-1), x.shape[:-1] + (2 * half,))
    return y[..., :n]


def _transform(x, n, axis, norm, inverse):
    x = _fit(x, n, axis)
    x = jnp.moveaxis(x, axis, -1)
    if dtypes.is_complex(x.dtype):
        y = lax.complex(_dct_last_real(jnp.real(x), norm, inverse),
                        _dct_last_real(jnp.imag(x), norm, inverse))
    else:
        y = _dct_last_real(x, norm, inverse)
    return jnp.moveaxis(y, -1, axis)


def _prepare(x):
    x = jnp.asarray(x)
    return x.astype(_inexact_dtype(x.dtype))


def _one(name, x, type, n, axis, norm, inverse):
    _check_type(type)
    _check_norm(name, norm)
    x = _prepare(x)
    return _transform(x, n, _axis(axis, x.ndim), norm, inverse)


def _many(name, x, type, s, axes, norm, inverse):
    _check_type(type)
    _check_norm(name, norm)
    x = _prepare(x)
    if s is not None:
        s = (int(s),) if np.ndim(s) == 0 else tuple(int(v) for v in s)
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    elif np.ndim(axes) == 0:
        axes = (int(axes),)
    axes = tuple(_axis(a, x.ndim) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis: {axes}")
    # As JAX: the i-th size goes with the i-th axis; axes without a size keep theirs.
    for i, ax in enumerate(axes):
        n = s[i] if s is not None and i < len(s) else None
        x = _transform(x, n, ax, norm, inverse)
    return x


def dct(x, type=2, n=None, axis=-1, norm=None):
    """The discrete cosine transform of `x` along `axis` (SciPy's `dct`; type 2 only,
    norm None/"backward" or "ortho"). `n` zero-pads or truncates the input first."""
    return _one("dct", x, type, n, axis, norm, False)


def idct(x, type=2, n=None, axis=-1, norm=None):
    """The inverse of `dct` along `axis` (SciPy's `idct`; type 2 only)."""
    return _one("idct", x, type, n, axis, norm, True)


def dctn(x, type=2, s=None, axes=None, norm=None):
    """The DCT along several axes (all of them, or the last len(s) by default)."""
    return _many("dctn", x, type, s, axes, norm, False)


def idctn(x, type=2, s=None, axes=None, norm=None):
    """The inverse of `dctn`."""
    return _many("idctn", x, type, s, axes, norm, True)
