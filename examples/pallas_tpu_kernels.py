"""Pallas TPU kernels on Ember: run in the checked interpreter, lowered for
TPU as Mosaic custom calls, and (for the collective) run over simulated
devices.

    EMBER_NUM_CPU_DEVICES=4 .venv/bin/python examples/pallas_tpu_kernels.py

Nothing here runs on a TPU: the kernels are interpreted on the CPU (with
`pltpu.InterpretParams()`, DMAs asynchronous and races reported), and the
artifact a TPU consumes, StableHLO with `tpu_custom_call`s carrying the
serialized Mosaic kernels, is what lowering for "tpu" produces.
"""

import functools
import importlib.util
import pathlib
import types

import numpy as np

import ember as jax
import ember.numpy as jnp
from ember.experimental import pallas as pl
from ember.experimental.pallas import tpu as pltpu

CHECKED = pltpu.InterpretParams()


# -- the double-buffered DMA kernel and flash attention ------------------
# Both are programs of Ember's TPU cross-check against JAX
# (test/data/tpu/kernels.py, written once for `jax` and `ember`).
def cross_check_programs(interpret=False):
    """{name: (function, arguments)} of test/data/tpu/kernels.py, their
    pallas_calls run with `interpret`."""
    path = pathlib.Path(__file__).resolve().parents[1] / "test" / "data" / "tpu" / "kernels.py"
    spec = importlib.util.spec_from_file_location("tpu_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with_interpret = types.SimpleNamespace(**{n: getattr(pl, n) for n in dir(pl)
                                              if not n.startswith("_")})
    with_interpret.pallas_call = functools.partial(pl.pallas_call, interpret=interpret)
    return {name: (f, args) for name, f, args in
            mod.programs(jax, jnp, with_interpret, pltpu)}


# -- a blocked matmul with emit_pipeline --------------------------------
def pipelined_matmul(a, b, interpret=False, bm=32, bk=32, bn=32):
    m, k = a.shape
    n = b.shape[1]

    def body(x, y, o):
        # The output block stays in VMEM over the k steps (its index does
        # not change); it starts undefined, as on a TPU.
        @pl.when(pl.program_id(2) == 0)
        def _():
            o[...] = jnp.zeros_like(o)

        o[...] += jnp.dot(x[...], y[...], preferred_element_type=jnp.float32)

    def kernel(a_hbm, b_hbm, o_hbm):
        pltpu.emit_pipeline(
            body, grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                      pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            out_specs=[pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j))])(a_hbm, b_hbm, o_hbm)

    hbm = pl.BlockSpec(memory_space=pl.ANY)
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
                          in_specs=[hbm] * 2, out_specs=hbm, interpret=interpret)(a, b)


def tpu_kernels(f, *args):
    """The number of `tpu_custom_call`s in `f`'s StableHLO for TPU, and its
    length."""
    text = jax.jit(f).trace(*args).lower(lowering_platforms=("tpu",)).as_text("stablehlo")
    return text.count('"tpu_custom_call"'), len(text)


def main():
    checked = cross_check_programs(interpret=CHECKED)
    plain = cross_check_programs()
    for name, what in (("double_buffer", "double-buffered DMA"),
                       ("flash_attention", "flash attention")):
        f, args = checked[name]
        np.testing.assert_allclose(np.asarray(f(*args)), np.asarray(plain[name][0](*args)),
                                   rtol=1e-5, atol=1e-5)
        print(f"{what}: checked run ok; TPU custom calls, StableHLO characters:",
              tpu_kernels(plain[name][0], *args))

    a = jnp.arange(64 * 64, dtype=jnp.float32).reshape(64, 64) / 1000
    b = jnp.cos(a)
    np.testing.assert_allclose(np.asarray(pipelined_matmul(a, b, interpret=CHECKED)),
                               np.asarray(a) @ np.asarray(b), rtol=1e-4, atol=1e-4)
    print("emit_pipeline matmul: checked run ok; TPU custom calls, StableHLO characters:",
          tpu_kernels(pipelined_matmul, a, b))

    if len(jax.devices()) >= 4:
        # The cross-check's double-buffered ring all-reduce (remote DMAs to
        # the right neighbour under shard_map over 4 devices), checked: each
        # device runs in a thread of its own and races between devices are
        # reported.
        ring, (xs,) = checked["ring_all_reduce"]
        total = np.asarray(xs).reshape(4, 8, 128).sum(0)
        np.testing.assert_allclose(np.asarray(ring(xs)), np.tile(total, (4, 1)), rtol=1e-6)
        print("ring all-reduce over 4 devices: checked run ok, equals the sum; TPU custom "
              "calls, StableHLO characters:", tpu_kernels(plain["ring_all_reduce"][0], xs))
    else:
        print("ring all-reduce: needs 4 devices (EMBER_NUM_CPU_DEVICES=4)")


if __name__ == "__main__":
    main()
