"""`jax.image`: resizing and scale-and-translate resampling.

A resize along one dimension is a product with a weight matrix (input size
x output size) whose column j holds the kernel evaluated at the distances of
the input pixels' centres to output pixel j's centre mapped back into the
input, normalised to sum to one; the dimensions are contracted in one
einsum. Nearest neighbour gathers instead. JAX's kernels and conventions
(half-centred pixels, the kernel stretched by the downsampling factor when
antialiasing, zero weight outside the input).
"""

import enum
import math

import numpy as np

from . import core, dtypes, lax
from .api import jit
from .numpy import lax_numpy as jnp
from .numpy.einsum import einsum

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]


class ResizeMethod(enum.Enum):
    """The resampling kernels (JAX's members and values)."""

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s):
        names = {"nearest": "NEAREST", "linear": "LINEAR", "bilinear": "LINEAR",
                 "trilinear": "LINEAR", "triangle": "LINEAR", "lanczos3": "LANCZOS3",
                 "lanczos5": "LANCZOS5", "cubic": "CUBIC", "bicubic": "CUBIC",
                 "tricubic": "CUBIC", "cubic-pytorch": "CUBIC_PYTORCH",
                 "bicubic-pytorch": "CUBIC_PYTORCH", "area": "AREA"}
        if s not in names:
            raise ValueError(f'Unknown resize method "{s}"')
        return ResizeMethod[names[s]]


def _lanczos(radius):
    def kernel(x):
        y = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
        safe = jnp.where(x != 0, np.pi ** 2 * x ** 2, 1)
        out = jnp.where(x > 1e-3, jnp.divide(y, safe), 1)
        return jnp.where(x > radius, 0., out)
    return kernel


def _cubic(a):
    """The cubic convolution kernel with parameter `a` (Keys: -0.5; OpenCV
    and PyTorch without antialiasing: -0.75)."""
    def kernel(x):
        inner = ((a + 2.) * x - (a + 3.)) * x * x + 1.
        outer = ((a * x - 5. * a) * x + 8. * a) * x - 4. * a
        return jnp.where(x >= 2., 0., jnp.where(x >= 1., outer, inner))
    return kernel


def _keys_cubic(x):
    # (a = -0.5, written as JAX evaluates it, for the same rounding)
    out = ((1.5 * x - 2.5) * x) * x + 1.
    out = jnp.where(x >= 1., ((-0.5 * x + 2.5) * x - 4.) * x + 2., out)
    return jnp.where(x >= 2., 0., out)


def _triangle(x):
    return jnp.maximum(0, 1 - jnp.abs(x))


_AREA = object()

# method -> (radius, kernel)
_KERNELS = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.)),
    ResizeMethod.CUBIC: (2, _keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)),
    ResizeMethod.AREA: (1, _AREA),
}


def _normalized(weights):
    total = jnp.sum(weights, axis=0, keepdims=True)
    return jnp.where(jnp.abs(total) > 1000. * float(np.finfo(np.float32).eps),
                     jnp.divide(weights, jnp.where(total != 0, total, 1)), 0)


def _weight_matrix(in_size, out_size, scale, translation, kernel, antialias, edge_padding,
                   radius):
    """The (in_size, out_size) resampling weights of one dimension."""
    dtype = jnp.result_type(scale, translation)
    inv_scale = 1. / scale
    kernel_scale = jnp.maximum(inv_scale, 1.) if antialias else 1.
    # The input coordinate of each output pixel's centre.
    sample_f = ((jnp.arange(out_size, dtype=dtype) + 0.5) * inv_scale
                - translation * inv_scale - 0.5)
    pad = 0
    if edge_padding:
        if antialias:
            pad = math.ceil(radius * max(1.0 / float(scale), 1.0))
        else:
            pad = radius
    positions = jnp.arange(-pad, in_size + pad, dtype=dtype)
    if kernel is _AREA:
        # The overlap of output pixel j's interval, mapped back, with input
        # pixel i's.
        lo_out = jnp.arange(out_size, dtype=dtype) * inv_scale - translation * inv_scale
        hi_out = lo_out + inv_scale
        lo_in = jnp.arange(in_size, dtype=dtype)
        hi_in = lo_in + 1.0
        weights = jnp.maximum(0.0, jnp.minimum(hi_out[None, :], hi_in[:, None])
                              - jnp.maximum(lo_out[None, :], lo_in[:, None]))
    else:
        weights = kernel(jnp.abs(sample_f[None, :] - positions[:, None]) / kernel_scale)
    if edge_padding:
        # The weights of positions outside the input go to the edge pixels.
        rows = jnp.clip(positions.astype(jnp.int32), 0, in_size - 1)
        cols = lax.broadcast_in_dim(jnp.arange(out_size), (positions.shape[0], out_size), (1,))
        mat = jnp.zeros((in_size, out_size), dtype=dtype).at[rows[:, None], cols].add(weights)
        return _normalized(mat)
    weights = _normalized(weights)
    inside = jnp.logical_and(sample_f >= -0.5, sample_f <= in_size - 0.5)
    return jnp.where(inside[None, :], weights, 0)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _apply(x, out_shape, spatial_dims, scale, translation, kernel, antialias, precision,
           edge_padding=False, radius=None):
    if not spatial_dims:
        return x
    ndim = len(out_shape)
    if ndim + len(spatial_dims) > len(_LETTERS):
        raise ValueError(f"image of rank {ndim} has too many dimensions to resample "
                         f"(at {core.where()})")
    in_sub = _LETTERS[:ndim]
    out_sub = list(in_sub)
    operands, subs = [x], [in_sub]
    for i, d in enumerate(spatial_dims):
        d = d % x.ndim
        w = _weight_matrix(x.shape[d], out_shape[d], scale[i], translation[i], kernel,
                           antialias, edge_padding, radius).astype(x.dtype)
        new = _LETTERS[ndim + i]
        operands.append(w)
        subs.append(in_sub[d] + new)
        out_sub[d] = new
    spec = ",".join(subs) + "->" + "".join(out_sub)
    return einsum(spec, *operands, precision=precision)


