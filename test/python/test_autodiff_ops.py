"""JVP and VJP rules of every differentiable op, checked against central finite
differences in float64 (x64 on for this module), plus the transpose identity
<vjp(ct), t> == <ct, jvp(t)> and second derivatives of a selection of ops.

Inputs are chosen away from non-differentiable points; the conventions at
those points are tested in test_autodiff.py.
"""

import numpy as np
import pytest

import ember
import ember as jax
import ember.numpy as jnp
from ember import lax, nn


@pytest.fixture(scope="module", autouse=True)
def x64():
    old = ember.config.jax_enable_x64
    ember.config.update("jax_enable_x64", True)  # also clears the compile caches
    yield
    ember.config.update("jax_enable_x64", old)


EPS = 1e-6
TOL = 1e-6


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def _rng(seed):
    return np.random.default_rng(seed)


def uniform(lo, hi, shape, seed=0):
    return _rng(seed).uniform(lo, hi, shape)


def away(shape, seed=0, lo=0.5, hi=2.0):
    """Values with |x| in [lo, hi] and random sign (away from 0)."""
    r = _rng(seed)
    return r.uniform(lo, hi, shape) * r.choice([-1.0, 1.0], shape)


def check_grads(f, *args, modes=("fwd", "rev"), rtol=TOL, atol=TOL, seed=1):
    """Checks jax.jvp and jax.vjp of f (float64 arrays in, one array out)
    against the central-difference Jacobian.

    f, its JVP and its VJP are compiled together as one jitted function (one
    compile per check); the finite differences reuse that compiled function."""
    args = [np.asarray(a, np.float64) for a in args]
    fwd, rev = "fwd" in modes, "rev" in modes

    @jax.jit
    def run(xs, ts, ct):
        y = f(*xs)
        tan = jax.jvp(f, tuple(xs), tuple(ts))[1] if fwd else y
        grads = jax.vjp(f, *xs)[1](ct) if rev else ()
        return y, tan, grads

    out_shape = jax.eval_shape(f, *args).shape
    r = _rng(seed)
    ts = [r.standard_normal(a.shape) for a in args]
    ct = r.standard_normal(out_shape)
    y, tan, grads = run(args, ts, ct)
    y = np.asarray(y)
    assert y.shape == out_shape

    def value(xs):
        return np.asarray(run(xs, ts, ct)[0])

    jacs = []  # (out.size, arg.size) central-difference Jacobians
    for k, a in enumerate(args):
        jac = np.zeros((y.size, a.size))
        for i in range(a.size):
            step = np.zeros(a.size)
            step[i] = EPS
            step = step.reshape(a.shape)
            hi, lo = list(args), list(args)
            hi[k], lo[k] = a + step, a - step
            jac[:, i] = (value(hi) - value(lo)).reshape(-1) / (2 * EPS)
        jacs.append(jac)
    if fwd:
        tan = np.asarray(tan)
        assert tan.shape == y.shape and tan.dtype == np.float64
        want = sum(j @ t.reshape(-1) for j, t in zip(jacs, ts)).reshape(y.shape)
        np.testing.assert_allclose(tan, want, rtol=rtol, atol=atol)
    if rev:
        assert isinstance(grads, tuple) and len(grads) == len(args)
        for g, j, a in zip(grads, jacs, args):
            g = np.asarray(g)
            assert g.shape == a.shape and g.dtype == np.float64
            np.testing.assert_allclose(g, (j.T @ ct.reshape(-1)).reshape(a.shape),
                                       rtol=rtol, atol=atol)


SHAPES = [(), (4,), (2, 3)]
SHAPE_IDS = ["scalar", "vector", "matrix"]


# --------------------------------------------------------------------------
# Elementwise unary ops
# --------------------------------------------------------------------------

# name -> (function, input generator(shape, seed))
def _u(lo, hi):
    return lambda s, seed: uniform(lo, hi, s, seed)


def _away(lo=0.5, hi=2.0):
    return lambda s, seed: away(s, seed, lo, hi)


