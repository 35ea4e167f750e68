"""A `pallas_call`'s grid on the CPU's threads: leading grid axes whose
points write disjoint output blocks run as a `parallel` ember.while
(spec rule while_c5), which `ember-split-rows` runs through the runtime's
pool; everything else keeps the grid in order (docs/design.md, "A Pallas
grid on both cores")."""

import os

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember.experimental import pallas as pl
from ember.experimental.pallas import tpu as pltpu

from helpers import stdout_per_thread_count


def _matmul(n, b, **kw):
    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += x_ref[...] @ y_ref[...]

    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((n, n), jnp.float32), grid=(n // b,) * 3,
        in_specs=[pl.BlockSpec((b, b), lambda i, j, k: (i, k)),
                  pl.BlockSpec((b, b), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((b, b), lambda i, j, k: (i, j)), **kw)


def _args(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _stages(f, *args):
    lowered = jax.jit(f).lower(*args)
    return lowered.as_text("ember"), lowered.as_text("llvm")


def test_blocked_matmul_runs_its_output_blocks_on_the_threads():
    x, y = _args((256, 256), (256, 256))
    mm = _matmul(256, 64)
    ember_text, llvm_text = _stages(mm, x, y)
    # The (i, j) points are independent (the k axis revisits a block).
    assert ember_text.count("parallel") == 1 and "trip_count = 16" in ember_text
    assert "llvm.call @ember_parallel_for" in llvm_text
    np.testing.assert_allclose(jax.jit(mm)(x, y), x @ y, rtol=1e-4, atol=1e-4)


def save_matmul_result():
    """(Run in a fresh process by the next test.)"""
    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += jnp.tanh(x_ref[...]) @ y_ref[...]

    mm = pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((384, 384), jnp.float32), grid=(3, 3, 3),
        in_specs=[pl.BlockSpec((128, 128), lambda i, j, k: (i, k)),
                  pl.BlockSpec((128, 128), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j, k: (i, j)))
    # (And a grid of 512^3 products, which OpenBLAS computes, on one thread
    # while the job runs.)
    big = jax.jit(_matmul(1024, 512))(*_args((1024, 1024), (1024, 1024)))
    np.save("/dev/stdout", np.concatenate([np.ravel(jax.jit(mm)(*_args((384, 384), (384, 384)))),
                                           np.ravel(big)]))


def test_results_do_not_depend_on_the_thread_count():
    here = os.path.dirname(os.path.abspath(__file__))
    outs = stdout_per_thread_count(
        f"import sys; sys.path.insert(0, {here!r}); import test_pallas_grid_threads as t; "
        f"t.save_matmul_result()")
    assert outs[0] == outs[1] == outs[2]


def test_openblas_gets_its_threads_back():
    # While a parallel job runs OpenBLAS has one thread (a product inside a
    # piece stays on its core); afterwards the count it had.
    from ember._src import compiler

    lib = getattr(compiler._use_openblas, "lib", None)
    if lib is None:
        pytest.skip("no OpenBLAS (scipy-openblas32) loaded")
    before = lib.scipy_openblas_get_num_threads()
    x, y = _args((1024, 1024), (1024, 1024))
    mm = _matmul(1024, 512)
    assert "llvm.call @ember_parallel_for" in _stages(mm, x, y)[1]
    np.testing.assert_allclose(jax.jit(mm)(x, y), x @ y, rtol=1e-3, atol=1e-3)
    assert lib.scipy_openblas_get_num_threads() == before


def test_points_writing_a_shared_block_stay_in_order():
    # Every i accumulates into the same output block: no axis is
    # independent, and the sum is right.
    x, = _args((16, 64, 128))

    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += x_ref[0] * 2.0

    call = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((64, 128), jnp.float32),
                          grid=(16,), in_specs=[pl.BlockSpec((1, 64, 128), lambda i: (i, 0, 0))],
                          out_specs=pl.BlockSpec((64, 128), lambda i: (0, 0)))
    ember_text, llvm_text = _stages(call, x)
    assert "parallel" not in ember_text and "ember_parallel_for" not in llvm_text
    np.testing.assert_allclose(jax.jit(call)(x), x.sum(0) * 2, rtol=1e-5, atol=1e-4)


def _scratch_matmul(semantics):
    def kernel(x_ref, y_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += x_ref[...] @ y_ref[...]

        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _():
            o_ref[...] = acc_ref[...] * 0.5

    params = None if semantics is None else pltpu.CompilerParams(dimension_semantics=semantics)
    return pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct((256, 256), jnp.float32), grid=(4, 4, 2),
        in_specs=[pl.BlockSpec((64, 128), lambda i, j, k: (i, k)),
                  pl.BlockSpec((128, 64), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((64, 64), lambda i, j, k: (i, j)),
        scratch_shapes=[pltpu.VMEM((64, 64), jnp.float32)], compiler_params=params)


@pytest.mark.parametrize("semantics, threads", [
    (None, False), (("arbitrary", "parallel", "arbitrary"), False),
    (("parallel", "arbitrary", "arbitrary"), True), (("parallel", "parallel", "arbitrary"), True)])
def test_scratch_needs_axes_declared_parallel(semantics, threads):
    # Scratch lives across the grid: only axes the kernel declares
    # "parallel" run on the threads (each group of points with scratch of
    # its own, as each TensorCore has), and the result is the same.
    x, y = _args((256, 256), (256, 256))
    call = _scratch_matmul(semantics)
    ember_text, llvm_text = _stages(call, x, y)
    assert ("ember_parallel_for" in llvm_text) == threads
    assert ("parallel" in ember_text.replace("#ember_tpu.dimension_semantics<parallel>", "")
            ) == threads
    np.testing.assert_allclose(jax.jit(call)(x, y), x @ y * 0.5, rtol=1e-4, atol=1e-4)


def test_a_kernel_drawing_random_numbers_keeps_its_state_in_order():
    # The PRNG state flows from point to point (seeded at the first only):
    # the loop is marked, but what it carries keeps it off the threads.
    def kernel(o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            pltpu.prng_seed(7)

        o_ref[...] = pltpu.stateful_normal(shape=o_ref.shape)

    call = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((512, 128), jnp.float32),
                          grid=(8,), out_specs=pl.BlockSpec((64, 128), lambda i: (i, 0)))
    _, llvm_text = _stages(call)
    assert "ember_parallel_for" not in llvm_text
    blocks = np.asarray(jax.jit(call)()).reshape(8, 64, 128)
    assert all(not np.array_equal(blocks[0], blocks[i]) for i in range(1, 8))


def test_a_kernel_with_a_host_callback_keeps_its_order(capfd):
    def kernel(x_ref, o_ref):
        jax.debug.print("block {i}", i=pl.program_id(0))
        o_ref[...] = x_ref[...] + 1.0

    x, = _args((512, 128))
    call = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((512, 128), jnp.float32),
                          grid=(8,), in_specs=[pl.BlockSpec((64, 128), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((64, 128), lambda i: (i, 0)))
    _, llvm_text = _stages(call, x)
    assert "ember_parallel_for" not in llvm_text
    out = jax.jit(call)(x)
    jax.effects_barrier()
    np.testing.assert_allclose(out, x + 1)
    printed = [line for line in capfd.readouterr().out.splitlines() if line.startswith("block")]
    assert printed == [f"block {i}" for i in range(8)]


def test_small_grids_and_concrete_maps_only():
    # Too little work for the threads' wake-up; an index map that does not
    # give Python integers; scalar prefetch: the grid runs in order.
    def copy(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 3.0

    x, = _args((32, 128))
    small = pl.pallas_call(copy, out_shape=jax.ShapeDtypeStruct((32, 128), jnp.float32),
                           grid=(4,), in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                           out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))
    assert "parallel" not in _stages(small, x)[0]
    big, = _args((1024, 128))
    traced_map = pl.pallas_call(
        copy, out_shape=jax.ShapeDtypeStruct((1024, 128), jnp.float32), grid=(8,),
        in_specs=[pl.BlockSpec((128, 128), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((128, 128), lambda i: (jnp.asarray(i) + 0, 0)))
    assert "parallel" not in _stages(traced_map, big)[0]
    np.testing.assert_allclose(jax.jit(traced_map)(big), big * 3)
    plain = pl.pallas_call(
        copy, out_shape=jax.ShapeDtypeStruct((1024, 128), jnp.float32), grid=(8,),
        in_specs=[pl.BlockSpec((128, 128), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((128, 128), lambda i: (i, 0)))
    assert "parallel" in _stages(plain, big)[0]
    np.testing.assert_allclose(jax.jit(plain)(big), big * 3)


def test_overhanging_blocks_and_aliased_outputs():
    # The last block overhangs the array (its overhang dropped), and an
    # output aliased to an input keeps the input's rows the grid does not
    # write.
    x, = _args((1000, 128))

    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.sin(x_ref[...])

    over = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((1000, 128), jnp.float32),
                          grid=(8,), in_specs=[pl.BlockSpec((128, 128), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((128, 128), lambda i: (i, 0)))
    assert "parallel" in _stages(over, x)[0]
    np.testing.assert_allclose(jax.jit(over)(x), np.sin(x), rtol=1e-6, atol=1e-6)
    half = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((1000, 128), jnp.float32),
                          grid=(4,), in_specs=[pl.BlockSpec((128, 128), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((128, 128), lambda i: (i, 0)),
                          input_output_aliases={0: 0})
    out = np.asarray(jax.jit(half)(x))
    np.testing.assert_allclose(out[:512], np.sin(x[:512]), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(out[512:], x[512:])


def test_under_vmap_and_grad():
    x, y = _args((256, 256), (256, 256))
    mm = _matmul(256, 64)
    xs = np.stack([x, -x, 2 * x])
    np.testing.assert_allclose(jax.jit(jax.vmap(mm, in_axes=(0, None)))(xs, y), xs @ y,
                               rtol=1e-4, atol=1e-3)
    g = jax.jit(jax.grad(lambda a, b: jnp.sum(jnp.tanh(mm(a, b))), argnums=(0, 1)))(x, y)
    t = 1 - np.tanh(x @ y) ** 2
    np.testing.assert_allclose(g[0], t @ y.T, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(g[1], x.T @ t, rtol=1e-3, atol=1e-3)
