"""ember.nn: activations and friends, as in jax.nn."""

import dataclasses
import warnings

import ml_dtypes
import numpy as np

import ember.numpy as jnp
from ember._src import core, dtypes, lax
from ember._src.ad import custom_jvp
from ember._src.numpy.lax_numpy import _check_arraylike, _jit_outside_traces


def relu(x):
    # JAX's relu is max(x, 0) (NaN stays NaN, booleans become ints) with
    # derivative 0 at 0 (a custom JVP); these selects give exactly that, and
    # leave no `max` for `pl.estimate_cost` to count (JAX's custom_jvp_call
    # has no cost rule).
    x = jnp.asarray(x)
    if x.dtype == np.bool_:
        x = x.astype(dtypes.default_int())
    positive = x > 0  # (first: the residual saved is JAX's `gt`)
    zero = jnp.zeros_like(x)
    if jnp.issubdtype(x.dtype, jnp.inexact):
        # (NaN stays NaN, with derivative 0 there, as JAX's)
        zero = jnp.where(x != x, lax.stop_gradient(x), zero)
    return jnp.where(positive, x, zero)


tanh = jnp.tanh


@custom_jvp
def relu6(x):
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


# Derivative 0 at both kinks, as JAX's (min/max split a gradient at a tie).
relu6.defjvps(lambda g, ans, x: jnp.where((x > 0) & (x < 6), g, jnp.zeros_like(g)))


def sigmoid(x):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        raise TypeError(f"logistic does not accept dtype {x.dtype}. Accepted dtypes are "
                        "subtypes of floating, complexfloating.")
    return lax.logistic(x)


def log_sigmoid(x):
    return -softplus(-jnp.asarray(x))


def softplus(x):
    x = jnp.asarray(x)
    return jnp.logaddexp(x, 0)  # (an int 0: integer inputs give strong floats, as JAX's)


def silu(x):
    return x * sigmoid(x)


swish = silu


def gelu(x, approximate=True):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):  # (JAX's promote_args_inexact)
        x = x.astype(jnp.result_type(x.dtype, 1.0))
    if approximate:
        c = jnp.sqrt(2.0 / jnp.pi).astype(x.dtype)
        return 0.5 * x * (1.0 + jnp.tanh(c * (x + 0.044715 * (x ** 3))))
    # x erfc(-x / sqrt 2) / 2: no cancellation of 1 + erf for negative x.
    return (x * lax.erfc(-x * jnp.sqrt(0.5).astype(x.dtype)) / 2).astype(x.dtype)


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
    # Derivative 1 at -1 and 1, as JAX's selects give.
    x = jnp.asarray(x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))  # (booleans give ints, as JAX's)


@_jit_outside_traces("axis", "keepdims", "return_sign")
def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    a = jnp.asarray(a)
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        a = a.astype(jnp.float32)
    cplx = jnp.iscomplexobj(a)
    # The shift is the largest real part (-inf for no elements: an empty
    # sum's log is -inf, as JAX's).
    m = jnp.max(jnp.real(a), axis=axis, keepdims=True, where=where, initial=-jnp.inf)
    m = lax.stop_gradient(jnp.where(jnp.isfinite(m), m, jnp.zeros_like(m)))
    e = jnp.exp(a - m)
    if where is not None:
        e = jnp.where(where, e, jnp.zeros_like(e))
    if b is not None:
        e = e * b
    s = jnp.sum(e, axis=axis, keepdims=True)
    sign = jnp.sign(s)
    # (A complex sum keeps its phase: the principal log; with return_sign
    # the log of the magnitude, the phase in the sign, as JAX's.)
    out = (jnp.log(s) if cplx and not return_sign else jnp.log(jnp.abs(s))) + m
    if not keepdims:
        axes = tuple(range(a.ndim)) if axis is None else axis
        out = jnp.squeeze(out, axes)
        sign = jnp.squeeze(sign, axes)
    if return_sign:
        return out, sign
    if cplx:
        return out
    # (A negative sum has no real log: NaN, as JAX's.)
    return jnp.where(sign < 0, jnp.nan, out).astype(out.dtype)


@_jit_outside_traces("axis")
def softmax(x, axis=-1, where=None):
    x = jnp.asarray(x)
    # (`initial=-inf` as JAX's: in a float type without infinities it is NaN.)
    m = jnp.max(x, axis=axis, keepdims=True, where=where, initial=-jnp.inf)
    e = jnp.exp(x - lax.stop_gradient(m))
    if where is not None:
        e = jnp.where(where, e, 0)
    out = e / jnp.sum(e, axis=axis, keepdims=True)
    return out if where is None else jnp.where(where, out, 0)