UNARY = {
    "neg": (jnp.negative, _u(-2, 2)),
    "abs": (jnp.abs, _away()),
    "exp": (jnp.exp, _u(-2, 2)),
    "exp2": (jnp.exp2, _u(-2, 2)),
    "log": (jnp.log, _u(0.5, 3)),
    "log1p": (jnp.log1p, _u(-0.5, 2)),
    "log2": (jnp.log2, _u(0.5, 3)),
    "log10": (jnp.log10, _u(0.5, 3)),
    "expm1": (jnp.expm1, _u(-2, 2)),
    "tanh": (jnp.tanh, _u(-2, 2)),
    "sigmoid": (jax.nn.sigmoid, _u(-3, 3)),
    "logistic": (lax.logistic, _u(-3, 3)),
    "sin": (jnp.sin, _u(-3, 3)),
    "cos": (jnp.cos, _u(-3, 3)),
    "tan": (jnp.tan, _u(-1.2, 1.2)),
    "arcsin": (jnp.arcsin, _u(-0.9, 0.9)),
    "arccos": (jnp.arccos, _u(-0.9, 0.9)),
    "arctan": (jnp.arctan, _u(-3, 3)),
    "sinh": (jnp.sinh, _u(-2, 2)),
    "cosh": (jnp.cosh, _u(-2, 2)),
    "arcsinh": (jnp.arcsinh, _u(-3, 3)),
    "arccosh": (jnp.arccosh, _u(1.2, 3)),
    "arctanh": (jnp.arctanh, _u(-0.9, 0.9)),
    "sqrt": (jnp.sqrt, _u(0.5, 3)),
    "rsqrt": (lax.rsqrt, _u(0.5, 3)),
    "cbrt": (jnp.cbrt, _away()),
    "erf": (lax.erf, _u(-2, 2)),
    "erfc": (lax.erfc, _u(-2, 2)),
    "erf_inv": (lax.erf_inv, _u(-0.9, 0.9)),
    "lgamma": (lax.lgamma, _u(0.5, 4)),
    "bessel_i0e": (lax.bessel_i0e, _away(0.5, 12)),
    "bessel_i1e": (lax.bessel_i1e, _u(-12, 12)),
    "i0": (jnp.i0, _u(-4, 4)),
    "square": (jnp.square, _u(-2, 2)),
    "reciprocal": (jnp.reciprocal, _away()),
    "integer_pow3": (lambda x: x ** 3, _u(-2, 2)),
    "integer_pow_neg2": (lambda x: x ** -2, _away()),
    "float_pow_half": (lambda x: x ** 0.5, _u(0.5, 3)),
    "sinc": (jnp.sinc, _away()),
    "relu": (nn.relu, _away()),
    "softplus": (nn.softplus, _u(-2, 2)),
    "gelu": (nn.gelu, _u(-2, 2)),
    "silu": (nn.silu, _u(-2, 2)),
    "elu": (nn.elu, _away()),
    "log_sigmoid": (nn.log_sigmoid, _u(-2, 2)),
}


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary(name, shape):
    f, gen = UNARY[name]
    check_grads(f, gen(shape, 0))


# --------------------------------------------------------------------------
# Elementwise binary / ternary ops (with broadcasting)
# --------------------------------------------------------------------------

BINARY = {
    "add": (jnp.add, _u(-2, 2), _u(-2, 2)),
    "sub": (jnp.subtract, _u(-2, 2), _u(-2, 2)),
    "mul": (jnp.multiply, _u(-2, 2), _u(-2, 2)),
    "div": (jnp.divide, _u(-2, 2), _away()),
    "pow": (jnp.power, _u(0.5, 2), _u(-2, 2)),
    "float_power": (jnp.float_power, _u(0.5, 2), _u(-2, 2)),
    # distinct generators/seeds keep maximum/minimum away from ties
    "maximum": (jnp.maximum, _u(-2, 2), _u(-2, 2)),
    "minimum": (jnp.minimum, _u(-2, 2), _u(-2, 2)),
    "arctan2": (jnp.arctan2, _away(), _away()),
    "hypot": (jnp.hypot, _away(), _away()),
    "logaddexp": (jnp.logaddexp, _u(-2, 2), _u(-2, 2)),
    "copysign": (jnp.copysign, _away(), _away()),
    # x / y stays strictly between 2 and 3 (or -3 and -2): away from jumps
    "remainder": (jnp.remainder, _u(2.1, 2.8), _u(1.0, 1.04)),
    "fmod": (jnp.fmod, _u(-2.8, -2.1), _u(1.0, 1.04)),
    "lax.rem": (lax.rem, _u(-2.8, -2.1), _u(1.0, 1.04)),
    "where": (lambda a, b: jnp.where(a > 0, a * 2, b), _away(), _u(-2, 2)),
    "lax.select": (lambda a, b: lax.select(a > 0, a, b), _away(), _u(-2, 2)),
}


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary(name, shape):
    f, gx, gy = BINARY[name]
    check_grads(f, gx(shape, 0), gy(shape, 1))


