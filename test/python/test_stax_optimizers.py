"""ember.example_libraries.stax and .optimizers against NumPy (and recorded JAX values)."""

import math

import numpy as np
import pytest

import ember as jax
from ember.example_libraries import optimizers, stax

from helpers import assert_close, jnp, rand

TOL = {"rtol": 1e-5, "atol": 1e-6}
KEY = jax.random.PRNGKey(0)


def npa(x):
    return np.asarray(x)


# ---------------------------------------------------------------------------------
# Initializers and Dense.
# ---------------------------------------------------------------------------------

def test_dense_init_matches_jax():
    # Recorded with jax 0.10.2: stax.Dense(3)[0](jax.random.PRNGKey(42), (2, 4)).
    out_shape, (W, b) = stax.Dense(3)[0](jax.random.PRNGKey(42), (2, 4))
    assert out_shape == (2, 3)
    np.testing.assert_allclose(npa(W), [
        [0.044034608, -0.2810598, 0.7240058],
        [0.30012348, 0.17400421, 0.17974755],
        [0.33244622, -0.46329162, -1.0297688],
        [0.3685309, 0.12614165, 0.0014350751]], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(npa(b), [0.00605764, 0.00799044, -0.00908927], rtol=1e-5)


def test_glorot_normal_axes_match_jax():
    # jax.nn.initializers.glorot_normal(2, 3)(PRNGKey(7), (2, 2, 2, 3)), first values.
    W = stax.glorot_normal(2, 3)(jax.random.PRNGKey(7), (2, 2, 2, 3))
    assert W.shape == (2, 2, 2, 3) and W.dtype == np.float32
    np.testing.assert_allclose(npa(W).ravel()[:6], [0.15435547, 0.6021259, -0.17641312,
                                                   -0.04834872, 0.20994028, 0.11452539],
                               rtol=1e-6, atol=1e-7)


def test_initializer_statistics():
    W = npa(stax.glorot_normal()(KEY, (200, 300)))
    std = math.sqrt(2.0 / (200 + 300))
    assert abs(W.std() - std) / std < 0.03
    assert np.abs(W).max() <= 2 * std / 0.87962566103423978 + 1e-6  # truncated at 2 sigma
    b = npa(stax.normal(0.5)(KEY, (20000,)))
    assert abs(b.std() - 0.5) < 0.02 and abs(b.mean()) < 0.02
    assert_close(stax.zeros(KEY, (2, 3)), np.zeros((2, 3), np.float32))
    assert_close(stax.ones(KEY, (4,)), np.ones(4, np.float32))
    assert stax.glorot is stax.glorot_normal and stax.randn is stax.normal


def test_dense_apply():
    init, apply = stax.Dense(5)
    out_shape, (W, b) = init(KEY, (-1, 7))
    assert out_shape == (-1, 5) and W.shape == (7, 5) and b.shape == (5,)
    x = rand((4, 7), np.float32, seed=1)
    assert_close(apply((W, b), x), x @ npa(W) + npa(b), **TOL)
    x3 = rand((2, 3, 7), np.float32, seed=2)
    assert_close(apply((W, b), x3), x3 @ npa(W) + npa(b), **TOL)
    _, (W0, b0) = stax.Dense(2, W_init=stax.ones, b_init=stax.zeros)[0](KEY, (3,))
    assert_close(W0, np.ones((3, 2), np.float32))
    assert_close(b0, np.zeros(2, np.float32))


# ---------------------------------------------------------------------------------
# Elementwise and shape layers.
# ---------------------------------------------------------------------------------

def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


X = rand((3, 6), np.float32, seed=3, low=-4, high=4)

ELEMENTWISE = [
    ("Relu", lambda x: np.maximum(x, 0)),
    ("Tanh", np.tanh),
    ("Sigmoid", _sigmoid),
    ("Softmax", lambda x: np.exp(_log_softmax(x))),
    ("LogSoftmax", _log_softmax),
    ("Gelu", _gelu_tanh),
    ("Elu", lambda x: np.where(x > 0, x, np.expm1(x))),
    ("LeakyRelu", lambda x: np.where(x >= 0, x, 0.01 * x)),
    ("Softplus", lambda x: np.logaddexp(x, 0)),
    ("Exp", np.exp),
    ("Identity", lambda x: x),
    ("Selu", lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772
                                                      * np.expm1(x))),
]