@_jit_outside_traces("axis")
def log_softmax(x, axis=-1, where=None):
    x = jnp.asarray(x)
    # (`initial=-inf` as JAX's: in a float type without infinities it is NaN.)
    m = jnp.max(x, axis=axis, keepdims=True, where=where, initial=-jnp.inf)
    shifted = x - lax.stop_gradient(m)
    e = jnp.exp(shifted)
    if where is not None:
        e = jnp.where(where, e, 0)
    out = shifted - jnp.log(jnp.sum(e, axis=axis, keepdims=True))
    return out if where is None else jnp.where(where, out, -jnp.inf)


def one_hot(x, num_classes, *, dtype=None, axis=-1):
    x = jnp.asarray(x)
    cls = jnp.arange(num_classes, dtype=x.dtype if jnp.issubdtype(x.dtype, jnp.integer)
                     else jnp.int32)
    out = jnp.expand_dims(x, -1) == cls
    if axis != -1 and axis != x.ndim:
        out = jnp.moveaxis(out, -1, axis)
    # (JAX's default: the default float type, float64 with x64.)
    return out.astype(jnp.zeros((), dtype).dtype if dtype is not None else
                      jnp.zeros(()).dtype)


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
        mean = jnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        # (The statistics over the `where` elements only, as JAX's; every
        # element is standardized with them.)
        variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - jnp.square(mean)
    return (x - mean) * lax.rsqrt(variance + epsilon)


normalize = standardize


# --------------------------------------------------------------------------
# more activations (jax.nn 0.10.2)
# --------------------------------------------------------------------------


def identity(x):
    """The argument, unchanged, as an array."""
    _check_arraylike("identity", x)
    return jnp.asarray(x)


def squareplus(x, b=4):
    """(x + sqrt(x**2 + b)) / 2."""
    _check_arraylike("squareplus", x, b)
    x = jnp.asarray(x)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