@pytest.mark.parametrize("name", ["add", "mul", "div", "pow", "maximum", "arctan2"])
def test_binary_broadcasting(name):
    f, gx, gy = BINARY[name]
    check_grads(f, gx((3, 1), 2), gy((1, 4), 3))
    check_grads(f, gx((), 4), gy((2, 3), 5))


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_clip(shape):
    x = uniform(-3, 3, shape, 0)
    lo = uniform(-2, -1, shape, 1)
    hi = uniform(1, 2, shape, 2)
    x = np.where(np.abs(np.abs(x) - 1.5) < 0.6, x * 0.3, x)  # some in, some out
    check_grads(lambda x, lo, hi: jnp.clip(x, lo, hi), x, lo, hi)
    check_grads(lambda lo, x, hi: lax.clamp(lo, x, hi), lo, x, hi)
    check_grads(lambda x: jnp.clip(x, -1.0, 1.0), x)


# --------------------------------------------------------------------------
# Contractions
# --------------------------------------------------------------------------

DOTS = {
    "dot_vv": (jnp.dot, (4,), (4,)),
    "dot_mv": (jnp.dot, (2, 3), (3,)),
    "matmul": (jnp.matmul, (2, 3), (3, 4)),
    "matmul_batched": (jnp.matmul, (2, 2, 3), (2, 3, 4)),
    "matmul_bcast": (jnp.matmul, (2, 2, 3), (3, 2)),
    "vdot": (jnp.vdot, (4,), (4,)),
    "outer": (jnp.outer, (3,), (2,)),
    "einsum_bmm": (lambda a, b: jnp.einsum("bij,bjk->bik", a, b), (2, 2, 3), (2, 3, 2)),
    "einsum_perm": (lambda a, b: jnp.einsum("ijb,kjb->bki", a, b), (2, 3, 2), (2, 3, 2)),
    "einsum_trace": (lambda a: jnp.einsum("ii->", a), (3, 3)),
    "tensordot": (lambda a, b: jnp.tensordot(a, b, axes=([0, 2], [1, 0])), (2, 3, 2), (2, 2, 3)),
    "tensordot_int": (lambda a, b: jnp.tensordot(a, b, axes=1), (2, 3), (3, 2)),
    "dot_general_batch": (
        lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))), (2, 2, 3), (2, 3, 2)),
    "dot_general_perm": (
        lambda a, b: lax.dot_general(a, b, (((0,), (2,)), ((2,), (0,)))), (3, 2, 2), (2, 4, 3)),
}


@pytest.mark.parametrize("name", list(DOTS))
def test_contraction(name):
    f, *shapes = DOTS[name]
    check_grads(f, *[uniform(-1, 1, s, i) for i, s in enumerate(shapes)])


# --------------------------------------------------------------------------
# Shape ops, slicing, indexing, scatter, padding
# --------------------------------------------------------------------------

IDX = np.array([2, 0, 2])  # repeated index: gather transposes to scatter-add

