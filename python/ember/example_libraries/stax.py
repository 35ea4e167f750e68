"""Stax: a small neural-net specification library (``jax.example_libraries.stax``).

Every layer constructor returns an ``(init_fun, apply_fun)`` pair:

* ``init_fun(rng, input_shape) -> (output_shape, params)``
* ``apply_fun(params, inputs, **kwargs) -> outputs`` (``rng=`` for stochastic layers)

Parameter initializers follow ``jax.nn.initializers`` and draw from ``ember.random``
(bit-exact threefry), so for the same key a model gets the same initial values as it
would under JAX: ``Dense`` uses ``glorot_normal()`` (variance scaling 1.0, ``fan_avg``,
truncated normal) for weights and ``normal(1e-2)`` for biases.

Conv layers (``GeneralConv``, ``Conv``, ``Conv1D`` and their ``...Transpose``
counterparts) exist only when ``ember.lax.conv_general_dilated`` does.
"""

import functools
import math

import ember.numpy as jnp
from ember import lax, random
from ember.nn import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    selu,
    sigmoid,
    softmax,
    softplus,
    standardize,
)

# The initializers are jax.nn.initializers' (as JAX's stax imports them).
from ember.nn.initializers import glorot_normal, normal, ones, variance_scaling, zeros

__all__ = [
    "AvgPool",
    "BatchNorm",
    "Conv",
    "Conv1D",
    "Conv1DTranspose",
    "ConvTranspose",
    "Dense",
    "Dropout",
    "Elu",
    "Exp",
    "FanInConcat",
    "FanInSum",
    "FanOut",
    "Flatten",
    "Gelu",
    "GeneralConv",
    "GeneralConvTranspose",
    "Identity",
    "LeakyRelu",
    "LogSoftmax",
    "MaxPool",
    "Relu",
    "Selu",
    "Sigmoid",
    "Softmax",
    "Softplus",
    "SumPool",
    "Tanh",
    "elementwise",
    "glorot",
    "glorot_normal",
    "logsoftmax",
    "normal",
    "ones",
    "parallel",
    "randn",
    "serial",
    "shape_dependent",
    "variance_scaling",
    "zeros",
]


# Aliases kept by jax.example_libraries.stax for backwards compatibility.
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


# ---------------------------------------------------------------------------------
# Layers.
# ---------------------------------------------------------------------------------

def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):  # noqa: B008
    """Layer constructor function for a dense (fully-connected) layer."""
    def init_fun(rng, input_shape):
        output_shape = tuple(input_shape[:-1]) + (out_dim,)
        k1, k2 = random.split(rng)
        W = W_init(k1, (input_shape[-1], out_dim))
        b = b_init(k2, (out_dim,))
        return output_shape, (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b
    return init_fun, apply_fun


def _conv_output_shape(lhs_shape, rhs_shape, strides, padding, dimension_numbers):
    """Output shape of a convolution given string dimension numbers."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_spatial = [i for i, c in enumerate(lhs_spec) if c not in "NC"]
    rhs_spatial = [i for i, c in enumerate(rhs_spec) if c not in "IO"]
    in_sizes = [lhs_shape[i] for i in lhs_spatial]
    win = [rhs_shape[i] for i in rhs_spatial]
    if isinstance(padding, str):
        pads = lax.padtype_to_pads(in_sizes, win, strides, padding)
    else:
        pads = padding
    spatial_out = iter([(n + lo + hi - w) // s + 1
                        for n, w, s, (lo, hi) in zip(in_sizes, win, strides, pads)])
    out = []
    for c in out_spec:
        if c == "N":
            out.append(lhs_shape[lhs_spec.index("N")])
        elif c == "C":
            out.append(rhs_shape[rhs_spec.index("O")])
        else:
            out.append(next(spatial_out))
    return tuple(out)


def _conv_layer(transpose, dimension_numbers, out_chan, filter_shape, strides, padding,
                W_init, b_init):
    """A convolution layer (`transpose`: a transposed convolution)."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = tuple(strides or one)
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        filters = iter(filter_shape)
        kernel_shape = tuple(out_chan if c == "O" else
                             input_shape[lhs_spec.index("C")] if c == "I" else
                             next(filters) for c in rhs_spec)
        if transpose:
            output_shape = lax.conv_transpose_shape_tuple(input_shape, kernel_shape, strides,
                                                          padding, dimension_numbers)
        else:
            output_shape = _conv_output_shape(input_shape, kernel_shape, strides, padding,
                                              dimension_numbers)
        bias_shape = tuple(out_chan if c == "C" else 1 for c in out_spec)
        k1, k2 = random.split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        if transpose:
            return lax.conv_transpose(inputs, W, strides, padding,
                                      dimension_numbers=dimension_numbers) + b
        return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                        dimension_numbers=dimension_numbers) + b
    return init_fun, apply_fun


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):  # noqa: B008
    """Layer construction function for a general convolution layer."""
    return _conv_layer(False, dimension_numbers, out_chan, filter_shape, strides, padding,
                       W_init, b_init)


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv1D = functools.partial(GeneralConv, ("NHC", "HIO", "NHC"))


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):  # noqa: B008
    """Layer construction function for a general transposed-convolution layer."""
    return _conv_layer(True, dimension_numbers, out_chan, filter_shape, strides, padding,
                       W_init, b_init)


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))

