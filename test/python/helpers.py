"""Shared helpers for the ember pytest suite: compare ember with NumPy."""

import numpy as np

import ember as jax
import ember.numpy as jnp

_TOL = {
    np.dtype(np.float16): 2e-3,
    np.dtype(np.float32): 2e-5,
    np.dtype(np.float64): 1e-5,
}


def canonical_dtype(dt):
    """The dtype JAX gives for `dt` when x64 is off."""
    dt = np.dtype(dt)
    return {np.dtype(np.float64): np.dtype(np.float32),
            np.dtype(np.int64): np.dtype(np.int32),
            np.dtype(np.uint64): np.dtype(np.uint32),
            np.dtype(np.complex128): np.dtype(np.complex64)}.get(dt, dt)


def assert_close(actual, expected, *, rtol=None, atol=None, check_dtype=True):
    """Compares an ember result with a NumPy result (pytrees of arrays)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), type(actual)
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, check_dtype=check_dtype)
        return
    a = np.asarray(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != expected {e.shape}"
    if check_dtype:
        want = canonical_dtype(e.dtype)
        assert a.dtype == want, f"dtype {a.dtype} != expected {want}"
    if a.dtype.kind in "biu" or a.dtype == np.bool_:
        np.testing.assert_array_equal(a, e)
        return
    tol = _TOL.get(np.dtype(a.dtype), 1e-2)
    ea = e.astype(np.float64) if e.dtype.kind in "fiub" else e
    aa = a.astype(np.float64) if a.dtype.kind == "f" or a.dtype.name == "bfloat16" else a
    np.testing.assert_allclose(aa, ea, rtol=tol if rtol is None else rtol,
                               atol=tol if atol is None else atol, equal_nan=True)


def rand(shape, dtype, seed=0, low=-3, high=3):
    """Deterministic small test data of a NumPy dtype (or 'bfloat16')."""
    rng = np.random.default_rng(seed)
    if dtype == "bfloat16" or dtype == jnp.bfloat16:
        return rng.uniform(low, high, shape).astype(np.float32)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) > 0.5
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else low
        return rng.integers(lo, high + 1, shape).astype(dt)
    return rng.uniform(low, high, shape).astype(dt)


__all__ = ["assert_close", "canonical_dtype", "jax", "jnp", "rand"]


def fd_grad(f, x, eps=1e-6):
    """Central finite differences of the scalar function f at x (in f64)."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = eps
        g[idx] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return g


def expanded_ir(fn, *args):
    """The IR of jit(fn) once its transformations are expanded and custom
    calls inlined (before lowering), to look at what a backward pass
    computes."""
    from ember._mlir import ir, passmanager
    from ember._src import core
    text = jax.jit(fn).lower(*args).as_text()
    with core.context():
        m = ir.Module.parse(text)
        passmanager.PassManager.parse(
            "builtin.module(ember-autodiff,ember-batch,ember-autodiff,ember-inline-custom,"
            "symbol-dce,canonicalize,cse)").run(m.operation)
        return str(m)


def load_example(name):
    """The module `examples/<name>.py` of the repository."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def assert_prints_recorded(subdir, script, differing=(), cpu_meshes=False):
    """Runs `test/data/<subdir>/<script>.py` with IMPORT=ember and compares
    its output, line by line, with `<script>.jax.txt` (what the same script
    printed under JAX). Lines whose case (the text before " -> ") is in
    `differing` must differ (known differences, kept visible). With
    `cpu_meshes` (scripts making meshes of JAX's CPU devices), the script
    runs on the CPU platform also where the suite has the GPU as the
    default device (one GPU makes no mesh of 4)."""
    import os
    import subprocess
    import sys

    here = os.path.join(os.path.dirname(__file__), "..", "data", subdir)
    env = dict(os.environ, IMPORT="ember")
    env.pop("EMBER_NUM_CPU_DEVICES", None)
    if cpu_meshes:
        env["EMBER_PLATFORMS"] = "cpu"
        env.pop("JAX_PLATFORMS", None)
    out = subprocess.run([sys.executable, os.path.join(here, script + ".py")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    with open(os.path.join(here, script + ".jax.txt")) as f:
        expected = f.read().splitlines()
    got = out.stdout.splitlines()
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if e.split(" -> ")[0].split(" !! ")[0] in differing:  # (a case, or JAX's error)
            assert g != e, f"now equal to JAX's: {e}"
        else:
            assert g == e


def stdout_per_thread_count(code, counts=("1", "2", "3")):
    """What the Python program `code` prints when run with each of
    `counts` as EMBER_NUM_THREADS (each in a fresh process)."""
    import os
    import subprocess
    import sys

    return [subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                           env=dict(os.environ, EMBER_NUM_THREADS=n)).stdout for n in counts]
