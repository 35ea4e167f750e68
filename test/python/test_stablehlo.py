"""StableHLO out (#20 item 5): Ember's programs as StableHLO that XLA compiles
and runs with Ember's results.

The cross-checks run XLA (jaxlib's CPU client) in a separate process with
JAX installed (`tools/stablehlo/xla_run.py`; one MLIR per process): the
Python named by EMBER_JAX_PYTHON, which `make test` sets to the JAX virtual
environment it builds (`make jax-venv`). Without one they skip; the
translation's own checks (the text parses, the ops without a StableHLO form
raise) always run.
"""

import os
import re
import subprocess

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import export, lax, random
from ember._mlir import ir
from ember._src import core
from ember._src.lax import philox4x32, threefry2x32

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RUNNER = os.path.join(ROOT, "tools", "stablehlo", "xla_run.py")
JAX_PYTHON = os.environ.get("EMBER_JAX_PYTHON", "")
needs_xla = pytest.mark.skipif(
    not (JAX_PYTHON and os.path.exists(JAX_PYTHON)),
    reason="no JAX Python for the XLA cross-check (set EMBER_JAX_PYTHON; make test does)")

RNG = np.random.default_rng(7)
F = RNG.normal(size=(3, 4)).astype(np.float32)
G = RNG.normal(size=(4, 5)).astype(np.float32)
P = (RNG.uniform(size=(3, 4)) + 0.2).astype(np.float32)  # positive
U = RNG.uniform(-0.9, 0.9, size=(3, 4)).astype(np.float32)
I32 = RNG.integers(-50, 50, size=(3, 4)).astype(np.int32)
J32 = RNG.integers(1, 7, size=(3, 4)).astype(np.int32)
U32 = RNG.integers(0, 2**32 - 1, size=(6,), dtype=np.uint32)
NAN = np.array([1.0, np.nan, -0.0, 0.0, -np.inf, 3.0, np.nan, -2.0], np.float32)
C64 = (F + 1j * U).astype(np.complex64)
SPD = (lambda a: a @ a.T + 4 * np.eye(4, dtype=np.float32))(
    RNG.normal(size=(4, 4)).astype(np.float32))