@pytest.mark.parametrize("name,ref", ELEMENTWISE, ids=[n for n, _ in ELEMENTWISE])
def test_elementwise_layers(name, ref):
    init, apply = getattr(stax, name)
    out_shape, params = init(KEY, X.shape)
    assert out_shape == X.shape and params == ()
    assert_close(apply(params, X), ref(X.astype(np.float64)).astype(np.float32),
                 rtol=1e-5, atol=1e-5)


def test_elementwise_constructor_kwargs():
    _, apply = stax.elementwise(jax.nn.leaky_relu, negative_slope=0.2)
    assert_close(apply((), X), np.where(X >= 0, X, 0.2 * X), **TOL)


def test_flatten():
    init, apply = stax.Flatten
    x = rand((2, 3, 4), np.float32, seed=4)
    out_shape, params = init(KEY, x.shape)
    assert out_shape == (2, 12) and params == ()
    assert_close(apply(params, x), x.reshape(2, 12))


# ---------------------------------------------------------------------------------
# Combinators.
# ---------------------------------------------------------------------------------

def test_serial_shapes_and_values():
    init, apply = stax.serial(stax.Dense(8), stax.Tanh, stax.Dense(3), stax.LogSoftmax)
    out_shape, params = init(KEY, (-1, 5))
    assert out_shape == (-1, 3)
    assert isinstance(params, list) and len(params) == 4
    assert params[1] == () and params[3] == ()
    (W1, b1), _, (W2, b2), _ = params
    assert W1.shape == (5, 8) and W2.shape == (8, 3)
    x = rand((4, 5), np.float32, seed=5)
    h = np.tanh(x @ npa(W1) + npa(b1))
    assert_close(apply(params, x), _log_softmax(h @ npa(W2) + npa(b2)), rtol=1e-5, atol=1e-5)
    # Each layer gets its own key: the two Dense layers differ.
    _, p2 = stax.serial(stax.Dense(4), stax.Dense(4))[0](KEY, (4,))
    assert not np.allclose(npa(p2[0][0]), npa(p2[1][0]))


def test_fanout_parallel_fanin_sum_residual():
    init, apply = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(4), stax.Identity),
                              stax.FanInSum)
    out_shape, params = init(KEY, (3, 4))
    assert out_shape == (3, 4)
    _, ((W, b), ident), _ = params
    assert ident == ()
    x = rand((3, 4), np.float32, seed=6)
    assert_close(apply(params, x), x @ npa(W) + npa(b) + x, **TOL)


def test_fanout_fanin_concat():
    init, apply = stax.serial(stax.FanOut(3), stax.parallel(stax.Dense(2), stax.Dense(5),
                                                            stax.Relu),
                              stax.FanInConcat())
    out_shape, params = init(KEY, (3, 4))
    assert out_shape == (3, 2 + 5 + 4)
    _, ((W1, b1), (W2, b2), _), _ = params
    x = rand((3, 4), np.float32, seed=7)
    want = np.concatenate([x @ npa(W1) + npa(b1), x @ npa(W2) + npa(b2), np.maximum(x, 0)],
                          -1)
    assert_close(apply(params, x), want, **TOL)
    init0, apply0 = stax.FanInConcat(axis=0)
    assert init0(KEY, [(2, 3), (4, 3)])[0] == (6, 3)
    a, c = rand((2, 3), np.float32, seed=8), rand((4, 3), np.float32, seed=9)
    assert_close(apply0((), [a, c]), np.concatenate([a, c], 0))


def test_parallel_shapes():
    init, apply = stax.parallel(stax.Dense(3), stax.Flatten)
    out_shapes, params = init(KEY, [(2, 5), (2, 3, 4)])
    assert tuple(out_shapes) == ((2, 3), (2, 12))
    x1, x2 = rand((2, 5), np.float32, seed=10), rand((2, 3, 4), np.float32, seed=11)
    y1, y2 = apply(params, [x1, x2])
    W, b = params[0]
    assert_close(y1, x1 @ npa(W) + npa(b), **TOL)
    assert_close(y2, x2.reshape(2, 12))