STRUCTURAL = {
    "broadcast_to": (lambda x: jnp.broadcast_to(x, (2, 3, 3)), [(3, 1)]),
    "broadcast_scalar": (lambda x: jnp.broadcast_to(x, (2, 3)), [()]),
    "broadcast_in_dim": (lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1,)), [(3,)]),
    "reshape": (lambda x: x.reshape(3, 2), [(2, 3)]),
    "reshape_flat": (lambda x: x.reshape(-1), [(2, 2, 2)]),
    "squeeze_expand": (lambda x: jnp.squeeze(x, 1)[:, None, :], [(2, 1, 3)]),
    "transpose": (lambda x: jnp.transpose(x, (2, 0, 1)), [(2, 3, 2)]),
    "T": (lambda x: x.T, [(2, 3)]),
    "slice": (lambda x: x[1:, 1:3], [(3, 4)]),
    "slice_strided": (lambda x: x[1:, ::2], [(3, 5)]),
    "slice_negative_step": (lambda x: x[::-2, 3:0:-1], [(4, 5)]),
    "lax.slice": (lambda x: lax.slice(x, (0, 1), (3, 5), (2, 3)), [(3, 5)]),
    "int_index": (lambda x: x[1], [(3, 2)]),
    "gather": (lambda x: x[IDX], [(4, 3)]),
    "gather_axis1": (lambda x: x[:, np.array([1, 1, 0])], [(2, 3)]),
    "gather_negative": (lambda x: x[np.array([-1, 0, -1])], [(3,)]),
    "gather_2d_index": (lambda x: jnp.take(x, np.array([[0, 2], [1, 1]]), axis=0), [(3,)]),
    "gather_two_arrays": (lambda x: x[np.array([0, 1, 1]), np.array([2, 0, 2])], [(2, 3)]),
    "gather_mixed": (lambda x: x[1, np.array([2, 0])], [(2, 3)]),
    "take_along_axis": (
        lambda x: jnp.take_along_axis(x, np.array([[0, 2, 1], [1, 1, 0]]), axis=1), [(2, 3)]),
    "at_set": (lambda x, u: x.at[np.array([0, 2])].set(u), [(4, 3), (2, 3)]),
    "at_set_slice": (lambda x, u: x.at[1:, ::2].set(u), [(3, 4), (2, 2)]),
    "at_add": (lambda x, u: x.at[np.array([0, 2, 0])].add(u), [(4,), (3,)]),
    "at_add_scalar": (lambda x, u: x.at[np.array([0, 0, 2])].add(u), [(3, 2), ()]),
    "dynamic_slice": (lambda x: lax.dynamic_slice(x, (1, 0), (2, 2)), [(3, 3)]),
    "dynamic_update_slice": (lambda x, u: lax.dynamic_update_slice(x, u, (1, 1)), [(3, 3), (2, 1)]),
    "pad": (lambda x: jnp.pad(x, ((1, 2), (0, 1))), [(2, 3)]),
    "pad_constant_value": (lambda x: jnp.pad(x, 1, constant_values=2.0), [(2, 3)]),
    "pad_edge": (lambda x: jnp.pad(x, ((1, 2), (0, 1)), mode="edge"), [(2, 3)]),
    "pad_reflect": (lambda x: jnp.pad(x, ((1, 1),), mode="reflect"), [(4,)]),
    "lax.pad_interior": (lambda x, v: lax.pad(x, v, ((1, 0, 2), (0, 1, 1))), [(2, 3), ()]),
    "lax.pad_negative": (lambda x, v: lax.pad(x, v, ((-1, 2, 1), (1, -1, 0))), [(3, 4), ()]),
    "concatenate": (lambda a, b: jnp.concatenate([a, b, a], axis=1), [(2, 2), (2, 3)]),
    "concatenate_0": (lambda a, b: jnp.concatenate([a, b]), [(2,), (3,)]),
    "stack": (lambda a, b: jnp.stack([a, b], axis=1), [(2, 3), (2, 3)]),
    "stack_scalars": (lambda a, b: jnp.stack([a, b, a]), [(), ()]),
    "flip": (lambda x: jnp.flip(x, 1), [(2, 3)]),
    "flip_all": (jnp.flip, [(2, 3)]),
    "roll": (lambda x: jnp.roll(x, 1, axis=1), [(2, 3)]),
    "split": (lambda x: jnp.split(x, 2, axis=0)[1], [(4, 3)]),
    "repeat": (lambda x: jnp.repeat(x, 2, axis=0), [(2, 3)]),
    "tile": (lambda x: jnp.tile(x, (2, 1)), [(2, 3)]),
    "diag": (jnp.diag, [(3, 3)]),
    "trace": (jnp.trace, [(3, 3)]),
    "triu": (jnp.triu, [(3, 3)]),
}


@pytest.mark.parametrize("name", list(STRUCTURAL))
def test_structural(name):
    f, shapes = STRUCTURAL[name]
    check_grads(f, *[uniform(-1, 1, s, i) for i, s in enumerate(shapes)])


def test_dynamic_slice_traced_index():
    # The start index is a traced argument of the jitted function.
    def loss(x, i):
        return jnp.sum(lax.dynamic_slice(x, (i,), (2,)) ** 2)

    x = np.arange(4.0)
    g = jax.jit(jax.grad(loss))(x, 1)
    np.testing.assert_allclose(np.asarray(g), [0, 2, 4, 0])
    g = jax.jit(jax.grad(loss))(x, 5)  # clamped to start 2, as in JAX
    np.testing.assert_allclose(np.asarray(g), [0, 0, 4, 6])

    def loss2(x, u, i):
        return jnp.sum(lax.dynamic_update_slice(x, u, (i,)) ** 2)

    gx, gu = jax.jit(jax.grad(loss2, argnums=(0, 1)))(x, np.array([5.0, 6.0]), 1)
    np.testing.assert_allclose(np.asarray(gx), [0, 0, 0, 6])
    np.testing.assert_allclose(np.asarray(gu), [10, 12])