def _mlp(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    return -jnp.mean(jnp.sum(ember.nn.log_softmax(logits) * y, axis=-1))


def _mlp_step(params, x, y):
    loss, grads = ember.value_and_grad(_mlp)(params, x, y)
    return loss, [(w - 0.1 * gw, b - 0.1 * gb) for (w, b), (gw, gb) in zip(params, grads)]


MLP_PARAMS = [(RNG.normal(size=(8, 16)).astype(np.float32) * 0.3, np.zeros(16, np.float32)),
              (RNG.normal(size=(16, 16)).astype(np.float32) * 0.3, np.zeros(16, np.float32)),
              (RNG.normal(size=(16, 4)).astype(np.float32) * 0.3, np.zeros(4, np.float32))]
MLP_X = RNG.normal(size=(32, 8)).astype(np.float32)
MLP_Y = np.eye(4, dtype=np.float32)[RNG.integers(0, 4, size=32)]

UNARY = ["abs", "sign", "floor", "ceil", "round", "exp", "exp2", "log1p", "expm1", "tanh",
         "sin", "cos", "tan", "arctan", "sinh", "cosh", "arcsinh", "cbrt", "negative",
         "isfinite", "logical_not"]

PROGRAMS = {
    "unary": (lambda x, u, p: [getattr(jnp, n)(x) for n in UNARY]
              + [jnp.log(p), jnp.sqrt(p), lax.rsqrt(p), jnp.arcsin(u), jnp.arccos(u),
                 jnp.arctanh(u), jnp.arccosh(p + 1), ember.nn.sigmoid(x),
                 ember.scipy.special.erf(x), ember.scipy.special.erfinv(u),
                 lax.lgamma(p), lax.digamma(p), ember.scipy.special.i1e(x),
                 jnp.round(x * 3), lax.round(x * 3, lax.RoundingMethod.AWAY_FROM_ZERO)],
              (F, U, P)),
    "binary": (lambda x, p, i, j: [x + p, x - p, x * p, x / p, jnp.fmod(x, p), p ** x,
                                   jnp.maximum(x, p), jnp.minimum(x, p), jnp.arctan2(x, p),
                                   jnp.nextafter(x, p), i // j, i % j, lax.div(i, j),
                                   lax.rem(i, j), i ** 3, i & j, i | j, i ^ j, i << j,
                                   i >> j, lax.shift_right_logical(i, j), ~i,
                                   lax.population_count(i), lax.clz(i),
                                   jnp.maximum(i, j)],
               (F, P, I32, J32)),
    "compare_select": (lambda x, p, i, n: [x < p, x >= p, i == 3, i != 3, n < 1.0, n == n,
                                           jnp.where(x > 0, x, p), jnp.clip(x, -0.5, 0.5),
                                           lax.clamp(-1, i, 5)],
                       (F, P, I32, NAN)),
    "convert": (lambda x, i, c: [x.astype(jnp.int32), (x * 1e10).astype(jnp.int32),
                                 i.astype(jnp.float32), x.astype(jnp.bool_),
                                 i.astype(jnp.uint8), x.astype(jnp.float16),
                                 jnp.real(c), jnp.imag(c), jnp.conj(c), c * c, jnp.abs(c),
                                 jnp.exp(c), lax.complex(x, x),
                                 lax.bitcast_convert_type(x, jnp.int32),
                                 lax.bitcast_convert_type(x, jnp.uint8)],
                (F, I32, C64)),
    "shapes": (lambda x, i: [jnp.arange(12).reshape(3, 4) + i, x.T, x.reshape(2, 6),
                             x[1:, ::2], jnp.flip(x, 0), jnp.concatenate([x, x * 2], 1),
                             jnp.pad(x, ((1, 2), (0, 3))),
                             lax.pad(x, 0.5, [(-1, 2, 1), (2, -1, 0)]),
                             jnp.broadcast_to(x[:, None, :], (3, 2, 4)),
                             lax.dynamic_slice(x, (i[0, 0] % 3, 5), (2, 2)),
                             lax.dynamic_update_slice(x, jnp.ones((2, 2)), (1, -3)),
                             jnp.tile(x[0], 2), jnp.stack([x, x], -1)],
               (F, I32)),
    "reductions": (lambda x, i, n: [jnp.sum(x), jnp.sum(x, 0), jnp.prod(x, 1), jnp.max(x, 1),
                                    jnp.min(i), jnp.any(x > 1), jnp.all(x > -2), jnp.max(n),
                                    jnp.argmax(x, 1), jnp.argmin(x, 0), jnp.argmax(n),
                                    jnp.argmin(n), jnp.argmax(i, 0), jnp.cumsum(x, 1),
                                    jnp.cumprod(x, 0), lax.cummax(x, axis=1, reverse=True),
                                    jnp.cumsum(i, 0), jnp.sum(i > 0),
                                    lax.reduce(i, 0, lax.bitwise_xor, (0,))],
                   (F, I32, NAN)),
    "windows": (lambda x: [lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 2), "SAME"),
                           lax.reduce_window(x, 0.0, lax.add, (3, 2), (1, 1),
                                             [(1, 1), (0, 1)])],
                (F,)),
    "sort": (lambda x, n, i: [jnp.sort(x, 1), jnp.sort(n), jnp.argsort(n), jnp.sort(i, 0),
                              lax.sort((i[0], x[0]), num_keys=1),
                              lax.sort((jnp.array([1, 0, 1, 0]), x[1]), num_keys=2)],
             (F, NAN, I32)),
    "dot": (lambda x, g, i: [x @ g, jnp.einsum("ij,kj->ik", x, x),
                             jnp.einsum("bij,bjk->bik", jnp.stack([x, x]), jnp.stack([g, g])),
                             jnp.dot(i, i.T), jnp.matmul(x.astype(jnp.float16),
                                                         g.astype(jnp.float16))],
            (F, G, I32)),
    "gather_scatter": (lambda x, idx: [x[idx], x[:, idx[1:3]], x[idx, idx % 4],
                                       jnp.take(x, idx * 3, axis=1, mode="fill"),
                                       jnp.take(x, idx * 3, axis=1, mode="clip"),
                                       x.at[idx].add(1.0), x.at[idx, 1].set(7.0),
                                       x.at[idx * 2].set(9.0, mode="drop"),
                                       x.at[idx * 2].add(1.0, mode="clip"),
                                       x.at[0, idx % 4].max(5.0), x.at[1].min(-1.0),
                                       x.at[2, :].multiply(3.0)],
                       (F, np.array([2, 0, 1, 2], np.int32))),
    "control_flow": (lambda x, i: [lax.fori_loop(0, 5, lambda k, c: c * 0.9 + k, x),
                                   lax.while_loop(lambda c: c[0] < 10,
                                                  lambda c: (c[0] + 3, c[1] * 1.1),
                                                  (i[0, 0] % 4, x))[1],
                                   lax.scan(lambda c, r: (c + r, c * r), x[0], x)[0],
                                   lax.cond(i[0, 0] > 0, jnp.sin, jnp.cos, x),
                                   lax.switch(i[0, 1], [jnp.sin, jnp.cos, jnp.tanh], x),
                                   lax.switch(-i[0, 1] - 100, [jnp.sin, jnp.cos], x),
                                   lax.switch(i[0, 1] + 100, [jnp.sin, jnp.cos], x)],
                     (F, I32)),
    "linalg": (lambda a, b: [jnp.linalg.cholesky(a),
                             lax.linalg.triangular_solve(a, b, left_side=True, lower=True),
                             lax.linalg.triangular_solve(a, b, left_side=True, lower=False,
                                                         transpose_a=True, unit_diagonal=True),
                             ember.scipy.linalg.cho_solve((jnp.linalg.cholesky(a), True), b)],
               (SPD, G)),
    "decompositions": (lambda a, t, b: [*ember.lax.linalg.lu(a), *ember.lax.linalg.lu(t),
                                        *ember.lax.linalg.lu(b), *jnp.linalg.eigh(a),
                                        *jnp.linalg.qr(t), *jnp.linalg.qr(t, mode="complete"),
                                        *jnp.linalg.qr(t.T), *jnp.linalg.qr(b),
                                        jnp.linalg.svd(t, compute_uv=False),
                                        *jnp.linalg.svd(t, full_matrices=False),
                                        *jnp.linalg.svd(b),
                                        *jnp.linalg.eigh(b @ jnp.swapaxes(b, 1, 2))],
                       (SPD, G, np.stack([G[:3], G[1:]]))),
    "complex_decompositions": (lambda c: [*jnp.linalg.eigh(c @ jnp.conj(c.T)), *jnp.linalg.qr(c),
                                          *jnp.linalg.svd(c, full_matrices=False)],
                               (C64,)),
    # `ember.fft` as `stablehlo.fft`: every kind, 1 to 3 axes, and a derivative.
    "fft": (lambda x, c: [jnp.fft.rfft(x), jnp.fft.irfft(c, 6), jnp.fft.fft(c),
                          jnp.fft.ifft2(c), jnp.fft.rfftn(x[None]), jnp.fft.irfftn(c, (3, 6)),
                          ember.grad(lambda v: jnp.sum(jnp.abs(jnp.fft.rfft(v)) ** 2))(x)],
            (F, C64)),
    "random": (lambda k: [random.normal(random.key(0), (5,)), random.uniform(k, (2, 3)),
                          random.bits(random.split(k)[1], (4,)),
                          random.randint(random.fold_in(k, 3), (6,), 0, 10)],
               (np.array([0, 42], np.uint32),)),
    "threefry": (lambda a, b: list(threefry2x32(a[:3], a[3:], b[:3], b[3:])),
                 (U32, U32)),
    "philox": (lambda a, b: list(philox4x32(a[:2], a[2:4], b[:2], b[2:4], a[4:], b[4:])),
               (U32, U32)),
    "rbg": (lambda k: [random.normal(random.key(0, impl="rbg"), (5,)),
                       random.uniform(random.wrap_key_data(k, impl="unsafe_rbg"), (2, 3)),
                       lax.rng_bit_generator(k, (7,))[1]],
            (np.array([1, 2, 3, 4], np.uint32),)),
    "grad_vmap": (lambda x, g: [ember.grad(lambda w: jnp.sum(jnp.tanh(x @ w) ** 2))(g),
                                ember.vmap(lambda r: jnp.dot(r, g))(x),
                                ember.jacfwd(lambda v: jnp.sin(v) * v)(x[0]),
                                ember.hessian(lambda v: jnp.sum(v ** 3))(x[0])],
                  (F, G)),
    "mlp_step": (_mlp_step, (MLP_PARAMS, MLP_X, MLP_Y)),
}


