"""Large loop nests run their rows on the runtime's threads
(`ember-split-rows`, `ember-parallel-calls`, lib/Runtime/Parallel.cpp), and
repeated loop nests share one function (`ember-outline-repeated-kernels`)."""

import os
import subprocess
import sys
import threading

import numpy as np

import ember
import ember.numpy as jnp
from ember._mlir._mlir_libs import _ember_runtime

from helpers import stdout_per_thread_count


def _chain(a, b):
    return jnp.tanh(a * 2.0 + b) * a - jnp.exp(-a) + jnp.arange(a.shape[0], dtype=a.dtype)[:, None]


def _expected(a, b):
    return np.tanh(a * 2 + b) * a - np.exp(-a) + np.arange(a.shape[0], dtype=a.dtype)[:, None]


def test_large_elementwise_goes_through_the_pool():
    a = np.random.default_rng(0).standard_normal((600, 300)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal(300).astype(np.float32)
    text = ember.jit(_chain).lower(a, b).as_text("llvm")
    assert "llvm.call @ember_parallel_for" in text
    np.testing.assert_allclose(ember.jit(_chain)(a, b), _expected(a, b), rtol=2e-6, atol=2e-6)
    # Small programs stay serial.
    small = ember.jit(_chain).lower(a[:4], b).as_text("llvm")
    assert "ember_parallel_for" not in small


def test_results_do_not_depend_on_the_thread_count():
    code = (
        "import numpy as np, ember, ember.numpy as jnp\n"
        "x = np.random.default_rng(0).standard_normal((1001, 257)).astype(np.float32)\n"
        "f = ember.jit(lambda a: (jnp.sin(a) * 3 + a, jnp.sum(a * a, axis=1),"
        " jnp.cumsum(a, axis=1), jnp.sum(a[:1000, :256] * 3), jnp.max(a[:1000, :256]),"
        " ember.lax.scan(lambda h, _: (jnp.tanh(h * 0.9 + a), None), a, None, length=5)[0]))\n"
        "np.save('/dev/stdout', np.concatenate([np.ravel(np.asarray(o)) for o in f(x)]))\n"
    )
    outs = stdout_per_thread_count(code)
    assert outs[0] == outs[1] == outs[2]


def test_small_programs_split_into_glue_and_loops_agree():
    # EMBER_SPLIT_GLUE_INSTRUCTIONS=0 compiles every program with glue and
    # loops in two parts (as large programs are): same results, bit for bit.
    code = (
        "import numpy as np, ember, ember.numpy as jnp\n"
        "x = np.random.default_rng(0).standard_normal((64, 33)).astype(np.float32)\n"
        "f = lambda a: jnp.sum(jnp.tanh(a) * jnp.cos(a) ** 2)\n"
        "g = ember.jit(lambda a: (ember.grad(f)(a), jnp.sort(a, axis=0), jnp.cumsum(a, 1),"
        " ember.lax.scan(lambda h, r: (jnp.tanh(h + r), h * 2), a[0], a)[1],"
        " ember.vmap(jnp.linalg.norm)(a), jnp.argmax(a, 1)))\n"
        "np.save('/dev/stdout', np.concatenate([np.ravel(np.asarray(o, np.float32))"
        " for o in g(x)]))\n"
    )
    outs = []
    for n in ("0", "1000000000"):
        env = dict(os.environ, EMBER_SPLIT_GLUE_INSTRUCTIONS=n)
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             check=True)
        outs.append(run.stdout)
    assert outs[0] == outs[1]


def test_large_ops_in_loops_run_their_rows_on_the_pool():
    # A scan's body: the rows of its large loop nest (2**21 points, the
    # threshold inside loops) run on the pool on every iteration (smaller
    # bodies stay serial: test/Transforms/ember-split-rows.mlir).
    h0 = np.random.default_rng(4).standard_normal((2048, 1024)).astype(np.float32)

    def f(h, a):
        return ember.lax.scan(lambda h, _: (jnp.tanh(h * a + 0.5) * 0.9, None), h, None,
                              length=20)[0]

    text = ember.jit(f).lower(h0, np.float32(0.7)).as_text("llvm")
    assert "llvm.call @ember_parallel_for" in text
    want = h0.astype(np.float64)
    for _ in range(20):
        want = np.tanh(want * 0.7 + 0.5) * 0.9
    np.testing.assert_allclose(ember.jit(f)(h0, np.float32(0.7)), want, rtol=1e-5, atol=1e-6)


