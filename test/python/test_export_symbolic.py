"""Shape-polymorphic export (`export.symbolic_shape`): dimension expressions,
tracing with symbolic dims, the exported program refined for each call's
sizes, JAX's shape-assertion errors, serialization and transformations.
Texts and values compared with JAX 0.10.2's (its `jax.export`)."""

import doctest
import os
import pickle
import re
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import export

S = ember.ShapeDtypeStruct


# ---------------------------------------------------------------- expressions

def test_dim_expressions():
    b, n = export.symbolic_shape("b, n")
    assert str(2 * b + 1) == "2*b + 1"
    assert str(b + n) == "n + b" and str(5 - b) == "- b + 5"  # JAX's order and signs
    assert str(b * b * n + n * n * b) == "b*n^2 + b^2*n"
    assert (2 * b + 1) // 2 == b and (2 * b + 1) % 2 == 1
    assert str((b + 1) % 3) == "mod(b + 1, 3)"
    assert str(b * b - 3 * b + n) == "b^2 + n - 3*b"
    assert (2 * b * n) // b == 2 * n
    assert b * 6 / 3 == 2 * b
    assert export.symbolic_shape("b, 2*n, 4", scope=b._scope) == (b, 2 * n, 4)
    assert str(export.symbolic_shape("max(b, 4), min(b,n)", scope=b._scope)) == \
        "(max(b, 4), min(b, n))"
    # Equality is syntactic (JAX's rule): `b == 1` is False, not an error.
    assert (b == 1) is False and b != 1 and b == b + 0
    assert b >= 1 and b - 1 >= 0 and not (b < 1) and b + 1 > b
    with pytest.raises(export.InconclusiveDimensionOperation,
                       match="'b' >= '2' is inconclusive"):
        b >= 2  # noqa: B015
    with pytest.raises(export.InconclusiveDimensionOperation, match="integer is needed"):
        int(b)
    for e in (b * b - 3 * b + n, (b + 1) % 3, 2 * b + 1):
        assert export.symbolic_shape(str(e), scope=b._scope)[0] == e


def test_constraints_and_scopes():
    (c,) = export.symbolic_shape("c", constraints=["c >= 16", "c <= 64"])
    assert c >= 10 and c - 16 >= 0 and c <= 64
    with pytest.raises(export.InconclusiveDimensionOperation):
        c >= 32  # noqa: B015
    (b,) = export.symbolic_shape("b")
    with pytest.raises(ValueError, match="mixing of symbolic scopes"):
        b + c  # noqa: B018
    with pytest.raises(ValueError, match="syntax error"):
        export.symbolic_shape("b + ")
    with pytest.raises(ValueError, match="Unsatisfiable"):
        export.symbolic_shape("d", constraints=["d <= 0"])


# ---------------------------------------------------------------- programs