def _stablehlo(fn, args):
    specs = ember.tree_util.tree_map(lambda a: ember.ShapeDtypeStruct(a.shape, a.dtype), args)
    return export.export(ember.jit(fn))(*specs).mlir_module()


@pytest.fixture(scope="module")
def xla_results(tmp_path_factory):
    """Every program's StableHLO run by XLA in one JAX process: name ->
    (list of outputs or the error text)."""
    folder = tmp_path_factory.mktemp("stablehlo")
    texts = {}
    for name, (fn, args) in PROGRAMS.items():
        texts[name] = _stablehlo(fn, args)
        (folder / f"{name}.mlir").write_text(texts[name])
        np.savez(folder / f"{name}.in.npz", *ember.tree_util.tree_leaves(args))
    subprocess.run([JAX_PYTHON, RUNNER, str(folder)], check=True, timeout=600)
    out = {}
    for name in PROGRAMS:
        err = folder / f"{name}.err"
        if err.exists():
            out[name] = err.read_text() + "\n" + texts[name]
        else:
            with np.load(folder / f"{name}.out.npz") as z:
                out[name] = [z[f"arr_{k}"] for k in range(len(z.files))]
    return out


def _assert_close(want, got, name):
    assert len(want) == len(got), name
    for k, (w, g) in enumerate(zip(want, got)):
        w = np.asarray(w)
        assert w.shape == g.shape and w.dtype == g.dtype, (name, k, w.dtype, g.dtype)
        if w.dtype.kind in "fc":
            tol = 2e-3 if w.dtype == np.float16 else 2e-5
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{name}[{k}]")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{name}[{k}]")


@needs_xla
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_xla_runs_embers_stablehlo(xla_results, name):
    fn, args = PROGRAMS[name]
    got = xla_results[name]
    assert not isinstance(got, str), got
    want = ember.tree_util.tree_leaves(ember.jit(fn)(*args))
    _assert_close(want, got, name)


def _parse_generic(text):
    """Parses StableHLO text with the dialects unregistered (syntax only)."""
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    with ctx:
        return ir.Module.parse(text)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_stablehlo_text_is_wellformed(name):
    fn, args = PROGRAMS[name]
    text = _stablehlo(fn, args)
    module = _parse_generic(text)
    names = set()

    def walk(op):
        names.add(op.name)
        for region in op.regions:
            for block in region.blocks:
                for o in block.operations:
                    walk(o.operation)

    walk(module.operation)
    assert not [n for n in names if n.startswith("ember.")], names
    assert "func.func" in names and "func.return" in names


def test_lowered_as_text_stablehlo():
    text = ember.jit(lambda x: jnp.sin(x) @ x.T).lower(F).as_text("stablehlo")
    assert '"stablehlo.sine"' in text and '"stablehlo.dot_general"' in text
    assert "func.func public @main(" in text


def test_compiler_ir_stablehlo():
    module = ember.jit(lambda x: jnp.cumsum(x) * 2).lower(F[0]).compiler_ir("stablehlo")
    names = [op.operation.name for op in module.body.operations[0].regions[0].blocks[0]]
    assert "stablehlo.reduce_window" in names and "stablehlo.multiply" in names
    with pytest.raises(ValueError, match="stablehlo"):
        ember.jit(jnp.sin).lower(F).compiler_ir("hlo")


def test_ops_without_stablehlo_form_raise():
    def f(x):
        return ember.pure_callback(np.sin, ember.ShapeDtypeStruct(x.shape, x.dtype), x) * 2

    exp = export.export(ember.jit(f))(ember.ShapeDtypeStruct((3,), jnp.float32))
    with pytest.raises(NotImplementedError, match="ember.host_callback"):
        exp.mlir_module()
    # Ember's own form and calling the export still work.
    assert "ember.host_callback" in exp.ember_module()
    np.testing.assert_allclose(np.asarray(exp.call(F[0, :3])), np.sin(F[0, :3]) * 2, rtol=1e-6)


def test_stablehlo_under_core_context_keeps_emitting():
    # The translation reads the module with Ember's context; a second
    # translation of the same export gives the same text.
    exp = export.export(ember.jit(jnp.cumsum))(ember.ShapeDtypeStruct((5,), jnp.int32))
    with core.context():
        assert exp.mlir_module() == exp.mlir_module()