def test_shape_dependent():
    def make_layer(input_shape):
        return stax.Dense(input_shape[-1] * 2)
    init, apply = stax.shape_dependent(make_layer)
    out_shape, (W, b) = init(KEY, (3, 4))
    assert out_shape == (3, 8) and W.shape == (4, 8)
    x = rand((3, 4), np.float32, seed=12)
    assert_close(apply((W, b), x), x @ npa(W) + npa(b), **TOL)


# ---------------------------------------------------------------------------------
# Dropout and BatchNorm.
# ---------------------------------------------------------------------------------

def test_dropout_train_matches_jax():
    init, apply = stax.Dropout(0.6)
    assert init(KEY, (8,)) == ((8,), ())
    x = np.arange(1.0, 9.0, dtype=np.float32)
    out = apply((), x, rng=jax.random.PRNGKey(3))
    # Recorded with jax 0.10.2 (rate is the keep probability; kept values scaled).
    np.testing.assert_allclose(npa(out), [1.6666666, 0, 0, 0, 8.333333, 10.0, 11.666666,
                                          13.333333], rtol=1e-6)


def test_dropout_train_semantics():
    rate = 0.75
    _, apply = stax.Dropout(rate)
    x = rand((50, 40), np.float32, seed=13, low=1, high=2)
    out = npa(apply((), x, rng=jax.random.PRNGKey(1)))
    kept = out != 0
    np.testing.assert_allclose(out[kept], x[kept] / rate, rtol=1e-6)
    assert abs(kept.mean() - rate) < 0.03
    np.testing.assert_array_equal(out, npa(apply((), x, rng=jax.random.PRNGKey(1))))
    assert not np.array_equal(out, npa(apply((), x, rng=jax.random.PRNGKey(2))))
    with pytest.raises(ValueError, match="PRNG key"):
        apply((), x)


def test_dropout_test_mode_and_bad_mode():
    _, apply = stax.Dropout(0.5, mode="test")
    x = rand((3, 4), np.float32, seed=14)
    assert_close(apply((), x), x)
    assert_close(apply((), x, rng=KEY), x)
    _, bad = stax.Dropout(0.5, mode="eval")
    with pytest.raises(ValueError, match="mode"):
        bad((), x, rng=KEY)


def test_dropout_in_serial_matches_jax():
    init, apply = stax.serial(stax.Dense(2), stax.Dropout(0.5))
    _, params = init(jax.random.PRNGKey(5), (3, 2))
    out = apply(params, jnp.ones((3, 2)), rng=jax.random.PRNGKey(9))
    np.testing.assert_allclose(npa(out), [[2.910188, -1.6095371], [0, -1.6095371], [0, 0]],
                               rtol=1e-5, atol=1e-6)


def _batchnorm_ref(x, axis, gamma, beta, eps=1e-5):
    x = x.astype(np.float64)
    mean = x.mean(axis=axis, keepdims=True)
    var = x.var(axis=axis, keepdims=True)
    z = (x - mean) / np.sqrt(var + eps)
    shape = [1 if i in axis else d for i, d in enumerate(x.shape)]
    if gamma is not None:
        z = z * np.reshape(gamma, shape)
    if beta is not None:
        z = z + np.reshape(beta, shape)
    return z.astype(np.float32)


def test_batchnorm_nhwc_default_axis():
    init, apply = stax.BatchNorm()
    x = rand((4, 3, 3, 5), np.float32, seed=15)
    out_shape, (beta, gamma) = init(KEY, x.shape)
    assert out_shape == x.shape
    assert_close(beta, np.zeros(5, np.float32))
    assert_close(gamma, np.ones(5, np.float32))
    assert_close(apply((beta, gamma), x), _batchnorm_ref(x, (0, 1, 2), None, None),
                 rtol=1e-4, atol=1e-4)
    g = rand((5,), np.float32, seed=16, low=0.5, high=2)
    bt = rand((5,), np.float32, seed=17)
    assert_close(apply((bt, g), x), _batchnorm_ref(x, (0, 1, 2), g, bt), rtol=1e-4, atol=1e-4)