_B, _N = export.symbolic_shape("b, n")
_F32, _I32 = jnp.float32, jnp.int32
PROGRAMS = {
    "logsumexp_mean": (lambda x: ember.nn.logsumexp(x, axis=1) - jnp.mean(x),
                       [S((_B, 4), _F32)]),
    "reshape_minus_one": (lambda x: x.reshape(-1, 2).sum(1), [S((2 * _B,), _F32)]),
    "reshape_shape0": (lambda x: x.reshape(x.shape[0], -1), [S((_B, 2, 3), _F32)]),
    "slices": (lambda x: x[1:] - x[:-1], [S((_B,), _F32)]),
    "reversed": (lambda x: x[::-1] * x, [S((_B,), _F32)]),
    "concatenate": (lambda x, y: jnp.concatenate([x, y]), [S((_B,), _F32), S((_N,), _F32)]),
    "zeros": (lambda x: x + jnp.zeros((x.shape[0], 3)), [S((_B, 3), _F32)]),
    "arange": (lambda x: x * jnp.arange(x.shape[0]), [S((_B,), _F32)]),
    "grad": (lambda x: ember.grad(lambda x: jnp.sum(jnp.sin(x) ** 2))(x), [S((_B, 3), _F32)]),
    "vmap": (lambda x: ember.vmap(lambda r: r @ r)(x), [S((_B, 3), _F32)]),
    "gram": (lambda x: x.T @ x, [S((_B, 3), _F32)]),
    "scan": (lambda x: ember.lax.scan(lambda c, r: (c + r, c), jnp.zeros(3), x)[1],
             [S((_B, 3), _F32)]),
    "first_last": (lambda x: x[0] + x[-1], [S((_B, 3), _F32)]),
    "full": (lambda x: jnp.ones_like(x) * 2 + jnp.full(x.shape, 1.0), [S((_B, 3), _F32)]),
    "where_max": (lambda x: jnp.where(x > 0, x, 0.0).max(axis=0), [S((_B, 3), _F32)]),
    "sort": (lambda x: jnp.sort(x, axis=0), [S((_B, 3), _F32)]),
    "cumsum": (lambda x: jnp.cumsum(x, axis=0), [S((_B, 3), _F32)]),
    "pad": (lambda x: jnp.pad(x, 1), [S((_B,), _F32)]),
    "outer": (lambda x: x[:, None] * x[None, :], [S((_B,), _F32)]),
    "var_std": (lambda x: jnp.var(x, axis=0) + jnp.std(x), [S((_B, 3), _F32)]),
    "softmax": (lambda x: ember.nn.softmax(x, axis=-1), [S((_B, 3), _F32)]),
    "argmax": (lambda x: jnp.argmax(x, axis=1), [S((_B, 3), _F32)]),
    "one_hot": (lambda x: ember.nn.one_hot(x, 4), [S((_B,), _I32)]),
    "stack": (lambda x: jnp.stack([x, x], axis=1), [S((_B,), _F32)]),
    "broadcast_to": (lambda x: jnp.broadcast_to(x, (x.shape[0], 3)), [S((_B, 1), _F32)]),
    "eye": (lambda x: x @ jnp.eye(x.shape[1]), [S((3, _B), _F32)]),
    "size_as_value": (lambda x: x / x.size, [S((_B, 2 * _N), _F32)]),
    "split": (lambda x: jnp.split(x, 2)[1], [S((2 * _B,), _F32)]),
    "gather": (lambda x, i: x[i] + jnp.take(x, i, axis=0), [S((_B, 3), _F32), S((_N,), _I32)]),
    "scatter": (lambda x, i: x.at[0].set(1.0).at[i].add(1.0), [S((_B, 3), _F32),
                                                               S((_N,), _I32)]),
    "random_normal": (lambda x: x + ember.random.normal(ember.random.key(0), x.shape),
                      [S((_B, 3), _F32)]),
    "roll": (lambda x: jnp.roll(x, 1, 0), [S((_B, 3), _F32)]),
    "einsum": (lambda x, y: jnp.einsum("bi,bj->ij", x, y), [S((_B, 3), _F32),
                                                            S((_B, 2), _F32)]),
    "while_loop": (lambda x: ember.lax.while_loop(lambda c: c[0] < 10, lambda c: c * 2 + 1, x),
                   [S((_B,), _F32)]),
    "cond": (lambda x: ember.lax.cond(x.sum() > 0, lambda x: x, lambda x: -x, x),
             [S((_B,), _F32)]),
    "hessian": (lambda x: ember.hessian(lambda x: jnp.sum(x ** 3))(x), [S((_B,), _F32)]),
    "jacrev": (lambda x: ember.jacrev(lambda x: jnp.sin(x) * x[0])(x), [S((_B,), _F32)]),
    "checkpoint": (lambda x: ember.grad(lambda x: ember.checkpoint(
        lambda x: jnp.sin(jnp.sin(x)))(x).sum())(x), [S((_B,), _F32)]),
    "dynamic_slice": (lambda x: ember.lax.dynamic_slice_in_dim(x, 1, 2) +
                      ember.lax.dynamic_update_slice(x, jnp.ones(2), (1,))[:2],
                      [S((_B + 2,), _F32)]),
}


def _args(specs, env, rng):
    out = []
    for s in specs:
        shape = tuple(d if isinstance(d, int) else d._eval(env) for d in s.shape)
        out.append(rng.integers(0, env["b"], shape).astype(np.int32) if s.dtype == np.int32
                   else rng.standard_normal(shape).astype(np.float32))
    return out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_symbolic_program(name):
    f, specs = PROGRAMS[name]
    exp = export.export(ember.jit(f))(*specs)
    rng = np.random.default_rng(0)
    for env in ({"b": 1, "n": 2}, {"b": 6, "n": 3}):
        args = _args(specs, env, rng)
        got = exp.call(*args)
        np.testing.assert_allclose(np.asarray(got), np.asarray(ember.jit(f)(*args)),
                                   rtol=1e-5, atol=1e-5)
        # The output avals evaluate to the result's shape.
        want_shape = tuple(d if isinstance(d, int) else d._eval(env)
                           for d in exp.out_avals[0].shape)
        assert np.shape(got) == want_shape