# Symbolic shapes (#20): name -> (f, arguments' shape specs, arguments of two
# sizes). The export's StableHLO has `?` dimensions, the variables read from
# the arguments and dynamic broadcasts, reshapes and iotas; XLA runs it at
# both sizes after JAX's own shape refinement (xla_run.py).
def _symbolic_programs():
    rng = np.random.default_rng(20)

    def f32(*shape):
        return rng.normal(size=shape).astype(np.float32)

    params = [f32(8, 16) * 0.3, f32(16), f32(16, 4) * 0.3, f32(4)]

    def mlp(p, x):
        h = jnp.tanh(x @ p[0] + p[1])
        return (ember.nn.log_softmax(h @ p[2] + p[3])
                - jnp.mean(x, axis=-1, keepdims=True) * x.shape[0])

    def loss(p, x, y):
        h = jnp.tanh(x @ p[0] + p[1])
        return -jnp.mean(jnp.sum(ember.nn.log_softmax(h @ p[2] + p[3]) * y, axis=-1))

    def onehot(n):
        return np.eye(4, dtype=np.float32)[rng.integers(0, 4, size=n)]

    def per_example_norms(p, x):
        # vmap of grad inside the exported function.
        g = ember.vmap(ember.grad(lambda p, xi: jnp.sum(jnp.tanh(xi @ p[0] + p[1]) ** 2)),
                       in_axes=(None, 0))(p, x)
        return jnp.sqrt(jnp.sum(g[0] ** 2, axis=(1, 2)) + jnp.sum(g[1] ** 2, axis=1))

    return {
        "sym_mlp": (mlp, (None, "b, 8"), [(params, f32(1, 8)), (params, f32(6, 8))]),
        # Transformations inside the exported function (expanded at sample
        # sizes, the sizes fitted: export._transformed_symbolic).
        "sym_mlp_step": (ember.value_and_grad(loss), (None, "b, 8", "b, 4"),
                         [(params, f32(1, 8), onehot(1)), (params, f32(7, 8), onehot(7))]),
        "sym_per_example_grads": (per_example_norms, (None, "b, 8"),
                                  [(params, f32(2, 8)), (params, f32(5, 8))]),
        "sym_reshape": (lambda x: (x.reshape(-1, 2).sum(1), x.reshape(2, -1) * 2),
                        ("2*b",), [(f32(2),), (f32(10),)]),
        "sym_iota": (lambda x: x * jnp.arange(x.shape[0]) + jnp.max(x),
                     ("b",), [(f32(1),), (f32(7),)]),
        "sym_integer_pow": (lambda x: (x ** 3, (x + 4.0) ** -2, x ** 0),
                            ("b",), [(f32(1),), (f32(5),)]),
        "sym_two_variables": (lambda x, y: (jnp.outer(x, y).sum(0) / x.shape[0],
                                            jnp.exp(y) * y.shape[0] + x.sum()),
                              ("b", "n"), [(f32(2), f32(3)), (f32(5), f32(1))]),
        "sym_slices": (lambda x, y: (x[1:] - x[:-1], x[::-1], jnp.concatenate([x, y]),
                                     jnp.argmax(x), x[::2] * 2),
                       ("b", "n"), [(f32(3), f32(2)), (f32(6), f32(1))]),
        "sym_pads_updates": (lambda x: (jnp.pad(x, (1, 2)), lax.dynamic_slice(x, (1,), (2,)),
                                        lax.dynamic_update_slice(x, jnp.ones(2), (1,))),
                             ("b",), [(f32(3),), (f32(6),)]),
        # grad of a slice, the variable bounded above (sampled within bounds).
        "sym_bounded_grad": (ember.grad(lambda x: jnp.sum(jnp.tanh(x[1:]) * x.shape[0])),
                             ("b",), [(f32(4),), (f32(9),)]),
        # n is solved once b is known.
        "sym_solved": (lambda x, y: (x * (y.shape[0] - x.shape[0]), jnp.exp(y)),
                       ("b", "b + n"), [(f32(2), f32(5)), (f32(4), f32(6))]),
        # 35th session: sorts, gathers, scatters and loops of symbolic sizes.
        "sym_sort": (lambda x: (jnp.sort(x, axis=0), jnp.argsort(x[:, 0])), ("b, 3",),
                     [(f32(1, 3),), (f32(7, 3),)]),
        "sym_take": (lambda x, i: (x[i] * 2, jnp.take(x, i, axis=0, mode="fill"),
                                   x.at[i].add(1.0)),
                     ("b, 3", "n"), [(f32(5, 3), np.array([0, 4, 7, -1], np.int32)),
                                     (f32(2, 3), np.array([1], np.int32))]),
        "sym_loops": (lambda x: (lax.fori_loop(0, x.shape[0], lambda i, c: c * 0.5 + x[i],
                                               jnp.zeros(3)),
                                 lax.scan(lambda c, r: (jnp.tanh(c + r), c.sum()), jnp.zeros(3),
                                          x),
                                 lax.while_loop(lambda c: c[0] < 5,
                                                lambda c: (c[0] + 1, c[1] * 0.9 + x.sum(0)),
                                                (0, jnp.ones(3)))[1]),
                      ("b, 3",), [(f32(1, 3),), (f32(6, 3),)]),
        # Cumulative ops along a symbolic axis (a doubling loop), forward
        # and reverse, and along a static axis of a symbolic array.
        "sym_cumulative": (lambda x: (jnp.cumsum(x, axis=0), lax.cummax(x, axis=0, reverse=True),
                                      jnp.cumprod(x * 0.5, axis=1), lax.cummin(x[:, 0])),
                           ("b, 3",), [(f32(1, 3),), (f32(7, 3),)]),
        # Whole rows of a symbolic width: slice sizes that are expressions
        # (dynamic_gather) and scatter windows read from the updates.
        "sym_rows": (lambda x, i: (x[i] * 2, jnp.take(x, i, axis=0, mode="fill"),
                                   x.at[i].set(x[::-1][i] + 1.0), x[:, i % 2]),
                     ("n, b", None), [(f32(4, 3), np.array([0, 3, 9], np.int32)),
                                      (f32(2, 5), np.array([1, -1, 0], np.int32))]),
        # A transformed loop: the gradient of an RNN over b steps.
        "sym_scan_grad": (ember.grad(lambda w, x: lax.scan(
            lambda c, r: (jnp.tanh(c @ w + r), None), jnp.zeros(3), x)[0].sum()),
            (None, "b, 3"), [(f32(3, 3), f32(2, 3)), (f32(3, 3), f32(5, 3))]),
    }


