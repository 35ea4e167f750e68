"""Program fuzzing against NumPy (#21): hypothesis draws random programs (a
chain of `jnp`/`lax` ops on random shapes and dtypes, with broadcasting,
indexing, reductions and control flow) and runs each plainly, under `jit`,
under `vmap` (against NumPy row by row) and, for float programs, under
`grad` (against central finite differences). Invalid programs (bad axes,
shapes, reshapes, indices) must raise a Python exception, never
`EmberInternalError` and never crash.

`make test` runs a small fixed-seed budget; `make fuzz` (EMBER_FUZZ_EXAMPLES,
EMBER_FUZZ_SEED) runs long campaigns."""

import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import ember  # noqa: E402
import ember.numpy as jnp  # noqa: E402
from ember import lax  # noqa: E402
from ember.core import eval_jaxpr  # noqa: E402
from ember.errors import EmberInternalError  # noqa: E402

EXAMPLES = int(os.environ.get("EMBER_FUZZ_EXAMPLES", "30"))
SEED = os.environ.get("EMBER_FUZZ_SEED")
_base = settings(max_examples=EXAMPLES, deadline=None, derandomize=SEED is None,
                 suppress_health_check=list(HealthCheck), database=None)


def _settings(test):
    """The budget, and the seed of a long campaign (a fixed one otherwise)."""
    test = _base(test)
    return hypothesis.seed(int(SEED))(test) if SEED is not None else test

