"""In-process CPU devices as threads (#22): a jitted call on arrays split
over a one-axis mesh of this process's devices runs the program MLIR
partitions (`ember-partition`, the collectives as MPI calls) on a thread
per device, each on its blocks, the collectives among the threads
(lib/Runtime/Devices.cpp). Each result must be NumPy's and the replicated
program's (`config.ember_device_threads` off)."""

import collections
import importlib.util
import os
import threading

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src import spmd
from ember.sharding import AxisType, NamedSharding
from ember.sharding import PartitionSpec as P

HERE = os.path.dirname(os.path.abspath(__file__))


def _mesh(n):
    return ember.make_mesh((n,), ("i",), axis_types=(AxisType.Auto,),
                           devices=ember.devices()[:n])


def _split(a, mesh, spec=None):
    return ember.device_put(jnp.asarray(a), NamedSharding(mesh, P("i") if spec is None else spec))


def _replicated(f, args):
    ember.config.update("ember_device_threads", False)
    try:
        return ember.jit(f)(*args)
    finally:
        ember.config.update("ember_device_threads", True)


def _compiled_as(f, args):
    """f's jitted result on `args` and how its program was compiled."""
    before = dict(spmd.compiled)
    got = ember.jit(f)(*args)
    grew = [k for k, v in spmd.compiled.items() if v > before.get(k, 0)]
    return got, grew


def _close(got, want, tol, name=""):
    for g, w in zip(ember.tree_util.tree_leaves(got), ember.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, name
        if g.dtype.kind == "V":  # (bfloat16 & co.)
            g, w = g.astype(np.float64), w.astype(np.float64)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=name)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_programs_partitioned_over_device_threads(devices8, n):
    mesh = _mesh(n)
    rng = np.random.default_rng(n)
    x = rng.normal(size=(4 * n, 48)).astype(np.float32)
    w = rng.normal(size=(48, 32)).astype(np.float32)
    xs = _split(x, mesh)
    cases = [
        ("column sum", lambda a: (jnp.tanh(a) * 2.0).sum(0), [xs], (np.tanh(x) * 2.0).sum(0)),
        ("product of row blocks", lambda a, b: jnp.exp(-(a @ b) ** 2), [xs, w],
         np.exp(-(x @ w) ** 2)),
        ("contraction over the split rows", lambda a: a.T @ a, [xs], x.T @ x),
        ("max and min", lambda a: a.max(0) - a.min(), [xs], x.max(0) - x.min()),
    ]
    for name, f, args, want in cases:
        got, kind = _compiled_as(f, args)
        assert kind == ["spmd"], (name, kind)
        _close(got, want, 1e-3, name)
        _close(got, _replicated(f, args), 1e-3, name)
    k = rng.integers(-50, 50, size=(4 * n, 5)).astype(np.int32)
    got, kind = _compiled_as(lambda a: ((a * 3).sum(0), (a > 0).any(0)), [_split(k, mesh)])
    assert kind == ["spmd"]
    np.testing.assert_array_equal(got[0], (k * 3).sum(0))
    np.testing.assert_array_equal(got[1], (k > 0).any(0))
    c = rng.normal(size=(6, 8 * n)).astype(np.float32)
    got, kind = _compiled_as(lambda a: jnp.sum(a * a, axis=1), [_split(c, mesh, P(None, "i"))])
    assert kind == ["spmd"]
    _close(got, (c * c).sum(1), 1e-4)


def _step(p, a, y):
    def loss(p):
        h = jnp.tanh(a @ p[0][0] + p[0][1])
        logits = h @ p[1][0] + p[1][1]
        return -jnp.mean(jnp.sum(ember.nn.log_softmax(logits) * ember.nn.one_hot(y, 10), axis=1))

    value, g = ember.value_and_grad(loss)(p)
    return ember.tree_util.tree_map(lambda u, v: u - 0.1 * v, p, g), value


def test_data_parallel_training_on_device_threads(devices8):
    """Auto mode, no shard_map: the batch split over 8 devices, the step
    partitioned (the gradients' sums all-reduced among the threads) gives
    the single-device loss curve."""
    mesh = _mesh(8)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 48)).astype(np.float32)
    y = rng.integers(0, 10, 64).astype(np.int32)
    params = [(rng.normal(size=(i, o)).astype(np.float32) / np.sqrt(i), np.zeros(o, np.float32))
              for i, o in [(48, 64), (64, 10)]]
    xs, ys = _split(x, mesh), _split(y, mesh)
    p_dp, p_one, curve_dp, curve_one = params, params, [], []
    step = ember.jit(_step)
    for i in range(5):
        before = dict(spmd.compiled)
        p_dp, v = step(p_dp, xs, ys)
        if i == 0:
            assert [k for k in spmd.compiled if spmd.compiled[k] > before.get(k, 0)] == ["spmd"]
        curve_dp.append(float(v))
        p_one, v = step(p_one, x, y)
        curve_one.append(float(v))
    np.testing.assert_allclose(curve_dp, curve_one, rtol=1e-5)
    assert curve_dp[-1] < curve_dp[0]
    _close(p_dp, p_one, 1e-5)