def test_batchnorm_dense_axis_and_flags():
    x = rand((16, 6), np.float32, seed=18)
    g = rand((6,), np.float32, seed=19, low=0.5, high=2)
    bt = rand((6,), np.float32, seed=20)
    init, apply = stax.BatchNorm(axis=0, epsilon=1e-3)
    out_shape, (beta, gamma) = init(KEY, x.shape)
    assert out_shape == x.shape and beta.shape == (6,) and gamma.shape == (6,)
    assert_close(apply((bt, g), x), _batchnorm_ref(x, (0,), g, bt, 1e-3), rtol=1e-4, atol=1e-4)
    _, apply_c = stax.BatchNorm(axis=(0,), scale=False)
    assert_close(apply_c((bt, ()), x), _batchnorm_ref(x, (0,), None, bt), rtol=1e-4, atol=1e-4)
    init_s, apply_s = stax.BatchNorm(axis=(0,), center=False)
    assert init_s(KEY, x.shape)[1][0] == ()
    assert_close(apply_s(((), g), x), _batchnorm_ref(x, (0,), g, None), rtol=1e-4, atol=1e-4)
    _, apply_n = stax.BatchNorm(axis=(0,), center=False, scale=False)
    assert_close(apply_n(((), ()), x), _batchnorm_ref(x, (0,), None, None), rtol=1e-4,
                 atol=1e-4)


# ---------------------------------------------------------------------------------
# Pooling (and conv, when ember.lax has it).
# ---------------------------------------------------------------------------------

def _pool_ref(x, window, strides, padding, kind):
    """NHWC pooling with 2-D windows; SAME pads as XLA (extra on the high side)."""
    n, h, w, c = x.shape
    pads = []
    for size, k, s in zip((h, w), window, strides):
        if padding == "SAME":
            out = -(-size // s)
            total = max((out - 1) * s + k - size, 0)
            pads.append((total // 2, total - total // 2))
        else:
            pads.append((0, 0))
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)], constant_values=fill)
    cnt = np.pad(np.ones((h, w)), [pads[0], pads[1]])
    oh = (h + sum(pads[0]) - window[0]) // strides[0] + 1
    ow = (w + sum(pads[1]) - window[1]) // strides[1] + 1
    out = np.zeros((n, oh, ow, c), np.float64)
    for i in range(oh):
        for j in range(ow):
            sl = (slice(i * strides[0], i * strides[0] + window[0]),
                  slice(j * strides[1], j * strides[1] + window[1]))
            patch = xp[:, sl[0], sl[1], :]
            if kind == "max":
                out[:, i, j] = patch.max(axis=(1, 2))
            elif kind == "sum":
                out[:, i, j] = patch.sum(axis=(1, 2))
            else:
                out[:, i, j] = patch.sum(axis=(1, 2)) / cnt[sl].sum()
    return out.astype(np.float32)


@pytest.mark.parametrize("layer,kind", [("MaxPool", "max"), ("SumPool", "sum"),
                                        ("AvgPool", "avg")])
@pytest.mark.parametrize("padding,strides", [("VALID", (2, 2)), ("SAME", (1, 2))])
def test_pooling(layer, kind, padding, strides):
    x = rand((2, 5, 6, 3), np.float32, seed=21)
    init, apply = getattr(stax, layer)((2, 3), strides, padding)
    want = _pool_ref(x, (2, 3), strides, padding, kind)
    out_shape, params = init(KEY, x.shape)
    assert out_shape == want.shape and params == ()
    assert_close(apply(params, x), want, rtol=1e-5, atol=1e-5)


def test_pooling_spec_nchw():
    x = rand((2, 3, 4, 4), np.float32, seed=22)
    init, apply = stax.MaxPool((2, 2), (2, 2), spec="NCHW")
    assert init(KEY, x.shape)[0] == (2, 3, 2, 2)
    want = _pool_ref(x.transpose(0, 2, 3, 1), (2, 2), (2, 2), "VALID", "max")
    assert_close(apply((), x), want.transpose(0, 3, 1, 2))


