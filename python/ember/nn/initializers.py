"""`jax.nn.initializers`: functions `init(key, shape, dtype)` that make
initial parameters, with JAX's formulas (the same keys give JAX's values up
to the last bit of `truncated_normal`)."""

import math
import typing

import numpy as np

from ember import numpy as jnp
from ember import random
from ember._src import dtypes


@typing.runtime_checkable
class Initializer(typing.Protocol):
    """What the initializers of this module are: callables
    `init(key, shape, dtype=None, out_sharding=None) -> Array`."""

    def __call__(self, key, shape, dtype=None, out_sharding=None):
        raise NotImplementedError


def _dtype(dtype):
    return dtypes.default_float() if dtype is None else dtypes.canonicalize_dtype(dtype)


def zeros(key, shape, dtype=None):
    return jnp.zeros(shape, _dtype(dtype))


def ones(key, shape, dtype=None):
    return jnp.ones(shape, _dtype(dtype))


def constant(value, dtype=None):
    def init(key, shape, dtype=dtype):
        return jnp.full(shape, value, _dtype(dtype))
    return init


def uniform(scale=1e-2, dtype=None):
    """Uniform in [0, scale)."""
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        return random.uniform(key, shape, dt) * jnp.array(scale, dt)
    return init


def normal(stddev=1e-2, dtype=None):
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        return random.normal(key, shape, dt) * jnp.array(stddev, dt)
    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, shape, dt) * jnp.array(stddev, dt)
    return init


def _size(shape, axis):
    if isinstance(axis, int):
        return shape[axis]
    return math.prod(shape[i] for i in axis)


def _fans(shape, in_axis, out_axis, batch_axis):
    """(fan_in, fan_out): the axes not named are a convolution's receptive
    field, which multiplies both."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                         "weights tensor with default in_axis. Must be at least 2D or specify "
                         "in_axis explicitly.")
    in_size, out_size = _size(shape, in_axis), _size(shape, out_axis)
    batch = _size(shape, batch_axis) if batch_axis != () else 1
    field = math.prod(shape) / in_size / out_size / batch
    return in_size * field, out_size * field


# The standard deviation of a unit normal truncated to (-2, 2).
_TRUNC_STD = 0.87962566103423978


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None):
    """Samples with variance `scale / n`, n the fan in, out, their mean
    ("fan_avg") or geometric mean ("fan_geo_avg"), from a truncated normal,
    a normal or a uniform distribution."""
    def init(key, shape, dtype=dtype):
        shape = tuple(int(d) for d in shape)
        dt = _dtype(dtype)
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out,
                       "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": (fan_in * fan_out) ** 0.5}.get(mode)
        if denominator is None:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
        variance = jnp.array(scale / denominator, dtype=dt)
        if distribution == "truncated_normal":
            stddev = jnp.sqrt(variance) / jnp.array(_TRUNC_STD, dt)
            return random.truncated_normal(key, -2, 2, shape, dt) * stddev
        if distribution == "normal":
            return random.normal(key, shape, dt) * jnp.sqrt(variance)
        if distribution == "uniform":
            return random.uniform(key, shape, dt, -1) * jnp.sqrt(3 * variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: "
                         f"{distribution}")
    return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, batch_axis, dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, batch_axis, dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, batch_axis,
                            dtype)


xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """A (scaled) matrix with orthonormal columns along `column_axis`."""
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        shape = tuple(int(d) for d in shape)
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape")
        if 0 in shape:
            return jnp.zeros(shape, dt)
        n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
        q = random.orthogonal(key, n_rows, (), dt, n_cols)
        q = jnp.reshape(q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
        return jnp.array(scale, dt) * jnp.moveaxis(q, -1, column_axis)
    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """A convolution kernel (3-D to 5-D, spatial dimensions first) that is
    zero but at the spatial center, which holds an orthogonal (fan-in x
    fan-out) matrix (`orthogonal(scale, column_axis)` of the last two
    dimensions): the delta-orthogonal initialization."""
    def init(key, shape, dtype=dtype):
        dt = _dtype(dtype)
        shape = tuple(int(d) for d in shape)
        if len(shape) not in (3, 4, 5):
            raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
        if shape[-1] < shape[-2]:
            raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
        center = tuple((k - 1) // 2 for k in shape[:-2])
        matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dt)(key, shape[-2:])
        return jnp.zeros(shape, dt).at[center].set(matrix)
    return init


__all__ = ["Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
           "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
           "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
           "variance_scaling", "xavier_normal", "xavier_uniform", "zeros"]