def test_gather_traced_index():
    x = np.array([1.0, 3.0, 2.0])
    g = jax.grad(lambda x: x[jnp.argmax(x)] * 2)(x)
    np.testing.assert_allclose(np.asarray(g), [0, 2, 0])


# --------------------------------------------------------------------------
# Reductions, scans, sort, normalizations
# --------------------------------------------------------------------------

REDUCTIONS = {
    "sum_all": (jnp.sum, _u(-1, 1), (2, 3)),
    "sum_axis0": (lambda x: jnp.sum(x, axis=0), _u(-1, 1), (2, 3)),
    "sum_keepdims": (lambda x: jnp.sum(x, axis=1, keepdims=True), _u(-1, 1), (2, 3)),
    "sum_scalar": (lambda x: jnp.sum(x) * 3.0, _u(-1, 1), ()),
    "mean_axes": (lambda x: jnp.mean(x, axis=(0, 2)), _u(-1, 1), (2, 3, 2)),
    "mean_all": (jnp.mean, _u(-1, 1), (4,)),
    "max_axis": (lambda x: jnp.max(x, axis=1), _u(-1, 1), (2, 3)),
    "max_all": (jnp.max, _u(-1, 1), (2, 2, 2)),
    "max_keepdims": (lambda x: jnp.max(x, axis=0, keepdims=True), _u(-1, 1), (2, 3)),
    "min_all": (jnp.min, _u(-1, 1), (2, 3)),
    "min_axis": (lambda x: jnp.min(x, axis=0), _u(-1, 1), (3, 2)),
    "prod_axis": (lambda x: jnp.prod(x, axis=1), _away(), (2, 3)),
    "prod_all": (jnp.prod, _away(), (4,)),
    "var_axis": (lambda x: jnp.var(x, axis=1), _u(-1, 1), (2, 3)),
    "var_all": (jnp.var, _u(-1, 1), (4,)),
    "std_ddof": (lambda x: jnp.std(x, axis=0, ddof=1), _u(-1, 1), (3, 2)),
    "std_all": (jnp.std, _u(-1, 1), (2, 3)),
    "norm": (jnp.linalg.norm, _u(-1, 1), (2, 3)),
    "cumsum": (lambda x: jnp.cumsum(x, axis=1), _u(-1, 1), (2, 3)),
    "cumsum_flat": (jnp.cumsum, _u(-1, 1), (2, 3)),
    "cumsum_reverse": (lambda x: lax.cumsum(x, axis=0, reverse=True), _u(-1, 1), (4,)),
    "cumprod": (lambda x: jnp.cumprod(x, axis=0), _away(), (3, 2)),
    "cumprod_reverse": (lambda x: lax.cumprod(x, axis=0, reverse=True), _away(), (4,)),
    "sort": (jnp.sort, _u(-1, 1), (5,)),
    "sort_axis1": (lambda x: jnp.sort(x, axis=1), _u(-1, 1), (2, 3)),
    "sort_axis0": (lambda x: jnp.sort(x, axis=0), _u(-1, 1), (3, 2)),
    "argsort_gather": (lambda x: x[jnp.argsort(x)], _u(-1, 1), (5,)),
    "logsumexp": (nn.logsumexp, _u(-1, 1), (2, 3)),
    "logsumexp_axis": (lambda x: nn.logsumexp(x, axis=1), _u(-1, 1), (2, 3)),
    "softmax": (nn.softmax, _u(-1, 1), (2, 3)),
    "softmax_axis0": (lambda x: nn.softmax(x, axis=0), _u(-1, 1), (2, 3)),
    "log_softmax": (lambda x: nn.log_softmax(x, axis=0), _u(-1, 1), (2, 3)),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction(name):
    f, gen, shape = REDUCTIONS[name]
    check_grads(f, gen(shape, 0))


# --------------------------------------------------------------------------
# convert_element_type (finite differences in float32 would be noise:
# checked against the exact linear map instead)
# --------------------------------------------------------------------------


def test_convert_float64_to_float32():
    def f(x):
        return lax.convert_element_type(x, jnp.float32)

    x = uniform(-1, 1, (2, 3), 0)
    t = uniform(-1, 1, (2, 3), 1)
    y, ty = jax.jvp(f, (x,), (t,))
    assert np.asarray(y).dtype == np.float32 and np.asarray(ty).dtype == np.float32
    np.testing.assert_array_equal(np.asarray(ty), t.astype(np.float32))
    ct = uniform(-1, 1, (2, 3), 2).astype(np.float32)
    (g,) = jax.vjp(f, x)[1](ct)
    assert np.asarray(g).dtype == np.float64
    np.testing.assert_array_equal(np.asarray(g), ct.astype(np.float64))
    # Composed with float64 math: d/dx [x * f32(x)] = f32(x) + f32(1 * x), the
    # cotangent of the second factor being rounded through float32 (as in JAX).
    g = jax.grad(lambda x: jnp.sum(x * f(x).astype(jnp.float64)))(x)
    np.testing.assert_array_equal(np.asarray(g), 2 * x.astype(np.float32).astype(np.float64))


def test_convert_float32_to_float64():
    def f(x):
        return lax.convert_element_type(x, jnp.float64) ** 2

    x = uniform(-1, 1, (3,), 0).astype(np.float32)
    t = uniform(-1, 1, (3,), 1).astype(np.float32)
    y, ty = jax.jvp(f, (x,), (t,))
    np.testing.assert_allclose(np.asarray(y), x.astype(np.float64) ** 2, rtol=1e-12)
    assert np.asarray(ty).dtype == np.float64
    np.testing.assert_allclose(np.asarray(ty), 2 * x.astype(np.float64) * t, rtol=1e-12)
    g = jax.grad(lambda x: jnp.sum(f(x)))(x)
    assert np.asarray(g).dtype == np.float32
    np.testing.assert_allclose(np.asarray(g), 2 * x, rtol=1e-6)


def test_convert_through_integer_has_zero_derivative():
    x = np.array([1.5, 2.5, -0.7])
    g = jax.grad(lambda x: jnp.sum(x.astype(jnp.int32).astype(jnp.float64) * x))(x)
    np.testing.assert_allclose(np.asarray(g), np.trunc(x))


# --------------------------------------------------------------------------
# reduce_window (sum): forward mode
# --------------------------------------------------------------------------


def _window_sum(x):
    return lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1))