_CONV_NAMES = ("GeneralConv", "Conv", "Conv1D", "GeneralConvTranspose", "ConvTranspose",
               "Conv1DTranspose")

if not hasattr(lax, "conv_general_dilated") or not hasattr(lax, "conv_transpose"):
    # The convolution primitive is not available in this build of ember.
    for _name in _CONV_NAMES:
        del globals()[_name]
    del _name
    __all__ = [n for n in __all__ if n not in _CONV_NAMES]


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True,
              beta_init=zeros, gamma_init=ones):
    """Layer construction function for a batch normalization layer.

    Normalizes with the statistics of the current batch over ``axis`` (stax keeps no
    running averages), then applies the learned ``gamma`` scale and ``beta`` shift.
    """
    axis = (axis,) if jnp.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        nd = len(input_shape)
        ax = {a % nd for a in axis}
        shape = tuple(d for i, d in enumerate(input_shape) if i not in ax)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return tuple(input_shape), (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        nd = jnp.ndim(x)
        ax = tuple(sorted({a % nd for a in axis}))
        ed = tuple(None if i in ax else slice(None) for i in range(nd))
        z = standardize(x, ax, epsilon=epsilon)
        if center and scale:
            return gamma[ed] * z + beta[ed]
        if center:
            return z + beta[ed]
        if scale:
            return gamma[ed] * z
        return z
    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """Layer that applies a scalar function elementwise on its inputs."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)
    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _pooling_layer(reducer, init_val, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        """Layer construction function for a pooling layer."""
        window_shape = tuple(window_shape)
        strides = tuple(strides or (1,) * len(window_shape))
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        if spec is None:
            non_spatial_axes = 0, len(window_shape) + 1
        else:
            non_spatial_axes = spec.index("N"), spec.index("C")
        full_window, full_strides = window_shape, strides
        for i in sorted(non_spatial_axes):
            full_window = full_window[:i] + (1,) + full_window[i:]
            full_strides = full_strides[:i] + (1,) + full_strides[i:]

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, full_window, full_strides, padding)
            out_shape = tuple((n + lo + hi - w) // s + 1 for n, w, s, (lo, hi)
                              in zip(input_shape, full_window, full_strides, pads))
            return out_shape, ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, full_window, full_strides,
                                    padding)
            return rescale(out, inputs, spec) if rescale else out
        return init_fun, apply_fun
    return PoolingLayer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.)


def _normalize_by_window_size(dims, strides, padding):
    def rescale(outputs, inputs, spec):
        if spec is None:
            non_spatial_axes = 0, inputs.ndim - 1
        else:
            non_spatial_axes = spec.index("N"), spec.index("C")
        spatial_shape = tuple(inputs.shape[i] for i in range(inputs.ndim)
                              if i not in non_spatial_axes)
        one = jnp.ones(spatial_shape, dtype=inputs.dtype)
        window_sizes = lax.reduce_window(one, 0., lax.add, dims, strides, padding)
        for i in sorted(non_spatial_axes):
            window_sizes = jnp.expand_dims(window_sizes, i)
        return outputs / window_sizes
    return rescale


AvgPool = _pooling_layer(lax.add, 0., _normalize_by_window_size)


def _flatten():
    """Layer construction function for flattening all but the leading dim."""
    def init_fun(rng, input_shape):
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.reshape(inputs, (inputs.shape[0], -1))
    return init_fun, apply_fun


Flatten = _flatten()


def _identity():
    """Layer construction function for an identity layer."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return inputs
    return init_fun, apply_fun


Identity = _identity()


def FanOut(num):
    """Layer construction function for a fan-out layer."""
    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num
    return init_fun, apply_fun


def _fan_in_sum():
    """Layer construction function for a fan-in sum layer."""
    def init_fun(rng, input_shape):
        return input_shape[0], ()

    def apply_fun(params, inputs, **kwargs):
        return sum(inputs[1:], inputs[0])
    return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis=-1):
    """Layer construction function for a fan-in concatenation layer."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        concat_size = sum(shape[ax] for shape in input_shape)
        first = tuple(input_shape[0])
        return first[:ax] + (concat_size,) + first[ax + 1:], ()

    def apply_fun(params, inputs, **kwargs):
        return jnp.concatenate(inputs, axis)
    return init_fun, apply_fun


def Dropout(rate, mode="train"):
    """Layer construction function for a dropout layer with given rate.

    As in JAX's stax, ``rate`` is the probability of *keeping* a unit: in ``'train'``
    mode kept units are scaled by ``1 / rate`` and the others zeroed, using the key
    passed as ``apply_fun(params, inputs, rng=key)``; ``'test'`` mode is the identity.
    """
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if mode == "train":
            if rng is None:
                raise ValueError(
                    "Dropout layer requires apply_fun to be called with a PRNG key "
                    "argument. That is, instead of `apply_fun(params, inputs)`, call "
                    "it like `apply_fun(params, inputs, rng=key)` where `key` is a "
                    "PRNG key (e.g. from `ember.random.PRNGKey`).")
            keep = random.bernoulli(rng, rate, inputs.shape)
            return jnp.where(keep, inputs / rate, 0)
        if mode == "test":
            return inputs
        raise ValueError("Dropout layer requires `mode` argument to be either "
                         "`'train'` or `'test'`")
    return init_fun, apply_fun


# ---------------------------------------------------------------------------------
# Combinators.
# ---------------------------------------------------------------------------------

def serial(*layers):
    """Combinator for composing layers in serial.

    Returns an ``(init_fun, apply_fun)`` pair for the composition; the ``rng`` keyword
    of ``apply_fun`` is split into one key per layer.
    """
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        for fun, param, layer_rng in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=layer_rng, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers):
    """Combinator for composing layers in parallel.

    The resulting layer takes a sequence of inputs and returns a sequence of outputs
    with the same length as ``layers``; often used with ``FanOut`` and ``FanInSum``.
    """
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        rngs = random.split(rng, nlayers)
        results = [init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)]
        return tuple(zip(*results))

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, nlayers) if rng is not None else (None,) * nlayers
        return [f(p, x, rng=r, **kwargs)
                for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
    return init_fun, apply_fun


def shape_dependent(make_layer):
    """Combinator to delay layer constructor pair until input shapes are known.

    ``make_layer(input_shape)`` returns an ``(init_fun, apply_fun)`` pair.
    """
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)
    return init_fun, apply_fun