def test_partition_corpus_on_device_threads(devices8):
    """test/data/partition_corpus.py's programs, the first argument split
    by rows and by columns over 2 and 4 devices: the replicated program's
    results; the programs MLIR cannot partition run as one program."""
    spec = importlib.util.spec_from_file_location(
        "partition_corpus", os.path.join(HERE, "..", "data", "partition_corpus.py"))
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    kinds = collections.Counter()
    for n in (2, 4):
        mesh = _mesh(n)
        for name, f, args in corpus.CORPUS:
            for pspec in (P("i"), P(None, "i")):
                got, kind = _compiled_as(f, [_split(args[0], mesh, pspec), *args[1:]])
                kinds.update(kind)
                want = _replicated(f, args)
                tol = 2e-2 if np.asarray(args[0]).dtype in (jnp.float16, jnp.bfloat16) else 1e-4
                _close(got, want, tol, f"{name} {pspec} over {n}")
    assert kinds["spmd"] >= 80 and kinds["gathered"] >= 40, kinds


def test_meshes_of_two_axes_on_device_threads(devices8):
    """On a 2 x 4 mesh a sum over one mesh axis all-reduces over a
    communicator split off the world (the same one for every call: the
    members find it again), split results stay blocks; programs upstream
    cannot partition (a sort along a split axis) run as the one program."""
    mesh = ember.make_mesh((2, 4), ("a", "b"), axis_types=(AxisType.Auto,) * 2)
    rng = np.random.default_rng(7)
    x = rng.normal(size=(8, 16)).astype(np.float32)
    cases = [
        (P("a"), lambda a: jnp.tanh(a).sum(0), np.tanh(x).sum(0), "spmd"),
        (P(None, "b"), lambda a: jnp.tanh(a).sum(1), np.tanh(x).sum(1), "spmd"),
        (P("a", "b"), lambda a: (a * a).sum(), (x * x).sum(), "spmd"),
        (P(("a", "b")), lambda a: jnp.cos(a).sum(0), np.cos(x).sum(0), "spmd"),
        (P("a", "b"), lambda a: jnp.sin(a) * 2, np.sin(x) * 2, "spmd"),
        (P("a", "b"), lambda a: jnp.sort(a, axis=0), np.sort(x, axis=0), "gathered"),
    ]
    for spec, f, want, _ in cases:
        xs = ember.device_put(x, NamedSharding(mesh, spec))
        for _ in range(2):
            got, kind = _compiled_as(f, [xs])
        _close(got, want, 1e-4, str(spec))
        _close(got, _replicated(f, [xs]), 1e-4, str(spec))
    # (How each was compiled, on a fresh function.)
    for spec, f, _, how in cases:
        xs = ember.device_put(x, NamedSharding(mesh, spec))
        _, kind = _compiled_as(lambda a, f=f: f(a) + 0, [xs])
        assert kind == [how], (spec, kind)


def test_calls_the_threads_do_not_take_keep_one_program(devices8):
    """Refs from outside keep the one program (nothing partitioned); so
    does the configuration off."""
    x = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    counter = ember.new_ref(jnp.zeros((), jnp.float32))

    def counted(a):
        counter[...] += 1.0
        return a.sum(0)

    xs = _split(x, _mesh(4))
    for _ in range(2):
        got, kind = _compiled_as(counted, [xs])
        assert kind == []
    np.testing.assert_allclose(got, x.sum(0))
    assert float(counter[...]) == 2.0
    ember.config.update("ember_device_threads", False)
    try:
        got, kind = _compiled_as(lambda a: a.sum(0) * 3, [xs])
    finally:
        ember.config.update("ember_device_threads", True)
    assert kind == []
    np.testing.assert_allclose(got, x.sum(0) * 3)


def test_device_threads_from_several_python_threads(devices8):
    """Calls from several Python threads at once take turns (one
    partitioned call at a time) and each gets its own result."""
    mesh = _mesh(4)
    f = ember.jit(lambda a, s: (a * s).sum(0))
    x = np.random.default_rng(3).normal(size=(16, 64)).astype(np.float32)
    xs = _split(x, mesh)
    results, errors = {}, []

    def work(k):
        try:
            for _ in range(5):
                results[k] = np.asarray(f(xs, np.float32(k)))
        except Exception as e:  # pragma: no cover (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(4):
        np.testing.assert_allclose(results[k], (x * k).sum(0), rtol=1e-5)
