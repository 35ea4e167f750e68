"""Compiling and calling jitted functions from several Python threads at once
(trace state is per thread, as in JAX). `python test/python/test_threads.py
--calls 10000` runs the long campaign whose figure the README reports."""

import argparse
import threading
import time

import numpy as np

import ember
import ember.numpy as jnp


def _worker(t, calls, shared, big, errors):
    try:
        own = ember.jit(lambda x: x * t + jnp.cos(x))
        g = ember.grad(lambda x: jnp.sum(jnp.tanh(x * t)))
        seen = []

        def host(v):
            seen.append(t)
            return np.asarray(v) * 2

        cb = ember.jit(lambda x: ember.pure_callback(
            host, ember.ShapeDtypeStruct(x.shape, x.dtype), x) + 1.0)
        xb = jnp.full((64, 1024), float(t), jnp.float32)  # 256 KB: runs without the GIL
        for k in range(calls):
            x = jnp.full((4,), float(k % 7), jnp.float32)
            xn = np.asarray(x)
            np.testing.assert_allclose(np.asarray(shared(x)), np.sin(xn) * 2 + 1, rtol=1e-5)
            np.testing.assert_allclose(np.asarray(own(x)), xn * t + np.cos(xn), rtol=1e-5,
                                       atol=1e-6)
            if k % 50 == 0:
                np.testing.assert_allclose(np.asarray(g(x)), t * (1 - np.tanh(xn * t) ** 2),
                                           rtol=1e-4, atol=1e-5)
                np.testing.assert_array_equal(np.asarray(cb(x)), xn * 2 + 1)
                np.testing.assert_allclose(np.asarray(big(xb))[0, :3], [2.0 * t * 1024] * 3)
                # A function new to this thread: traced and compiled here.
                new = ember.jit(lambda y, k=k: y + k)
                np.testing.assert_array_equal(np.asarray(new(x)), xn + k)
        assert seen and set(seen) == {t}
    except Exception as e:  # reported by the main thread
        errors.append((t, repr(e)))


def run(threads=8, calls=200):
    shared = ember.jit(lambda x: jnp.sin(x) * 2.0 + 1.0)
    big = ember.jit(lambda x: jnp.broadcast_to(jnp.sum(x * 2.0, axis=1, keepdims=True),
                                               x.shape))
    errors = []
    ts = [threading.Thread(target=_worker, args=(t, calls, shared, big, errors))
          for t in range(threads)]
    start = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors, time.perf_counter() - start


def test_eight_threads_compile_and_call():
    errors, _ = run(8, 120)
    assert errors == []


def test_traces_are_per_thread():
    # A trace open in one thread is invisible to another.
    inside, other = threading.Event(), {}

    def slow(x):
        inside.set()
        done.wait(10)
        return x + 1

    done = threading.Event()
    t = threading.Thread(target=lambda: other.setdefault("r", ember.jit(slow)(1.0)))
    t.start()
    inside.wait(10)
    assert float(ember.jit(lambda x: x * 3)(2.0)) == 6.0  # not inlined into `slow`
    done.set()
    t.join()
    assert float(other["r"]) == 2.0


def test_callback_errors_stay_in_their_thread():
    def host(v, t):
        if t % 2:
            raise ValueError(f"thread {t}")
        return np.asarray(v)

    results = {}

    def work(t):
        f = ember.jit(lambda x: ember.pure_callback(
            lambda v: host(v, t), ember.ShapeDtypeStruct(x.shape, x.dtype), x) * 2.0)
        got = []
        for _ in range(50):
            try:
                got.append(float(f(jnp.ones(()))[()]))
            except ValueError as e:  # (a JaxRuntimeError, also a ValueError)
                assert isinstance(e, ember.errors.JaxRuntimeError)
                got.append(str(e).splitlines()[-1])
        results[t] = got

    ts = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for t in range(6):
        assert results[t] == ([f"ValueError: thread {t}"] if t % 2 else [2.0]) * 50


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--calls", type=int, default=10000)
    a = ap.parse_args()
    errs, secs = run(a.threads, a.calls)
    print(f"{a.threads} threads x {a.calls} calls: {len(errs)} failed threads, {secs:.1f} s")
    for e in errs:
        print(e)


def test_threads_while_the_jit_caches_evict():
    """Eight threads compiling and calling while the bounded jit caches evict
    the programs other threads' fast paths are running (the C++ path holds
    its entry and kernel, so a concurrent eviction cannot free a running
    kernel). A stress test: the abort CI once hit here (eviction freeing a
    kernel another thread ran without the GIL) does not reproduce on
    demand."""
    old = ember.config.ember_program_cache_size
    ember.config.update("ember_program_cache_size", 4)
    try:
        errors, _ = run(8, 60)
    finally:
        ember.config.update("ember_program_cache_size", old)
    assert errors == []