# Constraints some programs need (JAX's: a static slice of 2 needs b >= 2).
_SYMBOLIC_CONSTRAINTS = {"sym_pads_updates": ["b >= 3"],
                         "sym_bounded_grad": ["b >= 4", "b <= 64"]}


def _symbolic_export(fn, shapes, args, constraints=()):
    specs = export.symbolic_args_specs(args, shapes, constraints=constraints)
    return export.export(ember.jit(fn))(*specs)


@needs_xla
def test_xla_runs_symbolic_stablehlo(tmp_path):
    want = {}
    for name, (fn, shapes, cases) in _symbolic_programs().items():
        exp = _symbolic_export(fn, shapes, cases[0], _SYMBOLIC_CONSTRAINTS.get(name, ()))
        text = exp.mlir_module()
        assert "jax.uses_shape_polymorphism = true" in text and "tensor<?" in text
        assert "stablehlo.get_dimension_size" in text
        for k, args in enumerate(cases):
            (tmp_path / f"{name}_{k}.mlir").write_text(text)
            np.savez(tmp_path / f"{name}_{k}.in.npz", *ember.tree_util.tree_leaves(args))
            want[f"{name}_{k}"] = ember.tree_util.tree_leaves(exp.call(*args))
    subprocess.run([JAX_PYTHON, RUNNER, str(tmp_path)], check=True, timeout=600)
    for stem, w in want.items():
        err = tmp_path / f"{stem}.err"
        assert not err.exists(), err.read_text()
        with np.load(tmp_path / f"{stem}.out.npz") as z:
            got = [z[f"arr_{k}"] for k in range(len(z.files))]
        _assert_close(w, got, stem)


def test_symbolic_stablehlo_forms_and_limits():
    fn, shapes, cases = _symbolic_programs()["sym_reshape"]
    text = _symbolic_export(fn, shapes, cases[0]).mlir_module()
    assert "stablehlo.dynamic_reshape" in text and "tensor<?xf32>" in text
    fn, shapes, cases = _symbolic_programs()["sym_iota"]
    assert "stablehlo.dynamic_iota" in _symbolic_export(fn, shapes, cases[0]).mlir_module()
    x = np.ones(4, np.float32)
    assert "stablehlo.dynamic_reduce_window" in _symbolic_export(
        lambda x: jnp.cumsum(x), ("b",), (x,)).mlir_module()
    # A gather whose slice has a symbolic size (whole rows of b columns).
    assert "stablehlo.dynamic_gather" in _symbolic_export(
        lambda x, i: x[i], ("n, b", None),
        (np.ones((3, 4), np.float32), np.array([0, 2], np.int32))).mlir_module()
    # A transformed program's sizes must be affine in the variables (they
    # are fitted from expansions at sample sizes); ceil(b / 2) is not.
    with pytest.raises(NotImplementedError, match="not an affine function"):
        _symbolic_export(ember.grad(lambda x: jnp.sum(x[::2] ** 2)), ("b",),
                         (x,)).mlir_module()


# shard_map and pmap (#20, #22): their device vmaps are written as Shardy
# manual computations over a mesh of the devices, collectives as StableHLO's
# (all_reduce, all_gather, reduce_scatter, collective_permute, all_to_all,
# partition_id); XLA compiles the module for that many CPU devices and
# runs it (xla_run.py), with Ember's results.
def _sharded_programs():
    from ember.sharding import AxisType
    from ember.sharding import PartitionSpec as Ps

    mesh = ember.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,))
    rng = np.random.default_rng(22)
    xs = rng.normal(size=(8, 3)).astype(np.float32)
    ys = rng.normal(size=(4, 4, 2)).astype(np.float32)

    def sm(body, in_specs, out_specs, check_vma=False):
        return ember.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                               check_vma=check_vma)

    ring = [(i, (i + 1) % 4) for i in range(4)]
    progs = {
        "psum_axis_index": (sm(lambda v, w: (lax.psum(jnp.sum(v * w), "x")
                                              + lax.axis_index("x").astype(jnp.float32))[None],
                                 (Ps("x"), Ps()), Ps("x")), (xs, np.float32(2.0))),
        "pmax_pmin": (sm(lambda v: (lax.pmax(v, "x"), lax.pmin(v, "x")), Ps("x"),
                         (Ps("x"), Ps("x"))), (xs,)),
        "all_gather": (sm(lambda v: (lax.all_gather(v, "x"),
                                     lax.all_gather(v, "x", axis=1, tiled=True)),
                          Ps("x"), (Ps("x"), Ps("x"))), (xs,)),
        "psum_scatter": (sm(lambda v: (lax.psum_scatter(v, "x", scatter_dimension=1),
                                       lax.psum_scatter(v[0], "x", tiled=True)),
                            Ps("x"), (Ps("x"), Ps("x"))), (ys,)),
        "ppermute_ring": (sm(lambda v: lax.ppermute(v, "x", ring), Ps("x"), Ps("x")), (xs,)),
        "all_to_all": (sm(lambda v: (lax.all_to_all(v[0], "x", 0, 1),
                                     lax.all_to_all(v, "x", 1, 0, tiled=True)),
                          Ps("x"), (Ps("x"), Ps("x"))), (ys,)),
        # Typed (check_vma): psum of the invariant weight's use, pvary.
        "data_parallel_grad": (sm(lambda w, v: lax.pmean(ember.grad(
            lambda w: jnp.mean(jnp.tanh(v @ w) ** 2))(w), "x"), (Ps(), Ps("x")), Ps(),
            check_vma=True), (rng.normal(size=(3, 5)).astype(np.float32), xs)),
        "pmap": (ember.pmap(lambda v: v * lax.psum(v, "i"), axis_name="i"), (ys,)),
    }
    # Over a 2 x 2 mesh: nested manual computations, collectives along each
    # axis (replica groups over the other), both axis indices.
    mesh2 = ember.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)

    def grid_body(b, w):
        i = lax.axis_index("x").astype(jnp.float32)
        j = lax.axis_index("y").astype(jnp.float32)
        t = lax.pmax(lax.psum(b * w, "y") + 10 * i + 100 * j, "x")
        return t, lax.all_gather(b[0, 0], "x")[None, None], lax.ppermute(b, "y", [(0, 1), (1, 0)])

    progs["mesh_2x2"] = (ember.shard_map(grid_body, mesh=mesh2, in_specs=(Ps("x", "y"), Ps()),
                                         out_specs=(Ps("x", "y"),) * 3, check_vma=False),
                         (rng.normal(size=(4, 6)).astype(np.float32), np.float32(2.0)))
    return progs


