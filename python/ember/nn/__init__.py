"""ember.nn: activations and friends, as in jax.nn."""

import ember.numpy as jnp
from ember._src import lax
from ember._src.numpy.lax_numpy import _jit_outside_traces


def relu(x):
    # JAX's relu has derivative 0 at 0 (a custom JVP); select gives exactly that.
    x = jnp.asarray(x)
    return jnp.where(x > 0, x, jnp.zeros_like(x))


tanh = jnp.tanh


def relu6(x):
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


def sigmoid(x):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.float32)
    return lax.logistic(x)


def log_sigmoid(x):
    return -softplus(-jnp.asarray(x))


def softplus(x):
    x = jnp.asarray(x)
    return jnp.logaddexp(x, 0.0)


def silu(x):
    return x * sigmoid(x)


swish = silu


def gelu(x, approximate=True):
    x = jnp.asarray(x)
    if approximate:
        c = jnp.sqrt(2.0 / jnp.pi).astype(x.dtype)
        return 0.5 * x * (1.0 + jnp.tanh(c * (x + 0.044715 * (x ** 3))))
    return 0.5 * x * (1.0 + lax.erf(x / jnp.sqrt(2.0).astype(x.dtype)))


def elu(x, alpha=1.0):
    x = jnp.asarray(x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0.0, x)))


def leaky_relu(x, negative_slope=0.01):
    x = jnp.asarray(x)
    return jnp.where(x >= 0, x, negative_slope * x)


def celu(x, alpha=1.0):
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


def selu(x):
    a, s = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    return s * elu(x, a)


def hard_tanh(x):
    return jnp.clip(x, -1.0, 1.0)


@_jit_outside_traces("axis", "keepdims", "return_sign")
def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    a = jnp.asarray(a)
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        a = a.astype(jnp.float32)
    m = jnp.max(a, axis=axis, keepdims=True)
    m = lax.stop_gradient(jnp.where(jnp.isfinite(m), m, jnp.zeros_like(m)))
    e = jnp.exp(a - m)
    if b is not None:
        e = e * b
    s = jnp.sum(e, axis=axis, keepdims=True)
    sign = jnp.sign(s)
    out = jnp.log(jnp.abs(s)) + m
    if not keepdims:
        axes = tuple(range(a.ndim)) if axis is None else axis
        out = jnp.squeeze(out, axes)
        sign = jnp.squeeze(sign, axes)
    return (out, sign) if return_sign else out


@_jit_outside_traces("axis", "initial")
def softmax(x, axis=-1, where=None, initial=None):
    x = jnp.asarray(x)
    if where is None:
        m = jnp.max(x, axis=axis, keepdims=True)
    else:
        m = jnp.max(x, axis=axis, keepdims=True, where=where, initial=-jnp.inf)
    e = jnp.exp(x - lax.stop_gradient(m))
    if where is not None:
        e = jnp.where(where, e, 0)
    out = e / jnp.sum(e, axis=axis, keepdims=True)
    return out if where is None else jnp.where(where, out, 0)


@_jit_outside_traces("axis", "initial")
def log_softmax(x, axis=-1, where=None, initial=None):
    x = jnp.asarray(x)
    if where is None:
        m = jnp.max(x, axis=axis, keepdims=True)
    else:
        m = jnp.max(x, axis=axis, keepdims=True, where=where, initial=-jnp.inf)
    shifted = x - lax.stop_gradient(m)
    e = jnp.exp(shifted)
    if where is not None:
        e = jnp.where(where, e, 0)
    out = shifted - jnp.log(jnp.sum(e, axis=axis, keepdims=True))
    return out if where is None else jnp.where(where, out, -jnp.inf)


def one_hot(x, num_classes, *, dtype=jnp.float32, axis=-1):
    x = jnp.asarray(x)
    cls = jnp.arange(num_classes, dtype=x.dtype if jnp.issubdtype(x.dtype, jnp.integer)
                     else jnp.int32)
    out = jnp.expand_dims(x, -1) == cls
    if axis != -1 and axis != x.ndim:
        out = jnp.moveaxis(out, -1, axis)
    return out.astype(dtype)


def soft_sign(x):
    x = jnp.asarray(x)
    return x / (jnp.abs(x) + 1)


def hard_sigmoid(x):
    return relu6(x + 3.0) / 6.0


def hard_silu(x):
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def glu(x, axis=-1):
    a, b = jnp.split(x, 2, axis)
    return a * sigmoid(b)


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    x = jnp.asarray(x)
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True)
    if variance is None:
        variance = jnp.mean(jnp.square(x), axis, keepdims=True) - jnp.square(mean)
    return (x - mean) * lax.rsqrt(variance + epsilon)


normalize = standardize
