"""One compile for every size (#20 item 2, python/ember/_src/dynamic_shapes.py):
a symbolic export, and `jit(f, polymorphic_shapes=...)`, compile one program
with `?` dimensions that serves every value of the dimension variables;
what cannot be made dynamic compiles per set of sizes, with the reason."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import export
from ember._src import dynamic_shapes

S = ember.ShapeDtypeStruct
_F32 = np.float32


def _dynamic(exp):
    """Whether `exp` runs one program for every size (and has compiled no
    program for a particular size)."""
    assert exp._dynamic, exp._dynamic_reason
    return isinstance(exp._dynamic, dynamic_shapes.DynamicExecutable) and not exp._exes


def _mlp(params, x):
    (w1, c1), (w2, c2) = params
    return jnp.tanh(x @ w1 + c1) @ w2 + c2


def _loss(params, x, y):
    logp = ember.nn.log_softmax(_mlp(params, x))
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


def _params():
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((8, 16)).astype(_F32) * .3, rng.standard_normal(16).astype(_F32)),
            (rng.standard_normal((16, 4)).astype(_F32) * .3, np.zeros(4, _F32))]


def test_training_step_compiled_once_for_every_batch():
    params = _params()
    (b,) = export.symbolic_shape("b")
    pspec = ember.tree_util.tree_map(lambda a: S(a.shape, a.dtype), params)
    step = export.export(ember.jit(ember.value_and_grad(_loss)))(
        pspec, S((b, 8), _F32), S((b,), np.int32))
    rng = np.random.default_rng(1)
    for batch in (1, 7, 128, 3):
        x = rng.standard_normal((batch, 8)).astype(_F32)
        y = rng.integers(0, 4, batch).astype(np.int32)
        (l1, g1), (l2, g2) = step.call(params, x, y), ember.value_and_grad(_loss)(params, x, y)
        np.testing.assert_allclose(l1, l2, rtol=1e-5)
        for a, c in zip(ember.tree_util.tree_leaves(g1), ember.tree_util.tree_leaves(g2)):
            np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-6)
    assert _dynamic(step)
    assert len(step._dynamic_outs) == 4
    # A shape the variables cannot give is still JAX's error, before the call.
    with pytest.raises(ValueError, match="b"):
        step.call(params, np.ones((3, 8), _F32), np.ones(4, np.int32))


def test_served_from_a_file_in_a_fresh_process(tmp_path):
    (b,) = export.symbolic_shape("b")
    fwd = export.export(ember.jit(_mlp))(
        ember.tree_util.tree_map(lambda a: S(a.shape, a.dtype), _params()), S((b, 8), _F32))
    (tmp_path / "fwd.bin").write_bytes(fwd.serialize())
    code = (
        "import numpy as np\n"
        "from ember import export\n"
        "from ember._src import compiler\n"
        f"e = export.deserialize(open({str(tmp_path / 'fwd.bin')!r}, 'rb').read())\n"
        "p = [(np.ones((8, 16), np.float32), np.ones(16, np.float32)),\n"
        "     (np.ones((16, 4), np.float32), np.ones(4, np.float32))]\n"
        "for n in (1, 7, 128):\n"
        "    print(float(e.call(p, np.ones((n, 8), np.float32)).sum()))\n"
        "print(bool(e._dynamic), len(e._exes))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout.split()
    # Each row: tanh(8 + 1) per hidden unit, 16 * tanh(9) + 1 per output.
    want = [n * 4 * (16 * np.tanh(np.float32(9)) + 1) for n in (1, 7, 128)]
    np.testing.assert_allclose([float(v) for v in out[:3]], want, rtol=1e-6)
    assert out[3:] == ["True", "0"]


# Programs over a symbolic leading dimension that lower to slices, shape
# changes, reductions, sorts, scans, gathers and products, each compiled once
# and run at sizes 1, 2 and 9 against NumPy.
_PROGRAMS = {
    "diff": (lambda x: x[1:] - x[:-1], lambda x: x[1:] - x[:-1]),
    "concat": (lambda x: jnp.concatenate([x, 2 * x]), lambda x: np.concatenate([x, 2 * x])),
    "flatten": (lambda x: x.reshape(-1) * 2, lambda x: x.reshape(-1) * 2),
    "mean": (lambda x: x - x.mean(0), lambda x: x - x.mean(0)),
    "cumsum": (lambda x: jnp.cumsum(x, 0), lambda x: np.cumsum(x, 0)),
    "sort": (lambda x: jnp.sort(x, axis=0), lambda x: np.sort(x, axis=0)),
    "gram": (lambda x: x.T @ x, lambda x: x.T @ x),
    "outer": (lambda x: x @ x.T, lambda x: x @ x.T),
    "scan": (lambda x: ember.lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(3), x)[1],
             lambda x: np.stack([np.sum(x[:k], 0) * x[k] for k in range(len(x))])),
    "flip": (lambda x: x[::-1] + x, lambda x: x[::-1] + x),
    "softmax": (lambda x: ember.nn.softmax(x, axis=0), None),
}


@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_programs_compiled_once(name):
    f, ref = _PROGRAMS[name]
    (b,) = export.symbolic_shape("b")
    exp = export.export(ember.jit(f))(S((b, 3), _F32))
    for n in (1, 2, 9):
        x = np.random.default_rng(n).standard_normal((n, 3)).astype(_F32)
        want = ref(x) if ref else ember.jit(f)(x)
        np.testing.assert_allclose(exp.call(x), want, rtol=1e-5, atol=1e-5)
    assert _dynamic(exp)


def test_gradient_of_a_program_over_a_symbolic_dimension():
    def f(x):
        return jnp.sum(jnp.tanh(x[1:] * x[:-1]) ** 2)

    (b,) = export.symbolic_shape("b")
    exp = export.export(ember.jit(ember.grad(f)))(S((b, 2), _F32))
    for n in (2, 5, 64):
        x = np.random.default_rng(n).standard_normal((n, 2)).astype(_F32)
        np.testing.assert_allclose(exp.call(x), ember.grad(f)(x), rtol=1e-5, atol=1e-6)
    assert _dynamic(exp)


def test_two_variables():
    (m, n) = export.symbolic_shape("m, n")
    exp = export.export(ember.jit(lambda a, c: (a @ c).sum(1)))(S((m, 4), _F32), S((4, n), _F32))
    for i, j in ((1, 1), (3, 5), (17, 2)):
        a = np.ones((i, 4), _F32)
        c = np.arange(4 * j, dtype=_F32).reshape(4, j)
        np.testing.assert_allclose(exp.call(a, c), (a @ c).sum(1))
    assert _dynamic(exp)


def test_falls_back_to_one_compile_per_size_and_says_why():
    a, b, c, d = export.symbolic_shape("a, b, c, d", constraints=("a * b == c + d",))
    exp = export.export(ember.jit(lambda x, y, z: x.reshape(-1) + jnp.concatenate([y, z])))(
        S((a, b), _F32), S((c,), _F32), S((d,), _F32))
    np.testing.assert_allclose(
        exp.call(np.ones((2, 3), _F32), np.ones(2, _F32), np.ones(4, _F32)), np.full(6, 2.0))
    assert exp._dynamic is False and "equality constraints" in exp._dynamic_reason
    assert len(exp._exes) == 1


def test_turned_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("EMBER_DYNAMIC_SHAPES", "0")
    (b,) = export.symbolic_shape("b")
    exp = export.export(ember.jit(lambda x: x * 2))(S((b,), _F32))
    for n in (1, 2):
        np.testing.assert_allclose(exp.call(np.ones(n, _F32)), np.full(n, 2.0))
    assert exp._dynamic is False and len(exp._exes) == 2


def test_jit_with_polymorphic_shapes():
    params = _params()
    f = ember.jit(_mlp, polymorphic_shapes=(None, "b, 8"))
    for n in (1, 5, 33):
        x = np.random.default_rng(n).standard_normal((n, 8)).astype(_F32)
        np.testing.assert_allclose(f(params, x), _mlp(params, x), rtol=1e-5, atol=1e-5)
    (exp,) = f._by_specs.values()
    assert _dynamic(exp) and len(f._by_shapes) == 3
    # Inside a trace it is plain jit.
    g = ember.grad(lambda p: f(p, np.ones((2, 8), _F32)).sum())(params)
    want = ember.grad(lambda p: _mlp(p, np.ones((2, 8), _F32)).sum())(params)
    for u, v in zip(ember.tree_util.tree_leaves(g), ember.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(u, v, rtol=1e-5)
    with pytest.raises(ValueError):
        f(params, np.ones((3, 9), _F32))  # 9 is not the spec's 8
    # Static arguments are baked into one export per value.
    top = ember.jit(lambda k, x: ember.lax.top_k(x, k)[0] * x.shape[0], static_argnums=0,
                    polymorphic_shapes=[None, "b, 10"])
    x = np.arange(70, dtype=_F32).reshape(7, 10)
    for k in (2, 3, 2):
        for n in (7, 4):
            np.testing.assert_allclose(top(k, x[:n]), np.sort(x[:n], 1)[:, ::-1][:, :k] * n)
    assert len(top._by_specs) == 2 and all(_dynamic(e) for e in top._by_specs.values())


def test_compiled_from_a_symbolic_lowering():
    (b,) = export.symbolic_shape("b")
    compiled = ember.jit(lambda x: jnp.cumsum(x * 2, 0)).trace(S((b, 2), _F32)).lower().compile()
    assert compiled.dynamic_reason is None
    for n in (1, 4, 11):
        x = np.arange(2 * n, dtype=_F32).reshape(n, 2)
        np.testing.assert_allclose(compiled(x), np.cumsum(x * 2, 0))
    assert not compiled._exported._exes
    with pytest.raises(ValueError, match="b"):
        compiled(np.ones((3, 3), _F32))


def test_persistent_cache_holds_the_program_for_every_size(tmp_path):
    """A second process loads the one program from the persistent cache and
    serves sizes the first never called, compiling nothing."""
    (b,) = export.symbolic_shape("b")
    exp = export.export(ember.jit(lambda x: jnp.sort(jnp.tanh(x), axis=0) * x.shape[0]))(
        S((b, 3), _F32))
    (tmp_path / "f.bin").write_bytes(exp.serialize())
    code = (
        "import sys, numpy as np, ember\n"
        "from ember import export\n"
        "from ember._src import compiler\n"
        "ember.config.update('jax_compilation_cache_dir', sys.argv[1])\n"
        "ember.config.update('jax_persistent_cache_min_compile_time_secs', 0.0)\n"
        "if sys.argv[2] == 'forbid':\n"
        "    def no(*a, **k):\n"
        "        raise AssertionError('compiled although the cache holds the program')\n"
        "    compiler.run_pipeline = no\n"
        "e = export.deserialize(open(sys.argv[4], 'rb').read())\n"
        "for n in map(int, sys.argv[3].split(',')):\n"
        "    x = np.linspace(0, 1, 3 * n, dtype=np.float32).reshape(n, 3)\n"
        "    print(float(np.asarray(e.call(x)).sum()))\n"
        "print(bool(e._dynamic), len(e._exes))\n")
    cache = tmp_path / "cache"

    def run(mode, sizes):
        out = subprocess.run([sys.executable, "-c", code, str(cache), mode, sizes,
                              str(tmp_path / "f.bin")],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.split()

    assert run("compile", "1,7")[-2:] == ["True", "0"]
    assert [p for p in os.listdir(cache) if p.endswith(".bin")]
    got = run("forbid", "1,7,128")
    assert got[-2:] == ["True", "0"]
    for v, n in zip(got[:3], (1, 7, 128)):
        x = np.linspace(0, 1, 3 * n, dtype=_F32).reshape(n, 3)
        np.testing.assert_allclose(float(v), float((np.sort(np.tanh(x), 0) * n).sum()),
                                   rtol=1e-5)


def test_bounded_variables():
    # Sampled at the largest primes an upper bound allows (61, 59, 53 for
    # b <= 64), above a lower bound; too tight a range compiles per size.
    (b,) = export.symbolic_shape("b", constraints=["b <= 64"])
    exp = export.export(ember.jit(lambda x: jnp.cumsum(x, 0)[::-1] * x.shape[0]))(
        S((b, 3), _F32))
    for n in (1, 5, 64):
        x = np.arange(3 * n, dtype=_F32).reshape(n, 3)
        np.testing.assert_allclose(exp.call(x), np.cumsum(x, 0)[::-1] * n)
    assert _dynamic(exp)
    with pytest.raises(ValueError, match="b"):
        exp.call(np.ones((65, 3), _F32))
    (c,) = export.symbolic_shape("c", constraints=["c >= 2048"])
    big = export.export(ember.jit(lambda x: x[1:] + x[:-1]))(S((c,), _F32))
    np.testing.assert_allclose(big.call(np.ones(2050, _F32)), np.full(2049, 2.0))
    assert _dynamic(big)
    (d,) = export.symbolic_shape("d", constraints=["d <= 6"])
    tight = export.export(ember.jit(lambda x: x * 2))(S((d,), _F32))
    np.testing.assert_allclose(tight.call(np.ones(3, _F32)), np.full(3, 2.0))
    assert tight._dynamic is False and "bounds" in tight._dynamic_reason


def test_sizes_on_both_sides_of_the_thread_threshold():
    # Loop nests of run-time size go to the threads when large enough
    # (ember-split-rows' run-time check): rows below and above it.
    def f(x):
        return jnp.tanh(x * 2 + 1) * x - jnp.exp(-x), (x * x).sum(1), jnp.cumsum(x, 1)

    (b,) = export.symbolic_shape("b")
    exp = export.export(ember.jit(f))(S((b, 300), _F32))
    for n in (1, 3, 437, 5000):
        x = np.random.default_rng(n).standard_normal((n, 300)).astype(_F32)
        a, s, c = exp.call(x)
        np.testing.assert_allclose(a, np.tanh(x * 2 + 1) * x - np.exp(-x), rtol=2e-5, atol=1e-5)
        np.testing.assert_allclose(s, (x * x).sum(1), rtol=1e-4)
        np.testing.assert_allclose(c, np.cumsum(x, 1), rtol=1e-4, atol=1e-4)
    assert _dynamic(exp)