@needs_xla
def test_xla_runs_sharded_stablehlo(tmp_path, devices8):
    progs = _sharded_programs()
    texts = {}
    for name, (fn, args) in progs.items():
        texts[name] = _stablehlo(fn, args)
        assert '"sdy.manual_computation"' in texts[name], name
        assert "mhlo.num_partitions = 4" in texts[name], name
        if name == "mesh_2x2":
            assert '#sdy.mesh<["x"=2, "y"=2]>' in texts[name]
            assert "dense<[[0, 1], [2, 3]]>" in texts[name]  # along y
        (tmp_path / f"{name}.mlir").write_text(texts[name])
        np.savez(tmp_path / f"{name}.in.npz", *args)
    subprocess.run([JAX_PYTHON, RUNNER, str(tmp_path)], check=True, timeout=600)
    for name, (fn, args) in progs.items():
        err = tmp_path / f"{name}.err"
        assert not err.exists(), err.read_text() + texts[name] if err.exists() else ""
        with np.load(tmp_path / f"{name}.out.npz") as z:
            got = [z[f"arr_{k}"] for k in range(len(z.files))]
        want = ember.tree_util.tree_leaves(ember.jit(fn)(*args))
        _assert_close(want, got, name)


def test_sharded_stablehlo_forms_and_limits(devices8):
    progs = _sharded_programs()
    f, args = progs["psum_axis_index"]
    text = ember.jit(f).lower(*args).as_text("stablehlo")
    assert '"sdy.mesh"() <{mesh = #sdy.mesh<["x"=4]>' in text
    assert ('in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}, {}]>, '
            '<@mesh, []>]>') in text
    assert '"stablehlo.all_reduce"' in text and '"stablehlo.partition_id"' in text
    # The serialized export keeps the form.
    exp = export.export(ember.jit(f))(*[ember.ShapeDtypeStruct(a.shape, a.dtype)
                                        for a in args])
    assert export.deserialize(exp.serialize()).mlir_module() == exp.mlir_module()
    from ember.sharding import AxisType, NamedSharding
    from ember.sharding import PartitionSpec as Ps

    mesh = ember.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,))
    placed = [ember.device_put(a, NamedSharding(mesh, Ps())) for a in args]
    np.testing.assert_allclose(np.asarray(export.deserialize(exp.serialize()).call(*placed)),
                               np.asarray(f(*args)), rtol=1e-6)
    # A transformation of a shard_map: its device vmap is vectorized in the
    # StableHLO (one partition), as the CPU compiles it.
    g = ember.grad(lambda w: jnp.sum(f(args[0], w)))
    assert np.isfinite(float(g(args[1])))
    text = ember.jit(g).lower(args[1]).as_text("stablehlo")
    assert "sdy" not in text and "mhlo.num_partitions = 1" in text
    # A vmap's named axis is vectorized, not devices: its collectives are
    # expanded and nothing is partitioned.
    text = ember.jit(ember.vmap(lambda v: v - lax.pmean(v, "i"), axis_name="i")).lower(
        args[0]).as_text("stablehlo")
    assert "sdy" not in text and "mhlo.num_partitions = 1" in text


def _per_platform(v):
    return ember.lax.platform_dependent(v, cpu=lambda v: jnp.sin(v) + 1,
                                        tpu=lambda v: v * 3, default=lambda v: v)


def test_export_for_several_platforms_takes_the_platform_index():
    # JAX's calling convention: an export for several platforms takes the
    # platform index first (`jax.global_constant = "_platform_index"`, not
    # among in_avals), and lax.platform_dependent is a case on it; `call`
    # passes the CPU's index. (JAX 0.10.2's own such modules are read by
    # test_stablehlo_in.py's mp_ programs.)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    spec = ember.ShapeDtypeStruct(x.shape, x.dtype)
    exp = export.export(ember.jit(_per_platform), platforms=("tpu", "cuda", "cpu"))(spec)
    assert exp.in_avals == (core.ShapedArray((2, 4), np.float32),)
    text = exp.mlir_module()
    assert re.search(r'@main\(%arg0: tensor<i32> \{jax.global_constant = "_platform_index"\}, '
                     r'%arg1: tensor<2x4xf32> loc\("v"\)\)', text), text
    assert '"stablehlo.case"' in text and '"stablehlo.sine"' in text, text
    want = np.sin(x) + 1
    np.testing.assert_allclose(np.asarray(exp.call(x)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ember.jit(exp.call)(x)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ember.grad(lambda v: exp.call(v).sum())(x)),
                               np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ember.vmap(exp.call)(x[None])), want[None], rtol=1e-6)
    back = export.deserialize(exp.serialize())
    assert back.in_avals == exp.in_avals and back.mlir_module() == text
    np.testing.assert_allclose(np.asarray(back.call(x)), want, rtol=1e-6)
    # One platform: its branch, chosen at export, and no platform index.
    tpu = export.export(ember.jit(_per_platform), platforms=("tpu",))(spec)
    assert "_platform_index" not in tpu.mlir_module()
    assert '"stablehlo.multiply"' in tpu.mlir_module() and "sine" not in tpu.mlir_module()
    with pytest.raises(ValueError, match="was lowered for platforms"):
        tpu.call(x)
    # No branch for a platform and no default: JAX's error.
    with pytest.raises(NotImplementedError, match="no branch for platform tpu"):
        export.export(ember.jit(lambda v: ember.lax.platform_dependent(v, cpu=jnp.sin)),
                      platforms=("cpu", "tpu"))(spec)