def test_out_avals_are_symbolic():
    b, n = export.symbolic_shape("b, n")
    exp = export.export(ember.jit(lambda x, y: jnp.concatenate([x, y])[1:]))(
        S((b,), _F32), S((n,), _F32))
    assert str(exp.out_avals[0]) == "float32[n + b - 1]"  # JAX's order of terms
    exp = export.export(ember.jit(lambda x: x.reshape(-1, 2)))(S((2 * b,), _F32))
    assert str(exp.out_avals[0]) == "float32[b,2]"


# ---------------------------------------------------------------- errors


def _f(x, w):
    return jnp.tanh(x @ w).sum(axis=0) / x.shape[0]


def test_shape_assertion_errors():
    (b,) = export.symbolic_shape("b")
    exp = export.export(ember.jit(_f))(S((b, 4), _F32), S((4, 3), _F32))
    w = np.ones((4, 3), np.float32)
    np.testing.assert_allclose(exp.call(np.ones((5, 4), np.float32), w),
                               np.full(3, np.tanh(4.0), np.float32), rtol=1e-6)
    with pytest.raises(ValueError, match=r"Shape mismatch for args\[0\].shape\[1\] \(expected "
                       r"same constant\): expected \(b, 4\) and called with \(5, 5\)"):
        exp.call(np.ones((5, 5), np.float32), w)
    with pytest.raises(ValueError, match=r"Expected value >= 1 for dimension variable 'b'\. "
                       r"Using the following polymorphic shapes specifications: "
                       r"args\[0\]\.shape = \(b, 4\)\. Obtained dimension variables: 'b' = 0 "
                       r"from specification 'b' for dimension args\[0\]\.shape\[0\] \(= 0\)"):
        exp.call(np.ones((0, 4), np.float32), w)
    (c,) = export.symbolic_shape("c")
    exp2 = export.export(ember.jit(lambda x: x.reshape(-1, 2)))(S((2 * c,), _F32))
    with pytest.raises(ValueError, match="Division had remainder 1 when computing the value "
                       "of 'c'"):
        exp2.call(np.ones(5, np.float32))
    exp3 = export.export(ember.jit(lambda x, y: x + y))(S((c,), _F32), S((c,), _F32))
    with pytest.raises(ValueError, match=r"inconsistency between dimension size "
                       r"args\[1\]\.shape\[0\] \(= 4\) and the specification 'c' \(= 3\)"):
        exp3.call(np.ones(3, np.float32), np.ones(4, np.float32))
    (d,) = export.symbolic_shape("d", constraints=["d >= 4"])
    exp4 = export.export(ember.jit(jnp.sin))(S((d,), _F32))
    with pytest.raises(ValueError, match="Expected value >= 4 for dimension variable 'd'"):
        exp4.call(np.ones(3, np.float32))