def test_large_full_reductions_run_as_rows():
    # sum/max/min/prod of >= 2**18 elements: 64 (or 32, 16, 8) rows on the
    # pool, then the rows' results; NaN and infinities as NumPy has them.
    rng = np.random.default_rng(3)
    x = rng.standard_normal(1 << 20).astype(np.float32)
    assert "llvm.call @ember_parallel_for" in ember.jit(jnp.sum).lower(x).as_text("llvm")
    # No row count from 64 to 8 divides this size: 64 rows and a tail of 1.
    odd = rng.standard_normal(3 * (1 << 18) + 1).astype(np.float32)
    assert "ember_parallel_for" in ember.jit(jnp.sum).lower(odd).as_text("llvm")
    for v in (x, x.reshape(512, 2048), odd):
        for op in ("sum", "max", "min"):
            got = float(ember.jit(getattr(jnp, op))(v))
            want = float(getattr(np, op)(v.astype(np.float64)))
            assert abs(got - want) <= 1e-4 * max(1.0, abs(want)), (op, got, want)
        np.testing.assert_allclose(float(ember.jit(lambda a: jnp.sum(a * a))(v)),
                                   float(np.sum(v.astype(np.float64) ** 2)), rtol=1e-5)
    # An elementwise producer of a size no row count divides: computed on
    # the rows' part and on the tail apart (both fused), also on both cores.
    sumsq = ember.jit(lambda a: jnp.sum(a * a))
    assert "ember_parallel_for" in sumsq.lower(odd).as_text("llvm")
    odd2 = odd[:-1].reshape(3, 1 << 18)[:, :-5]  # (3, 262139): 786417 elements
    for v in (odd, np.ascontiguousarray(odd2)):
        np.testing.assert_allclose(float(sumsq(v)), float(np.sum(v.astype(np.float64) ** 2)),
                                   rtol=1e-5)
        got = float(ember.jit(lambda a: jnp.max(jnp.abs(a) - 1))(v))
        assert got == float(np.max(np.abs(v)) - 1)
    y = odd.copy()
    y[-1] = np.nan  # in the tail, through the producer
    assert np.isnan(float(ember.jit(lambda a: jnp.max(a * 2))(y)))
    y[5] = np.nan
    y[-1] = 0
    assert np.isnan(float(ember.jit(lambda a: jnp.max(a * 2))(y)))
    y = x.copy()
    y[12345] = np.nan
    for op in ("sum", "max", "min"):
        assert np.isnan(float(ember.jit(getattr(jnp, op))(y)))
    y = odd.copy()
    y[-1] = np.nan  # in the tail
    for op in ("sum", "max", "min"):
        assert np.isnan(float(ember.jit(getattr(jnp, op))(y)))
    y[-1] = 1e6
    assert float(ember.jit(jnp.max)(y)) == 1e6
    y = x.copy()
    y[12345] = np.inf
    assert float(ember.jit(jnp.max)(y)) == np.inf
    assert float(ember.jit(jnp.sum)(y)) == np.inf
    ints = rng.integers(-1000, 1000, 1 << 19).astype(np.int32)
    assert int(ember.jit(jnp.sum)(ints)) == int(ints.sum())
    assert int(ember.jit(jnp.max)(ints)) == int(ints.max())
    assert bool(ember.jit(jnp.any)(ints == 999)) == bool((ints == 999).any())


def test_concurrent_callers_share_the_pool():
    x = np.random.default_rng(2).standard_normal((512, 512)).astype(np.float32)
    f = ember.jit(lambda a: jnp.tanh(a) * 2.0 + a)
    want = np.tanh(x) * 2 + x
    errors = []

    def work():
        try:
            for _ in range(50):
                np.testing.assert_allclose(f(x), want, rtol=2e-6, atol=2e-6)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_thread_count_is_settable():
    before = _ember_runtime.num_threads()
    try:
        _ember_runtime.set_num_threads(1)
        assert _ember_runtime.num_threads() == 1
        x = np.ones((512, 512), np.float32)
        np.testing.assert_array_equal(ember.jit(lambda a: a * 3.0)(x), x * 3)
    finally:
        _ember_runtime.set_num_threads(before)