# Each op: (name, ember function, NumPy function, what it needs). Inputs stay
# in [-2, 2] so that exp and friends cannot overflow; every op keeps that
# range (bounded outputs) so chains stay comparable.
UNARY = [
    ("sin", jnp.sin, np.sin),
    ("cos", jnp.cos, np.cos),
    ("tanh", jnp.tanh, np.tanh),
    ("neg", jnp.negative, np.negative),
    ("abs", jnp.abs, np.abs),
    ("square_clip", lambda x: jnp.clip(x * x, -2, 2), lambda x: np.clip(x * x, -2, 2)),
    ("exp_tanh", lambda x: jnp.tanh(jnp.exp(x)), lambda x: np.tanh(np.exp(x))),
    ("sqrt_abs", lambda x: jnp.sqrt(jnp.abs(x) + 1), lambda x: np.sqrt(np.abs(x) + 1)),
    ("log1p_abs", lambda x: jnp.log1p(jnp.abs(x)), lambda x: np.log1p(np.abs(x))),
    ("sigmoid", ember.nn.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
]
INT_UNARY = [
    ("neg", jnp.negative, np.negative),
    ("abs", jnp.abs, np.abs),
    ("clip", lambda x: jnp.clip(x, -2, 2), lambda x: np.clip(x, -2, 2)),
    ("mod3", lambda x: x % 3, lambda x: x % 3),
]
BINARY = [
    ("add_half", lambda a, b: (a + b) / 2, lambda a, b: (a + b) / 2),
    ("mul_clip", lambda a, b: jnp.clip(a * b, -2, 2), lambda a, b: np.clip(a * b, -2, 2)),
    ("max", jnp.maximum, np.maximum),
    ("min", jnp.minimum, np.minimum),
    ("where", lambda a, b: jnp.where(a > b, a, b - 1), lambda a, b: np.where(a > b, a, b - 1)),
]


class _Tie(Exception):
    """The NumPy reference met a branch condition within rounding of its
    threshold: the program says nothing about Ember and is skipped."""


def _reference(x, dtype, steps):
    try:
        return run(np, x, dtype, steps)
    except _Tie:
        hypothesis.assume(False)


def _canon(a):
    """NumPy's result in JAX's default dtypes (float64 -> float32, int64 -> int32)."""
    a = np.asarray(a)
    if a.dtype == np.float64:
        return a.astype(np.float32)
    if a.dtype == np.int64:
        return a.astype(np.int32)
    return a


def _apply_np(fn, x, dtype):
    return _canon(fn(x)).astype(dtype)


@st.composite
def programs(draw, valid=True):
    """A program: (input shape, dtype, list of steps). A step is a tuple
    whose first item names its kind."""
    rank = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    dtype = draw(st.sampled_from(["float32", "int32"]))
    steps = []
    cur = shape
    for _ in range(draw(st.integers(1, 5))):
        kinds = ["unary", "binary", "reduce", "index", "shape", "control"]
        kind = draw(st.sampled_from(kinds))
        if kind == "unary":
            table = UNARY if dtype == "float32" else INT_UNARY
            steps.append(("unary", draw(st.integers(0, len(table) - 1))))
        elif kind == "binary":
            # The other operand broadcasts: a suffix of the shape with some 1s.
            k = draw(st.integers(0, len(cur)))
            other = tuple(d if draw(st.booleans()) else 1 for d in cur[len(cur) - k:])
            steps.append(("binary", draw(st.integers(0, len(BINARY) - 1)), other,
                          draw(st.integers(0, 2**31 - 1))))
        elif kind == "reduce" and cur:
            steps.append(("reduce", draw(st.sampled_from(["sum", "max", "min", "mean"])),
                          draw(st.integers(0, len(cur) - 1)), draw(st.booleans())))
            ax = steps[-1][2]
            cur = cur[:ax] + ((1,) if steps[-1][3] else ()) + cur[ax + 1:]
        elif kind == "index" and cur:
            ax0 = draw(st.sampled_from(["int", "slice", "neg", "array"]))
            n = cur[0]
            if ax0 == "int":
                steps.append(("index", draw(st.integers(0, n - 1))))
                cur = cur[1:]
            elif ax0 == "neg":
                steps.append(("index", -draw(st.integers(1, n))))
                cur = cur[1:]
            elif ax0 == "slice":
                a = draw(st.integers(0, n - 1))
                b = draw(st.integers(a + 1, n))
                steps.append(("index", slice(a, b)))
                cur = (b - a,) + cur[1:]
            else:
                idx = tuple(draw(st.integers(0, n - 1)) for _ in range(draw(st.integers(1, 3))))
                steps.append(("index", np.array(idx)))
                cur = (len(idx),) + cur[1:]
        elif kind == "shape" and cur:
            op = draw(st.sampled_from(["transpose", "flatten", "flip", "expand", "concat"]))
            steps.append(("shape", op))
            if op == "transpose":
                cur = cur[::-1]
            elif op == "flatten":
                cur = (int(np.prod(cur)),)
            elif op == "expand":
                cur = (1,) + cur
            elif op == "concat":
                cur = (2 * cur[0],) + cur[1:]
        elif kind == "control":
            steps.append(("control", draw(st.sampled_from(["cond", "fori", "scan"]))
                          if cur else "cond"))
    if not valid:
        steps.append(("invalid", draw(st.sampled_from(
            ["axis", "broadcast", "reshape", "matmul", "float_index"]))))
    return shape, dtype, steps


def _other(step, dtype):
    # (Seeded apart from `_input`'s stream: the same seed gave a constant
    # equal to an input element, a tie whose JAX-convention gradient (half
    # to each side) no finite difference reproduces; seed 19019 found it.)
    rng = np.random.default_rng([7, step[3]])
    if dtype == "float32":
        return rng.uniform(-2, 2, step[2]).astype(np.float32)
    return rng.integers(-3, 4, step[2]).astype(np.int32)


def run(xp, x, dtype, steps):
    """Runs the program's steps with `xp` = jnp or np (and the matching
    `lax`-like helpers)."""
    is_np = xp is np
    for step in steps:
        kind = step[0]
        if kind == "unary":
            table = UNARY if dtype == "float32" else INT_UNARY
            _, ef, nf = table[step[1]]
            x = _apply_np(nf, x, x.dtype) if is_np else ef(x)
        elif kind == "binary":
            _, ef, nf = BINARY[step[1]]
            y = _other(step, dtype)
            x = _canon(nf(x, y)) if is_np else ef(x, y)
        elif kind == "reduce":
            _, red, axis, keep = step
            if red == "mean" and dtype != "float32":
                red = "sum"
            x = getattr(xp, red)(x, axis=axis, keepdims=keep)
            if is_np:
                x = _canon(x)
        elif kind == "index":
            x = x[step[1]]
        elif kind == "shape":
            op = step[1]
            if op == "transpose":
                x = xp.transpose(x)
            elif op == "flatten":
                x = xp.reshape(x, (-1,))
            elif op == "flip":
                x = xp.flip(x, axis=0)
            elif op == "expand":
                x = xp.expand_dims(x, 0)
            else:
                x = xp.concatenate([x, x * 2 if dtype == "int32" else -x], axis=0)
        elif kind == "control":
            op = step[1]
            if op == "cond":
                if is_np:
                    if abs(float(np.sum(x, dtype=np.float64))) < 1e-3:
                        raise _Tie()  # rounding could pick either branch
                    x = -x if np.sum(x) > 0 else x + 1
                else:
                    x = lax.cond(jnp.sum(x) > 0, lambda v: -v, lambda v: v + 1, x)
            elif op == "fori":
                if is_np:
                    for _ in range(3):
                        x = x * 2 - x // 2 if dtype == "int32" else np.tanh(x * 2)
                else:
                    x = lax.fori_loop(0, 3, lambda i, v: v * 2 - v // 2 if dtype == "int32"
                                      else jnp.tanh(v * 2), x)
            else:  # scan: a running sum over the leading axis
                if is_np:
                    x = np.cumsum(x, axis=0).astype(x.dtype)
                else:
                    x = lax.scan(lambda c, r: (c + r, c + r), jnp.zeros_like(x[0]), x)[1]
        elif kind == "invalid":
            x = _invalid(xp, x, step[1])
    return x


def _invalid(xp, x, what):
    if what == "axis":
        return xp.sum(x, axis=x.ndim + 1)
    if what == "broadcast":
        return x + xp.ones((7,) + tuple(x.shape) + (5,)) + xp.ones((3,) + tuple(x.shape) + (2,))
    if what == "reshape":
        return xp.reshape(x, (int(np.prod(x.shape)) + 1,))
    if what == "matmul":
        return xp.matmul(xp.ones((3, 5)), xp.ones((4, 2)))
    return x[1.5]


def _input(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "float32":
        return rng.uniform(-2, 2, shape).astype(np.float32)
    return rng.integers(-3, 4, shape).astype(np.int32)


def _close(got, want, dtype):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)
    else:
        np.testing.assert_array_equal(got, want)


@_settings
@given(programs())
def test_programs_match_numpy(prog):
    shape, dtype, steps = prog
    x = _input(shape, dtype)
    want = _reference(x, dtype, steps)
    _close(run(jnp, jnp.asarray(x), dtype, steps), want, dtype)
    _close(ember.jit(lambda v: run(jnp, v, dtype, steps))(x), want, dtype)


@_settings
@given(programs())
def test_jaxprs_evaluate_as_their_programs(prog):
    # make_jaxpr's view as data: evaluating its equations with their
    # primitives' `bind` (JAX's custom-interpreter guide) gives the
    # program's results, wherever every equation binds (loops and branches
    # keep Ember's structure and do not).
    shape, dtype, steps = prog
    x = _input(shape, dtype)
    closed = ember.make_jaxpr(lambda v: run(jnp, v, dtype, steps))(x)

    if not all(e.primitive.bindable for e in closed.jaxpr.eqns):
        return
    (got,) = eval_jaxpr(closed.jaxpr, closed.consts, jnp.asarray(x))
    _close(got, _reference(x, dtype, steps), dtype)


@_settings
@given(programs(), st.integers(1, 3))
def test_vmapped_programs_match_numpy_rows(prog, batch):
    shape, dtype, steps = prog
    xs = np.stack([_input(shape, dtype, seed=s) for s in range(batch)])
    want = np.stack([np.asarray(_reference(x, dtype, steps)) for x in xs])
    _close(ember.vmap(lambda v: run(jnp, v, dtype, steps))(xs), want, dtype)


@_settings
@given(programs())
def test_gradients_match_finite_differences(prog):
    shape, dtype, steps = prog
    if dtype != "float32":
        return
    # Non-smooth steps (max, abs, comparisons, cond on a sum) are smooth away
    # from their kinks; a kink within eps of the input is skipped.
    x = _input(shape, "float32").astype(np.float64)

    def f(v):
        return jnp.sum(jnp.sin(run(jnp, v, dtype, steps)))

    def f_np(v):
        out = _reference(v.astype(np.float32), dtype, steps)
        return float(np.sum(np.sin(out).astype(np.float64)))

    g = np.asarray(ember.grad(f)(x.astype(np.float32)), dtype=np.float64)
    rng = np.random.default_rng(1)
    d = rng.standard_normal(x.shape)
    eps = 1e-2
    plus, minus, mid = f_np(x + eps * d), f_np(x - eps * d), f_np(x)
    second = abs(plus - 2 * mid + minus)
    if second > 0.1 * eps:  # curvature this large means a kink nearby
        return
    fd = (plus - minus) / (2 * eps)
    # A kink near the end of the step shows little curvature but moves the
    # difference quotient: one over an eighth of the step must agree (seed
    # 8088 found `abs` of a column sum 0.0106 from zero with a step of 0.0114).
    small = (f_np(x + eps / 8 * d) - f_np(x - eps / 8 * d)) / (2 * eps / 8)
    if abs(small - fd) > 5e-3 + 2e-2 * abs(fd):
        return
    np.testing.assert_allclose(float(np.sum(g * d)), fd, rtol=5e-2, atol=5e-3)


@_settings
@given(programs(valid=False), st.sampled_from(["plain", "jit", "vmap", "grad"]))
def test_invalid_programs_raise_python_errors(prog, how):
    shape, dtype, steps = prog
    x = jnp.asarray(_input(shape, dtype))

    def f(v):
        return run(jnp, v, dtype, steps)

    call = {"plain": lambda: f(x), "jit": lambda: ember.jit(f)(x),
            "vmap": lambda: ember.vmap(f)(jnp.stack([x, x])),
            "grad": lambda: ember.grad(lambda v: jnp.sum(f(v)).astype(jnp.float32))(
                x.astype(jnp.float32))}[how]
    try:
        call()
    except EmberInternalError:
        raise
    except (TypeError, ValueError, IndexError):
        return
    pytest.fail(f"invalid program {steps[-1][1]!r} ran without an error")


@_settings
@given(programs(), st.sampled_from([(1, 3), (2, 5)]))
def test_programs_exported_with_a_symbolic_batch(prog, sizes):
    """The vmapped program exported once for a symbolic batch `b`, then
    called for two batch sizes (each compiled once), against NumPy's rows."""
    shape, dtype, steps = prog
    (b,) = ember.export.symbolic_shape("b")
    spec = ember.ShapeDtypeStruct((b,) + shape, np.dtype(dtype))
    exp = ember.export.export(ember.jit(ember.vmap(lambda v: run(jnp, v, dtype, steps))))(spec)
    for batch in sizes:
        xs = np.stack([_input(shape, dtype, seed=s) for s in range(batch)])
        want = np.stack([np.asarray(_reference(x, dtype, steps)) for x in xs])
        _close(exp.call(xs), want, dtype)


@_settings
@given(programs())
def test_programs_with_a_symbolic_leading_dimension(prog):
    """The program itself traced with its input's leading dimension symbolic
    (slices, indices, reductions, concatenations, flattening, scans over
    it) and called at that size and a larger one. Two errors are allowed,
    as under JAX: InconclusiveDimensionOperation (a comparison of
    dimensions the program needs and the bounds cannot decide) and a
    broadcast of a symbolic dimension against the fixed-size operands the
    program was drawn with."""
    shape, dtype, steps = prog
    if not shape:
        return
    (b,) = ember.export.symbolic_shape("b")
    spec = ember.ShapeDtypeStruct((b,) + shape[1:], np.dtype(dtype))
    try:
        exp = ember.export.export(ember.jit(lambda v: run(jnp, v, dtype, steps)))(spec)
    except ember.export.InconclusiveDimensionOperation:
        return
    except TypeError as e:
        if "incompatible shapes for broadcasting" in str(e) and "b" in str(e):
            return
        raise
    for n in (shape[0], shape[0] + 2):
        x = _input((n,) + shape[1:], dtype)
        try:
            want = _reference(x, dtype, steps)
        except _Tie:
            continue
        _close(exp.call(x), want, dtype)


@_settings
@given(programs(), st.sampled_from([2, 4]))
def test_programs_partitioned_over_device_threads(devices8, prog, n):
    """The vmapped program over a batch of 4 inputs split over 2 or 4
    in-process devices (each device's thread runs the partitioned program
    on its rows, or the one program where MLIR cannot partition it): NumPy's
    rows (test_device_threads.py has the fixed cases)."""
    from ember.sharding import AxisType, NamedSharding
    from ember.sharding import PartitionSpec as P

    shape, dtype, steps = prog
    xs = np.stack([_input(shape, dtype, seed=s) for s in range(4)])
    want = np.stack([np.asarray(_reference(x, dtype, steps)) for x in xs])
    mesh = ember.make_mesh((n,), ("i",), axis_types=(AxisType.Auto,),
                           devices=ember.devices()[:n])
    split = ember.device_put(xs, NamedSharding(mesh, P("i")))
    _close(ember.jit(ember.vmap(lambda v: run(jnp, v, dtype, steps)))(split), want, dtype)