def test_tracing_errors():
    b, n = export.symbolic_shape("b, n")
    with pytest.raises(export.InconclusiveDimensionOperation,
                       match="Cannot divide evenly the sizes of shapes"):
        export.export(ember.jit(lambda x: x.reshape(-1, 2)))(S((b,), _F32))
    with pytest.raises(TypeError, match="incompatible shapes for broadcasting"):
        export.export(ember.jit(lambda x, y: x + y))(S((b,), _F32), S((n,), _F32))
    with pytest.raises(export.InconclusiveDimensionOperation, match="integer is needed"):
        export.export(ember.jit(lambda x: [x[i] for i in range(x.shape[0])]))(S((b,), _F32))
    (c,) = export.symbolic_shape("c")
    with pytest.raises(ValueError, match="mixing of symbolic scopes"):
        export.export(ember.jit(lambda x, y: x))(S((b,), _F32), S((c,), _F32))
    exp = export.export(ember.jit(jnp.sin))(S((b,), _F32))
    assert "stablehlo.sine" in exp.mlir_module()  # with a `?` dimension
    assert "tensor<?xf32>" in exp.mlir_module()
    # A variable solved from another's (b from b, then n from b + n).
    two = export.export(ember.jit(lambda x, y: (x * y.shape[0], y)))(S((b,), _F32),
                                                                     S((b + n,), _F32))
    assert two.mlir_module().count("stablehlo.get_dimension_size") == 2
    # jit(f).trace/lower of symbolic specs: StableHLO with `?` dimensions,
    # as JAX's shape-polymorphic lowering; compiling gives one program for
    # every size (beyond JAX: test_dynamic_shapes.py).
    traced = ember.jit(lambda x: jnp.sin(x) * x.shape[0]).trace(S((b, 3), _F32))
    assert str(traced.out_info) == "ShapeDtypeStruct(shape=(b, 3), dtype=float32)"
    low = traced.lower()
    assert "func.func public @main(%arg0: tensor<?x3xf32> loc(\"x\"))" in low.as_text()
    assert "stablehlo.dynamic_broadcast_in_dim" in low.as_text("stablehlo")
    assert "ember.sym_args" in low.as_text("ember")
    assert low.compiler_ir("stablehlo") is not None
    np.testing.assert_allclose(low.compile()(np.ones((5, 3), _F32)), np.full((5, 3), 5 * np.sin(1)),
                               rtol=1e-6)
    with pytest.raises(NotImplementedError, match="built for concrete sizes"):
        low.as_text("llvm")
    assert "tensor<?xf32>" in ember.jit(jnp.sin).lower(S((b,), _F32)).as_text()


def test_jit_lower_takes_shape_dtype_structs():
    low = ember.jit(lambda x, y: (x @ y).sum()).lower(S((4, 3), _F32), S((3,), _F32))
    assert low.out_info.shape == ()
    assert float(low.compile()(np.ones((4, 3), np.float32), np.ones(3, np.float32))) == 12.0
    with pytest.raises(TypeError, match="not a valid JAX type"):
        ember.jit(jnp.sin)(S((3,), _F32))


# ---------------------------------------------------------------- a model


def _mlp(params, x):
    for w, c in params[:-1]:
        x = ember.nn.relu(x @ w + c)
    w, c = params[-1]
    return x @ w + c


def _loss(params, x, y):
    return -jnp.mean(jnp.sum(ember.nn.log_softmax(_mlp(params, x)) * y, axis=1))


def _params():
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((8, 16)).astype(np.float32) * .3, np.zeros(16, np.float32)),
            (rng.standard_normal((16, 4)).astype(np.float32) * .3, np.zeros(4, np.float32))]


def _specs(params, batch):
    pspec = ember.tree_util.tree_map(lambda a: S(a.shape, a.dtype), params)
    return pspec, S((batch, 8), _F32), S((batch, 4), _F32)