def sparse_plus(x):
    """0 for x <= -1, (x + 1)**2 / 4 between -1 and 1, x for x >= 1."""
    _check_arraylike("sparse_plus", x)
    x = jnp.asarray(x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_sigmoid(x):
    """0 for x <= -1, (x + 1) / 2 between -1 and 1, 1 for x >= 1."""
    _check_arraylike("sparse_sigmoid", x)
    return 0.5 * jnp.clip(jnp.asarray(x) + 1.0, 0.0, 2.0)


def mish(x):
    """x * tanh(softplus(x))."""
    _check_arraylike("mish", x)
    x = jnp.asarray(x)
    return x * jnp.tanh(softplus(x))


@custom_jvp
def log1mexp(x):
    """log(1 - exp(-x)), accurately for small and large x (x >= 0)."""
    _check_arraylike("log1mexp", x)
    x = jnp.asarray(x)
    return jnp.where(x < jnp.log(2.0), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


log1mexp.defjvps(lambda g, ans, x: g / jnp.expm1(x))


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """log(mean(exp(x))) = logsumexp(x) - log(n), over `axis` (where `where`)."""
    _check_arraylike("logmeanexp", x)
    x = jnp.asarray(x)
    lse = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
    if where is None:
        axes = range(x.ndim) if axis is None else \
            ((axis,) if isinstance(axis, int) else tuple(axis))
        n = 1
        for a in axes:
            n *= x.shape[a]
        count = jnp.asarray(n, dtype=lse.dtype)
    else:
        count = jnp.sum(jnp.broadcast_to(jnp.asarray(where), x.shape), axis=axis,
                        keepdims=keepdims, dtype=lse.dtype)
    return lse - jnp.log(count)


# --------------------------------------------------------------------------
# dot_product_attention (JAX's 'xla' implementation)
# --------------------------------------------------------------------------


def _large_negative(dtype):
    big = min(float(jnp.finfo(dtype).max), float(jnp.finfo(jnp.float32).max))
    return jnp.asarray(-0.7 * big, dtype=dtype)


def _attention_mask(T, S, mask, is_causal, q_seqlen, kv_seqlen, local_window_size):
    """The combined boolean mask over (B, K, G, T, S) (broadcastable), or None."""
    combined = None

    def both(a, b):
        return b if a is None else jnp.logical_and(a, b)

    if mask is not None:
        combined = both(combined, mask)
    if is_causal:
        combined = both(combined, jnp.tril(jnp.ones((T, S), dtype=bool)))
    if local_window_size is not None:
        left, right = local_window_size
        qpos = jnp.arange(T)[:, None]
        kpos = jnp.arange(S)[None, :]
        combined = both(combined, jnp.logical_and(qpos <= kpos + left, qpos >= kpos - right))
    if q_seqlen is not None or kv_seqlen is not None:
        pad = True
        if q_seqlen is not None:
            pad = jnp.logical_and(pad, jnp.arange(T)[None, :, None] < q_seqlen[:, None, None])
        if kv_seqlen is not None:
            pad = jnp.logical_and(pad, jnp.arange(S)[None, None, :] < kv_seqlen[:, None, None])
        combined = both(combined, pad[:, None, None, :, :])
    return combined


def _attention_xla(query, key, value, bias, mask, is_causal, scale, q_seqlen, kv_seqlen,
                   local_window_size, return_residual):
    B, T, N, H = query.shape
    _, S, K, _ = key.shape
    G = N // K
    query = jnp.reshape(query, (B, T, K, G, H))

    def grouped(t):
        if t is None:
            return None
        tB, tN, tT, tS = t.shape
        if tN == 1:
            return t[:, :, None, :, :]
        return jnp.reshape(t, (tB, K, G, tT, tS))

    bias, mask = grouped(bias), grouped(mask)
    logits_dtype = jnp.promote_types(query.dtype, jnp.float32)
    logits = jnp.einsum("BTKGH,BSKH->BKGTS", query, key, preferred_element_type=logits_dtype)
    logits = logits * jnp.asarray(scale, dtype=logits.dtype)
    if bias is not None:
        logits = (logits + bias).astype(logits.dtype)
    combined = _attention_mask(T, S, mask, is_causal, q_seqlen, kv_seqlen, local_window_size)
    if combined is not None:
        logits = jnp.where(combined, logits, _large_negative(logits.dtype))
    logits = logits.astype(jnp.float32)
    probs = softmax(logits, axis=-1).astype(key.dtype)
    encoded = jnp.einsum("BKGTS,BSKH->BTKGH", probs, value)
    if q_seqlen is not None:
        keep = jnp.arange(T)[None, :] < q_seqlen[:, None]
        encoded = encoded * keep[:, :, None, None, None].astype(encoded.dtype)
    encoded = jnp.reshape(encoded, (B, T, N, H))
    if not return_residual:
        return encoded
    lse = logsumexp(logits, axis=-1).astype(key.dtype)  # B K G T
    lse = jnp.reshape(jnp.transpose(lse, (0, 3, 1, 2)), (B, T, N))
    return encoded, lax.stop_gradient(lse)


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None, key_value_seq_lengths=None,
                          local_window_size=None, implementation=None, return_residual=False):
    """softmax(Q K^T * scale + bias, masked) V per head, in JAX's BTNH layout
    (or TNH); K/V with fewer heads than Q give grouped-query attention."""
    output_shape = jnp.asarray(query).shape

    def as_4d(t):
        t = jnp.asarray(t)
        return jnp.expand_dims(t, tuple(range(4 - t.ndim))) if t.ndim < 4 else t

    query_arr, key_arr, value_arr = as_4d(query), as_4d(key), as_4d(value)
    bias = as_4d(bias) if bias is not None else None
    mask = as_4d(mask) if mask is not None else None
    if query_seq_lengths is not None:
        query_seq_lengths = jnp.asarray(query_seq_lengths)
    if key_value_seq_lengths is not None:
        key_value_seq_lengths = jnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)

    def check(t, shape, dtype, name):
        if t is None:
            return
        if t.ndim != len(shape):
            raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim} "
                             f"(at {core.where()})")
        if dtype is not None and t.dtype != dtype:
            raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype} "
                             f"(at {core.where()})")
        for i in range(t.ndim):
            if shape[i] != -1 and t.shape[i] != shape[i]:
                raise ValueError(f"{name} shape should be {shape}: but got {t.shape} "
                                 f"(at {core.where()})")

    B, S, K, H = key_arr.shape
    check(value_arr, [B, S, K, H], key_arr.dtype, "value")
    check(query_arr, [B, -1, -1, H], key_arr.dtype, "query")
    check(mask, [-1] * 4, np.dtype(bool), "mask")
    check(bias, [-1] * 4, None, "bias")
    check(query_seq_lengths, [B], np.dtype("int32"), "query_seq_lengths")
    check(key_value_seq_lengths, [B], np.dtype("int32"), "key_value_seq_lengths")
    if query_arr.shape[-2] % K != 0:
        raise ValueError(f"The number of query heads must be a multiple of key/value heads, "
                         f"but got {query_arr.shape[-2]} vs {K} (at {core.where()})")
    for name, t in (("bias", bias), ("mask", mask)):
        if t is not None and t.shape[1] not in (1, query_arr.shape[2]):
            raise ValueError(f"{name} has {t.shape[1]} heads; it must have 1 or "
                             f"{query_arr.shape[2]} (at {core.where()})")
    scale_val = (1.0 / np.sqrt(H)) if scale is None else scale

    if implementation == "cudnn":
        raise RuntimeError(f"cuDNN is not detected. (at {core.where()})")
    if implementation not in (None, "xla"):
        raise ValueError(f"Unsupported implementation option: {implementation} "
                         f"(at {core.where()})")
    out = _attention_xla(query_arr, key_arr, value_arr, bias, mask, is_causal, scale_val,
                         query_seq_lengths, key_value_seq_lengths, local_window_size,
                         return_residual)
    if return_residual:
        out, residual = out
        return jnp.reshape(out, output_shape), jnp.reshape(residual, output_shape[:-1])
    return jnp.reshape(out, output_shape)