def test_conv_layer():
    init, apply = stax.Conv(4, (3, 3), padding="SAME")
    x = rand((2, 5, 5, 3), np.float32, seed=23)
    out_shape, (W, b) = init(KEY, x.shape)
    assert out_shape == (2, 5, 5, 4) and W.shape == (3, 3, 3, 4) and b.shape == (1, 1, 1, 4)
    xp = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)]).astype(np.float64)
    want = np.zeros((2, 5, 5, 4))
    for i in range(5):
        for j in range(5):
            want[:, i, j] = np.einsum("nhwc,hwco->no", xp[:, i:i + 3, j:j + 3], npa(W))
    assert_close(apply((W, b), x), (want + npa(b)).astype(np.float32), rtol=1e-4, atol=1e-4)
    init_v, _ = stax.Conv(2, (2, 3), strides=(2, 1))
    assert init_v(KEY, (1, 7, 6, 3))[0] == (1, 3, 4, 2)


# ---------------------------------------------------------------------------------
# Optimizers: update rules against NumPy on a quadratic.
# ---------------------------------------------------------------------------------

A = {"w": rand((3, 2), np.float32, seed=30, low=0.5, high=2.0),
     "b": rand((2,), np.float32, seed=31, low=0.5, high=2.0)}
P0 = {"w": rand((3, 2), np.float32, seed=32), "b": rand((2,), np.float32, seed=33)}


def _quadratic(params):
    return sum(0.5 * jnp.sum(A[k] * params[k] ** 2) for k in sorted(params))


def _np_adam(lr, b1=0.9, b2=0.999, eps=1e-8):
    def init(x):
        return [x, np.zeros_like(x), np.zeros_like(x)]

    def update(i, g, s):
        x, m, v = s
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * g * g + b2 * v
        mhat, vhat = m / (1 - b1 ** (i + 1)), v / (1 - b2 ** (i + 1))
        return [x - lr(i) * mhat / (np.sqrt(vhat) + eps), m, v]
    return init, update


def _np_adamax(lr, b1=0.9, b2=0.999, eps=1e-8):
    def init(x):
        return [x, np.zeros_like(x), np.zeros_like(x)]

    def update(i, g, s):
        x, m, u = s
        m = (1 - b1) * g + b1 * m
        u = np.maximum(b2 * u, np.abs(g))
        return [x - lr(i) / (1 - b1 ** (i + 1)) * m / (u + eps), m, u]
    return init, update


def _np_sgd(lr):
    return (lambda x: [x]), (lambda i, g, s: [s[0] - lr(i) * g])


def _np_momentum(lr, mass, nesterov=False):
    def update(i, g, s):
        x, v = s
        v = mass * v + g
        return [x - lr(i) * (mass * v + g if nesterov else v), v]
    return (lambda x: [x, np.zeros_like(x)]), update


def _np_adagrad(lr, momentum=0.9):
    def update(i, g, s):
        x, gsq, m = s
        gsq = gsq + g * g
        inv = np.where(gsq > 0, 1 / np.sqrt(np.where(gsq > 0, gsq, 1)), 0)
        m = (1 - momentum) * g * inv + momentum * m
        return [x - lr(i) * m, gsq, m]
    return (lambda x: [x, np.zeros_like(x), np.zeros_like(x)]), update


def _np_rmsprop(lr, gamma=0.9, eps=1e-8):
    def update(i, g, s):
        x, a = s
        a = gamma * a + (1 - gamma) * g * g
        return [x - lr(i) * g / np.sqrt(a + eps), a]
    return (lambda x: [x, np.zeros_like(x)]), update


def _np_rmsprop_momentum(lr, gamma=0.9, eps=1e-8, momentum=0.9):
    def update(i, g, s):
        x, a, mom = s
        a = gamma * a + (1 - gamma) * g * g
        mom = momentum * mom + lr(i) * g / np.sqrt(a + eps)
        return [x - mom, a, mom]
    return (lambda x: [x, np.zeros_like(x), np.zeros_like(x)]), update