def _window_sum_strided(x):
    return lax.reduce_window(x, 0.0, lax.add, (2,), (2,))


@pytest.mark.parametrize("f,shape", [(_window_sum, (3, 4)), (_window_sum_strided, (6,))],
                         ids=["2x2", "strided"])
def test_reduce_window_sum_jvp(f, shape):
    check_grads(f, uniform(-1, 1, shape, 0), modes=("fwd",))


def test_reduce_window_sum_vjp():
    check_grads(_window_sum, uniform(-1, 1, (3, 4), 0), modes=("rev",))


def test_reduce_window_max():
    check_grads(lambda x: lax.reduce_window(x, -np.inf, lax.max, (2,), (1,)),
                uniform(-1, 1, (5,), 0))


def _window_prod(x):
    # padded with init (2.0), strided, 2-D windows
    return lax.reduce_window(x, 2.0, lax.mul, (2, 3), (1, 2), [(1, 0), (0, 2)])


@pytest.mark.parametrize("mode", ["fwd", "rev"])
def test_reduce_window_prod(mode):
    check_grads(_window_prod, uniform(-1, 1, (4, 6), 0), modes=(mode,))


def test_reduce_window_prod_with_zeros_is_exact(x64):
    # no division: the derivative at a zero is the product of the others
    # (the init 2.0 multiplies each window once; padding counts as 1, JAX's)
    x = np.array([0.5, -1.0, 2.0, 0.0, 1.5])
    g = jax.grad(lambda v: jnp.sum(lax.reduce_window(v, 2.0, lax.mul, (3,), (1,), "SAME")))(x)
    np.testing.assert_allclose(np.asarray(g), [-6.0, 3.0, -1.0, 5.0, 0.0])


# --------------------------------------------------------------------------
# Missing or wrong rules (minimal reproducers; JAX handles all of these)
# --------------------------------------------------------------------------


def test_prod_grad_with_zeros():
    # exact products of the other elements (no division by x)
    g = jax.grad(jnp.prod)(np.array([0.0, 2.0, 3.0]))
    np.testing.assert_allclose(np.asarray(g), [6.0, 0.0, 0.0])
    g = jax.grad(jnp.prod)(np.array([0.0, 2.0, 0.0]))
    np.testing.assert_allclose(np.asarray(g), [0.0, 0.0, 0.0])
    j = jax.jacrev(lambda x: jnp.prod(x, axis=0))(np.array([[0.0, 1.0], [2.0, 3.0]]))
    np.testing.assert_allclose(np.asarray(j), [[[2, 0], [0, 0]], [[0, 3], [0, 1]]])
    check_grads(lambda x: jnp.prod(x, axis=(0, 2)), np.array([[[0.0, 1.5], [2.0, -1.0]],
                                                               [[1.2, 0.7], [0.0, 0.3]]]))