def test_model_served_for_several_batch_sizes(tmp_path):
    params = _params()
    (b,) = export.symbolic_shape("b")
    pspec, xs, ys = _specs(params, b)
    fwd = export.export(ember.jit(_mlp))(pspec, xs)
    step = export.export(ember.jit(ember.value_and_grad(_loss)))(pspec, xs, ys)
    assert str(fwd.out_avals[0]) == "float32[b,4]"
    rng = np.random.default_rng(1)
    for batch in (1, 7, 128):
        x = rng.standard_normal((batch, 8)).astype(np.float32)
        y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, batch)]
        np.testing.assert_allclose(fwd.call(params, x), _mlp(params, x), rtol=1e-5, atol=1e-5)
        (l1, g1), (l2, g2) = step.call(params, x, y), ember.value_and_grad(_loss)(params, x, y)
        np.testing.assert_allclose(l1, l2, rtol=1e-5)
        for a, c in zip(ember.tree_util.tree_leaves(g1), ember.tree_util.tree_leaves(g2)):
            np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-6)
        # Inside jit, grad and vmap the exported ops join the traced program.
        np.testing.assert_allclose(ember.jit(fwd.call)(params, x), _mlp(params, x),
                                   rtol=1e-5, atol=1e-5)
        ga = ember.grad(lambda p, x=x: fwd.call(p, x).sum())(params)
        gb = ember.grad(lambda p, x=x: _mlp(p, x).sum())(params)
        for a, c in zip(ember.tree_util.tree_leaves(ga), ember.tree_util.tree_leaves(gb)):
            np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-5)
        v = ember.vmap(lambda xx: fwd.call(params, xx))(np.stack([x, x + 1]))
        np.testing.assert_allclose(v[1], _mlp(params, x + 1), rtol=1e-5, atol=1e-5)
    # Compiled once for every batch size (dynamic_shapes), never per size.
    assert fwd._dynamic and step._dynamic, (fwd._dynamic_reason, step._dynamic_reason)
    assert not fwd._exes and not step._exes
    fwd.call(params, np.ones((7, 8), np.float32))
    assert not fwd._exes

    # Serialized, then loaded and served in a fresh process.
    (tmp_path / "step.bin").write_bytes(step.serialize())
    (tmp_path / "params.pkl").write_bytes(pickle.dumps(params))
    code = (
        "import pickle, sys, numpy as np\n"
        "from ember import export\n"
        f"d = {str(tmp_path)!r}\n"
        "e = export.deserialize(open(d + '/step.bin', 'rb').read())\n"
        "p = pickle.load(open(d + '/params.pkl', 'rb'))\n"
        "print(e.in_avals[-1], e.out_avals[0])\n"
        "for n in (1, 7, 128):\n"
        "    x = np.linspace(-1, 1, n * 8, dtype=np.float32).reshape(n, 8)\n"
        "    y = np.zeros((n, 4), np.float32); y[:, 0] = 1\n"
        "    print(repr(float(e.call(p, x, y)[0])))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout.split("\n")
    assert out[0] == "float32[b,4] float32[]"
    for line, n in zip(out[1:], (1, 7, 128)):
        x = np.linspace(-1, 1, n * 8, dtype=np.float32).reshape(n, 8)
        y = np.zeros((n, 4), np.float32)
        y[:, 0] = 1
        np.testing.assert_allclose(float(line), float(_loss(params, x, y)), rtol=1e-5)


def test_symbolic_vjp_and_format_versions():
    params = _params()
    (b,) = export.symbolic_shape("b")
    pspec, xs, _ = _specs(params, b)
    fwd = export.export(ember.jit(_mlp))(pspec, xs)
    blob = fwd.serialize()
    header = blob[44:44 + int.from_bytes(blob[40:44], "little")]
    assert b'"format_version": 2' in header and b'"symbolic"' in header
    static = export.export(ember.jit(_mlp))(*_specs(params, 5)[:2]).serialize()
    assert b'"format_version": 1' in static[44:200]
    vjp = export.deserialize(fwd.vjp().serialize())
    assert str(vjp.in_avals[-1]) == "float32[b,4]"
    x = np.random.default_rng(2).standard_normal((5, 8)).astype(np.float32)
    ct = np.ones((5, 4), np.float32)
    got = vjp.call(*ember.tree_util.tree_leaves(params), x, ct)
    want = ember.vjp(_mlp, params, x)[1](ct)
    for a, c in zip(ember.tree_util.tree_leaves(got), ember.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-5)


def test_symbolic_args_specs():
    x, y = np.ones((3, 4), np.float32), np.ones((3, 5), np.float32)
    sx, sy = export.symbolic_args_specs((x, y), "b, ...")
    assert str(sx.shape) == "(b, 4)" and str(sy.shape) == "(b, 5)"
    assert sx.shape[0] is not sy.shape[0] and sx.shape[0] == sy.shape[0]
    exp = export.export(ember.jit(lambda x, y: x.sum(1) + y.sum(1)))(sx, sy)
    np.testing.assert_allclose(exp.call(np.ones((6, 4), np.float32),
                                        np.ones((6, 5), np.float32)), np.full(6, 9.0))


def test_equality_constraints_and_static_arguments():
    a, b, c, d = export.symbolic_shape("a, b, c, d", constraints=("a * b == c + d",))
    assert str(2 * b * a) == "2*d + 2*c" and str(a * b * b) == "b*d + b*c"
    exp = export.export(ember.jit(lambda x, y, z: x.reshape(-1) + jnp.concatenate([y, z])))(
        S((a, b), _F32), S((c,), _F32), S((d,), _F32))
    ones = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(exp.call(ones, np.ones(2, np.float32), np.ones(4, np.float32)),
                               np.full(6, 2.0))
    with pytest.raises(ValueError, match="Constraint 'a \\* b == c \\+ d' does not hold"):
        exp.call(ones, np.ones(2, np.float32), np.ones(5, np.float32))
    # Static arguments are baked in at export (JAX's convention).
    x = np.arange(40, dtype=np.int32).reshape(4, 10)
    top = export.export(ember.jit(lambda k, x: ember.lax.top_k(x, k)[0], static_argnums=0))(3, x)
    assert str(top.out_avals[0]) == "int32[4,3]"
    np.testing.assert_array_equal(top.call(x), np.sort(x, 1)[:, ::-1][:, :3])
    (k,) = export.symbolic_shape("k", constraints=["k <= 10"])
    with pytest.raises(export.UnexpectedDimVar, match="dimension variable 'k'"):
        export.export(ember.jit(lambda k, x: ember.lax.top_k(x, k)[0], static_argnums=0))(k, x)
    with pytest.raises(ValueError, match="We can only solve linear uni-variate constraints"):
        export.export(ember.jit(lambda x: x.shape[0]))(S((a * a,), _I32))
    # A float combined with a dimension is a traced value (JAX's weak float).
    exp = export.export(ember.jit(lambda x: (5.0 + x.shape[0], jnp.array([x.shape[0], 3]))))(
        S((a,), _I32))
    assert [str(v) for v in exp.out_avals] == ["~float32[]", "int32[2]"]  # (JAX 0.10.2's)
    v, w = exp.call(np.ones(4, np.int32))
    assert float(v) == 9.0 and w.tolist() == [4, 3]


# JAX's shape polymorphism guide (docs/export/shape_poly.md), read from a
# jax-ml/jax snapshot where one exists: every doctest example runs under
# Ember with `import jax` aliased, with JAX's documented outputs.
_JAX_SNAPSHOT = os.environ.get("EMBER_JAX_SNAPSHOT", "/work/.mirror/jax-ml+jax/repo")


def test_jax_shape_polymorphism_guide_examples():
    if not os.path.isdir(_JAX_SNAPSHOT):
        pytest.skip("no jax-ml/jax snapshot on this machine")
    text = subprocess.run(["git", "-C", _JAX_SNAPSHOT, "show", "HEAD:docs/export/shape_poly.md"],
                          capture_output=True, text=True)
    if text.returncode:
        pytest.skip("docs/export/shape_poly.md is not in the snapshot")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "tutorials"))
    import run_cells

    alias = run_cells._Alias()
    sys.meta_path.insert(0, alias)
    try:
        globs = {"np": np}
        exec("from jax import lax", globs)
        parser = doctest.DocTestParser()
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS |
                                       doctest.NORMALIZE_WHITESPACE |
                                       doctest.IGNORE_EXCEPTION_DETAIL)
        report = []
        for i, block in enumerate(re.findall(r"```python\n(.*?)```", text.stdout, re.S)):
            if ">>>" not in block:
                continue
            test = parser.get_doctest(block, globs, f"block{i}", "shape_poly.md", 0)
            runner.run(test, out=report.append, clear_globs=False)
            globs.update(test.globs)
        result = runner.summarize(verbose=False)
    finally:
        sys.meta_path.remove(alias)
        for name in [m for m in sys.modules if m == "jax" or m.startswith("jax.")]:
            del sys.modules[name]
    assert result.attempted >= 70
    assert result.failed == 0, "".join(report)


def test_filling_gathers_and_updates_of_a_symbolic_size():
    # A gather with a fill value tells the windows in from its start indices
    # where the sizes are known, by a gather of ones where they are symbolic;
    # an indexed update computes flat positions where the size is known
    # (the values are JAX 0.10.2's).
    from ember import export

    spec = export.symbolic_shape("n")
    args = (ember.ShapeDtypeStruct(spec, jnp.float32), ember.ShapeDtypeStruct((3,), jnp.int32))
    x, i = jnp.arange(5.0), jnp.array([0, -1, 7])
    for f, want in [(lambda x, i: x.at[i].get(mode="fill", fill_value=-1.0), [0, 4, -1]),
                    (lambda x, i: jnp.take(x, i, mode="fill", fill_value=-2.0), [0, 4, -2]),
                    (lambda x, i: x.at[i].add(1.0), [1, 1, 2, 3, 5])]:
        exp = export.export(ember.jit(f))(*args)
        np.testing.assert_array_equal(np.asarray(exp.call(x, i)), want)
        np.testing.assert_array_equal(np.asarray(ember.jit(f)(x, i)), want)