# --------------------------------------------------------------------------
# block-scaled matmul
# --------------------------------------------------------------------------


@dataclasses.dataclass
class BlockScaleConfig:
    """JAX's block-scaling configuration (`jax.nn.get_scaled_dot_general_config`)."""
    mode: str
    block_size: int
    data_type: object
    scale_type: object
    global_scale: object
    infer_only: bool


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """Block-scaled batched matmul: lhs (B, M, K) times rhs (B, N, K) over K,
    each operand multiplied by its scales repeated over blocks of K (the
    mathematical definition JAX documents, computed in float32)."""
    a, b, a_scales, b_scales = (jnp.asarray(t) for t in (lhs, rhs, lhs_scales, rhs_scales))
    if not all(t.ndim == 3 for t in (a, b, a_scales, b_scales)):
        raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays "
                         f"(at {core.where()})")
    B_a, M_a, K_a = a.shape
    B_b, N_b, K_b = b.shape
    if K_a != K_b or B_a != B_b:
        raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) "
                         f"and contract (K) dimensions, but got shapes {a.shape} and {b.shape} "
                         f"(at {core.where()})")
    B_as, M_as, K_as = a_scales.shape
    B_bs, N_bs, K_bs = b_scales.shape
    if K_as != K_bs or B_as != B_bs:
        raise ValueError("scaled_matmul requires scales to have matching batch (B) and "
                         f"contract (K) dimensions, but got shapes {a_scales.shape} and "
                         f"{b_scales.shape} (at {core.where()})")
    if M_as != M_a or N_bs != N_b:
        raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                         f"inputs, but got shapes a: {a.shape}, b: {b.shape}, a_scales: "
                         f"{a_scales.shape}, b_scales: {b_scales.shape} (at {core.where()})")
    if K_a % K_as:
        raise ValueError(f"scaled_matmul: the scales' last dimension {K_as} must divide "
                         f"{K_a} (at {core.where()})")
    f32 = jnp.float32
    a_full = a.astype(f32) * jnp.repeat(a_scales.astype(f32), K_a // K_as, axis=-1)
    b_full = b.astype(f32) * jnp.repeat(b_scales.astype(f32), K_b // K_bs, axis=-1)
    out = jnp.einsum("BMK,BNK->BMN", a_full, b_full, preferred_element_type=f32)
    return out.astype(preferred_element_type)


def get_scaled_dot_general_config(mode, global_scale=None):
    """The BlockScaleConfig of 'nvfp4' or 'mxfp8' (as JAX's)."""
    if mode == "nvfp4":
        return BlockScaleConfig(
            mode="nvfp4", block_size=16, data_type=ml_dtypes.float4_e2m1fn,
            scale_type=ml_dtypes.float8_e4m3fn,
            global_scale=jnp.ones((1,), dtype=jnp.float32) if global_scale is None
            else global_scale, infer_only=False)
    if mode == "mxfp8":
        return BlockScaleConfig(
            mode="mxfp8", block_size=32, data_type=ml_dtypes.float8_e4m3fn,
            scale_type=ml_dtypes.float8_e8m0fnu, global_scale=None, infer_only=False)
    raise ValueError(f"Unsupported mode: {mode} (at {core.where()})")


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
    """`lax.dot_general` with block-scaled quantization of its operands
    (`configs`); without configs, exactly `lax.dot_general`."""
    if implementation is not None:
        warnings.warn("Backend selector, now ignored. The system chooses the backend "
                      "automatically.", DeprecationWarning, stacklevel=2)
    if configs is None:
        return lax.dot_general(lhs, rhs, dimension_numbers,
                               preferred_element_type=preferred_element_type)
    raise NotImplementedError("scaled_dot_general with quantization configs is not built "
                              "(JAX computes it with cuDNN, on NVIDIA GPUs only; its CPU "
                              f"backend has no lowering either) (at {core.where()})")


from ember.nn import initializers as initializers  # noqa: E402  (jax.nn.initializers)