def test_cumprod_jacobian_with_zero():
    j = jax.jacrev(jnp.cumprod)(np.array([2.0, 0.0, 3.0]))
    np.testing.assert_allclose(np.asarray(j), [[1, 0, 0], [0, 2, 0], [0, 6, 0]])


def test_lgamma_second_derivative():
    g2 = jax.grad(jax.grad(lax.lgamma))(2.5)
    np.testing.assert_allclose(float(g2), 0.4903577561002349, rtol=1e-10)  # trigamma(2.5)


IDENTITY_CRASH = """
import numpy as np, ember as jax, ember.numpy as jnp
print(float(jax.grad(lambda x: x)(2.0)), float(jax.grad(jnp.sum)(np.float32(2.0))))
"""


def test_vjp_of_identity():
    # In a subprocess: the failure is an LLVM assertion (SIGABRT).
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", IDENTITY_CRASH], capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["1.0", "1.0"]


def test_cummax():
    check_grads(lambda x: lax.cummax(x, axis=0), np.array([1.0, 3.0, 2.0, 4.0]))


@pytest.mark.parametrize("reverse", [False, True])
def test_cummax_cummin_2d(reverse):
    x = np.array([[1.0, 5.0, 2.0, 7.0], [4.0, -1.0, 3.0, 0.5], [0.0, 2.5, -3.0, 6.0]])
    check_grads(lambda v: lax.cummax(v, axis=1, reverse=reverse), x)
    check_grads(lambda v: lax.cummin(v, axis=0, reverse=reverse), x)


def test_digamma_derivative_negative_argument():
    check_grads(lax.digamma, np.array([-0.5, 0.3, 1.0, 7.25, 40.0]))


def test_bessel_derivatives_at_zero():
    # JAX's values: i0e'(0) = i1e(0) - sign(0) i0e(0) = 0, i1e'(0) = 1/2 (the
    # limit), i0'(0) = i1(0) = 0; and i0''(0) = 1/2.
    def grad(f):
        return jax.grad(lambda x: jnp.sum(f(x)))

    x = np.zeros(2)
    np.testing.assert_allclose(grad(lax.bessel_i0e)(x), 0.0)
    np.testing.assert_allclose(grad(lax.bessel_i1e)(x), 0.5)
    np.testing.assert_allclose(grad(jnp.i0)(x), 0.0)
    np.testing.assert_allclose(grad(grad(jnp.i0))(x), 0.5)


def test_cumprod_grad_with_zeros_reverse():
    check_grads(lambda v: jnp.cumprod(v[::-1])[::-1], np.array([2.0, 0.0, 3.0, 0.5, 1.5]))


def test_scatter_multiply():
    check_grads(lambda x: x.at[np.array([1])].multiply(3.0), np.array([1.0, 3.0, 2.0]))


def test_scatter_min():
    check_grads(lambda x: x.at[np.array([1])].min(0.0), np.array([1.0, 3.0, 2.0]))


# --------------------------------------------------------------------------
# Transpose identity: <vjp(ct), t> == <ct, jvp(t)>
# --------------------------------------------------------------------------


def _mlp(x):
    w = jnp.reshape(jnp.arange(x.shape[-1] * 3, dtype=x.dtype), (x.shape[-1], 3)) / 7.0
    return jnp.tanh(x @ w + 0.1) * jax.nn.sigmoid(x @ w)


def _attention(x):
    s = x @ x.T / 2.0
    return nn.softmax(s, axis=-1) @ x


def _indexing(x):
    i = np.array([0, x.shape[0] - 1, 0])
    y = x[i] * 2.0
    z = x.at[i].add(y ** 2)
    return jnp.concatenate([z[::-1], jnp.pad(y, ((1, 0),) + ((0, 0),) * (x.ndim - 1))])


def _scan_sort(x):
    return jnp.cumsum(jnp.sort(x, axis=0) * jnp.exp(x), axis=0) - jnp.max(x, axis=0)


def _norms(x):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    return (x - mu) / jnp.sqrt(jnp.var(x, axis=-1, keepdims=True) + 1e-3) + nn.logsumexp(x)


def _windows(x):
    y = lax.pad(x, 0.5, [(1, -1, 1)] + [(0, 0, 0)] * (x.ndim - 1))
    return jnp.flip(jnp.where(y > 0, y * y, jnp.sin(y)), 0)