def _sym_per_platform(v):
    return ember.lax.platform_dependent(v, cpu=lambda v: jnp.sin(v) + v.shape[0],
                                        tpu=lambda v: v * 3, default=lambda v: v)


def test_symbolic_export_for_several_platforms_takes_the_platform_index():
    # With symbolic dimensions too (JAX's convention: the platform index
    # first, then the arguments; the variables are read from their sizes).
    # One program serves every size, each call passing the CPU's index.
    x = np.ones((2, 4), np.float32)
    specs = export.symbolic_args_specs((x,), "b, 4")
    exp = export.export(ember.jit(_sym_per_platform), platforms=("tpu", "cpu"))(*specs)
    assert [str(a) for a in exp.in_avals] == ["float32[b,4]"]
    text = exp.mlir_module()
    assert re.search(r'@main\(%arg0: tensor<i32> \{jax.global_constant = "_platform_index"\}, '
                     r'%arg1: tensor<\?x4xf32>', text), text
    assert '"stablehlo.case"' in text and "jax.uses_shape_polymorphism = true" in text
    for b in (1, 3, 7):
        v = np.linspace(-1, 1, 4 * b, dtype=np.float32).reshape(b, 4)
        want = np.sin(v) + b
        np.testing.assert_allclose(np.asarray(exp.call(v)), want, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(ember.jit(exp.call)(v)), want, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(ember.grad(lambda a: exp.call(a).sum())(v)),
                                   np.cos(v), rtol=1e-6)
    assert exp._dynamic, exp._dynamic_reason  # (compiled once for every size)
    back = export.deserialize(exp.serialize())
    assert back.mlir_module() == text
    np.testing.assert_allclose(np.asarray(back.call(v)), want, rtol=1e-6)
    (ct,) = exp.vjp().call(v, np.ones_like(v))
    np.testing.assert_allclose(np.asarray(ct), np.cos(v), rtol=1e-6)
    tpu = export.export(ember.jit(_sym_per_platform), platforms=("tpu",))(*specs)
    assert "_platform_index" not in tpu.mlir_module()
    assert '"stablehlo.multiply"' in tpu.mlir_module() and "sine" not in tpu.mlir_module()
    # jit(f).trace(symbolic specs).lower(lowering_platforms=(p,)): p's branch.
    traced = ember.jit(_sym_per_platform).trace(*specs)
    assert "sine" in traced.lower().as_text()
    lowered = traced.lower(lowering_platforms=("tpu",))
    assert '"stablehlo.multiply"' in lowered.as_text() and "sine" not in lowered.as_text()
    with pytest.raises(NotImplementedError, match="lowered for tpu: Ember runs those on the "
                                                  "CPU only"):
        lowered.compile()


@needs_xla
def test_xla_runs_symbolic_export_for_several_platforms(tmp_path):
    x = np.ones((2, 4), np.float32)
    specs = export.symbolic_args_specs((x,), "b, 4")
    exp = export.export(ember.jit(_sym_per_platform), platforms=("tpu", "cpu"))(*specs)
    for index, b in ((0, 3), (1, 3), (1, 5)):
        v = np.linspace(-1, 1, 4 * b, dtype=np.float32).reshape(b, 4)
        (tmp_path / "smp.mlir").write_text(exp.mlir_module())
        np.savez(tmp_path / "smp.in.npz", np.int32(index), v)
        subprocess.run([JAX_PYTHON, RUNNER, str(tmp_path)], check=True, timeout=600)
        assert not (tmp_path / "smp.err").exists(), (tmp_path / "smp.err").read_text()
        with np.load(tmp_path / "smp.out.npz") as z:
            np.testing.assert_allclose(z["arr_0"], v * 3 if index == 0 else np.sin(v) + b,
                                       rtol=1e-6)


