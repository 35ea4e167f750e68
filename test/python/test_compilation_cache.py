"""The persistent compilation cache: a second process reuses the first one's
object code (compiling nothing), corrupt or truncated entries are compiled
again and rewritten, processes writing at once are safe, and the
thresholds are honoured."""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys, time
    import ember as jax, ember.numpy as jnp
    from ember._src import compiler
    jax.config.update("jax_compilation_cache_dir", sys.argv[1])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(sys.argv[3]))
    if sys.argv[2] == "forbid":
        def no(*a, **k):
            raise AssertionError("compiled although the cache holds the program")
        compiler.run_pipeline = no
    def loss(ws, x):
        for w in ws:
            x = jnp.tanh(x @ w)
        return jnp.sum(x)
    layers = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    ws = [jnp.eye(16) * 0.5 + 0.01 * k for k in range(layers)]
    t = time.perf_counter()
    g = jax.jit(jax.grad(loss))(ws, jnp.ones((2, 16)))
    print(time.perf_counter() - t, float(g[1][0, 0]), float(g[3][5, 7]))
""")


def _run(cache, mode="compile", min_secs=0.0, layers=4):
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(cache), mode, str(min_secs),
                          str(layers)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    secs, a, b = out.stdout.split()
    return float(secs), (float(a), float(b))


def _entries(cache):
    return sorted(p for p in os.listdir(cache) if p.endswith(".bin"))


def test_second_process_compiles_nothing(tmp_path):
    cold, want = _run(tmp_path)
    entries = _entries(tmp_path)
    assert entries
    warm, got = _run(tmp_path, "forbid")
    assert got == want
    assert _entries(tmp_path) == entries
    assert warm < cold


def test_program_compiled_in_two_parts(tmp_path):
    """A program of many loop nests compiles its glue and its loops apart
    (two object files, docs/design.md "Compile time"): both are stored, a
    second process links them, and the gradient is NumPy's."""
    import numpy as np

    cold, want = _run(tmp_path, layers=24)
    images = [(tmp_path / name).read_bytes() for name in _entries(tmp_path)]
    assert any(b"EMBROBJS" in data for data in images)
    _, got = _run(tmp_path, "forbid", layers=24)
    assert got == want
    ws = [np.eye(16) * 0.5 + 0.01 * k for k in range(24)]
    acts = [np.ones((2, 16))]
    for w in ws:
        acts.append(np.tanh(acts[-1] @ w))
    g, grads = np.ones((2, 16)), []
    for w, a_in, a_out in reversed(list(zip(ws, acts, acts[1:]))):
        g = g * (1 - a_out ** 2)
        grads.append(a_in.T @ g)
        g = g @ w.T
    grads.reverse()
    # f32 through 24 layers against f64: about 1e-4 apart.
    np.testing.assert_allclose(want, (grads[1][0, 0], grads[3][5, 7]), rtol=1e-3)


def test_corrupt_and_truncated_entries_are_recompiled(tmp_path):
    _, want = _run(tmp_path)
    for k, name in enumerate(_entries(tmp_path)):
        path = tmp_path / name
        data = bytearray(path.read_bytes())
        if k % 2:
            path.write_bytes(bytes(data[: len(data) // 2]))
        else:
            data[len(data) // 2] ^= 0xFF
            path.write_bytes(bytes(data))
    _, got = _run(tmp_path)  # compiles again, rewrites the entries
    assert got == want
    _, again = _run(tmp_path, "forbid")  # the rewritten entries load
    assert again == want


def test_concurrent_writers(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path), "compile", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    results = {tuple(o[0].split()[1:]) for o in outs}
    assert len(results) == 1
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    _run(tmp_path, "forbid")


def test_min_compile_time_threshold(tmp_path):
    _run(tmp_path, min_secs=1e9)
    assert not os.path.exists(tmp_path) or _entries(tmp_path) == []


def test_key_depends_on_version_cpu_and_program(monkeypatch):
    import ember
    from ember._src import compilation_cache
    from ember._src.core import ShapedArray
    from ember._src.targets import get_target

    cpu = get_target("cpu")
    avals = [ShapedArray((3,), "float32")]
    k = compilation_cache.key(cpu, "module {}", avals, avals, 2)
    assert k == compilation_cache.key(cpu, "module {}", avals, avals, 2)
    assert k != compilation_cache.key(cpu, "module { }", avals, avals, 2)
    assert k != compilation_cache.key(cpu, "module {}", avals, avals, 1)
    monkeypatch.setattr(ember, "__version__", "99.0")
    assert k != compilation_cache.key(cpu, "module {}", avals, avals, 2)


def test_experimental_compilation_cache_module(tmp_path):
    # JAX's `jax.experimental.compilation_cache.compilation_cache` spelling.
    import os

    import ember
    import ember.numpy as jnp
    from ember.experimental.compilation_cache import compilation_cache as cc

    before = ember.config.jax_persistent_cache_min_compile_time_secs
    before_dir = ember.config.jax_compilation_cache_dir
    ember.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    try:
        cc.set_cache_dir(tmp_path)
        assert ember.config.jax_compilation_cache_dir == str(tmp_path)
        ember.jit(lambda x: x * 7 + 2)(jnp.ones(5))
        assert os.listdir(tmp_path)
        cc.reset_cache()
        assert ember.config.jax_compilation_cache_dir is None
    finally:
        ember.config.update("jax_persistent_cache_min_compile_time_secs", before)
        ember.config.update("jax_compilation_cache_dir", before_dir)