def _np_sm3(lr, momentum=0.9):
    def init(x):
        return [x, np.zeros_like(x), [np.zeros(d, x.dtype) for d in x.shape]]

    def update(i, g, s):
        x, m, vs = s
        bcast = [np.reshape(v, [-1 if a == j else 1 for a in range(x.ndim)])
                 for j, v in enumerate(vs)]
        accum = bcast[0]
        for v in bcast[1:]:
            accum = np.minimum(accum, v)
        accum = accum + g * g
        inv = np.where(accum > 0, 1 / np.sqrt(np.where(accum > 0, accum, 1)), 0)
        m = (1 - momentum) * g * inv + momentum * m
        vs = [accum.max(axis=tuple(a for a in range(x.ndim) if a != j))
              for j in range(x.ndim)]
        return [x - lr(i) * m, m, vs]
    return init, update


def _lr(i):
    return 0.1 / (1 + 0.5 * i)


OPTIMIZERS = [
    ("sgd", lambda: optimizers.sgd(0.1), lambda: _np_sgd(lambda i: 0.1)),
    ("sgd_schedule", lambda: optimizers.sgd(optimizers.inverse_time_decay(0.1, 1, 0.5)),
     lambda: _np_sgd(_lr)),
    ("momentum", lambda: optimizers.momentum(0.05, 0.9),
     lambda: _np_momentum(lambda i: 0.05, 0.9)),
    ("nesterov", lambda: optimizers.nesterov(0.05, 0.8),
     lambda: _np_momentum(lambda i: 0.05, 0.8, nesterov=True)),
    ("adagrad", lambda: optimizers.adagrad(0.1), lambda: _np_adagrad(lambda i: 0.1)),
    ("rmsprop", lambda: optimizers.rmsprop(0.01, gamma=0.8),
     lambda: _np_rmsprop(lambda i: 0.01, gamma=0.8)),
    ("rmsprop_momentum", lambda: optimizers.rmsprop_momentum(0.01, momentum=0.5),
     lambda: _np_rmsprop_momentum(lambda i: 0.01, momentum=0.5)),
    ("adam", lambda: optimizers.adam(0.1), lambda: _np_adam(lambda i: 0.1)),
    ("adam_schedule", lambda: optimizers.adam(optimizers.inverse_time_decay(0.1, 1, 0.5)),
     lambda: _np_adam(_lr)),
    ("adamax", lambda: optimizers.adamax(0.1, b2=0.99),
     lambda: _np_adamax(lambda i: 0.1, b2=0.99)),
    ("sm3", lambda: optimizers.sm3(0.1), lambda: _np_sm3(lambda i: 0.1)),
]