def _scaled_exp(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + 2 * jnp.exp(y_ref[...])


def _kernel_and_eigh(x, y, a):
    from ember.experimental import pallas as pl

    block = pl.BlockSpec((8, 128), lambda i: (i, 0))
    z = pl.pallas_call(_scaled_exp, out_shape=ember.ShapeDtypeStruct(x.shape, x.dtype),
                       grid=(2,), in_specs=[block, block], out_specs=block)(x, y)
    return z, jnp.linalg.eigh(a)[0]


@needs_xla
def test_one_module_for_cpu_and_tpu_with_tpu_forms(tmp_path):
    # A Pallas kernel and a decomposition lower differently on the TPU
    # (Mosaic's custom call, XLA:TPU's Eigh): an export for the CPU and the
    # TPU is still one module (JAX's multi-platform module), each such op a
    # case on the platform index, and XLA on the CPU runs it with the CPU's
    # index bound as JAX's call binds it. (The TPU's branch runs on a TPU:
    # `multi_platform` of `make tpu-records`/`make tpu-check`.)
    x = RNG.normal(size=(16, 128)).astype(np.float32)
    y = RNG.normal(size=(16, 128)).astype(np.float32)
    args = (x, y, SPD)
    specs = [ember.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
    exp = export.export(ember.jit(_kernel_and_eigh), platforms=("cpu", "tpu"))(*specs)
    text = exp.mlir_module()
    assert re.search(r'@main\(%arg0: tensor<i32> \{jax.global_constant = "_platform_index"\}',
                     text), text[:400]
    assert text.count('"stablehlo.case"') == 2, text
    assert text.count('"tpu_custom_call"') == 1 and text.count('"lapack_ssyevd_ffi"') == 1
    assert text.count('"Eigh"') == 1 and '"stablehlo.while"' in text  # (the CPU's grid)
    # The same module from the stages API, and after a round trip.
    lowered = ember.jit(_kernel_and_eigh).trace(*args).lower(lowering_platforms=("cpu", "tpu"))
    assert lowered.as_text() == text
    assert export.deserialize(exp.serialize()).mlir_module() == text
    want = [np.asarray(v) for v in exp.call(*args)]
    np.testing.assert_allclose(want[0], x + 2 * np.exp(y), rtol=1e-6, atol=1e-6)
    (tmp_path / "mp.mlir").write_text(text)
    np.savez(tmp_path / "mp.in.npz", np.int32(0), *args)
    subprocess.run([JAX_PYTHON, RUNNER, str(tmp_path)], check=True, timeout=600)
    assert not (tmp_path / "mp.err").exists(), (tmp_path / "mp.err").read_text()
    with np.load(tmp_path / "mp.out.npz") as z:
        _assert_close(want, [z["arr_0"], z["arr_1"]], "mp")
    # One platform alone: no case, that platform's form.
    tpu = export.export(ember.jit(_kernel_and_eigh), platforms=("tpu",))(*specs).mlir_module()
    assert "stablehlo.case" not in tpu and "tpu_custom_call" in tpu and "lapack" not in tpu


def test_lowering_for_a_platform_takes_its_branch():
    # `jit(f).trace(x).lower(lowering_platforms=(p,))` gives p's branch of
    # `platform_dependent` (JAX resolves it at lowering; Ember traces once
    # more for p, only when the program has branches that differ), and the
    # traced program is the CPU's.
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    traces = []

    def f(v):
        traces.append(v)
        return _per_platform(v)

    traced = ember.jit(f).trace(x)
    assert len(traces) == 1 and "ember.sin" in traced.lower().as_text()
    tpu = traced.lower(lowering_platforms=("tpu",))
    assert len(traces) == 2
    assert '"stablehlo.multiply"' in tpu.as_text("stablehlo")
    assert "sine" not in tpu.as_text("stablehlo")
    gpu = traced.lower(lowering_platforms=("gpu",)).as_text()  # the default branch
    assert "ember.sin" not in gpu and "ember.mul" not in gpu, gpu
    np.testing.assert_allclose(np.asarray(traced.lower().compile()(x)), np.sin(x) + 1,
                               rtol=1e-6)
    # A program the same on every platform is traced once.
    plain = []
    ember.jit(lambda v: plain.append(v) or v * 2).trace(x).lower(lowering_platforms=("tpu",))
    assert len(plain) == 1


def test_lowering_for_several_platforms_at_once():
    # JAX's multi-platform lowering: the platform index first, each
    # platform's branch of `platform_dependent` under a case on it (the
    # module an export for those platforms writes); only a lowering for one
    # platform compiles (JAX's fails too).
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    lowered = ember.jit(_per_platform).trace(x).lower(lowering_platforms=("tpu", "cpu"))
    text = lowered.as_text("stablehlo")
    assert re.search(r'@main\(%arg0: tensor<i32> \{jax.global_constant = "_platform_index"\}, '
                     r'%arg1: tensor<2x4xf32>', text), text
    assert '"stablehlo.case"' in text and '"stablehlo.sine"' in text, text
    assert text == export.export(ember.jit(_per_platform), platforms=("tpu", "cpu"))(x) \
        .mlir_module()
    plain = ember.jit(lambda v: v * 2).trace(x).lower(lowering_platforms=("cpu", "cuda"))
    assert "_platform_index" in plain.as_text() and "case" not in plain.as_text()
    with pytest.raises(NotImplementedError, match="lowered for several platforms"):
        lowered.compile()
    # With symbolic dimensions too.
    specs = export.symbolic_args_specs((x,), "b, 4")
    sym = ember.jit(_sym_per_platform).trace(*specs).lower(lowering_platforms=("cpu", "tpu"))
    assert re.search(r'%arg0: tensor<i32> \{jax.global_constant = "_platform_index"\}, '
                     r'%arg1: tensor<\?x4xf32>', sym.as_text()), sym.as_text()


@needs_xla
def test_xla_runs_embers_export_for_several_platforms(tmp_path):
    # XLA compiles Ember's multi-platform module and, given the CPU's
    # platform index, computes the CPU branch.
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    spec = ember.ShapeDtypeStruct(x.shape, x.dtype)
    exp = export.export(ember.jit(_per_platform), platforms=("tpu", "cpu"))(spec)
    (tmp_path / "mp.mlir").write_text(exp.mlir_module())
    for index in (0, 1):
        np.savez(tmp_path / "mp.in.npz", np.int32(index), x)
        subprocess.run([JAX_PYTHON, RUNNER, str(tmp_path)], check=True, timeout=600)
        assert not (tmp_path / "mp.err").exists(), (tmp_path / "mp.err").read_text()
        with np.load(tmp_path / "mp.out.npz") as z:
            np.testing.assert_allclose(z["arr_0"], x * 3 if index == 0 else np.sin(x) + 1,
                                       rtol=1e-6)
    # Its VJP too: the backward pass branches on the same platform index
    # (the TPU's derivative is 3, the CPU's cos).
    (tmp_path / "mp.mlir").write_text(exp.vjp().mlir_module())
    for index in (0, 1):
        np.savez(tmp_path / "mp.in.npz", np.int32(index), x, np.ones_like(x))
        subprocess.run([JAX_PYTHON, RUNNER, str(tmp_path)], check=True, timeout=600)
        with np.load(tmp_path / "mp.out.npz") as z:
            np.testing.assert_allclose(z["arr_0"], np.full_like(x, 3) if index == 0
                                       else np.cos(x), rtol=1e-6)