def test_repeated_layers_share_one_function():
    rng = np.random.default_rng(3)
    params = [(rng.standard_normal((64, 64)).astype(np.float32) / 8,
               rng.standard_normal(64).astype(np.float32)) for _ in range(6)]
    x = rng.standard_normal((16, 64)).astype(np.float32)

    def loss(params, x):
        h = x
        for w, b in params:
            h = jnp.tanh(h @ w + b)
        return jnp.sum(h * h)

    f = ember.jit(ember.value_and_grad(loss))
    text = f.lower(params, x).as_text("llvm")
    kernels = {line.split("@")[1].split("(")[0] for line in text.splitlines()
               if line.strip().startswith("llvm.func @__ember_kernel")}
    # Six layers: the layers' loop nests share their kernels (a large
    # program also gets a kernel for each loop nest that occurs once).
    shared = [k for k in kernels if text.count(f"llvm.call @{k}(") >= 4]
    assert len(shared) >= 3
    value, grads = f(params, x)

    def np_loss(params):
        h = x.astype(np.float64)
        for w, b in params:
            h = np.tanh(h @ w + b)
        return np.sum(h * h)

    assert np.isclose(float(value), np_loss(params), rtol=1e-5)
    eps = 1e-3
    w0 = params[0][0].astype(np.float64)
    for i, j in [(0, 0), (5, 7), (63, 63)]:
        up = [(w.astype(np.float64), b) for w, b in params]
        dn = [(w.astype(np.float64), b) for w, b in params]
        up[0] = (w0.copy(), params[0][1])
        dn[0] = (w0.copy(), params[0][1])
        up[0][0][i, j] += eps
        dn[0][0][i, j] -= eps
        fd = (np_loss(up) - np_loss(dn)) / (2 * eps)
        assert np.isclose(grads[0][0][i, j], fd, rtol=1e-3, atol=1e-4)


def test_openblas_products_run_on_the_pool():
    # OpenBLAS's threads are the pool's (its caller-managed threading): the
    # jobs of a product run at once on the workers, or on threads started
    # for them when the pool is busy or smaller than OpenBLAS's job count
    # (EMBER_NUM_THREADS=1: its jobs wait for each other, so running them
    # one after the other would never end); products from several Python
    # threads and products inside parallel rows; the result equals NumPy's
    # with every thread count and with OpenBLAS's own threads.
    code = (
        "import threading, numpy as np, ember, ember.numpy as jnp\n"
        "rng = np.random.default_rng(0)\n"
        "a = rng.standard_normal((700, 900)).astype(np.float32)\n"
        "b = rng.standard_normal((900, 800)).astype(np.float32)\n"
        "f = ember.jit(lambda a, b: jnp.tanh(a @ b) + 1)\n"
        "outs = [None] * 3\n"
        "def work(k): outs[k] = np.asarray(f(a, b))\n"
        "ts = [threading.Thread(target=work, args=(k,)) for k in range(3)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "assert all(np.array_equal(o, outs[0]) for o in outs)\n"
        "np.testing.assert_allclose(outs[0], np.tanh(a @ b) + 1, rtol=1e-4, atol=1e-4)\n"
        "g = ember.jit(ember.vmap(lambda x: x @ b[:64, :64]))\n"
        "xs = rng.standard_normal((4096, 64, 64)).astype(np.float32)\n"
        "np.testing.assert_allclose(np.asarray(g(xs)), xs @ b[:64, :64], rtol=1e-4, atol=1e-3)\n"
        "np.save('/dev/stdout', outs[0])\n"
    )
    outs = []
    for env in ({"EMBER_NUM_THREADS": "1"}, {"EMBER_NUM_THREADS": "2"},
                {"EMBER_NUM_THREADS": "3"}, {"EMBER_OPENBLAS_OWN_THREADS": "1"}):
        run = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env),
                             capture_output=True, timeout=300)
        assert run.returncode == 0, run.stderr.decode()[-2000:]
        outs.append(run.stdout)
    assert outs[0] == outs[1] == outs[2] == outs[3]