@pytest.mark.parametrize("name,make,make_ref", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_optimizer_update_rule(name, make, make_ref):
    opt_init, opt_update, get_params = make()
    ref_init, ref_update = make_ref()
    state = opt_init(P0)
    assert isinstance(state, optimizers.OptimizerState)
    ref = {k: ref_init(v.astype(np.float64)) for k, v in P0.items()}
    assert_close(get_params(state)["w"], P0["w"])
    grad_fn = jax.grad(_quadratic)
    for i in range(4):
        grads = grad_fn(get_params(state))
        state = opt_update(i, grads, state)
        ref = {k: ref_update(i, A[k] * s[0], s) for k, s in ref.items()}
        params = get_params(state)
        for k, p0 in P0.items():
            assert params[k].shape == p0.shape
            assert_close(params[k], ref[k][0].astype(np.float32), rtol=2e-5, atol=1e-5)
    assert float(_quadratic(get_params(state))) < float(_quadratic(P0))


def test_optimizer_under_jit_and_scalar_params():
    opt_init, opt_update, get_params = optimizers.adam(0.1)
    ref_init, ref_update = _np_adam(lambda i: 0.1)

    @jax.jit
    def step(i, state):
        return opt_update(i, jax.grad(_quadratic)(get_params(state)), state)

    state = opt_init(P0)
    ref = {k: ref_init(v.astype(np.float64)) for k, v in P0.items()}
    for i in range(3):
        state = step(i, state)
        ref = {k: ref_update(i, A[k] * s[0], s) for k, s in ref.items()}
    assert isinstance(state, optimizers.OptimizerState)
    for k in P0:
        assert_close(get_params(state)[k], ref[k][0].astype(np.float32), rtol=2e-5, atol=1e-5)
    # Scalar parameters (sm3 keeps them as 1-d internally).
    for make in (lambda: optimizers.sm3(0.1), lambda: optimizers.sgd(0.5)):
        init, update, params_of = make()
        s = update(0, jnp.asarray(2.0), init(jnp.asarray(1.0)))
        assert params_of(s).shape == ()


def test_optimizer_state_is_pytree():
    opt_init, _, get_params = optimizers.momentum(0.1, 0.9)
    state = opt_init(P0)
    leaves = jax.tree_util.tree_leaves(state)
    assert len(leaves) == 4  # (x, velocity) for each of two parameters
    doubled = jax.tree_util.tree_map(lambda x: 2 * x, state)
    assert isinstance(doubled, optimizers.OptimizerState)
    assert_close(get_params(doubled)["b"], 2 * P0["b"])


def test_optimizer_tree_mismatch_raises():
    opt_init, opt_update, _ = optimizers.sgd(0.1)
    state = opt_init(P0)
    with pytest.raises(TypeError, match="gradient tree"):
        opt_update(0, [P0["w"], P0["b"]], state)


def test_optimizer_decorator_custom():
    @optimizers.optimizer
    def halve():
        return (lambda x: (x, 0.0 * x)), (lambda i, g, s: (s[0] * 0.5, s[1] + g)), \
            (lambda s: s[0])
    init, update, get_params = halve()
    state = update(0, P0, init(P0))
    assert_close(get_params(state)["w"], P0["w"] * 0.5)
    assert isinstance(halve(), optimizers.Optimizer)


# ---------------------------------------------------------------------------------
# Schedules, utilities, serialization.
# ---------------------------------------------------------------------------------

def test_schedules():
    for i in [0, 1, 5, 17]:
        assert optimizers.constant(0.3)(i) == 0.3
        np.testing.assert_allclose(optimizers.exponential_decay(0.1, 10, 0.5)(i),
                                   0.1 * 0.5 ** (i / 10), rtol=1e-6)
        np.testing.assert_allclose(optimizers.inverse_time_decay(0.1, 4, 2.0)(i),
                                   0.1 / (1 + 2.0 * i / 4), rtol=1e-6)
        np.testing.assert_allclose(
            float(optimizers.inverse_time_decay(0.1, 4, 2.0, staircase=True)(i)),
            0.1 / (1 + 2.0 * (i // 4)), rtol=1e-6)
        np.testing.assert_allclose(
            float(optimizers.polynomial_decay(1.0, 10, 0.1, power=2.0)(i)),
            (1 - min(i, 10) / 10) ** 2 * 0.9 + 0.1, rtol=1e-6)
    pc = optimizers.piecewise_constant([2, 5], [1.0, 0.5, 0.1])
    got = [float(pc(i)) for i in range(8)]
    np.testing.assert_allclose(got, [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.1, 0.1])
    with pytest.raises(ValueError):
        optimizers.piecewise_constant([1, 2], [1.0, 0.5])
    sched = optimizers.make_schedule(0.25)
    assert sched(7) == 0.25
    assert optimizers.make_schedule(pc) is pc
    with pytest.raises(TypeError):
        optimizers.make_schedule([0.1, 0.2])


def test_schedule_under_jit():
    sched = optimizers.exponential_decay(0.1, 10, 0.5)
    np.testing.assert_allclose(float(jax.jit(sched)(5)), 0.1 * 0.5 ** 0.5, rtol=1e-6)
    pc = optimizers.piecewise_constant([2, 5], [1.0, 0.5, 0.1])
    np.testing.assert_allclose(float(jax.jit(pc)(3)), 0.5)


def test_l2_norm_and_clip_grads():
    tree = {"a": np.array([3.0, 0.0], np.float32), "b": np.array([[4.0]], np.float32)}
    np.testing.assert_allclose(float(optimizers.l2_norm(tree)), 5.0, rtol=1e-6)
    clipped = optimizers.clip_grads(tree, 1.0)
    assert_close(clipped["a"], np.array([0.6, 0.0], np.float32), **TOL)
    assert_close(clipped["b"], np.array([[0.8]], np.float32), **TOL)
    unclipped = optimizers.clip_grads(tree, 10.0)
    assert_close(unclipped["a"], tree["a"])


def test_pack_unpack_round_trip():
    opt_init, opt_update, get_params = optimizers.adam(0.1)
    state = opt_init(P0)
    grad_fn = jax.grad(_quadratic)
    state = opt_update(0, grad_fn(get_params(state)), state)
    marked = optimizers.unpack_optimizer_state(state)
    assert set(marked) == {"b", "w"}
    assert isinstance(marked["w"], optimizers.JoinPoint)
    x, _, _ = marked["w"].subtree
    assert_close(x, get_params(state)["w"])
    # Serialize to plain NumPy and back.
    as_numpy = {k: optimizers.JoinPoint(tuple(npa(a) for a in jp.subtree))
                for k, jp in marked.items()}
    restored = optimizers.pack_optimizer_state(as_numpy)
    assert isinstance(restored, optimizers.OptimizerState)
    assert restored.tree_def == state.tree_def
    assert tuple(restored.subtree_defs) == tuple(state.subtree_defs)
    for a, b in zip(jax.tree_util.tree_leaves(restored), jax.tree_util.tree_leaves(state)):
        np.testing.assert_array_equal(npa(a), npa(b))
    s1 = opt_update(1, grad_fn(get_params(state)), state)
    s2 = opt_update(1, grad_fn(get_params(restored)), restored)
    for k in P0:
        assert_close(get_params(s2)[k], npa(get_params(s1)[k]), **TOL)


# ---------------------------------------------------------------------------------
# Training smoke test.
# ---------------------------------------------------------------------------------

def test_training_smoke():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8)).astype(np.float32)
    w_true = rng.normal(size=(8, 3)).astype(np.float32)
    labels = np.argmax(x @ w_true, axis=1)
    y = np.eye(3, dtype=np.float32)[labels]

    init, predict = stax.serial(stax.Dense(16), stax.Relu, stax.Dropout(0.9),
                                stax.Dense(3), stax.LogSoftmax)
    _, params = init(jax.random.PRNGKey(1), (-1, 8))
    opt_init, opt_update, get_params = optimizers.adam(0.01)

    def loss(params, key):
        return -jnp.mean(jnp.sum(predict(params, x, rng=key) * y, axis=-1))

    @jax.jit
    def step(i, state, key):
        value, grads = jax.value_and_grad(loss)(get_params(state), key)
        return value, opt_update(i, grads, state)

    state = opt_init(params)
    keys = jax.random.split(jax.random.PRNGKey(2), 40)
    losses = []
    for i in range(40):
        value, state = step(i, state, keys[i])
        losses.append(float(value))
    assert np.isfinite(losses).all()
    assert np.mean(losses[-5:]) < 0.6 * np.mean(losses[:5])
    _, predict_test = stax.serial(stax.Dense(16), stax.Relu, stax.Dropout(0.9, mode="test"),
                                  stax.Dense(3), stax.LogSoftmax)
    acc = np.mean(np.argmax(npa(predict_test(get_params(state), x)), 1) == labels)
    assert acc > 0.8


@pytest.mark.parametrize("layer", ["MaxPool", "AvgPool"])
def test_pooling_grad(layer):
    _, apply = getattr(stax, layer)((2,), (1,))
    x = np.array([[[1.0], [3.0], [2.0], [0.5]]], np.float32)  # NWC
    g = jax.grad(lambda x: jnp.sum(apply((), x)))(x)
    want = [[[0.0], [2.0], [1.0], [0.0]]] if layer == "MaxPool" else \
        [[[0.5], [1.0], [1.0], [0.5]]]
    assert_close(g, np.array(want, np.float32))