def _inexact(x):
    x = jnp.asarray(x)
    if not dtypes.is_inexact(x.dtype):
        return x.astype(dtypes.default_float())
    return x


def _method(method):
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    if not isinstance(method, ResizeMethod):
        raise TypeError(f"method must be a string or a ResizeMethod, got {method!r} "
                        f"(at {core.where()})")
    return method


def _check_rank(shape, image):
    if len(shape) != image.ndim:
        raise ValueError("shape must have length equal to the number of dimensions of x; "
                         f" {tuple(shape)} vs {image.shape}")


def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias=True, precision=None):
    """`jax.image.scale_and_translate`: resamples `image` to `shape`, the
    location x of dimension `spatial_dims[i]` of the input going to
    `x * scale[i] + translation[i]` (half-centred pixels; output pixels
    whose sample falls outside the input are zero). Every method but
    NEAREST."""
    shape = tuple(core.canonicalize_shape(shape))
    image = jnp.asarray(image)
    _check_rank(shape, image)
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for "
                         "scale_and_translate.")
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    edge_padding = method == ResizeMethod.CUBIC_PYTORCH and not antialias
    image = _inexact(image)
    scale = jnp.asarray(scale)
    translation = jnp.asarray(translation)
    dtype = jnp.result_type(scale, translation)
    if not dtypes.is_inexact(dtype):
        dtype = dtypes.default_float()
    scale, translation = scale.astype(dtype), translation.astype(dtype)
    spatial_dims = tuple(spatial_dims)
    k = (len(spatial_dims),)
    if jnp.shape(scale) != k or jnp.shape(translation) != k:
        raise ValueError(f"scale_and_translate: {len(spatial_dims)} spatial dimensions "
                         f"need as many scales and translations (at {core.where()})")
    return _apply(image, shape, spatial_dims, [scale[i] for i in range(len(spatial_dims))],
                  [translation[i] for i in range(len(spatial_dims))], kernel, antialias,
                  precision, edge_padding=edge_padding, radius=radius)


def _resize_nearest(x, out_shape):
    for d, (m, n) in enumerate(zip(x.shape, out_shape)):
        if m == n:
            continue
        # (computed in float32, as JAX does)
        offsets = (jnp.arange(n, dtype=np.float32) + 0.5) * np.float32(m) / np.float32(n)
        offsets = jnp.floor(offsets.astype(np.float32)).astype(np.int32)
        index = [slice(None)] * x.ndim
        index[d] = offsets
        x = x[tuple(index)]
    return x


def _resize_impl(image, shape, method, antialias, precision):
    _check_rank(shape, image)
    method = _method(method)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    image = _inexact(image)
    spatial_dims = tuple(d for d in range(len(shape)) if image.shape[d] != shape[d])
    if method == ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC
    radius, kernel = _KERNELS[method]
    scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in spatial_dims]
    edge_padding = method == ResizeMethod.CUBIC_PYTORCH and not antialias
    return _apply(image, shape, spatial_dims, scale, [0.] * len(spatial_dims), kernel,
                  antialias, precision, edge_padding=edge_padding, radius=radius)


_resize_jit = jit(_resize_impl, static_argnums=(1, 2, 3, 4))


def resize(image, shape, method, antialias=True, precision=None):
    """`jax.image.resize`: `image` resampled to `shape` (every dimension;
    those of equal size are left alone) with `method`: a ResizeMethod or
    "nearest", "linear"/"bilinear"/"trilinear"/"triangle",
    "cubic"/"bicubic"/"tricubic", "cubic-pytorch"/"bicubic-pytorch",
    "lanczos3", "lanczos5", "area". `antialias` widens the kernel when
    downsampling. Nearest keeps the dtype; the others compute in a
    floating-point type."""
    shape = tuple(core.canonicalize_shape(shape))
    return _resize_jit(image, shape, method, antialias, precision)