IDENTITY_FUNS = {"mlp": _mlp, "attention": _attention, "indexing": _indexing,
                 "scan_sort": _scan_sort, "norms": _norms, "windows": _windows}


IDENTITY_CASES = [(name, shape) for name in IDENTITY_FUNS
                  for shape in [(4,), (3, 4), (2, 3, 4)]
                  if name != "attention" or len(shape) == 2]  # attention needs a matrix


@pytest.mark.parametrize("name,shape", IDENTITY_CASES,
                         ids=[f"{n}-{len(s)}d" for n, s in IDENTITY_CASES])
def test_transpose_identity(name, shape):
    f = IDENTITY_FUNS[name]
    x = uniform(-1, 1, shape, 0)
    t = uniform(-1, 1, shape, 1)
    y = np.asarray(jax.jit(f)(x))
    ct = uniform(-1, 1, y.shape, 2)

    @jax.jit
    def both(x, t, ct):
        _, tan = jax.jvp(f, (x,), (t,))
        (g,) = jax.vjp(f, x)[1](ct)
        return tan, g

    tan, g = both(x, t, ct)
    lhs = np.vdot(np.asarray(g), t)
    rhs = np.vdot(ct, np.asarray(tan))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-12)
    # and the jvp itself matches a finite difference along t
    fd = (np.asarray(jax.jit(f)(x + EPS * t)) - np.asarray(jax.jit(f)(x - EPS * t))) / (2 * EPS)
    np.testing.assert_allclose(np.asarray(tan), fd, rtol=TOL, atol=TOL)


def test_transpose_identity_two_inputs():
    def f(a, b):
        return jnp.einsum("ij,jk->ik", a, jnp.maximum(b, 0.1)) + a[:, :1] * b[0]

    a, b = uniform(-1, 1, (2, 3), 0), uniform(-1, 1, (3, 3), 1)
    ta, tb = uniform(-1, 1, (2, 3), 2), uniform(-1, 1, (3, 3), 3)
    ct = uniform(-1, 1, (2, 3), 4)
    _, tan = jax.jvp(f, (a, b), (ta, tb))
    ga, gb = jax.vjp(f, a, b)[1](ct)
    np.testing.assert_allclose(np.vdot(np.asarray(ga), ta) + np.vdot(np.asarray(gb), tb),
                               np.vdot(ct, np.asarray(tan)), rtol=1e-10)


# --------------------------------------------------------------------------
# Second derivatives: the JVP rules emit differentiable code
# --------------------------------------------------------------------------

SECOND_ORDER = ["exp", "log", "tanh", "sigmoid", "sin", "tan", "arcsin", "arctan", "sinh",
                "arccosh", "arctanh", "sqrt", "rsqrt", "cbrt", "erf", "erf_inv", "abs",
                "integer_pow3", "reciprocal", "softplus", "gelu", "bessel_i0e", "bessel_i1e",
                "i0"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_unary(name):
    f, gen = UNARY[name]
    # grad(sum(f)) is elementwise f'; its JVP/VJP give f'' (forward- and
    # reverse-over-reverse).
    check_grads(jax.grad(lambda x: jnp.sum(f(x))), gen((3,), 0), rtol=1e-5, atol=1e-5)


SECOND_ORDER_MISC = {
    "pow": lambda x: jnp.sum(jnp.power(x[:2] ** 2 + 0.5, x[2:])),
    "div_arctan2": lambda x: jnp.sum(x[:2] / x[2:] + jnp.arctan2(x[:2], x[2:])),
    "maximum": lambda x: jnp.sum(jnp.maximum(x[:2] ** 2, x[2:])),
    "matmul": lambda x: jnp.sum(jnp.tanh(x.reshape(2, 2) @ x.reshape(2, 2))),
    "softmax_xent": lambda x: -jnp.sum(nn.log_softmax(x) * np.array([0.1, 0.2, 0.3, 0.4])),
    "sort_cumsum": lambda x: jnp.sum(jnp.cumsum(jnp.sort(x)) ** 3),
    "gather_scatter": lambda x: jnp.sum(x.at[np.array([0, 0])].add(x[IDX[:2]] ** 2) ** 2),
    "max_prod": lambda x: jnp.max(x ** 2) + jnp.prod(x),
    "var": lambda x: jnp.var(x ** 2),
}


@pytest.mark.parametrize("name", list(SECOND_ORDER_MISC))
def test_second_order_misc(name):
    f = SECOND_ORDER_MISC[name]
    x = np.array([1.3, -0.7, 0.9, 1.6])
    check_grads(jax.grad(f), x, rtol=1e-5, atol=1e-5)
