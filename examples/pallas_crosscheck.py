"""Pallas kernels run under Ember and under JAX's interpret mode, compared.

    .venv/bin/python examples/pallas_crosscheck.py ember /tmp/ember.npz
    /path/to/jax-venv/bin/python examples/pallas_crosscheck.py jax /tmp/jax.npz
    .venv/bin/python examples/pallas_crosscheck.py compare /tmp/ember.npz /tmp/jax.npz

The kernels cover what interpret mode defines: blocks overhanging the array
(NaN / smallest-integer reads, dropped writes), scratch persisting across the
grid, masked Triton loads and stores, refs under fori_loop, program ids,
Element-indexed blocks with padding, ref views, atomics.
"""

import sys

import numpy as np

if sys.argv[1] == "compare":
    a, b = np.load(sys.argv[2]), np.load(sys.argv[3])
    bad = [
        k
        for k in a.files
        if a[k].shape != b[k].shape
        or not np.allclose(a[k], b[k], rtol=1e-5, atol=1e-6, equal_nan=True)
    ]
    print(f"{len(a.files) - len(bad)}/{len(a.files)} kernels agree", *bad)
    sys.exit(1 if bad else 0)
mod = sys.argv[1]
if mod == "jax":
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt

    interp = True
else:
    import ember as jax
    import ember.numpy as jnp
    from ember import lax
    from ember.experimental import pallas as pl
    from ember.experimental.pallas import triton as plt

    interp = True
S = jax.ShapeDtypeStruct
rng = np.random.default_rng(0)
x = rng.standard_normal((10, 12)).astype(np.float32)
res = {}


def k1(x_ref, o_ref):
    o_ref[...] = jnp.tanh(x_ref[...]) * 2


res["overhang"] = pl.pallas_call(
    k1,
    out_shape=S((10, 12), jnp.float32),
    grid=(3, 2),
    in_specs=[pl.BlockSpec((4, 8), lambda i, j: (i, j))],
    out_specs=pl.BlockSpec((4, 8), lambda i, j: (i, j)),
    interpret=interp,
)(x)


def k2(x_ref, o_ref):
    o_ref[...] = jnp.isnan(x_ref[...]).astype(jnp.int32) + 10 * (x_ref[...] < -1e30).astype(
        jnp.int32
    )


res["overhang_read"] = pl.pallas_call(
    k2,
    out_shape=S((12, 16), jnp.int32),
    grid=(3, 2),
    in_specs=[pl.BlockSpec((4, 8), lambda i, j: (i, j))],
    out_specs=pl.BlockSpec((4, 8), lambda i, j: (i, j)),
    interpret=interp,
)(x)


def k3(x_ref, o_ref, acc):
    @pl.when(pl.program_id(0) == 0)
    def _():
        acc[...] = jnp.zeros_like(acc)

    acc[...] += x_ref[...]
    o_ref[...] = acc[...]


res["scratch"] = pl.pallas_call(
    k3,
    out_shape=S((10, 12), jnp.float32),
    grid=(10,),
    in_specs=[pl.BlockSpec((None, 12), lambda i: (i, 0))],
    out_specs=pl.BlockSpec((None, 12), lambda i: (i, 0)),
    scratch_shapes=[
        pl.MemoryRef((12,), jnp.float32)
        if mod != "jax"
        else __import__("jax.experimental.pallas.tpu", fromlist=["x"]).VMEM((12,), jnp.float32)
    ],
    interpret=interp,
)(x)


def k4(x_ref, o_ref):
    i = pl.program_id(0)
    offs = i * 8 + jnp.arange(8)
    m = offs < 10
    v = plt.load(x_ref.at[pl.ds(i * 8, 8)], mask=m, other=-5.0)
    plt.store(o_ref.at[pl.ds(i * 8, 8)], v * 3, mask=m)


res["masked"] = pl.pallas_call(k4, out_shape=S((10,), jnp.float32), grid=(2,), interpret=interp)(
    x[:, 0].copy()
)


def k5(x_ref, o_ref):
    def body(i, c):
        o_ref[i, :] = x_ref[i, :] * c
        return c * 1.5

    lax.fori_loop(0, 10, body, jnp.float32(1.0))


res["fori"] = pl.pallas_call(k5, out_shape=S((10, 12), jnp.float32), interpret=interp)(x)


def k6(o_ref):
    o_ref[...] = jnp.full(o_ref.shape, pl.program_id(0) * 100 + pl.program_id(1), jnp.int32)


res["ids"] = pl.pallas_call(
    k6,
    out_shape=S((6, 6), jnp.int32),
    grid=(3, 2),
    out_specs=pl.BlockSpec((2, 3), lambda i, j: (i, j)),
    interpret=interp,
)()


def k7(x_ref, o_ref):
    o_ref[...] = jnp.sum(x_ref[...], keepdims=True)


res["element"] = pl.pallas_call(
    k7,
    out_shape=S((10,), jnp.float32),
    grid=(10,),
    in_specs=[pl.BlockSpec((pl.Element(3, (1, 1)),), lambda i: (i,))],
    out_specs=pl.BlockSpec((1,), lambda i: (i,)),
    interpret=interp,
)(x[:, 1].copy())


def k8(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] @ y_ref[...]


y = rng.standard_normal((12, 8)).astype(np.float32)
res["mm"] = pl.pallas_call(
    k8,
    out_shape=S((10, 8), jnp.float32),
    grid=(2,),
    in_specs=[pl.BlockSpec((5, 12), lambda i: (i, 0)), pl.BlockSpec((12, 8), lambda i: (0, 0))],
    out_specs=pl.BlockSpec((5, 8), lambda i: (i, 0)),
    interpret=interp,
)(x, y)


def k9(x_ref, o_ref):
    v = x_ref.at[2:8]
    w = v.at[pl.ds(1, 4)]
    o_ref[...] = w[pl.ds(1, 3)] + v[0]


res["views"] = pl.pallas_call(k9, out_shape=S((3, 12), jnp.float32), interpret=interp)(x)


def k10(x_ref, h_ref):
    i = pl.program_id(0)

    @pl.when(i == 0)
    def _():
        h_ref[...] = jnp.zeros_like(h_ref)

    plt.atomic_add(h_ref, (x_ref[i],), jnp.ones((), jnp.int32) * 2)


res["atomic"] = pl.pallas_call(k10, out_shape=S((5,), jnp.int32), grid=(7,), interpret=interp)(
    np.array([0, 2, 2, 1, 3, 2, 4], np.int32)
)
np.savez(sys.argv[2], **{k: np.asarray(v) for k, v in res.items()})
